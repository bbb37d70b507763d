-- require finds modules beside the script.
local paths = require "paths"
local nested = require "lib.nested"

function request()
   return wrk.format(nil, paths.next() .. nested.suffix)
end
