--- MindSpore Transformers (MindFormers) YAML fragment for one strategy:
-- parallel_config, recompute_config, parallel (optimizer parallelism,
-- pipeline interleave), runner_config (batch) and the model_config fields
-- the strategy depends on (offset, pp_interleave_num, shape).  Key names
-- from apsearch.launch.options (MindFormers source and docs, cited there).
-- Targets mindspore-lab/mindformers fd4deebc1606a02fd24c3b359a889cd0c966e72b
-- (LayerSetting, LlamaConfig, ConfigTemplate; docs/launch.md).
-- Merge it into a MindFormers training YAML of the model.  A model
-- LlamaConfig cannot hold is written for MindFormers' Qwen3, Qwen3-MoE or
-- DeepSeek-V3 model when one builds it (use_legacy False:
-- apsearch.launch.mindspore_mcore).
--
-- Mapping (apsearch strategy field -> MindFormers key):
--
-- * dp_degree x fsdp_degree -> parallel_config.data_parallel; fsdp_degree
--   > 1 -> parallel.enable_parallel_optimizer (MindSpore's optimizer
--   parallelism shards weights and optimizer states over the data-parallel
--   group), HSDP -> parallel_optimizer_config.optimizer_weight_shard_size
--   = fsdp_degree; ZeRO-1/2 without FSDP are NOT EXPRESSIBLE exactly
-- * tp_degree -> model_parallel; sequence_parallel -> use_seq_parallel;
--   vocab_emb_dp = false when tp > 1 (vocabulary sharded like Megatron)
-- * pp_degree -> pipeline_stage; micro_batch_num -> micro_batch_num (PP)
--   or runner_config.gradient_accumulation_steps (no PP); an uneven split
--   -> model_config.offset[i] = layers_i - L // p (MindFormers:
--   n_layer_i = L // p + offset[i]); vpp_degree -> pp_interleave_num with
--   parallel.pipeline_config.pipeline_interleave
-- * cp_degree -> context_parallel; cp_comm_type p2p (ring) ->
--   context_parallel_algo colossalai_cp; a2a (heads scattered by
--   all-to-all) -> ulysses_cp, whose rule cp x mp <= KV heads
--   (mindformers/tools/check_rules.py _check_context_parallel_algo_valid)
--   the core's a2a head divisibility implies; all_gather NOT EXPRESSIBLE
-- * layer_recompute: selective -> select_recompute (attention operators);
--   full -> recompute: true (every layer) or a list of recomputed layers
--   per stage ([n] without PP), with interleaving a count per stage spread
--   over its chunks; selective -> select_recompute operator patterns
-- * micro_batch_size -> runner_config.batch_size
-- * MoE (M.moe_keys): ep_degree -> parallel_config.expert_parallel; the
--   experts as moe_config (expert_num, num_experts_chosen, use_gmm, and
--   without grouped GEMM routing_policy, capacity_factor,
--   use_allgather_dispatcher); what LlamaConfig's MoE cannot hold
--   NOT EXPRESSIBLE
-- @module apsearch.launch.mindspore
local options = require "apsearch.launch.options"
local launch_util = require "apsearch.launch"
local mcore = require "apsearch.launch.mindspore_mcore"

local M = {}

--- A float as PyYAML's (YAML 1.1) resolver reads it back as a float: the
-- shortest decimal with a dot, also before an exponent ("1.0e-05";
-- yaml.safe_load reads "1e-05" as a string).
-- @tparam number v finite
-- @treturn string
function M.yaml_float(v)
  local s
  for p = 15, 17 do
    s = string.format("%." .. p .. "g", v)
    if tonumber(s) == v then break end
  end
  if s:find(".", 1, true) then return s end
  local mant, exp = s:match("^([^eE]+)([eE].*)$")
  if mant then return mant .. ".0" .. exp end
  return s .. ".0"
end

