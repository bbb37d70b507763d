-- A header value with CRLF: under wrk it reaches the wire as a second header.
function request()
   return wrk.format("GET", "/", { ["X-A"] = "a\r\nX-Injected: 1" })
end
