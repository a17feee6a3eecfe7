--- Helpers shared by the busted specs: files, temporary directories, and
-- running the built `apsearch` binary.  The specs find the repo root in
-- APS_ROOT and the binary in APS_BIN (CTest sets both).
local assert = require "luassert"

local M = {}

M.ROOT = os.getenv("APS_ROOT") or "."
M.BIN = os.getenv("APS_BIN")

--- Quotes a string for the shell.
function M.q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- Contents of a file, or nil.
function M.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

--- Writes text to path (mode "w" unless given) and returns the path.
function M.write(path, text, mode)
  local f = assert(io.open(path, mode or "w"))
  f:write(text)
  f:close()
  return path
end

-- directories made by M.tmpdir, removed when the Lua state closes (busted
-- exits with os.exit(code, true)), so test runs leave nothing in /tmp
local made = {}
M._cleanup = setmetatable({}, { __gc = function()
  for _, d in ipairs(made) do os.execute("rm -rf " .. M.q(d)) end
end })

--- A fresh empty directory, removed when the test process ends.
function M.tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. M.q(dir)))
  made[#made + 1] = dir
  return dir
end

--- Runs the binary from the repo root; returns exit code, stdout, stderr.
function M.apsearch(...)
  local args = {}
  for i, a in ipairs({ ... }) do args[i] = M.q(a) end
  local dir = M.tmpdir()
  local cmd = string.format("cd %s && APSEARCH_ROOT=%s %s %s > %s/out 2> %s/err",
    M.q(M.ROOT), M.q(M.ROOT), M.q(M.BIN), table.concat(args, " "), dir, dir)
  local _, _, code = os.execute(cmd)
  local out, err = M.read(dir .. "/out") or "", M.read(dir .. "/err") or ""
  os.execute("rm -rf " .. M.q(dir))
  return code, out, err
end

--- The decoded JSON of a file (fails the spec if it cannot be read).
function M.read_json(path)
  local text = assert(M.read(path), "cannot read " .. path)
  return require("cjson").decode(text)
end

--- The entries of an array keyed by their `case_id` (validate's cases,
-- a cases file's rows).
function M.by_id(list)
  local by = {}
  for _, x in ipairs(list) do by[x.case_id] = x end
  return by
end

--- An example model config (examples/models/NAME.json) as apsearch.hf
-- reads it (the model table, or an error).
function M.example_model(name)
  return require("apsearch.hf").load(M.ROOT .. "/examples/models/" .. name .. ".json")
end

--- An example model config (examples/models/NAME.json) as decoded JSON.
function M.example_config(name)
  return M.read_json(M.ROOT .. "/examples/models/" .. name .. ".json")
end

--- Asserts that every flag of a Megatron launch script's MEGATRON_ARGS is
-- one of Megatron-LM's at the commit apsearch.launch.options records, and
-- that the valued ones are within its facts (an int at least its minimum,
-- an enum one of its values).
-- @tparam string sh the script's text
function M.assert_megatron_flags(sh)
  local options = require "apsearch.launch.options"
  local block = assert(sh:match("MEGATRON_ARGS=%((.-)\n%)"), sh)
  for flag, val in block:gmatch("\n  (%-%-[%w%-]+) ?([^\n]*)") do
    assert(options.megatron.options[flag], "not a Megatron-LM flag: " .. flag)
    local fact = options.megatron.facts[flag]
    if fact and fact.type == "int" then assert(tonumber(val) >= (fact.min or 1), flag .. " " .. val) end
    if fact and fact.values then
      -- nargs "+": each of the values one of the choices
      local vals = { val }
      if fact.nargs == "+" then
        vals = {}
        for one in val:gmatch("[^ ]+") do vals[#vals + 1] = one end
      end
      for _, one in ipairs(vals) do assert(fact.values[one] == true, flag .. " " .. val) end
    end
  end
end

--- Whether an exact parameter count is within `tol` (a fraction) of a
-- model card's rounded total.
-- @tparam number total the exact count
-- @tparam number published the card's total (4.19e9 for "4.19B")
-- @tparam number tol M.CARD_ROUNDING or M.CARD_ROUNDING_2
-- @treturn boolean
function M.near_card(total, published, tol)
  return math.abs(total / published - 1) < tol
end

--- How far a card's total given to three digits ("4.19B") may be from the
-- exact count, as a fraction: half a unit of the third digit is at most
-- 0.5 % of the total (1.00 to 9.99: 0.005 / 1.00).
M.CARD_ROUNDING = 0.005

--- The same for a total given to two digits ("35B"): half a unit of the
-- second digit is at most 5 % of the total (10 to 99: 0.5 / 10).
M.CARD_ROUNDING_2 = 0.05

--- A shallow copy of a table (a config to change in one test).
-- @tparam table t
-- @treturn table
--- True for a finite number (not NaN, not +-inf).
function M.finite(x) return type(x) == "number" and x == x and x > -math.huge and x < math.huge end

local validated = {}
--- `apsearch.validate.run(path)`, once per path for the whole test run
-- (the held-out specs read their set in several tests).
-- @tparam string path cases CSV
-- @treturn table validate.run's result
function M.validated(path)
  validated[path] = validated[path] or require("apsearch.validate").run(path)
  return validated[path]
end

--- Asserts that a held-out cases file has n rows, every one read and
-- estimated (none refused) with a finite, positive throughput and a
-- finite error (no accuracy figure: held-out sets report theirs in
-- docs/accuracy.md).
-- @tparam string path the cases file
-- @tparam integer n its rows
-- @treturn table the validate result (M.validated)
function M.assert_all_estimated(path, n)
  local r = M.validated(path)
  assert.are.equal(n, r.summary.cases)
  assert.are.equal(0, r.summary.failed)
  assert.are.equal(n, r.summary.throughput.count)
  for _, c in ipairs(r.cases) do
    assert.is_nil(c.error, c.case_id)
    local tps = c.predicted.tokens_per_s_per_gpu
    assert.is_true(M.finite(tps) and tps > 0, c.case_id)
    assert.is_true(M.finite(c.error_pct.tokens_per_s_per_gpu), c.case_id)
  end
  return r
end

function M.copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

--- A copy of config `base` with the keys of `extra` set over it.
function M.with(base, extra)
  local c = M.copy(base)
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

--- The message of the error f(...) raises (fails the spec if none).
function M.err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

--- Model FLOPs per step (estimate.model_flops_per_step) of model table m
-- on `nodes` hosts of 8 H100s, Megatron, `batch` sequences of 4,096
-- tokens, under strategy s (fails the spec if the strategy is refused).
function M.model_flops(m, nodes, batch, s)
  local policy, search = require "apsearch.policy", require "apsearch.search"
  local p = policy.from_table({ model = m, cluster = { device = "h100-sxm-80gb", nodes = nodes,
    devices_per_node = 8 }, training = { global_batch_size = batch, seq_length = 4096, framework = "megatron" },
    top_k = 1 }, M.ROOT .. "/examples/x.lua")
  local est = search.context(p):estimate(s)
  assert.is_true(est.model_flops_per_step > 0, tostring(est.reason))
  return est.model_flops_per_step
end

--- An error message without its suggestion parts (apsearch.suggest):
-- `; did you mean "x"?` and ` (known: ...)` removed, for specs that check
-- the rest of a message exactly.
function M.plain(msg)
  return (tostring(msg):gsub('; did you mean [^?]*%?', ''):gsub(' %(known: [^)]*%)', ''))
end

return M
