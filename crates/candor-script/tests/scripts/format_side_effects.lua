-- wrk.format() mutates the headers table it is given: Host and Content-Length appear in it.
-- The test reads what happened through the request's label.
function request()
   local headers = { ["X-Kind"] = "probe" }
   local req = wrk.format("POST", "/submit", headers, "abc")
   wrk.name = "host=" .. tostring(headers["Host"]) .. " length=" .. tostring(headers["Content-Length"])
   return req
end
