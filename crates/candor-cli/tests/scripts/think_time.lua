-- wrk's think time: 10 ms after each response before the next request (closed loop).
function delay()
   return 10
end
