-- tests/lua/models_youtu_spec.lua -- Youtu-LLM (model_type youtu, Tencent)
-- read as transformers' modular_youtu.py builds it: a dense Llama layer
-- with DeepSeek-V3's multi-head latent attention, tied embeddings.

local hf = require "apsearch.hf"
local core = require "apsearch.core"

-- tencent/Youtu-LLM-2B's keys as a public MLX Swift port's test copies them
-- ("tencentConfigJSON"; the index does not name its repository), typed;
-- YoutuConfig's defaults agree on every shape.
local function config(changes)
  local c = { model_type = "youtu", hidden_size = 2048, intermediate_size = 6144, kv_lora_rank = 512,
    num_attention_heads = 16, num_hidden_layers = 32, num_key_value_heads = 16, q_lora_rank = 1536,
    qk_nope_head_dim = 128, qk_rope_head_dim = 64, tie_word_embeddings = true, v_head_dim = 128,
    vocab_size = 128256, rope_parameters = { rope_theta = 1600000, rope_type = "default" } }
  for k, v in pairs(changes or {}) do c[k] = v end
  return c
end

-- h 2048, 32 layers, 16 heads: q_a_proj 2048 x 1536, its norm 1536,
-- q_b_proj 1536 x 16 x (128 + 64), kv_a_proj_with_mqa 2048 x (512 + 64),
-- its norm 512, kv_b_proj 512 x 16 x (128 + 128), o_proj 16 x 128 x 2048;
-- a SwiGLU MLP of 6144; two norms of 2048; the tied embedding 128256 x
-- 2048; the final norm.  The name: 2B.
local h = 2048
local attn = h * 1536 + 1536 + 1536 * 16 * 192 + h * 576 + 512 + 512 * 16 * 256 + 16 * 128 * h
local layer = attn + 3 * h * 6144 + 2 * h
local TOTAL = 32 * layer + 128256 * h + h

describe("Youtu-LLM (youtu)", function()
  it("counts Youtu-LLM-2B: 1,961,560,064 parameters", function()
    assert.are.equal(1961560064, TOTAL)
    local m = hf.from_config(config(), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ 1536, 512, 192, true, 1600000 }, { m.q_lora_rank, m.kv_lora_rank, m.head_dim,
      m.tie_word_embeddings, m.rope_theta })
    assert.is_nil(m.num_experts)
    -- YoutuConfig's defaults are the same model
    local d = hf.from_config({ model_type = "youtu" }, "d.json")
    assert.are.equal(TOTAL, core.model_params(d).total)
  end)

  it("takes a null q_lora_rank as one query projection, and an untied head", function()
    local m = hf.from_config(config({ q_lora_rank = require("cjson").null, tie_word_embeddings = false }), "t.json")
    local q_proj = h * 16 * 192 - (h * 1536 + 1536 + 1536 * 16 * 192)
    assert.are.equal(TOTAL + 32 * q_proj + 128256 * h, core.model_params(m).total)
  end)

  it("reads a config that still has DeepSeek-V3's MoE keys without them (YoutuConfig removes them)", function()
    local m = hf.from_config(config({ n_routed_experts = 64, num_experts_per_tok = 8, moe_intermediate_size = 1408,
      n_shared_experts = 2 }), "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.is_nil(m.num_experts)
  end)
end)
