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
--    (a bounded heap: only the k best are kept, each copied once).
--
-- Then `ctx:estimate()` runs for the top-k only and the result table of
-- shared/design/OUTPUTS.md is built.  The Lua side never computes a byte or
-- a second: every number comes from the core.
--
-- Fast paths: when the seven built-in core-check rules (degrees, zero,
-- devices, cp, tp, batch, pp) are all loaded unmodified, one
-- `ctx:check("all", candidate)` replaces seven calls; it runs the same
-- checks in the same order (src/core/check.c aps_check_all).  When, in
-- addition, the policy adds no cheap rule of its own, even that call is
-- folded into `ctx:evaluate`, which runs aps_check_all before estimating
-- and returns at the check's cost with its reason code and message: such a
-- result counts as filtered early, exactly as the check would have.  The
-- counts, examples and messages are identical in every mode
-- (tests/lua/search_spec.lua checks this).
-- @module apsearch.search
local util = require "apsearch.util"
local space_mod = require "apsearch.space"
local rules_mod = require "apsearch.rules"
local objectives = require "apsearch.objectives"

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

--- Creates the estimator context for a normalized policy.
-- @tparam table policy normalized policy (apsearch.policy)
-- @treturn userdata ctx
-- @raise `<file>: <table>.<field>: <problem> (got <value>)` when the core
--   refuses the model, cluster or training config
function M.context(policy)
  local core = require "apsearch.core"
  local ok, ctx = pcall(core.context, policy.model, policy.cluster, policy.training)
  if not ok then
    local msg = tostring(ctx)
    local label = policy.file or "policy"
    local path = msg:match("^([%w_%.%[%]]+):")
    for i = #(policy.overrides or {}), 1, -1 do
      local ov = policy.overrides[i]
      local top = ov.key:match("^[^%.]+")
      if path and (path == ov.key or path:match("^[^%.]+") == top and ov.kind == "set") then
        label = "--" .. ov.kind
        break
      end
    end
    if msg:match("^NotImplemented") then error(msg, 0) end
    error(label .. ": " .. msg, 0)
  end
  return ctx
end

local function count_reason(summary, code, cand, msg, phase, rule)
  local e = summary[code]
  if e then
    e.count = e.count + 1
  else
    summary[code] = {
      count = 1, phase = phase, rule = rule,
      example = space_mod.copy(cand), message = msg,
    }
  end
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

