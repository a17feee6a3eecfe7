--- Field tables of the model, device, cluster, training and strategy
-- configs (the struct fields of include/apsearch/types.h), their value
-- checks, and the friendly unit suffixes accepted in policies and `--set`.
--
-- Unit suffixes (converted to the SI field the core takes):
--
-- * `_gib` x 2^30 bytes, `_mib` x 2^20 bytes -> `<base>_bytes` (or `<base>`)
-- * `_gbps` x 1e9 bytes/s -> `<base>` (or `<base>_bandwidth`)
-- * `_tflops` x 1e12 FLOP/s -> `<base>`; `peak_<p>_tflops` -> `peak_flops_<p>`
-- * `_us` x 1e-6 s, `_ms` x 1e-3 s -> `<base>` (or `<base>_latency`)
--
-- e.g. `memory_limit_gib = 60` -> `memory_limit_bytes = 64424509440`,
-- `inter_node_bandwidth_gbps = 50` -> `inter_node_bandwidth = 5e10`.
-- @module apsearch.schema
local util = require "apsearch.util"

local M = {}

local function enum(...) return { enum = { ... } } end

--- training.precision, with the names other tools give the same formats
-- (PyTorch dtypes, TransformerEngine recipes), for "did you mean".
M.PRECISION = enum("bf16", "fp16", "fp8", "mxfp8", "nvfp4")
M.PRECISION.aliases = { bfloat16 = "bf16", float16 = "fp16", half = "fp16", float8 = "fp8",
  e4m3 = "fp8", hybrid = "fp8", delayed = "fp8", fp4 = "nvfp4", float4 = "nvfp4" }

--- training.framework, with the names users give the same engines (the
-- project or its launcher rather than the parallelism apsearch keys on),
-- for "did you mean".
M.FRAMEWORK = enum("megatron", "fsdp2", "fsdp", "deepspeed", "automodel")
M.FRAMEWORK.aliases = { torchtitan = "fsdp2", ["megatron-lm"] = "megatron", ["megatron-core"] = "megatron",
  mcore = "megatron", ["megatron-bridge"] = "megatron", nemo = "megatron", ["nemo-automodel"] = "automodel" }

