-- tests/lua/models_2026_spec.lua -- configs of the 2025-26 families users
-- bring, imported from their Hugging Face config.json (lua/apsearch/hf.lua):
-- MiniMax-M2 (minimax_m2), Kimi-K2 (kimi_k2, read as DeepSeek-V3 by its
-- architectures class), Qwen3-Coder-480B-A35B (qwen3_moe), GLM-4.7-Flash
-- (glm4_moe_lite), SmolLM3 (smollm3): exact total and active counts computed here from the
-- transformers module shapes, the published rounded totals as a check;
-- refusals that name the model type, key and what is not modelled.
--
-- The configs are examples/models/{minimax-m2.7, kimi-k2-instruct,
-- qwen3-coder-480b-a35b-instruct, smollm3-3b}.json, unmodified copies of
-- the Hub's config.json files (examples/models/README.md says where each
-- was taken from).

local ROOT = os.getenv("APS_ROOT") or "."
local core = require "apsearch.core"
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local MODELS = ROOT .. "/examples/models/"

local load, decoded = H.example_model, H.example_config

local err_of = H.err_of

local copy = H.copy

--- Parameters of a Qwen3-MoE config as transformers' Qwen3MoeForCausalLM
-- builds them (modeling_qwen3_moe.py): q h x a d, k and v h x kv d, o
-- a d x h, no biases; q_norm, k_norm RMSNorm(d); two RMSNorms h; router
-- E x h; E experts of 3 h f_e (top-k of them active); untied embed and
-- lm_head V x h; the final norm h.
local function qwen3_moe_counts(c)
  local h, a, kv, d = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim
  local E, expert = c.num_experts, 3 * c.hidden_size * c.moe_intermediate_size
  local common = 2 * h * a * d + 2 * h * kv * d + 2 * d + 2 * h + E * h
  local tail = 2 * c.vocab_size * h + h
  return { total = c.num_hidden_layers * (common + E * expert) + tail,
           active = c.num_hidden_layers * (common + c.num_experts_per_tok * expert) + tail }
end

