-- tests/lua/cli_habits_spec.lua -- what users expect of the command line
-- (issue 16): "did you mean", usage and exit codes, --version, help of a
-- subcommand, the generated completion and man page, the objective's
-- score in every output, tables within 120 columns, placeholders spelt out.
-- Through the built binary (APS_BIN, APS_ROOT set by CTest).

local cjson = require "cjson"
local H = require "spec_helpers"
local apsearch, tmpdir, read, q = H.apsearch, H.tmpdir, H.read, H.q
local ROOT = os.getenv("APS_ROOT") or "."

local function err_line(code, out, err)
  assert.are.equal(2, code)
  assert.are.equal("", out)
  assert.truthy(err:match("^apsearch: [^\n]+\n$"), "not one line: " .. err)
  return err
end

describe("suggest", function()
  local suggest = require "apsearch.suggest"
  it("measures Damerau-Levenshtein distance (a transposition costs 1)", function()
    assert.are.equal(0, suggest.distance("run", "run"))
    assert.are.equal(1, suggest.distance("rnu", "run"))
    assert.are.equal(1, suggest.distance("serch_space", "search_space"))
    assert.are.equal(3, suggest.distance("kitten", "sitting"))
  end)
  it("stops at max: the length difference, or a row beyond it", function()
    assert.are.equal(3, suggest.distance("kitten", "sitting", 3))
    assert.are.equal(3, suggest.distance("kitten", "sitting", 2)) -- max + 1
    assert.are.equal(3, suggest.distance(string.rep("a", 40), "run", 2)) -- |40 - 3| > 2
    -- "zzzzzz" vs "aaaaaa": row 3 is all >= 3, so 3 = max + 1, not 6
    assert.are.equal(3, suggest.distance("zzzzzz", "aaaaaa", 2))
    assert.are.equal(6, suggest.distance("zzzzzz", "aaaaaa"))
  end)
  it("suggests for a long misspelt name within a small budget of Lua instructions", function()
    -- a fuzzed policy gave preset() a 60-byte name: 33 full tables of 60 x ~20
    -- entries went over the sandbox's million instructions of one call
    local names = require("apsearch.presets").all_model_names()
    local count = 0
    debug.sethook(function() count = count + 1 end, "", 1000)
    local got = suggest.closest("llama-3.1-8b" .. string.rep("A", 60), names)
    local long = suggest.closest(string.rep("x", 30), names)
    debug.sethook()
    assert.are.same({ "llama-3.1-8b" }, got)
    assert.are.same({}, long)
    assert.is_true(count * 1000 < 200000, "instructions: " .. count * 1000)
  end)
  it("suggests within max(2, #word // 3) or by prefix, nothing when far", function()
    assert.are.same({ "search_space" }, suggest.closest("serch_space", { "search_space", "model" }))
    assert.are.same({ "h100-sxm-80gb" }, suggest.closest("h100-sxm", { "h100-sxm-80gb", "b200" }))
    assert.are.same({}, suggest.closest("zzzzzz", { "run", "estimate" }))
    -- a short word that is the whole first part of a name
    assert.are.same({ "tp_degree" }, suggest.closest("tp", { "tp_degree", "pp_degree", "cp_degree" }))
    assert.are.same({ "cp_comm_type", "cp_degree" }, suggest.closest("cp", { "tp_degree", "cp_degree", "cp_comm_type" }))
    assert.are.same({}, suggest.closest("t", { "tp_degree" }))
    assert.is_nil(suggest.did_you_mean("qqq", { "run" }))
  end)
  it("ranks a name close once the separators are left out before one a few edits away", function()
    -- llama3-8b: three edits from llama-3.1-8b and from llama-2-7b with the
    -- separators; without them one (llama38b, llama318b) against two
    local names = { "llama-2-7b", "llama-3.1-8b", "llama-3.1-70b" }
    assert.are.same({ "llama-3.1-8b" }, suggest.closest("llama3-8b", names))
    assert.are.same({ "deepseek-v3" }, suggest.closest("deepseekv3", { "deepseek-v3", "deepseek-v2" }))
    -- a name as close with its separators is not ranked after one without
    assert.are.same({ "search_space" }, suggest.closest("serch_space", { "search_space", "searchspac" }))
  end)
end)

