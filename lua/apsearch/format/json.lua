--- JSON view of a search result (or any result table).
--
-- * Non-finite numbers (inf, nan) become `null`: JSON has no spelling for
--   them and cjson refuses them.
-- * Tables marked with `apsearch.util.array_mt` stay arrays when empty
--   (`[]`, where cjson would write `{}`); other empty tables are objects.
-- * Sparse arrays are written as objects instead of raising
--   (`encode_sparse_array(true)`).
-- * Every strategy (top-k records, Pareto points, examples, closest
--   infeasible, trends) has the search space's placeholders spelt out
--   (format.common.field_value: `micro_batch_num` 0 as the derived count,
--   `recompute_num_layers` -1 as "all", moot fields `null`); a top-k
--   record's `stage_partition` and `recompute_num_layers` are the layers
--   each stage ran and recomputed (format.common.resolved_layout), and so
--   are an estimate's (`estimate.strategy`, from `estimate.stages`).  The
--   `inputs.search_space` lists read "derived" and "all" for them.
-- * `filter_reason` of each top-k strategy, nil in Lua, is written `null`
--   so that the field is present.
-- * Functions and userdata are dropped, and so are tables whose metatable
--   has `__json = false` (the compact per-candidate record
--   `result.candidates`; it is written as candidates.csv instead).
-- * Strings (values and keys) that are not valid UTF-8 (a CSV cell, a
--   model name, a policy string in Latin-1 or cut mid-character) have each
--   byte that is not part of a valid UTF-8 sequence replaced by U+FFFD,
--   the replacement character, so that the output is always valid UTF-8
--   and valid JSON (cjson passes such bytes through as they are); valid
--   text, including non-ASCII, is written unchanged.
-- * Every object's keys are in byte order, so two runs write the same
--   bytes (cjson wrote them in hash order, which changed from run to run).
-- Numbers keep 14 significant digits (cjson's maximum), so integer byte and
-- parameter counts below 10^14 are exact.  The text is written by the C
-- core in one pass over the tables (apsearch.core.json_encode, which reads
-- tables raw: no __index or __pairs); lua-cjson decodes.
-- @module apsearch.format.json
local cjson = require "cjson"
local core = require "apsearch.core"
local common = require "apsearch.format.common"

local M = {}

local STRATEGY_PLACEHOLDERS = { "micro_batch_num", "recompute_num_layers",
  "stage_partition", "layer_offset" }

-- a table that is a strategy (a candidate or a top-k record)
local function is_strategy(t)
  return math.type(t.dp_degree) ~= nil and type(t.layer_recompute) == "string"
    and math.type(t.micro_batch_size) ~= nil
end

-- the fields written in place of table t's own (core.json_encode's overlay)
local function fields_of(overlay, t)
  local f = overlay[t]
  if not f then
    f = {}
    overlay[t] = f
  end
  return f
end

-- a table the encoder writes (not one left out with `__json = false`)
local function written(t)
  local mt = debug.getmetatable(t)
  return not (type(mt) == "table" and rawget(mt, "__json") == false)
end

-- Spells the search space's placeholders of strategy `t` into the overlay
-- (common.field_value; a moot field is `null`), reading them from `v` (t,
-- or a view of it that carries the estimate a top-k record's resolved
-- layout needs, common.resolved_layout).
local function spell_fields(overlay, t, v, gbs, lay)
  for _, f in ipairs(STRATEGY_PLACEHOLDERS) do
    if v[f] ~= nil then
      local x = common.output_value(v, f, gbs, lay)
      fields_of(overlay, t)[f] = x == nil and cjson.null or x
    end
  end
end

-- The encoder's `spell` option (core.json_encode): called with each table
-- that may be a strategy or an estimate, it spells the placeholders of a
-- strategy, and of an estimate's strategy as its stages ran it, into the
-- overlay (each table once).
local function speller(overlay, gbs)
  local done = {}
  return function(v)
    if done[v] then return end
    done[v] = true
    if is_strategy(v) then
      spell_fields(overlay, v, v, gbs, (v.memory_cost and v.memory_cost.per_stage) and common.resolved_layout(v) or {})
    end
    -- an estimate (`apsearch estimate --format json`): its strategy as its
    -- stages ran it, the layers and recomputed layers of each, as a top-k
    -- record's (no "all" beside counts in one array)
    if type(v.strategy) == "table" and is_strategy(v.strategy) and type(v.stages) == "table"
        and #v.stages > 0 and written(v.strategy) then
      local rec = setmetatable({ memory_cost = { per_stage = v.stages } }, { __index = v.strategy })
      done[v.strategy] = true
      spell_fields(overlay, v.strategy, rec, gbs, common.resolved_layout(rec))
    end
  end
end

-- The search space as the policy gave it, placeholders spelt: a
-- micro_batch_num of 0 as "derived", a recompute_num_layers of -1 as "all".
local function spell_space(overlay, s)
  if type(s) ~= "table" then return end
  local function map(list, from, to)
    if type(list) ~= "table" then return list == from and to or list end
    local copy = {}
    for i, x in ipairs(list) do copy[i] = map(x, from, to) end
    return setmetatable(copy, debug.getmetatable(list))
  end
  if s.micro_batch_num ~= nil then fields_of(overlay, s).micro_batch_num = map(s.micro_batch_num, 0, "derived") end
  if s.recompute_num_layers ~= nil then
    fields_of(overlay, s).recompute_num_layers = map(s.recompute_num_layers, -1, "all")
  end
end

--- Encodes a value as JSON text (one line), as the module's header says.
-- @param value a table of plain data (a search or estimate result)
-- @tparam[opt] table opts `script` (true: "<" written `\u003c`, so that
--   the text can stand in an HTML `<script>` element: "</script>" and
--   "<!--" cannot occur in it), `suffix` (a string the text ends with)
-- @treturn string JSON
function M.encode(value, opts)
  local overlay, copts = {}, { script = opts and opts.script, suffix = opts and opts.suffix }
  if type(value) == "table" then
    local inputs = type(value.inputs) == "table" and value.inputs or {}
    local gbs = type(inputs.training) == "table" and inputs.training.global_batch_size or nil
    copts.spell = speller(overlay, gbs)
    if type(value.inputs) == "table" then spell_space(overlay, value.inputs.search_space) end
    if type(value.top_k_strategies) == "table" then
      for _, rec in ipairs(value.top_k_strategies) do
        if type(rec) == "table" then
          if rec.filter_reason == nil then fields_of(overlay, rec).filter_reason = cjson.null end
          if rec.objective_value == nil then fields_of(overlay, rec).objective_value = cjson.null end
        end
      end
    end
  end
  return core.json_encode(value, overlay, copts)
end

--- Formats a search result as JSON followed by a newline.
-- @tparam table result the result of apsearch.search.run
-- @treturn string
function M.format(result)
  return M.encode(result, { suffix = "\n" })
end

--- Decodes JSON text (for tests and tools).
-- @tparam string text
-- @return decoded value
-- @raise on invalid JSON
function M.decode(text)
  return cjson.decode(text)
end

return M
