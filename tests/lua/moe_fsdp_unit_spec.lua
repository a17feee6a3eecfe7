-- tests/lua/moe_fsdp_unit_spec.lua -- the FSDP buffers of experts that
-- FSDP shards (src/core/moe.c expert_unit_buffers): TorchTitan wraps an
-- MoE layer's experts as an FSDP unit of their own (fully_shard(experts)
-- on the expert mesh), so while they run their weights are gathered in
-- bf16 and, in the backward, their gradients held unsharded in the
-- reduce dtype (fp32) before the reduce-scatter: 2 + 4 bytes an expert
-- weight of one layer.  (A class AutoModel builds through transformers,
-- one unit a decoder layer: tests/lua/models_jamba_spec.lua.)

local core = require "apsearch.core"
local H = require "spec_helpers"

describe("MoE FSDP buffers", function()
  -- Qwen3-30B-A3B on 8 B200, TorchTitan FSDP 8, no EP: halving its 128
  -- experts of 3 x 2048 x 768 removes 64 x 4,718,592 = 301,989,888 of one
  -- layer's expert weights from the buffers, 6 bytes each, and 64 x 2048
  -- of the router from the MoE layer's own unit (fsdp_buffers: gathered in
  -- bf16 beside the embedding's, the largest unit, whose gradients are the
  -- ones held unsharded)
  it("counts one layer's experts gathered and their unsharded gradients", function()
    local cluster = { device = "b200", num_devices = 8, devices_per_node = 8 }
    local function fsdp(experts)
      local m = H.example_model("qwen3-30b-a3b")
      m.num_experts = experts
      local tr = { global_batch_size = 64, seq_length = 4096, framework = "fsdp2", precision = "bf16" }
      local e = core.context(m, cluster, tr):estimate({ fsdp_degree = 8, micro_batch_size = 1,
                                                        layer_recompute = "full" })
      return e.memory_breakdown.comm_buffers.fsdp
    end
    assert.are.equal(6 * 64 * 3 * 2048 * 768 + 2 * 64 * 2048, fsdp(128) - fsdp(64))
  end)

  -- Under pipeline parallelism TorchTitan keeps a stage's FSDP units gathered
  -- and its gradients unsharded until the last micro-batch (PyTorch's pipeline
  -- stage: set_reshard_after_backward(False), set_requires_gradient_sync(False);
  -- TorchTitan's reshard_after_forward "default" is False with PP): 2 bytes
  -- of bf16 weight and 4 of fp32 gradient for every parameter the stage
  -- holds, its MoE layers' own (router, shared expert, experts), not a dense
  -- FFN's.  DeepSeek-V3 at PP 8, EP 32 over dp_shard 64 (torchtitan PR 2107's
  -- layout): the dense FFN's 18,432-wide gradients once came on top, 35 GB.
  it("holds a pipeline stage's own MoE parameters gathered with fp32 gradients under TorchTitan", function()
    local m = H.example_model("deepseek-v3")
    local cluster = { device = "h100-sxm-80gb", num_devices = 512, devices_per_node = 8 }
    local tr = { global_batch_size = 1024, seq_length = 4096, framework = "fsdp2", precision = "bf16",
                 torch_compile = true }
    -- TorchTitan's own split, the embedding and the loss a layer each (space.lua default_split)
    local e = core.context(m, cluster, tr):estimate({ fsdp_degree = 64, pp_degree = 8, vpp_degree = 2,
      ep_degree = 32, micro_batch_size = 1, layer_recompute = "full", pipeline_split = "embedding_loss" })
    assert.is_true(e.num_stages == 8, e.message)
    for i = 2, 7 do -- the stages of MoE layers alone
      local st = e.stages[i]
      assert.are.equal(6 * (st.params + st.expert_params), st.memory_breakdown.comm_buffers.fsdp)
    end
  end)
end)
