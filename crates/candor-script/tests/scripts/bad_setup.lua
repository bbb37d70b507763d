function setup(thread)
   error("setup broke")
end
