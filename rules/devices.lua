-- Built-in rule "devices": dp x fsdp x tp x pp x cp <= num_devices (= unless allow_idle_devices); HSDP needs shard and replicate > 1
-- Cheap (runs before the estimate); wraps the core check ctx:check("devices")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "devices",
  code = "DEVICE_COUNT",
  cheap = true,
  order = 80,
  core_check = "devices",
  codes = { "DEVICE_COUNT", "IDLE_DEVICES", "HSDP_INVALID" },
  description = "dp x fsdp x tp x pp x cp <= num_devices (= unless allow_idle_devices); HSDP needs shard and replicate > 1",
  check = function(candidate, ctx)
    return ctx:check("devices", candidate)
  end,
}
