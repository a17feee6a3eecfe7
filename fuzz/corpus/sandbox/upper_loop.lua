local s = ("x"):rep(1 << 20)
while true do local u = s:upper() end
