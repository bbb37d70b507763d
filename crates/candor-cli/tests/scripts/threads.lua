-- setup() numbers the threads, each counts its own requests, done() reads them back and
-- shows the statistics objects in both index forms.
local threads = {}
local next_id = 1

function setup(thread)
   thread:set("id", next_id)
   thread:set("tags", { "a", n = next_id })
   next_id = next_id + 1
   table.insert(threads, thread)
end

function init(args)
   made = 0
   first_arg = args[1]
end

function request()
   made = made + 1
   return wrk.request()
end

function done(summary, latency, requests)
   local total = 0
   for _, t in ipairs(threads) do
      local tags = t:get("tags")
      io.write(string.format("thread %d made %d requests (arg %s, tag %s%d)\n",
         t:get("id"), t:get("made"), tostring(t:get("first_arg")), tags[1], tags.n))
      total = total + t:get("made")
   end
   print("total made " .. total)
   print("summary requests " .. summary.requests .. " errors " .. summary.errors.status)
   print("duration_us " .. summary.duration)
   local v1, c1 = latency(1)
   print(string.format("s(1) %d %d", v1, c1))
   print(string.format("s[#] %d max %d", latency[#latency], latency.max))
   print(string.format("p50 %d min %d mean %.1f", latency:percentile(50), latency.min, latency.mean))
end
