--- Estimates against measured training runs (`apsearch validate`).
--
-- Reads a CSV in the schema of the validation README (columns by name),
-- estimates each row's strategy with the C core, and compares every
-- measured column present: tokens/s per GPU, step time, TFLOP/s per GPU and
-- MFU under the row's `flops_convention`, and peak memory. A row that cannot
-- be estimated (unknown device, unsupported precision, impossible strategy)
-- is reported with its reason; the other rows still run.
local core = require "apsearch.core"
local util = require "apsearch.util"
local calibration = require "apsearch.calibration"
local stacks = require "apsearch.stacks"
local te_attention = require "apsearch.te_attention"

local M = {}

local GIB = 2 ^ 30

--- Columns every file must have.
M.REQUIRED = {
  "case_id", "model", "num_layers", "hidden_size", "ffn_hidden_size",
  "num_attention_heads", "num_query_groups", "vocab_size", "seq_length",
  "mlp", "norm", "position_embedding", "tie_word_embeddings",
  "flash_attention", "device", "num_devices", "devices_per_node",
  "framework", "precision", "dp_degree", "fsdp_degree", "zero_stage",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "cp_degree",
  "micro_batch_size", "global_batch_size", "layer_recompute",
  "flops_convention",
}

--- Measured columns (each optional per row) and the prediction each is
-- compared with.
M.MEASURES = {
  { column = "measured_tokens_per_s_per_gpu", key = "tokens_per_s_per_gpu" },
  { column = "measured_step_time_s", key = "step_time_s" },
  { column = "measured_tflops_per_gpu", key = "tflops_per_gpu" },
  { column = "measured_mfu_pct", key = "mfu_pct" },
  { column = "measured_mem_gib", key = "mem_gib" },
}

