-- Mixtral-8x7B (46.7 B parameters, 12.9 B active) on 8 nodes of 8 x
-- H100-SXM 80GB with Megatron-LM: expert parallelism searched over the
-- divisors of the 8 experts that fit a pipeline stage's ranks.
--
-- Try:  apsearch run examples/mixtral_8x7b_h100.lua --top-k 5
return {
  name = "mixtral-8x7b-h100-64",
  description = "Mixtral-8x7B, 8 x 8 H100-SXM 80GB, seq 4096, global batch 256",
  model = "mixtral-8x7b",                      -- examples/models/mixtral-8x7b.json
  cluster = { device = "h100-sxm-80gb", nodes = 8, devices_per_node = 8 },
  training = {
    global_batch_size = 256, seq_length = 4096,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    zero_stage = { 1 },                        -- distributed optimizer
    tp_degree = { 1, 2, 4 },
    pp_degree = { 1, 2, 4 },
    micro_batch_size = { 1, 2 },
    layer_recompute = { "none", "full" },
    ep_degree = { 1, 2, 4, 8 },
  },
  objective = "step_time",
  top_k = 10,
}
