-- The scripting benchmark's request(): a new path and a new header value on every call
-- (crates/candor-script/benches/next_request.rs; the same file runs under wrk for comparison).
local counter = 0

function request()
   counter = counter + 1
   return wrk.format("GET", "/item/" .. counter, { ["X-Request-Id"] = tostring(counter) })
end
