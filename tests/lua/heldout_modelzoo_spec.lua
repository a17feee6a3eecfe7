-- tests/lua/heldout_modelzoo_spec.lua -- the held-out runs of NVIDIA's
-- Megatron-MoE-ModelZoo (tests/fixtures/heldout/megatron_moe_modelzoo.csv:
-- Qwen3-235B-A22B on H100, GB200 and GB300, 4K to 128K tokens; docs/
-- accuracy.md "Held out: Megatron-MoE-ModelZoo").  Checked: every row is
-- read and estimated with finite numbers, and the column that states
-- Megatron's --moe-router-force-load-balancing sets the load the estimate
-- prices.  The errors themselves are the measurement the set exists for.

local core = require "apsearch.core"
local validate = require "apsearch.validate"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."
local ZOO = ROOT .. "/tests/fixtures/heldout/megatron_moe_modelzoo.csv"

local finite = H.finite

local function run() return H.validated(ZOO) end

local by_id = H.by_id

describe("held out: Megatron-MoE-ModelZoo (Qwen3-235B-A22B)", function()
  it("estimates all 17 rows with finite numbers and compares each measured figure", function()
    local r = run()
    assert.are.equal(17, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    for _, c in ipairs(r.cases) do
      assert.is_nil(c.error, c.case_id)
      assert.is_true(finite(c.predicted.step_time_s) and c.predicted.step_time_s > 0, c.case_id)
      -- every row states the TFLOP/s Megatron logged (model-causal FLOPs)
      assert.is_true(finite(c.error_pct.tflops_per_gpu), c.case_id)
    end
  end)

  it("derives the tokens/s of the H100 rows from their step time (GBS x seq / step / GPUs)", function()
    local c = by_id(run().cases).mz01
    -- 2048 x 4096 / 19.7 s / 256 GPUs = 1663.4 tokens/s per GPU
    assert.are.equal(19.7, c.measured.step_time_s)
    assert.near(2048 * 4096 / 19.7 / 256, c.measured.tokens_per_s_per_gpu, 0.05)
  end)

  it("reads moe_router_force_load_balancing: true is a load of 1, false the default 1.25", function()
    local by = by_id(run().cases)
    local forced, dropless = by.mzLF16, by.mzLD16
    assert.are.equal(1.0, forced.inputs.training.moe_load_imbalance)
    assert.are.equal(0, dropless.inputs.training.moe_load_imbalance)
    -- one layer's dispatch buffers (moe.c, flex): 2 x bf16 row x tokens
    -- per TP rank (sequence parallel: 16384 / 4) x copies x load, where a
    -- token goes once to each distinct EP rank among its top-8 experts:
    -- copies = 8 ranks x (1 - P(none of a rank's 16 experts is picked)),
    -- P = prod_{i=0..7} (112 - i) / (128 - i); load 1.0 forced, 1.25
    -- (APS_MOE_LOAD_IMBALANCE) dropless
    local miss = 1
    for i = 0, 7 do miss = miss * (112 - i) / (128 - i) end
    local copies = 8 * (1 - miss)
    local function ep_buffers(c)
      local est = core.context(c.inputs.model, c.inputs.cluster, c.inputs.training):estimate(c.inputs.strategy)
      return est.memory_breakdown.comm_buffers.ep
    end
    assert.near(2 * (2 * 4096) * (16384 / 4) * copies * 1.0, ep_buffers(forced), 1)
    assert.near(2 * (2 * 4096) * (16384 / 4) * copies * 1.25, ep_buffers(dropless), 1)
  end)

  -- the GB200 MXFP8 row's note reads "activation offloading required":
  -- with its --offload-modules expert_fc1 moe_act it fits GB200's memory,
  -- without them it does not
  it("fits the GB200 MXFP8 row with its fine-grained offload, and not without it", function()
    local with = by_id(run().cases).mzGB200X
    assert.are.equal("expert_fc1/moe_act", with.inputs.training.offload_modules)
    assert.is_true(with.predicted.fits, "with the offload")
    local row
    for _, r in ipairs(validate.load(ZOO)) do if r.case_id == "mzGB200X" then row = r end end
    row.offload_modules = ""
    local without = validate.run_case(row)
    assert.is_nil(without.error)
    assert.is_false(without.predicted.fits, "without the offload")
    assert.is_true(without.predicted.mem_device_gib > with.predicted.mem_device_gib + 50)
  end)

  it("refuses a value of moe_router_force_load_balancing that is not a boolean, naming the column", function()
    local row = validate.load(ZOO)[1]
    row.moe_router_force_load_balancing = "sometimes"
    local c = validate.run_case(row)
    assert.truthy(c.error and c.error:find("moe_router_force_load_balancing", 1, true), c.error)
  end)

  it("refuses a forced balance on a row without experts, which has no router to force (it was ignored)", function()
    local row = validate.load(ZOO)[1]
    row.num_experts = ""
    row.moe_router_force_load_balancing = "true"
    local c = validate.run_case(row)
    assert.are.equal('moe_router_force_load_balancing = "true" on a model without experts (num_experts empty '
      .. 'or 0): the flag acts on the MoE router only', c.error)
    -- false states the default: a dense row may carry it
    row.moe_router_force_load_balancing = "false"
    row.ep_degree, row.num_layers, row.pp_degree, row.vpp_degree, row.pipeline_layout = "", "8", "1", "1", ""
    row.recompute_modules, row.overlap_moe_expert_parallel_comm, row.dp_degree = "", "", "128"
    row.moe_token_dispatcher = ""
    c = validate.run_case(row)
    assert.is_nil(c.error, c.error)
    assert.is_nil(c.inputs.model.num_experts)
    -- the other MoE-only columns likewise: the schema's dense values pass
    -- (ep_degree and etp_degree 1), anything else names the column
    for col, v in pairs({ ep_degree = "8", etp_degree = "2", moe_token_dispatcher = "alltoall",
                          moe_capacity_factor = "1.0" }) do
      local saved = row[col]
      row[col] = v
      c = validate.run_case(row)
      assert.truthy(c.error and c.error:find(("%s = %q on a model without experts"):format(col, v), 1, true),
        col .. ": " .. tostring(c.error))
      row[col] = saved
    end
  end)
end)

describe("held out: NVIDIA's DeepSeek-V3 GB200 optimisation series", function()
  -- tests/fixtures/heldout/megatron_dsv3_gb200_ablation.csv: five steps of
  -- one layout (docs/accuracy.md "Held out: a DeepSeek-V3 GB200
  -- optimisation series"), each changing what the host launches
  local ABL = ROOT .. "/tests/fixtures/heldout/megatron_dsv3_gb200_ablation.csv"

  it("reads each step's settings: router fusion, dispatcher, recompute modules, CUDA graph scope", function()
    local r = validate.run(ABL)
    assert.are.equal(5, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    local by = by_id(r.cases)
    assert.is_false(by.ab2.inputs.training.moe_router_fusion)
    assert.is_true(by.ab3.inputs.training.moe_router_fusion)
    assert.are.equal("alltoall", by.ab3.inputs.strategy.moe_token_dispatcher)
    assert.are.equal("flex", by.ab4.inputs.strategy.moe_token_dispatcher)
    assert.are.equal("mlp/moe_act", by.ab5.inputs.strategy.recompute_modules)
    assert.are.equal("attn+moe_router", by.ab6.inputs.training.cuda_graph_scope)
    -- 1 + 30 x 2 + 0 decoder layers over the 32 model chunks (the
    -- layout's Et|(tt|)*30L)
    local chunks = by.ab2.inputs.strategy.stage_partition
    assert.are.equal(32, #chunks)
    assert.are.same({ 1, 2, 0 }, { chunks[1], chunks[2], chunks[32] })
    for _, c in ipairs(r.cases) do
      assert.is_true(finite(c.predicted.tflops_per_gpu) and c.predicted.tflops_per_gpu > 0, c.case_id)
    end
  end)
end)

describe("a row's measured throughput from its step time or TFLOP/s", function()
  it("is the estimate's tokens/s scaled by the measured step or TFLOP/s, and calibrate fits every such row #bulk", function()
    local by = by_id(validate.run(ZOO).cases)
    -- mz01 measured tokens/s (from its step time, in the file): as given
    assert.are.equal(by.mz01.measured.tokens_per_s_per_gpu, validate.measured_throughput(by.mz01))
    -- mzLF16 measured 295 TFLOP/s only: tokens/s x 295 / the estimate's TFLOP/s
    local c = by.mzLF16
    assert.is_nil(c.measured.tokens_per_s_per_gpu)
    assert.near(c.predicted.tokens_per_s_per_gpu * 295 / c.predicted.tflops_per_gpu,
      validate.measured_throughput(c), 1e-9)
    -- a step time alone: tokens/s x the estimate's step / the measured one
    local step_only = { measured = { step_time_s = 20 }, predicted = { step_time_s = 10, tokens_per_s_per_gpu = 300 } }
    assert.are.equal(150, validate.measured_throughput(step_only))
    assert.is_nil(validate.measured_throughput({ measured = {}, predicted = { tokens_per_s_per_gpu = 1 } }))
    -- and the summary counts every row with the error it implies (the
    -- TFLOP/s one's: the same ratio)
    local s = validate.summarize(validate.run(ZOO).cases).throughput
    assert.are.equal(17, s.count)
    -- all 17 rows inform the fit (4 measured tokens/s, 13 TFLOP/s only)
    local calib = require("apsearch.calibrate").fit(ZOO, {})
    assert.are.equal(17, calib.rows)
  end)
end)
