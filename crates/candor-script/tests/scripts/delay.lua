-- delay(): wrk's closed-loop pause before each request.
function delay()
   return 25
end
