-- tests/lua/input_limits_spec.lua -- issue 27 item 4 (inputs): every input
-- file is read as a regular file or refused at once on every command; each
-- refused input ends with exit 2 and exactly one line naming the file.
local H = require "spec_helpers"

local q = H.q

-- seconds a refused input may take before the spec counts it as blocked:
-- a blocked read never returns, and the 405B 16K search refused below took
-- over 20 s under ASan on a loaded CI machine (2026-12-05), so the bound is
-- wide
local HANG_SECONDS = 120

-- Runs the binary like H.apsearch, under timeout(1): a command that blocks
-- (e.g. on a FIFO) fails the spec with exit 124 instead of hanging it.
local function run(...)
  local args = {}
  for i, a in ipairs({ ... }) do args[i] = q(a) end
  local dir = H.tmpdir()
  local cmd = string.format("cd %s && APSEARCH_ROOT=%s timeout %d %s %s < /dev/null > %s/out 2> %s/err",
    q(H.ROOT), q(H.ROOT), HANG_SECONDS, q(H.BIN), table.concat(args, " "), dir, dir)
  local _, _, code = os.execute(cmd)
  return code, H.read(dir .. "/out") or "", H.read(dir .. "/err") or ""
end

-- Asserts exit 2, nothing on stdout and exactly `line` (one line) on stderr.
local function refused(line, ...)
  local code, out, err = run(...)
  assert.are.equal(2, code, err)
  assert.are.equal("", out)
  assert.are.equal("apsearch: " .. line .. "\n", err)
end

local POLICY = H.ROOT .. "/examples/llama3_8b_h100.lua"
local CASES = H.ROOT .. "/tests/fixtures/cases_small.csv"

describe("input files that are not regular files (issue 27)", function()
  local dir, fifo, fifo_json, fifo_lua
  setup(function()
    dir = H.tmpdir()
    fifo, fifo_json, fifo_lua = dir .. "/cases.csv", dir .. "/config.json", dir .. "/p.lua"
    for _, p in ipairs({ fifo, fifo_json, fifo_lua }) do assert(os.execute("mkfifo " .. q(p))) end
  end)

  local PIPE = "not a regular file (a named pipe)"

  it("validate and calibrate refuse a FIFO, a directory and a device at once", function()
    refused(fifo .. ": cannot read: " .. PIPE, "validate", fifo)
    refused(fifo .. ": cannot read: " .. PIPE, "calibrate", fifo, "-o", dir .. "/c.json")
    refused(dir .. ": cannot read: not a regular file (a directory)", "validate", dir)
    refused("/dev/null: cannot read: not a regular file (a char device)",
      "calibrate", "/dev/null", "-o", dir .. "/c.json")
    refused(fifo .. ": " .. PIPE, "validate", CASES, "--calibration", fifo)
  end)

  it("run and estimate refuse a FIFO as policy, rule, objective or formatter", function()
    refused(fifo_lua .. ": cannot open policy file: " .. PIPE, "run", fifo_lua)
    refused(fifo_lua .. ": cannot open policy file: " .. PIPE,
      "estimate", fifo_lua, "--strategy", "tp_degree=1")
    refused(dir .. ": cannot open policy file: not a regular file (a directory)", "run", dir)
    refused(fifo_lua .. ": cannot open rule file: " .. PIPE, "run", POLICY, "--rules", fifo_lua)
    refused(fifo_lua .. ": cannot open objective file: " .. PIPE, "run", POLICY, "--objective", fifo_lua)
    refused(fifo_lua .. ": cannot open formatter file: " .. PIPE, "run", POLICY, "--formatter", fifo_lua)
  end)

  it("model configs, baselines and calibrations on run, estimate and inspect", function()
    refused(fifo_json .. ": cannot read config: " .. PIPE, "inspect", fifo_json)
    refused(fifo_json .. ": cannot read config: " .. PIPE, "run", POLICY, "--model", fifo_json)
    refused(fifo_json .. ": cannot read config: " .. PIPE,
      "estimate", POLICY, "--model", fifo_json, "--strategy", "tp_degree=1")
    refused("--baseline: " .. fifo_json .. ": cannot read the file (" .. PIPE .. ")",
      "run", POLICY, "--baseline", fifo_json)
    refused(fifo_json .. ": " .. PIPE, "run", POLICY, "--calibration", fifo_json)
  end)

  it("a policy keeps loadfile's reading: a #! line and a byte-order mark are skipped, line numbers kept", function()
    local p = H.write(dir .. "/shebang.lua", "\239\187\191#!/usr/bin/env apsearch\nlocal x = nil\nreturn x.y\n")
    local code, _, err = run("run", p)
    assert.are.equal(2, code, err)
    assert.truthy(err:find("shebang.lua:3: attempt to index a nil value", 1, true), err)
  end)
end)

