-- A value with CRLF would reach the wire as a header the script never set.
function request()
   local req = wrk.format("GET", "/", { ["X-A"] = "a\r\nX-Injected: 1" })
   return req
end
