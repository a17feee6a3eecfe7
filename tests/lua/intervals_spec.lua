-- tests/lua/intervals_spec.lua -- prediction intervals (lua/apsearch/
-- intervals.lua) and their leave-one-source-out coverage
-- (apsearch.crossval.coverage), on hand-made residuals.

local intervals = require "apsearch.intervals"
local crossval = require "apsearch.crossval"

describe("intervals", function()
  it("takes the split-conformal radius: the ceil((n + 1) level)-th smallest |r|", function()
    local v = { 0.3, -0.1, 0.2, -0.4, 0.05 }
    -- |r| sorted: 0.05 0.1 0.2 0.3 0.4; level 0.8: k = ceil(4.8) = 5
    assert.are.equal(0.4, intervals.conformal_radius(v, 0.8))
    -- level 0.5: k = ceil(3) = 3
    assert.are.equal(0.2, intervals.conformal_radius(v, 0.5))
    -- four residuals at 0.8: k = ceil(4) = 4, the largest
    assert.are.equal(0.4, intervals.conformal_radius({ 0.1, -0.4, 0.2, 0.3 }, 0.8))
    -- three are too few for 0.8 (k = ceil(3.2) = 4 > 3): no interval
    assert.is_nil(intervals.conformal_radius({ 0.1, 0.2, 0.3 }, 0.8))
    assert.is_nil(intervals.conformal_radius({}, 0.8))
    assert.are.same({ 0.3, -0.1, 0.2, -0.4, 0.05 }, v) -- not modified
  end)

  it("classes estimates by framework, hardware generation and precision family", function()
    assert.are.equal("fsdp2/blackwell/quantized", intervals.class_of("fsdp2", "gb200", "mxfp8"))
    assert.are.equal("megatron/hopper/16bit", intervals.class_of("megatron", "h200-sxm-141gb", "bf16"))
    assert.are.equal("fsdp/ampere/16bit", intervals.class_of("fsdp", "a100-sxm4-40gb", "fp16"))
    assert.are.equal("deepspeed/other/quantized", intervals.class_of("deepspeed", "mi300x", "fp8"))
  end)

  it("keys the best published MFU by the peak it is a fraction of", function()
    assert.are.equal("blackwell/4bit", intervals.mfu_key("gb300", "nvfp4"))
    assert.are.equal("blackwell/8bit", intervals.mfu_key("gb200", "mxfp8"))
    assert.are.equal("hopper/8bit", intervals.mfu_key("h100-sxm-80gb", "fp8"))
    assert.are.equal("ampere/16bit", intervals.mfu_key("a100-sxm4-80gb", "fp16"))
  end)

  it("gives MoE models the MoE runs' class, not the dense runs'", function()
    local data = require "apsearch.intervals_data"
    local moe = data.step_time.classes[intervals.MOE_CLASS]
    assert.is_table(moe)   -- scripts/fit-intervals.sh with the MoE cases
    local iv = intervals.of_estimate(10.0, 2 ^ 30, "megatron", "h100-sxm-80gb", "bf16", true)
    assert.are.equal("moe", iv.step_time.class)
    assert.is_false(iv.step_time.pooled)
    assert.is_true(math.abs(iv.step_time.lo - 10.0 * math.exp(moe.lo)) < 1e-12)
    assert.is_true(math.abs(iv.step_time.hi - 10.0 * math.exp(moe.hi)) < 1e-12)
    -- a dense model of the same framework, device and precision: not the MoE band
    local dense = intervals.of_estimate(10.0, 2 ^ 30, "megatron", "h100-sxm-80gb", "bf16")
    assert.are_not.equal("moe", dense.step_time.class)
    -- the MoE class is never narrower than the dense pool (crossval.data_source)
    assert.is_true(dense.step_time.hi <= iv.step_time.hi)
  end)

  it("gives a class its own bounds only with enough runs from two sources", function()
    local one = { -0.1, 0, 0.1, 0.2, 0.3, sources = 1 }
    local two = { -0.4, -0.2, 0, 0.2, 0.4, sources = 2 }
    local b = intervals.bounds({ a = one, b = two }, 0.6)
    assert.is_nil(b.classes.a)
    -- b: |r| 0 0.2 0.2 0.4 0.4, level 0.6: k = ceil(3.6) = 4 -> 0.4, symmetric
    assert.are.equal(-0.4, b.classes.b.lo)
    assert.are.equal(0.4, b.classes.b.hi)
    -- pooled: |r| 0 0 0.1 0.1 0.2 0.2 0.2 0.3 0.4 0.4, k = ceil(6.6) = 7 -> 0.2
    assert.are.equal(10, b.pooled.rows)
    assert.are.equal(0.2, b.pooled.hi)
    local iv = intervals.interval(10, b, "a")
    assert.is_true(iv.pooled)
    assert.is_true(math.abs(iv.lo - 10 * math.exp(-0.2)) < 1e-12)
    local ivb = intervals.interval(10, b, "b")
    assert.is_false(ivb.pooled)
    assert.is_true(math.abs(ivb.hi - 10 * math.exp(0.4)) < 1e-12)
    -- too few residuals for the level: no bounds, no interval
    local few = intervals.bounds({ a = { 0.1, 0.2, sources = 2 } }, 0.8)
    assert.is_nil(few.pooled.hi)
    assert.is_nil(intervals.interval(10, few, "a"))
  end)
end)

