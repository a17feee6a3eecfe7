-- tests/lua/report_spec.lua -- outputs and the HTML report
-- (lua/apsearch/report/html.lua, format/csv.lua, format/json.lua, the
-- search driver's chart data): AP-DENSE-06 (count, order and fields of the
-- top-k under every built-in objective, the Pareto front) and AP-DENSE-08
-- (the report is written with the charts' data consistent with the top-k,
-- the breakdowns, the stages, the filter reasons and every candidate).
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local cjson = require "cjson"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local space_mod = require "apsearch.space"
local html = require "apsearch.report.html"
local csv = require "apsearch.format.csv"
local json = require "apsearch.format.json"
local common = require "apsearch.format.common"

local H = require "spec_helpers"
local q, read, tmpdir, apsearch = H.q, H.read, H.tmpdir, H.apsearch
local ROOT = os.getenv("APS_ROOT") or "."
local BIN = os.getenv("APS_BIN")

local function near(a, b, rel)
  rel = rel or 1e-9
  return math.abs(a - b) <= rel * math.max(math.abs(a), math.abs(b), 1e-300)
end

-- Llama-3.1-8B on 2 nodes: DP/FSDP x TP x PP, two recompute modes; some
-- candidates over the memory limit, some filtered early
local RAW = {
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 2, devices_per_node = 8 },
  training = { global_batch_size = 64, seq_length = 8192, framework = "megatron" },
  search_space = { data_parallel = "auto", tp_degree = { 1, 2, 4, 8 }, pp_degree = { 1, 2, 4, 3 },
    fsdp_degree = { 1, 2, 4 }, micro_batch_size = { 1, 2, 4 }, layer_recompute = { "none", "full" } },
  constraints = { memory_limit_gib = 50 },
  top_k = 6,
}

-- the policy of each result (feasible_list runs it again)
local policy_of = setmetatable({}, { __mode = "k" })

local function run(extra, opts)
  local raw = {}
  for k, v in pairs(RAW) do raw[k] = v end
  for k, v in pairs(extra or {}) do raw[k] = v end
  local p = policy.from_table(raw, "report_spec.lua", opts)
  local r = search.run(p)
  policy_of[r] = p
  return r
end

