-- A method with a line break would make a second, pipelined request of the first.
function request()
   local req = wrk.format("GET / HTTP/1.1\r\n\r\nGET", "/")
   return req
end
