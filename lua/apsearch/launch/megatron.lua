--- Megatron-LM launch script for one strategy: a bash script that runs
-- `torchrun ... pretrain_gpt.py` with the parallelism, batch, recompute,
-- precision and model-shape flags (names from apsearch.launch.options,
-- read from megatron/training/arguments.py).  Data, tokenizer, checkpoint
-- and schedule flags are appended by the user (`"$@"`).
--
-- Mapping (apsearch strategy field -> flag):
--
-- * tp_degree -> --tensor-model-parallel-size; sequence_parallel ->
--   --sequence-parallel (tp > 1)
-- * pp_degree -> --pipeline-model-parallel-size; an uneven split whose
--   middle stages are equal -> --decoder-first/last-pipeline-num-layers;
--   chunks that differ (per-chunk stage_partition, pipeline_split
--   fill_last) -> --pipeline-model-parallel-layout;
--   vpp_degree v > 1 -> --num-layers-per-virtual-pipeline-stage L/(p v);
--   microbatch_group_size G (v > 1, G not 0 or p, Megatron's default) ->
--   --microbatch-group-size-per-virtual-pipeline-stage G
-- * cp_degree -> --context-parallel-size, cp_comm_type -> --cp-comm-type
--   (p2p | all_gather | a2a): Megatron passes the string to
--   TransformerEngine unchanged (megatron/core/extensions/
--   transformer_engine.py:2153 @ d98e8a64), whose attn_forward_func_with_cp
--   knows "p2p", "all_gather", "a2a" and "a2a+p2p" and raises on any other
--   (context_parallel.py:5096-5139 @ d0067d0d; the help's "allgather"
--   spelling would raise there)
-- * data parallel: zero_stage 1 -> --use-distributed-optimizer (with
--   --overlap-grad-reduce --overlap-param-gather unless training.dp_overlap
--   = 0); fsdp_degree > 1 or
--   zero_stage 3 -> --use-torch-fsdp2 (reshard_after_forward = false ->
--   --torch-fsdp2-no-reshard-after-forward; ZeRO-2 over plain data
--   parallelism is refused by the core, aps_check_framework); HSDP (dp > 1 and fsdp > 1) is NOT EXPRESSIBLE; with
--   training.fsdp_impl = "megatron_fsdp" instead --use-megatron-fsdp with
--   --data-parallel-sharding-strategy optim_grads_params (fsdp_degree > 1;
--   HSDP: --num-distributed-optimizer-instances dp_degree)
--   or optim_grads (zero_stage 2), --ckpt-format fsdp_dtensor
-- * layer_recompute: selective -> --recompute-granularity selective
--   (Megatron's default module, core_attn, is apsearch's selective), with
--   recompute_modules -> --recompute-modules (mla_up_proj mlp moe ...);
--   full on every layer -> full/uniform/1 (with MTP full/block/the most
--   layers of a stage: uniform would recompute the MTP layers too); full
--   on r layers per stage -> full/block/r
-- * MoE models (M.moe_args): ep_degree -> --expert-model-parallel-size,
--   etp_degree -> --expert-tensor-parallel-size, moe_token_dispatcher ->
--   --moe-token-dispatcher-type, moe_grouped_gemm -> --moe-grouped-gemm,
--   moe_capacity_factor -> --moe-expert-capacity-factor with
--   --moe-pad-expert-input-to-capacity, training.moe_flex_dispatcher_
--   backend -> --moe-flex-dispatcher-backend; the model's
--   experts as --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
--   --moe-shared-expert-intermediate-size, --moe-layer-freq; MLA
--   (M.mla_args) as --multi-latent-attention and its ranks and head dims
-- * the model's architecture (issue 25): the gated MLP's activation
--   (--swiglu, --quick-geglu, --glu-linear-offset,
--   --activation-func-clamp-value), the window and its period
--   (--window-size, --window-attn-skip-freq), sinks (--softmax-type
--   learnable), Q/K norms, biases; what Megatron-LM cannot express
--   (GeGLU's GELU-tanh, soft-capping, sandwich norms, full-width Q/K
--   norms, bias-free LayerNorm, mixed biases) is a NOT WRITTEN line and
--   the file is partial (M.ARCH_SOURCES, docs/launch.md)
-- * training.mtp_num_layers -> --mtp-num-layers, with 'm' per MTP layer
--   before the loss when the layout is written
-- * micro_batch_size, global batch, seq_length -> --micro-batch-size,
--   --global-batch-size, --seq-length (Megatron derives the micro-batch
--   count B / (b x data-parallel ranks))
-- @module apsearch.launch.megatron
local options = require "apsearch.launch.options"
local launch_util = require "apsearch.launch"

local M = {}

--- Megatron-Core's --cuda-graph-modules for a scope of training.cuda_graph_
-- scope (transformer_config.py @ d98e8a64 CudaGraphModule; empty: the
-- whole layer).  A dropless MoE layer cannot be captured whole (its
-- expert shapes change each step; "moe" needs drop-padding, l.2837-2840):
-- the layer scope then writes what can be captured, the scope the core
-- prices (core.model_params dropless_graph_scope:
-- aps_cuda_graph_dropless_modules, src/core/layerprog.c).  moe_preprocess goes
-- with moe_router (l.2821-2824) and not beside the all-to-all's
-- capacity-factor sync (l.2841-2850).
local function graph_modules(scope, m, dropless, a2a_capacity)
  local moe = (m.num_experts or 0) > 0
  local router = a2a_capacity and { "moe_router" } or { "moe_router", "moe_preprocess" }
  if scope == "layer" then
    if not (moe and dropless) then return {} end
    scope = require("apsearch.core").model_params(m).dropless_graph_scope
  end
  local mods = {}
  for part in scope:gmatch("[^+]+") do
    if part ~= "moe_router" then mods[#mods + 1] = part
    elseif moe then table.move(router, 1, #router, #mods + 1, mods) end
  end
  return mods
end

--- The CUDA graph flags (cuda_graphs on): full recompute and CPU offloading
-- need the full-iteration graph (transformer_config.py l.2800, 2854-2857),
-- which needs the NaN check off (arguments.py); else per-layer TE graphs
-- of training.cuda_graph_scope.  Returns the --cuda-graph-impl written
-- (nil: none).
local function graph_flags(A, N, m, r, tr, offload)
  local scope = tr.cuda_graph_scope or "layer"
  if scope == "none" then return nil end
  if scope == "full_iteration" or r.layer_recompute == "full" or offload > 0 then
    A("--cuda-graph-impl", "full_iteration")
    A("--no-check-for-nan-in-loss-and-grad")
    if tr.offload_modules then
      -- TransformerConfig asserts a non-negative cap with full-iteration
      -- graphs and fine-grained offload (transformer_config.py @ d98e8a64
      -- l.2967-2975); 1, one layer's copies in flight per module as the
      -- estimate overlaps them (Megatron-Bridge 067f987df perf_recipes/
      -- nemotronh/gb200/nemotronh.py:271, deepseek/gb300/deepseek_v3.py:339)
      A("--fine-grained-offloading-max-inflight-offloads", 1)
    end
    return "full_iteration"
  end
  A("--cuda-graph-impl", "transformer_engine")
  local moe = (m.num_experts or 0) > 0
  local dropless = moe and not ((r.moe_capacity_factor or 0) > 0)
  local a2a_cap = moe and not dropless and (r.moe_token_dispatcher or "alltoall") == "alltoall"
  local mods = graph_modules(scope, m, dropless, a2a_cap)
  if #mods > 0 then A("--cuda-graph-modules", mods) end
  if scope == "layer" and dropless then
    N("NOTE", "cuda_graph_scope layer on a dropless MoE model: its experts cannot be captured, so the " ..
      "modules that can are written (--cuda-graph-modules " .. table.concat(mods, " ") .. ")")
  end
  return "transformer_engine"
end


--- Renders the script.
-- @tparam table c context (apsearch.launch.context)
-- @treturn string script text
-- @treturn table notes (NOT EXPRESSIBLE / APPROXIMATE lines)
--- Shortest decimal that reads back as `v` (Python's int() / float()
-- parse it to the same value): integral values without a fraction
-- ("500000", "8"), others as %g ("1e-05").
-- @tparam number v finite
-- @treturn string
function M.num(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  for p = 15, 17 do
    local s = string.format("%." .. p .. "g", v)
    if tonumber(s) == v then return s end
  end
  return string.format("%.17g", v)
end

--- Megatron's llama3 RoPE scaling (RotaryEmbedding._apply_scaling,
-- megatron/core/models/common/embeddings/rotary_pos_embedding.py @
-- d98e8a64): low_freq_factor, high_freq_factor and
-- original_max_position_embeddings are fixed at these values.
M.LLAMA3_SCALING = { low_freq_factor = 1, high_freq_factor = 4,
                     original_max_position_embeddings = 8192 }
--- The factor pretrain_gpt.py uses: gpt_builders.py (d98e8a64) passes
-- rope_scaling=args.use_rope_scaling but not args.rope_scaling_factor, so
-- GPTModel's default rope_scaling_factor = 8.0 applies.
M.LLAMA3_BUILDER_FACTOR = 8

--- Multi-latent attention's YaRN (MLATransformerConfig, megatron/core/
-- transformer/transformer_config.py @ d98e8a64): with
-- --multi-latent-attention, pretrain_gpt.py builds MLATransformerConfig,
-- whose rope_type defaults to "yarn" (argument_utils.py
-- core_transformer_config_from_args pops an unset --rope-type), and
-- multi_latent_attention.py builds YarnRotaryEmbedding from
-- --rotary-scaling-factor, --mscale and --mscale-all-dim (arguments.py
-- defaults 1.0, 1.0, 0.0) and from fields no flag sets:
-- original_max_position_embeddings and the betas, fixed at these values
-- (the --yarn-* flags feed only GPTModel's non-MLA yarn path,
-- argument_utils.py _apply_yarn_config_from_args).  The cos/sin factor is
-- get_mscale(f, mscale) / get_mscale(f, mscale_all_dim) and the softmax
-- scale get_mscale(f, mscale_all_dim)^2 / sqrt(q_head_dim)
-- (multi_latent_attention.py:177, yarn_rotary_pos_embedding.py), as in
-- transformers when the config gives both (hf.lua).
M.MLA_YARN_FIXED = { original_max_position_embeddings = 4096, beta_fast = 32, beta_slow = 1 }

-- The end of a NOT EXPRESSIBLE line for a YaRN constant MLA fixes: it
-- shapes the rotary frequencies only, so the estimate of the job the
-- script builds is the same, and `--set model.<field>=<fixed>` (a run's
-- what-to-relax quotes the line) makes the two alike.
local function same_job(field, fixed)
  return string.format("; it changes no time or memory: --set model.%s=%s estimates the job the script builds",
    field, M.num(fixed))
end

--- How far a solved --mscale may be from Megatron's default 1.0 and still
-- be that default (not written): the float error of hf.yarn_mscale_for's
-- solve, a few ulps.
M.MSCALE_DEFAULT_TOLERANCE = 1e-12

--- YaRN's magnitudes as --mscale / --mscale-all-dim (arguments.py
-- defaults 1.0 / 0.0).  Megatron scales cos/sin by get_mscale(f, mscale) /
-- get_mscale(f, mscale_all_dim) (yarn_rotary_pos_embedding.py
-- _yarn_get_concentration_factor, MLA and GPTModel alike) and MLA's
-- softmax by get_mscale(f, mscale_all_dim)^2 (M.MLA_YARN_FIXED's comment);
-- transformers' cos/sin factor is hf.yarn_attention_factor.  Written:
-- --mscale-all-dim the config's mscale_all_dim for MLA (the softmax needs
-- it), for GPTModel only when the config gives both magnitudes (its
-- softmax does not read it); --mscale hf.yarn_mscale_for that value, so the
-- cos/sin factor is transformers' (both given: the config's mscale;
-- mscale_all_dim alone, DeepSeek-style: 1 + md + 0.1 md ln f; an
-- attention_factor a: (a get_mscale(f, md) - 1) / (0.1 ln f)).  Nothing
-- when both come out at the defaults.
-- @tparam table m model table (yarn scaling)
-- @tparam boolean mla multi-latent attention (kv_lora_rank > 0)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.yarn_mscale(m, mla, A, N)
  local hf = require "apsearch.hf"
  local f, ms, md = m.rope_scaling_factor or 0, m.yarn_mscale or 0, m.yarn_mscale_all_dim or 0
  local wmd = md
  if not mla and not (ms > 0 and md > 0 and (m.yarn_attention_factor or 0) <= 0) then wmd = 0 end
  local wms = hf.yarn_mscale_for(m, wmd)
  if wms == nil then
    N("NOT EXPRESSIBLE in Megatron-LM", string.format("yarn attention_factor %s with factor %s <= 1: " ..
      "_yarn_get_mscale is 1 for every --mscale, so cos/sin are not scaled", M.num(m.yarn_attention_factor),
      M.num(f)))
    wms = 1.0
  end
  -- (a mscale solved from an attention_factor carries the float error of
  -- the solve: OLMo 3's 1 + 2e-16 is Megatron's default 1, not written)
  if math.abs(wms - 1) < M.MSCALE_DEFAULT_TOLERANCE then wms = 1.0 end
  if wmd > 0 or wms ~= 1 then A("--mscale", M.num(wms)) end
  if wmd > 0 then A("--mscale-all-dim", M.num(wmd)) end
end

