-- tests/lua/megatron_fsdp_spec.lua -- Megatron-FSDP (training.fsdp_impl =
-- "megatron_fsdp", src/core/mfsdp.c): its buffers and communication
-- hand-computed from the formulas mfsdp.c cites (Megatron-LM d98e8a64,
-- megatron/core/distributed/fsdp/src/megatron_fsdp/), and the strategies
-- Megatron-LM refuses with it.

local core = require "apsearch.core"

-- Llama-3.1-8B (examples/models/llama-3.1-8b.json)
local function llama8b(tied)
  return {
    name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
    num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
    vocab_size = 128256, tie_word_embeddings = tied or false,
  }
end

local function node8()
  return { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
end

local function training(extra)
  local t = { global_batch_size = 64, seq_length = 8192, precision = "bf16",
    framework = "megatron", fsdp_impl = "megatron_fsdp", grad_reduce_in_fp32 = false }
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end

local function close(a, b, rel)
  rel = rel or 1e-9
  return math.abs(a - b) <= rel * math.max(math.abs(a), math.abs(b), 1)
end

local h, f, a, k, d = 4096, 14336, 32, 8, 128
-- one decoder layer (a Megatron-FSDP unit, TP 1): Q and O (a d h each), K and V
-- (k d h each), the gated MLP (3 h f), two RMSNorms (h each)
local UNIT = h * (a * d + 2 * k * d) + a * d * h + 3 * h * f + 2 * h
-- outside the units: embedding and output layer (128256 is a multiple of
-- 128, Megatron's padding), the final norm
local OUTSIDE = 2 * 128256 * h + h
local PSI = 8030261248 -- Llama-3.1-8B's published parameter count
local BF16 = 2

describe("Megatron-FSDP", function()
  it("counts a layer and the rest as the model's parameters", function()
    assert.are.equal(218112000, UNIT)
    assert.are.equal(PSI, 32 * UNIT + OUTSIDE)
  end)

  it("buffers of optim_grads_params: prefetched units, the embedding and output kept, the reduce queue", function()
    local ctx = core.context(llama8b(), node8(), training())
    local e = ctx:estimate { fsdp_degree = 8, micro_batch_size = 1 }
    assert.is_nil(e.reason, e.message)
    -- suggested_communication_unit_size: max(1e9, 2 x UNIT) = 1e9 (megatron_fsdp.py:420-441)
    -- gathered: the current unit and ceil(5e8 / UNIT) = 3 prefetched (param_and_grad_buffer.py:
    -- 4487-4516), the embedding, output layer and final norm kept (l.4339-4372), in bf16
    local gathered = BF16 * ((1 + 3) * UNIT + OUTSIDE)
    -- reduce queue: floor(1e9 / UNIT) = 4 units kept, the next one queued, one filling: 6 units
    -- of bf16 main grads (l.3918-3944)
    local reducing = BF16 * 6 * UNIT
    assert.is_true(close(gathered + reducing, e.memory_breakdown.comm_buffers.fsdp),
      ("%.0f vs %.0f"):format(gathered + reducing, e.memory_breakdown.comm_buffers.fsdp))
    -- model states sharded 8 ways: bf16 weights, bf16 main grads, fp32 main weights + Adam
    assert.is_true(close(BF16 * PSI / 8, e.memory_breakdown.params))
    assert.is_true(close(BF16 * PSI / 8, e.memory_breakdown.grads))
    assert.is_true(close(12 * PSI / 8, e.memory_breakdown.optimizer_states))
    -- torch FSDP2's buffers are smaller: one unit prefetched, one unit's gradients
    local torch = core.context(llama8b(), node8(), training({ fsdp_impl = "torch_fsdp2" }))
    local et = torch:estimate { fsdp_degree = 8, micro_batch_size = 1 }
    assert.is_true(et.memory_breakdown.comm_buffers.fsdp < e.memory_breakdown.comm_buffers.fsdp)
  end)

  it("sizes the prefetch and the queue by training.suggested_communication_unit_size", function()
    local ctx = core.context(llama8b(), node8(), training({ suggested_communication_unit_size = 4e8 }))
    local e = ctx:estimate { fsdp_degree = 8, micro_batch_size = 1 }
    -- prefetch to 2e8 elements: 1 unit ahead; queue of 4e8: floor(4e8 / UNIT) = 1, + 2
    local want = BF16 * ((1 + 1) * UNIT + OUTSIDE) + BF16 * 3 * UNIT
    assert.is_true(close(want, e.memory_breakdown.comm_buffers.fsdp))
  end)

  it("caps the prefetch and the queue at the two layers of --fsdp-double-buffer's pool", function()
    local ctx = core.context(llama8b(), node8(), training({ fsdp_double_buffer = true }))
    local e = ctx:estimate { fsdp_degree = 8, micro_batch_size = 1 }
    -- two units gathered (the prefetch stops beyond the pool, param_and_grad_buffer.py:4475-4485)
    -- with the embedding and output kept; the gradient buckets of two units (l.3956-3978) with
    -- those outside units, which stay dynamic, or the queue's 6 units, whichever is fewer
    local want = BF16 * (2 * UNIT + OUTSIDE) + BF16 * math.min(6 * UNIT, 2 * UNIT + OUTSIDE)
    assert.is_true(close(want, e.memory_breakdown.comm_buffers.fsdp))
    local ok, err = pcall(core.context, llama8b(), node8(), training({ fsdp_impl = "torch_fsdp2",
      fsdp_double_buffer = true }))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("fsdp_double_buffer", 1, true))
  end)

  it("buffers of optim_grads (zero_stage 2): whole weights, the reduce queue only", function()
    local ctx = core.context(llama8b(), node8(), training({ grad_reduce_in_fp32 = true }))
    local e = ctx:estimate { dp_degree = 8, zero_stage = 2, micro_batch_size = 1, layer_recompute = "full" }
    assert.is_nil(e.reason, e.message)
    -- the default unit outside optim_grads_params is 1e9 elements: 6 units of fp32 main grads
    assert.is_true(close(4 * 6 * UNIT, e.memory_breakdown.comm_buffers.fsdp))
    assert.is_true(close(BF16 * PSI, e.memory_breakdown.params))
    assert.is_true(close(4 * PSI / 8, e.memory_breakdown.grads))
  end)

  it("gathers the units every micro-batch, forward and backward, the rest once per step", function()
    local ctx = core.context(llama8b(), node8(), training())
    local e = ctx:estimate { fsdp_degree = 8, micro_batch_size = 1 }
    local dev = core.device_preset("h100-sxm-80gb")
    -- a ring inside the node: (n - 1) / n of the bytes at the NVLink bandwidth, n - 1 hops
    local bw = dev.intra_node_bandwidth * dev.collective_efficiency
    local function ring(bytes) return 7 / 8 * bytes / bw + 7 * dev.intra_node_latency end
    local m = 64 / 8 -- micro-batches per step
    local ag = 2 * m * ring(BF16 * (PSI - OUTSIDE)) + ring(BF16 * OUTSIDE)
    assert.is_true(close(ag, e.performance_breakdown.fsdp_allgather.total, 1e-9))
    -- the gradients reduce-scattered every micro-batch in bf16 (mfsdp.py:760-781)
    assert.is_true(close(m * ring(BF16 * PSI), e.performance_breakdown.fsdp_reducescatter.total, 1e-9))
  end)

  it("holds an MoE layer's experts in its unit: buffers and collectives every micro-batch", function()
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 8, 2, 1024
    local e = core.context(moe, node8(), training()):estimate { fsdp_degree = 8, micro_batch_size = 1 }
    -- a unit: attention and two norms, the router (8 h), the 8 local experts (3 h 1024 each,
    -- ep 1) in place of the dense FFN (mcore_fsdp_adapter.py:166-173, 398-430)
    local experts = 8 * 3 * h * 1024
    local u = UNIT - 3 * h * f + 8 * h + experts
    -- U = max(1e9, 2 u) = 1e9: the current unit and ceil(5e8 / u) = 4 prefetched, the embedding,
    -- output layer and final norm kept; the reduce queue floor(1e9 / u) + 2 = 9 units, bf16
    assert.are.equal(4, math.ceil(5e8 / u))
    assert.are.equal(7, math.floor(1e9 / u))
    local want = BF16 * (5 * u + OUTSIDE) + BF16 * 9 * u
    assert.is_true(close(want, e.memory_breakdown.comm_buffers.fsdp),
      ("%.0f vs %.0f"):format(want, e.memory_breakdown.comm_buffers.fsdp))
    -- every micro-batch the units gathered forward and backward, the experts over their own
    -- expert-data-parallel group (here the same 8 ranks), the rest once per step
    local dev = core.device_preset("h100-sxm-80gb")
    local bw = dev.intra_node_bandwidth * dev.collective_efficiency
    local function ring(bytes) return 7 / 8 * bytes / bw + 7 * dev.intra_node_latency end
    local m = 64 / 8
    local layers = 32 * (u - experts)
    local ag = 2 * m * (ring(BF16 * layers) + ring(BF16 * 32 * experts)) + ring(BF16 * OUTSIDE)
    assert.is_true(close(ag, e.performance_breakdown.fsdp_allgather.total),
      ("%.6f vs %.6f"):format(ag, e.performance_breakdown.fsdp_allgather.total))
    local rs = m * (ring(BF16 * (layers + OUTSIDE)) + ring(BF16 * 32 * experts))
    assert.is_true(close(rs, e.performance_breakdown.fsdp_reducescatter.total),
      ("%.6f vs %.6f"):format(rs, e.performance_breakdown.fsdp_reducescatter.total))
    -- and not again once a step
    assert.are.equal(0, e.performance_breakdown.dp_grad_sync.total)
  end)

  it("refuses what Megatron-LM refuses, with the reason", function()
    local ctx = core.context(llama8b(), node8(), training())
    local r = ctx:estimate { fsdp_degree = 8, reshard_after_forward = false, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("optim_grads", 1, true))
    r = ctx:estimate { dp_degree = 8, zero_stage = 3, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    -- pipelines: the adapter's device mesh leaves the pipeline ranks out (mcore_fsdp_adapter.py
    -- _get_dp_tp_mesh), ZeRO-2 (optim_grads) too; the distributed optimizer runs them
    r = ctx:estimate { fsdp_degree = 4, pp_degree = 2, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("_get_dp_tp_mesh", 1, true), r.message)
    r = ctx:estimate { dp_degree = 4, zero_stage = 2, pp_degree = 2, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    r = ctx:estimate { dp_degree = 4, zero_stage = 1, pp_degree = 2, micro_batch_size = 1 }
    assert.is_nil(r.reason, r.message)
    local ok, err = pcall(core.context, llama8b(), node8(), training({ framework = "fsdp2" }))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("fsdp_impl", 1, true))
    ok, err = pcall(core.context, llama8b(), node8(), training({ suggested_communication_unit_size = 1.5 }))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("whole number of elements", 1, true))
    ok, err = pcall(core.context, llama8b(), node8(), training({ fsdp_impl = "torch_fsdp2",
      suggested_communication_unit_size = 4e8 }))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("fsdp_impl = megatron_fsdp only", 1, true))
  end)

  it("runs HSDP as distributed-optimizer instances: states over one instance, one all-reduce a step", function()
    local two = { device = "h100-sxm-80gb", num_devices = 16, devices_per_node = 8 }
    local e = core.context(llama8b(), two, training()):estimate { fsdp_degree = 8, dp_degree = 2,
      micro_batch_size = 1 }
    assert.is_nil(e.reason, e.message)
    -- every instance of 8 ranks shards as Megatron-FSDP does alone (parallel_state.py:922-1000)
    assert.is_true(close(BF16 * PSI / 8, e.memory_breakdown.params))
    assert.is_true(close(12 * PSI / 8, e.memory_breakdown.optimizer_states))
    -- the bf16 gradient shard all-reduced across the 2 instances (one rank per node: the NIC)
    -- once a step, on the last micro-batch (megatron_fsdp.py:776-786): 2 (n - 1) / n of the
    -- bytes and 2 (n - 1) hops
    local dev = core.device_preset("h100-sxm-80gb")
    local bw = dev.inter_node_bandwidth * dev.collective_efficiency
    local ar = 2 * 1 / 2 * BF16 * PSI / 8 / bw + 2 * dev.inter_node_latency
    assert.is_true(close(ar, e.performance_breakdown.hsdp_replicate_sync.total),
      ("%.6f vs %.6f"):format(ar, e.performance_breakdown.hsdp_replicate_sync.total))
    -- TorchTitan's FSDP2 all-reduces after each of the 64 / 16 = 4 micro-batches
    local t2 = training({ framework = "fsdp2" })
    t2.fsdp_impl = nil
    local tt = core.context(llama8b(), two, t2):estimate { fsdp_degree = 8, dp_degree = 2, micro_batch_size = 1 }
    assert.is_true(close(4 * ar, tt.performance_breakdown.hsdp_replicate_sync.total))
    -- ... but a pipeline stage's gradients wait for the last backward (PyTorch's stage turns the
    -- sync off until then): once a step, the largest stage's shard; its 2 replicas 4 ranks apart
    -- are in one host (NVLink)
    local tp2 = core.context(llama8b(), two, t2):estimate { fsdp_degree = 4, dp_degree = 2, pp_degree = 2,
      micro_batch_size = 1 }
    local psi = 0
    for _, st in ipairs(tp2.stages) do psi = math.max(psi, st.params) end
    local nvl = dev.intra_node_bandwidth * dev.collective_efficiency
    local ar2 = 2 * 1 / 2 * BF16 * psi / 4 / nvl + 2 * dev.intra_node_latency
    assert.is_true(close(ar2, tp2.performance_breakdown.hsdp_replicate_sync.total),
      ("%.6f vs %.6f"):format(ar2, tp2.performance_breakdown.hsdp_replicate_sync.total))
    -- --use-torch-fsdp2 shards over the whole data-parallel group: no HSDP
    local r = core.context(llama8b(), two, training({ fsdp_impl = "torch_fsdp2" }))
      :estimate { fsdp_degree = 8, dp_degree = 2, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
  end)

  it("shards HSDP's experts over one instance's expert-data-parallel ranks, and refuses them split", function()
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 8, 2, 1024
    local sixteen = { device = "h100-sxm-80gb", num_devices = 16, devices_per_node = 8 }
    local ctx = core.context(moe, sixteen, training())
    local e = ctx:estimate { fsdp_degree = 8, dp_degree = 2, ep_degree = 2, micro_batch_size = 1 }
    assert.is_nil(e.reason, e.message)
    -- 4 local experts of 3 h f per layer; the rest: attention, the router (8 h), two norms
    -- per layer, embedding, output layer and final norm
    local experts = 32 * 4 * 3 * h * 1024
    local dense = 32 * (h * (a * d + 2 * k * d) + a * d * h + 8 * h + 2 * h) + OUTSIDE
    -- expert-data-parallel 16 / 2 = 8 ranks, 4 in an instance (parallel_state.py:1447-1452)
    assert.is_true(close(12 * (dense / 8 + experts / 4), e.memory_breakdown.optimizer_states),
      ("%.0f vs %.0f"):format(12 * (dense / 8 + experts / 4), e.memory_breakdown.optimizer_states))
    -- 16 / 4 = 4 expert-data-parallel ranks do not split into 8 instances
    local r = ctx:estimate { fsdp_degree = 2, dp_degree = 8, ep_degree = 4, micro_batch_size = 1 }
    assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
    assert.truthy(r.message:find("--num-distributed-optimizer-instances 8", 1, true), r.message)
  end)

  it("runs what only --use-torch-fsdp2 refuses: tied embeddings, experts", function()
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 8, 2, 1024
    for _, case in ipairs {
      { llama8b(true), { fsdp_degree = 8, micro_batch_size = 1 }, "untie" },
      { moe, { fsdp_degree = 8, ep_degree = 2, micro_batch_size = 1 }, "expert parallelism" },
    } do
      local mf = core.context(case[1], node8(), training()):estimate(case[2])
      assert.is_nil(mf.reason, mf.message)
      local tf = core.context(case[1], node8(), training({ fsdp_impl = "torch_fsdp2" })):estimate(case[2])
      assert.are.equal("FRAMEWORK_UNSUPPORTED", tf.reason)
      assert.truthy(tf.message:find(case[3], 1, true))
    end
  end)
end)
