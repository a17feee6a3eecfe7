-- tests/lua/json_encode_spec.lua -- the JSON writer (format/json.lua over
-- core.json_encode) writes what the lua-cjson writer it replaced wrote
-- (tests/lua/json_cjson_oracle.lua), keys in byte order: the same text
-- but for the order of each object's keys, on a search result, an
-- estimate-shaped value and the edge cases of the module's header.

local cjson = require "cjson"
local json = require "apsearch.format.json"
local oracle = require "json_cjson_oracle"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local util = require "apsearch.util"

local ROOT = os.getenv("APS_ROOT") or "."

-- number of plain (non-overlapping) occurrences of s in text
local function count(text, s)
  local n, at = 0, text:find(s, 1, true)
  while at do
    n = n + 1
    at = text:find(s, at + #s, true)
  end
  return n
end

-- new and old texts of v: the same length, the same decoded value, the
-- same empty arrays and objects (cjson decodes both as an empty table)
local function assert_same_text(v)
  local new, old = json.encode(v), oracle.encode(v)
  assert.are.equal(#old, #new)
  assert.are.same(cjson.decode(old), cjson.decode(new))
  assert.are.equal(count(old, "[]"), count(new, "[]"))
  assert.are.equal(count(old, "{}"), count(new, "{}"))
  return new
end

-- every object's keys in byte order, at every level (a decoded value and
-- the text it came from: keys are read off the text in order)
local function assert_sorted_keys(text)
  local depth_keys, depth, in_str, esc, key_start = { {} }, 1, false, false, nil
  for i = 1, #text do
    local c = text:sub(i, i)
    if in_str then
      if esc then esc = false
      elseif c == "\\" then esc = true
      elseif c == '"' then
        in_str = false
        if text:sub(i + 1, i + 1) == ":" then
          local keys = depth_keys[depth]
          local k = text:sub(key_start, i)
          if keys.last then assert.is_true(keys.last < k, keys.last .. " before " .. k) end
          keys.last = k
        end
      end
    elseif c == '"' then in_str, key_start = true, i
    elseif c == "{" or c == "[" then depth = depth + 1 depth_keys[depth] = {}
    elseif c == "}" or c == "]" then depth = depth - 1
    end
  end
end

describe("json.encode (core.json_encode)", function()
  local result
  setup(function()
    local p = policy.load(ROOT .. "/examples/llama3_8b_h100.lua", { top_k = 20 })
    result = search.run(p)
  end)

  it("writes a search result as the cjson writer did, keys in byte order", function()
    assert.is_true(#result.top_k_strategies > 1)
    local text = assert_same_text(result)
    assert_sorted_keys(text)
  end)

  it("writes the same bytes for the same value whatever its tables' insertion order", function()
    local a = { zeta = 1, alpha = { y = 2, x = { 3, 4 } }, mid = "m" }
    local b = { mid = "m", alpha = { x = { 3, 4 }, y = 2 }, zeta = 1 }
    assert.are.equal('{"alpha":{"x":[3,4],"y":2},"mid":"m","zeta":1}', json.encode(a))
    assert.are.equal(json.encode(a), json.encode(b))
    assert.are.equal(json.encode(result), json.encode(result))
  end)

  it("spells an estimate's strategy from its stages as the cjson writer did", function()
    local rec = result.top_k_strategies[1]
    local strategy = {}
    for k, v in pairs(rec) do
      if type(v) ~= "table" or k == "stage_partition" or k == "layer_offset" then strategy[k] = v end
    end
    local est = { strategy = strategy, stages = rec.memory_cost.per_stage, step_time = rec.step_time }
    assert_same_text({ estimate = est, inputs = result.inputs })
  end)

  it("writes the edge cases of the module's header as the cjson writer did", function()
    local deep = {}
    local at = deep
    for _ = 1, 70 do at.next = {} at = at.next end
    local v = {
      s = "MPT\255/x\"\\\1\127\n\t\r\b\f", ["k\195"] = "caf\195\169", euro = "\226\130\172",
      bad = { "\226\130", "\237\160\128", "\192\175", "\244\144\128\128", "\248\136\128\128\128" },
      nan = 0 / 0, inf = math.huge, ninf = -math.huge, negz = -0.0, big = 2 ^ 53 + 1,
      int = 123456789012345, e14 = 1e14, below = 99999999999999, neg = -42, float = 2.0,
      small = 1e-7, third = 1 / 3, maxint = math.maxinteger, minint = math.mininteger,
      f = print, empty = {}, marked = util.array({}), sparse = { [1] = 1, [3] = 3 },
      sparse2 = { [1] = 1, [12] = 3 }, mixed = { 1, x = 2 }, fkey = { [1.5] = 2, [-1] = 3 },
      hidden = setmetatable({ a = 1 }, { __json = false }), holes = { 1, print, 3 },
      only_dropped = { print }, nested = { { {} } }, bool = true, no = false, null = cjson.null,
      deep = deep, [true] = "a boolean key", list = { "a", "b", { c = 1 } },
    }
    local text = assert_same_text(v)
    assert.truthy(utf8.len(text), text)
    assert_sorted_keys(text)
  end)

  it("writes \"<\" as \\u003c with the option script, and ends with the option suffix", function()
    local v = { html = "</script><!--", ["<k"] = 1 }
    local text = json.encode(v, { script = true, suffix = "\n" })
    assert.are.equal('{"\\u003ck":1,"html":"\\u003c/script>\\u003c!--"}\n', text)
    assert.are.same(v, cjson.decode(text))
    assert.are.equal(json.encode(v) .. "\n", json.format(v))
  end)
end)
