-- Resolves the target in setup() and prints the address each thread would use.
local addrs = nil

setup = function(thread)
   if not addrs then
      addrs = wrk.lookup(wrk.host, wrk.port or "http")
      for i = #addrs, 1, -1 do
         if not wrk.connect(addrs[i]) then
            table.remove(addrs, i)
         end
      end
   end
   thread.addr = addrs[1]
   print("thread connects to " .. tostring(thread.addr))
end