describe("a pipeline schedule over the simulation's size limit (issue 27)", function()
  local LIMIT = 4194304 -- APS_MAX_SCHEDULE_CELLS (include/apsearch/types.h)

  it("estimate calls it not modelled before allocating, with the numbers, exit 1", function()
    local code, out, err = run("estimate", H.ROOT .. "/examples/llama3_70b_h100.lua", "--strategy",
      "pp_degree=8,tp_degree=8,micro_batch_size=1", "--set", "training.global_batch_size=16777216")
    assert.are.equal(1, code, err)
    assert.truthy(out:find("feasible  NO: NOT_MODELLED: micro_batch_num = 16777216 x pp_degree = 8 x vpp_degree = 1 "
      .. "= 134217728 schedule cells, over", 1, true), out)
    assert.truthy(out:find("the simulation's limit of " .. LIMIT, 1, true), out)
  end)

  it("run filters those candidates and searches the others (the whole run stopped, exit 2) #bulk", function()
    -- a breaker pass (2026-12-05): one --set global batch aborted the run
    -- naming the policy's search space
    local code, out, err = run("run", H.ROOT .. "/examples/llama3_405b_h100_16k.lua",
      "--set", "training.global_batch_size=16777216", "-q")
    assert.are.equal(0, code, err)
    -- (72, the full walk's count: the fast path's late-check key lacked
    -- micro_batch_size until 2026-12-06 and counted 92)
    assert.truthy(out:find("NOT_MODELLED               72  (early) e.g. micro_batch_num = 131072 x pp_degree = 32 "
      .. "x vpp_degree = 2 = 8388608", 1, true), out)
    assert.truthy(out:find(" feasible of 288 candidates", 1, true), out)
  end)

  it("run with --model and no policy file searches what it can (it crashed on the missing path) #bulk", function()
    -- a config whose max_position_embeddings of 2 makes the built policy
    -- 524,288 sequences of 2 tokens (breaker pass, 2026-12-05)
    local src = H.read(H.ROOT .. "/examples/models/llama-3.1-8b.json")
    local cfg = H.tmpdir() .. "/mp2.json"
    local f = assert(io.open(cfg, "w"))
    f:write((src:gsub('"max_position_embeddings"%s*:%s*%d+', '"max_position_embeddings": 2')))
    f:close()
    local code, out, err = run("run", "--model", cfg, "-q")
    assert.are.equal(0, code, err)
    -- (8: 6 at micro_batch_size 1 and 2 at 2, each --fix'ed apart; 12
    -- before the late-check key held micro_batch_size)
    assert.truthy(out:find("NOT_MODELLED                 8  (early) e.g. micro_batch_num = 524288", 1, true), out)
    assert.is_nil(err:find("attempt to", 1, true), err)
  end)

  it("the core's timeline refuses it too (ctx:timeline), and the limit itself still simulates", function()
    local core = require "apsearch.core"
    local policy = require "apsearch.policy"
    local pol = policy.load(H.ROOT .. "/examples/llama3_70b_h100.lua")
    pol.training.global_batch_size = LIMIT // 8 + 1
    local ctx = core.context(pol.model, pol.cluster, pol.training)
    local s = { pp_degree = 8, tp_degree = 8, micro_batch_size = 1 }
    local ok, err = pcall(ctx.timeline, ctx, s, 64)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("^strategy: micro_batch_num = 524289 x pp_degree = 8"), err)
    pol.training.global_batch_size = LIMIT // 8 -- exactly the limit
    ctx = core.context(pol.model, pol.cluster, pol.training)
    local tl = assert(ctx:timeline(s, 64))
    assert.are.equal(LIMIT // 8, tl.micro_batch_num)
  end)
end)

