-- Over HTTP/2: each request a POST with its own path, header and body; each response judged
-- by its status, a header (HTTP/2 names are lower case) and its body.
local n = 0

function request()
   n = n + 1
   return wrk.format("POST", "/h2/" .. n, { ["X-N"] = tostring(n) }, "n=" .. n)
end

function response(status, headers, body)
   if status ~= 200 then
      wrk.fail("status " .. status)
   elseif headers["content-type"] ~= "text/plain" then
      wrk.fail("content-type " .. tostring(headers["content-type"]))
   elseif body ~= "ok" then
      wrk.fail("body " .. body)
   end
end
