-- done() never returns: a signal must stop it.
function done(summary, latency, requests)
   local x = 0
   while true do
      x = x + 1
   end
end
