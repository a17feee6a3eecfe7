--- The HTML report of a search: one self-contained file that works
-- offline (no network, no other file): the eight charts of
-- shared/design/OUTPUTS.md drawn by Apache ECharts, whose script is
-- inlined, the data they are drawn from (a JSON block), the top-k table,
-- the filter reasons, the inputs and the search log.
--
-- The charts:
--
-- 1. top-k estimated step time, stacked by performance category (exposed s);
-- 2. top-k peak memory per GPU, stacked by memory category, limit line;
-- 3. per-stage memory and time of one top-k strategy (a selector picks the
--    rank; the first pipelined one by default);
-- 4. feasible vs infeasible (after the estimate) vs filtered early;
-- 5. filter reasons, counted, with an example each;
-- 6. trends: the best step time, and that strategy's memory, for each
--    value of dp x fsdp, tp, pp and cp degree;
-- 7. memory vs step time of every feasible candidate, the Pareto front
--    and the top-k marked (above `max_points`, about 1 in 2^j feasible
--    candidates, chosen by a hash of their index, 2^j the least power of
--    two that keeps at most `max_points`, sampled while searching; the
--    front and the top-k are always drawn);
-- 8. the top-k's step time with the inter-node bandwidth scaled x0.25..x4
--    (re-estimated by the core in the search driver);
-- 9. in the pipeline-stages section, the Gantt chart of the charted
--    pipelined strategy's simulated schedule: one row per pipeline rank,
--    a bar per op (forward, backward, input-gradient backward, weight
--    gradient) coloured by kind, idle time as gaps, the bubble labelled
--    (`stage_summary[r].timeline`, search.run; when a rank ran more ops
--    than were kept, its start and its end are drawn side by side and the
--    chart says what was left out).
--
-- Tooltips show the full strategy.  The tables are plain HTML, so the
-- report stays readable without ECharts (it then says so) or JavaScript.
-- Every number comes from the search result; the report converts units
-- for display only (GiB = 2^30 bytes).
-- @module apsearch.report.html
local util = require "apsearch.util"
local common = require "apsearch.format.common"

local M = {}

--- The colour of every memory and time category, the same in every chart
-- (1, 2 and 3; chart 3's forward and backward lines take compute_fwd and
-- compute_bwd) and in every report: the one place they are defined
-- (report.js reads them from the data block).  Twenty-two distinct colours,
-- so a memory category never looks like a time category either.
M.category_colors = {
  -- memory (apsearch.format.common.memory_categories)
  params = "#3b5b92", grads = "#edc948", optimizer_states = "#6f4e7c",
  activations = "#d37295", comm_buffers = "#17becf", logits_loss = "#8c564b",
  workspaces = "#637939", reserved = "#bab0ac",
  -- time (apsearch.format.common.time_categories)
  compute_fwd = "#4e79a7", compute_bwd = "#a0cbe8", recompute = "#f28e2b",
  tp_comm = "#ffbe7d", cp_comm = "#59a14f", pp_p2p = "#8cd17d", pp_bubble = "#e15759",
  fsdp_allgather = "#b07aa1", fsdp_reducescatter = "#d4a6c8", dp_grad_sync = "#9d7660",
  hsdp_replicate_sync = "#d7b5a6", optimizer = "#499894", activation_offload = "#86bcb6",
  ep_comm = "#7f7f7f", host_launch = "#bcbd22", kernel_gaps = "#dbdb8d",
}

--- Largest number of points drawn in chart 7.
M.max_points = 4000

--- The colour of each op kind in chart 9 (PyTorch pipelining's letters:
-- F forward, B full backward, I backward for the input gradient only, W
-- weight gradient), distinct from one another on white.
M.op_colors = { F = "#4e79a7", B = "#f28e2b", I = "#b07aa1", W = "#59a14f" }

--- What chart 9's legend calls each op kind.
M.op_names = { F = "forward (F)", B = "backward (B)", I = "backward, input gradient (I)",
  W = "weight gradient (W)" }

--- How each pp_schedule is named in the report: PyTorch pipelining's class
-- names, Megatron-LM's (interleaved) 1F1B for "1f1b".
M.schedule_names = { ["1f1b"] = "1F1B", interleaved_zero_bubble = "InterleavedZeroBubble",
  zbv_zero_bubble = "ZBVZeroBubble", dualpipev = "DualPipeV" }

--- Significant digits of the op times in the report's data block (the
-- report draws them; result.json keeps the full ones).
M.timeline_digits = 6

--- Relative path of the ECharts script in a build tree (next to the
-- binary) and in an install tree (under the data root).
M.echarts_relpath = "report/echarts.min.js"

local function module_dir()
  local path = package.searchpath and package.searchpath("apsearch.report.html", package.path)
  if path then return util.dirname(path) end
  return util.join_path(util.root(), "lua/apsearch/report")
end

local function read_asset(name)
  local path = util.join_path(module_dir(), name)
  local s, err = util.read_file(path)
  if not s then error("report: cannot read " .. path .. ": " .. tostring(err), 0) end
  return s
end

