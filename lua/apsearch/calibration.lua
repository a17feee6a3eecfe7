--- Calibration files: loading, checking, and applying them to a cluster.
--
-- A calibration file is JSON written by `apsearch calibrate`:
-- {schema_version, name, fitted_on, rows, loss_before, loss_after,
--  devices = {<preset name> = {<field> = value}}, training = {}}.
-- Only the fields of FIELDS may appear under a device.
local core = require "apsearch.core"
local util = require "apsearch.util"

local M = {}

--- Version of the file format `apsearch calibrate` writes.
M.SCHEMA_VERSION = 1

--- Calibrated device fields with their physical bounds. `needs` names the
-- runs that inform a field (M.evidence_of): a field is fitted for a
-- family only when the cases hold such a run of it -- fp8 GEMMs from fp8
-- runs, flash attention from runs with flash attention, unfused attention
-- from runs without.
M.FIELDS = {
  { field = "gemm_efficiency", lo = 0.30, hi = 0.95, needs = "bf16" },
  -- k0 of the GEMM pipeline term K / (K + k0) (src/core/gemm.c): fitted
  -- with the tile and wave terms to GEMM microbenchmarks (presets.c
  -- APS_GEMM_K0), never to step times (a step's GEMMs barely vary in K,
  -- so a step time mistakes it for the efficiency): no row gives
  -- "microbenchmark" evidence; `calibrate --trace` fits it from a
  -- profile's GEMMs when their K spans a factor of 2 (apsearch.trace
  -- gemm_fit), and a calibration file may set it
  { field = "gemm_half_dim", lo = 0.0, hi = 4096.0, needs = "microbenchmark" },
  { field = "attention_efficiency", lo = 0.10, hi = 0.90, needs = "flash" },
  { field = "unfused_attention_efficiency", lo = 0.10, hi = 0.90, needs = "unfused" },
  { field = "fp8_gemm_efficiency", lo = 0.20, hi = 0.90, needs = "fp8" },
  -- the host's seconds per kernel launched from Python and from a C++
  -- loop (src/core/layerprog.c): measured by `calibrate --trace`
  -- (apsearch.trace), never fitted to cases (a step time alone does not
  -- separate the host from the kernels: no row is "trace" evidence);
  -- bounded as the core bounds them (presets.c APS_MAX_HOST_SECONDS)
  { field = "host_seconds_per_kernel", lo = 0.0, hi = 1e-2, needs = "trace" },
  { field = "host_seconds_per_loop_kernel", lo = 0.0, hi = 1e-2, needs = "trace" },
  -- the host's seconds per GEMM of TransformerEngine's per-expert loop:
  -- no trace apsearch reads separates it yet, so only a hand-written
  -- calibration sets it
  { field = "host_seconds_per_loop_gemm", lo = 0.0, hi = 1e-2, needs = "trace" },
  -- the GPU's gap between two queued kernels of a stream
  -- (src/core/layerprog.c): measured by `calibrate --trace` on the traced
  -- GPU (apsearch.trace queued_gaps), never fitted to cases
  { field = "gpu_seconds_per_kernel", lo = 0.0, hi = 1e-2, needs = "trace" },
  -- the shortest a kernel runs on the traced GPU (the 1st percentile of
  -- its kernels' durations, apsearch.trace min_kernel_measure)
  { field = "gpu_min_kernel_seconds", lo = 0.0, hi = 1e-2, needs = "trace" },
}

