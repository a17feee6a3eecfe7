-- tests/lua/models_dense2026c_spec.lua -- the dense families of issue 25's
-- third batch, imported from their Hugging Face config.json
-- (lua/apsearch/hf.lua): Command R / Aya (cohere), GLM-4-9B-chat-hf
-- (glm), OLMo 1 (olmo), the Mamba-2 hybrid Bamba (bamba), StarCoder /
-- SantaCoder (gpt_bigcode), GPT-J (gptj), Falcon (falcon), BLOOM (bloom),
-- Helium (helium), GLM-4.1V's and GLM-4.5V's text models (glm4v,
-- glm4v_text, glm4v_moe, glm4v_moe_text); and the types refused naming what they lack.  Each count is
-- computed here from the transformers module shapes (the file and commit
-- in the comment) and checked against the model card's published total;
-- the refusals name the file, the key and the value.
--
-- The configs are written inline (examples/models/README.md "Inline
-- configs" says where each was read): typed at the keys their cards and
-- config.json files state, as no copy of those files was reachable (the
-- counts depend on the shape keys only, each checked against the card's
-- published total).

local core = require "apsearch.core"
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local err_of = H.err_of

local copy = H.copy

local near, CARD_ROUNDING, CARD_ROUNDING_2 = H.near_card, H.CARD_ROUNDING, H.CARD_ROUNDING_2

--- CohereForAI/c4ai-command-r-v01's config keys (CohereForCausalLM), typed.
local COMMAND_R = { architectures = { "CohereForCausalLM" }, model_type = "cohere", attention_bias = false,
  attention_dropout = 0.0, bos_token_id = 5, eos_token_id = 255001, hidden_act = "silu", hidden_size = 8192,
  initializer_range = 0.02, intermediate_size = 22528, layer_norm_eps = 1e-05, logit_scale = 0.0625,
  max_position_embeddings = 8192, num_attention_heads = 64, num_hidden_layers = 40, num_key_value_heads = 64,
  pad_token_id = 0, rope_theta = 8000000.0, use_cache = true, use_qk_norm = false, vocab_size = 256000 }

--- THUDM/glm-4-9b-chat-hf's config keys (GlmForCausalLM), typed.
local GLM4_9B_HF = { architectures = { "GlmForCausalLM" }, model_type = "glm", attention_bias = true,
  attention_dropout = 0.0, head_dim = 128, hidden_act = "silu", hidden_size = 4096, initializer_range = 0.02,
  intermediate_size = 13696, max_position_embeddings = 131072, num_attention_heads = 32, num_hidden_layers = 40,
  num_key_value_heads = 2, partial_rotary_factor = 0.5, rms_norm_eps = 1.5625e-07, rope_theta = 10000.0,
  tie_word_embeddings = false, vocab_size = 151552 }

--- allenai/OLMo-7B-0424-hf's config keys (OlmoForCausalLM), typed.
local OLMO_7B = { architectures = { "OlmoForCausalLM" }, model_type = "olmo", attention_bias = false,
  attention_dropout = 0.0, clip_qkv = 8.0, eos_token_id = 50279, hidden_act = "silu", hidden_size = 4096,
  initializer_range = 0.02, intermediate_size = 11008, max_position_embeddings = 4096, num_attention_heads = 32,
  num_hidden_layers = 32, num_key_value_heads = 32, pad_token_id = 1, rope_theta = 10000.0,
  tie_word_embeddings = false, vocab_size = 50304 }

describe("dense families, third batch: exact parameter counts", function()
  -- c4ai-command-r-v01 (card: 35B; transformers modular_cohere.py @
  -- 03ea97ae).  Per layer q, k, v, o 8192 x 8192 = 67,108,864 each (64
  -- heads of 128, 64 KV heads, no biases), the SwiGLU MLP 3 x 8192 x 22528
  -- = 553,648,128, one CohereLayerNorm without bias 8,192 (attention and
  -- MLP read it in parallel): 822,091,776; x40 = 32,883,671,040.  The tied
  -- embedding 256000 x 8192 = 2,097,152,000; the final LayerNorm 8,192.
  -- Total 34,980,831,232.
  it("Command R (cohere): 34,980,831,232; one bias-free LayerNorm feeding attention and MLP, interleaved RoPE",
    function()
    local m, info = hf.from_config(copy(COMMAND_R), "command-r.json")
    local layer = 4 * 8192 * 8192 + 3 * 8192 * 22528 + 8192
    assert.are.equal(822091776, layer)
    local total = core.model_params(m).total
    assert.are.equal(40 * layer + 256000 * 8192 + 8192, total)
    assert.are.equal(34980831232, total)
    assert.is_true(near(total, 35e9, CARD_ROUNDING_2))
    assert.are.same({ "swiglu", "layernorm", false, true, 1, true, true, true, false, 8000000.0 },
      { m.mlp, m.norm, m.norm_bias, m.parallel_attn_mlp, m.norms_per_layer, m.rotary_interleaved,
        m.mup_multipliers, m.tie_word_embeddings, m.qkv_bias, m.rope_theta })
    assert.is_nil(m.sliding_window)
    assert.are.same({ "command-r.json: logit_scale 0.0625 multiplies the logits: a constant, not priced" },
      info.notes)
    -- Command R 08-2024's card shapes (8 KV heads, MLP 24576): k, v 8192 x
    -- 1024 each; per layer 2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 24576
    -- + 8192 = 754,982,912
    local c = copy(COMMAND_R)
    c.num_key_value_heads, c.intermediate_size, c.rope_theta = 8, 24576, 4000000.0
    m = hf.from_config(c, "command-r-08-2024.json")
    assert.are.equal(754982912, 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 24576 + 8192)
    assert.are.equal(40 * 754982912 + 256000 * 8192 + 8192, core.model_params(m).total)
    -- absent keys: CohereConfig's tied embeddings, logit_scale 0.0625, no
    -- Q/K norms; attention_bias puts biases on q, k, v and o
    c = copy(COMMAND_R)
    c.logit_scale, c.use_qk_norm, c.attention_bias = nil, nil, true
    m, info = hf.from_config(c, "command-r.json")
    assert.are.equal(34980831232 + 40 * 4 * 8192, core.model_params(m).total)
    assert.are.same({ true, true, true }, { m.tie_word_embeddings, m.qkv_bias, m.attn_out_bias })
    assert.truthy(info.notes[1]:find("logit_scale 0.0625", 1, true))
    -- Command R7B / A (cohere2) rotate the same interleaved pairs (its
    -- modular file imports Cohere's apply_rotary_pos_emb)
    m = hf.from_config({ model_type = "cohere2", hidden_size = 256, intermediate_size = 512, num_hidden_layers = 4,
      num_attention_heads = 4, num_key_value_heads = 2, vocab_size = 1000 }, "c2.json")
    assert.is_true(m.rotary_interleaved)
  end)

  -- c4ai-command-r-plus (card: 104B; the shape keys of its card, typed:
  -- h 12288, 96 heads of 128, 8 KV heads, MLP 33792, 64 layers,
  -- use_qk_norm).  Per layer q, o 12288^2 each, k, v 12288 x 1024 each,
  -- the SwiGLU MLP 3 x 12288 x 33792, the LayerNorm 12,288, the per-head
  -- Q/K LayerNorms (96 + 8) x 128 = 13,312: 1,572,889,600; x64 =
  -- 100,664,934,400; the tied embedding 256000 x 12288 = 3,145,728,000
  -- and the final LayerNorm.  Total 103,810,674,688.
  it("Command R+ (cohere, use_qk_norm): 103,810,674,688; Q/K LayerNorms with a weight per head", function()
    local c = copy(COMMAND_R)
    c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size, c.num_hidden_layers =
      12288, 96, 8, 33792, 64
    c.use_qk_norm, c.logit_scale, c.rope_theta = true, 0.8333333333333334, 75000000.0
    local m = hf.from_config(c, "command-r-plus.json")
    local layer = 2 * 12288 * 12288 + 2 * 12288 * 1024 + 3 * 12288 * 33792 + 12288 + (96 + 8) * 128
    assert.are.equal(1572889600, layer)
    local total = core.model_params(m).total
    assert.are.equal(64 * layer + 256000 * 12288 + 12288, total)
    assert.are.equal(103810674688, total)
    assert.is_true(near(total, 104e9, CARD_ROUNDING)) -- "104B": three digits
    assert.are.same({ true, true }, { m.qk_norm, m.qk_norm_head_weights })
    assert.is_nil(m.qk_norm_full_width)
    -- under tensor parallelism the per-head weights split with the heads:
    -- a hand-written table says the same; full width and head weights are
    -- two answers to one question, refused together
    local t = copy(m)
    t.qk_norm_full_width = true
    assert.truthy(err_of(core.model_params, t):find("model.qk_norm_head_weights: given with qk_norm_full_width",
      1, true))
  end)

  -- THUDM/glm-4-9b-chat-hf (card: 9.4B; transformers modular_glm.py @
  -- 0325dc46).  Per layer q 4096 x (32 x 128) + 4096 = 16,781,312, k, v
  -- 4096 x (2 x 128) + 256 = 1,048,832 each, o 4096 x 4096 = 16,777,216
  -- (no bias), the fused gate_up and down 3 x 4096 x 13696 = 168,296,448,
  -- two RMSNorms 8,192: 203,960,832; x40 = 8,158,433,280.  Untied
  -- embedding and lm_head 2 x 151552 x 4096 = 1,241,513,984; the final
  -- norm 4,096.  Total 9,399,951,360 (GLM-4-9B-0414, glm4, has two norms
  -- more per layer: 9,400,279,040).
  it("GLM-4-9B-chat-hf (glm): 9,399,951,360; q/k/v biases, half-head interleaved RoPE, two norms", function()
    local m = hf.from_config(copy(GLM4_9B_HF), "glm-4-9b-chat-hf.json")
    local layer = (4096 * 4096 + 4096) + 2 * (4096 * 256 + 256) + 4096 * 4096 + 3 * 4096 * 13696 + 2 * 4096
    assert.are.equal(203960832, layer)
    local total = core.model_params(m).total
    assert.are.equal(40 * layer + 2 * 151552 * 4096 + 4096, total)
    assert.are.equal(9399951360, total)
    assert.is_true(near(total, 9.4e9, CARD_ROUNDING_2)) -- "9.4B": two digits
    assert.are.same({ 2, true, false, 0.5, true, "rmsnorm", 1.5625e-07 }, { m.norms_per_layer, m.qkv_bias,
      m.attn_out_bias, m.rotary_percent, m.rotary_interleaved, m.norm, m.norm_eps })
    assert.are.equal(9400279040, total + 40 * 2 * 4096) -- glm4's sandwich norms
    -- absent keys: GlmConfig's head_dim 128, 2 KV heads, q/k/v biases,
    -- RoPE on half of each head
    local c = copy(GLM4_9B_HF)
    c.head_dim, c.num_key_value_heads, c.attention_bias, c.partial_rotary_factor = nil, nil, nil, nil
    m = hf.from_config(c, "glm-4-9b-chat-hf.json")
    assert.are.same({ 9399951360, 2, 128, 0.5 }, { core.model_params(m).total, m.num_query_groups, m.head_dim,
      m.rotary_percent })
    -- attention_bias false: none on q, k, v either
    c.attention_bias = false
    m = hf.from_config(c, "glm-4-9b-chat-hf.json")
    assert.are.equal(9399951360 - 40 * (4096 + 2 * 256), core.model_params(m).total)
  end)
end)

describe("OLMo 1", function()
  -- OLMo-7B-0424-hf (card: 6.89B; transformers modular_olmo.py @
  -- 00a98e71).  Per layer q, k, v, o 4096 x 4096 = 16,777,216 each, the
  -- SwiGLU MLP 3 x 4096 x 11008 = 135,266,304, two OlmoLayerNorms with no
  -- weight or bias: 0; 202,375,168; x32 = 6,476,005,376.  Untied
  -- embedding and lm_head 2 x 50304 x 4096 = 412,090,368; the final norm
  -- 0.  Total 6,888,095,744.
  it("OLMo-7B (olmo): 6,888,095,744; LayerNorms without weights, clip_qkv noted", function()
    local m, info = hf.from_config(copy(OLMO_7B), "olmo-7b.json")
    local layer = 4 * 4096 * 4096 + 3 * 4096 * 11008
    assert.are.equal(202375168, layer)
    local p = core.model_params(m)
    assert.are.equal(32 * layer + 2 * 50304 * 4096, p.total)
    assert.are.equal(6888095744, p.total)
    assert.are.equal(0, p.final_norm)
    assert.is_true(near(p.total, 6.89e9, CARD_ROUNDING)) -- "6.89B": three digits
    assert.are.same({ "layernorm", false, true, 1e-5, false, false }, { m.norm, m.norm_bias, m.norm_weightless,
      m.norm_eps, m.qkv_bias, m.mlp_bias })
    assert.are.same({ "olmo-7b.json: clip_qkv = 8 clamps Q, K and V element-wise; not priced" }, info.notes)
    -- OLMo-1B-hf's card shapes (h 2048, MLP 8192, 16 layers of 16 heads,
    -- tied; card 1.18B): per layer 4 x 2048^2 + 3 x 2048 x 8192 =
    -- 67,108,864; x16 + the tied 50304 x 2048 = 1,176,764,416
    local c = copy(OLMO_7B)
    c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads =
      2048, 8192, 16, 16, 16
    c.tie_word_embeddings, c.clip_qkv = true, nil
    m, info = hf.from_config(c, "olmo-1b.json")
    assert.are.equal(1176764416, 16 * 67108864 + 50304 * 2048)
    assert.are.equal(1176764416, core.model_params(m).total)
    assert.is_true(near(1176764416, 1.18e9, CARD_ROUNDING))
    assert.are.same({}, info.notes)
    -- attention_bias: q, k, v and o biases; the MLP never has one (OlmoMLP)
    c = copy(OLMO_7B)
    c.attention_bias, c.mlp_bias = true, true
    m = hf.from_config(c, "olmo-7b.json")
    assert.are.equal(6888095744 + 32 * 4 * 4096, core.model_params(m).total)
    assert.is_false(m.mlp_bias)
    -- a hand-written table with the field counts the same
    local t = {}
    for k, v in pairs(hf.from_config(copy(OLMO_7B), "olmo-7b.json")) do t[k] = v end
    t.norm_weightless = false
    assert.are.equal(6888095744 + (2 * 32 + 1) * 4096, core.model_params(t).total)
  end)
end)

describe("Bamba", function()
  --- ibm-ai-platform/Bamba-9B's config keys (BambaForCausalLM), typed.
  local BAMBA_9B = { architectures = { "BambaForCausalLM" }, model_type = "bamba", attention_dropout = 0.0,
    attn_layer_indices = { 9, 18, 27 }, hidden_act = "silu", hidden_size = 4096, intermediate_size = 14336,
    mamba_chunk_size = 256, mamba_conv_bias = true, mamba_d_conv = 4, mamba_d_head = 64, mamba_d_state = 128,
    mamba_expand = 2, mamba_n_groups = 1, mamba_n_heads = 128, mamba_proj_bias = false,
    max_position_embeddings = 262144, num_attention_heads = 32, num_hidden_layers = 32, num_key_value_heads = 8,
    rms_norm_eps = 1e-05, rope_theta = 10000.0, tie_word_embeddings = false, vocab_size = 128256 }

  -- Bamba-9B (card: 9.78B; transformers modular_bamba.py @ 024072ac).
  -- Each of the 32 layers is a mixer and a SwiGLU MLP, each under an
  -- RMSNorm.  BambaMixer (d_inner 2 x 4096 = 8192, 1 group, state 128,
  -- 128 heads): in_proj 4096 x (8192 + 8448 + 128) = 68,681,728 (conv_dim
  -- 8192 + 2 x 128 = 8448), conv1d 8448 x 4 + 8448 = 42,240, dt_bias,
  -- A_log, D 3 x 128, the gated RMSNorm 8,192, out_proj 8192 x 4096 =
  -- 33,554,432, its input norm 4,096: 102,291,072, on 29 layers.
  -- Attention on layers 9, 18, 27: q, o 4096^2, k, v 4096 x 1024, no
  -- biases, the norm: 41,947,136.  The MLP 3 x 4096 x 14336 + its norm =
  -- 176,164,864 on all 32.  Untied embedding and lm_head 2 x 128256 x 4096
  -- = 1,050,673,152; the final norm 4,096.  Total 9,780,235,392.
  it("Bamba-9B: 9,780,235,392; Granite 4.0's hybrid blocks with attention at attn_layer_indices", function()
    local m, info = hf.from_config(copy(BAMBA_9B), "bamba-9b.json")
    local mamba = 4096 * (8192 + 8448 + 128) + (8448 * 4 + 8448) + 3 * 128 + 8192 + 8192 * 4096 + 4096
    local attn = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096
    local mlp = 3 * 4096 * 14336 + 4096
    assert.are.same({ 102291072, 41947136, 176164864 }, { mamba, attn, mlp })
    local total = core.model_params(m).total
    assert.are.equal(29 * mamba + 3 * attn + 32 * mlp + 2 * 128256 * 4096 + 4096, total)
    assert.are.equal(9780235392, total)
    assert.is_true(near(total, 9.78e9, CARD_ROUNDING)) -- "9.78B": three digits
    local pattern = ("M-"):rep(9) .. "*-" .. ("M-"):rep(8) .. "*-" .. ("M-"):rep(8) .. "*-" .. ("M-"):rep(4)
    assert.are.same({ 64, pattern, "rope", 0.5, 64, 1, 128, 256, false },
      { m.num_layers, m.hybrid_layer_pattern, m.position_embedding, m.rotary_percent, m.mamba_head_dim,
        m.mamba_num_groups, m.mamba_num_heads, m.mamba_chunk_size, m.mup_multipliers or false })
    assert.truthy(info.notes[1]:find("its 32 layers are 64 blocks of Megatron-Core's hybrid pattern", 1, true))
    -- absent keys: BambaConfig's; mamba_d_head "auto" is 2 x 4096 / 128 = 64
    local c = copy(BAMBA_9B)
    c.mamba_d_head, c.mamba_n_heads, c.num_key_value_heads, c.tie_word_embeddings = "auto", nil, nil, nil
    assert.are.equal(9780235392, core.model_params(hf.from_config(c, "bamba-9b.json")).total)
    -- no attention indices: every layer Mamba-2
    c = copy(BAMBA_9B)
    c.attn_layer_indices = nil
    assert.are.equal(("M-"):rep(32), hf.from_config(c, "bamba-9b.json").hybrid_layer_pattern)
  end)

  it("refuses what BambaConfig would not build as stated, naming the key", function()
    local c = copy(BAMBA_9B)
    c.partial_rotary_factor = 1.0
    assert.are.equal("b.json: partial_rotary_factor: expected 0.5 or absent (BambaConfig sets it to 0.5) (got 1)",
      err_of(hf.from_config, c, "b.json"))
    c = copy(BAMBA_9B)
    c.attn_layer_indices = { 9, 32 }
    assert.are.equal("b.json: attn_layer_indices[1]: expected a layer index below num_hidden_layers = 32 (got 32)",
      err_of(hf.from_config, c, "b.json"))
    c = copy(BAMBA_9B)
    c.mamba_proj_bias = true
    assert.are.equal("b.json: mamba_proj_bias: expected false (biases are not modelled on a hybrid model) (got true)",
      err_of(hf.from_config, c, "b.json"))
    c = copy(BAMBA_9B)
    c.hidden_act = "gelu"
    assert.are.equal('b.json: hidden_act: expected "silu" (Bamba\'s SwiGLU MLP and Mamba-2 mixer) (got "gelu")',
      err_of(hf.from_config, c, "b.json"))
  end)
end)

describe("GPT-BigCode", function()
  --- bigcode/gpt_bigcode-santacoder's config.json, every key as a copy of it
  -- in the public code index reads (the index does not name the repository
  -- holding it).
  local SANTACODER = { activation_function = "gelu_pytorch_tanh", architectures = { "GPTBigCodeForCausalLM" },
    attention_softmax_in_fp32 = true, multi_query = true, attn_pdrop = 0.1, bos_token_id = 49152, embd_pdrop = 0.1,
    eos_token_id = 49152, initializer_range = 0.02, layer_norm_epsilon = 1e-05, model_type = "gpt_bigcode",
    n_embd = 2048, n_head = 16, n_inner = 8192, n_layer = 24, n_positions = 2048, resid_pdrop = 0.1,
    runner_max_sequence_length = cjson.null, scale_attention_softmax_in_fp32 = true, scale_attn_weights = true,
    summary_activation = cjson.null, summary_first_dropout = 0.1, summary_proj_to_labels = true,
    summary_type = "cls_index", summary_use_proj = true, transformers_version = "4.28.0.dev0", use_cache = true,
    vocab_size = 49280 }

  -- transformers modeling_gpt_bigcode.py @ 05ff2e98: per layer c_attn
  -- h x (h + 2 d) and its bias (one K and one V head of d = h / a), c_proj
  -- h x h + h, c_fc h x f + f, the MLP's c_proj f x h + h, ln_1 and ln_2
  -- with bias 4 h.  SantaCoder (card: 1.1B; h 2048, d 128, f 8192):
  -- 4,720,896 + 4,196,352 + 16,785,408 + 16,779,264 + 8,192 = 42,490,112;
  -- x24 = 1,019,762,688; the tied wte 49280 x 2048 = 100,925,440, wpe
  -- 2048 x 2048 = 4,194,304, ln_f 4,096: 1,124,886,528.  StarCoder (card:
  -- 15.5B; h 6144, 48 heads, f 24576, 40 layers, 8192 positions, vocab
  -- 49152): per layer 379,128,064; x40 + wte 301,989,888 + wpe 50,331,648
  -- + ln_f 12,288 = 15,517,456,384.
  it("SantaCoder 1,124,886,528 and StarCoder 15,517,456,384: multi-query attention, learned positions", function()
    local function layer(h, d, f)
      return (h * (h + 2 * d) + h + 2 * d) + (h * h + h) + (h * f + f) + (f * h + h) + 4 * h
    end
    assert.are.equal(42490112, layer(2048, 128, 8192))
    local m, info = hf.from_config(copy(SANTACODER), "santacoder.json")
    local total = core.model_params(m).total
    assert.are.equal(24 * layer(2048, 128, 8192) + 49280 * 2048 + 2048 * 2048 + 2 * 2048, total)
    assert.are.equal(1124886528, total)
    assert.is_true(near(total, 1.1e9, CARD_ROUNDING_2))
    assert.are.same({ 1, "learned", 2048, "gelu", "layernorm", true, true, true, true, true },
      { m.num_query_groups, m.position_embedding, m.max_position_embeddings, m.mlp, m.norm, m.norm_bias,
        m.qkv_bias, m.attn_out_bias, m.mlp_bias, m.tie_word_embeddings })
    assert.truthy(info.notes[1]:find("activation_function gelu_pytorch_tanh (the tanh approximation of GELU)", 1,
      true))
    assert.are.same({ true, "attn_pdrop" }, { info.dropout, info.dropout_key })
    local c = copy(SANTACODER)
    c.n_embd, c.n_head, c.n_inner, c.n_layer, c.n_positions, c.vocab_size = 6144, 48, 24576, 40, 8192, 49152
    assert.are.equal(379128064, layer(6144, 128, 24576))
    total = core.model_params(hf.from_config(c, "starcoder.json")).total
    assert.are.equal(40 * 379128064 + 49152 * 6144 + 8192 * 6144 + 2 * 6144, total)
    assert.are.equal(15517456384, total)
    assert.is_true(near(total, 15.5e9, CARD_ROUNDING))
    -- multi_query false: n_head K and V heads (c_attn h x 3h); absent n_inner 4 h
    c = copy(SANTACODER)
    c.multi_query, c.n_inner = false, nil
    m = hf.from_config(c, "santacoder.json")
    assert.are.same({ 16, 8192 }, { m.num_query_groups, m.ffn_hidden_size })
    assert.are.equal(1124886528 + 24 * 2 * (2048 * (2048 - 128) + (2048 - 128)), core.model_params(m).total)
  end)

  it("refuses cross-attention and an activation it does not price, naming the key", function()
    local c = copy(SANTACODER)
    c.add_cross_attention = true
    assert.are.equal("s.json: add_cross_attention: expected false (cross-attention to an encoder is not " ..
      "modelled) (got true)", err_of(hf.from_config, c, "s.json"))
    c = copy(SANTACODER)
    c.activation_function = "relu"
    assert.are.equal('s.json: activation_function: expected gelu, gelu_pytorch_tanh or gelu_new (GPTBigCodeMLP\'s ' ..
      'c_fc and c_proj are priced with GELU) (got "relu")', err_of(hf.from_config, c, "s.json"))
  end)
end)

describe("GPT-J", function()
  --- EleutherAI/gpt-j-6b's config.json keys (GPTJForCausalLM), typed.
  local GPTJ_6B = { activation_function = "gelu_new", architectures = { "GPTJForCausalLM" }, attn_pdrop = 0.0,
    bos_token_id = 50256, embd_pdrop = 0.0, eos_token_id = 50256, initializer_range = 0.02,
    layer_norm_epsilon = 1e-05, model_type = "gptj", n_embd = 4096, n_head = 16, n_inner = cjson.null, n_layer = 28,
    n_positions = 2048, resid_pdrop = 0.0, rotary = true, rotary_dim = 64, tie_word_embeddings = false,
    use_cache = true, vocab_size = 50400 }

  -- GPT-J-6B (transformers modeling_gptj.py @ 00b676f8).  Per layer q, k,
  -- v, out_proj 4096 x 4096 without bias = 67,108,864, fc_in 4096 x 16384
  -- + 16384 and fc_out 16384 x 4096 + 4096 = 134,238,208, ln_1 with bias
  -- 8,192 (attention and MLP read it in parallel): 201,355,264; x28 =
  -- 5,637,947,392.  Untied wte and lm_head 2 x 50400 x 4096 = 412,876,800,
  -- the lm_head's bias 50,400, ln_f 8,192.  Total 6,050,882,784; the
  -- card's table gives 6,053,381,344, 2,498,560 (0.04 %) more than the
  -- modules hold, without saying what it adds.
  it("GPT-J-6B (gptj): 6,050,882,784; parallel attention and MLP, RoPE on 64 of 256 dims interleaved", function()
    local m, info = hf.from_config(copy(GPTJ_6B), "gpt-j-6b.json")
    local layer = 4 * 4096 * 4096 + (4096 * 16384 + 16384) + (16384 * 4096 + 4096) + 2 * 4096
    assert.are.equal(201355264, layer)
    local total = core.model_params(m).total
    assert.are.equal(28 * layer + 2 * 50400 * 4096 + 50400 + 2 * 4096, total)
    assert.are.equal(6050882784, total)
    assert.are.equal(2498560, 6053381344 - total)
    assert.are.same({ "rope", 0.25, true, true, 1, false, false, true, true, "gelu", false },
      { m.position_embedding, m.rotary_percent, m.rotary_interleaved, m.parallel_attn_mlp, m.norms_per_layer,
        m.qkv_bias, m.attn_out_bias, m.mlp_bias, m.lm_head_bias, m.mlp, m.tie_word_embeddings })
    assert.truthy(info.notes[1]:find("activation_function gelu_new", 1, true))
    -- a null rotary_dim: every dim rotated
    local c = copy(GPTJ_6B)
    c.rotary_dim = cjson.null
    assert.is_nil(hf.from_config(c, "gpt-j-6b.json").rotary_percent)
    c.rotary_dim = 300
    assert.are.equal("g.json: rotary_dim: expected an even number of dims <= the head's 256 (got 300)",
      err_of(hf.from_config, c, "g.json"))
  end)
end)

describe("Falcon", function()
  --- tiiuae/falcon-7b's config.json keys (FalconForCausalLM), typed.
  local FALCON_7B = { alibi = false, apply_residual_connection_post_layernorm = false,
    architectures = { "FalconForCausalLM" }, attention_dropout = 0.0, bias = false, bos_token_id = 11,
    eos_token_id = 11, hidden_dropout = 0.0, hidden_size = 4544, initializer_range = 0.02,
    layer_norm_epsilon = 1e-05, model_type = "falcon", multi_query = true, new_decoder_architecture = false,
    num_attention_heads = 71, num_hidden_layers = 32, parallel_attn = true, use_cache = true, vocab_size = 65024 }
  --- tiiuae/falcon-40b's: the new decoder architecture, 8 KV heads.
  local FALCON_40B = { alibi = false, architectures = { "FalconForCausalLM" }, bias = false, hidden_size = 8192,
    layer_norm_epsilon = 1e-05, model_type = "falcon", new_decoder_architecture = true, num_attention_heads = 128,
    num_hidden_layers = 60, num_kv_heads = 8, parallel_attn = true, vocab_size = 65024 }

  -- transformers modeling_falcon.py (FalconAttention, FalconMLP,
  -- FalconDecoderLayer).  Falcon-7B (card: 7B, its name): 71 heads of 64,
  -- one K and V head (multi_query): query_key_value 4544 x (4544 + 128) =
  -- 21,229,568, dense 4544^2 = 20,647,936, the MLP 2 x 4544 x 18176 =
  -- 165,183,488, one input_layernorm with bias 9,088: 207,070,080; x32 =
  -- 6,626,242,560; the tied embedding 65024 x 4544 = 295,469,056, ln_f
  -- 9,088: 6,921,720,704.  Falcon-40B (card: 40B, its name): 128 heads
  -- of 64, 8 KV heads: query_key_value 8192 x (128 + 16) x 64 =
  -- 75,497,472, dense 67,108,864, the MLP 2 x 8192 x 32768 = 536,870,912,
  -- ln_attn and ln_mlp 32,768: 679,510,016; x60 + the tied 65024 x 8192 +
  -- ln_f = 41,303,293,952.
  it("Falcon-7B 6,921,720,704 (multi-query) and Falcon-40B 41,303,293,952 (new decoder architecture)", function()
    local m, info = hf.from_config(copy(FALCON_7B), "falcon-7b.json")
    local l7 = 4544 * (4544 + 128) + 4544 * 4544 + 2 * 4544 * 18176 + 2 * 4544
    assert.are.equal(207070080, l7)
    local total = core.model_params(m).total
    assert.are.equal(32 * l7 + 65024 * 4544 + 2 * 4544, total)
    assert.are.equal(6921720704, total)
    assert.are.same({ 1, 1, true, "gelu", false, false, true, "rope", 2048 }, { m.num_query_groups,
      m.norms_per_layer, m.parallel_attn_mlp, m.mlp, m.qkv_bias, m.mlp_bias, m.tie_word_embeddings,
      m.position_embedding, m.max_position_embeddings })
    assert.are.same({}, info.notes)
    m, info = hf.from_config(copy(FALCON_40B), "falcon-40b.json")
    local l40 = 8192 * (128 + 16) * 64 + 8192 * 8192 + 2 * 8192 * 32768 + 4 * 8192
    assert.are.equal(679510016, l40)
    total = core.model_params(m).total
    assert.are.equal(60 * l40 + 65024 * 8192 + 2 * 8192, total)
    assert.are.equal(41303293952, total)
    assert.are.same({ 8, 2, true }, { m.num_query_groups, m.norms_per_layer, m.parallel_attn_mlp })
    assert.truthy(info.notes[1]:find("a LayerNorm each (ln_attn, ln_mlp)", 1, true))
    -- the older names (n_head, n_layer, n_head_kv), as FalconConfig's attribute_map reads them
    local c = copy(FALCON_40B)
    c.num_attention_heads, c.num_hidden_layers, c.num_kv_heads = nil, nil, nil
    c.n_head, c.n_layer, c.n_head_kv = 128, 60, 8
    assert.are.equal(41303293952, core.model_params(hf.from_config(c, "falcon-40b.json")).total)
    -- one LayerNorm in parallel (num_ln_in_parallel_attn 1, Falcon2-11B): 2 x 8192 fewer per layer
    c = copy(FALCON_40B)
    c.num_ln_in_parallel_attn = 1
    assert.are.equal(41303293952 - 60 * 2 * 8192, core.model_params(hf.from_config(c, "f.json")).total)
    -- sequential (parallel_attn false): two LayerNorms, no parallel layer;
    -- bias: query_key_value, dense and the MLP's two with biases
    c = copy(FALCON_7B)
    c.parallel_attn, c.bias = false, true
    m = hf.from_config(c, "f.json")
    assert.are.same({ 2, false }, { m.norms_per_layer, m.parallel_attn_mlp or false })
    assert.are.equal(6921720704 + 32 * (2 * 4544 + (4544 + 128) + 4544 + 18176 + 4544), core.model_params(m).total)
  end)

  it("refuses ALiBi and a K/V head count the projection does not have, naming the key", function()
    local c = copy(FALCON_7B)
    c.alibi = true
    assert.are.equal("NotImplemented: f.json: alibi: Falcon-RW's ALiBi attention is not modelled for Falcon (its " ..
      "launch files would train RoPE) (got true)", err_of(hf.from_config, c, "f.json"))
    c = copy(FALCON_7B)
    c.multi_query, c.num_kv_heads = false, 8
    assert.are.equal("f.json: num_kv_heads: expected 71, num_attention_heads (query_key_value is 3 x hidden_size " ..
      "without new_decoder_architecture or multi_query) (got 8)", err_of(hf.from_config, c, "f.json"))
  end)
end)

describe("BLOOM", function()
  --- bigscience/bloom's config.json keys (BloomForCausalLM), typed.
  local BLOOM_176B = { apply_residual_connection_post_layernorm = false, attention_dropout = 0.0,
    architectures = { "BloomForCausalLM" }, attention_softmax_in_fp32 = true, pad_token_id = 3, bos_token_id = 1,
    eos_token_id = 2, hidden_dropout = 0.0, initializer_range = 0.02, layer_norm_epsilon = 1e-05,
    masked_softmax_fusion = true, model_type = "bloom", n_embed = 14336, n_inner = cjson.null, n_layer = 70,
    num_attention_heads = 112, offset_alibi = 100, pretraining_tp = 4, seq_length = 2048, skip_bias_add = true,
    skip_bias_add_qkv = false, slow_but_exact = false, unk_token_id = 0, use_cache = true, vocab_size = 250880 }

  -- BLOOM-176B (card: 176,247,271,424, with 3,596,615,680 embedding
  -- parameters; transformers modeling_bloom.py).  Per layer
  -- query_key_value 14336 x 43008 + 43008, dense 14336^2 + 14336,
  -- dense_h_to_4h 14336 x 57344 + 57344, dense_4h_to_h 57344 x 14336 +
  -- 14336, two LayerNorms with bias 4 x 14336: 2,466,437,120; x70 =
  -- 172,650,598,400.  The tied word embeddings 250880 x 14336 =
  -- 3,596,615,680, word_embeddings_layernorm and ln_f 2 x 28,672 (ALiBi:
  -- no position parameters).  Total 176,247,271,424, the card's.
  it("BLOOM-176B: 176,247,271,424, the card's count; ALiBi, the embedding LayerNorm", function()
    local m, info = hf.from_config(copy(BLOOM_176B), "bloom.json")
    local h = 14336
    local layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 4 * h
    assert.are.equal(2466437120, layer)
    local p = core.model_params(m)
    assert.are.equal(70 * layer + 250880 * h + 2 * (2 * h), p.total)
    assert.are.equal(176247271424, p.total)
    assert.are.equal(3596615680 + 2 * h, p.embedding)
    assert.are.same({ "alibi", true, true, "gelu", 57344, 112, true }, { m.position_embedding, m.embedding_norm,
      m.tie_word_embeddings, m.mlp, m.ffn_hidden_size, m.num_query_groups, m.mlp_bias })
    assert.truthy(info.notes[1]:find("BloomGelu (the tanh approximation of GELU)", 1, true))
    -- BLOOM-560m's card shapes (1024 wide, 24 layers, 16 heads; card
    -- 559,214,592): per layer 12,596,224 (the same shapes at h 1024)
    local c = copy(BLOOM_176B)
    c.n_embed, c.n_layer, c.num_attention_heads = 1024, 24, 16
    h = 1024
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 4 * h
    assert.are.equal(559214592, 24 * layer + 250880 * h + 4 * h)
    assert.are.equal(559214592, core.model_params(hf.from_config(c, "bloom-560m.json")).total)
    c = copy(BLOOM_176B)
    c.apply_residual_connection_post_layernorm = true
    assert.are.equal("NotImplemented: b.json: apply_residual_connection_post_layernorm: the residual taken after " ..
      "each LayerNorm is not modelled (got true)", err_of(hf.from_config, c, "b.json"))
  end)
end)

