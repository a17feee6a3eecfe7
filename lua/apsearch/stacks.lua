--- What a framework release's recipes set where a measured run leaves a
-- recipe setting unstated (`apsearch validate`, the `software` column).
--
-- A validation row's empty recipe column means "not stated": the estimate
-- then follows what the release that produced the run does by default, not
-- the bare framework's argument defaults. Each entry names the release
-- line it matches (a Lua pattern on `software`), the training settings its
-- performance recipes use, and the file they come from. A row's own
-- columns always win.
-- @module apsearch.stacks
local M = {}

--- Release lines, first match wins.
-- `patterns`: Lua patterns on `software`; `before`: only releases dated
-- "(YYYY-MM)" before it; `quantized`: settings for fp8, mxfp8 and nvfp4
-- runs only; `training`: settings applied to the row's training table when the row's
-- column for it is empty; `frameworks`: the `framework` values it applies
-- to; `source`: where the release sets them.
M.LINES = {
  {
    -- NeMo 1.x (the NeMo-Framework-Launcher configs the 24.0x containers
    -- ran): megatron_amp_O2 with apex distributed_fused_adam; its bf16
    -- model keeps the fp32 master as the bf16 weight plus a 16-bit
    -- remainder. Gradients stay fp32 (no grad_sync_dtype in the llama and
    -- gpt3 configs).
    name = "NeMo 1.x launcher",
    patterns = { "^NeMo 2[34]%.0[1-9]" },
    frameworks = { megatron = true },
    training = { store_param_remainders = true },
    source = "NVIDIA/NeMo 265bd739 nemo/collections/nlp/models/language_modeling/"
      .. "megatron_base_model.py:785-790 (store_param_remainders); "
      .. "NVIDIA/NeMo-Framework-Launcher 8325688d (24.07) launcher_scripts/conf/training/",
  },
  {
    -- Megatron-Bridge performance recipes reduce gradients in bf16 (the
    -- base recipes keep fp32) and, in fp8, mxfp8 and nvfp4, keep and
    -- gather the weights quantized (fp8_param_gather, fp4_param_gather).
    name = "Megatron-Bridge performance recipes",
    patterns = { "Megatron%-Bridge" },
    frameworks = { megatron = true },
    training = { grad_reduce_in_fp32 = false },
    quantized = { fp8_param_gather = true },
    source = "NVIDIA-NeMo/Megatron-Bridge b7b4e11b scripts/performance/configs/"
      .. "llama/llama31_llm_pretrain.py:42-43 (mixed_precision and ddp "
      .. "grad_reduce_in_fp32 = False; the base recipes, src/megatron/bridge/"
      .. "recipes/common.py, keep True); src/megatron/bridge/training/"
      .. "mixed_precision.py:264, 302, 416 (fp8_param_gather / "
      .. "fp4_param_gather = True for mxfp8, fp8 current scaling, nvfp4)",
  },
  {
    -- NeMo 2.x performance scripts (the 24.12 container on) and NVIDIA's
    -- MLPerf submissions built on them reduce gradients in bf16.
    name = "NeMo 2.x performance scripts",
    patterns = { "^NeMo 2[4-9]%.1[0-2]", "^NeMo 2[5-9]%.", "^MLPerf.*NeMo 2[5-9]" },
    frameworks = { megatron = true },
    training = { grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo 8cfedd72 scripts/performance/helpers.py:234 "
      .. "(recipe.trainer.plugins.grad_reduce_in_fp32 = False)",
  },
  {
    -- TorchTitan before 2025-04 compiled the model, not the loss
    -- (pytorch/torchtitan bbb1b616, 2025-04-02: the loss joins the
    -- compiled components).
    name = "TorchTitan before 2025-04",
    patterns = { "^torchtitan" },
    before = "2025-04",
    frameworks = { fsdp2 = true },
    training = { compile_loss = false },
    source = "pytorch/torchtitan bbb1b616 (2025-04-02, PR 1033: \"enable "
      .. "compiling the loss function\")",
  },
}

--- Software stacks: framework release lines, selectable as
-- `training.stack`, each with an efficiency profile.
--
-- The kernels a release ships (attention, fused casts, GEMM heuristics)
-- move the achieved fraction of the peak between releases of one
-- framework. A stack's `devices` table holds efficiency fields per device
-- preset (the fields of apsearch.calibration.FIELDS) that replace the
-- preset's where the stack runs; a stack without an entry for the device
-- takes the preset's values. `patterns` (Lua patterns on a validation row's
-- `software`), with `before` / `from` ("YYYY-MM", against the "(YYYY-MM)"
-- in the string), say which measured runs belong to it (`apsearch
-- calibrate --group software`, `apsearch validate`).
--
-- No shipped profile carries efficiencies: each stack of the public
-- validation set is one publication, so a per-stack value fitted on it
-- cannot be checked out of sample (leave-one-source-out holds exactly that
-- stack out), and the newest stacks, the defaults, have no published run
-- in the set (docs/accuracy.md "Software stacks"). `apsearch calibrate
-- --group software` fits them from a team's own runs.
M.STACKS = {
  { id = "megatron-bridge-25", framework = "megatron", newest = true,
    name = "Megatron-Bridge 25.x (NeMo 25.x containers)",
    patterns = { "Megatron%-Bridge", "^NeMo 2[5-9]%.", "^MLPerf.*NeMo 2[5-9]" }, devices = {} },
  { id = "nemo-2", framework = "megatron",
    name = "NeMo 2.x performance scripts (24.12 container)",
    patterns = { "^NeMo 2[4-9]%.1[0-2]" }, devices = {} },
  { id = "nemo-1", framework = "megatron",
    name = "NeMo 1.x launcher (24.0x containers)",
    patterns = { "^NeMo 2[34]%.0[1-9]" }, devices = {} },
  { id = "megatron-lm", framework = "megatron",
    name = "Megatron-LM (NVIDIA/Megatron-LM)",
    patterns = { "^Megatron%-LM" }, devices = {} },
  { id = "torchtitan-2025", framework = "fsdp2", newest = true,
    name = "TorchTitan from 2025-04 (loss compiled)",
    patterns = { "^torchtitan" }, from = "2025-04", devices = {} },
  { id = "torchtitan-2024", framework = "fsdp2",
    name = "TorchTitan before 2025-04",
    patterns = { "^torchtitan" }, before = "2025-04", devices = {} },
  { id = "llm-foundry", framework = "fsdp", newest = true,
    name = "MosaicML llm-foundry (PyTorch FSDP)",
    patterns = { "^llm%-foundry" }, devices = {} },
  { id = "deepspeed", framework = "deepspeed", newest = true,
    name = "DeepSpeed",
    patterns = { "^DeepSpeed" }, devices = {} },
}

