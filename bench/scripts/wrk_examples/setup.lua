-- Numbers the threads in setup(), counts each thread's requests and responses, and reads the
-- counts back from every thread in done().
local counter = 1
local threads = {}

setup = function(thread)
   thread:set("id", counter)
   table.insert(threads, thread)
   counter = counter + 1
end

init = function(args)
   requests = 0
   responses = 0
   io.write(string.format("thread %d created\n", id))
end

request = function()
   requests = requests + 1
   return wrk.request()
end

response = function(status, headers, body)
   responses = responses + 1
end

done = function(summary, latency, requests)
   for _, thread in ipairs(threads) do
      io.write(string.format("thread %d made %d requests and got %d responses\n",
         thread:get("id"), thread:get("requests"), thread:get("responses")))
   end
end
