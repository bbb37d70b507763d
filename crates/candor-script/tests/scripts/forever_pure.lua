-- request() never returns and calls nothing: with the JIT off the hook stops it.
function request()
   local n = 0
   while true do
      n = n + 1
   end
end
