-- tests/lua/local_batch_spec.lua -- training.local_batch_size: TorchTitan
-- (trainer.py l.409-428 @ b5bcd76c) and NeMo AutoModel (step_scheduler.py
-- l.109-123, train_ft.py l.542-548 @ 36044ad3) run a step under pipeline
-- parallelism as passes of local_batch_size sequences per data-parallel
-- rank, each one torch.distributed.pipelining schedule, and step the
-- optimizer once.  What the estimate must make of it, from that
-- definition: a step of G passes costs G times one pass of the same
-- micro-batches (the pass's bubble, transfers and its FSDP reduction at
-- its last backward) and one optimizer step, and holds the memory of one
-- pass; under Interleaved1F1B with one round (m < 2p) FSDP keeps one model
-- chunk's unsharded fp32 gradients (schedules.py @ pytorch 1fd7abc2).

local core = require "apsearch.core"
local launch = require "apsearch.launch"
local H = require "spec_helpers"

local function llama8b()
  return { name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096, num_attention_heads = 32,
    num_query_groups = 8, ffn_hidden_size = 14336, vocab_size = 128256 }
end

local function node()
  return { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
end

local function training(framework, gbs, local_batch)
  return { global_batch_size = gbs, seq_length = 4096, precision = "bf16", framework = framework,
    local_batch_size = local_batch }
end

local function close(a, b)
  return math.abs(a - b) <= 1e-9 * math.max(math.abs(a), math.abs(b), 1)
end

-- FSDP 4 x PP 2 interleaved (2 chunks a rank), micro-batch 1
local PP = { fsdp_degree = 4, pp_degree = 2, vpp_degree = 2, micro_batch_size = 1, zero_stage = 3 }
local PP_MOE = { fsdp_degree = 4, pp_degree = 2, vpp_degree = 2, micro_batch_size = 1, zero_stage = 3,
  moe_token_dispatcher = "allgather" }

describe("training.local_batch_size", function()
  for _, fw in ipairs({ "fsdp2", "automodel" }) do
    it(fw .. ": a step of G passes is G passes of its micro-batches and one optimizer step", function()
      -- 64 sequences over 4 data-parallel ranks: 16 each, in G = 4 passes of 4
      local step = core.context(llama8b(), node(), training(fw, 64, 4)):estimate(PP)
      -- one pass alone: a step of 16 sequences, 4 per rank, one schedule
      local pass = core.context(llama8b(), node(), training(fw, 16)):estimate(PP)
      assert.is_nil(step.reason, step.message)
      assert.are.equal(16, step.micro_batch_num)
      assert.are.equal(4, step.gradient_accumulation_steps)
      assert.are.equal(1, pass.gradient_accumulation_steps)
      local opt = pass.performance_breakdown.optimizer.exposed
      assert.is_true(opt > 0)
      assert.is_true(close(4 * (pass.step_time - opt) + opt, step.step_time),
        ("%.9f vs %.9f"):format(4 * (pass.step_time - opt) + opt, step.step_time))
      for k, v in pairs(pass.performance_breakdown) do
        local g = k == "optimizer" and 1 or 4
        assert.is_true(close(g * v.total, step.performance_breakdown[k].total), k)
      end
      -- memory is one pass's
      assert.is_true(close(pass.mem_peak, step.mem_peak))
    end)
  end

  it("automodel's MoE models too: every pass gathers and reduces at its schedule's last backward", function()
    -- the launch file writes model.backend.enable_fsdp_optimizations false, which leaves PyTorch's stage
    -- backward in place (train_ft.py l.571-573, pipelining/functional.py l.985-990 @ 36044ad3): the
    -- FSDP reduction and the experts' per-micro-batch gathers once per pass, G times a step
    local moe = llama8b()
    moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = 8, 2, 2048
    local step = core.context(moe, node(), training("automodel", 64, 4)):estimate(PP_MOE)
    local pass = core.context(moe, node(), training("automodel", 16)):estimate(PP_MOE)
    local whole = core.context(moe, node(), training("automodel", 64)):estimate(PP_MOE)
    assert.is_nil(step.reason, step.message)
    local pb, sb = pass.performance_breakdown, step.performance_breakdown
    assert.is_true(pb.fsdp_allgather.total > 0 and pb.fsdp_reducescatter.total > 0)
    for k, v in pairs(pb) do
      assert.is_true(close((k == "optimizer" and 1 or 4) * v.total, sb[k].total), k)
    end
    -- passes never gather less than one schedule of the step's 16 micro-batches
    assert.is_true(sb.fsdp_allgather.total >= whole.performance_breakdown.fsdp_allgather.total)
  end)

  it("holds one model chunk's unsharded fp32 gradients under Interleaved1F1B with one round", function()
    -- m = 2 per pass < 2p = 4: each chunk's backwards run back to back and the stage's last backward
    -- reduce-scatters it; with m = 8 in one schedule (4 rounds) every chunk's accumulate
    local one_round = core.context(llama8b(), node(), training("automodel", 32, 2)):estimate(PP)
    local rounds = core.context(llama8b(), node(), training("automodel", 32)):estimate(PP)
    assert.is_nil(one_round.reason, one_round.message)
    -- a Llama-3.1-8B layer: q, o 4096^2 each, k, v 4096 x 1024 each, SwiGLU 3 x 4096 x 14336, two norms
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert.are.equal(218112000, layer)
    for i = 1, 2 do
      local st1, st4 = one_round.stages[i], rounds.stages[i]
      local psi = st1.params -- the rank's 16 layers (and embedding or output layer, final norm)
      assert.are.equal(psi, st4.params)
      -- gathered bf16 weights of the whole stage (never resharded under PP), plus fp32 gradients
      local fsdp4 = st4.memory_breakdown.comm_buffers.fsdp
      assert.is_true(close(2 * psi + 4 * psi, fsdp4), ("%.0f vs %.0f"):format(6 * psi, fsdp4))
      -- one chunk: the other chunk's 8 layers' gradients are not held
      local fsdp1 = st1.memory_breakdown.comm_buffers.fsdp
      assert.is_true(close(2 * psi + 4 * (psi - 8 * layer), fsdp1), ("%.0f vs %.0f"):format(
        2 * psi + 4 * (psi - 8 * layer), fsdp1))
    end
  end)

  it("runs PyTorch's Interleaved1F1B on any schedule its rounds divide, in groups of m / rounds", function()
    -- schedules.py @ pytorch 1fd7abc2: rounds = max(1, m // p), microbatches_per_round G = m / rounds,
    -- warm-up (v - 1) G + 2 (p - 1 - rank) chunk forwards (capped at m v); in flight, per micro-batch of
    -- the stage, one more than the warm-up over v
    local S = { pp_degree = 4, vpp_degree = 2, fsdp_degree = 2, micro_batch_size = 1, layer_recompute = "full" }
    for _, case in ipairs({ { L = 6, G = 6 }, { L = 8, G = 4 }, { L = 10, G = 5 } }) do
      local e = core.context(llama8b(), node(), training("fsdp2", 8 * case.L, case.L)):estimate(S)
      assert.is_nil(e.reason, e.message)
      for r = 0, 3 do
        local warm = math.min(case.G + 2 * (3 - r) + 1, 2 * case.L)
        assert.are.equal(warm / 2, e.stages[r + 1].inflight_microbatches, case.L .. " rank " .. r)
      end
    end
    local e = core.context(llama8b(), node(), training("fsdp2", 72, 9)):estimate(S)
    assert.are.equal("VPP_INVALID", e.reason)
    assert.truthy(e.message:find("needs the 9 micro-batches per schedule to be a multiple of its rounds, " ..
      "max(1, m // pp_degree) = 2 (PyTorch ScheduleInterleaved1F1B)", 1, true), e.message)
    e = core.context(llama8b(), node(), training("fsdp2", 24, 3)):estimate(S)
    assert.are.equal("NOT_MODELLED", e.reason)
    -- Megatron-LM's own schedule takes multiples of pp_degree only (schedules.py:1160-1180)
    local mg = { global_batch_size = 48, seq_length = 4096, precision = "bf16", framework = "megatron" }
    e = core.context(llama8b(), node(), mg):estimate { pp_degree = 4, vpp_degree = 2, dp_degree = 2,
      micro_batch_size = 4 }
    assert.are.equal("VPP_INVALID", e.reason)
  end)

  it("is refused where the frameworks refuse it", function()
    local function refused(fw, gbs, L, s, code, text)
      local r = core.context(llama8b(), node(), training(fw, gbs, L)):estimate(s)
      assert.are.equal(code, r.reason)
      assert.truthy(r.message:find(text, 1, true), r.message)
    end
    -- 24 sequences over 4 data-parallel ranks, 6 a rank: 4 does not divide them (it divides the 24)
    refused("fsdp2", 24, 4, PP, "BATCH_DIVISIBILITY", "training.local_batch_size = 4 must be a multiple of " ..
      "micro_batch_size = 1 that divides the 6 sequences a data-parallel rank takes per step")
    -- one that divides no rank's share: refused before any strategy
    local ok, err = pcall(core.context, llama8b(), node(), training("fsdp2", 64, 3))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("training.local_batch_size = 3 does not divide global_batch_size = 64", 1,
      true), tostring(err))
    refused("fsdp2", 64, 4, { fsdp_degree = 4, pp_degree = 2, vpp_degree = 2, micro_batch_size = 8 },
      "BATCH_DIVISIBILITY", "must be a multiple of micro_batch_size = 8")
    -- without PP the local batch is the micro-batch
    refused("fsdp2", 64, 4, { fsdp_degree = 8, micro_batch_size = 2 }, "BATCH_DIVISIBILITY",
      "training.local_batch_size = 4: without pipeline parallelism the local batch is the micro-batch, so " ..
      "micro_batch_size must be 4 (got 2)")
    -- AutoModel asserts a schedule of at least pp_size micro-batches (train_ft.py:547)
    refused("automodel", 64, 1, PP, "FRAMEWORK_UNSUPPORTED", "automodel: micro-batches per pipeline schedule = 1 " ..
      "< pp_degree = 2: AutoModel asserts pp_batch_size // pp_microbatch_size >= pp_size (recipes/llm/" ..
      "train_ft.py:547); raise training.local_batch_size to 2 (pp_degree x micro_batch_size) or more, or use " ..
      "fewer stages")
    refused("automodel", 4, nil, PP, "FRAMEWORK_UNSUPPORTED", "automodel: micro-batches per pipeline schedule = 1 " ..
      "< pp_degree = 2")
    -- PyTorch's Schedule1F1B refuses fewer micro-batches than stages (schedules.py @ pytorch 00722e64)
    refused("fsdp2", 64, 1, { fsdp_degree = 4, pp_degree = 2, micro_batch_size = 1 }, "FRAMEWORK_UNSUPPORTED",
      'fsdp2: PyTorch\'s Schedule1F1B raises "Number of microbatches (1) must be greater than or equal to the ' ..
      'number of stages (2)"; raise training.local_batch_size to 2')
    local ok, err = pcall(core.context, llama8b(), node(), training("megatron", 64, 4))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("training.local_batch_size: set training.framework to fsdp2 or automodel, " ..
      "or leave it out (TorchTitan's and NeMo AutoModel's passes of a step; megatron runs every micro-batch of a " ..
      "step in one schedule; got 4)", 1, true), tostring(err))
  end)

  it("is a micro-batch size the built space tries, for the strategies without pipeline parallelism", function()
    local defaults = require "apsearch.defaults"
    local dense = { num_layers = 32, hidden_size = 4096 }
    assert.are.same({ 1, 2 }, defaults.micro_batch_sizes(dense, {}))
    assert.are.same({ 1, 2 }, defaults.micro_batch_sizes(dense, { local_batch_size = 2 }))
    assert.are.same({ 1, 2, 4 }, defaults.micro_batch_sizes(dense, { local_batch_size = 4 }))
    -- Llama 3.1 8B on 8 H100 under TorchTitan, local batch 4, no PP: micro-batch 4 ranks (it was never tried)
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--set",
      "training.framework=fsdp2", "--set", "training.local_batch_size=4", "--fix", "pp=1", "--top-k", "1",
      "--format", "json")
    assert.are.equal(0, code, out)
    assert.are.equal(4, require("cjson").decode(out).top_k_strategies[1].micro_batch_size)
  end)

  it("is the micro-batch estimate --strategy takes without pipeline parallelism", function()
    -- no pp: the local batch is the one micro-batch of a pass, the only size the check accepts
    local code, out = H.apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "training.framework=fsdp2", "--set", "training.local_batch_size=2", "--strategy",
      "fsdp_degree=8,layer_recompute=full",
      "--format", "json")
    assert.are.equal(0, code, out)
    local est = require("cjson").decode(out).estimate
    assert.are.equal(2, est.strategy.micro_batch_size)
    assert.are.equal(8, est.strategy.micro_batch_num)
    assert.is_not.equal("BATCH_DIVISIBILITY", est.reason)
  end)

  it("shows a step of passes in the table as GxM, with a footnote", function()
    -- Llama 3.1 70B on 64 H100, FSDP2, global batch 256, local batch 8: at PP 4 a data-parallel rank takes
    -- 256 / dp sequences, 8 a pass, micro-batch 1 (the rows' fsdp x tp x 4 = 64 ranks)
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8", "--set",
      "training.framework=fsdp2", "--set", "training.global_batch_size=256", "--set", "training.local_batch_size=8",
      "--fix", "pp=4", "--fix", "mbs=1", "--top-k", "3", "--format", "json")
    assert.are.equal(0, code, out)
    local result = require("cjson").decode(out)
    local top = result.top_k_strategies
    -- result.csv: a column of the passes beside micro_batch_num
    local csv = require "apsearch.format.csv"
    local lines = {}
    for l in csv.format(result):gmatch("[^\n]+") do lines[#lines + 1] = l end
    local at = {}
    for i, c in ipairs(csv.columns()) do at[c] = i end
    local code2, text = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8", "--set",
      "training.framework=fsdp2", "--set", "training.global_batch_size=256", "--set", "training.local_batch_size=8",
      "--fix", "pp=4", "--fix", "mbs=1", "--top-k", "3")
    assert.are.equal(0, code2, text)
    for _, r in ipairs(top) do
      local dp = r.dp_degree * r.fsdp_degree
      local g = 256 // dp // 8
      assert.are.equal(g, r.performance_cost.gradient_accumulation_steps)
      assert.are.equal(256 // dp, r.micro_batch_num)
      assert.truthy(text:find((" %dx8 "):format(g), 1, true), text)
      local cells = {}
      for c in (lines[r.rank + 1] .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
      assert.are.equal(("%d"):format(g), cells[at.pipeline_schedules])
      assert.are.equal(("%d"):format(256 // dp), cells[at.micro_batch_num])
    end
    assert.truthy(text:find("mbn GxM: G pipeline schedules a step (training.local_batch_size), M micro-batches " ..
      "each", 1, true), text)
  end)

  it("is what the TorchTitan files write: a pass's micro-batches", function()
    local rec = { rank = 1, devices_used = 8, memory_cost = {},
      performance_cost = { gradient_accumulation_steps = 4 }, dp_degree = 1, fsdp_degree = 4, tp_degree = 1, pp_degree = 2, vpp_degree = 2, cp_degree = 1, ep_degree = 1,
      micro_batch_size = 1, micro_batch_num = 16, layer_recompute = "none", zero_stage = 3, pp_schedule = "1f1b",
      sequence_parallel = false }
    local result = { inputs = { model = llama8b(), training = training("fsdp2", 64, 4),
      cluster = { device = { name = "h100-sxm-80gb", peak_flops_bf16 = 989.4e12 }, devices_per_node = 8,
        num_devices = 8 } }, top_k_strategies = { rec },
      stage_summary = { { stages = { { num_layers = 16, recompute_layers = 0 },
        { num_layers = 16, recompute_layers = 0 } } } } }
    -- HEAD: 4 pipeline micro-batches a gradient accumulation step; 64 x 4096 / (4096 x 4 x 4) = 4 steps
    local head = require("apsearch.launch.torchtitan").render(launch.context(result, rec))
    assert.truthy(head:find("\n    config.parallelism.num_pp_microbatches = 4\n", 1, true))
    assert.truthy(head:find("\n    config.training.num_tokens_per_train_step = 262144", 1, true))
    -- the release: local_batch_size 4 of pipeline_parallel_microbatch_size 1
    local toml = require("apsearch.launch.torchtitan_toml").render(launch.context(result, rec), "v0.2.2")
    assert.truthy(toml:find("\nlocal_batch_size = 4", 1, true), toml)
    -- the header's mbn is the step's; the passes are named beside it
    assert.truthy(head:find(" mbn=16 recompute=none (4 pipeline schedules of 4 micro-batches: " ..
      "training.local_batch_size)\n", 1, true), head)
    -- Megatron-LM runs the step as one schedule: the file says it builds another job
    local _, notes = require("apsearch.launch.megatron").render(launch.context(result, rec))
    assert.are.equal("NOT EXPRESSIBLE in Megatron-LM: the estimate's 4 pipeline schedules a step of 4 micro-batches " ..
      "each (training.local_batch_size, TorchTitan's and NeMo AutoModel's passes): Megatron-LM runs the step's 16 " ..
      "micro-batches as one schedule, one bubble and one gradient reduction", launch.differences(notes)[1])
  end)
end)
