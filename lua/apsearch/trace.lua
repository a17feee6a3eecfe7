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
--
-- And, when the profile recorded shapes (torch.profiler's
-- `record_shapes=True`), the large-GEMM efficiency of the device
-- (`gemm_efficiency`, and `fp8_gemm_efficiency` from fp8 GEMMs): every
-- `aten::mm` / `aten::addmm` / `aten::_scaled_mm` with its operands' dims
-- and types is matched to the kernels launched inside it (same thread,
-- the launch within the op's span; the runtime call's `correlation` is
-- the kernel's), and the efficiency is the one at which apsearch's own
-- price of those GEMMs (src/core/gemm.c: tile, wave and K-depth factors,
-- fixed time) sums to the kernels' measured time (M.gemm_fit).
-- @module apsearch.trace
local util = require "apsearch.util"

local M = {}

--- Largest trace file read (bytes, compressed as on disk; a plain JSON
-- one is bounded by M.MAX_JSON_BYTES).
M.MAX_FILE_BYTES = 1 << 30
--- Largest decompressed trace (bytes): the JSON and its decoded events
-- take about three times this in memory.  A longer profile: record one
-- rank and fewer steps (torch.profiler's schedule).
M.MAX_JSON_BYTES = 512 << 20
--- Most memory decoding a trace's JSON may take (bytes, as
-- apsearch.core.json_decoded_bytes's upper estimate has it before
-- decoding).  The two public profiles in tests/fixtures/traces estimate
-- at 7.2 and 8.3 times their text (they decode into 2.2 and 2.8 times),
-- so a profile of M.MAX_JSON_BYTES is read; half a gigabyte of
-- `[{},{},...]` (which 0.5 MB of gzip inflates to) would take some 16 GB
-- and is refused.
M.MAX_DECODED_BYTES = 6 << 30
--- Most gzip members a trace may hold: a profiler writes one, `cat a.gz
-- b.gz` a few; each costs a stream of its own (a breaker's file of 5 M
-- empty members took 254 s).
M.MAX_GZIP_MEMBERS = 1024
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

--- aten ops that run one GEMM whose shape the profiler records: the
-- positions in `Input Dims` of the M x K and K x N operands.  `aten::bmm`
-- and the attention ops are left out (the estimate prices no batched
-- GEMM at such a shape); `aten::linear` / `aten::matmul` are the
-- composites that call these.
M.GEMM_OPS = {
  ["aten::mm"] = { a = 1, b = 2 },
  ["aten::addmm"] = { a = 2, b = 3 },
  ["aten::_scaled_mm"] = { a = 1, b = 2 },
}

--- The precision of a GEMM by its first operand's `Input type` (c10's
-- ScalarType names as the profiler writes them), and the calibrated field
-- it measures.  float32 GEMMs (FP32 or TF32, which the trace does not say)
-- are not a precision the estimate prices, and are counted only.
M.GEMM_TYPES = {
  ["c10::BFloat16"] = "bf16", ["c10::Half"] = "fp16",
  ["c10::Float8_e4m3fn"] = "fp8", ["c10::Float8_e5m2"] = "fp8",
  ["c10::Float8_e4m3fnuz"] = "fp8", ["c10::Float8_e5m2fnuz"] = "fp8",
}
M.GEMM_FIELD = { bf16 = "gemm_efficiency", fp16 = "gemm_efficiency", fp8 = "fp8_gemm_efficiency" }

--- PyTorch's fused attention ops whose shapes the profiler records: the
-- positions of query, key and value ([batch, heads, sequence, head dim])
-- in `Input Dims` and of is_causal in `Concrete Inputs` (the schemas of
-- aten/src/ATen/native/native_functions.yaml: `_scaled_dot_product_
-- flash_attention(query, key, value, dropout_p, is_causal, ...)`, its
-- backward `(grad_out, query, key, value, out, logsumexp, cum_seq_q,
-- cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)`; the cuDNN ones
-- `(query, key, value, attn_bias, compute_log_sumexp, dropout_p,
-- is_causal, ...)` and `(grad_out, query, key, value, out, logsumexp,
-- philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q,
-- max_k, dropout_p, is_causal, ...)`).  TransformerEngine's and the
-- flash-attn package's attention are other ops and are not read.
M.ATTENTION_OPS = {
  ["aten::_scaled_dot_product_flash_attention"] = { q = 1, k = 2, v = 3, causal = 5 },
  ["aten::_scaled_dot_product_cudnn_attention"] = { q = 1, k = 2, v = 3, causal = 7 },
  ["aten::_scaled_dot_product_flash_attention_backward"] = { q = 2, k = 3, v = 4, causal = 12, backward = true },
  ["aten::_scaled_dot_product_cudnn_attention_backward"] = { q = 2, k = 3, v = 4, causal = 15, backward = true },
}

--- Bins of the keys a query sees (the key sequence) in which an attention
-- fit's measured time is set beside the fitted: where one efficiency
-- holds every bin's ratio is near 1.  Reporting bins, not fitted.
M.ATTENTION_BINS = {
  { name = "up to 2K keys", max = 2048 },
  { name = "2K-8K", max = 8192 },
  { name = "8K-32K", max = 32768 },
  { name = "above 32K", max = math.huge },
}

