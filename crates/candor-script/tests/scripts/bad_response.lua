function response(status, headers, body)
   error("cannot judge " .. status)
end
