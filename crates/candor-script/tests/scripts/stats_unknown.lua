-- Fields wrk's statistics objects do not have read as their own names (wrk's C __index returns
-- the key); summary is a plain table, whose unknown fields are nil in wrk too.
function done(summary, latency, requests)
   io.write("total: " .. requests.total .. "\n")
   io.write(string.format("%s %s %s\n", type(latency.p99), latency.p99, tostring(summary.total)))
   io.write(string.format("%s\n", type(latency.percentile)))
end
