function request()
   return "this is not an HTTP request"
end
