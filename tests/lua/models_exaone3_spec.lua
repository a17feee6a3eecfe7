-- tests/lua/models_exaone3_spec.lua -- EXAONE 3.0 / 3.5 (model_type
-- exaone, remote code modeling_exaone.py): Llama's layer under GPT-2's
-- names, keyed num_layers and activation_function.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

-- LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct's ExaoneConfig as a public model
-- note prints it (with the module tree: lm_head Linear(4096, 102400,
-- bias=False), the MLP's c_fc_0 / c_fc_1 / c_proj without biases).
-- EXAONE-3.5-7.8B has the same shapes (a public preflight manifest's
-- config projection of its MLX copy) with max_position_embeddings 32768.
local EXAONE_30_78B = {
  activation_function = "silu", architectures = { "ExaoneForCausalLM" }, attention_dropout = 0.0,
  bos_token_id = 1, embed_dropout = 0.0, eos_token_id = 361, hidden_size = 4096, initializer_range = 0.02,
  intermediate_size = 14336, layer_norm_epsilon = 1e-05, max_position_embeddings = 4096, model_type = "exaone",
  num_attention_heads = 32, num_key_value_heads = 8, num_layers = 32, pad_token_id = 0,
  rope_theta = 500000.0, tie_word_embeddings = false, torch_dtype = "bfloat16", use_cache = true,
  vocab_size = 102400,
}

local function with(extra) return H.with(EXAONE_30_78B, extra) end

describe("EXAONE 3.x (exaone)", function()
  -- q, out 4096 x 4096; k, v 4096 x 1024; c_fc_0, c_fc_1, c_proj of
  -- 14336; ln_1, ln_2; untied wte and lm_head 102400 x 4096; ln_f
  local h, V = 4096, 102400
  local layer = 2 * h * h + 2 * h * 1024 + 3 * h * 14336 + 2 * h
  local TOTAL = 32 * layer + 2 * V * h + h

  it("counts EXAONE-3.0-7.8B: 7,818,448,896 parameters (its name's 7.8B)", function()
    assert.are.equal(7818448896, TOTAL)
    local m = hf.from_config(with(), "e.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ 32, false, false, false }, { m.num_layers, m.qkv_bias, m.attn_out_bias, m.mlp_bias })
  end)

  it("ties wte and lm_head when the config says so", function()
    assert.are.equal(TOTAL - V * h, core.model_params(hf.from_config(with({ tie_word_embeddings = true }),
      "e.json")).total)
  end)

  it("refuses a missing num_layers, tie_word_embeddings or a non-SiLU activation, naming the key", function()
    local c = with()
    c.num_layers = nil
    assert.matches("e.json: num_layers: required key is missing", H.err_of(hf.from_config, c, "e.json"), 1, true)
    c = with()
    c.tie_word_embeddings = nil
    assert.matches("e.json: tie_word_embeddings: required key is missing", H.err_of(hf.from_config, c, "e.json"),
      1, true)
    assert.matches("e.json: activation_function: expected \"silu\"",
      H.err_of(hf.from_config, with({ activation_function = "gelu" }), "e.json"),
      1, true)
  end)
end)
