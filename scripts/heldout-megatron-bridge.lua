#!/usr/bin/env lua5.4
--- Converts NVIDIA's Megatron-Bridge performance summaries into cases files
-- of the validation schema (shared/validation/README.md, docs/accuracy.md
-- "The cases file"): the held-out set of docs/accuracy.md "Held out:
-- Megatron-Bridge performance summaries".
--
-- Usage:
--   lua5.4 scripts/heldout-megatron-bridge.lua GIT_DIR [COMMIT] > /dev/null
--     writes tests/fixtures/heldout/megatron_bridge_perf.csv (dense),
--     tests/fixtures/heldout/megatron_bridge_perf_moe.csv (MoE) and
--     tests/fixtures/heldout/megatron_bridge_perf_hybrid.csv (hybrid Mamba-2
--     models, named by an example config: validate's `model_config`) and
--     prints the rows it left out, with the reason, on stderr.
-- GIT_DIR: a clone of NVIDIA-NeMo/Megatron-Bridge (a bare mirror will do);
-- COMMIT: the commit whose docs/performance-summary.md and
-- docs/performance-summary-archive.md are read (default 067f987df).
--
-- What a table row gives (release, system, precision, GPUs, GBS, MBS,
-- sequence, FSDP, TP, PP, CP, VP, EP, tokens/s/GPU, model TFLOP/s/GPU) is
-- copied; what it does not (recompute, activation offload, CUDA graphs, TP
-- overlap, token dispatcher, gradient-reduction dtype) is read from the
-- performance recipe of the row's release (scripts/performance/configs/
-- <family>/*workload_base_configs.py at the release's tag: the entry for
-- the model, GPU and precision whose parallel layout equals the table's),
-- and each row's `notes` name the entry and the tag.  The parser below reads
-- the recipe files as text (assignments `NAME = replace(BASE, k=v, ...)`,
-- `NAME = WorkloadBaseConfig(...)`, `NAME = OTHER`); it does not run them.

-- a one-line message on stderr and exit status 2 (the CLI's bad input)
local function die(msg)
  io.stderr:write("heldout-megatron-bridge.lua: ", msg, "\n")
  os.exit(2)
end
local GIT_DIR = arg[1] or die("usage: heldout-megatron-bridge.lua GIT_DIR [COMMIT]")
local COMMIT = arg[2] or "067f987df"
-- the fixtures of the tree the script is in, wherever it is run from
local ROOT = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/.."
package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. package.path
local OUT_DENSE = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf.csv"
local OUT_MOE = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf_moe.csv"
local OUT_HYBRID = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf_hybrid.csv"

--- NeMo container release -> Megatron-Bridge git ref whose performance
-- recipes produced it, as the documentation's version switcher pairs them
-- (docs/versions1.json at 067f987df: "0.1.0 · 25.09", "0.2.0 · 25.11",
-- "0.3.0 · 26.02", "0.3.1 · 26.02.01", "0.4.0 · 26.04", "0.4.2 · 26.04.01",
-- "0.5.0 · 26.06", "0.5.1 · 26.06.01", "0.6.0 · 26.08"; 26.02.01 = r0.3.1
-- is also in docs/releases/known-issues.md).  25.09 reads r0.1.0's YAML
-- recipes.  26.08's recipes moved out of scripts/performance/configs at
-- v0.6.0; its rows read v0.5.1's (noted per row).
local RELEASES = {
  ["25.09"] = { ref = "r0.1.0", yaml = true },
  ["25.11"] = { ref = "v0.2.0", layout = "v0.2" },
  ["26.02"] = { ref = "v0.3.0" },
  ["26.02.01"] = { ref = "v0.3.1" },
  ["26.04"] = { ref = "v0.4.0" },
  ["26.04.01"] = { ref = "v0.4.2" },
  ["26.06"] = { ref = "v0.5.0" },
  ["26.06.01"] = { ref = "v0.5.1" },
  ["26.08"] = { ref = "v0.5.1", moved = true },
}

--- Systems of the tables -> apsearch device presets.  GB200 / GB300 jobs
-- use whole NVL72 racks, 64 GPUs each (16 compute trays of 4).  `hybrid`:
-- read for the hybrid set only (the b300 preset came after the dense and
-- MoE sets were converted, whose B300 rows stay left out).
local SYSTEMS = {
  ["DGX-GB300"] = { device = "gb300", per_node = 4, rack = 64, gpu = "GB300" },
  ["DGX-GB200"] = { device = "gb200", per_node = 4, rack = 64, gpu = "GB200" },
  ["DGX-B200"] = { device = "b200", per_node = 8, gpu = "B200" },
  ["DGX-H100"] = { device = "h100-sxm-80gb", per_node = 8, gpu = "H100" },
  ["DGX-B300"] = { device = "b300", per_node = 8, gpu = "B300", hybrid = true },
}

--- Architectures (Hugging Face config.json of each model; the MoE ones in
-- shared/models/moe).  `cfg`: the recipe files' name of the model;
-- `file`: the workload config file per recipe layout.
local MODELS = {
  LLAMA3_8B = { name = "Llama 3 8B", cfg = "LLAMA3_8B", family = "llama3",
    arch = { 32, 4096, 14336, 32, 8, 128256 } },
  LLAMA3_70B = { name = "Llama 3 70B", cfg = "LLAMA3_70B", family = "llama3",
    arch = { 80, 8192, 28672, 64, 8, 128256 } },
  ["LLAMA3.1_405B"] = { name = "Llama 3.1 405B", cfg = "LLAMA31_405B", family = "llama31",
    arch = { 126, 16384, 53248, 128, 8, 128256 } },
  Qwen3_30B_a3B = { name = "Qwen3-30B-A3B", cfg = "QWEN3_30B_A3B", family = "qwen3",
    arch = { 48, 2048, 6144, 32, 4, 151936 },
    moe = { num_experts = 128, experts_per_token = 8, moe_ffn_hidden_size = 768,
      shared_expert_ffn_hidden_size = 0, num_dense_layers = 0, moe_layer_freq = 1,
      attention = "gqa", head_dim = 128, qk_norm = "true" } },
  Qwen3_235B_a22B = { name = "Qwen3-235B-A22B", cfg = "QWEN3_235B_A22B", family = "qwen3",
    arch = { 94, 4096, 12288, 64, 4, 151936 },
    moe = { num_experts = 128, experts_per_token = 8, moe_ffn_hidden_size = 1536,
      shared_expert_ffn_hidden_size = 0, num_dense_layers = 0, moe_layer_freq = 1,
      attention = "gqa", head_dim = 128, qk_norm = "true" } },
  -- DeepSeek-V3 names its example config too (`router_config`, validate's
  -- model_config; its columns stay, checked against it): its router's 8
  -- groups and top-4 groups (node-limited routing), which Megatron-Bridge's
  -- DeepSeek bridge maps from the Hugging Face config's n_group /
  -- topk_group (models/conversion/model_bridge.py l.487-488 @ 067f987df)
  -- and no column states
  DeepSeekV3 = { name = "DeepSeek-V3", cfg = "DEEPSEEK_V3", family = "deepseek", router_config = "deepseek-v3",
    arch = { 61, 7168, 18432, 128, 128, 129280 },
    moe = { num_experts = 256, experts_per_token = 8, moe_ffn_hidden_size = 2048,
      shared_expert_ffn_hidden_size = 2048, num_dense_layers = 3, dense_ffn_hidden_size = 18432,
      moe_layer_freq = 1, attention = "mla", q_lora_rank = 1536, kv_lora_rank = 512,
      qk_nope_head_dim = 128, qk_rope_head_dim = 64, v_head_dim = 128 } },
  -- a hybrid Mamba-2 model: its architecture is the example config
  -- `config` (examples/models/<config>.json, the Hugging Face config.json
  -- of nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16); the row states only
  -- the columns validate checks against it.  `files`: the workload config
  -- file where a release's differs from RECIPE_FILES (v0.3.1 had the Nano
  -- alone; v0.4.0 on, nemotron_3_workload_base_configs.py has Nano, Super
  -- and Ultra)
  Nemotron_3_Nano = { name = "Nemotron-3-Nano-30B-A3B", cfg = "NEMOTRON_3_NANO", family = "nemotronh",
    config = "nemotron-3-nano-30b-a3b", arch = { 52, 2688, nil, 32, 2, 131072 },
    moe = { num_experts = 128, experts_per_token = 6, moe_ffn_hidden_size = 1856 },
    files = { ["v0.3.1"] = "nemotronh/nemotron_3_nano_workload_base_configs.py" },
    -- what every release's model recipe and script set (the same v0.3.1
    -- to v0.5.1), as validate's recipe columns
    recipe = { moe_router_fusion = "false", moe_router_force_load_balancing = "true",
      note = "src/megatron/bridge/recipes/nemotronh/nemotron_3_nano.py nemotron_3_nano_pretrain_config " ..
        "(moe_token_dispatcher_type flex, moe_router_fusion False, no recompute, seq_length 8192) and the " ..
        "script's set_nemotron_3_nano_common_configs (moe_router_force_load_balancing True, gradients reduced " ..
        "in bf16), the same v0.3.1-v0.5.1; first_last_layers_bf16 of the model recipe is overwritten by the " ..
        "precision config (False for fp8_cs and fp8_mx: scripts/performance/utils/precision.py, " ..
        "training/mixed_precision.py update_config_with_precision_overrides): every layer quantized" } },
  -- Nemotron 3 Super: latent MoE and an MTP layer; its architecture is the
  -- held-out config tests/fixtures/heldout_configs/nvidia--NVIDIA-Nemotron-
  -- 3-Super-120B-A12B-FP8.json (validate's model_config by path), its
  -- recipe read as the Nano's (v0.4.0 on, nemotron_3_workload_base_configs.py)
  Nemotron_3_Super = { name = "Nemotron-3-Super-120B-A12B", cfg = "NEMOTRON_3_SUPER", family = "nemotronh",
    id_prefix = "mbs",
    config = "tests/fixtures/heldout_configs/nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json",
    arch = { 88, 4096, nil, 32, 2, 131072 },
    moe = { num_experts = 512, experts_per_token = 22, moe_ffn_hidden_size = 2688 },
    -- src/megatron/bridge/recipes/nemotronh/nemotron_3_super.py
    -- nemotron_3_super_pretrain_config, the same v0.4.0-v0.5.1:
    -- mtp_num_layers = 2 forward passes of the one MTP block
    -- (mtp_use_repeated_layer True)
    mtp_layers = 2, mtp_repeated_layer = "true",
    -- Megatron's first and last layers in bf16 under NVFP4, as the
    -- performance script sets them (read per release: bf16_layers)
    bf16_layers = { precision = "nvfp4", script = "scripts/performance/configs/nemotronh/nemotron_3_llm_pretrain.py",
      fn = "set_nemotron_3_super_common_configs" },
    recipe = { moe_router_fusion = "false", moe_router_force_load_balancing = "true",
      note = "src/megatron/bridge/recipes/nemotronh/nemotron_3_super.py nemotron_3_super_pretrain_config " ..
        "(moe_flex_dispatcher_backend hybridep, moe_shared_expert_overlap False, no recompute, seq_length 8192, " ..
        "mtp_num_layers 2 with mtp_use_repeated_layer True: the one MTP block (the config's " ..
        "num_nextn_predict_layers 1) run twice, keep_mtp_spec_in_bf16 True) and the script's " ..
        "set_nemotron_3_super_common_configs (moe_router_force_load_balancing True, gradients reduced in " ..
        "bf16), the same v0.4.0-v0.5.1; keep_mtp_spec_in_bf16 not modelled (the MTP layers priced in the " ..
        "row's precision)" } },
}

local RECIPE_FILES = {
  ["v0.2"] = { llama3 = "llama3/workload_base_configs.py", llama31 = "llama31/workload_base_configs.py",
    qwen3 = "qwen3/workload_base_configs.py", deepseek = "deepseek/workload_base_configs.py" },
  default = { llama3 = "llama/llama3_workload_base_configs.py", llama31 = "llama/llama31_workload_base_configs.py",
    qwen3 = "qwen/qwen3_workload_base_configs.py", deepseek = "deepseek/deepseek_workload_base_configs.py",
    nemotronh = "nemotronh/nemotron_3_workload_base_configs.py" },
}

--- 25.09's recipes are yaml perf matrices (scripts/performance/configs/
-- llama3/llama3_{8b,70b}_llm_pretrain.yaml, llama31/llama31_405b_llm_
-- pretrain.yaml at r0.1.0), transcribed here per model, GPU and precision
-- for the settings the table does not give.
local YAML_2509 = {
  LLAMA3_8B = {
    H100 = { FP8_CS = { use_megatron_fsdp = true, cuda_graph_impl = "none" } },
    B200 = { FP8_CS = { cuda_graph_impl = "local" }, FP8_MX = { cuda_graph_impl = "local" } },
    GB200 = { FP8_CS = { cuda_graph_impl = "none" }, FP8_MX = { cuda_graph_impl = "local" } },
  },
  LLAMA3_70B = {
    H100 = { FP8_CS = { cuda_graph_impl = "none" } },
    GB200 = { FP8_CS = { use_megatron_fsdp = true, cpu_offloading_num_layers = 40, cuda_graph_impl = "none" },
      FP8_MX = { cuda_graph_impl = "none" } },
  },
  ["LLAMA3.1_405B"] = {
    H100 = { FP8_CS = { cuda_graph_impl = "none" } },
    B200 = { FP8_CS = { cuda_graph_impl = "none" }, FP8_MX = { cuda_graph_impl = "none" } },
    GB200 = { FP8_CS = { use_megatron_fsdp = true, cpu_offloading_num_layers = 95, cuda_graph_impl = "none" },
      FP8_MX = { cuda_graph_impl = "none" } },
  },
}
-- DeepSeek-V3's yaml (deepseek/deepseek_v3_llm_pretrain.yaml: cuda_graphs
-- false on every GPU) leaves the MoE settings to scripts/performance/
-- run_script.py:55-100 at r0.1.0: DeepEP on H100 (enable_deepep, with
-- moe_router_force_load_balancing), token drop on B200 and GB200;
-- overlap_moe_expert_parallel_comm (A2A_1F1B) on H100, the shared-expert
-- overlap elsewhere; recompute_modules mla_up_proj + mlp on H100,
-- mla_up_proj on B200 and on GB200 with token drop.
local DSV3_2509 = {
  H100 = { moe_flex_dispatcher_backend = "deepep", moe_a2a_overlap = true,
    recompute_modules = { "mla_up_proj", "mlp" }, cuda_graph_impl = "none" },
  B200 = { recompute_modules = { "mla_up_proj" }, cuda_graph_impl = "none" },
  GB200 = { recompute_modules = { "mla_up_proj" }, cuda_graph_impl = "none" },
}
YAML_2509.DeepSeekV3 = {}
for gpu, f in pairs(DSV3_2509) do YAML_2509.DeepSeekV3[gpu] = { FP8_CS = f, FP8_MX = f } end
-- Qwen3's yaml (qwen3/qwen3_{30b_a3b,235b_a22b}_llm_pretrain.yaml at
-- r0.1.0) sets only `cuda_graphs` per GPU; scripts/performance/utils/
-- helpers.py:114-120 set_cuda_graph_overrides turns it into
-- model.enable_cuda_graph, Megatron-Core's local (whole-layer) graphs;
-- run_script.py:104-116 applies the token drop to both models.
local function qwen3_2509(h100, b200, gb200)
  local function f(v) return { cuda_graph_impl = v and "local" or "none" } end
  local function all(v) return { BF16 = f(v), FP8_CS = f(v), FP8_MX = f(v) } end
  return { H100 = all(h100), B200 = all(b200), GB200 = all(gb200) }
end
YAML_2509.Qwen3_30B_a3B = qwen3_2509(false, true, true)
YAML_2509.Qwen3_235B_a22B = qwen3_2509(false, false, true)

--- Megatron-Core's CUDA graph scope of a recipe (cuda_graph_impl,
-- cuda_graph_scope) as apsearch's training.cuda_graph_scope: "local"
-- (enable_cuda_graph) and transformer_engine without a scope capture
-- whole layers; a list of modules is apsearch's set of them
-- (apsearch.schema.graph_scope), moe_preprocess going with moe_router as
-- in every recipe.
local function graph_scope(fields)
  local impl = fields.cuda_graph_impl
  if impl == nil or impl == "none" then return nil end
  if impl == "full_iteration" then return "full_iteration" end
  local sc = type(fields.cuda_graph_scope) == "table" and fields.cuda_graph_scope or {}
  local mods = {}
  for _, v in ipairs(sc) do
    if v ~= "moe_preprocess" then mods[#mods + 1] = v end
  end
  if #mods == 0 then return "layer" end
  return require("apsearch.schema").graph_scope(mods) or die("cuda_graph_scope: " .. table.concat(sc, " "))
end

local function git_show(ref, path)
  local p = assert(io.popen(("git --git-dir=%q show %q 2>/dev/null"):format(GIT_DIR, ref .. ":" .. path)))
  local s = p:read("a")
  p:close()
  return s ~= "" and s or nil
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

--- The body of the top-level Python function `fn` in text (its def line to
-- the next line starting at column 0), or nil.
local function py_body(text, fn)
  local s = text and text:find("\ndef " .. fn .. "%(")
  if not s then return nil end
  local e = text:find("\n[^%s%)]", s + 1)
  return text:sub(s, e or #text)
end

local MIXED_PRECISION = "src/megatron/bridge/training/mixed_precision.py"

--- Megatron's first and last layers in bf16 of a model's rows in
-- precision prec at Megatron-Bridge ref, as its performance script's
-- function mdl.bf16_layers.fn sets them (v0.4.0-v0.4.2: the fields
-- themselves; v0.5.0 on: a mixed-precision recipe of mixed_precision.py it
-- calls); a count the code leaves is MixedPrecisionConfig's default,
-- which update_config_with_precision_overrides copies into the model's
-- TransformerConfig with every other field (0, not Megatron's 1).
-- @return {start, end, note} or nil when the rows do not set it
local function bf16_layers(ref, mdl, prec)
  local b = mdl.bf16_layers
  if not b or b.precision ~= prec then return nil end
  local body = py_body(git_show(ref, b.script), b.fn)
  if not body then return nil end
  local where = ("%s %s"):format(b.script, b.fn)
  local mp = git_show(ref, MIXED_PRECISION)
  local recipe = body:match("(nemotron[%w_]*_mixed)%(%)")
  if recipe then
    body = py_body(mp, recipe) or body
    where = ("%s (%s %s)"):format(where, MIXED_PRECISION, recipe)
  end
  if not body:find("first_last_layers_bf16%s*=%s*True") then return nil end
  local function count(field)
    local v = body:match(field .. "%s*=%s*(%d+)")
    if v then return tonumber(v), "" end
    v = mp and mp:match(field .. ":%s*int%s*=%s*(%d+)")
    return tonumber(v), " (MixedPrecisionConfig's default)"
  end
  local start, s_from = count("num_layers_at_start_in_bf16")
  local last, e_from = count("num_layers_at_end_in_bf16")
  if not (start and last) then die(("%s at %s: first_last_layers_bf16 without readable counts"):format(where, ref)) end
  return { start = start, ["end"] = last, note = ("first_last_layers_bf16 with %d layers at the start%s and %d " ..
    "at the end%s in bf16: %s at %s; the recipe's te_quant.cfg (attention and latent projections in bf16) " ..
    "not modelled"):format(start, s_from, last, e_from, where, ref) }
end

--- "3986 (3546)" -> "3986", "3546"; "64" -> "64", nil.
local function split_alt(cell)
  local a, b = cell:match("^(.-)%s*%((.-)%)%s*$")
  if a then return trim(a), trim(b) end
  return trim(cell), nil
end

--- Table rows of the pre-training sections of one summary page.
local function parse_summary(text, page)
  local rows, release, pretrain, heading, header = {}, nil, false, nil, nil
  for line in text:gmatch("[^\n]*") do
    local rel = line:match("^## (%S+) NeMo Container")
    if rel then release, pretrain, header = rel, false, nil end
    if line:match("^### ") then pretrain = line:match("^### Pre%-Training") ~= nil; header = nil end
    local h = line:match("^#### (.+)$")
    if h then heading, header = trim(h), nil end
    if line:match("^|") and release and pretrain then
      local cells = {}
      for c in line:sub(2):gmatch("([^|]*)|") do cells[#cells + 1] = trim(c) end
      if not header then
        header = cells
      elseif not cells[1]:match("^%-") then
        local r = { release = release, heading = heading, page = page }
        for i, name in ipairs(header) do r[name] = cells[i] end
        rows[#rows + 1] = r
      end
    elseif not line:match("^|") then
      header = nil
    end
  end
  return rows
end

-- ---------------------------------------------------------------- recipes

--- Splits "a, b=(c, d), [e, f]" at its top-level commas.
local function split_args(s)
  local out, depth, cur = {}, 0, {}
  for ch in s:gmatch(".") do
    if ch == "(" or ch == "[" or ch == "{" then depth = depth + 1 end
    if ch == ")" or ch == "]" or ch == "}" then depth = depth - 1 end
    if ch == "," and depth == 0 then
      out[#out + 1] = trim(table.concat(cur)); cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  if trim(table.concat(cur)) ~= "" then out[#out + 1] = trim(table.concat(cur)) end
  return out
end

local function py_value(v)
  if v:match("^%-?%d+$") then return tonumber(v) end
  if v == "True" then return true end
  if v == "False" then return false end
  if v == "None" then return nil end
  local str = v:match('^"(.*)"$') or v:match("^'(.*)'$")
  if str then return str end
  local list = v:match("^%[(.*)%]$")
  if list then
    local t = {}
    for _, e in ipairs(split_args(list)) do t[#t + 1] = py_value(e) end
    return t
  end
  return v -- an expression: kept as text
end

--- The WorkloadBaseConfig defaults (scripts/performance/utils/utils.py).
local BASE_DEFAULTS = { tensor_model_parallel_size = 1, pipeline_model_parallel_size = 1,
  context_parallel_size = 1, expert_model_parallel_size = 1, micro_batch_size = 1, global_batch_size = 1 }

--- Assignments of a workload config file, inheritance resolved: name ->
-- table of fields.
local function parse_configs(text)
  local raw = {}
  -- strip comments
  text = text:gsub("#[^\n]*", "")
  local pos = 1
  while true do
    -- a private name (`_NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100`) is a base too
    local s, e, name = text:find("\n(_?[A-Z][A-Z0-9_]*)%s*=%s*", pos)
    if not s then break end
    local rest = text:sub(e + 1)
    local fn = rest:match("^([%w_]+)%(")
    if fn then
      -- balanced parentheses
      local depth, i = 0, #fn + 1
      repeat
        local ch = rest:sub(i, i)
        if ch == "(" then depth = depth + 1 elseif ch == ")" then depth = depth - 1 end
        i = i + 1
      until depth == 0 or i > #rest
      local args = split_args(rest:sub(#fn + 2, i - 2))
      local entry = { fields = {} }
      for k, a in ipairs(args) do
        local key, val = a:match("^([%w_]+)%s*=%s*(.+)$")
        if key then
          entry.fields[key] = { py_value(val) }
        elseif k == 1 and fn == "replace" then
          entry.base = a
        end
      end
      raw[name] = entry
      pos = e + i
    else
      local other = rest:match("^(_?[A-Z][A-Z0-9_]*)%s*\n")
      if other then raw[name] = { base = other, fields = {} } end
      pos = e + 1
    end
  end
  local resolved = {}
  local function resolve(name, depth)
    if resolved[name] then return resolved[name] end
    local entry = raw[name]
    if not entry or depth > 20 then return nil end
    local t = {}
    if entry.base then
      for k, v in pairs(resolve(entry.base, depth + 1) or BASE_DEFAULTS) do t[k] = v end
    else
      for k, v in pairs(BASE_DEFAULTS) do t[k] = v end
    end
    for k, v in pairs(entry.fields) do t[k] = v[1] end
    resolved[name] = t
    return t
  end
  for name in pairs(raw) do resolve(name, 0) end
  return resolved
end

local recipe_cache = {}
local function recipes(ref, family, layout, file)
  local key = ref .. "/" .. family
  if recipe_cache[key] == nil then
    local path = "scripts/performance/configs/" .. (file or RECIPE_FILES[layout or "default"][family])
    local text = git_show(ref, path)
    recipe_cache[key] = text and { path = path, configs = parse_configs("\n" .. text) } or false
  end
  return recipe_cache[key] or nil
end

--- The performance script's per-GPU function files (the layouts from
-- v0.3.0 on; v0.2's scripts hand the backend to the model recipe).
local SCRIPT_FILES = { qwen3 = "qwen/qwen3_llm_pretrain.py", deepseek = "deepseek/deepseek_llm_pretrain.py" }

--- The token dispatcher the script's function for the model and GPU sets
-- itself (`cfg.model.moe_token_dispatcher_type = "..."`, from v0.3.1 on:
-- "fix: Set flex and alltoall for perf jobs", #2393), or nil when it sets
-- none.  It wins over the workload config's moe_flex_dispatcher_backend:
-- Megatron-LM picks the dispatcher by moe_token_dispatcher_type alone
-- (the backend is read by the flex dispatcher only).
-- @return type, path (the file read)
local function script_dispatcher(ref, family, cfg_name, gpu)
  local file = SCRIPT_FILES[family]
  if not file then return nil end
  local path = "scripts/performance/configs/" .. file
  local text = git_show(ref, path)
  if not text then return nil end
  local fn = ("def %s_pretrain_config_%s("):format(cfg_name:lower(), gpu:lower())
  local s = text:find(fn, 1, true)
  if not s then return nil end
  local e = text:find("\ndef ", s + 1, true) or #text
  local body = text:sub(s, e)
  return body:match('moe_token_dispatcher_type%s*=%s*"(%w+)"'), path
end

-- ------------------------------------------------------------------- rows

local function num(s)
  if s == nil or s == "" or s == "n/a" then return nil end
  return tonumber((s:gsub(",", "")))
end

--- Precision of the table -> (schema precision, recipe token).
local PRECISIONS = {
  BF16 = { "bf16", "BF16" }, FP8 = { "fp8", "FP8_CS" }, ["FP8-CS"] = { "fp8", "FP8_CS" },
  MXFP8 = { "mxfp8", "FP8_MX" }, ["FP8-MX"] = { "mxfp8", "FP8_MX" }, NVFP4 = { "nvfp4", "NVFP4" },
}

--- The recipe entry whose layout equals the row's: name, fields.
local function match_recipe(rel, mdl, sys, prec_tok, row)
  local info = RELEASES[rel]
  local set = recipes(info.ref, mdl.family, info.layout, (mdl.files or {})[info.ref])
  if not set then return nil end
  local names = {}
  if info.layout == "v0.2" then
    names[1] = ("%s_%s_%s_BASE_CONFIG"):format(mdl.cfg, sys.gpu, prec_tok)
  else
    for v = 1, 9 do names[#names + 1] = ("%s_PRETRAIN_CONFIG_%s_%s_V%d"):format(mdl.cfg, sys.gpu, prec_tok, v) end
  end
  local function same(c)
    local vp = c.virtual_pipeline_model_parallel_size
    return c.tensor_model_parallel_size == row.tp and c.pipeline_model_parallel_size == row.pp
      and c.context_parallel_size == row.cp and (type(vp) == "number" and vp or 1) == row.vp
      and c.micro_batch_size == row.mbs and c.expert_model_parallel_size == (row.ep or 1)
      and (c.use_megatron_fsdp == true) == row.fsdp
  end
  for _, n in ipairs(names) do
    local c = set.configs[n]
    if c and same(c) then return n, c, set.path end
  end
  return nil
end

local DENSE_COLS = { "case_id", "source", "reliability", "model", "num_layers", "hidden_size",
  "ffn_hidden_size", "num_attention_heads", "num_query_groups", "vocab_size", "seq_length", "mlp", "norm",
  "position_embedding", "tie_word_embeddings", "flash_attention", "device", "device_memory_gib",
  "num_devices", "devices_per_node", "framework", "precision", "dp_degree", "fsdp_degree", "zero_stage",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "cp_degree", "micro_batch_size",
  "global_batch_size", "layer_recompute", "flops_convention", "measured_tokens_per_s_per_gpu",
  "measured_step_time_s", "measured_tflops_per_gpu", "measured_mfu_pct", "measured_mem_gib",
  "torch_compile", "reshard_after_forward", "nvlink_domain_size", "pipeline_layout", "grad_reduce_in_fp32",
  "fp8_param_gather", "activation_offload_layers", "recompute_num_layers", "recompute_method",
  "recompute_modules", "tp_comm_overlap", "cuda_graphs", "cuda_graph_scope", "software" }
local MOE_COLS = { "num_experts", "experts_per_token", "moe_ffn_hidden_size", "shared_expert_ffn_hidden_size",
  "num_dense_layers", "dense_ffn_hidden_size", "moe_layer_freq", "ep_degree", "etp_degree",
  "moe_token_dispatcher", "moe_capacity_factor", "attention", "q_lora_rank", "kv_lora_rank",
  "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "mtp_layers", "head_dim", "qk_norm",
  "overlap_moe_expert_parallel_comm" }

local function csv_cell(v)
  if v == nil then return "" end
  v = tostring(v)
  if v:find('[,"\n]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

local skipped, dense, moe, hybrid, ids = {}, {}, {}, {}, {}

local function skip(r, why)
  skipped[#skipped + 1] = ("%s %s %s %s: %s"):format(r.release, r.Model or r.heading,
    r.System or r.heading, r.Precision or "", why)
end

--- One case from a table row (and its alternative-precision value).
local function convert(r, alt)
  local model_key = (r.Model or r.heading:match("^Model: (.+)$")):gsub("%s*%(.-%)%s*$", "")
  local model_note = (r.Model or r.heading):match("%((.-)%)") or ""
  local system = r.System or r.heading:match("^System: (.+)$")
  local mdl, sys = MODELS[model_key], SYSTEMS[system]
  if not mdl then return skip(r, "model not loadable (no config apsearch can read)") end
  if not sys then return skip(r, "system has no apsearch preset") end
  if sys.hybrid and not mdl.config then
    return skip(r, "system read for the hybrid set only (the dense and MoE sets predate its preset)")
  end
  local prec_text = r.Precision
  local assumed = {}
  if not prec_text then
    prec_text = "FP8-CS (FP8-MX)"
    assumed[#assumed + 1] = ("precision ASSUMED %s (the 25.09 table has no precision column; 25.11 labels " ..
      "the same rows FP8-CS, parenthesised FP8-MX)"):format(alt and "MXFP8" or "FP8 current scaling")
  end
  local p1, p2 = split_alt(prec_text)
  local ptext = alt and p2 or p1
  if alt and not p2 then
    if sys.gpu == "H100" then return skip(r, "parenthesised value: FP8 blockwise (128x128 weights) on H100, not modelled") end
    ptext = "FP8-MX"
  end
  local prec = PRECISIONS[ptext]
  if not prec then return skip(r, "precision " .. tostring(ptext) .. " not read") end
  -- DeepSeek-V3 trains one MTP module unless the table says "w/o MTP":
  -- the performance scripts build deepseek_v3_pretrain_config() without
  -- an mtp argument (scripts/performance/configs/deepseek/
  -- deepseek_llm_pretrain.py), whose default is mtp_num_layers = 1
  -- (src/megatron/bridge/recipes/deepseek/deepseek_v3.py at r0.1.0:51,
  -- v0.2.0:174, v0.5.0:122)
  local mtp = model_key == "DeepSeekV3" and not model_note:find("w/o MTP")
  local function cell(name)
    local a, b = split_alt(r[name] or "")
    if alt and b then return b end
    return a
  end
  local row = { n = num(cell("#-GPUs")), gbs = num(cell("GBS")), mbs = num(cell("MBS")),
    seq = num(cell("Sequence Length")), tp = num(cell("TP")) or 1, pp = num(cell("PP")) or 1,
    cp = num(cell("CP")) or 1, vp = num(cell("VP")) or 1, ep = num(cell("EP")),
    tok = num(cell("Tokens / sec / GPU")), tflops = num(cell("Model TFLOP / sec / GPU")) }
  row.fsdp = (num(cell("FSDP")) or 0) > 0
  -- the GA column fixes the micro-batch of a parenthesised variant whose
  -- MBS cell has no value of its own (25.09: "MBS 2, GA 1 (16)"); the
  -- primary values keep the MBS column (25.11's Qwen3-235B GB300 row says
  -- MBS 2 with a GA that implies 4: the MBS column is taken)
  local ga = num(cell("GA"))
  if alt and ga and row.n and row.gbs and not (r.MBS or ""):find("%(") then
    local dp = row.n // (row.tp * row.pp * row.cp)
    local mbs = row.gbs // (dp * ga)
    if mbs >= 1 and mbs * dp * ga == row.gbs and mbs ~= row.mbs then
      assumed[#assumed + 1] = ("micro_batch_size %d from GBS / (DP x GA) = %d / (%d x %d); the MBS column says %d")
        :format(mbs, row.gbs, dp, ga, row.mbs)
      row.mbs = mbs
    end
  end
  if not mdl.moe then row.ep = 1 end
  if not row.tok then return skip(r, "no tokens/s") end
  local info = RELEASES[r.release]
  local fields, recipe_note = {}, nil
  if info.yaml then
    fields = ((YAML_2509[model_key] or {})[sys.gpu] or {})[prec[2]]
    if fields then
      recipe_note = ("recipe: scripts/performance/configs/%s perf_matrix %s %s at r0.1.0 (%s)%s"):format(
        mdl.family == "llama31" and "llama31/llama31_405b_llm_pretrain.yaml"
        or mdl.family == "deepseek" and "deepseek/deepseek_v3_llm_pretrain.yaml"
        or mdl.family == "qwen3" and ("qwen3/" .. mdl.cfg:lower() .. "_llm_pretrain.yaml")
        or ("llama3/" .. mdl.cfg:lower() .. "_llm_pretrain.yaml"), sys.gpu:lower(), prec[2]:lower(),
        "684a68616", mdl.family == "deepseek" and " with scripts/performance/run_script.py:55-100" or "")
    else
      fields = {}
      recipe_note = "recipe settings not read (25.09 yaml perf matrix of this model not transcribed)"
    end
  else
    local name, c, path = match_recipe(r.release, mdl, sys, prec[2], row)
    if name then
      fields = c
      recipe_note = ("recipe: %s %s at %s%s"):format(path, name, info.ref,
        info.moved and " (26.08's recipes moved out of scripts/performance/configs; v0.5.1's read)" or "")
    else
      recipe_note = ("no recipe entry of %s at %s has the table's layout: recipe settings not stated"):format(
        mdl.cfg .. "_*_" .. sys.gpu .. "_" .. prec[2], info.ref)
    end
  end
  local model_par = row.tp * row.pp * row.cp
  if row.n % model_par ~= 0 then return skip(r, "GPUs not divisible by TP*PP*CP") end
  -- Megatron folds EP into the TP x CP x DP ranks of a pipeline stage
  -- (parallel_state.py): 25.09's parenthesised DeepSeek-V3 GB200 layout
  -- says PP 8 with EP 64 on 256 GPUs, 32 ranks per stage
  if mdl.moe and row.ep and (row.n // row.pp) % row.ep ~= 0 then
    return skip(r, ("EP %d does not divide the %d ranks of a pipeline stage (the table's values disagree)")
      :format(row.ep, row.n // row.pp))
  end
  local target = mdl.config and hybrid or mdl.moe and moe or dense
  local c = {}
  -- a model added to a set later numbers its own rows (mdl.id_prefix), so
  -- that the set's earlier case ids stay
  local prefix = mdl.id_prefix or mdl.config and "mbh" or mdl.moe and "mbm" or "mbd"
  ids[prefix] = (ids[prefix] or 0) + 1
  c.case_id = ("%s%03d"):format(prefix, ids[prefix])
  c.source = ("NVIDIA-NeMo/Megatron-Bridge %s %s, %s NeMo Container, %s"):format(COMMIT, r.page, r.release,
    r.heading)
  c.reliability = "B"
  local a = mdl.arch
  c.model, c.num_layers, c.hidden_size, c.ffn_hidden_size = mdl.name, a[1], a[2], a[3]
  c.num_attention_heads, c.num_query_groups, c.vocab_size = a[4], a[5], a[6]
  c.seq_length, c.flash_attention = row.seq, "true"
  if mdl.config then
    -- the architecture is the example config's; the columns it checks
    -- are stated, the others left empty (not read)
    c.model_config = mdl.config
  else
    c.mlp, c.norm, c.position_embedding, c.tie_word_embeddings = "swiglu", "rmsnorm", "rope", "false"
    c.model_config = mdl.router_config
  end
  c.device, c.num_devices, c.devices_per_node = sys.device, row.n, sys.per_node
  if sys.rack then c.nvlink_domain_size = math.min(row.n, sys.rack) end
  c.framework, c.precision = "megatron", prec[1]
  if row.fsdp then
    c.dp_degree, c.fsdp_degree, c.zero_stage = 1, row.n // model_par, 3
    c.fsdp_impl = "megatron_fsdp"
    assumed[#assumed + 1] = "Megatron FSDP (table FSDP > 0): optim_grads_params (utils/overrides.py " ..
      "_set_megatron_fsdp_overrides)"
  else
    c.dp_degree, c.fsdp_degree, c.zero_stage = row.n // model_par, 1, 1
  end
  c.tp_degree, c.sequence_parallel = row.tp, row.tp > 1 and "true" or "false"
  c.pp_degree, c.vpp_degree, c.cp_degree = row.pp, row.vp, row.cp
  c.micro_batch_size, c.global_batch_size = row.mbs, row.gbs
  c.flops_convention = "unknown"
  c.measured_tokens_per_s_per_gpu, c.measured_tflops_per_gpu = row.tok, row.tflops
  c.grad_reduce_in_fp32 = "false"
  if mdl.mtp_layers then c.mtp_layers, c.mtp_repeated_layer = mdl.mtp_layers, mdl.mtp_repeated_layer end
  if mtp then
    c.mtp_layers = 1
    assumed[#assumed + 1] = "mtp_layers 1: deepseek_v3_pretrain_config's default (recipes/deepseek/" ..
      "deepseek_v3.py), which the performance scripts keep"
  end
  -- recipe settings
  if fields.recompute_num_layers then
    c.layer_recompute, c.recompute_num_layers, c.recompute_method = "full", fields.recompute_num_layers, "block"
  elseif type(fields.recompute_modules) == "table" and #fields.recompute_modules > 0 then
    c.layer_recompute = "selective"
    c.recompute_modules = table.concat(fields.recompute_modules, "/")
  elseif model_key == "DeepSeekV3" then
    c.layer_recompute = "selective"
  else
    c.layer_recompute = "none"
  end
  if fields.cpu_offloading_num_layers then c.activation_offload_layers = fields.cpu_offloading_num_layers end
  local cg = fields.cuda_graph_impl
  if cg ~= nil then c.cuda_graphs = (cg ~= "none") and "true" or "false"
  elseif recipe_note:find("^recipe") then c.cuda_graphs = "false" end
  c.cuda_graph_scope = graph_scope(fields)
  if c.cuda_graph_scope == "none" then c.cuda_graphs, c.cuda_graph_scope = "false", nil end
  if row.tp > 1 then
    c.tp_comm_overlap = prec[1] == "nvfp4" and "false" or "true"
  end
  if prec[1] == "nvfp4" then
    c.fp8_param_gather = "false"
    assumed[#assumed + 1] = "fp8_param_gather false: no NVFP4 parameter gather in these releases (26.04.01 " ..
      "table footnote: 'when NVFP4 param gather is supported')"
  end
  c.software = ("Megatron-Bridge %s (NeMo container)"):format(r.release)
  if mdl.moe then
    for k, v in pairs(mdl.moe) do c[k] = v end
    c.ep_degree = row.ep or 1
    c.etp_degree = 1
    local backend = fields.moe_flex_dispatcher_backend
    c.moe_token_dispatcher = (type(backend) == "string") and "flex" or "alltoall"
    local set, spath = nil, nil
    if recipe_note:find("^recipe:") and info.layout ~= "v0.2" then
      set, spath = script_dispatcher(info.ref, mdl.family, mdl.cfg, sys.gpu)
    end
    if set == "flex" or set == "alltoall" then
      if set ~= c.moe_token_dispatcher then
        assumed[#assumed + 1] = ("moe_token_dispatcher_type = %s set by %s %s_pretrain_config_%s (over the " ..
          "workload config's moe_flex_dispatcher_backend = %s)"):format(set, spath, mdl.cfg:lower(),
          sys.gpu:lower(), tostring(backend))
      end
      c.moe_token_dispatcher = set
    end
    if model_note:find("tokendrop") then c.moe_capacity_factor = 1.0 end
    -- utils/overrides.py (v0.3.0 on; helpers.py at v0.2.0)
    -- _set_moe_a2a_overlap_overrides: comm_overlap.overlap_moe_expert_
    -- parallel_comm and delay_wgrad_compute on, the shared-expert overlap off
    if fields.moe_a2a_overlap == true then c.overlap_moe_expert_parallel_comm = "true" end
    if mdl.recipe then
      c.moe_router_fusion = mdl.recipe.moe_router_fusion
      c.moe_router_force_load_balancing = mdl.recipe.moe_router_force_load_balancing
      if c.moe_token_dispatcher == "flex" then c.moe_flex_dispatcher_backend = backend end
      assumed[#assumed + 1] = mdl.recipe.note
    end
  end
  local bl = not info.yaml and bf16_layers(info.ref, mdl, prec[1])
  if bl then
    c.first_last_layers_bf16 = "true"
    c.num_layers_at_start_in_bf16, c.num_layers_at_end_in_bf16 = bl.start, bl["end"]
    assumed[#assumed + 1] = bl.note
  end
  if fields.fp8_dot_product_attention == true then
    assumed[#assumed + 1] = "fp8_dot_product_attention (attention in fp8): not modelled, attention priced in bf16"
  end
  -- utils/overrides.py: use_transformer_engine_op_fuser (and the
  -- NVTE_CUTEDSL_FUSED_GROUPED_MLP the recipes export): TE's fused grouped
  -- MLP, priced for the SwiGLU experts of the MoE set
  if fields.cutedsl_fused_grouped_mlp == true then
    if target == moe then
      c.cutedsl_fused_grouped_mlp = "true"
    else
      assumed[#assumed + 1] = "cutedsl_fused_grouped_mlp (fused grouped expert MLP kernel): not modelled"
    end
  end
  if alt then assumed[#assumed + 1] = "the table's parenthesised values (FP8-MX)" end
  c.notes = recipe_note .. "; " .. table.concat(assumed, "; ")
  if info.yaml or not recipe_note:find("^recipe:") then c.reliability = "C" end
  target[#target + 1] = c
end

local pages = {
  { path = "docs/performance-summary-archive.md" },
  { path = "docs/performance-summary.md" },
}
local all = {}
for _, pg in ipairs(pages) do
  local text = git_show(COMMIT, pg.path) or die(("%s: cannot read %s at %s"):format(GIT_DIR, pg.path, COMMIT))
  for _, r in ipairs(parse_summary(text, pg.path)) do all[#all + 1] = r end
end
-- oldest release first
local order = { "25.09", "25.11", "26.02", "26.02.01", "26.04", "26.04.01", "26.06", "26.06.01", "26.08" }
for _, rel in ipairs(order) do
  for _, r in ipairs(all) do
    if r.release == rel then
      convert(r, false)
      local tok = r["Tokens / sec / GPU"] or ""
      if tok:find("%(") then convert(r, true) end
    end
  end
end

local function write(path, rows, cols)
  local f, err = io.open(path, "w")
  if not f then die(err) end
  local header = {}
  for _, k in ipairs(cols) do header[#header + 1] = k end
  header[#header + 1] = "notes"
  f:write(table.concat(header, ","), "\n")
  for _, c in ipairs(rows) do
    local cells = {}
    for _, k in ipairs(header) do cells[#cells + 1] = csv_cell(c[k]) end
    f:write(table.concat(cells, ","), "\n")
  end
  f:close()
end
local moe_cols = {}
for _, k in ipairs(DENSE_COLS) do moe_cols[#moe_cols + 1] = k end
for _, k in ipairs(MOE_COLS) do moe_cols[#moe_cols + 1] = k end
local hybrid_base = #moe_cols
moe_cols[#moe_cols + 1] = "cutedsl_fused_grouped_mlp"
moe_cols[#moe_cols + 1] = "model_config"
-- the hybrid set: the MoE layout, the recipe columns its rows state (the
-- flex backend and forced balance as tests/fixtures/heldout/megatron_lm_
-- moe_recipes.csv has them, the router fusion) and the example config
local hybrid_cols = {}
for i = 1, hybrid_base do hybrid_cols[#hybrid_cols + 1] = moe_cols[i] end
for _, k in ipairs({ "moe_flex_dispatcher_backend", "moe_router_force_load_balancing", "moe_router_fusion",
    "model_config", "mtp_repeated_layer", "first_last_layers_bf16", "num_layers_at_start_in_bf16",
    "num_layers_at_end_in_bf16" }) do
  hybrid_cols[#hybrid_cols + 1] = k
end
-- the dense set: which FSDP runs (fsdp_impl: the tables' FSDP column is
-- Megatron-FSDP, utils/overrides.py _set_megatron_fsdp_overrides)
local dense_cols = {}
for _, k in ipairs(DENSE_COLS) do dense_cols[#dense_cols + 1] = k end
dense_cols[#dense_cols + 1] = "fsdp_impl"
write(OUT_DENSE, dense, dense_cols)
write(OUT_MOE, moe, moe_cols)
write(OUT_HYBRID, hybrid, hybrid_cols)
io.stderr:write(("%d dense, %d MoE, %d hybrid rows; left out %d table rows:\n"):format(#dense, #moe, #hybrid,
  #skipped))
for _, s in ipairs(skipped) do io.stderr:write("  ", s, "\n") end
