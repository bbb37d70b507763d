-- Per-thread counters read back in done(): thread:set in setup, thread:get in done.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
   thread:set("config", { label = "t" .. #threads, sizes = { 10, 20 }, on = true, off = false })
end

function init(args)
   count = 0
   label = config.label .. "/" .. config.sizes[2] .. "/" .. tostring(config.on)
end

function request()
   count = count + 1
   if count == 3 then
      wrk.thread:stop()
   end
   return wrk.format(nil, "/" .. id .. "/" .. count)
end

function done(summary, latency, requests)
   for _, thread in ipairs(threads) do
      local t = thread:get("config")
      print(string.format("thread %d: %d requests, %s, %s", thread:get("id"),
                          thread:get("count"), thread:get("label"), tostring(t.off)))
   end
end
