function init(args)
   error("cannot start: " .. tostring(args[1]))
end
