-- tests/lua/stacks_spec.lua -- software stacks (issue 12 item 2):
-- `training.stack` selection and validation, the efficiency profile a stack
-- applies, the stack of a measured run's `software`, and `apsearch
-- calibrate --group software` on hand-made synthetic runs.

local stacks = require "apsearch.stacks"
local policy = require "apsearch.policy"
local validate = require "apsearch.validate"
local calibrate = require "apsearch.calibrate"
local calibration = require "apsearch.calibration"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."

local function base_policy(training)
  local t = { global_batch_size = 8, seq_length = 1024, precision = "bf16" }
  for k, v in pairs(training or {}) do t[k] = v end
  return {
    model = { num_layers = 2, hidden_size = 256, num_attention_heads = 4, num_query_groups = 4,
              ffn_hidden_size = 512, vocab_size = 1000 },
    cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
    training = t,
  }
end

-- runs f with a profile injected into a shipped stack, restoring it after
local function with_profile(id, devices, f)
  local st = stacks.stack(id)
  local saved = st.devices
  st.devices = devices
  local ok, err = pcall(f)
  st.devices = saved
  if not ok then error(err, 0) end
end

describe("MoE recipe settings by model, device and release (stacks.MOE_RECIPES)", function()
  local function names(list)
    local out = {}
    for _, e in ipairs(list) do out[#out + 1] = e.name end
    return out
  end
  it("gate each setting on the release month it entered NeMo", function()
    -- Llama 4's token drop is in NeMo 25.04's recipe (v2.3.0), not before
    local before = names(stacks.moe_recipes("NeMo 25.02", "Llama-4-Scout-17B-16E", "gb200"))
    local after = names(stacks.moe_recipes("NeMo 25.04", "Llama-4-Scout-17B-16E", "gb200"))
    local function has(list, pat)
      for _, n in ipairs(list) do if n:find(pat, 1, true) then return true end end
      return false
    end
    assert.is_false(has(before, "Llama 4"))
    assert.is_true(has(after, "Llama 4"))
    -- Mixtral's since 2024-09
    assert.is_true(has(names(stacks.moe_recipes("NeMo 25.04", "Mixtral-8x7B", "gb200")), "Mixtral"))
  end)
  it("pick DeepSeek-V3's H100 or Blackwell settings by device and release; nothing for another line", function()
    -- dgxc-benchmarking 25.08 ran NeMo 25.04.01 (r2.3): token drop and
    -- all-to-all on every device, recompute modules per device
    local h = stacks.moe_recipes("dgxc-benchmarking 25.08 (NeMo 2.0 recipe)", "DeepSeek-V3", "h100-sxm-80gb")
    local g = stacks.moe_recipes("dgxc-benchmarking 25.08 (NeMo 2.0 recipe)", "DeepSeek-V3", "gb200")
    local function find(list, key)
      local v
      for _, e in ipairs(list) do if e.strategy and e.strategy[key] then v = e.strategy[key] end end
      return v -- the last entry's, as validate applies them
    end
    assert.are.equal("alltoall", find(h, "moe_token_dispatcher"))
    assert.are.equal(1.0, find(h, "moe_capacity_factor"))
    assert.are.equal("mla_up_proj", find(h, "recompute_modules"))
    assert.are.equal("alltoall", find(g, "moe_token_dispatcher"))
    assert.are.equal(1.0, find(g, "moe_capacity_factor"))
    assert.are.equal("core_attn", find(g, "recompute_modules"))
    -- from 2025-07 (99e5dac6): DeepEP with forced balance on H100
    local h9 = stacks.moe_recipes("NeMo 25.09", "DeepSeek-V3", "h100-sxm-80gb")
    assert.are.equal("flex", find(h9, "moe_token_dispatcher"))
    assert.are.equal("mla_up_proj/mlp/moe", find(h9, "recompute_modules"))
    -- Megatron-Bridge's scripts force the router's balance from 25.11 on
    -- (Qwen3, DeepSeek-V3); 25.09 (r0.1.0) ran DeepSeek-V3 on H100 with
    -- DeepEP and the forced balance, the rest with token drop (capacity 1:
    -- the same balanced share); before 25.09 nothing
    local function imbalance(list)
      local v
      for _, e in ipairs(list) do if e.training and e.training.moe_load_imbalance then v = e.training.moe_load_imbalance end end
      return v
    end
    assert.are.equal(1.0, imbalance(stacks.moe_recipes("Megatron-Bridge 25.11 (NeMo container)", "Qwen3-30B-A3B", "b200")))
    assert.are.equal(1.0, imbalance(stacks.moe_recipes("Megatron-Bridge 26.08 (NeMo container)", "Qwen3-235B-A22B", "gb300")))
    assert.are.equal(1.0, imbalance(stacks.moe_recipes("Megatron-Bridge 25.11 (NeMo container)", "DeepSeek-V3", "gb200")))
    assert.are.equal(1.0, imbalance(stacks.moe_recipes("Megatron-Bridge 25.09 (NeMo container)", "DeepSeek-V3",
      "h100-sxm-80gb")))
    assert.is_nil(imbalance(stacks.moe_recipes("Megatron-Bridge 25.07 (NeMo container)", "Qwen3-30B-A3B", "b200")))
    assert.is_nil(imbalance(stacks.moe_recipes("Megatron-Bridge 26.02 (NeMo container)", "Mixtral-8x7B", "b200")))
    assert.are.same({}, stacks.moe_recipes("Megatron-LM core_r0.12", "DeepSeek-V3", "h100-sxm-80gb"))
    assert.are.same({}, stacks.moe_recipes("", "DeepSeek-V3", "h100-sxm-80gb"))
  end)
end)

describe("release lines' recipe settings (stacks.match)", function()
  it("give NeMo 24.07 bf16 gradients and param remainders, the launcher's example scripts", function()
    local line = stacks.match("NeMo 24.07", "megatron")
    assert.are.equal("NeMo 1.x launcher", line.name)
    assert.are.equal(false, line.training.grad_reduce_in_fp32)
    assert.are.equal(true, line.training.store_param_remainders)
    assert.is_nil(stacks.match("NeMo 24.07", "fsdp2"))
  end)

  it("say a release month they cannot read, or one after the newest read, and nothing otherwise", function()
    -- "25.9" is no YY.MM: the dated in-place cross-entropy (2025-09 to 2026-07) is not applied
    local n = stacks.release_month_note("Megatron-Bridge 25.9", "megatron")
    assert.truthy(n:find('no release month read from "Megatron-Bridge 25.9"', 1, true), n)
    assert.truthy(n:find("TE 2.2-2.17", 1, true), n)
    local keys = {}
    for _, e in ipairs(stacks.release_settings("Megatron-Bridge 25.9", "megatron", "bf16")) do keys[e.key] = e.value end
    assert.is_nil(keys.logits_bytes)
    -- 27.01 is after Megatron-Bridge v0.6.0 (2026-08), the newest read
    n = stacks.release_month_note("Megatron-Bridge 27.01", "megatron")
    assert.truthy(n:find("read as the release of 2027-01, after the newest apsearch has read of "
      .. "Megatron-Bridge performance recipes (2026-08)", 1, true), n)
    assert.is_nil(stacks.release_month_note("Megatron-Bridge 25.09", "megatron"))
    assert.is_nil(stacks.release_month_note("Megatron-Bridge 26.08", "megatron"))
    -- a line without settings by month has nothing to say
    assert.is_nil(stacks.release_month_note("NeMo 24.7", "megatron"))
  end)
end)

describe("benchmark suite releases (stacks.BENCHMARK_RELEASES)", function()
  it("read dgxc-benchmarking 25.08 as the NeMo 25.04.01 its launch scripts pin, nothing else", function()
    local sw, e = stacks.framework_software("dgxc-benchmarking 25.08 (NeMo 2.0 recipe)")
    assert.are.equal("NeMo 25.04.01 (dgxc-benchmarking 25.08 (NeMo 2.0 recipe))", sw)
    assert.truthy(e.source:find("FW_VERSION=25.04.01", 1, true))
    assert.are.equal("dgxc-benchmarking 25.11", (stacks.framework_software("dgxc-benchmarking 25.11")))
    assert.are.equal("NeMo 25.04", (stacks.framework_software("NeMo 25.04")))
    assert.is_nil(stacks.framework_software(nil))
    -- blanks around or doubled: the same release, for every matcher
    assert.are.equal("NeMo 25.04.01 (dgxc-benchmarking 25.08)",
      (stacks.framework_software(" dgxc-benchmarking  25.08 ")))
    assert.are.equal("2.2", stacks.transformer_engine(" NeMo  25.04.01"))
    assert.are.equal("NeMo 25.04 performance scripts (r2.3)", stacks.match("\tNeMo 25.04.01", "megatron").name)
    assert.are.equal(4, #stacks.moe_recipes(" NeMo 25.04.01", "DeepSeek-V3", "gb200"))
    assert.are.equal(4, #stacks.moe_recipes("NeMo 25.04.01", "DeepSeek-V3", "gb200"))
    assert.are.equal("", (stacks.framework_software("  ")))
    -- its release line, TransformerEngine and MoE recipes are NeMo 25.04's
    assert.are.equal("NeMo 25.04 performance scripts (r2.3)",
      stacks.match("dgxc-benchmarking 25.08 (NeMo 2.0 recipe)", "megatron").name)
    assert.are.equal("2.2", stacks.transformer_engine("dgxc-benchmarking 25.08"))
    assert.are.equal("2.2", stacks.transformer_engine("NeMo 25.04.01"))
    assert.is_nil(stacks.transformer_engine("NeMo 25.11"))
    assert.is_nil(stacks.transformer_engine(""))
  end)
end)

describe("release gaps (stacks.RELEASE_GAPS)", function()
  it("match the model, device and exact release month only", function()
    local dgxc = "dgxc-benchmarking 25.08 (NeMo 2.0 recipe)"
    local e = stacks.release_gap(dgxc, "DeepSeek-V3", "gb200")
    assert.truthy(e)
    assert.truthy(e.source:find("Megatron-Bridge", 1, true))
    assert.truthy(stacks.release_gap("NeMo 25.04.01", "DeepSeek-V3", "gb200"))
    assert.is_nil(stacks.release_gap(dgxc, "DeepSeek-V3", "h100-sxm-80gb"))
    assert.is_nil(stacks.release_gap(dgxc, "Llama-4-Maverick-17B-128E", "gb200"))
    assert.is_nil(stacks.release_gap("dgxc-benchmarking 25.11", "DeepSeek-V3", "gb200"))
    assert.is_nil(stacks.release_gap("NeMo 25.08", "DeepSeek-V3", "gb200"))
    assert.is_nil(stacks.release_gap("", "DeepSeek-V3", "gb200"))
    assert.is_nil(stacks.release_gap(nil, "DeepSeek-V3", "gb200"))
  end)

  it("mark Qwen3-30B-A3B on H100 in Megatron-Bridge 25.11 and 26.02, not the 26.02.01 patch or other models", function()
    -- the releases whose known issues name DeepEP on H100
    -- (docs/releases/known-issues.md @ 067f987d)
    local e = stacks.release_gap("Megatron-Bridge 25.11 (NeMo container)", "Qwen3-30B-A3B", "h100-sxm-80gb")
    assert.truthy(e)
    assert.truthy(e.evidence:find("DeepEP is not supported in the current NeMo framework 26.02 container", 1, true))
    assert.are.equal(e, stacks.release_gap("Megatron-Bridge 26.02 (NeMo container)", "Qwen3-30B-A3B", "h100-sxm-80gb"))
    assert.are.equal(e, stacks.release_gap("Megatron-Bridge 26.02", "Qwen3-30B-A3B", "h100-sxm-80gb"))
    -- 26.02.01 measured 9,058 at the layout 26.02 ran at half that: not marked
    assert.is_nil(stacks.release_gap("Megatron-Bridge 26.02.01 (NeMo container)", "Qwen3-30B-A3B", "h100-sxm-80gb"))
    assert.is_nil(stacks.release_gap("Megatron-Bridge 25.09 (NeMo container)", "Qwen3-30B-A3B", "h100-sxm-80gb"))
    assert.is_nil(stacks.release_gap("Megatron-Bridge 26.02 (NeMo container)", "Qwen3-235B-A22B", "h100-sxm-80gb"))
    assert.is_nil(stacks.release_gap("Megatron-Bridge 26.02 (NeMo container)", "Qwen3-30B-A3B", "b200"))
  end)

  it("read the release as a number standing alone, and every setting of a release with any spelling", function()
    for _, sw in ipairs({ "dgxc-benchmarking 25.08.1", "dgxc-benchmarking 2025.08", "dgxc-benchmarking v25.08",
                          "NeMo 2025.04", "NeMo v25.04.01" }) do
      assert.truthy(stacks.release_gap(sw, "DeepSeek-V3", "gb200"), sw)
    end
    -- 125.08 and 25.081 are no release 25.08
    assert.is_nil(stacks.release_gap("dgxc-benchmarking 125.08", "DeepSeek-V3", "gb200"))
    assert.is_nil(stacks.release_gap("dgxc-benchmarking 25.081", "DeepSeek-V3", "gb200"))
    -- the gap matched case-insensitively while the release line (bf16
    -- gradients) and the stack did not: a run of the release is all or nothing
    local upper = "DGXC-Benchmarking 25.08 (NeMo 2.0 recipe)"
    assert.truthy(stacks.release_gap(upper, "DeepSeek-V3", "gb200"))
    assert.are.equal("NeMo 25.04 performance scripts (r2.3)", stacks.match(upper, "megatron").name)
    assert.are.equal("NeMo 1.x launcher", stacks.match("nemo 24.07", "megatron").name)
    assert.are.same({ stacks.of_software("NeMo 24.07", "megatron") }, { stacks.of_software("NEMO 24.07", "megatron") })
  end)
end)

describe("software stacks", function()
  it("map a run's software to its release line, else the framework's newest", function()
    assert.are.equal("nemo-1", (stacks.of_software("NeMo 24.07", "megatron")))
    assert.are.equal("nemo-2", (stacks.of_software("NeMo 24.12", "megatron")))
    assert.are.equal("megatron-bridge-25", (stacks.of_software("Megatron-Bridge 25.09", "megatron")))
    assert.are.equal("torchtitan-2024", (stacks.of_software("torchtitan 9dec370 (2024-12)", "fsdp2")))
    assert.are.equal("torchtitan-2025", (stacks.of_software("torchtitan abc (2025-06)", "fsdp2")))
    assert.are.equal("llm-foundry", (stacks.of_software("llm-foundry (MPT benchmarks, 2023)", "fsdp")))
    local id, matched = stacks.of_software("my fork", "megatron")
    assert.are.equal("megatron-bridge-25", id)
    assert.is_false(matched)
    -- a NeMo string under another framework is not a NeMo run
    assert.are.equal("torchtitan-2025", (stacks.of_software("NeMo 24.07", "fsdp2")))
  end)

  it("default to the newest line of the framework", function()
    assert.are.equal("megatron-bridge-25", stacks.default("megatron"))
    assert.are.equal("torchtitan-2025", stacks.default("fsdp2"))
    assert.are.equal("llm-foundry", stacks.default("fsdp"))
    assert.are.equal("deepspeed", stacks.default("deepspeed"))
    assert.are.equal("megatron-bridge-25", stacks.resolve({}))
    assert.are.equal("nemo-1", stacks.resolve({ framework = "megatron", stack = "nemo-1" }))
  end)

  it("give a policy naming its software or a stack that release line's settings, said in a note", function()
    -- Megatron-Bridge's performance recipes (stacks.LINES): bf16 gradient reduction and
    -- expandable segments; 25.09 is inside TE 2.2-2.17's in-place cross entropy (2025-09 to 2026-07)
    local p = policy.from_table(base_policy({ software = "Megatron-Bridge 25.09" }), "p.lua")
    assert.are.same({ false, true, 2 }, { p.training.grad_reduce_in_fp32, p.training.expandable_segments,
      p.training.logits_bytes })
    assert.are.equal("megatron-bridge-25", p.stack)
    local note = table.concat(p.warnings, "\n")
    assert.truthy(note:find('training.software "Megatron-Bridge 25.09": estimated as Megatron-Bridge performance ' ..
      "recipes run it: expandable_segments = true, grad_reduce_in_fp32 = false, logits_bytes = 2", 1, true), note)
    -- a release from 2026-08 on writes TE 2.18's fp32 gradient beside the logits: no logits_bytes
    p = policy.from_table(base_policy({ software = "Megatron-Bridge 26.10" }), "p.lua")
    assert.is_nil(p.training.logits_bytes)
    -- the policy's own setting wins; quantized settings only for fp8 and finer
    p = policy.from_table(base_policy({ software = "Megatron-Bridge 25.09", grad_reduce_in_fp32 = true,
      precision = "fp8" }), "p.lua")
    assert.are.same({ true, true }, { p.training.grad_reduce_in_fp32, p.training.fp8_param_gather })
    -- TorchTitan before 2025-04, by its stack or by a dated software: the loss uncompiled, unchunked
    for _, t in ipairs({ { stack = "torchtitan-2024" }, { software = "torchtitan 9a2f578 (2025-03)" } }) do
      t.framework = "fsdp2"
      p = policy.from_table(base_policy(t), "p.lua")
      assert.are.same({ false, 1, false }, { p.training.compile_loss, p.training.loss_chunks,
        p.training.sac_save_alltoall })
      assert.are.equal("torchtitan-2024", p.stack)
    end
    -- neither: the framework's defaults, no note; an unknown software is said
    p = policy.from_table(base_policy({}), "p.lua")
    assert.is_nil(p.training.grad_reduce_in_fp32)
    p = policy.from_table(base_policy({ software = "my fork" }), "p.lua")
    assert.is_nil(p.training.grad_reduce_in_fp32)
    assert.truthy(table.concat(p.warnings, "\n"):find('training.software "my fork" names no release line', 1, true))
  end)

  it("refuse an unknown stack naming it and listing the known ones", function()
    local err = H.err_of(policy.from_table, base_policy({ stack = "nemo-99" }), "p.lua")
    assert.truthy(err:find("training.stack", 1, true), err)
    assert.truthy(err:find('"nemo-99"', 1, true), err)
    for _, id in ipairs(stacks.ids()) do assert.truthy(err:find(id, 1, true), err) end
    err = H.err_of(policy.from_table, base_policy({ stack = 3 }), "p.lua")
    assert.truthy(err:find("unknown stack", 1, true), err)
    assert.falsy(err:find("training.software", 1, true), err)
    -- a release name in the stack's place is pointed to training.software
    err = H.err_of(policy.from_table, base_policy({ stack = "Megatron-Bridge 25.09" }), "p.lua")
    assert.truthy(err:find("; a release name goes in training.software", 1, true), err)
  end)

  it("refuse a stack of another framework", function()
    local err = H.err_of(policy.from_table,
      base_policy({ framework = "fsdp2", stack = "nemo-1" }), "p.lua")
    assert.truthy(err:find('stack "nemo-1" is a megatron stack, training.framework is fsdp2', 1, true), err)
  end)

  it("apply the selected stack's efficiency profile, not another's", function()
    with_profile("nemo-1", { ["h100-sxm-80gb"] = { gemm_efficiency = 0.42, attention_efficiency = 0.5 } },
      function()
        local p = policy.from_table(base_policy({ framework = "megatron", stack = "nemo-1" }), "p.lua")
        assert.are.equal("nemo-1", p.stack)
        assert.are.equal(0.42, p.cluster.device.gemm_efficiency)
        assert.are.equal(0.5, p.cluster.device.attention_efficiency)
        -- the default (newest) stack: its attention kernel on H100 (cuDNN
        -- fused attention), the preset's other values
        local q = policy.from_table(base_policy({ framework = "megatron" }), "p.lua")
        assert.are.equal("megatron-bridge-25", q.stack)
        assert.are.same({ base = "h100-sxm-80gb", attention_efficiency = stacks.H100_CUDNN_ATTENTION },
          q.cluster.device)
        -- a field the device table sets itself wins over the profile
        local raw = base_policy({ framework = "megatron", stack = "nemo-1" })
        raw.cluster.device = { base = "h100-sxm-80gb", gemm_efficiency = 0.6 }
        local r = policy.from_table(raw, "p.lua")
        assert.are.equal(0.6, r.cluster.device.gemm_efficiency)
        assert.are.equal(0.5, r.cluster.device.attention_efficiency)
        -- and reaches the estimate
        local ctx = require("apsearch.core").context(p.model, p.cluster, p.training)
        assert.are.equal(0.42, ctx:inputs().cluster.device.gemm_efficiency)
      end)
  end)

  it("apply to a policy built from --model / --cluster by the stack it runs, and init writes none", function()
    -- the built policy's device was the normalized probe's, the default
    -- stack's profile already in it: training.stack / framework changed
    -- nothing (nemo-1 estimated at cuDNN's 0.527, not FlashAttention-2's)
    local function device_of(...)
      local code, out, err = H.apsearch("run", "-q", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
        "--format", "json", "--top-k", "1", ...)
      assert.are.equal(0, code, err)
      return require("cjson").decode(out).inputs.cluster.device
    end
    assert.near(stacks.H100_FA2_ATTENTION, device_of("--set", "training.stack=nemo-1").attention_efficiency, 1e-12)
    assert.near(stacks.H100_CUDNN_ATTENTION, device_of().attention_efficiency, 1e-12)
    assert.near(stacks.H100_FA2_ATTENTION, device_of("--set", "training.framework=fsdp2").attention_efficiency,
      1e-12)
    -- the written policy names the device as given, so that the stack it
    -- is later edited to prices its own kernel
    local code, text, err = H.apsearch("init", "llama-3.1-8b", "h100-sxm-80gb:1")
    assert.are.equal(0, code, err)
    assert.truthy(text:find('\n    device = "h100-sxm-80gb",\n', 1, true), text)
    assert.falsy(text:find("attention_efficiency", 1, true), text)
  end)

  it("are named on estimate's training line, with the attention the profile sets when it applies", function()
    local function line(...)
      local code, out, err = H.apsearch("estimate", "--model", "llama-3.1-8b", "--strategy", "fsdp_degree=8", ...)
      assert.are.equal(0, code, err)
      return out:match("\n(training  [^\n]*)\n")
    end
    -- FlashAttention-2's 3.5 / (1 / 333 + 2.5 / 318) / 989 = 0.3257
    assert.are.equal("training  global batch 128 sequences x 8192 tokens, bf16, adamw, megatron; stack nemo-1 "
      .. "(attention 0.326, benchmarked)", line("--cluster", "h100-sxm-80gb:1", "--set", "training.stack=nemo-1"))
    -- no profile on the A100; the device's own value over the profile's
    assert.are.equal("training  global batch 128 sequences x 8192 tokens, bf16, adamw, megatron; stack "
      .. "megatron-bridge-25", line("--cluster", "a100-sxm4-80gb:1"))
    assert.are.equal("training  global batch 128 sequences x 8192 tokens, bf16, adamw, megatron; stack "
      .. "megatron-bridge-25", line("--cluster", "h100-sxm-80gb:1", "--set", "cluster.device.attention_efficiency=0.4"))
  end)

  it("apply in validate by the row's software", function()
    local rows = validate.load(ROOT .. "/tests/fixtures/cases_mpt_h100.csv")
    local row
    for _, r in ipairs(rows) do if r.device == "h100-sxm-80gb" and r.framework == "fsdp" then row = r break end end
    row.software = "llm-foundry (2023)"
    local plain = validate.run_case(row)
    with_profile("llm-foundry", { ["h100-sxm-80gb"] = { gemm_efficiency = 0.35 } }, function()
      local c = validate.run_case(row)
      assert.are.equal("llm-foundry", c.stack)
      assert.are.equal(0.35, c.inputs.cluster.device.gemm_efficiency)
      assert.is_true(c.predicted.tokens_per_s_per_gpu < plain.predicted.tokens_per_s_per_gpu)
    end)
  end)

  it("price NeMo AutoModel's attention at the kernel its run names (training.attn_backend)", function()
    -- BackendConfig.attn "te" for its own models; FlashAttention-2 for a model built through transformers
    assert.are.equal("te", stacks.attention_backend({ framework = "automodel" }))
    assert.are.equal("sdpa", stacks.attention_backend({ framework = "automodel", transformers_model = true }))
    assert.are.equal("flex", stacks.attention_backend({ framework = "automodel", attn_backend = "flex" }))
    assert.are.equal("automodel", stacks.default("automodel"))
    assert.are.same({ attention_efficiency = stacks.H100_FA2_ATTENTION },
      stacks.profile_fields("automodel", "H100-SXM-80GB", { framework = "automodel", attn_backend = "sdpa" }))
    assert.are.same({ attention_efficiency = stacks.H100_CUDNN_ATTENTION },
      stacks.profile_fields("automodel", "h100-sxm-80gb"))
    -- a stack of one kernel ignores it
    assert.are.same({ attention_efficiency = stacks.H100_FA2_ATTENTION },
      stacks.profile_fields("torchtitan-2025", "h100-sxm-80gb", { attn_backend = "te" }))
    local cl = stacks.apply({ device = "h100-sxm-80gb" }, "automodel", { framework = "automodel",
      attn_backend = "flex" })
    assert.are.equal(stacks.H100_FLEX_ATTENTION, cl.device.attention_efficiency)
    -- another framework: refused, naming the field
    local problem, field = stacks.check({ framework = "fsdp2", attn_backend = "te" })
    assert.are.equal("attn_backend", field)
    assert.are.equal("NeMo AutoModel's model.backend.attn: set training.framework = automodel, or leave it out " ..
      "(framework fsdp2)", problem)
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "training.attn_backend=te")
    assert.are.equal(2, code)
    assert.truthy(err:find("--set: training.attn_backend: NeMo AutoModel's model.backend.attn: set " ..
      "training.framework = automodel, or leave it out (framework megatron) (got \"te\")", 1, true), err)
    -- the estimate and the YAML run the same kernel: FlexAttention's rate and backend.attn flex
    local dir = H.tmpdir()
    local code2, out = H.apsearch("run", "-q", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:1", "--set",
      "training.framework=automodel", "--set", "training.attn_backend=flex", "--top-k", "1", "--out", dir,
      "--format", "json")
    assert.are.equal(0, code2, out)
    local r = require("cjson").decode(out)
    assert.are.equal("flex", r.inputs.training.attn_backend)
    assert.near(stacks.H100_FLEX_ATTENTION, r.inputs.cluster.device.attention_efficiency, 1e-12)
    local yaml = assert(io.open(dir .. "/launch/rank1_automodel.yaml")):read("a")
    assert.truthy(yaml:find("\n    attn: flex\n", 1, true), yaml)
    -- a model AutoModel builds through transformers under CP: AutoModel sets SDPA whatever the YAML names
    local dir2 = H.tmpdir()
    local code3, out3 = H.apsearch("run", "-q", "--model", H.ROOT .. "/examples/models/mistral-7b-v0.1.json",
      "--cluster", "h100-sxm-80gb:1", "--set", "training.framework=automodel", "--set", "training.attn_backend=flex",
      "--fix", "cp_degree=2", "--top-k", "1", "--out", dir2)
    assert.are.equal(0, code3, out3)
    local hf = assert(io.open(dir2 .. "/launch/rank1_automodel.yaml")):read("a")
    assert.truthy(hf:find("\n# APPROXIMATE: attn_implementation flex_attention with cp_size 2: AutoModel runs " ..
      "transformers' SDPA under context parallelism", 1, true), hf)
    assert.truthy(hf:find("\n  attn_implementation: flex_attention  # the kernel estimated, which AutoModel " ..
      "replaces under CP", 1, true), hf)
  end)

  it("ship only the attention kernel's benchmarked efficiency, on the Hopper parts", function()
    -- Shah et al. 2024 (arXiv:2407.08608) Figures 5 and 6, head dim 128 at
    -- 8K on H100 SXM5 (989 TFLOP/s): one time for the forward and 2.5x its
    -- FLOPs backward, 3.5 / (1 / fwd + 2.5 / bwd) / 989
    local cudnn = 3.5 / (1 / 529 + 2.5 / 518) / 989
    local fa2 = 3.5 / (1 / 333 + 2.5 / 318) / 989
    assert.near(0.52689, cudnn, 1e-5)
    assert.near(0.32573, fa2, 1e-5)
    assert.near(cudnn, stacks.H100_CUDNN_ATTENTION, 1e-12)
    assert.near(fa2, stacks.H100_FA2_ATTENTION, 1e-12)
    -- FlexAttention on H100: forward 1.25x, backward 1.03x FlashAttention-2's (Guessous, GTC 2025)
    local flex = 3.5 / (1 / (333 * 1.25) + 2.5 / (318 * 1.03)) / 989
    assert.near(0.35266, flex, 1e-5)
    assert.near(flex, stacks.H100_FLEX_ATTENTION, 1e-12)
    -- NeMo AutoModel: its own models' default, TransformerEngine's (cuDNN)
    local want = { ["megatron-bridge-25"] = cudnn, ["nemo-2"] = cudnn, ["megatron-lm"] = cudnn,
      ["nemo-1"] = fa2, ["torchtitan-2025"] = fa2, automodel = cudnn }
    for _, st in ipairs(stacks.STACKS) do
      if want[st.id] then
        -- the GH100 parts: the H800 is the H100 SXM5's die (presets.c)
        local gh100 = { "h100-sxm-80gb", "h100-96gb-500w", "h200-sxm-141gb", "h800-sxm-80gb" }
        for _, dev in ipairs(gh100) do
          assert.are.same({ attention_efficiency = want[st.id] }, st.devices[dev], st.id .. " " .. dev)
        end
        local n = 0
        for _ in pairs(st.devices) do n = n + 1 end
        assert.are.equal(#gh100, n, st.id)
        -- a stack whose runs choose the kernel: one entry each
        for kernel, eff in pairs(st.attention and { te = cudnn, sdpa = fa2, flex = flex } or {}) do
          for _, dev in ipairs(gh100) do
            assert.are.same({ attention_efficiency = eff }, st.attention[kernel][dev], st.id .. " " .. kernel)
          end
        end
      else
        -- llm-foundry's Triton kernels with ALiBi, DeepSpeed: no benchmark;
        -- TorchTitan before 2025-04: PyTorch's SDPA backend changed then
        assert.are.same({}, st.devices, st.id)
      end
    end
  end)

  it("say which calibrated field a run keeps at its stack's benchmarked value", function()
    local dir = H.tmpdir()
    local calib = H.write(dir .. "/c.json",
      '{"devices": {"h100-sxm-80gb": {"gemm_efficiency": 0.6, "attention_efficiency": 0.3}}}')
    local code, _, err = H.apsearch("run", ROOT .. "/examples/llama3_8b_h100.lua", "--calibration", calib,
      "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("applied to h100-sxm-80gb: gemm_efficiency 0.6, unfused_attention_efficiency (the entry's "
      .. "attention_efficiency)\n", 1, true), err)
    assert.truthy(err:find("attention_efficiency kept at stack torchtitan-2025's benchmarked value", 1, true), err)
    assert.truthy(err:find("--set cluster.device.attention_efficiency=VALUE", 1, true), err)
  end)

  it("say a kept field is the policy's own when the device table set it, and when no field applied", function()
    local dir = H.tmpdir()
    local calib = H.write(dir .. "/c.json", '{"devices": {"h100-sxm-80gb": {"attention_efficiency": 0.3}}}')
    local function note(...)
      local code, _, err = H.apsearch("estimate", ROOT .. "/examples/llama3_8b_h100.lua", "--calibration", calib,
        "--strategy", "fsdp_degree=8,micro_batch_size=1", ...)
      assert.are.equal(0, code, err)
      return err
    end
    -- the entry's flash value still gives unfused attention its value
    -- (calibration.apply): said, it changes an estimate without flash
    local err = note("--set", "cluster.device.attention_efficiency=0.4")
    assert.truthy(err:find("applied to h100-sxm-80gb: unfused_attention_efficiency (the entry's "
      .. "attention_efficiency)\n", 1, true), err)
    assert.truthy(err:find("note: attention_efficiency kept at the policy's cluster.device value\n", 1, true), err)
    assert.falsy(err:find("benchmarked value", 1, true), err)
    err = note("--set", "cluster.device.unfused_attention_efficiency=0.2")
    assert.truthy(err:find("applied to h100-sxm-80gb: no field (each of its fields for the device is kept)\n",
      1, true), err)
    assert.truthy(err:find("attention_efficiency kept at stack torchtitan-2025's benchmarked value", 1, true), err)
  end)

  it("refuse a calibration file whose log names an unknown stack, naming the field", function()
    local dir = H.tmpdir()
    local calib = H.write(dir .. "/c.json",
      '{"log": {"stack": "torchtitan-2027"}, "devices": {"h100-sxm-80gb": {"attention_efficiency": 0.3}}}')
    local code, _, err = H.apsearch("estimate", ROOT .. "/examples/llama3_8b_h100.lua", "--calibration", calib,
      "--strategy", "fsdp_degree=8")
    assert.are.equal(2, code, err)
    assert.truthy(err:find(calib .. ': log.stack: unknown stack "torchtitan-2027"; known stacks: megatron-bridge-25',
      1, true), err)
  end)

  it("say none where a calibration file has no device or no stack (the note ended in an empty list)", function()
    local dir = H.tmpdir()
    local function note(text)
      local calib = H.write(dir .. "/c.json", text)
      local code, _, err = H.apsearch("estimate", ROOT .. "/examples/llama3_8b_h100.lua", "--calibration", calib,
        "--strategy", "fsdp_degree=8")
      assert.are.equal(0, code, err)
      return err
    end
    local err = note('{"devices": {}}')
    assert.truthy(err:find("has no calibration for device h100-sxm-80gb (family hopper; has none); ", 1, true), err)
    err = note('{"stacks": {}}')
    assert.truthy(err:find("has no calibration for stack torchtitan-2025 (has none); ", 1, true), err)
  end)

  it("keep a profile's field against a calibration fitted across stacks, not against the stack's own", function()
    local shared = { devices = { ["h100-sxm-80gb"] = { gemm_efficiency = 0.5, attention_efficiency = 0.2 } } }
    local c = calibration.apply({ device = "h100-sxm-80gb" }, shared, "megatron-bridge-25")
    assert.are.equal(0.5, c.device.gemm_efficiency)
    assert.is_nil(c.device.attention_efficiency)
    -- grouped: fitted on the stack's own runs, it replaces the profile's
    local grouped = { stacks = { ["megatron-bridge-25"] = shared } }
    c = calibration.apply({ device = "h100-sxm-80gb" }, grouped, "megatron-bridge-25")
    assert.are.equal(0.2, c.device.attention_efficiency)
    -- a stack without a profile takes the whole calibration
    c = calibration.apply({ device = "h100-sxm-80gb" }, shared, "llm-foundry")
    assert.are.equal(0.2, c.device.attention_efficiency)
    assert.is_true(calibration.profile_covers("torchtitan-2025", "H100-SXM-80GB", "flash"))
    assert.is_false(calibration.profile_covers("torchtitan-2025", "h100-sxm-80gb", "fp8"))
    assert.is_false(calibration.profile_covers("llm-foundry", "h100-sxm-80gb", "flash"))
  end)
end)

describe("calibrate --group software", function()
  it("starts a stack's fit at the values its runs are estimated with: loss_before is the uncalibrated error #bulk",
    function()
    -- the NeMo 1.x rows (H100, FlashAttention-2 by the stack's profile):
    -- the fit started at the preset's attention (0.195), not the profile's
    -- 0.326, and reported that as the error before calibrating
    local path = ROOT .. "/tests/fixtures/public_cases.csv"
    local res = calibrate.fit_grouped(path, { log = function() end })
    local sum, n = 0, 0
    for _, row in ipairs(validate.load(path)) do
      local c = validate.run_case(row)
      if c.stack == "nemo-1" then
        assert.is_nil(c.error, c.error)
        sum = sum + math.abs(math.log(c.predicted.tokens_per_s_per_gpu / c.measured.tokens_per_s_per_gpu))
        n = n + 1
      end
    end
    assert.are.equal(7, n)
    assert.are.equal(7, res.stacks["nemo-1"].rows)
    assert.near(sum / n, res.stacks["nemo-1"].loss_before, 1e-12)
  end)

  -- Synthetic runs: the H100 MPT rows of the fixture, estimated under known
  -- parameters, once as TorchTitan 2024 runs and once as TorchTitan 2025
  -- runs with different parameters; a third copy names software no stack
  -- matches and counts to the newest (2025).
  local A = { gemm_efficiency = 0.55, attention_efficiency = 0.30 }
  local B = { gemm_efficiency = 0.75, attention_efficiency = 0.30 }

  local function synthetic_csv()
    local src = validate.load(ROOT .. "/tests/fixtures/cases_mpt_h100.csv")
    local header = {}
    for _, col in ipairs(validate.REQUIRED) do header[#header + 1] = col end
    header[#header + 1] = "software"
    header[#header + 1] = "measured_tokens_per_s_per_gpu"
    local lines = { table.concat(header, ",") }
    local n = 0
    for _, row in ipairs(src) do
      if row.device == "h100-sxm-80gb" and row.framework == "fsdp" then
        for gi, g in ipairs({ { "torchtitan a (2024-12)", A }, { "torchtitan b (2025-06)", B },
                             { "in-house fork", B } }) do
          local r = {}
          for k, v in pairs(row) do r[k] = v end
          -- each copy its own case_id (validate refuses a repeated one)
          r.framework, r.software, r.case_id = "fsdp2", g[1], row.case_id .. "-" .. gi
          local c = validate.run_case(r, { devices = { ["h100-sxm-80gb"] = g[2] } })
          assert(not c.error, c.error)
          local vals = {}
          for i, col in ipairs(validate.REQUIRED) do vals[i] = r[col] end
          vals[#vals + 1] = r.software
          vals[#vals + 1] = string.format("%.17g", c.predicted.tokens_per_s_per_gpu)
          lines[#lines + 1] = table.concat(vals, ",")
          n = n + 1
        end
      end
    end
    local path = os.tmpname()
    H.write(path, table.concat(lines, "\n") .. "\n")
    return path, n
  end

  it("fits one calibration per stack and applies the matching one #bulk", function()
    local path, n = synthetic_csv()
    local logs = {}
    local calib = calibrate.fit_grouped(path, { log = function(l) logs[#logs + 1] = l end })
    assert.is_true(n >= 15)
    assert.are.same({ "torchtitan-2024", "torchtitan-2025" }, require("apsearch.util").sorted_keys(calib.stacks))
    local a = calib.stacks["torchtitan-2024"].devices["h100-sxm-80gb"]
    local b = calib.stacks["torchtitan-2025"].devices["h100-sxm-80gb"]
    assert.is_true(math.abs(a.gemm_efficiency - 0.55) < 0.02, tostring(a.gemm_efficiency))
    assert.is_true(math.abs(b.gemm_efficiency - 0.75) < 0.02, tostring(b.gemm_efficiency))
    assert.are.equal(2 * n / 3, calib.stacks["torchtitan-2025"].rows)
    assert.truthy(table.concat(logs, "\n"):find("names no known stack; counted to torchtitan-2025", 1, true))
    -- written and read back: each run gets its own stack's values
    local out = os.tmpname()
    H.write(out, require("apsearch.format.json").format(calib))
    local loaded = calibration.load(out)
    local cl = calibration.apply({ device = "h100-sxm-80gb" }, loaded, "torchtitan-2024")
    assert.is_true(math.abs(a.gemm_efficiency - cl.device.gemm_efficiency) < 1e-9)
    cl = calibration.apply({ device = "h100-sxm-80gb" }, loaded, "torchtitan-2025")
    assert.is_true(math.abs(b.gemm_efficiency - cl.device.gemm_efficiency) < 1e-9)
    cl = calibration.apply({ device = "h100-sxm-80gb" }, loaded, "nemo-1")
    assert.are.equal("h100-sxm-80gb", cl.device)
    -- validate with the file: the synthetic runs come back (nearly) exact
    local res = validate.run(path, loaded)
    assert.is_true(res.summary.throughput.mape_pct < 1.0, tostring(res.summary.throughput.mape_pct))
    os.remove(path)
    os.remove(out)
  end)

  it("refuses an unknown grouping and an unknown stack in a file", function()
    local err = H.err_of(calibrate.fit_grouped, "x.csv", { by = "device" })
    assert.truthy(err:find('unknown grouping "device"', 1, true), err)
    local p = os.tmpname()
    H.write(p, '{"stacks": {"nemo-9": {"devices": {}}}}')
    err = H.err_of(calibration.load, p)
    os.remove(p)
    assert.truthy(err:find("stacks.nemo-9: unknown stack; known stacks: megatron-bridge-25", 1, true), err)
  end)

  it("is reachable from the command line", function()
    local code, _, out = H.apsearch("calibrate", ROOT .. "/tests/fixtures/cases_small.csv",
      "--group", "bogus", "-o", os.tmpname())
    assert.are_not.equal(0, code)
    assert.truthy(out:find("--group: unknown grouping (known: software)", 1, true), out)
    code, _, out = H.apsearch("calibrate", ROOT .. "/tests/fixtures/cases_small.csv",
      "--group", "sofware", "-o", os.tmpname())
    assert.truthy(out:find('did you mean "software"?', 1, true), out)
  end)
end)
