--- Policy files: load in a sandbox, apply `--set`/`--fix`, validate, normalize.
--
-- A policy is a Lua file returning a table:
--
--     return {
--       name = "llama3-8b-h100",                  -- optional
--       description = "...",                      -- optional
--       model = "llama-3.1-8b",                   -- preset | "path/config.json" | table
--       cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
--       training = { global_batch_size = 64, seq_length = 8192, precision = "bf16" },
--       search_space = {
--         data_parallel = "auto",                 -- fill dp x fsdp to use all devices
--         tp_degree = { 1, 2, 4, 8 },             -- a list of values
--         fsdp_degree = { min = 1, max = 8, pow2 = true },  -- or a range
--         micro_batch_size = { min = 1, max = 4, step = 1 },
--         layer_recompute = { "none", "selective", "full" },
--       },
--       constraints = { memory_limit_gib = 70, allow_idle_devices = false,
--                       rules = { "my_rule.lua", function(s) return s.tp_degree <= 4 end } },
--                       -- rules: names, files, tables, functions (docs/writing-rules.md)
--       objective = "step_time",                  -- a built-in name | "my_objective.lua" |
--                                                 -- {name=, score=|better=} | function(a, b)
--       top_k = 10,
--       outputs = { format = "table", dir = "out" },
--     }
--
-- The file runs in the sandbox of apsearch.rules (docs/writing-rules.md):
-- loaded as text only, allowlisted globals plus the helpers of `env`, an
-- instruction limit and a memory cap; functions it defines (rules, an
-- objective) are called in the sandbox too.
--
-- A model read from a Hugging Face config.json that states its dropout
-- probabilities (apsearch.hf.DROPOUT_KEYS) sets `training.dropout` to
-- whether any is above 0, unless the policy's training table (or `--set
-- training.dropout=`) gives it: the policy wins.  A config that states
-- none takes its configuration class's default (apsearch.hf.
-- DROPOUT_CLASS_DEFAULTS: off but for GPT-2-style classes).  A model
-- table or preset name with no config: the framework's default
-- (Megatron-LM and Megatron-DeepSpeed on, 0.1; TorchTitan and llm-foundry
-- off; src/core/profile.c).
--
-- Field values are checked strictly: an unknown field anywhere, or a value
-- of the wrong type or range, raises `<file>: <field>: <problem> (got <v>)`.
-- Friendly unit suffixes (`_gib`, `_mib`, `_gbps`, `_tflops`, `_us`, `_ms`)
-- are accepted on numeric fields (see apsearch.schema).  Paths in a policy
-- (model config, rule files, outputs.dir) are relative to the policy file;
-- paths given with `--set` are relative to the current directory.
--
-- Search dimensions (strategy fields): dp_degree, fsdp_degree, zero_stage,
-- reshard_after_forward, tp_degree, sequence_parallel, pp_degree, vpp_degree,
-- cp_degree, cp_comm_type, micro_batch_size, micro_batch_num,
-- layer_recompute, recompute_num_layers, stage_partition, layer_offset
-- (aliases hsdp_shard_degree, hsdp_replicate_degree).  Each takes a scalar,
-- a list, or (integer dimensions) a range `{min=, max=, step=}` /
-- `{min=, max=, pow2=true}`.  Dimensions left out take their default (1,
-- off, micro_batch_num derived) -- AP-DENSE-07.  `data_parallel = "auto"`
-- derives dp_degree x fsdp_degree = N / (tp x pp x cp) (see apsearch.space).
-- @module apsearch.policy
local util = require "apsearch.util"
local schema = require "apsearch.schema"
local suggest = require "apsearch.suggest"
local stacks = require "apsearch.stacks"
local hf = require "apsearch.hf"
local lfs = require "lfs"
local presets = require "apsearch.presets"
local rules = require "apsearch.rules"
local objectives = require "apsearch.objectives"
local sandbox = require "apsearch.sandbox"

local M = {}

--- Largest amount a field with a unit suffix may hold, in its base unit
-- (bytes, FLOP/s, ...; the core's bound on byte counts, src/core/training.c
-- APS_MAX_TRAINING_AMOUNT and the device presets' memory range).
M.MAX_AMOUNT = 1e30


--- The words of the note a policy without a search space gets (its
-- `warnings`): commands that search print it, commands that estimate one
-- strategy leave it out.
M.DEFAULT_SPACE_NOTE = "searching the framework's full space"


local TOP = {
  name = true, description = true, model = true, cluster = true,
  training = true, search_space = true, constraints = true, objective = true,
  top_k = true, outputs = true,
}

local OUTPUT_FORMATS = { "table", "json", "csv" }

-- The section a field table of apsearch.schema is (schema.placement).
local SECTION_OF = { [schema.training] = "training", [schema.model] = "model", [schema.cluster] = "cluster" }

-- The problem text of an unknown top-level field k (value v): "unknown
-- field", and where k, or a field of the table v (a framework's own
-- section, AutoModel's `step_scheduler.local_batch_size`), is a model,
-- cluster or training field, where it goes (schema.elsewhere).
local function misplaced_field(k, v)
  local hint = schema.placement(k)
  if not hint and type(v) == "table" then
    for _, leaf in ipairs(util.sorted_keys(v)) do
      hint = schema.placement(leaf)
      if hint then break end
    end
  end
  return hint and ("unknown field; " .. hint) or "unknown field"
end

--- Largest number of values one range may expand to.
M.max_range_values = 100000

--- The regular files in the directory of `path` (its own directory part,
-- else the current one): the candidates of a "did you mean" for a missing
-- file.
-- @tparam string path
-- @treturn table array of names (empty when the directory cannot be read)
function M.files_beside(path)
  local dir = path:match("^(.*)/[^/]*$") or "."
  local names = {}
  local ok, iter, state = pcall(lfs.dir, dir == "" and "/" or dir)
  if not ok then return names end
  for f in iter, state do
    local full = (dir == "." and "" or (dir .. "/")) .. f
    if lfs.attributes(full, "mode") == "file" then names[#names + 1] = full end
  end
  table.sort(names)
  return names
end

--- The model a reference that names nothing may have meant: a preset
-- behind trailing slashes ("llama-3.1-8b/"), or a config file of the same
-- name with ".json" ("ll31" beside ll31.json, written "./ll31.json" so
-- that it reads as a path).
-- @tparam string ref a --model / inspect / policy `model` value
-- @treturn string|nil `did you mean ...?`, or nil
function M.model_ref_hint(ref)
  local trimmed = ref:gsub("/+$", "")
  if trimmed ~= ref and trimmed ~= "" and presets.is_model(trimmed) and not lfs.attributes(trimmed) then
    return ("did you mean the preset %q?"):format(trimmed)
  end
  if not ref:match("%.json$") and lfs.attributes(ref .. ".json", "mode") == "file" then
    local path = ref:find("/", 1, true) and ref or ("./" .. ref)
    return ("did you mean %q?"):format(path .. ".json")
  end
  return nil
end

--- Loads a model from a config.json path or a snapshot directory
-- (apsearch.hf.load).  A path that is not there is refused with what it
-- may have meant (M.model_ref_hint: a preset behind trailing slashes, the
-- path with ".json"), else the preset a name with ".json" is, else the
-- nearest file names beside it (by their stems).
-- @tparam string ref the path
-- @treturn table model
-- @treturn string the config.json read
-- @treturn table the import's info
-- @raise `<ref>: cannot read config: no such file; did you mean ...?`,
--   or hf.load's errors
function M.load_model_path(ref)
  if not lfs.attributes(ref) then
    local hint = M.model_ref_hint(ref)
    if hint then error(("%s: cannot read config: no such file; %s"):format(ref, hint), 0) end
    -- (by their stems: "nope.json" is not near "foo.json" for the ".json" they share)
    local stems, file_of = {}, {}
    local function stem(f) return (f:gsub("%.json$", "")) end
    for _, f in ipairs(M.files_beside(ref)) do
      local b = f:match("[^/]*$")
      stems[#stems + 1] = stem(b)
      file_of[stem(b)] = b
    end
    local near = suggest.closest(stem(ref:match("[^/]*$")), stems)
    for i, n in ipairs(near) do near[i] = string.format("%q", file_of[n]) end
    -- a preset's name with ".json": the preset, not a near file
    local bare = ref:match("^(.-)%.json$")
    if bare and presets.is_model(bare) then near = { ("the preset %q"):format(bare) } end
    near = #near > 0 and ("did you mean " .. table.concat(near, " or ") .. "?") or nil
    if near then error(("%s: cannot read config: no such file; %s"):format(ref, near), 0) end
  end
  local m, i = hf.load(ref)
  return m, (hf.config_path(ref)), i
end

--- Whether a model reference is read as a path (M.load_model_path) rather
-- than a preset's name: it has a "/", ends in ".json", or is a directory
-- (a snapshot) that no preset is named as.
-- @param s the reference
-- @treturn boolean
local function pathish(s)
  return type(s) == "string" and (s:find("/", 1, true) ~= nil or s:match("%.json$") ~= nil
    or (lfs.attributes(s, "mode") == "directory" and not presets.is_model(s)))
end
M.pathish = pathish

--------------------------------------------------------------------- helpers

local function range_list(lo, hi, step)
  step = step or 1
  local list = util.array()
  if not util.is_integer(lo) or not util.is_integer(hi) or not util.is_integer(step) or step < 1 then
    error(string.format("range(%s, %s, %s): expected integers with step >= 1",
      util.describe(lo), util.describe(hi), util.describe(step)), 2)
  end
  for v = math.tointeger(lo), math.tointeger(hi), math.tointeger(step) do
    list[#list + 1] = v
    if #list > M.max_range_values then error("range: more than " .. M.max_range_values .. " values", 2) end
  end
  return list
end

local function pow2_list(lo, hi)
  local list = util.array()
  if not util.is_integer(lo) or not util.is_integer(hi) or lo < 1 then
    error(string.format("pow2(%s, %s): expected integers with min >= 1",
      util.describe(lo), util.describe(hi)), 2)
  end
  local v = 1
  while v <= hi do
    if v >= lo then list[#list + 1] = v end
    if v > hi // 2 then break end   -- no overflow past math.maxinteger
    v = v * 2
  end
  return list
end

--- The sandbox environment a policy file runs in: the safe base library
-- (see apsearch.rules.sandbox) plus these helpers, also reachable as
-- `apsearch.<name>`:
--
-- * `hf(path[, name])` -> model table from a Hugging Face config.json
--   (path relative to the policy file); a config with dropout > 0 turns
--   training.dropout on unless the policy sets it (apsearch.hf)
-- * `preset(name)` -> model table of a model preset
-- * `model(name_or_path)` -> either of the above
-- * `cluster(device, nodes, gpus_per_node)` -> cluster table
-- * `device(name)` -> device table of a core device preset
-- * `range(lo, hi[, step])`, `pow2(lo, hi)` -> lists of integers
-- * `gib(x)` -> x * 2^30 (bytes)
-- * `log(fmt, ...)` -> a line on stderr
-- @tparam string base_dir directory of the policy file
-- @treturn table environment
-- @treturn table the configs `hf()` imported, model name -> the import's
--   info (`apsearch.hf.from_config`), filled as the file runs; pass it to
--   `from_table` as `opts.hf_imports` (the sandbox returns plain data, so
--   the info cannot ride on the model table itself)
function M.env(base_dir, allow)
  local env = rules.sandbox()
  local api = {}
  local imports = {}
  local roots
  local function import(path, name)
    if type(path) ~= "string" then error("hf(path): expected a path string", 0) end
    -- a snapshot directory: its config.json, checked as any other file
    local full = hf.config_path(util.join_path(base_dir, path))
    roots = roots or M.hf_roots(base_dir, allow)
    local ok, real = M.hf_allowed(full, roots)
    if not ok then
      error(("hf: %s%s: outside the directories a policy may read (its own directory, apsearch's "
        .. "examples/models, the directories of model paths given on the command line); "
        .. "give it with --model or put it next to the policy"):format(path,
        real ~= full and (" (" .. real .. ")") or ""), 0)
    end
    local m, info = hf.load(full, name)
    imports[m.name] = info
    return m
  end
  api.hf = import
  api.preset = function(name) return (presets.model(name)) end
  api.model = function(x)
    if pathish(x) then return import(x) end
    return (presets.model(x))
  end
  api.cluster = presets.cluster
  api.device = function(name)
    local core = require "apsearch.core"
    return core.device_preset(name)
  end
  api.range = range_list
  api.pow2 = pow2_list
  api.gib = function(x)
    -- a finite number: Lua's string arithmetic would coerce "70" and name
    -- this file, not the policy, for anything else
    if math.type(x) == nil or x ~= x or x == math.huge or x == -math.huge then
      error(string.format("gib(%s): expected a number of GiB", util.describe(x)), 2)
    end
    return x * 2 ^ 30
  end
  api.log = function(fmt, ...) util.log(fmt, ...) end
  -- through sandbox.helper: an error names the policy's line that called
  -- the helper, never apsearch's own sources
  for k, v in pairs(api) do api[k] = sandbox.helper(v) end
  for k, v in pairs(api) do env[k] = v end
  env.apsearch = api
  return env, imports
end

--- The directories whose files a policy's `hf()` and `model(path)` may
-- read, as real paths (symbolic links, `.` and `..` resolved): the policy
-- file's directory, apsearch's shipped `<root>/examples/models`, and the
-- directories in `allow` (those of the model paths given on the command
-- line).  A directory that does not exist is left out.
-- @tparam string base_dir the policy file's directory
-- @tparam[opt] table allow more directories
-- @treturn table array of real paths
function M.hf_roots(base_dir, allow)
  local core = require "apsearch.core"
  local roots = {}
  local dirs = { base_dir, util.join_path(util.root(), "examples/models") }
  for _, d in ipairs(allow or {}) do dirs[#dirs + 1] = d end
  for _, d in ipairs(dirs) do
    local real = core.realpath(d)
    if real then roots[#roots + 1] = real end
  end
  return roots
end

--- Whether a policy may read `path` with `hf()`: a regular file whose real
-- path lies under one of `roots` (M.hf_roots).  A path that does not
-- exist or is not a regular file is let through: apsearch.hf refuses it
-- with its own message (cannot open, not a regular file).
-- @tparam string path
-- @tparam table roots
-- @treturn boolean allowed
-- @treturn string the real path (or path itself when it has none)
function M.hf_allowed(path, roots)
  local core = require "apsearch.core"
  local real = core.realpath(path)
  if not real or lfs.attributes(real, "mode") ~= "file" then return true, path end
  for _, r in ipairs(roots) do
    if r == "/" or real:sub(1, #r + 1) == r .. "/" then return true, real end
  end
  return false, real
end

--- Splits `KEY=VALUE` and parses the value (see util.parse_scalar).
-- @tparam string s the assignment
-- @tparam string label `--set` or `--fix`, for errors
-- @treturn string key
-- @return parsed value
-- @raise `<label>: expected KEY=VALUE (got "...")`
function M.parse_assignment(s, label)
  local key, value = tostring(s):match("^%s*([%w_%.]+)%s*=(.*)$")
  if not key then
    error(string.format("%s: expected KEY=VALUE (got %s)", label, util.describe(s)), 0)
  end
  -- a list with an empty entry ("1,,2", ",2") is a typo, not {1, 2}
  if value:find(",", 1, true) and ("," .. value):find(",%s*,") then
    error(string.format("%s: %s: an empty entry in the list (got %s)", label, key, util.describe(value)), 0)
  end
  return key, util.parse_scalar(value)
end

----------------------------------------------------------------- overrides

local function split_dots(key)
  local segs = {}
  for seg in key:gmatch("[^%.]+") do segs[#segs + 1] = seg end
  return segs
end

local SECTION_FIELDS = {
  training = schema.training, cluster = schema.cluster,
  constraints = schema.constraints, model = schema.model, device = schema.device,
}

-- canonical identity of a key in a section (suffixes resolved, routed)
local function canon(section, key)
  local fields = SECTION_FIELDS[section]
  if not fields then return section .. "." .. key end
  local name = schema.resolve(fields, key) or key
  local route = schema.routes[section] and schema.routes[section][name]
  return (route or section) .. "." .. name
end

-- removes keys of tbl (a section) whose canonical identity equals id
local function drop_aliases(tbl, section, id, keep)
  if type(tbl) ~= "table" then return end
  for k in pairs(util.copy(tbl)) do
    if k ~= keep and type(k) == "string" and canon(section, k) == id then tbl[k] = nil end
  end
end

--- The keys that name what a model or device table is (a preset, a file,
-- a base): a later --set replacing the table does not keep them.
M.TABLE_IDENTITY = { base = true, preset = true, config = true, name = true }

local function apply_set(raw, key, value)
  local segs = split_dots(key)
  if #segs == 0 then error(string.format("--set: expected KEY=VALUE (got %s)", util.describe(key)), 0) end
  local parent = raw
  for i = 1, #segs - 1 do
    local seg = segs[i]
    local cur = parent[seg]
    if cur == nil then
      cur = {}
    elseif type(cur) == "string" and i == 1 and seg == "model" then
      cur = pathish(cur) and { config = cur } or { preset = cur }
    elseif type(cur) == "string" and i == 2 and seg == "device" and segs[1] == "cluster" then
      cur = { base = cur }
    elseif type(cur) ~= "table" then
      util.fail("--set", key, "cannot set a field inside " .. table.concat(segs, ".", 1, i) ..
        ", which is not a table", cur)
    end
    parent[seg] = cur
    parent = cur
  end
  local last = segs[#segs]
  -- one canonical field, one value: drop other spellings of the same field
  local section = (#segs == 2 and segs[1]) or (#segs == 3 and segs[1] == "cluster" and segs[2] == "device" and "device") or nil
  if section then
    local id = canon(section, last)
    drop_aliases(parent, section, id, last)
    if id:match("^training%.memory_") then
      for _, s in ipairs({ "training", "cluster", "constraints" }) do
        if raw[s] ~= parent then drop_aliases(raw[s], s, id) end
      end
    end
    if section == "cluster" then
      local n = schema.resolve(schema.cluster, last)
      if n == "num_devices" then parent.nodes = nil end
      if n == "nodes" then parent.num_devices = nil end
    end
    if section == "search_space" then
      local dim = schema.strategy_aliases[last] or last
      for alias, target in pairs(schema.strategy_aliases) do
        if target == dim and alias ~= last then parent[alias] = nil end
      end
      if dim ~= last then parent[dim] = nil end
    end
  end
  parent[last] = value
end

--- Sets a dotted field of a raw policy table as `--set` does (aliases of
-- the same field dropped).
-- @tparam table raw the raw policy
-- @tparam string key dotted path, e.g. training.precision
-- @param value the value
M.apply_set = apply_set

--- True when a model reference is a path (a config.json or a snapshot
-- directory), false for a preset name.
-- @param s the reference
-- @treturn boolean
function M.is_path(s)
  return pathish(s) and true or false
end

-- on / off as the run's lines spell an on-off value (sp=on), in a list too
local function on_off(value)
  if type(value) == "table" then
    local out = {}
    for i, v in ipairs(value) do out[i] = on_off(v) end
    return out
  end
  if value == "on" then return true elseif value == "off" then return false end
  return value
end

--- The field and value a `--fix` pair names: a short name as the run's
-- strategy lines print it (`tp=8`, `sp=on`, `recompute=full`,
-- schema.strategy_short) is its strategy field, and an on-off field takes
-- on / off, so a line the run printed pastes back into --fix.
-- @tparam string key as given (a field, an HSDP alias or a short name)
-- @param value the parsed value (a scalar or a list)
-- @treturn string,any the key to set and its value
-- @raise `--fix: search_space.<key>: expected on, off, true or false` for
--   an on-off field given another value
function M.fix_field(key, value)
  key = schema.strategy_short[key] or key
  local dim = schema.strategy_aliases[key] or key
  -- an array as the strategy lines print it, colons between its entries
  -- (stage_partition=27:27:26, recompute_num_layers=2:2:2:2): one value of
  -- the dimension, as --strategy reads it (a comma list: one array each)
  local function colons(v)
    if dim == "stage_partition" and schema.layers_cell(v) then return util.array(schema.layers_cell(v)) end
    if type(v) ~= "string" or not v:find(":", 1, true) or dim == "recompute_modules" then return v end
    local a = util.array()
    for part in v:gmatch("[^:]+") do a[#a + 1] = util.parse_scalar(part) end
    return a
  end
  if type(value) == "table" then
    for i, v in ipairs(value) do value[i] = colons(v) end
  elseif colons(value) ~= value then
    value = { colons(value) }
  end
  if schema.strategy[dim] == "bool" and value ~= nil then
    value = on_off(value)
    -- said as --strategy says it: these two spellings are taken too
    for _, v in ipairs(type(value) == "table" and value or { value }) do
      if type(v) ~= "boolean" then
        util.fail("--fix", "search_space." .. key, "expected on, off, true or false", v)
      end
    end
  end
  return key, value
end

-- schema.split_fields as a set
local SPLIT_FIELD = {}
for _, f in ipairs(schema.split_fields) do SPLIT_FIELD[f] = true end

-- the other names --fix takes, for its did-you-mean when no dimension is
-- close: the aliases and the short names the strategy lines print
-- (schema.strategy_aliases, schema.strategy_short: tp, pp, mbs, ...)
local FIX_SHORT = {}
for _, names in ipairs({ schema.strategy_aliases, schema.strategy_short }) do
  for alias, dim in pairs(names) do
    if schema.strategy[dim] then FIX_SHORT[#FIX_SHORT + 1] = alias end
  end
end
table.sort(FIX_SHORT)

local function apply_fix(raw, key, value)
  local dim = schema.strategy_aliases[key] or key
  if not schema.strategy[dim] or dim == "allow_idle_devices" then
    local hint = schema.elsewhere(key) or suggest.did_you_mean(key, schema.dimensions)
      or suggest.did_you_mean(key, FIX_SHORT)
    util.fail("--fix", key, "unknown search dimension" .. (hint and ("; " .. hint) or "") ..
      " (known: " .. util.join(schema.dimensions) .. ")", value)
  end
  if raw.search_space == nil then raw.search_space = {} end
  if type(raw.search_space) ~= "table" then
    util.fail("--fix", "search_space", "expected a table", raw.search_space)
  end
  -- a split fixed on the command line replaces the policy's other ways to
  -- say one (a pasted stage_partition beside a policy's layer_offset
  -- balanced was refused as both given), as --strategy's does
  if SPLIT_FIELD[dim] then
    for _, g in ipairs(schema.split_fields) do
      if g ~= dim then raw.search_space[g] = nil end
    end
  end
  apply_set(raw, "search_space." .. key, value)
end

-- canonical key of an override: "section.field" with suffixes and routes
-- resolved (cluster.memory_limit_gib -> training.memory_limit_bytes)
local function canon_key(key)
  local segs = split_dots(key)
  if #segs == 2 then return canon(segs[1], segs[2]) end
  if #segs == 3 and segs[1] == "cluster" and segs[2] == "device" then
    return "cluster.device." .. (schema.resolve(schema.device, segs[3]) or segs[3])
  end
  return key
end

-- true when override `b` (applied later) replaces some or all of what
-- override `a` set: the same field, a field inside it, or a table holding it
local function shadows(b, a)
  local ka, kb = canon_key(a), canon_key(b)
  return ka == kb or ka:sub(1, #kb + 1) == kb .. "." or kb:sub(1, #ka + 1) == ka .. "."
    or a == b or a:sub(1, #b + 1) == b .. "." or b:sub(1, #a + 1) == a .. "."
end

-- Every override given on the command line is validated, also when a
-- later one replaces the same field (`--set cluster.num_devices=-1
-- --set cluster.num_devices=8`, `--set top_k=-1 --top-k 3`, `--set
-- search_space.tp_degree=-3 --fix tp_degree=2`): for each override that a
-- later one shadows, the policy is normalized once more without the later
-- ones that shadow it, so its value is checked where it would apply and
-- an error names it (`--set: cluster.num_devices: must be a positive
-- integer (got -1)`).  Precedence is unchanged: the last one wins.
local function check_shadowed(raw, file, opts)
  local list = {}
  for i, s in ipairs(opts.set or {}) do
    local text = type(s) == "table" and s.text or s
    local key = tostring(text):match("^%s*([%w_%.]+)%s*=")
    list[#list + 1] = { kind = "set", index = i, key = key, text = tostring(text) }
  end
  for i, s in ipairs(opts.fix or {}) do
    local key = tostring(s):match("^%s*([%w_%.]+)%s*=")
    key = key and M.fix_field(key)
    list[#list + 1] = { kind = "fix", index = i, key = key and ("search_space." .. (schema.strategy_aliases[key] or key)) }
  end
  if opts.top_k ~= nil then list[#list + 1] = { kind = "top_k", key = "top_k" } end
  local notes = {}
  for i, a in ipairs(list) do
    if a.key then
      local drop = {}
      for j = i + 1, #list do
        local b = list[j]
        if b.key and shadows(b.key, a.key) then drop[b.kind .. (b.index or "")] = true end
        -- one setting given twice under two names (cluster.memory_limit_gib
        -- and constraints.memory_limit_gib): said, the last one wins
        if a.kind == "set" and b.kind == "set" and b.key and b.key ~= a.key
            and canon_key(b.key) == canon_key(a.key) then
          notes[#notes + 1] = ("note: --set %s replaces --set %s: the same setting (the last one given wins)")
            :format(util.printable(b.text), util.printable(a.text))
        end
      end
      if next(drop) then
        local o = {}
        for k, v in pairs(opts) do o[k] = v end
        o.set, o.fix = {}, {}
        for k, v in ipairs(opts.set or {}) do if not drop["set" .. k] then o.set[#o.set + 1] = v end end
        for k, v in ipairs(opts.fix or {}) do if not drop["fix" .. k] then o.fix[#o.fix + 1] = v end end
        if drop.top_k then o.top_k = nil end
        o.shadow_check = false
        M.from_table(raw, file, o)
      end
    end
  end
  return notes
end

------------------------------------------------------------- normalization

local Norm = {}
Norm.__index = Norm

function Norm:origin(path)
  for i = #self.overrides, 1, -1 do
    local ov = self.overrides[i]
    local k = ov.kind == "fix" and ("search_space." .. ov.key) or ov.key
    if path == k or path:sub(1, #k + 1) == k .. "." or path:sub(1, #k + 1) == k .. "["
      or k:sub(1, #path + 1) == path .. "." then
      return ov.flag or ("--" .. ov.kind)
    end
  end
  return self.file
end

function Norm:fail(path, problem, got, has_got)
  util.fail(self:origin(path), path, problem, got, has_got)
end

function Norm:checker(path)
  return function(problem, got) self:fail(path, problem, got) end
end

-- checks the fields of tbl against a field table; returns {name = value}
-- with suffixes applied, and `routed` = {section = {name = {value, path}}}
function Norm:fields(tbl, fields, path, section, routed, skip)
  local out = {}
  -- (in key order: the first of several bad fields is the same every run)
  for _, k in ipairs(util.sorted_keys(tbl)) do
    local v = tbl[k]
    local p = path .. "." .. tostring(k)
    if not (skip and skip[k]) then
      local name, factor = schema.resolve(fields, k)
      local hf_key = fields == schema.model and schema.MODEL_HF_KEYS[k]
      if not name and hf_key then
        self:fail(p, ("unknown field: the Hugging Face key of model.%s (a config.json is read with model = " ..
          "\"path/config.json\")"):format(hf_key), v)
      end
      if not name then
        -- a field of another section, or a strategy dimension: where it goes
        local hint = schema.placement(k, SECTION_OF[fields])
        if hint then self:fail(p, "unknown field; " .. hint, v) end
        self:fail(p, suggest.unknown("unknown field", k, schema.spellings(fields)), v)
      end
      local kind = fields[name]
      if factor then
        if not util.is_finite(v) then self:fail(p, "expected a number", v) end
        if not util.is_finite(v * factor) then
          -- 1e308 GiB is finite, its bytes are not
          self:fail(p, ("too large: %s x %g is past the largest number"):format(k, factor), v)
        end
        -- past what the core takes (its bound, in bytes, said in the unit
        -- the user wrote)
        if v * factor > M.MAX_AMOUNT then
          self:fail(p, ("too large: above %g in the base unit (%g in this field's)"):format(M.MAX_AMOUNT,
            M.MAX_AMOUNT / factor), v)
        end
        v = v * factor
        if kind == "posint" or kind == "nonnegint" then v = util.int(math.floor(v + 0.5))
        else v = util.int(v) end
      end
      if kind ~= "device" and kind ~= "rules" then
        local written = tbl[k]
        v = schema.check_value(kind, v, function(problem, got)
          self:fail(p, problem, factor and written or got)
        end)
      end
      local route = section and schema.routes[section] and schema.routes[section][name]
      local dest = out
      if route then
        routed[route] = routed[route] or {}
        dest = routed[route]
        if dest[name] then
          self:fail(p, name .. " is also set by " .. dest[name].path, v)
        end
        dest[name] = { value = v, path = p }
      else
        if out[name] ~= nil then self:fail(p, "given twice (as " .. name .. ")", v) end
        out[name] = v
        -- a unit suffix (memory_margin_gib): the core's refusal of the
        -- field (training.memory_margin_bytes) is said as the user wrote it
        if factor and self.aliases then self.aliases[path .. "." .. name] = p end
      end
    end
  end
  return out
end

-- Returns the model table, its source, and the Hugging Face import's info
-- (`dropout`, ...) when the model is a config.json (of a preset: its
-- dropout only, what the config states), else nil.
function Norm:model(v)
  if v == nil then self:fail("model", "required field is missing", nil) end
  local model, source, info
  local function load_ref(ref, path)
    if pathish(ref) then return M.load_model_path(ref) end
    if not presets.is_model(ref) then
      -- a file name (an extension of letters: "qwen3-32b.jsn") that is not
      -- there: said as a missing file, with the files beside it
      if ref:match("%.%a+$") then
        self:fail(path, suggest.problem("no such file (a model preset name or a config.json path)", ref,
          M.files_beside(ref)), ref)
      end
      local all = presets.all_model_names()
      local hint = M.model_ref_hint(ref)
      if hint then self:fail(path, "unknown model preset; " .. hint, ref) end
      self:fail(path, suggest.problem("unknown model preset", ref, all) ..
        " (known: " .. util.join(all) .. "), or a config.json path",
        ref)
    end
    local m, info = presets.model(ref)
    -- the preset's config notes (what is priced how), as its file gives
    -- them; a file or snapshot directory of the same name here: the
    -- preset wins (pathish), and the user is told how to name the other
    local notes = {}
    for _, n in ipairs(info.notes or {}) do notes[#notes + 1] = n end
    if lfs.attributes(ref, "mode") then
      notes[#notes + 1] = ("%s names a preset and a %s here: the preset is taken (./%s for the local one)")
        :format(ref, lfs.attributes(ref, "mode"), ref)
    end
    return m, info.source, { dropout = info.dropout, dropout_stated = info.dropout_stated,
      attention_dropout = info.attention_dropout, hidden_dropout = info.hidden_dropout,
      notes = #notes > 0 and notes or nil, architecture = info.architecture }
  end
  if type(v) == "string" then
    model, source, info = load_ref(v, "model")
  elseif type(v) == "table" then
    if v.preset ~= nil and v.config ~= nil then
      self:fail("model", "give preset or config, not both", v)
    end
    if v.preset ~= nil then
      if type(v.preset) ~= "string" then self:fail("model.preset", "expected a preset name", v.preset) end
      if pathish(v.preset) then self:fail("model.preset", "expected a preset name (use model.config for a file)", v.preset) end
      model, source, info = load_ref(v.preset, "model.preset")
    elseif v.config ~= nil then
      if type(v.config) ~= "string" then self:fail("model.config", "expected a path to a config.json", v.config) end
      model, info = hf.load(v.config)
      source = v.config
    else
      model, source = {}, "table"
      -- a table hf() returned in the policy file: known by its name
      if type(v.name) == "string" then info = self.hf_imports[v.name] end
    end
    local over = self:fields(v, schema.model, "model", nil, nil, { preset = true, config = true })
    for k, x in pairs(over) do model[k] = x end
    -- a hand-written hybrid table: its layers carry their norms, one per
    -- block (src/core/hybrid.c), so norms_per_layer is 1 unless given
    if source == "table" and type(model.hybrid_layer_pattern) == "string" and model.hybrid_layer_pattern ~= ""
        and model.norms_per_layer == nil then
      model.norms_per_layer = 1
    end
  else
    self:fail("model", "expected a preset name, a path to a config.json, or a table", v)
  end
  return model, source, info
end

--- Parts users name that have no preset, for want of a vendor datasheet
-- (src/core/presets.c "No preset either"): their name gets that reason
-- rather than the nearest preset's name (an H800 PCIe card is not the
-- `h800-sxm-80gb`, an MI350X not the `mi355x-288gb`).
M.NO_PRESET = { "^h800.*pcie", "^h800.*nvl", "^a800.*pcie", "^a800.*40g", "^mi350x" }

local function no_preset_problem(name)
  local n = name:lower()
  for _, pattern in ipairs(M.NO_PRESET) do
    if n:match(pattern) then
      return "no device preset for this part (no vendor datasheet with its figures could be read); "
        .. "describe it as a table from a base preset and your vendor's figures, docs/policy.md \"cluster\""
    end
  end
  return nil
end

--- Short names users give a part with one preset, read as that preset
-- (the SXM board of an HGX / DGX host; an A100 has two presets, 40 and
-- 80 GB, and gets no alias: its name asks which).  `h100` is the SXM5 80
-- GB part of NVIDIA's H100 datasheet, not the power-limited 96 GB variant
-- of TorchTitan's benchmark hosts (`h100-96gb-500w`).  Read in any case;
-- the run's notes say which preset a short name was read as.
M.DEVICE_ALIASES = {
  h100 = "h100-sxm-80gb", h200 = "h200-sxm-141gb", h800 = "h800-sxm-80gb",
  -- the board named without its memory (one preset each)
  ["h100-sxm"] = "h100-sxm-80gb", ["h200-sxm"] = "h200-sxm-141gb", ["h800-sxm"] = "h800-sxm-80gb",
  a800 = "a800-sxm4-80gb", h20 = "h20-96gb", mi300x = "mi300x-192gb",
  mi325x = "mi325x-256gb", mi355x = "mi355x-288gb",
}

--- The preset a device name stands for: the name itself when it is a
-- preset, else the preset of its short name (M.DEVICE_ALIASES, any case,
-- e.g. "H100"), else nil.
-- @tparam string name
-- @treturn string|nil preset name
-- @treturn boolean whether it was read through an alias
function M.device_preset_name(name)
  local is_preset = require("apsearch.core").device_preset
  local lower = name:lower()
  if lower == name and pcall(is_preset, name) then return name, false end
  if M.DEVICE_ALIASES[lower] then return M.DEVICE_ALIASES[lower], true end
  if pcall(is_preset, lower) then return lower, true end
  return nil, false
end

-- The device names suggested for an unknown one, v: the preset names it
-- begins ("a100": the A100's two); else the short names one edit away
-- (M.DEVICE_ALIASES: "h10O": "h100", "h20O": "h200"), then the preset
-- names that are near, or else the short names that are ("hh100"); three
-- at most.
local function device_hints(v, names)
  local aliases = util.sorted_keys(M.DEVICE_ALIASES)
  local hint, listed = {}, {}
  local function add(n) if #hint < 3 and not listed[n] then hint[#hint + 1], listed[n] = n, true end end
  for _, n in ipairs(names) do if n:sub(1, #v) == v:lower() then add(n) end end
  if #hint > 0 then return hint end
  for _, a in ipairs(aliases) do if suggest.distance(v, a, 1) <= 1 then add(a) end end
  local named = suggest.closest(v, names)
  if #named == 0 and #hint == 0 then named = suggest.closest(v, aliases) end
  for _, n in ipairs(named) do add(n) end
  return hint
end

function Norm:device(v, path)
  if type(v) == "string" then
    local core = require "apsearch.core"
    local preset, aliased = M.device_preset_name(v)
    if aliased then
      self.device_alias = ("note: device %s read as the preset %s (apsearch presets lists the others)")
        :format(util.describe(v), preset)
      return preset
    end
    if not preset then
      local names = {}
      for i, d in ipairs(core.device_presets()) do names[i] = d.name end
      -- a cluster spec without its colon ("h100x8", "h100-8"): the device
      -- and count it meant, in the spec's form
      -- (at most a rack's 72: "h100-80" is more likely the memory)
      -- (a count the spec takes: 1 to 72 without leading zeros; "h100x0"
      -- would be answered with a spec that is refused in turn)
      local dev, n = v:match("^(.-)[xX%-_ ]([1-9]%d?)$")
      if dev and M.device_preset_name(dev) and tonumber(n) <= 72 then
        self:fail(path, ("unknown device preset; did you mean the cluster %q (DEVICE:NODES[xGPUS]: %s GPUs in one "
          .. "host)?"):format(dev .. ":1x" .. n, n), v)
      end
      -- the count first ("64xh100", "8x H100"): that many GPUs, in hosts
      -- of the device's size when they fill them
      n, dev = v:match("^([1-9]%d*)%s*[xX%*]%s*(.+)$")
      local name = dev and M.device_preset_name(dev)
      if name and tonumber(n) < 2 ^ 24 then
        local host = M.HOST_GPUS[name] or M.HOST_GPUS_DEFAULT
        local k = math.tointeger(tonumber(n))
        local spec = k % host == 0 and ("%s:%dx%d"):format(dev, k // host, host) or ("%s:1x%d"):format(dev, k)
        self:fail(path, ("unknown device preset; did you mean the cluster %q (DEVICE:NODES[xGPUS]: %d GPUs)?")
          :format(spec, k), v)
      end
      local mean = suggest.did_you_mean_of(device_hints(v, names))
      local problem = "unknown device preset" .. (mean and ("; " .. mean) or "")
      self:fail(path, (no_preset_problem(v) or problem) ..
        " (known: " .. table.concat(names, ", ") .. ")", v)
    end
    return v
  end
  if type(v) ~= "table" then
    self:fail(path, "expected a device preset name or a table", v)
  end
  local d = self:fields(v, schema.device, path)
  return d
end

--- GPUs of one host (a node of `devices_per_node`) that `DEVICE` and
-- `DEVICE:NODES` take when the spec gives no `xGPUS`: 8 (an HGX / DGX
-- board: A100, H100, H200, B200), or the compute tray of a rack-scale part,
-- 4 Blackwell GPUs with two Grace CPUs (NVIDIA GB200 NVL72 datasheet,
-- 2024, and GB300 NVL72 datasheet, 2025: 18 compute trays of 4 GPUs, 72
-- per rack).  Keys are device preset names.
M.HOST_GPUS_DEFAULT = 8
M.HOST_GPUS = { gb200 = 4, gb300 = 4 }

--- Parses `DEVICE[:NODES[xGPUS]]`, e.g. `h100-sxm-80gb:2x8`; without
-- `xGPUS` a node has the device's host size (M.HOST_GPUS: 4 for gb200 and
-- gb300, else 8).
-- @tparam string s the spec
-- @treturn table|nil cluster table, or nil if s is not such a spec
function M.parse_cluster_spec(s)
  local dev, colon, rest = s:match("^([^:]+)(:?)(.*)$")
  if not dev or (colon == ":" and rest == "") then return nil end
  local host = M.HOST_GPUS[(M.device_preset_name(dev) or dev):lower()] or M.HOST_GPUS_DEFAULT
  if rest == "" then return presets.cluster(dev, 1, host) end
  local nodes, gpus = rest:match("^(%d+)x(%d+)$")
  if not nodes then nodes, gpus = rest:match("^(%d+)$"), tostring(host) end
  if not nodes then return nil end
  nodes, gpus = math.tointeger(tonumber(nodes)), math.tointeger(tonumber(gpus))
  -- each factor first: an integer product of two large counts wraps
  -- (4611686018427387905 x 4 is 4 in 64-bit integers)
  if not nodes or not gpus or nodes >= 2 ^ 24 or gpus >= 2 ^ 24 or nodes * gpus >= 2 ^ 24 then
    util.fail("cluster", "num_devices", "nodes x devices per node must be below 2^24", rest)
  end
  return presets.cluster(dev, nodes, gpus)
end

function Norm:cluster(v, routed)
  if v == nil then self:fail("cluster", "required field is missing", nil) end
  if type(v) == "string" then
    local c = M.parse_cluster_spec(v)
    if not c then self:fail("cluster", "expected a table or DEVICE[:NODES[xGPUS]]", v) end
    v = c
  end
  if type(v) ~= "table" then self:fail("cluster", "expected a table", v) end
  local c = self:fields(v, schema.cluster, "cluster", "cluster", routed)
  if c.device == nil then self:fail("cluster.device", "required field is missing", nil) end
  local dkey
  for k in pairs(v) do if schema.resolve(schema.cluster, k) == "device" then dkey = k end end
  c.device = self:device(v[dkey], "cluster.device")
  if c.nodes then
    local per = c.devices_per_node or 8
    -- the core takes at most 2^24 devices; check before multiplying
    if c.nodes > 2 ^ 24 or per > 2 ^ 24 or c.nodes * per > 2 ^ 24 then
      self:fail("cluster.nodes", "nodes x devices_per_node must be at most 2^24", c.nodes)
    end
    local n = c.nodes * per
    if c.num_devices and c.num_devices ~= n then
      self:fail("cluster.num_devices", string.format(
        "disagrees with nodes x devices_per_node = %d x %d = %d", c.nodes, per, n), c.num_devices)
    end
    c.num_devices = math.tointeger(n)
    c.devices_per_node = per
    c.nodes = nil
  end
  if c.num_devices == nil then
    self:fail("cluster.num_devices", "required field is missing (or give nodes)", nil)
  end
  c.devices_per_node = c.devices_per_node or math.min(8, c.num_devices)
  return c
end

--- The settings of the release line a policy's software runs
-- (apsearch.stacks.policy_software: training.software, else the stack
-- training.stack names; apsearch.stacks.release_settings), written into
-- p.training where the policy leaves them unset, and said in a note (as
-- `apsearch validate` reads a row's `software`); a training.software that
-- matches no release line is said too.  Nothing without either.
-- @tparam table p policy (p.training, p.warnings; mutated)
-- @tparam[opt] string origin where training.software was given (the
--   policy file, --set), for the error of a blank one
-- @raise a blank training.software, naming origin, field and value
function M.apply_release_settings(p, origin)
  local tr = p.training
  if tr.software ~= nil and not tostring(tr.software):find("%S") then
    util.fail(origin or "policy", "training.software", "expected a release name such as \"Megatron-Bridge 25.09\"",
      tr.software)
  end
  local software = stacks.policy_software(tr)
  if not software then return end
  local fw = tr.framework or "megatron"
  local set, name = {}, nil
  for _, e in ipairs(stacks.fill_release_settings(tr, software)) do
    set[#set + 1] = ("%s = %s"):format(e.key, util.describe(e.value))
    name = name or e.name
  end
  local whose = tr.software and ("training.software %s"):format(util.describe(tr.software)) or ("training.stack %s"):format(tr.stack)
  local month_note = tr.software and stacks.release_month_note(software, fw)
  if month_note then p.warnings[#p.warnings + 1] = "note: training.software: " .. month_note end
  if #set > 0 then
    p.warnings[#p.warnings + 1] = ("note: %s: estimated as %s run it: %s (set them in the policy to price " ..
      "another setting)"):format(whose, name, table.concat(set, ", "))
  elseif tr.software and not stacks.match(software, fw) then
    p.warnings[#p.warnings + 1] = ("note: %s names no release line apsearch knows for framework %s " ..
      "(docs/policy.md \"Software stack and release\"): the framework's own defaults"):format(whose, fw)
  end
end


function Norm:training(v, routed)
  if v == nil then v = {} end
  if type(v) ~= "table" then self:fail("training", "expected a table", v) end
  local t = self:fields(v, schema.training, "training")
  for name, r in pairs(routed.training or {}) do
    if t[name] ~= nil then
      self:fail(r.path, name .. " is also set in training", r.value)
    end
    t[name] = r.value
    self.aliases["training." .. name] = r.path
  end
  -- the core would refuse them as 0 ("got 0" for a field never given)
  for _, name in ipairs({ "global_batch_size", "seq_length" }) do
    if t[name] == nil and not self.partial then self:fail("training." .. name, "required field is missing", nil) end
  end
  local problem, field = stacks.check(t)
  if problem then self:fail("training." .. (field or "stack"), problem, t[field or "stack"]) end
  return t
end

local RANGE_KEYS = { min = true, max = true, step = true, pow2 = true }

function Norm:range(x, path, kind)
  for k, v in pairs(x) do
    if not RANGE_KEYS[k] then
      self:fail(path .. "." .. tostring(k), suggest.unknown("unknown field", k, { "max", "min", "pow2", "step" }), v)
    end
  end
  if kind ~= "posint" and kind ~= "nonnegint" and kind ~= "zero" and kind ~= "recompute_layers" then
    self:fail(path, "a range {min=, max=} needs an integer dimension", x)
  end
  for _, k in ipairs({ "min", "max" }) do
    if not util.is_integer(x[k]) then self:fail(path .. "." .. k, "expected an integer", x[k]) end
  end
  if x.step ~= nil and (not util.is_integer(x.step) or x.step < 1) then
    self:fail(path .. ".step", "must be a positive integer", x.step)
  end
  if x.pow2 ~= nil and type(x.pow2) ~= "boolean" then
    self:fail(path .. ".pow2", "expected true or false", x.pow2)
  end
  if x.pow2 and x.step ~= nil then self:fail(path, "give step or pow2, not both", x) end
  if x.max < x.min then self:fail(path .. ".max", "must be >= min = " .. util.describe(x.min), x.max) end
  -- the limit is on the values produced: a power-of-two range has at most
  -- 63 (pow2 = true up to 131,072 GPUs or more is fine)
  if not x.pow2 and (x.max - x.min) / (x.step or 1) >= M.max_range_values then
    self:fail(path, "range has more than " .. M.max_range_values .. " values", x)
  end
  local list
  if x.pow2 then
    if x.min < 1 then self:fail(path .. ".min", "must be >= 1 with pow2", x.min) end
    list = pow2_list(x.min, x.max)
  else
    list = range_list(x.min, x.max, x.step or 1)
  end
  if #list == 0 then self:fail(path, "range is empty", x) end
  return list
end

local function is_seq(t)
  local n = #t
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then return false end
  end
  return true
end

function Norm:dimension(dim, x, path)
  local kind = schema.strategy[dim]
  local values
  if kind == "partition" or kind == "offsets" then
    if type(x) == "table" and #x > 0 and type(x[1]) == "number" then
      values = { x }                         -- one array
    elseif type(x) == "table" and is_seq(x) then
      values = x                             -- a list of arrays / "even"
    else
      values = { x }
    end
  elseif type(x) == "table" and (x.min ~= nil or x.max ~= nil or x.step ~= nil or x.pow2 ~= nil) then
    values = self:range(x, path, kind)
  elseif type(x) == "string" and x:match("^%s*%-?%d+%s*%.%.%s*%-?%d+%s*$") then
    -- "lo..hi": the range {min = lo, max = hi} (as --fix tp_degree=1..4)
    local lo, hi = x:match("^%s*(%-?%d+)%s*%.%.%s*(%-?%d+)%s*$")
    values = self:range({ min = math.tointeger(tonumber(lo)), max = math.tointeger(tonumber(hi)) }, path, kind)
  elseif type(x) == "table" then
    if not is_seq(x) then
      for k, v in pairs(x) do
        if math.type(k) ~= "integer" then self:fail(path .. "." .. tostring(k), "unknown field", v) end
      end
      self:fail(path, "expected a list of values", x)
    end
    values = x
  else
    values = { x }
  end
  if #values == 0 then self:fail(path, "empty list of values", x) end
  local out, seen = util.array(), {}
  for i, v in ipairs(values) do
    local p = #values > 1 and string.format("%s[%d]", path, i) or path
    v = schema.check_value(kind, v, self:checker(p))
    local key = type(v) == "table" and ("#" .. table.concat(v, ",")) or tostring(v)
    if not seen[key] then
      seen[key] = true
      out[#out + 1] = v
    end
  end
  return out
end

--- Devices sold as rack-scale NVLink systems, and the GPUs of one rack's
-- NVLink domain: GB200 NVL72 and GB300 NVL72 (NVIDIA GB200 NVL72
-- datasheet, 2024; GB300 NVL72 datasheet, 2025: 72 GPUs joined by the
-- rack's NVLink Switch trays).  A policy on them that leaves
-- cluster.nvlink_domain_size at one host gets a note (M.rack_note).
M.RACK_NVLINK_DOMAIN = { gb200 = 72, gb300 = 72 }

--- The note for a multi-host cluster of a rack-scale device
-- (M.RACK_NVLINK_DOMAIN) whose NVLink domain is left at one host smaller
-- than the rack's domain: every
-- collective and all-to-all between its compute trays is then priced on
-- the NICs, which is not how an NVL72 rack runs (docs/modeling.md "Rank
-- placement and links").  nil otherwise.
-- @tparam table cluster normalized cluster (`device` a preset name or a
--   table with `base` / `name`, `devices_per_node`, `num_devices`,
--   `nvlink_domain_size`)
-- @treturn string|nil the note, "note: ..."
function M.rack_note(cluster)
  local d = cluster.device
  local name = type(d) == "table" and (d.base or d.name) or d
  local rack = M.RACK_NVLINK_DOMAIN[tostring(name or ""):lower()]
  local per_node, n = cluster.devices_per_node or 0, cluster.num_devices or 0
  -- hosts of a rack or more (gb200:3x72) already span an NVL72 domain
  if not rack or n <= per_node or per_node >= rack or (cluster.nvlink_domain_size or 0) > per_node then
    return nil
  end
  return string.format("note: cluster.device %s with an NVLink domain of one %d-GPU host: its %d GPUs talk " ..
    "over the NICs between hosts; an NVL72 rack is one NVLink domain of %d GPUs: set " ..
    "cluster.nvlink_domain_size (--set cluster.nvlink_domain_size=64 for 64 GPUs a rack; docs/policy.md \"cluster\")",
    tostring(name), per_node, n, rack)
end

--- True when a search_space table pins layer_recompute to full alone and
-- says nothing of recompute_num_layers (`--fix layer_recompute=full`).
-- @tparam table|nil ss a raw search_space (or the --fix values)
-- @treturn boolean
function M.only_full_recompute(ss)
  if type(ss) ~= "table" or ss.recompute_num_layers ~= nil then return false end
  local v = ss.layer_recompute
  if type(v) == "string" then return v == "full" end
  if type(v) ~= "table" or #v == 0 then return false end
  for _, x in ipairs(v) do if x ~= "full" then return false end end
  return true
end

--- The search space of a policy that gives none (`search_space` left
-- out): the training framework's full space for the model on the cluster
-- (apsearch.defaults.search_space: DP / FSDP / HSDP, ZeRO, TP + SP, PP +
-- VPP, CP for long sequences, EP / ETP for MoE, recompute modes).
-- `--fix` values replace these dimensions.
-- @tparam table cluster the normalized cluster
-- @tparam table model the normalized model
-- @tparam table training the normalized training (`framework`,
--   `seq_length`; the core's defaults where absent)
-- @treturn table a raw search_space table
function M.default_search_space(cluster, model, training)
  local core = require "apsearch.core"
  local t = util.copy(training or {})
  local d = core.defaults("training")
  t.framework = t.framework or d.framework
  if not util.is_integer(t.seq_length) or t.seq_length < 1 then t.seq_length = nil end
  return require("apsearch.defaults").search_space(model, cluster, t)
end

--- One line describing the default search space (for the note on stderr).
-- @tparam table space the normalized search space
-- @treturn string
function M.describe_space(space)
  local parts = { "data_parallel = " .. space.data_parallel }
  for _, d in ipairs(schema.dimensions) do
    local vals = space.dims[d]
    if vals then
      local t = {}
      for i, v in ipairs(vals) do t[i] = tostring(v) end
      parts[#parts + 1] = d .. " = {" .. table.concat(t, ", ") .. "}"
    end
  end
  return table.concat(parts, ", ")
end

function Norm:search_space(v)
  if v == nil then v = {} end
  if type(v) ~= "table" then self:fail("search_space", "expected a table", v) end
  local space = { data_parallel = "manual", dims = {} }
  for k, x in pairs(v) do
    local path = "search_space." .. tostring(k)
    if k == "data_parallel" then
      if x ~= "auto" and x ~= "manual" then
        self:fail(path, "expected \"auto\" or \"manual\"", x)
      end
      space.data_parallel = x
    else
      local dim = schema.strategy_aliases[k] or k
      if type(dim) ~= "string" or not schema.strategy[dim] or dim == "allow_idle_devices" then
        self:fail(path, suggest.problem("unknown field", k, schema.dimensions) ..
          " (known: " .. util.join(schema.dimensions) .. ")", x)
      end
      if space.dims[dim] then self:fail(path, "given twice (alias of " .. dim .. ")", x) end
      space.dims[dim] = self:dimension(dim, x, path)
    end
  end
  return space
end

function Norm:constraints(v, routed)
  if v == nil then v = {} end
  if type(v) ~= "table" then self:fail("constraints", "expected a table", v) end
  local c = self:fields(v, schema.constraints, "constraints", "constraints", routed)
  local out = { allow_idle_devices = c.allow_idle_devices or false, rules = {},
                max_candidates = c.max_candidates or schema.default_max_candidates }
  local list = v.rules
  if list ~= nil then
    if type(list) ~= "table" or not is_seq(list) then
      self:fail("constraints.rules", "expected a list of rule names, files or functions", list)
    end
    for i, r in ipairs(list) do
      local p = string.format("constraints.rules[%d]", i)
      if type(r) == "function" then
        out.rules[#out.rules + 1] = rules.from_function(r, i)
      elseif type(r) == "table" then
        local ok, rule = pcall(rules.normalize, r, self:origin(p) .. ": " .. p)
        if not ok then error(rule, 0) end
        out.rules[#out.rules + 1] = rule
      elseif type(r) == "string" then
        local path = r
        if not r:match("%.lua$") then
          local cands = { util.join_path(self.base_dir, "rules/" .. r .. ".lua"),
                          util.join_path(util.root(), "rules/" .. r .. ".lua") }
          path = nil
          for _, cnd in ipairs(cands) do if util.file_exists(cnd) then path = cnd break end end
          if not path then
            -- the example rules ship beside the examples, not among the built-ins
            local example = util.join_path(util.root(), "examples/rules/" .. r .. ".lua")
            local hint = util.file_exists(example)
              and ("; apsearch's example " .. example .. " is one: give its path, or copy it to rules/ next to the policy")
              or ""
            self:fail(p, "unknown rule (no rules/" .. r .. ".lua next to the policy or in the apsearch rules directory"
              .. hint .. ")", r)
          end
        elseif not util.file_exists(path) then
          self:fail(p, "rule file not found", r)
        end
        out.rules[#out.rules + 1] = rules.load_file(path, M.env(util.dirname(path)))
      else
        self:fail(p, "expected a rule name, a .lua file, a rule table or a function", r)
      end
    end
  end
  return out
end

-- resolves paths written in the policy relative to its directory;
-- returns the field and value of an output path that would leave it
local function resolve_paths(raw, base)
  if type(raw.model) == "string" and pathish(raw.model) then
    raw.model = util.join_path(base, raw.model)
  elseif type(raw.model) == "table" and type(raw.model.config) == "string" then
    raw.model.config = util.join_path(base, raw.model.config)
  end
  if type(raw.constraints) == "table" and type(raw.constraints.rules) == "table" then
    for i, r in ipairs(raw.constraints.rules) do
      if type(r) == "string" and r:match("%.lua$") then
        raw.constraints.rules[i] = util.join_path(base, r)
      end
    end
  end
  if type(raw.outputs) == "table" and type(raw.outputs.dir) == "string" then
    local d = raw.outputs.dir
    -- a policy runs sandboxed: it may name a directory beside it, not
    -- choose where on the machine the run writes (--out does that)
    if d:sub(1, 1) == "/" or d:sub(1, 1) == "~" or ("/" .. d .. "/"):find("/%.%./") then
      return "outputs.dir", d
    end
    local joined = util.join_path(base, d)
    if not util.resolves_under(joined, base) then return "outputs.dir", d end
    raw.outputs.dir = joined
  end
  if type(raw.objective) == "string" and raw.objective:match("%.lua$") then
    raw.objective = util.join_path(base, raw.objective)
  end
end

-- The schema kinds check_replaced checks (a device, a model or a layer
-- list is its section's own normalization's to check).
local SCALAR_KINDS = { string = true, bool = true, posint = true, nonnegint = true, nonneg = true,
                       fraction = true, zero = true, stack = true, graph_scope = true }

-- A command-line override replaces a field the file gives: the file's own
-- value is checked first, so an invalid one is said rather than hidden
-- (`top_k = 0/0` with --top-k 3 ran; a breaker pass).  Fields of the
-- training, cluster and constraints sections and top_k, by their schema
-- kinds; what else the normalization checks it checks on the result.
local function check_replaced(raw, file, key, flag)
  -- raw: the file's own table, before any override
  local sec, field = tostring(key):match("^(%a+)%.([%w_]+)$")
  local v, kind, factor
  -- raw access: the script's tables may carry metamethods
  if key == "top_k" then
    v, kind = rawget(raw, "top_k"), "posint"
  elseif sec and (sec == "training" or sec == "cluster" or sec == "constraints") and schema[sec]
      and type(rawget(raw, sec)) == "table" then
    v = rawget(rawget(raw, sec), field)
    local name
    name, factor = schema.resolve(schema[sec], field)
    kind = name and schema[sec][name]
  end
  if v == nil or kind == nil or not (type(kind) == "table" and kind.enum or SCALAR_KINDS[kind]) then return end
  if factor and type(v) == "number" then v = v * factor end
  schema.check_value(kind, v, function(problem, got)
    util.fail(file, key, problem .. " (replaced by " .. flag .. ", but the file's own value is invalid)", got)
  end)
end

--- Validates and normalizes a policy table.
-- @tparam table raw the table a policy file returned
-- @tparam string file its file name (used in error messages)
-- @tparam[opt] table opts `set` (array of "key=value"), `fix` (array of
--   "dim=value"), `top_k` (number), `base_dir` (default: the file's
--   directory; paths in the policy are relative to it), `rules` (array of
--   rule files -- relative to the current directory -- or loaded rules,
--   added to the policy's: `--rules`), `objective` (a built-in name, an
--   objective file or a loaded objective; replaces the policy's:
--   `--objective`), `hf_imports` (the second value of `env`: configs the
--   policy file imported with `hf()`, whose dropout applies to a model
--   table of the same name), `partial` (true: the training fields may be
--   missing, for a probe of the model and cluster alone; no stack's
--   efficiency profile is applied to its device)
-- @treturn table the normalized policy: `file, name, description, model,
--   model_source, cluster, training, search_space = {data_parallel, dims},
--   constraints = {allow_idle_devices, rules}, objective, objective_name,
--   top_k, outputs = {format, dir}, overrides` (array of `{kind, key, value}`)
-- @raise `<file|--set|--fix>: <field>: <problem> (got <value>)`
function M.from_table(raw, file, opts)
  opts = opts or {}
  if type(raw) ~= "table" then
    util.fail(file, "(return value)", "a policy must return a table", raw)
  end
  local original = raw
  raw = util.deepcopy(raw)
  -- no search_space in the policy: the default space (M.default_search_space)
  local default_space = raw.search_space == nil
  local base_dir = opts.base_dir or util.dirname(file)
  local bad_field, bad_value = resolve_paths(raw, base_dir)
  if bad_field then
    util.fail(file, bad_field, "must be a directory beside the policy (no absolute path, no ..); "
      .. "--out DIR writes anywhere else", bad_value)
  end

  local overrides, set_notes, applied_values = util.array(), {}, {}
  for _, s in ipairs(opts.set or {}) do
    -- {flag = "--model", text = "model=..."}: a shortcut option, named as given
    local flag, text = nil, s
    if type(s) == "table" then flag, text = s.flag, s.text end
    local key, value = M.parse_assignment(text, flag or "--set")
    check_replaced(original, file, key, flag or "--set")
    -- --cluster's spec (or --set cluster=SPEC) as a table, so that --set
    -- cluster.<field> can follow
    local applied = value
    if (flag == "--cluster" or key == "cluster") and type(value) == "string" then
      applied = M.parse_cluster_spec(value) or value
    end
    apply_set(raw, key, applied)
    -- a table replaced after --set gave fields inside it (--set
    -- cluster.device.X=v, then --set cluster.device=b200): those fields
    -- apply on top of the new table, as given, and a note says so
    local kept, node = {}, raw
    for seg in key:gmatch("[^%.]+") do node = type(node) == "table" and node[seg] or nil end
    local holds = type(node) == "table" or (type(node) == "string" and (key == "model" or key == "cluster.device"))
    for i, ov in ipairs(overrides) do
      -- which preset or file the table is (base, preset, config, name) is
      -- what the replacement changes: not carried over
      local rest = ov.key:sub(#key + 2)
      if holds and ov.key:sub(1, #key + 1) == key .. "." and not M.TABLE_IDENTITY[rest] then
        apply_set(raw, ov.key, applied_values[i])
        kept[#kept + 1] = ov.key
      end
    end
    if #kept > 0 then
      set_notes[#set_notes + 1] = ("note: %s %s replaces that table; %s, given before it, still applied on top")
        :format(flag or "--set", key, table.concat(kept, ", "))
    end
    overrides[#overrides + 1] = { kind = "set", key = key, value = value, flag = flag }
    applied_values[#overrides] = applied
  end
  local fixed, fix_notes = {}, set_notes
  for _, s in ipairs(opts.fix or {}) do
    local key, value = M.fix_field(M.parse_assignment(s, "--fix"))
    apply_fix(raw, key, value)
    overrides[#overrides + 1] = { kind = "fix", key = key, value = value }
    local dim = schema.strategy_aliases[key] or key
    -- a dimension fixed twice keeps the last (as an option given twice)
    if fixed[dim] ~= nil then
      fix_notes[#fix_notes + 1] = ("note: --fix %s given twice: %s replaces %s"):format(key,
        util.describe(value), util.describe(fixed[dim]))
    end
    fixed[dim] = value
  end
  -- `--fix layer_recompute=full` alone recomputes every layer, as
  -- `estimate --strategy layer_recompute=full` and Megatron's
  -- --recompute-granularity full do: the space's recompute_num_layers
  -- "auto" (the fewest layers that fit) could resolve to none of them
  -- -- unless recompute_num_layers was given as a number: by --fix, by
  -- --set or by the policy's own space
  local rnl = type(raw.search_space) == "table" and raw.search_space.recompute_num_layers
  local auto = rnl == nil or rnl == false or rnl == "auto" or
    (type(rnl) == "table" and #rnl == 1 and rnl[1] == "auto")
  local full_all = fixed.recompute_num_layers == nil and auto and
    M.only_full_recompute({ layer_recompute = fixed.layer_recompute })
  if full_all then apply_fix(raw, "recompute_num_layers", -1) end
  if opts.top_k ~= nil then
    check_replaced(original, file, "top_k", "--top-k")
    raw.top_k = opts.top_k
    overrides[#overrides + 1] = { kind = "set", key = "top_k", value = opts.top_k, flag = "--top-k" }
  end

  local n = setmetatable({ file = file, base_dir = base_dir, overrides = overrides,
                           aliases = {}, hf_imports = opts.hf_imports or {}, partial = opts.partial }, Norm)
  -- (in key order: the first of several unknown fields is the same every run)
  for _, k in ipairs(util.sorted_keys(raw)) do
    local v = raw[k]
    if not TOP[k] then n:fail(tostring(k), suggest.unknown(misplaced_field(k, v), k, suggest.keys(TOP)), v) end
  end
  for _, k in ipairs({ "name", "description" }) do
    if raw[k] ~= nil then
      schema.check_value("string", raw[k], function(problem, got) n:fail(k, problem, got) end)
    end
  end

  local routed = {}
  local p = {
    file = file,
    name = raw.name or util.basename(file):gsub("%.lua$", ""),
    description = raw.description,
    -- built from --model / --cluster (no policy file): an error in the
    -- model or cluster names that option (search.context)
    built = opts.built or nil,
  }
  local model_info
  p.model, p.model_source, model_info = n:model(raw.model)
  p.cluster = n:cluster(raw.cluster, routed)
  p.warnings = util.array()
  for _, w in ipairs(fix_notes) do p.warnings[#p.warnings + 1] = w end
  if full_all then
    p.warnings[#p.warnings + 1] = "note: --fix layer_recompute=full recomputes every layer (recompute_num_layers "
      .. "= -1): the space's \"auto\", the fewest layers that fit, could have been none"
  end
  p.constraints = n:constraints(raw.constraints, routed)
  p.training = n:training(raw.training, routed)
  if default_space then
    -- --fix / --set search_space.* values replace the default's dimensions
    local space = M.default_search_space(p.cluster, p.model, p.training)
    for k, v in pairs(raw.search_space or {}) do
      local dim = schema.strategy_aliases[k] or k
      space[dim] = nil
      space[k] = v
    end

    p.search_space = n:search_space(space)
    p.search_space.default = true
    local whose = opts.built and "no policy file" or (file .. " has no search_space")
    -- an MoE model's expert parallelism is searched without a listed
    -- dimension (space.lua: the divisors of the expert count that fit)
    local ep = (p.model.num_experts or 0) > 0 and not p.search_space.dims.ep_degree and
      (", ep_degree = {divisors of the %d experts that fit a stage}"):format(p.model.num_experts) or ""
    p.warnings[#p.warnings + 1] = "note: " .. whose .. "; " .. M.DEFAULT_SPACE_NOTE .. ": " ..
      M.describe_space(p.search_space) .. ep
  else
    p.search_space = n:search_space(raw.search_space)
  end
  if n.device_alias then p.warnings[#p.warnings + 1] = n.device_alias end
  local rack = M.rack_note(p.cluster)
  if rack then p.warnings[#p.warnings + 1] = rack end
  M.apply_release_settings(p, n:origin("training.software"))
  -- the stack's efficiency profile (training.stack, else the one of
  -- training.software, else the framework's newest) on the device; a
  -- calibration file applies over it
  p.stack = stacks.resolve(p.training)
  -- a Hugging Face config trains with the dropout it states (apsearch.hf,
  -- DROPOUT_KEYS; 0.0 included) or, stating none, its class's default,
  -- each probability (attention, hidden) unless the policy sets it or
  -- training.dropout itself
  -- TorchTitan (fsdp2) builds its own model code, which has no dropout:
  -- a config's dropout > 0 does not apply there, and is said so
  if model_info and model_info.dropout_stated and p.training.dropout == nil then
    if model_info.dropout and p.training.framework == "fsdp2" then
      p.warnings[#p.warnings + 1] = ("note: the model config's dropout is not applied: TorchTitan's " ..
        "models have none (framework = fsdp2)")
    elseif p.training.attention_dropout == nil and p.training.hidden_dropout == nil then
      p.training.dropout = model_info.dropout == true
      p.training.attention_dropout = model_info.attention_dropout
      p.training.hidden_dropout = model_info.hidden_dropout
    else
      for _, k in ipairs({ "attention_dropout", "hidden_dropout" }) do
        if p.training[k] == nil then p.training[k] = model_info[k] end
      end
    end
  end
  -- LFM2, MiniMax: NeMo AutoModel trains transformers' eager modules (no
  -- Liger patch, no model of its own: docs/modeling.md "LFM2's gated
  -- short convolutions"), unless the policy says otherwise
  local mixer = p.model and require("apsearch.defaults").transformers_mixer(p.model)
  if mixer and p.training.hf_eager_layer == nil then
    p.training.hf_eager_layer = true
  end
  -- NeMo AutoModel builds a class outside its registry through
  -- transformers (launch/automodel.lua M.transformers_built): no expert
  -- parallelism there (src/core/moe.c), unless the policy says otherwise
  if p.training.transformers_model == false and mixer then
    n:fail("training.transformers_model", mixer.family .. " has no model of AutoModel's own: AutoModel builds " ..
      "transformers' class", false)
  end
  if p.training.framework == "automodel" and p.training.transformers_model == nil and p.model and
      require("apsearch.launch.automodel").transformers_built(p.model, model_info and model_info.architecture) then
    p.training.transformers_model = true
  end
  -- the stack's profile, once the training table says which kernels run
  -- (AutoModel's attention follows transformers_model); a probe
  -- (opts.partial) keeps the device as given: its training, hence its
  -- stack, is not the run's (a built policy copies that device)
  if not opts.partial then stacks.apply(p.cluster, p.stack, p.training) end
  -- a setting that acts only with another is refused, not ignored (the
  -- core refuses its own: src/core/training.c aps_training_dependencies)
  if p.training.cuda_graph_scope ~= nil and p.training.cuda_graphs ~= true then
    n:fail("training.cuda_graph_scope", "needs training.cuda_graphs = true (the scope of " ..
      "the CUDA graphs Megatron captures, --cuda-graph-modules)", p.training.cuda_graph_scope)
  end
  -- what the config has that no estimate term prices (apsearch.hf: gpt-oss
  -- sinks, Gemma 3's vision tower, ...), said on stderr as notes
  for _, line in ipairs(model_info and model_info.notes or {}) do
    p.warnings[#p.warnings + 1] = "note: " .. line
  end
  -- a sequence past the positions the model was trained for: RoPE
  -- extrapolates (the estimate holds, the quality may not); learned
  -- positions are refused by the core
  local mpe = p.model.max_position_embeddings
  if (p.model.position_embedding == nil or p.model.position_embedding == "rope") and
      util.is_integer(mpe) and mpe > 0 and util.is_integer(p.training.seq_length) and
      p.training.seq_length > mpe then
    p.warnings[#p.warnings + 1] = string.format("warning: training.seq_length = %d is longer than " ..
      "the model's max_position_embeddings = %d (%s); RoPE positions past it are extrapolated",
      p.training.seq_length, mpe, tostring(p.model.name))
  end
  -- expert dimensions on a model without experts: the space has no such
  -- level (space.lua), so they would be dropped without a word
  if (p.model.num_experts or 0) == 0 then
    local dims = p.search_space.dims or {}
    for _, f in ipairs(require("apsearch.space").moe_fields) do
      if dims[f] then
        p.warnings[#p.warnings + 1] = string.format("warning: search_space.%s: %s has no experts; " ..
          "the dimension is ignored", f, tostring(p.model.name))
      end
    end
  end
  -- core field -> where the user wrote it (cluster.memory_limit_gib -> training.memory_limit_bytes)
  p.aliases = n.aliases
  for _, r in ipairs(opts.rules or {}) do
    if type(r) == "string" then
      if not util.file_exists(r) then util.fail("--rules", "rules", "rule file not found", r) end
      r = rules.load_file(r, M.env(util.dirname(r)))
    end
    p.constraints.rules[#p.constraints.rules + 1] = r
  end

  local obj = raw.objective
  local obj_fail = function(problem, v) n:fail("objective", problem, v) end
  if opts.objective ~= nil then
    obj = opts.objective
    obj_fail = function(problem, v) util.fail("--objective", "objective", problem, v) end
  end
  if obj == nil then obj = "step_time" end
  if type(obj) == "string" and obj:match("%.lua$") then
    if not util.file_exists(obj) then obj_fail("objective file not found", obj) end
    obj = rules.load_objective(obj)
  end
  local function make_ctx()
    return require("apsearch.core").context(p.model, p.cluster, p.training)
  end
  if type(obj) == "function" then
    p.objective, p.objective_name = rules.objective_comparator(obj), "custom"
  elseif type(obj) == "table" then
    local spec = obj
    if not spec.source then
      local ok, v = pcall(rules.normalize_objective, obj, n:origin("objective") .. ": objective")
      if not ok then error(v, 0) end
      spec = v
    end
    p.objective = { name = spec.name, description = spec.description, unit = spec.unit,
      source = spec.source, better = rules.objective_comparator(spec, make_ctx) }
    -- a score's direction (a `better` comparator has none to say)
    if spec.score then p.objective.maximize = spec.maximize == true end
    p.objective_name = spec.name
  elseif type(obj) == "string" and objectives.is_builtin(obj) then
    p.objective, p.objective_name = obj, obj
  else
    local problem = "expected " .. util.join(objectives.names) ..
      ", an objective file (.lua), an objective table or a function(a, b)"
    if type(obj) == "string" then problem = suggest.problem(problem, obj, objectives.names) end
    obj_fail(problem, obj)
  end

  p.top_k = 10
  if raw.top_k ~= nil then
    p.top_k = schema.check_value("posint", raw.top_k, n:checker("top_k"))
  end

  p.outputs = { format = "table" }
  if raw.outputs ~= nil then
    if type(raw.outputs) ~= "table" then n:fail("outputs", "expected a table", raw.outputs) end
    for k, v in pairs(raw.outputs) do
      local path = "outputs." .. tostring(k)
      if k == "format" then
        p.outputs.format = schema.check_value({ enum = OUTPUT_FORMATS }, v, n:checker(path))
      elseif k == "dir" then
        p.outputs.dir = schema.check_value("string", v, n:checker(path))
      else
        n:fail(path, suggest.unknown("unknown field", k, { "dir", "format" }), v)
      end
    end
  end
  if opts.shadow_check ~= false then
    for _, note in ipairs(check_shadowed(original, file, opts)) do p.warnings[#p.warnings + 1] = note end
  end
  p.overrides = overrides
  return p
end

--- Runs a policy file in the sandbox (apsearch.rules: text only, the
-- allowlisted environment of `env`, instruction and memory limits) and
-- returns the table it returned, as plain data (not yet validated).
-- @tparam string path the policy file
-- @treturn table|any what the file returned
-- @treturn table the configs its `hf()` calls imported (see `env`)
-- @raise `<file>: cannot open policy file (...)` (also for a FIFO, a
--   device or a directory: `rules.run_file`), `<file>:<line>: <syntax
--   error>`, or the sandbox report of a runtime error or exceeded limit
--   (`<file>:<line>: <message>`, `in policy file <file>`, a traceback)
function M.load_raw(path, allow)
  local env, imports = M.env(util.dirname(path), allow)
  return rules.run_file(path, env, "policy file"), imports
end

--- Loads a policy file in the sandbox and normalizes it.
-- @tparam string path the policy file
-- @tparam[opt] table opts as for `from_table`
-- @treturn table the normalized policy
-- @raise as `load_raw`, or a validation error
function M.load(path, opts)
  -- the directories of model paths given on the command line (--model
  -- PATH, --set model=PATH, --set model.config=PATH): hf() may read there
  local allow = {}
  for _, st in ipairs(opts and opts.set or {}) do
    local text = type(st) == "table" and st.text or st
    local key, value = tostring(text):match("^%s*([%w_%.]+)%s*=(.*)$")
    value = value and util.trim(value)
    if (key == "model" or key == "model.config") and value and pathish(value) then
      -- a snapshot directory is allowed itself; a config file, its directory
      local _, is_dir = hf.config_path(value)
      allow[#allow + 1] = is_dir and value or util.dirname(value)
    end
  end
  local raw, imports = M.load_raw(path, allow)
  opts = util.copy(opts or {})
  opts.hf_imports = imports
  return M.from_table(raw, path, opts)
end

--- Loads a policy from source text in the sandbox and normalizes it.
-- Paths in it are relative to `opts.base_dir` (default: the current
-- directory).
-- @tparam string text Lua source returning a policy table
-- @tparam[opt="policy"] string name its name in messages (`<name>:<line>:`)
-- @tparam[opt] table opts as for `from_table`
-- @treturn table the normalized policy
function M.load_string(text, name, opts)
  name = name or "policy"
  opts = util.copy(opts or {})
  opts.base_dir = opts.base_dir or "."
  local env, imports = M.env(opts.base_dir, opts.hf_allow)
  local raw = rules.run_string(text, name, env, "policy")
  opts.hf_imports = imports
  return M.from_table(raw, name, opts)
end

return M