describe("Helium", function()
  --- kyutai/helium-1-preview-2b's config keys (HeliumForCausalLM), typed.
  local HELIUM_2B = { architectures = { "HeliumForCausalLM" }, model_type = "helium", attention_bias = false,
    head_dim = 128, hidden_act = "silu", hidden_size = 2560, intermediate_size = 7040,
    max_position_embeddings = 4096, mlp_bias = false, num_attention_heads = 20, num_hidden_layers = 24,
    num_key_value_heads = 20, rms_norm_eps = 1e-08, rope_theta = 100000.0, tie_word_embeddings = false,
    vocab_size = 48000 }

  -- Helium-1 preview 2B (card: 2B, its name; transformers
  -- modular_helium.py @ 0911f54a).  Per layer q, k, v 2560 x (20 x 128)
  -- and o_proj 2560 x 2560, no biases: 26,214,400; the SwiGLU MLP 3 x
  -- 2560 x 7040 = 54,067,200; two RMSNorms 5,120: 80,286,720; x24 =
  -- 1,926,881,280.  Untied embedding and lm_head 2 x 48000 x 2560 =
  -- 245,760,000; the final norm 2,560.  Total 2,172,643,840.
  it("Helium-1 preview 2B: 2,172,643,840; Llama with interleaved RoPE", function()
    local m = hf.from_config(copy(HELIUM_2B), "helium-2b.json")
    local layer = 4 * 2560 * 2560 + 3 * 2560 * 7040 + 2 * 2560
    assert.are.equal(80286720, layer)
    local total = core.model_params(m).total
    assert.are.equal(24 * layer + 2 * 48000 * 2560 + 2560, total)
    assert.are.equal(2172643840, total)
    assert.are.same({ true, 100000.0, false, 1e-08 }, { m.rotary_interleaved, m.rope_theta, m.attn_out_bias,
      m.norm_eps })
    -- absent keys: HeliumConfig's 20 KV heads, head_dim 128, RoPE base 100000
    local c = copy(HELIUM_2B)
    c.num_key_value_heads, c.head_dim, c.rope_theta = nil, nil, nil
    m = hf.from_config(c, "helium-2b.json")
    assert.are.same({ 2172643840, 20, 100000.0 }, { core.model_params(m).total, m.num_query_groups, m.rope_theta })
    -- attention_bias: q, k, v only (o_proj never has one)
    c.attention_bias = true
    assert.are.equal(2172643840 + 24 * 3 * 2560, core.model_params(hf.from_config(c, "h.json")).total)
    c = copy(HELIUM_2B)
    c.head_dim = 64
    assert.are.equal("h.json: head_dim: expected hidden_size / num_attention_heads = 128.0 (HeliumAttention's " ..
      "o_proj is hidden_size x hidden_size) (got 64)", err_of(hf.from_config, c, "h.json"))
  end)
end)