describe("2025-26 families: exact parameter counts", function()
  -- MiniMaxAI/MiniMax-M2.7 (card: 230B total, 10B active).  transformers
  -- modular_minimax_m2.py @ ea9df1d3: MiniMaxM2Attention q, o 2*3072*6144
  -- + k, v 2*3072*1024 = 44,040,192, no biases; q_norm RMSNorm(48*128)
  -- 6,144 and k_norm RMSNorm(8*128) 1,024 (FlexOlmoAttention: the whole
  -- projection); 2 RMSNorms 6,144; MiniMaxM2TopKRouter 256*3072 = 786,432
  -- and e_score_correction_bias 256; 256 experts of 3*3072*1536 =
  -- 14,155,776 -> 3,623,878,656 (top-8: 113,246,208).  Per layer
  -- 3,668,718,848 (158,086,400 active); x62 = 227,460,568,576
  -- (9,801,356,800); embed + lm_head 2*200064*3072 = 1,229,193,216; norm
  -- 3,072.  Total 228,689,764,864; active 11,030,553,088.
  it("MiniMax-M2.7: 228,689,764,864 total, 11,030,553,088 active", function()
    local m, info = load("minimax-m2.7")
    assert.are.same({ 256, 8, 1536 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size })
    assert.is_true(m.qk_norm and m.qk_norm_full_width and m.moe_router_bias)
    assert.is_nil(m.moe_router_pre_softmax) -- MiniMaxM2TopKRouter renormalises the top-k
    assert.are.equal(0.5, m.rotary_percent)   -- rotary_dim 64 of head_dim 128
    local c = core.model_params(m)
    assert.are.equal(3668718848, c.per_moe_layer)
    assert.are.equal(228689764864, c.total)
    assert.are.equal(11030553088, c.active)
    assert.is_true(math.abs(c.total / 230e9 - 1) < 0.01) -- the card's 230B
    local mtp = false
    for _, n in ipairs(info.notes) do mtp = mtp or n:find("3 multi-token-prediction modules", 1, true) ~= nil end
    assert.is_true(mtp)
  end)

  -- moonshotai/Kimi-K2-Instruct (card: 1T total, 32B activated), remote
  -- code DeepseekV3ForCausalLM.  Per layer: MLA q_a 7168*1536 +
  -- q_a_layernorm 1536 + q_b 1536*64*192 + kv_a 7168*576 +
  -- kv_a_layernorm 512 + kv_b 512*64*256 + o 8192*7168 = 101,124,096, 2
  -- RMSNorms 14,336; the dense layer 0 MLP 3*7168*18432 = 396,361,728; each
  -- of 60 MoE layers router 384*7168 + bias 384 = 2,752,896, 384 + 1
  -- shared experts of 3*7168*2048 = 44,040,192 -> 17,059,365,248 (active
  -- 8 + 1 experts: 500,253,056); embed + lm_head 2*163840*7168 =
  -- 2,348,810,240; norm 7,168.  Total 1,026,408,232,448; active
  -- 32,861,500,928.
  it("Kimi-K2-Instruct (kimi_k2 read as deepseek_v3): 1,026,408,232,448 total, 32,861,500,928 active",
    function()
    local m, info = load("kimi-k2-instruct")
    assert.are.equal("deepseek_v3", info.model_type)
    assert.are.same({ 384, 8, 2048, 2048, 1 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size,
      m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers })
    local c = core.model_params(m)
    assert.are.equal(17059365248, c.per_moe_layer)
    assert.are.equal(1026408232448, c.total)
    assert.are.equal(32861500928, c.active)
    assert.is_true(math.abs(c.total / 1e12 - 1) < 0.03) -- the card's 1T
    -- a file without n_routed_experts is DeepseekV3Config's 256 experts
    -- (configuration_deepseek_v3.py @ 008e5743), said, not a dense model (a
    -- breaker's finding, 2026-12-07): 128 fewer experts of 44,040,192 and
    -- router rows of 7168 + 1 on each of the 60 MoE layers
    local cfg = decoded("kimi-k2-instruct")
    cfg.n_routed_experts, cfg.n_shared_experts = nil, nil
    local info2
    m, info2 = hf.from_config(cfg, "k2.json")
    assert.are.same({ 256, 2048 }, { m.num_experts, m.shared_expert_ffn_hidden_size })
    assert.are.equal(1026408232448 - 60 * (128 * 44040192 + 128 * 7168 + 128), core.model_params(m).total)
    assert.are.equal(688124499968, core.model_params(m).total)
    assert.are.equal("k2.json: not in the config (or null there), taken from transformers' deepseek_v3 class defaults: " ..
      "n_routed_experts = 256, n_shared_experts = 1 (they set the parameter count; a model's own config states them)",
      info2.notes[2])
    -- an explicit null is the remote code's none (modeling_deepseek.py: no
    -- shared expert; no query compression), not the class default
    cfg.n_routed_experts, cfg.n_shared_experts, cfg.q_lora_rank = 384, cjson.null, cjson.null
    m, info2 = hf.from_config(cfg, "k2.json")
    assert.are.same({ 384, nil, nil }, { m.num_experts, m.shared_expert_ffn_hidden_size, m.q_lora_rank })
    assert.are.equal(2, #info2.notes) -- kimi_k2 read as deepseek_v3; the fp8 checkpoint
    -- any other count key's null builds no model in transformers: refused,
    -- not taken for the class default ("not in the config" said it was
    -- absent; a breaker's round 10)
    cfg.kv_lora_rank = cjson.null
    assert.are.equal("k2.json: kv_lora_rank: null is no value here: transformers passes None to the config " ..
      "class, which builds no model with it (leave the key out for the class default) (got null)",
      err_of(hf.from_config, cfg, "k2.json"))
    for _, n in ipairs(info2.notes) do assert.falsy(n:find("class defaults", 1, true), n) end
  end)

  -- Qwen/Qwen3-Coder-480B-A35B-Instruct (card: 480B total, 35B
  -- activated); its qkv_bias, use_qk_norm and shared_expert_intermediate_size
  -- 0 are keys Qwen3MoeConfig does not read.  (Qwen3-235B-A22B is
  -- tests/fixtures/moe/qwen3-235b-a22b.json.)
  it("Qwen3-Coder-480B-A35B: 480,154,875,392 total, 35,474,765,312 active", function()
    local want = qwen3_moe_counts(decoded("qwen3-coder-480b-a35b-instruct"))
    assert.are.same({ 480154875392, 35474765312 }, { want.total, want.active })
    local c = core.model_params(load("qwen3-coder-480b-a35b-instruct"))
    assert.are.same({ 480154875392, 35474765312 }, { c.total, c.active })
    assert.is_true(math.abs(c.total / 480e9 - 1) < 0.01 and math.abs(c.active / 35e9 - 1) < 0.02)
  end)

  -- GLM-4.7-Flash (zai-org; card: 30B-A3B) as Glm4MoeLiteConfig's
  -- defaults describe it (modular_glm4_moe_lite.py @ 75a5f8b5; no copy of
  -- the Hub's config.json was at hand, so the config is the class's
  -- defaults).  Per layer: DeepseekV3Attention q_a 2048*768 + q_a_layernorm
  -- 768 + q_b 768*20*256 + kv_a 2048*576 + kv_a_layernorm 512 + kv_b
  -- 512*20*448 + o 5120*2048 = 21,759,232, 2 RMSNorms 4,096; layer 0
  -- (mlp_layer_types "dense") Glm4MoeMLP 3*2048*10240 = 62,914,560 ->
  -- 84,677,888; 46 MoE layers router 64*2048 + bias 64 = 131,136, 64 + 1
  -- shared experts of 3*2048*1536 = 9,437,184 -> 635,311,424 (active 4 + 1
  -- experts: 69,080,384); embed + lm_head 2*154880*2048 = 634,388,480;
  -- norm 2,048.  Total 29,943,393,920; active 3,896,766,080.
  it("GLM-4.7-Flash (glm4_moe_lite): 29,943,393,920 total, 3,896,766,080 active", function()
    local m = hf.from_config({ model_type = "glm4_moe_lite" }, "glm-4.7-flash.json")
    assert.are.same({ 768, 512, 192, 64, 256 }, { m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim,
      m.qk_rope_head_dim, m.v_head_dim })
    assert.are.same({ 64, 4, 1536, 1536, 1 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size,
      m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers })
    assert.are.same({ true, 1.8 }, { m.moe_router_bias, m.moe_router_topk_scaling_factor })
    assert.is_nil(m.moe_router_pre_softmax) -- norm_topk_prob defaults to true
    local c = core.model_params(m)
    assert.are.same({ 84677888, 635311424, 69080384 }, { c.per_layer, c.per_moe_layer,
      c.per_moe_layer_active })
    assert.are.same({ 29943393920, 3896766080 }, { c.total, c.active })
    assert.is_true(math.abs(c.total / 30e9 - 1) < 0.01)
    -- its MTP layer counted apart, not in the total
    local c2 = core.model_params(hf.from_config({ model_type = "glm4_moe_lite", num_nextn_predict_layers = 1,
      first_k_dense_replace = 1 }, "glm-4.7-flash.json"))
    assert.are.equal(c.total, c2.total)
    assert.is_true(c2.mtp > 0)
  end)

  it("GLM-4.7-Flash: mlp_layer_types places the dense layers; first_k_dense_replace must agree", function()
    local types = {}
    for i = 1, 47 do types[i] = (i == 1 or i == 11) and "dense" or "sparse" end
    local m = hf.from_config({ model_type = "glm4_moe_lite", mlp_layer_types = types }, "m.json")
    assert.are.same({ 0, 10 }, m.moe_dense_layers)
    assert.is_nil(m.moe_first_dense_layers)
    -- one MoE layer (635,311,424) becomes dense (84,677,888)
    assert.are.equal(29943393920 - 635311424 + 84677888, core.model_params(m).total)
    assert.are.equal("m.json: first_k_dense_replace: expected 1, the leading dense layers of mlp_layer_types " ..
      "(Glm4MoeLiteConfig builds those, not this key's) (got 3)",
      err_of(hf.from_config, { model_type = "glm4_moe_lite", first_k_dense_replace = 3 }, "m.json"))
    types[5] = "moe"
    assert.are.equal('m.json: mlp_layer_types[4]: expected "dense" or "sparse" (got "moe")',
      err_of(hf.from_config, { model_type = "glm4_moe_lite", mlp_layer_types = types }, "m.json"))
  end)

  -- HuggingFaceTB/SmolLM3-3B (card: 3B; the Hub's safetensors 3.08B).
  -- transformers modular_smollm3.py (Llama's layer): q, o 2*2048*2048 + k,
  -- v 2*2048*512 = 10,485,760; MLP 3*2048*11008 = 67,633,152; 2 RMSNorms
  -- 4,096: 78,123,008 per layer, x36 = 2,812,428,288; embed_tokens
  -- 128256*2048 = 262,668,288, tied to lm_head (PretrainedConfig's
  -- tie_word_embeddings, the file gives none); norm 2,048.  Total
  -- 3,075,098,624.  no_rope_layers drops RoPE on every 4th layer.
  it("SmolLM3-3B: 3,075,098,624, tied embeddings, NoPE every 4th layer", function()
    local m = load("smollm3-3b")
    assert.are.same({ true, 4, 5000000.0 }, { m.tie_word_embeddings, m.nope_layer_period, m.rope_theta })
    local c = core.model_params(m)
    assert.are.equal(3075098624, c.total)
    assert.are.equal(c.total, c.active)
    assert.is_true(math.abs(c.total / 3.08e9 - 1) < 0.005)
  end)
end)

describe("Qwen3 dense: exact parameter counts", function()
  -- transformers modeling_qwen3.py (Qwen3Attention: q a d x h, k and v
  -- kv d x h, o h x a d, no biases; q_norm, k_norm RMSNorm(head_dim);
  -- Qwen3MLP 3 h f; two RMSNorms h), embed V x h, lm_head V x h unless
  -- tied, the final norm h.
  -- Qwen/Qwen3-32B (card: 32.8B, 31.2B without embeddings): q 5120*8192
  -- = 41,943,040, k + v 2*5120*1024 = 10,485,760, o 41,943,040, q/k norms
  -- 256, MLP 3*5120*25600 = 393,216,000, norms 10,240: 487,598,336 per
  -- layer, x64 = 31,206,293,504; embed + lm_head 2*151936*5120 =
  -- 1,555,824,640; norm 5,120.  Total 32,762,123,264.
  it("Qwen3-32B: 32,762,123,264 (head_dim 128 with 64 heads of a 5120 model)", function()
    local m = load("qwen3-32b")
    assert.are.same({ 128, 64, 8, true }, { m.head_dim, m.num_attention_heads, m.num_query_groups, m.qk_norm })
    local c = core.model_params(m)
    assert.are.equal(32762123264, c.total)
    assert.are.equal(31206293504, c.total - 2 * 151936 * 5120 - 5120)
    assert.is_true(math.abs(c.total / 32.8e9 - 1) < 0.005)
  end)
  -- Qwen/Qwen3-1.7B (card: 1.7B, 1.4B without embeddings): q, o 2*2048*2048
  -- + k, v 2*2048*1024 = 12,582,912, q/k norms 256, MLP 3*2048*6144 =
  -- 37,748,736, norms 4,096: 50,336,000 per layer, x28 = 1,409,408,000;
  -- embed 151936*2048 = 311,164,928, tied to lm_head; norm 2,048.  Total
  -- 1,720,574,976.
  it("Qwen3-1.7B: 1,720,574,976, tied embeddings", function()
    local m = load("qwen3-1.7b")
    assert.is_true(m.tie_word_embeddings)
    local c = core.model_params(m)
    assert.are.equal(1720574976, c.total)
    assert.are.equal(1409408000, c.total - 151936 * 2048 - 2048)
  end)
end)

describe("2025-26 families: refusals name what is not modelled", function()
  local function with_cfg(cfg, changes)
    for k, v in pairs(changes) do cfg[k] = v end
    return err_of(hf.from_config, cfg, "m.json")
  end
  local function with(name, changes) return with_cfg(decoded(name), changes) end

  it("MiniMax: lightning-attention layers, a shared expert, what transformers hard-wires otherwise", function()
    local cfg = decoded("minimax-m2.7")
    cfg.attn_type_list[3] = 0
    assert.are.equal("NotImplemented: m.json: attn_type_list[2]: only softmax attention (1) is modelled; " ..
      "0 is lightning (linear) attention (got 0)", err_of(hf.from_config, cfg, "m.json"))
    assert.are.equal("NotImplemented: m.json: shared_intermediate_size: MiniMax's shared expert is not " ..
      "modelled (got 512)", with("minimax-m2.7", { shared_intermediate_size = 512 }))
    assert.are.equal('NotImplemented: m.json: scoring_func: a router without sigmoid scores (MiniMaxM2TopKRouter) ' ..
      'is not modelled (expected "sigmoid", got "softmax")', with("minimax-m2.7", { scoring_func = "softmax" }))
    assert.are.equal("NotImplemented: m.json: use_routing_bias: a sigmoid router without the expert score bias " ..
      "(MiniMaxM2SparseMoeBlock) is not modelled (expected true, got false)",
      with("minimax-m2.7", { use_routing_bias = false }))
    assert.are.equal("NotImplemented: m.json: qk_norm_type: Q/K norms other than over the whole projection " ..
      '(FlexOlmoAttention\'s) is not modelled (expected "per_layer", got "per_head")',
      with("minimax-m2.7", { qk_norm_type = "per_head" }))
    assert.are.equal("NotImplemented: m.json: use_qk_norm: attention without Q/K norms (MiniMaxM2Attention " ..
      "always has them) is not modelled (expected true, got false)", with("minimax-m2.7", { use_qk_norm = false }))
    assert.are.equal("m.json: rotary_dim: expected at most head_dim = 128 (got 256)",
      with("minimax-m2.7", { rotary_dim = 256 }))
  end)

  it("SmolLM3: a window (on its NoPE layers) is refused", function()
    local cfg = decoded("smollm3-3b")
    cfg.layer_types[4] = "sliding_attention"
    assert.are.equal("NotImplemented: m.json: layer_types: SmolLM3's sliding-window attention (on its NoPE " ..
      "layers) is not modelled (got " .. require("apsearch.util").describe(cfg.layer_types) .. ")",
      err_of(hf.from_config, cfg, "m.json"))
    cfg.layer_types = nil
    assert.are.equal("NotImplemented: m.json: use_sliding_window: SmolLM3's sliding-window attention (on its " ..
      "NoPE layers) is not modelled (got true)", with_cfg(cfg, { use_sliding_window = true, sliding_window = 4096 }))
  end)

  it("DeepSeek Sparse Attention's keys on a type that does not read them are refused", function()
    -- the indexer's keys in a config read as DeepSeek-V3 (by its model_type
    -- or its class): refused, not counted without the indexer (deepseek_v32
    -- and glm_moe_dsa read them: tests/lua/dsa_spec.lua)
    local why = "DeepSeek Sparse Attention (the lightning indexer of index_n_heads x index_head_dim per " ..
      "layer and the top-index_topk sparse attention) is modelled for model_type deepseek_v32 and " ..
      "glm_moe_dsa only"
    assert.are.equal("NotImplemented: m.json: index_topk: " .. why .. " (got 2048)",
      with("kimi-k2-instruct", { index_topk = 2048 }))
    assert.are.equal("NotImplemented: m.json: index_n_heads: " .. why .. " (got 64)",
      with("deepseek-v3", { index_n_heads = 64 }))
  end)

  -- ByteDance-Seed/Seed-OSS-36B at its card's shapes (hidden 5120, 64
  -- layers, 80 heads of 128, 8 KV heads, SwiGLU 27648, vocab 155136,
  -- untied): transformers modular_seed_oss.py @ 6e4054ae, q h x 10240 + its
  -- bias 10240, k and v h x 1024 + biases 1024 each, o 10240 x h without a
  -- bias (attention_out_bias false), MLP 3 h x 27648, two norms 2h =
  -- 540,039,168 per layer; x64 + embed and lm_head 2 x 155136 x h + the
  -- final norm h = 36,151,104,512 (the card's 36B); residual_dropout says
  -- dropout.
  it("Seed-OSS-36B: 36,151,104,512 parameters; o_proj's bias its own key", function()
    local cfg = { model_type = "seed_oss", architectures = { "SeedOssForCausalLM" }, hidden_size = 5120,
      num_hidden_layers = 64, num_attention_heads = 80, num_key_value_heads = 8, head_dim = 128,
      intermediate_size = 27648, vocab_size = 155136, tie_word_embeddings = false, attention_bias = true,
      attention_out_bias = false, residual_dropout = 0.1, attention_dropout = 0.0 }
    local m, info = hf.from_config(cfg, "seed.json")
    local h = 5120
    local layer = h * 10240 + 10240 + 2 * (h * 1024 + 1024) + 10240 * h + 3 * h * 27648 + 2 * h
    assert.are.equal(540039168, layer)
    assert.are.equal(64 * layer + 2 * 155136 * h + h, core.model_params(m).total)
    assert.are.equal(36151104512, core.model_params(m).total)
    assert.is_true(m.qkv_bias and not m.attn_out_bias)
    assert.are.same({ true, "residual_dropout" }, { info.dropout, info.dropout_key })
  end)

  -- baidu/ERNIE-4.5-21B-A3B-PT at its card's shapes (hidden 2560, 28
  -- layers, 20 heads of 128, 4 KV heads, dense SwiGLU 12288 on layer 0,
  -- layers 1-27 MoE: 64 experts of 1536, top 6, 2 shared experts as one
  -- MLP of 3072, vocab 103424, tied): transformers modular_ernie4_5_moe.py
  -- @ a4d4492d.  Attention q, o 2560 x 2560 and k, v 2560 x 512 =
  -- 15,728,640; two norms 5,120; the dense MLP 3 x 2560 x 12288 =
  -- 94,371,840; per MoE layer the gate 64 x 2560 = 163,840, the
  -- e_score_correction_bias 64, the experts 64 x 3 x 2560 x 1536 =
  -- 754,974,720 (6 active: 70,778,880), the shared MLP 3 x 2560 x 3072 =
  -- 23,592,960; the tied embedding 103424 x 2560 = 264,765,440 and the
  -- final norm.  Total 21,825,437,888 (the card's 21B), active
  -- 3,352,150,208 (3B without the embedding).
  it("ERNIE-4.5-21B-A3B: 21,825,437,888 total, 3,352,150,208 active", function()
    local cfg = { architectures = { "Ernie4_5_MoeForCausalLM" }, model_type = "ernie4_5_moe", hidden_size = 2560,
      intermediate_size = 12288, moe_intermediate_size = 1536, num_hidden_layers = 28, num_attention_heads = 20,
      num_key_value_heads = 4, head_dim = 128, moe_num_experts = 64, moe_num_shared_experts = 2, moe_k = 6,
      moe_layer_start_index = 1, moe_layer_end_index = 27, moe_layer_interval = 1, vocab_size = 103424,
      tie_word_embeddings = true, hidden_act = "silu", use_bias = false }
    local m = hf.from_config(cfg, "ernie.json")
    local c = core.model_params(m)
    local common = 28 * (15728640 + 5120) + 94371840 + 264765440 + 2560
    assert.are.equal(common + 27 * (163840 + 64 + 754974720 + 23592960), c.total)
    assert.are.equal(common + 27 * (163840 + 64 + 70778880 + 23592960), c.active)
    assert.are.same({ 21825437888, 3352150208 }, { c.total, c.active })
    assert.are.same({ 0 }, m.moe_dense_layers)
    assert.is_true(m.moe_router_bias and m.moe_router_softmax_bias) -- softmax scores + the expert bias
    -- the class's rope_theta and context where the config gives none
    assert.are.same({ 500000.0, 131072 }, { m.rope_theta, m.max_position_embeddings })
    -- a count key left out takes the class's default and is said:
    -- moe_num_shared_experts 2 (configuration_ernie4_5_moe.py @ f479d930),
    -- the same 2 x 1536 shared MLP as the card's
    local info
    cfg.moe_num_shared_experts = nil
    m, info = hf.from_config(cfg, "ernie.json")
    assert.are.equal(21825437888, core.model_params(m).total)
    assert.are.same({ "ernie.json: not in the config (or null there), taken from transformers' ernie4_5_moe class defaults: " ..
      "moe_num_shared_experts = 2 (they set the parameter count; a model's own config states them)" }, info.notes)
    cfg.moe_num_shared_experts = 2
    assert.are.same({}, select(2, hf.from_config(cfg, "ernie.json")).notes)
    -- layers 1-3 MoE every other layer (interval 2: layers 1 and 3), the
    -- end index -1 the last layer
    cfg.moe_layer_interval, cfg.moe_layer_end_index, cfg.num_hidden_layers = 2, -1, 4
    m = hf.from_config(cfg, "ernie.json")
    assert.are.same({ 2, 1 }, { m.moe_layer_freq, m.moe_layer_phase })
    assert.is_nil(m.moe_dense_layers)
    -- errors name ERNIE's own keys
    cfg.moe_layer_interval, cfg.moe_layer_end_index, cfg.num_hidden_layers = 1, 27, 28
    cfg.moe_k = 100
    assert.are.equal("ernie.json: moe_k (model.experts_per_token): 100 exceeds num_experts = 64 (a token is routed to " ..
      "that many distinct experts)",
      err_of(hf.from_config, cfg, "ernie.json"))
    cfg.moe_k, cfg.moe_layer_start_index = 6, 100
    assert.are.equal("ernie.json: moe_layer_start_index: no layer would have experts (moe_layer_interval = 1, " ..
      "moe_layer_end_index = 27, num_hidden_layers = 28) (got 100)", err_of(hf.from_config, cfg, "ernie.json"))
    cfg.moe_layer_start_index, cfg.hidden_act = 1, "gelu"
    assert.are.equal('ernie.json: hidden_act: expected "silu" (ERNIE 4.5\'s SwiGLU experts and MLP) (got "gelu")',
      err_of(hf.from_config, cfg, "ernie.json"))
    assert.are.equal("NotImplemented: ernie.json: use_bias: ERNIE 4.5 with biases on every projection and " ..
      "the lm_head is not modelled (got true)", err_of(hf.from_config, { model_type = "ernie4_5_moe",
      use_bias = true }, "ernie.json"))
  end)

  -- microsoft/Phi-3.5-MoE-instruct (card: 41.9B total, 6.6B active) at
  -- its config's keys (hidden 4096, 32 layers, 32 heads of 128, 8 KV
  -- heads, 16 experts of 6400 top 2, vocab 32064, attention_bias and
  -- lm_head_bias true, untied, longrope from a 4096 context to 131072):
  -- transformers modular_phimoe.py / configuration_phimoe.py @ 040e1a7e.
  -- Attention q, o 4096 x 4096 + 4096 bias each, k, v 4096 x 1024 + 1024
  -- each = 41,953,280; two LayerNorms with bias 2 x 8,192; the router
  -- 16 x 4096 = 65,536; the experts 16 x 3 x 4096 x 6400 = 1,258,291,200
  -- (2 active: 157,286,400); embedding 32064 x 4096 = 131,334,144; the
  -- lm_head the same + its bias 32,064; the final LayerNorm 8,192.
  it("Phi-3.5-MoE: 41,873,153,344 total, 6,640,999,744 active", function()
    local short, long = {}, {}
    for i = 1, 64 do short[i], long[i] = 1.0, 1.0 + i / 64 end -- the file's lists: 64 per-dim factors
    local cfg = { architectures = { "PhiMoEForCausalLM" }, model_type = "phimoe", attention_bias = true,
      attention_dropout = 0.0, hidden_act = "silu", hidden_dropout = 0.0, hidden_size = 4096,
      input_jitter_noise = 0.01, intermediate_size = 6400, lm_head_bias = true, max_position_embeddings = 131072,
      num_attention_heads = 32, num_experts_per_tok = 2, num_hidden_layers = 32, num_key_value_heads = 8,
      num_local_experts = 16, original_max_position_embeddings = 4096, rms_norm_eps = 1e-5,
      rope_scaling = { type = "longrope", short_factor = short, long_factor = long, short_mscale = 1.243163121016122,
        long_mscale = 1.243163121016122, original_max_position_embeddings = 4096 },
      rope_theta = 10000.0, router_aux_loss_coef = 0.0, router_jitter_noise = 0.01, sliding_window = 131072,
      tie_word_embeddings = false, vocab_size = 32064 }
    local m = hf.from_config(cfg, "phimoe.json")
    local c = core.model_params(m)
    local attn, norms, router = 41953280, 2 * 8192, 65536
    local common = 131334144 + (131334144 + 32064) + 8192
    assert.are.equal(common + 32 * (attn + norms + router + 1258291200), c.total)
    assert.are.equal(common + 32 * (attn + norms + router + 157286400), c.active)
    assert.are.same({ 41873153344, 6640999744 }, { c.total, c.active })
    assert.are.same({ "layernorm", true, true, true }, { m.norm, m.norm_bias, m.qkv_bias, m.lm_head_bias })
    -- transformers' longrope factor: max_position_embeddings / original context
    assert.are.same({ "longrope", 32.0, 4096 },
      { m.rope_scaling_type, m.rope_scaling_factor, m.original_max_position_embeddings })
    -- defaults of PhimoeConfig: no biases
    cfg.attention_bias, cfg.lm_head_bias = nil, nil
    c = core.model_params(hf.from_config(cfg, "phimoe.json"))
    assert.are.equal(41873153344 - 32 * (2 * 4096 + 2 * 1024) - 32064, c.total)
    cfg.rope_scaling.short_factor = "x"
    assert.are.equal('phimoe.json: rope_scaling: short_factor: expected an array of numbers (got "x")',
      err_of(hf.from_config, cfg, "phimoe.json"))
    cfg.rope_scaling.short_factor, cfg.hidden_act = short, "gelu"
    assert.are.equal('phimoe.json: hidden_act: expected "silu" (PhiMoE\'s SwiGLU experts) (got "gelu")',
      err_of(hf.from_config, cfg, "phimoe.json"))
  end)

  -- OLMo 2 and Olmo 3 (transformers modular_olmo2.py @ 008f5c8c,
  -- modular_olmo3.py @ 02e8340b): Llama's layer with RMSNorms over the
  -- whole Q (a*d) and K (k*d) projections and the two norms after
  -- attention and MLP.  OLMo-2-1124-7B (card 7.30B): h 4096, 32 layers,
  -- 32 heads and KV heads, MLP 11008, vocab 100352, untied: per layer
  -- 4 x 4096^2 + 2 x 4096 + 3 x 4096 x 11008 + 2 x 4096 = 202,391,552.
  -- Olmo-3-32B (card 32B): h 5120, 64 layers, 40 heads of 128, 8 KV heads,
  -- MLP 27648, vocab 100278: q, o 5120^2 each, k, v 5120 x 1024 each,
  -- q_norm 5120, k_norm 1024, MLP 3 x 5120 x 27648, two norms: 487,604,224;
  -- the window of 4096 on 3 of each 4 layers (Olmo3Config's layer_types).
  it("OLMo-2 7B 7,298,617,344 and Olmo-3 32B 32,233,522,176, norms after attention and MLP", function()
    local o2 = { architectures = { "Olmo2ForCausalLM" }, model_type = "olmo2", attention_bias = false,
      hidden_act = "silu", hidden_size = 4096, intermediate_size = 11008, max_position_embeddings = 4096,
      num_attention_heads = 32, num_hidden_layers = 32, num_key_value_heads = 32, rms_norm_eps = 1e-6,
      rope_theta = 500000, tie_word_embeddings = false, vocab_size = 100352 }
    local m = hf.from_config(o2, "olmo2.json")
    assert.are.equal(32 * 202391552 + 2 * 100352 * 4096 + 4096, core.model_params(m).total)
    assert.are.equal(7298617344, core.model_params(m).total)
    assert.are.same({ true, true, true }, { m.qk_norm, m.qk_norm_full_width, m.reordered_norm })
    assert.is_nil(m.sliding_window)
    local o3 = { architectures = { "Olmo3ForCausalLM" }, model_type = "olmo3", attention_bias = false,
      hidden_act = "silu", hidden_size = 5120, intermediate_size = 27648, num_hidden_layers = 64,
      num_attention_heads = 40, num_key_value_heads = 8, max_position_embeddings = 65536, rms_norm_eps = 1e-6,
      rope_theta = 500000, rope_scaling = { attention_factor = 1.2079441541679836, beta_fast = 32.0,
        beta_slow = 1.0, factor = 8.0, original_max_position_embeddings = 8192, rope_type = "yarn" },
      tie_word_embeddings = false, vocab_size = 100278 }
    m = hf.from_config(o3, "olmo3.json")
    local per = 2 * 5120 * 5120 + 2 * 5120 * 1024 + 5120 + 1024 + 3 * 5120 * 27648 + 2 * 5120
    assert.are.equal(487604224, per)
    assert.are.equal(64 * per + 2 * 100278 * 5120 + 5120, core.model_params(m).total)
    assert.are.equal(32233522176, core.model_params(m).total)
    -- the class's window (absent key) on layers i with i % 4 ~= 0 (1-based)
    assert.are.same({ 4096, 48, 4 }, { m.sliding_window, m.sliding_window_layers, m.sliding_window_period })
    assert.are.same({ "yarn", 8.0, 500000.0 }, { m.rope_scaling_type, m.rope_scaling_factor, m.rope_theta })
    -- transformers 5: the RoPE per layer type; the full-attention layers' is read
    o3.rope_theta, o3.rope_scaling = nil, nil
    o3.rope_parameters = { sliding_attention = { rope_type = "default", rope_theta = 500000.0 },
      full_attention = { rope_type = "yarn", rope_theta = 500000.0, factor = 8.0,
        original_max_position_embeddings = 8192 } }
    m = hf.from_config(o3, "olmo3.json")
    assert.are.same({ "yarn", 8.0, 500000.0, 8192 },
      { m.rope_scaling_type, m.rope_scaling_factor, m.rope_theta, m.original_max_position_embeddings })
    -- null window: none; an explicit layer_types list wins
    o3.sliding_window = cjson.null
    assert.is_nil(hf.from_config(o3, "olmo3.json").sliding_window)
    o3.sliding_window, o3.num_hidden_layers = 4096, 4
    o3.layer_types = { "sliding_attention", "full_attention", "sliding_attention", "full_attention" }
    m = hf.from_config(o3, "olmo3.json")
    assert.are.same({ 2, 2 }, { m.sliding_window_layers, m.sliding_window_period })
    o3.layer_types[2] = "global"
    assert.are.equal('olmo3.json: layer_types[1]: expected "sliding_attention" or "full_attention" (got "global")',
      err_of(hf.from_config, o3, "olmo3.json"))
  end)

  -- Mistral Small 3.1 / 3.2 (mistralai/Mistral-Small-3.2-24B-Instruct-2506,
  -- card 24B with its Pixtral tower): Mistral3Config's text_config is its
  -- own model_type (mistral: h 5120, 40 layers, 32 heads of 128, 8 KV
  -- heads, MLP 32768, vocab 131072, untied as MistralConfig's default):
  -- per layer q, o 5120 x 4096 each, k, v 5120 x 1024 each, MLP
  -- 3 x 5120 x 32768, two norms = 555,755,520; embed + lm_head
  -- 2 x 131072 x 5120; final norm.  A text_config of a type without a
  -- reader (xLSTM's xlstm) is refused naming it; Mistral Small 4's
  -- mistral4: tests/lua/models_mistral4_spec.lua.
  it("Mistral Small 3.x (mistral3): its mistral text model, 23,572,403,200 without the vision tower", function()
    local cfg = { architectures = { "Mistral3ForConditionalGeneration" }, model_type = "mistral3",
      image_token_index = 10, projector_hidden_act = "gelu", spatial_merge_size = 2,
      text_config = { attention_dropout = 0.0, head_dim = 128, hidden_act = "silu", hidden_size = 5120,
        intermediate_size = 32768, max_position_embeddings = 131072, model_type = "mistral",
        num_attention_heads = 32, num_hidden_layers = 40, num_key_value_heads = 8, rms_norm_eps = 1e-05,
        rope_theta = 1000000000.0, sliding_window = cjson.null, vocab_size = 131072 },
      vision_config = { head_dim = 64, hidden_size = 1024, image_size = 1540, intermediate_size = 4096,
        model_type = "pixtral", num_attention_heads = 16, num_hidden_layers = 24, patch_size = 14 } }
    local m, info = hf.from_config(cfg, "mistral3.json")
    local layer = 2 * 5120 * 4096 + 2 * 5120 * 1024 + 3 * 5120 * 32768 + 2 * 5120
    assert.are.equal(40 * layer + 2 * 131072 * 5120 + 5120, core.model_params(m).total)
    assert.are.equal(23572403200, core.model_params(m).total)
    assert.are.same({ false, 1e9 }, { m.tie_word_embeddings, m.rope_theta })
    assert.truthy(info.notes[1]:find("trains its text model (text_config, model_type mistral)", 1, true))
    cfg.text_config.model_type = nil -- Mistral3Config's default text type
    assert.are.equal(23572403200, core.model_params((hf.from_config(cfg, "mistral3.json"))).total)
    cfg.text_config.model_type = "xlstm"
    assert.are.equal("NotImplemented: mistral3.json: model_type: mistral3 is multimodal: its vision tower " ..
      "(vision_config) is not modelled; its text_config is not either (model_type \"xlstm\")",
      err_of(hf.from_config, cfg, "mistral3.json"))
  end)

  -- GLM-4-9B-0414 (zai-org/GLM-4-9B-0414, card 9.4B): transformers
  -- modular_glm4.py @ 08c53278 (Glm4DecoderLayer: four RMSNorms;
  -- GlmAttention: q, k, v biases, o_proj none; Phi3MLP: fused gate_up of
  -- 2f, down f): h 4096, 40 layers, 32 heads of 128, 2 KV heads, MLP 13696,
  -- vocab 151552, untied.  Per layer q, o 4096 x 4096, k, v 4096 x 256,
  -- q/k/v biases 4096 + 2 x 256, MLP 3 x 4096 x 13696, 4 norms.
  it("GLM-4-9B-0414: 9,400,279,040, interleaved RoPE on half of each head, four norms", function()
    local cfg = { architectures = { "Glm4ForCausalLM" }, model_type = "glm4", attention_bias = true,
      head_dim = 128, hidden_act = "silu", hidden_size = 4096, intermediate_size = 13696,
      max_position_embeddings = 32768, num_attention_heads = 32, num_hidden_layers = 40, num_key_value_heads = 2,
      partial_rotary_factor = 0.5, rms_norm_eps = 1e-05, rope_theta = 10000.0, tie_word_embeddings = false,
      vocab_size = 151552 }
    local m = hf.from_config(cfg, "glm4.json")
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 256 + 4096 + 2 * 256 + 3 * 4096 * 13696 + 4 * 4096
    assert.are.equal(40 * layer + 2 * 151552 * 4096 + 4096, core.model_params(m).total)
    assert.are.equal(9400279040, core.model_params(m).total)
    assert.are.same({ 4, true, 0.5, true, false }, { m.norms_per_layer, m.rotary_interleaved, m.rotary_percent,
      m.qkv_bias, m.attn_out_bias })
    -- the core refuses interleaving without RoPE
    assert.truthy(err_of(core.model_params, { num_layers = 2, hidden_size = 64, num_attention_heads = 4, num_query_groups = 4,
      ffn_hidden_size = 128, vocab_size = 100, position_embedding = "learned", max_position_embeddings = 64,
      rotary_interleaved = true }):find("model.rotary_interleaved: given without RoPE", 1, true))
  end)

  -- IBM Granite (transformers modeling_granite.py, modeling_granitemoe.py @
  -- 013458c1, modeling_granitemoeshared.py): Llama's attention, SwiGLU
  -- experts input_linear h -> 2f and output_linear f -> h, a bias-free
  -- router, the multipliers as constants.  granite-3.1-3b-a800m (card 3.3B
  -- / 800M): h 1536, 32 layers, 24 heads of 64, 8 KV heads, 40 experts of
  -- 512 top 8, vocab 49155, tied: per layer q, o 1536^2, k, v 1536 x 512,
  -- two norms, router 40 x 1536, experts 40 x 3 x 1536 x 512.
  -- granite-3.3-8b (card 8.17B): h 4096, 40 layers, 32 heads, 8 KV heads,
  -- MLP 12800, vocab 49159, tied.
  it("Granite: 3.1-3B-A800M 3,298,793,472 / 882,874,368, 3.3-8B 8,170,864,640; shared MLP; multipliers noted", function()
    local cfg = { architectures = { "GraniteMoeForCausalLM" }, model_type = "granitemoe", attention_bias = false,
      attention_multiplier = 0.015625, embedding_multiplier = 12.0, hidden_act = "silu", hidden_size = 1536,
      intermediate_size = 512, logits_scaling = 6.0, max_position_embeddings = 131072, num_attention_heads = 24,
      num_experts_per_tok = 8, num_hidden_layers = 32, num_key_value_heads = 8, num_local_experts = 40,
      residual_multiplier = 0.22, rms_norm_eps = 1e-6, rope_theta = 10000000.0, tie_word_embeddings = true,
      vocab_size = 49155 }
    local m, info = hf.from_config(cfg, "granitemoe.json")
    local c = core.model_params(m)
    local common = 2 * 1536 * 1536 + 2 * 1536 * 512 + 2 * 1536 + 40 * 1536
    assert.are.equal(32 * (common + 40 * 3 * 1536 * 512) + 49155 * 1536 + 1536, c.total)
    assert.are.equal(32 * (common + 8 * 3 * 1536 * 512) + 49155 * 1536 + 1536, c.active)
    assert.are.same({ 3298793472, 882874368 }, { c.total, c.active })
    assert.is_true(m.mup_multipliers)
    assert.truthy(info.notes[1]:find("residual_multiplier 0.22", 1, true), info.notes[1])
    -- GraniteMoeShared: an ungated shared MLP of shared_intermediate_size
    cfg.model_type, cfg.architectures, cfg.shared_intermediate_size = "granitemoeshared", nil, 1024
    c = core.model_params((hf.from_config(cfg, "granitemoeshared.json")))
    assert.are.equal(3298793472 + 32 * 3 * 1536 * 1024, c.total)
    local dense = { architectures = { "GraniteForCausalLM" }, model_type = "granite", hidden_size = 4096,
      intermediate_size = 12800, num_attention_heads = 32, num_hidden_layers = 40, num_key_value_heads = 8,
      vocab_size = 49159, tie_word_embeddings = true, attention_multiplier = 0.0078125, embedding_multiplier = 12.0,
      logits_scaling = 16.0, residual_multiplier = 0.22 }
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12800 + 2 * 4096
    c = core.model_params((hf.from_config(dense, "granite.json")))
    assert.are.equal(40 * layer + 49159 * 4096 + 4096, c.total)
    assert.are.equal(8170864640, c.total)
  end)

  -- Granite 4.0 hybrids (granitemoehybrid; transformers
  -- modeling_granitemoehybrid.py): each layer a Mamba-2 or attention mixer
  -- and then the shared SwiGLU MLP with Granite's experts, as the pattern
  -- blocks M/* then E.  The toy config of transformers' model doc (h 512,
  -- 8 layers MMM*MMM*, Mamba 8 heads of 128, 1 group, state 128, conv 4;
  -- 8 heads; 8 experts of 1024 top 2; shared 512; vocab 49152, tied):
  -- Mamba mixer in_proj 512 x (2 x 1024 + 2 x 128 + 8), conv (1024 + 256)
  -- x 4 + bias, dt_bias/A_log/D 3 x 8, gated norm 1024, out_proj 1024 x
  -- 512, its norm 512; attention 4 x 512^2 + norm; E: norm, router 8 x 512,
  -- experts 8 x (512 x 2048 + 1024 x 512), shared 512 x 1024 + 512 x 512.
  it("Granite 4.0 hybrid: the M/* + E pattern, exact counts; H-Small at its card's 32.2B / 9B", function()
    local toy = { architectures = { "GraniteMoeHybridForCausalLM" }, model_type = "granitemoehybrid",
      attention_multiplier = 0.015625, embedding_multiplier = 12, hidden_act = "silu", hidden_size = 512,
      intermediate_size = 1024, layer_types = { "mamba", "mamba", "mamba", "attention", "mamba", "mamba",
        "mamba", "attention" }, logits_scaling = 2, mamba_chunk_size = 256, mamba_conv_bias = true,
      mamba_d_conv = 4, mamba_d_head = 128, mamba_d_state = 128, mamba_expand = 2, mamba_n_groups = 1,
      mamba_n_heads = 8, mamba_proj_bias = false, max_position_embeddings = 4096, num_attention_heads = 8,
      num_experts_per_tok = 2, num_hidden_layers = 8, num_key_value_heads = 8, num_local_experts = 8,
      position_embedding_type = "nope", residual_multiplier = 0.22, shared_intermediate_size = 512,
      tie_word_embeddings = true, vocab_size = 49152 }
    local m = hf.from_config(toy, "g4.json")
    assert.are.equal("MEMEME*EMEMEME*E", m.hybrid_layer_pattern)
    local mamba = 512 * (2 * 1024 + 2 * 128 + 8) + (1024 + 256) * 4 + (1024 + 256) + 3 * 8 + 1024 + 1024 * 512
      + 512
    local attn = 4 * 512 * 512 + 512
    local moe = 512 + 8 * 512 + 8 * (512 * 2048 + 1024 * 512) + (512 * 1024 + 512 * 512)
    local c = core.model_params(m)
    assert.are.equal(6 * mamba + 2 * attn + 8 * moe + 49152 * 512 + 512, c.total)
    assert.are.equal(144552080, c.total)
    assert.are.equal(c.total - 8 * 6 * (512 * 2048 + 1024 * 512), c.active)
    -- a dense hybrid (no experts): the shared MLP as - blocks
    toy.num_local_experts = 0
    assert.are.equal("M-M-M-*-M-M-M-*-", hf.from_config(toy, "g4.json").hybrid_layer_pattern)
    -- Bamba's mixer width: mamba_expand x hidden_size must be heads x head width
    toy.num_local_experts, toy.mamba_expand = 8, 3
    assert.are.equal("g4.json: mamba_expand: expected mamba_expand x hidden_size = mamba_n_heads x " ..
      "mamba_d_head = 1024 (got 3)", err_of(hf.from_config, toy, "g4.json"))
    -- ibm-granite/granite-4.0-h-small (card: 32.2B total, 9B active): h 4096,
    -- 36 Mamba + 4 attention layers, 32 heads, 8 KV heads, 72 experts of 768
    -- top 10, shared 1536, state 128, expand 2, vocab 100352, tied; Mamba
    -- heads 128 of 64 and 1 group ASSUMED (the excerpt read lists the others)
    local lt = {}
    for i = 1, 40 do lt[i] = (i % 10 == 0) and "attention" or "mamba" end
    local small = { model_type = "granitemoehybrid", hidden_size = 4096, intermediate_size = 768, layer_types = lt,
      mamba_d_head = 64, mamba_n_heads = 128, mamba_d_state = 128, mamba_expand = 2, mamba_n_groups = 1,
      num_attention_heads = 32, num_key_value_heads = 8, num_hidden_layers = 40, num_local_experts = 72,
      num_experts_per_tok = 10, shared_intermediate_size = 1536, tie_word_embeddings = true, vocab_size = 100352 }
    c = core.model_params((hf.from_config(small, "granite-4.0-h-small.json")))
    assert.are.same({ 32207337984, 8803121664 }, { c.total, c.active })
  end)

  -- LGAI-EXAONE/EXAONE-4.0-32B (card: 30.95B without embeddings): h 5120,
  -- 64 layers, 40 heads of 128, 8 KV heads, MLP 27392, vocab 102400,
  -- untied, window 4096 on "LLLG": per layer q, o 5120^2, k, v 5120 x 1024,
  -- per-head Q/K norms 2 x 128, MLP 3 x 5120 x 27392, two norms (after
  -- attention and MLP); the global layers without RoPE.
  it("EXAONE-4.0-32B: 32,003,216,384 (30,954,635,264 without embeddings), global NoPE every 4th", function()
    local cfg = { architectures = { "Exaone4ForCausalLM" }, model_type = "exaone4", hidden_size = 5120,
      intermediate_size = 27392, num_hidden_layers = 64, num_attention_heads = 40, num_key_value_heads = 8,
      head_dim = 128, vocab_size = 102400, max_position_embeddings = 131072, sliding_window = 4096,
      sliding_window_pattern = "LLLG", rope_theta = 1000000, tie_word_embeddings = false, hidden_act = "silu" }
    local m = hf.from_config(cfg, "exaone4.json")
    local layer = 2 * 5120 * 5120 + 2 * 5120 * 1024 + 2 * 128 + 3 * 5120 * 27392 + 2 * 5120
    assert.are.equal(30954635264, 64 * layer)
    assert.are.equal(64 * layer + 2 * 102400 * 5120 + 5120, core.model_params(m).total)
    assert.are.same({ true, true, 4096, 48, 4, 4 }, { m.qk_norm, m.reordered_norm, m.sliding_window,
      m.sliding_window_layers, m.sliding_window_period, m.nope_layer_period })
    -- the 1.2B's null window: every layer global, with RoPE
    cfg.sliding_window = cjson.null
    m = hf.from_config(cfg, "exaone4.json")
    assert.are.same({ true, true }, { m.sliding_window == nil, m.nope_layer_period == nil })
  end)

  -- Qwen2.5-VL-7B-Instruct: the text model at the top level (h 3584, 28
  -- layers, 28 heads, 4 KV heads, MLP 18944, vocab 152064, untied) is
  -- Qwen2.5-7B's, 7,615,616,512 (its card's 7.6B); "mrope" RoPE read as
  -- RoPE; the same text under text_config (transformers-5 layout).
  it("Qwen2.5-VL: its Qwen2 text model, 7,615,616,512; mrope as RoPE; text_config or top level", function()
    local cfg = { architectures = { "Qwen2_5_VLForConditionalGeneration" }, model_type = "qwen2_5_vl",
      hidden_act = "silu", hidden_size = 3584, intermediate_size = 18944, max_position_embeddings = 128000,
      max_window_layers = 28, num_attention_heads = 28, num_hidden_layers = 28, num_key_value_heads = 4,
      rms_norm_eps = 1e-6, rope_theta = 1000000.0, sliding_window = 32768, tie_word_embeddings = false,
      use_sliding_window = false, vocab_size = 152064, rope_scaling = { type = "mrope", mrope_section = { 16, 24, 24 } },
      vision_config = { depth = 32, hidden_size = 1280, out_hidden_size = 3584 } }
    local m, info = hf.from_config(cfg, "qwen2.5-vl.json")
    assert.are.equal(7615616512, core.model_params(m).total)
    assert.are.same({ true, 1000000.0 }, { m.qkv_bias, m.rope_theta })
    assert.is_nil(m.rope_scaling_type)
    assert.truthy(info.notes[1]:find("vision tower (vision_config) is neither modelled nor counted", 1, true))
    local text = {}
    for _, k in ipairs({ "hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
      "num_key_value_heads", "vocab_size", "rope_theta" }) do text[k] = cfg[k]; cfg[k] = nil end
    cfg.text_config = text
    m = hf.from_config(cfg, "qwen2.5-vl.json")
    assert.are.same({ 7615616512, 1000000.0 }, { core.model_params(m).total, m.rope_theta })
    cfg.text_config = "x"
    assert.are.equal('qwen2.5-vl.json: text_config: expected an object or null (got "x")',
      err_of(hf.from_config, cfg, "qwen2.5-vl.json"))
    cfg.text_config = { text } -- a JSON array holding the object
    -- (the object inside said by its first fields)
    assert.are.equal("qwen2.5-vl.json: text_config: expected an object or null (got {{hidden_size = 3584, " ..
      "intermediate_size = 18944, num_attention_heads = 28, num_hidden_layers = 28, num_key_value_heads = 4, " ..
      "rope_theta = 1000000, ...}})", err_of(hf.from_config, cfg, "qwen2.5-vl.json"))
  end)

  -- tencent/Hunyuan-A13B (card: 80B total, 13B active): h 4096, 32 layers,
  -- 32 heads of 128, 8 KV heads, 64 experts and one shared MLP, all of 3072
  -- (HunYuanMoEV1MLP: config.intermediate_size), top 8, vocab 128167,
  -- tied; per-head Q/K norms 2 x 128; router 64 x 4096.  Its NTK-alpha RoPE
  -- (alpha 1000) is a base of 10000 x 1000^(128/126).
  it("Hunyuan-A13B: 80,393,183,232 / 12,747,448,320; per-layer lists; NTK-alpha base", function()
    local function list(v) local t = {} for i = 1, 32 do t[i] = v end return t end
    local cfg = { architectures = { "HunYuanMoEV1ForCausalLM" }, model_type = "hunyuan_v1_moe", hidden_size = 4096,
      num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, head_dim = 128,
      intermediate_size = 3072, vocab_size = 128167, num_experts = 64, moe_intermediate_size = list(3072),
      moe_topk = list(8), num_shared_expert = list(1), tie_word_embeddings = true, rope_theta = 10000.0,
      rope_scaling = { alpha = 1000.0, factor = 1.0, type = "dynamic" }, hidden_act = "silu" }
    local m = hf.from_config(cfg, "hunyuan.json")
    local mlp = 3 * 4096 * 3072
    local common = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 128 + 2 * 4096 + 64 * 4096 + mlp
    local c = core.model_params(m)
    assert.are.equal(32 * (common + 64 * mlp) + 128167 * 4096 + 4096, c.total)
    assert.are.equal(32 * (common + 8 * mlp) + 128167 * 4096 + 4096, c.active)
    assert.are.same({ 80393183232, 12747448320 }, { c.total, c.active })
    assert.is_true(math.abs(m.rope_theta - 10000 * 1000 ^ (128 / 126)) < 1e-6)
    assert.is_nil(m.rope_scaling_type)
    cfg.moe_topk[5] = 4
    assert.are.equal("NotImplemented: hunyuan.json: moe_topk: layers with different values are not modelled " ..
      "(got " .. require("apsearch.util").describe(cfg.moe_topk) .. ")", err_of(hf.from_config, cfg, "hunyuan.json"))
    cfg.moe_topk[5], cfg.moe_intermediate_size = 8, 1536
    assert.truthy(err_of(hf.from_config, cfg, "hunyuan.json"):find("moe_intermediate_size: expected " ..
      "intermediate_size = 3072", 1, true))
  end)

  -- mistralai/Ministral-3-3B (card: 3.4B language model + 0.4B vision):
  -- mistral3 wrapping a ministral3 text model (h 3072, 26 layers, 32
  -- heads of 128, 8 KV heads, MLP 9216, vocab 131072, tied) with YaRN in
  -- rope_parameters and Llama 4's query scaling beta (a note).
  it("Ministral 3 (mistral3 over ministral3): 3,429,006,336, YaRN from rope_parameters", function()
    local cfg = { architectures = { "Mistral3ForConditionalGeneration" }, model_type = "mistral3",
      text_config = { model_type = "ministral3", hidden_size = 3072, num_hidden_layers = 26, intermediate_size = 9216,
        num_attention_heads = 32, num_key_value_heads = 8, head_dim = 128, vocab_size = 131072,
        tie_word_embeddings = true, max_position_embeddings = 262144,
        rope_parameters = { factor = 16.0, llama_4_scaling_beta = 0.1, original_max_position_embeddings = 16384,
          rope_theta = 1000000.0, rope_type = "yarn" } },
      vision_config = { model_type = "pixtral", hidden_size = 1024 } }
    local m, info = hf.from_config(cfg, "ministral3.json")
    local layer = 2 * 3072 * 4096 + 2 * 3072 * 1024 + 3 * 3072 * 9216 + 2 * 3072
    assert.are.equal(26 * layer + 131072 * 3072 + 3072, core.model_params(m).total)
    assert.are.equal(3429006336, core.model_params(m).total)
    assert.are.same({ "yarn", 16.0, 1000000.0 }, { m.rope_scaling_type, m.rope_scaling_factor, m.rope_theta })
    assert.truthy(info.notes[2]:find("llama_4_scaling_beta 0.1", 1, true), info.notes[2])
  end)

  -- rednote-hilab/dots.llm1.base (card: 142B total, 14B active): h 4096,
  -- 62 layers, 32 heads of 128 (MHA), per-head Q/K norms, layer 0 dense
  -- (MLP 10944), the others 128 experts of 1408 top 6 with 2 shared and
  -- DeepSeek-V3's router (E weights + E bias), vocab 152064, untied.
  it("dots.llm1: 142,774,381,696 / 14,016,588,928", function()
    local cfg = { architectures = { "Dots1ForCausalLM" }, model_type = "dots1", hidden_size = 4096,
      num_hidden_layers = 62, num_attention_heads = 32, num_key_value_heads = 32, head_dim = 128,
      intermediate_size = 10944, moe_intermediate_size = 1408, n_routed_experts = 128, num_experts_per_tok = 6,
      n_shared_experts = 2, first_k_dense_replace = 1, norm_topk_prob = true, routed_scaling_factor = 2.5,
      vocab_size = 152064, tie_word_embeddings = false, sliding_window = cjson.null, hidden_act = "silu" }
    local m = hf.from_config(cfg, "dots1.json")
    local attn = 4 * 4096 * 4096 + 2 * 128 + 2 * 4096
    local expert = 3 * 4096 * 1408
    local dense = attn + 3 * 4096 * 10944
    local moe = attn + 128 * 4096 + 128 + 2 * expert
    local c = core.model_params(m)
    assert.are.equal(dense + 61 * (moe + 128 * expert) + 2 * 152064 * 4096 + 4096, c.total)
    assert.are.equal(dense + 61 * (moe + 6 * expert) + 2 * 152064 * 4096 + 4096, c.active)
    assert.are.same({ 142774381696, 14016588928 }, { c.total, c.active })
    assert.are.same({ true, 1, 2.5 }, { m.moe_router_bias, m.moe_first_dense_layers, m.moe_router_topk_scaling_factor })
  end)

  -- CohereLabs/c4ai-command-a-03-2025 (card: 111B): h 12288, 64 layers,
  -- 96 heads of 128, 8 KV heads, MLP 36864, vocab 256000, tied; one bias-
  -- free LayerNorm per layer feeding attention and MLP in parallel; a
  -- 4096-token window on 3 of 4 layers, NoPE on the global ones.
  it("Command A (cohere2): 111,057,580,032; parallel attention and MLP; window with global NoPE", function()
    local cfg = { architectures = { "Cohere2ForCausalLM" }, model_type = "cohere2", hidden_size = 12288,
      intermediate_size = 36864, num_hidden_layers = 64, num_attention_heads = 96, num_key_value_heads = 8,
      vocab_size = 256000, max_position_embeddings = 131072, logit_scale = 0.25, rope_theta = 50000,
      sliding_window = 4096, sliding_window_pattern = 4, tie_word_embeddings = true, hidden_act = "silu" }
    local m = hf.from_config(cfg, "command-a.json")
    local layer = 2 * 12288 * 12288 + 2 * 12288 * 1024 + 3 * 12288 * 36864 + 12288
    assert.are.equal(64 * layer + 256000 * 12288 + 12288, core.model_params(m).total)
    assert.are.equal(111057580032, core.model_params(m).total)
    assert.are.same({ true, true, 1, "layernorm", false, 48, 4, 4 }, { m.parallel_attn_mlp, m.mup_multipliers,
      m.norms_per_layer, m.norm, m.norm_bias, m.sliding_window_layers, m.sliding_window_period, m.nope_layer_period })
    cfg.sliding_window = cjson.null
    m = hf.from_config(cfg, "command-a.json")
    assert.are.same({ true, true }, { m.sliding_window == nil, m.nope_layer_period == nil })
  end)

  -- Qwen/Qwen3.5-27B (card: 27B with its vision tower): Qwen3_5TextConfig,
  -- every 4th of 64 layers gated attention (q h x 2*24*256, k and v h x
  -- 4*256 each, o 24*256 x h, q/k norms 256 each), the others Gated
  -- DeltaNet (in_proj_qkvz h x (2*2048 + 2*6144), in_proj_ba h x 96,
  -- conv1d 10240 x 4, dt_bias and A_log 48 each, the gated norm 128,
  -- out_proj 6144 x h), every layer a SwiGLU MLP 3 h x 17408 and two norms;
  -- untied embed and lm_head 2 x 248320 x h, the final norm.
  it("Qwen3.5-27B: 26,895,998,464 parameters (text model, dense MLPs beside the Gated DeltaNet)", function()
    local m = load("qwen3.5-27b")
    local h = 5120
    local attn = h * 2 * 24 * 256 + 2 * h * 4 * 256 + 24 * 256 * h + 2 * 256
    local gdn = h * (2 * 2048 + 2 * 6144) + h * 96 + 10240 * 4 + 48 + 48 + 128 + 6144 * h
    local total = 16 * attn + 48 * gdn + 64 * (3 * h * 17408 + 2 * h) + 2 * 248320 * h + h
    assert.are.equal(26895998464, total)
    assert.are.equal(total, core.model_params(m).total)
    assert.are.equal(0, m.num_experts or 0)
    assert.are.same({ 4, 17408 }, { m.linear_attention_period, m.ffn_hidden_size })
  end)

  it("the 2026 types apsearch does not model are named with the keys that carry what it lacks", function()
    -- Llama-3.3-Nemotron-Super (DeciLM, nemotron-nas) is read
    -- (tests/lua/models_nas_spec.lua): its layers are asked for first
    assert.are.equal("m.json: num_hidden_layers: required key is missing (got nothing)",
      err_of(hf.from_config, { model_type = "nemotron-nas", architectures = { "DeciLMForCausalLM" },
        block_configs = {} }, "m.json"))
    -- DeepSeek-V4 carries DSA's indexer keys too: now read by its own
    -- builder (tests/lua/models_deepseek_v4_spec.lua), whatever class
    -- `architectures` names, its own keys asked for first
    assert.are.equal("m.json: num_hidden_layers: required key is missing (got nothing)",
      err_of(hf.from_config, { model_type = "deepseek_v4", index_n_heads = 64, hc_mult = 4 }, "m.json"))
    assert.are.equal("m.json: num_hidden_layers: required key is missing (got nothing)",
      err_of(hf.from_config, { model_type = "deepseek_v4", architectures = { "Qwen3MoeForCausalLM" } }, "m.json"))
    -- Gemma 4's own multimodal type, whatever class it names, is read
    -- through its text_config, whose default per-layer inputs are refused
    -- (tests/lua/models_gemma4_spec.lua)
    assert.truthy(err_of(hf.from_config, { model_type = "gemma4", architectures = { "Gemma3ForConditionalGeneration" },
      text_config = { model_type = "gemma4_text" } }, "m.json"):find("^NotImplemented: m%.json: text_config: " ..
      "hidden_size_per_layer_input: Gemma 4's per%-layer inputs"))
    -- Kimi K3's wrapper is read through its text model as NeMo AutoModel
    -- builds it, KimiK3TextConfig's defaults for what it leaves out
    -- (tests/lua/models_kimi_linear_spec.lua)
    local k3 = hf.from_config({ model_type = "kimi_k3", text_config = { model_type = "kimi_linear" },
      vision_config = {} }, "m.json")
    assert.are.same({ 93, "kda", 12, "situ" }, { k3.num_layers, k3.linear_attention, k3.attn_res_block_size,
      k3.glu_activation })
  end)

  it("a multimodal wrapper apsearch has no reader for trains its text model, and says so", function()
    -- Kimi-K2.5 (kimi_k25) around Kimi-K2's text model, read as DeepSeek-V3:
    -- the same counts as the text config on its own, the wrapper's
    -- tie_word_embeddings where the text_config leaves it out
    local text = decoded("kimi-k2-instruct")
    local alone = core.model_params((hf.from_config(text, "t.json")))
    local wrapped = copy(text)
    wrapped.tie_word_embeddings = nil
    local m, info = hf.from_config({ model_type = "kimi_k25", tie_word_embeddings = false, text_config = wrapped,
      vision_config = {} }, "m.json")
    assert.are.equal(alone.total, core.model_params(m).total)
    assert.are.equal("m.json: model_type kimi_k25 is multimodal: the estimate trains its text model (text_config, " ..
      "model_type deepseek_v3); the vision tower (vision_config) is neither modelled nor counted", info.notes[1])
    -- Kimi-VL (moonshotai/Kimi-VL-A3B-Instruct's config.json, its
    -- text_config as published): NeMo AutoModel's KimiVLConfig builds
    -- DeepseekV3Config(**text_config).  By hand (MLA without q_lora, h
    -- 2,048, 16 heads): q 2,048 x 16 x 192 + kv_a 2,048 x 576 + its norm
    -- 512 + kv_b 512 x 16 x 256 + o 2,048 x 2,048 = 13,763,072, two norms
    -- 4,096; the dense layer's MLP 3 x 2,048 x 11,264 = 69,206,016 ->
    -- 82,973,184; an MoE layer's router 64 x 2,048 + 64 biases, 64 experts
    -- of 3 x 2,048 x 1,408 and the shared 3 x 2,048 x 2,816 -> 584,847,936;
    -- 82,973,184 + 26 x 584,847,936 + 2 x 163,840 x 2,048 + 2,048 =
    -- 15,960,110,208 (the card's 16.4B with MoonViT)
    local kv_text = { model_type = "deepseek_v3", vocab_size = 163840, max_position_embeddings = 131072,
      hidden_size = 2048, intermediate_size = 11264, moe_intermediate_size = 1408, num_hidden_layers = 27,
      num_attention_heads = 16, num_key_value_heads = 16, n_shared_experts = 2, n_routed_experts = 64,
      routed_scaling_factor = 2.446, kv_lora_rank = 512, q_lora_rank = cjson.null, qk_rope_head_dim = 64,
      v_head_dim = 128, qk_nope_head_dim = 128, topk_method = "noaux_tc", n_group = 1, topk_group = 1,
      num_experts_per_tok = 6, moe_layer_freq = 1, first_k_dense_replace = 1, norm_topk_prob = true,
      scoring_func = "sigmoid", aux_loss_alpha = 0.001, seq_aux = true, hidden_act = "silu", rms_norm_eps = 1e-5,
      tie_word_embeddings = false, rope_theta = 800000.0, rope_scaling = cjson.null, attention_bias = false }
    local kv = hf.from_config({ model_type = "kimi_vl", architectures = { "KimiVLForConditionalGeneration" },
      text_config = kv_text, vision_config = { model_type = "moonvit" } }, "m.json")
    assert.are.equal(15960110208, core.model_params(kv).total)
    -- the wrapper's class decides the text model (transformers builds
    -- sub_configs["text_config"] from the dict): a dense Qwen3.5 wrapper
    -- around an MoE text_config is refused as an MoE config of qwen3_5_text;
    -- transformers fills a missing vision_config, so none is needed
    local moe_text = decoded("qwen3.5-35b-a3b").text_config
    assert.truthy(err_of(hf.from_config, { model_type = "qwen3_5", text_config = moe_text }, "m.json")
      :find('^NotImplemented: m%.json: text_config: MoE config %(num_experts = 256%) of model_type "qwen3_5_text"'))
    assert.are.equal(34660610688, core.model_params((hf.from_config({ model_type = "qwen3_5_moe",
      text_config = moe_text }, "m.json"))).total)
    assert.are.equal("m.json: text_config: expected an object (got \"x\")",
      err_of(hf.from_config, { model_type = "qwen3_5_moe", text_config = "x" }, "m.json"))
    -- a wrapper apsearch does not know, around a text model it reads:
    -- refused, as its own parts (ERNIE-VL's vision experts) are unknown
    assert.are.equal("NotImplemented: m.json: model_type: ernie4_5_moe_vl is multimodal: its vision tower " ..
      '(vision_config) is not modelled; its text_config is (model_type "kimi_k2", read as deepseek_v3), but ' ..
      "apsearch does not know what ernie4_5_moe_vl adds to it: import text_config as a config.json of its own " ..
      "to train the text model", err_of(hf.from_config, { model_type = "ernie4_5_moe_vl", text_config = text,
      vision_config = {} }, "m.json"))
    -- a text model with no reader either: refused, naming both types
    assert.are.equal("NotImplemented: m.json: model_type: gemma3n is multimodal: its vision tower " ..
      '(vision_config) is not modelled; its text_config is not either (model_type "gemma3n_text": Gemma 3n\'s ' ..
      "text model (AltUp's altup_num_inputs parallel streams, LAuReL's laurel_rank residual, per-layer inputs " ..
      "of hidden_size_per_layer_input, KV sharing across num_kv_shared_layers, activation_sparsity_pattern) is " ..
      "not modelled)",
      err_of(hf.from_config, { model_type = "gemma3n", text_config = { model_type = "gemma3n_text" },
        vision_config = {} }, "m.json"))
    -- the text model's errors name the text_config
    local bad = copy(text)
    bad.num_hidden_layers = -1
    assert.truthy(err_of(hf.from_config, { model_type = "kimi_k25", text_config = bad, vision_config = {} },
      "m.json"):find("^m%.json: text_config: num_hidden_layers: "))
  end)

  -- Qwen/Qwen3-VL-30B-A3B-Instruct: its text model is Qwen3-MoE
  -- (Qwen3VLMoeTextConfig(Qwen3MoeConfig), transformers modular_qwen3_vl_moe.py
  -- @ 02e8340b) at Qwen3-30B-A3B's shapes, so Qwen3-30B-A3B's counts
  -- (qwen3_moe_counts); its router always renormalises the top-k
  -- (Qwen3VLMoeTextTopKRouter), and the wrapper's tie_word_embeddings false
  -- unties the text model whose class default ties it.
  it("Qwen3-VL-30B-A3B trains its text model: Qwen3-30B-A3B's 30,532,122,624 / 3,353,032,704", function()
    local m = load("qwen3-vl-30b-a3b-instruct")
    local want = qwen3_moe_counts(decoded("qwen3-vl-30b-a3b-instruct").text_config)
    local c = core.model_params(m)
    assert.are.same({ 30532122624, 3353032704 }, { want.total, want.active })
    assert.are.same({ want.total, want.active }, { c.total, c.active })
    assert.are.same({ c.total, c.active }, { core.model_params(load("qwen3-30b-a3b")).total,
      core.model_params(load("qwen3-30b-a3b")).active })
    assert.is_nil(m.moe_router_pre_softmax)
    assert.is_false(m.tie_word_embeddings)
    -- the text_config on its own takes the class's default: tied
    local text = copy(decoded("qwen3-vl-30b-a3b-instruct").text_config)
    assert.is_true((hf.from_config(text, "t.json")).tie_word_embeddings)
  end)

  -- Qwen/Qwen3-Omni-30B-A3B-Instruct: Megatron-Bridge trains the thinker
  -- (models/qwen_omni/qwen3_omni_bridge.py @ 067f987d reads
  -- thinker_config.text_config), whose text model is Qwen3-MoE
  -- (modular_qwen3_omni_moe.py @ f14d0cbc) at Qwen3-30B-A3B's shapes with
  -- a 152,064-token vocabulary: qwen3_moe_counts, 30,532,122,624 + 2 x 128
  -- x 2,048 = 30,532,646,912 total.  The text_config's shapes as the
  -- released config.json gives them (a transformers dump of the
  -- checkpoint's Qwen3OmniMoeConfig); its keys Qwen3-MoE has not
  -- (shared_expert_intermediate_size 0, use_qk_norm) build nothing.
  it("Qwen3-Omni-30B-A3B trains its thinker's text model: 30,532,646,912 / 3,353,556,992", function()
    local text = { model_type = "qwen3_omni_moe_text", hidden_size = 2048, intermediate_size = 768,
      num_hidden_layers = 48, num_attention_heads = 32, num_key_value_heads = 4, head_dim = 128,
      num_experts = 128, num_experts_per_tok = 8, moe_intermediate_size = 768, decoder_sparse_step = 1,
      mlp_only_layers = {}, norm_topk_prob = true, vocab_size = 152064, max_position_embeddings = 65536,
      rms_norm_eps = 1e-6, rope_theta = 1000000, tie_word_embeddings = false, use_qk_norm = true,
      shared_expert_intermediate_size = 0, use_sliding_window = false, sliding_window = cjson.null,
      rope_scaling = { interleaved = true, mrope_interleaved = true, mrope_section = { 24, 20, 20 },
        rope_type = "default", type = "default" } }
    local omni = { model_type = "qwen3_omni_moe", architectures = { "Qwen3OmniMoeForConditionalGeneration" },
      thinker_config = { model_type = "qwen3_omni_moe_thinker", text_config = text,
        vision_config = { model_type = "qwen3_omni_moe_vision_encoder" },
        audio_config = { model_type = "qwen3_omni_moe_audio_encoder" } },
      talker_config = { text_config = { model_type = "qwen3_omni_moe_talker_text", num_experts = 128 } },
      code2wav_config = { num_quantizers = 16 } }
    -- (each variant a deep copy: the nested thinker_config is shared otherwise)
    local deep = require("apsearch.util").deepcopy
    local m, info = hf.from_config(omni, "omni.json")
    local want = qwen3_moe_counts(text)
    local c = core.model_params(m)
    assert.are.same({ 30532646912, 3353556992 }, { want.total, want.active })
    assert.are.same({ want.total, want.active }, { c.total, c.active })
    assert.is_nil(m.sliding_window)
    assert.is_nil(m.shared_expert_ffn_hidden_size)
    assert.truthy(info.notes[1]:find("trains its text model (thinker_config.text_config, model_type "
      .. "qwen3_omni_moe_text)", 1, true), info.notes[1])
    assert.truthy(info.notes[1]:find("the talker and code2wav (talker_config, code2wav_config) are not trained",
      1, true), info.notes[1])
    -- the attention has no window whatever the text_config says
    -- (Qwen3OmniMoeThinkerTextAttention sets sliding_window = None)
    local swa = deep(omni)
    local st = swa.thinker_config.text_config
    st.use_sliding_window, st.sliding_window, st.max_window_layers = true, 4096, 28
    assert.is_nil((hf.from_config(swa, "omni.json")).sliding_window)
    -- (read as Qwen3-MoE it would have one)
    local q = copy(swa.thinker_config.text_config)
    q.model_type, q.max_window_layers = "qwen3_moe", 28
    assert.are.equal(4096, (hf.from_config(q, "q.json")).sliding_window)
    -- errors name the path down to the text model
    local bad = deep(omni)
    bad.thinker_config.text_config.num_experts_per_tok = "8"
    assert.truthy(err_of(hf.from_config, bad, "omni.json"):find("^omni%.json: thinker_config%.text_config: " ..
      "num_experts_per_tok: "), err_of(hf.from_config, bad, "omni.json"))
    bad = deep(omni)
    bad.thinker_config.text_config = nil
    assert.are.equal("omni.json: thinker_config.text_config: expected an object (got nothing)",
      err_of(hf.from_config, bad, "omni.json"))
    -- the thinker's tie_word_embeddings stands in for the text_config's
    bad = deep(omni)
    bad.thinker_config.text_config.tie_word_embeddings, bad.thinker_config.tie_word_embeddings = nil, "yes"
    assert.are.equal('omni.json: thinker_config.tie_word_embeddings: expected true or false (got "yes")',
      err_of(hf.from_config, bad, "omni.json"))
    bad.thinker_config.tie_word_embeddings = true
    assert.is_true((hf.from_config(bad, "omni.json")).tie_word_embeddings)
    bad = deep(omni)
    bad.thinker_config = "x"
    assert.are.equal('omni.json: thinker_config: expected an object (got "x")', err_of(hf.from_config, bad, "omni.json"))
    -- a top-level tie_word_embeddings is checked too
    bad = deep(omni)
    bad.tie_word_embeddings = "yes"
    assert.are.equal('omni.json: tie_word_embeddings: expected true or false (got "yes")',
      err_of(hf.from_config, bad, "omni.json"))
    -- head_dim absent: Qwen3MoeAttention's hidden_size / num_attention_heads
    -- (2048 / 32 = 64; Qwen3OmniMoeTextConfig has no head_dim field), not
    -- Qwen3Config's 128
    local nohd = deep(omni)
    nohd.thinker_config.text_config.head_dim = nil
    local m64 = hf.from_config(nohd, "omni.json")
    assert.are.equal(64, m64.head_dim or m64.hidden_size // m64.num_attention_heads)
    local t64 = copy(nohd.thinker_config.text_config)
    t64.head_dim = 64
    assert.are.equal(qwen3_moe_counts(t64).total, core.model_params(m64).total)
  end)

  -- Qwen/Qwen3.5-35B-A3B (card: 35B total with its vision tower, 3B
  -- active).  transformers modular_qwen3_5_moe.py @ e36255cb: every layer
  -- MoE; 10 full-attention layers (every 4th) of Qwen3NextAttention: q h x
  -- 2*16*256 (output gate) = 16,777,216, k and v h x 2*256 = 1,048,576
  -- each, o 16*256 x h = 8,388,608, q_norm and k_norm 256 each: 27,263,488;
  -- 30 Gated DeltaNet layers: in_proj_qkvz h x (2*2048 + 2*4096) =
  -- 25,165,824, in_proj_ba h x 64 = 131,072, conv1d 8192 x 4 = 32,768,
  -- dt_bias and A_log 32 each, the gated norm 128, out_proj 4096 x h =
  -- 8,388,608: 33,718,464; per layer router 256 x h = 524,288, 256
  -- experts of 3*h*512 = 3,145,728 (8 active), the shared expert 3,145,728
  -- and its gate h, two norms 2h; embed + lm_head 2*248,320*h =
  -- 1,017,118,720 and the final norm h.  Total 34,660,610,688; active
  -- 3,454,988,928; rope_theta and partial RoPE from rope_parameters.
  it("Qwen3.5-35B-A3B: 34,660,610,688 total, 3,454,988,928 active (text model)", function()
    local m, info = load("qwen3.5-35b-a3b")
    local h = 2048
    local moe_fixed = 256 * h + 3 * h * 512 + h + 2 * h
    local tail = 2 * 248320 * h + h
    local total = 10 * 27263488 + 30 * 33718464 + 40 * (moe_fixed + 256 * 3145728) + tail
    local active = 10 * 27263488 + 30 * 33718464 + 40 * (moe_fixed + 8 * 3145728) + tail
    local c = core.model_params(m)
    assert.are.same({ 34660610688, 3454988928 }, { total, active })
    assert.are.same({ total, active }, { c.total, c.active })
    assert.are.same({ 4, 0.25, 1e7 }, { m.linear_attention_period, m.rotary_percent, m.rope_theta })
    -- rope_parameters that is not an object, or a scaling in it without its factor: one line each
    local bad = decoded("qwen3.5-35b-a3b")
    for _, case in ipairs({ { "x", '"x"' }, { { 1, 2 }, "{1, 2}" } }) do
      bad.text_config.rope_parameters = case[1]
      assert.are.equal("m.json: text_config: rope_parameters: expected an object or null (got " .. case[2] .. ")",
        err_of(hf.from_config, bad, "m.json"))
    end
    bad.text_config.rope_parameters = { type = "yarn", rope_theta = 1e6 }
    assert.are.equal("m.json: text_config: rope_parameters: factor: required key is missing (got nothing)",
      err_of(hf.from_config, bad, "m.json"))
    assert.is_nil(m.moe_router_pre_softmax)
    assert.truthy(info.notes[2]:find("mtp.*, 1 layer) is not loaded by transformers", 1, true))
    assert.is_true(math.abs(c.total / 35e9 - 1) < 0.02) -- the card's 35B, vision tower included
  end)

  it("Nemotron-H's MoE layers are read by its own builder, not refused by the generic MoE check", function()
    local cfg = H.read_json(MODELS .. "nemotron-h-8b-base-8k.json")
    cfg.hybrid_override_pattern = cfg.hybrid_override_pattern:gsub("%-", "E", 1)
    cfg.n_routed_experts, cfg.num_experts_per_tok = 128, 6
    cfg.moe_intermediate_size, cfg.moe_shared_expert_intermediate_size = 1856, 3712
    local m = hf.from_config(cfg, "m.json")
    assert.are.same({ 128, 6 }, { m.num_experts, m.experts_per_token })
    assert.are.equal(1, core.model_params(m).moe_layers)
  end)
end)
