--- tests/lua/launch_release_spec.lua -- `--torchtitan-version v0.2.2`:
-- the TOML job file of a TorchTitan release (apsearch.launch.torchtitan_toml).
--
-- Every key written is a key of the release's JobConfig (the list below is
-- transcribed from torchtitan/config/job_config.py at tag v0.2.2,
-- 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce) with a value of its type, and
-- the values are the strategy's: degrees, batch sizes, sequence length,
-- activation checkpointing (the release's layer-frequency rule,
-- distributed/activation_checkpoint.py _apply_layer_sac), compile, float8.
-- What the release cannot say is a NOT EXPRESSIBLE line, which marks the
-- file as differing.  The same files went through the release's own
-- ConfigManager out of the suite (docs/launch.md).
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local launch = require "apsearch.launch"
local options = require "apsearch.launch.options"
local toml_writer = require "apsearch.launch.torchtitan_toml"
local h = require "spec_helpers"

local ROOT = h.ROOT
local TAG = "v0.2.2"

--- The keys of the sections the writer may write, transcribed from the
-- dataclasses Job, Model, Training, Parallelism, ActivationCheckpoint,
-- Compile, Float8Linear, MXLinear of torchtitan/config/job_config.py at
-- v0.2.2 (Training.dataloader's keys left out: never written).
local RELEASE_KEYS = {
  job = { "config_file", "dump_folder", "description", "print_config", "save_config_file", "custom_config_module" },
  model = { "name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion" },
  training = { "dataset", "dataset_path", "local_batch_size", "global_batch_size", "seq_len", "max_norm", "steps",
    "enable_cpu_offload", "dtype", "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug" },
  parallelism = { "data_parallel_replicate_degree", "data_parallel_shard_degree", "fsdp_reshard_after_forward",
    "tensor_parallel_degree", "disable_loss_parallel", "enable_async_tensor_parallel", "pipeline_parallel_degree",
    "module_fqns_per_model_part", "pipeline_parallel_first_stage_less_layers",
    "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule",
    "pipeline_parallel_schedule_csv", "pipeline_parallel_microbatch_size",
    "pipeline_parallel_expert_parallel_overlap", "context_parallel_degree", "context_parallel_load_balancer",
    "context_parallel_rotate_method", "expert_parallel_degree", "expert_tensor_parallel_degree",
    "expert_parallel_comm_backend" },
  activation_checkpoint = { "mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns",
    "early_stop", "memory_budget", "visualize_memory_budget_pareto", "preserve_rng_state", "determinism_check",
    "debug" },
  compile = { "enable", "components", "backend" },
  ["quantize.linear.float8"] = { "enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp",
    "recipe_name", "filter_fqns", "emulate" },
  ["quantize.linear.mx"] = { "mxfp8_dim1_cast_kernel_choice", "recipe_name", "filter_fqns" },
}

--- A TOML value of the subset the writer emits: basic strings, integers,
-- floats, booleans, arrays (nested).
-- @treturn any value, integer next position
local function value(s, i)
  i = s:find("%S", i)
  local c = s:sub(i, i)
  if c == '"' then
    local j, out = i + 1, {}
    while true do
      local ch = s:sub(j, j)
      if ch == '"' then break end
      if ch == "\\" then
        local e = s:sub(j + 1, j + 1)
        if e == "u" then out[#out + 1] = utf8.char(tonumber(s:sub(j + 2, j + 5), 16)) j = j + 6
        else out[#out + 1] = e j = j + 2 end
      else out[#out + 1] = ch j = j + 1 end
    end
    return table.concat(out), j + 1
  elseif c == "[" then
    local list, j = {}, i + 1
    while true do
      j = s:find("%S", j)
      if s:sub(j, j) == "]" then return list, j + 1 end
      local v
      v, j = value(s, j)
      list[#list + 1] = v
      j = s:find("%S", j)
      if s:sub(j, j) == "," then j = j + 1 end
    end
  elseif s:sub(i, i + 3) == "true" then return true, i + 4
  elseif s:sub(i, i + 4) == "false" then return false, i + 5
  end
  local num = s:match("^[-+%d.eE]+", i)
  return math.tointeger(tonumber(num)) or tonumber(num), i + #num
end

--- `{section = {key = value}}` of a TOML file, and its `# ` comment lines.
local function parse_toml(text)
  local t, sec, comments = {}, nil, {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^#") then
      comments[#comments + 1] = line:sub(3)
    elseif line:match("^%[") then
      sec = line:match("^%[([^%]]+)%]$")
      assert.is_nil(t[sec], "section twice: " .. sec)
      t[sec] = {}
    elseif line:match("%S") then
      local k, rest = line:match("^([%w_]+) = (.*)$")
      assert.is_string(k, "not a key line: " .. line)
      local v, j = value(rest, 1)
      local tail = rest:sub(j)
      assert.truthy(tail == "" or tail:match("^  # "), "trailing text: " .. line)
      assert.is_nil(t[sec][k], "key twice: " .. sec .. "." .. k)
      t[sec][k] = v
    end
  end
  return t, comments
end

--- The release files of an example policy's top-k: `{rec, toml (parsed),
-- text, comments, differs, stages}` per rank.
local function files(example, opts)
  local p = policy.load(ROOT .. "/examples/" .. example, opts)
  -- as --torchtitan-version: the target recorded, the release line's
  -- settings where the policy does not say (v0.2.2: one cross entropy)
  require("apsearch.cli").add_launchable(p, nil, TAG)
  local r = search.run(p)
  assert.is_true(#r.top_k_strategies > 0, "no feasible strategy")
  local out = {}
  for _, f in ipairs(launch.render_all(r)) do
    if f.engine == "torchtitan" then
      local rec = r.top_k_strategies[f.rank]
      local t, comments = parse_toml(f.text)
      out[#out + 1] = { rec = rec, toml = t, text = f.text, comments = comments, differs = f.differs, name = f.name,
        stages = r.stage_summary[f.rank].stages, training = r.inputs.training, model = p.model }
    end
  end
  return out
end

-- Llama-3.1-8B on 8 H100 (fsdp2, global batch 64 x 8192), top 3
local LLAMA8 = "llama3_8b_h100.lua"
-- Llama-3.1-70B on 64 H100 (fsdp2, global batch 512 x 8192)
local LLAMA70 = "llama3_70b_h100.lua"

--- Every key is a release key and every value of its type.
local function check_keys(t)
  local rel = options.torchtitan_releases[TAG]
  for sec, kv in pairs(t) do
    for k, v in pairs(kv) do
      local fact = rel.keys[sec .. "." .. k]
      assert.is_table(fact, sec .. "." .. k .. " is not a key of " .. TAG)
      assert.is_true(options.release_value_ok(fact, v), sec .. "." .. k .. " has a value of another type")
    end
  end
end

--- The values against the strategy (result record, stage summary).
local function check_values(f)
  local r, t, tr = f.rec, f.toml, f.training
  local P, T = t.parallelism, t.training
  assert.are.equal(r.dp_degree, P.data_parallel_replicate_degree)
  assert.are.equal(r.fsdp_degree, P.data_parallel_shard_degree)
  assert.are.equal(r.tp_degree, P.tensor_parallel_degree)
  assert.are.equal(r.pp_degree, P.pipeline_parallel_degree)
  assert.are.equal(r.cp_degree, P.context_parallel_degree)
  assert.are.equal(tr.seq_length, T.seq_len)
  assert.are.equal(tr.global_batch_size, T.global_batch_size)
  local dp = r.dp_degree * r.fsdp_degree
  -- train.py: gradient accumulation = global / (local x dp);
  -- pipeline_parallel.py: microbatches = local // microbatch size
  assert.are.equal(0, T.global_batch_size % (T.local_batch_size * dp))
  if r.pp_degree > 1 then
    assert.are.equal(r.micro_batch_size, P.pipeline_parallel_microbatch_size)
    assert.are.equal(r.micro_batch_num, T.local_batch_size // P.pipeline_parallel_microbatch_size)
  else
    assert.is_nil(P.pipeline_parallel_microbatch_size)
    assert.are.equal(r.micro_batch_size, T.local_batch_size)
    assert.are.equal(r.micro_batch_num, T.global_batch_size // (T.local_batch_size * dp))
  end
  local AC = t.activation_checkpoint
  local layers, rc = {}, {}
  for i, s in ipairs(f.stages) do layers[i], rc[i] = s.num_layers, s.recompute_layers or 0 end
  if r.layer_recompute == "none" then
    assert.are.equal("none", AC.mode)
  elseif r.layer_recompute == "selective" then
    assert.are.same({ "selective", "op" }, { AC.mode, AC.selective_ac_option })
  elseif AC.mode == "selective" then
    -- _apply_layer_sac: a block recomputed when the process's block count is a multiple of k
    local k = tonumber(AC.selective_ac_option)
    for i, n in ipairs(layers) do assert.are.equal(rc[i], n // k) end
  else
    assert.are.equal("full", AC.mode)
  end
  local compile = tr.torch_compile == true
  assert.are.equal(compile, t.compile.enable)
  assert.are.equal(tr.precision == "fp8", t.model.converters ~= nil and t.model.converters[1] == "quantize.linear.float8")
  local rel = options.torchtitan_releases[TAG]
  assert.are.equal(toml_writer.model_name(rel, f.model), t.model.name)
end

describe("launch: TorchTitan release job files (--torchtitan-version)", function()
  it("transcribes v0.2.2's JobConfig keys for every section the writer uses", function()
    local rel = options.torchtitan_releases[TAG]
    local n = 0
    for sec, keys in pairs(RELEASE_KEYS) do
      for _, k in ipairs(keys) do
        assert.is_table(rel.keys[sec .. "." .. k], sec .. "." .. k)
        n = n + 1
      end
    end
    local m = 0
    for _ in pairs(rel.keys) do m = m + 1 end
    assert.are.equal(66, n)
    assert.are.equal(n, m)
    -- HEAD's names that v0.2.2 does not have
    assert.is_nil(rel.keys["parallelism.enable_sequence_parallel"])
    assert.is_nil(rel.keys["parallelism.num_pp_microbatches"])
    assert.is_nil(rel.keys["training.disable_cuda_graphs"])
    assert.is_nil(rel.keys["training.num_tokens_per_train_step"])
    -- types and Literal values as annotated
    assert.are.equal("int", rel.keys["parallelism.pipeline_parallel_microbatch_size"].type)
    assert.is_true(rel.keys["parallelism.pipeline_parallel_layers_per_stage"].nullable)
    assert.is_true(options.release_value_ok(rel.keys["activation_checkpoint.mode"], "memory_budget"))
    assert.is_false(options.release_value_ok(rel.keys["activation_checkpoint.mode"], "op"))
    assert.is_false(options.release_value_ok(rel.keys["training.local_batch_size"], 1.5))
    assert.is_true(options.release_value_ok(rel.keys["quantize.linear.float8.recipe_name"], nil))
    assert.is_false(options.release_value_ok(rel.keys["training.seq_len"], nil))
  end)

  it("writes rank<N>_torchtitan.toml with the release's keys and the strategy's values (Llama-3.1-8B)", function()
    local fs = files(LLAMA8, { set = { "top_k=3" } })
    assert.are.equal(3, #fs)
    for _, f in ipairs(fs) do
      assert.are.equal(string.format("rank%d_torchtitan.toml", f.rec.rank), f.name)
      check_keys(f.toml)
      check_values(f)
      assert.are.equal("8B", f.toml.model.flavor)
      assert.are.same({}, f.differs)
      assert.truthy(f.text:find("73a0e6979dd10b6b1904098eb3c8f62c18ab87ce", 1, true), "names the release commit")
      assert.truthy(f.text:find("-m torchtitan.train --job.config_file <launch-dir>/" .. f.name, 1, true))
    end
    -- rank 1 of this policy: FSDP 8, one sequence of 8192 per micro-batch, 8 accumulation steps
    local t = fs[1].toml
    assert.are.same({ 1, 8, 1, 64, 8192 }, { t.parallelism.data_parallel_replicate_degree,
      t.parallelism.data_parallel_shard_degree, t.training.local_batch_size, t.training.global_batch_size,
      t.training.seq_len })
    assert.are.equal("always", t.parallelism.fsdp_reshard_after_forward)
    assert.are.equal("bfloat16", t.training.mixed_precision_param)
  end)

  it("pipelines 70B with the release's own split and microbatch keys", function()
    local fs = files(LLAMA70, { set = { "search_space.pp_degree=4", "top_k=3" },
      fix = { "vpp_degree=1", "layer_recompute=full" } })
    for _, f in ipairs(fs) do
      check_keys(f.toml)
      check_values(f)
      local P = f.toml.parallelism
      assert.are.equal("1F1B", P.pipeline_parallel_schedule)
      -- 80 layers + 1 + 1 over 4 stages (generate_llm_fqn_per_model_part): 20, 21, 20, 19
      local split = require("apsearch.launch.torchtitan").titan_split(4, 80,
        P.pipeline_parallel_first_stage_less_layers, P.pipeline_parallel_last_stage_less_layers)
      for i, s in ipairs(f.stages) do assert.are.equal(s.num_layers, split[i]) end
      assert.are.equal("70B", f.toml.model.flavor)
    end
  end)

  it("recomputes some layers with a layer frequency when one gives every stage its count", function()
    assert.are.equal(4, toml_writer.layer_sac_freq({ 32 }, { 8 }))
    assert.are.equal(2, toml_writer.layer_sac_freq({ 16, 16 }, { 8, 8 }))
    assert.are.equal(3, toml_writer.layer_sac_freq({ 20, 21, 20, 19 }, { 6, 7, 6, 6 }))
    assert.is_nil(toml_writer.layer_sac_freq({ 20, 21, 20, 19 }, { 10, 10, 10, 10 }))
    local fs = files(LLAMA8, { fix = { "layer_recompute=full", "recompute_num_layers=8" } })
    for _, f in ipairs(fs) do
      check_values(f)
      assert.are.same({ "selective", "4" }, { f.toml.activation_checkpoint.mode,
        f.toml.activation_checkpoint.selective_ac_option })
    end
  end)

  it("writes float8 tensorwise, as estimated, with the lm_head ('output') left in bf16", function()
    -- recipe_name unset: the release's dynamic tensorwise scaling (float8.py @ v0.2.2), whose casts and
    -- float8 TP gathers the estimate prices; rowwise was written before (a third of the speed-up over bf16)
    local fs = files(LLAMA8, { set = { "training.precision=fp8" } })
    local t = fs[1].toml
    check_keys(t)
    assert.are.same({ "quantize.linear.float8" }, t.model.converters)
    assert.is_nil(t["quantize.linear.float8"].recipe_name)
    assert.are.same({ "output" }, t["quantize.linear.float8"].filter_fqns)
    assert.is_nil(table.concat(fs[1].differs, "\n"):find("tensorwise", 1, true))
  end)

  it("marks what v0.2.2 cannot say as NOT EXPRESSIBLE: the file differs", function()
    local fs = files(LLAMA8, { set = { "training.cuda_graphs=true" } })
    assert.truthy(fs[1].differs[1]:find("^NOT EXPRESSIBLE in TorchTitan v0.2.2: CUDA graphs"))
    assert.truthy(fs[1].text:find("does not build as estimated", 1, true))
    -- a chunked loss, which v0.2.2 does not have (its loss is one cross
    -- entropy; --torchtitan-version prices that unless the policy says)
    fs = files(LLAMA8, { set = { "training.loss_chunks=8" } })
    assert.truthy(table.concat(fs[1].differs, "\n"):find("NOT EXPRESSIBLE in TorchTitan v0.2.2: the chunked loss " ..
      "the estimate prices (loss_chunks = 8)", 1, true))
    -- a GeGLU MLP (Gemma's): the release's FeedForward gates with SiLU
    -- (torchtitan.block_lacks, shared with HEAD's family checks)
    fs = files(LLAMA8, { set = { "model.glu_activation=gelu" } })
    assert.truthy(table.concat(fs[1].differs, "\n"):find("NOT EXPRESSIBLE in TorchTitan v0.2.2: gelu-gated MLP " ..
      "(FeedForward and GroupedExperts gate with SiLU)", 1, true), table.concat(fs[1].differs, "\n"))
    fs = files(LLAMA8, { set = { "training.precision=nvfp4", "cluster.device=b200" } })
    assert.truthy(fs[1].differs[1]:find("^NOT EXPRESSIBLE in TorchTitan v0.2.2: nvfp4"))
    assert.is_nil(fs[1].toml.model.converters)
    -- a model that is none of the release's llama3 flavours
    fs = files("qwen25_7b_a100.lua")
    check_keys(fs[1].toml)
    local joined = table.concat(fs[1].differs, "\n")
    assert.truthy(joined:find("the model's shape (28 layers, dim 3584", 1, true))
    assert.truthy(joined:find("RoPE theta 1000000.0", 1, true))
  end)

  it("writes a model of no flavour as the flavour with its layer count, so that the pipeline keys apply", function()
    -- Qwen2.5-72B (80 layers, dim 8192, 64 heads, 8 kv) on 64 H100 at PP 4 x VPP 4: written as 8B (32
    -- layers), v0.2.2's pipeline_llm refused pipeline_parallel_layers_per_stage = 5 ("Number of virtual
    -- stages (7) must be divisible by pipeline parallel size (4)", pipeline_parallel.py at 73a0e697)
    local fs = files("llama3_70b_h100.lua", { set = { "model=qwen2.5-72b" }, fix = { "pp_degree=4", "vpp_degree=4" } })
    check_keys(fs[1].toml)
    assert.are.equal("70B", fs[1].toml.model.flavor)
    local joined = table.concat(fs[1].differs, "\n")
    assert.truthy(joined:find("written as flavour 70B (80 layers", 1, true))
    local lps = fs[1].toml.parallelism.pipeline_parallel_layers_per_stage
    if lps then
      local first = fs[1].toml.parallelism.pipeline_parallel_first_stage_less_layers or 1
      local last = fs[1].toml.parallelism.pipeline_parallel_last_stage_less_layers or 1
      assert.are.equal(0, math.ceil((80 + first + last) / lps) % 4)
    end
  end)

  it("says when the pipeline keys split a layer count the written flavour does not have", function()
    -- Qwen2.5-7B's 28 layers match no flavour (8B 32, 70B 80, 405B 126):
    -- under PP the keys are the estimate's split of 28 layers
    local fs = files("llama3_70b_h100.lua", { set = { "model=qwen2.5-7b" }, fix = { "pp_degree=2" } })
    local joined = table.concat(fs[1].differs, "\n")
    assert.truthy(joined:find("the pipeline keys below split the model's 28 layers; on flavour 8B's 32 the " ..
      "release's pipeline_llm", 1, true), joined)
    -- without PP, no such line
    local fs1 = files("llama3_70b_h100.lua", { set = { "model=qwen2.5-7b" }, fix = { "pp_degree=1" } })
    assert.is_nil(table.concat(fs1[1].differs, "\n"):find("pipeline keys below", 1, true))
  end)

  it("names the release's qwen3 and its flavour for Qwen3 (dense 32B, tied 1.7B); no pipeline there", function()
    -- qwen3_args at v0.2.2: "32B" (dim 5120, 64 layers, 64 heads, 8 kv, 25600), "1.7B" (2048, 28 layers,
    -- 16 heads, 8 kv, 6144, enable_weight_tying); head_dim 128, theta 1e6, norm_eps 1e-6 as config.json's
    for _, t in ipairs({ { "qwen3-32b", "32B" }, { "qwen3-1.7b", "1.7B" } }) do
      local fs = files(LLAMA8, { set = { "model=" .. t[1] }, fix = { "pp_degree=1" } })
      for _, f in ipairs(fs) do
        check_keys(f.toml)
        check_values(f)
        assert.are.same({ "qwen3", t[2] }, { f.toml.model.name, f.toml.model.flavor })
        assert.are.same({}, f.differs)
      end
    end
    -- get_train_spec: pipelining_fn None, so train.py raises on PP > 1
    local fs = files("llama3_70b_h100.lua", { set = { "model=qwen3-32b" }, fix = { "pp_degree=2" } })
    assert.are.equal("qwen3", fs[1].toml.model.name)
    assert.truthy(table.concat(fs[1].differs, "\n"):find("pipeline parallelism (pipeline_parallel_degree 2): " ..
      "the release's qwen3 TrainSpec has no pipelining_fn", 1, true))
  end)

  it("names qwen3's 30B-A3B for Qwen3-30B-A3B and says how its routing differs", function()
    local fs = files("qwen3_30b_a3b_h100.lua", { set = { "training.framework=fsdp2", "training.precision=fp8",
      "search_space.zero_stage=0" }, fix = { "pp_degree=1", "tp_degree=1" } })
    local f = fs[1]
    check_keys(f.toml)
    assert.are.same({ "qwen3", "30B-A3B" }, { f.toml.model.name, f.toml.model.flavor })
    assert.are.equal(f.rec.ep_degree, f.toml.parallelism.expert_parallel_degree)
    -- the router's gate stays bf16 with the lm_head (TokenChoiceTopKRouter.gate, an nn.Linear)
    assert.are.same({ "output", "moe.router.gate" }, f.toml["quantize.linear.float8"].filter_fqns)
    local joined = table.concat(f.differs, "\n")
    -- MoEArgs.load_balance_coeff 1e-3 (an expert bias), no auxiliary loss (config.json's 0.001),
    -- GroupedExperts outside quantize.linear
    assert.truthy(joined:find("the release's flavours add an expert bias to choose the experts", 1, true))
    assert.truthy(joined:find("the load-balancing loss (coefficient 0.001)", 1, true))
    assert.truthy(joined:find("GroupedExperts stay bf16", 1, true))
    assert.is_nil(joined:find("model's shape", 1, true))
  end)

  it("names deepseek_v3's 671B for DeepSeek-V3 and gpt_oss's 20b for gpt-oss-20b, with what they build otherwise", function()
    -- deepseekv3_args "671B" at v0.2.2: DeepSeek-V3's shape and routing (sigmoid, route_norm, 2.5, groups 8 / 4,
    -- the expert bias), but norm_eps 1e-5 and YaRN only beyond 4096 (precompute_freqs_cis)
    local fs = files("deepseek_v3_h100_1024.lua", { set = { "training.framework=fsdp2", "training.mtp_num_layers=0",
      "top_k=1" }, fix = { "cp_degree=1" } })
    local f = fs[1]
    check_keys(f.toml)
    assert.are.same({ "deepseek_v3", "671B" }, { f.toml.model.name, f.toml.model.flavor })
    local joined = table.concat(f.differs, "\n")
    assert.truthy(joined:find("norm epsilon 1e-06: the flavours' is 1e-05 (a job file picks a flavour of " ..
      "deepseekv3_args", 1, true), joined)
    assert.truthy(joined:find("YaRN at seq_len 4096: the release scales RoPE only beyond original_seq_len 4096", 1,
      true), joined)
    for _, no in ipairs({ "model's shape", "router scores", "route_scale", "expert groups", "expert bias" }) do
      assert.is_nil(joined:find(no, 1, true), no)
    end
    assert.truthy(f.text:find("# NOTE: the flavour masks attention block-causally by document", 1, true))
    -- flex as DeepEP: the release's deepseek_v3 parallelize reads expert_parallel_comm_backend (l.100-121);
    -- its qwen3 does not
    fs = files("deepseek_v3_h100_1024.lua", { set = { "training.framework=fsdp2", "training.mtp_num_layers=0",
      "search_space.moe_token_dispatcher=flex", "top_k=1" }, fix = { "cp_degree=1" } })
    check_keys(fs[1].toml)
    assert.are.equal("flex", fs[1].rec.moe_token_dispatcher)
    assert.are.equal("deepep", fs[1].toml.parallelism.expert_parallel_comm_backend)
    fs = files("qwen3_30b_a3b_h100.lua", { set = { "training.framework=fsdp2", "search_space.zero_stage=0",
      "search_space.moe_token_dispatcher=flex", "top_k=1" }, fix = { "pp_degree=1", "tp_degree=1" } })
    assert.is_nil(fs[1].toml.parallelism.expert_parallel_comm_backend)
    assert.truthy(table.concat(fs[1].differs, "\n"):find("moe_token_dispatcher = flex: the release's qwen3 " ..
      "dispatches all-to-all whatever expert_parallel_comm_backend says", 1, true))
    -- gptoss_configs "20b": its attention, window, biases and experts are gpt-oss-20b's; an expert bias and
    -- no auxiliary loss are not; no pipeline parallelism (pipelining_fn None)
    fs = files(LLAMA8, { set = { "model=gpt-oss-20b", "top_k=1" } })
    f = fs[1]
    check_keys(f.toml)
    assert.are.same({ "gpt_oss", "20b" }, { f.toml.model.name, f.toml.model.flavor })
    joined = table.concat(f.differs, "\n")
    assert.truthy(joined:find("the release's flavours add an expert bias", 1, true), joined)
    assert.truthy(joined:find("the load-balancing loss (coefficient 0.9)", 1, true), joined)
    for _, no in ipairs({ "model's shape", "window", "biases", "YaRN", "clamped", "NOT WRITTEN" }) do
      assert.is_nil(joined:find(no, 1, true), no)
    end
  end)

  it("says what the release's deepseek_v3 and gpt_oss lack of DeepSeek-V3.2 and DeepSeek-V4 (was silent)", function()
    -- DeepSeek-V3.2's indexer: deepseekv3_args' model attends densely (the HEAD file said so, the release's not)
    local fs = files("deepseek_v3_h100_1024.lua", { set = { "model=deepseek-v3.2", "training.framework=fsdp2",
      "training.mtp_num_layers=0", "top_k=1" }, fix = { "cp_degree=1" } })
    assert.are.same({ "deepseek_v3", "671B" }, { fs[1].toml.model.name, fs[1].toml.model.flavor })
    assert.truthy(table.concat(fs[1].differs, "\n"):find("DeepSeek Sparse Attention (the lightning indexer of 64 x " ..
      "128 and top-2048 sparse attention): the release's deepseek_v3 (models/deepseek_v3/model) has no indexer", 1,
      true))
    -- DeepSeek-V4-Flash (attention sinks: gpt_oss): its own layers and partial RoPE
    fs = files("deepseek_v3_h100_1024.lua", { set = { "model=deepseek-v4-flash", "training.framework=fsdp2",
      "training.mtp_num_layers=0", "top_k=1" }, fix = { "cp_degree=1", "pp_degree=1" } })
    local joined = table.concat(fs[1].differs, "\n")
    assert.are.equal("gpt_oss", fs[1].toml.model.name)
    assert.truthy(joined:find("partial RoPE (rotary_percent 0.125; the release's gpt_oss rotates every dim", 1, true),
      joined)
    assert.truthy(joined:find("DeepSeek-V4's layers (hyper-connections hc_mult", 1, true), joined)
  end)

  it("names llama4's 17bx16e for Llama 4 Scout and 17bx128e for Maverick, with what they build otherwise", function()
    -- llama4_args at v0.2.2: dim 5120, 48 layers, 40 heads, 8 kv; the experts' and the shared expert's width
    -- 4 x 5120 -> 2/3 -> x1.2 -> / (top 1 + 1 shared) rounded up to multiple_of 2048 = 8192, Maverick's dense
    -- layers (interleave_moe_layer_step 2) 16384; Scout's llama3 RoPE scaling (16, 1, 1, 8192), Maverick's none.
    -- Neither flavour has L2 Q/K norms or NoPE layers; MoEArgs' load_balance_coeff 1e-3 is an expert bias
    local base = { "training.framework=fsdp2", "training.seq_length=8192", "top_k=1",
      "training.global_batch_size=256", "search_space.ep_degree=8" }
    local nodes8 = { "cluster.nodes=8" }
    local function run(model, extra)
      local set = { "model=" .. model }
      for _, v in ipairs(base) do set[#set + 1] = v end
      for _, v in ipairs(extra or {}) do set[#set + 1] = v end
      local f = files(LLAMA8, { set = set, fix = { "pp_degree=1", "cp_degree=1" } })[1]
      check_keys(f.toml)
      check_values(f)
      return f, table.concat(f.differs, "\n")
    end
    local f, joined = run("llama-4-scout-17b-16e", nodes8)
    assert.are.same({ "llama4", "17bx16e" }, { f.toml.model.name, f.toml.model.flavor })
    assert.are.equal(8, f.toml.parallelism.expert_parallel_degree)
    assert.truthy(joined:find("weightless L2 Q/K norms on the RoPE layers (qk_l2_norm): the release's llama4 " ..
      "Attention has none", 1, true), joined)
    assert.truthy(joined:find("no RoPE on every 4-th layer (nope_layer_period): the flavour rotates every layer", 1,
      true), joined)
    assert.truthy(joined:find("the release's flavours add an expert bias", 1, true), joined)
    -- seq_len 8192 is one chunk: no chunked-attention line; shape, RoPE scaling and routing are the flavour's
    for _, no in ipairs({ "model's shape", "RoPE scaling", "router scores", "route_scale", "chunked" }) do
      assert.is_nil(joined:find(no, 1, true), no)
    end
    assert.are.equal(4, #f.differs)
    -- (400B parameters: 256 GPUs, FSDP over 32)
    f, joined = run("llama-4-maverick-17b-128e", { "training.seq_length=16384", "cluster.nodes=32",
      "search_space.fsdp_degree=32" })
    assert.are.same({ "llama4", "17bx128e" }, { f.toml.model.name, f.toml.model.flavor })
    assert.truthy(joined:find("chunked attention (8192-token chunks, attention_chunk_size) at seq_len 16384: " ..
      "the flavour attends causally over the whole sequence", 1, true), joined)
    for _, no in ipairs({ "model's shape", "RoPE scaling", "qk_l2_norm", "router scores" }) do
      assert.is_nil(joined:find(no, 1, true), no)
    end
    -- Maverick's layout with 16 experts is neither flavour: the shape line names both
    f, joined = run("llama-4-maverick-17b-128e", { "model.num_experts=16", "cluster.nodes=8" })
    assert.are.equal("17bx128e", f.toml.model.flavor)
    assert.truthy(joined:find("the model's shape (48 layers, dim 5120, 40 heads, 8 kv heads, 16 experts of 8192, " ..
      "top 1, MoE every 2 layers): the release's llama4 flavours are 17bx128e, 17bx16e; written as flavour " ..
      "17bx128e (48 layers, dim 5120, 40 heads, 8 kv heads, 128 experts of 8192, top 1, MoE every 2 layers)", 1,
      true), joined)
    -- flex as DeepEP: the release's llama4 parallelize reads expert_parallel_comm_backend (l.114-135)
    f = run("llama-4-scout-17b-16e", { "search_space.moe_token_dispatcher=flex", "cluster.nodes=8" })
    assert.are.equal("deepep", f.toml.parallelism.expert_parallel_comm_backend)
  end)

  it("run --torchtitan-version: the files, the recorded input, the refused value, --launchable", function()
    local dir = h.tmpdir()
    local code, _, err = h.apsearch("run", "examples/llama3_8b_h100.lua", "--top-k", "1", "--quiet",
      "--candidates", "none", "--torchtitan-version", "v0.2.2", "--out", dir)
    assert.are.equal(0, code, err)
    local text = h.read(dir .. "/launch/rank1_torchtitan.toml")
    assert.is_string(text)
    assert.is_nil(h.read(dir .. "/launch/rank1_torchtitan.py"))
    check_keys((parse_toml(text)))
    assert.truthy(h.read(dir .. "/result.json"):find('"torchtitan_version": *"v0.2.2"'))
    -- the release's loss is one cross entropy: the estimate priced that
    -- (the fsdp2 default is HEAD's 8 chunks; a second breaker pass found
    -- v0.2.2 files ranked at the chunked loss's memory)
    assert.truthy(h.read(dir .. "/result.json"):find('"loss_chunks": *1[,\n ]'))
    code, _, err = h.apsearch("run", "examples/llama3_8b_h100.lua", "--torchtitan-version", "v0.1.0")
    assert.are.equal(2, code)
    assert.are.equal("apsearch: --torchtitan-version: torchtitan_version: must be head, v0.2.2 (got \"v0.1.0\")\n", err)
    -- every strategy graphs the step, which v0.2.2 cannot: none is launchable
    code, _, err = h.apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--set", "training.cuda_graphs=true", "--launchable", "torchtitan", "--torchtitan-version", "0.2.2")
    assert.are.equal(1, code, err)
    -- head (the default) keeps the Python module, for which CUDA graphs are expressible
    code = h.apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--set", "training.cuda_graphs=true", "--launchable", "torchtitan")
    assert.are.equal(0, code)
  end)
end)
