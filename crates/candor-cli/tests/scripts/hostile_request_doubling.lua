-- request() doubles a string every call: the heap limit must stop it, not the machine's memory.
local s = "x"
function request()
   s = s .. s
   return wrk.format("GET", "/")
end
