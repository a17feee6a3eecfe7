-- Built-in rule "memory_limit": the worst pipeline stage's peak memory per
-- device must fit the memory limit (training.memory_limit_bytes, default:
-- device capacity minus the margin).  Not cheap: it reads the evaluation the
-- core returned (ctx:evaluate), whose message names the stage, the peak, the
-- limit and the largest memory category.
return {
  name = "memory_limit",
  code = "MEMORY_LIMIT",
  cheap = false,
  order = 100,
  description = "worst-stage peak memory <= memory limit",
  check = function(candidate, ctx, evaluation)
    if evaluation.reason == "MEMORY_LIMIT" then
      return false, "MEMORY_LIMIT", evaluation.message
    end
    return true
  end,
}
