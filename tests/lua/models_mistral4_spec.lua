-- tests/lua/models_mistral4_spec.lua -- Mistral Small 4 (model_type
-- mistral4, and the mistral3 wrapper around it) read as transformers'
-- Mistral4Config and modeling_mistral4.py build it: the count of
-- Mistral4Config() (the Mistral-Small-4-119B-2603 checkpoint's shapes)
-- module by module, and what each router key sets.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"
local cjson_null = require("cjson").null

local function config(extra)
  local c = { architectures = { "Mistral4ForCausalLM" }, model_type = "mistral4" }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

-- Mistral4Config's defaults: h 4096, 36 layers, 32 heads; q_a_proj
-- 4096 x 1024, its norm 1024, q_b_proj 1024 x 32 x (64 + 64),
-- kv_a_proj_with_mqa 4096 x (256 + 64), its norm 256, kv_b_proj 256 x 32
-- x (64 + 128), o_proj 32 x 128 x 4096; two norms of 4096 a layer; every
-- layer 128 experts of 3 x 4096 x 2048 (top 4), one shared expert of
-- 2048, the router 128 x 4096 (no bias); untied embedding and lm_head
-- 131072 x 4096; the final norm.  The card: 119B.
local h = 4096
local attn = h * 1024 + 1024 + 1024 * 32 * 128 + h * 320 + 256 + 256 * 32 * 192 + 32 * 128 * h
local expert = 3 * h * 2048
local layer = attn + 2 * h + 128 * expert + expert + 128 * h
local TOTAL = 36 * layer + 2 * 131072 * h + h
local ACTIVE = TOTAL - 36 * 124 * expert

describe("Mistral Small 4 (mistral4)", function()
  it("counts Mistral4Config(): 118,972,826,624 parameters, 6,632,588,288 active", function()
    assert.are.equal(118972826624, TOTAL)
    assert.are.equal(6632588288, ACTIVE)
    local m = hf.from_config(config(), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(TOTAL, pc.total)
    assert.are.equal(ACTIVE, pc.active)
  end)

  it("reads the mistral3 wrapper's text_config as the same model", function()
    local w = { architectures = { "Mistral3ForConditionalGeneration" }, model_type = "mistral3",
      text_config = { model_type = "mistral4" }, vision_config = { model_type = "pixtral" } }
    local pc = core.model_params(hf.from_config(w, "w.json"))
    assert.are.equal(TOTAL, pc.total)
    assert.are.equal(ACTIVE, pc.active)
  end)

  it("routes with a softmax and no expert bias; groups scored by their top-2 sum", function()
    local m = hf.from_config(config({ n_group = 8, topk_group = 4, routed_scaling_factor = 2.5 }), "t.json")
    assert.are.same({ 8, 4, 2, 2.5 }, { m.moe_router_num_groups, m.moe_router_group_topk,
      m.moe_router_group_score_topk, m.moe_router_topk_scaling_factor })
    assert.is_nil(m.moe_router_bias)
    assert.is_nil(m.moe_router_pre_softmax) -- norm_topk_prob defaults to true
    local raw = hf.from_config(config({ norm_topk_prob = false }), "t.json")
    assert.is_true(raw.moe_router_pre_softmax)
  end)

  it("ignores the keys Mistral4Config does not read (DeepSeek's MTP, layer frequency, scoring)", function()
    local m = hf.from_config(config({ num_nextn_predict_layers = 1, moe_layer_freq = 2,
      scoring_func = "sigmoid", topk_method = "noaux_tc" }), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.is_nil(m.mtp_layers)
  end)

  it("takes a null q_lora_rank as q_proj and dense first layers of intermediate_size", function()
    local m = hf.from_config(config({ q_lora_rank = cjson_null, first_k_dense_replace = 1 }), "t.json")
    local q_proj = h * 32 * 128 - (h * 1024 + 1024 + 1024 * 32 * 128)
    local dense = 3 * h * 12288 - (129 * expert + 128 * h)
    assert.are.equal(TOTAL + 36 * q_proj + dense, core.model_params(m).total)
  end)

  it("refuses attention biases and a layout with no MoE layer, naming the key", function()
    assert.matches("attention_bias = true with multi-head latent attention is not modelled",
      H.err_of(hf.from_config, config({ attention_bias = true }), "t.json"), 1, true)
    assert.matches("t.json: first_k_dense_replace: no layer would have experts",
      H.err_of(hf.from_config, config({ first_k_dense_replace = 36 }), "t.json"), 1, true)
  end)

  it("reads num_local_experts as n_routed_experts (Mistral4Config's attribute_map)", function()
    local m = hf.from_config(config({ num_local_experts = 64 }), "t.json")
    assert.are.equal(TOTAL - 36 * 64 * (expert + h), core.model_params(m).total)
    assert.are.equal(60981330944, TOTAL - 36 * 64 * (expert + h))
  end)

  it("takes Mistral4Config's YaRN when the config gives no RoPE, and notes the Llama-4 query scale", function()
    local m, info = hf.from_config(config(), "t.json")
    assert.are.same({ "yarn", 128.0, 8192, 10000.0, 1.0, 1.0 }, { m.rope_scaling_type, m.rope_scaling_factor,
      m.original_max_position_embeddings, m.rope_theta, m.yarn_mscale, m.yarn_mscale_all_dim })
    assert.truthy(info.notes[1]:find("llama_4_scaling_beta 0.1 scales the queries by position", 1, true))
  end)
end)
