-- tests/lua/models_olmo_hybrid_spec.lua -- OLMo Hybrid (model_type
-- olmo_hybrid) read as transformers' modular_olmo_hybrid.py builds it:
-- OLMo 3 attention layers between Gated DeltaNet layers whose separate
-- q/k/v/a/b/g projections hold Qwen3-Next's fused weights.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

-- OlmoHybridConfig's defaults (allenai/Olmo-Hybrid-7B): h 3840, 32 layers
-- (0-based 3, 7, ... full attention: 8 of them), 30 heads of 128; linear
-- key heads 30 of int(0.75 x 3840 / 30) = 96, value heads 30 of 192;
-- MLP 11008; vocab 100352, untied.
local h = 3840
local mlp = 3 * h * 11008
-- attention: q, k, v, o 3840 x 3840; Q and K norms over the projection
-- 2 x 3840; two norms
local attn = 4 * h * h + 2 * h + 2 * h + mlp
-- Gated DeltaNet: q, k 3840 x 2880, v and g 3840 x 5760, a and b 3840 x
-- 30, o 5760 x 3840, the conv over 2 x 2880 + 5760 channels of width 4
-- without bias, A_log and dt_bias 30 each, the gated norm of 192; two
-- norms
local gdn = 2 * h * 2880 + 2 * h * 5760 + 2 * h * 30 + 5760 * h + (2 * 2880 + 5760) * 4 + 2 * 30 + 192 + 2 * h + mlp
local TOTAL = 8 * attn + 24 * gdn + 2 * 100352 * h + h

describe("OLMo Hybrid (olmo_hybrid)", function()
  it("counts OlmoHybridConfig(): 7,430,870,688 parameters", function()
    assert.are.equal(7430870688, TOTAL)
    local m = hf.from_config({ architectures = { "OlmoHybridForCausalLM" }, model_type = "olmo_hybrid" }, "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ "gated_deltanet", 4, 96, 192, "none", true, true, true }, { m.linear_attention,
      m.linear_attention_period, m.linear_key_head_dim, m.linear_value_head_dim, m.position_embedding,
      m.qk_norm_full_width, m.reordered_norm, m.linear_beta_doubled })
  end)

  it("keeps RoPE when rope_parameters gives a base, and a beta in [0, 1] when asked", function()
    local m = hf.from_config({ model_type = "olmo_hybrid", rope_parameters = { rope_type = "default",
      rope_theta = 500000 }, linear_allow_neg_eigval = false }, "t.json")
    assert.are.same({ "rope", 500000 }, { m.position_embedding, m.rope_theta })
    -- OlmoHybridConfig removes head_dim and mlp_bias: a file that has them builds the same model
    local kept = hf.from_config({ model_type = "olmo_hybrid", head_dim = 64, mlp_bias = true }, "t.json")
    assert.are.equal(TOTAL, core.model_params(kept).total)
    assert.is_nil(m.linear_beta_doubled)
  end)

  it("keeps full-attention layers off a period as the layer pattern; refuses a list without both kinds", function()
    local types = {}
    for i = 1, 8 do types[i] = (i == 4 or i == 7) and "full_attention" or "linear_attention" end
    local m = hf.from_config({ model_type = "olmo_hybrid", num_hidden_layers = 8, layer_types = types }, "t.json")
    assert.are.equal("LLLALLAL", m.linear_attention_pattern)
    assert.is_nil(m.linear_attention_period)
    local gdn8 = 2 * h * 2880 + 2 * h * 5760 + 2 * h * 30 + 5760 * h + (2 * 2880 + 5760) * 4 + 2 * 30 + 192 + 2 * h + mlp
    assert.are.equal(2 * attn + 6 * gdn8 + 2 * 100352 * h + h, core.model_params(m).total)
    local all = {}
    for i = 1, 8 do all[i] = "linear_attention" end
    assert.matches("t.json: layer_types: expected at least one linear_attention and one full_attention layer",
      H.err_of(hf.from_config, { model_type = "olmo_hybrid", num_hidden_layers = 8, layer_types = all }, "t.json"),
      1, true)
  end)
end)
