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
    -- _add_training_args (--no-gradient-accumulation-fusion), TrainingConfig
    -- ckpt_format (megatron/training/config/training_config.py); _add_network_size_args
    "--no-gradient-accumulation-fusion", "--ckpt-format", "--window-size",
    -- _add_training_args
    "--micro-batch-size", "--global-batch-size", "--recompute-granularity",
    "--recompute-method", "--recompute-num-layers", "--sequence-parallel",
    "--optimizer", "--disable-bias-linear", "--add-qkv-bias",
    -- _add_network_size_args
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--group-query-attention", "--num-query-groups", "--kv-channels",
    "--max-position-embeddings", "--position-embedding-type",
    "--make-vocab-size-divisible-by", "--normalization", "--swiglu", "--qk-layernorm",
    "--untie-embeddings-and-output-weights",
    -- _add_data_args
    "--seq-length",
    -- _add_mixed_precision_args
    "--bf16", "--fp16",
    "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32",
    -- _add_distributed_args
    "--pipeline-model-parallel-layout",
    -- _add_training_args
    "--no-check-for-nan-in-loss-and-grad",
    -- _add_transformer_engine_args
    "--fp8-param-gather", "--fp4-param-gather",
    -- TransformerConfig fields (_add_network_size_args, ArgumentGroupFactory):
    -- fp8 (arg_names --fp8-format), fp8_recipe, fp4 (--fp4-format), fp4_recipe,
    -- account_for_*_in_pipeline_split, cuda_graph_impl; ModelParallelConfig:
    -- tp_comm_overlap, cpu_offloading_num_layers
    "--fp8-format", "--fp8-recipe", "--fp4-format", "--fp4-recipe",
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--cuda-graph-impl", "--tp-comm-overlap", "--cpu-offloading-num-layers",
    "--attention-dropout", "--hidden-dropout",
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
  -- TE's attention (transformer_engine.py TEDotProductAttention) takes each
  ["--cp-comm-type"] = { type = "string", values = set({ "p2p", "a2a", "allgather", "a2a+p2p" }) },
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
  ["--hidden-size"] = { type = "int", min = 1 },
  ["--ffn-hidden-size"] = { type = "int", min = 1 },
  ["--num-attention-heads"] = { type = "int", min = 1 },
  ["--num-query-groups"] = { type = "int", min = 1 },
  ["--kv-channels"] = { type = "int", min = 1 },
  ["--make-vocab-size-divisible-by"] = { type = "int", min = 1 },
  ["--normalization"] = { type = "string", values = set({ "LayerNorm", "RMSNorm" }) },
  ["--position-embedding-type"] = { type = "string",
    values = set({ "learned_absolute", "rope", "yarn", "mrope", "relative", "none" }) },
  ["--window-size"] = { type = "int_pair", constraint = "(left, right) tokens; -1 infinite" },
  ["--attention-dropout"] = { type = "number" }, ["--hidden-dropout"] = { type = "number" },
  ["--fp8-format"] = { type = "string", values = set({ "e4m3", "hybrid" }) },
  ["--fp8-recipe"] = { type = "string", values = set({ "tensorwise", "delayed", "mxfp8", "blockwise", "custom" }) },
  ["--fp4-format"] = { type = "string", values = set({ "e2m1" }) },
  ["--fp4-recipe"] = { type = "string", values = set({ "nvfp4", "custom" }) },
  ["--ckpt-format"] = { type = "string", values = set({ "torch", "torch_dist", "torch_dcp", "fsdp_dtensor" }),
    constraint = "--use-torch-fsdp2 needs torch_dist or torch_dcp" },
  ["--cuda-graph-impl"] = { type = "string", values = set({ "none", "local", "transformer_engine", "full_iteration" }) },
  ["--cpu-offloading-num-layers"] = { type = "int", min = 0, constraint = "< num-layers" },
  ["--optimizer"] = { type = "string", values = set({ "adam", "sgd" }) },
  ["--pipeline-model-parallel-layout"] = { type = "string" },
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

