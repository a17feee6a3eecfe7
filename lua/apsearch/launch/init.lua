--- Launch configs for the top-k strategies: what a user runs to train with
-- a strategy apsearch found.
--
-- For each top-k record, one file per engine (`apsearch run --out DIR`
-- writes them under `DIR/launch/`):
--
-- * `rank<N>_megatron.sh`     Megatron-LM flags in a torchrun script
--                             (apsearch.launch.megatron);
-- * `rank<N>_torchtitan.py`   TorchTitan config module (a function
--                             returning Trainer.Config, --module / --config)
--                             (apsearch.launch.torchtitan); with
--                             `--torchtitan-version TAG` a release's job
--                             file `rank<N>_torchtitan.toml`
--                             (apsearch.launch.torchtitan_toml);
-- * `rank<N>_mindformers.yaml` MindSpore Transformers parallel_config,
--                             recompute_config, offset
--                             (apsearch.launch.mindspore);
-- * `rank<N>_automodel.yaml`  NeMo AutoModel recipe YAML (distributed,
--                             model backend, batch, loss, optimizer) with
--                             its torchrun line (apsearch.launch.automodel).
--
-- Only option names listed in apsearch.launch.options (each list cites the
-- engine source it was read from) are written.  A strategy an engine
-- cannot express (HSDP in Megatron-LM, ZeRO-1 in TorchTitan, ...) gets a
-- comment line starting `NOT EXPRESSIBLE` in that file, never a wrong
-- option; a setting that is only close gets a line starting `APPROXIMATE`.
-- Data, tokenizer, checkpoint and schedule settings are the user's.
-- @module apsearch.launch
local util = require "apsearch.util"

local M = {}

--- Engines, in file order: `{name, module, file suffix}`.
M.engines = {
  { name = "megatron", module = "apsearch.launch.megatron", suffix = "_megatron.sh" },
  { name = "torchtitan", module = "apsearch.launch.torchtitan", suffix = "_torchtitan.py" },
  { name = "mindformers", module = "apsearch.launch.mindspore", suffix = "_mindformers.yaml" },
  { name = "automodel", module = "apsearch.launch.automodel", suffix = "_automodel.yaml" },
}

