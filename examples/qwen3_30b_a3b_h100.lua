-- Qwen3-30B-A3B (128 experts, top-8) on 2 nodes of 8 x H100-SXM 80GB with
-- Megatron-LM.
--
-- Try:  apsearch run examples/qwen3_30b_a3b_h100.lua --top-k 5
return {
  name = "qwen3-30b-a3b-h100-16",
  description = "Qwen3-30B-A3B, 2 x 8 H100-SXM 80GB, seq 4096, global batch 512",
  model = "qwen3-30b-a3b",                     -- examples/models/qwen3-30b-a3b.json
  cluster = { device = "h100-sxm-80gb", nodes = 2, devices_per_node = 8 },
  training = {
    global_batch_size = 512, seq_length = 4096,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    zero_stage = { 1 },
    tp_degree = { 1, 2 },
    pp_degree = { 1, 2 },
    micro_batch_size = { 1, 2 },
    layer_recompute = { "none", "full" },
    ep_degree = { 1, 2, 4, 8, 16 },
  },
  objective = "step_time",
  top_k = 10,
}
