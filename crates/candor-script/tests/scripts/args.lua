-- init(args): args[0] is the target URL, the arguments after -- follow from args[1], as wrk.
function init(args)
   url = args[0]
   first = args[1]
   second = args[2]
   count = #args
end

function request()
   wrk.name = url
   return wrk.format(nil, "/" .. first .. "/" .. second .. "/" .. count)
end