--- Whether a stack's profile sets, for a device, a field that evidence
-- `kind` informs (M.FIELDS `needs`): that stack's runs then say nothing
-- of the field a calibration across stacks fits (M.apply keeps the
-- profile's value for them).
-- @tparam string|nil stack stack identifier
-- @tparam string device preset name
-- @tparam string kind an evidence kind of M.evidence_of
-- @treturn boolean
function M.profile_covers(stack, device, kind)
  local kept = require("apsearch.stacks").profile_fields(stack, device)
  if not kept then return false end
  for _, p in ipairs(M.FIELDS) do
    if p.needs == kind and kept[p.field] ~= nil then return true end
  end
  return false
end

--- The kinds of evidence a cases row gives (the `needs` of M.FIELDS).
-- @tparam table row column -> string (validation schema)
-- @treturn table {fp8 = true|nil, flash = true|nil, unfused = true|nil}
function M.evidence_of(row)
  -- the kernel the run got, not the one it asked for (apsearch.te_attention)
  local flash = require("apsearch.te_attention").of_row(row, M.family(row.device))
  local p = row.precision
  return { fp8 = p == "fp8" or nil, flash = flash or nil,
           unfused = (not flash) or nil,
           bf16 = (p == "bf16" or p == "fp16" or p == "fp32") or nil }
end

--- Reads and checks a calibration file: one calibration, or one per
-- software stack ({stacks = {<stack id> = calibration}}, written by
-- `apsearch calibrate --group software`).
-- @raise `<file>: ...` on a malformed file or an unknown field
function M.load(path)
  local cjson = require "cjson.safe"
  local text, err = util.read_file(path)
  if not text then error(path .. ": " .. tostring(err), 0) end
  util.refuse_nul(path, text)
  local c, jerr = cjson.decode(text)
  if type(c) ~= "table" then error(path .. ": not valid JSON (" .. tostring(jerr) .. ")", 0) end
  util.refuse_duplicate_key(path, text)
  -- absent in a hand-written file: the current version
  if c.schema_version ~= nil and c.schema_version ~= M.SCHEMA_VERSION then
    error(("%s: schema_version: expected %d (got %s)"):format(path, M.SCHEMA_VERSION,
      util.describe(c.schema_version)), 0)
  end
  -- `calibrate --log` names the job's stack: an unknown one would never
  -- match a run's, a typo kept silently
  if type(c.log) == "table" and c.log.stack ~= nil and not require("apsearch.stacks").stack(c.log.stack) then
    error(("%s: log.stack: unknown stack %s; known stacks: %s"):format(path, util.describe(c.log.stack),
      table.concat(require("apsearch.stacks").ids(), ", ")), 0)
  end
  if c.stacks ~= nil then
    local stacks = require "apsearch.stacks"
    if type(c.stacks) ~= "table" or c.devices ~= nil then
      error(path .. ": stacks: expected an object of calibrations, and no devices beside it", 0)
    end
    for id, sub in pairs(c.stacks) do
      if not stacks.stack(id) then
        error(("%s: stacks.%s: unknown stack; known stacks: %s"):format(
          path, tostring(id), table.concat(stacks.ids(), ", ")), 0)
      end
      if type(sub) ~= "table" then error(path .. ": stacks." .. id .. ": expected an object", 0) end
      c.stacks[id] = M.check(sub, path .. ": stacks." .. id)
    end
    c.name = c.name or path
    return c
  end
  return M.check(c, path)
end

--- Checks one calibration table (devices, training); `where` prefixes
-- the messages.
function M.check(c, where)
  local path = where
  if type(c.devices) ~= "table" then error(path .. ": devices: expected an object", 0) end
  -- a profile's record (`calibrate --trace`): an object with its launch
  -- count; a calibration that has one replaces a stack's benchmarked
  -- fields (M.apply), so no other value may stand in for it
  if c.trace ~= nil and not (type(c.trace) == "table" and type(c.trace.launches) == "number") then
    error(("%s: trace: expected the object calibrate --trace writes (with its launches) (got %s)"):format(
      path, util.describe(c.trace)), 0)
  end
  -- no training field is calibrated (yet): an empty object or nothing
  if c.training ~= nil and (type(c.training) ~= "table" or next(c.training) ~= nil) then
    error(("%s: training: expected an empty object, no training field is calibrated (got %s)"):format(
      path, util.describe(c.training)), 0)
  end
  for dev, fields in pairs(c.devices) do
    if type(fields) ~= "table" then error(path .. ": devices." .. tostring(dev) .. ": expected an object", 0) end
    local ok = pcall(core.device_preset, dev)
    if not ok then
      local names = {}
      for i, d in ipairs(core.device_presets()) do names[i] = d.name end
      error(path .. ": devices." .. util.printable(tostring(dev)) .. ": " ..
        require("apsearch.suggest").problem("unknown device preset", tostring(dev), names), 0)
    end
    for k, v in pairs(fields) do
      local known = false
      for _, p in ipairs(M.FIELDS) do known = known or p.field == k end
      if not known then
        local names = {}
        for i, p in ipairs(M.FIELDS) do names[i] = p.field end
        error(path .. ": devices." .. dev .. "." .. tostring(k) .. ": "
          .. require("apsearch.suggest").unknown("not a calibrated field", k, names), 0)
      end
      local b
      for _, p in ipairs(M.FIELDS) do if p.field == k then b = p end end
      if type(v) ~= "number" or v ~= v or v < b.lo or v > b.hi then
        error(("%s: devices.%s.%s: expected a number in [%g, %g] (got %s)"):format(
          path, dev, k, b.lo, b.hi, util.describe(v)), 0)
      end
    end
  end
  -- preset names match case-insensitively: store them lower-case, as
  -- apply() looks them up
  local devices = {}
  for dev, fields in pairs(c.devices) do
    local key = dev:lower()
    if devices[key] then
      error(("%s: devices: %q and another spelling name the same preset %s"):format(path, dev, key), 0)
    end
    devices[key] = fields
  end
  c.devices = devices
  c.training = c.training or {}
  c.name = c.name or path
  return c
end

--- Efficiency families: device presets with the same tensor cores and
-- kernel libraries (an H100 SXM, its 500 W variant, the H200 and the
-- H800 export variant; the A100 and A800; B200 and
-- GB200), whose fitted efficiencies are shared (`apsearch calibrate` fits
-- one value per family and field; each device keeps its own peaks,
-- bandwidths and memory).  Blackwell Ultra (B300/GB300) is its own
-- family: its attention (softmax) throughput differs from Blackwell's
-- (NVIDIA Blackwell Ultra datasheet, 2025).  AMD's MI300X and MI325X
-- (one CDNA 3 compute die, ROCm kernels and RCCL) are "cdna3", so that a
-- calibration fitted on NVIDIA runs never applies to them; the MI355X
-- (CDNA 4, its MFMA rates doubled) is "cdna4", apart from CDNA 3.  The
-- H20 (a GH100 with its tensor rate cut) is a family of its own: a
-- calibration of the H100's fractions of peak does not reach it.  A name matching
-- no pattern is a family of its own.  Order matters: the first match wins.
M.FAMILIES = {
  { pattern = "^a[18]00", family = "ampere" },
  { pattern = "^h[128]00", family = "hopper" },
  { pattern = "^g?b300", family = "blackwell-ultra" },
  { pattern = "^g?b200", family = "blackwell" },
  { pattern = "^mi3[02][05]x", family = "cdna3" },
  { pattern = "^mi35[05]x", family = "cdna4" },
}

--- The efficiency family of a device preset name (M.FAMILIES).
-- @tparam string name preset name (case-insensitive)
-- @treturn string family, or the lower-cased name itself
function M.family(name)
  name = tostring(name):lower()
  for _, f in ipairs(M.FAMILIES) do
    if name:match(f.pattern) then return f.family end
  end
  return name
end

--- The calibrated fields for a device: its own entry, else the entry of
-- a device of its family (the first by name), else nil.
-- @tparam table calib one calibration ({devices = {...}})
-- @tparam string name device preset name
-- @treturn table|nil field -> value
function M.fields_for(calib, name)
  if not (calib and calib.devices and name) then return nil end
  name = name:lower()
  if calib.devices[name] then return calib.devices[name] end
  local fam = M.family(name)
  for _, dev in ipairs(util.sorted_keys(calib.devices)) do
    if M.family(dev) == fam then return calib.devices[dev] end
  end
  return nil
end

--- The calibration of one stack in a calibration table: the table itself
-- when it is not grouped, the stack's entry when it is (nil: none).
function M.for_stack(calib, stack)
  if not calib then return nil end
  if calib.stacks then return stack and calib.stacks[stack] or nil end
  return calib
end

--- Applies a calibration to a cluster table (in place): the device's
-- fields are overridden when its preset name, or a device of its family
-- (fields_for), has an entry. An entry with attention_efficiency and no
-- unfused_attention_efficiency (fitted on flash runs only, or written
-- before the field existed) gives unfused attention that flash value,
-- unless the device table sets it: the rule the presets follow and
-- apsearch.crossval.priors applies to a fold. A grouped
-- calibration applies the entry of `stack` (nothing when it has none).
-- A field the stack's profile sets for the device (a kernel benchmark,
-- apsearch.stacks.profile_fields) is kept against a calibration fitted
-- across stacks, which no run of that stack informed (`calibrate` leaves
-- such rows out of that field's fit); a grouped calibration's entry and a
-- calibration from one job's log (`calibrate --log`, its `log` field) on a
-- job of that stack (`log.stack`), each fitted on the stack's own runs,
-- replace it, and so do a calibration from a profile of the user's own
-- job (`calibrate --trace`, its `trace` field) and `over_profile`.
-- @param cluster normalized or policy cluster table
-- @param calib calibration table (or nil)
-- @param stack stack identifier (apsearch.stacks.resolve), for a grouped one
-- @tparam[opt] boolean over_profile replace the stack profile's fields too
-- @treturn table the cluster
-- @treturn boolean whether an entry applied (false: the calibration, or
--   its stack's, has none for the device or its family)
-- @treturn table names of the entry's fields kept at the profile's value
--   (sorted; empty when none)
function M.apply(cluster, calib, stack, over_profile)
  -- a log's fit is its job's stack's own (`log.stack`; a file written
  -- before it was recorded: any stack's)
  local log = calib ~= nil and type(calib.log) == "table" and calib.log
  -- a trace's fit is of the kernels the user's own job ran
  over_profile = over_profile or (calib ~= nil and calib.stacks ~= nil)
    or (log and (log.stack == nil or log.stack == stack))
    or (calib ~= nil and type(calib.trace) == "table") or false
  calib = M.for_stack(calib, stack)
  if not calib then return cluster, false, {} end
  local dev = cluster.device
  local name = M.device_name(cluster)
  local fields = M.fields_for(calib, name)
  if not fields then return cluster, false, {} end
  local profile = not over_profile and require("apsearch.stacks").profile_fields(stack, name) or {}
  if type(dev) == "string" then dev = { base = dev } end
  local kept = {}
  for k, v in pairs(fields) do
    if profile[k] == nil then dev[k] = v else kept[#kept + 1] = k end
  end
  table.sort(kept)
  if fields.unfused_attention_efficiency == nil and dev.unfused_attention_efficiency == nil then
    dev.unfused_attention_efficiency = fields.attention_efficiency
  end
  cluster.device = dev
  return cluster, true, kept
end

--- The device name a cluster table runs (its preset, or the base of a
-- device table).
-- @param cluster policy cluster table
-- @treturn string|nil
function M.device_name(cluster)
  local dev = cluster and cluster.device
  return type(dev) == "string" and dev or (type(dev) == "table" and (dev.base or dev.name)) or nil
end

return M
