--- TorchTitan job file (TOML) for one strategy, for a TorchTitan release
-- that reads one: `torchrun ... -m torchtitan.train --job.config_file
-- rank<N>_torchtitan.toml` (run_train.sh at the tag).  `apsearch run
-- --torchtitan-version v0.2.2` writes it in place of the Python config
-- module apsearch.launch.torchtitan writes for TorchTitan's HEAD, which
-- reads no TOML since 9810191b (2026-02-23).
--
-- Only keys of the release's JobConfig are written
-- (apsearch.launch.options.torchtitan_releases[tag].keys, transcribed from
-- torchtitan/config/job_config.py at the tag; ConfigManager refuses any
-- other), each value checked against its type.  What the release cannot
-- say is a `NOT EXPRESSIBLE in TorchTitan <tag>` comment line (the file
-- then differs from the estimate, apsearch.launch.differences), never a
-- key the release does not have.
--
-- Mapping (apsearch strategy / training field -> TOML key):
--
-- * the model -> [model] name and flavor (M.model_name): the release's
--   gpt_oss for a model with attention sinks (20b, 120b), deepseek_v3 for
--   multi-head latent attention (16B, 236B, 671B), llama4 for experts
--   weighted on their input (17bx16e, 17bx128e), qwen3 for per-head Q/K
--   norms (0.6B to 32B, 30B-A3B, 235B-A22B), else llama3 (8B / 70B /
--   405B); the flavour with the model's shape and numerics (options
--   models); what the flavour builds otherwise NOT EXPRESSIBLE (the
--   release's TOML picks a flavour, it cannot give a shape, RoPE, norm
--   epsilon or routing); pipeline parallelism NOT EXPRESSIBLE where the
--   TrainSpec has no pipelining_fn (qwen3, gpt_oss), context parallelism
--   where the flavours attend with FlexAttention (deepseek_v3, gpt_oss);
--   a MoE model written as llama3 NOT WRITTEN
-- * dp_degree -> parallelism.data_parallel_replicate_degree, fsdp_degree
--   -> data_parallel_shard_degree, reshard_after_forward ->
--   fsdp_reshard_after_forward "always" | "never"
-- * tp_degree -> tensor_parallel_degree (the release's llama3 and qwen3 TP always
--   shards the norms over the sequence: sequence_parallel = false NOT
--   EXPRESSIBLE); tp_comm_overlap -> enable_async_tensor_parallel (needs
--   the model compiled, distributed/tensor_parallel.py maybe_enable_async_tp)
-- * pp_degree -> pipeline_parallel_degree, schedule "1F1B" /
--   "Interleaved1F1B" (or the zero-bubble names), micro_batch_size ->
--   pipeline_parallel_microbatch_size, local_batch_size = micro_batch_size
--   x micro_batch_num (pipeline_parallel.py: n_microbatches =
--   local_batch_size // microbatch_size), or training.local_batch_size
--   (passes of a step, the estimate's); layers per chunk by the release's
--   own split (first/last_stage_less_layers, layers_per_stage) when it
--   gives the estimate's, else module_fqns_per_model_part
-- * cp_degree -> context_parallel_degree, load balancer "headtail";
--   cp_comm_type all_gather -> context_parallel_rotate_method "allgather",
--   p2p (the ring) -> "alltoall"
-- * batch: training.local_batch_size, global_batch_size, seq_len
--   (train.py: gradient accumulation = global / (local x dp))
-- * layer_recompute: full on every layer -> mode "full"; full on some
--   layers -> mode "selective" with selective_ac_option "<k>" (every k-th
--   block, a per-process count, activation_checkpoint.py _apply_layer_sac)
--   when some k gives each pipeline rank the estimate's count, else
--   "full" (APPROXIMATE); selective -> "selective" / "op"; none -> "none"
-- * precision fp8 -> converters ["quantize.linear.float8"], tensorwise
--   scaling as estimated (recipe_name unset; enable_fsdp_float8_all_gather
--   for fp8_param_gather under FSDP), mxfp8 -> ["quantize.linear.mx"]
--   (mxfp8_cublas); the lm_head ("output") left in bf16; nvfp4, fp16 NOT
--   EXPRESSIBLE
-- * torch_compile / compile_loss -> compile.enable, compile.components
-- * cuda_graphs NOT EXPRESSIBLE (the release has no CUDA-graph option)
-- @module apsearch.launch.torchtitan_toml
local options = require "apsearch.launch.options"

local M = {}

--- The releases this writer targets, newest first.
M.releases = { "v0.2.2" }

--- Tolerance for the model's float numerics against a flavour's (RoPE
-- theta, scaling factors, norm epsilon), relative.
M.NUMERIC_RTOL = 1e-9

--- TOML basic string (escapes backslash, quote and control characters).
-- @tparam string s
-- @treturn string
function M.toml_str(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(ch)
    if ch == '"' then return '\\"' elseif ch == "\\" then return "\\\\" end
    return string.format("\\u%04X", ch:byte())
  end) .. '"'
end

--- TOML literal for a Lua value: strings, integers, floats (always with a
-- dot or an exponent), booleans, arrays (nested allowed).
-- @param v
-- @treturn string
function M.toml(v)
  local t = type(v)
  if t == "string" then return M.toml_str(v)
  elseif t == "boolean" then return v and "true" or "false"
  elseif t == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = M.toml(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  elseif math.type(v) == "integer" then return tostring(v)
  end
  return require("apsearch.launch.torchtitan").pyfloat(v)
end

--- True when two numbers agree within M.NUMERIC_RTOL (relative).
-- @tparam number a
-- @tparam number b
-- @treturn boolean
local function close(a, b)
  return math.abs(a - b) <= M.NUMERIC_RTOL * math.max(math.abs(a), math.abs(b))
end

--- The release's model a model is written as: gpt_oss for a model with
-- attention sinks, deepseek_v3 for one with multi-head latent attention,
-- llama4 for experts weighted on their input (Llama 4's router), qwen3
-- for one with per-head Q/K norms (the release's Qwen3 block), else
-- llama3.
-- @tparam table rel an entry of options.torchtitan_releases
-- @tparam table m model
-- @treturn string model name (a key of rel.models)
function M.model_name(rel, m)
  if m.attention_sinks and rel.models.gpt_oss then return "gpt_oss" end
  if (m.kv_lora_rank or 0) > 0 and rel.models.deepseek_v3 then return "deepseek_v3" end
  if m.moe_router_input_probs and (m.num_experts or 0) > 0 and rel.models.llama4 then return "llama4" end
  if m.qk_norm and rel.models.qwen3 then return "qwen3" end
  return "llama3"
end

-- leading dense layers of a MoE model, whether every later one is MoE,
-- and the period k when exactly every k-th layer (1-based) is MoE (Llama
-- 4's interleave_moe_layer_step: (layer_id + 1) % k == 0), else nil
local function dense_lead(m)
  local pattern = require("apsearch.core").model_params(m).moe_pattern or {}
  local dense = 0
  while pattern[dense + 1] == 0 do dense = dense + 1 end
  -- every k-th layer MoE makes the first MoE layer the k-th
  local step = dense + 1
  for i = 1, #pattern do
    if pattern[i] ~= (i % step == 0 and 1 or 0) then step = nil break end
  end
  for i = dense + 1, #pattern do if pattern[i] ~= 1 then return dense, false, step end end
  return dense, true, step
end

-- the model's fields a flavour fixes, by the release's argument names
-- (DeepSeek-V3's inter_dim: the dense layers' FFN; shared experts as a
-- count of expert widths)
local function model_shape(m)
  local H, nh = m.hidden_size, m.num_attention_heads
  local moe = (m.num_experts or 0) > 0
  local fe, fs = m.moe_ffn_hidden_size or 0, m.shared_expert_ffn_hidden_size or 0
  local mla = (m.kv_lora_rank or 0) > 0
  local dense, all_moe, step = 0, true, nil
  if moe then dense, all_moe, step = dense_lead(m) end
  return { all_moe = all_moe, interleave_moe_layer_step = step, dim = H, n_layers = m.num_layers, n_heads = nh, n_kv_heads = m.num_query_groups or nh,
    hidden_dim = not moe and m.ffn_hidden_size or nil, tie_word_embeddings = m.tie_word_embeddings == true,
    num_experts = m.num_experts or 0, top_k = moe and m.experts_per_token or nil,
    moe_inter_dim = moe and fe or nil, inter_dim = moe and m.ffn_hidden_size or nil,
    n_dense_layers = moe and dense or nil,
    num_shared_experts = moe and fe > 0 and (fs % fe == 0 and fs // fe or fs / fe) or nil,
    q_lora_rank = mla and (m.q_lora_rank or 0) or nil, kv_lora_rank = mla and m.kv_lora_rank or nil,
    qk_nope_head_dim = mla and m.qk_nope_head_dim or nil, qk_rope_head_dim = mla and m.qk_rope_head_dim or nil,
    v_head_dim = mla and m.v_head_dim or nil }
end

-- flavour f of model spec `ms`: its own fields over the model's common ones
local function flavor_spec(ms, f)
  local fs = {}
  for k, v in pairs(ms.common) do fs[k] = v end
  for k, v in pairs(ms.flavors[f]) do fs[k] = v end
  return fs
end

-- the structural fields of flavour spec `fs` that differ from `shape`
local STRUCTURAL = { "dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "num_experts", "top_k",
  "moe_inter_dim", "tie_word_embeddings", "inter_dim", "n_dense_layers", "num_shared_experts", "q_lora_rank",
  "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "interleave_moe_layer_step" }
local function fits(fs, shape)
  for _, k in ipairs(STRUCTURAL) do
    if fs[k] ~= nil and shape[k] ~= fs[k] then return false end
  end
  return true
end

-- the nearest flavour of `names`: the model's layer count first (the
-- pipeline keys are the estimate's split of the model's layers; on a
-- flavour with another count the release refuses them or splits other
-- layers, pipeline_parallel.py pipeline_llm), then dense or MoE as the
-- model, then the most other shape fields, then the nearest dim
local function nearest(ms, names, shape)
  local best, gap, pick = -1, math.huge, nil
  for _, f in ipairs(names) do
    local fs, score = flavor_spec(ms, f), 0
    if fs.n_layers == shape.n_layers then score = score + 100 end
    if ((fs.num_experts or 0) > 0) == (shape.num_experts > 0) then score = score + 10 end
    for _, k in ipairs({ "dim", "n_heads", "n_kv_heads", "hidden_dim", "moe_inter_dim" }) do
      if fs[k] ~= nil and fs[k] == shape[k] then score = score + 1 end
    end
    local d = math.abs(fs.dim - shape.dim)
    if score > best or (score == best and d < gap) then best, gap, pick = score, d, f end
  end
  return pick
end

-- "28 layers, dim 1024, 16 heads, 8 kv heads, SwiGLU 3072" (or the experts)
local function describe_shape(t)
  local s = string.format("%d layers, dim %d, %d heads", t.n_layers, t.dim, t.n_heads) ..
    (t.n_kv_heads and (", %d kv heads"):format(t.n_kv_heads) or "")
  if (t.num_experts or 0) > 0 then
    return s .. string.format(", %d experts of %s, top %s", t.num_experts, tostring(t.moe_inter_dim),
      tostring(t.top_k)) .. ((t.interleave_moe_layer_step or 1) > 1 and
      (", MoE every %d layers"):format(t.interleave_moe_layer_step) or "")
  end
  return s .. ", SwiGLU " .. tostring(t.hidden_dim) .. (t.tie_word_embeddings and ", tied" or "")
end

-- the load-balancing differences every release MoE flavour has: an expert
-- bias chooses the experts (MoEArgs.load_balance_coeff), and no
-- auxiliary loss
local function balance_diffs(m, fc, D)
  if not m.moe_router_bias then
    D(string.format("routing by the scores alone: the release's flavours add an expert bias to choose the experts " ..
      "(MoEArgs.load_balance_coeff %s, updated by the optimizer's pre-step hook)", tostring(fc.load_balance_coeff)))
  end
  if (m.moe_aux_loss_coeff or 0) > 0 then
    D("the load-balancing loss (coefficient " .. tostring(m.moe_aux_loss_coeff) .. "): the release's MoE has " ..
      "none; --set model.moe_aux_loss_coeff=0 estimates the job without it")
  end
end

-- what the release's qwen3 MoE (moe.py MoE, TokenChoiceTopKRouter: softmax
-- scores, route_norm, route_scale 1, no groups, an expert bias from
-- load_balance_coeff 1e-3; every layer MoE, no shared expert, no
-- auxiliary loss) routes or builds otherwise than the model
local function qwen3_moe_diffs(m, fs, shape, D)
  local titan = require "apsearch.launch.torchtitan"
  if shape.n_dense_layers > 0 or not shape.all_moe then
    D("dense layers beside the MoE ones: the release's MoE flavours make every layer MoE")
  end
  if (m.shared_expert_ffn_hidden_size or 0) > 0 then D("shared experts: the release's qwen3 flavours have none") end
  -- route_norm, route_scale 1, no groups: what HEAD's softmax routers fix too
  titan.softmax_router_notes(m, "the release's qwen3 flavours", function(_, t) D(t) end)
  if m.moe_router_bias and not m.moe_router_softmax_bias then
    D("sigmoid router scores: the flavours score by softmax")
  end
  balance_diffs(m, fs, D)
end

-- the model's RoPE theta and llama3 scaling against a flavour's (the
-- release's llama3 and llama4 precompute_freqs_cis), by D(text)
local function rope_diffs(m, fc, D)
  local titan = require "apsearch.launch.torchtitan"
  local theta = m.rope_theta or 0
  if theta > 0 and not close(theta, fc.rope_theta) then
    D(string.format("RoPE theta %s: the flavour's is %d", titan.pyfloat(theta), fc.rope_theta))
  end
  local kind = m.rope_scaling_type or "none"
  if kind ~= fc.rope_scaling_type then
    if fc.rope_scaling_type == "none" then
      D(kind .. " RoPE scaling: the release's RoPE of this model is unscaled")
    else
      D(string.format("%s RoPE scaling: the flavour applies llama3 scaling (factor %g, %g, %g, %d; " ..
        "precompute_freqs_cis)", kind == "none" and "no" or kind, fc.rope_scaling_factor, fc.low_freq_factor,
        fc.high_freq_factor, fc.original_max_position_embeddings))
    end
  elseif kind == "llama3" then
    for _, k in ipairs({ { "rope_scaling_factor", "scaling factor" }, { "low_freq_factor", "low_freq_factor" },
      { "high_freq_factor", "high_freq_factor" }, { "original_max_position_embeddings", "original context" } }) do
      local v = m[k[1]]
      if v and v > 0 and not close(v, fc[k[1]]) then
        D(string.format("llama3 RoPE %s %s: the flavours' is %s", k[2], tostring(v), tostring(fc[k[1]])))
      end
    end
  end
end

-- head_dim, RoPE and linear biases against a flavour of the release's
-- GQA models (llama3, qwen3, llama4: no biases), by D(text)
local function gqa_diffs(m, fc, D)
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  local want_hd = fc.head_dim or fc.dim // fc.n_heads
  if hd ~= want_hd then
    D(string.format("head_dim %d: the flavour's is %d%s", hd, want_hd, fc.head_dim and "" or " (dim // heads)"))
  end
  rope_diffs(m, fc, D)
  if m.qkv_bias or m.attn_out_bias or m.mlp_bias then D("linear biases: the flavours have none") end
end

-- what the release's llama3 and qwen3 blocks (GQA with RoPE, SwiGLU,
-- RMSNorm; qwen3's per-head Q/K norms and its MoE) build otherwise than
-- the model, by D(text)
local function dense_numerics(m, fc, ms, shape, seq, D)
  gqa_diffs(m, fc, D)
  local titan = require "apsearch.launch.torchtitan"
  if m.qk_norm and not ms.qk_norm then D("qk-norm: the llama3 model has none") end
  if m.qk_norm_full_width then D("Q/K norms over the whole projection: the release's qwen3 normalises each head") end
  if (m.rotary_percent or 0) > 0 and m.rotary_percent < 1 then D("partial RoPE: every dimension is rotated") end
  if ms.qk_norm and shape.num_experts > 0 and (fc.num_experts or 0) > 0 then qwen3_moe_diffs(m, fc, shape, D) end
  -- what no TorchTitan block has (GeGLU, LayerNorm, windows, Mamba-2, ...)
  for _, what in ipairs(titan.block_lacks(m, seq)) do D(what) end
end

-- the model's YaRN (factor, pre-scaling context, betas) against a
-- flavour's rope_factor, original_seq_len, beta_fast / beta_slow
local function yarn_diffs(m, fc, D)
  local hf = require "apsearch.hf"
  if (m.rope_scaling_type or "none") ~= "yarn" then
    D((m.rope_scaling_type or "no") .. " RoPE scaling: the flavours scale RoPE by YaRN (factor " ..
      tostring(fc.rope_factor) .. " over " .. fc.original_seq_len .. ")")
    return
  end
  local f, orig = m.rope_scaling_factor or 1, hf.yarn_original(m)
  if not close(f, fc.rope_factor) or orig ~= fc.original_seq_len or
      not close(hf.yarn_beta(m, "beta_fast"), fc.beta_fast) or not close(hf.yarn_beta(m, "beta_slow"), fc.beta_slow) then
    D(string.format("YaRN factor %s over %s, betas %s / %s: the flavours' is %s over %d, %s / %s", tostring(f),
      tostring(orig), tostring(hf.yarn_beta(m, "beta_fast")), tostring(hf.yarn_beta(m, "beta_slow")),
      tostring(fc.rope_factor), fc.original_seq_len, tostring(fc.beta_fast), tostring(fc.beta_slow)))
  end
  local theta = m.rope_theta or 0
  if theta > 0 and not close(theta, fc.rope_theta) then
    D(string.format("RoPE theta %s: the flavour's is %s", tostring(theta), tostring(fc.rope_theta)))
  end
end

-- the model's router (score function, top-k renormalisation when
-- `norm`, scaling, groups) against a flavour's MoEArgs (score_func,
-- route_norm, route_scale, num_expert_groups / num_limited_groups), by
-- D(text)
local function route_diffs(m, fc, D, norm)
  local sigmoid = m.moe_router_bias and not m.moe_router_softmax_bias or m.moe_router_sigmoid
  if (sigmoid and "sigmoid" or "softmax") ~= fc.score_func then
    D(("%s router scores: the flavour's are %s"):format(sigmoid and "sigmoid" or "softmax", fc.score_func))
  end
  if norm and (not m.moe_router_pre_softmax) ~= fc.route_norm then
    D(fc.route_norm and "top-k weights not renormalised: the flavour's route_norm is True" or
      "top-k weights renormalised: the flavour's route_norm is False")
  end
  local scale = (m.moe_router_topk_scaling_factor or 0) > 0 and m.moe_router_topk_scaling_factor or 1.0
  if not close(scale, fc.route_scale) then
    D(("routed_scaling_factor %s: the flavour's route_scale is %s"):format(tostring(scale), tostring(fc.route_scale)))
  end
  if (m.moe_router_num_groups or 0) ~= (fc.num_expert_groups or 0) or
      (m.moe_router_group_topk or 0) ~= (fc.num_limited_groups or 0) then
    D(("expert groups %d, top %d: the flavour's are %d, top %d"):format(m.moe_router_num_groups or 0,
      m.moe_router_group_topk or 0, fc.num_expert_groups or 0, fc.num_limited_groups or 0))
  end
end

-- what the release's deepseek_v3 (MLA, dense first layers, shared experts,
-- YaRN applied beyond original_seq_len only, its routing) builds otherwise
-- than the model, by D(text)
local function dsv3_numerics(m, fc, ms, shape, seq, D)
  local hf = require "apsearch.hf"
  yarn_diffs(m, fc, D)
  if (m.rope_scaling_type or "none") == "yarn" then
    if seq and seq <= fc.original_seq_len then
      D(string.format("YaRN at seq_len %d: the release scales RoPE only beyond original_seq_len %d " ..
        "(precompute_freqs_cis: max_seq_len = training.seq_len), where config.json's scaling always applies",
        seq, fc.original_seq_len))
    end
    if math.abs(hf.yarn_attention_factor(m) - 1) > 1e-12 or
        not close(m.yarn_mscale_all_dim or 0, fc.mscale) then
      D(string.format("YaRN mscale %s / mscale_all_dim %s: the flavour's softmax scale takes mscale %s, and no " ..
        "cos/sin factor", tostring(m.yarn_mscale or 0), tostring(m.yarn_mscale_all_dim or 0), tostring(fc.mscale)))
    end
  end
  if m.qkv_bias or m.attn_out_bias or m.mlp_bias then D("linear biases: the flavours have none") end
  if (shape.num_experts or 0) > 0 then
    if not shape.all_moe then D("dense layers between MoE ones: the flavours make the first n_dense_layers dense") end
    route_diffs(m, fc, D, true)
    balance_diffs(m, fc, D)
  end
  local titan = require "apsearch.launch.torchtitan"
  titan.mla_moe_lacks(m, "the release's deepseek_v3 (models/deepseek_v3/model)", D)
  for _, what in ipairs(titan.block_lacks(m, seq)) do D(what) end
end

-- what the release's gpt_oss (its fixed attention, window, biases and
-- clamped experts, YaRN, softmax routing with an expert bias) builds
-- otherwise than the model, by D(text)
local function gptoss_numerics(m, fc, ms, shape, seq, D)
  local titan = require "apsearch.launch.torchtitan"
  titan.gptoss_block_lacks(m, fc, shape.n_dense_layers or 0, M.GPTOSS_NAMES, D)
  if not shape.all_moe then D("dense layers between MoE ones: the release's gpt_oss makes every layer MoE") end
  yarn_diffs(m, fc, D)
  titan.softmax_router_notes(m, "the release's gpt_oss", function(_, t) D(t) end)
  balance_diffs(m, fc, D)
end

-- the Llama 4 features llama4_numerics says itself (launch.llama4_features)
local LLAMA4_SAID = { qk_l2_norm = true, nope_layer_period = true, attention_chunk_size = true,
  moe_router_sigmoid = true, moe_router_input_probs = true }

-- what the release's llama4 (GQA with RoPE on every layer and no Q/K norm,
-- causal attention, the MoE on every interleave_moe_layer_step-th layer:
-- sigmoid top-1 scores weighting the expert input, one shared expert, an
-- expert bias) builds otherwise than the model, by D(text); the top-1
-- sigmoid weight is never renormalised (route_norm False), as Llama 4's
local function llama4_numerics(m, fc, ms, shape, seq, D)
  gqa_diffs(m, fc, D)
  if m.qk_norm then D("per-head Q/K RMSNorms (qk_norm): the release's llama4 Attention has none") end
  if m.qk_l2_norm then
    D("weightless L2 Q/K norms on the RoPE layers (qk_l2_norm): the release's llama4 Attention has none")
  end
  if (m.nope_layer_period or 0) > 0 then
    D(("no RoPE on every %d-th layer (nope_layer_period): the flavour rotates every layer; the release's _irope " ..
      "flavours, without RoPE on every %d-th, pass their whole mask dict as FlexAttention's block_mask " ..
      "(models/llama4/model/model.py Attention.forward) and are not written"):format(m.nope_layer_period,
      fc.irope_period))
  end
  local chunk = m.attention_chunk_size or 0
  if chunk > 0 and (seq or 0) > chunk then
    D(("chunked attention (%d-token chunks, attention_chunk_size) at seq_len %d: the flavour attends causally " ..
      "over the whole sequence"):format(chunk, seq))
  end
  route_diffs(m, fc, D, false)
  balance_diffs(m, fc, D)
  for _, what in ipairs(require("apsearch.launch.torchtitan").block_lacks(m, seq, LLAMA4_SAID)) do D(what) end
end

-- (the release's own names in gptoss_block_lacks' reasons)
M.GPTOSS_NAMES = { layers = "the release's gpt_oss", attn = "the release's gpt_oss Attention",
  experts = "the release's GroupedExperts", norm = "the release's gpt_oss" }

-- the release models' numerics checks by model name
local NUMERICS = { llama3 = dense_numerics, qwen3 = dense_numerics, deepseek_v3 = dsv3_numerics,
  gpt_oss = gptoss_numerics, llama4 = llama4_numerics }

--- The release's model and flavour for a model, and what of the model it
-- cannot build: the model by M.model_name, the flavour whose shape is the
-- model's (by the name's size suffix first: Qwen3-32B's "32B"), and a list
-- of differences (shape, numerics, layer features, routing) when the model
-- is not exactly one of them.
-- @tparam table rel an entry of options.torchtitan_releases
-- @tparam table m model
-- @tparam[opt] integer seq training seq_length (chunked attention counts
--   beyond its chunk; nil: unknown)
-- @treturn string the model's name (model.name)
-- @treturn string flavour written (the matching one, else the named size,
--   else the nearest: its layer count, dense or MoE, most shape fields)
-- @treturn table differences, text each (empty when the model is the flavour)
function M.flavor(rel, m, seq)
  local name = M.model_name(rel, m)
  local ms = rel.models[name]
  local shape = model_shape(m)
  local names = {}
  for f in pairs(ms.flavors) do names[#names + 1] = f end
  table.sort(names)
  local lname = tostring(m.name or ""):lower()
  local size = lname:match("%-([%d%.]+b%-a[%d%.]+b)$") or lname:match("%-([%d%.]+b%-a[%d%.]+b)%-") or
    lname:match("%-([%d%.]+b)$") or lname:match("%-([%d%.]+b)%-")
  local named = size and ms.flavors[size:upper()] and size:upper()
  local flavor
  if named and fits(flavor_spec(ms, named), shape) then flavor = named end
  for _, f in ipairs(names) do if not flavor and fits(flavor_spec(ms, f), shape) then flavor = f end end
  local diffs = {}
  local function D(t) diffs[#diffs + 1] = t end
  if not flavor then
    flavor = named or nearest(ms, names, shape)
    local fs = flavor_spec(ms, flavor)
    D(string.format("the model's shape (%s): the release's %s flavours are %s; written as flavour %s (%s)",
      describe_shape(shape), name, table.concat(names, ", "), flavor, describe_shape(fs)))
  end
  local fc = flavor_spec(ms, flavor)
  if m.vocab_size ~= fc.vocab_size then
    D(string.format("vocabulary %s: the flavours' is %d", tostring(m.vocab_size), fc.vocab_size))
  end
  if (m.norm_eps or 0) > 0 and not close(m.norm_eps, fc.norm_eps) then
    D(string.format("norm epsilon %s: the flavours' is %s", tostring(m.norm_eps), tostring(fc.norm_eps)))
  end
  NUMERICS[name](m, fc, ms, shape, seq, D)
  return name, flavor, diffs
end

--- The release's expert-parallel communication backend for a strategy's
-- dispatcher: flex as parallelism.expert_parallel_comm_backend "deepep"
-- where the release has it -- its deepseek_v3 and llama4 parallelize read
-- it, with expert parallelism and no expert TP (models/deepseek_v3/infra/
-- parallelize.py @ v0.2.2 l.100-121, models/llama4/infra/parallelize.py
-- l.114-135 raise otherwise); its qwen3 and
-- gpt_oss dispatch all-to-all whatever the key says, and it has no
-- HybridEP (job_config.py: Literal["standard", "deepep"]).  Otherwise NOT
-- EXPRESSIBLE, written as the standard all-to-all.
-- @tparam table r strategy record
-- @tparam table tr training
-- @tparam string name the release model written
-- @tparam function K key writer
-- @tparam function N note writer
-- @tparam string NE the NOT EXPRESSIBLE tag
-- @tparam table ms the release model's entry (options models:
--   reads_comm_backend)
function M.comm_backend_keys(r, tr, name, K, N, NE, ms)
  local d = r.moe_token_dispatcher or "alltoall"
  if d == "alltoall" then return end
  local ep, etp = r.ep_degree or 1, r.etp_degree or r.tp_degree or 1
  local hybrid = tr.moe_flex_dispatcher_backend == "hybridep"
  local reads = ms.reads_comm_backend == true
  if d == "flex" and not hybrid and reads and ep > 1 and etp == 1 then
    K("parallelism.expert_parallel_comm_backend", "deepep")
    return
  end
  local why = d == "allgather" and "the release has no all-gather dispatcher" or
    hybrid and "the release has no HybridEP backend (expert_parallel_comm_backend standard or deepep)" or
    not reads and ("the release's " .. name .. " dispatches all-to-all whatever " ..
      "expert_parallel_comm_backend says (its parallelize reads no backend)") or
    "DeepEP needs expert parallelism without expert TP (" .. name .. " parallelize.py raises)"
  N(NE, ("moe_token_dispatcher = %s: %s; written as the standard all-to-all"):format(d, why))
end

--- Layer-frequency selective AC (`selective_ac_option = "<k>"`) giving
-- each pipeline rank the estimate's count of recomputed layers: the
-- release checkpoints a block when a per-process count of blocks is a
-- multiple of k (activation_checkpoint.py _apply_layer_sac), floor(n / k)
-- of a rank's n blocks.
-- @tparam table layers blocks per pipeline rank
-- @tparam table recompute recomputed blocks per pipeline rank
-- @treturn integer|nil k (>= 2), nil when none gives every rank its count
function M.layer_sac_freq(layers, recompute)
  local most = 0
  for _, n in ipairs(layers) do most = math.max(most, n) end
  for k = 2, most do
    local ok = true
    for i, n in ipairs(layers) do
      if n // k ~= (recompute[i] or 0) then ok = false break end
    end
    if ok then return k end
  end
  return nil
end

--- Renders the TOML job file for release `tag`.
-- @tparam table c context (apsearch.launch.context)
-- @tparam string tag one of M.releases
-- @treturn string the file
-- @treturn table notes (NOT EXPRESSIBLE / NOT WRITTEN / APPROXIMATE / NOTE lines)
function M.render(c, tag)
  local rel = assert(options.torchtitan_releases[tag], "torchtitan: not a supported release: " .. tostring(tag))
  local titan = require "apsearch.launch.torchtitan"
  local r, m, tr = c.rec, c.model, c.training
  local notes = {}
  local NE = "NOT EXPRESSIBLE in TorchTitan " .. tag
  -- N(kind, text): a comment line of the file (NOT EXPRESSIBLE, NOTE, ...)
  local function N(kind, text) notes[#notes + 1] = kind .. ": " .. text end
  local other = require("apsearch.launch").framework_note("torchtitan", tr)
  if other then N("NOTE", other) end
  local drop = require("apsearch.launch").dropout_lacks(tr, titan.NO_DROPOUT)
  if drop then N(NE, drop) end
  -- sections in file order, each an ordered list of {key, value, comment}
  local order, sections = {}, {}
  -- K(path, value, comment): `key = value` in its [section], the key and
  -- the value's type checked against the release's JobConfig
  local function K(path, value, comment)
    local fact = assert(rel.keys[path], "torchtitan " .. tag .. ": key not in the release's JobConfig: " .. path)
    assert(options.release_value_ok(fact, value), "torchtitan " .. tag .. ": " .. path .. " = " .. M.toml(value))
    local sec, key = path:match("^(.*)%.([^.]+)$")
    if not sections[sec] then sections[sec] = {} order[#order + 1] = sec end
    table.insert(sections[sec], { key, value, comment })
  end

  local tp, pp, cp, vpp = r.tp_degree or 1, r.pp_degree or 1, r.cp_degree or 1, r.vpp_degree or 1
  local R, Sd = titan.dp_degrees(r)
  local L = m.num_layers
  local b = r.micro_batch_size or 1
  local seq = tr.seq_length
  local nmb = r.micro_batch_num
  if not nmb or nmb < 1 then nmb = math.max(1, tr.global_batch_size // math.max(1, b * R * Sd)) end
  nmb = require("apsearch.launch").pass_microbatches(tr, r, nmb)
  local pytorch = tr.framework == "fsdp2" or tr.framework == "fsdp"
  local compile = tr.torch_compile == true or not pytorch

  -- the release's loss is one cross entropy over the micro-batch's logits
  -- (components/loss.py of v0.2.2: cross_entropy_loss; ChunkedLossWrapper
  -- came with 786e26f8e, 2026-04-27); an estimate of a chunked loss (the
  -- fsdp2 default, 8) holds less than the release will
  local chunks = titan.loss_chunks(tr)
  if chunks > 1 then
    N(NE, string.format("the chunked loss the estimate prices (loss_chunks = %d): the release's loss is " ..
      "one cross entropy over the whole micro-batch's logits (set training.loss_chunks = 1)", chunks))
  end

  K("job.description", c.header[1])

  -- model
  local name, flavor, diffs = M.flavor(rel, m, seq)
  K("model.name", name)
  local ms = rel.models[name]
  if (m.num_experts or 0) > 0 and name == "llama3" then
    N("NOT WRITTEN", string.format("the %d-expert MoE model: this file names the release's llama3 (dense) " ..
      "flavour %s; start from the release's MoE job files (torchtitan/models/deepseek_v3, qwen3, llama4 " ..
      "train_configs/*.toml at %s) and copy the [parallelism] keys below", m.num_experts, flavor, tag))
  elseif #diffs > 0 then
    for _, d in ipairs(diffs) do
      N(NE, d .. " (a job file picks a flavour of " .. ms.args_name .. "; it sets no model shape or numerics)")
    end
  end
  local fl = flavor_spec(ms, flavor).n_layers
  if pp > 1 and not ms.pipelining then
    N(NE, string.format("pipeline parallelism (pipeline_parallel_degree %d): the release's %s TrainSpec has no " ..
      "pipelining_fn, and train.py raises \"Pipeline Parallel is enabled but %s does not support pipelining\"",
      pp, name, name))
  elseif pp > 1 and fl ~= m.num_layers then
    N(NE, string.format("the pipeline keys below split the model's %d layers; on flavour %s's %d the release's " ..
      "pipeline_llm (torchtitan/distributed/pipeline_parallel.py at %s) refuses them or splits other layers",
      m.num_layers, flavor, fl, tag))
  end
  if cp > 1 and ms.context_parallel == false then
    N(NE, string.format("context parallelism (context_parallel_degree %d): the release's %s flavours attend " ..
      "with FlexAttention, and its model args' update_from_config raises NotImplementedError with CP", cp, name))
  end
  if ms.flavors[flavor] and flavor_spec(ms, flavor).attn_mask_type == "block_causal" then
    N("NOTE", "the flavour masks attention block-causally by document (attn_mask_type \"block_causal\"): " ..
      "packed documents shorter than the sequence attend less than the causal attention estimated")
  end
  K("model.flavor", flavor)
  local prec = tr.precision
  local gather = tr.fp8_param_gather == true
  if prec == "fp8" then
    K("model.converters", { rel.converters.float8 })
  elseif prec == "mxfp8" then
    K("model.converters", { rel.converters.mx })
    N("NOTE", "quantize.linear.mx needs SM100 or later (B200, GB200, ...)")
    if tp > 1 and compile then
      N(NE, "mxfp8 with tensor parallelism and a compiled model (MXLinearConverter asserts " ..
        "\"TP not yet supported with torch.compile for mxfp8\")")
    end
  end
  local moe = (m.num_experts or 0) > 0 and name ~= "llama3"
  if moe and (prec == "fp8" or prec == "mxfp8") then
    N(NE, "the routed experts' grouped GEMMs in " .. prec .. ": quantize.linear converts nn.Linear modules " ..
      "only, and the release's GroupedExperts stay bf16 (its prototype quantize.grouped_mm is not written)")
  end
  if prec == "nvfp4" then
    N(NE, "nvfp4: the release has no NVFP4 converter (quantize.linear.float8 and .mx only); written in bf16")
  end
  if gather and prec ~= "fp8" then
    N(NE, "fp8_param_gather with " .. tostring(prec) .. ": only the float8 tensorwise recipe gathers " ..
      "quantized parameters (enable_fsdp_float8_all_gather)")
  elseif gather and Sd == 1 then
    N(NE, "fp8_param_gather without FSDP: enable_fsdp_float8_all_gather acts on FSDP's all-gather only")
  end
  -- Megatron-only settings the estimate prices (as the HEAD file says them)
  if tr.first_last_layers_bf16 then
    N(NE, "Megatron's first and last layers in bf16 (first_last_layers_bf16): the release quantizes every " ..
      "module its filter_fqns do not name")
  end
  if tr.cutedsl_fused_grouped_mlp then
    N(NE, "TransformerEngine's fused grouped MLP under Megatron-Core (cutedsl_fused_grouped_mlp)")
  end
  if tr.store_param_remainders then
    N(NE, "store_param_remainders (apex DistributedFusedAdam, NeMo 1.x)")
  end

  -- training
  local local_batch = pp > 1 and b * nmb or b
  K("training.local_batch_size", local_batch, pp > 1 and string.format("%d microbatches of %d", nmb, b) or nil)
  K("training.global_batch_size", tr.global_batch_size)
  K("training.seq_len", seq)
  if tr.global_batch_size % (local_batch * R * Sd) ~= 0 then
    N("NOTE", string.format("global batch %d is not a multiple of local_batch_size x data-parallel degree " ..
      "= %d: the release's trainer refuses it (train.py)", tr.global_batch_size, local_batch * R * Sd))
  end
  if prec == "fp16" then
    N(NE, "fp16 mixed precision (mixed_precision_param takes bfloat16 or float32)")
  else
    K("training.mixed_precision_param", "bfloat16")
  end
  if (tr.mtp_num_layers or 0) > 0 then
    N(NE, string.format("training.mtp_num_layers = %d: no multi-token prediction in the release's %s",
      tr.mtp_num_layers, name))
  end
  if tr.cuda_graphs then
    N(NE, "CUDA graphs: the release has no CUDA-graph option (HEAD captures them since f84224af, 2026-08-13)")
  end
  if (tr.activation_offload_layers or 0) > 0 then
    N(NE, "activation offload to host (activation_offload_layers = " .. tr.activation_offload_layers ..
      "): training.enable_cpu_offload moves parameters, gradients and optimizer states, not activations")
  end
  if tr.offload_modules then
    N(NE, "fine-grained activation offload (offload_modules " .. tr.offload_modules ..
      "): Megatron-Core's --offload-modules; TorchTitan offloads no activations")
  end

  -- data parallel
  titan.data_parallel_fields(K, N, NE, r, tr.framework)

  -- tensor parallel
  K("parallelism.tensor_parallel_degree", tp)
  local kv_lacks = require("apsearch.launch").kv_heads_lacks(m, r, "TorchTitan")
  if kv_lacks then N(NE, kv_lacks) end
  if tp > 1 and r.sequence_parallel == false then
    N(NE, "tensor parallelism without sequence parallelism: the release's " .. name .. " TP plan always shards " ..
      "the norms and dropout over the sequence (parallelize.py apply_tp)")
  end
  if tp > 1 and tr.tp_comm_overlap == true then
    if compile then
      K("parallelism.enable_async_tensor_parallel", true)
    else
      N(NE, "tp_comm_overlap without compile: async TP needs the model compiled (maybe_enable_async_tp raises)")
    end
  end

  -- pipeline parallel
  K("parallelism.pipeline_parallel_degree", pp)
  if pp > 1 then
    local sched = titan.schedule_class(r, vpp)
    K("parallelism.pipeline_parallel_schedule", sched)
    K("parallelism.pipeline_parallel_microbatch_size", b)
    local group = require("apsearch.launch").group_size_note(r)
    if group then N(NE, group) end
    local plan, chunks, parts = titan.pipeline_plan(c, r, L, pp, vpp, sched, rel.output)
    if plan then
      K("parallelism.pipeline_parallel_first_stage_less_layers", plan.first)
      K("parallelism.pipeline_parallel_last_stage_less_layers", plan.last,
        "layers per model chunk: " .. table.concat(chunks, ", "))
      if plan.lps then K("parallelism.pipeline_parallel_layers_per_stage", plan.lps) end
    else
      K("parallelism.module_fqns_per_model_part", parts, "layers per model chunk: " .. table.concat(chunks, ", "))
    end
  end

  -- context parallel
  K("parallelism.context_parallel_degree", cp)
  if cp > 1 then
    K("parallelism.context_parallel_load_balancer", "headtail", "chunks i and 2c-1-i per rank")
    if r.cp_comm_type == "all_gather" then
      K("parallelism.context_parallel_rotate_method", "allgather")
    elseif r.cp_comm_type == "a2a" then
      -- the release's "alltoall" rotate method passes K/V round the ring by
      -- all-to-all shuffles: still ring attention, no head scattering
      N("NOT EXPRESSIBLE in TorchTitan", "cp_comm_type = a2a: the release's context parallel SDPA " ..
        "is ring attention (context_parallel_rotate_method allgather / alltoall rotate K/V); " ..
        "it has no all-to-all (Ulysses) mode")
    elseif r.cp_comm_type == "p2p" then
      -- the ring: each step passes K/V shards to the next rank, which the
      -- release's "alltoall" rotate method does (PyTorch's _AllToAllRotater,
      -- torch/distributed/tensor/experimental/_attention.py: permute_tensor
      -- to ranks [1, ..., n-1, 0]); its default, "allgather", gathers every
      -- shard (job_config.py @ v0.2.2 l.446-452)
      K("parallelism.context_parallel_rotate_method", "alltoall", "K/V passed round the ring (p2p)")
    end
  end

  -- MoE parallelism (a llama3-named MoE model: NOT WRITTEN above)
  if (m.num_experts or 0) > 0 then
    local ep, etp = r.ep_degree or 1, r.etp_degree or tp
    K("parallelism.expert_parallel_degree", ep)
    if ep > 1 then
      if etp == tp or etp == 1 then
        K("parallelism.expert_tensor_parallel_degree", etp)
      else
        N(NE, string.format("etp_degree = %d: ParallelDims takes etp = tp (%d) or 1", etp, tp))
      end
    end
    if (r.moe_capacity_factor or 0) > 0 then
      N(NE, "moe_capacity_factor = " .. tostring(r.moe_capacity_factor) .. ": the release's expert " ..
        "parallelism is dropless")
    end
    M.comm_backend_keys(r, tr, name, K, N, NE, ms)
  end

  -- activation checkpointing
  if r.layer_recompute == "full" then
    local all, rc = #c.recompute > 0, 0
    for i = 1, #c.recompute do
      if c.recompute[i] ~= c.layers[i] then all = false end
      rc = rc + (c.recompute[i] or 0)
    end
    if all then
      K("activation_checkpoint.mode", "full", "every transformer block recomputed")
    elseif rc == 0 then
      K("activation_checkpoint.mode", "none")
      N("NOTE", "full recompute with no layer recomputed on any stage")
    else
      local k = M.layer_sac_freq(c.layers, c.recompute)
      if k then
        K("activation_checkpoint.mode", "selective")
        K("activation_checkpoint.selective_ac_option", tostring(k), string.format("every %d-th block " ..
          "recomputed whole: %s of %s layers per stage", k, table.concat(c.recompute, ":"),
          table.concat(c.layers, ":")))
      else
        K("activation_checkpoint.mode", "full", "every transformer block recomputed")
        N("APPROXIMATE", string.format("recompute of %s of %s layers per stage as full AC on every block " ..
          "(no layer frequency of selective_ac_option gives these counts): more recompute, less " ..
          "activation memory than estimated", table.concat(c.recompute, ":"), table.concat(c.layers, ":")))
      end
    end
  elseif r.layer_recompute == "selective" then
    K("activation_checkpoint.mode", "selective")
    K("activation_checkpoint.selective_ac_option", "op", "per-op SAC in every block")
    if tr.framework ~= "fsdp2" then
      local mods = (r.recompute_modules and r.recompute_modules ~= "") and r.recompute_modules or "core_attn"
      N("APPROXIMATE", "apsearch's selective recompute (Megatron's recompute modules " .. mods ..
        ", the " .. tostring(tr.framework) .. " profile) as TorchTitan's per-op selective AC")
    end
  else
    K("activation_checkpoint.mode", "none")
  end

  -- compile: the model and the loss are separate components
  local components = {}
  if compile then components[1] = "model" end
  local loss = tr.compile_loss == true or (tr.compile_loss == nil and compile)
  if loss then components[#components + 1] = "loss" end
  if #components == 0 then components = { "model", "loss" } end
  K("compile.enable", compile or loss)
  K("compile.components", components)

  -- quantisation settings (the converter is in [model]): the lm_head and
  -- the MoE router's gate (moe.py TokenChoiceTopKRouter.gate, an
  -- nn.Linear) stay bf16, as estimated; filter_fqns match as substrings
  local unquantized = { rel.output }
  if moe then unquantized[2] = rel.router_gate end
  local unquantized_why = moe and "the lm_head and the router stay bf16, as estimated" or
    "the lm_head stays bf16, as estimated"
  if prec == "fp8" then
    -- recipe_name unset: dynamic tensorwise scaling, what the estimate
    -- prices (src/core/profile.c: its casts, and float8 TP gathers, which
    -- parallelize.py picks only without a rowwise recipe); rowwise casts
    -- each operand once per GEMM and gathers bf16 under TP, measured
    -- +10 % over bf16 against tensorwise's +25 % (pytorch/ao
    -- torchao/float8/README.md, PR 1793: Llama 3 8B on 8 H100, 6150 /
    -- 6768 / 7689.5 tokens/s)
    if gather and Sd > 1 then
      -- the only recipe that gathers in float8 (float8.py asserts
      -- recipe_name is None with the all-gather)
      K("quantize.linear.float8.enable_fsdp_float8_all_gather", true)
      K("quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", true)
      N("NOTE", "fp8 with fp8_param_gather: tensorwise scaling (recipe_name unset), the recipe whose " ..
        "FSDP all-gather is in float8")
    end
    K("quantize.linear.float8.filter_fqns", unquantized, unquantized_why)
  elseif prec == "mxfp8" then
    K("quantize.linear.mx.recipe_name", rel.mx_recipe)
    K("quantize.linear.mx.filter_fqns", unquantized, unquantized_why)
  end

  -- the file
  local src = rel.source
  local nproc = math.min(c.devices_used, c.devices_per_node)
  local name = string.format("rank%d_torchtitan.toml", r.rank)
  local out = {}
  for _, h in ipairs(c.header) do out[#out + 1] = "# " .. h end
  out[#out + 1] = string.format("# TorchTitan %s job file (%s %s @ %s, %s): only keys of that release's",
    tag, src.repo, src.path, src.commit, src.date)
  out[#out + 1] = "# JobConfig; add your dataset, tokenizer (model.hf_assets_path), optimizer, checkpoint"
  out[#out + 1] = "# and step settings.  Run from a TorchTitan " .. tag .. " checkout on every node,"
  out[#out + 1] = "# <launch-dir> the directory of this file:"
  out[#out + 1] = string.format("#   torchrun --nnodes %d --nproc-per-node %d --node-rank $NODE_RANK " ..
    "--master-addr $MASTER_ADDR --master-port 29500 -m torchtitan.train --job.config_file <launch-dir>/%s",
    c.nodes, nproc, name)
  for _, n in ipairs(notes) do out[#out + 1] = "# " .. n end
  for _, sec in ipairs(order) do
    out[#out + 1] = ""
    out[#out + 1] = "[" .. sec .. "]"
    for _, kv in ipairs(sections[sec]) do
      out[#out + 1] = kv[1] .. " = " .. M.toml(kv[2]) .. (kv[3] and ("  # " .. kv[3]) or "")
    end
  end
  return table.concat(out, "\n") .. "\n", notes
end

return M
