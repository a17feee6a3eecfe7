--- `apsearch estimate --from RESULT --rank N`: the strategy of top-k rank
-- N of a result.json that `apsearch run --out DIR` (or `--format json`)
-- wrote, with the model, cluster and training its `inputs` recorded, so
-- the estimate is the one the search ranked (same step time and memory).
--
-- The result's strategy is read as the JSON writes it (apsearch.format.json):
-- the stage split and per-stage recompute as the stages ran them replace
-- `balance_stages` / `auto_recompute` (apsearch.search.strategy_of), moot
-- fields are `null`, "all" recomputed layers and a "derived" micro-batch
-- count are the search space's placeholders.
-- @module apsearch.from_result
local util = require "apsearch.util"
local schema = require "apsearch.schema"

local M = {}

--- The placeholders the JSON spells out (apsearch.format.common.field_value)
-- and the values the core reads for them.
M.PLACEHOLDERS = {
  recompute_num_layers = { all = -1 },
  micro_batch_num = { derived = 0 },
}

-- raises `--from: <path>: <problem>`
local function fail(path, problem)
  error(("--from: %s: %s"):format(path, problem), 0)
end

-- a decoded JSON value with JSON nulls removed and integral floats as
-- integers (cjson decodes every number as a float)
local function plain(v)
  local null = require("cjson").null
  if type(v) == "number" then return math.tointeger(v) or v end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    if x ~= null then out[k] = plain(x) end
  end
  return out
end

--- Reads a result.json (or DIR/result.json for an `--out` directory) and
-- checks it is a search result of this schema version.
-- @tparam string path
-- @treturn table the result (nulls removed, integers as integers)
-- @treturn string the file read
-- @raise `--from: <path>: <problem>`, one line
function M.load(path)
  path = require("apsearch.report.baseline").path(path, "--from")
  local text, err = util.read_file(path)
  if not text then fail(path, "cannot read the file (" .. tostring(err):gsub("^[^:]*: ", "") .. ")") end
  local ok, r = pcall(require("apsearch.format.json").decode, text)
  if not ok or type(r) ~= "table" then
    fail(path, "not JSON (" .. tostring(r):gsub("\n.*", ""):gsub("^[^:]*%.lua:%d+: ", "") .. "): give a run's " ..
      "result.json or its --out directory")
  end
  local version = require("apsearch.search").schema_version
  if r.schema_version == nil or type(r.top_k_strategies) ~= "table" or type(r.inputs) ~= "table" then
    fail(path, "not a result.json of apsearch run (no schema_version, inputs or top_k_strategies)")
  end
  if r.schema_version ~= version then
    fail(path, ("schema_version %s, not %d: a result of another apsearch version; run the search again")
      :format(util.describe(r.schema_version), version))
  end
  for _, part in ipairs({ "model", "cluster", "training" }) do
    local v = r.inputs[part]
    if v == nil then
      fail(path, "inputs." .. part .. " missing: not a result.json of apsearch run")
    elseif type(v) ~= "table" then
      -- a result records the resolved table, never a name or a path
      fail(path, ("inputs.%s: expected the resolved %s table a result records (got %s)"):format(
        part, part, util.describe(v)))
    end
  end
  return plain(r), path
end

-- Kinds whose values a record holds as written (the split, offsets and
-- recompute layers hold placeholders, read back by M.strategy and checked
-- with the strategy).
local SIMPLE = { posint = true, nonnegint = true, zero = true, bool = true, nonneg = true, string = true }

-- The strategy fields of a record, checked before anything reads them: a
-- hand-edited result.json (tp_degree = "2", -8, {}) is refused naming the
-- file, the record and the field, not by a comparison deep in the search.
local function check_fields(rec, path, i)
  for f, kind in pairs(schema.strategy) do
    local v = rec[f]
    if v ~= nil and (type(kind) == "table" or SIMPLE[kind]) and not (M.PLACEHOLDERS[f] and v ~= nil
        and M.PLACEHOLDERS[f][v] ~= nil) then
      schema.check_value(kind, v, function(problem, got)
        fail(path, ("top_k_strategies[%d].%s: %s (got %s)"):format(i - 1, f, problem, util.describe(got)))
      end)
    end
  end
  -- the step the record was ranked at, which estimate prints beside its own
  local pc = rec.performance_cost
  local step = type(pc) == "table" and pc.step_time
  if type(step) ~= "number" or step ~= step or step <= 0 or step == math.huge then
    local got = pc
    if type(pc) == "table" then got = pc.step_time end
    fail(path, ("top_k_strategies[%d].performance_cost.step_time: expected a positive number (got %s)"):format(
      i - 1, util.describe(got)))
  end
  return rec
end

