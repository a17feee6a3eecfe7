-- Built-in rule "degrees": every degree and micro_batch_size in [1, 2^24], micro_batch_num >= 0, pp_degree <= 256
-- Cheap (runs before the estimate); wraps the core check ctx:check("degrees")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "degrees",
  code = "INVALID_DEGREE",
  cheap = true,
  order = 10,
  core_check = "degrees",
  description = "every degree and micro_batch_size in [1, 2^24], micro_batch_num >= 0, pp_degree <= 256",
  check = function(candidate, ctx)
    return ctx:check("degrees", candidate)
  end,
}
