function request()
end
