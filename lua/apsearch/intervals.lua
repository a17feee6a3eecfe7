--- Prediction intervals: how far a measured run lands from the estimate,
-- from the out-of-sample errors of the published runs.
--
-- For step time the errors are leave-one-source-out residuals (each run
-- predicted with efficiencies fitted on the other sources,
-- apsearch.crossval), r = log(measured step time / estimated step time),
-- grouped by class: framework x hardware generation x precision family
-- (16-bit or quantized). A class with fewer than `M.MIN_ROWS` runs, or
-- runs from fewer than `M.MIN_SOURCES` sources, takes the pooled residuals
-- of every class. The interval at `M.LEVEL` is split-conformal on the
-- absolute residual (Vovk et al. 2005, "Algorithmic Learning in a Random
-- World"; Lei et al. 2018, JASA 113(523), Sec. 2.2): with n residuals, q is
-- the ceil((n + 1) LEVEL)-th smallest |r|, and the interval is the estimate
-- times exp(-q) .. exp(q). For runs exchangeable with the residuals' runs
-- it covers at least LEVEL of them whatever their distribution (and less
-- than LEVEL + 1 / (n + 1)); fewer than LEVEL / (1 - LEVEL) residuals give
-- no interval. It is symmetric on purpose: the defaults are fitted to
-- balance the errors of the sources, so the sign of a new source's bias is
-- not predictable from the others' (held out, the public sources' mean
-- log errors are -0.12 to +0.07); the quantiles of the pooled residuals
-- would carry the fitted sources' lean into the interval.
-- Peak memory has no fitted parameter, so its in-sample residuals are
-- already out of sample; they are grouped by framework (the same rules:
-- a framework with too few runs or sources takes the pooled residuals).
-- Mixture-of-experts step times take their own class (M.MOE_CLASS).
--
-- The residual table is data derived from `public_cases.csv`, the public
-- MoE runs and the public memory runs:
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
--- Rounding guard of the conformal rank: (n + 1) x LEVEL computed in
-- floating point can land a hair above an integer (5 x 0.8 =
-- 4.000000000000001); within this of it, the integer is taken.
M.RANK_TOLERANCE = 1e-9

-- the shipped table (apsearch.intervals_data), read once; nil without it
local function table_data() return require("apsearch.util").data_module("apsearch.intervals_data") end

--- Hardware generation of a device: "ampere", "hopper", "blackwell" or
-- "other", from its preset name (a100/a800, h100/h200/h800,
-- b200/gb200/gb300).
-- @tparam string name device or preset name
-- @treturn string
function M.generation(name)
  name = tostring(name or ""):lower()
  if name:match("^a[18]00") then return "ampere" end
  if name:match("^h[128]00") then return "hopper" end
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

--- The peak family of a precision for the best-published-MFU table:
-- "16bit" (bf16, fp16), "8bit" (fp8, mxfp8: the fp8 peak) or "4bit"
-- (nvfp4: the fp4 peak, 2x (B200, GB200) or 3x (GB300) the fp8 one).  An
-- MFU is a fraction of its precision's peak, so one family per peak: an
-- NVFP4 MFU compared with the fp8 runs' best could never exceed it.
M.MFU_FAMILY = { bf16 = "16bit", fp16 = "16bit", fp8 = "8bit", mxfp8 = "8bit", nvfp4 = "4bit" }

--- Key of the best-published-MFU table: "generation/family" (M.MFU_FAMILY;
-- a precision it lacks is its own family).
-- @tparam string device
-- @tparam string precision
-- @treturn string e.g. "blackwell/4bit"
function M.mfu_key(device, precision)
  return M.generation(device) .. "/" .. (M.MFU_FAMILY[precision] or tostring(precision))
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

