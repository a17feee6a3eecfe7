-- Built-in rule "zero": zero_stage in 0..3; with fsdp_degree > 1 only 0 or 3
-- Cheap (runs before the estimate); wraps the core check ctx:check("zero")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "zero",
  code = "ZERO_STAGE_INVALID",
  cheap = true,
  order = 20,
  core_check = "zero",
  description = "zero_stage in 0..3; with fsdp_degree > 1 only 0 or 3",
  check = function(candidate, ctx)
    return ctx:check("zero", candidate)
  end,
}
