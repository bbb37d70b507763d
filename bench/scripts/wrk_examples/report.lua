-- A report of its own after the run: latency percentiles in microseconds.
done = function(summary, latency, requests)
   io.write("------------------------------\n")
   io.write(string.format("%d requests, %d errors (status)\n", summary.requests, summary.errors.status))
   for _, p in ipairs({ 50, 90, 99, 99.999 }) do
      io.write(string.format("%g%%,%d\n", p, latency:percentile(p)))
   end
end