--- The training.framework whose overheads and search space an engine's
-- launch file runs (MindFormers has none of apsearch's frameworks).
M.ENGINE_FRAMEWORK = { megatron = "megatron", torchtitan = "fsdp2", automodel = "automodel" }

--- What a file that runs a step's micro-batches as one pipeline schedule
-- (Megatron-LM's, MindFormers') says of an estimate of several (the
-- passes of training.local_batch_size: performance_cost.
-- gradient_accumulation_steps > 1, each pass a schedule paying its own
-- bubble and gradient reduction), or nil.
-- @tparam table rec the top-k record
-- @tparam string engine the engine's name as the note says it
-- @treturn string|nil
function M.passes_lacks(rec, engine)
  local g = (rec.performance_cost or {}).gradient_accumulation_steps or 1
  local m = rec.micro_batch_num
  if g <= 1 or type(m) ~= "number" then return nil end
  return ("the estimate's %d pipeline schedules a step of %d micro-batches each (training.local_batch_size, " ..
    "TorchTitan's and NeMo AutoModel's passes): %s runs the step's %d micro-batches as one schedule, one bubble " ..
    "and one gradient reduction"):format(g, m // g, engine, math.tointeger(m) or m)
end

--- The engines' names as their files' notes say them.
M.ENGINE_TITLES = { megatron = "Megatron-LM", torchtitan = "TorchTitan", automodel = "AutoModel" }

--- The NOTE of an engine's launch file when the estimate is of another
-- framework (M.ENGINE_FRAMEWORK): whose overheads it priced, and how to
-- estimate the engine's own.
-- @tparam string engine an M.engines name
-- @tparam table tr the result's training inputs
-- @treturn string|nil the note's text; nil for the engine's own framework
--   and for MindFormers (none of apsearch's frameworks)
function M.framework_note(engine, tr)
  local own, fw = M.ENGINE_FRAMEWORK[engine], tr.framework or "megatron"
  if not own or fw == own then return nil end
  return ("the estimate is of framework = %s (its overheads); for %s's own, --set training.framework=%s, " ..
    "leaving out settings only %s takes"):format(tostring(fw), M.ENGINE_TITLES[engine], own, tostring(fw))
end

--- Frameworks built on an engine's code, by the name a user may give
-- `--launchable`, and what to give instead: NeMo 2's LLM collections and
-- Megatron-Bridge run Megatron-Core (whose arguments the megatron file
-- sets), NeMo AutoModel is automodel, MindFormers runs on MindSpore.
M.FRAMEWORK_HINTS = {
  nemo = 'NeMo\'s LLM recipes run Megatron-Core: give "megatron" (Megatron-LM\'s arguments) or, for ' ..
    'NeMo AutoModel, "automodel"',
  ["megatron-bridge"] = 'Megatron-Bridge runs Megatron-Core: give "megatron" (Megatron-LM\'s arguments)',
  ["megatron-lm"] = 'give "megatron"', ["megatron-core"] = 'give "megatron"', mcore = 'give "megatron"',
  ["nemo-automodel"] = 'give "automodel"', mindspore = 'MindFormers runs on MindSpore: give "mindformers"',
  titan = 'give "torchtitan"',
}

--- TorchTitan targets `--torchtitan-version` accepts: "head" (the Python
-- config module for the commit options.torchtitan cites, the default)
-- and the releases apsearch.launch.torchtitan_toml writes a TOML job
-- file for.
M.TORCHTITAN_HEAD = "head"

--- The TorchTitan target a `--torchtitan-version` value names.
-- @tparam string|nil v "head", a release tag ("v0.2.2") or the tag
--   without its "v" ("0.2.2"); nil: "head"
-- @treturn string "head" or the release tag
-- @raise `--torchtitan-version: torchtitan_version: must be head, v0.2.2 (got V)` (exit 2)
function M.torchtitan_version(v)
  if v == nil or v == M.TORCHTITAN_HEAD then return M.TORCHTITAN_HEAD end
  local releases = require("apsearch.launch.torchtitan_toml").releases
  for _, tag in ipairs(releases) do
    if v == tag or "v" .. tostring(v) == tag then return tag end
  end
  util.fail("--torchtitan-version", "torchtitan_version",
    "must be " .. M.TORCHTITAN_HEAD .. ", " .. table.concat(releases, ", "), v)
end

--- File name suffix of engine `e`'s launch file for a context: the
-- engine's, or `_torchtitan.toml` for a TorchTitan release.
-- @tparam table e an entry of M.engines
-- @tparam table c context (M.context)
-- @treturn string
function M.suffix(e, c)
  if e.name == "torchtitan" and c.torchtitan_version ~= M.TORCHTITAN_HEAD then return "_torchtitan.toml" end
  return e.suffix
end

-- A path made absolute (core.realpath), as the launch files name it: they
-- run from wherever the cluster starts them; a path that does not resolve
-- (a result.json read elsewhere) is kept as given.
local function absolute(path)
  local ok, core = pcall(require, "apsearch.core")
  return ok and core.realpath and core.realpath(path) or path
end

--- Everything a generator needs about one top-k strategy.
-- @tparam table result search result
-- @tparam table rec one of result.top_k_strategies
-- @treturn table `{rec, model, cluster, training, stages, layers (per
--   pipeline rank), recompute (per pipeline rank), devices_used, nodes,
--   data_parallel (dp x fsdp), header (comment lines), torchtitan_version
--   (result.inputs.torchtitan_version, else "head"), model_source (the
--   model's config file, result.inputs.model_source made absolute where
--   it resolves, or nil)}`
function M.context(result, rec)
  local inp = result.inputs or {}
  local ss = result.stage_summary and result.stage_summary[rec.rank]
  local stages = ss and ss.stages or {}
  local layers, recompute = {}, {}
  for i, st in ipairs(stages) do
    layers[i] = st.num_layers
    recompute[i] = st.recompute_layers or 0
  end
  local cl = inp.cluster or {}
  local per_node = cl.devices_per_node or 8
  local used = rec.devices_used or cl.num_devices or 1
  local mc, pc = rec.memory_cost or {}, rec.performance_cost or {}
  -- names go into comment lines of shell, TOML and YAML files: anything
  -- but printable text could end the comment (the core refuses control
  -- characters in names; this keeps the files safe whatever the input)
  local function safe(x) return (tostring(x):gsub("[%c\127]", "?")) end
  local dev = safe(type(cl.device) == "table" and cl.device.name or tostring(cl.device))
  local m, tr = inp.model or {}, inp.training or {}
  local g = pc.gradient_accumulation_steps or 1
  local passes = (g > 1 and type(rec.micro_batch_num) == "number") and
    (" (%d pipeline schedules of %d micro-batches: training.local_batch_size)"):format(g, rec.micro_batch_num // g)
    or ""
  local header = {
    string.format("apsearch rank %d of the top-%d: %s%s", rec.rank, #(result.top_k_strategies or {}),
      require("apsearch.search").describe_strategy(rec), passes),
    string.format("model %s on %d x %s (%d per node); global batch %s x seq %s, %s",
      safe(m.name), used, dev, per_node, tostring(tr.global_batch_size),
      tostring(tr.seq_length), tostring(tr.precision)),
    string.format("estimate (framework %s overheads): step %.3f s, %.0f tokens/s/GPU, MFU %.1f%%, " ..
      "peak %.2f GiB per GPU (limit %.2f GiB)", tostring(tr.framework), pc.step_time or 0,
      pc.tokens_per_s_per_gpu or 0, 100 * (pc.mfu or 0), (mc.total or 0) / 2 ^ 30, (mc.limit or 0) / 2 ^ 30),
  }
  return {
    rec = rec, model = m, cluster = cl, training = tr, stages = stages,
    layers = layers, recompute = recompute, devices_used = used,
    devices_per_node = per_node, nodes = math.max(1, math.ceil(used / per_node)),
    data_parallel = (rec.dp_degree or 1) * (rec.fsdp_degree or 1), header = header,
    torchtitan_version = inp.torchtitan_version or M.TORCHTITAN_HEAD,
    model_source = type(inp.model_source) == "string" and safe(absolute(inp.model_source)) or nil,
  }
end

--- True when every element of a list equals the first.
-- @tparam table list
-- @treturn boolean
function M.all_equal(list)
  for i = 2, #list do if list[i] ~= list[1] then return false end end
  return true
end

--- Layers per model chunk under a pipeline_split rule, the estimator's
-- own (src/core/pipeline.c split_rule, not a copy of it): embedding_loss,
-- Megatron's embedding-and-loss split (--account-for-embedding/loss-in-
-- pipeline-split, transformer_block.py get_num_layers_to_build: L + 2
-- units over S chunks, the first and last chunk giving one to the
-- embedding and the loss); fill_last, ceil(L / S) per chunk and the last
-- the rest, or, where that leaves the last none, the loss alone last and
-- the rest first (NVIDIA's DeepSeek-V3 layouts, NeMo 8cfedd72
-- pretrain_deepseek_v3.py map_pp_vp_to_layout; Et|(tt|)*30L at 8 x 4);
-- deepspeed_type.
-- @tparam integer L transformer layers
-- @tparam integer pp pipeline ranks
-- @tparam integer vpp model chunks per rank
-- @tparam string split the pipeline_split value
-- @treturn table layers per chunk in schedule order (nil when the rule
--   leaves a chunk or a rank without layers)
function M.rule_chunks(L, pp, vpp, split)
  return (require("apsearch.core").chunk_layers(L,
    { pp_degree = pp, vpp_degree = vpp, pipeline_split = split }))
end

--- Micro-batches of one pipeline schedule of a record: with pipeline
-- parallelism and training.local_batch_size L, a pass of L sequences,
-- L / micro_batch_size (the estimate's aps_step_passes, src/core/
-- pipeline.c: TorchTitan and AutoModel run the step as passes, gradient
-- accumulation around the schedule); else the step's nmb.
-- @tparam table tr the training table
-- @tparam table rec top-k record
-- @tparam integer nmb the step's micro-batches
-- @treturn integer
function M.pass_microbatches(tr, rec, nmb)
  local L, b = tr.local_batch_size or 0, rec.micro_batch_size or 1
  if L > 0 and (rec.pp_degree or 1) > 1 then return L // b end
  return nmb
end

--- What an engine other than Megatron-LM cannot run of a record's
-- microbatch_group_size: Megatron's --microbatch-group-size-per-virtual-
-- pipeline-stage regroups its own interleaved table (schedules.py
-- get_schedule_table @ d98e8a64); PyTorch pipelining's Interleaved1F1B
-- and MindFormers' 1f1b take no group size.  nil at the default (0 or
-- pp_degree) or outside interleaved 1F1B.
-- @tparam table rec top-k record
-- @treturn string|nil the note's text
function M.group_size_note(rec)
  local g = require("apsearch.format.common").field_value(rec, "microbatch_group_size")
  if g == nil or g == rec.pp_degree then return nil end
  return string.format("microbatch_group_size = %d: Megatron-LM's --microbatch-group-size-per-" ..
    "virtual-pipeline-stage; this engine's interleaved schedule runs groups of pp_degree = %d", g,
    rec.pp_degree)
end

--- True when the estimate split a record's layers by its pipeline_split
-- rule, the only split a framework's own split flags may stand for: a
-- stage_partition, a layer_offset or balancing replaces the rule
-- (src/core/pipeline.c aps_split_by_rule).
-- @tparam table rec top-k record
-- @treturn boolean
function M.split_by_rule(rec)
  return require("apsearch.core").split_by_rule(require("apsearch.search").strategy_of(rec))
end

--- A YAML file as a tree of keys in the order written, for the engines
-- that write YAML (MindFormers, AutoModel): `w.K(path, value, comment)`
-- adds the dotted key `path` (one of `known`, the engine's checked option
-- list), `w.N(kind, text)` a note; `M.yaml_lines` writes the tree.
-- @tparam table known set of the keys the engine may write
-- @tparam string engine its name, for the assertion on an unknown key
-- @treturn table `{K, N, notes, tree}`
function M.yaml_writer(known, engine)
  local w = { notes = {}, tree = { keys = {}, sub = {} } }
  local function node(path)
    local n = w.tree
    for seg in path:gmatch("[^%.]+") do
      if not n.sub[seg] then
        n.sub[seg] = { keys = {}, sub = {} }
        n.keys[#n.keys + 1] = { seg, nil, nil, true }
      end
      n = n.sub[seg]
    end
    return n
  end
  function w.K(path, value, comment)
    assert(known[path], engine .. ": key not in the list: " .. path)
    local parent, key = path:match("^(.*)%.([^%.]+)$")
    local n = parent and node(parent) or w.tree
    n.keys[#n.keys + 1] = { key or path, value, comment }
  end
  function w.N(kind, text) w.notes[#w.notes + 1] = kind .. ": " .. text end
  return w
end

--- Appends the lines of a yaml_writer tree to `out`, two spaces a level,
-- each value as `value_text` writes it and its comment after "  # ".
-- @tparam table tree `w.tree`
-- @tparam function value_text value -> YAML text
-- @tparam table out lines (appended)
function M.yaml_lines(tree, value_text, out)
  local function emit(n, indent)
    for _, kv in ipairs(n.keys) do
      if kv[4] then
        out[#out + 1] = string.rep("  ", indent) .. kv[1] .. ":"
        emit(n.sub[kv[1]], indent + 1)
      else
        out[#out + 1] = string.rep("  ", indent) .. kv[1] .. ": " .. value_text(kv[2]) ..
          (kv[3] and ("  # " .. kv[3]) or "")
      end
    end
  end
  emit(tree, 0)
  return out
end

--- Layers per model chunk in schedule order (chunk j on rank (j-1) mod p),
-- as the estimate built them (src/core/pipeline.c aps_chunk_layers): given
-- per chunk, the pipeline_split rule (M.split_by_rule), or each rank's
-- layers split evenly over its chunks.
-- @tparam table c context (M.context)
-- @treturn table chunks
function M.estimate_chunks(c)
  local r, L = c.rec, c.model.num_layers
  local p, v = r.pp_degree or 1, r.vpp_degree or 1
  local given = {}
  for _, n in ipairs(r.stage_partition or {}) do
    if n ~= 0 then given = r.stage_partition break end
  end
  if v > 1 and #given == p * v then
    local out = {}
    for j = 1, p * v do out[j] = given[j] end
    return out
  end
  if M.split_by_rule(r) then
    local chunks = M.rule_chunks(L, p, v, r.pipeline_split)
    if chunks then return chunks end
  end
  local out = {}
  for i = 1, p do
    for k = 0, v - 1 do out[k * p + i] = (c.layers[i] or 0) // v end
  end
  return out
end

--- The notes of a launch file that say it builds another job than the
-- one estimated: NOT WRITTEN (part of the job left out) and NOT
-- EXPRESSIBLE (the engine runs something else in its place).
-- @tparam table notes a renderer's notes
-- @treturn table the differing notes, in order
function M.differences(notes)
  local out = {}
  for _, n in ipairs(notes or {}) do
    local t = tostring(n)
    if t:match("^NOT WRITTEN") or t:match("^NOT EXPRESSIBLE") then out[#out + 1] = t end
  end
  return out
end

--- The engine named `name` (an entry of M.engines), or nil.
-- @tparam string name megatron, torchtitan, mindformers or automodel
-- @treturn table|nil
function M.engine(name)
  for _, e in ipairs(M.engines) do
    if e.name == name then return e end
  end
  return nil
end

--- The differences (M.differences) of engine `e`'s launch file for one
-- estimate, rendered as the file of a one-strategy result.
-- @tparam table e an entry of M.engines
-- @tparam table inputs the core context's inputs (ctx:inputs())
-- @tparam table est a full estimate (ctx:estimate)
-- @tparam[opt] string version the TorchTitan target (M.torchtitan_version;
--   default "head")
-- @treturn table the differing notes
function M.estimate_differences(e, inputs, est, version)
  local rec = { rank = 1, devices_used = est.devices_used, memory_cost = {},
    performance_cost = { gradient_accumulation_steps = est.gradient_accumulation_steps } }
  for k, v in pairs(est.strategy) do rec[k] = v end
  local stages = {}
  for i, st in ipairs(est.stages or {}) do
    stages[i] = { num_layers = st.num_layers, recompute_layers = st.recompute_layers }
  end
  if version and version ~= M.TORCHTITAN_HEAD then
    inputs = setmetatable({ torchtitan_version = version }, { __index = inputs })
  end
  local result = { inputs = inputs, top_k_strategies = { rec }, stage_summary = { { stages = stages } } }
  local _, notes = require(e.module).render(M.context(result, rec))
  return M.differences(notes)
end

--- Reason code of a strategy whose launch file, for the engine
-- `run --launchable` names, would build another job than the estimated one.
M.LAUNCH_DIFFERS = require("apsearch.search").LAUNCH_DIFFERS

--- Run order of the launchable rule: after every other rule (the
-- built-in ones are 10-100, a user rule's default 1000), as it renders a
-- launch file per feasible candidate.
M.LAUNCHABLE_ORDER = 10000

--- The rule `run --launchable NAME` adds: after the estimate, a feasible
-- candidate whose launch file for engine NAME has a NOT WRITTEN or NOT
-- EXPRESSIBLE line (M.differences) is filtered out with LAUNCH_DIFFERS
-- and that line as its message; an infeasible one keeps its own reason.
-- @tparam string name megatron, torchtitan, mindformers or automodel
-- @tparam[opt] string version the TorchTitan target (M.torchtitan_version)
-- @tparam[opt] string source the model's config file (policy model_source),
--   which a launch file may name (Megatron's heterogeneous layers)
-- @treturn table a rule (apsearch.rules.normalize, trusted)
-- @raise `--launchable: launchable: must be ... (got NAME)` (exit 2)
function M.launchable_rule(name, version, source)
  local e = M.engine(name)
  if not e then
    local names = {}
    for i, x in ipairs(M.engines) do names[i] = x.name end
    local problem = "must be " .. table.concat(names, ", ")
    local hint = type(name) == "string" and M.FRAMEWORK_HINTS[name:lower()]
    if hint then
      problem = problem .. "; " .. hint
    elseif type(name) == "string" then
      problem = require("apsearch.suggest").problem(problem, name, names)
    end
    util.fail("--launchable", "launchable", problem, name)
  end
  local inputs = setmetatable({}, { __mode = "k" }) -- per core context
  return require("apsearch.rules").normalize({
    name = "launchable", code = M.LAUNCH_DIFFERS, cheap = false, order = M.LAUNCHABLE_ORDER,
    description = "the " .. name .. " launch file builds the strategy as estimated",
    check = function(candidate, ctx, evaluation)
      if not evaluation.feasible then return true end
      local core = require("apsearch.rules").core_of(ctx) or ctx
      if not inputs[core] then
        inputs[core] = core:inputs()
        inputs[core].model_source = source
      end
      local differs = M.estimate_differences(e, inputs[core], core:estimate(candidate), version)
      if #differs == 0 then return true end
      return false, M.LAUNCH_DIFFERS, name .. ": " .. differs[1]
    end,
  }, "--launchable", { trusted = true })
end

-- A file that differs says so where it quotes the estimate.
local function mark_estimate(text, n)
  local said = n == 1 and "1 line below says" or ("%d lines below say"):format(n)
  return (text:gsub("estimate %(framework ", ("estimate of the ranked job, which this file does not " ..
    "build as estimated (%s where it differs; framework "):format(said), 1))
end

--- Norms in a Llama block: the two before attention and MLP
-- (attention_norm and ffn_norm in TorchTitan's torchtitan/models/llama3
-- block and MindFormers' mindformers/models/llama/llama_transformer.py
-- LLamaDecodeLayer).
M.LLAMA_BLOCK_NORMS = 2

--- Boolean model fields of a block a Llama builder does not build, and
-- what each engine's note says of them: `{field, note[, value]}` (value:
-- the field's value the entry is for), with `weights = true` and `what`
-- (a short name) where the Llama block would build other weights than
-- the model has (MindFormers then writes no architecture:
-- launch.mindspore.shape_lacks).
M.LLAMA_BLOCK_LACKS = {
  { "parallel_attn_mlp", "attention and MLP in parallel on one normed input (Cohere2): the Llama block runs " ..
    "them in sequence",
    weights = true, what = "one norm for attention and MLP" },
  { "mup_multipliers", "the embedding, residual, attention and logit multipliers (Granite, Cohere2): the Llama " ..
    "model has none" },
  { "rotary_interleaved", "interleaved RoPE pairs (rotary_interleaved, GLM-4): the Llama RoPE rotates the two " ..
    "halves of each head" },
  { "reordered_norm", "norms after attention and MLP (reordered_norm, OLMo 2): the Llama block normalises " ..
    "their inputs" },
  { "embedding_norm", "a norm on the word embeddings (embedding_norm, BLOOM): the Llama model has none",
    weights = true, what = "a norm on the word embeddings" },
  { "norm_weightless", "norms without a weight or bias (norm_weightless, OLMo): the Llama norms have a weight",
    weights = true, what = "norms without weights" },
  { "norm_zero_centered", "norm weights used as 1 + w (norm_zero_centered: Nemotron's LayerNorm1P, Qwen3-Next, Gemma 1-3): " ..
    "the Llama norms scale by w" },
  { "global_head_dim", "the full-attention layers' own head width (global_head_dim, Gemma 4): the Llama block " ..
    "has one head width",
    weights = true, what = "the full-attention layers' head width" },
  { "linear_attention", "Kimi Delta Attention layers (Kimi Linear, Kimi K3: linear_attention = kda): no model " ..
    "of this engine has them (apsearch prices them for NeMo AutoModel)", "kda",
    weights = true, what = "Kimi Delta Attention layers" },
  { "linear_attention", "LFM2's gated short convolutions (linear_attention = short_conv): no model of this " ..
    "engine has them (apsearch prices them for NeMo AutoModel)", "short_conv",
    weights = true, what = "short-convolution layers" },
  { "linear_attention", "MiniMax's lightning attention (linear_attention = lightning): no model of this engine " ..
    "has it (apsearch prices it for NeMo AutoModel)", "lightning",
    weights = true, what = "lightning-attention layers" },
  { "linear_attention", "Jamba's Mamba-1 mixers (linear_attention = mamba1): no model of this engine has them " ..
    "(apsearch prices them for NeMo AutoModel)", "mamba1",
    weights = true, what = "Mamba-1 layers" },
  { "nas_ffn_pattern", "heterogeneous layers (Llama-Nemotron NAS block_configs: attention left out of some " ..
    "layers, each layer's MLP width its own): the Llama block is the same on every layer",
    weights = true, what = "heterogeneous (NAS) layers" },
  { "msa_layers", "MiniMax-M3's block-sparse attention (msa_layers with their indexer): the Llama block " ..
    "attends densely and has no indexer",
    weights = true, what = "the block-sparse attention's indexer" },
  { "global_num_attention_heads", "the full-attention layers' own query heads (global_num_attention_heads, " ..
    "Laguna): the Llama block has one query-head count",
    weights = true, what = "the full-attention layers' query heads" },
  { "attention_head_gate", "a gate per query head on the attention output (attention_head_gate: softplus in " ..
    "Laguna, sigmoid in Step-3.5): the Llama block has no output gate",
    weights = true, what = "a gate per query head" },
  { "global_num_query_groups", "the full-attention layers' own KV heads (global_num_query_groups, Gemma 4): the " ..
    "Llama block has one KV-head count",
    weights = true, what = "the full-attention layers' KV heads" },
  { "global_k_eq_v", "V taken from K's projection on the full-attention layers (global_k_eq_v, Gemma 4): the " ..
    "Llama block projects V",
    weights = true, what = "V from K's projection" },
  { "moe_router_scales", "the router's input scale and per-expert scales (moe_router_scales, Gemma 4): the Llama " ..
    "model's router has neither",
    weights = true, what = "the router's scales" },
  { "attn_v_head_dim", "V heads narrower than Q/K's (attn_v_head_dim, MiMo-V2-Flash): the Llama block has one " ..
    "head width",
    weights = true, what = "V heads narrower than Q/K's" },
  { "window_attention_sinks", "attention sinks on the windowed layers only (window_attention_sinks, " ..
    "MiMo-V2-Flash): the Llama block has no sinks",
    weights = true, what = "attention sinks" },
  { "hc_mult", "DeepSeek-V4's layers (hyper-connections hc_mult, the CSA / HCA KV compressors and their " ..
    "indexer, the grouped output projection, the low-rank query, hash-routed MoE layers): no model of this " ..
    "engine has them; only the parallel settings are written",
    weights = true, what = "DeepSeek-V4's layers" },
}

--- True when the model has linear-attention layers (Gated DeltaNet or
-- Kimi Delta Attention: a linear_attention_period or a
-- linear_attention_pattern, src/core/gdn.c).
-- @tparam table m model
-- @treturn boolean
function M.has_linear_attention(m)
  return (m.linear_attention_period or 0) > 0 or (m.linear_attention_pattern or "") ~= ""
end

--- True when the model's linear layers are Gated DeltaNet (Qwen3-Next;
-- linear_attention absent or gated_deltanet), the one mixer Megatron-LM
-- builds; Kimi Delta Attention and LFM2's short convolution are
-- AutoModel's (M.LLAMA_BLOCK_LACKS says so for the other engines).
-- @tparam table m model
-- @treturn boolean
function M.has_gated_deltanet(m)
  return M.has_linear_attention(m) and (m.linear_attention or "gated_deltanet") == "gated_deltanet"
end

--- Megatron's dropout probability when dropout is on and the policy
-- gives none: TransformerConfig attention_dropout = hidden_dropout = 0.1
-- (megatron/core/transformer/transformer_config.py @ d98e8a64, the
-- --attention-dropout / --hidden-dropout defaults).
M.DEFAULT_DROPOUT = 0.1

--- The dropout probabilities the estimate ran with: training.
-- attention_dropout / hidden_dropout when given (a config.json's own,
-- apsearch.hf), else M.DEFAULT_DROPOUT where the core's recipe has that
-- dropout on (core.recipe: training.dropout, whose default is the
-- framework's; src/core/recipe.c aps_recipe_attention_dropout,
-- aps_recipe_hidden_dropout) and 0 where off.
-- @tparam table tr training table
-- @treturn number attention-probability dropout, in [0, 1]
-- @treturn number hidden (residual) dropout, in [0, 1]
-- @raise on a training table the core refuses (core.recipe)
function M.dropout_probs(tr)
  local r = require("apsearch.core").recipe(tr)
  local function p(given, on)
    if given ~= nil then return given end
    return on and M.DEFAULT_DROPOUT or 0
  end
  return p(tr.attention_dropout, r.attention_dropout), p(tr.hidden_dropout, r.hidden_dropout)
end

--- The NOT EXPRESSIBLE line of an engine whose model has no dropout, or
-- nil when the estimate ran without: the estimate counted the masks
-- (1 byte an element) and their kernels, the file trains without them.
-- @tparam table tr training table
-- @tparam string why what the engine's model has (or lacks)
-- @treturn string|nil
function M.dropout_lacks(tr, why)
  local a, h = M.dropout_probs(tr)
  if a <= 0 and h <= 0 then return nil end
  return ("dropout (attention %g, hidden %g) as estimated: %s; the file trains without it (less memory and " ..
    "time than estimated: its masks are counted)"):format(a, h, why)
end

--- Weights of a model's block and output layer a Llama builder
-- (TorchTitan's llama3, MindFormers' LlamaConfig) does not have: norms
-- beyond the block's two (Gemma 2's and GLM-4's sandwich norms after
-- attention and MLP), the output layer's bias (Phi-3.5-MoE's
-- lm_head_bias) and M.LLAMA_BLOCK_LACKS; each engine says so in a NOT
-- EXPRESSIBLE line.
-- @tparam table m model
-- @treturn table descriptions, one per feature (empty for Llama's block)
function M.llama_block_features(m)
  local out, per = {}, m.norms_per_layer or M.LLAMA_BLOCK_NORMS
  if per > M.LLAMA_BLOCK_NORMS then
    out[#out + 1] = ("%d norms per layer (sandwich norms after attention and MLP): the Llama block has %d, " ..
      "written with %d"):format(per, M.LLAMA_BLOCK_NORMS, M.LLAMA_BLOCK_NORMS)
  end
  if m.lm_head_bias then
    out[#out + 1] = ("the output layer's bias (lm_head_bias, %s parameters): the Llama output layer has none; " ..
      "written without"):format(tostring(m.vocab_size))
  end
  for _, f in ipairs(M.LLAMA_BLOCK_LACKS) do
    if m[f[1]] and (f[3] == nil or m[f[1]] == f[3]) then out[#out + 1] = f[2] end
  end
  return out
end

--- The frameworks whose estimate shards over the context-parallel ranks
-- with FSDP when CP is on, whatever the shard degree (src/core/profile.c
-- shard_over_cp: TorchTitan's dp_shard_cp mesh, ParallelDims.fsdp_enabled
-- = dp_shard or cp enabled; AutoModel's, distributed/mesh_utils.py).
M.SHARD_OVER_CP = { fsdp2 = true, automodel = true }

--- What an engine that shards over dp_shard x cp whenever CP is on
-- (TorchTitan, NeMo AutoModel) builds otherwise than a strategy estimated
-- under another framework, with cp > 1 and no FSDP degree: FSDP over the
-- CP ranks, where the estimate replicates the parameters (ZeRO-1/2: shards
-- the optimizer states, and the gradients) over them.
-- @tparam table r strategy record
-- @tparam string|nil framework training.framework of the estimate
-- @tparam string engine the engine's name, for the text
-- @treturn string|nil the NOT EXPRESSIBLE text, or nil (nothing differs)
function M.cp_sharding_lacks(r, framework, engine)
  local cp, z = r.cp_degree or 1, r.zero_stage or 0
  if cp == 1 or (r.fsdp_degree or 1) > 1 or z >= 3 or M.SHARD_OVER_CP[framework or "megatron"] then return nil end
  local kept = z == 0 and "replicated" or ("replicated, the optimizer states%s sharded (ZeRO-%d)"):format(
    z == 2 and " and gradients" or "", z)
  return ("context parallelism without an FSDP degree (cp_degree = %d, fsdp_degree = 1): %s shards parameters, " ..
    "gradients and optimizer states with FSDP over the CP ranks whenever CP is on, where the estimate (framework " ..
    "%s) keeps the parameters %s; estimate with training.framework = fsdp2 for what the file runs"):format(
    cp, engine, framework or "megatron", kept)
end

--- The check by which each engine that shards whole KV heads over the TP
-- ranks refuses fewer heads than ranks, which Megatron-Core replicates
-- (attention.py l.353-379 @ d98e8a64) and an estimate of framework
-- megatron prices so.
M.KV_HEADS_RULE = {
  TorchTitan = "the decoder's validation requires tensor_parallel_degree to divide n_kv_heads " ..
    "(torchtitan/models/common/decoder.py l.195-199 @ b5bcd76c)",
  AutoModel = "validate_tp_mesh asserts num_key_value_heads % tp_size == 0 " ..
    "(nemo_automodel/components/distributed/parallelizer.py l.1694 @ 36044ad3)",
  MindFormers = "TransformerConfig requires num_query_groups % tensor_model_parallel_size == 0 " ..
    "(mindformers/parallel_core/transformer_config.py l.449 @ fd4deebc; the legacy LLamaAttention checks " ..
    "n_kv_head the same way, models/llama/llama_transformer.py l.187)",
}

--- What an engine that shards whole KV heads builds otherwise than an
-- estimate with fewer KV heads than TP ranks: with num_query_groups, the
-- check of M.KV_HEADS_RULE refuses to start; with only a global attention
-- shape's (Gemma 4's full-attention layers: global_num_query_groups) the
-- check reads the other layers' heads, and those layers' K and V are not
-- replicated as estimated.
-- @tparam table m model (num_query_groups, global_num_query_groups)
-- @tparam table r strategy record (tp_degree)
-- @tparam string engine a key of M.KV_HEADS_RULE
-- @treturn string|nil the NOT EXPRESSIBLE text, or nil (the TP degree
--   divides every kind's KV heads)
function M.kv_heads_lacks(m, r, engine)
  local tp = r.tp_degree or 1
  local k, g = m.num_query_groups or 0, m.global_num_query_groups or 0
  if k > 0 and k < tp then
    return ("num_query_groups = %d with tp_degree = %d: the estimate replicates the KV heads over the TP ranks, " ..
      "as Megatron-Core does; %s, so the file does not start"):format(k, tp, M.KV_HEADS_RULE[engine])
  elseif g > 0 and g < tp then
    return ("global_num_query_groups = %d with tp_degree = %d: the estimate replicates the full-attention layers' " ..
      "KV heads over the TP ranks, as Megatron-Core does; %s shards KV heads and does not replicate them (its " ..
      "check reads the other layers' num_key_value_heads), so those layers are not the job estimated"):format(g,
      tp, engine)
  end
  return nil
end

--- What a Llama-style decoder block of an engine (SwiGLU gated by SiLU,
-- RMSNorm without a bias, RoPE in every attention layer, causal attention
-- over the whole context, attention mixers only) lacks of a model: each
-- part as a short phrase with the engine's reason in parentheses, then
-- M.llama_block_features and M.llama4_features.  Read by TorchTitan's
-- builders (torchtitan.block_lacks) and MindFormers' use_legacy False
-- models (mindspore_mcore.family).
-- @tparam table m model
-- @tparam integer|nil seq training seq_length (chunked attention counts
--   beyond its chunk, M.llama4_features; nil: unknown)
-- @tparam table why the engine's reason per part: mlp, glu, norm,
--   norm_bias, window, positions, mamba, gdn
-- @tparam[opt] table has model fields of M.llama4_features the engine
--   can express or says itself (skipped)
-- @treturn table phrases (empty: none)
function M.decoder_block_lacks(m, seq, why, has)
  local out = {}
  local function W(part, what) out[#out + 1] = what .. " (" .. why[part] .. ")" end
  if m.mlp and m.mlp ~= "swiglu" then W("mlp", tostring(m.mlp) .. " MLP") end
  if (m.glu_activation or "silu") ~= "silu" then W("glu", tostring(m.glu_activation) .. "-gated MLP") end
  if m.norm and m.norm ~= "rmsnorm" then W("norm", tostring(m.norm)) end
  if m.norm_bias then W("norm_bias", "norm biases") end
  if (m.sliding_window or 0) > 0 then W("window", "a sliding window") end
  if m.position_embedding and m.position_embedding ~= "rope" then
    W("positions", tostring(m.position_embedding) .. " positions")
  end
  if m.hybrid_layer_pattern then W("mamba", "hybrid Mamba-2 layers") end
  if M.has_gated_deltanet(m) then W("gdn", "Gated DeltaNet layers") end
  for _, what in ipairs(M.llama_block_features(m)) do out[#out + 1] = what end
  for _, what in ipairs(M.llama4_features(m, seq or 0, has)) do out[#out + 1] = what end
  return out
end

--- Llama 4's attention and router features present in a model, for the
-- engines that lack them (TorchTitan, MindFormers: each says so in a NOT
-- EXPRESSIBLE line); chunked attention only when the sequence is longer
-- than the chunk (shorter, it is causal attention).
-- @tparam table m model
-- @tparam integer seq training.seq_length (0: unknown)
-- @tparam[opt] table has model fields the engine can express (skipped)
-- @treturn table descriptions, one per feature (empty for other models)
function M.llama4_features(m, seq, has)
  has = has or {}
  local c = m.attention_chunk_size or 0
  local all = {
    { "qk_l2_norm", m.qk_l2_norm, "weightless L2 Q/K norms on the RoPE layers (qk_l2_norm)" },
    { "nope_layer_period", (m.nope_layer_period or 0) > 0,
      ("no RoPE on every %d-th layer (nope_layer_period)"):format(m.nope_layer_period or 0) },
    { "attention_chunk_size", c > 0 and (seq or 0) > c,
      ("chunked attention (%d-token chunks, attention_chunk_size) at seq_length %d"):format(c, seq or 0) },
    { "moe_router_sigmoid", m.moe_router_sigmoid, "sigmoid router scores without an expert bias (moe_router_sigmoid)" },
    { "moe_router_input_probs", m.moe_router_input_probs,
      "the routing weight on the expert input (moe_router_input_probs)" },
  }
  local out = {}
  for _, f in ipairs(all) do
    if f[2] and not has[f[1]] then out[#out + 1] = f[3] end
  end
  return out
end

--- Renders every launch config of a result.
-- @tparam table result search result
-- @treturn table array of `{rank, engine, name (file name), text,
--   notes (NOT EXPRESSIBLE / APPROXIMATE lines), differs (M.differences)}`
function M.render_all(result)
  return M.render_ranks(result, 1, #(result.top_k_strategies or {}))
end

--- `render_all` for the top-k strategies of ranks first..last (the files
-- of a set are rendered in parts by worker processes, apsearch.cli).
-- @tparam table result search result
-- @tparam integer first
-- @tparam integer last
-- @tparam[opt] string only one engine's files only (an M.engines name)
-- @treturn table as render_all
function M.render_ranks(result, first, last, only)
  local out = {}
  local top = result.top_k_strategies or {}
  for r = first, last do
    local rec = top[r]
    local c = M.context(result, rec)
    for _, e in ipairs(M.engines) do
      if only and e.name ~= only then goto next_engine end
      local text, notes = require(e.module).render(c)
      local differs = M.differences(notes)
      if #differs > 0 then text = mark_estimate(text, #differs) end
      out[#out + 1] = { rank = rec.rank, engine = e.name, differs = differs,
        name = M.file_name(result, rec, e), text = text, notes = notes }
      ::next_engine::
    end
  end
  return out
end

--- The name of a strategy's launch file for an engine (known before it is
-- rendered: a set lists its files before writing them).
-- @tparam table result search result
-- @tparam table rec one of result.top_k_strategies
-- @tparam table e one of M.engines
-- @treturn string e.g. `rank3_megatron.sh`
function M.file_name(result, rec, e)
  local version = (result.inputs or {}).torchtitan_version or M.TORCHTITAN_HEAD
  return string.format("rank%d%s", rec.rank, M.suffix(e, { torchtitan_version = version }))
end

--- Writes the launch configs of a result into `dir` (created), each
-- atomically; shell scripts are made executable.
-- @tparam string dir
-- @tparam table result
-- @treturn table the files (`render_all` entries with `path`)
-- @raise `--out: dir: cannot write <path>: <error>`
function M.write(dir, result)
  local files = M.render_all(result)
  if #files == 0 then return files end
  local ok, err = util.mkdir_p(dir)
  if not ok then util.fail("--out", "dir", "cannot create directory: " .. tostring(err), dir) end
  for _, f in ipairs(files) do
    f.path = util.join_path(dir, f.name)
    local wok, werr = util.write_atomic(f.path, f.text)
    if not wok then util.fail("--out", "dir", "cannot write " .. f.path .. ": " .. tostring(werr), dir) end
  end
  M.make_executable(dir, files)
  return files
end

--- Makes the shell scripts among written launch files executable.
-- @tparam string dir their directory
-- @tparam table files `render_all` entries
function M.make_executable(dir, files)
  local scripts = {}
  for _, f in ipairs(files) do
    if f.name:match("%.sh$") then
      scripts[#scripts + 1] = "'" .. util.join_path(dir, f.name):gsub("'", "'\\''") .. "'"
    end
  end
  if #scripts > 0 then os.execute("chmod +x " .. table.concat(scripts, " ") .. " 2>/dev/null") end
end

return M
