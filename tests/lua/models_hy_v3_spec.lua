-- tests/lua/models_hy_v3_spec.lua -- Tencent Hy3 / Hy3-preview (`hy_v3`,
-- HYV3ForCausalLM) read from its config.json (examples/models/hy3.json):
-- exact total, active and MTP counts computed here module by module from
-- transformers' modular_hy_v3.py @ 3c2ba330 (and Megatron-Bridge's
-- hy_v3_bridge.py @ 067f987d for the MTP layer), against Tencent's
-- published "295B total, 21B activated, 3.8B MTP"; the router and layer
-- settings; the values the classes do not implement, refused.

local core = require "apsearch.core"
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local load, decoded, err_of, with = H.example_model, H.example_config, H.err_of, H.with

--- Hy3's parameters as transformers builds them (modular_hy_v3.py):
-- HYV3Attention (ApertusAttention) q h x a d, k and v h x kv d, o a d x h,
-- no biases, q_norm and k_norm RMSNorm(d); two RMSNorms h per layer; the
-- dense layer HYV3MLP 3 h f; an MoE layer the router E x h, the
-- e_score_correction_bias E, E experts of 3 h f_e (top-k active) and the
-- shared HYV3MLP 3 h (f_e n_shared); untied embed and lm_head V x h; the
-- final norm h.  The MTP layer (Megatron-Bridge's mapping): one MoE decoder
-- layer, enorm, hnorm, final_layernorm (h each) and eh_proj 2h x h.
local function hy3_counts(c)
  local h, a, kv, d = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim
  local E, k = c.num_experts, c.num_experts_per_tok
  local expert = 3 * h * c.moe_intermediate_size
  local attn = 2 * h * a * d + 2 * h * kv * d + 2 * d + 2 * h
  local router = E * h + E
  local shared = c.num_shared_experts * expert
  local moe, moe_active = attn + router + E * expert + shared, attn + router + k * expert + shared
  local dense = attn + 3 * h * c.intermediate_size
  local tail = 2 * c.vocab_size * h + h
  local L = c.num_hidden_layers
  return { per_moe = moe, total = dense + (L - 1) * moe + tail,
           active = dense + (L - 1) * moe_active + tail, mtp = moe + 3 * h + 2 * h * h }
end

describe("Hy3 (hy_v3)", function()
  -- By hand at Hy3's shapes (h 4096, 64 heads and 8 KV heads of 128,
  -- intermediate 13,312, 192 experts of 1,536, top 8, 1 shared, V 120,832,
  -- 80 layers, the first dense): attention 75,497,472 + norms 8,448 =
  -- 75,505,920; the MoE layer adds router 786,432 + bias 192 + experts
  -- 3,623,878,656 + shared 18,874,368 = 3,719,045,568; the dense layer
  -- adds 163,577,856 (239,083,776); embed + lm_head 989,855,744, norm
  -- 4,096: 295,033,543,488 total; active 20,675,730,240; the MTP layer
  -- 3,719,045,568 + 12,288 + 33,554,432 = 3,752,612,288.
  it("counts 295,033,543,488 total, 20,675,730,240 active, 3,752,612,288 MTP", function()
    local m = load("hy3")
    local want = hy3_counts(decoded("hy3"))
    assert.are.same({ 3719045568, 295033543488, 20675730240, 3752612288 },
      { want.per_moe, want.total, want.active, want.mtp })
    local c = core.model_params(m)
    assert.are.equal(want.per_moe, c.per_moe_layer)
    assert.are.equal(want.total, c.total)
    assert.are.equal(want.active, c.active)
    assert.are.equal(want.mtp, c.mtp)
    -- Tencent's card: 295B total, 21B activated, a 3.8B MTP layer
    assert.is_true(H.near_card(c.total, 295e9, H.CARD_ROUNDING))
    assert.is_true(H.near_card(c.active, 21e9, H.CARD_ROUNDING_2))
    assert.is_true(H.near_card(c.mtp, 3.8e9, H.CARD_ROUNDING_2))
  end)

  it("reads the router, the dense layer, Q/K norms and the MTP layer", function()
    local m, info = load("hy3")
    assert.is_true(m.qk_norm and m.moe_router_bias and m.moe_router_fp32)
    assert.is_nil(m.moe_router_pre_softmax) -- HYV3TopKRouter renormalises the top-k
    assert.are.equal(2.826, m.moe_router_topk_scaling_factor)
    assert.are.equal(1, m.moe_first_dense_layers)
    assert.are.equal(1536, m.shared_expert_ffn_hidden_size)
    assert.are.equal(11158840.0, m.rope_theta)
    assert.is_true(m.mtp_layers == 1 and m.mtp_shared_embeddings)
    local said = false
    for _, n in ipairs(info.notes) do said = said or n:find("enable_lm_head_fp32", 1, true) ~= nil end
    assert.is_true(said)
  end)

  it("takes HYV3Config's defaults and reads mlp_layer_types", function()
    local minimal = { model_type = "hy_v3", num_hidden_layers = 4 }
    local m = hf.from_config(minimal, "hy.json")
    assert.are.same({ 4096, 64, 8, 128, 192, 8, 1536, 1 },
      { m.hidden_size, m.num_attention_heads, m.num_query_groups, m.head_dim, m.num_experts,
        m.experts_per_token, m.moe_ffn_hidden_size, m.moe_first_dense_layers })
    assert.are.equal(11158840.0, m.rope_theta) -- HYV3Config.default_theta
    local alt = hf.from_config(with(minimal, { mlp_layer_types = { "dense", "sparse", "dense", "sparse" } }), "hy.json")
    assert.are.same({ 0, 2 }, alt.moe_dense_layers)
  end)

  -- HYV3TopKRouter has no expert groups and no auxiliary loss: DeepSeek's
  -- keys for them change nothing (transformers ignores them)
  it("ignores DeepSeek's router keys HYV3TopKRouter does not read", function()
    local m = hf.from_config(with(decoded("hy3"), { n_group = 8, topk_group = 4, aux_loss_alpha = 0.01,
      scoring_func = "softmax" }), "hy3.json")
    assert.is_nil(m.moe_router_num_groups)
    assert.is_nil(m.moe_aux_loss_coeff)
    assert.are.equal(2.826, m.moe_router_topk_scaling_factor)
  end)

  it("refuses what HYV3's classes do not build, naming the key", function()
    local base = decoded("hy3")
    for key, v in pairs({ qk_norm = false, route_norm = false, moe_router_use_sigmoid = false,
                          moe_router_enable_expert_bias = false, attention_bias = true, mlp_bias = true }) do
      local e = err_of(hf.from_config, with(base, { [key] = v }), "hy3.json")
      assert.is_truthy(e:find("NotImplemented: hy3.json: " .. key .. ":", 1, true), e)
    end
    local e = err_of(hf.from_config, with(base, { expert_hidden_dim = 1024 }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: expert_hidden_dim: expected moe_intermediate_size = 1536", 1, true), e)
    -- transformers builds the dense layers of mlp_layer_types (default the
    -- first), not first_k_dense_replace's
    e = err_of(hf.from_config, with(base, { first_k_dense_replace = 3 }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: first_k_dense_replace: expected 1", 1, true), e)
    e = err_of(hf.from_config, with(base, { num_experts_per_tok = 500 }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: num_experts_per_tok (model.experts_per_token): 500 exceeds num_experts = 192",
      1, true), e)
    e = err_of(hf.from_config, with(base, { router_scaling_factor = -1 }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: router_scaling_factor: expected a finite number >= 0 (got -1)", 1, true), e)
    -- transformers' HYV3MoE would build a shared MLP of intermediate_size
    -- (HYV3MLP's `intermediate_size or config.intermediate_size`), Megatron-
    -- Bridge none
    e = err_of(hf.from_config, with(base, { num_shared_experts = 0 }), "hy3.json")
    assert.is_truthy(e:find("NotImplemented: hy3.json: num_shared_experts: no shared expert", 1, true), e)
    -- HYV3Config is a strict dataclass: a null int is not its default
    e = err_of(hf.from_config, with(base, { num_experts = cjson.null }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: num_experts: null is not a value here (HYV3Config", 1, true), e)
    -- dense layers that do not lead: no first_k_dense_replace says them
    local types = {}
    for i = 1, 80 do types[i] = (i == 1 or i == 40) and "dense" or "sparse" end
    e = err_of(hf.from_config, with(base, { mlp_layer_types = types }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: first_k_dense_replace: cannot say the dense layers of mlp_layer_types", 1,
      true), e)
    e = err_of(hf.from_config, with(base, { num_hidden_layers = 1 }), "hy3.json")
    assert.is_truthy(e:find("hy3.json: num_hidden_layers: no layer would have experts", 1, true), e)
    -- HYV3Config's attribute_map: num_local_experts is num_experts
    local aliased = with(base, { num_local_experts = 0 })
    aliased.num_experts = nil
    e = err_of(hf.from_config, aliased, "hy3.json")
    assert.is_truthy(e:find("hy3.json: num_experts: expected a positive integer", 1, true), e)
  end)

  -- the import's note (stderr) is kept in result.json's inputs.notes and
  -- shown in the report beside the inputs
  it("keeps the import's notes in result.json and report.html", function()
    local dir = H.tmpdir() .. "/out"
    local code, _, err = H.apsearch("run", "--model", "examples/models/hy3.json", "--cluster", "h100-sxm-80gb:16",
      "--top-k", "1", "--candidates", "none", "--out", dir, "--quiet")
    assert.are.equal(0, code, err)
    local notes = H.read_json(dir .. "/result.json").inputs.notes
    local said = false
    for _, n in ipairs(notes) do said = said or n:find("enable_lm_head_fp32: read by neither", 1, true) ~= nil end
    assert.is_true(said)
    local html = H.read(dir .. "/report.html")
    assert.truthy(html:find('<div class="notice" id="notes"><b>Notes on the inputs</b>', 1, true))
    assert.truthy(html:find("enable_lm_head_fp32: read by neither", 1, true))
  end)
end)
