-- The schedule, not the script, decides when requests go in an open loop.
function delay()
   return 5
end
