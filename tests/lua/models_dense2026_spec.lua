-- tests/lua/models_dense2026_spec.lua -- the dense 2024-26 families of issue
-- 25's second batch, imported from their Hugging Face config.json
-- (lua/apsearch/hf.lua): Nemotron-4 / Minitron (nemotron), AFM-4.5B
-- (arcee), ERNIE-4.5-0.3B (ernie4_5), StarCoder2 (starcoder2).  Each count
-- is computed here from the transformers module shapes (the file and
-- commit in the comment) and checked against the model card's published
-- total; the refusals name the file, the key and the value.
--
-- The configs are written inline (examples/models/README.md "Inline
-- configs" says where each was read): Minitron-4B as NVIDIA's TensorRT-LLM
-- tests copy its config.json; the others at the keys their cards and
-- config.json files state, typed here, as no copy of those files was
-- reachable (the counts depend on the shape keys only, each checked
-- against the card's published total); StarCoder2's as TensorRT-LLM's
-- tests copy them.

local core = require "apsearch.core"
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local err_of = H.err_of

local copy = H.copy

local near, CARD_ROUNDING = H.near_card, H.CARD_ROUNDING

--- Nemotron-4 4B (nvidia/Minitron-4B-Base, Nemotron-Mini-4B-Instruct) as
-- NVIDIA/TensorRT-LLM @ 8cb8331d tests/unittest/_torch/modeling/
-- test_modeling_nemotron.py copies it (Nemotron_4_4B_CONFIG, with its
-- extra kv_channels key, which NemotronConfig does not read).
local MINITRON_4B = { architectures = { "NemotronForCausalLM" }, bos_token_id = 2, eos_token_id = 3,
  hidden_act = "relu2", hidden_size = 3072, initializer_range = 0.0134, intermediate_size = 9216,
  max_position_embeddings = 4096, model_type = "nemotron", num_attention_heads = 24, num_hidden_layers = 32,
  num_key_value_heads = 8, norm_eps = 1e-05, rope_theta = 10000, partial_rotary_factor = 0.5,
  tie_word_embeddings = false, torch_dtype = "bfloat16", transformers_version = "4.48.0", use_cache = true,
  vocab_size = 256000, kv_channels = 128 }

--- arcee-ai/AFM-4.5B's config keys (ArceeForCausalLM).
local AFM_45B = { architectures = { "ArceeForCausalLM" }, model_type = "arcee", attention_bias = false,
  head_dim = 128, hidden_act = "relu2", hidden_size = 2560, intermediate_size = 18432,
  max_position_embeddings = 65536, mlp_bias = false, num_attention_heads = 20, num_hidden_layers = 36,
  num_key_value_heads = 4, rms_norm_eps = 1e-05, rope_theta = 10000.0,
  rope_scaling = { rope_type = "yarn", factor = 20.0, original_max_position_embeddings = 4096 },
  tie_word_embeddings = false, vocab_size = 128004 }

--- baidu/ERNIE-4.5-0.3B-PT's config.json, every key as a copy of it in the
-- public code index reads (its auto_map names Baidu's remote code;
-- transformers reads model_type ernie4_5 with its own classes).
local ERNIE_03B = { architectures = { "Ernie4_5_ForCausalLM" }, auto_map = {
    AutoConfig = "configuration_ernie4_5.Ernie4_5_Config", AutoModel = "modeling_ernie4_5.Ernie4_5_Model",
    AutoModelForCausalLM = "modeling_ernie4_5.Ernie4_5_ForCausalLM" },
  bos_token_id = 1, eos_token_id = 2, hidden_act = "silu", hidden_size = 1024, intermediate_size = 3072,
  max_position_embeddings = 131072, model_type = "ernie4_5", num_attention_heads = 16, num_key_value_heads = 2,
  head_dim = 128, num_hidden_layers = 18, pad_token_id = 0, rms_norm_eps = 1e-05, use_cache = false,
  vocab_size = 103424, rope_theta = 500000, use_bias = false, tie_word_embeddings = true,
  torch_dtype = "bfloat16" }

--- bigcode/starcoder2-3b's and starcoder2-7b's config keys as NVIDIA's
-- TensorRT-LLM tests copy them (f00d21a3, tests/unittest/_torch/modeling/
-- test_modeling_starcoder2.py, "based on HuggingFace configs", with
-- num_hidden_layers 30 and 32 as its comment gives them; no
-- tie_word_embeddings: tied, Starcoder2Config's default).
local STARCODER2_3B = { architectures = { "Starcoder2ForCausalLM" }, model_type = "starcoder2",
  attention_dropout = 0.1, residual_dropout = 0.1, embedding_dropout = 0.1, hidden_act = "gelu_pytorch_tanh",
  hidden_size = 3072, intermediate_size = 12288, max_position_embeddings = 16384, norm_epsilon = 1e-05,
  num_attention_heads = 24, num_hidden_layers = 30, num_key_value_heads = 2, rope_theta = 999999.4420358813,
  sliding_window = 4096, use_bias = true, vocab_size = 49152 }
local STARCODER2_7B = { architectures = { "Starcoder2ForCausalLM" }, model_type = "starcoder2",
  attention_dropout = 0.1, residual_dropout = 0.1, embedding_dropout = 0.1, hidden_act = "gelu_pytorch_tanh",
  hidden_size = 4608, intermediate_size = 18432, max_position_embeddings = 16384, norm_epsilon = 1e-05,
  num_attention_heads = 36, num_hidden_layers = 32, num_key_value_heads = 4, rope_theta = 1000000,
  sliding_window = 4096, use_bias = true, vocab_size = 49152 }

describe("dense 2024-26 families: exact parameter counts", function()
  -- Minitron-4B (card: 4.19B; transformers modeling_nemotron.py @
  -- 694aaa7f).  Per layer NemotronAttention q, o 3072 x 3072 = 9,437,184
  -- each, k, v 3072 x (8 x 128) = 3,145,728 each, no biases
  -- (attention_bias false); NemotronMLP up 3072 x 9216 and down 9216 x
  -- 3072 = 56,623,104 (squared ReLU, no gate, mlp_bias false); two
  -- NemotronLayerNorm1P of weight and bias 2 x 2 x 3072 = 12,288:
  -- 81,801,216; x32 = 2,617,638,912.  Untied embedding and lm_head
  -- 2 x 256000 x 3072 = 1,572,864,000; the final LayerNorm1P 6,144.
  -- Total 4,190,509,056.
  it("Minitron-4B (nemotron): 4,190,509,056; squared ReLU, LayerNorm1P with bias, RoPE on half", function()
    local m, info = hf.from_config(copy(MINITRON_4B), "minitron-4b.json")
    local layer = 2 * 3072 * 3072 + 2 * 3072 * 1024 + 2 * 3072 * 9216 + 2 * 2 * 3072
    assert.are.equal(81801216, layer)
    local total = core.model_params(m).total
    assert.are.equal(32 * layer + 2 * 256000 * 3072 + 2 * 3072, total)
    assert.are.equal(4190509056, total)
    assert.is_true(near(total, 4.19e9, CARD_ROUNDING))
    assert.are.same({ "relu2", "layernorm", true, true, 0.5, false, false, 1e-5, 128 },
      { m.mlp, m.norm, m.norm_bias, m.norm_zero_centered, m.rotary_percent, m.qkv_bias, m.mlp_bias, m.norm_eps,
        m.head_dim })
    assert.are.same({}, info.notes)
    assert.is_false(info.dropout)
    -- TorchTitan's and MindFormers' Llama block: a NOT EXPRESSIBLE line for the 1 + w weights
    assert.are.same({ "norm weights used as 1 + w (norm_zero_centered: Nemotron's LayerNorm1P, Qwen3-Next, Gemma 1-3): the " ..
      "Llama norms scale by w" }, require("apsearch.launch").llama_block_features(m))
    -- absent keys: NemotronConfig's partial_rotary_factor 0.5, relu2; biases when asked
    local c = copy(MINITRON_4B)
    c.partial_rotary_factor, c.hidden_act, c.attention_bias, c.mlp_bias = nil, nil, true, true
    m = hf.from_config(c, "minitron-4b.json")
    assert.are.same({ 0.5, "relu2", true, true, true }, { m.rotary_percent, m.mlp, m.qkv_bias, m.attn_out_bias,
      m.mlp_bias })
    -- q, k, v and o biases (3072 + 2 x 1024 + 3072), up and down (9216 + 3072), per layer
    assert.are.equal(4190509056 + 32 * (3072 + 2 * 1024 + 3072 + 9216 + 3072), core.model_params(m).total)
    -- head_dim apart from h / a: Minitron-8B's card shapes (h 4096, 48 heads
    -- of 128, 8 KV heads, MLP 16384, 32 layers): q 4096 x 6144 and o 6144 x
    -- 4096 = 25,165,824 each, k, v 4096 x 1024 each, up and down
    -- 2 x 4096 x 16384, two LayerNorm1P 4 x 4096: 192,954,368 per layer
    c = copy(MINITRON_4B)
    c.hidden_size, c.num_attention_heads, c.head_dim, c.intermediate_size = 4096, 48, 128, 16384
    m = hf.from_config(c, "minitron-8b.json")
    assert.are.equal(192954368, 2 * 4096 * 6144 + 2 * 4096 * 1024 + 2 * 4096 * 16384 + 4 * 4096)
    assert.are.equal(32 * 192954368 + 2 * 256000 * 4096 + 2 * 4096, core.model_params(m).total)
    -- the architectures class reads a config whose model_type has no reader
    c = copy(MINITRON_4B)
    c.model_type = "nemotron4"
    m, info = hf.from_config(c, "minitron-4b.json")
    assert.are.equal(4190509056, core.model_params(m).total)
    assert.truthy(info.notes[1]:find("read as nemotron (architectures names NemotronForCausalLM", 1, true))
  end)

  -- arcee-ai/AFM-4.5B (card: 4.5B; transformers modular_arcee.py @
  -- 031734d9: LlamaAttention, ArceeMLP = NemotronMLP).  Per layer q, o
  -- 2560 x (20 x 128) = 6,553,600 each, k, v 2560 x (4 x 128) = 1,310,720
  -- each, up and down 2 x 2560 x 18432 = 94,371,840, two RMSNorms 5,120:
  -- 110,105,600; x36 = 3,963,801,600.  Untied embedding and lm_head
  -- 2 x 128004 x 2560 = 655,380,480; the final norm 2,560.  Total
  -- 4,619,184,640 (4.62B: the card's 4.5B is the model's name).
  it("AFM-4.5B (arcee): 4,619,184,640; Llama with a squared-ReLU MLP", function()
    local m = hf.from_config(copy(AFM_45B), "afm-4.5b.json")
    local layer = 2 * 2560 * 2560 + 2 * 2560 * 512 + 2 * 2560 * 18432 + 2 * 2560
    assert.are.equal(110105600, layer)
    local total = core.model_params(m).total
    assert.are.equal(36 * layer + 2 * 128004 * 2560 + 2560, total)
    assert.are.equal(4619184640, total)
    assert.is_true(near(total, 4.62e9, CARD_ROUNDING))
    assert.are.same({ "relu2", "rmsnorm", false, "yarn", 20.0, 4096 }, { m.mlp, m.norm, m.mlp_bias,
      m.rope_scaling_type, m.rope_scaling_factor, m.original_max_position_embeddings })
  end)

  -- baidu/ERNIE-4.5-0.3B-PT (card: 0.36B; transformers modeling_ernie4_5.py
  -- @ 9243e99d).  Per layer q, o 1024 x (16 x 128) = 2,097,152 each, k, v
  -- 1024 x (2 x 128) = 262,144 each, the SwiGLU MLP 3 x 1024 x 3072 =
  -- 9,437,184, two RMSNorms 2,048: 14,157,824; x18 = 254,840,832.  The
  -- tied embedding 103424 x 1024 = 105,906,176; the final norm 1,024.
  -- Total 360,748,032.
  it("ERNIE-4.5-0.3B (ernie4_5): 360,748,032; tied, interleaved RoPE; use_bias on every projection", function()
    local m = hf.from_config(copy(ERNIE_03B), "ernie-4.5-0.3b.json")
    local layer = 2 * 1024 * 2048 + 2 * 1024 * 256 + 3 * 1024 * 3072 + 2 * 1024
    assert.are.equal(14157824, layer)
    local total = core.model_params(m).total
    assert.are.equal(18 * layer + 103424 * 1024 + 1024, total)
    assert.are.equal(360748032, total)
    assert.is_true(near(total, 0.36e9, 2 * CARD_ROUNDING)) -- "0.36B": two digits, twice the rounding
    assert.are.same({ true, true, 500000.0 }, { m.tie_word_embeddings, m.rotary_interleaved, m.rope_theta })
    -- the class defaults (Ernie4_5Config): head_dim 128, 2 KV heads, tied,
    -- rope_theta 500000 where the config leaves them out
    local c = copy(ERNIE_03B)
    c.head_dim, c.num_key_value_heads, c.tie_word_embeddings, c.rope_theta = nil, nil, nil, nil
    m = hf.from_config(c, "ernie-4.5-0.3b.json")
    assert.are.same({ 360748032, 500000.0 }, { core.model_params(m).total, m.rope_theta })
    -- a null num_key_value_heads is num_attention_heads (16: k, v 1024 x 2048)
    c.num_key_value_heads = cjson.null
    m = hf.from_config(c, "ernie-4.5-0.3b.json")
    assert.are.equal(16, m.num_query_groups)
    -- use_bias: q, k, v, o (2048 + 2 x 256 + 1024) and gate, up, down
    -- (2 x 3072 + 1024) per layer; the lm_head has none (tied here)
    c = copy(ERNIE_03B)
    c.use_bias = true
    m = hf.from_config(c, "ernie-4.5-0.3b.json")
    assert.are.same({ true, true, true }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias })
    assert.are.equal(360748032 + 18 * (2048 + 2 * 256 + 1024 + 2 * 3072 + 1024), core.model_params(m).total)
    -- ERNIE 4.5 MoE rotates the same interleaved pairs (its modular file
    -- imports ERNIE 4.5's apply_rotary_pos_emb)
    m = hf.from_config({ model_type = "ernie4_5_moe", hidden_size = 256, intermediate_size = 512,
      num_hidden_layers = 2, num_attention_heads = 4, num_key_value_heads = 2, vocab_size = 1000,
      moe_num_experts = 4, moe_k = 2, moe_intermediate_size = 128 }, "ernie-moe.json")
    assert.is_true(m.rotary_interleaved)
  end)

  -- bigcode/starcoder2-3b (card: 3.03B) and starcoder2-7b (card: 7.17B);
  -- transformers modular_starcoder2.py @ ae005ce1.  3B, per layer q, o
  -- 3072 x 3072 + 3072 each, k, v 3072 x (2 x 128) + 256 each, c_fc
  -- 3072 x 12288 + 12288, c_proj 12288 x 3072 + 3072, two nn.LayerNorms
  -- 2 x 2 x 3072: 95,979,008; x30 = 2,879,370,240; the tied embedding
  -- 49152 x 3072 = 150,994,944; the final LayerNorm 6,144: 3,030,371,328.
  -- 7B (36 heads of 128, 4 KV heads, MLP 18432): per layer 217,106,944;
  -- x32 + 49152 x 4608 + 2 x 4608 = 7,173,923,840.
  it("StarCoder2-3B 3,030,371,328 and -7B 7,173,923,840: biases, LayerNorm, GELU, window", function()
    local m, info = hf.from_config(copy(STARCODER2_3B), "starcoder2-3b.json")
    local function layer(h, kv, f)
      return 2 * (h * h + h) + 2 * (h * kv + kv) + (h * f + f) + (f * h + h) + 2 * 2 * h
    end
    assert.are.equal(95979008, layer(3072, 256, 12288))
    local total = core.model_params(m).total
    assert.are.equal(30 * layer(3072, 256, 12288) + 49152 * 3072 + 2 * 3072, total)
    assert.are.equal(3030371328, total)
    assert.is_true(near(total, 3.03e9, CARD_ROUNDING))
    assert.are.same({ "gelu", "layernorm", true, true, true, true, true, 4096, 30, 1e-5 },
      { m.mlp, m.norm, m.norm_bias, m.qkv_bias, m.attn_out_bias, m.mlp_bias, m.tie_word_embeddings,
        m.sliding_window, m.sliding_window_layers, m.norm_eps })
    assert.are.same({ true, "attention_dropout" }, { info.dropout, info.dropout_key })
    assert.truthy(info.notes[1]:find("hidden_act gelu_pytorch_tanh (the tanh approximation of GELU) is " ..
      "element-wise: estimated as GELU", 1, true))
    m = hf.from_config(copy(STARCODER2_7B), "starcoder2-7b.json")
    assert.are.equal(217106944, layer(4608, 512, 18432))
    total = core.model_params(m).total
    assert.are.equal(32 * layer(4608, 512, 18432) + 49152 * 4608 + 2 * 4608, total)
    assert.are.equal(7173923840, total)
    assert.is_true(near(total, 7.17e9, CARD_ROUNDING))
    -- use_bias false drops the linear biases, never the LayerNorms'; a null window is none
    local c = copy(STARCODER2_3B)
    c.use_bias, c.sliding_window, c.hidden_act = false, cjson.null, "gelu"
    m, info = hf.from_config(c, "starcoder2-3b.json")
    assert.are.equal(3030371328 - 30 * (3072 + 2 * 256 + 3072 + 12288 + 3072), core.model_params(m).total)
    assert.are.same({ true, false }, { m.norm_bias, m.qkv_bias })
    assert.is_nil(m.sliding_window)
    assert.are.same({}, info.notes) -- the erf GELU is Megatron's own
    -- StarCoder2-15B (the same test file: h 6144, 48 heads, 4 KV heads, MLP
    -- 24576, 40 layers, rope_theta 100000; card: 15B, its name): per layer
    -- 383,847,424; x40 + the tied 49152 x 6144 + the final LayerNorm
    c = copy(STARCODER2_7B)
    c.hidden_size, c.num_attention_heads, c.intermediate_size, c.num_hidden_layers, c.rope_theta =
      6144, 48, 24576, 40, 100000
    m = hf.from_config(c, "starcoder2-15b.json")
    assert.are.equal(383847424, layer(6144, 512, 24576))
    assert.are.equal(40 * layer(6144, 512, 24576) + 49152 * 6144 + 2 * 6144, core.model_params(m).total)
    assert.are.equal(15655899136, core.model_params(m).total)
  end)
end)

describe("StableLM", function()
  --- stabilityai/stablelm-3b-4e1t's config keys (StableLmForCausalLM).
  local STABLELM_3B = { architectures = { "StableLmForCausalLM" }, model_type = "stablelm", hidden_act = "silu",
    hidden_size = 2560, intermediate_size = 6912, layer_norm_eps = 1e-05, max_position_embeddings = 4096,
    num_attention_heads = 32, num_hidden_layers = 32, num_key_value_heads = 32, partial_rotary_factor = 0.25,
    rope_theta = 10000, tie_word_embeddings = false, use_qkv_bias = false, vocab_size = 50304 }

  -- StableLM-3B-4E1T (card: 2,795,443,200; transformers modeling_stablelm.py
  -- @ bf112caa).  Per layer q, k, v, o 2560 x 2560 = 6,553,600 each, the
  -- SwiGLU MLP 3 x 2560 x 6912 = 53,084,160, two nn.LayerNorms of weight
  -- and bias 2 x 2 x 2560 = 10,240: 79,308,800; x32 = 2,537,881,600.
  -- Untied embedding and lm_head 2 x 50304 x 2560 = 257,556,480; the final
  -- LayerNorm 5,120.
  it("StableLM-3B-4E1T: 2,795,443,200, the card's count; RoPE on a quarter of each head", function()
    local m = hf.from_config(copy(STABLELM_3B), "stablelm-3b.json")
    local layer = 4 * 2560 * 2560 + 3 * 2560 * 6912 + 2 * 2 * 2560
    assert.are.equal(79308800, layer)
    local total = core.model_params(m).total
    assert.are.equal(32 * layer + 2 * 50304 * 2560 + 2 * 2560, total)
    assert.are.equal(2795443200, total)
    assert.are.same({ "swiglu", "layernorm", true, 0.25, false, 80 }, { m.mlp, m.norm, m.norm_bias,
      m.rotary_percent, m.qkv_bias, m.head_dim })
    -- use_qkv_bias: q, k, v biases (3 x 2560) per layer, never o_proj's;
    -- use_parallel_residual: one LayerNorm per layer feeding both
    local c = copy(STABLELM_3B)
    c.use_qkv_bias, c.use_parallel_residual, c.head_dim = true, true, 64 -- head_dim is not read
    m = hf.from_config(c, "stablelm-3b.json")
    assert.are.same({ true, false, true, 1, 80 }, { m.qkv_bias, m.attn_out_bias, m.parallel_attn_mlp,
      m.norms_per_layer, m.head_dim })
    assert.are.equal(2795443200 + 32 * (3 * 2560 - 2 * 2560), core.model_params(m).total)
    -- absent partial_rotary_factor: StableLmConfig's 0.25
    c = copy(STABLELM_3B)
    c.partial_rotary_factor = nil
    assert.are.equal(0.25, hf.from_config(c, "stablelm-3b.json").rotary_percent)
  end)

  -- StableLM 2 12B (card: 12.1B; its card's shapes: h 5120, 32 heads of
  -- 160, 8 KV heads, MLP 13824, 40 layers, vocab 100352,
  -- use_parallel_residual, qk_layernorm).  Per layer q, o 5120^2 each, k,
  -- v 5120 x 1280 each, the SwiGLU MLP 3 x 5120 x 13824, one LayerNorm
  -- with bias 10,240, StableLmLayerNormPerHead on Q and K: a bias-free
  -- LayerNorm per head, (32 + 8) x 160 = 6,400: 277,889,280; x40 =
  -- 11,115,571,200; untied 2 x 100352 x 5120 = 1,027,604,480; the final
  -- LayerNorm 10,240.  Total 12,143,185,920.
  it("StableLM 2 12B: 12,143,185,920; per-head Q/K LayerNorms with a weight each (qk_layernorm)", function()
    local c = copy(STABLELM_3B)
    c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size = 5120, 32, 8, 13824
    c.num_hidden_layers, c.vocab_size, c.use_parallel_residual, c.qk_layernorm = 40, 100352, true, true
    local m = hf.from_config(c, "stablelm-2-12b.json")
    local layer = 2 * 5120 * 5120 + 2 * 5120 * 1280 + 3 * 5120 * 13824 + 2 * 5120 + (32 + 8) * 160
    assert.are.equal(277889280, layer)
    local total = core.model_params(m).total
    assert.are.equal(40 * layer + 2 * 100352 * 5120 + 2 * 5120, total)
    assert.are.equal(12143185920, total)
    assert.is_true(near(total, 12.1e9, CARD_ROUNDING))
    assert.are.same({ true, true, 1 }, { m.qk_norm, m.qk_norm_head_weights, m.norms_per_layer })
  end)
end)

describe("Phi-2", function()
  --- microsoft/phi-2's config keys (PhiForCausalLM).
  local PHI2 = { architectures = { "PhiForCausalLM" }, model_type = "phi", attention_dropout = 0.0,
    embd_pdrop = 0.0, resid_pdrop = 0.1, hidden_act = "gelu_new", hidden_size = 2560, intermediate_size = 10240,
    layer_norm_eps = 1e-05, max_position_embeddings = 2048, num_attention_heads = 32, num_hidden_layers = 32,
    num_key_value_heads = 32, partial_rotary_factor = 0.4, qk_layernorm = false, rope_theta = 10000.0,
    tie_word_embeddings = false, vocab_size = 51200 }

  -- Phi-2 (card: 2.7B; transformers modular_phi.py @ b39782da).  Per layer
  -- q, k, v, dense 4 x (2560 x 2560 + 2560) = 26,224,640, fc1 2560 x 10240
  -- + 10240 and fc2 10240 x 2560 + 2560 = 52,441,600, one nn.LayerNorm
  -- 2 x 2560 (attention and MLP read the same normed input):
  -- 78,671,360; x32 = 2,517,483,520.  The embedding 51200 x 2560 =
  -- 131,072,000, the lm_head the same plus its bias 51,200, the final
  -- LayerNorm 5,120.  Total 2,779,683,840 (PhiForCausalLM's
  -- num_parameters()).
  it("Phi-2 (phi): 2,779,683,840; parallel attention and MLP on one LayerNorm, lm_head bias", function()
    local m, info = hf.from_config(copy(PHI2), "phi-2.json")
    local layer = 4 * (2560 * 2560 + 2560) + (2560 * 10240 + 10240) + (10240 * 2560 + 2560) + 2 * 2560
    assert.are.equal(78671360, layer)
    local total = core.model_params(m).total
    assert.are.equal(32 * layer + 2 * 51200 * 2560 + 51200 + 2 * 2560, total)
    assert.are.equal(2779683840, total)
    assert.are.same({ "gelu", "layernorm", true, 1, true, true, 0.4 }, { m.mlp, m.norm, m.parallel_attn_mlp,
      m.norms_per_layer, m.lm_head_bias, m.mlp_bias, m.rotary_percent })
    assert.are.same({ true, "resid_pdrop" }, { info.dropout, info.dropout_key })
    local c = copy(PHI2)
    c.qk_layernorm = true
    assert.are.equal("NotImplemented: p.json: qk_layernorm: Phi's LayerNorms with bias on Q and K are not " ..
      "modelled (got true)", err_of(hf.from_config, c, "p.json"))
    c.qk_layernorm, c.hidden_act = nil, "relu"
    assert.are.equal('p.json: hidden_act: expected gelu, gelu_pytorch_tanh or gelu_new (PhiMLP\'s fc1 and fc2 ' ..
      'are priced with GELU) (got "relu")', err_of(hf.from_config, c, "p.json"))
  end)
end)

describe("dense 2024-26 families: refusals name the file, key and value", function()
  it("an activation the reader does not price", function()
    local c = copy(MINITRON_4B)
    c.hidden_act = "silu"
    assert.are.equal('minitron-4b.json: hidden_act: expected "relu2" (NemotronMLP\'s squared ReLU) (got "silu")',
      err_of(hf.from_config, c, "minitron-4b.json"))
    c = copy(AFM_45B)
    c.hidden_act = "gelu"
    assert.are.equal('afm.json: hidden_act: expected "relu2" (ArceeMLP\'s squared ReLU) (got "gelu")',
      err_of(hf.from_config, c, "afm.json"))
    c = copy(ERNIE_03B)
    c.hidden_act = "relu2"
    assert.are.equal('ernie.json: hidden_act: expected "silu" (ERNIE 4.5\'s SwiGLU MLP) (got "relu2")',
      err_of(hf.from_config, c, "ernie.json"))
    c = copy(STARCODER2_3B)
    c.hidden_act = "relu"
    assert.are.equal('sc2.json: hidden_act: expected gelu, gelu_pytorch_tanh or gelu_new (Starcoder2MLP\'s two ' ..
      'matrices are priced with GELU) (got "relu")', err_of(hf.from_config, c, "sc2.json"))
  end)

  it("a value of the wrong type or out of range", function()
    local c = copy(MINITRON_4B)
    c.partial_rotary_factor = 0
    assert.are.equal("m.json: partial_rotary_factor: expected a number in (0, 1] (got 0)",
      err_of(hf.from_config, c, "m.json"))
    c = copy(ERNIE_03B)
    c.use_bias = "yes"
    assert.are.equal('e.json: use_bias: expected true or false (got "yes")', err_of(hf.from_config, c, "e.json"))
    -- a hybrid pattern on a dense Nemotron (NemotronForCausalLM) would be dropped: refused
    c = copy(MINITRON_4B)
    c.model_type, c.layers_block_type = nil, { "mamba", "attention" }
    assert.are.equal('m.json: layers_block_type: a Nemotron-H layer pattern on a dense Nemotron config ' ..
      '(model_type nemotron_h reads it) (got {"mamba", "attention"})', err_of(hf.from_config, c, "m.json"))
    c = copy(STARCODER2_3B)
    c.norm_epsilon = -1
    assert.are.equal("s.json: norm_epsilon: expected a finite number > 0 (got -1)",
      err_of(hf.from_config, c, "s.json"))
  end)

  -- Apertus (transformers modular_apertus.py @ 008e5743) is read: its
  -- counts and refusals are in the describe block below
  -- Ling 1.x (bailing_moe) is read: models_bailing_spec.lua
end)

--- swiss-ai/Apertus-8B-2509's config keys as public loaders' tests copy
-- them (examples/models/README.md "Apertus"): 32 layers, h 4096, 32
-- heads, 8 KV heads, MLP 21504, vocab 131,072, untied, qk_norm true.
local APERTUS_8B = { architectures = { "ApertusForCausalLM" }, model_type = "apertus",
  attention_bias = false, attention_dropout = 0.0, bos_token_id = 1, eos_token_id = 2, hidden_act = "xielu",
  hidden_dropout = 0.0, hidden_size = 4096, initializer_range = 0.02, intermediate_size = 21504,
  max_position_embeddings = 65536, mlp_bias = false, num_attention_heads = 32, num_hidden_layers = 32,
  num_key_value_heads = 8, pad_token_id = 3, post_norm = false, qk_norm = true, rms_norm_eps = 1e-05,
  rope_scaling = { factor = 8.0, high_freq_factor = 4.0, low_freq_factor = 1.0,
    original_max_position_embeddings = 8192, rope_type = "llama3" },
  rope_theta = 12000000, tie_word_embeddings = false, vocab_size = 131072 }

describe("Apertus (xIELU MLP)", function()
  -- Apertus-8B (transformers modular_apertus.py @ 008e5743; published
  -- 8,053,338,176: a public tool's log of the model loaded with
  -- transformers).  Per layer q, o 4096 x 4096 = 16,777,216 each, k, v
  -- 4096 x 1024 = 4,194,304 each; q_norm, k_norm 2 x 128; up and down
  -- 2 x 4096 x 21504 = 176,160,768; XIELUActivation's alpha_p and alpha_n
  -- 2; attention_layernorm and feedforward_layernorm 2 x 4096:
  -- 218,112,258; x32 = 6,979,592,256.  Untied embedding and lm_head
  -- 2 x 131072 x 4096 = 1,073,741,824; the final norm 4,096.
  it("Apertus-8B: 8,053,338,176 with xIELU's two scalars per layer", function()
    local m, info = hf.from_config(copy(APERTUS_8B), "apertus-8b.json")
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 128 + 2 * 4096 * 21504 + 2 + 2 * 4096
    assert.are.equal(218112258, layer)
    local total = core.model_params(m).total
    assert.are.equal(32 * layer + 2 * 131072 * 4096 + 4096, total)
    assert.are.equal(8053338176, total)
    assert.are.same({ "xielu", "rmsnorm", true, false, false, 8 },
      { m.mlp, m.norm, m.qk_norm, m.qkv_bias, m.mlp_bias, m.num_query_groups })
    assert.are.same({}, info.notes)
    -- the MLP's FLOPs are GELU's: 2 matrices (xIELU is element-wise)
    local g = copy(m)
    g.mlp = "gelu"
    assert.are.equal(core.model_params(m).total - 32 * 2, core.model_params(g).total)
  end)

  -- Apertus-70B-2509's shape keys (h 8192, 80 layers, 64 heads, 8 KV
  -- heads, MLP 43008, vocab 131,072): per layer q, o 8192^2 each, k, v
  -- 8192 x 1024 each, q_norm, k_norm 2 x 128, up and down 2 x 8192 x
  -- 43008, xIELU 2, two norms 2 x 8192 = 855,654,658; x80 plus untied
  -- embedding and lm_head 2 x 131072 x 8192 and the final norm:
  -- 70,599,864,480 (the card names it 70B).
  it("Apertus-70B: 70,599,864,480", function()
    local c = copy(APERTUS_8B)
    c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size = 8192, 80, 64, 43008
    local m = hf.from_config(c, "apertus-70b.json")
    local layer = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 2 * 128 + 2 * 8192 * 43008 + 2 + 2 * 8192
    assert.are.equal(855654658, layer)
    assert.are.equal(70599864480, 80 * layer + 2 * 131072 * 8192 + 8192)
    assert.are.equal(70599864480, core.model_params(m).total)
  end)

  it("reads the keys transformers reads and refuses another activation", function()
    -- ApertusAttention builds q_norm and k_norm whatever qk_norm says, and
    -- ApertusMLP's projections have no bias whatever mlp_bias says
    local c = copy(APERTUS_8B)
    c.qk_norm, c.mlp_bias, c.hidden_act = false, true, nil
    local m = hf.from_config(c, "a.json")
    assert.are.same({ true, false, "xielu" }, { m.qk_norm, m.mlp_bias, m.mlp })
    assert.are.equal(8053338176, core.model_params(m).total)
    c.hidden_act = "relu2" -- NemotronMLP's own activation: the same two matrices
    m = hf.from_config(c, "a.json")
    assert.are.equal("relu2", m.mlp)
    assert.are.equal(8053338176 - 32 * 2, core.model_params(m).total)
    c.hidden_act = "silu"
    assert.are.equal('a.json: hidden_act: expected xielu or relu2 (ApertusMLP\'s two matrices are priced with ' ..
      'those) (got "silu")', err_of(hf.from_config, c, "a.json"))
    -- q, k, v, o biases with attention_bias: 4096 + 2 x 1024 + 4096 per layer
    c = copy(APERTUS_8B)
    c.attention_bias = true
    assert.are.equal(8053338176 + 32 * (4096 + 2 * 1024 + 4096), core.model_params(hf.from_config(c, "a.json")).total)
  end)

  it("a hand-written xIELU model is dense only", function()
    local m = hf.from_config(copy(APERTUS_8B), "a.json")
    m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size = 8, 2, 1024
    local ok, err = pcall(core.context, m, { device = "h100-sxm-80gb", num_devices = 8 },
      { global_batch_size = 8, seq_length = 4096 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find('model.mlp: "xielu" is modelled for dense MLPs only (num_experts > 0)', 1, true))
  end)
end)

--- mistralai/Ministral-8B-Instruct-2410's shape keys (its card and
-- config.json: hidden 4096, MLP 12288, 36 layers, 32 heads of 128, 8 KV
-- heads, vocab 131,072, a 32,768-token window, untied), typed (no copy of
-- the file reachable).
local MINISTRAL_8B = { architectures = { "MinistralForCausalLM" }, model_type = "ministral",
  hidden_size = 4096, intermediate_size = 12288, num_hidden_layers = 36, num_attention_heads = 32,
  num_key_value_heads = 8, head_dim = 128, vocab_size = 131072, rope_theta = 100000000.0,
  sliding_window = 32768, tie_word_embeddings = false, max_position_embeddings = 32768, rms_norm_eps = 1e-5 }

describe("Ministral (ministral)", function()
  -- transformers modular_ministral.py @ 05cd1ec1: Qwen2's layer without
  -- biases.  Per layer q, o 4096 x 4096 = 16,777,216 each, k, v 4096 x
  -- 1024 = 4,194,304 each, gate, up, down 3 x 4096 x 12288 = 150,994,944,
  -- two RMSNorms 8,192: 192,946,176; x36 = 6,946,062,336; untied
  -- embedding and lm_head 2 x 131072 x 4096 = 1,073,741,824; the final
  -- norm 4,096.  8,019,808,256 is the count a public table gives the
  -- checkpoint.
  it("Ministral-8B-Instruct-2410: 8,019,808,256, the window on every layer or on layer_types'", function()
    local m = hf.from_config(copy(MINISTRAL_8B), "ministral-8b.json")
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12288 + 2 * 4096
    assert.are.equal(192946176, layer)
    assert.are.equal(8019808256, 36 * layer + 2 * 131072 * 4096 + 4096)
    assert.are.equal(8019808256, core.model_params(m).total)
    assert.are.same({ 32768, 36, false, false }, { m.sliding_window, m.sliding_window_layers, m.qkv_bias,
      m.attn_out_bias })
    -- layer_types with every 4th layer full: 27 windowed, period 4
    local c = copy(MINISTRAL_8B)
    c.layer_types = {}
    for i = 1, 36 do c.layer_types[i] = i % 4 == 0 and "full_attention" or "sliding_attention" end
    m = hf.from_config(c, "ministral-8b.json")
    assert.are.same({ 27, 4 }, { m.sliding_window_layers, m.sliding_window_period })
  end)

  it("takes MinistralConfig's defaults and refuses a bad layer type", function()
    -- absent window: the class's 4096 on every layer; null: none
    local c = copy(MINISTRAL_8B)
    c.sliding_window = nil
    assert.are.equal(4096, hf.from_config(c, "m.json").sliding_window)
    c.sliding_window = cjson.null
    assert.is_nil(hf.from_config(c, "m.json").sliding_window)
    -- a null num_key_value_heads: one per head (32 x 128 for k and v)
    c = copy(MINISTRAL_8B)
    c.num_key_value_heads = cjson.null
    assert.are.equal(8019808256 + 36 * 2 * 4096 * (4096 - 1024),
      core.model_params(hf.from_config(c, "m.json")).total)
    c = copy(MINISTRAL_8B)
    c.layer_types = { "sliding_attention" }
    assert.are.equal('m.json: layer_types: expected an array of num_hidden_layers = 36 entries (got ' ..
      '{"sliding_attention"})', err_of(hf.from_config, c, "m.json"))
  end)
end)

--- google/vaultgemma-1b's shape keys as keras-hub's converter test copies
-- them (26 layers, 4 heads and 4 KV heads of 256, hidden 1152, MLP 6912,
-- vocab 256,000, a 512-token window).
local VAULTGEMMA_1B = { model_type = "vaultgemma", architectures = { "VaultGemmaForCausalLM" },
  vocab_size = 256000, num_hidden_layers = 26, num_attention_heads = 4, num_key_value_heads = 4,
  hidden_size = 1152, intermediate_size = 6912, head_dim = 256, query_pre_attn_scalar = 256,
  sliding_window = 512 }

describe("VaultGemma (vaultgemma)", function()
  -- transformers modular_vaultgemma.py @ 0eec8c78: Gemma 2 without the
  -- post-attention and post-feedforward norms.  Per layer q, o 1152 x 1024
  -- = 1,179,648 each, k, v the same (4 KV heads of 256), GeGLU 3 x 1152 x
  -- 6912 = 23,887,872, two RMSNorms 2,304: 28,608,768; x26 = 743,827,968;
  -- tied embedding 256000 x 1152 = 294,912,000; the final norm 1,152:
  -- 1,038,741,120 (the card's 1B).
  it("VaultGemma-1B: 1,038,741,120, two norms per layer, Gemma 2's window pattern", function()
    local m = hf.from_config(copy(VAULTGEMMA_1B), "vaultgemma-1b.json")
    local layer = 4 * 1152 * 1024 + 3 * 1152 * 6912 + 2 * 1152
    assert.are.equal(28608768, layer)
    assert.are.equal(1038741120, 26 * layer + 256000 * 1152 + 1152)
    assert.are.equal(1038741120, core.model_params(m).total)
    assert.are.same({ 2, 512, 13, 2, true, "gelu_tanh" }, { m.norms_per_layer, m.sliding_window,
      m.sliding_window_layers, m.sliding_window_period, m.tie_word_embeddings, m.glu_activation })
    -- Gemma 2's four norms per layer are 2 x 1152 more each
    local g = copy(VAULTGEMMA_1B)
    g.model_type = "gemma2"
    assert.are.equal(1038741120 + 26 * 2 * 1152, core.model_params(hf.from_config(g, "g.json")).total)
    -- layer_types read (Gemma2Config has it, and Gemma 2 reads it the same
    -- way): every layer full, no window; every third full, period 3
    local c = copy(VAULTGEMMA_1B)
    c.layer_types = {}
    for i = 1, 26 do c.layer_types[i] = "full_attention" end
    assert.is_nil(hf.from_config(c, "v.json").sliding_window)
    for i = 1, 26 do c.layer_types[i] = i % 3 == 0 and "full_attention" or "sliding_attention" end
    local v = hf.from_config(c, "v.json")
    assert.are.same({ 18, 3 }, { v.sliding_window_layers, v.sliding_window_period })
    g.layer_types = c.layer_types
    v = hf.from_config(g, "g.json")
    assert.are.same({ 18, 3 }, { v.sliding_window_layers, v.sliding_window_period })
  end)
end)
