-- Llama-3.1-70B on 64 x H100-SXM 80GB (8 nodes of 8), TorchTitan style
-- (FSDP2/HSDP + tensor parallel), sequence length 8192, 512 sequences per
-- step (4 M tokens).
--
-- Try:  apsearch run examples/llama3_70b_h100.lua --fix tp_degree=8
--       apsearch run examples/llama3_70b_h100.lua --set search_space.pp_degree=1,2,4
return {
  name = "llama3-70b-h100",
  description = "Llama-3.1-70B, 8 x 8 H100-SXM 80GB, seq 8192, global batch 512",
  model = "llama-3.1-70b",
  cluster = { device = "h100-sxm-80gb", nodes = 8, devices_per_node = 8 },
  training = {
    global_batch_size = 512, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "fsdp2",
  },
  search_space = {
    data_parallel = "auto",                   -- dp (replicate) x fsdp (shard) fills 64 GPUs
    fsdp_degree = { min = 1, max = 64, pow2 = true },
    zero_stage = { 0, 1 },
    reshard_after_forward = { true, false },
    tp_degree = { 1, 2, 4, 8 },
    sequence_parallel = { true },
    micro_batch_size = { 1, 2 },
    layer_recompute = { "none", "selective", "full" },
    pp_degree = 1, cp_degree = 1,             -- widen to search PP / CP
  },
  objective = "step_time",
  top_k = 10,
}