--- One-line description of a strategy for logs.
-- @tparam table s strategy (candidate or normalized)
-- @treturn string e.g. `dp=2 fsdp=4 tp=1 pp=1 cp=1 mbs=1 recompute=none`
function M.describe_strategy(s)
  local parts = {
    string.format("dp=%s fsdp=%s tp=%s", s.dp_degree, s.fsdp_degree, s.tp_degree),
  }
  if s.tp_degree and s.tp_degree > 1 then parts[#parts + 1] = "sp=" .. tostring(s.sequence_parallel) end
  parts[#parts + 1] = string.format("pp=%s", s.pp_degree)
  if s.vpp_degree and s.vpp_degree > 1 then parts[#parts + 1] = "vpp=" .. s.vpp_degree end
  parts[#parts + 1] = string.format("cp=%s", s.cp_degree)
  if s.cp_degree and s.cp_degree > 1 then parts[#parts + 1] = "cp_comm=" .. tostring(s.cp_comm_type) end
  if s.zero_stage and s.zero_stage > 0 then parts[#parts + 1] = "zero=" .. s.zero_stage end
  if s.fsdp_degree and s.fsdp_degree > 1 and s.reshard_after_forward == false then
    parts[#parts + 1] = "reshard=false"
  end
  parts[#parts + 1] = string.format("mbs=%s", s.micro_batch_size)
  if s.micro_batch_num and s.micro_batch_num > 0 then parts[#parts + 1] = "mbn=" .. s.micro_batch_num end
  parts[#parts + 1] = "recompute=" .. tostring(s.layer_recompute)
  if s.layer_recompute == "full" and type(s.recompute_num_layers) == "number" and s.recompute_num_layers >= 0 then
    parts[#parts + 1] = "recompute_num_layers=" .. s.recompute_num_layers
  end
  return table.concat(parts, " ")
end

-- builds one top-k record from ctx:estimate()
local function topk_record(rank, est)
  local s = est.strategy or {}
  local rec = { rank = rank }
  for _, f in ipairs(space_mod.fields) do rec[f] = s[f] end
  for k, v in pairs(s) do if rec[k] == nil then rec[k] = v end end
  rec.micro_batch_num = est.micro_batch_num
  local per_stage = util.array()
  for i, st in ipairs(est.stages or {}) do
    per_stage[i] = {
      stage = st.stage, first_layer = st.first_layer, num_layers = st.num_layers,
      total = st.memory_breakdown and st.memory_breakdown.total,
    }
  end
  rec.memory_cost = {
    total = est.mem_peak, limit = est.mem_limit, worst_stage = est.worst_stage,
    breakdown = est.memory_breakdown, per_stage = per_stage,
  }
  rec.performance_cost = {
    step_time = est.step_time, breakdown = est.performance_breakdown,
    tokens_per_s = est.tokens_per_s, tokens_per_s_per_gpu = est.tokens_per_s_per_gpu,
    model_tflops_per_gpu = est.model_tflops_per_gpu, mfu = est.mfu, hfu = est.hfu,
    model_flops_per_step = est.model_flops_per_step,
    hardware_flops_per_step = est.hardware_flops_per_step,
  }
  rec.devices_used = est.devices_used
  rec.feasible = est.feasible
  rec.filter_reason = nil
  return rec
end

--- Runs a search.
-- @tparam table policy normalized policy (apsearch.policy.from_table/load)
-- @tparam[opt] table opts
--   `rules_dir` (default `<root>/rules`);
--   `fast_checks` (default true: the built-in core-check rules run as one
--   core call -- ctx:evaluate itself when the policy has no other cheap
--   rule; "check": always a separate ctx:check("all"); false: one rule at
--   a time);
--   `progress` (function(done, total) called every 65,536 candidates)
-- @treturn table the result (shared/design/OUTPUTS.md): schema_version,
--   top_k_strategies, all_candidate_summary, infeasible_summary,
--   memory_breakdown, performance_breakdown, stage_summary, search_log, inputs
-- @raise on a core refusal of the inputs (see `context`) or an error raised
--   by a rule or objective function
function M.run(policy, opts)
  opts = opts or {}
  local t0 = os.clock()
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
  -- reason codes the core's checks return (so evaluate can stand in for them)
  local check_codes = {}
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

  local space = space_mod.new(policy.search_space, {
    num_devices = inputs.cluster.num_devices,
    allow_idle_devices = policy.constraints.allow_idle_devices,
  })
  local space_size = space:size()
  local better, objective_name = objectives.get(policy.objective)
  local k = policy.top_k or 10

  -- hot loop --------------------------------------------------------------
  local check, evaluate = ctx.check, ctx.evaluate
  local copy = space_mod.copy
  local summary = {}
  local generated, filtered, estimated, feasible, infeasible = 0, 0, 0, 0, 0
  local heap, hn = {}, 0
  local progress = opts.progress
  local t_loop = os.clock()

  for cand, index in space:iter() do
    generated = index
    local ok, code, msg, failed_rule, ev = true, nil, nil, nil, nil
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
      if ok then ev = evaluate(ctx, cand) end
    end
    if not ok then
      filtered = filtered + 1
      local e = summary[code]
      if e then e.count = e.count + 1
      else count_reason(summary, code, cand, msg, "early", failed_rule or code_rule[code]) end
    else
      estimated = estimated + 1
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
        local e = summary[bad]
        if e then e.count = e.count + 1
        else count_reason(summary, bad, cand, bmsg, "estimate", brule or code_rule[bad]) end
      else
        feasible = feasible + 1
        ev.index = index
        ev.strategy = cand
        if hn < k then
          ev.strategy = copy(cand)
          hn = hn + 1
          heap[hn] = ev
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
        elseif better(ev, heap[1]) then
          ev.strategy = copy(cand)
          heap[1] = ev
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
      end
    end
    if progress and index & 0xFFFF == 0 then progress(index, space_size) end
  end
  local loop_seconds = os.clock() - t_loop

  -- top-k: full estimates ---------------------------------------------------
  table.sort(heap, better)
  local top = util.array()
  local mem_bd, perf_bd, stage_summary = util.array(), util.array(), util.array()
  for rank, entry in ipairs(heap) do
    local est = ctx:estimate(entry.strategy)
    local rec = topk_record(rank, est)
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
  end
  local seconds = os.clock() - t0

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
  L("policy %s: model %s, %d x %s (%d per node), global batch %s x seq %s, %s, %s",
    tostring(policy.file), tostring(m.name), cl.num_devices, device_name,
    cl.devices_per_node, tostring(tr.global_batch_size), tostring(tr.seq_length),
    tostring(tr.precision), tostring(tr.framework))
  for _, ov in ipairs(policy.overrides or {}) do
    L("override: --%s %s=%s", ov.kind, ov.key, util.describe(ov.value))
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
    L("top-%d: %s: step %.4g s, %.4g tokens/s/GPU, MFU %.1f%%, peak %.2f GiB",
      rec.rank, M.describe_strategy(rec), rec.performance_cost.step_time,
      rec.performance_cost.tokens_per_s_per_gpu, 100 * rec.performance_cost.mfu,
      gib(rec.memory_cost.total))
  end
  if feasible == 0 then L("no feasible strategy") end
  L("searched %d candidates in %.3f s (%.0f candidates/s)", generated, seconds,
    generated / math.max(loop_seconds, 1e-9))

  local rule_names = util.array()
  for i, r in ipairs(all_rules) do rule_names[i] = r.name end
  local space_desc = space:describe()
  local inputs_out = {
    policy = policy.file, name = policy.name, model_source = policy.model_source,
    model = inputs.model, cluster = inputs.cluster, training = inputs.training,
    search_space = space_desc,
    constraints = { allow_idle_devices = policy.constraints.allow_idle_devices, rules = rule_names },
    objective = objective_name, top_k = k,
    overrides = policy.overrides or util.array(),
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
    memory_breakdown = mem_bd,
    performance_breakdown = perf_bd,
    stage_summary = stage_summary,
    search_log = log,
    inputs = inputs_out,
  }
end

return M
