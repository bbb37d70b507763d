-- counted.lua with each call taking at least 1 ms (of the wall clock): what an offer holds is
-- known.
local n = 0

function request()
   n = n + 1
   local until_us = wrk.time_us() + 1000
   while wrk.time_us() < until_us do
   end
   return wrk.format("GET", "/" .. n)
end
