-- request() spends at least 2 ms in Lua: the time must be measured.
function request()
   local start = wrk.time_us()
   while wrk.time_us() - start < 2000 do end
   return wrk.format()
end
