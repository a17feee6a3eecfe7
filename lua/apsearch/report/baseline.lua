--- Re-search against a baseline (AP-DENSE-09): what changed between a
-- previous result (its result.json, `apsearch run --baseline FILE`) and
-- this one, in the inputs and in the top-k.
--
-- `diff(baseline, result)` returns the `baseline_diff` field of the result:
--
--     {
--       baseline = "<path>",
--       inputs = { changed = { {path, before, after}, ... } },
--           -- model, cluster, training, search_space, constraints,
--           -- objective, top_k and overrides; dotted paths, arrays whole;
--           -- training.memory_limit_bytes also effective_before/_after,
--           -- the limit applied (bytes; 0 is the device's memory less
--           -- the margin)
--       summary = { space_size = {before, after}, feasible = {before, after} },
--       best = { before = {step_time, tokens_per_s_per_gpu, strategy}, after = {...}, delta_s,
--                delta_pct, tokens_delta_pct (a step of another size only) },
--       top_k = {
--         entered = { {rank, strategy, step_time}, ... },     -- new in the top-k
--         left    = { {rank, strategy, step_time, why}, ... },  -- rank in the baseline;
--                   -- why: outranked, filtered (reason) or not_in_space (M.why_left)
--         moved   = { {before, after, strategy, step_time_before, step_time_after,
--                      delta_s, delta_pct}, ... },
--         kept    = { ...same fields as moved, before == after... },
--       },
--     }
--
-- Strategies are matched on how they run (M.key): every strategy field that
-- has an effect, and the split, recompute and micro-batch count they
-- resolved to; `strategy` is their one-line description.  Step
-- times are the core's estimates in both results (a strategy kept in the
-- top-k can change step time when the inputs changed).  Numbers are
-- compared after a JSON round trip of this result, with a relative
-- tolerance of 1e-9 (JSON keeps 14 significant digits).
-- @module apsearch.report.baseline
local util = require "apsearch.util"

local M = {}

local FIELDS = { "dp_degree", "fsdp_degree", "zero_stage", "reshard_after_forward",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "pp_schedule", "cp_degree",
  "cp_comm_type", "micro_batch_size", "micro_batch_num", "stage_partition",
  "layer_offset", "layer_recompute", "recompute_method", "recompute_num_layers",
  "ep_degree", "etp_degree", "moe_token_dispatcher", "moe_capacity_factor", "recompute_modules",
  "microbatch_group_size" }

-- the value a field has when a record leaves it out (a result written
-- before the field existed): the space's default (space.lua)
local DEFAULT = { pp_schedule = "1f1b", recompute_method = "block", microbatch_group_size = 0,
  -- a top-k record leaves an MoE strategy's dispatcher and capacity out
  -- when they are the search's defaults, which the space's candidates set
  moe_token_dispatcher = "alltoall", moe_capacity_factor = 0 }

local INPUT_SECTIONS = { "model", "cluster", "training", "search_space", "constraints",
  "objective", "top_k", "overrides" }

local function num_text(v)
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    return string.format("%d", v)
  end
  return tostring(v)
end

local function value_key(v)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = value_key(x) end
    return "[" .. table.concat(parts, ",") .. "]"
  elseif type(v) == "number" then
    return num_text(v)
  end
  return tostring(v)
end

-- fields that say how the split, the recompute and the micro-batch count
-- were written: the key uses what they resolved to instead
local AS_WRITTEN = { stage_partition = true, layer_offset = true,
  recompute_num_layers = true, micro_batch_num = true, layer_recompute = true }

-- a field's value in a key: "-" when moot, else the value or its default
local function field_key(s, f)
  local space = require "apsearch.space"
  if space.moot(s, f) then return "-" end
  local v = s[f]
  if v == nil then v = DEFAULT[f] end
  return value_key(v)
end

