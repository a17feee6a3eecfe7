local a, b = ("x"):rep(1 << 22) .. "a", ("x"):rep(1 << 22) .. "b"
while true do local _ = a < b end
