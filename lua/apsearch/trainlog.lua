--- Reads the training log of a Megatron-LM or TorchTitan run: per logged
-- iteration its step time, TFLOP/s per GPU, tokens/s per GPU, MFU and
-- loss, and the memory lines (`apsearch calibrate --log FILE`,
-- docs/accuracy.md "Calibrating on a training log").
--
-- Megatron-LM, the iteration line of megatron/training/training.py
-- `training_log` (printed by the last rank):
--   HEAD d98e8a64 (since 6cf285b238, 2026-01):
--     " [2026-01-27 16:53:38.123456] iteration 10/ 100 | consumed samples: 1280 |
--      elapsed time per iteration (ms): 10720.6 | throughput per GPU (TFLOP/s/GPU): 133.7 |
--      learning rate: ... | global batch size: 128 | lm loss: 2.557783E+00 | ..."
--   f427c6f0a1 (2024-03) to 6cf285b238: the same, timestamp to the second
--   before f427c6f0a1: no timestamp; before 2748e7c7d4 (2023-11) no
--     throughput field (it is printed only with --log-throughput anyway)
-- "elapsed time per iteration (ms)" is the mean over the log interval.
-- The memory line of report_memory (megatron/training/utils/common_utils.py
-- @ d98e8a64; megatron/utils.py before), one per data-parallel rank 0:
--   "[Rank 3] (after 10 iterations) memory (MB) | allocated: 26222.72 |
--    max allocated: 63359.77 | reserved: 66802.0 | max reserved: 66802.0"
-- where "MB" is MiB (the code divides by 1024 * 1024): torch.cuda
-- max_memory_allocated and max_memory_reserved since the start.
--
-- TorchTitan, torchtitan/components/metrics.py @ b5bcd76c `log`:
--   "step: 20  loss:  2.89959  grad_norm:  0.9573  memory:  9.46GiB(64.99%)
--    tps: 7,272  tflops: 0.52  mfu: 0.17%"
-- (ANSI colours unless disabled; mfu "N/A" under fp8 / MX since f113706c4;
-- no grad_norm before 2025-07).  `memory` is the peak of
-- reserved_bytes.all.peak (max reserved) in GiB since the previous logged
-- step (reset_peak_stats after each log line), `tps` tokens per second per
-- GPU (the rank's tokens over the interval, divided by the non-data-parallel
-- degree), `tflops` per GPU.  Before 99f73969e (2025-03, train.py
-- @ 4d182a13e) the field was "wps" with the same meaning, and no tflops
-- before 4e3266374 (2025-02).  TorchTitan logs no step time: it is the
-- job's tokens per step over (GPUs x tps), so only with the job.
-- "validate step:" lines (log_validation) are not training steps.
-- @module apsearch.trainlog
local util = require "apsearch.util"

local M = {}

--- Largest log file read (bytes).  A longer log: cut the part of the run
-- to measure (`sed -n`, `tail -c`).
M.MAX_FILE_BYTES = 256 << 20

--- Warm-up skipped by default: the first WARMUP_ITERATIONS logged
-- iterations or the first WARMUP_FRACTION of them, whichever is more,
-- always leaving one (the first iterations carry initialisation,
-- compilation and allocator growth).  `--skip N` overrides it.
M.WARMUP_ITERATIONS = 3
M.WARMUP_FRACTION = 0.10