local by_id = {}
for _, st in ipairs(M.STACKS) do by_id[st.id] = st end

--- Identifiers of the stacks, in table order.
-- @treturn table array of strings
function M.ids()
  local ids = {}
  for _, st in ipairs(M.STACKS) do ids[#ids + 1] = st.id end
  return ids
end

--- A stack by identifier, or nil.
function M.stack(id) return by_id[id] end

--- The default stack of a framework: its newest release line.
-- @tparam string framework training.framework (nil: megatron, the core's default)
-- @treturn string identifier
function M.default(framework)
  framework = framework or "megatron"
  for _, st in ipairs(M.STACKS) do
    if st.framework == framework and st.newest then return st.id end
  end
  return nil
end

--- The stack a training table runs: `training.stack`, else the
-- framework's default.
function M.resolve(training)
  training = training or {}
  return training.stack or M.default(training.framework)
end

--- Checks `training.stack` against the framework; nil when it is fine,
-- else the problem as text.
function M.check(training)
  local id = training and training.stack
  if id == nil then return nil end
  local st = by_id[id]
  if not st then
    return ("unknown stack %q; known stacks: %s"):format(tostring(id), table.concat(M.ids(), ", "))
  end
  local fw = training.framework or "megatron"
  if st.framework ~= fw then
    return ("stack %q is a %s stack, training.framework is %s"):format(id, st.framework, fw)
  end
  return nil
end

local function month_of(software) return software:match("%((%d%d%d%d%-%d%d)%)") end

--- The stack of a measured run, from its `software` and `framework`
-- columns: the first stack of that framework whose pattern matches (and
-- whose date bounds hold), else the framework's default.
-- @treturn string identifier
-- @treturn boolean true when `software` matched a stack
function M.of_software(software, framework)
  if type(software) == "string" and software ~= "" then
    local month = month_of(software)
    for _, st in ipairs(M.STACKS) do
      if st.framework == framework
        and (not st.before or (month and month < st.before))
        and (not st.from or not month or month >= st.from) then
        for _, pattern in ipairs(st.patterns) do
          if software:match(pattern) then return st.id, true end
        end
      end
    end
  end
  return M.default(framework), false
end

--- Applies a stack's efficiency profile to a cluster (in place): the
-- profile's fields for the cluster's device replace the preset's, except
-- the fields a device table sets itself.
-- @tparam table cluster normalized or policy cluster table
-- @tparam string id stack identifier (nil: nothing to apply)
-- @treturn table cluster
function M.apply(cluster, id)
  local st = id and by_id[id]
  if not st then return cluster end
  local dev = cluster.device
  local name = type(dev) == "string" and dev or (type(dev) == "table" and (dev.base or dev.name))
  local fields = name and st.devices[name:lower()]
  if not fields or next(fields) == nil then return cluster end
  if type(dev) == "string" then dev = { base = dev } end
  for k, v in pairs(fields) do
    if dev[k] == nil then dev[k] = v end
  end
  cluster.device = dev
  return cluster
end

--- Release date of a `software` string, "YYYY-MM" from "(YYYY-MM)", or nil.
local function release_month(software)
  return software:match("%((%d%d%d%d%-%d%d)%)")
end

--- The release line of a run and the settings it implies.
-- @tparam string software the row's `software` column (may be empty)
-- @tparam string framework the row's `framework`
-- @treturn table|nil the matching entry of `M.LINES` (fields name,
--   training, source), or nil when none matches
function M.match(software, framework)
  if type(software) ~= "string" or software == "" then return nil end
  local month = release_month(software)
  for _, line in ipairs(M.LINES) do
    if line.frameworks[framework] and (not line.before or (month and month < line.before)) then
      for _, pattern in ipairs(line.patterns) do
        if software:match(pattern) then return line end
      end
    end
  end
  return nil
end

return M
