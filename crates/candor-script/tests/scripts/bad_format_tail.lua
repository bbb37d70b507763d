function request()
   return wrk.format("GET", "/", { [false] = "no header name" })
end
