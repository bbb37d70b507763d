-- With -t 2: thread 1 calls os.exit(0) in its 5th response(); thread 2's response() takes
-- 50 ms (it waits on wrk.time_us), so it is mostly running when thread 1 exits, and its
-- request() calls wrk.format. The stop is thread 1's: nothing of thread 2's is a failure.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
end

local n = 0

function request()
   return wrk.format(nil, "/" .. id)
end

function response(status, headers, body)
   n = n + 1
   if id == 1 then
      if n == 5 then
         os.exit(0)
      end
   else
      local until_us = wrk.time_us() + 50000
      while wrk.time_us() < until_us do end
   end
end
