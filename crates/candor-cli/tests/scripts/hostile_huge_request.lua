-- request() returns a 70 MiB request: more than --body-file may be (64 MiB), refused.
function request()
   local body = string.rep("x", 70 * 1024 * 1024)
   return "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
end
