-- Built-in rule "framework": the strategy is one the training framework can
-- run (megatron: no ZeRO-2/3 over DDP, FSDP2 without PP, EP or HSDP,
-- Megatron-FSDP with ZeRO-2 (optim_grads), HSDP and always resharding,
-- no sliding window with p2p CP, no CP with attention sinks; fsdp2: no ZeRO-1/2, TP
-- always with SP; fsdp: data parallelism only; deepspeed: no HSDP, no CP;
-- and the recipe settings each one offers, src/core/recipe.c), so every ranked
-- strategy has a launch config.  Runs after the structural rules, so a
-- strategy that cannot exist is reported as such first.  Cheap; wraps
-- ctx:check("framework") of src/core/check.c.
return {
  name = "framework",
  code = "FRAMEWORK_UNSUPPORTED",
  -- what the framework runs and apsearch does not price (hybrid Mamba-2
  -- and Gated DeltaNet layers under some strategies)
  codes = { "FRAMEWORK_UNSUPPORTED", "NOT_MODELLED" },
  cheap = true,
  order = 90,
  core_check = "framework",
  description = "the training framework can run the strategy",
  check = function(candidate, ctx)
    return ctx:check("framework", candidate)
  end,
}
