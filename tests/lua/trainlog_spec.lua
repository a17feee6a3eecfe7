-- tests/lua/trainlog_spec.lua -- `apsearch calibrate --log FILE`
-- (lua/apsearch/trainlog.lua, cli.lua calibrate_log, calibrate.fit_scale):
-- published Megatron-LM and TorchTitan log excerpts no one here wrote
-- (tests/fixtures/logs/README.md names each source) parse to the numbers
-- in their lines; hand-built logs in the current formats parse to known
-- values; bad logs are one line naming the file and line, exit 2; and a
-- calibration fitted on a log makes `estimate --calibration` give the
-- measured step time.

local cjson = require "cjson"
local H = require "spec_helpers"
local write, tmpdir, apsearch = H.write, H.tmpdir, H.apsearch

local LOGS = H.ROOT .. "/tests/fixtures/logs/"
local POLICY = H.ROOT .. "/examples/llama3_8b_h100.lua"
local MIB, GIB = 2 ^ 20, 2 ^ 30
local trainlog = require "apsearch.trainlog"

local function near(expected, got, tol)
  assert.is_true(got ~= nil and math.abs(got - expected) <= (tol or 1e-9) * math.max(1, math.abs(expected)),
    ("expected %s, got %s"):format(tostring(expected), tostring(got)))
end

local function one_line(code, out, err)
  assert.are.equal(2, code, err)
  assert.are.equal("", out)
  assert.are.equal(1, select(2, err:gsub("\n", "")), err)
  return err
end

-- A Megatron-LM iteration line in the current format (training.py @ d98e8a64
-- training_log: a timestamp with microseconds since 6cf285b238).
local function megatron_line(it, total, ms, tflops, loss)
  return (" [2026-08-22 15:22:%02d.%06d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration " ..
    "(ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: 3.000000E-04 | global batch size: %5d | " ..
    "lm loss: %.6E | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan " ..
    "iterations:   0 |"):format(it % 60, it * 1000, it, total, it * 64, ms, tflops, 64, loss)
end

-- report_memory (megatron/training/utils/common_utils.py @ d98e8a64), MiB
local function megatron_memory(rank, after, alloc, max_alloc, res, max_res)
  return ("[Rank %d] (after %d iterations) memory (MB) | allocated: %.2f | max allocated: %.2f | reserved: %.2f | " ..
    "max reserved: %.2f"):format(rank, after, alloc, max_alloc, res, max_res)
end

