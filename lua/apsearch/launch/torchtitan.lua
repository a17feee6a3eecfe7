--- TorchTitan config module for one strategy: a Python file defining a
-- function that returns `Trainer.Config`, the form TorchTitan loads since
-- pytorch/torchtitan 9810191b (2026-02-23, TOML replaced by a Python
-- dataclass registry).  The module builds on HEAD's llama3 config function
-- (llama3_8b, llama3_70b, llama3_405b), builds the estimated model and
-- overwrites every field the estimate depends on.  The fields, constructors and allowed
-- values are apsearch.launch.options.torchtitan (read at the commit it
-- cites); the launch command is `torchrun ... -m torchtitan.train --module
-- rank<N>_torchtitan --config apsearch_rank<N>` as HEAD's run_train.sh.
--
-- Mapping (apsearch strategy / training field -> TorchTitan field):
--
-- * dp_degree -> parallelism.data_parallel_replicate_degree, fsdp_degree ->
--   data_parallel_shard_degree (both > 1: HSDP), reshard_after_forward ->
--   fsdp_reshard_after_forward = "always" | "never"; ZeRO-1 / ZeRO-2 over
--   plain data parallelism -> FSDP over the same ranks, never resharding
--   after the forward (M.dp_degrees)
-- * tp_degree -> tensor_parallel_degree, sequence_parallel ->
--   enable_sequence_parallel; tp_comm_overlap ->
--   compile.enable_async_tensor_parallel (needs the model compiled)
-- * pp_degree -> pipeline_parallel_degree, schedule "1F1B" (vpp = 1) or
--   "Interleaved1F1B", micro_batch_num -> num_pp_microbatches (a
--   pass's with training.local_batch_size: local_batch_size /
--   micro_batch_size, the gradient accumulation steps the rest); the layers
--   per model chunk: TorchTitan's own split (L + first + last less layers
--   over the stages, pipeline_parallel.py _generate_llm_fqn_per_model_part)
--   with first/last_stage_less_layers = 1 (pipeline_split embedding_loss)
--   or 0 (even) when it gives the estimate's chunks, else the chunks
--   spelled out in module_fqns_per_model_part (pipeline_split fill_last's
--   ceil(L / (p v)) per chunk and the rest last; always for one stage per
--   rank under a looped schedule, InterleavedZeroBubble at vpp 1, to
--   which TorchTitan would give two)
-- * cp_degree -> context_parallel_degree (load balancer "headtail": the
--   load-balanced causal split the estimate assumes)
-- * batch: num_tokens_per_microbatch_per_dp_rank = micro_batch_size x
--   seq_length, max_context_length = seq_length, num_tokens_per_train_step
--   = global_batch_size x seq_length (TorchTitan derives the gradient
--   accumulation steps from these, trainer.py)
-- * layer_recompute: none -> activation_checkpoint None; full on every
--   layer -> FullAC (each block); full on some layers -> FullAC,
--   APPROXIMATE (HEAD has no per-layer choice); selective -> SelectiveAC
--   (per-op SAC)
-- * precision fp8 -> Float8LinearConverter rowwise (NOT EXPRESSIBLE:
--   the estimate prices tensorwise, which HEAD no longer has), mxfp8 ->
--   MXFP8LinearConverter, nvfp4 -> NVFP4LinearConverter; the transformer
--   layers' linears only (lm_head stays bf16, as estimated)
-- * torch_compile / compile_loss -> compile.enable, compile.components
-- * the model's RoPE and norm numerics, on every layer's own config
--   (HEAD's flavours hard-code theta 500000 with llama scaling 8):
--   rope_theta -> attention.rope.theta; llama3 scaling -> scaling "llama"
--   with scaling_factor, low/high_freq_factor and
--   original_max_position_embeddings; no scaling -> scaling "none";
--   linear and yarn scaling NOT EXPRESSIBLE (HEAD's llama3 model has no
--   linear interpolation and does not apply YaRN's attention scale);
--   norm_eps -> attention_norm.eps, ffn_norm.eps and the final norm.eps
-- * the model's shape: HEAD's flavour (model_registry) when the model has
--   exactly its shape (options flavor_shapes), else
--   config.model_spec.model = Llama3Model.Config(...) on the flavours'
--   _build_llama3_layers and inits with the model's hidden size, layers,
--   heads, KV heads, ffn_hidden_size (the builder takes the final SwiGLU
--   width), vocab_size (unpadded), tie_word_embeddings and RoPE
--   max_context_length (max_position_embeddings, at least seq_length); the
--   ModelSpec stays model_registry's; converters applied to it as
--   model_registry does; q/k/v, wo and MLP biases -> Linear.Config bias;
--   GELU, LayerNorm, norm bias, sliding window NOT EXPRESSIBLE; a head_dim
--   other than dim // heads: each layer's attention rebuilt by
--   make_gqa_config(head_dim=...) (M.own_head_dim); qk-norm NOT WRITTEN
--   (the builder has none) unless HEAD's qwen3 model builds it
--   (M.dense_family_model: qk-norm, head_dim given, base qwen3_32b,
--   _build_qwen3_layers)
-- * MoE (M.moe_fields): ep_degree -> parallelism.expert_parallel_degree
--   (1 where ParallelDims rejects it: it must divide dp_shard x cp x tp);
--   etp_degree > 1, a capacity factor NOT EXPRESSIBLE; the MoE model
--   (M.moe_model): HEAD's qwen3, deepseek_v3 or gpt_oss family (base
--   config qwen3_30b_a3b / deepseek_v3_671b / gpt_oss_20b, model_registry
--   flavour with the model's dim and vocab, layers rebuilt by
--   _build_qwen3_moe_layers / _build_dsv3_layers / _build_gptoss_layers
--   with num_experts, top_k, moe_hidden_dim, num_shared_experts,
--   n_dense_layers and the MLA ranks; no expert bias unless the model
--   routes with one), else (e.g. Mixtral: HEAD has no family for it) NOT
--   WRITTEN, llama3 built
-- * cuda_graphs -> training.disable_cuda_graphs (HEAD graphs fwd + bwd by
--   default since f84224af, 2026-08-13; never with PP)
-- @module apsearch.launch.torchtitan
local options = require "apsearch.launch.options"

local M = {}

--- The loss as the estimate prices it (M.loss_chunks: ChunkedLossWrapper,
-- one chunk's logits at a time, as TorchTitan HEAD's config functions; 1:
-- one CrossEntropyLoss over the micro-batch).
-- @tparam table tr the result's training table
-- @tparam table lines the config function's lines (appended to)
-- @tparam function import adds a `from module import name`
function M.loss_config(tr, lines, import)
  import("torchtitan.components.loss", "CrossEntropyLoss")
  import("torchtitan.models.common.config_utils", "decoder_vocab_size")
  local ce = "CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(config.model_spec))"
  local chunks = M.loss_chunks(tr)
  if chunks <= 1 then
    lines[#lines + 1] = "    config.loss = " .. ce
    return
  end
  import("torchtitan.components.loss", "ChunkedLossWrapper")
  lines[#lines + 1] = string.format("    config.loss = ChunkedLossWrapper.Config(num_chunks=%d, loss_fn=%s)",
    chunks, ce)
end

--- TorchTitan's ChunkedLossWrapper.Config.num_chunks default
-- (torchtitan/components/loss.py:544 @ b5bcd76c), the estimate's
-- (src/core/profile.c APS_TORCHTITAN_LOSS_CHUNKS) when the training table
-- does not say.
M.DEFAULT_LOSS_CHUNKS = 8

--- The loss chunks the estimate priced, as src/core/recipe.c
-- aps_recipe_loss_chunks takes them: training.loss_chunks when given
-- (> 0; a result records 0 for "the framework's"), else the framework
-- profile's: fsdp2 M.DEFAULT_LOSS_CHUNKS, every other framework 1 (one
-- cross entropy, src/core/profile.c).
-- @tparam table tr the result's training table
-- @treturn integer >= 1
function M.loss_chunks(tr)
  local c = tr.loss_chunks or 0
  if c > 0 then return c end
  return tr.framework == "fsdp2" and M.DEFAULT_LOSS_CHUNKS or 1
end


local TT = options.torchtitan

--- Python literal for a Lua value (strings, integers, booleans, lists).
-- @param v
-- @treturn string
function M.py(v)
  if v == nil then return "None" end
  local t = type(v)
  if t == "string" then
    return '"' .. v:gsub('\\', '\\\\'):gsub('"', '\\"'):gsub("\n", "\\n") .. '"'
  elseif t == "boolean" then
    return v and "True" or "False"
  elseif t == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = M.py(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  elseif math.type(v) == "integer" then
    return tostring(v)
  end
  return string.format("%.17g", v)
end

--- Python float literal: the shortest repr that reads back exactly,
-- always with a dot or an exponent ("500000.0", "1e-05", "0.5").
-- @tparam number v finite
-- @treturn string
function M.pyfloat(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d.0", v) end
  local s
  for p = 1, 17 do
    s = string.format("%." .. p .. "g", v)
    if tonumber(s) == v then break end
  end
  if not s:find("[%.eEn]") then s = s .. ".0" end
  return s
end

-- TorchTitan's llama3 flavors (torchtitan/models/llama3/__init__.py
-- llama3_configs) by the model name's size suffix
local function llama3_flavor(name)
  local n = tostring(name or ""):lower()
  if not n:match("llama") then return nil end
  for _, f in ipairs({ "405b", "70b", "8b", "3b", "1b" }) do
    if n:match("%-" .. f .. "$") or n:match("%-" .. f .. "%-") then return f:upper() end
  end
  return nil
end

--- TorchTitan's split of L layers over S stages with the embedding and
-- the norm + lm_head weighing iw and ow layers
-- (torchtitan/distributed/pipeline_parallel.py
-- _generate_llm_fqn_per_model_part).
-- @treturn table|nil layers per stage, nil where TorchTitan raises
function M.titan_split(S, L, iw, ow)
  if S == 1 then return { L } end
  local E = L + iw + ow
  if S > E then return nil end
  local base, extra = E // S, E % S
  if base == 0 or iw > base or ow > base then return nil end
  local out, cur = {}, 0
  for s = 0, S - 1 do
    local e = base + (s < extra and 1 or 0)
    if s == 0 then e = e - iw elseif s == S - 1 then e = e - ow end
    local n = math.max(0, math.min(e, L - cur))
    out[s + 1] = n
    cur = cur + n
  end
  if cur ~= L then return nil end
  return out
end

--- Layers per model chunk in schedule order, as the estimate built them
-- (apsearch.launch.estimate_chunks).
-- @tparam table c context
-- @treturn table chunks
M.estimate_chunks = require("apsearch.launch").estimate_chunks

local function same(a, b)
  if not a or not b or #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

--- The replicate and shard degrees TorchTitan is given for a strategy:
-- its dp and fsdp degrees, except ZeRO-1 / ZeRO-2 over plain data
-- parallelism (fsdp_degree 1, dp > 1), which TorchTitan cannot express
-- (it shards with FSDP or replicates): written as FSDP over the same ranks
-- (M.data_parallel_fields says so), which holds at most what ZeRO holds
-- and lets the experts be expert-parallel, rather than as replicas that
-- hold the whole optimizer (more memory than estimated: a job that may not
-- start); and plain DDP whose expert parallelism needs the shard ranks,
-- likewise.
-- @tparam table r the strategy
-- @treturn integer replicate degree
-- @treturn integer shard degree
-- @treturn integer zero_stage
-- @treturn boolean true when a ZeRO stage is written as FSDP
function M.dp_degrees(r)
  local R, Sd, z = r.dp_degree or 1, r.fsdp_degree or 1, r.zero_stage or 0
  if Sd == 1 and R > 1 and (z == 1 or z == 2) then return 1, R, z, true end
  -- plain DDP with expert parallelism the replicas alone cannot hold:
  -- TorchTitan's experts borrow the FSDP shard ranks (ParallelDims: ep
  -- divides dp_shard x cp x tp), so FSDP over the same ranks keeps the
  -- estimate's experts per rank (a framework pass found them written as
  -- expert_parallel_degree = 1: every expert on every rank)
  local ep, ct = r.ep_degree or 1, (r.cp_degree or 1) * (r.tp_degree or 1)
  if Sd == 1 and R > 1 and z == 0 and ep > 1 and ct % ep ~= 0 and (R * ct) % ep == 0 then
    return 1, R, z, true
  end
  return R, Sd, z, false
end

