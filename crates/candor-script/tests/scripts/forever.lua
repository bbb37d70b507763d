-- request() never returns, calling one of candor's functions in its loop: the interrupt stops
-- it even when LuaJIT has compiled the loop.
function request()
   while true do
      wrk.time_us()
   end
end
