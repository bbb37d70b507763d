-- Every fourth response is rejected: by returning false, or by wrk.fail with a reason.
local n = 0

function request()
   n = n + 1
   if n % 2 == 0 then
      wrk.name = "even"
   else
      wrk.name = "odd"
   end
   return wrk.format("GET", "/n/" .. n)
end

local seen = 0
function response(status, headers, body)
   seen = seen + 1
   if seen % 8 == 0 then
      wrk.fail("rejected response " .. seen)
   elseif seen % 8 == 4 then
      return false
   end
end
