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
-- Types: bool, int (>= min), string (one of values), offset (int, list of
-- ints, list of lists of ints), layers (bool or list of layer counts, or of
-- lists), patterns (bool or list of regular expressions over cell names).
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
    ["model.model_config.compute_dtype"] = { type = "string", values = { bfloat16 = true, float16 = true } },
    ["model.model_config.use_flash_attention"] = { type = "bool" },
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