--- Split-conformal radius of residuals at a level: the k-th smallest
-- |r| with k = ceil((n + 1) level) (Lei et al. 2018, Sec. 2.2).
-- @tparam table values array of residuals (log ratios; not modified)
-- @tparam number level in (0, 1)
-- @treturn number|nil nil when k > n (too few residuals for the level)
function M.conformal_radius(values, level)
  local n = #values
  local k = math.ceil((n + 1) * level - M.RANK_TOLERANCE)
  if n == 0 or k > n then return nil end
  local a = {}
  for i, v in ipairs(values) do a[i] = math.abs(v) end
  table.sort(a)
  return a[math.max(k, 1)]
end

--- Builds interval bounds from residuals grouped by class.
-- @tparam table by_class {<class> = array of residuals, with field
--   `sources` = the number of sources they come from (1 when absent)}
-- @tparam[opt] number level default M.LEVEL
-- @treturn table {pooled = {lo, hi, rows}, classes = {<class> = {lo, hi, rows}}}
--   with lo = -q, hi = q (log ratios, q = M.conformal_radius); classes
--   with fewer than M.MIN_ROWS runs or M.MIN_SOURCES sources are left out
--   (they take `pooled`); lo and hi are nil when the residuals are too few
--   for the level
function M.bounds(by_class, level)
  level = level or M.LEVEL
  local function entry(r)
    local q = M.conformal_radius(r, level)
    return { lo = q and -q, hi = q, rows = #r }
  end
  local all, classes = {}, {}
  for class, r in pairs(by_class) do
    for _, v in ipairs(r) do all[#all + 1] = v end
    if #r >= M.MIN_ROWS and (r.sources or 1) >= M.MIN_SOURCES then
      local e = entry(r)
      if e.hi then classes[class] = e end
    end
  end
  return { level = level, classes = classes, pooled = entry(all) }
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

--- Class of the step-time interval of a mixture-of-experts model: the
-- out-of-sample residuals of the published MoE runs
-- (shared/validation/moe/public_moe_cases.csv, scripts/fit-intervals.sh),
-- apart from the dense runs' classes, whose spread is several times
-- narrower (docs/accuracy.md).
M.MOE_CLASS = "moe"

--- What no interval factor covers for a model: the families whose
-- held-out runs fell outside the factors, each one sentence (the
-- interval's `caveats`; docs/accuracy.md).  A hybrid Mamba-2 or linear-
-- attention model (no published run of one behind the factors; "Held
-- out: Megatron-Bridge hybrid Mamba-2 runs"); LFM2 (no measured run
-- found); gpt-oss on Megatron-LM,
-- known by its quick-GEGLU experts with attention sinks ("Held out:
-- Megatron-Bridge verification cards"; NeMo AutoModel's gpt-oss runs were
-- estimated on the slow side, within the factors).
-- @tparam table model normalized model table
-- @tparam[opt] string framework training.framework (default megatron)
-- @treturn table array of strings, empty when none applies
function M.model_caveats(model, framework)
  local out = {}
  model = model or {}
  if (model.hybrid_layer_pattern or "") ~= "" or (tonumber(model.linear_num_value_heads) or 0) > 0 then
    out[#out + 1] = "a hybrid Mamba-2 / linear-attention model: no published run of one is behind these factors, "
      .. "and the 50 held-out Nemotron 3 Nano and Super runs ran from 3 % faster to 41 % slower than estimated "
      .. "(14 % on average)"
  end
  local mixer = require("apsearch.defaults").transformers_mixer(model)
  if mixer then
    out[#out + 1] = ("%s model: no published training run of one was found, so its %s and transformers' "
      .. "eager modules are priced from their code, unchecked against a measurement"):format(mixer.a, mixer.layers)
  end
  if model.glu_activation == "quick_gelu" and model.attention_sinks and (framework or "megatron") == "megatron" then
    out[#out + 1] = "a gpt-oss model: the 2 held-out gpt-oss-120b runs (GB200 bf16, GB300 mxfp8) ran 1.4x "
      .. "slower than estimated, outside these factors"
  end
  return out
end

--- Where the runs that ran out of memory under CUDA graphs of the whole
-- iteration were estimated, as fractions of the memory limit: the four
-- Qwen3-30B-A3B MXFP8 layouts on 8 B200 of Megatron-Bridge pull request
-- 5356 ("OOMs at every workable config"; mw01-mw04 of
-- tests/fixtures/memory/public_memory_cases.csv: 88.2-159.4 GiB of device
-- memory in use against a 178.1 GiB limit).  The capture's private pool is
-- not priced (docs/modeling.md "Full-iteration CUDA graphs"), so no
-- interval factor covers such a peak: `M.FULL_GRAPH_CAVEAT` says so.
M.FULL_GRAPH_OOM_AT = { lo = 0.50, hi = 0.90 }

--- The peak-memory interval's caveat of an estimate priced with CUDA
-- graphs of the whole iteration (M.FULL_GRAPH_OOM_AT).
M.FULL_GRAPH_CAVEAT = ("CUDA graphs of the whole iteration: the memory pool the capture keeps is not in this "
  .. "peak, and the 4 published runs with them that ran out of memory were estimated at %.0f-%.0f %% of "
  .. "the memory limit (docs/accuracy.md): this peak does not say the strategy fits"):format(
  100 * M.FULL_GRAPH_OOM_AT.lo, 100 * M.FULL_GRAPH_OOM_AT.hi)

--- Step-time and peak-memory intervals of an estimate from the shipped
-- residual table (nil fields when no table is installed).
-- @tparam number step_time s
-- @tparam number mem_peak bytes
-- @tparam string framework
-- @tparam string device
-- @tparam string precision
-- @tparam[opt] boolean moe the model has experts: the step time takes the
--   MoE runs' interval (M.MOE_CLASS; the pooled dense one only when the
--   table has none)
-- @tparam[opt] table model the model: its M.model_caveats, and the range
--   of its held-out runs on the device when outside the interval
--   (apsearch.evidence), become the step time interval's `caveats`
--   (absent when none)
-- @tparam[opt] string graph_scope the CUDA graph scope the estimate
--   priced (ctx:estimate's `cuda_graph_scope`): `full_iteration` gives
--   the memory interval M.FULL_GRAPH_CAVEAT as its `caveats`
-- @treturn table {step_time = interval|nil, mem_peak = interval|nil}; the
--   memory interval is the framework's class when the table has one
function M.of_estimate(step_time, mem_peak, framework, device, precision, moe, model, graph_scope)
  local d = table_data()
  if not d then return {} end
  local class = moe and M.MOE_CLASS or M.class_of(framework, device, precision)
  local st = M.interval(step_time, d.step_time, class)
  local caveats = M.model_caveats(model, framework)
  -- the model's own held-out runs on this GPU, when they fell outside
  local held = st and step_time > 0 and
    require("apsearch.evidence").caveat(model, device, framework, st.lo / step_time, st.hi / step_time)
  if held then caveats[#caveats + 1] = held end
  if st and #caveats > 0 then st.caveats = caveats end
  local mp = M.interval(mem_peak, d.mem_peak, tostring(framework))
  if mp and graph_scope == "full_iteration" then mp.caveats = { M.FULL_GRAPH_CAVEAT } end
  return { step_time = st, mem_peak = mp }
end

--- M.of_estimate of a core estimate under the inputs it was made with.
-- @tparam table est ctx:estimate's result (step_time [s], mem_peak
--   [bytes], cuda_graph_scope)
-- @tparam table inputs `ctx:inputs()` (model, cluster.device, training)
-- @treturn table as M.of_estimate
function M.for_estimate(est, inputs)
  local dev, tr = inputs.cluster.device, inputs.training
  return M.of_estimate(est.step_time, est.mem_peak, tr.framework, dev.base or dev.name, tr.precision,
    (inputs.model.num_experts or 0) > 0, inputs.model, est.cuda_graph_scope)
end

return M
