-- tests/lua/research_spec.lua -- AP-DENSE-09: a user adjusts a constraint
-- and searches again without editing code (--fix, --set), and
-- `--baseline previous.json` reports what changed in the inputs and in
-- the top-k (lua/apsearch/report/baseline.lua, the table's "changes vs
-- baseline" section, the report's).  Through the apsearch binary.
--
-- APS_BIN is the built binary and APS_ROOT the repo root (CTest sets both).

local cjson = require "cjson"
local baseline = require "apsearch.report.baseline"

local BIN = os.getenv("APS_BIN")
local H = require "spec_helpers"
local q, read, tmpdir, apsearch = H.q, H.read, H.tmpdir, H.apsearch
local ROOT = os.getenv("APS_ROOT") or "."

local function changed_paths(diff)
  local by = {}
  for _, c in ipairs(diff.inputs.changed) do by[c.path] = c end
  return by
end

-- the new top-k is entered + moved + kept; the old one left + moved + kept
local function check_partition(diff, old, new)
  local t = diff.top_k
  assert.are.equal(#new.top_k_strategies, #t.entered + #t.moved + #t.kept)
  assert.are.equal(#old.top_k_strategies, #t.left + #t.moved + #t.kept)
  local now = {}
  for _, e in ipairs(t.entered) do now[e.rank] = true end
  for _, e in ipairs(t.moved) do now[e.after] = true assert.are_not.equal(e.before, e.after) end
  for _, e in ipairs(t.kept) do now[e.after] = true assert.are.equal(e.before, e.after) end
  for _, rec in ipairs(new.top_k_strategies) do assert.is_true(now[rec.rank], "rank " .. rec.rank) end
  for _, e in ipairs(t.moved) do
    local nr = new.top_k_strategies[e.after].performance_cost.step_time
    local orr = old.top_k_strategies[e.before].performance_cost.step_time
    assert.is_true(math.abs(nr - e.step_time_after) <= 1e-9 * nr)
    assert.is_true(math.abs(e.delta_s - (nr - orr)) <= 1e-9 * nr)
  end
end

-- `apsearch run MODEL_ARGS BEFORE --out DIR` and then `apsearch run
-- MODEL_ARGS AFTER --format json --baseline DIR/result.json` (both
-- --quiet, both must succeed): the first result and the second
local function against_baseline(model_args, before, after)
  local dir = H.tmpdir() .. "/base"
  local function args(extra, tail)
    local a = { "run", "--quiet" }
    for _, t in ipairs({ model_args, extra, tail }) do
      for _, v in ipairs(t) do a[#a + 1] = v end
    end
    return a
  end
  local code, _, err = apsearch(table.unpack(args(before, { "--out", dir })))
  assert.are.equal(0, code, err)
  local out
  code, out, err = apsearch(table.unpack(args(after, { "--format", "json", "--baseline", dir .. "/result.json" })))
  assert.are.equal(0, code, err)
  return cjson.decode(read(dir .. "/result.json")), cjson.decode(out)
end

describe("AP-DENSE-09: re-search with changed constraints, against a baseline", function()
  local base_dir, base
  setup(function()
    assert.is_string(BIN, "APS_BIN must name the built apsearch binary")
    base_dir = tmpdir() .. "/base"
    local code, _, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--out", base_dir)
    assert.are.equal(0, code, err)
    base = cjson.decode(read(base_dir .. "/result.json"))
  end)

  it("fixes a dimension and lowers the memory limit: inputs and top-k changes recorded", function()
    local code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--fix", "tp_degree=2", "--set", "cluster.memory_limit_gib=40",
      "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local d = r.baseline_diff
    assert.are.equal(base_dir .. "/result.json", d.baseline)
    local ch = changed_paths(d)
    assert.are.same({ 1, 2, 4, 8 }, ch["search_space.tp_degree"].before)
    assert.are.same({ 2 }, ch["search_space.tp_degree"].after)
    assert.are.equal(0, ch["training.memory_limit_bytes"].before)
    assert.are.equal(40 * 2 ^ 30, ch["training.memory_limit_bytes"].after)
    -- 0 is the default, the device's memory less the margin: the H100
    -- preset's 79.65 GiB - 1 GiB = 78.65 GiB, the limit the baseline's
    -- estimates applied
    local lim = ch["training.memory_limit_bytes"]
    assert.are.equal(base.top_k_strategies[1].memory_cost.limit, lim.effective_before)
    assert.are.equal(40 * 2 ^ 30, lim.effective_after)
    assert.are.equal("0 (default: 78.65 GiB)", baseline.show_input(lim, "before"))
    assert.are.equal("42949672960 (40.00 GiB)", baseline.show_input(lim, "after"))
    assert.truthy(ch["overrides"])
    assert.is_nil(ch["model.num_layers"])
    for _, rec in ipairs(r.top_k_strategies) do
      assert.are.equal(2, rec.tp_degree)
      -- the limit bounds max reserved (memory_limit_kind "reserved", the
      -- default); the device total adds the CUDA context and NCCL
      assert.are.equal("reserved", rec.memory_cost.limit_kind)
      assert.is_true(rec.memory_cost.reserved <= 40 * 2 ^ 30)
    end
    check_partition(d, base, r)
    assert.is_true(#d.top_k.left > 0)                     -- tp != 2 strategies left
    assert.are.equal(base.all_candidate_summary.space_size, d.summary.space_size.before)
    assert.are.equal(r.all_candidate_summary.space_size, d.summary.space_size.after)
    assert.are.equal(r.top_k_strategies[1].performance_cost.step_time, d.best.after.step_time)
    assert.is_true(d.best.delta_s >= 0)                   -- a narrower space cannot do better
  end)

  it("prints a short 'changes vs baseline' section in the table", function()
    local code, out = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet",
      "--set", "training.global_batch_size=128", "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code)
    assert.truthy(out:find("\nchanges vs baseline " .. base_dir .. "/result.json:\n", 1, true))
    assert.truthy(out:find("    training.global_batch_size: 64 -> 128", 1, true))
    assert.truthy(out:find("  best step time: ", 1, true))
  end)

  it("matches a strategy whose derived micro-batch count only followed the global batch", function()
    -- llama3_70b_h100: 512 -> 1024 sequences doubles every derived count
    -- (mbn 32 -> 64); the strategies are the same ones, each twice as long
    local dir = tmpdir() .. "/gbs"
    assert.are.equal(0, (apsearch("run", "examples/llama3_70b_h100.lua", "--quiet", "--top-k", "3",
      "--out", dir)))
    local code, out, err = apsearch("run", "examples/llama3_70b_h100.lua", "--quiet", "--top-k", "3",
      "--format", "json", "--set", "training.global_batch_size=1024", "--baseline", dir .. "/result.json")
    assert.are.equal(0, code, err)
    local t = cjson.decode(out).baseline_diff.top_k
    assert.are.equal(0, #t.left)
    assert.are.equal(0, #t.entered)
    assert.are.equal(3, #t.kept)
    for _, e in ipairs(t.kept) do
      assert.is_true(math.abs(e.delta_pct - 100) < 1, tostring(e.delta_pct))
    end
  end)

  it("reports no change for the same inputs", function()
    local code, out = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet",
      "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code)
    assert.truthy(out:find("  inputs: unchanged", 1, true))
    assert.truthy(out:find("  top-k: same strategies in the same order", 1, true))
  end)

  it("re-searches micro_batch_num, CP, recompute ranges and offsets from the command line", function()
    local dir = tmpdir() .. "/out"
    local c0 = apsearch("run", "examples/llama3_70b_h100.lua", "--quiet", "--out", dir,
      "--set", "search_space.pp_degree=1,2,4")
    assert.are.equal(0, c0)
    local b = dir .. "/result.json"
    local code, out, err = apsearch("run", "examples/llama3_70b_h100.lua", "--quiet", "--format", "json",
      "--set", "search_space.pp_degree=2,4", "--fix", "micro_batch_num=32,64",
      "--set", "search_space.cp_degree=1,2", "--fix", "layer_recompute=full",
      "--fix", "recompute_num_layers=-1,10", "--fix", "layer_offset=even",
      "--baseline", b)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local ch = changed_paths(r.baseline_diff)
    for _, p in ipairs({ "search_space.pp_degree", "search_space.micro_batch_num", "search_space.cp_degree",
      "search_space.layer_recompute", "search_space.recompute_num_layers" }) do
      assert.truthy(ch[p], p)
    end
    assert.is_true(#r.top_k_strategies > 0)
    for _, rec in ipairs(r.top_k_strategies) do
      assert.is_true(rec.pp_degree == 2 or rec.pp_degree == 4)
      assert.is_true(rec.micro_batch_num == 32 or rec.micro_batch_num == 64)
      assert.are.equal("full", rec.layer_recompute)
    end
    check_partition(r.baseline_diff, cjson.decode(read(b)), r)
  end)

  it("shows the changes in the report too", function()
    local dir = tmpdir() .. "/out"
    local code = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--out", dir,
      "--fix", "layer_recompute=full", "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code)
    local html = read(dir .. "/report.html")
    assert.truthy(html:find("Changes vs baseline", 1, true))
    assert.truthy(html:find("search_space.layer_recompute", 1, true))
    local saved = cjson.decode(read(dir .. "/result.json"))
    assert.truthy(saved.baseline_diff.inputs.changed[1])
  end)

  it("finds an MoE strategy that left among this search's candidates (its expert degrees walked too) #bulk", function()
    -- the walk had no expert count: every MoE strategy read "not in the
    -- search space any more" (newuser, 2026-12-03)
    local _, r = against_baseline({ "--model", "qwen3-30b-a3b", "--cluster", "b200:8" }, { "--top-k", "6" },
      { "--top-k", "3", "--set", "training.global_batch_size=1024" })
    local d = r.baseline_diff
    local left = d.top_k.left
    assert.is_true(#left > 0)
    -- found among the candidates: still feasible below the top-k, or its
    -- degrees in the top-k at the new batch (the micro-batch count differs)
    for _, e in ipairs(left) do
      assert.truthy(e.why.kind == "outranked" or e.why.kind == "changed", e.why.text)
    end
    -- twice the batch: the step times are of different work, the throughput compares
    local b = d.best
    assert.is_true(math.abs(b.tokens_delta_pct - 100 * (b.after.tokens_per_s_per_gpu / b.before.tokens_per_s_per_gpu
      - 1)) < 1e-9)
  end)

  it("does not call a strategy without recompute still feasible when only its recomputing variant fits #bulk", function()
    -- a longer sequence: the "none" runs need more than the limit; the
    -- same degrees with layers recomputed fit, which is said, not taken
    -- for the run (newuser, 2026-12-06: "outranked: still feasible" with
    -- the full-recompute variant's figures)
    local base5, r = against_baseline({ "--model", "deepseek-v3", "--cluster", "b200:32" }, { "--top-k", "5" },
      { "--top-k", "3", "--set", "training.seq_length=8192" })
    local seen = 0
    for _, e in ipairs(r.baseline_diff.top_k.left) do
      if base5.top_k_strategies[e.rank].layer_recompute == "none" then
        seen = seen + 1
        assert.are.equal("filtered", e.why.kind, e.why.text)
        assert.are.equal("MEMORY_LIMIT", e.why.reason, e.why.text)
        assert.truthy(e.why.text:find("its degrees fit with another recompute", 1, true), e.why.text)
      end
    end
    assert.is_true(seen > 0)
  end)

  it("walks no recompute apart when the training refuses full recompute (the EP overlap) #bulk", function()
    -- --overlap-moe-expert-parallel-comm refuses full recompute, so the
    -- search walks "none" apart; the walk of why_left had merged it into
    -- "full" and called strategies that still run FRAMEWORK_UNSUPPORTED
    -- (newuser, 2026-12-07: DeepSeek-V3 on 256 GB200)
    local base10, r = against_baseline({ "--model", "deepseek-v3", "--cluster", "gb200:64" }, { "--top-k", "10" },
      { "--top-k", "5", "--set", "training.overlap_moe_expert_parallel_comm=true" })
    local last = r.top_k_strategies[5].performance_cost.step_time
    local kinds = {}
    for _, e in ipairs(r.baseline_diff.top_k.left) do
      local was = base10.top_k_strategies[e.rank]
      assert.are.equal("none", was.layer_recompute)
      -- Megatron asserts a virtual pipeline under the overlap when pp > 1
      -- (transformer_config.py): those are filtered, the others outranked
      if was.pp_degree > 1 and was.vpp_degree == 1 then
        assert.are.equal("filtered", e.why.kind, e.why.text)
        assert.are.equal("FRAMEWORK_UNSUPPORTED", e.why.reason, e.why.text)
      else
        assert.are.equal("outranked", e.why.kind, e.why.text)
        assert.is_true(e.why.step_time >= last, e.why.text)
      end
      kinds[e.why.kind] = true
    end
    assert.is_true(kinds.outranked and kinds.filtered)
  end)

  it("says a framework refusal before a lower limit, compares the limited peak, and names the top-k rank", function()
    -- a breaker (2026-12-07): with the EP overlap and a 60 GiB limit, old
    -- strategies the overlap refuses (pp > 1, vpp 1) read "MEMORY_LIMIT:
    -- needs <device memory> > limit", the limit bounding max reserved
    local QWEN = { "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2" }
    local base6, r = against_baseline(QWEN, { "--top-k", "6" }, { "--top-k", "6",
      "--set", "training.overlap_moe_expert_parallel_comm=true", "--set", "cluster.memory_limit_gib=60" })
    local seen = {}
    for _, e in ipairs(r.baseline_diff.top_k.left) do
      local was = base6.top_k_strategies[e.rank]
      if was.pp_degree > 1 and was.vpp_degree == 1 then
        assert.are.equal("FRAMEWORK_UNSUPPORTED", e.why.reason, e.why.text)
      elseif e.why.reason == "MEMORY_LIMIT" then
        assert.is_true(was.memory_cost.reserved > 60 * 2 ^ 30, e.why.text)
        assert.truthy(e.why.text:find(("needs %.2f GiB of max reserved > limit 60.00 GiB"):format(
          was.memory_cost.reserved / 2 ^ 30), 1, true), e.why.text)
      end
      seen[e.why.reason or e.why.kind] = true
    end
    assert.is_true(seen.FRAMEWORK_UNSUPPORTED and seen.MEMORY_LIMIT)
    -- the overlap off again: the same degrees in the top-k run differently
    -- (no recompute), said with that top-k strategy's rank and figures
    _, r = against_baseline(QWEN, { "--top-k", "8", "--set", "training.overlap_moe_expert_parallel_comm=true" },
      { "--top-k", "8" })
    local changed = 0
    for _, e in ipairs(r.baseline_diff.top_k.left) do
      if e.why.kind == "changed" then
        changed = changed + 1
        local t = r.top_k_strategies[e.why.rank]
        assert.are.equal(t.performance_cost.step_time, e.why.step_time)
        assert.truthy(e.why.text:find(("its degrees are #%d of the top-k"):format(t.rank), 1, true), e.why.text)
      end
    end
    assert.is_true(changed > 0)
  end)

  it("says why each strategy left: not in the space, outranked, or filtered by which reason", function()
    -- a narrower space: the strategies with another tp_degree are not in it
    local code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--fix", "tp_degree=2", "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code, err)
    local d = cjson.decode(out).baseline_diff
    assert.is_true(#d.top_k.left > 0)
    local by_rank = {}
    for _, rec in ipairs(base.top_k_strategies) do by_rank[rec.rank] = rec end
    for _, e in ipairs(d.top_k.left) do
      assert.is_table(e.why, "why for #" .. e.rank)
      if by_rank[e.rank].tp_degree ~= 2 then assert.are.equal("not_in_space", e.why.kind) end
    end
    -- a shorter top-k: the ones that left are still feasible, outranked
    code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--set", "top_k=3", "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    d = r.baseline_diff
    assert.are.equal(#base.top_k_strategies - 3, #d.top_k.left)
    local last = r.top_k_strategies[3].performance_cost.step_time
    for _, e in ipairs(d.top_k.left) do
      assert.are.equal("outranked", e.why.kind)
      assert.is_true(e.why.step_time >= last)
      assert.is_true(math.abs(e.why.step_time - e.step_time) <= 1e-9 * e.step_time) -- the same run
    end
    -- a lower memory limit: those over it are filtered by MEMORY_LIMIT
    -- (a limit the user gives bounds max reserved, memory_limit_kind)
    local limit = base.top_k_strategies[1].memory_cost.reserved * 0.999
    code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--set", string.format("cluster.memory_limit_gib=%.6f", limit / 2 ^ 30), "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code, err)
    d = cjson.decode(out).baseline_diff
    local seen = false
    for _, e in ipairs(d.top_k.left) do
      if by_rank[e.rank].memory_cost.reserved > limit then
        seen = true
        assert.are.equal("filtered", e.why.kind)
        assert.are.equal("MEMORY_LIMIT", e.why.reason)
        assert.truthy(e.why.text:find("MEMORY_LIMIT", 1, true))
      end
    end
    assert.is_true(seen, "a strategy over the new limit left")
    -- a strategy that recomputed nothing still names its degrees' variant
    -- that recomputes layers and fits (lost once: breaker, 2026-12-06)
    local hinted = false
    for _, e in ipairs(d.top_k.left) do
      if by_rank[e.rank].layer_recompute == "none" and e.why.reason == "MEMORY_LIMIT" then
        hinted = hinted or e.why.text:find("its degrees fit with another recompute or split: ", 1, true) ~= nil
      end
    end
    assert.is_true(hinted)
    -- the text section and the report say it; the report lists every change
    local dir = tmpdir()
    code, out = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--out", dir,
      "--set", "top_k=3", "--baseline", base_dir .. "/result.json")
    assert.are.equal(0, code)
    assert.truthy(out:find(": outranked: still feasible", 1, true))
    local page = read(dir .. "/report.html")
    assert.truthy(page:find('id="baseline-table"', 1, true))
    local rows = select(2, page:gsub('<tr class="change%-left">', ""))
    assert.are.equal(#base.top_k_strategies - 3, rows)
    assert.truthy(page:find("outranked: still feasible", 1, true))
  end)

  it("refuses a baseline that is missing or not a result (exit 2, one line)", function()
    local code, out, err = apsearch("run", "--quiet", "--baseline", "/nonexistent/result.json")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:match("^apsearch: %-%-baseline: /nonexistent/result%.json: cannot read the file"), err)
    local dir = tmpdir()
    local f = assert(io.open(dir .. "/x.json", "w"))
    f:write('{"a": 1}')
    f:close()
    code, _, err = apsearch("run", "--quiet", "--baseline", dir .. "/x.json")
    assert.are.equal(2, code)
    assert.truthy(err:find("not an apsearch result.json", 1, true), err)
  end)

  it("refuses a baseline whose top-k records are malformed, naming the field", function()
    local function broken(edit)
      local r = cjson.decode(read(base_dir .. "/result.json"))
      edit(r)
      local path = tmpdir() .. "/b.json"
      local f = assert(io.open(path, "w"))
      f:write(cjson.encode(r))
      f:close()
      local ok, err = pcall(baseline.load, path)
      assert.is_false(ok)
      return err
    end
    assert.truthy(broken(function(r) r.top_k_strategies[2].tp_degree = cjson.null end)
      :find("top_k_strategies[1].tp_degree: expected a positive integer below 2^31 (got null)", 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies[1].performance_cost.step_time = "fast" end)
      :find('top_k_strategies[0].performance_cost.step_time: expected a positive number (got "fast")', 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies = { a = 1 } end)
      :find("top_k_strategies: expected an array", 1, true))
    -- fields the strategy text and the match read (they crashed the diff)
    assert.truthy(broken(function(r) r.top_k_strategies[1].micro_batch_num = "derived" end)
      :find('top_k_strategies[0].micro_batch_num: expected a positive integer below 2^31 (got "derived")', 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies[1].zero_stage = cjson.null end)
      :find("top_k_strategies[0].zero_stage: expected 0, 1, 2 or 3 (got null)", 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies[1].memory_cost = cjson.null end)
      :find("top_k_strategies[0].memory_cost: expected an object (got null)", 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies[1].memory_cost.per_stage = { cjson.null } end)
      :find("top_k_strategies[0].memory_cost.per_stage[0]: expected an object (got null)", 1, true))
    assert.truthy(broken(function(r) r.all_candidate_summary = cjson.null end)
      :find("all_candidate_summary: expected an object (got null)", 1, true))
    assert.truthy(broken(function(r) r.all_candidate_summary.feasible = -3 end)
      :find("all_candidate_summary.feasible: expected an integer >= 0 (got -3)", 1, true))
    assert.truthy(broken(function(r) r.schema_version = 99 end)
      :find("schema_version: expected 1", 1, true))
    assert.truthy(broken(function(r) r.top_k_strategies[2].rank = 1 end)
      :find("top_k_strategies[1].rank: repeated (got 1)", 1, true))
  end)

  it("matches strategies on every strategy field and on the split and recompute they resolved to", function()
    local function rec(t, layers)
      local per = {}
      for i, n in ipairs(layers) do per[i] = { num_layers = n } end
      t.memory_cost = { per_stage = per }
      return t
    end
    local a = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2,
      stage_partition = { 40, 40 } }, { 40, 40 })
    local b = rec({ dp_degree = 2.0, fsdp_degree = 4, tp_degree = 1, pp_degree = 2,
      stage_partition = { 40.0, 40 } }, { 40, 40 })
    assert.are.equal(baseline.key(a), baseline.key(b))
    -- an even split written as zeros, or chosen by "balanced", is the same
    b.stage_partition, b.balance_stages = { 0, 0 }, nil
    assert.are.equal(baseline.key(a), baseline.key(b))
    b = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2,
      stage_partition = { 39, 41 } }, { 39, 41 })
    assert.are_not.equal(baseline.key(a), baseline.key(b))
    b.dp_degree = 4
    assert.are_not.equal(baseline.key(rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1,
      pp_degree = 2 }, { 39, 41 })), baseline.key(b))
    -- a setting of a dimension that is off: cp_comm_type without CP
    local c1 = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, cp_degree = 1,
      cp_comm_type = "p2p" }, { 40, 40 })
    local c2 = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, cp_degree = 1,
      cp_comm_type = "all_gather" }, { 40, 40 })
    assert.are.equal(baseline.key(c1), baseline.key(c2))
    c1.cp_degree, c2.cp_degree = 2, 2
    assert.are_not.equal(baseline.key(c1), baseline.key(c2))
    -- full recompute of every layer written as -1 or as the counts
    a.layer_recompute, a.recompute_num_layers = "full", -1
    b = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, layer_recompute = "full",
      recompute_num_layers = { 40, 99 } }, { 40, 40 })
    assert.are.equal(baseline.key(a), baseline.key(b))
    -- the pipeline schedule is part of how a strategy runs (left out: 1f1b)
    local s1 = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, vpp_degree = 2,
      pp_schedule = "1f1b" }, { 40, 40 })
    local s2 = rec({ dp_degree = 2, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, vpp_degree = 2,
      pp_schedule = "zbv_zero_bubble" }, { 40, 40 })
    assert.are_not.equal(baseline.key(s1), baseline.key(s2))
    s2.pp_schedule = nil
    assert.are.equal(baseline.key(s1), baseline.key(s2))
  end)

  it("matches a uniform-recompute record with its own result.json copy", function()
    -- as the search holds it: recompute_num_layers -1 (groups of 1, every
    -- layer); result.json writes the resolved group size per stage, {1, 1}
    local live = { dp_degree = 1, fsdp_degree = 8, tp_degree = 1, pp_degree = 2, micro_batch_size = 1,
      layer_recompute = "full", recompute_method = "uniform", recompute_num_layers = -1,
      memory_cost = { per_stage = { { num_layers = 16, recompute_layers = 16 },
        { num_layers = 16, recompute_layers = 16 } } } }
    local json = require "apsearch.format.json"
    local saved = json.decode(json.encode({ top_k_strategies = { live } })).top_k_strategies[1]
    assert.are.same({ 1, 1 }, saved.recompute_num_layers)
    assert.are.equal(baseline.key(live), baseline.key(saved))
    -- another group size is another strategy
    saved.recompute_num_layers = { 2, 2 }
    assert.are_not.equal(baseline.key(live), baseline.key(saved))
  end)

  it("keeps every schedule of a search apart, and says which left when the space drops them", function()
    local dir = tmpdir()
    local base = { "examples/llama3_8b_h100.lua", "--quiet", "--top-k", "5",
      "--set", "search_space.pp_degree=2", "--set", "search_space.vpp_degree=2",
      "--set", "search_space.tp_degree=2", "--set", "search_space.layer_recompute=none",
      "--set", "search_space.micro_batch_size=1" }
    local function run_with(sched, ...)
      local args = { "run" }
      for _, a in ipairs(base) do args[#args + 1] = a end
      args[#args + 1] = "--set"
      args[#args + 1] = "search_space.pp_schedule=" .. sched
      for _, a in ipairs({ ... }) do args[#args + 1] = a end
      return apsearch(table.unpack(args))
    end
    local all = "1f1b,zbv_zero_bubble,dualpipev,interleaved_zero_bubble"
    local code, _, err = run_with(all, "--out", dir .. "/res")
    assert.are.equal(0, code, err)
    local old = cjson.decode(read(dir .. "/res/result.json"))
    local scheds = {}
    for _, r in ipairs(old.top_k_strategies) do scheds[r.pp_schedule] = true end
    assert.is_true(scheds["1f1b"] and scheds["dualpipev"] and scheds["zbv_zero_bubble"] or false)
    -- the same search against itself: every record kept at its rank
    local out
    code, out, err = run_with(all, "--format", "json", "--baseline", dir .. "/res")
    assert.are.equal(0, code, err)
    local t = cjson.decode(out).baseline_diff.top_k
    assert.are.equal(#old.top_k_strategies, #t.kept)
    assert.are.equal(0, #t.entered + #t.left + #t.moved)
    -- 1F1B only: the other schedules left the space, and say so
    code, out, err = run_with("1f1b", "--format", "json", "--baseline", dir .. "/res")
    assert.are.equal(0, code, err)
    local new = cjson.decode(out)
    t = new.baseline_diff.top_k
    check_partition(new.baseline_diff, old, new)
    assert.are.equal(#old.top_k_strategies - 1, #t.left)
    for _, e in ipairs(t.left) do
      assert.truthy(e.strategy:find(" schedule=", 1, true), e.strategy)
      assert.are.equal("not_in_space", e.why.kind, e.strategy)
    end
  end)
end)
