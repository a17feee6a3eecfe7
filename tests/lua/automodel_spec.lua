-- tests/lua/automodel_spec.lua -- training.framework = "automodel", NeMo
-- AutoModel (NVIDIA-NeMo/Automodel 36044ad3), against TorchTitan's fsdp2
-- profile: the same FSDP2 model states, its deferred gradient sync, its
-- TransformerEngine workspaces, and what it refuses (src/core/profile.c,
-- check.c, moe.c, recipe.c cite the AutoModel files).
--
-- Hand-computed: Llama-3.1-8B has 8,030,261,248 parameters; its largest
-- FSDP unit is the last stage's head, 128,256 x 4,096 + the final norm's
-- 4,096 = 525,340,672 (src/core/model.c aps_largest_unit_params).
local core = require "apsearch.core"

local function llama8b()
  return {
    name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
    num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
    vocab_size = 128256, tie_word_embeddings = false,
  }
end

local function moe8()
  local m = llama8b()
  m.name, m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size = "moe8", 8, 2, 14336
  m.num_layers = 8
  return m
end

local function node(n)
  return { device = "h100-sxm-80gb", num_devices = n or 8, devices_per_node = 8 }
end

local function ctx_of(model, fw, gbs, n)
  return core.context(model, node(n), { global_batch_size = gbs or 64, seq_length = 8192,
    framework = fw, optimizer = "adamw" })
end

local PSI, UNIT = 8030261248, 525340672

local function with_dispatcher(s, d)
  local c = {}
  for k, v in pairs(s) do c[k] = v end
  c.moe_token_dispatcher = d
  return c
end

