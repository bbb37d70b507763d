-- wrk.format() with no arguments: the wrk.* fields, Host added, no Content-Length.
function request()
   return wrk.format()
end
