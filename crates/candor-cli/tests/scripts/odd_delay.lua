-- delay() that returns no wait wrk could honour: negative, then NaN.
local n = 0
function delay()
   n = n + 1
   if n % 2 == 1 then
      return -5
   end
   return 0 / 0
end
