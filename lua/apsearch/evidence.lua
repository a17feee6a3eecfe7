--- Held-out evidence by model and device: how far the never-fitted
-- measured runs of the same model on the same GPU landed from the
-- estimate, so that an estimate whose own model and hardware were measured
-- outside the pooled interval says so (docs/accuracy.md "Held-out evidence
-- by model and device").
--
-- A model is known by its shape, not its name (a config.json and a
-- validation row name the same model differently): layers, hidden size,
-- routed experts and experts per token, vocabulary. Runs group by the
-- framework too: a Megatron-LM run says little of an FSDP2 estimate's
-- bias. A run's ratio is the
-- estimated over the measured tokens per second per GPU, which is the
-- measured over the estimated step time (1 + the row's error / 100).
--
-- The table is data derived from the held-out files under
-- tests/fixtures/heldout/ with the shipped defaults:
-- `scripts/fit-evidence.sh` regenerates lua/apsearch/evidence_data.lua
-- after the estimator changes (tests/lua/evidence_spec.lua checks one of
-- its groups against a fresh validation).
-- @module apsearch.evidence
local M = {}

--- Fewest runs of a model on a device for its evidence to be said.
M.MIN_RUNS = 2

--- Frameworks none of whose runs is among the published runs the step-time
-- intervals were fitted to (apsearch.intervals: the public set has
-- Megatron-LM, TorchTitan, llm-foundry and DeepSpeed runs, no NeMo
-- AutoModel one): for an estimate of one of them, its held-out runs of any
-- model and GPU are said where the model's own are too few.
M.FRAMEWORK_WIDE = { automodel = true }

-- the shipped table (apsearch.evidence_data), read once; nil without it
local function table_data() return require("apsearch.util").data_module("apsearch.evidence_data") end

local function int(v)
  v = tonumber(v) or 0
  return math.tointeger(v) or math.floor(v)
end

--- The shape key of a model table: "L/h/E/k/V" (layers, hidden size,
-- routed experts, experts per token, vocabulary; 0 for a dense model's
-- experts), or nil without layers or hidden size.
-- @tparam table model normalized model table
-- @treturn string|nil
function M.signature(model)
  if type(model) ~= "table" or int(model.num_layers) <= 0 or int(model.hidden_size) <= 0 then return nil end
  local e = int(model.num_experts)
  return ("%d/%d/%d/%d/%d"):format(int(model.num_layers), int(model.hidden_size), e,
    e > 0 and int(model.experts_per_token) or 0, int(model.vocab_size))
end

--- The key of a group: "signature|device|framework".
local function key_of(sig, device, framework)
  return sig .. "|" .. device:lower() .. "|" .. tostring(framework or "megatron")
end

--- The evidence group of a model on a device preset under a framework,
-- or nil.
-- @tparam table model normalized model table
-- @tparam string device device (base preset) name
-- @tparam[opt] string framework training.framework (default megatron)
-- @treturn table|nil `{runs, lo, hi, files}`: lo and hi the smallest and
--   largest measured over estimated step time, files the held-out files
function M.of(model, device, framework)
  local d, sig = table_data(), M.signature(model)
  if not d or not sig or type(device) ~= "string" then return nil end
  local g = d.groups[key_of(sig, device, framework)]
  if g and g.runs >= M.MIN_RUNS then return g end
  return nil
end

--- The sentence an interval carries when the model's held-out runs on the
-- device under the framework landed outside its factors, or nil.
-- @tparam table model
-- @tparam string device
-- @tparam string|nil framework training.framework (default megatron)
-- @tparam number lo the interval's lower factor (its low bound / the estimate)
-- @tparam number hi its upper factor
-- @treturn string|nil
function M.caveat(model, device, framework, lo, hi)
  local g, what = M.of(model, device, framework), "of this model (by its shape) on " .. tostring(device)
  if not g then g, what = M.framework_runs(framework), "(every model and GPU)" end
  if not g or (g.lo >= lo and g.hi <= hi) then return nil end
  return ("the %d held-out %s runs %s measured x%.2f-%.2f the estimated step time, "
    .. "outside these factors (%s; docs/accuracy.md)"):format(g.runs, tostring(framework or "megatron"), what,
    g.lo, g.hi, table.concat(g.files, ", "))
end

--- The held-out runs of every model and device under a framework of
-- M.FRAMEWORK_WIDE, or nil (another framework, or fewer than M.MIN_RUNS).
-- @tparam string|nil framework training.framework
-- @treturn table|nil `{runs, lo, hi, files}` as M.of
function M.framework_runs(framework)
  local d = table_data()
  if not d or not M.FRAMEWORK_WIDE[framework] then return nil end
  local g = d.groups[key_of("*", "*", framework)]
  if g and g.runs >= M.MIN_RUNS then return g end
  return nil
end

--- Groups the estimated runs of validation results (apsearch.validate.run)
-- by model shape, device and framework: what scripts/fit-evidence.sh
-- writes.
-- @tparam table results {file name = result} (the file names recorded)
-- @treturn table `{groups = {[key] = {runs, lo, hi, files}}}`
function M.build(results)
  local groups = {}
  local names = {}
  for name in pairs(results) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    for _, c in ipairs(results[name].cases or {}) do
      local e = c.error_pct and c.error_pct.tokens_per_s_per_gpu
      local sig = c.inputs and M.signature(c.inputs.model)
      local dev = c.inputs and c.inputs.cluster and c.inputs.cluster.device
      dev = type(dev) == "table" and (dev.base or dev.name) or dev
      local fw = c.inputs and c.inputs.training and c.inputs.training.framework
      if type(e) == "number" and e == e and sig and type(dev) == "string" then
        local r = 1 + e / 100
        -- the model's group, and its framework's over every model (M.framework_runs)
        for _, key in ipairs({ key_of(sig, dev, fw), M.FRAMEWORK_WIDE[fw] and key_of("*", "*", fw) or nil }) do
          local g = groups[key] or { runs = 0, lo = math.huge, hi = -math.huge, files = {} }
          groups[key] = g
          g.runs, g.lo, g.hi = g.runs + 1, math.min(g.lo, r), math.max(g.hi, r)
          if g.files[#g.files] ~= name then g.files[#g.files + 1] = name end
        end
      end
    end
  end
  return { groups = groups }
end

--- The Lua source of a built table (M.build), keys sorted, ratios to
-- four decimals.
-- @tparam table built
-- @tparam table files the files it came from, for the header
-- @treturn string
function M.source(built, files)
  local keys = {}
  for k in pairs(built.groups) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = { "-- Generated by scripts/fit-evidence.sh; do not edit. From:" }
  for _, f in ipairs(files) do out[#out + 1] = "--   " .. f end
  out[#out + 1] = "-- Key: layers/hidden/experts/top-k/vocabulary|device|framework; lo, hi: measured over estimated"
  out[#out + 1] = "-- step time (apsearch.evidence); *|*|framework: every model and device of a framework of"
  out[#out + 1] = "-- evidence.FRAMEWORK_WIDE."
  out[#out + 1] = "return { groups = {"
  for _, k in ipairs(keys) do
    local g = built.groups[k]
    local files_src = {}
    for i, f in ipairs(g.files) do files_src[i] = ("%q"):format(f) end
    out[#out + 1] = ("  [%q] = { runs = %d, lo = %.4f, hi = %.4f, files = { %s } },"):format(k, g.runs, g.lo, g.hi,
      table.concat(files_src, ", "))
  end
  out[#out + 1] = "} }"
  return table.concat(out, "\n") .. "\n"
end

return M
