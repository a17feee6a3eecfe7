-- examples/objectives/gpu_hours_per_trillion_tokens.lua -- rank by cost.
--
-- Cost in GPU-hours to train on 10^12 tokens, charging every GPU of the
-- cluster (idle ones included: they are paid for):
--
--   GPU-h / 1e12 tokens = num_devices x step_time / tokens_per_step x 1e12 / 3600
--
-- with tokens_per_step = global_batch_size x seq_length.  With every GPU
-- busy it ranks like throughput; with `allow_idle_devices = true` it
-- charges the idle GPUs that tokens/s per GPU hides.  Multiply by your
-- price per GPU-hour for money.
--
--   apsearch run examples/llama3_70b_h100.lua \
--       --objective examples/objectives/gpu_hours_per_trillion_tokens.lua
return {
  name = "gpu_hours_per_trillion_tokens",
  description = "GPU-hours per 10^12 training tokens, whole cluster charged (lower first)",
  unit = "GPU-h / 1e12 tokens",
  -- entry: ctx:evaluate's table (step_time [s], mem_peak [B], ...) plus
  -- strategy and index; ctx: the rule context (ctx.cluster, ctx.training).
  score = function(entry, ctx)
    local tokens_per_step = ctx.training.global_batch_size * ctx.training.seq_length
    return ctx.cluster.num_devices * entry.step_time / tokens_per_step * 1e12 / 3600
  end,
}
