-- tests/lua/trace_spec.lua -- `apsearch calibrate --trace FILE`
-- (lua/apsearch/trace.lua): the host's seconds per kernel launch measured
-- on a PyTorch profiler trace no one here wrote, and bad traces refused
-- with one line.
--
-- The fixture tests/fixtures/traces/hta_a100_rank0.json.gz is
-- facebookresearch/HolisticTraceAnalysis f4d0062c tests/data/
-- negative_queue_length_values_check/rank0.json.gz (MIT), a training trace
-- of rank 0 of 16 on A100-SXM4-80GB: 5,240 cudaLaunchKernel calls on two
-- threads (the forward's and autograd's), 5 ProfilerStep annotations
-- (209.7, 216.5, 216.1, 215.5 ms and one more).  Its medians, measured with
-- an independent script (Python's statistics.median over the same events):
-- launch gap 23 us, launch call 4 us, step 216.119 ms.

local cjson = require "cjson"
local H = require "spec_helpers"
local write, tmpdir, apsearch = H.write, H.tmpdir, H.apsearch

local FIXTURE = H.ROOT .. "/tests/fixtures/traces/hta_a100_rank0.json.gz"
-- AMD-AGI/TraceLens 171dd747 tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__
-- 1016005.json.gz (MIT): a forward pass of Qwen1.5-0.5B-Chat (batch 16 x
-- 2,048 tokens, bf16, transformers 4.49, torch 2.6, cuBLAS 12.4) on one
-- H100 80GB HBM3, profiled with record_shapes.  Its top-level "metadata"
-- object (the profiling harness's environment, which held an access
-- token) is removed; the events are as published.  168 aten::addmm / mm
-- of shapes 8,944 x {1,024, 2,816} x {1,024, 2,816}.  Measured with an
-- independent script (Python; each op's kernels found by the launches in
-- its span, the model of src/core/gemm.c with the H100 preset's terms):
-- 0.008854707 s of GEMM kernels; fitted gemm_efficiency 0.824475,
-- gemm_half_dim 185.3777 (the time-weighted least squares of
-- M.gemm_fit); eta alone at the preset's k0 0.886.
local QWEN = H.ROOT .. "/tests/fixtures/traces/tracelens_h100_qwen1.5_0.5b_forward.json.gz"
-- hpcgroup/pipit ad30bc84 pipit/tests/data/cloverleaf-nsys/perlmutter-
-- cloverleaf-cuda.sqlite (MIT): an Nsight Systems SQLite export of the
-- CloverLeaf CUDA mini-app on Perlmutter's A100-SXM4-80GB (a sync after
-- every kernel).  Kept at 190 KB of its 2.1 MB: the four tables apsearch
-- reads, with the columns it reads and every row unchanged, and the
-- StringIds rows they name (111 of 1,297); the other tables dropped
-- (sqlite3: CREATE TABLE ... AS SELECT, then VACUUM).  Measured with an independent script (Python's sqlite3
-- and statistics.median over CUPTI_ACTIVITY_KIND_RUNTIME's
-- cudaLaunchKernel rows and CUPTI_ACTIVITY_KIND_KERNEL): 1,312 launches on
-- one thread, median gap 13.566 us, median call 3.687 us, 1,312 kernels of
-- 0.29440454 s in all.
local NSYS = H.ROOT .. "/tests/fixtures/traces/pipit_nsys_cloverleaf_a100.sqlite"

local function one_line(code, out, err)
  assert.are.equal(2, code, err)
  assert.are.equal("", out)
  assert.are.equal(1, select(2, err:gsub("\n", "")), err)
  return err
end

-- A minimal trace of n launches on one thread, every gap_us apart.
local function synthetic(n, gap_us, dur_us, extra)
  local ev = {}
  for i = 1, n do
    ev[i] = { ph = "X", cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 1, tid = 1,
      ts = 1000 + (i - 1) * gap_us, dur = dur_us }
  end
  for _, e in ipairs(extra or {}) do ev[#ev + 1] = e end
  return cjson.encode({ traceEvents = ev, deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } })
end

describe("apsearch.trace", function()
  local trace = require "apsearch.trace"

  it("measures a public A100 training trace: launch gap, launch call, steps, kernel classes", function()
    local t = trace.load(FIXTURE)
    assert.are.equal(8, #t.devices)   -- every GPU of the host is listed
    assert.are.equal("NVIDIA A100-SXM4-80GB", t.devices[1])
    assert.are.equal("a100-sxm4-80gb", trace.preset_of(t))
    local m = trace.measure(t)
    assert.are.equal(5240, m.launches)
    assert.are.equal(2, m.threads)
    assert.are.equal(5238, m.gaps)
    assert.is_true(math.abs(m.host_seconds_per_kernel - 23e-6) < 1e-12)
    assert.is_true(math.abs(m.host_seconds_per_loop_kernel - 4e-6) < 1e-12)
    assert.are.equal(5, m.steps)
    assert.is_true(math.abs(m.step_seconds - 0.216119) < 1e-9)
    assert.are.equal(205, m.kernels.gemm)
    assert.are.equal(80, m.kernels.nccl)
    -- what no class matches is listed by name, not guessed
    assert.are.equal(11, m.kernels.unknown)
    assert.truthy(m.unknown[1].name:find("permute_pooled_embs_kernel", 1, true))
  end)

  it("says when a trace's host cost is far from the preset's, names an A100 by its memory, spots NDJSON", function()
    local dir = tmpdir()
    -- 400 launches 200 us apart, no ProfilerStep: 6.7x H100's 30 us
    local slow = write(dir .. "/slow.json", synthetic(400, 200, 3))
    local code, _, err = apsearch("calibrate", "--trace", slow, "-o", dir .. "/s.json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: " .. slow .. ": host 200.0 us per kernel is 6.7x the h100-sxm-80gb " ..
      "preset's 30 us (gaps between launches: quartiles 200.0 / 200.0 / 200.0 us)", 1, true), err)
    assert.truthy(err:find("no ProfilerStep annotation", 1, true), err)
    -- near the preset: no note of the cost
    local ok = write(dir .. "/ok.json", synthetic(400, 30, 3))
    code, _, err = apsearch("calibrate", "--trace", ok, "-o", dir .. "/k.json")
    assert.are.equal(0, code, err)
    assert.is_nil(err:find("preset's 30 us", 1, true), err)
    -- "A100-PG509-200" with 40 GiB: the 40 GB part, not the 80 GB one
    local ev = cjson.decode(synthetic(200, 30, 3))
    ev.deviceProperties = { { name = "A100-PG509-200", totalGlobalMem = 42314694656 } }
    assert.are.equal("a100-sxm4-40gb", trace.preset_of({ devices = { ev.deviceProperties[1].name },
      memory = { ev.deviceProperties[1].totalGlobalMem } }))
    assert.are.equal("a100-sxm4-80gb", trace.preset_of({ devices = { "A100-PG509-200" },
      memory = { 85e9 } }))
    -- a MIG slice of an 80 GB part reports the slice's memory: the part counts
    for _, slice in ipairs({ "1g.10gb", "3g.40gb" }) do
      assert.are.equal("a100-sxm4-80gb", trace.preset_of({ devices = { "NVIDIA A100-SXM4-80GB MIG " .. slice },
        memory = { 10.2e9 } }), slice)
    end
    -- an Nsight Systems export (one JSON object per line)
    local nd = write(dir .. "/nsys.json", '{"Type": 1}\n{"Type": 2}\n')
    assert.truthy(one_line(apsearch("calibrate", "--trace", nd, "-o", dir .. "/n.json")):find(
      "one JSON object per line (an Nsight Systems JSON export, or traces joined?)", 1, true))
  end)

  it("takes medians: one long wait at a sync does not move them", function()
    local dir = tmpdir()
    -- 200 launches 10 us apart, then one 5 s wait, then 200 more
    local ev = cjson.decode(synthetic(401, 10, 3))
    for i = 202, 401 do ev.traceEvents[i].ts = ev.traceEvents[i].ts + 5e6 end
    local p = write(dir .. "/t.json", cjson.encode(ev))
    local m = trace.measure(trace.load(p))
    assert.is_true(math.abs(m.host_seconds_per_kernel - 10e-6) < 1e-15)
    assert.is_true(math.abs(m.host_seconds_per_loop_kernel - 3e-6) < 1e-15)
    assert.is_nil(m.step_seconds)
  end)
end)

-- A trace of GEMMs timed by the model of src/core/gemm.c on the H100
-- preset (peak 989.4 TFLOP/s bf16 and fp16, 1,978.9 fp8; tiles 64 x 128,
-- 132 SMs, t0 4 us) at a
-- chosen eta and k0: shapes of 8,448 x 1,024 fill 8 whole waves of tiles
-- (q = 1), so t = 4e-6 + 2 M N K (K + k0) / (peak eta K).  Each GEMM
-- is an op holding one launch and its kernel; `backward` adds autograd's
-- op (a training step).
local function gemm_trace(list, backward)
  local ev, ts, corr = {}, 1000, 0
  for _, g in ipairs(list) do
    corr = corr + 1
    local peak = g.type:find("Float8", 1, true) and 1978.9e12 or 989.4e12
    local sec = 4e-6 + 2 * g.M * g.N * g.K * (g.K + g.k0) / (peak * g.eta * g.K)
    ev[#ev + 1] = { ph = "X", cat = "cpu_op", name = "aten::mm", pid = 1, tid = 1, ts = ts, dur = 20,
      args = { ["Input Dims"] = { { g.M, g.K }, { g.K, g.N } }, ["Input type"] = { g.type, g.type } } }
    ev[#ev + 1] = { ph = "X", cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 1, tid = 1, ts = ts + 5,
      dur = 3, args = { correlation = corr } }
    ev[#ev + 1] = { ph = "X", cat = "kernel", name = "sm90_xmma_gemm_bf16", pid = 0, tid = 7, ts = ts + 10,
      dur = sec * 1e6, args = { correlation = corr } }
    ts = ts + 30
  end
  if backward then
    ev[#ev + 1] = { ph = "X", cat = "cpu_op", name = "autograd::engine::evaluate_function: MmBackward0",
      pid = 1, tid = 2, ts = 10, dur = 5 }
  end
  return cjson.encode({ traceEvents = ev, deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } })
