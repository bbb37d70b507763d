-- A path that counts up with every request (the idea of wrk's counter example).
local n = 0

request = function()
   n = n + 1
   return wrk.format(nil, "/count/" .. n)
end
