-- wrk.format, whose bytes candor builds in C, against the Lua definition it replaced (wrk's:
-- the request line, each header as `name .. ": " .. tostring(value)` in pairs() order, an empty
-- line, the body), on inputs of every kind, one case per request() call: it raises on the
-- first difference and otherwise returns one fixed request (some cases are no valid HTTP).

local function reference(method, path, headers, body)
   local lines = { method .. " " .. path .. " HTTP/1.1" }
   for name, value in pairs(headers) do
      lines[#lines + 1] = name .. ": " .. tostring(value)
   end
   lines[#lines + 1] = ""
   lines[#lines + 1] = body or ""
   return table.concat(lines, "\r\n")
end

local shown = setmetatable({}, { __tostring = function() return "shown-by-__tostring" end })

local function many(n)
   local t = {}
   for i = 1, n do
      t["X-Header-" .. i] = string.rep("v", i)
   end
   return t
end

local cases = {
   { "GET", "/" },
   { "POST", "/submit", { ["Content-Type"] = "text/plain" }, "a body" },
   { "PUT", "/n", { ["X-Number"] = 42, ["X-Float"] = 0.5, ["X-Big"] = 2 ^ 53 } },
   { "GET", "/b", { ["X-True"] = true, ["X-False"] = false } },
   { "GET", "/t", { ["X-Shown"] = shown } },
   { "GET", "/numbered", { [1] = "one", [2.5] = "two and a half" } },
   { "DELETE", 12345, {} },
   { "GET", "/many", many(100) },
   { "POST", "/binary", {}, "nul\0byte\r\n\r\nand more" },
   { "POST", "/long", { ["X-Long"] = string.rep("x", 20000) }, string.rep("y", 70000) },
   { nil, nil, nil, nil },
   { "get", "/lower case path?q=a b" },
}

local calls = 0

function request()
   calls = calls + 1
   local c = cases[(calls - 1) % #cases + 1]
   local method, path, headers, body = c[1], c[2], c[3], c[4]
   local got = wrk.format(method, path, headers, body)
   -- wrk.format added Host and set Content-Length in the table it used; the reference reads
   -- the same table, so both see the same headers in the same order.
   local want = reference(method or wrk.method, path or wrk.path, headers or wrk.headers, body or wrk.body)
   if got ~= want then
      error(string.format("case %d differs:\n%q\n%q", (calls - 1) % #cases + 1, got, want))
   end
   return "GET /compared HTTP/1.1\r\nHost: x\r\n\r\n"
end
