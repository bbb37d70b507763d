-- Think time: each connection waits a random 5 to 25 ms before its next request.
-- (candor: closed loop only; in an open loop the schedule decides when requests go.)
delay = function()
   return math.random(5, 25)
end