--- The top-k record of rank `rank`.
-- @tparam table result from M.load
-- @param rank the --rank text or number
-- @tparam string path the file, for messages
-- @treturn table the record
-- @raise `--rank: <problem> (got <rank>)`, one line
function M.record(result, rank, path)
  local n = math.tointeger(util.decimal(rank))
  if not n or n < 1 then util.fail("--rank", "rank", "must be a positive integer", rank) end
  local ranks = {}
  for i, rec in ipairs(result.top_k_strategies) do
    if type(rec) == "table" and rec.rank == n then return check_fields(rec, path, i) end
    ranks[#ranks + 1] = type(rec) == "table" and rec.rank or "?"
  end
  local has = #ranks == 0 and "no top-k strategy (no feasible strategy)"
    or ("ranks " .. ranks[1] .. (#ranks > 1 and ("-" .. ranks[#ranks]) or ""))
  util.fail("--rank", "rank", ("not in %s, which has %s"):format(path, has), n)
end

--- The strategy of a top-k record as the core takes it: the strategy
-- fields (apsearch.schema.strategy) with the placeholders read back, the
-- resolved split and recompute replacing balance_stages / auto_recompute.
-- @tparam table rec a top-k record of M.load's result
-- @treturn table strategy
function M.strategy(rec)
  local read = {}
  for f in pairs(schema.strategy) do
    local v, names = rec[f], M.PLACEHOLDERS[f]
    if names and type(v) == "table" then
      local list = {}
      for i, x in ipairs(v) do list[i] = names[x] or x end
      v = list
    elseif names and v ~= nil then
      v = names[v] or v
    end
    read[f] = v
  end
  local s = require("apsearch.search").strategy_of(read)
  -- the recorded split is the one estimated, its offset moot
  if type(s.stage_partition) == "table" then s.layer_offset = nil end
  return s
end

--- The policy an estimate of the result runs with: its recorded model,
-- cluster and training (the core's normalized inputs, calibration and
-- stack applied), and what its `inputs` say of the policy.
-- @tparam table result from M.load
-- @tparam string path the file read
-- @treturn table `{file, model, cluster, training, overrides, stack, calibration, from_policy}`
-- A result written before a device field existed records no value for
-- it, and a device table without `base` must set every field: the preset
-- the recorded device is named after supplies what is missing, said in a
-- note (the estimate then is this version's, not the one ranked).
local function fill_device(cluster, path)
  local d = cluster.device
  if type(d) ~= "table" then return end
  local core = require "apsearch.core"
  local ok, preset = pcall(core.device_preset, type(d.name) == "string" and d.name or "")
  if not ok or type(preset) ~= "table" then
    -- no preset of that name (a device table of the user's own): say which
    -- field the file lacks, not what a policy's table must set
    local missing = {}
    for f in pairs(core.device_preset("h100-sxm-80gb")) do
      if d[f] == nil then missing[#missing + 1] = f end
    end
    if #missing == 0 then return end
    table.sort(missing)
    fail(path, ("inputs.cluster.device.%s: missing (an earlier apsearch wrote this result) and its device %s is no " ..
      "preset to take it from: run the search again, or add the field to the file"):format(missing[1],
      util.describe(d.name)))
  end
  local filled = {}
  for f, v in pairs(preset) do
    if d[f] == nil then d[f], filled[#filled + 1] = v, f end
  end
  if #filled == 0 then return end
  table.sort(filled)
  util.log("apsearch: note: %s records no cluster.device.%s (an earlier apsearch wrote it): the %s preset's "
    .. "value taken", path, table.concat(filled, ", "), d.name)
end

--- Fields every result records (a resolved model, cluster and training
-- always have them): one absent is a hand-edited or truncated file, said
-- as missing rather than as its 0 default out of range.
M.REQUIRED = {
  model = { "num_layers", "hidden_size", "num_attention_heads", "vocab_size" },
  cluster = { "num_devices", "devices_per_node" },
  training = { "seq_length", "global_batch_size" },
}

function M.policy(result, path)
  local inp = result.inputs
  for _, part in ipairs({ "model", "cluster", "training" }) do
    for _, f in ipairs(M.REQUIRED[part]) do
      if inp[part][f] == nil then
        fail(path, ("inputs.%s.%s: missing (every result of apsearch run records it)"):format(part, f))
      end
    end
  end
  -- the stack names the efficiency profile the estimate takes: a name
  -- the tables know, as `--set training.stack` must give
  local stacks = require "apsearch.stacks"
  if inp.stack ~= nil and not (type(inp.stack) == "string" and stacks.stack(inp.stack)) then
    fail(path, ("inputs.stack: expected a known stack name (%s) (got %s)"):format(table.concat(stacks.ids(), ", "),
      util.describe(inp.stack)))
  end
  fill_device(inp.cluster, path)
  return {
    file = "--from: " .. path .. ": inputs", model = inp.model, cluster = inp.cluster,
    training = inp.training, overrides = inp.overrides or util.array(), stack = inp.stack,
    calibration = inp.calibration, from_policy = inp.policy,
    -- a bad value is the file's, not the recorded --set's (search.context)
    inputs_recorded = true,
  }
end

return M
