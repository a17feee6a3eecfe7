--- Out-of-sample accuracy: leave-one-source-out cross-validation of the
-- fitted kernel efficiencies (`apsearch validate CASES.csv --cv source`).
--
-- The rows are grouped by their source (the `source` column's first word,
-- as validate's per-source summary groups them: one publication or
-- benchmark suite each). For every group, the efficiencies are fitted
-- (apsearch.calibrate) on all the other groups' rows and the group is
-- predicted with that fit: its errors are out of sample. The in-sample
-- figure is validate's with the shipped defaults, which were fitted on all
-- rows. A group whose device appears in no other group is predicted with
-- the efficiencies fitted for its family (calibration.family: e.g. the
-- 500 W H100 takes the fitted Hopper values).
--
-- A field the other groups cannot fit (no run of the family informs it,
-- calibration.FIELDS `needs`) must not fall back to the preset default:
-- the defaults were fitted on every row, the held-out group's included,
-- and would leak it. Such a field takes a prior (M.priors): flash
-- attention from another family's fitted value scaled by the published
-- FlashAttention-2 utilisation of the two generations
-- (M.FLASH_UTILIZATION), unfused attention from the family's flash value.
-- What is still left at a preset default (a family absent from the other
-- groups) is named in the result.
-- @module apsearch.crossval
local validate = require "apsearch.validate"
local calibrate = require "apsearch.calibrate"
local util = require "apsearch.util"
local intervals = require "apsearch.intervals"
local calibration = require "apsearch.calibration"
local stacks = require "apsearch.stacks"

local M = {}

--- The group a row belongs to under a split.
-- @tparam table row column -> string
-- @tparam string by "source" (the only split offered)
-- @treturn string
function M.group_of(row, by)
  assert(by == "source", "crossval: unknown split " .. tostring(by))
  return validate.source_key(row.source)
end

