-- done() prints 100 MB: streamed out as printed, not held until the end.
function done(summary, latency, requests)
   local line = string.rep("x", 999)
   for i = 1, 100000 do
      print(line)
   end
end
