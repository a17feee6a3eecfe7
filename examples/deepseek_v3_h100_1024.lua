-- DeepSeek-V3 (671 B parameters, 37.6 B active; MLA, 256 routed experts,
-- top-8, one shared expert) on 128 nodes of 8 x H100-SXM 80GB with
-- Megatron-LM.  DeepSeek trained it on 2,048 H800 with PP 16, EP 64,
-- ZeRO-1 and no TP (DeepSeek-V3 technical report, arXiv:2412.19437
-- s.3.2); compare: apsearch estimate examples/deepseek_v3_h100_1024.lua
--   --strategy tp_degree=1,pp_degree=16,dp_degree=64,ep_degree=64,zero_stage=1,layer_offset=balanced,layer_recompute=full
-- DeepSeek trained one multi-token-prediction module with the model
-- (s.2.2, D = 1): training.mtp_num_layers = 1 (Megatron --mtp-num-layers).
-- With the all-to-all across hosts at one NIC per GPU the search keeps
-- expert parallelism inside a host (EP 8); DeepSeek's EP 64 relies on
-- node-limited routing and DualPipe's overlap, neither modelled here.
return {
  name = "deepseek-v3-h100-1024",
  description = "DeepSeek-V3, 128 x 8 H100-SXM 80GB, seq 4096, global batch 8192",
  model = "deepseek-v3",                       -- examples/models/deepseek-v3.json
  cluster = { device = "h100-sxm-80gb", nodes = 128, devices_per_node = 8 },
  training = {
    global_batch_size = 8192, seq_length = 4096,
    precision = "bf16", optimizer = "adamw", framework = "megatron",
    mtp_num_layers = 1,
  },
  search_space = {
    data_parallel = "auto",
    zero_stage = { 1 },
    tp_degree = { 1, 2 },
    pp_degree = { 8, 16 },
    -- NVIDIA's layouts (NeMo's pretrain_deepseek_v3.py, Megatron-Bridge's
    -- DeepSeek-V3 recipes): ceil(61 / (p v)) layers per model chunk, the
    -- last chunk the rest (pipeline_split fill_last: pp 16 15 x 4 + 1,
    -- pp 8 7 x 8 + 5, pp 8 x vpp 2 15 x 4 + 1 over 16 chunks), beside the
    -- time-balanced split (which cannot interleave 61 layers: 61 mod 2 ~= 0)
    vpp_degree = { 1, 2 },
    layer_offset = { "even", "balanced" },
    pipeline_split = { "fill_last" },
    micro_batch_size = { 1 },
    -- full recompute, or NeMo's selective modules for DeepSeek-V3 on H100
    -- (scripts/performance/recommended_model_configs/model_configs_h100.csv)
    layer_recompute = { "full", "selective" },
    recompute_modules = { "mla_up_proj/mlp/moe" },
    recompute_num_layers = { "auto" },
    ep_degree = { 8, 16, 32, 64 },
    -- the recipe's expert tensor parallelism, not Megatron's default (the
    -- tensor-parallel size): Megatron-Bridge 067f987d src/megatron/bridge/
    -- recipes/deepseek/h100/deepseek_v3.py:132 expert_tensor_parallel_size = 1
    etp_degree = { 1 },
  },
  objective = "step_time",
  top_k = 10,
}
