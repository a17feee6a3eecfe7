-- tests/lua/rules_spec.lua -- each built-in rule file of rules/ on its own:
-- a passing candidate, a failing one with its code and message (the
-- busted-based rule tests of the design), and the rule loader.

local core = require "apsearch.core"
local rules = require "apsearch.rules"
local presets = require "apsearch.presets"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."

local function load(name)
  return rules.load_file(ROOT .. "/rules/" .. name .. ".lua")
end

local ctx
setup(function()
  ctx = core.context((presets.model("llama-3.1-8b")),
    { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 },
    { global_batch_size = 64, seq_length = 8192 })
end)

local GOOD = { dp_degree = 8 }

local CASES = {
  degrees = { { tp_degree = 0 }, "INVALID_DEGREE", "tp_degree = 0" },
  zero = { { dp_degree = 1, fsdp_degree = 8, zero_stage = 1 }, "ZERO_STAGE_INVALID", "zero_stage = 1 with fsdp_degree = 8" },
  devices = { { dp_degree = 16 }, "DEVICE_COUNT", "16 devices > num_devices = 8" },
  cp = { { dp_degree = 2, cp_degree = 3 }, "CP_DIVISIBILITY", "seq_length = 8192 is not divisible by 2 * cp_degree = 6" },
  tp = { { dp_degree = 2, tp_degree = 3 }, "TP_DIVISIBILITY", "num_attention_heads = 32 is not divisible by tp_degree = 3" },
  batch = { { dp_degree = 8, micro_batch_size = 3 }, "BATCH_DIVISIBILITY", "global_batch_size = 64 is not divisible" },
  pp = { { dp_degree = 2, pp_degree = 3 }, "PP_DIVISIBILITY", "num_layers = 32 is not divisible by pp_degree" },
}

describe("built-in rules", function()
  for name, c in pairs(CASES) do
    it(name .. " passes a valid candidate and rejects " .. c[2], function()
      local r = load(name)
      assert.are.equal(name, r.name)
      assert.is_true(r.cheap)
      assert.are.equal(name, r.core_check)
      assert.is_true(r.check(GOOD, ctx))
      local ok, code, msg = r.check(c[1], ctx)
      assert.is_false(ok)
      assert.are.equal(c[2], code)
      assert.truthy(msg:find(c[3], 1, true), msg)
      local listed = false
      for _, x in ipairs(r.codes) do if x == code then listed = true end end
      assert.is_true(listed)
    end)
  end

  it("devices reports idle devices, pp reports an invalid interleaving", function()
    local ok, code = load("devices").check({ dp_degree = 4 }, ctx)
    assert.is_false(ok)
    assert.are.equal("IDLE_DEVICES", code)
    assert.is_true(load("devices").check({ dp_degree = 4, allow_idle_devices = true }, ctx))
    local ok2, code2 = load("pp").check({ dp_degree = 8, vpp_degree = 2 }, ctx)
    assert.is_false(ok2)
    assert.are.equal("VPP_INVALID", code2)
  end)

  it("memory_limit reads the evaluation", function()
    local r = load("memory_limit")
    assert.is_false(r.cheap)
    local good = ctx:evaluate({ dp_degree = 1, fsdp_degree = 8 })
    assert.is_true(good.feasible)
    assert.is_true(r.check({}, ctx, good))
    local s = { dp_degree = 8 }                     -- pure DP: 18 B/param does not fit
    local ev = ctx:evaluate(s)
    local ok, code, msg = r.check(s, ctx, ev)
    assert.is_false(ok)
    assert.are.equal("MEMORY_LIMIT", code)
    assert.truthy(msg:find("memory limit", 1, true))
  end)
end)

describe("rule loader", function()
  it("loads the directory sorted in the core's check order", function()
    local names = {}
    for _, r in ipairs(rules.load_dir(ROOT .. "/rules")) do names[#names + 1] = r.name end
    assert.are.same({ "degrees", "zero", "tp", "cp", "batch", "pp", "devices", "framework", "memory_limit" }, names)
    local core_order = {}
    for i, n in ipairs(rules.core_checks) do core_order[i] = n end
    table.remove(names)
    assert.are.same(core_order, names)
  end)

  it("validates rule tables strictly", function()
    local function err(t)
      local ok, e = pcall(rules.normalize, t, "my_rule.lua")
      assert.is_false(ok)
      return e
    end
    assert.are.equal("my_rule.lua: check: required field is missing (got nothing)", err({ name = "x" }))
    assert.are.equal("my_rule.lua: chek: unknown field (got 1)", H.plain(err({ name = "x", check = print, chek = 1 })))
    assert.truthy(err({ name = "x", check = print, chek = 1 }):find('did you mean "check"?', 1, true))
    assert.are.equal('my_rule.lua: code: expected an upper-case code like MY_RULE (got "bad code")',
      err({ name = "x", check = print, code = "bad code" }))
    local r = rules.normalize({ name = "max-tp", check = print }, "f.lua")
    assert.are.equal("MAX_TP", r.code)
    assert.is_true(r.cheap)
  end)

  it("runs rule files in a sandbox", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("return { name = 'x', check = function() return io ~= nil or os ~= nil or require ~= nil end }")
    f:close()
    local r = rules.load_file(path)
    assert.is_false(r.check())
    os.remove(path)
  end)

  it("lets a policy rule replace a built-in one of the same name", function()
    local builtin = rules.load_dir(ROOT .. "/rules")
    local mine = rules.normalize({ name = "tp", check = function() return true end, order = 50 }, "p")
    local merged = rules.merge(builtin, { mine })
    local found
    for _, r in ipairs(merged) do if r.name == "tp" then found = r end end
    assert.are.equal(mine, found)
    assert.are.equal(#builtin, #merged)
  end)
end)

describe("require 'apsearch'", function()
  it("exposes the submodules and a one-call run", function()
    local aps = require "apsearch"
    assert.are.equal(require "apsearch.search", aps.search)
    assert.are.equal(require "apsearch.format.json", aps.format.json)
    local r = aps.run(ROOT .. "/examples/llama3_8b_h100.lua", { top_k = 2, fix = { "tp_degree=1" } })
    assert.are.equal(2, #r.top_k_strategies)
    assert.are.equal(1, r.top_k_strategies[1].tp_degree)
  end)
end)
