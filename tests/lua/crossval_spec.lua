-- tests/lua/crossval_spec.lua -- leave-one-source-out cross-validation
-- (lua/apsearch/crossval.lua, `apsearch validate --cv source`): the folds
-- on hand-made rows, and the out-of-sample predictions on the small
-- fixture recomputed from a fit that never saw the held-out source.

local crossval = require "apsearch.crossval"
local validate = require "apsearch.validate"
local calibrate = require "apsearch.calibrate"

local ROOT = os.getenv("APS_ROOT") or "."
local FIXTURE = ROOT .. "/tests/fixtures/cases_small.csv"

describe("crossval folds", function()
  it("holds out each source once, the others train, in order of first appearance", function()
    local rows = {
      { case_id = "a1", source = "NVIDIA/NeMo docs (24.07)" },
      { case_id = "b1", source = "mosaicml/llm-foundry README" },
      { case_id = "a2", source = "NVIDIA/NeMo docs (25.04)" },
      { case_id = "c1", source = "" },
    }
    local folds = crossval.folds(rows, "source")
    assert.are.equal(3, #folds)
    local function ids(list)
      local out = {}
      for i, r in ipairs(list) do out[i] = r.case_id end
      return table.concat(out, ",")
    end
    assert.are.equal("NVIDIA/NeMo", folds[1].group)
    assert.are.equal("a1,a2", ids(folds[1].test))
    assert.are.equal("b1,c1", ids(folds[1].train))
    assert.are.equal("mosaicml/llm-foundry", folds[2].group)
    assert.are.equal("a1,a2,c1", ids(folds[2].train))
    assert.are.equal("?", folds[3].group) -- no source
    assert.are.equal("c1", ids(folds[3].test))
  end)
end)

describe("crossval on tests/fixtures/cases_small.csv", function()
  local res, rows
  setup(function()
    res = crossval.run(FIXTURE)
    rows = validate.load(FIXTURE)
  end)

  it("fits the folds on worker processes to the same result, number for number", function()
    -- each fold's fit runs in a forked worker and comes back serialized
    -- (apsearch.parallel, floats in hexadecimal): nothing may change
    local par = crossval.run(FIXTURE, { jobs = 2 })
    assert.are.same(res.folds, par.folds)
    assert.are.same(res.out_of_sample, par.out_of_sample)
    assert.are.equal(#res.cases, #par.cases)
    for i, c in ipairs(res.cases) do
      assert.are.same({ c.case_id, c.predicted, c.error }, { par.cases[i].case_id, par.cases[i].predicted,
        par.cases[i].error })
    end
  end)

  it("fits more folds than one worker run takes, in runs of that many", function()
    -- parallel.max_tasks tasks a run (4096): a file of more sources ran
    -- into its assert (breaker, 2026-12-06); here 2 a run for 3 folds
    local parallel = require "apsearch.parallel"
    local keep = parallel.max_tasks
    parallel.max_tasks = 2
    local fit = function(rows, label) return { devices = {}, training = {}, name = label, n = #rows } end
    local ok, par = pcall(crossval.run, FIXTURE, { jobs = 2, fit = fit })
    parallel.max_tasks = keep
    assert.is_true(ok, tostring(par))
    local one = crossval.run(FIXTURE, { jobs = 1, fit = fit })
    assert.are.equal(3, #par.folds)
    assert.are.same(one.folds, par.folds)
  end)

  it("compares a run measured in step time only, as validate does", function()
    -- (new user, 2026-12-06: such rows were predicted and never compared)
    -- the fixture with each row's tokens/s written as its step time
    local H = require "spec_helpers"
    local lines = {}
    for line in (H.read(FIXTURE)):gmatch("[^\n]+") do lines[#lines + 1] = line end
    local csvread = require "apsearch.csvread"
    local records = csvread.parse(table.concat(lines, "\n") .. "\n", FIXTURE)
    local head = records[1]
    local col = {}
    for i, name in ipairs(head) do col[name] = i end
    local out = { table.concat(head, ",") }
    for r = 2, #records do
      local f = records[r]
      local tps = tonumber(f[col.measured_tokens_per_s_per_gpu])
      if tps then
        f[col.measured_step_time_s] = string.format("%.17g", tonumber(f[col.global_batch_size]) *
          tonumber(f[col.seq_length]) / (tps * tonumber(f[col.num_devices])))
        f[col.measured_tokens_per_s_per_gpu] = ""
      end
      for i = 1, #head do
        local v = f[i] or ""
        if v:find('[,"\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
        f[i] = v
      end
      out[#out + 1] = table.concat(f, ",", 1, #head)
    end
    local path = H.tmpdir() .. "/steps.csv"
    H.write(path, table.concat(out, "\n") .. "\n")
    local steps = crossval.run(path)
    assert.are.equal(res.out_of_sample.count, steps.out_of_sample.count)
    assert.is_true(steps.out_of_sample.count > 0)
    assert.is_true(math.abs(res.out_of_sample.mape_pct - steps.out_of_sample.mape_pct) < 1e-6 * res.out_of_sample.mape_pct)
  end)

  it("predicts every row once, with its fold's group", function()
    assert.are.equal(#rows, #res.cases)
    assert.are.equal(3, #res.folds)
    local by = {}
    for _, c in ipairs(res.cases) do by[c.case_id] = c.group end
    assert.are.equal("Narayanan", by.c016)
    assert.are.equal("mosaicml/llm-foundry", by.c213)
  end)

  it("predicts a held-out row with a fit on the other sources only, and priors for what it cannot fit", function()
    local others = {}
    for _, r in ipairs(rows) do
      if validate.source_key(r.source) ~= "Narayanan" then others[#others + 1] = r end
    end
    local calib = calibrate.fit_rows(others, "test", { skip_unestimated = true })
    -- the other sources ran flash attention only: c016's unfused attention
    -- takes the fold's A100 flash value, not the preset's (fitted on all rows)
    local a100 = calib.devices["a100-sxm4-80gb"]
    assert.is_nil(a100.unfused_attention_efficiency)
    a100.unfused_attention_efficiency = a100.attention_efficiency
    local c016
    for _, r in ipairs(rows) do if r.case_id == "c016" then c016 = r end end
    local want = validate.run_case(c016, calib).predicted.tokens_per_s_per_gpu
    local got
    for _, c in ipairs(res.cases) do if c.case_id == "c016" then got = c.predicted.tokens_per_s_per_gpu end end
    assert.are.equal(want, got)
    assert.are.equal(a100.attention_efficiency,
      res.folds[1].priors["a100-sxm4-80gb"].unfused_attention_efficiency.value)
    -- and it differs from the in-sample prediction with the defaults
    assert.are_not.equal(validate.run_case(c016).predicted.tokens_per_s_per_gpu, got)
  end)

  it("names a device no other source has runs of, and the fields left at the preset", function()
    local foundry
    for _, f in ipairs(res.folds) do if f.group == "mosaicml/llm-foundry" then foundry = f end end
    -- the only other H100 row (c901, nvfp4) cannot be estimated
    assert.are.same({ "h100-sxm-80gb", "tpu-v5p" }, foundry.unfitted_devices)
    -- no run of the fold used flash attention: H100's is the published
    -- FlashAttention-2 utilisation; its GEMM fields stay at the preset
    local c213
    for _, c in ipairs(res.cases) do if c.case_id == "c213" then c213 = c end end
    local row
    for _, r in ipairs(rows) do if r.case_id == "c213" then row = r end end
    local prior = { devices = { ["h100-sxm-80gb"] = { attention_efficiency = 0.35 } } }
    assert.are.equal(validate.run_case(row, prior).predicted.tokens_per_s_per_gpu,
      c213.predicted.tokens_per_s_per_gpu)
    local left = {}
    for _, f in ipairs(foundry.unfitted_fields) do left[f] = true end
    assert.is_true(left["h100-sxm-80gb.gemm_efficiency"])
    assert.is_true(left["tpu-v5p.attention_efficiency"]) -- no published figure for it
    assert.is_nil(left["h100-sxm-80gb.attention_efficiency"])
    assert.is_nil(left["a100-sxm4-80gb.gemm_efficiency"]) -- fitted on c016
  end)

  it("summarises in- and out-of-sample errors over the rows compared in both", function()
    assert.are.equal(3, res.out_of_sample.count)
    assert.are.equal(3, res.in_sample.count)
    local sum = 0
    for _, c in ipairs(res.cases) do
      local e = c.error_pct and c.error_pct.tokens_per_s_per_gpu
      if e then sum = sum + math.abs(e) end
    end
    assert.is_true(math.abs(res.out_of_sample.mape_pct - sum / 3) < 1e-12)
  end)
end)

describe("crossval priors", function()
  local U = crossval.FLASH_UTILIZATION
  it("transfers another generation's flash fit by the published FlashAttention-2 ratio", function()
    local calib = { devices = { ["h100-sxm-80gb"] = { attention_efficiency = 0.2, gemm_efficiency = 0.6 } } }
    local rows = { { device = "A100-SXM4-80GB", flash_attention = "true", precision = "bf16" } }
    local out, used, unfitted = crossval.priors(calib, rows)
    -- 0.2 x 0.615 / 0.35 = 0.35143
    local want = 0.2 * ((0.50 + 0.73) / 2) / 0.35
    assert.is_true(math.abs(out.devices["a100-sxm4-80gb"].attention_efficiency - want) < 1e-12)
    -- no held-out run without flash attention: no unfused prior
    assert.is_nil(out.devices["a100-sxm4-80gb"].unfused_attention_efficiency)
    assert.truthy(used["a100-sxm4-80gb"].attention_efficiency.rule:find("hopper", 1, true))
    -- the A100's GEMMs have no fit and no prior: named (gemm_half_dim is
    -- never fitted to runs: calibration.FIELDS)
    assert.are.same({ "a100-sxm4-80gb.gemm_efficiency" }, unfitted)
    -- the fold's calibration is not modified
    assert.is_nil(calib.devices["a100-sxm4-80gb"])
    assert.are.equal(0.615, U.ampere)
  end)

  it("keeps what the fold fitted, and prices unfused attention at the family's flash value", function()
    local calib = { devices = { ["a100-sxm4-80gb"] = { attention_efficiency = 0.3, gemm_efficiency = 0.8,
      gemm_half_dim = 100 } } }
    local rows = { { device = "a100-sxm4-80gb", flash_attention = "false", precision = "fp16" } }
    local out, used, unfitted = crossval.priors(calib, rows)
    assert.are.equal(0.3, out.devices["a100-sxm4-80gb"].attention_efficiency)
    assert.are.equal(0.3, out.devices["a100-sxm4-80gb"].unfused_attention_efficiency)
    assert.is_nil(used["a100-sxm4-80gb"].attention_efficiency)
    assert.are.same({}, unfitted)
  end)

  it("names an fp8 field a held-out fp8 run needs and the fold could not fit", function()
    local calib = { devices = { ["h100-sxm-80gb"] = { attention_efficiency = 0.2, gemm_efficiency = 0.6,
      gemm_half_dim = 500 } } }
    local _, _, unfitted = crossval.priors(calib,
      { { device = "h100-96gb-500w", flash_attention = "true", precision = "fp8" } })
    assert.are.same({ "h100-96gb-500w.fp8_gemm_efficiency" }, unfitted)
  end)
end)

describe("calibration families", function()
  local calibration = require "apsearch.calibration"
  it("groups devices by tensor cores: Hopper parts together, Blackwell Ultra apart", function()
    assert.are.equal("hopper", calibration.family("h100-sxm-80gb"))
    assert.are.equal("hopper", calibration.family("H100-96GB-500W"))
    assert.are.equal("hopper", calibration.family("h200-sxm-141gb"))
    assert.are.equal("blackwell", calibration.family("gb200"))
    assert.are.equal("blackwell", calibration.family("b200"))
    assert.are.equal("blackwell-ultra", calibration.family("gb300"))
    assert.are.equal("my-gpu", calibration.family("My-GPU")) -- its own family
  end)
  it("gives a device without an entry its family's fitted fields, and nothing across families", function()
    local calib = { devices = { ["h100-sxm-80gb"] = { gemm_efficiency = 0.66 } } }
    assert.are.equal(0.66, calibration.fields_for(calib, "h100-96gb-500w").gemm_efficiency)
    assert.are.equal(0.66, calibration.fields_for(calib, "h100-sxm-80gb").gemm_efficiency)
    assert.is_nil(calibration.fields_for(calib, "a100-sxm4-80gb"))
    assert.is_nil(calibration.fields_for(calib, "gb200"))
    local cluster = calibration.apply({ device = "h100-96gb-500w" }, calib)
    assert.are.equal(0.66, cluster.device.gemm_efficiency)
    assert.are.equal("h100-96gb-500w", cluster.device.base)
  end)

  it("gives unfused attention the file's flash value when the file has none, as a fold's prior does", function()
    -- fitted on flash runs only: the H100 preset's unfused value (0.194,
    -- src/core/presets.c APS_ATTN_EFF_HOPPER) would stay beside a fitted
    -- flash 0.278, which the --cv folds (crossval.priors) do not do
    local calib = { devices = { ["h100-sxm-80gb"] = { attention_efficiency = 0.278 } } }
    local cluster = calibration.apply({ device = "h100-sxm-80gb" }, calib)
    assert.are.equal(0.278, cluster.device.unfused_attention_efficiency)
    local fold = crossval.priors(calib, { { device = "h100-sxm-80gb", flash_attention = "false" } })
    assert.are.equal(fold.devices["h100-sxm-80gb"].unfused_attention_efficiency,
      cluster.device.unfused_attention_efficiency)
    -- the device table's own value and a fitted one are kept
    cluster = calibration.apply({ device = { base = "h100-sxm-80gb", unfused_attention_efficiency = 0.2 } }, calib)
    assert.are.equal(0.2, cluster.device.unfused_attention_efficiency)
    calib.devices["h100-sxm-80gb"].unfused_attention_efficiency = 0.15
    assert.are.equal(0.15, calibration.apply({ device = "h100-sxm-80gb" }, calib).device.unfused_attention_efficiency)
  end)
end)

describe("calibrate ties efficiencies per family", function()
  it("fits one value per (family, field): an H100 and an H200 row share theirs", function()
    local validate = require "apsearch.validate"
    local calibrate = require "apsearch.calibrate"
    local rows = validate.load(FIXTURE)
    local h100
    for _, r in ipairs(rows) do if r.case_id == "c213" then h100 = r end end
    local h200 = {}
    for k, v in pairs(h100) do h200[k] = v end
    h200.case_id, h200.device = "c213-h200", "h200-sxm-141gb"
    h200.measured_tokens_per_s_per_gpu = tostring(tonumber(h100.measured_tokens_per_s_per_gpu) * 1.1)
    local old = calibrate.RESTARTS
    calibrate.RESTARTS = 1
    local calib = calibrate.fit_rows({ h100, h200 }, "two rows")
    calibrate.RESTARTS = old
    local a, b = calib.devices["h100-sxm-80gb"], calib.devices["h200-sxm-141gb"]
    assert.is_table(a)
    for _, f in ipairs({ "gemm_efficiency", "gemm_half_dim", "attention_efficiency" }) do
      assert.are.equal(a[f], b[f])
    end
    -- and the fit moved them: the two rows disagree by 10 %, the defaults fit neither exactly
    assert.is_true(calib.loss_after <= calib.loss_before)
  end)
end)

describe("crossval with a release-gap run (tests/fixtures/moe/cases_moe.csv)", function()
  it("fits no fold on the marked run, still predicts it, and reports the figures without it", function()
    local seen = {}
    local res = crossval.run(ROOT .. "/tests/fixtures/moe/cases_moe.csv", {
      fit = function(rows)
        for _, r in ipairs(rows) do seen[r.case_id] = true end
        return nil
      end })
    assert.is_nil(seen.mp003)          -- dgxc 25.08 DeepSeek-V3 on GB200
    assert.is_true(seen.mp002 and seen.mp014)
    local predicted = false
    for _, c in ipairs(res.cases) do predicted = predicted or (c.case_id == "mp003" and c.predicted ~= nil) end
    assert.is_true(predicted)
    assert.are.same({ "mp003" }, res.release_gap_cases)
    assert.are.equal(res.out_of_sample.count - 1, res.out_of_sample_without_release_gaps.count)
  end)
end)

describe("calibrate with a release-gap run (tests/fixtures/moe/cases_moe.csv)", function()
  it("skips it, as the cross-validation folds do, and says so", function()
    local lines = {}
    local calib = calibrate.fit(ROOT .. "/tests/fixtures/moe/cases_moe.csv",
      { log = function(line) lines[#lines + 1] = line end })
    -- mp003 (dgxc 25.08, i.e. NeMo 25.04, DeepSeek-V3 on GB200) is a
    -- release gap: 3 of 4 rows
    assert.are.equal(3, calib.rows)
    assert.truthy(table.concat(lines, "\n"):find("calibrate: skipping mp003: release gap, DeepSeek-V3 on GB200 "
      .. "in NeMo 25.04 (dgxc-benchmarking 25.08)", 1, true), table.concat(lines, "\n"))
  end)
end)

describe("calibrate fits each attention path from the runs that use it", function()
  it("fits unfused attention from a run without flash attention, and no flash value", function()
    local rows = validate.load(FIXTURE)
    local c016
    for _, r in ipairs(rows) do if r.case_id == "c016" then c016 = r end end
    local old, oldi = calibrate.RESTARTS, calibrate.ITERATIONS
    calibrate.RESTARTS, calibrate.ITERATIONS = 1, 20
    local calib = calibrate.fit_rows({ c016 }, "one unfused run")
    calibrate.RESTARTS, calibrate.ITERATIONS = old, oldi
    local a100 = calib.devices["a100-sxm4-80gb"]
    assert.is_number(a100.unfused_attention_efficiency)
    assert.is_nil(a100.attention_efficiency)
    assert.is_nil(a100.fp8_gemm_efficiency)
    local calibration = require "apsearch.calibration"
    assert.are.equal("fp16", c016.precision)
    assert.are.same({ unfused = true, bf16 = true }, calibration.evidence_of(c016))
    assert.are.same({ flash = true, fp8 = true },
      calibration.evidence_of({ flash_attention = "TRUE", precision = "fp8" }))
    -- the kernel the run got: MLA on GB200 with NeMo 25.04's
    -- TransformerEngine 2.2 ran unfused (apsearch.te_attention)
    local mla = { flash_attention = "true", precision = "bf16", device = "gb200", attention = "mla",
                  qk_nope_head_dim = "128", qk_rope_head_dim = "64", v_head_dim = "128",
                  software = "dgxc-benchmarking 25.08 (NeMo 2.0 recipe)" }
    assert.are.same({ unfused = true, bf16 = true }, calibration.evidence_of(mla))
    mla.software = "NeMo 25.11"
    assert.are.same({ flash = true, bf16 = true }, calibration.evidence_of(mla))
  end)

  it("fits gemm_efficiency only from runs whose GEMMs run in 16 bits", function()
    -- an fp8 run's bf16 GEMMs (the output layer) cannot pin the bf16
    -- efficiency: it stays at the preset (was fitted to 0.35 on GB200)
    local fp8
    for _, r in ipairs(validate.load(ROOT .. "/tests/fixtures/moe/cases_moe.csv")) do
      if r.case_id == "mp014" then fp8 = r end -- Mixtral-8x7B, fp8, GB200
    end
    assert.are.equal("fp8", fp8.precision)
    local old, oldi = calibrate.RESTARTS, calibrate.ITERATIONS
    calibrate.RESTARTS, calibrate.ITERATIONS = 1, 10
    local calib = calibrate.fit_rows({ fp8 }, "one fp8 run")
    calibrate.RESTARTS, calibrate.ITERATIONS = old, oldi
    local dev = calib.devices[fp8.device:lower()]
    assert.is_nil(dev.gemm_efficiency)
    assert.is_number(dev.fp8_gemm_efficiency)
  end)
end)

describe("crossval.data_source on too few residuals", function()
  it("writes the count alone (no interval), not a format error", function()
    local H = require "spec_helpers"
    -- c016 and c213, two sources: two step-time residuals, fewer than
    -- LEVEL / (1 - LEVEL) = 4
    local text = H.read(FIXTURE)
    local header, c016 = text:match("^([^\n]*)\n"), text:match("\n(c016,[^\n]*)")
    local c213 = text:match("\n(c213,[^\n]*)")
    local path = H.write(H.tmpdir() .. "/two.csv", header .. "\n" .. c016 .. "\n" .. c213 .. "\n")
    local res = crossval.run(path, { fit = function() return nil end })
    local src = crossval.data_source(res)
    local data = assert(load(src))()
    assert.are.same({ rows = 2 }, data.step_time.pooled)
    assert.are.same({ rows = 0 }, data.mem_peak.pooled)
    local intervals = require "apsearch.intervals"
    assert.is_nil(intervals.interval(10.0, data.step_time, "megatron/ampere/16bit"))
  end)
end)

describe("crossval.run on one source", function()
  it("is refused: leaving the only source out leaves nothing to fit on", function()
    local H = require "spec_helpers"
    local text = H.read(FIXTURE)
    local header, c016 = text:match("^([^\n]*)\n"), text:match("\n(c016,[^\n]*)")
    local path = H.write(H.tmpdir() .. "/one.csv", header .. "\n" .. c016 .. "\n")
    local ok, err = pcall(crossval.run, path, { fit = function() return nil end })
    assert.is_false(ok)
    assert.are.equal(path .. ": --cv source: needs runs of at least 2 sources to leave one out (got 1: Narayanan)",
      err)
  end)
end)

describe("apsearch validate --cv source", function()
  it("prints the priors and the fields left at the preset, per held-out source #bulk", function()
    local H = require "spec_helpers"
    local code, out = H.apsearch("validate", "tests/fixtures/cases_small.csv", "--cv", "source")
    assert.are.equal(2, code) -- c900 (tpu-v5p) is not estimated, below
    -- llm-foundry held out: no other source ran flash attention, so the
    -- A100's and H100's flash values are the published utilisations
    assert.truthy(out:find("mosaicml/llm-foundry held out: a100-sxm4-80gb attention_efficiency = 0.615 "
      .. "(published FlashAttention-2 utilisation)", 1, true), out)
    assert.truthy(out:find("mosaicml/llm-foundry held out: h100-sxm-80gb gemm_efficiency left at the "
      .. "preset default", 1, true), out)
    assert.truthy(out:find("Narayanan held out: a100-sxm4-80gb unfused_attention_efficiency = ", 1, true), out)
  end)

  it("names the rows no fold could estimate and exits 2, as validate does #bulk", function()
    local H = require "spec_helpers"
    -- c900's device (tpu-v5p) is no preset and c901 runs nvfp4 on an H100:
    -- every fold fails them (was: exit 0, the rows only missing from the
    -- counts)
    local code, out, err = H.apsearch("validate", "tests/fixtures/cases_small.csv", "--cv", "source")
    assert.are.equal(2, code)
    assert.truthy(out:find('not estimated:\n  tests/fixtures/cases_small.csv: row c900: device = "tpu-v5p": '
      .. "unknown device preset", 1, true), out)
    assert.truthy(out:find("\n  tests/fixtures/cases_small.csv: row c901: NotImplemented: training.precision: nvfp4",
      1, true), out)
    assert.truthy(err:find("tests/fixtures/cases_small.csv: 2 of 5 rows could not be estimated", 1, true), err)
    assert.truthy(err:find("crossval: fold ", 1, true), err)
    -- -q: the folds' progress lines go, the error stays (the same output)
    local code_q, out_q, err_q = H.apsearch("validate", "tests/fixtures/cases_small.csv", "--cv", "source", "-q")
    assert.are.equal(2, code_q)
    assert.are.equal(out, out_q)
    assert.is_nil(err_q:find("crossval:", 1, true), err_q)
    assert.is_nil(err_q:find("calibrate:", 1, true), err_q)
    assert.truthy(err_q:find("tests/fixtures/cases_small.csv: 2 of 5 rows could not be estimated", 1, true), err_q)
    -- without --cv: the first failed row's error on stderr too
    local _, _, err1 = H.apsearch("validate", "tests/fixtures/cases_small.csv")
    assert.truthy(err1:find('tests/fixtures/cases_small.csv: 2 of 5 rows could not be estimated; row c900: device = ' ..
      '"tpu-v5p": unknown device preset', 1, true), err1)
    -- a misspelt preset gets a suggestion
    local dir = H.tmpdir()
    local text = H.read(ROOT .. "/tests/fixtures/cases_small.csv"):gsub('"?tpu%-v5p"?', "h100-sxm-80g", 1)
    H.write(dir .. "/c.csv", text)
    local _, _, err2 = H.apsearch("validate", dir .. "/c.csv")
    assert.truthy(err2:find('row c900: device = "h100-sxm-80g": unknown device preset; did you mean "h100-sxm-80gb"?',
      1, true), err2)
    code = H.apsearch("validate", "tests/fixtures/cases_small.csv", "--cv", "source", "--format", "json")
    assert.are.equal(2, code)
  end)
end)