describe("crossval.data_source", function()
  it("writes the MoE runs' class from their residuals, release gaps left out", function()
    local function case(pred, meas, gap)
      return { group = "g", predicted = { tokens_per_s_per_gpu = pred }, measured = { tokens_per_s_per_gpu = meas },
        release_gap = gap, inputs = { training = { framework = "megatron", precision = "bf16" },
        cluster = { device = "h100-sxm-80gb" } } }
    end
    local dense = { file = "dense.csv", cases = {} }
    for i = 1, 5 do dense.cases[i] = case(100, 100 + i) end
    -- |log(pred / meas)|: log 1.1, log 1.2, log 1.3, log 1.4, log 2; n = 5,
    -- k = ceil(6 x 0.8) = 5: the radius is log 2; the gap's log 3 is not in
    local moe = { file = "moe.csv", cases = { case(110, 100), case(120, 100), case(130, 100),
      case(140, 100), case(200, 100), case(300, 100, true) } }
    local chunk = assert(load(crossval.data_source(dense, moe)))
    local m = chunk().step_time.classes.moe
    assert.are.equal(5, m.rows)
    assert.is_true(math.abs(m.hi - math.log(2)) < 1e-6)
    assert.is_true(math.abs(m.lo + math.log(2)) < 1e-6)
  end)

  it("never writes the MoE class narrower than the pooled bounds", function()
    local function case(pred, meas)
      return { group = "g", predicted = { tokens_per_s_per_gpu = pred }, measured = { tokens_per_s_per_gpu = meas },
        inputs = { training = { framework = "megatron", precision = "bf16" },
        cluster = { device = "h100-sxm-80gb" } } }
    end
    -- dense |log(pred / meas)|: log(100/101) .. log(100/105) in size, n = 5,
    -- k = 5: the pooled radius is log 1.05; every MoE residual log 1.01
    local dense = { file = "dense.csv", cases = {} }
    for i = 1, 5 do dense.cases[i] = case(100, 100 + i) end
    local moe = { file = "moe.csv", cases = {} }
    for i = 1, 5 do moe.cases[i] = case(101, 100) end
    local d = assert(load(crossval.data_source(dense, moe)))().step_time
    assert.is_true(math.abs(d.pooled.hi - math.log(1.05)) < 1e-6)
    assert.are.equal(d.pooled.hi, d.classes.moe.hi)
    assert.are.equal(5, d.classes.moe.rows)
  end)
end)

