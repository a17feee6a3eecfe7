--- Fits the efficiency parameters of the device presets to measured runs
-- (`apsearch calibrate CASES.csv -o calib.json`).
--
-- What is fitted, per efficiency family of the devices that appear in the
-- cases (calibration.family: an H100 SXM and its 500 W variant share one
-- value; each is a physical property of the tensor cores and their
-- kernels, documented in docs/modeling.md; the file lists it under every
-- device of the family that appears):
--   gemm_efficiency       large-GEMM fraction of the dense peak
--   attention_efficiency  flash-attention kernels, fraction of the bf16
--                         peak (rows with flash attention only)
--   unfused_attention_efficiency  attention without flash attention, the
--                         batched QK^T / PV GEMMs (rows without it only)
--   fp8_gemm_efficiency   fp8 GEMM fraction of the fp8 peak (fp8 rows only)
-- A field no row informs (calibration.FIELDS `needs`) is left out of the
-- file: the device keeps its preset value.
-- The loss is the mean absolute log error of tokens/s per GPU over the rows
-- that measured it (symmetric in over- and under-estimates, and robust to
-- one wild row); the optimiser is Nelder-Mead over the parameters scaled
-- to their physical bounds, restarted from its best point, from the preset
-- defaults, so a run is deterministic and reproducible.
--
-- A calibration file is JSON: {schema_version, name, fitted_on, loss_before,
-- loss_after, devices = {<preset> = {<field> = value}}, training = {...}}.
local core = require "apsearch.core"
local validate = require "apsearch.validate"
local calibration = require "apsearch.calibration"
local stacks = require "apsearch.stacks"
local util = require "apsearch.util"

local M = {}

--- Fitted fields with their physical bounds (calibration.FIELDS).
M.PARAMETERS = calibration.FIELDS

--- Nelder-Mead iterations per start, and restarts from the best point
-- (a restart rebuilds the simplex, which un-sticks a collapsed one).
M.ITERATIONS = 400
M.RESTARTS = 4
--- Initial simplex edge, as a fraction of each parameter's range.
M.STEP = 0.15