describe("config.json integers are bounded by what a model can have (issue 27)", function()
  local hf = require "apsearch.hf"
  local cjson = require "cjson"
  local MAX = 16777216 -- hf.MAX_CONFIG_INT, the core's APS_MAX_WIDTH

  local function config(name)
    return cjson.decode((assert(H.read(H.ROOT .. "/examples/models/" .. name .. ".json"))))
  end

  -- every integer key each importer reads, with the lower bound it has
  local CASES = {
    ["deepseek-v3"] = { num_hidden_layers = 1, hidden_size = 1, num_attention_heads = 1,
      intermediate_size = 1, vocab_size = 1, max_position_embeddings = 1, q_lora_rank = 0,
      kv_lora_rank = 1, qk_nope_head_dim = 1, qk_rope_head_dim = 1, v_head_dim = 1,
      num_nextn_predict_layers = 0, n_routed_experts = 0, num_experts_per_tok = 1,
      moe_intermediate_size = 1, n_shared_experts = 0, first_k_dense_replace = 0,
      moe_layer_freq = 1, n_group = 1, topk_group = 1 },
    ["llama-3.1-8b"] = { num_key_value_heads = 1, head_dim = 1 },
    ["qwen3-30b-a3b"] = { num_experts = 1, decoder_sparse_step = 1 },
    ["mixtral-8x7b"] = { num_local_experts = 1, sliding_window = 1 },
  }

  for name, keys in pairs(CASES) do
    for key, min in pairs(keys) do
      it(name .. ": " .. key .. " = 1e30 is refused naming the file, the key and the value", function()
        local cfg = config(name)
        cfg[key] = 1e30
        local want = min == 1 and ("expected a positive integer <= %d"):format(MAX)
          or ("expected an integer in [0, %d]"):format(MAX)
        assert.are.equal(("c.json: %s: %s (got 1e+30)"):format(key, want),
          H.err_of(hf.from_config, cfg, "c.json"))
        cfg[key] = MAX + 1
        assert.are.equal(("c.json: %s: %s (got %d)"):format(key, want, MAX + 1),
          H.err_of(hf.from_config, cfg, "c.json"))
      end)
    end
  end

  it("rope_scaling.original_max_position_embeddings, max_window_layers and expansion_ratio too", function()
    local cfg = config("llama-3.1-8b")
    cfg.rope_scaling.original_max_position_embeddings = 1e30
    assert.are.equal(("c.json: rope_scaling: original_max_position_embeddings: expected a positive "
      .. "integer <= %d (got 1e+30)"):format(MAX), H.err_of(hf.from_config, cfg, "c.json"))
    cfg = config("qwen2.5-7b")
    cfg.use_sliding_window, cfg.max_window_layers = true, 1e30
    assert.are.equal(("c.json: max_window_layers: expected an integer in [0, %d] (got 1e+30)"):format(MAX),
      H.err_of(hf.from_config, cfg, "c.json"))
    cfg = { model_type = "mpt", d_model = 4096, n_heads = 32, n_layers = 32, vocab_size = 50432,
            expansion_ratio = 1e30 }
    assert.are.equal(("c.json: expansion_ratio: expected a positive number with expansion_ratio * d_model "
      .. "integral and <= %d (got 1e+30)"):format(MAX), H.err_of(hf.from_config, cfg, "c.json"))
  end)

  it("inspect and run: exit 2, one line naming the file, the key and the value", function()
    local dir = H.tmpdir()
    local cfg = config("deepseek-v3")
    cfg.q_lora_rank = 1e30
    local path = H.write(dir .. "/config.json", (cjson.encode(cfg):gsub("1e%+30", "1e30")))
    local line = path .. ": q_lora_rank: expected an integer in [0, 16777216] (got 1e+30)"
    refused(line, "inspect", path)
    refused(line, "run", POLICY, "--model", path)
  end)
end)

