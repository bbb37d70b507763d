-- Stops after its thread has had 100 responses.
local seen = 0

response = function(status, headers, body)
   seen = seen + 1
   if seen >= 100 then
      wrk.thread:stop()
   end
end
