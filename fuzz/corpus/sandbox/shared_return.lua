local t = {}
for i = 1, 40 do t = { t, t, t, t, t, t } end
return t
