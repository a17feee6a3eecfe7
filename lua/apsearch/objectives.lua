--- Ranking objectives for the search.
--
-- An objective is a comparator `better(a, b) -> boolean`: true when `a`
-- ranks before `b`.  `a` and `b` are evaluation entries: the table
-- `ctx:evaluate()` returned (step_time s, mem_peak bytes,
-- tokens_per_s_per_gpu, mfu, micro_batch_num, worst_stage, ...) plus
-- `strategy` (the candidate) and `index` (its position in the enumeration).
-- Equal entries keep enumeration order, so every ranking is deterministic.
--
-- Built-in objectives (the `objective` field of a policy, or
-- `--set objective=NAME`):
--
-- * `step_time` (default): estimated step time ascending, ties by peak memory;
--   a strategy flagged near capacity (peak above
--   search.near_capacity_fraction of device memory) ranks as if
--   M.NEAR_CAPACITY_TIE slower, so one below the line that is at most that
--   much slower ranks first.
-- * `memory`: peak memory per device ascending, ties by step time.
-- * `throughput`: tokens/s per GPU descending, ties by peak memory; near
--   capacity as for `step_time` (as if that much less throughput).
-- * `composite`: a weighted score, lower first:
--
--       score = w_step * ln(step_time) + w_memory * ln(mem_peak)
--               - w_throughput * ln(tokens_per_s_per_gpu)
--
--   Logarithms make the score unit-free: only ratios count, so with the
--   default weights (step_time = 1, memory = 0.25, throughput = 0) a
--   strategy that is 1 % slower ranks first when it needs more than 4 %
--   less memory.  Ties by step time.  Weights are set in the name:
--   `objective = "composite(step_time=1, memory=0.5)"` in a policy, or
--   `--set 'objective=composite(step_time=1;memory=0.5)'` on the command
--   line (`;` or spaces between weights there, since a comma splits a
--   `--set` value into a list).  Unnamed weights are 0 once any is given;
--   weights are finite and >= 0, at least one > 0.
-- * `pareto`: the Pareto front of (peak memory, step time) over every
--   feasible candidate -- no other candidate is at least as good on both
--   and better on one -- ranked by step time within the front.  When the
--   front has fewer than top_k strategies the next front (the front of
--   the candidates left once the first is removed) follows, and so on, so
--   the top-k is front 1 by step time, then front 2 by step time, ...
--   Each top-k record carries `pareto_front` (1, 2, ...).
--
-- A user objective is a `function(a, b) -> boolean` in the policy.
-- @module apsearch.objectives
local M = {}

local util = require "apsearch.util"

local log = math.log
local huge = math.huge

local builtin = {}

--- How much slower a strategy flagged near capacity ranks than its
-- estimate, under the `step_time` and `throughput` objectives (a ranking
-- choice, not a physical constant; the step time shown is the estimate):
-- 1 %.  Two estimates 1 % apart are the same within every interval the
-- validation gives (80 % of measured runs land within x0.84-1.19 and
-- wider), while the flagged one risks the allocator's retries (the
-- MPT-30B runs at 0.92-0.93 of memory ran 28-39 % slower than estimated)
-- or running out of memory (peak memory lands within x0.86-1.16).  Set 0
-- to rank by the estimate alone.
M.NEAR_CAPACITY_TIE = 0.01

-- the factor on a's step time: 1 + tie above `near` bytes of peak
local function risk(a, near, tie)
  return a.mem_peak > near and 1 + tie or 1
end

builtin.step_time = function(a, b, near, tie)
  local x, y = a.step_time, b.step_time
  if near then x, y = x * risk(a, near, tie), y * risk(b, near, tie) end
  if x ~= y then return x < y end
  x, y = a.mem_peak, b.mem_peak
  if x ~= y then return x < y end
  return a.index < b.index
end

builtin.memory = function(a, b)
  local x, y = a.mem_peak, b.mem_peak
  if x ~= y then return x < y end
  x, y = a.step_time, b.step_time
  if x ~= y then return x < y end
  return a.index < b.index
end

builtin.throughput = function(a, b, near, tie)
  local x, y = a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu
  if near then x, y = x / risk(a, near, tie), y / risk(b, near, tie) end
  if x ~= y then return x > y end
  x, y = a.mem_peak, b.mem_peak
  if x ~= y then return x < y end
  return a.index < b.index
end

-- the pareto objective ranks by step time inside a front (search.lua
-- builds the fronts; memory is its other axis, so no near-capacity
-- factor); the comparator orders the heap it does not use
builtin.pareto = builtin.step_time

-- the built-ins that take the near-capacity factor
local RISK_AWARE = { step_time = true, throughput = true }

--- Names of the built-in objectives.
M.names = { "step_time", "memory", "throughput", "composite", "pareto" }

--- Default weights of the composite objective.
M.composite_defaults = { step_time = 1, memory = 0.25, throughput = 0 }

local WEIGHT_NAMES = { "step_time", "memory", "throughput" }

local function weight_error(spec, problem)
  error(string.format("objective: %s (got %q); expected composite(step_time=W, memory=W, throughput=W)",
    problem, tostring(spec)), 0)
end

