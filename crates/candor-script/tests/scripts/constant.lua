-- request() returns the same string every time: the call itself must allocate nothing.
local req = wrk.format(nil, "/constant")

function request()
   return req
end

function response(status, headers, body)
   if status ~= 200 then
      return false
   end
end
