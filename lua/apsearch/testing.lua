--- Helpers for testing your own rules, objectives and formatters with
-- busted: models, clusters, training settings, candidates and a context in
-- a few lines, and the rule run exactly as the search runs it (loaded as
-- text in the sandbox, called with the same context, return values
-- checked).  docs/writing-rules.md has a complete spec;
-- tests/lua/example_rule_spec.lua is that spec, run in CI.
--
--     local T = require "apsearch.testing"
--     local rule = T.load_rule("examples/rules/tp_in_node.lua")
--     local ctx = T.context{ model = "llama-3.1-70b", cluster = "h100-sxm-80gb:2x8" }
--     assert.is_true(T.check(rule, T.candidate({ tp_degree = 8 }, ctx), ctx))
--     local ok, code = T.check(rule, T.candidate({ tp_degree = 16 }, ctx), ctx)
--     assert.is_false(ok); assert.are.equal("TP_CROSSES_NODE", code)
--
-- Run specs with the apsearch Lua tree and `apsearch/core.so` on the
-- paths, e.g. from the repository root after a build:
--
--     busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' my_rule_spec.lua
--
-- or, after `cmake --install --prefix P`, with LUA_PATH / LUA_CPATH as in
-- docs/embedding.md.
-- @module apsearch.testing
local util = require "apsearch.util"
local policy = require "apsearch.policy"
local presets = require "apsearch.presets"
local rules = require "apsearch.rules"

local M = {}

--- Default inputs of `context` and `search`: those of the CLI's default
-- policy, examples/llama3_8b_h100.lua (Llama-3.1-8B on one node of 8
-- H100-SXM 80GB, 64 sequences of 8192 tokens per step, bf16, AdamW,
-- TorchTitan/FSDP2), so that `aps.context{...}` and `apsearch estimate
-- --model ... --cluster ...` estimate the same thing (tests/lua/
-- inputs_spec.lua checks they agree); the search space (for `search`)
-- fills the devices with dp x fsdp and tries TP 1-8 and micro-batches of
-- 1 and 2.  A `training` table given to `context` is merged over these.
M.defaults = {
  model = "llama-3.1-8b",
  cluster = "h100-sxm-80gb:1x8",
  training = { global_batch_size = 64, seq_length = 8192, precision = "bf16",
               optimizer = "adamw", framework = "fsdp2" },
  search_space = { data_parallel = "auto", fsdp_degree = { 1, 2, 4, 8 },
    tp_degree = { 1, 2, 4, 8 }, micro_batch_size = { 1, 2 } },
}

--- A model table.
-- @tparam string|table m a preset name (`apsearch presets`), a path to a
--   Hugging Face config.json, or a model table (returned as is)
-- @treturn table model
function M.model(m)
  if type(m) == "table" then return m end
  if type(m) == "string" and (m:find("/", 1, true) or m:match("%.json$")) then
    return (require("apsearch.hf").load(m))
  end
  return (presets.model(m))
end

--- A cluster table.
-- @tparam string|table spec `"DEVICE[:NODES[xGPUS]]"` (e.g.
--   `"h100-sxm-80gb:2x8"`), a device name with `nodes` and
--   `devices_per_node`, or a cluster table (returned as is)
-- @tparam[opt] integer nodes
-- @tparam[opt=8] integer devices_per_node
-- @treturn table cluster `{device, nodes | num_devices, devices_per_node}`
function M.cluster(spec, nodes, devices_per_node)
  if type(spec) == "table" then return spec end
  if nodes then return presets.cluster(spec, nodes, devices_per_node or 8) end
  local c = policy.parse_cluster_spec(spec)
  if not c then error("testing.cluster: expected DEVICE[:NODES[xGPUS]] (got " .. util.describe(spec) .. ")", 2) end
  return c
end

--- A training table: `M.defaults.training` with the fields of t on top.
-- @tparam[opt] table t fields (any policy training field)
-- @treturn table training
function M.training(t)
  local r = util.copy(M.defaults.training)
  for k, v in pairs(t or {}) do r[k] = v end
  return r
end

-- a raw policy table from the given parts (defaults filled)
local function raw_policy(o)
  o = o or {}
  local raw = {
    model = M.model(o.model or M.defaults.model),
    cluster = M.cluster(o.cluster or M.defaults.cluster),
    training = M.training(o.training),
  }
  for k, v in pairs(o) do
    if k ~= "model" and k ~= "cluster" and k ~= "training" and k ~= "rules" then raw[k] = v end
  end
  return raw
end

