-- a preset name far longer than any known one (CI fuzzing, 2026-12-05: the
-- "did you mean" distances went over the sandbox instruction limit)
local m = preset("llama-3.1-8bAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
return { model = m, cluster = cluster("h100-sxm-80gb", 1, 8) }
