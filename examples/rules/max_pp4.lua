-- examples/rules/max_pp4.lua -- at most 4 pipeline stages.
--
-- A team rule of thumb: deeper pipelines cost more bubble and more
-- operational complexity (checkpoint layouts, stage imbalance) than the
-- estimator's step time shows.  A candidate with pp_degree > 4 is rejected
-- with the reason code PP_OVER_4.
--
--   apsearch run examples/llama3_70b_h100.lua --set search_space.pp_degree=1,2,4,8 \
--       --rules examples/rules/max_pp4.lua
local MAX_STAGES = 4

return {
  name = "max_pp4",
  code = "PP_OVER_4",
  cheap = true,
  description = "at most " .. MAX_STAGES .. " pipeline stages",
  check = function(candidate)
    local pp = candidate.pp_degree or 1
    if pp <= MAX_STAGES then return true end
    return false, "PP_OVER_4", string.format("pp_degree = %d > %d stages", pp, MAX_STAGES)
  end,
}