--- A fit's rows made ready for its loss, once: each row's inputs as
-- validate.run_case builds them (validate.case_inputs with the row's stack
-- applied, apsearch.stacks), its measured throughput, and no estimate.
-- The loss then applies a calibration to a copy of the cluster and runs
-- the light estimate (ctx:evaluate), which gives run_case's
-- tokens_per_s_per_gpu: a calibration changes efficiencies, none of the
-- row's parsing, stack or bounds checks (validate.check_bounds reads
-- peaks, FLOPs and memory), so they are done once, not at every step of
-- the optimiser.
-- Each row's estimator context is made once per process and kept (the
-- folds of `validate --cv` fit on the same rows again and again): a step
-- only puts the calibrated cluster into it (ctx:set_cluster).
-- @param rows rows run_case estimates without error
-- @param meas row -> its measured tokens/s per GPU (validate.measured_throughput)
-- @treturn table array of {cluster, strategy, stack, meas, ctx}
local prepared_of = setmetatable({}, { __mode = "k" })
local function prepare(rows, meas)
  local out = {}
  for _, row in ipairs(rows) do
    local p = prepared_of[row]
    if not p then
      local model, cluster, training, strategy = validate.case_inputs(row)
      local stack = stacks.of_software(row.software, training.framework)
      stacks.apply(cluster, stack, training)
      p = { cluster = cluster, strategy = strategy, stack = stack,
            ctx = core.context(model, cluster, training) }
      prepared_of[row] = p
    end
    out[#out + 1] = { cluster = p.cluster, strategy = p.strategy, stack = p.stack, ctx = p.ctx, meas = meas[row] }
  end
  return out
end

--- A copy of a cluster table deep enough for calibration.apply to write
-- its device fields into (the table and its device table).
local function cluster_copy(cluster)
  local c = {}
  for k, v in pairs(cluster) do c[k] = v end
  if type(cluster.device) == "table" then
    local d = {}
    for k, v in pairs(cluster.device) do d[k] = v end
    c.device = d
  end
  return c
end

--- Mean absolute log error of throughput under a calibration.
-- @param prepared rows from `prepare`
-- @return loss, number of rows used (a row whose estimate is infeasible
--   for a reason other than memory, as run_case refuses it, is left out)
local function loss(prepared, calib, over_profile)
  local sum, n = 0, 0
  for _, p in ipairs(prepared) do
    local cluster = calibration.apply(cluster_copy(p.cluster), calib, p.stack, over_profile)
    local est = p.ctx:set_cluster(cluster):evaluate(p.strategy)
    local pred = est.tokens_per_s_per_gpu
    if p.meas and (not est.reason or est.reason == "MEMORY_LIMIT") and pred and pred > 0 then
      sum = sum + math.abs(math.log(pred / p.meas))
      n = n + 1
    end
  end
  return n > 0 and sum / n or math.huge, n
end

-- Nelder-Mead (Nelder and Mead 1965; the standard reflection 1,
-- expansion 2, contraction 1/2, shrink 1/2) over x in [0, 1]^n, clamped.
local function nelder_mead(f, x0, step, iterations)
  local n = #x0
  local function clamp(x)
    local y = {}
    for i = 1, n do y[i] = math.min(1, math.max(0, x[i])) end
    return y
  end
  local simplex = { { x = clamp(x0) } }
  for i = 1, n do
    local x = {}
    for j = 1, n do x[j] = x0[j] end
    x[i] = x[i] + (x[i] + step <= 1 and step or -step)
    simplex[#simplex + 1] = { x = clamp(x) }
  end
  for _, v in ipairs(simplex) do v.f = f(v.x) end
  local function lerp(a, b, t)
    local y = {}
    for i = 1, n do y[i] = a[i] + t * (b[i] - a[i]) end
    return clamp(y)
  end
  for _ = 1, iterations do
    table.sort(simplex, function(a, b) return a.f < b.f end)
    local worst = simplex[n + 1]
    local c = {}
    for i = 1, n do
      local s = 0
      for k = 1, n do s = s + simplex[k].x[i] end
      c[i] = s / n
    end
    local xr = lerp(c, worst.x, -1)
    local fr = f(xr)
    if fr < simplex[1].f then
      local xe = lerp(c, worst.x, -2)
      local fe = f(xe)
      if fe < fr then worst.x, worst.f = xe, fe else worst.x, worst.f = xr, fr end
    elseif fr < simplex[n].f then
      worst.x, worst.f = xr, fr
    else
      local xc = lerp(c, worst.x, 0.5)
      local fc = f(xc)
      if fc < worst.f then
        worst.x, worst.f = xc, fc
      else
        for k = 2, n + 1 do
          simplex[k].x = lerp(simplex[1].x, simplex[k].x, 0.5)
          simplex[k].f = f(simplex[k].x)
        end
      end
    end
  end
  table.sort(simplex, function(a, b) return a.f < b.f end)
  return simplex[1].x, simplex[1].f
end

--- Fits the parameters to the rows of a cases file.
-- @param path CSV in the validation schema
-- @param opts {name = string, log = function(line)}
-- @return calibration table
function M.fit(path, opts)
  return M.fit_rows(validate.load(path), path, opts)
end

--- Fits the parameters to rows already read (validate.load).
-- @param all array of rows (column -> string)
-- @param label what the rows are, for messages and `fitted_on`
-- @param opts {name = string, log = function(line), over_profile = boolean,
--   stack = string, skip_unestimated = boolean, allow_empty = boolean}:
--   allow_empty returns nil and the reason when no row measured a
--   throughput, instead of raising; skip_unestimated (the
--   folds of `validate --cv`, whose summary counts such rows as failed)
--   skips a row that cannot be estimated with a log line instead of
--   raising (a measured value or convention it cannot have still raises);
--   over_profile (the fits of `--group software`) fits and
--   applies the fields a row's stack profile sets (calibration.apply);
--   without it a row informs none of them. stack: the one stack of all the
--   rows (`--group software`), whose profile values the fit starts from
-- Runs marked as release gaps (apsearch.stacks.release_gap) and rows
-- without a measured throughput are skipped with a log line; a row that
-- cannot be estimated raises `<label>: row <id>: <error> (fix or remove the
-- row)`.
-- @return calibration table; raises when no row measured throughput (nil and
--   the reason with allow_empty)
function M.fit_rows(all, label, opts)
  opts = opts or {}
  local path = label
  local log = opts.log or function() end
  local rows, meas = {}, {}
  local devices, evidence = {}, {}
  for _, row in ipairs(all) do
    local c = validate.run_case(row)
    -- a row that cannot be estimated (a misspelt device, a value or
    -- convention it cannot have) is a broken file, not a row to skip: the
    -- fit would be of the other rows without a word (validate exits 2 on
    -- the same file)
    if c.error and opts.skip_unestimated and not (c.error:match("^measured_") or
        c.error:match("^flops_convention ")) then
      log(("calibrate: skipping %s: %s"):format(row.case_id, c.error))
    elseif c.error then
      error(("%s: row %s: %s (fix or remove the row)"):format(path, row.case_id, c.error), 0)
    elseif c.release_gap then
      -- it measures its release, not the device (apsearch.stacks.RELEASE_GAPS;
      -- `validate --cv` fits no fold on it either)
      log(("calibrate: skipping %s: release gap, %s"):format(row.case_id, c.release_gap.name))
    elseif not validate.measured_throughput(c) then
      log(("calibrate: skipping %s: no measured throughput (tokens/s, step time, or TFLOP/s with a "
        .. "flops_convention)"):format(row.case_id))
    else
      rows[#rows + 1] = row
      -- tokens/s per GPU, the row's or from its step time or TFLOP/s
      meas[row] = validate.measured_throughput(c)
      -- preset names match case-insensitively: one entry per preset, as
      -- calibration.check requires of the file
      devices[row.device:lower()] = true
      local fam = calibration.family(row.device)
      evidence[fam] = evidence[fam] or {}
      local stack = stacks.of_software(row.software, row.framework)
      for kind in pairs(calibration.evidence_of(row)) do
        if opts.over_profile or not calibration.profile_covers(stack, row.device, kind) then
          evidence[fam][kind] = true
        end
      end
    end
  end
  if #rows == 0 then
    local none = path .. ": no row with a measured throughput (tokens/s, step time, or TFLOP/s with a "
      .. "flops_convention) can be estimated"
    if opts.allow_empty then return nil, none end
    error(none, 0)
  end
  local calib = { devices = {}, training = {} }
  local names = util.sorted_keys(devices)
  for _, dev in ipairs(names) do
    local preset = core.device_preset(dev)
    -- a stack's own fit (opts.stack) starts where its runs are estimated:
    -- the profile's value (which the entry replaces), else the preset's;
    -- loss_before is then the error without the calibration
    local profile = opts.stack and stacks.profile_fields(opts.stack, dev) or {}
    calib.devices[dev] = {}
    for _, p in ipairs(M.PARAMETERS) do
      if not p.needs or evidence[calibration.family(dev)][p.needs] then
        calib.devices[dev][p.field] = profile[p.field] or preset[p.field]
      end
    end
  end
  local prepared = prepare(rows, meas)
  local before = loss(prepared, calib, opts.over_profile)
  local best = before
  log(string.format("calibrate: %d row%s, %d device%s, loss before %.4f", #rows, #rows == 1 and "" or "s",
    #names, #names == 1 and "" or "s", before))
  -- one vector of every (family, field) pair, normalised by its bounds:
  -- the devices of one efficiency family (calibration.family: the same
  -- tensor cores and kernels, e.g. an H100 SXM and its 500 W variant)
  -- share their efficiencies; each keeps its own peaks
  local gen_of = calibration.family
  local slots, slot_of = {}, {}
  for _, dev in ipairs(names) do
    for _, p in ipairs(M.PARAMETERS) do
      if calib.devices[dev][p.field] ~= nil then
        local key = gen_of(dev) .. "/" .. p.field
        local sl = slot_of[key]
        if not sl then
          sl = { devs = {}, p = p }
          slot_of[key] = sl
          slots[#slots + 1] = sl
        end
        sl.devs[#sl.devs + 1] = dev
      end
    end
  end
  local function set(x)
    for i, sl in ipairs(slots) do
      for _, dev in ipairs(sl.devs) do
        calib.devices[dev][sl.p.field] = sl.p.lo + x[i] * (sl.p.hi - sl.p.lo)
      end
    end
  end
  local x = {}
  for i, sl in ipairs(slots) do
    local v = calib.devices[sl.devs[1]][sl.p.field]
    x[i] = math.min(1, math.max(0, (v - sl.p.lo) / (sl.p.hi - sl.p.lo)))
  end
  if #rows < 2 * #slots then
    log(string.format("calibrate: warning: %d rows for %d parameters; the fit is weakly determined "
      .. "(fewer than two rows a parameter), give runs that differ in sequence length and model size",
      #rows, #slots))
  end
  local function objective(y) set(y) return loss(prepared, calib, opts.over_profile) end
  for r = 1, M.RESTARTS do
    local y, fy = nelder_mead(objective, x, M.STEP, M.ITERATIONS)
    if fy < best then x, best = y, fy end
    log(string.format("calibrate: start %d, loss %.4f", r, best))
  end
  set(x)
  calib.schema_version = calibration.SCHEMA_VERSION
  calib.name = opts.name or ("calibrated on " .. path)
  calib.fitted_on = path
  calib.rows = #rows
  calib.loss_before = before
  calib.loss_after = best
  return calib
end

--- fit_scale: a scale within this fraction of its range from a bound is
-- at the bound (the optimiser clamps there; closer than it reaches otherwise).
M.BOUND_TOLERANCE = 1e-6

--- The efficiency fields one job's step time informs, by what it runs:
-- the GEMM field of its precision (fp8_gemm_efficiency for fp8, MXFP8 and
-- NVFP4 runs, else gemm_efficiency) and the attention field of its kernel
-- (attention_efficiency with flash attention, else
-- unfused_attention_efficiency): the `needs` of calibration.FIELDS, as
-- fit_rows chooses them for a cases row.  The GEMM shape terms
-- (gemm_half_dim, tiles, SMs) are not scaled: a shape is not a scale.
-- @tparam table training normalized training (precision, flash_attention)
-- @treturn table field names
function M.job_fields(training)
  local p = training.precision
  local quantized = p == "fp8" or p == "mxfp8" or p == "nvfp4"
  return { quantized and "fp8_gemm_efficiency" or "gemm_efficiency",
    training.flash_attention and "attention_efficiency" or "unfused_attention_efficiency" }
end

--- Fits one common scale on a job's kernel efficiencies so that its
-- estimated step time matches a measured one (`apsearch calibrate --log`):
-- one measured run informs one number, so the fields of M.job_fields move
-- together, their ratio kept.  The loss and optimiser are fit_rows':
-- |log(estimated / measured)| (of the step time, for one job the same as
-- of tokens/s per GPU), Nelder-Mead (M.ITERATIONS, M.RESTARTS) over the
-- scale within the range that keeps every field inside its physical bounds
-- (calibration.FIELDS).  A step time the bounds cannot reach (a job bound
-- by communication, or a measurement far off) ends at a bound: `at_bound`.
-- @tparam table job `{device = preset name, base = {field = value now},
--   estimate = function(fields) -> estimated step time (s) with those
--   fields applied, measured_step_s = s, name, fitted_on}`
-- @treturn table calibration (apsearch.calibration's format: devices =
--   {[device] = {field = base x scale}}, rows = 1, loss_before, loss_after)
-- @treturn table `{scale, lo, hi, at_bound, step_before, step_after}`
-- @raise when the measured step time is not a positive number
function M.fit_scale(job)
  local meas = job.measured_step_s
  if not (util.is_finite(meas) and meas > 0) then
    error(("%s: measured step time must be a positive number of seconds (got %s)"):format(
      tostring(job.fitted_on), util.describe(meas)), 0)
  end
  local lo, hi = 0, math.huge
  local bounds = {}
  for _, p in ipairs(M.PARAMETERS) do bounds[p.field] = p end
  local names = util.sorted_keys(job.base)
  for _, f in ipairs(names) do
    local v = job.base[f]
    lo = math.max(lo, bounds[f].lo / v)
    hi = math.min(hi, bounds[f].hi / v)
  end
  local function fields_at(scale)
    local out = {}
    -- clamped: lo * v can round past a bound by an ulp
    for _, f in ipairs(names) do
      out[f] = math.min(bounds[f].hi, math.max(bounds[f].lo, job.base[f] * scale))
    end
    return out
  end
  local function step_at(scale) return job.estimate(fields_at(scale)) end
  local function scale_of(x) return lo + x[1] * (hi - lo) end
  local function objective(x)
    local t = step_at(scale_of(x))
    if not (util.is_finite(t) and t > 0) then return math.huge end
    return math.abs(math.log(t / meas))
  end
  local x = { math.min(1, math.max(0, (1 - lo) / (hi - lo))) }
  local before = objective(x)
  local best = before
  for _ = 1, M.RESTARTS do
    local y, fy = nelder_mead(objective, x, M.STEP, M.ITERATIONS)
    if fy < best then x, best = y, fy end
  end
  local scale = scale_of(x)
  local calib = {
    schema_version = calibration.SCHEMA_VERSION,
    name = job.name, fitted_on = job.fitted_on,
    devices = { [job.device:lower()] = fields_at(scale) },
    rows = 1, loss_before = before, loss_after = best,
  }
  local tol = M.BOUND_TOLERANCE * (hi - lo)
  return calib, { scale = scale, lo = lo, hi = hi, at_bound = (scale - lo < tol or hi - scale < tol) or nil,
    step_before = step_at(1), step_after = step_at(scale) }
end

--- Fits one calibration per software stack (`apsearch calibrate --group
-- software`): the rows are grouped by the stack their `software` column
-- names (apsearch.stacks.of_software; a row whose `software` matches no
-- stack counts to its framework's newest), and each group is fitted alone.
-- @param path CSV in the validation schema
-- @param opts {name = string, log = function(line), by = "software"}
-- @return {schema_version, name, fitted_on, stacks = {<stack id> = calibration}};
--   raises when no group can be fitted
function M.fit_grouped(path, opts)
  opts = opts or {}
  local by = opts.by or "software"
  if by ~= "software" then
    error(("--group: unknown grouping %q; known: software"):format(tostring(by)), 0)
  end
  local log = opts.log or function() end
  local stacks = require "apsearch.stacks"
  local groups, order = {}, {}
  for _, row in ipairs(validate.load(path)) do
    local id, matched = stacks.of_software(row.software, row.framework)
    if not id then
      log(("calibrate: skipping %s: framework %q has no stack"):format(row.case_id, tostring(row.framework)))
    else
      if not matched then
        log(("calibrate: %s: software %q names no known stack; counted to %s"):format(
          row.case_id, tostring(row.software or ""), id))
      end
      if not groups[id] then groups[id] = {} order[#order + 1] = id end
      table.insert(groups[id], row)
    end
  end
  local result = { schema_version = calibration.SCHEMA_VERSION,
                   name = opts.name or ("calibrated per software stack on " .. path),
                   fitted_on = path, stacks = {} }
  local fitted = 0
  table.sort(order)
  for _, id in ipairs(order) do
    log(("calibrate: stack %s: %d rows"):format(id, #groups[id]))
    -- a stack none of whose rows measured throughput is left unfitted;
    -- a row of the file that is broken stops the fit, as without --group
    local calib, none = M.fit_rows(groups[id], path .. " (stack " .. id .. ")",
      { log = log, name = id .. " calibrated on " .. path, over_profile = true, stack = id, allow_empty = true })
    if calib then
      result.stacks[id] = calib
      fitted = fitted + 1
    else
      log(("calibrate: stack %s not fitted: %s"):format(id, none))
    end
  end
  if fitted == 0 then
    error(path .. ": no stack has a row with measured_tokens_per_s_per_gpu that can be estimated", 0)
  end
  return result
end

return M
