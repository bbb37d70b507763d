-- Two pipelined requests built once, under one name: the engine's side of each entry (the
-- script's call, the split, the copy into the slot, the name's row) must allocate nothing.
local batch = wrk.format(nil, "/a") .. wrk.format("POST", "/b", nil, "xyz")
wrk.name = "pair"

function request()
   return batch
end
