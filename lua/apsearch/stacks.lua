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
local util = require("apsearch.util")

--- TorchTitan's release tags and the month of their commits
-- (pytorch/torchtitan tags v0.1.0 2025-06-17, v0.2.0 2025-10-17, v0.2.1
-- 2025-12-26, v0.2.2 2026-02-20), for a `software` that names a release
-- instead of a date.
M.TORCHTITAN_RELEASES = { ["v0.1.0"] = "2025-06", ["v0.2.0"] = "2025-10", ["v0.2.1"] = "2025-12",
  ["v0.2.2"] = "2026-02" }

--- The month of a run's code in `software`, "YYYY-MM", for the date
-- bounds of the stacks and release lines: its first date YYYY-MM[-DD]
-- ("(2024-12)", "2024-12-10"), else a TorchTitan release tag's month
-- (M.TORCHTITAN_RELEASES), or nil.
-- @tparam string software
-- @treturn string|nil
function M.run_month(software)
  return software:match("%f[%d](%d%d%d%d%-%d%d)%f[%D]")
    or M.TORCHTITAN_RELEASES[(software:lower():match("^torchtitan%s+(v%d+%.%d+%.%d+)%f[^%w.]") or "")]
end

--- Whether any of the Lua patterns matches s, case-insensitively (the
-- patterns are lowered too: they use lower-case classes only, %d not %D).
-- Every `software` pattern of this module is matched through it, so a
-- spelling ("DGXC-Benchmarking 25.08") gets all of a release's settings
-- or none.
local function any(patterns, s)
  for _, p in ipairs(patterns) do if tostring(s or ""):lower():match(p:lower()) then return true end end
  return false
end

--- Release month of a NeMo or dgxc-benchmarking release "YY.MM" (or
-- "YYYY.MM") in a `software` string ("NeMo 25.07" -> "2025-07"), the
-- first such number standing alone ("25.08.1" is 25.08; "125.08" and
-- "25.081" are no release), or nil.
local function release_yymm(software)
  for yy, mm in software:gmatch("%f[%d](%d+)%.(%d%d)%f[%D]") do
    local month = tonumber(mm)
    if month >= 1 and month <= 12 then
      if #yy == 2 then return "20" .. yy .. "-" .. mm end
      if #yy == 4 then return yy .. "-" .. mm end
    end
  end
  return nil
end

--- Month of a run's release or code, "YYYY-MM": a release "YY.MM" in
-- `software` (release_yymm), else a date "YYYY-MM[-DD]" in it
-- ("Megatron-Bridge main 2025-11-21 (PR 1348)" -> "2025-11"), or nil.
function M.software_month(software)
  if type(software) ~= "string" then return nil end
  local month = release_yymm(software)
  if month then return month end
  for ym, mm in software:gmatch("%f[%d](%d%d%d%d%-(%d%d))%f[%D]") do
    if tonumber(mm) >= 1 and tonumber(mm) <= 12 then return ym end
  end
  return nil
