local n = 0
function request()
   n = n + 1
   if n == 20 then
      error("request " .. n .. " went wrong")
   end
   return wrk.format()
end
