-- A mutated string.dump given to load(): LuaJIT does not verify bytecode, so loading it must be
-- refused (text only) rather than run.
local code = string.dump(function(a) return a + 1 end)
local mutated = code:sub(1, 8) .. string.rep("\255", #code - 8)
local f, err = load(mutated)
if f then f(1) end
error("load() said: " .. tostring(err))
