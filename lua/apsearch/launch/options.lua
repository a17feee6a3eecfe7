--- The option names each engine accepts, as far as apsearch emits them,
-- with the file (and commit) they were read from.  Every option a launch
-- config generator writes must be in these lists; tests/lua/launch_spec.lua
-- checks every emitted name against them.  When an engine renames an
-- option, update the list from the engine's source and the generator with
-- it -- never add a name that is not in the cited file.
-- @module apsearch.launch.options
local M = {}

local function set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

--- Megatron-LM command-line flags (argparse `add_argument` names).
M.megatron = {
  source = {
    repo = "NVIDIA/Megatron-LM", path = "megatron/training/arguments.py",
    commit = "d98e8a64ddf34856e74b24714e3bedb2f5a39553",
    note = "_add_distributed_args, _add_training_args, _add_network_size_args, " ..
      "_add_mixed_precision_args, _add_data_args, _add_transformer_engine_args; the " ..
      "TransformerConfig / ModelParallelConfig fields _add_network_size_args turns into " ..
      "flags (ArgumentGroupFactory, megatron/training/argument_utils.py; fields in " ..
      "megatron/core/transformer/transformer_config.py, megatron/core/model_parallel_config.py, " ..
      "same commit); every name checked with the commit's own parser (docs/launch.md)",
  },
  options = set({
    -- _add_distributed_args
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
    "--context-parallel-size", "--cp-comm-type", "--use-distributed-optimizer",
    "--overlap-grad-reduce", "--overlap-param-gather", "--use-torch-fsdp2",
    "--torch-fsdp2-no-reshard-after-forward", "--no-overlap-p2p-communication",
    "--use-megatron-fsdp", "--data-parallel-sharding-strategy",
    "--suggested-communication-unit-size", "--fsdp-double-buffer",
    "--num-distributed-optimizer-instances",
    -- _add_training_args (--no-gradient-accumulation-fusion), TrainingConfig
    -- ckpt_format (megatron/training/config/training_config.py); _add_network_size_args
    "--no-gradient-accumulation-fusion", "--ckpt-format", "--window-size",
    -- _add_training_args
    "--micro-batch-size", "--global-batch-size", "--recompute-granularity",
    "--recompute-method", "--recompute-num-layers", "--sequence-parallel",
    "--optimizer", "--disable-bias-linear", "--add-qkv-bias", "--no-bias-gelu-fusion",
    "--no-bias-dropout-fusion",
    -- _add_network_size_args
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--group-query-attention", "--num-query-groups", "--kv-channels",
    "--max-position-embeddings", "--position-embedding-type",
    "--make-vocab-size-divisible-by", "--normalization", "--swiglu", "--qk-layernorm",
    "--untie-embeddings-and-output-weights",
    "--rotary-base", "--use-rope-scaling", "--rope-scaling-factor", "--rotary-percent",
    "--no-rope-freq", "--qk-l2-norm", "--moe-apply-probs-on-input", "--rotary-interleaved",
    -- TransformerConfig.layernorm_epsilon (arg_names --norm-epsilon)
    "--norm-epsilon",
    -- _add_data_args
    "--seq-length",
    -- _add_mixed_precision_args
    "--bf16", "--fp16",
    "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32",
    -- _add_distributed_args
    "--pipeline-model-parallel-layout",
    -- _add_training_args
    "--no-check-for-nan-in-loss-and-grad",
    -- _add_experimental_args (Megatron-FSDP)
    "--megatron-fsdp-main-grads-dtype",
    -- _add_moe_args and the TransformerConfig MoE / MLA fields
    -- (transformer_config.py, MLATransformerConfig)
    "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size", "--moe-shared-expert-gate", "--moe-layer-freq",
    "--expert-model-parallel-size", "--expert-tensor-parallel-size",
    "--moe-token-dispatcher-type", "--moe-flex-dispatcher-backend", "--moe-grouped-gemm",
    "--moe-expert-capacity-factor", "--moe-router-score-function", "--moe-router-dtype",
    "--moe-router-enable-expert-bias", "--moe-router-force-load-balancing",
    "--moe-shared-expert-overlap", "--mtp-num-layers",
    -- TransformerConfig.moe_latent_size (l.952; not in _add_network_size_args'
    -- exclude list, l.2290-2372)
    "--moe-latent-size",
    -- TransformerConfig.mtp_use_repeated_layer (l.82)
    "--mtp-use-repeated-layer",
    -- TransformerConfig.moe_permute_fusion, moe_router_fusion (l.941-947)
    "--moe-permute-fusion", "--moe-router-fusion",
    -- TransformerConfig.use_transformer_engine_op_fuser (l.525) and
    -- moe_mlp_glu_interleave_size (l.1011): TE's fused grouped MLP
    "--use-transformer-engine-op-fuser", "--moe-mlp-glu-interleave-size",
    -- TransformerConfig.moe_pad_expert_input_to_capacity (l.921)
    "--moe-pad-expert-input-to-capacity",
    -- _add_moe_args (load balancing) and TransformerConfig router fields
    "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-router-pre-softmax",
    "--moe-router-num-groups", "--moe-router-group-topk", "--moe-router-topk-scaling-factor",
    -- ModelParallelConfig.overlap_moe_expert_parallel_comm (ArgumentGroupFactory)
    "--overlap-moe-expert-parallel-comm",
    -- TransformerConfig moe_expert_rank_capacity_factor, moe_paged_stash,
    -- moe_paged_stash_page_size, moe_paged_stash_buffer_size_factor_cuda,
    -- use_transformer_engine_op_fuser (transformer_config.py l.1019, 1364-1370,
    -- 525; ArgumentGroupFactory)
    "--moe-expert-rank-capacity-factor", "--moe-paged-stash", "--moe-paged-stash-page-size",
    "--moe-paged-stash-buffer-size-factor-cuda", "--use-transformer-engine-op-fuser",
    -- TransformerConfig first_last_layers_bf16, num_layers_at_start_in_bf16,
    -- num_layers_at_end_in_bf16 (transformer_config.py:649-658, ArgumentGroupFactory)
    "--first-last-layers-bf16", "--num-layers-at-start-in-bf16", "--num-layers-at-end-in-bf16",
    -- ModelParallelConfig.microbatch_group_size_per_vp_stage, arg_names
    -- (model_parallel_config.py:431-436)
    "--microbatch-group-size-per-virtual-pipeline-stage",
    -- _add_training_args / OptimizerConfig (precision-aware optimizer)
    "--use-precision-aware-optimizer", "--exp-avg-dtype", "--exp-avg-sq-dtype",
    "--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
    "--rotary-scaling-factor", "--mscale", "--mscale-all-dim",
    -- _add_network_size_args: GPTModel's yarn positions (non-MLA)
    "--yarn-original-max-position-embeddings", "--yarn-beta-fast", "--yarn-beta-slow",
    "--no-yarn-correction-range-round-to-int",
    "--qk-pos-emb-head-dim", "--v-head-dim", "--recompute-modules",
    -- _add_transformer_engine_args
    "--fp8-param-gather", "--fp4-param-gather",
    -- TransformerConfig fields (_add_network_size_args, ArgumentGroupFactory):
    -- fp8 (arg_names --fp8-format), fp8_recipe, fp4 (--fp4-format), fp4_recipe,
    -- account_for_*_in_pipeline_split, cuda_graph_impl; ModelParallelConfig:
    -- tp_comm_overlap, cpu_offloading_num_layers
    "--fp8-format", "--fp8-recipe", "--fp4-format", "--fp4-recipe",
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--cuda-graph-impl", "--cuda-graph-modules", "--tp-comm-overlap", "--cpu-offloading-num-layers",
    "--attention-dropout", "--hidden-dropout",
    -- TransformerConfig fine_grained_activation_offloading, offload_modules,
    -- activation_offload_fraction (transformer_config.py:1323-1361,
    -- ArgumentGroupFactory)
    "--fine-grained-activation-offloading", "--offload-modules", "--activation-offload-fraction",
    "--fine-grained-offloading-max-inflight-offloads",
    -- model architecture (issue 25): _add_network_size_args --quick-geglu
    -- (arguments.py:2452), --window-attn-skip-freq (arguments.py:2387);
    -- TransformerConfig softmax_type, glu_linear_offset,
    -- activation_func_clamp_value (transformer_config.py:170, 231, 235)
    "--quick-geglu", "--window-attn-skip-freq", "--softmax-type", "--glu-linear-offset",
    "--activation-func-clamp-value",
    -- hybrid Mamba-2 models: _add_experimental_args --spec and
    -- --hybrid-layer-pattern (arguments.py:3645, 3652); _add_network_size_args
    -- --squared-relu (arguments.py:2448); TransformerConfig mamba_head_dim,
    -- mamba_num_groups, mamba_num_heads, mamba_state_dim
    -- (transformer_config.py:1259-1268, ArgumentGroupFactory)
    "--spec", "--hybrid-layer-pattern", "--squared-relu", "--mamba-num-heads", "--mamba-head-dim",
    "--mamba-state-dim", "--mamba-num-groups",
    -- Gated DeltaNet models (Qwen3-Next): TransformerConfig
    -- experimental_attention_variant, linear_attention_freq (its flag from
    -- _add_experimental_attention_variant_args, arguments.py:3579), the
    -- linear_* widths, attention_output_gate, layernorm_zero_centered_gamma
    -- (transformer_config.py:206, 278, 301, 363-382)
    "--experimental-attention-variant", "--linear-attention-freq", "--linear-conv-kernel-dim",
    "--linear-key-head-dim", "--linear-value-head-dim", "--linear-num-key-heads",
    "--linear-num-value-heads", "--attention-output-gate", "--apply-layernorm-1p",
    -- heterogeneous layers (Llama-Nemotron NAS): _add_heterogeneous_args
    -- (arguments.py:3629 @ d98e8a64)
    "--heterogeneous-layers-config-path", "--use-rotary-position-embeddings",
    -- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): TransformerConfig
    -- dsa_indexer_n_heads, dsa_indexer_head_dim, dsa_indexer_topk,
    -- dsa_kernel_backend, dsa_indexer_rope_interleaved, dsa_indexer_loss_coeff,
    -- dsa_indexer_use_sparse_loss (transformer_config.py:317-345);
    -- apply_rope_fusion
    -- through _add_training_args --no-rope-fusion (arguments.py:2902)
    "--dsa-indexer-n-heads", "--dsa-indexer-head-dim", "--dsa-indexer-topk", "--dsa-kernel-backend",
    "--dsa-indexer-rope-interleaved", "--dsa-indexer-loss-coeff", "--dsa-indexer-use-sparse-loss",
    -- dsa_indexer_topk_freq, dsa_indexer_skip_topk_offset
    -- (transformer_config.py:326-331)
    "--dsa-indexer-topk-freq", "--dsa-indexer-skip-topk-offset",
    "--no-rope-fusion",
  }),
}