-- every feasible candidate (step, mem, strategy), as the search streams
-- them to its sink (the candidates.csv of --candidates feasible)
local function feasible_list(r)
  local list = {}
  search.run(policy_of[r], { sensitivity = false, candidates = { mode = "feasible",
    row = function(index, e, st, mem, cand)
      assert(e == nil)
      list[#list + 1] = { index = index, s = space_mod.copy(cand), step_time = st, mem_peak = mem }
    end } })
  return list
end

describe("AP-DENSE-06: top-k count, order and fields under each objective", function()
  local base
  setup(function() base = run() end)

  it("returns top_k records ranked by the objective, each with every field", function()
    assert.are.equal(6, #base.top_k_strategies)
    for i, rec in ipairs(base.top_k_strategies) do
      assert.are.equal(i, rec.rank)
      assert.is_true(rec.feasible)
      for _, f in ipairs(space_mod.fields) do
        -- microbatch_group_size: a level only when listed (0 left out)
        if f ~= "allow_idle_devices" and f ~= "microbatch_group_size" then
          assert.is_not_nil(rec[f], f)
        end
      end
      assert.is_number(rec.index)
      assert.is_true(rec.memory_cost.total <= rec.memory_cost.limit)
      if i > 1 then
        local a = base.top_k_strategies[i - 1].performance_cost.step_time
        assert.is_true(a <= rec.performance_cost.step_time)
      end
    end
  end)

  it("ranks by a weighted composite score (weights from the objective name)", function()
    local r = run({ objective = "composite(step_time=1, memory=1)" })
    assert.are.equal("composite(step_time=1, memory=1, throughput=0)", r.inputs.objective)
    local function score(rec)
      return math.log(rec.performance_cost.step_time) + math.log(rec.memory_cost.total)
    end
    for i = 2, #r.top_k_strategies do
      assert.is_true(score(r.top_k_strategies[i - 1]) <= score(r.top_k_strategies[i]) + 1e-12)
    end
    -- the best composite score over every feasible candidate is rank 1
    local best = math.huge
    for _, e in ipairs(feasible_list(r)) do
      best = math.min(best, math.log(e.step_time) + math.log(e.mem_peak))
    end
    assert.is_true(near(best, score(r.top_k_strategies[1]), 1e-12))
    -- defaults, and weights given with ; on the command line
    local d = run({ objective = "composite" })
    assert.are.equal("composite(step_time=1, memory=0.25, throughput=0)", d.inputs.objective)
    local s = run(nil, { set = { "objective=composite(step_time=2;memory=1)" } })
    assert.are.equal("composite(step_time=2, memory=1, throughput=0)", s.inputs.objective)
  end)

  it("rejects malformed composite weights", function()
    local objectives = require "apsearch.objectives"
    for _, bad in ipairs({ "composite(speed=1)", "composite(memory=-1)", "composite(step_time=0)",
      "composite(x)", "composite(" }) do
      assert.has_error(function() objectives.parse_composite(bad) end)
      assert.is_false(objectives.is_builtin(bad), bad)
    end
  end)

  it("ranks the Pareto front of memory and step time, by step time, then the next front", function()
    local r = run({ objective = "pareto", top_k = 8 })
    assert.are.equal("pareto", r.inputs.objective)
    local all = feasible_list(r)
    local function dominated(e, pool)
      for _, o in ipairs(pool) do
        if o ~= e and o.step_time <= e.step_time and o.mem_peak <= e.mem_peak and
          (o.step_time < e.step_time or o.mem_peak < e.mem_peak) then return true end
      end
      return false
    end
    local front = {}
    for _, e in ipairs(all) do if not dominated(e, all) then front[#front + 1] = e end end
    table.sort(front, function(a, b) return a.step_time < b.step_time end)
    local n1 = 0
    for _, rec in ipairs(r.top_k_strategies) do if rec.pareto_front == 1 then n1 = n1 + 1 end end
    assert.are.equal(math.min(#front, 8), n1)
    for i = 1, n1 do
      assert.are.equal(front[i].step_time, r.top_k_strategies[i].performance_cost.step_time)
    end
    for i = 2, #r.top_k_strategies do
      local a, b = r.top_k_strategies[i - 1], r.top_k_strategies[i]
      assert.is_true(a.pareto_front < b.pareto_front or (a.pareto_front == b.pareto_front and
        a.performance_cost.step_time <= b.performance_cost.step_time))
    end
    -- the result's pareto_front (chart 7) is that front, under any objective
    assert.are.equal(#front, #base.pareto_front)
    for i, p in ipairs(base.pareto_front) do
      assert.are.equal(front[i].step_time, p.step_time)
      assert.are.equal(front[i].mem_peak, p.mem_peak)
      assert.are.equal(front[i].s.tp_degree, p.strategy.tp_degree)
    end
  end)
end)

describe("AP-DENSE-08: chart data consistent with the result", function()
  local r, d
  setup(function()
    r = run()
    d = html.chart_data(r)
  end)

  it("charts 1-2: step time and memory stacked by category sum to the top-k's", function()
    assert.are.equal(#r.top_k_strategies, #d.topk)
    for i, t in ipairs(d.topk) do
      local rec = r.top_k_strategies[i]
      assert.are.equal(rec.performance_cost.step_time, t.step_time)
      assert.are.equal(rec.memory_cost.total, t.mem_peak)
      local st, mem = 0, 0
      for _, c in ipairs(common.time_categories) do
        st = st + t.time[c]
        assert.are.equal(r.performance_breakdown[i][c].exposed, t.time[c])
      end
      for _, c in ipairs(common.memory_categories) do mem = mem + t.mem[c] end
      assert.is_true(near(st, t.step_time, 1e-9))
      assert.is_true(near(mem, t.mem_peak, 1e-9))
      assert.are.equal(r.memory_breakdown[i].comm_buffers.total, t.mem.comm_buffers)
    end
    assert.are.equal(r.top_k_strategies[1].memory_cost.limit, d.memory_limit_bytes)
    assert.are.equal(50 * 2 ^ 30, d.memory_limit_bytes)
    -- a limit given bounds max reserved: the charts' bars are the device
    -- peak, so each rank carries the bounded figure and the line says what
    -- it bounds (a feasible bar stood over the line unexplained: breaker pass)
    assert.are.equal("reserved", d.memory_limit_kind)
    for i, t in ipairs(d.topk) do
      assert.are.equal(r.top_k_strategies[i].memory_cost.reserved, t.mem_limited)
      assert.is_true(t.mem_limited <= d.memory_limit_bytes)
    end
  end)

  it("chart 3: stages of the first pipelined top-k strategy, as stage_summary", function()
    local rank = d.stage_rank
    local first_pp
    for _, rec in ipairs(r.top_k_strategies) do
      if rec.pp_degree > 1 then first_pp = rec.rank break end
    end
    assert.are.equal(first_pp or 1, rank)
    for i, t in ipairs(d.topk) do
      local ss = r.stage_summary[i].stages
      assert.are.equal(#ss, #t.stages)
      for j, st in ipairs(t.stages) do
        assert.are.equal(ss[j].time_fwd, st.time_fwd)
        assert.are.equal(ss[j].time_bwd, st.time_bwd)
        assert.are.equal(ss[j].memory_breakdown.total, st.total)
        assert.are.equal(ss[j].num_layers, st.num_layers)
      end
    end
  end)

  it("charts 4-5: counts and reasons match the summaries", function()
    local s = r.all_candidate_summary
    assert.are.equal(s.generated, d.counts.feasible + d.counts.infeasible + d.counts.filtered_early)
    assert.are.equal(s.feasible, d.counts.feasible)
    assert.is_true(d.counts.infeasible > 0 and d.counts.filtered_early > 0)
    local n = 0
    for _, reason in ipairs(d.reasons) do
      assert.are.equal(r.infeasible_summary[reason.code].count, reason.count)
      assert.are.equal(r.infeasible_summary[reason.code].phase, reason.phase)
      n = n + reason.count
    end
    assert.are.equal(s.filtered_early + s.infeasible, n)
    assert.truthy(r.infeasible_summary.MEMORY_LIMIT)
  end)

  it("chart 6: the best step time per degree is the minimum over feasible candidates", function()
    local best = { data_parallel = {}, tp_degree = {}, pp_degree = {}, cp_degree = {} }
    for _, e in ipairs(feasible_list(r)) do
      local vals = { data_parallel = e.s.dp_degree * e.s.fsdp_degree, tp_degree = e.s.tp_degree,
        pp_degree = e.s.pp_degree, cp_degree = e.s.cp_degree }
      for dim, v in pairs(vals) do
        local b = best[dim][v]
        if not b or e.step_time < b.step_time or (e.step_time == b.step_time and e.mem_peak < b.mem_peak) then
          best[dim][v] = e
        end
      end
    end
    assert.are.equal(4, #r.trends)
    for _, t in ipairs(r.trends) do
      local n = 0
      for _ in pairs(best[t.dimension]) do n = n + 1 end
      assert.are.equal(n, #t.points, t.dimension)
      for _, p in ipairs(t.points) do
        local b = best[t.dimension][p.value]
        assert.are.equal(b.step_time, p.step_time)
        assert.are.equal(b.mem_peak, p.mem_peak)
        assert.are.equal(b.s.tp_degree, p.strategy.tp_degree)
      end
    end
    -- the overall best is some trend point's best
    assert.are.equal(r.top_k_strategies[1].performance_cost.step_time, math.min(
      table.unpack((function() local x = {} for _, p in ipairs(r.trends[2].points) do x[#x + 1] = p.step_time end return x end)())))
  end)

  it("chart 6: no panel for a degree with one feasible value (all of them when every degree has one)", function()
    local one = { points = { { value = 1, step_time = 1.0, mem_peak = 1 } } }
    local two = { points = { { value = 1, step_time = 2.0, mem_peak = 1 }, { value = 2, step_time = 1.0, mem_peak = 2 } } }
    local fake = {}
    for k, v in pairs(r) do fake[k] = v end
    fake.trends = {
      { dimension = "tp_degree", label = "tp_degree", points = two.points },
      { dimension = "cp_degree", label = "cp_degree", points = one.points },
    }
    local dd = html.chart_data(fake)
    assert.are.equal(1, #dd.trends)
    assert.are.equal("tp_degree", dd.trends[1].dimension)
    fake.trends = { { dimension = "cp_degree", label = "cp_degree", points = one.points } }
    dd = html.chart_data(fake)
    assert.are.equal(1, #dd.trends)
    assert.are.equal("cp_degree", dd.trends[1].dimension)
  end)

  it("chart 7: every feasible candidate (sampled when many), front and top-k kept", function()
    assert.are.equal(r.all_candidate_summary.feasible, d.scatter.total)
    assert.are.equal(d.scatter.total, d.scatter.shown)  -- few enough: all drawn
    local idx = {}
    for _, p in ipairs(d.scatter.points) do idx[p[3]] = p end
    for _, t in ipairs(d.topk) do
      local p = idx[t.index]
      assert.truthy(p, "top-k rank " .. t.rank)
      assert.is_true(near(p[1], t.mem_peak / 2 ^ 30, 1e-12))
      assert.are.equal(t.step_time, p[2])
    end
    for _, f in ipairs(d.front) do assert.truthy(idx[f.index]) end
    -- a sample keeps the front and the top-k
    local small = html.chart_data(r, { max_points = 10 })
    assert.is_true(small.scatter.shown < small.scatter.total)
    local kept = {}
    for _, p in ipairs(small.scatter.points) do kept[p[3]] = true end
    for _, t in ipairs(d.topk) do assert.is_true(kept[t.index]) end
    for _, f in ipairs(d.front) do assert.is_true(kept[f.index]) end
    -- the point's strategy fields: varying ones per point, the rest fixed
    for i, dim in ipairs(d.scatter.dims) do
      local p = idx[r.top_k_strategies[1].index]
      assert.are.equal(tostring(r.top_k_strategies[1][dim]), tostring(p[3 + i]))
    end
  end)

  it("chart 8: the top-k re-estimated with scaled inter-node bandwidth", function()
    local bw = r.bandwidth_sensitivity
    assert.are.same({ 0.25, 0.5, 1, 2, 4 }, bw.factors)
    assert.are.equal("cluster.device.inter_node_bandwidth", bw.parameter)
    assert.are.equal(r.inputs.cluster.device.inter_node_bandwidth, bw.base_value)
    assert.is_false(bw.single_node)
    local slower = false
    for i, s in ipairs(bw.series) do
      local rec = r.top_k_strategies[i]
      assert.are.equal(rec.rank, s.rank)
      assert.are.equal(rec.performance_cost.step_time, s.step_time[3])
      for f = 2, 5 do assert.is_true(s.step_time[f] <= s.step_time[f - 1] + 1e-12) end
      if s.step_time[1] > s.step_time[3] then slower = true end
    end
    assert.is_true(slower, "a quarter of the bandwidth slows some strategy down")
    -- an independent core context with the bandwidth scaled agrees
    local core = require "apsearch.core"
    local inp = json.decode(json.encode(r.inputs))
    inp.cluster.device.inter_node_bandwidth = inp.cluster.device.inter_node_bandwidth * 0.25
    local ctx = core.context(inp.model, inp.cluster, inp.training)
    local ev = ctx:evaluate(search.strategy_of(r.top_k_strategies[1]))
    assert.is_true(near(ev.step_time, bw.series[1].step_time[1], 1e-9))
  end)

  it("chart 8 keeps a balanced split and per-stage recompute as chosen (factor 1 = the step time)", function()
    local r2 = run({ search_space = { data_parallel = "auto", tp_degree = { 2 }, pp_degree = { 4 },
      layer_offset = { "balanced" }, layer_recompute = { "full" }, recompute_num_layers = { "auto" } },
      top_k = 2 })
    assert.is_true(#r2.top_k_strategies >= 1)
    for i, s in ipairs(r2.bandwidth_sensitivity.series) do
      local rec = r2.top_k_strategies[i]
      assert.is_true(rec.balance_stages)
      assert.is_true(s.feasible[3])
      assert.is_true(near(rec.performance_cost.step_time, s.step_time[3], 1e-12))
    end
  end)

  it("chart 8 re-estimates an MoE top-k with its expert parallelism (factor 1 = the step time)", function()
    -- the expert-parallel fields (ep_degree 8 and 4 in this top-k) were
    -- dropped once, and each rank was re-estimated without experts sharded
    local p = policy.load(ROOT .. "/examples/qwen3_30b_a3b_h100.lua", { top_k = 3 })
    local r3 = search.run(p, { jobs = 1 })
    local eps = {}
    for i, s in ipairs(r3.bandwidth_sensitivity.series) do
      local rec = r3.top_k_strategies[i]
      eps[rec.ep_degree] = true
      assert.are.equal(rec.performance_cost.step_time, s.step_time[3])
    end
    assert.is_true(eps[8] and eps[4], "the top-k has EP 8 and EP 4")
  end)
end)

describe("chart 9: the pipeline schedule of the charted strategy", function()
  local r, d, pol
  setup(function()
    -- every op kept: 2 ranks x 260 ops within 2 x 1000
    r = run({ training = { global_batch_size = 64, seq_length = 8192, framework = "fsdp2" },
      search_space = { data_parallel = "auto", tp_degree = { 8 }, pp_degree = { 2 }, vpp_degree = { 2 },
        micro_batch_size = { 1 }, layer_recompute = { "full" }, pp_schedule = { "dualpipev" } }, top_k = 2 })
    pol = policy_of[r]
    r = search.run(pol, { timeline_ops_per_rank = 1000 })
    d = html.chart_data(r)
  end)

  it("is search.run's timeline of the first pipelined top-k strategy, every op kept", function()
    local tl = r.stage_summary[d.stage_rank].timeline
    assert.truthy(tl)
    assert.are.equal("dualpipev", tl.pp_schedule)
    -- 16 GPUs, tp 8 x pp 2: dp 1, m = 64 micro-batches; DualPipeV runs
    -- 2 m F and 2 m backwards a rank, plus a W per input-only backward:
    -- rank 1 (r = 0) 3 (p - r - 1 + r + 1 + p - r - 1), rank 2 (r = 1) 2
    assert.are.equal(64, tl.micro_batch_num)
    assert.are.equal(4 * 64 + 3, tl.ranks[1].ops)
    assert.are.equal(4 * 64 + 2, tl.ranks[2].ops)
    assert.are.equal(tl.ops, tl.ops_kept)
    local t = d.timeline
    assert.are.equal("DualPipeV", t.schedule)
    assert.are.equal(d.stage_rank, t.rank)
    assert.is_true(near(t.bubble_fraction, tl.bubble / tl.step, 1e-12))
    for i, rk in ipairs(t.ranks) do
      assert.is_true(near(rk.idle_fraction, (tl.step - tl.ranks[i].busy) / tl.step, 1e-12))
      assert.are.equal(#tl.ranks[i].events, #rk.events)
      local e, c = rk.events[1], tl.ranks[i].events[1]
      assert.are.same({ c.kind, c.mb, c.stage, c.chunk }, { e[1], e[2], e[3], e[4] })
      -- times to M.timeline_digits significant digits
      assert.is_true(near(e[6], c["end"], 1e-5))
    end
    -- overlapped F+B pairs are marked
    local pairs_ = 0
    for _, e in ipairs(t.ranks[1].events) do pairs_ = pairs_ + e[7] end
    assert.is_true(pairs_ > 0)
  end)

  it("is drawn in the stages section with the bubble named, and summarised without ECharts", function()
    local text = html.render(r, { echarts_js = "/* fake */", echarts_version = "6.1.0" })
    local height = html.gantt_height(2)
    assert.truthy(text:find('<div id="chart9" class="chart wide" style="height: ' .. height .. 'px"', 1, true))
    assert.is_true(text:find('id="chart9"', 1, true) > text:find('id="stages"', 1, true))
    local t = d.timeline
    local want = string.format("bubble %.4g s = %.1f %% of it", t.bubble, 100 * t.bubble_fraction)
    assert.truthy(text:find(want, 1, true), want)
    local plain = html.render(r, {})
    assert.is_nil(plain:find('id="chart9"', 1, true))
    assert.truthy(plain:find('id="timeline-summary"', 1, true))
    assert.truthy(plain:find("DualPipeV over 2 pipeline ranks x 2 model chunks, 64 micro-batches", 1, true))
    assert.is_nil(plain:find("pipeline schedules (training.local_batch_size)", 1, true))
    -- a step of passes (training.local_batch_size): the chart is one of them, and says so
    local rec
    for _, t in ipairs(r.top_k_strategies) do if t.rank == d.stage_rank then rec = t end end
    local pc = rec.performance_cost
    pc.gradient_accumulation_steps = 4
    local passes = html.render(r, {})
    pc.gradient_accumulation_steps = nil
    assert.truthy(passes:find("64 micro%-batches: pipeline .*; one of 4 pipeline schedules a step runs " ..
      "%(training.local_batch_size%), each as long"), passes)
  end)

  it("keeps the fill and the drain when the ops exceed the budget, and says so", function()
    -- the default: 240 ops a rank, 480 < 517 + 516
    local small = search.run(pol)
    local tl = small.stage_summary[1].timeline
    assert.are.equal(2, #tl.windows)
    assert.is_true(tl.ops_kept <= 480)
    assert.is_true(tl.windows[1][2] < tl.windows[2][1])
    small = search.run(pol, { timeline_max_ops = 40 })
    tl = small.stage_summary[1].timeline
    assert.are.equal(2, #tl.windows)
    assert.is_true(tl.ops_kept <= 40)
    local text = html.render(small, {})
    assert.truthy(text:find(string.format("%s of %s ops, the middle left out",
      common.commas(tl.ops_kept), common.commas(tl.ops)), 1, true))
  end)
end)

describe("AP-DENSE-08: the report file", function()
  local r
  setup(function() r = run() end)

  local function data_block(text)
    local j = text:match('<script type="application/json" id="apsearch%-data">(.-)</script>')
    assert.truthy(j, "data block")
    return cjson.decode((j:gsub("<\\/", "</")))
  end

  it("holds the eight chart containers, the data, the tables and the inlined script", function()
    local fake = "/* fake echarts */ window.echarts = undefined;" .. string.rep(" ", 2000)
    local text = html.render(r, { echarts_js = fake, echarts_version = "6.1.0" })
    for i = 1, 8 do assert.truthy(text:find('id="chart' .. i .. '"', 1, true), "chart" .. i) end
    assert.truthy(text:find("/* fake echarts */", 1, true))
    assert.is_nil(text:find('id="no-echarts"', 1, true))
    assert.truthy(text:find("Top-6 strategies", 1, true))
    assert.truthy(text:find("MEMORY_LIMIT", 1, true))
    local d = data_block(text)
    assert.are.equal(6, #d.topk)
    -- JSON keeps 14 significant digits
    assert.is_true(near(r.top_k_strategies[1].performance_cost.step_time, d.topk[1].step_time, 1e-13))
    assert.truthy(d.topk[1].strategy_text:find("tp_degree=" .. r.top_k_strategies[1].tp_degree, 1, true))
    -- one script block for data, one for ECharts, one for the drawing code; no external resource
    assert.is_nil(text:find('src="http', 1, true))
    assert.is_nil(text:find("<link", 1, true))
  end)

  it("lists a built policy's defaults lines under the notes on the inputs, before the import's notes", function()
    -- a report shared without the terminal's log kept the MoE defaults
    -- and the batch rule to itself (newuser, 2026-12-07)
    local r2 = run()
    r2.inputs.defaults = { "defaults: global batch 2048 x 4096 <rule>" }
    r2.inputs.notes = { "a note" }
    local text = html.render(r2, {})
    local box = text:match('<div class="notice" id="notes">(.-)</div>')
    assert.truthy(box, "notes box")
    assert.truthy(box:find("<li>defaults: global batch 2048 x 4096 &lt;rule&gt;</li><li>a note</li>", 1, true), box)
    r2.inputs.notes = nil
    assert.truthy(html.render(r2, {}):find("<li>defaults: global batch", 1, true))
  end)

  it("says plainly that the charts need ECharts when the script is missing", function()
    local text = html.render(r, { echarts_missing = "looked for /x" })
    assert.truthy(text:find('id="no-echarts"', 1, true))
    assert.truthy(text:find("Charts need Apache ECharts", 1, true))
    assert.truthy(text:find("Top-6 strategies", 1, true))
    assert.truthy(data_block(text).topk)
  end)

  it("escapes text and keeps </script> out of the data block", function()
    local r2 = run()
    r2.inputs.model.name = "</script><b>x</b>"
    local text = html.render(r2, {})
    assert.is_nil(text:find("<b>x</b>", 1, true))
    assert.are.equal("</script><b>x</b>", r2.inputs.model.name)
    data_block(text)
  end)
end)

describe("every candidate", function()
  local r
  setup(function() r = run() end)

  it("is a row of candidates.csv with its status, reason and estimate", function()
    local text, r2 = csv.candidates_of(policy_of[r], "all")
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(r.all_candidate_summary.generated + 1, #lines)
    local cols = csv.candidate_columns()
    assert.are.equal(table.concat(cols, ","), lines[1])
    assert.is_nil(table.concat(cols, ","):find("rank", 1, true))
    local count = { feasible = 0, infeasible = 0, filtered = 0 }
    local step_of = {}
    for i = 2, #lines do
      local f = {}
      for c in (lines[i] .. ","):gmatch("([^,]*),") do f[#f + 1] = c end
      count[f[2]] = count[f[2]] + 1
      assert.are.equal(tostring(i - 1), f[1])
      if f[2] == "filtered" then
        assert.are.equal("", f[5])
        assert.are.equal("early", f[3])
      else
        assert.truthy(tonumber(f[5]))
      end
      step_of[i - 1] = tonumber(f[5])
    end
    local s = r.all_candidate_summary
    assert.are.equal(s.feasible, count.feasible)
    assert.are.equal(s.infeasible, count.infeasible)
    assert.are.equal(s.filtered_early, count.filtered)
    -- the rank of a row: top_k_strategies[].index
    for _, rec in ipairs(r2.top_k_strategies) do
      assert.is_true(near(step_of[rec.index], rec.performance_cost.step_time, 1e-8))
    end
    -- feasible: the feasible rows of all, and nothing else
    local ftext = csv.candidates_of(policy_of[r], "feasible")
    local want = { lines[1] }
    for i = 2, #lines do if lines[i]:match("^%d+,feasible,") then want[#want + 1] = lines[i] end end
    assert.are.equal(table.concat(want, "\n") .. "\n", ftext)
    assert.are.equal(s.feasible + 1, #want)
  end)

  it("streams rows in pieces: the search result keeps no per-candidate array", function()
    local writes, rows = 0, 0
    local w = csv.candidate_writer(function(t)
      writes = writes + 1
      for _ in t:gmatch("\n") do rows = rows + 1 end
    end, "all")
    local saved = csv.stream_rows
    local r3 = search.run(policy_of[r], { candidates = w, sensitivity = false })
    assert.are.equal(r3.all_candidate_summary.generated, w.finish())
    assert.are.equal(r3.all_candidate_summary.generated + 1, rows)
    assert.is_true(writes >= 2)
    assert.are.equal(saved, csv.stream_rows)
    -- nothing in the result grows with the space: no array longer than
    -- the chart 7 sample
    local function longest(t, seen)
      seen = seen or {}
      if type(t) ~= "table" or seen[t] then return 0 end
      seen[t] = true
      local m = #t
      for _, v in pairs(t) do m = math.max(m, longest(v, seen)) end
      return m
    end
    assert.is_nil(r3.candidates)
    assert.is_true(longest(r3) <= math.max(search.scatter_points, r3.all_candidate_summary.feasible))
  end)

  it("is not written into result.json (the compact record is CSV only)", function()
    local t = json.decode(json.encode(r))
    assert.is_nil(t.candidates)
    assert.truthy(t.pareto_front and t.trends and t.bandwidth_sensitivity)
  end)
end)

describe("apsearch run --out", function()
  setup(function()
    assert.is_string(BIN, "APS_BIN must name the built apsearch binary")
  end)

  it("writes result.json, result.csv, candidates.csv, report.html and launch configs", function()
    local dir = tmpdir() .. "/o"
    local code, out, err = apsearch("run", "examples/llama3_70b_h100.lua", "--top-k", "3",
      "--out", dir, "--format", "json")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local saved = cjson.decode(read(dir .. "/result.json"))
    assert.are.equal(dir .. "/report.html", r.visualization_report)
    assert.are.equal(dir .. "/report.html", saved.visualization_report)
    assert.are.equal(4 + 4 * 3, #saved.output_files)
    for _, f in ipairs(saved.output_files) do assert.truthy(read(f), f) end
    local p = io.popen("ls -a " .. q(dir) .. " " .. q(dir .. "/launch"))
    local names = {}
    for n in p:lines() do if n:match("%.tmp%-") then names[#names + 1] = n end end
    p:close()
    assert.are.same({}, names)   -- no temporary files left
    local report = read(dir .. "/report.html")
    assert.truthy(report:find('id="chart8"', 1, true))
    assert.truthy(report:find("launch/rank1_megatron.sh", 1, true))
    assert.truthy(report:find("launch/rank1_automodel.yaml", 1, true))
    assert.truthy(err:find("wrote 16 files", 1, true))
  end)

  it("streams candidates.csv: --candidates all, feasible (the default) or none", function()
    local function rows(path)
      local t = read(path)
      return t and select(2, t:gsub("\n", "")) - 1
    end
    local base = tmpdir()
    local saved = {}
    for _, mode in ipairs({ "all", "feasible", "none", "" }) do
      local dir = base .. "/" .. (mode == "" and "default" or mode)
      local args = { "run", "examples/llama3_70b_h100.lua", "--top-k", "2", "--out", dir, "--echarts", "none" }
      if mode ~= "" then args[#args + 1] = "--candidates" args[#args + 1] = mode end
      local code, _, err = apsearch(table.unpack(args))
      assert.are.equal(0, code, err)
      local r = cjson.decode(read(dir .. "/result.json"))
      local s = r.all_candidate_summary
      saved[mode] = read(dir .. "/candidates.csv")
      if mode == "none" then
        assert.is_nil(saved[mode])
        assert.is_nil(r.candidates_csv)
        for _, f in ipairs(r.output_files) do assert.is_nil(f:find("candidates.csv", 1, true)) end
        assert.truthy(err:find("wrote 11 files to " .. dir .. ": result.json, result.csv, report.html, launch/ (8)", 1, true), err)
      else
        local want = mode == "all" and s.generated or s.feasible
        assert.are.equal(want, rows(dir .. "/candidates.csv"))
        assert.are.same({ mode = mode == "" and "feasible" or mode, rows = want }, r.candidates_csv)
        assert.truthy(err:find("wrote 12 files", 1, true), err)
      end
    end
    assert.are.equal(saved.feasible, saved[""])
    assert.are_not.equal(saved.all, saved.feasible)
    local code, _, err = apsearch("run", "examples/llama3_70b_h100.lua", "--out", base .. "/bad",
      "--candidates", "some")
    assert.are.equal(2, code)
    assert.truthy(err:find("--candidates: candidates: must be all, feasible or none", 1, true), err)
  end)

  it("writes a tables-only report with --echarts none", function()
    local dir = tmpdir() .. "/o"
    local code, _, err = apsearch("run", "--top-k", "2", "--out", dir, "--echarts", "none")
    assert.are.equal(0, code, err)
    assert.truthy(read(dir .. "/report.html"):find("Charts need Apache ECharts", 1, true))
    assert.truthy(err:find("report.html has tables only", 1, true))
  end)

  it("draws a progress bar line", function()
    local cli = require "apsearch.cli"
    assert.are.equal("[###############...............]  50%  61,290 / 122,580 candidates  1.5 s, 1.5 s left",
      cli.progress_line(61290, 122580, 1.5))
    assert.truthy(cli.progress_line(10, 10, 0.2, 10):match("^%[##########%] 100%%"))
  end)
end)

describe("the text table", function()
  local tbl = require "apsearch.format.table"

  it("writes each stage's layers run-length encoded", function()
    local function per(...)
      local t = {}
      for i, n in ipairs({ ... }) do t[i] = { num_layers = n } end
      return t
    end
    assert.are.equal("-", tbl.split_text(per(32)))
    assert.are.equal("2x16", tbl.split_text(per(16, 16)))
    assert.are.equal("7+14x8+7", tbl.split_text(per(7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7)))
    assert.are.equal("17+15", tbl.split_text(per(17, 15)))
  end)

  it("shows the expert parallelism of an MoE strategy, '-' for a dense one", function()
    local function ep(rec)
      rec.rank, rec.memory_cost, rec.performance_cost = 1, {}, {}
      local headers, rows = tbl.rows({ top_k_strategies = { rec } })
      assert.are.equal("ep", headers[14])
      return rows[1][14]
    end
    assert.are.equal("-", ep({}))
    assert.are.equal("8", ep({ ep_degree = 8, etp_degree = 1 }))
    assert.are.equal("4 x etp 2", ep({ ep_degree = 4, etp_degree = 2 }))
    -- under TP an expert TP of 1 is said: Megatron-Core (and `estimate`)
    -- would take the TP degree for it
    assert.are.equal("8 x etp 1", ep({ ep_degree = 8, etp_degree = 1, tp_degree = 2 }))
    -- a one-row table drops a column that is off ("-"), keeps the others
    local text = tbl.table_text({ top_k_strategies = { { rank = 1, dp_degree = 8, fsdp_degree = 1,
      tp_degree = 1, pp_degree = 1, cp_degree = 1, micro_batch_size = 1,
      layer_recompute = "none", memory_cost = {}, performance_cost = { step_time = 1 } } } })
    local header = text:match("(rank[^\n]+)")
    assert.falsy(header:find(" ep ", 1, true), header)
    assert.truthy(header:find(" dp ", 1, true), header)
  end)

  it("labels recompute as the stages run it", function()
    local function row(rnl, layers, method)
      local per = {}
      for i, n in ipairs(layers) do per[i] = { num_layers = n } end
      local _, rows = tbl.rows({ top_k_strategies = { { rank = 1, layer_recompute = "full",
        recompute_method = method, recompute_num_layers = rnl,
        memory_cost = { per_stage = per }, performance_cost = {} } } })
      return rows[1][18] -- the recompute column
    end
    assert.are.equal("full", row(-1, { 16, 16 }))
    assert.are.equal("full", row({ 20, 30 }, { 16, 16 }))     -- above a stage's layers: all
    assert.are.equal("full(31/32)", row({ 16, 16 }, { 17, 15 }))
    assert.are.equal("none", row({ 0, 0 }, { 16, 16 }))
    -- uniform recomputes every layer in groups of N: not "1 layer in all"
    assert.are.equal("uniform(1)", row({ 1, 1 }, { 16, 16 }, "uniform"))
    assert.are.equal("uniform(2)", row(2, { 16, 16 }, "uniform"))
    assert.are.equal("uniform(1)", row(-1, { 16, 16 }, "uniform"))
    assert.are.equal("full(2/32)", row(1, { 16, 16 }, "block"))
  end)

  -- newuser5: two DeepSeek-V3 candidates that differed only in the token
  -- dispatcher (flex vs alltoall) or the selective modules printed as
  -- identical rows
  it("names an MoE strategy's dispatcher and the selective recompute modules", function()
    local function rec(over)
      local r = { rank = 1, dp_degree = 32, fsdp_degree = 1, tp_degree = 1, pp_degree = 1,
        cp_degree = 1, micro_batch_size = 1, layer_recompute = "selective", memory_cost = {},
        performance_cost = { step_time = 1 } }
      for k, v in pairs(over) do r[k] = v end
      return r
    end
    local headers, rows = tbl.rows({ top_k_strategies = {
      rec({ ep_degree = 16, etp_degree = 1, moe_token_dispatcher = "flex",
            recompute_modules = "mla_up_proj/mlp/moe" }),
      rec({ ep_degree = 16, etp_degree = 1, moe_capacity_factor = 1 }),
      rec({}) } })
    assert.are.equal("dispatcher", headers[15])
    assert.are.equal("recompute", headers[18])
    assert.are.equal("flex", rows[1][15])
    assert.are.equal("alltoall cap 1", rows[2][15]) -- the default, dropping at capacity 1
    assert.are.equal("-", rows[3][15])              -- dense: no experts
    assert.are.equal("selective(mla_up_proj/mlp/moe)", rows[1][18])
    assert.are.equal("selective", rows[2][18])      -- no modules given: the framework's
    -- the text table keeps them apart
    local text = tbl.table_text({ top_k_strategies = {
      rec({ rank = 1, ep_degree = 16, etp_degree = 1, moe_token_dispatcher = "flex" }),
      rec({ rank = 2, ep_degree = 16, etp_degree = 1, moe_token_dispatcher = "alltoall" }) } })
    local header = text:match("(rank[^\n]+)")
    assert.truthy(header:find("dispatcher", 1, true), text)
    assert.truthy(text:find("\n%s+1 .- flex "), text)
    assert.truthy(text:find("\n%s+2 .- alltoall "), text)
    -- one dispatcher for every row folds into the line above the table
    text = tbl.table_text({ top_k_strategies = {
      rec({ rank = 1, dp_degree = 16, ep_degree = 16, etp_degree = 1, moe_token_dispatcher = "flex" }),
      rec({ rank = 2, ep_degree = 16, etp_degree = 1, moe_token_dispatcher = "flex" }) } })
    assert.truthy(text:find("same for every row:[^\n]* dispatcher=flex"), text)
  end)

  -- the cells of a CSV text (no quoted commas in these rows) and the
  -- column positions of a header list
  local function csv_cells(text)
    local out = {}
    for l in text:gmatch("[^\n]+") do
      local cells = {}
      for c in (l .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
      out[#out + 1] = cells
    end
    return out
  end
  local function positions(cols)
    local at = {}
    for i, c in ipairs(cols) do at[c] = i end
    return at
  end
  -- the candidates.csv text of records written by the streaming writer
  local function candidates_text(gbs, recs)
    local parts = {}
    local w = csv.candidate_writer(function(t) parts[#parts + 1] = t end, "all", gbs)
    for i, r in ipairs(recs) do w.row(i, nil, 1.0, 2 ^ 30, r) end
    w.finish()
    return table.concat(parts)
  end

  it("writes the expert dimensions to result.csv and candidates.csv, empty for a dense model", function()
    local moe = { rank = 1, dp_degree = 8, fsdp_degree = 1, tp_degree = 1, pp_degree = 1,
      layer_recompute = "none", micro_batch_size = 1, ep_degree = 8, etp_degree = 1,
      moe_token_dispatcher = "alltoall", memory_cost = {}, performance_cost = {} }
    local dense = { rank = 2, dp_degree = 8, fsdp_degree = 1, tp_degree = 1, pp_degree = 1,
      layer_recompute = "none", micro_batch_size = 1, memory_cost = {}, performance_cost = {} }
    local at = positions(csv.columns())
    local lines = csv_cells(csv.format({ top_k_strategies = { moe, dense } }))
    assert.are.equal("8", lines[2][at.ep_degree])
    assert.are.equal("alltoall", lines[2][at.moe_token_dispatcher])
    assert.are.equal("", lines[3][at.ep_degree])
    local crows = csv_cells(candidates_text(64, { moe }))
    assert.are.equal("8", crows[2][positions(csv.candidate_columns()).ep_degree])
  end)

  it("names the pipeline schedule in the table, result.csv and candidates.csv (moot without pp)", function()
    local function rec(pp, sched)
      return { rank = 1, dp_degree = 1, fsdp_degree = 1, tp_degree = 1, pp_degree = pp,
        vpp_degree = 2, pp_schedule = sched, layer_recompute = "none", micro_batch_size = 1,
        memory_cost = {}, performance_cost = {} }
    end
    local headers, rows = require("apsearch.format.table").rows({ top_k_strategies = {
      rec(4, "dualpipev"), rec(1, "1f1b") } })
    assert.are.equal("schedule", headers[10])
    assert.are.equal("dualpipev", rows[1][10])
    assert.are.equal("-", rows[2][10])
    local text = csv.format({ top_k_strategies = { rec(4, "zbv_zero_bubble"), rec(1, "1f1b") } })
    local at = positions(csv.columns())
    local lines = csv_cells(text)
    assert.are.equal("zbv_zero_bubble", lines[2][at.pp_schedule])
    assert.are.equal("", lines[3][at.pp_schedule])
    -- candidates.csv: the cell follows each candidate's pp_degree, not a
    -- cache of the value
    local cat = positions(csv.candidate_columns())
    local crows = csv_cells(candidates_text(8, { rec(1, "1f1b"), rec(4, "1f1b") }))
    assert.are.equal("pp_schedule", crows[1][cat.pp_schedule])
    assert.are.equal("", crows[2][cat.pp_schedule])
    assert.are.equal("1f1b", crows[3][cat.pp_schedule])
  end)

  it("keeps recompute_method and pipeline_split in result.csv", function()
    local text = csv.format({ top_k_strategies = { { rank = 1, pp_degree = 2,
      pipeline_split = "embedding_loss", layer_recompute = "full",
      recompute_method = "uniform", recompute_num_layers = { 2, 2 },
      memory_cost = {}, performance_cost = {} } } })
    local header, first = text:match("^([^\n]*)\n([^\n]*)")
    local cells, at = {}, {}
    for c in (first .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
    for i, c in ipairs(csv.columns()) do at[c] = i end
    assert.are.equal(table.concat(csv.columns(), ","), header)
    assert.are.equal("embedding_loss", cells[at.pipeline_split])
    assert.are.equal("uniform", cells[at.recompute_method])
  end)
end)

describe("memory near capacity", function()
  it("flags a top-k strategy above 90 % of device memory, and the table says why", function()
    local r = search.run(policy.load(ROOT .. "/examples/llama3_70b_h100.lua", { top_k = 6 }))
    local cap = r.inputs.cluster.device.memory_bytes
    local flagged = 0
    for _, rec in ipairs(r.top_k_strategies) do
      local near = rec.memory_cost.total > 0.9 * cap
      assert.are.equal(near, rec.memory_cost.near_capacity)
      if near then flagged = flagged + 1 end
    end
    assert.is_true(flagged > 0 and flagged < #r.top_k_strategies)
    local text = require("apsearch.format.table").table_text(r)
    assert.truthy(text:find("! peak above 90% of device memory", 1, true))
  end)
end)

-- issue 16 item 2: a report every chart of which reads at 1280 px
describe("issue 16: report colours, stage labels, top-k table, no feasible strategy", function()
  it("one colour per memory and time category, defined once, all distinct", function()
    local seen = {}
    for _, list in ipairs({ common.memory_categories, common.time_categories }) do
      for _, c in ipairs(list) do
        local col = html.category_colors[c]
        assert.is_string(col, c)
        assert.truthy(col:match("^#%x%x%x%x%x%x$"), c .. " " .. tostring(col))
        assert.is_nil(seen[col:lower()], c .. " shares " .. col .. " with " .. tostring(seen[col:lower()]))
        seen[col:lower()] = c
      end
    end
    -- the same map in every report's data block (report.js draws from it)
    local d = html.chart_data(run())
    assert.are.same(html.category_colors, d.colors)
  end)

  local function check_chunks(out, counts, L)
    local hit = {}
    for i, ch in ipairs(out) do
      local n = 0
      for _, c in ipairs(ch) do
        for l = c[2], c[3] do
          assert.is_nil(hit[l], "layer " .. l .. " twice")
          hit[l] = i
          n = n + 1
        end
      end
      assert.are.equal(counts[i], n, "rank " .. i)
    end
    for l = 0, L - 1 do assert.truthy(hit[l], "layer " .. l .. " on no rank") end
  end

  it("chunk layers: with vpp > 1 a rank holds virtual stages i, i + p, ... (aps_chunk_layers)", function()
    -- even: 8 layers, pp 2 x vpp 2: rank 1 holds 0-1 and 4-5
    local out = html.chunk_layers({ pp_degree = 2, vpp_degree = 2, pipeline_split = "even" }, { 4, 4 })
    assert.are.same({ { 1, 0, 1 }, { 3, 4, 5 } }, out[1])
    assert.are.same({ { 2, 2, 3 }, { 4, 6, 7 } }, out[2])
    assert.are.equal("0-1, 4-5", html.chunks_text(out[1]))
    -- vpp 1: contiguous
    out = html.chunk_layers({ pp_degree = 3, vpp_degree = 1 }, { 3, 4, 5 })
    assert.are.equal("3-6", html.chunks_text(out[2]))
    -- embedding_loss, 126 layers over 32 x 4 chunks: 128 units, one per
    -- chunk; the first and the last give theirs to embedding and loss
    local counts = { 3 }
    for i = 2, 31 do counts[i] = 4 end
    counts[32] = 3
    out = html.chunk_layers({ pp_degree = 32, vpp_degree = 4, pipeline_split = "embedding_loss" }, counts)
    assert.are.equal("31, 63, 95", html.chunks_text(out[1]))
    assert.are.equal("0, 32, 64, 96", html.chunks_text(out[2]))
    assert.are.equal("30, 62, 94", html.chunks_text(out[32]))
    check_chunks(out, counts, 126)
    -- per chunk stage_partition (Megatron's layout): chunks of a rank differ
    out = html.chunk_layers({ pp_degree = 2, vpp_degree = 2, stage_partition = { 1, 3, 3, 1 } }, { 4, 4 })
    assert.are.equal("0, 4-6", html.chunks_text(out[1]))
    assert.are.equal("1-3, 7", html.chunks_text(out[2]))
    -- a balanced split (per rank counts): each rank's layers split equally
    out = html.chunk_layers({ pp_degree = 2, vpp_degree = 2, balance_stages = true,
      stage_partition = { 6, 4 } }, { 6, 4 })
    assert.are.equal("0-2, 5-7", html.chunks_text(out[1]))
    check_chunks(out, { 6, 4 }, 10)
    -- the V of ZB-V and DualPipeV: rank 1 holds the first and the last
    -- chunk (embedding_loss, 32 layers: 8 9 8 7 over the 4 chunks)
    for _, sched in ipairs({ "zbv_zero_bubble", "dualpipev" }) do
      out = html.chunk_layers({ pp_degree = 2, vpp_degree = 2, pipeline_split = "embedding_loss",
        pp_schedule = sched }, { 15, 17 })
      assert.are.same({ { 1, 0, 7 }, { 4, 25, 31 } }, out[1])
      assert.are.same({ { 2, 8, 16 }, { 3, 17, 24 } }, out[2])
      check_chunks(out, { 15, 17 }, 32)
    end
  end)

  it("stage labels of the report's interleaved strategies agree with the launch configs' chunks", function()
    local r = run({ search_space = { data_parallel = "auto", tp_degree = { 8 }, pp_degree = { 2, 4 },
      vpp_degree = { 1, 2 }, micro_batch_size = { 1 }, layer_recompute = { "full" } }, top_k = 6 })
    local titan = require "apsearch.launch.torchtitan"
    local d, n = html.chart_data(r), 0
    for i, t in ipairs(r.top_k_strategies) do
      local counts = {}
      for j, st in ipairs(r.stage_summary[i].stages) do counts[j] = st.num_layers end
      local out = html.chunk_layers(t, counts)
      check_chunks(out, counts, r.inputs.model.num_layers)
      if t.vpp_degree > 1 then
        n = n + 1
        local sizes = titan.estimate_chunks({ rec = t, model = r.inputs.model, layers = counts })
        for rank, ch in ipairs(out) do
          for k, c in ipairs(ch) do assert.are.equal(sizes[rank + (k - 1) * t.pp_degree], c[3] - c[2] + 1) end
        end
      end
      for j, st in ipairs(d.topk[i].stages) do
        assert.are.equal(html.chunks_text(out[j]), st.layers)
        assert.are.equal(t.vpp_degree, #st.chunks)
      end
    end
    assert.is_true(n > 0, "an interleaved strategy in the top-k")
  end)

  it("the top-k table is sortable and folds columns with one value", function()
    local r = run()
    local text = html.render(r, {})
    assert.truthy(text:find('<table id="topk-table" class="sortable">', 1, true))
    assert.truthy(text:find('<p class="same"><b>same for every row:</b>', 1, true))
    -- a setting off in every row ('-') is left out, as in the text table:
    -- this dense model has no "ep" column nor an "ep -" in the line
    local line = text:match('<p class="same">(.-)</p>')
    assert.falsy(line:find("ep -", 1, true), line)
    -- the pairs as the terminal writes them, which --strategy takes back
    assert.truthy(line:match("</b> [%w_]+=%S+ [%w_]+=%S+"), line)
    local at = text:find("<th[^>]*>ep</th>")
    assert.falsy(at, at and text:sub(at - 200, at + 20))
    -- the script that sorts it runs without ECharts too (before the check)
    local js = read(ROOT .. "/lua/apsearch/report/report.js")
    assert.is_true(js:find("table.sortable", 1, true) < js:find("typeof echarts === 'undefined'", 1, true))
  end)

  it("a search with no feasible strategy says why, lists the closest and what to relax", function()
    -- a limit on device memory in use, the figure candidates.csv writes
    local r = run({ constraints = { memory_limit_gib = 3, memory_limit_kind = "device" } })
    assert.are.equal(0, r.all_candidate_summary.feasible)
    local dg = html.diagnose(r)
    assert.is_true(#dg.reasons > 0)
    assert.are.equal("estimate", dg.reasons[1].phase)
    assert.are.equal("MEMORY_LIMIT", dg.reasons[1].code)
    -- the closest: the least memory among the estimated candidates, from
    -- every row of candidates.csv
    local csv_text = require("apsearch.format.csv").candidates_of(policy_of[r], "all")
    local least, cols = math.huge, nil
    for line in csv_text:gmatch("[^\n]+") do
      local f = {}
      for v in line:gmatch("[^,]*") do f[#f + 1] = v end
      if not cols then
        cols = {}
        for i, c in ipairs(f) do cols[c] = i end
      elseif f[cols.status] == "infeasible" then
        least = math.min(least, tonumber(f[cols.mem_peak_bytes]))
      end
    end
    assert.is_true(#r.closest_infeasible <= require("apsearch.search").closest_keep)
    -- (the CSV writes whole bytes)
    assert.is_true(math.abs(least - dg.closest[1].mem_peak) < 1, least .. " vs " .. dg.closest[1].mem_peak)
    for i = 2, #dg.closest do assert.is_true(dg.closest[i].mem_peak >= dg.closest[i - 1].mem_peak) end
    assert.are.equal(3 * 2 ^ 30, dg.limit_bytes)
    assert.is_true(dg.closest[1].over_bytes > 0)
    -- the need rounded up to a hundredth of a GiB (within the capacity)
    local want = ("%.2f"):format(math.ceil(least / 2 ^ 30 * 100) / 100):gsub("%.?0+$", "")
    assert.truthy(dg.suggestions[1]:find("cluster.memory_limit_gib=" .. want .. " ", 1, true),
      dg.suggestions[1])
    local text = html.render(r, {})
    assert.truthy(text:find('id="no-feasible"', 1, true))
    assert.truthy(text:find('id="closest-table"', 1, true))
    assert.truthy(text:find('What to relax', 1, true))
    -- the reasons not called "binding": the layout checks before the
    -- estimate are listed after what stopped the closest candidates
    assert.truthy(text:find('<b>Why candidates were refused</b>: after the estimate first', 1, true))
    assert.is_nil(text:find('Binding', 1, true))
    assert.truthy(text:find('3.00 GiB', 1, true))      -- the memory limit fact
    -- no rank to pick: no empty rank dropdown above chart 3's notice
    assert.is_nil(html.render(r, { echarts_js = "/*stub*/" }):find('id="stage-rank"', 1, true))
    assert.truthy(html.render(run(), { echarts_js = "/*stub*/" }):find('id="stage-rank"', 1, true))
    -- the fit probe's finding, as the terminal says it (format.common.fit_probe_text)
    -- (every probe keeps the run's global batch, and says how)
    r.fit_probe = { tried = 512, cluster = "h100-sxm-80gb:64x8" }
    assert.truthy(html.render(r, {}):find('<p id="fit-probe">No fit up to 512 devices (h100-sxm-80gb:64x8) with the '
      .. 'same defaults and global batch, --set training.global_batch_size=' .. r.inputs.training.global_batch_size
      .. ', on the host counts tried (doubled; counts between them were not).</p>', 1, true))
    r.fit_probe = nil
    -- a limit given on max reserved (the default kind): the closest are
    -- those least over it, and the limit offered admits the first
    local rr = run({ constraints = { memory_limit_gib = 3 } })
    local dr = html.diagnose(rr)
    for i = 2, #dr.closest do assert.is_true(dr.closest[i].mem_limited >= dr.closest[i - 1].mem_limited) end
    assert.is_true(dr.closest[1].mem_limited < dr.closest[1].mem_peak)
    local gib = dr.suggestions[1]:match("cluster%.memory_limit_gib=([%d%.]+) ")
    assert.are.equal(math.ceil(dr.closest[1].mem_limited / 2 ^ 30 * 100) / 100, tonumber(gib))
    local fits = run({ constraints = { memory_limit_gib = tonumber(gib) } })
    assert.is_true(fits.all_candidate_summary.feasible > 0)
  end)

  it("every filter reason the core returns has what to relax", function()
    for _, code in ipairs(require("apsearch.core").reason_codes) do
      if code ~= "NONE" then assert.is_string(html.RELAX[code], code) end
    end
    -- a MoE space refused for its expert degree alone says so first
    local dg = html.diagnose({ inputs = {}, all_candidate_summary = { estimated = 0, filtered_early = 8 },
      infeasible_summary = { EP_DIVISIBILITY = { count = 8, phase = "early",
        message = "num_experts = 256 is not divisible by ep_degree = 512" } } })
    assert.truthy(dg.suggestions[1]:find("^expert parallel: ep_degree must divide num_experts"), dg.suggestions[1])
  end)

  it("the memory limit of a result without top-k is the core's (device less margin)", function()
    local r = run()
    local limit = r.top_k_strategies[1].memory_cost.limit
    r.top_k_strategies = {}
    assert.are.equal(limit, html.memory_limit(r))
    r.inputs.training.memory_limit_bytes = 0
    local dev = r.inputs.cluster.device
    assert.are.equal(dev.memory_bytes - r.inputs.training.memory_margin_bytes, html.memory_limit(r))
  end)
end)
