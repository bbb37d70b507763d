function request()
   local t = nil
   return t.path
end