--- Facts about the Megatron-LM flags apsearch writes with a value, read
-- from the same commit as M.megatron.source: `type` ("int", "int_pair"
-- for tuple_type "a,b", "string"), `values` (argparse choices or the
-- TransformerConfig Literal), `min`, `constraint` (what validate_args /
-- TransformerConfig.__post_init__ asserts).  tests/lua/launch_spec.lua
-- checks every written value against them (no Megatron code needed).
M.megatron.commit = M.megatron.source.commit
M.megatron.facts = {
  ["--tensor-model-parallel-size"] = { type = "int", min = 1 },
  ["--pipeline-model-parallel-size"] = { type = "int", min = 1,
    constraint = "--use-torch-fsdp2 needs 1 (validate_args)" },
  ["--context-parallel-size"] = { type = "int", min = 1 },
  ["--decoder-first-pipeline-num-layers"] = { type = "int", min = 1 },
  ["--decoder-last-pipeline-num-layers"] = { type = "int", min = 1 },
  ["--num-layers-per-virtual-pipeline-stage"] = { type = "int", min = 1 },
  ["--num-virtual-stages-per-pipeline-rank"] = { type = "int", min = 2 },
  -- forward_backward_pipelining_with_interleaving raises unless in [pp,
  -- micro-batches] with the remainder 0 or >= pp (schedules.py:1160-1180)
  ["--microbatch-group-size-per-virtual-pipeline-stage"] = { type = "int", min = 1,
    constraint = "in [--pipeline-model-parallel-size, micro-batches]; micro-batches mod it 0 or >= pp" },
  -- argparse takes any string (nargs '+'); TE's attention
  -- (transformer_engine.py:2153 TEDotProductAttention) passes it unchanged
  -- to TransformerEngine, whose attn_forward_func_with_cp knows "p2p",
  -- "a2a+p2p", "all_gather" and "a2a" and raises on anything else
  -- (context_parallel.py:5096-5139 @ d0067d0d): the help's "allgather"
  -- would raise there
  ["--cp-comm-type"] = { type = "string", values = set({ "p2p", "a2a", "all_gather", "a2a+p2p" }) },
  ["--recompute-granularity"] = { type = "string", values = set({ "full", "selective" }) },
  ["--recompute-method"] = { type = "string", values = set({ "uniform", "block" }),
    constraint = "with --recompute-granularity full; --recompute-num-layers per model chunk" },
  ["--recompute-num-layers"] = { type = "int", min = 1 },
  ["--micro-batch-size"] = { type = "int", min = 1 },
  ["--global-batch-size"] = { type = "int", min = 1,
    constraint = "divisible by micro-batch-size x data-parallel size (validate_args)" },
  ["--seq-length"] = { type = "int", min = 1 },
  ["--max-position-embeddings"] = { type = "int", min = 1, constraint = ">= seq-length with rope" },
  ["--num-layers"] = { type = "int", min = 1 },
  ["--hybrid-layer-pattern"] = { type = "string",
    constraint = "M, G, *, D, -, E; | pipeline segments, / MTP (arguments.py:3652); sets --num-layers" },
  ["--spec"] = { type = "string", constraint = "module and function of the layer spec (nargs='*'); " ..
    "hybrid_builders.py raises without it" },
  ["--mamba-num-heads"] = { type = "int", min = 1, constraint = "divisible by tp and mamba-num-groups" },
  ["--mamba-head-dim"] = { type = "int", min = 1 },
  ["--mamba-state-dim"] = { type = "int", min = 1 },
  ["--mamba-num-groups"] = { type = "int", min = 1, constraint = "divisible by tp (MambaMixer)" },
  -- TransformerConfig experimental_attention_variant Literal['gdn', 'gdn2', 'dsa',
  -- 'gated_delta_net'] and the linear_* asserts (transformer_config.py:301,
  -- 1470-1509 @ d98e8a64)
  ["--experimental-attention-variant"] = { type = "string",
    values = { gdn = true, gdn2 = true, dsa = true, gated_delta_net = true } },
  ["--linear-attention-freq"] = { type = "int", min = 1, constraint = "la_freq_type: N or a list" },
  ["--heterogeneous-layers-config-path"] = { type = "string" },
  -- TransformerConfig dsa_* (transformer_config.py:317-340, 1510-1525 @ d98e8a64)
  ["--dsa-indexer-n-heads"] = { type = "int", min = 1 },
  ["--dsa-indexer-head-dim"] = { type = "int", min = 1, constraint = ">= qk-pos-emb-head-dim (the rotated part)" },
  ["--dsa-indexer-topk"] = { type = "int", min = 1 },
  ["--dsa-indexer-loss-coeff"] = { type = "number", min = 0, constraint = "0 or unset: the indexer is not trained" },
  ["--dsa-kernel-backend"] = { type = "string", values = { none = true, tilelang = true, cudnn = true } },
  ["--linear-conv-kernel-dim"] = { type = "int", min = 1 },
  ["--linear-key-head-dim"] = { type = "int", min = 1 },
  ["--linear-value-head-dim"] = { type = "int", min = 1 },
  ["--linear-num-key-heads"] = { type = "int", min = 1, constraint = "divisible by tp x cp" },
  ["--linear-num-value-heads"] = { type = "int", min = 1,
    constraint = "a multiple of linear-num-key-heads, divisible by tp x cp" },
  ["--hidden-size"] = { type = "int", min = 1 },
  ["--ffn-hidden-size"] = { type = "int", min = 1 },
  ["--num-attention-heads"] = { type = "int", min = 1 },
  ["--num-query-groups"] = { type = "int", min = 1 },
  ["--kv-channels"] = { type = "int", min = 1 },
  ["--make-vocab-size-divisible-by"] = { type = "int", min = 1 },
  ["--normalization"] = { type = "string", values = set({ "LayerNorm", "RMSNorm" }) },
  ["--position-embedding-type"] = { type = "string",
    values = set({ "learned_absolute", "rope", "yarn", "mrope", "relative", "none" }) },
  ["--rotary-base"] = { type = "int", min = 1, constraint = "default 10000" },
  ["--no-rope-freq"] = { type = "string", constraint = "no_rope_freq_type (arguments.py:304): an integer k " ..
    "(TransformerConfig asserts num_layers % k == 0; layer i, 1-based, without RoPE when i % k == 0) or a " ..
    "list expression of num_layers entries, 1 for a layer without RoPE" },
  ["--rotary-percent"] = { type = "number", constraint = "type=float, default 1.0; RotaryEmbedding " ..
    "rotates int(kv_channels * rotary_percent) dims (rotary_pos_embedding.py:73)" },
  ["--rope-scaling-factor"] = { type = "number",
    constraint = "with --use-rope-scaling (llama3); default 8.0; gpt_builders.py does not pass it " ..
      "to GPTModel, whose default 8.0 applies; low/high freq factors 1/4 and original context 8192 fixed " ..
      "(rotary_pos_embedding.py)" },
  ["--rotary-scaling-factor"] = { type = "number",
    constraint = "MLA's YaRN factor (MLATransformerConfig.rotary_scaling_factor); default 1.0" },
  ["--mscale"] = { type = "number", constraint = "MLA's YaRN cos/sin magnitude coefficient " ..
    "(MLATransformerConfig.mscale); default 1.0" },
  ["--mscale-all-dim"] = { type = "number", constraint = "MLA's YaRN softmax-scale coefficient " ..
    "(MLATransformerConfig.mscale_all_dim); default 0.0" },
  ["--yarn-original-max-position-embeddings"] = { type = "int", constraint = "GPTModel yarn positions' " ..
    "pre-scaling context (config.yarn_original_max_position_embeddings); default 4096" },
  ["--yarn-beta-fast"] = { type = "number", constraint = "GPTModel yarn ramp, default 32.0" },
  ["--yarn-beta-slow"] = { type = "number", constraint = "GPTModel yarn ramp, default 1.0" },
  ["--norm-epsilon"] = { type = "number", constraint = "TransformerConfig.layernorm_epsilon, default 1e-5" },
  ["--window-size"] = { type = "int_pair", constraint = "(left, right) tokens; -1 infinite" },
  ["--window-attn-skip-freq"] = { type = "int", min = 2, constraint = "moe_freq_type: k -> layer " ..
    "number n (1-based) windowed when n % k != 0 (transformer/utils.py:531-546); or a list expression" },
  ["--softmax-type"] = { type = "string", values = set({ "vanilla", "off-by-one", "learnable" }),
    constraint = "learnable: a trained sink logit per head (dot_product_attention.py:126); TE >= 2.8" },
  ["--glu-linear-offset"] = { type = "number", constraint = "activation(x[0]) * (x[1] + offset); " ..
    "non-zero with bias-activation fusion only for quick_gelu (transformer_config.py:2440)" },
  ["--activation-func-clamp-value"] = { type = "number", min = 0, constraint = "gate clamped to <= c, " ..
    "linear half to [-c, c] (moe/experts.py:1004-1008); SwiGLU: MoE only, offset 0 " ..
    "(transformer_config.py:2471-2495)" },
  ["--attention-dropout"] = { type = "number" }, ["--hidden-dropout"] = { type = "number" },
  ["--fp8-format"] = { type = "string", values = set({ "e4m3", "hybrid" }) },
  ["--fp8-recipe"] = { type = "string", values = set({ "tensorwise", "delayed", "mxfp8", "blockwise", "custom" }) },
  ["--fp4-format"] = { type = "string", values = set({ "e2m1" }) },
  ["--fp4-recipe"] = { type = "string", values = set({ "nvfp4", "custom" }) },
  -- TransformerConfig.__post_init__ under fp8: each in [0, num_layers //
  -- pipeline_model_parallel_size], refused with delayed scaling
  -- (transformer_config.py:1529-1560)
  ["--num-layers-at-start-in-bf16"] = { type = "int", min = 0,
    constraint = "<= num-layers // pipeline-model-parallel-size under fp8; not with --fp8-recipe delayed" },
  ["--num-layers-at-end-in-bf16"] = { type = "int", min = 0,
    constraint = "<= num-layers // pipeline-model-parallel-size under fp8; not with --fp8-recipe delayed" },
  ["--ckpt-format"] = { type = "string", values = set({ "torch", "torch_dist", "torch_dcp", "fsdp_dtensor" }),
    constraint = "--use-torch-fsdp2 needs torch_dist or torch_dcp; --use-megatron-fsdp needs fsdp_dtensor" },
  ["--data-parallel-sharding-strategy"] = { type = "string",
    values = set({ "no_shard", "optim", "optim_grads", "optim_grads_params" }) },
  ["--suggested-communication-unit-size"] = { type = "int", min = 1 },
  ["--num-distributed-optimizer-instances"] = { type = "int", min = 1,
    constraint = "divides data-parallel size x context-parallel size and the expert-data-parallel size" },
  ["--megatron-fsdp-main-grads-dtype"] = { type = "string", values = set({ "fp32", "bf16", "fp16", "auto" }) },
  ["--cuda-graph-impl"] = { type = "string", values = set({ "none", "local", "transformer_engine", "full_iteration" }) },
  -- nargs '+' of CudaGraphModule (arguments.py _add_training_args @ d98e8a64)
  ["--cuda-graph-modules"] = { type = "string", nargs = "+",
    values = set({ "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba" }),
    constraint = "moe_preprocess needs moe_router; none with --cuda-graph-impl full_iteration" },
  ["--cpu-offloading-num-layers"] = { type = "int", min = 0, constraint = "< num-layers" },
  -- list[str] field: nargs '+' (transformer_config.py:1328, its checks l.2127-2203)
  ["--offload-modules"] = { type = "string", nargs = "+",
    values = set({ "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act",
      "fused_group_mlp", "gdp_qkv" }),
    constraint = "with --fine-grained-activation-offloading, not with --cpu-offloading-num-layers; attn_proj " ..
      "needs core_attn; fused_group_mlp needs --use-transformer-engine-op-fuser and excludes expert_fc1, moe_act" },
  ["--activation-offload-fraction"] = { type = "number", constraint = "in [0, 1], default 1.0" },
  ["--fine-grained-offloading-max-inflight-offloads"] = { type = "int", min = 0,
    constraint = "required with fine-grained offload under --cuda-graph-impl full_iteration (transformer_config.py)" },
  ["--optimizer"] = { type = "string", values = set({ "adam", "sgd" }) },
  ["--pipeline-model-parallel-layout"] = { type = "string" },
  -- the router (transformer_config.py, _add_moe_args, moe_utils.py
  -- topk_routing_with_score_function)
  ["--moe-router-score-function"] = { type = "string", values = set({ "softmax", "sigmoid", "sqrtsoftplus" }),
    constraint = "default softmax; --moe-router-enable-expert-bias needs sigmoid or sqrtsoftplus " ..
      "(TransformerConfig)" },
  -- TransformerConfig.moe_router_dtype (l.811 @ d98e8a64): None, fp32 or fp64
  ["--moe-router-dtype"] = { type = "string", values = set({ "fp32", "fp64" }),
    constraint = "default none (the router in the activations' dtype)" },
  ["--moe-router-load-balancing-type"] = { type = "string",
    values = set({ "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none" }),
    constraint = "default aux_loss; with --moe-expert-capacity-factor only aux_loss, seq_aux_loss, " ..
      "global_aux_loss or none (TransformerConfig)" },
  ["--moe-aux-loss-coeff"] = { type = "number", min = 0,
    constraint = "default 0.0 (no auxiliary loss); nargs '+', one value per load-balancing type" },
  ["--moe-router-num-groups"] = { type = "int", min = 1,
    constraint = "default None; divides --num-experts (TransformerConfig)" },
  ["--moe-router-group-topk"] = { type = "int", min = 1,
    constraint = "default None; <= --moe-router-num-groups, which it needs (TransformerConfig); a group " ..
      "is scored by its best moe_router_topk // group_topk experts (group_limited_topk)" },
  ["--moe-router-topk-scaling-factor"] = { type = "number", min = 0,
    constraint = "default None: no scaling; multiplies the top-k weights" },
}

