-- tests/lua/policy_spec.lua -- policy loading, strict validation, --set,
-- --fix and unit suffixes (lua/apsearch/policy.lua, lua/apsearch/schema.lua).

local policy = require "apsearch.policy"

local H = require "spec_helpers"
local write, tmpdir, err_of = H.write, H.tmpdir, H.err_of
local ROOT = os.getenv("APS_ROOT") or "."

-- an H100 as the default Megatron stack (megatron-bridge-25) hands it to
-- the estimate: the preset with its attention kernel's benchmarked
-- efficiency (apsearch.stacks, cuDNN fused attention)
local H100 = { base = "h100-sxm-80gb", attention_efficiency = require("apsearch.stacks").H100_CUDNN_ATTENTION }

local function base()
  return {
    model = "llama-3.1-8b",
    cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
    training = { global_batch_size = 64, seq_length = 8192 },
    search_space = { data_parallel = "auto", tp_degree = { 1, 2, 4, 8 } },
  }
end

local function norm(raw, opts)
  return policy.from_table(raw, "policy.lua", opts)
end

describe("precision names of other tools", function()
  it("suggests the precision a PyTorch or TransformerEngine name stands for, and takes only apsearch's", function()
    local raw = base()
    raw.training.precision = "bfloat16"
    assert.are.equal('policy.lua: training.precision: expected one of bf16, fp16, fp8, mxfp8, nvfp4; did you mean '
      .. '"bf16"? (got "bfloat16")', err_of(norm, raw))
    raw.training.precision = "FP4"
    assert.truthy(err_of(norm, raw):find('did you mean "nvfp4"?', 1, true))
  end)
end)

