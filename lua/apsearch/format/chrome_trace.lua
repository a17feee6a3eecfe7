--- The estimated step as a Chrome trace (`apsearch estimate --trace
-- FILE`): JSON in the trace-event format that Perfetto (ui.perfetto.dev)
-- and chrome://tracing open, beside a PyTorch profiler trace of the real
-- run (docs/outputs.md "Estimated timeline").
--
-- One process per pipeline rank, two threads in it: "GPU" with the ops
-- of the simulated schedule (forward F, backward B, or input gradient I
-- and weight gradient W of zero-bubble schedules, per micro-batch and
-- model chunk) followed by the step's exposed pipeline transfers, data-parallel sync and
-- optimizer, and "host" with the time the host spends launching each op's
-- kernels (docs/modeling.md "Host time").  Without pipelining the rank
-- runs its micro-batches' forward and backward one after the other.
-- Timestamps are microseconds from the step's start.
-- @module apsearch.format.chrome_trace
local M = {}

--- Seconds -> trace-event microseconds.
local US_PER_S = 1e6
--- Most schedule ops asked of ctx:timeline (its own limit, lcore.c).
M.MAX_OPS = 1 << 16

local NAMES = { F = "forward", B = "backward", I = "backward (input grad)", W = "backward (weight grad)" }