--- torchrun (torch.distributed.run) options used in the Megatron script.
M.torchrun = {
  source = {
    repo = "pytorch/pytorch", path = "torch/distributed/run.py",
    commit = "010929fd3f401c3868310396e6a91ed95aa0305b",
    note = "get_args_parser: --nnodes, --nproc-per-node, --node-rank, --master-addr, --master-port",
  },
  options = set({ "--nnodes", "--nproc-per-node", "--node-rank", "--master-addr", "--master-port" }),
}

--- TorchTitan config module fields (a Python function returning
-- `Trainer.Config`, selected with `--module` / `--config`): each
-- `config.<section>.<field>` the generator assigns, with its type and, for
-- a Literal or an enumerated string, the values the commit accepts; the
-- constructors it calls with their keyword fields; the names it imports.
-- TorchTitan builder facts the model families share (torchtitan
-- b5bcd76c: get_attention_config backends, make_token_dispatcher_config
-- comm backends, RoPE.Config fields, models/common/rope.py)
local TT_ATTN_BACKEND = { type = "str", values = set({ "flex", "flex_flash", "varlen" }) }
local TT_MOE_COMM = { type = "str", values = set({ "standard", "deepep", "hybridep" }) }
local TT_ROPE = { dim = { type = "int", min = 1 }, max_context_length = { type = "int", min = 1 },
  theta = { type = "float", min = 0 } }

--- `base` with `extra`'s keys added (the shared fact tables above with a
-- family's own).
local function with(base, extra)
  local out = require("apsearch.util").copy(base)
  for k, v in pairs(extra) do out[k] = v end
  return out
end
local TT_YARN_ROPE = with(TT_ROPE, { scaling = { type = "str", values = set({ "none", "yarn" }) },
  rope_factor = { type = "float", min = 0 }, beta_fast = { type = "float", min = 0 },
  beta_slow = { type = "float", min = 0 }, original_seq_len = { type = "int", min = 1 },
  truncate = { type = "bool" } })
-- the qwen3 builders' attention arguments (_build_qwen3_layers,
-- _build_qwen3_moe_layers) and their flavours' head (qwen3/__init__.py)
local TT_QWEN3_ARGS = { n_layers = { type = "int", min = 1 }, dim = { type = "int", min = 1 },
  n_heads = { type = "int", min = 1 }, n_kv_heads = { type = "int", min = 1 },
  head_dim = { type = "int", min = 1 }, fuse_qkv = { type = "bool" }, attn_backend = TT_ATTN_BACKEND,
  rope = { type = "CosSinRoPE.Config" } }
local TT_QWEN3_HEAD = { embedding_init = "_EMBEDDING_INIT", tied_embedding_init = "_EMBEDDING_SKIP_INIT",
  norm = "_qwen3_norm(%d)", lm_head_init = "_LINEAR_INIT", imports = { "_EMBEDDING_INIT", "_qwen3_norm", "_LINEAR_INIT" } }