end

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
    -- remainder. Gradients are kept and reduced in bf16: every GPT-3 and
    -- Llama example script for H100 of the launcher (the layouts of NeMo's
    -- performance summary) adds +training.model.optim.grad_sync_dtype=bf16,
    -- as gpt3/175b_fp8.yaml and the Mixtral configs do, and apex's
    -- contiguous gradient buffer takes that dtype (the yaml configs of
    -- Llama alone leave it fp32; the Nemotron scripts do too).
    name = "NeMo 1.x launcher",
    patterns = { "^NeMo 2[34]%.0[1-9]" },
    frameworks = { megatron = true },
    training = { store_param_remainders = true, grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo 265bd739 nemo/collections/nlp/models/language_modeling/"
      .. "megatron_base_model.py:785-790 (store_param_remainders); "
      .. "NVIDIA/NeMo-Framework-Launcher 8325688d (24.07) examples/training/"
      .. "{gpt,llama}/h100/*.sh (grad_sync_dtype=bf16), launcher_scripts/conf/"
      .. "training/gpt3/175b_fp8.yaml:177; NVIDIA/apex 6424da3b apex/contrib/"
      .. "optimizers/distributed_fused_adam.py:1172-1177 (the gradient buffer "
      .. "is allocated in grad_sync_dtype)",
  },
  {
    -- Megatron-Bridge performance recipes reduce gradients in bf16 (the
    -- base recipes keep fp32) and, in fp8, mxfp8 and nvfp4, keep and
    -- gather the weights quantized (fp8_param_gather, fp4_param_gather).
    name = "Megatron-Bridge performance recipes",
    patterns = { "Megatron%-Bridge" },
    frameworks = { megatron = true },
    -- the launcher's PERF_ENV_VARS set PYTORCH_CUDA_ALLOC_CONF=
    -- expandable_segments:True for every performance run, dense and MoE
    training = { grad_reduce_in_fp32 = false, expandable_segments = true },
    quantized = { fp8_param_gather = true },
    source = "NVIDIA-NeMo/Megatron-Bridge b7b4e11b scripts/performance/configs/"
      .. "llama/llama31_llm_pretrain.py:42-43 (mixed_precision and ddp "
      .. "grad_reduce_in_fp32 = False; the base recipes, src/megatron/bridge/"
      .. "recipes/common.py, keep True); src/megatron/bridge/training/"
      .. "mixed_precision.py:264, 302, 416 (fp8_param_gather / "
      .. "fp4_param_gather = True for mxfp8, fp8 current scaling, nvfp4); "
      .. "scripts/performance/utils/executors.py:48 (PERF_ENV_VARS "
      .. "PYTORCH_CUDA_ALLOC_CONF = expandable_segments:True)",
    -- the newest release month whose recipes these settings were read
    -- against (Megatron-Bridge v0.6.0, 2026-08-19; main 067f987df,
    -- 2026-08-22): a later release is said (M.release_month_note)
    read_through = "2026-08",
    -- settings of some releases of the line only, by the run's month
    -- (M.software_month): `since` / `before` as in M.MOE_RECIPES
    dated = {
      {
        -- The performance scripts run TransformerEngine's fused
        -- cross-entropy (cross_entropy_loss_fusion, the provider's
        -- default, with cross_entropy_fusion_impl "te";
        -- Megatron-LM d98e8a64 language_module.py compute_language_model_loss
        -- calls te_parallel_cross_entropy on the logits as they are).
        -- TE 2.2-2.17 compute the gradient into the bf16 logits in place
        -- and save only them (cross_entropy.py CrossEntropyFunction.forward
        -- save_for_backward(_input), triton/cross_entropy.py "performed
        -- in-place on the tensor pointed by X_ptr"; 3 fp32 per token
        -- beside): 2 bytes per logit, not the 6 of Megatron's own fused
        -- loss.  TE 2.18 (01bbe3eea, 2026-07-09) writes an fp32
        -- gradient (empty_like(_input, dtype=float32)) beside the bf16
        -- logits, 6 bytes again: releases from 2026-08 keep the default.
        name = "TransformerEngine's fused cross-entropy in place (TE 2.2-2.17)",
        since = "2025-09", before = "2026-08",
        training = { logits_bytes = 2 },
        source = "NVIDIA-NeMo/Megatron-Bridge 568b3a3ef (2025-08-28) on, v0.5.0 "
          .. "scripts/performance/utils/overrides.py:69-70 (cross_entropy_fusion_impl = \"te\"), "
          .. "src/megatron/bridge/models/gpt_provider.py:200 (cross_entropy_loss_fusion = True); "
          .. "NVIDIA/TransformerEngine v2.2-v2.17 transformer_engine/pytorch/cross_entropy.py "
          .. "(save_for_backward of the input, the gradient written into it), 01bbe3eea (v2.18) "
          .. "the fp32 gradient buffer",
      },
    },
  },
  {
    -- NeMo 25.04 (the r2.3 branch): the performance scripts reduce
    -- gradients in bf16 only in fp8 runs; a bf16 run keeps its recipe's
    -- DDP setting (the DeepSeek and Llama 3 trainers: fp32).
    name = "NeMo 25.04 performance scripts (r2.3)",
    patterns = { "^NeMo 25%.04" },
    frameworks = { megatron = true },
    training = {},
    quantized = { grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo 7a8f1cc7 (r2.3.0 branch, 2025-06-02) scripts/performance/utils.py "
      .. "set_primary_perf_configs (plugins.grad_reduce_in_fp32 = False under compute_dtype fp8 "
      .. "only); nemo/collections/llm/recipes/deepseek.py:77 (ddp grad_reduce_in_fp32=True)",
  },
  {
    -- NeMo 2.x performance scripts (the 24.12 container on) and NVIDIA's
    -- MLPerf submissions built on them reduce gradients in bf16.
    name = "NeMo 2.x performance scripts",
    -- DGX Cloud benchmarking releases run these scripts ("NeMo 2.0
    -- recipe" in their software column)
    patterns = { "^NeMo 2[4-9]%.1[0-2]", "^NeMo 2[5-9]%.", "^MLPerf.*NeMo 2[5-9]",
      "^dgxc%-benchmarking 2[5-9]" },
    frameworks = { megatron = true },
    training = { grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo 8cfedd72 scripts/performance/helpers.py:234 "
      .. "(recipe.trainer.plugins.grad_reduce_in_fp32 = False)",
  },
  {
    -- Megatron-LM before core 0.8 (NVIDIA/Megatron-LM 9634c0e4a3,
    -- 2024-06-13, "Reduce logit memory pressure by using in-place
    -- operation"): GPTModel's loss is vocab_parallel_cross_entropy(
    -- logits.float(), labels) (core_v0.6.0 megatron/core/models/common/
    -- language_module/language_module.py:35) and its forward subtracts the
    -- maximum out of place (megatron/core/tensor_parallel/cross_entropy.py:
    -- 23, vocab_parallel_logits = vocab_parallel_logits - logits_max...):
    -- the bf16 logits GPTModel.forward still holds (2 bytes), the fp32
    -- copy passed in (4) and the shifted fp32 tensor that becomes the
    -- saved softmax (4) are alive at once, 10 bytes per logit of the
    -- rank's shard, where core 0.8 on subtracts in place (6).
    -- Pai-Megatron-Patch's Megatron-LM-240405 snapshot (2024-04-05) is
    -- before that commit.
    -- Its pretrain_gpt.py all-reduces the reported loss over the DP group
    -- without CP, a communicator apart from the gradients' (core_v0.6.0
    -- pretrain_gpt.py:135, training/utils.py:100; core_v0.7.0
    -- pretrain_gpt.py:148; parallel_state.py:289-301 makes both groups).
    name = "Megatron-LM before core 0.8 (loss shifted out of place)",
    patterns = { "^Megatron%-LM core_v0%.[4-7]%.", "^Megatron%-LM 240[1-5]%d%d" },
    frameworks = { megatron = true },
    training = { logits_bytes = 10, dp_loss_group = true },
    source = "NVIDIA/Megatron-LM core_v0.6.0 megatron/core/models/common/language_module/"
      .. "language_module.py:35 (logits.float()), megatron/core/tensor_parallel/"
      .. "cross_entropy.py:23 (the maximum subtracted out of place; in place from "
      .. "9634c0e4a3, 2024-06-13, core_v0.8.0); pretrain_gpt.py:135 and training/utils.py:100 "
      .. "(the loss reported over get_data_parallel_group(), apart from the gradients' "
      .. "DP-with-CP group, parallel_state.py:289-301)",
  },
  {
    -- FlagScale 26cd664 (2024-01-11), the Megatron-LM fork FlagPerf's
    -- Llama 2 70B runs use (pretrain_llama.py, LLaMAModel): the same loss
    -- and groups as Megatron-LM core_v0.6.0 -- output.float() into
    -- vocab_parallel_cross_entropy (megatron/model/llama_model.py:50),
    -- the maximum subtracted out of place (megatron/core/tensor_parallel/
    -- cross_entropy.py:24), the reported loss over get_data_parallel_group()
    -- (pretrain_llama.py:115, megatron/utils.py:104) apart from DDP's
    -- DP-with-CP group (megatron/training.py:369; parallel_state.py:305,
    -- 319), the distributed optimizer's gradient norm over the world
    -- (megatron/optimizer/distrib_optimizer.py:528-533).  Its layers are
    -- Megatron's legacy local ones (FlagPerf's megatron_main.sh passes no
    -- --transformer-impl): apex's fused RMSNorm (megatron/model/
    -- __init__.py:6), but SwiGLU as F.silu(x[0]) * x[1] on the chunks of
    -- the fc1 output (megatron/model/transformer.py:142-144), unfused.
    name = "FlagScale 26cd664 (Megatron-LM fork of 2024-01)",
    patterns = { "^FlagScale 26cd664" },
    frameworks = { megatron = true },
    training = { logits_bytes = 10, dp_loss_group = true, unfused_swiglu = true },
    source = "FlagOpen/FlagScale 26cd6643c megatron/model/llama_model.py:50 (output.float()), "
      .. "megatron/core/tensor_parallel/cross_entropy.py:24 (out of place), pretrain_llama.py:115 "
      .. "and megatron/utils.py:104 (the loss over get_data_parallel_group()), megatron/training.py:369 "
      .. "(DDP over the DP-with-CP group), megatron/core/parallel_state.py:305, 319, "
      .. "megatron/model/transformer.py:142-144 (swiglu unfused), megatron/model/__init__.py:6 "
      .. "(apex's fused RMSNorm); FlagOpen/FlagPerf 1b5a030 training/benchmarks/llama2_70B/megatron/"
      .. "megatron_main.sh (no --transformer-impl; FlagScale megatron/arguments.py:614, "
      .. "default 'local')",
  },
  {
    -- Hugging Face transformers models trained under DeepSpeed (a
    -- `software` naming transformers 4.x): the layers are transformers'
    -- eager modules, not Megatron-DeepSpeed's fused layer, and the loss is
    -- LlamaForCausalLM.forward's: logits = logits.float(), shift_logits =
    -- logits[..., :-1, :].contiguous(), CrossEntropyLoss -- the fp32
    -- logits, their shifted copy and the fp32 log-softmax alive at once,
    -- 12 bytes per logit (the bf16 logits freed by the rebinding).
    name = "Hugging Face transformers 4.x model code",
    patterns = { "transformers 4%." },
    frameworks = { deepspeed = true },
    training = { hf_eager_layer = true, logits_bytes = 12 },
    source = "huggingface/transformers 00227283 (2024-03, the code of the 4.3x releases) "
      .. "src/transformers/models/llama/modeling_llama.py: LlamaRMSNorm.forward "
      .. "(hidden_states.to(torch.float32)), LlamaMLP.forward, LlamaForCausalLM.forward "
      .. "(logits.float(), shift_logits ... .contiguous(), CrossEntropyLoss)",
  },
  {
    -- TorchTitan before 2025-04 compiled the model, not the loss
    -- (pytorch/torchtitan bbb1b616, 2025-04-02: the loss joins the
    -- compiled components).
    name = "TorchTitan before 2025-04",
    patterns = { "^torchtitan" },
    before = "2025-04",
    frameworks = { fsdp2 = true },
    training = { compile_loss = false, sac_save_alltoall = false, loss_chunks = 1, fuse_qkv = false },
    source = "pytorch/torchtitan bbb1b616 (2025-04-02, PR 1033: \"enable "
      .. "compiling the loss function\"); c4e2291 (2025-09-06, PR 1672: the "
      .. "op-SAC policy saves the all-to-all outputs from then on); 786e26f8e "
      .. "(2026-04-27, PR 2937: the chunked loss); 3396a4b37 (2026-06-24, PR 3714: fused wqkv)",
  },
  {
    -- TorchTitan's op-level selective checkpointing saved the all-to-all
    -- outputs (the MoE token dispatch and combine) from 2025-09-06 on;
    -- before, it recomputed them in the backward (the line above carries
    -- it for runs before 2025-04, first match wins).  A run of September
    -- 2025 before that commit states it (column sac_save_alltoall).
    name = "TorchTitan before 2025-09",
    patterns = { "^torchtitan" },
    before = "2025-09",
    frameworks = { fsdp2 = true },
    training = { sac_save_alltoall = false, loss_chunks = 1, fuse_qkv = false },
    source = "pytorch/torchtitan c4e2291 (2025-09-06, PR 1672: \"Save "
      .. "_to_copy and a2a in selective AC policy\"); 786e26f8e (2026-04-27, "
      .. "PR 2937: the chunked loss); 3396a4b37 (2026-06-24, PR 3714: fused wqkv)",
  },
  {
    -- TorchTitan's model configs run their loss in chunks
    -- (ChunkedLossWrapper, 8) from 786e26f8e (2026-04-27) on; before, one
    -- cross entropy over the whole micro-batch's logits (the lines above
    -- carry it for earlier runs, first match wins).  A run of April 2026
    -- after that commit states it (column loss_chunks).
    name = "TorchTitan before 2026-05",
    patterns = { "^torchtitan" },
    before = "2026-05",
    frameworks = { fsdp2 = true },
    training = { loss_chunks = 1, fuse_qkv = false },
    source = "pytorch/torchtitan 786e26f8e (2026-04-27, PR 2937: \"ChunkedCELoss\"; "
      .. "ChunkedLossWrapper in llama3, qwen3, deepseek_v3, gpt_oss config_registry.py @ b5bcd76c); "
      .. "3396a4b37 (2026-06-24, PR 3714: fused wqkv)",
  },
  {
    -- TorchTitan's llama3, qwen3 and gpt_oss builders fuse wq, wk, wv into
    -- one wqkv (FusedQKVLinear, make_gqa_config fuse_qkv) from 3396a4b37
    -- (2026-06-24) on: one mm of op-level checkpointing's count where
    -- there were three (the lines above carry it for earlier runs, first
    -- match wins).  A run of late June 2026 states it (column fuse_qkv).
    name = "TorchTitan before 2026-07",
    patterns = { "^torchtitan" },
    before = "2026-07",
    frameworks = { fsdp2 = true },
    training = { fuse_qkv = false },
    source = "pytorch/torchtitan 3396a4b37 (2026-06-24, PR 3714: \"Enable Fused qkv by default\"; "
      .. "models/llama3/__init__.py _build_llama3_layers fuse_qkv = True @ b5bcd76c)",
  },
}

