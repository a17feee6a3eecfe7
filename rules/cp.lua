-- Built-in rule "cp": seq_length divisible by 2 x cp_degree (load-balanced causal split)
-- Cheap (runs before the estimate); wraps the core check ctx:check("cp")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "cp",
  code = "CP_DIVISIBILITY",
  cheap = true,
  order = 40,
  core_check = "cp",
  description = "seq_length divisible by 2 x cp_degree (load-balanced causal split)",
  check = function(candidate, ctx)
    return ctx:check("cp", candidate)
  end,
}
