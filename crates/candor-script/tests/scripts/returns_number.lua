function request()
   return 42
end
