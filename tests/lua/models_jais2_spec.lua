-- tests/lua/models_jais2_spec.lua -- Jais 2 (model_type jais2) read as
-- transformers' modular_jais2.py builds it: the count of Jais2Config()
-- (inceptionai/Jais-2-8B-Chat's shapes) module by module, and its keys.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local function config(changes)
  local c = { architectures = { "Jais2ForCausalLM" }, model_type = "jais2" }
  for k, v in pairs(changes or {}) do c[k] = v end
  return c
end

-- Jais2Config's defaults: h 3328, 32 layers, 26 heads of 128, as many KV
-- heads; q, k, v, o 3328 x 3328 with biases; NemotronMLP up 3328 x 26624
-- and down 26624 x 3328 with biases; two LayerNorms (weight and bias) a
-- layer; untied embedding and lm_head 150272 x 3328; the final LayerNorm.
-- The name: 8B.
local h, f = 3328, 26624
local attn = 4 * h * h + 4 * h
local mlp = 2 * h * f + f + h
local layer = attn + mlp + 2 * 2 * h
local TOTAL = 32 * layer + 2 * 150272 * h + 2 * h

describe("Jais 2 (jais2)", function()
  it("counts Jais2Config(): 8,090,401,280 parameters", function()
    assert.are.equal(8090401280, TOTAL)
    local m = hf.from_config(config(), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ "relu2", "layernorm", true, true, true, true }, { m.mlp, m.norm, m.norm_bias,
      m.qkv_bias, m.attn_out_bias, m.mlp_bias })
    assert.is_nil(m.rope_theta) -- Jais2Config has no base of its own: PreTrainedConfig's 10000
  end)

  it("drops the biases the config turns off and reads grouped KV heads", function()
    local m = hf.from_config(config({ attention_bias = false, mlp_bias = false, num_key_value_heads = 2 }), "t.json")
    local kv = 2 * h * (h - 2 * 128) -- k and v shrink from 26 heads to 2
    assert.are.equal(TOTAL - 32 * (4 * h + f + h + kv), core.model_params(m).total)
  end)

  it("refuses another activation, naming the key", function()
    assert.matches("t.json: hidden_act", H.err_of(hf.from_config, config({ hidden_act = "silu" }), "t.json"), 1, true)
  end)
end)
