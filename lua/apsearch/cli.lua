--- The `apsearch` command line.
--
--     apsearch run [POLICY.lua] [--top-k N] [--set KEY=VALUE]... [--fix DIM=VALUE]...
--                  [--model NAME|CONFIG.json] [--cluster DEVICE[:NODES[xGPUS]]]
--                  [--format table|json|csv] [--out DIR] [--quiet] [--jobs N]
--                  [--rules RULE.lua]... [--launchable FRAMEWORK] [--torchtitan-version VERSION]
--                  [--objective NAME|OBJ.lua] [--formatter FMT.lua] [--unsafe]
--                  [--sandbox-instructions N] [--sandbox-memory-mib N]
--                  [--sandbox-seconds S] [--sandbox-cpu-seconds S] [--sandbox-run-instructions N]
--                  [--sandbox-run-seconds S] [--sandbox-state-mib N]
--     apsearch estimate [POLICY.lua] --strategy KEY=VALUE,... [--model ...] [--cluster ...]
--                  [--set KEY=VALUE]... [--format table|json]
--     apsearch presets [--format table|json]
--     apsearch inspect CONFIG.json|PRESET [--format table|json]
--     apsearch validate CASES.csv [--format table|json] [--calibration CALIB.json]
--     apsearch calibrate CASES.csv -o CALIB.json             (apsearch.calibrate)
--     apsearch calibrate --log TRAIN.log [POLICY.lua --strategy ... | --from RESULT --rank N]
--                  [-o CALIB.json] [--skip N]                (apsearch.trainlog)
--
-- stdout carries results, stderr logs and progress.  Exit status: 0 success,
-- 1 no feasible strategy (run) or an infeasible strategy (estimate), 2 bad
-- input.  Bad input is raised as a one-line string
-- `<file>: <field>: <problem> (got <value>)`; the host (src/lua/host.c)
-- prints it as `apsearch: <message>` and exits 2.
-- @module apsearch.cli
local util = require "apsearch.util"
local policy_mod = require "apsearch.policy"
local schema = require "apsearch.schema"

local M = {}

--- Program version: the CMake project version, compiled into the core
-- module (APS_VERSION); "0.1.0" for a core built without it.
M.version = (function()
  local ok, core = pcall(require, "apsearch.core")
  return ok and core.version or "0.1.0"
end)()

local USAGE = [[
usage: apsearch <command> [options]

commands:
  run [POLICY.lua]     search parallel strategies (default policy:
                       examples/llama3_8b_h100.lua, Llama-3.1-8B on 8 x H100)
  run --model MODEL --cluster DEVICE:HOSTS
                       no policy file: one built for a preset or config.json
  estimate [POLICY.lua] --strategy KEY=VALUE,...
                       full memory and time breakdown of one strategy
  presets              model and device presets, with their sources
  inspect CONFIG|PRESET
                       normalized model and its parameter counts
  init MODEL CLUSTER   write the policy `run --model MODEL --cluster CLUSTER`
                       builds (batch, framework, full space) to stdout
  validate CASES.csv   estimates against measured runs
  calibrate CASES.csv -o CALIB.json
                       fit the device kernel efficiencies to measured runs
  calibrate --log TRAIN.log [POLICY.lua --strategy ...] [-o CALIB.json]
                       a Megatron-LM or TorchTitan log beside the estimate
                       of its job; -o fits the efficiencies to it
  calibrate --trace PROFILE.json.gz [POLICY.lua --strategy ...] [-o CALIB.json]
                       the host's launch costs, GEMM and attention
                       efficiencies from a PyTorch profiler trace; with
                       the job, its kernel time per step beside the estimate
  help [COMMAND]       this text, or the options of COMMAND (same as
                       `apsearch COMMAND --help`)

options: -h, --help (this text), -V, --version (print the version)

exit status: 0 success, 1 no feasible strategy, 2 bad input or a failing script
]]

local function out(s) io.stdout:write(s) end

--- The option table of each subcommand, as its parser is built:
-- `M.specs[name] = {name=, description=, options={{key=, desc=, flag=}},
-- arguments={{key=, desc=, optional=}}}`.  `M.option_table()` fills it
-- for every subcommand; the bash completion and the man page
-- (scripts/gen-cli-docs.lua) and the "did you mean" of options read it.
M.specs = {}

--- Width of the description column of `--help` (lua-cliargs wraps at
-- spaces and cuts longer words; 72 keeps each `--strategy` example whole
-- and the help within 120 columns).
M.HELP_DESC_COLUMNS = 72

