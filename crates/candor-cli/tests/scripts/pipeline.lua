-- Three requests in one string, as wrk's pipelining scripts send them: built once in init().
local batch

function init(args)
   local parts = {}
   for i = 1, 3 do
      parts[i] = wrk.format(nil, "/p/" .. i)
   end
   batch = table.concat(parts)
end

function request()
   return batch
end
