-- tests/lua/models_glm_llama4_spec.lua -- GLM-4.5 / GLM-4.6 (glm4_moe)
-- imported from their Hugging Face config.json (lua/apsearch/hf.lua):
-- exact total and active parameter counts (core.model_params) computed
-- here from the config fields, the published rounded totals as a check,
-- refusals of bad values naming file, key and value, the Megatron-LM
-- flags of the architecture, and `apsearch run` on them.
--
-- The configs are examples/models/glm-4.5*.json.

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local MODELS = ROOT .. "/examples/models/"

local function load(name) return hf.load(MODELS .. name .. ".json") end

local function decoded(name)
  local f = assert(io.open(MODELS .. name .. ".json"))
  local cfg = cjson.decode(f:read("a"))
  f:close()
  return cfg
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

--- Parameters of a glm4_moe config as transformers' Glm4MoeForCausalLM
-- builds them (modeling_glm4_moe.py @ 000c33fd), computed from the
-- config fields: Glm4MoeAttention q h x a d, k and v h x k d with biases
-- (attention_bias), o a d x h without; q_norm, k_norm RMSNorm(head_dim)
-- with use_qk_norm; input_layernorm, post_attention_layernorm h each;
-- dense layers (i < first_k_dense_replace) Glm4MoeMLP 3 h f; MoE layers
-- E experts and n_shared_experts shared ones of 3 h f_e each, the router
-- weight E x h and e_score_correction_bias E (a buffer in transformers,
-- a checkpoint tensor, counted as apsearch counts DeepSeek-V3's); embed
-- and lm_head V x h each (untied), the final norm h.
-- @treturn table {total=, active=, non_embedding_active=, mtp=}
local function glm_counts(c)
  local h, L, a, k, d = c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
    c.num_key_value_heads, c.head_dim
  local V, f, fe, E, topk = c.vocab_size, c.intermediate_size, c.moe_intermediate_size,
    c.n_routed_experts, c.num_experts_per_tok
  local dense_n = c.first_k_dense_replace
  local attn = h * a * d + 2 * h * k * d + a * d * h + (a * d + 2 * k * d)
    + (c.use_qk_norm and 2 * d or 0) + 2 * h
  local expert = 3 * h * fe
  local router = E * h + E
  local moe_common = attn + c.n_shared_experts * expert + router
  local dense_layer = attn + 3 * h * f
  local moe_layer = moe_common + E * expert
  local moe_active = moe_common + topk * expert
  local embed = 2 * V * h
  local total = dense_n * dense_layer + (L - dense_n) * moe_layer + embed + h
  local active = dense_n * dense_layer + (L - dense_n) * moe_active + embed + h
  -- the MTP module as the checkpoint stores it (model.layers.L: enorm,
  -- hnorm, eh_proj 2h x h, one MoE decoder layer, shared_head.norm, its own
  -- embed_tokens and shared_head.head copies), as vLLM's glm4_moe_mtp.py
  -- builds it
  local mtp = c.num_nextn_predict_layers * (3 * h + 2 * h * h + moe_layer + embed)
  return { total = total, active = active, non_embedding_active = active - embed, mtp = mtp,
           dense_layer = dense_layer, moe_layer = moe_layer }
end

describe("glm4_moe: exact parameter counts", function()
  -- zai-org/GLM-4.5-Air: 106,852,251,264 total, 13,424,129,664 active.
  -- Published (model card, tech report arXiv:2508.06471 table 1): 106B
  -- total, 12B active.  The total is the model without its MTP layer
  -- (transformers does not build it: Glm4MoeModel ignores model.layers.46,
  -- _keys_to_ignore_on_load_unexpected); the active count leaves out the
  -- embedding and the output layer (13.42B - 2 x 0.62B = 12.18B).
  it("GLM-4.5-Air: 106,852,251,264 total, 13,424,129,664 active", function()
    local m = load("glm-4.5-air")
    local want = glm_counts(decoded("glm-4.5-air"))
    assert.are.same({ 46, 4096, 96, 8, 128, 10944, 151552 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size, m.vocab_size })
    assert.are.same({ 128, 8, 1408, 1408, 1, 1 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers, m.mtp_layers })
    assert.are.same({ true, false, false, 0.5 }, { m.qkv_bias, m.attn_out_bias, m.qk_norm, m.rotary_percent })
    local c = core.model_params(m)
    assert.are.equal(106852251264, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(13424129664, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.equal(want.moe_layer, c.per_moe_layer)
    assert.are.equal(want.mtp, c.mtp)
    assert.are.equal(106, c.total // 1e9)
    assert.are.equal(12, want.non_embedding_active // 1e9)
  end)

  -- zai-org/GLM-4.5: 352,797,829,024 total, 33,632,266,144 active.
  -- Published: 355B total, 32B active.  The active count again leaves out
  -- embedding and output layer (32.08B).  The 355B is 0.6% above the
  -- model transformers builds and 1% below the checkpoint, whose MTP layer
  -- (with its own embedding and head copies, 5,539,962,272) makes
  -- 358,337,791,296, the Hub's "358.34B params"; the card does not say
  -- what its rounded 355B counts, so it is checked to within 1%.
  it("GLM-4.5: 352,797,829,024 total, 33,632,266,144 active; with MTP the Hub's 358.34B", function()
    local m = load("glm-4.5")
    local want = glm_counts(decoded("glm-4.5"))
    assert.are.same({ 92, 5120, 12288, 160, 1536, 3 }, { m.num_layers, m.hidden_size, m.ffn_hidden_size,
      m.num_experts, m.moe_ffn_hidden_size, m.moe_first_dense_layers })
    assert.is_true(m.qk_norm)
    assert.is_nil(m.qk_norm_full_width)
    local c = core.model_params(m)
    assert.are.equal(352797829024, want.total)
    assert.are.equal(want.total, c.total)
    assert.are.equal(33632266144, want.active)
    assert.are.equal(want.active, c.active)
    assert.are.equal(want.dense_layer, c.per_layer)
    assert.are.equal(358337791296, c.total + c.mtp)
    assert.are.equal(want.mtp, c.mtp)
    assert.is_true(math.abs(c.total - 355e9) / 355e9 < 0.01)
    assert.are.equal(32, want.non_embedding_active // 1e9)
  end)

  it("reads the router as DeepSeek-V3's noaux_tc gate", function()
    local m = load("glm-4.5")
    -- sigmoid + e_score_correction_bias, renormalised top-8, x 2.5, no groups
    assert.are.same({ true, 2.5 }, { m.moe_router_bias, m.moe_router_topk_scaling_factor })
    assert.is_nil(m.moe_router_pre_softmax)
    assert.is_nil(m.moe_router_num_groups)
    local cfg = decoded("glm-4.5")
    cfg.norm_topk_prob, cfg.n_group, cfg.topk_group = false, 8, 4
    m = hf.from_config(cfg, "g.json")
    assert.is_true(m.moe_router_pre_softmax)
    assert.are.same({ 8, 4, 2 }, { m.moe_router_num_groups, m.moe_router_group_topk,
      m.moe_router_group_score_topk })
  end)

  it("takes Glm4MoeConfig's defaults for absent keys and reads the class from architectures", function()
    local cfg = decoded("glm-4.5-air")
    cfg.partial_rotary_factor, cfg.attention_bias, cfg.norm_topk_prob = nil, nil, nil
    local m = hf.from_config(cfg, "g.json")
    assert.are.same({ 0.5, false }, { m.rotary_percent, m.qkv_bias })
    assert.is_nil(m.moe_router_pre_softmax) -- norm_topk_prob default true
    cfg.partial_rotary_factor = 1
    assert.is_nil(hf.from_config(cfg, "g.json").rotary_percent) -- every dim: not carried
    cfg.model_type = "glm4_moe_custom"
    local _, info = hf.from_config(cfg, "g.json")
    assert.are.equal("glm4_moe", info.model_type)
  end)
end)

describe("glm4_moe: bad values exit 2 naming file, key and value", function()
  local cases = {
    { "partial_rotary_factor", 1.5, "g.json: partial_rotary_factor: expected a number in (0, 1] (got 1.5)" },
    { "partial_rotary_factor", "0.5", 'g.json: partial_rotary_factor: expected a number in (0, 1] (got "0.5")' },
    { "n_routed_experts", 0, "g.json: n_routed_experts: expected a positive integer <= 16777216 (got 0)" },
    { "n_shared_experts", -1, "g.json: n_shared_experts: expected an integer in [0, 16777216] (got -1)" },
    { "first_k_dense_replace", 46, "g.json: first_k_dense_replace: no layer would have experts " ..
      "(num_hidden_layers = 46) (got 46)" },
    { "moe_intermediate_size", 1.5, "g.json: moe_intermediate_size: expected a positive integer <= " ..
      "16777216 (got 1.5)" },
    { "num_nextn_predict_layers", "1", 'g.json: num_nextn_predict_layers: expected an integer in ' ..
      '[0, 16777216] (got "1")' },
    { "use_qk_norm", "yes", 'g.json: use_qk_norm: expected true or false (got "yes")' },
    { "attention_bias", 1, "g.json: attention_bias: expected true or false (got 1)" },
    { "routed_scaling_factor", -2.5, "g.json: routed_scaling_factor: expected a finite number >= 0 (got -2.5)" },
    { "norm_topk_prob", "true", 'g.json: norm_topk_prob: expected true or false (got "true")' },
  }
  for _, case in ipairs(cases) do
    local key, value, want = table.unpack(case)
    it(key .. " = " .. tostring(value), function()
      local cfg = decoded("glm-4.5-air")
      cfg[key] = value
      assert.are.equal(want, err_of(hf.from_config, cfg, "g.json"))
    end)
  end

  it("requires n_shared_experts, which Glm4MoeMoE always builds from", function()
    local cfg = decoded("glm-4.5-air")
    cfg.n_shared_experts = nil
    assert.are.equal("g.json: n_shared_experts: required key is missing (got nil)",
      err_of(hf.from_config, cfg, "g.json"))
  end)

  it("exits 2 from the binary with the file, key and value", function()
    local dir = H.tmpdir()
    local cfg = decoded("glm-4.5-air")
    cfg.partial_rotary_factor = 2
    local path = dir .. "/glm.json"
    local f = assert(io.open(path, "w"))
    f:write(cjson.encode(cfg))
    f:close()
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:64", "--top-k", "1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": partial_rotary_factor: expected a number in (0, 1] (got 2)", 1, true), err)
  end)
end)

describe("glm4_moe: apsearch run estimates it", function()
  it("GLM-4.5-Air on h100-sxm-80gb:64 has a feasible strategy", function()
    local code, out, err = H.apsearch("run", "--model", "examples/models/glm-4.5-air.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--format", "json", "--quiet")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local best = r.top_k_strategies[1]
    assert.is_not_nil(best, out:sub(1, 400))
    assert.is_true(best.ep_degree >= 1 and #r.stage_summary > 0, out:sub(1, 400))
  end)

  it("writes --rotary-percent 0.5 for Megatron-LM; TorchTitan and MindFormers say they rotate every dim", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/glm-4.5-air.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local function read(name)
      local f = assert(io.open(dir .. "/launch/" .. name))
      local t = f:read("a")
      f:close()
      return t
    end
    assert.truthy(read("rank1_megatron.sh"):find("\n  %-%-rotary%-percent 0%.5\n"))
    assert.truthy(read("rank1_torchtitan.py"):find("NOT EXPRESSIBLE in TorchTitan: partial RoPE (rotary_percent 0.5",
      1, true))
    assert.truthy(read("rank1_mindformers.yaml"):find("NOT EXPRESSIBLE in MindFormers: partial RoPE " ..
      "(rotary_percent 0.5", 1, true))
  end)
end)
