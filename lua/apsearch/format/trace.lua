--- The text `apsearch calibrate --trace` prints (apsearch.trace's
-- measures and fits, and with the job the trace is of, its time per step
-- beside the estimate), as lines the command folds at the table width.
-- @module apsearch.format.trace
local util = require "apsearch.util"

local M = {}

local pct_error = require("apsearch.format.common").pct_error

-- What `calibrate --trace` measured of the trace's GEMMs (trace.calibration's
-- `trace.gemms`), as lines.
local function gemm_lines(g)
  local lines = {}
  for _, class in ipairs({ "bf16", "fp8" }) do
    local r = g[class]
    if r then
      local bins = {}
      for _, b in ipairs(r.bins) do
        if b.count > 0 then
          bins[#bins + 1] = ("%s %d x%.2f"):format(b.name, b.count, b.measured / b.fitted)
        end
      end
      local fitted = "not fitted"
      if r.efficiency then
        fitted = ("%.3f (preset %.3f)"):format(r.efficiency, r.preset_efficiency)
        if r.half_dim_fitted then
          fitted = fitted .. (", gemm_half_dim %.0f (preset %.0f)"):format(r.half_dim, r.preset_half_dim)
        elseif r.half_dim ~= r.preset_half_dim then
          fitted = fitted .. (" at the bf16 GEMMs' gemm_half_dim %.0f"):format(r.half_dim)
        elseif r.half_dim_unseparated then
          fitted = fitted .. " at the preset's gemm_half_dim (the GEMMs' times do not fall with K as the " ..
            "shape model's do)"
        end
      end
      lines[#lines + 1] = ("%s GEMMs with recorded shapes: %d, %.4f s of kernels where the preset prices them at " ..
        "%.4f s: %s %s%s; measured over fitted, by work: %s"):format(
        class == "bf16" and "bf16/fp16" or class, r.count, r.measured_seconds, r.preset_seconds, r.field, fitted,
        r.why_not and (", not written: " .. r.why_not) or "", table.concat(bins, ", "))
    end
  end
  if g.other_device then
    lines[#lines + 1] = ("%d shaped GEMMs and %d attention calls ran on the trace's own GPU, not the --device " ..
      "given: GEMM and attention efficiencies not fitted (a kernel's rate is the GPU's, not the host's)"):format(
      g.other_device.gemms, g.other_device.attention)
  elseif not (g.bf16 or g.fp8) then
    local why = (g.unshaped or 0) > 0 and (" (%d GEMM ops without recorded shapes: torch.profiler's " ..
      "record_shapes=True records them)"):format(g.unshaped)
      or g.float32 > 0 and "" or " (no aten::mm, aten::addmm or aten::_scaled_mm op with recorded shapes)"
    lines[#lines + 1] = ("no bf16, fp16 or fp8 GEMM op%s: GEMM efficiencies not measured"):format(why)
  end
  if g.float32 > 0 then
    lines[#lines + 1] = ("%d float32 GEMMs (FP32 or TF32, which the trace does not say: not a precision apsearch " ..
      "prices) not used"):format(g.float32)
  end
  return lines
end


-- The estimate's categories (performance_breakdown) that run as GPU
-- kernels other than NCCL's, and as NCCL's collectives.
M.TRACE_COMPUTE_CATEGORIES = { "compute_fwd", "compute_bwd", "recompute", "optimizer" }
M.TRACE_NCCL_CATEGORIES = { "tp_comm", "cp_comm", "ep_comm", "pp_p2p", "dp_grad_sync", "fsdp_allgather",
  "fsdp_reducescatter", "hsdp_replicate_sync" }


--- A trace's kernel time per ProfilerStep beside the job's estimate, as
-- lines (unfolded): the step, the GPU's compute kernels (all but NCCL's) against
-- the estimate's compute, NCCL's against its collectives.
function M.beside_job(m, est)
  -- a field (total, exposed) summed over categories of the breakdown
  local function sum(t, keys, field)
    local total = 0
    for _, k in ipairs(keys) do total = total + (t[k] and t[k][field or "total"] or 0) end
    return total
  end
  local ks, n = m.kernel_seconds, m.steps
  local compute, parts = 0, {}
  for _, k in ipairs(util.sorted_keys(ks)) do
    if k ~= "nccl" then
      compute = compute + ks[k]
      parts[#parts + 1] = ("%s %.4f"):format(k, ks[k] / n)
    end
  end
  local pb = est.performance_breakdown or {}
  local est_compute, est_nccl = sum(pb, M.TRACE_COMPUTE_CATEGORIES), sum(pb, M.TRACE_NCCL_CATEGORIES)
  local lines = {
    ("beside the job's estimate, per step of one rank (the trace's kernel time over its %d ProfilerStep; under " ..
      "pipeline parallelism the estimate's is the slowest stage's):"):format(n),
    ("  step time: measured %.4f s (median ProfilerStep), estimated %.4f s (%+.1f %%)%s"):format(m.step_seconds,
      est.step_time, pct_error(est.step_time, m.step_seconds),
      est.feasible and "" or "; the job is estimated over the memory limit"),
    ("  GPU compute kernels (all but NCCL's): measured %.4f s (%s), estimated %.4f s (forward, backward, " ..
      "recompute, optimizer) (%+.1f %%)"):format(compute / n, table.concat(parts, ", "), est_compute,
      compute > 0 and pct_error(est_compute, compute / n) or 0),
    ("  NCCL kernels: measured %.4f s (their time on the GPU, waits for other ranks included), estimated %.4f s of " ..
      "collectives, %.4f s of them exposed"):format((ks.nccl or 0) / n, est_nccl,
      sum(pb, M.TRACE_NCCL_CATEGORIES, "exposed")),
  }
  return lines
end

-- What calibrate --trace measured of the trace's attention calls (its
-- calibration's `trace`), as a line.
local function attention_line(tr)
  local a = tr.attention
  if not a then
    if tr.gemms.other_device then return nil end
    return "no fused attention op with recorded shapes (PyTorch SDPA's flash or cuDNN; TransformerEngine's and " ..
      "flash-attn's are not read): attention_efficiency not measured"
  end
  local bins = {}
  for _, b in ipairs(a.bins) do
    if b.count > 0 then bins[#bins + 1] = ("%s %d x%.2f"):format(b.name, b.count, b.measured / b.fitted) end
  end
  local unpriced = a.unpriced > 0 and ("; %d calls of another precision than bf16 / fp16 not used"):format(a.unpriced)
    or ""
  return ("attention calls with recorded shapes: %d (%d backward), %.4f s of kernels where the device preset " ..
    "prices them at %.4f s: attention_efficiency %s%s%s%s"):format(a.count, a.backward, a.measured, a.estimated,
    a.eta and ("%.3f (preset %.3f; a stack's benchmarked kernel may replace the preset's)"):format(a.eta,
      a.eta_preset) or "not fitted", a.why and (", not written: " .. a.why) or "",
    #bins > 0 and ("; measured over fitted, by keys: " .. table.concat(bins, ", ")) or "", unpriced)
end

--- What calibrate --trace measured, as lines: the host, the kernels by
-- class, the GEMM and attention fits (apsearch.trace.calibration's
-- calibration and measures).
-- @tparam string path the trace
-- @tparam table calib the calibration (its `trace` record)
-- @tparam table m the measures
-- @treturn table lines (unfolded)
function M.measure_lines(path, calib, m)
  local lines, dev = {}, next(calib.devices)
  local ok, preset = pcall(require("apsearch.core").device_preset, dev)
  local function was(f) return ok and ("; preset %.1f"):format(preset[f] * 1e6) or "" end
  lines[#lines + 1] = string.format("trace %s (%s): %d kernel launches on %d thread%s; host %.1f us per kernel " ..
    "from Python (median launch gap%s), %.1f us per launch call (median%s); %s", util.printable(path),
    calib.trace.gpu and util.printable(calib.trace.gpu) or "GPU not recorded", m.launches, m.threads,
    m.threads == 1 and "" or "s", m.host_seconds_per_kernel * 1e6, was("host_seconds_per_kernel"),
    m.host_seconds_per_loop_kernel * 1e6, was("host_seconds_per_loop_kernel"),
    m.step_seconds and string.format("step %.4f s (median of %d ProfilerStep)", m.step_seconds, m.steps)
    or "no ProfilerStep annotation")
  local gap = calib.devices[dev].gpu_seconds_per_kernel
  lines[#lines + 1] = gap and ("GPU %.2f us between two kernels of a stream when the second was queued (median " ..
    "of %d such pairs, NCCL kernels and pairs with a copy between left out%s): gpu_seconds_per_kernel"):format(
      gap * 1e6, m.queued_pairs, ok and ("; preset %.2f"):format(preset.gpu_seconds_per_kernel * 1e6) or "")
    or ("GPU gap between queued kernels not written: " .. (calib.trace.gap_not_written or m.gap_not_measured
      or "the trace ran on another GPU"))
  local shortest = calib.devices[dev].gpu_min_kernel_seconds
  if shortest then
    lines[#lines + 1] = ("GPU %.2f us the shortest a kernel runs (the 1st percentile of the kernels' durations%s): " ..
      "gpu_min_kernel_seconds"):format(shortest * 1e6,
      ok and ("; preset %.2f"):format(preset.gpu_min_kernel_seconds * 1e6) or "")
  else
    lines[#lines + 1] = "GPU shortest kernel not written: " .. tostring(calib.trace.min_kernel_not_written or
      m.min_kernel_not_measured or "the trace ran on another GPU")
  end
  local classes = {}
  for _, k in ipairs(util.sorted_keys(m.kernels)) do
    classes[#classes + 1] = ("%s %d (%.4f s)"):format(k, m.kernels[k], m.kernel_seconds[k])
  end
  lines[#lines + 1] = "kernels run, by class, with their seconds summed over streams (whatever call launched " ..
    "them: NCCL and library kernels too): " .. (#classes > 0 and table.concat(classes, ", ") or "none")
  if #m.unknown > 0 then
    local names = {}
    for i = 1, math.min(#m.unknown, 5) do
      names[i] = util.printable(m.unknown[i].name) .. " x" .. m.unknown[i].count
    end
    lines[#lines + 1] = "unknown kernels (not classed, most frequent): " .. table.concat(names, "; ")
  end
  for _, line in ipairs(gemm_lines(calib.trace.gemms)) do lines[#lines + 1] = line end
  lines[#lines + 1] = attention_line(calib.trace)
  return lines
end

return M