describe("crossval.data_source, peak memory", function()
  it("writes the memory bounds from the memory runs, by framework with runs from two sources", function()
    local function case(fw, pred, meas, src)
      return { source = src, predicted = { mem_gib = pred }, measured = { mem_gib = meas },
        inputs = { training = { framework = fw } } }
    end
    local dense = { file = "dense.csv", cases = {} }
    -- fsdp2: |log(meas / pred)| log 1.01 .. log 1.05 from two sources, n = 5,
    -- k = ceil(6 x 0.8) = 5: radius log 1.05; megatron: one source only,
    -- so it takes the pooled radius: the 9th smallest of 10 (k = ceil(8.8)),
    -- log 1.4 of log 1.01, .., 1.05, 1.1, 1.2, 1.3, 1.4, 1.5
    local mem = { file = "mem.csv", cases = {} }
    for i = 1, 5 do mem.cases[i] = case("fsdp2", 100, 100 + i, i <= 2 and "a" or "b") end
    for i, f in ipairs({ 1.1, 1.2, 1.3, 1.4, 1.5 }) do mem.cases[5 + i] = case("megatron", 100, 100 * f, "c") end
    mem.cases[11] = { error = "x", source = "d" }
    local m = assert(load(crossval.data_source(dense, nil, mem)))().mem_peak
    assert.are.equal(10, m.pooled.rows)
    assert.is_true(math.abs(m.pooled.hi - math.log(1.4)) < 1e-6)
    assert.is_true(math.abs(m.classes.fsdp2.hi - math.log(1.05)) < 1e-6)
    assert.is_nil(m.classes.megatron)
    local grouped = crossval.mem_residuals(mem)
    assert.are.equal(2, grouped.fsdp2.sources)
    assert.are.equal(1, grouped.megatron.sources)
  end)

  it("gives an estimate its framework's memory interval, else the pooled one", function()
    local data = require "apsearch.intervals_data"
    local fw = data.mem_peak.classes.fsdp2
    assert.is_table(fw) -- scripts/fit-intervals.sh with the memory cases
    local iv = intervals.of_estimate(10.0, 100.0, "fsdp2", "h100-sxm-80gb", "bf16")
    assert.are.equal("fsdp2", iv.mem_peak.class)
    assert.is_false(iv.mem_peak.pooled)
    assert.is_true(math.abs(iv.mem_peak.hi - 100.0 * math.exp(fw.hi)) < 1e-9)
    local other = intervals.of_estimate(10.0, 100.0, "fsdp", "a100-sxm4-80gb", "bf16")
    assert.is_true(other.mem_peak.pooled)
  end)
end)

describe("crossval coverage", function()
  -- two sources of three runs each; residual log(pred / measured) r
  local function case(group, r)
    return { group = group, inputs = { training = { framework = "megatron", precision = "bf16" },
      cluster = { device = { base = "h100-sxm-80gb" } } },
      predicted = { tokens_per_s_per_gpu = 100 * math.exp(r) },
      measured = { tokens_per_s_per_gpu = 100 } }
  end
  it("checks each source's runs against intervals from the other sources", function()
    local res = { folds = { { group = "A" }, { group = "B" } }, cases = {
      case("A", -0.1), case("A", 0.0), case("A", 0.1), case("A", 0.3), case("A", -0.35),
      case("B", 0.05), case("B", 0.5), case("B", -0.01), case("B", 0.2), case("B", -0.15) } }
    local cov = crossval.coverage(res)
    -- A's runs against B's residuals: |r| 0.01 0.05 0.15 0.2 0.5, k =
    -- ceil(6 x 0.8) = 5 -> q = 0.5: all five of A inside
    assert.are.equal(5, cov.by_group.A.covered)
    -- B's against A's: |r| 0 0.1 0.1 0.3 0.35 -> q = 0.35: 0.5 outside
    assert.are.equal(4, cov.by_group.B.covered)
    assert.are.equal(10, cov.step_time.rows)
    assert.are.equal(0, cov.step_time.no_interval)
    assert.is_true(math.abs(cov.step_time.pct - 90) < 1e-12)
  end)

  it("counts runs whose interval cannot be built apart, not as covered", function()
    -- A against B's two residuals, B against A's three: both too few for
    -- 80 % (k = ceil(3 x 0.8) = 3 > 2, ceil(4 x 0.8) = 4 > 3)
    local res = { folds = { { group = "A" }, { group = "B" } }, cases = {
      case("A", -0.1), case("A", 0.0), case("A", 0.1), case("B", 0.05), case("B", 0.5) } }
    local cov = crossval.coverage(res)
    assert.are.equal(0, cov.step_time.rows)
    assert.are.equal(5, cov.step_time.no_interval)
    assert.are.equal(3, cov.by_group.A.no_interval)
    assert.is_nil(cov.step_time.pct)
  end)
end)

