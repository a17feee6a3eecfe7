-- tests/lua/models_glm_llama4_spec.lua -- GLM-4.5 / GLM-4.6 (glm4_moe)
-- and Llama 4 (llama4, llama4_text) imported from their Hugging Face
-- config.json (lua/apsearch/hf.lua):
-- exact total and active parameter counts (core.model_params) computed
-- here from the config fields, the published rounded totals as a check,
-- refusals of bad values naming file, key and value, the Megatron-LM
-- flags of the architecture, and `apsearch run` on them.
--
-- The configs are examples/models/glm-4.5*.json and llama-4-*.json.

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local MODELS = ROOT .. "/examples/models/"

local load, decoded = H.example_model, H.example_config

local err_of = H.err_of

--- Parameters of a glm4_moe config as transformers' Glm4MoeForCausalLM
-- builds them (modeling_glm4_moe.py @ 000c33fd), computed from the
-- config fields: Glm4MoeAttention q h x a d, k and v h x k d with biases
-- (attention_bias), o a d x h without; q_norm, k_norm RMSNorm(head_dim)
-- with use_qk_norm; input_layernorm, post_attention_layernorm h each;
-- dense layers (i < first_k_dense_replace) Glm4MoeMLP 3 h f; MoE layers
-- E experts and n_shared_experts shared ones of 3 h f_e each, the router
-- weight E x h and e_score_correction_bias E (a buffer in transformers,
-- a checkpoint tensor, counted as apsearch counts DeepSeek-V3's); embed
-- and lm_head V x h each (untied), the final norm h.
-- @treturn table {total=, active=, non_embedding_active=, mtp=}
local function glm_counts(c)
  local h, L, a, k, d = c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
    c.num_key_value_heads, c.head_dim
  local V, f, fe, E, topk = c.vocab_size, c.intermediate_size, c.moe_intermediate_size,
    c.n_routed_experts, c.num_experts_per_tok
  local dense_n = c.first_k_dense_replace
  local attn = h * a * d + 2 * h * k * d + a * d * h + (a * d + 2 * k * d)
    + (c.use_qk_norm and 2 * d or 0) + 2 * h
  local expert = 3 * h * fe
  local router = E * h + E
  local moe_common = attn + c.n_shared_experts * expert + router
  local dense_layer = attn + 3 * h * f
  local moe_layer = moe_common + E * expert
  local moe_active = moe_common + topk * expert
  local embed = 2 * V * h
  local total = dense_n * dense_layer + (L - dense_n) * moe_layer + embed + h
  local active = dense_n * dense_layer + (L - dense_n) * moe_active + embed + h
  -- the MTP module as the checkpoint stores it (model.layers.L: enorm,
  -- hnorm, eh_proj 2h x h, one MoE decoder layer, shared_head.norm, its own
  -- embed_tokens and shared_head.head copies), as vLLM's glm4_moe_mtp.py
  -- builds it
  local mtp = c.num_nextn_predict_layers * (3 * h + 2 * h * h + moe_layer + embed)
  return { total = total, active = active, non_embedding_active = active - embed, mtp = mtp,
           dense_layer = dense_layer, moe_layer = moe_layer }
end

describe("glm4_moe: exact parameter counts", function()
  -- zai-org/GLM-4.5-Air: 106,852,251,264 total, 13,424,129,664 active.
  -- Published (model card, tech report arXiv:2508.06471 table 1): 106B
  -- total, 12B active.  The total is the model without its MTP layer
  -- (transformers does not build it: Glm4MoeModel ignores model.layers.46,
  -- _keys_to_ignore_on_load_unexpected); the active count leaves out the
  -- embedding and the output layer (13.42B - 2 x 0.62B = 12.18B).
  it("GLM-4.5-Air: 106,852,251,264 total, 13,424,129,664 active", function()
    local m = load("glm-4.5-air")
    local want = glm_counts(decoded("glm-4.5-air"))
    assert.are.same({ 46, 4096, 96, 8, 128, 10944, 151552 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size, m.vocab_size })
    assert.are.same({ 128, 8, 1408, 1408, 1, 1 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers, m.mtp_layers })
    assert.are.same({ true, false, false, 0.5 }, { m.qkv_bias, m.attn_out_bias, m.qk_norm, m.rotary_percent })
    local c = core.model_params(m)
    assert.are.equal(106852251264, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(13424129664, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.equal(want.moe_layer, c.per_moe_layer)
    assert.are.equal(want.mtp, c.mtp)
    assert.are.equal(106, c.total // 1e9)
    assert.are.equal(12, want.non_embedding_active // 1e9)
  end)

  -- zai-org/GLM-4.5: 352,797,829,024 total, 33,632,266,144 active.
  -- Published: 355B total, 32B active.  The active count again leaves out
  -- embedding and output layer (32.08B).  The 355B is 0.6% above the
  -- model transformers builds and 1% below the checkpoint, whose MTP layer
  -- (with its own embedding and head copies, 5,539,962,272) makes
  -- 358,337,791,296, the Hub's "358.34B params"; the card does not say
  -- what its rounded 355B counts, so it is checked to within 1%.
  it("GLM-4.5: 352,797,829,024 total, 33,632,266,144 active; with MTP the Hub's 358.34B", function()
    local m = load("glm-4.5")
    local want = glm_counts(decoded("glm-4.5"))
    assert.are.same({ 92, 5120, 12288, 160, 1536, 3 }, { m.num_layers, m.hidden_size, m.ffn_hidden_size,
      m.num_experts, m.moe_ffn_hidden_size, m.moe_first_dense_layers })
    assert.is_true(m.qk_norm)
    assert.is_nil(m.qk_norm_full_width)
    local c = core.model_params(m)
    assert.are.equal(352797829024, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(33632266144, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.equal(want.dense_layer, c.per_layer)
    assert.are.equal(358337791296, c.total + c.mtp)
    assert.are.equal(want.mtp, c.mtp)
    assert.is_true(math.abs(c.total - 355e9) / 355e9 < 0.01)
    assert.are.equal(32, want.non_embedding_active // 1e9)
  end)

  it("reads the router as DeepSeek-V3's noaux_tc gate", function()
    local m = load("glm-4.5")
    -- sigmoid + e_score_correction_bias, renormalised top-8, x 2.5, no groups
    assert.are.same({ true, 2.5 }, { m.moe_router_bias, m.moe_router_topk_scaling_factor })
    assert.is_nil(m.moe_router_pre_softmax)
    assert.is_nil(m.moe_router_num_groups)
    local cfg = decoded("glm-4.5")
    cfg.norm_topk_prob, cfg.n_group, cfg.topk_group = false, 8, 4
    m = hf.from_config(cfg, "g.json")
    assert.is_true(m.moe_router_pre_softmax)
    assert.are.same({ 8, 4, 2 }, { m.moe_router_num_groups, m.moe_router_group_topk,
      m.moe_router_group_score_topk })
  end)

  it("takes Glm4MoeConfig's defaults for absent keys and reads the class from architectures", function()
    local cfg = decoded("glm-4.5-air")
    cfg.partial_rotary_factor, cfg.attention_bias, cfg.norm_topk_prob = nil, nil, nil
    local m = hf.from_config(cfg, "g.json")
    assert.are.same({ 0.5, false }, { m.rotary_percent, m.qkv_bias })
    assert.is_nil(m.moe_router_pre_softmax) -- norm_topk_prob default true
    cfg.partial_rotary_factor = 1
    assert.is_nil(hf.from_config(cfg, "g.json").rotary_percent) -- every dim: not carried
    cfg.model_type = "glm4_moe_custom"
    local _, info = hf.from_config(cfg, "g.json")
    assert.are.equal("glm4_moe", info.model_type)
  end)
end)

describe("glm4_moe: bad values exit 2 naming file, key and value", function()
  local cases = {
    { "partial_rotary_factor", 1.5, "g.json: partial_rotary_factor: expected a number in (0, 1] (got 1.5)" },
    { "partial_rotary_factor", "0.5", 'g.json: partial_rotary_factor: expected a number in (0, 1] (got "0.5")' },
    { "n_routed_experts", 0, "g.json: n_routed_experts: expected a positive integer <= 16777216 (got 0)" },
    { "n_shared_experts", -1, "g.json: n_shared_experts: expected an integer in [0, 16777216] (got -1)" },
    { "first_k_dense_replace", 46, "g.json: first_k_dense_replace: no layer would have experts " ..
      "(num_hidden_layers = 46) (got 46)" },
    { "moe_intermediate_size", 1.5, "g.json: moe_intermediate_size: expected a positive integer <= " ..
      "16777216 (got 1.5)" },
    { "num_nextn_predict_layers", "1", 'g.json: num_nextn_predict_layers: expected an integer in ' ..
      '[0, 16777216] (got "1")' },
    { "use_qk_norm", "yes", 'g.json: use_qk_norm: expected true or false (got "yes")' },
    { "attention_bias", 1, "g.json: attention_bias: expected true or false (got 1)" },
    { "routed_scaling_factor", -2.5, "g.json: routed_scaling_factor: expected a finite number >= 0 (got -2.5)" },
    { "norm_topk_prob", "true", 'g.json: norm_topk_prob: expected true or false (got "true")' },
    { "n_group", 3, "g.json: n_group (model.moe_router_num_groups): must divide num_experts = 128 (got 3)" },
    -- the gate divides the experts into n_group groups: 0 was read as 1
    { "n_group", 0, "g.json: n_group: expected a positive integer <= 16777216 (got 0)" },
  }
  for _, case in ipairs(cases) do
    local key, value, want = table.unpack(case)
    it(key .. " = " .. tostring(value), function()
      local cfg = decoded("glm-4.5-air")
      cfg[key] = value
      assert.are.equal(want, err_of(hf.from_config, cfg, "g.json"))
    end)
  end

  it("requires n_shared_experts, which Glm4MoeMoE always builds from", function()
    local cfg = decoded("glm-4.5-air")
    cfg.n_shared_experts = nil
    assert.are.equal("g.json: n_shared_experts: required key is missing (got nothing)",
      err_of(hf.from_config, cfg, "g.json"))
  end)

  it("exits 2 from the binary with the file, key and value", function()
    local dir = H.tmpdir()
    local cfg = decoded("glm-4.5-air")
    cfg.partial_rotary_factor = 2
    local path = dir .. "/glm.json"
    local f = assert(io.open(path, "w"))
    f:write(cjson.encode(cfg))
    f:close()
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:64", "--top-k", "1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": partial_rotary_factor: expected a number in (0, 1] (got 2)", 1, true), err)
  end)
end)

describe("glm4_moe: apsearch run estimates it", function()
  it("GLM-4.5-Air on h100-sxm-80gb:64 has a feasible strategy", function()
    local code, out, err = H.apsearch("run", "--model", "examples/models/glm-4.5-air.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--format", "json", "--quiet")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local best = r.top_k_strategies[1]
    assert.is_not_nil(best, out:sub(1, 400))
    assert.is_true(best.ep_degree >= 1 and #r.stage_summary > 0, out:sub(1, 400))
  end)

  it("writes --rotary-percent 0.5 for Megatron-LM; TorchTitan and MindFormers say they rotate every dim", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/glm-4.5-air.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local function read(name)
      local f = assert(io.open(dir .. "/launch/" .. name))
      local t = f:read("a")
      f:close()
      return t
    end
    assert.truthy(read("rank1_megatron.sh"):find("\n  %-%-rotary%-percent 0%.5\n"))
    assert.truthy(read("rank1_torchtitan.py"):find("NOT EXPRESSIBLE in TorchTitan: partial RoPE (rotary_percent 0.5",
      1, true))
    assert.truthy(read("rank1_mindformers.yaml"):find("NOT EXPRESSIBLE in MindFormers: partial RoPE " ..
      "(rotary_percent 0.5", 1, true))
  end)
end)

--- Parameters of a Llama 4 text config as transformers builds them
-- (modeling_llama4.py @ 000c33fd), from the config fields:
-- Llama4TextAttention q h x a d, k and v h x k d, o a d x h (no biases;
-- the L2 Q/K norm has no weights); two RMSNorms h; MoE layers (every
-- interleave_moe_layer_step-th from step - 1) Llama4TextExperts
-- gate_up_proj E x h x 2 f_e and down_proj E x f_e x h, shared_expert
-- 3 h f_e, router E x h; the other layers Llama4TextMLP 3 h
-- intermediate_size_mlp; embed and lm_head V x h, the final norm h.
local function llama4_counts(t)
  local h, L, a, k, d = t.hidden_size, t.num_hidden_layers, t.num_attention_heads,
    t.num_key_value_heads, t.head_dim
  local V, fe, f, E, step = t.vocab_size, t.intermediate_size, t.intermediate_size_mlp,
    t.num_local_experts, t.interleave_moe_layer_step
  local attn = h * a * d + 2 * h * k * d + a * d * h + 2 * h
  local expert = 3 * h * fe
  local moe_n = L // step
  local moe_layer = attn + E * expert + expert + E * h
  local moe_active = attn + t.num_experts_per_tok * expert + expert + E * h
  local dense_layer = attn + 3 * h * f
  local rest = (L - moe_n) * dense_layer + 2 * V * h + h
  return { total = moe_n * moe_layer + rest, active = moe_n * moe_active + rest }
end

--- Llama4VisionModel and Llama4MultiModalProjector (modeling_llama4.py)
-- from the vision_config fields: patch linear C p^2 h, class embedding h,
-- positions ((image / p)^2 + 1) h, pre/post LayerNorms 4 h; per layer
-- q, k, v, o 4 (h^2 + h), fc1 h f + f, fc2 f h + h, LayerNorms 4 h;
-- adapter fc1 f x projector_input_dim, fc2 projector_output_dim^2;
-- projector vision_output_dim x text hidden.
local function llama4_vision(v, text_h)
  local h, f, p = v.hidden_size, v.intermediate_size, v.patch_size
  local side = v.image_size // p
  local layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 4 * h
  local tower = v.num_channels * p * p * h + h + (side * side + 1) * h + 4 * h + v.num_hidden_layers * layer
    + f * v.projector_input_dim + v.projector_output_dim ^ 2
  return math.tointeger(tower), v.vision_output_dim * text_h
end

describe("llama4: exact parameter counts", function()
  -- meta-llama/Llama-4-Scout-17B-16E (model card: 109B total, 17B active):
  -- text 107,769,861,120, active 17,172,894,720; the vision tower
  -- 850,960,896 and projector 20,971,520 make the card's total with the
  -- text model: 108,641,793,536 ~ 109B.  Active is the text model's (one
  -- routed and the shared expert per layer, embedding and head included).
  it("Scout: text 107,769,861,120 total, 17,172,894,720 active; vision 871,932,416 apart", function()
    local m, info = load("llama-4-scout-17b-16e")
    local cfg = decoded("llama-4-scout-17b-16e")
    local want = llama4_counts(cfg.text_config)
    local tower, proj = llama4_vision(cfg.vision_config, 5120)
    assert.are.same({ 16, 1, 8192, 8192, 16384, 1, 0 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.ffn_hidden_size, m.moe_layer_freq, m.moe_layer_phase })
    assert.are.same({ true, 4, 8192, 36 }, { m.qk_l2_norm, m.nope_layer_period, m.attention_chunk_size,
      m.chunked_attention_layers })
    assert.are.same({ true, true, 0.001 }, { m.moe_router_sigmoid, m.moe_router_input_probs, m.moe_aux_loss_coeff })
    assert.is_nil(m.qk_norm or nil)
    assert.are.same({ "llama3", 16.0, 1.0, 1.0, 8192 }, { m.rope_scaling_type, m.rope_scaling_factor,
      m.low_freq_factor, m.high_freq_factor, m.original_max_position_embeddings })
    local c = core.model_params(m)
    assert.are.equal(107769861120, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(17172894720, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.same({ 850960896, 20971520 }, { tower, proj })
    assert.are.equal(tower + proj, info.vision_params)
    assert.are.equal(109, math.floor((c.total + info.vision_params) / 1e9 + 0.5))
    assert.are.equal(17, c.active // 1e9)
  end)

  -- meta-llama/Llama-4-Maverick-17B-128E (model card: 400B total, 17B
  -- active): 24 dense layers (intermediate_size_mlp 16384) alternate with
  -- 24 MoE layers of 128 experts; text 400,711,848,960, with the vision
  -- tower and projector 401,583,781,376 (the card rounds to 400B: within
  -- 0.4%); active 17,184,691,200.
  it("Maverick: text 400,711,848,960 total, 17,184,691,200 active; MoE on odd layers", function()
    local m, info = load("llama-4-maverick-17b-128e")
    local want = llama4_counts(decoded("llama-4-maverick-17b-128e").text_config)
    assert.are.same({ 128, 2, 1 }, { m.num_experts, m.moe_layer_freq, m.moe_layer_phase })
    assert.is_nil(m.qk_l2_norm) -- use_qk_norm false
    local c = core.model_params(m)
    assert.are.equal(24, c.moe_layers)
    assert.are.equal(400711848960, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(17184691200, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.equal(401583781376, c.total + info.vision_params)
    assert.is_true(math.abs(c.total + info.vision_params - 400e9) / 400e9 < 0.01)
    assert.are.equal(17, c.active // 1e9)
  end)

  it("reads the dropout its text_config states (attention_dropout 0.0: none)", function()
    local _, info = load("llama-4-scout-17b-16e")
    assert.are.same({ false, true }, { info.dropout, info.dropout_stated })
    local cfg = decoded("llama-4-scout-17b-16e")
    cfg.text_config.attention_dropout = 0.1
    _, info = hf.from_config(cfg, "s.json")
    assert.are.same({ true, "attention_dropout", 0.1 }, { info.dropout, info.dropout_key, info.dropout_value })
    cfg.text_config.attention_dropout = 1.5
    assert.are.equal("s.json: text_config: attention_dropout: expected a dropout probability in [0, 1) (got 1.5)",
      err_of(hf.from_config, cfg, "s.json"))
  end)

  it("reads a flat llama4_text config as the same text model, with no vision tower", function()
    local t = decoded("llama-4-scout-17b-16e").text_config
    local m, info = hf.from_config(t, "scout-text.json")
    assert.are.equal(107769861120, core.model_params(m).total)
    assert.is_nil(info.vision_params)
    -- Llama4ForCausalLM in architectures with an unknown model_type
    t.model_type, t.architectures = "llama4_custom", { "Llama4ForCausalLM" }
    local _, i2 = hf.from_config(t, "scout-text.json")
    assert.are.equal("llama4_text", i2.model_type)
  end)

  it("takes explicit moe_layers, no_rope_layers and layer_types, and a null chunk as none", function()
    local t = decoded("llama-4-maverick-17b-128e").text_config
    t.moe_layers = {}
    for i = 0, 47 do if i % 4 == 3 then t.moe_layers[#t.moe_layers + 1] = i end end
    local m = hf.from_config(t, "t.json")
    assert.are.equal(36, #m.moe_dense_layers)
    assert.are.equal(12, core.model_params(m).moe_layers)
    t.moe_layers = nil
    t.no_rope_layers = {}
    for i = 1, 48 do t.no_rope_layers[i] = i % 6 == 0 and 0 or 1 end
    t.layer_types = {}
    for i = 1, 48 do t.layer_types[i] = i % 6 == 0 and "full_attention" or "chunked_attention" end
    m = hf.from_config(t, "t.json")
    assert.are.same({ 6, 40 }, { m.nope_layer_period, m.chunked_attention_layers })
    t.attention_chunk_size = cjson.null
    m = hf.from_config(t, "t.json")
    assert.is_nil(m.attention_chunk_size)
    t.attention_chunk_size, t.no_rope_layers, t.layer_types = nil, nil, nil
    assert.are.equal(8192, hf.from_config(t, "t.json").attention_chunk_size) -- Llama4TextConfig's default
  end)
end)

describe("llama4: bad values exit 2 naming file, key and value", function()
  local T = "s.json: text_config: "
  local cases = {
    { "interleave_moe_layer_step", 0, T .. "interleave_moe_layer_step: expected a positive integer <= 16777216 (got 0)" },
    { "interleave_moe_layer_step", 49, T .. "interleave_moe_layer_step: no layer would have experts " ..
      "(num_hidden_layers = 48) (got 49)" },
    { "intermediate_size_mlp", "16384", T .. 'intermediate_size_mlp: expected a positive integer <= 16777216 (got "16384")' },
    { "num_experts_per_tok", 2, T .. "num_experts_per_tok: expected 1: Llama4TextMoe's score on the expert input " ..
      "is modelled for top-1 routing only (Megatron's moe_apply_probs_on_input asserts it) (got 2)" },
    { "attention_chunk_size", 0, T .. "attention_chunk_size: expected a positive integer <= 16777216 (got 0)" },
    { "use_qk_norm", "yes", T .. 'use_qk_norm: expected true or false (got "yes")' },
    { "router_jitter_noise", -1, T .. "router_jitter_noise: expected a finite number >= 0 (got -1)" },
    { "no_rope_layer_interval", 0, T .. "no_rope_layer_interval: expected a positive integer <= 16777216 (got 0)" },
    { "num_local_experts", true, T .. "num_local_experts: expected a positive integer <= 16777216 (got true)" },
    { "moe_layers", { 48 }, T .. "moe_layers[0]: expected a layer index in [0, 48) (got 48)" },
    { "no_rope_layers", { 1, 0 }, T .. "no_rope_layers: expected an array of at least num_hidden_layers = 48 " ..
      "entries (got {1, 0})" },
    { "layer_types", { "sliding_attention" }, T .. "layer_types: expected an array of num_hidden_layers = 48 " ..
      'entries (got {"sliding_attention"})' },
  }
  for _, case in ipairs(cases) do
    local key, value, want = table.unpack(case)
    it(key .. " = " .. cjson.encode(value), function()
      local cfg = decoded("llama-4-scout-17b-16e")
      cfg.text_config[key] = value
      assert.are.equal(want, err_of(hf.from_config, cfg, "s.json"))
    end)
  end

  it("refuses a no_rope_layers entry other than 0 or 1, and NoPE layers with no period", function()
    local cfg = decoded("llama-4-scout-17b-16e")
    local rope = {}
    for i = 1, 48 do rope[i] = i % 4 == 0 and 0 or 1 end
    rope[3] = 2
    cfg.text_config.no_rope_layers = rope
    assert.are.equal(T .. "no_rope_layers[2]: expected 1 (RoPE) or 0 (NoPE) (got 2)", err_of(hf.from_config, cfg, "s.json"))
    rope[3], rope[5] = 1, 0
    assert.are.equal(T .. "no_rope_layers: NoPE layers that are not every k-th layer are not modelled (the " ..
      "model's nope_layer_period takes a period); NoPE layers (1-based) (got {4, 5, 8, 12, 16, 20, ... 13 in all})",
      err_of(hf.from_config, cfg, "s.json"))
  end)

  it("refuses moe_layers that leave more dense layers than the model holds", function()
    local cfg = decoded("llama-4-maverick-17b-128e")
    cfg.text_config.num_hidden_layers, cfg.text_config.moe_layers = 80, { 0, 1 }
    assert.are.equal(T .. "moe_layers: leaves 78 of 80 layers dense; at most 64 dense layers are modelled " ..
      "(got {0, 1})", err_of(hf.from_config, cfg, "s.json"))
  end)

  it("refuses bad vision_config and text_config values, naming the nested config", function()
    local cfg = decoded("llama-4-scout-17b-16e")
    cfg.vision_config.patch_size = "14"
    assert.are.equal('s.json: vision_config: patch_size: expected a positive integer <= 16777216 (got "14")',
      err_of(hf.from_config, cfg, "s.json"))
    cfg = decoded("llama-4-scout-17b-16e")
    cfg.text_config = 5
    assert.are.equal("s.json: text_config: expected an object (got 5)", err_of(hf.from_config, cfg, "s.json"))
    -- a JSON array decodes to a Lua table too: one with entries is not an object
    cfg = decoded("llama-4-scout-17b-16e")
    cfg.text_config = { 1, 2 }
    assert.are.equal("s.json: text_config: expected an object (got {1, 2})", err_of(hf.from_config, cfg, "s.json"))
    cfg = decoded("llama-4-scout-17b-16e")
    cfg.vision_config = { "a" }
    assert.are.equal('s.json: vision_config: expected an object (got {"a"})', err_of(hf.from_config, cfg, "s.json"))
  end)

  it("exits 2 from the binary with the file, key and value", function()
    local dir = H.tmpdir()
    local cfg = decoded("llama-4-maverick-17b-128e")
    cfg.text_config.interleave_moe_layer_step = -2
    local path = dir .. "/maverick.json"
    local f = assert(io.open(path, "w"))
    f:write(cjson.encode(cfg))
    f:close()
    local code, out, err = H.apsearch("inspect", path)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": text_config: interleave_moe_layer_step: expected a positive integer " ..
      "<= 16777216 (got -2)", 1, true), err)
  end)
end)

describe("llama4: apsearch run estimates it and says what the launch files lack", function()
  it("Scout on h100-sxm-80gb:16 has a feasible strategy", function()
    local code, out, err = H.apsearch("run", "--model", "examples/models/llama-4-scout-17b-16e.json",
      "--cluster", "h100-sxm-80gb:16", "--top-k", "1", "--format", "json", "--quiet")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.is_not_nil(r.top_k_strategies[1], out:sub(1, 400))
    assert.is_true(#r.stage_summary > 0)
  end)

  -- At S = 16384 the 36 chunked layers attend 2 x 8192^2 / 2 / 16384 =
  -- 4096 keys per query against causal's 8192: (36 x 4096 + 12 x 8192) /
  -- 48 = 5120 on average.  Model FLOPs per step fall by 3 (fwd + bwd) x B
  -- x L x 4 S x (8192 - 5120) x a d (src/core/throughput.c flops_step).
  it("prices chunked attention: 3 B L 4 S x 3072 x a d fewer model FLOPs at 16k tokens", function()
    local policy, search = require "apsearch.policy", require "apsearch.search"
    local dir = H.tmpdir()
    local function flops(chunk)
      local cfg = decoded("llama-4-scout-17b-16e")
      cfg.text_config.attention_chunk_size = chunk
      local path = dir .. "/scout.json"
      local f = assert(io.open(path, "w"))
      f:write(cjson.encode(cfg))
      f:close()
      local p = policy.from_table({ model = path, cluster = { device = "h100-sxm-80gb", nodes = 1,
        devices_per_node = 8 }, training = { global_batch_size = 8, seq_length = 16384,
        framework = "megatron" }, top_k = 1 }, ROOT .. "/examples/x.lua")
      local est = search.context(p):estimate({ dp_degree = 8, ep_degree = 8, micro_batch_size = 1 })
      assert.is_true(est.model_flops_per_step > 0, tostring(est.reason))
      return est.model_flops_per_step
    end
    local B, L, S, ad = 8, 48, 16384, 40 * 128
    assert.are.equal(3 * B * L * 4 * S * 3072 * ad, flops(cjson.null) - flops(8192))
  end)

  it("writes the Megatron-LM flags and NOT WRITTEN lines for Scout at 16k tokens #bulk", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/llama-4-scout-17b-16e.json",
      "--cluster", "h100-sxm-80gb:16", "--top-k", "1", "--quiet", "--out", dir,
      "--set", "training.seq_length=16384")
    assert.are.equal(0, code, err)
    local f = assert(io.open(dir .. "/launch/rank1_megatron.sh"))
    local text = f:read("a")
    f:close()
    for _, want in ipairs({ "\n  --no-rope-freq 4\n", "\n  --qk-l2-norm\n", "\n  --moe-apply-probs-on-input\n",
        "\n  --moe-router-score-function sigmoid\n", "\n  --ffn-hidden-size 16384\n",
        "\n  --moe-shared-expert-intermediate-size 8192\n",
        "NOT WRITTEN: L2 Q/K norms on the RoPE layers only",
        "NOT WRITTEN: chunked attention (8192-token chunks on 36 of 48 layers)" }) do
      assert.truthy(text:find(want, 1, true), want)
    end
    assert.is_nil(text:find("--moe-router-enable-expert-bias", 1, true))
    assert.is_nil(text:find("renormalised top-1 routing", 1, true))
  end)
end)
