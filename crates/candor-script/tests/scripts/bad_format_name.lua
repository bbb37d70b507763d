function request()
   local req = wrk.format("GET", "/", { [true] = "a boolean is no header name" })
   return req
end