-- directories of the running program: the resolved /proc/self/exe (the
-- apsearch binary, not a stock lua5.4) and argv[0] as typed
local function exe_dirs()
  local dirs = {}
  local okl, lfs = pcall(require, "lfs")
  if okl then
    local a = lfs.symlinkattributes("/proc/self/exe")
    local t = a and a.target
    if type(t) == "string" and not t:match("/lua[%d%.]*$") then dirs[#dirs + 1] = util.dirname(t) end
  end
  local a = rawget(_G, "arg")
  local p = type(a) == "table" and a[0]
  if type(p) == "string" and p:find("/", 1, true) and not p:match("%.lua$") then
    dirs[#dirs + 1] = util.dirname(p)
  end
  return dirs
end

--- Where the ECharts script is looked for, in order: `opts.echarts`
-- (`--echarts FILE`), `$APSEARCH_ECHARTS`, `<root>/report/echarts.min.js`
-- (`cmake --install` puts it there), `<directory of the apsearch binary>/
-- report/echarts.min.js` (the build tree: CMake fetches it at configure
-- time, see CMakeLists.txt).
-- @tparam[opt] table opts `{echarts = path}`
-- @treturn table array of candidate paths
function M.echarts_candidates(opts)
  local list = {}
  if opts and opts.echarts then list[#list + 1] = opts.echarts end
  local env = os.getenv("APSEARCH_ECHARTS")
  if env and env ~= "" then list[#list + 1] = env end
  list[#list + 1] = util.join_path(util.root(), M.echarts_relpath)
  for _, d in ipairs(exe_dirs()) do list[#list + 1] = util.join_path(d, M.echarts_relpath) end
  return list
end

--- Fewest bytes a file must hold to be taken for the ECharts script (its
-- minified build is about a megabyte; a few bytes is some other file).
M.ECHARTS_MIN_BYTES = 1000

--- Finds and reads the ECharts script.
-- @tparam[opt] table opts as for `echarts_candidates`; `echarts = "none"`
--   turns the charts off (a tables-only report)
-- @treturn string|nil the script text
-- @treturn string the path it was read from, or a message listing where
--   it was looked for
function M.find_echarts(opts)
  if opts and opts.echarts == "none" then return nil, "--echarts none" end
  local tried = M.echarts_candidates(opts)
  for i, p in ipairs(tried) do
    local s, err = util.read_file(p)
    -- the library's build names itself (`echarts`) early and often
    if s and #s > M.ECHARTS_MIN_BYTES and s:find("echarts", 1, true) then return s, p end
    if i == 1 and opts and opts.echarts then
      -- said as it is: unreadable, or read and too short to be ECharts
      local why = s and string.format("%d bytes read, not the ECharts script (echarts.min.js: about 1 MB "
        .. "that names echarts)", #s)
        or ("cannot read the ECharts script: " .. tostring(err))
      error(string.format("--echarts: echarts: %s (got %s)", why, util.describe(p)), 0)
    end
  end
  return nil, "looked for " .. table.concat(tried, ", ")
end

local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

--- Escapes text for HTML.
-- @param s any value (tostring'ed)
-- @treturn string
function M.escape(s)
  return (tostring(s):gsub("[&<>\"']", ESC))
end
local esc = M.escape

local STRATEGY_FIELDS = common.STRATEGY_FIELDS

local value_text = common.value_text

--- Every strategy field as `name=value` (arrays joined with `:`), for
-- tooltips; the search space's placeholders spelt as what they mean
-- (format.common.field_value), a top-k record's split and recompute as
-- the stages ran them (format.common.resolved_layout).
-- @tparam table s strategy (candidate or top-k record)
-- @tparam[opt] number gbs global batch size, sequences (spells a derived
--   micro-batch count)
-- @treturn string
function M.strategy_text(s, gbs)
  local lay = (s.memory_cost and s.memory_cost.per_stage) and common.resolved_layout(s) or {}
  local parts = {}
  for _, f in ipairs(STRATEGY_FIELDS) do
    local v = common.output_value(s, f, gbs, lay)
    if v ~= nil then parts[#parts + 1] = f .. "=" .. value_text(v) end
  end
  return table.concat(parts, " ")
end

-- the global batch size of a result (spells derived micro-batch counts)
local function batch_of(result)
  local tr = type(result.inputs) == "table" and result.inputs.training
  return type(tr) == "table" and tr.global_batch_size or nil
end

--- Layers of each model chunk of a pipeline rank (format.common.chunk_layers).
M.chunk_layers = common.chunk_layers

--- A rank's chunks as text (format.common.chunks_text).
M.chunks_text = common.chunks_text

local function short_text(s)
  return require("apsearch.search").describe_strategy(s)
end

-- chart 7's points: the search's sample of the feasible candidates
-- (result.scatter: a feasible candidate when (k - 1) % stride == 0, k its
-- sample key -- a hash of its index, search.sample_key -- and stride the
-- least power of two that keeps at most max_points), thinned by the same
-- rule when max_points is smaller (to about max_points: the hash keeps
-- about 1 in stride), with the Pareto front and the top-k always drawn;
-- by enumeration index
local function scatter_data(result, max_points)
  local sc = result.scatter
  local out = { points = util.array(), dims = util.array(), total = 0, shown = 0 }
  if not sc then return out end
  out.total = sc.total
  local stride = sc.stride or 1
  while math.ceil(sc.total / stride) > max_points do stride = 2 * stride end
  out.stride = stride
  local by = {}
  for i = 1, #sc.index do
    if (sc.ord[i] - 1) % stride == 0 then
      by[sc.index[i]] = { sc.mem_peak[i], sc.step_time[i], sc.strategy[i] }
    end
  end
  for _, p in ipairs(result.pareto_front or {}) do
    if not by[p.index] and p.strategy then by[p.index] = { p.mem_peak, p.step_time, p.strategy } end
  end
  for _, t in ipairs(sc.top or {}) do
    if not by[t.index] and t.strategy then by[t.index] = { t.mem_peak, t.step_time, t.strategy } end
  end
  local chosen = {}
  for idx in pairs(by) do chosen[#chosen + 1] = idx end
  table.sort(chosen)
  -- the fields that vary among the shown points; the others are fixed
  local first, varies = nil, {}
  for _, idx in ipairs(chosen) do
    local s = by[idx][3]
    if not first then first = s
    else
      for _, f in ipairs(STRATEGY_FIELDS) do
        if value_text(s[f]) ~= value_text(first[f]) then varies[f] = true end
      end
    end
  end
  local fixed = {}
  for _, f in ipairs(STRATEGY_FIELDS) do
    if varies[f] then out.dims[#out.dims + 1] = f
    elseif first and first[f] ~= nil then fixed[#fixed + 1] = f .. "=" .. value_text(first[f]) end
  end
  out.fixed_text = table.concat(fixed, " ")
  for n, idx in ipairs(chosen) do
    local e = by[idx]
    local s = e[3]
    local p = { e[1] / 2 ^ 30, e[2], idx }
    for _, f in ipairs(out.dims) do
      local v = s[f]
      if type(v) == "table" then v = value_text(v) end
      p[#p + 1] = v
    end
    out.points[n] = p
  end
  out.shown = #chosen
  return out
end

--- The memory limit the estimate applied [bytes]: `memory_limit_bytes`
-- when set, else the device's memory less the margin (as the core does).
-- @tparam table result
-- @treturn number|nil
function M.memory_limit(result)
  local top = result.top_k_strategies and result.top_k_strategies[1]
  if top and top.memory_cost and top.memory_cost.limit then return top.memory_cost.limit end
  local inp = result.inputs or {}
  local tr, cl = inp.training or {}, inp.cluster or {}
  if type(tr.memory_limit_bytes) == "number" and tr.memory_limit_bytes > 0 then return tr.memory_limit_bytes end
  local cap = type(cl.device) == "table" and cl.device.memory_bytes
  if type(cap) == "number" then return cap - (tonumber(tr.memory_margin_bytes) or 0) end
  return nil
end

--- What to relax, per filter reason code (the early ones: a cheap rule);
-- every code the core returns (core.reason_codes but NONE) and the search's
-- LAUNCH_DIFFERS has one.
M.RELAX = {
  MEMORY_LIMIT = "memory: let the space shard or recompute more (wider tp_degree, pp_degree, cp_degree or fsdp_degree, zero_stage, layer_recompute = full, a smaller micro_batch_size), or raise the limit (--set cluster.memory_limit_gib=N, up to the device's memory)",
  BATCH_DIVISIBILITY = "batch: global_batch_size must be divisible by the data-parallel ranks x micro_batch_size (and training.local_batch_size, when set, be a multiple of micro_batch_size dividing a data-parallel rank's sequences; without pipeline parallelism equal to micro_batch_size); change training.global_batch_size or local_batch_size, or widen micro_batch_size / the data-parallel degrees",
  DEVICE_COUNT = "device count: the degrees must multiply to the devices; widen the degree ranges (data_parallel = \"auto\") or allow idle devices (--set constraints.allow_idle_devices=true)",
  IDLE_DEVICES = "idle devices: the degrees leave devices unused; let the data-parallel degree fill them (search_space.data_parallel = \"auto\"; a dimension the space leaves out is 1), widen the degree ranges, or allow idle devices (--set constraints.allow_idle_devices=true)",
  PP_DIVISIBILITY = "pipeline split: num_layers does not divide by pp_degree x vpp_degree; allow pipeline_split = embedding_loss or fill_last, layer_offset = balanced or a stage_partition, or other pp_degree values",
  PP_PARTITION = "pipeline split: the stage partition is not valid for these degrees; widen pp_degree / vpp_degree or change stage_partition / layer_offset",
  VPP_INVALID = "interleaving: vpp_degree > 1 needs pp_degree > 1 and micro_batch_num divisible by pp_degree (Megatron-LM; or, listed as microbatch_group_size, groups of G in [pp_degree, micro_batch_num] that leave 0 or at least pp_degree micro-batches); allow vpp_degree = 1 or other pp_degree and micro_batch_num values",
  TP_DIVISIBILITY = "tensor parallel: tp_degree must divide the attention heads, query groups and FFN width; allow smaller tp_degree values",
  EP_DIVISIBILITY = "expert parallel: ep_degree must divide num_experts, etp_degree x ep_degree the ranks of a pipeline stage (tp x cp x dp) and etp_degree the expert FFN width (the filter reasons say which); allow ep_degree / etp_degree values that divide them, or other tp, cp and data-parallel degrees",
  CP_DIVISIBILITY = "context parallel: seq_length must divide by 2 x cp_degree (x tp_degree with sequence parallelism), and with cp_comm_type = a2a the heads and query groups per TP rank by cp_degree (the filter reasons say which); allow smaller cp_degree values or another cp_comm_type",
  HSDP_INVALID = "HSDP: the replicate x shard layout is not valid; allow fsdp_degree = 1 or other data-parallel splits",
  ZERO_STAGE_INVALID = "ZeRO: this zero_stage does not apply to the strategy; allow other zero_stage values",
  FRAMEWORK_UNSUPPORTED = "framework: training.framework cannot run these strategies; allow other degrees or choose another framework",
  NOT_MODELLED = "not modelled: the framework runs these strategies but apsearch does not price them yet (the example says what); allow other degrees or recompute modes",
  INVALID_DEGREE = "degrees: a degree is out of range; check the search_space",
  LAUNCH_DIFFERS = "launch: --launchable keeps only the strategies its framework's launch file builds as estimated; run without --launchable (their launch files are marked differs) or with another framework",
}

--- Bytes a parameter's model states take under mixed-precision Adam when
-- fully sharded: bf16 weights 2 + bf16 gradients 2 + fp32 master weights,
-- momentum and variance 12 = 16 (Rajbhandari et al., "ZeRO: Memory
-- Optimizations Toward Training Trillion Parameter Models", SC 2020,
-- section 3.1: 16 Psi); TorchTitan's fp32 weights 4 + fp32 gradients 4 +
-- Adam 8 are 16 too.
M.MODEL_STATE_BYTES_PER_PARAM = 16

--- The same per framework where it differs: Megatron-LM keeps its main
-- gradients in fp32 (`--bf16` accumulates in fp32 unless
-- --grad-reduce-in-bf16): bf16 parameters 2 + fp32 gradients 4 + fp32
-- master, momentum and variance 12 = 18 (NVIDIA/Megatron-LM d98e8a64
-- docs/user-guide/features/dist_optimizer.md: "bf16 parameters, fp32
-- gradients | 18 | 6 + 12/d").
M.MODEL_STATE_BYTES_BY_FRAMEWORK = { megatron = 18 }

--- The fewest devices that could hold the model: its model states (every
-- parameter, the trained MTP depths' included (common.mtp_trained_params),
-- x M.MODEL_STATE_BYTES_PER_PARAM, or the framework's
-- M.MODEL_STATE_BYTES_BY_FRAMEWORK) sharded over all of them
-- within the memory limit, before any activation, rounded up to whole
-- hosts.  A lower bound: activations, buffers and the framework's
-- sharding rules ask for more.
-- @tparam table result a search result (`inputs.model`, `inputs.cluster`)
-- @tparam number limit memory limit per device, bytes
-- @treturn table|nil `{devices, params, bytes, limit_bytes, per_node}`
function M.min_devices(result, limit)
  local inp = result.inputs or {}
  if type(inp.model) ~= "table" or not limit or limit <= 0 then return nil end
  local ok, counts = pcall(require("apsearch.core").model_params, inp.model)
  if not ok then return nil end
  local tr = inp.training or {}
  -- (bf16 main gradients, --grad-reduce-in-bf16: the 16 of the others)
  local per_param = tr.grad_reduce_in_fp32 ~= false and M.MODEL_STATE_BYTES_BY_FRAMEWORK[tr.framework or "megatron"]
    or M.MODEL_STATE_BYTES_PER_PARAM
  -- with the multi-token-prediction depths the training trains
  local params = counts.total + (common.mtp_trained_params(tr, inp.model) or 0)
  local bytes = params * per_param
  local per = math.max(1, (inp.cluster or {}).devices_per_node or 1)
  local hosts = math.ceil(bytes / limit / per)
  -- a limit of a few bytes needs more devices than a count can say (past
  -- 2^53, or inf): no bound to print
  local devices = hosts * per < 2 ^ 53 and math.tointeger(hosts * per) or nil
  if not devices then return nil end
  return { devices = devices, params = params, bytes = bytes, limit_bytes = limit, per_node = per,
           bytes_per_param = per_param, framework = tr.framework or "megatron" }
end

--- The line that says how many devices the model needs at least, with
-- the framework whose model states it counts (another framework's
-- bytes a parameter can need fewer: a new user read Megatron's bound as
-- the model's, beside a TorchTitan layout that fit on fewer).
-- @tparam table md M.min_devices
-- @treturn string
function M.min_devices_text(md)
  return string.format("With training.framework = %s the model needs at least %s devices: %s parameters x %d " ..
    "bytes of model states (weights, gradients, Adam) = %.0f GiB, fully sharded within %.2f GiB a device, " ..
    "before activations (whole hosts of %d; a lower bound: a layout that shards them less needs more).",
    md.framework or "megatron", common.commas(md.devices), common.commas(md.params),
    md.bytes_per_param or M.MODEL_STATE_BYTES_PER_PARAM, md.bytes / 2 ^ 30, md.limit_bytes / 2 ^ 30, md.per_node)
end

-- the suggestion for the closest strategy's memory overflow: a limit to
-- --set when the need is within the device, else what could help (only
-- more devices when `ndev`, the devices of a cluster too small for the
-- model states, is given, or when `built`: the built policy's default
-- space was searched; `built` "smaller": a power-of-two part of the devices
-- fits, a number: nothing fits up to that many devices, result.fit_probe;
-- `other`: the framework that fits on these devices, fit_probe.framework;
-- `setting`: the --set key=value with which they fit, fit_probe.setting)
-- what a built policy's "nothing fits" says it searched
local DEFAULT_SPACE_SEARCHED = "the default search space was searched (a --set of search_space.* widens it)"

local function memory_suggestion(need, limit, cap, ndev, built, other, setting)
  if cap and need <= cap then
    -- a limit the policy takes: the need rounded up to a hundredth of a
    -- GiB, never past the capacity (policy refuses a limit above it)
    local gib = math.min(math.ceil(need / 2 ^ 30 * 100) / 100, math.floor(cap / 2 ^ 30 * 100) / 100)
    return string.format(
      "The closest strategy needs %.2f GiB, %s over the %.2f GiB limit and within the device's %.2f GiB: " ..
      "--set cluster.memory_limit_gib=%s would admit it (less headroom for the allocator).",
      need / 2 ^ 30, common.over_text(need - limit):sub(2), limit / 2 ^ 30, cap / 2 ^ 30,
      ("%.2f"):format(gib):gsub("%.?0+$", ""))
  end
  local help = ndev and string.format("no strategy on %s devices can hold the model states; use more devices",
    common.commas(ndev))
    or built == "smaller" and DEFAULT_SPACE_SEARCHED .. "; the degrees that would fit do not divide " ..
      "these devices, a part of them does (below)"
    or type(built) == "number" and string.format("%s and nothing fits on the doubled host counts up to %s devices " ..
      "either (counts between them were not tried); the filter reasons below say what the model and the framework " ..
      "rule out", DEFAULT_SPACE_SEARCHED, common.commas(built))
    or built and DEFAULT_SPACE_SEARCHED .. "; use more devices"
    or "shard or recompute more (wider tp_degree, pp_degree, cp_degree or fsdp_degree, " ..
    "zero_stage, layer_recompute = full, a smaller micro_batch_size), or use more devices"
  if other then
    help = help .. string.format("; training.framework = %s fits on these devices (below)", other)
  end
  if setting then help = help .. string.format("; --set %s fits on these devices (below)", setting) end
  return string.format("The closest strategy needs %.2f GiB, %s over the %.2f GiB limit%s: " ..
    "raising the limit cannot help; %s.", need / 2 ^ 30, common.over_text(need - limit):sub(2), limit / 2 ^ 30,
    cap and string.format(" and beyond the device's %.2f GiB", cap / 2 ^ 30) or "", help)
end

-- under run --launchable: the first way the launch file of the closest
-- strategy (closest_infeasible entry `index`) differs from its estimate,
-- or nil (no --launchable, none, or it cannot be told): raising the
-- memory limit would only have it refused as LAUNCH_DIFFERS; a long one
-- shortened, and the whole one second
local function launch_difference(result, index)
  local inp = result.inputs or {}
  if not inp.launchable then return nil end
  local strategy
  for _, c in ipairs(result.closest_infeasible or {}) do
    if c.index == index then strategy = c.strategy break end
  end
  if not strategy then return nil end
  local launch = require "apsearch.launch"
  local ok, d = pcall(function()
    local ctx = require("apsearch.core").context(inp.model, inp.cluster, inp.training)
    return launch.estimate_differences(launch.engine(inp.launchable), ctx:inputs(), ctx:estimate(strategy),
      inp.torchtitan_version)
  end)
  local first = ok and type(d) == "table" and d[1] or nil
  -- a long one to its first parenthesis (the filter reasons quote it whole)
  return first and #first > 100 and first:match("^(.-)%s*%(") or first, first
end

--- Filter reasons that only prune the framework's own full space (the
-- framework's and the model's rules on degrees, splits and layouts): a
-- policy built from --model / --cluster and searched as built already
-- allows every value their RELAX text asks for, so it is not offered.
M.SPACE_RULES = { VPP_INVALID = true, PP_PARTITION = true, PP_DIVISIBILITY = true, DEVICE_COUNT = true,
  CP_DIVISIBILITY = true, TP_DIVISIBILITY = true, EP_DIVISIBILITY = true, HSDP_INVALID = true, ZERO_STAGE_INVALID = true,
  INVALID_DEGREE = true, FRAMEWORK_UNSUPPORTED = true, NOT_MODELLED = true }

--- The early-filter reasons a --set of a training, model or cluster field
-- can cause (a setting the framework refuses with a layout: Megatron-LM's
-- --cpu-offloading needs pipeline parallelism off): offered even when
-- the built space was searched whole, unlike the other M.SPACE_RULES.
M.SETTING_RULES = { FRAMEWORK_UNSUPPORTED = true, NOT_MODELLED = true }

-- true when the run gave --set of fields outside the search space
-- (training, model, cluster; top-k aside)
local function settings_set(result)
  for _, o in ipairs((result.inputs or {}).overrides or {}) do
    local key = tostring(o.key)
    if o.kind == "set" and key ~= "top_k" and not key:match("^search_space%.") then return true end
  end
  return false
end

-- true for a policy built from --model / --cluster (its `defaults` header)
-- searched over its whole space: no --fix and no --set of a search_space
-- field (a --set of training, model or cluster fields leaves the space the
-- framework's full one)
local function as_built(result)
  local inp = result.inputs or {}
  if inp.defaults == nil then return false end
  for _, o in ipairs(inp.overrides or {}) do
    if o.kind == "fix" or tostring(o.key):match("^search_space%.") then return false end
  end
  return true
end

--- What to relax for each filter reason of out.reasons, appended to
-- out.suggestions (M.RELAX, or the policy rule that refused; LAUNCH_DIFFERS
-- first, led by the `--set` its example's launch file names, when it
-- names one); MEMORY_LIMIT's is left out when `memory_said`
-- (memory_suggestion said it), and M.SPACE_RULES' when the policy was
-- searched as built, but for M.SETTING_RULES' when `settings` (the run set
-- training, model or cluster fields, which those reasons may come from).
-- @tparam table out `{suggestions = {string}, reasons = {{code, count,
--   phase, rule, message}}}`
-- @tparam boolean memory_said
-- @tparam boolean built
-- @tparam boolean launch_only only LAUNCH_DIFFERS is suggested
-- @tparam boolean settings
function M.relax_suggestions(out, memory_said, built, launch_only, settings)
  local seen = { MEMORY_LIMIT = memory_said }
  for _, r in ipairs(out.reasons) do
    local whole = built and M.SPACE_RULES[r.code] and not (settings and M.SETTING_RULES[r.code])
    if not seen[r.code] and not whole
        and not (launch_only and r.code ~= "LAUNCH_DIFFERS") then
      seen[r.code] = true
      local text = M.RELAX[r.code] or (r.rule and string.format(
        "policy rule %s: relax or remove it (constraints.rules)", tostring(r.rule))) or nil
      if text then
        -- run --launchable first: the restriction the user added, which
        -- the other suggestions do not lift (more memory admits a strategy
        -- whose launch file may still differ)
        local at = r.code == "LAUNCH_DIFFERS" and 1 or #out.suggestions + 1
        -- what the launch file could not express, or the framework rule
        -- that refused (its message names the setting that lifts it),
        -- from the example
        local why = (r.code == "LAUNCH_DIFFERS" or r.code == "FRAMEWORK_UNSUPPORTED") and r.message
          and (": e.g. " .. r.message) or ""
        -- a launch file that names the setting which estimates the job it
        -- builds (TorchTitan's missing aux loss, MTP): that first
        local set = r.code == "LAUNCH_DIFFERS" and r.message and r.message:match("%-%-set [%w_%.]+=[^%s,;]+")
        if set then
          text = ("launch: %s estimates the job the example's launch file builds; otherwise, %s"):format(set,
            text:gsub("^launch: ", ""))
        end
        table.insert(out.suggestions, at, string.format("%s (%s candidates, %s)%s", text,
          common.commas(r.count), r.phase == "early" and "before the estimate" or "after the estimate", why))
      end
    end
  end
end

-- When no candidate reached the estimate, every one was refused by the
-- checks before it (a degree that cannot divide the model, a space a
-- --fix narrowed to such values): the first thing to relax is that, not
-- memory or the cluster size.  Returns the sentence, or nil when some
-- candidate was estimated.
local function early_only_text(result, reasons)
  local acs = result.all_candidate_summary or {}
  if (acs.estimated or 0) > 0 or (acs.filtered_early or 0) == 0 or #reasons == 0 then return nil end
  local parts = {}
  for i, r in ipairs(reasons) do
    if i > 2 then break end
    parts[#parts + 1] = string.format("%s %s%s", r.code, common.commas(r.count),
      r.message and (": " .. r.message) or "")
  end
  local fixes = {}
  for _, o in ipairs(((result.inputs or {}).overrides) or {}) do
    if o.kind == "fix" then fixes[#fixes + 1] = string.format("--fix %s=%s", o.key, tostring(o.value)) end
  end
  local fixed = #fixes > 0 and string.format("; the space was narrowed by %s: drop it or fix a value the "
    .. "checks accept", table.concat(fixes, ", ")) or "; widen the search space where it excludes every valid value"
  return string.format("No candidate reached the estimate: all %s were refused by the checks before it (%s)%s.",
    common.commas(acs.filtered_early), table.concat(parts, "; "), fixed)
end

--- Why a search found no feasible strategy: the binding reasons (every
-- filter reason with its count, the ones after the estimate first: they
-- stopped the candidates that came closest), the closest strategies (the
-- estimated candidates with the least peak memory, i.e. the smallest
-- overflow of the memory limit) and what to relax.
-- @tparam table result a result with no feasible strategy
-- @tparam[opt] integer n closest strategies to list (default 5)
-- @treturn table `{reasons = {{code, count, phase, rule, message}},
--   closest = {{index, step_time, mem_peak, over_bytes, reason, strategy_text}},
--   limit_bytes, capacity_bytes, min_devices (M.min_devices), suggestions = {text}}`
function M.diagnose(result, n)
  n = n or 5
  local out = { reasons = util.array(), closest = util.array(), suggestions = util.array() }
  for code, e in pairs(result.infeasible_summary or {}) do
    out.reasons[#out.reasons + 1] = { code = code, count = e.count, phase = e.phase,
      rule = e.rule, message = e.message }
  end
  table.sort(out.reasons, function(a, b)
    if (a.phase == "early") ~= (b.phase == "early") then return b.phase == "early" end
    if a.count ~= b.count then return a.count > b.count end
    return a.code < b.code
  end)
  local limit = M.memory_limit(result)
  out.limit_bytes = limit
  local cl = (result.inputs or {}).cluster or {}
  out.capacity_bytes = type(cl.device) == "table" and cl.device.memory_bytes or nil
  -- the search keeps the estimated candidates closest to fitting
  -- (apsearch.search closest_infeasible); written differently, several run
  -- the same way (same description, memory and time): listed once
  local seen_run = {}
  for _, c in ipairs(result.closest_infeasible or {}) do
    if #out.closest >= n then break end
    local s = c.strategy
    local key = (s and short_text(s) or c.index) .. string.format(" %.17g %.17g", c.mem_peak, c.step_time)
    if not seen_run[key] then
      seen_run[key] = true
      -- how far from fitting: what the limit bounds (max reserved under a
      -- limit given), not always the device peak
      local need = c.mem_limited or c.mem_peak
      out.closest[#out.closest + 1] = { index = c.index, step_time = c.step_time, mem_peak = c.mem_peak,
        mem_limited = need, over_bytes = limit and (need - limit) or nil, reason = c.reason,
        strategy_text = s and M.strategy_text(s, batch_of(result)) or "", short_text = s and short_text(s) or "" }
    end
  end
  out.min_devices = M.min_devices(result, limit)
  local ndev = ((result.inputs or {}).cluster or {}).num_devices
  local too_few = out.min_devices and ndev and out.min_devices.devices > ndev
  -- fewer devices than the model states need even with the whole device's
  -- memory: only more devices help, so no other knob is offered (none can
  -- make it fit)
  local at_capacity = out.capacity_bytes and M.min_devices(result, out.capacity_bytes)
  local hopeless = too_few and (at_capacity == nil or at_capacity.devices > ndev)
  local c1 = out.closest[1]
  local memory_said = c1 and c1.reason == "MEMORY_LIMIT" and limit and true or false
  local launch_only = false -- (set below: every launch file differs the same way)
  local built = as_built(result)
  if memory_said then
    local fp = result.fit_probe or {}
    local smaller = built and (fp.smaller and "smaller" or fp.tried)
    -- a limit that would admit it (within the device), which --launchable
    -- would still refuse
    local differs, whole = nil, nil
    if out.capacity_bytes and c1.mem_limited <= out.capacity_bytes then
      differs, whole = launch_difference(result, c1.index)
    end
    -- the closest strategy's launch file differs as the example of those
    -- that fit does: the model's, not the strategy's (Gemma's GeGLU-tanh
    -- on Megatron): no degree, split or limit admits one
    local ld = (result.infeasible_summary or {}).LAUNCH_DIFFERS
    launch_only = whole ~= nil and ld ~= nil and ld.message == result.inputs.launchable .. ": " .. whole
    out.suggestions[#out.suggestions + 1] = differs and string.format("The closest strategy needs %.2f GiB, " ..
      "%s over the %.2f GiB limit, but raising the limit would not admit it: --launchable %s refuses it too " ..
      "(%s).", c1.mem_limited / 2 ^ 30, common.over_text(c1.mem_limited - limit):sub(2), limit / 2 ^ 30,
      result.inputs.launchable, differs)
      or memory_suggestion(c1.mem_limited, limit, out.capacity_bytes, hopeless and ndev, smaller or built,
        built and fp.framework and fp.framework.framework, built and fp.setting and fp.setting.set)
    -- NeMo AutoModel defers the FSDP gradient sync by default (profile.c):
    -- with more than one micro-batch every parameter's fp32 gradient stays
    -- unsharded until the last one, which only micro_batch_num 1 avoids;
    -- said where the closest strategy shards its gradients (FSDP or a ZeRO
    -- stage), unless the fit probe's setting_fit already said the setting
    -- fits (memory_suggestion)
    local tr = (result.inputs or {}).training or {}
    local c1s
    for _, c in ipairs(result.closest_infeasible or {}) do
      if c.index == c1.index then c1s = c.strategy break end
    end
    local sharded = c1s and ((c1s.fsdp_degree or 1) > 1 or (c1s.zero_stage or 0) > 0)
    if tr.framework == "automodel" and tr.defer_fsdp_grad_sync == nil and sharded and not fp.setting then
      out.suggestions[#out.suggestions + 1] = "NeMo AutoModel defers the FSDP gradient sync (its default): with " ..
        "more than one micro-batch a step holds every parameter's fp32 gradient unsharded; " ..
        "--set training.defer_fsdp_grad_sync=false shards them after each micro-batch (more reduce-scatters)."
    end
  end
  -- fewer devices than the model states need: before any other knob
  if too_few then
    table.insert(out.suggestions, hopeless and 1 or math.min(#out.suggestions + 1, 2),
      M.min_devices_text(out.min_devices))
  end
  if not hopeless then M.relax_suggestions(out, memory_said, built, launch_only, settings_set(result)) end
  -- (unless a suggestion above already names the check that refused them)
  local early = early_only_text(result, out.reasons)
  for _, t in ipairs(out.suggestions) do
    if t:find("before the estimate", 1, true) then early = nil end
  end
  if early then table.insert(out.suggestions, 1, early) end
  return out
end

--- A schedule's name as the report shows it.
-- @tparam string name pp_schedule value
-- @tparam number v vpp_degree
-- @treturn string
function M.schedule_name(name, v)
  if name == "1f1b" and (v or 1) > 1 then return "interleaved 1F1B" end
  return M.schedule_names[name] or tostring(name)
end

local function round(x)
  return tonumber(string.format("%." .. M.timeline_digits .. "g", x))
end

--- Chart 9's data from a timeline (ctx:timeline, search.run's
-- `stage_summary[r].timeline`): the summary, the bubble as a fraction of
-- the pipeline time, each rank's idle fraction, and its ops as compact
-- arrays `{kind, mb, stage, chunk, start, end, overlap (0/1)}` (times
-- rounded to M.timeline_digits significant digits).
-- @tparam table tl the timeline
-- @tparam number rank the top-k rank it belongs to
-- @tparam[opt] number passes the pipeline schedules of the rank's step
--   (performance_cost.gradient_accumulation_steps; 1 when nil): the
--   timeline is one of them
-- @treturn table
function M.timeline_data(tl, rank, passes)
  local step = tl.step or 0
  local out = {
    rank = rank, passes = passes or 1, schedule = M.schedule_name(tl.pp_schedule, tl.vpp_degree),
    pp_degree = tl.pp_degree, vpp_degree = tl.vpp_degree, micro_batch_num = tl.micro_batch_num,
    step = step, busy_max = tl.busy_max, bubble = tl.bubble, slowest_rank = tl.slowest_rank,
    bubble_fraction = step > 0 and tl.bubble / step or 0,
    ops = tl.ops, ops_kept = tl.ops_kept, windows = tl.windows,
    colors = M.op_colors, names = M.op_names,
  }
  local ranks = util.array()
  for i, r in ipairs(tl.ranks or {}) do
    local ev = util.array()
    for q, e in ipairs(r.events or {}) do
      ev[q] = { e.kind, e.mb, e.stage, e.chunk, round(e.start), round(e["end"]), e.overlap and 1 or 0 }
    end
    ranks[i] = { rank = r.rank, busy = r.busy, ops = r.ops,
      idle_fraction = step > 0 and (step - r.busy) / step or 0, events = ev }
  end
  out.ranks = ranks
  return out
end

local function timeline_summary(tl)
  local s = string.format("%s over %d pipeline ranks%s, %d micro-batches: pipeline %.4g s, bubble %.4g s = %.1f %% of it " ..
    "(the idle time of the busiest stage, %d)", tl.schedule, tl.pp_degree,
    tl.vpp_degree > 1 and string.format(" x %d model chunks", tl.vpp_degree) or "", tl.micro_batch_num,
    tl.step, tl.bubble, 100 * tl.bubble_fraction, tl.slowest_rank)
  if (tl.passes or 1) > 1 then
    s = s .. string.format("; one of %d pipeline schedules a step runs (training.local_batch_size), each as long",
      tl.passes)
  end
  if tl.ops_kept < tl.ops then
    s = s .. string.format("; the chart shows the start of the %s (to %.4g s) and its end (from %.4g s), %s of %s ops, " ..
      "the middle left out", (tl.passes or 1) > 1 and "schedule" or "step", tl.windows[1][2], tl.windows[2][1],
      common.commas(tl.ops_kept), common.commas(tl.ops))
  end
  return s .. "."
end

--- The data the charts are drawn from (the JSON block of the report).
-- @tparam table result search result
-- @tparam[opt] table opts `max_points`
-- @treturn table
function M.chart_data(result, opts)
  opts = opts or {}
  local s = result.all_candidate_summary or {}
  local d = {
    categories = { memory = common.memory_categories, time = common.time_categories },
    colors = M.category_colors,
    objective = result.inputs and result.inputs.objective,
    counts = {
      space_size = s.space_size or 0, generated = s.generated or 0,
      feasible = s.feasible or 0, infeasible = s.infeasible or 0,
      filtered_early = s.filtered_early or 0,
    },
  }
  local topk = util.array()
  local stage_rank
  for i, t in ipairs(result.top_k_strategies or {}) do
    local mc, pc = t.memory_cost or {}, t.performance_cost or {}
    local mem, time = {}, {}
    for _, c in ipairs(common.memory_categories) do mem[c] = common.mem_value(mc.breakdown, c) end
    for _, c in ipairs(common.time_categories) do time[c] = common.time_value(pc.breakdown, c) end
    local stages = util.array()
    local ss = result.stage_summary and result.stage_summary[i]
    local counts = {}
    for j, st in ipairs(ss and ss.stages or {}) do counts[j] = st.num_layers or 0 end
    local chunks = M.chunk_layers(t, counts)
    for j, st in ipairs(ss and ss.stages or {}) do
      local smem = {}
      for _, c in ipairs(common.memory_categories) do smem[c] = common.mem_value(st.memory_breakdown, c) end
      local ch = util.array()
      for k, c in ipairs(chunks[j] or {}) do ch[k] = { virtual_stage = c[1], first = c[2], last = c[3] } end
      stages[j] = {
        stage = st.stage, num_layers = st.num_layers, recompute_layers = st.recompute_layers,
        -- the multi-token-prediction layers the stage runs after its
        -- decoder layers ("+1 MTP", as `apsearch estimate` prints them)
        layers = M.chunks_text(chunks[j] or {}) ..
          ((st.mtp_layers or 0) > 0 and (" +" .. st.mtp_layers .. " MTP") or ""),
        mtp_layers = st.mtp_layers, chunks = ch,
        mem = smem, total = st.memory_breakdown and st.memory_breakdown.total,
        time_fwd = st.time_fwd, time_bwd = st.time_bwd,
      }
    end
    if not stage_rank and (t.pp_degree or 1) > 1 then stage_rank = t.rank end
    d.memory_limit_bytes = d.memory_limit_bytes or mc.limit
    d.memory_limit_kind = d.memory_limit_kind or mc.limit_kind
    topk[i] = {
      rank = t.rank, index = t.index, step_time = pc.step_time, mem_peak = mc.total,
      -- the quantity the limit bounds (max reserved, allocated or device)
      mem_limited = mc.limit_kind and mc[mc.limit_kind] or nil,
      worst_stage = mc.worst_stage, mfu = pc.mfu, tokens_per_s_per_gpu = pc.tokens_per_s_per_gpu,
      pp_degree = t.pp_degree, vpp_degree = t.vpp_degree,
      mem = mem, time = time, stages = stages,
      strategy_text = M.strategy_text(t, batch_of(result)), short_text = short_text(t),
    }
  end
  d.topk = topk
  d.stage_rank = stage_rank or (topk[1] and topk[1].rank)
  local ss = d.stage_rank and result.stage_summary and result.stage_summary[d.stage_rank]
  local passes
  for _, t in ipairs(result.top_k_strategies or {}) do
    if t.rank == d.stage_rank then passes = (t.performance_cost or {}).gradient_accumulation_steps end
  end
  d.timeline = ss and ss.timeline and M.timeline_data(ss.timeline, d.stage_rank, passes) or nil

  local reasons = util.array()
  for code, e in pairs(result.infeasible_summary or {}) do
    reasons[#reasons + 1] = { code = code, count = e.count, phase = e.phase, rule = e.rule,
      message = e.message, example_text = e.example and M.strategy_text(e.example, batch_of(result)) or "" }
  end
  table.sort(reasons, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    return a.code < b.code
  end)
  d.reasons = reasons

  -- a degree with one feasible value (not searched, or one value fits)
  -- has no trend to show: no panel for it, unless every degree is so
  local function trend_of(t)
    local pts = util.array()
    for j, p in ipairs(t.points or {}) do
      pts[j] = { value = p.value, step_time = p.step_time, mem_peak = p.mem_peak,
        strategy_text = p.strategy and M.strategy_text(p.strategy, batch_of(result)) or "" }
    end
    return { dimension = t.dimension, label = t.label, points = pts }
  end
  local trends = util.array()
  for _, t in ipairs(result.trends or {}) do
    if #(t.points or {}) > 1 then trends[#trends + 1] = trend_of(t) end
  end
  if #trends == 0 and result.trends and result.trends[1] then trends[1] = trend_of(result.trends[1]) end
  d.trends = trends

  local front = util.array()
  for i, p in ipairs(result.pareto_front or {}) do
    front[i] = { index = p.index, step_time = p.step_time, mem_peak = p.mem_peak, rank = p.rank,
      strategy_text = p.strategy and M.strategy_text(p.strategy, batch_of(result)) or "" }
  end
  d.front = front
  d.scatter = scatter_data(result, opts.max_points or M.max_points)
  d.sensitivity = result.bandwidth_sensitivity
  return d
end

local function fmt_num(x, f) return x and string.format(f, x) or "-" end

--- Height in pixels of chart 9 for p pipeline ranks: a row of
-- M.gantt_row_px per rank plus M.gantt_frame_px for the title, legend and
-- axis.
M.gantt_row_px = 26
M.gantt_frame_px = 150
function M.gantt_height(p)
  return M.gantt_frame_px + M.gantt_row_px * math.max(1, p or 1)
end

local function fact(label, value)
  return string.format("<div><b>%s</b>%s</div>", esc(label), esc(value))
end

local function table_html(headers, rows, right, row_class, attrs)
  local out = { "<div class=\"scroll\"><table" .. (attrs or "") .. "><thead><tr>" }
  for _, h in ipairs(headers) do out[#out + 1] = "<th>" .. esc(h) .. "</th>" end
  out[#out + 1] = "</tr></thead><tbody>"
  for i, r in ipairs(rows) do
    local cls = row_class and row_class(i) or nil
    out[#out + 1] = cls and ("<tr class=\"" .. cls .. "\">") or "<tr>"
    for j = 1, #headers do
      local c = r[j] or ""
      local raw = type(c) == "table" and c.html
      out[#out + 1] = string.format("<td%s>%s</td>", right and right[j] and " class=\"num\"" or "",
        raw or esc(c))
    end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</tbody></table></div>"
  return table.concat(out)
end

local function secs(x) return type(x) == "number" and string.format("%.3f", x) or "-" end
local function pct(x)
  if not util.is_finite(x) then return "" end -- never "inf%" or "nan%"
  if math.abs(x) < 0.05 then x = 0.0 end
  return string.format("%+.1f%%", x)
end

-- the --baseline section: every change, in tables (the text output keeps
-- a few lines per kind; the report has them all)
local function baseline_html(diff)
  local B = require "apsearch.report.baseline"
  local out = { "<h2 id=\"baseline\">Changes vs baseline</h2>" }
  out[#out + 1] = "<p class=\"sub\">" .. esc("baseline: " .. tostring(diff.baseline)) .. "</p>"
  local ch = diff.inputs and diff.inputs.changed or {}
  if #ch == 0 then
    out[#out + 1] = "<p>Inputs unchanged.</p>"
  else
    local rows = {}
    for _, c in ipairs(ch) do rows[#rows + 1] = { c.path, B.show_input(c, "before"), B.show_input(c, "after") } end
    out[#out + 1] = table_html({ "input", "baseline", "now" }, rows, nil, nil, " class=\"wrap\"")
  end
  local sm, b = diff.summary or {}, diff.best or {}
  local facts = {}
  if sm.space_size then
    facts[#facts + 1] = string.format("search space %s &rarr; %s candidates; feasible %s &rarr; %s",
      esc(B.show(sm.space_size.before)), esc(B.show(sm.space_size.after)),
      esc(B.show(sm.feasible and sm.feasible.before)), esc(B.show(sm.feasible and sm.feasible.after)))
  end
  if b.before or b.after then
    facts[#facts + 1] = string.format("best step time %s s &rarr; %s s %s", secs(b.before and b.before.step_time),
      secs(b.after and b.after.step_time), esc(pct(b.delta_pct)))
    if b.tokens_delta_pct then
      facts[#facts + 1] = string.format("a step of another size: tokens/s per GPU %.0f &rarr; %.0f %s",
        b.before.tokens_per_s_per_gpu, b.after.tokens_per_s_per_gpu, esc(pct(b.tokens_delta_pct)))
    end
  end
  if #facts > 0 then out[#out + 1] = "<p>" .. table.concat(facts, "; ") .. "</p>" end
  local t = diff.top_k or {}
  local rows = {}
  for _, e in ipairs(t.entered or {}) do
    rows[#rows + 1] = { "entered", "-", tostring(e.rank), e.strategy, "-", secs(e.step_time), "", "new in the top-k" }
  end
  for _, e in ipairs(t.left or {}) do
    rows[#rows + 1] = { "left", tostring(e.rank), "-", e.strategy, secs(e.step_time),
      e.why and secs(e.why.step_time) or "-", "", e.why and e.why.text or "" }
  end
  for _, e in ipairs(t.moved or {}) do
    rows[#rows + 1] = { "moved", tostring(e.before), tostring(e.after), e.strategy, secs(e.step_time_before),
      secs(e.step_time_after), pct(e.delta_pct), "" }
  end
  for _, e in ipairs(t.kept or {}) do
    rows[#rows + 1] = { "kept", tostring(e.before), tostring(e.after), e.strategy, secs(e.step_time_before),
      secs(e.step_time_after), pct(e.delta_pct), "" }
  end
  if #rows == 0 then
    out[#out + 1] = "<p>Top-k: none in either result.</p>"
  else
    out[#out + 1] = table_html({ "change", "rank before", "rank now", "strategy", "step before (s)",
      "step now (s)", "delta", "why" }, rows, { false, true, true, false, true, true, true, false },
      function(i) return "change-" .. rows[i][1] end, " id=\"baseline-table\" class=\"wrap\"")
  end
  return table.concat(out)
end

-- the top-k table: strategy columns with one value in every row fold into
-- a line above it (as in the text table), so it fits 1280 px; sortable
-- by a click on a header (report.js)
local function topk_html(result, launch)
  local tbl = require "apsearch.format.table"
  local headers, rows, right = tbl.rows(result)
  headers, right = util.copy(headers), util.copy(right or {})
  local keep, folded = tbl.fold_columns(headers, rows, function(j) return j > 1 end)
  -- a built-in objective whose score a column shows has none of its own
  -- (as in the text table, format.table.score_column)
  if tbl.score_column(result) then
    local k2 = {}
    for _, j in ipairs(keep) do if headers[j] ~= "objective" then k2[#k2 + 1] = j end end
    keep = k2
  end
  local same = {}
  -- as the terminal's line: pairs --strategy and --fix take back
  for n, hv in ipairs(folded) do same[n] = tbl.same_pair(hv[1], hv[2]) end
  local H, R, RT = {}, {}, {}
  for n, j in ipairs(keep) do H[n], RT[n] = headers[j], right[j] end
  for i, r in ipairs(rows) do
    local row = {}
    for n, j in ipairs(keep) do row[n] = r[j] end
    R[i] = row
  end
  if launch then
    H[#H + 1] = "launch configs"
    for i, r in ipairs(R) do
      local links = {}
      for _, kv in ipairs(launch[i] or {}) do
        links[#links + 1] = string.format("<a href=\"%s\" title=\"%s\">%s</a>", esc(kv[2]), esc(kv[2]), esc(kv[1]))
      end
      r[#H] = { html = "<span class=\"links\">" .. table.concat(links, " ") .. "</span>" }
    end
  end
  local out = {}
  if #same > 0 then
    out[#out + 1] = "<p class=\"same\"><b>same for every row:</b> " .. esc(table.concat(same, " ")) .. "</p>\n"
  end
  out[#out + 1] = table_html(H, R, RT, function(i) return i == 1 and "best" or nil end,
    " id=\"topk-table\" class=\"sortable\"")
  return table.concat(out)
end

-- the "no feasible strategy" section: why, the closest, what to relax
local function infeasible_html(result)
  local d = M.diagnose(result)
  local out = { "<div class=\"notice\" id=\"no-feasible\"><p><b>No feasible strategy.</b> " }
  local s = result.all_candidate_summary or {}
  out[#out + 1] = esc(string.format("Of %s candidates, %s were filtered before the estimate; of those estimated, %s.",
    common.commas(s.generated or 0), common.commas(s.filtered_early or 0),
    common.refused_text(result, common.commas))) .. "</p>"
  if #d.reasons > 0 then
    -- (the ones before the estimate are checks of the layout, not what
    -- kept the closest candidates out: a new user read them as binding)
    out[#out + 1] = "<p><b>Why candidates were refused</b>: after the estimate first (these stopped the " ..
      "candidates that came closest), then the layout checks before it:</p><ul>"
    for _, r in ipairs(d.reasons) do
      out[#out + 1] = string.format("<li><code>%s</code>: %s candidates, %s%s; e.g. %s</li>", esc(r.code),
        esc(common.commas(r.count)), r.phase == "early" and "before the estimate" or "after the estimate",
        r.rule and (", rule " .. esc(r.rule)) or "", esc(r.message or ""))
    end
    out[#out + 1] = "</ul>"
  end
  if #d.suggestions > 0 then
    out[#out + 1] = "<p><b>What to relax</b>:</p><ol id=\"relax\">"
    for _, t in ipairs(d.suggestions) do out[#out + 1] = "<li>" .. esc(t) .. "</li>" end
    out[#out + 1] = "</ol>"
  end
  local probe = common.fit_probe_text(result)
  local i = 0
  for line in (probe or ""):gmatch("[^\n]+") do
    i = i + 1
    out[#out + 1] = string.format("<p%s>%s.</p>", i == 1 and ' id="fit-probe"' or "",
      esc(line:sub(1, 1):upper() .. line:sub(2)))
  end
  out[#out + 1] = "</div>\n"
  if #d.closest > 0 then
    out[#out + 1] = "<h3 id=\"closest\">Closest strategies (least estimated memory)</h3>\n"
    local rows = {}
    for _, c in ipairs(d.closest) do
      rows[#rows + 1] = { tostring(c.index), c.short_text, fmt_num(c.mem_peak and c.mem_peak / 2 ^ 30, "%.2f"),
        fmt_num(c.over_bytes and c.over_bytes / 2 ^ 30, "%+.2f"), fmt_num(c.step_time, "%.3f"), tostring(c.reason or "-") }
    end
    out[#out + 1] = table_html({ "candidate", "strategy", "peak (GiB)", "over the limit (GiB)", "step time (s)", "reason" },
      rows, { true, false, true, true, true, false }, nil, " id=\"closest-table\" class=\"wrap\"")
  end
  return table.concat(out)
end

--- Renders the report.
-- @tparam table result search result (apsearch.search.run), optionally
--   with `baseline_diff`
-- @tparam[opt] table opts `echarts_js` (script text; nil: charts replaced
--   by a notice), `echarts_source` (where it came from, shown in the
--   footer), `echarts_missing` (message when not found), `launch` (array
--   per rank of `{name = relative path}`), `max_points`, `title`, `run_id` (the --out result set,
--   in a meta tag `apsearch-run-id`)
-- @treturn string the HTML document
function M.render(result, opts)
  opts = opts or {}
  local inp = result.inputs or {}
  local m, cl, tr = inp.model or {}, inp.cluster or {}, inp.training or {}
  local dev = type(cl.device) == "table" and cl.device.name or tostring(cl.device)
  local s = result.all_candidate_summary or {}
  local title = opts.title or string.format("apsearch: %s on %s x %s", tostring(m.name),
    tostring(cl.num_devices), tostring(dev))
  local data = M.chart_data(result, opts)
  -- "<" as \u003c: "</script>" and "<!--" stay out of the page's script
  local json = require("apsearch.format.json").encode(data, { script = true })

  local H = {}
  local function P(x) H[#H + 1] = x end
  P("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
  P("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
  P("<meta name=\"generator\" content=\"apsearch\">\n")
  if opts.run_id then P("<meta name=\"apsearch-run-id\" content=\"" .. esc(opts.run_id) .. "\">\n") end
  P("<title>" .. esc(title) .. "</title>\n<style>\n" .. read_asset("report.css") .. "</style>\n</head>\n<body>\n")
  P("<h1>" .. esc(title) .. "</h1>\n")
  P("<p class=\"sub\">" .. esc(string.format(
    "%s feasible of %s candidates (%s filtered early, %s after the estimate); objective %s; top-%s; searched in %.2f s",
    common.commas(s.feasible or 0), common.commas(s.generated or 0), common.commas(s.filtered_early or 0),
    common.refused_text(result, common.commas), tostring(inp.objective), tostring(inp.top_k), s.seconds or 0)) .. "</p>\n")
  P("<pre id=\"script-errors\" class=\"notice error\" hidden></pre>\n")
  if not opts.echarts_js and opts.echarts_missing == "--echarts none" then
    P("<div class=\"notice\" id=\"no-echarts\"><b>Charts need Apache ECharts; they were turned off " ..
      "(<code>--echarts none</code>).</b> The tables below hold the data.</div>\n")
  elseif not opts.echarts_js then
    P("<div class=\"notice\" id=\"no-echarts\"><b>Charts need Apache ECharts, which was not available when this report was written.</b> " ..
      "The tables below hold the same data. Build apsearch with npm available (CMake fetches ECharts at configure time), " ..
      "or pass <code>--echarts path/to/echarts.min.js</code>" ..
      (opts.echarts_missing and (" (" .. esc(opts.echarts_missing) .. ")") or "") .. ".</div>\n")
  end

  P("<div class=\"facts\">")
  P(fact("model", string.format("%s (%s layers, hidden %s%s)", tostring(m.name), tostring(m.num_layers),
    tostring(m.hidden_size), common.experts_note(m))))
  P(fact("cluster", string.format("%s x %s, %s per node%s", tostring(cl.num_devices), dev,
    tostring(cl.devices_per_node), common.nvlink_domain_note(cl))))
  P(fact("training", string.format("global batch %s x seq %s, %s, %s%s", tostring(tr.global_batch_size),
    tostring(tr.seq_length), tostring(tr.precision), tostring(tr.framework), common.mtp_note(tr, m))))
  local limit = data.memory_limit_bytes or M.memory_limit(result)
  P(fact("memory limit", limit and string.format("%.2f GiB", limit / 2 ^ 30) or "-"))
  P(fact("objective", tostring(inp.objective)))
  P(fact("policy", tostring(inp.policy)))
  if #(inp.overrides or {}) > 0 then
    local o = {}
    for _, ov in ipairs(inp.overrides) do o[#o + 1] = util.override_text(ov, util.describe) end
    P(fact("overrides", table.concat(o, " ")))
  end
  P("</div>\n")
  -- the import's notes (stderr's "note:" lines): what the estimate does
  -- not price or count, beside the inputs they qualify; and a built
  -- policy's "defaults:" lines (inputs.defaults): what the step times
  -- assume that the user did not say
  if #(inp.notes or {}) > 0 or #(inp.defaults or {}) > 0 then
    local items = {}
    for _, n in ipairs(inp.defaults or {}) do items[#items + 1] = "<li>" .. esc(n) .. "</li>" end
    for _, n in ipairs(inp.notes or {}) do items[#items + 1] = "<li>" .. esc(n) .. "</li>" end
    P("<div class=\"notice\" id=\"notes\"><b>Notes on the inputs</b><ul>" .. table.concat(items) .. "</ul></div>\n")
  end

  if result.baseline_diff then P(baseline_html(result.baseline_diff)) end

  -- top-k table
  P("<h2 id=\"top-k\">" .. (#(result.top_k_strategies or {}) == 0 and "No feasible strategy" or
    ("Top-" .. #result.top_k_strategies .. " strategies")) .. "</h2>\n")
  if #(result.top_k_strategies or {}) == 0 then
    P(infeasible_html(result))
  else
    P(topk_html(result, opts.launch))
    local note = common.near_capacity_note(result)
    if note then P("<p class=\"notice\">" .. esc(note) .. "</p>\n") end
    local graphs = common.full_graph_note(result)
    if graphs then P("<p class=\"notice\">" .. esc(graphs) .. "</p>\n") end
    local range = common.interval_note(result)
    if range then P("<p>" .. esc(range) .. "</p>\n") end
    local mfu = common.mfu_note(result)
    if mfu then P("<p class=\"notice\">" .. esc(mfu) .. "</p>\n") end
    local basis = common.mfu_basis_note(result)
    if basis then P("<p>" .. esc(basis) .. "</p>\n") end
    P("<details><summary>full strategies</summary><pre>")
    for _, t in ipairs(result.top_k_strategies) do
      P(esc(string.format("rank %d: %s", t.rank, M.strategy_text(t, batch_of(result)))) .. "\n")
    end
    P("</pre></details>\n")
  end

  -- charts (only with ECharts: without it the tables are the report)
  if opts.echarts_js then
    P("<h2 id=\"charts\">Charts</h2>\n<div class=\"charts\">\n")
    P("<div id=\"chart1\" class=\"chart\" data-empty=\"1. no feasible strategy: no step times to compare\"></div>\n")
    P("<div id=\"chart2\" class=\"chart\" data-empty=\"2. no feasible strategy: no memory to compare\"></div>\n")
    -- the rank picker only when there is a rank to pick (an empty
    -- dropdown above the "no stages" notice read as broken)
    P("<div class=\"chart-box\">")
    if #data.topk > 0 then
      P("<div class=\"control\"><label>rank <select id=\"stage-rank\">")
      for _, t in ipairs(data.topk) do
        P(string.format("<option value=\"%d\">%d (pp=%s)</option>", t.rank, t.rank, tostring(t.pp_degree)))
      end
      P("</select></label></div>")
    end
    P("<div id=\"chart3\" class=\"chart\" data-empty=\"3. no feasible strategy: no stages\"></div></div>\n")
    P("<div id=\"chart4\" class=\"chart\" data-empty=\"4. no candidate generated\"></div>\n")
    -- in number order: 1-4 two by two, then 5-8 one per row
    P("<div id=\"chart5\" class=\"chart wide\" data-empty=\"5. no candidate was filtered\"></div>\n")
    P("<div id=\"chart6\" class=\"chart wide\" data-empty=\"6. no feasible strategy: no trends\"></div>\n")
    P("<div class=\"chart-box wide\"><div class=\"control\"><label><input type=\"checkbox\" id=\"scatter-log\"> log scale</label></div>" ..
      "<div id=\"chart7\" class=\"chart tall\" data-empty=\"7. no feasible candidate\"></div></div>\n")
    P("<div id=\"chart8\" class=\"chart wide\" data-empty=\"8. no feasible strategy to re-estimate\"></div>\n")
    P("</div>\n")
  end

  -- filter reasons
  P("<h2 id=\"reasons\">Filter reasons</h2>\n")
  if #data.reasons == 0 then
    P("<p>No candidate was filtered.</p>\n")
  else
    local rows = {}
    for _, r in ipairs(data.reasons) do
      rows[#rows + 1] = { r.code, r.phase == "early" and "before the estimate" or "after the estimate",
        common.commas(r.count), tostring(r.rule or "-"), tostring(r.message or ""), r.example_text }
    end
    P(table_html({ "reason", "phase", "candidates", "rule", "example message", "example strategy" }, rows,
      { false, false, true, false, false, false }))
  end

  -- stage table of the charted PP strategy
  local st_rank = data.stage_rank
  if st_rank and data.topk[st_rank] then
    local t = data.topk[st_rank]
    P("<h2 id=\"stages\">Pipeline stages of rank " .. st_rank .. "</h2>\n")
    local rows = {}
    for _, st in ipairs(t.stages) do
      rows[#rows + 1] = { tostring(st.stage), st.layers, tostring(st.num_layers), tostring(st.recompute_layers),
        fmt_num(st.total and st.total / 2 ^ 30, "%.2f"), fmt_num(st.time_fwd, "%.4f"), fmt_num(st.time_bwd, "%.4f") }
    end
    P(table_html({ "stage", (t.vpp_degree or 1) > 1 and "layers (one range per model chunk)" or "layers", "n", "recomputed", "memory (GiB)", "fwd/mb (s)", "bwd/mb (s)" }, rows,
      { true, false, true, true, true, true, true }))
    local tl = data.timeline
    if tl then
      P("<h3 id=\"timeline\">Pipeline schedule of the top-k rank " .. st_rank .. " (one row per pipeline stage)</h3>\n")
      P("<p id=\"timeline-summary\">" .. esc(timeline_summary(tl)) .. "</p>\n")
      if opts.echarts_js then
        -- one row per pipeline rank, room for the title, legend and axes
        P(string.format("<div id=\"chart9\" class=\"chart wide\" style=\"height: %dpx\" " ..
          "data-empty=\"9. no pipeline schedule\"></div>\n", M.gantt_height(tl.pp_degree)))
      end
      local trows = {}
      for _, r in ipairs(tl.ranks) do
        trows[#trows + 1] = { tostring(r.rank), common.commas(r.ops), fmt_num(r.busy, "%.4f"),
          fmt_num(tl.step - r.busy, "%.4f"), fmt_num(100 * r.idle_fraction, "%.1f") }
      end
      P("<details><summary>busy and idle time per pipeline rank</summary>")
      P(table_html({ "pipeline rank", "ops", "busy (s)", "idle (s)", "idle (%)" }, trows, { true, true, true, true, true }))
      P("</details>\n")
    end
  end

  -- bandwidth table
  local bw = result.bandwidth_sensitivity
  if bw and bw.series and #bw.series > 0 then
    P("<h2 id=\"bandwidth\">Step time (s) with the inter-node bandwidth scaled</h2>\n")
    local headers = { "rank" }
    for _, f in ipairs(bw.factors) do headers[#headers + 1] = string.format("x%s (%.1f GB/s)", tostring(f), bw.base_value * f / 1e9) end
    local rows, right = {}, { true }
    for _, sr in ipairs(bw.series) do
      local r = { tostring(sr.rank) }
      for i = 1, #bw.factors do
        r[#r + 1] = fmt_num(sr.step_time[i], "%.3f") .. (sr.feasible[i] == false and " (infeasible)" or "")
        right[i + 1] = true
      end
      rows[#rows + 1] = r
    end
    P(table_html(headers, rows, right))
  end

  P("<h2 id=\"log\">Search log</h2>\n<details><summary>show</summary><pre>")
  P(esc(table.concat(result.search_log or {}, "\n")))
  P("</pre></details>\n")

  P("<footer>Written by apsearch; estimates, not measurements. ")
  if opts.echarts_js then
    P("Charts drawn with Apache ECharts (Apache License 2.0), inlined" ..
      (opts.echarts_version and (" (" .. esc(opts.echarts_version) .. ")") or "") .. ".")
  end
  P("</footer>\n")

  P("<script type=\"application/json\" id=\"apsearch-data\">" .. json .. "</script>\n")
  if opts.echarts_js then
    P("<script>\n" .. opts.echarts_js:gsub("</script", "<\\/script") .. "\n</script>\n")
  end
  P("<script>\n" .. read_asset("report.js") .. "</script>\n")
  P("</body>\n</html>\n")
  return table.concat(H)
end

return M
