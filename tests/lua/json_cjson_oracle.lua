-- tests/lua/json_cjson_oracle.lua -- the JSON writer apsearch had before
-- core.json_encode (lua/apsearch/format/json.lua up to that change): a
-- sanitized copy of the value, encoded by lua-cjson in hash order.
-- json_encode_spec.lua checks the new writer's text against it, key
-- order aside.  Kept as it was; not used by apsearch.
local cjson_mod = require "cjson"
local util = require "apsearch.util"
local common = require "apsearch.format.common"

local M = {}

local cjson = cjson_mod.new()
cjson.encode_sparse_array(true)
cjson.encode_number_precision(14)
cjson.encode_invalid_numbers(false)

local EMPTY = "\0apsearch-empty-array\0"
local EMPTY_JSON = cjson.encode(EMPTY)

--- A string as valid UTF-8: each byte that does not start or continue a
-- valid sequence (utf8.len's strict rules: no surrogates, nothing above
-- U+10FFFF, no overlong forms) becomes U+FFFD.
-- @tparam string s
-- @treturn string
function M.valid_utf8(s)
  if utf8.len(s) then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local ok, bad = utf8.len(s, i)
    if ok then out[#out + 1] = s:sub(i) break end
    out[#out + 1] = s:sub(i, bad - 1)
    out[#out + 1] = "\u{FFFD}"
    i = bad + 1
  end
  return table.concat(out)
end

-- the valid-UTF-8 form of each string met in one encode (M.valid_utf8),
-- remembered: a result repeats its keys and names many thousand times
local function utf8_memo()
  return setmetatable({}, { __index = function(t, s)
    local v = M.valid_utf8(s)
    t[s] = v
    return v
  end })
end

-- M.valid_utf8 through the memo's interface, remembering nothing
local NO_MEMO = setmetatable({}, { __index = function(_, s) return M.valid_utf8(s) end })

-- A copy of v that cjson encodes as the module's header says (memo: a
-- utf8_memo() or NO_MEMO).
local function sanitize(v, depth, memo)
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return cjson.null end
    return v
  elseif t == "table" then
    if depth > 64 then return cjson.null end
    local mt = debug.getmetatable(v)
    if type(mt) == "table" and mt.__json == false then return nil end
    if next(v) == nil then
      if util.is_marked_array(v) then return EMPTY end
      return {}
    end
    local r = {}
    for k, x in pairs(v) do
      local kt = type(k)
      if kt == "string" or kt == "number" then
        local s = sanitize(x, depth + 1, memo)
        if s ~= nil then r[kt == "string" and memo[k] or k] = s end
      end
    end
    return r
  elseif t == "string" then
    return memo[v]
  elseif t == "boolean" then
    return v
  elseif v == cjson_mod.null or v == cjson.null then
    return cjson.null
  end
  return nil
end

local STRATEGY_PLACEHOLDERS = { "micro_batch_num", "recompute_num_layers",
  "stage_partition", "layer_offset" }

-- a table that is a strategy (a candidate or a top-k record)
local function is_strategy(t)
  return math.type(t.dp_degree) ~= nil and type(t.layer_recompute) == "string"
    and math.type(t.micro_batch_size) ~= nil
end

-- Spells the search space's placeholders in every strategy of an encoded
-- copy `s` (common.field_value; a moot field is `null`), using the
-- original `v` where the value needs the estimate (a top-k record's
-- resolved layout, common.resolved_layout).
local function spell_fields(s, v, gbs, lay)
  for _, f in ipairs(STRATEGY_PLACEHOLDERS) do
    local x = common.output_value(v, f, gbs, lay)
    if s[f] ~= nil or v[f] ~= nil then s[f] = x == nil and cjson.null or sanitize(x, 0, NO_MEMO) end
  end
end

local function spell(s, v, gbs, depth)
  if type(s) ~= "table" or type(v) ~= "table" or depth > 64 then return end
  if is_strategy(v) then
    spell_fields(s, v, gbs, (v.memory_cost and v.memory_cost.per_stage) and common.resolved_layout(v) or {})
  end
  -- an estimate (`apsearch estimate --format json`): its strategy as its
  -- stages ran it, the layers and recomputed layers of each, as a top-k
  -- record's (no "all" beside counts in one array)
  local est = type(v.strategy) == "table" and is_strategy(v.strategy) and type(v.stages) == "table"
    and #v.stages > 0 and type(s.strategy) == "table"
  if est then
    local rec = setmetatable({ memory_cost = { per_stage = v.stages } }, { __index = v.strategy })
    spell_fields(s.strategy, rec, gbs, common.resolved_layout(rec))
  end
  for k, x in pairs(v) do
    if type(x) == "table" and type(s[k]) == "table" and not (est and k == "strategy") then
      spell(s[k], x, gbs, depth + 1)
    end
  end
end

-- The search space as the policy gave it, placeholders spelt: a
-- micro_batch_num of 0 as "derived", a recompute_num_layers of -1 as "all".
local function spell_space(s)
  if type(s) ~= "table" then return end
  local function map(list, from, to)
    if type(list) ~= "table" then return list == from and to or list end
    for i, x in ipairs(list) do list[i] = map(x, from, to) end
    return list
  end
  if s.micro_batch_num ~= nil then s.micro_batch_num = map(s.micro_batch_num, 0, "derived") end
  if s.recompute_num_layers ~= nil then s.recompute_num_layers = map(s.recompute_num_layers, -1, "all") end
end

-- cjson's text with each "\\/" (an escaped slash) as "/": a literal
-- backslash is always encoded as a pair, so this is exact (a plain search:
-- gsub's pattern matcher took a fifth of a large result's encoding)
local function unescape_slashes(text)
  local at = text:find("\\/", 1, true)
  if not at then return text end
  local parts, n, from = {}, 0, 1
  while at do
    n = n + 1
    parts[n] = text:sub(from, at - 1)
    from = at + 1
    at = text:find("\\/", at + 2, true)
  end
  parts[n + 1] = text:sub(from)
  return table.concat(parts)
end

--- Encodes a value as JSON text (one line).
-- @param value a table of plain data (a search or estimate result)
-- @treturn string JSON
-- @raise if cjson cannot encode it (e.g. nesting deeper than 1000)
function M.encode(value)
  local s = sanitize(value, 0, utf8_memo())
  if type(value) == "table" and type(s) == "table" then
    local inputs = type(value.inputs) == "table" and value.inputs or {}
    local gbs = type(inputs.training) == "table" and inputs.training.global_batch_size or nil
    spell(s, value, gbs, 0)
    if type(s.inputs) == "table" then spell_space(s.inputs.search_space) end
  end
  if type(value) == "table" and type(s) == "table" and type(s.top_k_strategies) == "table" then
    for _, rec in ipairs(s.top_k_strategies) do
      if type(rec) == "table" and rec.filter_reason == nil then rec.filter_reason = cjson.null end
      if type(rec) == "table" and rec.objective_value == nil then rec.objective_value = cjson.null end
    end
  end
  -- cjson escapes "/" as "\/"; both are valid JSON, "/" reads better in paths
  local text = unescape_slashes(cjson.encode(s))
  if text:find(EMPTY_JSON, 1, true) then
    text = text:gsub(EMPTY_JSON:gsub("%p", "%%%0"), "[]")
  end
  return text
end

--- Formats a search result as JSON followed by a newline.
-- @tparam table result the result of apsearch.search.run
-- @treturn string
function M.format(result)
  return M.encode(result) .. "\n"
end

--- Decodes JSON text (for tests and tools).
-- @tparam string text
-- @return decoded value
-- @raise on invalid JSON
function M.decode(text)
  return cjson.decode(text)
end

return M
