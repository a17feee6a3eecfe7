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
  -- layer's expert weights from the buffers, 6 bytes each; the dense
  -- layer's unit (fsdp_buffers) stays
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
    assert.are.equal(6 * 64 * 3 * 2048 * 768, fsdp(128) - fsdp(64))
  end)
end)