local function new_parser(name, desc)
  local c = require("cliargs.core")()
  c:set_colsz(0, M.HELP_DESC_COLUMNS)
  c:set_name("apsearch " .. name)
  c:set_description(desc)
  local spec = { name = name, description = desc, options = {}, arguments = {} }
  M.specs[name] = spec
  for _, m in ipairs({ "option", "flag" }) do
    local orig = c[m]
    c[m] = function(self, key, d, ...)
      local default = ...
      spec.options[#spec.options + 1] = { key = key, desc = d, flag = m == "flag" or not key:find("=", 1, true),
        repeatable = m == "option" and type(default) == "table" }
      return orig(self, key, d, ...)
    end
  end
  for _, m in ipairs({ "argument", "splat" }) do
    local orig = c[m]
    c[m] = function(self, key, d, ...)
      spec.arguments[#spec.arguments + 1] = { key = key, desc = d, optional = m == "splat" }
      return orig(self, key, d, ...)
    end
  end
  return c
end

--- The option names of a spec: `{"--top-k", "-q", "--quiet", ...}`.
-- @tparam table spec an entry of M.specs
-- @treturn table
function M.option_names(spec)
  local names = { "-h", "--help" }
  for _, o in ipairs(spec.options) do
    local head = o.key:match("^([^=]+)")
    for n in head:gmatch("%-%-?[%w%-]+") do names[#names + 1] = n end
  end
  return names
end

local function common_options(c, formats)
  c:option("--set=KEY=VALUE", "override a policy field, e.g. cluster.memory_limit_gib=60 (repeatable)", {})
  c:option("--model=MODEL", "model preset name, path to a Hugging Face config.json, or a snapshot directory holding one")
  c:option("--cluster=SPEC", "cluster as DEVICE[:NODES[xGPUS]], e.g. h100-sxm-80gb:2x8 (NODES alone: 8 GPUs each, 4 for gb200 / gb300)")
  c:option("--format=FORMAT", "output format: " .. formats)
  c:option("--calibration=FILE", "kernel efficiencies fitted by `apsearch calibrate`")
  c:flag("-q, --quiet", "no log lines on stderr")
  -- the sandbox of policies, rules, objectives, formatters (apsearch.rules)
  c:option("--sandbox-instructions=N", "instruction limit of one call into a script (default 100000000; 0: none)")
  c:option("--sandbox-run-instructions=N",
    "instruction limit of every call into scripts of the run together (default 100000000000; 0: none)")
  c:option("--sandbox-run-seconds=S",
    "wall-clock limit of every call into scripts of the run together, seconds (default 600; 0: none)")
  c:option("--sandbox-state-mib=N",
    "cap on the Lua state (what scripts keep included) when a call into a script starts, MiB (default 8192; 0: none)")
  c:option("--sandbox-memory-mib=N", "memory cap of one call into a script, MiB (default 256; 0: none)")
  c:option("--sandbox-seconds=S", "wall-clock limit of one call into a script, seconds (default 10; 0: none)")
  c:option("--sandbox-cpu-seconds=S", "CPU-time limit of one call into a script, seconds (default 5; 0: none)")
  c:flag("--unsafe", "run scripts without the sandbox (full Lua library, no limits): trusted scripts only")
end

-- the sandbox's time limits accept fractions of a second, up to this
local MAX_SANDBOX_SECONDS = 1e9

--- Applies the sandbox options (--unsafe, --sandbox-instructions, --sandbox-run-instructions,
-- --sandbox-memory-mib, --sandbox-seconds, --sandbox-cpu-seconds) to
-- apsearch.sandbox.
-- @tparam table opts parsed options
-- @raise `--sandbox-...: <field>: must be an integer >= 0 (got ...)`, or
--   `must be a number of seconds >= 0`
function M.configure_sandbox(opts)
  local cfg = {}
  -- the bounds the sandbox takes (src/lua/lsandbox.c sandbox.configure)
  local max = { instructions = 9e18, run_instructions = 9e18, memory_mib = 1e9, state_mib = 1e9 }
  for flag, key in pairs({ ["sandbox-instructions"] = "instructions", ["sandbox-memory-mib"] = "memory_mib",
                           ["sandbox-run-instructions"] = "run_instructions", ["sandbox-state-mib"] = "state_mib" }) do
    local v = opts[flag]
    if v ~= nil then
      local n = util.decimal(v)
      if not util.is_integer(n) or n < 0 or n > max[key] then
        util.fail("--" .. flag, key, ("must be an integer in [0, %.0e]"):format(max[key]), v)
      end
      cfg[key] = math.tointeger(n)
    end
  end
  for flag, key in pairs({ ["sandbox-seconds"] = "seconds", ["sandbox-cpu-seconds"] = "cpu_seconds",
                           ["sandbox-run-seconds"] = "run_seconds" }) do
    local v = opts[flag]
    if v ~= nil then
      local n = util.decimal(v)
      -- 1e-400 reads as 0, which turns the limit off: not what was asked
      if not util.is_finite(n) or n < 0 or n > MAX_SANDBOX_SECONDS or (n == 0 and v:find("[1-9]")) then
        util.fail("--" .. flag, key, "must be a number of seconds in [0, 1e9] (0: no limit)", v)
      end
      cfg[key] = n
    end
  end
  if opts.unsafe then cfg.enabled = false end
  require("apsearch.sandbox").configure(cfg)
end

local collecting = false

-- What lua-cliargs (cliargs/parser.lua) stores for `--opt=` with nothing
-- after the `=`: "nullify the option's default".  It turns a single-value
-- option into nil itself, but leaves the marker in a repeatable one's list.
-- apsearch refuses `--opt=` before parsing (M.refuse_empty_values), so the
-- marker is removed only as a second guard.
local CLIARGS_NULL = "__CLIARGS_NULL__"

--- Refuses an option given as `--opt=` with nothing after the `=`: for
-- lua-cliargs that unsets the option, so `--model=$MODEL` with MODEL unset
-- would search the default model without a word (a breaker's finding).
-- Arguments after `--` are positional and not looked at.
-- @tparam string name the command
-- @tparam table args its arguments
-- @raise `<command>: --opt=: expected a value after "="`
function M.refuse_empty_values(name, args)
  for _, a in ipairs(args) do
    if a == "--" then return end
    local opt = type(a) == "string" and a:match("^(%-%-[%w][%w%-]*)=$")
    if opt then
      error(('%s: %s=: expected a value after "=" (an empty value would leave %s unset)'):format(
        name, opt, opt), 0)
    end
  end
end

--- The notes for single-value options given more than once with
-- different values: such an option keeps its last value, as Python's
-- argparse does (README), but an earlier value is dropped unchecked, even
-- one that would be refused (`--top-k abc --top-k 2`; argparse converts
-- each value as it reads it), so the note names what was dropped.  For
-- `--calibration` it adds that the files are not merged.  Repeatable
-- options (`--set`, `--fix`, ...) and flags are not looked at; nor is
-- anything after `--`.
-- @tparam table spec an entry of M.specs
-- @tparam table args the command's arguments
-- @treturn table lines, empty when no option was given twice
function M.repeated_option_notes(spec, args)
  local single = {}
  for _, o in ipairs(spec and spec.options or {}) do
    if not o.flag and not o.repeatable then
      local head = o.key:match("^([^=]+)")
      local long = head:match("(%-%-[%w%-]+)")
      for n in head:gmatch("%-%-?[%w%-]+") do single[n] = long end
    end
  end
  local seen, order = {}, {}
  local i = 1
  while i <= #args do
    local a = tostring(args[i])
    if a == "--" then break end
    local n, v = a:match("^(%-%-?[%w][%w%-]*)=(.*)$")
    if not n then n = a end
    local long = single[n]
    if long then
      if v == nil then i = i + 1; v = args[i] and tostring(args[i]) or "" end
      if not seen[long] then seen[long] = {}; order[#order + 1] = long end
      table.insert(seen[long], v)
    end
    i = i + 1
  end
  local lines = {}
  for _, long in ipairs(order) do
    local vals, differ = seen[long], false
    for k = 2, #vals do differ = differ or vals[k] ~= vals[1] end
    if differ then
      local shown = {}
      for k, v in ipairs(vals) do shown[k] = util.clip(util.printable(v)) end
      lines[#lines + 1] = ("apsearch: note: %s given %d times (%s): only the last, %s, applies%s"):format(
        long, #vals, table.concat(shown, ", "), shown[#shown], long == "--calibration" and
        " (a calibration file is not merged with another: put both files' device entries in one)" or "")
    end
  end
  return lines
end

local function parse(c, args, name)
  if collecting then return nil, true end
  for _, a in ipairs(args) do
    if a == "-h" or a == "--help" then
      out(c.printer.generate_help_and_usage() .. "\n")
      return nil, true
    end
  end
  M.refuse_empty_values(name, args)
  local opts, err = c:parse(args)
  if not opts then
    err = tostring(err)
    local bad = err:match("^unknown/bad %a+: (%-%-?[^=%s]+)")
    local hint = bad and require("apsearch.suggest").did_you_mean(bad, M.option_names(M.specs[name]))
    error(string.format("%s: %s%s (see apsearch %s --help)", name, err, hint and ("; " .. hint) or "", name), 0)
  end
  for _, v in pairs(opts) do
    if type(v) == "table" then
      for i = #v, 1, -1 do
        if v[i] == CLIARGS_NULL then table.remove(v, i) end
      end
    end
  end
  -- --wide: no width limit on the notes either
  util.set_log_fold(not opts.wide)
  if not opts.quiet then
    for _, line in ipairs(M.repeated_option_notes(M.specs[name], args)) do util.log("%s", line) end
  end
  return opts
end

local function check_format(name, fmt, allowed)
  if fmt == nil then return nil end
  for _, a in ipairs(allowed) do if fmt == a then return fmt end end
  util.fail(name, "--format", require("apsearch.suggest").problem("expected " .. table.concat(allowed, ", "),
    tostring(fmt), allowed), fmt)
end

local function default_policy()
  return util.join_path(util.root(), "examples/llama3_8b_h100.lua")
end

--- The note for `--cluster DEVICE:NODES` (no `xGPUS`): NODES counts hosts,
-- which a reader can take for GPUs, so the note states the GPUs and the
-- spec for that many GPUs (nil for one host); for `xGPUS` other than the
-- device's host size, what that size means for NVLink.
-- @tparam string spec what --cluster gave
-- @tparam table c its parse (policy.parse_cluster_spec)
-- @treturn string|nil
function M.cluster_note(spec, c)
  local note = M.cluster_size_note(spec, c)
  local name = spec:match("^([^:]+)")
  local preset, aliased = policy_mod.device_preset_name(name or "")
  if not aliased then return note end
  local alias = ("note: device %s read as the preset %s (apsearch presets lists the others)")
    :format(util.describe(name), preset)
  return note and (alias .. "; " .. note:gsub("^note: ", "")) or alias
end

--- The part of M.cluster_note about hosts and GPUs (nil when there is
-- nothing to say).
function M.cluster_size_note(spec, c)
  -- hosts larger than the device's board: one switch joining them all
  local d, g = spec:match("^([^:]+):%d+x(%d+)$")
  local board = d and (policy_mod.HOST_GPUS[(policy_mod.device_preset_name(d) or d):lower()]
    or policy_mod.HOST_GPUS_DEFAULT)
  g = g and math.tointeger(tonumber(g))
  -- AMD's parts join a host's GPUs with Infinity Fabric, NVIDIA's with NVLink
  local fabric = d and d:lower():match("^mi%d") and "Infinity Fabric" or "NVLink"
  if board and g > board then
    return ("note: --cluster %s gives hosts of %d GPUs on one %s switch each; a %s board holds %d "
      .. "(an NVLink domain across hosts is cluster.nvlink_domain_size)"):format(spec, g, fabric, d, board)
  end
  -- hosts smaller than the board: part of each, its NVLink domain that part
  -- (one GPU in all: nothing joins it to another, nothing to say)
  if board and g < board and c.num_devices > 1 then
    local joins = g == 1 and ("no %s between them: the network joins every GPU"):format(fabric)
      or ("%s joins those %d, the network the hosts"):format(fabric, g)
    return ("note: --cluster %s uses %d of each host's %d %s GPUs: %s"):format(spec, g, board, d, joins)
  end
  local dev, nodes = spec:match("^([^:]+):(%d+)$")
  if not nodes or c.num_devices <= c.devices_per_node then return nil end
  local per, n = c.devices_per_node, math.tointeger(tonumber(nodes))
  local hint = n % per == 0 and (" (for %d GPUs: %s:%dx%d)"):format(n, dev, n // per, per) or ""
  return ("note: --cluster %s is %d hosts of %d GPUs, %d GPUs%s"):format(spec, n, per, c.num_devices, hint)
end

-- --model / --cluster as --set overrides
local function shortcut_sets(opts)
  local sets = {}
  if opts.model then sets[#sets + 1] = { flag = "--model", text = "model=" .. opts.model } end
  if opts.cluster then
    local ok, c = pcall(policy_mod.parse_cluster_spec, opts.cluster)
    if not ok then error("--cluster: " .. tostring(c):gsub("^cluster: ", ""), 0) end
    if not c then
      util.fail("--cluster", "cluster", "expected DEVICE[:NODES[xGPUS]], e.g. h100-sxm-80gb:2x8", opts.cluster)
    end
    sets[#sets + 1] = { flag = "--cluster", text = "cluster=" .. opts.cluster }
    opts.cluster_note = M.cluster_note(opts.cluster, c)
  end
  for _, s in ipairs(opts.set or {}) do sets[#sets + 1] = s end
  return sets
end

-- The "note: ..." lines of a policy's inputs (the cluster as read, what
-- the model's config has that no term prices, the default search space),
-- in the order stderr prints them; `estimate_only` leaves out the default
-- space's note (estimate and calibrate --log run one strategy).
local function input_notes(p, opts, estimate_only)
  local lines = {}
  if opts.cluster_note then lines[#lines + 1] = opts.cluster_note end
  for _, w in ipairs(p.warnings or {}) do
    if w:match("^note:") and not (estimate_only and w:find(policy_mod.DEFAULT_SPACE_NOTE, 1, true)) then
      lines[#lines + 1] = w
    end
  end
  return lines
end

-- The notes of a policy (input_notes) on stderr, after the estimator
-- accepted its inputs (--quiet drops them).
local function print_notes(p, opts, estimate_only)
  if opts.quiet then return end
  require("apsearch.search").context(p) -- raises the inputs' one-line error first
  -- folded at the table's width on a terminal (a log file keeps lines whole)
  local common = require "apsearch.format.common"
  local tty = require("apsearch.core").isatty(2)
  local width = (opts.wide or not tty) and math.huge or require("apsearch.format.table").max_width
  io.stdout:flush() -- as util.log: notes after what stdout already holds
  for _, w in ipairs(input_notes(p, opts, estimate_only)) do
    io.stderr:write(common.fold_text("apsearch: " .. util.printable(w), width), "\n")
  end
end

-- A --set key as the policy reads it: spaces and doubled dots dropped
-- ("training . framework", "training..framework").
local function set_key(key)
  return (tostring(key):gsub("%s+", ""):gsub("%.%.+", "."))
end

-- A --set entry's key (set_key) and trimmed value; nil without "=".
local function set_entry(e)
  local key, val = tostring(e):match("^([^=]*)=(.*)$")
  if not key then return nil end
  return set_key(key), util.trim(val)
end

--- The policy `run` and `estimate` build from --model / --cluster when no
-- policy file is given (apsearch.defaults; `apsearch init` writes it):
-- the model and cluster are normalized first (their errors name the
-- option), then the training and space defaults are chosen for them.
-- @tparam table opts parsed options (`model`, `cluster`)
-- @treturn table raw policy (apsearch.defaults.build)
-- @treturn table header lines (apsearch.defaults.header)
-- @treturn string the `apsearch init` command that writes it
function M.built_policy(opts)
  local defaults = require "apsearch.defaults"
  local given = { model = opts.model or defaults.MODEL, cluster = opts.cluster or defaults.CLUSTER }
  local probe = policy_mod.from_table({}, "--model/--cluster",
    { set = shortcut_sets(given), base_dir = ".", shadow_check = false, partial = true })
  local dev = probe.cluster.device
  local rack = policy_mod.RACK_NVLINK_DOMAIN[tostring(type(dev) == "table" and dev.base or dev):lower()]
  local raw = defaults.build(given.model, probe.model, probe.cluster, rack)
  -- a sequence --set without a batch: the rule's tokens at that sequence
  -- (sequences = tokens / seq), not the default sequence's count of them
  local seq, batch_set, framework, mtp_set = nil, false, raw.training.framework, false
  for _, e in ipairs(opts.set or {}) do
    local key, val = set_entry(e)
    if key == "training.seq_length" then seq = math.tointeger(tonumber(val)) end
    if key == "training.global_batch_size" then batch_set = true end
    if key == "training.framework" then framework = val end
    if key == "training.mtp_num_layers" then mtp_set = true end
  end
  -- the model's MTP layers, trained as the recipes train them, under the
  -- framework the run ends with (a --set one included)
  if not mtp_set then raw.training.mtp_num_layers = defaults.mtp_num_layers(probe.model, framework) end
  if seq and seq > 0 and not batch_set then
    local n = probe.cluster.num_devices
    raw.training.global_batch_size = defaults.batch_sequences(defaults.batch_tokens(probe.model, n), seq, n,
      defaults.whole_sequences(probe.model))
  end
  local header = defaults.header(probe.model, raw.training, probe.cluster.num_devices)
  return raw, header, "apsearch init " .. given.model .. " " .. given.cluster
end

--- Host doublings the fit probe tries at most (`fit_probe`).
M.FIT_PROBE_DOUBLINGS = 6

-- the first power-of-two host count above the cluster's and at least
-- the fewest devices that hold the model states (report.html.min_devices);
-- the hosts those need, and the devices per host (`board` when given: a
-- one-host cluster whose board host_fit filled without a fit goes on with
-- whole boards)
local function probe_start(p, result, board)
  local cl = p.cluster
  local per = board or cl.devices_per_node
  local md = require("apsearch.report.html").diagnose(result, 0).min_devices
  local need = md and math.ceil(md.devices / per) or 1
  local hosts = math.max(math.ceil(cl.num_devices / per) + 1, need)
  local h = 1
  while h < hosts do h = h * 2 end
  return h, per, need
end

--- Restricts a policy to the strategies whose launch file for engine
-- `name` builds the estimated job (`run --launchable`): adds the rule
-- apsearch.launch.launchable_rule and records the name (result
-- `inputs.launchable`).  Records the TorchTitan target of
-- `--torchtitan-version` (result `inputs.torchtitan_version`, when a
-- release) first: the launch files, and the launchable rule for
-- torchtitan, are that target's.  Nothing more when `name` is nil.
-- @tparam table p policy (apsearch.policy)
-- @tparam string|nil name megatron, torchtitan, mindformers or automodel
-- @tparam[opt] string|nil version `--torchtitan-version` (head, a release tag)
-- @raise `--launchable: launchable: must be ...` for another name,
--   `--torchtitan-version: torchtitan_version: must be ...` for another version
function M.add_launchable(p, name, version)
  local launch = require "apsearch.launch"
  local tt = launch.torchtitan_version(version)
  if tt ~= launch.TORCHTITAN_HEAD then
    p.torchtitan_version = tt
    -- the estimate prices what the release runs: its release line's
    -- settings (lua/apsearch/stacks.lua, read by the release's month, as
    -- `validate` reads a row's), where the policy does not say -- v0.2.2's
    -- loss is one cross entropy, which its launch file cannot chunk
    local tr = p.training
    local set = {}
    for _, e in ipairs(require("apsearch.stacks").fill_release_settings(tr, "torchtitan " .. tt)) do
      set[#set + 1] = ("training.%s = %s"):format(e.key, util.describe(e.value))
    end
    -- said: the estimate changes with the target, not only the files
    if #set > 0 then
      p.warnings[#p.warnings + 1] = ("note: --torchtitan-version %s: estimated as that release runs, %s " ..
        "(set them in the policy to price another setting)"):format(tt, table.concat(set, ", "))
    end
  end
  if not name then return end
  -- models only one engine builds: said once, not as every candidate's
  -- LAUNCH_DIFFERS
  local m, only = p.model or {}, nil
  if m.linear_attention == "kda" then only = { "automodel", "Kimi Delta Attention layers" } end
  local mixer = require("apsearch.defaults").transformers_mixer(m)
  if mixer then only = { "automodel", mixer.layers } end
  if m.nas_attention_pattern or m.nas_ffn_pattern then only = { "megatron", "heterogeneous layers" } end
  if only and name ~= only[1] then
    util.fail("--launchable", "launchable", ("%s's %s are built by the %s launch file only"):format(
      m.name or "the model", only[2], only[1]), name)
  end
  table.insert(p.constraints.rules, launch.launchable_rule(name, tt, p.model_source))
  p.launchable = name
  -- the engine's own framework, whose overheads and space the estimate
  -- should take: said here, and below the table (format.common
  -- launchable_note), which --quiet keeps
  local own = launch.ENGINE_FRAMEWORK[name]
  local fw = p.training.framework or "megatron"
  if own and fw ~= own then
    p.warnings[#p.warnings + 1] = ("note: --launchable %s keeps the strategies %s's launch file builds, " ..
      "estimated as framework = %s runs them (its overheads and search space); for %s's own, set " ..
      "training.framework = \"%s\" (--set training.framework=%s)"):format(name, name, fw, name, own, own)
  end
end

-- the top strategy of the built policy on `h` hosts of `per` devices of
-- `dev` (the same options, and `extra` --set entries after the run's), as
-- the fit probe reports it, or nil
local function probe_fit(opts, dev, h, per, extra)
  local search = require "apsearch.search"
  -- h nil: the run's own --cluster, so that its --set cluster.* and the
  -- built batch are the run's
  local spec = h and string.format("%s:%dx%d", dev, h, per) or opts.cluster
  local o = util.copy(opts)
  o.cluster = spec
  -- the built policy sees the probe's own --set too (its framework's MTP)
  o.set = util.copy(opts.set or {})
  for _, e in ipairs(extra or {}) do o.set[#o.set + 1] = e end
  local raw, header, command = M.built_policy(o)
  local built = M.built_batch(raw)
  -- a probe of h hosts: the run's --set of the cluster's size (devices,
  -- hosts or devices a host) would undo it
  -- (it searched the run's 16 GPUs at every doubling and found no fit)
  local set = {}
  for _, e in ipairs(opts.set or {}) do
    local key = set_entry(e)
    if not (h and (key == "cluster.num_devices" or key == "cluster.devices_per_node" or key == "cluster.nodes")) then
      set[#set + 1] = e
    end
  end
  for _, e in ipairs(extra or {}) do set[#set + 1] = e end
  -- the run's rules and objective too (a strategy they refuse is no fit)
  local q = policy_mod.from_table(raw, command, { set = set, fix = opts.fix or {},
    base_dir = ".", built = true, shadow_check = false, rules = opts.rules, objective = opts.objective })
  q.defaults = M.built_header(q, built, header)
  -- the run's --calibration, as load_policy applies it
  if opts.calibration then
    local calibration = require "apsearch.calibration"
    calibration.apply(q.cluster, calibration.load(opts.calibration), q.stack)
  end
  M.add_launchable(q, opts.launchable, opts["torchtitan-version"])
  local r = search.run(q, { scatter_points = 0, continue_run = true })
  local top = r.top_k_strategies[1]
  return top and { devices = math.tointeger(q.cluster.num_devices), cluster = spec,
                   per_node = math.tointeger(q.cluster.devices_per_node),
                   strategy = search.describe_strategy(top), step_time = top.performance_cost.step_time }, spec,
    r.infeasible_summary or {}
end

--- The framework the fit probe tries on the same devices when the built
-- policy's has no fit and the run did not choose one (--set
-- training.framework, --launchable): the two keep weights, gradients,
-- optimizer states and activations differently (docs/modeling.md), so one
-- can fit where the other does not.
M.FIT_PROBE_FRAMEWORKS = { megatron = "fsdp2", fsdp2 = "megatron" }

--- Frameworks a run reaches only by choosing them (--set
-- training.framework), and the one the fit probe tries for them all the
-- same: NeMo AutoModel's FSDP2 and pipeline stages are PyTorch's, as
-- TorchTitan's are, without its deferred gradient sync and fp32 loss.
-- Not for a model AutoModel alone builds (apsearch.defaults.framework:
-- the built policy's framework is then AutoModel's).
M.FIT_PROBE_CHOSEN = { automodel = "fsdp2" }

-- whether the run chose training.framework itself (--set; a key written
-- with spaces or doubled dots as the policy reads it)
local function framework_chosen(p)
  for _, o in ipairs(p.overrides or {}) do
    if o.kind == "set" and set_key(o.key or "") == "training.framework" then return true end
  end
  return false
end

-- the other framework's top strategy on the run's own cluster and
-- settings, as the fit probe reports it (`framework` added), or nil: also
-- when the other framework refuses a setting the run gave (--set
-- training.mtp_num_layers is Megatron-LM's), which is no fit, not an error
local function framework_fit(opts, p, dev)
  if opts.launchable then return nil end
  local fw = p.training.framework or "megatron"
  local only = require("apsearch.defaults").framework(p.model or {}) == fw
  local alt = (not only and M.FIT_PROBE_CHOSEN[fw]) or (not framework_chosen(p) and M.FIT_PROBE_FRAMEWORKS[fw])
  if not alt then return nil end
  local ok, fit = pcall(probe_fit, opts, dev, nil, nil, { "training.framework=" .. alt })
  if not ok or not fit then return nil end
  fit.framework = alt
  return fit
end

-- the fit on the fewest hosts in (lo, hi] the bisection finds, `fit` being
-- hi's, and the host count below it known to have none (lo's last value:
-- a probe's, or `lo` itself); a fit is not monotone in the host count
-- (13 hosts divide into degrees 12 and 14 cannot), so the one found is
-- the bisection's, not always the fewest
local function narrow_hosts(opts, dev, lo, hi, per, fit)
  while hi - lo > 1 do
    local mid = (lo + hi) // 2
    local ok, f = pcall(probe_fit, opts, dev, mid, per)
    if not ok then break end -- a rule's error: the fit found stands (M.fit_probe)
    if f then hi, fit = mid, f else lo = mid end
  end
  return fit, lo
end

-- a cluster of one host using part of its board (h100:1x1): the fit
-- probe's first step fills that host, doubling the GPUs it uses up to the
-- board's (policy.HOST_GPUS) over NVLink, before it adds hosts over the
-- network; the table M.fit_probe describes, or nil and the board's GPUs
-- when the whole board has none (more hosts then are whole boards)
local function host_fit(opts, p, dev)
  local cl = p.cluster
  local per = cl.devices_per_node
  local board = policy_mod.HOST_GPUS[(policy_mod.device_preset_name(dev) or dev):lower()]
    or policy_mod.HOST_GPUS_DEFAULT
  if cl.num_devices ~= per or per >= board then return nil end
  local below = per
  while per < board do
    per = math.min(per * 2, board)
    local ok, fit = pcall(probe_fit, opts, dev, 1, per)
    if not ok then return nil end
    if fit then
      fit.not_on, fit.in_host = math.tointeger(below), true
      return fit
    end
    below = per
  end
  return nil, board
end

--- Settings the fit probe tries on the run's own devices when the built
-- policy has no fit: each `{framework, key, value, why, applies}`, a
-- `--set key=value` that trades time for memory in that framework, tried
-- when `applies(training)` is true (without it: when the run left the
-- field unset).  NeMo AutoModel defers the FSDP gradient sync by default
-- (every parameter's fp32 gradient unsharded until the last micro-batch;
-- docs/modeling.md); false shards them after each micro-batch.  Megatron's
-- partial distributed optimizer (distributed_optimizer_instances > 1)
-- shards the optimizer over one instance; one shards it over every
-- data-parallel rank.
M.FIT_PROBE_SETTINGS = {
  { framework = "automodel", key = "training.defer_fsdp_grad_sync", value = "false",
    why = "the FSDP gradients sharded after each micro-batch" },
  { framework = "megatron", key = "training.distributed_optimizer_instances", value = "1",
    why = "one distributed optimizer instance: its states sharded over every data-parallel rank",
    applies = function(tr) return (tr.distributed_optimizer_instances or 0) > 1 end },
}

-- the first M.FIT_PROBE_SETTINGS entry of the run's framework that the run
-- left unset and with which its own devices fit: the probe's table with
-- `set` ("key=value") and `why` added, or nil; none is tried unless a
-- strategy was refused for its memory (the settings save memory only)
local function setting_fit(opts, p, result, dev)
  if not (result.infeasible_summary or {}).MEMORY_LIMIT then return nil end
  local fw = p.training.framework or "megatron"
  for _, e in ipairs(M.FIT_PROBE_SETTINGS) do
    local field = e.key:match("^training%.(.+)$")
    local applies
    if e.applies then applies = e.applies(p.training) else applies = p.training[field] == nil end
    if e.framework == fw and applies then
      local ok, fit = pcall(probe_fit, opts, dev, nil, nil, { e.key .. "=" .. e.value })
      if ok and fit then
        fit.set, fit.why = e.key .. "=" .. e.value, e.why
        return fit
      end
    end
  end
  return nil
end

-- fit_probe's search over host counts with the same framework: the table
-- M.fit_probe describes without `framework`, or nil
local function devices_fit(opts, p, result, dev)
  local search = require "apsearch.search"
  -- more devices help only a strategy refused for its memory or for the
  -- devices it needs: refused by the model's shapes or the framework's
  -- rules alone (--fix tp_degree=16 on heads TP cannot divide), none is
  -- probed
  local refused = result.infeasible_summary or {}
  if not (refused.MEMORY_LIMIT or refused.DEVICE_COUNT) then return nil end
  local in_host, board = host_fit(opts, p, dev)
  if in_host then return in_host end
  local h, per, need = probe_start(p, result, board)
  local below = h // 2
  if below >= need and below * per < p.cluster.num_devices then
    local ok, fit = pcall(probe_fit, opts, dev, below, per)
    if ok and fit then return { smaller = fit } end
  end
  -- below the first doubling: the run's own hosts had no fit (or its
  -- host's whole board), and fewer than `need` cannot hold the model states
  local known = math.max(math.floor(p.cluster.num_devices / per), board and 1 or 0, need - 1)
  local spec, tried
  for _ = 1, M.FIT_PROBE_DOUBLINGS do
    -- the core takes fewer than 2^24 devices (policy.parse_cluster_spec)
    if h * per >= 2 ^ 24 then break end
    local ok, fit, at, refused = pcall(probe_fit, opts, dev, h, per)
    if not ok then
      -- a rule of the run's that fails on a cluster the user did not ask
      -- for: said, and no probe (the run's own result stands)
      util.log("apsearch: note: the fit probe stopped on %s:%dx%d: %s", dev, h, per,
        util.printable(tostring(fit):match("^[^\n]*")))
      return nil
    end
    spec = at
    -- strategies that fit but whose launch file differs (--launchable):
    -- stop, as M.fit_probe does on the run's own cluster; what a launch
    -- file cannot express is mostly the model (TorchTitan's file and an
    -- MoE model's experts), which more hosts do not change, and the
    -- output says that more were not tried
    if not fit and refused[search.LAUNCH_DIFFERS] then
      return { tried = math.tointeger(h * per), cluster = spec, launch_differs = true }
    end
    if fit then
      local lo = tried and tried // per or known
      local none
      fit, none = narrow_hosts(opts, dev, lo, h, per, fit)
      fit.not_on = none > 0 and math.tointeger(none * per) or nil
      return fit
    end
    tried = h * per
    h = h * 2
  end
  if not tried then return nil end
  return { tried = math.tointeger(tried), cluster = spec }
end

--- When a built policy (run --model / --cluster) has no feasible strategy:
-- the other framework of M.FIT_PROBE_FRAMEWORKS on the same devices, and
-- on a host count that is not a power of two, the largest power of two
-- below it first, when it holds the model states (its devices can divide
-- into the degrees the cluster's cannot: 125 hosts of 8 into no PP 16 x
-- TP 2); when that fits, nothing more.  Else the same defaults on more
-- hosts, doubling from `probe_start`, up to M.FIT_PROBE_DOUBLINGS times
-- and below the core's 2^24 devices, then bisecting the host count between
-- the first doubling that fits and the count below it without a fit (the
-- last doubling tried, else the run's own hosts or the fewest that hold
-- the model states): that cluster's top strategy.  A cluster of one host
-- using part of its board first doubles the GPUs it uses (`in_host`).
-- No more devices are probed when no strategy was refused for its memory
-- or its device count (MEMORY_LIMIT, DEVICE_COUNT): the model's shapes or
-- the framework's rules refused them, which more devices do not change.
-- Every probe keeps the run's global batch (the built default would
-- scale it with the devices), so its step is the same job's.
-- @tparam table opts parsed options of `run`
-- @tparam table p the policy searched
-- @tparam table result its result (no feasible strategy)
-- @treturn table|nil `{smaller = {devices, cluster, per_node, strategy,
--   step_time}}` (the power of two below fits), `{devices, cluster,
--   per_node (GPUs a host), strategy, step_time, not_on}` (not_on: the
--   devices one host below, known
--   without a fit: probed, the run's own, or fewer than hold the model
--   states (report.html min_devices); nil when that is no host),
--   `in_host = true` when the host's GPUs were doubled (host_fit),
--   `{tried, cluster, launch_differs = true}` when a probe's strategies
--   fit but the --launchable file builds none of them (no more hosts
--   tried), nil when a probe fails (a rule's error, said on stderr), `{tried, cluster}`, or `{}` when even the
--   first doubling is past the device limit; each with `framework =
--   {devices, cluster, strategy, step_time, framework}` when the other
--   framework fits on the run's devices, and `setting = {devices, cluster,
--   strategy, step_time, set, why}` when a M.FIT_PROBE_SETTINGS entry
--   does; nil when none of these
function M.fit_probe(opts, p, result)
  local search = require "apsearch.search"
  -- strategies that fit but whose launch file differs (run --launchable):
  -- more hosts do not change what the launch file can express
  if (result.infeasible_summary or {})[search.LAUNCH_DIFFERS] then return nil end
  local dev = p.cluster.device
  dev = type(dev) == "table" and (dev.base or dev.name) or dev
  -- the run's global batch on every cluster probed (the built default
  -- scales with the devices: a step at another batch is another job's)
  local gbs = math.tointeger(p.training.global_batch_size)
  if gbs then
    opts = util.copy(opts)
    opts.set = util.copy(opts.set or {})
    opts.set[#opts.set + 1] = "training.global_batch_size=" .. gbs
  end
  local other = framework_fit(opts, p, dev)
  local setting = setting_fit(opts, p, result, dev)
  local fp = devices_fit(opts, p, result, dev) or ((other or setting) and {})
  if fp then fp.framework, fp.setting = other, setting end
  return fp
end

-- the installed copy of a relative `examples/...` path not found from the
-- current directory (under util.root()), said on stderr, or nil
local function installed_example(path)
  -- ./examples, .//examples, examples//x: the same relative path; one
  -- with a ".." component never leaves for the installed tree
  local rel = path:gsub("/+", "/")
  repeat local before = rel; rel = rel:gsub("^%./", "") until rel == before
  if rel:sub(1, 9) ~= "examples/" or ("/" .. rel .. "/"):find("/../", 1, true)
      or util.file_exists(path) then return nil end
  local installed = util.root() .. "/" .. rel
  if installed == path or not util.file_exists(installed) then return nil end
  util.log("apsearch: %s: not found here; using the installed %s", util.printable(path), util.printable(installed))
  return installed
end

--- A policy path as given, or, when a relative `examples/...` path is not
-- found from the current directory, the installed example of that name
-- (under `util.root()`, `<prefix>/share/apsearch` after `cmake --install`),
-- said on stderr.  A path found nowhere is returned unchanged (the load
-- then fails naming it and, for an example, where the examples are).
-- @tparam string path the POLICY argument
-- @treturn string the file to load
function M.example_path(path)
  if path:sub(1, 1) == "/" or util.file_exists(path) then return path end
  -- a model or device preset given where the policy goes (`run llama-3.1-8b`)
  if require("apsearch.presets").is_model(path) then
    error(("%s: cannot open policy file: No such file or directory; %s is a model preset: "
      .. "give --model %s --cluster DEVICE:NODES instead"):format(path, path, path), 0)
  end
  if pcall(require("apsearch.core").device_preset, path) then
    error(("%s: cannot open policy file: No such file or directory; %s is a device preset: "
      .. "give --model MODEL --cluster %s:NODES instead"):format(path, path, path), 0)
  end
  local installed = installed_example(path)
  if installed then return installed end
  if not path:gsub("^%./+", ""):match("^examples/") then return path end
  if util.file_exists(util.root() .. "/examples") then
    error(("%s: cannot open policy file: No such file or directory (the examples are in %s/examples)")
      :format(path, util.root()), 0)
  end
  return path
end

--- The header lines of a built policy as searched: the built ones, or,
-- when a --set changed the batch or the sequence, lines that say so
-- (apsearch.defaults.header).
-- @tparam table p the normalized policy
-- @tparam table b the built training's header fields (global batch,
--   sequence, framework, precision, optimizer) as M.built_policy made them
--   (M.built_batch, taken before --set applies)
-- @tparam table header its header lines
-- @treturn table lines
function M.built_header(p, b, header)
  local t = p.training
  local same = true
  for _, k in ipairs(M.BUILT_HEADER_FIELDS) do
    -- (an on-off setting the built table leaves out is off)
    local tv, bv = t[k], b[k]
    if tv == false then tv = nil end
    if bv == false then bv = nil end
    same = same and tv == bv
  end
  if same then return header end
  return require("apsearch.defaults").header(p.model, t, p.cluster.num_devices, b)
end

--- The header fields a built policy holds before any --set (from_table
-- applies them to the table it is given): what M.built_header compares
-- with.
-- @tparam table raw the built policy table (M.built_policy)
-- @treturn table M.BUILT_HEADER_FIELDS -> value
function M.built_batch(raw)
  local b = {}
  for _, k in ipairs(M.BUILT_HEADER_FIELDS) do b[k] = raw.training[k] end
  return b
end

--- The training fields a built policy's header states (M.built_batch).
M.BUILT_HEADER_FIELDS = { "global_batch_size", "seq_length", "framework", "precision", "optimizer",
  "overlap_moe_expert_parallel_comm" }

--- Names for a message: comma-separated, or "none" for an empty list.
-- @tparam table names array of strings
-- @treturn string
function M.listed(names)
  return #names > 0 and table.concat(names, ", ") or "none"
end

--- Loads the built-in default policy (no POLICY given, nor --model or
-- --cluster), under the run's sandbox limits as any policy: a limit the
-- user set too low to read it is said against that flag, not as a
-- position in a file the user never gave.
-- @tparam string path the default policy's path
-- @tparam table o policy load options
-- @treturn table the policy
-- @raise `the built-in default policy (...): <the limit> ...` for a limit
function M.load_default_policy(path, o)
  local ok, p = pcall(policy_mod.load, path, o)
  if ok then return p end
  local msg = type(p) == "string" and p or nil
  local limit = msg and msg:match("^[^\n]-:%d+: ([^\n]*%(sandbox limit; raise it with %-%-[%w%-]+%))")
  if limit then
    error(("the built-in default policy (examples/llama3_8b_h100.lua, no POLICY given): %s"):format(limit), 0)
  end
  error(p, 0)
end

local function load_policy(path, opts, extra)
  M.configure_sandbox(opts)
  path = path and M.example_path(path)
  -- `--model examples/models/X.json` from another directory: the
  -- installed example, as for a policy path
  opts.model = opts.model and installed_example(opts.model) or opts.model
  local o = { set = shortcut_sets(opts), fix = opts.fix or {} }
  for k, v in pairs(extra or {}) do o[k] = v end
  local p
  if path and opts.POLICY == nil and path == default_policy() then
    p = M.load_default_policy(path, o)
  elseif path then
    p = policy_mod.load(path, o)
  else
    local raw, header, command = M.built_policy(opts)
    local built = M.built_batch(raw)
    o.set, o.base_dir, o.built = opts.set or {}, ".", true
    p = policy_mod.from_table(raw, command, o)
    p.defaults = M.built_header(p, built, header)
  end
  -- warnings of the policy (a sequence past max_position_embeddings) now;
  -- its notes (the default search space) once the inputs are known good
  -- (print_notes), so that bad input stays a one-line error; a model the
  -- core refuses gets no warning either (its error follows, alone)
  local model_ok = pcall(require("apsearch.core").model_params, p.model)
  for _, w in ipairs(model_ok and p.warnings or {}) do
    if not w:match("^note:") then util.log("apsearch: %s", util.printable(w)) end
  end
  if opts.calibration then
    -- kernel efficiencies fitted by `apsearch calibrate` replace the
    -- device preset's; the result's inputs name the file
    local calibration = require "apsearch.calibration"
    local calib = calibration.load(opts.calibration)
    local _, applied, kept = calibration.apply(p.cluster, calib, p.stack)
    p.calibration = { name = calib.name, file = opts.calibration, applied = applied }
    if applied and not opts.quiet then
      local fields = calibration.fields_for(calibration.for_stack(calib, p.stack),
        calibration.device_name(p.cluster)) or {}
      local is_kept, set = {}, {}
      for _, k in ipairs(kept) do is_kept[k] = true end
      -- each field with the value it now has
      for _, k in ipairs(util.sorted_keys(fields)) do
        if not is_kept[k] then set[#set + 1] = ("%s %.4g"):format(k, fields[k]) end
      end
      -- an entry without unfused_attention_efficiency gives unfused
      -- attention its flash value (calibration.apply), also when that flash
      -- value is kept at the stack's: said, as it changes the estimate
      if is_kept.attention_efficiency and fields.unfused_attention_efficiency == nil
          and p.cluster.device.unfused_attention_efficiency == fields.attention_efficiency then
        set[#set + 1] = "unfused_attention_efficiency (the entry's attention_efficiency)"
      end
      util.log("apsearch: note: calibration %s applied to %s: %s", opts.calibration,
        tostring(calibration.device_name(p.cluster)),
        #set > 0 and table.concat(set, ", ") or "no field (each of its fields for the device is kept)")
      -- a kept field holds the profile's value, or the one the policy's
      -- device table (--set cluster.device.<field>) gave over it
      local profile = require("apsearch.stacks").profile_fields(p.stack, calibration.device_name(p.cluster),
        p.training)
      local bench, own = {}, {}
      for _, k in ipairs(kept) do
        local list = p.cluster.device[k] == profile[k] and bench or own
        list[#list + 1] = k
      end
      if #bench > 0 then
        util.log("apsearch: note: %s kept at stack %s's benchmarked value (a calibration fitted "
          .. "across stacks does not replace it; one fitted with --group software or --log on a job of this "
          .. "stack does, and so "
          .. "does --set cluster.device.%s=VALUE)", table.concat(bench, ", "), p.stack, bench[1])
      end
      if #own > 0 then
        util.log("apsearch: note: %s kept at the policy's cluster.device value", table.concat(own, ", "))
      end
    end
    local own = calibration.for_stack(calib, p.stack)
    if own and not applied then
      -- a file fitted on other hardware: say so rather than change nothing
      local dev = tostring(calibration.device_name(p.cluster))
      util.log("apsearch: note: %s has no calibration for device %s (family %s; has %s); "
        .. "the device's own efficiencies apply", opts.calibration, dev,
        calibration.family(dev), M.listed(util.sorted_keys(own.devices)))
    end
    if calib.stacks then
      -- a grouped file (calibrate --group software): the run's stack's entry
      p.calibration.stack = p.stack
      if calib.stacks[p.stack] == nil then
        util.log("apsearch: note: %s has no calibration for stack %s (has %s); "
          .. "the stack's defaults apply", opts.calibration, p.stack,
          M.listed(util.sorted_keys(calib.stacks)))
      end
    end
  end
  return p
end

--- The files `apsearch run --out DIR` writes, as one result set that
-- replaces the previous one atomically (apsearch.outdir: DIR is a link to
-- a set directory, switched by rename(2); docs/outputs.md):
--
-- * `result.json`     the result (docs/outputs.md), with
--                     `visualization_report`, `output_files` and `run_id` set
-- * `result.csv`      one row per top-k strategy
-- * `candidates.csv`  streamed by the search before this (`--candidates`:
--                     every candidate, the feasible ones, or none;
--                     apsearch.format.csv.candidate_writer); listed only
--                     when `result.candidates_csv` says it was written
-- * `report.html`     the report (apsearch.report.html), self-contained
-- * `launch/rank<N>_megatron.sh`, `rank<N>_torchtitan.py` (`.toml` with
--   `--torchtitan-version` a release), `rank<N>_mindformers.yaml`,
--   `rank<N>_automodel.yaml` per top-k strategy (apsearch.launch)
-- @tparam string dir output directory (created)
-- @tparam table result search result (gains visualization_report, output_files, run_id)
-- @tparam[opt] table opts `echarts` (path of echarts.min.js); `set` (an
--   apsearch.outdir set already opened on dir, e.g. before the search);
--   `before_commit` (a function run once the files are written, before
--   the set is linked: an error in it aborts the set); `jobs` (worker
--   processes that may render and write the files, M.write_set)
-- @treturn table the paths written, in order
-- @treturn string|nil a note when the report has no charts (no ECharts)
-- @treturn table notes of the set (previous or interrupted sets kept, and why)
function M.write_outputs(dir, result, opts)
  opts = opts or {}
  local set = opts.set or require("apsearch.outdir").open(dir)
  local ok, res = pcall(M.write_set, set, dir, result, opts)
  if ok and opts.before_commit then ok, res = pcall(function() opts.before_commit() return res end) end
  if not ok then set:abort() error(res, 0) end
  set:commit()
  return res[1], res[2], set.notes
end

--- Fewest top-k strategies for which a set's files are rendered and
-- written by worker processes (with `jobs` > 1): below it, forking costs
-- more than it saves (the 30 files of a top-10 take a few milliseconds).
M.parallel_output_ranks = 64

-- A worker that renders a set's files does not run Lua's collector
-- (`collectgarbage("stop")` at its start): it begins with the parent's
-- whole heap, and a collection marks it -- a write to every page, which
-- the fork then copies (page faults that cost more than the collection
-- saves: a top-1000's two workers faulted in 190 k pages collecting, 145 k
-- not).  Its garbage is a small multiple of the files it writes, which
-- the one-process path holds in memory too; it ends after its part.

-- Runs tasks 1..n, `work(i)` -> value, `take(i, value)` in order: on
-- `jobs` worker processes (apsearch.parallel), or here when jobs is 1.
local function run_tasks(jobs, n, work, take)
  if jobs <= 1 or n <= 1 then
    for i = 1, n do take(i, work(i)) end
    return
  end
  require("apsearch.parallel").run({ jobs = math.min(jobs, n), tasks = n,
    start = function() collectgarbage("stop") end,
    work = function(i) return work(i) end, on_result = take })
end

--- Renders every file and writes it into the set directory (not linked
-- yet).  Every name is listed in the set's manifest first; then the
-- launch files are rendered and written in parts of the top-k, and then
-- report.html, result.json and result.csv (which show which launch files
-- differ from the estimate) -- on `opts.jobs` worker processes when the
-- top-k has M.parallel_output_ranks strategies or more.  The files are
-- the same either way.
function M.write_set(set, dir, result, opts)
  local json = require "apsearch.format.json"
  local csv = require "apsearch.format.csv"
  local html = require "apsearch.report.html"
  local launch = require "apsearch.launch"

  result.visualization_report = util.join_path(dir, "report.html")
  result.run_id = set.id
  local top = result.top_k_strategies or {}
  local jobs = #top >= M.parallel_output_ranks and (opts.jobs or 1) or 1
  local rels = { "result.csv", "report.html", "result.json" }
  for _, rec in ipairs(top) do
    for _, e in ipairs(launch.engines) do rels[#rels + 1] = "launch/" .. launch.file_name(result, rec, e) end
  end
  local rok, rerr = set:record(rels)
  if not rok then util.fail("--out", "dir", "cannot write " .. rels[1] .. ": " .. tostring(rerr), dir) end
  local function put(rel, text)
    local wok, werr = set:write_raw(rel, text)
    if not wok then util.fail("--out", "dir", "cannot write " .. rel .. ": " .. tostring(werr), dir) end
  end
  -- the launch files, in parts of about equal ranks (two per worker:
  -- strategies differ in what they render)
  local parts = math.max(1, math.min(#top, 2 * jobs))
  local lfiles = {}
  run_tasks(jobs, parts, function(i)
    local done = {}
    for _, f in ipairs(launch.render_ranks(result, (i - 1) * #top // parts + 1, i * #top // parts)) do
      put("launch/" .. f.name, f.text)
      done[#done + 1] = { rank = f.rank, engine = f.engine, name = f.name, differs = f.differs }
    end
    return done
  end, function(_, done) for _, f in ipairs(done) do lfiles[#lfiles + 1] = f end end)
  launch.make_executable(set:file("launch"), lfiles)
  local links = {}
  for _, f in ipairs(lfiles) do
    links[f.rank] = links[f.rank] or {}
    -- a file that builds another job than the estimated one is labelled
    -- so, and the ranked record names the first difference per engine
    local label = #f.differs > 0 and (" (differs: " .. #f.differs .. ")") or ""
    table.insert(links[f.rank], { f.engine .. label, "launch/" .. f.name })
    local rec = top[f.rank]
    if rec and #f.differs > 0 then
      rec.launch_differs = rec.launch_differs or {}
      rec.launch_differs[f.engine] = f.differs[1]
    end
  end
  local js, where = html.find_echarts({ echarts = opts.echarts })
  local version = js and js:match("version%s*=%s*\"(%d+%.%d+%.%d+)\"")
    or (js and js:match('[%w_]+%s*=%s*"(%d+%.%d+%.%d+)"'))
  local files = util.array({ util.join_path(dir, "result.json"), util.join_path(dir, "result.csv") })
  if result.candidates_csv then files[#files + 1] = util.join_path(dir, "candidates.csv") end
  files[#files + 1] = util.join_path(dir, "report.html")
  for _, f in ipairs(lfiles) do files[#files + 1] = util.join_path(dir, "launch/" .. f.name) end
  result.output_files = files
  -- report.html on one worker, result.csv and result.json on another
  local outputs = {
    function()
      put("report.html", html.render(result, {
        echarts_js = js, echarts_missing = not js and where or nil, echarts_version = version,
        launch = links, run_id = set.id,
      }))
    end,
    function()
      put("result.csv", csv.format(result))
      put("result.json", json.format(result))
    end,
  }
  run_tasks(jobs, #outputs, function(i) outputs[i]() return true end, function() end)
  return { files, (not js) and ("report.html has tables only: Apache ECharts not found (" .. where .. ")") or nil }
end

--- One line of the progress bar (stderr, TTY only).
-- @tparam integer done candidates walked
-- @tparam integer total space size
-- @tparam number elapsed seconds
-- @tparam[opt=30] integer width bar width in characters
-- @treturn string e.g. `[#########.........]  45%  55,296 / 122,580 candidates  1.2 s, 1.5 s left`
--   (the time left assumes the rest walks at the rate so far)
function M.progress_line(done, total, elapsed, width)
  width = width or 30
  local frac = total > 0 and math.min(1, done / total) or 1
  local fill = math.floor(frac * width + 0.5)
  local common = require "apsearch.format.common"
  local left = ""
  if done > 0 and done < total then
    left = string.format(", %.1f s left", elapsed * (total - done) / done)
  end
  return string.format("[%s%s] %3d%%  %s / %s candidates  %.1f s%s", string.rep("#", fill),
    string.rep(".", width - fill), math.floor(100 * frac), common.commas(done), common.commas(total),
    elapsed, left)
end

-- true when stderr is a terminal (isatty(2), apsearch.core.isatty)
local function stderr_is_tty()
  local ok, core = pcall(require, "apsearch.core")
  if ok and core.isatty then return core.isatty(2) end
  local r = os.execute("test -t 2")
  return r == true or r == 0
end

-- wall clock in seconds (apsearch.core.monotime)
local function wall_clock()
  return require("apsearch.core").monotime()
end

--- The search log lines to print on stderr: when the table follows on
-- stdout, the per-strategy `top-N:` lines are left out (the table shows
-- them, whether the two streams go to a terminal, one file or two); with
-- json, csv or a formatter script on stdout they stay, the human-readable
-- summary of the run.  They stay in result.json's search_log either way.
-- @tparam table log result.search_log
-- @tparam boolean table_out the table format goes to stdout
-- @treturn table lines
function M.log_lines(log, table_out)
  local lines = {}
  for _, line in ipairs(log) do
    if not (table_out and line:match("^top%-%d+: ")) then lines[#lines + 1] = line end
  end
  return lines
end

------------------------------------------------------------------------ run

--- The worker processes of `run`: `--jobs N`, else one per core the
-- process may run on (apsearch.core.ncpu).
-- @tparam[opt] string text the --jobs value
-- @treturn integer
-- @raise `--jobs: jobs: must be an integer >= 1 (got ...)`
function M.jobs_option(text)
  if text == nil then return require("apsearch.core").ncpu() end
  local n = util.decimal(text)
  if not util.is_integer(n) or n < 1 then util.fail("--jobs", "jobs", "must be an integer >= 1", text) end
  return math.tointeger(n)
end

local function cmd_run(args)
  local c = new_parser("run", "Search the parallel strategies of a policy.")
  c:splat("POLICY", "policy file (default: examples/llama3_8b_h100.lua)", nil, 1)
  c:option("-k, --top-k=N", "number of strategies to report")
  c:option("--fix=DIM=VALUE", "pin a search dimension, e.g. tp_degree=8, tp=4,8 or sp=on (repeatable)", {})
  c:option("--out=DIR", "write result.json, result.csv, candidates.csv, report.html and launch/ into DIR")
  c:option("--candidates=MODE", "rows of DIR/candidates.csv: all, feasible (default) or none (no file)")
  c:option("--jobs=N", "worker processes of the search (default: one per core)")
  c:option("--baseline=FILE", "a previous result.json, or a result-set directory holding one (an --out DIR): report what changed in the inputs and the top-k")
  c:option("--echarts=FILE", "echarts.min.js to inline in report.html (default: the one the build fetched; 'none': tables only)")
  c:option("--rules=FILE", "add a constraint rule file (docs/writing-rules.md; repeatable)", {})
  c:option("--launchable=FRAMEWORK", "rank only strategies whose launch file for FRAMEWORK (megatron, torchtitan, mindformers or automodel) builds the job as estimated; the others are filtered as LAUNCH_DIFFERS")
  c:option("--torchtitan-version=VERSION", "TorchTitan the launch files target: head (default: a Python config module for TorchTitan's main branch, at the commit the file names) or " .. table.concat(require("apsearch.launch.torchtitan_toml").releases, ", ") .. " (a TOML job file of that release, launch/rank<N>_torchtitan.toml; also what --launchable torchtitan checks)")
  c:option("--objective=NAME|FILE", "rank by a built-in objective or an objective file (replaces the policy's)")
  c:option("--formatter=FILE", "print the result with a formatter file instead of --format")
  c:flag("--wide", "table: no width limit (default: fit 120 columns, leaving out the top memory/overhead columns)")
  common_options(c, "table, json, csv")
  local opts, helped = parse(c, args, "run")
  if helped then return 0 end
  local fmt = check_format("run", opts.format, { "table", "json", "csv" })
  local top_k
  if opts["top-k"] then
    top_k = util.decimal(opts["top-k"])
    if not util.is_integer(top_k) or top_k < 1 then
      util.fail("--top-k", "top_k", "must be a positive integer", opts["top-k"])
    end
    -- the policy's bound (schema posint), said here under the flag's name:
    -- a number past 2^63 has no integer form and was dropped for the default
    if top_k >= 2 ^ 31 then util.fail("--top-k", "top_k", "must be below 2^31", opts["top-k"]) end
    top_k = math.tointeger(top_k)
  end
  -- the flags' own values first: a bad one is the run's only line, before
  -- the policy's notes (a new user's finding)
  local jobs = M.jobs_option(opts.jobs)
  local cand_mode = opts.candidates or require("apsearch.format.csv").default_candidate_mode
  if cand_mode ~= "all" and cand_mode ~= "feasible" and cand_mode ~= "none" then
    util.fail("--candidates", "candidates", "must be all, feasible or none", cand_mode)
  end
  local path = opts.POLICY or (not (opts.model or opts.cluster) and default_policy()) or nil
  local p = load_policy(path, opts, { top_k = top_k, rules = opts.rules, objective = opts.objective })
  M.add_launchable(p, opts.launchable, opts["torchtitan-version"])
  print_notes(p, opts)
  local user_formatter
  if opts.formatter then
    if not util.file_exists(opts.formatter) then
      util.fail("--formatter", "formatter", "formatter file not found", opts.formatter)
    end
    user_formatter = require("apsearch.rules").load_formatter(opts.formatter)
  end
  local baseline, baseline_file
  if opts.baseline then baseline, baseline_file = require("apsearch.report.baseline").load(opts.baseline) end
  local quiet = opts.quiet
  local search = require "apsearch.search"
  local t0 = wall_clock()
  local last = t0
  local tty = not quiet and stderr_is_tty()
  local drawn = false
  local progress
  if not quiet then
    progress = function(done, total, final)
      local now = wall_clock()
      if tty then
        if final then
          if drawn then io.stderr:write("\r\27[K") end
        elseif now - t0 >= 1 then
          io.stderr:write("\r", M.progress_line(done, total, now - t0), "\27[K")
          io.stderr:flush()
          drawn = true
        end
      elseif not final and now - last >= 2 then
        last = now
        util.log("apsearch: %d / %d candidates", done, total)
      end
    end
  end
  -- the --out lock before the search: a concurrent run into the same
  -- directory stops at once (exit 2), not after its search
  local dir = opts.out or p.outputs.dir
  local set = dir and require("apsearch.outdir").open(dir)
  -- candidates.csv is streamed into the set while the search runs
  local stream, writer
  if set and cand_mode ~= "none" then
    local serr
    stream, serr = set:stream("candidates.csv")
    if not stream then
      set:abort()
      util.fail("--out", "dir", "cannot write candidates.csv: " .. tostring(serr), dir)
    end
    writer = require("apsearch.format.csv").candidate_writer(stream.write, cand_mode,
      p.training and p.training.global_batch_size, stream.tmpfile and stream)
  end
  -- chart 7's sample of feasible points only for the report (--out) or a
  -- formatter that may draw it: without them it is the bulk of what the
  -- workers of --jobs send back (a strategy a point, up to 4,000 points)
  local scatter = (set or user_formatter) and search.scatter_points or 0
  local okr, result = pcall(search.run, p, { progress = progress, candidates = writer, jobs = jobs,
    scatter_points = scatter })
  if okr and writer then
    local rows
    okr, rows = pcall(writer.finish)
    local cok, cerr = stream.close()
    if not okr then result = rows
    elseif not cok then
      okr, result = pcall(util.fail, "--out", "dir", "cannot write candidates.csv: " .. tostring(cerr), dir)
    else
      result.candidates_csv = { mode = cand_mode, rows = rows }
    end
  elseif writer then
    stream.close()
  end
  if not okr then
    if set then set:abort() end
    -- a candidate the core cannot estimate (out of memory): the policy's
    -- search space and training produced it
    if type(result) == "string" and result:find("^strategy: ") then
      -- the policy file, or the one --model / --cluster built
      local from = path or ("the policy --model " .. tostring(opts.model or "(default)") .. " --cluster " ..
        tostring(opts.cluster or "(default)") .. " builds")
      result = from .. ": search_space: a candidate's " .. result:sub(#"strategy: " + 1)
    end
    error(result, 0)
  end
  if #result.top_k_strategies == 0 and p.defaults then
    result.fit_probe = M.fit_probe(opts, p, result)
  end
  if baseline then
    result.baseline_diff = require("apsearch.report.baseline").diff(baseline, result, baseline_file, p)
  end
  if not quiet then
    local table_out = not user_formatter and (fmt or p.outputs.format or "table") == "table"
    -- folded at the table's width on a terminal (--wide, or a log file:
    -- whole lines)
    local common = require "apsearch.format.common"
    local width = (opts.wide or not tty) and math.huge or require("apsearch.format.table").max_width
    for _, line in ipairs(M.log_lines(result.search_log, table_out)) do
      util.log("%s", common.fold_text(line, width))
    end
  end
  -- stdout's text, rendered after the files (it shows where they are)
  -- and before the set is linked: a formatter script that fails (exit 2)
  -- leaves no result set behind it
  local text
  local function render()
    if user_formatter then text = user_formatter.render(result) return end
    fmt = fmt or p.outputs.format or "table"
    text = require("apsearch.format." .. fmt).format(result, { wide = opts.wide })
  end
  if not dir then render() end
  if dir then
    local files, note, notes = M.write_outputs(dir, result, { echarts = opts.echarts, set = set,
      before_commit = render, jobs = jobs })
    if not quiet then
      -- (a set with no strategy has no launch/: outdir.lua commit)
      local nlaunch = #files - (result.candidates_csv and 4 or 3)
      util.log("wrote %d files to %s: result.json, result.csv, %sreport.html%s",
        #files, util.printable(dir), result.candidates_csv and "candidates.csv, " or "",
        nlaunch > 0 and (", launch/ (%d)"):format(nlaunch) or "")
      if note then util.log("apsearch: %s", note) end
      for _, n in ipairs(notes) do util.log("apsearch: %s", n) end
      local differ = M.launch_differs_note(result)
      if differ then
        -- folded at the table's width on a terminal, as the notes are
        local tty = require("apsearch.core").isatty(2)
        local width = (opts.wide or not tty) and math.huge or require("apsearch.format.table").max_width
        for line in (differ .. "\n"):gmatch("(.-)\n") do
          util.log("%s", require("apsearch.format.common").fold_text(line, width))
        end
      end
    end
  end
  -- no files written: rank 1's file for the framework said apart when it differs
  local unwritten = not dir and not quiet and M.unwritten_launch_note(result)
  if unwritten then
    local width = (opts.wide or not tty) and math.huge or require("apsearch.format.table").max_width
    util.log("%s", require("apsearch.format.common").fold_text(unwritten, width))
  end
  out(text)
  return #result.top_k_strategies > 0 and 0 or 1
end

------------------------------------------------------------------- estimate

--- Parses `--strategy` text: `KEY=VALUE` pairs separated by commas (or
-- spaces, in one quoted argument); array values (stage_partition,
-- layer_offset, per-stage recompute_num_layers) separated by colons, e.g.
-- `pp_degree=4,stage_partition=7:8:8:9`.  A key is a strategy field, an
-- HSDP alias, or the short name the run's lines print
-- (schema.strategy_short: `dp=4 tp=8 sp=on mbs=1 recompute=none`); `on` /
-- `off` are true / false for on-off fields; `-` (a table cell of a
-- setting the row does not use) sets nothing.
-- @tparam table list array of `--strategy` option strings
-- @treturn table strategy fields (canonical names, checked values)
-- @raise `--strategy: <field>: <problem> (got <value>)`
function M.parse_strategy(list)
  local s = {}
  local short = schema.strategy_short
  for _, text in ipairs(list) do
    -- "k = v" stays one pair; then commas and spaces separate pairs
    -- (blank runs made one space first: "%s*=%s*" alone takes time
    -- quadratic in a long run of blanks, util.trim)
    text = text:gsub("%s+", " "):gsub(" ?= ?", "=")
    for item in text:gmatch("[^,%s]+") do
      local k, v = item:match("^([%w_]+)=(.*)$")
      if not k then util.fail("--strategy", "(syntax)", "expected KEY=VALUE", item) end
      local typed = k -- errors name the key as typed
      -- "-": a table cell of a setting that does not apply to the row
      -- (sp without TP, cp_comm without CP): nothing to set
      if v == "-" then goto next_pair end
      k = short[k] or k
      local name = schema.strategy_aliases[k] or k
      local kind = schema.strategy[name]
      if not kind then
        local other = schema.elsewhere(typed)
        util.fail("--strategy", typed, require("apsearch.suggest").unknown("unknown strategy field" ..
          (other and ("; " .. other) or ""), typed, schema.dimensions), v)
      end
      local value
      -- recompute_modules joins its modules with '/' (Megatron's list);
      -- ':' is the per-stage separator of the array fields
      if name == "recompute_modules" and v:find(":", 1, true) then
        util.fail("--strategy", typed, "expected module names joined by '/' (e.g. mlp/core_attn), not ':'", v)
      end
      if name == "stage_partition" and schema.layers_cell(v) then
        value = schema.layers_cell(v)
      elseif v:find(":", 1, true) then
        value = {}
        for part in v:gmatch("[^:]+") do value[#value + 1] = util.parse_scalar(part) end
      elseif kind == "bool" then
        if v ~= "on" and v ~= "off" and v ~= "true" and v ~= "false" then
          util.fail("--strategy", typed, "expected on, off, true or false", v)
        end
        value = v == "on" or v == "true"
      else
        value = util.parse_scalar(v)
      end
      -- an HSDP alias stays an alias: the core then requires both degrees > 1
      local key = schema.strategy_aliases[k] and k or name
      if s[key] ~= nil then util.fail("--strategy", typed, "given twice", v) end
      s[key] = schema.check_value(kind, value, function(problem, got)
        util.fail("--strategy", typed, problem, got)
      end)
      ::next_pair::
    end
  end
  return s
end

--- `estimate --trace FILE`: the estimated step as a Chrome trace
-- (apsearch.format.chrome_trace), written atomically.
local function write_trace(path, ctx, s, est, inputs, quiet)
  local lfs = require "lfs"
  local mode = lfs.attributes(path, "mode")
  if mode and mode ~= "file" then util.fail("--trace", "file", "cannot write: a " .. mode .. " is in the way", path) end
  if lfs.attributes(util.dirname(path), "mode") ~= "directory" then
    util.fail("--trace", "file", "cannot write: no directory " .. util.dirname(path), path)
  end
  local chrome = require "apsearch.format.chrome_trace"
  if not est.feasible then
    -- the estimate is printed as without --trace (exit status 1)
    util.log("no trace written to %s: the strategy is infeasible (%s)", path, tostring(est.reason))
    return
  end
  local tl, code, msg = ctx:timeline(s, chrome.MAX_OPS)
  if not tl and code ~= "NO_PIPELINE" then
    util.fail("--trace", "file", "no timeline for this strategy: " .. tostring(code) .. ": " .. tostring(msg), path)
  end
  local text = require("apsearch.format.json").format(chrome.build(est, tl, inputs))
  util.refuse_input_as_output("--trace", path, {}) -- every file read by now
  -- a trace of an earlier estimate is replaced; a user's own file (a
  -- profile for `calibrate --trace`, anything else) is not
  util.write_output("--trace", path, text, "a trace apsearch estimate wrote", function(head)
    -- the first bytes our writer puts (keys in byte order), then its producer
    return head:find('^{"displayTimeUnit":"ms","otherData":{') ~= nil
      and head:sub(1, 400):find('"producer":"apsearch estimate --trace"', 1, true) ~= nil
  end)
  if not quiet then util.log("wrote %s: the estimated step as a Chrome trace (open in ui.perfetto.dev)", path) end
end

--- `--strategy` values the help of `estimate` shows; each runs on the
-- default policy (tests/lua/estimate_from_spec.lua runs them).
M.ESTIMATE_EXAMPLES = {
  "tp_degree=2,micro_batch_size=1",
  "pp_degree=4,stage_partition=7:8:8:9",
  "pp_degree=2,layer_offset=balanced",
  "layer_recompute=full,recompute_num_layers=auto",
}

--- The strategy fields that say how layers go to pipeline stages: when
-- `--strategy` gives one, the policy's single values of the others are
-- not inherited (the command line wins; docs/policy.md "estimate").
M.SPLIT_FIELDS = schema.split_fields

-- a policy or strategy value as the note shows it: arrays with colons
local value_text = require("apsearch.format.common").value_text

--- The policy's single-valued search dimensions `estimate` inherits for
-- what `--strategy` leaves out.  A split given on the command line wins:
-- the policy's split fields are then not inherited, and each one dropped
-- is named in a note line.
-- @tparam table dims policy.search_space.dims
-- @tparam table given the --strategy fields (filled in place)
-- @treturn table note lines (empty when no policy split is replaced)
function M.inherit_dims(dims, given)
  local cli_split = {}
  for _, f in ipairs(M.SPLIT_FIELDS) do
    if given[f] ~= nil then cli_split[#cli_split + 1] = f .. "=" .. value_text(given[f]) end
  end
  local split, notes = {}, {}
  for _, f in ipairs(M.SPLIT_FIELDS) do split[f] = true end
  for dim, list in pairs(dims) do
    if #list == 1 and given[dim] == nil and not (split[dim] and #cli_split > 0) then
      given[dim] = list[1]
    elseif #list == 1 and split[dim] and #cli_split > 0 and value_text(list[1]) ~= value_text(given[dim]) then
      notes[#notes + 1] = ("note: --strategy %s replaces the policy's %s = %s (a split on the command "
        .. "line wins over the policy's)"):format(table.concat(cli_split, ","), dim, value_text(list[1]))
    end
  end
  table.sort(notes)
  return notes
end

--- Dimensions `estimate --strategy` filled in on its own (the devices
-- left over); not named in M.defaulted_note.
M.DERIVED_DIMS = { dp_degree = true, fsdp_degree = true, hsdp_shard_degree = true,
  hsdp_replicate_degree = true, micro_batch_num = true }

--- The note `estimate` prints when --strategy leaves out dimensions the
-- policy searches over several values: the value the estimate took for
-- each (the core's default, or the framework's) beside the values the
-- search would try, so a layout typed from a recipe is not read as
-- infeasible for a default (zero_stage 0 keeps Adam's states unsharded).
-- @tparam table dims the policy's search_space.dims
-- @tparam table given the --strategy fields (before defaults)
-- @tparam table s the completed strategy
-- @treturn string|nil
function M.defaulted_note(dims, given, s)
  local defaults = require("apsearch.core").defaults("strategy")
  local split = {}
  for _, f in ipairs(M.SPLIT_FIELDS) do split[f] = true end
  local names = {}
  for dim, list in pairs(dims) do
    -- (under FSDP the sharding fixes zero_stage: derived too)
    local derived = M.DERIVED_DIMS[dim] or (dim == "zero_stage" and (s.fsdp_degree or s.hsdp_shard_degree or 1) > 1)
    -- the split rule when no split is given and the stages are split by
    -- it (pipeline_split; not stage_partition or layer_offset)
    local split_taken = dim == "pipeline_split" and (s.pp_degree or 1) > 1 and s.pipeline_split ~= nil
      and given.stage_partition == nil and given.layer_offset == nil
    if #list > 1 and given[dim] == nil and not derived and (split_taken or not split[dim]) then
      names[#names + 1] = dim
    end
  end
  if #names == 0 then return nil end
  table.sort(names)
  local parts = {}
  for _, dim in ipairs(names) do
    local v = s[dim]
    if v == nil then v = defaults[dim] end
    local vals = {}
    for i, x in ipairs(dims[dim]) do vals[i] = value_text(x) end
    -- an expert TP taken from the TP degree is Megatron-Core's default
    -- (expert_tensor_parallel_size = tensor_model_parallel_size unless set:
    -- megatron/core/model_parallel_config.py l.506-507, training/
    -- arguments.py l.587-588 @ d98e8a64), which moves the expert group
    local why = ""
    if dim == "etp_degree" and (s.tp_degree or 1) > 1 and v == s.tp_degree then
      why = "Megatron-Core's default: the tensor-parallel degree; "
    end
    parts[#parts + 1] = ("%s=%s (%ssearched: %s)"):format(dim, value_text(v), why, table.concat(vals, ", "))
  end
  return "note: not given with --strategy, so taken as: " .. table.concat(parts, "; ")
end

--- The split rule `estimate` takes when --strategy gives none and the
-- policy searches several (`search_space.pipeline_split`): the first of
-- them the pipeline check passes for this strategy (ctx:check "pp": the
-- core's split and Megatron's divisibility rule; the built Megatron space
-- lists embedding_loss, then fill_last where some pipeline degree divides
-- neither L nor L + 2, apsearch.defaults), so that a strategy typed from
-- the table estimates as it was ranked.
-- @tparam table ctx the policy's estimator context
-- @tparam table list the searched rules, in the policy's order
-- @tparam table s the completed strategy but its split
-- @treturn string|nil the rule; nil when the check refuses every one
function M.first_valid_split(ctx, list, s)
  for _, rule in ipairs(list) do
    local t = {}
    for k, v in pairs(s) do t[k] = v end
    t.pipeline_split = rule
    local ok, pass = pcall(ctx.check, ctx, "pp", t, false)
    if ok and pass == true then return rule end
  end
  return nil
end

-- fills what a --strategy leaves out as the search would: the devices
-- left over, the MoE defaults, FSDP resharding, the policy's first ZeRO
-- stage, the split (the first of the policy's searched rules the pipeline
-- check passes, else the framework's)
local function complete_strategy(s, inputs, split_given, dims, ctx)
  local space = require "apsearch.space"
  local fw = inputs.training.framework
  local shard_fill = (fw == "fsdp2" or fw == "fsdp" or fw == "automodel") and s.fsdp_degree == nil and s.hsdp_shard_degree == nil
  if s.dp_degree == nil and s.hsdp_replicate_degree == nil then
    -- fill the cluster with the devices the strategy leaves: under PyTorch
    -- FSDP (TorchTitan data_parallel_shard_degree = -1, llm-foundry) they
    -- shard, fsdp = N / (tp cp pp); otherwise they replicate, dp = N /
    -- (tp cp pp fsdp) (Megatron DDP / distributed optimizer, DeepSpeed)
    local used = (s.tp_degree or 1) * (s.cp_degree or 1) * (s.pp_degree or 1) *
      (s.fsdp_degree or s.hsdp_shard_degree or 1)
    local N = inputs.cluster.num_devices
    local rest = (N % used == 0) and (N // used) or 1
    if shard_fill then
      s.fsdp_degree, s.dp_degree = rest, 1
      if rest > 1 and s.zero_stage == nil then s.zero_stage = 3 end
    else
      s.dp_degree = rest
    end
  end
  if (inputs.model.num_experts or 0) > 0 then
    -- the expert dimensions the strategy leaves out, as a space without
    -- them runs (so the strategy line and JSON say what was estimated)
    for f, v in pairs(space.moe_defaults(inputs.training.framework, s.tp_degree, inputs.training)) do
      if s[f] == nil then s[f] = v end
    end
  end
  -- without pipeline parallelism a pass of training.local_batch_size is one
  -- micro-batch (TorchTitan and AutoModel run the local batch as one
  -- forward): the only micro-batch size the check accepts there
  local lbs = inputs.training.local_batch_size or 0
  if s.micro_batch_size == nil and lbs > 0 and (s.pp_degree or 1) == 1 then s.micro_batch_size = lbs end
  if s.reshard_after_forward == nil then
    -- what the framework runs, as the search enumerates it
    s.reshard_after_forward = space.default_reshard(fw, s.fsdp_degree or 1, s.pp_degree or 1)
  end
  -- a ZeRO stage left out takes the first the policy searches, not the
  -- core's 0: the built Megatron space lists the recipes' distributed
  -- optimizer first (apsearch.defaults ZERO), so a layout typed from the
  -- table (whose zero= sits on its "same for every row" line) estimates
  -- as ranked; under FSDP the sharding fixes it
  local zl = dims.zero_stage
  if s.zero_stage == nil and zl and #zl > 1 and (s.fsdp_degree or s.hsdp_shard_degree or 1) == 1 then
    s.zero_stage = zl[1]
  end
  if s.pipeline_split == nil and not split_given then
    local pp, list = s.pp_degree or 1, dims.pipeline_split
    if space.shares_topk(inputs.model) and pp > 1 then
      -- layers sharing their top-k: balanced within the chunks Megatron
      -- accepts, as the search does (space.lua)
      s.balance_stages = true
    elseif pp > 1 and list and #list > 1 then
      s.pipeline_split = M.first_valid_split(ctx, list, s) or list[1]
    else
      -- the framework's own split, as the search enumerates it (TorchTitan
      -- counts the embedding and the loss; Megatron where layers do not divide)
      s.pipeline_split = space.default_split(fw, inputs.model.num_layers, pp, s.vpp_degree or 1)
    end
  end
end

-- the policy, context and strategy of `estimate [POLICY] --strategy ...`;
-- with --model / --cluster and no policy, the policy `run` builds for them
local function strategy_from_policy(opts)
  local path = opts.POLICY or (not (opts.model or opts.cluster) and default_policy()) or nil
  local p = load_policy(path, opts)
  print_notes(p, opts, true)
  local given = M.parse_strategy(opts.strategy or {})
  local split_given, named = false, {}
  for _, f in ipairs(M.SPLIT_FIELDS) do
    if given[f] ~= nil then split_given, named[#named + 1] = true, f end
  end
  -- a full recompute given without its layers recomputes every layer
  -- (Megatron's --recompute-granularity full), not the policy's "auto"
  -- (the fewest that fit, which may be none)
  if given.layer_recompute == "full" and given.recompute_num_layers == nil then given.recompute_num_layers = -1 end
  -- one way to say the split (pipeline_split, stage_partition or
  -- layer_offset): two of them contradict each other, bad input
  if #named > 1 then
    util.fail("--strategy", named[2], ("%s and %s both given: give one of them"):format(named[1], named[2]),
      given[named[2]])
  end
  local inherited = M.inherit_dims(p.search_space.dims, given)
  for _, note in ipairs(inherited) do
    if not opts.quiet then util.log("apsearch: %s", util.printable(note)) end
  end
  local space = require "apsearch.space"
  local s = {}
  for dim, v in pairs(given) do space.set_dim(s, dim, v) end
  if p.constraints.allow_idle_devices and s.allow_idle_devices == nil then
    s.allow_idle_devices = true
  end
  local ctx = require("apsearch.search").context(p)
  local inputs = ctx:inputs()
  complete_strategy(s, inputs, split_given, p.search_space.dims, ctx)
  return p, ctx, inputs, s, M.defaulted_note(p.search_space.dims, given, s), inherited
end

--- The terminal's lines for launch files that build another job than the
-- estimated one (the ranked records' `launch_differs`, set when the files
-- are written): the engines per rank, then (a second line, after "\n")
-- M.no_engine_note's when no engine builds any; nil when every file builds it.
-- @tparam table result a result whose launch files were written
-- @treturn string|nil
function M.launch_differs_note(result)
  -- runs of consecutive ranks with the same engines: "ranks 1-10: ..."
  local runs = {}
  for _, rec in ipairs(result.top_k_strategies or {}) do
    local engines = table.concat(util.sorted_keys(rec.launch_differs or {}), ", ")
    local last = runs[#runs]
    if engines ~= "" and last and last.engines == engines and last.to == rec.rank - 1 then
      last.to = rec.rank
    elseif engines ~= "" then
      runs[#runs + 1] = { from = rec.rank, to = rec.rank, engines = engines }
    end
  end
  local parts = {}
  for i, r in ipairs(runs) do
    parts[i] = r.from == r.to and ("rank %d: %s"):format(r.from, r.engines)
      or ("ranks %d-%d: %s"):format(r.from, r.to, r.engines)
  end
  if #parts == 0 then return nil end
  local none = M.no_engine_note(result)
  return "apsearch: note: launch files that build another job than the one estimated: " .. table.concat(parts, "; ")
    .. " (the NOT WRITTEN / NOT EXPRESSIBLE lines atop each say how; --launchable ENGINE ranks only what an "
    .. "engine runs as estimated)" .. (none ~= "" and ("\napsearch: note: " .. none) or "")
end

-- the engine whose files run a framework's jobs
local ENGINE_OF = { megatron = "megatron", fsdp2 = "torchtitan", automodel = "automodel" }

--- The note that follows the launch note (its second line) when no
-- engine builds any ranked job as estimated (every record differs on
-- every engine apsearch writes, apsearch.launch.engines), naming rank 1's
-- first difference for the policy's framework last; "" otherwise.
-- @tparam table result a result whose launch files were written
-- @treturn string
function M.no_engine_note(result)
  local top = result.top_k_strategies or {}
  local n = #require("apsearch.launch").engines
  for _, rec in ipairs(top) do
    if #util.sorted_keys(rec.launch_differs or {}) < n then return "" end
  end
  if #top == 0 then return "" end
  local fw = ((result.inputs or {}).training or {}).framework
  local d = top[1].launch_differs
  local engine = d[ENGINE_OF[fw] or ""] and ENGINE_OF[fw] or util.sorted_keys(d)[1]
  return ("no engine apsearch writes runs any ranked job as estimated: the ranking is the estimate's, not a job "
    .. "you can launch as it is; rank 1, %s: %s"):format(engine, util.printable(tostring(d[engine])))
end

--- Without --out: the note that rank 1's launch file for the policy's
-- framework (its engine: megatron, torchtitan for fsdp2, automodel) would
-- build another job than the one estimated, with its first difference, as
-- --out's note says it (M.launch_differs_note); nil when it builds it, the
-- framework has no engine, or nothing is ranked.  Renders rank 1's file
-- for that engine only (apsearch.launch.render_ranks), writing none.
-- @tparam table result a search result
-- @treturn string|nil
function M.unwritten_launch_note(result)
  local engine = ENGINE_OF[((result.inputs or {}).training or {}).framework or ""]
  if not engine or #(result.top_k_strategies or {}) == 0 then return nil end
  for _, f in ipairs(require("apsearch.launch").render_ranks(result, 1, 1, engine)) do
    if #f.differs > 0 then
      return ("apsearch: note: rank 1's %s launch file would build another job than the one estimated: %s "
        .. "(--out writes it, with every difference atop it; --launchable %s ranks only what it runs as "
        .. "estimated)"):format(engine, util.printable(f.differs[1]), engine)
    end
  end
  return nil
end

-- the options `--from` excludes: the result's inputs and rank fix them
local FROM_EXCLUDES = { "POLICY", "strategy", "model", "cluster", "set", "calibration" }

-- the policy, context and strategy of `estimate --from RESULT --rank N`
local function strategy_from_result(opts)
  if opts.rank == nil then
    util.fail("--from", opts.from, "needs --rank N as well (the top-k rank of this result to estimate)", nil, false)
  end
  for _, k in ipairs(FROM_EXCLUDES) do
    local v = opts[k]
    if v ~= nil and not (type(v) == "table" and #v == 0) then
      local name = k == "POLICY" and "a policy file" or ("--" .. k)
      local how = k == "calibration" and ("; to rank under a calibration, run the search again with " ..
        "--calibration FILE") or ""
      util.fail("--from", k, name .. " cannot be given with --from (the result's inputs and rank fix it)" .. how,
        type(v) == "table" and v[1] or v)
    end
  end
  M.configure_sandbox(opts)
  local fr = require "apsearch.from_result"
  local result, path = fr.load(opts.from)
  local rec = fr.record(result, opts.rank, path)
  local p = fr.policy(result, path)
  local ctx = require("apsearch.search").context(p)
  if not opts.quiet then
    util.log("apsearch: rank %d of %s: %s (ranked at step %.4g s)", rec.rank, path,
      require("apsearch.search").describe_strategy(rec), rec.performance_cost.step_time)
  end
  p.from = { file = path, rank = rec.rank }
  return p, ctx, ctx:inputs(), fr.strategy(rec)
end

-- A refused strategy's GPU count when the core's reason is another: the
-- core says the model-shape reasons (TP_DIVISIBILITY, ...) before the
-- device count (src/core/check.c aps_check_all), so tp 16 on 8 GPUs reads
-- as a head count; this says the 16 > 8 beside it.  Nil when the device
-- check passes or is the reason.
local function devices_also(ctx, s, est)
  if est.feasible or est.reason == "DEVICE_COUNT" or est.reason == "IDLE_DEVICES" then return nil end
  local ok, code, msg = ctx:check("devices", s)
  if ok then return nil end
  return ("the strategy is also refused for %s: %s"):format(code, msg)
end

-- The notes of `estimate --format json` (its "notes" array; nil when
-- none): every "note:" line stderr prints, without the prefix and
-- whatever --quiet says -- the inputs' (input_notes), the dimensions
-- --strategy left out (`defaulted`; before it, `inherited`: the policy's
-- split a --strategy split replaced, M.inherit_dims) and the device count
-- a model-shape refusal also fails (`also`), in that order.
local function estimate_notes(p, opts, defaulted, also, inherited)
  local lines = util.array()
  for _, w in ipairs(input_notes(p, opts, true)) do lines[#lines + 1] = (w:gsub("^note: ", "")) end
  for _, w in ipairs(inherited or {}) do lines[#lines + 1] = (w:gsub("^note: ", "")) end
  if defaulted then lines[#lines + 1] = (defaulted:gsub("^note: ", "")) end
  if also then lines[#lines + 1] = also end
  return #lines > 0 and lines or nil
end

local function cmd_estimate(args)
  local c = new_parser("estimate", "Estimate memory and time of one strategy.")
  c:splat("POLICY", "policy file for model/cluster/training (default: examples/llama3_8b_h100.lua)", nil, 1)
  c:option("--strategy=KEY=VALUE,...", "strategy fields, commas (or spaces, quoted) between; arrays with colons, "
    .. "recompute_modules with slashes (mlp/core_attn) (repeatable), e.g. " .. table.concat(M.ESTIMATE_EXAMPLES, " or ")
    .. "; the short names of the run's top-N lines too, as printed: \"dp=4 tp=8 sp=on mbs=1\"", {})
  c:option("--from=RESULT", "estimate a strategy of a result.json of `apsearch run --out DIR` or `--format json` "
    .. "(or its DIR), with the model, cluster and training it recorded; with --rank")
  c:option("--rank=N", "the top-k rank of --from to estimate")
  c:option("--trace=FILE", "also write the estimated step as a Chrome trace (JSON; opens in Perfetto beside a profiler trace)")
  common_options(c, "table, json")
  local opts, helped = parse(c, args, "estimate")
  if helped then return 0 end
  local fmt = check_format("estimate", opts.format, { "table", "json" }) or "table"
  if opts.rank ~= nil and opts.from == nil then
    util.fail("--rank", "rank", "needs --from RESULT (the result.json the rank is of)", opts.rank)
  end
  -- the policy, result, calibration or model read: never written over
  util.refuse_input_as_output("--trace", opts.trace, { n = 5, opts.POLICY or (not opts.from and default_policy()),
    opts.from, opts.from and util.join_path(opts.from, "result.json"), opts.calibration, opts.model })
  local p, ctx, inputs, s, defaulted, inherited
  if opts.from then
    p, ctx, inputs, s = strategy_from_result(opts)
  else
    p, ctx, inputs, s, defaulted, inherited = strategy_from_policy(opts)
  end
  local ok, est = pcall(ctx.estimate, ctx, s)
  if not ok then -- the core's "strategy.<field>" is what --strategy gave
    error((tostring(est):gsub("^strategy[%.:] ?", "--strategy: ")), 0)
  end

  if est.feasible then
    local iv = require("apsearch.intervals").for_estimate(est, inputs)
    est.step_time_interval, est.mem_peak_interval = iv.step_time, iv.mem_peak
  end
  if opts.trace then write_trace(opts.trace, ctx, s, est, inputs, opts.quiet) end
  local also = devices_also(ctx, s, est)
  if fmt == "json" then
    local json = require "apsearch.format.json"
    out(json.format({ schema_version = require("apsearch.search").schema_version, estimate = est,
      notes = estimate_notes(p, opts, defaulted, also, inherited),
      inputs = { policy = p.from_policy or p.file, model = inputs.model, cluster = inputs.cluster,
        training = inputs.training, overrides = p.overrides,
        stack = p.stack, calibration = p.calibration, from = p.from } }))
  else
    out(require("apsearch.format.breakdown").format(est, inputs, p.stack))
  end
  -- (said once everything else stood: a refusal stays one line)
  if defaulted and not opts.quiet then util.log("apsearch: %s", defaulted) end
  if also and not opts.quiet then util.log("apsearch: note: %s", also) end
  return est.feasible and 0 or 1
end

-------------------------------------------------------------------- presets

local function cmd_presets(args)
  local c = new_parser("presets", "List the model and device presets with their sources.")
  c:option("--format=FORMAT", "output format: table, json")
  c:flag("--wide", "table: sources on one line each (default: folded to fit 120 columns)")
  local opts, helped = parse(c, args, "presets")
  if helped then return 0 end
  local fmt = check_format("presets", opts.format, { "table", "json" }) or "table"
  local core = require "apsearch.core"
  local presets = require "apsearch.presets"
  local common = require "apsearch.format.common"
  local models = util.array()
  for _, m in ipairs(presets.models()) do
    local model = presets.model(m.name)
    local counts = core.model_params(model)
    models[#models + 1] = { name = m.name, source = m.source, parameters = counts.total }
  end
  local devices = util.array()
  for _, d in ipairs(core.device_presets()) do
    local dev = core.device_preset(d.name)
    devices[#devices + 1] = { name = d.name, source = d.source,
      memory_bytes = dev.memory_bytes, peak_flops_bf16 = dev.peak_flops_bf16 }
  end
  if fmt == "json" then
    out(require("apsearch.format.json").format({ models = models, devices = devices }))
    return 0
  end
  -- the source column folded to fit the width (--wide: one line each)
  local width = opts.wide and math.huge or common.TERMINAL_WIDTH
  local rows = {}
  for _, m in ipairs(models) do rows[#rows + 1] = { m.name, common.commas(m.parameters), m.source } end
  out("models\n" .. common.fold_last_column({ "name", "parameters", "source" }, rows, { false, true, false }, width))
  rows = {}
  for _, d in ipairs(devices) do
    rows[#rows + 1] = { d.name, string.format("%.1f", common.gib(d.memory_bytes)),
      string.format("%.0f", (d.peak_flops_bf16 or 0) / 1e12), tostring(d.source) }
  end
  out("\ndevices\n" .. common.fold_last_column({ "name", "memory (GiB)", "bf16 (TFLOP/s)", "source" }, rows,
    { false, true, true, false }, width))
  return 0
end

-------------------------------------------------------------------- inspect

-- The fields of a hybrid model's table that no layer of its pattern reads
-- (a pure Mamba-2 model's attention and MLP fields: the mixer's heads and
-- Megatron's default FFN width, hf.lua builders.mamba2), which `inspect`'s
-- table leaves out (its JSON keeps them).
local function unused_fields(model)
  local p, out = model.hybrid_layer_pattern, {}
  if type(p) ~= "string" or p == "" then return out end
  if not p:find("[*P]") then
    for _, f in ipairs({ "num_attention_heads", "num_query_groups", "head_dim", "qkv_bias", "attn_out_bias",
      "qk_norm", "position_embedding", "rope_theta" }) do out[f] = true end
  end
  if not p:find("[-EP]") then
    for _, f in ipairs({ "ffn_hidden_size", "mlp", "mlp_bias" }) do out[f] = true end
  end
  return out
end

local MODEL_FIELDS = { "name", "num_layers", "hidden_size", "num_attention_heads",
  "num_query_groups", "head_dim", "ffn_hidden_size", "vocab_size",
  "max_position_embeddings", "norms_per_layer", "mlp", "norm",
  "position_embedding", "norm_bias", "qkv_bias", "attn_out_bias", "mlp_bias",
  "qk_norm", "qk_norm_full_width", "qk_norm_head_weights", "attention_sinks", "tie_word_embeddings", "lm_head_bias", "reordered_norm", "rotary_interleaved", "mup_multipliers", "parallel_attn_mlp", "norm_weightless", "embedding_norm",
  "sliding_window", "sliding_window_layers", "sliding_window_period", "sliding_window_layout",
  "global_head_dim", "global_num_attention_heads", "global_num_query_groups", "global_k_eq_v",
  "attn_v_head_dim", "window_attention_sinks", "qk_l2_norm", "attention_output_gate", "attention_head_gate",
  "nope_layer_period", "attention_chunk_size", "chunked_attention_layers",
  "glu_activation", "glu_linear_offset", "glu_clamp", "attn_logit_softcapping",
  "final_logit_softcapping",
  "rope_theta", "rope_scaling_type", "rope_scaling_factor", "low_freq_factor",
  "high_freq_factor", "original_max_position_embeddings", "yarn_beta_fast",
  "yarn_beta_slow", "yarn_mscale", "yarn_mscale_all_dim", "yarn_attention_factor",
  "yarn_no_truncate", "norm_eps", "rotary_percent",
  -- mixture of experts and multi-head latent attention (absent when dense)
  "num_experts", "experts_per_token", "moe_ffn_hidden_size",
  "shared_expert_ffn_hidden_size", "shared_expert_gate", "moe_router_bias", "moe_router_fp32", "moe_latent_size",
  "moe_router_sigmoid", "moe_router_softmax_bias", "moe_router_input_probs", "moe_router_linear_bias", "moe_router_scales", "moe_aux_loss_coeff", "moe_seq_aux_loss", "moe_router_num_groups", "moe_router_group_topk",
  "moe_router_group_score_topk", "moe_router_topk_scaling_factor", "moe_router_pre_softmax",
  "moe_first_dense_layers", "moe_layer_freq", "moe_layer_phase",
  "moe_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
  "qk_rope_head_dim", "v_head_dim", "mtp_layers", "mtp_shared_embeddings",
  "index_n_heads", "index_head_dim", "index_topk", "index_rope_interleave",
  "index_topk_freq", "index_skip_topk_offset",
  "msa_layers", "msa_index_heads", "msa_index_dim", "msa_block_size", "msa_topk_blocks", "msa_init_blocks",
  "msa_local_blocks",
  "hc_mult", "hc_sinkhorn_iters", "o_groups", "o_lora_rank", "csa_layers", "hca_layers",
  "csa_compress_rate", "hca_compress_rate", "moe_hash_layers",
  -- hybrid Mamba-2 models (absent for a transformer)
  "hybrid_layer_pattern", "mamba_num_heads", "mamba_head_dim", "mamba_state_dim",
  "mamba_num_groups", "mamba_conv_kernel", "mamba_chunk_size", "mamba_no_rmsnorm", "mtp_layer_pattern",
  -- linear attention (Qwen3-Next, Kimi Linear / K3) and Kimi K3's additions
  "linear_attention", "linear_attention_period", "linear_attention_pattern", "linear_num_key_heads",
  "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
  "linear_block_size", "linear_inner_size", "linear_state_dim", "linear_dt_rank", "linear_output_gate_full_rank", "linear_beta_doubled", "mla_output_gate", "attn_res_block_size", "moe_latent_norm",
  "qk_norm_weightless",
  -- heterogeneous layers (Llama-Nemotron NAS; per_layer is then their mean)
  "nas_attention_pattern", "nas_ffn_pattern", "nas_ffn_widths" }

local function cmd_inspect(args)
  local c = new_parser("inspect", "Show a normalized model and its parameter counts.")
  c:argument("MODEL", "path to a Hugging Face config.json or a snapshot directory, or a model preset name")
  c:option("--format=FORMAT", "output format: table, json")
  c:flag("-q, --quiet", "no notes on stderr (--format json keeps them in the output)")
  local opts, helped = parse(c, args, "inspect")
  if helped then return 0 end
  local fmt = check_format("inspect", opts.format, { "table", "json" }) or "table"
  local presets = require "apsearch.presets"
  local ref, model, source, info = installed_example(opts.MODEL) or opts.MODEL, nil, nil, nil
  if policy_mod.pathish(ref) then
    model, source, info = policy_mod.load_model_path(ref)
  elseif presets.is_model(ref) then
    model, info = presets.model(ref)
    source = info.source
  else
    local names = presets.all_model_names()
    local hint = policy_mod.model_ref_hint(ref)
    if hint then util.fail("inspect", "MODEL", "not a config.json path, a snapshot directory or a model preset; "
      .. hint, ref) end
    util.fail("inspect", "MODEL", require("apsearch.suggest").problem("not a config.json path, a snapshot " ..
      "directory or a model preset", ref, names) .. " (known: " .. util.join(names) .. ")", ref)
  end
  local core = require "apsearch.core"
  local counts = core.model_params(model)
  -- "active" counts the embedding and output layer, as the core does;
  -- model cards often quote it without them: both shown, in both formats
  if counts.active then
    counts.active_without_embedding_output = counts.active - (counts.embedding or 0) - (counts.output_layer or 0)
  end
  -- what the config has that no estimate prices (apsearch.hf notes), and a
  -- multimodal config's vision parameters, counted apart
  local notes = info and info.notes or {}
  if not opts.quiet then
    for _, n in ipairs(notes) do util.log("apsearch: note: %s", util.printable(n)) end
  end
  if fmt == "json" then
    out(require("apsearch.format.json").format({ model = model, source = source, parameters = counts,
      vision_params = info and info.vision_params, notes = #notes > 0 and notes or nil }))
    return 0
  end
  local common = require "apsearch.format.common"
  local rows = { { "source", tostring(source) } }
  -- a value past the 120 columns (a layer pattern of 93 letters) goes on
  -- as many lines as it needs, under its field
  -- (the value column starts after the longest field shown and two spaces)
  local name_width = #"source"
  for _, f in ipairs(MODEL_FIELDS) do
    if model[f] ~= nil then name_width = math.max(name_width, #f) end
  end
  local width = 120 - name_width - 2
  local unused = unused_fields(model)
  for _, f in ipairs(MODEL_FIELDS) do
    local v = not unused[f] and model[f] or nil
    if type(v) == "table" then v = "{" .. table.concat(v, ", ") .. "}" end
    if v ~= nil then
      v = tostring(v)
      local long = (f:find("pattern", 1, true) or f:find("layout", 1, true)) and #v > width
      for i = 1, long and #v or 1, width do
        rows[#rows + 1] = { i == 1 and f or "", long and v:sub(i, i + width - 1) or v }
      end
    end
  end
  out(common.align({ "field", "value" }, rows))
  rows = {}
  -- MoE: the core's per_layer is a layer with the dense FFN, which only
  -- the dense layers have: the table names it per_dense_layer, after the
  -- count of dense layers, and leaves it out when every layer has experts
  -- (the JSON keeps the core's keys); moe_layers of per_moe_layer; the MTP
  -- modules are not in total (shared/validation/moe/README.md)
  local keys = { "embedding", "per_layer", "layers", "final_norm", "output_layer", "total", "active" }
  local label, value = {}, {}
  if counts.moe_layers then
    local dense = (model.num_layers or 0) - counts.moe_layers
    value.dense_layers, label.per_layer = dense, "per_dense_layer"
    keys = { "embedding", "dense_layers", "per_layer", "moe_layers", "per_moe_layer",
      "per_moe_layer_active", "layers", "final_norm", "output_layer", "total", "active" }
    if dense == 0 then table.remove(keys, 3) end
  end
  -- hybrid Mamba-2: each kind of layer it has (the core's per_layer, a
  -- mean over the pattern that counts an MoE layer as a dense MLP, is no
  -- layer of the model: not shown)
  if counts.per_mamba_layer then
    keys = { "embedding" }
    for _, kind in ipairs({ { "mamba_layers", "per_mamba_layer" }, { "attention_layers", "per_attention_layer" },
      { "mlp_layers", "per_mlp_layer" }, { "moe_layers", "per_moe_layer", "per_moe_layer_active" } }) do
      if (counts[kind[1]] or 0) > 0 then
        for _, k in ipairs(kind) do keys[#keys + 1] = k end
      end
    end
    -- P layers (Falcon-H1) count in each of their three kinds, whose rows
    -- hold a norm each: a P layer has two, so layers is the rows' sum less
    -- one norm per P layer
    local parallel = require("apsearch.launch.megatron").parallel_layers(model)
    if parallel > 0 then
      keys[#keys + 1] = "parallel_layers"
      value.parallel_layers = parallel
      label.parallel_layers = "parallel_layers (in each kind; one norm fewer)"
    end
    for _, k in ipairs({ "layers", "final_norm", "output_layer", "total", "active" }) do keys[#keys + 1] = k end
  end
  if counts.mtp then
    -- the checkpoint's modules may store an embedding and output copy
    -- each (DeepSeek-V3's model.layers.61); Megatron-LM's MTP block runs
    -- the model's own: what training them adds is said apart
    -- (format.common.mtp_depth_params, the run line's "MTP D (+P)")
    keys[#keys + 1] = "mtp"
    keys[#keys + 1] = "mtp_active"
    label.mtp = "mtp (as the checkpoint stores it)"
    local per = common.mtp_depth_params(model)
    if per and model.mtp_layers and per * model.mtp_layers ~= counts.mtp then
      keys[#keys + 1] = "mtp_trained"
      value.mtp_trained = per * model.mtp_layers
      label.mtp_trained = "mtp trained (Megatron-LM: shares embedding, output)"
    end
  end
  if info and info.vision_params then
    keys[#keys + 1] = "vision (apart)"
    value["vision (apart)"] = info.vision_params
  end
  if counts.active then
    label.active = "active (with embedding, output)"
    label.active_without_embedding_output = "active without embedding, output"
    local i = 0
    for j, k in ipairs(keys) do if k == "active" then i = j end end
    table.insert(keys, i + 1, "active_without_embedding_output")
  end
  for _, k in ipairs(keys) do
    rows[#rows + 1] = { label[k] or k, common.commas(value[k] or counts[k] or 0) }
  end
  out("\n" .. common.align({ "parameters", "count" }, rows, { false, true }))
  return 0
end

------------------------------------------------------------------- validate

-- Rows that could not be estimated (unknown device, unsupported precision,
-- impossible strategy) are reported with the others; the exit status then
-- says the file was not fully checked.
local function validate_status(result)
  local failed = result.summary and result.summary.failed or 0
  if failed > 0 then
    -- the first failed row's error on stderr too (the others are with their
    -- rows on stdout): a script that reads only stderr sees what to fix
    local first
    for _, c in ipairs(result.cases or {}) do
      if c.error then first = c break end
    end
    util.log("apsearch: %s: %d of %d rows could not be estimated%s", result.file, failed, result.summary.cases,
      first and ("; row %s: %s"):format(tostring(first.case_id), first.error) or " (see their errors)")
    return 2
  end
  return 0
end

-- `validate --cv source`: leave-one-source-out figures (apsearch.crossval).
local function validate_cv(opts, fmt)
  if opts.cv ~= "source" then util.fail("validate", "--cv", "must be source", opts.cv) end
  if opts.calibration then
    util.fail("validate", "--cv", "fits its own efficiencies per fold; give no --calibration", opts.cv, false)
  end
  local res = require("apsearch.crossval").run(opts.CASES, { jobs = M.jobs_option(opts.jobs),
    log = not opts.quiet and function(line) util.log("%s", line) end or nil })
  if fmt == "json" then
    out(require("apsearch.format.json").format(res))
    return validate_status(res)
  end
  local common = require "apsearch.format.common"
  local function num(v) return v and string.format("%.1f", v) or "-" end
  local rows = {}
  local errors = {}
  for _, cs in ipairs(res.cases) do
    if cs.error then
      errors[#errors + 1] = util.printable(tostring(res.file)) .. ": row " ..
        util.printable(tostring(cs.case_id)) .. ": " .. util.printable(tostring(cs.error))
    end
  end
  for _, f in ipairs(res.folds) do
    rows[#rows + 1] = { util.printable(f.group), tostring(f.rows), tostring(f.out_of_sample.count or 0),
      num(f.in_sample.mape_pct), num(f.out_of_sample.mape_pct), num(f.out_of_sample.max_abs_pct),
      #f.unfitted_devices > 0 and table.concat(f.unfitted_devices, " ") or "-" }
  end
  out(common.align({ "held-out source", "rows", "compared", "in-sample MAPE (%)",
    "out-of-sample MAPE (%)", "max (%)", "devices not fitted" }, rows,
    { false, true, true, true, true, true, false }))
  -- the summary lines, folded at the tables' width on a terminal
  local tty = require("apsearch.core").isatty(1)
  local function say(text)
    out(tty and common.fold_text(text, require("apsearch.format.table").max_width) or text)
  end
  say(string.format("\nthroughput, %d rows: in-sample MAPE %s%% (defaults fitted on every row), "
    .. "out-of-sample MAPE %s%% (median %s%%, max %s%%)\n", res.out_of_sample.count or 0,
    num(res.in_sample.mape_pct), num(res.out_of_sample.mape_pct),
    num(res.out_of_sample.median_abs_pct), num(res.out_of_sample.max_abs_pct)))
  if res.release_gap_cases then
    local wi, wo = res.in_sample_without_release_gaps, res.out_of_sample_without_release_gaps
    say(string.format("without the %d runs of a release far below its successors (%s; no fold fits on them): "
      .. "in-sample MAPE %s%%, out-of-sample MAPE %s%% (median %s%%, max %s%%)\n", #res.release_gap_cases,
      table.concat(res.release_gap_cases, ", "), num(wi.mape_pct), num(wo.mape_pct),
      num(wo.median_abs_pct), num(wo.max_abs_pct)))
  end
  local cov = res.coverage
  local function none(t)
    return (t.no_interval or 0) > 0 and string.format(" (%d without an interval: too few residuals "
      .. "from the other sources)", t.no_interval) or ""
  end
  say(string.format("%d %% prediction intervals, each source against the others' residuals: "
    .. "step time covers %d of %d runs (%s%%)%s, peak memory %d of %d%s\n",
    math.floor(cov.level * 100 + 0.5), cov.step_time.covered, cov.step_time.rows,
    num(cov.step_time.pct), none(cov.step_time), cov.mem_peak.covered, cov.mem_peak.rows,
    none(cov.mem_peak)))
  -- what no run of the other sources informs: a cited prior, or (named)
  -- the preset default, which was fitted on every row
  local lines = {}
  for _, f in ipairs(res.folds) do
    for _, dev in ipairs(util.sorted_keys(f.priors or {})) do
      for _, field in ipairs(util.sorted_keys(f.priors[dev])) do
        local p = f.priors[dev][field]
        lines[#lines + 1] = string.format("  %s held out: %s %s = %.3f (%s)", util.printable(f.group),
          dev, field, p.value, p.rule)
      end
    end
    for _, df in ipairs(f.unfitted_fields or {}) do
      lines[#lines + 1] = string.format("  %s held out: %s left at the preset default (no fit, no prior)",
        util.printable(f.group), (df:gsub("%.", " ", 1)))
    end
  end
  if #lines > 0 then
    say("\nfields the other sources cannot fit:\n" .. table.concat(lines, "\n") .. "\n")
  end
  local prow = {}
  for _, dev in ipairs(util.sorted_keys(res.parameter_spread)) do
    for _, field in ipairs(util.sorted_keys(res.parameter_spread[dev])) do
      local sp = res.parameter_spread[dev][field]
      prow[#prow + 1] = { dev, field, string.format("%.3f", sp.min), string.format("%.3f", sp.max) }
    end
  end
  if #prow > 0 then
    out("\nfitted parameters across folds:\n" .. common.align({ "device", "parameter", "min", "max" },
      prow, { false, false, true, true }))
  end
  if #errors > 0 then out("\nnot estimated:\n  " .. table.concat(errors, "\n  ") .. "\n") end
  return validate_status(res)
end

--- An aligned table (format.common.align) whose column `col` is cut, with
-- a trailing "…", until the table fits `width` (never below
-- M.MIN_CLIPPED_COLUMN characters).
-- @tparam table headers
-- @tparam table rows arrays of cell strings (cells of `col` are replaced)
-- @tparam table right right-alignment flags
-- @tparam integer col the column to cut
-- @tparam number width columns (math.huge: whole cells)
-- @treturn string
function M.clipped_table(headers, rows, right, col, width)
  local common = require "apsearch.format.common"
  local text = common.align(headers, rows, right)
  local wide = 0
  for line in text:gmatch("[^\n]+") do wide = math.max(wide, common.width(line)) end
  if wide <= width then return text end
  local longest = common.width(headers[col])
  for _, r in ipairs(rows) do longest = math.max(longest, common.width(r[col] or "")) end
  local keep = math.max(M.MIN_CLIPPED_COLUMN, longest - (wide - width))
  for _, r in ipairs(rows) do
    local cell = r[col] or ""
    if common.width(cell) > keep then
      local cut = utf8.len(cell) and utf8.offset(cell, keep) or keep
      r[col] = cell:sub(1, cut - 1) .. "…"
    end
  end
  return common.align(headers, rows, right)
end

--- Narrowest a clipped column gets (M.clipped_table).
M.MIN_CLIPPED_COLUMN = 12

local function cmd_validate(args)
  local c = new_parser("validate", "Compare estimates with measured training runs (CSV).")
  c:argument("CASES", "CSV of measured runs (schema: docs/accuracy.md)")
  c:option("--format=FORMAT", "output format: table, json")
  c:option("--calibration=FILE", "kernel efficiencies fitted by `apsearch calibrate`")
  c:option("--cv=SPLIT", "out-of-sample accuracy: leave one group out, fit the efficiencies on the rest (SPLIT: source)")
  c:flag("--wide", "table: whole model names and summary lines (default: fitted to 120 columns)")
  c:option("--jobs=N", "worker processes fitting --cv's folds (default: one per core)")
  c:flag("-q, --quiet", "no log lines on stderr (--cv's progress)")
  local opts, helped = parse(c, args, "validate")
  if helped then return 0 end
  local fmt = check_format("validate", opts.format, { "table", "json" }) or "table"
  if opts.cv then return validate_cv(opts, fmt) end
  if opts.jobs then util.fail("validate", "--jobs", "fits --cv's folds; give it with --cv", opts.jobs, false) end
  local calib = opts.calibration and require("apsearch.calibration").load(opts.calibration)
  local result = require("apsearch.validate").run(opts.CASES, calib)
  if fmt == "json" then
    out(require("apsearch.format.json").format(result))
    return validate_status(result)
  end
  local common = require "apsearch.format.common"
  local function pct(v) return v and string.format("%+.1f", v) or "-" end
  local function num(v, f) return v and string.format(f, v) or "-" end
  local rows, errors = {}, {}
  local V = require "apsearch.validate"
  local derived = false
  for _, cs in ipairs(result.cases or {}) do
    if cs.error then
      errors[#errors + 1] = util.printable(tostring(result.file)) .. ": row " ..
        util.printable(tostring(cs.case_id)) .. ": " .. util.printable(tostring(cs.error))
    else
      local p, m, e = cs.predicted or {}, cs.measured or {}, cs.error_pct or {}
      -- a run measured in step time or TFLOP/s: its tokens/s through the
      -- estimate's tokens and FLOPs, marked (validate.measured_throughput)
      local meas = num(m.tokens_per_s_per_gpu, "%.0f")
      if not m.tokens_per_s_per_gpu and V.measured_throughput(cs) then
        meas, derived = string.format("%.0f*", V.measured_throughput(cs)), true
      end
      rows[#rows + 1] = { util.printable(tostring(cs.case_id)), util.printable(tostring(cs.model)),
        num(p.tokens_per_s_per_gpu, "%.0f"), meas,
        pct(V.throughput_error(cs)), num(p.mem_gib, "%.1f"), p.mem_kind or "-", p.fits and "yes" or "NO",
        cs.outcome or "ran", num(m.mem_gib, "%.1f"), pct(e.mem_gib) }
    end
  end
  local width = opts.wide and math.huge or require("apsearch.format.table").max_width
  out(M.clipped_table({ "case", "model", "tok/s/GPU est", "measured", "err (%)",
    "GiB est", "kind", "fits", "outcome", "GiB measured", "err (%)" }, rows,
    { false, false, true, true, true, true, false, false, false, true, true }, 2, width))
  -- the assumptions and summary lines folded at the table's width on a terminal (--wide,
  -- or a file or pipe: whole lines, which scripts read)
  local sum_width = (opts.wide or not require("apsearch.core").isatty(1)) and math.huge or width
  local function say(text) out(common.fold_text(text, sum_width)) end
  -- what each estimate took for the columns its row leaves empty (the
  -- release's recipe, the framework's default), so that an error can be
  -- read against it; the summary lines stay last (scripts read them)
  if derived then say("* from the run's measured step time or TFLOP/s, through the estimate's tokens and FLOPs a step\n") end
  local alines = {}
  for _, cs in ipairs(result.cases or {}) do
    for i, a in ipairs(cs.assumed or {}) do
      local id = util.printable(tostring(cs.case_id))
      alines[#alines + 1] = (i == 1 and ("  " .. id .. ": ") or ("  " .. (" "):rep(#id + 2))) ..
        util.printable(V.assumed_short(a))
    end
  end
  if #alines > 0 then
    say("\nassumed where a column is empty or implies it (--format json: each with its source files):\n" ..
      table.concat(alines, "\n") .. "\n")
  end
  if #errors > 0 then say("\nnot estimated:\n  " .. table.concat(errors, "\n  ") .. "\n") end
  local sm = result.summary or {}
  local thr, mem = sm.throughput or {}, sm.memory or {}
  say(string.format("\n%d cases, %d failed; throughput: %d compared, mean |error| %s%%, median %s%%, max %s%%\n",
    sm.cases or 0, sm.failed or 0, thr.count or 0, num(thr.mape_pct, "%.1f"),
    num(thr.median_abs_pct, "%.1f"), num(thr.max_abs_pct, "%.1f")))
  if sm.release_gap_cases then
    local wo = sm.throughput_without_release_gaps
    local names = {}
    for _, cs in ipairs(result.cases) do
      if cs.release_gap and not names[cs.release_gap.name] then
        names[cs.release_gap.name] = true
        names[#names + 1] = util.printable(cs.release_gap.name)
      end
    end
    say(string.format("throughput without the %d runs of a release far below its successors (%s: %s): "
      .. "%d compared, mean |error| %s%%, median %s%%, max %s%%\n", #sm.release_gap_cases,
      table.concat(sm.release_gap_cases, ", "), table.concat(names, "; "), wo.count or 0,
      num(wo.mape_pct, "%.1f"), num(wo.median_abs_pct, "%.1f"), num(wo.max_abs_pct, "%.1f")))
  end
  if sm.not_compared_cases then
    local ids = {}
    for i, id in ipairs(sm.not_compared_cases) do ids[i] = util.printable(tostring(id)) end
    say(string.format("not compared: the measured TFLOP/s or MFU of %d row%s (%s), whose flops_convention is "
      .. "unknown or empty; name the convention the source counts in (docs/accuracy.md)\n",
      #ids, #ids == 1 and "" or "s", table.concat(ids, ", ")))
  end
  say(string.format("memory: %d compared, mean |error| %s%%, %d under-estimates beyond 5%%\n",
    mem.count or 0, num(mem.mape_pct, "%.1f"), mem.under_estimates_beyond_5pct or 0))
  -- memory per measured kind, framework and family, the worst
  -- under-estimates, and the fit/no-fit calls against the reported outcome
  local function groups(title, g, order)
    local parts = {}
    for _, k in ipairs(order or util.sorted_keys(g or {})) do
      local v = g and g[k]
      if v and (v.count or 0) > 0 then
        parts[#parts + 1] = string.format("%s %d, mean |error| %s%%, max %s%%, %d under-estimates beyond 5%%",
          util.printable(k), v.count, num(v.mape_pct, "%.1f"), num(v.max_abs_pct, "%.1f"),
          v.under_estimates_beyond_5pct or 0)
      end
    end
    if #parts > 0 then say(string.format("memory by %s: %s\n", title, table.concat(parts, "; "))) end
  end
  groups("kind", sm.memory_by_kind, V.MEM_KINDS)
  groups("framework", sm.memory_by_framework)
  groups("family", sm.memory_by_family, { "dense", "moe" })
  if sm.memory_worst_under and #sm.memory_worst_under > 0 then
    local parts = {}
    for _, u in ipairs(sm.memory_worst_under) do
      parts[#parts + 1] = string.format("%s %s%% (%s, %.1f est vs %.1f GiB)", util.printable(tostring(u.case_id)),
        pct(u.error_pct), u.kind or "?", u.estimated_gib, u.measured_gib)
    end
    say("worst memory under-estimates: " .. table.concat(parts, ", ") .. "\n")
  end
  local fc = sm.fit_calls
  if fc and fc.oom and fc.oom.count > 0 then
    local parts = {}
    for _, w in ipairs(fc.wrong or {}) do
      parts[#parts + 1] = string.format("%s (%s, called %s at %.1f of %.1f GiB)", util.printable(tostring(w.case_id)),
        w.outcome, w.called, w.estimated_gib, w.limit_gib or 0)
    end
    say(string.format("fit/no-fit: %d runs that trained (called fit %d, out of memory %d), %d runs reported "
      .. "out of memory (called out of memory %d, fit %d); on the wrong side: %d%s\n",
      fc.ran.count, fc.ran.called_fit, fc.ran.called_oom, fc.oom.count, fc.oom.called_oom, fc.oom.called_fit,
      #(fc.wrong or {}), #parts > 0 and (" (" .. table.concat(parts, ", ") .. ")") or ""))
  end
  local oom = sm.predicted_not_to_fit or { count = 0, cases = {} }
  say(string.format("runs that trained but are estimated over the memory limit: %d%s\n",
    oom.count, oom.count > 0 and (" (" .. table.concat(oom.cases, ", ") .. ")") or ""))
  return validate_status(result)
end

------------------------------------------------------------------ calibrate

--- Writes a calibration file (`calibrate --output`): an earlier
-- calibration is replaced (a JSON object apsearch.calibration accepts),
-- any other file refused (util.write_output).
-- @tparam string path
-- @tparam string text the calibration's JSON
local CALIBRATION_WROTE = "a calibration apsearch wrote"
-- whether a file's head is a calibration (util.write_output's `ours`)
local function calibration_file(path)
  return function(head)
    local ok, c = pcall(require("cjson").decode, head)
    return ok and type(c) == "table" and pcall(require("apsearch.calibration").check, c, path)
  end
end

local function write_calibration(path, text)
  util.write_output("--output", path, text, CALIBRATION_WROTE, calibration_file(path))
end

local pct_error = require("apsearch.format.common").pct_error

-- The job of `calibrate --log` or `--trace` (its policy and --strategy,
-- or --from and --rank) estimated: the estimate, policy, inputs, strategy
-- and the note of the strategy's defaulted dimensions (nil for --from).
-- A job that cannot be estimated (another reason than the memory limit)
-- exits 2 with one line.
local function estimate_job(opts)
  opts.POLICY = opts.CASES
  local p, ctx, inputs, strat, defaulted = (opts.from and strategy_from_result or strategy_from_policy)(opts)
  local ok, est = pcall(ctx.estimate, ctx, strat)
  if not ok then error((tostring(est):gsub("^strategy[%.:] ?", "--strategy: ")), 0) end
  if est.reason and est.reason ~= "MEMORY_LIMIT" then
    util.fail("calibrate", "--strategy", ("the job cannot be estimated: %s: %s"):format(est.reason,
      tostring(est.message)), nil, false)
  end
  return est, p, inputs, strat, defaulted, ctx
end

-- Whether `calibrate --trace` was given the job the trace is of.
local function trace_job_given(opts)
  return (opts.CASES or opts.from or opts.model or opts.cluster or #(opts.strategy or {}) > 0
    or #(opts.set or {}) > 0) and true or false
end

-- The job given with `calibrate --trace` (a policy and --strategy, or
-- --from and --rank) estimated, with `{policy, strategy, device, from}`,
-- or nil when none is given.  The strategy's defaulted dimensions are
-- said (unless --quiet), as estimate says them.
local function trace_job_estimate(opts)
  if not trace_job_given(opts) then return nil end
  local est, p, _, strat, defaulted = estimate_job(opts)
  if defaulted and not opts.quiet then util.log("apsearch: %s", defaulted) end
  return est, { policy = p, strategy = strat, from = opts.from ~= nil,
    device = require("apsearch.calibration").device_name(p.cluster) }
end

-- The job's estimate with a calibration applied (as --calibration applies
-- it), or nil when the calibration has no entry for the job's device.
local function calibrated_job_estimate(job, calib)
  local calibration = require "apsearch.calibration"
  local p = util.copy(job.policy)
  -- a result's device table spells every field; one at the preset's value
  -- was not set by the job, and the calibration's flash value reaches it
  -- as it does a policy's named device (calibration.apply)
  local dev, name = p.cluster.device, calibration.device_name(p.cluster)
  local fields = calibration.fields_for(calibration.for_stack(calib, p.stack), name) or {}
  if job.from and type(dev) == "table" and fields.attention_efficiency and not fields.unfused_attention_efficiency then
    local ok, preset = pcall(require("apsearch.core").device_preset, name)
    if ok and dev.unfused_attention_efficiency == preset.unfused_attention_efficiency then
      dev.unfused_attention_efficiency = nil
    end
  end
  local _, applied = calibration.apply(p.cluster, calib, p.stack)
  if not applied then return nil end
  local ok, est = pcall(function() return require("apsearch.search").context(p):estimate(job.strategy) end)
  return ok and est or nil
end

--- `calibrate --trace FILE`: the host's launch costs measured on a
-- PyTorch profiler trace (apsearch.trace), written as a calibration, and
-- with the job the trace is of, its kernel time beside the estimate.
local function calibrate_trace(opts)
  -- the trace first: a bad one is one line, before any note of the job
  local calib, m, notes = require("apsearch.trace").calibration(opts.trace, opts.device, trace_job_given(opts))
  local est, job = trace_job_estimate(opts)
  local dev = next(calib.devices)
  local traced = calib.trace.preset or dev
  if est and job.device and tostring(job.device):lower() ~= traced:lower() then
    notes[#notes + 1] = ("apsearch: note: the trace ran on %s, the job is estimated on %s: the comparison below " ..
      "sets different parts side by side"):format(traced, tostring(job.device))
  end
  if not opts.quiet then for _, n in ipairs(notes) do util.log("%s", n) end end
  if opts.output then
    util.refuse_input_as_output("--output", opts.output, {}) -- every file read by now
    write_calibration(opts.output, require("apsearch.format.json").format(calib))
  end
  local common = require "apsearch.format.common"
  local width = require("apsearch.format.table").max_width
  local function say(text) out(common.fold_text(text, width) .. "\n") end
  local tformat = require "apsearch.format.trace"
  for _, line in ipairs(tformat.measure_lines(opts.trace, calib, m)) do say(line) end
  if est then
    for _, line in ipairs(tformat.beside_job(m, est)) do say(line) end
    local after = calibrated_job_estimate(job, calib)
    if after then
      say(("  with this trace's calibration (%s): estimated step time %.4f s (%+.1f %%)"):format(
        table.concat(util.sorted_keys(calib.devices[dev]), ", "), after.step_time,
        pct_error(after.step_time, m.step_seconds)))
    end
  end
  local fields = table.concat(util.sorted_keys(calib.devices[dev]), ", ")
  if opts.output then
    say(string.format("wrote %s (devices.%s: %s)", opts.output, dev, fields))
  else
    say(string.format("nothing written (no -o FILE): a calibration would hold devices.%s: %s", dev, fields))
  end
  return 0
end


local GIB = 2 ^ 30

-- `calibrate --log FILE` without a job: what the log says
local function print_log_summary(path, s)
  local common = require "apsearch.format.common"
  local width = require("apsearch.format.table").max_width
  local function say(text) out(common.fold_text(text, width) .. "\n") end
  local function n_of(n, what) return ("%d %s%s"):format(n, what, n == 1 and "" or "s") end
  local skipped = s.skipped == 0 and "none skipped"
    or ("the first %s skipped (warm-up)"):format(s.skipped == 1 and "one" or tostring(s.skipped))
  local used = s.first == s.last and ("iteration %d"):format(s.first)
    or ("iterations %d-%d"):format(s.first, s.last)
  say(("log %s: %s (%s format), %s logged, %s, %d used (%s)%s"):format(path, s.framework, s.format,
    n_of(s.logged, "iteration"), skipped, s.used, used,
    s.duplicates > 0 and (", " .. n_of(s.duplicates, "repeated line") .. " (the same step from other ranks) ignored")
      or ""))
  local parts = {}
  if s.step_seconds then parts[#parts + 1] = ("step time %.4f s"):format(s.step_seconds) end
  if s.tflops_per_gpu then parts[#parts + 1] = ("%.1f TFLOP/s per GPU"):format(s.tflops_per_gpu) end
  if s.tokens_per_s_per_gpu then parts[#parts + 1] = ("%.0f tokens/s per GPU"):format(s.tokens_per_s_per_gpu) end
  if s.mfu_pct then parts[#parts + 1] = ("MFU %.2f %%"):format(s.mfu_pct) end
  say("median: " .. table.concat(parts, ", ") .. (s.loss and ("; loss %.4f at iteration %d"):format(s.loss, s.last) or "")
    .. (s.nonfinite_losses > 0 and ("; %s logged a NaN or infinite loss (timed as logged)"):format(
      n_of(s.nonfinite_losses, "used iteration")) or "")
    .. (s.step_seconds and "" or " (TorchTitan logs no step time: give the job to derive it from tokens/s)"))
  local m = s.memory
  if m.max_reserved then
    local kinds = {}
    if m.max_allocated then kinds[#kinds + 1] = ("max allocated %.2f GiB"):format(m.max_allocated / GIB) end
    kinds[#kinds + 1] = ("max reserved %.2f GiB"):format(m.max_reserved / GIB)
    say(("memory: %s (%s; %d line%s%s)"):format(table.concat(kinds, ", "), m.kind, m.lines, m.lines == 1 and "" or "s",
      m.ranks > 0 and (", " .. m.ranks .. " rank" .. (m.ranks == 1 and "" or "s")) or ""))
  else
    say("memory: not logged")
  end
end

--- `calibrate --log FILE`: a training log's median step time and memory;
-- with the job (a policy and --strategy, or --from RESULT --rank N) beside
-- apsearch's estimate of it, and with -o a calibration whose efficiencies
-- make the estimate's step time the measured one (apsearch.calibrate
-- fit_scale).
--- The log format (apsearch.trainlog) each framework writes: Megatron-LM's
-- iteration line also for DeepSpeed (Megatron-DeepSpeed prints it), and
-- TorchTitan's step line for fsdp2; llm-foundry (fsdp) logs neither.
M.LOG_FRAMEWORK = { megatron = "megatron", deepspeed = "megatron", fsdp2 = "torchtitan" }

--- Fewer iterations used than this, and `calibrate --log` says its median
-- rests on few (a step of a checkpoint save or a straggler moves it).
M.FEW_LOG_ITERATIONS = 5

--- What a log's measurement is called in calibrate --log's refusal, by
-- the validate column its bounds are checked as.
local LOG_MEASURE_NAMES = {
  measured_step_time_s = "median step time (s)", measured_tokens_per_s_per_gpu = "tokens/s per GPU",
  measured_mem_gib = "memory (GiB)",
}

--- Refuses, before anything is printed, a log whose measurement no GPU
-- could make (a corrupt line: a step of 1e-310 ms printed inf and nan and
-- wrote a calibration of nulls): the physical bounds `validate` puts on a
-- CSV row of the same job (validate.check_bounds: MIN_/MAX_UTILIZATION of
-- the device's peaks for the job's FLOPs, MIN_MEM_GIB / MAX_MEM_FRACTION
-- of its memory).
local function check_log_bounds(path, job, step, tps, memory)
  local validate = require "apsearch.validate"
  -- the measured quantity first: Megatron logs the step, TorchTitan tps
  local rows = { { measured_step_time_s = ("%.17g"):format(step) },
                 { measured_tokens_per_s_per_gpu = ("%.17g"):format(tps) } }
  if job.step_derived then rows[1], rows[2] = rows[2], rows[1] end
  for _, b in ipairs({ memory.max_allocated or false, memory.max_reserved or false }) do
    if b then rows[#rows + 1] = { measured_mem_gib = ("%.17g"):format(b / GIB) } end
  end
  -- the context's inputs: the device as a full table (the policy's holds
  -- a base preset and overrides)
  local inp = job.ctx:inputs()
  for _, row in ipairs(rows) do
    row.device = inp.cluster.device.name or "the job's device"
    local ok, err = pcall(validate.check_bounds, row, job.ctx, job.strategy, job.est, inp.cluster.device,
      inp.cluster, inp.training)
    if not ok then
      local column, text, rest = tostring(err):match('^([%w_]+) = "([^"]*)" (.*)$')
      util.fail("calibrate", "--log", ("%s: the log's %s, %s, %s"):format(path,
        LOG_MEASURE_NAMES[column] or tostring(column), tostring(text),
        (tostring(rest or err):gsub("for this row", "for this job"))), nil, false)
    end
  end
end

local function calibrate_log(opts)
  local trainlog = require "apsearch.trainlog"
  local skip
  if opts.skip ~= nil then
    skip = math.tointeger(tonumber(opts.skip))
    if not skip or skip < 0 or not tostring(opts.skip):match("^%d+$") then
      util.fail("calibrate", "--skip", "expected an integer >= 0 (logged iterations to skip)", opts.skip)
    end
  end
  local s = trainlog.summary(trainlog.load(opts.log), skip)
  local job = opts.CASES or opts.from or opts.model or opts.cluster or #(opts.strategy or {}) > 0
    or #(opts.set or {}) > 0
  if not job then
    if opts.output then
      util.fail("calibrate", "--output", "needs the job the log is of (a policy and --strategy, or --from " ..
        "RESULT --rank N), to fit an estimate to", opts.output)
    end
    print_log_summary(opts.log, s)
    return 0
  end
  local est, p, inputs, strat, _, ctx = estimate_job(opts)
  local training = inputs.training
  local tokens = training.global_batch_size * training.seq_length
  -- a log of another job would fit the efficiencies to the wrong step:
  -- refused, saying what to give instead
  if M.LOG_FRAMEWORK[training.framework] ~= s.framework then
    util.fail("calibrate", "--log", ("a %s log, but the job's framework is %s (a %s log is of %s); give the "
      .. "job the log ran (--set training.framework=...)"):format(s.framework, training.framework,
      s.framework, s.framework == "megatron" and "megatron or deepspeed" or "fsdp2"), opts.log)
  end
  if s.global_batch_size and s.global_batch_size ~= training.global_batch_size then
    util.fail("calibrate", "--log", ("the log's global batch size is %d, the job's %d: the step times are "
      .. "of different jobs; give the job the log ran (--set training.global_batch_size=%d)"):format(
      s.global_batch_size, training.global_batch_size, s.global_batch_size), opts.log)
  end
  -- TorchTitan logs tokens/s per GPU, not the step time: the job's tokens
  -- per step over its GPUs' throughput
  local step = s.step_seconds or tokens / (est.devices_used * s.tokens_per_s_per_gpu)
  local tps = s.tokens_per_s_per_gpu or tokens / (est.devices_used * step)
  check_log_bounds(opts.log, { ctx = ctx, strategy = strat, est = est, step_derived = not s.step_seconds }, step,
    tps, s.memory)
  local common = require "apsearch.format.common"
  local width = require("apsearch.format.table").max_width
  local function say(text) out(common.fold_text(text, width) .. "\n") end
  say(("measured (%s, %s, median of %d iterations after %d skipped): step time %.4f s%s, %.0f tokens/s per GPU"):format(
    opts.log, s.framework, s.used, s.skipped, step, s.step_seconds and "" or " (from tps)", tps))
  -- what the measurement rests on, said beside it (and before a fit)
  if s.nonfinite_losses > 0 then
    say(("note: %d of the %d iterations used logged a NaN or infinite loss (timed as logged)"):format(
      s.nonfinite_losses, s.used))
  end
  if s.used < M.FEW_LOG_ITERATIONS then
    say(("note: %d iteration%s used: one slow step moves the median; a longer log is surer"):format(
      s.used, s.used == 1 and "" or "s"))
  end
  say(("estimated (%d GPUs): step time %.4f s (%+.1f %%), %.0f tokens/s per GPU (%+.1f %%)%s"):format(
    est.devices_used, est.step_time, pct_error(est.step_time, step), est.tokens_per_s_per_gpu,
    pct_error(est.tokens_per_s_per_gpu, tps), est.feasible and "" or "; estimated over the memory limit"))
  local m = s.memory
  if m.max_allocated then
    say(("memory: measured max allocated %.2f GiB, estimated %.2f GiB (%+.1f %%)"):format(m.max_allocated / GIB,
      est.mem_allocated / GIB, pct_error(est.mem_allocated, m.max_allocated)))
  end
  if m.max_reserved then
    say(("memory: measured max reserved %.2f GiB, estimated %.2f GiB (%+.1f %%)"):format(m.max_reserved / GIB,
      est.mem_reserved / GIB, pct_error(est.mem_reserved, m.max_reserved)))
  else
    say("memory: not in the log")
  end
  if not opts.output then return 0 end
  local calibration = require "apsearch.calibration"
  local calibrate = require "apsearch.calibrate"
  local dev = calibration.device_name(p.cluster)
  local ok_dev = dev and pcall(require("apsearch.core").device_preset, dev)
  if not ok_dev then
    util.fail("calibrate", "--log", "a calibration is per device preset; the job's device is none", dev)
  end
  local base = {}
  for _, f in ipairs(calibrate.job_fields(training)) do
    local v = inputs.cluster.device[f]
    if not (util.is_finite(v) and v > 0) then
      util.fail("calibrate", "--log", ("the job's device has no %s to scale"):format(f), v)
    end
    base[f] = v
  end
  local core = require "apsearch.core"
  local calib, fit = calibrate.fit_scale({
    device = dev, base = base, measured_step_s = step, fitted_on = opts.log,
    name = "log " .. util.basename(opts.log),
    estimate = function(fields)
      local cl = util.deepcopy(p.cluster)
      calibration.apply(cl, { devices = { [dev:lower()] = fields } })
      return core.context(p.model, cl, p.training):estimate(strat).step_time
    end,
  })
  -- `stack`: the job's, whose profile fields (its attention kernel) the
  -- fit replaces on a job of the same stack only (calibration.apply)
  calib.log = { framework = s.framework, stack = p.stack, format = s.format, iterations_used = s.used,
    skipped = s.skipped,
    first_iteration = s.first, last_iteration = s.last, step_seconds = step,
    tokens_per_s_per_gpu = tps, estimated_step_seconds = est.step_time, scale = fit.scale }
  calibration.check(util.deepcopy(calib), opts.log .. ": fitted")
  local text = require("apsearch.format.json").format(calib)
  util.refuse_input_as_output("--output", opts.output, {}) -- every file read by now
  write_calibration(opts.output, text)
  local names = util.sorted_keys(base)
  say(("fitted: %s x %.4f (%s family) -> step time %.4f s (%+.2f %% of the measured)%s; wrote %s"):format(
    table.concat(names, ", "), fit.scale, calibration.family(dev), fit.step_after, pct_error(fit.step_after, step),
    fit.at_bound and (" at the bound of the fields' physical range (x" .. ("%.3f"):format(fit.scale) ..
      "): the step time is not reached by kernel efficiency alone") or "", opts.output))
  return 0
end

local function cmd_calibrate(args)
  local c = new_parser("calibrate", "Fit the device kernel efficiencies to measured runs (CSV) or to a training " ..
    "log (--log), or the host's launch costs and the GEMM and attention efficiencies to a profiler trace (--trace).")
  c:splat("CASES", "CSV of measured runs (schema: docs/accuracy.md); with --log or --trace the job's " ..
    "policy file, as estimate's POLICY", nil, 1)
  c:option("-o, --output=FILE", "calibration file to write (JSON); optional with --log and --trace (without it " ..
    "nothing is written)")
  c:option("--group=KEY", "fit one calibration per group: software (the stack of each row's `software`)")
  c:option("--trace=FILE", "PyTorch profiler (Kineto) trace JSON, plain or .gz, or an Nsight Systems SQLite " ..
    "export (nsys export --type sqlite): measure the host's " ..
    "seconds per kernel launch and the GPU's gap between queued kernels and, from a training step recorded " ..
    "with record_shapes=True, fit the GEMM " ..
    "and attention efficiencies instead of fitting cases")
  c:option("--device=NAME", "device preset the trace's values are for (default: the trace's GPU)")
  c:option("--log=FILE", "Megatron-LM or TorchTitan training log: its median step time and memory; with the job " ..
    "(policy and --strategy, or --from and --rank) beside the estimate, and -o fits the efficiencies to it")
  c:option("--skip=N", "--log: logged iterations to skip as warm-up (default: the first 3, or the first tenth when that is more)")
  c:option("--strategy=KEY=VALUE,...", "--log, --trace: the job's strategy, as estimate's (repeatable)", {})
  c:option("--from=RESULT", "--log, --trace: the job is a strategy of this result.json (or its DIR), with --rank")
  c:option("--rank=N", "--log, --trace: the top-k rank of --from")
  c:option("--set=KEY=VALUE", "--log, --trace: override a field of the job's policy (repeatable)", {})
  c:option("--model=MODEL", "--log, --trace: the job's model (preset, config.json or snapshot directory)")
  c:option("--cluster=SPEC", "--log, --trace: the job's cluster, DEVICE[:NODES[xGPUS]]")
  c:flag("-q, --quiet", "no log lines on stderr")
  local opts, helped = parse(c, args, "calibrate")
  if helped then return 0 end
  if opts.log then
    if opts.trace or opts.group then
      util.fail("calibrate", "--log", "takes no --trace and no --group", opts.trace or opts.group)
    end
  end
  if opts.log or opts.trace then
    if opts.rank ~= nil and opts.from == nil then
      util.fail("--rank", "rank", "needs --from RESULT (the result.json the rank is of)", opts.rank)
    end
    if opts.trace and opts.skip ~= nil then util.fail("calibrate", "--skip", "is an option of --log", opts.skip) end
  else
    for _, k in ipairs({ "skip", "from", "rank", "model", "cluster" }) do
      if opts[k] ~= nil then util.fail("calibrate", "--" .. k, "is an option of --log and --trace", opts[k]) end
    end
    for _, k in ipairs({ "strategy", "set" }) do
      if #(opts[k] or {}) > 0 then
        util.fail("calibrate", "--" .. k, "is an option of --log and --trace", opts[k][1])
      end
    end
  end
  if not opts.output and not opts.log and not opts.trace then
    util.fail("calibrate", "--output", "is required", nil, false)
  end
  local lfs = require "lfs"
  local mode = opts.output and lfs.attributes(opts.output, "mode")
  if mode and mode ~= "file" then
    util.fail("--output", "file", "cannot write: a " .. mode .. " is in the way", opts.output)
  end
  if opts.output and lfs.attributes(util.dirname(opts.output), "mode") ~= "directory" then
    util.fail("--output", "file", "cannot write: no directory " .. util.dirname(opts.output), opts.output)
  end
  -- the cases, trace, log, policy or result read: never written over
  util.refuse_input_as_output("--output", opts.output, { n = 5, opts.CASES, opts.trace, opts.log,
    opts.from, opts.from and util.join_path(opts.from, "result.json") })
  if opts.log then return calibrate_log(opts) end
  if opts.trace then
    if opts.group then util.fail("calibrate", "--trace", "takes no --group", opts.group) end
    if opts.device then require("apsearch.calibration").check({ devices = { [opts.device] = {} } }, "--device") end
    return calibrate_trace(opts)
  end
  if not opts.CASES then util.fail("calibrate", "CASES", "is required (or --trace FILE)", nil, false) end
  if opts.group ~= nil and opts.group ~= "software" then
    util.fail("calibrate", "--group", require("apsearch.suggest").unknown("unknown grouping",
      opts.group, { "software" }), opts.group)
  end
  -- a file that is not an earlier calibration: refused before the fit
  util.check_output("--output", opts.output, CALIBRATION_WROTE, calibration_file(opts.output))
  local log = (not opts.quiet) and function(line) util.log("%s", line) end or nil
  local calibrate = require "apsearch.calibrate"
  local calib = opts.group and calibrate.fit_grouped(opts.CASES, { log = log, by = opts.group })
    or calibrate.fit(opts.CASES, { log = log })
  local text = require("apsearch.format.json").format(calib)
  util.refuse_input_as_output("--output", opts.output, {}) -- every file read by now
  write_calibration(opts.output, text)
  if calib.stacks then
    for _, id in ipairs(util.sorted_keys(calib.stacks)) do
      local sc = calib.stacks[id]
      out(string.format("stack %s: calibrated %d rows: mean |log error| of tokens/s per GPU %.4f -> %.4f\n",
        id, sc.rows, sc.loss_before, sc.loss_after))
    end
    out(string.format("wrote %s\n", opts.output))
  else
    out(string.format("calibrated %d rows: mean |log error| of tokens/s per GPU %.4f -> %.4f; wrote %s\n",
      calib.rows, calib.loss_before, calib.loss_after, opts.output))
  end
  return 0
end

---------------------------------------------------------------------- main

------------------------------------------------------------------------ init

local function cmd_init(args)
  local c = new_parser("init", "Write the policy `run --model MODEL --cluster CLUSTER` builds, as a policy file on stdout.")
  c:argument("MODEL", "model preset name, or a Hugging Face config.json / snapshot directory")
  c:argument("CLUSTER", "DEVICE[:NODES[xGPUS]], e.g. h100-sxm-80gb:128 (128 hosts of 8)")
  c:option("--set=KEY=VALUE", "override a field of the written policy, e.g. training.precision=fp8 (repeatable)", {})
  local opts, helped = parse(c, args, "init")
  if helped then return 0 end
  local model = installed_example(opts.MODEL) or opts.MODEL
  if policy_mod.is_path(model) then
    -- the written file may live anywhere: an absolute path reads the same
    model = require("apsearch.core").realpath(model) or model
  end
  local raw, header = M.built_policy({ model = model, cluster = opts.CLUSTER })
  local built = M.built_batch(raw)
  local command = "apsearch init " .. opts.MODEL .. " " .. opts.CLUSTER
  -- the policy as `run` would normalize it, --set applied, so that the
  -- space written is the one searched
  local p = policy_mod.from_table(raw, command, { set = opts.set or {}, base_dir = ".", built = true })
  -- the estimator's checks of the model, cluster and training, as `run`
  -- meets them first: a policy `run` would refuse is not written
  require("apsearch.search").context(p)
  raw.search_space = policy_mod.default_search_space(p.cluster, p.model, p.training)
  for _, st in ipairs(opts.set or {}) do
    local key, value = policy_mod.parse_assignment(st, "--set")
    policy_mod.apply_set(raw, key, value)
  end
  -- the header says what --set changed of the batch or the sequence, as
  -- run's does (it said the built 4096 above a body of 8192)
  out(require("apsearch.defaults").render(raw, M.built_header(p, built, header), command))
  return 0
end

local COMMANDS = {
  run = cmd_run, estimate = cmd_estimate, presets = cmd_presets, inspect = cmd_inspect,
  validate = cmd_validate, calibrate = cmd_calibrate, init = cmd_init,
}

--- Runs the command line.
-- @tparam table args the arguments after the program name
-- @treturn integer exit status: 0 success, 1 no feasible strategy, (2 is
--   the host's status for a raised error)
-- @raise a one-line message on bad input (the host prints `apsearch: <msg>`
--   and exits 2)
local function command_names()
  local names = {}
  for k in pairs(COMMANDS) do names[#names + 1] = k end
  table.sort(names)
  return names
end

local function unknown_command(cmd)
  local names = command_names()
  local hint = require("apsearch.suggest").did_you_mean(cmd, names)
  error(string.format("unknown command %q%s (commands: %s; see apsearch help)", cmd,
    hint and ("; " .. hint) or "", table.concat(names, ", ")), 0)
end

--- The usage text printed by `apsearch help` (and, on stderr, by a bare
-- `apsearch`).
M.usage = USAGE

--- Builds every subcommand's parser without running it and returns
-- M.specs, the option table of each (see `M.specs`).
-- @treturn table `{name = spec}`, and the sorted command names
function M.option_table()
  collecting = true
  local ok, err = pcall(function()
    for _, name in ipairs(command_names()) do COMMANDS[name]({ "--help" }) end
  end)
  collecting = false
  if not ok then error(err, 0) end
  return M.specs, command_names()
end

--- Runs the command line (M.dispatch); a bad-input error's "(known: ...)"
-- list is cut to fit the terminal width (suggest.fold_known), except
-- under APSEARCH_DEBUG, which shows the whole message and its traceback.
-- @tparam table args the arguments after the program name
-- @treturn integer exit status
function M.main(args)
  local debug = os.getenv("APSEARCH_DEBUG")
  if debug and debug ~= "" and debug ~= "0" then return M.dispatch(args) end
  local ok, res = pcall(M.dispatch, args)
  if ok then return res end
  if type(res) == "string" and not res:find("\nstack traceback:", 1, true) then
    -- one line a terminal shows as written: a file name or value with
    -- control characters, bidi controls or bytes that are not UTF-8 escaped
    res = util.printable(require("apsearch.suggest").fold_known(res))
  end
  error(res, 0)
end

--- The command line, errors raised as they are (M.main cuts their lists).
function M.dispatch(args)
  args = args or {}
  local cmd = args[1]
  if cmd == nil then
    -- no command: the usage on stderr, exit 2 (as a usage error)
    io.stderr:write(USAGE)
    return 2
  end
  if cmd == "help" or cmd == "-h" or cmd == "--help" then
    if args[2] ~= nil then
      if not COMMANDS[args[2]] then unknown_command(args[2]) end
      return COMMANDS[args[2]]({ "--help" })
    end
    out(USAGE)
    return 0
  end
  if cmd == "--version" or cmd == "-V" or cmd == "version" then
    out("apsearch " .. M.version .. "\n")
    return 0
  end
  local f = COMMANDS[cmd]
  if not f then unknown_command(cmd) end
  local rest = {}
  for i = 2, #args do rest[#rest + 1] = args[i] end
  return f(rest)
end

return M