describe("apsearch.trainlog on published logs", function()
  local tl = require "apsearch.trainlog"

  it("Megatron-LM, timestamp to the second (Ling-V2 docs): every field of the lines, memory, medians", function()
    local log = tl.load(LOGS .. "megatron_2024_ling_v2.log")
    assert.are.equal("megatron", log.framework)
    assert.are.equal("megatron-2024", log.format)
    assert.are.equal(10, #log.iterations)
    local first = log.iterations[1]
    assert.are.equal(1, first.iteration)
    assert.are.equal(2000, first.train_iters)
    near(79.4899, first.step_seconds)
    near(18.0, first.tflops_per_gpu)
    near(2.605958, first.loss)
    assert.are.equal(128, first.global_batch_size)
    near(10.7206, log.iterations[10].step_seconds)
    near(133.7, log.iterations[10].tflops_per_gpu)
    assert.are.equal(1, #log.memory)
    assert.are.equal(0, log.memory[1].rank)
    assert.are.equal(1, log.memory[1].after)
    near(63359.77001953125 * MIB, log.memory[1].max_allocated)
    near(66802.0 * MIB, log.memory[1].max_reserved)
    local s = tl.summary(log)
    -- default warm-up: the first 3 logged iterations (10 % of 10 is 1)
    assert.are.equal(3, s.skipped)
    assert.are.equal(7, s.used)
    assert.are.equal(4, s.first)
    assert.are.equal(10, s.last)
    -- median of 10840.4 10765.6 10827.5 10767.4 10758.5 10727.4 10720.6 ms
    near(10.7656, s.step_seconds)
    -- median of 132.2 133.1 132.4 133.1 133.2 133.6 133.7
    near(133.1, s.tflops_per_gpu)
    near(2.557783, s.loss)
    near(63359.77001953125 * MIB, s.memory.max_allocated)
    near(66802.0 * MIB, s.memory.max_reserved)
    assert.is_nil(s.tokens_per_s_per_gpu)
  end)

  it("Megatron-LM, Megatron-LM issue 756 (Mixtral 8x7B, 16 H100)", function()
    local log = tl.load(LOGS .. "megatron_2024_issue756.log")
    assert.are.equal("megatron-2024", log.format)
    local steps, tflops, its = {}, {}, {}
    for i, r in ipairs(log.iterations) do steps[i], tflops[i], its[i] = r.step_seconds, r.tflops_per_gpu, r.iteration end
    assert.are.same({ 43, 44, 45 }, its)
    near(5.4449, steps[1]) near(5.5338, steps[2]) near(5.7186, steps[3])
    near(239.8, tflops[1]) near(236.0, tflops[2]) near(228.4, tflops[3])
    near(1.825991, log.iterations[1].loss)
    -- three lines: two skipped, one left
    local s = tl.summary(log)
    assert.are.equal(2, s.skipped)
    near(5.7186, s.step_seconds)
    assert.is_nil(s.memory.max_allocated)
  end)

  it("Megatron-LM's older format, no timestamp and no throughput field (epfLLM issue 11)", function()
    local log = tl.load(LOGS .. "megatron_2019_epfllm_issue11.log")
    assert.are.equal("megatron-2019", log.format)
    assert.are.equal(8, #log.iterations)
    assert.are.equal(122, log.iterations[1].iteration)
    assert.are.equal(250000, log.iterations[1].train_iters)
    near(86.5452, log.iterations[1].step_seconds)
    assert.is_nil(log.iterations[1].tflops_per_gpu)
    assert.are.equal(1024, log.iterations[1].global_batch_size)
    local s = tl.summary(log)
    -- used: 125, 182, 183, 184, 185 (89.0752, 126.9953, 125.5537, 127.8045, 130.5549 s)
    assert.are.equal(125, s.first)
    near(126.9953, s.step_seconds)
    assert.is_nil(s.tflops_per_gpu)
    -- --skip 0 takes all eight: the mean of the middle two, 89.4748 and 125.5537
    near((89.4748 + 125.5537) / 2, tl.summary(log, 0).step_seconds)
  end)

  it("TorchTitan with grad_norm and a [rank0] prefix (torchtitan PR 3393)", function()
    local log = tl.load(LOGS .. "torchtitan_2026_pr3393.log")
    assert.are.equal("torchtitan", log.framework)
    assert.are.equal("torchtitan-tps", log.format)
    assert.are.equal(8, #log.iterations)
    local r = log.iterations[1]
    assert.are.equal(14, r.iteration)
    near(3.24405, r.loss)
    near(7282, r.tokens_per_s_per_gpu)
    near(0.52, r.tflops_per_gpu)
    near(0.17, r.mfu_pct)
    near(9.46 * GIB, r.max_reserved)
    assert.is_nil(r.step_seconds)
    local s = tl.summary(log)
    -- steps 17-21: 7282 7322 7309 7272 7304
    assert.are.equal(17, s.first)
    near(7304, s.tokens_per_s_per_gpu)
    near(9.46 * GIB, s.memory.max_reserved)
    assert.is_nil(s.memory.max_allocated)
    assert.is_nil(s.step_seconds)
  end)

  it("TorchTitan without grad_norm, other log lines between (torchtitan PR 1287)", function()
    local log = tl.load(LOGS .. "torchtitan_2025_pr1287.log")
    local its = {}
    for i, r in ipairs(log.iterations) do its[i] = r.iteration end
    assert.are.same({ 200, 210, 220, 230, 240, 250 }, its)
    local r = log.iterations[1]
    near(6.1384, r.loss) near(5856, r.tokens_per_s_per_gpu) near(339.16, r.tflops_per_gpu) near(34.29, r.mfu_pct)
    near(49.66 * GIB, r.max_reserved)
    local s = tl.summary(log)
    -- 230, 240, 250: 5869 5864 5862
    near(5864, s.tokens_per_s_per_gpu)
    near(339.59, s.tflops_per_gpu)
    near(34.34, s.mfu_pct)
  end)

  it("TorchTitan, one step logged by seven ranks: counted once (torchtitan PR 2389)", function()
    local log = tl.load(LOGS .. "torchtitan_2026_pr2389_ranks.log")
    assert.are.equal(2, #log.iterations)
    assert.are.equal(6, log.duplicates)
    near(10050, log.iterations[1].tokens_per_s_per_gpu)
    near(314.71, log.iterations[1].tflops_per_gpu)
    local s = tl.summary(log)
    assert.are.equal(1, s.skipped)
    near(10007, s.tokens_per_s_per_gpu)
    near(66.91 * GIB, s.memory.max_reserved)
  end)
end)

describe("apsearch.trainlog on hand-built logs", function()
  local tl = require "apsearch.trainlog"

  it("Megatron-LM's current format: microsecond timestamps, memory of two ranks, other lines", function()
    local lines = { "training ...", megatron_line(1, 20, 9000.0, 40.0, 10.5) }
    -- iterations 2..20 at 2000 + 10 k ms
    for k = 2, 20 do lines[#lines + 1] = megatron_line(k, 20, 2000 + 10 * k, 300.0 - k, 10 - 0.25 * k) end
    table.insert(lines, 4, megatron_memory(0, 2, 1000, 50000.5, 52000, 60000))
    table.insert(lines, 5, megatron_memory(4, 2, 900, 55000.25, 51000, 58000))
    lines[#lines + 1] = " validation loss at iteration 20 | lm loss value: 5.000000E+00 | lm loss PPL: 1.484132E+02 | "
    lines[#lines + 1] = "saving checkpoint at iteration      20 to /ckpt"
    local log = tl.parse(table.concat(lines, "\n") .. "\n", "hand.log")
    assert.are.equal("megatron-2026", log.format)
    assert.are.equal(20, #log.iterations)
    local s = tl.summary(log)
    -- 20 iterations: 10 % is 2, fewer than 3: the first 3 skipped; 4..20 left,
    -- median iteration 12: 2120 ms, 288 TFLOP/s
    assert.are.equal(3, s.skipped)
    assert.are.equal(17, s.used)
    near(2.120, s.step_seconds)
    near(288.0, s.tflops_per_gpu)
    near(10 - 0.25 * 20, s.loss)
    -- the largest over the ranks' lines, each kind apart
    near(55000.25 * MIB, s.memory.max_allocated)
    near(60000 * MIB, s.memory.max_reserved)
    assert.are.equal(2, s.memory.ranks)
    -- a longer log skips 10 %
    assert.are.equal(5, tl.default_skip(50))
    assert.are.equal(0, tl.default_skip(1))
  end)

  it("TorchTitan's wps format (train.py @ 4d182a13e), coloured, with validation lines", function()
    local c = { cyan = "\27[36m", green = "\27[32m", yellow = "\27[33m", blue = "\27[94m", magenta = "\27[35m",
      reset = "\27[39m" }
    local lines = {}
    for step = 1, 10 do
      lines[#lines + 1] = ("[rank0]:2024-11-25 15:33:38,123 - root - INFO - %sstep: %2d  %sloss: %7.4f  %smemory: %5.2fGiB" ..
        "(%.2f%%)  %swps: %s  %smfu: %.2f%%%s"):format(c.cyan, step, c.green, 12 - step * 0.5, c.yellow,
        60 + step * 0.1, 75.0, c.blue, step == 1 and "1,234" or ("7," .. (100 + step)), c.magenta, 40 + step, c.reset)
    end
    lines[#lines + 1] = "[rank0]:... - root - INFO - validate step: 10  loss:  7.0000  memory: 99.00GiB(99.00%)  tps: 9"
    local log = tl.parse(table.concat(lines, "\n"), "titan.log")
    assert.are.equal("torchtitan-wps", log.format)
    assert.are.equal(10, #log.iterations)
    near(1234, log.iterations[1].tokens_per_s_per_gpu)
    near(7110, log.iterations[10].tokens_per_s_per_gpu)
    near(50, log.iterations[10].mfu_pct)
    assert.is_nil(log.iterations[10].tflops_per_gpu)
    local s = tl.summary(log)
    -- steps 4..10: 7104..7110, median 7107
    near(7107, s.tokens_per_s_per_gpu)
    -- the validation line's 99 GiB is no training step's
    near(61.0 * GIB, s.memory.max_reserved)
  end)

  it("TorchTitan's mfu N/A (fp8 / MX since f113706c4) is no MFU, not an error", function()
    local log = tl.parse("step: 3  loss:  7.0  memory: 10.00GiB(12.50%)  tps: 1,000  tflops: 5.00  mfu: N/A\n", "x.log")
    assert.is_nil(log.iterations[1].mfu_pct)
    near(5.0, log.iterations[1].tflops_per_gpu)
  end)
end)

describe("calibrate --log, bad logs", function()
  local dir = tmpdir()
  local good = megatron_line(1, 10, 1000.0, 100.0, 9.0)

  it("a log with no iteration line names the formats looked for", function()
    local path = write(dir .. "/none.log", "hello\nworld\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ": no training iteration line found", 1, true), err)
    assert.truthy(err:find("elapsed time per iteration (ms)", 1, true), err)
    assert.truthy(err:find("tps: N", 1, true), err)
  end)

  it("a truncated line names the file and the line", function()
    local path = write(dir .. "/cut.log", good .. "\n" .. good:sub(1, 120) .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":2: Megatron-LM iteration line: no \"elapsed time per iteration (ms): X |\"", 1,
      true), err)
    -- cut inside its last field
    path = write(dir .. "/cut2.log", good .. "\n" .. good:sub(1, 300) .. "\n")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":2: Megatron-LM iteration line: ", 1, true), err)
    path = write(dir .. "/cut3.log", "step: 4  loss:  7.62585  memory: 66.91GiB(37.51%)  tp")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":1: TorchTitan step line: no \"tps: N\"", 1, true), err)
  end)

  it("a non-numeric field names the file, the line and the field", function()
    local path = write(dir .. "/nan.log", good .. "\n" .. good:gsub("%(ms%): 1000.0", "(ms): fast") .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":2: Megatron-LM iteration line: elapsed time per iteration (ms) expected a " ..
      "number (got \"fast\")", 1, true), err)
    path = write(dir .. "/mem.log", good .. "\n[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 | " ..
      "max allocated: lots | reserved: 2.0 | max reserved: 3.0\n")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":2: Megatron-LM memory line: max allocated expected a number (got \"lots\")", 1,
      true), err)
    path = write(dir .. "/tps.log", "step: 4  loss:  7.6  memory: 66.91GiB(37.51%)  tps: 1x,050  tflops: 3.1  mfu: 1%\n")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":1: TorchTitan step line: tps expected a number (got \"1x,050\")", 1, true), err)
  end)

  it("a restarted Megatron-LM run is refused naming both lines, not read as other ranks' lines", function()
    -- iterations 1-3 at 1 s, a restart from a checkpoint at 2, then 3-4 at 2 s:
    -- the second segment's steps were dropped as "other ranks" before
    local lines = { megatron_line(1, 10, 1000.0, 100.0, 9.0), megatron_line(2, 10, 1000.0, 100.0, 9.0),
      megatron_line(3, 10, 1000.0, 100.0, 9.0), "loading checkpoint from iteration 2",
      megatron_line(3, 10, 2000.0, 50.0, 9.0), megatron_line(4, 10, 2000.0, 50.0, 9.0) }
    local path = write(dir .. "/restart.log", table.concat(lines, "\n") .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":5: iteration 3 after iteration 3 (line 3): the run restarted; give "
      .. "the log of one run (e.g. the lines from 5 on: sed -n '5,$p')\n", err)
  end)

  it("a restarted TorchTitan run is refused at its second start banner, not read as other ranks' lines", function()
    -- two ranks log each step (no rank prefix, as torchtitan_2026_pr2389_ranks.log); the job is
    -- started again from a checkpoint at step 1: its steps 2-3 repeat the first run's
    local function step(n, tps)
      return ("[titan] 2026-02-24 19:46:17,508 - root - INFO - step: %2d  loss:  7.62585  memory: 66.91GiB(37.51%%)"
        .. "  tps: %d  tflops: 314.71  mfu: 13.99%%"):format(n, tps)
    end
    local start = "[titan] 2026-02-24 19:46:10,000 - root - INFO - Training starts at step 1"
    local lines = { start, start, step(1, 9000), step(1, 9000), step(2, 10000), step(2, 10000), step(3, 10000),
      step(3, 10000), "[titan] 2026-02-24 19:50:10,000 - root - INFO - Training starts at step 2",
      step(2, 5000), step(3, 5000) }
    local path = write(dir .. "/tt_restart.log", table.concat(lines, "\n") .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":9: \"Training starts at step\" after step 3 (line 7): the run "
      .. "restarted; give the log of one run (e.g. the lines from 9 on: sed -n '9,$p')\n", err)
    -- no banner (a log cut after it): a step two logged steps back
    local rew = { step(1, 9000), step(2, 10000), step(3, 10000), step(1, 5000), step(2, 5000) }
    path = write(dir .. "/tt_rewind.log", table.concat(rew, "\n") .. "\n")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":4: step 1 after step 3 (line 3): the run restarted; give the log of "
      .. "one run (e.g. the lines from 4 on: sed -n '4,$p')\n", err)
    -- one logged step behind (a rank's line after another's next): one run
    local lag = { step(1, 9000), step(2, 10000), step(1, 9000), step(3, 10000), step(2, 10000), step(3, 10000) }
    path = write(dir .. "/tt_lag.log", table.concat(lag, "\n") .. "\n")
    assert.are.equal(0, (apsearch("calibrate", "--log", path)))
    -- the banners of one start, on every rank, before any step: one run
    local one = write(dir .. "/tt_one.log", table.concat(lines, "\n", 1, 8) .. "\n")
    local code = apsearch("calibrate", "--log", one)
    assert.are.equal(0, code)
  end)

  it("an iteration or step number past 10^15 names the file, the line and the field (it was a Lua error)",
    function()
    local path = write(dir .. "/it.log", (good:gsub("iteration        1/", "iteration 1000000000000000000000000000000/"))
      .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":1: Megatron-LM iteration line: iteration must be below 10^15 (got "
      .. "\"1000000000000000000000000000000\")\n", err)
    path = write(dir .. "/step.log", "step: 99999999999999999999  loss:  7.6  memory: 1.00GiB(1%)  tps: 10\n")
    err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":1: TorchTitan step line: step must be below 10^15 (got "
      .. "\"99999999999999999999\")\n", err)
  end)

  it("a NaN or infinite loss (a diverged step) keeps the step's time and is counted, not refused", function()
    -- Megatron formats the loss with "{:.6E}" (Python: "NAN", "INF"),
    -- TorchTitan with "{:7.4f}" ("    nan")
    local lines = {}
    for it = 1, 8 do
      local line = megatron_line(it, 8, 10000.0 + it, 100.0, 9.0)
      if it >= 6 then line = line:gsub("lm loss: [^ ]+", it == 8 and "lm loss: INF" or "lm loss: NAN") end
      lines[it] = line
    end
    local s = trainlog.summary(trainlog.parse(table.concat(lines, "\n"), "n.log"), 3)
    assert.are.equal(5, s.used)
    assert.are.equal(3, s.nonfinite_losses)
    near(10.006, s.step_seconds, 1e-12) -- iterations 4-8: 10,004 ... 10,008 ms
    assert.is_nil(s.loss)
    local path = write(dir .. "/nan.log", table.concat(lines, "\n") .. "\n")
    local code, out = apsearch("calibrate", "--log", path, "--skip", "3")
    assert.are.equal(0, code)
    assert.truthy(out:find("3 used iterations logged a NaN or infinite loss (timed as logged)", 1, true), out)
    -- beside a job (and before a fit): said too, and that 5 iterations are few
    -- (10 s a step: within the job's physical bounds, 1.7 s at its peak)
    code, out = apsearch("calibrate", "--log", path, POLICY, "--set", "training.framework=megatron",
      "--strategy", "dp_degree=8", "--skip", "3")
    assert.are.equal(0, code)
    assert.truthy(out:find("note: 3 of the 5 iterations used logged a NaN or infinite loss", 1, true), out)
    assert.is_nil(out:find("iterations used: one slow step", 1, true), out) -- 5 is not few
    local tt = trainlog.parse("step: 5  loss:     nan  memory: 9.46GiB(64.99%)  tps: 7,282\n", "t.log")
    assert.is_false(tt.iterations[1].loss)
    near(7282, tt.iterations[1].tokens_per_s_per_gpu)
  end)

  it("a zero, negative or absurd step time, throughput or memory names the file, the line and the field", function()
    -- each would print inf / nan beside the estimate, or a 300-digit step time
    local cases = {
      { good:gsub("%(ms%): 1000.0", "(ms): 0.0"), "elapsed time per iteration (ms) must be above 0 (got \"0.0\")" },
      { good:gsub("%(ms%): 1000.0", "(ms): -1000.0"), "elapsed time per iteration (ms) must be above 0 (got \"-1000.0\")" },
      { good:gsub("%(ms%): 1000.0", "(ms): 1e300"), "elapsed time per iteration (ms) must be at most 1e+09 (got \"1e300\")" },
      { good:gsub("size:    64", "size:     0"), "global batch size must be above 0 (got \"0\")" },
      { good:gsub("lm loss: [^ ]+", "lm loss: -2.0"), "lm loss must be at least 0 (got \"-2.0\")" },
    }
    for i, c in ipairs(cases) do
      local path = write(dir .. "/range" .. i .. ".log", good .. "\n" .. c[1] .. "\n")
      local err = one_line(apsearch("calibrate", "--log", path))
      assert.are.equal("apsearch: " .. path .. ":2: Megatron-LM iteration line: " .. c[2] .. "\n", err)
    end
    local path = write(dir .. "/mem0.log", good .. "\n" .. megatron_memory(0, 1, 1.0, -5.0, 2.0, 3.0) .. "\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.are.equal("apsearch: " .. path .. ":2: Megatron-LM memory line: max allocated must be above 0 (got \"-5.00\")\n",
      err)
    local tt = {
      { "tps: -7,282", "tps must be above 0 (got \"-7,282\")" },
      { "tps: 0", "tps must be above 0 (got \"0\")" },
      { "memory: -9.46GiB(64.99%)", "memory must be above 0 (got \"-9.46GiB(64.99%)\")" },
      { "memory: 0.00GiB(0.00%)", "memory must be above 0 (got \"0.00GiB(0.00%)\")" },
      { "mfu: -0.17%", "mfu must be at least 0 (got \"-0.17%\")" },
    }
    for i, c in ipairs(tt) do
      local line = "step: 4  loss:  7.6  memory: 9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%"
      local key = c[1]:match("^(%a+):")
      line = line:gsub(key .. ": %S+", (c[1]:gsub("%%", "%%%%")))
      path = write(dir .. "/tt_range" .. i .. ".log", line .. "\n")
      err = one_line(apsearch("calibrate", "--log", path))
      assert.are.equal("apsearch: " .. path .. ":1: TorchTitan step line: " .. c[2] .. "\n", err)
    end
  end)

  it("a gzip file and a log over the size cap are refused, not read", function()
    local path = write(dir .. "/z.log", "\x1f\x8b\x08\x00")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ": a gzip file: give the plain log", 1, true), err)
    local tl = require "apsearch.trainlog"
    local cap = tl.MAX_FILE_BYTES
    tl.MAX_FILE_BYTES = 100
    path = write(dir .. "/big.log", good .. "\n")
    local ok, e = pcall(tl.load, path)
    tl.MAX_FILE_BYTES = cap
    assert.is_false(ok)
    assert.truthy(tostring(e):find(path .. ": cannot read: ", 1, true), tostring(e))
  end)

  it("two frameworks in one log, a --skip that leaves nothing, and --skip not a count", function()
    local path = write(dir .. "/mixed.log", good .. "\nstep: 4  loss:  7.6  memory: 1.00GiB(1%)  tps: 10\n")
    local err = one_line(apsearch("calibrate", "--log", path))
    assert.truthy(err:find(path .. ":2: a torchtitan line in a megatron log (line 1)", 1, true), err)
    path = write(dir .. "/one.log", good .. "\n")
    err = one_line(apsearch("calibrate", "--log", path, "--skip", "1"))
    assert.truthy(err:find("--skip 1 leaves no iteration: the log has 1 logged iterations", 1, true), err)
    err = one_line(apsearch("calibrate", "--log", path, "--skip", "-1"))
    assert.truthy(err:find("--skip: expected an integer >= 0", 1, true), err)
    err = one_line(apsearch("calibrate", "--log", path, "-o", dir .. "/c.json"))
    assert.truthy(err:find("--output: needs the job the log is of", 1, true), err)
    err = one_line(apsearch("calibrate", "--log", path, "--trace", path))
    assert.truthy(err:find("--log: takes no --trace", 1, true), err)
    err = one_line(apsearch("calibrate", "--strategy", "tp_degree=2", "-o", dir .. "/c.json"))
    assert.truthy(err:find("--strategy: is an option of --log", 1, true), err)
  end)
end)

