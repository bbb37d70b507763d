-- setup() chooses the thread's address with wrk.lookup and checks it with wrk.connect.
function setup(thread)
   local addrs = wrk.lookup(wrk.host, wrk.port)
   thread.addr = addrs[1]
   print("addr " .. tostring(thread.addr) .. " connect " .. tostring(wrk.connect(thread.addr)))
end
