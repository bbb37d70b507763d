-- done() writes where require looks for modules.
function done()
   io.write(package.path)
end
