-- done() prints every field and index form of the statistics objects.
function done(summary, latency, requests)
   io.write(string.format("duration=%d requests=%d bytes=%d\n",
                          summary.duration, summary.requests, summary.bytes))
   local e = summary.errors
   io.write(string.format("errors %d %d %d %d %d\n", e.connect, e.read, e.write, e.status, e.timeout))
   io.write(string.format("min=%d max=%d mean=%.1f stdev=%.3f\n",
                          latency.min, latency.max, latency.mean, latency.stdev))
   io.write(string.format("p50=%d p90=%d p100=%d\n",
                          latency:percentile(50), latency:percentile(90), latency:percentile(100)))
   io.write("#=", #latency, "\n")
   for i = 1, #latency do
      local value, count = latency(i)
      io.write(string.format("s(%d)=%d,%d s[%d]=%d\n", i, value, count, i, latency[i]))
   end
   io.write(string.format("requests min=%d max=%d\n", requests.min, requests.max))
end