--- The context a rule sees (`apsearch.rules.context`): `ctx.model`,
-- `ctx.cluster`, `ctx.training` (every field filled) and `ctx:check`,
-- `ctx:evaluate`, `ctx:estimate`, `ctx:flops`, `ctx:inputs`.
-- @tparam[opt] table o `model`, `cluster`, `training` as for the helpers
--   above (defaults: `M.defaults`), and any other policy field
-- @treturn table context
-- @raise the policy's one-line message when an input is invalid
function M.context(o)
  local p = policy.from_table(raw_policy(o), "testing")
  return rules.context(require("apsearch.search").context(p))
end

--- A candidate strategy: the given fields; with a context, dp_degree (when
-- not given) fills the devices: N / (tp x pp x cp x fsdp) when that
-- divides.  Other fields take the core's defaults, as in the search.
-- @tparam[opt] table fields strategy fields (tp_degree = 8, ...)
-- @tparam[opt] table ctx a context (from `context`)
-- @treturn table candidate
function M.candidate(fields, ctx)
  local c = util.copy(fields or {})
  if ctx and c.dp_degree == nil and c.hsdp_replicate_degree == nil then
    local used = (c.tp_degree or 1) * (c.pp_degree or 1) * (c.cp_degree or 1) *
      (c.fsdp_degree or c.hsdp_shard_degree or 1)
    local n = ctx.cluster.num_devices
    if n % used == 0 then c.dp_degree = n // used end
  end
  return c
end

--- Loads a rule file as the search does (text only, in the sandbox, the
-- policy helpers in its environment) and validates it.
-- @tparam string path
-- @treturn table rule (`apsearch.rules.normalize`)
function M.load_rule(path)
  return rules.load_file(path, policy.env(util.dirname(path)))
end

--- Loads an objective file (sandboxed) and validates it.
-- @tparam string path
-- @treturn table objective
function M.load_objective(path)
  return rules.load_objective(path)
end

--- Loads a formatter file (sandboxed); `f.render(result)` returns text.
-- @tparam string path
-- @treturn table formatter
function M.load_formatter(path)
  return rules.load_formatter(path)
end

--- The evaluation a non-cheap rule receives (`ctx:evaluate(candidate)`).
-- @tparam table ctx
-- @tparam table candidate
-- @treturn table evaluation
function M.evaluate(ctx, candidate)
  return ctx:evaluate(candidate)
end

--- Runs a rule on one candidate as the search does: a rule that is not
-- cheap gets the evaluation.  Errors in the rule (or a bad return value)
-- raise the sandbox's report.
-- @tparam table|string rule a rule (from `load_rule`) or a rule file
-- @tparam table candidate
-- @tparam table ctx
-- @treturn boolean ok
-- @treturn[opt] string reason code (when not ok)
-- @treturn[opt] string message (when not ok)
function M.check(rule, candidate, ctx)
  if type(rule) == "string" then rule = M.load_rule(rule) end
  local ev
  if not rule.cheap then ev = ctx:evaluate(candidate) end
  local ok, code, msg = rule.check(candidate, ctx, ev)
  if ok then return true end
  return false, code, msg
end

--- The score an objective gives one candidate (objectives with `score`).
-- @tparam table|string objective an objective (from `load_objective`) or file
-- @tparam table candidate
-- @tparam table ctx
-- @treturn number score (lower ranks first unless `maximize`)
function M.score(objective, candidate, ctx)
  if type(objective) == "string" then objective = M.load_objective(objective) end
  local entry = ctx:evaluate(candidate)
  entry.strategy, entry.index = candidate, 1
  local fn = require("apsearch.sandbox").wrap(objective.score, 'objective "' .. objective.name .. '"')
  return fn(entry, ctx)
end

--- Runs a small search: the policy fields of o (defaults for model,
-- cluster, training and search_space; `objective`, `top_k`, ...) plus
-- `rules`, an array of rules or rule files.
-- @tparam[opt] table o
-- @treturn table the search result (docs/outputs.md)
function M.search(o)
  o = util.copy(o or {})
  if o.search_space == nil then o.search_space = util.deepcopy(M.defaults.search_space) end
  local extra = {}
  for i, r in ipairs(o.rules or {}) do
    extra[i] = type(r) == "string" and M.load_rule(r) or r
  end
  local p = policy.from_table(raw_policy(o), "testing", { rules = extra, base_dir = "." })
  return require("apsearch.search").run(p)
end

--- Count of candidates a search filtered or found infeasible under a code.
-- @tparam table result a search result
-- @tparam string code reason code
-- @treturn integer count (0 when absent)
function M.count(result, code)
  local e = result.infeasible_summary and result.infeasible_summary[code]
  return e and e.count or 0
end

return M
