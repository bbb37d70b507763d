-- Bytes written by hand with a bare LF inside the head.
function request()
   return "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\nX-Injected: 1\r\n\r\n"
end
