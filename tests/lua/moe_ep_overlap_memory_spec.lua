-- tests/lua/moe_ep_overlap_memory_spec.lua -- the saved activations of
-- Megatron's EP overlap (training.overlap_moe_expert_parallel_comm, the
-- combined 1F1B schedule): each step runs a layer's forward of the newer
-- micro-batch beside a layer's backward of the older, which releases its
-- saved tensors only after both (Megatron-LM d98e8a64 megatron/core/models/
-- common/model_chunk_schedule_plan.py: run(f_layer, b_layer), then
-- b_layer.release_state()), so the peak holds one layer's saved set more
-- (src/core/memory.c stage_activations, src/core/moe.c
-- aps_moe_stage_memory).  Measured: Megatron-LM pull request 6429's
-- DeepSeek-V3 proxy, 68.63 GiB allocated with the overlap against 67.09
-- without (tests/fixtures/heldout/README.md hn01, hn03).

local core = require "apsearch.core"
local H = require "spec_helpers"

describe("EP overlap", function()
  -- Qwen3-30B-A3B, every one of its 48 layers MoE, one stage, one
  -- micro-batch in flight: the activations are 48 layers' saved sets plus
  -- the final norm's and the output layer's inputs (2 x 2 bytes x 4,096
  -- tokens x 2,048); the overlap adds exactly one layer's set
  it("holds one MoE layer's saved activations more", function()
    local m = H.example_model("qwen3-30b-a3b")
    local cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
    local function activations(overlap)
      local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron", precision = "bf16",
                   dropout = false, overlap_moe_expert_parallel_comm = overlap }
      local e = core.context(m, cluster, tr):estimate({ dp_degree = 8, ep_degree = 8, micro_batch_size = 1,
                                                        moe_token_dispatcher = "alltoall" })
      return e.memory_breakdown.activations
    end
    local without, with = activations(false), activations(true)
    local layer = (without - 2 * 2 * 4096 * 2048) / 48
    assert.is_true(layer > 0)
    assert.is_true(math.abs((with - without) - layer) < 1, ("%.1f vs %.1f"):format(with - without, layer))
  end)

  it("is named on estimate's recipe line", function()
    local code, out, err = H.apsearch("estimate", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:4x8",
      "--set", "training.overlap_moe_expert_parallel_comm=true", "--strategy", "dp_degree=32,ep_degree=8,zero_stage=1")

    assert.are.equal(0, code, err)
    assert.truthy(out:gsub("\n%s+", " "):find("EP overlap on (one layer's activations more)", 1, true), out)
  end)
end)
