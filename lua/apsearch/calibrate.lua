--- Fits the efficiency parameters of the device presets to measured runs
-- (`apsearch calibrate CASES.csv -o calib.json`).
--
-- What is fitted, per device that appears in the cases (each a physical
-- property of the device and its kernels, documented in docs/modeling.md):
--   gemm_efficiency       large-GEMM fraction of the dense peak
--   gemm_half_dim         smallest GEMM dimension at half that efficiency
--   attention_efficiency  attention-kernel fraction of the bf16 peak
--   fp8_gemm_efficiency   fp8 GEMM fraction of the fp8 peak (fp8 rows only)
-- The loss is the mean absolute log error of tokens/s per GPU over the rows
-- that measured it (symmetric in over- and under-estimates, and robust to
-- one wild row); the optimiser is cyclic coordinate descent with a
-- golden-section search per parameter inside physical bounds, from the
-- preset defaults, so a run is deterministic and reproducible.
--
-- A calibration file is JSON: {schema_version, name, fitted_on, loss_before,
-- loss_after, devices = {<preset> = {<field> = value}}, training = {...}}.
local core = require "apsearch.core"
local validate = require "apsearch.validate"
local calibration = require "apsearch.calibration"
local util = require "apsearch.util"

local M = {}

--- Fitted fields with their physical bounds (calibration.FIELDS).
M.PARAMETERS = calibration.FIELDS

--- Golden-section sweeps over the parameters.
M.SWEEPS = 4
--- Golden-section steps per parameter per sweep (interval shrinks 0.618x).
M.STEPS = 24

--- Mean absolute log error of throughput under a calibration.
-- @return loss, number of rows used
local function loss(rows, calib)
  local sum, n = 0, 0
  for _, row in ipairs(rows) do
    local c = validate.run_case(row, calib)
    local meas = c.measured and c.measured.tokens_per_s_per_gpu
    local pred = c.predicted and c.predicted.tokens_per_s_per_gpu
    if meas and pred and pred > 0 then
      sum = sum + math.abs(math.log(pred / meas))
      n = n + 1
    end
  end
  return n > 0 and sum / n or math.huge, n
end

local function golden(f, lo, hi, steps)
  local g = (math.sqrt(5) - 1) / 2
  local a, b = lo, hi
  local c, d = b - g * (b - a), a + g * (b - a)
  local fc, fd = f(c), f(d)
  for _ = 1, steps do
    if fc < fd then b, d, fd = d, c, fc; c = b - g * (b - a); fc = f(c)
    else a, c, fc = c, d, fd; d = a + g * (b - a); fd = f(d) end
  end
  if fc < fd then return c, fc end
  return d, fd
end

--- Fits the parameters to the rows of a cases file.
-- @param path CSV in the validation schema
-- @param opts {name = string, log = function(line)}
-- @return calibration table
function M.fit(path, opts)
  opts = opts or {}
  local log = opts.log or function() end
  local rows = {}
  local devices, fp8 = {}, {}
  for _, row in ipairs(validate.load(path)) do
    local c = validate.run_case(row)
    if not c.error and c.measured.tokens_per_s_per_gpu then
      rows[#rows + 1] = row
      devices[row.device] = true
      if row.precision == "fp8" then fp8[row.device] = true end
    end
  end
  if #rows == 0 then
    error(path .. ": no row with measured_tokens_per_s_per_gpu can be estimated", 0)
  end
  local calib = { devices = {}, training = {} }
  local names = util.sorted_keys(devices)
  for _, dev in ipairs(names) do
    local preset = core.device_preset(dev)
    calib.devices[dev] = {}
    for _, p in ipairs(M.PARAMETERS) do
      if not p.fp8_only or fp8[dev] then calib.devices[dev][p.field] = preset[p.field] end
    end
  end
  local before = loss(rows, calib)
  local best = before
  log(string.format("calibrate: %d rows, %d devices, loss before %.4f", #rows, #names, before))
  for sweep = 1, M.SWEEPS do
    for _, dev in ipairs(names) do
      for _, p in ipairs(M.PARAMETERS) do
        local params = calib.devices[dev]
        if params[p.field] ~= nil then
          local keep = params[p.field]
          local x, fx = golden(function(v)
            params[p.field] = v
            return loss(rows, calib)
          end, p.lo, p.hi, M.STEPS)
          if fx < best then params[p.field], best = x, fx else params[p.field] = keep end
        end
      end
    end
    log(string.format("calibrate: sweep %d, loss %.4f", sweep, best))
  end
  calib.schema_version = 1
  calib.name = opts.name or ("calibrated on " .. path)
  calib.fitted_on = path
  calib.rows = #rows
  calib.loss_before = before
  calib.loss_after = best
  return calib
end

return M
