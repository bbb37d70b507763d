-- setup() chooses the thread's address with wrk.lookup and checks it with wrk.connect; the
-- address prints through tostring and string.format's %s alike.
function setup(thread)
   local addrs = wrk.lookup(wrk.host, wrk.port)
   thread.addr = addrs[1]
   local line = ("addr %s connect %s"):format(thread.addr, tostring(wrk.connect(thread.addr)))
   print(line)
end

-- In the thread's own state, wrk.thread is the same thread: its address is the one set above.
function init(args)
   print(("thread addr: %s"):format(wrk.thread.addr))
end
