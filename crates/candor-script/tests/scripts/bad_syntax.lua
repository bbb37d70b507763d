function request()
   return wrk.format()
   local x = = 1
end
