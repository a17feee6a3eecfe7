-- Llama-3.1-8B at a 131,072-token sequence on 64 H100-SXM 80GB (8 nodes of
-- 8): long-context training needs context parallelism (ring attention, the
-- all-gather variant of Llama 3, or the all-to-all of Q, K, V and the output
-- that scatters heads, a2a), each CP rank holding s / c tokens.
--
-- Try:  apsearch run examples/llama3_8b_128k_cp.lua --set cluster.nodes=1
--       apsearch run examples/llama3_8b_128k_cp.lua --fix cp_degree=8
return {
  name = "llama3-8b-128k-cp",
  description = "Llama-3.1-8B, seq 131072, 8 x 8 H100-SXM 80GB, global batch 64",
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 8, devices_per_node = 8 },
  training = {
    global_batch_size = 64, seq_length = 131072,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    zero_stage = { 1 },
    tp_degree = { 1, 2, 4, 8 },
    sequence_parallel = { true },
    cp_degree = { 1, 2, 4, 8, 16, 32, 64 },
    cp_comm_type = { "p2p", "all_gather", "a2a" },
    pp_degree = { 1, 2, 4 },
    layer_offset = { "balanced" },
    micro_batch_size = { 1 },
    layer_recompute = { "selective", "full" },
    recompute_num_layers = { "auto" },
  },
  objective = "step_time",
  top_k = 10,
}
