--- apsearch: the Lua API in one table, for tools that embed the engine
-- from a stock `lua5.4` (`require "apsearch"`, with `apsearch/core.so` on
-- package.cpath) or from the C host.
--
--     local aps = require "apsearch"
--     local p = aps.policy.load("examples/llama3_8b_h100.lua", { fix = { "tp_degree=2" } })
--     local result = aps.search.run(p)
--     io.write(aps.format.table.format(result))
--
-- Submodules load on first use: core (the C estimators), sandbox (the C
-- sandbox), hf, presets, policy, schema, space, rules, objectives, search,
-- engine, testing, validate, cli, util, and
-- format.{table,json,csv,breakdown}.
--
-- The estimators directly:
--
--     local ctx = aps.context{ model = "llama-3.1-70b", cluster = "h100-sxm-80gb:8x8",
--                              training = { global_batch_size = 512, seq_length = 8192 } }
--     local est = ctx:estimate{ dp_degree = 1, fsdp_degree = 16, tp_degree = 4 }
--     print(est.step_time, est.mem_peak)
--
-- After `cmake --install` the modules are in Lua's standard paths under the
-- prefix (P/share/lua/5.4/apsearch, P/lib/lua/5.4/apsearch): for
-- /usr/local a stock lua5.4 finds them with no LUA_PATH; for another
-- prefix P (docs/embedding.md):
--
--     LUA_PATH="P/share/lua/5.4/?.lua;P/share/lua/5.4/?/init.lua;;"
--     LUA_CPATH="P/lib/lua/5.4/?.so;;"
-- @module apsearch
local M = { version = "0.1.0" }

local SUB = { core = true, hf = true, presets = true, policy = true, schema = true,
  space = true, rules = true, objectives = true, search = true, cli = true, util = true,
  sandbox = true, engine = true, testing = true, validate = true }

local format = setmetatable({}, {
  __index = function(t, k)
    local m = require("apsearch.format." .. k)
    rawset(t, k, m)
    return m
  end,
})
M.format = format

--- Loads a policy (file path or table) and runs the search.
-- @tparam string|table policy a policy file, or a policy table
-- @tparam[opt] table opts policy options (`set`, `fix`, `top_k`) and search
--   options (`fast_checks`, `progress`, `rules_dir`)
-- @treturn table the search result (see apsearch.search.run)
-- @raise on bad input, as apsearch.policy and apsearch.search do
function M.run(policy, opts)
  opts = opts or {}
  local pol = require "apsearch.policy"
  local p = type(policy) == "table" and pol.from_table(policy, opts.file or "policy", opts)
    or pol.load(policy, opts)
  return require("apsearch.search").run(p, opts)
end

--- An estimator context from model, cluster and training given as in a
-- policy (preset names, "DEVICE:NODESxGPUS", tables; defaults: Llama-3.1-8B
-- on 8 H100 with TorchTitan/FSDP2, bf16, AdamW: the CLI's default policy
-- examples/llama3_8b_h100.lua, see apsearch.testing.defaults).  It has `model`, `cluster`,
-- `training` (every field filled) and the core's methods `check`,
-- `evaluate`, `estimate`, `flops`, `inputs`.
-- @tparam[opt] table o `{model =, cluster =, training =}`
-- @treturn table context
function M.context(o)
  return require("apsearch.testing").context(o)
end

--- Estimates one strategy: the full breakdown of `ctx:estimate`.  When
-- dp_degree is not given it fills the devices (N / (tp x pp x cp x fsdp)).
-- @tparam table strategy strategy fields
-- @tparam[opt] table o inputs as for `context`
-- @treturn table estimate (feasible, step_time [s], mem_peak [B],
--   memory_breakdown, performance_breakdown, stages, ...)
function M.estimate(strategy, o)
  local testing = require "apsearch.testing"
  local ctx = testing.context(o)
  return ctx:estimate(testing.candidate(strategy, ctx))
end

return setmetatable(M, {
  __index = function(t, k)
    if SUB[k] then
      local m = require("apsearch." .. k)
      rawset(t, k, m)
      return m
    end
  end,
})
