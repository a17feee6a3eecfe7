-- tests/lua/sandbox_hostile_spec.lua -- issue 27 items 1 and 2, end to end
-- through the binary (APS_BIN): work the instruction count does not see
-- (C library functions that run long per call, single VM instructions on
-- long strings) and values that cross between the host and a script
-- (metatables planted on what a script is handed, cyclic or exponentially
-- shared tables returned).  Each hostile script must end the run with exit
-- status 2, nothing on stdout, and a first line naming the script's file
-- (and line), within a few seconds of its limit.  Every run is under
-- `timeout`, so a hang fails the test instead of blocking it.

local H = require "spec_helpers"
local q, read, write, tmpdir = H.q, H.read, H.write, H.tmpdir
local ROOT = os.getenv("APS_ROOT") or "."
local BIN = os.getenv("APS_BIN")

-- seconds `timeout` gives a run before it counts as a hang
local HANG_SECONDS = 30
-- seconds a run may take beyond its limit (start-up, building the
-- script's data, a loaded 2-core machine)
local SLACK_SECONDS = 4

local DIR

local POLICY = [[
return {
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 1 },
  training = { global_batch_size = 64, seq_length = 8192 },
  search_space = { data_parallel = "auto", fsdp_degree = { 1, 4, 8 }, tp_degree = { 1, 2 }, micro_batch_size = { 1, 2 } },
}
]]

-- Runs apsearch with args under `timeout`; returns the exit status, stdout,
-- stderr, the wall time and the CPU time (user + system) in seconds.
local function run(args)
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = q(a) end
  local out, err, meta, cpu = DIR .. "/stdout", DIR .. "/stderr", DIR .. "/meta", DIR .. "/cpu"
  local cmd = string.format(
    "cd %s && s=$(date +%%s%%N); APSEARCH_ROOT=%s /usr/bin/time -o %s -f '%%U %%S' " ..
    "timeout %d %s %s > %s 2> %s; rc=$?; e=$(date +%%s%%N); echo $rc $(( (e - s) / 1000000 )) > %s",
    q(DIR), q(ROOT), q(cpu), HANG_SECONDS, q(BIN), table.concat(quoted, " "), q(out), q(err), q(meta))
  os.execute(cmd)
  local rc, ms = (read(meta) or ""):match("(%d+) (%d+)")
  local user, sys = (read(cpu) or ""):match("([%d.]+) ([%d.]+)%s*$")
  return tonumber(rc), read(out) or "", read(err) or "", (tonumber(ms) or 0) / 1000,
    (tonumber(user) or 0) + (tonumber(sys) or 0)
end

-- Asserts a run stopped by the sandbox: exit 2, nothing on stdout, the
-- first line "apsearch: <file>[:<line>]: <what>", within limit + slack
-- seconds of CPU time (of wall-clock time too when `wall`: the machine
-- may be shared, so only the wall-clock limit is held to the wall clock;
-- `timeout` bounds every run).
local function stopped(file, what, limit, args, wall)
  local rc, out, err, secs, cpu = run(args)
  local first = err:match("^[^\n]*") or ""
  assert.are.equal(2, rc, err)
  assert.are.equal("", out)
  assert.truthy(first:find("^apsearch: " .. file:gsub("%p", "%%%0") .. "[:%d]*: "), first)
  assert.truthy(first:find(what, 1, true), what .. " not in: " .. first)
  assert.is_true(cpu < limit + SLACK_SECONDS, string.format("%.2f s CPU for a limit of %g s", cpu, limit))
  if wall then
    assert.is_true(secs < limit + SLACK_SECONDS, string.format("%.2f s for a limit of %g s", secs, limit))
  end
  if os.getenv("APS_HOSTILE_TIMES") then
    io.stderr:write(string.format("%-16s %5.2f s wall %5.2f s CPU  %s\n", file, secs, cpu, first))
  end
  return first, secs
end

local function rule_file(name, setup, body)
  return write(DIR .. "/" .. name, setup .. "\nreturn { name = 'h', check = function(c, ctx)\n" .. body .. "\nend }\n")
end

setup(function()
  assert.is_string(BIN, "APS_BIN must name the built apsearch binary")
  DIR = tmpdir()
  write(DIR .. "/policy.lua", POLICY)
end)