--- Model fields (aps_model) and their kinds.
M.model = {
  name = "string",
  num_layers = "posint", hidden_size = "posint", num_attention_heads = "posint",
  num_query_groups = "posint", head_dim = "posint", ffn_hidden_size = "posint",
  vocab_size = "posint", max_position_embeddings = "nonnegint",
  norms_per_layer = "nonnegint",
  mlp = enum("swiglu", "gelu", "relu2", "xielu"),
  norm = enum("rmsnorm", "layernorm"),
  position_embedding = enum("rope", "learned", "alibi", "none"),
  norm_bias = "bool", qkv_bias = "bool", attn_out_bias = "bool", mlp_bias = "bool",
  qk_norm = "bool", qk_norm_full_width = "bool", qk_norm_head_weights = "bool", attention_sinks = "bool",
  qk_norm_weightless = "bool",
  tie_word_embeddings = "bool", lm_head_bias = "bool", reordered_norm = "bool",
  rotary_interleaved = "bool", mup_multipliers = "bool", parallel_attn_mlp = "bool",
  norm_weightless = "bool", embedding_norm = "bool",
  sliding_window = "nonnegint", sliding_window_layers = "nonnegint",
  sliding_window_period = "nonnegint", sliding_window_layout = "string",
  global_head_dim = "nonnegint", global_num_query_groups = "nonnegint", global_k_eq_v = "bool",
  global_num_attention_heads = "nonnegint",
  attn_v_head_dim = "nonnegint", window_attention_sinks = "bool",
  -- Llama 4's attention: weightless L2 Q/K norms, NoPE layers, chunked
  -- attention (the chunk changes the attention FLOPs)
  qk_l2_norm = "bool", nope_layer_period = "nonnegint", attention_chunk_size = "nonnegint",
  chunked_attention_layers = "nonnegint",
  -- the gated MLP's activation and soft-capping (change no estimate; the
  -- launch configs write them or say they cannot)
  glu_activation = enum("silu", "gelu_tanh", "quick_gelu", "situ", "gelu"),
  glu_linear_offset = "nonneg", glu_clamp = "nonneg",
  attn_logit_softcapping = "nonneg", final_logit_softcapping = "nonneg",
  -- numerics that change neither memory nor FLOPs, written into the launch
  -- configs; 0 = not given (the framework's default) or none
  rope_theta = "nonneg", rope_scaling_factor = "nonneg",
  rope_scaling_type = enum("none", "llama3", "linear", "yarn", "longrope"),
  low_freq_factor = "nonneg", high_freq_factor = "nonneg",
  original_max_position_embeddings = "nonnegint", norm_eps = "nonneg", rotary_percent = "nonneg",
  yarn_beta_fast = "nonneg", yarn_beta_slow = "nonneg", yarn_mscale = "nonneg",
  yarn_mscale_all_dim = "nonneg", yarn_attention_factor = "nonneg", yarn_no_truncate = "bool",
  -- mixture of experts (src/core/moe.c; the core checks them together:
  -- none without num_experts, top-k within the experts, a layer pattern
  -- that leaves an MoE layer) and multi-head latent attention
  num_experts = "nonnegint", experts_per_token = "nonnegint", moe_ffn_hidden_size = "nonnegint",
  shared_expert_ffn_hidden_size = "nonnegint", shared_expert_gate = "bool",
  moe_router_bias = "bool", moe_router_fp32 = "bool", moe_router_linear_bias = "bool", moe_router_scales = "bool", moe_latent_size = "nonnegint",
  moe_first_dense_layers = "nonnegint", moe_layer_freq = "nonnegint", moe_layer_phase = "nonnegint",
  moe_dense_layers = "layerlist",
  q_lora_rank = "nonnegint", kv_lora_rank = "nonnegint", qk_nope_head_dim = "nonnegint",
  qk_rope_head_dim = "nonnegint", v_head_dim = "nonnegint", mtp_layers = "nonnegint",
  -- MoE router settings (change no estimate; the launchers write them;
  -- the core allows them only with num_experts)
  moe_aux_loss_coeff = "nonneg", moe_seq_aux_loss = "bool",
  moe_router_num_groups = "nonnegint", moe_router_group_topk = "nonnegint",
  moe_router_group_score_topk = "nonnegint", moe_router_topk_scaling_factor = "nonneg",
  moe_router_pre_softmax = "bool", moe_router_sigmoid = "bool", moe_router_input_probs = "bool",
  moe_router_softmax_bias = "bool",
  -- hybrid Mamba-2 models (Nemotron-H): the layer pattern (M Mamba-2,
  -- * attention, - MLP, E MoE) and the Mamba-2 widths
  hybrid_layer_pattern = "string", mamba_num_heads = "nonnegint", mamba_head_dim = "nonnegint",
  mamba_state_dim = "nonnegint", mamba_num_groups = "nonnegint", mamba_conv_kernel = "nonnegint",
  mamba_chunk_size = "nonnegint", mamba_no_rmsnorm = "bool", mtp_layer_pattern = "string",
  -- linear attention (Qwen3-Next's Gated DeltaNet, Kimi Linear's Kimi
  -- Delta Attention): every k-th layer softmax attention, the others
  -- linear, and its widths
  linear_attention_period = "nonnegint", linear_num_key_heads = "nonnegint",
  linear_num_value_heads = "nonnegint", linear_key_head_dim = "nonnegint",
  linear_value_head_dim = "nonnegint", linear_conv_kernel_dim = "nonnegint",
  -- lightning attention's block length (MiniMax block_size)
  linear_block_size = "nonnegint",
  -- the linear layers' mixer and, instead of the period, their pattern
  -- (one letter a layer: L linear attention, A full attention)
  linear_attention = enum("gated_deltanet", "kda", "short_conv", "lightning", "mamba1"),
  linear_attention_pattern = "string",
  -- Jamba's Mamba-1 mixer: channels, state per channel, time-step rank
  linear_inner_size = "nonnegint", linear_state_dim = "nonnegint", linear_dt_rank = "nonnegint",
  -- Kimi K3: KDA's full-rank output gate, MLA's output gate, block
  -- attention residuals, the latent experts' output norm
  linear_output_gate_full_rank = "bool", linear_beta_doubled = "bool", mla_output_gate = "bool", attn_res_block_size = "nonnegint",
  moe_latent_norm = "bool",
  -- heterogeneous layers (Llama-Nemotron NAS): per layer A attention or -
  -- none; per layer a letter naming an MLP width of nas_ffn_widths or -
  nas_attention_pattern = "string", nas_ffn_pattern = "string", nas_ffn_widths = "string",
  attention_output_gate = "bool", norm_zero_centered = "bool", mtp_shared_embeddings = "bool", attention_head_gate = "bool",
  -- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning
  -- indexer's heads and width, and the keys each query attends to
  index_n_heads = "nonnegint", index_head_dim = "nonnegint", index_topk = "nonnegint",
  index_rope_interleave = "bool",
  -- MiniMax-M3's block-sparse attention (src/core/msa.c)
  msa_layers = "nonnegint", msa_index_heads = "nonnegint", msa_index_dim = "nonnegint",
  msa_block_size = "nonnegint", msa_topk_blocks = "nonnegint", msa_init_blocks = "nonnegint",
  msa_local_blocks = "nonnegint",
  -- cross-layer top-k sharing (GLM-5.2): a layer computes its own top-k
  -- every index_topk_freq layers after index_skip_topk_offset
  index_topk_freq = "nonnegint", index_skip_topk_offset = "nonnegint",
  -- DeepSeek-V4 (src/core/dsv4.c): hyper-connections, the grouped output
  -- projection, the compressed layers and their rates, hash-routed layers
  hc_mult = "nonnegint", hc_sinkhorn_iters = "nonnegint", o_groups = "nonnegint",
  o_lora_rank = "nonnegint", csa_layers = "nonnegint", hca_layers = "nonnegint",
  csa_compress_rate = "nonnegint", hca_compress_rate = "nonnegint", moe_hash_layers = "nonnegint",
}

