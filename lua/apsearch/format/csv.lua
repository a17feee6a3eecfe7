--- CSV view of a search result: a header and one row per top-k strategy
-- (RFC 4180 quoting).  Units are in the column names (`_s`, `_bytes`,
-- `_gib`); array fields (stage_partition, ...) are joined with `;`.
-- Memory columns are the worst stage's breakdown; time columns are the
-- exposed (critical-path) seconds of each category.
-- @module apsearch.format.csv
local common = require "apsearch.format.common"

local M = {}

local STRATEGY = { "dp_degree", "fsdp_degree", "zero_stage",
  "reshard_after_forward", "tp_degree", "sequence_parallel", "pp_degree",
  "vpp_degree", "cp_degree", "cp_comm_type", "micro_batch_size",
  "micro_batch_num", "layer_recompute", "recompute_num_layers",
  "stage_partition", "layer_offset" }

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

--- Column names, in order.
-- @treturn table array of strings
function M.columns()
  local cols = { "rank" }
  for _, f in ipairs(STRATEGY) do cols[#cols + 1] = f end
  for _, c in ipairs({ "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
    "model_tflops_per_gpu", "mfu", "hfu", "mem_peak_bytes", "mem_peak_gib",
    "mem_limit_bytes" }) do cols[#cols + 1] = c end
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
    for _, f in ipairs(STRATEGY) do row[#row + 1] = cell(r[f]) end
    for _, v in ipairs({ pc.step_time, pc.tokens_per_s, pc.tokens_per_s_per_gpu,
      pc.model_tflops_per_gpu, pc.mfu, pc.hfu, mc.total, common.gib(mc.total),
      mc.limit }) do row[#row + 1] = cell(v) end
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

return M