describe("calibrate --log, the command", function()
  local dir = tmpdir()

  local function estimate(...)
    local code, out, err = apsearch("estimate", POLICY, "--format", "json", "-q", ...)
    assert.are.equal(0, code, err)
    return cjson.decode(out).estimate
  end

  it("without a job prints what the log says, exit 0", function()
    local code, out, err = apsearch("calibrate", "--log", LOGS .. "megatron_2024_ling_v2.log")
    assert.are.equal(0, code, err)
    -- the report wraps at 120 columns after the log's path: read it as one line
    out = out:gsub("\n%s+", " ")
    assert.truthy(out:find("megatron (megatron-2024 format), 10 iterations logged", 1, true), out)
    assert.truthy(out:find("step time 10.7656 s, 133.1 TFLOP/s per GPU", 1, true), out)
    -- 63359.77 MiB and 66802 MiB
    assert.truthy(out:find("max allocated 61.87 GiB, max reserved 65.24 GiB", 1, true), out)
    code, out = apsearch("calibrate", "--log", LOGS .. "torchtitan_2025_pr1287.log")
    assert.are.equal(0, code)
    assert.truthy(out:find("5864 tokens/s per GPU, MFU 34.34 %", 1, true), out)
    assert.truthy(out:find("max reserved 49.66 GiB", 1, true), out)
    -- one iteration used, one skipped, repeated lines: said in words
    code, out = apsearch("calibrate", "--log", LOGS .. "megatron_2024_issue756.log")
    assert.are.equal(0, code)
    out = out:gsub("\n%s+", " ")
    assert.truthy(out:find("3 iterations logged, the first 2 skipped (warm-up), 1 used (iteration 45)", 1, true), out)
    code, out = apsearch("calibrate", "--log", LOGS .. "torchtitan_2026_pr2389_ranks.log")
    assert.are.equal(0, code)
    out = out:gsub("\n%s+", " ")
    assert.truthy(out:find("the first one skipped (warm-up), 1 used (iteration 5), 6 repeated lines (the same "
      .. "step from other ranks) ignored", 1, true), out)
    assert.truthy(out:find("(reserved_bytes.all.peak, the largest over the logged steps; 2 lines)", 1, true), out)
  end)

  it("Megatron-LM round trip: log + job -> calibration -> estimate --calibration gives the measured step", function()
    local job = { "--set", "training.framework=megatron", "--strategy", "tp_degree=4,dp_degree=2" }
    local before = estimate(table.unpack(job))
    assert.is_true(before.feasible)
    -- the run took 1.3 x the estimate
    local measured = 1.3 * before.step_time
    local lines = { megatron_line(1, 12, 5 * measured * 1000, 10.0, 11.0) }
    for k = 2, 12 do lines[#lines + 1] = megatron_line(k, 12, measured * 1000 + (k % 2 == 0 and 3 or -3), 99.0, 8.0) end
    lines[#lines + 1] = megatron_memory(0, 2, 100, 40000, 42000, 44000)
    local log = write(dir .. "/meg.log", table.concat(lines, "\n") .. "\n")
    local calib = dir .. "/meg.json"
    local code, out, err = apsearch("calibrate", "--log", log, POLICY, "-o", calib, table.unpack(job))
    assert.are.equal(0, code, err)
    -- iterations 4..12 used: five at +3 ms (even), four at -3 ms: the median is +3 ms
    local logged = tonumber(("%.1f"):format(measured * 1000 + 3))
    assert.truthy(out:find(("step time %.4f s"):format(logged / 1000), 1, true), out)
    assert.truthy(out:find(("estimated (8 GPUs): step time %.4f s (%+.1f %%)"):format(before.step_time,
      (before.step_time - logged / 1000) / (logged / 1000) * 100), 1, true), out)
    assert.truthy(out:find(("measured max allocated 39.06 GiB, estimated %.2f GiB"):format(before.mem_allocated / GIB),
      1, true), out)
    local c = cjson.decode(H.read(calib))
    local fields = c.devices["h100-sxm-80gb"]
    assert.truthy(fields.gemm_efficiency and fields.attention_efficiency, H.read(calib))
    assert.is_nil(fields.gemm_half_dim)
    assert.are.equal(1, c.rows)
    assert.is_true(c.loss_after < c.loss_before)
    -- the efficiencies moved together: the estimate was too fast
    assert.is_true(c.log.scale < 1)
    local after = estimate("--calibration", calib, table.unpack(job))
    assert.is_true(math.abs(after.step_time - logged / 1000) / (logged / 1000) < 0.01,
      ("%g vs %g"):format(after.step_time, logged / 1000))
  end)

  it("TorchTitan round trip on a published log: the step from tps and the job's tokens", function()
    local job = { "--strategy", "fsdp_degree=8" }
    local calib = dir .. "/titan.json"
    local code, out, err = apsearch("calibrate", "--log", LOGS .. "torchtitan_2025_pr1287.log", POLICY, "-o", calib,
      table.unpack(job))
    assert.are.equal(0, code, err)
    -- 64 sequences x 8192 tokens over 8 GPUs at 5864 tokens/s per GPU
    local step = 64 * 8192 / (8 * 5864)
    assert.truthy(out:find(("step time %.4f s (from tps), 5864 tokens/s per GPU"):format(step), 1, true), out)
    assert.truthy(out:find("measured max reserved 49.66 GiB", 1, true), out)
    local after = estimate("--calibration", calib, table.unpack(job))
    assert.is_true(math.abs(after.step_time - step) / step < 0.01, ("%g vs %g"):format(after.step_time, step))
    assert.is_true(math.abs(after.tokens_per_s_per_gpu - 5864) / 5864 < 0.01)
  end)

  it("a log's calibration replaces its own stack's attention kernel, not another stack's", function()
    local calib = dir .. "/titan_stack.json"
    local code, _, err = apsearch("calibrate", "--log", LOGS .. "torchtitan_2025_pr1287.log", POLICY, "-o", calib,
      "--strategy", "fsdp_degree=8", "-q")
    assert.are.equal(0, code, err)
    local c = cjson.decode(H.read(calib))
    assert.are.equal("torchtitan-2025", c.log.stack)
    local fields = c.devices["h100-sxm-80gb"]
    local stacks = require "apsearch.stacks"
    -- fitted on TorchTitan's FlashAttention-2 (0.3257) and the preset's
    -- GEMMs (0.639), both scaled by one factor
    near(fields.gemm_efficiency / 0.639 * stacks.H100_FA2_ATTENTION, fields.attention_efficiency, 1e-9)
    local function device(...)
      local cd, out, e = apsearch("estimate", POLICY, "--format", "json", "-q", "--calibration", calib, ...)
      assert.are.equal(0, cd, e)
      return cjson.decode(out).inputs.cluster.device
    end
    -- the same stack's job: the fitted kernel replaces the benchmark's
    local own = device("--strategy", "fsdp_degree=8")
    near(fields.attention_efficiency, own.attention_efficiency, 1e-12)
    near(fields.gemm_efficiency, own.gemm_efficiency, 1e-12)
    -- a Megatron job (cuDNN attention): its kernel is not the log's
    -- FlashAttention-2; the GEMMs take the fit as any calibration's
    local other = device("--set", "training.framework=megatron", "--strategy", "tp_degree=4,dp_degree=2")
    near(stacks.H100_CUDNN_ATTENTION, other.attention_efficiency, 1e-12)
    near(fields.gemm_efficiency, other.gemm_efficiency, 1e-12)
  end)

  it("the job from --from result.json --rank N", function()
    local res = dir .. "/r.json"
    local code, out, err = apsearch("run", POLICY, "--top-k", "1", "--format", "json", "-q")
    assert.are.equal(0, code, err)
    write(res, out)
    local rec = cjson.decode(out).top_k_strategies[1]
    code, out, err = apsearch("calibrate", "--log", LOGS .. "torchtitan_2025_pr1287.log", "--from", res, "--rank", "1",
      "-o", dir .. "/from.json", "-q")
    assert.are.equal(0, code, err)
    assert.truthy(out:find(("estimated (%d GPUs): step time %.4f s"):format(rec.performance_cost.devices_used or 8,
      rec.performance_cost.step_time), 1, true), out)
    assert.truthy(H.read(dir .. "/from.json"):find("gemm_efficiency", 1, true))
  end)

  it("a log of another framework or global batch than the job's is refused, saying what to give", function()
    local lines = {}
    for k = 1, 5 do lines[k] = megatron_line(k, 5, 1000.0, 100.0, 8.0) end
    local log = write(dir .. "/other.log", table.concat(lines, "\n") .. "\n")
    -- the policy's job is fsdp2 (TorchTitan): a Megatron-LM log is not of it
    local err = one_line(apsearch("calibrate", "--log", log, POLICY, "--strategy", "fsdp_degree=8"))
    assert.truthy(err:find("calibrate: --log: a megatron log, but the job's framework is fsdp2", 1, true), err)
    -- the log's global batch (64) against a job of 128
    err = one_line(apsearch("calibrate", "--log", log, POLICY, "--set", "training.framework=megatron",
      "--set", "training.global_batch_size=128", "--strategy", "dp_degree=8"))
    assert.truthy(err:find("the log's global batch size is 64, the job's 128", 1, true), err)
    assert.truthy(err:find("(--set training.global_batch_size=64)", 1, true), err)
  end)

  it("a measurement no GPU could make is refused before anything is printed, as validate refuses the row",
    function()
    -- a breaker's eleventh round: a step of 1e-310 ms printed inf and nan,
    -- exited 0 and wrote a calibration of nulls; TorchTitan's tps 1e-320
    -- printed its report after the error; a memory line of 1e-320 MB
    local job = { POLICY, "--set", "training.framework=megatron", "--strategy", "tp_degree=4,dp_degree=2" }
    local lines = {}
    for k = 1, 5 do lines[k] = (megatron_line(k, 5, 1000.0, 100.0, 8.0):gsub("%(ms%): 1000%.0", "(ms): 1e-310")) end
    local log = write(dir .. "/denorm.log", table.concat(lines, "\n") .. "\n")
    local calib = dir .. "/denorm.json"
    local err = one_line(apsearch("calibrate", "--log", log, "-o", calib, table.unpack(job)))
    assert.truthy(err:find(log .. ": the log's median step time (s), 1.0000000000132873e-313, is outside [", 1, true),
      err)
    assert.truthy(err:find("the physical bounds for this job (0.01 % of h100-sxm-80gb's bf16 peak", 1, true), err)
    assert.is_nil(H.read(calib))
    for k = 1, 5 do lines[k] = megatron_line(k, 5, 5000.0, 100.0, 8.0) end
    lines[6] = "[Rank 0] (after 4 iterations) memory (MB) | allocated: 1e-320 | max allocated: 1e-320 | " ..
      "reserved: 1e-320 | max reserved: 1e-320"
    log = write(dir .. "/denorm_mem.log", table.concat(lines, "\n") .. "\n")
    err = one_line(apsearch("calibrate", "--log", log, table.unpack(job)))
    assert.truthy(err:find("the log's memory (GiB), 9.8813129168249309e-324, is outside [0.1, 87.61]", 1, true), err)
  end)

  it("a step time the efficiencies' bounds cannot reach ends at the bound, and says so", function()
    local before = estimate("--strategy", "fsdp_degree=8")
    -- the policy's job is TorchTitan's (fsdp2): its step lines, at 100 x the
    -- estimated step (64 x 8,192 tokens per step over 8 GPUs)
    local lines = {}
    for k = 1, 5 do
      lines[k] = ("step: %d  loss:  8.0000  memory: 10.00GiB(10.00%%)  tps: %.0f"):format(k,
        64 * 8192 / (8 * before.step_time * 100))
    end
    local log = write(dir .. "/slow.log", table.concat(lines, "\n") .. "\n")
    local code, out, err = apsearch("calibrate", "--log", log, POLICY, "--strategy", "fsdp_degree=8",
      "-o", dir .. "/slow.json", "-q")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("at the bound of the fields' physical range", 1, true), out)
    local c = cjson.decode(H.read(dir .. "/slow.json"))
    -- gemm_efficiency's lower bound (calibration.FIELDS, 0.30) is reached
    -- first: 0.30 / 0.639 (the H100 preset) = 0.469 of the scale, above
    -- attention's 0.10 / 0.3257 (TorchTitan's FlashAttention-2, apsearch.
    -- stacks) = 0.307; attention moves with it, 0.3257 x 0.469 = 0.1529
    local stacks = require "apsearch.stacks"
    near(0.30, c.devices["h100-sxm-80gb"].gemm_efficiency, 1e-6)
    near(stacks.H100_FA2_ATTENTION * 0.30 / 0.639, c.devices["h100-sxm-80gb"].attention_efficiency, 1e-6)
  end)
end)

