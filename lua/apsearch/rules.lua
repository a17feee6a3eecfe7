--- Constraint rules: loading, validation and the sandbox they run in.
--
-- A rule is a table (one file in `rules/` returns one):
--
--     return {
--       name = "tp",                 -- unique; a policy rule of the same name replaces it
--       code = "TP_DIVISIBILITY",    -- filter reason code (upper case)
--       cheap = true,                -- true: runs before the estimate
--       description = "heads, query groups, hidden and FFN sizes divisible by tp_degree",
--       order = 50,                  -- optional: run order (lower first), default 1000
--       core_check = "tp",           -- optional: the ctx:check name it wraps
--       codes = { "TP_DIVISIBILITY" },  -- optional: every code it may return
--       check = function(candidate, ctx, evaluation)
--         return ctx:check("tp", candidate)   -- true | false, code, message
--       end,
--     }
--
-- Cheap rules get `(candidate, ctx)`; the others also get the evaluation
-- table `ctx:evaluate()` returned.  `check` returns true when the candidate
-- passes, else `false[, code[, message]]` (code defaults to the rule's).
-- Rule files run in a small sandbox: no os, io, debug, load, require, dofile.
-- @module apsearch.rules
local util = require "apsearch.util"

local M = {}

local FIELDS = {
  name = "string", code = "string", cheap = "boolean", description = "string",
  check = "function", order = "number", core_check = "string", codes = "table",
}

--- Names the core's `ctx:check("all")` covers, in the core's order
-- (src/core/check.c, aps_check_all).
M.core_checks = { "degrees", "zero", "devices", "cp", "tp", "batch", "pp" }

--- A fresh sandbox environment for rule and policy code: the safe parts
-- of the base library plus copies of math, string, table and utf8.  No os,
-- io, debug, load, loadfile, dofile, require, getmetatable; `print` writes
-- to stderr.
-- @treturn table environment
function M.sandbox()
  local env = {}
  for _, k in ipairs({ "assert", "error", "ipairs", "next", "pairs", "pcall",
    "select", "tonumber", "tostring", "type", "xpcall", "rawequal", "rawget",
    "rawlen", "setmetatable" }) do
    env[k] = _G[k]
  end
  env.math = util.copy(math)
  env.string = util.copy(string)
  env.table = util.copy(table)
  env.utf8 = util.copy(utf8)
  env.unpack = table.unpack
  env._VERSION = _VERSION
  env.print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    io.stderr:write(table.concat(parts, "\t", 1, parts.n), "\n")
  end
  env._G = env
  return env
end

--- Validates a rule table and fills its defaults.
-- @tparam table t the rule
-- @tparam string source where it came from (file name), for errors
-- @treturn table a validated copy (`order` defaults to 1000, `cheap` to true,
--   `description` to the name)
-- @raise `<source>: <field>: <problem> (got <value>)`
function M.normalize(t, source)
  if type(t) ~= "table" then
    util.fail(source, "(rule)", "a rule file must return a table", t)
  end
  for k, v in pairs(t) do
    local kind = FIELDS[k]
    if not kind then util.fail(source, tostring(k), "unknown field", v) end
    if type(v) ~= kind then util.fail(source, k, "expected a " .. kind, v) end
  end
  if type(t.name) ~= "string" or t.name == "" then
    util.fail(source, "name", "required field is missing", t.name)
  end
  if type(t.check) ~= "function" then
    util.fail(source, "check", "required field is missing", t.check)
  end
  local code = t.code or t.name:upper():gsub("[^%w]", "_")
  if not code:match("^[A-Z][A-Z0-9_]*$") then
    util.fail(source, "code", "expected an upper-case code like MY_RULE", t.code)
  end
  return {
    name = t.name, code = code, cheap = t.cheap ~= false,
    description = t.description or t.name, check = t.check,
    order = t.order or 1000, core_check = t.core_check, source = source,
    codes = t.codes or { code },
  }
end

--- Loads one rule file in a sandbox.
-- @tparam string path the file
-- @tparam[opt] table env environment (default: `sandbox()`)
-- @treturn table the validated rule
-- @raise the file's syntax or runtime error, or a validation error
function M.load_file(path, env)
  local chunk, err = loadfile(path, "t", env or M.sandbox())
  if not chunk then error(err, 0) end
  local ok, t = pcall(chunk)
  if not ok then error(tostring(t), 0) end
  return M.normalize(t, path)
end

--- Wraps a bare function from a policy as a cheap rule.
-- @tparam function fn `fn(candidate, ctx) -> ok[, code, message]`
-- @tparam integer i its position in the policy's rule list
-- @treturn table rule named `policy_rule_<i>` with code `POLICY_RULE`
function M.from_function(fn, i)
  return {
    name = "policy_rule_" .. i, code = "POLICY_RULE", cheap = true,
    description = "rule function " .. i .. " of the policy", check = fn,
    order = 1000 + i, source = "policy",
  }
end

local function by_order(a, b)
  if a.order ~= b.order then return a.order < b.order end
  return a.name < b.name
end

--- Loads every `*.lua` file of a directory as a rule, sorted by order.
-- @tparam string dir the rules directory (`<root>/rules`)
-- @treturn table array of rules (each marked `builtin = true`)
-- @raise when the directory cannot be listed or a file is invalid
function M.load_dir(dir)
  local names, err = util.listdir(dir)
  if not names then error(string.format("%s: cannot list rules directory: %s", dir, err), 0) end
  local list = {}
  for _, n in ipairs(names) do
    if n:match("%.lua$") then
      local r = M.load_file(util.join_path(dir, n))
      r.builtin = true
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

return M
