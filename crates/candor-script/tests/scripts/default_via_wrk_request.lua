-- request() may count and then send the default request through wrk.request().
function init(args)
   requests = 0
end

function request()
   requests = requests + 1
   wrk.name = "call " .. requests
   return wrk.request()
end
