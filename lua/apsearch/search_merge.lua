--- Merging the partial states of a search split across workers
-- (`apsearch run --jobs N`, apsearch.search.walk_parallel) into what the
-- one walk in enumeration order keeps: every rule is the one walk's rule
-- with the candidate index as the last tie-break, so the result does not
-- depend on how the space was split.
--
-- A worker state (search.run's `worker_state`) holds `heap` (top-k
-- entries), `keeper` (the pareto objective's points, or nil), `closest`,
-- `scatter`, `front` (arrays `index`, `step_time`, `mem_peak`,
-- `strategy`; scatter also `ord` and `stride`) and `trends` (per
-- dimension `{best step time, its memory, candidate, index}` tables keyed
-- by degree value), `summary` (per reason code `{count, phase, rule,
-- example, message, at, mem_peak, mem_limited}`, `at` the example's
-- index) and
-- `counts`.
-- @module apsearch.search_merge
local M = {}

-- entry e comes before entry p as the example of a reason: the first
-- candidate with it, but for MEMORY_LIMIT the one closest to fitting
-- (least of what the limit bounds, then the first)
local function example_first(code, e, p)
  if code == "MEMORY_LIMIT" and e.mem_limited ~= p.mem_limited then return e.mem_limited < p.mem_limited end
  return e.at < p.at
end

--- Merges a worker's reasons into the summary so far: counts add up; a
-- reason's example, message, phase and rule are those of its first
-- candidate (`at`, its index), but for MEMORY_LIMIT, whose example is the
-- candidate closest to fitting (least peak memory, then the first).
-- @tparam table summary the summary so far (code -> entry), updated
-- @tparam table part the worker's summary
function M.summary(summary, part)
  for code, p in pairs(part) do
    local e = summary[code]
    if not e then
      summary[code] = p
    else
      local count = e.count + p.count
      if example_first(code, p, e) then
        summary[code] = p
        e = p
      end
      e.count = count
    end
  end
end

--- The reason codes numbered by their example's index (the one walk
-- numbers them as it meets them); sets each entry's `id`.
-- @tparam table summary the merged summary
-- @treturn table codes by number
function M.reasons(summary)
  local codes = {}
  for code in pairs(summary) do codes[#codes + 1] = code end
  table.sort(codes, function(a, b) return summary[a].at < summary[b].at end)
  for id, code in ipairs(codes) do summary[code].id = id end
  return codes
end

--- Every worker's entries of one kind, by candidate index.
-- @tparam table workers worker states
-- @tparam string field `heap` (entries with `index`)
-- @treturn table array
function M.by_index(workers, field)
  local all = {}
  for _, w in ipairs(workers) do
    for _, e in ipairs(w[field]) do all[#all + 1] = e end
  end
  table.sort(all, function(a, b) return a.index < b.index end)
  return all
end

--- The pareto objective's points of every worker, by candidate index.
-- @tparam table workers worker states
-- @treturn table array of `{index, step_time, mem_peak, strategy}`
function M.keeper_points(workers)
  local all = {}
  for _, w in ipairs(workers) do
    local kp = w.keeper
    for i = 1, kp.n do
      all[#all + 1] = { index = kp.idx[i], step_time = kp.step[i], mem_peak = kp.mem[i], strategy = kp.strat[i] }
    end
  end
  table.sort(all, function(a, b) return a.index < b.index end)
  return all
end

--- The `keep` estimated infeasible candidates closest to fitting.
-- @tparam table workers worker states
-- @tparam integer keep how many
-- @tparam function order the one walk's order (memory, step time, index)
-- @treturn table array, in that order
function M.closest(workers, keep, order)
  local all = {}
  for _, w in ipairs(workers) do
    for _, e in ipairs(w.closest) do all[#all + 1] = e end
  end
  table.sort(all, order)
  for i = keep + 1, #all do all[i] = nil end
  return all
end

--- Chart 7's sample: the feasible candidates whose sample key k has
-- (k - 1) % stride == 0, stride the least power of two (at least each
-- worker's) that keeps at most `cap` of them, by index.
-- @tparam table workers worker states
-- @tparam integer cap most points
-- @treturn table `{stride, ord, index, step_time, mem_peak, strategy}`
function M.scatter(workers, cap)
  local stride, pts = 1, {}
  for _, w in ipairs(workers) do
    local sc = w.scatter
    if sc.stride > stride then stride = sc.stride end
    for i = 1, #sc.index do
      pts[#pts + 1] = { sc.ord[i], sc.index[i], sc.step_time[i], sc.mem_peak[i], sc.strategy[i] }
    end
  end
  table.sort(pts, function(a, b) return a[2] < b[2] end)
  local out
  repeat
    out = { stride = stride, ord = {}, index = {}, step_time = {}, mem_peak = {}, strategy = {} }
    local n = 0
    for _, p in ipairs(pts) do
      if (p[1] - 1) % stride == 0 then
        n = n + 1
        out.ord[n], out.index[n], out.step_time[n], out.mem_peak[n], out.strategy[n] = p[1], p[2], p[3], p[4], p[5]
      end
    end
    stride = 2 * stride
  until n <= cap
  return out
end

--- The Pareto front of (step time, peak memory) of every worker's front:
-- by step time, memory strictly decreasing; of points alike, the first.
-- @tparam table workers worker states
-- @treturn table arrays `step_time`, `mem_peak`, `index`, `strategy`
function M.front(workers)
  local pts = {}
  for _, w in ipairs(workers) do
    local f = w.front
    for i = 1, #f.index do
      pts[#pts + 1] = { f.step_time[i], f.mem_peak[i], f.index[i], f.strategy[i] }
    end
  end
  table.sort(pts, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[3] < b[3]
  end)
  local out = { step_time = {}, mem_peak = {}, index = {}, strategy = {} }
  local n, best = 0, math.huge
  for _, p in ipairs(pts) do
    if p[2] < best then
      best = p[2]
      n = n + 1
      out.step_time[n], out.mem_peak[n], out.index[n], out.strategy[n] = p[1], p[2], p[3], p[4]
    end
  end
  return out
end

--- Merges a worker's trend of one dimension into the one so far: per
-- degree value, the least step time, then memory, then index.
-- @tparam table acc `{step, mem, cand, index}` tables keyed by value, updated
-- @tparam table part the worker's, alike
function M.trend(acc, part)
  local s, m, c, i = acc[1], acc[2], acc[3], acc[4]
  for v, st in pairs(part[1]) do
    local mem, idx = part[2][v], part[4][v]
    local b = s[v]
    if b == nil or st < b or (st == b and (mem < m[v] or (mem == m[v] and idx < i[v]))) then
      s[v], m[v], c[v], i[v] = st, mem, part[3][v], idx
    end
  end
end

return M