describe("GLM-4.1V (text model)", function()
  --- zai-org/GLM-4.1V-9B-Thinking's config keys (Glm4vForConditionalGeneration),
  -- typed: its text_config; the vision_config's depth and width only.
  local GLM41V = { architectures = { "Glm4vForConditionalGeneration" }, model_type = "glm4v",
    text_config = { model_type = "glm4v_text", attention_bias = true, attention_dropout = 0.0, hidden_act = "silu",
      hidden_size = 4096, intermediate_size = 13696, max_position_embeddings = 65536, num_attention_heads = 32,
      num_hidden_layers = 40, num_key_value_heads = 2, partial_rotary_factor = 0.5, rms_norm_eps = 1e-05,
      rope_scaling = { rope_type = "default", mrope_section = { 8, 12, 12 } }, rope_theta = 10000,
      tie_word_embeddings = false, vocab_size = 151552 },
    vision_config = { depth = 24, hidden_size = 1536, model_type = "glm4v" } }

  -- transformers modeling_glm4v.py @ 005612ef: the text model is
  -- GLM-4-9B-0414's shapes (glm4: 9,400,279,040): per layer q 4096 x
  -- 4096 + 4096, k, v 4096 x 256 + 256 each, o 4096^2, the fused SwiGLU 3 x
  -- 4096 x 13696, four RMSNorms 16,384: 203,969,024; x40 + the untied
  -- 2 x 151552 x 4096 + the final norm.  The card's 10B includes the
  -- vision tower, which is not counted (a note says so).
  it("GLM-4.1V-9B: its text model 9,400,279,040, read through the glm4v wrapper", function()
    local m, info = hf.from_config(H.copy(GLM41V), "glm-4.1v-9b.json")
    local layer = (4096 * 4096 + 4096) + 2 * (4096 * 256 + 256) + 4096 * 4096 + 3 * 4096 * 13696 + 4 * 4096
    assert.are.equal(203969024, layer)
    local total = core.model_params(m).total
    assert.are.equal(40 * layer + 2 * 151552 * 4096 + 4096, total)
    assert.are.equal(9400279040, total)
    assert.are.same({ 4, true, false, 0.5, true, 128 }, { m.norms_per_layer, m.qkv_bias, m.attn_out_bias,
      m.rotary_percent, m.rotary_interleaved, m.head_dim })
    assert.truthy(info.notes[1]:find("model_type glm4v is multimodal: the estimate trains its text model", 1, true))
    -- Glm4vTextAttention reads neither head_dim nor attention_bias; an absent
    -- partial_rotary_factor rotates every dim (Glm4vTextConfig has no 0.5)
    local t = copy(GLM41V.text_config)
    t.head_dim, t.attention_bias, t.partial_rotary_factor = 64, false, nil
    m = hf.from_config(t, "glm-4.1v-text.json")
    assert.are.same({ 9400279040, 128, true }, { core.model_params(m).total, m.head_dim, m.qkv_bias })
    assert.is_nil(m.rotary_percent)
  end)
end)

