return coroutine.wrap(function() local t = {} while true do t[#t + 1] = ("x"):rep(64) .. #t end end)()
