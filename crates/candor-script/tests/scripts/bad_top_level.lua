local config = nil
local port = config.port
