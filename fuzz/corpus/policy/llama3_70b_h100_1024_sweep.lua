-- A wide sweep: Llama-3.1-70B on 1,024 x H100-SXM 80GB (128 nodes of 8),
-- sequence length 8192, 2,048 sequences per step (16 M tokens), over
-- every dimension apsearch models: data parallel (replicate x shard),
-- ZeRO stage, TP with/without SP, PP with interleaving, CP, micro-batch
-- size, and the recompute granularity and depth.  Several hundred thousand
-- candidates: the throughput benchmark of the search loop
-- (tests/lua/search_spec.lua measures it).
return {
  name = "llama3-70b-h100-1024-sweep",
  description = "Llama-3.1-70B, 128 x 8 H100-SXM 80GB, seq 8192, global batch 2048: full sweep",
  model = "llama-3.1-70b",
  cluster = { device = "h100-sxm-80gb", nodes = 128, devices_per_node = 8 },
  training = {
    global_batch_size = 2048, seq_length = 8192,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",
    fsdp_degree = { min = 1, max = 1024, pow2 = true },
    zero_stage = { 0, 1 },
    reshard_after_forward = { true, false },
    tp_degree = { 1, 2, 4, 8 },
    sequence_parallel = { true, false },
    pp_degree = { 1, 2, 4, 5, 8, 10, 16 },
    vpp_degree = { 1, 2, 4 },
    cp_degree = { 1, 2, 4 },
    cp_comm_type = { "p2p", "all_gather" },
    micro_batch_size = { 1, 2, 4 },
    layer_recompute = { "none", "selective", "full" },
    recompute_num_layers = { -1, 1, 2, 4 },
  },
  objective = "step_time",
  top_k = 10,
}
