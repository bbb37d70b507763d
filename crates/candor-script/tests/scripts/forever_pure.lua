-- request() never returns and calls nothing: the interpreter's hook stops it (JIT off).
function request()
   local n = 0
   while true do
      n = n + 1
   end
end
