-- Llama-3.1-8B on one node of 8 x H100-SXM 80GB, TorchTitan style
-- (FSDP2 + tensor parallel), sequence length 8192, 64 sequences per step
-- (0.5 M tokens).  The built-in default of `apsearch run`.
--
-- Try:  apsearch run examples/llama3_8b_h100.lua --top-k 5
--       apsearch run examples/llama3_8b_h100.lua --fix tp_degree=1 --set cluster.memory_limit_gib=60
return {
  name = "llama3-8b-h100",
  description = "Llama-3.1-8B, 1 x 8 H100-SXM 80GB, seq 8192, global batch 64",
  model = "llama-3.1-8b",                     -- examples/models/llama-3.1-8b.json
  cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
  training = {
    global_batch_size = 64, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "fsdp2",
  },
  search_space = {
    data_parallel = "auto",                   -- dp x fsdp fills the 8 GPUs
    fsdp_degree = { 1, 2, 4, 8 },             -- dp_degree = 8 / (tp x fsdp)
    zero_stage = { 0, 1 },                    -- with fsdp_degree = 1
    tp_degree = { 1, 2, 4, 8 },
    sequence_parallel = { true },
    micro_batch_size = { 1, 2, 4 },
    layer_recompute = { "none", "selective", "full" },
    pp_degree = 1, cp_degree = 1,             -- widen to search PP / CP
  },
  objective = "step_time",
  top_k = 10,
}
