-- One request per call, its path the call's number: the order requests are made in shows.
local calls = 0

function request()
   calls = calls + 1
   return wrk.format("GET", "/" .. calls)
end
