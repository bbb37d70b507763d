-- delay() returns a negative number, then NaN, then a wait.
local n = 0
function delay()
   n = n + 1
   if n == 1 then
      return -5
   elseif n == 2 then
      return 0 / 0
   end
   return 3
end