--- The data-parallel fields both TorchTitan targets write (HEAD's Python
-- config and a release's TOML name them alike): the replicate and shard
-- degrees (M.dp_degrees), resharding after the forward (explicit:
-- "default" keeps the gathered parameters under PP, torchtitan/
-- distributed/fsdp.py get_fsdp_reshard_after_forward_policy), and a note
-- for the ZeRO stages TorchTitan cannot express over the replicate group.
-- A ZeRO-1 / ZeRO-2 stage written as FSDP never reshards after the
-- forward: the parameters stay whole through the backward, as ZeRO keeps
-- them, while gradients and optimizer states are sharded.
-- @tparam function put the target's field writer (name, value)
-- @tparam function note the target's note writer (kind, text)
-- @tparam string ne the target's NOT EXPRESSIBLE tag
-- @tparam table r the strategy
-- @tparam[opt] string fw training.framework of the estimate (FSDP over the
--   CP ranks: launch.cp_sharding_lacks)
function M.data_parallel_fields(put, note, ne, r, fw)
  local R, Sd, z, zero_as_fsdp = M.dp_degrees(r)
  local cp_lacks = require("apsearch.launch").cp_sharding_lacks(r, fw, "TorchTitan")
  if cp_lacks then note(ne, cp_lacks) end
  put("parallelism.data_parallel_replicate_degree", R)
  put("parallelism.data_parallel_shard_degree", Sd)
  if Sd > 1 then
    put("parallelism.fsdp_reshard_after_forward",
      (zero_as_fsdp or r.reshard_after_forward == false) and "never" or "always")
  end
  if zero_as_fsdp and z == 0 then
    note(ne, string.format(
      "ep_degree = %d over %d plain data-parallel replicas: TorchTitan's expert parallelism takes its ranks " ..
      "from the FSDP shard dimension (ParallelDims); written as FSDP over the same ranks " ..
      "(data_parallel_shard_degree = %d, fsdp_reshard_after_forward = never: the parameters stay whole through " ..
      "the backward as DDP keeps them, the gradients and optimizer states sharded): the estimate's experts per " ..
      "rank, no more memory than estimated, more communication (FSDP gathers the parameters and " ..
      "reduce-scatters the gradients per micro-batch)", r.ep_degree, Sd, Sd))
  elseif zero_as_fsdp then
    note(ne, string.format(
      "ZeRO-%d (optimizer%s sharded, parameters replicated) over %d data-parallel ranks: TorchTitan " ..
      "shards with FSDP or replicates; written as FSDP over the same ranks (data_parallel_shard_degree = " ..
      "%d, fsdp_reshard_after_forward = never: the parameters stay whole through the backward as ZeRO " ..
      "keeps them, the gradients sharded too): no more memory than estimated, more communication (FSDP " ..
      "gathers the parameters and reduce-scatters the gradients per micro-batch)", z,
      z == 2 and " and gradients" or "", Sd, Sd))
  elseif Sd == 1 and z == 3 then
    note(ne, "zero_stage=3 over the replicate group: use data_parallel_shard_degree instead")
  end
end

--- The pipeline schedule class TorchTitan runs for a strategy, as
-- get_schedule_class names it (torch/distributed/pipelining/schedules.py,
-- pytorch 1fd7abc2; DualPipeV 00722e64) and torchtitan passes it on (HEAD
-- b5bcd76c and v0.2.2 alike).
-- @tparam table r the strategy (its pp_schedule)
-- @tparam integer vpp model chunks per rank
-- @treturn string the class name
function M.schedule_class(r, vpp)
  local zb = { interleaved_zero_bubble = "InterleavedZeroBubble",
               zbv_zero_bubble = "ZBVZeroBubble", dualpipev = "DualPipeV" }
  return zb[r.pp_schedule or "1f1b"] or (vpp > 1 and "Interleaved1F1B" or "1F1B")
end

--- How TorchTitan builds the estimated model chunks of a pipeline
-- (pipeline_parallel.py at HEAD and v0.2.2 alike: the rule's split
-- generate_llm_fqn_per_model_part with pipeline_parallel_first/last_stage_
-- less_layers, and pipeline_parallel_layers_per_stage, whose stage count
-- is 1 per rank for a single-stage schedule, 2 for a looped one, else from
-- layers_per_stage, which cannot give a looped schedule 1 ("Multi-stage
-- schedule requires at least 2 stages per rank")).  The estimate's
-- pipeline_split (embedding_loss: the embedding and the loss as one layer
-- each) is tried first.
-- @tparam table c the launch context (estimate_chunks)
-- @tparam table r the strategy
-- @tparam integer L layers
-- @tparam integer pp, vpp pipeline and virtual degrees
-- @tparam string sched the schedule class name
-- @tparam string output the output layer's module name
-- @treturn table|nil {first = n, last = n, lps = n|nil}: the flags that
--   build the chunks, or nil when only module names do
-- @treturn table the estimate's layers per model chunk
-- @treturn table|nil the module names per model part (when the flags
--   cannot build the chunks)
function M.pipeline_plan(c, r, L, pp, vpp, sched, output)
  local S = pp * vpp
  local chunks = M.estimate_chunks(c)
  local want = (r.pipeline_split == "embedding_loss") and { { 1, 1 }, { 0, 0 } } or { { 0, 0 }, { 1, 1 } }
  for _, w in ipairs(want) do
    local split = M.titan_split(S, L, w[1], w[2])
    local lps
    if vpp > 2 then
      lps = math.ceil((L + w[1] + w[2]) / S)
      if math.ceil((L + w[1] + w[2]) / lps) ~= S then split = nil end
    elseif vpp == 1 and sched ~= "1F1B" then
      split = nil
    end
    if same(split, chunks) then return { first = w[1], last = w[2], lps = lps }, chunks end
  end
  local parts, cur = {}, 0
  for j = 1, S do
    local part = {}
    if j == 1 then part[#part + 1] = "tok_embeddings" end
    for _ = 1, chunks[j] do part[#part + 1] = "layers." .. cur cur = cur + 1 end
    if j == S then part[#part + 1] = "norm" part[#part + 1] = output end
    parts[j] = part
  end
  return nil, chunks, parts
end

--- The model's shape in TorchTitan's terms, the flavour that has exactly
-- that shape (by the model's name first, else any), and the notes for
-- what HEAD's llama3 model cannot build.
-- @tparam table m model
-- @tparam integer seq training seq_length
-- @tparam integer pp pipeline degree
-- @treturn table shape (dim, n_layers, n_heads, n_kv_heads, head_dim,
--   hidden_dim, vocab_size, enable_weight_tying, max_context_length; and
--   mlp_width, a two-matrix MLP's own width, when hidden_dim is 2/3 of it)
-- @treturn string|nil flavor
-- @treturn table notes `{kind, text}`
function M.model_shape(m, seq, pp)
  local notes = {}
  local function N(kind, text) notes[#notes + 1] = { kind, text } end
  local H, nh = m.hidden_size, m.num_attention_heads
  local shape = {
    dim = H, n_layers = m.num_layers, n_heads = nh, n_kv_heads = m.num_query_groups or nh,
    head_dim = m.head_dim or H // nh, hidden_dim = m.ffn_hidden_size, vocab_size = m.vocab_size,
    enable_weight_tying = m.tie_word_embeddings == true,
    max_context_length = m.max_position_embeddings or 0,
  }
  if M.own_head_dim(shape) then
    N("NOTE", string.format("TorchTitan's logged TFLOPs and MFU count attention with dim // n_heads = %d, not " ..
      "this model's head dim %d (Llama3Model.Config.get_nparams_and_flops, models/llama3/model.py:89): its MFU " ..
      "line is off for this model; the module builds head dim %d", H // nh, shape.head_dim, shape.head_dim))
  end
  if shape.max_context_length < seq then
    if shape.max_context_length > 0 then
      N("NOTE", string.format("seq_length %d is beyond the model's max_position_embeddings %d: RoPE " ..
        "max_context_length written as %d (TorchTitan refuses a longer training context)", seq,
        shape.max_context_length, seq))
    end
    shape.max_context_length = seq
  end
  if shape.enable_weight_tying and pp > 1 then
    N("NOT EXPRESSIBLE in TorchTitan", "tied input and output embeddings with pipeline parallelism " ..
      "(Decoder.Config.update_from_config refuses them): written untied, lm_head its own vocabulary x " ..
      "hidden matrix, trained apart from the embedding")
    shape.enable_weight_tying = false
  end
  -- the gated MLP's activation: HEAD's FeedForward is w2(silu(w1 x) * w3 x)
  -- (torchtitan/models/common/feed_forward.py @ b5bcd76c), SiLU only
  if (m.glu_activation or "silu") ~= "silu" then
    N("NOT EXPRESSIBLE in TorchTitan", "the gated MLP's " .. tostring(m.glu_activation) .. " activation " ..
      "(GeGLU): HEAD's FeedForward gates with SiLU only; written as SwiGLU")
  end
  if m.hybrid_layer_pattern then
    N("NOT EXPRESSIBLE in TorchTitan", "the hybrid Mamba-2 layers (pattern " .. m.hybrid_layer_pattern ..
      "): TorchTitan has no Mamba-2 / Nemotron-H model; written as the llama3 decoder, which is not this " ..
      "model (apsearch prices hybrid models for Megatron-LM only)")
  end
  -- Kimi Delta Attention, LFM2's short convolutions: launch.LLAMA_BLOCK_LACKS
  if require("apsearch.launch").has_gated_deltanet(m) then
    N("NOT EXPRESSIBLE in TorchTitan", "the Gated DeltaNet layers (Qwen3-Next: " ..
      (m.linear_attention_period and ("every " .. m.linear_attention_period .. "-th layer") or
        ("the A layers of " .. m.linear_attention_pattern)) .. " gated attention, the others Gated DeltaNet): " ..
      "TorchTitan has no Qwen3-Next model (HEAD b5bcd76c6 has a Gated DeltaNet only inside its qwen3_5 model, " ..
      "which apsearch does not write); written as the llama3 decoder, which is not this model (apsearch " ..
      "prices Gated DeltaNet models for Megatron-LM only)")
  end
  if m.mlp and m.mlp ~= "swiglu" then
    -- the model's two matrices of width f hold 2 h f weights and cost 4 h f
    -- FLOPs a token forward: a SwiGLU of width 2f/3 (three matrices) the same
    local f = m.ffn_hidden_size
    shape.hidden_dim, shape.mlp_width = (2 * f + 1) // 3, f
    N("NOT EXPRESSIBLE in TorchTitan", string.format("%s MLP: HEAD's llama3 block is SwiGLU (FeedForward w1, " ..
      "w2, w3); written as SwiGLU of width %d, 2/3 of the model's %d, %s the parameters and GEMM FLOPs of its " ..
      "two matrices (not its activation memory)", tostring(m.mlp), shape.hidden_dim, f,
      2 * f % 3 == 0 and "with" or "within one column of"))
  end
  if m.norm and m.norm ~= "rmsnorm" then
    N("NOT EXPRESSIBLE in TorchTitan", tostring(m.norm) .. ": HEAD's llama3 model normalises with RMSNorm")
  end
  if m.norm_bias then
    N("NOT EXPRESSIBLE in TorchTitan", "norm biases: RMSNorm.Config has none")
  end
  if m.qk_norm then
    N("NOT WRITTEN", "qk-norm: HEAD's llama3 builder (_build_llama3_layers) passes no qk_norm " ..
      "(GQAttention.Config.qk_norm exists, the llama3 sharding is not written for it)")
  end
  for _, what in ipairs(require("apsearch.launch").llama_block_features(m)) do
    N("NOT EXPRESSIBLE in TorchTitan", what)
  end
  for _, what in ipairs(require("apsearch.launch").llama4_features(m, seq)) do
    N("NOT EXPRESSIBLE in TorchTitan", what .. ": none of the llama3, qwen3 and deepseek_v3 builders this " ..
      "module writes has it; written without")
  end
  if (m.sliding_window or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", string.format("the %d-token sliding window on %d of %d layers: " ..
      "HEAD's llama3 model masks block-causal over the whole context (FlexAttention.Config has no window)",
      m.sliding_window, (m.sliding_window_layers or 0) > 0 and m.sliding_window_layers or m.num_layers,
      m.num_layers))
  end
  local function fits(f)
    local fs = TT.flavor_shapes[f]
    if not fs then return false end
    for k, v in pairs(fs) do if shape[k] ~= v then return false end end
    return true
  end
  local named = llama3_flavor(m.name)
  if named and fits(named) then return shape, named, notes end
  local names = {}
  for f in pairs(TT.flavor_shapes) do names[#names + 1] = f end
  table.sort(names)
  for _, f in ipairs(names) do if fits(f) then return shape, f, notes end end
  return shape, nil, notes
end

--- One-line summary of a shape, for comments.
-- @tparam table s shape (M.model_shape)
-- @treturn string
function M.shape_comment(s)
  return string.format("%d layers, dim %d, %d heads (%d kv, head dim %d), SwiGLU %d, vocab %d%s, RoPE to %d",
    s.n_layers, s.dim, s.n_heads, s.n_kv_heads, s.head_dim, s.hidden_dim, s.vocab_size,
    s.enable_weight_tying and ", tied embeddings" or "", s.max_context_length)
end

--- Whether the llama3 builder derives another head dim than the shape's
-- (make_gqa_config's dim // n_heads, torchtitan/models/common/
-- config_utils.py @ b5bcd76c).
-- @tparam table s shape (M.model_shape)
-- @treturn boolean
function M.own_head_dim(s)
  return s.dim % s.n_heads ~= 0 or s.dim // s.n_heads ~= s.head_dim
end

--- `config.model_spec.model = Llama3Model.Config(...)`: the shape on the
-- flavours' builder and inits, every argument checked against the fact
-- table (options.torchtitan.model).
-- @tparam table s shape (M.model_shape)
-- @tparam table lines (appended to)
-- @tparam function import
function M.model_config(s, lines, import)
  local MF = TT.model
  local function arg(ctor, name, v)
    local fact = assert(MF[ctor] and MF[ctor][name], "torchtitan: " .. ctor .. " has no " .. name)
    if fact.type == "init" then
      local init = v:match("^([%w_]+)")
      assert(MF.inits[init], "torchtitan: not a flavour init: " .. v)
      import("torchtitan.models.llama3", init)
      return name .. "=" .. v
    elseif fact.type:match("Config$") or fact.type == "list" then
      return name .. "=" .. v
    end
    assert(options.torchtitan_value_ok(fact, v), "torchtitan: " .. ctor .. "." .. name .. " = " .. M.py(v))
    return name .. "=" .. M.py(v)
  end
  local function call(ctor, args)
    local parts = {}
    for i, a in ipairs(args) do parts[i] = arg(ctor, a[1], a[2]) end
    return ctor .. "(" .. table.concat(parts, ", ") .. ")"
  end
  for _, n in ipairs({ "Llama3Model", "_build_llama3_layers" }) do import("torchtitan.models.llama3", n) end
  for _, n in ipairs({ "ComplexRoPE", "Embedding", "Linear", "RMSNorm" }) do import("torchtitan.models.common", n) end
  local L = lines
  local M3 = "Llama3Model.Config"
  L[#L + 1] = "    config.model_spec.model = Llama3Model.Config("
  L[#L + 1] = "        " .. arg(M3, "dim", s.dim) .. ","
  L[#L + 1] = "        " .. arg(M3, "vocab_size", s.vocab_size) .. ",  # TorchTitan pads no vocabulary"
  L[#L + 1] = "        " .. arg(M3, "enable_weight_tying", s.enable_weight_tying) .. ","
  L[#L + 1] = "        tok_embeddings=" .. call("Embedding.Config", { { "num_embeddings", s.vocab_size },
    { "embedding_dim", s.dim }, { "param_init", s.enable_weight_tying and "_EMBEDDING_SKIP_INIT" or "_EMBEDDING_INIT" } }) .. ","
  L[#L + 1] = "        norm=" .. call("RMSNorm.Config", { { "normalized_shape", s.dim }, { "param_init", "_NORM_INIT" } }) .. ","
  L[#L + 1] = "        lm_head=" .. call("Linear.Config", { { "in_features", s.dim }, { "out_features", s.vocab_size },
    { "param_init", "_output_linear_init(" .. s.dim .. ")" } }) .. ","
  L[#L + 1] = "        layers=_build_llama3_layers("
  local B = "_build_llama3_layers"
  L[#L + 1] = "            " .. arg(B, "fuse_qkv", true) .. ","
  L[#L + 1] = "            " .. arg(B, "n_layers", s.n_layers) .. ","
  L[#L + 1] = "            " .. arg(B, "dim", s.dim) .. ","
  L[#L + 1] = "            " .. arg(B, "n_heads", s.n_heads) .. ","
  L[#L + 1] = "            " .. arg(B, "n_kv_heads", s.n_kv_heads) .. ","
  L[#L + 1] = "            " .. arg(B, "hidden_dim", s.hidden_dim) .. ",  # " ..
    (s.mlp_width and ("2/3 of the model's two-matrix width " .. s.mlp_width) or "the model's ffn_hidden_size")
  L[#L + 1] = "            rope=" .. call("ComplexRoPE.Config", { { "dim", s.head_dim },
    { "max_context_length", s.max_context_length } }) .. ",  # theta and scaling: the layer loop"
  L[#L + 1] = "            " .. arg(B, "attn_backend", "flex") .. ","
  L[#L + 1] = "        ),"
  L[#L + 1] = "    )"
  if M.own_head_dim(s) then
    -- _build_llama3_layers takes no head_dim: each layer's attention is
    -- rebuilt as the builder builds it (make_gqa_config with the flavours'
    -- inits, its inner attention and RoPE) with the model's head dim
    import("torchtitan.models.common.config_utils", "make_gqa_config")
    local G = "make_gqa_config"
    L[#L + 1] = ("    # head dim %d, not the builder's dim // n_heads = %d: each layer's attention with it"):format(
      s.head_dim, s.dim // s.n_heads)
    L[#L + 1] = "    for layer_id, layer in enumerate(config.model_spec.model.layers):"
    L[#L + 1] = "        layer.attention = " .. call(G, { { "dim", s.dim }, { "n_heads", s.n_heads },
      { "n_kv_heads", s.n_kv_heads }, { "head_dim", s.head_dim }, { "wqkv_param_init", "_LINEAR_INIT" },
      { "wo_param_init", "_depth_init(layer_id)" }, { "inner_attention", "layer.attention.inner_attention" },
      { "rope", "layer.attention.rope" }, { "fuse_qkv", true } })
  end
end

--- Expert scores a TorchTitan group score sums: TokenChoiceTopKRouter.
-- _get_node_limited_routing_scores (torchtitan/models/common/moe.py @
-- b5bcd76c) takes the top 2 of each group, whatever top_k is.
M.TITAN_GROUP_SCORE_TOPK = 2

--- The deepseek_v3 builder's router arguments from the model's router
-- (torchtitan/models/deepseek_v3/__init__.py build_mla_moe_layers @
-- b5bcd76c: router_num_expert_groups, router_num_limited_groups,
-- router_route_scale, router_route_norm; TokenChoiceTopKRouter in
-- models/common/moe.py: score, top-k, weights divided by their sum when
-- route_norm, times route_scale; a group scored by the sum of its top 2):
-- route_norm = not moe_router_pre_softmax, route_scale =
-- moe_router_topk_scaling_factor (1.0 when not given), the groups when the
-- model has them and scores a group by its top 2 (DeepSeek-V3 noaux_tc,
-- or not given), else NOT EXPRESSIBLE.  A NOTE names what differs from
-- the flavour's own routing.
-- @tparam table m model
-- @tparam string|nil flavor the matching flavour
-- @tparam table routing the flavour's routing (options.torchtitan)
-- @tparam function A builder argument writer
-- @tparam function N note writer
function M.moe_router_args(m, flavor, routing, A, N)
  local g, gk = m.moe_router_num_groups or 0, m.moe_router_group_topk or 0
  local sk = m.moe_router_group_score_topk or 0
  local args = {}
  if g > 0 then
    if sk == 0 or sk == M.TITAN_GROUP_SCORE_TOPK then
      args.router_num_expert_groups, args.router_num_limited_groups = g, gk
    else
      N("NOT EXPRESSIBLE in TorchTitan", string.format("n_group = %d, topk_group = %d with a group scored " ..
        "by its best %d expert(s): TokenChoiceTopKRouter sums its top %d; not written (routing without " ..
        "groups)", g, gk, sk, M.TITAN_GROUP_SCORE_TOPK))
    end
  end
  args.router_route_scale = (m.moe_router_topk_scaling_factor or 0) > 0 and
    m.moe_router_topk_scaling_factor + 0.0 or 1.0
  args.router_route_norm = not m.moe_router_pre_softmax
  local differ = {}
  for _, k in ipairs({ "router_num_expert_groups", "router_num_limited_groups", "router_route_scale",
    "router_route_norm" }) do
    if args[k] ~= nil then A(k, args[k]) end
    if args[k] ~= routing[k] then differ[#differ + 1] = k end
  end
  if flavor and #differ > 0 then
    N("NOTE", string.format("router from the model, not HEAD's %s flavour: %s", flavor,
      table.concat(differ, ", ")))
  end
end

--- The family flavour whose embeddings, final norm and lm_head are the
-- model's: dim, vocab_size and weight tying equal, a flavour the model's
-- name carries first ("Qwen3-32B" -> "32B" over "14B", the same shape);
-- none: the family's default flavour, and the file writes the model's own
-- head (M.family_head_config).
-- @tparam table fam options.torchtitan.families entry
-- @tparam table m model
-- @tparam boolean tied the embeddings written tied
-- @treturn string flavour
-- @treturn boolean own_head
function M.family_flavor(fam, m, tied)
  local names = {}
  for f in pairs(fam.flavors) do names[#names + 1] = f end
  table.sort(names)
  local lname, pick = tostring(m.name or ""):lower(), nil
  for _, f in ipairs(names) do
    local fs = fam.flavors[f]
    if fs.dim == m.hidden_size and fs.vocab_size == m.vocab_size and (fs.tied == true) == tied then
      if lname:find(f:lower(), 1, true) then return f, false end
      pick = pick or f
    end
  end
  if pick then return pick, false end
  return fam.default_flavor, true
end

--- Why the TorchTitan blocks lack each part (launch.decoder_block_lacks).
M.BLOCK_LACKS_WHY = {
  mlp = "FeedForward and GroupedExperts are SwiGLU", glu = "FeedForward and GroupedExperts gate with SiLU",
  norm = "the blocks use RMSNorm", norm_bias = "RMSNorm has none", window = "causal attention over the whole context",
  positions = "RoPE in every attention layer", mamba = "no Mamba-2 model", gdn = "no Gated DeltaNet model",
}

--- What none of the TorchTitan decoder blocks apsearch writes has (HEAD's
-- llama3, qwen3 and deepseek_v3 blocks, models/common @ b5bcd76c, and the
-- releases' llama3: SwiGLU gated by SiLU, RMSNorm without a bias, RoPE in
-- every attention layer, causal attention over the whole context, no
-- Mamba-2 or Gated DeltaNet mixer; launch.llama_block_features,
-- launch.llama4_features), each a short phrase.
-- @tparam table m model
-- @tparam integer|nil seq training seq_length (chunked attention counts
--   beyond its chunk, launch.llama4_features; nil: unknown)
-- @tparam[opt] table has Llama 4 features the caller says itself
--   (launch.llama4_features' `has`: skipped)
-- @treturn table phrases (empty: none)
function M.block_lacks(m, seq, has)
  return require("apsearch.launch").decoder_block_lacks(m, seq, M.BLOCK_LACKS_WHY, has)
end

--- What a decoder block of the qwen3 and deepseek_v3 families lacks
-- (M.block_lacks, and linear biases: their builders have none), each a
-- reason the family cannot build the model.
-- @tparam table m model
-- @tparam integer|nil seq training seq_length (M.block_lacks)
-- @tparam function W reason writer
function M.family_block_lacks(m, seq, W)
  if m.qkv_bias or m.attn_out_bias or m.mlp_bias then W("linear biases (the builders have none)") end
  for _, what in ipairs(M.block_lacks(m, seq)) do W(what) end
end

--- What HEAD's qwen3 attention (make_gqa_config with qk_norm =
-- _qwen3_norm(head_dim), CosSinRoPE over the whole head) builds otherwise
-- than the model: partial RoPE and Q/K norms over the whole projection
-- (MiniMax-M2's), each a NOT EXPRESSIBLE note.
-- @tparam table m model
-- @tparam function N note writer
function M.qwen3_attention_notes(m, N)
  if (m.rotary_percent or 0) > 0 and m.rotary_percent < 1 then
    N("NOT EXPRESSIBLE in TorchTitan", string.format("partial RoPE (rotary_percent %s): CosSinRoPE.Config " ..
      "(models/common/rope.py) has no partial-rotation field; every dim of each head is rotated",
      M.pyfloat(m.rotary_percent)))
  end
  if m.qk_norm_full_width then
    N("NOT EXPRESSIBLE in TorchTitan", "Q/K norms over the whole projection (qk_norm_full_width): the qwen3 " ..
      "builders normalise each head (qk_norm=_qwen3_norm(head_dim)); written per head, fewer norm weights " ..
      "than the model has")
  end
end

--- What HEAD's softmax routers with route_norm (qwen3's make_router_config,
-- gpt-oss's TokenChoiceTopKRouter) cannot route as the model does, each a
-- NOT EXPRESSIBLE note: weights not renormalised, a route scale, groups.
-- @tparam table m model
-- @tparam string builder the builder's name, for the notes
-- @tparam function N note writer
function M.softmax_router_notes(m, builder, N)
  if m.moe_router_pre_softmax then
    N("NOT EXPRESSIBLE in TorchTitan", "norm_topk_prob = false (moe_router_pre_softmax): " .. builder ..
      " renormalises the top-k weights (route_norm=True)")
  end
  if (m.moe_router_topk_scaling_factor or 0) > 0 and m.moe_router_topk_scaling_factor ~= 1 then
    N("NOT EXPRESSIBLE in TorchTitan", "routed_scaling_factor " .. M.pyfloat(m.moe_router_topk_scaling_factor) ..
      ": " .. builder .. "'s route_scale is 1")
  end
  if (m.moe_router_num_groups or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", "group-limited routing: " .. builder .. " has no expert groups")
  end
end

--- YaRN on a family's RoPE.Config (models/common/rope.py
-- _yarn_inv_freq): rope_factor, beta_fast, beta_slow, the pre-scaling
-- context as transformers takes it (hf.yarn_original), truncate; the
-- cos/sin factor transformers applies (hf.yarn_attention_factor) where it
-- differs from what the family's attention does with it (`applied`).
-- @tparam table m model (rope_scaling_type "yarn")
-- @tparam function R RoPE argument writer
-- @tparam function N note writer
-- @tparam number applied the factor the family's attention is equivalent to
-- @tparam string how what the family's attention does, for the note
function M.yarn_rope(m, R, N, applied, how)
  local hf = require "apsearch.hf"
  R("scaling", "yarn") R("rope_factor", (m.rope_scaling_factor or 1) + 0.0)
  R("beta_fast", hf.yarn_beta(m, "beta_fast"))
  R("beta_slow", hf.yarn_beta(m, "beta_slow"))
  -- never RoPE.Config's own original_seq_len 4096 unless the model's
  local orig = hf.yarn_original(m)
  if orig then
    R("original_seq_len", orig)
  else
    N("NOT WRITTEN", "yarn original context: the model gives neither original_max_position_embeddings " ..
      "nor max_position_embeddings; RoPE.Config's original_seq_len 4096 applies")
  end
  if m.yarn_no_truncate then R("truncate", false) end
  local a = hf.yarn_attention_factor(m)
  if math.abs(a - applied) > 1e-12 * applied then
    N("NOT EXPRESSIBLE in TorchTitan", string.format("yarn cos/sin factor %s (transformers' attention_factor " ..
      "from factor %s, mscale %s, mscale_all_dim %s%s): %s", M.pyfloat(a), M.pyfloat(m.rope_scaling_factor or 1),
      M.pyfloat(m.yarn_mscale or 0), M.pyfloat(m.yarn_mscale_all_dim or 0),
      (m.yarn_attention_factor or 0) > 0 and ", given outright" or "", how))
  end
end

--- HEAD's qwen3 dense model (torchtitan/models/qwen3/__init__.py
-- _build_qwen3_layers @ b5bcd76c: GQA with the head_dim given, per-head
-- qk-norm, SwiGLU) for a dense model with qk-norm that HEAD's llama3
-- builder cannot build (no qk_norm, head_dim = dim // n_heads): Qwen3's
-- 0.6B to 32B and any model of that block.  The flavour is the one with
-- the model's dim, vocabulary and tying (M.family_flavor); tied
-- embeddings with PP are written untied (Decoder.Config refuses them).
-- @tparam table m model (no experts)
-- @tparam integer ctx RoPE max_context_length (M.model_shape)
-- @tparam integer pp pipeline degree
-- @tparam[opt] integer seq training seq_length (M.family_block_lacks)
-- @treturn table|nil as M.moe_model's
-- @treturn string|nil why the family cannot build it (nil: not the family)
function M.dense_family_model(m, ctx, pp, seq)
  if not m.qk_norm or (m.num_experts or 0) > 0 or (m.kv_lora_rank or 0) > 0 then return nil end
  local fam = TT.families.qwen3_dense
  local why, notes, args, rope = {}, {}, {}, {}
  local function W(t) why[#why + 1] = t end
  local function N(kind, text) notes[#notes + 1] = { kind, text } end
  local function A(k, v) args[#args + 1] = { k, v } end
  local function R(k, v) rope[#rope + 1] = { k, v } end
  M.family_block_lacks(m, seq, W)
  local kind = m.rope_scaling_type or "none"
  if kind ~= "none" then W(kind .. " RoPE scaling (HEAD's Qwen3 RoPE is unscaled CosSinRoPE)") end
  if #why > 0 then return nil, table.concat(why, "; ") end
  local tied = m.tie_word_embeddings == true
  if tied and pp > 1 then
    N("NOT EXPRESSIBLE in TorchTitan", "tied input and output embeddings with pipeline parallelism " ..
      "(Decoder.Config.update_from_config refuses them): written untied, lm_head its own vocabulary x " ..
      "hidden matrix, trained apart from the embedding")
    tied = false
  end
  local flavor, own_head = M.family_flavor(fam, m, tied)
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  A("fuse_qkv", true) A("n_layers", m.num_layers) A("dim", m.hidden_size)
  A("n_heads", m.num_attention_heads) A("n_kv_heads", m.num_query_groups or m.num_attention_heads)
  A("head_dim", hd) A("hidden_dim", m.ffn_hidden_size) A("attn_backend", "flex")
  R("dim", hd) R("max_context_length", ctx)
  R("theta", (m.rope_theta or 0) > 0 and m.rope_theta + 0.0 or 10000.0)
  M.qwen3_attention_notes(m, N)
  return { family = "qwen3_dense", fam = fam, flavor = flavor, args = args, rope = rope, notes = notes,
    own_head = own_head, tied = tied }
end

--- What a gpt-oss block (the fixed attention of n_heads, n_kv_heads and
-- head_dim, a window of `window` tokens every window_period-th layer from
-- the first, attention sinks' model with q/k/v, wo, router and expert
-- biases, the clamped SwiGLU with up + 1, RMSNorm, every layer MoE without
-- shared experts) builds otherwise than the model, each by W(text): HEAD's
-- _build_gptoss_layers and the v0.2.2 release's gpt_oss fix the same block.
-- @tparam table m model
-- @tparam table x the fixed values: n_heads, n_kv_heads, head_dim,
--   window, window_period, glu_clamp
-- @tparam integer dense leading dense layers
-- @tparam table names for the reasons: `layers` (the layer builder),
--   `attn` (the attention's), `experts` (the experts' class), `norm` (who
--   uses RMSNorm)
-- @tparam function W reason writer
function M.gptoss_block_lacks(m, x, dense, names, W)
  local L = m.num_layers
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  if m.num_attention_heads ~= x.n_heads or (m.num_query_groups or m.num_attention_heads) ~= x.n_kv_heads or
    hd ~= x.head_dim then
    W(string.format("%d heads, %d KV heads, head_dim %d (%s builds %d, %d, %d)",
      m.num_attention_heads, m.num_query_groups or m.num_attention_heads, hd, names.attn, x.n_heads,
      x.n_kv_heads, x.head_dim))
  end
  if m.sliding_window ~= x.window or m.sliding_window_period ~= x.window_period or
    m.sliding_window_layers ~= (L + 1) // 2 then
    W(("a window other than %d tokens on the even layers (%s' own)"):format(x.window, names.layers))
  end
  if not (m.qkv_bias and m.attn_out_bias and m.mlp_bias and m.moe_router_linear_bias) then
    W("no q/k/v, wo, router or expert biases (" .. names.layers .. " has them all)")
  end
  if m.glu_activation ~= "quick_gelu" or m.glu_clamp ~= x.glu_clamp or m.glu_linear_offset ~= 1 then
    W(("experts other than the clamped SwiGLU (alpha 1.702, limit %s, up + 1) of %s"):format(
      ("%g"):format(x.glu_clamp), names.experts))
  end
  if m.norm and m.norm ~= "rmsnorm" then W(tostring(m.norm) .. " (" .. names.norm .. " uses RMSNorm)") end
  if dense > 0 or (m.shared_expert_ffn_hidden_size or 0) > 0 then
    W("dense layers or shared experts (" .. names.layers .. " makes every layer MoE, without shared experts)")
  end
  if (m.rotary_percent or 0) > 0 and m.rotary_percent < 1 then
    W(("partial RoPE (rotary_percent %s; %s rotates every dim of each head)"):format(M.pyfloat(m.rotary_percent),
      names.layers))
  end
  for _, what in ipairs(require("apsearch.launch").llama_block_features(m)) do W(what) end
end

--- The names of HEAD's gpt-oss builders in M.gptoss_block_lacks' reasons.
M.GPTOSS_NAMES = { layers = "_build_gptoss_layers", attn = "_make_gptoss_attn_config",
  experts = "GptOssGroupedExperts", norm = "the builder" }

--- HEAD's gpt-oss model (torchtitan/models/gpt_oss/__init__.py
-- _build_gptoss_layers @ b5bcd76c) for a model with attention sinks, when
-- it is what the builder fixes (options.torchtitan.families.gpt_oss.fixed:
-- 64 heads, 8 KV heads, head_dim 64, a 128-token window on the even
-- layers; q/k/v, wo, router and expert biases; clamped SwiGLU): the
-- builder's arguments and RoPE (CosSinRoPE; yarn, whose mscale the
-- attention folds into its softmax scale, model.py Attention).  The
-- expert bias (load_balance_coeff) only when the model routes with one.
-- @tparam table m model
-- @tparam table fam the family
-- @tparam integer ctx RoPE max_context_length
-- @tparam integer dense leading dense layers
-- @tparam function W reason writer
-- @tparam function A builder argument writer
-- @tparam function R RoPE argument writer
-- @tparam function N note writer
function M.gptoss_layers(m, fam, ctx, dense, W, A, R, N)
  local x, L = fam.fixed, m.num_layers
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  M.gptoss_block_lacks(m, x, dense, M.GPTOSS_NAMES, W)
  local kind = m.rope_scaling_type or "none"
  if kind ~= "none" and kind ~= "yarn" then W(kind .. " RoPE scaling (CosSinRoPE: none or yarn)") end
  A("fuse_qkv", true) A("dim", m.hidden_size) A("n_layers", L) A("hidden_dim", m.moe_ffn_hidden_size)
  A("num_experts", m.num_experts) A("top_k", m.experts_per_token)
  -- MoE.Config.load_balance_coeff None: no expert bias (the flavours' 1e-3
  -- is an aux-loss-free bias gpt-oss does not route with)
  A("load_balance_coeff", m.moe_router_bias and 1e-3 or nil)
  A("attn_backend", "flex") A("moe_comm_backend", "standard")
  R("dim", hd) R("max_context_length", ctx) R("theta", (m.rope_theta or 0) > 0 and m.rope_theta + 0.0 or 10000.0)
  if kind == "yarn" then
    local f = (m.rope_scaling_factor or 1) + 0.0
    M.yarn_rope(m, R, N, f > 1 and 0.1 * math.log(f) + 1 or 1.0, "gpt_oss Attention folds (0.1 ln f + 1)^2 " ..
      "into its softmax scale (models/gpt_oss/model.py), the factor transformers takes by default")
  end
  M.softmax_router_notes(m, "_build_gptoss_layers", N)
end

--- The qwen3 MoE builder's arguments (_build_qwen3_moe_layers: every
-- layer MoE, no shared expert, softmax router with route_norm, CosSinRoPE
-- unscaled); the expert bias (load_balance_coeff) only when the model
-- routes with one, in the layer loop (M.model_numerics).
-- @tparam table m model
-- @tparam integer ctx RoPE max_context_length
-- @tparam integer dense leading dense layers
-- @tparam function W reason writer
-- @tparam function A builder argument writer
-- @tparam function R RoPE argument writer
-- @tparam function N note writer
function M.qwen3_moe_layers(m, ctx, dense, W, A, R, N)
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  local kind = m.rope_scaling_type or "none"
  if dense > 0 then W(dense .. " dense first layers (_build_qwen3_moe_layers makes every layer MoE)") end
  if (m.shared_expert_ffn_hidden_size or 0) > 0 then W("shared experts (_build_qwen3_moe_layers has none)") end
  if kind ~= "none" then W(kind .. " RoPE scaling (HEAD's Qwen3 RoPE is unscaled CosSinRoPE)") end
  A("fuse_qkv", true) A("n_layers", m.num_layers) A("dim", m.hidden_size)
  A("n_heads", m.num_attention_heads) A("n_kv_heads", m.num_query_groups or m.num_attention_heads)
  A("head_dim", hd) A("moe_hidden_dim", m.moe_ffn_hidden_size) A("num_experts", m.num_experts)
  A("top_k", m.experts_per_token) A("attn_backend", "flex") A("moe_comm_backend", "standard")
  R("dim", hd) R("max_context_length", ctx) R("theta", (m.rope_theta or 0) > 0 and m.rope_theta + 0.0 or 10000.0)
  -- the expert bias itself is make_moe_config's (load_balance_coeff 1e-3)
  if m.moe_router_bias and not m.moe_router_softmax_bias then
    N("NOT EXPRESSIBLE in TorchTitan", "sigmoid router scores: _build_qwen3_moe_layers scores by softmax " ..
      "(make_router_config score_func=\"softmax\"; its expert bias is make_moe_config's load_balance_coeff)")
  end
  M.softmax_router_notes(m, "_build_qwen3_moe_layers", N)
  M.qwen3_attention_notes(m, N)
end

--- The deepseek_v3 builder's arguments (_build_dsv3_layers ->
-- build_mla_moe_layers: MLA, the first n_dense_layers dense,
-- num_shared_experts x moe_hidden_dim shared FFN, ComplexRoPE on
-- qk_rope_head_dim, none or yarn); the router's groups, route scale and
-- norm are the model's (M.moe_router_args); MLA mscale and YaRN betas the
-- model lacks are the flavour's; the router score is sigmoid with an
-- expert bias (moe_router_bias, DeepSeek-V3's aux-loss-free balancing),
-- else softmax.
-- @tparam table m model
-- @tparam table fam the family
-- @tparam string|nil flavor the matching flavour
-- @tparam integer ctx RoPE max_context_length
-- @tparam integer dense leading dense layers
-- @tparam function W reason writer
-- @tparam function A builder argument writer
-- @tparam function R RoPE argument writer
-- @tparam function N note writer
function M.dsv3_layers(m, fam, flavor, ctx, dense, W, A, R, N)
  local routing = flavor and fam.flavors[flavor].routing or {}
  local shared, moe_h = m.shared_expert_ffn_hidden_size or 0, m.moe_ffn_hidden_size
  local kind = m.rope_scaling_type or "none"
  if shared > 0 and shared % moe_h ~= 0 then
    W(string.format("a shared-expert width %d not a multiple of the expert width %d (num_shared_experts " ..
      "x moe_hidden_dim)", shared, moe_h))
  end
  if kind ~= "none" and kind ~= "yarn" then W(kind .. " RoPE scaling (ComplexRoPE: none or yarn)") end
  A("n_layers", m.num_layers) A("n_dense_layers", dense) A("dim", m.hidden_size)
  A("n_heads", m.num_attention_heads) A("q_lora_rank", m.q_lora_rank or 0) A("kv_lora_rank", m.kv_lora_rank)
  A("qk_nope_head_dim", m.qk_nope_head_dim) A("qk_rope_head_dim", m.qk_rope_head_dim)
  -- Attention.Config.mscale scales the softmax by (0.1 mscale ln f + 1)^2
  -- under yarn (deepseek_v3/model.py:86-88) and the rope is a pure
  -- rotation (common/rope.py:59): transformers' mscale_all_dim, with
  -- its cos/sin factor (hf.yarn_attention_factor) 1 only when mscale
  -- equals it
  local md = m.yarn_mscale_all_dim or 0
  A("v_head_dim", m.v_head_dim) A("mscale", kind == "yarn" and md + 0.0 or routing.mscale)
  A("dense_hidden_dim", m.ffn_hidden_size) A("moe_hidden_dim", moe_h) A("num_experts", m.num_experts)
  A("num_shared_experts", shared // moe_h) A("router_top_k", m.experts_per_token)
  A("router_score_func", (m.moe_router_bias and not m.moe_router_softmax_bias) and "sigmoid" or "softmax")
  M.moe_router_args(m, flavor, routing, A, N)
  A("attn_backend", "flex") A("moe_comm_backend", "standard") A("non_blocking_capacity_factor", nil)
  R("dim", m.qk_rope_head_dim) R("max_context_length", ctx)
  R("theta", (m.rope_theta or 0) > 0 and m.rope_theta + 0.0 or 10000.0)
  if kind == "yarn" then
    M.yarn_rope(m, R, N, 1.0, "ComplexRoPE is a pure rotation and Attention.Config.mscale sets only the " ..
      "softmax scale")
  end
  M.mla_moe_lacks(m, "HEAD b5bcd76c6's build_mla_moe_layers (torchtitan/models/deepseek_v3)",
    function(t) N("NOT EXPRESSIBLE in TorchTitan", t) end)
  if (m.mtp_layers or 0) > 0 then
    N("NOTE", string.format("the model's %d multi-token-prediction module(s): model_registry's num_mtp_layers " ..
      "stays 0 in this file", m.mtp_layers))
  end
  if m.qk_norm == false and (m.norm_eps or 0) > 0 then
    N("NOTE", "the MLA latents' q_norm / kv_norm keep RMSNorm.Config's default eps")
  end
end

--- What the deepseek_v3 models (HEAD's build_mla_moe_layers, a
-- release's deepseekv3_args) lack of a multi-head-latent-attention MoE
-- model: the shared experts' sigmoid gate, DeepSeek Sparse Attention's
-- indexer (DeepSeek-V3.2, GLM-5: neither has one; they attend densely).
-- @tparam table m model
-- @tparam string who the models' name in the text
-- @tparam function W reason writer (one text each)
function M.mla_moe_lacks(m, who, W)
  if m.shared_expert_gate then W("the shared experts' sigmoid gate (" .. who .. " has none)") end
  if (m.index_n_heads or 0) > 0 then
    W(("DeepSeek Sparse Attention (the lightning indexer of %d x %d and top-%d sparse attention): %s has no " ..
      "indexer and attends densely; written without it: no indexer weights, dense MLA attention, not the time " ..
      "and memory estimated"):format(m.index_n_heads, m.index_head_dim, m.index_topk, who))
  end
end

--- HEAD's MoE model for an MoE model, when HEAD has its family
-- (options.torchtitan.families, torchtitan b5bcd76c): gpt_oss for
-- attention sinks (M.gptoss_layers), deepseek_v3 for multi-head latent
-- attention (kv_lora_rank > 0, M.dsv3_layers), qwen3 for grouped-query
-- attention with qk-norm (M.qwen3_moe_layers).  The flavour is the
-- family's with the model's dim and vocab_size, else the family's
-- default with the model's own head (M.family_flavor); the layers are the
-- builder's with the model's numbers.  MoE layers interleaved with dense
-- ones, tied embeddings, and what the family's block lacks
-- (M.family_block_lacks; gpt_oss checks its own) refuse the family.
-- @tparam table m model (num_experts > 0)
-- @tparam integer ctx RoPE max_context_length (M.model_shape)
-- @tparam[opt] integer seq training seq_length (M.family_block_lacks)
-- @tparam[opt] string backend the builders' moe_comm_backend for a flex
--   dispatcher (M.comm_backend: "deepep", "hybridep"); nil: "standard",
--   the all-to-all the family functions write
-- @treturn table|nil `{family, fam, flavor, args = {{name, value}...},
--   rope = {{name, value}...}, notes = {{kind, text}...}, own_head,
--   no_expert_bias}`
-- @treturn string|nil why HEAD cannot build it (nil: no family matches)
function M.moe_model(m, ctx, seq, backend)
  local family
  if m.attention_sinks then family = "gpt_oss"
  elseif (m.kv_lora_rank or 0) > 0 then family = "deepseek_v3"
  elseif m.qk_norm then family = "qwen3" end
  if not family then return nil end
  local fam = TT.families[family]
  local why, notes, args, rope = {}, {}, {}, {}
  local function W(t) why[#why + 1] = t end
  local function N(kind, text) notes[#notes + 1] = { kind, text } end
  local function A(k, v)
    if k == "moe_comm_backend" and backend then v = backend end
    args[#args + 1] = { k, v }
  end
  local function R(k, v) rope[#rope + 1] = { k, v } end
  local flavor, own_head = M.family_flavor(fam, m, false)
  if m.tie_word_embeddings then W("tied embeddings (HEAD's MoE flavours are untied)") end
  local pattern = require("apsearch.core").model_params(m).moe_pattern or {}
  local dense = 0
  while pattern[dense + 1] == 0 do dense = dense + 1 end
  for i = dense + 1, #pattern do
    if pattern[i] ~= 1 then W("MoE layers interleaved with dense ones (the builders make the first " ..
      "n_dense_layers dense, the rest MoE)") break end
  end
  if family == "gpt_oss" then
    M.gptoss_layers(m, fam, ctx, dense, W, A, R, N)
  else
    M.family_block_lacks(m, seq, W)
    if family == "qwen3" then M.qwen3_moe_layers(m, ctx, dense, W, A, R, N)
    else M.dsv3_layers(m, fam, flavor, ctx, dense, W, A, R, N) end
  end
  if #why > 0 then return nil, table.concat(why, "; ") end
  if (m.moe_aux_loss_coeff or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", "the load-balancing loss (coefficient " ..
      M.pyfloat(m.moe_aux_loss_coeff) .. "): HEAD's MoE has no auxiliary loss (load_balance_coeff is " ..
      "the expert-bias update rate); --set model.moe_aux_loss_coeff=0 estimates the job without it")
  end
  if m.moe_router_bias and family == "deepseek_v3" then
    N("NOTE", "the router's expert bias: HEAD updates it with the MoE load-balancing hook " ..
      "(register_moe_load_balancing_hook, model_registry's post_optimizer_build_fn)")
  end
  return { family = family, fam = fam, flavor = flavor, args = args, rope = rope, notes = notes, own_head = own_head,
    -- make_moe_config's load_balance_coeff 1e-3 adds an expert bias the
    -- model does not route with (gpt_oss: the builder's argument)
    no_expert_bias = family ~= "gpt_oss" and not m.moe_router_bias }
end

--- The model's own embeddings, final norm and lm_head over a family
-- flavour of another dim, vocabulary or tying (M.family_flavor's
-- own_head), written as the family's flavours write theirs
-- (options.torchtitan.families head: deepseek_v3/__init__.py _16b,
-- qwen3/__init__.py _30b_a3b and _0_6b (tied: _EMBEDDING_SKIP_INIT,
-- enable_weight_tying), gpt_oss/__init__.py _20b at torchtitan b5bcd76c);
-- TorchTitan pads no vocabulary.
-- @tparam table mm M.moe_model's or M.dense_family_model's table
-- @tparam table m model
-- @tparam table lines the function body (appended to)
-- @tparam function import import(module, name)
function M.family_head_config(mm, m, lines, import)
  local h, D, V = mm.fam.head, m.hidden_size, m.vocab_size
  local MF = TT.model["Llama3Model.Config"]
  assert(options.torchtitan_value_ok(MF.dim, D) and options.torchtitan_value_ok(MF.vocab_size, V),
    "torchtitan: dim / vocab_size out of range")
  for _, n in ipairs(h.imports) do import(mm.fam.module, n) end
  for _, n in ipairs({ "Embedding", "Linear", "RMSNorm" }) do import("torchtitan.models.common", n) end
  local L = lines
  local model = "    config.model_spec.model."
  L[#L + 1] = model .. "dim = " .. D
  L[#L + 1] = model .. "vocab_size = " .. V .. "  # TorchTitan pads no vocabulary"
  if mm.tied then L[#L + 1] = model .. "enable_weight_tying = True" end
  L[#L + 1] = string.format("%stok_embeddings = Embedding.Config(num_embeddings=%d, embedding_dim=%d, param_init=%s)",
    model, V, D, mm.tied and h.tied_embedding_init or h.embedding_init)
  L[#L + 1] = model .. "norm = " .. h.norm:format(D)
  L[#L + 1] = string.format("%slm_head = Linear.Config(in_features=%d, out_features=%d, param_init=%s)", model, D, V,
    h.lm_head_init:gsub("%%d", tostring(D)))
end

--- `config.model_spec.model.layers = <builder>(...)`: a family's layers
-- with the model's numbers (M.moe_model, M.dense_family_model), every
-- argument checked against options.torchtitan.families.
-- @tparam table mm M.moe_model's or M.dense_family_model's table
-- @tparam table lines (appended to)
function M.family_layers_config(mm, lines)
  local fam = mm.fam
  local function lit(fact, name, v)
    if v == nil then return "None" end
    assert(fact, "torchtitan: " .. fam.builder .. " has no " .. name)
    assert(options.torchtitan_value_ok(fact, v), "torchtitan: " .. fam.builder .. "." .. name .. " = " .. M.py(v))
    return fact.type == "float" and M.pyfloat(v) or M.py(v)
  end
  local rp = {}
  for i, a in ipairs(mm.rope) do rp[i] = a[1] .. "=" .. lit(fam.rope_args[a[1]], a[1], a[2]) end
  lines[#lines + 1] = "    config.model_spec.model.layers = " .. fam.builder .. "("
  for _, a in ipairs(mm.args) do
    lines[#lines + 1] = "        " .. a[1] .. "=" .. lit(fam.args[a[1]], a[1], a[2]) .. ","
  end
  lines[#lines + 1] = "        rope=" .. fam.rope .. "(" .. table.concat(rp, ", ") .. "),"
  lines[#lines + 1] = "    )"
end

--- The model's RoPE base and scaling and its norm epsilon, written over
-- HEAD's llama3 flavour (theta 500000, llama scaling 8, eps 1e-5) on every
-- layer's own RoPE.Config and RMSNorm.Configs (make_gqa_config copies the
-- flavour's RoPE.Config per layer, so the loop sets each).
-- @tparam table m model
-- @tparam table lines the function body (appended to)
-- @tparam function N note writer
-- @tparam boolean flavored HEAD's llama3 flavour built as is
-- @tparam table|nil mm a family's model (M.moe_model,
--   M.dense_family_model), whose builder took the RoPE and has no biases:
--   the norm epsilons only (the qk-norm's too), and no expert bias where
--   the model routes without one (mm.no_expert_bias)
function M.model_numerics(m, lines, N, flavored, mm)
  local LF = TT.layer_fields
  local body = {}
  local eps_only = mm ~= nil
  local function S(path, value, comment)
    local fact = assert(LF[path], "torchtitan: layer field not in the list: " .. path)
    assert(options.torchtitan_value_ok(fact, value), "torchtitan: layer." .. path .. " = " .. tostring(value))
    local lit = value == nil and "None" or fact.type == "float" and M.pyfloat(value) or M.py(value)
    body[#body + 1] = string.format("        layer.%s = %s%s", path, lit, comment and ("  # " .. comment) or "")
  end
  local theta = m.rope_theta or 0
  local kind, f = m.rope_scaling_type or "none", m.rope_scaling_factor or 0
  if eps_only then
    -- nothing of the RoPE here
  elseif m.position_embedding and m.position_embedding ~= "rope" then
    N("NOT EXPRESSIBLE in TorchTitan", tostring(m.position_embedding) .. " positions: HEAD's llama3 model " ..
      "applies RoPE in every attention layer")
  elseif theta <= 0 then
    N("NOTE", flavored and "the model gives no rope_theta: HEAD's llama3 flavour's RoPE (theta 500000, " ..
      "llama scaling factor 8) remains" or "the model gives no rope_theta: RoPE.Config's default " ..
      "(theta 10000, no scaling) is written")
  else
    S("attention.rope.theta", theta + 0.0)
    if (m.rotary_percent or 0) > 0 then
      N("NOT EXPRESSIBLE in TorchTitan", string.format("partial RoPE (rotary_percent %s, HF " ..
        "partial_rotary_factor): RoPE.Config (models/common/rope.py) has no partial-rotation field; every " ..
        "dim of each head is rotated", M.pyfloat(m.rotary_percent)))
    end
    if kind == "llama3" then
      S("attention.rope.scaling", "llama")
      S("attention.rope.scaling_factor", f + 0.0)
      -- not given: RoPE.Config's defaults, which are Llama 3.1's
      if (m.low_freq_factor or 0) > 0 then S("attention.rope.low_freq_factor", m.low_freq_factor + 0.0) end
      if (m.high_freq_factor or 0) > 0 then S("attention.rope.high_freq_factor", m.high_freq_factor + 0.0) end
      local orig = m.original_max_position_embeddings or 0
      if orig > 0 then S("attention.rope.original_max_position_embeddings", math.tointeger(orig)) end
    else
      S("attention.rope.scaling", "none")
      if kind ~= "none" then
        N("NOT EXPRESSIBLE in TorchTitan", string.format("%s RoPE scaling (factor %s): HEAD's llama3 model " ..
          "has %s; written without scaling (positions not scaled)", kind, M.pyfloat(f),
          kind == "yarn" and "no YaRN attention scale (rope.py leaves mscale to the model, GQAttention has no " ..
          "softmax-scale option)" or "no linear position interpolation (RoPE scaling none, llama, yarn)"))
      end
    end
  end
  local eps = m.norm_eps or 0
  if eps > 0 then
    S("attention_norm.eps", eps + 0.0)
    S("ffn_norm.eps", eps + 0.0)
    if mm and mm.fam.qk_norm then S("attention.qk_norm.eps", eps + 0.0) end
  end
  if mm and mm.no_expert_bias then
    S("moe.load_balance_coeff", nil, "no expert bias: the model routes without one (make_moe_config's 1e-3 adds it)")
  end
  -- the model's linear biases (the llama3 flavours have none; a family's
  -- builder has the ones it has, M.family_block_lacks / M.gptoss_layers)
  if not eps_only then
    if m.qkv_bias then
      S("attention.qkv_linear.wqkv.bias", true, "the model's q, k, v biases")
      N("NOTE", "HEAD's llama3 state-dict adapter (models/llama3/state_dict_adapter.py) maps no q, k, v biases: " ..
        "training from scratch is unaffected, loading a Hugging Face checkpoint fails and exporting one drops them")
    end
    if m.attn_out_bias then S("attention.wo.bias", true) end
    if m.mlp_bias then
      S("feed_forward.w1.bias", true)
      S("feed_forward.w2.bias", true)
      S("feed_forward.w3.bias", true)
    end
  end
  if #body > 0 then
    lines[#lines + 1] = not eps_only and "    # the model's RoPE, norm epsilon and biases on every layer's own config" or
      mm.no_expert_bias and "    # the model's norm epsilons and routing on every layer's own config" or
      "    # the model's norm epsilons on every layer's own config"
    lines[#lines + 1] = "    for layer in config.model_spec.model.layers:"
    for _, l in ipairs(body) do lines[#lines + 1] = l end
  end
  if eps > 0 then
    local fact = TT.fields["model_spec.model.norm.eps"]
    assert(options.torchtitan_value_ok(fact, eps + 0.0))
    lines[#lines + 1] = "    config.model_spec.model.norm.eps = " .. M.pyfloat(eps + 0.0)
  end
end

--- Why a TorchTitan file cannot train with dropout: no model it writes
-- has any (torchtitan/models/llama3, qwen3, deepseek_v3, gpt_oss and
-- models/common @ b5bcd76c name no dropout; nor do the releases' llama3).
M.NO_DROPOUT = "TorchTitan's llama3, qwen3, deepseek_v3 and gpt_oss models have no dropout"

--- The quantisation converters of a precision, as constructor calls
-- (components/quantization @ b5bcd76c): fp8 Float8LinearConverter
-- (rowwise, the lm_head left bf16), mxfp8 MXFP8LinearConverter, nvfp4
-- NVFP4LinearConverter, each on the layers' linears.  A model with experts
-- keeps its router's gate in bf16, as estimated (the linear converters'
-- fqns match as substrings), and has its experts' grouped GEMMs converted
-- as the estimate prices them: Float8GroupedExpertsConverter and
-- MXFP8GroupedExpertsConverter with pad_multiple 128 (what its CuTeDSL
-- kernel needs on SM100), both as models/deepseek_v3/config_registry.py
-- writes them; NVFP4 has no grouped converter (NOT EXPRESSIBLE).
-- @tparam table m model
-- @tparam string prec training.precision
-- @tparam boolean compile the model compiled
-- @tparam function import import(module, name)
-- @tparam function N note writer
-- @tparam[opt] string backend the flex dispatcher's backend (M.comm_backend):
--   the grouped converters swap in a padding dispatcher, which DeepEP's has
--   not (components/quantization/utils.py swap_token_dispatcher raises), so
--   with "deepep" the experts stay bf16 (NOT EXPRESSIBLE)
-- @treturn table constructor calls, in the order they apply (empty: bf16)
function M.converters(m, prec, compile, import, N, backend)
  local Q = "torchtitan.components.quantization"
  local moe = (m.num_experts or 0) > 0
  -- the experts' own converter, unless the dispatcher cannot pad for it
  local grouped = moe
  if moe and backend == "deepep" and (prec == "fp8" or prec == "mxfp8") then
    N("NOT EXPRESSIBLE in TorchTitan", "the experts' grouped GEMMs in " .. prec .. " with DeepEP: the grouped " ..
      "converters pad each expert's tokens through the dispatcher, which DeepEP's cannot (swap_token_dispatcher " ..
      "raises); written without them, the experts in bf16 (moe_flex_dispatcher_backend = hybridep pads)")
    grouped = false
  end
  local convs = {}
  local function add(name, args)
    import(Q, name)
    convs[#convs + 1] = M.ctor(name .. ".Config", args)
  end
  if prec == "fp8" then
    -- HEAD has only rowwise recipes (Float8LinearConverter.Config.
    -- recipe_name: Literal["rowwise", "rowwise_with_gw_hp"], float8.py:58
    -- @ b5bcd76c; tensorwise left with 6348d93d); the estimate prices
    -- tensorwise (src/core/profile.c): its casts and float8 TP gathers.
    -- The +10 / +25 %: pytorch/ao torchao/float8/README.md (PR 1793),
    -- TorchTitan Llama 3 8B on 8 H100: bf16 6150 tokens/s, rowwise 6768,
    -- tensorwise with the float8 all-gather 7689.5
    N("NOT EXPRESSIBLE in TorchTitan", "fp8 with dynamic tensorwise scaling, as estimated: HEAD's " ..
      "Float8LinearConverter has rowwise recipes only (float8.py:58), which cast each operand once per GEMM and " ..
      "gather bf16 under TP; slower than estimated (pytorch/ao's float8 table, Llama 3 8B on 8 H100: rowwise " ..
      "+10 % over bf16, tensorwise +25 %); --torchtitan-version v0.2.2 writes tensorwise")
    add("Float8LinearConverter", { { "recipe_name", "rowwise" },
      { "filter_fqns", moe and { "lm_head", "router.gate" } or { "lm_head" } }, { "model_compile_enabled", compile } })
    if grouped then add("Float8GroupedExpertsConverter", { { "model_compile_enabled", compile } }) end
  elseif prec == "mxfp8" then
    -- an include-list: every linear of the layers but the router's gate
    add("MXFP8LinearConverter", { { "fqns", moe and M.MXFP8_MOE_FQNS or { "layers" } },
      { "model_compile_enabled", compile } })
    if grouped then
      add("MXFP8GroupedExpertsConverter", { { "model_compile_enabled", compile },
        { "pad_multiple", M.MXFP8_GROUPED_PAD } })
    end
    N("NOTE", "MXFP8LinearConverter needs SM100 or later (B200, GB200, ...)")
  elseif prec == "nvfp4" then
    add("NVFP4LinearConverter", { { "fqns", { "layers" } }, { "model_compile_enabled", compile } })
    N("NOTE", "NVFP4LinearConverter needs SM100 or later and parallelism.spmd_backend = \"spmd_types\" (the default)")
    if moe then
      N("NOT EXPRESSIBLE in TorchTitan", "the experts' grouped GEMMs in nvfp4: HEAD has no NVFP4 grouped-experts " ..
        "converter (components/quantization/nvfp4.py converts linears); they run in bf16")
    end
  end
  return convs
end

--- Lines applying converters to the config's model, in order, as
-- model_registry applies its `converters`.
-- @tparam table convs constructor calls (M.converters)
-- @tparam table lines the function body (appended to)
function M.apply_converters(convs, lines)
  for _, conv in ipairs(convs) do
    lines[#lines + 1] = "    config.model_spec.model = " .. conv ..
      ".build().convert(config.model_spec.model)  # as model_registry applies converters"
  end
end

--- MXFP8LinearConverter's fqns for a model with experts: the attention,
-- shared experts and dense feed-forward linears, not the router's gate
-- (models/deepseek_v3/config_registry.py deepseek_v3_debugmodel_mxfp8
-- @ b5bcd76c).
M.MXFP8_MOE_FQNS = { "attention", "shared_experts", "feed_forward" }

--- MXFP8GroupedExpertsConverter's pad_multiple: the per-expert row
-- padding its CuTeDSL quantization kernel needs on SM100 (mx.py Config
-- docstring; deepseek_v3_debugmodel_mxfp8 @ b5bcd76c).
M.MXFP8_GROUPED_PAD = 128

--- Renders the config module, or for a context whose torchtitan_version
-- is a release, that release's TOML job file
-- (apsearch.launch.torchtitan_toml).
-- @tparam table c context (apsearch.launch.context)
-- @treturn string
-- @treturn table notes
function M.render(c)
  -- a release: its TOML job file (apsearch.launch.torchtitan_toml)
  if c.torchtitan_version and c.torchtitan_version ~= require("apsearch.launch").TORCHTITAN_HEAD then
    return require("apsearch.launch.torchtitan_toml").render(c, c.torchtitan_version)
  end
  local r, m, tr = c.rec, c.model, c.training
  local lines, notes, imports = {}, {}, {}
  local fn = string.format("apsearch_rank%d", r.rank)
  local function N(kind, text) notes[#notes + 1] = kind .. ": " .. text end
  local other = require("apsearch.launch").framework_note("torchtitan", tr)
  if other then N("NOTE", other) end
  local drop = require("apsearch.launch").dropout_lacks(tr, M.NO_DROPOUT)
  if drop then N("NOT EXPRESSIBLE in TorchTitan", drop) end
  if tr.fuse_qkv == false and (m.kv_lora_rank or 0) == 0 then
    -- HEAD's builders fuse wq, wk, wv (3396a4b37, 2026-06-24)
    N("NOTE", "training.fuse_qkv = false was estimated (wq, wk, wv apart, as TorchTitan before 2026-06-24); " ..
      "HEAD's builders fuse them into wqkv, as written: under selective checkpointing its output is kept " ..
      "whole (--set training.fuse_qkv=true estimates this file)")
  end
  if (tr.mtp_num_layers or 0) > 0 then
    -- HEAD's DeepSeek-V3 has it (model_registry(num_mtp_layers = N) with
    -- MTPLoss: torchtitan/models/deepseek_v3/MTP.md, __init__.py:323 @
    -- b5bcd76c6), but not under pipeline or context parallelism (MTP.md's
    -- TODO: "enabling MTP with PP / CP should remain unsupported"); this
    -- file does not build it
    local without = "--set training.mtp_num_layers=0 estimates the job this file trains"
    if (r.pp_degree or 1) > 1 or (r.cp_degree or 1) > 1 then
      N("NOT EXPRESSIBLE in TorchTitan", string.format("training.mtp_num_layers = %d with %s: HEAD's " ..
        "DeepSeek-V3 trains multi-token prediction (num_mtp_layers, MTPLoss) only without pipeline and " ..
        "context parallelism (torchtitan/models/deepseek_v3/MTP.md, TODO); %s", tr.mtp_num_layers,
        (r.pp_degree or 1) > 1 and ("pp_degree = " .. r.pp_degree) or ("cp_degree = " .. r.cp_degree), without))
    else
      N("NOT WRITTEN", string.format("training.mtp_num_layers = %d: this file keeps model_registry's " ..
        "num_mtp_layers 0 (HEAD's DeepSeek-V3 trains multi-token prediction with num_mtp_layers and MTPLoss, " ..
        "torchtitan/models/deepseek_v3/MTP.md), so the job trains without it: less time and memory than " ..
        "estimated; %s", tr.mtp_num_layers, without))
    end
  end
  local function import(mod, name)
    assert(TT.imports[mod] and TT.imports[mod][name], "torchtitan: not an import at the commit: " .. mod .. "." .. name)
    imports[mod] = imports[mod] or {}
    imports[mod][name] = true
  end
  -- config.<path> = value: path and value checked against the fact table
  local function F(path, value, comment)
    local fact = assert(TT.fields[path], "torchtitan: field not in the list: " .. path)
    assert(options.torchtitan_value_ok(fact, value), "torchtitan: " .. path .. " = " .. M.py(value))
    lines[#lines + 1] = string.format("    config.%s = %s%s", path, M.py(value), comment and ("  # " .. comment) or "")
  end
  -- config.<path> = Ctor(args): constructor and keyword arguments checked
  local function C(path, ctor, args, comment)
    assert(TT.fields[path], "torchtitan: field not in the list: " .. path)
    lines[#lines + 1] = string.format("    config.%s = %s%s", path, M.ctor(ctor, args), comment and ("  # " .. comment) or "")
  end

  local tp, pp, cp, vpp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1, r.vpp_degree or 1
  local R, Sd = M.dp_degrees(r)
  local L = m.num_layers
  local b = r.micro_batch_size or 1
  local seq = tr.seq_length
  -- pipeline microbatches per gradient accumulation step: the
  -- estimate's, else all of the global batch a data-parallel rank gets;
  -- with training.local_batch_size, a pass's
  local nmb = r.micro_batch_num
  if not nmb or nmb < 1 then nmb = math.max(1, tr.global_batch_size // math.max(1, b * R * Sd)) end
  nmb = require("apsearch.launch").pass_microbatches(tr, r, nmb)

  -- model: HEAD's llama3 flavour when its shape is the model's, else the
  -- model's own shape on the flavours' builder (M.model_shape)
  local shape, flavor, mnotes = M.model_shape(m, seq, pp)
  -- a model of a family HEAD has: that family's model (M.moe_model,
  -- M.dense_family_model)
  local mm, mm_why
  if (m.num_experts or 0) > 0 then
    mm, mm_why = M.moe_model(m, shape.max_context_length, seq, M.comm_backend(r, tr))
  else mm = M.dense_family_model(m, shape.max_context_length, pp, seq) end
  for _, n in ipairs(mm and mm.notes or mnotes) do N(n[1], n[2]) end
  if mm then
    -- model_shape's notes are about HEAD's llama3 builder; keep its context one
    for _, n in ipairs(mnotes) do if n[1] == "NOTE" then N(n[1], n[2]) end end
  end
  local named = llama3_flavor(m.name)
  local base = named and TT.base_configs["llama3_" .. named:lower()] and ("llama3_" .. named:lower()) or "llama3_8b"
  if mm then
    base = mm.fam.base
    import(mm.fam.config_module, base)
    import(mm.fam.module, "model_registry")
  else
    import("torchtitan.models.llama3.config_registry", base)
    import("torchtitan.models.llama3", "model_registry")
    if base == "llama3_405b" then
      -- config_registry.py llama3_405b() builds its model_spec with a
      -- Float8LinearConverter before this file replaces it
      N("NOTE", "HEAD's llama3_405b() builds a Float8 converter (torchao) before this file replaces its " ..
        "model: install torchao even for a bf16 job (torchtitan/components/quantization/float8.py imports it)")
    end
  end
  import("torchtitan.trainer", "Trainer")
  -- the estimate's elementwise kernels: fused when compiled, eager otherwise
  -- (Megatron and DeepSpeed estimates assume fused kernels: compile)
  local pytorch = tr.framework == "fsdp2" or tr.framework == "fsdp"
  local compile = tr.torch_compile == true or not pytorch

  -- quantisation converters on the transformer layers' linears, and on
  -- the MoE experts' grouped GEMMs
  local prec = tr.precision
  local convs = M.converters(m, prec, compile, import, N, M.comm_backend(r, tr))
  if tr.fp8_param_gather == true then
    N("NOT EXPRESSIBLE in TorchTitan", "fp8_param_gather with " .. tostring(prec) ..
      ": TorchTitan's float8 rowwise, MX and NVFP4 linears gather bf16 parameters " ..
      "(enable_fsdp_float8_all_gather went with the tensorwise recipe, 6348d93d)")
  end
  if tr.store_param_remainders then
    N("NOT EXPRESSIBLE in TorchTitan", "store_param_remainders (apex DistributedFusedAdam, NeMo 1.x)")
  end
  if tr.first_last_layers_bf16 then
    N("NOT EXPRESSIBLE in TorchTitan", "Megatron's first and last layers in bf16 (first_last_layers_bf16): " ..
      "the converter quantizes every module its fqns name")
  end
  if tr.cutedsl_fused_grouped_mlp then
    N("NOT EXPRESSIBLE in TorchTitan", "TransformerEngine's fused grouped MLP under Megatron-Core (cutedsl_fused_grouped_mlp): GroupedExperts " ..
      "runs its own grouped GEMMs and activation")
  end

  lines[#lines + 1] = string.format("    config = %s()", base)
  if mm then
    local label = mm.fam.module:match("([%w_]+)$") .. (mm.fam.moe and " MoE" or "")
    if mm.own_head then
      lines[#lines + 1] = string.format("    # %s: HEAD's %s model; flavour %s gives the ModelSpec; the " ..
        "embeddings, final norm and lm_head (dim %d, vocab %d%s) and the layers are the model's", tostring(m.name),
        label, mm.flavor, m.hidden_size, m.vocab_size, mm.tied and ", tied" or "")
    else
      lines[#lines + 1] = string.format("    # %s: HEAD's %s model; flavour %s gives the ModelSpec, embeddings, " ..
        "final norm and lm_head (dim %d, vocab %d), the layers are the model's", tostring(m.name), label,
        mm.flavor, m.hidden_size, m.vocab_size)
    end
    lines[#lines + 1] = string.format("    config.model_spec = model_registry(%s)", M.py(mm.flavor))
    F("model_spec.flavor", tostring(m.name))
    if mm.own_head then M.family_head_config(mm, m, lines, import) end
    import(mm.fam.module, mm.fam.builder)
    import("torchtitan.models.common", mm.fam.rope:match("^(%w+)"))
    M.family_layers_config(mm, lines)
    M.apply_converters(convs, lines)
  elseif flavor then
    lines[#lines + 1] = string.format("    config.model_spec = model_registry(%s%s)  # %s", M.py(flavor),
      #convs > 0 and (", converters=[" .. table.concat(convs, ", ") .. "]") or "", M.shape_comment(shape))
  else
    local reg = named or "8B"
    lines[#lines + 1] = string.format("    # %s: %s, on HEAD's llama3 builder (the flavours' " ..
      "_build_llama3_layers and inits); the ModelSpec (parallelize, pipelining, state dict adapter) is " ..
      "model_registry's", tostring(m.name), M.shape_comment(shape))
    lines[#lines + 1] = string.format("    config.model_spec = model_registry(%s)", M.py(reg))
    F("model_spec.flavor", tostring(m.name))
    M.model_config(shape, lines, import)
    M.apply_converters(convs, lines)
  end
  M.loss_config(tr, lines, import)

  M.model_numerics(m, lines, N, flavor ~= nil, mm)

  -- batch
  F("training.num_tokens_per_microbatch_per_dp_rank", b * seq, string.format("%d x %d tokens", b, seq))
  F("training.max_context_length", seq)
  F("training.num_tokens_per_train_step", tr.global_batch_size * seq,
    string.format("global batch %d x %d", tr.global_batch_size, seq))
  local per_iter = b * (pp > 1 and nmb or 1) * R * Sd
  if tr.global_batch_size % per_iter ~= 0 then
    N("NOTE", string.format("global batch %d is not a multiple of %d sequences per accumulation step: " ..
      "TorchTitan refuses num_tokens_per_train_step", tr.global_batch_size, per_iter))
  end
  if tr.precision == "fp16" then
    N("NOT EXPRESSIBLE in TorchTitan", "fp16 mixed precision (mixed_precision_param takes bfloat16 or float32)")
  else
    F("training.mixed_precision_param", "bfloat16")
  end
  -- CUDA graphs: HEAD captures forward + backward unless disabled, never with PP
  if tr.cuda_graphs and pp > 1 then
    N("NOT EXPRESSIBLE in TorchTitan", "CUDA graphs with pipeline parallelism (Trainer.Config refuses them)")
  end
  -- nor with expert parallelism over a dispatcher that syncs with the host,
  -- as the standard all-to-all this file writes does (trainer.py
  -- _validate_cuda_graphs, l.178-197 at options.torchtitan's commit)
  local graph_ep = tr.cuda_graphs and pp == 1 and (m.num_experts or 0) > 0 and M.written_ep(r) > 1
  if graph_ep then
    N("NOT EXPRESSIBLE in TorchTitan", "CUDA graphs with expert parallelism over the standard all-to-all " ..
      "dispatcher, which syncs with the host (Trainer.Config refuses them: only HybridEP with " ..
      "non_blocking_capacity_factor or MinimalAsyncEP); written with the graphs off")
  end
  -- HEAD captures the whole forward and backward: the scope "none" is no
  -- graph, as the estimate prices it; a set of Megatron-Core modules has
  -- no TorchTitan option
  local scope = tr.cuda_graph_scope or "layer"
  local graphs = tr.cuda_graphs and scope ~= "none" and pp == 1 and not graph_ep
  if graphs and scope ~= "layer" and scope ~= "full_iteration" then
    N("NOT EXPRESSIBLE in TorchTitan", ("cuda_graph_scope %s: HEAD captures the whole forward and backward " ..
      "(training.disable_cuda_graphs), not Megatron-Core's per-layer modules"):format(scope))
  end
  F("training.disable_cuda_graphs", not graphs)
  if (tr.activation_offload_layers or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", "activation offload to host (activation_offload_layers = " ..
      tr.activation_offload_layers .. "): TorchTitan's CPU offload moves parameters, gradients and " ..
      "optimizer states (training.enable_cpu_offload), not activations")
  end
  if tr.offload_modules then
    N("NOT EXPRESSIBLE in TorchTitan", "fine-grained activation offload (offload_modules " .. tr.offload_modules ..
      "): Megatron-Core's --offload-modules; TorchTitan offloads no activations")
  end

  -- data parallel
  M.data_parallel_fields(F, N, "NOT EXPRESSIBLE in TorchTitan", r, tr.framework)

  -- tensor parallel
  F("parallelism.tensor_parallel_degree", tp)
  local kv_lacks = require("apsearch.launch").kv_heads_lacks(m, r, "TorchTitan")
  if kv_lacks then N("NOT EXPRESSIBLE in TorchTitan", kv_lacks) end
  if tp > 1 then F("parallelism.enable_sequence_parallel", r.sequence_parallel ~= false) end
  local async_tp = tp > 1 and tr.tp_comm_overlap == true
  if async_tp and not compile then
    N("NOT EXPRESSIBLE in TorchTitan", "tp_comm_overlap without compile: async TP needs the model compiled " ..
      "(CompileConfig refuses it otherwise)")
    async_tp = false
  end

  -- pipeline parallel
  F("parallelism.pipeline_parallel_degree", pp)
  if pp > 1 then
    local sched = M.schedule_class(r, vpp)
    F("parallelism.pipeline_parallel_schedule", sched)
    F("parallelism.num_pp_microbatches", nmb)
    local group = require("apsearch.launch").group_size_note(r)
    if group then N("NOT EXPRESSIBLE in TorchTitan", group) end
    local plan, chunks, parts = M.pipeline_plan(c, r, L, pp, vpp, sched, "lm_head")
    if plan then
      F("parallelism.pipeline_parallel_first_stage_less_layers", plan.first)
      F("parallelism.pipeline_parallel_last_stage_less_layers", plan.last)
      if plan.lps then F("parallelism.pipeline_parallel_layers_per_stage", plan.lps) end
      lines[#lines + 1] = "    # layers per model chunk: " .. table.concat(chunks, ", ")
    else
      assert(TT.fields["parallelism.module_fqns_per_model_part"])
      lines[#lines + 1] = "    config.parallelism.module_fqns_per_model_part = [  # layers per model chunk: " ..
        table.concat(chunks, ", ")
      for j = 1, #parts do lines[#lines + 1] = "        " .. M.py(parts[j]) .. "," end
      lines[#lines + 1] = "    ]"
    end
  end

  -- context parallel
  F("parallelism.context_parallel_degree", cp)
  if cp > 1 then
    F("parallelism.context_parallel_load_balancer", "headtail", "chunks i and 2c-1-i per rank")
    if r.cp_comm_type == "a2a" then
      -- torchtitan/distributed/context_parallel/api.py @ b5bcd76c: PyTorch's
      -- context parallel attention, ring attention only
      N("NOT EXPRESSIBLE in TorchTitan", "cp_comm_type = a2a: TorchTitan's context parallelism is " ..
        "ring attention (PyTorch's context_parallel); it has no all-to-all (Ulysses) mode")
    else
      -- the llama3, qwen3 and deepseek_v3 shardings all set
      -- set_gqa_inner_attention_local_map (models/common/
      -- decoder_sharding.py @ b5bcd76c l.263-296): K/V replicated on the CP
      -- axis, all-gathered at the attention's local_map boundary
      local how = "TorchTitan all-gathers K/V at the attention's local_map boundary (decoder_sharding.py " ..
        "set_gqa_inner_attention_local_map); no option chooses another exchange"
      if r.cp_comm_type == "all_gather" then
        N("NOTE", "cp_comm_type = all_gather: " .. how)
      else
        N("NOT EXPRESSIBLE in TorchTitan", "cp_comm_type = " .. tostring(r.cp_comm_type or "p2p") ..
          " (the ring): " .. how)
      end
    end
  end

  -- an MoE model no family of HEAD builds: the module stops before it
  -- would train a dense model in its place
  local stop
  if (m.num_experts or 0) > 0 then stop = M.moe_fields(c, F, N, mm and mm.fam.moe and mm, mm_why) end

  -- compile
  -- the model (torch_compile) and the loss (compile_loss, else as the
  -- model) are separate components; compile.enable when either is
  -- (torchtitan/components/loss.py _maybe_compile)
  local components = {}
  if compile then components[1] = "model" end
  local loss = tr.compile_loss == true or (tr.compile_loss == nil and compile)
  if loss then components[#components + 1] = "loss" end
  if #components == 0 then components = { "model", "loss" } end
  import("torchtitan.config", "CompileConfig")
  C("compile", "CompileConfig", { { "enable", compile or loss }, { "components", components },
    { "enable_async_tensor_parallel", async_tp } })

  -- activation checkpointing
  local function AC(name, comment)
    import("torchtitan.distributed.activation_checkpoint", name)
    C("activation_checkpoint", name .. ".Config", {}, comment)
  end
  if r.layer_recompute == "full" then
    local all, rc = #c.recompute > 0, 0
    for i = 1, #c.recompute do
      if c.recompute[i] ~= c.layers[i] then all = false end
      rc = rc + (c.recompute[i] or 0)
    end
    if all then
      AC("FullAC", "every transformer block recomputed")
    elseif rc == 0 then
      lines[#lines + 1] = "    config.activation_checkpoint = None"
      N("NOTE", "full recompute with no layer recomputed on any stage")
    else
      AC("FullAC", "every transformer block recomputed")
      -- another job, not a close one: every layer's forward again (the
      -- breaker pass of 2026-12-05 measured +13.6 % step on Llama 3.1 70B),
      -- so --launchable torchtitan filters it (launch.differences)
      N("NOT EXPRESSIBLE in TorchTitan", string.format("full recompute of %s of %s layers per stage, written " ..
        "as FullAC on every block (TorchTitan at this commit checkpoints every block or none: " ..
        "activation_checkpoint.py ActivationCheckpointing.apply): more recompute, less activation memory than " ..
        "estimated; older releases take a layer frequency (--torchtitan-version)",
        table.concat(c.recompute, ":"), table.concat(c.layers, ":")))
    end
  elseif r.layer_recompute == "selective" then
    AC("SelectiveAC", "per-op SAC in every block")
    -- with the fsdp2 profile apsearch models TorchTitan's per-op selective
    -- checkpointing itself; other profiles estimated Megatron's
    if tr.framework ~= "fsdp2" then
      local mods = (r.recompute_modules and r.recompute_modules ~= "") and r.recompute_modules or "core_attn"
      N("APPROXIMATE", "apsearch's selective recompute (Megatron's recompute modules " .. mods ..
        ", the " .. tostring(tr.framework) .. " profile) as TorchTitan's per-op selective AC")
    end
  else
    lines[#lines + 1] = "    config.activation_checkpoint = None"
  end

  -- the file
  local module = string.format("rank%d_torchtitan", r.rank)
  local nproc = math.min(c.devices_used, c.devices_per_node)
  local out = {}
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = "# TorchTitan config module for " .. options.cite(TT) .. " (" .. TT.source.date .. ")"
  out[#out + 1] = "# fields checked against that commit's " .. TT.source.path .. "; add your dataset,"
  out[#out + 1] = "# tokenizer (hf_assets_path), optimizer, checkpoint and step settings."
  out[#out + 1] = "# Run from a TorchTitan checkout at that commit, on every node (as run_train.sh),\n# <launch-dir> the directory of this file:"
  out[#out + 1] = string.format("#   PYTHONPATH=<launch-dir>:$PYTHONPATH torchrun --nnodes %d --nproc-per-node %d " ..
    "--node-rank $NODE_RANK --master-addr $MASTER_ADDR --master-port 29500 -m torchtitan.train " ..
    "--module %s --config %s", c.nodes, nproc, module, fn)
  for _, n in ipairs(notes) do out[#out + 1] = "# " .. n end
  out[#out + 1] = ""
  local mods = {}
  for mod in pairs(imports) do mods[#mods + 1] = mod end
  table.sort(mods)
  for _, mod in ipairs(mods) do
    local names = {}
    for n in pairs(imports[mod]) do names[#names + 1] = n end
    table.sort(names)
    out[#out + 1] = "from " .. mod .. " import " .. table.concat(names, ", ")
  end
  out[#out + 1] = ""
  out[#out + 1] = ""
  out[#out + 1] = "def " .. fn .. "() -> Trainer.Config:"
  if stop then out[#out + 1] = "    raise NotImplementedError(" .. M.py(stop) .. ")" end
  for _, l in ipairs(lines) do out[#out + 1] = l end
  out[#out + 1] = "    return config"
  return table.concat(out, "\n") .. "\n", notes
end

--- ParallelismConfig.expert_parallel_degree written when the strategy's
-- ep_degree cannot be: 1, TorchTitan's "no expert parallelism"
-- (torchtitan/config/configs.py ParallelismConfig at options.torchtitan's
-- commit; ParallelDims accepts it for any dp_shard x cp x tp).
local NO_EXPERT_PARALLEL = 1

--- The expert_parallel_degree the file writes for record r: its
-- ep_degree when that divides data_parallel_shard_degree x cp x tp
-- (ParallelDims), else NO_EXPERT_PARALLEL (M.moe_fields says why).
-- @tparam table r the top-k record
-- @treturn integer
function M.written_ep(r)
  local ep, tp, cp = r.ep_degree or 1, r.tp_degree or 1, r.cp_degree or 1
  local _, Sd = M.dp_degrees(r)
  return (Sd * cp * tp) % ep == 0 and ep or NO_EXPERT_PARALLEL
end

--- Mixture-of-experts settings (TorchTitan at options.torchtitan's
-- commit): ep_degree -> parallelism.expert_parallel_degree, which must
-- divide dp_shard x cp x tp (ParallelDims, torchtitan/distributed/
-- parallel_dims.py:187-192 _validate: the sparse mesh pp x dp_replicate x
-- efsdp x ep), else expert_parallel_degree = 1 (always written: the base
-- config function's default is not always 1, deepseek_v3_671b's is 2).  Not
-- expressible there: experts split by tensor parallelism (etp_degree > 1;
-- the sparse mesh has no tp dimension), a capacity factor (HEAD's
-- standard all-to-all is dropless), grouped GEMM off; the model itself:
-- HEAD's family model when M.moe_model built it, else this module builds
-- HEAD's llama3 (dense) model and a NOT WRITTEN note points at HEAD's MoE
-- config functions.
-- @tparam table c context (apsearch.launch.context)
-- @tparam function F field writer
-- @tparam function N note writer
-- @tparam table|nil mm M.moe_model's table (the MoE model written)
-- @tparam string|nil why why HEAD's family cannot build it
-- @treturn string|nil without mm, the error the module raises first (it
--   would train HEAD's dense llama3 model instead of the estimated one)
function M.moe_fields(c, F, N, mm, why)
  local r, m = c.rec, c.model
  local ep, tp, cp = r.ep_degree or 1, r.tp_degree or 1, r.cp_degree or 1
  local etp = r.etp_degree or tp
  local _, Sd = M.dp_degrees(r)
  local shard = Sd * cp * tp
  if not mm then
    N("NOT WRITTEN", string.format("the %d-expert MoE model: this module builds HEAD's " ..
      "llama3 (dense) model%s; start from HEAD's MoE config functions (torchtitan/models/deepseek_v3, " ..
      "qwen3, gpt_oss config_registry.py; their model_registry flavours carry the experts) and copy the " ..
      "parallelism fields below", m.num_experts, why and (" (" .. why .. ")") or ""))
  end
  local stop = not mm and string.format("apsearch: the estimated %d-expert MoE model is not written (NOT WRITTEN " ..
    "above): this module would train a dense llama3 model instead; build it from HEAD's MoE config functions " ..
    "and delete this line", m.num_experts) or nil
  -- Always written: the base config function's own value is not neutral
  -- (deepseek_v3_671b sets expert_parallel_degree = 2, which ParallelDims
  -- rejects when dp_shard x cp x tp is odd).
  if M.written_ep(r) == ep then
    F("parallelism.expert_parallel_degree", ep)
  else
    F("parallelism.expert_parallel_degree", NO_EXPERT_PARALLEL)
    N("NOT EXPRESSIBLE in TorchTitan", string.format("ep_degree = %d over data-parallel replicas: " ..
      "expert_parallel_degree must divide data_parallel_shard_degree x cp x tp = %d (ParallelDims); " ..
      "written as %d (no expert parallelism: the experts replicated or FSDP-sharded as the dense weights)",
      ep, shard, NO_EXPERT_PARALLEL))
  end
  if etp > 1 then
    N("NOT EXPRESSIBLE in TorchTitan", string.format("etp_degree = %d: experts are sharded over ep and " ..
      "efsdp only (the sparse mesh pp x dp_replicate x efsdp x ep has no tensor-parallel dimension)", etp))
  end
  if (r.moe_capacity_factor or 0) > 0 then
    N("NOT EXPRESSIBLE in TorchTitan", "moe_capacity_factor = " .. tostring(r.moe_capacity_factor) ..
      ": HEAD's standard all-to-all expert parallelism is dropless")
  end
  if r.moe_grouped_gemm == false then
    N("NOT EXPRESSIBLE in TorchTitan", "moe_grouped_gemm = false: HEAD's GroupedExperts always run " ..
      "grouped GEMMs")
  end
  -- the dispatcher: M.comm_backend_arg wrote flex as the family's
  -- deepep / hybridep backend; HEAD has no all-gather dispatcher, and a
  -- flex without expert parallelism or a family builder is written with
  -- moe_comm_backend "standard" (AllToAllTokenDispatcher)
  local d = r.moe_token_dispatcher or "alltoall"
  if d == "allgather" or (d == "flex" and not (mm and M.comm_backend(r, c.training))) then
    N("NOT EXPRESSIBLE in TorchTitan", "moe_token_dispatcher = " .. d .. (d == "flex" and
      " without expert parallelism (DeepEP / HybridEP dispatch across EP ranks)" or "") .. ": written with " ..
      "moe_comm_backend \"standard\", the all-to-all dispatcher (config_utils.py AllToAllTokenDispatcher)")
  end
  return stop
end

--- HEAD's moe_comm_backend for a strategy's flex dispatcher
-- (models/common/config_utils.py make_token_dispatcher_config @ b5bcd76c:
-- "deepep" DeepEPTokenDispatcher, "hybridep" HybridEPTokenDispatcher), by
-- training.moe_flex_dispatcher_backend; nil for another dispatcher or
-- without expert parallelism.
-- @tparam table r strategy record
-- @tparam table tr training
-- @treturn string|nil
function M.comm_backend(r, tr)
  if r.moe_token_dispatcher ~= "flex" or (r.ep_degree or 1) <= 1 then return nil end
  return tr.moe_flex_dispatcher_backend == "hybridep" and "hybridep" or "deepep"
end

--- `Ctor(k=v, ...)` with the constructor and its arguments checked
-- against the fact table.
-- @tparam string ctor e.g. "FullAC.Config"
-- @tparam table args array of `{name, value}`
-- @treturn string
function M.ctor(ctor, args)
  local spec = assert(TT.constructors[ctor], "torchtitan: constructor not in the list: " .. ctor)
  local parts = {}
  for _, a in ipairs(args) do
    local fact = assert(spec[a[1]], "torchtitan: " .. ctor .. " has no field " .. a[1])
    assert(options.torchtitan_value_ok(fact, a[2]), "torchtitan: " .. ctor .. "(" .. a[1] .. " = " .. M.py(a[2]) .. ")")
    parts[#parts + 1] = a[1] .. "=" .. M.py(a[2])
  end
  return ctor .. "(" .. table.concat(parts, ", ") .. ")"
end

return M
