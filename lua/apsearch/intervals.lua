--- Prediction intervals: how far a measured run lands from the estimate,
-- from the out-of-sample errors of the published runs.
--
-- For step time the errors are leave-one-source-out residuals (each run
-- predicted with efficiencies fitted on the other sources,
-- apsearch.crossval), r = log(measured step time / estimated step time),
-- grouped by class: framework x hardware generation x precision family
-- (16-bit or quantized). A class with fewer than `M.MIN_ROWS` runs, or
-- runs from fewer than `M.MIN_SOURCES` sources, takes the pooled residuals
-- of every class. The interval at `M.LEVEL` is the
-- estimate times exp of the residuals' (1 - LEVEL)/2 and (1 + LEVEL)/2
-- quantiles (linear interpolation between order statistics, Hyndman and
-- Fan 1996 type 7). Peak memory has no fitted parameter, so its in-sample
-- residuals are already out of sample; they are pooled.
--
-- The residual table is data derived from `public_cases.csv`:
-- `scripts/fit-intervals.sh` regenerates lua/apsearch/intervals_data.lua.
-- @module apsearch.intervals
local M = {}

--- Coverage of the interval (two-sided, central).
M.LEVEL = 0.8
--- Fewest runs a class needs to have its own interval.
M.MIN_ROWS = 5
--- Fewest sources those runs must come from: runs of one publication
-- share its stack and its measurement habits, so their spread understates
-- how far a run from elsewhere lands.
M.MIN_SOURCES = 2

-- the shipped table (apsearch.intervals_data), read once; nil without it
local data
local function table_data()
  if data == nil then
    local ok, d = pcall(require, "apsearch.intervals_data")
    data = ok and d or false
  end
  return data or nil
end

--- Hardware generation of a device: "ampere", "hopper", "blackwell" or
-- "other", from its preset name (a100, h100/h200, b200/gb200/gb300).
-- @tparam string name device or preset name
-- @treturn string
function M.generation(name)
  name = tostring(name or ""):lower()
  if name:match("^a100") then return "ampere" end
  if name:match("^h[12]00") then return "hopper" end
  if name:match("^g?b[23]00") then return "blackwell" end
  return "other"
end

--- Class of an estimate: "framework/generation/16bit|quantized".
-- @tparam string framework training.framework
-- @tparam string device device (base preset) name
-- @tparam string precision training.precision
-- @treturn string
function M.class_of(framework, device, precision)
  local q = (precision == "bf16" or precision == "fp16") and "16bit" or "quantized"
  return ("%s/%s/%s"):format(tostring(framework), M.generation(device), q)
end

--- Key of the best-published-MFU table: "generation/16bit|quantized".
-- @tparam string device
-- @tparam string precision
-- @treturn string
function M.mfu_key(device, precision)
  local q = (precision == "bf16" or precision == "fp16") and "16bit" or "quantized"
  return M.generation(device) .. "/" .. q
end

--- The highest MFU published for the device's generation and the
-- precision family, when `mfu` exceeds it (a sanity flag: no run of that
-- hardware and precision was measured that high).
-- @tparam number mfu the estimate's MFU (fraction, apsearch's convention)
-- @tparam string device
-- @tparam string precision
-- @treturn table|nil {mfu, case, source} of the best published run
function M.above_published(mfu, device, precision)
  local d = table_data()
  local best = d and d.best_mfu and d.best_mfu[M.mfu_key(device, precision)]
  if best and mfu and mfu > best.mfu then return best end
  return nil
end

--- Quantile p in [0, 1] of an array of numbers (type 7: linear between
-- order statistics x[floor(h)] and x[floor(h) + 1], h = (n - 1) p + 1).
-- @tparam table values array (not modified)
-- @tparam number p
-- @treturn number|nil nil when empty
function M.quantile(values, p)
  local n = #values
  if n == 0 then return nil end
  local x = {}
  for i, v in ipairs(values) do x[i] = v end
  table.sort(x)
  local h = (n - 1) * p + 1
  local lo = math.floor(h)
  if lo >= n then return x[n] end
  return x[lo] + (h - lo) * (x[lo + 1] - x[lo])
end

--- Builds interval bounds from residuals grouped by class.
-- @tparam table by_class {<class> = array of residuals, with field
--   `sources` = the number of sources they come from (1 when absent)}
-- @tparam[opt] number level default M.LEVEL
-- @treturn table {pooled = {lo, hi, rows}, classes = {<class> = {lo, hi, rows}}}
--   with lo, hi the residual quantiles (log ratios); classes with fewer
--   than M.MIN_ROWS runs or M.MIN_SOURCES sources are left out (they take
--   `pooled`)
function M.bounds(by_class, level)
  level = level or M.LEVEL
  local a, b = (1 - level) / 2, (1 + level) / 2
  local all, classes = {}, {}
  for class, r in pairs(by_class) do
    for _, v in ipairs(r) do all[#all + 1] = v end
    if #r >= M.MIN_ROWS and (r.sources or 1) >= M.MIN_SOURCES then
      classes[class] = { lo = M.quantile(r, a), hi = M.quantile(r, b), rows = #r }
    end
  end
  return { level = level, classes = classes,
           pooled = { lo = M.quantile(all, a), hi = M.quantile(all, b), rows = #all } }
end

--- The interval of one estimate.
-- @tparam number value the estimate (seconds or bytes)
-- @tparam table b bounds (M.bounds) or nil
-- @tparam[opt] string class
-- @treturn table|nil {lo, hi, level, class, rows, pooled}
function M.interval(value, b, class)
  if not b or not value or value ~= value then return nil end
  local c, pooled = class and b.classes[class], false
  if not c then c, pooled = b.pooled, true end
  if not (c and c.lo and c.hi) then return nil end
  return { lo = value * math.exp(c.lo), hi = value * math.exp(c.hi), level = b.level,
           class = class, rows = c.rows, pooled = pooled }
end

--- Step-time and peak-memory intervals of an estimate from the shipped
-- residual table (nil fields when no table is installed).
-- @tparam number step_time s
-- @tparam number mem_peak bytes
-- @tparam string framework
-- @tparam string device
-- @tparam string precision
-- @treturn table {step_time = interval|nil, mem_peak = interval|nil}
function M.of_estimate(step_time, mem_peak, framework, device, precision)
  local d = table_data()
  if not d then return {} end
  local class = M.class_of(framework, device, precision)
  return { step_time = M.interval(step_time, d.step_time, class),
           mem_peak = M.interval(mem_peak, d.mem_peak) }
end

return M
