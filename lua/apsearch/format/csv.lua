--- CSV views of a search result (RFC 4180 quoting).  Units are in the
-- column names (`_s`, `_bytes`, `_gib`); array fields (stage_partition,
-- ...) are joined with `;`.
--
-- * `format(result)`: a header and one row per top-k strategy.  Memory
--   columns are the worst stage's breakdown; time columns are the exposed
--   (critical-path) seconds of each category.
-- * `candidates(result)`: every candidate the search generated, in
--   enumeration order: feasible, infeasible after the estimate, and
--   filtered early, each with its reason code (the candidates.csv of
--   `apsearch run --out`).
-- @module apsearch.format.csv
local common = require "apsearch.format.common"

local M = {}

local STRATEGY = { "dp_degree", "fsdp_degree", "zero_stage",
  "reshard_after_forward", "tp_degree", "sequence_parallel", "pp_degree",
  "vpp_degree", "pipeline_split", "cp_degree", "cp_comm_type",
  "micro_batch_size", "micro_batch_num", "layer_recompute",
  "recompute_method", "recompute_num_layers", "stage_partition",
  "layer_offset" }

local function cell(v)
  if v == nil then return "" end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = tostring(x) end
    v = table.concat(parts, ";")
  elseif type(v) == "number" then
    if math.type(v) == "integer" then v = tostring(v)
    elseif v == math.floor(v) and math.abs(v) < 1e15 then v = string.format("%.0f", v)
    else v = string.format("%.12g", v) end
  else
    v = tostring(v)
  end
  if v:find('[,"\r\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
  return v
end

-- the cell of a strategy field, placeholders spelt out: recompute_num_layers
-- -1 ("every layer of the stage") as "all", micro_batch_num 0 ("derived
-- from the global batch") as the derived count, gbs / (mbs x dp x fsdp)
local function strategy_cell(s, f, gbs)
  local v = s[f]
  if f == "recompute_num_layers" then
    if v == -1 then return "all" end
    if type(v) == "table" then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = x == -1 and "all" or tostring(x) end
      return cell(table.concat(parts, ";"))
    end
  elseif f == "micro_batch_num" and v == 0 then
    local ranks = (s.micro_batch_size or 1) * (s.dp_degree or 1) * (s.fsdp_degree or 1)
    if gbs and ranks > 0 and gbs % ranks == 0 then return cell(gbs // ranks) end
    return "derived"
  end
  return cell(v)
end

--- Column names, in order.
-- @treturn table array of strings
function M.columns()
  local cols = { "rank" }
  for _, f in ipairs(STRATEGY) do cols[#cols + 1] = f end
  for _, c in ipairs({ "objective_value", "step_time_s", "step_time_lo_s", "step_time_hi_s", "tokens_per_s",
    "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hfu", "mem_peak_bytes",
    "mem_peak_gib", "mem_peak_lo_gib", "mem_peak_hi_gib", "mem_limit_bytes" }) do
    cols[#cols + 1] = c
  end
  for _, c in ipairs(common.memory_categories) do
    if c == "comm_buffers" then
      for _, s in ipairs(common.comm_categories) do cols[#cols + 1] = "mem_comm_" .. s .. "_bytes" end
    else
      cols[#cols + 1] = "mem_" .. c .. "_bytes"
    end
  end
  for _, c in ipairs(common.time_categories) do cols[#cols + 1] = "time_" .. c .. "_s" end
  return cols
end

--- Formats a search result as CSV.
-- @tparam table result the result of apsearch.search.run
-- @treturn string CSV text, lines ending in "\n"
function M.format(result)
  local lines = { table.concat(M.columns(), ",") }
  for _, r in ipairs(result.top_k_strategies or {}) do
    local mc, pc = r.memory_cost or {}, r.performance_cost or {}
    local row = { cell(r.rank) }
    for _, f in ipairs(STRATEGY) do row[#row + 1] = strategy_cell(r, f, nil) end
    row[#row + 1] = cell(r.objective_value)
    local si, mi = pc.step_time_interval or {}, mc.total_interval or {}
    -- (an interval may be absent: nil cells, so a counted loop)
    local vals = { pc.step_time, si.lo, si.hi, pc.tokens_per_s, pc.tokens_per_s_per_gpu,
      pc.model_tflops_per_gpu, pc.mfu, pc.hfu, mc.total, common.gib(mc.total),
      mi.lo and common.gib(mi.lo), mi.hi and common.gib(mi.hi), mc.limit }
    for i = 1, 13 do row[#row + 1] = cell(vals[i]) end
    local bd = mc.breakdown or {}
    for _, c in ipairs(common.memory_categories) do
      if c == "comm_buffers" then
        local cb = bd.comm_buffers or {}
        for _, s in ipairs(common.comm_categories) do row[#row + 1] = cell(cb[s]) end
      else
        row[#row + 1] = cell(bd[c])
      end
    end
    for _, c in ipairs(common.time_categories) do
      row[#row + 1] = cell(common.time_value(pc.breakdown, c))
    end
    lines[#lines + 1] = table.concat(row, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

--- Column names of the all-candidates CSV, in order.
-- `index` is the enumeration position (1-based); `status` is `feasible`,
-- `infeasible` (estimated, over a limit) or `filtered` (failed a cheap
-- check, never estimated); `phase` is `early` or `estimate` (empty when
-- feasible); `reason` the filter reason code; `rank` the top-k rank (empty
-- outside the top-k); `step_time_s` and `mem_peak_bytes` are the core's
-- estimate (empty when filtered); `micro_batch_num` is the count derived
-- from the global batch (gbs / (mbs x dp x fsdp)) where the candidate left
-- it to the search, `recompute_num_layers` "all" where every layer of a
-- stage is recomputed.
-- @treturn table array of strings
function M.candidate_columns()
  local cols = { "index", "status", "phase", "reason", "rank", "step_time_s",
    "mem_peak_bytes", "mem_peak_gib" }
  for _, f in ipairs(STRATEGY) do cols[#cols + 1] = f end
  return cols
end

--- Formats every candidate of a search as CSV (see `candidate_columns`).
-- The strategies are regenerated by walking the space again; the search
-- kept only a reason number, step time and peak memory per candidate.
-- @tparam table result the result of apsearch.search.run (with its
--   `candidates` record)
-- @treturn string CSV text (header only when the record is missing)
function M.candidates(result)
  local lines = { table.concat(M.candidate_columns(), ",") }
  local rec = result.candidates
  if not rec or not rec.space then return lines[1] .. "\n" end
  rec:decode()
  local summary = result.infeasible_summary or {}
  local reason_cells, phase_cells, status_cells = {}, {}, {}
  for id, code in ipairs(rec.reasons) do
    local e = summary[code] or {}
    reason_cells[id] = cell(code)
    phase_cells[id] = e.phase or ""
    status_cells[id] = e.phase == "early" and "filtered" or "infeasible"
  end
  local code, est_index, est_step, est_mem = rec.code, rec.est_index, rec.est_step, rec.est_mem
  local rank_of = rec.rank_of or {}
  local fmt = string.format
  local n, last = 1, rec.count
  local tostr = tostring
  local nf = #STRATEGY
  local gbs = ((result.inputs or {}).training or {}).global_batch_size
  local row = {}
  for cand, index in rec.space:iter() do
    local c = code[index]
    if c == 0 then
      row[1], row[2], row[3], row[4] = tostr(index), "feasible", "", ""
    else
      row[1], row[2], row[3], row[4] = tostr(index), status_cells[c], phase_cells[c], reason_cells[c]
    end
    local r = rank_of[index]
    row[5] = r and tostr(r) or ""
    if est_index[n] == index then
      local m = est_mem[n]
      row[6] = fmt("%.9g", est_step[n])
      row[7] = fmt("%.0f", m)
      row[8] = fmt("%.3f", m / 1073741824)
      n = n + 1
    else
      row[6], row[7], row[8] = "", "", ""
    end
    for i = 1, nf do row[8 + i] = strategy_cell(cand, STRATEGY[i], gbs) end
    lines[#lines + 1] = table.concat(row, ",")
    if index >= last then break end
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