--- Bytes per MiB (Megatron's "memory (MB)") and per GiB (TorchTitan's).
local MIB = 2 ^ 20
local GIB = 2 ^ 30
--- Seconds per millisecond (Megatron's "(ms)").
local MS = 1e-3
--- The first bytes of a gzip file.
local GZIP_MAGIC = "\x1f\x8b"

--- The iteration-line formats looked for, in the message of a log with none.
M.FORMATS_LOOKED_FOR = "Megatron-LM \"iteration N/ M | ... | elapsed time per iteration (ms): X |\", " ..
  "TorchTitan \"step: N  loss: X  ...  tps: N\" (or \"wps: N\")"

local function fail(path, lineno, problem)
  if lineno then error(("%s:%d: %s"):format(path, lineno, problem), 0) end
  error(("%s: %s"):format(path, problem), 0)
end

-- a decimal number as the frameworks print it ("1,234.5", "1.8E+00"), or nil
local function number(text)
  if type(text) ~= "string" then return nil end
  local t = text:gsub(",", "")
  if not t:match("^[+-]?%d+%.?%d*[eE]?[+-]?%d*$") and not t:match("^[+-]?%.%d+$") then return nil end
  local v = tonumber(t)
  if not util.is_finite(v) then return nil end
  return v
end

--- The values a log field may take, `{min, max, positive}` (`positive`:
-- above min, else at least min): a step time, throughput or memory of zero
-- or below, or beyond any run (1e300 ms), is a corrupt line, not a
-- measurement to compare an estimate with (it would print inf and nan).
M.RANGES = {
  time_ms = { 0, 1e9, true },       -- up to 11.6 days a step
  tflops = { 0, 1e5 },              -- TFLOP/s per GPU
  tokens = { 0, 1e12, true },       -- tokens/s per GPU
  batch = { 0, 2 ^ 31, true },      -- sequences
  loss = { 0, 1e9 },
  mfu = { 0, 1e3 },                 -- %
  memory_mib = { 0, 2 ^ 30, true }, -- Megatron's "memory (MB)"
  memory_gib = { 0, 2 ^ 20, true }, -- TorchTitan's "GiB"
}

-- raises `<path>:<line>: <what>: <name> must be ... (got <text>)` when
-- `v` is outside `range` (an entry of M.RANGES)
local function check_range(path, lineno, what, name, v, range, text)
  local lo, hi, positive = range[1], range[2], range[3]
  local problem
  if positive and v <= lo then
    problem = ("must be above %g"):format(lo)
  elseif v < lo then
    problem = ("must be at least %g"):format(lo)
  elseif v > hi then
    problem = ("must be at most %g"):format(hi)
  end
  if problem then fail(path, lineno, ("%s: %s %s (got %s)"):format(what, name, problem, util.describe(text))) end
  return v
end

-- The count `text` (the digits of an iteration, step or rank number) as an
-- integer; raises naming the file, line and field when it is past 2^53
-- (the log line of a corrupt file, not a run)
local function count(path, lineno, what, name, text)
  local v = #text <= 15 and math.tointeger(tonumber(text))
  if not v then
    fail(path, lineno, ("%s: %s must be below 10^15 (got %s)"):format(what, name, util.describe(text)))
  end
  return v
end

-- The value of the field `label` of a line ("label: value"), read up to the
-- next `stop` (Megatron " |", TorchTitan spaces).  nil when the line has no
-- such label; raises when it has one whose value is not a number or is
-- outside `range` (an entry of M.RANGES).
local function field(path, lineno, line, label, stop, what, range)
  local at = line:find(label, 1, true)
  if not at then return nil end
  local rest = line:sub(at + #label)
  local text = rest:match("^%s*([^" .. stop .. "]*)")
  text = text and util.rtrim(text) or ""
  local v = number(text)
  local name = label:gsub("^|%s*", ""):gsub(":%s*$", "")
  if v == nil then
    fail(path, lineno, ("%s: %s expected a number (got %s)"):format(what, name, util.describe(text)))
  end
  return check_range(path, lineno, what, name, v, range, text)
end

-- The loss of an iteration line (label "lm loss:" or "loss:"): a number,
-- or false when the framework printed a NaN or infinite loss ("nan",
-- "-inf": Megatron's "{:.6E}", TorchTitan's "{:7.4f}" of a diverged step,
-- whose time is still the step's); nil when the line has no loss.
local function loss_field(path, lineno, line, label, stop, what)
  local at = line:find(label, 1, true)
  if not at then return nil end
  local text = line:sub(at + #label):match("^%s*([^" .. stop .. "]*)")
  local word = text and util.rtrim(text):lower()
  if word == "nan" or word == "+nan" or word == "-nan" or word == "inf" or word == "+inf"
    or word == "-inf" then
    return false
  end
  return field(path, lineno, line, label, stop, what, M.RANGES.loss)
end

local function strip_ansi(line) return (line:gsub("\27%[[%d;]*[A-Za-z]", "")) end

-- Megatron-LM iteration line; nil when the line is none
local function megatron_line(path, lineno, line)
  local it, total = line:match("iteration%s+(%d+)/%s*(%d+)%s*|")
  if not it then return nil end
  local what = "Megatron-LM iteration line"
  local ms = field(path, lineno, line, "elapsed time per iteration (ms):", "|", what, M.RANGES.time_ms)
  if not ms then
    fail(path, lineno, what .. ": no \"elapsed time per iteration (ms): X |\" (a truncated line?)")
  end
  -- every field ends in " |": a line cut inside its last field is truncated
  if not line:match("|%s*$") then
    fail(path, lineno, what .. ": expected the line to end in \"|\" (a truncated line?)")
  end
  local format = line:match("%[%d+%-%d+%-%d+ %d+:%d+:%d+%.%d+%]%s*iteration") and "megatron-2026"
    or line:match("%[%d+%-%d+%-%d+ %d+:%d+:%d+%]%s*iteration") and "megatron-2024" or "megatron-2019"
  return {
    framework = "megatron", format = format,
    iteration = count(path, lineno, what, "iteration", it),
    train_iters = count(path, lineno, what, "iterations in total", total),
    step_seconds = ms * MS,
    tflops_per_gpu = field(path, lineno, line, "throughput per GPU (TFLOP/s/GPU):", "|", what,
      M.RANGES.tflops),
    global_batch_size = field(path, lineno, line, "global batch size:", "|", what, M.RANGES.batch),
    loss = loss_field(path, lineno, line, "lm loss:", "|", what),
  }
end

-- Megatron-LM report_memory line; nil when the line is none
local function megatron_memory(path, lineno, line)
  local rank, after = line:match("%[Rank (%d+)%] %(after (%d+) iterations%) memory %(MB%)")
  if not rank then return nil end
  local what = "Megatron-LM memory line"
  local m = { rank = count(path, lineno, what, "rank", rank), after = count(path, lineno, what, "after", after) }
  for key, label in pairs({ max_allocated = "| max allocated:", max_reserved = "| max reserved:" }) do
    local v = field(path, lineno, line, label, "|", what, M.RANGES.memory_mib)
    if not v then fail(path, lineno, what .. ": no \"" .. label:sub(3) .. " X\" (a truncated line?)") end
    m[key] = v * MIB
  end
  return m
end

-- What TorchTitan logs before its first step (torchtitan/trainer.py:1022
-- @ b5bcd76c: "Training starts at step {self.step + 1}"), on every rank.
local TORCHTITAN_START = "Training starts at step"

-- TorchTitan step line; nil when the line is none
local function torchtitan_line(path, lineno, line)
  local at, step = line:match("()step:%s*(%d+)%s+loss:")
  if not at or line:sub(1, at - 1):match("validate%s*$") then return nil end
  local what = "TorchTitan step line"
  local sep = " "
  local r = { framework = "torchtitan", iteration = count(path, lineno, what, "step", step) }
  r.loss = loss_field(path, lineno, line, "loss:", sep, what)
  r.tokens_per_s_per_gpu = field(path, lineno, line, "tps:", sep, what, M.RANGES.tokens)
  r.format = "torchtitan-tps"
  if not r.tokens_per_s_per_gpu then
    r.tokens_per_s_per_gpu = field(path, lineno, line, "wps:", sep, what, M.RANGES.tokens)
    r.format = "torchtitan-wps"
  end
  if not r.tokens_per_s_per_gpu then
    fail(path, lineno, what .. ": no \"tps: N\" (or \"wps: N\") (a truncated line?)")
  end
  r.tflops_per_gpu = field(path, lineno, line, "tflops:", sep, what, M.RANGES.tflops)
  local mfu = line:match("mfu:%s*(%S+)")
  if mfu and mfu ~= "N/A" then
    local v = number(mfu:match("^(.-)%%$"))
    if v == nil then fail(path, lineno, what .. ": mfu expected a percentage or N/A (got " .. util.describe(mfu) .. ")") end
    r.mfu_pct = check_range(path, lineno, what, "mfu", v, M.RANGES.mfu, mfu)
  end
  local mem = line:match("memory:%s*(%S+)")
  if mem then
    local v = number(mem:match("^(.-)GiB"))
    if v == nil then fail(path, lineno, what .. ": memory expected X.XXGiB(Y%) (got " .. util.describe(mem) .. ")") end
    r.max_reserved = check_range(path, lineno, what, "memory", v, M.RANGES.memory_gib, mem) * GIB
  end
  return r
end

local function median(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  local n = #s
  if n == 0 then return nil end
  if n % 2 == 1 then return s[(n + 1) // 2] end
  return (s[n // 2] + s[n // 2 + 1]) / 2
end

--- The iterations skipped by default in a log of `n` logged iterations
-- (M.WARMUP_ITERATIONS or M.WARMUP_FRACTION, whichever is more, leaving one).
-- @tparam integer n
-- @treturn integer
function M.default_skip(n)
  local k = math.max(M.WARMUP_ITERATIONS, math.ceil(M.WARMUP_FRACTION * n))
  return math.max(0, math.min(k, n - 1))
end

--- Parses the text of a training log.
-- @tparam string text the log
-- @tparam string path its name, for messages
-- @treturn table `{framework = "megatron"|"torchtitan", format, iterations =
--   {{iteration, step_seconds (s; Megatron), tflops_per_gpu,
--   tokens_per_s_per_gpu (TorchTitan), mfu_pct (TorchTitan), loss (false:
--   a NaN or infinite loss was logged),
--   global_batch_size (Megatron), max_reserved (bytes; TorchTitan)}...} in log
--   order, one per step (a step logged by several ranks: the first line),
--   memory = {{rank, after, max_allocated, max_reserved} (bytes)...}
--   (Megatron), duplicates = lines of a step already seen, path}`
-- @raise `<path>:<line>: ...` on an iteration or memory line that cannot be
--   read; `<path>: ...` when no iteration line is found, or when lines of
--   both frameworks are
function M.parse(text, path)
  local log = { iterations = {}, memory = {}, duplicates = 0, path = path }
  local seen = {}
  local lineno = 0
  for raw in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    local line = strip_ansi(raw:gsub("\r$", ""))
    local r = megatron_line(path, lineno, line) or torchtitan_line(path, lineno, line)
    if r then
      if log.framework and log.framework ~= r.framework then
        fail(path, lineno, ("a %s line in a %s log (line %d): one run's log expected"):format(
          r.framework, log.framework, log.first_line))
      end
      log.framework, log.format = r.framework, log.format or r.format
      log.first_line = log.first_line or lineno
      r.line = lineno
      -- Megatron-LM prints the iteration line on the last rank only
      -- (print_rank_last): an iteration again, or one going back, is a
      -- restart, whose segments would mix in one median
      local last = log.iterations[#log.iterations]
      if r.framework == "megatron" and last and r.iteration <= last.iteration then
        fail(path, lineno, ("iteration %d after iteration %d (line %d): the run restarted; give the log of one " ..
          "run (e.g. the lines from %d on: sed -n '%d,$p')"):format(r.iteration, last.iteration, last.line, lineno,
          lineno))
      end
      -- TorchTitan logs a step on every rank, and the ranks meet in every
      -- step's collectives, so a rank's line is at most one logged step
      -- behind another's: a step two logged steps back is a restart
      if r.framework == "torchtitan" and last and r.iteration < last.iteration then
        local later = 0
        for _, x in ipairs(log.iterations) do if x.iteration > r.iteration then later = later + 1 end end
        if later >= 2 then
          fail(path, lineno, ("step %d after step %d (line %d): the run restarted; give the log of one run (e.g. "
            .. "the lines from %d on: sed -n '%d,$p')"):format(r.iteration, last.iteration, last.line, lineno, lineno))
        end
      end
      if seen[r.iteration] then
        log.duplicates = log.duplicates + 1
        -- the peak memory of any rank that logged the step
        local first = seen[r.iteration]
        if r.max_reserved and (first.max_reserved or 0) < r.max_reserved then first.max_reserved = r.max_reserved end
      else
        seen[r.iteration] = r
        log.iterations[#log.iterations + 1] = r
      end
    elseif #log.iterations > 0 and line:find(TORCHTITAN_START, 1, true) then
      -- every rank says it before its first step: after a step line, the
      -- run started again (from a checkpoint), and its steps would be read
      -- as other ranks' lines of the same steps
      local last = log.iterations[#log.iterations]
      fail(path, lineno, ("%q after step %d (line %d): the run restarted; give the log of one run (e.g. " ..
        "the lines from %d on: sed -n '%d,$p')"):format(TORCHTITAN_START, last.iteration, last.line, lineno, lineno))
    else
      local m = megatron_memory(path, lineno, line)
      if m then m.line = lineno log.memory[#log.memory + 1] = m end
    end
  end
  if #log.iterations == 0 then
    fail(path, nil, "no training iteration line found; looked for " .. M.FORMATS_LOOKED_FOR)
  end
  if #log.memory > 0 and log.framework ~= "megatron" then
    fail(path, log.memory[1].line, "a Megatron-LM memory line in a TorchTitan log: one run's log expected")
  end
  return log
end

--- Reads and parses a training log file (plain text; at most
-- M.MAX_FILE_BYTES).
-- @tparam string path
-- @treturn table as M.parse
-- @raise `<path>: cannot read ...`, or M.parse's errors
function M.load(path)
  local text, err = util.read_file(path, M.MAX_FILE_BYTES)
  if not text then fail(path, nil, "cannot read: " .. tostring(err)) end
  if text:sub(1, #GZIP_MAGIC) == GZIP_MAGIC then fail(path, nil, "a gzip file: give the plain log (gunzip it)") end
  return M.parse(text, path)
end

--- Summarises a parsed log: the medians over the iterations after the
-- warm-up.
-- @tparam table log from M.parse / M.load
-- @tparam[opt] integer skip logged iterations to skip (default M.default_skip)
-- @treturn table `{framework, format, logged, skipped, used, first, last
--   (iteration numbers used), step_seconds (s; Megatron, nil for
--   TorchTitan), tflops_per_gpu, tokens_per_s_per_gpu (TorchTitan),
--   mfu_pct, loss (at the last iteration used; nil when not logged or
--   not finite), nonfinite_losses (used iterations that logged a NaN or
--   infinite loss; their times are used), global_batch_size
--   (Megatron, the last used), memory = {max_allocated, max_reserved
--   (bytes, the largest over the lines; nil when not logged), kind, lines,
--   ranks}, duplicates}`
-- @raise `<path>: --skip ...` when skip leaves no iteration
function M.summary(log, skip)
  local n = #log.iterations
  if skip == nil then skip = M.default_skip(n) end
  if skip >= n then
    fail(log.path, nil, ("--skip %d leaves no iteration: the log has %d logged iterations"):format(skip, n))
  end
  local used = {}
  for i = skip + 1, n do used[#used + 1] = log.iterations[i] end
  local function med(key)
    local xs = {}
    for _, r in ipairs(used) do if r[key] then xs[#xs + 1] = r[key] end end
    return median(xs)
  end
  local nonfinite = 0
  for _, r in ipairs(used) do
    if r.loss == false then nonfinite = nonfinite + 1 end
  end
  local s = {
    framework = log.framework, format = log.format, logged = n, skipped = skip, used = #used,
    first = used[1].iteration, last = used[#used].iteration, duplicates = log.duplicates,
    step_seconds = med("step_seconds"), tflops_per_gpu = med("tflops_per_gpu"),
    tokens_per_s_per_gpu = med("tokens_per_s_per_gpu"), mfu_pct = med("mfu_pct"),
    loss = used[#used].loss or nil, nonfinite_losses = nonfinite,
    global_batch_size = used[#used].global_batch_size,
  }
  local mem = { lines = 0, ranks = 0 }
  if log.framework == "megatron" then
    mem.kind = "torch.cuda max allocated and max reserved since the start, the largest over the ranks' lines"
    local ranks = {}
    for _, m in ipairs(log.memory) do
      mem.lines = mem.lines + 1
      if not ranks[m.rank] then ranks[m.rank] = true mem.ranks = mem.ranks + 1 end
      mem.max_allocated = math.max(mem.max_allocated or 0, m.max_allocated)
      mem.max_reserved = math.max(mem.max_reserved or 0, m.max_reserved)
    end
  else
    -- the peak since the previous line: the largest over every logged step
    -- (warm-up included: its peak is a peak of the run)
    mem.kind = "reserved_bytes.all.peak, the largest over the logged steps"
    for _, r in ipairs(log.iterations) do
      if r.max_reserved then
        mem.lines = mem.lines + 1
        mem.max_reserved = math.max(mem.max_reserved or 0, r.max_reserved)
      end
    end
  end
  s.memory = mem
  return s
end

return M