--- Hugging Face config.json keys a hand-written model table may carry
-- by mistake, and the model field each is (the unknown-field error names
-- it, rather than the nearest spelling).
M.MODEL_HF_KEYS = {
  num_hidden_layers = "num_layers", intermediate_size = "ffn_hidden_size",
  num_key_value_heads = "num_query_groups", rms_norm_eps = "norm_eps", layer_norm_eps = "norm_eps",
  num_local_experts = "num_experts", n_routed_experts = "num_experts",
  num_experts_per_tok = "experts_per_token", moe_intermediate_size = "moe_ffn_hidden_size",
  first_k_dense_replace = "moe_first_dense_layers", num_nextn_predict_layers = "mtp_layers",
  partial_rotary_factor = "rotary_percent",
}

--- Device fields (aps_device), SI units.
M.device = {
  name = "string", base = "string",
  memory_bytes = "nonneg", peak_flops_bf16 = "nonneg", peak_flops_fp8 = "nonneg",
  peak_flops_fp32 = "nonneg", hbm_bandwidth = "nonneg",
  peak_flops_fp4 = "nonneg", host_bandwidth = "nonneg",
  intra_node_bandwidth = "nonneg", inter_node_bandwidth = "nonneg",
  intra_node_links = "nonnegint",
  intra_node_latency = "nonneg", inter_node_latency = "nonneg",
  cuda_context_bytes = "nonneg", nccl_comm_bytes = "nonneg",
  nccl_nvls_bytes_per_rank = "nonneg",
  gemm_efficiency = "nonneg", gemm_half_dim = "nonneg",
  gemm_tile_m = "nonneg", gemm_tile_n = "nonneg", sm_count = "nonnegint",
  gemm_fixed_seconds = "nonneg",
  fp8_gemm_efficiency = "nonneg", attention_efficiency = "nonneg",
  unfused_attention_efficiency = "nonneg",
  hbm_efficiency = "nonneg", collective_efficiency = "nonneg",
  host_seconds_per_kernel = "nonneg", host_seconds_per_loop_kernel = "nonneg",
  host_seconds_per_loop_gemm = "nonneg", gpu_seconds_per_kernel = "nonneg",
  gpu_min_kernel_seconds = "nonneg",
  ssd_scan_rate = "nonneg",
}

--- Cluster fields; `nodes` is policy sugar for num_devices / devices_per_node.
-- `nvlink_domain_size`: GPUs of the job in one NVLink domain (GB200/GB300
-- NVL72: 4 per host, up to 72 per rack); 0 = one host.
M.cluster = {
  device = "device", num_devices = "posint", devices_per_node = "posint",
  nvlink_domain_size = "nonnegint", nodes = "posint",
  -- routed to training (so `cluster.memory_limit_gib = 60` works)
  memory_limit_bytes = "pos", memory_margin_bytes = "nonneg",
  memory_limit_kind = enum("reserved", "allocated", "device"),
}

