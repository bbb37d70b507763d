function init(args)
   local n = nil
   return n + 1
end
