-- Ends the run from inside the script after 50 requests.
local n = 0
function request()
   n = n + 1
   if n == 50 then
      wrk.thread:stop()
   end
   return wrk.format()
end
