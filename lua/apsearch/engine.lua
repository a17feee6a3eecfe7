--- The search session behind the C library (include/apsearch/engine.h,
-- src/lua/engine.c); also usable from Lua.
--
--     local engine = require "apsearch.engine"
--     local e = engine.new({ instructions = 1e8, memory_mib = 256 })
--     e:load_file("examples/llama3_8b_h100.lua")
--     e:set("cluster.memory_limit_gib=60")
--     local json, top_k, feasible, best_step_time = e:run()
--
-- Each method raises on bad input with the CLI's one-line message, or the
-- sandbox's report for a failing script; the C side turns that into an
-- aps_engine_status and aps_engine_errmsg().
-- @module apsearch.engine
local util = require "apsearch.util"
local policy = require "apsearch.policy"
local rules = require "apsearch.rules"

local M = {}

local Engine = {}
Engine.__index = Engine

local FORMATS = { table = true, csv = true, json = true }

--- Creates a session and configures the sandbox of this Lua state.
-- @tparam[opt] table opts `unsafe` (boolean: no sandbox), `instructions`
--   (per-call instruction limit, 0 = unlimited), `run_instructions` and
--   `run_seconds` (the limits of every call of a run together: each
--   search starts them from 0; 0 = unlimited), `state_mib` (the cap on the
--   Lua state when a call starts, MiB, 0 = unlimited), `memory_mib` (per-call
--   memory cap in MiB, 0 = unlimited), `seconds` and `cpu_seconds`
--   (per-call wall-clock and CPU-time limits, 0 = unlimited); absent
--   fields keep the defaults
-- @treturn table the session
function M.new(opts)
  opts = opts or {}
  local cfg = {}
  if opts.unsafe then cfg.enabled = false end
  if opts.instructions ~= nil then cfg.instructions = opts.instructions end
  if opts.run_instructions ~= nil then cfg.run_instructions = opts.run_instructions end
  if opts.run_seconds ~= nil then cfg.run_seconds = opts.run_seconds end
  if opts.state_mib ~= nil then cfg.state_mib = opts.state_mib end
  if opts.memory_mib ~= nil then cfg.memory_mib = opts.memory_mib end
  if opts.seconds ~= nil then cfg.seconds = opts.seconds end
  if opts.cpu_seconds ~= nil then cfg.cpu_seconds = opts.cpu_seconds end
  require("apsearch.sandbox").configure(cfg)
  local e = setmetatable({}, Engine)
  e:clear_overrides()
  return e
end

--- Loads a policy file (sandboxed); validation happens in `run`.
-- @tparam string path
function Engine:load_file(path)
  self.raw, self.hf_imports = policy.load_raw(path)
  self.file, self.base_dir = path, nil
end

--- Loads a policy from source text (sandboxed); paths in it are relative
-- to the current directory.
-- @tparam string text
-- @tparam[opt="policy"] string name
function Engine:load_string(text, name)
  name = name or "policy"
  local env
  env, self.hf_imports = policy.env(".")
  self.raw = rules.run_string(text, name, env, "policy")
  self.file, self.base_dir = name, "."
end

--- Adds a `--set` override (syntax checked now).
-- @tparam string assignment `key=value`
function Engine:set(assignment)
  policy.parse_assignment(assignment, "--set")
  self.sets[#self.sets + 1] = assignment
end

--- Adds a `--fix` override (syntax checked now).
-- @tparam string assignment `dim=value[,value...]`
function Engine:fix(assignment)
  policy.parse_assignment(assignment, "--fix")
  self.fixes[#self.fixes + 1] = assignment
end

--- Adds a rule file, loaded (sandboxed) now.
-- @tparam string path
function Engine:add_rules(path)
  if not util.file_exists(path) then util.fail("--rules", "rules", "rule file not found", path) end
  self.rules[#self.rules + 1] = rules.load_file(path, policy.env(util.dirname(path)))
end

--- Sets the objective: a built-in name, or an objective file loaded now.
-- @tparam string x
function Engine:set_objective(x)
  if type(x) == "string" and x:match("%.lua$") then
    if not util.file_exists(x) then util.fail("--objective", "objective", "objective file not found", x) end
    self.objective = rules.load_objective(x)
  else
    self.objective = x
  end
end

--- Forgets the overrides, rules and objective.
function Engine:clear_overrides()
  self.sets, self.fixes, self.rules, self.objective = {}, {}, {}, nil
end

--- Normalizes the policy with the overrides and runs the search.
-- @treturn string the result as JSON (`apsearch run --format json`)
-- @treturn integer number of top-k strategies
-- @treturn integer number of feasible candidates
-- @treturn number step time of the best strategy [s], or -1
function Engine:run()
  if self.raw == nil then error("no policy loaded", 0) end
  local p = policy.from_table(self.raw, self.file, {
    set = self.sets, fix = self.fixes, base_dir = self.base_dir,
    rules = self.rules, objective = self.objective, hf_imports = self.hf_imports,
  })
  local result = require("apsearch.search").run(p)
  self.result = result
  local top = result.top_k_strategies
  local best = top[1] and top[1].performance_cost and top[1].performance_cost.step_time or -1
  return require("apsearch.format.json").format(result), #top,
    result.all_candidate_summary.feasible or 0, best
end

--- Renders the last result.
-- @tparam string format "table", "csv", "json" or a formatter file
-- @treturn string text
function Engine:render(format)
  if self.result == nil then error("no result yet: run the search first", 0) end
  if FORMATS[format] then return require("apsearch.format." .. format).format(self.result) end
  if type(format) == "string" and format:match("%.lua$") then
    if not util.file_exists(format) then util.fail("--formatter", "formatter", "formatter file not found", format) end
    return rules.load_formatter(format).render(self.result)
  end
  util.fail("render", "format", "expected table, csv, json or a formatter file (.lua)", format)
end

return M
