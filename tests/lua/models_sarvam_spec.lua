-- tests/lua/models_sarvam_spec.lua -- Sarvam 30B (`sarvam_moe`) and Sarvam
-- 105B (`sarvam_mla`), March 2026: exact counts module by module from
-- transformers' modular_sarvam_moe.py @ 0684546d and modular_sarvam_mla.py
-- @ 29686707 at their config classes' defaults (documented there as
-- sarvamai/sarvam-30b's and sarvamai/sarvam-105b's; the Hub config.json
-- files are not in the repository: no verbatim copy was found), against
-- Sarvam's "30B total, 2.4B active" and "105B (106B) total, 10.3B active"
-- (the total of 30B and both actives without the embedding and output
-- layer); the keys the classes hard-wire, refused at other values.

local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local err_of, with = H.err_of, H.with

local function counts(cfg)
  local m = hf.from_config(cfg, "s.json")
  local c = core.model_params(m)
  local embed = 2 * m.vocab_size * m.hidden_size
  return m, c, embed
end

describe("Sarvam 30B (sarvam_moe)", function()
  -- SarvamMoeConfig's defaults: h 4096, 64 heads of 64 (hidden / heads),
  -- 4 KV heads, intermediate 8192, 128 experts of 1024, top 6, 1 shared,
  -- V 262,144, 19 layers, the first dense.  Qwen3Attention q 4096 x 4096
  -- + k, v 2 x 4096 x 256 + o 4096 x 4096 = 35,651,584, q_norm and k_norm
  -- 64 each, two RMSNorms 8,192: 35,659,904 a layer; the dense MLP
  -- 3 x 4096 x 8192 = 100,663,296; an MoE layer's router 128 x 4096 + bias
  -- 128 = 524,416, experts 128 x 3 x 4096 x 1024 = 1,610,612,736, shared
  -- 12,582,912 (active: 6 experts 75,497,472); embed + lm_head
  -- 2,147,483,648, norm 4,096.  Total 677,538,176 + 100,663,296 +
  -- 18 x 1,623,720,064 + 2,147,483,652 = 32,152,650,368 (30,005,166,720
  -- without embed and lm_head); active 677,538,176 + 100,663,296 +
  -- 18 x 88,604,800 + 4,096 = 2,373,091,968 without them.
  it("counts 32,152,650,368 total, 2,373,091,968 active without the embeddings", function()
    local m, c, embed = counts({ model_type = "sarvam_moe" })
    assert.are.same({ 64, 4, 1, 128, 6, 1024 },
      { m.head_dim, m.num_query_groups, m.moe_first_dense_layers, m.num_experts, m.experts_per_token,
        m.moe_ffn_hidden_size })
    assert.are.equal(32152650368, c.total)
    assert.are.equal(2373091968, c.active - embed)
    assert.is_true(H.near_card(c.total - embed, 30e9, H.CARD_ROUNDING_2))
    assert.is_true(H.near_card(c.active - embed, 2.4e9, H.CARD_ROUNDING_2))
    assert.is_true(m.qk_norm and m.moe_router_bias and m.moe_router_fp32)
    assert.are.equal(2.5, m.moe_router_topk_scaling_factor)
  end)

  it("reads the remote code's class and aliases, the aux loss only with output_router_logits", function()
    local m = hf.from_config({ architectures = { "SarvamMoEForCausalLM" }, model_type = "sarvam_moe",
      n_routed_experts = 64, n_shared_experts = 2, n_group = 8, topk_group = 2 }, "s.json")
    assert.are.same({ 64, 2048, 8, 2 }, { m.num_experts, m.shared_expert_ffn_hidden_size,
      m.moe_router_num_groups, m.moe_router_group_topk })
    assert.is_nil(m.moe_aux_loss_coeff) -- router_aux_loss_coef unused without router logits
    -- DeepSeek's keys SarvamMoeTopkRouter does not read change nothing
    local stray = hf.from_config({ model_type = "sarvam_moe", aux_loss_alpha = 0.01, scoring_func = "softmax",
      seq_aux = true }, "s.json")
    assert.is_nil(stray.moe_aux_loss_coeff)
    assert.is_true(stray.moe_router_bias)
    m = hf.from_config({ model_type = "sarvam_moe", output_router_logits = true }, "s.json")
    assert.are.equal(0.001, m.moe_aux_loss_coeff) -- SarvamMoeConfig's router_aux_loss_coef
    assert.is_nil(m.moe_seq_aux_loss)             -- Mixtral's load-balancing loss: over the batch
  end)

  it("refuses what SarvamMoe does not build, naming the key", function()
    for key, v in pairs({ use_qk_norm = false, moe_router_enable_expert_bias = false, use_qkv_bias = true,
                          use_bias = true }) do
      local e = err_of(hf.from_config, { model_type = "sarvam_moe", [key] = v }, "s.json")
      assert.is_truthy(e:find("NotImplemented: s.json: " .. key .. ":", 1, true), e)
    end
    local e = err_of(hf.from_config, { model_type = "sarvam_moe", first_k_dense_replace = 19 }, "s.json")
    assert.is_truthy(e:find("s.json: first_k_dense_replace: no layer would have experts", 1, true), e)
  end)
end)

