-- tests/lua/dist_opt_instances_spec.lua -- Megatron's partial distributed
-- optimizer (training.distributed_optimizer_instances, Megatron-LM's
-- --num-distributed-optimizer-instances at d98e8a64): the optimizer
-- sharded over one instance, the gradients reduce-scattered inside it and
-- their shard all-reduced across instances (param_and_grad_buffer.py
-- :725-760, 810-840), hand-computed from src/core/comm.c's ring formulas;
-- and what Megatron-LM refuses of it.

local core = require "apsearch.core"
local H = require "spec_helpers"

-- Llama-3.1-8B (examples/models/llama-3.1-8b.json), 8,030,261,248 parameters
local PSI = 8030261248
local function llama8b()
  return {
    name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
    num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
    vocab_size = 128256,
  }
end

-- 4 nodes of 8 H100
local function nodes4()
  return { device = "h100-sxm-80gb", num_devices = 32, devices_per_node = 8 }
end

local function training(instances)
  return { global_batch_size = 256, seq_length = 8192, precision = "bf16", framework = "megatron",
    grad_reduce_in_fp32 = false, distributed_optimizer_instances = instances }
end

local function close(a, b)
  return math.abs(a - b) <= 1e-9 * math.max(math.abs(a), math.abs(b), 1)
end

local ZERO1 = { dp_degree = 32, zero_stage = 1, micro_batch_size = 1, layer_recompute = "full" }

describe("partial distributed optimizer", function()
  it("shards the optimizer over one instance of dp / instances consecutive ranks", function()
    local one = core.context(llama8b(), nodes4(), training(0)):estimate(ZERO1)
    local four = core.context(llama8b(), nodes4(), training(4)):estimate(ZERO1)
    assert.is_nil(four.reason, four.message)
    -- fp32 main weight and Adam's two moments: 12 bytes, over 32 ranks, then over 8
    assert.is_true(close(12 * PSI / 32, one.memory_breakdown.optimizer_states))
    assert.is_true(close(12 * PSI / 8, four.memory_breakdown.optimizer_states))
    -- weights and gradients whole either way
    assert.is_true(close(one.memory_breakdown.grads, four.memory_breakdown.grads))
  end)

  it("reduce-scatters and gathers inside the instance, all-reduces the shard across instances", function()
    local e = core.context(llama8b(), nodes4(), training(4)):estimate(ZERO1)
    local dev = core.device_preset("h100-sxm-80gb")
    -- an instance is one node: a ring of 8 on NVLink, (n - 1) / n of the bytes, n - 1 hops
    local nvl = dev.intra_node_bandwidth * dev.collective_efficiency
    local rs = 7 / 8 * 2 * PSI / nvl + 7 * dev.intra_node_latency
    local ag = rs -- the bf16 parameters gathered back, the same bytes
    -- the 4 instances' rank j: one per node, each on its own NIC: 2 (n - 1) / n of the 1/8 shard
    local nic = dev.inter_node_bandwidth * dev.collective_efficiency
    local ar = 2 * 3 / 4 * 2 * PSI / 8 / nic + 2 * 3 * dev.inter_node_latency
    assert.is_true(close(rs + ag + ar, e.performance_breakdown.dp_grad_sync.total),
      ("%.6f vs %.6f"):format(rs + ag + ar, e.performance_breakdown.dp_grad_sync.total))
  end)

  it("creates the instances' NCCL communicators, the gradient-norm one over an instance", function()
    -- parallel_state.py:984-1000 (intra- and inter-instance groups) and l.1563-1577 (the
    -- intra-instance group the optimizer reduces its gradient norm over, optimizer/__init__.py:671-674):
    -- with 4 instances of 8 on 4 nodes, an 8-rank group inside a node (with NVLS buffers) and a
    -- 4-rank one across nodes more, and the gradient-norm group one node's 8 ranks, not the world's 32
    local function outside(I)
      local e = core.context(llama8b(), nodes4(), training(I)):estimate(ZERO1)
      return e.mem_peak - e.mem_reserved -- the CUDA context and NCCL's buffers
    end
    local dev = core.device_preset("h100-sxm-80gb")
    local B, nvls = dev.nccl_comm_bytes, dev.nccl_nvls_bytes_per_rank
    assert.is_true(close((B + 8 * nvls) + B + 8 * nvls, outside(4) - outside(0)))
  end)

  it("refuses what Megatron-LM refuses, with its message", function()
    local r = core.context(llama8b(), nodes4(), training(3)):estimate(ZERO1)
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("Data parallel size should be divisible by partial DistOpt shard factor", 1, true))
    r = core.context(llama8b(), nodes4(), training(4)):estimate { dp_degree = 32, zero_stage = 0,
      micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("Partial DistOpt cannot be used without DistOpt", 1, true))
    -- the experts' data-parallel ranks, 32 / 16 = 2, do not split into 4 instances
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 16, 2, 1024
    r = core.context(moe, nodes4(), training(4)):estimate { dp_degree = 32, zero_stage = 1, ep_degree = 16,
      micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("Expert data parallel size should be divisible", 1, true), r.message)
    local ok, err = pcall(core.context, llama8b(), nodes4(), { global_batch_size = 256, seq_length = 8192,
      framework = "fsdp2", distributed_optimizer_instances = 4 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("training.distributed_optimizer_instances", 1, true))
  end)

  it("searches the space the single optimizer does: full recompute folds no recompute in, no strategy twice", function()
    -- the probe of full recompute ran on a strategy without the distributed optimizer, which the
    -- instances refuse: "none" was searched beside full / auto, the same strategy twice (a breaker's
    -- round 13)
    local function space(extra)
      local args = { "run", "-q", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2", "--top-k", "4",
        "--set", "training.framework=megatron", "--format", "json" }
      for _, a in ipairs(extra) do args[#args + 1] = a end
      local code, out, err = H.apsearch(table.unpack(args))
      assert.are.equal(0, code, err)
      return require("cjson").decode(out)
    end
    local one, two = space({}), space({ "--set", "training.distributed_optimizer_instances=2" })
    assert.are.equal(one.all_candidate_summary.space_size, two.all_candidate_summary.space_size)
    -- the pairs were the same layout at the same step time, "none" and "full" of no layer
    local seen = {}
    for _, s in ipairs(two.top_k_strategies) do
      local key = table.concat({ s.dp_degree, s.tp_degree, s.pp_degree, s.vpp_degree, s.cp_degree,
        tostring(s.cp_comm_type), s.micro_batch_size, ("%.9g"):format(s.objective_value) }, " ")
      assert.is_nil(seen[key], key)
      seen[key] = true
    end
  end)

  it("shards the routed experts over one instance's expert-data-parallel ranks", function()
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 8, 2, 1024
    local e = core.context(moe, nodes4(), training(4)):estimate { dp_degree = 32, zero_stage = 1, ep_degree = 2,
      micro_batch_size = 1 }
    assert.is_nil(e.reason, e.message)
    -- 4 local experts of 3 h f per layer over 32 / 2 / 4 = 4 ranks; the rest (attention, the
    -- router, two norms per layer, embedding, output layer, final norm) over 32 / 4 = 8
    local h, f = 4096, 1024
    local experts = 32 * 4 * 3 * h * f
    local dense = 32 * (h * (32 * 128 + 2 * 8 * 128) + 32 * 128 * h + 8 * h + 2 * h) + 2 * 128256 * h + h
    local want = 12 * (dense / 8 + experts / 4)
    assert.is_true(close(want, e.memory_breakdown.optimizer_states),
      ("%.0f vs %.0f"):format(want, e.memory_breakdown.optimizer_states))
  end)
end)
