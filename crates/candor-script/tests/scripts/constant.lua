-- request() returns the same string every time, under one label: the call itself must
-- allocate nothing.
local req = wrk.format(nil, "/constant")
wrk.name = "constant"

function request()
   return req
end
