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
