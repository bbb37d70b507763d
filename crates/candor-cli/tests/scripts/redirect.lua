-- setup() sends the second thread's connections to another server (its port in the
-- environment, as a test passes it): wrk's thread.addr, chosen with wrk.lookup and checked
-- with wrk.connect.
local threads = 0

function setup(thread)
   threads = threads + 1
   if threads == 2 then
      local addr = wrk.lookup("127.0.0.1", os.getenv("CANDOR_TEST_OTHER_PORT"))[1]
      assert(wrk.connect(addr), "the other server does not listen")
      thread.addr = addr
   end
end
