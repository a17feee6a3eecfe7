-- tests/lua/core_spec.lua -- the `apsearch.core` C module (src/lua/lcore.c,
-- src/lua/lconvert.c) and the CLI host (src/lua/host.c).
--
-- Run by ctest (busted with --cpath=<build>/lua/?.so), or by hand:
--   lua5.4 /usr/bin/busted --cpath='build-a/lua/?.so' tests/lua/core_spec.lua

local core = require "apsearch.core"

-- Llama-3.1-8B, shared/models/llama-3.1-8b.json.
local function llama8b()
  return {
    name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
    num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
    vocab_size = 128256, tie_word_embeddings = false,
  }
end

local function node8()
  return { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
end

local function train()
  return { global_batch_size = 64, seq_length = 8192 }
end

local function with(t, k, v)
  local c = {}
  for a, b in pairs(t) do c[a] = b end
  c[k] = v
  return c
end

-- The message of the error f(...) raises (fails the test if it does not).
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function close(a, b, rel)
  rel = rel or 1e-12
  return math.abs(a - b) <= rel * math.max(math.abs(a), math.abs(b), 1)
end

local function mem_sum(mb)
  local s = 0
  for k, v in pairs(mb) do
    if k == "comm_buffers" then s = s + v.total elseif k ~= "total" then s = s + v end
  end
  return s
end

describe("apsearch.core", function()

  describe("model_params", function()
    it("counts Llama-3.1-8B to the published parameter", function()
      local p = core.model_params(llama8b())
      assert.are.equal(8030261248, p.total)
      assert.are.equal(128256 * 4096, p.embedding)
      assert.are.equal(128256 * 4096, p.output_layer)
      assert.are.equal(4096, p.final_norm)
      -- Q + K + V + O + SwiGLU MLP + 2 RMSNorms, by hand
      local per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096
                        + 3 * 4096 * 14336 + 2 * 4096
      assert.are.equal(per_layer, p.per_layer)
      assert.are.equal(32 * per_layer, p.layers)
      assert.are.equal(p.embedding + p.layers + p.final_norm + p.output_layer, p.total)
    end)

    it("counts Llama-2-7B and Mistral-7B-v0.1 to the published parameter", function()
      local l2 = { num_layers = 32, hidden_size = 4096, num_attention_heads = 32,
                   num_query_groups = 32, ffn_hidden_size = 11008, vocab_size = 32000 }
      assert.are.equal(6738415616, core.model_params(l2).total)
      local mi = with(with(l2, "num_query_groups", 8), "ffn_hidden_size", 14336)
      assert.are.equal(7241732096, core.model_params(mi).total)
    end)

    it("drops the output layer when embeddings are tied", function()
      local p = core.model_params(with(llama8b(), "tie_word_embeddings", true))
      assert.are.equal(0, p.output_layer)
      assert.are.equal(8030261248 - 128256 * 4096, p.total)
    end)

    it("raises validation errors naming model and field", function()
      local e = err_of(core.model_params, with(llama8b(), "num_layers", 0))
      assert.matches("^model%.num_layers: ", e)
      assert.matches("%(got 0%)", e)
    end)
  end)

  describe("device presets", function()
    it("lists presets with a cited source, each loadable", function()
      local list = core.device_presets()
      assert.is_true(#list >= 5)
      for _, p in ipairs(list) do
        assert.are.equal("string", type(p.name))
        assert.is_true(#p.source > 20, p.name .. " has a source")
        local d = core.device_preset(p.name)
        assert.are.equal(p.name, d.name)
        assert.is_true(d.memory_bytes > 0)
        assert.is_true(d.peak_flops_bf16 > 0)
      end
    end)

    it("returns every device field of H100 (case-insensitive name)", function()
      local d = core.device_preset("H100-SXM-80GB")
      local fields = { "name", "memory_bytes", "peak_flops_bf16", "peak_flops_fp8",
        "peak_flops_fp32", "hbm_bandwidth", "intra_node_bandwidth",
        "inter_node_bandwidth", "intra_node_latency", "inter_node_latency",
        "cuda_context_bytes", "nccl_comm_bytes", "nccl_nvls_bytes_per_rank", "gemm_efficiency", "gemm_half_dim",
        "gemm_tile_m", "gemm_tile_n", "sm_count", "gemm_fixed_seconds",
        "fp8_gemm_efficiency", "attention_efficiency", "unfused_attention_efficiency",
        "hbm_efficiency",
        "collective_efficiency", "peak_flops_fp4", "host_bandwidth",
        "host_seconds_per_kernel", "host_seconds_per_loop_kernel", "host_seconds_per_loop_gemm",
        "gpu_seconds_per_kernel", "gpu_min_kernel_seconds", "ssd_scan_rate" }
      local n = 0
      for _ in pairs(d) do n = n + 1 end
      assert.are.equal(#fields, n)
      for _, f in ipairs(fields) do assert.is_not_nil(d[f], f) end
      assert.are.equal(3.35e12, d.hbm_bandwidth)
      -- the HTA traces' medians (src/core/presets.c APS_HOST_KERNEL_X86)
      assert.are.equal(30e-6, d.host_seconds_per_kernel)
      assert.are.equal(6e-6, d.host_seconds_per_loop_kernel)
      -- TransformerEngine PR #3134's 8 GEMMs in 0.267 ms (APS_HOST_LOOP_GEMM)
      assert.are.equal(0.267e-3 / 8, d.host_seconds_per_loop_gemm)
      -- TraceLens's H100 trace's median gap between queued kernels
      -- (APS_GPU_KERNEL_GAP_HOPPER; trace_spec measures the same trace)
      assert.are.equal(1.184e-6, d.gpu_seconds_per_kernel)
      -- HTA's A100 trace's (APS_GPU_KERNEL_GAP_AMPERE)
      assert.are.equal(3e-6, core.device_preset("a100-sxm4-80gb").gpu_seconds_per_kernel)
      -- the traces' 1st percentile of kernel durations (APS_GPU_MIN_KERNEL_*)
      assert.are.equal(1.568e-6, d.gpu_min_kernel_seconds)
      assert.are.equal(3e-6, core.device_preset("a100-sxm4-80gb").gpu_min_kernel_seconds)
    end)

    it("quotes a long bad string cut at 40 characters (lua_pushfstring takes no precision)", function()
      local long = string.rep("x", 50)
      local e = err_of(core.context, llama8b(), node8(), with(train(), "framework", long))
      assert.truthy(e:find('"' .. string.rep("x", 40) .. '..."', 1, true), e)
      -- an unknown recompute module name, cut the same way
      local ctx = core.context(llama8b(), node8(), train())
      local e2 = err_of(ctx.estimate, ctx, { layer_recompute = "selective", recompute_modules = "mlp/" .. long })
      assert.truthy(e2:find('unknown recompute module "' .. string.rep("x", 40) .. '..."', 1, true), e2)
    end)

    it("names the known presets when the name is unknown", function()
      local e = err_of(core.device_preset, "V100")
      assert.matches('unknown device preset "V100"', e, 1, true)
      assert.matches(core.device_presets()[1].name, e, 1, true)
    end)
  end)

  describe("context", function()
    local ctx
    before_each(function() ctx = core.context(llama8b(), node8(), train()) end)

    it("is a typed userdata with __name and __tostring", function()
      assert.are.equal("userdata", type(ctx))
      assert.are.equal("apsearch.context", getmetatable(ctx).__name)
      assert.matches("^apsearch%.context: Llama%-3%.1%-8B %(L=32 h=4096%), 8 x h100%-sxm%-80gb",
                     tostring(ctx))
    end)

    it("normalizes inputs and they round-trip", function()
      local inp = ctx:inputs()
      assert.are.equal(128, inp.model.head_dim)                 -- derived h/a
      assert.are.equal("swiglu", inp.model.mlp)
      assert.are.equal("rmsnorm", inp.model.norm)
      assert.are.equal("rope", inp.model.position_embedding)
      assert.are.equal("bf16", inp.training.precision)
      assert.are.equal("adam", inp.training.optimizer)
      assert.are.equal("megatron", inp.training.framework)
      assert.are.equal(64, inp.training.global_batch_size)
      assert.are.equal(8, inp.cluster.num_devices)
      assert.are.same(core.device_preset("h100-sxm-80gb"), inp.cluster.device)
      local again = core.context(inp.model, inp.cluster, inp.training)
      assert.are.same(inp, again:inputs())
      local s = { tp_degree = 2, pp_degree = 2, dp_degree = 2 }
      assert.are.equal(ctx:estimate(s).step_time, again:estimate(s).step_time)
    end)

    it("reads every enum spelling and keeps adamw as written", function()
      local c = core.context(
        with(with(with(llama8b(), "mlp", "gelu"), "norm", "layernorm"),
             "position_embedding", "alibi"),
        node8(),
        with(with(with(train(), "precision", "fp8"), "optimizer", "adamw"),
             "framework", "fsdp2"))
      local inp = c:inputs()
      assert.are.equal("gelu", inp.model.mlp)
      assert.are.equal("layernorm", inp.model.norm)
      assert.are.equal("alibi", inp.model.position_embedding)
      assert.are.equal("fp8", inp.training.precision)
      assert.are.equal("adamw", inp.training.optimizer)
      assert.are.equal("fsdp2", inp.training.framework)
      for _, fw in ipairs { "megatron", "fsdp", "deepspeed" } do
        assert.are.equal(fw, core.context(llama8b(), node8(),
          with(train(), "framework", fw)):inputs().training.framework)
      end
      assert.are.equal("sgd", core.context(llama8b(), node8(),
        with(train(), "optimizer", "sgd")):inputs().training.optimizer)
    end)

    it("accepts device = {base = preset, overrides} and a full device table", function()
      local dev = { base = "h100-sxm-80gb", memory_bytes = 40 * 2^30,
                    inter_node_bandwidth = 25e9 }
      local c = core.context(llama8b(), with(node8(), "device", dev), train())
      local d = c:inputs().cluster.device
      local h = core.device_preset("h100-sxm-80gb")
      assert.are.equal(40 * 2^30, d.memory_bytes)
      assert.are.equal(25e9, d.inter_node_bandwidth)
      assert.are.equal(h.peak_flops_bf16, d.peak_flops_bf16)
      local full = with(h, "name", "my-gpu")
      local c2 = core.context(llama8b(), with(node8(), "device", full), train())
      assert.are.same(full, c2:inputs().cluster.device)
    end)

    it("refuses a base-less device table that misses a field, naming it", function()
      local dev = core.device_preset("a100-sxm4-80gb")
      dev.hbm_bandwidth = nil
      local e = err_of(core.context, llama8b(), with(node8(), "device", dev), train())
      assert.matches("^cluster%.device%.hbm_bandwidth: missing", e)
    end)

    it("names the table and field of an unknown field", function()
      assert.matches('^model: unknown field "hidden"$',
        err_of(core.context, with(llama8b(), "hidden", 1), node8(), train()))
      assert.matches('^cluster: unknown field "gpus"$',
        err_of(core.context, llama8b(), with(node8(), "gpus", 8), train()))
      assert.matches('^cluster%.device: unknown field "hbm"$',
        err_of(core.context, llama8b(),
               with(node8(), "device", { base = "b200", hbm = 1 }), train()))
      assert.matches('^training: unknown field "batch"$',
        err_of(core.context, llama8b(), node8(), with(train(), "batch", 1)))
      assert.matches('^strategy: unknown field "tp"$', err_of(ctx.evaluate, ctx, { tp = 2 }))
      assert.matches('^strategy: unknown field "tp"$', err_of(ctx.estimate, ctx, { tp = 2 }))
      assert.matches('^strategy: unknown field "tp"$', err_of(ctx.check, ctx, "all", { tp = 2 }))
      assert.matches("^strategy: unexpected key 1", err_of(ctx.evaluate, ctx, { 2 }))
    end)

    it("refuses wrong types with the field and the value", function()
      assert.are.equal("strategy.tp_degree: expected an integer (got 2.5)",
        err_of(ctx.evaluate, ctx, { tp_degree = 2.5 }))
      assert.are.equal('strategy.pp_degree: expected an integer (got "2")',
        err_of(ctx.evaluate, ctx, { pp_degree = "2" }))
      assert.are.equal("strategy.sequence_parallel: expected a boolean (got 1)",
        err_of(ctx.evaluate, ctx, { sequence_parallel = 1 }))
      assert.are.equal(
        'strategy.layer_recompute: unknown value "some" (expected none, selective, full)',
        err_of(ctx.evaluate, ctx, { layer_recompute = "some" }))
      assert.are.equal(
        'strategy.cp_comm_type: unknown value "ring" (expected p2p, all_gather, a2a)',
        err_of(ctx.evaluate, ctx, { cp_comm_type = "ring" }))
      assert.matches("^strategy%.tp_degree: out of range",
        err_of(ctx.evaluate, ctx, { tp_degree = 1 << 40 }))
      assert.are.equal("model.hidden_size: expected an integer (got 2.5)",
        err_of(core.context, with(llama8b(), "hidden_size", 2.5), node8(), train()))
      assert.are.equal('training.precision: unknown value "fp7" (expected bf16, fp16, fp8, mxfp8, nvfp4)',
        err_of(core.context, llama8b(), node8(), with(train(), "precision", "fp7")))
      assert.are.equal("training.dp_overlap: expected a finite number (got inf)",
        err_of(core.context, llama8b(), node8(), with(train(), "dp_overlap", math.huge)))
      assert.matches("^training%.tp_overlap: expected a finite number",
        err_of(core.context, llama8b(), node8(), with(train(), "tp_overlap", 0 / 0)))
      assert.are.equal("training.flash_attention: expected a boolean (got \"yes\")",
        err_of(core.context, llama8b(), node8(), with(train(), "flash_attention", "yes")))
      assert.matches("^model%.name: longer than 63 bytes",
        err_of(core.context, with(llama8b(), "name", ("x"):rep(64)), node8(), train()))
      assert.matches("^strategy: expected a table", err_of(ctx.evaluate, ctx, "tp=2"))
    end)

    it("tells uniform recompute groups apart in the layout (they differ in memory)", function()
      local function ev(n)
        return ctx:evaluate { dp_degree = 8, layer_recompute = "full",
          recompute_method = "uniform", recompute_num_layers = n }
      end
      local g1, g2 = ev(1), ev(2)
      assert.are_not.equal(g1.mem_peak, g2.mem_peak)
      assert.are_not.equal(g1.layout, g2.layout)
      -- block recompute of every layer keeps one input per layer like groups of 1
      local all = ctx:evaluate { dp_degree = 8, layer_recompute = "full" }
      assert.are.equal(all.mem_peak, g1.mem_peak)
    end)

    it("set_cluster: the context then estimates as one made with that cluster", function()
      local s = { tp_degree = 2, dp_degree = 4 }
      local slow = with(node8(), "device", with(core.device_preset("h100-sxm-80gb"), "gemm_efficiency", 0.4))
      local c = core.context(llama8b(), node8(), train())
      local before = c:evaluate(s)
      assert.are.equal(c, c:set_cluster(slow))
      local after = c:evaluate(s)
      assert.are.same(core.context(llama8b(), slow, train()):evaluate(s), after)
      -- a lower GEMM efficiency: a longer step
      assert.is_true(after.step_time > before.step_time)
      -- a bad cluster raises as core.context does and leaves the cluster as it was
      assert.matches("^cluster%.num_devices", err_of(c.set_cluster, c, with(node8(), "num_devices", 0)))
      assert.are.same(after, c:evaluate(s))
    end)

    it("accepts integral floats for integers", function()
      local a = ctx:evaluate { tp_degree = 2.0, dp_degree = 4 }
      local b = ctx:evaluate { tp_degree = 2, dp_degree = 4 }
      assert.are.same(b, a)
    end)

    it("passes validation errors through, prefixed by the table", function()
      assert.matches("^model%.hidden_size: must be .*%(got 0%)",
        err_of(core.context, with(llama8b(), "hidden_size", 0), node8(), train()))
      assert.matches("^cluster%.num_devices: .*%(got 0%)",
        err_of(core.context, llama8b(), with(node8(), "num_devices", 0), train()))
      assert.matches("^cluster%.device%.memory_bytes: .*%(got %-1%)",
        err_of(core.context, llama8b(),
               with(node8(), "device", { base = "h100-sxm-80gb", memory_bytes = -1 }),
               train()))
      assert.matches("^training%.seq_length: .*%(got 0%)",
        err_of(core.context, llama8b(), node8(), with(train(), "seq_length", 0)))
      assert.matches("^cluster%.device: missing",
        err_of(core.context, llama8b(), { num_devices = 8, devices_per_node = 8 }, train()))
    end)

    it("estimates a mixture-of-experts model and checks its expert degrees", function()
      local moe = llama8b()
      moe.name, moe.num_experts, moe.experts_per_token, moe.moe_ffn_hidden_size = "moe8", 8, 2, 14336
      moe.num_layers = 8
      local ctx = core.context(moe, node8(), with(train(), "framework", "megatron"))
      local est = ctx:estimate({ dp_degree = 8, zero_stage = 1, ep_degree = 8 })
      -- 8 layers x 8 / 8 experts x 3 x 4096 x 14336 routed-expert weights per rank
      assert.are.equal(8 * 3 * 4096 * 14336, est.stages[1].expert_params)
      assert.is_true(est.performance_breakdown.ep_comm.total > 0)
      local bad = ctx:estimate({ dp_degree = 8, zero_stage = 1, ep_degree = 3 })
      assert.are.equal("EP_DIVISIBILITY", bad.reason)
      -- a Hugging Face key in a model table names the model field
      local e = err_of(core.context, with(llama8b(), "num_local_experts", 8), node8(), train())
      assert.matches("^model%.num_local_experts: a Hugging Face key; the model field is num_experts", e)
    end)
  end)

  describe("evaluate and estimate", function()
    local ctx
    before_each(function() ctx = core.context(llama8b(), node8(), train()) end)

    local strategies = {
      { tp_degree = 2, pp_degree = 2, dp_degree = 2 },
      { tp_degree = 8 },
      { fsdp_degree = 8, layer_recompute = "full" },
      { hsdp_shard_degree = 4, hsdp_replicate_degree = 2, layer_recompute = "selective" },
      { tp_degree = 2, pp_degree = 4, vpp_degree = 2, micro_batch_size = 1 },
      { tp_degree = 2, cp_degree = 2, dp_degree = 2, cp_comm_type = "all_gather" },
      { dp_degree = 8, micro_batch_size = 8 },               -- out of memory
      { tp_degree = 3, allow_idle_devices = true },           -- cheap check fails
      { pp_degree = 2, dp_degree = 4, stage_partition = { 20, 12 } },
    }

    it("agree on feasible, reason, step_time and mem_peak", function()
      for i, s in ipairs(strategies) do
        local r, e = ctx:evaluate(s), ctx:estimate(s)
        assert.are.equal(e.feasible, r.feasible, "strategy " .. i)
        assert.are.equal(e.reason, r.reason, "strategy " .. i)
        assert.are.equal(e.message, r.message, "strategy " .. i)
        assert.are.equal(e.step_time, r.step_time, "strategy " .. i)
        assert.are.equal(e.mem_peak, r.mem_peak, "strategy " .. i)
        assert.are.equal(e.tokens_per_s_per_gpu, r.tokens_per_s_per_gpu)
        assert.are.equal(e.mfu, r.mfu)
        assert.are.equal(e.micro_batch_num, r.micro_batch_num)
        assert.are.equal(e.worst_stage, r.worst_stage)
      end
    end)

    it("reports a feasible strategy with its numbers", function()
      local r = ctx:evaluate { tp_degree = 2, pp_degree = 2, dp_degree = 2 }
      assert.is_true(r.feasible)
      assert.is_nil(r.reason)
      assert.is_nil(r.message)
      assert.are.equal(64 / (1 * 2), r.micro_batch_num)   -- B / (b * D)
      assert.is_true(r.step_time > 0 and r.mem_peak > 0)
      assert.is_true(r.mfu > 0 and r.mfu < 1)
      assert.is_true(r.worst_stage == 1 or r.worst_stage == 2)
      assert.are.equal("integer", math.type(r.micro_batch_num))
    end)

    it("reports infeasible strategies as data with a reason code", function()
      local r = ctx:evaluate { tp_degree = 3, allow_idle_devices = true }
      assert.is_false(r.feasible)
      assert.are.equal("TP_DIVISIBILITY", r.reason)
      assert.matches("num_attention_heads", r.message)
      assert.is_nil(r.worst_stage)
      local m = ctx:evaluate { dp_degree = 8, micro_batch_size = 8 }
      assert.is_false(m.feasible)
      assert.are.equal("MEMORY_LIMIT", m.reason)
      assert.is_true(m.mem_peak > ctx:estimate({ dp_degree = 8, micro_batch_size = 8 }).mem_limit)
    end)

    it("fills and returns a reused result table, clearing stale fields", function()
      local out = {}
      assert.are.equal(out, ctx:evaluate({ tp_degree = 3, allow_idle_devices = true }, out))
      assert.are.equal("TP_DIVISIBILITY", out.reason)
      ctx:evaluate({ tp_degree = 8 }, out)
      assert.is_true(out.feasible)
      assert.is_nil(out.reason)
      assert.is_nil(out.message)
      assert.are.same(ctx:evaluate { tp_degree = 8 }, out)
    end)

    it("returns memory_breakdown totals equal to the sum of their parts", function()
      for _, s in ipairs(strategies) do
        local e = ctx:estimate(s)
        if e.num_stages > 0 then
          local mb = e.memory_breakdown
          local cb = mb.comm_buffers
          assert.is_true(close(cb.total, cb.tp + cb.fsdp + cb.dp + cb.pp + cb.cp))
          assert.is_true(close(mb.total, mem_sum(mb)))
          assert.are.equal(e.mem_peak, mb.total)
          for _, st in ipairs(e.stages) do
            assert.is_true(close(st.memory_breakdown.total, mem_sum(st.memory_breakdown)))
          end
          assert.are.same(e.stages[e.worst_stage].memory_breakdown, mb)
        end
      end
    end)

    it("has every memory and performance category", function()
      local e = ctx:estimate { tp_degree = 2, pp_degree = 2, dp_degree = 2 }
      for _, k in ipairs { "params", "grads", "optimizer_states", "activations",
                           "logits_loss", "reserved", "total" } do
        assert.are.equal("number", type(e.memory_breakdown[k]), k)
      end
      for _, k in ipairs { "tp", "fsdp", "dp", "pp", "cp", "ep", "total" } do
        assert.are.equal("number", type(e.memory_breakdown.comm_buffers[k]), k)
      end
      local cats = { "compute_fwd", "compute_bwd", "recompute", "tp_comm", "cp_comm",
        "pp_p2p", "pp_bubble", "fsdp_allgather", "fsdp_reducescatter",
        "dp_grad_sync", "hsdp_replicate_sync", "optimizer", "activation_offload", "ep_comm",
        "host_launch", "kernel_gaps" }
      local n, exposed = 0, 0
      for _ in pairs(e.performance_breakdown) do n = n + 1 end
      assert.are.equal(16, n)
      for _, k in ipairs(cats) do
        local c = e.performance_breakdown[k]
        assert.is_true(c.exposed <= c.total * (1 + 1e-12), k)
        exposed = exposed + c.exposed
      end
      assert.is_true(close(e.step_time, exposed))
      assert.are.same(cats, core.performance_categories)
      assert.is_true(e.performance_breakdown.pp_bubble.total > 0)
      assert.is_true(e.performance_breakdown.tp_comm.total > 0)
    end)

    it("returns every top-level estimate field", function()
      local e = ctx:estimate { tp_degree = 2, pp_degree = 2, dp_degree = 2 }
      for _, k in ipairs { "micro_batch_num", "devices_used", "vocab_padded",
          "params_total", "worst_stage", "mem_peak", "mem_limit", "step_time",
          "tokens_per_s", "tokens_per_s_per_gpu", "model_flops_per_step",
          "hardware_flops_per_step", "model_tflops_per_gpu", "mfu", "hfu",
          "num_stages" } do
        assert.are.equal("number", type(e[k]), k)
      end
      assert.are.equal(8, e.devices_used)
      assert.are.equal(8030261248, e.params_total)
      assert.are.equal(128256, e.vocab_padded)        -- 128256 = 128 * 1002
      assert.are.equal(2, e.num_stages)
      assert.is_true(close(e.tokens_per_s, 64 * 8192 / e.step_time))
      assert.is_true(close(e.tokens_per_s_per_gpu, e.tokens_per_s / 8))
      -- device memory minus the training default margin of 1 GiB
      assert.are.equal(core.device_preset("h100-sxm-80gb").memory_bytes - 2^30, e.mem_limit)
    end)

    it("lays out stages 1-based with 0-based contiguous layers", function()
      local e = ctx:estimate { pp_degree = 2, dp_degree = 4,
                               stage_partition = { 20, 12 },
                               layer_recompute = "full", recompute_num_layers = 4 }
      assert.are.equal(2, #e.stages)
      assert.are.same({ 1, 0, 20, 4 }, { e.stages[1].stage, e.stages[1].first_layer,
                                         e.stages[1].num_layers, e.stages[1].recompute_layers })
      assert.are.same({ 2, 20, 12, 4 }, { e.stages[2].stage, e.stages[2].first_layer,
                                          e.stages[2].num_layers, e.stages[2].recompute_layers })
      for _, st in ipairs(e.stages) do
        assert.is_true(st.params > 0 and st.time_fwd > 0 and st.time_bwd > st.time_fwd)
        assert.is_true(st.inflight_microbatches >= 1)
      end
      local per = ctx:estimate { pp_degree = 2, dp_degree = 4, layer_recompute = "full",
                                 recompute_num_layers = { 3, 5 } }
      assert.are.same({ 3, 5 }, { per.stages[1].recompute_layers, per.stages[2].recompute_layers })
      assert.are.same({ 3, 5 }, per.strategy.recompute_num_layers)
    end)

    it("returns the normalized strategy, which reproduces the result", function()
      local e = ctx:estimate { hsdp_shard_degree = 4, hsdp_replicate_degree = 2 }
      local s = e.strategy
      assert.are.equal(4, s.fsdp_degree)
      assert.are.equal(2, s.dp_degree)
      assert.is_nil(s.hsdp_shard_degree)
      assert.are.same({
        dp_degree = 2, fsdp_degree = 4, zero_stage = 0, reshard_after_forward = true,
        tp_degree = 1, sequence_parallel = true, pp_degree = 1, vpp_degree = 1,
        cp_degree = 1, cp_comm_type = "p2p", micro_batch_size = 1, micro_batch_num = 0,
        stage_partition = { 0 }, layer_offset = { 0 }, layer_recompute = "none",
        recompute_num_layers = { -1 }, allow_idle_devices = false,
        balance_stages = false, auto_recompute = false,
        recompute_method = "block", pipeline_split = "even", pp_schedule = "1f1b",
      }, s)
      assert.are.same(core.defaults("strategy"), with(with(s, "dp_degree", 1), "fsdp_degree", 1))
      local again = ctx:estimate(s)
      assert.are.equal(e.step_time, again.step_time)
      assert.are.equal(e.mem_peak, again.mem_peak)
    end)

    it("checks the arrays against pp_degree and the aliases against their fields", function()
      assert.are.equal(
        "strategy.stage_partition: length must equal pp_degree or pp_degree x vpp_degree (got 3 entries, pp_degree 2)",
        err_of(ctx.evaluate, ctx, { pp_degree = 2, stage_partition = { 10, 11, 11 } }))
      assert.matches("^strategy%.layer_offset: length must equal pp_degree",
        err_of(ctx.evaluate, ctx, { layer_offset = { 1, -1 } }))
      assert.matches("^strategy%.recompute_num_layers: length must equal pp_degree",
        err_of(ctx.evaluate, ctx, { pp_degree = 4, recompute_num_layers = { 1, 2 } }))
      assert.are.equal('strategy.stage_partition[2]: expected an integer (got 1.5)',
        err_of(ctx.evaluate, ctx, { pp_degree = 2, stage_partition = { 16, 1.5 } }))
      assert.matches("conflicts with",
        err_of(ctx.evaluate, ctx, { fsdp_degree = 2, hsdp_shard_degree = 4 }))
      assert.matches("conflicts with",
        err_of(ctx.evaluate, ctx, { dp_degree = 2, hsdp_replicate_degree = 4 }))
      -- the same value under both names is fine
      local hsdp = { fsdp_degree = 4, hsdp_shard_degree = 4,
                     hsdp_replicate_degree = 2, layer_recompute = "full" }
      -- Megatron-LM has no HSDP; TorchTitan (fsdp2) has
      assert.are.equal("FRAMEWORK_UNSUPPORTED", ctx:evaluate(hsdp).reason)
      local t2 = train()
      t2.framework = "fsdp2"
      assert.is_nil(core.context(llama8b(), node8(), t2):evaluate(hsdp).reason)
      -- given as HSDP, a replicate degree of 1 is not HSDP
      local r = ctx:evaluate { fsdp_degree = 8, hsdp_shard_degree = 8 }
      assert.are.equal("HSDP_INVALID", r.reason)
    end)

    it("runs pp_schedule on TorchTitan only, zero bubble no slower than 1F1B", function()
      local zb = { pp_degree = 2, fsdp_degree = 4, layer_recompute = "full",
                   pp_schedule = "interleaved_zero_bubble" }
      -- Megatron-LM runs (interleaved) 1F1B only
      assert.are.equal("FRAMEWORK_UNSUPPORTED", ctx:evaluate(zb).reason)
      local t2 = train()
      t2.framework = "fsdp2"
      local tt = core.context(llama8b(), node8(), t2)
      local one = tt:estimate { pp_degree = 2, fsdp_degree = 4, layer_recompute = "full" }
      local z = tt:estimate(zb)
      assert.are.equal("interleaved_zero_bubble", z.strategy.pp_schedule)
      assert.is_true(z.step_time < one.step_time)
      -- W keeps activations to its own time: more in flight on the last rank
      assert.is_true(z.stages[2].inflight_microbatches > one.stages[2].inflight_microbatches)
      local v = tt:evaluate { pp_degree = 2, fsdp_degree = 4, pp_schedule = "zbv_zero_bubble" }
      assert.are.equal("VPP_INVALID", v.reason)
    end)

    it("runs DualPipeV on TorchTitan: the V, two chunks a rank, m >= 2p, p + 1/2 sets in flight", function()
      local dv = { pp_degree = 2, vpp_degree = 2, fsdp_degree = 4, layer_recompute = "full",
                   pp_schedule = "dualpipev" }
      local r = ctx:evaluate(dv)
      assert.are.equal("FRAMEWORK_UNSUPPORTED", r.reason)
      assert.matches("pp_schedule = dualpipev is not offered", r.message, 1, true)
      local t2 = train()
      t2.framework = "fsdp2"
      local tt = core.context(llama8b(), node8(), t2)
      local one = tt:evaluate(with(dv, "vpp_degree", 1))
      assert.are.equal("VPP_INVALID", one.reason)
      assert.matches("needs vpp_degree = 2", one.message, 1, true)
      -- 64 sequences over fsdp 4 with micro-batches of 16: m = 1 < 2p = 4
      local few = tt:evaluate(with(dv, "micro_batch_size", 16))
      assert.are.equal("VPP_INVALID", few.reason)
      assert.are.equal("pp_schedule = dualpipev needs micro_batch_num = 1 >= its 2 x pp_degree = 4 stages " ..
        "(PyTorch ScheduleDualPipeV)", few.message)
      local e = tt:estimate(dv)
      assert.is_true(e.feasible)
      assert.are.equal("dualpipev", e.strategy.pp_schedule)
      -- 2p + 1 = 5 chunk sets of the 2 a rank holds at the peak, every rank
      -- (tests/c/test_schedule.c test_dualpipev_p2; the even split: equal chunks)
      assert.are.equal(2.5, e.stages[1].inflight_microbatches)
      assert.are.equal(2.5, e.stages[2].inflight_microbatches)
    end)

    it("places the chunks of ZB-V and DualPipeV on the V", function()
      -- embedding_loss: L + 2 = 34 units over 4 chunks, 9 9 8 8, the first
      -- and the last one fewer: 8 9 8 7.  Looped (1F1B), rank 0 holds
      -- chunks 0 and 2 (16), rank 1 chunks 1 and 3 (16); on the V rank 0
      -- holds 0 and 3 (15), rank 1 holds 1 and 2 (17).
      local t2 = train()
      t2.framework = "fsdp2"
      local tt = core.context(llama8b(), node8(), t2)
      local s = { pp_degree = 2, vpp_degree = 2, fsdp_degree = 4, layer_recompute = "full",
                  pipeline_split = "embedding_loss" }
      local function layers(e) return { e.stages[1].num_layers, e.stages[2].num_layers } end
      assert.are.same({ 16, 16 }, layers(tt:estimate(s)))
      assert.are.same({ 15, 17 }, layers(tt:estimate(with(s, "pp_schedule", "zbv_zero_bubble"))))
      assert.are.same({ 15, 17 }, layers(tt:estimate(with(s, "pp_schedule", "dualpipev"))))
      assert.are.same({ 8, 9, 8, 7 }, core.chunk_layers(32, with(s, "pp_schedule", "dualpipev")))
    end)

    it("returns the simulated timeline: every op in order, the bubble the estimate prices", function()
      local t2 = train()
      t2.framework = "fsdp2"
      local tt = core.context(llama8b(), node8(), t2)
      local s = { pp_degree = 2, fsdp_degree = 4, layer_recompute = "full" }
      local e = tt:estimate(s)
      local tl = tt:timeline(s, 1000)
      -- m = 64 / 4 = 16 micro-batches, 1F1B: 2 m ops a rank, all kept
      assert.are.equal(16, tl.micro_batch_num)
      assert.are.equal(64, tl.ops)
      assert.are.equal(64, tl.ops_kept)
      assert.are.same({ { 0, tl.step } }, tl.windows)
      -- the pipeline bubble of the estimate is the step less m (t_f + t_b)
      -- of its slowest stage (estimate.c)
      local slow = 0
      for _, st in ipairs(e.stages) do slow = math.max(slow, st.time_fwd + st.time_bwd) end
      assert.is_true(close(e.performance_breakdown.pp_bubble.exposed, tl.step - 16 * slow, 1e-12))
      for i, r in ipairs(tl.ranks) do
        assert.are.equal(i, r.rank)
        assert.are.equal(32, #r.events)
        local busy, last = 0, 0
        for q, ev in ipairs(r.events) do
          assert.is_true(ev.start >= last - 1e-12)   -- one op at a time, in order
          busy = busy + (ev["end"] - ev.start)
          last = ev["end"]
          assert.are.equal(i, ev.stage)
          if q == 1 then assert.are.same({ "F", 1, 1 }, { ev.kind, ev.mb, ev.chunk }) end
        end
        assert.is_true(close(r.busy, busy, 1e-12))
        -- 1F1B: rank i runs p - i - 1 warm-up forwards, then one F and one B
        assert.are.equal(i == 1 and "F" or "B", r.events[2].kind)
        assert.are.equal("B", r.events[32].kind)
      end
      assert.is_true(close(tl.bubble, tl.step - tl.busy_max, 1e-12))
      -- a small budget: the fill and the drain, at most half each
      local cut = tt:timeline(s, 20)
      assert.are.equal(2, #cut.windows)
      assert.is_true(cut.ops_kept <= 20)
      assert.are.equal(64, cut.ops)
      -- nothing simulated
      local none, code, msg = tt:timeline({ fsdp_degree = 8 }, 100)
      assert.is_nil(none)
      assert.are.equal("NO_PIPELINE", code)
      assert.are.equal("pp_degree = 1: no pipeline schedule", msg)
      local _, code2 = tt:timeline({ pp_degree = 2, fsdp_degree = 4, tp_degree = 3 }, 100)
      assert.are.equal("TP_DIVISIBILITY", code2)
      assert.are.equal("timeline: max_ops must be in [2, 65536] (got 1)", err_of(tt.timeline, tt, s, 1))
    end)

    it("turns a bad layer_offset into a PP_PARTITION reason", function()
      local r = ctx:evaluate { pp_degree = 2, dp_degree = 4, layer_offset = { 2, 0 } }
      assert.is_false(r.feasible)
      assert.are.equal("PP_PARTITION", r.reason)
      local ok = ctx:estimate { pp_degree = 2, dp_degree = 4, layer_offset = { 2, -2 } }
      assert.are.same({ 18, 14 }, { ok.stages[1].num_layers, ok.stages[2].num_layers })
    end)
  end)

  describe("check", function()
    local ctx
    before_each(function() ctx = core.context(llama8b(), node8(), train()) end)

    it("returns TP_DIVISIBILITY for tp 3 with 32 heads", function()
      local ok, code, msg = ctx:check("tp", { tp_degree = 3 })
      assert.is_false(ok)
      assert.are.equal("TP_DIVISIBILITY", code)
      assert.matches("32", msg)
      assert.matches("3", msg)
      assert.are.equal("TP_DIVISIBILITY",
        select(2, ctx:check("all", { tp_degree = 3, allow_idle_devices = true })))
    end)

    it("formats no message when asked not to (with_message false)", function()
      assert.are.same({ false, "TP_DIVISIBILITY" }, { ctx:check("tp", { tp_degree = 3 }, false) })
      assert.are.same({ false, "CP_DIVISIBILITY" },
        { ctx:check("all", { cp_degree = 3, allow_idle_devices = true }, false) })
      assert.are.same({ true }, { ctx:check("tp", { tp_degree = 8 }, false) })
      -- true (or nil) keeps the message
      assert.are.equal(3, select("#", ctx:check("tp", { tp_degree = 3 }, true)))
    end)

    it("returns true alone for a passing check", function()
      assert.are.same({ true }, { ctx:check("tp", { tp_degree = 8 }) })
      assert.are.same({ true }, { ctx:check("all", { tp_degree = 2, pp_degree = 2, dp_degree = 2 }) })
    end)

    it("runs each named check", function()
      assert.are.equal("INVALID_DEGREE", select(2, ctx:check("degrees", { tp_degree = 0 })))
      assert.are.equal("CP_DIVISIBILITY", select(2, ctx:check("cp", { cp_degree = 3 })))
      assert.are.equal("PP_DIVISIBILITY", select(2, ctx:check("pp", { pp_degree = 3 })))
      assert.are.equal("BATCH_DIVISIBILITY",
        select(2, ctx:check("batch", { micro_batch_size = 3 })))
      assert.are.equal("DEVICE_COUNT", select(2, ctx:check("devices", { dp_degree = 16 })))
      assert.are.equal("IDLE_DEVICES", select(2, ctx:check("devices", { dp_degree = 4 })))
      assert.is_true(ctx:check("devices", { dp_degree = 4, allow_idle_devices = true }))
      assert.are.equal("ZERO_STAGE_INVALID", select(2, ctx:check("zero", { zero_stage = 4 })))
    end)

    it("raises on an unknown check name", function()
      assert.matches("invalid option 'bogus'", err_of(ctx.check, ctx, "bogus", {}))
    end)
  end)

  describe("module tables", function()
    it("exposes names and defaults from the core", function()
      assert.are.equal(256, core.MAX_STAGES)
      assert.are.equal("NONE", core.reason_codes[1])
      assert.is_truthy(table.concat(core.reason_codes, ","):find("TP_DIVISIBILITY", 1, true))
      assert.are.equal("params", core.memory_categories[1])
      assert.are.equal(16, #core.performance_categories)
      local m = core.defaults("model")
      assert.are.equal(0, m.hidden_size)
      assert.are.equal("rmsnorm", m.norm)
      assert.are.equal("bf16", core.defaults("training").precision)
      assert.are.equal(1, core.defaults("strategy").tp_degree)
    end)

    -- the framework profiles' dropout (src/core/profile.c: Megatron's and
    -- DeepSpeed's 0.1 on, TorchTitan's and AutoModel's models without),
    -- under the table's own settings
    it("gives a training table's recipe as the framework runs it (core.recipe)", function()
      local function drop(tr)
        local r = core.recipe(tr)
        return { r.dropout, r.attention_dropout, r.hidden_dropout }
      end
      assert.are.same({ true, true, true }, drop({ framework = "megatron" }))
      assert.are.same({ false, false, false }, drop({ framework = "fsdp2" }))
      assert.are.same({ true, true, true }, drop({ framework = "automodel", dropout = true }))
      assert.are.same({ true, true, false }, drop({ framework = "megatron", hidden_dropout = 0 }))
      assert.is_true(core.recipe({ framework = "automodel" }).expandable_segments)
      assert.matches("training.framework", err_of(core.recipe, { framework = "jax" }), 1, true)
    end)
  end)
end)

-- The CLI host, against a stand-in apsearch/cli.lua (APSEARCH_ROOT), so that
-- it checks only the C side: argument passing, exit codes, error lines.
describe("apsearch host", function()
  local bin = os.getenv("APS_BIN")
  local root

  local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

  local function run(env, args)
    local out = os.tmpname()
    local errf = os.tmpname()
    local cmd = ("%s %s %s >%s 2>%s"):format(env, sh_quote(bin), args, out, errf)
    local _, _, code = os.execute(cmd)
    local function slurp(p)
      local f = assert(io.open(p)); local s = f:read("a"); f:close(); os.remove(p); return s
    end
    return code, slurp(out), slurp(errf)
  end

  setup(function()
    if not bin then return end
    local p = io.popen("mktemp -d")
    root = p:read("l"); p:close()
    os.execute("mkdir -p " .. sh_quote(root .. "/lua/apsearch"))
    local f = assert(io.open(root .. "/lua/apsearch/cli.lua", "w"))
    f:write([[
local M = {}
function M.main(args)
  local core = require "apsearch.core"
  local cmd = args[1]
  if cmd == "echo" then
    io.write(#args, "|", table.concat(args, "|"), "|", APSEARCH_ROOT, "|",
             core.model_params{num_layers = 1, hidden_size = 8,
               num_attention_heads = 2, num_query_groups = 2,
               ffn_hidden_size = 16, vocab_size = 10}.total, "\n")
    return 0
  elseif cmd == "exit" then return math.tointeger(tonumber(args[2]))
  elseif cmd == "raise" then error("bad input: policy.lua: cluster.num_devices = 0", 0)
  elseif cmd == "core" then core.context({}, {}, {})
  end
end
return M
]])
    f:close()
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. sh_quote(root)) end
  end)

  local function env(debug)
    return "APSEARCH_ROOT=" .. sh_quote(root) .. (debug and " APSEARCH_DEBUG=1" or " APSEARCH_DEBUG=")
  end

  it("passes argv and the root to apsearch.cli.main", function()
    if not bin then pending("APS_BIN not set (run through ctest)") return end
    local code, out, err = run(env(), "echo a 'b c'")
    assert.are.equal(0, code)
    assert.are.equal("", err)
    -- params: emb 80 + layer (4*64 + 3*128 + 2*8) + norm 8 + out 80
    assert.are.equal(("3|echo|a|b c|%s|%d\n"):format(root, 80 + 656 + 8 + 80), out)
  end)

  it("returns the exit status main returns", function()
    if not bin then pending("APS_BIN not set (run through ctest)") return end
    assert.are.equal(1, (run(env(), "exit 1")))
    assert.are.equal(2, (run(env(), "exit 2")))
    assert.are.equal(0, (run(env(), "nothing")))
  end)

  it("prints a raised error as one line and exits 2", function()
    if not bin then pending("APS_BIN not set (run through ctest)") return end
    local code, out, err = run(env(), "raise")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: bad input: policy.lua: cluster.num_devices = 0\n", err)
    code, _, err = run(env(), "core")
    assert.are.equal(2, code)
    assert.are.equal("apsearch: model.num_layers: must be >= 1 (got 0)\n", err)
  end)

  it("adds the traceback only with APSEARCH_DEBUG", function()
    if not bin then pending("APS_BIN not set (run through ctest)") return end
    local code, _, err = run(env(true), "raise")
    assert.are.equal(2, code)
    assert.matches("^apsearch: bad input: policy%.lua: cluster%.num_devices = 0\nstack traceback:\n", err)
  end)

  it("says where it looked when the Lua sources are missing", function()
    if not bin then pending("APS_BIN not set (run through ctest)") return end
    local code, _, err = run("APSEARCH_ROOT=/nonexistent", "")
    assert.are.equal(2, code)
    assert.are.equal("apsearch: cannot find the Lua sources: /nonexistent/lua/apsearch/cli.lua "
                     .. "is missing (set APSEARCH_ROOT to the directory that holds lua/apsearch)\n", err)
  end)
end)

-- the two calls a result set's files are written with (src/lua/lfsync.c)
describe("core.write_file and core.syncfs", function()
  local h = require "spec_helpers"
  it("writes, truncates, refuses a link at the path; syncfs flushes a directory's file system", function()
    local dir = h.tmpdir()
    local p = dir .. "/rank1_megatron.sh"
    assert.is_true(core.write_file(p, "first text"))
    assert.is_true(core.write_file(p, "2nd"))
    assert.are.equal("2nd", h.read(p))
    assert.is_true(os.execute("ln -s rank1_megatron.sh " .. dir .. "/link.sh") == true)
    local ok, err = core.write_file(dir .. "/link.sh", "x")
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("link.sh", 1, true), err)
    assert.are.equal("2nd", h.read(p))
    assert.is_true(core.syncfs(dir))
    ok, err = core.syncfs(dir .. "/missing")
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("missing", 1, true), err)
    -- a file is not a directory
    assert.is_nil((core.syncfs(p)))
  end)
end)

describe("core.chunk_layers", function()
  local core = require "apsearch.core"
  it("splits as the estimator does (src/core/pipeline.c), for the launchers, validate and the report", function()
    -- (126 + 2) / 16 = 8 per chunk, the first and last one layer short
    local c = core.chunk_layers(126, { pp_degree = 8, vpp_degree = 2, pipeline_split = "embedding_loss" })
    assert.are.equal(16, #c)
    assert.are.equal(7, c[1]) assert.are.equal(7, c[16])
    for j = 2, 15 do assert.are.equal(8, c[j]) end
    -- 29 + 2 = 31 over 4: 8, 8, 8, 7 less one at each end
    assert.are.same({ 7, 8, 8, 6 }, core.chunk_layers(29, { pp_degree = 4, pipeline_split = "embedding_loss" }))
    -- DeepSpeed partition_balanced: 98 units over 8, the first two one more
    assert.are.same({ 12, 13, 12, 12, 12, 12, 12, 11 },
      core.chunk_layers(96, { pp_degree = 8, pipeline_split = "deepspeed_type" }))
    local none, code, msg = core.chunk_layers(126, { pp_degree = 8, vpp_degree = 2 })
    assert.is_nil(none)
    assert.are.equal("PP_DIVISIBILITY", code)
    assert.truthy(msg:find("num_layers = 126 is not divisible", 1, true))
  end)

  it("fill_first: floor(L / (p v)) per chunk, the first L mod (p v) one more (AutoModel's split)", function()
    -- functional.py generate_hf_model_fqn_per_model_part @ 36044ad3, by
    -- hand: 61 over 32 chunks (8 x 4), 61 // 32 = 1, the first 29 get 2
    local c = core.chunk_layers(61, { pp_degree = 8, vpp_degree = 4, pipeline_split = "fill_first" })
    assert.are.equal(32, #c)
    for j = 1, 29 do assert.are.equal(2, c[j]) end
    for j = 30, 32 do assert.are.equal(1, c[j]) end
    assert.are.same({ 16, 15, 15, 15 }, core.chunk_layers(61, { pp_degree = 4, pipeline_split = "fill_first" }))
    -- more stages than layers: AutoModel raises
    local none, code, msg = core.chunk_layers(61, { pp_degree = 16, vpp_degree = 4, pipeline_split = "fill_first" })
    assert.is_nil(none)
    assert.are.equal("PP_PARTITION", code)
    assert.truthy(msg:find('"Number of stages cannot exceed number of layers"', 1, true), msg)
  end)

  it("fill_last: ceil(L / (p v)) per chunk, the last the rest (NVIDIA's DeepSeek-V3 layouts)", function()
    -- NeMo 8cfedd72 pretrain_deepseek_v3.py map_pp_vp_to_layout, by hand:
    -- 61 over 16 chunks: ceil = 4, 15 x 4 = 60, last 1
    local sixteen = { 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1 }
    assert.are.same(sixteen, core.chunk_layers(61, { pp_degree = 4, vpp_degree = 4, pipeline_split = "fill_last" }))
    assert.are.same(sixteen, core.chunk_layers(61, { pp_degree = 16, pipeline_split = "fill_last" }))
    -- over 8: ceil = 8, 7 x 8 = 56, last 5; over 4: ceil = 16, 3 x 16 = 48, last 13
    assert.are.same({ 8, 8, 8, 8, 8, 8, 8, 5 }, core.chunk_layers(61, { pp_degree = 8, pipeline_split = "fill_last" }))
    assert.are.same({ 16, 16, 16, 13 }, core.chunk_layers(61, { pp_degree = 4, pipeline_split = "fill_last" }))
    -- over 32 (8 x 4): ceil = 2, 31 x 2 = 62 > 61 would leave the last
    -- chunk -1; NVIDIA's layout there is `Et|(tt|)*30L` (Megatron-LM
    -- 3c1b98ef^ docs/discussions/deepseek-v3-gb200-optimization s.1; with
    -- the MTP layer `Et|(tt|)*30mL`, Megatron-Bridge r0.1.0
    -- scripts/performance/run_script.py on H100): the first chunk 1, then
    -- 30 of 2, the last the loss alone
    local thirty_two = { 1 }
    for j = 2, 31 do thirty_two[j] = 2 end
    thirty_two[32] = 0
    assert.are.same(thirty_two, core.chunk_layers(61, { pp_degree = 8, vpp_degree = 4, pipeline_split = "fill_last" }))
    assert.are.same(thirty_two, core.chunk_layers(61, { pp_degree = 16, vpp_degree = 2, pipeline_split = "fill_last" }))
    -- over 64 (16 x 4): ceil = 1, the first chunk would hold 61 - 62 = -1
    local none, code, msg = core.chunk_layers(61, { pp_degree = 16, vpp_degree = 4, pipeline_split = "fill_last" })
    assert.is_nil(none)
    assert.are.equal("PP_PARTITION", code)
    assert.truthy(msg:find("num_layers = 61 is too few for 64 model chunks of ceil(61 / 64) = 1: the 62 " ..
      "middle chunks take 62 layers, the last holds the loss alone and the first needs >= 1", 1, true), msg)
  end)
end)

-- A dropless MoE rank's forward is split at every layer's dispatch sync
-- into the GPU's time before it (attention, router) and after it
-- (experts, dispatch, combine): those pieces must add up to the GPU time
-- the rank has, its MLA attention's difference from the layer cost
-- included, or a free host still "delays" the GPU (DeepSeek-V3 on 1,024
-- H100: 3.59 s exposed of a 3.27 s host before the MLA delta was in the
-- piece before the sync).
describe("host time at the dispatch sync", function()
  local H = require "spec_helpers"
  local cjson = require "cjson"
  local STRATEGY = "tp_degree=1,pp_degree=8,vpp_degree=1,ep_degree=64,etp_degree=1,dp_degree=128," ..
    "micro_batch_size=1,layer_recompute=selective,stage_partition=8:8:8:8:8:8:8:5"
  local function breakdown(...)
    local code, out, err = H.apsearch("estimate", "examples/deepseek_v3_h100_1024.lua", "--strategy", STRATEGY,
      "--format", "json", "-q", ...)
    assert.are.equal(0, code, err)
    local e = cjson.decode(out).estimate
    return e.performance_breakdown, e.step_time
  end

  it("costs nothing when the host is free, and never exposes more than the host's time", function()
    local free, free_step = breakdown("--set", "cluster.device.host_seconds_per_kernel=0",
      "--set", "cluster.device.host_seconds_per_loop_kernel=0", "--set", "cluster.device.host_seconds_per_loop_gemm=0")
    assert.are.equal(0, free.host_launch.total)
    assert.are.equal(0, free.host_launch.exposed)
    local pb, step = breakdown()
    assert.is_true(pb.host_launch.total > 0)
    assert.is_true(pb.host_launch.exposed <= pb.host_launch.total)
    -- the step with the host is the free step plus what the GPU waits
    assert.is_true(math.abs(step - free_step - pb.host_launch.exposed) <= 1e-9 * step)
  end)
end)