describe("a cases CSV with a duplicated header column (issue 27)", function()
  local dir, dup
  setup(function()
    dir = H.tmpdir()
    local lines = {}
    for line in assert(H.read(CASES)):gmatch("[^\r\n]+") do lines[#lines + 1] = line end
    lines[1] = lines[1] .. ",source" -- "source" is column 2 too
    for i = 2, #lines do lines[i] = lines[i] .. ",other" end
    dup = H.write(dir .. "/dup.csv", table.concat(lines, "\n") .. "\n")
  end)

  it("validate and calibrate refuse it naming the file and the column, exit 2", function()
    local ncols = select(2, assert(H.read(CASES)):match("^[^\r\n]*"):gsub(",", ",")) + 2
    local line = dup .. ': header: column "source" appears twice (columns 2 and ' .. ncols .. ")"
    refused(line, "validate", dup)
    refused(line, "calibrate", dup, "-o", dir .. "/c.json")
    refused(line, "validate", dup, "--cv", "source")
  end)
end)

describe("a baseline whose step time is huge or tiny (issue 27)", function()
  local baseline = require "apsearch.report.baseline"
  local dir, json
  setup(function()
    dir = H.tmpdir()
    json = require "apsearch.format.json"
    local code, out, err = run("run", POLICY, "--top-k", "2", "--format", "json", "-q")
    assert.are.equal(0, code, err)
    H.write(dir .. "/base.json", out)
  end)

  local function with_step(name, step)
    local r = json.decode(assert(H.read(dir .. "/base.json")))
    for _, rec in ipairs(r.top_k_strategies) do rec.performance_cost.step_time = step end
    return H.write(dir .. "/" .. name .. ".json", json.encode(r))
  end

  it("is refused naming the file, the record and the value, exit 2", function()
    for _, case in ipairs({ { "tiny", 1e-300, "1e-300" }, { "huge", 1e300, "1e+300" },
                            { "denormal", 5e-324, "4.9406564584125e-324" } }) do
      local path = with_step(case[1], case[2])
      refused(("--baseline: %s: top_k_strategies[0].performance_cost.step_time: expected a step time "
        .. "in [1e-06, 1e+09] s (got %s)"):format(path, case[3]), "run", POLICY, "--baseline", path)
    end
  end)

  it("refuses a recompute mode or a memory figure the diff would print as junk", function()
    -- (breaker, 2026-12-06: recompute=userdata: (nil), a 290-digit GiB)
    local function edited(name, edit)
      local r = json.decode(assert(H.read(dir .. "/base.json")))
      edit(r.top_k_strategies[1])
      return H.write(dir .. "/" .. name .. ".json", json.encode(r))
    end
    local path = edited("rc", function(rec) rec.layer_recompute = "bogus" end)
    refused(('--baseline: %s: top_k_strategies[0].layer_recompute: expected none, selective or full (got "bogus")')
      :format(path), "run", POLICY, "--baseline", path)
    path = edited("mem", function(rec) rec.memory_cost.total = 1e300 end)
    refused(("--baseline: %s: top_k_strategies[0].memory_cost.total: expected bytes in [0, 1.15292e+18] "
      .. "(got 1e+300)"):format(path), "run", POLICY, "--baseline", path)
  end)

  it("at the ends of the range prints finite percentages in text, JSON and the report", function()
    for _, step in ipairs({ baseline.MIN_STEP_TIME, baseline.MAX_STEP_TIME }) do
      local path = with_step("edge", step)
      local out_dir = dir .. "/out" .. tostring(step)
      local code, out, err = run("run", POLICY, "--top-k", "2", "--baseline", path, "--out", out_dir)
      assert.are.equal(0, code, err)
      assert.truthy(out:find("best step time:", 1, true), out)
      -- the words inf / nan anywhere in the text outputs; the report (its
      -- scripts spell Infinity and NaN) has no "inf%" / "nan%"
      local text = (out .. H.read(out_dir .. "/result.json") .. H.read(out_dir .. "/result.csv")):lower()
      assert.is_nil(text:find("%f[%a]inf%f[%A]") or text:find("%f[%a]nan%f[%A]"))
      local html = H.read(out_dir .. "/report.html"):lower()
      assert.is_nil(html:find("inf%", 1, true) or html:find("nan%", 1, true))
    end
  end)

  it("lines() never prints a non-finite change", function()
    for _, d in ipairs({ math.huge, -math.huge, 0 / 0 }) do
      local lines = baseline.lines({ inputs = { changed = {} },
        summary = { space_size = { 1, 1 }, feasible = { 1, 1 } },
        best = { before = { step_time = 1, strategy = "a" }, after = { step_time = 2, strategy = "a" },
                 delta_s = 1, delta_pct = d },
        top_k = { entered = {}, left = {}, moved = {}, kept = {
          { before = 1, after = 1, strategy = "a", step_time_before = 1, step_time_after = 2,
            delta_s = 1, delta_pct = d } } } })
      local all = table.concat(lines, "\n"):lower()
      assert.is_nil(all:find("%f[%a]inf%f[%A]") or all:find("%f[%a]nan%f[%A]"), all)
      assert.truthy(all:find("1.000 s -> 2.000 s", 1, true), all)
    end
  end)
end)
