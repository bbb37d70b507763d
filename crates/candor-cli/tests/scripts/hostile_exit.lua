-- os.exit() after 20 responses: the run stops as thread:stop() stops it, results written.
local n = 0
function response(status, headers, body)
   n = n + 1
   if n == 20 then
      os.exit(3)
   end
end