--- Splits rows into folds: one per group, in order of first appearance.
-- @tparam table rows array of rows
-- @tparam string by the split
-- @treturn table array of {group = name, test = rows, train = rows}
function M.folds(rows, by)
  local order, members = {}, {}
  for _, row in ipairs(rows) do
    local g = M.group_of(row, by)
    if not members[g] then members[g] = {} order[#order + 1] = g end
    table.insert(members[g], row)
  end
  local folds = {}
  for _, g in ipairs(order) do
    local train = {}
    for _, row in ipairs(rows) do
      if M.group_of(row, by) ~= g then train[#train + 1] = row end
    end
    folds[#folds + 1] = { group = g, test = members[g], train = train }
  end
  return folds
end

--- Published FlashAttention-2 utilisation, fraction of the dense bf16
-- peak, per efficiency family (calibration.family): the kernel
-- benchmarks' level, from which a fold that has no run with flash
-- attention on a family takes that family's prior. Overridable.
-- ampere: Dao 2023 (arXiv:2307.08691), abstract: "50-73% of the
--   theoretical maximum FLOPs/s on A100"; the midpoint of the range.
-- hopper: Shah et al. 2024 (FlashAttention-3, arXiv:2407.08608),
--   abstract: FlashAttention-2 "achieving only 35% utilization" on H100.
M.FLASH_UTILIZATION = {
  ampere = (0.50 + 0.73) / 2,
  hopper = 0.35,
}

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

--- Priors for the fields a fold's fit could not inform and its predicted
-- rows need (their evidence, calibration.evidence_of). The calibration is
-- returned extended (a new table; `calib` is not modified), each
-- predicted device with an entry of its own:
--   attention_efficiency (flash), when no run of the family used flash
--     attention: the flash value fitted on another family F (the first by
--     name with one) x FLASH_UTILIZATION[family] / FLASH_UTILIZATION[F].
--     The published kernel benchmarks give each generation's ceiling; the
--     fitted value carries how much of its ceiling a training stack
--     realises (layouts, masking, the kernel version), which the other
--     generation's runs measure. Without any fitted family: the
--     published utilisation itself. Without a published figure for the
--     family: none (the preset default stays, named in `unfitted`).
--   unfused_attention_efficiency, when no run of the family ran without
--     flash attention: the family's flash value (fitted, else the prior
--     above), the rule the presets follow for families without such runs.
-- @tparam table|nil calib the fold's calibration (calibrate.fit_rows)
-- @tparam table rows the rows the fold predicts (column -> string)
-- @treturn table calibration with the priors
-- @treturn table {<device> = {<field> = {value, rule}}} the priors used
-- @treturn table array of "device.field" a predicted row needs that is
--   left at the preset default (no fit, no prior)
function M.priors(calib, rows)
  local out = { devices = {} }
  for k, v in pairs(calib or {}) do if k ~= "devices" then out[k] = v end end
  for dev, f in pairs(calib and calib.devices or {}) do out.devices[dev] = copy(f) end
  local used, unfitted = {}, {}
  local U = M.FLASH_UTILIZATION
  local function flash_prior(fam)
    if not U[fam] then return nil end
    for _, other in ipairs(util.sorted_keys(calib and calib.devices or {})) do
      local ofam = calibration.family(other)
      local v = calib.devices[other].attention_efficiency
      if ofam ~= fam and v and U[ofam] then
        return v * U[fam] / U[ofam], ("%s flash fit x %.3f / %.3f (published FlashAttention-2 "
          .. "utilisation)"):format(ofam, U[fam], U[ofam])
      end
    end
    return U[fam], "published FlashAttention-2 utilisation"
  end
  local needs, order = {}, {}
  for _, row in ipairs(rows) do
    local dev = tostring(row.device):lower()
    if not needs[dev] then needs[dev] = {} order[#order + 1] = dev end
    for kind in pairs(calibration.evidence_of(row)) do needs[dev][kind] = true end
  end
  for _, dev in ipairs(order) do
    local entry = copy(calibration.fields_for(calib, dev))
    local need = needs[dev]
    local function set(field, v, rule)
      entry[field] = v
      used[dev] = used[dev] or {}
      used[dev][field] = { value = v, rule = rule }
    end
    if entry.attention_efficiency == nil and (need.flash or need.unfused) then
      local v, rule = flash_prior(calibration.family(dev))
      if v then set("attention_efficiency", v, rule) end
    end
    if entry.unfused_attention_efficiency == nil and need.unfused and entry.attention_efficiency then
      set("unfused_attention_efficiency", entry.attention_efficiency,
        "the family's flash-attention value")
    end
    for _, p in ipairs(calibration.FIELDS) do
      if entry[p.field] == nil and (not p.needs or need[p.needs]) then
        unfitted[#unfitted + 1] = dev .. "." .. p.field
      end
    end
    out.devices[dev] = entry
  end
  return out, used, unfitted
end

-- The efficiencies each fold fits on its training rows (nil where the fit
-- failed), folds[i]'s at [i]: on `jobs` worker processes
-- (apsearch.parallel) when jobs > 1, the folds being independent (each
-- worker a fork holding its own estimator contexts), else here.  A run
-- marked as a release gap measures its release, not the device: no
-- efficiency is fitted on it (it is still predicted).
local function fold_fits(folds, fit, path, jobs)
  local function work(i)
    local fold, train = folds[i], {}
    for _, row in ipairs(fold.train) do
      if not stacks.release_gap(row.software, row.model, row.device) then train[#train + 1] = row end
    end
    local ok, calib = pcall(fit, train, path .. " without " .. fold.group)
    return { calib = ok and calib or nil }
  end
  local fits = {}
  if jobs <= 1 or #folds <= 1 then
    for i = 1, #folds do fits[i] = work(i).calib end
    return fits
  end
  -- in runs of at most parallel.max_tasks folds (a task is a fold)
  local parallel = require "apsearch.parallel"
  for first = 1, #folds, parallel.max_tasks do
    local n = math.min(parallel.max_tasks, #folds - first + 1)
    parallel.run({ jobs = math.min(jobs, n), tasks = n, label = "validate --cv",
      work = function(i) return work(first + i - 1) end,
      on_result = function(i, v) fits[first + i - 1] = v.calib end })
  end
  return fits
end

--- Runs the cross-validation.
-- @tparam string path CSV in the validation schema
-- @tparam[opt] table opts {by = "source", log = function(line), fit = function(rows, label)
--   returning a calibration (tests replace the fit), jobs = worker
--   processes fitting the folds (default 1: here); the result is the same
--   whatever jobs}
-- @treturn table {file, by, folds = {{group, rows, in_sample = stats,
--   out_of_sample = stats, unfitted_devices (no device of their family in
--   the fit), unfitted_fields ("device.field" left at the preset default),
--   parameters (fitted), priors (M.priors)}}, in_sample = stats,
--   out_of_sample = stats, parameter_spread = {<device> = {<field> = {min, max, default}}},
--   when runs are marked as release gaps (apsearch.stacks.release_gap; no
--   fold fits on them) release_gap_cases, in_sample_without_release_gaps,
--   out_of_sample_without_release_gaps,
--   cases = out-of-sample cases (validate.run_case, with `group`),
--   summary = {cases, failed} (failed: cases with an `error`)}
function M.run(path, opts)
  opts = opts or {}
  local by = opts.by or "source"
  local log = opts.log or function() end
  local fit = opts.fit or function(rows, label)
    -- the rows that cannot be estimated are the file's failed cases
    -- (summary.failed): no fold fits on them
    return calibrate.fit_rows(rows, label, { log = log, skip_unestimated = true })
  end
  local rows = validate.load(path)
  local inside = validate.run(path)
  local in_by_id = {}
  for _, c in ipairs(inside.cases) do in_by_id[c.case_id] = c end
  local result = { schema_version = 1, file = path, by = by, folds = util.array(),
                   cases = util.array() }
  local all_out, all_in = {}, {}
  local kept_out, kept_in, gaps = {}, {}, {}
  local spread = {}
  local folds = M.folds(rows, by)
  -- one source leaves nothing to fit on: its "out-of-sample" figure would
  -- be the presets' in-sample error under another name
  if #folds < 2 then
    util.fail(path, "--cv " .. by, ("needs runs of at least 2 %ss to leave one out (got %d: %s)"):format(by,
      #folds, folds[1] and folds[1].group or "none"), nil, false)
  end
  local fits = fold_fits(folds, fit, path, opts.jobs or 1)
  for i, fold in ipairs(folds) do
    log(("crossval: fold %q: fitted on %d rows, predicting %d"):format(
      fold.group, #fold.train, #fold.test))
    local fitted = fits[i]
    local calib
    local priors, unfitted_fields
    calib, priors, unfitted_fields = M.priors(fitted, fold.test)
    local out_err, in_err, unfitted = {}, {}, {}
    for _, row in ipairs(fold.test) do
      if not calibration.fields_for(fitted, row.device) then unfitted[row.device] = true end
      local c = validate.run_case(row, calib)
      c.group = fold.group
      result.cases[#result.cases + 1] = c
      -- (a run measured in step time or TFLOP/s compares too)
      local e = validate.throughput_error(c)
      local ei = in_by_id[row.case_id] and validate.throughput_error(in_by_id[row.case_id])
      if e and ei then
        out_err[#out_err + 1], in_err[#in_err + 1] = e, ei
        all_out[#all_out + 1], all_in[#all_in + 1] = e, ei
        if c.release_gap then
          gaps[#gaps + 1] = c.case_id
        else
          kept_out[#kept_out + 1], kept_in[#kept_in + 1] = e, ei
        end
      end
    end
    for dev, fields in pairs(fitted and fitted.devices or {}) do
      spread[dev] = spread[dev] or {}
      for f, v in pairs(fields) do
        local s = spread[dev][f] or { min = v, max = v }
        s.min, s.max = math.min(s.min, v), math.max(s.max, v)
        spread[dev][f] = s
      end
    end
    result.folds[#result.folds + 1] = {
      group = fold.group, rows = #fold.test, train_rows = #fold.train,
      in_sample = validate.stats(in_err), out_of_sample = validate.stats(out_err),
      unfitted_devices = util.array(util.sorted_keys(unfitted)),
      unfitted_fields = util.array(unfitted_fields),
      parameters = fitted and fitted.devices or {},
      priors = priors,
    }
  end
  result.in_sample = validate.stats(all_in)
  result.out_of_sample = validate.stats(all_out)
  -- rows no fold could estimate (their `error` is in `cases`), as
  -- validate.run counts them
  local failed = 0
  for _, c in ipairs(result.cases) do if c.error then failed = failed + 1 end end
  result.summary = { cases = #result.cases, failed = failed }
  if #gaps > 0 then
    result.release_gap_cases = util.array(gaps)
    result.in_sample_without_release_gaps = validate.stats(kept_in)
    result.out_of_sample_without_release_gaps = validate.stats(kept_out)
  end
  result.parameter_spread = spread
  result.coverage = M.coverage(result)
  return result
end

--- Step-time residual of an out-of-sample case, log(measured step time /
-- estimated step time) = log(estimated tokens/s / measured tokens/s), and
-- its interval class; nil when the case has no throughput comparison.
local function step_residual(c)
  local meas = validate.measured_throughput(c)
  local pred = c.predicted and c.predicted.tokens_per_s_per_gpu
  if not (meas and pred and pred > 0) then return nil end
  local tr, cl = c.inputs.training, c.inputs.cluster
  local dev = type(cl.device) == "table" and (cl.device.base or cl.device.name) or cl.device
  return math.log(pred / meas), intervals.class_of(tr.framework, dev, tr.precision)
end

--- Peak-memory residual log(measured / estimated), or nil.
local function mem_residual(c)
  local meas = c.measured and c.measured.mem_gib
  local pred = c.predicted and c.predicted.mem_gib
  if not (meas and pred and pred > 0) then return nil end
  return math.log(meas / pred)
end

--- Peak-memory residuals of validate.run's result, by framework (the
-- class of intervals.of_estimate's memory interval), each class with the
-- number of sources its runs come from.
-- @tparam table res validate.run's result
-- @treturn table {<framework> = array of log(measured / estimated), with `sources`}
function M.mem_residuals(res)
  local by, seen = {}, {}
  for _, c in ipairs(res.cases) do
    local m = not c.error and mem_residual(c)
    if m then
      local fw = tostring(c.inputs.training.framework)
      if not by[fw] then by[fw], seen[fw] = { sources = 0 }, {} end
      table.insert(by[fw], m)
      local src = validate.source_key(c.source)
      if not seen[fw][src] then
        seen[fw][src] = true
        by[fw].sources = by[fw].sources + 1
      end
    end
  end
  return by
end

--- Residuals of the out-of-sample cases, step time by interval class and
-- peak memory pooled, optionally leaving one group out.
-- @tparam table res M.run's result
-- @tparam[opt] string except a group whose cases are left out
-- @treturn table {step = {<class> = array with `sources`}, mem = {pooled = array}}
function M.residuals(res, except)
  local step, mem, seen = {}, { pooled = {} }, {}
  for _, c in ipairs(res.cases) do
    if c.group ~= except and not c.error then
      local r, class = step_residual(c)
      if r then
        if not step[class] then step[class], seen[class] = { sources = 0 }, {} end
        table.insert(step[class], r)
        if not seen[class][c.group] then
          seen[class][c.group] = true
          step[class].sources = step[class].sources + 1
        end
      end
      local m = mem_residual(c)
      if m then table.insert(mem.pooled, m) end
    end
  end
  return { step = step, mem = mem }
end

--- Coverage of the intervals, leave-one-source-out: each group's runs
-- against intervals built from the other groups' residuals. A run whose
-- interval cannot be built (the other groups' residuals are too few for
-- the level, intervals.conformal_radius) is counted in `no_interval`, not
-- in `rows`.
-- @tparam table res M.run's result
-- @treturn table {level, step_time = {rows, covered, pct, no_interval},
--   mem_peak = {rows, covered, pct, no_interval},
--   by_group = {<group> = {rows, covered, no_interval}}}
function M.coverage(res)
  local cov = { level = intervals.LEVEL, step_time = { rows = 0, covered = 0, no_interval = 0 },
                mem_peak = { rows = 0, covered = 0, no_interval = 0 }, by_group = {} }
  for _, f in ipairs(res.folds) do
    local rest = M.residuals(res, f.group)
    local sb, mb = intervals.bounds(rest.step), intervals.bounds(rest.mem)
    local g = { rows = 0, covered = 0, no_interval = 0 }
    for _, c in ipairs(res.cases) do
      if c.group == f.group and not c.error then
        local r, class = step_residual(c)
        local iv = r and intervals.interval(1, sb, class)
        if iv then
          local hit = math.exp(r) >= iv.lo and math.exp(r) <= iv.hi
          g.rows, g.covered = g.rows + 1, g.covered + (hit and 1 or 0)
        elseif r then
          g.no_interval = g.no_interval + 1
        end
        local m = mem_residual(c)
        local ivm = m and intervals.interval(1, mb)
        if ivm then
          cov.mem_peak.rows = cov.mem_peak.rows + 1
          if math.exp(m) >= ivm.lo and math.exp(m) <= ivm.hi then
            cov.mem_peak.covered = cov.mem_peak.covered + 1
          end
        elseif m then
          cov.mem_peak.no_interval = cov.mem_peak.no_interval + 1
        end
      end
    end
    cov.by_group[f.group] = g
    cov.step_time.rows = cov.step_time.rows + g.rows
    cov.step_time.covered = cov.step_time.covered + g.covered
    cov.step_time.no_interval = cov.step_time.no_interval + g.no_interval
  end
  for _, k in ipairs({ "step_time", "mem_peak" }) do
    local t = cov[k]
    t.pct = t.rows > 0 and 100 * t.covered / t.rows or nil
  end
  return cov
end

--- The highest measured MFU per hardware generation and precision family
-- ("hopper/16bit"), in apsearch's convention: a run's estimated MFU scaled
-- by its measured over its estimated throughput.
-- @tparam table res M.run's result
-- @tparam[opt] table refs more validate.run results (the held-out
--   published sets, one per file): their dense runs raise a maximum `res`
--   sets (a maximum, not a fit); a generation `res` lacks is added only
--   when they hold intervals.MIN_ROWS dense runs of it from
--   intervals.MIN_SOURCES sets or more (one or two published runs, or one
--   set of functional tests, would flag every estimate of that hardware)
-- @treturn table {<generation/family> = {mfu, case, file (the cases
--   file's name), source}}
function M.best_mfu(res, refs)
  local best = {}
  -- the run's key and MFU, or nil (no measured throughput, or MoE when dense_only)
  local function mfu_of(c, dense_only)
    local meas = validate.measured_throughput(c)
    local p = c.predicted
    if not (meas and p and p.tokens_per_s_per_gpu and p.tokens_per_s_per_gpu > 0 and p.mfu) then return nil end
    if dense_only and (c.inputs.model.num_experts or 0) > 0 then return nil end
    local tr, cl = c.inputs.training, c.inputs.cluster
    local dev = type(cl.device) == "table" and (cl.device.base or cl.device.name) or cl.device
    return intervals.mfu_key(dev, tr.precision), p.mfu * meas / p.tokens_per_s_per_gpu
  end
  -- file: the cases file's name (case ids are unique within a file only)
  local function raise(to, key, mfu, c, file)
    if not to[key] or mfu > to[key].mfu then
      -- a GitHub address as its repository (the flag's line names it)
      local owner, repo = tostring(c.source):match("^https?://github%.com/([^/%s]+)/([^/%s]+)")
      to[key] = { mfu = mfu, case = tostring(c.case_id), file = file,
        source = owner and (owner .. "/" .. repo) or validate.source_key(c.source) }
    end
  end
  local function file_of(r) return tostring(r.file or "?"):match("([^/]+)$") end
  for _, c in ipairs(res.cases) do
    local key, mfu = mfu_of(c, false)
    if key then raise(best, key, mfu, c, file_of(res)) end
  end
  local new, rows, sets = {}, {}, {}
  for i, r in ipairs(refs or {}) do
    for _, c in ipairs(r.cases) do
      local key, mfu = mfu_of(c, true)
      if key and best[key] then
        raise(best, key, mfu, c, file_of(r))
      elseif key then
        raise(new, key, mfu, c, file_of(r))
        rows[key] = (rows[key] or 0) + 1
        sets[key] = sets[key] or {}
        sets[key][i] = true
      end
    end
  end
  for key, b in pairs(new) do
    local n = 0
    for _ in pairs(sets[key]) do n = n + 1 end
    if rows[key] >= intervals.MIN_ROWS and n >= intervals.MIN_SOURCES then best[key] = b end
  end
  return best
end

--- The shipped residual table as Lua source (lua/apsearch/intervals_data.lua):
-- step-time bounds from every out-of-sample residual of `res`; with
-- `moe_res` the step-time class of mixture-of-experts models
-- (intervals.MOE_CLASS) from its residuals, those of release-gap runs
-- left out, and never narrower than the pooled bounds; peak-memory bounds
-- from the measured peaks of `mem_res` (else of `res`), pooled and by
-- framework (intervals.bounds' rules: M.MIN_ROWS runs from M.MIN_SOURCES
-- sources for a class).
-- A pooled entry whose residuals are too few for the level keeps only
-- its `rows` (no interval is then given).
-- `moe_res` and `mem_res` are the shipped estimate's own results
-- (apsearch.validate.run): its defaults were fitted to no MoE run and
-- memory has no fitted parameter, so those residuals are out of sample
-- as they stand; a refit on the other MoE sources (M.run) would describe
-- a model no user gets (it gave a radius of 10.3 % against the shipped
-- estimate's 21 %).
-- @tparam table res M.run's result on the public runs
-- @tparam[opt] table moe_res validate.run's result on the public MoE runs
-- @tparam[opt] table mem_res validate.run's result on the public memory runs
-- @tparam[opt] table refs validate.run's results on the held-out published
--   sets, read only for best_mfu (M.best_mfu)
-- @treturn string
function M.data_source(res, moe_res, mem_res, refs)
  local all = M.residuals(res)
  local sb = intervals.bounds(all.step)
  local mb = intervals.bounds(mem_res and M.mem_residuals(mem_res) or all.mem)
  if moe_res then
    -- the MoE runs' own class: every residual but those of runs marked
    -- as a release gap (they measure the release)
    local r = {}
    for _, c in ipairs(moe_res.cases) do
      if not c.error and not c.release_gap then
        local v = step_residual(c)
        if v then r[#r + 1] = v end
      end
    end
    local q = intervals.conformal_radius(r, sb.level)
    -- never narrower than the pooled interval: a dozen MoE runs of three
    -- publications cannot show the MoE estimate more certain than the
    -- dense one
    if q and sb.pooled.hi and q < sb.pooled.hi then q = sb.pooled.hi end
    if q then sb.classes[intervals.MOE_CLASS] = { lo = -q, hi = q, rows = #r } end
  end
  -- residuals too few for the level (intervals.conformal_radius): the
  -- count alone, and apsearch.intervals gives no interval
  local function entry(b)
    if not b.lo then return ("{ rows = %d }"):format(b.rows) end
    return ("{ lo = %.6f, hi = %.6f, rows = %d }"):format(b.lo, b.hi, b.rows)
  end
  local lines = {
    "-- Generated by scripts/fit-intervals.sh from " .. tostring(res.file) ..
      (moe_res and (" and " .. tostring(moe_res.file)) or "") .. " (leave-one-",
    "-- source-out residuals, apsearch.crossval); do not edit. Bounds are",
    "-- -q .. q of log(measured / estimated), q the split-conformal radius",
    "-- of the residuals at the interval level (apsearch.intervals).",
    "return {",
    ("  step_time = { level = %.2f, pooled = %s, classes = {"):format(sb.level, entry(sb.pooled)),
  }
  for _, class in ipairs(util.sorted_keys(sb.classes)) do
    lines[#lines + 1] = ("    [%q] = %s,"):format(class, entry(sb.classes[class]))
  end
  lines[#lines + 1] = "  } },"
  lines[#lines + 1] = ("  mem_peak = { level = %.2f, pooled = %s, classes = {"):format(mb.level, entry(mb.pooled))
  for _, class in ipairs(util.sorted_keys(mb.classes)) do
    lines[#lines + 1] = ("    [%q] = %s,"):format(class, entry(mb.classes[class]))
  end
  lines[#lines + 1] = "  } },"
  lines[#lines + 1] = "  -- the highest MFU measured per hardware generation and precision"
  lines[#lines + 1] = "  -- family, in apsearch's convention (causal model FLOPs / the"
  lines[#lines + 1] = "  -- precision's peak): the estimate's MFU x measured / estimated tokens/s,"
  lines[#lines + 1] = "  -- over these runs" .. (refs and #refs > 0 and " and the held-out published sets" or "")
  lines[#lines + 1] = "  best_mfu = {"
  local best = M.best_mfu(res, refs)
  for _, k in ipairs(util.sorted_keys(best)) do
    local b = best[k]
    lines[#lines + 1] = ("    [%q] = { mfu = %.4f, case = %q, file = %q, source = %q },"):format(
      k, b.mfu, b.case, b.file, b.source)
  end
  lines[#lines + 1] = "  },"
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

return M
