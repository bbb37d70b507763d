-- Four requests written back to back in each request() call.
local batch

init = function(args)
   local parts = {}
   for i, path in ipairs({ "/one", "/two", "/three", "/four" }) do
      parts[i] = wrk.format(nil, path)
   end
   batch = table.concat(parts)
end

request = function()
   return batch
end
