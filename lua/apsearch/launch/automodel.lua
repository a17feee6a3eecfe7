--- NeMo AutoModel recipe YAML for one strategy (`rank<N>_automodel.yaml`),
-- written as AutoModel's own recipe YAMLs are (examples/llm_benchmark/
-- qwen/qwen3_moe_30b_te_deepep.yaml, examples/llm_pretrain/
-- llama3_70b_pretrain.yaml): recipe, step_scheduler, distributed,
-- model (from_config over the estimate's Hugging Face config), loss_fn,
-- dataset, optimizer.  Targets NVIDIA-NeMo/Automodel 36044ad3 (the commit
-- the `automodel` profile models, src/core/profile.c).  Keys and where
-- AutoModel reads them: M.keys.
--
-- Mapping (apsearch strategy field -> AutoModel key):
--
-- * dp_degree x fsdp_degree -> distributed.dp_size; HSDP (both > 1) ->
--   dp_replicate_size = dp_degree (mesh_utils.py _create_fsdp2_device_mesh:
--   dp_shard = dp_size / dp_replicate_size); plain DDP (fsdp_degree 1, no
--   TP / PP / CP / EP) -> strategy ddp; DDP replicas with CP NOT
--   EXPRESSIBLE (FSDP2 needs dp_replicate_size < dp_size, l.310-314)
-- * tp_degree -> tp_size, sequence_parallel; cp_degree -> cp_size;
--   ep_degree -> ep_size (EP over dp x cp x tp, ep_shard the rest)
-- * pp_degree, vpp_degree -> pp_size, pipeline.pp_schedule
--   (torch.distributed.pipelining names: 1F1B, Interleaved1F1B, ...),
--   pipeline.layers_per_stage = L / (pp x vpp) (calculate_virtual_stages:
--   ceil(L / layers_per_stage) stages); pp_microbatch_size =
--   micro_batch_size and step_scheduler.local_batch_size = micro_batch_size
--   x micro_batch_num, so one schedule runs every micro-batch of the step
--   as the estimate does (train_ft.py: pp_batch_size = local_batch_size),
--   or training.local_batch_size: passes of that many sequences, each one
--   schedule, as the estimate prices them
-- * micro_batch_size -> step_scheduler.local_batch_size (no PP; gradient
--   accumulation = global_batch_size / (local_batch_size x dp_size),
--   step_scheduler.py:119)
-- * layer_recompute: full -> activation_checkpointing true (every block),
--   selective -> "selective" (TorchTitan-style op SAC); a partial full
--   recompute NOT EXPRESSIBLE
-- * reshard_after_forward false -> FSDP2Config.reshard_after_forward false;
--   true -> null (AutoModel's heuristic: reshard all but the last layer);
--   with EP, distributed.moe.reshard_after_forward the estimate's (the MoE
--   parallelizer's, which the null leaves in force)
-- * moe_token_dispatcher flex -> model.backend.dispatcher deepep / hybridep
--   (training.moe_flex_dispatcher_backend), allgather -> torch
-- * precision bf16 -> mp_policy bf16 / fp32 reduce over fp32 weights
--   (model.torch_dtype float32: from_config's "auto" is bf16, auto_model.py
--   :846); fp8 / mxfp8 -> model.backend.te_fp8.recipe current / mxfp8
-- * optimizer adamw / adam / sgd -> torch.optim.AdamW / Adam / SGD;
--   loss MaskedCrossEntropy (fp32_upcast true, the profile's 12 B/logit)
-- @module apsearch.launch.automodel
local launch_util = require "apsearch.launch"
local defaults = require "apsearch.defaults"

local M = {}

--- The commit the file is written for.
M.COMMIT = "36044ad3d"
--- The config class AutoModel's Kimi Linear recipes name (a published
-- Kimi Linear config.json says kimi_linear, AutoModel's Kimi K3 type).
M.KIMI_LINEAR_CONFIG = "nemo_automodel.components.models.kimi_linear.config.KimiLinear48BConfig.from_pretrained"

--- Keys written, with the AutoModel file reading them (paths under
-- nemo_automodel/ at M.COMMIT).
M.keys = {
  recipe = "cli/app.py (recipe class by name)",
  ["benchmark.warmup_steps"] = "recipes/llm/benchmark.py",
  ["benchmark.peak_tflops"] = "recipes/llm/benchmark.py",
  ["benchmark.nsys_start"] = "recipes/llm/benchmark.py",
  ["benchmark.nsys_end"] = "recipes/llm/benchmark.py",
  ["benchmark.nsys_ranks"] = "recipes/llm/benchmark.py",
  ["benchmark.num_nodes"] = "recipes/llm/benchmark.py",
  ["step_scheduler.global_batch_size"] = "components/training/step_scheduler.py",
  ["step_scheduler.local_batch_size"] = "components/training/step_scheduler.py",
  ["step_scheduler.max_steps"] = "components/training/step_scheduler.py",
  ["step_scheduler.num_epochs"] = "components/training/step_scheduler.py",
  ["step_scheduler.ckpt_every_steps"] = "components/training/step_scheduler.py",
  ["step_scheduler.val_every_steps"] = "components/training/step_scheduler.py",
  ["dist_env.backend"] = "components/distributed/init_utils.py",
  ["dist_env.timeout_minutes"] = "recipes/_dist_utils.py",
  ["distributed.strategy"] = "recipes/_dist_utils.py parse_distributed_section",
  ["distributed.dp_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.dp_replicate_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.tp_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.cp_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.pp_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.ep_size"] = "components/distributed/mesh.py ParallelismSizes",
  ["distributed.sequence_parallel"] = "components/distributed/config.py FSDP2Config",
  ["distributed.activation_checkpointing"] = "recipes/_dist_utils.py _normalize_activation_checkpointing",
  ["distributed.defer_fsdp_grad_sync"] = "components/distributed/config.py FSDP2Config",
  ["distributed.reshard_after_forward"] = "components/distributed/config.py FSDP2Config",
  ["distributed.mp_policy._target_"] = "recipes/_dist_utils.py (mp_policy)",
  ["distributed.mp_policy.param_dtype"] = "torch MixedPrecisionPolicy",
  ["distributed.mp_policy.reduce_dtype"] = "torch MixedPrecisionPolicy",
  ["distributed.mp_policy.output_dtype"] = "torch MixedPrecisionPolicy",
  ["distributed.mp_policy.cast_forward_inputs"] = "torch MixedPrecisionPolicy",
  ["distributed.pipeline.pp_schedule"] = "components/distributed/pipelining/config.py PipelineConfig",
  ["distributed.pipeline.pp_microbatch_size"] = "components/distributed/pipelining/config.py PipelineConfig",
  ["distributed.pipeline.layers_per_stage"] = "components/distributed/pipelining/config.py PipelineConfig",
  ["distributed.pipeline.round_virtual_stages_to_pp_multiple"] =
    "components/distributed/pipelining/config.py PipelineConfig",
  ["distributed.pipeline.scale_grads_in_schedule"] = "components/distributed/pipelining/config.py PipelineConfig",
  ["distributed.moe.reshard_after_forward"] = "components/distributed/config.py MoEParallelizerConfig",
  ["distributed.moe.ignore_router_for_ac"] = "components/distributed/config.py MoEParallelizerConfig",
  ["model._target_"] = "_transformers/auto_model.py NeMoAutoModelForCausalLM.from_config",
  ["model.config._target_"] = "transformers AutoConfig.from_pretrained",
  ["model.config.pretrained_model_name_or_path"] = "transformers AutoConfig.from_pretrained",
  ["model.config.num_hidden_layers"] = "transformers PretrainedConfig kwargs",
  ["model.config.hidden_size"] = "transformers PretrainedConfig kwargs",
  ["model.config.num_attention_heads"] = "transformers PretrainedConfig kwargs",
  ["model.config.num_key_value_heads"] = "transformers PretrainedConfig kwargs",
  ["model.config.vocab_size"] = "transformers PretrainedConfig kwargs",
  ["model.torch_dtype"] = "_transformers/auto_model.py from_config",
  ["model.trust_remote_code"] = "_transformers/auto_model.py from_config",
  ["model.attn_implementation"] = "_transformers/auto_model.py from_config (default kernel_patches.py " ..
    "DEFAULT_ATTN_IMPLEMENTATION)",
  ["model.backend._target_"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.attn"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.linear"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.rms_norm"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.rope_fusion"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.experts"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.dispatcher"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.fake_balanced_gate"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.enable_fsdp_optimizations"] = "components/models/common/utils.py BackendConfig",
  ["model.backend.te_fp8.recipe"] = "components/models/common/utils.py TEFp8Config",
  ["checkpoint.enabled"] = "components/checkpoint/checkpointing.py",
  ["loss_fn._target_"] = "components/loss/masked_ce.py MaskedCrossEntropy",
  ["loss_fn.fp32_upcast"] = "components/loss/masked_ce.py MaskedCrossEntropy",
  ["dataset._target_"] = "components/datasets/llm/mock_iterable_dataset.py",
  ["dataset.seq_len"] = "components/datasets/llm/mock_iterable_dataset.py",
  ["dataset.vocab_size"] = "components/datasets/llm/mock_iterable_dataset.py",
  ["dataset.num_samples"] = "components/datasets/llm/mock_iterable_dataset.py",
  ["dataloader._target_"] = "recipes/_typed_config.py (dataloader)",
  ["dataloader.batch_size"] = "recipes/_typed_config.py (dataloader)",
  ["dataloader.num_workers"] = "recipes/_typed_config.py (dataloader)",
  ["optimizer._target_"] = "components/optim/optimizer.py",
  ["optimizer.lr"] = "torch.optim",
  ["optimizer.betas"] = "torch.optim",
  ["optimizer.eps"] = "torch.optim",
  ["optimizer.weight_decay"] = "torch.optim",
  ["optimizer.momentum"] = "torch.optim",
  ["optimizer.foreach"] = "torch.optim",
}

--- Hugging Face ids of the bundled model configs (examples/models/
-- README.md: the Hub's config.json of the model each is named after),
-- for the comment next to the config path.
M.hf_ids = {
  ["llama-3.1-8b"] = "meta-llama/Llama-3.1-8B", ["llama-3.1-70b"] = "meta-llama/Llama-3.1-70B",
  ["llama-3.1-405b"] = "meta-llama/Llama-3.1-405B", ["qwen3-30b-a3b"] = "Qwen/Qwen3-30B-A3B",
  ["qwen3-235b-a22b"] = "Qwen/Qwen3-235B-A22B", ["qwen2.5-7b"] = "Qwen/Qwen2.5-7B",
  ["qwen2.5-72b"] = "Qwen/Qwen2.5-72B", ["deepseek-v3"] = "deepseek-ai/DeepSeek-V3",
  ["mixtral-8x7b"] = "mistralai/Mixtral-8x7B-v0.1", ["gpt-oss-20b"] = "openai/gpt-oss-20b",
  ["lfm2-1.2b"] = "LiquidAI/LFM2-1.2B",
  ["gpt-oss-120b"] = "openai/gpt-oss-120b", ["mistral-7b-v0.1"] = "mistralai/Mistral-7B-v0.1",
}

local yaml_float = require("apsearch.launch.mindspore").yaml_float

local function yaml_value(v)
  if v == nil or v == "null" then return "null" end
  if type(v) == "boolean" then return v and "true" or "false" end
  if math.type(v) == "float" then return yaml_float(v) end
  if type(v) == "string" then
    if v:match("^[%w_%.%-/]+$") and not v:match("^[%d%.%-]") and v ~= "true" and v ~= "false"
      and v ~= "null" and v ~= "yes" and v ~= "no" and v ~= "on" and v ~= "off" then
      return v
    end
    return '"' .. v:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"'
  end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = yaml_value(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

local NE = "NOT EXPRESSIBLE in AutoModel"

--- The pipeline schedule name torch.distributed.pipelining's
-- get_schedule_class takes (case-insensitive), as AutoModel passes
-- pipeline.pp_schedule on (pipelining/functional.py build_pipeline_schedule).
-- @tparam table r the strategy
-- @tparam integer vpp model chunks per rank
-- @treturn string
function M.schedule(r, vpp)
  return require("apsearch.launch.torchtitan").schedule_class(r, vpp)
end

--- layers_per_stage giving S = pp x vpp stages of L layers as the estimate
-- split them (calculate_virtual_stages: ceil(L / lps) stages, then
-- generate_hf_model_fqn_per_model_part: L // S each, the first L mod S
-- one more, the split the core's `even` rule makes for automodel).
-- @treturn integer|nil
function M.layers_per_stage(L, S)
  for lps = 1, L do
    if (L + lps - 1) // lps == S then return lps end
  end
  return nil
end

--- Where no layers_per_stage gives S stages, the one whose stage count
-- calculate_virtual_stages rounds to S, a multiple of pp, with
-- round_virtual_stages_to_pp_multiple "up" or "down" (functional.py
-- l.198-214 @ 36044ad3; the split of the S stages is the same:
-- generate_hf_model_fqn_per_model_part takes S).
-- @treturn integer|nil layers_per_stage
-- @treturn string|nil "up" or "down"
function M.rounded_layers_per_stage(L, S, pp)
  if S % pp ~= 0 then return nil end
  for lps = 1, L do
    local v = (L + lps - 1) // lps
    if v % pp ~= 0 then
      if v + pp - v % pp == S then return lps, "up" end
      if v - v % pp == S then return lps, "down" end
    end
  end
  return nil
end

-- The degrees and batch the sections read, from the launch context.
local function layout_of(c)
  local r, m, tr = c.rec, c.model, c.training
  local g = { r = r, m = m, tr = tr, c = c }
  g.tp, g.pp, g.cp, g.vpp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1, r.vpp_degree or 1
  g.R, g.Sd = r.dp_degree or 1, r.fsdp_degree or 1
  g.ep = (m.num_experts or 0) > 0 and (r.ep_degree or 1) or 1
  g.L = m.num_layers or 0
  g.mbs = r.micro_batch_size or 1
  g.mbn = r.micro_batch_num or 0
  if g.mbn < 1 then g.mbn = math.max(1, (tr.global_batch_size or 1) // (g.R * g.Sd * g.mbs)) end
  g.dp = g.R * g.Sd
  g.ddp = g.Sd == 1 and g.cp == 1 and g.tp == 1 and g.pp == 1 and g.ep == 1 and g.R > 1
  return g
end

-- recipe, benchmark, step scheduler (the batch), dist_env
local function recipe_keys(w, g)
  local K, c, tr = w.K, g.c, g.tr
  K("recipe", "BenchmarkingRecipeForNextTokenPrediction",
    "timed steps on mock data; TrainFinetuneRecipeForNextTokenPrediction with your dataset to train")
  local devc = type(c.cluster.device) == "table" and c.cluster.device or {}
  local peak = (devc.peak_flops_bf16 or 0) / 1e12
  K("benchmark.warmup_steps", 10)
  K("benchmark.peak_tflops", peak > 0 and math.floor(peak + 0.5) or 989,
    "dense bf16 peak of " .. tostring(devc.name or "the device") .. ", for the MFU it logs")
  K("benchmark.nsys_start", -1)
  K("benchmark.nsys_end", -1)
  K("benchmark.nsys_ranks", {})
  K("benchmark.num_nodes", c.nodes)
  K("step_scheduler.global_batch_size", tr.global_batch_size)
  local per_pass = launch_util.pass_microbatches(tr, { pp_degree = g.pp, micro_batch_size = g.mbs }, g.mbn)
  if g.pp > 1 and per_pass < g.pp then
    -- an estimate of another framework's (fsdp2) whose schedule AutoModel refuses
    w.N(NE, ("micro-batches per pipeline schedule = %d < pp_size = %d: AutoModel asserts pp_batch_size // " ..
      "pp_microbatch_size >= pp_size (recipes/llm/train_ft.py:547)"):format(per_pass, g.pp))
  end
  if g.pp > 1 and per_pass < g.mbn then
    K("step_scheduler.local_batch_size", g.mbs * per_pass,
      ("one pipeline schedule of %d micro-batches of %d per pass, %d passes per step (pp_batch_size)")
        :format(per_pass, g.mbs, g.mbn // per_pass))
  elseif g.pp > 1 then
    K("step_scheduler.local_batch_size", g.mbs * g.mbn,
      ("one pipeline schedule of %d micro-batches of %d per step (pp_batch_size)"):format(g.mbn, g.mbs))
  else
    K("step_scheduler.local_batch_size", g.mbs,
      ("micro-batch; %d accumulated per step = global / (local x dp_size %d)"):format(g.mbn, g.dp))
  end
  K("step_scheduler.max_steps", 30)
  K("step_scheduler.num_epochs", 1)
  K("step_scheduler.ckpt_every_steps", 1000)
  K("step_scheduler.val_every_steps", 1000)
  K("dist_env.backend", "nccl")
  K("dist_env.timeout_minutes", 10)
end

-- distributed: the data-parallel strategy (DDP, FSDP2, HSDP) and sizes
local function mesh_keys(w, g)
  local K, N, r = w.K, w.N, g.r
  if g.ddp then
    K("distributed.strategy", "ddp", ("DDP over %d replicas"):format(g.R))
    if (r.zero_stage or 0) > 0 then
      N(NE, ("zero_stage = %d over DDP (strategies fsdp2, megatron_fsdp, ddp)"):format(r.zero_stage))
    end
  else
    K("distributed.strategy", "fsdp2")
    K("distributed.dp_size", g.dp, g.cp > 1 and ("FSDP shards over dp_shard x cp = %d"):format(g.Sd * g.cp) or nil)
    if g.R > 1 and g.Sd > 1 then
      K("distributed.dp_replicate_size", g.R, ("HSDP: %d replicas x %d shards"):format(g.R, g.Sd))
    elseif g.R > 1 then
      N(NE, ("DDP replicas (dp_degree = %d, fsdp_degree = 1) with %s: AutoModel's fsdp2 needs " ..
        "dp_replicate_size < dp_size (distributed/mesh_utils.py _create_fsdp2_device_mesh) and ddp refuses " ..
        "TP / PP / CP / EP; written as FSDP over the %d data-parallel ranks"):format(g.R,
        g.cp > 1 and ("cp_degree = " .. g.cp) or "model parallelism", g.R))
    end
    if (r.zero_stage or 0) > 0 and g.Sd == 1 and g.cp == 1 then
      N(NE, ("zero_stage = %d (AutoModel shards with FSDP2 only)"):format(r.zero_stage))
    end
    local cp_lacks = require("apsearch.launch").cp_sharding_lacks(r, g.tr.framework, "AutoModel")
    if cp_lacks then N(NE, cp_lacks) end
  end
  K("distributed.tp_size", g.tp)
  local kv_lacks = require("apsearch.launch").kv_heads_lacks(g.m, r, "AutoModel")
  if kv_lacks then N(NE, kv_lacks) end
  K("distributed.cp_size", g.cp)
  K("distributed.pp_size", g.pp)
  K("distributed.ep_size", g.ep)
  if not g.ddp then
    K("distributed.sequence_parallel", g.tp > 1 and r.sequence_parallel == true)
  end
end

-- distributed: activation checkpointing, FSDP settings, mixed precision
local function fsdp_keys(w, g)
  local K, N, r, c, tr = w.K, w.N, g.r, g.c, g.tr
  local rc = r.layer_recompute or "none"
  local ac = false
  if rc == "full" then
    ac = true
    local total, done = 0, 0
    for i, n in ipairs(c.layers) do total = total + n; done = done + (c.recompute[i] or 0) end
    if #c.layers > 0 and done < total then
      N(NE, ("full recompute of %d of %d layers: activation_checkpointing wraps every block; written as " ..
        "true (more recompute time, less activation memory than estimated)"):format(done, total))
    end
  elseif rc == "selective" then
    ac = "selective"
    -- what its policy cannot see runs again (src/core/opsac.c): the
    -- TransformerEngine attention of its own classes, and its MoE
    -- classes' TransformerEngine linears
    local own = (tr.framework or "megatron") == "automodel" and not tr.transformers_model
    if own and (tr.attn_backend or "te") == "te" then
      local moe = (g.m.num_experts or 0) > 0
      N("NOTE", "selective checkpointing with backend.attn te: TransformerEngine's attention" ..
        (moe and " and linears are not PyTorch ops" or " is not a PyTorch op") .. " AutoModel's policy sees, " ..
        "so " .. (moe and "they keep nothing and run" or "it keeps nothing and runs") .. " again in the " ..
        "backward, as estimated (attn sdpa or flex is saved: --set training.attn_backend=sdpa)")
    end
  end
  K("distributed.activation_checkpointing", ac,
    rc == "selective" and "TorchTitan-style op SAC (distributed/activation_checkpointing.py)" or nil)
  if g.ddp then return end
  -- deferred as the automodel profile defers; an estimate of another
  -- framework (TorchTitan's fsdp2) reduce-scatters every micro-batch
  local defer = tr.defer_fsdp_grad_sync
  if defer == nil then defer = tr.framework == nil or tr.framework == "automodel" end
  if defer == false then
    K("distributed.defer_fsdp_grad_sync", false, "gradients reduce-scattered every micro-batch, as estimated")
  else
    K("distributed.defer_fsdp_grad_sync", true, g.pp > 1 and
      "gradients reduce-scattered at each pipeline schedule's last backward, as estimated" or
      "gradients reduce-scattered once per step, as estimated")
  end
  if g.Sd > 1 or g.cp > 1 then
    if r.reshard_after_forward == false then
      K("distributed.reshard_after_forward", false, "parameters stay gathered after the forward")
    else
      K("distributed.reshard_after_forward", "null", "AutoModel's: reshard all but the last layer")
    end
  end
  local pdt = tr.precision == "fp16" and "float16" or "bfloat16"
  K("distributed.mp_policy._target_", "torch.distributed.fsdp.MixedPrecisionPolicy")
  K("distributed.mp_policy.param_dtype", pdt)
  K("distributed.mp_policy.reduce_dtype", "float32")
  K("distributed.mp_policy.output_dtype", pdt)
  K("distributed.mp_policy.cast_forward_inputs", true)
end

-- distributed.pipeline (the stages AutoModel builds) and distributed.moe
local function pipeline_keys(w, g)
  local K, N, r, L = w.K, w.N, g.r, g.L
  if g.pp > 1 then
    local S = g.pp * g.vpp
    K("distributed.pipeline.pp_schedule", M.schedule(r, g.vpp))
    local group = launch_util.group_size_note(r)
    if group then N(NE, group) end
    K("distributed.pipeline.pp_microbatch_size", g.mbs)
    local lps = M.layers_per_stage(L, S)
    local rlps, round = M.rounded_layers_per_stage(L, S, g.pp)
    if lps then
      K("distributed.pipeline.layers_per_stage", lps, L % S == 0
        and ("%d stages of %d layers"):format(S, L // S)
        or ("%d stages: %d // %d layers each, the first %d one more"):format(S, L, S, L % S))
    elseif rlps then
      K("distributed.pipeline.layers_per_stage", rlps, ("ceil(%d / %d) = %d stages, rounded %s to %d: " ..
        "%d // %d layers each, the first %d one more"):format(L, rlps, (L + rlps - 1) // rlps, round, S, L, S, L % S))
      K("distributed.pipeline.round_virtual_stages_to_pp_multiple", round)
    else
      N(NE, ("%d layers over %d pipeline stages: no layers_per_stage gives %d stages " ..
        "(calculate_virtual_stages)"):format(L, S, S))
    end
    K("distributed.pipeline.scale_grads_in_schedule", false)
    -- the split AutoModel builds is L // S per stage, the first L mod S one more
    local want = launch_util.estimate_chunks(g.c)
    local base, extra = L // S, L % S
    for j = 1, S do
      local got = base + ((j <= extra) and 1 or 0)
      if want[j] and want[j] ~= got then
        N(NE, ("the estimate's layers per stage %s: AutoModel splits %d layers %d // %d per stage, the " ..
          "first %d one more (pipelining/functional.py generate_hf_model_fqn_per_model_part)"):format(
          table.concat(want, ":"), L, L, S, extra))
        break
      end
    end
  end
  if g.ep > 1 then
    -- the MoE parallelizer reshards the blocks and their experts as this
    -- says when distributed.reshard_after_forward is null (moe/
    -- parallelizer.py apply_fsdp l.752-789, _transformers/infrastructure.py
    -- l.389-411 @ 36044ad3): the estimate's reshard_after_forward
    K("distributed.moe.reshard_after_forward", r.reshard_after_forward ~= false)
    K("distributed.moe.ignore_router_for_ac", true)
  end
end

-- model: the config the estimate read and its shape, fp32 weights
local function model_keys(w, g)
  local K, N, m, c = w.K, w.N, g.m, g.c
  local name = tostring(m.name or "")
  local hf = M.hf_ids[name:lower()]
  local src = c.model_source
  K("model._target_", "nemo_automodel.NeMoAutoModelForCausalLM.from_config", "random init (pretraining)")
  if m.linear_attention == "kda" and not m.attn_res_block_size then
    -- Kimi Linear's published config says model_type kimi_linear, which
    -- AutoModel leaves to Kimi K3's text model: its recipes name the 48B
    -- A3B config class (examples/llm_finetune/kimi/kimi_linear_48b_a3b_
    -- hellaswag.yaml, components/models/kimi_linear/config.py)
    K("model.config._target_", M.KIMI_LINEAR_CONFIG, "KimiLinear48BConfig: the model with KDA layers estimated")
  else
    K("model.config._target_", "transformers.AutoConfig.from_pretrained")
  end
  if src and src ~= "" then
    K("model.config.pretrained_model_name_or_path", src, hf and ("the config.json of " .. hf) or nil)
  elseif hf then
    K("model.config.pretrained_model_name_or_path", hf)
  else
    N("NOTE", "the model's Hugging Face config (" .. name .. " has no config file or known Hub id): " ..
      "set model.config.pretrained_model_name_or_path")
    K("model.config.pretrained_model_name_or_path", "SET-ME")
  end
  -- the shape the estimate assumed (kwargs override the config's own)
  K("model.config.num_hidden_layers", g.L)
  K("model.config.hidden_size", m.hidden_size)
  K("model.config.num_attention_heads", m.num_attention_heads)
  K("model.config.num_key_value_heads", m.num_query_groups or m.num_attention_heads)
  K("model.config.vocab_size", m.vocab_size)
  if g.tr.bf16_weights then
    K("model.torch_dtype", "bfloat16", "bf16 weights, gradients and Adam moments, as estimated (bf16_weights)")
  else
    K("model.torch_dtype", "float32", "fp32 master weights, bf16 compute (mp_policy), as estimated")
  end
  K("model.trust_remote_code", true)
end

-- model.backend: attention, linears, norms, experts and dispatcher, fp8
local function backend_keys(w, g)
  local K, N, m, r, tr = w.K, w.N, g.m, g.r, g.tr
  K("model.backend._target_", "nemo_automodel.components.models.common.BackendConfig")
  -- the kernel the estimate priced (apsearch.stacks attention_backend)
  K("model.backend.attn", tr.flash_attention == false and "sdpa" or require("apsearch.stacks").attention_backend(tr))
  if tr.flash_attention == false then
    N(NE, "attention without a fused kernel (flash_attention = false): AutoModel's attention backends " ..
      "are all fused; written as sdpa")
  end
  K("model.backend.linear", "te")
  if m.msa_layers then
    -- the estimate's MiniMax-M3 is AutoModel 00affc66's (components/
    -- models/minimax_m3_vl/layers.py, msa.py), after the commit these keys
    -- target
    N(NE, ("MiniMax-M3's block-sparse attention on %d layers: AutoModel %s has no MiniMax-M3 model; from " ..
      "00affc66 (components/models/minimax_m3_vl) backend.sparse_attn 'msa' runs it on SM100 GPUs only, with " ..
      "context parallelism 1 and those blocks never checkpointed (MiniMaxM3MSAAttention), and 'generic' masks a " ..
      "dense attention (no FLOPs saved)%s"):format(m.msa_layers, M.COMMIT,
      (r.cp_degree or 1) > 1 and ("; this strategy's cp_degree = " .. r.cp_degree .. " rules 'msa' out") or ""))
  end
  -- what the estimate priced, said only where it is AutoModel's own (an
  -- estimate of another framework prices that framework's kernels) and
  -- the model has RMSNorms
  local own = (tr.framework or "megatron") == "automodel" and (m.norm or "rmsnorm") == "rmsnorm"
  local norm = tr.rms_norm_backend or "torch_fp32"
  K("model.backend.rms_norm", norm, own and (norm == "te" and "TransformerEngine's fused RMSNorm, as estimated"
    or "eager norms, as estimated") or nil)
  -- eager RoPE, as the automodel profile prices it (AutoModel 36044ad3
  -- forces rope_fusion off: BackendConfig.__post_init__, issue #3027)
  K("model.backend.rope_fusion", false)
  if (m.num_experts or 0) > 0 then
    K("model.backend.experts", "torch_mm", "torch._grouped_mm")
    local d = r.moe_token_dispatcher or "flex"
    if d == "flex" then
      K("model.backend.dispatcher", tr.moe_flex_dispatcher_backend == "hybridep" and "hybridep" or "deepep")
    elseif d == "allgather" then
      K("model.backend.dispatcher", "torch", "DTensor all-gather / reduce-scatter")
    else
      N(NE, "moe_token_dispatcher = " .. tostring(d) .. " (AutoModel: deepep, hybridep, torch)")
    end
    K("model.backend.fake_balanced_gate", false, "true for a routing-balanced benchmark, as AutoModel's own")
    K("model.backend.enable_fsdp_optimizations", false)
  end
  if tr.precision == "fp8" then
    K("model.backend.te_fp8.recipe", "current", "TE Float8CurrentScaling linears")
  elseif tr.precision == "mxfp8" then
    K("model.backend.te_fp8.recipe", "mxfp8", "TE MXFP8BlockScaling linears")
  elseif tr.precision == "nvfp4" then
    N(NE, "nvfp4 (TEFp8Config recipes: current, block, mxfp8); written as bf16")
  elseif tr.precision == "fp16" then
    N("APPROXIMATE", "fp16: mp_policy float16 is written; AutoModel's recipes run no loss scaler")
  end
end

--- The architecture classes NeMo AutoModel builds itself
-- (nemo_automodel/_transformers/registry.py MODEL_ARCH_MAPPING @ 36044ad3,
-- keyed by a config's architectures[0]; model_init.py
-- _resolve_custom_model_cls_for_config). Any other class is built by
-- transformers (the fallback of model_init.py __init_model).
M.OWN_ARCHITECTURES = {}
for a in ([[BaichuanForCausalLM BailingMoeV2ForCausalLM DeepseekV3ForCausalLM DeepseekV32ForCausalLM
  DeepseekV4ForCausalLM Ernie4_5_MoeForCausalLM Glm4MoeForCausalLM Glm4MoeLiteForCausalLM GlmMoeDsaForCausalLM
  Gemma4ForConditionalGeneration Gemma4UnifiedForConditionalGeneration GptOssForCausalLM HYV3ForCausalLM
  KimiK25ForConditionalGeneration KimiK25VLForConditionalGeneration KimiK3ForCausalLM KimiK3ForConditionalGeneration
  KimiLinear48BForCausalLM KimiVLForConditionalGeneration LagunaForCausalLM LlamaForCausalLM MiMoV2FlashForCausalLM
  MiniMaxM2ForCausalLM MiniMaxM3SparseForConditionalGeneration Ministral3ForCausalLM Mistral3ForConditionalGeneration
  Mistral4ForCausalLM MuseGlimmerForConditionalGeneration NemotronHForCausalLM Qwen2ForCausalLM Qwen3ForCausalLM
  Qwen3MoeForCausalLM Qwen3NextForCausalLM Qwen3VLForConditionalGeneration Qwen3VLMoeForConditionalGeneration
  Qwen3_5ForCausalLM Qwen3_5ForConditionalGeneration Qwen3_5MoeForCausalLM Qwen3_5MoeForConditionalGeneration
  Step3p5ForCausalLM Step3p7ForConditionalGeneration]]):gmatch("%S+") do
  M.OWN_ARCHITECTURES[a] = true
end

--- The architecture class the model's config file names (architectures[1]
-- of the file, or of DIR/config.json), or nil: no file, unreadable, or no
-- class named.
-- @tparam string|nil src the launch context's model_source
-- @treturn string|nil
function M.config_class(src)
  if type(src) ~= "string" or src == "" then return nil end
  local f = io.open(src .. "/config.json", "rb") or io.open(src, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local ok, cfg = pcall(require("cjson").decode, text or "")
  local a = ok and type(cfg) == "table" and type(cfg.architectures) == "table" and cfg.architectures[1]
  return type(a) == "string" and a or nil
end

--- True when AutoModel builds the model through transformers, not a model
-- of its own: LFM2 and MiniMax (defaults.TRANSFORMERS_MIXERS), or a
-- config file whose class is not in M.OWN_ARCHITECTURES -- but for Kimi
-- Delta Attention models, whose file names AutoModel's own config class
-- (M.KIMI_LINEAR_CONFIG) whatever class the config file names.
-- @tparam table m model
-- @tparam string|nil class the config file's class (M.config_class)
-- @treturn boolean
function M.transformers_built(m, class)
  if defaults.transformers_mixer(m) then return true end
  if m.linear_attention == "kda" then return false end
  return class ~= nil and not M.OWN_ARCHITECTURES[class]
end

-- A model AutoModel builds as transformers does: no model.backend, which
-- only its own models read (_init_model applies it when is_custom_model;
-- the fallback forwards the remaining kwargs to the transformers class,
-- whose constructor refuses it: model_init.py l.1326-1332, 1441-1458),
-- and the attention named as estimated (from_config's attn_implementation;
-- DEFAULT_ATTN_IMPLEMENTATION is FlashAttention-2 when flash-attn is
-- installed, kernel_patches.py l.71).
-- training.attn_backend (apsearch.stacks attention_backend) as
-- transformers' attn_implementation names the kernel
local HF_ATTENTION = { te = "te", sdpa = "flash_attention_2", flex = "flex_attention" }

local function hf_model_keys(w, g, class)
  local K, N, m, tr = w.K, w.N, g.m, g.tr
  -- no class named: LFM2's (M.transformers_built), else the one the
  -- config's model_type maps to
  local mixer = defaults.transformers_mixer(m)
  local want = mixer and mixer.classes[(m.num_experts or 0) > 0 and 2 or 1]
  if want and class and class ~= want then
    -- MiniMax-Text-01 / M1's own files name the remote code's class
    -- (MiniMaxText01ForCausalLM, MiniMaxM1ForCausalLM), which
    -- trust_remote_code builds: fp32 block states and a per-expert loop
    -- (modeling_minimax_m1.py), not transformers' class priced here
    N("NOT WRITTEN", ("transformers' %s as estimated: the config names %s, the checkpoint's remote code, which " ..
      "trust_remote_code builds instead (its own %s and experts, not priced); point " ..
      "model.config.pretrained_model_name_or_path at a config whose architectures name %s"):format(
      want, class, mixer.layers, want))
    class = want
  end
  class = class or want or "the config's transformers class"
  local kernel = require("apsearch.stacks").attention_backend(tr)
  if tr.flash_attention == false then
    K("model.attn_implementation", "eager", "transformers' unfused attention, as estimated")
  else
    -- training.attn_backend as transformers names it; "te" is AutoModel's
    -- own (TransformerEngine injected after init: _transformers/
    -- auto_model.py l.456-461 @ 36044ad3)
    local overridden = kernel == "flex" and g.cp > 1
    K("model.attn_implementation", HF_ATTENTION[kernel], (overridden and "the kernel estimated, which AutoModel " ..
      "replaces under CP (APPROXIMATE above)" or "as estimated") .. "; transformers builds " .. class ..
      " (no model.backend, which AutoModel's own models read)")
    -- under CP AutoModel sets a transformers model's attention to SDPA
    -- whatever the YAML says (_transformers/auto_model.py
    -- _apply_preload_overrides, cp_size > 1 @ 36044ad3)
    if overridden then
      N("APPROXIMATE", ("attn_implementation flex_attention with cp_size %d: AutoModel runs transformers' " ..
        "SDPA under context parallelism (FlashAttention-2's kernel); the estimate priced FlexAttention's rate")
        :format(g.cp))
    end
  end
  if g.ep > 1 then
    N(NE, "expert parallelism (ep_size " .. g.ep .. "): transformers' " .. class .. " is no " ..
      "MoEFSDPSyncMixin, which AutoModel's ep_size needs (_transformers/capabilities.py validate_for_mesh)")
  elseif (m.num_experts or 0) > 0 then
    N("APPROXIMATE", "transformers' " .. class .. " runs its own experts (torch._grouped_mm, transformers' " ..
      "default experts_implementation where the GPU has it): the estimate priced AutoModel's grouped GEMMs")
  end
  if tr.precision == "fp8" or tr.precision == "mxfp8" or tr.precision == "nvfp4" then
    N(NE, tr.precision .. " linears: model.backend.te_fp8 is read by AutoModel's own models only; written as bf16")
  end
end

-- checkpoint, loss, mock data, optimizer, and the settings with no key
local function training_keys(w, g)
  local K, N, m, tr = w.K, w.N, g.m, g.tr
  K("checkpoint.enabled", false)
  K("loss_fn._target_", "nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy")
  if tr.loss_fp32_upcast == false then
    K("loss_fn.fp32_upcast", false, "bf16 logits in the loss (6 B per logit, as estimated)")
  else
    K("loss_fn.fp32_upcast", true, "fp32 logits in the loss (12 B per logit, as estimated)")
  end
  K("dataset._target_", "nemo_automodel.components.datasets.llm.mock_iterable_dataset.MockIterableDataset")
  K("dataset.seq_len", tr.seq_length)
  K("dataset.vocab_size", m.vocab_size)
  K("dataset.num_samples", 100000)
  K("dataloader._target_", "torch.utils.data.DataLoader")
  K("dataloader.batch_size", "null", "the dataset yields batches")
  K("dataloader.num_workers", 0)
  local opt = tr.optimizer or "adamw"
  if opt == "sgd" then
    K("optimizer._target_", "torch.optim.SGD")
    K("optimizer.lr", 1.0e-4)
    K("optimizer.momentum", 0.9, "one fp32 momentum buffer, as estimated")
  else
    K("optimizer._target_", opt == "adam" and "torch.optim.Adam" or "torch.optim.AdamW",
      "fp32 exp_avg and exp_avg_sq")
    K("optimizer.lr", 1.0e-4)
    K("optimizer.betas", { 0.9, 0.95 })
    K("optimizer.eps", 1.0e-8)
    K("optimizer.weight_decay", opt == "adam" and 0 or 0.1)
    K("optimizer.foreach", true)
    if tr.exp_avg_bf16 then
      N(NE, "bf16 Adam moments (exp_avg_bf16): torch.optim keeps them in the parameters' fp32")
    end
  end
  if tr.torch_compile then N(NE, "torch_compile (the estimate compiles the model)") end
  if tr.cuda_graphs then N(NE, "CUDA graphs (cuda_graphs)") end
  if (tr.activation_offload_layers or 0) > 0 then
    N(NE, "activation offload to host (activation_offload_layers = " .. tr.activation_offload_layers .. ")")
  end
  if tr.offload_modules then
    N(NE, "Megatron-Core's fine-grained activation offload (offload_modules " .. tr.offload_modules .. ")")
  end
  if tr.tp_comm_overlap then N(NE, "TP communication overlapped with the matmuls (tp_comm_overlap)") end
  if tr.grad_reduce_in_fp32 == false then
    N(NE, "gradients reduced in bf16 (grad_reduce_in_fp32 = false); mp_policy.reduce_dtype float32 written")
  end
  if (tr.mtp_num_layers or 0) > 0 then
    N("NOT WRITTEN", ("training.mtp_num_layers = %d: the YAML trains without multi-token prediction"):format(
      tr.mtp_num_layers))
  end
  -- Megatron-Core's sync-free MoE (its HybridEP budget and paged stash)
  -- has no AutoModel counterpart
  if (tr.moe_expert_rank_capacity_factor or 0) > 0 then
    N(NE, ("Megatron's rank capacity factor (moe_expert_rank_capacity_factor = %g)"):format(
      tr.moe_expert_rank_capacity_factor))
  end
  if tr.moe_paged_stash then N(NE, "Megatron's paged stash of the experts' tensors (moe_paged_stash)") end
  if tr.cutedsl_fused_grouped_mlp then N(NE, "TransformerEngine's fused grouped MLP under Megatron-Core (cutedsl_fused_grouped_mlp)") end
  if tr.first_last_layers_bf16 then
    N(NE, "Megatron's first and last layers in bf16 (first_last_layers_bf16): TEFp8Config quantizes every layer")
  end
end

-- The file: the header, the run command, the notes, then the keys.
local function text_of(w, c)
  local r = c.rec
  local nodes = c.nodes
  local per = math.min(c.devices_per_node, c.devices_used)
  local out = {}
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = "# NeMo AutoModel recipe YAML, keys checked against NVIDIA-NeMo/Automodel " .. M.COMMIT
  out[#out + 1] = "# Run on each of the " .. nodes .. " node(s):"
  out[#out + 1] = "#   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nnodes " .. nodes ..
    " --nproc-per-node " .. per .. (nodes > 1 and " --node-rank $NODE_RANK --master-addr $MASTER_ADDR" ..
    " --master-port 29500" or "") .. " -m nemo_automodel.cli.app rank" .. r.rank .. "_automodel.yaml"
  out[#out + 1] = "# Data, tokenizer, checkpoints, learning rate and schedule are yours."
  for _, n in ipairs(w.notes) do out[#out + 1] = "# " .. n end
  launch_util.yaml_lines(w.tree, yaml_value, out)
  return table.concat(out, "\n") .. "\n"
end

--- Renders the YAML for a launch context (apsearch.launch.context).
-- @tparam table c context
-- @treturn string text
-- @treturn table notes (NOT EXPRESSIBLE / NOT WRITTEN / APPROXIMATE / NOTE)
function M.render(c)
  local w, g = launch_util.yaml_writer(M.keys, "automodel"), layout_of(c)
  if c.model.hybrid_layer_pattern then
    -- the core prices hybrid models for Megatron-LM only (hybrid.c
    -- aps_hybrid_refusal): no AutoModel estimate to point to
    w.N("NOTE", "the hybrid Mamba-2 layers (pattern " .. c.model.hybrid_layer_pattern:sub(1, 16) ..
      "...): AutoModel builds the model from its config, and apsearch prices hybrid models for " ..
      "Megatron-LM only: this YAML's time and memory are not estimated")
  elseif g.tr.framework ~= nil and launch_util.framework_note("automodel", g.tr) then
    w.N("NOTE", launch_util.framework_note("automodel", g.tr))
  end
  recipe_keys(w, g)
  mesh_keys(w, g)
  fsdp_keys(w, g)
  pipeline_keys(w, g)
  model_keys(w, g)
  -- an AutoModel estimate: its training.transformers_model (the policy
  -- sets it from the class unless it gave it), as the search read it;
  -- another framework's: the class
  local class = M.config_class(c.model_source)
  local built
  if g.tr.framework == "automodel" then built = g.tr.transformers_model == true
  else built = M.transformers_built(g.m, class) end
  if built then
    hf_model_keys(w, g, class)
  else
    if M.transformers_built(g.m, class) then
      -- training.transformers_model = false for a class the pinned
      -- AutoModel builds through transformers: said, not hidden
      w.N("NOTE", "training.transformers_model = false: AutoModel 36044ad3 has no " .. class .. " of its own and " ..
        "would pass model.backend to transformers' constructor, which refuses it; this file needs an AutoModel " ..
        "that builds " .. class .. " itself")
    end
    backend_keys(w, g)
  end
  training_keys(w, g)
  local drop = launch_util.dropout_lacks(g.tr, "this file sets no dropout (AutoModel's recipe has no dropout key: " ..
    "the model runs with its config's own attention_dropout, 0 in most released configs)")
  if drop then w.N(NE, drop) end
  return text_of(w, c), w.notes
end

return M