M.torchtitan = {
  source = {
    repo = "pytorch/torchtitan", path = "torchtitan/config/configs.py",
    commit = "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a", date = "2026-08-21",
    note = "TrainingConfig, ParallelismConfig, CompileConfig; Trainer.Config (torchtitan/trainer.py); " ..
      "FullAC / SelectiveAC (torchtitan/distributed/activation_checkpoint.py); Float8LinearConverter, " ..
      "MXFP8LinearConverter, NVFP4LinearConverter (torchtitan/components/quantization/float8.py, mx.py, " ..
      "nvfp4.py); ChunkedLossWrapper, CrossEntropyLoss (torchtitan/components/loss.py); llama3_8b, " ..
      "llama3_70b, llama3_405b (torchtitan/models/llama3/config_registry.py); model_registry flavors " ..
      "(torchtitan/models/llama3/__init__.py); per-layer RoPE.Config (torchtitan/models/common/rope.py, " ..
      "copied per layer by make_gqa_config, models/common/config_utils.py) and RMSNorm.Config eps " ..
      "(models/common/nn_modules.py); Llama3Model.Config, _build_llama3_layers and the flavours' shapes " ..
      "and inits (torchtitan/models/llama3/__init__.py, model.py; models/common/decoder.py, " ..
      "families: qwen3 _build_qwen3_layers and _build_qwen3_moe_layers, deepseek_v3 _build_dsv3_layers / " ..
      "build_mla_moe_layers, gpt_oss _build_gptoss_layers, their flavours and config functions qwen3_32b, " ..
      "qwen3_30b_a3b, deepseek_v3_671b, gpt_oss_20b (torchtitan/models/qwen3, deepseek_v3, gpt_oss: " ..
      "__init__.py, config_registry.py; MoE.Config.load_balance_coeff, models/common/moe.py); " ..
      "feed_forward.py, linear.py); pipeline schedules (torch get_schedule_class names used " ..
      "by torchtitan/distributed/pipeline_parallel.py); run_train.sh (same commit). Each generated " ..
      "module loaded with TorchTitan's ConfigManager at that commit (docs/launch.md)",
  },
  -- config.<path> = value
  fields = {
    ["training.num_tokens_per_microbatch_per_dp_rank"] = { type = "int", min = 1 },
    ["training.num_tokens_per_train_step"] = { type = "int", min = 1 },
    ["training.max_context_length"] = { type = "int", min = 1 },
    ["training.mixed_precision_param"] = { type = "str", values = set({ "bfloat16", "float32" }) },
    ["training.disable_cuda_graphs"] = { type = "bool" },
    ["training.enable_cpu_offload"] = { type = "bool" },
    ["parallelism.data_parallel_replicate_degree"] = { type = "int", min = 1 },
    ["parallelism.data_parallel_shard_degree"] = { type = "int", min = 1 },
    ["parallelism.fsdp_reshard_after_forward"] = { type = "str", values = set({ "default", "always", "never" }) },
    ["parallelism.tensor_parallel_degree"] = { type = "int", min = 1 },
    -- ParallelismConfig.expert_parallel_degree (EP borrows ranks from
    -- dp_shard x cp x tp, torchtitan/distributed/parallel_dims.py)
    ["parallelism.expert_parallel_degree"] = { type = "int", min = 1 },
    ["parallelism.enable_sequence_parallel"] = { type = "bool" },
    ["parallelism.pipeline_parallel_degree"] = { type = "int", min = 1 },
    -- a name get_schedule_class maps (torch/distributed/pipelining/
    -- schedules.py, pytorch 1fd7abc2; DualPipeV from 00722e64)
    ["parallelism.pipeline_parallel_schedule"] = { type = "str",
      values = set({ "1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV" }) },
    ["parallelism.num_pp_microbatches"] = { type = "int", min = 1 },
    ["parallelism.pipeline_parallel_first_stage_less_layers"] = { type = "int", min = 0 },
    ["parallelism.pipeline_parallel_last_stage_less_layers"] = { type = "int", min = 0 },
    ["parallelism.pipeline_parallel_layers_per_stage"] = { type = "int", min = 1 },
    ["parallelism.module_fqns_per_model_part"] = { type = "list[list[str]]" },
    ["parallelism.context_parallel_degree"] = { type = "int", min = 1 },
    ["parallelism.context_parallel_load_balancer"] = { type = "str", values = set({ "headtail", "ptrr" }) },
    -- whole sections, assigned a constructor (below) or None
    ["compile"] = { type = "CompileConfig" },
    ["activation_checkpoint"] = { type = "FullAC.Config | SelectiveAC.Config | None" },
    ["model_spec"] = { type = "ModelSpec" },
    ["loss"] = { type = "BaseLoss.Config" },
    -- Decoder.Config.norm (torchtitan/models/common/decoder.py): the final
    -- RMSNorm, RMSNorm.Config eps default 1e-5 (models/common/nn_modules.py)
    ["model_spec.model.norm.eps"] = { type = "float", min = 0 },
    -- ModelSpec (torchtitan/protocols/model_spec.py) is a plain dataclass;
    -- flavor only names the model in the trainer's log (trainer.py)
    ["model_spec.flavor"] = { type = "str" },
  },
  -- the model config a module builds when the model is none of the
  -- flavours (torchtitan/models/llama3/__init__.py): Llama3Model.Config
  -- (model.py; Decoder.Config dim, vocab_size, enable_weight_tying,
  -- tok_embeddings, norm, lm_head, layers, models/common/decoder.py) with
  -- the flavours' own layer builder _build_llama3_layers (n_layers, dim,
  -- n_heads, n_kv_heads, hidden_dim: the final SwiGLU width, no rounding;
  -- head_dim = dim // n_heads, make_gqa_config) and the flavours' inits.
  -- TorchTitan pads no vocabulary.  RoPE.Config dim (the head dim) and
  -- max_context_length (the bound Decoder.Config.update_from_config checks
  -- training.max_context_length against, then resizes the cache to)
  model = {
    ["Llama3Model.Config"] = { dim = { type = "int", min = 1 }, vocab_size = { type = "int", min = 1 },
      enable_weight_tying = { type = "bool" }, tok_embeddings = { type = "Embedding.Config" },
      norm = { type = "RMSNorm.Config" }, lm_head = { type = "Linear.Config" }, layers = { type = "list" } },
    ["_build_llama3_layers"] = { n_layers = { type = "int", min = 1 }, dim = { type = "int", min = 1 },
      n_heads = { type = "int", min = 1 }, n_kv_heads = { type = "int", min = 1 },
      hidden_dim = { type = "int", min = 1 }, rope = { type = "ComplexRoPE.Config" },
      fuse_qkv = { type = "bool" }, attn_backend = { type = "str", values = set({ "flex", "flex_flash", "varlen" }) } },
    ["Embedding.Config"] = { num_embeddings = { type = "int", min = 1 }, embedding_dim = { type = "int", min = 1 },
      param_init = { type = "init" } },
    ["RMSNorm.Config"] = { normalized_shape = { type = "int", min = 1 }, param_init = { type = "init" } },
    ["Linear.Config"] = { in_features = { type = "int", min = 1 }, out_features = { type = "int", min = 1 },
      param_init = { type = "init" } },
    ["ComplexRoPE.Config"] = { dim = { type = "int", min = 1 }, max_context_length = { type = "int", min = 1 } },
    -- a head dim other than dim // n_heads: the attention the builder
    -- makes, with it (models/common/config_utils.py make_gqa_config: dim,
    -- n_heads, n_kv_heads, head_dim, the inits, inner_attention, rope,
    -- fuse_qkv), the layer's own inner attention and RoPE passed on
    ["make_gqa_config"] = { dim = { type = "int", min = 1 }, n_heads = { type = "int", min = 1 },
      n_kv_heads = { type = "int", min = 1 }, head_dim = { type = "int", min = 1 },
      wqkv_param_init = { type = "init" }, wo_param_init = { type = "init" },
      inner_attention = { type = "Module.Config" }, rope = { type = "ComplexRoPE.Config" },
      fuse_qkv = { type = "bool" } },
    -- the inits the flavours use (private names of torchtitan.models.llama3)
    inits = set({ "_EMBEDDING_INIT", "_EMBEDDING_SKIP_INIT", "_NORM_INIT", "_output_linear_init",
      "_LINEAR_INIT", "_depth_init" }),
  },
  -- the flavours' shapes (llama3_configs, torchtitan/models/llama3/__init__.py):
  -- hidden_dim = compute_ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier)
  -- (models/common/feed_forward.py: int(8 dim / 3), times the multiplier,
  -- rounded up to multiple_of): 1B (1024, 1.5), 3B (1024, 1.0), 8B (1024,
  -- 1.3), 70B (4096, 1.3), 405B (4096, 1.2); RoPE max_context_length 131072;
  -- 1B and 3B tie the embeddings
  flavor_shapes = {
    ["1B"] = { dim = 2048, n_layers = 16, n_heads = 32, n_kv_heads = 8, head_dim = 64, hidden_dim = 8192,
      vocab_size = 128256, enable_weight_tying = true, max_context_length = 131072 },
    ["3B"] = { dim = 3072, n_layers = 28, n_heads = 24, n_kv_heads = 8, head_dim = 128, hidden_dim = 8192,
      vocab_size = 128256, enable_weight_tying = true, max_context_length = 131072 },
    ["8B"] = { dim = 4096, n_layers = 32, n_heads = 32, n_kv_heads = 8, head_dim = 128, hidden_dim = 14336,
      vocab_size = 128256, enable_weight_tying = false, max_context_length = 131072 },
    ["70B"] = { dim = 8192, n_layers = 80, n_heads = 64, n_kv_heads = 8, head_dim = 128, hidden_dim = 28672,
      vocab_size = 128256, enable_weight_tying = false, max_context_length = 131072 },
    ["405B"] = { dim = 16384, n_layers = 126, n_heads = 128, n_kv_heads = 8, head_dim = 128, hidden_dim = 53248,
      vocab_size = 128256, enable_weight_tying = false, max_context_length = 131072 },
  },
  -- `for layer in config.model_spec.model.layers: layer.<path> = value`:
  -- every Llama3TransformerBlock.Config carries its own RoPE.Config
  -- (make_gqa_config, models/common/config_utils.py, copies the flavour's
  -- with dataclasses.replace) and its own attention_norm / ffn_norm
  -- RMSNorm.Config (TransformerBlock.Config, models/common/decoder.py).
  -- RoPE.Config (models/common/rope.py): theta (default 10000.0; HEAD's
  -- llama3 flavours 500000), scaling "none" | "llama" | "yarn" (flavours
  -- "llama"); llama scaling_factor (8.0), low_freq_factor (1.0),
  -- high_freq_factor (4.0), original_max_position_embeddings (8192),
  -- applied by ComplexRoPE._precompute_cache (the llama3 flavours' RoPE)
  layer_fields = {
    ["attention.rope.theta"] = { type = "float", min = 0 },
    ["attention.rope.scaling"] = { type = "str", values = set({ "none", "llama", "yarn" }) },
    ["attention.rope.scaling_factor"] = { type = "float", min = 0 },
    ["attention.rope.low_freq_factor"] = { type = "float", min = 0 },
    ["attention.rope.high_freq_factor"] = { type = "float", min = 0 },
    ["attention.rope.original_max_position_embeddings"] = { type = "int", min = 1 },
    ["attention_norm.eps"] = { type = "float", min = 0 },
    -- GQAttention.Config.qk_norm (models/common/attention.py; the qwen3
    -- builders' _qwen3_norm(head_dim), eps _EPS = 1e-6)
    ["attention.qk_norm.eps"] = { type = "float", min = 0 },
    -- MoE.Config.load_balance_coeff (models/common/moe.py, float | None,
    -- default 1e-3): None builds no expert bias (expert_bias_E) and no
    -- bias update; make_moe_config passes its 1e-3 default
    ["moe.load_balance_coeff"] = { type = "float", min = 0, nullable = true },
    ["ffn_norm.eps"] = { type = "float", min = 0 },
    -- Linear.Config bias (models/common/linear.py, default False): the fused
    -- wqkv (the flavours' fuse_qkv=True; FusedQKVLinear splits and merges
    -- the bias with the weight, models/common/attention.py), wo, and the
    -- SwiGLU w1, w2, w3 (FeedForward, models/common/feed_forward.py);
    -- column/rowwise TP shards or replicates a bias (decoder_sharding.py)
    ["attention.qkv_linear.wqkv.bias"] = { type = "bool" },
    ["attention.wo.bias"] = { type = "bool" },
    ["feed_forward.w1.bias"] = { type = "bool" },
    ["feed_forward.w2.bias"] = { type = "bool" },
    ["feed_forward.w3.bias"] = { type = "bool" },
  },
  -- Ctor(field=value, ...)
  constructors = {
    ["CompileConfig"] = {
      enable = { type = "bool" }, enable_async_tensor_parallel = { type = "bool" },
      components = { type = "list[str]", values = set({ "model", "loss" }) },
    },
    ["FullAC.Config"] = {},
    ["SelectiveAC.Config"] = {},
    ["Float8LinearConverter.Config"] = {
      recipe_name = { type = "str", values = set({ "rowwise", "rowwise_with_gw_hp" }) },
      filter_fqns = { type = "list[str]" }, model_compile_enabled = { type = "bool" },
    },
    ["MXFP8LinearConverter.Config"] = { fqns = { type = "list[str]" }, model_compile_enabled = { type = "bool" } },
    -- components/quantization/float8.py, mx.py: the MoE experts' grouped GEMMs
    ["Float8GroupedExpertsConverter.Config"] = { model_compile_enabled = { type = "bool" } },
    ["MXFP8GroupedExpertsConverter.Config"] = { model_compile_enabled = { type = "bool" },
      pad_multiple = { type = "int" } },
    ["NVFP4LinearConverter.Config"] = { fqns = { type = "list[str]" }, model_compile_enabled = { type = "bool" } },
  },
  -- HEAD's model families other than llama3, the ones a module builds a
  -- Qwen3, MoE or gpt-oss model on: model_registry(flavor) gives the
  -- ModelSpec (parallelize_fn, the MoE load-balancing hook, state dict
  -- adapter) and the embeddings, final norm and lm_head of the flavour with
  -- the model's dim and vocab_size; the layers are rebuilt with the model's
  -- numbers on the flavours' own builder.  qwen3_dense:
  -- torchtitan/models/qwen3/__init__.py _build_qwen3_layers (GQA with
  -- head_dim given, per-head qk-norm, SwiGLU FeedForward, every norm
  -- RMSNorm eps _EPS = 1e-6, CosSinRoPE), flavours 0.6B, 1.7B, 4B (tied
  -- embeddings), 8B, 14B, 32B, vocab 151936, config function qwen3_32b.
  -- gpt_oss: torchtitan/models/gpt_oss/__init__.py _build_gptoss_layers
  -- (every layer MoE; _make_gptoss_attn_config's own 64 heads, 8 KV heads,
  -- head_dim 64, a 128-token window on the even layers, attention sinks,
  -- q/k/v, wo, router and expert biases; GptOssGroupedExperts' clamped
  -- SwiGLU, alpha 1.702, limit 7, (up + 1); softmax router with
  -- route_norm; CosSinRoPE with yarn), flavours 20b and 120b (dim 2880,
  -- vocab 201088), config function gpt_oss_20b (config_registry.py).
  -- qwen3: torchtitan/models/qwen3/__init__.py
  -- _build_qwen3_moe_layers (every layer MoE, no shared expert, qk-norm
  -- RMSNorm eps _EPS = 1e-6, softmax router with route_norm, CosSinRoPE),
  -- flavours 30B-A3B (dim 2048) and 235B-A22B (dim 4096), vocab 151936,
  -- config function qwen3_30b_a3b (config_registry.py).  deepseek_v3:
  -- torchtitan/models/deepseek_v3/__init__.py _build_dsv3_layers
  -- (build_mla_moe_layers with DeepSeek-V3's inits: MLA, the first
  -- n_dense_layers dense, num_shared_experts x moe_hidden_dim shared
  -- FFN, ComplexRoPE on qk_rope_head_dim), flavours 16B (dim 2048, vocab
  -- 102400), 236B (5120, 102400), 671B (7168, 129280); config function
  -- deepseek_v3_671b (config_registry.py).  `routing`: what apsearch's
  -- model does not give, as the flavour sets it (group-limited routing,
  -- route scale and norm, the MLA softmax mscale, YaRN beta_fast/slow)
  families = {
    qwen3_dense = {
      module = "torchtitan.models.qwen3", config_module = "torchtitan.models.qwen3.config_registry",
      base = "qwen3_32b", builder = "_build_qwen3_layers", rope = "CosSinRoPE.Config",
      norm_eps = 1e-6, default_flavor = "32B", qk_norm = true,
      head = TT_QWEN3_HEAD,
      flavors = { ["0.6B"] = { dim = 1024, vocab_size = 151936, tied = true },
                  ["1.7B"] = { dim = 2048, vocab_size = 151936, tied = true },
                  ["4B"] = { dim = 2560, vocab_size = 151936, tied = true },
                  ["8B"] = { dim = 4096, vocab_size = 151936 },
                  ["14B"] = { dim = 5120, vocab_size = 151936 },
                  ["32B"] = { dim = 5120, vocab_size = 151936 } },
      args = with(TT_QWEN3_ARGS, { hidden_dim = { type = "int", min = 1 } }),
      rope_args = TT_ROPE,
    },
    gpt_oss = {
      module = "torchtitan.models.gpt_oss", config_module = "torchtitan.models.gpt_oss.config_registry",
      base = "gpt_oss_20b", builder = "_build_gptoss_layers", rope = "CosSinRoPE.Config",
      default_flavor = "20b", moe = true,
      -- what _build_gptoss_layers fixes (_make_gptoss_attn_config's defaults,
      -- sliding_window_size=128 if layer_id % 2 == 0, GptOssGroupedExperts
      -- swiglu alpha 1.702 and swiglu_limit 7.0)
      fixed = { n_heads = 64, n_kv_heads = 8, head_dim = 64, window = 128, window_period = 2, glu_clamp = 7.0 },
      head = { embedding_init = "_EMBEDDING_INIT", norm = "RMSNorm.Config(normalized_shape=%d, param_init=_NORM_INIT)",
        lm_head_init = "_output_linear_init(%d)", imports = { "_EMBEDDING_INIT", "_NORM_INIT", "_output_linear_init" } },
      flavors = { ["20b"] = { dim = 2880, vocab_size = 201088 }, ["120b"] = { dim = 2880, vocab_size = 201088 } },
      args = { dim = { type = "int", min = 1 }, n_layers = { type = "int", min = 1 },
        hidden_dim = { type = "int", min = 1 }, num_experts = { type = "int", min = 1 },
        top_k = { type = "int", min = 1 }, load_balance_coeff = { type = "float", min = 0, nullable = true },
        fuse_qkv = { type = "bool" }, attn_backend = TT_ATTN_BACKEND, moe_comm_backend = TT_MOE_COMM,
        rope = { type = "CosSinRoPE.Config" } },
      rope_args = TT_YARN_ROPE,
    },
    qwen3 = {
      module = "torchtitan.models.qwen3", config_module = "torchtitan.models.qwen3.config_registry",
      base = "qwen3_30b_a3b", builder = "_build_qwen3_moe_layers", rope = "CosSinRoPE.Config",
      norm_eps = 1e-6, default_flavor = "30B-A3B", moe = true, qk_norm = true,
      -- the flavours' embeddings, final norm and lm_head (qwen3/__init__.py _30b_a3b)
      head = TT_QWEN3_HEAD,
      flavors = { ["30B-A3B"] = { dim = 2048, vocab_size = 151936 },
                  ["235B-A22B"] = { dim = 4096, vocab_size = 151936 } },
      args = with(TT_QWEN3_ARGS, { moe_hidden_dim = { type = "int", min = 1 },
        num_experts = { type = "int", min = 1 }, top_k = { type = "int", min = 1 }, moe_comm_backend = TT_MOE_COMM }),
      rope_args = TT_ROPE,
    },
    deepseek_v3 = {
      module = "torchtitan.models.deepseek_v3", config_module = "torchtitan.models.deepseek_v3.config_registry",
      base = "deepseek_v3_671b", builder = "_build_dsv3_layers", rope = "ComplexRoPE.Config",
      default_flavor = "671B", moe = true,
      -- the flavours' embeddings, final norm and lm_head (deepseek_v3/__init__.py _16b)
      head = { embedding_init = "_EMBEDDING_INIT", norm = "RMSNorm.Config(normalized_shape=%d, param_init=_NORM_INIT)",
        lm_head_init = "_output_linear_init(%d)", imports = { "_EMBEDDING_INIT", "_NORM_INIT", "_output_linear_init" } },
      flavors = {
        ["16B"] = { dim = 2048, vocab_size = 102400, routing = { router_route_scale = 1.0,
          router_route_norm = false, mscale = 0.70, beta_fast = 32.0, beta_slow = 1.0 } },
        ["236B"] = { dim = 5120, vocab_size = 102400, routing = { router_num_expert_groups = 8,
          router_num_limited_groups = 3, router_route_scale = 16.0, router_route_norm = false, mscale = 1.0,
          beta_fast = 32.0, beta_slow = 1.0 } },
        ["671B"] = { dim = 7168, vocab_size = 129280, routing = { router_num_expert_groups = 8,
          router_num_limited_groups = 4, router_route_scale = 2.5, router_route_norm = true, mscale = 1.0,
          beta_fast = 32.0, beta_slow = 1.0 } },
      },
      args = { n_layers = { type = "int", min = 1 }, n_dense_layers = { type = "int", min = 0 },
        dim = { type = "int", min = 1 }, n_heads = { type = "int", min = 1 },
        q_lora_rank = { type = "int", min = 0 }, kv_lora_rank = { type = "int", min = 1 },
        qk_nope_head_dim = { type = "int", min = 1 }, qk_rope_head_dim = { type = "int", min = 1 },
        v_head_dim = { type = "int", min = 1 }, mscale = { type = "float", min = 0, min_inclusive = true }, -- 0: softmax unscaled
        dense_hidden_dim = { type = "int", min = 1 }, moe_hidden_dim = { type = "int", min = 1 },
        num_experts = { type = "int", min = 1 }, num_shared_experts = { type = "int", min = 0 },
        router_top_k = { type = "int", min = 1 },
        router_score_func = { type = "str", values = set({ "sigmoid", "softmax" }) },
        router_num_expert_groups = { type = "int", min = 1 }, router_num_limited_groups = { type = "int", min = 1 },
        router_route_scale = { type = "float", min = 0 }, router_route_norm = { type = "bool" },
        attn_backend = TT_ATTN_BACKEND, moe_comm_backend = TT_MOE_COMM,
        non_blocking_capacity_factor = { type = "float", min = 0, nullable = true },
        rope = { type = "ComplexRoPE.Config" } },
      rope_args = TT_YARN_ROPE,
    },
  },
  -- model_registry(flavor) and the config functions a module builds on
  flavors = set({ "1B", "3B", "8B", "70B", "405B" }),
  base_configs = set({ "llama3_8b", "llama3_70b", "llama3_405b", "qwen3_32b", "qwen3_30b_a3b", "gpt_oss_20b",
    "deepseek_v3_671b" }),
  imports = {
    ["torchtitan.models.qwen3.config_registry"] = set({ "qwen3_32b", "qwen3_30b_a3b" }),
    ["torchtitan.models.qwen3"] = set({ "model_registry", "_build_qwen3_layers", "_build_qwen3_moe_layers",
      "_EMBEDDING_INIT", "_qwen3_norm", "_LINEAR_INIT" }),
    ["torchtitan.models.gpt_oss.config_registry"] = set({ "gpt_oss_20b" }),
    ["torchtitan.models.gpt_oss"] = set({ "model_registry", "_build_gptoss_layers", "_EMBEDDING_INIT",
      "_NORM_INIT", "_output_linear_init" }),
    ["torchtitan.models.deepseek_v3.config_registry"] = set({ "deepseek_v3_671b" }),
    ["torchtitan.models.deepseek_v3"] = set({ "model_registry", "_build_dsv3_layers", "_EMBEDDING_INIT",
      "_NORM_INIT", "_output_linear_init" }),
    ["torchtitan.models.llama3.config_registry"] = set({ "llama3_8b", "llama3_70b", "llama3_405b" }),
    ["torchtitan.models.llama3"] = set({ "model_registry", "Llama3Model", "_build_llama3_layers",
      "_EMBEDDING_INIT", "_EMBEDDING_SKIP_INIT", "_NORM_INIT", "_output_linear_init", "_LINEAR_INIT",
      "_depth_init" }),
    ["torchtitan.models.common"] = set({ "ComplexRoPE", "CosSinRoPE", "Embedding", "Linear", "RMSNorm" }),
    ["torchtitan.trainer"] = set({ "Trainer" }),
    ["torchtitan.config"] = set({ "CompileConfig" }),
    ["torchtitan.components.loss"] = set({ "ChunkedLossWrapper", "CrossEntropyLoss" }),
    ["torchtitan.components.quantization"] = set({ "Float8LinearConverter", "MXFP8LinearConverter",
      "NVFP4LinearConverter", "Float8GroupedExpertsConverter", "MXFP8GroupedExpertsConverter" }),
    ["torchtitan.models.common.config_utils"] = set({ "decoder_vocab_size", "make_gqa_config" }),
    ["torchtitan.distributed.activation_checkpoint"] = set({ "FullAC", "SelectiveAC" }),
  },
  -- the launch line: torchrun (M.torchrun) -m torchtitan.train plus these
  train_options = set({ "--module", "--config" }),
}

--- True when a Lua value fits a TorchTitan fact (`{type, values, min,
-- nullable}`); nil is Python None, which only a nullable fact takes.
-- @tparam table fact
-- @param v
-- @treturn boolean
function M.torchtitan_value_ok(fact, v)
  local t = fact.type
  if v == nil then
    -- Python None, where the annotation has `| None` (`nullable`)
    return fact.nullable == true
  elseif t == "int" then
    return math.type(v) == "integer" and v >= (fact.min or -math.huge)
  elseif t == "float" then
    -- a finite number above min (written as a Python float)
    -- (or equal to it with min_inclusive)
    return type(v) == "number" and v == v and v > -math.huge and v < math.huge and
      (v > (fact.min or -math.huge) or (fact.min_inclusive == true and v == fact.min))
  elseif t == "bool" then
    return type(v) == "boolean"
  elseif t == "str" then
    return type(v) == "string" and (not fact.values or fact.values[v] == true)
  elseif t == "list[str]" then
    if type(v) ~= "table" then return false end
    for _, x in ipairs(v) do
      if type(x) ~= "string" or (fact.values and not fact.values[x]) then return false end
    end
    return true
  end
  return false
end


--- TorchTitan releases that read a TOML job file (`torchrun ... -m
-- torchtitan.train --job.config_file FILE`, run_train.sh at the tag):
-- the keys of the sections the release writer may write, each with its
-- type (int, float, bool, str, list[str], list[list[str]]; `nullable`
-- when the annotation has `| None`) and, for a Literal, its values.
-- Transcribed from the `JobConfig` dataclasses of
-- torchtitan/config/job_config.py at the tag (section = the JobConfig
-- field, key = the section dataclass's field; `quantize.linear.float8` =
-- Quantize.linear.float8 -> Float8Linear); ConfigManager._dict_to_dataclass
-- (torchtitan/config/manager.py) refuses any other key.  Sections the
-- writer leaves at their defaults (profiling, metrics, optimizer,
-- lr_scheduler, checkpoint, comm, ...) are not listed.
-- `flavors`: the llama3 flavours of the release (llama3_args,
-- torchtitan/models/llama3/__init__.py at the tag; TransformerModelArgs
-- in models/llama3/model/args.py), each with its shape and numerics, the
-- only models `[model] name = "llama3"` builds: hidden_dim is the SwiGLU
-- width FeedForward computes (int(2 * 4 dim / 3) x ffn_dim_multiplier,
-- rounded up to multiple_of), RoPE theta 500000 with RoPEScalingArgs'
-- llama3 scaling (factor 8, low 1, high 4, original context 8192, always
-- applied by precompute_freqs_cis), norm_eps 1e-5, vocab 128256, untied.
-- `converters`: model.converters names register_model_converter registers
-- (components/quantization/float8.py, mx.py); `output`: the lm_head's
-- module name (models/llama3/model/model.py Transformer.output, the last
-- name generate_llm_fqn_per_model_part gives a pipeline stage).
local function release_keys()
  local int, bool, str, float = { type = "int" }, { type = "bool" }, { type = "str" }, { type = "float" }
  local lstr = { type = "list[str]" }
  local function lit(...) return { type = "str", values = set({ ... }) } end
  local function null(t) local c = {} for k, v in pairs(t) do c[k] = v end c.nullable = true return c end
  return {
    -- Job
    ["job.config_file"] = null(str), ["job.dump_folder"] = str, ["job.description"] = str,
    ["job.print_config"] = bool, ["job.save_config_file"] = null(str), ["job.custom_config_module"] = str,
    -- Model
    ["model.name"] = str, ["model.flavor"] = str, ["model.hf_assets_path"] = str,
    ["model.tokenizer_path"] = null(str), ["model.converters"] = lstr, ["model.print_after_conversion"] = bool,
    -- Training (training.dataloader.* not written)
    ["training.dataset"] = str, ["training.dataset_path"] = null(str),
    ["training.local_batch_size"] = int, ["training.global_batch_size"] = int, ["training.seq_len"] = int,
    ["training.max_norm"] = { type = "float | int" }, ["training.steps"] = int,
    ["training.enable_cpu_offload"] = bool, ["training.dtype"] = lit("bfloat16", "float32"),
    ["training.mixed_precision_param"] = lit("bfloat16", "float32"),
    ["training.mixed_precision_reduce"] = lit("float32"), ["training.gc_freq"] = int, ["training.gc_debug"] = bool,
    -- Parallelism
    ["parallelism.data_parallel_replicate_degree"] = int, ["parallelism.data_parallel_shard_degree"] = int,
    ["parallelism.fsdp_reshard_after_forward"] = lit("default", "always", "never"),
    ["parallelism.tensor_parallel_degree"] = int, ["parallelism.disable_loss_parallel"] = bool,
    ["parallelism.enable_async_tensor_parallel"] = bool, ["parallelism.pipeline_parallel_degree"] = int,
    ["parallelism.module_fqns_per_model_part"] = null({ type = "list[list[str]]" }),
    ["parallelism.pipeline_parallel_first_stage_less_layers"] = int,
    ["parallelism.pipeline_parallel_last_stage_less_layers"] = int,
    ["parallelism.pipeline_parallel_layers_per_stage"] = null(int),
    ["parallelism.pipeline_parallel_schedule"] = str, ["parallelism.pipeline_parallel_schedule_csv"] = null(str),
    ["parallelism.pipeline_parallel_microbatch_size"] = int,
    ["parallelism.pipeline_parallel_expert_parallel_overlap"] = bool,
    ["parallelism.context_parallel_degree"] = int,
    -- str | None; "headtail" (SDPA) or "ptrr" (FlexAttention), the
    -- docstring's options (v0.2.2 only: added after v0.2.1)
    ["parallelism.context_parallel_load_balancer"] = null({ type = "str", values = set({ "headtail", "ptrr" }) }),
    ["parallelism.context_parallel_rotate_method"] = lit("allgather", "alltoall"),
    ["parallelism.expert_parallel_degree"] = int, ["parallelism.expert_tensor_parallel_degree"] = int,
    ["parallelism.expert_parallel_comm_backend"] = lit("standard", "deepep"),
    -- ActivationCheckpoint (selective_ac_option: "op" or a layer
    -- frequency as digits, distributed/activation_checkpoint.py)
    ["activation_checkpoint.mode"] = lit("selective", "full", "memory_budget", "none"),
    ["activation_checkpoint.selective_ac_option"] = str,
    ["activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns"] = lstr,
    ["activation_checkpoint.early_stop"] = bool, ["activation_checkpoint.memory_budget"] = float,
    ["activation_checkpoint.visualize_memory_budget_pareto"] = bool,
    ["activation_checkpoint.preserve_rng_state"] = bool, ["activation_checkpoint.determinism_check"] = str,
    ["activation_checkpoint.debug"] = bool,
    -- Compile
    ["compile.enable"] = bool, ["compile.components"] = lstr, ["compile.backend"] = str,
    -- Quantize.linear.float8 (Float8Linear), .mx (MXLinear)
    ["quantize.linear.float8.enable_fsdp_float8_all_gather"] = bool,
    ["quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp"] = bool,
    ["quantize.linear.float8.recipe_name"] = null(lit("tensorwise", "rowwise", "rowwise_with_gw_hp")),
    ["quantize.linear.float8.filter_fqns"] = lstr, ["quantize.linear.float8.emulate"] = bool,
    ["quantize.linear.mx.mxfp8_dim1_cast_kernel_choice"] = lit("triton", "cuda", "torch"),
    ["quantize.linear.mx.recipe_name"] = str, ["quantize.linear.mx.filter_fqns"] = lstr,
  }
end

M.torchtitan_releases = {
  ["v0.2.2"] = {
    source = {
      repo = "pytorch/torchtitan", path = "torchtitan/config/job_config.py", tag = "v0.2.2",
      commit = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce", date = "2026-02-20",
      note = "JobConfig dataclasses (job_config.py), ConfigManager TOML loading (manager.py), llama3_args " ..
        "(models/llama3/__init__.py), qwen3_args, deepseekv3_args, gptoss_configs, llama4_args (models/*/__init__.py), " ..
        "converters " ..
        "(components/quantization), pipeline split " ..
        "(distributed/pipeline_parallel.py), layer / op SAC (distributed/activation_checkpoint.py), " ..
        "run_train.sh; the last release before TOML files gave way to Python config modules (9810191b)",
    },
    keys = release_keys(),
    converters = { float8 = "quantize.linear.float8", mx = "quantize.linear.mx" },
    -- MXLinear.recipe_name's default and docstring example
    mx_recipe = "mxfp8_cublas",
    output = "output",
    -- the MoE router's linear (models/moe/moe.py TokenChoiceTopKRouter.gate)
    router_gate = "moe.router.gate",
    -- the models a job file names (model.name, train_spec name), each with
    -- its flavours' shapes (a flavour's entry: the fields it fixes; a
    -- numeric there overrides `common`), the numerics every flavour shares
    -- (`common`), whether it has per-head Q/K norms, whether its
    -- TrainSpec has a pipelining_fn (train.py refuses PP without one),
    -- whether its flavours take CP (`context_parallel` false: refused),
    -- whether its parallelize reads expert_parallel_comm_backend
    -- (`reads_comm_backend`: "deepep" written for flex), and the name of
    -- its flavour table (`args_name`)
    models = {
      -- models/llama3/__init__.py llama3_args (TransformerModelArgs defaults,
      -- RoPEScalingArgs)
      llama3 = {
        flavors = {
          ["8B"] = { dim = 4096, n_layers = 32, n_heads = 32, n_kv_heads = 8, hidden_dim = 14336 },
          ["70B"] = { dim = 8192, n_layers = 80, n_heads = 64, n_kv_heads = 8, hidden_dim = 28672 },
          ["405B"] = { dim = 16384, n_layers = 126, n_heads = 128, n_kv_heads = 8, hidden_dim = 53248 },
        },
        common = { vocab_size = 128256, tie_word_embeddings = false, rope_theta = 500000,
          rope_scaling_type = "llama3", rope_scaling_factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0,
          original_max_position_embeddings = 8192, norm_eps = 1e-5, num_experts = 0 },
        qk_norm = false, pipelining = true, args_name = "llama3_args",
      },
      -- models/qwen3/__init__.py qwen3_args and model/args.py Qwen3ModelArgs
      -- (norm_eps 1e-6, qk_norm, head_dim 128, unscaled RoPE; the MoE
      -- flavours' MoEArgs: softmax scores, route_norm, no shared expert,
      -- load_balance_coeff left at its 1e-3: an expert bias); get_train_spec:
      -- pipelining_fn None
      qwen3 = {
        flavors = {
          ["0.6B"] = { dim = 1024, n_layers = 28, n_heads = 16, n_kv_heads = 8, hidden_dim = 3072,
            tie_word_embeddings = true },
          ["1.7B"] = { dim = 2048, n_layers = 28, n_heads = 16, n_kv_heads = 8, hidden_dim = 6144,
            tie_word_embeddings = true },
          ["4B"] = { dim = 2560, n_layers = 36, n_heads = 32, n_kv_heads = 8, hidden_dim = 9728,
            tie_word_embeddings = true },
          ["8B"] = { dim = 4096, n_layers = 36, n_heads = 32, n_kv_heads = 8, hidden_dim = 12288 },
          ["14B"] = { dim = 5120, n_layers = 40, n_heads = 40, n_kv_heads = 8, hidden_dim = 17408 },
          ["32B"] = { dim = 5120, n_layers = 64, n_heads = 64, n_kv_heads = 8, hidden_dim = 25600 },
          ["30B-A3B"] = { dim = 2048, n_layers = 48, n_heads = 32, n_kv_heads = 4, num_experts = 128,
            top_k = 8, moe_inter_dim = 768 },
          ["235B-A22B"] = { dim = 4096, n_layers = 94, n_heads = 64, n_kv_heads = 4, num_experts = 128,
            top_k = 8, moe_inter_dim = 1536, rope_theta = 5000000 },
        },
        common = { vocab_size = 151936, tie_word_embeddings = false, head_dim = 128, rope_theta = 1000000,
          rope_scaling_type = "none", norm_eps = 1e-6, num_experts = 0, load_balance_coeff = 1e-3 },
        qk_norm = true, pipelining = false, args_name = "qwen3_args",
      },
      -- models/deepseek_v3/__init__.py deepseekv3_args and model/args.py
      -- DeepSeekV3ModelArgs (norm_eps 1e-5; YaRN factor 40 over 4096 with
      -- betas 32 / 1, applied only when seq_len > original_seq_len by
      -- model.py precompute_freqs_cis, its softmax scale times mscale^2;
      -- flex attention with a block-causal mask, which update_from_config
      -- refuses with CP; MoEArgs' load_balance_coeff 1e-3: an expert bias);
      -- get_train_spec: pipelining_fn pipeline_llm; infra/parallelize.py
      -- l.100-121 reads expert_parallel_comm_backend
      deepseek_v3 = {
        flavors = {
          ["16B"] = { dim = 2048, n_layers = 27, n_heads = 16, inter_dim = 10944, moe_inter_dim = 1408,
            n_dense_layers = 1, num_experts = 64, num_shared_experts = 2, top_k = 6, q_lora_rank = 0,
            vocab_size = 102400, score_func = "softmax", route_norm = false, route_scale = 1.0,
            num_expert_groups = 0, num_limited_groups = 0, mscale = 0.70 },
          ["236B"] = { dim = 5120, n_layers = 60, n_heads = 128, inter_dim = 12288, moe_inter_dim = 1536,
            n_dense_layers = 1, num_experts = 160, num_shared_experts = 2, top_k = 6, q_lora_rank = 1536,
            vocab_size = 102400, score_func = "softmax", route_norm = false, route_scale = 16.0,
            num_expert_groups = 8, num_limited_groups = 3 },
          ["671B"] = { dim = 7168, n_layers = 61, n_heads = 128, inter_dim = 18432, moe_inter_dim = 2048,
            n_dense_layers = 3, num_experts = 256, num_shared_experts = 1, top_k = 8, q_lora_rank = 1536,
            vocab_size = 129280, score_func = "sigmoid", route_norm = true, route_scale = 2.5,
            num_expert_groups = 8, num_limited_groups = 4 },
        },
        common = { kv_lora_rank = 512, qk_nope_head_dim = 128, qk_rope_head_dim = 64, v_head_dim = 128,
          tie_word_embeddings = false, norm_eps = 1e-5, rope_theta = 10000, rope_factor = 40,
          original_seq_len = 4096, beta_fast = 32, beta_slow = 1, mscale = 1.0, load_balance_coeff = 1e-3,
          attn_mask_type = "block_causal" },
        qk_norm = false, pipelining = true, context_parallel = false, args_name = "deepseekv3_args",
        reads_comm_backend = true,
      },
      -- models/gpt_oss/__init__.py gptoss_configs and model/args.py
      -- GptOssModelArgs (64 heads, 8 KV heads, head_dim 64, a 128-token
      -- window on the even layers, attention sinks, biases on q/k/v, wo,
      -- router and experts, SwiGLU clamped at 7 with up + 1, YaRN factor 32
      -- over 4096, theta 150000; softmax routing with route_norm and
      -- load_balance_coeff 1e-3: an expert bias); pipelining_fn None;
      -- update_from_config refuses CP
      gpt_oss = {
        flavors = {
          ["20b"] = { n_layers = 24, num_experts = 32 },
          ["120b"] = { n_layers = 36, num_experts = 128 },
        },
        common = { dim = 2880, n_heads = 64, n_kv_heads = 8, head_dim = 64, moe_inter_dim = 2880, top_k = 4,
          vocab_size = 201088, tie_word_embeddings = false, norm_eps = 1e-5, rope_theta = 150000,
          rope_factor = 32, original_seq_len = 4096, beta_fast = 32, beta_slow = 1, window = 128,
          window_period = 2, glu_clamp = 7.0, load_balance_coeff = 1e-3 },
        qk_norm = false, pipelining = false, context_parallel = false, args_name = "gptoss_configs",
      },
      -- models/llama4/__init__.py llama4_args and model/args.py
      -- TransformerModelArgs (vocab 202048, norm_eps 1e-5, theta 500000,
      -- head_dim dim // heads); model.py TransformerBlock: a MoE layer when
      -- (layer_id + 1) % interleave_moe_layer_step == 0 (default 2), its
      -- experts' and one shared expert's width 4 dim -> 2/3 -> x1.2 ->
      -- / (top_k + num_shared_experts) rounded up to multiple_of 2048 = 8192,
      -- a dense layer's FeedForward 16384; models/moe/moe.py MoEArgs
      -- defaults: sigmoid scores, top 1, one shared expert,
      -- score_before_experts (the weight on the expert input), route_norm
      -- False, route_scale 1, no groups, load_balance_coeff 1e-3 (an expert
      -- bias); "sdpa" causal attention with RoPE on every layer, no Q/K
      -- norm.  Its *_irope flavours (NoPE on every 4th layer from layer 0,
      -- chunked FlexAttention) are not written: Attention.forward passes
      -- the whole mask dict as block_mask (model.py @ v0.2.2 l.275-283).
      -- get_train_spec: pipelining_fn pipeline_llm; update_from_config
      -- refuses CP only for flex attention; infra/parallelize.py l.114-135
      -- reads expert_parallel_comm_backend
      llama4 = {
        flavors = {
          ["17bx16e"] = { num_experts = 16, interleave_moe_layer_step = 1, rope_scaling_type = "llama3",
            rope_scaling_factor = 16.0, low_freq_factor = 1.0, high_freq_factor = 1.0,
            original_max_position_embeddings = 8192 },
          ["17bx128e"] = { num_experts = 128, interleave_moe_layer_step = 2, inter_dim = 16384 },
        },
        common = { dim = 5120, n_layers = 48, n_heads = 40, n_kv_heads = 8, top_k = 1, moe_inter_dim = 8192,
          num_shared_experts = 1, vocab_size = 202048, tie_word_embeddings = false, rope_theta = 500000,
          rope_scaling_type = "none", norm_eps = 1e-5, load_balance_coeff = 1e-3, score_func = "sigmoid",
          route_scale = 1.0, irope_period = 4 },
        qk_norm = false, pipelining = true, args_name = "llama4_args", reads_comm_backend = true,
      },
    },
  },
}

--- True when `v` is a value of release key fact `fact` (a type and, for
-- a Literal, its values; nil only where the annotation allows None).
-- @tparam table fact an entry of M.torchtitan_releases[tag].keys
-- @param v a Lua value (string, integer, number, boolean, list)
-- @treturn boolean
function M.release_value_ok(fact, v)
  if v == nil then return fact.nullable == true end
  local t = fact.type
  if t == "int" then return math.type(v) == "integer" end
  if t == "float" then return type(v) == "number" end
  if t == "float | int" then return type(v) == "number" end
  if t == "bool" then return type(v) == "boolean" end
  if t == "str" then return type(v) == "string" and (not fact.values or fact.values[v] == true) end
  if t == "list[str]" or t == "list[list[str]]" then
    if type(v) ~= "table" then return false end
    for _, x in ipairs(v) do
      if t == "list[str]" and type(x) ~= "string" then return false end
      if t == "list[list[str]]" then
        if type(x) ~= "table" then return false end
        for _, y in ipairs(x) do if type(y) ~= "string" then return false end end
      end
    end
    return true
  end
  return false
end

--- MindSpore Transformers (MindFormers) YAML keys, as dotted paths, each
-- with the type and values MindFormers accepts there.  Read at
-- mindspore-lab/mindformers fd4deebc1606a02fd24c3b359a889cd0c966e72b:
-- mindformers/tools/register/template.py (ConfigTemplate: the sections
-- parallel_config, recompute_config and runner_config refuse unknown
-- keys; GeneralConfig's top-level keys), mindformers/tools/register/config.py
-- (MindFormerConfig, yaml.safe_load), mindformers/core/parallel_config.py
-- (build_parallel_config: recompute_config -> TransformerRecomputeConfig,
-- parallel_config -> TransformerOpParallelConfig), mindformers/models/utils.py
-- (LayerSetting: offset int / [p] / [v][p], recompute and select_recompute
-- bool / counts per stage / per chunk, select_recompute also operator-name
-- patterns), mindformers/models/llama/llama_config.py (LlamaConfig),
-- mindformers/modules/transformer/transformer.py (TransformerOpParallelConfig:
-- context_parallel_algo colossalai_cp, ulysses_cp, hybrid_cp).
-- Types: bool, int (>= min), float (a YAML 1.1 float, with a dot, > min), string (one of values), offset (int, list of
-- ints, list of lists of ints), layers (bool or list of layer counts, or of
-- lists), patterns (bool or list of regular expressions over cell names),
-- strings (a list of strings, each one of values), floats (a list of
-- floats); null = true: YAML null (Python None) also taken.
M.mindformers = {
  source = {
    repo = "mindspore-lab/mindformers",
    path = "mindformers/tools/register/template.py",
    commit = "fd4deebc1606a02fd24c3b359a889cd0c966e72b",
    note = "ConfigTemplate sections; LayerSetting (mindformers/models/utils.py) for offset, " ..
      "recompute, select_recompute and pp_interleave_num; LlamaConfig " ..
      "(mindformers/models/llama/llama_config.py) for model.model_config; MindSpore " ..
      "set_auto_parallel_context for parallel.* (MsParallelConfig passes them on); " ..
      "every YAML written checked by loading it with MindFormerConfig and running " ..
      "LayerSetting (docs/launch.md)",
  },
  keys = {
    -- GeneralConfig (template.py)
    ["run_mode"] = { type = "string", values = { train = true, finetune = true } },
    ["use_legacy"] = { type = "bool" },
    ["use_parallel"] = { type = "bool" },
    ["micro_batch_interleave_num"] = { type = "int", min = 1 },
    -- MsParallelConfig -> mindspore.set_auto_parallel_context
    ["parallel.parallel_mode"] = { type = "int", min = 0 },
    ["parallel.enable_parallel_optimizer"] = { type = "bool" },
    ["parallel.parallel_optimizer_config.optimizer_weight_shard_size"] = { type = "int", min = 1 },
    ["parallel.pipeline_config.pipeline_interleave"] = { type = "bool" },
    ["parallel.pipeline_config.pipeline_scheduler"] = { type = "string", values = { ["1f1b"] = true } },
    -- ParallelConfig (template.py), TransformerOpParallelConfig
    ["parallel_config.data_parallel"] = { type = "int", min = 1 },
    ["parallel_config.model_parallel"] = { type = "int", min = 1 },
    ["parallel_config.pipeline_stage"] = { type = "int", min = 1 },
    ["parallel_config.context_parallel"] = { type = "int", min = 1 },
    ["parallel_config.context_parallel_algo"] = { type = "string",
      values = { colossalai_cp = true, ulysses_cp = true, hybrid_cp = true } },
    ["parallel_config.micro_batch_num"] = { type = "int", min = 1 },
    ["parallel_config.use_seq_parallel"] = { type = "bool" },
    ["parallel_config.vocab_emb_dp"] = { type = "bool" },
    ["parallel_config.gradient_aggregation_group"] = { type = "int", min = 1 },
    -- RecomputeConfig (template.py), TransformerRecomputeConfig, LayerSetting
    ["recompute_config.recompute"] = { type = "layers" },
    ["recompute_config.select_recompute"] = { type = "patterns" },
    ["recompute_config.parallel_optimizer_comm_recompute"] = { type = "bool" },
    ["recompute_config.mp_comm_recompute"] = { type = "bool" },
    ["recompute_config.recompute_slice_activation"] = { type = "bool" },
    -- RunnerConfig (template.py)
    ["runner_config.batch_size"] = { type = "int", min = 1 },
    ["runner_config.gradient_accumulation_steps"] = { type = "int", min = 1 },
    -- model: ModelConfig requires model_config; LlamaConfig fields
    ["model.arch.type"] = { type = "string", values = { LlamaForCausalLM = true } },
    ["model.model_config.type"] = { type = "string", values = { LlamaConfig = true } },
    ["model.model_config.offset"] = { type = "offset" },
    ["model.model_config.pp_interleave_num"] = { type = "int", min = 1 },
    ["model.model_config.seq_length"] = { type = "int", min = 1 },
    ["model.model_config.num_layers"] = { type = "int", min = 1 },
    ["model.model_config.hidden_size"] = { type = "int", min = 1 },
    ["model.model_config.num_heads"] = { type = "int", min = 1 },
    ["model.model_config.n_kv_heads"] = { type = "int", min = 1 },
    ["model.model_config.intermediate_size"] = { type = "int", min = 1 },
    ["model.model_config.vocab_size"] = { type = "int", min = 1 },
    ["model.model_config.max_position_embedding"] = { type = "int", min = 1 },
    ["model.model_config.qkv_has_bias"] = { type = "bool" },
    ["model.model_config.attn_proj_has_bias"] = { type = "bool" },
    ["model.model_config.tie_word_embeddings"] = { type = "bool" },
    -- LlamaConfig theta (default 10000.0), rms_norm_eps (1e-5), extend_method
    -- ("None"; FreqsMgr SeqExtendMethod in mindformers/modules/layers.py:
    -- LLAMA3 and YARN take a mapping, PI a number), scaling_factor (1.0);
    -- YARN's keys: _check_yarn_scaling_factor (layers.py @ fd4deebc)
    ["model.model_config.theta"] = { type = "float", min = 0 },
    ["model.model_config.rms_norm_eps"] = { type = "float", min = 0 },
    ["model.model_config.extend_method"] = { type = "string", values = { LLAMA3 = true, PI = true, YARN = true } },
    ["model.model_config.scaling_factor"] = { type = "float", min = 1 },
    ["model.model_config.scaling_factor.factor"] = { type = "float", min = 1 },
    ["model.model_config.scaling_factor.low_freq_factor"] = { type = "float", min = 0 },
    ["model.model_config.scaling_factor.high_freq_factor"] = { type = "float", min = 0 },
    ["model.model_config.scaling_factor.original_max_position_embeddings"] = { type = "int", min = 1,
      constraint = "llama3: < max(max_position_embedding, seq_length); yarn: <= it" },
    ["model.model_config.scaling_factor.beta_fast"] = { type = "float", min = 0, constraint = "> beta_slow" },
    ["model.model_config.scaling_factor.beta_slow"] = { type = "float", min = 0 },
    ["model.model_config.scaling_factor.mscale"] = { type = "float", min = 0 },
    ["model.model_config.scaling_factor.mscale_all_dim"] = { type = "float", constraint = ">= 0 (0: none)" },
    ["model.model_config.compute_dtype"] = { type = "string", values = { bfloat16 = true, float16 = true } },
    ["model.model_config.use_flash_attention"] = { type = "bool" },
    -- ParallelConfig.expert_parallel, MoEConfig (template.py; applied with
    -- use_legacy, checked by _check_moe_config in
    -- mindformers/modules/transformer/moe.py)
    ["parallel_config.expert_parallel"] = { type = "int", min = 1 },
    ["moe_config.expert_num"] = { type = "int", min = 1 },
    ["moe_config.num_experts_chosen"] = { type = "int", min = 1 },
    -- capacity_factor: > 0 tokens over capacity dropped, <= 0 dropless
    -- (TopkRouterV2, moe.py:1630); read by MoEV2 only (use_gmm False)
    ["moe_config.capacity_factor"] = { type = "float", constraint = "<= 0: dropless" },
    -- MoEV2 takes TopkRouterV2 only (moe.py:685; MoEConfig default TopkRouterV1)
    ["moe_config.routing_policy"] = { type = "string", values = { TopkRouterV2 = true } },
    ["moe_config.shared_expert_num"] = { type = "int", min = 0 },
    ["moe_config.use_gmm"] = { type = "bool" },
    ["moe_config.use_allgather_dispatcher"] = { type = "bool" },
    -- the router keys MoEV2's TopkRouterV2 (moe.py:1522-1567) and MoEV3
    -- (moev3.py:225-245) read, with MoEConfig's defaults (moe.py:131):
    -- use_gating_sigmoid (default False: softmax), norm_topk_prob (default
    -- True: the top-k weights divided by their sum + 1e-9 when
    -- num_experts_chosen > 1), routed_scaling_factor (default 1.0: the
    -- weights multiplied by it); topk_method, n_group, topk_group
    -- (group-limited routing, TopkRouterV2 only: a group scored by its max
    -- (group_limited_greedy) or its top-2 sum (noaux_tc), the top
    -- topk_group groups kept, the others' scores set to 0)
    ["moe_config.use_gating_sigmoid"] = { type = "bool" },
    ["moe_config.norm_topk_prob"] = { type = "bool" },
    ["moe_config.routed_scaling_factor"] = { type = "float", constraint = "> 0 (default 1.0)" },
    ["moe_config.topk_method"] = { type = "string",
      values = { greedy = true, group_limited_greedy = true, noaux_tc = true } },
    ["moe_config.n_group"] = { type = "int", min = 1, constraint = "divides expert_num" },
    ["moe_config.topk_group"] = { type = "int", min = 1, constraint = "<= n_group" },
    -- use_legacy False (apsearch.launch.mindspore_mcore): the config
    -- classes of models/qwen3, qwen3_moe, deepseek3 (Hugging Face names)
    -- and the TransformerConfig fields
    -- parallel_core/transformer_config_utils.py COMMON_CONFIG_MAPPING maps
    -- them to; LayerSetting (parallel_core/training_graph/transformer/
    -- utils.py) reads select_recompute from model_config only
    ["model.model_config.model_type"] = { type = "string",
      values = { qwen3 = true, qwen3_moe = true, deepseek_v3 = true } },
    ["model.model_config.architectures"] = { type = "strings",
      values = { Qwen3ForCausalLM = true, Qwen3MoeForCausalLM = true, DeepseekV3ForCausalLM = true } },
    ["model.model_config.num_hidden_layers"] = { type = "int", min = 1 },
    ["model.model_config.num_attention_heads"] = { type = "int", min = 1 },
    ["model.model_config.num_key_value_heads"] = { type = "int", min = 1 },
    ["model.model_config.head_dim"] = { type = "int", min = 1 },
    ["model.model_config.qk_layernorm"] = { type = "bool" },
    ["model.model_config.hidden_act"] = { type = "string", values = { swiglu = true, silu = true } },
    ["model.model_config.max_position_embeddings"] = { type = "int", min = 1 },
    ["model.model_config.attention_bias"] = { type = "bool" },
    ["model.model_config.untie_embeddings_and_output_weights"] = { type = "bool" },
    ["model.model_config.rope_theta"] = { type = "float", min = 0 },
    ["model.model_config.rope_scaling.type"] = { type = "string", values = { yarn = true } },
    ["model.model_config.rope_scaling.factor"] = { type = "float", min = 0 },
    ["model.model_config.rope_scaling.original_max_position_embeddings"] = { type = "int", min = 1 },
    ["model.model_config.rope_scaling.beta_fast"] = { type = "float", min = 0 },
    ["model.model_config.rope_scaling.beta_slow"] = { type = "float", min = 0 },
    ["model.model_config.rope_scaling.mscale"] = { type = "float", min = 0 },
    ["model.model_config.rope_scaling.mscale_all_dim"] = { type = "float", constraint = ">= 0" },
    ["model.model_config.attention_dropout"] = { type = "float", constraint = "[0, 1)" },
    ["model.model_config.hidden_dropout"] = { type = "float", constraint = "[0, 1)" },
    ["model.model_config.select_recompute"] = { type = "patterns" },
    ["model.model_config.q_lora_rank"] = { type = "int", min = 1, null = true },
    ["model.model_config.kv_lora_rank"] = { type = "int", min = 1 },
    ["model.model_config.qk_nope_head_dim"] = { type = "int", min = 1 },
    ["model.model_config.qk_rope_head_dim"] = { type = "int", min = 1 },
    ["model.model_config.v_head_dim"] = { type = "int", min = 1 },
    ["model.model_config.num_nextn_predict_layers"] = { type = "int", min = 0 },
    ["model.model_config.num_experts"] = { type = "int", min = 1 },
    ["model.model_config.n_routed_experts"] = { type = "int", min = 1 },
    ["model.model_config.num_experts_per_tok"] = { type = "int", min = 1 },
    ["model.model_config.moe_intermediate_size"] = { type = "int", min = 1 },
    ["model.model_config.moe_grouped_gemm"] = { type = "bool" },
    ["model.model_config.n_shared_experts"] = { type = "int", min = 0 },
    ["model.model_config.first_k_dense_replace"] = { type = "int", min = 0 },
    ["model.model_config.moe_layer_freq"] = { type = "int", min = 1 },
    ["model.model_config.scoring_func"] = { type = "string", values = { sigmoid = true, softmax = true } },
    ["model.model_config.moe_router_enable_expert_bias"] = { type = "bool", constraint = "sigmoid scores" },
    ["model.model_config.norm_topk_prob"] = { type = "bool" },
    ["model.model_config.moe_router_pre_softmax"] = { type = "bool", constraint = "True with top-1 softmax" },
    ["model.model_config.routed_scaling_factor"] = { type = "float", min = 0 },
    ["model.model_config.aux_loss_types"] = { type = "strings", values = { expert = true } },
    ["model.model_config.aux_loss_factors"] = { type = "floats" },
  },
}

--- One-line description of an option list's source, for file headers.
-- @tparam table o one of M.megatron, M.torchtitan, M.mindformers, M.torchrun
-- @treturn string
function M.cite(o)
  local s = o.source
  return s.repo .. " " .. s.path .. (s.commit and (" @ " .. s.commit) or "")
end

return M
