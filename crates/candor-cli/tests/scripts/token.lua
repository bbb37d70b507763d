-- Log in once, then send the token the login answered with on every request.
local token = nil
local login_sent = false

function request()
   if token == nil and not login_sent then
      login_sent = true
      wrk.name = "login"
      return wrk.format("POST", "/login", { ["Content-Type"] = "text/plain" }, "user=me")
   end
   wrk.name = "api"
   return wrk.format("GET", "/api/items", { ["Authorization"] = "Bearer " .. tostring(token) })
end

function response(status, headers, body)
   if token == nil and status == 200 then
      token = string.match(body, "token=(%w+)")
   end
   if status ~= 200 then
      wrk.fail("status " .. status .. " from " .. tostring(headers["X-Why"]))
   end
end