--- Training fields (aps_training).
M.training = {
  global_batch_size = "posint", seq_length = "posint",
  precision = M.PRECISION,
  optimizer = enum("adam", "adamw", "sgd"),
  framework = M.FRAMEWORK,
  flash_attention = "bool", dropout = "bool",
  -- Megatron's --attention-dropout / --hidden-dropout probabilities (unset:
  -- from dropout, on = the framework's 0.1)
  attention_dropout = "probability", hidden_dropout = "probability",
  -- recipe settings (src/core/recipe.c; docs/modeling.md "Recipe settings")
  fp8_param_gather = "bool", grad_reduce_in_fp32 = "bool",
  activation_offload_layers = "nonnegint", tp_comm_overlap = "bool",
  -- Megatron-Core's fine-grained activation offloading (src/core/offload.c)
  offload_modules = "offload_modules", activation_offload_fraction = "fraction",
  cuda_graphs = "bool",
  cuda_graph_scope = "graph_scope",
  store_param_remainders = "bool", exp_avg_bf16 = "bool", bf16_weights = "bool", transformers_model = "bool",
  hf_eager_layer = "bool", dp_loss_group = "bool", unfused_swiglu = "bool",
  moe_shared_expert_overlap = "bool", moe_router_fusion = "bool",
  cutedsl_fused_grouped_mlp = "bool",
  rms_norm_backend = enum("torch_fp32", "te"),
  moe_flex_dispatcher_backend = enum("deepep", "hybridep"),
  overlap_moe_expert_parallel_comm = "bool",
  -- Megatron-Core's sync-free MoE (src/core/moe.c; docs/modeling.md
  -- "Sync-free experts and the paged stash")
  moe_expert_rank_capacity_factor = "pos", moe_paged_stash = "bool",
  moe_paged_stash_buffer_size_factor_cuda = "pos", moe_paged_stash_page_size = "posint",
  -- Megatron-LM's first and last layers in bf16 (src/core/bf16layers.c;
  -- docs/modeling.md "First and last layers in bf16")
  first_last_layers_bf16 = "bool", num_layers_at_start_in_bf16 = "nonnegint",
  num_layers_at_end_in_bf16 = "nonnegint",
  compile_loss = "bool", sac_save_alltoall = "bool", fuse_qkv = "bool", defer_fsdp_grad_sync = "bool",
  loss_fp32_upcast = "bool", loss_chunks = "posint",
  vocab_size_divisible_by = "nonnegint",
  memory_limit_bytes = "pos", memory_margin_bytes = "nonneg",
  logits_bytes = "nonneg",
  allocator_fragmentation = "fraction", ddp_bucket_bytes = "nonneg",
  -- the allocator (src/core/memory.c allocator_peaks; docs/modeling.md
  -- "Memory per device"): expandable segments, the peak the limit bounds
  allocator_fragmentation_expandable = "fraction", expandable_segments = "bool",
  memory_limit_kind = enum("reserved", "allocated", "device"),
  ddp_buckets_in_flight = "posint",
  dp_overlap = "fraction", fsdp_overlap = "fraction", tp_overlap = "fraction",
  pp_p2p_overlap = "fraction", dp_collective_rails = "nonnegint",
  -- Megatron's partial distributed optimizer (--num-distributed-optimizer-instances)
  distributed_optimizer_instances = "nonnegint",
  -- TorchTitan's / AutoModel's local batch: a step's pipeline passes
  local_batch_size = "nonnegint",
  overlap_interference = "fraction", moe_load_imbalance = "nonneg",
  mtp_num_layers = "nonnegint", mtp_repeated_layer = "bool",
  -- DeepSeek Sparse Attention: the indexer trained with its sparse KL loss
  dsa_indexer_loss_coeff = "nonneg",
  -- Megatron-LM's FSDP implementation (docs/policy.md "Megatron-FSDP")
  fsdp_impl = enum("torch_fsdp2", "megatron_fsdp"),
  suggested_communication_unit_size = "nonneg", fsdp_double_buffer = "bool",
  overlap_p2p_comm = "bool", torch_compile = "bool",
  -- software stack (apsearch.stacks): its efficiency profile; not a core field
  stack = "stack",
  -- the software release the run uses ("Megatron-Bridge 25.09", "torchtitan
  -- (2025-03)"): its release line's settings (apsearch.stacks); not a core field
  software = "string",
  -- NeMo AutoModel's attention kernel (model.backend.attn): its rate is the
  -- stack's (apsearch.stacks attention_backend); not a core field
  attn_backend = enum("te", "sdpa", "flex"),
}

--- Constraint fields of a policy.
M.constraints = {
  memory_limit_bytes = "pos", memory_margin_bytes = "nonneg",
  memory_limit_kind = enum("reserved", "allocated", "device"),
  allow_idle_devices = "bool", rules = "rules", max_candidates = "posint",
}

--- Largest search space a run walks unless constraints.max_candidates says
-- otherwise: about a minute at the measured 300-400k candidates/s.
M.default_max_candidates = 20000000

--- Strategy fields (aps_strategy) and the kind of one value of each.
M.strategy = {
  dp_degree = "posint", fsdp_degree = "posint", tp_degree = "posint",
  pp_degree = "posint", vpp_degree = "posint", cp_degree = "posint",
  micro_batch_size = "posint", micro_batch_num = "nonnegint",
  zero_stage = "zero",
  reshard_after_forward = "bool", sequence_parallel = "bool",
  allow_idle_devices = "bool", balance_stages = "bool", auto_recompute = "bool",
  layer_recompute = enum("none", "selective", "full"),
  -- a2a+p2p (hierarchical: a2a inside, ring across) needs Megatron's
  -- --hierarchical-context-parallel-sizes (megatron/training/arguments.py:
  -- 583-585 @ d98e8a64), a second CP degree apsearch does not search
  cp_comm_type = { enum = { "p2p", "all_gather", "a2a" }, refused = {
    ["a2a+p2p"] = "a2a+p2p (hierarchical context parallelism) is not modelled: it needs " ..
      "Megatron's --hierarchical-context-parallel-sizes, an inner all-to-all degree apsearch " ..
      "does not search; use a2a or p2p" } },
  recompute_method = enum("block", "uniform"),
  pipeline_split = enum("even", "embedding_loss", "deepspeed_type", "fill_last", "fill_first"),
  pp_schedule = enum("1f1b", "interleaved_zero_bubble", "zbv_zero_bubble", "dualpipev"),
  -- Megatron --microbatch-group-size-per-virtual-pipeline-stage; 0 = pp_degree
  microbatch_group_size = "nonnegint",
  recompute_num_layers = "recompute_layers",
  stage_partition = "partition", layer_offset = "offsets",
  -- mixture of experts (issue 13): ignored for dense models
  ep_degree = "posint", etp_degree = "posint",
  moe_token_dispatcher = enum("alltoall", "allgather", "flex"),
  moe_capacity_factor = "nonneg", moe_grouped_gemm = "bool",
  -- Megatron --recompute-modules, "mla_up_proj/mlp/moe" (the core checks
  -- the names)
  recompute_modules = "string",
}

--- Aliases of strategy fields (HSDP spelling).
M.strategy_aliases = {
  hsdp_shard_degree = "fsdp_degree",
  hsdp_replicate_degree = "dp_degree",
}