--- The containers a benchmark suite ran, where their libraries hold device
-- memory the preset's defaults (today's releases) do not: device fields a
-- measured run whose `software` matches takes, on parts whose preset sets
-- the field (`apsearch validate`; a row's own device table wins).  Each
-- entry: `name`, `patterns` (on `software`), `device` (field -> value),
-- `source`.
M.CONTAINERS = {
  {
    -- FlagPerf's NVIDIA images (training/nvidia/docker_image/*/Dockerfile
    -- @ 1b5a030): megatron and deepspeed FROM nvcr.io/nvidia/pytorch:23.09,
    -- megatron_pai 23.12, megatron_core060 24.02.  NCCL was tagged 2.17.1
    -- on 2023-02-27 (the first with NVLS) and 2.21.5 on 2024-03-26, after
    -- the newest of these images: they ship NCCL 2.17-2.20, whose NVLS
    -- buffers are 16 channels x 2 x (the SIMPLE protocol's 4 MiB +
    -- NVLS_MEM_ALIGN_SIZE 2 MiB) per GPU of the node (NVIDIA/nccl
    -- v2.19.3-1 src/transport/nvls.cc:243, 320-323; the same formula from
    -- v2.17.1-1 to v2.20.5-1), where 2.23 on holds 16 x 2 x 1 MiB.
    name = "FlagPerf NGC 23.09-24.02 images (NCCL 2.17-2.20)",
    patterns = { "FlagPerf" },
    device = { nccl_nvls_bytes_per_rank = 16 * 2 * 6 * 1024 * 1024 },
    source = "FlagOpen/FlagPerf 1b5a030 training/nvidia/docker_image/{megatron,deepspeed,"
      .. "megatron_pai,megatron_core060}/Dockerfile; NVIDIA/nccl v2.19.3-1 "
      .. "src/transport/nvls.cc:243, 320-323 (NVLS buffers, 4 MiB + 2 MiB per "
      .. "channel and direction); tags v2.17.1-1 2023-02-27, v2.21.5-1 2024-03-26",
  },
}

--- The container entry of a run's `software`, or nil.
-- @tparam string software
-- @treturn table|nil the entry of `M.CONTAINERS`
function M.container(software)
  if type(software) ~= "string" or software == "" then return nil end
  for _, box in ipairs(M.CONTAINERS) do
    if any(box.patterns, software) then return box end
  end
  return nil
end

