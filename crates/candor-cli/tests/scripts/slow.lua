-- request() takes at least the microseconds given after -- (default 80), waiting on the
-- clock, so no machine runs it faster.
local us = 80

function init(args)
   us = tonumber(args[1]) or us
end

function request()
   local until_us = wrk.time_us() + us
   while wrk.time_us() < until_us do
   end
   return wrk.format()
end
