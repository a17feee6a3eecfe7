-- tests/lua/launch_automodel_spec.lua -- rank<N>_automodel.yaml, the NeMo
-- AutoModel recipe YAML (apsearch.launch.automodel, Automodel 36044ad3):
-- the keys each layout maps to, as AutoModel's own code reads them
-- (recipes/_dist_utils.py parse_distributed_section, distributed/
-- mesh_utils.py _create_fsdp2_device_mesh, pipelining/functional.py
-- calculate_virtual_stages, training/step_scheduler.py), and the layouts it
-- says it cannot build.  The files were also loaded by AutoModel's loader
-- and mesh code by hand (docs/launch.md "NeMo AutoModel").
local launch = require "apsearch.launch"
local automodel = require "apsearch.launch.automodel"

local function rec_of(s)
  local r = { rank = 1, devices_used = 8, memory_cost = {}, performance_cost = {}, dp_degree = 1, fsdp_degree = 1,
    tp_degree = 1, pp_degree = 1, vpp_degree = 1, cp_degree = 1, ep_degree = 1, micro_batch_size = 1,
    micro_batch_num = 8, layer_recompute = "none", zero_stage = 0, pp_schedule = "1f1b", sequence_parallel = true }
  for k, v in pairs(s) do r[k] = v end
  return r
end

local function llama8b()
  return { name = "llama-3.1-8b", num_layers = 32, hidden_size = 4096, num_attention_heads = 32,
    num_query_groups = 8, ffn_hidden_size = 14336, vocab_size = 128256 }
end

local function qwen3_30b()
  return { name = "qwen3-30b-a3b", num_layers = 48, hidden_size = 2048, num_attention_heads = 32,
    num_query_groups = 4, vocab_size = 151936, num_experts = 128, experts_per_token = 8 }
end

