--- A hand-written model table takes every model field the config.json
-- path produces (dense, MoE, MLA, hybrid, DSA): each shipped example
-- config, imported and then given back as a policy's model table, counts
-- the same parameters, and the fields are checked as the core checks them.
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local policy = require "apsearch.policy"
local util = require "apsearch.util"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."

local function as_policy(model)
  return policy.from_table({ model = model, cluster = { device = "h100-sxm-80gb", nodes = 1,
    devices_per_node = 8 }, training = { global_batch_size = 64, seq_length = 4096 } }, ROOT .. "/examples/x.lua")
end

describe("hand-written model tables", function()
  it("accept every field of every example config, with the same counts", function()
    local dir = ROOT .. "/examples/models/"
    local n = 0
    for _, f in ipairs(util.listdir(dir)) do
      if f:match("%.json$") then
        local m = hf.load(dir .. f)
        local want = core.model_params(m)
        local t = {}
        for k, v in pairs(m) do t[k] = v end
        local p = as_policy(t)
        local got = core.model_params(p.model)
        assert.are.same({ f, want.total, want.active }, { f, got.total, got.active })
        n = n + 1
      end
    end
    assert.is_true(n >= 30, "example configs read: " .. n)
  end)

  it("checks the MoE and MLA fields as the core does, naming the field", function()
    local base = { name = "x", num_layers = 6, hidden_size = 2048, num_attention_heads = 16,
      num_query_groups = 16, ffn_hidden_size = 8192, vocab_size = 32000, num_experts = 16,
      experts_per_token = 2, moe_ffn_hidden_size = 1024 }
    local function with(extra)
      local t = {}
      for k, v in pairs(base) do t[k] = v end
      for k, v in pairs(extra) do t[k] = v end
      return t
    end
    -- per layer q, k, v, o 2048 x 2048, two RMSNorms, the router 16 x 2048
    -- and 16 experts of 3 x 2048 x 1024; untied embedding and output layer,
    -- the final norm (2 of the 16 experts active)
    local c = core.model_params(as_policy(base).model)
    local common = 4 * 2048 * 2048 + 2 * 2048 + 16 * 2048
    assert.are.equal(6 * (common + 16 * 3 * 2048 * 1024) + 2 * 32000 * 2048 + 2048, c.total)
    assert.are.equal(6 * (common + 2 * 3 * 2048 * 1024) + 2 * 32000 * 2048 + 2048, c.active)
    assert.are.same({ 0, 5 }, as_policy(with({ moe_dense_layers = { 0, 5 } })).model.moe_dense_layers)
    local function err(extra) return H.err_of(as_policy, with(extra)) end
    -- the core's own checks, when the model is first estimated
    local function core_err(t) return H.err_of(function() return core.model_params(as_policy(t).model) end) end
    assert.truthy(err({ moe_dense_layers = { "a" } }):find(
      "model.moe_dense_layers: element 1 must be a layer index >= 0 (got \"a\")", 1, true))
    assert.truthy(err({ moe_dense_layers = {} }):find("expected a non-empty array of layer indices", 1, true))
    -- one number: layer 3 alone or the first 3 layers? the error says how to write each
    assert.truthy(err({ moe_dense_layers = 3 }):find("model.moe_dense_layers: expected a non-empty array of layer " ..
      "indices: {3} (--set: 3,) for layer 3 alone, moe_first_dense_layers = 3 for the first 3 (got 3)", 1, true))
    assert.truthy(err({ moe_dense_layers = 1e30 }):find("model.moe_dense_layers: expected a non-empty array of " ..
      "layer indices (got 1e+30)", 1, true))
    assert.truthy(err({ moe_dense_layers = 3.0 }):find("{3} (--set: 3,)", 1, true))
    assert.truthy(core_err(with({ moe_dense_layers = { 9 } })):find("model.moe_dense_layers[1]: must be a layer index in [0, 6)",
      1, true))
    assert.truthy(core_err(with({ experts_per_token = 99 })):find("model.experts_per_token: 99 exceeds num_experts", 1, true))
    assert.truthy(core_err({ name = "d", num_layers = 2, hidden_size = 64, num_attention_heads = 4,
      num_query_groups = 4, ffn_hidden_size = 128, vocab_size = 100, experts_per_token = 2 }):find(
      "model.experts_per_token: given without num_experts (a dense model)", 1, true))
    assert.truthy(err({ kv_lora_rank = -1 }):find("model.kv_lora_rank: must be an integer >= 0 (got -1)", 1, true))
  end)
end)
