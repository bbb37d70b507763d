function request()
   local req = wrk.format("POST", "/", {}, { "a table is no body" })
   return req
end