--- TorchTitan job config TOML: `[section] key` (dataclass fields).
M.torchtitan = {
  source = {
    repo = "pytorch/torchtitan", path = "torchtitan/config/job_config.py",
    commit = "000204a4a8bf3d0f31adc44fc29855fbb6ea13d8",
    note = "dataclasses Job, Model, Training, Parallelism, ActivationCheckpoint, Float8; " ..
      "converter names from torchtitan/components/quantization/float8.py and mx.py " ..
      "register_model_converter (same commit)",
  },
  sections = {
    job = set({ "description", "dump_folder" }),
    model = set({ "name", "flavor", "converters" }),
    training = set({ "local_batch_size", "global_batch_size", "seq_len",
      "mixed_precision_param", "mixed_precision_reduce", "compile" }),
    parallelism = set({ "data_parallel_replicate_degree", "data_parallel_shard_degree",
      "fsdp_reshard_after_forward", "tensor_parallel_degree", "disable_loss_parallel",
      "enable_async_tensor_parallel", "pipeline_parallel_degree",
      "pipeline_parallel_split_points", "pipeline_parallel_layers_per_stage",
      "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
      "context_parallel_degree", "context_parallel_rotate_method" }),
    activation_checkpoint = set({ "mode", "selective_ac_option" }),
    float8 = set({ "enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp" }),
  },
  values = {
    ["activation_checkpoint.mode"] = set({ "selective", "full", "none" }),
    ["parallelism.fsdp_reshard_after_forward"] = set({ "default", "always", "never" }),
    ["parallelism.context_parallel_rotate_method"] = set({ "allgather", "alltoall" }),
    ["training.mixed_precision_param"] = set({ "bfloat16", "float32" }),
  },
}

--- MindSpore Transformers (MindFormers) YAML keys, as dotted paths.
M.mindformers = {
  source = {
    repo = "mindspore-lab/mindformers",
    path = "mindformers/modules/transformer/transformer.py",
    commit = "b91ec772cd24ab944205c0539def557e4ad2fa0a",
    note = "TransformerOpParallelConfig.__init__ (parallel_config), TransformerRecomputeConfig " ..
      "(recompute_config); configs/general/llm_pretrain_dense_template.yaml @ " ..
      "10bbf6920956469f7f84d75b22ed1fea9bb4948f (model.model_config.offset, runner_config, " ..
      "parallel.*, micro_batch_interleave_num); research/llama3_1/llama3_1_70b/" ..
      "finetune_llama3_1_70b.yaml @ 0e67b43f701a07bc73c9af4321757f778b0e29d0 (model_config " ..
      "fields); docs/feature_cards/Offset_Recompute.md (r1.5.0: offset list, recompute " ..
      "list per stage, pp_interleave_num, parallel.pipeline_config); MindSpore " ..
      "set_auto_parallel_context (parallel_optimizer_config.optimizer_weight_shard_size); " ..
      "MindFormers configuration docs (runner_config.gradient_accumulation_steps)",
  },
  keys = set({
    "use_parallel",
    "parallel.parallel_mode", "parallel.enable_parallel_optimizer",
    "parallel.parallel_optimizer_config.optimizer_weight_shard_size",
    "parallel.pipeline_config.pipeline_interleave", "parallel.pipeline_config.pipeline_scheduler",
    "parallel_config.data_parallel", "parallel_config.model_parallel",
    "parallel_config.pipeline_stage", "parallel_config.context_parallel",
    "parallel_config.context_parallel_algo", "parallel_config.micro_batch_num",
    "parallel_config.use_seq_parallel", "parallel_config.vocab_emb_dp",
    "parallel_config.gradient_aggregation_group",
    "micro_batch_interleave_num",
    "recompute_config.recompute", "recompute_config.select_recompute",
    "recompute_config.parallel_optimizer_comm_recompute", "recompute_config.mp_comm_recompute",
    "recompute_config.recompute_slice_activation",
    "runner_config.batch_size", "runner_config.gradient_accumulation_steps",
    "model.model_config.offset", "model.model_config.pp_interleave_num",
    "model.model_config.seq_length", "model.model_config.num_layers",
    "model.model_config.hidden_size", "model.model_config.num_heads",
    "model.model_config.n_kv_heads", "model.model_config.vocab_size",
    "model.model_config.compute_dtype", "model.model_config.use_flash_attention",
  }),
}

--- One-line description of an option list's source, for file headers.
-- @tparam table o one of M.megatron, M.torchtitan, M.mindformers, M.torchrun
-- @treturn string
function M.cite(o)
  local s = o.source
  return s.repo .. " " .. s.path .. (s.commit and (" @ " .. s.commit) or "")
end

return M