local function render(model, s, training, n)
  local rec = rec_of(s)
  rec.devices_used = n or 8
  local stages = {}
  local p = rec.pp_degree
  for i = 1, p do
    stages[i] = { num_layers = model.num_layers // p, recompute_layers = rec.layer_recompute == "full" and
      model.num_layers // p or 0 }
  end
  local tr = { global_batch_size = 64, seq_length = 8192, precision = "bf16", framework = "automodel",
    optimizer = "adamw", moe_flex_dispatcher_backend = "deepep" }
  for k, v in pairs(training or {}) do tr[k] = v end
  local result = { inputs = { model = model, training = tr, model_source = "/m/config.json",
    cluster = { device = { name = "h100-sxm-80gb", peak_flops_bf16 = 989.4e12 }, devices_per_node = 8,
    num_devices = n or 8 } }, top_k_strategies = { rec }, stage_summary = { { stages = stages } } }
  local text, notes = automodel.render(launch.context(result, rec))
  return text, launch.differences(notes)
end

local function has(text, line) return text:find("\n" .. line, 1, true) ~= nil end

describe("launch file rank<N>_automodel.yaml", function()
  it("is one of the engines, named rank<N>_automodel.yaml", function()
    local e = launch.engine("automodel")
    assert.are.equal("apsearch.launch.automodel", e.module)
    assert.are.equal("_automodel.yaml", e.suffix)
  end)

  it("writes HSDP as dp_size and dp_replicate_size, TP with sequence parallelism", function()
    local text, differs = render(llama8b(), { dp_degree = 2, fsdp_degree = 2, tp_degree = 2, micro_batch_num = 16 })
    assert.are.same({}, differs)
    assert.truthy(has(text, "  strategy: fsdp2"))
    assert.truthy(has(text, "  dp_size: 4"))
    assert.truthy(has(text, "  dp_replicate_size: 2"))
    assert.truthy(has(text, "  tp_size: 2"))
    assert.truthy(has(text, "  sequence_parallel: true"))
    -- gradient accumulation = 64 / (1 x 4) = 16 micro-batches
    assert.truthy(has(text, "  local_batch_size: 1"))
    assert.truthy(has(text, "  global_batch_size: 64"))
    -- fp32 weights under a bf16 mp_policy, MaskedCrossEntropy with fp32 logits
    assert.truthy(has(text, "  torch_dtype: float32"))
    assert.truthy(has(text, "    param_dtype: bfloat16"))
    assert.truthy(has(text, "    reduce_dtype: float32"))
    assert.truthy(has(text, "  fp32_upcast: true"))
    assert.truthy(has(text, "  defer_fsdp_grad_sync: true"))
    assert.truthy(text:find("torchrun --nnodes 1 --nproc-per-node 8 -m nemo_automodel.cli.app rank1_automodel.yaml",
      1, true))
  end)

  it("runs one pipeline schedule of every micro-batch per step", function()
    local text, differs = render(llama8b(), { fsdp_degree = 2, tp_degree = 2, pp_degree = 2, vpp_degree = 2,
      micro_batch_num = 32 })
    assert.are.same({}, differs)
    assert.truthy(has(text, "  local_batch_size: 32"))
    assert.truthy(has(text, "    pp_microbatch_size: 1"))
    assert.truthy(has(text, "    pp_schedule: Interleaved1F1B"))
    -- 32 layers over 4 stages: ceil(32 / 8) = 4 (calculate_virtual_stages)
    assert.truthy(has(text, "    layers_per_stage: 8"))
    assert.are.equal(8, automodel.layers_per_stage(32, 4))
    assert.are.equal(12, automodel.layers_per_stage(48, 4))
    assert.are.equal(3, automodel.layers_per_stage(10, 4)) -- ceil(10 / 3) = 4 stages of 3, 3, 2, 2
    assert.is_nil(automodel.layers_per_stage(5, 4))        -- ceil(5 / 1) = 5, ceil(5 / 2) = 3
  end)

  it("writes training.local_batch_size's passes: one schedule of local_batch_size / micro-batch each", function()
    -- 64 sequences over fsdp 2: 32 a rank, 32 micro-batches of 1; local batch 8 = 4 passes of 8
    local text, differs = render(llama8b(), { fsdp_degree = 2, tp_degree = 2, pp_degree = 2, vpp_degree = 2,
      micro_batch_num = 32 }, { local_batch_size = 8 })
    assert.are.same({}, differs)
    assert.truthy(has(text, "  local_batch_size: 8  # one pipeline schedule of 8 micro-batches of 1 per pass, " ..
      "4 passes per step (pp_batch_size)"), text)
    assert.truthy(has(text, "    pp_microbatch_size: 1"))
    -- fewer micro-batches a schedule than pp_size (an fsdp2 estimate's): AutoModel refuses the file
    local _, refused = render(llama8b(), { fsdp_degree = 2, tp_degree = 2, pp_degree = 2, vpp_degree = 2,
      micro_batch_num = 32 }, { local_batch_size = 1 })
    assert.are.equal(1, #refused)
    assert.truthy(refused[1]:find("micro-batches per pipeline schedule = 1 < pp_size = 2: AutoModel asserts " ..
      "pp_batch_size // pp_microbatch_size >= pp_size (recipes/llm/train_ft.py:547)", 1, true), refused[1])
  end)

  it("writes the MoE dispatcher and EP over the replicas", function()
    local text, differs = render(qwen3_30b(), { dp_degree = 2, fsdp_degree = 8, ep_degree = 16, micro_batch_size = 1,
      micro_batch_num = 4 }, nil, 16)
    assert.are.same({}, differs)
    assert.truthy(has(text, "  ep_size: 16"))
    assert.truthy(has(text, "    dispatcher: deepep"))
    text = render(qwen3_30b(), { fsdp_degree = 16, ep_degree = 4, micro_batch_num = 4 },
      { moe_flex_dispatcher_backend = "hybridep" }, 16)
    assert.truthy(has(text, "    dispatcher: hybridep"))
    text = render(qwen3_30b(), { fsdp_degree = 16, ep_degree = 16, micro_batch_num = 4,
      moe_token_dispatcher = "allgather" }, nil, 16)
    assert.truthy(has(text, "    dispatcher: torch"))
  end)

  it("says what selective checkpointing runs again with TransformerEngine's attention and linears", function()
    -- src/core/opsac.c: the policy does not see TE's pybind11 kernels
    local text, differs = render(qwen3_30b(), { fsdp_degree = 8, layer_recompute = "selective", micro_batch_num = 8 })
    assert.are.same({}, differs)
    assert.truthy(has(text, "distributed:") or text:find("activation_checkpointing: selective", 1, true), text)
    assert.truthy(text:find("# NOTE: selective checkpointing with backend.attn te: TransformerEngine's attention " ..
      "and linears are not PyTorch ops AutoModel's policy sees, so they keep nothing and run again", 1, true), text)
    text = render(llama8b(), { fsdp_degree = 8, layer_recompute = "selective", micro_batch_num = 8 })
    assert.truthy(text:find("TransformerEngine's attention is not a PyTorch op AutoModel's policy sees", 1, true), text)
    text = render(llama8b(), { fsdp_degree = 8, layer_recompute = "selective", micro_batch_num = 8 },
      { attn_backend = "sdpa" })
    assert.is_nil(text:find("NOTE: selective checkpointing", 1, true), text)
  end)

  it("reshards the MoE blocks and experts as the estimate does (the MoE parallelizer reads moe's setting)", function()
    -- distributed.reshard_after_forward null leaves MoEParallelizerConfig's in force, which apply_fsdp
    -- passes to the blocks and their experts (moe/parallelizer.py l.752-789 @ 36044ad3); it was written
    -- false for every strategy, so a resharding estimate launched a job that keeps every layer gathered
    local text = render(qwen3_30b(), { fsdp_degree = 16, ep_degree = 4, micro_batch_num = 4 }, nil, 16)
    assert.truthy(has(text, "    reshard_after_forward: true"), text)
    text = render(qwen3_30b(), { fsdp_degree = 16, ep_degree = 4, micro_batch_num = 4,
      reshard_after_forward = false }, nil, 16)
    assert.is_false(has(text, "    reshard_after_forward: true"), text)
    assert.truthy(has(text, "    reshard_after_forward: false"), text)
  end)

  it("writes the estimate's weight dtype, loss upcast, gradient sync and norm kernel", function()
    local text, differs = render(llama8b(), { fsdp_degree = 8 })
    assert.are.same({}, differs)
    assert.truthy(text:find("  torch_dtype: float32", 1, true), text)
    assert.truthy(text:find("  fp32_upcast: true", 1, true), text)
    assert.truthy(text:find("  defer_fsdp_grad_sync: true", 1, true), text)
    assert.truthy(text:find("    rms_norm: torch_fp32", 1, true), text)
    text, differs = render(llama8b(), { fsdp_degree = 8 },
      { bf16_weights = true, loss_fp32_upcast = false, defer_fsdp_grad_sync = false, rms_norm_backend = "te" })
    assert.are.same({}, differs)
    assert.truthy(text:find("    rms_norm: te  # TransformerEngine's fused RMSNorm, as estimated", 1, true), text)
    assert.truthy(text:find("  torch_dtype: bfloat16", 1, true), text)
    assert.truthy(text:find("  fp32_upcast: false", 1, true), text)
    assert.truthy(text:find("  defer_fsdp_grad_sync: false", 1, true), text)
  end)

  it("writes the estimate's per-micro-batch reduce-scatter for an estimate of TorchTitan", function()
    -- fsdp2 reduce-scatters every micro-batch; AutoModel's default defers
    -- it (and holds every unsharded fp32 gradient): the file must not
    local text = render(llama8b(), { fsdp_degree = 8 }, { framework = "fsdp2" })
    assert.truthy(text:find("  defer_fsdp_grad_sync: false", 1, true), text)
  end)

  it("says what AutoModel cannot build", function()
    -- DDP replicas with context parallelism: fsdp2 needs dp_replicate_size < dp_size
    local _, differs = render(llama8b(), { dp_degree = 4, cp_degree = 2, micro_batch_num = 16 })
    assert.are.equal(1, #differs)
    assert.truthy(differs[1]:find("^NOT EXPRESSIBLE in AutoModel: DDP replicas"))
    -- a partial full recompute: activation_checkpointing wraps every block
    local rec = { fsdp_degree = 8, layer_recompute = "full" }
    local text = render(llama8b(), rec)
    assert.truthy(has(text, "  activation_checkpointing: true"))
    text = render(llama8b(), { fsdp_degree = 8, layer_recompute = "selective" })
    assert.truthy(has(text, '  activation_checkpointing: selective'))
    -- plain DDP is strategy ddp
    text, differs = render(llama8b(), { dp_degree = 8 })
    assert.are.same({}, differs)
    assert.truthy(has(text, "  strategy: ddp"))
  end)
end)

describe("the model's config file in the launch files", function()
  local H = require "spec_helpers"
  -- AutoModel 36044ad3 builds a class outside its registry
  -- (_transformers/registry.py MODEL_ARCH_MAPPING) through transformers,
  -- whose constructor refuses model.backend (model_init.py l.1326-1332)
  it("writes model.backend only for the classes AutoModel builds itself", function()
    local function run(name, cluster)
      local dir = H.tmpdir()
      local code, _, err = H.apsearch("run", "--model", "examples/models/" .. name .. ".json", "--cluster",
        cluster or "h100-sxm-80gb:2x8", "--set", "training.framework=automodel", "--out", dir .. "/o", "--top-k", "1", "--quiet")
      assert.are.equal(0, code, err)
      return assert(H.read(dir .. "/o/launch/rank1_automodel.yaml"))
    end
    local llama = run("llama-3.1-8b")
    assert.truthy(llama:find("\n  backend:\n    _target_: nemo_automodel.components.models.common.BackendConfig", 1,
      true), llama)
    assert.is_nil(llama:find("attn_implementation", 1, true))
    local mistral = run("mistral-7b-v0.1")
    assert.is_nil(mistral:find("BackendConfig", 1, true), mistral)
    assert.truthy(mistral:find("\n  attn_implementation: flash_attention_2  # as estimated; transformers builds " ..
      "MistralForCausalLM (no model.backend", 1, true), mistral)
    -- no expert parallelism for transformers' class (capabilities.py
    -- validate_for_mesh): 46.7 B parameters need 24 H100s, not 16
    local mixtral = run("mixtral-8x7b", "h100-sxm-80gb:4x8")
    assert.truthy(mixtral:find("\n  ep_size: 1\n", 1, true), mixtral)
    assert.is_nil(mixtral:find("BackendConfig", 1, true))
    assert.truthy(mixtral:find("# APPROXIMATE: transformers' MixtralForCausalLM runs its own experts", 1, true))
    -- the policy's training.transformers_model decides, as the estimate read it
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/olmoe-1b-7b-0924.json", "--cluster",
      "h100-sxm-80gb:1x8", "--set", "training.framework=automodel", "--set", "training.transformers_model=false",
      "--out", dir .. "/o", "--top-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    local own = H.read(dir .. "/o/launch/rank1_automodel.yaml")
    assert.truthy(own:find("BackendConfig", 1, true), own)
    assert.is_nil(own:find("NOT EXPRESSIBLE in AutoModel: expert parallelism", 1, true))
    assert.truthy(own:find("# NOTE: training.transformers_model = false: AutoModel 36044ad3 has no OlmoeForCausalLM " ..
      "of its own", 1, true), own)
    assert.are.equal("MistralForCausalLM", automodel.config_class(H.ROOT .. "/examples/models/mistral-7b-v0.1.json"))
    assert.is_nil(automodel.config_class(H.ROOT .. "/examples/models/none.json"))
  end)

  it("is named by its absolute path, whatever directory the run was given it from", function()
    local dir = H.tmpdir()
    local code = H.apsearch("run", "--model", "examples/models/llama-3.1-8b.json", "--cluster", "h100-sxm-80gb:1x8",
      "--out", dir .. "/o", "--top-k", "1", "--quiet")
    assert.are.equal(0, code)
    local yaml = assert(H.read(dir .. "/o/launch/rank1_automodel.yaml"))
    assert.truthy(yaml:find("pretrained_model_name_or_path: " .. H.ROOT .. "/examples/models/llama-3.1-8b.json", 1,
      true), yaml)
  end)
end)
