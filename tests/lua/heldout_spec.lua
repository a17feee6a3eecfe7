-- tests/lua/heldout_spec.lua -- the held-out set of NVIDIA's Megatron-Bridge
-- performance summaries (tests/fixtures/heldout/, written by
-- scripts/heldout-megatron-bridge.lua; docs/accuracy.md "Held out:
-- Megatron-Bridge performance summaries").  What is checked is that every
-- row is read and estimated with finite numbers, not how close the
-- estimates are: the errors are the measurement this set exists for.

local core = require "apsearch.core"
local validate = require "apsearch.validate"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."
local DENSE = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf.csv"
local MOE = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf_moe.csv"
local HYBRID = ROOT .. "/tests/fixtures/heldout/megatron_bridge_perf_hybrid.csv"

local by_id = H.by_id

-- the MoE file estimated once for the tests that only read the result
local moe_result
local function moe_run()
  moe_result = moe_result or validate.run(MOE)
  return moe_result
end

local finite = H.finite

local function check_finite(r)
  for _, c in ipairs(r.cases) do
    assert.is_nil(c.error, c.case_id)
    assert.is_true(finite(c.predicted.tokens_per_s_per_gpu) and c.predicted.tokens_per_s_per_gpu > 0, c.case_id)
    assert.is_true(finite(c.predicted.step_time_s) and c.predicted.step_time_s > 0, c.case_id)
    assert.is_true(finite(c.predicted.mem_gib) and c.predicted.mem_gib > 0, c.case_id)
    assert.is_true(finite(c.error_pct.tokens_per_s_per_gpu), c.case_id)
    assert.is_true(finite(c.measured.tokens_per_s_per_gpu) and c.measured.tokens_per_s_per_gpu > 0, c.case_id)
  end
end

describe("held out: Megatron-Bridge performance summaries", function()
  it("estimates all 89 dense rows (Llama 3 8B / 70B, 3.1 405B) with finite numbers", function()
    local r = validate.run(DENSE)
    assert.are.equal(89, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    assert.are.equal(89, #r.cases)
    check_finite(r)
  end)

  it("estimates all 88 MoE rows (Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3 with and without MTP)", function()
    local r = moe_run()
    assert.are.equal(88, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    check_finite(r)
  end)

  it("reads head_dim and qk_norm: Qwen3-30B-A3B counts to its published size", function()
    -- shared/models/moe/param_counts.csv: 30,532,122,624 parameters, of which
    -- q_norm and k_norm are 2 * head_dim * L = 2 * 128 * 48 = 12,288 (the
    -- qk_norm column); with hidden_size / heads = 64 instead of head_dim 128 the
    -- attention would lose L * (2*h*a*64 + 2*h*kv*64) = 48 * (2*2048*32*64 +
    -- 2*2048*4*64) = 452,984,832
    local r = moe_run()
    local qwen
    for _, c in ipairs(r.cases) do
      if c.model == "Qwen3-30B-A3B" then qwen = c break end
    end
    assert.are.equal(128, qwen.inputs.model.head_dim)
    assert.is_true(qwen.inputs.model.qk_norm)
    local p = core.model_params(qwen.inputs.model)
    assert.are.equal(30532122624, p.total)
    assert.are.equal(3353032704, p.active)
    local m = {}
    for k, v in pairs(qwen.inputs.model) do m[k] = v end
    m.head_dim = nil
    -- (and the q / k norms 64 wide: 2 * 64 * 48 fewer)
    assert.are.equal(p.total - 48 * (2 * 2048 * 32 * 64 + 2 * 2048 * 4 * 64) - 2 * 64 * 48,
      core.model_params(m).total)
  end)

  it("refuses head_dim 0 (not read as empty, which derives hidden_size / heads = 64)", function()
    local row
    for _, r in ipairs(validate.load(MOE)) do
      if r.model == "Qwen3-30B-A3B" then row = r break end
    end
    row.head_dim = "0"
    local ok, err = pcall(validate.case_inputs, row)
    assert.is_false(ok)
    assert.are.equal('head_dim = "0" is not a positive integer', err)
    row.head_dim = ""
    local model = validate.case_inputs(row)
    assert.is_nil(model.head_dim)
  end)

  it("prices the forced-balance routing of Megatron-Bridge's scripts from 25.09 on (load 1, not 1.25)", function()
    local by = by_id(moe_run().cases)
    -- mbm023: Qwen3-30B-A3B, 25.11, 8 B200, EP 8, MBS 1, dropless all-to-all;
    -- qwen3_llm_pretrain.py:47 at v0.2.0 forces the balance
    local c = by.mbm023
    assert.are.equal(1.0, c.inputs.training.moe_load_imbalance)
    assert.is_nil(c.inputs.strategy.moe_capacity_factor)
    local note
    for _, a in ipairs(c.assumed) do if a:find("moe_load_imbalance", 1, true) then note = a end end
    assert.truthy(note and note:find("qwen3_llm_pretrain.py:47", 1, true))
    -- the dispatch buffers of one layer (moe.c: 2 x bf16 row x tokens x
    -- top-k x load): 2 x (2 B x 2048) x 4096 x 8 x 1.0 = 268,435,456 B
    -- (the Switch Transformer default 1.25 gave 335,544,320)
    local est = core.context(c.inputs.model, c.inputs.cluster, c.inputs.training):estimate(c.inputs.strategy)
    assert.are.equal(2 * (2 * 2048) * 4096 * 8 * 1.0, est.memory_breakdown.comm_buffers.ep)
    -- 25.09 (r0.1.0) ran Qwen3 with token drop: capacity 1 caps the load
    -- at the balanced share the forced-balance entry (from 2025-09, for
    -- DeepSeek-V3's DeepEP runs on H100) also gives
    local t = by.mbm008
    assert.are.equal(1.0, t.inputs.strategy.moe_capacity_factor)
    assert.are.equal(1.0, t.inputs.training.moe_load_imbalance)
    -- DeepSeek-V3 (25.11, deepseek_llm_pretrain.py:43) too
    assert.are.equal(1.0, by.mbm014.inputs.training.moe_load_imbalance)
  end)

  it("takes the dispatcher the script's per-GPU function sets over the workload config's backend", function()
    -- mbm047: Qwen3-235B-A22B, 26.02.01 (v0.3.1), 256 H100: the base config
    -- names moe_flex_dispatcher_backend = deepep, qwen3_235b_a22b_pretrain_
    -- config_h100 sets moe_token_dispatcher_type = "alltoall"
    local by = by_id(validate.load(MOE))
    assert.are.equal("h100-sxm-80gb", by.mbm047.device)
    assert.are.equal("alltoall", by.mbm047.moe_token_dispatcher)
    assert.truthy(by.mbm047.notes:find("qwen3_235b_a22b_pretrain_config_h100", 1, true))
    -- the same model and release on GB200: the function sets flex
    assert.are.equal("gb200", by.mbm046.device)
    assert.are.equal("flex", by.mbm046.moe_token_dispatcher)
  end)

  it("writes the recipe's moe_a2a_overlap as overlap_moe_expert_parallel_comm, and validate prices it", function()
    -- v0.5.0 QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1: moe_a2a_overlap=True
    -- (26.06, mbm073); v0.4.2's entry (26.04.01, mbm062, same layout) has none
    local rows = by_id(validate.load(MOE))
    assert.are.equal("true", rows.mbm073.overlap_moe_expert_parallel_comm)
    assert.are.equal("", rows.mbm062.overlap_moe_expert_parallel_comm)
    local by = by_id(moe_run().cases)
    assert.is_true(by.mbm073.inputs.training.overlap_moe_expert_parallel_comm)
    assert.is_nil(by.mbm062.inputs.training.overlap_moe_expert_parallel_comm)
    -- the same layout (8 GB200, EP 8, MBS 4, flex): the overlap hides the
    -- all-to-all, so the estimate of mbm073 is faster by what it hid (less
    -- the interference the hidden part still costs)
    -- (mbm073 without its recipe's fused grouped MLP, which the next test
    -- prices: the two rows then differ in the overlap alone)
    local function est(c, drop)
      local tr = {}
      for k, v in pairs(c.inputs.training) do tr[k] = v end
      if drop then tr[drop] = nil end
      return core.context(c.inputs.model, c.inputs.cluster, tr):estimate(c.inputs.strategy)
    end
    local a, b = est(by.mbm062), est(by.mbm073, "cutedsl_fused_grouped_mlp")
    local ea, eb = a.performance_breakdown.ep_comm, b.performance_breakdown.ep_comm
    assert.are.equal(ea.total, eb.total)
    assert.are.equal(ea.total, ea.exposed)
    -- compute (6.7 s a step) far exceeds the all-to-all (1.4 s): all of it
    -- hides, exposed = APS_OVERLAP_INTERFERENCE (0.2, training.c) x total
    assert.is_true(math.abs(eb.exposed - 0.2 * eb.total) < 1e-9 * eb.total)
    assert.is_true(math.abs((a.step_time - b.step_time) - (ea.exposed - eb.exposed)) < 1e-6 * a.step_time)
  end)

  it("writes the recipes' cutedsl_fused_grouped_mlp (26.06 on), and validate prices TE's fused grouped MLP", function()
    -- v0.5.0 QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1 (26.06, mbm073):
    -- cutedsl_fused_grouped_mlp; v0.4.2's (26.04.01, mbm062) has none
    local rows = by_id(validate.load(MOE))
    assert.are.equal("true", rows.mbm073.cutedsl_fused_grouped_mlp)
    assert.are.equal("", rows.mbm062.cutedsl_fused_grouped_mlp)
    assert.is_nil(rows.mbm073.notes:find("cutedsl_fused_grouped_mlp", 1, true))
    local c = by_id(moe_run().cases).mbm073
    assert.is_true(c.inputs.training.cutedsl_fused_grouped_mlp)
    -- the experts' activation pass and MXFP8 quantizes go: faster than the
    -- same inputs without it, the GEMMs and the all-to-all unchanged
    local tr = {}
    for k, v in pairs(c.inputs.training) do tr[k] = v end
    tr.cutedsl_fused_grouped_mlp = nil
    local plain = core.context(c.inputs.model, c.inputs.cluster, tr):estimate(c.inputs.strategy)
    assert.is_true(c.predicted.step_time_s < plain.step_time)
    local ctx = core.context(c.inputs.model, c.inputs.cluster, c.inputs.training)
    assert.are.equal(plain.performance_breakdown.ep_comm.total,
      ctx:estimate(c.inputs.strategy).performance_breakdown.ep_comm.total)
  end)

  it("reads 26.04.01 at v0.4.2, the tag docs/versions1.json pairs with it (mbm060's B200 entry)", function()
    -- v0.4.2 DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2 (5acef9309, absent
    -- at v0.4.1): PP 8, VP 2, EP 32, DeepEP, moe_a2a_overlap, CUDA graphs
    -- of attn + moe_router + moe_preprocess, recompute mla_up_proj and mlp
    local row = by_id(validate.load(MOE)).mbm060
    assert.truthy(row.notes:find("DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2 at v0.4.2", 1, true))
    assert.are.equal("flex", row.moe_token_dispatcher)
    assert.are.equal("true", row.overlap_moe_expert_parallel_comm)
    assert.are.equal("attn+moe_router", row.cuda_graph_scope)
    assert.are.equal("mla_up_proj/mlp", row.recompute_modules)
    assert.is_nil(row.notes:find("ASSUMED: the tag of the same month", 1, true))
  end)
end)

describe("held out: Megatron-Bridge hybrid Mamba-2 runs (Nemotron 3 Nano and Super)", function()
  it("estimates all 50 rows: 20 Nano (fp8, MXFP8) from the example config, 30 Super from the held-out one", function()
    local r = validate.run(HYBRID)
    assert.are.equal(50, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    check_finite(r)
    local nano, super = 0, 0
    for _, c in ipairs(r.cases) do
      local m, p = c.inputs.model, c.inputs.training.precision
      if c.case_id:find("^mbh") then
        nano = nano + 1
        assert.are.equal("MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", m.hybrid_layer_pattern, c.case_id)
        assert.is_true(p == "fp8" or p == "mxfp8", c.case_id)
        assert.is_nil(c.inputs.training.first_last_layers_bf16, c.case_id)
      else
        -- set_nemotron_3_super_common_configs (v0.4.0 on) under NVFP4:
        -- first_last_layers_bf16 True, num_layers_at_end_in_bf16 14, the
        -- start MixedPrecisionConfig's default 0; MXFP8 rows state none
        local tr = c.inputs.training
        if p == "nvfp4" then
          assert.are.same({ true, 0, 14 }, { tr.first_last_layers_bf16, tr.num_layers_at_start_in_bf16,
            tr.num_layers_at_end_in_bf16 }, c.case_id)
        else
          assert.is_nil(tr.first_last_layers_bf16, c.case_id)
        end
        -- the recipe's two forward passes of the MTP block, latent MoE
        super = super + 1
        assert.are.same({ 1024, "*E", 2, true }, { m.moe_latent_size, m.mtp_layer_pattern,
          c.inputs.training.mtp_num_layers, c.inputs.training.mtp_repeated_layer }, c.case_id)
        assert.is_true(p == "nvfp4" or p == "mxfp8", c.case_id)
      end
    end
    assert.are.same({ 20, 30 }, { nano, super })
  end)

  it("has the columns of the MoE file, plus the recipe columns its rows state and model_config", function()
    local function header(f) return (assert(io.open(f)):read("l"):gsub("\r$", "")) end
    -- (the MoE file's last columns are its own: cutedsl_fused_grouped_mlp,
    -- which the hybrid rows' squared-ReLU experts keep as a note, and the
    -- DeepSeek-V3 rows' model_config, which the hybrid file has below)
    assert.are.equal(header(MOE):gsub(",cutedsl_fused_grouped_mlp,model_config,notes$", "") ..
      ",moe_flex_dispatcher_backend," ..
      "moe_router_force_load_balancing,moe_router_fusion,model_config,mtp_repeated_layer," ..
      "first_last_layers_bf16,num_layers_at_start_in_bf16,num_layers_at_end_in_bf16,notes", header(HYBRID))
  end)

  it("reads the H100 entries from their private base (EP 8, MBS 1, the recompute modules)", function()
    -- v0.3.1 NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100_FP8_CS_V1 = replace(
    -- _NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100, ...): the base name starts with
    -- an underscore
    local by = by_id(validate.load(HYBRID))
    local h = by.mbh004
    -- the H100 fp8 entry captures the Mamba mixers alone (cuda_graph_scope ["mamba"])
    assert.are.same({ "h100-sxm-80gb", "fp8", "B", "selective", "moe/layernorm/core_attn/moe_act", "true", "mamba" },
      { h.device, h.precision, h.reliability, h.layer_recompute, h.recompute_modules, h.cuda_graphs,
        h.cuda_graph_scope })
    assert.truthy(h.notes:find("NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100_FP8_CS_V1 at v0.3.1", 1, true), h.notes)
    -- Blackwell: HybridEP, the attention, Mamba and router graphs
    -- (["attn", "mamba", "moe_router", "moe_preprocess"]), the router
    -- unfused, the balance forced
    local g = by.mbh002
    assert.are.same({ "flex", "hybridep", "attn+mamba+moe_router", "false", "true", "nemotron-3-nano-30b-a3b" },
      { g.moe_token_dispatcher, g.moe_flex_dispatcher_backend, g.cuda_graph_scope, g.moe_router_fusion,
        g.moe_router_force_load_balancing, g.model_config })
  end)
end)

describe("the held-out DeepSeek-V3 runs", function()
  it("train the recipe's MTP module, and 25.09 on H100 runs DeepEP with the 1F1B overlap (run_script.py)", function()
    local r = moe_run()
    local by, mtp, without = by_id(r.cases), 0, 0
    for _, c in ipairs(r.cases) do
      if c.model == "DeepSeek-V3" then
        if c.inputs.training.mtp_num_layers == 1 then mtp = mtp + 1 else without = without + 1 end
      end
    end
    -- deepseek_v3_pretrain_config's mtp_num_layers = 1 unless the table
    -- says "w/o MTP" (25.11: four rows)
    assert.are.same({ 24, 4 }, { mtp, without })
    -- mbm011: 25.09, 1,024 H100, TP 2, PP 8, VP 4, EP 64, dropless: r0.1.0
    -- run_script.py:55-100 enables DeepEP with the forced balance,
    -- overlap_moe_expert_parallel_comm and recompute_modules mla_up_proj, mlp
    local c = by.mbm011
    assert.are.equal("h100-sxm-80gb", c.inputs.cluster.device.base)
    assert.are.same({ "flex", "mla_up_proj/mlp", 1.0 }, { c.inputs.strategy.moe_token_dispatcher,
      c.inputs.strategy.recompute_modules, c.inputs.training.moe_load_imbalance })
    assert.is_true(c.inputs.training.overlap_moe_expert_parallel_comm)
    -- its layout "Et|(tt|)*30mL": one layer, then 30 chunks of two, then
    -- MTP and the loss alone
    local sp = c.inputs.strategy.stage_partition
    assert.are.same({ 32, 1, 2, 0 }, { #sp, sp[1], sp[2], sp[32] })
  end)
end)

describe("scripts/heldout-report.sh", function()
  local h = require "spec_helpers"
  local function run(dir, ...)
    local args = {}
    for i, a in ipairs({ ... }) do args[i] = h.q(a) end
    local cmd = ("cd %s && APS_BIN=%s %s %s > out 2> err"):format(h.q(dir), h.q(h.BIN),
      h.q(h.ROOT .. "/scripts/heldout-report.sh"), table.concat(args, " "))
    local _, _, code = os.execute(cmd)
    return code, h.read(dir .. "/out") or "", h.read(dir .. "/err") or ""
  end

  it("reads a CASES path relative to where it is run", function()
    local dir = h.tmpdir()
    local lines = {}
    for line in io.lines(DENSE) do
      lines[#lines + 1] = line
      if #lines == 3 then break end
    end
    h.write(dir .. "/two.csv", table.concat(lines, "\n") .. "\n")
    local code, out, err = run(dir, "two.csv")
    assert.are.equal(0, code, err)
    -- the header and mbd001, mbd002: two runs of one release
    assert.truthy(out:find("\nall\t2\t", 1), out)
  end)

  it("groups rows whose source names no release under \"?\" (was: columns shifted, one group per error)", function()
    local dir = h.tmpdir()
    local lines = {}
    for line in io.lines(h.ROOT .. "/tests/fixtures/public_cases.csv") do
      if #lines == 0 or line:match("^c067,") or line:match("^c069,") then lines[#lines + 1] = line end
    end
    assert.are.equal(3, #lines)
    h.write(dir .. "/nemo.csv", table.concat(lines, "\n") .. "\n")
    local code, out, err = run(dir, "nemo.csv")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("\n%?/h100%-sxm%-80gb/fp8\t2\t"), out)
  end)

  it("exits 2 with one line when there is nothing to report", function()
    local dir = h.tmpdir()
    local code, out, err = run(dir, "missing.csv")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find("heldout-report.sh: " .. dir .. "/missing.csv: apsearch validate gave no report", 1, true), err)
  end)
end)
