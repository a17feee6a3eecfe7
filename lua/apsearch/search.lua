--- The search driver: enumerate, filter, estimate, rank, report.
--
-- For each candidate of the space (apsearch.space):
--
-- 1. cheap rules (rules/*.lua with `cheap = true`, then the policy's own):
--    a failure is counted as filtered early under its reason code, with the
--    first such strategy kept as the example;
-- 2. `ctx:evaluate(candidate)` (the C estimator, cheap form);
-- 3. the other rules (memory_limit) read the evaluation; a failure, or an
--    infeasible evaluation, is counted as infeasible under its code;
-- 4. feasible candidates compete for the top-k under the objective
--    (a bounded heap: only the k best are kept, each copied once); the
--    Pareto front of (step time, peak memory) and the best candidate per
--    dp/tp/pp/cp degree are kept on the way (charts 6 and 7), with a
--    bounded sample of the feasible points (chart 7) and, for the pareto
--    objective, the candidates that can be in its first k layers; every
--    candidate is handed to the sink `opts.candidates` as it is decided
--    (candidates.csv, streamed): no table of all candidates is kept.
--
-- Then `ctx:estimate()` runs for the top-k only, the top-k is re-estimated
-- with the inter-node bandwidth scaled (chart 8, new core contexts), and
-- the result table of shared/design/OUTPUTS.md is built.  The Lua side never computes a byte or
-- a second: every number comes from the core.
--
-- Fast paths: when the seven built-in core-check rules (degrees, zero,
-- devices, cp, tp, batch, pp) are all loaded unmodified, one
-- `ctx:check("all", candidate)` replaces seven calls; it runs the same
-- checks in the same order (src/core/check.c aps_check_all).  When, in
-- addition, the policy adds no cheap rule of its own, even that call is
-- folded into `ctx:evaluate`, which runs aps_check_all before estimating
-- and returns at the check's cost with its reason code and message: such a
-- result counts as filtered early, exactly as the check would have.  With
-- the fast checks, the walk does not enumerate the candidates a check
-- rejects whatever their inner levels (M.block_pruner): whole blocks and
-- subtrees are counted per reason.  The counts, examples and messages are
-- identical in every mode (tests/lua/search_spec.lua checks this).
-- @module apsearch.search
local util = require "apsearch.util"
local schema = require "apsearch.schema"
local space_mod = require "apsearch.space"
local intervals = require "apsearch.intervals"

-- strategy fields that say how a candidate runs (M.run_key); the split,
-- recompute counts and micro-batch count enter through the evaluation
local RUN_FIELDS = {}
do
  local how = { stage_partition = true, layer_offset = true, recompute_num_layers = true,
    micro_batch_num = true, balance_stages = true, auto_recompute = true,
    allow_idle_devices = true, layer_recompute = true, pipeline_split = true }
  for _, f in ipairs(space_mod.fields) do
    if not how[f] then RUN_FIELDS[#RUN_FIELDS + 1] = f end
  end
  -- the fields only some candidates carry (MoE models; recompute_modules
  -- when searched) change how a candidate runs as much as the others: two
  -- candidates that differ in ep_degree are two strategies
  for _, f in ipairs(space_mod.moe_fields) do RUN_FIELDS[#RUN_FIELDS + 1] = f end
  RUN_FIELDS[#RUN_FIELDS + 1] = "recompute_modules"
end
local rules_mod = require "apsearch.rules"
local objectives = require "apsearch.objectives"

-- elapsed times are wall time (CLOCK_MONOTONIC, apsearch.core.monotime):
-- os.clock counts the process's CPU time, which is not what a user waits
local function wall_clock() return require("apsearch.core").monotime() end

local M = {}

--- Result schema version (bumped on incompatible changes).
M.schema_version = 1

local builtin_cache = {}

--- Loads (once per directory) the built-in rules of `<root>/rules`.
-- @tparam[opt] string dir rules directory (default `<root>/rules`)
-- @treturn table array of rules
function M.builtin_rules(dir)
  dir = dir or util.join_path(util.root(), "rules")
  local r = builtin_cache[dir]
  if not r then
    r = rules_mod.load_dir(dir)
    builtin_cache[dir] = r
  end
  return r
end

--- The command-line option a built policy's (policy.built) top-level
-- table comes from, for its errors (M.context).
M.BUILT_FROM = { model = "--model", cluster = "--cluster" }

--- Creates the estimator context for a normalized policy.
-- @tparam table policy normalized policy (apsearch.policy)
-- @treturn userdata ctx
-- @raise `<file>: <table>.<field>: <problem> (got <value>)` when the core
--   refuses the model, cluster or training config (`--model: ...`,
--   `--cluster: ...` for a policy built from those options)
function M.context(policy)
  local core = require "apsearch.core"
  local ok, ctx = pcall(core.context, policy.model, policy.cluster, policy.training)
  if not ok then
    local msg = tostring(ctx)
    local label = policy.file or "policy"
    -- the field the message starts with ("training.x: ..." or
    -- "training.x with precision bf16: ...")
    local path = msg:match("^([%w_%.%[%]]+)[:%s]")
    local alias = path and policy.aliases and policy.aliases[path]
    if alias then msg, path = alias .. msg:sub(#path + 1), alias end
    -- (the overrides a result recorded are not this run's options)
    local ovs = not policy.inputs_recorded and policy.overrides or {}
    for i = #ovs, 1, -1 do
      local ov = ovs[i]
      local top = ov.key:match("^[^%.]+")
      if path and (path == ov.key or path:match("^[^%.]+") == top and ov.kind == "set") then
        label = ov.flag or ("--" .. ov.kind)
        break
      end
    end
    -- a policy built from --model / --cluster: its model and cluster are
    -- those options' (the label is otherwise its `apsearch init` command)
    if policy.built and label == policy.file and path then
      label = M.BUILT_FROM[path:match("^[^%.]+")] or label
    end
    if msg:match("^NotImplemented") then error(msg, 0) end
    error(label .. ": " .. msg, 0)
  end
  return ctx
end

-- first candidate with a reason code (its index `at`): a new summary
-- entry, numbered in `reasons` (the per-candidate record stores that number)
local function count_reason(summary, reasons, code, cand, msg, phase, rule, at)
  local id = #reasons + 1
  reasons[id] = code
  local e = {
    count = 1, phase = phase, rule = rule,
    example = space_mod.copy(cand), message = msg, id = id, code = code, at = at,
  }
  summary[code] = e
  return e
end

local function sorted_codes(summary, phase)
  local codes = {}
  for code, e in pairs(summary) do
    if phase == nil or e.phase == phase then codes[#codes + 1] = code end
  end
  table.sort(codes, function(a, b)
    local ca, cb = summary[a].count, summary[b].count
    if ca ~= cb then return ca > cb end
    return a < b
  end)
  return codes
end

local function gib(bytes) return bytes / 2 ^ 30 end

-- A custom score objective's direction (true: higher is better), nil for
-- the built-ins (their names say it) and for `better` comparators.
-- The notes of a policy's warnings ("note: ..." lines: what the model's
-- config has that no estimate term prices, the vision tower not counted,
-- the MTP modules not trained, ...), without their prefix, for
-- result.json's inputs.notes and the report; nil when there are none.
local function import_notes(warnings)
  local out = util.array()
  for _, w in ipairs(warnings or {}) do
    local text = type(w) == "string" and w:match("^note: (.*)$")
    if text then out[#out + 1] = text end
  end
  return #out > 0 and out or nil
end

local function custom_objective_maximize(obj)
  if type(obj) ~= "table" then return nil end
  return obj.maximize
end

--- One-line description of a strategy for logs.  The pipeline schedule
-- is named (`schedule=dualpipev`) when the strategy pipelines with another
-- than the default 1F1B, so strategies that differ only in it read apart;
-- the virtual stages whenever it pipelines (`pp=2 vpp=1`).
-- @tparam table s strategy (candidate or normalized)
-- @treturn string e.g. `dp=2 fsdp=4 tp=1 pp=1 cp=1 mbs=1 recompute=none`
function M.describe_strategy(s)
  local parts = {
    string.format("dp=%s fsdp=%s tp=%s", s.dp_degree, s.fsdp_degree, s.tp_degree),
  }
  -- on / off, as the table's "same for every row" line spells it
  if s.tp_degree and s.tp_degree > 1 then parts[#parts + 1] = "sp=" .. (s.sequence_parallel and "on" or "off") end
  parts[#parts + 1] = string.format("pp=%s", s.pp_degree)
  -- vpp=1 too where it pipelines: pasted as --fix flags, a line without
  -- vpp= leaves the virtual stages free (a breaker's find)
  if s.vpp_degree and (s.vpp_degree > 1 or (s.pp_degree or 1) > 1) then
    parts[#parts + 1] = "vpp=" .. s.vpp_degree
  end
  if (s.pp_degree or 1) > 1 and s.pp_schedule and s.pp_schedule ~= "1f1b" then
    parts[#parts + 1] = "schedule=" .. tostring(s.pp_schedule)
  end
  if (s.microbatch_group_size or 0) > 0 then parts[#parts + 1] = "mbgroup=" .. s.microbatch_group_size end
  parts[#parts + 1] = string.format("cp=%s", s.cp_degree)
  if s.cp_degree and s.cp_degree > 1 then parts[#parts + 1] = "cp_comm=" .. tostring(s.cp_comm_type) end
  -- zero=0 too where the ranks replicate (fsdp 1): a line without zero=
  -- is estimated at the first stage the space lists (cli.lua), not at 0
  if s.zero_stage and (s.zero_stage > 0 or (s.fsdp_degree or 1) <= 1) then
    parts[#parts + 1] = "zero=" .. s.zero_stage
  end
  -- mixture of experts (set for MoE models only); the dispatcher always
  -- (a line without it is estimated at the framework's default, NeMo
  -- AutoModel's not alltoall; a record leaves out the core's default,
  -- alltoall: lconvert.c FT_OENUM), a capacity factor when it drops
  -- tokens (without it: dropless)
  if s.ep_degree then
    parts[#parts + 1] = "ep=" .. s.ep_degree
    if s.etp_degree then parts[#parts + 1] = "etp=" .. s.etp_degree end
    parts[#parts + 1] = "dispatcher=" .. tostring(s.moe_token_dispatcher or "alltoall")
  end
  if (s.moe_capacity_factor or 0) > 0 then parts[#parts + 1] = "capacity=" .. s.moe_capacity_factor end
  if s.fsdp_degree and s.fsdp_degree > 1 and s.reshard_after_forward == false then
    parts[#parts + 1] = "reshard=false"
  end
  parts[#parts + 1] = string.format("mbs=%s", s.micro_batch_size)
  if s.micro_batch_num and s.micro_batch_num > 0 then parts[#parts + 1] = "mbn=" .. s.micro_batch_num end
  parts[#parts + 1] = "recompute=" .. tostring(s.layer_recompute)
  -- what else tells two recompute strategies apart: the selective modules
  -- (a line without them is estimated at the core's core_attn) and
  -- Megatron's uniform method (without it: block)
  if s.layer_recompute == "selective" and s.recompute_modules then
    parts[#parts + 1] = "recompute_modules=" .. tostring(s.recompute_modules)
  end
  if s.layer_recompute == "full" and s.recompute_method == "uniform" then
    parts[#parts + 1] = "recompute_method=uniform"
  end
  -- a ranked record's resolved per-stage recompute and split (balanced or
  -- auto), spelt as --strategy takes them, so that the line re-estimates
  -- the job it ranked
  local rl = s.recompute_num_layers
  if s.layer_recompute == "full" and type(rl) == "number" and rl >= 0 then
    parts[#parts + 1] = "recompute_num_layers=" .. rl
  elseif s.layer_recompute == "full" and type(rl) == "table" and #rl > 0 then
    -- the core's -1 (every layer of the stage) as the stage's layer count
    -- from the record: a placeholder never reaches an output (a new user
    -- saw recompute_num_layers=-1); left out when the record has no stages
    local per, out = s.memory_cost and s.memory_cost.per_stage or {}, {}
    for i, v in ipairs(rl) do
      out[i] = v >= 0 and v or (per[i] and per[i].num_layers)
      if not out[i] then out = nil break end
    end
    if out then parts[#parts + 1] = "recompute_num_layers=" .. table.concat(out, ":") end
  end
  -- (a partition of zeros is none: the split rule's)
  local sp = s.stage_partition
  local given = false
  for _, v in ipairs(type(sp) == "table" and sp or {}) do given = given or v ~= 0 end
  if (s.pp_degree or 1) > 1 and given then
    parts[#parts + 1] = "stage_partition=" .. table.concat(sp, ":")
  end
  return table.concat(parts, " ")
end

--- Identity of a candidate as it runs: every strategy field but how the
-- split, the recompute and the micro-batch count were written (and the
-- settings of a dimension that is off), plus the evaluation's `layout`
-- (the resolved recompute mode, micro-batch count and per-stage layers and
-- recomputed layers).
-- @tparam table cand candidate strategy
-- @tparam table ev its ctx:evaluate() result
-- @treturn string
function M.run_key(cand, ev)
  local parts = { tostring(ev.layout) }
  for i, f in ipairs(RUN_FIELDS) do
    -- settings of a dimension that is off do not change the run
    parts[i + 1] = space_mod.moot(cand, f) and "-" or tostring(cand[f])
  end
  return table.concat(parts, " ")
end

--- Fraction of device memory above which a strategy is flagged
-- `near_capacity`: PyTorch's caching allocator then frees and retries
-- allocations, which slows a step in a way apsearch does not model.  The
-- published runs put the line here: MosaicML's MPT-30B at 8K, estimated at
-- 0.92-0.93 of device memory, ran 28-39 % slower than estimated, while
-- their runs estimated at 0.90 or less matched within 17 %
-- (docs/accuracy.md).  A warning only; the estimate is unchanged.
M.near_capacity_fraction = 0.9

--- Estimated but infeasible candidates kept, the least memory first
-- (`result.closest_infeasible`: `{index, mem_peak, mem_limited,
-- step_time, reason, strategy}`, mem_limited the figure the memory limit
-- bounds, by which they are ordered), for the report's diagnosis of a
-- search with no feasible strategy; bounded so the search state stays
-- small.
M.closest_keep = 20

--- Reason code of the `run --launchable` rule (apsearch.launch
-- launchable_rule): a strategy that fits, whose launch file differs.
M.LAUNCH_DIFFERS = "LAUNCH_DIFFERS"

--- Most pipeline ops kept of the timeline the report draws
-- (`stage_summary[r].timeline`, ctx:timeline): all of them when they fit,
-- else those of a window at the start of the step and one at its end
-- (the fill and the drain), half each.  2000 holds every op of a p = 8,
-- v = 2, m = 32 1F1B step (8 x 128 ops) and keeps result.json and the
-- report within a few hundred kB whatever p v m.
M.timeline_max_ops = 2000

--- Most ops per pipeline rank the timeline keeps (times p, capped by
-- `timeline_max_ops`): a row of chart 9 is about 1000 px wide, so 240 ops
-- leave about 4 px each, two panels of 120 when the step is cut.  Past
-- that the chart shows the fill (until every rank runs its steady state)
-- and the drain, each within half the budget.
M.timeline_ops_per_rank = 240

-- builds one top-k record from ctx:estimate() (training: the run's, for
-- the peak the limit bounds)
local function topk_record(rank, est, capacity, training)
  local s = est.strategy or {}
  local rec = { rank = rank }
  for _, f in ipairs(space_mod.fields) do rec[f] = s[f] end
  for k, v in pairs(s) do if rec[k] == nil then rec[k] = v end end
  rec.micro_batch_num = est.micro_batch_num
  local per_stage = util.array()
  for i, st in ipairs(est.stages or {}) do
    per_stage[i] = {
      stage = st.stage, first_layer = st.first_layer, num_layers = st.num_layers,
      mtp_layers = st.mtp_layers,
      recompute_layers = st.recompute_layers,
      total = st.memory_breakdown and st.memory_breakdown.total,
      allocated = st.mem_allocated, reserved = st.mem_reserved,
    }
  end
  -- total: device memory in use (what the device's capacity bounds);
  -- allocated and reserved: PyTorch's peaks (src/core/memory.c
  -- allocator_peaks); limit_kind: the one the limit bounds
  rec.memory_cost = {
    total = est.mem_peak, limit = est.mem_limit, worst_stage = est.worst_stage,
    allocated = est.mem_allocated, reserved = est.mem_reserved, device = est.mem_peak,
    limit_kind = require("apsearch.format.common").limited_kind(training),
    breakdown = est.memory_breakdown, per_stage = per_stage,
    near_capacity = capacity ~= nil and est.mem_peak > M.near_capacity_fraction * capacity,
  }
  rec.performance_cost = {
    step_time = est.step_time, breakdown = est.performance_breakdown,
    tokens_per_s = est.tokens_per_s, tokens_per_s_per_gpu = est.tokens_per_s_per_gpu,
    model_tflops_per_gpu = est.model_tflops_per_gpu, mfu = est.mfu, hfu = est.hfu,
    model_flops_per_step = est.model_flops_per_step,
    hardware_flops_per_step = est.hardware_flops_per_step,
    -- what the CUDA graphs the step is priced with capture (ctx:estimate)
    cuda_graph_scope = est.cuda_graph_scope,
    -- pipeline schedules per step (training.local_batch_size), when more
    -- than one
    gradient_accumulation_steps = (est.gradient_accumulation_steps or 1) > 1 and
      est.gradient_accumulation_steps or nil,
  }
  rec.devices_used = est.devices_used
  rec.feasible = est.feasible
  rec.filter_reason = nil
  return rec
end

--- The score of the ranking objective for one top-k entry (the record's
-- `objective_value`, docs/outputs.md): step_time in seconds, memory in
-- bytes of peak, throughput in tokens/s per GPU, the composite's score
-- (sum of weight x log of each term, lower is better), the Pareto front
-- number (1 = on the front) for pareto, and a user objective's `score`;
-- nil for a user objective with `better` only (it has no score).
-- @tparam table info objectives.get's info
-- @tparam string name the objective's name
-- @tparam table entry the heap entry (an evaluation)
-- @tparam[opt] table layer_of index -> Pareto front number
-- @treturn number|nil
function M.objective_value(info, name, entry, layer_of)
  if info.kind == "composite" then return objectives.composite_score(info.weights, entry) end
  if info.kind == "pareto" then return layer_of and layer_of[entry.index] end
  if entry.objective_value ~= nil then return entry.objective_value end
  if name == "step_time" then return entry.step_time end
  if name == "memory" then return entry.mem_peak end
  if name == "throughput" then return entry.tokens_per_s_per_gpu end
  return nil
end


--- The candidate space a policy's search walks (apsearch.space.new with the
-- inputs that shape it: devices, layers, framework, experts, and whether
-- the core prices full recompute for this model and framework).
-- @tparam table policy normalized policy
-- @tparam table inputs the context's inputs (ctx:inputs())
-- @tparam userdata ctx the core context: it says whether full recompute
--   runs (without that, "none" would be walked as full recompute of no
--   layer, which a refused full recompute then filters)
-- @treturn table the space object
function M.space_of(policy, inputs, ctx)
  -- the probe of full recompute: a strategy the training's own settings
  -- admit (the partial distributed optimizer needs ZeRO-1 over a data-
  -- parallel group its instances divide: src/core/check.c)
  local probe = { layer_recompute = "full" }
  local inst = inputs.training.distributed_optimizer_instances or 0
  if inst > 1 then probe.zero_stage, probe.dp_degree = 1, inst end
  return space_mod.new(policy.search_space, {
    num_devices = inputs.cluster.num_devices,
    allow_idle_devices = policy.constraints.allow_idle_devices,
    num_layers = inputs.model.num_layers, framework = inputs.training.framework,
    training = inputs.training, num_experts = inputs.model.num_experts,
    topk_shared = space_mod.shares_topk(inputs.model),
    full_recompute = ctx:check("framework", probe, false),
  })
end

--- Runs a search.
-- @tparam table policy normalized policy (apsearch.policy.from_table/load)
-- @tparam[opt] table opts
--   `rules_dir` (default `<root>/rules`);
--   `fast_checks` (default true: the built-in core-check rules run as one
--   core call -- ctx:evaluate itself when the policy has no other cheap
--   rule; "check": always a separate ctx:check("all"); false: one rule at
--   a time);
--   `enumerate` ("full": every candidate walked, no block or subtree
--   counted at once -- the reference the fast path is tested against);
--   `progress` (function(done, total, final) called every 65,536
--   candidates, and once with final = true when the walk ends);
--   `sensitivity` (default true: chart 8's re-estimates of the top-k);
--   `candidates` (a sink `{mode = "all" | "feasible", row = function(index,
--   entry, step_time, mem_peak, cand)}`: `row` is called for every
--   candidate (`all`, in enumeration order, the fast path's pruned blocks
--   walked) or every feasible one, as it is decided; `entry` is its reason
--   (`{code, phase, ...}`, nil when feasible), step time and peak memory
--   nil when filtered early; `cand` is reused: copy it to keep it; with
--   `jobs` > 1 a sink without `split` (format.csv.candidate_writer's
--   `out`) makes the walk one process's);
--   `scatter_points` (default M.scatter_points; 0: no sample, an empty
--   `result.scatter` -- what runs that write no report pass); `jobs` (default 1: the
--   walk in this process; N: split across N worker processes, at most one
--   per `min_chunk` candidates, default M.min_chunk_candidates -- the
--   result is the same, candidates' rows included); `timeline_max_ops`
--   (default M.timeline_max_ops; 0: no timeline), `timeline_ops_per_rank`
--   (default M.timeline_ops_per_rank); `continue_run` (true: the scripts'
--   run-wide limits go on counting from the search before, as the fit
--   probes of a run do; default: they start from 0, sandbox.reset_run)
-- @treturn table the result (shared/design/OUTPUTS.md, docs/outputs.md):
--   schema_version, status, top_k_strategies, all_candidate_summary,
--   infeasible_summary, memory_breakdown, performance_breakdown,
--   stage_summary, pareto_front, trends, bandwidth_sensitivity, search_log,
--   inputs; and `scatter`, chart 7's points (not JSON; see M.scatter_mt)
-- @raise on a core refusal of the inputs (see `context`) or an error raised
--   by a rule or objective function (with `jobs`, the one the walk meets
--   first); `search: worker process N was killed
--   by signal S before it finished`
function M.run(policy, opts)
  opts = opts or {}
  -- the run-wide script limits count this search's calls (and its --jobs
  -- workers'), not the process's before it; a search that is part of a
  -- run (the fit probes after a run found nothing) continues its count
  if not opts.continue_run then require("apsearch.sandbox").reset_run() end
  local t0 = wall_clock()
  local ctx = M.context(policy)
  local inputs = ctx:inputs()

  -- rules
  local all_rules = rules_mod.merge(M.builtin_rules(opts.rules_dir), policy.constraints.rules)
  local core_set = {}
  for _, r in ipairs(all_rules) do
    if r.builtin and r.cheap and r.core_check == r.name then core_set[r.name] = r end
  end
  local fast = opts.fast_checks ~= false
  for _, name in ipairs(rules_mod.core_checks) do
    if not core_set[name] then fast = false end
  end
  -- reason codes the core's checks return (so evaluate can stand in for
  -- them); the MoE divisibility check has no rule of its own, it is part
  -- of aps_check_all (check.c), which the block pruner runs: always early
  local check_codes = { EP_DIVISIBILITY = true }
  if fast then
    for _, name in ipairs(rules_mod.core_checks) do
      for _, c in ipairs(core_set[name].codes or { core_set[name].code }) do check_codes[c] = true end
    end
  end
  local code_rule = {}
  for _, r in ipairs(all_rules) do
    for _, c in ipairs(r.codes or { r.code }) do code_rule[c] = code_rule[c] or r.name end
  end
  local cheap, late = {}, {}
  for _, r in ipairs(all_rules) do
    if r.cheap then
      if not (fast and core_set[r.name]) then cheap[#cheap + 1] = r end
    else
      late[#late + 1] = r
    end
  end
  local cheap_checks, cheap_codes, cheap_desc, cheap_names = {}, {}, {}, {}
  for i, r in ipairs(cheap) do
    cheap_checks[i], cheap_codes[i], cheap_desc[i], cheap_names[i] = r.check, r.code, r.description, r.name
  end
  local late_checks, late_codes, late_desc, late_names = {}, {}, {}, {}
  for i, r in ipairs(late) do
    late_checks[i], late_codes[i], late_desc[i], late_names[i] = r.check, r.code, r.description, r.name
  end
  local n_cheap, n_late = #cheap, #late
  -- with no other cheap rule, evaluate alone does the checks (fast_checks
  -- = "check" keeps the separate ctx:check("all") call)
  local by_evaluate = fast and n_cheap == 0 and opts.fast_checks ~= "check"

  local space = M.space_of(policy, inputs, ctx)
  -- a pinned expert degree no candidate can have: the input's error, not
  -- "no feasible strategy" with advice about the other dimensions
  local ep_bad = space_mod.ep_refusal(policy.search_space.dims, inputs.model.num_experts)
  if ep_bad then
    -- named where the values came from: the last --fix or --set of them
    local from = policy.file or "policy"
    for _, ov in ipairs(policy.overrides or {}) do
      if ov.key == "ep_degree" or ov.key == "search_space.ep_degree" then
        from = ov.kind == "fix" and "--fix" or (ov.flag or "--set")
      end
    end
    error(string.format("%s: %s", from, ep_bad), 0)
  end
  local cap = policy.constraints.max_candidates or schema.default_max_candidates
  local space_size, stopped = space:size(cap)
  if space_size > cap then
    local commas = require("apsearch.format.common").commas
    error(string.format("%s: search_space: %s%s candidates exceed constraints.max_candidates = %s " ..
      "(narrow the space, fix a dimension with --fix, or raise the limit)",
      policy.file or "policy", stopped and "more than " or "",
      commas(stopped and cap or space_size), commas(cap)), 0)
  end
  local better, objective_name, objective_info = objectives.get(policy.objective,
    M.near_capacity_fraction * inputs.cluster.device.memory_bytes)
  local k = policy.top_k or 10
  -- candidates written differently that run the same way are one strategy
  -- in the top-k (M.run_key): the heap keeps one of each
  local in_heap = {}

  -- hot loop --------------------------------------------------------------
  local check, evaluate = ctx.check, ctx.evaluate
  local copy = space_mod.copy
  local summary, reasons = {}, {}
  local generated, filtered, estimated, feasible, infeasible = 0, 0, 0, 0, 0
  local closest, cl_n, cl_worst = {}, 0, math.huge
  local function closest_order(a, b)
    if a.mem_limited ~= b.mem_limited then return a.mem_limited < b.mem_limited end
    if a.step_time ~= b.step_time then return a.step_time < b.step_time end
    return a.index < b.index
  end
  local heap, hn = {}, 0
  local progress = opts.progress
  -- No per-candidate table is kept: every candidate is handed to the
  -- sink `opts.candidates` as it is decided (candidates.csv, streamed),
  -- and the search keeps only what the result shows -- the top-k heap,
  -- the Pareto front, the trends, a bounded sample of the feasible points
  -- for chart 7 (M.scatter_points) and, for the pareto objective, the
  -- candidates that may still be in its first k layers (M.pareto_keeper).
  local sink = opts.candidates
  local sink_row = sink and sink.row
  local sink_all = sink and sink.mode == "all"
  -- the rows of a block counted at once, written in one call
  -- (`sink.block(start, cand, cls, ent, cols)`, ent never changed once
  -- handed on; else walked row by row)
  local sink_block = sink_all and sink.block or nil
  if sink and sink.mode ~= "all" and sink.mode ~= "feasible" then
    error("search: candidates.mode must be \"all\" or \"feasible\" (got " .. tostring(sink.mode) .. ")", 0)
  end
  local keeper = objective_info.kind == "pareto" and M.pareto_keeper(k) or nil
  -- chart 7's sample of the feasible points: the feasible candidate of
  -- index i is kept when (M.sample_key(i) - 1) % stride == 0; the stride
  -- starts at 1 and doubles whenever more than `sc_cap` points are kept
  -- (the kept ones thinned by the same rule)
  local sc_cap = opts.scatter_points or M.scatter_points
  local sc_stride, sc_n = 1, 0
  local sc_ord, sc_idx, sc_step, sc_mem, sc_strat = {}, {}, {}, {}, {}
  -- Pareto front of (step time, peak memory), kept online: step time
  -- ascending, memory strictly descending
  local pf_step, pf_mem, pf_idx, pf_strat, pn = {}, {}, {}, {}, 0
  -- trends (chart 6): per degree value, the feasible candidate with the
  -- least step time (ties: memory); data-parallel ranks = dp x fsdp
  local tr_dp_s, tr_dp_m, tr_dp_c, tr_dp_i = {}, {}, {}, {}
  local tr_tp_s, tr_tp_m, tr_tp_c, tr_tp_i = {}, {}, {}, {}
  local tr_pp_s, tr_pp_m, tr_pp_c, tr_pp_i = {}, {}, {}, {}
  local tr_cp_s, tr_cp_m, tr_cp_c, tr_cp_i = {}, {}, {}, {}
  -- and per expert-parallel degree (MoE models only: a dense candidate
  -- has no ep_degree, and the chart then keeps its four panels)
  local tr_ep_s, tr_ep_m, tr_ep_c, tr_ep_i = {}, {}, {}, {}
  -- fast path (M.block_pruner): blocks of candidates that a core check
  -- rejects whatever their inner levels are counted at once, not walked
  local hooks = nil
  -- a block's tag when every candidate is streamed, and its reasons by
  -- code: reused from block to block (a tag holds until the next hook
  -- call; codes of earlier blocks left in tag_by_code are not read)
  local tag_by_code, tag = {}, {}
  -- what a decision of the fast path that recurs (its `memo`) resolves
  -- to once its reasons have their entries: `{[i] = the entry of reason
  -- i, total = its candidates, tag = its tag when every candidate is
  -- streamed}` (an entry is never replaced)
  local known_of = setmetatable({}, { __mode = "k" })
  if fast and opts.enumerate ~= "full" then
    hooks = M.block_pruner(space, ctx, function(groups, build, cls, class_code, start, cols, memo)
      local known = memo and known_of[memo]
      if known then
        for i = 1, #known do
          local e = known[i]
          e.count = e.count + groups[i].count
        end
        filtered = filtered + known.total
        local t = known.tag
        if not t then return true end
        t.start = nil
        return t
      end
      -- a reason met for the first time: its example is the first
      -- candidate of the block with it, its message the check's on it
      local ex, ex_msg
      for i = 1, #groups do
        local g = groups[i]
        if not summary[g.code] then
          if not build then return nil end
          local cand = build(g.pos)
          local ok, code, msg = check(ctx, "all", cand)
          if ok or code ~= g.code then return nil end
          ex, ex_msg = ex or {}, ex_msg or {}
          ex[i], ex_msg[i] = cand, msg
        end
      end
      local by_code = (sink_all or memo) and tag_by_code or nil
      local total = 0
      for i = 1, #groups do
        local g = groups[i]
        local e = summary[g.code]
        if e then e.count = e.count + g.count
        else
          e = count_reason(summary, reasons, g.code, ex[i], ex_msg[i], "early", code_rule[g.code],
            start + g.pos - 1)
          e.count = g.count
        end
        total = total + g.count
        if by_code then by_code[g.code] = e end
        if memo then known = known or {} known[i] = e end
      end
      filtered = filtered + total
      if not sink_all then
        if memo then known.total = total known_of[memo] = known end
        return true
      end
      -- the block's candidates are yielded with this tag when every
      -- candidate is streamed: position i has the entry of class cls[i]
      -- (ent: a fresh table, kept with a recurring decision; the sink may
      -- key what it derives from ent on it)
      local ent = {}
      for cl, code in pairs(class_code) do ent[cl] = by_code[code] end
      local t = memo and {} or tag
      t.cls, t.ent, t.cols, t.start = cls, ent, cols, nil
      if memo then known.total, known.tag = total, t known_of[memo] = known end
      return t
    end, not sink_all, sink_block ~= nil)
  end
  -- puts entry e in the top-k heap: fewer than k are kept, or it is
  -- better than the worst kept (heap[1]); its run key (e.key) is not kept
  local function offer(e)
    in_heap[e.key] = true
    if hn < k then
      hn = hn + 1
      heap[hn] = e
      local i = hn
      while i > 1 do
        local p = i // 2
        if better(heap[p], heap[i]) then
          heap[p], heap[i] = heap[i], heap[p]
          i = p
        else
          break
        end
      end
      return
    end
    in_heap[heap[1].key] = nil
    heap[1] = e
    local i = 1
    while true do
      local l, r, w = 2 * i, 2 * i + 1, i
      if l <= hn and better(heap[w], heap[l]) then w = l end
      if r <= hn and better(heap[w], heap[r]) then w = r end
      if w == i then break end
      heap[w], heap[i] = heap[i], heap[w]
      i = w
    end
  end

  -- the walk of the candidates first..last (nil: all of them), each
  -- decided and accounted in the state above; progress(index, space_size)
  -- every 65,536 candidates
  local function walk(first, last, progress)
    local next_progress = 0x10000
    -- progress once the walk is past the next multiple of 65,536
    local function advanced(index)
      if progress and index >= next_progress then
        progress(index, space_size)
        next_progress = (index // 0x10000 + 1) * 0x10000
      end
    end
    if hooks and sink_block then
      -- a block counted at once: its rows written by the sink, not walked
      hooks.pruned = function(cand, start, size, tag)
        if not tag.cols then return false end
        sink_block(start, cand, tag.cls, tag.ent, tag.cols)
        generated = start + size - 1
        advanced(generated)
        return true
      end
    end
    for cand, index, tag in space:iter(hooks, sink_all, first, last) do
      generated = index
      local ok, code, msg, failed_rule, ev = true, nil, nil, nil, nil
      if tag then
        local start = tag.start
        if not start then start = index tag.start = index end
        local e
        if tag.partial then
          -- a block walked by the fast path: the candidate's reason is
          -- known (a check up to devices) or it is decided as usual below
          local c = tag.code[tag.cls[index - start + 1]]
          e = c and summary[c]
          if e then
            e.count = e.count + 1
            filtered = filtered + 1
          end
        else
          -- a candidate of a block counted at once by the fast path (only
          -- walked when every candidate is streamed)
          e = tag.ent[tag.cls[index - start + 1]]
        end
        if e then
          if sink_all then sink_row(index, e, nil, nil, cand) end
          advanced(index)
          goto continue
        end
      end
      if by_evaluate then
        -- the core's evaluate runs aps_check_all first: a check code is an
        -- early filter, found at the cost of the check alone
        ev = evaluate(ctx, cand)
        code = ev.reason
        if code and check_codes[code] then ok, msg = false, ev.message end
      else
        if fast then ok, code, msg = check(ctx, "all", cand) end
        if ok then
          for i = 1, n_cheap do
            ok, code, msg = cheap_checks[i](cand, ctx)
            if not ok then
              code = code or cheap_codes[i]
              msg = msg or cheap_desc[i]
              failed_rule = cheap_names[i]
              break
            end
          end
        end
        if ok then
          ev = evaluate(ctx, cand)
          -- a check's code from the estimator (EP_DIVISIBILITY, which the
          -- block pruner also finds early) is an early filter, as there
          if ev.reason and check_codes[ev.reason] then ok, code, msg = false, ev.reason, ev.message end
        end
      end
      if not ok then
        filtered = filtered + 1
        local e = summary[code]
        if e then e.count = e.count + 1
        else e = count_reason(summary, reasons, code, cand, msg, "early", failed_rule or code_rule[code], index) end
        if sink_all then sink_row(index, e, nil, nil, cand) end
      else
        estimated = estimated + 1
        local st, mem = ev.step_time, ev.mem_peak
        local bad, bmsg, brule
        for i = 1, n_late do
          local lok, lcode, lmsg = late_checks[i](cand, ctx, ev)
          if not lok then
            bad = lcode or late_codes[i]
            bmsg = lmsg or late_desc[i]
            brule = late_names[i]
            break
          end
        end
        if not bad and not ev.feasible then
          bad, bmsg = ev.reason or "INFEASIBLE", ev.message
        end
        if bad then
          infeasible = infeasible + 1
          -- how far from fitting: the figure the limit bounds (evaluate
          -- gives it with a reason; a rule's refusal of a feasible one has
          -- none, its device peak is that figure's upper bound)
          local lim = ev.mem_limited or mem
          local e = summary[bad]
          if e then
            e.count = e.count + 1
            -- over the memory limit: the example is the candidate closest to
            -- fitting, the one a user would try to squeeze in
            if bad == "MEMORY_LIMIT" and lim < e.mem_limited then
              e.example, e.message, e.mem_peak, e.mem_limited, e.at = space_mod.copy(cand), bmsg, mem, lim, index
            end
          else
            e = count_reason(summary, reasons, bad, cand, bmsg, "estimate", brule or code_rule[bad], index)
            e.mem_peak, e.mem_limited = mem, lim
          end
          if sink_all then sink_row(index, e, st, mem, cand) end
          -- the estimated candidates closest to fitting (least memory, then
          -- time), bounded: the report's diagnosis when nothing is feasible
          -- (one refused before any memory was counted, EP_DIVISIBILITY,
          -- is not close to fitting; one run --launchable refused fits,
          -- its launch file is what differs)
          -- (the least by memory, then step time, then index: a later
          -- candidate at the worst one's memory and step time is not closer)
          if lim > 0 and bad ~= M.LAUNCH_DIFFERS and (cl_n < M.closest_keep or lim < cl_worst
              or (lim == cl_worst and st < closest[cl_n].step_time)) then
            if cl_n < M.closest_keep then cl_n = cl_n + 1 end
            closest[cl_n] = { index = index, mem_peak = mem, mem_limited = lim, step_time = st, reason = bad,
                              strategy = copy(cand) }
            table.sort(closest, closest_order)
            cl_worst = closest[cl_n].mem_limited
          end
        else
          feasible = feasible + 1
          if sink_row then sink_row(index, nil, st, mem, cand) end
          if keeper then keeper:add(index, st, mem, cand) end
          -- chart 7's sample (none when sc_cap is 0)
          local ord = M.sample_key(index)
          if sc_cap > 0 and (ord - 1) % sc_stride == 0 then
            sc_n = sc_n + 1
            sc_ord[sc_n], sc_idx[sc_n], sc_step[sc_n], sc_mem[sc_n], sc_strat[sc_n] =
              ord, index, st, mem, copy(cand)
            if sc_n > sc_cap then
              sc_stride = 2 * sc_stride
              local m = 0
              for q = 1, sc_n do
                if (sc_ord[q] - 1) % sc_stride == 0 then
                  m = m + 1
                  sc_ord[m], sc_idx[m], sc_step[m], sc_mem[m], sc_strat[m] =
                    sc_ord[q], sc_idx[q], sc_step[q], sc_mem[q], sc_strat[q]
                end
              end
              for q = m + 1, sc_n do
                sc_ord[q], sc_idx[q], sc_step[q], sc_mem[q], sc_strat[q] = nil, nil, nil, nil, nil
              end
              sc_n = m
            end
          end
          -- Pareto front: the last front point with step <= st has the least
          -- memory among those; the candidate is dominated when it is <= mem
          local lo, hi = 1, pn
          while lo <= hi do
            local mid = (lo + hi) // 2
            if pf_step[mid] <= st then lo = mid + 1 else hi = mid - 1 end
          end
          -- hi: last position with step <= st (0 if none)
          if hi == 0 or pf_mem[hi] > mem then
            -- drop the points it dominates (step >= st, memory >= mem)
            local j = hi + 1
            if hi > 0 and pf_step[hi] == st then j = hi end
            local drop = 0
            while j + drop <= pn and pf_mem[j + drop] >= mem do drop = drop + 1 end
            if drop ~= 1 then
              -- shift to make exactly one slot at j
              local shift = 1 - drop
              if shift > 0 then
                for q = pn, j, -1 do
                  pf_step[q + 1], pf_mem[q + 1], pf_idx[q + 1], pf_strat[q + 1] =
                    pf_step[q], pf_mem[q], pf_idx[q], pf_strat[q]
                end
              elseif shift < 0 then
                for q = j + drop, pn do
                  pf_step[q + shift], pf_mem[q + shift], pf_idx[q + shift], pf_strat[q + shift] =
                    pf_step[q], pf_mem[q], pf_idx[q], pf_strat[q]
                end
                for q = pn + shift + 1, pn do
                  pf_step[q], pf_mem[q], pf_idx[q], pf_strat[q] = nil, nil, nil, nil
                end
              end
              pn = pn + shift
            end
            pf_step[j], pf_mem[j], pf_idx[j], pf_strat[j] = st, mem, index, copy(cand)
          end
          -- trends
          local v = cand.dp_degree * cand.fsdp_degree
          local b = tr_dp_s[v]
          if b == nil or st < b or (st == b and mem < tr_dp_m[v]) then
            tr_dp_s[v], tr_dp_m[v], tr_dp_c[v], tr_dp_i[v] = st, mem, copy(cand), index
          end
          v = cand.tp_degree
          b = tr_tp_s[v]
          if b == nil or st < b or (st == b and mem < tr_tp_m[v]) then
            tr_tp_s[v], tr_tp_m[v], tr_tp_c[v], tr_tp_i[v] = st, mem, copy(cand), index
          end
          v = cand.pp_degree
          b = tr_pp_s[v]
          if b == nil or st < b or (st == b and mem < tr_pp_m[v]) then
            tr_pp_s[v], tr_pp_m[v], tr_pp_c[v], tr_pp_i[v] = st, mem, copy(cand), index
          end
          v = cand.cp_degree
          b = tr_cp_s[v]
          if b == nil or st < b or (st == b and mem < tr_cp_m[v]) then
            tr_cp_s[v], tr_cp_m[v], tr_cp_c[v], tr_cp_i[v] = st, mem, copy(cand), index
          end
          v = cand.ep_degree
          if v ~= nil then
            b = tr_ep_s[v]
            if b == nil or st < b or (st == b and mem < tr_ep_m[v]) then
              tr_ep_s[v], tr_ep_m[v], tr_ep_c[v], tr_ep_i[v] = st, mem, copy(cand), index
            end
          end
          ev.index = index
          ev.strategy = cand
          if hn < k or better(ev, heap[1]) then
            local key = M.run_key(cand, ev)
            -- not a copy of a strategy kept
            if not in_heap[key] then
              ev.key = key
              ev.strategy = copy(cand)
              offer(ev)
            end
          end
        end
      end
      advanced(index)
      ::continue::
    end
  end

  -- the state of a walk split across worker processes (opts.jobs): each
  -- worker's reasons, counts and kept candidates, merged as the one walk
  -- would have kept them (apsearch.search_merge)
  local merge = require "apsearch.search_merge"
  local workers = {}
  -- per dimension: best step time, its memory, candidate and index
  local trend_state = { { tr_dp_s, tr_dp_m, tr_dp_c, tr_dp_i }, { tr_tp_s, tr_tp_m, tr_tp_c, tr_tp_i },
    { tr_pp_s, tr_pp_m, tr_pp_c, tr_pp_i }, { tr_cp_s, tr_cp_m, tr_cp_c, tr_cp_i },
    { tr_ep_s, tr_ep_m, tr_ep_c, tr_ep_i } }
  local state_io = {
    worker_state = function()
      return {
        summary = summary, counts = { filtered, estimated, feasible, infeasible },
        heap = heap, keeper = keeper, closest = closest,
        scatter = { stride = sc_stride, ord = sc_ord, index = sc_idx, step_time = sc_step,
          mem_peak = sc_mem, strategy = sc_strat },
        front = { step_time = pf_step, mem_peak = pf_mem, index = pf_idx, strategy = pf_strat },
        trends = trend_state,
      }
    end,
    absorb_worker = function(st)
      merge.summary(summary, st.summary)
      local c = st.counts
      filtered, estimated = filtered + c[1], estimated + c[2]
      feasible, infeasible = feasible + c[3], infeasible + c[4]
      workers[#workers + 1] = st
    end,
  }
  -- the workers' kept candidates, once every worker is done
  local function merge_workers()
    for _, e in ipairs(merge.by_index(workers, "heap")) do
      if (hn < k or better(e, heap[1])) and not in_heap[e.key] then offer(e) end
    end
    if keeper then
      for _, p in ipairs(merge.keeper_points(workers)) do keeper:add(p.index, p.step_time, p.mem_peak, p.strategy) end
    end
    closest = merge.closest(workers, M.closest_keep, closest_order)
    local sc = merge.scatter(workers, sc_cap)
    sc_stride, sc_ord, sc_idx = sc.stride, sc.ord, sc.index
    sc_step, sc_mem, sc_strat = sc.step_time, sc.mem_peak, sc.strategy
    local pf = merge.front(workers)
    pf_step, pf_mem, pf_idx, pf_strat, pn = pf.step_time, pf.mem_peak, pf.index, pf.strategy, #pf.index
    for _, w in ipairs(workers) do
      for d, t in ipairs(trend_state) do merge.trend(t, w.trends[d]) end
    end
  end

  local t_loop = wall_clock()
  local jobs = M.jobs_for(opts.jobs, space_size, opts.min_chunk)
  -- candidates.csv's rows split across workers need a writer that can
  -- take them back (format.csv.candidate_writer with `out`)
  if sink and not sink.split then jobs = 1 end
  state_io.sink = sink
  if jobs > 1 then
    M.walk_parallel(jobs, space_size, progress, walk, state_io, opts.min_chunk)
    reasons = merge.reasons(summary)
    merge_workers()
  else
    walk(nil, nil, progress)
  end
  -- a pruned block at the end of the walk is not returned by the iterator
  generated = space_size
  local loop_seconds = wall_clock() - t_loop
  if progress then progress(generated, space_size, true) end

  -- the pareto objective: non-dominated layers of every feasible candidate,
  -- each by step time, until k are found (from the candidates that can be
  -- in the first k layers, kept while searching)
  local layer_of = nil
  if keeper then
    heap, layer_of = M.pareto_layers(keeper:points(), k, function(cand)
      return M.run_key(cand, evaluate(ctx, cand))
    end)
  else
    local sok, serr = pcall(table.sort, heap, better)
    if not sok then
      error(string.format("objective %s: its comparison is not a consistent order (%s)",
        tostring(objective_name), tostring(serr):gsub("^.-:%d+: ", "")), 0)
    end
    -- a comparison table.sort did not trip on can still be no order (one
    -- that is always true ranked at random): each rank must not also come
    -- before the one above it
    for r = 1, #heap - 1 do
      if better(heap[r + 1], heap[r]) then
        error(string.format("objective %s: its comparison is not a consistent order (rank %d comes before " ..
          "rank %d and after it: better(a, b) and better(b, a) are both true)", tostring(objective_name), r + 1, r), 0)
      end
    end
  end

  -- top-k: full estimates ---------------------------------------------------
  local top = util.array()
  local mem_bd, perf_bd, stage_summary = util.array(), util.array(), util.array()
  for rank, entry in ipairs(heap) do
    local est = ctx:estimate(entry.strategy)
    local rec = topk_record(rank, est, inputs.cluster.device.memory_bytes, inputs.training)
    local dev = inputs.cluster.device
    local iv = intervals.for_estimate(est, inputs)
    rec.performance_cost.step_time_interval = iv.step_time
    rec.memory_cost.total_interval = iv.mem_peak
    rec.performance_cost.mfu_above_published = intervals.above_published(est.mfu,
      dev.base or dev.name, inputs.training.precision)
    top[rank] = rec
    local mb = util.copy(est.memory_breakdown or {})
    mb.rank = rank
    mem_bd[rank] = mb
    local pb = util.copy(est.performance_breakdown or {})
    pb.rank = rank
    pb.step_time = est.step_time
    perf_bd[rank] = pb
    stage_summary[rank] = {
      rank = rank, pp_degree = rec.pp_degree, vpp_degree = rec.vpp_degree,
      worst_stage = est.worst_stage, stages = util.array(est.stages or {}),
    }
    if layer_of then rec.pareto_front = layer_of[entry.index] end
    rec.objective_value = M.objective_value(objective_info, objective_name, entry, layer_of)
    rec.index = entry.index
  end

  -- the Gantt chart: the simulated pipeline of the first pipelined top-k
  -- strategy (the top-1 when it is), the one whose stages the report shows
  local max_ops = opts.timeline_max_ops or M.timeline_max_ops
  for rank, rec in ipairs(top) do
    local p = rec.pp_degree or 1
    if p > 1 and max_ops > 0 then
      local n = math.min(max_ops, p * (opts.timeline_ops_per_rank or M.timeline_ops_per_rank))
      stage_summary[rank].timeline = ctx:timeline(heap[rank].strategy, math.max(2, n))
      break
    end
  end

  -- chart 8: the top-k re-estimated with the inter-node bandwidth scaled
  local sensitivity = opts.sensitivity ~= false and #top > 0
    and M.bandwidth_sensitivity(ctx, inputs, top) or nil

  -- chart 7: the Pareto front; chart 6: trends (rank of a top-k member)
  local rank_of = {}
  for _, rec in ipairs(top) do rank_of[rec.index] = rec.rank end
  -- chart 7: the sample, and the top-k as enumerated (always drawn)
  local scatter = setmetatable({
    total = feasible, stride = sc_stride, ord = sc_ord, index = sc_idx, step_time = sc_step,
    mem_peak = sc_mem, strategy = sc_strat, top = {},
  }, M.scatter_mt)
  for rank, entry in ipairs(heap) do
    scatter.top[rank] = { index = entry.index, step_time = entry.step_time, mem_peak = entry.mem_peak,
      strategy = entry.strategy }
  end
  local front = util.array()
  for i = 1, pn do
    front[i] = { index = pf_idx[i], step_time = pf_step[i], mem_peak = pf_mem[i],
      rank = rank_of[pf_idx[i]], strategy = pf_strat[i] }
  end
  local function trend(dim, label, s_, m_, c_)
    local values = {}
    for v in pairs(s_) do values[#values + 1] = v end
    table.sort(values)
    local pts = util.array()
    for i, v in ipairs(values) do
      pts[i] = { value = v, step_time = s_[v], mem_peak = m_[v], strategy = c_[v] }
    end
    return { dimension = dim, label = label, points = pts }
  end
  local trends = util.array({
    trend("data_parallel", "dp x fsdp (data-parallel ranks)", tr_dp_s, tr_dp_m, tr_dp_c),
    trend("tp_degree", "tp_degree", tr_tp_s, tr_tp_m, tr_tp_c),
    trend("pp_degree", "pp_degree", tr_pp_s, tr_pp_m, tr_pp_c),
    trend("cp_degree", "cp_degree", tr_cp_s, tr_cp_m, tr_cp_c),
  })
  if next(tr_ep_s) ~= nil then
    trends[#trends + 1] = trend("ep_degree", "ep_degree", tr_ep_s, tr_ep_m, tr_ep_c)
  end
  local seconds = wall_clock() - t0

  -- summaries -----------------------------------------------------------------
  local infeasible_summary = {}
  for code, e in pairs(summary) do
    infeasible_summary[code] = {
      count = e.count, phase = e.phase, rule = e.rule,
      example = e.example, message = e.message,
    }
  end

  local log = util.array()
  local function L(fmt, ...) log[#log + 1] = string.format(fmt, ...) end
  local m, cl, tr = inputs.model, inputs.cluster, inputs.training
  local device_name = type(cl.device) == "table" and cl.device.name or tostring(cl.device)
  -- a built policy's file is the `apsearch init` command that writes it
  local source = policy.built and string.format("built by --model / --cluster (`%s` writes it)", policy.file)
    or tostring(policy.file)
  -- the NVLink domain when it spans hosts (a GB200 / GB300 rack: a built
  -- policy takes 64 of a rack's 72, defaults.RACK_JOB_GPUS)
  L("policy %s: model %s%s, %d x %s (%d per node%s), global batch %s x seq %s, %s, %s%s",
    source, tostring(m.name), require("apsearch.format.common").params_note(m), cl.num_devices, device_name,
    cl.devices_per_node, require("apsearch.format.common").nvlink_domain_note(cl),
    tostring(tr.global_batch_size), tostring(tr.seq_length),
    tostring(tr.precision), tostring(tr.framework), require("apsearch.format.common").mtp_note(tr, m))
  -- a policy built from --model / --cluster: which defaults it chose, and why
  for _, line in ipairs(policy.defaults or {}) do L("%s", line) end
  for _, ov in ipairs(policy.overrides or {}) do
    -- as typed: a shortcut option (--model, --cluster, --top-k) by its name
    if ov.flag then
      L("override: %s %s", ov.flag, util.describe(ov.value))
    else
      L("override: --%s %s=%s", ov.kind, ov.key, util.describe(ov.value))
    end
  end
  if policy.launchable then
    L("--launchable %s: only strategies its launch file builds as estimated (the others: LAUNCH_DIFFERS)",
      policy.launchable)
  end
  L("search space: %d candidates (data_parallel %s)", space_size, space.data_parallel)
  local early_parts = {}
  for _, code in ipairs(sorted_codes(summary, "early")) do
    early_parts[#early_parts + 1] = string.format("%s %d", code, summary[code].count)
  end
  L("filtered early: %d%s", filtered,
    #early_parts > 0 and (" (" .. table.concat(early_parts, ", ") .. ")") or "")
  local late_parts = {}
  for _, code in ipairs(sorted_codes(summary, "estimate")) do
    late_parts[#late_parts + 1] = string.format("%s %d", code, summary[code].count)
  end
  L("estimated: %d; infeasible: %d%s", estimated, infeasible,
    #late_parts > 0 and (" (" .. table.concat(late_parts, ", ") .. ")") or "")
  L("feasible: %d; objective %s; top-%d", feasible, objective_name, k)
  for _, rec in ipairs(top) do
    L("top-%d: %s: step %.3f s, %.0f tokens/s/GPU, MFU %.1f%%, peak %.2f GiB",
      rec.rank, M.describe_strategy(rec), rec.performance_cost.step_time,
      rec.performance_cost.tokens_per_s_per_gpu, 100 * rec.performance_cost.mfu,
      gib(rec.memory_cost.total))
  end
  if feasible == 0 then L("no feasible strategy") end
  -- the rate is the enumeration's (search_seconds), the total time also
  -- counts loading, the top-k's details and the summary: both are said
  L("searched %d candidates in %.3f s (the search loop %.3f s, %.0f candidates/s)", generated, seconds,
    loop_seconds, generated / math.max(loop_seconds, 1e-9))

  local rule_names = util.array()
  for i, r in ipairs(all_rules) do rule_names[i] = r.name end
  local space_desc = space:describe()
  local inputs_out = {
    policy = policy.file, name = policy.name, model_source = policy.model_source,
    model = inputs.model, cluster = inputs.cluster, training = inputs.training,
    search_space = space_desc,
    constraints = { allow_idle_devices = policy.constraints.allow_idle_devices, rules = rule_names },
    objective = objective_name, top_k = k,
    -- a custom objective's unit and direction (score objectives; nil for
    -- the built-ins, whose names say them)
    objective_unit = type(policy.objective) == "table" and policy.objective.unit or nil,
    objective_maximize = custom_objective_maximize(policy.objective),
    -- a policy's own objective (a table; true), whatever its name
    objective_custom = type(policy.objective) == "table" or nil,
    overrides = policy.overrides or util.array(),
    calibration = policy.calibration,   -- {name, file} when --calibration was given
    stack = policy.stack,               -- training.stack, or the framework's newest
    software = policy.training and policy.training.software, -- training.software: the release whose recipe settings were taken
    defaults = policy.defaults,         -- the header lines of a built policy (apsearch.defaults)
    launchable = policy.launchable,     -- run --launchable: the framework whose launch file must build each strategy
    torchtitan_version = policy.torchtitan_version, -- run --torchtitan-version: the TorchTitan release the launch files target
    notes = import_notes(policy.warnings), -- what the model's config has that no term prices, as stderr says it
  }

  return {
    schema_version = M.schema_version,
    status = feasible > 0 and "ok" or "no_feasible_strategy",
    top_k_strategies = top,
    all_candidate_summary = {
      space_size = space_size, generated = generated, filtered_early = filtered,
      estimated = estimated, feasible = feasible, infeasible = infeasible,
      seconds = seconds, search_seconds = loop_seconds,
      candidates_per_s = generated / math.max(loop_seconds, 1e-9),
    },
    infeasible_summary = infeasible_summary,
    closest_infeasible = util.array(closest),
    memory_breakdown = mem_bd,
    performance_breakdown = perf_bd,
    stage_summary = stage_summary,
    search_log = log,
    inputs = inputs_out,
    pareto_front = front,
    trends = trends,
    bandwidth_sensitivity = sensitivity,
    visualization_report = nil,   -- set by the CLI when it writes the report
    scatter = scatter,
  }
end

--- Fewest candidates per chunk of a walk split across workers: a smaller
-- space is searched by fewer workers (1 below twice this), as starting a
-- worker costs more than walking that many candidates.
M.min_chunk_candidates = 2048

--- Chunk sizes of a split walk: each chunk holds 1/(chunk_share x jobs)
-- of the candidates left after the chunks before it (and at least
-- `min_chunk`), so the first chunks are large -- a worker walks long runs
-- of consecutive candidates, whose fast-path caches it shares -- and the
-- last ones small: the workers take the chunks in order as they finish
-- one, and a worker waits for the others at most one small chunk's time
-- at the end.
M.chunk_share = 4

--- Sample key of the candidate of index i for chart 7 (`result.scatter`):
-- a hash (SplitMix64's finalizer) in 1..2^31, so that keeping the
-- feasible candidates whose key k has (k - 1) % stride == 0 samples them
-- evenly whatever the order of the space's dimensions, and the same
-- whether one walk or several (`--jobs`) find them.
-- @tparam integer i candidate index
-- @treturn integer
function M.sample_key(i)
  local z = i * 0x9E3779B97F4A7C15
  z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
  z = (z ~ (z >> 27)) * 0x94D049BB133111EB
  z = z ~ (z >> 31)
  return (z >> 33) + 1
end

--- Most worker processes of a search (the parent polls one pipe each).
M.max_jobs = 1024

--- How many workers search a space: `jobs` (default 1), at most one per
-- `min_chunk` candidates (default M.min_chunk_candidates), at most
-- M.max_jobs.
-- @tparam[opt] integer jobs workers asked for (>= 1)
-- @tparam integer space_size candidates
-- @tparam[opt] integer min_chunk fewest candidates per chunk
-- @treturn integer
function M.jobs_for(jobs, space_size, min_chunk)
  local per = min_chunk or M.min_chunk_candidates
  return math.max(1, math.min(jobs or 1, space_size // per, M.max_jobs))
end

--- The chunks of a split walk (see `chunk_share`); when that would make
-- more than apsearch.parallel.max_tasks, that many even ones.
-- @tparam integer jobs workers (>= 1)
-- @tparam integer space_size candidates (>= 1)
-- @tparam integer min_chunk fewest candidates per chunk (>= 1)
-- @treturn table the first index of each chunk, then space_size + 1
function M.chunk_starts(jobs, space_size, min_chunk)
  local max_tasks = require("apsearch.parallel").max_tasks
  local starts, first = {}, 1
  while first <= space_size do
    starts[#starts + 1] = first
    local left = space_size - first + 1
    first = first + math.min(left, math.max(min_chunk, -(-left // (M.chunk_share * jobs))))
  end
  if #starts > max_tasks then
    starts = {}
    for c = 1, max_tasks do starts[c] = (c - 1) * space_size // max_tasks + 1 end
  end
  starts[#starts + 1] = space_size + 1
  return starts
end

-- The apsearch.parallel.run options of a split walk (M.walk_parallel,
-- whose arguments these are; starts: M.chunk_starts).
local function parallel_walk(jobs, starts, space_size, progress, walk, io)
  local sink = io.sink
  return {
    jobs = jobs, tasks = #starts - 1,
    start = sink and sink.worker,
    work = function(c, report)
      local first, last = starts[c], starts[c + 1] - 1
      local from = sink and sink.task_begin()
      walk(first, last, function(index) report(index - first + 1) end)
      report(last - first + 1)
      return sink and sink.task_end(from) or true
    end,
    finish = io.worker_state,
    on_result = sink and function(_, share) sink.take(share) end or function() end,
    on_finish = io.absorb_worker,
    progress = progress and function(done) progress(done, space_size) end,
  }
end

--- Walks the space in chunks of consecutive candidates on `jobs` worker
-- processes (apsearch.parallel): each worker runs `walk(first, last,
-- progress)` on the chunks it takes, in order, into one state, which the
-- parent takes once the worker is done (`io.worker_state` in the worker,
-- `io.absorb_worker` in the parent).  With a candidates sink
-- (`io.sink`, format.csv.candidate_writer with `out`) each worker writes
-- its chunks' rows to a temporary file of its own and the parent copies
-- them into candidates.csv in enumeration order: the file is the one
-- walk's, byte for byte.
-- @tparam integer jobs workers (>= 2)
-- @tparam integer space_size candidates
-- @tparam[opt] function progress `progress(done, space_size)`
-- @tparam function walk the walk of a range (search.run)
-- @tparam table io the state's functions (above)
-- @tparam[opt] integer min_chunk fewest candidates per chunk
-- @raise a worker's error (the one of the earliest chunk), or
--   `search: worker process N was killed by signal S before it finished`
function M.walk_parallel(jobs, space_size, progress, walk, io, min_chunk)
  local sink = io.sink
  local starts = M.chunk_starts(jobs, space_size, min_chunk or M.min_chunk_candidates)
  local ok, err = pcall(function()
    if sink then sink.split(jobs) end
    return require("apsearch.parallel").run(parallel_walk(jobs, starts, space_size, progress, walk, io))
  end)
  -- (the temporary files are closed whatever happened)
  if sink then sink.close_split() end
  if not ok then error(err, 0) end
end


local function all_of(list, pred)
  for _, v in ipairs(list) do if not pred(v) then return false end end
  return true
end

-- stands for nil in the keys of the structure cache (as in space_mod.slot)
local NIL = {}

-- the fields each core check reads from the strategy (besides the model,
-- cluster and training constants), src/core/check.c and
-- src/core/pipeline.c aps_stage_layers: the keys of the caches of the
-- fast path
local TPCP_FIELDS = { "tp_degree", "sequence_parallel", "cp_degree", "cp_comm_type" }
local PP_FIELDS = { "vpp_degree", "pipeline_split", "pp_schedule", "stage_partition",
  "layer_offset", "balance_stages", "microbatch_group_size" }
local DEVICES_FIELDS = { "tp_degree", "dp_degree", "fsdp_degree", "pp_degree", "cp_degree" }
-- the late checks, after devices: moe (src/core/moe.c aps_check_moe,
-- aps_moe_ep, aps_moe_etp), recompute_modules and framework (check.c
-- aps_check_framework_model with src/core/recipe.c aps_check_recipe, the
-- loss-chunk, CP-attention and graph checks, and the model kinds'
-- refusals in nas.c, hybrid.c, gdn.c, mfsdp.c, dsa.c, dsv4.c, msa.c): every
-- strategy field those read.  One left out lets the first position of a
-- block decide for positions that differ in it only (micro_batch_size for
-- TorchTitan's loss chunks, recompute_method and recompute_num_layers for
-- the recipes' recompute rules: feasible strategies were dropped)
local LATE_FIELDS = { "tp_degree", "sequence_parallel", "cp_degree", "cp_comm_type", "dp_degree", "fsdp_degree",
  "pp_degree", "vpp_degree", "ep_degree", "etp_degree", "moe_capacity_factor", "moe_token_dispatcher",
  "moe_grouped_gemm", "recompute_modules", "layer_recompute", "recompute_method", "recompute_num_layers",
  "zero_stage", "pipeline_split", "stage_partition", "layer_offset", "balance_stages", "pp_schedule",
  "microbatch_group_size", "micro_batch_size", "reshard_after_forward" }
-- the inner part of degrees: the outer ranges pass (Space:degree_bounds)
-- and so do the micro-batch ranges (the hook is not made otherwise)
local DEGREES_INNER_FIELDS = { "pp_degree", "layer_recompute", "recompute_method",
  "recompute_num_layers", "auto_recompute" }

--- The fast path of the walk (issue 14 item 5): hooks for `Space:iter`
-- that count, without enumerating them, the candidates a core check
-- rejects.  At the first candidate of each block sharing the outer levels
-- (degrees, split, data-parallel pair) the block hook decides which check
-- each candidate of the block fails first; with `outer`, hooks above the
-- blocks skip whole subtrees.  It mirrors the order of aps_check_all
-- (src/core/check.c: degrees, zero, tp, cp, batch, pp, devices, moe,
-- recompute_modules, framework) and the strategy fields each check reads:
--
-- * degrees: its outer part (the ranges of tp, cp, pp, vpp, dp, fsdp) is
--   known from the space (Space:degree_bounds) and must pass; its inner
--   part (recompute values; the micro-batch ranges are checked here once)
--   is a pattern over the block's positions (the block's structure,
--   cached on the lists the inner levels give) -- INVALID_DEGREE where it
--   fails;
-- * zero: passes for every generated candidate (the space lists ZeRO
--   stages in 0..3 and only 0 or 3 with FSDP);
-- * tp, cp: read tp, sequence_parallel and cp only (cached on them);
-- * batch: reads dp x fsdp and the micro-batch size and count (the
--   pattern, per key of the outer fields the inner levels read);
-- * pp: reads the pipeline fields (PP_FIELDS) and the micro-batch count:
--   checked once per distinct micro-batch size and count of the pattern
--   (cached per pattern and pipeline fields);
-- * devices: reads the degrees only (cached on them);
-- * moe, recompute_modules, framework (LATE_FIELDS): checked once per
--   block and inner signature (the values of the inner levels they read).
--
-- A block where every candidate fails a check is counted per reason; one
-- with candidates that pass every check is walked with a partial tag
-- (the reason of each other candidate, counted as it comes) and those
-- candidates evaluated.  Above the blocks, at each level below the one
-- that sets the last of tp, sequence_parallel and cp, a subtree is counted
-- (memoized on the fields its levels read from above,
-- `space.read_above`) and skipped when tp or cp fails (every candidate
-- that passes degrees fails it) or when every candidate fails degrees or
-- batch, provided its reasons have their example already.
--
-- The probes' checks format no message (ctx:check(..., false)); a reason
-- whose summary entry does not exist yet gets as example the first
-- candidate of the block with it (the one a full walk would keep),
-- rebuilt from the pattern, and its message from ctx:check("all") on it.
-- The counts, examples, messages and ids are those of the full walk
-- (tests/lua/search_spec.lua compares them on many spaces).
-- @tparam table space
-- @tparam userdata ctx
-- @tparam function on_block `on_block(groups, build, cls, class_code,
--   start)` accounts a pruned block or subtree: `groups` its reasons
--   `{code, count, pos}` in order of first position, `build(pos)` the
--   candidate at position pos of a block (a copy; nil for a subtree, whose
--   reasons must then have their summary entry), `cls[pos]` the class of
--   each position of a block, `class_code[class]` its reason code and
--   `start` the index of its first candidate; returns a tag (or nil to
--   walk it after all); with `rows`, a sixth argument: what the inner
--   levels write at each position of a block (`{fields, n, none, [c]}`,
--   for csv_rows:block), or nil when they do not write alike; a seventh,
--   `memo`: a table that stands for the block's decision (its classes,
--   their codes and reasons: the same tables each time a block is
--   decided alike), on which on_block may keep what it derives from
--   them (nil for a subtree)
-- @tparam[opt] boolean outer skip subtrees above the blocks too (not when
--   every candidate is yielded: the tags are per block)
-- @tparam[opt] boolean rows hand on_block the written values of a block
-- @treturn table|nil hooks for `Space:iter` (`{[level] = hook}`, `hook(cand)
--   -> n, tag` with n the subtree's size, or nil and an optional partial
--   tag to walk it); nil when the space's values are outside what the fast
--   path can decide (then the full walk)
function M.block_pruner(space, ctx, on_block, outer, rows)
  local inner = space.inner
  if not inner or space.boundary == 0 then return nil end
  local core = require "apsearch.core"
  local MAXD = core.MAX_DEGREE
  local int = function(v) return math.type(v) == "integer" end
  local ok_inner =
    all_of(inner.micro_batch_size, function(v) return int(v) and v >= 1 and v <= MAXD end)
    and all_of(inner.micro_batch_num, function(v) return int(v) and v >= 0 and v <= MAXD end)
    and all_of(inner.zero_stage, function(v) return int(v) and v >= 0 and v <= 3 end)
    and all_of(inner.layer_recompute, function(v) return v == "none" or v == "selective" or v == "full" end)
    and all_of(inner.recompute_method, function(v) return v == "block" or v == "uniform" end)
    -- an outer level whose range degrees checks (aps_check_degrees): it
    -- must pass, as the degrees' ranges do (Space:degree_bounds)
    and all_of(space.dims.microbatch_group_size or {}, function(v) return int(v) and v >= 0 and v <= MAXD end)
  if not ok_inner then return nil end
  local lo, hi, pp_hi = space:degree_bounds()
  if not lo or lo < 1 or hi > MAXD or pp_hi > core.MAX_STAGES then return nil end
  local check = ctx.check
  local levels, n, boundary = space.levels, #space.levels, space.boundary
  local kf = space.key_fields
  -- the pattern (batch) and its pp cache read dp, fsdp and pp: they must
  -- be in its key (the ZeRO and recompute levels read them)
  local in_kf = {}
  for _, f in ipairs(kf) do in_kf[f] = true end
  if not (in_kf.dp_degree and in_kf.fsdp_degree and in_kf.pp_degree) then return nil end

  local provides = {}
  for i, l in ipairs(levels) do
    for _, f in ipairs(l.fields or { l.field or l.name }) do provides[f] = i end
  end
  local function outer_field(f) return provides[f] ~= nil and provides[f] <= boundary end

  -- the fields of LATE_FIELDS the inner levels set: a block's positions
  -- with the same values of them pass or fail the late checks alike
  local LATE_INNER = {}
  for _, f in ipairs(LATE_FIELDS) do
    if provides[f] and not outer_field(f) then LATE_INNER[#LATE_INNER + 1] = f end
  end

  -- sets the inner levels of c to the values `vals` (a position's)
  local function replay(c, vals)
    for k = boundary + 1, n do
      local l = levels[k]
      if l.set then l.set(c, vals[k - boundary]) else c[l.field] = vals[k - boundary] end
    end
  end

  -- The structure of a block: its positions (the inner levels' values,
  -- vals[pos]), where the inner part of degrees fails (deg[pos] false)
  -- and the micro-batch size and count (mbs[pos], mbn[pos]).  It depends
  -- on the lists the inner levels give and on the outer fields degrees
  -- reads (pp_degree): keyed on, per inner level, the list itself when it
  -- reads outer fields only, else the outer fields it reads; then the
  -- outer fields of DEGREES_INNER_FIELDS.
  local skey = {}
  for k = boundary + 1, n do
    local l, out, inner_dep = levels[k], {}, false
    for _, d in ipairs(l.deps or {}) do
      if outer_field(d) then out[#out + 1] = d elseif provides[d] then inner_dep = true end
    end
    if inner_dep then
      for _, d in ipairs(out) do skey[#skey + 1] = { field = d } end
    else
      skey[#skey + 1] = { level = l }
    end
  end
  for _, f in ipairs(DEGREES_INNER_FIELDS) do
    if outer_field(f) then skey[#skey + 1] = { field = f } end
  end
  local struct_root, deg_root = {}, {}
  local deg_slot, late_slot = space_mod.slotter(DEGREES_INNER_FIELDS), space_mod.slotter(LATE_INNER)
  local function structure(c)
    local t = struct_root
    for i = 1, #skey do
      local part = skey[i]
      local v
      if part.level then v = part.level.values(c) else v = c[part.field] end
      if v == nil then v = NIL end
      local u = t[v]
      if not u then u = {} t[v] = u end
      t = u
    end
    local st = t[1]
    if st then return st end
    -- the walk sets the inner levels of c (stale when a hook is called)
    local vals, deg, mbs, mbn, late = {}, {}, {}, {}, {}
    local m, cur, nl, late_root = 0, {}, 0, {}
    local function walk(k)
      if k > n then
        m = m + 1
        vals[m] = table.move(cur, 1, n - boundary, 1, {})
        local dt, dk = deg_slot(deg_root, c)
        local ok = dt[dk]
        if ok == nil then ok = check(ctx, "degrees", c, false) dt[dk] = ok end
        deg[m], mbs[m], mbn[m] = ok, c.micro_batch_size, c.micro_batch_num
        local lt, lk = late_slot(late_root, c)
        local L = lt[lk]
        if not L then nl = nl + 1 L = nl lt[lk] = L end
        late[m] = L
        return
      end
      local l = levels[k]
      for _, v in ipairs(l.values(c)) do
        cur[k - boundary] = v
        if l.set then l.set(c, v) else c[l.field] = v end
        walk(k + 1)
      end
    end
    walk(boundary + 1)
    st = { n = m, vals = vals, deg = deg, mbs = mbs, mbn = mbn, late = late }
    t[1] = st
    return st
  end

  -- The pattern of a block, per key of the outer fields the inner levels
  -- read (kf): its structure with, per position, its class cls[pos]: 1
  -- where degrees fails, 2 where batch fails first, 2 + t where both
  -- pass, t numbering the distinct micro-batch (size, count) pairs;
  -- first[class] and count[class]; d and b the counts of classes 1 and 2.
  -- Batch reads dp_degree x fsdp_degree and the micro-batch size and
  -- count (cached on them).
  local pat_root, batch_root = {}, {}
  local batch_slot = space_mod.slotter({ "dp_degree", "fsdp_degree" })
  local kf_slot = space_mod.slotter(kf)
  local function pattern(c)
    local t, key = kf_slot(pat_root, c)
    local pat = t[key]
    if pat then return pat end
    local st = structure(c)
    local bt, bk = batch_slot(batch_root, c)
    local brow = bt[bk]
    if not brow then brow = {} bt[bk] = brow end
    local cls, first, count, tuples = {}, {}, {}, {}
    local nt = 0
    local deg, mbs, mbn, vals = st.deg, st.mbs, st.mbn, st.vals
    for pos = 1, st.n do
      local cl
      if not deg[pos] then cl = 1
      else
        local b, mn = mbs[pos], mbn[pos]
        local row = brow[b]
        if not row then row = {} brow[b] = row end
        local ok = row[mn]
        if ok == nil then
          replay(c, vals[pos])
          ok = check(ctx, "batch", c, false)
          row[mn] = ok
        end
        if not ok then cl = 2
        else
          local tb = tuples[b]
          if not tb then tb = {} tuples[b] = tb end
          cl = tb[mn]
          if not cl then nt = nt + 1 cl = 2 + nt tb[mn] = cl end
        end
      end
      cls[pos] = cl
      if not first[cl] then first[cl], count[cl] = pos, 0 end
      count[cl] = count[cl] + 1
    end
    pat = { n = st.n, st = st, vals = vals, cls = cls, first = first, count = count, nt = nt, pp = {}, dec = {},
      d = count[1] or 0, b = count[2] or 0 }
    t[key] = pat
    return pat
  end

  -- What a block's replay writes, for the rows of a pruned block
  -- (format.csv's block writer, core csv_rows:block): `{fields = names,
  -- n = positions, none = NIL, [c] = {the value of fields[c] at each
  -- position, NIL for nil}}`, recorded on a proxy once per structure (the
  -- inner levels' setters write from their value alone); nil when the
  -- positions do not all write the same fields.
  local function columns(st)
    local cols = st.cols
    if cols ~= nil then return cols or nil end
    local names, at, store = {}, {}, nil
    local proxy = setmetatable({}, {
      __newindex = function(_, f, v)
        if not at[f] then names[#names + 1] = f at[f] = #names end
        if v == nil then v = NIL end
        store[f] = v
      end,
      __index = function(_, f) local v = store[f] if v == NIL then v = nil end return v end })
    cols = { fields = names, n = st.n, none = NIL }
    for pos = 1, st.n do
      store = {}
      replay(proxy, st.vals[pos])
      for f, v in pairs(store) do
        local col = cols[at[f]]
        if not col then col = {} cols[at[f]] = col end
        col[pos] = v
      end
    end
    for c = 1, #names do
      for pos = 1, st.n do
        if cols[c][pos] == nil then st.cols = false return nil end
      end
    end
    st.cols = cols
    return cols
  end

  -- the candidate at position pos of the block whose first candidate is c
  local block, block_pat
  local function build(pos)
    local g = space_mod.copy(block)
    replay(g, block_pat.vals[pos])
    return g
  end

  -- tp and cp: their code (false when both pass), on a probe with every
  -- other field at its default
  local tpcp_root = {}
  local tpcp_slot = space_mod.slotter(TPCP_FIELDS)
  local function tpcp(c)
    local t, key = tpcp_slot(tpcp_root, c)
    local code = t[key]
    if code == nil then
      local probe = space:base()
      for _, f in ipairs(TPCP_FIELDS) do probe[f] = c[f] end
      local ok, cd = check(ctx, "tp", probe, false)
      if ok then ok, cd = check(ctx, "cp", probe, false) end
      code = not ok and cd
      t[key] = code
    end
    return code
  end
  local dev_root = {}
  local pp_slot, dev_slot = space_mod.slotter(PP_FIELDS), space_mod.slotter(DEVICES_FIELDS)

  -- 1..n and n ones (per-position classes), shared
  local ident, one = {}, {}
  local function identity(m)
    local a = ident[m]
    if not a then a = {} for i = 1, m do a[i] = i end ident[m] = a end
    return a
  end
  local function ones(m)
    local a = one[m]
    if not a then a = {} for i = 1, m do a[i] = 1 end one[m] = a end
    return a
  end

  -- The reasons of classes 1..ncls (class cl: its reason codes[cl], its
  -- first position first[cl] and count[cl] positions) into out, `{code,
  -- count, pos}` per reason in order of first position; entries of out
  -- past them removed.
  local function group_reasons(codes, first, count, ncls, out)
    local ng = 0
    for cl = 1, ncls do
      local code = codes[cl]
      if code then
        local g
        for i = 1, ng do if out[i].code == code then g = out[i] break end end
        if g then
          g.count = g.count + count[cl]
          if first[cl] < g.pos then g.pos = first[cl] end
        else
          ng = ng + 1
          g = out[ng]
          if not g then g = {} out[ng] = g end
          g.code, g.count, g.pos = code, count[cl], first[cl]
        end
      end
    end
    for i = ng + 1, #out do out[i] = nil end
    if ng > 1 then table.sort(out, function(a, b) return a.pos < b.pos end) end
    return out
  end

  -- The decision of a block of pattern pat whose first candidate is c:
  -- `{codes = {[class] = reason code or false}, undecided = true when a
  -- class passes every check up to devices, groups = its reasons
  -- (group_reasons) when none does}`.  Class 1 fails degrees; the others
  -- fail tp or cp (their code on a probe), else class 2 batch, else
  -- classes 3.. pp (per micro-batch pair) or devices.  It depends on
  -- pat and on those codes alone: kept per pattern under them (pat.dec),
  -- so a block like one met before takes it as it is.
  local function decide(pat, c)
    local first, ncls = pat.first, 2 + pat.nt
    local tc = (first[2] or pat.nt > 0) and tpcp(c) or false
    local codes, dev = false, false
    if not tc and pat.nt > 0 then
      -- pp per micro-batch (size, count) pair, then devices
      local t, key = pp_slot(pat.pp, c)
      codes = t[key]
      if not codes then
        codes = {}
        for cl = 3, ncls do
          replay(c, pat.vals[first[cl]])
          local ok, cd = check(ctx, "pp", c, false)
          codes[cl] = not ok and cd
        end
        t[key] = codes
      end
      for cl = 3, ncls do
        if not codes[cl] then
          local dt, dk = dev_slot(dev_root, c)
          dev = dt[dk]
          if dev == nil then
            replay(c, pat.vals[first[cl]])
            local ok, dc = check(ctx, "devices", c, false)
            dev = not ok and dc
            dt[dk] = dev
          end
          break
        end
      end
    end
    local under = pat.dec[tc or codes]
    if not under then under = {} pat.dec[tc or codes] = under end
    local D = under[dev]
    if D then return D end
    local cc, undecided = {}, false
    cc[1] = first[1] and "INVALID_DEGREE" or false
    if tc then
      for cl = 2, ncls do cc[cl] = first[cl] and tc or false end
    else
      cc[2] = first[2] and "BATCH_DIVISIBILITY" or false
      for cl = 3, ncls do
        -- passes devices: a later check reads the inner levels, the class
        -- stays undecided
        cc[cl] = codes[cl] or dev
        if not cc[cl] then undecided = true end
      end
    end
    D = { codes = cc, undecided = undecided,
      groups = not undecided and group_reasons(cc, first, pat.count, ncls, {}) or nil }
    under[dev] = D
    return D
  end

  -- The late checks (moe, recompute_modules, framework) read the inner
  -- levels: for a block whose decision D leaves classes undecided they
  -- run once per block and inner signature (the structure's late[pos])
  -- among the undecided positions, on a candidate of the block at the
  -- signature's first such position (D.sig, D.at).  The block's reasons
  -- are then per position: `{cls = 1..n, codes = {[pos] = code},
  -- groups}` (group_reasons), kept per decision under the signatures'
  -- codes in order (D's trie), or `{walk = tag}` when a position passes
  -- every check (the block is walked: the candidates whose reason is
  -- known are counted as they come, the others evaluated).
  local function late_decision(pat, c, D)
    local cls, codes, sigs, at = pat.cls, D.codes, D.sig, D.at
    if not sigs then
      local late, seen = pat.st.late, {}
      sigs, at = {}, {}
      for pos = 1, pat.n do
        local L = late[pos]
        if not codes[cls[pos]] and not seen[L] then
          seen[L] = true
          sigs[#sigs + 1], at[#at + 1] = L, pos
        end
      end
      D.sig, D.at, D.trie = sigs, at, {}
    end
    local vals, by_late, node, walk = pat.vals, {}, D.trie, false
    for i = 1, #sigs do
      replay(c, vals[at[i]])
      local ok, cd = check(ctx, "all", c, false)
      cd = not ok and cd
      by_late[sigs[i]] = cd
      -- passes every check: estimated
      if not cd then walk = true end
      if not walk then
        local nx = node[cd]
        if not nx then nx = {} node[cd] = nx end
        node = nx
      end
    end
    local res = not walk and node[1]
    if res then return res end
    local late, pos_code = pat.st.late, {}
    for pos = 1, pat.n do pos_code[pos] = codes[cls[pos]] or by_late[late[pos]] end
    local id = identity(pat.n)
    if walk then return { walk = { partial = true, cls = id, code = pos_code } } end
    res = { cls = id, codes = pos_code, groups = group_reasons(pos_code, id, ones(pat.n), pat.n, {}) }
    node[1] = res
    return res
  end

  local function block_hook(c, start)
    local pat = pattern(c)
    if pat.n == 0 then return nil end
    block, block_pat = c, pat
    local D = decide(pat, c)
    local cls, codes, reasons = pat.cls, D.codes, D.groups
    local memo = D
    if D.undecided then
      local late = late_decision(pat, c, D)
      if late.walk then return nil, late.walk end
      cls, codes, reasons, memo = late.cls, late.codes, late.groups, late
    end
    local tag = on_block(reasons, build, cls, codes, start, rows and columns(pat.st) or nil, memo)
    if not tag then return nil end
    return pat.n, tag
  end
  local hooks = { [boundary + 1] = block_hook }
  if not outer then return hooks end

  -- Subtrees above the blocks: at each level j from the one after tp,
  -- sequence_parallel and cp are set down to the boundary, the subtree
  -- below levels 1..j-1 is counted (memoized on the fields the levels
  -- from j on read from above, R[j]: its size n, d where degrees fails,
  -- b where batch fails first) and skipped when tp or cp fails (every
  -- candidate that passes degrees fails it) or when every candidate fails
  -- degrees or batch -- provided the reasons already have their example.
  local K = 0
  for _, f in ipairs(TPCP_FIELDS) do K = math.max(K, provides[f] or 0) end
  if K >= boundary then return hooks end
  -- the counts of the subtree below levels 1..j-1 depend on the fields
  -- they set that levels j and below read (the inner levels' among them:
  -- the pattern's key)
  local R, memo = space.read_above, {}
  for j = K + 1, boundary do memo[j] = {} end
  local slots = {}
  for j = K + 1, boundary do slots[j] = space_mod.slotter(R[j]) end
  -- n, d, b of the subtree below levels 1..j-1 of c; the count sets the
  -- levels from j on of c (stale when a hook is called).  A level no later
  -- level reads (not `influences`) multiplies its subtree's counts.
  local function count_sub(j, c)
    if j > boundary then
      local pat = pattern(c)
      return pat.n, pat.d, pat.b
    end
    local l = levels[j]
    local list = l.values(c)
    if not l.influences then
      local m = #list
      if m == 0 then return 0, 0, 0 end
      if l.set then l.set(c, list[1]) else c[l.field] = list[1] end
      local n, d, b = count_sub(j + 1, c)
      return m * n, m * d, m * b
    end
    local mt, mk = slots[j](memo[j], c)
    local r = mt[mk]
    if r then return r[1], r[2], r[3] end
    local n, d, b = 0, 0, 0
    for i = 1, #list do
      if l.set then l.set(c, list[i]) else c[l.field] = list[i] end
      local qn, qd, qb = count_sub(j + 1, c)
      n, d, b = n + qn, d + qd, b + qb
    end
    mt[mk] = { n, d, b }
    return n, d, b
  end
  -- a level whose subtrees are seldom skipped stops being asked (it
  -- changes the time only: a subtree not skipped is walked)
  local probe, min_ratio = M.prune_probe_calls, M.prune_min_ratio
  local function outer_hook(j)
    local calls, skips = 0, 0
    return function(c)
      calls = calls + 1
      if calls == probe and skips < min_ratio * calls then hooks[j] = nil end
      local n, d, b = count_sub(j, c)
      if n == 0 then return nil end
      local tc = tpcp(c)
      local other = tc or "BATCH_DIVISIBILITY"
      local n_other = tc and n - d or b
      if not tc and n - d - b > 0 then return nil end
      local gs = {}
      if d > 0 then gs[1] = { code = "INVALID_DEGREE", count = d } end
      if n_other > 0 then gs[#gs + 1] = { code = other, count = n_other } end
      -- a subtree left to walk until its reasons have their example (the
      -- first of a walk over a range) does not count against the level
      if not on_block(gs, nil) then calls = calls - 1 return nil end
      skips = skips + 1
      return n, true
    end
  end
  for j = K + 1, boundary do hooks[j] = outer_hook(j) end
  return hooks
end

--- The fast path (M.block_pruner) asks the hook of a level above the
-- blocks this many times, then stops asking it when it skipped fewer than
-- `prune_min_ratio` of them: the subtrees of such a level are walked
-- (what is counted is the same either way; only the time changes).
M.prune_probe_calls = 256
--- See `prune_probe_calls`.
M.prune_min_ratio = 1 / 64

--- Most feasible points search.run keeps for chart 7 (the sample; see
-- `scatter_mt`).
M.scatter_points = 4000

--- Metatable of `result.scatter`, chart 7's points (not written to JSON:
-- `__json = false`): `total` feasible candidates; the sample `ord[i]`
-- (the point's sample key, M.sample_key of its index), `index[i]`,
-- `step_time[i]` [s], `mem_peak[i]` [bytes], `strategy[i]` (as
-- enumerated), by index, for the feasible candidates whose key k has
-- (k - 1) % `stride` == 0, `stride` the least power of two that keeps at
-- most M.scatter_points of them; `top[rank]` = {index,
-- step_time, mem_peak, strategy} of the top-k (always drawn, with the
-- Pareto front).
M.scatter_mt = { __name = "apsearch.scatter", __json = false }

local Keeper = {}
Keeper.__index = Keeper

--- The candidates that can be in the first k non-dominated layers of the
-- feasible points (the `pareto` objective), kept while searching: a point
-- whose layer (1 + the longest chain of points that dominate it) is above
-- k is dropped at once, or at the next pruning once later points push it
-- there.  Layers are only ever under-estimated between prunings (a new
-- point raises the layers of those it dominates), so nothing of the first
-- k layers is lost; a pruning recomputes them (quadratic in the points
-- kept) whenever the points kept double.
-- @tparam integer k layers (the top-k)
-- @treturn table keeper with `:add(index, step, mem, cand)` and `:points()`
function M.pareto_keeper(k)
  return setmetatable({ k = k, n = 0, limit = 64, idx = {}, step = {}, mem = {}, strat = {}, layer = {} }, Keeper)
end

function Keeper:add(index, st, mem, cand)
  local step_, mem_, layer_, n = self.step, self.mem, self.layer, self.n
  local d = 1
  for q = 1, n do
    local qs, qm = step_[q], mem_[q]
    if qs <= st and qm <= mem and (qs < st or qm < mem) and layer_[q] >= d then d = layer_[q] + 1 end
  end
  if d > self.k then return end
  n = n + 1
  self.n = n
  self.idx[n], step_[n], mem_[n], self.strat[n], layer_[n] = index, st, mem, space_mod.copy(cand), d
  if n > self.limit then
    self:prune()
    self.limit = math.max(64, 2 * self.n)
  end
end

-- points by step time, then memory, then enumeration order
function Keeper:order()
  local o = {}
  for i = 1, self.n do o[i] = i end
  local step_, mem_, idx = self.step, self.mem, self.idx
  table.sort(o, function(a, b)
    local x, y = step_[a], step_[b]
    if x ~= y then return x < y end
    x, y = mem_[a], mem_[b]
    if x ~= y then return x < y end
    return idx[a] < idx[b]
  end)
  return o
end

function Keeper:prune()
  local o = self:order()
  local step_, mem_ = self.step, self.mem
  local lay = {}
  for a = 1, #o do
    local p = o[a]
    local ps, pm, d = step_[p], mem_[p], 1
    for b = 1, a - 1 do
      local q = o[b]
      local qs, qm = step_[q], mem_[q]
      if qm <= pm and (qs < ps or qm < pm) and lay[q] >= d then d = lay[q] + 1 end
    end
    lay[p] = d
  end
  local m = 0
  local idx, strat = {}, {}
  local ns, nm, nl = {}, {}, {}
  for i = 1, self.n do
    if lay[i] <= self.k then
      m = m + 1
      idx[m], ns[m], nm[m], strat[m], nl[m] = self.idx[i], step_[i], mem_[i], self.strat[i], lay[i]
    end
  end
  self.idx, self.step, self.mem, self.strat, self.layer, self.n = idx, ns, nm, strat, nl, m
end

--- The points kept, by step time, then memory, then enumeration order.
-- @treturn table `{index = {...}, step_time = {...}, mem_peak = {...},
--   strategy = {...}}` (arrays)
function Keeper:points()
  self:prune()
  local o = self:order()
  local r = { index = {}, step_time = {}, mem_peak = {}, strategy = {} }
  for i, p in ipairs(o) do
    r.index[i], r.step_time[i], r.mem_peak[i], r.strategy[i] = self.idx[p], self.step[p], self.mem[p], self.strat[p]
  end
  return r
end

--- Non-dominated layers of the feasible candidates (the `pareto` objective).
-- Layer 1 is the Pareto front of (step time, peak memory); layer 2 the
-- front of the rest; ...  Within a layer, by step time (ties: memory, then
-- enumeration order).  Candidates at exactly the same point are on the same
-- layer, once per strategy: `key_of` gives their run keys (M.run_key),
-- and a copy of a strategy already taken is dropped.
-- @tparam table pts the feasible points (every one of the first k layers
--   at least; M.pareto_keeper): arrays `index`, `step_time`, `mem_peak`,
--   `strategy`
-- @tparam integer k how many
-- @tparam[opt] function key_of `key_of(strategy)` -> run key
-- @treturn table entries `{index, step_time, mem_peak, strategy}` of the
--   first k, in rank order
-- @treturn table `{[index] = layer}` for those entries
function M.pareto_layers(pts, k, key_of)
  local e_idx, e_step, e_mem, e_strat = pts.index, pts.step_time, pts.mem_peak, pts.strategy
  local order = {}
  for i = 1, #e_idx do order[i] = i end
  -- by step time, then memory, then enumeration order
  local function by_point(a, b)
    local x, y = e_step[a], e_step[b]
    if x ~= y then return x < y end
    x, y = e_mem[a], e_mem[b]
    if x ~= y then return x < y end
    return e_idx[a] < e_idx[b]
  end
  table.sort(order, by_point)
  -- candidates at exactly the same point: copies of one strategy, or
  -- different strategies that happen to coincide
  local keys = {}
  if key_of then
    for n = 2, #order do
      local a, b = order[n - 1], order[n]
      if e_step[a] == e_step[b] and e_mem[a] == e_mem[b] then
        keys[e_idx[a]] = keys[e_idx[a]] or key_of(e_strat[a])
        keys[e_idx[b]] = keys[e_idx[b]] or key_of(e_strat[b])
      end
    end
  end
  local chosen, layer_of, layer = {}, {}, 0
  local rest = order
  while #chosen < k and #rest > 0 do
    layer = layer + 1
    local next_rest, best, best_step, here = {}, math.huge, nil, nil
    local function take(i)
      if #chosen < k then
        chosen[#chosen + 1] = i
        layer_of[e_idx[i]] = layer
      end
    end
    for _, i in ipairs(rest) do
      local key = keys[e_idx[i]] or e_idx[i]
      if e_mem[i] < best then
        best, best_step, here = e_mem[i], e_step[i], { [key] = true }
        take(i)
      elseif e_mem[i] == best and e_step[i] == best_step then
        -- the same point: on this front too, unless a copy of one taken
        if not here[key] then
          here[key] = true
          take(i)
        end
      else
        next_rest[#next_rest + 1] = i
      end
    end
    rest = next_rest
  end
  -- rank: layer, then step time (the sweep order within a layer)
  table.sort(chosen, function(a, b)
    local la, lb = layer_of[e_idx[a]], layer_of[e_idx[b]]
    if la ~= lb then return la < lb end
    return by_point(a, b)
  end)
  local entries = {}
  for r, i in ipairs(chosen) do
    entries[r] = { index = e_idx[i], step_time = e_step[i], mem_peak = e_mem[i],
      strategy = e_strat[i] }
  end
  return entries, layer_of
end

--- Factors of chart 8 (inter-node bandwidth scaled).
M.bandwidth_factors = { 0.25, 0.5, 1, 2, 4 }

--- Re-estimates the top-k with `cluster.device.inter_node_bandwidth`
-- scaled by each of `M.bandwidth_factors` (new core contexts; the core
-- computes every second).
-- @tparam userdata ctx the search's context
-- @tparam table inputs `ctx:inputs()`
-- @tparam table top the top-k records
-- @treturn table `{parameter, base_value [bytes/s], factors = {...},
--   series = { {rank, step_time = {per factor [s]}, feasible = {...}} }}`
function M.bandwidth_sensitivity(ctx, inputs, top)
  local core = require "apsearch.core"
  local base = inputs.cluster.device.inter_node_bandwidth
  local series = util.array()
  for i, rec in ipairs(top) do
    series[i] = { rank = rec.rank, step_time = util.array(), feasible = util.array() }
  end
  for f_i, f in ipairs(M.bandwidth_factors) do
    local c = ctx
    if f ~= 1 then
      local cluster = util.copy(inputs.cluster)
      cluster.device = util.copy(inputs.cluster.device)
      cluster.device.inter_node_bandwidth = base * f
      c = core.context(inputs.model, cluster, inputs.training)
    end
    for i, rec in ipairs(top) do
      local ev = c:evaluate(M.strategy_of(rec))
      series[i].step_time[f_i] = ev.step_time
      series[i].feasible[f_i] = ev.feasible
    end
  end
  return {
    parameter = "cluster.device.inter_node_bandwidth", base_value = base,
    factors = util.array(util.copy(M.bandwidth_factors)), series = series,
    -- one NVLink domain (a host, or nvlink_domain_size GPUs of a rack):
    -- no traffic crosses a NIC
    single_node = inputs.cluster.num_devices <= math.max(inputs.cluster.devices_per_node,
      inputs.cluster.nvlink_domain_size or 0),
  }
end

--- The strategy of a top-k record as it was chosen: every strategy field
-- (apsearch.schema.strategy: the MoE fields and recompute_modules too),
-- with the stage split and per-stage recompute the core resolved
-- (`stage_partition`, `recompute_num_layers`) replacing `balance_stages`
-- and `auto_recompute`, so re-estimating it (chart 8, `estimate --from`)
-- keeps the same strategy (`layer_offset` stays: the launch files write
-- a split as its offset, apsearch.launch).
-- @tparam table rec top-k record (or one read back from result.json)
-- @treturn table strategy
function M.strategy_of(rec)
  local s = {}
  for f in pairs(schema.strategy) do s[f] = rec[f] end
  if type(s.stage_partition) == "table" then s.balance_stages = nil end
  if type(s.recompute_num_layers) == "table" then s.auto_recompute = nil end
  return s
end

return M
