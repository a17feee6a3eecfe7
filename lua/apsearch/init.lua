--- apsearch: the Lua API in one table, for tools that embed the engine
-- from a stock `lua5.4` (`require "apsearch"`, with `apsearch/core.so` on
-- package.cpath) or from the C host.
--
--     local aps = require "apsearch"
--     local p = aps.policy.load("examples/llama3_8b_h100.lua", { fix = { "tp_degree=2" } })
--     local result = aps.search.run(p)
--     io.write(aps.format.table.format(result))
--
-- Submodules load on first use: core, hf, presets, policy, schema, space,
-- rules, objectives, search, cli, util, and format.{table,json,csv,breakdown}.
-- @module apsearch
local M = { version = "0.1.0" }

local SUB = { core = true, hf = true, presets = true, policy = true, schema = true,
  space = true, rules = true, objectives = true, search = true, cli = true, util = true }

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

return setmetatable(M, {
  __index = function(t, k)
    if SUB[k] then
      local m = require("apsearch." .. k)
      rawset(t, k, m)
      return m
    end
  end,
})
