-- tests/lua/models_afmoe_spec.lua -- AFMoE (Arcee Trinity, model_type
-- afmoe) read as transformers' AfmoeConfig and modular_afmoe.py build it:
-- the count of Trinity Nano module by module, and what each key sets.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

-- arcee-ai/Trinity-Nano-Preview's config.json keys, typed: a public
-- Neuron port's test copies them ("matches arcee-ai/Trinity-Nano-Preview/
-- config.json"; the index does not name its repository), as an MLX
-- loader's test and transformers' AfmoeConfig docstring agree on the shapes
local function config()
  return {
    architectures = { "AfmoeForCausalLM" }, model_type = "afmoe", global_attn_every_n_layers = 4, head_dim = 128,
    hidden_act = "silu", hidden_size = 1024, intermediate_size = 3072, max_position_embeddings = 131072,
    moe_intermediate_size = 256, mup_enabled = true, n_group = 1, num_attention_heads = 8, num_dense_layers = 2,
    num_expert_groups = 1, num_experts = 128, num_experts_per_tok = 8, num_hidden_layers = 56,
    num_key_value_heads = 2, num_limited_groups = 1, num_shared_experts = 1, rms_norm_eps = 1e-5,
    rope_theta = 10000, route_norm = true, route_scale = 2.826, score_func = "sigmoid", sliding_window = 2048,
    tie_word_embeddings = false, topk_group = 1, vocab_size = 200192,
  }
end

describe("AFMoE (Arcee Trinity)", function()
  -- h 1024, 56 layers: q 1024 x 8 x 128, k and v 1024 x 2 x 128 each, o
  -- 1024 x 1024, the output gate's gate_proj 1024 x 1024, per-head Q/K
  -- norms 2 x 128; four norms of 1024 a layer; layers 1-2 a SwiGLU MLP of
  -- 3072; the other 54 128 experts of 3 x 1024 x 256 (top 8), one shared
  -- expert of 256, the router 128 x 1024 and its expert_bias 128; untied
  -- embedding and lm_head 200192 x 1024; the final norm.  The card: 6B
  -- total, 1B active.
  it("counts Trinity Nano: 6,120,003,328 parameters, 1,023,923,968 active", function()
    local h = 1024
    local layer = 3 * h * h + 2 * h * 256 + 2 * 128 + 4 * h
    local expert = 3 * h * 256
    local moe = 128 * expert + expert + 128 * h + 128
    local total = 56 * layer + 2 * 3 * h * 3072 + 54 * moe + 2 * 200192 * h + h
    local active = total - 54 * 120 * expert
    assert.are.equal(6120003328, total)
    assert.are.equal(1023923968, active)
    local m = hf.from_config(config(), "t.json")
    assert.are.same({ true, true, 4, 2048, 42, 4, 2, 2.826, true }, { m.qk_norm, m.attention_output_gate,
      m.norms_per_layer, m.sliding_window, m.sliding_window_layers, m.nope_layer_period, m.moe_first_dense_layers,
      m.moe_router_topk_scaling_factor, m.moe_router_bias })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
  end)

  it("refuses a layout with no MoE layer, naming the key", function()
    local c = config()
    c.num_dense_layers = 56
    assert.matches("t.json: num_dense_layers: no layer would have experts", H.err_of(hf.from_config, c, "t.json"),
      1, true)
  end)
end)
