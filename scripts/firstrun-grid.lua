#!/usr/bin/env lua5.4
-- scripts/firstrun-grid.lua -- the first-run grid of issue 26: `apsearch
-- run --model M --cluster D:N` with no other flag, for every model x device
-- x GPU count below, one run each (`--quiet --format json`).  Per run it
-- records the wall and CPU (user + sys) time, the feasible count, rank 1
-- (its layout, step time, MFU, peak memory against the device memory
-- limit) and any error, and flags what an expert would question:
--
--   nofit    no feasible strategy (exit status 1)
--   error    any other exit status, or output that is not a result
--   slow     CPU above SLOW_CPU seconds
--   mfu      MFU outside the plausible band of the device and model class
--            (MFU_BAND: dense bf16 25-60 % of the dense peak, MoE 8-50 %)
--   batch    global batch not the recipe tokens-per-GPU rule's
--            (apsearch.defaults.training, docs/policy.md "Built policies")
--   pp       pipelining a dense model that plain data parallelism holds:
--            bf16 parameters and fp32 gradients replicated (6 bytes a
--            parameter) and Adam's 12 bytes sharded over every GPU below
--            half the memory limit, with a whole sequence a GPU
--   tp>nvl   TP beyond one NVLink domain
--   ep       EP not dividing the experts, or EP x ETP not dividing the
--            ranks of a pipeline stage (dp x fsdp x tp x cp)
--   idle     devices_used below the cluster's devices
--   mem90    peak above 90 % of device memory (the table's '!'; not a
--            failure: the run's note names the first rank below it)
--
-- Usage:
--   lua5.4 scripts/firstrun-grid.lua [--bin build/apsearch] [--csv OUT.csv]
--     [--models a,b] [--devices a,b] [--gpus 8,16] [--jobs N] [--launch 1]
-- --launch 1 also writes each feasible run's launch files (`--out DIR`,
-- a second run, not timed) and checks rank 1's Megatron-LM script against
-- the estimate: devices, tp / pp / vpp / cp / ep / etp, micro and global
-- batch, sequence, SP, FSDP or the distributed optimizer, recompute, and
-- the layers of every pipeline rank as Megatron builds them from the
-- flags (flag "launch" on a difference).
-- prints one row a run and a summary; --csv writes every field.  Wall time
-- on a shared machine follows the neighbours; CPU time is the figure.
-- The figures of a run on the 2-core VM are in bench/firstrun-grid.sh.

