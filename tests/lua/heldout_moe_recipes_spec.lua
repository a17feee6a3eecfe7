-- tests/lua/heldout_moe_recipes_spec.lua -- the held-out runs of
-- Megatron-LM's examples/moe_recipes (NVIDIA/Megatron-LM d48bd6be, dev
-- branch; tests/fixtures/heldout/megatron_lm_moe_recipes.csv; docs/
-- accuracy.md "Held out: Megatron-LM MoE recipes").  Checked: every row is
-- read and estimated with finite numbers, the recipe settings reach the
-- estimate, and each row's tokens/s is its README TFLOP/s over Megatron's
-- FLOPs per token.  The errors themselves are the measurement the set
-- exists for.

local core = require "apsearch.core"
local validate = require "apsearch.validate"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."
local RECIPES = ROOT .. "/tests/fixtures/heldout/megatron_lm_moe_recipes.csv"

local finite = H.finite

local function run() return H.validated(RECIPES) end

describe("held out: Megatron-LM examples/moe_recipes (d48bd6be)", function()
  it("estimates all 14 rows with finite numbers and compares each measured tokens/s", function()
    local r = run()
    assert.are.equal(14, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    for _, c in ipairs(r.cases) do
      assert.is_nil(c.error, c.case_id)
      assert.is_true(finite(c.predicted.tokens_per_s_per_gpu) and c.predicted.tokens_per_s_per_gpu > 0, c.case_id)
      assert.is_true(finite(c.predicted.step_time_s) and c.predicted.step_time_s > 0, c.case_id)
      assert.is_true(finite(c.error_pct.tokens_per_s_per_gpu), c.case_id)
    end
  end)

  it("has the columns of the Megatron-Bridge MoE file, plus the flex backend, forced balance, DP overlap and the " ..
    "offload and optimizer-moment settings", function()
    local function header(f)
      return (assert(io.open(ROOT .. "/tests/fixtures/heldout/" .. f)):read("l"):gsub("\r$", ""))
    end
    -- (less the Bridge file's own last columns, the 26.06 recipes' fused
    -- grouped MLP and model_config, which this file has last)
    local bridge = header("megatron_bridge_perf_moe.csv"):gsub(",cutedsl_fused_grouped_mlp,model_config,notes$", "")
    assert.are.equal(bridge .. ",moe_flex_dispatcher_backend,moe_router_force_load_balancing,overlap_grad_reduce," ..
      "model_config,offload_modules,exp_avg_bf16,notes", header("megatron_lm_moe_recipes.csv"))
  end)

  it("the recipes that leave --overlap-grad-reduce off expose the data-parallel sync whole", function()
    -- mlr004, mlr011-mlr013 (overlap_grad_reduce = false): training.
    -- dp_overlap = 0, so dp_grad_sync's exposed time is its total; the
    -- other rows hide part of it (the core's default 0.8 of the backward)
    local off = { mlr004 = true, mlr011 = true, mlr012 = true, mlr013 = true }
    for _, c in ipairs(run().cases) do
      local i = c.inputs
      if off[c.case_id] then
        assert.are.equal(0, i.training.dp_overlap, c.case_id)
        local e = core.context(i.model, i.cluster, i.training):estimate(i.strategy)
        local sync = e.performance_breakdown.dp_grad_sync
        assert.is_true(sync.total > 0, c.case_id)
        assert.are.equal(sync.total, sync.exposed, c.case_id)
      else
        assert.is_nil(i.training.dp_overlap, c.case_id)
      end
    end
  end)

  it("gives each row the tokens/s its README TFLOP/s is under Megatron's FLOPs count", function()
    -- scripts/megatron-flops.py runs num_floating_point_operations
    -- (training.py @ d48bd6be) on the recipes: 2.599930e11 FLOPs per token
    -- for DeepSeek-V3 with its MTP depth, 1.480348e11 for Qwen3-235B-A22B,
    -- 2.300628e10 for Qwen3-30B-A3B; apsearch's model-causal count is the
    -- same formula, so TFLOP/s x 1e12 / (its FLOPs per token) must give the
    -- row's tokens/s to the 0.1 tokens/s the file rounds to
    local megatron = { ["DeepSeek-V3"] = 2.599930e11, ["Qwen3-235B-A22B"] = 1.480348e11,
      ["Qwen3-30B-A3B"] = 2.300628e10 }
    local rows = H.by_id(validate.load(RECIPES))
    for _, c in ipairs(run().cases) do
      local i = c.inputs
      local ctx = core.context(i.model, i.cluster, i.training)
      local per_token = ctx:flops(i.strategy, "model-causal") / (i.training.global_batch_size * i.training.seq_length)
      assert.is_true(math.abs(per_token / megatron[c.model] - 1) < 1e-6, c.case_id)
      -- flops_convention unknown, as the Megatron-Bridge rows: the TFLOP/s
      -- is kept in the file, tokens/s is what validate compares
      local tflops = tonumber(rows[c.case_id].measured_tflops_per_gpu)
      assert.near(tflops * 1e12 / per_token, c.measured.tokens_per_s_per_gpu, 0.06)
    end
  end)

  it("reads the recipes' forced balance, HybridEP / DeepEP backend and pipeline layout", function()
    local by = H.by_id(run().cases)
    for _, c in ipairs(run().cases) do assert.are.equal(1.0, c.inputs.training.moe_load_imbalance, c.case_id) end
    assert.are.equal("deepep", by.mlr001.inputs.training.moe_flex_dispatcher_backend)
    assert.are.equal("hybridep", by.mlr002.inputs.training.moe_flex_dispatcher_backend)
    -- Et*4|(tttt|)*14tmL over PP 4: 16 virtual stages, 61 layers
    local s = by.mlr002.inputs.strategy
    assert.are.equal(4, s.vpp_degree)
    assert.are.same({ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1 }, s.stage_partition)
  end)
end)
