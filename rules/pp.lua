-- Built-in rule "pp": layers divisible by pp_degree x vpp_degree (or a valid stage_partition / layer_offset); vpp needs pp > 1
-- Cheap (runs before the estimate); wraps the core check ctx:check("pp")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "pp",
  code = "PP_DIVISIBILITY",
  cheap = true,
  order = 70,
  core_check = "pp",
  codes = { "PP_DIVISIBILITY", "PP_PARTITION", "VPP_INVALID" },
  description = "layers divisible by pp_degree x vpp_degree (or a valid stage_partition / layer_offset); vpp needs pp > 1",
  check = function(candidate, ctx)
    return ctx:check("pp", candidate)
  end,
}
