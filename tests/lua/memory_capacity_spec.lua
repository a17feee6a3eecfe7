-- tests/lua/memory_capacity_spec.lua -- two bounds of a stage's memory:
-- the device's capacity under a user limit on another peak, and the
-- tensors of the last model chunk (MTP) held for its own micro-batches.
local H = require "spec_helpers"
local cjson = require "cjson"

-- the estimate of an `apsearch estimate` run (exit 0, or 1: infeasible)
local function estimate(...)
  local code, out, err = H.apsearch("estimate", "--format", "json", ...)
  assert.is_true(code == 0 or code == 1, err)
  return cjson.decode(out).estimate
end

describe("a user memory limit on max reserved", function()
  local S = "fsdp_degree=8,micro_batch_size=1,layer_recompute=full"
  it("still refuses device memory in use above the capacity less the margin", function()
    local free = estimate("--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--strategy", S)
    local GiB = 2 ^ 30
    local peak, reserved = free.mem_peak / GiB, free.mem_reserved / GiB
    assert.is_true(peak - reserved > 1.0, tostring(peak - reserved)) -- context + NCCL
    -- a limit the reserved peak is under, and a margin that leaves the
    -- device less than the peak in use: 79.65 GiB capacity (h100-sxm-80gb)
    local limit = reserved + 0.5
    local margin = 79.65 - (reserved + 0.6)
    local e = estimate("--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--strategy", S,
      "--set", ("cluster.memory_limit_gib=%.3f"):format(limit),
      "--set", ("training.memory_margin_gib=%.3f"):format(margin))
    assert.is_false(e.feasible)
    assert.are.equal("MEMORY_LIMIT", e.reason)
    assert.truthy(e.message:find(("needs %.2f GiB of device memory in use > the device's 79.65 GiB less the "
      .. "margin"):format(peak), 1, true), e.message)
    -- with the margin that leaves room, the same limit holds it
    e = estimate("--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--strategy", S,
      "--set", ("cluster.memory_limit_gib=%.3f"):format(limit))
    assert.is_true(e.feasible)
  end)
end)

describe("multi-token prediction under an interleaved pipeline", function()
  -- DeepSeek-V3, PP 16: the MTP depth runs in the last model chunk, whose
  -- forward the last rank follows with its backward (one micro-batch),
  -- while the rank holds p + 1 = 17 of its first chunk at vpp 2
  local function last_stage(mtp, vpp)
    local e = estimate("--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:64",
      "--set", "training.mtp_num_layers=" .. mtp, "--strategy",
      "dp_degree=32,tp_degree=1,pp_degree=16,vpp_degree=" .. vpp ..
      ",ep_degree=8,etp_degree=1,micro_batch_size=1,layer_recompute=full,zero_stage=1")
    return e.stages[#e.stages]
  end
  it("holds the MTP layer's activations for one micro-batch, not the rank's 17", function()
    local d1 = last_stage(1, 1).memory_breakdown.activations - last_stage(0, 1).memory_breakdown.activations
    local s2 = last_stage(1, 2)
    local d2 = s2.memory_breakdown.activations - last_stage(0, 2).memory_breakdown.activations
    -- the rank holds p + 1 = 17 micro-batches of its decoder layers (the
    -- count reported), the MTP layer's kept set for one (was for 17, +41.5 GB)
    assert.are.equal(17, s2.inflight_microbatches)
    assert.is_true(d1 > 0 and d2 > 0, d1 .. " " .. d2)
    assert.is_true(d2 < 1.1 * d1, ("vpp 2 adds %.3g B, vpp 1 %.3g B"):format(d2, d1))
  end)
end)

describe("the V schedules (ZB-V, DualPipeV)", function()
  -- rank 0 runs the last model chunk (stages i and 2p - 1 - i), so the
  -- output layer, final norm and loss are its: a breaker found them
  -- charged to rank p - 1, and a plan 1.7 GiB over an H100 called "fits"
  it("charges the output layer and the loss to rank 0", function()
    local dir = H.tmpdir()
    local pol = dir .. "/v.lua"
    H.write(pol, [[return { model = "llama-3.1-8b",
      cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
      training = { global_batch_size = 64, seq_length = 8192, framework = "fsdp2" } }]])
    local e = estimate(pol, "--strategy", "pp_degree=4,vpp_degree=2,pp_schedule=dualpipev,tp_degree=1," ..
      "fsdp_degree=1,dp_degree=1,cp_degree=2,micro_batch_size=4,layer_recompute=selective," ..
      "reshard_after_forward=true,stage_partition=4:5:4:4:4:4:4:3")
    -- Llama 3.1 8B: 218,112,000 parameters a layer, 128,256 x 4,096 =
    -- 525,336,576 each for the embedding and the output layer, 4,096 the
    -- final norm.  Rank 0 holds chunks 0 and 7 (4 + 3 layers) with both
    -- ends; rank 3 chunks 3 and 4 (4 + 4 layers), the middle of the V
    assert.are.equal(7 * 218112000 + 2 * 525336576 + 4096, e.stages[1].params)
    assert.are.equal(8 * 218112000, e.stages[4].params)
    assert.is_true(e.stages[1].memory_breakdown.logits_loss > 0)
    assert.are.equal(0, e.stages[4].memory_breakdown.logits_loss)
    assert.is_false(e.feasible) -- rank 0 needs 80.37 GiB of the H100's 79.65
  end)
end)
