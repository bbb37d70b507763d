-- wrk.time_us(): wall-clock microseconds, as wrk2; print goes to the captured output.
function request()
   local t = wrk.time_us()
   print("now " .. string.format("%d", t))
   return wrk.format(nil, "/t/" .. string.format("%d", t))
end