local json = require "cjson"
local root = arg[0]:match("^(.*)/scripts/[^/]*$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. root .. "/tests/lua/?.lua;" .. package.path
local defaults = require "apsearch.defaults"

local MODELS = { "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-72b",
  "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3" }
-- device -> GPUs a host (`--cluster DEVICE:HOSTS`): an HGX board of 8, a
-- GB200 NVL72 compute tray of 4 (`apsearch presets`)
local DEVICES = { { "h100-sxm-80gb", 8 }, { "b200", 8 }, { "gb200", 4 } }
local GPUS = { 8, 16, 64, 256, 1024, 4096, 16384 }
local SLOW_CPU = 1.5
-- plausible MFU of a bf16 run per class (fractions of the dense bf16 peak)
local MFU_BAND = { dense = { 0.25, 0.60 }, moe = { 0.08, 0.50 } }

local args = { bin = root .. "/build/apsearch" }
do
  local i = 1
  while i <= #arg do
    local k = arg[i]:match("^%-%-(.+)$")
    if not k or arg[i + 1] == nil then io.stderr:write("usage: see the header of ", arg[0], "\n") os.exit(2) end
    args[k] = arg[i + 1]
    i = i + 2
  end
end
local function list(s, default)
  if not s then return default end
  local out = {}
  for x in s:gmatch("[^,]+") do out[#out + 1] = x end
  return out
end
local models = list(args.models, MODELS)
local gpus = list(args.gpus, GPUS)
local devices = DEVICES
if args.devices then
  local want = {}
  for _, d in ipairs(list(args.devices)) do want[d] = true end
  devices = {}
  for _, d in ipairs(DEVICES) do if want[d[1]] then devices[#devices + 1] = d end end
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function slurp(path)
  local f = io.open(path, "r")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

-- one run: exit status, decoded result (or nil), stderr, wall, cpu
local tmp = os.tmpname()
local function run_one(model, cluster)
  local cmd = string.format("TIMEFORMAT='%%R %%U %%S'; { time %s run --model %s --cluster %s --quiet --format json " ..
    "--top-k 1%s >%s.out 2>%s.err; echo \"rc $?\" >%s.rc; } 2>%s.time",
    sh_quote(args.bin), sh_quote(model), sh_quote(cluster), args.jobs and (" --jobs " .. args.jobs) or "",
    tmp, tmp, tmp, tmp)
  os.execute("bash -c " .. sh_quote(cmd))
  local rc = tonumber(slurp(tmp .. ".rc"):match("rc (%d+)"))
  local wall, user, sys = slurp(tmp .. ".time"):match("([%d.]+) ([%d.]+) ([%d.]+)")
  local out = slurp(tmp .. ".out")
  local ok, r = pcall(json.decode, out)
  return rc, ok and type(r) == "table" and r or nil, slurp(tmp .. ".err"), tonumber(wall),
    (tonumber(user) or 0) + (tonumber(sys) or 0)
end

local function layout(s)
  local parts = {}
  local function add(k, v, skip)
    v = math.tointeger(v) or v
    if v ~= nil and v ~= skip and v ~= json.null then parts[#parts + 1] = k .. tostring(v) end
  end
  add("dp", s.dp_degree) add("fsdp", s.fsdp_degree, 1) add("z", s.zero_stage, 0)
  add("tp", s.tp_degree) add("pp", s.pp_degree) add("v", s.vpp_degree, 1) add("cp", s.cp_degree, 1)
  add("ep", s.ep_degree) add("etp", s.etp_degree, 1)
  add("mbs", s.micro_batch_size)
  local rc = s.layer_recompute
  if rc and rc ~= "none" then
    local n = type(s.recompute_num_layers) == "table" and s.recompute_num_layers[1] or nil
    n = n and math.tointeger(n)
    parts[#parts + 1] = (rc == "full" and "full" or "sel") .. (n and rc == "full" and ("/" .. n) or "")
  end
  return table.concat(parts, " ")
end

-- expert judgement of rank 1 (the flags of the header)
local function judge(r, row)
  local flags = {}
  local m, tr, cl = r.inputs.model, r.inputs.training, r.inputs.cluster
  local s = r.top_k_strategies[1]
  local moe = (m.num_experts or 0) > 0
  local band = MFU_BAND[moe and "moe" or "dense"]
  local mfu = s.performance_cost.mfu
  if mfu < band[1] or mfu > band[2] then flags[#flags + 1] = "mfu" end
  local want = defaults.training(m, cl.num_devices)
  if want.global_batch_size ~= tr.global_batch_size or want.seq_length ~= tr.seq_length then
    flags[#flags + 1] = "batch"
  end
  local dom = math.max(cl.devices_per_node, cl.nvlink_domain_size or 0)
  if s.tp_degree > dom then flags[#flags + 1] = "tp>nvl" end
  if s.ep_degree then
    -- Megatron's expert grid: EP divides the experts, and ETP x EP the
    -- ranks of one pipeline stage (tp x cp x dp, parallel_state.py
    -- initialize_model_parallel)
    local stage = s.tp_degree * (s.cp_degree or 1) * (s.dp_degree or 1) * (s.fsdp_degree or 1)
    if m.num_experts % s.ep_degree ~= 0 or stage % (s.ep_degree * (s.etp_degree or 1)) ~= 0 then
      flags[#flags + 1] = "ep"
    end
  end
  if s.pp_degree > 1 and not moe and tr.global_batch_size >= cl.num_devices then
    -- plain data parallelism with the distributed optimizer holds the
    -- model in half the memory limit (bf16 parameters and fp32 gradients
    -- replicated, 6 bytes a parameter, Adam's 12 sharded over every GPU)
    -- and the batch gives every GPU a whole sequence: a pipeline is a
    -- choice to question (Llama 3 8B on 8 GPUs runs TP 1 PP 1 DP 8,
    -- Megatron-Bridge llama3_8b recipe, heldout fixture mbd011)
    if row.params * (6 + 12 / cl.num_devices) < 0.5 * s.memory_cost.limit then flags[#flags + 1] = "pp" end
  end
  if s.memory_cost.near_capacity then flags[#flags + 1] = "mem90" end
  if s.devices_used and s.devices_used < cl.num_devices then flags[#flags + 1] = "idle" end
  return flags
end

-- Megatron-LM's layers per model chunk from a script's flags, and v
-- (the launch specs' oracle, tests/lua/megatron_layers.lua)
local megatron_chunks = require("megatron_layers").chunks

-- the launch check: rank 1's Megatron-LM script of `--out DIR` against
-- the estimate of the same run (result.json); the differences, as text
local function check_launch(model, cluster)
  -- a private directory: --out's link, set directory and lock all in it
  local p = io.popen("mktemp -d")
  local base = p:read("l")
  p:close()
  local dir = base .. "/out"
  os.execute(string.format("%s run --model %s --cluster %s --quiet --top-k 1 --out %s >/dev/null 2>&1",
    sh_quote(args.bin), sh_quote(model), sh_quote(cluster), sh_quote(dir)))
  local ok, r = pcall(json.decode, slurp(dir .. "/result.json"))
  local script = slurp(dir .. "/launch/rank1_megatron.sh")
  os.execute("rm -rf " .. sh_quote(base))
  if not ok or script == "" then return { "no result.json or rank1_megatron.sh" } end
  local s, m, tr = r.top_k_strategies[1], r.inputs.model, r.inputs.training
  local f = {}
  for line in script:gmatch("[^\n]+") do
    local flag, val = line:match("^%s+(%-%-[%w%-]+)%s*(.*)$")
    if flag then f[flag] = val ~= "" and val or true end
  end
  local env = function(k) return tonumber(script:match(k .. "=%${" .. k .. ":%-(%d+)}")) end
  local diffs = {}
  local function eq(what, want, got)
    if tostring(math.tointeger(want) or want) ~= tostring(got) then
      diffs[#diffs + 1] = string.format("%s: estimate %s, script %s", what, tostring(want), tostring(got))
    end
  end
  local int = function(x) return math.tointeger(x) or x end
  eq("devices", int(s.devices_used), (env("NNODES") or 0) * (env("GPUS_PER_NODE") or 0))
  eq("tp", int(s.tp_degree), f["--tensor-model-parallel-size"] or 1)
  eq("pp", int(s.pp_degree), f["--pipeline-model-parallel-size"] or 1)
  eq("cp", int(s.cp_degree), f["--context-parallel-size"] or 1)
  eq("mbs", int(s.micro_batch_size), f["--micro-batch-size"])
  eq("gbs", int(tr.global_batch_size), f["--global-batch-size"])
  eq("seq", int(tr.seq_length), f["--seq-length"])
  eq("sp", tostring(s.tp_degree > 1 and s.sequence_parallel), tostring(f["--sequence-parallel"] == true))
  if s.ep_degree then
    eq("ep", int(s.ep_degree), f["--expert-model-parallel-size"] or 1)
    eq("etp", int(s.etp_degree or 1), f["--expert-tensor-parallel-size"] or f["--tensor-model-parallel-size"] or 1)
  end
  local fsdp = (s.fsdp_degree or 1) > 1
  eq("fsdp", tostring(fsdp), tostring(f["--use-torch-fsdp2"] == true or f["--use-megatron-fsdp"] == true))
  if not fsdp then
    eq("distributed optimizer", tostring((s.zero_stage or 0) >= 1), tostring(f["--use-distributed-optimizer"] == true))
  end
  local rc = s.layer_recompute or "none"
  eq("recompute", rc, f["--recompute-granularity"] or "none")
  if rc == "full" and f["--recompute-method"] == "block" then
    local n = type(s.recompute_num_layers) == "table" and s.recompute_num_layers[1] or nil
    -- per model chunk (each chunk is a TransformerBlock applying it)
    if n then eq("recompute layers a chunk", int(n) // int(s.vpp_degree), f["--recompute-num-layers"]) end
  end
  -- layers per rank: the script's chunks summed per rank against the
  -- estimate's stage_partition (per rank, or per chunk when it has p x v)
  local p = int(s.pp_degree)
  local chunks, v = megatron_chunks(f, int(m.num_layers))
  eq("vpp", int(s.vpp_degree), v)
  local per = {}
  for i = 1, p do
    per[i] = 0
    for k = 0, v - 1 do per[i] = per[i] + (chunks[k * p + i] or 0) end
  end
  local est = {}
  local part = s.stage_partition or {}
  for i = 1, p do
    est[i] = 0
    if #part == p * int(s.vpp_degree) and #part > p then
      for k = 0, int(s.vpp_degree) - 1 do est[i] = est[i] + int(part[k * p + i]) end
    else
      est[i] = int(part[i] or 0)
    end
  end
  eq("layers per rank", table.concat(est, ","), table.concat(per, ","))
  return diffs
end

-- parameter counts, once a model
local params = {}
local function model_params(model)
  if params[model] then return params[model] end
  local p = io.popen(sh_quote(args.bin) .. " inspect --format json " .. sh_quote(model) .. " 2>/dev/null")
  local ok, r = pcall(json.decode, p:read("a"))
  p:close()
  params[model] = ok and r.parameters and r.parameters.total or 0
  return params[model]
end

local rows = {}
local hdr = string.format("%-15s %-14s %5s %5s %5s %6s  %-44s %9s %6s %14s  %s", "model", "device", "gpus",
  "wall", "cpu", "feas", "rank-1", "step_s", "MFU%", "peak/limit_GiB", "flags")
print(hdr)
print((hdr:gsub("%S+", function(w) return ("-"):rep(#w) end)))
for _, model in ipairs(models) do
  for _, dev in ipairs(devices) do
    for _, g in ipairs(gpus) do
      local n = tonumber(g)
      local name, per = dev[1], dev[2]
      local row = { model = model, device = name, gpus = n, params = model_params(model), flags = {} }
      if n % per ~= 0 then
        row.error = "not expressible"
      else
        row.cluster = string.format("%s:%d", name, n // per)
        local rc, r, err, wall, cpu = run_one(model, row.cluster)
        row.rc, row.wall, row.cpu = rc, wall, cpu
        if r and r.all_candidate_summary then
          row.feasible = math.tointeger(r.all_candidate_summary.feasible)
          row.candidates = math.tointeger(r.all_candidate_summary.generated)
          row.batch = math.tointeger(r.inputs.training.global_batch_size)
          row.seq = math.tointeger(r.inputs.training.seq_length)
        end
        if rc == 0 and r and r.top_k_strategies and r.top_k_strategies[1] then
          local s = r.top_k_strategies[1]
          row.layout = layout(s)
          row.step = s.performance_cost.step_time
          row.mfu = s.performance_cost.mfu
          row.peak = s.memory_cost.total
          row.limit = s.memory_cost.limit
          row.flags = judge(r, row)
          if args.launch then
            local d = check_launch(model, row.cluster)
            row.launch = #d == 0 and "same" or table.concat(d, "; ")
            if #d > 0 then table.insert(row.flags, "launch") end
          end
        elseif rc == 1 then
          row.flags = { "nofit" }
          row.error = r and r.fit_probe and ("fits from " .. tostring(r.fit_probe.devices)) or "no feasible"
        else
          row.flags = { "error" }
          row.error = (err:match("[^\n]+") or ("exit " .. tostring(rc)))
        end
        if cpu and cpu > SLOW_CPU then table.insert(row.flags, "slow") end
      end
      rows[#rows + 1] = row
      local G = 2 ^ 30
      print(string.format("%-15s %-14s %5d %5s %5s %6s  %-44s %9s %6s %14s  %s", model, name, n,
        row.wall and string.format("%.2f", row.wall) or "-", row.cpu and string.format("%.2f", row.cpu) or "-",
        row.feasible or "-", row.layout or row.error or "-",
        row.step and string.format("%.2f", row.step) or "-", row.mfu and string.format("%.1f", 100 * row.mfu) or "-",
        row.peak and string.format("%.1f/%.1f", row.peak / G, row.limit / G) or "-", table.concat(row.flags, ",")))
      io.stdout:flush()
    end
  end
end
for _, ext in ipairs({ "", ".out", ".err", ".rc", ".time" }) do os.remove(tmp .. ext) end

-- summary
local n, ok, cpus, flagged = 0, 0, {}, {}
for _, row in ipairs(rows) do
  if row.cluster then
    n = n + 1
    if row.layout then ok = ok + 1 end
    cpus[#cpus + 1] = row.cpu or 0
    for _, f in ipairs(row.flags) do flagged[f] = (flagged[f] or 0) + 1 end
  end
end
table.sort(cpus)
local fl = {}
for k, v in pairs(flagged) do fl[#fl + 1] = k .. " " .. v end
table.sort(fl)
print(string.format("\n%d runs, %d with a feasible rank 1; CPU s median %.2f, max %.2f; flags: %s", n, ok,
  cpus[(#cpus + 1) // 2] or 0, cpus[#cpus] or 0, #fl > 0 and table.concat(fl, ", ") or "none"))

if args.csv then
  local f = assert(io.open(args.csv, "w"))
  local cols = { "model", "device", "gpus", "cluster", "rc", "wall", "cpu", "candidates", "feasible", "batch", "seq",
    "layout", "step", "mfu", "peak", "limit", "error", "launch" }
  f:write(table.concat(cols, ","), ",flags\n")
  for _, row in ipairs(rows) do
    local v = {}
    for i, c in ipairs(cols) do
      local x = row[c]
      v[i] = x == nil and "" or (type(x) == "string" and ('"' .. x:gsub('"', '""') .. '"') or tostring(x))
    end
    f:write(table.concat(v, ","), ",", table.concat(row.flags, " "), "\n")
  end
  f:close()
end
