-- Never returns: only SIGINT ends it.
function request()
   local x = 0
   while true do
      x = x + 1
   end
end
