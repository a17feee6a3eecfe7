-- tests/lua/models_bailing_spec.lua -- Ling 2.0 (model_type
-- bailing_moe_v2, inclusionAI) read as its remote code builds it, in the
-- copy Megatron-Bridge vendors (067f987df src/megatron/bridge/models/
-- bailing/configuration_bailing_moe_v2.py, modeling_bailing_moe_v2.py):
-- the count of BailingMoeV2Config() (its "local copy of the configuration
-- from inclusionAI/Ling-mini-2.0") module by module, the MTP modules that
-- share the embedding and lm_head, and what the Megatron-LM script writes
-- as the bridge (bailing_moe2_bridge.py) builds it.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local function config(extra)
  local c = { architectures = { "BailingMoeV2ForCausalLM" }, model_type = "bailing_moe_v2" }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

-- BailingMoeV2Config's defaults: h 2048, 20 layers, 16 heads of 128, 4 KV
-- heads: query_key_value 2048 x (16 + 8) x 128 and dense 2048 x 2048 (no
-- biases); query_layernorm and key_layernorm of 128; two norms of 2048.
-- Layer 0 dense (first_k_dense_replace 1): 3 x 2048 x 5120. Layers 1-19:
-- 256 experts of 3 x 2048 x 512 (top 8), one shared expert of 512, the
-- gate 256 x 2048 and its expert_bias buffer (256, in the state dict).
-- Untied word_embeddings and lm_head 157184 x 2048; the final norm.
-- Megatron-Bridge's docs: 16B total, 1.5B active (the card: 1.4B).
local h, V = 2048, 157184
local attn = h * 24 * 128 + h * h + 2 * 128 + 2 * h
local expert = 3 * h * 512
local moe = attn + 256 * expert + expert + 256 * h + 256
local TOTAL = attn + 3 * h * 5120 + 19 * moe + 2 * V * h + h
local ACTIVE = TOTAL - 19 * 248 * expert

describe("Ling 2.0 (bailing_moe_v2)", function()
  it("counts BailingMoeV2Config(): 16,255,643,392 parameters, 1,432,973,056 active", function()
    assert.are.equal(16255643392, TOTAL)
    assert.are.equal(1432973056, ACTIVE)
    local m = hf.from_config(config(), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(TOTAL, pc.total)
    assert.are.equal(ACTIVE, pc.active)
    assert.are.same({ true, true, 8, 4, 1, 6e5 },
      { m.moe_router_bias, m.qk_norm, m.moe_router_num_groups, m.moe_router_group_topk, m.moe_first_dense_layers,
        m.rope_theta })
    assert.is_nil(m.rotary_percent) -- BailingMoeV2Attention: partial_rotary_factor 1.0 unless given
    assert.is_nil(m.mtp_layers)
  end)

  it("counts an MTP module without copies of the embedding and lm_head (BailingMoeV2MTPLayer shares them)", function()
    local m = hf.from_config(config({ num_nextn_predict_layers = 1, partial_rotary_factor = 0.5 }), "t.json")
    local pc = core.model_params(m)
    assert.are.equal(TOTAL, pc.total)
    -- its layer (MoE), enorm, hnorm, final_layernorm, eh_proj 2h x h
    assert.are.equal(moe + 3 * h + 2 * h * h, pc.mtp)
    assert.are.equal(moe - 248 * expert + 3 * h + 2 * h * h, pc.mtp_active)
    assert.are.same({ 1, true, 0.5 }, { m.mtp_layers, m.mtp_shared_embeddings, m.rotary_percent })
    -- DeepSeek-V3's checkpoint keeps its own copies: the same module counts 2 V h more
    m.mtp_shared_embeddings = false
    assert.are.equal(moe + 3 * h + 2 * h * h + 2 * V * h, core.model_params(m).mtp)
  end)

  it("puts use_qkv_bias on query_key_value and use_bias on dense", function()
    local m = hf.from_config(config({ use_qkv_bias = true, use_bias = true }), "t.json")
    assert.are.equal(TOTAL + 20 * (24 * 128 + h), core.model_params(m).total)
    assert.are.same({ true, true, false }, { m.qkv_bias, m.attn_out_bias, m.mlp_bias or false })
  end)

  it("builds no shared expert when num_shared_experts is null, and head_dim null as h / heads", function()
    local m = hf.from_config(config({ num_shared_experts = require("cjson").null, head_dim = require("cjson").null, num_attention_heads = 32,
      num_key_value_heads = 8 }), "t.json")
    assert.is_nil(m.shared_expert_ffn_hidden_size)
    assert.are.equal(64, m.head_dim)
    -- 32 heads of 64 (h) and 8 KV heads of 64: q/k/v 2048 x 3072 as before
    local attn64 = h * (2048 + 1024) + h * h + 2 * 64 + 2 * h
    assert.are.equal(attn64 + 3 * h * 5120 + 19 * (attn64 + 256 * expert + 256 * h + 256) + 2 * V * h + h,
      core.model_params(m).total)
  end)

  it("says no dropout by the class's 0.0; only attention_dropout is applied", function()
    local _, info = hf.from_config(config(), "t.json")
    assert.are.same({ false, true }, { info.dropout, info.dropout_stated })
    -- embedding_dropout and output_dropout are stored, never used
    _, info = hf.from_config(config({ output_dropout = 0.1, embedding_dropout = 0.1 }), "t.json")
    assert.are.same({ false, true }, { info.dropout, info.dropout_stated })
    _, info = hf.from_config(config({ attention_dropout = 0.1 }), "t.json")
    assert.are.same({ true, "attention_dropout" }, { info.dropout, info.dropout_key })
    -- attention dropout alone: Megatron's --hidden-dropout 0
    assert.are.same({ 0.1, 0.0 }, { info.attention_dropout, info.hidden_dropout })
  end)

  it("reads a JSON null as the class keeps it (None), and refuses the ones its model cannot take", function()
    local null = require("cjson").null
    -- use_qk_norm None: no query_layernorm / key_layernorm (20 x 2 x 128 fewer)
    local m = hf.from_config(config({ use_qk_norm = null }), "t.json")
    assert.are.equal(TOTAL - 20 * 256, core.model_params(m).total)
    -- head_dim 0 is falsy: hidden_size // num_attention_heads
    assert.are.equal(128, hf.from_config(config({ head_dim = 0 }), "t.json").head_dim)
    assert.matches("t.json: num_experts: null: BailingMoeV2Config keeps None and its model builds every layer dense",
      H.err_of(hf.from_config, config({ num_experts = null }), "t.json"), 1, true)
    assert.matches("t.json: rope_theta: null: BailingMoeV2Config keeps None, which its model cannot run with",
      H.err_of(hf.from_config, config({ rope_theta = null }), "t.json"), 1, true)
  end)

  -- Ling-flash-2.0's shapes: h 4096, 32 layers (the first dense, 9216
  -- wide), 32 heads of 128, 4 KV heads, 256 experts of 1024 and one shared,
  -- vocab 157184, untied. No copy of its config.json was reachable: the
  -- shapes were typed (a reviewer's reading of the model), and what checks
  -- them is the count. Its Hub page (sha 649f8b94, the safetensors
  -- metadata as a public copy of the Hub API's model.json holds it) counts
  -- BF16 102,889,697,280 + F32 7,936 (31 x 256: the MoE layers'
  -- expert_bias) = 102,889,705,216, matched to the unit; its config.json
  -- says model_type bailing_moe beside the class BailingMoeV2ForCausalLM,
  -- which is what its auto_map loads.
  it("reads Ling-flash-2.0's shapes to the Hub's safetensors count, its model_type bailing_moe by its class", function()
    local c = config({ model_type = "bailing_moe", hidden_size = 4096, num_hidden_layers = 32,
      num_attention_heads = 32, num_key_value_heads = 4, head_dim = 128, intermediate_size = 9216,
      moe_intermediate_size = 1024, num_experts = 256, num_shared_experts = 1, first_k_dense_replace = 1 })
    local m, info = hf.from_config(c, "flash.json")
    local pc = core.model_params(m)
    assert.are.equal(102889697280 + 7936, pc.total)
    assert.are.equal(6152277760, pc.active) -- the card's 6.1B active
    assert.truthy(info.notes[1]:find("model_type bailing_moe read as bailing_moe_v2", 1, true), info.notes[1])
  end)

  it("refuses a non-SiLU activation and a use_bias that is no boolean, naming the key", function()
    assert.matches("t.json: hidden_act", H.err_of(hf.from_config, config({ hidden_act = "gelu" }), "t.json"), 1, true)
    assert.matches("t.json: use_bias: expected true or false", H.err_of(hf.from_config, config({ use_bias = 1 }),
      "t.json"), 1, true)
  end)

  it("writes the Megatron-LM script as the bridge builds the model", function()
    local dir = H.tmpdir()
    local path = H.write(dir .. "/ling.json", require("cjson").encode(config({ num_nextn_predict_layers = 1,
      partial_rotary_factor = 0.5 })))
    local code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2", "--top-k", "1", "--quiet",
      "--set", "training.mtp_num_layers=1", "--out", dir .. "/o")
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/o/launch/rank1_megatron.sh")
    for _, flag in ipairs({ "--num-experts 256", "--moe-router-topk 8", "--moe-ffn-hidden-size 512",
      "--moe-shared-expert-intermediate-size 512", "--moe-layer-freq '[0]+[1]*19'", "--moe-router-score-function sigmoid",
      "--moe-router-enable-expert-bias", "--moe-router-num-groups 8", "--moe-router-group-topk 4", "--qk-layernorm",
      "--rotary-percent 0.5", "--rotary-base 600000", "--mtp-num-layers 1", "--untie-embeddings-and-output-weights",
      "--disable-bias-linear", "--attention-dropout 0", "--hidden-dropout 0",
      "--moe-router-dtype fp32" }) do -- bailing_moe2_bridge.py:99 moe_router_dtype = "fp32"
      assert.truthy(sh:find(flag, 1, true), flag)
    end
    assert.falsy(sh:find("NOT WRITTEN", 1, true), sh)
  end)
end)

-- Ling 1.x (model_type bailing_moe, BailingMoeForCausalLM; remote code,
-- inclusionAI/Ling 69823a61 models/configuration_bailing_moe.py and
-- modeling_bailing_moe.py). Ling-lite-1.5's config.json as a public MLX
-- port's test copies it from the Hub ("the real Ling-lite-1.5 config", its
-- shapes checked there against the checkpoint: query_key_value [3072,
-- 2048], shared_experts.gate_proj [2816, 2048]).
local null = require("cjson").null
local LING_LITE_15 = {
  architectures = { "BailingMoeForCausalLM" }, model_type = "bailing_moe",
  auto_map = { AutoConfig = "configuration_bailing_moe.BailingMoeConfig",
    AutoModel = "modeling_bailing_moe.BailingMoeModel",
    AutoModelForCausalLM = "modeling_bailing_moe.BailingMoeForCausalLM" },
  eos_token_id = 126081, pad_token_id = 126081, first_k_dense_replace = 0, hidden_act = "silu",
  hidden_size = 2048, initializer_range = 0.006, intermediate_size = 1408, max_position_embeddings = 32768,
  moe_intermediate_size = 1408, num_experts = 64, num_shared_experts = 2, norm_topk_prob = true,
  num_attention_heads = 16, num_experts_per_tok = 6, num_hidden_layers = 28, num_key_value_heads = 4,
  pretraining_tp = 1, rms_norm_eps = 1e-06, rope_scaling = null, rope_theta = 600000, tie_word_embeddings = false,
  torch_dtype = "bfloat16", transformers_version = "4.40.0", use_cache = true, use_bias = false,
  use_qkv_bias = false, vocab_size = 126464, output_router_logits = false, embedding_dropout = 0.0,
  norm_head = false, norm_softmax = false, output_dropout = 0.0,
}

local function ling(extra) return H.with(LING_LITE_15, extra) end

describe("Ling 1.x (bailing_moe)", function()
  -- Per layer: query_key_value 2048 x (16 + 2 x 4) x 128, dense 2048 x
  -- 2048 (no biases); 64 experts of 3 x 2048 x 1408, the shared MLP of
  -- 3 x 2048 x 2816, the gate 64 x 2048; two norms. Untied word_embeddings
  -- and lm_head 126464 x 2048; the final norm. The card: 16.8B total,
  -- 2.75B activated (6 experts and the shared MLP).
  local h, V = 2048, 126464
  local attn = h * 24 * 128 + h * h + 2 * h
  local expert = 3 * h * 1408
  local layer = attn + 64 * expert + 3 * h * 2816 + 64 * h
  local TOTAL = 28 * layer + 2 * V * h + h
  local ACTIVE = TOTAL - 28 * 58 * expert

  it("counts Ling-lite-1.5: 16,801,974,272 parameters, 2,753,153,024 active", function()
    assert.are.equal(16801974272, TOTAL)
    assert.are.equal(2753153024, ACTIVE)
    local m, info = hf.from_config(ling(), "lite.json")
    local pc = core.model_params(m)
    assert.are.equal(TOTAL, pc.total)
    assert.are.equal(ACTIVE, pc.active)
    assert.are.same({ 64, 6, 1408, 2816, false, false, false },
      { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size,
        m.qkv_bias, m.attn_out_bias, m.qk_norm })
    assert.is_nil(m.moe_first_dense_layers)
    assert.is_nil(m.moe_router_pre_softmax) -- top-6, renormalised: top-k then softmax
    assert.is_nil(m.moe_aux_loss_coeff) -- BailingMoeForCausalLM returns aux_loss None
    assert.is_nil(m.moe_router_bias)
    assert.are.equal(0, #info.notes)
    -- BailingMoeConfig's attention_dropout 0.1, which the config does not override
    assert.are.same({ true, "attention_dropout", 0.1 }, { info.dropout, info.dropout_key, info.dropout_value })
  end)

  it("prices dense layers before first_k_dense_replace at intermediate_size, biases where use_bias says", function()
    local m = hf.from_config(ling({ first_k_dense_replace = 2, intermediate_size = 5632, use_bias = true,
      use_qkv_bias = true }), "t.json")
    local pc = core.model_params(m)
    local dense = attn + 3 * h * 5632
    -- use_qkv_bias: (16 + 8) x 128 on query_key_value; use_bias: h on dense
    local bias = 24 * 128 + h
    assert.are.equal(2 * dense + 26 * layer + 28 * bias + 2 * V * h + h, pc.total)
    assert.are.same({ 2, true, true }, { m.moe_first_dense_layers, m.qkv_bias, m.attn_out_bias })
  end)

  it("takes BailingMoeConfig's defaults and nulls as the class does", function()
    -- use_bias defaults to true in BailingMoeConfig; null is None: no bias
    local dflt = hf.from_config(ling({ use_bias = null }), "t.json")
    assert.is_false(dflt.attn_out_bias)
    local c = ling()
    c.use_bias = nil
    assert.is_true(hf.from_config(c, "t.json").attn_out_bias)
    -- num_shared_experts null: no shared MLP; num_experts null: every layer dense
    assert.is_nil(hf.from_config(ling({ num_shared_experts = null }), "t.json").shared_expert_ffn_hidden_size)
    local dense = hf.from_config(ling({ num_experts = null, intermediate_size = 5632 }), "t.json")
    assert.is_nil(dense.num_experts)
    assert.are.equal(5632, dense.ffn_hidden_size)
    -- top-1 or norm_topk_prob false: softmax over all experts, top-k weights as they are
    assert.is_true(hf.from_config(ling({ norm_topk_prob = false }), "t.json").moe_router_pre_softmax)
  end)

  it("refuses what BailingMoeConfig's model cannot run, naming the key", function()
    local c = ling()
    c.num_key_value_heads = nil
    assert.matches("t.json: num_key_value_heads: BailingMoeConfig's default 0", H.err_of(hf.from_config, c, "t.json"),
      1, true)
    assert.matches("t.json: intermediate_size: required key is missing",
      H.err_of(hf.from_config, ling({ first_k_dense_replace = 1, intermediate_size = null }), "t.json"), 1, true)
    assert.matches("t.json: hidden_size: null", H.err_of(hf.from_config, ling({ hidden_size = null }), "t.json"),
      1, true)
    assert.matches("t.json: hidden_act", H.err_of(hf.from_config, ling({ hidden_act = "gelu" }), "t.json"), 1, true)
  end)

  it("reads model_type bailing_moe by its class: Ling 1.x's as bailing_moe, Ling 2.0's as bailing_moe_v2", function()
    assert.are.equal("bailing_moe", hf.model_type_of(ling()))
    assert.are.equal("bailing_moe", hf.model_type_of({ model_type = "bailing_moe" }))
    local v2, as = hf.model_type_of({ model_type = "bailing_moe", architectures = { "BailingMoeV2ForCausalLM" } })
    assert.are.same({ "bailing_moe_v2", "BailingMoeV2ForCausalLM" }, { v2, as })
  end)
end)
