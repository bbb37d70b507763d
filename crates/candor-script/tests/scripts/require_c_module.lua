-- luasocket is a C module, which a safe state cannot load: the error must say so.
local socket = require "socket"
