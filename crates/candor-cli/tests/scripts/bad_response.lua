local n = 0
function response(status, headers, body)
   n = n + 1
   if n == 20 then
      return headers.missing.field
   end
end
