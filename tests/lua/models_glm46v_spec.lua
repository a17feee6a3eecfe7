-- tests/lua/models_glm46v_spec.lua -- GLM-4.6V (model_type glm46v): a
-- wrapper whose text model is its text_config's own model_type (default
-- glm4v_text), as Glm46VConfig builds it (transformers modular_glm46v.py
-- @ 020a37d2).

local hf = require "apsearch.hf"
local core = require "apsearch.core"

-- GLM-4.1V / GLM-4.6V-Flash's text shapes (the GLM-4-9B layer: h 4096, 40
-- layers, 32 heads of 128, 2 KV heads, q/k/v biases, MLP 13696, four norms,
-- vocab 151552, untied): 9,400,279,040 (tests/lua/models_2026_spec.lua).
local function text(changes)
  local t = { head_dim = 128, hidden_act = "silu", hidden_size = 4096, intermediate_size = 13696,
    num_attention_heads = 32, num_hidden_layers = 40, num_key_value_heads = 2, partial_rotary_factor = 0.5,
    rms_norm_eps = 1e-05, attention_bias = true, tie_word_embeddings = false, vocab_size = 151552 }
  for k, v in pairs(changes or {}) do t[k] = v end
  return t
end

describe("GLM-4.6V (glm46v)", function()
  it("reads a text_config without a model_type as glm4v_text", function()
    local m, info = hf.from_config({ model_type = "glm46v", text_config = text() }, "g.json")
    assert.are.equal(9400279040, core.model_params(m).total)
    assert.truthy(info.notes[1]:find("(text_config, model_type glm4v_text)", 1, true))
  end)

  it("reads the text_config's own type: GLM-4.6V's MoE text model", function()
    local t = text({ model_type = "glm4v_moe_text", num_hidden_layers = 46, num_attention_heads = 96,
      num_key_value_heads = 8, intermediate_size = 10944, moe_intermediate_size = 1408, n_routed_experts = 128,
      n_shared_experts = 1, num_experts_per_tok = 8, first_k_dense_replace = 1, routed_scaling_factor = 1.0,
      norm_topk_prob = true, n_group = 1, topk_group = 1 })
    local direct = core.model_params((hf.from_config(t, "t.json")))
    local wrapped = core.model_params((hf.from_config({ model_type = "glm46v", text_config = t,
      vision_config = { model_type = "glm4v_moe_vision" } }, "g.json")))
    assert.are.same({ direct.total, direct.active }, { wrapped.total, wrapped.active })
  end)
end)
