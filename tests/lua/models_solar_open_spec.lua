-- tests/lua/models_solar_open_spec.lua -- Solar Open (model_type
-- solar_open, Upstage) read as transformers' SolarOpenConfig and
-- modular_solar_open.py build it: the count of SolarOpenConfig() (the
-- Solar-Open-100B checkpoint's shapes) module by module, and the keys the
-- class removes.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local function config(extra)
  local c = { architectures = { "SolarOpenForCausalLM" }, model_type = "solar_open" }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

-- SolarOpenConfig's defaults: h 4096, 48 layers, 64 heads of 128, 8 KV
-- heads: q and o 4096 x 8192 each, k and v 4096 x 1024 each (no biases);
-- two norms of 4096; every layer 128 experts of 3 x 4096 x 1280 (top 8),
-- one shared expert of 1280, the router 128 x 4096 and its
-- e_score_correction_bias 128; untied embedding and lm_head 196608 x
-- 4096; the final norm.  The card: 102.6B total, 12B active.
local h = 4096
local expert = 3 * h * 1280
local layer = 2 * h * 8192 + 2 * h * 1024 + 2 * h + 129 * expert + 128 * h + 128
local TOTAL = 48 * layer + 2 * 196608 * h + h
local ACTIVE = TOTAL - 48 * 120 * expert

describe("Solar Open (solar_open)", function()
  it("counts SolarOpenConfig(): 102,651,799,552 parameters, 12,054,833,152 active", function()
    assert.are.equal(102651799552, TOTAL)
    assert.are.equal(12054833152, ACTIVE)
    local m = hf.from_config(config(), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(TOTAL, pc.total)
    assert.are.equal(ACTIVE, pc.active)
    assert.are.same({ true, false, 1e6 }, { m.moe_router_bias, m.qk_norm, m.rope_theta })
    assert.is_nil(m.rotary_percent) -- RoPE on every dimension, not GLM's half
  end)

  it("ignores the keys SolarOpenConfig removes: every layer has experts, no Q/K norms", function()
    local m = hf.from_config(config({ first_k_dense_replace = 3, intermediate_size = 10240, use_qk_norm = true,
      num_nextn_predict_layers = 1 }), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.is_nil(m.moe_first_dense_layers)
    assert.are.same({ false, 1280 }, { m.qk_norm, m.ffn_hidden_size })
  end)

  it("puts attention_bias on q, k and v only; a config's rope base wins", function()
    local m = hf.from_config(config({ attention_bias = true, rope_theta = 5e5 }), "t.json")
    assert.are.equal(TOTAL + 48 * (8192 + 2 * 1024), core.model_params(m).total)
    assert.are.same({ true, false, 5e5 }, { m.qkv_bias, m.attn_out_bias, m.rope_theta })
  end)

  it("refuses a non-SiLU activation, naming the key", function()
    assert.matches("t.json: hidden_act", H.err_of(hf.from_config, config({ hidden_act = "gelu" }), "t.json"), 1, true)
  end)

  it("ignores scoring_func (its router is always sigmoid) and reads num_local_experts as n_routed_experts", function()
    local m = hf.from_config(config({ scoring_func = "softmax", num_local_experts = 64 }), "t.json")
    assert.are.equal(TOTAL - 48 * 64 * (expert + h + 1), core.model_params(m).total)
    assert.is_true(m.moe_router_bias)
  end)
end)
