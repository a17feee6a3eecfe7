-- tests/lua/example_rule_spec.lua -- how a team tests its own rule with
-- busted and apsearch.testing (docs/writing-rules.md shows this file).
-- Run from the repository root after a build:
--   busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' \
--     tests/lua/example_rule_spec.lua
local T = require "apsearch.testing"

local ROOT = os.getenv("APS_ROOT") or "."
local function example(path) return ROOT .. "/examples/" .. path end

describe("examples/rules/tp_in_node.lua", function()
  local rule, ctx
  setup(function()
    rule = T.load_rule(example("rules/tp_in_node.lua"))        -- loaded in the sandbox, as the search does
    ctx = T.context{ model = "llama-3.1-70b", cluster = "h100-sxm-80gb:4x8" }  -- 4 nodes of 8 GPUs
  end)

  it("is a cheap rule with its own reason code", function()
    assert.are.equal("tp_in_node", rule.name)
    assert.are.equal("TP_CROSSES_NODE", rule.code)
    assert.is_true(rule.cheap)
  end)

  it("accepts tensor parallelism inside a node", function()
    for _, tp in ipairs({ 1, 2, 4, 8 }) do
      assert.is_true(T.check(rule, T.candidate({ tp_degree = tp }, ctx), ctx))
    end
  end)

  it("rejects a TP group that spans nodes, with the numbers", function()
    local ok, code, msg = T.check(rule, T.candidate({ tp_degree = 16 }, ctx), ctx)
    assert.is_false(ok)
    assert.are.equal("TP_CROSSES_NODE", code)
    assert.are.equal("tp_degree = 16 does not fit in a node of 8 GPUs", msg)
  end)

  it("follows the cluster's node size", function()
    local small = T.context{ model = "llama-3.1-70b", cluster = T.cluster("h100-sxm-80gb", 8, 4) }
    assert.is_false((T.check(rule, T.candidate({ tp_degree = 8 }, small), small)))
  end)

  it("filters candidates in a whole search", function()
    local result = T.search{
      model = "llama-3.1-8b", cluster = T.cluster("h100-sxm-80gb", 4, 4),
      search_space = { data_parallel = "auto", tp_degree = { 1, 2, 4, 8 }, fsdp_degree = { 1, 2 } },
      rules = { rule },
    }
    assert.is_true(T.count(result, "TP_CROSSES_NODE") > 0)
    for _, s in ipairs(result.top_k_strategies) do assert.is_true(s.tp_degree <= 4) end
  end)
end)

describe("examples/rules/max_pp4.lua", function()
  it("allows up to 4 pipeline stages", function()
    local ctx = T.context{ model = "llama-3.1-70b", cluster = "h100-sxm-80gb:8x8" }
    local rule = T.load_rule(example("rules/max_pp4.lua"))
    assert.is_true(T.check(rule, T.candidate({ pp_degree = 4, tp_degree = 8 }, ctx), ctx))
    local ok, code = T.check(rule, T.candidate({ pp_degree = 8, tp_degree = 8 }, ctx), ctx)
    assert.is_false(ok)
    assert.are.equal("PP_OVER_4", code)
  end)
end)

describe("examples/objectives/gpu_hours_per_trillion_tokens.lua", function()
  it("charges the whole cluster per 10^12 tokens", function()
    local ctx = T.context{ model = "llama-3.1-8b", cluster = "h100-sxm-80gb:1x8",
      training = { global_batch_size = 64, seq_length = 8192 } }
    local cand = T.candidate({ fsdp_degree = 8 }, ctx)
    local score = T.score(example("objectives/gpu_hours_per_trillion_tokens.lua"), cand, ctx)
    local step = ctx:evaluate(cand).step_time
    assert.is_near(8 * step / (64 * 8192) * 1e12 / 3600, score, 1e-6 * score)
  end)
end)

describe("examples/formatters/markdown.lua", function()
  it("renders the top-k as a Markdown table", function()
    local result = T.search{ top_k = 3 }
    local text = T.load_formatter(example("formatters/markdown.lua")).render(result)
    assert.truthy(text:find("^## llama%-3%.1%-8b on 8 x h100%-sxm%-80gb"))
    assert.truthy(text:find("| rank | dp | fsdp |", 1, true))
    local rows = 0
    for _ in text:gmatch("\n| %d+ |") do rows = rows + 1 end
    assert.are.equal(3, rows)
  end)
end)