--- Benchmark suites whose release number is not the framework release
-- their runs used: the launch scripts of a DGX Cloud benchmarking release
-- pin an older NeMo container and recipe commit.  A measured run whose
-- `software` names such a release is read as the framework release it
-- ran (M.framework_software, which every matcher of this module applies
-- first): its recipe settings, release month and TransformerEngine are
-- that release's.  Each entry: `software` (Lua patterns), `releases`
-- (release months "YYYY-MM" of the suite's number in the string, exact),
-- `runs` (the framework release, as a `software` string starts), `source`.
M.BENCHMARK_RELEASES = {
  {
    name = "DGX Cloud benchmarking 25.08 (nemo:25.04.01 container)",
    software = { "^dgxc%-benchmarking" }, releases = { "2025-08" },
    runs = "NeMo 25.04.01",
    source = "NVIDIA/dgxc-benchmarking 1f6d9f4 deepseek_v3/pretraining/launch.sh:33, "
      .. "llama4/launch.sh:41, llama3.1/launch.sh, nemotronh/launch.sh (FW_VERSION=25.04.01; "
      .. "grok1, nemotron 25.04.00); deepseek_v3/pretraining/setup.sh:54 (the recipe scripts "
      .. "from NVIDIA/NeMo 7a8f1cc7, \"Llmb nemo r2.3.0\", 2025-06-02)",
  },
}

--- The `software` a measured run's recipe settings are read from: the
-- framework release a benchmark suite's release ran (M.BENCHMARK_RELEASES),
-- written first, the stated string after it in parentheses; else the
-- stated string.  Blanks are trimmed and runs of them read as one space
-- (" NeMo  25.04.01" is "NeMo 25.04.01": every matcher anchors at "^").
-- @tparam string|nil software the row's `software` column
-- @treturn string|nil the string to match recipes and releases on
-- @treturn table|nil the M.BENCHMARK_RELEASES entry that rewrote it
function M.framework_software(software)
  if type(software) ~= "string" then return software, nil end
  software = software:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
  if software == "" then return software, nil end
  local month = release_yymm(software)
  for _, e in ipairs(M.BENCHMARK_RELEASES) do
    if month and any(e.software, software) then
      for _, r in ipairs(e.releases) do
        if r == month then return ("%s (%s)"):format(e.runs, software), e end
      end
    end
  end
  return software, nil
end

--- TransformerEngine releases of framework releases, where the release's
-- files pin one: which attention kernels a run could use
-- (apsearch.te_attention).  Each entry: `software` (Lua patterns on the
-- framework `software`), `version` ("major.minor"), `source`.  A release
-- not listed runs a TransformerEngine recent enough for every kernel
-- apsearch.te_attention knows.
M.TRANSFORMER_ENGINE = {
  {
    software = { "^NeMo 25%.04" },
    version = "2.2",
    source = "NVIDIA/NeMo v2.3.0, v2.3.1 and 7a8f1cc7 (r2.3.0) requirements/manifest.json: "
      .. "transformer_engine ref bee4649c (2.2.0.dev0, 2025-03-18), the build reinstall.sh "
      .. "installs in the 25.04 containers",
  },
}

--- The TransformerEngine release a framework release runs (M.TRANSFORMER_ENGINE).
-- @tparam string|nil software framework `software` (M.framework_software)
-- @treturn string|nil version "major.minor"; nil: not pinned here
-- @treturn string|nil source
function M.transformer_engine(software)
  if type(software) ~= "string" or software == "" then return nil end
  software = M.framework_software(software)
  for _, e in ipairs(M.TRANSFORMER_ENGINE) do
    if any(e.software, software) then return e.version, e.source end
  end
  return nil
end

--- Backward FLOPs of flash attention per forward FLOP (the core's
-- APS_FLASH_BWD_RATIO, src/core/internal.h): the kernel's one time
-- prices the forward and 2.5x its FLOPs backward.
M.FLASH_BWD_RATIO = 2.5

--- An attention kernel's efficiency as one fraction of the bf16 peak, from
-- its forward and backward throughput (TFLOP/s as the benchmark counts
-- them, causal FLOPs halved): (1 + r) / (1 / fwd + r / bwd) / peak, r =
-- M.FLASH_BWD_RATIO.
-- @tparam number fwd forward TFLOP/s
-- @tparam number bwd backward TFLOP/s
-- @tparam number peak dense bf16 peak, TFLOP/s
-- @treturn number fraction of the peak
function M.attention_efficiency(fwd, bwd, peak)
  local r = M.FLASH_BWD_RATIO
  return (1 + r) / (1 / fwd + r / bwd) / peak
end

--- Attention kernels on H100 SXM5 (989 TFLOP/s dense bf16), head dim 128,
-- bf16, 8K tokens, where every kernel has reached its plateau: Shah et
-- al. 2024, FlashAttention-3 (arXiv:2407.08608), Figure 5 (forward,
-- causal) and Figure 6 (backward), bar labels: cuDNN 529 / 518 TFLOP/s,
-- FlashAttention-2 333 / 318.  Which one a run gets is its stack's:
--   * TransformerEngine (Megatron-LM, NeMo 2.x, Megatron-Bridge) prefers
--     cuDNN fused attention on Hopper and newer from v1.8 ("Disabling
--     FlashAttention to give FusedAttention preference on Hopper+":
--     NVIDIA/TransformerEngine v1.8 transformer_engine/pytorch/
--     attention.py:5166; v2.2 dot_product_attention/utils.py:904; d0067d0d
--     attention/dot_product_attention/utils.py:1648); before, it ran
--     FlashAttention-2 first when installed (v1.7 attention.py:3862).
--     The NeMo 1.x containers install flash-attn (NVIDIA/NeMo v2.0.0rc0
--     Dockerfile:132-133) beside a TransformerEngine from before that
--     preference (v2.0.0 Dockerfile.ci:53, TE 7d576ed2 of 2024-06-13, 19
--     commits before v1.8): FlashAttention-2.
--   * PyTorch's scaled_dot_product_attention (TorchTitan from 2025-04)
--     runs FlashAttention-2: cuDNN attention is opt-in after the 2.5 bugs
--     (pytorch/pytorch#138522) and preferred only with a cuDNN newer than
--     9.15 (sdp_utils.cpp check_prefer_cudnn_attention, in 2.10; the
--     wheels' cuDNN crosses it from 2.11: huggingface/transformers#48163).
--     TorchTitan's 2024 runs straddle that change (2.5's nightlies
--     preferred cuDNN on H100): no profile, the preset's fitted value.
M.H100_CUDNN_TFLOPS = { fwd = 529, bwd = 518 }
M.H100_FA2_TFLOPS = { fwd = 333, bwd = 318 }
M.H100_CUDNN_ATTENTION = M.attention_efficiency(M.H100_CUDNN_TFLOPS.fwd, M.H100_CUDNN_TFLOPS.bwd, 989)
M.H100_FA2_ATTENTION = M.attention_efficiency(M.H100_FA2_TFLOPS.fwd, M.H100_FA2_TFLOPS.bwd, 989)

--- PyTorch's FlexAttention on H100, as a multiple of FlashAttention-2's
-- rate: its forward "~25% faster than FlashAttention2", its backward
-- "~3% faster", averages over its authors' benchmark of attention
-- variants, as the abstract of Guessous, "FlexAttention: The Flexibility
-- of PyTorch With the Performance of FlashAttention" (GTC 2025) states
-- them (quoted in pytorch/pytorch.github.io "PyTorch at GTC 2025").  The
-- paper behind it (Dong et al. 2024, arXiv:2412.05496) was not read
-- here; no head-dim or sequence-length split of the averages is taken.
M.FLEX_OVER_FA2_FWD_H100 = 1.25
M.FLEX_OVER_FA2_BWD_H100 = 1.03
M.H100_FLEX_ATTENTION = M.attention_efficiency(M.H100_FA2_TFLOPS.fwd * M.FLEX_OVER_FA2_FWD_H100,
  M.H100_FA2_TFLOPS.bwd * M.FLEX_OVER_FA2_BWD_H100, 989)

--- The Hopper parts' entry of a stack profile: the attention kernel's
-- efficiency on the GH100 die (the H100 SXM5 the benchmark ran, the H200
-- and the H800, all 989 TFLOP/s dense bf16; the 500 W variant, whose preset peak
-- is 886 TFLOP/s at its lower clocks, takes the same fraction of its own
-- peak, as its fitted fields do).
local function h100_attention(eff)
  return { ["h100-sxm-80gb"] = { attention_efficiency = eff },
           ["h100-96gb-500w"] = { attention_efficiency = eff },
           ["h200-sxm-141gb"] = { attention_efficiency = eff },
           ["h800-sxm-80gb"] = { attention_efficiency = eff } }
end

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
-- calibrate --group software`, `apsearch validate`); `software` is what
-- a policy naming the stack runs (M.policy_software): the release line
-- whose settings it takes (M.release_settings).
--
-- A profile holds kernel properties measured outside any training run (a
-- kernel benchmark), never a value fitted to runs: the attention kernel
-- the stack runs on H100 (M.H100_CUDNN_ATTENTION, M.H100_FA2_ATTENTION).
-- A stack whose kernel no benchmark covers (llm-foundry's Triton
-- attention with ALiBi, TorchTitan before 2025-04, DeepSpeed) takes the
-- preset's fitted value. Fitted per stack, the
-- public runs cannot be checked out of sample (each stack of the public
-- set is one publication: docs/accuracy.md "Software stacks"); `apsearch
-- calibrate --group software` fits them from a team's own runs.
M.STACKS = {
  { id = "megatron-bridge-25", framework = "megatron", newest = true,
    name = "Megatron-Bridge 25.x (NeMo 25.x containers)", software = "Megatron-Bridge",
    patterns = { "Megatron%-Bridge", "^NeMo 2[5-9]%.", "^MLPerf.*NeMo 2[5-9]" },
    devices = h100_attention(M.H100_CUDNN_ATTENTION) },
  { id = "nemo-2", framework = "megatron",
    name = "NeMo 2.x performance scripts (24.12 container)", software = "NeMo 24.12",
    patterns = { "^NeMo 2[4-9]%.1[0-2]" }, devices = h100_attention(M.H100_CUDNN_ATTENTION) },
  { id = "nemo-1", framework = "megatron",
    name = "NeMo 1.x launcher (24.0x containers)", software = "NeMo 24.07",
    patterns = { "^NeMo 2[34]%.0[1-9]" }, devices = h100_attention(M.H100_FA2_ATTENTION) },
  { id = "megatron-lm", framework = "megatron",
    name = "Megatron-LM (NVIDIA/Megatron-LM)", software = "Megatron-LM",
    patterns = { "^Megatron%-LM" }, devices = h100_attention(M.H100_CUDNN_ATTENTION) },
  { id = "torchtitan-2025", framework = "fsdp2", newest = true,
    name = "TorchTitan from 2025-04 (loss compiled)", software = "torchtitan",
    patterns = { "^torchtitan" }, from = "2025-04", devices = h100_attention(M.H100_FA2_ATTENTION) },
  { id = "torchtitan-2024", framework = "fsdp2",
    name = "TorchTitan before 2025-04", software = "torchtitan (2025-03)",
    patterns = { "^torchtitan" }, before = "2025-04", devices = {} },
  -- NeMo AutoModel: its own models run model.backend.attn, "te" by default
  -- (TransformerEngine's DotProductAttention, cuDNN fused attention on
  -- Hopper, as Megatron-Bridge's: BackendConfig.attn,
  -- components/models/common/utils.py:328 @ 36044ad3); a model it builds
  -- through transformers runs FlashAttention-2 (attn_implementation
  -- flash_attention_2 where flash-attn is installed, else SDPA's flash
  -- kernel: _transformers/kernel_patches.py:71); "flex" is PyTorch's
  -- FlexAttention (M.attention_backend picks the entry)
  { id = "automodel", framework = "automodel", newest = true,
    name = "NeMo AutoModel", software = "NeMo AutoModel",
    patterns = { "^NeMo AutoModel" }, devices = h100_attention(M.H100_CUDNN_ATTENTION),
    attention = { te = h100_attention(M.H100_CUDNN_ATTENTION), sdpa = h100_attention(M.H100_FA2_ATTENTION),
                  flex = h100_attention(M.H100_FLEX_ATTENTION) } },
  { id = "llm-foundry", framework = "fsdp", newest = true,
    name = "MosaicML llm-foundry (PyTorch FSDP)", software = "llm-foundry",
    patterns = { "^llm%-foundry" }, devices = {} },
  { id = "deepspeed", framework = "deepspeed", newest = true,
    name = "DeepSpeed", software = "DeepSpeed",
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

--- The stack a training table runs: `training.stack`, else the stack
-- of `training.software` (M.of_software), else the framework's default.
function M.resolve(training)
  training = training or {}
  if training.stack then return training.stack end
  return (M.of_software(training.software, training.framework or "megatron"))
end

--- NeMo AutoModel's attention kernel for a training table:
-- `training.attn_backend`, else FlashAttention-2's "sdpa" for a model it
-- builds through transformers (training.transformers_model), else its
-- BackendConfig default "te".
-- @tparam table|nil training
-- @treturn string "te", "sdpa" or "flex"
function M.attention_backend(training)
  training = training or {}
  return training.attn_backend or (training.transformers_model and "sdpa") or "te"
end

--- Checks `training.stack` against the framework; nil when it is fine,
-- else the problem as text (and the field it is about, when not stack).
function M.check(training)
  if training and training.attn_backend ~= nil and training.framework ~= "automodel" then
    return ("NeMo AutoModel's model.backend.attn: set training.framework = automodel, or leave it out (framework " ..
      "%s)"):format(tostring(training.framework or "megatron")), "attn_backend"
  end
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


--- The stack of a measured run, from its `software` and `framework`
-- columns: the first stack of that framework whose pattern matches (and
-- whose date bounds hold), else the framework's default.
-- @treturn string identifier
-- @treturn boolean true when `software` matched a stack
function M.of_software(software, framework)
  if type(software) == "string" and software ~= "" then
    software = M.framework_software(software)
    local month = M.run_month(software)
    for _, st in ipairs(M.STACKS) do
      if st.framework == framework
        and (not st.before or (month and month < st.before))
        and (not st.from or not month or month >= st.from)
        and any(st.patterns, software) then
        return st.id, true
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
-- @tparam[opt] table training the run's training table (the attention
--   kernel of a stack with several, M.profile_fields)
-- @treturn table cluster
function M.apply(cluster, id, training)
  local dev = cluster.device
  local name = type(dev) == "string" and dev or (type(dev) == "table" and (dev.base or dev.name))
  local fields = M.profile_fields(id, name, training)
  if not fields then return cluster end
  if type(dev) == "string" then dev = { base = dev } end
  for k, v in pairs(fields) do
    if dev[k] == nil then dev[k] = v end
  end
  cluster.device = dev
  return cluster
end

--- The fields a stack's profile sets for a device preset, or nil: of a
-- stack whose attention kernel the run chooses (`attention`), the entry
-- of the training table's kernel (M.attention_backend).
-- @tparam string|nil id stack identifier
-- @tparam string|nil device preset name (any case)
-- @tparam[opt] table training the run's training table (nil: the
--   stack's default kernel)
-- @treturn table|nil field -> value (not to be modified)
function M.profile_fields(id, device, training)
  local st = id and by_id[id]
  local devices = st and (st.attention and st.attention[M.attention_backend(training)] or st.devices)
  local fields = devices and device and devices[device:lower()]
  if not fields or next(fields) == nil then return nil end
  return fields
end

--- The release line of a run and the settings it implies.
-- @tparam string software the row's `software` column (may be empty)
-- @tparam string framework the row's `framework`
-- @treturn table|nil the matching entry of `M.LINES` (fields name,
--   training, source), or nil when none matches
function M.match(software, framework)
  if type(software) ~= "string" or software == "" then return nil end
  software = M.framework_software(software)
  local month = M.run_month(software)
  for _, line in ipairs(M.LINES) do
    if line.frameworks[framework] and (not line.before or (month and month < line.before))
      and any(line.patterns, software) then
      return line
    end
  end
  return nil
end

--- The training settings a release line (M.match) gives a run of
-- `software`: the line's `training`, its `quantized` ones for fp8, mxfp8
-- and nvfp4, and its `dated` ones whose window of months holds the run's
-- month (M.software_month; a software naming none gets none of them), in
-- that order, each key once (the first wins), keys sorted within a set.
-- @tparam string|nil software a `software` string ("Megatron-Bridge 25.09")
-- @tparam string framework training.framework
-- @tparam string|nil precision training.precision
-- @treturn table array of {key, value, name, source} (empty: no line)
function M.release_settings(software, framework, precision)
  local line = M.match(software, framework)
  local out, seen = {}, {}
  if not line then return out end
  local function add(set, name, source)
    for _, k in ipairs(util.sorted_keys(set or {})) do
      if not seen[k] then
        seen[k] = true
        out[#out + 1] = { key = k, value = set[k], name = name, source = source }
      end
    end
  end
  local quantized = precision ~= nil and precision ~= "bf16" and precision ~= "fp16"
  add(line.training, line.name, line.source)
  if quantized then add(line.quantized, line.name, line.source) end
  local month = M.software_month(software)
  for _, d in ipairs(line.dated or {}) do
    if month and month >= d.since and (not d.before or month < d.before) then add(d.training, d.name, d.source) end
  end
  return out
end

--- What a run's `software` leaves unread of its release line's dated
-- settings: a release month that cannot be read ("Megatron-Bridge 25.9":
-- a release is spelt YY.MM), whose settings by month (`dated`) are then
-- not applied, or a month after the line's `read_through` (the newest
-- release its settings were read against), estimated as that release.
-- @tparam string|nil software a `software` string
-- @tparam string framework training.framework
-- @treturn string|nil the note's text (no "note:" prefix), nil when the
--   month is read within the line's releases, or the line has no dated
--   settings
function M.release_month_note(software, framework)
  local line = M.match(software, framework)
  if not (line and line.dated) then return nil end
  local month = M.software_month(software)
  if not month then
    local names = {}
    for i, d in ipairs(line.dated) do names[i] = d.name end
    return ("no release month read from %s (a release is spelt YY.MM, as 25.09, or a date YYYY-MM): "
      .. "%s settings by release month not applied: %s"):format(
      util.describe(software), line.name, table.concat(names, "; "))
  end
  if line.read_through and month > line.read_through then
    return ("%s is read as the release of %s, after the newest apsearch has read of %s (%s): "
      .. "estimated with that release's settings"):format(util.describe(software), month, line.name,
      line.read_through)
  end
  return nil
end

--- Writes the settings of `software`'s release line (M.release_settings)
-- into a training table where it leaves them unset.
-- @tparam table training (mutated; its framework and precision read)
-- @tparam string|nil software
-- @treturn table the entries written ({key, value, name, source}), in order
function M.fill_release_settings(training, software)
  local written = {}
  for _, e in ipairs(M.release_settings(software, training.framework or "megatron", training.precision)) do
    if training[e.key] == nil then
      training[e.key] = e.value
      written[#written + 1] = e
    end
  end
  return written
end

--- The software a policy's training runs, for its release line's settings
-- (M.release_settings): `training.software` when given, else the stack
-- it names (`training.stack`: that stack's `software`), else nil (the
-- framework's own defaults: a policy that names neither is estimated as
-- the launch files run it).
-- @tparam table training policy training table
-- @treturn string|nil software
function M.policy_software(training)
  if training.software then return training.software end
  local st = training.stack and by_id[training.stack]
  return st and st.software or nil
end

--- What NeMo's mixture-of-experts performance recipes set beyond the
-- release line (`M.LINES`), per model family and device, for measured MoE
-- runs whose columns leave it unstated (`apsearch validate`).  Each entry:
-- `models` (Lua patterns on the row's `model`), `devices` (patterns on the
-- device preset; nil: every device), `software` (patterns on `software`),
-- `since` ("YYYY-MM", the month the setting entered the recipe; a release
-- "YY.MM" in `software` before it does not get it), `before` (optional,
-- "YYYY-MM": a release from that month on does not get it), `strategy` and
-- `training` settings, `source` (file and commit).  Settings:
-- moe_token_dispatcher "flex" with moe_load_imbalance 1 (DeepEP with
-- --moe-router-force-load-balancing: every expert gets its balanced
-- share); moe_capacity_factor 1 (MegatronTokenDropCallback: capacity 1.0,
-- inputs padded to it, so every expert runs its balanced share);
-- layer_recompute selective with Megatron's recompute_modules;
-- exp_avg_bf16 (the precision-aware optimizer's bf16 moments);
-- moe_shared_expert_overlap (the shared expert beside dispatch and
-- combine); `layouts`:
-- layers per pipeline stage by "<pp>x<vpp>" (Megatron's
-- --pipeline-model-parallel-layout as the script sets it); `pipeline_split`:
-- the split rule whose chunks the script's layout is, for every pp > 1
-- (src/core/pipeline.c; written to the strategy as its stage_partition).
M.MOE_RECIPES = {
  {
    -- the low-precision plugins of the performance scripts keep and gather
    -- the weights quantized (applied to MoE rows only: the dense rows of
    -- the same line keep their calibrated settings, docs/accuracy.md)
    name = "NeMo performance scripts' fp8 / mxfp8 precision plugins",
    models = { "." }, since = "2025-01", quantized_only = true,
    software = { "^NeMo 2[5-9]%." },
    training = { fp8_param_gather = true },
    source = "NVIDIA/NeMo 8cfedd72 nemo/collections/llm/recipes/precision/mixed_precision.py:70, 101, " ..
      "137 (bf16_with_fp8_mixed, bf16_with_mxfp8_mixed, bf16_with_fp8_current_scaling_mixed: " ..
      "fp8_param_gather = True), set by scripts/performance/helpers.py set_precision_configs",
  },
  {
    name = "NeMo / Megatron-Bridge DeepSeek-V3 recipe (bf16 moments and main grads)",
    models = { "^DeepSeek%-V3" }, since = "2025-08",
    software = { "^NeMo 2[5-9]%.", "^Megatron%-Bridge 2[5-9]%." },
    training = { exp_avg_bf16 = true, grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo 024a7e65 (2025-08-11) nemo/collections/llm/recipes/deepseek_v3.py:133-137 " ..
      "(use_precision_aware_optimizer, main_grads_dtype, exp_avg_dtype, exp_avg_sq_dtype = bf16); " ..
      "NVIDIA-NeMo/Megatron-Bridge r0.1.0 (25.09) src/megatron/bridge/recipes/deepseek/deepseek_v3.py:240-244, " ..
      "v0.5.0:205-209 (the same four settings)",
  },
  {
    -- transformer layers per model chunk: ceil(61 / (p v)), the last chunk
    -- the rest, for every (pp, vpp) the script's map names (the script's
    -- embedding and loss entries dropped)
    name = "NeMo DeepSeek-V3 performance script (pipeline layout)",
    models = { "^DeepSeek%-V3" }, since = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    -- (4x1 16, 16, 16, 13; 8x1 and 4x2 8 x 7, 5; 16x1, 8x2, 4x4 4 x 15, 1)
    pipeline_split = "fill_last",
    source = "NVIDIA/NeMo ba1ff161 (2025-07-10) scripts/performance/llm/pretrain_deepseek_v3.py:97-105 " ..
      "(map_pp_vp_to_layout, pipeline_model_parallel_layout), read at 8cfedd72",
  },
  {
    -- NeMo's DeepSeek-V3 pretrain_recipe trains one MTP layer unless told
    -- not to (use_mtp=True), and the performance scripts call it so.
    -- (Megatron-Bridge's pretrain_config defaults to mtp_num_layers = 1
    -- too, v0.2.0 recipes/deepseek/deepseek_v3.py:174, but its published
    -- 25.11 table names the run "DeepSeekV3 (w/o MTP)": not assumed there.)
    name = "NeMo DeepSeek-V3 recipe (one MTP layer)",
    models = { "^DeepSeek%-V3" }, since = "2025-04",
    software = { "^NeMo 2[5-9]%." },
    training = { mtp_num_layers = 1 },
    source = "NVIDIA/NeMo v2.3.0 and 7a8f1cc7 nemo/collections/llm/recipes/deepseek_v3.py:62, 93 " ..
      "(pretrain_recipe use_mtp=True -> mtp_num_layers=1), scripts/performance/llm/" ..
      "pretrain_deepseek_v3.py (pretrain_recipe() without use_mtp; the same at 8cfedd72)",
  },
  {
    -- the r2.3 branch (25.04 containers): token drop on every device, the
    -- first and last stage one and two layers short of 64 / pp
    -- (num_layers_in_first/last_pipeline_stage), DeepSeekConfig's
    -- shared-expert overlap; selective recompute of the modules the
    -- device's recommended configuration names (below)
    name = "NeMo DeepSeek-V3 performance script, r2.3 (all-to-all with token drop)",
    models = { "^DeepSeek%-V3" }, since = "2025-04", before = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    strategy = { moe_token_dispatcher = "alltoall", moe_capacity_factor = 1.0, layer_recompute = "selective" },
    training = { moe_shared_expert_overlap = true },
    layouts = {
      ["4x1"] = { 15, 16, 16, 14 },
      ["8x1"] = { 7, 8, 8, 8, 8, 8, 8, 6 },
      ["16x1"] = { 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2 },
    },
    source = "NVIDIA/NeMo 7a8f1cc7 (r2.3.0, 2025-06-02) scripts/performance/llm/pretrain_deepseek_v3.py:40, "
      .. "67-81 (USE_TOKEN_DROP, recompute_granularity selective, num_layers_in_first_pipeline_stage "
      .. "64 // pp - 1, num_layers_in_last_pipeline_stage 64 // pp - 2, MegatronTokenDropCallback); "
      .. "nemo/collections/llm/gpt/model/deepseek.py:86-88 (alltoall, moe_shared_expert_overlap)",
  },
  {
    name = "NeMo DeepSeek-V3 recommended configuration on H100, r2.3 (recompute modules)",
    models = { "^DeepSeek%-V3" }, devices = { "^h100" }, since = "2025-04", before = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    strategy = { recompute_modules = "mla_up_proj" },
    source = "NVIDIA/NeMo 7a8f1cc7 scripts/performance/recommended_model_configs/model_configs_h100.csv "
      .. "(deepseek v3: mla_up_proj); NVIDIA/dgxc-benchmarking 1f6d9f4 deepseek_v3/pretraining/launch.sh:106 "
      .. "(RM='mla_up_proj' on h100)",
  },
  {
    name = "NeMo DeepSeek-V3 recommended configuration on GB200, r2.3 (recompute modules)",
    models = { "^DeepSeek%-V3" }, devices = { "^gb", "^b[23]00" }, since = "2025-04", before = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    strategy = { recompute_modules = "core_attn" },
    source = "NVIDIA/NeMo 7a8f1cc7 scripts/performance/recommended_model_configs/model_configs_gb200.csv "
      .. "(deepseek v3 on 128 and 256 GPUs: core_attn); NVIDIA/dgxc-benchmarking 1f6d9f4 "
      .. "deepseek_v3/pretraining/launch.sh:119 (RM='core_attn' on gb200)",
  },
  {
    name = "NeMo DeepSeek-V3 performance script on H100 (DeepEP, forced balance, recompute modules)",
    models = { "^DeepSeek%-V3" }, devices = { "^h100" }, since = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    strategy = { moe_token_dispatcher = "flex", layer_recompute = "selective",
                 recompute_modules = "mla_up_proj/mlp/moe" },
    training = { moe_load_imbalance = 1.0 },
    source = "NVIDIA/NeMo 99e5dac6 (2025-07-31) scripts/performance/llm/pretrain_deepseek_v3.py:78-85 " ..
      "(moe_token_dispatcher_type flex, moe_enable_deepep, moe_router_force_load_balancing on h100); " ..
      "scripts/performance/recommended_model_configs/model_configs_h100.csv (recompute_modules " ..
      "mla_up_proj/mlp/moe), read at 8cfedd72",
  },
  {
    name = "NeMo DeepSeek-V3 performance script on Blackwell (all-to-all with token drop)",
    models = { "^DeepSeek%-V3" }, devices = { "^gb", "^b[23]00" }, since = "2025-07",
    software = { "^NeMo 2[5-9]%." },
    strategy = { moe_token_dispatcher = "alltoall", moe_capacity_factor = 1.0 },
    training = { moe_shared_expert_overlap = true },
    source = "NVIDIA/NeMo e1335c83 (2025-04-22) scripts/performance/llm/pretrain_deepseek_v3.py:86-91 " ..
      "(alltoall, moe_shared_expert_overlap, MegatronTokenDropCallback), " ..
      "nemo/lightning/pytorch/callbacks/moe_token_drop.py " ..
      "(moe_expert_capacity_factor 1.0, moe_pad_expert_input_to_capacity), read at 8cfedd72",
  },
  {
    name = "NeMo Llama 4 performance recipe (token drop, TP overlap, bf16 gradient reduction)",
    models = { "^Llama%-4" }, since = "2025-04",
    software = { "^NeMo 2[5-9]%." },
    strategy = { moe_capacity_factor = 1.0 },
    training = { tp_comm_overlap = true, moe_shared_expert_overlap = true, grad_reduce_in_fp32 = false },
    source = "NVIDIA/NeMo v2.3.0 (25.04) nemo/collections/llm/recipes/llama4_e16.py, " ..
      "llama4_e128.py pretrain_performance_optimizations (MegatronTokenDropCallback, " ..
      "tp_comm_overlap=True, plugins.grad_reduce_in_fp32 = False); " ..
      "nemo/collections/llm/gpt/model/llama.py:404 (Llama4Config moe_shared_expert_overlap = True); " ..
      "the same at 8cfedd72",
  },
  {
    -- Megatron-Bridge's performance scripts (the NeMo containers from
    -- 25.11 on) replace the Qwen3 and DeepSeek-V3 router's logits by
    -- random ones (Megatron-LM router.py apply_random_logits): every
    -- expert gets its balanced share.  With --use_tokendrop the scripts
    -- turn it off, but capacity 1.0 caps the load at 1 anyway.  25.09
    -- (r0.1.0) ran Qwen3 with token drop (the table's "(tokendrop)") and
    -- DeepSeek-V3 with token drop on Blackwell, with DeepEP and the forced
    -- balance on H100 (run_script.py).
    name = "Megatron-Bridge performance scripts (forced load balance)",
    models = { "^Qwen3%-", "^DeepSeek%-V3" }, since = "2025-09",
    software = { "^Megatron%-Bridge 2[5-9]%." },
    training = { moe_load_imbalance = 1.0 },
    source = "NVIDIA-NeMo/Megatron-Bridge v0.2.0 scripts/performance/configs/qwen3/qwen3_llm_pretrain.py:47, " ..
      "deepseek/deepseek_llm_pretrain.py:43 (moe_router_force_load_balancing = True, \"required for token " ..
      "dropless\"); the same at v0.3.0-v0.5.1 (configs/qwen/qwen3_llm_pretrain.py:44-45, " ..
      "deepseek/deepseek_llm_pretrain.py:40-50); utils/helpers.py:229 (False with --use_tokendrop); " ..
      "r0.1.0 (25.09) scripts/performance/run_script.py:55-78 (DeepSeek-V3: token drop on b200 and gb200, " ..
      "else DeepEP with moe_router_force_load_balancing)",
  },
  {
    name = "NeMo Mixtral performance recipe (token drop)",
    models = { "^Mixtral" }, since = "2024-09",
    software = { "^NeMo 2[4-9]%." },
    strategy = { moe_capacity_factor = 1.0 },
    source = "NVIDIA/NeMo cc494c9d (2024-09-16) nemo/collections/llm/recipes/mixtral_8x7b.py " ..
      "pretrain_performance_optimizations (MegatronTokenDropCallback), read at 8cfedd72",
  },
}


--- Releases whose published throughput for a model on a device is far
-- below what the same model reached on the same device a few releases
-- later, with no setting in the release's recipe files that explains the
-- gap (docs/accuracy.md, "Mixture of experts").  A matching measured run is
-- still estimated and reported, but marked: `apsearch validate` gives the
-- error statistics with and without the marked runs, and `--cv source`
-- fits no efficiency on them (they measure the release, not the device).
-- Each entry: `models`, `devices`, `software` (Lua patterns, any matches),
-- `releases` (release months "YYYY-MM" of the `software` string, exact),
-- `evidence` (the later published number and apsearch's estimate of it)
-- and `source`.
M.RELEASE_GAPS = {
  {
    name = "DeepSeek-V3 on GB200 in NeMo 25.04 (dgxc-benchmarking 25.08)",
    models = { "^DeepSeek%-V3" }, devices = { "^gb200" },
    software = { "^NeMo " }, releases = { "2025-04" },
    evidence = "measured 956-959 tokens/s/GPU (10 % bf16 MFU) on 128-512 GB200 with the nemo:25.04.01 " ..
      "container; its TransformerEngine 2.2 runs MLA attention unfused on Blackwell and the recipe " ..
      "recomputes it (core_attn), both modelled, and the estimate stays about 1.6x above the " ..
      "measurement; NeMo 25.11 published 3,139 tokens/s/GPU for DeepSeek-V3 bf16 on 256 GB200 " ..
      "(GBS 4096, TP 1, PP 4, VP 4, EP 64), which apsearch estimates at 3,096 (-1.4 %), and NeMo " ..
      "25.09 3,454 (fp8, GBS 2048), estimated 4,105 (+18.9 %) (tests/fixtures/gb200_later_checks.csv)",
    source = "NVIDIA-NeMo/Megatron-Bridge 067f987d docs/performance-summary-archive.md (25.11 and 25.09 " ..
      "NeMo containers, DGX-GB200 tables); NVIDIA/dgxc-benchmarking 1f6d9f4 deepseek_v3/pretraining/" ..
      "launch.sh, setup.sh (nemo:25.04.01, NeMo 7a8f1cc7)",
  },
  {
    -- the two releases whose known issues name DeepEP on H100; the patch
    -- release 26.02.01 is not one of them (the frontier: no ".01" after)
    name = "Qwen3-30B-A3B on H100 in Megatron-Bridge 25.11 and 26.02 (releases with DeepEP known issues on H100)",
    models = { "^Qwen3%-30B%-A3B" }, devices = { "^h100" },
    software = { "^Megatron%-Bridge 25%.11%f[^%.%d]", "^Megatron%-Bridge 26%.02%f[^%.%d]" },
    releases = { "2025-11", "2026-02" },
    evidence = "measured 5,275 tokens/s/GPU in 25.11 on the layout 25.09 measured at 10,494 (FP8, TP 1, PP 2, " ..
      "VP 24, EP 8, MBS 2, GBS 512; apsearch 13,066 and 13,299 on 2026-12-06), and 5,113 in 26.02 with the flex dispatcher " ..
      "on DeepEP (PP 2, VP 12, MBS 1, GBS 1024) where the patch release 26.02.01 measured 9,058 with alltoall " ..
      "at that layout (apsearch 8,815, -2.7 %); the releases' known issues: 25.11 \"Deepseek V3 on H100 has " ..
      "an issue when using DeepEP and fails with RuntimeError: DeepEP error: timeout (dispatch CPU)\", 26.02 " ..
      "\"DeepEP is not supported in the current NeMo framework 26.02 container, which results in reduced DSv3 " ..
      "performance compared to the NeMo framework 25.09 container on H100 machines\"; the 26.02 H100 FP8 " ..
      "recipe of this model sets moe_flex_dispatcher_backend = \"deepep\", and no H100 recipe entry of 25.11 " ..
      "has that table's layout",
    source = "NVIDIA-NeMo/Megatron-Bridge 067f987d docs/releases/known-issues.md (25.11, 26.02), " ..
      "docs/performance-summary-archive.md (25.09, 25.11, 26.02, 26.02.01 NeMo containers, DGX-H100 tables); " ..
      "v0.3.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py:421-429 " ..
      "(QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1); v0.2.0 scripts/performance/configs/qwen3/" ..
      "workload_base_configs.py:233-239",
  },
}

--- The release-gap entry (`M.RELEASE_GAPS`) a measured run falls under,
-- or nil.
-- @tparam string software the row's `software`
-- @tparam string model the row's `model`
-- @tparam string device the row's device preset name
-- @treturn table|nil entry
function M.release_gap(software, model, device)
  if type(software) ~= "string" or software == "" then return nil end
  software = M.framework_software(software)
  local month = release_yymm(software)
  for _, e in ipairs(M.RELEASE_GAPS) do
    if month and any(e.software, software) and any(e.models, model) and any(e.devices, device) then
      for _, r in ipairs(e.releases) do
        if r == month then return e end
      end
    end
  end
  return nil
end

--- The MoE recipe entries (`M.MOE_RECIPES`) a measured run gets.
-- @tparam string software the row's `software`
-- @tparam string model the row's `model`
-- @tparam string device the row's device preset name
-- @treturn table array of entries, in table order
function M.moe_recipes(software, model, device)
  local out = {}
  if type(software) ~= "string" or software == "" then return out end
  software = M.framework_software(software)
  local month = release_yymm(software)
  for _, e in ipairs(M.MOE_RECIPES) do
    if any(e.software, software) and any(e.models, model) and (not e.devices or any(e.devices, device))
      and (not month or (month >= e.since and (not e.before or month < e.before))) then
      out[#out + 1] = e
    end
  end
  return out
end

return M
