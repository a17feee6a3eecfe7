--- The model_config of MindFormers' Megatron-style models (use_legacy:
-- False): Qwen3 (dense), Qwen3-MoE and DeepSeek-V3, for the models
-- LlamaConfig cannot hold (apsearch.launch.mindspore.shape_lacks: Q/K
-- norms, head_dim apart from hidden_size / heads, MLA, shared experts,
-- dense layers before the MoE layers).  Read at mindspore-lab/mindformers
-- fd4deebc1606a02fd24c3b359a889cd0c966e72b:
--
-- * mindformers/models/qwen3/modeling_qwen3_train.py,
--   qwen3_moe/modeling_qwen3_moe_train.py: GPTModel with
--   get_gpt_layer_local_spec(qk_layernorm=True): per-head Q/K RMSNorms in
--   every layer, RoPE over the whole head, a SwiGLU MLP without biases
--   (MFModelConfig normalization RMSNorm, add_bias_linear False,
--   gated_linear_unit True); qwen3_moe: experts on every layer
--   (decoder_sparse_step, mlp_only_layers ignored), no shared expert;
-- * deepseek3/modeling_deepseek_v3_train.py: GPTModel with
--   get_gpt_decoder_block_spec (MLA, the first first_k_dense_replace
--   layers dense, n_shared_experts shared experts of
--   moe_intermediate_size) and get_gpt_mtp_block_spec
--   (num_nextn_predict_layers);
-- * parallel_core/transformer_config_utils.py COMMON_CONFIG_MAPPING: the
--   model_config keys (Hugging Face names) and the TransformerConfig
--   fields they set; an unmapped key is refused;
-- * parallel_core/training_graph/transformer/moe/router.py TopKRouter:
--   softmax or sigmoid scores, the expert bias added for the choice only,
--   top-k renormalised when norm_topk_prob, times
--   moe_router_topk_scaling_factor; the "expert" load-balancing loss;
--   no group-limited routing (n_group / topk_group are checked, not
--   used), no capacity, one all-to-all dispatcher.
--
-- Every file of these families is checked by loading it with
-- MindFormers' own config classes, TransformerConfig and LayerSetting
-- (docs/launch.md).
-- @module apsearch.launch.mindspore_mcore
local launch_util = require "apsearch.launch"

local M = {}

--- A YAML null (Python None) value for the key writer.
M.NULL = setmetatable({}, { __tostring = function() return "null" end })

--- The families: model_type (MindFormerRegister search_names) and
-- architectures of each, keyed by model_type.
M.FAMILIES = {
  qwen3 = { architectures = "Qwen3ForCausalLM" },
  qwen3_moe = { architectures = "Qwen3MoeForCausalLM" },
  deepseek_v3 = { architectures = "DeepseekV3ForCausalLM" },
}

--- Whether the MoE layers are a run of dense layers then MoE layers
-- (first_k_dense_replace; moe_layer_freq 1), the only pattern the
-- DeepSeek-V3 block spec builds.
-- @tparam table m model
-- @treturn integer|nil the dense layers first, nil for another pattern
local function dense_prefix(m)
  local pat = require("apsearch.core").model_params(m).moe_pattern or {}
  local k = 0
  while pat[k + 1] == 0 do k = k + 1 end
  for i = k + 1, #pat do if pat[i] ~= 1 then return nil end end
  return k
end

