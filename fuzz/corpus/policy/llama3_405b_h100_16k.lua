-- Llama-3.1-405B on 16,384 H100-SXM 80GB (2,048 nodes of 8), Megatron
-- style 4D parallelism: TP x CP x PP (1F1B or interleaved) x DP with the
-- distributed optimizer, sequence length 8192, 2,048 sequences per step
-- (16 M tokens), as in the Llama 3 paper (Dubey et al. 2024, s.3.3: the
-- published setting is TP 8, CP 1, PP 16, DP 128).
--
-- The 126 layers do not split evenly over 16 stages: layer_offset
-- "balanced" lets the core choose the partition that balances stage time
-- (taking layers off the stages that carry the embedding and the
-- 128K-vocabulary output layer), and recompute_num_layers "auto" recomputes
-- only as many layers per stage as that stage needs to fit.
--
-- Try:  apsearch run examples/llama3_405b_h100_16k.lua --fix pp_degree=16
return {
  name = "llama3-405b-h100-16k",
  description = "Llama-3.1-405B, 2048 x 8 H100-SXM 80GB, seq 8192, global batch 2048",
  model = "llama-3.1-405b",
  cluster = { device = "h100-sxm-80gb", nodes = 2048, devices_per_node = 8 },
  training = {
    global_batch_size = 2048, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",                   -- dp = 16384 / (tp x cp x pp)
    zero_stage = { 1 },                       -- Megatron distributed optimizer
    tp_degree = { 4, 8 },
    sequence_parallel = { true },
    cp_degree = { 1, 2 },
    pp_degree = { 8, 16, 32 },
    vpp_degree = { 1, 2, 4 },
    layer_offset = { "even", "balanced" },
    micro_batch_size = { 1, 2 },
    layer_recompute = { "none", "selective", "full" },
    recompute_num_layers = { "auto" },
  },
  objective = "step_time",
  top_k = 10,
}