describe("model names", function()
  it("takes a preset in any case, and every example config by its file name", function()
    local raw = base()
    raw.model = "Llama-3.1-8B"
    assert.are.equal("llama-3.1-8b", norm(raw).model.name:lower())
    raw.model = "GPT-OSS-20B"
    assert.are.equal(24, norm(raw).model.num_layers) -- examples/models/gpt-oss-20b.json
    local names = require("apsearch.presets").all_model_names()
    assert.are.equal("llama-3.1-8b", names[1]) -- the presets first, then the examples
    local seen = {}
    for _, n in ipairs(names) do seen[n] = true end
    assert.is_true(seen["gpt-oss-120b"] and seen["glm-4.5"] and seen["deepseek-v3"])
  end)

  it("says when a preset name is also a directory here, and which one it took", function()
    local lfs = require "lfs"
    local dir, here = tmpdir(), lfs.currentdir()
    assert(lfs.mkdir(dir .. "/llama-3.1-8b"))
    assert(lfs.chdir(dir))
    local ok, p = pcall(norm, base())
    assert(lfs.chdir(here))
    assert.is_true(ok, p)
    assert.are.equal("llama-3.1-8b", p.model.name:lower())
    local said = table.concat(p.warnings, "\n")
    assert.truthy(said:find("note: llama-3.1-8b names a preset and a directory here: the preset is taken "
      .. "(./llama-3.1-8b for the local one)", 1, true), said)
  end)

  it("says a file name that is not there is a missing file, with the files beside it", function()
    local lfs = require "lfs"
    local dir, here = tmpdir(), lfs.currentdir()
    write(dir .. "/qwen3-32b.json", "{}")
    local raw = base()
    raw.model = "qwen3-32b.jsn"
    assert(lfs.chdir(dir))
    local ok, err = pcall(norm, raw)
    assert(lfs.chdir(here))
    assert.is_false(ok)
    assert.truthy(tostring(err):find('model: no such file (a model preset name or a config.json path); ' ..
      'did you mean "qwen3-32b.json"?', 1, true), tostring(err))
    raw.model = "llama3-70b"
    err = err_of(norm, raw)
    assert.truthy(err:find('unknown model preset; did you mean', 1, true), err)
    assert.truthy(err:find('"llama-3.1-70b"', 1, true), err)
    -- a config path with a typo: the file meant, beside it
    raw.model = dir .. "/Qwen3-32B.json"
    assert.are.equal(dir .. '/Qwen3-32B.json: cannot read config: no such file; did you mean "qwen3-32b.json"?',
      err_of(norm, raw))
    -- names compared without the ".json" they share: "nope" is not near "qwen3-32b"
    -- ("nope.json" is 3 edits from "foo.json", within the 9-letter name's 3)
    local f = assert(io.open(dir .. "/foo.json", "w")) f:write("{}") f:close()
    raw.model = dir .. "/nope.json"
    assert.is_nil(err_of(norm, raw):find("did you mean", 1, true))
    -- the path without its ".json": that file, not a neighbour's near
    -- name (examples/models/llama-3.1-8b was "llama-3.1-70b.json")
    write(dir .. "/llama-3.1-70b.json", "{}")
    write(dir .. "/llama-3.1-8b.json", "{}")
    raw.model = dir .. "/llama-3.1-8b"
    assert.are.equal(dir .. '/llama-3.1-8b: cannot read config: no such file; did you mean "' .. dir ..
      '/llama-3.1-8b.json"?', err_of(norm, raw))
    -- a preset's name with ".json": the preset (not a path in a directory)
    raw.model = dir .. "/nowhere/llama-3.1-8b.json"
    assert.is_nil(err_of(norm, raw):find("the preset", 1, true))
    raw.model = "llama-3.1-8b.json"
    assert.are.equal('llama-3.1-8b.json: cannot read config: no such file; did you mean the preset "llama-3.1-8b"?',
      err_of(norm, raw))
    -- a preset's name with a trailing slash: the preset
    raw.model = "llama-3.1-8b/"
    assert.are.equal('llama-3.1-8b/: cannot read config: no such file; did you mean the preset "llama-3.1-8b"?',
      err_of(norm, raw))
    -- a bare name (read as a preset's) with a config of that name and
    -- ".json" here: that file, as a path
    local policy = require "apsearch.policy"
    assert.are.equal('did you mean "' .. dir .. '/llama-3.1-8b.json"?', policy.model_ref_hint(dir .. "/llama-3.1-8b"))
    local cwd = require("lfs").currentdir()
    require("lfs").chdir(dir)
    write(dir .. "/myllama.json", "{}")
    local ok, e = pcall(norm, { model = "myllama", cluster = raw.cluster, training = raw.training })
    require("lfs").chdir(cwd)
    assert.is_false(ok)
    assert.truthy(tostring(e):find('unknown model preset; did you mean "./myllama.json"?', 1, true), e)
    assert.is_nil(policy.model_ref_hint("llama-3.1-8b"))
  end)
end)

describe("policy validation", function()
  it("normalizes a minimal policy", function()
    local p = norm(base())
    assert.are.equal("policy.lua", p.file)
    assert.are.equal("policy", p.name)
    assert.are.equal("llama-3.1-8b", p.model.name)
    assert.are.equal(32, p.model.num_layers)
    assert.are.same({ device = H100, num_devices = 8, devices_per_node = 8 }, p.cluster)
    -- the preset's config states attention_dropout 0.0: no dropout, neither
    -- probability
    assert.are.same({ global_batch_size = 64, seq_length = 8192, dropout = false, attention_dropout = 0,
      hidden_dropout = 0 }, p.training)
    assert.are.equal("auto", p.search_space.data_parallel)
    assert.are.same({ 1, 2, 4, 8 }, p.search_space.dims.tp_degree)
    assert.are.equal(10, p.top_k)
    assert.are.equal("step_time", p.objective)
    assert.are.equal("table", p.outputs.format)
    assert.are.equal(0, #p.overrides)
  end)

  it("rejects an unknown top-level field, naming file, field and value", function()
    local raw = base()
    raw.serch_space = {}
    assert.are.equal("policy.lua: serch_space: unknown field (got {})", H.plain(err_of(norm, raw)))
    assert.truthy(err_of(norm, raw):find('did you mean "search_space"? (known: cluster, constraints,', 1, true))
  end)

  it("names the section of a misplaced field, or of a field in a framework's own section", function()
    local raw = base()
    raw.local_batch_size = 4
    assert.truthy(err_of(norm, raw):find('^policy%.lua: local_batch_size: unknown field; "local_batch_size" is ' ..
      'a training field: %-%-set training%.local_batch_size=VALUE'), err_of(norm, raw))
    raw = base()
    -- NeMo AutoModel's YAML key
    raw.step_scheduler = { local_batch_size = 4 }
    assert.truthy(err_of(norm, raw):find('^policy%.lua: step_scheduler: unknown field; "local_batch_size" is ' ..
      'a training field: %-%-set training%.local_batch_size=VALUE'), err_of(norm, raw))
    raw = base()
    raw.parallelism = { num_pp_microbatches = 4 }
    assert.truthy(err_of(norm, raw):find("^policy%.lua: parallelism: unknown field %(known: "), err_of(norm, raw))
    -- a framework's name of a degree (TorchTitan's parallelism section, AutoModel's distributed one)
    raw = base()
    raw.parallelism = { pipeline_parallel_degree = 4 }
    assert.truthy(err_of(norm, raw):find('^policy%.lua: parallelism: unknown field; "pipeline_parallel_degree" is ' ..
      'the strategy dimension pp_degree: %-%-fix pp_degree=VALUE %(search_space%.pp_degree in a policy file%)'),
      err_of(norm, raw))
    -- inside a section: a strategy dimension, another section's field
    raw = base()
    raw.training.micro_batch_size = 2
    assert.truthy(err_of(norm, raw):find('^policy%.lua: training%.micro_batch_size: unknown field; ' ..
      '"micro_batch_size" is a strategy dimension: %-%-fix micro_batch_size=VALUE'), err_of(norm, raw))
    raw = base()
    raw.training.num_layers = 3
    assert.truthy(err_of(norm, raw):find('^policy%.lua: training%.num_layers: unknown field; "num_layers" is a ' ..
      'model field: %-%-set model%.num_layers=VALUE %(got 3%)'), err_of(norm, raw))
    -- several unknown fields: the first in key order, every time
    raw = base()
    raw.zzz, raw.aaa, raw[true], raw.mmm = 1, 2, 3, 4
    for _ = 1, 5 do
      assert.truthy(err_of(norm, raw):find("^policy%.lua: aaa: unknown field"), err_of(norm, raw))
    end
    raw = base()
    raw.training.zz_field, raw.training.aa_field, raw.training.mm_field = 1, 2, 3
    for _ = 1, 5 do
      assert.truthy(err_of(norm, raw):find("^policy%.lua: training%.aa_field: unknown field"), err_of(norm, raw))
    end
  end)

  it("rejects a name with control characters or bytes that are not UTF-8", function()
    local raw = base()
    raw.name = "a\27[31m"
    assert.are.equal('policy.lua: name: expected printable UTF-8 text (no control characters) (got "a\\27[31m")',
      err_of(norm, raw))
    raw.name = "\255\254"
    assert.are.equal('policy.lua: name: expected printable UTF-8 text (no control characters) (got "\\255\\254")',
      err_of(norm, raw))
  end)

  it("names a missing global batch or sequence length as missing, not as 0", function()
    local raw = base()
    raw.training = nil
    assert.are.equal("policy.lua: training.global_batch_size: required field is missing (got nothing)",
      err_of(norm, raw))
    raw.training = { global_batch_size = 64 }
    assert.are.equal("policy.lua: training.seq_length: required field is missing (got nothing)", err_of(norm, raw))
    -- a probe of the model and cluster alone (the built policy's) needs neither
    raw.training = nil
    assert.are.equal(8, norm(raw, { partial = true }).cluster.num_devices)
  end)

  it("rejects an unknown search dimension", function()
    local raw = base()
    raw.search_space.tp = { 1, 2 }
    local e = err_of(norm, raw)
    assert.truthy(e:match("^policy%.lua: search_space%.tp: unknown field"))
    assert.truthy(e:match("%(got {1, 2}%)$"))
  end)

  it("rejects unknown nested fields everywhere", function()
    local cases = {
      { function(r) r.cluster.gpus = 8 end, "policy.lua: cluster.gpus: unknown field (got 8)" },
      { function(r) r.training.lr = 3e-4 end, "policy.lua: training.lr: unknown field (got 0.0003)" },
      { function(r) r.cluster.device = { base = "h100-sxm-80gb", nvlink = 1 } end,
        "policy.lua: cluster.device.nvlink: unknown field (got 1)" },
      { function(r) r.search_space.tp_degree = { min = 1, max = 8, pow3 = true } end,
        "policy.lua: search_space.tp_degree.pow3: unknown field (got true)" },
      { function(r) r.constraints = { memory_limit = 60 } end,
        "policy.lua: constraints.memory_limit: unknown field (got 60)" },
      { function(r) r.outputs = { fmt = "json" } end,
        'policy.lua: outputs.fmt: unknown field (got "json")' },
      { function(r) r.model = { preset = "llama-3.1-8b", layers = 4 } end,
        "policy.lua: model.layers: unknown field (got 4)" },
    }
    for _, c in ipairs(cases) do
      local raw = base()
      c[1](raw)
      assert.are.equal(c[2], H.plain(err_of(norm, raw)))
    end
  end)

  it("rejects wrong types and ranges", function()
    local cases = {
      { function(r) r.training.seq_length = "8k" end,
        'policy.lua: training.seq_length: must be a positive integer (got "8k")' },
      { function(r) r.search_space.tp_degree = { 1, 0 } end,
        "policy.lua: search_space.tp_degree[2]: must be a positive integer (got 0)" },
      { function(r) r.search_space.tp_degree = 1.5 end,
        "policy.lua: search_space.tp_degree: must be a positive integer (got 1.5)" },
      { function(r) r.search_space.layer_recompute = { "none", "partial" } end,
        'policy.lua: search_space.layer_recompute[2]: expected one of none, selective, full (got "partial")' },
      { function(r) r.search_space.zero_stage = 4 end,
        "policy.lua: search_space.zero_stage: must be 0, 1, 2 or 3 (got 4)" },
      { function(r) r.search_space.sequence_parallel = "yes" end,
        'policy.lua: search_space.sequence_parallel: expected true or false (got "yes")' },
      { function(r) r.search_space.data_parallel = "fill" end,
        'policy.lua: search_space.data_parallel: expected "auto" or "manual" (got "fill")' },
      { function(r) r.training.precision = "fp7" end,
        'policy.lua: training.precision: expected one of bf16, fp16, fp8, mxfp8, nvfp4 (got "fp7")' },
      -- Megatron's hierarchical CP: a second CP degree apsearch does not search
      { function(r) r.search_space.cp_comm_type = { "p2p", "a2a+p2p" } end,
        "policy.lua: search_space.cp_comm_type[2]: a2a+p2p (hierarchical context parallelism) is not " ..
        "modelled: it needs Megatron's --hierarchical-context-parallel-sizes, an inner all-to-all degree " ..
        'apsearch does not search; use a2a or p2p (got "a2a+p2p")' },
      { function(r) r.top_k = 0 end, "policy.lua: top_k: must be a positive integer (got 0)" },
      { function(r) r.objective = "fastest" end,
        "policy.lua: objective: expected " .. table.concat(require("apsearch.objectives").names, ", ") ..
        ', an objective file (.lua), an objective table or a function(a, b) (got "fastest")' },
      { function(r) r.model = "llama-9" end, nil },
      { function(r) r.cluster = nil end, "policy.lua: cluster: required field is missing (got nothing)" },
      { function(r) r.search_space.tp_degree = { min = 8, max = 1 } end,
        "policy.lua: search_space.tp_degree.max: must be >= min = 8 (got 1)" },
      { function(r) r.search_space.tp_degree = {} end,
        "policy.lua: search_space.tp_degree: empty list of values (got {})" },
    }
    for _, c in ipairs(cases) do
      local raw = base()
      c[1](raw)
      local e = err_of(norm, raw)
      if c[2] then
        assert.are.equal(c[2], H.plain(e))
      else
        assert.truthy(e:match('^policy%.lua: model: unknown model preset'))
        assert.truthy(e:match('%(got "llama%-9"%)$'))
      end
    end
  end)

  it("expands ranges and de-duplicates lists", function()
    local raw = base()
    raw.search_space.fsdp_degree = { min = 1, max = 64, pow2 = true }
    raw.search_space.micro_batch_size = { min = 1, max = 7, step = 3 }
    raw.search_space.tp_degree = { 2, 1, 2, 4 }
    local d = norm(raw).search_space.dims
    assert.are.same({ 1, 2, 4, 8, 16, 32, 64 }, d.fsdp_degree)
    assert.are.same({ 1, 4, 7 }, d.micro_batch_size)
    assert.are.same({ 2, 1, 4 }, d.tp_degree)
  end)

  it("accepts scalars, arrays per stage and HSDP aliases", function()
    local raw = base()
    raw.search_space = {
      pp_degree = { 2, 4 }, hsdp_shard_degree = { 2, 4 }, hsdp_replicate_degree = 2,
      stage_partition = { { 16, 16 }, { 8, 8, 8, 8 }, "even" },
      layer_offset = { -1, 1 },                 -- one array
      recompute_num_layers = { -1, 4, { 2, 2 } },
    }
    local d = norm(raw).search_space.dims
    assert.are.same({ 2, 4 }, d.fsdp_degree)
    assert.are.same({ 2 }, d.dp_degree)
    assert.are.same({ { 16, 16 }, { 8, 8, 8, 8 }, "even" }, d.stage_partition)
    assert.are.same({ { -1, 1 } }, d.layer_offset)
    assert.are.same({ -1, 4, { 2, 2 } }, d.recompute_num_layers)
    raw.search_space.fsdp_degree = 2
    assert.truthy(err_of(norm, raw):find("given twice", 1, true))
  end)

  it("loads a model from a preset table with overrides, or a table", function()
    local raw = base()
    raw.model = { preset = "llama-3.1-8b", num_layers = 16, name = "llama-8b-half" }
    local p = norm(raw)
    assert.are.equal(16, p.model.num_layers)
    assert.are.equal(4096, p.model.hidden_size)
    assert.are.equal("llama-8b-half", p.model.name)
    raw.model = { name = "tiny", num_layers = 2, hidden_size = 64, num_attention_heads = 4,
      num_query_groups = 4, ffn_hidden_size = 128, vocab_size = 1000 }
    assert.are.equal("table", norm(raw).model_source)
  end)

  it("derives num_devices from nodes, and checks agreement", function()
    local raw = base()
    raw.cluster = { device = "a100-sxm4-80gb", nodes = 4 }
    assert.are.same({ device = "a100-sxm4-80gb", num_devices = 32, devices_per_node = 8 }, norm(raw).cluster)
    raw.cluster = { device = "a100-sxm4-80gb", num_devices = 4 }
    assert.are.equal(4, norm(raw).cluster.devices_per_node)
    raw.cluster = { device = "a100-sxm4-80gb", nodes = 2, num_devices = 8 }
    assert.are.equal("policy.lua: cluster.num_devices: disagrees with nodes x devices_per_node = 2 x 8 = 16 (got 8)",
      err_of(norm, raw))
    raw.cluster = "h100-sxm-80gb:4x8"
    assert.are.same({ device = H100, num_devices = 32, devices_per_node = 8 }, norm(raw).cluster)
  end)
end)

describe("unit suffixes", function()
  it("converts _gib, _gbps, _tflops, _us and _mib to SI fields", function()
    local raw = base()
    raw.cluster.device = { base = "h100-sxm-80gb", inter_node_bandwidth_gbps = 50,
      peak_bf16_tflops = 800, intra_node_latency_us = 3, memory_gib = 40 }
    raw.training.ddp_bucket_mib = 25
    raw.constraints = { memory_limit_gib = 60 }
    local p = norm(raw)
    assert.are.same({ base = "h100-sxm-80gb", inter_node_bandwidth = 50e9,
      peak_flops_bf16 = 800e12, intra_node_latency = 3e-6, memory_bytes = 40 * 2 ^ 30,
      attention_efficiency = H100.attention_efficiency }, p.cluster.device)
    assert.are.equal(25 * 2 ^ 20, p.training.ddp_bucket_bytes)
    assert.are.equal(60 * 2 ^ 30, p.training.memory_limit_bytes)
    assert.are.equal(math.type(p.training.memory_limit_bytes), "integer")
  end)

  it("routes cluster.memory_limit_gib to training.memory_limit_bytes", function()
    local raw = base()
    raw.cluster.memory_limit_gib = 70
    assert.are.equal(70 * 2 ^ 30, norm(raw).training.memory_limit_bytes)
  end)

  it("refuses the same field given twice in one policy", function()
    local raw = base()
    raw.cluster.memory_limit_gib = 70
    raw.training.memory_limit_bytes = 1e9
    assert.are.equal("policy.lua: cluster.memory_limit_gib: memory_limit_bytes is also set in training (got 75161927680)",
      err_of(norm, raw))
  end)

  it("rejects a suffix on a field of another unit", function()
    local raw = base()
    raw.training.seq_length_gib = 1
    assert.are.equal("policy.lua: training.seq_length_gib: unknown field (got 1)", H.plain(err_of(norm, raw)))
  end)
end)

describe("--set and --fix", function()
  it("overrides any dotted field with a parsed value and records it", function()
    local p = norm(base(), { set = {
      "training.global_batch_size=128", "training.flash_attention=false",
      "training.precision=fp8", "top_k=3", "objective=memory",
      "search_space.micro_batch_size=1,2,4",
    } })
    assert.are.equal(128, p.training.global_batch_size)
    assert.is_false(p.training.flash_attention)
    assert.are.equal("fp8", p.training.precision)
    assert.are.equal(3, p.top_k)
    assert.are.equal("memory", p.objective)
    assert.are.same({ 1, 2, 4 }, p.search_space.dims.micro_batch_size)
    assert.are.equal(6, #p.overrides)
    assert.are.same({ kind = "set", key = "training.global_batch_size", value = 128 }, p.overrides[1])
  end)

  it("maps cluster.memory_limit_gib=60 to training.memory_limit_bytes, replacing other spellings", function()
    local raw = base()
    raw.training.memory_limit_bytes = 1e9
    raw.constraints = { memory_limit_gib = 70 }
    local p = norm(raw, { set = { "cluster.memory_limit_gib=60" } })
    assert.are.equal(60 * 2 ^ 30, p.training.memory_limit_bytes)
  end)

  it("sets device fields on a preset name and model fields on a preset", function()
    local p = norm(base(), { set = { "cluster.device.inter_node_bandwidth_gbps=25",
      "model.num_layers=8", "cluster.nodes=2" } })
    assert.are.same({ base = "h100-sxm-80gb", inter_node_bandwidth = 25e9,
      attention_efficiency = H100.attention_efficiency }, p.cluster.device)
    assert.are.equal(8, p.model.num_layers)
    assert.are.equal(16, p.cluster.num_devices)
    local p2 = norm(base(), { set = { "cluster.num_devices=4" } })
    assert.are.equal(4, p2.cluster.num_devices)
    local p3 = norm(base(), { set = { "model=qwen2.5-7b" } })
    assert.are.equal(28, p3.model.num_attention_heads)
  end)

  it("sets cluster.nvlink_domain_size through the generic path (GB200 NVL72: 4 per host)", function()
    local p = norm(base(), { set = { "cluster.device=gb200", "cluster.devices_per_node=4",
      "cluster.nodes=16", "cluster.nvlink_domain_size=64" } })
    assert.are.same({ device = "gb200", num_devices = 64, devices_per_node = 4,
      nvlink_domain_size = 64 }, p.cluster)
    -- (a value the core refuses, such as 6 on 4-GPU hosts, is refused when
    -- the run builds its context; tests/c/test_presets.c)
    assert.are.equal("--set: cluster.nvlink_domain_size: must be an integer >= 0 (got -1)",
      err_of(norm, base(), { set = { "cluster.nvlink_domain_size=-1" } }))
  end)

  it("names --set in errors it causes", function()
    assert.are.equal("--set: cluster.gpus: unknown field (got 8)",
      H.plain(err_of(norm, base(), { set = { "cluster.gpus=8" } })))
    assert.are.equal("--set: training.seq_length: must be a positive integer (got 0)",
      err_of(norm, base(), { set = { "training.seq_length=0" } }))
    assert.are.equal('--set: expected KEY=VALUE (got "top_k")', err_of(norm, base(), { set = { "top_k" } }))
  end)

  it("--fix pins a dimension to one value or a list", function()
    local p = norm(base(), { fix = { "tp_degree=2", "micro_batch_size=1,2", "layer_recompute=full",
      "hsdp_shard_degree=4" } })
    local d = p.search_space.dims
    assert.are.same({ 2 }, d.tp_degree)
    assert.are.same({ 1, 2 }, d.micro_batch_size)
    assert.are.same({ "full" }, d.layer_recompute)
    assert.are.same({ 4 }, d.fsdp_degree)
    assert.are.same({ kind = "fix", key = "tp_degree", value = 2 }, p.overrides[1])
  end)

  it("--fix takes the short names and on / off the run's strategy lines print", function()
    local p = norm(base(), { fix = { "tp=4", "sp=on", "mbs=1,2", "recompute=selective" } })
    local d = p.search_space.dims
    assert.are.same({ 4 }, d.tp_degree)
    assert.are.same({ true }, d.sequence_parallel)
    assert.are.same({ 1, 2 }, d.micro_batch_size)
    assert.are.same({ "selective" }, d.layer_recompute)
    assert.are.same({ kind = "fix", key = "tp_degree", value = 4 }, p.overrides[1])
    assert.are.same({ kind = "fix", key = "sequence_parallel", value = true }, p.overrides[2])
    -- on / off only for an on-off field
    assert.are.equal('--fix: search_space.cp_degree: must be a positive integer (got "off")',
      err_of(norm, base(), { fix = { "cp=off" } }))
    -- the colon arrays the lines print (a breaker's find: refused), a
    -- comma list of them one array each; a split fixed replaces the
    -- policy's other way to say one
    local raw = base()
    raw.search_space.layer_offset = { "balanced" }
    p = norm(raw, { fix = { "pp=2", "stage_partition=16:16", "recompute_num_layers=2:2,1:1" } })
    d = p.search_space.dims
    assert.are.same({ { 16, 16 } }, d.stage_partition)
    assert.are.same({ { 2, 2 }, { 1, 1 } }, d.recompute_num_layers)
    assert.is_nil(d.layer_offset)
    -- and an on-off field says it takes both spellings, as --strategy does
    assert.are.equal('--fix: search_space.sequence_parallel: expected on, off, true or false (got "yes")',
      err_of(norm, base(), { fix = { "sp=on,yes" } }))
  end)

  it("refuses a blank training.software, naming where it was given", function()
    local raw = base()
    raw.training.software = "  "
    assert.are.equal('policy.lua: training.software: expected a release name such as "Megatron-Bridge 25.09" (got "  ")',
      err_of(norm, raw):gsub("^.*/", ""))
  end)

  it("names --fix in errors it causes", function()
    assert.are.equal("--fix: search_space.tp_degree: must be a positive integer (got 0)",
      err_of(norm, base(), { fix = { "tp_degree=0" } }))
    local e = err_of(norm, base(), { fix = { "tensor=2" } })
    assert.truthy(e:match("^%-%-fix: tensor: unknown search dimension"))
    -- a misspelt short name (the strategy lines' tp, mbs) gets its did-you-mean when no dimension is close;
    -- a misspelt dimension its dimension first
    assert.truthy(err_of(norm, base(), { fix = { "mbss=2" } }):find('unknown search dimension; did you mean "mbs"?',
      1, true))
    assert.truthy(err_of(norm, base(), { fix = { "tp_degre=2" } }):find('did you mean "tp_degree"? (', 1, true))
    -- a training field: where it goes
    assert.truthy(err_of(norm, base(), { fix = { "distributed_optimizer_instances=2" } }):find(
      "unknown search dimension; it is a training field: --set training.distributed_optimizer_instances=VALUE",
      1, true))
  end)

  it("--fix replaces an alias spelling of the same dimension", function()
    local raw = base()
    raw.search_space.hsdp_shard_degree = { 2, 4 }
    local p = norm(raw, { fix = { "fsdp_degree=8" } })
    assert.are.same({ 8 }, p.search_space.dims.fsdp_degree)
  end)
end)

describe("policy files", function()
  it("load in a sandbox with helpers, paths relative to the policy", function()
    local dir = tmpdir()
    write(dir .. "/tiny.json", [[{"model_type": "llama", "hidden_size": 256,
      "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 512,
      "vocab_size": 1000}]])
    local path = write(dir .. "/p.lua", [[
      assert(os == nil and io == nil and require == nil and debug == nil)
      assert(load == nil and loadfile == nil and dofile == nil)
      local m = hf("tiny.json")
      assert(m.hidden_size == 256 and apsearch.preset("llama-2-7b").vocab_size == 32000)
      return {
        model = "tiny.json",
        cluster = cluster("a100-sxm4-80gb", 2, 8),
        training = { global_batch_size = 32, seq_length = 1024 },
        search_space = { tp_degree = pow2(1, 8), micro_batch_size = range(1, 3) },
      }
    ]])
    local p = policy.load(path)
    assert.are.equal("tiny", p.model.name)
    assert.are.equal(path, p.file)
    assert.are.equal(16, p.cluster.num_devices)
    assert.are.same({ 1, 2, 4, 8 }, p.search_space.dims.tp_degree)
    assert.are.same({ 1, 2, 3 }, p.search_space.dims.micro_batch_size)
  end)

  it("reports syntax errors and runtime errors with file and line", function()
    local dir = tmpdir()
    local bad = write(dir .. "/bad.lua", "return { model = \n")
    assert.truthy(err_of(policy.load, bad):match("^" .. bad:gsub("%p", "%%%0") .. ":%d+:"))
    local rt = write(dir .. "/rt.lua", "local x = os.time()\nreturn {}\n")
    assert.truthy(err_of(policy.load, rt):find(rt .. ":1: attempt to index a nil value (global 'os')", 1, true))
    local notab = write(dir .. "/n.lua", "return 42\n")
    assert.are.equal(notab .. ": (return value): a policy must return a table (got 42)", err_of(policy.load, notab))
    assert.truthy(err_of(policy.load, dir .. "/missing.lua"):find("cannot open policy file", 1, true))
    -- a helper given a string names the policy's line, not apsearch's
    -- source (a fuzz finding: gib"num_devices" fell into Lua's string
    -- arithmetic inside policy.lua)
    local g = write(dir .. "/g.lua", 'return {\n  training = { memory_limit_bytes = gib"num_devices" } }\n')
    local e = err_of(policy.load, g)
    assert.truthy(e:find(g .. ':2: gib("num_devices"): expected a number of GiB', 1, true), e)
    assert.is_nil(e:find("apsearch/policy.lua", 1, true), e)
  end)

  it("loads rule files named in constraints.rules", function()
    local dir = tmpdir()
    write(dir .. "/no_tp8.lua", [[
      return { name = "no_tp8", code = "NO_TP8", cheap = true,
        check = function(s) return s.tp_degree < 8 end }
    ]])
    local raw = base()
    raw.constraints = { rules = { "no_tp8.lua", function() return true end } }
    local p = policy.from_table(raw, dir .. "/policy.lua")
    assert.are.equal(2, #p.constraints.rules)
    assert.are.equal("no_tp8", p.constraints.rules[1].name)
    assert.are.equal("NO_TP8", p.constraints.rules[1].code)
    assert.are.equal("policy_rule_2", p.constraints.rules[2].name)
    raw.constraints = { rules = { "nope.lua" } }
    assert.truthy(err_of(policy.from_table, raw, dir .. "/policy.lua"):find("rule file not found", 1, true))
    raw.constraints = { rules = { { name = "x", check = 1 } } }
    assert.truthy(err_of(policy.from_table, raw, dir .. "/policy.lua"):find("check: expected a function", 1, true))
    -- a name finds rules/<name>.lua beside the policy or a built-in; an
    -- example rule by its name is pointed at, not found
    raw.constraints = { rules = { "tp_in_node" } }
    local e = err_of(policy.from_table, raw, dir .. "/policy.lua")
    assert.truthy(e:find("unknown rule (no rules/tp_in_node.lua next to the policy or in the apsearch rules "
      .. "directory; apsearch's example " .. ROOT .. "/examples/rules/tp_in_node.lua is one: give its path", 1, true), e)
    raw.constraints = { rules = { "nope" } }
    e = err_of(policy.from_table, raw, dir .. "/policy.lua")
    assert.truthy(e:find("apsearch rules directory) (got \"nope\")", 1, true), e)
  end)

  it("loads every shipped example", function()
    for _, f in ipairs({ "llama3_8b_h100", "llama3_70b_h100", "qwen25_7b_a100", "llama3_70b_h100_1024_sweep" }) do
      local p = policy.load(ROOT .. "/examples/" .. f .. ".lua")
      assert.are.equal("auto", p.search_space.data_parallel)
      assert.truthy(p.training.global_batch_size > 0)
    end
  end)
end)