describe("an output file that is an input", function()
  -- found by a breaker pass (2026-12-05): calibrate -o over its own cases
  -- file, and estimate --trace over its policy, replaced them with JSON
  it("is refused before anything is written, through a symbolic link too", function()
    local dir = tmpdir()
    local cases = dir .. "/keep.csv"
    local src = assert(io.open(ROOT .. "/tests/fixtures/public_cases.csv")):read("a")
    local f = assert(io.open(cases, "w"))
    f:write((src:match("^([^\n]*\n[^\n]*\n)")))
    f:close()
    local before = read(cases)
    assert(os.execute("ln -s keep.csv " .. q(dir .. "/link.json")))
    for _, out in ipairs({ cases, dir .. "/link.json" }) do
      local err = err_line(apsearch("calibrate", cases, "-o", out))
      assert.truthy(err:find("--output: file: is an input of this command (" .. cases ..
        "): refusing to write over it", 1, true), err)
    end
    assert.are.equal(before, read(cases))
    local policy = dir .. "/p.lua"
    local pf = assert(io.open(policy, "w"))
    pf:write(read(ROOT .. "/examples/llama3_8b_h100.lua"))
    pf:close()
    local err = err_line(apsearch("estimate", policy, "--strategy", "tp_degree=2", "--trace", policy))
    assert.truthy(err:find("--trace: file: is an input of this command", 1, true), err)
    assert.are.equal(read(ROOT .. "/examples/llama3_8b_h100.lua"), read(policy))
    -- a file the policy names (its model's config.json) is an input too:
    -- every file read counts (a second breaker pass overwrote it)
    local cfg = dir .. "/cfg.json"
    local cf = assert(io.open(cfg, "w"))
    cf:write(read(ROOT .. "/examples/models/llama-3.1-8b.json"))
    cf:close()
    local pol2 = dir .. "/p2.lua"
    local p2 = assert(io.open(pol2, "w"))
    p2:write((read(ROOT .. "/examples/llama3_8b_h100.lua"):gsub('model = [^,\n]*,', 'model = ' .. q(cfg) .. ',', 1)))
    p2:close()
    err = err_line(apsearch("estimate", pol2, "--strategy", "tp_degree=2", "--trace", cfg))
    assert.truthy(err:find("--trace: file: is an input of this command (" .. cfg .. ")", 1, true), err)
    assert.are.equal(read(ROOT .. "/examples/models/llama-3.1-8b.json"), read(cfg))
  end)

  it("replaces only an earlier output of its kind: a user's file, profile or link target is kept", function()
    -- a breaker pass (2026-12-05): `estimate --trace my_profile.json.gz`
    -- replaced the user's profile, and a read-only file, with the estimate
    local dir = tmpdir()
    local profile = dir .. "/profile.json.gz"
    local f = assert(io.open(profile, "wb"))
    f:write("\31\139\8\0\0\0\0\0") -- a gzip header: the user's own trace
    f:close()
    assert(os.execute("printf hello > " .. q(dir .. "/target.txt") .. " && ln -s target.txt " .. q(dir .. "/l.json")))
    for _, out in ipairs({ profile, dir .. "/l.json" }) do
      local err = err_line(apsearch("estimate", "--strategy", "tp_degree=2", "--trace", out, "--quiet"))
      assert.truthy(err:find("--trace: file: exists and is not a trace apsearch estimate wrote: refusing to "
        .. "replace it (remove it or give a new path)", 1, true), err)
    end
    assert.are.equal("\31\139\8\0\0\0\0\0", read(profile))
    assert.are.equal("hello", read(dir .. "/target.txt"))
    -- its own trace is replaced on a second run, as a calibration is
    local trace = dir .. "/t.json"
    for _, tp in ipairs({ "2", "4" }) do
      local code, _, err = apsearch("estimate", "--strategy", "tp_degree=" .. tp, "--trace", trace, "--quiet")
      assert.are.equal(0, code, err)
    end
    -- (a profile's calibration: the quickest calibrate there is)
    local profile_in = ROOT .. "/tests/fixtures/traces/hta_a100_rank0.json.gz"
    local cal = dir .. "/c.json"
    for _ = 1, 2 do
      local code, _, err = apsearch("calibrate", "--trace", profile_in, "-o", cal, "--quiet")
      assert.are.equal(0, code, err)
    end
    local err = err_line(apsearch("calibrate", "--trace", profile_in, "-o", trace, "--quiet"))
    assert.truthy(err:find("--output: file: exists and is not a calibration apsearch wrote", 1, true), err)
    -- its own trace made read-only, or hard-linked, is kept too (as root
    -- the file could be opened for writing: the owner's write bit rules;
    -- a second breaker pass)
    assert(os.execute("chmod 444 " .. q(trace)))
    err = err_line(apsearch("estimate", "--strategy", "tp_degree=2", "--trace", trace, "--quiet"))
    assert.truthy(err:find("--trace: file: exists and is read-only: refusing to replace it", 1, true), err)
    assert(os.execute("chmod 644 " .. q(trace) .. " && ln " .. q(trace) .. " " .. q(dir .. "/t2.json")))
    err = err_line(apsearch("estimate", "--strategy", "tp_degree=2", "--trace", trace, "--quiet"))
    assert.truthy(err:find("--trace: file: exists with 2 hard links: refusing to replace it", 1, true), err)
    -- a file with the producer's words planted is not a trace of ours
    local planted = dir .. "/planted.txt"
    local pf = assert(io.open(planted, "w"))
    pf:write('IMPORTANT "producer":"apsearch estimate --trace"')
    pf:close()
    err = err_line(apsearch("estimate", "--strategy", "tp_degree=2", "--trace", planted, "--quiet"))
    assert.truthy(err:find("exists and is not a trace apsearch estimate wrote", 1, true), err)
  end)
end)

describe("apsearch command line habits", function()
  it("prints usage on stderr and exits 2 without arguments", function()
    local code, out, err = apsearch()
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find("^usage: apsearch <command>"))
  end)

  it("prints the version with -V and --version", function()
    for _, flag in ipairs({ "-V", "--version" }) do
      local code, out = apsearch(flag)
      assert.are.equal(0, code)
      assert.truthy(out:match("^apsearch %d+%.%d+%.%d+\n$"), out)
    end
    local cmake = read(H.ROOT .. "/CMakeLists.txt")
    local v = cmake:match("project%(apsearch VERSION ([%d%.]+)")
    assert.are.equal("apsearch " .. v .. "\n", select(2, apsearch("--version")))
  end)

  it("prints the help of a subcommand with `help run`", function()
    local code, out = apsearch("help", "run")
    assert.are.equal(0, code)
    assert.truthy(out:find("Usage: apsearch run", 1, true))
    assert.truthy(out:find("--top-k", 1, true))
    assert.are.equal(out, select(2, apsearch("run", "--help")))
  end)

  it("suggests subcommands and options", function()
    assert.truthy(err_line(apsearch("rnu")):find('unknown command "rnu"; did you mean "run"?', 1, true))
    assert.truthy(err_line(apsearch("help", "estimat")):find('did you mean "estimate"?', 1, true))
    assert.truthy(err_line(apsearch("run", "--top", "3")):find('--top; did you mean "--top-k"?', 1, true))
    assert.truthy(err_line(apsearch("run", "--qiet")):find('did you mean "--quiet"?', 1, true))
    assert.truthy(err_line(apsearch("estimate", "--stratgy", "tp_degree=2"))
      :find('did you mean "--strategy"?', 1, true))
  end)

  it("takes -k for --top-k, as the docs and most search tools spell it", function()
    local code, out = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "2", "--format", "json", "--quiet")
    assert.are.equal(0, code)
    local r = cjson.decode(out)
    assert.are.equal(2, #r.top_k_strategies)
    local _, out2 = apsearch("run", "examples/llama3_8b_h100.lua", "--top-k", "2", "--format", "json", "--quiet")
    local r2 = cjson.decode(out2)
    assert.are.equal(r2.top_k_strategies[2].performance_cost.step_time, r.top_k_strategies[2].performance_cost.step_time)
    -- a number with no integer form was dropped for the default 10
    local code3, _, err3 = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "9999999999999999999", "--quiet")
    assert.are.equal(2, code3)
    assert.are.equal('apsearch: --top-k: top_k: must be below 2^31 (got "9999999999999999999")\n', err3)
  end)


  it("reads the numbers a user types as decimal: 0x10 is refused, not read as 16", function()
    local cases = {
      { { "-k", "0x10" }, 'apsearch: --top-k: top_k: must be a positive integer (got "0x10")\n' },
      { { "--jobs", "0x2" }, 'apsearch: --jobs: jobs: must be an integer >= 1 (got "0x2")\n' },
      { { "--set", "training.global_batch_size=0x40" },
        'apsearch: --set: training.global_batch_size: must be a positive integer (got "0x40")\n' },
    }
    for _, c in ipairs(cases) do
      local code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", table.unpack(c[1]))
      assert.are.equal(c[2], err_line(code, out, err))
    end
    -- without --quiet too: a bad flag value is the run's only line, before
    -- the policy's notes (a new user's finding: --jobs 0, --candidates x)
    for _, c in ipairs({ { "--jobs", "0", 'apsearch: --jobs: jobs: must be an integer >= 1 (got "0")\n' },
        { "--candidates", "x", 'apsearch: --candidates: candidates: must be all, feasible or none (got "x")\n' } }) do
      local code, _, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", c[1], c[2])
      assert.are.equal(2, code)
      assert.are.equal(c[3], err)
    end
    -- util.decimal, form by form: "5." reads as ".5" does (a second breaker
    -- pass found one refused beside the other); no hex, no underscore
    local util = require "apsearch.util"
    for text, want in pairs({ ["5"] = 5, ["5."] = 5, [".5"] = 0.5, ["+5"] = 5, ["1e3"] = 1000,
        ["1e+3"] = 1000, ["-0"] = 0 }) do
      assert.are.equal(want, util.decimal(text), text)
    end
    for _, text in ipairs({ ".", "1e", "0x10", "1_000", "", "-", "5.5.5", " 8 ", "inf", "nan" }) do
      assert.is_nil(util.decimal(text), text)
    end
    local serr = err_line(apsearch("run", "examples/llama3_8b_h100.lua", "-q", "--sandbox-seconds", "1e-400"))
    assert.truthy(serr:find("must be a number of seconds in [0, 1e9] (0: no limit)", 1, true), serr)
    -- decimal forms still read: blanks around a --set value, an exponent
    local code, out = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "1", "--format", "json", "--quiet",
      "--set", "training.global_batch_size= 64 ", "--set", "training.seq_length=8.192e3")
    assert.are.equal(0, code)
    local r = cjson.decode(out)
    assert.are.equal(64, r.inputs.training.global_batch_size)
    assert.are.equal(8192, r.inputs.training.seq_length)
  end)
  it("says when one setting is given twice under two names, and which wins (it was silent)", function()
    -- cluster.memory_limit_gib and constraints.memory_limit_gib are the
    -- same limit (schema routes both to training.memory_limit_bytes)
    local code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "1", "--format", "json", "--set",
      "cluster.memory_limit_gib=60", "--set", "constraints.memory_limit_gib=70")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: --set constraints.memory_limit_gib=70 replaces --set "
      .. "cluster.memory_limit_gib=60: the same setting (the last one given wins)\n", 1, true), err)
    assert.are.equal(70 * 2 ^ 30, cjson.decode(out).inputs.training.memory_limit_bytes)
    -- the same name twice: the usual last-one-wins, nothing said
    local _, _, err2 = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "1", "--set",
      "cluster.memory_limit_gib=60", "--set", "cluster.memory_limit_gib=70")
    assert.is_nil(err2:find("replaces", 1, true), err2)
  end)
  it("says an estimate over the memory limit prices its bubble by the closed form (1f1b and dualpipev alike here)", function()
    local steps = {}
    for _, sched in ipairs({ "1f1b", "dualpipev" }) do
      local code, out = apsearch("estimate", "examples/llama3_8b_h100.lua", "--strategy",
        "pp_degree=4,vpp_degree=2,fsdp_degree=2,micro_batch_size=1,pp_schedule=" .. sched)
      assert.are.equal(1, code, out) -- infeasible
      assert.truthy(out:find("feasible  NO", 1, true), out)
      assert.truthy(out:gsub("\n +", " "):find("pp_bubble: the closed form (p - 1) / v x (forward + backward) of "
        .. "the slowest stage: a strategy over the memory limit is not simulated, so its schedule (pp_schedule) "
        .. "changes no more than the stages' layers", 1, true), out)
      steps[#steps + 1] = out:match("step time +([%d.]+)")
    end
    -- the same closed form; DualPipeV's rank 0 also holds the output layer
    -- (its V's last chunk), whose gradient sync and optimizer step add 1 ms
    assert.is_true(math.abs(tonumber(steps[1]) - tonumber(steps[2])) <= 0.002, steps[1] .. " " .. steps[2])
    local _, fits = apsearch("estimate", "examples/llama3_8b_h100.lua")
    assert.is_nil(fits:find("closed form", 1, true), fits)
  end)
  it("says a dimension fixed twice keeps the last value", function()
    local code, _, err = apsearch("run", "examples/llama3_8b_h100.lua", "-k", "1", "--fix", "tp_degree=2",
      "--fix", "tp_degree=4")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: --fix tp_degree given twice: 4 replaces 2", 1, true), err)
  end)
  it("keeps a --set field inside a table a later --set replaces, with a note (it was dropped silently)", function()
    local args = { "estimate", "examples/qwen3_30b_a3b_h100.lua", "--strategy",
      "pp_degree=2,ep_degree=8,micro_batch_size=1", "--format", "json" }
    local function step(...)
      local a = { table.unpack(args) }
      for _, x in ipairs({ ... }) do a[#a + 1] = x end
      local code, out, err = apsearch(table.unpack(a))
      assert.are.equal(0, code, err)
      return require("cjson").decode(out).estimate.step_time, err
    end
    local after = step("--set", "cluster.device=b200", "--set", "cluster.device.host_seconds_per_loop_gemm=0.01")
    local before, err = step("--set", "cluster.device.host_seconds_per_loop_gemm=0.01", "--set", "cluster.device=b200")
    assert.are.equal(after, before)
    assert.truthy(err:find("apsearch: note: --set cluster.device replaces that table; " ..
      "cluster.device.host_seconds_per_loop_gemm, given before it, still applied on top", 1, true), err)
    assert.is_true(before > step("--set", "cluster.device=b200"))
    -- --set cluster=SPEC replaces the cluster the same way (it dropped the
    -- device memory silently); which preset a table is does not carry over
    local function est(...)
      local a = { "estimate", "examples/llama3_8b_h100.lua", "--strategy", "tp_degree=8", "--format", "json", ... }
      local code, out, err = apsearch(table.unpack(a))
      assert.are.equal(0, code, err)
      return require("cjson").decode(out), err
    end
    local e, err2 = est("--set", "cluster.device.memory_gib=40", "--set", "cluster=b200:2")
    assert.are.equal(40 * 2 ^ 30, e.inputs.cluster.device.memory_bytes)
    assert.truthy(err2:find("note: --set cluster replaces that table; cluster.device.memory_gib", 1, true), err2)
    e = est("--set", "cluster.device.base=h100-sxm-80gb", "--set", "cluster.device=b200")
    assert.are.equal("b200", e.inputs.cluster.device.name)
    e = est("--set", "model.preset=llama-3.1-70b", "--set", "model=llama-3.1-8b")
    assert.are.equal(32, e.inputs.model.num_layers)
  end)
  it("says a second --calibration drops the first file (calibrations are not merged)", function()
    local dir = tmpdir()
    local calib, other = dir .. "/c.json", dir .. "/d.json"
    for _, path in ipairs({ calib, other }) do
      local f = assert(io.open(path, "w"))
      f:write('{"schema_version": 1, "name": "c", "devices": {"h100-sxm-80gb": {"gemm_efficiency": 0.7}}}')
      f:close()
    end
    local code, _, err = apsearch("estimate", "examples/llama3_8b_h100.lua", "--calibration", other,
      "--calibration=" .. calib)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: --calibration given 2 times (" .. other .. ", " .. calib ..
      "): only the last, " .. calib .. ", applies (a calibration file is not merged", 1, true), err)
    local _, _, once = apsearch("estimate", "examples/llama3_8b_h100.lua", "--calibration", calib)
    assert.is_nil(once:find("given 2 times", 1, true), once)
    -- the same file twice drops nothing
    local _, _, same = apsearch("estimate", "examples/llama3_8b_h100.lua", "--calibration", calib,
      "--calibration", calib)
    assert.is_nil(same:find("given 2 times", 1, true), same)
  end)
  it("names what a repeated single-value option dropped, a value it would refuse included", function()
    local cli = require "apsearch.cli"
    local spec = cli.option_table().run
    -- argparse's last-wins: --top-k abc alone exits 2, before a later --top-k it is dropped, and said
    assert.are.same({ "apsearch: note: --top-k given 2 times (abc, 2): only the last, 2, applies" },
      cli.repeated_option_notes(spec, { "--top-k", "abc", "-k", "2" }))
    assert.are.same({ "apsearch: note: --jobs given 3 times (0, 1, 1): only the last, 1, applies" },
      cli.repeated_option_notes(spec, { "--jobs=0", "--jobs", "1", "--jobs=1" }))
    -- the same value twice, repeatable options, flags, and what follows -- are not looked at
    assert.are.same({}, cli.repeated_option_notes(spec, { "--jobs", "2", "--jobs=2", "--set", "a=1", "--set", "a=2",
      "--quiet", "--quiet", "--", "--top-k", "1", "--top-k", "3" }))
    local code, _, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--top-k", "abc",
      "--top-k", "1", "--fix", "tp=8", "--fix", "pp=1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("note: --top-k given 2 times (abc, 1): only the last, 1, applies", 1, true), err)
  end)
  it("suggests policy fields, listing the valid ones as far as the line fits 120 columns", function()
    local err = err_line(apsearch("run", "--set", "training.global_bach_size=8"))
    assert.truthy(err:find('training.global_bach_size: unknown field; did you mean "global_batch_size"? '
      .. "(77 known names) (got 8)", 1, true), err)
    err = err_line(apsearch("run", "--set", "training.foo=8"))
    assert.truthy(err:find("training.foo: unknown field (known: dropout, stack, ", 1, true), err)
    assert.truthy(err:find(", ... and %d+ more%) %(got 8%)\n$"), err)
    assert.is_true(utf8.len(err) - 1 <= 120, err)
    err = err_line(apsearch("run", "--set", "traning.seq_length=8"))
    assert.truthy(err:find('did you mean "training"?', 1, true), err)
    err = err_line(apsearch("run", "--fix", "tp_degre=2"))
    assert.truthy(err:find('did you mean "tp_degree"?', 1, true), err)
    -- the names the docs write (a byte field's _gib spelling) and other
    -- tools' names for the same fields (suggest.FIELD_ALIASES)
    err = err_line(apsearch("run", "--set", "cluster.memory_limit=60"))
    assert.truthy(err:find('did you mean "memory_limit_bytes" or "memory_limit_gib" or "memory_limit_kind"?', 1,
      true), err)
    -- the docs' peak and bandwidth spellings (peak_bf16_tflops for
    -- peak_flops_bf16; hbm_bandwidth_gbps): a new user's bf16_tflops was
    -- offered gemm_tile_m
    err = err_line(apsearch("run", "--set", "cluster.device.bf16_tflops=900"))
    assert.truthy(err:find('cluster.device.bf16_tflops: unknown field; did you mean "peak_bf16_tflops"?', 1, true), err)
    err = err_line(apsearch("run", "--set", "cluster.device.hbm_bw_gbps=900"))
    assert.truthy(err:find("cluster.device.hbm_bw_gbps: unknown field (known: hbm_bandwidth_gbps, ", 1, true), err)
    err = err_line(apsearch("run", "--set", "cluster.gpus_per_node=8"))
    assert.truthy(err:find('cluster.gpus_per_node: unknown field; did you mean "devices_per_node"?', 1, true), err)
    err = err_line(apsearch("run", "--fix", "tensor_model_parallel_size=2"))
    assert.truthy(err:find('did you mean "tp_degree"?', 1, true), err)
    -- the dimension as said, TorchTitan's names, and its framework name
    err = err_line(apsearch("run", "--fix", "tensor_parallel=2"))
    assert.truthy(err:find('did you mean "tp_degree"?', 1, true), err)
    err = err_line(apsearch("run", "--fix", "pipeline_parallel_degree=2"))
    assert.truthy(err:find('did you mean "pp_degree"?', 1, true), err)
    err = err_line(apsearch("run", "--set", "training.framework=torchtitan"))
    assert.truthy(err:find('did you mean "fsdp2"?', 1, true), err)
  end)

  it("suggests presets and enum values", function()
    assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8"))
      :find('unknown model preset; did you mean "llama-3.1-8b"?', 1, true))
    assert.truthy(err_line(apsearch("inspect", "llama-3.1-450b"))
      :find('or a model preset; did you mean "llama-3.1-405b"?', 1, true))
    assert.truthy(err_line(apsearch("run", "--cluster", "h100-sxm-8gb:2"))
      :find('unknown device preset; did you mean "h100-sxm-80gb"?', 1, true))
    -- a short name the tool accepts is suggested too (it was not: "h10O"
    -- got the list of full names only; new-user pass, 2026-12-07)
    for _, c in ipairs({ "h10O", "hh100", "h1000" }) do
      assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", c .. ":1"))
        :find('unknown device preset; did you mean "h100"? ', 1, true), c)
    end
    -- one edit from a short name and two from a preset name: both, the
    -- short ones first (it said "b200" alone; breaker pass, 2026-12-07)
    assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h20O:1"))
      :find('unknown device preset; did you mean "h20" or "h200" or "b200"? ', 1, true))
    -- a cluster spec without its colon: the spec meant
    assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100x8"))
      :find('unknown device preset; did you mean the cluster "h100:1x8" (DEVICE:NODES[xGPUS]: 8 GPUs in one host)? '
        .. '(got "h100x8")', 1, true))
    -- the count first (a new user's "64xh100"): in hosts of the device's size
    assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "64xh100"))
      :find('unknown device preset; did you mean the cluster "h100:8x8" (DEVICE:NODES[xGPUS]: 64 GPUs)? '
        .. '(got "64xh100")', 1, true))
    assert.truthy(err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "6xgb200"))
      :find('did you mean the cluster "gb200:1x6"', 1, true))
    -- no spec that is refused in turn (a breaker's pass: "h100:1x0"); the
    -- device's short name is still what is near
    for _, c in ipairs({ "h100x0", "h100x08", "h100-00" }) do
      local e = err_line(apsearch("run", "--model", "llama-3.1-8b", "--cluster", c))
      assert.is_nil(e:find("did you mean the cluster", 1, true), c)
      assert.truthy(e:find('did you mean "h100"?', 1, true), c)
    end
    assert.truthy(err_line(apsearch("run", "--set", "training.framework=megatorn"))
      :find('did you mean "megatron"?', 1, true))
    assert.truthy(err_line(apsearch("run", "--format", "jsn")):find('did you mean "json"?', 1, true))
    assert.truthy(err_line(apsearch("run", "--objective", "step_tim")):find('did you mean "step_time"?', 1, true))
  end)

  it("generates a completion that lists every option of every subcommand, and a man page", function()
    local dir = tmpdir()
    local cmd = string.format("cd %s && LUA_PATH=%s LUA_CPATH=%s lua5.4 scripts/gen-cli-docs.lua %s",
      q(H.ROOT), q(H.ROOT .. "/lua/?.lua;" .. H.ROOT .. "/lua/?/init.lua;;"),
      q(package.cpath), q(dir))
    assert.is_true(os.execute(cmd))
    local bash, man = read(dir .. "/apsearch.bash"), read(dir .. "/apsearch.1")
    local cli = require "apsearch.cli"
    local specs, names = cli.option_table()
    assert.is_true(#names >= 6)
    for _, name in ipairs(names) do
      local block = bash:match("\n    " .. name:gsub("%p", "%%%0") .. "%)\n(.-);;")
      assert.is_string(block, "no completion for " .. name)
      local opts = cli.option_names(specs[name])
      assert.is_true(#opts > 2)
      for _, o in ipairs(opts) do
        assert.truthy(block:find(" " .. o .. " ", 1, true) or block:find(" " .. o .. "\"", 1, true)
          or block:find("\"" .. o .. " ", 1, true), name .. ": " .. o)
        if o:match("^%-%-") and o ~= "--help" then
          assert.truthy(man:find(o:gsub("%-", "\\-"), 1, true), "man page lacks " .. o)
        end
      end
    end
    assert.truthy(bash:find("complete %-o filenames %-F _apsearch apsearch"))
    assert.truthy(man:find("^%.TH APSEARCH 1"))
    assert.truthy(bash:find("--wide", 1, true))
  end)
end)

describe("outputs", function()
  it("shows the objective's score in the table, JSON and CSV", function()
    -- the built-in memory objective's score is the peak GiB column, the
    -- throughput objective's its own column
    local code, out = apsearch("run", "--quiet", "--top-k", "3", "--objective", "memory")
    assert.are.equal(0, code)
    assert.is_nil(out:find("rank  objective", 1, true))
    assert.truthy(out:find("objective: memory (peak memory in GiB, lower is better: the peak GiB column)", 1, true))
    code, out = apsearch("run", "--quiet", "--top-k", "3", "--objective", "throughput")
    assert.are.equal(0, code)
    assert.truthy(out:find("rank  objective", 1, true))
    assert.truthy(out:find("objective: throughput (tokens/s per GPU, higher is better)", 1, true))
    local _, js = apsearch("run", "--quiet", "--top-k", "3", "--format", "json", "--objective", "composite")
    local r = cjson.decode(js)
    for _, t in ipairs(r.top_k_strategies) do assert.is_number(t.objective_value) end
    assert.is_true(r.top_k_strategies[1].objective_value <= r.top_k_strategies[2].objective_value)
    _, js = apsearch("run", "--quiet", "--top-k", "2", "--format", "json")
    r = cjson.decode(js)
    assert.are.equal(r.top_k_strategies[1].performance_cost.step_time, r.top_k_strategies[1].objective_value)
    local _, csv = apsearch("run", "--quiet", "--top-k", "2", "--format", "csv", "--objective", "pareto")
    local header = csv:match("^[^\n]+")
    local col
    local i = 0
    for name in header:gmatch("[^,]+") do i = i + 1 if name == "objective_value" then col = i end end
    assert.is_number(col)
    local first = csv:match("\n([^\n]+)")
    local cells = {}
    for c in (first .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
    assert.are.equal("1", cells[col])
  end)

  it("says a custom objective's unit and direction, and writes its scores with four digits each", function()
    local dir = tmpdir()
    local obj = H.write(dir .. "/gpuh.lua", [[
      return { name = "gpu_hours", unit = "GPU-h / 1e12 tokens", score = function(e, ctx)
        local t = ctx.training.global_batch_size * ctx.training.seq_length
        return ctx.cluster.num_devices * e.step_time / t * 1e12 / 3600 * 1000 end }
    ]])
    local code, out = apsearch("run", "--quiet", "--top-k", "3", "--objective", obj)
    assert.are.equal(0, code, out)
    assert.truthy(out:find("objective: gpu_hours (GPU-h / 1e12 tokens, lower is better)", 1, true), out)
    -- every score with four significant digits, trailing zeros kept
    for cell in out:gmatch("\n +%d+  (%S+)") do
      assert.truthy(cell:match("^%d%.%d%d%de%+%d%d$") or cell:match("^%d+%.%d+$"), cell)
      local digits = cell:gsub("e.*", ""):gsub("%D", "")
      assert.are.equal(4, #digits:gsub("^0+", ""), cell)
    end
    local _, js = apsearch("run", "--quiet", "--top-k", "1", "--format", "json", "--objective", obj)
    local inp = cjson.decode(js).inputs
    assert.are.same({ "GPU-h / 1e12 tokens", false }, { inp.objective_unit, inp.objective_maximize })
    local _, js2 = apsearch("run", "--quiet", "--top-k", "1", "--format", "json")
    assert.is_nil(cjson.decode(js2).inputs.objective_maximize)
  end)

  it("fits the table in 120 columns, with the wide columns behind --wide", function()
    local function table_width(out)
      local w = 0
      local body = out:match("\n\n(.-)\n\n") or out
      for line in body:gmatch("[^\n]+") do
        if line:match("^ *rank ") or line:match("^ *%-%-%-%-") or line:match("^ +%d+  ") then
          w = math.max(w, #line)
        end
      end
      return w
    end
    for _, p in ipairs({ "examples/qwen25_7b_a100.lua", "examples/llama3_8b_h100.lua" }) do
      local _, out = apsearch("run", p, "--quiet")
      assert.is_true(table_width(out) <= 120, p .. ": " .. table_width(out))
      local _, wide = apsearch("run", p, "--quiet", "--wide")
      assert.truthy(wide:find("top overhead (s)", 1, true))
      assert.truthy(wide:find("step (s)", 1, true))
    end
  end)

  it("labels a launch config that builds another job than the estimated one, in the report, the file and the JSON", function()
    -- TorchTitan's file for an MoE model builds HEAD's dense llama3
    -- (NOT WRITTEN: the MoE model); Megatron's is whole
    local dir = tmpdir() .. "/moe"
    local code = apsearch("run", ROOT .. "/examples/mixtral_8x7b_h100.lua", "--quiet", "--top-k", "1",
      "--out", dir)
    assert.are.equal(0, code)
    local html = read(dir .. "/report.html")
    assert.truthy(html:find(">torchtitan %(differs: %d+%)<"), html:match("torchtitan[^<]*<"))
    assert.truthy(html:find(">megatron<", 1, true))
    assert.falsy(html:find(">megatron (differs", 1, true))
    local tt = read(dir .. "/launch/rank1_torchtitan.py")
    assert.truthy(tt:find("estimate of the ranked job, which this file does not build as estimated (", 1, true))
    assert.falsy(read(dir .. "/launch/rank1_megatron.sh"):find("does not build as estimated", 1, true))
    local rec = require("cjson").decode(read(dir .. "/result.json")).top_k_strategies[1]
    assert.truthy(rec.launch_differs.torchtitan:match("^NOT "), rec.launch_differs.torchtitan)
    assert.is_nil(rec.launch_differs.megatron)
  end)

  it("spells out placeholders in the CSVs", function()
    local dir = tmpdir() .. "/out"
    local code = apsearch("run", "--quiet", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code)
    local cands = read(dir .. "/candidates.csv")
    local header = cands:match("^[^\n]+")
    local cols, i = {}, 0
    for name in header:gmatch("[^,]+") do i = i + 1 cols[name] = i end
    for line in cands:gmatch("\n([^\n]+)") do
      local cells = {}
      for c in (line .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
      assert.are_not.equal("0", cells[cols.micro_batch_num], line)
      assert.are_not.equal("-1", cells[cols.recompute_num_layers], line)
    end
  end)

  it("never writes the placeholders into result.json; top-k splits are the layers each stage ran", function()
    local dir = tmpdir() .. "/out"
    -- pp 4 x vpp 2 of 80 layers with full recompute and a balanced split
    local code = apsearch("run", "examples/llama3_70b_h100.lua", "--quiet", "--top-k", "3", "--out", dir,
      "--set", "search_space.pp_degree=4", "--set", "search_space.vpp_degree=2",
      "--set", "search_space.layer_recompute=full")
    assert.are.equal(0, code)
    local text = read(dir .. "/result.json")
    local r = cjson.decode(text)
    -- every strategy anywhere in the file (top-k, Pareto, examples, trends)
    local seen = 0
    local function walk(v)
      if type(v) ~= "table" then return end
      if v.dp_degree ~= nil and v.layer_recompute ~= nil then
        seen = seen + 1
        assert.are_not.equal(0, v.micro_batch_num)
        local rc = v.recompute_num_layers
        for _, x in ipairs(type(rc) == "table" and rc or { rc }) do assert.are_not.equal(-1, x) end
      end
      for _, x in pairs(v) do walk(x) end
    end
    walk(r)
    assert.is_true(seen > 3)
    assert.are.same({ "derived" }, r.inputs.search_space.micro_batch_num)
    for _, t in ipairs(r.top_k_strategies) do
      -- p x v chunks adding up to the 80 layers; per rank, the stage's layers
      local sum = 0
      for _, n in ipairs(t.stage_partition) do sum = sum + n end
      assert.are.equal(8, #t.stage_partition)
      assert.are.equal(80, sum)
      for i, st in ipairs(t.memory_cost.per_stage) do
        assert.are.equal(st.num_layers, t.stage_partition[i] + t.stage_partition[i + 4])
        -- block recompute: the layers the stage recomputes (at most its layers)
        assert.are.equal(st.recompute_layers, t.recompute_num_layers[i])
        assert.is_true(t.recompute_num_layers[i] <= st.num_layers)
      end
      assert.are.equal(cjson.null, t.layer_offset)
    end
  end)
end)

describe("format.common placeholders", function()
  local common = require "apsearch.format.common"
  it("spells micro_batch_num 0 as B / (b x dp x fsdp), -1 as all, moot fields as nil", function()
    local s = { dp_degree = 2, fsdp_degree = 4, micro_batch_size = 2, micro_batch_num = 0,
      layer_recompute = "full", recompute_num_layers = -1, stage_partition = { 0, 0 }, layer_offset = { 0, 0 } }
    assert.are.equal(8, common.field_value(s, "micro_batch_num", 128)) -- 128 / (2 x 2 x 4)
    assert.are.equal("derived", common.field_value(s, "micro_batch_num", 100)) -- 100 / 16: not whole
    assert.are.equal("derived", common.field_value(s, "micro_batch_num", nil))
    assert.are.equal("all", common.field_value(s, "recompute_num_layers"))
    assert.is_nil(common.field_value(s, "stage_partition"))
    assert.is_nil(common.field_value(s, "layer_offset"))
    s.recompute_num_layers = { -1, 3 }
    assert.are.same({ "all", 3 }, common.field_value(s, "recompute_num_layers"))
    s.layer_recompute = "selective"
    assert.is_nil(common.field_value(s, "recompute_num_layers"))
  end)

  it("resolves a top-k record's split per chunk and its recompute per stage", function()
    local rec = { pp_degree = 2, vpp_degree = 2, pipeline_split = "even", stage_partition = { 0, 0 },
      layer_offset = { 0, 0 }, layer_recompute = "full", recompute_method = "block",
      recompute_num_layers = { -1, 2 },
      memory_cost = { per_stage = { { num_layers = 5, recompute_layers = 5 }, { num_layers = 4, recompute_layers = 2 } } } }
    local lay = common.resolved_layout(rec)
    -- rank 1 holds chunks 1 and 3 (5 layers: 3 + 2), rank 2 chunks 2 and 4 (2 + 2)
    assert.are.same({ 3, 2, 2, 2 }, lay.stage_partition)
    assert.are.same({ 5, 2 }, lay.recompute_num_layers)
    assert.is_nil(common.output_value(rec, "layer_offset", nil, lay))
    rec.recompute_method = "uniform"
    assert.are.same({ 1, 2 }, common.resolved_layout(rec).recompute_num_layers) -- -1 -> groups of 1
    rec.vpp_degree = 1
    assert.are.same({ 5, 4 }, common.resolved_layout(rec).stage_partition)
  end)
end)

-- the estimate's strategy line with the lines it goes on over (folded at
-- 120 columns under its text), joined by spaces
local function strategy_text(out)
  local first, after = out:match("strategy  ([^\n]+)\n(.*)$")
  if not first then return nil end
  local parts = { first }
  for line in after:gmatch("([^\n]*)\n") do
    if not line:match("^          %S") then break end
    parts[#parts + 1] = (line:gsub("^%s+", ""))
  end
  return table.concat(parts, " ")
end

describe("estimate", function()
  it("prints the derived micro-batch count, never micro_batch_num=0", function()
    local code, out = H.apsearch("estimate", "--strategy", "tp_degree=2")
    assert.is_true(code == 0 or code == 1)   -- 1: this strategy is infeasible under fsdp2
    local line = strategy_text(out)
    assert.is_string(line)
    assert.falsy(line:find("micro_batch_num=0", 1, true))
    assert.truthy(line:find("micro_batch_num=%d+"))
  end)

  it("estimates a pipelined strategy with the framework's split, as the search ranked it", function()
    -- TorchTitan (fsdp2) counts the embedding and the loss as a layer each:
    -- Llama-3.1-8B's 32 layers + 2 over pp 4: 34 / 4 = 8 r 2 -> 9, 9, 8,
    -- 8, less one on the first and the last: 8, 9, 8, 7 (space.default_split)
    local cjson = require "cjson"
    local code, out, err = H.apsearch("run", "--quiet", "--format", "json", "--top-k", "1",
      "--set", "search_space.pp_degree=4", "--set", "search_space.tp_degree=2",
      "--set", "search_space.layer_recompute=none", "--set", "search_space.micro_batch_size=1")
    assert.are.equal(0, code, err)
    local top = cjson.decode(out).top_k_strategies[1]
    assert.are.same({ 8, 9, 8, 7 }, top.stage_partition)
    code, out, err = H.apsearch("estimate", "--format", "json", "--strategy",
      "pp_degree=4,tp_degree=2,layer_recompute=none,micro_batch_size=1")
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    assert.are.equal("embedding_loss", est.strategy.pipeline_split)
    local layers = {}
    for i, st in ipairs(est.stages) do layers[i] = st.num_layers end
    assert.are.same({ 8, 9, 8, 7 }, layers)
    assert.is_true(math.abs(est.step_time - top.performance_cost.step_time) <= 1e-9 * est.step_time,
      est.step_time .. " vs " .. top.performance_cost.step_time)
  end)

  it("warns when a dense model's space lists expert dimensions, which it cannot use", function()
    local code, _, err = H.apsearch("run", ROOT .. "/examples/llama3_8b_h100.lua", "--top-k", "1",
      "--set", "search_space.ep_degree=1,2")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("warning: search_space.ep_degree: llama-3.1-8b has no experts; " ..
      "the dimension is ignored", 1, true), err)
    code, _, err = H.apsearch("run", ROOT .. "/examples/mixtral_8x7b_h100.lua", "--top-k", "1",
      "--set", "search_space.ep_degree=1,2")
    assert.are.equal(0, code, err)
    assert.falsy(err:find("has no experts", 1, true), err)
  end)

  it("says which expert parallelism an MoE estimate ran when --strategy leaves it out", function()
    -- Megatron's defaults (space.moe_defaults): EP 1, ETP = TP
    -- (megatron/training/arguments.py:587-588 @ d98e8a64)
    local code, out, err = H.apsearch("estimate", ROOT .. "/examples/mixtral_8x7b_h100.lua",
      "--strategy", "tp_degree=2", "--quiet")
    assert.is_true(code == 0 or code == 1, err)
    local line = strategy_text(out)
    assert.truthy(line:find("ep_degree=1 etp_degree=2", 1, true), line)
    code, out, err = H.apsearch("estimate", ROOT .. "/examples/mixtral_8x7b_h100.lua",
      "--strategy", "tp_degree=2,ep_degree=4", "--quiet")
    assert.is_true(code == 0 or code == 1, err)
    assert.truthy(strategy_text(out):find("ep_degree=4", 1, true))
  end)

  it("runs TorchTitan's reshard_after_forward under PP, as the search ranked it", function()
    -- fsdp2 with pp 4 x tp 2 on 16 GPUs: fsdp 2; PyTorch's pipelining
    -- keeps the parameters unsharded across micro-batches, TorchTitan's
    -- default policy does not reshard (space.default_reshard): false in
    -- both the search's top-1 and the estimate of the same strategy
    local code, out, err = H.apsearch("run", ROOT .. "/examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--top-k", "1", "--cluster", "h100-sxm-80gb:2x8",
      "--set", "search_space.pp_degree=4", "--set", "search_space.tp_degree=2",
      "--set", "search_space.layer_recompute=none", "--set", "search_space.micro_batch_size=1")
    assert.are.equal(0, code, err)
    local top = cjson.decode(out).top_k_strategies[1]
    assert.are.equal(2, top.fsdp_degree)
    assert.are.equal(false, top.reshard_after_forward)
    code, out, err = H.apsearch("estimate", ROOT .. "/examples/llama3_8b_h100.lua", "--format", "json",
      "--cluster", "h100-sxm-80gb:2x8", "--strategy", "pp_degree=4,tp_degree=2,layer_recompute=none,micro_batch_size=1")
    assert.are.equal(0, code, err)
    local st = cjson.decode(out).estimate.strategy
    assert.are.equal(2, st.fsdp_degree)
    assert.are.equal(false, st.reshard_after_forward)
    -- without pipelining FSDP's default, true
    code, out, err = H.apsearch("estimate", ROOT .. "/examples/llama3_8b_h100.lua", "--format", "json",
      "--cluster", "h100-sxm-80gb:2x8", "--strategy", "pp_degree=1,tp_degree=2,layer_recompute=full,micro_batch_size=1")
    assert.is_true(code == 0 or code == 1, err)
    assert.are.equal(true, cjson.decode(out).estimate.strategy.reshard_after_forward)
  end)

  it("writes the estimate's split and recompute as its stages ran them, numbers only", function()
    -- recompute_num_layers -1:2 on pp 2 (16 layers a stage): all 16 of
    -- stage 1, 2 of stage 2 -- not {"all", 2}; the split TorchTitan's
    -- rule gave, not null
    local cjson = require "cjson"
    local code, out, err = H.apsearch("estimate", "--format", "json", "--strategy",
      "pp_degree=2,tp_degree=4,layer_recompute=full,recompute_num_layers=-1:2")
    assert.are.equal(0, code, err)
    local st = cjson.decode(out).estimate.strategy
    assert.are.same({ 16, 2 }, st.recompute_num_layers)
    assert.are.same({ 16, 16 }, st.stage_partition)
    assert.are.equal(cjson.null, st.layer_offset)
    code, out, err = H.apsearch("estimate", "--format", "json", "--strategy", "pp_degree=4,tp_degree=2")
    assert.are.equal(0, code, err)
    st = cjson.decode(out).estimate.strategy
    assert.are.same({ 8, 9, 8, 7 }, st.stage_partition)
    assert.are.equal(cjson.null, st.recompute_num_layers)
  end)

  it("lists each stage's layers one range per model chunk, as the report does", function()
    -- Llama-3.1-8B, pp 4 x vpp 2, TorchTitan's split: 32 + 2 units over 8
    -- chunks, 5 5 4 4 4 4 4 4 less the embedding and the loss: 4 5 4 4 4 4
    -- 4 3 in model order.  Interleaved, rank 1 runs chunks 1 and 5
    -- (layers 0-3, 17-20); on DualPipeV's V chunks 1 and 8 (0-3, 29-31)
    local function stage_lines(sched)
      local code, out, err = H.apsearch("estimate", "--strategy",
        "pp_degree=4,vpp_degree=2,tp_degree=2,pp_schedule=" .. sched)
      assert.are.equal(0, code, err)
      local lines = {}
      for l in out:match("pipeline stages\n(.*)$"):gmatch("[^\n]+") do lines[#lines + 1] = l end
      return lines
    end
    -- stage, n, ..., the layers last
    local il = stage_lines("1f1b")
    assert.truthy(il[3]:match("^%s+1%s+8%s.*%s0%-3, 17%-20$"), il[3])
    assert.truthy(il[6]:match("^%s+4%s+7%s.*%s13%-16, 29%-31$"), il[6])
    local v = stage_lines("dualpipev")
    assert.truthy(v[3]:match("^%s+1%s+7%s.*%s0%-3, 29%-31$"), v[3])
    assert.truthy(v[6]:match("^%s+4%s+8%s.*%s13%-16, 17%-20$"), v[6])
  end)

  it("takes a top-k stage_partition back as --strategy, empty model chunks included", function()
    -- Llama-3.1-405B's 126 layers over pp 16 x vpp 8 = 128 chunks by
    -- Megatron's embedding_loss split: 128 units, one each, the first and
    -- the last chunk giving theirs to the embedding and the loss: 0, 1 x
    -- 126, 0 (src/core/pipeline.c split_rule)
    local cjson = require "cjson"
    local code, out, err = H.apsearch("run", "examples/llama3_405b_h100_16k.lua", "--quiet",
      "--format", "json", "--top-k", "1", "--fix", "pp_degree=16", "--fix", "vpp_degree=8")
    assert.are.equal(0, code, err)
    local top = cjson.decode(out).top_k_strategies[1]
    local sp = top.stage_partition
    assert.are.equal(128, #sp)
    assert.are.equal(0, sp[1])
    assert.are.equal(0, sp[128])
    assert.are.equal(1, sp[64])
    local parts = {}
    for _, f in ipairs({ "dp_degree", "fsdp_degree", "zero_stage", "tp_degree", "sequence_parallel",
      "pp_degree", "vpp_degree", "cp_degree", "cp_comm_type", "micro_batch_size", "micro_batch_num",
      "layer_recompute" }) do
      parts[#parts + 1] = f .. "=" .. tostring(top[f])
    end
    local list = {}
    for i, n in ipairs(sp) do list[i] = tostring(n) end
    parts[#parts + 1] = "stage_partition=" .. table.concat(list, ":")
    code, out, err = H.apsearch("estimate", "examples/llama3_405b_h100_16k.lua", "--format", "json",
      "--strategy", table.concat(parts, ","))
    assert.are.equal(0, code, err)
    local est = cjson.decode(out).estimate
    assert.is_true(math.abs(est.step_time - top.performance_cost.step_time) <= 1e-9 * est.step_time,
      est.step_time .. " vs " .. top.performance_cost.step_time)
    -- a per-chunk split whose chunks past the first pp_degree are all empty
    -- would read as per rank (equal chunks): refused, as is no layer at all
    code, _, err = H.apsearch("estimate", "--strategy",
      "pp_degree=2,vpp_degree=2,tp_degree=4,stage_partition=16:16:0:0")
    assert.are.equal(2, code)
    assert.truthy(err:find("every chunk after the first pp_degree = 2 has 0 layers", 1, true), err)
    code, _, err = H.apsearch("estimate", "--strategy", "pp_degree=2,tp_degree=4,stage_partition=0:0")
    assert.are.equal(2, code)
    assert.truthy(err:find("stage_partition: expected at least one layer", 1, true), err)
  end)
end)

describe("did you mean, in the remaining places", function()
  local H = require "spec_helpers"
  it("suggests --strategy field names", function()
    local code, _, err = H.apsearch("estimate", "--strategy", "tp_degre=2")
    assert.are.equal(2, code)
    assert.truthy(err:find('unknown strategy field; did you mean "tp_degree"?', 1, true), err)
    -- a training field given as a strategy field: where it goes (a breaker's round 13)
    code, _, err = H.apsearch("estimate", "--strategy", "precision=fp8")
    assert.are.equal(2, code)
    assert.truthy(err:find("precision: unknown strategy field; it is a training field: --set " ..
      "training.precision=VALUE", 1, true), err)
  end)
end)

describe("did you mean, a prefix first", function()
  it("suggests the names a typo is the start of before names a few edits away", function()
    local suggest = require "apsearch.suggest"
    assert.are.same({ "h100-96gb-500w", "h100-sxm-80gb" },
      suggest.closest("h100", { "a100-sxm4-80gb", "h100-sxm-80gb", "h100-96gb-500w", "b200" }))
    assert.are.same({ "tp_degree" }, suggest.closest("tp_degre", { "tp_degree", "pp_degree", "cp_degree" }))
  end)
end)

-- a new user's pass on 2026-12-05: what it found, each fixed
describe("a new user's findings", function()
  it("prints a config's control characters escaped, never raw (a terminal would run them)", function()
    local dir = tmpdir()
    local cfg = cjson.decode(read(ROOT .. "/examples/models/llama-3.1-8b.json"))
    cfg.model_type = "llama\27[2J\27[31mEVIL\nline2"
    local path = dir .. "/x.json"
    local f = assert(io.open(path, "w")); f:write(cjson.encode(cfg)); f:close()
    local code, _, err = apsearch("inspect", path)
    assert.are.equal(0, code, err)
    assert.is_nil(err:find("\27", 1, true), err)
    assert.truthy(err:find("model_type llama\\27[2J\\27[31mEVIL\\10line2 read as llama", 1, true), err)
  end)

  it("refuses a Llama config whose hidden_act is not SwiGLU's silu (LlamaMLP applies it to the gate)", function()
    local dir = tmpdir()
    local cfg = cjson.decode(read(ROOT .. "/examples/models/llama-3.1-8b.json"))
    cfg.hidden_act = "gelu"
    local path = dir .. "/gelu.json"
    local f = assert(io.open(path, "w")); f:write(cjson.encode(cfg)); f:close()
    local err = err_line(apsearch("inspect", path))
    assert.truthy(err:find('gelu.json: hidden_act: expected "silu" (the gated MLP is priced as SwiGLU', 1, true),
      err)
  end)

  it("refuses two ways of saying the pipeline split in --strategy as bad input (exit 2)", function()
    local err = err_line(apsearch("estimate", "-q", "--strategy",
      "pp_degree=2,layer_offset=balanced,stage_partition=16:16"))
    assert.truthy(err:find("stage_partition and layer_offset both given: give one of them", 1, true), err)
  end)

  it("recomputes every layer for --fix layer_recompute=full (auto could resolve to none)", function()
    local code, out, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--fix",
      "layer_recompute=full", "--top-k", "2", "--jobs", "1", "--format", "json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("recompute_num_layers = {-1}", 1, true), err)
    local r = cjson.decode(out)
    for _, rec in ipairs(r.top_k_strategies) do
      assert.are.equal("full", rec.layer_recompute)
      for _, st in ipairs(rec.memory_cost.per_stage) do assert.are.equal(st.num_layers, st.recompute_layers) end
    end
  end)

  it("labels a full-recompute candidate that recomputes no layer with the training's graph scope", function()
    -- auto recompute that recomputes nothing runs and is priced as no
    -- recompute; its record said full_iteration with the pool caveat
    -- (a breaker, 2026-12-07)
    local code, out, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "training.cuda_graphs=true", "--fix", "tp_degree=1", "--fix", "pp_degree=1", "--top-k", "1", "--jobs", "1",
      "--format", "json")
    assert.are.equal(0, code, err)
    local rec = cjson.decode(out).top_k_strategies[1]
    assert.are.equal("none", rec.layer_recompute)
    assert.are.equal("layer", rec.performance_cost.cuda_graph_scope)
    assert.is_nil((rec.memory_cost.total_interval or {}).caveats)
    assert.is_nil(require("apsearch.format.common").full_graph_note(cjson.decode(out)))
  end)

  it("says when Megatron-Core's CPU offloading turns the graphs into one of the whole iteration", function()
    local code, out, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "training.cuda_graphs=true", "--set", "training.activation_offload_layers=4", "--fix", "tp_degree=1",
      "--fix", "pp_degree=1", "--top-k", "1", "--jobs", "1", "--format", "json")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.are.equal("full_iteration", r.top_k_strategies[1].performance_cost.cuda_graph_scope)
    local common = require "apsearch.format.common"
    local note = common.full_graph_note(r)
    assert.truthy(note:find("^every rank: CUDA graphs of the whole iteration %(Megatron%-Core captures"), note)
    assert.truthy(note:find("cuda_graph_scope layer was asked", 1, true), note)
    assert.truthy(note:find("ran out of memory estimated at 50-90 % of the limit", 1, true), note)
    -- the memory interval carries it too (intervals.FULL_GRAPH_CAVEAT)
    local mi = r.top_k_strategies[1].memory_cost.total_interval
    assert.are.same({ require("apsearch.intervals").FULL_GRAPH_CAVEAT }, mi.caveats)
    -- asked for: no "switched" part
    r.inputs.training.cuda_graph_scope = "full_iteration"
    assert.is_nil(common.full_graph_note(r):find("was asked", 1, true))
    r.top_k_strategies[1].performance_cost.cuda_graph_scope = "layer"
    assert.is_nil(common.full_graph_note(r))
  end)

  it("names on the terminal the ranks whose launch files build another job (they were only in the files)", function()
    local dir = tmpdir()
    local code, _, err = apsearch("run", "--model", "gemma-4-31b-it-nvfp4", "--cluster", "h100-sxm-80gb:4",
      "--top-k", "2", "--jobs", "1", "--out", dir .. "/o")
    assert.are.equal(0, code, err)
    local r = cjson.decode(read(dir .. "/o/result.json"))
    -- Megatron-LM has no Gemma 4 (its file is NOT WRITTEN), so every rank's differs
    assert.truthy(r.top_k_strategies[1].launch_differs.megatron, err)
    assert.truthy(err:find("launch files that build another job than the one estimated", 1, true), err)
    assert.truthy(err:find("ranks 1-2: automodel, megatron, mindformers, torchtitan", 1, true)
      or err:find("rank 1: automodel, megatron, mindformers, torchtitan; rank 2:", 1, true), err)
    local cli = require "apsearch.cli"
    assert.is_nil(cli.launch_differs_note({ top_k_strategies = { { rank = 1 } } }))
    -- consecutive ranks with the same engines are one run
    local ab, c = { a = "x", b = "y" }, { c = "z" }
    assert.truthy(cli.launch_differs_note({ top_k_strategies = { { rank = 1, launch_differs = ab },
      { rank = 2, launch_differs = ab }, { rank = 3, launch_differs = ab }, { rank = 4, launch_differs = c },
      { rank = 5 }, { rank = 6, launch_differs = ab } } }):find(": ranks 1-3: a, b; rank 4: c; rank 6: a, b", 1, true))
    -- every rank differing on every engine: said first, with rank 1's
    -- difference for the policy's framework (a DeepSeek-V4 run read
    -- "defaults: megatron" and ranked jobs no engine builds)
    local all = { megatron = "NOT WRITTEN: m", torchtitan = "NOT WRITTEN: t", mindformers = "x", automodel = "y" }
    local r = { inputs = { training = { framework = "fsdp2" } },
      top_k_strategies = { { rank = 1, launch_differs = all }, { rank = 2, launch_differs = all } } }
    -- (a second note line, rank 1's difference last: it may be long)
    assert.truthy(cli.launch_differs_note(r):find("estimated)\napsearch: note: no engine apsearch writes runs any " ..
      "ranked job as estimated: the ranking is the estimate's, not a job you can launch as it is; rank 1, " ..
      "torchtitan: NOT WRITTEN: t", 1, true))
    r.top_k_strategies[2].launch_differs = ab
    assert.are.equal("", cli.no_engine_note(r))
  end)

  it("prints a preset's import notes as its config file's path does", function()
    local _, _, err = apsearch("run", "--model", "gpt-oss-120b", "--cluster", "h100-sxm-80gb:2x8", "--top-k", "1",
      "--jobs", "1", "--fix", "pp_degree=1")
    assert.truthy(err:find("gpt-oss-120b.json: attention sinks", 1, true), err)
  end)

  it("points a preset given where the policy goes to --model", function()
    local err = err_line(apsearch("run", "llama-3.1-8b"))
    assert.truthy(err:find("llama-3.1-8b is a model preset: give --model llama-3.1-8b --cluster DEVICE:NODES", 1,
      true), err)
  end)

  it("heads a policy whose sequence --set changed with the user's sequence, not the recipes'", function()
    local code, out, err = apsearch("init", "deepseek-v3", "b200:32", "--set", "training.seq_length=8192")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("-- defaults: megatron, bf16, adamw, seq 8192 (--set; moe recipes: 4096)", 1, true), out)
    assert.truthy(out:find("seq_length = 8192", 1, true), out)
  end)

  it("leaves no lock file behind an --out that cannot make its set directory", function()
    local dir = tmpdir()
    local name = dir .. "/" .. string.rep("a", 230)
    local code = apsearch("run", "--top-k", "1", "--jobs", "1", "-q", "--out", name)
    assert.are.equal(2, code)
    local left = {}
    for f in require("lfs").dir(dir) do if f ~= "." and f ~= ".." then left[#left + 1] = f end end
    assert.are.same({}, left)
  end)

  it("names the memory margin as the user wrote it (gib) beside the core's field", function()
    local err = err_line(apsearch("run", "-q", "--set", "training.memory_margin_gib=100"))
    assert.truthy(err:find("--set: training.memory_margin_gib: 100.00 GiB leaves no memory", 1, true), err)
  end)

  it("says a readable --echarts file is not ECharts rather than unreadable", function()
    local dir = tmpdir()
    local f = assert(io.open(dir .. "/bad.js", "w")); f:write("garbage\n"); f:close()
    local err = err_line(apsearch("run", "--top-k", "1", "--jobs", "1", "-q", "--out", dir .. "/o",
      "--echarts", dir .. "/bad.js"))
    assert.truthy(err:find("--echarts: echarts: 8 bytes read, not the ECharts script", 1, true), err)
    -- a readable file of the size but not ECharts (no "echarts" in it)
    local g = assert(io.open(dir .. "/big.js", "w")); g:write(string.rep("x", 5000)); g:close()
    err = err_line(apsearch("run", "--top-k", "1", "--jobs", "1", "-q", "--out", dir .. "/o",
      "--echarts", dir .. "/big.js"))
    assert.truthy(err:find("5000 bytes read, not the ECharts script", 1, true), err)
    err = err_line(apsearch("run", "--top-k", "1", "--jobs", "1", "-q", "--out", dir .. "/o",
      "--echarts", dir .. "/none.js"))
    assert.truthy(err:find("cannot read the ECharts script: No such file or directory", 1, true), err)
  end)

  -- a breaker's pass over the fixes above
  it("recomputes every layer for layer_recompute=full given alone: estimate, and run of a policy with auto", function()
    local code, out, err = apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:8",
      "--strategy", "pp_degree=2,tp_degree=4,layer_recompute=full", "--format", "json")
    assert.are.equal(0, code, err)
    local e = cjson.decode(out).estimate
    for _, st in ipairs(e.stages) do assert.are.equal(st.num_layers, st.recompute_layers) end
    local dir = tmpdir()
    local pol = dir .. "/p8.lua"
    local c2, text = apsearch("init", "llama-3.1-8b", "h100-sxm-80gb:8")
    assert.are.equal(0, c2)
    assert.truthy(text:find('recompute_num_layers = { "auto" }', 1, true), text)
    local f = assert(io.open(pol, "w")); f:write(text); f:close()
    local c3, csv = apsearch("run", "-q", "--jobs", "1", "-k", "1", pol, "--fix", "layer_recompute=full", "--fix",
      "tp_degree=4", "--fix", "pp_degree=2", "--format", "csv")
    assert.are.equal(0, c3, csv)
    assert.truthy(csv:find(",full,,block,16;16,", 1, true), csv)
  end)

  it("keeps a number of recomputed layers given beside --fix layer_recompute=full, and says when it sets -1", function()
    local base = { "run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--jobs", "1", "-k", "1",
      "--fix", "tp_degree=2", "--fix", "pp_degree=2", "--format", "json" }
    local function top(...)
      local args = { table.unpack(base) }
      for _, a in ipairs({ ... }) do args[#args + 1] = a end
      local code, out, err = apsearch(table.unpack(args))
      assert.are.equal(0, code, err)
      return cjson.decode(out).top_k_strategies[1], err
    end
    local kept, err1 = top("--set", "search_space.recompute_num_layers=2", "--fix", "layer_recompute=full")
    assert.are.same({ 2, 2 }, kept.recompute_num_layers)
    assert.is_nil(err1:find("recomputes every layer", 1, true), err1)
    local all, err2 = top("--fix", "layer_recompute=full")
    assert.are.same({ 16, 16 }, all.recompute_num_layers)
    assert.truthy(err2:find("note: --fix layer_recompute=full recomputes every layer", 1, true), err2)
  end)

  it("escapes bidi controls and bytes that are not UTF-8 in every one-line error", function()
    local err = err_line(apsearch("run", "x\u{202E}y.lua"))
    assert.truthy(err:find("x\\u{202E}y.lua: cannot open policy file", 1, true), err)
    err = err_line(apsearch("run", "a\255\254b.lua"))
    assert.truthy(err:find("a\\255\\254b.lua: cannot open policy file", 1, true), err)
  end)

  it("reads a Llama config's hidden_act swish as the silu it is (transformers' ACT2CLS)", function()
    local dir = tmpdir()
    local cfg = cjson.decode(read(ROOT .. "/examples/models/llama-3.1-8b.json"))
    cfg.hidden_act = "swish"
    local path = dir .. "/swish.json"
    local f = assert(io.open(path, "w")); f:write(cjson.encode(cfg)); f:close()
    local code, _, err = apsearch("inspect", "-q", path)
    assert.are.equal(0, code, err)
  end)

  it("names a device preset given where the policy goes", function()
    local err = err_line(apsearch("estimate", "h20-96gb"))
    assert.truthy(err:find("h20-96gb is a device preset: give --model MODEL --cluster h20-96gb:NODES", 1, true), err)
  end)

  it("escapes the Unicode bidirectional controls a config string could carry", function()
    local util = require "apsearch.util"
    assert.are.equal("a\\u{202E}b\\u{2069}c", util.printable("a\u{202E}b\u{2069}c"))
  end)

  it("heads a built policy whose precision --set changed with the user's value", function()
    local code, out = apsearch("init", "qwen3-30b-a3b", "b200:1x8", "--set", "training.precision=mxfp8")
    assert.are.equal(0, code)
    assert.truthy(out:find("-- defaults: megatron, mxfp8 (--set), adamw, seq 4096 (moe recipes)", 1, true), out)
    assert.is_nil(out:find("as --set", 1, true), out)
  end)

  it("refuses a unit-suffixed amount past the core's bound in the unit written", function()
    local err = err_line(apsearch("run", "-q", "--set", "training.memory_margin_gib=1e30"))
    assert.truthy(err:find("training.memory_margin_gib: too large: above 1e+30 in the base unit", 1, true), err)
  end)

  it("says the Megatron-only settings a TorchTitan release file cannot build (launchable ranks none)", function()
    local code, out, err = apsearch("run", "--jobs", "1", "-k", "1", "--model", "llama-3.1-8b", "--cluster", "b200:1",
      "--set", "training.precision=fp8", "--set", "training.first_last_layers_bf16=true", "--torchtitan-version",
      "v0.2.2", "--launchable", "torchtitan")
    assert.are.equal(1, code, err)
    assert.truthy(out:find("NOT EXPRESSIBLE in TorchTitan v0.2.2: Megatron's first and last layers in bf16", 1, true),
      out)
  end)

  it("names a row's cutedsl_fused_grouped_mlp column when the core refuses its precision", function()
    local validate = require "apsearch.validate"
    local c = validate.column_error({ cutedsl_fused_grouped_mlp = "true" },
      "training.cutedsl_fused_grouped_mlp with precision bf16: TransformerEngine fuses ...")
    assert.are.equal('cutedsl_fused_grouped_mlp = "true" with precision bf16: TransformerEngine fuses ...', c)
  end)

  it("refuses a list with an empty entry in --set / --fix (1,,2 was read as {1, 2})", function()
    local err = err_line(apsearch("run", "-q", "--set", "search_space.tp_degree=1,,2"))
    assert.truthy(err:find('--set: search_space.tp_degree: an empty entry in the list (got "1,,2")', 1, true), err)
    err = err_line(apsearch("run", "-q", "--fix", "tp_degree=,2"))
    assert.truthy(err:find("--fix: tp_degree: an empty entry in the list", 1, true), err)
  end)

  it("refuses pinned expert degrees that divide none of the experts, naming the divisors (exit 2)", function()
    -- every candidate failed EP_DIVISIBILITY or an earlier check: "no
    -- feasible strategy" with advice about interleaving (newuser, 2026-12-07)
    local err = err_line(apsearch("run", "-q", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:1",
      "--fix", "ep=3,5"))
    assert.truthy(err:find("^apsearch: %-%-fix: search_space%.ep_degree = 3,5: divides none of the model's 128 " ..
      "experts"), err)
    assert.truthy(err:find("the divisors are 1, 2, 4, 8, 16, 32, 64, 128\n$"), err)
    -- one value that divides: searched, the others filtered as before
    local code, _, e2 = apsearch("run", "-q", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:1",
      "--fix", "ep=3,8", "--top-k", "1", "--jobs", "1")
    assert.are.equal(0, code, e2)
    local space = require "apsearch.space"
    assert.is_nil(space.ep_refusal({ ep_degree = { 3 } }, 0))
    assert.is_nil(space.ep_refusal({}, 128))
  end)

  it("says which settings --torchtitan-version changes in the estimate", function()
    local code, _, err = apsearch("run", "--torchtitan-version", "v0.2.2", "--set", "training.framework=fsdp2",
      "--top-k", "1", "--jobs", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("--torchtitan-version v0.2.2: estimated as that release runs, training.fuse_qkv = false, " ..
      "training.loss_chunks = 1", 1, true), err)
  end)
end)
