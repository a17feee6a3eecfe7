-- The 122,580-candidate sweep (examples/llama3_70b_h100_1024_sweep.lua)
-- with every pipelined candidate balanced (layer_offset "balanced", the
-- even split where pp = 1) and recompute_num_layers "auto" beside the
-- fixed counts: the space where balance.c scores its splits by the
-- simulated step (issue 15 item 3; bench/run.sh measures it).
return {
  name = "llama3-70b-h100-1024-balanced",
  description = "Llama-3.1-70B, 128 x 8 H100-SXM 80GB, seq 8192, global batch 2048: full sweep, balanced stages",
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
    recompute_num_layers = { -1, 1, 2, 4, "auto" },
    layer_offset = { "balanced" },
  },
  objective = "step_time",
  top_k = 10,
}