--- Identity of a top-k strategy as it runs: every strategy field
-- (pp_schedule and recompute_method included), with the stage split, the
-- recompute and the micro-batch count as resolved (the layers of each
-- stage; per stage the layers recomputed, block, or the group size,
-- uniform: format.common.resolved_layout, the form result.json holds; the
-- micro-batch count), so an even split and a "balanced" one that comes
-- out even match, and a record matches its own result.json copy.
-- @tparam table s top-k record
-- @tparam[opt] boolean derived_mbn both results derive the micro-batch
--   count from the global batch (their search spaces list none): the count
--   is then left out, so a strategy is the same one when only the global
--   batch changed its count
-- @treturn string
function M.key(s, derived_mbn)
  local parts = {}
  for _, f in ipairs(FIELDS) do
    if not AS_WRITTEN[f] then parts[#parts + 1] = f .. "=" .. field_key(s, f) end
  end
  local stages = (s.memory_cost and s.memory_cost.per_stage) or {}
  local rc = s.layer_recompute == "full"
    and require("apsearch.format.common").resolved_layout(s).recompute_num_layers or {}
  local layers, recomputed, total = {}, {}, 0
  for i, st in ipairs(stages) do
    local n = math.type(st.num_layers) and st.num_layers or 0
    local r = math.tointeger(rc[i]) or 0
    layers[i], recomputed[i], total = n, r, total + r
  end
  local mode = s.layer_recompute
  if mode == "full" and total == 0 and #stages > 0 then mode = "none" end
  parts[#parts + 1] = "layer_recompute=" .. tostring(mode)
  parts[#parts + 1] = "micro_batch_num=" .. (derived_mbn and "derived" or value_key(s.micro_batch_num))
  parts[#parts + 1] = "stages=" .. value_key(layers) .. "/" .. value_key(recomputed)
  return table.concat(parts, " ")
end

-- integral floats (JSON numbers) back to integers, so 4.0 reads "4"
local function integers(v)
  if type(v) == "number" then
    return math.tointeger(v) or v
  elseif type(v) == "table" then
    for k, x in pairs(v) do v[k] = integers(x) end
  end
  return v
end

local function describe(s)
  return require("apsearch.search").describe_strategy(s)
end

local function is_array(t)
  if type(t) ~= "table" then return false end
  local n = #t
  if n == 0 then return next(t) == nil end
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

--- The file a `--baseline` (or `--from`) argument names: `DIR/result.json`
-- for a directory (an `--out` result set, or the symbolic link to the
-- latest one), else the argument itself.
-- @tparam string path
-- @tparam string option the option named in the error (`--baseline`, `--from`)
-- @treturn string
-- @raise `<option>: <path>: ...` when path is a symbolic link to nothing
--   (an `--out DIR` link copied or archived without its set)
function M.path(path, option)
  if type(path) ~= "string" then return path end
  local lfs = require("lfs")
  if lfs.attributes(path, "mode") == "directory" then
    return (path:gsub("/+$", "")) .. "/result.json"
  end
  -- DIR, DIR/ or DIR/result.json where DIR is a link that resolves to
  -- nothing (a copied --out link, a loop, a link to such a link)
  local link = path:gsub("/+$", "")
  if lfs.symlinkattributes(link, "mode") ~= "link" then link = path:match("^(.-)/+result%.json$") end
  if link and lfs.symlinkattributes(link, "mode") == "link" and lfs.attributes(link, "mode") == nil then
    local target = lfs.symlinkattributes(link, "target") or "?"
    local set = target:find(".apsearch-set-", 1, true) and ("an --out DIR is a link to the result set beside "
      .. "it: copy it with cp -rL, tar -h or rsync -L, or name the set's directory") or "a link to nothing or a loop"
    error(("%s: %s: a symbolic link to %s, which does not resolve (%s)"):format(option or "--baseline",
      util.printable(path), util.printable(target), set), 0)
  end
  return path
end

--- Loads a baseline result.json, or DIR/result.json for a directory.
-- @tparam string path
-- @treturn table the decoded result
-- @treturn string the file read
-- @raise `--baseline: <path>: <problem>` when it cannot be read or is not
--   an apsearch result
function M.load(path)
  path = M.path(path, "--baseline")
  local text, err = util.read_file(path)
  if not text then
    error(string.format("--baseline: %s: cannot read the file (%s)", path,
      tostring(err):gsub("^[^:]*: ", "")), 0)
  end
  local ok, r = pcall(require("apsearch.format.json").decode, text)
  if not ok or type(r) ~= "table" then
    -- the decoder's message without its source location
    local why = tostring(r):gsub("\n.*", ""):gsub("^[^:]*%.lua:%d+: ", "")
    error(string.format("--baseline: %s: not JSON (%s)", path, why), 0)
  end
  if r.schema_version == nil or type(r.top_k_strategies) ~= "table" or type(r.inputs) ~= "table" then
    error(string.format("--baseline: %s: not an apsearch result.json (no schema_version, inputs or top_k_strategies)", path), 0)
  end
  r = integers(r)
  M.check(r, path)
  return r, path
end

--- Range of a baseline's step times (s): a record outside it (1e-300 s,
-- 1e300 s) is not one apsearch wrote, and its change in percent would not
-- be a finite number; `check` refuses it.
M.MIN_STEP_TIME = 1e-6
M.MAX_STEP_TIME = 1e9

local POSITIVE = { "dp_degree", "fsdp_degree", "tp_degree", "pp_degree", "vpp_degree",
  "cp_degree", "micro_batch_size" }

--- Largest memory figure a baseline record may state, bytes (1 EiB: more
-- than any device holds; a hand-edited 1e300 is refused, not printed).
M.MAX_MEMORY_BYTES = 2 ^ 60

-- the recompute modes a record may name (apsearch.schema strategy enum)
local RECOMPUTE = { none = true, selective = true, full = true }

--- Checks the fields a diff reads: the top-k records (rank, degrees,
-- micro-batch count, ZeRO stage, step time, the per-stage records the
-- split is read from) and the candidate summary.
-- @raise `--baseline: <path>: <field>: <problem> (got <value>)`
function M.check(r, path)
  local function fail(field, problem, v)
    util.fail("--baseline: " .. path, field, problem, v)
  end
  local function positive(field, v, int)
    if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge or
       (int and (math.type(v) ~= "integer" or v >= 2 ^ 31)) then
      fail(field, int and "expected a positive integer below 2^31" or "expected a positive number", v)
    end
  end
  local version = require("apsearch.search").schema_version
  if r.schema_version ~= version then
    fail("schema_version", "expected " .. version .. " (a result of this apsearch)", r.schema_version)
  end
  local top = r.top_k_strategies
  if not is_array(top) then fail("top_k_strategies", "expected an array", top) end
  local ranks = {}
  for i, rec in ipairs(top) do
    local at = "top_k_strategies[" .. (i - 1) .. "]" -- the JSON array's index
    if type(rec) ~= "table" then fail(at, "expected an object", rec) end
    positive(at .. ".rank", rec.rank, true)
    if ranks[rec.rank] then fail(at .. ".rank", "repeated", rec.rank) end
    ranks[rec.rank] = true
    for _, f in ipairs(POSITIVE) do positive(at .. "." .. f, rec[f], true) end
    -- optional fields the strategy text and the match read: absent, or
    -- of their type
    if rec.micro_batch_num ~= nil then positive(at .. ".micro_batch_num", rec.micro_batch_num, true) end
    local z = rec.zero_stage
    if z ~= nil and not (math.type(z) == "integer" and z >= 0 and z <= 3) then
      fail(at .. ".zero_stage", "expected 0, 1, 2 or 3", z)
    end
    if not RECOMPUTE[rec.layer_recompute] then
      fail(at .. ".layer_recompute", "expected none, selective or full", rec.layer_recompute)
    end
    local mc = rec.memory_cost
    if mc ~= nil then
      if type(mc) ~= "table" then fail(at .. ".memory_cost", "expected an object", mc) end
      local total = mc.total
      if total ~= nil and not (type(total) == "number" and total >= 0 and total <= M.MAX_MEMORY_BYTES) then
        fail(at .. ".memory_cost.total", string.format("expected bytes in [0, %g]", M.MAX_MEMORY_BYTES), total)
      end
      if mc.per_stage ~= nil then
        if not is_array(mc.per_stage) then fail(at .. ".memory_cost.per_stage", "expected an array", mc.per_stage) end
        for j, st in ipairs(mc.per_stage) do
          if type(st) ~= "table" then fail(at .. ".memory_cost.per_stage[" .. (j - 1) .. "]", "expected an object", st) end
        end
      end
    end
    local pc = rec.performance_cost
    if type(pc) ~= "table" then fail(at .. ".performance_cost", "expected an object", pc) end
    local st = pc.step_time
    positive(at .. ".performance_cost.step_time", st, false)
    if st < M.MIN_STEP_TIME or st > M.MAX_STEP_TIME then
      fail(at .. ".performance_cost.step_time", string.format("expected a step time in [%g, %g] s",
        M.MIN_STEP_TIME, M.MAX_STEP_TIME), st)
    end
  end
  local acs = r.all_candidate_summary
  if acs ~= nil and type(acs) ~= "table" then fail("all_candidate_summary", "expected an object", acs) end
  for _, k in ipairs({ "space_size", "feasible" }) do
    local v = acs and acs[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 0) then
      fail("all_candidate_summary." .. k, "expected an integer >= 0", v)
    end
  end
end

local function same(a, b)
  if type(a) == "number" and type(b) == "number" then
    if a == b then return true end
    return math.abs(a - b) <= 1e-9 * math.max(math.abs(a), math.abs(b))
  end
  if type(a) == "table" and type(b) == "table" then
    for k, v in pairs(a) do if not same(v, b[k]) then return false end end
    for k, v in pairs(b) do if a[k] == nil and v ~= nil then return false end end
    return true
  end
  return a == b
end

local function walk(path, a, b, out)
  if type(a) == "table" and type(b) == "table" and not is_array(a) and not is_array(b) then
    local keys = {}
    for k in pairs(a) do keys[#keys + 1] = k end
    for k in pairs(b) do if a[k] == nil then keys[#keys + 1] = k end end
    table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
    for _, k in ipairs(keys) do
      walk(path == "" and tostring(k) or (path .. "." .. tostring(k)), a[k], b[k], out)
    end
  elseif not same(a, b) then
    out[#out + 1] = { path = path, before = a, after = b }
  end
end

-- The change from a to b in percent, or nil when it is not a finite
-- number (a missing or zero a; never inf or nan in an output).
local function pct(a, b)
  if type(a) ~= "number" or type(b) ~= "number" or a == 0 then return nil end
  local d = 100 * (b - a) / a
  return util.is_finite(d) and d or nil
end

-- the fields a left strategy is looked up by in this search's space: how
-- it runs, without the ones written differently from how they resolve
-- (split, recompute counts, micro-batch count: AS_WRITTEN); the recompute
-- mode is compared apart (why_left)
local MATCH = { "dp_degree", "fsdp_degree", "zero_stage", "reshard_after_forward",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "pp_schedule", "cp_degree",
  "cp_comm_type", "micro_batch_size", "ep_degree", "etp_degree", "moe_token_dispatcher",
  "moe_capacity_factor", "microbatch_group_size" }

local function close(a, b)
  return type(a) == "number" and type(b) == "number" and math.abs(a - b) <= 1e-6 * math.max(math.abs(a), math.abs(b))
end

--- Whether the inputs changed the tokens of a step (training.global_batch_
-- size or training.seq_length among the changed inputs), so that step
-- times of the two results are of different amounts of work.
-- @tparam table diff the diff being built (its inputs.changed)
-- @treturn boolean
function M.step_size_changed(diff)
  for _, c in ipairs((diff.inputs or {}).changed or {}) do
    if c.path == "training.global_batch_size" or c.path == "training.seq_length" then return true end
  end
  return false
end

-- A match as why_left records it: an evaluation's outcome, step and peak.
local function match_of(ev)
  -- limited: the figure the memory limit bounds (max reserved under a
  -- limit the user gave), with a reason only
  return { code = ev.feasible and 0 or (ev.reason or "INFEASIBLE"), step = ev.step_time, mem = ev.mem_peak,
           limited = ev.mem_limited, estimated = true }
end

-- The match of candidate cand with its recompute mode "none" (the run as
-- a record that recomputed nothing ran it).
local function match_without_recompute(ctx, cand)
  local c = {}
  for k, v in pairs(cand) do c[k] = v end
  c.layer_recompute, c.recompute_num_layers = "none", nil
  return match_of(ctx:evaluate(c))
end

-- True when estimate est recomputes a layer on some stage.
local function recomputes(est)
  for _, st in ipairs(est.stages or {}) do
    if (st.recompute_layers or 0) > 0 then return true end
  end
  return false
end

--- Why each strategy that left the top-k left: looks it up in this
-- search's candidates (the same degrees, pipeline schedule, ZeRO stage, SP, CP exchange,
-- micro-batch size and recompute mode; any split or recompute count) and
-- sets `why` on each entry of `left`:
-- `{kind = "outranked", step_time, mem_peak, last_step_time, text}` (still
-- feasible, ranked below the top-k); `{kind = "filtered", reason, phase,
-- count, step_time, mem_peak, text}`: as it ran its peak memory is over
-- the new limit (MEMORY_LIMIT; its degrees may still fit with more
-- recompute or another split, said in the text), or every such candidate
-- was filtered (the most common reason); `{kind = "changed", step_time,
-- mem_peak, rank, text}` (its degrees are in the top-k, resolved to another
-- split or recompute: that top-k strategy's rank and figures); or
-- `{kind = "not_in_space", text}` (the space has no such candidate any
-- more: a --fix, --set search_space or a changed input).  The search
-- keeps no per-candidate record: the policy's space is walked again and
-- only the matching candidates are checked and estimated by the core (a
-- policy's own rules are not re-run).  Without the policy, `why` stays nil.
-- @tparam table left entries with `record` (the baseline's top-k record)
-- @tparam table result this search's result
-- @tparam table policy the normalized policy the search ran
function M.why_left(left, result, policy)
  if #left == 0 or not policy then return end
  local search = require "apsearch.search"
  local want = {}
  for n, e in ipairs(left) do
    local o = e.record
    local k = {}
    for _, f in ipairs(MATCH) do k[#k + 1] = field_key(o, f) end
    want[n] = table.concat(k, " ")
    e.key, e.matches, e.alternatives = want[n], {}, {}
  end
  local by_key = {}
  for n, key in ipairs(want) do
    by_key[key] = by_key[key] or {}
    table.insert(by_key[key], n)
  end
  -- walk this search's space again (no per-candidate record is kept) and
  -- evaluate only the candidates with a left strategy's degrees: the
  -- core's checks and estimate (a policy's own rules are not re-run)
  local ctx = search.context(policy)
  local inputs = ctx:inputs()
  local sp = search.space_of(policy, inputs, ctx)
  local k = {}
  for cand in sp:iter() do
    for i, f in ipairs(MATCH) do k[i] = field_key(cand, f) end
    local hit = by_key[table.concat(k, " ")]
    if hit then
      -- the recompute mode as resolved: "full" with nothing to recompute
      -- (recompute_num_layers = "auto" on a stage that fits) reads "none"
      local mode = cand.layer_recompute
      local m
      for _, n in ipairs(hit) do
        local was = left[n].record.layer_recompute
        if was == mode or (was == "none" and mode == "full") then
          if not m then
            local ok, code = ctx:check("all", cand)
            m = ok and match_of(ctx:evaluate(cand)) or { code = code or "?", estimated = false }
          end
          -- a "none" record meets "full": the same run when nothing is
          -- recomputed; when a layer is (asked once per candidate), an
          -- alternative for its degrees, and the run as it was (no
          -- recompute) estimated apart
          if was ~= mode and m.estimated and m.other == nil then m.other = recomputes(ctx:estimate(cand)) end
          if was ~= mode and m.other then
            table.insert(left[n].alternatives, m)
            m.none = m.none or match_without_recompute(ctx, cand)
            table.insert(left[n].matches, m.none)
          else
            table.insert(left[n].matches, m)
          end
        end
      end
    end
  end
  local top = result.top_k_strategies or {}
  local last = top[#top]
  local last_st = last and last.performance_cost and last.performance_cost.step_time
  -- the degrees (MATCH) of the new top-k: a left strategy whose degrees are
  -- among them runs differently now; ranked by step time alone, a faster
  -- one need not be (objectives.NEAR_CAPACITY_TIE)
  local top_keys = {}
  for _, rec in ipairs(top) do
    local k = {}
    for i, f in ipairs(MATCH) do k[i] = field_key(rec, f) end
    local key = table.concat(k, " ")
    top_keys[key] = top_keys[key] or rec
  end
  -- the peak the limit bounds (max reserved when the user set a limit)
  local kind = require("apsearch.format.common").limited_kind(result.inputs and result.inputs.training)
  local kind_text = kind == "device" and "" or (" of max " .. kind)
  for _, e in ipairs(left) do
    local best, counts, first_est = nil, {}, {}
    local o = e.record
    local old_mem = o.memory_cost and (o.memory_cost[kind] or o.memory_cost.total)
    local old_st = o.performance_cost and o.performance_cost.step_time
    local same_i
    for _, m in ipairs(e.matches) do
      if m.code == 0 then
        if not best or m.step < best.step then best = m end
        if not same_i and close(m.step, old_st) and close(m.mem, old_mem) then same_i = m end
      else
        counts[m.code] = (counts[m.code] or 0) + 1
        if m.estimated and (not first_est[m.code] or m.mem < first_est[m.code].mem) then
          first_est[m.code] = m
        end
      end
    end
    -- its degrees with another recompute, when none of its own mode runs
    if not best then
      for _, m in ipairs(e.alternatives) do
        if m.code == 0 and (not e.alt or m.step < e.alt.step) then e.alt = m end
      end
    end
    local lim = require("apsearch.report.html").memory_limit(result)
    local in_top = best and top_keys[e.key]
    -- the same run (same estimate) among its variants, when it is there
    local same_run = same_i ~= nil
    if same_i then best = same_i end
    -- some candidate of its degrees reached the estimate: one refused
    -- before it (a framework rule the change brought) is said as such
    local estimated = false
    for _, m in ipairs(e.matches) do estimated = estimated or m.estimated end
    if type(old_mem) == "number" and lim and old_mem > lim * (1 + 1e-9) and not same_run and estimated then
      -- as it ran it no longer fits; its degrees may with more recompute
      -- (a variant of its own mode, else one recomputing layers)
      local other = best or e.alt
      e.why = { kind = "filtered", reason = "MEMORY_LIMIT", phase = "estimate", mem_peak = old_mem,
        text = string.format("filtered: MEMORY_LIMIT: as it ran it needs %.2f GiB%s > limit %.2f GiB%s",
          old_mem / 2 ^ 30, kind_text, lim / 2 ^ 30, other and string.format(
            " (its degrees fit with another recompute or split: %.3f s, %.2f GiB%s)",
            other.step, other.mem / 2 ^ 30, top_keys[e.key] and ", in the top-k" or "") or "") }
    elseif best and in_top and not same_run then
      -- the figures of the top-k strategy with its degrees
      local t = top_keys[e.key]
      local tst, tmem = t.performance_cost.step_time, t.memory_cost.total
      e.why = { kind = "changed", step_time = tst, mem_peak = tmem, rank = t.rank,
        text = string.format("runs differently now: its degrees are #%d of the top-k with another split or "
          .. "recompute (%.3f s, %.2f GiB)", t.rank, tst, tmem / 2 ^ 30) }
    elseif best then
      local st, mem = best.step, best.mem
      e.why = { kind = "outranked", step_time = st, mem_peak = mem, last_step_time = last_st,
        text = string.format("outranked: still feasible (%.3f s, %.2f GiB), below the top-%d under objective %s%s",
          st, mem / 2 ^ 30, #top, tostring(result.inputs and result.inputs.objective),
          last_st and string.format(" (#%d: %.3f s)", #top, last_st) or "") }
    elseif #e.matches > 0 then
      local code, n = nil, 0
      for c, m in pairs(counts) do
        if m > n or (m == n and c < code) then code, n = c, m end
      end
      local sum = (result.infeasible_summary or {})[code] or {}
      local i = first_est[code]
      e.why = { kind = "filtered", reason = code, phase = sum.phase, rule = sum.rule, count = n,
        step_time = i and i.step or nil, mem_peak = i and i.mem or nil }
      local detail = ""
      if i and code == "MEMORY_LIMIT" then
        local lim = require("apsearch.report.html").memory_limit(result)
        detail = string.format(": needs %.2f GiB%s%s", (i.limited or i.mem) / 2 ^ 30,
          i.limited and kind_text or "", lim and string.format(" > limit %.2f GiB", lim / 2 ^ 30) or "")
      elseif i then
        detail = string.format(": estimated %.3f s, %.2f GiB", i.step, i.mem / 2 ^ 30)
      end
      if e.alt then
        detail = detail .. string.format("; its degrees fit with another recompute: %.3f s, %.2f GiB",
          e.alt.step, e.alt.mem / 2 ^ 30)
      end
      e.why.text = string.format("filtered: %s (%s%s)%s", tostring(code),
        sum.phase == "early" and "before the estimate" or "after the estimate",
        sum.rule and (", rule " .. tostring(sum.rule)) or "", detail)
    else
      e.why = { kind = "not_in_space",
        text = "not in the search space any more (a --fix, --set search_space or changed input removed it)" }
    end
    e.key, e.matches, e.alternatives, e.alt = nil, nil, nil, nil
  end
end

--- Compares a result with a baseline.
-- @tparam table baseline decoded baseline result.json
-- @tparam table result this search's result
-- @tparam[opt] string path the baseline's file name
-- @tparam[opt] table policy the normalized policy of this search (to say
--   why a strategy left, M.why_left)
-- @treturn table the `baseline_diff` (see the module doc)
function M.diff(baseline, result, path, policy)
  local json = require "apsearch.format.json"
  -- compare like with like: this result's inputs through JSON as well
  -- (as a result's `inputs`, so its placeholders are spelt as result.json's)
  local now_inputs = integers(json.decode(json.encode({ inputs = result.inputs or {} })).inputs)
  local before_inputs = baseline.inputs or {}
  local changed = util.array()
  for _, sec in ipairs(INPUT_SECTIONS) do
    walk(sec, before_inputs[sec], now_inputs[sec], changed)
  end
  -- a memory limit of 0 is the space's "device memory less the margin":
  -- each side carries the limit its estimates applied
  local html = require "apsearch.report.html"
  for _, c in ipairs(changed) do
    if c.path == "training.memory_limit_bytes" then
      c.effective_before, c.effective_after = html.memory_limit(baseline), html.memory_limit(result)
    end
  end

  local bs, ns = baseline.all_candidate_summary or {}, result.all_candidate_summary or {}
  local diff = {
    baseline = path,
    inputs = { changed = changed },
    summary = {
      space_size = { before = bs.space_size, after = ns.space_size },
      feasible = { before = bs.feasible, after = ns.feasible },
    },
  }

  local old, new = baseline.top_k_strategies or {}, result.top_k_strategies or {}
  -- the micro-batch count is derived in both (no micro_batch_num listed):
  -- a changed global batch changes it without changing the strategy
  local function derived(r)
    local l = r.inputs and r.inputs.search_space and r.inputs.search_space.micro_batch_num
    return type(l) == "table" and #l == 1 and (l[1] == "derived" or l[1] == 0)
  end
  local dm = derived(baseline) and derived(result)
  local old_by = {}
  for _, r in ipairs(old) do old_by[M.key(r, dm)] = r end
  local new_by = {}
  for _, r in ipairs(new) do new_by[M.key(r, dm)] = r end
  local entered, left, moved, kept = util.array(), util.array(), util.array(), util.array()
  for _, r in ipairs(new) do
    local o = old_by[M.key(r, dm)]
    local st = r.performance_cost and r.performance_cost.step_time
    if not o then
      entered[#entered + 1] = { rank = r.rank, strategy = describe(r), step_time = st }
    else
      local ost = o.performance_cost and o.performance_cost.step_time
      local e = { before = o.rank, after = r.rank, strategy = describe(r),
        step_time_before = ost, step_time_after = st,
        delta_s = (st and ost) and (st - ost) or nil, delta_pct = pct(ost, st) }
      if o.rank ~= r.rank then moved[#moved + 1] = e else kept[#kept + 1] = e end
    end
  end
  for _, o in ipairs(old) do
    if not new_by[M.key(o, dm)] then
      left[#left + 1] = { rank = o.rank, strategy = describe(o),
        step_time = o.performance_cost and o.performance_cost.step_time, record = o }
    end
  end
  M.why_left(left, result, policy)
  for _, e in ipairs(left) do e.record = nil end
  diff.top_k = { entered = entered, left = left, moved = moved, kept = kept }

  local ob, nb = old[1], new[1]
  local bst = ob and ob.performance_cost and ob.performance_cost.step_time
  local nst = nb and nb.performance_cost and nb.performance_cost.step_time
  local btp = ob and ob.performance_cost and ob.performance_cost.tokens_per_s_per_gpu
  local ntp = nb and nb.performance_cost and nb.performance_cost.tokens_per_s_per_gpu
  diff.best = {
    before = ob and { step_time = bst, tokens_per_s_per_gpu = btp, strategy = describe(ob) } or nil,
    after = nb and { step_time = nst, tokens_per_s_per_gpu = ntp, strategy = describe(nb) } or nil,
    delta_s = (bst and nst) and (nst - bst) or nil, delta_pct = pct(bst, nst),
    -- a step of another size (global batch or sequence changed): the
    -- throughput compares the two, the step time does not
    tokens_delta_pct = M.step_size_changed(diff) and pct(btp, ntp) or nil,
  }
  return diff
end

local cjson_null = require("cjson").null

local function show(v)
  if v == nil then return "(none)" end
  if v == cjson_null then return "null" end
  if type(v) == "table" then
    if is_array(v) then
      local parts = {}
      for i, x in ipairs(v) do
        parts[i] = type(x) == "table" and (x.kind and util.override_text(x, show) or show(x)) or show(x)
      end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    return "{...}"
  elseif v == nil then
    return "(none)"
  elseif type(v) == "number" then
    return num_text(v)
  elseif type(v) == "string" then
    return v
  end
  return tostring(v)
end

--- A value of an input as text (arrays in brackets, overrides as typed).
-- @param v
-- @treturn string
M.show = show

--- One side of a changed input as text: the value (M.show), a byte count
-- also in GiB, and a memory limit of 0 as the default it stands for (the
-- device's memory less the margin, `effective_before` / `effective_after`
-- of the change: the limit that side's estimates applied).
-- @tparam table c an entry of `inputs.changed`
-- @tparam string side "before" or "after"
-- @treturn string e.g. `0 (default: 78.65 GiB)`, `64424509440 (60.00 GiB)`
function M.show_input(c, side)
  local v = c[side]
  local t = show(v)
  if type(v) == "number" and c.path:match("_bytes$") then
    local eff = c["effective_" .. side]
    if v == 0 and type(eff) == "number" then
      t = t .. string.format(" (default: %.2f GiB)", eff / 2 ^ 30)
    else
      t = t .. string.format(" (%.2f GiB)", v / 2 ^ 30)
    end
  end
  return t
end

local function secs(x) return x and string.format("%.3f s", x) or "-" end
local function dp(x)
  if not util.is_finite(x) then return "" end
  if math.abs(x) < 0.05 then x = 0.0 end -- no "-0.0%"
  return string.format("%+.1f%%", x)
end

--- Lines per kind (entered, left, moved) in the text section.
M.max_lines = 5

--- The "changes vs baseline" section as text lines (table output, report).
-- @tparam table diff a `baseline_diff`
-- @treturn table array of lines
function M.lines(diff)
  local L = {}
  local function P(fmt, ...) L[#L + 1] = string.format(fmt, ...) end
  P("changes vs baseline %s:", tostring(diff.baseline))
  local ch = diff.inputs and diff.inputs.changed or {}
  if #ch == 0 then
    P("  inputs: unchanged")
  else
    P("  inputs (%d changed):", #ch)
    for _, c in ipairs(ch) do
      P("    %s: %s -> %s", c.path, M.show_input(c, "before"), M.show_input(c, "after"))
    end
  end
  local sm = diff.summary or {}
  if sm.space_size then
    P("  search space: %s -> %s candidates; feasible: %s -> %s", show(sm.space_size.before),
      show(sm.space_size.after), show(sm.feasible.before), show(sm.feasible.after))
  end
  local b = diff.best or {}
  if b.before or b.after then
    P("  best step time: %s -> %s %s%s", secs(b.before and b.before.step_time),
      secs(b.after and b.after.step_time), dp(b.delta_pct), b.tokens_delta_pct and string.format(
      " (a step of another size: tokens/s per GPU %.0f -> %.0f %s)", b.before.tokens_per_s_per_gpu,
      b.after.tokens_per_s_per_gpu, dp(b.tokens_delta_pct)) or "")
  end
  local t = diff.top_k or {}
  -- at most `limit` lines per kind (the JSON has them all)
  local function each(list, limit, f)
    for i, e in ipairs(list or {}) do
      if limit and i > limit then
        P("  ... and %d more (baseline_diff in the JSON output)", #list - limit)
        break
      end
      f(e)
    end
  end
  local limit = M.max_lines
  each(t.entered, limit, function(e)
    P("  entered  #%d: %s (%s)", e.rank, e.strategy, secs(e.step_time))
  end)
  each(t.left, limit, function(e)
    P("  left     was #%d: %s (%s)%s", e.rank, e.strategy, secs(e.step_time),
      e.why and (": " .. e.why.text) or "")
  end)
  each(t.moved, limit, function(e)
    P("  moved    #%d -> #%d: %s (%s -> %s %s)", e.before, e.after, e.strategy,
      secs(e.step_time_before), secs(e.step_time_after), dp(e.delta_pct))
  end)
  for _, e in ipairs(t.kept or {}) do
    if e.delta_s and math.abs(e.delta_s) > 1e-9 * math.abs(e.step_time_before or 1) then
      P("  same #%d, step %s -> %s %s: %s", e.after, secs(e.step_time_before),
        secs(e.step_time_after), dp(e.delta_pct), e.strategy)
    end
  end
  if #(t.entered or {}) == 0 and #(t.left or {}) == 0 and #(t.moved or {}) == 0 then
    P("  top-k: same strategies in the same order")
  end
  return L
end

return M
