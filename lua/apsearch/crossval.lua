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
-- the preset defaults for that device (nothing to fit it on), which the
-- result names.
-- @module apsearch.crossval
local validate = require "apsearch.validate"
local calibrate = require "apsearch.calibrate"
local util = require "apsearch.util"

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

--- Runs the cross-validation.
-- @tparam string path CSV in the validation schema
-- @tparam[opt] table opts {by = "source", log = function(line), fit = function(rows, label)
--   returning a calibration (tests replace the fit)}
-- @treturn table {file, by, folds = {{group, rows, in_sample = stats,
--   out_of_sample = stats, unfitted_devices, parameters}}, in_sample = stats,
--   out_of_sample = stats, parameter_spread = {<device> = {<field> = {min, max, default}}},
--   cases = out-of-sample cases (validate.run_case, with `group`)}
function M.run(path, opts)
  opts = opts or {}
  local by = opts.by or "source"
  local log = opts.log or function() end
  local fit = opts.fit or function(rows, label)
    return calibrate.fit_rows(rows, label, { log = log })
  end
  local rows = validate.load(path)
  local inside = validate.run(path)
  local in_by_id = {}
  for _, c in ipairs(inside.cases) do in_by_id[c.case_id] = c end
  local result = { schema_version = 1, file = path, by = by, folds = util.array(),
                   cases = util.array() }
  local all_out, all_in = {}, {}
  local spread = {}
  for _, fold in ipairs(M.folds(rows, by)) do
    log(("crossval: fold %q: fitting on %d rows, predicting %d"):format(
      fold.group, #fold.train, #fold.test))
    local ok, calib = pcall(fit, fold.train, path .. " without " .. fold.group)
    if not ok then calib = nil end
    local out_err, in_err, unfitted = {}, {}, {}
    for _, row in ipairs(fold.test) do
      if not (calib and calib.devices and calib.devices[row.device]) then unfitted[row.device] = true end
      local c = validate.run_case(row, calib)
      c.group = fold.group
      result.cases[#result.cases + 1] = c
      local e = c.error_pct and c.error_pct.tokens_per_s_per_gpu
      local ei = in_by_id[row.case_id] and in_by_id[row.case_id].error_pct
        and in_by_id[row.case_id].error_pct.tokens_per_s_per_gpu
      if e and ei then
        out_err[#out_err + 1], in_err[#in_err + 1] = e, ei
        all_out[#all_out + 1], all_in[#all_in + 1] = e, ei
      end
    end
    for dev, fields in pairs(calib and calib.devices or {}) do
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
      parameters = calib and calib.devices or {},
    }
  end
  result.in_sample = validate.stats(all_in)
  result.out_of_sample = validate.stats(all_out)
  result.parameter_spread = spread
  return result
end

return M
