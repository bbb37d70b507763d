-- A module of uses_module.lua, found through package.path.
local M = {}
local n = 0

function M.next()
   n = n + 1
   return "/item/" .. n
end

return M