local function yaml_value(v)
  if v == mcore.NULL then return "null" end
  if type(v) == "boolean" then return v and "True" or "False" end
  if math.type(v) == "float" then return M.yaml_float(v) end
  if type(v) == "string" then
    -- single-quoted when it holds a backslash (a regular expression):
    -- no escapes there, '' is a quote
    if v:find("\\", 1, true) then return "'" .. v:gsub("'", "''") .. "'" end
    return '"' .. v:gsub('"', '\\"') .. '"'
  end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = yaml_value(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return tostring(v)
end

--- LlamaConfig's RoPE scaling keys (FreqsMgr, mindformers/modules/layers.py
-- @ fd4deebc): llama3 -> extend_method "LLAMA3" with scaling_factor a
-- mapping of exactly factor (a float >= 1), low_freq_factor,
-- high_freq_factor and original_max_position_embeddings (an integer below
-- max(max_position_embedding, seq_length)); linear -> extend_method "PI"
-- with a number (positions divided by it, as transformers' linear: the
-- "linear" method's own check refuses every numeric factor at this
-- commit); yarn -> extend_method "YARN" with scaling_factor a mapping of
-- exactly factor (>= 1), original_max_position_embeddings (an integer not
-- above max_position_embedding; hf.yarn_original, transformers' fallback
-- to max_position_embeddings), beta_fast > beta_slow, mscale and
-- mscale_all_dim (_check_yarn_scaling_factor); FreqsMgr scales cos/sin by
-- _yarn_get_mscale(factor, mscale) / _yarn_get_mscale(factor,
-- mscale_all_dim): the config's pair when it gives both, else 0 and the
-- mscale hf.yarn_mscale_for gives, so that the factor is transformers'
-- (1.0 when it gives neither or mscale alone; 1 + md + 0.1 md ln f for
-- mscale_all_dim md alone; from an attention_factor).  FreqsMgr always
-- rounds the ramp's ends (truncate false is noted).
function M.rope_scaling(m, tr, K, N)
  local kind, f = m.rope_scaling_type or "none", m.rope_scaling_factor or 0
  if kind == "llama3" then
    local low, high, orig = m.low_freq_factor or 0, m.high_freq_factor or 0,
      m.original_max_position_embeddings or 0
    local ctx = math.max(m.max_position_embeddings or 0, tr.seq_length or 0)
    if low <= 0 or high <= 0 or orig <= 0 then
      N("NOT WRITTEN", "llama3 RoPE scaling: MindFormers' LLAMA3 extend_method needs low_freq_factor, " ..
        "high_freq_factor and original_max_position_embeddings, which the model does not give")
    elseif f < 1 or orig >= ctx then
      N("NOT EXPRESSIBLE in MindFormers", string.format("llama3 RoPE scaling factor %s with original context %d: " ..
        "FreqsMgr needs factor >= 1 and original_max_position_embeddings < max_position_embedding %d",
        tostring(f), orig, ctx))
    else
      K("model.model_config.extend_method", "LLAMA3")
      K("model.model_config.scaling_factor.factor", f + 0.0)
      K("model.model_config.scaling_factor.low_freq_factor", low + 0.0)
      K("model.model_config.scaling_factor.high_freq_factor", high + 0.0)
      K("model.model_config.scaling_factor.original_max_position_embeddings", math.tointeger(orig))
    end
  elseif kind == "linear" then
    K("model.model_config.extend_method", "PI", "linear position interpolation")
    K("model.model_config.scaling_factor", f + 0.0)
  elseif kind == "yarn" then
    local hf = require "apsearch.hf"
    local orig = hf.yarn_original(m)
    local ctx = math.max(m.max_position_embeddings or 0, tr.seq_length or 0)
    local ms, md = m.yarn_mscale or 0, m.yarn_mscale_all_dim or 0
    -- LlamaConfig's softmax does not read mscale_all_dim: it is written
    -- only when the config gives both magnitudes (no attention_factor),
    -- mscale then hf.yarn_mscale_for it (transformers' cos/sin factor)
    if not (ms > 0 and md > 0 and (m.yarn_attention_factor or 0) <= 0) then md = 0 end
    ms = hf.yarn_mscale_for(m, md)
    if not orig then
      N("NOT WRITTEN", "yarn RoPE scaling: MindFormers' YARN extend_method needs " ..
        "original_max_position_embeddings, and the model gives neither it nor max_position_embeddings")
    elseif f < 1 or orig > ctx then
      N("NOT EXPRESSIBLE in MindFormers", string.format("yarn RoPE scaling factor %s with original context %d: " ..
        "FreqsMgr needs factor >= 1 and original_max_position_embeddings <= max_position_embedding %d",
        tostring(f), orig, ctx))
    elseif not ms then
      N("NOT EXPRESSIBLE in MindFormers", string.format("yarn attention_factor %s with factor %s: FreqsMgr's " ..
        "_yarn_get_mscale is 1 for every mscale at factor 1; not written", tostring(m.yarn_attention_factor),
        tostring(f)))
    else
      if m.yarn_no_truncate then
        N("NOT EXPRESSIBLE in MindFormers", "yarn truncate false: FreqsMgr's _yarn_find_correction_range " ..
          "always rounds the ramp's ends to integers (written rounded)")
      end
      K("model.model_config.extend_method", "YARN")
      K("model.model_config.scaling_factor.factor", f + 0.0)
      K("model.model_config.scaling_factor.original_max_position_embeddings", orig)
      K("model.model_config.scaling_factor.beta_fast", hf.yarn_beta(m, "beta_fast"))
      K("model.model_config.scaling_factor.beta_slow", hf.yarn_beta(m, "beta_slow"))
      K("model.model_config.scaling_factor.mscale", ms + 0.0)
      K("model.model_config.scaling_factor.mscale_all_dim", md + 0.0)
    end
  end
end

--- TopkRouterV2's topk_method for a group scored by the sum of its best
-- n expert scores (moe.py:1531-1540 @ fd4deebc: group_limited_greedy takes
-- the group's max, noaux_tc the sum of its top 2), keyed by n; the same n
-- as hf.GROUP_SCORE_TOPK (DeepSeek-V2 / V3's gates).
M.GROUP_TOPK_METHOD = { [1] = "group_limited_greedy", [2] = "noaux_tc" }

--- MoEConfig.capacity_factor written for dropless routing without grouped
-- GEMM: TopkRouterV2 sizes the capacity to the routed tokens for any value
-- <= 0 (mindformers/modules/transformer/moe.py:1630 @ fd4deebc; "if
-- capacity_factor <= 0 means dropless",
-- research/mixtral/mixtral_8x7b/pretrain_mixtral-8x7b.yaml:36).  Override by
-- assigning another value <= 0.
M.DROPLESS_CAPACITY_FACTOR = -1.0

--- Mixture-of-experts keys (legacy path, use_legacy: MoEConfig and
-- ParallelConfig.expert_parallel in mindformers/tools/register/template.py,
-- _check_moe_config in mindformers/modules/transformer/moe.py @ the
-- options' commit): ep_degree -> parallel_config.expert_parallel (it must
-- divide data_parallel x context_parallel), experts and top-k ->
-- moe_config.expert_num, num_experts_chosen.  Dropless with grouped GEMM ->
-- use_gmm True (MoEV3, no capacity); a capacity factor or no grouped GEMM
-- -> use_gmm False, routing_policy TopkRouterV2 (the only router MoEV2
-- takes) and capacity_factor (M.DROPLESS_CAPACITY_FACTOR when dropless);
-- the allgather dispatcher -> use_allgather_dispatcher (MoEV2 only).
-- Checked by loading the YAML with MindFormers' own MindFormerConfig,
-- check_rules, LlamaConfig, _check_moe_config, MoEV2 / MoEV3's FFN
-- (docs/launch.md).  NOT EXPRESSIBLE: grouped GEMM together with a capacity
-- factor (MoEV3 ignores it), the flex dispatcher, an expert TP size of
-- its own; the shapes LlamaConfig's MoE cannot hold (shared experts,
-- dense layers between MoE layers with their own width, MLA): M.shape_lacks.
-- The router: M.router_keys.
-- @tparam table c context (apsearch.launch.context)
-- @tparam function K key writer
-- @tparam function N note writer
-- @tparam[opt] boolean arch false: the architecture is not written
--   (M.shape_lacks): the parallel keys alone, and no line about the
--   moe_config or router keys it leaves out (default true)
function M.moe_keys(c, K, N, arch)
  local r, m = c.rec, c.model
  local ep, tp, cp = r.ep_degree or 1, r.tp_degree or 1, r.cp_degree or 1
  local dp = (r.dp_degree or 1) * (r.fsdp_degree or 1)
  if (dp * cp) % ep == 0 then
    K("parallel_config.expert_parallel", ep)
  else
    N("NOT EXPRESSIBLE in MindFormers", string.format("ep_degree = %d: expert_parallel must divide " ..
      "data_parallel x context_parallel = %d (_check_moe_config); not written", ep, dp * cp))
  end
  local etp = r.etp_degree or tp
  if etp ~= tp then
    N("NOT EXPRESSIBLE in MindFormers", string.format("etp_degree = %d with tp_degree = %d: no key sets " ..
      "the experts' tensor-parallel size apart from model_parallel", etp, tp))
  end
  if arch == false then return end
  local KA = K
  KA("moe_config.expert_num", m.num_experts)
  KA("moe_config.num_experts_chosen", m.experts_per_token)
  -- LLamaDecodeLayer (llama_transformer.py:940-953): use_gmm -> MoEV3, which
  -- ignores capacity_factor and use_allgather_dispatcher (moev3.py:101:
  -- tokens never dropped); else MoEV2, which refuses a routing_policy other
  -- than TopkRouterV2 (moe.py:685; MoEConfig's default is TopkRouterV1) and
  -- whose TopkRouterV2 drops over capacity_factor x k x tokens / experts, or
  -- sizes the capacity to the routed tokens when capacity_factor <= 0
  -- (moe.py:1630, _calculate_expert_capacity_dynamic)
  local cf = r.moe_capacity_factor or 0
  local gmm = r.moe_grouped_gemm ~= false and cf <= 0
  local d = r.moe_token_dispatcher or "alltoall"
  KA("moe_config.use_gmm", gmm, gmm and "MoEV3: dropless, no capacity" or nil)
  if not gmm then
    KA("moe_config.routing_policy", "TopkRouterV2", "the router MoEV2 accepts")
    if cf > 0 then
      KA("moe_config.capacity_factor", cf + 0.0)
    else
      KA("moe_config.capacity_factor", M.DROPLESS_CAPACITY_FACTOR, "dropless")
    end
    if r.moe_grouped_gemm ~= false then
      N("NOT EXPRESSIBLE in MindFormers", string.format("grouped GEMM with capacity factor %s: MoEV3 " ..
        "(use_gmm) ignores capacity_factor; use_gmm False (MoEV2, batched experts) written to keep the " ..
        "capacity", M.yaml_float(cf + 0.0)))
    end
  end
  if d == "allgather" then
    if gmm then
      N("NOT EXPRESSIBLE in MindFormers", "the allgather token dispatcher with grouped GEMM: MoEV3 " ..
        "(use_gmm) has no allgather dispatcher (all-to-all written)")
    else
      KA("moe_config.use_allgather_dispatcher", true)
    end
  elseif d == "flex" then
    N("NOT EXPRESSIBLE in MindFormers", "the flex (DeepEP) token dispatcher: all-to-all is written")
  end
  -- the expert width, shared experts and dense layers: M.shape_lacks
  M.router_keys(c, KA, N, gmm)
end

--- The router keys (the model's router fields, hf.lua) for the MoE layer
-- LLamaDecodeLayer builds (MoEV3 with use_gmm, else MoEV2 with
-- TopkRouterV2; llama_transformer.py:940-953 @ fd4deebc), each checked
-- against what those routers compute (moe.py TopkRouterV2.construct
-- :1522-1567, moev3.py MoEV3.construct :225-245) and transformers'
-- routers (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock /
-- Qwen3MoeSparseMoeBlock: softmax in float32 over all experts, top-k,
-- renormalised always (Mixtral) or when norm_topk_prob (Qwen); DeepSeek's
-- MoEGate, hf.lua):
--
-- * moe_router_bias: use_gating_sigmoid (sigmoid scores); the expert bias
--   itself NOT EXPRESSIBLE (balance_via_topk_bias's bias is moved only by
--   TopkBiasBalanceCallback, through feed_forward.routed_experts, a layer
--   LLamaDecodeLayer does not have: callback.py:2291-2325);
-- * with num_experts_chosen > 1, norm_topk_prob = not
--   moe_router_pre_softmax (both routers divide the top-k scores by their
--   sum + 1e-9 when True, MoEConfig's default); top-1 routing renormalised
--   to weight 1 NOT EXPRESSIBLE (they renormalise only when k > 1);
-- * moe_router_topk_scaling_factor: routed_scaling_factor (both multiply
--   the weights by it after renormalising);
-- * moe_router_num_groups / group_topk: n_group, topk_group and
--   topk_method (M.GROUP_TOPK_METHOD by moe_router_group_score_topk, or
--   top-k / group_topk when 0, as Megatron scores a group) with MoEV2;
--   NOT EXPRESSIBLE with MoEV3 (no group-limited routing) or another group
--   score;
-- * moe_aux_loss_coeff (and moe_seq_aux_loss): NOT EXPRESSIBLE.  Both
--   routers compute the expert loss alpha x E x sum_i P_i x c_i / (k N)
--   (_expert_load_balancing, alpha = aux_loss_factors at aux_loss_types
--   "expert", default none), but LLamaDecodeLayer builds them without
--   return_extra_loss, so it never reaches the training loss;
--   aux_loss_factor (default 0.05) is read only by the TopkRouterV1 MoE
--   layer (moe.py:323, 369), which this YAML does not build.
-- @tparam table c context (apsearch.launch.context)
-- @tparam function K key writer
-- @tparam function N note writer
-- @tparam boolean gmm use_gmm written (MoEV3), else MoEV2
function M.router_keys(c, K, N, gmm)
  local m = c.model
  local k, E = m.experts_per_token, m.num_experts
  local layer = gmm and "MoEV3" or "TopkRouterV2"
  if (m.moe_router_bias and not m.moe_router_softmax_bias) or m.moe_router_sigmoid then
    K("moe_config.use_gating_sigmoid", true, "sigmoid scores")
  end
  if m.moe_router_bias then
    N("NOT EXPRESSIBLE in MindFormers", "the expert bias (moe_router_bias): balance_via_topk_bias's bias is " ..
      "updated only by TopkBiasBalanceCallback through feed_forward.routed_experts, which LLamaDecodeLayer's " ..
      layer .. " does not have; " .. (m.moe_router_softmax_bias and "softmax" or "sigmoid") ..
      " scores without the bias written")
  end
  if k > 1 then
    K("moe_config.norm_topk_prob", not m.moe_router_pre_softmax,
      m.moe_router_pre_softmax and "top-k weights not renormalised" or "top-k weights renormalised")
  elseif not (m.moe_router_pre_softmax or m.moe_router_sigmoid) then
    N("NOT EXPRESSIBLE in MindFormers", "renormalised top-1 routing (weight 1): " .. layer ..
      " renormalises only when num_experts_chosen > 1, so the weight is the router score")
  end
  local sf = m.moe_router_topk_scaling_factor or 0
  if sf > 0 then K("moe_config.routed_scaling_factor", sf + 0.0) end
  local g, gk = m.moe_router_num_groups or 0, m.moe_router_group_topk or 0
  if g > 0 then
    local sk = m.moe_router_group_score_topk or 0
    if sk == 0 then sk = k // gk end
    local method = M.GROUP_TOPK_METHOD[sk]
    if gmm then
      N("NOT EXPRESSIBLE in MindFormers", string.format("n_group = %d, topk_group = %d: MoEV3 (use_gmm) has " ..
        "no group-limited routing; not written (routing without groups)", g, gk))
    elseif not method or E % g ~= 0 then
      N("NOT EXPRESSIBLE in MindFormers", string.format("n_group = %d, topk_group = %d with a group scored " ..
        "by its best %d expert(s) over %d experts: TopkRouterV2 scores a group by its max " ..
        "(group_limited_greedy) or top-2 sum (noaux_tc) over n_group equal groups; not written", g, gk, sk, E))
    else
      K("moe_config.topk_method", method)
      K("moe_config.n_group", g)
      K("moe_config.topk_group", gk)
    end
  end
  local coeff = m.moe_aux_loss_coeff or 0
  if coeff > 0 then
    N("NOT EXPRESSIBLE in MindFormers", string.format("the load-balancing loss (moe_aux_loss_coeff = %s%s): " ..
      "LLamaDecodeLayer builds %s without return_extra_loss, so its expert balancing loss " ..
      "(aux_loss_types / aux_loss_factors) never reaches the training loss; MoEConfig's aux_loss_factor " ..
      "(default 0.05) is read only by the TopkRouterV1 MoE layer, not built here; no balancing loss is " ..
      "trained, none written (--set model.moe_aux_loss_coeff=0 estimates the job without it)", M.yaml_float(coeff + 0.0), m.moe_seq_aux_loss and ", per sequence" or "",
      gmm and "MoEV3" or "MoEV2"))
  end
end

--- What of a model LlamaConfig cannot hold by its shapes: a config
-- written with LlamaConfig's keys would build a model of other weights
-- (DeepSeek-V3 as 61 MoE layers of 256 experts 18,432 wide, about 6.2T
-- parameters, out of memory at start).  With any, M.render writes no
-- architecture keys (model.model_config's type and sizes, model.arch,
-- moe_config): the file is the parallel settings to merge into the
-- model's own MindFormers YAML.  LlamaConfig @ fd4deebc: one
-- intermediate_size for the dense FFN and every expert, experts on every
-- layer or none, no shared experts, head_dim = hidden_size // num_heads,
-- attention layers only (mindformers/models/llama/llama_config.py,
-- llama_transformer.py LLamaDecodeLayer).
-- Each entry `{what, note}`: a short name for the NOT WRITTEN line and
-- the NOT EXPRESSIBLE line that says it in full (nil for DeepSeek-V4's
-- indexer, which launch.llama_block_features says with V4's other parts).
-- @tparam table m model
-- @treturn table entries, empty when LlamaConfig holds its shapes
function M.shape_lacks(m)
  local out = {}
  local function add(what, note) out[#out + 1] = { what = what, note = note } end
  if m.hybrid_layer_pattern then
    add("Mamba-2 layers", "the hybrid Mamba-2 layers (pattern " .. m.hybrid_layer_pattern .. "): MindSpore " ..
      "Transformers has no Mamba-2 / Nemotron-H model; only the parallel settings are written (apsearch prices " ..
      "hybrid models for Megatron-LM only)")
  end
  -- Kimi Delta Attention, LFM2's short convolutions: launch.LLAMA_BLOCK_LACKS
  if launch_util.has_gated_deltanet(m) then
    add("Gated DeltaNet layers", "the Gated DeltaNet layers (Qwen3-Next): MindSpore Transformers has no " ..
      "Qwen3-Next / Gated DeltaNet model; only the parallel settings are written (apsearch prices Gated " ..
      "DeltaNet models for Megatron-LM only)")
  end
  if (m.index_n_heads or 0) > 0 then
    add("the sparse-attention indexer", not m.hc_mult and ("DeepSeek Sparse Attention (the lightning indexer " ..
      "and top-" .. m.index_topk .. " sparse attention): the config written has no indexer; only the parallel " ..
      "settings are written (apsearch prices DSA for Megatron-LM only)") or nil)
  end
  if (m.kv_lora_rank or 0) > 0 then
    add("multi-head latent attention", "multi-head latent attention: LlamaConfig has none (MindFormers' " ..
      "DeepSeek-V3 is research/deepseek3's model, not written here)")
  end
  -- LLamaAttention: head_dim = hidden_size // num_heads
  if m.head_dim and m.num_attention_heads and m.head_dim * m.num_attention_heads ~= m.hidden_size then
    add("head_dim x heads != hidden_size", string.format("head_dim %d x %d heads != hidden_size %d " ..
      "(LlamaConfig derives head_dim = hidden_size // num_heads)", m.head_dim, m.num_attention_heads,
      m.hidden_size))
  end
  if (m.num_experts or 0) > 0 then
    if (m.shared_expert_ffn_hidden_size or 0) > 0 then
      add("shared experts", "shared experts (" .. m.shared_expert_ffn_hidden_size .. " wide) in LlamaConfig's " ..
        "MoE layer")
    end
    if M.has_dense_layers(m) then
      add("dense-FFN layers among the MoE layers", "dense-FFN layers among the MoE layers: LlamaConfig puts " ..
        "experts on every layer")
      if m.moe_ffn_hidden_size ~= m.ffn_hidden_size then
        add("an expert width of its own", string.format("expert width %d beside the dense FFN width %d: " ..
          "LlamaConfig's experts are intermediate_size wide", m.moe_ffn_hidden_size, m.ffn_hidden_size))
      end
    end
  end
  -- weights LlamaConfig's block (LlamaFeedForward: gate, up and down;
  -- LlamaRMSNorm: a weight; no Q/K norm, no MLP bias; RoPE; two norms a
  -- layer; no output bias) does not build as the model has them; the
  -- last two, and the entries of launch.LLAMA_BLOCK_LACKS marked
  -- `weights`, said in full by launch.llama_block_features
  if m.mlp and m.mlp ~= "swiglu" then
    add("a " .. tostring(m.mlp) .. " MLP of two matrices", "a " .. tostring(m.mlp) .. " MLP (LlamaConfig's " ..
      "feed-forward is SwiGLU)")
  end
  if m.norm and m.norm ~= "rmsnorm" then add(tostring(m.norm), tostring(m.norm) .. " (LlamaConfig uses RMSNorm)") end
  if m.qk_norm then add("Q/K norms", "Q/K norms (LlamaConfig has none)") end
  if m.mlp_bias then add("MLP biases", "MLP biases (LlamaConfig has none)") end
  if m.position_embedding == "learned" then
    add("learned position embeddings", "learned positions (LlamaConfig uses RoPE)")
  end
  if (m.norms_per_layer or launch_util.LLAMA_BLOCK_NORMS) > launch_util.LLAMA_BLOCK_NORMS then
    add("sandwich norms")
  end
  if m.lm_head_bias then add("the output layer's bias") end
  for _, f in ipairs(launch_util.LLAMA_BLOCK_LACKS) do
    if f.weights and m[f[1]] and (f[3] == nil or m[f[1]] == f[3]) then add(f.what) end
  end
  return out
end

--- Whether an MoE model has dense-FFN layers (core.model_params'
-- moe_pattern has a 0).
-- @tparam table m model (num_experts > 0)
-- @treturn boolean
function M.has_dense_layers(m)
  for _, x in ipairs(require("apsearch.core").model_params(m).moe_pattern or {}) do
    if x == 0 then return true end
  end
  return false
end

--- LlamaConfig's intermediate_size: the width of every FFN it builds,
-- the experts' where every layer is an MoE layer (Qwen3-30B-A3B's 768,
-- not its config's unused 6,144), else the dense FFN's.
-- @tparam table m model
-- @treturn integer
function M.intermediate_size(m)
  if (m.num_experts or 0) > 0 and not M.has_dense_layers(m) then return m.moe_ffn_hidden_size end
  return m.ffn_hidden_size
end

--- The note every MindFormers file carries: MindFormers trains on Ascend
-- NPUs only (its YAMLs' context.device_target, "only supports Ascend"),
-- and the estimate in the file's header is of another framework's job
-- (training.framework) on the cluster's own devices -- an Ascend device a
-- policy describes included: MindSpore's kernels and graph are priced by
-- no framework profile.
M.ASCEND_ONLY = "MindFormers runs on Ascend NPUs only (context.device_target \"Ascend\"); the estimate above " ..
  "is of %s on %s, so this file carries the layout (parallel degrees, stages, recompute), not the estimated " ..
  "step time or memory"

--- The offsets of an even fill: the remainder rem of the layers over
-- p x v chunks, one more layer each to the last chunks of the rows, row
-- by row from the last (a sum of rem, as LayerSetting requires).
-- @tparam integer pp pipeline stages
-- @tparam integer vpp chunks per stage
-- @tparam integer rem layers mod (pp x vpp), 0 < rem < pp x vpp
-- @treturn table offset, pp entries (vpp = 1) or vpp rows of pp
function M.even_fill_offset(pp, vpp, rem)
  local rows = {}
  for k = 1, vpp do
    rows[k] = {}
    for i = 1, pp do rows[k][i] = 0 end
  end
  local per_row, extra = rem // vpp, rem % vpp
  for k = 1, vpp do
    local n = per_row + ((vpp - k) < extra and 1 or 0)
    for i = pp - n + 1, pp do rows[k][i] = 1 end
  end
  return vpp == 1 and rows[1] or rows
end

--- model_config.offset: LayerSetting gives chunk (v, i) L // (p v) +
-- offset[v][i] layers (a 1-D offset is broadcast over the chunks), the
-- sum of the offsets being L mod (p v), where L counts DeepSeek-V3's MTP
-- layers last (mcore.mtp_layers); the chunks as the estimate split them
-- (launch.estimate_chunks, schedule order: chunk j on rank j mod p,
-- LayerSetting filling interleave 0 of every stage first, as Megatron).
-- NOT EXPRESSIBLE: more chunks than layers
-- (PreTrainedModel.check_pipeline_stage, models/modeling_utils.py), a
-- split not known per chunk.
-- @tparam table c context (apsearch.launch.context)
-- @tparam string|nil fam mcore family (nil: LlamaConfig)
-- @tparam function K key writer
-- @tparam function N note writer
function M.offset_key(c, fam, K, N)
  local r, layers, L = c.rec, c.layers, c.model.num_layers
  local pp, vpp = r.pp_degree or 1, r.vpp_degree or 1
  if not (pp > 1 and #layers == pp) then
    K("model.model_config.offset", 0)
    return
  end
  local mtp = mcore.mtp_layers(c, fam)
  local Ls = L + mtp
  local base = Ls // (pp * vpp)
  local chunks = launch_util.estimate_chunks(c)
  if #chunks > 0 then chunks[#chunks] = chunks[#chunks] + mtp end
  local uneven, sum = false, 0
  for _, n in ipairs(chunks) do
    if n ~= base then uneven = true end
    sum = sum + n
  end
  for i = 1, pp do      -- the chunks add up to each rank's layers
    local t = 0
    for k = 0, vpp - 1 do t = t + (chunks[k * pp + i] or 0) end
    if t ~= layers[i] + (i == pp and mtp or 0) then sum = -1 end
  end
  local off = 0
  if vpp > 1 and pp * vpp > L then
    N("NOT EXPRESSIBLE in MindFormers", string.format("%d model chunks (pipeline_stage %d x pp_interleave_num %d) " ..
      "for %d layers: MindFormers needs num_layers >= pipeline_stage x pp_interleave_num", pp * vpp, pp, vpp, L))
  elseif sum ~= Ls then
    -- LayerSetting refuses offsets that do not sum to Ls mod (p v)
    -- (mindformers/models/utils.py:598-600): an even fill, the remainder
    -- one layer each to the last chunks of every row, so the file loads
    local rem = Ls % (pp * vpp)
    N("NOT EXPRESSIBLE in MindFormers", "the split " .. table.concat(layers, ":") ..
      " into " .. vpp .. " model chunks per rank is not known" ..
      (rem > 0 and "; the offset written is an even fill of the " .. Ls .. " layers, which MindFormers loads, "
        .. "not the estimated split" or ""))
    if rem > 0 then off = M.even_fill_offset(pp, vpp, rem) end
  elseif uneven and vpp == 1 then
    off = {}
    for i = 1, pp do off[i] = chunks[i] - base end
  elseif uneven then
    off = {}
    for k = 0, vpp - 1 do
      local row = {}
      for i = 1, pp do row[i] = chunks[k * pp + i] - base end
      off[k + 1] = row
    end
  end
  local what = uneven and ("layers per stage " .. table.concat(layers, ":")) or nil
  if what and mtp > 0 then what = what .. " and " .. mtp .. " MTP layer(s) last" end
  K("model.model_config.offset", off, what)
end

--- LlamaConfig's architecture keys (mindformers/models/llama/llama_config.py)
-- and the NOT EXPRESSIBLE lines of what it has no key for; the MoE keys
-- (M.moe_keys).
-- @tparam table c context (apsearch.launch.context)
-- @tparam function KA architecture key writer (writes nothing when
--   LlamaConfig would build another model: M.shape_lacks)
-- @tparam function K key writer
-- @tparam function N note writer
-- @tparam boolean holds LlamaConfig holds the model's shapes
function M.llama_keys(c, KA, K, N, holds)
  local m, tr = c.model, c.training
  -- the architecture, by LlamaConfig's names (mindformers/models/llama/llama_config.py)
  KA("model.model_config.type", "LlamaConfig")
  KA("model.arch.type", "LlamaForCausalLM")
  KA("model.model_config.num_layers", m.num_layers)
  KA("model.model_config.hidden_size", m.hidden_size)
  KA("model.model_config.num_heads", m.num_attention_heads)
  KA("model.model_config.n_kv_heads", m.num_query_groups or m.num_attention_heads)
  local width = M.intermediate_size(m)
  KA("model.model_config.intermediate_size", width, width ~= m.ffn_hidden_size
    and "the experts' width: every layer is an MoE layer" or nil)
  KA("model.model_config.vocab_size", m.vocab_size)
  if m.max_position_embeddings and m.max_position_embeddings > 0 then
    KA("model.model_config.max_position_embedding", m.max_position_embeddings)
  end
  KA("model.model_config.qkv_has_bias", m.qkv_bias == true)
  KA("model.model_config.attn_proj_has_bias", m.attn_out_bias == true)
  KA("model.model_config.tie_word_embeddings", m.tie_word_embeddings == true)
  -- RoPE base, scaling and norm epsilon (LlamaConfig theta, rms_norm_eps,
  -- extend_method, scaling_factor; FreqsMgr in mindformers/modules/layers.py)
  if (m.rope_theta or 0) > 0 then KA("model.model_config.theta", m.rope_theta + 0.0) end
  if (m.norm_eps or 0) > 0 then KA("model.model_config.rms_norm_eps", m.norm_eps + 0.0) end
  M.rope_scaling(m, tr, KA, N)
  -- LLamaDecodeLayer builds LlamaFeedForward without hidden_act: its
  -- default LlamaSiLU (llama_transformer.py l.912, llama_layer.py l.291 @ fd4deebc)
  if (m.glu_activation or "silu") ~= "silu" then
    N("NOT EXPRESSIBLE in MindFormers", "the gated MLP's " .. tostring(m.glu_activation) .. " activation " ..
      "(GeGLU): LLamaDecodeLayer builds LlamaFeedForward with its default LlamaSiLU; written as SwiGLU")
  end
  if (m.rotary_percent or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", string.format("partial RoPE (rotary_percent %s, HF " ..
      "partial_rotary_factor): LlamaConfig has no partial-rotation key and FreqsMgr rotates the whole " ..
      "head_dim; written with full RoPE", tostring(m.rotary_percent)))
  end
  if (m.num_experts or 0) > 0 then M.moe_keys(c, K, N, holds) end
  -- sigmoid scores: moe_config.use_gating_sigmoid (M.router_keys)
  for _, what in ipairs(launch_util.llama_block_features(m)) do N("NOT EXPRESSIBLE in MindFormers", what) end
  for _, what in ipairs(launch_util.llama4_features(m, tr.seq_length, { moe_router_sigmoid = true })) do
    N("NOT EXPRESSIBLE in MindFormers", what .. ": LlamaConfig (LLamaAttention, MoEV3) has no key for it; " ..
      "written without")
  end
  -- what LlamaConfig has no key for and the weights stay (RoPE where the
  -- model has ALiBi or no positions; the weights it lacks: M.shape_lacks)
  if m.position_embedding and m.position_embedding ~= "rope" and m.position_embedding ~= "learned" then
    N("NOT EXPRESSIBLE in MindFormers", tostring(m.position_embedding) .. " positions (LlamaConfig uses RoPE)")
  end
  if (m.sliding_window or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", "sliding-window attention (LlamaConfig attends to the whole sequence)")
  end
end

--- The lines of a model neither LlamaConfig nor a use_legacy False
-- model holds: each part LlamaConfig lacks (M.shape_lacks), then NOT
-- WRITTEN for the architecture with what the closest of MindFormers'
-- qwen3 / qwen3_moe / deepseek_v3 models lacks (mindspore_mcore.family).
-- @tparam table lacks M.shape_lacks entries (not empty)
-- @tparam string closest the closest family's model_type
-- @tparam table fam_lacks what it lacks (not empty)
-- @tparam function N note writer
function M.lacks_notes(lacks, closest, fam_lacks, N)
  local whats = {}
  for i, e in ipairs(lacks) do
    whats[i] = e.what
    if e.note then N("NOT EXPRESSIBLE in MindFormers", e.note) end
  end
  N("NOT WRITTEN", "the model's architecture (model.model_config's type and sizes, model.arch, moe_config): " ..
    "LlamaConfig would build a model of other weights (" .. table.concat(whats, ", ") .. "), and MindFormers' " ..
    closest .. " model lacks " .. table.concat(fam_lacks, "; ") .. "; only the parallel settings, the layer " ..
    "offsets and seq_length are written: merge them into the model's own MindFormers YAML")
end

--- Context parallelism of the use_legacy False models (fd4deebc): their
-- flash attention splits the sequence over context_parallel in its
-- sharding strategy (flash_attention.py _generate_flash_attention_strategy)
-- and MindSpore's semi-auto parallel gathers K/V: cp_comm_type all_gather.
-- No context_parallel_algo is written: the cp_comm_type it maps to
-- (get_cp_comm_type) is read by no training layer, and the Ulysses split
-- is fixed at 1 (attention.py:144 cp_ds = 1; MLA's ulysses_degree_in_cp
-- not written): a2a and ring attention (p2p) NOT EXPRESSIBLE.
-- @tparam table r strategy record
-- @tparam function N note writer
function M.mcore_cp_notes(r, N)
  local kind = r.cp_comm_type or "p2p"
  if kind ~= "all_gather" then
    N("NOT EXPRESSIBLE in MindFormers", ("cp_comm_type %s: the use_legacy False models split the sequence " ..
      "over context_parallel in the flash-attention sharding and gather K/V (all_gather); no " ..
      "context_parallel_algo changes that (cp_comm_type is read by no training layer)"):format(kind))
  end
end

--- Full and selective recompute keys (LayerSetting: recompute and
-- select_recompute take a bool (every layer), a list of layer counts per
-- stage (the first n layers of each stage; with interleaving spread over
-- the stage's chunks), or, for select_recompute, operator name patterns;
-- mindformers/models/utils.py, and parallel_core/training_graph/
-- transformer/utils.py for the use_legacy False models, which read
-- select_recompute from model_config only).
-- @tparam table c context (apsearch.launch.context)
-- @tparam string|nil fam mcore family (nil: LlamaConfig)
-- @tparam function K key writer
-- @tparam function N note writer
function M.recompute_keys(c, fam, K, N)
  local r, tr, pp = c.rec, c.training, c.rec.pp_degree or 1
  local rc, layers = c.recompute, c.layers
  -- the attention core Megatron's selective recompute re-runs, by the
  -- operator names of LLamaAttention (mindformers/models/llama/llama_transformer.py)
  local attn_core = tr.flash_attention ~= false and { "attention\\.flash_attention" }
    or { "attention\\.batch_matmul_q_k", "attention\\.mul", "attention\\.add",
      "attention\\.softmax", "attention\\.cast_attn" }
  if r.layer_recompute == "full" then
    -- every layer (True), but counts per stage where LayerSetting would
    -- also recompute DeepSeek-V3's MTP layers (last on the last stage)
    local all = #rc > 0 and mcore.mtp_layers(c, fam) == 0
    for i = 1, #rc do if rc[i] ~= layers[i] then all = false end end
    local any = false
    for i = 1, #rc do if rc[i] > 0 then any = true end end
    if all then K("recompute_config.recompute", true)
    elseif not any then K("recompute_config.recompute", false, "full recompute chose 0 layers")
    else
      K("recompute_config.recompute", rc, pp > 1 and "layers recomputed per stage (first n of each)"
        or "layers recomputed (the first n)")
    end
    if any and r.recompute_method == "uniform" then
      local groups = false
      for _, n in ipairs(r.recompute_num_layers or {}) do if n > 1 then groups = true end end
      if groups then
        N("APPROXIMATE", "uniform recompute in groups of several layers: MindFormers recomputes each " ..
          "layer on its own (one more layer input kept per group member)")
      end
    end
    K("recompute_config.select_recompute", false)
  elseif r.layer_recompute == "selective" then
    K("recompute_config.recompute", false)
    if fam then
      -- TransformerConfig takes select_recompute from model_config only
      K("recompute_config.select_recompute", false)
      local pats, lacks = mcore.select_recompute(c.model, r.recompute_modules)
      K("model.model_config.select_recompute", pats, "Megatron's recompute modules " ..
        tostring(r.recompute_modules or "core_attn") .. " in every layer")
      for _, w in ipairs(lacks) do
        N("NOT EXPRESSIBLE in MindFormers", "Megatron's recompute module " .. w .. ": no select_recompute " ..
          "pattern recomputes it alone; not written")
      end
    else
      K("recompute_config.select_recompute", attn_core, "attention core in every layer")
    end
    if not fam and r.recompute_modules and r.recompute_modules ~= "" and r.recompute_modules ~= "core_attn" then
      N("NOT EXPRESSIBLE in MindFormers", "Megatron's recompute modules " .. r.recompute_modules ..
        ": select_recompute is written for the attention core only")
    end
  else
    K("recompute_config.recompute", false)
    K("recompute_config.select_recompute", false)
  end
  K("recompute_config.parallel_optimizer_comm_recompute", false)
  K("recompute_config.mp_comm_recompute", false)
  K("recompute_config.recompute_slice_activation", false)
end

--- NOT EXPRESSIBLE lines for the recipe settings MindFormers has no key for.
-- @tparam table tr training table
-- @tparam function N note writer
function M.recipe_notes(tr, N)
  if tr.fp8_param_gather == true then
    N("NOT EXPRESSIBLE in MindFormers", "fp8_param_gather (weights gathered in a low-precision format)")
  end
  if tr.first_last_layers_bf16 then
    N("NOT EXPRESSIBLE in MindFormers", "Megatron's first and last layers in bf16 (first_last_layers_bf16)")
  end
  if (tr.activation_offload_layers or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", "activation offload to host (activation_offload_layers = " ..
      tr.activation_offload_layers .. ")")
  end
  if tr.offload_modules then
    N("NOT EXPRESSIBLE in MindFormers", "Megatron-Core's fine-grained activation offload (offload_modules " ..
      tr.offload_modules .. ")")
  end
  if tr.grad_reduce_in_fp32 == false then
    N("NOT EXPRESSIBLE in MindFormers", "gradients reduced in bf16 (grad_reduce_in_fp32 = false)")
  end
  if tr.tp_comm_overlap then
    N("NOT EXPRESSIBLE in MindFormers", "TP communication overlapped with the matmuls (tp_comm_overlap)")
  end
  if tr.cuda_graphs then N("NOT EXPRESSIBLE in MindFormers", "CUDA graphs (cuda_graphs)") end
  if (tr.moe_expert_rank_capacity_factor or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", ("Megatron's rank capacity factor (moe_expert_rank_capacity_factor = %g)")
      :format(tr.moe_expert_rank_capacity_factor))
  end
  if tr.moe_paged_stash then
    N("NOT EXPRESSIBLE in MindFormers", "Megatron's paged stash of the experts' tensors (moe_paged_stash)")
  end
  if tr.cutedsl_fused_grouped_mlp then N("NOT EXPRESSIBLE in MindFormers", "TransformerEngine's fused grouped MLP under Megatron-Core (cutedsl_fused_grouped_mlp)") end
  if tr.store_param_remainders then
    N("NOT EXPRESSIBLE in MindFormers", "store_param_remainders (apex DistributedFusedAdam, NeMo 1.x)")
  end
end

--- The parallel context keys (parallel.*: MsParallelConfig ->
-- mindspore.set_auto_parallel_context): semi-auto parallel, optimizer
-- parallelism for FSDP / HSDP / ZeRO-3 (NOT EXPRESSIBLE: ZeRO-1/2 with
-- replicated weights, reshard_after_forward false), pipeline interleave
-- with vpp (NOT EXPRESSIBLE: schedules other than 1f1b, a group size).
-- @tparam table r strategy record
-- @tparam function K key writer
-- @tparam function N note writer
function M.parallel_keys(r, K, N)
  local pp, vpp = r.pp_degree or 1, r.vpp_degree or 1
  local R, Sd, z = r.dp_degree or 1, r.fsdp_degree or 1, r.zero_stage or 0
  K("parallel.parallel_mode", 1, "semi-auto parallel")
  local shard = Sd > 1 or z == 3
  K("parallel.enable_parallel_optimizer", shard)
  if Sd > 1 and R > 1 then
    K("parallel.parallel_optimizer_config.optimizer_weight_shard_size", Sd, "HSDP: shard over fsdp_degree ranks")
  end
  if Sd > 1 and r.reshard_after_forward == false then
    N("NOT EXPRESSIBLE in MindFormers", "keeping gathered parameters from forward to backward " ..
      "(reshard_after_forward = false) has no MindFormers key")
  end
  if Sd == 1 and (z == 1 or z == 2) then
    N("NOT EXPRESSIBLE in MindFormers", string.format(
      "ZeRO-%d with replicated parameters: parallel.enable_parallel_optimizer also shards the weights; " ..
      "left off (set it to True to shard more than estimated)", z))
  end
  if vpp > 1 then
    K("parallel.pipeline_config.pipeline_interleave", true)
    K("parallel.pipeline_config.pipeline_scheduler", "1f1b")
    local group = launch_util.group_size_note(r)
    if group then N("NOT EXPRESSIBLE in MindFormers", group) end
  end
  if pp > 1 and (r.pp_schedule or "1f1b") ~= "1f1b" then
    N("NOT EXPRESSIBLE in MindFormers", "pp_schedule = " .. r.pp_schedule .. ": the config runs " ..
      "pipeline_scheduler 1f1b (interleaved with vpp), chunks in their loop order")
  end
end

--- parallel_config (ParallelConfig, TransformerOpParallelConfig): the
-- degrees, context parallelism (use_legacy False: M.mcore_cp_keys),
-- sequence parallelism (the use_legacy False MoE layer needs it with
-- model_parallel > 1), the vocabulary split and micro-batches.
-- @tparam table c context (apsearch.launch.context)
-- @tparam string|nil fam mcore family (nil: LlamaConfig)
-- @tparam integer mbn micro-batches per step
-- @tparam function K key writer
-- @tparam function N note writer
function M.parallel_config_keys(c, fam, mbn, K, N)
  local r, m = c.rec, c.model
  local tp, pp, cp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1
  K("parallel_config.data_parallel", (r.dp_degree or 1) * (r.fsdp_degree or 1))
  K("parallel_config.model_parallel", tp)
  local kv_lacks = require("apsearch.launch").kv_heads_lacks(m, r, "MindFormers")
  if kv_lacks then N("NOT EXPRESSIBLE in MindFormers", kv_lacks) end
  K("parallel_config.pipeline_stage", pp)
  K("parallel_config.context_parallel", cp)
  if cp > 1 and fam then
    M.mcore_cp_notes(r, N)
  elseif cp > 1 then
    if r.cp_comm_type == "all_gather" then
      N("NOT EXPRESSIBLE in MindFormers", "context parallelism with all-gathered K/V (colossalai_cp is ring attention, ulysses_cp all-to-all)")
    elseif r.cp_comm_type == "a2a" then
      K("parallel_config.context_parallel_algo", "ulysses_cp", "heads scattered by all-to-all")
    else
      K("parallel_config.context_parallel_algo", "colossalai_cp", "ring attention")
    end
  end
  local sp = tp > 1 and r.sequence_parallel == true
  if fam and tp > 1 and not sp and (m.num_experts or 0) > 0 then
    -- MoELayer refuses model_parallel > 1 without it
    N("NOT EXPRESSIBLE in MindFormers", "tensor parallelism without sequence parallelism in an MoE model: " ..
      "MindFormers' MoE layer needs use_seq_parallel; written True (less activation memory than estimated)")
    sp = true
  end
  K("parallel_config.use_seq_parallel", sp)
  K("parallel_config.vocab_emb_dp", tp == 1, tp > 1 and "vocabulary sharded over model_parallel" or nil)
  if pp > 1 then
    K("parallel_config.micro_batch_num", mbn)
  else
    K("parallel_config.micro_batch_num", 1)
  end
  K("micro_batch_interleave_num", 1)
end

--- Renders the YAML.
-- @tparam table c context (apsearch.launch.context)
-- @treturn string
-- @treturn table notes
function M.render(c)
  local r, m, tr = c.rec, c.model, c.training
  -- nested ordered tree of keys (apsearch.launch.yaml_writer)
  local w = require("apsearch.launch").yaml_writer(options.mindformers.keys, "mindformers")
  local K, N, notes = w.K, w.N, w.notes
  -- the model: LlamaConfig (use_legacy), else the qwen3 / qwen3_moe /
  -- deepseek_v3 model that builds it (fam), else no architecture keys
  local lacks, fam = M.shape_lacks(m), nil
  if #lacks > 0 then
    local closest, fam_lacks, without = mcore.family(m, tr.seq_length or 0)
    if #fam_lacks == 0 then
      fam = closest
      for _, w in ipairs(without) do N("NOT EXPRESSIBLE in MindFormers", w) end
    else
      M.lacks_notes(lacks, closest, fam_lacks, N)
    end
  end
  -- LlamaConfig's keys (KA): none where it would build another model
  local KA = #lacks == 0 and K or function() end
  if not fam then
    -- LlamaConfig @ fd4deebc takes no dropout probability (docs/api/
    -- api_python/models/mindformers.models.LlamaConfig.rst lists its keys)
    local drop = launch_util.dropout_lacks(tr, "MindFormers' LlamaConfig has no dropout key and its Llama " ..
      "layers apply none")
    if drop then N("NOT EXPRESSIBLE in MindFormers", drop) end
  end
  local passes = launch_util.passes_lacks(r, "this file")
  if passes then N("NOT WRITTEN", passes) end
  if (tr.mtp_num_layers or 0) > 0 and fam ~= "deepseek_v3" then
    N("NOT WRITTEN", string.format("training.mtp_num_layers = %d: the config trains without multi-token " ..
      "prediction (less time and memory than estimated)", tr.mtp_num_layers))
  end

  local pp, vpp = r.pp_degree or 1, r.vpp_degree or 1
  local dp = (r.dp_degree or 1) * (r.fsdp_degree or 1)
  -- micro-batches per step: the record's, or (a strategy estimated alone
  -- reports 0) global batch / (data-parallel ranks x micro-batch size)
  local mbn = r.micro_batch_num or 0
  if mbn < 1 then mbn = math.max(1, (tr.global_batch_size or 1) // (dp * (r.micro_batch_size or 1))) end

  K("run_mode", "train")
  KA("use_legacy", true, "the LlamaConfig / LayerSetting code path checked")
  if fam then K("use_legacy", false, "MindFormers' " .. fam .. " model (TransformerConfig, LayerSetting)") end
  K("use_parallel", true)
  M.parallel_keys(r, K, N)
  M.parallel_config_keys(c, fam, mbn, K, N)
  M.recompute_keys(c, fam, K, N)

  K("runner_config.batch_size", r.micro_batch_size or 1)
  if pp == 1 then K("runner_config.gradient_accumulation_steps", mbn) end

  M.offset_key(c, fam, K, N)
  if vpp > 1 then K("model.model_config.pp_interleave_num", vpp) end
  K("model.model_config.seq_length", tr.seq_length)
  if fam then mcore.model_keys(c, fam, K, N) else M.llama_keys(c, KA, K, N, #lacks == 0) end
  if tr.precision == "fp16" then
    K("model.model_config.compute_dtype", "float16")
  else
    K("model.model_config.compute_dtype", "bfloat16")
    if tr.precision == "fp8" or tr.precision == "mxfp8" or tr.precision == "nvfp4" then
      N("NOT EXPRESSIBLE in MindFormers", tr.precision .. " matmuls (compute_dtype bfloat16 written)")
    end
  end
  M.recipe_notes(tr, N)
  K("model.model_config.use_flash_attention", tr.flash_attention ~= false)
  -- configs/qwen3/pretrain_qwen3_32b_4k.yaml @ fd4deebc: device_target
  -- "Ascend" (only supports "Ascend"); no device apsearch models is one
  local dev = c.cluster.device
  N("NOTE", M.ASCEND_ONLY:format(("a training.framework = %s job"):format(tostring(tr.framework or "megatron")),
    type(dev) == "table" and dev.name or "the cluster's devices"))

  local out = {}
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = "# MindFormers keys checked against " .. options.cite(options.mindformers)
  out[#out + 1] = "# Merge into the model's MindFormers training YAML (dataset, optimizer, callbacks are yours)."
  for _, n in ipairs(notes) do out[#out + 1] = "# " .. n end
  require("apsearch.launch").yaml_lines(w.tree, yaml_value, out)
  return table.concat(out, "\n") .. "\n", notes
end

return M