describe("Sarvam 105B (sarvam_mla)", function()
  -- SarvamMLAConfig's defaults: DeepSeek-V3's layer at h 4096, 64 heads,
  -- no q_lora (q_proj 4096 x 64 x 192 = 50,331,648), kv_a 4096 x 576 =
  -- 2,359,296, kv_a_layernorm 512, kv_b 512 x 64 x 256 = 8,388,608, o
  -- 8192 x 4096 = 33,554,432, two RMSNorms 8,192: 94,642,688; the dense
  -- layer 3 x 4096 x 16384 = 201,326,592; an MoE layer router 524,288 +
  -- bias 128, 128 experts of 3 x 4096 x 2048 = 25,165,824, 1 shared
  -- (active: 8 + 1): total 94,642,688 + 201,326,592 + 31 x 3,341,558,400 +
  -- 2,147,483,648 + 4,096 = 106,031,767,424; active without embed and
  -- lm_head 295,969,280 + 31 x 321,659,520 + 4,096 = 10,267,418,496.
  it("counts 106,031,767,424 total, 10,267,418,496 active without the embeddings", function()
    local m, c, embed = counts({ model_type = "sarvam_mla" })
    assert.are.equal(106031767424, c.total)
    assert.are.equal(10267418496, c.active - embed)
    assert.is_true(H.near_card(c.total, 106e9, H.CARD_ROUNDING_2))
    assert.is_true(H.near_card(c.active - embed, 10.3e9, H.CARD_ROUNDING_2))
    assert.are.same({ 16, 2, 192 }, { m.moe_router_num_groups, m.moe_router_group_topk, m.head_dim })
  end)

  -- the Hub file's num_experts / num_shared_experts, its head_dim of
  -- kv_lora_rank + qk_rope_head_dim (dropped) and "deepseek_yarn" RoPE
  it("reads the Hub file's names, drops its head_dim and takes deepseek_yarn as YaRN", function()
    local m = hf.from_config({ architectures = { "SarvamMLAForCausalLM" }, model_type = "sarvam_mla",
      num_experts = 64, num_shared_experts = 2, head_dim = 576,
      rope_scaling = { type = "deepseek_yarn", factor = 40, original_max_position_embeddings = 4096,
                       mscale = 1, mscale_all_dim = 1 } }, "s.json")
    assert.are.same({ 64, 4096, 192, "yarn", 40 }, { m.num_experts, m.shared_expert_ffn_hidden_size, m.head_dim,
      m.rope_scaling_type, m.rope_scaling_factor })
    local e = err_of(hf.from_config, with({ model_type = "sarvam_mla" }, { kv_lora_rank = 0 }), "s.json")
    assert.is_truthy(e:find("s.json: kv_lora_rank", 1, true), e)
  end)
end)
