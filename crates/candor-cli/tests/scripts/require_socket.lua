-- luasocket is a C module: a safe state cannot load it, and the error must say why.
local socket = require "socket"