--- YaRN for a model without MLA: GPTModel's yarn position embedding
-- (--position-embedding-type yarn; gpt_model.py builds YarnRotaryEmbedding
-- from the config's yarn_* fields, which argument_utils.py
-- _apply_yarn_config_from_args fills from --rotary-scaling-factor,
-- --yarn-original-max-position-embeddings, --yarn-beta-fast,
-- --yarn-beta-slow, --mscale, --mscale-all-dim and
-- --[no-]yarn-correction-range-round-to-int; attention.py applies the
-- cos/sin factor, @ d98e8a64).  The original context is hf.yarn_original
-- (transformers' fallback to max_position_embeddings), the betas
-- hf.yarn_beta.  validate_args refuses multi-token prediction with yarn
-- positions (arguments.py: rope or none only): then rope positions, noted.
-- @tparam table m model table (yarn scaling, no MLA)
-- @tparam table|nil tr training table (mtp_num_layers)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.gpt_yarn_args(m, tr, A, N)
  local hf = require "apsearch.hf"
  local f, orig = m.rope_scaling_factor or 0, hf.yarn_original(m)
  if ((tr or {}).mtp_num_layers or 0) > 0 or not orig then
    A("--position-embedding-type", "rope")
    N("NOT EXPRESSIBLE in Megatron-LM", string.format("yarn RoPE scaling (factor %s): %s; written with rope " ..
      "positions, not scaled", M.num(f), orig and "validate_args allows multi-token prediction only with rope " ..
      "or no position embeddings, not --position-embedding-type yarn" or "the model gives neither " ..
      "original_max_position_embeddings nor max_position_embeddings"))
    return
  end
  A("--position-embedding-type", "yarn")
  A("--rotary-scaling-factor", M.num(f))
  A("--yarn-original-max-position-embeddings", orig)
  A("--yarn-beta-fast", M.num(hf.yarn_beta(m, "beta_fast")))
  A("--yarn-beta-slow", M.num(hf.yarn_beta(m, "beta_slow")))
  if m.yarn_no_truncate then A("--no-yarn-correction-range-round-to-int") end
  M.yarn_mscale(m, false, A, N)
end

--- Smallest RoPE base written rounded to --rotary-base's integer: from
-- 1e4 on, rounding moves the base by less than 5e-5 of itself (the
-- frequencies by less than that); a smaller fractional base is NOT
-- EXPRESSIBLE.
M.ROUNDED_BASE_MIN = 1e4

--- Megatron's precision-aware Adam (--use-precision-aware-optimizer, with
-- the distributed optimizer only: megatron/core/optimizer/__init__.py @
-- d98e8a64): for bf16 moments (exp_avg_bf16, --exp-avg-dtype and
-- --exp-avg-sq-dtype bf16) and for the fp32 master held as the bf16 weight
-- plus a 16-bit remainder (store_param_remainders), which its
-- OptimizerConfig does by default with bf16 and no fp8 recipe other than
-- delayed scaling (optimizer_config.py:192, :407-414; distrib_optimizer.py
-- :1008, TE >= 2.1).  Moments in bf16 on a bf16 run without the remainders
-- estimated get them anyway: a NOTE says the file holds less.
-- @tparam table tr training
-- @tparam string p precision
-- @tparam function has has(flag): the flag already written
-- @tparam function A argument writer
-- @tparam function N note writer
function M.precision_aware_args(tr, p, has, A, N)
  local dist = has("--use-distributed-optimizer")
  local remainders = p == "bf16" and not tr.fp8_param_gather
  if tr.exp_avg_bf16 then
    if dist then
      A("--use-precision-aware-optimizer")
      A("--exp-avg-dtype", "bf16")
      A("--exp-avg-sq-dtype", "bf16")
      if remainders and not tr.store_param_remainders then
        N("NOTE", "--use-precision-aware-optimizer keeps the fp32 master of a bf16 run as 16-bit remainders " ..
          "beside the bf16 weights (OptimizerConfig.store_param_remainders, on by default): 2 bytes a " ..
          "parameter less than estimated (training.store_param_remainders = true estimates it)")
      end
    else
      N("NOT EXPRESSIBLE in Megatron-LM", "exp_avg_bf16 without the distributed optimizer " ..
        "(--use-precision-aware-optimizer needs it, megatron/core/optimizer/__init__.py); not written")
    end
  end
  if tr.store_param_remainders then
    if dist and remainders then
      if not tr.exp_avg_bf16 then A("--use-precision-aware-optimizer") end
    else
      N("NOT EXPRESSIBLE in Megatron-LM", "store_param_remainders (the fp32 master as the bf16 weight plus a " ..
        "16-bit remainder) " .. (dist and ("with " .. p .. (tr.fp8_param_gather and " and fp8_param_gather" or "") ..
        ": Megatron's precision-aware optimizer keeps remainders of bf16 weights only") or
        "without the distributed optimizer (--use-precision-aware-optimizer needs it)") ..
        "; Megatron-LM keeps a full fp32 master copy")
    end
  end
end

--- RoPE base and scaling flags of a model (rope positions).
-- Writes --position-embedding-type (rope, or yarn: M.gpt_yarn_args).
-- @tparam table m model table
-- @tparam function A flag writer
-- @tparam function N note writer
-- @tparam[opt] table tr training table (mtp_num_layers; nil: none)
function M.rope_args(m, A, N, tr)
  local kind0 = m.rope_scaling_type or "none"
  if kind0 == "yarn" and (m.kv_lora_rank or 0) == 0 then
    M.gpt_yarn_args(m, tr, A, N)
  else
    A("--position-embedding-type", "rope")
  end
  -- partial RoPE: RotaryEmbedding rotates int(kv_channels * rotary_percent)
  -- dims and passes the rest through (rotary_pos_embedding.py:73 @
  -- d98e8a64, from gpt_builders.py:98), as transformers' partial_rotary_factor
  local rp = m.rotary_percent or 0
  if rp > 0 and rp < 1 then A("--rotary-percent", M.num(rp)) end
  -- RoFormer-style pairs (GLM-4): TransformerConfig.rotary_interleaved
  -- (transformer_config.py:243 @ d98e8a64); the fused RoPE takes it from
  -- TransformerEngine 2.3 on (l.2505-2510)
  if m.rotary_interleaved then
    A("--rotary-interleaved")
    N("NOTE", "--rotary-interleaved with RoPE fusion needs TransformerEngine >= 2.3 (TransformerConfig " ..
      "raises at start-up, transformer_config.py @ d98e8a64 l.2505-2510); with an older one add --no-rope-fusion")
  end
  local theta = m.rope_theta or 0
  if theta > 0 then
    if theta == math.floor(theta) and theta < 2 ^ 53 then
      A("--rotary-base", M.num(theta)) -- type=int
    elseif theta >= M.ROUNDED_BASE_MIN and theta < 2 ^ 53 then
      -- --rotary-base is type=int: a large fractional base (Hunyuan's
      -- NTK-alpha 11,158,839.93) rounds with a frequency change below
      -- 1 / (2 x M.ROUNDED_BASE_MIN)
      local b = math.floor(theta + 0.5)
      A("--rotary-base", M.num(b))
      N("NOTE", string.format("rope_theta %s written as --rotary-base %s (type=int; relative change %.1e)",
        M.num(theta), M.num(b), math.abs(b - theta) / theta))
    else
      N("NOT EXPRESSIBLE in Megatron-LM", "rope_theta " .. M.num(theta) ..
        ": --rotary-base takes an integer (type=int); not written")
    end
  else
    N("NOTE", "the model gives no rope_theta: Megatron's default --rotary-base 10000 applies")
  end
  local kind, f = m.rope_scaling_type or "none", m.rope_scaling_factor or 0
  if kind == "llama3" then
    A("--use-rope-scaling")
    A("--rope-scaling-factor", M.num(f))
    if f ~= M.LLAMA3_BUILDER_FACTOR then
      N("NOT EXPRESSIBLE in Megatron-LM", "llama3 RoPE scaling factor " .. M.num(f) .. ": pretrain_gpt.py " ..
        "(gpt_builders.py) does not pass --rope-scaling-factor to GPTModel, whose default factor 8 applies")
    end
    for _, k in ipairs({ "low_freq_factor", "high_freq_factor", "original_max_position_embeddings" }) do
      local v, fixed = m[k] or 0, M.LLAMA3_SCALING[k]
      if v > 0 and v ~= fixed then
        N("NOT EXPRESSIBLE in Megatron-LM", string.format("llama3 RoPE scaling %s %s: Megatron fixes it at %s " ..
          "(RotaryEmbedding._apply_scaling has no flag for it)", k, M.num(v), M.num(fixed)))
      end
    end
  elseif kind == "yarn" and (m.kv_lora_rank or 0) > 0 then
    -- MLA runs YaRN itself (M.MLA_YARN_FIXED): the factor is a flag
    A("--rotary-scaling-factor", M.num(f))
    local orig, fixed = require("apsearch.hf").yarn_original(m), M.MLA_YARN_FIXED.original_max_position_embeddings
    if orig ~= fixed then
      N("NOT EXPRESSIBLE in Megatron-LM", string.format("yarn original_max_position_embeddings %s%s: " ..
        "MLATransformerConfig fixes it at %s (the --yarn-* flags reach the non-MLA path only)%s",
        orig and M.num(orig) or "not given",
        (m.original_max_position_embeddings or 0) > 0 and "" or " (transformers: max_position_embeddings)",
        M.num(fixed), same_job("original_max_position_embeddings", fixed)))
    end
    if m.yarn_no_truncate then
      N("NOT EXPRESSIBLE in Megatron-LM", "yarn truncate false: MLA's YarnRotaryEmbedding rounds the ramp's ends " ..
        "to integers (correction_range_round_to_int, no flag)")
    end
    M.yarn_mscale(m, true, A, N)
    for _, k in ipairs({ "beta_fast", "beta_slow" }) do
      local v, fixed = m["yarn_" .. k] or 0, M.MLA_YARN_FIXED[k]
      if v > 0 and v ~= fixed then
        N("NOT EXPRESSIBLE in Megatron-LM", string.format("yarn %s %s: MLATransformerConfig fixes it at %s " ..
          "(the --yarn-* flags reach the non-MLA path only)%s", k, M.num(v), M.num(fixed),
          same_job("yarn_" .. k, fixed)))
      end
    end
  elseif kind ~= "none" and kind ~= "yarn" then
    N("NOT WRITTEN", kind .. " RoPE scaling (factor " .. M.num(f) .. "): pretrain_gpt.py (gpt_builders.py) " ..
      "does not pass --rotary-seq-len-interpolation-factor to GPTModel; positions are not scaled")
  end
end