--- Parses a composite objective name.
-- @tparam string spec `"composite"` or `"composite(step_time=1, memory=0.25)"`
--   (weights separated by commas, semicolons or spaces)
-- @treturn table|nil weights `{step_time, memory, throughput}`; nil when
--   spec is not a composite name
-- @raise `objective: <problem> (got "...")` on a malformed weight list
function M.parse_composite(spec)
  if type(spec) ~= "string" then return nil end
  if spec == "composite" then
    local w = {}
    for k, v in pairs(M.composite_defaults) do w[k] = v end
    return w
  end
  local body = spec:match("^composite%s*%((.*)%)%s*$")
  if not body then
    if spec:match("^composite") then weight_error(spec, "malformed composite objective") end
    return nil
  end
  local w = { step_time = 0, memory = 0, throughput = 0 }
  local any = false
  for item in body:gmatch("[^,;%s]+") do
    local k, v = item:match("^([%w_]+)=(.+)$")
    if not k then weight_error(spec, "expected NAME=WEIGHT, not " .. string.format("%q", item)) end
    if w[k] == nil then
      weight_error(spec, require("apsearch.suggest").unknown("unknown weight " .. string.format("%q", k), k,
        { "step_time", "memory", "throughput" }))
    end
    local n = util.decimal(v)
    if not n or n ~= n or n < 0 or n == huge then
      weight_error(spec, "weight " .. k .. " must be a finite number >= 0")
    end
    w[k] = n
    any = true
  end
  if not any then weight_error(spec, "no weight given") end
  local sum = 0
  for _, k in ipairs(WEIGHT_NAMES) do sum = sum + w[k] end
  if sum <= 0 then weight_error(spec, "at least one weight must be > 0") end
  return w
end

--- The composite score of an evaluation (lower is better).
-- @tparam table w weights
-- @tparam table e evaluation entry (step_time, mem_peak, tokens_per_s_per_gpu)
-- @treturn number score
function M.composite_score(w, e)
  local s = 0
  if w.step_time ~= 0 then s = s + w.step_time * log(e.step_time) end
  if w.memory ~= 0 then s = s + w.memory * log(e.mem_peak) end
  if w.throughput ~= 0 then s = s - w.throughput * log(e.tokens_per_s_per_gpu) end
  return s
end

local function composite(w)
  local ws, wm, wt = w.step_time, w.memory, w.throughput
  local function score(e)
    local s = 0
    if ws ~= 0 then s = s + ws * log(e.step_time) end
    if wm ~= 0 then s = s + wm * log(e.mem_peak) end
    if wt ~= 0 then s = s - wt * log(e.tokens_per_s_per_gpu) end
    return s
  end
  return function(a, b)
    local x, y = score(a), score(b)
    if x ~= y then return x < y end
    x, y = a.step_time, b.step_time
    if x ~= y then return x < y end
    return a.index < b.index
  end
end

local function canonical_composite(w)
  return string.format("composite(step_time=%s, memory=%s, throughput=%s)",
    tostring(w.step_time), tostring(w.memory), tostring(w.throughput))
end

--- Resolves an objective.
-- @tparam string|function objective a built-in name (composite with its
--   weights), or a user comparator `function(a, b) -> boolean` (true when
--   a ranks before b)
-- @tparam[opt] number near_capacity_bytes the peak (bytes) above which a
--   strategy is flagged near capacity (search.near_capacity_fraction x
--   device memory): `step_time` and `throughput` then rank it
--   M.NEAR_CAPACITY_TIE worse; nil: by the estimate alone
-- @treturn function comparator; a user comparator is wrapped so that ties
--   (neither a before b nor b before a) fall back to enumeration order
-- @treturn string the objective's name ("custom" for a function; a
--   composite objective with its weights spelled out)
-- @treturn table info: `{kind = "comparator"|"composite"|"pareto",
--   weights = {...} (composite)}`
-- @raise `objective: unknown objective (got "x"); known: ...`
function M.get(objective, near_capacity_bytes)
  if objective == nil then objective = "step_time" end
  -- a user objective from a file or table (apsearch.rules.objective_comparator
  -- made `better`, run in the sandbox): ranked like a comparator, by name
  local uname = "custom"
  if type(objective) == "table" and type(objective.better) == "function" then
    uname = objective.name or uname
    objective = objective.better
  end
  if type(objective) == "function" then
    local user = objective
    return function(a, b)
      if user(a, b) then return true end
      if user(b, a) then return false end
      return a.index < b.index
    end, uname, { kind = "comparator" }
  end
  local w = M.parse_composite(objective)
  if w then
    return composite(w), canonical_composite(w), { kind = "composite", weights = w }
  end
  local f = builtin[objective]
  if not f then
    error(string.format("objective: unknown objective %q (known: %s, or a function(a, b))",
      tostring(objective), table.concat(M.names, ", ")), 0)
  end
  local kind = objective == "pareto" and "pareto" or "comparator"
  local near, tie = near_capacity_bytes, M.NEAR_CAPACITY_TIE
  if RISK_AWARE[objective] and near and tie > 0 then
    return function(a, b) return f(a, b, near, tie) end, objective, { kind = kind }
  end
  return f, objective, { kind = kind }
end

--- True if `name` is a built-in objective (a composite name with weights
-- counts when its weights parse).
-- @tparam string name
-- @treturn boolean
function M.is_builtin(name)
  if builtin[name] ~= nil then return true end
  local ok, w = pcall(M.parse_composite, name)
  return ok and w ~= nil
end

return M