local function meta(events, pid, tid, key, name)
  events[#events + 1] = { ph = "M", pid = pid, tid = tid, name = key, args = { name = name } }
end

local function span(events, pid, tid, cat, name, start, dur, args)
  events[#events + 1] = { ph = "X", pid = pid, tid = tid, cat = cat, name = name,
    ts = start * US_PER_S, dur = math.max(dur, 0) * US_PER_S, args = args }
end

--- Share of a micro-batch chunk's backward launches in each op of a
-- zero-bubble schedule: its input-gradient (I) and weight-gradient (W)
-- ops split the backward's kernels (one GEMM each per forward GEMM).
local SPLIT_BWD_SHARE = 0.5

-- The rank's host time for one op: the stage's per micro-batch host time
-- times the chunk's share of the rank's layers (`share`; the launches are
-- per layer, so a chunk that holds only the loss launches none), a B op
-- the backward's kernels, I and W half of them each.
local function host_of(stage, kind, share)
  if kind == "F" then return (stage.host_fwd or 0) * share end
  local half = (kind == "I" or kind == "W") and SPLIT_BWD_SHARE or 1
  return (stage.host_bwd or 0) * half * share
end

-- Each rank's chunks' shares of its layers (format.common.chunk_layers:
-- the layout the stage table shows), the multi-token-prediction layers
-- (`mtp`) with the last model chunk, as Megatron-LM places them; by rank
-- and 1-based chunk; equal shares where the ranks' layer counts are not
-- known.
local function chunk_shares(est, tl, stages, mtp)
  local p, v = tl.pp_degree or 1, tl.vpp_degree or 1
  local counts, known = {}, est.strategy ~= nil
  for i = 1, p do
    counts[i] = (stages[i] or {}).num_layers
    known = known and counts[i] ~= nil
  end
  local shares = {}
  local chunks = known and require("apsearch.format.common").chunk_layers(est.strategy, counts) or {}
  for i = 1, p do
    shares[i] = {}
    local sizes, total = {}, 0
    for k = 1, v do
      local c = (chunks[i] or {})[k]
      sizes[k] = c and (c[3] - c[2] + 1) + (c[1] == p * v and mtp or 0) or nil
      total = total + (sizes[k] or 0)
    end
    for k = 1, v do
      shares[i][k] = (sizes[k] and total > 0) and sizes[k] / total or 1 / v
    end
  end
  return shares
end

-- Schedule ops of every rank from a timeline (ctx:timeline).
local function from_timeline(events, tl, stages, est, mtp)
  local v = tl.vpp_degree or 1
  local shares = chunk_shares(est, tl, stages, mtp)
  local ends = 0
  for _, rank in ipairs(tl.ranks) do
    local pid, st = rank.rank, stages[rank.rank] or {}
    for _, op in ipairs(rank.events) do
      local name = ("%s mb %d chunk %d"):format(op.kind, op.mb, op.chunk)
      span(events, pid, 1, NAMES[op.kind] or op.kind, name, op.start, op["end"] - op.start,
        { micro_batch = op.mb, chunk = op.chunk, stage = op.stage, overlap = op.overlap })
      local h = host_of(st, op.kind, (shares[pid] or {})[op.chunk] or 1 / v)
      if h > 0 then span(events, pid, 2, "host", "launch " .. name, op.start, h) end
      ends = math.max(ends, op["end"])
    end
  end
  return ends
end

-- Without pipelining: m micro-batches, forward then backward each; past
-- M.MAX_OPS ops, the middle micro-batches are left out (the time runs
-- on: the kept ones sit where the step has them).  Returns the end and
-- the micro-batches left out.
local function sequential(events, est)
  local st, t = est.stages[1] or {}, 0
  local m = est.micro_batch_num
  local keep = math.max(1, M.MAX_OPS // 4)   -- first and last `keep`
  local per = (st.time_fwd or 0) + (st.time_bwd or 0)
  for mb = 1, m do
    if m > 2 * keep and mb > keep and mb <= m - keep then
      t = t + per
      goto continue
    end
    for _, kind in ipairs({ "F", "B" }) do
      local dur = kind == "F" and st.time_fwd or st.time_bwd
      local name = ("%s mb %d"):format(kind, mb)
      span(events, 1, 1, NAMES[kind], name, t, dur, { micro_batch = mb })
      local h = host_of(st, kind, 1)
      if h > 0 then span(events, 1, 2, "host", "launch " .. name, t, h) end
      t = t + dur
    end
    ::continue::
  end
  return t, m > 2 * keep and (m - 2 * keep) or 0
end

--- The trace of one estimate.
-- @tparam table est ctx:estimate's result (feasible or not)
-- @tparam table|nil tl ctx:timeline's result (nil without pipelining)
-- @tparam table inputs ctx:inputs()
-- @treturn table `{traceEvents, displayTimeUnit, otherData}`
function M.build(est, tl, inputs)
  local events = {}
  local p = tl and tl.pp_degree or 1
  for r = 1, p do
    meta(events, r, 0, "process_name", ("pipeline rank %d"):format(r))
    meta(events, r, 1, "thread_name", "GPU (estimated)")
    meta(events, r, 2, "thread_name", "host launches (estimated)")
  end
  local stages = {}
  for _, s in ipairs(est.stages or {}) do stages[s.stage] = s end
  local t, skipped
  local mtp = ((inputs or {}).training or {}).mtp_num_layers or 0
  if tl then t = from_timeline(events, tl, stages, est, mtp) else t, skipped = sequential(events, est) end
  -- after the last backward, on every rank: what the step exposes of the
  -- pipeline transfers (not in the simulated ops), the gradient sync and the
  -- optimizer
  local pb = est.performance_breakdown or {}
  for r = 1, p do
    local at = t
    for _, k in ipairs({ "pp_p2p", "dp_grad_sync", "hsdp_replicate_sync", "optimizer" }) do
      local e = pb[k] and pb[k].exposed or 0
      if e > 0 then
        span(events, r, 1, k, k .. " (exposed)", at, e, { total_s = pb[k].total })
        at = at + e
      end
    end
  end
  local cut = tl and tl.windows and #tl.windows > 1
  local note = cut and ("the schedule's middle is left out: ops of " .. tl.ops .. " kept " .. tl.ops_kept)
    or ((skipped or 0) > 0 and ("micro-batches left out in the middle: " .. skipped)) or nil
  local passes = est.gradient_accumulation_steps or 1
  if passes > 1 then
    note = (note and note .. "; " or "") .. ("the schedule is one of the step's %d (training.local_batch_size), " ..
      "the exposed terms after it the step's"):format(passes)
  end
  return {
    traceEvents = events, displayTimeUnit = "ms",
    otherData = {
      producer = "apsearch estimate --trace", model = inputs.model.name,
      step_time_s = est.step_time, micro_batch_num = est.micro_batch_num,
      pp_schedule = tl and tl.pp_schedule or nil,
      -- Megatron's interleaved groups, when not its default (pp_degree)
      microbatch_group_size = tl and est.strategy
        and require("apsearch.format.common").field_value(est.strategy, "microbatch_group_size") or nil,
      note = note,
    },
  }
end

return M
