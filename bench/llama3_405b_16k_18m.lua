-- The largest benchmark of issue 14 (its "17 M-candidate space"):
-- bench/llama3_405b_16k_wide.lua with three more dimensions -- ZeRO stage
-- 0 beside the distributed optimizer, micro-batch sizes 1 to 8 and the
-- pipeline split even or balanced by stage time -- 18,411,200 candidates
-- (bench/run.sh measures the search and `run --out` on it; target: under
-- 30 s).
return {
  name = "llama3-405b-h100-16k-18m",
  description = "Llama-3.1-405B, 2048 x 8 H100-SXM 80GB, seq 8192, global batch 2048: every dimension wide, 18 M candidates",
  model = "llama-3.1-405b",
  cluster = { device = "h100-sxm-80gb", nodes = 2048, devices_per_node = 8 },
  training = {
    global_batch_size = 2048, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    fsdp_degree = { 1, 2, 4, 8 },
    zero_stage = { 0, 1 },                    -- DDP, distributed optimizer
    sequence_parallel = { true, false },
    cp_comm_type = { "p2p", "all_gather" },
    tp_degree = { min = 1, max = 8, pow2 = true },
    cp_degree = { min = 1, max = 16 },
    pp_degree = { min = 1, max = 64 },
    vpp_degree = { min = 1, max = 8 },
    layer_offset = { "even", "balanced" },
    micro_batch_size = { min = 1, max = 8 },
    layer_recompute = { "none", "selective", "full" },
    recompute_num_layers = { -1, "auto" },
    recompute_method = { "block", "uniform" },
  },
  constraints = { max_candidates = 20000000 },
  objective = "step_time",
  top_k = 10,
}
