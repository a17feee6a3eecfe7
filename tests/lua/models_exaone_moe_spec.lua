-- tests/lua/models_exaone_moe_spec.lua -- K-EXAONE (model_type exaone_moe,
-- LG AI Research) read as transformers' modular_exaone_moe.py builds it:
-- the count of TensorRT-LLM's test config module by module, K-EXAONE's
-- 236B-A23B at its 48 layers, and the layer-type keys.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"
local cjson_null = require("cjson").null

-- NVIDIA/TensorRT-LLM @ 65b31db1 tests/unittest/_torch/modeling/
-- test_modeling_exaone_moe.py EXAONE_MOE_CONFIG (NUM_HIDDEN_LAYERS 4,
-- WINDOW_SIZE 4), typed; its older keys (first_last_k_dense_replace,
-- is_moe_layer) are not ExaoneMoeConfig's and say the same layout as its
-- default first_k_dense_replace 1.
local function config(changes)
  local c = {
    architectures = { "ExaoneMoEForCausalLM" }, attention_dropout = 0.0, bos_token_id = 1, dtype = "bfloat16",
    eos_token_id = 53, first_last_k_dense_replace = 1, head_dim = 128, hidden_act = "silu", hidden_size = 6144,
    initializer_range = 0.02, intermediate_size = 18432, is_moe_layer = { false, true, true, true },
    layer_types = { "sliding_attention", "sliding_attention", "sliding_attention", "full_attention" },
    max_position_embeddings = 262144, model_type = "exaone_moe", moe_intermediate_size = 2048, n_group = 1,
    norm_topk_prob = true, num_attention_heads = 64, num_experts = 128, num_experts_per_tok = 8,
    num_hidden_layers = 4, num_key_value_heads = 8, num_shared_experts = 1, pad_token_id = 0, rms_norm_eps = 1e-05,
    rope_theta = 1000000, routed_scaling_factor = 2.5, scoring_func = "sigmoid", sliding_window = 4,
    sliding_window_pattern = "LLLG", tie_word_embeddings = false, tokenizer_class = "GPT2Tokenizer", topk_group = 1,
    topk_method = "noaux_tc", use_cache = true, vocab_size = 153600,
  }
  for k, v in pairs(changes or {}) do c[k] = v end
  return c
end

-- h 6144, 64 heads of 128, 8 KV heads: q and o 6144 x 8192, k and v 6144 x
-- 1024, per-head Q/K norms 2 x 128; two norms of 6144 (pre-norm); layer 0
-- a SwiGLU MLP of 18432; the others 128 experts of 3 x 6144 x 2048 (top 8),
-- one shared expert of 2048, the router 128 x 6144 and its
-- e_score_correction_bias 128; untied embedding and lm_head 153600 x 6144;
-- the final norm.
local h = 6144
local attn = 2 * h * 8192 + 2 * h * 1024 + 2 * 128 + 2 * h
local expert = 3 * h * 2048
local dense = attn + 3 * h * 18432
local moe = attn + 129 * expert + 128 * h + 128
local function total(L) return dense + (L - 1) * moe + 2 * 153600 * h + h end
local function active(L) return total(L) - (L - 1) * 120 * expert end

describe("K-EXAONE (exaone_moe)", function()
  it("counts TensorRT-LLM's 4-layer test config: 17,291,337,088 parameters", function()
    assert.are.equal(17291337088, total(4))
    local m = hf.from_config(config(), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(total(4), pc.total)
    assert.are.equal(active(4), pc.active)
    assert.are.same({ true, 1, 4, 3, 4, 2.5, true }, { m.qk_norm, m.moe_first_dense_layers, m.sliding_window,
      m.sliding_window_layers, m.nope_layer_period, m.moe_router_topk_scaling_factor, m.moe_router_bias })
    assert.is_nil(m.reordered_norm) -- OLMoE's pre-norm layer, not EXAONE 4.0's
  end)

  it("counts its shapes at 48 layers as K-EXAONE-236B-A23B: 236,571,156,352 total, 23,668,285,312 active", function()
    local types = {}
    for i = 1, 48 do types[i] = i % 4 == 0 and "full_attention" or "sliding_attention" end
    local m = hf.from_config(config({ num_hidden_layers = 48, layer_types = types, is_moe_layer = cjson_null,
      sliding_window = 128 }), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(236571156352, total(48))
    assert.are.equal(23668285312, active(48))
    assert.are.same({ total(48), active(48) }, { pc.total, pc.active })
  end)

  it("places dense layers by mlp_layer_types over first_k_dense_replace, as ExaoneMoeConfig does", function()
    local m = hf.from_config(config({ mlp_layer_types = { "sparse", "sparse", "dense", "sparse" } }), "t.json")
    assert.are.same({ 2 }, m.moe_dense_layers)
    assert.is_nil(m.moe_first_dense_layers)
    assert.are.equal(total(4), core.model_params(m).total)
    local none = hf.from_config(config({ first_k_dense_replace = 0 }), "t.json")
    assert.are.equal(total(4) + moe - dense, core.model_params(none).total)
  end)

  it("notes per-layer SwiGLU clamps", function()
    local _, info = hf.from_config(config({ swiglu_limits = { 0, 7, 7, 7 } }), "t.json")
    local found = false
    for _, n in ipairs(info.notes) do found = found or n:find("3 per-layer SwiGLU clamps", 1, true) ~= nil end
    assert.is_true(found)
  end)

  it("refuses a layout with no MoE layer and a bad layer type, naming the key", function()
    assert.matches("t.json: first_k_dense_replace: no layer would have experts",
      H.err_of(hf.from_config, config({ first_k_dense_replace = 4 }), "t.json"), 1, true)
    assert.matches('t.json: mlp_layer_types[1]: expected "dense" or "sparse"',
      H.err_of(hf.from_config, config({ mlp_layer_types = { "dense", "moe", "sparse", "sparse" } }), "t.json"), 1, true)
    assert.matches("t.json: mlp_layer_types: no layer would have experts", H.err_of(hf.from_config,
      config({ mlp_layer_types = { "dense", "dense", "dense", "dense" } }), "t.json"), 1, true)
  end)

  it("refuses full (NoPE) layers no period counts, and a window on no layer", function()
    local types = { "full_attention", "sliding_attention", "sliding_attention", "sliding_attention" }
    assert.matches("t.json: layer_types: full (NoPE) layers no period counts", H.err_of(hf.from_config,
      config({ num_hidden_layers = 8, is_moe_layer = cjson_null, layer_types = { types[1], types[2], types[3],
        types[4], types[1], types[2], types[3], types[4] } }), "t.json"), 1, true)
    assert.matches("t.json: layer_types: every layer full_attention beside a sliding_window", H.err_of(hf.from_config,
      config({ layer_types = { "full_attention", "full_attention", "full_attention", "full_attention" } }), "t.json"),
      1, true)
  end)

  it("ignores scoring_func: DeepseekV3TopkRouter is sigmoid whatever it says", function()
    local m = hf.from_config(config({ scoring_func = "softmax" }), "t.json")
    assert.are.equal(total(4), core.model_params(m).total)
  end)
end)
