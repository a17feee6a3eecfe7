--- Ranking objectives for the search.
--
-- An objective is a comparator `better(a, b) -> boolean`: true when `a`
-- ranks before `b`.  `a` and `b` are evaluation entries: the table
-- `ctx:evaluate()` returned (step_time s, mem_peak bytes,
-- tokens_per_s_per_gpu, mfu, micro_batch_num, worst_stage, ...) plus
-- `strategy` (the candidate) and `index` (its position in the enumeration).
-- Equal entries keep enumeration order, so every ranking is deterministic.
--
-- Built-in objectives:
--
-- * `step_time` (default): estimated step time ascending, ties by peak memory.
-- * `memory`: peak memory per device ascending, ties by step time.
-- * `throughput`: tokens/s per GPU descending, ties by peak memory.
-- @module apsearch.objectives
local M = {}

local builtin = {}

builtin.step_time = function(a, b)
  local x, y = a.step_time, b.step_time
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

builtin.throughput = function(a, b)
  local x, y = a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu
  if x ~= y then return x > y end
  x, y = a.mem_peak, b.mem_peak
  if x ~= y then return x < y end
  return a.index < b.index
end

--- Names of the built-in objectives.
M.names = { "step_time", "memory", "throughput" }

--- Resolves an objective.
-- @tparam string|function objective a built-in name, or a user comparator
--   `function(a, b) -> boolean` (true when a ranks before b)
-- @treturn function comparator; a user comparator is wrapped so that ties
--   (neither a before b nor b before a) fall back to enumeration order
-- @treturn string the objective's name ("custom" for a function)
-- @raise `objective: unknown objective (got "x"); known: ...`
function M.get(objective)
  if objective == nil then objective = "step_time" end
  if type(objective) == "function" then
    local user = objective
    return function(a, b)
      if user(a, b) then return true end
      if user(b, a) then return false end
      return a.index < b.index
    end, "custom"
  end
  local f = builtin[objective]
  if not f then
    error(string.format("objective: unknown objective %q (known: %s, or a function(a, b))",
      tostring(objective), table.concat(M.names, ", ")), 0)
  end
  return f, objective
end

--- True if `name` is a built-in objective.
-- @tparam string name
-- @treturn boolean
function M.is_builtin(name)
  return builtin[name] ~= nil
end

return M
