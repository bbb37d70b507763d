-- by_request labels: wrk.format's table form names the request; wrk.name works too.
local n = 0

function request()
   n = n + 1
   if n % 2 == 1 then
      return wrk.format { method = "GET", path = "/odd", name = "odd" }
   end
   wrk.name = "even"
   return wrk.format("GET", "/even")
end