describe("intervals in the outputs", function()
  local search = require "apsearch.search"
  local policy = require "apsearch.policy"
  local csv = require "apsearch.format.csv"
  local tbl = require "apsearch.format.table"
  local data = require "apsearch.intervals_data"
  local ROOT = os.getenv("APS_ROOT") or "."
  local r
  setup(function()
    r = search.run(policy.load(ROOT .. "/examples/llama3_8b_h100.lua", { top_k = 2 }))
  end)

  it("puts the shipped interval on every top-k step time and peak memory", function()
    for _, rec in ipairs(r.top_k_strategies) do
      local st, si = rec.performance_cost.step_time, rec.performance_cost.step_time_interval
      -- fsdp2 on Hopper in bf16 has no class of its own: the pooled bounds
      local b = data.step_time.classes["fsdp2/hopper/16bit"] or data.step_time.pooled
      assert.is_true(math.abs(si.lo - st * math.exp(b.lo)) < 1e-9 * st)
      assert.is_true(math.abs(si.hi - st * math.exp(b.hi)) < 1e-9 * st)
      assert.is_true(si.lo < st and st < si.hi)
      local m, mi = rec.memory_cost.total, rec.memory_cost.total_interval
      -- fsdp2 (TorchTitan) has its own memory class (runs of several sources)
      local mb = data.mem_peak.classes.fsdp2 or data.mem_peak.pooled
      assert.is_true(math.abs(mi.hi - m * math.exp(mb.hi)) < 1e-9 * m)
    end
  end)

  it("writes the bounds as CSV columns and a line under the table", function()
    local text = csv.format(r)
    local header = text:match("^[^\n]*")
    assert.truthy(header:find("step_time_lo_s,step_time_hi_s", 1, true))
    assert.truthy(header:find("mem_peak_lo_gib,mem_peak_hi_gib", 1, true))
    local cols, first = {}, {}
    for c in header:gmatch("[^,]+") do cols[#cols + 1] = c end
    for v in text:match("\n([^\n]*)"):gmatch("[^,]*") do first[#first + 1] = v end
    local at = {}
    for i, c in ipairs(cols) do at[c] = i end
    local si = r.top_k_strategies[1].performance_cost.step_time_interval
    assert.is_true(math.abs(tonumber(first[at.step_time_lo_s]) - si.lo) < 1e-9 * si.lo)
    assert.truthy(tbl.table_text(r):find("80 %% of measured runs land within: step time x"))
  end)
end)

describe("best published MFU", function()
  it("is each run's estimated MFU scaled by measured over estimated throughput, the highest per class", function()
    local function case(id, dev, prec, mfu, pred, meas)
      return { case_id = id, source = "s " .. id,
        inputs = { training = { framework = "megatron", precision = prec }, cluster = { device = { base = dev } } },
        predicted = { tokens_per_s_per_gpu = pred, mfu = mfu }, measured = { tokens_per_s_per_gpu = meas } }
    end
    local best = crossval.best_mfu({ cases = {
      case("x1", "h100-sxm-80gb", "bf16", 0.50, 100, 90),  -- 0.45
      case("x2", "h100-sxm-80gb", "bf16", 0.40, 100, 120), -- 0.48
      case("x3", "h100-sxm-80gb", "fp8", 0.30, 100, 100),
      case("x4", "a100-sxm4-80gb", "fp16", 0.60, 100, 50) } })
    assert.is_true(math.abs(best["hopper/16bit"].mfu - 0.48) < 1e-12)
    assert.are.same({ "x2", "?" }, { best["hopper/16bit"].case, best["hopper/16bit"].file })
    assert.are.equal(0.30, best["hopper/8bit"].mfu)
    assert.is_true(math.abs(best["ampere/16bit"].mfu - 0.30) < 1e-12)
    -- held-out sets: a dense run raises a class the runs above set (0.50 x
    -- 110 / 100 = 0.55); a MoE run does not, and no class of their own
    local moe = case("y2", "h100-sxm-80gb", "bf16", 0.60, 100, 100)
    moe.inputs.model = { num_experts = 8 }
    local ref = { cases = { case("y1", "h100-sxm-80gb", "bf16", 0.50, 100, 110), moe,
      case("y3", "gb200", "bf16", 0.40, 100, 100) } }
    for _, c in ipairs(ref.cases) do c.inputs.model = c.inputs.model or {} end
    local runs = { cases = { case("x1", "h100-sxm-80gb", "bf16", 0.50, 100, 90) } }
    best = crossval.best_mfu(runs, { ref })
    assert.is_true(math.abs(best["hopper/16bit"].mfu - 0.55) < 1e-12)
    assert.are.equal("y1", best["hopper/16bit"].case)
    ref.file = "sets/held.csv" -- named by its file's name
    assert.are.equal("held.csv", crossval.best_mfu(runs, { ref })["hopper/16bit"].file)
    assert.is_nil(best["blackwell/16bit"])
    -- a class of their own from intervals.MIN_ROWS (5) dense runs of
    -- intervals.MIN_SOURCES (2) sets: 4 + 1 runs of two sets, not 5 of one
    local function set_of(prefix, n, mfu)
      local out = { cases = {} }
      for i = 1, n do
        local c = case(prefix .. i, "b200", "fp8", mfu + i / 100, 100, 100)
        c.inputs.model = {}
        out.cases[i] = c
      end
      return out
    end
    best = crossval.best_mfu(runs, { set_of("a", 5, 0.30) })
    assert.is_nil(best["blackwell/8bit"])
    best = crossval.best_mfu(runs, { set_of("a", 4, 0.30), set_of("b", 1, 0.40) })
    assert.is_true(math.abs(best["blackwell/8bit"].mfu - 0.41) < 1e-12)
    assert.are.equal("b1", best["blackwell/8bit"].case)
  end)

  it("says which peak the MFU is of under low precision, and the bf16 peak's figure", function()
    local breakdown = require "apsearch.format.breakdown"
    local common = require "apsearch.format.common"
    -- H800: 989 TFLOP/s bf16, 1,979 fp8 dense; 385 model TFLOP/s is
    -- DeepSeek-V3's published 38.94 % of the bf16 peak (19.45 % of fp8)
    local dev = { peak_flops_bf16 = 989e12, peak_flops_fp8 = 1979e12 }
    local est = { model_tflops_per_gpu = 385, mfu = 385 / 1979 }
    local inputs = { training = { precision = "fp8" }, cluster = { device = dev } }
    assert.near(385 / 989, common.bf16_peak_mfu(est, inputs), 1e-12)
    assert.are.equal(" (of the fp8 peak; MFU of the bf16 peak: 38.9%)", breakdown.peak_text(est, inputs))
    assert.are.equal("", breakdown.peak_text(est, { training = { precision = "bf16" }, cluster = { device = dev } }))
    local result = { inputs = inputs, top_k_strategies = { { performance_cost = est } } }
    assert.are.equal("MFU (%) is of the fp8 dense peak; of the bf16 peak, as many published runs give it, it is x2.00",
      common.mfu_basis_note(result))
    result.inputs = { training = { precision = "bf16" }, cluster = { device = dev } }
    assert.is_nil(common.mfu_basis_note(result))
  end)

  it("flags an estimate above the shipped best of its class only", function()
    local data = require "apsearch.intervals_data"
    local b = data.best_mfu["hopper/16bit"]
    assert.are.same(b, intervals.above_published(b.mfu + 0.01, "h200-sxm-141gb", "bf16"))
    -- the case with its file: mlr003 is also a DeepSeek-V3 GB300 run of
    -- megatron_lm_moe_recipes.csv (a reviewer's finding)
    assert.are.same({ "mlr003", "megatron_lm_readme_h100.csv" }, { b.case, b.file })
    local common = require "apsearch.format.common"
    assert.are.equal("^ MFU above the best published run of this hardware and precision (47.1 %, mlr003 in " ..
      "megatron_lm_readme_h100.csv: NVIDIA/Megatron-LM): expect it slower than estimated",
      common.mfu_note({ top_k_strategies = { { performance_cost = { mfu_above_published = b } } } }))
    assert.is_nil(intervals.above_published(b.mfu - 0.01, "h100-sxm-80gb", "bf16"))
    assert.is_nil(intervals.above_published(0.99, "gb200", "bf16")) -- no published Blackwell bf16 run
    -- Blackwell fp8 from the held-out sets (Megatron-Bridge's and MLPerf's
    -- dense runs): Llama 3.1 405B on 256 GB300, 2,646 TFLOP/s of 5,000
    local bq = data.best_mfu["blackwell/8bit"]
    assert.are.same({ mfu = 0.5290, case = "mbd083", file = "megatron_bridge_perf.csv",
      source = "NVIDIA-NeMo/Megatron-Bridge" }, bq)
    assert.are.same(bq, intervals.above_published(0.53, "gb300", "fp8"))
    -- NVFP4 against the NVFP4 runs' best, a fraction of the fp4 peak (2x
    -- fp8's on GB200, 3x on GB300): Llama 3.1 405B on 256 GB200, where the
    -- fp8 runs' 52.9 % could never be reached
    local b4 = data.best_mfu["blackwell/4bit"]
    assert.are.same({ mfu = 0.2988, case = "mbd081", file = "megatron_bridge_perf.csv",
      source = "NVIDIA-NeMo/Megatron-Bridge" }, b4)
    assert.are.same(b4, intervals.above_published(0.30, "gb300", "nvfp4"))
    assert.is_nil(intervals.above_published(0.30, "gb300", "mxfp8"))
  end)
end)
