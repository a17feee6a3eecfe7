-- tests/lua/models_nanochat_spec.lua -- nanochat (model_type nanochat) read
-- as transformers' modular_nanochat.py builds it: six weight matrices a
-- layer and no norm parameter at all.

local hf = require "apsearch.hf"
local core = require "apsearch.core"

-- nanochat d20 (Karpathy's 561M speedrun model) as a public converter's
-- build_config writes it from nanochat's meta (n_embd 1280, n_layer 20,
-- n_head 10, vocab 65536; "verified against nanochat-students/nanochat-d20,
-- which has 20*6+2 = 122" tensors; the index does not name the repository)
local function config(changes)
  local c = { architectures = { "NanoChatForCausalLM" }, model_type = "nanochat", vocab_size = 65536,
    hidden_size = 1280, intermediate_size = 5120, num_hidden_layers = 20, num_attention_heads = 10,
    num_key_value_heads = 10, max_position_embeddings = 2048, hidden_act = "relu2", rms_norm_eps = 1e-6,
    attention_bias = false, tie_word_embeddings = false, final_logit_softcapping = 15.0,
    rope_parameters = { rope_type = "default", rope_theta = 100000.0 } }
  for k, v in pairs(changes or {}) do c[k] = v end
  return c
end

-- q, k, v, o 1280 x 1280; fc1 1280 x 5120, fc2 5120 x 1280; no norm
-- weights (Q/K, layer, embedding and final norms are all weightless);
-- untied embedding and lm_head 65536 x 1280: 20 x 6 + 2 tensors.
local h = 1280
local TOTAL = 20 * (4 * h * h + 2 * h * 5120) + 2 * 65536 * h

describe("nanochat (nanochat)", function()
  it("counts nanochat d20: 560,988,160 parameters (the 561M model)", function()
    assert.are.equal(560988160, TOTAL)
    local m, info = hf.from_config(config(), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ "relu2", true, true, true, true, 15.0, 100000.0 }, { m.mlp, m.qk_norm, m.qk_norm_weightless,
      m.norm_weightless, m.embedding_norm, m.final_logit_softcapping, m.rope_theta })
    assert.truthy(info.notes[1]:find("final_logit_softcapping = 15", 1, true))
  end)

  it("puts attention_bias on q, k, v and o, never on the MLP; a null cap is none", function()
    local m = hf.from_config(config({ attention_bias = true, mlp_bias = true,
      final_logit_softcapping = require("cjson").null }), "t.json")
    assert.are.equal(TOTAL + 20 * 4 * h, core.model_params(m).total)
    assert.is_false(m.mlp_bias)
    assert.is_nil(m.final_logit_softcapping)
    -- NanoChatConfig has no attention soft-capping
    assert.is_nil(hf.from_config(config({ attn_logit_softcapping = 50 }), "t.json").attn_logit_softcapping)
  end)
end)