--- Megatron's selective-recompute modules (TransformerConfig
-- recompute_modules) as LayerSetting's cell-name patterns over the
-- training graph's TransformerLayer (training_graph/transformer/
-- transformer_layer.py: input_layernorm, self_attention, pre_mlp_layernorm,
-- mlp; attention.py and multi_latent_attention.py: core_attention, the
-- MLA up-projections linear_qb / linear_kvb (mla_qkv_concat) or
-- linear_q_up_proj / linear_kv_up_proj; moe/moe_layer.py: shared_experts).
-- A pattern names cells by re.fullmatch per dotted segment; one that
-- matches nothing recomputes nothing.  `mlp` and `moe` are one pattern
-- (M.select_recompute).  LayerSetting's own default (no patterns) is the
-- MLP's activation, not Megatron's core_attn.
M.RECOMPUTE_MODULE_PATTERNS = {
  core_attn = { "self_attention\\.core_attention" },
  mla_up_proj = { "self_attention\\.linear_qb", "self_attention\\.linear_kvb",
    "self_attention\\.linear_q_up_proj", "self_attention\\.linear_kv_up_proj" },
  layernorm = { "input_layernorm", "pre_mlp_layernorm" },
  shared_experts = { "mlp\\.shared_experts" },
}

--- The select_recompute patterns of Megatron's recompute modules (unset:
-- core_attn).  `mlp` (dense MLPs) and `moe` (MoE layers) are both the
-- `mlp` cell: written when the modules name every kind of FFN layer the
-- model has, nothing when they name none it has, else not expressible.
-- @tparam table m model
-- @tparam string|nil modules recompute_modules ("mla_up_proj/mlp/moe")
-- @treturn table patterns
-- @treturn table the modules no pattern expresses
function M.select_recompute(m, modules)
  local pats, lacks, want = {}, {}, {}
  for w in tostring(modules and modules ~= "" and modules or "core_attn"):gmatch("[^/,%s]+") do want[w] = true end
  local moe = (m.num_experts or 0) > 0
  local dense = not moe or (dense_prefix(m) or 1) > 0
  -- the FFN layers Megatron re-runs: dense MLPs (mlp), MoE layers (moe)
  local d, e = want.mlp and dense, want.moe and moe
  if (d or e) and (d or not dense) and (e or not moe) then pats[#pats + 1] = "mlp"
  elseif d or e then lacks[#lacks + 1] = d and "mlp" or "moe" end
  want.mlp, want.moe = nil, nil
  local names = {}
  for w in pairs(want) do names[#names + 1] = w end
  table.sort(names)
  for _, w in ipairs(names) do
    if M.RECOMPUTE_MODULE_PATTERNS[w] then
      for _, p in ipairs(M.RECOMPUTE_MODULE_PATTERNS[w]) do pats[#pats + 1] = p end
    else lacks[#lacks + 1] = w end
  end
  return pats, lacks
end

--- MindFormers' qwen3 recipe writes the fused SwiGLU activation
-- (configs/qwen3/pretrain_qwen3_32b_4k.yaml hidden_act 'swiglu'; MLP
-- applies it to the whole fc1 output); the MoE families keep Hugging
-- Face's 'silu' (gate and up split, SiLU on the gate).
M.HIDDEN_ACT = { qwen3 = "swiglu", qwen3_moe = "silu", deepseek_v3 = "silu" }

--- Why these families' blocks lack each part (launch.decoder_block_lacks).
M.BLOCK_LACKS_WHY = {
  mlp = "the families' MLPs are gated", glu = "SiLU gate", norm = "RMSNorm", norm_bias = "RMSNorm has none",
  window = "the training graph attends causally", positions = "RoPE", mamba = "no Mamba-2 model",
  gdn = "no Gated DeltaNet model",
}

--- What the families lack for DeepSeek Sparse Attention (DeepSeek-V3.2,
-- GLM-5): no indexer.  The deepseek_v3 model is written without it (M.family's
-- `without`); the others cannot hold the model at all.
M.DSA_LACK = "the DeepSeek Sparse Attention indexer"

--- What a block of these families lacks (the reasons none builds the
-- model): launch.decoder_block_lacks, and the parts GPTModel's local
-- spec has no key for here.
-- @tparam table m model
-- @tparam integer seq training seq_length (0: unknown)
-- @tparam function W reason writer
local function block_lacks(m, seq, W)
  for _, what in ipairs(launch_util.decoder_block_lacks(m, seq, M.BLOCK_LACKS_WHY)) do W(what) end
  if m.attn_out_bias or m.mlp_bias then W("output-projection or MLP biases (add_bias_linear False)") end
  if (m.rotary_percent or 0) > 0 and m.rotary_percent < 1 then W("partial RoPE (rotary_percent 1.0 only)") end
  if m.moe_router_linear_bias or m.moe_router_input_probs then W("a router of its own (bias or input scaling)") end
  if m.shared_expert_gate then W("the shared experts' sigmoid gate") end
end

--- The family that builds a model as apsearch prices it: deepseek_v3 for
-- MLA, qwen3_moe for other MoE models, qwen3 for dense ones.
-- @tparam table m model
-- @tparam integer seq training seq_length (0: unknown; chunked attention)
-- @treturn string the family's model_type (the closest one when refused)
-- @treturn table what that family lacks, empty when it builds the model
-- @treturn table the parts it builds the model without, each a NOT
--   EXPRESSIBLE note (DeepSeek Sparse Attention's indexer on deepseek_v3:
--   dense MLA attention, as TorchTitan's file writes it)
function M.family(m, seq)
  local lacks, without = {}, {}
  local function W(t) lacks[#lacks + 1] = t end
  local moe, mla = (m.num_experts or 0) > 0, (m.kv_lora_rank or 0) > 0
  local fam = mla and "deepseek_v3" or moe and "qwen3_moe" or "qwen3"
  block_lacks(m, seq, W)
  if (m.index_n_heads or 0) > 0 and fam ~= "deepseek_v3" then W(M.DSA_LACK)
  elseif (m.index_n_heads or 0) > 0 then
    without[#without + 1] = ("DeepSeek Sparse Attention (the lightning indexer of %d x %d and top-%d sparse " ..
      "attention): MindFormers' deepseek_v3 model has no indexer and attends densely; written without it: no " ..
      "indexer weights, dense MLA attention, not the time and memory estimated"):format(m.index_n_heads,
      m.index_head_dim or 0, m.index_topk or 0)
  end
  local kind = m.rope_scaling_type or "none"
  if fam ~= "deepseek_v3" then
    -- gpt_model.py:204-214 builds its yarn embedding from MLA's head dims
    if kind ~= "none" then W(kind .. " RoPE scaling (plain RoPE only without MLA)") end
    if not m.qk_norm then W("no Q/K norms (the qwen3 spec builds them)") end
    if m.qk_norm_full_width then W("Q/K norms over the whole projection (per head in qwen3)") end
    -- attention.py:147 (head_dim apart, MultiHeadAttention still checks it)
    if m.hidden_size % m.num_attention_heads ~= 0 then
      W(("hidden_size %d not a multiple of %d heads (attention.py refuses it)"):format(m.hidden_size,
        m.num_attention_heads))
    end
  else
    -- MultiLatentAttention scales the softmax by _yarn_get_mscale(
    -- rotary_scaling_factor, mscale)^2 (multi_latent_attention.py:133),
    -- and DeepseekV3Config's defaults are yarn: plain RoPE is not written
    if kind ~= "yarn" then W(kind .. " RoPE scaling with MLA (DeepseekV3Config: yarn)") end
    if not moe then W("MLA without experts (DeepseekV3Config's defaults build 256 experts)") end
  end
  if fam == "qwen3_moe" then
    if (m.shared_expert_ffn_hidden_size or 0) > 0 then W("shared experts (qwen3_moe has none)") end
    if dense_prefix(m) ~= 0 then W("dense layers among the MoE layers (qwen3_moe: experts on every layer)") end
    if m.moe_router_bias or m.moe_router_sigmoid then W("sigmoid scores or an expert bias (qwen3_moe: softmax)") end
  elseif fam == "deepseek_v3" and moe then
    local shared, w = m.shared_expert_ffn_hidden_size or 0, m.moe_ffn_hidden_size
    if shared % w ~= 0 then W(("shared experts %d wide, not n_shared_experts x %d"):format(shared, w)) end
    if not dense_prefix(m) then W("MoE layers other than after the first dense ones (first_k_dense_replace)") end
    if m.moe_router_bias and m.moe_router_softmax_bias then
      W("an expert bias on softmax scores (TransformerConfig: sigmoid only)")
    end
  end
  return fam, lacks, without
end

--- The RoPE keys: rope_theta, and YaRN as the rope_scaling mapping
-- TransformerConfig.__post_init__ unpacks (transformer_config.py:600-609:
-- type -> position_embedding_type, factor -> rotary_scaling_factor,
-- original_max_position_embeddings -> max_position_embeddings, beta_fast,
-- beta_slow, mscale, mscale_all_dim), as MindFormers' DeepSeek-V3 YAML
-- writes Hugging Face's.
-- @tparam table m model
-- @tparam function K key writer
local function rope_keys(m, K, N)
  if (m.rope_theta or 0) > 0 then K("model.model_config.rope_theta", m.rope_theta + 0.0) end
  if (m.rope_scaling_type or "none") ~= "yarn" then return end
  local hf = require "apsearch.hf"
  -- transformers' DeepSeek yarn: mscale default 1, mscale_all_dim 0 (its
  -- softmax factor 1 then); MultiLatentAttention's softmax factor is
  -- mscale's, transformers' mscale_all_dim's: equal only when they are
  local ms, md = (m.yarn_mscale or 0) > 0 and m.yarn_mscale or 1, m.yarn_mscale_all_dim or 0
  if ms ~= md or (m.yarn_attention_factor or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", ("yarn mscale %s with mscale_all_dim %s%s: MultiLatentAttention " ..
      "scales the softmax by _yarn_get_mscale(factor, mscale)^2, transformers by mscale_all_dim's " ..
      "(or attention_factor's); written as the config gives them"):format(tostring(ms), tostring(md),
      (m.yarn_attention_factor or 0) > 0 and (", attention_factor " .. m.yarn_attention_factor) or ""))
  end
  K("model.model_config.rope_scaling.type", "yarn")
  K("model.model_config.rope_scaling.factor", m.rope_scaling_factor + 0.0)
  K("model.model_config.rope_scaling.original_max_position_embeddings", hf.yarn_original(m))
  K("model.model_config.rope_scaling.beta_fast", hf.yarn_beta(m, "beta_fast"))
  K("model.model_config.rope_scaling.beta_slow", hf.yarn_beta(m, "beta_slow"))
  K("model.model_config.rope_scaling.mscale", ms + 0.0)
  K("model.model_config.rope_scaling.mscale_all_dim", md + 0.0)
end

--- The experts and router keys (TopKRouter, MoELayer; parallel_config
-- expert_parallel; the experts' TP size as expert_tensor_parallel_size
-- when it is not model_parallel).  Grouped GEMM always (qwen3_moe's
-- MoELayer refuses to build without moe_grouped_gemm).  NOT EXPRESSIBLE:
-- a capacity factor, the allgather and flex dispatchers, group-limited
-- routing, top-1 renormalisation.
-- @tparam table c context (apsearch.launch.context)
-- @tparam string fam family
-- @tparam function K key writer
-- @tparam function N note writer
function M.moe_keys(c, fam, K, N)
  local r, m = c.rec, c.model
  local tp, ep, etp = r.tp_degree or 1, r.ep_degree or 1, r.etp_degree or r.tp_degree or 1
  -- moe/ffn.py shard: the experts split over ep ranks of
  -- data_parallel x model_parallel x context_parallel, each expert whole
  local ranks = (r.dp_degree or 1) * (r.fsdp_degree or 1) * tp * (r.cp_degree or 1)
  if ranks % ep == 0 then
    K("parallel_config.expert_parallel", ep)
  else
    N("NOT EXPRESSIBLE in MindFormers", ("ep_degree = %d: expert_parallel must divide data_parallel x " ..
      "model_parallel x context_parallel = %d (moe/ffn.py); not written"):format(ep, ranks))
  end
  if etp ~= 1 then
    N("NOT EXPRESSIBLE in MindFormers", ("etp_degree = %d: the training MoE layer keeps each expert whole on " ..
      "its rank (moe/ffn.py shards the weights over expert_parallel only); %d times the expert weights " ..
      "estimated per GPU"):format(etp, etp))
  end
  K(fam == "deepseek_v3" and "model.model_config.n_routed_experts" or "model.model_config.num_experts", m.num_experts)
  K("model.model_config.num_experts_per_tok", m.experts_per_token)
  K("model.model_config.moe_intermediate_size", m.moe_ffn_hidden_size)
  K("model.model_config.moe_grouped_gemm", true, "dropless grouped GEMM")
  if fam == "deepseek_v3" then
    local shared = m.shared_expert_ffn_hidden_size or 0
    K("model.model_config.n_shared_experts", shared // m.moe_ffn_hidden_size)
    K("model.model_config.first_k_dense_replace", dense_prefix(m))
    K("model.model_config.moe_layer_freq", 1)
    local sig = m.moe_router_sigmoid or (m.moe_router_bias and not m.moe_router_softmax_bias)
    K("model.model_config.scoring_func", sig and "sigmoid" or "softmax")
    K("model.model_config.moe_router_enable_expert_bias", m.moe_router_bias == true)
    if m.moe_router_bias then
      N("NOTE", "the expert bias moves only when the YAML's callbacks list has TopkBiasBalanceCallback " ..
        "(gpt_model.py update_topk_bias, at moe_router_bias_update_rate 1e-3)")
    end
  end
  local k, sig = m.experts_per_token, m.moe_router_sigmoid or m.moe_router_bias
  if k > 1 then K("model.model_config.norm_topk_prob", not m.moe_router_pre_softmax)
  elseif not sig then
    -- TransformerConfig refuses top-1 softmax without it (a zero gradient)
    K("model.model_config.moe_router_pre_softmax", true, "top-1 over all experts' softmax")
    if not m.moe_router_pre_softmax then
      N("NOT EXPRESSIBLE in MindFormers", "renormalised top-1 routing (weight 1): TopKRouter renormalises " ..
        "only when num_experts_per_tok > 1, so the weight is the router score")
    end
  end
  local sf = m.moe_router_topk_scaling_factor or 0
  K("model.model_config.routed_scaling_factor", sf > 0 and sf + 0.0 or 1.0)
  -- TopKRouter: dict(zip(aux_loss_types, aux_loss_factors))["expert"]
  -- scales alpha E sum_i P_i f_i over each data-parallel slice of tokens
  K("model.model_config.aux_loss_types", { "expert" })
  K("model.model_config.aux_loss_factors", { (m.moe_aux_loss_coeff or 0) + 0.0 })
  if m.moe_seq_aux_loss and (m.moe_aux_loss_coeff or 0) > 0 then
    N("APPROXIMATE", "the sequence-wise balancing loss: TopKRouter's \"expert\" loss balances each data-" ..
      "parallel slice of tokens, not each sequence")
  end
  if (m.moe_router_num_groups or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", ("n_group = %d, topk_group = %d: TopKRouter routes without groups " ..
      "(router.py reads neither); not written"):format(m.moe_router_num_groups, m.moe_router_group_topk or 0))
  end
  if (r.moe_capacity_factor or 0) > 0 then
    N("NOT EXPRESSIBLE in MindFormers", ("capacity factor %g: the training MoELayer is dropless"):format(
      r.moe_capacity_factor))
  end
  local d = r.moe_token_dispatcher or "alltoall"
  if d ~= "alltoall" then
    N("NOT EXPRESSIBLE in MindFormers", "the " .. d .. " token dispatcher: the training MoELayer dispatches " ..
      "by all-to-all")
  end
end

--- The model_config keys of a family: Hugging Face's names as the
-- family's config class takes them, and MindFormers' own (seq_length,
-- qk_layernorm, dropout, dtypes, model_type, architectures).
-- @tparam table c context (apsearch.launch.context)
-- @tparam string fam family (M.family)
-- @tparam function K key writer
-- @tparam function N note writer
function M.model_keys(c, fam, K, N)
  local m, tr = c.model, c.training
  local P = "model.model_config."
  K(P .. "model_type", fam)
  K(P .. "architectures", { M.FAMILIES[fam].architectures })
  K(P .. "vocab_size", m.vocab_size)
  K(P .. "hidden_size", m.hidden_size)
  K(P .. "intermediate_size", m.ffn_hidden_size)
  K(P .. "num_hidden_layers", m.num_layers)
  K(P .. "num_attention_heads", m.num_attention_heads)
  K(P .. "num_key_value_heads", m.num_query_groups or m.num_attention_heads)
  if fam == "deepseek_v3" then
    local q = m.q_lora_rank or 0
    if q > 0 then K(P .. "q_lora_rank", q)
    else K(P .. "q_lora_rank", M.NULL, "queries projected without a low rank") end
    K(P .. "kv_lora_rank", m.kv_lora_rank)
    K(P .. "qk_nope_head_dim", m.qk_nope_head_dim)
    K(P .. "qk_rope_head_dim", m.qk_rope_head_dim)
    K(P .. "v_head_dim", m.v_head_dim)
    K(P .. "num_nextn_predict_layers", M.mtp_layers(c, fam))
    if (tr.mtp_num_layers or 0) > M.MAX_MTP_LAYERS then
      N("NOT EXPRESSIBLE in MindFormers", ("training.mtp_num_layers = %d: TransformerConfig takes at most %d " ..
        "(transformer_config.py:428); %d written (less time and memory than estimated)"):format(
        tr.mtp_num_layers, M.MAX_MTP_LAYERS, M.MAX_MTP_LAYERS))
    end
  else
    K(P .. "head_dim", m.head_dim or m.hidden_size // m.num_attention_heads)
    K(P .. "qk_layernorm", true, "per-head Q/K RMSNorm")
  end
  K(P .. "hidden_act", M.HIDDEN_ACT[fam])
  if (m.max_position_embeddings or 0) > 0 then K(P .. "max_position_embeddings", m.max_position_embeddings) end
  if (m.norm_eps or 0) > 0 then K(P .. "rms_norm_eps", m.norm_eps + 0.0) end
  K(P .. "attention_bias", m.qkv_bias == true)
  K(P .. "tie_word_embeddings", m.tie_word_embeddings == true)
  K(P .. "untie_embeddings_and_output_weights", m.tie_word_embeddings ~= true)
  if m.tie_word_embeddings and fam == "deepseek_v3" then
    N("NOT EXPRESSIBLE in MindFormers", "tied embeddings: the DeepSeek-V3 GPTModel keeps its own output layer")
  end
  rope_keys(m, K, N)
  local a, h = launch_util.dropout_probs(tr)
  K(P .. "attention_dropout", a + 0.0)
  K(P .. "hidden_dropout", h + 0.0)
  if (m.num_experts or 0) > 0 then M.moe_keys(c, fam, K, N) end
end

--- The most MTP layers TransformerConfig takes ("only supports ...
-- mtp_num_layers = 1", transformer_config.py:428-432 @ fd4deebc).
M.MAX_MTP_LAYERS = 1

--- Decoder and MTP layers LayerSetting places: DeepSeek-V3's GPTModel
-- gives LayerSetting num_layers + num_nextn_predict_layers, the MTP
-- layers last (on the last stage's last chunk, as Megatron places
-- them), so the offsets add up to that sum mod (p v).
-- @tparam table c context
-- @tparam string|nil fam family, nil on the LlamaConfig path
-- @treturn integer MTP layers LayerSetting counts (0 without)
function M.mtp_layers(c, fam)
  if fam ~= "deepseek_v3" then return 0 end
  return math.min(c.training.mtp_num_layers or 0, M.MAX_MTP_LAYERS)
end

return M