--- The name autograd gives the CPU op of each backward function it runs
-- (torch/csrc/autograd/engine.cpp, "autograd::engine::evaluate_function:
-- MmBackward0"): a trace holding one profiled a training step.
M.BACKWARD_OP = "autograd::engine::evaluate_function"

--- Fewest shaped GEMMs of a precision for its efficiency to be fitted: one
-- training step of a transformer launches hundreds (a dense layer runs 4
-- forward and 8 backward; fewer is a trace of something else).
M.MIN_GEMMS = 20

--- Bins of the per-GEMM work (FLOPs, 2 M N K) in which the measured time
-- is set beside the estimate's after the fit: where the shape model holds
-- each bin's ratio is near 1.  Reporting bins, not fitted: a decade below
-- a GFLOP (launch- and latency-bound), up to 100 GFLOP, and above.
M.GEMM_BINS = {
  { name = "below 1 GFLOP", max = 1e9 },
  { name = "1-100 GFLOP", max = 1e11 },
  { name = "above 100 GFLOP", max = math.huge },
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
  if raw:sub(1, 2) ~= GZIP_MAGIC then
    -- the same bound as an inflated one (the file limit is for gzip)
    if #raw > M.MAX_JSON_BYTES then
      fail(path, ("%d bytes of JSON, more than %d MiB: record fewer steps or one rank"):format(#raw,
        M.MAX_JSON_BYTES >> 20))
    end
    return raw
  end
  local ok, zlib = pcall(require, "zlib")
  if not ok then fail(path, "gzip trace needs lua-zlib (Debian package lua-zlib)") end
  local parts, total, at, members = {}, 0, 1, 0
  -- one gzip member after another (gzip -c a b, or cat a.gz b.gz)
  while at <= #raw do
    members = members + 1
    if members > M.MAX_GZIP_MEMBERS then
      fail(path, ("more than %d gzip members (a profiler writes one)"):format(M.MAX_GZIP_MEMBERS))
    end
    if raw:sub(at, at + 1) ~= GZIP_MAGIC then
      fail(path, ("%d bytes after the gzip stream that are not gzip"):format(#raw - at + 1))
    end
    local used
    total, used = inflate_member(path, zlib, raw, at, parts, total)
    at = at + used
  end
  return table.concat(parts)
end

--- The first bytes of an SQLite database: Nsight Systems' `nsys export
-- --type sqlite` (apsearch.nsys reads it).
local SQLITE_MAGIC = "SQLite format 3\0"

--- Loads a trace: its events and its devices.  A Kineto Chrome trace
-- (JSON, plain or gzip) or an Nsight Systems SQLite export.
-- @tparam string path
-- @treturn table `{events = {...}, devices = {name...}, path}`
-- @raise `<path>: trace: ...` on a file that is not a trace
function M.load(path)
  -- a regular file only (a FIFO would block the read; read_text refuses it)
  local attr = require("lfs").attributes(path)
  if attr and attr.mode == "file" then
    local f = io.open(path, "rb")
    local head = f and f:read(#SQLITE_MAGIC)
    if f then f:close() end
    if head == SQLITE_MAGIC then
      if attr.size > M.MAX_FILE_BYTES then
        fail(path, ("%d bytes, more than %d: profile fewer steps"):format(attr.size, M.MAX_FILE_BYTES))
      end
      return require("apsearch.nsys").load(path, function(problem) fail(path, problem) end)
    end
  end
  local text = M.read_text(path)
  util.refuse_nul(path, text, function(problem) fail(path, problem) end)
  local decoded = require("apsearch.core").json_decoded_bytes(text)
  if decoded > M.MAX_DECODED_BYTES then
    fail(path, ("decoding it would take about %.0f MiB, more than %d MiB (%.1f MiB of JSON): record fewer steps " ..
      "or one rank"):format(decoded / 2 ^ 20, M.MAX_DECODED_BYTES >> 20, #text / 2 ^ 20))
  end
  local cjson = require "cjson.safe"
  local doc, err = cjson.decode(text)
  if doc == nil then
    -- one JSON object per line (an Nsight Systems `nsys export` NDJSON):
    -- said as such, not as a JSON syntax error at its second object
    local first = text:match("^%s*(%b{})%s*\n%s*{")
    if first and cjson.decode(first) then
      fail(path, "one JSON object per line (an Nsight Systems JSON export, or traces joined?): apsearch reads a " ..
        "PyTorch profiler (Kineto) Chrome trace, torch.profiler's export_chrome_trace or " ..
        "tensorboard_trace_handler output, or an Nsight Systems SQLite export (nsys export --type sqlite)")
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

-- Where event i (1-based, as Lua holds it) came from, for a message: its
-- 0-based index in the JSON array traceEvents, or the table and row of an
-- Nsight Systems export (apsearch.nsys's `src`).
local function where(e, i)
  return e.src or ("traceEvents[%d]"):format(i - 1)
end

-- A finite, non-negative time field of an event, in microseconds.
local function time_of(path, e, key, i)
  local v = e[key]
  if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge then
    fail(path, ("%s (%s): %s must be a finite number of microseconds (got %s)"):format(
      where(e, i), util.printable(tostring(e.name)):sub(1, 60), key, util.describe(v)))
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

-- A whole positive count (cjson reads every number as a float), or nil.
local function size(v)
  return type(v) == "number" and v >= 1 and v < 2 ^ 53 and v == math.floor(v) and v or nil
end

-- An operand's dims of n whole positive sizes, or nil.
local function dims_of(d, n)
  if type(d) ~= "table" or #d ~= n then return nil end
  for i = 1, n do if not size(d[i]) then return nil end end
  return d
end

-- A GEMM op's shape and precision from its recorded `Input Dims` and
-- `Input type`: {prec, M, N, K}, or nil (no shapes recorded, operands that
-- are not M x K by K x N of positive sizes); prec nil for a type the
-- estimate does not price (float32).
local function gemm_shape(e, spec)
  local args = type(e.args) == "table" and e.args or {}
  local dims, types = args["Input Dims"], args["Input type"]
  if type(dims) ~= "table" or type(types) ~= "table" then return nil end
  local a, b = dims_of(dims[spec.a], 2), dims_of(dims[spec.b], 2)
  if not (a and b) or a[2] ~= b[1] then return nil end
  return { prec = M.GEMM_TYPES[types[spec.a]], M = a[1], N = b[2], K = a[2] }
end

-- An attention op's shape from its recorded `Input Dims` (query, key and
-- value [batch, heads, sequence, head dim]), `Input type` and the
-- is_causal of `Concrete Inputs`: {prec, B, H, Sq, Sk, dh, dv, causal,
-- backward}, or nil (no shapes or no is_causal recorded); prec nil for a
-- type the estimate does not price.
local function attention_shape(e, spec)
  local args = type(e.args) == "table" and e.args or {}
  local dims, types, concrete = args["Input Dims"], args["Input type"], args["Concrete Inputs"]
  if type(dims) ~= "table" or type(types) ~= "table" or type(concrete) ~= "table" then return nil end
  local q, k, v = dims_of(dims[spec.q], 4), dims_of(dims[spec.k], 4), dims_of(dims[spec.v], 4)
  local causal = ({ True = true, False = false })[concrete[spec.causal]]
  if not (q and k and v) or causal == nil or q[1] ~= k[1] then return nil end
  local prec = M.GEMM_TYPES[types[spec.q]]
  return { prec = prec ~= "fp8" and prec or nil, B = q[1], H = q[2], Sq = q[3], dh = q[4], Sk = k[3],
    dv = v[4], causal = causal, backward = spec.backward or false }
end

-- A kernel's duration in microseconds: no longer than M.MAX_STEP_SECONDS
-- (a kernel of a day or of 1e308 us is a broken trace; their sums must
-- stay finite).
local function kernel_dur(path, e, i)
  local us = time_of(path, e, "dur", i)
  if us * US > M.MAX_STEP_SECONDS then
    fail(path, ("%s (%s): dur %s us is not a kernel's length (0 to %d s)"):format(
      where(e, i), util.printable(tostring(e.name)):sub(1, 60), util.describe(e.dur), M.MAX_STEP_SECONDS))
  end
  return us
end

-- The correlation id of a runtime or kernel event (a finite number or a
-- string, as Kineto writes it), or nil.
local function correlation(e)
  local c = type(e.args) == "table" and e.args.correlation or nil
  if type(c) == "string" or (type(c) == "number" and c == c and c > -math.huge and c < math.huge) then
    return c
  end
  return nil
end

-- A CPU op of a scan: marks a training step, records shaped GEMM and
-- attention ops by thread in acc.
local function cpu_op(t, e, i, key, acc)
  local name = tostring(e.name)
  if not acc.training and name:find(M.BACKWARD_OP, 1, true) == 1 then
    acc.training = true
    return
  end
  local spec, ops, shape = M.GEMM_OPS[name], acc.gemm_ops, gemm_shape
  if not spec then spec, ops, shape = M.ATTENTION_OPS[name], acc.attention_ops, attention_shape end
  local g = spec and shape(e, spec)
  if spec and not g and ops == acc.gemm_ops then acc.unshaped_gemms = acc.unshaped_gemms + 1 end
  if g then
    g.ts = time_of(t.path, e, "ts", i)
    g.te = g.ts + time_of(t.path, e, "dur", i)
    ops[key] = ops[key] or {}
    table.insert(ops[key], g)
  end
end

-- What a stream ran, for the GPU's gap between queued kernels: a kernel,
-- an NCCL kernel, a copy or memset.
local KERNEL, NCCL, COPY = 1, 2, 3

-- Appends an activity to its stream's columns (parallel arrays: a table
-- per kernel costs a million tables on a long profile).
local function stream_add(streams, key, ts, us, corr, kind)
  local st = streams[key]
  if not st then
    st = { ts = {}, te = {}, dur = {}, corr = {}, kind = {}, n = 0 }
    streams[key] = st
  end
  local n = st.n + 1
  st.n, st.ts[n], st.te[n], st.dur[n], st.corr[n], st.kind[n] = n, ts, ts + us, us, corr or false, kind
  -- a fractional start or duration: the profile records below 1 us
  if kind ~= COPY and (ts % 1 ~= 0 or us % 1 ~= 0) then streams.fine = true end
end

-- Launch calls by thread, kernels by class, step durations; GEMM and
-- attention ops with shapes by thread and kernel microseconds by
-- correlation (M.gemm_fit, M.attention_fit) in acc; every stream's
-- kernels and copies in acc.streams.
local function scan(t)
  local threads, classes, unknown, steps = {}, {}, {}, {}
  local kernel_us, launched, streams, launch_end = {}, {}, {}, {}
  local acc = { training = false, gemm_ops = {}, attention_ops = {}, shared_correlations = 0, class_seconds = {},
    unshaped_gemms = 0 }
  local launches = 0
  for i, e in ipairs(t.events) do
    if type(e) == "table" and e.ph == "X" then
      local key = tostring(e.pid) .. "/" .. tostring(e.tid)
      if M.LAUNCH_CALLS[e.name] then
        threads[key] = threads[key] or {}
        local th = threads[key]
        local corr = correlation(e)
        th[#th + 1] = { ts = time_of(t.path, e, "ts", i), dur = time_of(t.path, e, "dur", i), corr = corr }
        if corr ~= nil then
          if launched[corr] then acc.shared_correlations = acc.shared_correlations + 1 end
          launched[corr] = true
          launch_end[corr] = th[#th].ts + th[#th].dur
        end
        launches = launches + 1
      elseif e.cat == "cpu_op" then
        cpu_op(t, e, i, key, acc)
      elseif e.cat == "kernel" then
        local c, us = M.kernel_class(e.name), kernel_dur(t.path, e, i)
        classes[c] = (classes[c] or 0) + 1
        acc.class_seconds[c] = (acc.class_seconds[c] or 0) + us * US
        if c == "unknown" then unknown[tostring(e.name)] = (unknown[tostring(e.name)] or 0) + 1 end
        local corr = correlation(e)
        if corr ~= nil then kernel_us[corr] = (kernel_us[corr] or 0) + us end
        stream_add(streams, key, time_of(t.path, e, "ts", i), us, corr, c == "nccl" and NCCL or KERNEL)
      elseif e.cat == "gpu_memcpy" or e.cat == "gpu_memset" then
        stream_add(streams, key, time_of(t.path, e, "ts", i), kernel_dur(t.path, e, i), nil, COPY)
      elseif e.cat == "user_annotation" and tostring(e.name):match("^ProfilerStep#%d+$") then
        local sec = time_of(t.path, e, "dur", i) * US
        if not (sec > 0 and sec <= M.MAX_STEP_SECONDS) then
          fail(t.path, ("%s (%s): dur %s us is not a training step's length (above 0, up to %d s)"):format(
            where(e, i), tostring(e.name), util.describe(e.dur), M.MAX_STEP_SECONDS))
        end
        steps[#steps + 1] = sec
      end
    end
  end
  acc.kernel_us = kernel_us
  acc.streams, acc.launch_end = streams, launch_end
  return threads, launches, classes, unknown, steps, acc
end

--- Timestamps' resolution, over the measured gap, above which a note
-- says so (5 %: the gap's first digit in doubt).
M.GAP_RESOLUTION_NOTE = 0.05

--- Largest `gpu_seconds_per_kernel` written (src/core/presets.c
-- APS_MAX_HOST_SECONDS, the core's bound on every per-kernel time).
M.MAX_GAP_SECONDS = 1e-2

--- Fewest queued kernel pairs for `gpu_seconds_per_kernel`.
M.MIN_QUEUED_PAIRS = 100

-- The spacing of doubles at x's magnitude, 2^(e - 52) for 2^e <= |x| <
-- 2^(e + 1) (0 at 0): what a timestamp of that size can resolve.
local function spacing(x)
  x = math.abs(x)
  if x == 0 or x ~= x or x == math.huge then return x == 0 and 0 or math.huge end
  local e = math.floor(math.log(x, 2))
  if 2.0 ^ e > x then e = e - 1 elseif 2.0 ^ (e + 1) <= x then e = e + 1 end
  return 2.0 ^ (e - 52)
end

-- A stream's activities in start order: 1..n when they came in order (a
-- profiler writes them so), else their indices sorted by start.
local function stream_order(st)
  local order, sorted = {}, true
  for k = 1, st.n do
    order[k] = k
    if k > 1 and st.ts[k] < st.ts[k - 1] then sorted = false end
  end
  if not sorted then table.sort(order, function(a, b) return st.ts[a] < st.ts[b] end) end
  return order
end

-- The GPU's gaps between queued kernels, seconds, and the coarsest step of
-- the timestamps they came from, microseconds: for each two successive
-- activities of one stream that are both kernels and whose second was
-- launched (its launch call ended) by the time the first ended, the
-- second's start less the first's end.  A copy or memset between two
-- kernels breaks the pair (its time is not the front end's); NCCL kernels
-- are left out (they wait for their peers); so are kernels without a
-- launch call in the trace.  A stream runs one kernel at a time: a start
-- before the previous end is the clocks' jitter, a gap of 0.
local function queued_gaps(streams, launch_end)
  local gaps, step = {}, 0
  for _, st in pairs(streams) do
    if type(st) ~= "table" then goto next_stream end
    local order = stream_order(st)
    for k = 2, st.n do
      local a, b = order[k - 1], order[k]
      local sent = st.corr[b] and launch_end[st.corr[b]]
      if sent and st.kind[a] == KERNEL and st.kind[b] == KERNEL and sent <= st.te[a] then
        gaps[#gaps + 1] = math.max(0, st.ts[b] - st.te[a]) * US
        step = math.max(step, spacing(st.ts[b]), spacing(st.te[a]))
      end
    end
    ::next_stream::
  end
  -- a profile in whole microseconds resolves no finer than that
  if not streams.fine and #gaps > 0 then step = math.max(step, 1) end
  return gaps, step
end

-- The kernel seconds of each shaped op: the kernels launched on the op's
-- thread within its span (ops of one table on one thread do not overlap;
-- the last op starting at or before a launch is the one that can hold
-- it).  Returns the ops that launched a kernel, each with `.seconds`.
local function op_kernels(threads, by_thread, kernel_us)
  local out = {}
  for key, ops in pairs(by_thread) do
    table.sort(ops, function(x, y) return x.ts < y.ts end)
    for _, l in ipairs(threads[key] or {}) do
      local us = l.corr ~= nil and kernel_us[l.corr]
      local lo, hi = 1, #ops
      while lo <= hi do -- last op with ts <= the launch's
        local mid = (lo + hi) // 2
        if ops[mid].ts <= l.ts then lo = mid + 1 else hi = mid - 1 end
      end
      local op = ops[hi]
      if us and op and l.ts <= op.te then op.seconds = (op.seconds or 0) + us * US end
    end
    for _, op in ipairs(ops) do
      if op.seconds then out[#out + 1] = op end
    end
  end
  return out
end

--- The GPU's gap between queued kernels from the queued pairs' gaps
-- (seconds) and their timestamps' coarsest step (microseconds): their
-- median, or nil and why not -- too few pairs (M.MIN_QUEUED_PAIRS),
-- launches of several processes sharing correlation ids (a kernel cannot
-- be told which launch was its), or timestamps too large to resolve the
-- gap (a step of the doubles at least the median itself and at least the
-- format's unit, 1 us).
-- @tparam table gaps seconds
-- @tparam number step microseconds
-- @tparam number shared launches whose correlation id an earlier had
-- @treturn number|nil seconds
-- @treturn string|nil why not measured
function M.gap_measure(gaps, step, shared)
  if shared > 0 then
    return nil, ("%d launches share a correlation id with an earlier one (the traces of several processes " ..
      "joined): a kernel cannot be matched to its launch; profile one process"):format(shared)
  end
  if #gaps < M.MIN_QUEUED_PAIRS then
    return nil, ("%d pairs of successive kernels of a stream with the second queued, %d needed"):format(#gaps,
      M.MIN_QUEUED_PAIRS)
  end
  local m = median(gaps)
  -- (a median of 0 from fine timestamps is a measure: kernels back to back)
  if step * US >= math.max(m, US) then
    return nil, ("the timestamps resolve only %.3g us (whole microseconds, or a double at their magnitude), not " ..
      "less than the gaps' median %.3g us"):format(step, m * 1e6)
  end
  return m, nil
end

--- Fewest kernels for `gpu_min_kernel_seconds`.
M.MIN_KERNELS = 100
--- Largest `gpu_min_kernel_seconds` written: the shortest kernel runs 1.5
-- to 3.8 us on every GPU traced (src/core/presets.c); a 1st percentile
-- above 20 us means the profile ran no small kernels to measure it on (a
-- GEMM benchmark), and is said, not written.
M.MAX_MIN_KERNEL_SECONDS = 20e-6
--- Smallest `gpu_min_kernel_seconds` written: the shortest kernel of every
-- trace read ran 1.47 us (H100) or more; under half a microsecond is a
-- trace of zero-length kernel records, not a GPU, and is said, not
-- written (0 would turn the router's floor off).
M.MIN_MIN_KERNEL_SECONDS = 0.5e-6

--- The shortest a kernel runs: the 1st percentile of the durations of the
-- kernels of every stream (the ceil(n / 100)-th shortest; NCCL kernels,
-- copies and memsets left out), seconds, or nil with fewer than
-- M.MIN_KERNELS kernels.
-- @tparam table streams the scan's columns by stream
-- @treturn number|nil
function M.min_kernel_measure(streams)
  local durs = {}
  for _, st in pairs(streams) do
    for k = 1, type(st) == "table" and st.n or 0 do
      if st.kind[k] == KERNEL then durs[#durs + 1] = st.dur[k] end
    end
  end
  if #durs < M.MIN_KERNELS then
    return nil, ("%d kernels (NCCL's left out), %d needed"):format(#durs, M.MIN_KERNELS)
  end
  table.sort(durs)
  local v = durs[math.ceil(#durs / 100)] * US
  if v < M.MIN_MIN_KERNEL_SECONDS then
    return nil, ("the 1st percentile of the kernels' durations is %.3g us, under the %g us no GPU traced runs a " ..
      "kernel in (records of dur 0?)"):format(v * 1e6, M.MIN_MIN_KERNEL_SECONDS * 1e6)
  end
  if v > M.MAX_MIN_KERNEL_SECONDS then
    return nil, ("the 1st percentile of the kernels' durations is %.1f us, above %g us: no small kernels in this " ..
      "profile"):format(v * 1e6, M.MAX_MIN_KERNEL_SECONDS * 1e6)
  end
  return v, nil
end

--- Measures a loaded trace.
-- @tparam table t from M.load
-- @treturn table `{host_seconds_per_kernel, host_seconds_per_loop_kernel,
--   launches, gaps, threads, kernels = {class = count}, unknown = {{name,
--   count}...} (most frequent first), step_seconds (median of the
--   ProfilerStep annotations, nil without), steps, gemms = {{prec, M, N, K,
--   seconds}...} (the shaped GEMM ops that launched kernels; prec nil for
--   float32), attention = {{prec, B, H, Sq, Sk, dh, dv, causal, backward,
--   seconds}...} (likewise), training (an autograd backward op ran: a
--   training step), shared_correlations (launches whose correlation id an
--   earlier launch had: traces of several processes joined),
--   kernel_seconds = {class = seconds of its kernels, summed over streams},
--   unshaped_gemms (GEMM ops whose shapes were not recorded)}`
-- @raise `<path>: trace: ...` with fewer than M.MIN_LAUNCHES launch gaps
function M.measure(t)
  local threads, launches, classes, unknown, steps, acc = scan(t)
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
  local queued, step = queued_gaps(acc.streams, acc.launch_end)
  local gap, why = M.gap_measure(queued, step, acc.shared_correlations)
  local shortest, shortest_why = M.min_kernel_measure(acc.streams)
  return {
    gpu_min_kernel_seconds = shortest, min_kernel_not_measured = shortest_why,
    whole_us = not acc.streams.fine,
    gpu_seconds_per_kernel = gap, gap_not_measured = why, queued_pairs = #queued, gap_resolution = step * US,
    gap_quartiles = q,
    host_seconds_per_kernel = median(gaps), host_seconds_per_loop_kernel = median(durs),
    launches = launches, gaps = #gaps, threads = nthreads, kernels = classes, unknown = ulist,
    step_seconds = median(steps), steps = #steps,
    gemms = op_kernels(threads, acc.gemm_ops, acc.kernel_us),
    attention = op_kernels(threads, acc.attention_ops, acc.kernel_us), training = acc.training,
    shared_correlations = acc.shared_correlations, kernel_seconds = acc.class_seconds,
    unshaped_gemms = acc.unshaped_gemms,
  }
end

--- Largest K over smallest K a bf16 class needs for its `gemm_half_dim`
-- to be fitted: with the K of a step barely varying, k0 and the
-- efficiency cannot be told apart (apsearch.calibration.FIELDS).
M.MIN_K_SPREAD = 2

--- Relative slack on a fitted value's bounds: a value the fit's rounding
-- puts just past a bound (0.9500000001) is that bound.
M.BOUND_SLACK = 1e-9

-- v clamped into [lo, hi] when within M.BOUND_SLACK of them, else nil.
local function within(v, lo, hi)
  local slack = M.BOUND_SLACK * math.max(1, math.abs(lo), math.abs(hi))
  if not (v >= lo - slack and v <= hi + slack) then return nil end
  return math.min(hi, math.max(lo, v))
end

-- 1 / eta at K-depth k0: the priced times sum to the measured ones.
local function inverse_eta_at(list, k0, t0)
  local base, var = 0, 0
  for _, g in ipairs(list) do base, var = base + g.base * (1 + k0 / g.K), var + g.seconds - t0 end
  return var / base
end

-- a = 1 / eta and b = k0 / eta by least squares of y = a + b / K weighted
-- by each GEMM's priced time (M.gemm_fit), or nil when the K do not
-- separate them.
local function fit_both(list, k0_preset, t0)
  local sw, sx, sy, sxx, sxy = 0, 0, 0, 0, 0
  for _, g in ipairs(list) do
    local w, x, y = g.base * (1 + k0_preset / g.K), 1 / g.K, (g.seconds - t0) / g.base
    sw, sx, sy, sxx, sxy = sw + w, sx + w * x, sy + w * y, sxx + w * x * x, sxy + w * x * y
  end
  local d = sw * sxx - sx * sx
  if not (d > 0) then return nil end
  local b = (sw * sxy - sx * sy) / d
  return (sy - b * sx) / sw, b
end

-- The measured over fitted times of a class's GEMMs by work (M.GEMM_BINS),
-- the fit being a = 1 / eta, b = k0 / eta.
local function gemm_bins(list, t0, a, b)
  local bins = {}
  for i, bin in ipairs(M.GEMM_BINS) do bins[i] = { name = bin.name, count = 0, measured = 0, fitted = 0 } end
  for _, g in ipairs(list) do
    local flops = 2.0 * g.M * g.N * g.K
    for i, bin in ipairs(M.GEMM_BINS) do
      if flops < bin.max then
        local c = bins[i]
        c.count, c.measured = c.count + 1, c.measured + g.seconds
        c.fitted = c.fitted + t0 + g.base * (a + b / g.K)
        break
      end
    end
  end
  return bins
end

-- Why no kernel can be matched to its op, or nil.
local function shared_reason(m)
  if (m.shared_correlations or 0) == 0 then return nil end
  return ("%d launches share a correlation id with an earlier one (traces of several processes joined?): " ..
    "kernels cannot be matched to their ops; profile one process"):format(m.shared_correlations)
end

-- Why a class of n GEMMs cannot be fitted, or nil.
local function unfit_reason(class, m, n, measured, preset, dev)
  if class == "fp8" and not (dev.peak_flops_fp8 > dev.peak_flops_bf16) then
    return ("the %s preset has no fp8 rate above its bf16 one"):format(preset)
  elseif shared_reason(m) then
    return shared_reason(m)
  elseif n < M.MIN_GEMMS then
    return ("%d GEMMs, %d are needed"):format(n, M.MIN_GEMMS)
  elseif not (measured > dev.gemm_fixed_seconds * n) then
    return "their kernels took no more than the fixed time of each"
  end
  return nil
end

-- One precision class of M.gemm_fit: the priced times, the fit, the bins.
-- k0 is the K-depth term to use when it is not fitted here; bounds maps a
-- field to its apsearch.calibration.FIELDS entry.
local function fit_class(m, class, list, preset, dev, k0, bounds)
  local core = require "apsearch.core"
  local field, t0 = M.GEMM_FIELD[class], dev.gemm_fixed_seconds
  local r = { class = class, field = field, count = #list, measured = 0, estimated = 0, eta_preset = dev[field],
    k0_preset = dev.gemm_half_dim, written = {} }
  local kmin, kmax = math.huge, 0
  for _, g in ipairs(list) do
    local priced = core.gemm_seconds(preset, g.prec, g.M, g.N, g.K)
    g.base = (priced - t0) * r.eta_preset * g.K / (g.K + dev.gemm_half_dim)
    r.measured, r.estimated = r.measured + g.seconds, r.estimated + priced
    kmin, kmax = math.min(kmin, g.K), math.max(kmax, g.K)
  end
  r.why = unfit_reason(class, m, #list, r.measured, preset, dev)
  if r.why then
    r.bins = gemm_bins(list, t0, 1 / r.eta_preset, dev.gemm_half_dim / r.eta_preset)
    return r
  end
  local a, b
  if class == "bf16" and kmax >= M.MIN_K_SPREAD * kmin then
    a, b = fit_both(list, dev.gemm_half_dim, t0)
    if a and a > 0 then
      -- a K-depth past its bounds: the constrained optimum is at the bound
      local kb = bounds.gemm_half_dim
      local kf = math.min(kb.hi, math.max(kb.lo, b / a))
      if kf ~= b / a then a = inverse_eta_at(list, kf, t0) end
      b, r.k0_fitted = a * kf, true
    else
      a, r.k0_unseparated = nil, true
    end
  end
  if not a then a = inverse_eta_at(list, k0, t0); b = a * k0 end
  r.eta, r.k0 = 1 / a, b / a
  local eta = within(r.eta, bounds[field].lo, bounds[field].hi)
  if eta then
    r.written[field] = eta
    if r.k0_fitted then r.written.gemm_half_dim = r.k0 end
  else
    r.why = ("%s %.3f is outside [%g, %g]: GEMMs slowed or sped by what the shape model does not describe " ..
      "(communication overlapped on another stream, another library's kernels)"):format(field, r.eta,
      bounds[field].lo, bounds[field].hi)
  end
  r.bins = gemm_bins(list, t0, a, b)
  return r
end

--- Fits a device's GEMM terms to a trace's shaped GEMMs
-- (src/core/gemm.c: t = t0 + 2 M N K / (peak eta q(M, N) K / (K + k0)),
-- q the tile and wave factor, t0 the fixed time).  For GEMM i measured at
-- t_i, let base_i = 2 M N K / (peak q) (the preset's price less t0, times
-- eta_preset K / (K + k0_preset)) and y_i = (t_i - t0) / base_i: the model
-- says y = a + b / K with a = 1 / eta, b = k0 / eta.
--   * bf16 and fp16 GEMMs (`gemm_efficiency`) whose largest K is
--     M.MIN_K_SPREAD times their smallest or more: a and b by least
--     squares weighted by each GEMM's priced time (the large GEMMs that
--     dominate a step weigh most), giving eta and `gemm_half_dim` k0;
--   * otherwise, and for fp8 GEMMs (`fp8_gemm_efficiency`; k0 is one
--     field for every precision, the bf16 fit's or the preset's): eta
--     alone, the value at which the priced time sums to the measured,
--     eta = sum(base_i (1 + k0 / K_i)) / sum(t_i - t0).
-- A class is fitted with M.MIN_GEMMS GEMMs or more; its values are written
-- only inside the fields' bounds (apsearch.calibration.FIELDS) and only
-- from a training step (`training`: a forward-only profile runs at burst
-- clocks a training job does not sustain).
-- @tparam table m from M.measure
-- @tparam string preset device preset name
-- @treturn table list of `{class = "bf16"|"fp8", field, count, measured,
--   estimated (s, at the preset), eta_preset, eta (nil: not fitted),
--   k0_preset, k0 (the K-depth used; nil: not fitted), k0_fitted (fitted
--   here, possibly at a bound, not taken), k0_unseparated (a fit of both
--   gave no positive efficiency), written (field -> value), why (nil
--   when every fitted value is written; else the reason), bins = {{name,
--   count, measured, fitted (s)}...}}`, and `float32 = count` of GEMMs not
--   priced
function M.gemm_fit(m, preset)
  local core = require "apsearch.core"
  local dev = core.device_preset(preset)
  local bounds = {}
  for _, f in ipairs(require("apsearch.calibration").FIELDS) do bounds[f.field] = f end
  local by, float32 = {}, 0
  for _, g in ipairs(m.gemms or {}) do
    if g.prec == nil then
      float32 = float32 + 1
    else
      local class = g.prec == "fp8" and "fp8" or "bf16"
      by[class] = by[class] or {}
      table.insert(by[class], g)
    end
  end
  local k0 = dev.gemm_half_dim
  local out = { float32 = float32 }
  for _, class in ipairs({ "bf16", "fp8" }) do
    local list = by[class]
    if list then
      local r = fit_class(m, class, list, preset, dev, k0, bounds)
      if r.written.gemm_half_dim then k0 = r.k0 end
      if not m.training and r.eta then
        r.written = {}
        r.why = "a forward-only profile (no autograd backward op): its GEMMs run at clocks a training step " ..
          "does not sustain; profile a training step"
      end
      out[#out + 1] = r
    end
  end
  return out
end

--- Fewest shaped bf16 / fp16 attention calls (forward and backward
-- together) for `attention_efficiency` to be fitted: a training step runs
-- one each way per layer, so ten layers.
M.MIN_ATTENTION = 20

--- Fits a device's fused-attention efficiency to a trace's shaped attention
-- calls (M.ATTENTION_OPS): each is priced as the estimate prices an
-- attention core (core.attention_seconds: forward FLOPs 2 B Sq keys H (dh
-- + dv), keys Sk / 2 under a causal mask, at the bf16 peak times
-- attention_efficiency; the backward 2.5x), and the efficiency is the one
-- at which the priced times sum to the measured ones:
--   eta = eta_preset x sum(priced) / sum(measured)
-- (the price is inverse in eta).  Written, as the GEMM fit's, only from a
-- training step and inside the field's bounds.
-- @tparam table m from M.measure
-- @tparam string preset device preset name
-- @treturn table|nil nil without shaped attention calls; else `{count,
--   backward (of count), unpriced (calls of another precision), measured,
--   estimated (s, at the preset), eta_preset, eta (nil: not fitted),
--   written (field -> value), why, bins = {{name, count, measured, fitted}
--   ...} by keys}`
function M.attention_fit(m, preset)
  local core = require "apsearch.core"
  local dev = core.device_preset(preset)
  if #(m.attention or {}) == 0 then return nil end
  local r = { count = 0, backward = 0, unpriced = 0, measured = 0, estimated = 0,
    eta_preset = dev.attention_efficiency, written = {}, bins = {} }
  for i, bin in ipairs(M.ATTENTION_BINS) do r.bins[i] = { name = bin.name, count = 0, measured = 0, fitted = 0 } end
  local list = {}
  for _, g in ipairs(m.attention) do
    if g.prec == nil then
      r.unpriced = r.unpriced + 1
    else
      g.priced = core.attention_seconds(preset, true, g.backward, g.B, g.H, g.Sq, g.Sk, g.dh, g.dv, g.causal)
      r.count, r.measured, r.estimated = r.count + 1, r.measured + g.seconds, r.estimated + g.priced
      r.backward = r.backward + (g.backward and 1 or 0)
      list[#list + 1] = g
    end
  end
  local lo, hi
  for _, f in ipairs(require("apsearch.calibration").FIELDS) do
    if f.field == "attention_efficiency" then lo, hi = f.lo, f.hi end
  end
  if shared_reason(m) then
    r.why = shared_reason(m)
  elseif r.count < M.MIN_ATTENTION then
    r.why = ("%d calls, %d are needed"):format(r.count, M.MIN_ATTENTION)
  elseif not (r.measured > 0) then
    r.why = "their kernels took no time"
  else
    r.eta = r.eta_preset * r.estimated / r.measured
    local eta = within(r.eta, lo, hi)
    if not eta then
      r.why = ("attention_efficiency %.3f is outside [%g, %g]"):format(r.eta, lo, hi)
    elseif not m.training then
      r.why = "a forward-only profile (no autograd backward op); profile a training step"
    else
      r.written.attention_efficiency = eta
    end
  end
  local scale = r.eta and r.eta_preset / r.eta or 1
  for _, g in ipairs(list) do
    for i, bin in ipairs(M.ATTENTION_BINS) do
      if g.Sk <= bin.max then
        local c = r.bins[i]
        c.count, c.measured, c.fitted = c.count + 1, c.measured + g.seconds, c.fitted + g.priced * scale
        break
      end
    end
  end
  return r
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
-- from the device preset's, when the trace has no training steps, or no backward; nil
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
  if not m.training then
    parts[#parts + 1] = "no autograd backward op: a forward-only profile, whose launch gaps are an inference " ..
      "loop's (a training step's backward launches from autograd's C++ engine); its host costs and, on its own " ..
      "GPU, the GPU's gap and shortest kernel are written, its kernel rates are not"
  end
  local g, gref = m.gpu_seconds_per_kernel, ok and dev.gpu_seconds_per_kernel or nil
  if g and gref and gref > 0 and (g > gref * M.HOST_NOTE_FACTOR or g < gref / M.HOST_NOTE_FACTOR) then
    parts[#parts + 1] = ("GPU %.2f us between queued kernels is %.1fx the %s preset's %.2f us: kernels that wait " ..
      "on other streams' events count too"):format(g * 1e6, g / gref, preset, gref * 1e6)
  end
  -- timestamps as large as epoch microseconds resolve a gap coarsely
  if g and g > 0 and m.gap_resolution > M.GAP_RESOLUTION_NOTE * g then
    parts[#parts + 1] = ("the GPU's gap is measured from timestamps resolved to %.3g us (%s), %.0f %% of it"):format(
      m.gap_resolution * 1e6, m.whole_us and "the profile's whole microseconds" or "a double at their magnitude",
      100 * m.gap_resolution / g)
  end
  local sk = m.gpu_min_kernel_seconds
  if sk and m.whole_us then
    parts[#parts + 1] = ("the shortest kernel, %.0f us, is from durations in whole microseconds (within 1 us)"):format(
      sk * 1e6)
  end
  local skref = ok and dev.gpu_min_kernel_seconds or nil
  if sk and skref and skref > 0 and (sk > skref * M.HOST_NOTE_FACTOR or sk < skref / M.HOST_NOTE_FACTOR) then
    parts[#parts + 1] = ("the shortest kernel, %.2f us, is %.1fx the %s preset's %.2f us"):format(sk * 1e6, sk / skref,
      preset, skref * 1e6)
  end
  if #parts == 0 then return nil end
  return ("apsearch: note: %s: %s"):format(util.printable(path), table.concat(parts, "; "))
end

-- The GEMM and attention fits of a measured trace for its GPU's preset
-- (nil: the trace ran on another GPU than the one the calibration is
-- for), as calibrate writes them; the written values go into fields.
local function kernel_fits(m, preset, fields)
  if not preset then
    local n = #m.gemms + #m.attention
    return { float32 = 0, other_device = n > 0 and { gemms = #m.gemms, attention = #m.attention } or nil,
      training = m.training }, nil
  end
  local gemms = { float32 = 0, training = m.training, unshaped = m.unshaped_gemms }
  local fit = M.gemm_fit(m, preset)
  gemms.float32 = fit.float32
  for _, r in ipairs(fit) do
    for k, v in pairs(r.written) do fields[k] = v end
    gemms[r.class] = { field = r.field, count = r.count, measured_seconds = r.measured,
      preset_seconds = r.estimated, preset_efficiency = r.eta_preset, efficiency = r.eta,
      preset_half_dim = r.k0_preset, half_dim = r.k0, half_dim_unseparated = r.k0_unseparated,
      half_dim_fitted = r.k0_fitted, written = next(r.written) ~= nil, why_not = r.why, bins = r.bins }
  end
  local attn = M.attention_fit(m, preset)
  if attn then
    for k, v in pairs(attn.written) do fields[k] = v end
    attn.written = next(attn.written) ~= nil
  end
  return gemms, attn
end

--- A calibration (apsearch.calibration's format) with the trace's host
-- measures for one device and, where the trace recorded GEMM shapes on
-- that device's GPU, its GEMM efficiencies (M.gemm_fit; `trace.gemms`
-- says what was fitted, or why not).
-- @tparam string path the trace
-- @tparam[opt] string device preset name; default: the trace's GPU
-- @tparam[opt] boolean per_step the trace's time is wanted per step (set
--   beside a job's estimate): a trace without ProfilerStep is refused
-- @treturn table calibration (`trace.preset`: the trace's own GPU's
--   preset, nil when it has none)
-- @treturn table the measures (M.measure)
-- @treturn table notes for stderr (the caller prints them, or not under
--   --quiet), each one line
-- @raise `<path>: trace: ...` when the device is neither given nor known,
--   or per_step and no ProfilerStep
function M.calibration(path, device, per_step)
  local t = M.load(path)
  local m = M.measure(t)
  if per_step and m.steps == 0 then
    fail(path, "no ProfilerStep annotation: its kernel time cannot be set per step beside the job's estimate " ..
      "(torch.profiler's schedule with prof.step() records them)")
  end
  local own = M.preset_of(t)
  local preset = device or own
  local notes = {}
  if device and t.devices[1] and device:lower() ~= own then
    notes[#notes + 1] = ("apsearch: note: %s ran on %s%s; its host costs are written for --device %s (a host " ..
      "property: right when that device's hosts are the same CPUs), its kernel rates are not"):format(
      util.printable(path), util.printable(t.devices[1]), own and (" (" .. own .. ")") or "", device)
  end
  if not preset then
    util.fail(path, "deviceProperties", "no device preset for the trace's GPU (" ..
      (t.devices[1] or "none recorded") .. "): give --device NAME", nil, false)
  end
  local calibration = require "apsearch.calibration"
  local fields = {
    host_seconds_per_kernel = m.host_seconds_per_kernel,
    host_seconds_per_loop_kernel = m.host_seconds_per_loop_kernel,
  }
  -- kernel rates are the traced GPU's: fitted only for its own preset (or
  -- for --device when the trace names no GPU)
  local same_gpu = t.devices[1] == nil or (own ~= nil and own == preset:lower())
  -- the GPU's gap between queued kernels is the traced GPU's too; one
  -- beyond the core's bound is said, not written (the rest still is)
  -- the shortest kernel, the traced GPU's, when the profile shows it
  fields.gpu_min_kernel_seconds = same_gpu and m.gpu_min_kernel_seconds or nil
  local min_not_written = not same_gpu and "the trace ran on another GPU" or m.min_kernel_not_measured
  local gap, gap_not_written = same_gpu and m.gpu_seconds_per_kernel, not same_gpu and
    "the trace ran on another GPU" or nil
  if gap and gap > M.MAX_GAP_SECONDS then
    gap_not_written = ("its median %.3g s is beyond the %g s a device may take (a profile of queued kernels " ..
      "waiting on other work?)"):format(gap, M.MAX_GAP_SECONDS)
    gap = nil
  end
  fields.gpu_seconds_per_kernel = gap or nil
  local gemms, attn = kernel_fits(m, same_gpu and preset or nil, fields)
  local calib = {
    schema_version = calibration.SCHEMA_VERSION,
    name = "trace " .. util.basename(path),
    fitted_on = path,
    devices = { [preset] = fields },
    trace = { launches = m.launches, launch_gaps = m.gaps, threads = m.threads, kernels = m.kernels,
      kernel_seconds = m.kernel_seconds,
      step_seconds = m.step_seconds, steps = m.steps, gpu = t.devices[1], preset = own, gemms = gemms,
      attention = attn, queued_pairs = m.queued_pairs, gap_not_written = gap_not_written,
      min_kernel_not_written = min_not_written },
  }
  -- what --calibration will accept, checked before anything is written
  local ok, err = pcall(calibration.check, calib, path .. ": measured")
  if not ok then
    error(tostring(err) .. " (are the trace's ts and dur in microseconds?)", 0)
  end
  notes[#notes + 1] = plausibility_note(path, m, preset)
  return calib, m, notes
end

return M
