-- response() never returns: the run's end (the duration and the drain) must stop it.
function response(status, headers, body)
   local x = 0
   while true do
      x = x + 1
   end
end
