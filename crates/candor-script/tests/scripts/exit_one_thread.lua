-- Thread 1 calls os.exit(0) (inside a pcall) in its first response(); thread 2 goes on.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
end

function request()
   -- No candor function: once a state has exited, those stop every state (wrk.format too).
   return "GET /" .. id .. " HTTP/1.1\r\nHost: x\r\n\r\n"
end

function response(status, headers, body)
   if id == 1 then
      pcall(os.exit, 0)
   end
   return true
end
