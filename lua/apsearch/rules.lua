--- Extension scripts: constraint rules, objectives and formatters, the
-- sandbox they run in, and the context rules see.  docs/writing-rules.md is
-- the user guide; this is the reference.
--
-- **A rule** is a table (a file in `rules/`, a file given with `--rules` or
-- in a policy's `constraints.rules`, or a table written in the policy):
--
--     return {
--       name = "tp_in_node",         -- unique; a rule of the same name replaces a built-in one
--       code = "TP_CROSSES_NODE",    -- reason code (upper case), default: NAME in upper case
--       cheap = true,                -- true (default): runs before the estimate
--       description = "tensor parallelism stays inside a node",
--       order = 500,                 -- optional: run order, lower first (default 1000)
--       codes = { "TP_CROSSES_NODE" },  -- optional: every code it may return
--       check = function(candidate, ctx, evaluation)
--         if candidate.tp_degree <= ctx.cluster.devices_per_node then return true end
--         return false, "TP_CROSSES_NODE", "tp_degree = " .. candidate.tp_degree .. " > 8 GPUs per node"
--       end,
--     }
--
-- `check(candidate, ctx[, evaluation])` returns `true` when the candidate
-- passes, else `false[, code[, message]]` (code defaults to the rule's,
-- message to its description).  Anything else (nil, a number, a code that
-- is not a string) is an error naming the rule's file and line.
--
-- * `candidate`: the strategy fields (dp_degree, fsdp_degree, tp_degree,
--   pp_degree, cp_degree, micro_batch_size, layer_recompute, ...; fields
--   the space does not vary are absent and take the core's defaults).
--   Read-only: the search reuses the table.
-- * `ctx` (see `context`): `ctx.model`, `ctx.cluster`, `ctx.training` (the
--   normalized inputs, every field filled) and the core's methods
--   `ctx:check(name, s)`, `ctx:evaluate(s)`, `ctx:estimate(s)`,
--   `ctx:flops(s)`, `ctx:inputs()`.
-- * `evaluation` (rules with `cheap = false` only): the table
--   `ctx:evaluate(candidate)` returned -- feasible, reason, message,
--   step_time [s], mem_peak [B], tokens_per_s_per_gpu, mfu,
--   micro_batch_num, worst_stage.  Read-only.
--
-- **An objective** is a table `{name=, description=, score=function(entry,
-- ctx) -> number}` (lower is better; `maximize = true` turns it around) or
-- `{name=, description=, better=function(a, b) -> boolean}` (true when a
-- ranks before b).  `entry` is the evaluation above plus `strategy` (the
-- candidate) and `index`.  A policy may also give a bare comparator
-- function as `objective`.
--
-- **A formatter** is a table `{name=, description=, render=function(result)
-- -> string}`; `result` is the search result of docs/outputs.md (a copy).
--
-- **The sandbox.**  Every such script is loaded as text only (mode "t":
-- precompiled bytecode is refused) into a fresh environment built from an
-- allowlist (`M.allowed`), and every call into it -- loading the file, each
-- `check`, each objective comparison, `render` -- runs under
-- `apsearch.sandbox` limits: an instruction limit and a memory cap per
-- call, which the script's own pcall cannot defeat (src/lua/lsandbox.c).
-- A failing script raises `<file>:<line>: <message>`, the label (`in rule
-- "x" (check)`) and a traceback; the CLI prints it and exits 2.
-- `--unsafe` (sandbox.configure{enabled = false}) gives scripts the full
-- global table, loads bytecode too, and lifts the limits.
-- Built-in rules (`rules/`) use the same API and loader; they are trusted,
-- so their checks are not metered per call.
-- @module apsearch.rules
local util = require "apsearch.util"
local sandbox = require "apsearch.sandbox"
-- apsearch's own modules (this file's directory): a limit that trips inside
-- one of their functions a script called (a read-only view's metamethod)
-- is reported at the script's line, not at theirs
sandbox.configure({ host_source = (debug.getinfo(1, "S").source:match("^(@.*/)[^/]*$") or "@?") })

local M = {}

--- Longest rejection message a rule's check may return, bytes: a longer
-- one is cut (and says its length) before the host reads it; one line of
-- the table or the report takes a few hundred.
M.MAX_MESSAGE_BYTES = 4096

local FIELDS = {
  name = "string", code = "string", cheap = "boolean", description = "string",
  check = "function", order = "number", core_check = "string", codes = "table",
}

local CODE_PATTERN = "^[A-Z][A-Z0-9_]*$"

--- Names the core's `ctx:check("all")` covers, in the core's order
-- (src/core/check.c, aps_check_all).
M.core_checks = { "degrees", "zero", "tp", "cp", "batch", "pp", "devices", "framework" }

------------------------------------------------------------------- sandbox

--- The globals a sandboxed script sees (everything else is absent):
-- base functions, the libraries `math`, `string` (without `dump`),
-- `table`, `utf8`, `coroutine` (copies: changing them changes nothing
-- outside), and safe replacements: `print` writes to stderr;
-- `setmetatable` refuses `__gc`; `getmetatable` answers for tables only;
-- `xpcall` skips the handler for a limit's error.  Not there: `os`, `io`,
-- `debug`, `package`, `require`, `load`, `loadfile`, `dofile`,
-- `collectgarbage`, `string.dump`.
M.allowed = {
  "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall",
  "print", "rawequal", "rawget", "rawlen", "rawset", "select", "setmetatable",
  "tonumber", "tostring", "type", "unpack", "xpcall", "_G", "_VERSION",
  "coroutine", "math", "string", "table", "utf8",
}

--- Globals of a stock Lua that the sandbox leaves out (for docs and tests).
M.forbidden = {
  "os", "io", "debug", "package", "require", "load", "loadfile", "dofile",
  "collectgarbage", "loadstring", "module", "warn",
}

local BASE = { "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal",
  "rawget", "rawlen", "rawset", "select", "tonumber", "tostring", "type" }

--- Most bytes scripts' `print` writes to stderr in a process; past it the
-- rest is dropped, said once (a breaker's rule wrote 5.8 GB in 20 s: a log
-- file fills the disk).
M.MAX_PRINT_BYTES = 16 << 20
local printed = 0

local function stderr_print(...)
  if printed > M.MAX_PRINT_BYTES then return end
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  local line = table.concat(parts, "\t", 1, parts.n) .. "\n"
  printed = printed + #line
  if printed > M.MAX_PRINT_BYTES then
    io.stderr:write(("apsearch: note: scripts printed more than %d MiB; the rest of their print output is " ..
      "dropped\n"):format(M.MAX_PRINT_BYTES >> 20))
    return
  end
  io.stderr:write(line)
end

local function safe_setmetatable(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc metamethods are not allowed in the sandbox", 2)
  end
  -- the error of a locked metatable (a view's) at the script's line
  local ok, r = pcall(setmetatable, t, mt)
  if not ok then error(r, 2) end
  return r
end

local function safe_getmetatable(v)
  if type(v) ~= "table" then return nil end
  return getmetatable(v)
end

--- True unless `--unsafe` lifted the sandbox.
-- @treturn boolean
function M.enabled()
  return sandbox.limits().enabled
end

--- The load mode of scripts: "t" (text only) in the sandbox, "bt" with
-- `--unsafe`.
-- @treturn string
function M.load_mode()
  return M.enabled() and "t" or "bt"
end

--- A fresh environment for a script (see `allowed`).  With `--unsafe`: a
-- table that reads through to the real globals (`print` still writes to
-- stderr, since stdout carries results).
-- @treturn table environment
function M.sandbox()
  if not M.enabled() then
    local env = setmetatable({ print = stderr_print }, { __index = _G })
    env._G = env
    return env
  end
  local env = {}
  for _, k in ipairs(BASE) do env[k] = _G[k] end
  env.math = util.copy(math)
  -- string: without dump, and find/match/gmatch/gsub metered (the stock
  -- matcher runs in C, out of the count hook's reach); the string
  -- metatable's __index is the same table, so ("").dump is nil too
  env.string = util.copy(sandbox.string)
  -- table and utf8: the functions whose work grows with their arguments
  -- (sort, concat, insert, remove, unpack, move; len, codepoint, offset,
  -- char) charged to the call before they run (src/lua/lsandbox.c)
  env.table = util.copy(sandbox.table)
  env.utf8 = util.copy(sandbox.utf8)
  -- coroutines charged for what they run after their last hook tick
  env.coroutine = util.copy(coroutine)
  env.coroutine.create = sandbox.co_create
  env.coroutine.resume = sandbox.co_resume
  env.coroutine.wrap = sandbox.co_wrap
  env.unpack = sandbox.table.unpack
  env._VERSION = _VERSION
  env.print = stderr_print
  env.setmetatable = safe_setmetatable
  env.getmetatable = safe_getmetatable
  env.xpcall = sandbox.xpcall
  env._G = env
  return env
end

-- Copies what a script returned as plain data: tables rebuilt with raw
-- access (next, no __pairs/__index/__newindex of the script's ever runs
-- outside the sandbox), metatables dropped except apsearch.util's array
-- mark; functions kept (they are wrapped before they are called).
-- A table that contains itself, nesting deeper than MAX_DEPTH, or a value
-- whose entries, written out as a tree (a subtable shared by n parents
-- counts n times), number more than MAX_ENTRIES, is refused with a
-- message rather than a stack overflow, or a walk of 2^40 paths, later.
-- Time linear in the distinct tables: a shared subtable is copied once
-- and its tree size remembered.
--- The deepest nesting a value a script returns may have.
M.MAX_DEPTH = 100
--- The most entries a value a script returns may hold, as a tree.
M.MAX_ENTRIES = 1000000

local function plain(v, st, depth)
  if type(v) ~= "table" then return v, 0 end
  if st.open[v] then error("a table contains itself (a cycle); policies are plain data", 0) end
  local r = st.seen[v]
  if r then return r, st.size[v] end
  if depth > M.MAX_DEPTH then
    error("tables nested deeper than " .. M.MAX_DEPTH .. " levels", 0)
  end
  r = {}
  local n = 0
  st.open[v] = true
  local k, x = next(v)
  while k ~= nil do
    local ck, nk = plain(k, st, depth + 1)
    local cx, nx = plain(x, st, depth + 1)
    r[ck], n = cx, n + 1 + nk + nx
    if n > M.MAX_ENTRIES then
      error(string.format("more than %d entries (counting a table shared by n parents n times)",
        M.MAX_ENTRIES), 0)
    end
    k, x = next(v, k)
  end
  st.open[v] = nil
  st.seen[v], st.size[v] = r, n
  if util.is_marked_array(v) then setmetatable(r, util.array_mt) end
  return r, n
end
M.plain = function(v) return (plain(v, { seen = {}, open = {}, size = {} }, 0)) end


-- Runs a loaded chunk in the sandbox and copies what it returned as plain
-- data; a load error or a cyclic / too-deep result names the file.  The
-- copy runs after the sandboxed call: raw accesses only (no metamethod of
-- the script's runs), bounded by what the script built.
local function run_chunk(chunk, err, name, label)
  if not chunk then
    err = tostring(err)
    if not err:find(name, 1, true) then err = name .. ": " .. err end
    error(err, 0)
  end
  local value = sandbox.wrap(chunk, string.format("%s %s", label, name))()
  local ok, r = pcall(M.plain, value)
  if not ok then error(name .. ": " .. tostring(r), 0) end
  return r
end

-- A script's source as `loadfile` would read it: a UTF-8 byte-order mark
-- and a first line starting with `#` (`#!/usr/bin/env lua`) dropped, the
-- line's end kept so that line numbers stay those of the file.
local function script_source(text)
  return (text:gsub("^\239\187\191", ""):gsub("^#[^\n]*", ""))
end

--- Loads a script file as text into `env` and runs it in the sandbox.
-- The file is read by `util.read_file` (a regular file, or refused at
-- once: a FIFO cannot block).
-- @tparam string path the file
-- @tparam[opt] table env environment (default: `sandbox()`)
-- @tparam[opt] string label what it is, for reports (default `"file"`)
-- @return the file's first return value, copied as plain data (see above)
-- @raise `<path>:<line>: <syntax error>`, `<path>: attempt to load a binary
--   chunk (mode is 't')`, `<path>: cannot open <label> (<reason>)`, or the
--   sandbox report of a runtime error or exceeded limit
function M.run_file(path, env, label)
  label = label or "file"
  local text, rerr = util.read_file(path)
  if not text then error(("%s: cannot open %s: %s"):format(path, label, rerr), 0) end
  local chunk, err = load(script_source(text), "@" .. path, M.load_mode(), env or M.sandbox())
  if not chunk and text:gsub("^\239\187\191", ""):match("^%s*[{%[]") then
    -- a Lua chunk cannot begin with { or [: a JSON file given where a
    -- script goes (most often a model's config.json as the policy)
    error(("%s: not a Lua %s: the file is JSON (a Hugging Face config.json is given with --model %s)")
      :format(path, label, path), 0)
  end
  return run_chunk(chunk, err, path, label)
end

--- Loads Lua source text like `run_file` (name labels it: `<name>:<line>`).
-- @tparam string text source
-- @tparam string name chunk name
-- @tparam[opt] table env environment
-- @tparam[opt] string label
-- @return the first return value, as plain data
function M.run_string(text, name, env, label)
  local chunk, err = load(text, "@" .. name, M.load_mode(), env or M.sandbox())
  return run_chunk(chunk, err, name, label or "chunk")
end

-- "<file>:<line>" where a function is defined
local function defined_at(fn)
  local info = debug.getinfo(fn, "S")
  if info.what == "C" then return "[C]" end
  return info.short_src .. ":" .. info.linedefined
end

-- raises a bad-return report (counted as a script failure)
local function bad_return(fn, label, what)
  sandbox.raise(string.format("%s: %s %s", defined_at(fn), label, what))
end

------------------------------------------------------------------- context

------------------------------------------------------------ read-only views

-- What the host hands a script (a candidate, an evaluation, an objective's
-- entries, ctx.model / cluster / training) is a read-only view: an empty
-- table whose locked metatable (`__metatable`, so setmetatable on it
-- raises) reads the host's table; a nested table read through a view is
-- a view too.  A view never hands out the table it reads, so a script can
-- neither change what the host reads nor plant a metamethod (__index,
-- __newindex, __pairs, __gc) where trusted code would run it.  `pairs`,
-- `ipairs`, `#` and indexing work; `next` sees an empty table.  Views are
-- cached per table and label: the search reuses one candidate table, so
-- a rule's candidate costs no allocation per call.
local view_data = setmetatable({}, { __mode = "k" })   -- view -> the table it reads
local view_mts = {}   -- label -> { mt = the views' metatable, of = table -> view }

local function view_of(t, what)
  local kind = view_mts[what]
  local v = kind.of[t]
  if v == nil then
    v = setmetatable({}, kind.mt)
    view_data[v] = t
    kind.of[t] = v
  end
  return v
end

-- the metatable of the views labelled `what` (one per label)
local function view_kind(what)
  local kind = view_mts[what]
  if kind then return kind end
  local function wrap(x)
    if type(x) == "table" then return view_of(x, what) end
    return x
  end
  local mt = {
    __index = function(v, k) return wrap(view_data[v][k]) end,
    __newindex = function(_, k)
      error(string.format("%s is read-only (tried to set %s)", what, tostring(k)), 2)
    end,
    __len = function(v) return rawlen(view_data[v]) end,
    __pairs = function(v)
      local t = view_data[v]
      return function(_, k)
        local nk, x = next(t, k)
        return nk, wrap(x)
      end, nil, nil
    end,
    __metatable = "read-only",
  }
  kind = { mt = mt, of = setmetatable({}, { __mode = "k" }) }
  view_mts[what] = kind
  return kind
end

--- A read-only view of t (see above); t is the host's plain data.
-- @param t a table (anything else is returned as is)
-- @tparam string what for the error of an assignment, e.g. `the candidate`
-- @return the view
function M.freeze(t, what)
  if type(t) ~= "table" then return t end
  view_kind(what)
  return view_of(t, what)
end

local Ctx = { __name = "apsearch.rule_context", __metatable = "apsearch.rule_context" }
Ctx.__index = Ctx
local contexts = setmetatable({}, { __mode = "k" })   -- core ctx -> Ctx
-- Ctx -> its core context, kept here and not as a field: a script that
-- reached the core context could change what is searched
-- (ctx:set_cluster puts another cluster into it)
local core_of = setmetatable({}, { __mode = "k" })

-- read-only candidate views (see rule_check) -> the candidate they show;
-- the core reads tables raw, so a view is handed over as its candidate
local views = setmetatable({}, { __mode = "k" })
local function unview(s) return views[s] or s end

-- the core context of a rule context, called as ctx:method (raises the
-- script's one-line error otherwise)
local function core_ctx(self, method)
  local c = core_of[self]
  if not c then error("call ctx:" .. method .. "(...) with a colon, on the ctx the search passed", 0) end
  return c
end

-- (each through sandbox.helper: an error names the script's line that
-- called the method, not this file)
--- ctx:check(name, strategy) -> true | false, code, message (a core check)
Ctx.check = sandbox.helper(function(self, name, s) return core_ctx(self, "check"):check(name, unview(s)) end)
--- ctx:evaluate(strategy) -> evaluation (feasible, step_time, mem_peak, ...)
Ctx.evaluate = sandbox.helper(function(self, s) return core_ctx(self, "evaluate"):evaluate(unview(s)) end)
--- ctx:estimate(strategy) -> the full estimate with breakdowns
Ctx.estimate = sandbox.helper(function(self, s) return core_ctx(self, "estimate"):estimate(unview(s)) end)
--- ctx:flops(strategy, convention) -> FLOPs per step
Ctx.flops = sandbox.helper(function(self, s, ...) return core_ctx(self, "flops"):flops(unview(s), ...) end)
--- ctx:inputs() -> {model, cluster, training}
Ctx.inputs = sandbox.helper(function(self) return core_ctx(self, "inputs"):inputs() end)

--- The context a rule or objective sees, for a core context
-- (`apsearch.core.context`): `model`, `cluster`, `training` (the inputs
-- with every default filled, from `ctx:inputs()`) and the methods check,
-- evaluate, estimate, flops, inputs.  The core context itself is not in
-- it (trusted code gets it with `M.core_of`).  One per core context
-- (cached); a context or a non-userdata is returned as is (so tests may
-- pass a plain table).
-- @param ctx a core context
-- @treturn table context
function M.context(ctx)
  if type(ctx) ~= "userdata" then return ctx end
  local c = contexts[ctx]
  if c then return c end
  local inputs = ctx:inputs()
  c = setmetatable({ model = M.freeze(inputs.model, "ctx.model"),
    cluster = M.freeze(inputs.cluster, "ctx.cluster"),
    training = M.freeze(inputs.training, "ctx.training") }, Ctx)
  contexts[ctx] = c
  core_of[c] = ctx
  return c
end

--- The core context of a rule context (`M.context`), for trusted code;
-- a core context is returned as is, anything else gives nil.
-- @param ctx a rule context or a core context
-- @return the core context, or nil
function M.core_of(ctx)
  if type(ctx) == "userdata" then return ctx end
  return core_of[ctx]
end

--------------------------------------------------------------------- rules

-- The check the search calls: the rule's function (in the sandbox unless
-- trusted) with the context, its return values checked.
local function rule_check(name, fn, code, description, trusted)
  local label = string.format('rule "%s" (check)', name)
  local call = trusted and fn or sandbox.wrap(fn, label)
  local ok_codes = {}
  local context = M.context
  -- A user rule sees the candidate read-only (a view, nested tables
  -- too): the search reuses one table per candidate, and a rule
  -- that wrote into it, or planted a metatable, would change what is
  -- searched or run its code in the host's.
  local cand_what, ev_what = label .. ": the candidate", label .. ": the evaluation"
  local function view(candidate)
    if trusted or type(candidate) ~= "table" then return candidate end
    local v = M.freeze(candidate, cand_what)
    views[v] = candidate
    return v
  end
  -- the evaluation, read-only too: the search ranks by it
  local function ev_view(evaluation)
    if trusted or evaluation == nil then return evaluation end
    return M.freeze(evaluation, ev_what)
  end
  return function(candidate, ctx, evaluation)
    local ok, c, msg = call(view(candidate), context(ctx), ev_view(evaluation))
    if ok == true then return true end
    if ok ~= false then
      bad_return(fn, label, "returned " .. util.describe(ok) ..
        " (expected true, or false[, code[, message]])")
    end
    if c == nil then
      c = code
    elseif not ok_codes[c] then
      if type(c) ~= "string" or not c:match(CODE_PATTERN) then
        bad_return(fn, label, "returned the reason code " .. util.describe(c) ..
          " (expected nil or an upper-case string like MY_RULE)")
      end
      ok_codes[c] = true
    end
    if msg == nil then
      msg = description
    elseif type(msg) ~= "string" then
      bad_return(fn, label, "returned the message " .. util.describe(msg) ..
        " (expected nil or a string)")
    end
    if #msg > M.MAX_MESSAGE_BYTES then
      -- cut before it is scanned: a rule returning a 96 MiB message cost the
      -- host 2.3 s a candidate, outside every sandbox limit (a breaker's
      -- round 10)
      msg = msg:sub(1, M.MAX_MESSAGE_BYTES) .. ("... (%d bytes, cut)"):format(#msg)
    end
    if msg:find("[%z\1-\31\127-\255]") then
      -- the message reaches the terminal's table and report.html: control
      -- characters (NUL, line breaks, escape sequences) as escapes
      msg = util.printable(msg)
    end
    return false, c, msg
  end
end

--- Validates a rule table, fills its defaults and wraps its check.
-- @tparam table t the rule
-- @tparam string source where it came from (file name), for errors
-- @tparam[opt] table opts `trusted = true`: the check is not run in the
--   sandbox (built-in rules)
-- @treturn table a validated copy: name, code, cheap (default true),
--   description (default the name), order (default 1000), core_check,
--   codes (default {code}), source, check (the wrapped function: calls the
--   rule's check in the sandbox with `context(ctx)`, checks what it
--   returned, fills code and message), check_raw (the rule's own function)
-- @raise `<source>: <field>: <problem> (got <value>)`
function M.normalize(t, source, opts)
  if type(t) ~= "table" then
    util.fail(source, "(rule)", "a rule file must return a table", t)
  end
  for k, v in pairs(t) do
    local kind = FIELDS[k]
    if not kind then util.fail(source, tostring(k), require("apsearch.suggest").unknown("unknown field", k, FIELDS), v) end
    if type(v) ~= kind then util.fail(source, k, "expected a " .. kind, v) end
  end
  if type(t.name) ~= "string" or t.name == "" then
    util.fail(source, "name", "required field is missing", t.name)
  end
  if type(t.check) ~= "function" then
    util.fail(source, "check", "required field is missing", t.check)
  end
  local code = t.code or t.name:upper():gsub("[^%w]", "_")
  if not code:match(CODE_PATTERN) then
    util.fail(source, "code", "expected an upper-case code like MY_RULE", t.code)
  end
  local codes = t.codes or { code }
  for i, c in ipairs(codes) do
    if type(c) ~= "string" or not c:match(CODE_PATTERN) then
      util.fail(source, "codes[" .. i .. "]", "expected an upper-case code like MY_RULE", c)
    end
  end
  local description = util.printable(t.description or t.name)
  local trusted = opts and opts.trusted or false
  return {
    name = t.name, code = code, cheap = t.cheap ~= false,
    description = description, order = t.order or 1000,
    core_check = t.core_check, source = source, codes = codes,
    check = rule_check(t.name, t.check, code, description, trusted),
    check_raw = t.check,
  }
end

--- Loads one rule file (text only, in the sandbox).
-- @tparam string path the file
-- @tparam[opt] table env environment (default: `sandbox()`)
-- @tparam[opt] table opts as for `normalize`
-- @treturn table the validated rule
-- @raise the file's syntax or runtime error, or a validation error
function M.load_file(path, env, opts)
  return M.normalize(M.run_file(path, env, "rule file"), path, opts)
end

--- Wraps a bare function from a policy as a cheap rule.
-- @tparam function fn `fn(candidate, ctx) -> ok[, code, message]`
-- @tparam integer i its position in the policy's rule list
-- @treturn table rule named `policy_rule_<i>` with code `POLICY_RULE`
function M.from_function(fn, i)
  local r = M.normalize({
    name = "policy_rule_" .. i, code = "POLICY_RULE", cheap = true,
    description = "rule function " .. i .. " of the policy", check = fn,
    order = 1000 + i,
  }, "policy")
  return r
end

local function by_order(a, b)
  if a.order ~= b.order then return a.order < b.order end
  return a.name < b.name
end

--- Loads every `*.lua` file of a directory as a rule, sorted by order.
-- @tparam string dir the rules directory (`<root>/rules`)
-- @tparam[opt] table opts `trusted` (default true: the built-in rules)
-- @treturn table array of rules (each marked `builtin = true` when trusted)
-- @raise when the directory cannot be listed or a file is invalid
function M.load_dir(dir, opts)
  local trusted = not (opts and opts.trusted == false)
  local names, err = util.listdir(dir)
  if not names then error(string.format("%s: cannot list rules directory: %s", dir, err), 0) end
  local list = {}
  for _, n in ipairs(names) do
    if n:match("%.lua$") then
      local r = M.load_file(util.join_path(dir, n), nil, { trusted = trusted })
      r.builtin = trusted or nil
      list[#list + 1] = r
    end
  end
  table.sort(list, by_order)
  return list
end

--- Merges built-in rules and policy rules: a policy rule whose name equals a
-- built-in one replaces it.  Result sorted by order.
-- @tparam table builtin array of rules
-- @tparam table extra array of rules
-- @treturn table merged array
function M.merge(builtin, extra)
  local byname, list = {}, {}
  for _, r in ipairs(builtin) do byname[r.name] = r end
  for _, r in ipairs(extra or {}) do byname[r.name] = r end
  for _, r in pairs(byname) do list[#list + 1] = r end
  table.sort(list, by_order)
  return list
end

---------------------------------------------------------------- objectives

local OBJECTIVE_FIELDS = { name = "string", description = "string", better = "function",
  score = "function", maximize = "boolean", unit = "string" }

-- An extension file's table: a table, with only known fields of the
-- right Lua types.
local function check_fields(t, fields, source, what, a_what)
  if type(t) ~= "table" then
    util.fail(source, "(" .. what .. ")", a_what .. " file must return a table", t)
  end
  for k, v in pairs(t) do
    local kind = fields[k]
    if not kind then util.fail(source, tostring(k), require("apsearch.suggest").unknown("unknown field", k, fields), v) end
    if type(v) ~= kind then util.fail(source, k, "expected a " .. kind, v) end
  end
end

--- Validates an objective table.
-- @tparam table t `{name, description, score | better, maximize, unit}`
-- @tparam string source where it came from, for errors
-- @treturn table validated copy with `source`
-- @raise `<source>: <field>: <problem> (got <value>)`
function M.normalize_objective(t, source)
  check_fields(t, OBJECTIVE_FIELDS, source, "objective", "an objective")
  if (t.score == nil) == (t.better == nil) then
    util.fail(source, "score", "give score = function(entry, ctx) or better = function(a, b), exactly one", t.score)
  end
  if t.maximize ~= nil and t.score == nil then
    util.fail(source, "maximize", "only with score", t.maximize)
  end
  local name = t.name or util.basename(source):gsub("%.lua$", "")
  return { name = name, description = t.description or name, score = t.score,
    better = t.better, maximize = t.maximize or false, unit = t.unit, source = source }
end

--- Loads an objective file (text only, in the sandbox).
-- @tparam string path
-- @treturn table validated objective (see `normalize_objective`)
function M.load_objective(path)
  return M.normalize_objective(M.run_file(path, nil, "objective file"), path)
end

--- The comparator of an objective for the search: calls the objective's
-- function in the sandbox and checks what it returns.  A `score` is
-- computed once per entry (kept as `entry.objective_value`); ties go to
-- the lower step time, then the lower peak memory.
-- @tparam table obj validated objective, or a bare comparator function
-- @tparam[opt] function make_ctx returns a core context (for `score`'s ctx)
-- @treturn function `better(a, b) -> boolean`
function M.objective_comparator(obj, make_ctx)
  if type(obj) == "function" then obj = { name = "custom", better = obj } end
  local label = string.format('objective "%s"', obj.name)
  -- the entries as the script sees them: read-only views, per call
  local what = label .. ": the entry"
  local function entry(e) return M.freeze(e, what) end
  if obj.better then
    local fn = obj.better
    local call = sandbox.wrap(fn, label .. " (better)")
    return function(a, b)
      local r = call(entry(a), entry(b))
      if type(r) ~= "boolean" then
        bad_return(fn, label .. " (better)", "returned " .. util.describe(r) .. " (expected true or false)")
      end
      return r
    end
  end
  local fn, maximize = obj.score, obj.maximize
  local call = sandbox.wrap(fn, label .. " (score)")
  local ctx
  local function score(e)
    local s = e.objective_value
    if s == nil then
      if ctx == nil and make_ctx then ctx = M.context(make_ctx()) end
      s = call(entry(e), ctx)
      -- a finite number: NaN orders nothing, and +-inf would reach every
      -- output as "inf" (or JSON's null)
      if type(s) ~= "number" or s ~= s or s == math.huge or s == -math.huge then
        bad_return(fn, label .. " (score)", "returned " .. util.describe(s) .. " (expected a finite number)")
      end
      e.objective_value = s
    end
    return s
  end
  return function(a, b)
    local x, y = score(a), score(b)
    if x ~= y then
      if maximize then return x > y end
      return x < y
    end
    x, y = a.step_time, b.step_time
    if x ~= y then return x < y end
    return a.mem_peak < b.mem_peak
  end
end

---------------------------------------------------------------- formatters

local FORMATTER_FIELDS = { name = "string", description = "string", render = "function",
  extension = "string" }

--- Validates a formatter table and wraps its render function: the result
-- is copied, render runs in the sandbox and must return a string.
-- @tparam table t `{name, description, render, extension}`
-- @tparam string source
-- @treturn table `{name, description, extension, source, render}`
function M.normalize_formatter(t, source)
  check_fields(t, FORMATTER_FIELDS, source, "formatter", "a formatter")
  if t.render == nil then util.fail(source, "render", "required field is missing", nil) end
  local name = t.name or util.basename(source):gsub("%.lua$", "")
  local fn = t.render
  local label = string.format('formatter "%s" (render)', name)
  local call = sandbox.wrap(fn, label)
  return {
    name = name, description = t.description or name, extension = t.extension,
    source = source,
    render = function(result)
      local s = call(util.deepcopy(result))
      if type(s) ~= "string" then
        bad_return(fn, label, "returned " .. util.describe(s) .. " (expected a string)")
      end
      return s
    end,
  }
end

--- Loads a formatter file (text only, in the sandbox).
-- @tparam string path
-- @treturn table formatter (see `normalize_formatter`)
function M.load_formatter(path)
  return M.normalize_formatter(M.run_file(path, nil, "formatter file"), path)
end

return M