--- Values of the optional `measured_mem_kind` column: which peak
-- `measured_mem_gib` is, compared with the estimate's figure of the same
-- kind.  `allocated`: PyTorch's max allocated (torch.cuda.max_memory_
-- allocated; Megatron's `max allocated` memory report), the estimate's
-- `mem_allocated`; `reserved`: the caching allocator's max reserved
-- (torch.cuda.max_memory_reserved; TorchTitan's `memory:` log line), the
-- estimate's `mem_reserved`; `device`: device memory in use as nvidia-smi
-- shows it (reserved + CUDA context + NCCL buffers), the estimate's
-- `mem_peak`.  Empty: `device`, the figure every row was compared with
-- before the column existed.
M.MEM_KINDS = { "allocated", "reserved", "device" }
M.DEFAULT_MEM_KIND = "device"

--- Values of the optional `outcome` column: `ran` (the run trained;
-- empty means the same) or `oom` (the run stopped with an out-of-memory
-- error: a fit/no-fit case, with no measured peak).
M.OUTCOMES = { "ran", "oom" }

--- Learned positions of the GPT rows (the README: "GPT: max 2048 positions").
local GPT_POSITIONS = 2048

-- string.format, with every %q argument written as util.describe writes
-- it: quoted and cut to 60 characters, so a cell of megabytes (a number
-- with two million zeros) stays a short one-line error.
local function fmtq(fmt, ...)
  local args, i = table.pack(...), 0
  local f = fmt:gsub("%%[-+ #0]*%d*%.?%d*([%a%%])", function(conv)
    if conv == "%" then return nil end
    i = i + 1
    if conv == "q" then
      args[i] = util.describe(args[i] == nil and "" or args[i])
      return "%s"
    end
    return nil
  end)
  return f:format(table.unpack(args, 1, args.n))
end

-- decimal numbers only (Lua's tonumber also reads 0x10 and " 1e3 ")
local decimal = util.decimal

local function need_int(row, col)
  local v = math.tointeger(decimal(row[col]))
  if not v then error(fmtq("%s = %q is not an integer", col, row[col] or ""), 0) end
  return v
end

--- How spreadsheets and data-frame libraries write a boolean: Excel and
-- LibreOffice TRUE / FALSE, pandas True / False, numeric exports 1 / 0.
local BOOLS = { ["true"] = true, ["false"] = false, ["1"] = true, ["0"] = false }

local function need_bool(row, col)
  local v = row[col]
  local b = type(v) == "string" and BOOLS[v:lower()]
  if b ~= nil then return b end
  error(fmtq("%s = %q is not true/false (TRUE/FALSE, True/False and 1/0 are read too)", col, v or ""), 0)
end

local function need_enum(row, col, allowed)
  local v = row[col]
  for _, a in ipairs(allowed) do if v == a then return v end end
  -- a close name (or the same one in other case: SwiGLU) is suggested
  local dym
  for _, a in ipairs(allowed) do
    if type(v) == "string" and v:lower() == a:lower() then dym = ("did you mean %q?"):format(a) end
  end
  dym = dym or (type(v) == "string" and v ~= "" and require("apsearch.suggest").did_you_mean(v, allowed))
  error(fmtq("%s = %q is not one of %s%s", col, v or "", table.concat(allowed, ", "), dym and ("; " .. dym) or ""), 0)
end

--- Optional boolean recipe columns, each the training field of the same
-- name (docs/modeling.md "Recipe settings").
M.RECIPE_BOOLS = { "torch_compile", "compile_loss", "sac_save_alltoall", "fuse_qkv", "grad_reduce_in_fp32",
  "fp8_param_gather",
  "tp_comm_overlap", "cuda_graphs", "overlap_moe_expert_parallel_comm", "moe_router_fusion",
  "defer_fsdp_grad_sync", "bf16_weights", "loss_fp32_upcast", "mtp_repeated_layer", "cutedsl_fused_grouped_mlp",
  "exp_avg_bf16", "fsdp_double_buffer" }

--- Longest model name the core takes (bytes, src/lua/lconvert.c); a row's
-- longer `model` is cut there, with "...", as a label.
M.MAX_MODEL_NAME = 63

--- A row's `model` column as the estimate's model name: its label, cut to
-- M.MAX_MODEL_NAME bytes at a UTF-8 character boundary ("..." at the end).
-- @tparam string text the column
-- @treturn string
function M.model_name(text)
  if #text <= M.MAX_MODEL_NAME then return text end
  local cut = M.MAX_MODEL_NAME - 3
  while cut > 0 and (text:byte(cut + 1) or 0) & 0xC0 == 0x80 do cut = cut - 1 end
  return text:sub(1, cut) .. "..."
end

--- Values of the optional `cp_comm_type` column: the context-parallel
-- exchange the run used (training strategies' cp_comm_type, docs/policy.md).
M.CP_COMM_TYPES = require("apsearch.schema").strategy.cp_comm_type.enum


local function given(row, col) return row[col] ~= nil and row[col] ~= "" end

local function need_posint(row, col)
  local v = need_int(row, col)
  if v < 1 then error(fmtq("%s = %q is not a positive integer", col, row[col]), 0) end
  return v
end

local function need_nonneg_int(row, col)
  local v = need_int(row, col)
  if v < 0 then error(fmtq("%s = %q is not a non-negative integer", col, row[col]), 0) end
  return v
end

--- recompute_num_layers and recompute_method (Megatron --recompute-num-layers,
-- --recompute-method) for full recompute. Megatron counts per model chunk:
-- block recomputes the first N layers of each chunk (per rank N x vpp;
-- the core caps it at the rank's layers), uniform recomputes every layer
-- in groups of N.
local function recompute_columns(row, strategy, assumed)
  local method = given(row, "recompute_method")
    and need_enum(row, "recompute_method", { "uniform", "block" }) or nil
  local n = given(row, "recompute_num_layers") and need_nonneg_int(row, "recompute_num_layers") or nil
  if (method or n) and strategy.layer_recompute ~= "full" then
    -- Megatron reads them only with --recompute-granularity full
    assumed[#assumed + 1] = ("recompute_method / recompute_num_layers (%s / %s) ignored: layer_recompute = %s"):format(
      row.recompute_method or "", row.recompute_num_layers or "", strategy.layer_recompute)
    return
  end
  if method == "uniform" then
    strategy.recompute_method = "uniform"
    -- 0 reaches the core, which refuses it (groups of 0 layers)
    if n then strategy.recompute_num_layers = n end
  elseif n then
    strategy.recompute_num_layers = n * strategy.vpp_degree
  end
end

--- The layers per pipeline stage: the `pipeline_layout` column (a split
-- rule, or layers per stage as a comma-separated list: pp_degree entries,
-- or pp_degree x vpp_degree in schedule order), else the framework's
-- default split: TorchTitan counts the embedding and the loss as a layer
-- each (pipeline_parallel.py first/last_stage_less_layers = 1); for
-- Megatron-LM, whose layers must then divide evenly, a count that does
-- not is split the way its flags can: counting the embedding and the loss
-- where (L + 2) divides, else time-balanced, else per model chunk as
-- TorchTitan would (recorded in `assumed`).
local function pipeline_layout(row, strategy, framework, L, assumed)
  local p, v = strategy.pp_degree, strategy.vpp_degree
  local text = row.pipeline_layout
  if given(row, "pipeline_layout") then
    if text == "account-embedding-loss" then
      strategy.pipeline_split = "embedding_loss"
    elseif text == "deepspeed-type-transformer" then
      strategy.pipeline_split = "deepspeed_type"
    elseif text:match("^[%d%s,;:]+$") then
      local list = {}
      for n in text:gmatch("%d+") do
        local k = math.tointeger(tonumber(n))
        if not k then
          error(fmtq("pipeline_layout = %q: entry %s is out of range", text, n), 0)
        end
        list[#list + 1] = k
      end
      if #list ~= p and #list ~= p * v then
        error(fmtq("pipeline_layout = %q has %d entries, expected pp_degree = %d or pp_degree x vpp_degree = %d", 
          text, #list, p, p * v), 0)
      end
      local unequal = false
      for _, n in ipairs(list) do unequal = unequal or (v > 1 and #list == p and n % v ~= 0) end
      if unequal then
        -- a rank's layers that do not split into v equal chunks: spread
        -- over its chunks as evenly as they go (a layout, per model chunk)
        local chunks = {}
        for i, n in ipairs(list) do
          for k = 0, v - 1 do chunks[k * p + i] = n // v + (k < n % v and 1 or 0) end
        end
        list = chunks
        assumed[#assumed + 1] = ("pipeline_layout per rank %s spread over %d model chunks each: %s"):format(
          text, v, table.concat(list, ","))
      end
      strategy.stage_partition = list
    else
      error(fmtq("pipeline_layout = %q is not account-embedding-loss, deepspeed-type-transformer or a list of layers per stage", text), 0)
    end
    return
  end
  if p < 2 or strategy.stage_partition then return end -- a recipe's layout
  if framework == "fsdp2" then
    strategy.pipeline_split = "embedding_loss"
    return
  end
  if L % (p * v) == 0 then return end
  local how
  if framework == "megatron" and (L + 2) % (p * v) == 0 then
    strategy.pipeline_split, how = "embedding_loss", "embedding_loss"
  elseif L % v == 0 and L >= p * v then
    strategy.balance_stages, how = true, "balanced stages"
  else
    -- TorchTitan's rule, which spreads the remainder (src/core/pipeline.c)
    local list, code, msg = core.chunk_layers(L,
      { pp_degree = p, vpp_degree = v, pipeline_split = "embedding_loss" })
    if not list then error(("pipeline_layout not stated and %s: %s"):format(code, msg), 0) end
    strategy.stage_partition, how = list, "per model chunk " .. table.concat(list, ",")
  end
  assumed[#assumed + 1] = ("pipeline_layout = %s (num_layers %d over %d x %d stages, not stated)"):format(
    how, L, p, v)
end

--- Largest `device_memory_gib` a row may state: 1 TiB.  The largest
-- device of any preset holds 288 GB (B300, MI355X class); a value beyond
-- this is a unit mistake (MiB or bytes written as GiB), and 1e308 GiB would
-- reach the core as an infinite capacity.
M.MAX_DEVICE_MEMORY_GIB = 1024

--- Relative tolerance within which a row's `device_memory_gib` names a
-- preset's capacity (the presets give capacities to 0.5 %: nvidia-smi's
-- MiB or the datasheet's GB).
M.VARIANT_TOLERANCE = 0.02

--- The preset a row means when its capacity override contradicts its
-- device: a preset of the same efficiency family (calibration.family),
-- other than `name`, whose capacity is within VARIANT_TOLERANCE of
-- `bytes` while `name`'s is not.  E.g. `h100-sxm-80gb` with
-- `device_memory_gib` 96 is the `h100-96gb-500w` part (TorchTitan's
-- benchmark H100s: 96 GB HBM2e at 500 W), whose peaks are lower; a
-- capacity that matches no other preset stays an override of `name`.
-- @tparam string name the row's device preset
-- @tparam number bytes the row's device capacity, bytes
-- @treturn string|nil the variant's preset name
function M.variant_of(name, bytes)
  local calibration = require "apsearch.calibration"
  local function near(cap) return math.abs(cap - bytes) <= M.VARIANT_TOLERANCE * bytes end
  local ok, own = pcall(core.device_preset, name)
  if not ok or near(own.memory_bytes) then return nil end
  local fam = calibration.family(name)
  for _, d in ipairs(core.device_presets()) do
    local other = (d.name or d):lower()
    if other ~= name:lower() and calibration.family(other) == fam and near(core.device_preset(other).memory_bytes) then
      return other
    end
  end
  return nil
end

--- The model of a row from its architecture columns, and whether it is a
-- GPT-family row (LayerNorm and learned positions: biases and dropout on).
-- @treturn table model
-- @treturn boolean gpt
function M.columns_model(row)
  local norm = need_enum(row, "norm", { "layernorm", "rmsnorm" })
  local pos = need_enum(row, "position_embedding", { "learned", "rope", "alibi" })
  local gpt = norm == "layernorm" and pos == "learned"
  local mpt = norm == "layernorm" and pos == "alibi"
  local model = {
    name = M.model_name(row.model),
    num_layers = need_int(row, "num_layers"),
    hidden_size = need_int(row, "hidden_size"),
    ffn_hidden_size = need_int(row, "ffn_hidden_size"),
    num_attention_heads = need_int(row, "num_attention_heads"),
    num_query_groups = need_int(row, "num_query_groups"),
    vocab_size = need_int(row, "vocab_size"),
    mlp = need_enum(row, "mlp", { "gelu", "swiglu" }),
    norm = norm,
    position_embedding = pos,
    tie_word_embeddings = need_bool(row, "tie_word_embeddings"),
    qkv_bias = gpt, attn_out_bias = gpt, mlp_bias = gpt,
    norm_bias = norm == "layernorm" and not mpt, -- (RMSNorm has no bias)
    max_position_embeddings = gpt and GPT_POSITIONS or 0,
  }
  -- optional `head_dim`: the attention head width where it is not
  -- hidden_size / num_attention_heads (HF config `head_dim`, Megatron
  -- --kv-channels; Qwen3: 128 at hidden 2048 and 32 heads); empty: that
  -- quotient.  0 is refused, not read as empty (the core takes 0 for
  -- "derive", the policy schema refuses it).
  if given(row, "head_dim") then model.head_dim = need_posint(row, "head_dim") end
  -- optional `qk_norm`: per-head norms on Q and K after the projection
  -- (Megatron --qk-layernorm; Qwen3: Megatron-Bridge qwen_provider.py
  -- qk_layernorm = True); empty: none
  if given(row, "qk_norm") then model.qk_norm = need_bool(row, "qk_norm") end
  -- optional `linear_bias`: biases on every linear layer (Megatron's
  -- default, off with --disable-bias-linear); `qkv_bias`: on the QKV
  -- projection only (Megatron --add-qkv-bias, Qwen); empty: the family's
  -- convention above
  if given(row, "linear_bias") then
    local b = need_bool(row, "linear_bias")
    model.qkv_bias, model.attn_out_bias, model.mlp_bias = b, b, b
  end
  if given(row, "qkv_bias") then model.qkv_bias = need_bool(row, "qkv_bias") end
  -- optional `max_position_embeddings`: rows of the learned positions'
  -- table (Megatron --max-position-embeddings with its default
  -- --position-embedding-type learned_absolute); empty: GPT's 2048, and a
  -- learned-position row of another family must state it
  if given(row, "max_position_embeddings") then
    if pos ~= "learned" then
      error(fmtq("max_position_embeddings = %q needs position_embedding = learned (got %s)", 
        row.max_position_embeddings, pos), 0)
    end
    model.max_position_embeddings = need_posint(row, "max_position_embeddings")
  elseif pos == "learned" and not gpt then
    error("position_embedding = learned with norm = rmsnorm needs max_position_embeddings (the table's rows)", 0)
  end
  return model, gpt
end

--- The architecture columns a `model_config` row may also state, each
-- checked against the config (a row that names one model and describes
-- another is refused).
M.CONFIG_CHECKED = { "num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "vocab_size",
  "num_experts", "experts_per_token", "moe_ffn_hidden_size" }

--- The model of a row that names it by `model_config`: an example config
-- of `apsearch presets` (examples/models/<name>.json), or a config.json
-- named by its path under the apsearch root (a name ending in `.json`:
-- the held-out configs of tests/fixtures/heldout_configs), read as its
-- config.json import reads it, for architectures the columns cannot
-- describe (hybrid Mamba-2 and Gated DeltaNet layer patterns, DeepSeek
-- Sparse Attention, latent MoE).  The row's own architecture columns,
-- where given, must agree with it (M.CONFIG_CHECKED); the others are not
-- read.
-- @tparam table row CSV row
-- @treturn table model (named after the row's `model`)
-- @raise `model_config = "x": unknown model preset ...`, or
--   `num_layers = "40" but model_config = "x" has 52`
function M.config_model(row)
  local presets = require "apsearch.presets"
  local name = row.model_config
  local model
  if name:find("%.json$") then
    local path = util.join_path(util.root(), name)
    if not util.file_exists(path) then
      error(fmtq("model_config = %q: no such config under the apsearch root", name), 0)
    end
    model = require("apsearch.hf").load(path)
  elseif not presets.is_model(name) then
    error(fmtq("model_config = %q: %s", name, require("apsearch.suggest").problem("unknown model preset",
      name, presets.all_model_names())), 0)
  else
    model = presets.model(name)
  end
  for _, col in ipairs(M.CONFIG_CHECKED) do
    if given(row, col) then
      local v, want = need_nonneg_int(row, col), model[col] or 0
      if v ~= want then
        error(fmtq("%s = %q but model_config = %q has %d", col, row[col], name, want), 0)
      end
    end
  end
  model.name = M.model_name(row.model)
  return model
end

--- The row M.moe_columns reads for a `model_config` row: the row, with
-- the config's expert count, top-k and width where the row leaves them
-- empty, so that the expert-parallel columns are read for an MoE config.
-- @tparam table row CSV row
-- @tparam table model the config's model
-- @treturn table a view of the row
function M.config_moe_row(row, model)
  local fill = {}
  if (model.num_experts or 0) > 0 then
    for _, col in ipairs({ "num_experts", "experts_per_token", "moe_ffn_hidden_size" }) do
      if not given(row, col) then fill[col] = tostring(model[col]) end
    end
  end
  return setmetatable(fill, { __index = row })
end

--- Builds the core inputs of one row.
-- Architecture conventions the schema leaves implicit, by family:
-- GPT (layernorm + learned positions): biases everywhere, dropout 0.1 as
-- Megatron's GPT-3 runs; MPT (layernorm + ALiBi): no biases at all
-- (`no_bias`), LayerNorm without bias, no dropout; Llama family (rmsnorm):
-- no biases, no dropout.
-- @param row table of column name -> string
-- @return model, cluster, training, strategy tables; raises a message
function M.case_inputs(row)
  local config = given(row, "model_config")
  local model, gpt
  if config then
    model = M.config_model(row)
    gpt = false
  else
    model, gpt = M.columns_model(row)
  end
  local framework = need_enum(row, "framework", { "megatron", "fsdp", "fsdp2", "deepspeed", "automodel" })
  local device = { base = row.device }
  local ok, preset = pcall(core.device_preset, row.device)
  if not ok then
    local known = {}
    for _, d in ipairs(core.device_presets()) do known[#known + 1] = d.name or d end
    error(fmtq("device = %q: %s", row.device or "",
      require("apsearch.suggest").unknown("unknown device preset", row.device or "", known)), 0)
  end
  local assumed = {}
  if row.device_memory_gib and row.device_memory_gib ~= "" then
    local gib = decimal(row.device_memory_gib)
    if not gib or gib <= 0 then
      error(fmtq("device_memory_gib = %q is not a positive number", row.device_memory_gib), 0)
    end
    if gib > M.MAX_DEVICE_MEMORY_GIB then
      error(fmtq("device_memory_gib = %q is above %d GiB, more than any device holds (validate.MAX_DEVICE_MEMORY_GIB)",
        row.device_memory_gib, M.MAX_DEVICE_MEMORY_GIB), 0)
    end
    device.memory_bytes = gib * GIB
    local variant = M.variant_of(row.device, gib * GIB)
    if variant then
      assumed[#assumed + 1] = ("device = %s (device_memory_gib = %s is its capacity, not %s's %.1f GiB)"):format(
        variant, row.device_memory_gib, row.device, preset.memory_bytes / GIB)
      device.base, preset = variant, core.device_preset(variant)
    end
  end
  local cluster = {
    device = device,
    num_devices = need_int(row, "num_devices"),
    devices_per_node = need_int(row, "devices_per_node"),
  }
  -- optional column (not in the shared schema): GPUs of the run in one
  -- NVLink domain (GB200 NVL72: 4 per host, up to 72 per rack); empty or
  -- absent = not stated, one host
  if row.nvlink_domain_size and row.nvlink_domain_size ~= "" then
    cluster.nvlink_domain_size = need_int(row, "nvlink_domain_size")
  end
  local training = {
    global_batch_size = need_int(row, "global_batch_size"),
    seq_length = need_int(row, "seq_length"),
    -- `fp4` is the schema's older spelling of nvfp4
    precision = row.precision == "fp4" and "nvfp4"
      or need_enum(row, "precision", { "bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp4" }),
    framework = framework,
    flash_attention = need_bool(row, "flash_attention"),
    -- optional `dropout`: hidden and attention dropout on (Megatron's
    -- default 0.1) or off; empty: the family's convention (GPT rows on)
    dropout = given(row, "dropout") and need_bool(row, "dropout") or (not given(row, "dropout") and gpt),
  }
  -- recipe columns (validation README, optional): empty = not stated, the
  -- release's recipe default (apsearch.stacks) or the framework's
  for _, col in ipairs(M.RECIPE_BOOLS) do
    if given(row, col) then training[col] = need_bool(row, col) end
  end
  -- Megatron's --moe-router-force-load-balancing (router.py: every expert
  -- gets its balanced share): true is a load imbalance of 1, false the
  -- core's default (0 here: APS_MOE_LOAD_IMBALANCE), which a release
  -- recipe of apsearch.stacks then does not replace
  if given(row, "moe_router_force_load_balancing") then
    training.moe_load_imbalance = need_bool(row, "moe_router_force_load_balancing") and 1.0 or 0
  end
  -- a run of Megatron-LM cannot have compiled its model: arguments.py
  -- (d98e8a64) has no torch.compile option, so the row contradicts itself
  if training.torch_compile and framework == "megatron" then
    error(fmtq("torch_compile = %q contradicts framework = megatron (Megatron-LM has no option " ..
      "that compiles the model)", row.torch_compile), 0)
  end
  if given(row, "activation_offload_layers") then
    training.activation_offload_layers = need_nonneg_int(row, "activation_offload_layers")
  end
  -- Megatron-Core's fine-grained activation offloading (--offload-modules,
  -- '/' between modules; --activation-offload-fraction)
  if given(row, "offload_modules") then
    local schema = require("apsearch.schema")
    local mods, unmodelled = schema.offload_modules(row.offload_modules)
    if not mods then
      error(fmtq("offload_modules = %q: %s", row.offload_modules, unmodelled
        and ("Megatron's offload module " .. unmodelled .. " is not modelled")
        or ("expected module names joined by / (each once): " .. table.concat(schema.OFFLOAD_MODULES, ", "))), 0)
    end
    training.offload_modules = mods
  end
  if given(row, "activation_offload_fraction") then
    local v = tonumber(row.activation_offload_fraction)
    if not (v and v >= 0 and v <= 1) then
      error(fmtq("activation_offload_fraction = %q: expected a number in [0, 1]", row.activation_offload_fraction), 0)
    end
    training.activation_offload_fraction = v
  end
  if given(row, "cuda_graph_scope") then
    -- what the run's CUDA graphs capture (training.cuda_graph_scope,
    -- docs/policy.md): a standalone scope or modules joined by "+"
    local scope = require("apsearch.schema").graph_scope(row.cuda_graph_scope)
    if not scope then
      error(fmtq("cuda_graph_scope = %q is not a scope (layer, full_iteration, none, or modules joined by +: "
        .. "attn, mlp, mamba, moe_router)", row.cuda_graph_scope), 0)
    end
    training.cuda_graph_scope = scope
  end
  -- TorchTitan's ChunkedLossWrapper num_chunks (training.loss_chunks)
  if given(row, "loss_chunks") then
    training.loss_chunks = need_posint(row, "loss_chunks")
  end
  -- TorchTitan's / AutoModel's local batch: a pipeline pass's sequences
  -- per data-parallel rank (training.local_batch_size)
  if given(row, "local_batch_size") then
    training.local_batch_size = need_nonneg_int(row, "local_batch_size")
  end
  -- the flex dispatcher's library (Megatron --moe-flex-dispatcher-backend);
  -- empty: Megatron's default, deepep
  -- NeMo AutoModel's BackendConfig.rms_norm (an automodel row; the core
  -- refuses it on another framework, naming the field)
  if given(row, "rms_norm_backend") then
    training.rms_norm_backend = need_enum(row, "rms_norm_backend", { "torch_fp32", "te" })
  end
  -- NeMo AutoModel's model.backend.attn (its rate: apsearch.stacks
  -- attention_backend); refused on another framework as a policy's is
  if given(row, "attn_backend") then
    training.attn_backend = need_enum(row, "attn_backend", require("apsearch.schema").training.attn_backend.enum)
    local problem = require("apsearch.stacks").check(training)
    if problem then error(fmtq("attn_backend = %q: %s", row.attn_backend, problem), 0) end
  end
  if given(row, "moe_flex_dispatcher_backend") then
    training.moe_flex_dispatcher_backend = need_enum(row, "moe_flex_dispatcher_backend", { "deepep", "hybridep" })
  end
  -- Megatron-Core's sync-free experts (--moe-expert-rank-capacity-factor,
  -- --moe-paged-stash, --moe-paged-stash-buffer-size-factor-cuda; the
  -- core refuses what Megatron refuses): empty = unset, Megatron's default
  M.sync_free_columns(row, training)
  M.bf16_layers_columns(row, training)
  -- optional `fsdp_impl`: Megatron-LM's FSDP implementation
  -- (--use-torch-fsdp2 | --use-megatron-fsdp); empty: torch_fsdp2
  if given(row, "fsdp_impl") then
    training.fsdp_impl = need_enum(row, "fsdp_impl", { "torch_fsdp2", "megatron_fsdp" })
    if framework ~= "megatron" then
      error(fmtq("fsdp_impl = %q needs framework = megatron (Megatron-LM's FSDP implementations; got %s)", 
        row.fsdp_impl, framework), 0)
    end
  end
  -- optional `overlap_grad_reduce`: Megatron-LM's --overlap-grad-reduce
  -- (default off: arguments.py l.3121 store_true, DistributedDataParallel
  -- Config.overlap_grad_reduce = False @ d98e8a64).  Off, the gradients
  -- are reduced after the last backward (data_parallel_base.py
  -- finish_grad_sync: synchronous calls), and --overlap-param-gather,
  -- which needs it (arguments.py l.1028), is off too: the parameter
  -- all-gather waits as well -- nothing of the data-parallel sync hides
  -- behind compute (training.dp_overlap = 0).  True is the core's default.
  if given(row, "overlap_grad_reduce") then
    if framework ~= "megatron" then
      error(("overlap_grad_reduce = %s needs framework = megatron (Megatron-LM's --overlap-grad-reduce; got %s)")
        :format(row.overlap_grad_reduce, framework), 0)
    end
    if not need_bool(row, "overlap_grad_reduce") then training.dp_overlap = 0 end
  end
  -- degrees and the micro-batch are at least 1 (a 0 would divide by zero
  -- in the layout rules below before the core refuses it)
  local strategy = {
    dp_degree = need_posint(row, "dp_degree"),
    fsdp_degree = need_posint(row, "fsdp_degree"),
    zero_stage = need_nonneg_int(row, "zero_stage"),
    tp_degree = need_posint(row, "tp_degree"),
    sequence_parallel = need_bool(row, "sequence_parallel"),
    pp_degree = need_posint(row, "pp_degree"),
    vpp_degree = need_posint(row, "vpp_degree"),
    cp_degree = need_posint(row, "cp_degree"),
    micro_batch_size = need_posint(row, "micro_batch_size"),
    -- empty: not stated (MoE rows): the MoE recipe's (M.moe_recipes),
    -- else the framework's default, none
    layer_recompute = given(row, "layer_recompute")
      and need_enum(row, "layer_recompute", { "none", "selective", "full" }) or nil,
  }
  -- optional `cp_comm_type` (Megatron --cp-comm-type as apsearch spells
  -- it, schema.lua); empty: the framework's default, p2p
  if given(row, "cp_comm_type") then
    strategy.cp_comm_type = need_enum(row, "cp_comm_type", M.CP_COMM_TYPES)
  end
  -- optional `microbatch_group_size` (Megatron --microbatch-group-size-
  -- per-virtual-pipeline-stage); empty: Megatron's default, pp_degree
  -- (the core refuses it on the other frameworks)
  if given(row, "microbatch_group_size") then
    strategy.microbatch_group_size = need_nonneg_int(row, "microbatch_group_size")
  end
  if given(row, "reshard_after_forward") then
    strategy.reshard_after_forward = need_bool(row, "reshard_after_forward")
  else
    -- not stated: what the framework runs, as `apsearch estimate` and the
    -- search take it (TorchTitan under PP: false, its "default" policy)
    strategy.reshard_after_forward = require("apsearch.space").default_reshard(framework,
      strategy.fsdp_degree, strategy.pp_degree)
  end
  if given(row, "flops_convention") then need_enum(row, "flops_convention", M.FLOPS_CONVENTIONS) end
  M.moe_columns(config and M.config_moe_row(row, model) or row, config and {} or model, strategy, assumed)
  -- a forced balance acts on the router only: on a dense row it would be
  -- dropped without a word (false, the default, states nothing)
  if (model.num_experts or 0) == 0 then M.refuse_moe_only(row) end
  -- multi-token-prediction modules trained with the model (Megatron
  -- --mtp-num-layers); empty: the release's recipe (apsearch.stacks), else none
  if given(row, "mtp_layers") then training.mtp_num_layers = need_nonneg_int(row, "mtp_layers") end
  -- a benchmark suite's release is read as the framework release it ran
  -- (apsearch.stacks.BENCHMARK_RELEASES; every stacks matcher does so)
  local runs, bench = stacks.framework_software(row.software)
  if bench then
    assumed[#assumed + 1] = ("software read as %s (%s: %s)"):format(runs, bench.name, bench.source)
  end
  if training.flash_attention then
    local flash, why = te_attention.of_row(row, calibration.family(row.device))
    if not flash then
      training.flash_attention = false
      assumed[#assumed + 1] = "flash_attention = false (" .. why .. ")"
    end
  end
  M.moe_recipes(row, model, training, strategy, assumed)
  if not strategy.layer_recompute then
    strategy.layer_recompute = "none"
    assumed[#assumed + 1] = "layer_recompute = none (not stated; the framework's default)"
  end
  if strategy.pp_degree == 1 and strategy.vpp_degree > 1 and framework == "megatron" then
    -- megatron/training/arguments.py @ d98e8a64 validate_args: without
    -- pipeline parallelism virtual_pipeline_model_parallel_size = None
    assumed[#assumed + 1] = ("vpp_degree = %d ignored: pp_degree = 1 (Megatron-LM sets no virtual " ..
      "pipeline without pipeline parallelism, arguments.py)"):format(strategy.vpp_degree)
    strategy.vpp_degree = 1
  end
  recompute_columns(row, strategy, assumed)
  -- optional `recompute_modules` (Megatron --recompute-modules, '/' or
  -- spaces between): the modules of selective recompute; the core checks
  -- the names and what each needs
  -- (blanks alone: not stated)
  if given(row, "recompute_modules") and row.recompute_modules:find("%S") then
    if strategy.layer_recompute ~= "selective" then
      error(fmtq("recompute_modules = %q needs layer_recompute = selective (got %s%s)", 
        row.recompute_modules, tostring(strategy.layer_recompute),
        given(row, "layer_recompute") and "" or ": layer_recompute not stated"), 0)
    end
    strategy.recompute_modules = (util.trim(row.recompute_modules):gsub("%s+", "/"))
  end
  pipeline_layout(row, strategy, framework, model.num_layers, assumed)
  -- the container's libraries (apsearch.stacks.CONTAINERS): device fields
  -- the preset sets (a part with the feature), the run's release's value
  local box = stacks.container(row.software)
  if box then
    for _, k in ipairs(util.sorted_keys(box.device)) do
      local v = box.device[k]
      if cluster.device[k] == nil and (preset[k] or 0) > 0 then
        cluster.device[k] = v
        assumed[#assumed + 1] = ("device.%s = %s (%s: %s)"):format(k, tostring(v), box.name, box.source)
      end
    end
  end
  -- the release line's settings (apsearch.stacks.release_settings)
  for _, e in ipairs(stacks.fill_release_settings(training, row.software)) do
    assumed[#assumed + 1] = ("%s = %s (%s: %s)"):format(e.key, tostring(e.value), e.name, e.source)
  end
  return model, cluster, training, strategy, preset, assumed
end

--- Numeric columns of Megatron-Core's sync-free experts, each the training
-- field of the same name (schema kind "pos": a finite number > 0).
M.SYNC_FREE_NUMBERS = { "moe_expert_rank_capacity_factor", "moe_paged_stash_buffer_size_factor_cuda" }

--- The sync-free columns of a row into training: moe_paged_stash (true /
-- false) and M.SYNC_FREE_NUMBERS; empty = not stated.
-- @tparam table row CSV row
-- @tparam table training (mutated)
function M.sync_free_columns(row, training)
  if given(row, "moe_paged_stash") then training.moe_paged_stash = need_bool(row, "moe_paged_stash") end
  for _, col in ipairs(M.SYNC_FREE_NUMBERS) do
    if given(row, col) then
      local v = decimal(row[col])
      if not v or not (v > 0) or v == math.huge then
        error(fmtq("%s = %q is not a finite number > 0", col, row[col]), 0)
      end
      training[col] = v
    end
  end
end

--- Megatron-LM's first and last layers in bf16 (--first-last-layers-bf16,
-- --num-layers-at-start-in-bf16, --num-layers-at-end-in-bf16) from a row
-- into training: first_last_layers_bf16 (true / false) and the two counts
-- (integers >= 0); empty = not stated (the counts: Megatron's default 1;
-- the core refuses what Megatron refuses).
-- @tparam table row CSV row
-- @tparam table training (mutated)
function M.bf16_layers_columns(row, training)
  if given(row, "first_last_layers_bf16") then
    training.first_last_layers_bf16 = need_bool(row, "first_last_layers_bf16")
  end
  for _, col in ipairs({ "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16" }) do
    if given(row, col) then training[col] = need_nonneg_int(row, col) end
  end
end

--- Columns that only say something of a model with experts, and the
-- values a dense row may still carry (the schema's defaults: one expert
-- rank, no dispatch): anything else on a dense row is a row that does not
-- describe the run it measured.
M.MOE_ONLY = {
  { col = "moe_router_force_load_balancing", dense = { ["false"] = true, ["0"] = true },
    why = "the flag acts on the MoE router only" },
  { col = "ep_degree", dense = { ["1"] = true }, why = "expert parallelism needs experts" },
  { col = "etp_degree", dense = { ["1"] = true }, why = "expert tensor parallelism needs experts" },
  { col = "moe_token_dispatcher", dense = {}, why = "there are no tokens to dispatch to experts" },
  { col = "moe_capacity_factor", dense = {}, why = "there are no experts to cap" },
  { col = "moe_flex_dispatcher_backend", dense = {}, why = "there are no tokens to dispatch to experts" },
  { col = "moe_paged_stash", dense = { ["false"] = true, ["0"] = true }, why = "there are no experts to stash" },
  { col = "moe_expert_rank_capacity_factor", dense = {}, why = "there are no expert ranks to budget" },
  { col = "moe_paged_stash_buffer_size_factor_cuda", dense = {}, why = "there are no experts to stash" },
}

--- Refuses a dense row (num_experts empty or 0) that states an MoE-only
-- column (M.MOE_ONLY) with a value a dense run cannot have, naming the
-- column and the value (it used to be dropped without a word).
-- @tparam table row column -> string
function M.refuse_moe_only(row)
  for _, c in ipairs(M.MOE_ONLY) do
    local v = row[c.col]
    if v ~= nil and v ~= "" and not c.dense[v:lower()] then
      error(fmtq("%s = %q on a model without experts (num_experts empty or 0): %s", c.col, v, c.why), 0)
    end
  end
end

--- The MoE columns of a row (shared/validation/moe/README.md), empty =
-- not stated: a row without num_experts (or 0) stays dense.  The model
-- gets num_experts, experts_per_token, moe_ffn_hidden_size, the shared
-- expert width, num_dense_layers leading dense layers of
-- dense_ffn_hidden_size (else ffn_hidden_size) and moe_layer_freq k (layer
-- i is MoE when i % k == 0, Megatron's --moe-layer-freq k); attention
-- "mla" the five MLA widths (head_dim = qk_nope + qk_rope).  The strategy
-- gets ep_degree, etp_degree (empty: the framework's default,
-- apsearch.space.default_etp: tp_degree in Megatron-LM, 1 in TorchTitan),
-- moe_token_dispatcher (empty: alltoall, NeMo's MoE recipes; noted as
-- assumed) and moe_capacity_factor (empty: dropless).
-- @tparam table row CSV row
-- @tparam table model (mutated)
-- @tparam table strategy (mutated)
-- @tparam table assumed notes (appended)
function M.moe_columns(row, model, strategy, assumed)
  local att = given(row, "attention") and need_enum(row, "attention", { "mha", "gqa", "mla" })
  if att == "mla" then
    model.q_lora_rank = given(row, "q_lora_rank") and need_nonneg_int(row, "q_lora_rank") or 0
    model.kv_lora_rank = need_int(row, "kv_lora_rank")
    model.qk_nope_head_dim = need_int(row, "qk_nope_head_dim")
    model.qk_rope_head_dim = need_int(row, "qk_rope_head_dim")
    model.v_head_dim = need_int(row, "v_head_dim")
    model.head_dim = model.qk_nope_head_dim + model.qk_rope_head_dim
  end
  if not given(row, "num_experts") or need_nonneg_int(row, "num_experts") == 0 then return end
  model.num_experts = need_int(row, "num_experts")
  model.experts_per_token = need_int(row, "experts_per_token")
  model.moe_ffn_hidden_size = need_int(row, "moe_ffn_hidden_size")
  if given(row, "shared_expert_ffn_hidden_size") then
    model.shared_expert_ffn_hidden_size = need_nonneg_int(row, "shared_expert_ffn_hidden_size")
  end
  if given(row, "num_dense_layers") then
    model.moe_first_dense_layers = need_nonneg_int(row, "num_dense_layers")
  end
  if given(row, "dense_ffn_hidden_size") then
    model.ffn_hidden_size = need_int(row, "dense_ffn_hidden_size")
  end
  if given(row, "moe_layer_freq") then model.moe_layer_freq = need_int(row, "moe_layer_freq") end
  if given(row, "ep_degree") then strategy.ep_degree = need_int(row, "ep_degree") end
  if given(row, "etp_degree") then
    strategy.etp_degree = need_int(row, "etp_degree")
  else
    strategy.etp_degree = require("apsearch.space").default_etp(row.framework, strategy.tp_degree or 1)
  end
  if given(row, "moe_token_dispatcher") then
    strategy.moe_token_dispatcher = need_enum(row, "moe_token_dispatcher", { "alltoall", "allgather", "flex" })
  end
  if given(row, "moe_capacity_factor") then
    local v = decimal(row.moe_capacity_factor)
    if not v or v < 0 then error("moe_capacity_factor is not a number >= 0", 0) end
    strategy.moe_capacity_factor = v
  end
end

--- The MoE recipe settings of a row's release, model and device
-- (apsearch.stacks.moe_recipes) where the row leaves them unstated: the
-- strategy's token dispatcher, capacity factor, layer_recompute with its
-- recompute_modules, and training settings the row's columns do not set;
-- each noted as assumed with its source.  A dispatcher still unstated is
-- alltoall (noted).  Dense rows are left alone.
-- @tparam table row CSV row
-- @tparam table model
-- @tparam table training (mutated)
-- @tparam table strategy (mutated)
-- @tparam table assumed notes (appended)
function M.moe_recipes(row, model, training, strategy, assumed)
  if (model.num_experts or 0) == 0 then return end
  local stated = { moe_token_dispatcher = given(row, "moe_token_dispatcher"),
    moe_capacity_factor = given(row, "moe_capacity_factor"), layer_recompute = given(row, "layer_recompute"),
    recompute_modules = given(row, "layer_recompute") or given(row, "recompute_modules") }
  local quantized = training.precision ~= "bf16" and training.precision ~= "fp16"
  -- a recipe setting the row's own columns exclude is not assumed: the run
  -- could not have had it (Megatron-LM d98e8a64
  -- megatron/core/transformer/transformer_config.py __post_init__)
  local function excluded(k)
    if k == "moe_shared_expert_overlap" and training.overlap_moe_expert_parallel_comm then
      return "overlap_moe_expert_parallel_comm = true excludes it"
    end
    if k == "moe_capacity_factor" and stated.moe_token_dispatcher and strategy.moe_token_dispatcher == "flex"
        and (training.moe_flex_dispatcher_backend or "deepep") == "deepep" then
      -- the recipes' token drop pads to capacity, which the flex
      -- dispatcher's DeepEP backend refuses (moe_pad_expert_input_to_capacity)
      return "moe_token_dispatcher = flex with the deepep backend does not pad to capacity"
    end
    return nil
  end
  local function skip(k, v, e, why)
    assumed[#assumed + 1] = ("%s = %s not assumed, %s (%s: %s)"):format(k, tostring(v), why, e.name,
      "megatron/core/transformer/transformer_config.py")
  end
  -- entry e's value v for key k into target, unless the row excludes it
  local function assume(target, k, v, e)
    local why = excluded(k)
    if why then skip(k, v, e, why) return end
    target[k] = v
    assumed[#assumed + 1] = ("%s = %s (%s: %s)"):format(k, tostring(v), e.name, e.source)
  end
  for _, e in ipairs(stacks.moe_recipes(row.software, row.model, row.device)) do
    if e.quantized_only and not quantized then goto continue end
    local layout = e.layouts and e.layouts[strategy.pp_degree .. "x" .. strategy.vpp_degree]
    if e.pipeline_split and (strategy.pp_degree or 1) > 1 then
      -- the recipe's layout is a rule's chunks (nil where the rule refuses)
      layout = core.chunk_layers(model.num_layers, { pp_degree = strategy.pp_degree,
        vpp_degree = strategy.vpp_degree or 1, pipeline_split = e.pipeline_split })
    end
    if layout and not given(row, "pipeline_layout") then
      strategy.stage_partition = { table.unpack(layout) }
      assumed[#assumed + 1] = ("pipeline_layout = %s (%s: %s)"):format(table.concat(layout, ","), e.name, e.source)
    end
    for _, k in ipairs(util.sorted_keys(e.strategy or {})) do
      if not stated[k] then assume(strategy, k, e.strategy[k], e) end
    end
    for _, k in ipairs(util.sorted_keys(e.training or {})) do
      if training[k] == nil then assume(training, k, e.training[k], e) end
    end
    ::continue::
  end
  if not strategy.moe_token_dispatcher then
    assumed[#assumed + 1] = "moe_token_dispatcher = alltoall (not stated; NeMo's MoE recipes)"
  end
end

--- The short form of one `assumed` note for the text table: the setting
-- and the name of what set it, without the file references.  A note ends
-- in a parenthesised "NAME: SOURCE" (the release recipe's name, then its
-- files and lines, apsearch.stacks); the SOURCE part (after the first
-- ": " outside nested parentheses) is cut.  A note without one is kept
-- whole.  `--format json` keeps every note whole.
-- @tparam string note one entry of a case's `assumed`
-- @treturn string
-- @usage M.assumed_short("moe_capacity_factor = 1.0 (NeMo recipe: a.py:40)")
--   --> "moe_capacity_factor = 1.0 (NeMo recipe)"
function M.assumed_short(note)
  note = tostring(note)
  if note:sub(-1) ~= ")" then return note end
  -- the opening parenthesis of the last top-level group
  local depth, open = 0, nil
  for i = #note, 1, -1 do
    local ch = note:sub(i, i)
    if ch == ")" then depth = depth + 1
    elseif ch == "(" then
      depth = depth - 1
      if depth == 0 then open = i break end
    end
  end
  if not open then return note end
  depth = 0
  for i = open + 1, #note - 1 do
    local ch = note:sub(i, i)
    if ch == "(" then depth = depth + 1
    elseif ch == ")" then depth = depth - 1
    elseif depth == 0 and ch == ":" and note:sub(i + 1, i + 1) == " " then
      return note:sub(1, i - 1) .. ")"
    end
  end
  return note
end

--- A measured column of a row: nil when empty, else a positive finite
-- number; raises `<column> = "<text>" is not a positive number` (a zero or
-- negative throughput would make every error and the fit meaningless).
function M.measured_value(row, column)
  local text = row[column]
  if text == nil or text == "" then return nil end
  local v = decimal(text)
  if not v or v ~= v or v <= 0 or v == math.huge then
    error(fmtq("%s = %q is not a positive number", column, text), 0)
  end
  return v
end

local function pct(pred, meas) return (pred - meas) / meas * 100 end

--- Largest `mfu_peak_tflops` a row may state, TFLOP/s per GPU: 100 x the
-- highest dense peak of any preset (B300 fp4, 15,000) is beyond any
-- device; a larger value is a unit error (FLOP/s written for TFLOP/s).
M.MAX_MFU_PEAK_TFLOPS = 1.5e6
--- Smallest `mfu_peak_tflops`: 1 TFLOP/s, below the dense peak of any
-- accelerator that trains these models (a V100's fp32 peak is 15.7); a
-- smaller value is a unit error (PFLOP/s written for TFLOP/s).
M.MIN_MFU_PEAK_TFLOPS = 1

--- The peak a row's measured MFU was computed against, FLOP/s per GPU:
-- its `mfu_peak_tflops` column when the source names the peak it divided
-- by (TorchTitan's 405B table, docs/performance.md @ 3faaa1a0d: the SXM
-- bf16 peak on a lower-TDP H100, footnote 1, and the doubled fp8 peak for
-- Float8, footnote 2), else the device's dense bf16 peak, the common
-- convention (PaLM appendix B; Megatron-LM and TorchTitan logs).
-- @tparam table row the CSV row
-- @tparam table preset the row's device preset (peak_flops_bf16, FLOP/s)
-- @treturn number FLOP/s; raises "mfu_peak_tflops = ..." when the column
-- is not a number in [MIN_MFU_PEAK_TFLOPS, MAX_MFU_PEAK_TFLOPS]
function M.mfu_peak(row, preset)
  if not given(row, "mfu_peak_tflops") then return preset.peak_flops_bf16 end
  local v = decimal(row.mfu_peak_tflops)
  if not (v and v >= M.MIN_MFU_PEAK_TFLOPS and v <= M.MAX_MFU_PEAK_TFLOPS) then
    error(fmtq("mfu_peak_tflops = %q: must be a number of TFLOP/s per GPU in [%g, %g]", 
      row.mfu_peak_tflops, M.MIN_MFU_PEAK_TFLOPS, M.MAX_MFU_PEAK_TFLOPS), 0)
  end
  return v * 1e12
end

--- The FLOPs conventions of the `flops_convention` column (ctx:flops);
-- `unknown` or empty: the source does not say (no TFLOP/s or MFU compared).
M.FLOPS_CONVENTIONS = { "model-causal", "model-noncausal", "hardware-causal",
  "hardware-noncausal", "unknown" }

--- Physical ceiling of a measured speed, as a fraction of the device's
-- highest dense peak over all its precisions (peak_flops_*): no GPU runs
-- its causal model FLOPs (the smallest count of any convention) faster
-- than its peak, so a measured tokens/s per GPU, step time, TFLOP/s per
-- GPU or MFU that implies more is a wrong unit or a typo (a per-node or
-- per-cluster figure, a step time in ms read as s).
M.MAX_UTILIZATION = 1.0
--- Physical floor of a measured speed: 0.01 % of the device's bf16 peak
-- (peak_flops_bf16, the rate every training precision falls back to; the
-- highest peak, FP4 on Blackwell, would put a bf16 run's floor 2-6 x too
-- high).  The production runs of tests/fixtures sit between 9 % and 62 %
-- of it; Megatron-LM's functional tests train toy models (hidden 512) at
-- 0.02-0.1 % (tests/fixtures/heldout/megatron_lm_functional.csv), and
-- those are measurements too; 1e-308 tokens/s is a typo.
M.MIN_UTILIZATION = 1e-4
--- Ceiling of `measured_mem_gib` as a fraction of the device's memory:
-- a run cannot hold more than the device has; 1.1 leaves room for GB
-- written as GiB (x 1.074).
M.MAX_MEM_FRACTION = 1.1
--- Floor of `measured_mem_gib`: 0.1 GiB; a CUDA context alone takes more.
M.MIN_MEM_GIB = 0.1

--- Checks the measured columns of a row against the physical bounds of
-- its device and model (MIN_/MAX_UTILIZATION, MAX_MEM_FRACTION,
-- MIN_MEM_GIB); raises `<column> = "<text>" is outside [lo, hi] ...`.
-- @param row the row (column -> string)
-- @param ctx the row's core context, strategy its strategy
-- @param est its estimate, preset its device preset, cluster its cluster
function M.check_bounds(row, ctx, strategy, est, preset, cluster, training)
  local peak, peak_name = 0, "?"
  for k, v in pairs(preset) do
    if type(k) == "string" and k:match("^peak_flops_") and type(v) == "number" and v > peak then
      peak, peak_name = v, k
    end
  end
  local floor_peak = preset.peak_flops_bf16 or peak
  local n = est.devices_used
  local flops = ctx:flops(strategy, "model-causal")
  local tokens = training.global_batch_size * training.seq_length
  local per_token = flops / tokens
  local mem = (cluster.device and cluster.device.memory_bytes) or preset.memory_bytes
  -- each column's bounds in its own unit: speed = utilisation x peak
  -- {ceiling at the highest peak, floor at the bf16 peak, inverse}
  local bounds = {
    measured_tokens_per_s_per_gpu = { peak / per_token, floor_peak / per_token, false },
    measured_step_time_s = { flops / n / peak, flops / n / floor_peak, true },  -- inverse: slow = long
    measured_tflops_per_gpu = { peak / 1e12, floor_peak / 1e12, false },
    measured_mfu_pct = { 100, 100 * floor_peak / peak, false },
  }
  local function fail(column, text, lo, hi, why)
    error(fmtq("%s = %q is outside [%.4g, %.4g], the physical bounds for this row (%s)", 
      column, text, lo, hi, why), 0)
  end
  local why = ("%g %% of %s's bf16 peak, %.4g TFLOP/s, to %g %% of its highest dense peak, %s = %.4g TFLOP/s; "
    .. "validate.MIN_UTILIZATION / MAX_UTILIZATION"):format(M.MIN_UTILIZATION * 100,
    tostring(row.device), floor_peak / 1e12, M.MAX_UTILIZATION * 100, peak_name, peak / 1e12)
  for _, m in ipairs(M.MEASURES) do
    local v = M.measured_value(row, m.column)
    local b = bounds[m.column]
    if v and b and peak > 0 then
      local lo, hi
      if b[3] then lo, hi = b[1] / M.MAX_UTILIZATION, b[2] / M.MIN_UTILIZATION
      else lo, hi = b[2] * M.MIN_UTILIZATION, b[1] * M.MAX_UTILIZATION end
      if v < lo or v > hi then fail(m.column, row[m.column], lo, hi, why) end
    elseif v and m.column == "measured_mem_gib" and mem and mem > 0 then
      local hi = mem * M.MAX_MEM_FRACTION / GIB
      if v < M.MIN_MEM_GIB or v > hi then
        fail(m.column, row[m.column], M.MIN_MEM_GIB, hi, ("the device's %.4g GiB x %g; "
          .. "validate.MIN_MEM_GIB / MAX_MEM_FRACTION"):format(mem / GIB, M.MAX_MEM_FRACTION))
      end
    end
  end
end

--- Largest terms of an estimate: exposed time categories and memory
-- categories, each sorted descending, three of each.
local function top_terms(est)
  local perf, mem = {}, {}
  for k, v in pairs(est.performance_breakdown) do
    perf[#perf + 1] = { name = k, seconds = v.exposed }
  end
  -- ties (equal terms, e.g. params and grads) in name order, not the
  -- order pairs() happens to give
  table.sort(perf, function(a, b)
    if a.seconds ~= b.seconds then return a.seconds > b.seconds end
    return a.name < b.name
  end)
  for k, v in pairs(est.memory_breakdown) do
    if k == "comm_buffers" then v = v.total end
    if k ~= "total" then mem[#mem + 1] = { name = k, gib = v / GIB } end
  end
  table.sort(mem, function(a, b)
    if a.gib ~= b.gib then return a.gib > b.gib end
    return a.name < b.name
  end)
  return { time = { perf[1], perf[2], perf[3] }, memory = { mem[1], mem[2], mem[3] } }
end


--- An estimator's refusal of a row's inputs, in the row's terms: the
-- core names the policy field ("training.cuda_graph_scope: ..."); where
-- a column of that name holds the value, the line names the column and
-- its value as the row's other errors do (`cuda_graph_scope = "mamba":
-- ...`). Other messages are returned unchanged.
-- @tparam table row column -> string
-- @param err the error raised by core.context
-- @treturn string
function M.column_error(row, err)
  local msg = tostring(err)
  -- "training.x: ..." or "training.x with precision bf16: ..."
  local path, sep, rest = msg:match("^([%w_%.]+)(:? )(.*)$")
  local col = path and path:match("^[%w_%.]*%.([%w_]+)$")
  if col and path:match("^[mct]") and given(row, col) then
    return fmtq("%s = %q", col, row[col]) .. sep .. rest
  end
  return msg
end

--- Estimates one row and compares it with what was measured.
-- @param row table column -> string
-- @param calib optional calibration {device = {...}, training = {...}}
-- @return case table: case_id, source, reliability, inputs, predicted,
--   measured, error_pct (per measure), top_terms, and release_gap
--   {name, evidence, source} when apsearch.stacks.release_gap marks the
--   row; or with `error` set
function M.run_case(row, calib)
  local case = { case_id = row.case_id, source = row.source,
                 reliability = row.reliability, model = row.model }
  local ok, err = pcall(function()
    for _, m in ipairs(M.MEASURES) do M.measured_value(row, m.column) end
    local model, cluster, training, strategy, preset, assumed = M.case_inputs(row)
    if #assumed > 0 then case.assumed = assumed end
    local gap = stacks.release_gap(row.software, row.model, row.device)
    if gap then case.release_gap = { name = gap.name, evidence = gap.evidence, source = gap.source } end
    -- the run's stack (its `software`, else the framework's newest): its
    -- efficiency profile, then the calibration (a grouped one: that stack's)
    local stack = stacks.of_software(row.software, training.framework)
    case.stack = stack
    stacks.apply(cluster, stack, training)
    calibration.apply(cluster, calib, stack)
    local cok, ctx = pcall(core.context, model, cluster, training)
    if not cok then error(M.column_error(row, ctx), 0) end
    local est = ctx:estimate(strategy)
    case.inputs = { model = model, cluster = cluster, training = training, strategy = strategy }
    if est.reason and est.reason ~= "MEMORY_LIMIT" then
      error(("strategy infeasible: %s: %s"):format(est.reason, est.message), 0)
    end
    M.check_bounds(row, ctx, strategy, est, preset, cluster, training)
    local conv = row.flops_convention
    local n = est.devices_used
    local kind = given(row, "measured_mem_kind") and need_enum(row, "measured_mem_kind", M.MEM_KINDS)
      or M.DEFAULT_MEM_KIND
    -- a kind says which peak measured_mem_gib is: without the peak it
    -- describes nothing (a row that ran or stopped without a figure)
    if given(row, "measured_mem_kind") and not given(row, "measured_mem_gib") then
      error(fmtq("measured_mem_kind = %q without measured_mem_gib: the kind names which peak the measured "
        .. "memory is", row.measured_mem_kind), 0)
    end
    local outcome = given(row, "outcome") and need_enum(row, "outcome", M.OUTCOMES) or "ran"
    if outcome == "oom" then
      -- an out-of-memory run has neither a peak nor a throughput to compare
      for _, m in ipairs(M.MEASURES) do
        if M.measured_value(row, m.column) then
          error(fmtq("%s = %q with outcome = oom: a run that stopped out of memory has no %s to compare", 
            m.column, row[m.column], m.key == "mem_gib" and "peak" or "throughput"), 0)
        end
      end
    end
    case.outcome, case.mem_kind = outcome, kind
    local by_kind = { allocated = est.mem_allocated, reserved = est.mem_reserved, device = est.mem_peak }
    local predicted = {
      tokens_per_s_per_gpu = est.tokens_per_s_per_gpu,
      step_time_s = est.step_time,
      -- the estimate's peak of the kind the row measured
      mem_gib = by_kind[kind] / GIB,
      mem_kind = kind,
      mem_allocated_gib = est.mem_allocated / GIB,
      mem_reserved_gib = est.mem_reserved / GIB,
      mem_device_gib = est.mem_peak / GIB,
      mem_limit_gib = est.mem_limit and est.mem_limit / GIB or nil,
      fits = est.feasible,
      -- apsearch's own convention (causal model FLOPs over the peak of the
      -- precision), whatever the row's
      mfu = est.mfu,
    }
    if conv and conv ~= "unknown" and conv ~= "" then
      local flops = assert(ctx:flops(strategy, conv))
      predicted.tflops_per_gpu = flops / est.step_time / n / 1e12
      predicted.mfu_pct = flops / est.step_time / n / M.mfu_peak(row, preset) * 100
    end
    local measured, errors, uncompared = {}, {}, {}
    for _, m in ipairs(M.MEASURES) do
      local v = M.measured_value(row, m.column)
      if v and predicted[m.key] then
        measured[m.key] = v
        errors[m.key] = pct(predicted[m.key], v)
      elseif v then
        uncompared[#uncompared + 1] = m.column
      end
    end
    -- a measurement the row gives but no estimate is comparable with
    -- (TFLOP/s or MFU without a flops_convention) is named, not dropped
    if #uncompared > 0 then case.not_compared = util.array(uncompared) end
    case.predicted, case.measured, case.error_pct = predicted, measured, errors
    case.top_terms = top_terms(est)
  end)
  if not ok then case.error = tostring(err) end
  return case
end

--- A case's measured throughput in tokens/s per GPU: the row's own, else
-- derived from its measured step time or TFLOP/s through the estimate
-- (tokens per step and FLOPs per token are fixed by the row, so measured
-- tokens/s = estimated tokens/s x estimated step / measured step =
-- estimated tokens/s x measured TFLOP/s / estimated TFLOP/s), or nil when
-- it measured none of them (or TFLOP/s without a flops_convention).
-- @tparam table case a result of M.run_case
-- @treturn number|nil tokens/s per GPU
function M.measured_throughput(case)
  local m, p = case.measured or {}, case.predicted or {}
  if m.tokens_per_s_per_gpu then return m.tokens_per_s_per_gpu end
  local tps = p.tokens_per_s_per_gpu
  if not tps then return nil end
  if m.step_time_s and p.step_time_s then return tps * p.step_time_s / m.step_time_s end
  if m.tflops_per_gpu and p.tflops_per_gpu then return tps * m.tflops_per_gpu / p.tflops_per_gpu end
  return nil
end

--- A case's throughput error in percent of its measured throughput
-- (M.measured_throughput: tokens/s, or derived from its step time or
-- TFLOP/s), nil when it measured none of them.
-- @tparam table case a result of M.run_case
-- @treturn number|nil signed error, %
function M.throughput_error(case)
  local meas = M.measured_throughput(case)
  local pred = (case.predicted or {}).tokens_per_s_per_gpu
  if not (meas and meas > 0 and pred) then return nil end
  return pct(pred, meas)
end

--- The group of a row's source for per-source figures: the `source`
-- column's first word (a publication or benchmark suite), "?" if empty.
-- @tparam string|nil source
-- @treturn string
function M.source_key(source)
  return (source or ""):match("^[^%s(]+") or "?"
end

--- Error statistics of signed percentage errors: count, mean, median and
-- maximum of their absolute values.
-- @tparam table values array of numbers
-- @treturn table {count, mape_pct, median_abs_pct, max_abs_pct} ({count = 0} when empty)
local function stats(values)
  if #values == 0 then return { count = 0 } end
  local abs = {}
  local sum = 0
  for i, v in ipairs(values) do abs[i] = math.abs(v); sum = sum + abs[i] end
  table.sort(abs)
  local n = #abs
  local median = n % 2 == 1 and abs[(n + 1) // 2] or (abs[n // 2] + abs[n // 2 + 1]) / 2
  return { count = n, mape_pct = sum / n, median_abs_pct = median, max_abs_pct = abs[n] }
end
M.stats = stats

--- Whether a case is a mixture-of-experts run (its model has experts).
local function is_moe(c)
  local m = c.inputs and c.inputs.model
  return m ~= nil and (m.num_experts or 0) > 0
end

--- How many worst memory under-estimates the summary names.
M.WORST_UNDER = 5

--- Summary over cases: throughput (tokens/s per GPU) and memory error
-- statistics, and the count of memory under-estimates beyond 5%.  Memory
-- is also given per measured kind (`memory_by_kind`: allocated, reserved,
-- device), per framework (`memory_by_framework`) and per model family
-- (`memory_by_family`: dense, moe), with the worst under-estimates
-- (`memory_worst_under`, most negative first, at most WORST_UNDER).
-- Fit/no-fit: every row is a run that trained unless its `outcome` says
-- `oom`; `fit_calls` counts the estimate's call (its peak against the
-- device's memory limit) per reported outcome and names every call on the
-- wrong side (`wrong`: a run that trained called out of memory, or a run
-- that stopped out of memory called to fit).  `predicted_not_to_fit`
-- names the trained runs called out of memory (as before the outcome
-- column).  Cases marked with a release gap (apsearch.stacks.RELEASE_GAPS)
-- count in every figure; `throughput_without_release_gaps` repeats the
-- throughput statistics without them and `release_gap_cases` names them
-- (both only when some case is marked).  `not_compared_cases` names the
-- rows with a measurement no estimate was compared with (a case's
-- `not_compared`: TFLOP/s or MFU without a flops_convention), only when
-- there is one.
function M.summarize(cases)
  local thr, mem, by_source, kept, gaps = {}, {}, {}, {}, {}
  local under, failed = 0, 0
  local oom = {}
  local groups = { kind = {}, framework = {}, family = {} }
  local unders = {}
  local calls = { ran = { count = 0, called_fit = 0, called_oom = 0 },
                  oom = { count = 0, called_fit = 0, called_oom = 0 } }
  local wrong = {}
  local function add(group, key, v)
    group[key] = group[key] or {}
    table.insert(group[key], v)
  end
  for _, c in ipairs(cases) do
    if c.error then
      failed = failed + 1
    else
      local outcome = c.outcome or "ran"
      local t = calls[outcome]
      t.count = t.count + 1
      if c.predicted.fits then t.called_fit = t.called_fit + 1 else t.called_oom = t.called_oom + 1 end
      if (outcome == "ran") ~= (c.predicted.fits == true) then
        wrong[#wrong + 1] = { case_id = c.case_id, outcome = outcome,
          called = c.predicted.fits and "fits" or "oom",
          estimated_gib = c.predicted.mem_device_gib, limit_gib = c.predicted.mem_limit_gib }
      end
      -- a run that trained, estimated over the memory limit: a false
      -- "does not fit"
      if outcome == "ran" and not c.predicted.fits then oom[#oom + 1] = c.case_id end
      -- a row that measured step time or TFLOP/s counts with the tokens/s
      -- it implies (M.measured_throughput): the same error
      local e = c.error_pct.tokens_per_s_per_gpu
      local implied = not e and M.measured_throughput(c)
      if implied then e = pct(c.predicted.tokens_per_s_per_gpu, implied) end
      if e then
        thr[#thr + 1] = e
        if c.release_gap then gaps[#gaps + 1] = c.case_id else kept[#kept + 1] = e end
        local key = M.source_key(c.source)
        by_source[key] = by_source[key] or {}
        table.insert(by_source[key], e)
      end
      local m = c.error_pct.mem_gib
      if m then
        mem[#mem + 1] = m
        if m < -5 then under = under + 1 end
        add(groups.kind, c.predicted.mem_kind or M.DEFAULT_MEM_KIND, m)
        local fw = c.inputs and c.inputs.training and c.inputs.training.framework or "?"
        add(groups.framework, fw, m)
        add(groups.family, is_moe(c) and "moe" or "dense", m)
        if m < 0 then
          unders[#unders + 1] = { case_id = c.case_id, error_pct = m, kind = c.predicted.mem_kind,
            estimated_gib = c.predicted.mem_gib, measured_gib = c.measured.mem_gib }
        end
      end
    end
  end
  local memory = stats(mem)
  memory.under_estimates_beyond_5pct = under
  local sources = {}
  for k, v in pairs(by_source) do sources[k] = stats(v) end
  local function grouped(g)
    local r = {}
    for k, v in pairs(g) do
      r[k] = stats(v)
      local n = 0
      for _, x in ipairs(v) do if x < -5 then n = n + 1 end end
      r[k].under_estimates_beyond_5pct = n
    end
    return r
  end
  table.sort(unders, function(a, b)
    if a.error_pct ~= b.error_pct then return a.error_pct < b.error_pct end
    return tostring(a.case_id) < tostring(b.case_id)
  end)
  local worst = util.array()
  for i = 1, math.min(M.WORST_UNDER, #unders) do worst[i] = unders[i] end
  local out = { cases = #cases, failed = failed, throughput = stats(thr),
                memory = memory, throughput_by_source = sources,
                memory_by_kind = grouped(groups.kind),
                memory_by_framework = grouped(groups.framework),
                memory_by_family = grouped(groups.family),
                memory_worst_under = worst,
                fit_calls = { ran = calls.ran, oom = calls.oom, wrong = util.array(wrong) },
                predicted_not_to_fit = { count = #oom, cases = util.array(oom) } }
  local uncompared = {}
  for _, c in ipairs(cases) do
    if c.not_compared then uncompared[#uncompared + 1] = c.case_id end
  end
  if #uncompared > 0 then out.not_compared_cases = util.array(uncompared) end
  if #gaps > 0 then
    out.throughput_without_release_gaps = stats(kept)
    out.release_gap_cases = util.array(gaps)
  end
  return out
end

--- The header of a cases file: column name -> column number.
-- @raise `<file>: header: column "<name>" appears twice (columns i and j)`
--   or `<file>: missing required column <name>`
--- Optional columns of a cases file besides the measurements
-- (M.MEASURES), the recipe booleans (M.RECIPE_BOOLS) and the MoE-only
-- columns (M.MOE_ONLY): the schema of docs/accuracy.md.  A header column
-- outside M.known_columns() is refused (M.load): a misspelt column would
-- otherwise be dropped without a word and the row estimated as another run.
M.OPTIONAL = {
  "source", "reliability", "notes", "software", "device_memory_gib", "outcome",
  "measured_mem_kind", "mfu_peak_tflops",
  -- model (model_config: an example config by name, for what the columns
  -- cannot describe)
  "model_config", "linear_bias", "qkv_bias", "qk_norm", "head_dim", "dropout", "max_position_embeddings",
  "attention", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
  "num_experts", "experts_per_token", "moe_ffn_hidden_size", "shared_expert_ffn_hidden_size",
  "num_dense_layers", "dense_ffn_hidden_size", "moe_layer_freq", "mtp_layers",
  -- cluster, strategy and recipe settings
  "nvlink_domain_size", "cp_comm_type", "reshard_after_forward", "pipeline_layout",
  "recompute_method", "recompute_modules", "recompute_num_layers", "activation_offload_layers",
  "offload_modules", "activation_offload_fraction",
  "cuda_graph_scope", "fsdp_impl", "overlap_grad_reduce", "loss_chunks", "local_batch_size", "microbatch_group_size",
  "rms_norm_backend", "attn_backend",
  -- Megatron's first and last layers in bf16 (M.bf16_layers_columns)
  "first_last_layers_bf16", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16",
}

--- Every column a cases file may have (a set): M.REQUIRED, M.OPTIONAL, the
-- measured columns, M.RECIPE_BOOLS and the MoE-only columns.
-- @treturn table name -> true
function M.known_columns()
  local known = {}
  for _, list in ipairs({ M.REQUIRED, M.OPTIONAL, M.RECIPE_BOOLS }) do
    for _, c in ipairs(list) do known[c] = true end
  end
  for _, m in ipairs(M.MEASURES) do known[m.column] = true end
  for _, m in ipairs(M.MOE_ONLY) do known[m.col] = true end
  return known
end

local function header_index(path, names)
  local index, known = {}, M.known_columns()
  for i, name in ipairs(names) do
    if name == "" then
      goto unnamed -- a spreadsheet's trailing empty columns (M.load checks they stay empty)
    end
    if index[name] then
      error(("%s: header: column %s appears twice (columns %d and %d)"):format(
        path, util.describe(name), index[name], i), 0)
    end
    index[name] = i
    ::unnamed::
  end
  local missing = {}
  for _, col in ipairs(M.REQUIRED) do
    if not index[col] then missing[#missing + 1] = col end
  end
  if #missing > 0 then
    error(("%s: missing required column%s %s"):format(path, #missing > 1 and "s" or "",
      table.concat(missing, ", ")), 0)
  end
  local suggest = require("apsearch.suggest")
  for i, name in ipairs(names) do
    if name ~= "" and not known[name] then
      local sugg = suggest.did_you_mean(name, suggest.keys(known))
      error(("%s: header: unknown column %s (column %d)%s (schema: docs/accuracy.md)"):format(
        path, util.describe(name), i, sugg and ("; " .. sugg) or ""), 0)
    end
  end
  return index
end

--- Reads a cases file: CSV as RFC 4180 writes it (apsearch.csvread:
-- quoted fields with doubled quotes, commas and line breaks, CRLF or LF
-- line ends, a UTF-8 byte-order mark); header names are read without the
-- spaces around them.  Raises `<file>:<line>:<column>: <problem>` for
-- malformed CSV, `<file>: missing required column <name>`, `<file>:
-- header: column "<name>" appears twice (columns i and j)`, `<file>:
-- header: unknown column "<name>" (column i)` (with the closest known
-- name when one is close; M.known_columns), or
-- `<file>:<line>: data row <r> has <n> fields, the header <m>`, or, for a
-- row without a case_id (named "#<r>") whose name another row gives as
-- its case_id, `<file>:<line>: data row <r> has no case_id, and its name
-- #<r> is the case_id of line <l>: give the row a case_id`.
-- @return array of rows (column -> string)
function M.load(path)
  if not util.file_exists(path) then
    error(("%s: cannot open file"):format(path), 0)
  end
  local text, rerr = util.read_file(path)
  if not text then error(("%s: cannot read: %s"):format(path, tostring(rerr)), 0) end
  local first = (text:sub(1, 3) == "\239\187\191" and text:sub(4) or text):match("^[^\r\n]*")
  if first:find(";", 1, true) and not first:find(",", 1, true) then
    error(("%s:1: the header's fields are separated by ';': apsearch reads comma-separated CSV "
      .. "(export with ',' as the field separator)"):format(path), 0)
  end
  local records, lines = require("apsearch.csvread").parse(text, path)
  if #records == 0 then error(("%s: empty file (no header row)"):format(path), 0) end
  local names = {}
  for i, name in ipairs(records[1]) do names[i] = util.trim(name) end
  local index = header_index(path, names)
  if #records == 1 then error(("%s: no data rows after the header"):format(path), 0) end
  local rows, line_of = {}, {}
  -- the ids the file gives, so that the name of a row without one ("#3")
  -- cannot be taken for another row's
  -- an id is its text without surrounding blanks (a spreadsheet cell's
  -- stray space): "#1 " is the row name "#1", and a blank id is no id
  local given, ci = {}, index.case_id
  for r = 2, #records do
    local id = ci and records[r][ci]
    if id then
      id = util.trim(id)
      records[r][ci] = id
    end
    if id and id ~= "" and not given[id] then given[id] = lines[r] end
  end
  for r = 2, #records do
    local fields = records[r]
    -- a row of empty fields (what a spreadsheet exports for a blank row,
    -- ",,,,"): no run, skipped as a blank line is
    local blank = true
    for _, f in ipairs(fields) do blank = blank and not f:match("%S") end
    if blank then goto next_record end
    if #fields ~= #names then
      error(("%s:%d: data row %d has %d fields, the header %d"):format(
        path, lines[r], r - 1, #fields, #names), 0)
    end
    for i, name in ipairs(names) do
      if name == "" and fields[i]:match("%S") then
        error(("%s:%d: column %d has no name in the header but holds %s"):format(
          path, lines[r], i, util.describe(fields[i])), 0)
      end
    end
    local row = {}
    for name, i in pairs(index) do row[name] = fields[i] end
    -- a row without an id is named by its data row ("#3"; messages say
    -- "row #3", not "row row 3")
    if row.case_id == "" then
      row.case_id = "#" .. (r - 1)
      if given[row.case_id] then
        error(("%s:%d: data row %d has no case_id, and its name %s is the case_id of line %d: "
          .. "give the row a case_id"):format(path, lines[r], r - 1, row.case_id, given[row.case_id]), 0)
      end
    end
    -- every output names a row by its id: two rows of one id would mix
    if line_of[row.case_id] then
      error(("%s:%d: case_id %s repeats the row of line %d"):format(path, lines[r],
        util.describe(row.case_id), line_of[row.case_id]), 0)
    end
    line_of[row.case_id] = lines[r]
    rows[#rows + 1] = row
    ::next_record::
  end
  return rows
end

--- Validates every row of a file.
-- @param path CSV file
-- @param calib optional calibration table
-- @return {summary = ..., cases = {...}}
function M.run(path, calib)
  local cases = {}
  for _, row in ipairs(M.load(path)) do
    cases[#cases + 1] = M.run_case(row, calib)
  end
  return { schema_version = 1, file = path, calibration = calib and calib.name or nil,
           summary = M.summarize(cases), cases = cases }
end

return M
