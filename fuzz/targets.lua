--- The Lua side of the apsearch fuzz targets (fuzz/harness.c runs it;
-- docs/fuzzing.md).  `setup(name, tmp)` returns the function the harness
-- calls with each input (a string); it returns nil, or a finding (a
-- string: what went wrong and the error, with its traceback), on which the
-- harness aborts so that libFuzzer keeps the input.
--
-- Every target goes through the entry point a user reaches: the CLI's
-- `main` with the arguments of `apsearch ...`, with the input written to a
-- file in the target's temporary directory `tmp` (the harness's own), run
-- from that directory.  Outputs (`run --out`) go to `tmp/out` only:
-- `apsearch.outdir.open` is redirected there, so no input can make a
-- target write anywhere else.
--
-- A finding is a Lua error that is not a clean message (`M.finding`): one
-- raised by the Lua VM itself (`attempt to index a nil value` in
-- apsearch's code) or by a function of the Lua libraries (`bad argument
-- #1 to 'format'`, a failed `assert`) rather than by apsearch's `error` or
-- its C modules; an error object that is not a string, or an empty one;
-- a message whose first line names a position in a Lua file that is not
-- the input's own (an internal error passed on: `.../lua/apsearch/hf.lua:
-- 120: ...`), or that begins as the VM's messages begin
-- (M.RUNTIME_ERRORS) with no position of the input's own code.  Quoted
-- parts of a message are left out of the last two tests: they are the
-- input's own text, quoted back.  A rejection -- `fuzz_config.json:
-- hidden_size: must be a positive integer (got -1)` -- is fine: that is
-- apsearch doing its job.  The validation rows that `apsearch validate`
-- reports as "not estimated" are held to the message tests, and errors
-- raised inside the policy helpers (`hf()`, `range()`, ...), which the
-- sandbox reports at the policy's line, to all of them (`helper_probe`).
local lfs = require "lfs"
local util = require "apsearch.util"

local M = {}

--- Instruction limit of one sandboxed call in the fuzz targets (Lua VM
-- instructions; the CLI's default is 100,000,000, about half a second: an
-- input that loops would cost that much on every execution).
M.SANDBOX_INSTRUCTIONS = 1000000
--- Memory cap of one sandboxed call, MiB (the CLI's default is 256).
M.SANDBOX_MEMORY_MIB = 64
--- Time limits of one sandboxed call in the sandbox target, seconds
-- (wall clock and CPU; the CLI's defaults are 10 and 5).
M.SANDBOX_SECONDS = 1
--- The sandbox target's oracle for time: a run (loading the rule, one
-- check) may take at most this many times M.SANDBOX_SECONDS, plus
-- M.SANDBOX_SLACK_SECONDS (start-up, the search of one candidate).
M.SANDBOX_CALLS = 2
M.SANDBOX_SLACK_SECONDS = 1
--- The oracle for memory: the last sandboxed call may grow the state by
-- at most twice the cap (the allocator's hard bound) plus this many MiB
-- (the slack kept for the report).
M.SANDBOX_SLACK_MIB = 2
--- Largest search space a fuzz target searches (constraints.max_candidates
-- is lowered to it; a larger space is refused, as the CLI refuses one
-- above its limit): keeps one execution in the milliseconds.
M.MAX_CANDIDATES = 256
--- Most arguments the args target passes (one per input line).
M.MAX_ARGS = 64
--- Subcommands the args target runs: all but `calibrate` (it writes its
-- output file where the arguments say, and fits for seconds).
M.ARGS_COMMANDS = { estimate = true, run = true, inspect = true, presets = true,
  validate = true, help = true }
--- The policy the baseline target's result comes from (searched once, at
-- setup; each input is a baseline compared with it).
M.BASELINE_POLICY = "examples/llama3_8b_h100.lua"

--- How messages of the Lua VM and its libraries begin.  A message that
-- begins so (and has no position of the input's own code) is such an
-- error passed through apsearch as it was: a fault.
M.RUNTIME_ERRORS = { "attempt to ", "bad argument #", "stack overflow", "C stack overflow",
  "table index is ", "number has no integer representation", "invalid value (at index",
  "error in error handling", "string length overflow", "'for' initial value",
  "'for' limit", "'for' step", "(error object is a", "wrong number of arguments",
  "not enough memory", "invalid key to 'next'", "module '", "assertion failed!" }

-- The C functions of the Lua libraries and of the C modules apsearch's
-- Lua code calls (lfs, cjson), by name: one of them raising means
-- apsearch passed it what it cannot take (`bad argument #1 to 'format'`).
-- `error` is apsearch raising on purpose and is not in the list; `assert`
-- is (a failed assertion is not a message for a user).  apsearch's own C
-- modules (apsearch.core, apsearch.sandbox) raise their own messages.
local LIBRARY = {}
local function collect_library()
  local libs = { _G = _G, string = string, table = table, math = math, io = io, os = os,
    utf8 = utf8, coroutine = coroutine, debug = debug, lfs = require "lfs",
    cjson = require "cjson", file = getmetatable(io.stdout).__index }
  for lib, t in pairs(libs) do
    for k, v in pairs(t) do
      if type(v) == "function" and v ~= error and debug.getinfo(v, "S").what == "C" then
        LIBRARY[v] = (lib == "_G" and "" or (lib .. ".")) .. tostring(k)
      end
    end
  end
end

-- "file.lua" of each "file.lua:<line>:" in a line of text
local function positions(line)
  local list = {}
  for file in line:gmatch("([^%s\"'()%[%]<>,;=]+%.lua):%d+:") do list[#list + 1] = file end
  return list
end

-- whether a position's file (as Lua shortens it: "...tail.lua" when long)
-- is one of the input's own files
local function is_user(file, user)
  file = file:gsub("^%.%.%.", "")
  for _, u in ipairs(user) do
    if #file <= #u and u:sub(-#file) == file then return true end
  end
  return false
end

-- the line without its quoted parts ("..." and '...', backslash escapes
-- inside): the values apsearch quotes back are the input's text, which
-- may say anything ("stack overflow" in a CSV cell)
local function unquoted(line)
  local out, q, i = {}, nil, 1
  while i <= #line do
    local c = line:sub(i, i)
    if q then
      if c == "\\" then i = i + 1 elseif c == q then q = nil end
    elseif c == '"' or c == "'" then
      q = c
    else
      out[#out + 1] = c
    end
    i = i + 1
  end
  return table.concat(out)
end

--- The error handler of the targets: the error as a record, with what
-- raised it (level 2 of the stack: level 1 is this handler).
-- @param e the error object
-- @treturn table `{msg = e, raiser = nil | what (a Lua function: a
--   runtime error of the VM; a library function), trace = traceback}`
function M.on_error(e)
  local info = debug.getinfo(2, "Sf")
  local raiser
  if info and info.what ~= "C" then
    raiser = "a runtime error of the Lua VM in " .. info.short_src
  elseif info and LIBRARY[info.func] then
    raiser = "the library function " .. LIBRARY[info.func]
  end
  return { msg = e, raiser = raiser, trace = debug.traceback("", 2) }
end

--- Whether an error is a finding.
-- @param err an error record of `M.on_error`, or an error message
-- @tparam table user the input's own texts: its files (a position there
--   is the input's own code failing: a policy's own `x.y.z` on nil), the
--   arguments of the args target
-- @treturn string|nil why it is a finding, or nil for a clean message
function M.finding(err, user)
  local msg = err
  if type(err) == "table" and err.trace then
    if err.raiser then return "raised by " .. err.raiser end
    msg = err.msg
  end
  if type(msg) ~= "string" then return "the error is a " .. type(msg) .. ", not a message" end
  local first = msg:match("^[^\n]*")
  if first:match("^%s*$") then return "an empty error message" end
  -- a message that begins with the input's own text (a path it gave), as
  -- given or as the messages print it (util.printable escapes control
  -- bytes and bytes that are not UTF-8)
  local own = false
  for _, u in ipairs(user) do
    for _, form in ipairs({ u, util.printable(u) }) do
      if #form > 0 and first:sub(1, #form) == form then own = true end
    end
  end
  first = unquoted(first)
  for _, f in ipairs(positions(first)) do
    if not is_user(f, user) then return "the message names a position in " .. f .. ", not in the input" end
    own = true
  end
  if not own then
    for _, p in ipairs(M.RUNTIME_ERRORS) do
      if first:sub(1, #p) == p then return "a Lua runtime error (" .. p .. "), not a message" end
    end
  end
  return nil
end

-- an error record or message as text
local function describe(err)
  if type(err) == "table" and err.trace then return tostring(err.msg) .. err.trace end
  return tostring(err)
end

------------------------------------------------------------------ plumbing

local tmp     -- the target's temporary directory
local pending -- findings made along the way during the current input (by
              -- helper_probe and the JSON check), reported after it

-- the path of the first NaN or infinite number in v, or nil
local function nonfinite(v, path, seen)
  if type(v) == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return path end
  elseif type(v) == "table" and not seen[v] then
    seen[v] = true
    for k, x in pairs(v) do
      local p = nonfinite(x, path .. "." .. tostring(k), seen)
      if p then return p end
    end
  end
  return nil
end

-- Every JSON output (result.json, --format json) is checked for NaN and
-- infinite numbers before it is written: apsearch.format.json writes them
-- as null, which would hide them, and no input may produce one.
local function json_probe()
  local json = require "apsearch.format.json"
  local format = json.format
  json.format = function(v, ...)
    local p = nonfinite(v, "", {})
    if p then
      pending[#pending + 1] = "a NaN or infinite number in the JSON output, at " .. p ..
        ":\n" .. debug.traceback("", 2)
    end
    return format(v, ...)
  end
end

local function write(name, data)
  local path = tmp .. "/" .. name
  local f = assert(io.open(path, "wb"))
  assert(f:write(data))
  assert(f:close())
  return path
end

-- runs fn(...) in tmp and returns a finding or nil (the process's own
-- directory is libFuzzer's: corpus and crash files are relative to it)
local function check(user, fn, ...)
  local cwd = assert(lfs.currentdir())
  assert(lfs.chdir(tmp))
  local ok, err = xpcall(fn, M.on_error, ...)
  assert(lfs.chdir(cwd))
  if ok then return nil, err end
  local why = M.finding(err, user)
  if why then return why .. ":\n" .. describe(err) end
  return nil
end

-- `apsearch <args>`: a finding, or nil and main's exit status
local function apsearch(user, args)
  -- the limits every input starts from (an args input may change them)
  require("apsearch.sandbox").configure({ enabled = true,
    instructions = M.SANDBOX_INSTRUCTIONS, memory_mib = M.SANDBOX_MEMORY_MIB,
    seconds = require("apsearch.sandbox").DEFAULT_SECONDS,
    cpu_seconds = require("apsearch.sandbox").DEFAULT_CPU_SECONDS })
  local why, status = check(user, require("apsearch.cli").main, args)
  if why then return why end
  return nil, status
end

-- The policy helpers (hf, range, ... and the rule context's methods) are
-- wrapped by sandbox.helper, which reports an error at the script's line:
-- a fault inside a helper would look like the script's own error.  The
-- probe checks the helper's error before that.
local function helper_probe(sandbox)
  local helper = sandbox.helper
  sandbox.helper = function(fn)
    return helper(function(...)
      local r = table.pack(xpcall(fn, M.on_error, ...))
      if r[1] then return table.unpack(r, 2, r.n) end
      local msg = r[2].msg
      -- a sandbox limit reached inside the helper: the sandbox reports it
      local limit = type(msg) == "string" and
        (msg:find("limit exceeded", 1, true) or msg:find("^not enough memory"))
      local why = not limit and M.finding(r[2], {})
      if why then
        pending[#pending + 1] = "in a policy helper: " .. why .. ":\n" .. describe(r[2])
      end
      error(msg, 0)
    end)
  end
end

-- tmp holds links to the entries of examples/ (models/, rules/, ...; so a
-- policy written there finds what the examples find next to them), to
-- examples/ itself and to the test fixtures
local function link_tree(root)
  local function link(target, name)
    if lfs.symlinkattributes(tmp .. "/" .. name, "mode") == nil then
      assert(lfs.link(target, tmp .. "/" .. name, true))
    end
  end
  for name in lfs.dir(root .. "/examples") do
    if name ~= "." and name ~= ".." then link(root .. "/examples/" .. name, name) end
  end
  link(root .. "/examples", "examples")
  link(root .. "/tests/fixtures", "fixtures")
end

-------------------------------------------------------------------- targets

local targets = {}

--- config.json import: `apsearch inspect FILE` (apsearch.hf, the core's
-- model checks and parameter counts), then, for a config it accepts,
-- `apsearch estimate --model FILE` (the model in a search context: the
-- core's estimate of one strategy).
function targets.config_json()
  return function(data)
    local path = write("fuzz_config.json", data)
    local fmt = #data % 2 == 0 and "table" or "json"
    local why, status = apsearch({}, { "inspect", path, "--format=" .. fmt })
    if why or status ~= 0 then return why end
    return (apsearch({}, { "estimate", "--model=" .. path, "--format=" .. fmt, "--quiet" }))
  end
end

--- The CSV reader: `apsearch validate FILE` (apsearch.validate: the
-- reader, each row's inputs, the core's estimate and checks); each row
-- it reports as not estimated must carry a clean message too.
function targets.csv()
  local validate = require "apsearch.validate"
  local run, last = validate.run, nil
  validate.run = function(...)
    last = run(...)
    return last
  end
  return function(data)
    local path = write("fuzz_cases.csv", data)
    last = nil
    local why = apsearch({}, { "validate", path, "--format=" .. (#data % 2 == 0 and "table" or "json") })
    if why then return why end
    for _, case in ipairs(last and last.cases or {}) do
      if case.error then
        local w = M.finding(case.error, {})
        if w then return "row " .. tostring(case.case_id) .. ": " .. w .. ":\n" .. case.error end
      end
    end
    return nil
  end
end

--- The baseline reader: `apsearch run --baseline FILE` without its search
-- (searched once, at setup): apsearch.report.baseline's reader and diff,
-- and the result with the diff in every output (table, JSON, CSV, the
-- HTML report).
function targets.baseline()
  local policy = require("apsearch.policy").load(M.BASELINE_POLICY)
  local result = require("apsearch.search").run(policy)
  local baseline = require "apsearch.report.baseline"
  return function(data)
    local path = write("fuzz_result.json", data)
    return (check({}, function()
      local b, file = baseline.load(path)
      result.baseline_diff = baseline.diff(b, result, file, policy)
      for _, fmt in ipairs({ "table", "json", "csv" }) do
        require("apsearch.format." .. fmt).format(result)
      end
      require("apsearch.report.html").render(result, { echarts_missing = "fuzzing" })
      result.baseline_diff = nil
    end))
  end
end

--- The argument-string parsers: the input's lines are the arguments of
-- `apsearch <command> ...` (the first line is the command: estimate, run,
-- inspect, presets, validate or help; others are skipped; each line is
-- cut at its first NUL byte, as a C argv string ends there; and --unsafe is
-- skipped, since it would run the scripts a path names outside the
-- sandbox): the option parser, --set/--fix KEY=VALUE, ranges "lo..hi",
-- lists, --cluster DEVICE:NxG, --strategy k=v,...; `run` searches (spaces
-- up to M.MAX_CANDIDATES) and writes its outputs into tmp/out.
function targets.args()
  return function(data)
    local args = {}
    for line in (data .. "\n"):gmatch("([^\n]*)\n") do
      if #args >= M.MAX_ARGS then break end
      args[#args + 1] = line:match("^[^%z]*") -- a C argv string ends at NUL
    end
    if not M.ARGS_COMMANDS[args[1]] then return nil end
    local user = {}
    for _, a in ipairs(args) do
      if a:find("^%-%-unsafe") then return nil end
      user[#user + 1] = a
      user[#user + 1] = a:match("=(.*)$")
    end
    return (apsearch(user, args))
  end
end

--- Profiler traces: the input is a Kineto (Chrome trace-event) JSON
-- profile, read as `apsearch calibrate --trace FILE` without -o
-- (apsearch.trace: the reader, the launch, kernel-gap and step measures,
-- the GEMM and attention fits, what a calibration would hold); and what
-- apsearch.trace.calibration would write is a finding unless every value
-- is a finite number of at least 0 (a nan or inf would reach every
-- estimate that applies the file).
function targets.trace()
  local trace = require "apsearch.trace"
  return function(data)
    local path = write("fuzz_trace.json", data)
    local why, status = apsearch({}, { "calibrate", "--trace", path, "--quiet" })
    if why or status ~= 0 then return why end
    local ok, calib = pcall(trace.calibration, path)
    if not ok then return nil end -- refused: main said so above
    for dev, fields in pairs(calib.devices) do
      for k, v in pairs(fields) do
        if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge then
          return ("calibrate --trace would write devices.%s.%s = %s"):format(dev, k, tostring(v))
        end
      end
    end
    return nil
  end
end

--- Policy loading: the input is a policy file, run as `apsearch run
-- FILE --out tmp/out` (the sandbox with M.SANDBOX_* limits, the fields'
-- validation, the search with its rules and objective, every output).
function targets.policy()
  return function(data)
    local path = write("fuzz_policy.lua", data)
    return (apsearch({ path }, { "run", path, "--out=" .. tmp .. "/out", "--quiet",
      "--sandbox-instructions=" .. M.SANDBOX_INSTRUCTIONS,
      "--sandbox-memory-mib=" .. M.SANDBOX_MEMORY_MIB }))
  end
end

-- The sandbox target's policy: one candidate, so the input's rule runs
-- exactly once (and once when its file loads).
local ONE_CANDIDATE = [[
return {
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 1 },
  training = { global_batch_size = 64, seq_length = 8192 },
  search_space = { data_parallel = "auto", fsdp_degree = { 8 }, tp_degree = { 1 }, pp_degree = { 1 },
    cp_degree = { 1 }, micro_batch_size = { 1 }, zero_stage = { 0 }, layer_recompute = { "none" } },
}
]]

--- The sandbox, with its limits as oracles: the input is the body of a
-- rule's `check(c, ctx)` (a generated script: loops, string and table
-- functions on large inputs, metatables set on what it is handed,
-- coroutines, values returned), run as `apsearch run ONE --rules FILE`
-- with the M.SANDBOX_* limits.  Besides the findings of every target, the
-- run must end within M.SANDBOX_CALLS x M.SANDBOX_SECONDS (+ slack) and
-- its last call may not grow the state past twice the memory cap (+ the
-- report's slack): a limit that did not hold is a finding.
function targets.sandbox()
  local sandbox = require "apsearch.sandbox"
  local policy = write("one_candidate.lua", ONE_CANDIDATE)
  local clock = require("apsearch.core").monotime
  return function(data)
    local rule = write("fuzz_rule.lua", "return { name = 'fuzz', check = function(c, ctx)\n" ..
      data .. "\nend }\n")
    local t0 = clock()
    local why = apsearch({ rule }, { "run", policy, "--rules", rule, "--quiet",
      "--sandbox-instructions=" .. M.SANDBOX_INSTRUCTIONS,
      "--sandbox-memory-mib=" .. M.SANDBOX_MEMORY_MIB,
      "--sandbox-seconds=" .. M.SANDBOX_SECONDS, "--sandbox-cpu-seconds=" .. M.SANDBOX_SECONDS })
    if why then return why end
    local took = clock() - t0
    if took > M.SANDBOX_CALLS * M.SANDBOX_SECONDS + M.SANDBOX_SLACK_SECONDS then
      return string.format("the run took %.2f s, past its time limits (%g s per call)", took, M.SANDBOX_SECONDS)
    end
    local peak = sandbox.stats().peak_bytes
    if peak > (2 * M.SANDBOX_MEMORY_MIB + M.SANDBOX_SLACK_MIB) * 2 ^ 20 then
      return string.format("a call grew the state by %.1f MiB, past twice the %d MiB cap",
        peak / 2 ^ 20, M.SANDBOX_MEMORY_MIB)
    end
    return nil
  end
end

--- Prepares the target `name` and returns the function to run per input.
-- @tparam string name a target: config_json, csv, baseline, args, trace,
--   policy, sandbox
-- @tparam string dir the harness's temporary directory
-- @treturn function(data) -> nil | finding
function M.setup(name, dir)
  if not targets[name] then error("no fuzz target " .. tostring(name), 0) end
  tmp = dir
  collect_library()
  -- first: apsearch.rules wraps the rule context's methods when it loads
  helper_probe(require "apsearch.sandbox")
  json_probe()
  local root = util.root()
  link_tree(root)
  M.BASELINE_POLICY = util.join_path(root, M.BASELINE_POLICY)
  -- warnings and logs go to stderr, which is libFuzzer's
  if not os.getenv("APS_FUZZ_VERBOSE") then io.stderr = assert(io.open("/dev/null", "w")) end
  require("apsearch.schema").default_max_candidates = M.MAX_CANDIDATES
  local search = require "apsearch.search"
  local search_run = search.run
  search.run = function(policy, opts)
    local c = policy.constraints
    if c and (c.max_candidates or math.huge) > M.MAX_CANDIDATES then c.max_candidates = M.MAX_CANDIDATES end
    return search_run(policy, opts)
  end
  local outdir = require "apsearch.outdir"
  local open = outdir.open
  outdir.open = function() return open(tmp .. "/out") end
  local run = targets[name]()
  return function(data)
    pending = {}
    return run(data) or pending[1]
  end
end

return M
