-- io.write writes to the file io.output() names and returns it (assert(io.write(...)) passes).
function init(args)
   io.output(args[1])
   assert(io.write("to the file ", 42, "\n"))
   io.close()
   io.output(io.stdout)
   assert(io.write("to stdout\n"))
end
