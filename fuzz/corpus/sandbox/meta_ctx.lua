setmetatable(ctx.cluster, { __index = function() while true do end end })
return true
