-- tests/lua/models_internlm_spec.lua -- InternLM2 / InternLM2.5
-- (model_type internlm2) and InternLM3 (internlm3), remote code read as
-- it builds the model: modeling_internlm2.py (InternLM2Attention's packed
-- wqkv and wo with config.bias, w1 / w3 / w2 without) and
-- modeling_internlm3.py (q/k/v with qkv_bias, o_proj and the MLP with
-- bias).

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local with = H.with

-- internlm2-7b's config.json keys as a public MLX loader's test copies
-- them from a converted checkpoint ("trimmed to the fields ModelArgs
-- reads"), the same shapes a public size table gives
-- internlm/internlm2.5-7b; the class and activation as the Hub file has.
local INTERNLM2_7B = {
  architectures = { "InternLM2ForCausalLM" }, model_type = "internlm2", hidden_act = "silu",
  hidden_size = 4096, num_hidden_layers = 32, intermediate_size = 14336, num_attention_heads = 32,
  num_key_value_heads = 8, rms_norm_eps = 1e-05, vocab_size = 92544, bias = false,
  max_position_embeddings = 32768, rope_theta = 1000000, rope_scaling = { type = "dynamic", factor = 2.0 },
  tie_word_embeddings = false,
}

-- internlm/internlm3-8b-instruct's config.json as a public MLX Swift
-- port's test copies it ("realConfigJSON"; the index does not name the
-- repository).
local INTERNLM3_8B = {
  architectures = { "InternLM3ForCausalLM" }, model_type = "internlm3", bias = false, head_dim = 128,
  hidden_size = 4096, intermediate_size = 10240, max_position_embeddings = 32768, num_attention_heads = 32,
  num_hidden_layers = 48, num_key_value_heads = 2, qkv_bias = false, rms_norm_eps = 0.00001,
  rope_scaling = { factor = 6.0, rope_type = "dynamic" }, rope_theta = 50000000, tie_word_embeddings = false,
  vocab_size = 128512,
}

describe("InternLM2 (internlm2)", function()
  -- wqkv 4096 x (32 + 2 x 8) x 128, wo 4096 x 4096; w1, w3, w2 of 14336;
  -- two norms; untied tok_embeddings and output 92544 x 4096; the final norm
  local h, V = 4096, 92544
  local layer = h * 48 * 128 + h * h + 3 * h * 14336 + 2 * h
  local TOTAL = 32 * layer + 2 * V * h + h

  it("counts InternLM2.5-7B: 7,737,708,544 parameters (the Hub's 7.74B)", function()
    assert.are.equal(7737708544, TOTAL)
    local m = hf.from_config(INTERNLM2_7B, "i2.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ false, false, false, 128, 8 }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias, m.head_dim,
      m.num_query_groups })
  end)

  it("puts config.bias on wqkv and wo only, InternLM2Config's default true; ignores a head_dim key", function()
    local c = with(INTERNLM2_7B, { head_dim = 64 })
    c.bias = nil
    local m = hf.from_config(c, "i2.json")
    assert.are.same({ true, true, false, 128 }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias, m.head_dim })
    assert.are.equal(TOTAL + 32 * (48 * 128 + h), core.model_params(m).total)
  end)

  it("refuses a width its attention cannot split, naming the key", function()
    assert.matches("i2.json: num_attention_heads: hidden_size 4096 is not a multiple of it",
      H.err_of(hf.from_config, with(INTERNLM2_7B, { num_attention_heads = 48, num_key_value_heads = 8 }), "i2.json"),
      1, true)
  end)
end)

describe("InternLM3 (internlm3)", function()
  -- q 4096 x 4096, k and v 4096 x 256, o 4096 x 4096; the MLP of 10240;
  -- two norms; untied embed_tokens and lm_head 128512 x 4096; the final norm
  local h, V = 4096, 128512
  local layer = 2 * h * h + 2 * h * 256 + 3 * h * 10240 + 2 * h
  local TOTAL = 48 * layer + 2 * V * h + h

  it("counts InternLM3-8B: 8,804,241,408 parameters (the Hub's 8.8B)", function()
    assert.are.equal(8804241408, TOTAL)
    local m = hf.from_config(INTERNLM3_8B, "i3.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
  end)

  it("reads qkv_bias for q / k / v and bias for o_proj and the MLP", function()
    local m = hf.from_config(with(INTERNLM3_8B, { qkv_bias = true }), "i3.json")
    assert.are.same({ true, false, false }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias })
    assert.are.equal(TOTAL + 48 * (h + 2 * 256), core.model_params(m).total)
    m = hf.from_config(with(INTERNLM3_8B, { bias = true }), "i3.json")
    assert.are.same({ false, true, true }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias })
    assert.are.equal(TOTAL + 48 * (h + 2 * 10240 + h), core.model_params(m).total)
  end)

  it("is read by its class when the model_type is another's", function()
    assert.are.same({ "internlm3", "InternLM3ForCausalLM" },
      { hf.model_type_of({ model_type = "internlm3_text", architectures = { "InternLM3ForCausalLM" } }) })
  end)
end)
