--- Helpers shared by the formatters: category lists, unit conversion for
-- display (GiB = 2^30 bytes), aligned text tables.
-- @module apsearch.format.common
local M = {}

--- memory_breakdown categories (MODELING.md section 3), display order.
M.memory_categories = { "params", "grads", "optimizer_states", "activations",
  "comm_buffers", "logits_loss", "reserved" }

--- comm_buffers sub-categories.
M.comm_categories = { "tp", "fsdp", "dp", "pp", "cp" }

--- performance_breakdown categories (MODELING.md section 4), display order.
M.time_categories = { "compute_fwd", "compute_bwd", "recompute", "tp_comm",
  "cp_comm", "pp_p2p", "pp_bubble", "fsdp_allgather", "fsdp_reducescatter",
  "dp_grad_sync", "hsdp_replicate_sync", "optimizer", "activation_offload" }

--- Bytes to GiB (2^30 bytes).
-- @tparam number bytes
-- @treturn number GiB
function M.gib(bytes) return (bytes or 0) / 2 ^ 30 end

--- Value of a memory category in a breakdown (comm_buffers: its total).
-- @tparam table bd memory_breakdown
-- @tparam string cat category
-- @treturn number bytes
function M.mem_value(bd, cat)
  local v = bd and bd[cat]
  if type(v) == "table" then v = v.total end
  return tonumber(v) or 0
end

--- Largest memory category of a breakdown.
-- @tparam table bd memory_breakdown
-- @treturn string|nil category name
-- @treturn number bytes
function M.top_memory(bd)
  local best, bv = nil, -1
  for _, c in ipairs(M.memory_categories) do
    local v = M.mem_value(bd, c)
    if v > bv then best, bv = c, v end
  end
  return best, bv
end

--- Exposed (critical-path) seconds of a time category.
-- @tparam table bd performance_breakdown
-- @tparam string cat category
-- @tparam[opt="exposed"] string which "exposed" or "total"
-- @treturn number seconds
function M.time_value(bd, cat, which)
  local v = bd and bd[cat]
  if type(v) == "table" then v = v[which or "exposed"] end
  return tonumber(v) or 0
end

--- Category with the largest exposed time; with `overhead`, the largest
-- beyond the forward and backward compute (what separates strategies:
-- bubble, communication, recompute, optimizer), nil when all are zero.
-- @tparam table bd performance_breakdown
-- @tparam[opt] boolean overhead skip compute_fwd and compute_bwd
-- @treturn string|nil category name
-- @treturn number seconds
function M.top_time(bd, overhead)
  local best, bv = nil, overhead and 0 or -1
  for _, c in ipairs(M.time_categories) do
    if not (overhead and (c == "compute_fwd" or c == "compute_bwd")) then
      local v = M.time_value(bd, c)
      if v > bv then best, bv = c, v end
    end
  end
  return best, bv
end

--- Formats rows as an aligned text table.
-- @tparam table headers array of header strings
-- @tparam table rows array of arrays of cell strings
-- @tparam[opt] table right array of booleans: right-align column i
-- @treturn string lines joined by "\n" (with a trailing newline)
function M.align(headers, rows, right)
  right = right or {}
  local w = {}
  for i, h in ipairs(headers) do w[i] = #h end
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do if #c > (w[i] or 0) then w[i] = #c end end
  end
  local function line(cells)
    local parts = {}
    for i = 1, #headers do
      local c = cells[i] or ""
      local pad = string.rep(" ", w[i] - #c)
      parts[i] = right[i] and (pad .. c) or (c .. pad)
    end
    return (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  local out = { line(headers) }
  local sep = {}
  for i = 1, #headers do sep[i] = string.rep("-", w[i]) end
  out[2] = table.concat(sep, "  ")
  for _, r in ipairs(rows) do out[#out + 1] = line(r) end
  return table.concat(out, "\n") .. "\n"
end

--- Number with thousands separators: 8030261248 -> "8,030,261,248".
-- @tparam number n
-- @treturn string
function M.commas(n)
  local s = string.format("%.0f", n)
  local neg = s:sub(1, 1) == "-"
  if neg then s = s:sub(2) end
  s = s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return (neg and "-" or "") .. s
end

--- The NVLink-domain suffix of a cluster line: ", NVLink domain D" when
-- `cluster.nvlink_domain_size` spans more than one host (GB200 NVL72: 4
-- per host, up to 72 per domain), else "".
-- @tparam table cluster normalized cluster table
-- @treturn string
function M.nvlink_domain_note(cluster)
  local d = cluster.nvlink_domain_size or 0
  if d > (cluster.devices_per_node or 0) then
    return string.format(", NVLink domain %d", d)
  end
  return ""
end

--- The footnote of a top-k with a strategy flagged `near_capacity`
-- (apsearch.search.near_capacity_fraction), or nil when none is.
-- @tparam table result search result
-- @treturn string|nil
function M.near_capacity_note(result)
  for _, r in ipairs(result.top_k_strategies or {}) do
    if r.memory_cost and r.memory_cost.near_capacity then
      return string.format("! peak above %.0f%% of device memory: the caching allocator may "
        .. "retry allocations and slow the step beyond the estimate (docs/accuracy.md)",
        100 * require("apsearch.search").near_capacity_fraction)
    end
  end
  return nil
end

--- One line on the prediction intervals of a result's top-k (the
-- estimate times the factors; apsearch.intervals), or nil without them.
-- Rows that share their factors are described once.
-- @tparam table result search result
-- @treturn string|nil
function M.interval_note(result)
  local seen, parts = {}, {}
  for _, r in ipairs(result.top_k_strategies or {}) do
    local si = r.performance_cost and r.performance_cost.step_time_interval
    local mi = r.memory_cost and r.memory_cost.total_interval
    if si and r.performance_cost.step_time > 0 then
      local st = r.performance_cost.step_time
      local text = string.format("step time x%.2f-%.2f (%s, %d published runs)", si.lo / st, si.hi / st,
        si.pooled and "all classes" or tostring(si.class), si.rows or 0)
      if mi and r.memory_cost.total > 0 then
        text = text .. string.format(", peak memory x%.2f-%.2f (%d runs)",
          mi.lo / r.memory_cost.total, mi.hi / r.memory_cost.total, mi.rows or 0)
      end
      if not seen[text] then
        seen[text] = true
        parts[#parts + 1] = text
      end
    end
  end
  if #parts == 0 then return nil end
  local level = result.top_k_strategies[1].performance_cost.step_time_interval.level
  local cl = (result.inputs or {}).cluster or {}
  local dev = type(cl.device) == "table" and (cl.device.base or cl.device.name) or cl.device
  local gen = require("apsearch.intervals").generation(dev)
  if gen ~= "ampere" and gen ~= "hopper" then
    parts[#parts] = parts[#parts] .. "; no published run of this hardware generation is behind it"
  end
  return string.format("%d %% of measured runs land within: %s; out-of-sample errors, docs/accuracy.md",
    math.floor(level * 100 + 0.5), table.concat(parts, "; "))
end

--- One line when a top-k MFU is above every published run of its
-- hardware and precision (`performance_cost.mfu_above_published`), or nil.
-- @tparam table result search result
-- @treturn string|nil
function M.mfu_note(result)
  for _, r in ipairs(result.top_k_strategies or {}) do
    local b = r.performance_cost and r.performance_cost.mfu_above_published
    if b then
      return string.format("^ MFU above the best published run of this hardware and precision "
        .. "(%.1f %%, %s: %s): expect it slower than estimated", 100 * b.mfu, b.case, b.source)
    end
  end
  return nil
end

return M
