-- Built-in rule "batch": global_batch_size divisible by micro_batch_size x (dp x fsdp); micro_batch_num consistent
-- Cheap (runs before the estimate); wraps the core check ctx:check("batch")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "batch",
  code = "BATCH_DIVISIBILITY",
  cheap = true,
  order = 60,
  core_check = "batch",
  description = "global_batch_size divisible by micro_batch_size x (dp x fsdp); micro_batch_num consistent",
  check = function(candidate, ctx)
    return ctx:check("batch", candidate)
  end,
}