describe("framework automodel", function()
  it("keeps TorchTitan's FSDP2 model states and loss bytes", function()
    local s = { fsdp_degree = 8, micro_batch_size = 1 }
    local a = ctx_of(llama8b(), "automodel"):estimate(s).memory_breakdown
    local f = ctx_of(llama8b(), "fsdp2"):estimate(s).memory_breakdown
    -- fp32 sharded params, fp32 grads, fp32 Adam m, v: 4 + 4 + 8 over 8
    assert.are.equal(4 * PSI / 8, a.params)
    assert.are.equal(f.params, a.params)
    assert.are.equal(f.grads, a.grads)
    assert.are.equal(8 * PSI / 8, a.optimizer_states)
    assert.are.equal(f.optimizer_states, a.optimizer_states)
    -- MaskedCrossEntropy(fp32_upcast=True): 12 B per logit, b s V, one
    -- cross entropy; TorchTitan's the same bytes in 8 chunks (its
    -- ChunkedLossWrapper) plus the fp32 hidden-state gradient buffer and one
    -- chunk's bf16 gradient, (4 + 2 / 8) s b h
    assert.are.equal(12 * 8192 * 128256, a.logits_loss)
    assert.are.equal(12 * 8192 * 128256 / 8 + 4.25 * 8192 * 4096, f.logits_loss)
    -- TE linears: one cuBLAS workspace of 32 MiB + 1 KiB on Hopper
    assert.are.equal(32 * 2 ^ 20 + 1024, a.workspaces)
    assert.are.equal(0, f.workspaces)
  end)

  it("bf16_weights: 2 + 2 + 4 bytes per parameter and the step's traffic in bf16", function()
    -- AutoModel's MoE models cast themselves to bf16 (initialize_weights,
    -- models/qwen3_moe/model.py:254-268 @ 89e3a9fdd) and torch.optim keeps
    -- its moments in bf16: on FSDP 8, 8,030,261,248 x 2 / 8 = 2,007,565,312
    -- bytes of weights and of gradients, x 4 / 8 = 4,015,130,624 of Adam;
    -- the optimizer step reads and writes the weight and both moments and
    -- reads the gradient: (2 x 2 + 2 x 4 + 2) = 14 bytes per parameter of
    -- the shard (fp32 master: 24 + 4 = 28)
    local s = { fsdp_degree = 8, micro_batch_size = 1 }
    local c = core.context(llama8b(), node(), { global_batch_size = 8, seq_length = 8192,
      framework = "automodel", optimizer = "adamw", bf16_weights = true })
    local b = c:estimate(s).memory_breakdown
    assert.are.equal(PSI * 2 / 8, b.params)
    assert.are.equal(PSI * 2 / 8, b.grads)
    assert.are.equal(PSI * 4 / 8, b.optimizer_states)
    local est = c:estimate(s)
    local fp32 = ctx_of(llama8b(), "automodel", 8):estimate(s)
    assert.near(14 / 28, est.performance_breakdown.optimizer.total / fp32.performance_breakdown.optimizer.total, 1e-9)
    local ok, err = pcall(core.context, llama8b(), node(), { global_batch_size = 8, seq_length = 8192,
      framework = "fsdp2", optimizer = "adamw", bf16_weights = true })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("training.bf16_weights: NeMo AutoModel's bf16-cast models (framework "
      .. "automodel; got fsdp2)", 1, true), err)
  end)

  it("loss_fp32_upcast = false: the loss over bf16 logits, 2 + 2 + 2 bytes per logit", function()
    -- MaskedCrossEntropy(fp32_upcast=False) skips logits.float()
    -- (loss/masked_ce.py:74-83 @ 36044ad3): b s V = 8192 x 128,256 logits
    -- at 6 bytes instead of 12
    local s = { fsdp_degree = 8, micro_batch_size = 1 }
    local c = core.context(llama8b(), node(), { global_batch_size = 8, seq_length = 8192,
      framework = "automodel", optimizer = "adamw", loss_fp32_upcast = false })
    assert.are.equal(6 * 8192 * 128256, c:estimate(s).memory_breakdown.logits_loss)
    local ok, err = pcall(core.context, llama8b(), node(), { global_batch_size = 8, seq_length = 8192,
      framework = "fsdp2", optimizer = "adamw", loss_fp32_upcast = false })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("training.loss_fp32_upcast: NeMo AutoModel's MaskedCrossEntropy option "
      .. "(framework automodel; got fsdp2)", 1, true), err)
  end)

  it("holds the unsharded fp32 gradients until the last micro-batch", function()
    -- 64 sequences over 8 ranks, 1 each: 8 micro-batches
    local s = { fsdp_degree = 8, micro_batch_size = 1 }
    local a = ctx_of(llama8b(), "automodel"):estimate(s)
    local f = ctx_of(llama8b(), "fsdp2"):estimate(s)
    -- TorchTitan reduces one unit's fp32 gradient at a time, AutoModel
    -- keeps every parameter's: 4 (PSI - UNIT) bytes more
    local d = a.memory_breakdown.comm_buffers.fsdp - f.memory_breakdown.comm_buffers.fsdp
    assert.is_true(math.abs(d - 4 * (PSI - UNIT)) < 1, tostring(d))
    -- one reduce-scatter per step instead of one per micro-batch
    local ra = a.performance_breakdown.fsdp_reducescatter.total
    local rf = f.performance_breakdown.fsdp_reducescatter.total
    assert.is_true(math.abs(ra - rf / 8) <= 1e-12 * rf, ra .. " vs " .. rf)
    -- one micro-batch: nothing deferred, the same buffers
    local a1 = ctx_of(llama8b(), "automodel", 8):estimate(s)
    local f1 = ctx_of(llama8b(), "fsdp2", 8):estimate(s)
    assert.are.equal(f1.memory_breakdown.comm_buffers.fsdp, a1.memory_breakdown.comm_buffers.fsdp)
  end)

  it("defer_fsdp_grad_sync = false reduce-scatters every micro-batch, holding no unsharded gradients", function()
    -- FSDP2Config.defer_fsdp_grad_sync (AutoModel distributed/config.py:318
    -- @ 36044ad3); the 70B pre-training benchmark YAML sets it false
    -- (examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes
    -- .yaml @ 2013a4dd6): TorchTitan's buffers and reduce-scatters again
    local s = { fsdp_degree = 8, micro_batch_size = 1 }
    local function est(fw, defer)
      return core.context(llama8b(), node(), { global_batch_size = 64, seq_length = 8192,
        framework = fw, optimizer = "adamw", defer_fsdp_grad_sync = defer }):estimate(s)
    end
    local off, on, f = est("automodel", false), est("automodel", true), est("fsdp2", nil)
    assert.are.equal(f.memory_breakdown.comm_buffers.fsdp, off.memory_breakdown.comm_buffers.fsdp)
    assert.are.equal(est("automodel", nil).memory_breakdown.comm_buffers.fsdp, on.memory_breakdown.comm_buffers.fsdp)
    local d = on.memory_breakdown.comm_buffers.fsdp - off.memory_breakdown.comm_buffers.fsdp
    assert.is_true(math.abs(d - 4 * (PSI - UNIT)) < 1, tostring(d))
    local roff = off.performance_breakdown.fsdp_reducescatter.total
    local ron = on.performance_breakdown.fsdp_reducescatter.total
    assert.is_true(math.abs(ron - roff / 8) <= 1e-12 * roff, ron .. " vs " .. roff)
    -- TorchTitan has no such option: refused, not ignored
    local ok, err = pcall(function()
      return core.context(llama8b(), node(), { global_batch_size = 64, seq_length = 8192,
        framework = "fsdp2", defer_fsdp_grad_sync = false })
    end)
    assert.is_false(ok)
    assert.matches("defer_fsdp_grad_sync", tostring(err))
  end)

  it("defers the MoE layers' non-expert gradients, not the EP-owned experts'", function()
    local s = { fsdp_degree = 8, ep_degree = 8, micro_batch_size = 1 }
    local a = ctx_of(moe8(), "automodel"):estimate(with_dispatcher(s, "flex"))
    local f = ctx_of(moe8(), "fsdp2"):estimate(with_dispatcher(s, "alltoall"))
    assert.is_true(a.feasible ~= nil)
    local st = a.stages[1]
    -- edp = 8 / 8 = 1: FSDP ignores the experts (ignored_params), so only
    -- the non-expert parameters' fp32 gradients are held (stage params,
    -- which leave the routed experts to expert_params): 4 (params - UNIT)
    -- over TorchTitan's one unit
    assert.are.equal(8 * 8 / 8 * 3 * 4096 * 14336, st.expert_params)
    local d = a.memory_breakdown.comm_buffers.fsdp - f.memory_breakdown.comm_buffers.fsdp
    local want = 4 * (st.params - UNIT)
    assert.is_true(math.abs(d - want) < 1, d .. " vs " .. want)
    assert.are.equal(f.memory_breakdown.grads, a.memory_breakdown.grads)
  end)

  it("prices TorchTitan's DeepEP / HybridEP (flex) and refuses the all-gather dispatcher it lacks", function()
    -- TorchTitan's expert_parallel_comm_backend deepep since d021aa9c; models/common/config_utils.py
    -- comm_backend deepep / hybridep / standard @ b5bcd76c; no all-gather dispatcher
    local s = { fsdp_degree = 8, ep_degree = 8, micro_batch_size = 1 }
    local flex = ctx_of(moe8(), "fsdp2"):estimate(with_dispatcher(s, "flex"))
    local a2a = ctx_of(moe8(), "fsdp2"):estimate(with_dispatcher(s, "alltoall"))
    assert.is_nil(flex.reason, flex.message)
    assert.is_true(flex.step_time > 0 and flex.step_time ~= a2a.step_time)
    local ag = ctx_of(moe8(), "fsdp2"):estimate(with_dispatcher(s, "allgather"))
    assert.are.equal("FRAMEWORK_UNSUPPORTED", ag.reason)
    assert.matches("allgather is Megatron%-Core's", ag.message)
  end)

  it("holds a pipeline stage's non-expert parameters gathered, in bf16, beside their fp32 gradients", function()
    -- Under PP, AutoModel keeps every FSDP unit of the stage unsharded until
    -- the step's last backward (moe/fsdp_mixin.py patched_backward_maybe_
    -- with_nosync; moe/parallelizer.py apply_fsdp: reshard_after_forward =
    -- not pp_enabled, @ 89e3a9fdd): 2 + 4 bytes per non-expert parameter.
    -- EP 8 = FSDP 8: the experts are ignored_params, held whole in params.
    -- Qwen3-30B-A3B, stage 1 of 2: 24 layers of q 2048 x 4096, k and v
    -- 2048 x 512, o 4096 x 2048, Q/K norms 2 x 128, two norms of 2048, the
    -- router 128 x 2048, and the embedding 151,936 x 2048. (It counted the
    -- dense FFN the dense model would hold, and DeepSeek-V3 on 256 H100s,
    -- which trained, was estimated at 86.5 GiB of 80.)
    local layer = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128 + 2 * 2048 + 128 * 2048
    local psi = 24 * layer + 151936 * 2048
    assert.are.equal(770545664, psi)
    local m = require("apsearch.hf").load(os.getenv("APS_ROOT") .. "/examples/models/qwen3-30b-a3b.json")
    local e = core.context(m, node(16), { global_batch_size = 64, seq_length = 4096, framework = "automodel",
      optimizer = "adamw", bf16_weights = true }):estimate({ pp_degree = 2, fsdp_degree = 8, ep_degree = 8,
      micro_batch_size = 1, layer_recompute = "full", moe_token_dispatcher = "flex" })
    local st = e.stages[1]
    assert.are.equal(psi, st.params)
    assert.are.equal(6 * psi, st.memory_breakdown.comm_buffers.fsdp)
  end)

  it("accepts DeepEP and all-gather dispatch and EP over replicas", function()
    -- ep 8 over dp_replicate 2 x dp_shard 4 (AutoModel's moe mesh spans
    -- every non-PP rank, mesh_utils.py _create_moe_mesh)
    local c = ctx_of(moe8(), "automodel", 64, 8)
    for _, d in ipairs({ "flex", "allgather" }) do
      local e = c:estimate({ dp_degree = 2, fsdp_degree = 4, ep_degree = 8, moe_token_dispatcher = d })
      assert.are_not.equal("FRAMEWORK_UNSUPPORTED", e.reason, tostring(e.message))
      assert.are_not.equal("EP_DIVISIBILITY", e.reason, tostring(e.message))
    end
    -- TorchTitan takes EP from the sharded ranks only
    local t = ctx_of(moe8(), "fsdp2", 64, 8):estimate({ dp_degree = 2, fsdp_degree = 4, ep_degree = 8 })
    assert.are.equal("FRAMEWORK_UNSUPPORTED", t.reason)
  end)

  local function refused(model, s, pattern, n)
    local e = ctx_of(model, "automodel", 64, n or 16):estimate(s)
    assert.are.equal("FRAMEWORK_UNSUPPORTED", e.reason)
    assert.matches(pattern, e.message)
  end

  it("refuses what AutoModel cannot run, naming the file", function()
    refused(moe8(), { fsdp_degree = 16, ep_degree = 8, moe_token_dispatcher = "alltoall" },
      "^automodel: no all%-to%-all dispatcher: DeepEP / HybridEP")
    refused(moe8(), { fsdp_degree = 8, tp_degree = 2, sequence_parallel = true, ep_degree = 8,
      moe_token_dispatcher = "flex" }, "replicates its attention and router .*_resolve_moe_tp_plan")
    refused(moe8(), { fsdp_degree = 16, ep_degree = 8, etp_degree = 2, tp_degree = 1,
      moe_token_dispatcher = "flex" }, "EP%-owned")
    refused(moe8(), { fsdp_degree = 16, ep_degree = 8, moe_capacity_factor = 1.25,
      moe_token_dispatcher = "flex" }, "dropless")
    refused(moe8(), { fsdp_degree = 16, ep_degree = 1, moe_token_dispatcher = "flex" },
      "Flex token dispatcher requires TPxEP > 1")
    refused(llama8b(), { fsdp_degree = 8, cp_degree = 2, cp_comm_type = "a2a" },
      "^automodel: cp_comm_type = a2a; .*parallelizer%.py")
    refused(llama8b(), { dp_degree = 8, tp_degree = 2 },
      "^automodel: DDP .*mesh_utils%.py")
    refused(llama8b(), { dp_degree = 16, zero_stage = 1 }, "^automodel: zero_stage = 1 over DDP")
    -- replicas beside CP, PP or EP: fsdp2's dp_replicate_size would be
    -- dp_size, ddp refuses them (cp did not lift it: a breaker found it)
    refused(moe8(), { dp_degree = 4, pp_degree = 2, cp_degree = 2, ep_degree = 8, moe_token_dispatcher = "flex" },
      "^automodel: DDP %(dp_degree = 4, fsdp_degree = 1%) with tp 1, pp 2, cp 2, ep 8: strategy ddp")
    refused(llama8b(), { dp_degree = 8, cp_degree = 2 }, "^automodel: DDP .* cp 2, ep 1")
    -- dp 1 with CP: the CP ranks are the FSDP group, a zero_stage would be ignored
    refused(llama8b(), { dp_degree = 1, cp_degree = 16, zero_stage = 1 }, "^automodel: zero_stage = 1 over DDP")
    refused(llama8b(), { fsdp_degree = 4, pp_degree = 4, pipeline_split = "embedding_loss" },
      "generate_hf_model_fqn_per_model_part")
  end)

  it("refuses expert parallelism for an MoE class AutoModel builds through transformers", function()
    -- capabilities.py validate_for_mesh @ 36044ad3: ep_size > 1 needs a
    -- MoEFSDPSyncMixin, which no transformers class is
    local c = core.context(moe8(), node(16), { global_batch_size = 64, seq_length = 8192,
      framework = "automodel", optimizer = "adamw", transformers_model = true })
    local e = c:estimate({ fsdp_degree = 16, ep_degree = 8, moe_token_dispatcher = "allgather" })
    assert.are.equal("FRAMEWORK_UNSUPPORTED", e.reason)
    assert.matches("^automodel: ep_degree = 8; expert parallelism needs an MoE model of AutoModel's own " ..
      "%(MoEFSDPSyncMixin: nemo_automodel/_transformers/capabilities%.py", e.message)
    local one = c:estimate({ fsdp_degree = 16, ep_degree = 1, moe_token_dispatcher = "allgather" })
    assert.are_not.equal("FRAMEWORK_UNSUPPORTED", one.reason, tostring(one.message))
    -- the same model as AutoModel's own runs EP 8
    local own = ctx_of(moe8(), "automodel", 64, 16):estimate({ fsdp_degree = 16, ep_degree = 8,
      moe_token_dispatcher = "allgather" })
    assert.are_not.equal("FRAMEWORK_UNSUPPORTED", own.reason, tostring(own.message))
    -- elsewhere the setting is refused
    assert.has_error(function()
      core.context(llama8b(), node(8), { global_batch_size = 64, seq_length = 8192, framework = "megatron",
        transformers_model = true })
    end, "training.transformers_model: only with framework = automodel (NeMo AutoModel's fallback to the " ..
      "transformers class; got megatron)")
  end)

  it("sets transformers_model from the config's class: Mixtral yes, Qwen3-30B-A3B no", function()
    local H = require "spec_helpers"
    local function policy_of(model)
      local dir = H.tmpdir()
      local f = assert(io.open(dir .. "/p.lua", "w"))
      f:write(("return { model = %q, cluster = { device = 'h100-sxm-80gb', num_devices = 16, " ..
        "devices_per_node = 8 }, training = { framework = 'automodel', global_batch_size = 64, " ..
        "seq_length = 4096 } }"):format(model))
      f:close()
      return require("apsearch.policy").load(dir .. "/p.lua")
    end
    local mx = policy_of(os.getenv("APS_ROOT") .. "/examples/models/mixtral-8x7b.json")
    assert.is_true(mx.training.transformers_model)
    assert.are.equal("allgather", require("apsearch.space").default_dispatcher("automodel", mx.training))
    assert.is_nil(policy_of(os.getenv("APS_ROOT") .. "/examples/models/qwen3-30b-a3b.json").training.transformers_model)
    assert.are.equal("flex", require("apsearch.space").default_dispatcher("automodel", {}))
  end)

  it("pipelines a model whose layers do not divide as AutoModel splits them (fill_first), and writes it", function()
    -- DeepSeek-V3's 61 layers: the built policy's space found no feasible
    -- strategy on 256 H100s, every PP layout refused as not divisible
    local H = require "spec_helpers"
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:32", "--set",
      "training.framework=automodel", "--top-k", "1", "--quiet", "--format", "json", "--out", dir .. "/o")
    assert.are.equal(0, code, err)
    local rec = require("cjson").decode(out).top_k_strategies[1]
    assert.is_true(rec.pp_degree > 1)
    local S = rec.pp_degree * rec.vpp_degree
    assert.are.equal("fill_first", rec.pipeline_split)
    local yaml = H.read(dir .. "/o/launch/rank1_automodel.yaml")
    -- AutoModel's own split of S stages, reached through layers_per_stage
    -- (rounded to a multiple of pp where no layers_per_stage gives S)
    local lps = tonumber(yaml:match("layers_per_stage: (%d+)"))
    local v = (61 + lps - 1) // lps
    if v == S then
      assert.falsy(yaml:find("round_virtual_stages_to_pp_multiple", 1, true), yaml)
    else
      local round = yaml:match("round_virtual_stages_to_pp_multiple: (%a+)")
      assert.are.equal(S, round == "up" and v + rec.pp_degree - v % rec.pp_degree or v - v % rec.pp_degree)
    end
    assert.falsy(yaml:find("NOT EXPRESSIBLE in AutoModel: 61 layers", 1, true), yaml)
  end)

  it("takes fill_first on Megatron-LM and TorchTitan too (a layout, module_fqns_per_model_part), not on DeepSpeed", function()
    -- 32 layers over 3 stages: 11, 11, 10
    local s = { pp_degree = 3, dp_degree = 1, pipeline_split = "fill_first", micro_batch_size = 1 }
    for _, fw in ipairs({ "megatron", "fsdp2", "automodel" }) do
      local e = core.context(llama8b(), node(3), { global_batch_size = 12, seq_length = 4096, framework = fw,
        optimizer = "adamw" }):estimate(s)
      assert.is_nil(e.reason, fw .. ": " .. tostring(e.message))
      assert.are.same({ 11, 11, 10 }, { e.stages[1].num_layers, e.stages[2].num_layers, e.stages[3].num_layers }, fw)
    end
    local e = core.context(llama8b(), node(3), { global_batch_size = 12, seq_length = 4096, framework = "deepspeed",
      optimizer = "adamw" }):estimate(s)
    assert.are.equal("FRAMEWORK_UNSUPPORTED", e.reason)
    assert.truthy(e.message:find("Megatron-DeepSpeed: even, deepspeed_type", 1, true), e.message)
  end)
end)
