--- Candidate enumeration over a normalized search space.
--
-- The space is the cartesian product of the dimension lists, walked as an
-- odometer (outermost first: tp_degree, sequence_parallel, cp_degree,
-- cp_comm_type, pp_degree, vpp_degree, stage_partition, layer_offset,
-- dp_degree/fsdp_degree, zero_stage, reshard_after_forward, layer_recompute,
-- recompute_num_layers, micro_batch_size, micro_batch_num).  Nothing is
-- materialized: the iterator mutates and returns one candidate table, so a
-- caller that keeps a candidate must copy it (`space.copy`).
--
-- pipeline_split, when not searched, is the framework's own rule
-- (default_split below: info.framework and info.num_layers).  pp_schedule
-- is "1f1b" (interleaved when vpp > 1) unless listed; listed values are
-- searched when pp > 1 ("zbv_zero_bubble" only with vpp = 2).
-- microbatch_group_size is 0 (Megatron's default, pp_degree) unless
-- listed; listed values are searched under interleaved 1F1B only.
--
-- Dimensions left out take their defaults: degrees 1, zero_stage 0,
-- reshard_after_forward true, layer_recompute "none", micro_batch_size 1,
-- micro_batch_num 0 (derived from the global batch), cp_comm_type "p2p",
-- sequence_parallel on iff tp_degree > 1.
--
-- Settings that cannot differ are not enumerated twice (no duplicate
-- candidates): sequence_parallel is off when tp_degree = 1; cp_comm_type
-- takes its first value when cp_degree = 1; reshard_after_forward is true
-- when fsdp_degree = 1; zero_stage takes one value (the first listed 0 or 3,
-- else 0) when fsdp_degree > 1, where FSDP does the sharding, and its first
-- value when dp x cp = 1, where there is nothing to shard;
-- recompute_num_layers is -1 (all layers) unless layer_recompute is "full".
-- Array values (stage_partition, layer_offset, per-stage
-- recompute_num_layers) apply to the pp_degree equal to their length;
-- other pipeline degrees use the even split ("even").  layer_offset
-- "balanced" sets balance_stages (the core chooses the partition that
-- balances stage time) and recompute_num_layers "auto" sets auto_recompute
-- (the core recomputes the fewest layers per stage that fit in memory), so
-- offsets and per-stage recompute are searched without enumerating them.
--
-- With `data_parallel = "auto"`, dp_degree x fsdp_degree is derived for each
-- (tp, cp, pp) so that dp x fsdp x tp x cp x pp = N (num_devices): the pairs
-- come from the dp_degree / fsdp_degree lists when given (only the pairs
-- whose product is N / (tp cp pp)), else the framework's own data
-- parallelism (M.default_dp_pairs): replicas, dp = N / (tp cp pp), and on
-- the FSDP frameworks also the full shard, fsdp = N / (tp cp pp).
-- When tp x cp x pp does not divide N one candidate with
-- dp = floor(N / (tp cp pp)) (at least 1), fsdp = 1 is produced, so that the
-- devices rule reports why that combination cannot use every device.
-- @module apsearch.space
local util = require "apsearch.util"
local schema = require "apsearch.schema"

local M = {}

local DEFAULTS = {
  tp_degree = 1, cp_degree = 1, cp_comm_type = "p2p", pp_degree = 1,
  vpp_degree = 1, dp_degree = 1, fsdp_degree = 1, zero_stage = 0,
  reshard_after_forward = true, layer_recompute = "none", recompute_method = "block",
  recompute_num_layers = -1, micro_batch_size = 1, micro_batch_num = 0,
}

-- defaults of the MoE dimensions (levels of MoE models only)
local MOE_DEFAULTS = { moe_token_dispatcher = "alltoall", moe_capacity_factor = 0 }

--- The token dispatcher a framework runs when the strategy does not say:
-- NeMo AutoModel's BackendConfig.dispatcher is "deepep" where DeepEP is
-- installed (NVIDIA-NeMo/Automodel 36044ad3 nemo_automodel/components/
-- models/common/utils.py:338-344), Megatron-Core's flex dispatcher, and it
-- has no all-to-all one; elsewhere alltoall -- but flex where the training
-- sets what only the flex dispatcher has (its HybridEP backend, a rank
-- capacity factor): that setting asks for it. A model AutoModel builds
-- through transformers (training.transformers_model) has no dispatcher
-- and no expert parallelism: allgather, which over one expert rank moves
-- nothing.
-- @tparam[opt] string framework training.framework
-- @tparam[opt] table training the training settings
-- @treturn string moe_token_dispatcher
function M.default_dispatcher(framework, training)
  if framework == "automodel" then
    return training and training.transformers_model and "allgather" or "flex"
  end
  if training and (training.moe_flex_dispatcher_backend == "hybridep" or
      (training.moe_expert_rank_capacity_factor or 0) > 0) then
    return "flex"
  end
  return MOE_DEFAULTS.moe_token_dispatcher
end

--- The expert tensor-parallel size a framework runs when the strategy
-- does not set it: Megatron-LM's is the tensor-parallel size
-- (megatron/training/arguments.py:587-588 and megatron/core/
-- model_parallel_config.py:130, 506-507 @ d98e8a64: expert_tensor_
-- parallel_size None -> tensor_model_parallel_size); TorchTitan's sparse
-- mesh has no tensor-parallel split of an expert and Megatron-DeepSpeed
-- splits experts only with --enable-expert-tensor-parallelism (off): 1.
-- @tparam string framework training.framework
-- @tparam integer tp tp_degree
-- @treturn integer etp_degree
function M.default_etp(framework, tp)
  if framework == nil or framework == "megatron" then return tp end
  return 1
end

--- The MoE strategy fields a candidate of an MoE model takes when its
-- space (or `apsearch estimate --strategy`) leaves them out: the
-- framework's defaults, --expert-model-parallel-size 1,
-- --expert-tensor-parallel-size M.default_etp (Megatron-LM: the
-- tensor-parallel size), --moe-token-dispatcher-type alltoall, dropless
-- (capacity factor 0: none).
-- @tparam[opt] string framework training.framework (default megatron)
-- @tparam[opt] integer tp tp_degree (default 1)
-- @tparam[opt] table training the training settings (M.default_dispatcher)
-- @treturn table field -> value (a fresh table)
function M.moe_defaults(framework, tp, training)
  return { ep_degree = 1, etp_degree = M.default_etp(framework, tp or 1),
    moe_token_dispatcher = M.default_dispatcher(framework, training),
    moe_capacity_factor = MOE_DEFAULTS.moe_capacity_factor }
end

--- FSDP frameworks: their data parallelism shards by default. TorchTitan's
-- `data_parallel_shard_degree` defaults to -1, every rank left
-- (torchtitan/config/configs.py:133 @ b5bcd76c), and its DDP runs no
-- other parallelism; NeMo AutoModel shards over all data-parallel ranks
-- unless `dp_replicate_size` (default None) says otherwise
-- (nemo_automodel/components/distributed/mesh.py:74, mesh_utils.py:72
-- @ 36044ad3); FSDP1 is FSDP by name.
M.SHARDING_FRAMEWORKS = { fsdp2 = true, fsdp = true, automodel = true }

--- The (dp_degree, fsdp_degree) pairs `data_parallel = "auto"` searches
-- when the policy lists neither: replicas, and on a framework whose data
-- parallelism shards by default (M.SHARDING_FRAMEWORKS) the full shard
-- too, so a policy of such a framework is not left with replicas only
-- (rules/framework.lua refuses TorchTitan's DDP beside TP or PP).
-- @tparam[opt] string framework training.framework
-- @tparam integer D the data-parallel ranks, N / (tp cp pp)
-- @treturn table array of `{dp, fsdp}` pairs with dp x fsdp = D
function M.default_dp_pairs(framework, D)
  if D > 1 and M.SHARDING_FRAMEWORKS[framework] then return { { D, 1 }, { 1, D } } end
  return { { D, 1 } }
end

--- The split rule a framework applies when pipeline_split is not searched
-- (src/core/pipeline.c): TorchTitan counts the embedding and the loss as a
-- layer each whenever it pipelines (first/last_stage_less_layers = 1);
-- Megatron-LM and Megatron-DeepSpeed split evenly, and where the layers do
-- not divide, by their own rules (--account-for-embedding/loss-in-
-- pipeline-split; --pp-partition-method 'type:transformer|embedding').
-- @tparam string framework training.framework
-- @tparam[opt] integer L the model's layers
-- @tparam integer pp pipeline degree
-- @tparam integer vpp model chunks per rank
-- @treturn string the pipeline_split value
local function default_split(framework, L, pp, vpp)
  if pp == 1 then return "even" end
  if framework == "fsdp2" then return "embedding_loss" end
  -- NeMo AutoModel: L // S per stage, the first L mod S one more, the
  -- embedding and lm_head not counted (pipelining/functional.py
  -- generate_hf_model_fqn_per_model_part: fill_first); the core refuses
  -- other rules
  if framework == "automodel" then
    return (not L or L % (pp * vpp) == 0) and "even" or "fill_first"
  end
  if not L or L % (pp * vpp) == 0 then return "even" end
  if framework == "deepspeed" then return vpp == 1 and "deepspeed_type" or "even" end
  return "embedding_loss"
end
--- Whether a model's layers share their top-k across layers (GLM-5.2:
-- model.index_topk_freq > 1), so that every pipeline chunk must start on
-- a layer computing its own (src/core/dsa.c): no split rule keeps that,
-- and the search and `estimate` balance its stages instead.
-- @tparam table model normalized model
-- @treturn boolean
function M.shares_topk(model)
  return (model.index_topk_freq or 0) > 1
end

--- The split rule a framework applies when pipeline_split is not given
-- (the function above; `apsearch estimate` uses it too, so that a
-- strategy estimates as the search ranked it).
M.default_split = default_split

--- The reshard_after_forward a framework runs when the strategy does not
-- say: TorchTitan under pipeline parallelism keeps the parameters
-- unsharded across the micro-batches (PyTorch's pipelining; TorchTitan's
-- `reshard_after_forward_policy = "default"` does not reshard then, and the
-- launch config writes "never"), so false; true elsewhere (FSDP's
-- default, and moot without FSDP).
-- @tparam string framework training.framework
-- @tparam integer fsdp fsdp_degree
-- @tparam integer pp pp_degree
-- @treturn boolean
function M.default_reshard(framework, fsdp, pp)
  return not (framework == "fsdp2" and fsdp > 1 and pp > 1)
end

--- Every strategy field a candidate carries, in display order.
M.fields = { "dp_degree", "fsdp_degree", "zero_stage", "reshard_after_forward",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "cp_degree",
  "cp_comm_type", "micro_batch_size", "micro_batch_num", "stage_partition",
  "layer_offset", "balance_stages", "pipeline_split", "layer_recompute", "recompute_method",
  "recompute_num_layers",
  "auto_recompute", "allow_idle_devices", "pp_schedule",
  -- a level when listed (nil otherwise: 0, Megatron's default)
  "microbatch_group_size" }

--- The MoE strategy fields, carried by the candidates of MoE models only.
--- Why a space's expert-parallel degrees cannot run at all: every listed
-- `ep_degree` leaves the experts unevenly split (Megatron-LM asserts
-- num_experts % expert_model_parallel_size == 0, arguments.py; TorchTitan
-- shards the experts' first dimension evenly), so no candidate of the
-- space can pass, whatever the other degrees.
-- @tparam table dims the search space's dimensions (`ep_degree`: a list)
-- @tparam integer num_experts the model's routed experts (0: dense)
-- @treturn string|nil the reason, naming the values and the divisors
function M.ep_refusal(dims, num_experts)
  local given = dims and dims.ep_degree
  if (num_experts or 0) <= 0 or type(given) ~= "table" or #given == 0 then return nil end
  for _, d in ipairs(given) do
    if math.type(d) ~= "integer" or d < 1 or num_experts % d == 0 then return nil end
  end
  local divisors = {}
  for d = 1, num_experts do if num_experts % d == 0 then divisors[#divisors + 1] = tostring(d) end end
  local vals = {}
  for i, d in ipairs(given) do vals[i] = tostring(d) end
  return string.format("search_space.ep_degree = %s: divides none of the model's %d experts (Megatron-LM and "
    .. "TorchTitan split them evenly over the expert-parallel ranks); the divisors are %s",
    table.concat(vals, ","), num_experts, table.concat(divisors, ", "))
end

M.moe_fields = { "ep_degree", "etp_degree", "moe_token_dispatcher", "moe_capacity_factor",
  "moe_grouped_gemm" }

--- Sets search dimension `dim` of candidate `c` to `v`, translating the
-- values that exist only in a search space into strategy fields:
-- layer_offset "balanced" sets balance_stages (the core balances stage
-- time), recompute_num_layers "auto" sets auto_recompute (the core picks
-- the fewest layers per stage that fit), "even" (or false) is the even split.
-- @tparam table c candidate (mutated)
-- @tparam string dim dimension name
-- @param v value
function M.set_dim(c, dim, v)
  if dim == "layer_offset" then
    c.balance_stages = v == "balanced" or nil
    if v == "balanced" then v = nil end
  elseif dim == "recompute_num_layers" then
    c.auto_recompute = v == "auto" or nil
    if v == "auto" then v = -1 end
  end
  -- "even" (listed, or false from the per-pp expansion) is the even split;
  -- false is a real value of every other (boolean) dimension
  if (dim == "stage_partition" or dim == "layer_offset") and (v == "even" or v == false) then
    v = nil
  end
  c[dim] = v
end

--- Shallow copy of a candidate (arrays are shared; they are never mutated).
-- @tparam table cand
-- @treturn table
function M.copy(cand)
  local r = {}
  for k, v in pairs(cand) do r[k] = v end
  return r
end

-- stands for nil in the keys of M.slot's caches
local NIL = {}

--- The slot of a nested cache for the values of `fields` in candidate
-- `c`: `root[c[f1]][c[f2]]...` (nil values stand for one key), the tables
-- on the way created.  The caches of the fast path (Space:size,
-- search.block_pruner) are keyed so.
-- @tparam table root the cache
-- @tparam table c candidate
-- @tparam table fields array of field names (none: the slot is `root[1]`)
-- @treturn table the innermost table
-- @return the key of the slot in it
function M.slot(root, c, fields)
  local t, nf = root, #fields
  if nf == 0 then return root, 1 end
  for i = 1, nf - 1 do
    local v = c[fields[i]]
    if v == nil then v = NIL end
    local u = t[v]
    if not u then u = {} t[v] = u end
    t = u
  end
  local v = c[fields[nf]]
  if v == nil then v = NIL end
  return t, v
end

--- M.slot for a fixed list of fields: `slotter(fields)(root, c)` is
-- `M.slot(root, c, fields)`, unrolled for up to six fields (the caches'
-- lookups are the fast path's most frequent operation).
-- @tparam table fields array of field names
-- @treturn function `function(root, c) -> table, key`
function M.slotter(fields)
  local nf = #fields
  local f1, f2, f3, f4 = fields[1], fields[2], fields[3], fields[4]
  local function step(t, v)
    if v == nil then v = NIL end
    local u = t[v]
    if not u then u = {} t[v] = u end
    return u
  end
  local function last(v) if v == nil then return NIL end return v end
  if nf == 0 then return function(root) return root, 1 end end
  if nf == 1 then return function(root, c) return root, last(c[f1]) end end
  if nf == 2 then return function(root, c) return step(root, c[f1]), last(c[f2]) end end
  if nf == 3 then
    return function(root, c) return step(step(root, c[f1]), c[f2]), last(c[f3]) end
  end
  if nf == 4 then
    return function(root, c) return step(step(step(root, c[f1]), c[f2]), c[f3]), last(c[f4]) end
  end
  local f5, f6 = fields[5], fields[6]
  if nf == 5 then
    return function(root, c)
      return step(step(step(step(root, c[f1]), c[f2]), c[f3]), c[f4]), last(c[f5])
    end
  end
  if nf == 6 then
    return function(root, c)
      return step(step(step(step(step(root, c[f1]), c[f2]), c[f3]), c[f4]), c[f5]), last(c[f6])
    end
  end
  return function(root, c) return M.slot(root, c, fields) end
end

local Space = {}
Space.__index = Space

local function list_of(dims, name)
  local l = dims[name]
  if l then return l end
  return { DEFAULTS[name] }
end

-- cache keyed by one or two values
local function memo(f)
  local cache = {}
  return function(a, b)
    local ka = cache[a]
    if not ka then ka = {} cache[a] = ka end
    local kb = b == nil and "" or b
    local v = ka[kb]
    if v == nil then v = f(a, b) ka[kb] = v end
    return v
  end
end

-- arrays of matching length (or the even split, as false) for pp: p
-- entries (per pipeline rank), or, for stage_partition with vpp > 1, p x v
-- entries (per model chunk in schedule order, as the core reads them,
-- types.h aps_strategy.stage_partition)
local function per_pp(values, per_chunk)
  return memo(function(pp, vpp)
    local out, even = {}, false
    for _, v in ipairs(values) do
      if v == "even" then even = true
      elseif v == "balanced" then
        -- the core balances stage time (balance_stages); nothing to balance
        -- with one stage
        if pp > 1 then out[#out + 1] = v else even = true end
      elseif #v == pp or (per_chunk and vpp > 1 and #v == pp * vpp) then
        out[#out + 1] = v
      end
    end
    if even or #out == 0 then table.insert(out, 1, false) end
    return out
  end)
end

--- Builds a space from a normalized search space.
-- @tparam table ss normalized search space: `{data_parallel = "auto"|"manual",
--   dims = {<dimension> = list of values}}` (see apsearch.policy)
-- @tparam table info `{num_devices = N, allow_idle_devices = bool,
--   num_layers, framework, num_experts, full_recompute = bool}`
--   (full_recompute false: the core refuses layer_recompute = "full" for
--   the model, so "none" is searched beside it)
-- @treturn table a space object with `:size()`, `:iter()`, `:levels_info()`
-- @raise when N is missing with data_parallel = "auto"
function M.new(ss, info)
  local dims = ss.dims or {}
  local auto = ss.data_parallel == "auto"
  local N = info.num_devices
  if auto and not util.is_integer(N) then
    error("space: data_parallel = \"auto\" needs cluster.num_devices", 0)
  end
  local levels = {}
  local function level(l) levels[#levels + 1] = l end

  level { name = "tp_degree", field = "tp_degree", static = list_of(dims, "tp_degree") }

  local sp_list = dims.sequence_parallel
  local sp_false, sp_true = { false }, { true }
  level { name = "sequence_parallel", field = "sequence_parallel", deps = { "tp_degree" },
    values = function(c)
      if c.tp_degree == 1 then return sp_false end
      return sp_list or sp_true
    end }

  level { name = "cp_degree", field = "cp_degree", static = list_of(dims, "cp_degree") }
  local comm = list_of(dims, "cp_comm_type")
  local comm1 = { comm[1] }
  level { name = "cp_comm_type", field = "cp_comm_type", deps = { "cp_degree" },
    values = function(c) if c.cp_degree == 1 then return comm1 end return comm end }

  level { name = "pp_degree", field = "pp_degree", static = list_of(dims, "pp_degree") }
  level { name = "vpp_degree", field = "vpp_degree", static = list_of(dims, "vpp_degree") }
  local split_list = dims.pipeline_split
  local split_one = memo(function(pp, vpp)
    return { default_split(info.framework, info.num_layers, pp, vpp) }
  end)
  local split_first = split_list and { split_list[1] }
  level { name = "pipeline_split", field = "pipeline_split", deps = { "pp_degree", "vpp_degree" },
    values = function(c)
      if c.pp_degree == 1 then return split_first or split_one(1, 1) end
      return split_list or split_one(c.pp_degree, c.vpp_degree)
    end }
  -- pp_schedule: "1f1b" (interleaved when vpp > 1) unless listed; ZB-V
  -- and DualPipeV only with vpp = 2 (their V of two stages per rank);
  -- one value when pp = 1
  local sched_list = dims.pp_schedule or { "1f1b" }
  local sched_first = { sched_list[1] }
  local v_shaped = { zbv_zero_bubble = true, dualpipev = true }
  local sched_v = {}
  for _, name in ipairs(sched_list) do
    if not v_shaped[name] then sched_v[#sched_v + 1] = name end
  end
  if #sched_v == 0 then sched_v = sched_first end
  level { name = "pp_schedule", field = "pp_schedule", deps = { "pp_degree", "vpp_degree" },
    values = function(c)
      if c.pp_degree == 1 then return sched_first end
      return c.vpp_degree == 2 and sched_list or sched_v
    end }
  -- microbatch_group_size (Megatron --microbatch-group-size-per-virtual-
  -- pipeline-stage), a level only when listed: its values under the
  -- interleaved 1F1B schedule, pp_degree spelt 0 (the default, one
  -- candidate for both), 0 otherwise
  if dims.microbatch_group_size then
    local none = { 0 }
    local groups = memo(function(pp)
      local out, seen = {}, {}
      for _, g in ipairs(dims.microbatch_group_size) do
        if g == pp then g = 0 end
        if not seen[g] then seen[g] = true out[#out + 1] = g end
      end
      return out
    end)
    level { name = "microbatch_group_size", field = "microbatch_group_size",
      deps = { "pp_degree", "vpp_degree", "pp_schedule" },
      values = function(c) return M.interleaved_1f1b(c) and groups(c.pp_degree) or none end }
  end
  -- a model whose layers share their top-k (GLM-5.2, info.topk_shared)
  -- pipelines only where every model chunk starts on a layer computing its
  -- own, which no split rule gives: its stages are balanced (the core's
  -- Megatron split keeps to such layers) unless the policy says otherwise
  local offsets = dims.layer_offset
  if info.topk_shared and not offsets and not dims.stage_partition then offsets = { "balanced" } end
  for _, pv in ipairs({ { "stage_partition", dims.stage_partition }, { "layer_offset", offsets } }) do
    local name, values = pv[1], pv[2]
    if values then
      local f = per_pp(values, name == "stage_partition")
      level { name = name, deps = { "pp_degree", "vpp_degree" },
        values = function(c) return f(c.pp_degree, c.vpp_degree or 1) end,
        set = function(c, v) M.set_dim(c, name, v) end }
    end
  end

  if auto then
    local dpl, fsl = dims.dp_degree, dims.fsdp_degree
    local pairs_for = memo(function(prod)
      local out = {}
      if prod > N or N % prod ~= 0 then
        local d = N // prod
        if info.allow_idle_devices and d >= 1 then
          -- idle devices allowed: fill as many as divide evenly
          out[1] = { d, 1 }
        else
          out[1] = { math.max(d, 1), 1 }
        end
        return out
      end
      local D = N // prod
      if dpl and fsl then
        for _, d in ipairs(dpl) do
          for _, f in ipairs(fsl) do
            if d * f == D then out[#out + 1] = { d, f } end
          end
        end
      elseif fsl then
        for _, f in ipairs(fsl) do
          if D % f == 0 then out[#out + 1] = { D // f, f } end
        end
      elseif dpl then
        for _, d in ipairs(dpl) do
          if D % d == 0 then out[#out + 1] = { d, D // d } end
        end
      else
        out = M.default_dp_pairs(info.framework, D)
      end
      return out
    end)
    level { name = "data_parallel", deps = { "tp_degree", "cp_degree", "pp_degree" },
      fields = { "dp_degree", "fsdp_degree" },
      values = function(c) return pairs_for(c.tp_degree * c.cp_degree * c.pp_degree) end,
      set = function(c, v) c.dp_degree = v[1] c.fsdp_degree = v[2] end }
  else
    level { name = "dp_degree", field = "dp_degree", static = list_of(dims, "dp_degree") }
    level { name = "fsdp_degree", field = "fsdp_degree", static = list_of(dims, "fsdp_degree") }
  end

  local zl = list_of(dims, "zero_stage")
  local z_fsdp = { 0 }
  for _, z in ipairs(zl) do if z == 0 or z == 3 then z_fsdp = { z } break end end
  -- with one data-parallel rank (dp x fsdp x cp = 1) there is nothing to
  -- shard: every ZeRO stage is the same strategy, enumerated once
  local z_one = { zl[1] }
  level { name = "zero_stage", field = "zero_stage", deps = { "fsdp_degree", "dp_degree", "cp_degree" },
    values = function(c)
      if c.fsdp_degree > 1 then return z_fsdp end
      if c.dp_degree * c.cp_degree == 1 then return z_one end
      return zl
    end }

  local rl = list_of(dims, "reshard_after_forward")
  local r_true = { true }
  -- TorchTitan under pipeline parallelism (M.default_reshard): its
  -- "default" policy does not reshard after forward; "always" would gather
  -- the stage again in every micro-batch's backward (src/core/sync.c), for
  -- the same memory: one candidate, false
  local r_false = { false }
  local fw = info.framework
  level { name = "reshard_after_forward", field = "reshard_after_forward", deps = { "fsdp_degree", "pp_degree" },
    values = function(c)
      if c.fsdp_degree == 1 then return r_true end
      if not M.default_reshard(fw, c.fsdp_degree, c.pp_degree) then return r_false end
      return rl
    end }

  local rnl = list_of(dims, "recompute_num_layers")
  local lr = list_of(dims, "layer_recompute")
  -- With recompute_num_layers "auto", "full" recomputes only where memory
  -- requires (nothing where it fits), which covers "none": not enumerated
  -- twice -- unless the core refuses full recompute for this model and
  -- framework (info.full_recompute false), where
  -- "none" is the only way to run without it.
  local has_auto, has_full = false, false
  for _, v in ipairs(rnl) do has_auto = has_auto or v == "auto" end
  for _, v in ipairs(lr) do has_full = has_full or v == "full" end
  if has_auto and has_full and info.full_recompute ~= false then
    local kept = {}
    for _, v in ipairs(lr) do if v ~= "none" then kept[#kept + 1] = v end end
    lr = kept
  end
  level { name = "layer_recompute", field = "layer_recompute", static = lr }
  local rnl_all = { -1 }
  local rnl_for = memo(function(pp)
    local out = {}
    for _, v in ipairs(rnl) do
      if type(v) ~= "table" or #v == pp then out[#out + 1] = v end
    end
    if #out == 0 then out[1] = -1 end
    return out
  end)
  level { name = "recompute_num_layers",
    deps = { "layer_recompute", "pp_degree" },
    set = function(c, v) M.set_dim(c, "recompute_num_layers", v) end,
    values = function(c)
      if c.layer_recompute ~= "full" then return rnl_all end
      return rnl_for(c.pp_degree)
    end }

  -- Megatron --recompute-method: only full recompute has one
  local rm = list_of(dims, "recompute_method")
  local rm_one = { rm[1] }
  level { name = "recompute_method", field = "recompute_method", deps = { "layer_recompute" },
    values = function(c) if c.layer_recompute ~= "full" then return rm_one end return rm end }

  level { name = "micro_batch_size", field = "micro_batch_size", static = list_of(dims, "micro_batch_size") }
  level { name = "micro_batch_num", field = "micro_batch_num", static = list_of(dims, "micro_batch_num") }

  -- Megatron's selective recompute modules, when listed: each value on the
  -- selective candidates, none ("") on the others
  if dims.recompute_modules then
    local rm = dims.recompute_modules
    level { name = "recompute_modules", field = "recompute_modules", deps = { "layer_recompute" },
      values = function(c) return c.layer_recompute == "selective" and rm or { "" } end }
  end

  -- Mixture of experts (info.num_experts > 0 only: a dense model gets no
  -- new candidate).  ep_degree: the divisors of the expert count (or the
  -- listed values) whose etp x ep grid fits the ranks of a pipeline stage,
  -- tp x cp x dp (Megatron-Core parallel_state folds the expert layers'
  -- etp-ep-edp over them); etp_degree the framework's default unless
  -- listed (M.default_etp: Megatron-LM's tensor-parallel size);
  -- moe_token_dispatcher "alltoall", moe_capacity_factor 0
  -- (dropless) unless listed; moe_grouped_gemm a level only when listed.
  local E = info.num_experts or 0
  if E > 0 then
    local ep_given = dims.ep_degree
    local ep_all = {}
    for d = 1, E do if E % d == 0 then ep_all[#ep_all + 1] = d end end
    if dims.etp_degree then
      level { name = "etp_degree", field = "etp_degree", static = dims.etp_degree }
    else
      local etp_fw, by_tp = info.framework, {}
      level { name = "etp_degree", field = "etp_degree", deps = { "tp_degree" },
        values = function(c)
          local v = by_tp[c.tp_degree]
          if not v then v = { M.default_etp(etp_fw, c.tp_degree) }; by_tp[c.tp_degree] = v end
          return v
        end }
    end
    local ep_for = memo(function(ranks, etp)
      local out = {}
      for _, d in ipairs(ep_given or ep_all) do
        if E % d == 0 and ranks % (etp * d) == 0 then out[#out + 1] = d end
      end
      -- nothing fits: the first value, which the checks report
      if #out == 0 then out[1] = (ep_given or ep_all)[1] end
      return out
    end)
    level { name = "ep_degree", field = "ep_degree",
      deps = { "tp_degree", "cp_degree", "dp_degree", "fsdp_degree", "etp_degree" },
      values = function(c)
        return ep_for(c.tp_degree * c.cp_degree * c.dp_degree * c.fsdp_degree, c.etp_degree)
      end }
    level { name = "moe_token_dispatcher", field = "moe_token_dispatcher",
      static = dims.moe_token_dispatcher or { M.default_dispatcher(info.framework, info.training) } }
    level { name = "moe_capacity_factor", field = "moe_capacity_factor",
      static = dims.moe_capacity_factor or { MOE_DEFAULTS.moe_capacity_factor } }
    -- grouped GEMM only when listed (else the core's default, on: NeMo's
    -- MoE recipes, --moe-grouped-gemm); without this level a listed or
    -- --fix'ed moe_grouped_gemm = false never reached the candidates
    if dims.moe_grouped_gemm then
      level { name = "moe_grouped_gemm", field = "moe_grouped_gemm", static = dims.moe_grouped_gemm }
    end
  end

  -- which levels influence a later level's values
  local provides = {}
  for i, l in ipairs(levels) do
    if l.static then local s = l.static l.values = function() return s end end
    for _, f in ipairs(l.fields or { l.field or l.name }) do provides[f] = i end
  end
  for _, l in ipairs(levels) do
    for _, d in ipairs(l.deps or {}) do
      local src = provides[d]
      if src then levels[src].influences = true end
    end
  end

  -- the last "outer" level (the degrees, the pipeline split, the data
  -- parallel pair): the levels after it (ZeRO, recompute, micro-batch) are
  -- the inner levels that the fast path of the search (Space:iter's hook)
  -- skips as a block when a check rejects the whole block
  local boundary = 0
  for i, l in ipairs(levels) do
    if l.name == "data_parallel" or l.name == "fsdp_degree" then boundary = i end
  end
  -- per level j, the fields set above it (by levels < j) that levels j
  -- and below read: what the subtree below levels 1..j-1 depends on
  local read_above = {}
  for j = 1, #levels + 1 do
    local r, seen = {}, {}
    for i = j, #levels do
      for _, d in ipairs(levels[i].deps or {}) do
        local src = provides[d]
        if src and src < j and not seen[d] then
          seen[d] = true
          r[#r + 1] = d
        end
      end
    end
    read_above[j] = r
  end
  local key_fields = read_above[boundary + 1]

  local self = setmetatable({
    levels = levels, dims = dims, data_parallel = ss.data_parallel,
    allow_idle_devices = info.allow_idle_devices or false, num_devices = N,
    boundary = boundary, key_fields = key_fields, read_above = read_above,
    -- every value an inner level can take (the fast path's safety test)
    inner = {
      zero_stage = util.copy(zl), layer_recompute = lr, recompute_num_layers = rnl,
      recompute_method = rm, micro_batch_size = list_of(dims, "micro_batch_size"),
      micro_batch_num = list_of(dims, "micro_batch_num"),
    },
  }, Space)
  return self
end

--- Bounds of the parallel degrees the outer levels can produce (tp, cp,
-- pp, vpp, dp, fsdp; with data_parallel "auto", dp and fsdp are at most
-- num_devices or a listed value): the fast path of the search
-- (search.block_pruner) needs every one inside the core's range.
-- @treturn integer|nil the least degree (nil when a value is not an integer)
-- @treturn integer the largest degree
-- @treturn integer the largest pp_degree
function Space:degree_bounds()
  local lo, hi, pp_hi, ok = math.maxinteger, math.mininteger, math.mininteger, true
  local function see(list, pp)
    for _, v in ipairs(list) do
      if math.type(v) ~= "integer" then ok = false
      else
        if v < lo then lo = v end
        if v > hi then hi = v end
        if pp and v > pp_hi then pp_hi = v end
      end
    end
  end
  local dims = self.dims
  for _, name in ipairs({ "tp_degree", "cp_degree", "vpp_degree" }) do see(list_of(dims, name)) end
  see(list_of(dims, "pp_degree"), true)
  if self.data_parallel == "auto" then
    see({ 1, self.num_devices })
    see(dims.dp_degree or {})
    see(dims.fsdp_degree or {})
  else
    see(list_of(dims, "dp_degree"))
    see(list_of(dims, "fsdp_degree"))
  end
  if not ok then return nil end
  return lo, hi, pp_hi
end

--- A fresh candidate with every field at its default.
-- @treturn table
function Space:base()
  local c = {}
  for k, v in pairs(DEFAULTS) do c[k] = v end
  c.sequence_parallel = false
  c.allow_idle_devices = self.allow_idle_devices
  return c
end

-- The counter of subtree sizes: `count(k)` is the number of candidates
-- below levels 1..k-1 of `c` (levels k and below of c are set on the way:
-- stale).  The size of such a subtree depends only on the fields levels
-- 1..k-1 set that levels k and below read (read_above[k]): memoized on
-- them (in a memo kept with the space).  With a limit,
-- counting stops once a total passes it, and after COUNT_WORK level
-- visits; `over()` then says so.
local COUNT_WORK = 10000000
local function subtree_counter(space, c, limit)
  local levels, n = space.levels, #space.levels
  local work, over = 0, false
  -- a count is memoized only once complete: the memo is kept with the
  -- space for the next counter (Space:size's serves the walks of ranges)
  local memo = space._subtree_memo or {}
  local slots = {}
  for k = 1, n do memo[k], slots[k] = memo[k] or {}, M.slotter(space.read_above[k]) end
  space._subtree_memo = memo
  local function count(k)
    if k > n then return 1 end
    local l = levels[k]
    local mt, mk
    if l.influences then
      mt, mk = slots[k](memo[k], c)
      local v = mt[mk]
      if v then return v end
    end
    work = work + 1
    if limit and work > COUNT_WORK then over = true return 0 end
    local list = l.values(c)
    local m = #list
    if m == 0 then return 0 end
    local set, field = l.set, l.field
    if not l.influences then
      -- no later level reads it: every value has the same subtree
      if set then set(c, list[1]) else c[field] = list[1] end
      return m * count(k + 1)
    end
    local total = 0
    for i = 1, m do
      if set then set(c, list[i]) else c[field] = list[i] end
      total = total + count(k + 1)
      if over or (limit and total > limit) then over = true break end
    end
    if not over then mt[mk] = total end
    return total
  end
  return count, function() return over end
end

--- Number of candidates the iterator yields, computed without enumerating
-- the independent dimensions (a product over them).
-- @tparam[opt] integer limit stop counting once the count passes it
-- @treturn integer the count (with a limit: a number above the limit when
--   the count passed it)
-- @treturn boolean true when counting stopped early
function Space:size(limit)
  if self._size then return self._size end
  local count, over = subtree_counter(self, self:base(), limit)
  local total = count(1)
  if over() then return math.max(total, (limit or 0) + 1), true end
  self._size = total
  return total
end

--- Iterates over the candidates.
-- The same table is returned each step, mutated in place: copy it
-- (`space.copy`) to keep it.
--
-- With `hooks`, the fast path: `hooks[k](cand, index)`, when given, is
-- called each time the walk is about to set level k (levels 1..k-1 are
-- set, the others are stale: the hook may change them), with the index of
-- the first candidate of the subtree below; when it returns a number (the
-- subtree's size) and a tag, the subtree is skipped and the index advances
-- past it, or with `yield_pruned` every candidate of the subtree is
-- returned with the tag as a third value, unless `hooks.pruned(cand,
-- index, size, tag)` (the subtree's first index and size; levels k.. of
-- cand stale) returns true: it has dealt with them, they are skipped;
-- when it returns nil and a tag,
-- the subtree is walked and its candidates returned with the tag (a tag
-- holds until the next hook call: use one hook level with tags).
--
-- With `first` and `last`, only the candidates of index first..last are
-- returned (with their indices in the whole space): the subtrees before
-- `first` are skipped at once (their sizes counted, not walked), and a
-- hook is called only for a subtree that lies within the range whole (a
-- subtree across an end of the range is walked).  Every candidate of the
-- range is returned, decided as the whole walk would (the workers of
-- `run --jobs`, each on a range).
-- @tparam[opt] table hooks `{[level index] = function}`
-- @tparam[opt] boolean yield_pruned
-- @tparam[opt] integer first the first index returned (1-based)
-- @tparam[opt] integer last the last index returned (with `first`)
-- @treturn function iterator returning `candidate, index` (1-based), then nil
function Space:iter(hooks, yield_pruned, first, last)
  local levels, n = self.levels, #self.levels
  local cand = self:base()
  local lists, idx = {}, {}
  local fields, setters, values = {}, {}, {}
  for i, l in ipairs(levels) do
    fields[i] = l.field or false
    setters[i] = l.set
    values[i] = l.values
  end
  hooks = hooks or {}
  local pruned = hooks.pruned
  local started, count, tag = false, 0, nil
  -- a range: the sizes of subtrees (levels k.. of cand set stale on the
  -- way), and `inside`, the level from which the subtree being walked
  -- lies within the range whole (n + 2: none)
  local ranged = first ~= nil
  local OUT = n + 2
  local size_below = ranged and subtree_counter(self, cand) or nil
  local inside = ranged and OUT or 1

  local function next_at(j)
    while j >= 1 do
      local i = idx[j] + 1
      local list = lists[j]
      local v = list[i]
      if v ~= nil then
        idx[j] = i
        local f = fields[j]
        if f then cand[f] = v else setters[j](cand, v) end
        -- level j changed: the walk left the subtrees entered below it
        if j < inside then inside = OUT end
        return j + 1
      end
      j = j - 1
    end
    return 0
  end

  -- where the subtree about to be entered at level k (< inside) lies:
  -- "before" the range (skip it), "after" it (the walk ends), "inside" it
  -- or "across"
  local function place(k)
    local size = size_below(k)
    local lo = count + 1
    if lo > last then return "after" end
    if lo + size - 1 < first then return "before", size end
    if lo >= first and lo + size - 1 <= last then
      inside = k
      return "inside"
    end
    return "across"
  end

  return function()
    local k
    if started then
      k = next_at(n)
      if k == 0 then return nil end
    else
      started = true
      k = 1
    end
    while true do
      while k <= n do
        local h = hooks[k]
        if k < inside then
          local where, size = place(k)
          if where == "after" then return nil end
          if where == "before" then
            count = count + size
            k = next_at(k - 1)
            if k == 0 then return nil end
            goto next_level
          end
          if where == "across" then
            -- walked without the hook (its tag does not hold here)
            if h then tag = nil end
            h = nil
          end
        end
        if h then
          local skip
          skip, tag = h(cand, count + 1)
          if skip and (not yield_pruned or (pruned and pruned(cand, count + 1, skip, tag))) then
            -- the subtree below levels 1..k-1 is skipped
            count = count + skip
            tag = nil
            k = next_at(k - 1)
            if k == 0 then return nil end
            goto next_level
          end
        end
        do
          local list = values[k](cand)
          lists[k] = list
          local v = list[1]
          if v == nil then
            k = next_at(k - 1)
            if k == 0 then return nil end
          else
            idx[k] = 1
            local f = fields[k]
            if f then cand[f] = v else setters[k](cand, v) end
            k = k + 1
          end
        end
        ::next_level::
      end
      count = count + 1
      if not ranged or inside <= n or (count >= first and count <= last) then break end
      if count > last then return nil end
      -- a candidate before the range, in a subtree across its start
      k = next_at(n)
      if k == 0 then return nil end
    end
    return cand, count, tag
  end
end

--- The effective dimension lists, for reports: `{name = list}` of every
-- level (with defaults filled in), plus `data_parallel`.
-- @treturn table
function Space:describe()
  local out = { data_parallel = self.data_parallel }
  for _, name in ipairs(schema.dimensions) do
    out[name] = self.dims[name] and util.array(util.copy(self.dims[name]))
      or (DEFAULTS[name] ~= nil and util.array({ DEFAULTS[name] })) or nil
  end
  if not self.dims.sequence_parallel then out.sequence_parallel = "tp_degree > 1" end
  if self.data_parallel == "auto" then
    -- derived: dp x fsdp = N / (tp x cp x pp)
    out.dp_degree = self.dims.dp_degree and out.dp_degree or "auto"
    if not self.dims.fsdp_degree then out.fsdp_degree = util.array({ 1 }) end
  end
  return out
end

--- True when `s` runs Megatron's interleaved 1F1B (pp_degree > 1,
-- vpp_degree > 1, pp_schedule "1f1b"), the one schedule whose table
-- microbatch_group_size regroups (schedules.py get_schedule_table).
-- @tparam table s strategy
-- @treturn boolean
function M.interleaved_1f1b(s)
  return (s.pp_degree or 1) > 1 and (s.vpp_degree or 1) > 1 and (s.pp_schedule or "1f1b") == "1f1b"
end

--- True when strategy field `f` of `s` changes nothing because the
-- dimension it tunes is off: sequence_parallel without TP, cp_comm_type
-- without CP, reshard_after_forward without sharding, zero_stage without a
-- data-parallel group to shard over, microbatch_group_size outside the
-- interleaved 1F1B schedule.
-- @tparam table s strategy
-- @tparam string f field name
-- @treturn boolean
function M.moot(s, f)
  if f == "sequence_parallel" then return (s.tp_degree or 1) == 1 end
  if f == "cp_comm_type" then return (s.cp_degree or 1) == 1 end
  if f == "recompute_method" then return s.layer_recompute ~= "full" end
  if f == "pipeline_split" then
    -- a balanced or given partition replaces the rule
    return (s.pp_degree or 1) == 1 or s.balance_stages == true or type(s.stage_partition) == "table"
  end
  if f == "pp_schedule" then return (s.pp_degree or 1) == 1 end
  if f == "microbatch_group_size" then return not M.interleaved_1f1b(s) end
  if f == "reshard_after_forward" then return (s.fsdp_degree or 1) == 1 end
  if f == "zero_stage" then
    return (s.fsdp_degree or 1) == 1 and (s.dp_degree or 1) * (s.cp_degree or 1) == 1
  end
  return false
end

return M
