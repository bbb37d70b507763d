-- A function cannot be copied to another state.
function setup(thread)
   thread:set("f", function() end)
end