describe("GLM-4.5V (text model)", function()
  -- transformers modular_glm4v_moe.py @ 0067189d: GLM-4.5V's text model is
  -- GLM-4.5-Air's (examples/models/glm-4.5-air.json, its count tested in
  -- models_glm_llama4_spec: 106,852,251,264 total, 13,424,129,664 active;
  -- the card's 106B / 12B) with Glm4Attention, which has no Q/K norms
  it("GLM-4.5V: its text model counts as GLM-4.5-Air; use_qk_norm is not read", function()
    local text = H.example_config("glm-4.5-air")
    text.use_qk_norm = true -- Glm4vMoeTextConfig drops it, Glm4Attention has none
    local m, info = hf.from_config({ architectures = { "Glm4vMoeForConditionalGeneration" }, model_type = "glm4v_moe",
      text_config = text, vision_config = { depth = 24 } }, "glm-4.5v.json")
    local p = core.model_params(m)
    assert.are.same({ 106852251264, 13424129664 }, { p.total, p.active })
    assert.are.same({ false, true, 0.5 }, { m.qk_norm, m.qkv_bias, m.rotary_percent })
    assert.truthy(info.notes[1]:find("model_type glm4v_moe is multimodal", 1, true))
    -- attention_bias absent: Glm4vMoeTextConfig's true (GLM-4.5's default is false)
    text.attention_bias = nil
    m = hf.from_config({ model_type = "glm4v_moe", text_config = text }, "glm-4.5v.json")
    assert.is_true(m.qkv_bias)
  end)
