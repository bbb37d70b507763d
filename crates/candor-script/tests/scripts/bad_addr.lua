-- thread.addr takes only an address object from wrk.lookup.
function setup(thread)
   thread.addr = "127.0.0.1:80"
end
