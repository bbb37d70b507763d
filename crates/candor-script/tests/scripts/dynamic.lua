-- A new path, a new header value and a body on every call: strings and a table made each time.
-- The counter keeps four digits, so the strings keep their lengths (the allocator test's steady
-- state: a string of a new length needs blocks of a new size once).
local n = 999

function request()
   n = n % 9999 + 1
   n = math.max(n, 1000)
   return wrk.format("POST", "/item/" .. n, { ["X-Request-Id"] = tostring(n) }, "body " .. n)
end