end)

describe("dense families, third batch: refusals name the file, key and value", function()
  it("an activation the readers do not price, a partial RoPE out of range", function()
    local c
    c = copy(COMMAND_R)
    c.hidden_act = "gelu"
    assert.are.equal('c.json: hidden_act: expected "silu" (Cohere\'s SwiGLU MLP) (got "gelu")',
      err_of(hf.from_config, c, "c.json"))
    c = copy(GLM4_9B_HF)
    c.hidden_act = "gelu"
    assert.are.equal('g.json: hidden_act: expected "silu" (GLM\'s SwiGLU MLP) (got "gelu")',
      err_of(hf.from_config, c, "g.json"))
    c = copy(GLM4_9B_HF)
    c.partial_rotary_factor = 2
    assert.are.equal("g.json: partial_rotary_factor: expected a number in (0, 1] (got 2)",
      err_of(hf.from_config, c, "g.json"))
  end)

  -- transformers configuration_zamba2.py, configuration_longcat_flash.py,
  -- configuration_gemma3n.py: each refused naming the keys that carry
  -- what is not modelled, before any generic MoE refusal (LongCat has
  -- experts); MiniMax-Text-01 and Jamba are read (models_minimax_spec.lua,
  -- models_jamba_spec.lua)
  it("Zamba2, LongCat-Flash and Gemma 3n are refused naming their keys", function()
    local function refusal(mt, extra)
      local c = { model_type = mt, hidden_size = 64, num_hidden_layers = 2, num_attention_heads = 4,
        intermediate_size = 128, vocab_size = 100 }
      for k, v in pairs(extra or {}) do c[k] = v end
      return err_of(hf.from_config, c, "x.json")
    end
    local want = {
      zamba2 = { "shared transformer blocks (num_mem_blocks", "use_shared_attention_adapter" },
      longcat_flash = { "zero-computation experts (zero_expert_num, zero_expert_type" },
      gemma3n = { "altup_num_inputs", "nor are its vision and audio towers" },
      gemma3n_text = { "laurel_rank", "num_kv_shared_layers" },
      -- Step-3 (vLLM step3_text.py): was "did you mean step3p5?", another model
      step3_text = { "share_q_dim low-rank query", "one K/V head of head_dim" },
      step3_vl = { "share_q_dim low-rank query", "nor is its vision tower" },
    }
    for mt, parts in pairs(want) do
      local e = refusal(mt, { num_experts = 16, n_routed_experts = 8, num_local_experts = 32 })
      assert.truthy(e:find("^NotImplemented: x%.json: model_type: " .. mt:gsub("_", "%%_") .. ": "), e)
      for _, p in ipairs(parts) do assert.truthy(e:find(p, 1, true), mt .. ": " .. e) end
    end
  end)
end)
