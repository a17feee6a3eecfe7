--- Model presets by name and cluster helpers.
--
-- Model presets are the real Hugging Face configs shipped in
-- `<root>/examples/models/<name>.json`, where `<root>` is the global
-- `APSEARCH_ROOT` set by the host, else the environment variable `APS_ROOT`
-- (busted), else the current directory.  Device presets live in the C core
-- (`core.device_presets()`), each with its datasheet source.
-- @module apsearch.presets
local util = require "apsearch.util"
local hf = require "apsearch.hf"

local M = {}

--- Names of the model presets, in display order.
M.model_names = { "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                  "llama-2-7b", "mistral-7b-v0.1", "qwen2.5-7b", "qwen2.5-72b",
                  "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3" }

local known = {}
for _, n in ipairs(M.model_names) do known[n] = true end

--- Path of a model preset's config file.
-- @tparam string name preset name, e.g. "llama-3.1-8b"
-- @treturn string path under `<root>/examples/models/`
function M.model_path(name)
  return util.join_path(util.root(), "examples/models/" .. name .. ".json")
end

--- True if `name` is a model preset (listed, or a config file present in
-- `examples/models/`).
-- @tparam string name
-- @treturn boolean
function M.is_model(name)
  if type(name) ~= "string" or name:find("[/\\]") or name:find("%.json$") then
    return false
  end
  name = name:lower()
  return known[name] == true or util.file_exists(M.model_path(name))
end

--- Every name `--model` takes as a preset: M.model_names, then the other
-- configs under `<root>/examples/models/` (each by its file name without
-- `.json`), sorted.
-- @treturn table array of names
function M.all_model_names()
  local names, extra = util.array(), {}
  for _, n in ipairs(M.model_names) do names[#names + 1] = n end
  local dir = util.join_path(util.root(), "examples/models")
  local ok, iter, state = pcall(require("lfs").dir, dir)
  if ok then
    for f in iter, state do
      local n = f:match("^(.+)%.json$")
      if n and not known[n] and n == n:lower() then extra[#extra + 1] = n end
    end
  end
  table.sort(extra)
  for _, n in ipairs(extra) do names[#names + 1] = n end
  return names
end

--- Loads a model preset.
-- @tparam string name preset name (case-insensitive)
-- @treturn table model table (see apsearch.hf)
-- @treturn table info `{source=<path>, model_type=, preset=name}`
-- @raise `model: unknown model preset (got "<name>"); known: ...` or an
--   import error of the config file
function M.model(name)
  if type(name) ~= "string" then
    util.fail("model", "preset", "expected a preset name", name)
  end
  local lname = name:lower()
  if not M.is_model(lname) then
    local all = M.all_model_names()
    util.fail("model", "preset", require("apsearch.suggest").problem("unknown model preset", name, all) ..
      " (known: " .. util.join(all) .. "), or a config.json path",
      name)
  end
  local model, info = hf.load(M.model_path(lname), lname)
  info.preset = lname
  return model, info
end

--- Lists the model presets with their sources (M.all_model_names).
-- @treturn table array of `{name=, source=<path>}`
function M.models()
  local list = util.array()
  for _, n in ipairs(M.all_model_names()) do
    list[#list + 1] = { name = n, source = M.model_path(n) }
  end
  return list
end

--- Builds a cluster table.
-- @tparam string|table device device preset name, or a device table
--   (`{base="h100-sxm-80gb", <overrides>}`)
-- @tparam[opt=1] integer nodes number of nodes
-- @tparam[opt=8] integer gpus_per_node devices per node
-- @treturn table `{device=, num_devices=nodes*gpus_per_node, devices_per_node=}`
-- @raise on a non-positive-integer node or GPU count
function M.cluster(device, nodes, gpus_per_node)
  nodes = nodes or 1
  gpus_per_node = gpus_per_node or 8
  if type(device) ~= "string" and type(device) ~= "table" then
    util.fail("cluster", "device", "expected a device preset name or table", device)
  end
  if not util.is_integer(nodes) or nodes < 1 then
    util.fail("cluster", "nodes", "expected a positive integer", nodes)
  end
  if not util.is_integer(gpus_per_node) or gpus_per_node < 1 then
    util.fail("cluster", "devices_per_node", "expected a positive integer", gpus_per_node)
  end
  return {
    device = device,
    num_devices = math.tointeger(nodes * gpus_per_node),
    devices_per_node = math.tointeger(gpus_per_node),
  }
end

return M
