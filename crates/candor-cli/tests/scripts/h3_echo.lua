-- Over HTTP/3: each request its own path and header; Caddy echoes the path as the body and the
-- header as X-Echo, and each response is judged by them (HTTP/3 names are lower case).
local n = 0

function request()
   n = n + 1
   return wrk.format("GET", "/h3/" .. n, { ["X-N"] = tostring(n) })
end

function response(status, headers, body)
   local echo = headers["x-echo"]
   if status ~= 200 then
      wrk.fail("status " .. status)
   elseif echo == nil or body ~= "/h3/" .. echo then
      wrk.fail("echo " .. tostring(echo) .. " body " .. body)
   end
end
