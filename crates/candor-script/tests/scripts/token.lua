-- Log in once, keep the token the server returns, send it with every later request.
local token = nil

function request()
   if token == nil then
      return wrk.format("POST", "/login", nil, "user=demo")
   end
   return wrk.format("GET", "/data", { Authorization = "Bearer " .. token })
end

function response(status, headers, body)
   if token == nil and status == 200 then
      token = headers["X-Token"]
      return
   end
   if body == "denied" then
      wrk.fail("server denied the token")
      return
   end
   if status ~= 200 then
      return false
   end
end
