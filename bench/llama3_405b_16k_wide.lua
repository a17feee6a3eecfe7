-- The scale benchmark of issue 14: Llama-3.1-405B on 16,384 H100-SXM 80GB
-- (2,048 nodes of 8), as examples/llama3_405b_h100_16k.lua, with every
-- dimension wide: 2,430,560 candidates, most of which a
-- divisibility or device-count rule rejects (bench/run.sh measures the
-- search and `run --out` on it).
return {
  name = "llama3-405b-h100-16k-wide",
  description = "Llama-3.1-405B, 2048 x 8 H100-SXM 80GB, seq 8192, global batch 2048: every dimension wide",
  model = "llama-3.1-405b",
  cluster = { device = "h100-sxm-80gb", nodes = 2048, devices_per_node = 8 },
  training = {
    global_batch_size = 2048, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    fsdp_degree = { 1, 2, 4, 8 },
    zero_stage = { 1 },                       -- Megatron distributed optimizer
    sequence_parallel = { true, false },
    cp_comm_type = { "p2p", "all_gather" },
    tp_degree = { min = 1, max = 8, pow2 = true },
    cp_degree = { min = 1, max = 16 },
    pp_degree = { min = 1, max = 64 },
    vpp_degree = { min = 1, max = 8 },
    micro_batch_size = { min = 1, max = 4 },
    layer_recompute = { "none", "selective", "full" },
    recompute_num_layers = { -1, "auto" },
    recompute_method = { "block", "uniform" },
  },
  constraints = { max_candidates = 5000000 },
  objective = "step_time",
  top_k = 10,
}
