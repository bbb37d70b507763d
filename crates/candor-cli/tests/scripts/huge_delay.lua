-- delay() that asks for more than any run: +inf (math.huge), then 1e300 ms, then 3 ms.
local n = 0
function delay()
   n = n + 1
   if n == 1 then
      return math.huge
   elseif n == 2 then
      return 1e300
   end
   return 3
end
