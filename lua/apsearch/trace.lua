--- Reads a PyTorch profiler (Kineto) trace and measures what the host
-- spends per kernel launch (`apsearch calibrate --trace FILE`,
-- docs/accuracy.md "Host time").
--
-- A Kineto trace is Chrome trace-event JSON (plain or gzip):
-- {traceEvents = [{ph, cat, name, pid, tid, ts, dur, ...}], deviceProperties
-- = [{name, ...}], ...}; `ts` and `dur` are microseconds (the Chrome
-- trace-event format; `displayTimeUnit` changes the display only).  Runtime
-- API calls are cat "cuda_runtime" / "cuda_driver" (ROCm: "hip" names),
-- kernels cat "kernel", steps "ProfilerStep#N" user annotations.
--
-- Two measures, the device fields of src/core/layerprog.c:
--   host_seconds_per_kernel       the median gap between successive kernel
--                                 launches on a launching thread (pooled
--                                 over threads): what the framework's
--                                 Python code spends per kernel
--   host_seconds_per_loop_kernel  the median duration of the launch call
--                                 itself: a kernel launched from a C++ loop
-- Medians, so that a thread waiting at a sync (one long gap) does not move
-- them.  The shipped x86 defaults are these medians over three public
-- traces (src/core/presets.c).
-- @module apsearch.trace
local util = require "apsearch.util"

local M = {}

