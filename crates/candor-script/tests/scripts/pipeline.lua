-- Three requests pipelined in one string, built once in init(), as wrk's pipeline example does.
init = function(args)
   local r = {}
   r[1] = wrk.format(nil, "/one")
   r[2] = wrk.format(nil, "/two")
   r[3] = wrk.format("POST", "/three", nil, "xyz")
   req = table.concat(r)
end

request = function()
   return req
end
