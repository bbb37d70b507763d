-- candor's `wrk` module: the Lua half of the wrk scripting API (the Rust half adds lookup,
-- connect, time_us and fail, and fills in the target's fields before any script runs).
-- Written for candor from wrk's documented behaviour; every script state requires it once.

local wrk = {
   scheme  = "http",
   host    = "localhost",
   port    = nil,
   method  = "GET",
   path    = "/",
   headers = {},
   body    = nil,
   thread  = nil,
}

-- The value a Host header gets when the script has not set one: host[:port], IPv6 bracketed.
local function default_host()
   local host = wrk.host
   if string.find(host, ":", 1, true) then
      host = "[" .. host .. "]"
   end
   if wrk.port then
      host = host .. ":" .. wrk.port
   end
   return host
end

-- The request's bytes are put together by candor's C function (crates/candor-script/src/
-- format.rs): one string per request where joining lines in Lua made one per line as well.
local build_request = ...

-- Builds one HTTP/1.1 request. Missing arguments fall back to the wrk.* fields; as in wrk, the
-- headers table given (or wrk.headers) gains Host when missing and Content-Length (nil without a
-- body), and headers are written in pairs() order. candor also accepts one table
-- {method=, path=, headers=, body=, name=}: `name` labels the request's by_request row.
function wrk.format(method, path, headers, body)
   if type(method) == "table" then
      local spec = method
      if spec.name ~= nil then
         wrk.name = spec.name
      end
      method, path, headers, body = spec.method, spec.path, spec.headers, spec.body
   end
   method  = method  or wrk.method
   path    = path    or wrk.path
   headers = headers or wrk.headers
   body    = body    or wrk.body

   if headers["Host"] == nil then
      headers["Host"] = wrk.headers["Host"] or default_host()
   end
   headers["Content-Length"] = body and #body or nil
   return build_request(method, path, headers, body)
end

-- Runs in the setup state, once per thread, before the thread's own state runs init().
function wrk.setup(thread)
   if type(setup) == "function" then
      setup(thread)
   end
end

-- Runs in a thread's state: the default Host header, the script's init(args), then the request
-- sent when the script defines no request() (built once, as wrk does).
function wrk.init(args)
   if wrk.headers["Host"] == nil then
      wrk.headers["Host"] = default_host()
   end
   if type(init) == "function" then
      init(args)
   end
   local built = wrk.format()
   wrk.request = function()
      return built
   end
end

return wrk
