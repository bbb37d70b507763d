function setup(thread)
   thread:set("x", nil)
   local t = nil
   return t.field
end