--- The strategy fields that say how layers go to pipeline stages, one
-- way each: one given on the command line (`estimate --strategy`, `run
-- --fix`) replaces the policy's others (docs/policy.md "estimate").
M.split_fields = { "pipeline_split", "stage_partition", "layer_offset" }

--- The short names the run's strategy lines print (search.describe_strategy:
-- `dp=4 tp=8 sp=on mbs=1 recompute=none`), with the strategy field each
-- stands for: `estimate --strategy` and `run --fix` take them, so a line the
-- run printed pastes back as it is; `sp` and the other on-off fields as
-- on / off.
M.strategy_short = {
  dp = "dp_degree", fsdp = "fsdp_degree", tp = "tp_degree", sp = "sequence_parallel", pp = "pp_degree",
  vpp = "vpp_degree", schedule = "pp_schedule", mbgroup = "microbatch_group_size", cp = "cp_degree",
  cp_comm = "cp_comm_type", zero = "zero_stage", ep = "ep_degree", etp = "etp_degree",
  reshard = "reshard_after_forward", mbs = "micro_batch_size", mbn = "micro_batch_num",
  recompute = "layer_recompute", dispatcher = "moe_token_dispatcher", capacity = "moe_capacity_factor",
  -- the tables' "layers" column (format.table.split_text, read back by
  -- M.layers_cell)
  layers = "stage_partition",
}