--- Largest trace file read (bytes, compressed as on disk).
M.MAX_FILE_BYTES = 1 << 30
--- Largest decompressed trace (bytes): the JSON and its decoded events
-- take about three times this in memory.  A longer profile: record one
-- rank and fewer steps (torch.profiler's schedule).
M.MAX_JSON_BYTES = 512 << 20
--- Bytes inflated per step.
local INFLATE_CHUNK = 1 << 16
-- (deflate expands at most about 1,032:1, so one step inflates at most
-- some 66 MB: a gzip bomb is refused near M.MAX_JSON_BYTES, not after
-- inflating gigabytes in 1 MiB bites)
--- Longest ProfilerStep a trace may hold, seconds: one day.  The
-- calibration file records the median step; a zero or a 1e294-second step
-- is a broken trace, not a measurement.
M.MAX_STEP_SECONDS = 86400
--- Fewest launch gaps for a measure.
M.MIN_LAUNCHES = 100
--- Microseconds per second (the trace-event format's unit).
local US = 1e-6

--- Runtime and driver calls that launch a kernel.
M.LAUNCH_CALLS = {
  cudaLaunchKernel = true, cudaLaunchKernelExC = true, cuLaunchKernel = true,
  cuLaunchKernelEx = true, cudaLaunchCooperativeKernel = true,
  hipLaunchKernel = true, hipExtLaunchKernel = true, hipModuleLaunchKernel = true,
  hipExtModuleLaunchKernel = true,
}

--- Kernel classes by a substring of the name (case-insensitive), first
-- match wins; a kernel none matches is counted as "unknown" and listed,
-- never guessed.
M.KERNEL_CLASSES = {
  { class = "nccl", patterns = { "nccl", "rccl" } },
  { class = "attention", patterns = { "flash", "fmha", "attn", "attention", "sdpa" } },
  { class = "gemm", patterns = { "gemm", "cutlass", "cublas", "xmma", "nvjet", "matmul", "wgmma",
    "hgemm", "sgemm", "Cijk_" } },
  { class = "elementwise", patterns = { "elementwise", "vectorized", "reduce", "softmax", "norm",
    "layer_norm", "rms", "copy", "fill", "cat", "index", "scatter", "gather", "adam", "multi_tensor",
    "triton", "fused", "cast", "amax", "quantize", "transpose", "embedding", "memset", "unrolled",
    "cub::", "sort", "scan" } },
}

local function fail(path, problem) util.fail(path, "trace", problem, nil, false) end

local GZIP_MAGIC = "\x1f\x8b"

-- Inflates the gzip member at raw[at..] into parts; returns the bytes
-- inflated so far and the compressed bytes the member took.
local function inflate_member(path, zlib, raw, at, parts, total)
  -- 15 + 32: zlib or gzip header, detected
  local stream = zlib.inflate(15 + 32)
  for i = at, #raw, INFLATE_CHUNK do
    local iok, out, eof, bytes_in = pcall(stream, raw:sub(i, i + INFLATE_CHUNK - 1))
    if not iok then fail(path, "not valid gzip (" .. tostring(out) .. ")") end
    total = total + #out
    if total > M.MAX_JSON_BYTES then
      fail(path, ("over %d MiB inflated: record fewer steps or one rank"):format(M.MAX_JSON_BYTES >> 20))
    end
    parts[#parts + 1] = out
    if eof then return total, bytes_in end
  end
  fail(path, "truncated gzip (no end of stream)")
end

--- The JSON text of a trace file: gzip (by its magic bytes, one member
-- or several) or plain.
-- @raise `<path>: trace: ...` when it cannot be read or inflated
function M.read_text(path)
  local raw, err = util.read_file(path, M.MAX_FILE_BYTES)
  if not raw then fail(path, "cannot read: " .. tostring(err)) end
  if raw:sub(1, 2) ~= GZIP_MAGIC then return raw end
  local ok, zlib = pcall(require, "zlib")
  if not ok then fail(path, "gzip trace needs lua-zlib (Debian package lua-zlib)") end
  local parts, total, at = {}, 0, 1
  -- one gzip member after another (gzip -c a b, or cat a.gz b.gz)
  while at <= #raw do
    if raw:sub(at, at + 1) ~= GZIP_MAGIC then
      fail(path, ("%d bytes after the gzip stream that are not gzip"):format(#raw - at + 1))
    end
    local used
    total, used = inflate_member(path, zlib, raw, at, parts, total)
    at = at + used
  end
  return table.concat(parts)
end

--- Loads a trace: its events and its devices.
-- @tparam string path
-- @treturn table `{events = {...}, devices = {name...}, path}`
-- @raise `<path>: trace: ...` on a file that is not a trace
function M.load(path)
  local text = M.read_text(path)
  local cjson = require "cjson.safe"
  local doc, err = cjson.decode(text)
  if doc == nil then
    -- one JSON object per line (an Nsight Systems `nsys export` NDJSON):
    -- said as such, not as a JSON syntax error at its second object
    local first = text:match("^%s*(%b{})%s*\n%s*{")
    if first and cjson.decode(first) then
      fail(path, "one JSON object per line (an Nsight Systems export, or traces joined?): apsearch reads one " ..
        "PyTorch profiler (Kineto) Chrome trace, torch.profiler's export_chrome_trace or " ..
        "tensorboard_trace_handler output")
    end
    fail(path, "not valid JSON (" .. tostring(err) .. ")")
  end
  local events = type(doc) == "table" and (doc.traceEvents or (doc[1] and doc)) or nil
  if type(events) ~= "table" then fail(path, "no traceEvents array") end
  local devices, memory = {}, {}
  for _, d in ipairs(type(doc.deviceProperties) == "table" and doc.deviceProperties or {}) do
    if type(d) == "table" and type(d.name) == "string" then
      devices[#devices + 1] = d.name
      memory[#devices] = math.type(d.totalGlobalMem) and d.totalGlobalMem or tonumber(d.totalGlobalMem)
    end
  end
  return { events = events, devices = devices, memory = memory, path = path }
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n == 0 then return nil end
  if n % 2 == 1 then return xs[(n + 1) // 2] end
  return (xs[n // 2] + xs[n // 2 + 1]) / 2
end

-- A finite, non-negative time field of an event, in microseconds.
local function time_of(path, e, key, i)
  local v = e[key]
  if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge then
    fail(path, ("traceEvents[%d] (%s): %s must be a finite number of microseconds (got %s)"):format(
      i, tostring(e.name), key, util.describe(v)))
  end
  return v
end

--- The class of a kernel name (M.KERNEL_CLASSES), or "unknown".
function M.kernel_class(name)
  local n = tostring(name):lower()
  for _, c in ipairs(M.KERNEL_CLASSES) do
    for _, p in ipairs(c.patterns) do
      if n:find(p:lower(), 1, true) then return c.class end
    end
  end
  return "unknown"
end

-- Launch calls by thread, kernels by class, step durations.
local function scan(t)
  local threads, classes, unknown, steps = {}, {}, {}, {}
  local launches = 0
  for i, e in ipairs(t.events) do
    if type(e) == "table" and e.ph == "X" then
      if M.LAUNCH_CALLS[e.name] then
        local key = tostring(e.pid) .. "/" .. tostring(e.tid)
        threads[key] = threads[key] or {}
        local th = threads[key]
        th[#th + 1] = { ts = time_of(t.path, e, "ts", i), dur = time_of(t.path, e, "dur", i) }
        launches = launches + 1
      elseif e.cat == "kernel" then
        local c = M.kernel_class(e.name)
        classes[c] = (classes[c] or 0) + 1
        if c == "unknown" then unknown[tostring(e.name)] = (unknown[tostring(e.name)] or 0) + 1 end
      elseif e.cat == "user_annotation" and tostring(e.name):match("^ProfilerStep#%d+$") then
        local sec = time_of(t.path, e, "dur", i) * US
        if not (sec > 0 and sec <= M.MAX_STEP_SECONDS) then
          fail(t.path, ("event %d (%s): dur %s us is not a training step's length (0 to %d s)"):format(
            i, tostring(e.name), util.describe(e.dur), M.MAX_STEP_SECONDS))
        end
        steps[#steps + 1] = sec
      end
    end
  end
  return threads, launches, classes, unknown, steps
end

--- Measures a loaded trace.
-- @tparam table t from M.load
-- @treturn table `{host_seconds_per_kernel, host_seconds_per_loop_kernel,
--   launches, gaps, threads, kernels = {class = count}, unknown = {{name,
--   count}...} (most frequent first), step_seconds (median of the
--   ProfilerStep annotations, nil without), steps}`
-- @raise `<path>: trace: ...` with fewer than M.MIN_LAUNCHES launch gaps
function M.measure(t)
  local threads, launches, classes, unknown, steps = scan(t)
  local gaps, durs, nthreads = {}, {}, 0
  for _, th in pairs(threads) do
    nthreads = nthreads + 1
    table.sort(th, function(a, b) return a.ts < b.ts end)
    for k, l in ipairs(th) do
      durs[#durs + 1] = l.dur * US
      if k > 1 then gaps[#gaps + 1] = (l.ts - th[k - 1].ts) * US end
    end
  end
  if #gaps < M.MIN_LAUNCHES then
    fail(t.path, ("%d kernel launch gaps (runtime calls %s) where %d are needed: not a GPU training trace " ..
      "with CPU activities recorded"):format(#gaps, "cudaLaunchKernel / hipLaunchKernel", M.MIN_LAUNCHES))
  end
  local ulist = {}
  for name, n in pairs(unknown) do ulist[#ulist + 1] = { name = name, count = n } end
  table.sort(ulist, function(a, b) return a.count > b.count or (a.count == b.count and a.name < b.name) end)
  local q = {}
  table.sort(gaps)
  for k, f in ipairs({ 0.25, 0.5, 0.75 }) do q[k] = gaps[math.max(1, math.ceil(f * #gaps))] end
  return {
    gap_quartiles = q,
    host_seconds_per_kernel = median(gaps), host_seconds_per_loop_kernel = median(durs),
    launches = launches, gaps = #gaps, threads = nthreads, kernels = classes, unknown = ulist,
    step_seconds = median(steps), steps = #steps,
  }
end

--- Device presets by the GPU names CUDA or HIP reports (deviceProperties.name),
-- first match wins; `preset = false`: a part with no preset (its trace
-- needs --device).  Grace Hopper and the PCIe H100 are not the SXM part;
-- CUDA names the export variants "NVIDIA H800 80GB HBM3" (SXM5, the PCIe
-- card "NVIDIA H800 PCIe") and "NVIDIA A800-SXM4-80GB"; the H20 is
-- "NVIDIA H20" (nvidia-smi), matched whole so that no H200 is taken for it.
M.DEVICE_NAMES = {
  { pattern = "gh200", preset = false },
  { pattern = "h100 pcie", preset = false },
  { pattern = "h100 nvl", preset = false },
  { pattern = "a100.*pcie", preset = false },
  { pattern = "h800 pcie", preset = false },
  { pattern = "h800 nvl", preset = false },
  { pattern = "a800.*pcie", preset = false },
  { pattern = "a800.*40gb", preset = false },
  { pattern = "h800", preset = "h800-sxm-80gb" },
  { pattern = "a800", preset = "a800-sxm4-80gb" },
  { pattern = "h20$", preset = "h20-96gb" },
  { pattern = "a100.*40gb", preset = "a100-sxm4-40gb" },
  -- an A100 named without its memory (A100-PG509-200): by totalGlobalMem
  { pattern = "a100", preset = "a100-sxm4-40gb", max_bytes = 48e9, unnamed_memory = true },
  { pattern = "a100", preset = "a100-sxm4-80gb" },
  { pattern = "h200", preset = "h200-sxm-141gb" },
  { pattern = "h100", preset = "h100-sxm-80gb" },
  { pattern = "gb300", preset = "gb300" },
  { pattern = "b300", preset = "b300" },
  { pattern = "gb200", preset = "gb200" },
  { pattern = "b200", preset = "b200" },
  { pattern = "mi300x", preset = "mi300x-192gb" },
  { pattern = "mi325x", preset = "mi325x-256gb" },
  { pattern = "mi355x", preset = "mi355x-288gb" },
  { pattern = "mi350x", preset = false },
}

--- The device preset of a trace's GPU, or nil.
function M.preset_of(t)
  for i, name in ipairs(t.devices) do
    -- a MIG slice names its part first ("A100-SXM4-80GB MIG 3g.40gb") and
    -- reports the slice's memory: the part is what the preset is of
    local n, bytes = name:lower(), (t.memory or {})[i]
    local mig = n:find("%s+mig[%s%d]")
    if mig then n, bytes = n:sub(1, mig - 1), nil end
    for _, d in ipairs(M.DEVICE_NAMES) do
      -- a rule for a name without its memory size, by the memory reported
      local applies = not (d.unnamed_memory and n:find("%d+gb"))
        and not (d.max_bytes and not (bytes and bytes <= d.max_bytes))
      if applies and n:find(d.pattern) then
        return d.preset or nil
      end
    end
  end
  return nil
end

--- How far from the preset's value a measured host cost is said to be
-- (a factor): a trace whose launch gaps hold other runtime work (copies,
-- event records, cuDNN's setup) or come from inference gives such values.
M.HOST_NOTE_FACTOR = 3

-- One line when the measured host cost is M.HOST_NOTE_FACTOR or more away
-- from the device preset's, or when the trace has no training steps; nil
-- otherwise.
local function plausibility_note(path, m, preset)
  local ok, dev = pcall(require("apsearch.core").device_preset, preset)
  local ref = ok and dev.host_seconds_per_kernel or nil
  local v = m.host_seconds_per_kernel
  local parts = {}
  if ref and ref > 0 and (v > ref * M.HOST_NOTE_FACTOR or v < ref / M.HOST_NOTE_FACTOR) then
    local q = m.gap_quartiles
    parts[#parts + 1] = ("host %.1f us per kernel is %.1fx the %s preset's %.0f us (gaps between launches: " ..
      "quartiles %.1f / %.1f / %.1f us); gaps that hold other runtime work (copies, event records, syncs) " ..
      "count too, so profile a training step of the model you estimate"):format(v * 1e6, v / ref, preset,
      ref * 1e6, q[1] * 1e6, q[2] * 1e6, q[3] * 1e6)
  end
  if m.steps == 0 then
    parts[#parts + 1] = "no ProfilerStep annotation: not torch.profiler's record of a training loop?"
  end
  if #parts == 0 then return nil end
  return ("apsearch: note: %s: %s"):format(util.printable(path), table.concat(parts, "; "))
end

--- A calibration (apsearch.calibration's format) with the trace's host
-- measures for one device.
-- @tparam string path the trace
-- @tparam[opt] string device preset name; default: the trace's GPU
-- @treturn table calibration
-- @treturn table the measures (M.measure)
-- @raise `<path>: trace: ...` when the device is neither given nor known
function M.calibration(path, device)
  local t = M.load(path)
  local m = M.measure(t)
  local own = M.preset_of(t)
  local preset = device or own
  if device and t.devices[1] and device:lower() ~= own then
    util.log("apsearch: note: %s ran on %s%s; its host costs are written for --device %s (a host property: right " ..
      "when that device's hosts are the same CPUs)", path, t.devices[1], own and (" (" .. own .. ")") or "", device)
  end
  if not preset then
    util.fail(path, "deviceProperties", "no device preset for the trace's GPU (" ..
      (t.devices[1] or "none recorded") .. "): give --device NAME", nil, false)
  end
  local calibration = require "apsearch.calibration"
  local calib = {
    schema_version = calibration.SCHEMA_VERSION,
    name = "trace " .. util.basename(path),
    fitted_on = path,
    devices = { [preset] = {
      host_seconds_per_kernel = m.host_seconds_per_kernel,
      host_seconds_per_loop_kernel = m.host_seconds_per_loop_kernel,
    } },
    trace = { launches = m.launches, launch_gaps = m.gaps, threads = m.threads, kernels = m.kernels,
      step_seconds = m.step_seconds, steps = m.steps, gpu = t.devices[1] },
  }
  -- what --calibration will accept, checked before anything is written
  local ok, err = pcall(calibration.check, calib, path .. ": measured")
  if not ok then
    error(tostring(err) .. " (are the trace's ts and dur in microseconds?)", 0)
  end
  local note = plausibility_note(path, m, preset)
  if note then
    -- folded at the table's width on a terminal, as the other notes
    local common = require "apsearch.format.common"
    local tty = require("apsearch.core").isatty(2)
    util.log("%s", tty and common.fold_text(note, require("apsearch.format.table").max_width) or note)
  end
  return calib, m
end

return M