end

-- n GEMMs of 8,448 x 1,024 at each K of ks.
local function gemms_at(ks, n, eta, k0, type)
  local list = {}
  for _, k in ipairs(ks) do
    for _ = 1, n do list[#list + 1] = { M = 8448, N = 1024, K = k, eta = eta, k0 = k0, type = type } end
  end
  return list
end

-- One causal flash call of 2 x 32 heads x S x 128 appended to ev, with its
-- launch and kernel (correlation corr, at ts): forward FLOPs 2 B S (S / 2)
-- H (128 + 128), timed at `eta` of the H100's bf16 peak (989.4 TFLOP/s),
-- the backward at 2.5x (compute.c); eta nil: a kernel of no time.
local function flash_call(ev, corr, ts, S, backward, eta)
  local q = { 2, 32, S, 128 }
  local flops = 2 * 2 * S * (S / 2) * 32 * 256
  local sec = eta and flops * (backward and 2.5 or 1) / (989.4e12 * eta) or 0
  local tid = backward and 2 or 1
  ev[#ev + 1] = { ph = "X", cat = "cpu_op", pid = 1, tid = tid, ts = ts, dur = 50,
    name = "aten::_scaled_dot_product_flash_attention" .. (backward and "_backward" or ""),
    args = { ["Input Dims"] = backward and { q, q, q, q } or { q, q, q },
      ["Input type"] = { "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16" },
      ["Concrete Inputs"] = backward and { "", "", "", "", "", "", "", "", "", "", "0.", "True" }
        or { "", "", "", "0.", "True", "False" } } }
  ev[#ev + 1] = { ph = "X", cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 1, tid = tid, ts = ts + 5,
    dur = 3, args = { correlation = corr } }
  ev[#ev + 1] = { ph = "X", cat = "kernel", name = "pytorch_flash::flash_fwd_kernel", pid = 0, tid = 7,
    ts = ts + 10, dur = sec * 1e6, args = { correlation = corr } }
end

describe("apsearch.trace GEMMs", function()
  local trace = require "apsearch.trace"
  local function near(want, got, tol) assert.is_true(math.abs(got - want) <= tol, tostring(got)) end

  it("prices one GEMM as the core does (core.gemm_seconds)", function()
    local core = require "apsearch.core"
    -- 8,448 x 1,024 fills 8 whole waves of 64 x 128 tiles on 132 SMs:
    -- 4 us + 2 M N K (K + 288) / (989.4e12 x 0.639 x K)
    near(4e-6 + 2 * 8448 * 1024 * 1024 * (1024 + 288) / (989.4e12 * 0.639 * 1024),
      core.gemm_seconds("h100-sxm-80gb", "bf16", 8448, 1024, 1024), 1e-15)
    assert.are.equal(0, core.gemm_seconds("h100-sxm-80gb", "bf16", 0, 1024, 1024))
    assert.has_error(function() core.gemm_seconds("h100-sxm-80gb", "bf17", 1, 1, 1) end)
    assert.has_error(function() core.gemm_seconds("h100-sxm-80gb", "bf16", 0 / 0, 1, 1) end)
    assert.has_error(function() core.gemm_seconds("h100-sxm-80gb", "bf16", 1, math.huge, 1) end)
    assert.has_error(function() core.gemm_seconds("h99", "bf16", 1, 1, 1) end)
  end)

  -- The GPU's gap between queued kernels, checked with an independent
  -- script (Python over the same events: successive activities of one
  -- stream, kernels, copies and memsets, a pair when both are kernels, no
  -- NCCL one, the second's cudaLaunchKernel* call ended by the first's
  -- end; statistics.median of start less end, 0 at least): the H100
  -- trace 838 pairs, median 1.183838 us (1,001 and 1.696 us with the 163
  -- pairs that have a copy or memset between them); the A100 trace 4,222
  -- pairs, 3 us (whole-us timestamps; 5,082 and 4 us with copies); the
  -- Nsight export none (its CloverLeaf syncs after every kernel, so no
  -- kernel is queued).
  it("measures the GPU's gap between queued kernels on public traces as an independent script does", function()
    local m = trace.measure(trace.load(QWEN))
    assert.are.equal(838, m.queued_pairs)
    near(1.183838e-6, m.gpu_seconds_per_kernel, 1e-12)
    m = trace.measure(trace.load(FIXTURE))
    assert.are.equal(4222, m.queued_pairs)
    near(3e-6, m.gpu_seconds_per_kernel, 1e-15)
    -- whole microseconds (a double would resolve 0.25 us at 1.68e15)
    assert.is_true(m.whole_us)
    assert.are.equal(1e-6, m.gap_resolution)
    -- the shortest kernels, the ceil(n / 100)-th of the non-NCCL kernels'
    -- durations (same script): A100 60th of 6,000, 3 us; H100 15th of
    -- 1,465, 1.568 us; the Nsight export 14th of 1,312, 3.808 us
    near(3e-6, m.gpu_min_kernel_seconds, 1e-15)
    near(1.568e-6, trace.measure(trace.load(QWEN)).gpu_min_kernel_seconds, 1e-15)
    near(3.808e-6, trace.measure(trace.load(NSYS)).gpu_min_kernel_seconds, 1e-15)
    m = trace.measure(trace.load(NSYS))
    assert.are.equal(0, m.queued_pairs)
    assert.is_nil(m.gpu_seconds_per_kernel)
  end)

  it("counts a gap only after a queued launch, leaves NCCL kernels out and reads overlap as no gap", function()
    -- stream 7: 200 launches 10 us apart (1 us calls), kernel i at 1100 +
    -- 5 (i - 1) for 4 us: kernel i + 1's call ends (1001 + 10 i) by kernel
    -- i's end (1099 + 5 i) for i <= 19, so 19 queued pairs, 1 us apart;
    -- the later ones were launched late.  Stream 8: 151 kernels queued
    -- long before, 0.5 us apart, every other one NCCL: no pair counts.
    -- Stream 9: 11 queued kernels overlapping by 0.2 us: 10 gaps of 0.
    -- Stream 10: 121 queued kernels 2 us apart: 120 gaps of 2 us.  Median
    -- of 149 gaps (10 x 0, 19 x 1, 120 x 2 us): 2 us.
    local ev = {}
    local function kernel(tid, ts, corr, name)
      ev[#ev + 1] = { ph = "X", cat = "kernel", name = name or "vectorized_elementwise_kernel", pid = 0, tid = tid,
        ts = ts, dur = 4, args = { correlation = corr } }
    end
    local function launch(ts, corr)
      ev[#ev + 1] = { ph = "X", cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 1, tid = 1, ts = ts, dur = 1,
        args = { correlation = corr } }
    end
    for i = 1, 200 do
      launch(1000 + 10 * (i - 1), i)
      kernel(7, 1100 + 5 * (i - 1), i)
    end
    for i = 1, 151 do
      launch(10 + 0.01 * i, 1000 + i)
      kernel(8, 1e6 + 4.5 * (i - 1), 1000 + i, i % 2 == 0 and "ncclDevKernel_AllReduce" or nil)
    end
    for i = 1, 11 do
      launch(500 + 0.01 * i, 2000 + i)
      kernel(9, 2e6 + 3.8 * (i - 1), 2000 + i)
    end
    for i = 1, 121 do
      launch(600 + 0.01 * i, 3000 + i)
      kernel(10, 3e6 + 6 * (i - 1), 3000 + i)
    end
    local dir = tmpdir()
    local p = write(dir .. "/t.json", cjson.encode({ traceEvents = ev,
      deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } }))
    local m = trace.measure(trace.load(p))
    assert.are.equal(149, m.queued_pairs)
    near(2e-6, m.gpu_seconds_per_kernel, 1e-12)
    -- a memset between kernels 1 and 2 of stream 10 breaks that pair
    ev[#ev + 1] = { ph = "X", cat = "gpu_memset", name = "Memset (Device)", pid = 0, tid = 10, ts = 3e6 + 4.5,
      dur = 1 }
    p = write(dir .. "/t2.json", cjson.encode({ traceEvents = ev,
      deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } }))
    m = trace.measure(trace.load(p))
    assert.are.equal(148, m.queued_pairs)
    -- launches of another process with the same correlation ids (traces
    -- joined): not measured, and why
    for i = 1, 121 do
      ev[#ev + 1] = { ph = "X", cat = "cuda_runtime", name = "cudaLaunchKernel", pid = 2, tid = 1, ts = 900 + i,
        dur = 1, args = { correlation = 3000 + i } }
    end
    p = write(dir .. "/t3.json", cjson.encode({ traceEvents = ev,
      deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } }))
    m = trace.measure(trace.load(p))
    assert.is_nil(m.gpu_seconds_per_kernel)
    assert.truthy(m.gap_not_measured:find("121 launches share a correlation id", 1, true), m.gap_not_measured)
  end)

  it("says why the shortest kernel is not measured: too few, zero-length or no small kernels", function()
    local function streams_of(durs)
      local st = { ts = {}, te = {}, dur = {}, corr = {}, kind = {}, n = #durs }
      for i, d in ipairs(durs) do
        st.ts[i], st.te[i], st.dur[i], st.corr[i], st.kind[i] = 10 * i, 10 * i + d, d, false, 1
      end
      return { [1] = st, fine = true }
    end
    local few = {}
    for i = 1, 99 do few[i] = 2 end
    local v, why = trace.min_kernel_measure(streams_of(few))
    assert.is_nil(v)
    assert.truthy(why:find("99 kernels (NCCL's left out), 100 needed", 1, true), why)
    few[100] = 2
    few[1] = 0 -- the 1st percentile of 100 is the shortest: 0
    v, why = trace.min_kernel_measure(streams_of(few))
    assert.is_nil(v)
    assert.truthy(why:find("under the 0.5 us", 1, true), why)
    local big = {}
    for i = 1, 200 do big[i] = 100 + i end -- the 2nd shortest of 200: 102 us
    v, why = trace.min_kernel_measure(streams_of(big))
    assert.is_nil(v)
    assert.truthy(why:find("102.0 us, above 20 us", 1, true), why)
    big[1], big[2] = 1.5, 1.5 -- two short ones: the 2nd shortest is 1.5 us
    near(1.5e-6, trace.min_kernel_measure(streams_of(big)), 1e-18)
  end)

  it("does not measure a gap its timestamps cannot resolve", function()
    -- 121 queued kernels 2 us apart at 1e18 us: a double's step there is
    -- 128 us
    local gaps = {}
    for i = 1, 120 do gaps[i] = 2e-6 end
    local g, why = trace.gap_measure(gaps, 128, 0)
    assert.is_nil(g)
    assert.truthy(why:find("resolve only 128 us", 1, true), why)
    g, why = trace.gap_measure(gaps, 0.25, 0)
    near(2e-6, g, 1e-18)
    assert.is_nil(why)
    g, why = trace.gap_measure({ 1e-6 }, 0, 0)
    assert.is_nil(g)
    assert.truthy(why:find("1 pairs", 1, true), why)
  end)

  it("fits a public H100 profile's GEMMs as an independent script does, and does not write a forward pass's", function()
    local m = trace.measure(trace.load(QWEN))
    assert.is_false(m.training)
    local fit = trace.gemm_fit(m, "h100-sxm-80gb")
    assert.are.equal(1, #fit)
    local r = fit[1]
    assert.are.equal("bf16", r.class)
    assert.are.equal(168, r.count)
    near(0.008854707, r.measured, 1e-12)
    near(0.824475, r.eta, 1e-6)
    near(185.3777, r.k0, 1e-4)
    assert.are.same({}, r.written)
    assert.truthy(r.why:find("a forward-only profile", 1, true))
    -- without -o: what it measured, and nothing written; the host costs'
    -- caveat on stderr
    local code, out, err = apsearch("calibrate", "--trace", QWEN)
    assert.are.equal(0, code, err)
    assert.truthy(out:gsub("\n  ", " "):find("nothing written (no -o FILE): a calibration would hold " ..
      "devices.h100-sxm-80gb: gpu_min_kernel_seconds, gpu_seconds_per_kernel, host_seconds_per_kernel, " ..
      "host_seconds_per_loop_kernel", 1, true), out)
    assert.truthy(err:find("no autograd backward op: a forward-only profile", 1, true), err)
  end)

  it("recovers the efficiency and K-depth a training trace's GEMMs were timed at, fp8 at the fitted depth", function()
    local list = gemms_at({ 1024, 4096 }, 30, 0.7, 200, "c10::BFloat16")
    for _, g in ipairs(gemms_at({ 2048 }, 45, 0.5, 200, "c10::Float8_e4m3fn")) do list[#list + 1] = g end
    local dir = tmpdir()
    local p = write(dir .. "/t.json", gemm_trace(list, true))
    local m = trace.measure(trace.load(p))
    assert.is_true(m.training)
    local fit = trace.gemm_fit(m, "h100-sxm-80gb")
    near(0.7, fit[1].eta, 1e-9)
    near(200, fit[1].k0, 1e-6)
    near(0.7, fit[1].written.gemm_efficiency, 1e-9)
    near(200, fit[1].written.gemm_half_dim, 1e-6)
    assert.are.equal("fp8", fit[2].class)
    near(0.5, fit[2].written.fp8_gemm_efficiency, 1e-9)
    assert.is_nil(fit[2].written.gemm_half_dim)
    -- and calibrate writes them beside the host costs
    local code, out, err = apsearch("calibrate", "--trace", p, "-o", dir .. "/c.json")
    assert.are.equal(0, code, err)
    local c = cjson.decode(H.read(dir .. "/c.json")).devices["h100-sxm-80gb"]
    near(0.7, c.gemm_efficiency, 1e-9)
    near(200, c.gemm_half_dim, 1e-6)
    near(0.5, c.fp8_gemm_efficiency, 1e-9)
    local flat = out:gsub("\n  ", " ")
    assert.truthy(flat:find("bf16/fp16 GEMMs with recorded shapes: 60, ", 1, true), out)
    assert.truthy(flat:find("gemm_efficiency 0.700 (preset 0.639), gemm_half_dim 200 (preset 288); measured over " ..
      "fitted, by work: 1-100 GFLOP 60 x1.00", 1, true), out)
    assert.truthy(flat:find("fp8_gemm_efficiency 0.500 (preset 0.604) at the bf16 GEMMs' gemm_half_dim 200; ", 1, true), out)
    assert.truthy(flat:find("fp8_gemm_efficiency, gemm_efficiency, gemm_half_dim, gpu_seconds_per_kernel, " ..
      "host_seconds_per_kernel", 1, true), out)
    for line in out:gmatch("[^\n]+") do assert.is_true(utf8.len(line) <= 120, line) end
  end)

  it("fits the efficiency alone at one K, and writes nothing out of bounds or from too few GEMMs", function()
    -- one K: eta = base (1 + 288 / 1024) / (t - t0) at the preset's k0,
    -- timed at eta 0.6 with k0 288: 0.6 exactly
    local m = trace.measure(trace.load(write(tmpdir() .. "/t.json",
      gemm_trace(gemms_at({ 1024 }, 120, 0.6, 288, "c10::Half"), true))))
    local r = trace.gemm_fit(m, "h100-sxm-80gb")[1]
    near(0.6, r.written.gemm_efficiency, 1e-9)
    assert.is_nil(r.written.gemm_half_dim)
    -- timed at eta 1.2: above the bound 0.95, said and not written
    m = trace.measure(trace.load(write(tmpdir() .. "/t.json",
      gemm_trace(gemms_at({ 1024 }, 120, 1.2, 288, "c10::BFloat16"), true))))
    r = trace.gemm_fit(m, "h100-sxm-80gb")[1]
    near(1.2, r.eta, 1e-9)
    assert.are.same({}, r.written)
    assert.truthy(r.why:find("gemm_efficiency 1.200 is outside [0.3, 0.95]", 1, true), r.why)
    -- 19 GEMMs: fewer than M.MIN_GEMMS (and 101 launches, as measure needs)
    local list = gemms_at({ 1024 }, 19, 0.6, 288, "c10::BFloat16")
    for _ = 1, 82 do list[#list + 1] = { M = 64, N = 64, K = 64, eta = 0.6, k0 = 288, type = "float" } end
    m = trace.measure(trace.load(write(tmpdir() .. "/t.json", gemm_trace(list, true))))
    local fit = trace.gemm_fit(m, "h100-sxm-80gb")
    assert.are.equal("19 GEMMs, 20 are needed", fit[1].why)
    assert.are.equal(82, fit.float32)
  end)

  it("fits K-depth only where K spans 2x, takes a bound as the constrained optimum, and refuses joined traces",
    function()
    local function fit_of(list, name, edit)
      local text = gemm_trace(list, true)
      if edit then text = edit(text) end
      return trace.gemm_fit(trace.measure(trace.load(write(tmpdir() .. "/" .. name, text))), "h100-sxm-80gb")
    end
    -- one K: the efficiency alone, no K-depth written or claimed
    local r = fit_of(gemms_at({ 2048 }, 120, 0.55, 288, "c10::BFloat16"), "one.json")[1]
    near(0.55, r.written.gemm_efficiency, 1e-9)
    assert.is_nil(r.written.gemm_half_dim)
    assert.is_nil(r.k0_fitted)
    -- timed with k0 0, the bound: the fit lands within rounding of it
    -- (below it would be clamped to it, with the efficiency refitted there)
    r = fit_of(gemms_at({ 1024, 4096 }, 60, 0.7, 0, "c10::BFloat16"), "k0.json")[1]
    near(0.7, r.written.gemm_efficiency, 1e-9)
    near(0, r.written.gemm_half_dim, 1e-6)
    assert.is_true(r.written.gemm_half_dim >= 0)
    -- timed a rounding past the efficiency bound 0.95: written as 0.95
    r = fit_of(gemms_at({ 1024, 4096 }, 60, 0.95 + 1e-11, 200, "c10::BFloat16"), "hi.json")[1]
    assert.are.equal(0.95, r.written.gemm_efficiency)
    -- and a real excess is refused
    r = fit_of(gemms_at({ 1024, 4096 }, 60, 0.96, 200, "c10::BFloat16"), "over.json")[1]
    assert.are.same({}, r.written)
    -- two processes' traces joined: their correlation ids repeat
    r = fit_of(gemms_at({ 1024, 4096 }, 60, 0.7, 200, "c10::BFloat16"), "joined.json", function(text)
      local t = cjson.decode(text)
      for _, e in ipairs(t.traceEvents) do
        if e.args and e.args.correlation and e.args.correlation > 60 then e.args.correlation = e.args.correlation - 60 end
      end
      return cjson.encode(t)
    end)[1]
    assert.are.same({}, r.written)
    assert.truthy(r.why:find("60 launches share a correlation id with an earlier one", 1, true), r.why)
  end)

  it("ignores a NaN correlation, refuses a kernel longer than a day, fits no GPU but the trace's", function()
    local dir = tmpdir()
    local text = gemm_trace(gemms_at({ 1024, 4096 }, 60, 0.7, 200, "c10::BFloat16"), true)
    -- cjson reads NaN; a kernel whose correlation is NaN matches no launch
    local nan = write(dir .. "/nan.json", (text:gsub('"correlation":1}', '"correlation":NaN}', 1)))
    local r = trace.gemm_fit(trace.measure(trace.load(nan)), "h100-sxm-80gb")[1]
    assert.are.equal(119, r.count)
    near(0.7, r.written.gemm_efficiency, 1e-9)
    local t = cjson.decode(text)
    t.traceEvents[3].dur = 1e308
    local long = write(dir .. "/long.json", cjson.encode(t))
    assert.truthy(one_line(apsearch("calibrate", "--trace", long, "-o", dir .. "/c.json")):find(
      long .. ": trace: traceEvents[2] (sm90_xmma_gemm_bf16): dur 1e+308 us is not a kernel's length (0 to 86400 s)",
      1, true))
    -- an H100 PCIe (no preset) written for --device h100-sxm-80gb: host costs only
    t.traceEvents[3].dur = 10
    t.deviceProperties = { { name = "NVIDIA H100 PCIe" } }
    local pcie = write(dir .. "/pcie.json", cjson.encode(t))
    local code, out, err = apsearch("calibrate", "--trace", pcie, "--device", "h100-sxm-80gb", "-o", dir .. "/p.json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("its kernel rates are not", 1, true), err)
    assert.truthy(out:gsub("\n  ", " "):find("120 shaped GEMMs and 0 attention calls ran on the trace's own GPU, " ..
      "not the --device given", 1, true), out)
    assert.are.same({ "host_seconds_per_kernel", "host_seconds_per_loop_kernel" },
      require("apsearch.util").sorted_keys(cjson.decode(H.read(dir .. "/p.json")).devices["h100-sxm-80gb"]))
  end)

  it("fits the fused-attention efficiency of a training trace's SDPA calls, by keys", function()
    -- flash calls forward and backward at 4K and 16K, timed at 0.4
    local ev, corr = {}, 0
    for _, S in ipairs({ 4096, 16384 }) do
      for _ = 1, 30 do
        for _, backward in ipairs({ false, true }) do
          corr = corr + 1
          flash_call(ev, corr, corr * 100, S, backward, 0.4)
        end
      end
    end
    ev[#ev + 1] = { ph = "X", cat = "cpu_op", name = "autograd::engine::evaluate_function: MmBackward0",
      pid = 1, tid = 2, ts = 10, dur = 5 }
    local p = write(tmpdir() .. "/a.json", cjson.encode({ traceEvents = ev,
      deviceProperties = { { name = "NVIDIA H100 80GB HBM3" } } }))
    local r = trace.attention_fit(trace.measure(trace.load(p)), "h100-sxm-80gb")
    assert.are.equal(120, r.count)
    assert.are.equal(60, r.backward)
    near(0.4, r.written.attention_efficiency, 1e-9)
    assert.are.equal(60, r.bins[2].count)
    assert.are.equal(60, r.bins[3].count)
    near(1, r.bins[3].measured / r.bins[3].fitted, 1e-9)
    -- written, and applied over the stack's benchmarked kernel (a
    -- TorchTitan job's SDPA 0.326): the trace measured the user's own
    local dir = tmpdir()
    local code, out, err = apsearch("calibrate", "--trace", p, "-o", dir .. "/c.json")
    assert.are.equal(0, code, err)
    assert.truthy(out:gsub("\n  ", " "):find("attention calls with recorded shapes: 120 (60 backward), ", 1, true), out)
    near(0.4, cjson.decode(H.read(dir .. "/c.json")).devices["h100-sxm-80gb"].attention_efficiency, 1e-9)
    local pol = write(dir .. "/p.lua", [[return { model = "llama-3.1-8b",
      cluster = { device = "h100-sxm-80gb", nodes = 1 },
      training = { framework = "fsdp2", global_batch_size = 8, seq_length = 8192 } }]])
    code, out, err = apsearch("estimate", pol, "--strategy", "fsdp_degree=8,micro_batch_size=1",
      "--calibration", dir .. "/c.json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("applied to h100-sxm-80gb: attention_efficiency 0.4, gpu_seconds_per_kernel 0, " ..
      "host_seconds_per_kernel 0.0002", 1, true), err)
    assert.is_nil(err:find("kept at stack", 1, true), err)
  end)

  it("fits a public profile's attention as an independent script does (forward only: not written)", function()
    -- 24 flash calls of 16 x 16 heads x 559 x 64, causal: 2.4575e11 FLOPs
    -- in 0.002722705 s of kernels, 0.091225 of the H100's bf16 peak
    local r = trace.attention_fit(trace.measure(trace.load(QWEN)), "h100-sxm-80gb")
    assert.are.equal(24, r.count)
    near(0.002722705, r.measured, 1e-12)
    near(0.091225, r.eta, 1e-6)
    assert.are.same({}, r.written)
    assert.truthy(r.why:find("outside [0.1, 0.9]", 1, true), r.why)
  end)

  it("sets a training trace's kernel time per step beside the job's estimate, before and after its calibration",
    function()
    local list = gemms_at({ 1024, 4096 }, 60, 0.7, 200, "c10::BFloat16")
    local t = cjson.decode(gemm_trace(list, true))
    -- two ProfilerSteps of 0.5 and 0.7 s (median 0.6) and two NCCL
    -- kernels of 10 ms
    t.traceEvents[#t.traceEvents + 1] = { ph = "X", cat = "user_annotation", name = "ProfilerStep#1", pid = 1, tid = 1,
      ts = 0, dur = 5e5 }
    t.traceEvents[#t.traceEvents + 1] = { ph = "X", cat = "user_annotation", name = "ProfilerStep#2", pid = 1, tid = 1,
      ts = 5e5, dur = 7e5 }
    for i = 1, 2 do
      t.traceEvents[#t.traceEvents + 1] = { ph = "X", cat = "kernel", name = "ncclDevKernel_AllGather_RING_LL",
        pid = 0, tid = 9, ts = i * 1000, dur = 1e4 }
    end
    local dir = tmpdir()
    local path = write(dir .. "/t.json", cjson.encode(t))
    -- the GEMM kernels' seconds, as gemm_trace timed them
    local gemm = 0
    for _, g in ipairs(list) do gemm = gemm + 4e-6 + 2 * g.M * g.N * g.K * (g.K + g.k0) / (989.4e12 * 0.7 * g.K) end
    local pol = write(dir .. "/p.lua", [[return { model = "llama-3.1-8b",
      cluster = { device = "h100-sxm-80gb", nodes = 1 },
      training = { framework = "fsdp2", global_batch_size = 8, seq_length = 2048 } }]])
    local strat = "fsdp_degree=8,micro_batch_size=1"
    local code, out, err = apsearch("calibrate", "--trace", path, pol, "--strategy", strat, "-o", dir .. "/c.json")
    assert.are.equal(0, code, err)
    local flat = out:gsub("\n    ", " "):gsub("\n  (%l)", " %1")
    local function est_of(...)
      local c2, o2, e2 = apsearch("estimate", pol, "--strategy", strat, "--format", "json", ...)
      assert.are.equal(0, c2, e2)
      return cjson.decode(o2).estimate
    end
    local before, after = est_of(), est_of("--calibration", dir .. "/c.json")
    local pb, compute = before.performance_breakdown, 0
    for _, k in ipairs({ "compute_fwd", "compute_bwd", "recompute", "optimizer" }) do compute = compute + pb[k].total end
    assert.truthy(flat:find(("step time: measured 0.6000 s (median ProfilerStep), estimated %.4f s"):format(
      before.step_time), 1, true), flat)
    assert.truthy(flat:find(("GPU compute kernels (all but NCCL's): measured %.4f s (gemm %.4f), estimated %.4f s"):format(
      gemm / 2, gemm / 2, compute), 1, true), flat)
    assert.truthy(flat:find("NCCL kernels: measured 0.0100 s", 1, true), flat)
    assert.truthy(flat:find(("with this trace's calibration (gemm_efficiency, gemm_half_dim, gpu_seconds_per_kernel, " ..
      "host_seconds_per_kernel, host_seconds_per_loop_kernel): estimated step time %.4f s"):format(after.step_time), 1,
      true), flat)
    assert.are_not.equal(before.step_time, after.step_time)
    -- a trace without ProfilerStep cannot be set per step
    local bare = write(dir .. "/b.json", gemm_trace(list, true))
    assert.truthy(one_line(apsearch("calibrate", "--trace", bare, pol, "--strategy", strat)):find(
      bare .. ": trace: no ProfilerStep annotation: its kernel time cannot be set per step", 1, true))
  end)

  it("a second breaker's findings: --from agrees with the policy, the trace's own GPU is named, no inf, --quiet",
    function()
    local dir = tmpdir()
    local list = gemms_at({ 1024, 4096 }, 60, 0.7, 200, "c10::BFloat16")
    local t = cjson.decode(gemm_trace(list, true))
    t.traceEvents[#t.traceEvents + 1] = { ph = "X", cat = "user_annotation", name = "ProfilerStep#1", pid = 1, tid = 1,
      ts = 0, dur = 5e5 }
    -- 30 causal forward flash calls at 4,096 at 0.4 of the peak
    for i = 1, 30 do flash_call(t.traceEvents, 1000 + i, 1e6 + i * 100, 4096, false, 0.4) end
    local path = write(dir .. "/t.json", cjson.encode(t))
    -- a job without flash attention: the trace's flash value reaches its
    -- unfused attention on both paths, as --calibration's does
    local pol = write(dir .. "/p.lua", [[return { model = "llama-3.1-8b",
      cluster = { device = "h100-sxm-80gb", nodes = 1 },
      training = { global_batch_size = 8, seq_length = 4096, flash_attention = false } }]])
    local code, _, err = apsearch("run", pol, "--top-k", "1", "--out", dir .. "/r", "--quiet")
    assert.are.equal(0, code, err)
    local rec = cjson.decode(H.read(dir .. "/r/result.json")).top_k_strategies[1]
    local strat = {}
    for _, k in ipairs({ "dp_degree", "fsdp_degree", "tp_degree", "pp_degree", "vpp_degree", "cp_degree",
        "micro_batch_size", "zero_stage" }) do
      if rec[k] ~= nil then strat[#strat + 1] = k .. "=" .. tostring(rec[k]) end
    end
    local function calibrated(...)
      local c2, o2, e2 = apsearch("calibrate", "--trace", path, ...)
      assert.are.equal(0, c2, e2)
      return o2:gsub("\n%s+", " "):match("with this trace's calibration %b(): estimated step time ([%d.]+) s")
    end
    local a = calibrated("--from", dir .. "/r", "--rank", "1")
    local b = calibrated(pol, "--strategy", table.concat(strat, ","), "--set", "search_space.layer_recompute=" ..
      tostring(rec.layer_recompute))
    assert.truthy(a, "no calibrated line")
    assert.are.equal(a, b)
    -- --device for another part: the note names the trace's own GPU
    local _, _, e3 = apsearch("calibrate", "--trace", path, "--device", "h200-sxm-141gb", pol, "--strategy",
      "fsdp_degree=8")
    assert.truthy(e3:find("the trace ran on h100-sxm-80gb, the job is estimated on h100-sxm-80gb", 1, true) == nil, e3)
    -- --quiet: no note at all
    local _, _, e4 = apsearch("calibrate", "--trace", path, "--device", "h200-sxm-141gb", "--quiet")
    assert.are.equal("", e4)
  end)

  it("says an attention fit whose kernels took no time, and prints a GPU's control characters escaped", function()
    local ev = {}
    for corr = 1, 120 do flash_call(ev, corr, corr * 100, 4096, false, nil) end
    local p = write(tmpdir() .. "/z.json", cjson.encode({ traceEvents = ev,
      deviceProperties = { { name = "NVIDIA H100 80GB HBM3\27]0;x\7" } } }))
    local code, out, err = apsearch("calibrate", "--trace", p)
    assert.are.equal(0, code, err)
    local flat = out:gsub("\n  ", " ")
    assert.truthy(flat:find("attention_efficiency not fitted, not written: their kernels took no time", 1, true), out)
    assert.is_nil(out:find("inf", 1, true), out)
    assert.is_nil(out:find("nan", 1, true), out)
    assert.is_nil(out:find("\27", 1, true), out)
    assert.truthy(flat:find("(NVIDIA H100 80GB HBM3\\27]0;x\\7)", 1, true), out)
  end)

  it("reads an Nsight Systems SQLite export as a Kineto trace (a public one, checked by an independent script)",
    function()
    local t = trace.load(NSYS)
    assert.are.equal("NVIDIA A100-SXM4-80GB", t.devices[1])
    assert.are.equal("a100-sxm4-80gb", trace.preset_of(t))
    local m = trace.measure(t)
    assert.are.equal(1312, m.launches)
    assert.are.equal(1, m.threads)
    near(13.566e-6, m.host_seconds_per_kernel, 1e-12)
    near(3.687e-6, m.host_seconds_per_loop_kernel, 1e-12)
    local total, count = 0, 0
    for c, sec in pairs(m.kernel_seconds) do total, count = total + sec, count + m.kernels[c] end
    assert.are.equal(1312, count)
    near(0.29440454, total, 1e-9)
    -- an SQLite file that is not such an export is said so
    local dir = tmpdir()
    local f = assert(io.open(dir .. "/x.sqlite", "wb"))
    f:write("SQLite format 3\0", string.rep("\0", 1008))
    f:close()
    assert.truthy(one_line(apsearch("calibrate", "--trace", dir .. "/x.sqlite")):find(dir .. "/x.sqlite: trace: ",
      1, true))
  end)

  it("reads an export read-only, names a bad row's table and row, takes an export without kernels", function()
    local dir = tmpdir()
    -- a copy with a (hot-looking) journal beside it: neither is written,
    -- the journal neither replayed nor removed
    local copy = dir .. "/c.sqlite"
    write(copy, H.read(NSYS), "wb")
    write(copy .. "-journal", string.rep("\217", 512), "wb")
    local before = H.read(copy)
    assert.are.equal(1312, trace.measure(trace.load(copy)).launches)
    assert.are.equal(before, H.read(copy))
    assert.truthy(H.read(copy .. "-journal"))
    -- exports built with lua-sql-sqlite3: 150 launches, no kernel table
    local driver = require("luasql.sqlite3").sqlite3()
    local function export(name, runtime_cols, rows)
      local path = dir .. "/" .. name
      local con = assert(driver:connect(path))
      assert(con:execute("CREATE TABLE StringIds (id INTEGER, value TEXT)"))
      assert(con:execute("INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000')"))
      assert(con:execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (" .. runtime_cols .. ")"))
      for _, r in ipairs(rows) do assert(con:execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES " .. r)) end
      con:close()
      return path
    end
    local rows = {}
    for i = 1, 150 do rows[i] = ("(%d, %d, 1, %d, 1)"):format(i * 20000, i * 20000 + 3000, i) end
    local cols = "start, end, globalTid, correlationId, nameId"
    local m = trace.measure(trace.load(export("ok.sqlite", cols, rows)))
    assert.are.equal(150, m.launches)
    near(20e-6, m.host_seconds_per_kernel, 1e-12)
    near(3e-6, m.host_seconds_per_loop_kernel, 1e-12)
    assert.is_nil(next(m.kernels))
    -- a NULL start, named by table and row; a missing column, named
    rows[7] = "(NULL, 5, 1, 7, 1)"
    local bad = export("null.sqlite", cols, rows)
    assert.truthy(one_line(apsearch("calibrate", "--trace", bad)):find(bad .. ": trace: Nsight Systems export: " ..
      "CUPTI_ACTIVITY_KIND_RUNTIME row 7: start must be a number of nanoseconds (got nil)", 1, true))
    local nocol = export("nocol.sqlite", "start, end, globalTid, correlationId", { "(1, 2, 1, 1)" })
    assert.truthy(one_line(apsearch("calibrate", "--trace", nocol)):find(
      "Nsight Systems export: CUPTI_ACTIVITY_KIND_RUNTIME has no column nameId", 1, true))
    -- a view in place of a table is refused before it is read: a
    -- recursive one never ends (a breaker's export hung calibrate --trace)
    local endless = dir .. "/view.sqlite"
    local con = assert(driver:connect(endless))
    assert(con:execute("CREATE TABLE StringIds (id INTEGER, value TEXT)"))
    assert(con:execute("CREATE VIEW CUPTI_ACTIVITY_KIND_RUNTIME AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL " ..
      "SELECT i + 1 FROM n) SELECT i AS start, i + 1 AS end, 1 AS globalTid, i AS correlationId, 1 AS nameId FROM n"))
    con:close()
    assert.truthy(one_line(apsearch("calibrate", "--trace", endless)):find(endless .. ": trace: Nsight Systems " ..
      "export: CUPTI_ACTIVITY_KIND_RUNTIME is a view, not a table (nsys export writes tables)\n", 1, true))
    -- ... also when named in another case (SQLite resolves names without
    -- regard to it), and a generated column, whose expression runs on
    -- every read, is refused (a breaker's round 10)
    local function db(name, sqls)
      local path = dir .. "/" .. name
      local c = assert(driver:connect(path))
      for _, q in ipairs(sqls) do assert(c:execute(q)) end
      c:close()
      return path
    end
    local lower = db("lower.sqlite", { "CREATE TABLE StringIds (id INTEGER, value TEXT)",
      "CREATE VIEW cupti_activity_kind_runtime AS SELECT 1 AS start, 2 AS end, 1 AS globalTid, " ..
      "1 AS correlationId, 1 AS nameId" })
    assert.truthy(one_line(apsearch("calibrate", "--trace", lower)):find("CUPTI_ACTIVITY_KIND_RUNTIME is a view, " ..
      "not a table", 1, true))
    local gen = db("gen.sqlite", { "CREATE TABLE StringIds (id INTEGER, value TEXT AS ('x') VIRTUAL)",
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId)" })
    assert.truthy(one_line(apsearch("calibrate", "--trace", gen)):find(gen .. ": trace: Nsight Systems export: " ..
      "StringIds.value is a generated column (nsys export writes plain columns)\n", 1, true))
    -- the public export under a lowered limit: its error
    local nsys = require "apsearch.nsys"
    local function limited(field, value)
      local keep = nsys[field]
      nsys[field] = value
      local ok, err = pcall(trace.load, NSYS)
      nsys[field] = keep
      assert.is_false(ok)
      return tostring(err)
    end
    -- the strings' bytes are bounded before they are read
    local terr = limited("MAX_TEXT_BYTES", 100)
    assert.truthy(terr:find("bytes of text in StringIds.value, more than 100", 1, true), terr)
    -- the row limit counts the strings too
    local err = limited("MAX_ROWS", 100)
    assert.truthy(err:find("111 rows in StringIds, more than 100", 1, true), err)
  end)

  it("counts a float32 profile's GEMMs without fitting them (the public A100 trace)", function()
    local m = trace.measure(trace.load(FIXTURE))
    assert.is_true(m.training)
    local fit = trace.gemm_fit(m, "a100-sxm4-80gb")
    assert.are.equal(0, #fit)
    assert.are.equal(25, fit.float32)
  end)
end)

describe("apsearch calibrate --trace", function()
  it("writes a calibration of the trace's device that run and estimate apply", function()
    local dir = tmpdir()
    local code, out, err = apsearch("calibrate", "--trace", FIXTURE, "-o", dir .. "/c.json")
    assert.are.equal(0, code, err)
    local flat = out:gsub("\n  ", " ")
    assert.truthy(flat:find("5240 kernel launches on 2 threads; host 23.0 us per kernel from Python " ..
      "(median launch gap; preset 30.0), 4.0 us per launch call (median; preset 6.0); step 0.2161 s (median of 5 " ..
      "ProfilerStep)", 1, true), out)
    assert.truthy(flat:find("no bf16, fp16 or fp8 GEMM op: GEMM efficiencies not measured\n25 float32 GEMMs", 1,
      true), out)
    -- seconds by class, checked with an independent script: NCCL kernels
    -- 0.190345 s, all kernels 0.401445 s
    assert.truthy(flat:find("whatever call launched them: NCCL and library kernels too): elementwise 5784 (0.0838 s), " ..
      "gemm 205 (0.1269 s), nccl 80 (0.1903 s), unknown 11 (0.0004 s)", 1, true), out)
    for line in out:gmatch("[^\n]+") do assert.is_true(utf8.len(line) <= 120, line) end
    local c = cjson.decode(H.read(dir .. "/c.json"))
    assert.are.same({ host_seconds_per_kernel = 23e-6, host_seconds_per_loop_kernel = 4e-6,
      gpu_seconds_per_kernel = 3e-6, gpu_min_kernel_seconds = 3e-6 }, c.devices["a100-sxm4-80gb"])
    assert.truthy(flat:find("GPU 3.00 us between two kernels of a stream when the second was queued (median of " ..
      "4222 such pairs, NCCL kernels and pairs with a copy between left out; preset 3.00): gpu_seconds_per_kernel",
      1, true), out)
    local total = 0
    for _, sec in pairs(c.trace.kernel_seconds) do total = total + sec end
    assert.is_true(math.abs(total - 0.401445) < 1e-9, total)
    assert.is_true(math.abs(c.trace.kernel_seconds.nccl - 0.190345) < 1e-9)
    -- applied: the estimate's host time follows the trace's 23 us
    local pol = write(dir .. "/p.lua", [[return { model = "llama-3.1-8b",
      cluster = { device = "a100-sxm4-80gb", nodes = 1 },
      training = { global_batch_size = 8, seq_length = 2048 } }]])
    local function host_total(...)
      local code2, out2, err2 = apsearch("estimate", pol, "--strategy", "fsdp_degree=8,micro_batch_size=1",
        "--format", "json", ...)
      assert.are.equal(0, code2, err2)
      return cjson.decode(out2).estimate.performance_breakdown.host_launch.total
    end
    local base, calibrated = host_total(), host_total("--calibration", dir .. "/c.json")
    assert.is_true(math.abs(calibrated / base - 23 / 30) < 1e-9, calibrated / base)
    -- and the terminal says so
    local _, _, e3 = apsearch("estimate", pol, "--strategy", "fsdp_degree=8,micro_batch_size=1",
      "--calibration", dir .. "/c.json")
    assert.truthy(e3:find("apsearch: note: calibration " .. dir .. "/c.json applied to a100-sxm4-80gb: " ..
      "gpu_min_kernel_seconds 3e-06, gpu_seconds_per_kernel 3e-06, host_seconds_per_kernel 2.3e-05, " ..
      "host_seconds_per_loop_kernel 4e-06", 1, true), e3)
  end)

  it("refuses a trace whose JSON would decode into more than MAX_DECODED_BYTES", function()
    local trace = require "apsearch.trace"
    -- core.json_decoded_bytes by hand on {"a":[1,2,{},"x,y"]}: 20 bytes of
    -- text, 3 containers x 72, 6 values (3 containers + 3 commas outside
    -- strings) x 48, 2 strings x 40 = 20 + 216 + 288 + 80 = 604
    assert.are.equal(604, require("apsearch.core").json_decoded_bytes('{"a":[1,2,{},"x,y"]}'))
    -- the public A100 profile: the estimate is above what decoding it
    -- takes (2.2x its text), and 7.2x its text, so a profile of
    -- MAX_JSON_BYTES is read
    local text = trace.read_text(FIXTURE)
    local estimate = require("apsearch.core").json_decoded_bytes(text)
    collectgarbage()
    local before = collectgarbage("count") * 1024
    local doc = require("cjson").decode(text)
    collectgarbage()
    local took = collectgarbage("count") * 1024 - before
    assert.truthy(doc.traceEvents)
    assert.is_true(took > 2 * #text and took < estimate, took)
    assert.is_true(estimate / #text * trace.MAX_JSON_BYTES < trace.MAX_DECODED_BYTES, estimate / #text)
    -- two-byte tables: a breaker's 0.5 MB gzip of "[{},{},...]" inflated
    -- to 512 MiB and took 15.9 GB; here 200,001 of them against a limit
    -- lowered to 16 MiB
    local dir = tmpdir()
    local bomb = write(dir .. "/bomb.json", '{"traceEvents": [' .. string.rep("{},", 200000) .. "{}]}")
    local limit = trace.MAX_DECODED_BYTES
    trace.MAX_DECODED_BYTES = 16 << 20
    local ok, err = pcall(trace.load, bomb)
    trace.MAX_DECODED_BYTES = limit
    assert.is_false(ok)
    assert.are.equal(bomb .. ": trace: decoding it would take about 33 MiB, more than 16 MiB (0.6 MiB of JSON): " ..
      "record fewer steps or one rank", err)
  end)

  it("refuses bad traces with one line naming the file", function()
    local dir = tmpdir()
    local raw = H.read(FIXTURE)
    local cut = write(dir .. "/cut.json.gz", raw:sub(1, #raw // 2))
    assert.truthy(one_line(apsearch("calibrate", "--trace", cut, "-o", dir .. "/o.json")):find(
      cut .. ": trace: truncated gzip (no end of stream)", 1, true))
    -- many gzip members (each a stream of its own) and a plain JSON past
    -- the inflated bound are refused (a breaker's round 10)
    local one = H.read(FIXTURE)
    local trace = require "apsearch.trace"
    local members = trace.MAX_GZIP_MEMBERS
    trace.MAX_GZIP_MEMBERS = 2
    local mok, merr = pcall(trace.read_text, write(dir .. "/three.json.gz", one .. one .. one, "wb"))
    trace.MAX_GZIP_MEMBERS = members
    assert.is_false(mok)
    assert.truthy(tostring(merr):find("more than 2 gzip members (a profiler writes one)", 1, true), merr)
    local json_limit = trace.MAX_JSON_BYTES
    trace.MAX_JSON_BYTES = 10
    local jok, jerr = pcall(trace.read_text, write(dir .. "/plain.json", string.rep(" ", 11) .. "{}"))
    trace.MAX_JSON_BYTES = json_limit
    assert.is_false(jok)
    assert.truthy(tostring(jerr):find("13 bytes of JSON, more than 0 MiB", 1, true), jerr)
    local junk = write(dir .. "/junk.json", "{\"traceEvents\": [")
    assert.truthy(one_line(apsearch("calibrate", "--trace", junk, "-o", dir .. "/o.json")):find(
      junk .. ": trace: not valid JSON", 1, true))
    -- wrong units: a timestamp that is not a number of microseconds
    local ev = cjson.decode(synthetic(200, 10, 3))
    ev.traceEvents[7].ts = "1.5 ms"
    local units = write(dir .. "/units.json", cjson.encode(ev))
    assert.are.equal("apsearch: " .. units .. ": trace: traceEvents[6] (cudaLaunchKernel): ts must be a finite " ..
      "number of microseconds (got \"1.5 ms\")\n",
      one_line(apsearch("calibrate", "--trace", units, "-o", dir .. "/o.json")))
    -- a trace without CPU activities (GPU kernels only)
    local few = write(dir .. "/few.json", synthetic(50, 10, 3))
    assert.truthy(one_line(apsearch("calibrate", "--trace", few, "-o", dir .. "/o.json")):find(
      "49 kernel launch gaps (runtime calls cudaLaunchKernel / hipLaunchKernel) where 100 are needed", 1, true))
    -- a GPU with no preset: --device is needed, and must be a preset
    local ev2 = cjson.decode(synthetic(200, 10, 3))
    ev2.deviceProperties = { { name = "Tesla V100-SXM2-32GB" } }
    local v100 = write(dir .. "/v100.json", cjson.encode(ev2))
    assert.truthy(one_line(apsearch("calibrate", "--trace", v100, "-o", dir .. "/o.json")):find(
      v100 .. ": deviceProperties: no device preset for the trace's GPU (Tesla V100-SXM2-32GB): give --device NAME",
      1, true))
    assert.truthy(one_line(apsearch("calibrate", "--trace", v100, "--device", "v100", "-o", dir .. "/o.json")):find(
      "--device: devices.v100: unknown device preset", 1, true))
    -- a near name gets its suggestion, as a policy's device does
    assert.truthy(one_line(apsearch("calibrate", "--trace", FIXTURE, "--device", "h100", "-o", tmpdir() .. "/o.json"))
      :find('--device: devices.h100: unknown device preset; did you mean "h100-96gb-500w" or "h100-sxm-80gb"?', 1, true))
    local code = apsearch("calibrate", "--trace", v100, "--device", "a100-sxm4-40gb", "-o", dir .. "/o.json")
    assert.are.equal(0, code)
    -- a device other than the trace's is taken, and said
    local c2, _, e2 = apsearch("calibrate", "--trace", FIXTURE, "--device", "h100-sxm-80gb", "-o", dir .. "/o2.json")
    assert.are.equal(0, c2)
    assert.truthy(e2:find("apsearch: note: " .. FIXTURE .. " ran on NVIDIA A100-SXM4-80GB (a100-sxm4-80gb); its " ..
      "host costs are written for --device h100-sxm-80gb", 1, true), e2)
    -- a ProfilerStep of zero or absurd length is a broken trace, not a step
    for _, dur in ipairs({ 0, 1e300 }) do
      local st = write(dir .. "/step.json", synthetic(200, 10, 3, { { ph = "X", cat = "user_annotation",
        name = "ProfilerStep#3", pid = 1, tid = 1, ts = 1000, dur = dur } }))
      assert.truthy(one_line(apsearch("calibrate", "--trace", st, "-o", dir .. "/o.json")):find(
        st .. ": trace: traceEvents[200] (ProfilerStep#3): dur " .. (dur == 0 and "0" or "1e+300")
        .. " us is not a training step's length (above 0, up to 86400 s)", 1, true))
    end
    -- --group is refused; a file beside --trace is the job's policy
    assert.truthy(one_line(apsearch("calibrate", "--trace", v100, "--group", "software", "-o", dir .. "/o.json")):find(
      "--trace: takes no --group", 1, true))
    assert.truthy(one_line(apsearch("calibrate", "x.csv", "--trace", FIXTURE, "-o", dir .. "/o.json")):find(
      "x.csv", 1, true))
  end)
end)

describe("-o and --trace through the user's symbolic link", function()
  it("write the link's target and keep the link (util.write_atomic)", function()
    local lfs = require "lfs"
    local dir = tmpdir()
    assert(lfs.link("real.json", dir .. "/L", true))
    local code, _, err = apsearch("calibrate", "--trace", FIXTURE, "-o", dir .. "/L", "--quiet")
    assert.are.equal(0, code, err)
    assert.are.equal("link", lfs.symlinkattributes(dir .. "/L", "mode"))
    assert.are.equal("file", lfs.attributes(dir .. "/real.json", "mode"))
    assert.truthy(cjson.decode(H.read(dir .. "/real.json")).devices["a100-sxm4-80gb"])
    -- a loop of links is refused, not followed for ever
    assert(lfs.link("B", dir .. "/A", true))
    assert(lfs.link("A", dir .. "/B", true))
    local c2, _, e2 = apsearch("estimate", "--trace", dir .. "/A", "--quiet")
    assert.are.equal(2, c2)
    assert.truthy(e2:find("too many levels of symbolic links", 1, true), e2)
  end)
end)

describe("apsearch estimate --trace", function()
  local function spans(doc, pid, tid)
    local out = {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "X" and e.pid == pid and e.tid == tid then out[#out + 1] = e end
    end
    return out
  end

  it("writes the simulated pipeline schedule per rank, the host's launches and the step's tail", function()
    local dir = tmpdir()
    local path = dir .. "/step.json"
    local code, out, err = apsearch("estimate", H.ROOT .. "/examples/llama3_70b_h100.lua", "--set",
      "training.framework=megatron", "--strategy", "tp_degree=8,pp_degree=4,sequence_parallel=true," ..
      "dp_degree=2,micro_batch_size=1,vpp_degree=5,zero_stage=1", "--format", "json", "--trace", path)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("wrote " .. path .. ": the estimated step as a Chrome trace", 1, true))
    local est = cjson.decode(out).estimate
    local doc = cjson.decode(H.read(path))
    assert.are.equal(est.step_time, doc.otherData.step_time_s)
    -- 256 micro-batches x 5 model chunks, a forward and a backward each, on every rank
    for rank = 1, 4 do
      local gpu = spans(doc, rank, 1)
      local f, b, last = 0, 0, 0
      for _, e in ipairs(gpu) do
        if e.cat == "forward" then f = f + 1 elseif e.cat == "backward" then b = b + 1 end
        last = math.max(last, e.ts + e.dur)
      end
      assert.are.same({ 1280, 1280 }, { f, b })
      -- the last event (the exposed optimizer step) ends at the estimated step time
      assert.is_true(math.abs(last / 1e6 - est.step_time) < 1e-6 * est.step_time, rank)
      -- one host span per op: the rank's host time per micro-batch over its 5 chunks
      local host = spans(doc, rank, 2)
      assert.are.equal(2560, #host)
      assert.is_true(math.abs(host[1].dur / 1e6 - est.stages[rank].host_fwd / 5) < 1e-12)
    end
  end)

  it("gives each chunk's launches its share of the rank's layers (a loss-only chunk launched as many)", function()
    -- layers 2 | 14 | 15 | 1 over pp 2 x vpp 2: rank 1 holds chunks of 2
    -- and 15 layers, rank 2 of 14 and 1
    local path = tmpdir() .. "/uneven.json"
    local code, out, err = apsearch("estimate", H.ROOT .. "/examples/llama3_8b_h100.lua", "--strategy",
      "pp_degree=2,vpp_degree=2,stage_partition=2:14:15:1,micro_batch_size=1,tp_degree=2,layer_recompute=full",
      "--format", "json", "--trace", path)
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    local doc = cjson.decode(H.read(path))
    local want = { [1] = { 2 / 17, 15 / 17 }, [2] = { 14 / 15, 1 / 15 } }
    for rank = 1, 2 do
      for _, e in ipairs(spans(doc, rank, 2)) do
        local kind, chunk = e.name:match("^launch (%u) mb %d+ chunk (%d+)$")
        local per = kind == "F" and est.stages[rank].host_fwd or est.stages[rank].host_bwd
        assert.is_true(math.abs(e.dur / 1e6 - per * want[rank][tonumber(chunk)]) < 1e-9 * per, e.name)
      end
    end
  end)

  it("counts the multi-token-prediction layer with the last model chunk's launches", function()
    -- DeepSeek-V3 on 64 GB200, pp 8 x vpp 4: rank 8 holds 2, 2, 2 decoder
    -- layers and the loss chunk, which also runs the MTP layer: 2:2:2:1
    local path = tmpdir() .. "/mtp.json"
    local code, out, err = apsearch("estimate", "--model", "deepseek-v3", "--cluster", "gb200:64", "--strategy",
      "pp_degree=8,vpp_degree=4,ep_degree=32,tp_degree=1,micro_batch_size=1,layer_recompute=full", "--set",
      "training.mtp_num_layers=1", "--format", "json", "--trace", path)
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    local doc = cjson.decode(H.read(path))
    local want = { 2 / 7, 2 / 7, 2 / 7, 1 / 7 }
    for _, e in ipairs(spans(doc, 8, 2)) do
      local kind, chunk = e.name:match("^launch (%u) mb %d+ chunk (%d+)$")
      local per = kind == "F" and est.stages[8].host_fwd or est.stages[8].host_bwd
      assert.is_true(math.abs(e.dur / 1e6 - per * want[tonumber(chunk)]) < 1e-9 * per, e.name)
    end
  end)

  it("without pipelining runs the micro-batches one after the other", function()
    local dir = tmpdir()
    local path = dir .. "/step.json"
    local code, out, err = apsearch("estimate", H.ROOT .. "/examples/llama3_8b_h100.lua", "--strategy",
      "fsdp_degree=8,micro_batch_size=1", "--format", "json", "--trace", path)
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    local gpu = spans(cjson.decode(H.read(path)), 1, 1)
    local ops = 0
    for _, e in ipairs(gpu) do if e.cat == "forward" or e.cat == "backward" then ops = ops + 1 end end
    assert.are.equal(2 * est.micro_batch_num, ops)
    assert.is_true(math.abs(gpu[2].ts / 1e6 - est.stages[1].time_fwd) < 1e-9)
    -- a directory in the way: one line, exit 2
    assert.truthy(one_line(apsearch("estimate", "--trace", dir)):find("--trace: file: cannot write: a directory " ..
      "is in the way", 1, true))
  end)
end)

describe("trace edge cases found by the break pass", function()
  it("reads multi-member gzip, refuses trailing junk, nanosecond units and Grace Hopper without --device", function()
    local zlib = require "zlib"
    local dir = tmpdir()
    local text = synthetic(300, 10, 3)
    local function gz(s) return zlib.deflate(zlib.BEST_SPEED, 15 + 16)(s, "finish") end
    local half = #text // 2
    local mm = write(dir .. "/mm.json.gz", gz(text:sub(1, half)) .. gz(text:sub(half + 1)))
    assert.are.equal(0, (apsearch("calibrate", "--trace", mm, "-o", dir .. "/mm.out.json")))
    local junk = write(dir .. "/junk.json.gz", gz(text) .. "JUNKJUNK")
    assert.truthy(one_line(apsearch("calibrate", "--trace", junk, "-o", dir .. "/o.json")):find(
      junk .. ": trace: 8 bytes after the gzip stream that are not gzip", 1, true))
    -- timestamps in nanoseconds: 30 ms a launch, refused before anything is written
    local ns = write(dir .. "/ns.json", synthetic(300, 30000, 3000))
    assert.truthy(one_line(apsearch("calibrate", "--trace", ns, "-o", dir .. "/ns.out.json")):find(
      "host_seconds_per_kernel: expected a number in [0, 0.01] (got 0.03) (are the trace's ts and dur in " ..
      "microseconds?)", 1, true))
    assert.is_nil(H.read(dir .. "/ns.out.json"))
    local ev = cjson.decode(synthetic(300, 10, 3))
    ev.deviceProperties = { { name = "NVIDIA GH200 480GB" } }
    local gh = write(dir .. "/gh.json", cjson.encode(ev))
    assert.truthy(one_line(apsearch("calibrate", "--trace", gh, "-o", dir .. "/o.json")):find(
      "no device preset for the trace's GPU (NVIDIA GH200 480GB): give --device NAME", 1, true))
  end)

  it("splits a zero-bubble backward's launches between its I and W ops, and skips the trace of an infeasible strategy", function()
    local dir = tmpdir()
    local code, out, err = apsearch("estimate", H.ROOT .. "/examples/qwen3_30b_a3b_h100.lua", "--strategy",
      -- full recompute: without it the fsdp2 run needs 87 GiB (the routed tokens TorchTitan's
      -- score multiply keeps, moe.c), over the H100's limit, and writes no trace
      "tp_degree=1,pp_degree=2,ep_degree=8,zero_stage=3,pp_schedule=interleaved_zero_bubble,layer_recompute=full",
      "--set",
      "training.framework=fsdp2", "--format", "json", "--trace", dir .. "/zb.json")
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    local host = 0
    for _, e in ipairs(cjson.decode(H.read(dir .. "/zb.json")).traceEvents) do
      if e.ph == "X" and e.pid == 1 and e.tid == 2 then host = host + e.dur / 1e6 end
    end
    local want = est.micro_batch_num * (est.stages[1].host_fwd + est.stages[1].host_bwd)
    assert.is_true(math.abs(host / want - 1) < 1e-9, host .. " vs " .. want)
    local c2, o2, e2 = apsearch("estimate", H.ROOT .. "/examples/llama3_70b_h100.lua", "--strategy",
      "tp_degree=2,pp_degree=1", "--trace", dir .. "/inf.json")
    assert.are.equal(1, c2)
    assert.truthy(o2:find("feasible", 1, true))
    assert.truthy(e2:find("no trace written to " .. dir .. "/inf.json: the strategy is infeasible (MEMORY_LIMIT)", 1, true), e2)
    assert.is_nil(H.read(dir .. "/inf.json"))
  end)

  it("applies a hand-written calibration of the loop GEMMs' host cost (no trace measures it)", function()
    local dir = tmpdir()
    local cal = write(dir .. "/g.json", cjson.encode({ schema_version = 1, name = "hand",
      devices = { ["h100-sxm-80gb"] = { host_seconds_per_loop_gemm = 1e-3 } } }))
    local args = { "estimate", H.ROOT .. "/examples/qwen3_30b_a3b_h100.lua", "--strategy",
      "pp_degree=2,ep_degree=8,micro_batch_size=1", "--format", "json" }
    local code, out, err = apsearch(table.unpack(args))
    assert.are.equal(0, code, err)
    local before = cjson.decode(out).estimate.step_time
    args[#args + 1] = "--calibration"
    args[#args + 1] = cal
    code, out, err = apsearch(table.unpack(args))
    assert.are.equal(0, code, err)
    assert.truthy(err:find("applied to h100-sxm-80gb: host_seconds_per_loop_gemm 0.001", 1, true), err)
    -- 30 times the preset's 33 us per GEMM: a dropless EP 8 layer at
    -- micro-batch 1 is bound by the host, the step grows
    assert.is_true(cjson.decode(out).estimate.step_time > 2 * before, out)
  end)

  it("bounds the host's seconds per kernel in a device table", function()
    local e = one_line(apsearch("run", H.ROOT .. "/examples/llama3_8b_h100.lua", "--set",
      "cluster.device.host_seconds_per_kernel=1e30"))
    assert.truthy(e:find("cluster.device.host_seconds_per_kernel: must be in [0, 0.01] s per kernel (got 1e+30)",
      1, true), e)
    e = one_line(apsearch("run", H.ROOT .. "/examples/llama3_8b_h100.lua", "--set",
      "cluster.device.host_seconds_per_loop_gemm=0.011"))
    assert.truthy(e:find("cluster.device.host_seconds_per_loop_gemm: must be in [0, 0.01] s per GEMM (got 0.011)",
      1, true), e)
  end)
end)
