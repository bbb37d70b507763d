-- The first response's header carries a token; every later request sends it back.
local token

response = function(status, headers, body)
   if token == nil then
      token = headers["Content-Length"]
      wrk.headers["X-Token"] = token
   end
end

request = function()
   return wrk.format()
end