describe("calibrate.fit_scale", function()
  local calibrate = require "apsearch.calibrate"

  it("recovers the scale of a known step-time model", function()
    -- step = 2 s of communication + 8 s of GEMMs at efficiency 0.6 and 1 s of
    -- attention at 0.2; the run measured the GEMMs and attention at 0.75 x
    local function step(f) return 2 + 8 * 0.6 / f.gemm_efficiency + 0.2 / f.attention_efficiency end
    local measured = step({ gemm_efficiency = 0.45, attention_efficiency = 0.15 })
    local calib, fit = calibrate.fit_scale({ device = "H100-SXM-80GB", base = { gemm_efficiency = 0.6,
      attention_efficiency = 0.2 }, estimate = step, measured_step_s = measured, name = "t", fitted_on = "t" })
    near(0.75, fit.scale, 1e-6)
    near(0.45, calib.devices["h100-sxm-80gb"].gemm_efficiency, 1e-6)
    near(0.15, calib.devices["h100-sxm-80gb"].attention_efficiency, 1e-6)
    near(11, fit.step_before)
    assert.is_nil(fit.at_bound)
    -- the scale range keeps both fields in their bounds: 0.30 / 0.6 .. 0.90 / 0.2 and 0.95 / 0.6
    near(0.5, fit.lo) near(0.95 / 0.6, fit.hi)
    assert.are.same({ "attention_efficiency", "gemm_efficiency" },
      (function() local k = {} for n in pairs(calib.devices["h100-sxm-80gb"]) do k[#k + 1] = n end table.sort(k) return k end)())
    assert.has_error(function() calibrate.fit_scale({ device = "h100-sxm-80gb", base = { gemm_efficiency = 0.6 },
      estimate = step, measured_step_s = 0, fitted_on = "x.log" }) end,
      "x.log: measured step time must be a positive number of seconds (got 0)")
  end)

  it("picks the job's fields by precision and attention kernel", function()
    assert.are.same({ "gemm_efficiency", "attention_efficiency" },
      calibrate.job_fields({ precision = "bf16", flash_attention = true }))
    assert.are.same({ "fp8_gemm_efficiency", "unfused_attention_efficiency" },
      calibrate.job_fields({ precision = "fp8", flash_attention = false }))
  end)
end)
