function setup(thread)
   thread.addr = wrk.lookup("no-such-host.invalid", "80")[1]
end
