function request()
   return { "not", "a", "string" }
end