--- The allocator the estimate ran with, as the script's environment:
-- PyTorch's expandable segments (training.expandable_segments, which a
-- release's recipes set: Megatron-Bridge's PERF_ENV_VARS) export
-- PYTORCH_CUDA_ALLOC_CONF; with TransformerEngine CUDA graphs also
-- NCCL_GRAPH_REGISTER=0, which validate_args asserts beside it
-- (megatron/training/arguments.py l.1961-1968 @ d98e8a64).
-- @tparam table tr training
-- @tparam string|nil graph_impl the --cuda-graph-impl written (nil: none)
-- @treturn table export lines (empty: the allocator's default)
function M.allocator_env(tr, graph_impl)
  if not require("apsearch.core").recipe(tr).expandable_segments then return {} end
  local out = { "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # the estimate's allocator " ..
    "(training.expandable_segments)" }
  if graph_impl == "transformer_engine" then
    out[2] = "export NCCL_GRAPH_REGISTER=0  # TE CUDA graphs with expandable segments: asserted by validate_args"
  end
  return out
end

--- A NOT EXPRESSIBLE note when the estimate prices another loss than the
-- script runs: training.logits_bytes (a release's TransformerEngine fused
-- cross-entropy in place, 2 bytes a logit, apsearch.stacks) against
-- Megatron-LM's own loss, which the script computes: d98e8a64 refuses
-- --cross-entropy-loss-fusion with --cross-entropy-fusion-impl te
-- (arguments.py l.1697-1702, "disabled due to stability issues").
-- @tparam table tr training
-- @tparam function N note writer (kind, text)
function M.loss_notes(tr, N)
  if not tr.logits_bytes then return end
  local core = require "apsearch.core"
  local own = {}
  for k, v in pairs(tr) do own[k] = v end
  own.logits_bytes = nil
  local want, runs = core.recipe(tr).logits_bytes, core.recipe(own).logits_bytes
  if want == runs then return end
  N("NOT EXPRESSIBLE in Megatron-LM", ("the loss the estimate prices (training.logits_bytes = %g bytes a logit, " ..
    "e.g. a release's TransformerEngine cross-entropy in place): the script computes Megatron-LM's own, %g " ..
    "bytes a logit (d98e8a64 refuses --cross-entropy-loss-fusion with --cross-entropy-fusion-impl te, " ..
    "arguments.py l.1697-1702)"):format(want, runs))
end

function M.render(c)
  local r, m, tr = c.rec, c.model, c.training
  local args, notes = {}, {}
  local function A(flag, value)
    assert(options.megatron.options[flag], "megatron: option not in the list: " .. flag)
    -- a list: several words (argparse nargs='+'), each a plain name
    if type(value) == "table" then
      for _, w in ipairs(value) do assert(not w:find("[^%w_%.]"), "megatron: not a plain word: " .. w) end
      value = table.concat(value, " ")
      args[#args + 1] = flag .. " " .. value
      return
    end
    local v = value ~= nil and tostring(value) or nil
    -- a value with shell characters (the layout's '|' and '*') is quoted
    if v and v:find("[^%w%.%-_/,:=+]") then v = "'" .. v:gsub("'", "'\\''") .. "'" end
    args[#args + 1] = v and (flag .. " " .. v) or flag
  end
  local function N(kind, text) notes[#notes + 1] = kind .. ": " .. text end
  local other = require("apsearch.launch").framework_note("megatron", tr)
  if other then N("NOTE", other) end
  local passes = require("apsearch.launch").passes_lacks(r, "Megatron-LM")
  if passes then N("NOT EXPRESSIBLE in Megatron-LM", passes) end

  local tp, pp, cp, vpp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1, r.vpp_degree or 1
  local R, S, z = r.dp_degree or 1, r.fsdp_degree or 1, r.zero_stage or 0
  local L = m.num_layers

  -- model parallelism
  A("--tensor-model-parallel-size", tp)
  if tp > 1 and r.sequence_parallel then A("--sequence-parallel") end
  A("--pipeline-model-parallel-size", pp)
  if pp > 1 and (r.pp_schedule or "1f1b") ~= "1f1b" then
    -- megatron/core/pipeline_parallel/schedules.py get_forward_backward_func
    N("NOT EXPRESSIBLE in Megatron-LM", "pp_schedule = " .. r.pp_schedule .. ": Megatron-LM runs " ..
      "(interleaved) 1F1B only; the script runs that, with the chunks in its own order")
  end
  local layers = c.layers
  -- model chunks in schedule order (chunk j on rank j mod p), as the
  -- estimate split them: given per chunk, by the split rule only when no
  -- stage_partition, layer_offset or balancing replaced it (a layer_offset
  -- under embedding_loss is the offset's split, not the rule's), or a
  -- rank's layers split evenly (the core reports an unset partition as zeros)
  local given = {}
  for _, n in ipairs(r.stage_partition or {}) do
    if n ~= 0 then given = r.stage_partition break end
  end
  local per_chunk = vpp > 1 and #given == pp * vpp
  local split = launch_util.split_by_rule(r) and r.pipeline_split or "even"
  local chunks = launch_util.estimate_chunks(c)
  local uneven = pp > 1 and #layers == pp and not launch_util.all_equal(layers)
  local vpp_written = false
  local function layout(why)
    A("--pipeline-model-parallel-layout", M.layout(chunks, c.training.mtp_num_layers))
    vpp_written = true
    if why then N("NOTE", why) end
  end
  -- a hybrid model's chunks are the '|' segments of its pattern
  -- (M.hybrid_pattern), which Megatron-LM takes in place of every other
  -- split flag (arguments.py:802-862 @ d98e8a64 asserts the layout,
  -- --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-
  -- pipeline-rank and the account flags away, and the first / last
  -- counts with pipes; the segments set vpp)
  local hybrid_pipes = m.hybrid_layer_pattern ~= nil and pp > 1
  if hybrid_pipes then
    vpp_written = true
  elseif pp > 1 and per_chunk then
    -- per model chunk: only the layout gives each chunk its own count
    -- (pipeline_parallel_layer_layout.py; vpp = stages / pp)
    layout()
  elseif split == "embedding_loss" then
    -- transformer_block.py get_num_layers_to_build: (L + 2) / (p v) per
    -- chunk, the first and the last chunk one fewer; needs (L + 2) % (p v) == 0
    if (L + 2) % (pp * vpp) == 0 then
      A("--account-for-embedding-in-pipeline-split")
      A("--account-for-loss-in-pipeline-split")
      -- with the account flags the chunk size counts the embedding and
      -- the loss: give the chunk count (arguments.py)
      if vpp > 1 then A("--num-virtual-stages-per-pipeline-rank", vpp) vpp_written = true end
    else
      layout("the embedding-and-loss split of " .. L .. " layers over " .. pp * vpp ..
        " model chunks is uneven ((L + 2) mod (p v) ~= 0); written as a layout")
    end
  elseif (split == "fill_last" or split == "fill_first") and not launch_util.all_equal(chunks) then
    -- ceil(L / (p v)) per chunk, the last the rest: NVIDIA's DeepSeek-V3
    -- layouts (NeMo 8cfedd72 pretrain_deepseek_v3.py map_pp_vp_to_layout);
    -- fill_first, AutoModel's: only the layout writes them (a rank's
    -- chunks differ)
    layout()
  elseif uneven then
    local middle = {}
    for i = 2, pp - 1 do middle[#middle + 1] = layers[i] end
    if pp == 2 then
      -- the last stage takes the rest; setting both leaves no middle stage,
      -- which Megatron's interleaved layer offset divides by
      A("--decoder-first-pipeline-num-layers", layers[1])
    elseif launch_util.all_equal(middle) then
      A("--decoder-first-pipeline-num-layers", layers[1])
      A("--decoder-last-pipeline-num-layers", layers[pp])
    else
      -- the middle stages differ: first/last counts split the rest evenly
      layout()
    end
  end
  if vpp > 1 then
    if not vpp_written and not hybrid_pipes then
      -- an uneven split needs the chunk count, not the chunk size (arguments.py)
      if L % (pp * vpp) == 0 and not uneven then
        A("--num-layers-per-virtual-pipeline-stage", L // (pp * vpp))
      else
        A("--num-virtual-stages-per-pipeline-rank", vpp)
      end
    end
    if tr.overlap_p2p_comm == false then A("--no-overlap-p2p-communication") end
    -- ModelParallelConfig.microbatch_group_size_per_vp_stage, None = pp
    -- (model_parallel_config.py:431-436, 567-568 @ d98e8a64)
    local group = r.microbatch_group_size or 0
    if group ~= 0 and group ~= pp then
      A("--microbatch-group-size-per-virtual-pipeline-stage", group)
    end
  end
  A("--context-parallel-size", cp)
  if cp > 1 then A("--cp-comm-type", r.cp_comm_type or "p2p") end

  -- data parallelism
  -- --use-torch-fsdp2: validate_args asserts no gradient-accumulation
  -- fusion, --ckpt-format torch_dist (or torch_dcp), untied embeddings, no
  -- pipeline or expert parallelism, no fp16 and CUDA_DEVICE_MAX_CONNECTIONS
  -- != 1 (arguments.py l.1031-1050 @ d98e8a64).  The core refuses the
  -- strategy-level ones for a Megatron estimate (src/core/check.c); an
  -- estimate of another framework's FSDP2 job is said NOT EXPRESSIBLE here
  local fsdp = false
  -- what validate_args refuses at start-up: the script stops before
  -- torchrun instead of queueing a job that dies (below)
  local refused = {}
  local function fsdp2()
    A("--use-torch-fsdp2")
    A("--no-gradient-accumulation-fusion")
    A("--ckpt-format", "torch_dist")
    fsdp = true
    for _, no in ipairs({
      { pp > 1, "pipeline parallelism", "is not supported with pipeline parallelism" },
      { (r.ep_degree or 1) > 1, "expert parallelism", "is not supported with expert parallelism" },
      { m.tie_word_embeddings, "tied embeddings", "requires --untie-embeddings-and-output-weights" },
      { tr.precision == "fp16", "fp16", "not supported with fp16 yet" },
    }) do
      if no[1] then
        N("NOT EXPRESSIBLE in Megatron-LM", ("FSDP2 with %s: validate_args asserts \"--use-torch-fsdp2 %s\" "
          .. "(arguments.py @ d98e8a64)"):format(no[2], no[3]))
        refused[#refused + 1] = "--use-torch-fsdp2 " .. no[3]
      end
    end
  end
  local mfsdp = tr.fsdp_impl == "megatron_fsdp"
  -- the data-parallel sync overlapped with the backward (the estimate's
  -- training.dp_overlap, 0.8 by default): --overlap-grad-reduce (and with
  -- the distributed optimizer --overlap-param-gather); with dp_overlap = 0
  -- neither, as Megatron-LM defaults (arguments.py l.3121 @ d98e8a64)
  local overlap = tr.dp_overlap == nil or tr.dp_overlap > 0
  -- ... whenever gradients are reduced at all: over the data-parallel
  -- group with the CP ranks (DistributedDataParallel's intra_dp_cp_group,
  -- distributed_data_parallel.py @ d98e8a64), and the experts' over their
  -- expert-data-parallel ranks (dp x cp x tp / (ep x etp), as the core's
  -- aps_moe_edp, src/core/moe.c); dp = 1 with cp = 2 still reduces
  local ep, etp = r.ep_degree or 1, r.etp_degree or r.tp_degree or 1
  local expert_dp = (m.num_experts or 0) > 0 and
    c.data_parallel * (r.cp_degree or 1) * (r.tp_degree or 1) // math.max(1, ep * etp) or 1
  local reduced = c.data_parallel * (r.cp_degree or 1) > 1 or expert_dp > 1
  -- --use-megatron-fsdp (version 1): validate_args (arguments.py:1118-1181
  -- @ d98e8a64) turns the distributed optimizer on, asserts --ckpt-format
  -- fsdp_dtensor and CUDA_DEVICE_MAX_CONNECTIONS != 1; Megatron-FSDP
  -- forces both overlaps on when it shards gradients (megatron_fsdp.py:
  -- 326-333).  Its main gradients default to the parameters' bf16
  -- (--megatron-fsdp-main-grads-dtype auto): fp32 is written when the
  -- estimate holds fp32 gradients (training.grad_reduce_in_fp32).
  local function megatron_fsdp(strategy)
    A("--use-megatron-fsdp")
    A("--data-parallel-sharding-strategy", strategy)
    A("--use-distributed-optimizer")
    A("--overlap-grad-reduce")
    if strategy == "optim_grads_params" then A("--overlap-param-gather") end
    A("--ckpt-format", "fsdp_dtensor")
    if tr.grad_reduce_in_fp32 ~= false then A("--megatron-fsdp-main-grads-dtype", "fp32") end
    if tr.fsdp_double_buffer then A("--fsdp-double-buffer") end
    if tr.suggested_communication_unit_size and tr.suggested_communication_unit_size > 0 then
      A("--suggested-communication-unit-size", math.tointeger(tr.suggested_communication_unit_size)
        or string.format("%.0f", tr.suggested_communication_unit_size))
    end
    N("NOTE", "Megatron-FSDP with gradient-accumulation fusion (Megatron's default) asserts " ..
      "TransformerEngine >= 2.10 (mcore_fsdp_adapter.py); on an older one add --no-gradient-accumulation-fusion")
    fsdp = true
  end
  if mfsdp and (S > 1 or z == 3) then
    megatron_fsdp("optim_grads_params")
    -- HSDP: dp_degree distributed-optimizer instances of fsdp_degree x cp
    -- ranks each, the gradient shard all-reduced across them
    -- (mcore_fsdp_adapter.py:343-430, parallel_state.py:922-1000 @ d98e8a64)
    if R > 1 and S > 1 then A("--num-distributed-optimizer-instances", R) end
  elseif mfsdp and S == 1 and z == 2 then
    megatron_fsdp("optim_grads")
  elseif R > 1 and S > 1 then
    N("NOT EXPRESSIBLE in Megatron-LM", string.format(
      "HSDP (dp_degree=%d replicas x fsdp_degree=%d shards) with --use-torch-fsdp2, which shards over " ..
      "the whole data-parallel group (Megatron-FSDP runs it: training.fsdp_impl = \"megatron_fsdp\"); " ..
      "no data-parallel sharding flag written", R, S))
  elseif S > 1 or z == 3 then
    fsdp2()
    if (S > 1 and r.reshard_after_forward == false) then A("--torch-fsdp2-no-reshard-after-forward") end
  elseif z == 1 then
    A("--use-distributed-optimizer")
    if reduced and overlap then A("--overlap-grad-reduce") A("--overlap-param-gather") end
    -- the partial distributed optimizer (distributed_data_parallel.py:357-368 @ d98e8a64)
    local inst = tr.distributed_optimizer_instances or 0
    if inst > 1 then A("--num-distributed-optimizer-instances", inst) end
  elseif reduced and overlap then
    A("--overlap-grad-reduce")
  end

  -- recompute
  if r.layer_recompute == "selective" then
    A("--recompute-granularity", "selective")
    -- the modules re-run (TransformerConfig.recompute_modules, nargs '+';
    -- unset: core_attn)
    if r.recompute_modules and r.recompute_modules ~= "" then
      local mods = {}
      for w in tostring(r.recompute_modules):gmatch("[^/,%s]+") do mods[#mods + 1] = w end
      A("--recompute-modules", mods)
    end
  elseif r.layer_recompute == "full" then
    local rc, n = c.recompute, layers
    local all, any = #rc > 0, false
    for i = 1, #rc do
      if rc[i] ~= n[i] then all = false end
      if rc[i] > 0 then any = true end
    end
    if not any then
      N("NOTE", "full recompute with no layer recomputed on any stage (recompute_num_layers " ..
        "chose 0): no recompute flag")
    else
      A("--recompute-granularity", "full")
    end
    if not any then
      -- nothing recomputed
    elseif r.recompute_method == "uniform" then
      -- every layer, in groups of recompute_num_layers checkpointed together
      -- (megatron/core/recompute.py); the group size is entry 1
      local g = type(r.recompute_num_layers) == "table" and r.recompute_num_layers[1] or nil
      A("--recompute-method", "uniform")
      A("--recompute-num-layers", (g and g > 0) and g or 1)
    elseif all and (tr.mtp_num_layers or 0) > 0 then
      -- every layer as block, not uniform: uniform also recomputes the MTP
      -- layers, block skips them, as the estimate's block recompute does
      -- (multi_token_prediction.py:1621-1634 @ d98e8a64); a count of at
      -- least each chunk's layers recomputes them all
      local mx = 0
      for i = 1, #n do if n[i] > mx then mx = n[i] end end
      A("--recompute-method", "block")
      A("--recompute-num-layers", mx)
    elseif all then
      A("--recompute-method", "uniform")
      A("--recompute-num-layers", 1)
    else
      local per = {}
      for i = 1, #rc do per[i] = rc[i] end
      local mx = 0
      for _, x in ipairs(per) do if x > mx then mx = x end end
      local chunk = vpp > 1 and (mx % vpp == 0 and mx // vpp or nil) or mx
      A("--recompute-method", "block")
      chunk = chunk or math.ceil(mx / vpp)
      if not M.block_recompute_matches(launch_util.estimate_chunks(c), per, chunk) then
        N("APPROXIMATE", string.format(
          "recompute counts %s per stage: Megatron takes one --recompute-num-layers for every " ..
          "stage%s; %d is written (at least as many layers recomputed as estimated: less memory, more time)",
          table.concat(per, ":"), vpp > 1 and " and model chunk" or "", chunk))
      end
      A("--recompute-num-layers", chunk)
    end
  end

  -- batch and sequence
  A("--micro-batch-size", r.micro_batch_size or 1)
  A("--global-batch-size", tr.global_batch_size)
  A("--seq-length", tr.seq_length)
  local mpe = math.max(m.max_position_embeddings or 0, tr.seq_length or 0)
  A("--max-position-embeddings", mpe)
  local derived = (tr.global_batch_size or 0) // math.max(1, (r.micro_batch_size or 1) * c.data_parallel)
  if r.micro_batch_num and r.micro_batch_num ~= derived then
    N("NOTE", string.format("Megatron derives %d micro-batches per step (global batch / (micro batch x " ..
      "data-parallel ranks)); the strategy has micro_batch_num=%d", derived, r.micro_batch_num))
  end

  -- model shape
  -- a parallel layer P is written as three (M.hybrid_args)
  A("--num-layers", M.written_layers(m))
  A("--hidden-size", m.hidden_size)
  A("--ffn-hidden-size", m.ffn_hidden_size)
  A("--num-attention-heads", m.num_attention_heads)
  local mla = (m.kv_lora_rank or 0) > 0
  if mla then
    M.mla_args(m, A)
  else
    if m.num_query_groups and m.num_query_groups ~= m.num_attention_heads then
      A("--group-query-attention")
      A("--num-query-groups", m.num_query_groups)
    end
    if m.head_dim and m.hidden_size and m.num_attention_heads and
      m.head_dim ~= m.hidden_size // m.num_attention_heads then
      A("--kv-channels", m.head_dim)
    end
  end
  if (m.num_experts or 0) > 0 then M.moe_args(c, A, N) end
  -- TransformerConfig.mtp_num_layers (transformer_config.py:68 @ d98e8a64)
  if (tr.mtp_num_layers or 0) > 0 then A("--mtp-num-layers", tr.mtp_num_layers) end
  -- TransformerConfig.mtp_use_repeated_layer (transformer_config.py:82):
  -- one depth's weights run mtp_num_layers times
  if tr.mtp_repeated_layer then A("--mtp-use-repeated-layer") end
  if m.mlp == "swiglu" then M.glu_args(c, A, N) end
  if m.hybrid_layer_pattern then M.hybrid_args(m, A, N, hybrid_pipes and chunks or nil, tr) end
  if m.nas_attention_pattern or m.nas_ffn_pattern then M.nas_args(c, A, N) end
  -- Kimi Delta Attention, LFM2's short convolutions: NOT WRITTEN
  -- (architecture notes below)
  if launch_util.has_gated_deltanet(m) then M.gdn_args(m, A, N) end
  -- DeepSeek-V4's indexer is its CSA layers' (global_attention_notes
  -- says the whole attention is not written): no DSA flags
  if (m.index_n_heads or 0) > 0 and not m.hc_mult then M.dsa_args(m, tr, A, N) end
  -- TransformerConfig.attention_output_gate (transformer_config.py:278)
  if m.attention_output_gate then A("--attention-output-gate") end
  if m.mlp == "relu2" then A("--squared-relu") end
  -- xIELU (Apertus): only swiss-ai's fork has it (81d44dbe megatron/
  -- training/activations.py XIELU, arguments.py --xielu)
  if m.mlp == "xielu" then
    N("NOT WRITTEN", "the xIELU MLP activation (mlp = xielu, Apertus): NOT EXPRESSIBLE in Megatron-LM d98e8a64 " ..
      "(non-gated MLPs with GELU or --squared-relu only; swiss-ai/Megatron-LM 81d44dbe adds --xielu, " ..
      "megatron/training/activations.py XIELU); the non-gated MLP is written with GELU: the same two " ..
      "matrices, FLOPs and saved tensors, without xIELU's two scalars per layer")
  end
  if m.position_embedding == "none" then A("--position-embedding-type", "none") end
  -- ALiBi (MPT, BLOOM) has no flag: nothing written would train learned
  -- absolute positions (Megatron's default, a table of parameters the model
  -- lacks); none keeps the model's parameters and work
  if m.position_embedding == "alibi" then
    A("--position-embedding-type", "none")
    N("NOT WRITTEN", "ALiBi attention biases: NOT EXPRESSIBLE in Megatron-LM d98e8a64 (--position-embedding-type " ..
      "is learned_absolute, rope, yarn, mrope, relative or none, arguments.py); --position-embedding-type none is " ..
      "written: no position information, the same parameters")
  end
  M.qk_norm_args(m, mla, A, N)
  M.norm_args(m, A, N)
  if m.position_embedding == "rope" then M.rope_args(m, A, N, tr) end
  -- TransformerConfig.layernorm_epsilon (arg_names --norm-epsilon, default 1e-5)
  if (m.norm_eps or 0) > 0 then A("--norm-epsilon", M.num(m.norm_eps)) end
  M.window_args(m, A, N)
  M.attention_extras(m, A, N)
  M.global_attention_notes(m, N)
  M.llama4_attention_args(m, tr, A, N)
  M.dropout_args(tr, A)
  if not m.tie_word_embeddings then A("--untie-embeddings-and-output-weights") end
  M.bias_args(c, A, N)
  if (tr.vocab_size_divisible_by or 0) > 0 then A("--make-vocab-size-divisible-by", tr.vocab_size_divisible_by) end

  -- precision (TransformerConfig fp8 / fp8_recipe / fp4 / fp4_recipe,
  -- megatron/core/transformer/transformer_config.py)
  local p = tr.precision
  if p == "fp16" then
    A("--fp16")
  else
    A("--bf16")
    if p == "fp8" then
      A("--fp8-format", "hybrid")
      -- Megatron's default recipe (delayed) refuses first/last layers in
      -- bf16 (transformer_config.py l.1531-1532 @ d98e8a64); apsearch's fp8
      -- is per-tensor scaling, delayed or current (tensorwise)
      if tr.first_last_layers_bf16 then A("--fp8-recipe", "tensorwise") end
    elseif p == "mxfp8" then
      -- TE MXFP8BlockScaling takes E4M3 or HYBRID; E4M3 as Megatron-Bridge's
      -- bf16_with_mxfp8_mixed
      A("--fp8-format", "e4m3")
      A("--fp8-recipe", "mxfp8")
    elseif p == "nvfp4" then
      A("--fp4-format", "e2m1")
      A("--fp4-recipe", "nvfp4")
    end
  end
  M.bf16_layers_args(tr, A)
  -- recipe settings (src/core/recipe.c)
  local function has(flag)
    for _, a in ipairs(args) do if a == flag then return true end end
    return false
  end
  if tr.fp8_param_gather == true and (p == "fp8" or p == "mxfp8" or p == "nvfp4") then
    if not (has("--use-distributed-optimizer") or has("--use-torch-fsdp2") or has("--use-megatron-fsdp")) then
      N("NOT EXPRESSIBLE in Megatron-LM", "fp8_param_gather without the distributed optimizer or " ..
        "FSDP: validate_args asserts --use-distributed-optimizer (or FSDP) with --fp8-param-gather; " ..
        "not written")
    elseif has("--use-torch-fsdp2") and p ~= "nvfp4" then
      -- arguments.py @ d98e8a64 l.1051-1052: with TransformerEngine >= 2.0
      -- validate_args sets fp8_param_gather False under --use-torch-fsdp2
      -- (a Megatron estimate refuses it, src/core/check.c; this is the file
      -- of another framework's estimate); fp4_param_gather stays on from
      -- TransformerEngine 2.7 (l.1058), which NVFP4 needs anyway
      N("NOT EXPRESSIBLE in Megatron-LM", "fp8_param_gather with --use-torch-fsdp2: validate_args turns " ..
        "the low-precision parameter gather off (TransformerEngine >= 2.0), so parameters are gathered in " ..
        "bf16, not as estimated; not written")
    else
      A(p == "nvfp4" and "--fp4-param-gather" or "--fp8-param-gather")
    end
  end
  if p == "fp16" then
    if tr.grad_reduce_in_fp32 ~= false then A("--accumulate-allreduce-grads-in-fp32") end
  elseif tr.grad_reduce_in_fp32 == false then
    -- bf16 otherwise forces fp32 main grads (validate_args)
    A("--grad-reduce-in-bf16")
  end
  M.precision_aware_args(tr, p, has, A, N)
  local offload = tr.activation_offload_layers or 0
  if offload > 0 then
    -- ModelParallelConfig.cpu_offloading_num_layers; validate_args turns
    -- cpu_offloading on; TransformerConfig asserts 0 <= n < num_layers
    local n = math.min(offload, L - 1)
    A("--cpu-offloading-num-layers", n)
    if n ~= offload then
      N("APPROXIMATE", string.format("activation offload of %d layers: Megatron-LM takes fewer " ..
        "than num_layers = %d; %d written", offload, L, n))
    end
  end
  if tr.offload_modules then
    -- TransformerConfig.fine_grained_activation_offloading, offload_modules
    -- (a list: one argument per module), activation_offload_fraction
    -- (transformer_config.py @ d98e8a64 l.1323-1361, flags built by
    -- arguments.py's ArgumentGroupFactory); validate_args asserts
    -- NVTE_CPU_OFFLOAD_V1=1 with TransformerEngine >= 2.10 (arguments.py
    -- l.1935-1940), written to the script's environment
    A("--fine-grained-activation-offloading")
    local mods = {}
    for mod in tr.offload_modules:gmatch("[^/]+") do mods[#mods + 1] = mod end
    A("--offload-modules", mods)
    if tr.activation_offload_fraction then A("--activation-offload-fraction", tr.activation_offload_fraction) end
  end
  if tr.tp_comm_overlap then
    if tp > 1 and r.sequence_parallel then
      A("--tp-comm-overlap")
    else
      N("NOTE", "tp_comm_overlap without TP and sequence parallel: nothing to overlap, no flag " ..
        "(Megatron asserts --sequence-parallel with --tp-comm-overlap)")
    end
  end
  local graph_impl = tr.cuda_graphs and graph_flags(A, N, m, r, tr, offload) or nil
  A("--optimizer", tr.optimizer == "sgd" and "sgd" or "adam")
  M.loss_notes(tr, N)

  local out = { "#!/usr/bin/env bash" }
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = "# Megatron-LM flags checked against " .. options.cite(options.megatron)
  out[#out + 1] = "# Add your data, tokenizer, checkpoint and schedule flags after the script name"
  out[#out + 1] = "# (they are passed on), e.g. --data-path ... --tokenizer-type ... --train-iters ..."
  for _, n in ipairs(notes) do out[#out + 1] = "# " .. n end
  out[#out + 1] = "set -euo pipefail"
  if fsdp then
    -- validate_args: "FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one"
    out[#out + 1] = "unset CUDA_DEVICE_MAX_CONNECTIONS  # FSDP asserts it is not 1 (validate_args, " ..
      "arguments.py l.1048 and l.1166 @ d98e8a64)"
  elseif tp > 1 or cp > 1 then
    -- validate_args asserts it before Blackwell with TP or CP (and without FSDP)
    out[#out + 1] = "export CUDA_DEVICE_MAX_CONNECTIONS=1  # TP / CP: asserted by validate_args before Blackwell"
  end
  if tr.offload_modules then
    out[#out + 1] = "export NVTE_CPU_OFFLOAD_V1=1  # training.offload_modules: asserted by validate_args (TE >= 2.10)"
  end
  for _, line in ipairs(M.allocator_env(tr, graph_impl)) do out[#out + 1] = line end
  if tr.cutedsl_fused_grouped_mlp then
    -- TransformerEngine's CuTe DSL grouped MLP kernels (ops/fused/grouped_mlp.py)
    out[#out + 1] = "export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1  # training.cutedsl_fused_grouped_mlp"
  end
  out[#out + 1] = "MEGATRON_LM=${MEGATRON_LM:-/path/to/Megatron-LM}"
  out[#out + 1] = "NNODES=${NNODES:-" .. c.nodes .. "}"
  out[#out + 1] = "GPUS_PER_NODE=${GPUS_PER_NODE:-" .. math.min(c.devices_per_node, c.devices_used) .. "}"
  out[#out + 1] = "NODE_RANK=${NODE_RANK:-0}"
  out[#out + 1] = "MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}"
  out[#out + 1] = "MASTER_PORT=${MASTER_PORT:-29500}"
  out[#out + 1] = ""
  out[#out + 1] = "MEGATRON_ARGS=("
  for _, a in ipairs(args) do out[#out + 1] = "  " .. a end
  out[#out + 1] = ")"
  out[#out + 1] = ""
  for _, line in ipairs(M.start_guard(refused)) do out[#out + 1] = line end
  out[#out + 1] = "exec torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" --node-rank \"$NODE_RANK\" \\"
  out[#out + 1] = "  --master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\"
  out[#out + 1] = "  \"$MEGATRON_LM/" .. M.entry_point(m) .. "\" \"${MEGATRON_ARGS[@]}\" \"$@\""
  return table.concat(out, "\n") .. "\n", notes
end

--- The lines that stop a script Megatron-LM's validate_args would refuse
-- at start-up, before torchrun: a comment and `exit 1` with the assertion
-- on stderr (a pass running validate_args on 210 scripts found 25 FSDP2
-- estimates written as --use-torch-fsdp2 with pipeline or expert
-- parallelism or tied embeddings, each a job that dies after the queue).
-- @tparam table refused validate_args's assertion texts ({} when none)
-- @treturn table lines (none when refused is empty)
function M.start_guard(refused)
  if #refused == 0 then return {} end
  local why = table.concat(refused, "; ")
  return {
    "# Megatron-LM refuses these flags at start-up (validate_args, arguments.py @ d98e8a64): the script stops",
    "# here instead of starting a job that dies; change them (NOT EXPRESSIBLE above), then delete the next line.",
    ("echo 'apsearch: not runnable as written: validate_args asserts \"%s\"' >&2; exit 1"):format(why),
  }
end

--- The GLU block interleave of the experts' fc1 under the fused grouped
-- MLP (--moe-mlp-glu-interleave-size): Megatron-Bridge's utils/overrides.py
-- sets 32 with cutedsl_fused_grouped_mlp (067f987df l.366-368).
M.FUSED_GROUPED_MLP_GLU_INTERLEAVE = 32

--- Where Megatron-LM (d98e8a64) reads each model-architecture flag below:
-- file:line of megatron/training/arguments.py, megatron/training/
-- argument_utils.py, megatron/core/transformer/transformer_config.py and
-- the other files under megatron/core/transformer.
M.ARCH_SOURCES = {
  swiglu = "arguments.py:2450, argument_utils.py:314-317 (F.silu, gated_linear_unit)",
  quick_geglu = "arguments.py:2452, argument_utils.py:323-326 (quick_gelu, gated_linear_unit); fused_bias_geglu.py:185 " ..
    "quick_gelu(y) = y * sigmoid(1.702 y)",
  activation_excluded = "arguments.py:2293 (activation_func and arguments.py:2327 gated_linear_unit excluded from the CLI)",
  glu_linear_offset = "transformer_config.py:231 (activation_func(x[0]) * (x[1] + offset)); transformer_config.py:2440 fused: quick_gelu only",
  clamp = "transformer_config.py:235; moe/experts.py:1004-1008 (gate clamp max, linear clamp +-c); transformer_config.py:2471-2495 " ..
    "(SwiGLU: MoE only, offset 0)",
  softmax_type = "transformer_config.py:170 ('vanilla', 'off-by-one', 'learnable'); dot_product_attention.py:126 " ..
    "(a learned softmax_offset per head); TE >= 2.8 (transformer_engine.py:2184)",
  window = "arguments.py:2384 --window-size (tuple_type), arguments.py:2387 --window-attn-skip-freq (moe_freq_type); " ..
    "transformer_config.py:247, transformer_config.py:251; transformer/utils.py:531-546 (layer_number % k != 0: windowed)",
  qk_layernorm = "transformer_config.py:259; attention.py:1734-1745 (q/k norms of hidden_size_per_attention_head)",
  bias = "transformer_config.py:212 add_bias_linear (--disable-bias-linear), transformer_config.py:218 add_qkv_bias, arguments.py:1609-1610 " ..
    "(add_bias_linear forces add_qkv_bias); moe/router.py:67 (router bias = add_bias_linear); " ..
    "transformer_config.py:2612 (biases with MoE need expert_tensor_parallel_size 1)",
  norms = "transformer_layer.py:278-288 (input_layernorm, pre_cross_attn_layernorm, " ..
    "pre_mlp_layernorm: no norm after attention or MLP)",
  softcap = "no logit soft-capping in training (attention.py:953 passes softcap 0.0 to " ..
    "flash inference only)",
  qk_l2_norm = "transformer_config.py:262 qk_l2_norm; attention.py:1709-1711 (L2Norm on the Q and K of every " ..
    "layer)",
  no_rope = "arguments.py:2428 --no-rope-freq (no_rope_freq_type: k, or a list with 1 for a layer without RoPE); " ..
    "transformer_config.py:3138-3151; attention.py:1320-1325",
  chunk = "no chunked attention in training (attention.py:952 passes attention_chunk 0 to flash inference only)",
  apply_probs = "transformer_config.py:949 moe_apply_probs_on_input; moe/experts.py:918-921 (top-1 only)",
  heads_per_layer = "transformer_config.py:148 (one num_attention_heads for every layer)",
  kda = "no Kimi Delta Attention in megatron/core (transformer_config.py:301 experimental_attention_variant: " ..
    "gdn, gdn2, dsa)",
  short_conv = "no gated short convolution in megatron/core (transformer_config.py:301 " ..
    "experimental_attention_variant: gdn, gdn2, dsa; the hybrid stack's layers are Mamba-2, attention, MLP, MoE)",
  mamba1 = "no Mamba-1 mixer in megatron/core (ssm/mamba_mixer.py is Mamba-2's SSD; transformer_config.py:301 " ..
    "experimental_attention_variant: gdn, gdn2, dsa)",
  lightning = "no lightning attention in megatron/core (transformer_config.py:301 experimental_attention_variant: " ..
    "gdn, gdn2, dsa)",
  msa = "no block-sparse attention in megatron/core (experimental_attention_variant_module_specs.py: the " ..
    "variants are gated_delta_net and dsa, DeepSeek's token-level top-k on multi-latent attention)",
  head_gate = "transformer_config.py:278 attention_output_gate (an element-wise sigmoid gate from linear_qkv, " ..
    "Qwen3-Next's; no gate per head, no softplus)",
  layer_shape = "transformer_config.py:175, 184 (one num_query_groups and kv_channels for every layer); " ..
    "attention.py:1689 (linear_qkv projects Q, K and V on every layer)",
  router_scales = "moe/router.py:64-72 (TopKRouter has its weight and an optional bias only)",
  v_width = "transformer_config.py:184 (kv_channels: one head width for Q, K and V; v_head_dim is multi-latent " ..
    "attention's only, transformer_config.py MLATransformerConfig)",
  sinks_per_layer = "transformer_config.py:170 (softmax_type: one for every layer)",
  parallel = "models/hybrid/hybrid_layer_allocation.py Symbols: M, *, -, E and the attention variants, no " ..
    "parallel layer; Megatron-Bridge 067f987df models/falcon_h1 builds FalconH1Layer with its own allocation " ..
    "(Symbols.PARALLEL 'P')",
  mamba_norm = "ssm/mamba_mixer.py MambaMixer(rmsnorm=True), which hybrid_layer_specs.py does not set",
  dsv4 = "no compressed sparse or heavily compressed attention (CSA/HCA compressors, their indexer), grouped " ..
    "output projection or hash routing (tid2eid) in megatron/core; transformer_config.py:1142 " ..
    "enable_mhc_connections is its only DeepSeek-V4 piece; Megatron-Bridge 067f987df deepseek_v4_bridge.py " ..
    "needs DSv4HybridSelfAttention / CompressedSparseAttention / CSAIndexer / Compressor from a Megatron-LM " ..
    "dev commit (examples/models/deepseek_v4/README.md: 35f36c7c9dba with PR #4839)",
}

--- A note that part of the model is not in the script: a "NOT WRITTEN"
-- line (the run's report labels the file partial, cli.lua) saying what
-- Megatron-LM cannot express and what the script trains instead.
-- @tparam function N note writer
-- @tparam string what the model's feature
-- @tparam string why what Megatron-LM lacks (with its source)
-- @tparam string instead what the script builds
local function not_written(N, what, why, instead)
  N("NOT WRITTEN", string.format("%s: NOT EXPRESSIBLE in Megatron-LM d98e8a64 (%s); %s", what, why, instead))
end

--- A hybrid pattern cut into pipeline segments: Megatron-LM's HybridModel
-- builds segment vp p + rank (0-based) of the '|'-split pattern on pipeline
-- rank `rank`'s virtual stage vp (hybrid_layer_allocation.py
-- select_pipeline_segment @ d98e8a64), which is apsearch's model order of
-- chunks (chunk j on rank (j - 1) % p); validate_args derives vpp =
-- segments / p (arguments.py:841-862).  Without chunks (one stage), the
-- pattern as given.
-- @tparam string pattern the model's hybrid_layer_pattern
-- @tparam[opt] table chunks decoder layers per model chunk, in model order
-- @treturn string e.g. "M-M-|M*M-" for chunks {4, 4}
function M.hybrid_pattern(pattern, chunks)
  if not chunks then return pattern end
  local parts, at = {}, 1
  for j, n in ipairs(chunks) do
    parts[j] = pattern:sub(at, at + n - 1)
    at = at + n
  end
  assert(at == #pattern + 1, "hybrid_pattern: the chunks do not cover the pattern")
  return table.concat(parts, "|")
end

--- The training script of the model: pretrain_hybrid.py for a hybrid
-- Mamba-2 model (it builds HybridModel, hybrid_builders.py @ d98e8a64),
-- pretrain_gpt.py otherwise.
-- @tparam table m model table
-- @treturn string the script's path in Megatron-LM
function M.entry_point(m)
  return m.hybrid_layer_pattern and "pretrain_hybrid.py" or "pretrain_gpt.py"
end

--- MambaMixer's constructor defaults that no flag sets (megatron/core/ssm/
-- mamba_mixer.py @ d98e8a64: d_conv=4, chunk_size=128), in a fixed order:
-- another conv width is another model (NOT EXPRESSIBLE); another SSD chunk
-- computes the same function at a cost apsearch does not price by chunk
-- (a NOTE: the job built is the job estimated).
M.MAMBA_FIXED = { { "mamba_conv_kernel", 4, "d_conv", "NOT EXPRESSIBLE in Megatron-LM" },
  { "mamba_chunk_size", 128, "chunk_size", "NOTE" } }

--- A hybrid Mamba-2 model (Nemotron-H) on Megatron-LM d98e8a64:
-- --hybrid-layer-pattern (arguments.py:3652; it sets num_layers and
-- is_hybrid_model, arguments.py:787-797, argument_utils.py:345-346), the
-- TransformerConfig Mamba fields mamba_num_heads, mamba_head_dim,
-- mamba_state_dim, mamba_num_groups (transformer_config.py:1259-1268, flags
-- by ArgumentGroupFactory), the squared-ReLU MLP (--squared-relu,
-- arguments.py:2448, argument_utils.py:320-322), no position embedding,
-- and the layer spec hybrid_builders.py requires (--spec, as
-- examples/mamba/train.sh).  A conv width or chunk other than MambaMixer's
-- fixed defaults is NOT EXPRESSIBLE.  E layers in the pattern are MoE
-- layers (hybrid_layer_allocation.py Symbols.MOE; hybrid_stack_spec's
-- moe_layer: MoETransformerLayer, pre-MLP norm and the MoE block): the
-- MoE flags are M.moe_args', without --moe-layer-freq, and --squared-relu
-- is the experts' activation too (2 matrices each).
-- With pipeline parallelism the pattern carries the model chunks as '|'
-- segments (M.hybrid_pattern).  Trained MTP depths follow the main
-- pattern, each its mtp_layer_pattern after a '/' (the unified pattern,
-- arguments.py l.757-785, 866-876 @ d98e8a64: Megatron infers
-- --mtp-num-layers from the '/' parts; the deprecated
-- --mtp-hybrid-override-pattern is not written).
-- @tparam table m model table
-- @tparam function A flag writer
-- @tparam function N note writer
-- @tparam[opt] table chunks decoder layers per model chunk in model
--   order (pipeline parallelism), nil for one stage
-- @tparam[opt] table tr training table (mtp_num_layers; nil: none)
function M.hybrid_args(m, A, N, chunks, tr)
  local depths = (tr or {}).mtp_num_layers or 0
  local pattern = M.hybrid_pattern(m.hybrid_layer_pattern, chunks)
  local n = M.parallel_layers(m)
  if n > 0 then
    not_written(N, ("Falcon-H1's %d parallel layers P (a Mamba-2 and an attention mixer side by side under one " ..
      "norm, then the MLP)"):format(n), M.ARCH_SOURCES.parallel, ("the script builds each as the three layers " ..
      "M*- (the same mixers and MLP one after the other, %d layers, one norm more each), not the model " ..
      "estimated; Megatron-Bridge's FalconH1Bridge trains it"):format(M.written_layers(m)))
    pattern = pattern:gsub("P", M.PARALLEL_AS)
  end
  if m.mamba_no_rmsnorm then
    not_written(N, "a Mamba-2 mixer without its gated RMSNorm (mamba_no_rmsnorm)", M.ARCH_SOURCES.mamba_norm,
      "the script's mixers have the norm")
  end
  A("--hybrid-layer-pattern", pattern .. string.rep("/" .. (m.mtp_layer_pattern or ""), depths))
  A("--mamba-num-heads", m.mamba_num_heads)
  A("--mamba-head-dim", m.mamba_head_dim)
  A("--mamba-state-dim", m.mamba_state_dim)
  A("--mamba-num-groups", m.mamba_num_groups)
  A("--spec", { "megatron.core.models.hybrid.hybrid_layer_specs", "hybrid_stack_spec" })
  for _, fixed in ipairs(M.MAMBA_FIXED) do
    local key, default, arg, tag = fixed[1], fixed[2], fixed[3], fixed[4]
    local v = m[key]
    if v and v ~= default then
      N(tag, string.format("%s %d: MambaMixer fixes %s = %d (mamba_mixer.py)%s", key, v, arg, default,
        tag == "NOTE" and "; the SSD's chunks change its kernels' tiling, not the function or the estimate" or ""))
    end
  end
end

--- What the script writes for a parallel layer P, which Megatron-LM's
-- hybrid_layer_allocation.py has no symbol for: its Mamba-2 mixer,
-- attention and MLP as three layers (M.hybrid_args says so).
M.PARALLEL_AS = "M*-"

--- The parallel layers P of a model's hybrid pattern (0 without).
-- @tparam table m model table
-- @treturn integer
function M.parallel_layers(m)
  return select(2, (m.hybrid_layer_pattern or ""):gsub("P", ""))
end

--- Decoder layers the script builds: num_layers, each P written as
-- #M.PARALLEL_AS layers.
-- @tparam table m model table
-- @treturn integer
function M.written_layers(m)
  return m.num_layers + (#M.PARALLEL_AS - 1) * M.parallel_layers(m)
end

--- Gated DeltaNet layers (Qwen3-Next) on Megatron-LM d98e8a64, as
-- Megatron-Bridge's Qwen3NextBridge sets them: the GPT model with
-- TransformerConfig.experimental_attention_variant "gdn" (the canonical
-- name of "gated_delta_net", transformer_config.py:301-310) and
-- linear_attention_freq k, layer i (1-based) softmax attention when
-- i % k == 0 (experimental_attention_variant_module_specs.py
-- get_linear_attention_pattern; gpt_builders.py:37 builds the spec), and
-- the linear_* widths (transformer_config.py:363-382); the flags are
-- TransformerConfig's field names (arguments.py _add_experimental_
-- attention_variant_args and the config-derived groups).
-- A beta of 2 sigmoid(b) (OLMo Hybrid's linear_beta_doubled) is NOT
-- EXPRESSIBLE: gdn.py:88 takes sigmoid(b).
-- @tparam table m model table
-- @tparam function A flag writer
-- @tparam function N note writer
function M.gdn_args(m, A, N)
  A("--experimental-attention-variant", "gdn")
  if m.linear_beta_doubled then
    N("NOT WRITTEN", "the Gated DeltaNet's beta 2 sigmoid(b) (linear_beta_doubled, OLMo Hybrid " ..
      "linear_allow_neg_eigval): NOT EXPRESSIBLE in Megatron-LM d98e8a64 (GatedDeltaNet takes " ..
      "sigmoid(b), megatron/core/ssm/gated_delta_net/gdn.py:88); the script's beta is in [0, 1]")
  end
  -- a pattern as la_freq_type's list (arguments.py:352-372: 1 linear
  -- attention, 0 softmax attention, one per layer)
  local p = m.linear_attention_pattern
  A("--linear-attention-freq", p and ("[" .. p:gsub("L", "1,"):gsub("A", "0,"):gsub(",$", "") .. "]")
    or m.linear_attention_period)
  A("--linear-conv-kernel-dim", m.linear_conv_kernel_dim)
  A("--linear-key-head-dim", m.linear_key_head_dim)
  A("--linear-value-head-dim", m.linear_value_head_dim)
  A("--linear-num-key-heads", m.linear_num_key_heads)
  A("--linear-num-value-heads", m.linear_num_value_heads)
end

--- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) on Megatron-LM
-- d98e8a64: TransformerConfig.experimental_attention_variant "dsa" with
-- the MLA flags (get_dsa_module_spec_for_backend asserts
-- multi_latent_attention and builds AbsorbedMLASelfAttention with
-- DSAttention and DSAIndexer), the indexer's widths and top-k
-- (dsa_indexer_n_heads, dsa_indexer_head_dim, dsa_indexer_topk,
-- transformer_config.py:317-323), the fused TileLang kernels the estimate
-- prices (dsa_kernel_backend, dsa.py / ops/sparse_mla.py; "none" runs the
-- PyTorch reference path, which materialises S x S scores), and
-- --no-rope-fusion (transformer_config.py:3162 asserts "RoPE fusion is
-- not supported for DSAttention"); context parallelism is all_gather
-- only (the core refuses the others).  Without a loss coefficient the
-- indexer is not trained (its inputs are detached and it runs under
-- no_grad), as the estimate prices it; index_rope_interleave
-- (GLM-5) -> --dsa-indexer-rope-interleaved (transformer_config.py:345).
-- training.dsa_indexer_loss_coeff > 0 trains the indexer with its KL loss
-- over the top-k (--dsa-indexer-loss-coeff, --dsa-indexer-use-sparse-loss:
-- the fused kernels' path the estimate prices).
-- @tparam table m model table
-- @tparam table tr training table
-- @tparam function A flag writer
-- @tparam function N note writer
function M.dsa_args(m, tr, A, N)
  A("--experimental-attention-variant", "dsa")
  A("--dsa-indexer-n-heads", m.index_n_heads)
  A("--dsa-indexer-head-dim", m.index_head_dim)
  A("--dsa-indexer-topk", m.index_topk)
  A("--dsa-kernel-backend", "tilelang")
  N("NOTE", "--dsa-kernel-backend tilelang needs Megatron-LM's TileLang DSA kernels (the indexer and SparseMLA, " ..
    "megatron/core/transformer/experimental_attention_variant/ops/tilelang_dsa.py): TransformerConfig refuses " ..
    "to start without them (megatron/core/utils.py _validate_dsa_kernel_backend_dependencies @ d98e8a64); " ..
    "--dsa-kernel-backend none runs the PyTorch fallback, which materialises S x S scores and is not what " ..
    "the estimate prices")
  if m.index_rope_interleave then A("--dsa-indexer-rope-interleaved") end
  if (m.index_topk_freq or 0) > 1 then
    -- cross-layer top-k sharing (GLM-5.2): TransformerConfig fields
    -- dsa_indexer_topk_freq / dsa_indexer_skip_topk_offset
    -- (transformer_config.py:326-331 @ d98e8a64), flags by the
    -- ArgumentGroupFactory; the layer split keeps every model chunk
    -- starting on a computing layer, as the model spec asserts
    A("--dsa-indexer-topk-freq", m.index_topk_freq)
    A("--dsa-indexer-skip-topk-offset", m.index_skip_topk_offset or 0)
  end
  A("--no-rope-fusion")
  local coeff = tr.dsa_indexer_loss_coeff or 0
  if coeff > 0 then
    A("--dsa-indexer-loss-coeff", M.num(coeff))
    A("--dsa-indexer-use-sparse-loss")
  else
    N("NOTE", "DeepSeek Sparse Attention: the indexer is not trained (training.dsa_indexer_loss_coeff unset, " ..
      "Megatron's default), as estimated; Megatron-Bridge's GLM-5 bridge trains it at 0.001 with the sparse loss")
  end
  N("APPROXIMATE", "DeepSeek Sparse Attention: the indexer's Hadamard rotation and score ReLU are Megatron's " ..
    "defaults (Megatron-Bridge's GLM-5 bridge turns the rotation off); they change no estimate")
end

--- Heterogeneous layers (Llama-Nemotron NAS): Megatron reads their
-- attention and MLP per layer from the HF config's block_configs
-- (--heterogeneous-layers-config-path, arguments.py l.3629; HeterogeneousTransformerConfig,
-- transformer/heterogeneous/heterogeneous_config.py @ d98e8a64), the
-- config the estimate read; without one, NOT WRITTEN.
-- @tparam table c context (model_source: the config file read)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.nas_args(c, A, N)
  if c.model_source then
    A("--heterogeneous-layers-config-path", c.model_source) -- absolute (launch.context)
    -- validate_model_config_args_from_heterogeneous_config compares
    -- use_rotary_position_embeddings with True (arguments.py:220), which
    -- only this deprecated flag sets
    A("--use-rotary-position-embeddings")
  else
    N("NOT WRITTEN", "the heterogeneous layers (nas_attention_pattern, nas_ffn_pattern): Megatron reads them from " ..
      "a config.json's block_configs (--heterogeneous-layers-config-path), and this model came from no file; add " ..
      "the flag with its config")
  end
end

--- The gated MLP's activation (model.glu_activation), offset and clamp.
-- SiLU -> --swiglu; quick GELU (gpt-oss) -> --quick-geglu with
-- --glu-linear-offset and --activation-func-clamp-value; GELU-tanh
-- (Gemma's GeGLU) has no flag (activation_func is not on the command
-- line): --quick-geglu, the same gated MLP with quick GELU, is written
-- and the file is partial.  Sources: M.ARCH_SOURCES.
-- @tparam table c context
-- @tparam function A flag writer
-- @tparam function N note writer
function M.glu_args(c, A, N)
  local m = c.model
  local act = m.glu_activation or "silu"
  if act == "silu" or act == "situ" then
    A("--swiglu")
    if act == "situ" then
      not_written(N, "Kimi K3's SiTU activation", "gated MLPs only with SiLU, --swiglu, or quick GELU, " ..
        "--quick-geglu; " .. M.ARCH_SOURCES.activation_excluded, "--swiglu is written")
    end
  else
    A("--quick-geglu")
  end
  if act == "gelu_tanh" or act == "gelu" then
    local name = act == "gelu" and "GELU" or "GELU-tanh"
    not_written(N, ("the GeGLU MLP's GELU (%s)"):format(act == "gelu" and "gelu" or "gelu_pytorch_tanh"),
      "gated MLPs only with SiLU, --swiglu, or quick GELU, --quick-geglu; " .. M.ARCH_SOURCES.activation_excluded,
      "--quick-geglu is written: the same gated MLP and shapes with x * sigmoid(1.702 x) in place of " .. name)
  end
  local offset, clamp = m.glu_linear_offset or 0, m.glu_clamp or 0
  if offset ~= 0 then
    if act == "silu" then
      not_written(N, "glu_linear_offset " .. M.num(offset) .. " with SiLU", "TransformerConfig refuses an " ..
        "offset with the fused SwiGLU, " .. M.ARCH_SOURCES.glu_linear_offset, "no offset is written")
    else
      A("--glu-linear-offset", M.num(offset))
    end
  end
  if clamp > 0 then M.clamp_args(c, act, offset, clamp, A, N) end
end

--- --activation-func-clamp-value c: the gate clamped to <= c, the linear
-- half to [-c, c] (M.ARCH_SOURCES.clamp); for SiLU TransformerConfig
-- allows it only with experts and no offset.
-- @tparam table c context
-- @tparam string act glu_activation
-- @tparam number offset glu_linear_offset
-- @tparam number clamp glu_clamp (> 0)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.clamp_args(c, act, offset, clamp, A, N)
  if act == "silu" and ((c.model.num_experts or 0) == 0 or offset ~= 0) then
    not_written(N, "the SwiGLU clamp " .. M.num(clamp), "TransformerConfig allows it for SwiGLU only with " ..
      "experts and no offset, " .. M.ARCH_SOURCES.clamp, "no clamp is written")
    return
  end
  A("--activation-func-clamp-value", M.num(clamp))
end

--- Q/K norms: --qk-layernorm builds per-head norms (M.ARCH_SOURCES.
-- qk_layernorm); full-width norms (OLMoE) are NOT EXPRESSIBLE and the
-- per-head ones are written.  MLA: the norms of the query and KV latents
-- (DeepSeek q_a_layernorm, kv_a_layernorm) are MLASelfAttention's
-- q_layernorm / kv_layernorm, built when qk_layernorm is set
-- (multi_latent_attention.py).
-- @tparam table m model
-- @tparam boolean mla multi-latent attention
-- @tparam function A flag writer
-- @tparam function N note writer
function M.qk_norm_args(m, mla, A, N)
  if not (m.qk_norm or mla) then return end
  A("--qk-layernorm")
  if m.qk_norm_head_weights and not mla then
    not_written(N, "Q/K norms with a weight of their own per head (qk_norm_head_weights, Command R+)",
      "--qk-layernorm shares one head_dim-wide norm across the heads, " .. M.ARCH_SOURCES.qk_layernorm,
      "--qk-layernorm is written: one weight for every head")
  end
  if m.qk_norm_weightless and not mla then
    not_written(N, "Q/K norms without a weight (qk_norm_weightless, nanochat)", "--qk-layernorm's norms have a " ..
      "learnable weight, " .. M.ARCH_SOURCES.qk_layernorm, "--qk-layernorm is written: weighted norms")
  end
  if m.qk_norm_full_width and not mla then
    not_written(N, "Q/K norms over the whole projection (qk_norm_full_width)", "--qk-layernorm normalises " ..
      "each head, " .. M.ARCH_SOURCES.qk_layernorm, "--qk-layernorm is written: per-head norms")
  end
end

--- Writes --attention-dropout and --hidden-dropout as the estimate ran
-- them (launch.dropout_probs).  Both always written, so the file never
-- leans on Megatron's default.
-- @tparam table tr training table
-- @tparam function A `A(flag, value)`
function M.dropout_args(tr, A)
  local a, h = launch_util.dropout_probs(tr)
  A("--attention-dropout", M.num(a))
  A("--hidden-dropout", M.num(h))
end

--- The norm kind and what Megatron's GPT layer cannot carry: norms
-- without weights (OLMo's norm_weightless), LayerNorm without bias
-- (Megatron's LayerNorm has one), norms after attention and
-- MLP (OLMo 2's reordered_norm) and norms beyond the two per layer
-- (Gemma's sandwich norms, M.ARCH_SOURCES.norms).
-- @tparam table m model
-- @tparam function A flag writer
-- @tparam function N note writer
function M.norm_args(m, A, N)
  if m.norm == "rmsnorm" then A("--normalization", "RMSNorm") end
  -- TransformerConfig.layernorm_zero_centered_gamma (transformer_config.py:206)
  if m.norm_zero_centered then A("--apply-layernorm-1p") end
  if m.norm_weightless then
    not_written(N, "norms without a weight or bias (norm_weightless, OLMo, nanochat)", "TENorm / FusedLayerNorm " ..
      "always have a learnable weight (and a LayerNorm its bias)", "the script's norms have them")
  elseif m.norm == "layernorm" and m.norm_bias == false then
    not_written(N, "LayerNorm without bias", "TENorm / FusedLayerNorm always have a bias", "the script's " ..
      "LayerNorms have biases")
  end
  if m.parallel_attn_mlp then
    not_written(N, (m.norms_per_layer or 2) >= M.GPT_LAYER_NORMS and "attention and MLP in parallel, each on a " ..
      "norm of its own (parallel_attn_mlp, Falcon-40B)" or "attention and MLP in parallel on one normed input " ..
      "(parallel_attn_mlp, Cohere2)",
      "TransformerLayer runs the MLP after the attention's residual add (transformer_layer.py)",
      "the script's layers run them in sequence, each with its own norm")
  end
  if m.embedding_norm then
    not_written(N, "a LayerNorm on the word embeddings (embedding_norm, BLOOM)", "GPTModel's " ..
      "LanguageModelEmbedding has no norm", "the script's embeddings feed the first layer directly (" ..
      (m.norm_weightless and 0 or (m.norm_bias == false or m.norm == "rmsnorm") and 1 or 2) * m.hidden_size ..
      " parameters fewer)")
  end
  if m.mup_multipliers then
    not_written(N, "the embedding, residual, attention and logit multipliers (mup_multipliers, Granite)",
      "TransformerConfig's MuP options scale the embeddings, the output and the attention, not the residual " ..
      "branches (transformer_config.py:428-475)", "the script trains without them")
  end
  if m.reordered_norm then
    not_written(N, "norms after attention and after the MLP (reordered_norm, OLMo 2)", "TransformerLayer " ..
      "normalises the input of each (input_layernorm, pre_mlp_layernorm; transformer_layer.py:368,426)",
      "the script's layers normalise before attention and MLP")
  end
  local per = m.norms_per_layer or 2
  if per > M.GPT_LAYER_NORMS then
    not_written(N, string.format("%d norms per layer (sandwich norms after attention and MLP)", per),
      M.ARCH_SOURCES.norms, string.format("the script's layers have %d", M.GPT_LAYER_NORMS))
  end
end

--- Norms in one Megatron-Core GPT layer: input_layernorm and
-- pre_mlp_layernorm (or the fused layer-norm linears).
M.GPT_LAYER_NORMS = 2

--- The sliding window (M.ARCH_SOURCES.window): TransformerConfig.
-- window_size (left, right) as Megatron's GPT-OSS example, a W-token
-- window (HF sliding_window) being W - 1 tokens back; on every layer
-- without --window-attn-skip-freq, on the layers whose 1-based number is
-- not a multiple of k with --window-attn-skip-freq k
-- (model.sliding_window_period), or on the S layers of
-- model.sliding_window_layout with --window-attn-skip-freq's list form
-- (1 windowed, 0 full: megatron/core/transformer/utils.py @ d98e8a64
-- is_layer_window_attention).  A window on some layers with neither: not
-- written (full attention everywhere), the file partial.
-- @tparam table m model
-- @tparam function A flag writer
-- @tparam function N note writer
function M.window_args(m, A, N)
  local W = m.sliding_window or 0
  if W <= 0 then return end
  local L = m.num_layers
  local wl, k = m.sliding_window_layers or 0, m.sliding_window_period or 0
  local layout = m.sliding_window_layout or ""
  if wl == 0 or wl >= L or k > 0 or #layout == L then
    A("--window-size", string.format("%d,0", W - 1))
    if k > 0 and wl < L then
      A("--window-attn-skip-freq", k)
    elseif #layout == L and wl < L then
      local bits = {}
      for i = 1, L do bits[i] = layout:sub(i, i) == "S" and 1 or 0 end
      A("--window-attn-skip-freq", M.freq_list(bits))
    end
    return
  end
  not_written(N, string.format("a %d-token sliding window on %d of %d layers", W, wl, L), "the model gives " ..
    "no period for --window-attn-skip-freq", "no window is written: every layer attends fully")
end

--- Llama 4's attention (M.ARCH_SOURCES qk_l2_norm, no_rope, chunk): the
-- weightless Q/K L2 norms -> --qk-l2-norm, which Megatron applies on
-- every layer, transformers on the RoPE layers only (NOT WRITTEN when the
-- model has NoPE layers); the NoPE layers -> --no-rope-freq k (num_layers
-- a multiple of k, as TransformerConfig asserts) or its list expression;
-- chunked attention has no training flag: the same as causal attention
-- when seq_length <= the chunk (a NOTE), else NOT WRITTEN.
-- @tparam table m model
-- @tparam table tr training table (seq_length)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.llama4_attention_args(m, tr, A, N)
  local L, k = m.num_layers, m.nope_layer_period or 0
  if m.qk_l2_norm then
    A("--qk-l2-norm")
    if k > 0 then
      not_written(N, "L2 Q/K norms on the RoPE layers only", "--qk-l2-norm normalises every layer, " ..
        M.ARCH_SOURCES.qk_l2_norm, "the script's NoPE layers normalise Q and K too")
    end
  end
  if k > 0 then
    local pattern = {}
    for i = 1, L do pattern[i] = i % k == 0 and 1 or 0 end
    A("--no-rope-freq", L % k == 0 and tostring(k) or M.moe_layer_freq(pattern))
  end
  local c, seq = m.attention_chunk_size or 0, tr.seq_length or 0
  if c <= 0 then return end
  local n = (m.chunked_attention_layers or 0) > 0 and m.chunked_attention_layers or L
  if seq > c then
    not_written(N, string.format("chunked attention (%d-token chunks on %d of %d layers)", c, n, L),
      M.ARCH_SOURCES.chunk, string.format("the script's layers attend causally over all %d tokens", seq))
  else
    N("NOTE", string.format("chunked attention (%d-token chunks on %d of %d layers) is causal attention at " ..
      "seq_length %d <= the chunk: nothing to write", c, n, L, seq))
  end
end

--- Attention sinks (--softmax-type learnable, M.ARCH_SOURCES.
-- softmax_type) and soft-capping (NOT EXPRESSIBLE, M.ARCH_SOURCES.softcap).
-- @tparam table m model
-- @tparam function A flag writer
-- @tparam function N note writer
function M.attention_extras(m, A, N)
  if m.attention_sinks then A("--softmax-type", "learnable") end
  for _, k in ipairs({ "attn_logit_softcapping", "final_logit_softcapping" }) do
    if (m[k] or 0) > 0 then
      not_written(N, k .. " " .. M.num(m[k]), M.ARCH_SOURCES.softcap, "the script's logits are not capped")
    end
  end
end

--- Gemma 4's full-attention layers' own attention (global_head_dim,
-- global_num_query_groups, global_k_eq_v; M.ARCH_SOURCES.layer_shape)
-- and its router's scales (moe_router_scales; M.ARCH_SOURCES.
-- router_scales): NOT WRITTEN, the script's layers all have the windowed
-- layers' attention and its router neither scale.
-- @tparam table m model
-- @tparam function N note writer
function M.global_attention_notes(m, N)
  if m.hc_mult then
    not_written(N, ("DeepSeek-V4's layers (%d CSA and %d HCA compressed layers with the indexer, the grouped " ..
      "output projection of o_groups %d x o_lora_rank %d, the low-rank query, %d hash-routed MoE layers, " ..
      "hyper-connections of %d streams)"):format(m.csa_layers or 0, m.hca_layers or 0, m.o_groups or 0,
      m.o_lora_rank or 0, m.moe_hash_layers or 0, m.hc_mult), M.ARCH_SOURCES.dsv4,
      "the script builds a GQA model of one KV head with a dense output projection, not the model estimated")
  end
  local parts = {}
  if m.linear_attention == "kda" then
    not_written(N, "Kimi Delta Attention on the linear layers (" .. (m.linear_attention_pattern or "") ..
      ": L Kimi Delta Attention, A MLA)", M.ARCH_SOURCES.kda,
      "the script's layers all have multi-latent attention: not the model estimated (NeMo AutoModel trains it)")
  end
  local mixer = require("apsearch.defaults").transformers_mixer(m)
  if mixer then
    not_written(N, ("%s's %s on the linear layers (%s: %s)"):format(mixer.family, mixer.what,
      m.linear_attention_pattern or "", mixer.letters), M.ARCH_SOURCES[m.linear_attention],
      "the script's layers all " .. mixer.instead .. ": not the model estimated (NeMo AutoModel trains it)")
  end
  if m.msa_layers then
    not_written(N, ("MiniMax-M3's block-sparse attention on %d of %d layers (a selection-only indexer of %d heads " ..
      "x %d, the top %d blocks of %d keys)"):format(m.msa_layers, m.num_layers, m.msa_index_heads or 0,
      m.msa_index_dim or 0, m.msa_topk_blocks or 0, m.msa_block_size or 0), M.ARCH_SOURCES.msa,
      "the script's layers attend densely, without the indexer: not the time and memory estimated")
  end
  if m.global_num_attention_heads then
    not_written(N, ("%d query heads on the %d full-attention layers (global_num_attention_heads) beside %d on " ..
      "the windowed ones"):format(m.global_num_attention_heads, m.num_layers - (m.sliding_window_layers or 0),
      m.num_attention_heads), M.ARCH_SOURCES.heads_per_layer,
      ("every layer of the script has %d query heads"):format(m.num_attention_heads))
  end
  if m.attention_head_gate then
    not_written(N, "the gate per query head on the attention output (attention_head_gate, g_proj h x a)",
      M.ARCH_SOURCES.head_gate, "the script's attention has no output gate")
  end
  if m.global_head_dim then parts[#parts + 1] = "head width " .. m.global_head_dim end
  if m.global_num_query_groups then parts[#parts + 1] = m.global_num_query_groups .. " KV heads" end
  if m.global_k_eq_v then parts[#parts + 1] = "V from K's projection" end
  if #parts > 0 then
    local L = m.num_layers
    not_written(N, ("the full-attention layers' own attention (%s) on %d of %d layers"):format(
      table.concat(parts, ", "), L - (m.sliding_window_layers or 0), L), M.ARCH_SOURCES.layer_shape,
      "every layer of the script has the windowed layers' head width, KV heads and V projection")
  end
  if m.moe_router_scales then
    not_written(N, "the router's input scale and per-expert scales (moe_router_scales)", M.ARCH_SOURCES.router_scales,
      "the script's router has neither")
  end
  if m.attn_v_head_dim then
    not_written(N, ("V heads %d wide beside Q/K heads %d wide (attn_v_head_dim)"):format(m.attn_v_head_dim,
      m.head_dim or 0), M.ARCH_SOURCES.v_width, "the script's V heads are as wide as its Q/K heads")
  end
  if m.window_attention_sinks then
    local L = m.num_layers
    not_written(N, ("attention sinks on the %d windowed layers only (window_attention_sinks)"):format(
      m.sliding_window_layers or 0), M.ARCH_SOURCES.sinks_per_layer, ("--softmax-type learnable puts them on " ..
      "all %d layers"):format(L))
  end
end

--- Megatron-LM's first and last layers in bf16 (TransformerConfig
-- first_last_layers_bf16, num_layers_at_start_in_bf16,
-- num_layers_at_end_in_bf16, transformer_config.py l.649-658 @ d98e8a64;
-- src/core/bf16layers.c): the flag and both counts, Megatron's default 1
-- written when a count is unset.
-- @tparam table tr the training table
-- @tparam function A appends a flag and its value
function M.bf16_layers_args(tr, A)
  if not tr.first_last_layers_bf16 then return end
  A("--first-last-layers-bf16")
  A("--num-layers-at-start-in-bf16", tr.num_layers_at_start_in_bf16 or M.BF16_LAYERS_DEFAULT)
  A("--num-layers-at-end-in-bf16", tr.num_layers_at_end_in_bf16 or M.BF16_LAYERS_DEFAULT)
end
--- Megatron's count of first (and of last) layers in bf16 when unset
-- (APS_BF16_LAYERS_DEFAULT, include/apsearch/types.h).
M.BF16_LAYERS_DEFAULT = 1

--- Linear-layer biases (M.ARCH_SOURCES.bias).  Megatron has two switches:
-- add_bias_linear (q/k/v, output projection, MLP or experts and the
-- router together) and add_qkv_bias.  Written: no bias ->
-- --disable-bias-linear; q/k/v only -> with --add-qkv-bias; every bias
-- (the router's too on an MoE model) -> nothing (Megatron's default).
-- Any other mix keeps the closest (biases everywhere when the output
-- projection or the MLP has one) and is NOT WRITTEN; with experts and
-- biases an expert tensor parallel size over 1 is refused by
-- TransformerConfig (NOT EXPRESSIBLE).  An output-layer bias
-- (lm_head_bias) is NOT WRITTEN: GPTModel's output layer has none.
-- @tparam table c context
-- @tparam function A flag writer
-- @tparam function N note writer
function M.bias_args(c, A, N)
  local m, r = c.model, c.rec
  if m.lm_head_bias then
    -- GPTModel builds its output layer with bias=False
    -- (megatron/core/models/gpt/gpt_model.py:286 @ d98e8a64)
    not_written(N, "the output layer's bias (lm_head_bias)", "GPTModel's output layer has no bias",
      "the script trains it without one (" .. m.vocab_size .. " parameters fewer)")
  end
  local moe = (m.num_experts or 0) > 0
  local has = { qkv = m.qkv_bias == true, proj = m.attn_out_bias == true, mlp = m.mlp_bias == true }
  if moe then has.router = m.moe_router_linear_bias == true end
  if not (has.proj or has.mlp) then
    A("--disable-bias-linear")
    if has.qkv then A("--add-qkv-bias") end
    if has.router then
      not_written(N, "the router's bias without other linear biases", "the router has a bias exactly " ..
        "with add_bias_linear", "no router bias")
    end
    return
  end
  -- with biases, validate_args keeps bias_gelu_fusion on and TransformerConfig
  -- refuses a fused bias-activation of squared ReLU (transformer_config.py:2420-2424
  -- @ d98e8a64: gelu, silu or quick_gelu only; arguments.py:1605, :2892)
  if m.mlp == "relu2" then A("--no-bias-gelu-fusion") end
  -- TEGroupedMLP asserts "bias_dropout_fusion is not supported in
  -- TEGroupedMLP when add_bias_linear=True" (moe/experts.py l.205-207 @
  -- d98e8a64; Megatron-LM's examples/gptoss/02_train.sh passes the flag):
  -- the unfused bias-dropout-add it leaves is not priced (a few element-wise
  -- passes over the hidden state a layer)
  if moe and r.moe_grouped_gemm ~= false then A("--no-bias-dropout-fusion") end
  local missing = {}
  for _, k in ipairs({ "qkv", "proj", "mlp", "router" }) do
    if has[k] == false then missing[#missing + 1] = k end
  end
  if #missing > 0 then
    not_written(N, "biases on only some linear layers", "add_bias_linear puts them on q/k/v, the output " ..
      "projection, the MLP and the router together", "the script adds biases the model lacks on: " ..
      table.concat(missing, ", "))
  end
  if moe and (r.etp_degree or r.tp_degree or 1) > 1 then
    N("NOT EXPRESSIBLE in Megatron-LM", "expert biases with expert tensor parallelism " ..
      (r.etp_degree or r.tp_degree) .. ": TransformerConfig asserts expert_tensor_parallel_size 1 with " ..
      "add_bias_linear and experts (transformer_config.py:2612); the script fails there")
  end
end

--- Multi-head latent attention flags (DeepSeek-V2/V3; MLATransformerConfig,
-- megatron/core/transformer/transformer_config.py @ d98e8a64): the HF
-- config's names map one to one, q_lora_rank 0 (no query compression)
-- leaves --q-lora-rank unset (None).
-- @tparam table m model table (kv_lora_rank > 0)
-- @tparam function A flag writer
function M.mla_args(m, A)
  A("--multi-latent-attention")
  if (m.q_lora_rank or 0) > 0 then A("--q-lora-rank", m.q_lora_rank) end
  A("--kv-lora-rank", m.kv_lora_rank)
  A("--qk-head-dim", m.qk_nope_head_dim)
  A("--qk-pos-emb-head-dim", m.qk_rope_head_dim)
  A("--v-head-dim", m.v_head_dim)
end

--- A per-layer 0/1 pattern as the Python list expression Megatron's
-- moe_freq_type evaluates (megatron/training/arguments.py @ d98e8a64),
-- run-length coded over its shortest period, e.g. "[0]*3+[1]*58",
-- "([0]+[1])*24".
-- @tparam table pattern 0 or 1 per layer
-- @treturn string
function M.freq_list(pattern)
  local L = #pattern
  local function periodic(p)
    for i = p + 1, L do if pattern[i] ~= pattern[i - p] then return false end end
    return true
  end
  local period = L
  for p = 1, L - 1 do
    if L % p == 0 and periodic(p) then period = p break end
  end
  local runs, i = {}, 1
  while i <= period do
    local j = i
    while j < period and pattern[j + 1] == pattern[i] do j = j + 1 end
    local n = j - i + 1
    runs[#runs + 1] = "[" .. pattern[i] .. "]" .. (n > 1 and ("*" .. n) or "")
    i = j + 1
  end
  local body = table.concat(runs, "+")
  if period < L then return "(" .. body .. ")*" .. (L // period) end
  return body
end

--- `--moe-layer-freq` for a per-layer pattern (1: routed experts, 0:
-- dense FFN): nothing when every layer is MoE (the default 1), k when
-- layer i is MoE exactly for i mod k = 0, else M.freq_list's list.
-- @tparam table pattern 0/1 per layer (core.model_params(m).moe_pattern)
-- @treturn string|nil
function M.moe_layer_freq(pattern)
  local L = #pattern
  -- an integer k: layer i (0-based) is MoE when i % k == 0
  -- (get_gpt_decoder_block_spec's moe_layer_pattern)
  for k = 1, L do
    local every = true
    for i = 1, L do
      if pattern[i] ~= ((i - 1) % k == 0 and 1 or 0) then every = false break end
    end
    if every then return k > 1 and tostring(k) or nil end
  end
  return M.freq_list(pattern)
end

--- The router flags: the model's router settings (hf.lua reads them from
-- config.json; they change no estimate) mapped as Megatron-Bridge v0.5.0
-- does (model_bridge.py CONFIG_MAPPING: aux_loss_alpha /
-- router_aux_loss_coef -> moe_aux_loss_coeff, n_group ->
-- moe_router_num_groups, topk_group -> moe_router_group_topk,
-- routed_scaling_factor -> moe_router_topk_scaling_factor; the DeepSeek
-- bridges' seq_aux_loss and moe_router_pre_softmax, the Qwen3-MoE
-- bridge's aux_loss), each checked against Megatron-LM d98e8a64
-- moe_utils.py topk_routing_with_score_function:
--
-- * the expert bias (moe_router_bias): --moe-router-score-function sigmoid
--   (TransformerConfig refuses the bias with softmax) and
--   --moe-router-enable-expert-bias; a sigmoid without it
--   (moe_router_sigmoid, Llama 4): --moe-router-score-function sigmoid
--   (moe_utils.py:915-929: top-1 keeps the sigmoid score unnormalised);
-- * moe_aux_loss_coeff: --moe-router-load-balancing-type seq_aux_loss
--   (moe_seq_aux_loss: DeepSeek's per-sequence loss, whose
--   E / (k T) normalisation sequence_load_balancing_loss_func shares) or
--   aux_loss, and --moe-aux-loss-coeff;
-- * moe_router_pre_softmax (weights not renormalised over the top k):
--   --moe-router-pre-softmax with a softmax score (softmax, then top-k);
--   with sigmoid and k > 1 NOT EXPRESSIBLE (Megatron always divides the
--   top-k sigmoid scores by their sum); without it and k = 1 NOT
--   EXPRESSIBLE (the renormalised weight is 1; TransformerConfig refuses
--   top-1 softmax routing without --moe-router-pre-softmax);
-- * moe_router_num_groups / group_topk: --moe-router-num-groups,
--   --moe-router-group-topk when the model scores a group as Megatron's
--   group_limited_topk does, by its best k / group_topk experts
--   (moe_router_group_score_topk 0 or equal to it), else NOT EXPRESSIBLE;
-- * moe_router_topk_scaling_factor: --moe-router-topk-scaling-factor.
--
-- What the model does not give stays at Megatron's default, named in a
-- NOTE.
-- @tparam table c context (apsearch.launch.context)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.router_args(c, A, N)
  local m = c.model
  local k = m.experts_per_token
  local sigmoid = (m.moe_router_bias and not m.moe_router_softmax_bias) or m.moe_router_sigmoid
  local absent = {}
  if sigmoid then
    -- TransformerConfig: the expert bias needs a sigmoid (or sqrtsoftplus)
    -- score; DeepSeek-V3's scoring_func is sigmoid, Llama 4's router a
    -- sigmoid without the bias
    A("--moe-router-score-function", "sigmoid")
    if m.moe_router_bias then A("--moe-router-enable-expert-bias") end
  elseif m.moe_router_bias then
    N("NOT EXPRESSIBLE in Megatron-LM", "the expert bias on softmax scores (ERNIE 4.5's " ..
      "e_score_correction_bias): TransformerConfig takes --moe-router-enable-expert-bias with sigmoid " ..
      "(or sqrtsoftplus) scores only (transformer_config.py @ d98e8a64); written as softmax routing " ..
      "without the bias")
  end
  -- the model family's bridge routes in fp32 (apsearch.hf ROUTER_FP32)
  if m.moe_router_fp32 then A("--moe-router-dtype", "fp32") end
  local coeff = m.moe_aux_loss_coeff or 0
  if coeff > 0 then
    A("--moe-router-load-balancing-type", m.moe_seq_aux_loss and "seq_aux_loss" or "aux_loss")
    A("--moe-aux-loss-coeff", M.num(coeff))
    if not m.moe_seq_aux_loss then
      N("NOTE", "--moe-aux-loss-coeff is the config's coefficient unchanged, as Megatron-Bridge maps it; " ..
        "Megatron's aux_loss (switch_load_balancing_loss_func) is E/k x sum f_i P_i per MoE layer, " ..
        "transformers' load_balancing_loss_func (Mixtral, Qwen-MoE) E x sum f_i P_i over all layers' " ..
        "tokens pooled (k times larger at the same coefficient)")
    end
  else
    absent[#absent + 1] = "the load-balancing loss (the model gives no coefficient above 0: " ..
      "--moe-aux-loss-coeff 0, no auxiliary loss" .. (sigmoid and "; balanced by the expert bias" or "") .. ")"
  end
  if m.moe_router_pre_softmax then
    if not sigmoid then
      A("--moe-router-pre-softmax")
    elseif k > 1 then
      N("NOT EXPRESSIBLE in Megatron-LM", string.format("norm_topk_prob = false with sigmoid scores " ..
        "(moe_router_pre_softmax, top-%d): topk_routing_with_score_function divides the top-k sigmoid " ..
        "scores by their sum; not written", k))
    end
  elseif k == 1 and not sigmoid then
    N("NOT EXPRESSIBLE in Megatron-LM", "renormalised top-1 routing (weight 1): TransformerConfig " ..
      "needs --moe-router-pre-softmax for top-1 softmax routing, which weights by the softmax " ..
      "probability; not written (the script fails TransformerConfig's check)")
  end
  local g, gk = m.moe_router_num_groups or 0, m.moe_router_group_topk or 0
  if g > 0 then
    local sk = m.moe_router_group_score_topk or 0
    if sk == 0 or sk == k // gk then
      A("--moe-router-num-groups", g)
      A("--moe-router-group-topk", gk)
      if not sigmoid and not m.moe_router_pre_softmax then
        -- moe_utils.py topk_routing_with_score_function @ d98e8a64: softmax
        -- without pre-softmax runs compute_topk on the logits
        N("NOT EXPRESSIBLE in Megatron-LM", string.format("n_group = %d, topk_group = %d over softmax " ..
          "probabilities with the top-k renormalised: without --moe-router-pre-softmax Megatron ranks the " ..
          "groups by their logits, not their probabilities (the groups chosen can differ); written as that", g, gk))
      end
    else
      N("NOT EXPRESSIBLE in Megatron-LM", string.format("n_group = %d, topk_group = %d with a group " ..
        "scored by its best %d expert(s): group_limited_topk scores it by its best moe_router_topk / " ..
        "group_topk = %d; not written (routing without groups)", g, gk, sk, k // gk))
    end
  else
    absent[#absent + 1] = "group-limited routing"
  end
  local sf = m.moe_router_topk_scaling_factor or 0
  if sf > 0 then
    A("--moe-router-topk-scaling-factor", M.num(sf))
  else
    absent[#absent + 1] = "score scaling"
  end
  if #absent > 0 then
    N("NOTE", "router settings the model does not use are left off, as Megatron's defaults have them: " ..
      table.concat(absent, ", "))
  end
end

--- Mixture-of-experts flags (megatron/core/transformer/transformer_config.py
-- and megatron/training/arguments.py @ d98e8a64): experts, top-k, expert
-- and shared-expert widths, which layers are MoE, expert parallel and
-- expert tensor parallel sizes, token dispatcher (flex: the backend of
-- training.moe_flex_dispatcher_backend, DeepEP by default as in
-- Megatron), grouped GEMM, capacity factor (padded token drop; empty =
-- dropless), the router (M.router_args); a
-- model's MTP modules the estimate does not train (training.mtp_num_layers
-- 0) get a NOTE.
-- @tparam table c context (apsearch.launch.context)
-- @tparam function A flag writer
-- @tparam function N note writer
function M.moe_args(c, A, N)
  local r, m = c.rec, c.model
  A("--num-experts", m.num_experts)
  A("--moe-router-topk", m.experts_per_token)
  A("--moe-ffn-hidden-size", m.moe_ffn_hidden_size)
  -- latent MoE: TransformerConfig.moe_latent_size (transformer_config.py
  -- l.952 @ d98e8a64, a flag by ArgumentGroupFactory; arguments.py
  -- l.1980-1982 asserts it > 0 and experts)
  if (m.moe_latent_size or 0) > 0 then A("--moe-latent-size", m.moe_latent_size) end
  if (m.shared_expert_ffn_hidden_size or 0) > 0 then
    A("--moe-shared-expert-intermediate-size", m.shared_expert_ffn_hidden_size)
    if m.shared_expert_gate then A("--moe-shared-expert-gate") end
  end
  -- a hybrid model's E layers place its experts (HybridStack builds
  -- moe_layer for each E, hybrid_block.py @ d98e8a64 l.184-192)
  local freq = not m.hybrid_layer_pattern and
    M.moe_layer_freq(require("apsearch.core").model_params(m).moe_pattern or {})
  if freq then A("--moe-layer-freq", freq) end
  A("--expert-model-parallel-size", r.ep_degree or 1)
  A("--expert-tensor-parallel-size", r.etp_degree or r.tp_degree or 1)
  local d = r.moe_token_dispatcher or "alltoall"
  A("--moe-token-dispatcher-type", d)
  if d == "flex" then
    A("--moe-flex-dispatcher-backend", c.training.moe_flex_dispatcher_backend or "deepep")
  end
  if r.moe_grouped_gemm ~= false then A("--moe-grouped-gemm") end
  -- the fused permute the host program counts (src/core/layerprog.c), and
  -- the fused router unless training.moe_router_fusion is off (both off by
  -- default in Megatron-LM: transformer_config.py @ d98e8a64 l.941-947;
  -- the router's needs TransformerEngine >= 2.7)
  A("--moe-permute-fusion")
  if c.training.moe_router_fusion ~= false then A("--moe-router-fusion") end
  N("NOTE", "--moe-permute-fusion needs TransformerEngine >= 2.1 (TransformerConfig raises at start-up, " ..
    "transformer_config.py @ d98e8a64 l.2984-2999) and --moe-router-fusion >= 2.7 (checked only when the " ..
    "router first runs: moe_utils.py fused top-k >= 2.6, fused aux loss >= 2.7); with an older one drop " ..
    "them, and estimate with training.moe_router_fusion = false (the unfused router's 72 kernels)")
  -- Llama 4: the routing weight scales the expert's input (M.ARCH_SOURCES.
  -- apply_probs; top-1, which the model's check guarantees)
  if m.moe_router_input_probs then A("--moe-apply-probs-on-input") end
  if c.training.moe_shared_expert_overlap and (m.shared_expert_ffn_hidden_size or 0) > 0 then
    if d == "allgather" then
      N("NOT EXPRESSIBLE in Megatron-LM", "moe_shared_expert_overlap with the allgather dispatcher " ..
        "(TransformerConfig: alltoall or flex only); not written")
    else
      A("--moe-shared-expert-overlap")
    end
  end
  -- the combined 1F1B schedule (ModelParallelConfig.overlap_moe_expert_
  -- parallel_comm @ d98e8a64; the estimate checks what TransformerConfig
  -- asserts about it)
  if c.training.overlap_moe_expert_parallel_comm then A("--overlap-moe-expert-parallel-comm") end
  -- TransformerEngine's fused grouped MLP: TEGroupedMLP on TE's op fuser
  -- (TransformerConfig.use_transformer_engine_op_fuser, its GLU halves
  -- interleaved in blocks of 32 as Megatron-Bridge's utils/overrides.py
  -- sets with cutedsl_fused_grouped_mlp; the script exports
  -- NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, which TE's fusion reads)
  if c.training.cutedsl_fused_grouped_mlp then
    -- (sync_free_args writes the op fuser with a rank capacity factor)
    if (c.training.moe_expert_rank_capacity_factor or 0) <= 0 then A("--use-transformer-engine-op-fuser") end
    A("--moe-mlp-glu-interleave-size", M.FUSED_GROUPED_MLP_GLU_INTERLEAVE)
  end
  M.sync_free_args(c.training, A, N)
  -- a capacity factor is the padded token drop the estimate prices (static
  -- splits, no host sync, capturable by CUDA graphs; without the pad flag
  -- Megatron drops unpadded, syncs, and refuses the moe graph module:
  -- token_dispatcher.py drop_and_pad, transformer_config.py l.2838-2844
  -- @ d98e8a64)
  if (r.moe_capacity_factor or 0) > 0 then
    A("--moe-expert-capacity-factor", M.num(r.moe_capacity_factor))
    A("--moe-pad-expert-input-to-capacity")
  end
  M.router_args(c, A, N)
  if (m.mtp_layers or 0) > 0 and (c.training.mtp_num_layers or 0) == 0 then
    N("NOTE", string.format("the model has %d multi-token-prediction module(s), not trained in the " ..
      "estimate: set training.mtp_num_layers = %d to estimate and write --mtp-num-layers",
      m.mtp_layers, m.mtp_layers))
  end
end

--- Megatron-Core's sync-free experts (Megatron-LM d98e8a64
-- transformer_config.py l.1019-1025, 1364-1375; docs/user-guide/features/
-- paged_stash.md): the expert rank capacity factor, with the
-- TransformerEngine op fuser its HybridEP backend requires (l.1876-1883:
-- "requires use_transformer_engine_op_fuser=True or moe_use_grouped_
-- tensor=True"), and the paged stash with its buffer factor and page size
-- when set (empty: Megatron's defaults, 1.10 and 64).
-- @tparam table tr training
-- @tparam function A flag writer
-- @tparam[opt] function N note writer
function M.sync_free_args(tr, A, N)
  local cf = tr.moe_expert_rank_capacity_factor or 0
  if cf <= 0 then return end
  A("--moe-expert-rank-capacity-factor", M.num(cf))
  A("--use-transformer-engine-op-fuser")
  if not tr.moe_paged_stash then return end
  A("--moe-paged-stash")
  if N and tr.precision ~= "mxfp8" then
    N("NOTE", "--moe-paged-stash stashes only the tensors TransformerEngine's fused MXFP8 grouped MLP marks " ..
      "(ops/fused/grouped_mlp.py mark_grouped_tensor); at " .. tostring(tr.precision or "bf16") ..
      " the experts' tensors keep the capacity factor's static shape, as the estimate prices them")
  end
  local f = tr.moe_paged_stash_buffer_size_factor_cuda or 0
  if f > 0 then A("--moe-paged-stash-buffer-size-factor-cuda", M.num(f)) end
  local page = tr.moe_paged_stash_page_size or 0
  if page > 0 then A("--moe-paged-stash-page-size", page) end
end

--- `--pipeline-model-parallel-layout` for layers per model chunk in
-- schedule order (megatron/core/transformer/pipeline_parallel_layer_layout.py:
-- stages separated by '|', stage i is virtual stage i // p on rank i % p;
-- 'E' the embedding in the first stage, 'L' the loss in the last, 't*n'
-- n transformer layers, 'm' a multi-token-prediction layer: after the
-- decoder layers, before the loss, all in the last stage,
-- validate_layer_layout).
-- @tparam table chunks decoder layers per chunk
-- @tparam[opt] integer mtp multi-token-prediction layers (0 or nil: none)
-- @treturn string e.g. "Et*7|t*8|...|t*7L", with one MTP layer "...|t*6mL"
function M.layout(chunks, mtp)
  local parts = {}
  for j, n in ipairs(chunks) do
    local t = n == 0 and "" or n == 1 and "t" or ("t*" .. n)
    if j == 1 then t = "E" .. t end
    if j == #chunks then t = t .. string.rep("m", mtp or 0) .. "L" end
    parts[j] = t
  end
  return table.concat(parts, "|")
end


--- Whether Megatron's block recompute with one `--recompute-num-layers k`
-- builds the estimate's per-stage counts: on each model chunk it
-- recomputes its first min(k, the chunk's layers) layers
-- (megatron/core/transformer/transformer_block.py _checkpointed_forward,
-- block method, @ d98e8a64), summed over a stage's chunks.
-- @tparam table chunks layers per model chunk in schedule order, chunk j
--   on stage (j - 1) mod p + 1 (launch.estimate_chunks)
-- @tparam table per the estimate's recomputed layers per stage (p entries)
-- @tparam integer k the count written
-- @treturn boolean
function M.block_recompute_matches(chunks, per, k)
  local p, got = #per, {}
  if p == 0 or #chunks % p ~= 0 then return false end
  for j, l in ipairs(chunks) do
    local i = (j - 1) % p + 1
    got[i] = (got[i] or 0) + math.min(k, l)
  end
  for i = 1, p do if got[i] ~= per[i] then return false end end
  return true
end

return M