describe("limits that hold inside C functions and slow instructions (issue 27, item 1)", function()
  it("a loop comparing long strings stops at the wall-clock limit", function()
    rule_file("cmp.lua", 'local a, b = ("x"):rep(8 << 20) .. "a", ("x"):rep(8 << 20) .. "b"',
      "  local n = 0\n  while true do if a < b then n = n + 1 end end")
    stopped("cmp.lua", "cmp.lua:4: time limit exceeded: more than 2 s of wall-clock time", 2,
      { "run", "policy.lua", "--rules", "cmp.lua", "--sandbox-seconds", "2" }, true)
  end)

  it("a loop concatenating long strings stops at the CPU-time limit", function()
    rule_file("cat.lua", 'local a = ("x"):rep(8 << 20)',
      "  while true do local s = a .. 'y' end")
    stopped("cat.lua", "cat.lua:3: CPU time limit exceeded: more than 1 s of CPU time", 1,
      { "run", "policy.lua", "--rules", "cat.lua", "--sandbox-seconds", "0", "--sandbox-cpu-seconds", "1" })
  end)

  -- one instruction of the loop, a long call in C: charged before it runs
  local charged = {
    sort = { "local t = {} for i = 1, 1000000 do t[i] = -i end", "table.sort(t)" },
    sort_strings = { 'local p, t = ("x"):rep(1 << 16), {} for i = 1, 1500 do t[i] = p .. (i % 7) end',
      "table.sort(t)" },
    concat = { "local t = {} for i = 1, 1000000 do t[i] = 'abcdefgh' end", "local s = table.concat(t)" },
    rep = { 'local p = ("x"):rep(1 << 16)', "local s = p:rep(1024)" },
    upper = { 'local s = ("x"):rep(8 << 20)', "local u = s:upper()" },
    utf8_len = { 'local s = ("x"):rep(8 << 20)', "local n = utf8.len(s)" },
    insert = { "local t = {} for i = 1, 1000000 do t[i] = i end", "table.insert(t, 1, 0) table.remove(t, 1)" },
    unpack = { "local t = {} for i = 1, 900000 do t[i] = i end", "local a = select('#', table.unpack(t))" },
  }
  for name, case in pairs(charged) do
    it("a loop of " .. name .. " on a large input stops at the instruction limit", function()
      rule_file("c_" .. name .. ".lua", case[1], "  while true do " .. case[2] .. " end")
      -- (the time limits lifted: the charges alone must stop it)
      stopped("c_" .. name .. ".lua", "c_" .. name .. ".lua:3: instruction limit exceeded: more than 20000000", 1,
        { "run", "policy.lua", "--rules", "c_" .. name .. ".lua", "--sandbox-instructions", "20000000",
          "--sandbox-seconds", "0", "--sandbox-cpu-seconds", "0" })
    end)
  end

  it("a memory blow-up inside a coroutine stops at the memory cap", function()
    rule_file("co_mem.lua", "",
      "  coroutine.wrap(function() local t = {} while true do t[#t + 1] = ('x'):rep(64) .. #t end end)()")
    stopped("co_mem.lua", "co_mem.lua:3: memory limit exceeded: more than 32 MiB", 1,
      { "run", "policy.lua", "--rules", "co_mem.lua", "--sandbox-memory-mib", "32" })
  end)

  it("the time limits are settable, listed, and refused when bad", function()
    local rc, _, err = run({ "run", "policy.lua", "--sandbox-seconds", "-1" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("--sandbox-seconds: seconds: must be a number of seconds", 1, true), err)
    rc, _, err = run({ "run", "policy.lua", "--sandbox-cpu-seconds", "x" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("--sandbox-cpu-seconds", 1, true), err)
    local sandbox = require "apsearch.sandbox"
    local saved = sandbox.limits()
    assert.are.equal(sandbox.DEFAULT_SECONDS, saved.seconds)
    assert.are.equal(sandbox.DEFAULT_CPU_SECONDS, saved.cpu_seconds)
    sandbox.configure({ seconds = 2.5, cpu_seconds = 0 })
    assert.are.equal(2.5, sandbox.limits().seconds)
    assert.are.equal(0, sandbox.limits().cpu_seconds)
    sandbox.configure({ seconds = saved.seconds, cpu_seconds = saved.cpu_seconds })
  end)
end)

describe("trusted code never runs a script's metamethods (issue 27, item 2)", function()
  local LOOP = "{ __index = function() while true do end end, __newindex = function() while true do end end,\n" ..
    "  __pairs = function() while true do end end }"

  it("an objective cannot set a metatable on its entry", function()
    write(DIR .. "/o_meta.lua", "return { score = function(e, ctx)\n  setmetatable(e, " .. LOOP .. ")\n  return 1\nend }\n")
    stopped("o_meta.lua", "o_meta.lua:2: cannot change a protected metatable", 0,
      { "run", "policy.lua", "--objective", "o_meta.lua" })
  end)

  it("nor on the entry's strategy, in a comparator", function()
    write(DIR .. "/o_nested.lua", "return { better = function(a, b)\n  setmetatable(a.strategy, " .. LOOP .. ")\n  return true\nend }\n")
    stopped("o_nested.lua", "o_nested.lua:2: cannot change a protected metatable", 0,
      { "run", "policy.lua", "--objective", "o_nested.lua" })
  end)

  it("nor write into the entry the search ranks by", function()
    write(DIR .. "/o_write.lua", "return { score = function(e, ctx)\n  e.step_time = 0\n  return 1\nend }\n")
    stopped("o_write.lua", 'o_write.lua:2: objective "o_write": the entry is read-only (tried to set step_time)', 0,
      { "run", "policy.lua", "--objective", "o_write.lua" })
  end)

  it("a rule cannot set a metatable on ctx.cluster or its candidate", function()
    rule_file("r_ctx.lua", "", "  setmetatable(ctx.cluster, " .. LOOP .. ")\n  return true")
    stopped("r_ctx.lua", "r_ctx.lua:3: cannot change a protected metatable", 0,
      { "run", "policy.lua", "--rules", "r_ctx.lua" })
    rule_file("r_cand.lua", "", "  setmetatable(c, " .. LOOP .. ")\n  return true")
    stopped("r_cand.lua", "r_cand.lua:3: cannot change a protected metatable", 0,
      { "run", "policy.lua", "--rules", "r_cand.lua" })
  end)

  it("a rule cannot reach the core context (ctx:set_cluster would change the searched cluster)", function()
    rule_file("r_core.lua", "", "  ctx.core:set_cluster(ctx:inputs().cluster)\n  return true")
    stopped("r_core.lua", "r_core.lua:3: attempt to index a nil value (field 'core')", 0,
      { "run", "policy.lua", "--rules", "r_core.lua" })
    -- nothing the context holds is the core context (a userdata)
    rule_file("r_scan.lua", "", "  for k, v in pairs(ctx) do\n" ..
      "    if type(v) == 'userdata' then error('ctx.' .. tostring(k) .. ' is the core context') end\n" ..
      "  end\n  return true")
    local rc, _, err = run({ "run", "policy.lua", "--rules", "r_scan.lua", "--quiet" })
    assert.are.equal(0, rc, err)
    -- the methods need the ctx itself: a table in its place is refused
    rule_file("r_self.lua", "", "  ctx.evaluate({}, c)\n  return true")
    stopped("r_self.lua", "r_self.lua:3: call ctx:evaluate(...) with a colon, on the ctx the search passed", 0,
      { "run", "policy.lua", "--rules", "r_self.lua" })
  end)

  it("a rule returning an exponentially shared table is described, not walked", function()
    rule_file("r_ret.lua", "local t = {} for i = 1, 40 do t = { t, t, t, t, t, t } end", "  return t")
    stopped("r_ret.lua", 'r_ret.lua:2: rule "h" (check) returned {{{...}', 0,
      { "run", "policy.lua", "--rules", "r_ret.lua" })
  end)

  it("a policy returning an exponentially shared or cyclic table is refused at once", function()
    write(DIR .. "/p_shared.lua", "local t = {} for i = 1, 60 do t = { t, t } end\n" ..
      POLICY:gsub("return {", "return { notes = t,", 1))
    stopped("p_shared.lua", "more than 1000000 entries", 0, { "run", "p_shared.lua" })
    write(DIR .. "/p_cycle.lua", "local t = {} t.self = t\n" .. POLICY:gsub("return {", "return { notes = t,", 1))
    stopped("p_cycle.lua", "a table contains itself (a cycle)", 0, { "run", "p_cycle.lua" })
  end)

  it("a rule file's table is copied raw: its planted metamethods never run", function()
    write(DIR .. "/r_planted.lua", "return setmetatable({ name = 'planted', check = function() return true end },\n" ..
      "  { __index = function() error('planted') end, __pairs = function() error('planted') end })\n")
    local rc, out, err, secs = run({ "run", "policy.lua", "--rules", "r_planted.lua", "-q" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("feasible of", 1, true))
    assert.is_true(secs < SLACK_SECONDS)
  end)

  it("a formatter returning a table with metamethods is refused raw", function()
    write(DIR .. "/f_meta.lua", "return { render = function(r)\n  return setmetatable({}, { __tostring = function() while true do end end,\n" ..
      "    __concat = function() while true do end end, __len = function() while true do end end })\nend }\n")
    stopped("f_meta.lua", 'formatter "f_meta" (render) returned {} (expected a string)', 0,
      { "run", "policy.lua", "--formatter", "f_meta.lua", "-q" })
  end)

  it("a policy cannot choose where the run writes: outputs.dir stays beside it", function()
    -- a breaker pass (2026-12-05): outputs.dir = "/abs/path" created the
    -- directories and replaced an empty one of the user's with a link
    local victim = DIR .. "/victim"
    assert(os.execute("mkdir -p " .. q(victim .. "/empty")))
    for name, dir in pairs({ p_abs = victim .. "/empty", p_up = "../" .. victim:match("[^/]+$") .. "/x" }) do
      write(DIR .. "/" .. name .. ".lua", (POLICY:gsub("return {", "return { outputs = { dir = " .. q(dir) .. " },", 1)))
      stopped(name .. ".lua", "outputs.dir: must be a directory beside the policy (no absolute path, no ..); "
        .. "--out DIR writes anywhere else", 0, { "run", name .. ".lua", "-q" })
    end
    -- nor through a subdirectory that is a link out of it (a second
    -- breaker pass: a repository can ship the link with the policy)
    local outside = tmpdir()
    assert(os.execute("mkdir -p " .. q(outside .. "/empty") .. " && ln -s " .. q(outside) .. " " .. q(DIR .. "/linked")))
    write(DIR .. "/p_link.lua", (POLICY:gsub("return {", "return { outputs = { dir = 'linked/empty' },", 1)))
    stopped("p_link.lua", "outputs.dir: must be a directory beside the policy", 0, { "run", "p_link.lua", "-q" })
    local lfs = require "lfs"
    assert.are.equal("directory", lfs.symlinkattributes(outside .. "/empty", "mode"))
    assert.are.equal("directory", lfs.symlinkattributes(victim .. "/empty", "mode"))
    assert.is_nil(lfs.attributes(victim .. "/x"))
  end)
end)

-- a breaker's pass (2026-12-06): work in apsearch's own code after a
-- script or file has handed it a long string -- the "did you mean" edit
-- distance, blank trimming by patterns that take time quadratic in a run
-- of blanks -- and a rule's message written raw to stdout
describe("long input strings end at once, and a rule's message reaches no terminal raw (issue 27, item 4)", function()
  it("a 300,000-byte unknown key in a policy: one line, the key cut, no suggestion", function()
    write(DIR .. "/longkey.lua", (POLICY:gsub("return {", "local p = {", 1)) ..
      "p.training[string.rep('a', 300000)] = 1\nreturn p\n")
    local first = stopped("longkey.lua", "training." .. ("a"):rep(108) .. "...: unknown field", 0,
      { "run", "longkey.lua", "-q" })
    assert.is_nil(first:find("did you mean", 1, true))
    assert.is_true(#first < 400, #first)
  end)

  it("a config.json whose model_type is 3 MB long is refused at once", function()
    write(DIR .. "/bigtype.json", '{"model_type": "' .. ("a"):rep(3000000) .. '"}')
    stopped("bigtype.json", 'model_type: unsupported model type', 0, { "inspect", "bigtype.json" })
  end)

  it("a --set value and a CSV id of 100,000 blanks inside are trimmed in linear time", function()
    stopped("--set", 'training.seq_length: must be a positive integer (got "1' .. (" "):rep(56) .. "...",
      0, { "run", "policy.lua", "-q", "--set", "training.seq_length=1" .. (" "):rep(100000) .. "2" })
    -- and --strategy's pairs (the review: "%s*=%s*" over the blanks)
    stopped("--strategy", '(syntax): expected KEY=VALUE (got "x")', 0,
      { "estimate", "policy.lua", "-q", "--strategy", "tp_degree=1" .. (" "):rep(100000) .. "x" })
    local lines = {}
    for l in read(ROOT .. "/tests/fixtures/cases_small.csv"):gmatch("[^\n]+") do
      if not l:match("^#") then lines[#lines + 1] = l end
      if #lines == 2 then break end
    end
    lines[2] = lines[2]:gsub("^[^,]*", "c" .. (" "):rep(100000) .. "x", 1)
    write(DIR .. "/spaced.csv", table.concat(lines, "\n") .. "\n")
    local rc, _, err, secs = run({ "validate", "spaced.csv", "--format", "json" })
    assert.are.equal(0, rc, err)
    assert.is_true(secs < SLACK_SECONDS, secs)
    local util = require "apsearch.util"
    assert.are.same({ "a  b", "", "  a  b" }, { util.trim(" \t a  b \n "), util.trim("   "), util.rtrim("  a  b  ") })
  end)

  it("a rule's message with control characters is escaped on stdout", function()
    rule_file("r_ansi.lua", "", "return false, 'X', '\\27]0;pwned\\7\\27[2J\\0red'")
    local rc, out, err = run({ "run", "policy.lua", "--rules", "r_ansi.lua", "-q" })
    assert.are.equal(1, rc, err)
    assert.is_nil(out:find("[%z\27\7]"), out)
    assert.truthy(out:find("\\27]0;pwned\\7\\27[2J\\0red", 1, true), out)
  end)
end)