--- The layers per pipeline rank as the tables' `layers` column writes
-- them (apsearch.format.table.split_text: "7+14x8+7" is 7, then 14 ranks
-- of 8, then 7), read back as a stage_partition array, so a `layers=`
-- cell pastes into `--strategy` and `--fix`.
-- @param v a value as given (any type)
-- @treturn table|nil the layer counts per rank, or nil when v is not a
--   string of that form with at least one `+` or `x` (then v is read as
--   any stage_partition value is)
function M.layers_cell(v)
  if type(v) ~= "string" or not v:find("[+x]") or not v:match("^[%dx+]+$") then return nil end
  local out = {}
  for term in (v .. "+"):gmatch("([^+]*)%+") do
    local n, layers = term:match("^(%d+)x(%d+)$")
    n, layers = math.tointeger(tonumber(n or "1")), math.tointeger(tonumber(layers or term))
    -- counts past an integer, and more ranks than the pipeline's model
    -- chunks can be, are not a cell the table wrote
    if not (n and layers and term:match("^[%dx]+$")) or n < 1
        or #out + n > require("apsearch.core").MAX_STAGES then
      return nil
    end
    for _ = 1, n do out[#out + 1] = layers end
  end
  return out
end

--- Search dimensions, in enumeration order (outermost first).
M.dimensions = {
  "tp_degree", "sequence_parallel", "cp_degree", "cp_comm_type",
  "pp_degree", "vpp_degree", "pipeline_split", "pp_schedule", "microbatch_group_size",
  "stage_partition", "layer_offset",
  "dp_degree", "fsdp_degree", "zero_stage", "reshard_after_forward",
  "layer_recompute", "recompute_method", "recompute_num_layers", "micro_batch_size",
  "micro_batch_num", "ep_degree", "etp_degree", "moe_token_dispatcher", "moe_capacity_factor",
  "recompute_modules",
}

--- Where fields given in another section really go.
M.routes = {
  cluster = { memory_limit_bytes = "training", memory_margin_bytes = "training",
    memory_limit_kind = "training" },
  constraints = { memory_limit_bytes = "training", memory_margin_bytes = "training",
    memory_limit_kind = "training" },
}

-- suffix, factor, spellings tried after the base, pattern the field must match
local SUFFIXES = {
  { "_gib", 2 ^ 30, { "_bytes", "" }, "_bytes$" },
  { "_mib", 2 ^ 20, { "_bytes", "" }, "_bytes$" },
  { "_gbps", 1e9, { "", "_bandwidth" }, "bandwidth$" },
  { "_tflops", 1e12, { "" }, "^peak_flops_" },
  { "_us", 1e-6, { "", "_latency" }, "latency$" },
  { "_ms", 1e-3, { "", "_latency" }, "latency$" },
}

--- Integer fields stay below 2^31 (the core's limit, so products of
-- degrees cannot overflow).
M.INT_LIMIT = 2 ^ 31

local NUMERIC = { pos = true, nonneg = true, fraction = true, probability = true, posint = true,
                  nonnegint = true }

--- Resolves a key of a field table, accepting the unit suffixes.
-- @tparam table fields one of the field tables of this module
-- @tparam string key the key as written
-- @treturn string|nil the field name (nil if unknown)
-- @treturn number|nil the factor to multiply the value by (nil: none)
function M.resolve(fields, key)
  if type(key) ~= "string" then return nil end
  if fields[key] then return key, nil end
  for _, s in ipairs(SUFFIXES) do
    local suf, factor, appends, unit = s[1], s[2], s[3], s[4]
    if #key > #suf and key:sub(-#suf) == suf then
      local base = key:sub(1, -#suf - 1)
      local bases = { base }
      if suf == "_tflops" then bases[2] = base:gsub("^peak_", "peak_flops_") end
      for _, b in ipairs(bases) do
        for _, a in ipairs(appends) do
          local cand = b .. a
          if NUMERIC[fields[cand]] and cand:find(unit) then return cand, factor end
        end
      end
    end
  end
  return nil
end

--- The names a field table accepts as written in policies and `--set`:
-- its fields, and the unit spellings the docs use (M.resolve reads them):
-- a byte field's `_gib` (`memory_limit_bytes` -> `memory_limit_gib`), a
-- peak's `peak_<p>_tflops` (`peak_flops_bf16` -> `peak_bf16_tflops`), a
-- bandwidth's `_gbps` -- the candidates of an unknown field's "did you
-- mean" and list (`bf16_tflops` was offered gemm_tile_m: a new user's).
-- @tparam table fields one of the field tables of this module
-- @treturn table sorted names
function M.spellings(fields)
  local out = {}
  for k, kind in pairs(fields) do
    out[#out + 1] = k
    if NUMERIC[kind] then
      local unit = k:find("_bytes$") and (k:gsub("_bytes$", "_gib"))
        or k:find("^peak_flops_") and (k:gsub("^peak_flops_(.*)$", "peak_%1_tflops"))
        or k:find("bandwidth$") and (k .. "_gbps")
      if unit and M.resolve(fields, unit) == k then out[#out + 1] = unit end
    end
  end
  table.sort(out)
  return out
end

--- The per-layer modules a CUDA graph scope may join with "+", in the
-- order a scope is spelt back (Megatron-Core's --cuda-graph-modules names,
-- transformer_config.py @ d98e8a64 CudaGraphModule; moe_router takes the
-- dispatcher's preprocess with it), and the scopes that stand alone.
M.GRAPH_MODULES = { "attn", "mlp", "mamba", "moe_router" }
M.GRAPH_SCOPES = { "layer", "full_iteration", "none" }

--- A training.cuda_graph_scope in its canonical spelling: a standalone
-- scope, or modules joined by "+" (any order in, each once) spelt in
-- M.GRAPH_MODULES' order ("mamba+attn" -> "attn+mamba"); an array of
-- module names (Megatron-Bridge's cuda_graph_scope list) is read the same.
-- @param v a string or an array of module names
-- @treturn string|nil nil when v is not a scope
function M.graph_scope(v)
  if type(v) == "string" then
    for _, s in ipairs(M.GRAPH_SCOPES) do if v == s then return v end end
    local parts = {}
    for part in (v .. "+"):gmatch("([^+]*)%+") do parts[#parts + 1] = part end
    v = parts
  end
  return (M.module_set(v, M.GRAPH_MODULES, "+"))
end

--- A set of module names in its canonical spelling: array v, each name
-- once and one of `order`, joined by `sep` in `order`'s order.
-- @tparam table v the names (an array only: a hole or a key beside would
--   lose a module)
-- @tparam table order the known names, in the order they are spelt back
-- @tparam string sep the separator
-- @tparam[opt] table refused names known but refused (name -> true)
-- @treturn string|nil nil when v is not such a set
-- @treturn string|nil the first name of `refused` v has, if any
function M.module_set(v, order, sep, refused)
  if type(v) ~= "table" or #v == 0 then return nil end
  local count = 0
  for _ in pairs(v) do count = count + 1 end
  if count ~= #v then return nil end
  local has = {}
  for _, part in ipairs(v) do
    if type(part) ~= "string" or has[part] then return nil end
    if refused and refused[part] then return nil, part end
    has[part] = true
  end
  local out = {}
  for _, m in ipairs(order) do if has[m] then out[#out + 1] = m end end
  if #out ~= count then return nil end
  return table.concat(out, sep)
end

--- The modules training.offload_modules takes (Megatron-Core
-- --offload-modules, transformer_config.py @ d98e8a64 l.1328-1342), in the
-- order they are spelt back, and those Megatron offers that apsearch does
-- not model (refused naming them).
M.OFFLOAD_MODULES = { "expert_fc1", "moe_act", "fused_group_mlp", "core_attn", "attn_proj" }
M.OFFLOAD_UNMODELLED = { attn_norm = true, qkv_linear = true, mlp_norm = true, gdp_qkv = true }

--- A training.offload_modules in its canonical spelling: module names
-- joined by "/" (or ",", or an array, Megatron-Bridge's list), each once,
-- spelt back in M.OFFLOAD_MODULES' order.
-- @param v a string or an array of module names
-- @treturn string|nil nil when v is not a set of known modules
-- @treturn string|nil the first module apsearch does not model, if any
function M.offload_modules(v)
  if type(v) == "string" then
    local parts = {}
    for part in v:gmatch("[^/,]+") do parts[#parts + 1] = part end
    v = parts
  end
  return M.module_set(v, M.OFFLOAD_MODULES, "/", M.OFFLOAD_UNMODELLED)
end

--- Checks one value against a field kind, raising a one-line error.
-- @tparam string kind field kind (e.g. "posint", "bool", or `{enum=...}`, whose optional
-- `refused` maps a value the frameworks know but apsearch does not model to the reason,
-- and `aliases` another tool's name of a value to the value (suggested, not taken))
-- @param v the value
-- @tparam function fail `fail(problem, got)` raising the error for this field
-- @return the value, integers normalized to Lua integers
function M.check_value(kind, v, fail)
  if type(kind) == "table" then
    for _, e in ipairs(kind.enum) do if v == e then return v end end
    if kind.refused and kind.refused[v] then fail(kind.refused[v], v) end
    local problem = "expected one of " .. util.join(kind.enum)
    local alias = type(v) == "string" and kind.aliases and kind.aliases[v:lower()]
    if alias then
      problem = problem .. ('; did you mean "%s"?'):format(alias)
    elseif type(v) == "string" then
      problem = require("apsearch.suggest").problem(problem, v, kind.enum)
    end
    fail(problem, v)
  elseif kind == "string" then
    if type(v) ~= "string" then fail("expected a string", v) end
    -- names reach JSON, HTML, CSV and terminals: printable UTF-8 only
    if not utf8.len(v) or v:find("[%c\127]") then
      fail("expected printable UTF-8 text (no control characters)", v)
    end
  elseif kind == "stack" then
    local stacks = require "apsearch.stacks"
    if type(v) ~= "string" or not stacks.stack(v) then
      -- a release name ("Megatron-Bridge 25.09") given as the stack's id
      local release = type(v) == "string" and (v:find("%s") or stacks.software_month(v))
      fail((type(v) == "string" and require("apsearch.suggest").problem("unknown stack", v, stacks.ids())
        or "unknown stack") .. "; known stacks: " .. util.join(stacks.ids()) ..
        (release and "; a release name goes in training.software" or ""), v)
    end
  elseif kind == "bool" then
    if type(v) ~= "boolean" then fail("expected true or false", v) end
  elseif kind == "graph_scope" then
    local s = M.graph_scope(v)
    if not s then
      fail("expected " .. util.join(M.GRAPH_SCOPES) .. ", or modules joined by + (each once): "
        .. util.join(M.GRAPH_MODULES) .. ", e.g. attn+moe_router", v)
    end
    return s
  elseif kind == "offload_modules" then
    local mods, unmodelled = M.offload_modules(v)
    if unmodelled then
      fail(("Megatron's offload module %s is not modelled (apsearch prices %s)"):format(unmodelled,
        util.join(M.OFFLOAD_MODULES)), v)
    elseif not mods then
      fail("expected module names joined by / (each once): " .. util.join(M.OFFLOAD_MODULES) ..
        ", e.g. expert_fc1 or core_attn/attn_proj", v)
    end
    return mods
  elseif kind == "posint" then
    -- a number past the bound (10^100000 reads as inf) says the bound
    if type(v) == "number" and v >= M.INT_LIMIT then fail("must be below 2^31", v) end
    if not util.is_integer(v) or v < 1 then fail("must be a positive integer", v) end
    if v >= M.INT_LIMIT then fail("must be below 2^31", v) end
    return util.int(v)
  elseif kind == "nonnegint" then
    if type(v) == "number" and v >= M.INT_LIMIT then fail("must be below 2^31", v) end
    if not util.is_integer(v) or v < 0 then fail("must be an integer >= 0", v) end
    if v >= M.INT_LIMIT then fail("must be below 2^31", v) end
    return util.int(v)
  elseif kind == "zero" then
    if not util.is_integer(v) or v < 0 or v > 3 then fail("must be 0, 1, 2 or 3", v) end
    return util.int(v)
  elseif kind == "pos" then
    if not util.is_finite(v) or not (v > 0) then fail("must be a finite number > 0", v) end
  elseif kind == "nonneg" then
    if not util.is_finite(v) or v < 0 then fail("must be a finite number >= 0", v) end
  elseif kind == "fraction" then
    if not util.is_finite(v) or v < 0 or v > 1 then fail("must be a number in [0, 1]", v) end
  elseif kind == "probability" then
    if not util.is_finite(v) or v < 0 or v >= 1 then fail("must be a probability in [0, 1)", v) end
  elseif kind == "layerlist" then
    -- 0-based layer indices (model.moe_dense_layers); the core bounds them
    -- by num_layers and the list's capacity
    local n = 0
    if type(v) == "table" then for _ in pairs(v) do n = n + 1 end end
    if util.is_integer(v) and v >= 0 and v < M.INT_LIMIT then
      -- one number is ambiguous: layer v alone, or the first v layers
      local i = util.int(v)
      fail(("expected a non-empty array of layer indices: {%d} (--set: %d,) for layer %d alone, " ..
        "moe_first_dense_layers = %d for the first %d"):format(i, i, i, i, i), v)
    end
    if type(v) ~= "table" or n == 0 or n ~= #v then fail("expected a non-empty array of layer indices", v) end
    local r = util.array()
    for i, x in ipairs(v) do
      if not util.is_integer(x) or x < 0 then fail("element " .. i .. " must be a layer index >= 0", x) end
      r[i] = util.int(x)
    end
    return r
  elseif kind == "recompute_layers" then
    if v == "auto" then return v end -- fewest per stage that fit (auto_recompute)
    if type(v) == "table" then
      if #v == 0 then fail("expected an integer >= -1 or a non-empty array of them", v) end
      local r = util.array()
      for i, x in ipairs(v) do
        if not util.is_integer(x) or x < -1 then fail("element " .. i .. " must be an integer >= -1", x) end
        r[i] = util.int(x)
      end
      return r
    end
    if not util.is_integer(v) or v < -1 then fail("must be an integer >= -1 (-1: all layers), an array, or \"auto\"", v) end
    return util.int(v)
  elseif kind == "partition" or kind == "offsets" then
    if v == "even" or (v == "balanced" and kind == "offsets") then return v end
    if type(v) ~= "table" or #v == 0 then
      fail("expected a non-empty array of integers (one per pipeline stage; " ..
        "--strategy writes one with colons, 7:8:8:9) or \"even\"" ..
        (kind == "offsets" and " or \"balanced\"" or ""), v)
    end
    local r = util.array()
    local layers = 0
    for i, x in ipairs(v) do
      -- a partition entry may be 0: given per model chunk (pp x vpp
      -- entries), a chunk may hold only the embedding or the loss, as the
      -- embedding_loss split of the outputs writes it (405 B, pp 16 x vpp
      -- 8: 0, 1, ..., 1, 0); a pipeline rank with no layer at all is the
      -- core's PP_PARTITION
      local okx = util.is_integer(x) and (kind == "offsets" or x >= 0)
      if not okx then
        fail("element " .. i .. (kind == "offsets" and " must be an integer" or " must be an integer >= 0"), x)
      end
      r[i] = util.int(x)
      layers = layers + (kind == "partition" and r[i] or 0)
    end
    if kind == "partition" and layers == 0 then
      fail("expected at least one layer (give \"even\" for the even split)", v)
    end
    for k in pairs(v) do
      if not util.is_integer(k) or k < 1 or k > #v then fail("expected an array", v) end
    end
    return r
  else
    error("schema: unknown kind " .. tostring(kind))
  end
  return v
end

-- The section (training, model, cluster) that has a field named key,
-- other than `except`, or nil.
local function section_of(key, except)
  for _, part in ipairs({ "training", "model", "cluster" }) do
    if part ~= except and M[part][key] ~= nil then return part end
  end
  return nil
end

--- Parallel degrees as the frameworks name them, and the strategy
-- dimension each is: TorchTitan's `parallelism` section (torchtitan/
-- config/configs.py @ b5bcd76c), Megatron-LM's arguments
-- (--tensor-model-parallel-size ...), NeMo AutoModel's `distributed`
-- section (tp_size, pp_size, cp_size, ep_size: components/distributed/
-- config.py @ 36044ad3).
M.FRAMEWORK_DIMENSIONS = {
  tensor_parallel_degree = "tp_degree", pipeline_parallel_degree = "pp_degree",
  context_parallel_degree = "cp_degree", expert_parallel_degree = "ep_degree",
  data_parallel_shard_degree = "fsdp_degree",
  data_parallel_replicate_degree = "dp_degree",
  tensor_model_parallel_size = "tp_degree", pipeline_model_parallel_size = "pp_degree",
  context_parallel_size = "cp_degree", expert_model_parallel_size = "ep_degree",
  expert_tensor_parallel_size = "etp_degree",
  tp_size = "tp_degree", pp_size = "pp_degree", cp_size = "cp_degree", ep_size = "ep_degree",
}

--- Where an unknown field of a policy table (or a top-level key) belongs,
-- for the message that refuses it: a strategy dimension, under its own or
-- a framework's name (M.FRAMEWORK_DIMENSIONS), is searched or fixed, not
-- set; a field of another section is set there.
-- @tparam string key the name as given
-- @tparam[opt] string section the section it was given in ("training",
--   "model", "cluster"; nil at the top level)
-- @treturn string|nil e.g. `"pipeline_parallel_degree" is the strategy
--   dimension pp_degree: --fix pp_degree=VALUE (search_space.pp_degree in a
--   policy file)`; nil when it is none of these
function M.placement(key, section)
  if type(key) ~= "string" then return nil end
  local dim = M.strategy[key] ~= nil and key or M.FRAMEWORK_DIMENSIONS[key]
  if dim then
    local what = dim == key and "a strategy dimension" or ("the strategy dimension " .. dim)
    return ("%q is %s: --fix %s=VALUE (search_space.%s in a policy file)"):format(key, what, dim, dim)
  end
  local part = section_of(key, section)
  return part and ("%q is a %s field: --set %s.%s=VALUE"):format(key, part, part, key)
end

--- Where a name that is no strategy field belongs, for the message that
-- refuses it under --fix or --strategy: "the training field
-- training.precision: --set training.precision=VALUE" when a model,
-- cluster or training table has a field of that name, else nil.
-- @tparam string key the name as given
-- @treturn string|nil
function M.elsewhere(key)
  local part = section_of(key)
  return part and ("it is a %s field: --set %s.%s=VALUE"):format(part, part, key)
end

return M
