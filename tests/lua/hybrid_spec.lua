-- tests/lua/hybrid_spec.lua -- hybrid Mamba-2 models: the nemotron_h import
-- (lua/apsearch/hf.lua) of nvidia/Nemotron-H-8B-Base-8K with its exact
-- parameter count, bad values of every new config key exiting 2 with the
-- file, key and value, `apsearch run` giving a feasible strategy with a
-- breakdown, and the launch files (Megatron-LM's hybrid model; NOT
-- EXPRESSIBLE notes for TorchTitan and MindFormers).

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local PATH = ROOT .. "/examples/models/nemotron-h-8b-base-8k.json"
local PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
-- NVIDIA-Nemotron-3-Nano-30B-A3B: Mamba-2, attention and MoE (E) layers
local MOE = ROOT .. "/examples/models/nemotron-3-nano-30b-a3b.json"
local NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

--- The --hybrid-layer-pattern of a Megatron script, and its '|' segments.
local function pattern_flag(sh)
  local v = assert(sh:match("%-%-hybrid%-layer%-pattern '([^']*)'"), sh)
  local segs = {}
  for seg in (v .. "|"):gmatch("([^|]*)|") do segs[#segs + 1] = seg end
  return v, segs
end

local function decoded()
  local f = assert(io.open(PATH))
  local cfg = cjson.decode(f:read("a"))
  f:close()
  return cfg
end

describe("nemotron_h import", function()
  -- tests/c/test_hybrid.c derives it: 24 Mamba-2 layers of 109,640,064,
  -- 4 attention layers of 41,947,136, 24 MLP layers of 176,164,864,
  -- embedding and output 2 x 536,870,912, final norm 4,096.  Published:
  -- "8B" (model card of nvidia/Nemotron-H-8B-Base-8K).
  it("Nemotron-H-8B-Base-8K: 8,100,852,736 parameters", function()
    local m = hf.load(PATH)
    assert.are.same({ 52, 4096, 32, 8, 128, 21504, 131072 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size, m.vocab_size })
    assert.are.same({ PATTERN, 128, 64, 128, 8, 4, 128 }, { m.hybrid_layer_pattern, m.mamba_num_heads,
      m.mamba_head_dim, m.mamba_state_dim, m.mamba_num_groups, m.mamba_conv_kernel, m.mamba_chunk_size })
    assert.are.same({ "relu2", "none", 1, false }, { m.mlp, m.position_embedding, m.norms_per_layer,
      m.tie_word_embeddings })
    local c = core.model_params(m)
    assert.are.same({ 24, 109640064, 4, 41947136, 24, 176164864 }, { c.mamba_layers, c.per_mamba_layer,
      c.attention_layers, c.per_attention_layer, c.mlp_layers, c.per_mlp_layer })
    assert.are.equal(7027106816, c.layers)
    assert.are.equal(8100852736, c.total)
  end)

  -- tests/c/test_hybrid.c derives it (transformers NemotronHMOE): 23
  -- Mamba-2 layers of 38,744,896, 6 attention layers of 23,399,040, 23 MoE
  -- layers of 1,297,468,160 (router 344,064 + expert bias 128 + 128
  -- experts of 2 x 2688 x 1856 + the shared expert 2 x 2688 x 3712 + norm
  -- 2688), 80,169,728 of them active (6 experts); embedding and output
  -- 2 x 352,321,536, final norm 2688.  Published (model card of
  -- nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16): 31.6B total, 3.2B active
  -- (without the input embedding).
  it("NVIDIA-Nemotron-3-Nano-30B-A3B: 31,577,940,288 parameters, 3,580,076,352 active", function()
    local m = hf.load(MOE)
    assert.are.equal(NANO_PATTERN, m.hybrid_layer_pattern)
    assert.are.same({ 128, 6, 1856, 3712, true, 2.5 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.moe_router_bias,
      m.moe_router_topk_scaling_factor })
    assert.is_nil(m.moe_router_pre_softmax) -- norm_topk_prob: the top-k renormalised
    assert.is_nil(m.moe_router_num_groups) -- n_group 1
    local c = core.model_params(m)
    assert.are.same({ 23, 38744896, 6, 23399040, 0, 23, 1297468160, 80169728 }, { c.mamba_layers,
      c.per_mamba_layer, c.attention_layers, c.per_attention_layer, c.mlp_layers, c.moe_layers,
      c.per_moe_layer, c.per_moe_layer_active })
    assert.are.same({ 30873294528, 31577940288, 3580076352 }, { c.layers, c.total, c.active })
    assert.is_true(math.abs(c.total / 31.6e9 - 1) < 0.02)
    assert.is_true(math.abs((c.active - c.embedding) / 3.2e9 - 1) < 0.02)
    assert.is_true(math.abs(c.active / 3.6e9 - 1) < 0.02) -- "3.6B including embeddings"
    -- inspect lists the kinds the model has, each layer's count and size,
    -- and no mean layer (which counted an E layer as a dense MLP)
    local code, out = H.apsearch("inspect", MOE)
    assert.are.equal(0, code)
    local rows = {}
    for k, v in out:gmatch("\n([%w_]+)%s+([%d,]+)") do rows[k] = tonumber((v:gsub(",", ""))) end
    assert.is_nil(out:find("\nper_layer", 1, true), out)
    assert.is_nil(rows.mlp_layers, out)
    assert.are.equal(rows.layers, rows.mamba_layers * rows.per_mamba_layer + rows.attention_layers *
      rows.per_attention_layer + rows.moe_layers * rows.per_moe_layer)
    assert.are.equal(30873294528, rows.layers)
  end)

  it("reads layers_block_type and the legacy key names", function()
    local cfg = decoded()
    local kinds = { M = "mamba", ["*"] = "attention", ["-"] = "mlp" }
    local list = {}
    for ch in PATTERN:gmatch(".") do list[#list + 1] = kinds[ch] end
    cfg.hybrid_override_pattern, cfg.layers_block_type = nil, list
    cfg.n_groups, cfg.mamba_n_groups = nil, 8
    local m = hf.from_config(cfg, "n.json")
    assert.are.equal(PATTERN, m.hybrid_layer_pattern)
    assert.are.equal(8, m.mamba_num_groups)
    -- both names in one file: the legacy key wins, as NemotronHConfig.
    -- __post_init__ pops it over the field (@ 13923c63), whatever the
    -- table's order (a fresh table each time: Lua's order varies)
    for _ = 1, 20 do
      local both = H.copy(cfg)
      both.n_groups, both.mamba_n_groups, both.chunk_size, both.mamba_chunk_size = 8, 4, 128, 256
      local b = hf.from_config(both, "n.json")
      assert.are.same({ 4, 256 }, { b.mamba_num_groups, b.mamba_chunk_size })
    end
    list[3] = "conv"
    assert.are.equal('n.json: layers_block_type[2]: expected mamba, attention, mlp or moe (got "conv")',
      H.err_of(hf.from_config, cfg, "n.json"))
    -- "moe" is an E layer (Nemotron 3's configs)
    local nano = H.read_json(MOE)
    local moe_kinds = { M = "mamba", ["*"] = "attention", E = "moe" }
    local moe_list = {}
    for ch in NANO_PATTERN:gmatch(".") do moe_list[#moe_list + 1] = moe_kinds[ch] end
    nano.hybrid_override_pattern, nano.layers_block_type = nil, moe_list
    assert.are.equal(NANO_PATTERN, hf.from_config(nano, "n.json").hybrid_layer_pattern)
  end)
end)

describe("nemotron_h: bad values exit 2 naming file, key and value", function()
  local cases = {
    { "hybrid_override_pattern", "M-X", 'hybrid_override_pattern: character 3 is not M, *, - or E (got "M-X")' },
    { "hybrid_override_pattern", (PATTERN:gsub("%-", "E", 1)), "n_routed_experts: required key is missing " ..
      "(the pattern has E (MoE) layers) (got nothing)" },
    { "moe_latent_size", 0, "moe_latent_size: expected a positive integer <= 16777216 (got 0)", nil, MOE },
    { "n_shared_experts", 2, "n_shared_experts: expected 1 (one shared expert of " ..
      "moe_shared_expert_intermediate_size) (got 2)", nil, MOE },
    { "num_hidden_layers", 50, "num_hidden_layers: expected 52, the layers of hybrid_override_pattern (got 50)" },
    { "mamba_num_heads", 0, "mamba_num_heads: expected a positive integer <= 16777216 (got 0)" },
    { "mamba_head_dim", "64", 'mamba_head_dim: expected a positive integer <= 16777216 (got "64")' },
    { "ssm_state_size", -1, "ssm_state_size: expected a positive integer <= 16777216 (got -1)" },
    { "n_groups", 3, "n_groups (model.mamba_num_groups): 3 does not divide mamba_num_heads 128" },
    { "conv_kernel", 0, "conv_kernel: expected a positive integer <= 16777216 (got 0)" },
    { "chunk_size", 1.5, "chunk_size: expected a positive integer <= 16777216 (got 1.5)" },
    { "expand", 0, "expand: expected a positive integer <= 16777216 (got 0)" },
    { "mlp_hidden_act", "gelu", 'mlp_hidden_act: expected "relu2" (apsearch prices the squared-ReLU MLP) ' ..
      '(got "gelu")' },
    { "mamba_hidden_act", "relu", 'mamba_hidden_act: expected "silu"' },
    { "use_conv_bias", false, "use_conv_bias: expected true (Megatron's MambaMixer asserts a conv bias) " ..
      "(got false)" },
    { "mamba_proj_bias", true, "mamba_proj_bias: expected false (biases are not modelled on a hybrid model) " ..
      "(got true)" },
    { "attention_head_dim", 0, "attention_head_dim: expected a positive integer <= 16777216 (got 0)" },
    { "mamba_d_conv", -4, "mamba_d_conv: expected a positive integer <= 16777216 (got -4)", "conv_kernel" },
    { "num_nextn_predict_layers", 1, "mtp_hybrid_override_pattern: required with num_nextn_predict_layers > 0 " ..
      "(the layers of an MTP depth; or mtp_layers_block_type) (got nothing)" },
  }
  local dir = H.tmpdir()
  for i, case in ipairs(cases) do
    it(case[1] .. " = " .. tostring(case[2]), function()
      local cfg = case[5] and H.read_json(case[5]) or decoded() -- [5]: another config
      cfg[case[1]] = case[2]
      if case[4] then cfg[case[4]] = nil end -- the legacy name alone
      local path = dir .. "/bad" .. i .. ".json"
      H.write(path, cjson.encode(cfg))
      local code, _, err = H.apsearch("inspect", path)
      assert.are.equal(2, code, err)
      local want = case[3]:find("%s", 1, true) and case[3]:format(path) or (path .. ": " .. case[3])
      assert.truthy(err:find(want, 1, true), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err) -- one line
    end)
  end
end)

describe("nemotron_h: apsearch run", function()
  it("finds a feasible strategy on one 8-GPU H100 node, with a breakdown", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "examples/models/nemotron-h-8b-base-8k.json",
      "--cluster", "h100-sxm-80gb:1", "--top-k", "1", "--format", "json", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local top = r.top_k_strategies[1]
    assert.is_not_nil(top, out:sub(1, 400))
    assert.are.equal(1, top.pp_degree)
    assert.is_true(#r.memory_breakdown > 0 and #r.stage_summary > 0)
    assert.is_true(top.performance_cost.step_time > 0 and top.memory_cost.total > 0)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("--hybrid-layer-pattern '" .. PATTERN .. "'", 1, true), sh)
    for _, flag in ipairs({ "--mamba-num-heads 128", "--mamba-head-dim 64", "--mamba-state-dim 128",
        "--mamba-num-groups 8", "--squared-relu", "--position-embedding-type none",
        "--spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec", "pretrain_hybrid.py" }) do
      assert.truthy(sh:find(flag, 1, true), flag .. "\n" .. sh)
    end
    H.assert_megatron_flags(sh) -- every flag Megatron-LM's, valued ones within their facts
    assert.truthy(H.read(dir .. "/launch/rank1_torchtitan.py"):find("NOT EXPRESSIBLE", 1, true))
    assert.truthy(H.read(dir .. "/launch/rank1_mindformers.yaml"):find("NOT EXPRESSIBLE", 1, true))
  end)
end)

describe("nemotron_h with MoE (E) layers: apsearch run", function()
  it("finds feasible strategies with expert parallelism on 16 H100s; the E layers are MoE layers", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "examples/models/nemotron-3-nano-30b-a3b.json",
      "--cluster", "h100-sxm-80gb:2", "--top-k", "3", "--format", "json", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local top = r.top_k_strategies[1]
    assert.is_not_nil(top, out:sub(1, 400))
    local with_ep = false
    for _, s in ipairs(r.top_k_strategies) do with_ep = with_ep or (s.ep_degree or 1) > 1 end
    assert.is_true(with_ep)
    assert.is_true(top.ep_degree > 1)
    assert.is_true(top.performance_cost.breakdown.ep_comm.total > 0, cjson.encode(top.performance_cost))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    -- the pattern, cut into the model chunks with pipeline parallelism
    local v, segs = pattern_flag(sh)
    assert.are.equal(NANO_PATTERN, (v:gsub("|", "")))
    assert.are.equal(top.pp_degree > 1 and top.pp_degree * top.vpp_degree or 1, #segs)
    for _, flag in ipairs({ "--num-experts 128", "--moe-router-topk 6", "--moe-ffn-hidden-size 1856",
        "--moe-shared-expert-intermediate-size 3712", "--moe-router-score-function sigmoid",
        "--moe-router-enable-expert-bias", "--moe-router-topk-scaling-factor 2.5", "--squared-relu",
        "--expert-model-parallel-size " .. math.tointeger(top.ep_degree), "pretrain_hybrid.py" }) do
      assert.truthy(sh:find(flag, 1, true), flag .. "\n" .. sh)
    end
    assert.falsy(sh:find("--moe-layer-freq", 1, true), sh) -- the pattern places the experts
    H.assert_megatron_flags(sh) -- every flag Megatron-LM's, valued ones within their facts
  end)

  it("captures the Mamba mixers as NVIDIA's recipes do: scope modules in any order, spelt back canonically", function()
    -- Megatron-Bridge v0.4.2 nemotron_3_workload_base_configs.py: cuda_graph_scope
    -- ["attn", "mamba", "moe_router", "moe_preprocess"]
    local dir = H.tmpdir()
    local function run(scope)
      return H.apsearch("run", "--model", "examples/models/nemotron-3-nano-30b-a3b.json",
        "--cluster", "h100-sxm-80gb:2", "--top-k", "1", "--format", "json", "--quiet", "--out", dir,
        "--set", "training.cuda_graphs=true", "--set", "training.cuda_graph_scope=" .. scope)
    end
    local code, out, err = run("moe_router+mamba+attn")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.are.equal("attn+mamba+moe_router", r.inputs.training.cuda_graph_scope)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("--cuda-graph-modules attn mamba moe_router moe_preprocess", 1, true), sh)
    H.assert_megatron_flags(sh)
    -- the graphed mixers launch less from the host than the same run without them
    local _, out2 = run("attn+moe_router")
    local host = function(x) return cjson.decode(x).top_k_strategies[1].performance_cost.breakdown.host_launch.total end
    assert.is_true(host(out) < host(out2), out2:sub(1, 200))
    -- whole layers of this dropless MoE model: what Megatron-Core can
    -- capture, the same modules and the same price as written out (the
    -- script wrote no mamba while the estimate priced the mixers captured;
    -- breaker pass, 2026-12-05)
    local code3, out3, err3 = run("layer")
    assert.are.equal(0, code3, err3)
    assert.truthy(H.read(dir .. "/launch/rank1_megatron.sh"):find(
      "\n  --cuda-graph-modules attn mamba moe_router moe_preprocess\n", 1, true))
    local _, out4 = run("attn+mamba+moe_router")
    local step = function(x) return cjson.decode(x).top_k_strategies[1].performance_cost.step_time end
    assert.are.equal(step(out4), step(out3))
    -- a dense-first MoE model's whole layers add the dense MLP (its
    -- moe_layer_freq has dense layers: Megatron-Core takes "mlp" there)
    local ddir = H.tmpdir()
    local dcode, _, derr = H.apsearch("run", "--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:128",
      "--set", "training.cuda_graphs=true", "--fix", "layer_recompute=selective", "-k", "1", "-q", "--out", ddir)
    assert.are.equal(0, dcode, derr)
    local dsh = H.read(ddir .. "/launch/rank1_megatron.sh")
    assert.truthy(dsh:find("\n  --cuda-graph-modules attn mlp moe_router moe_preprocess\n", 1, true), dsh)
    H.assert_megatron_flags(dsh)
    -- the one rule the estimate and the script read (core.model_params,
    -- aps_cuda_graph_dropless_modules): mixers for a hybrid model, the
    -- dense MLP for a dense-first one, neither for an all-MoE transformer
    local core = require "apsearch.core"
    assert.are.equal("attn+mamba+moe_router", core.model_params(H.example_model("nemotron-3-nano-30b-a3b"))
      .dropless_graph_scope)
    assert.are.equal("attn+mlp+moe_router", core.model_params(H.example_model("deepseek-v3")).dropless_graph_scope)
    assert.are.equal("attn+moe_router", core.model_params(H.example_model("qwen3-30b-a3b")).dropless_graph_scope)
    -- an array of modules reads as Megatron-Bridge writes it; one with a
    -- hole or a key would lose a module, and is refused
    local schema = require "apsearch.schema"
    assert.are.equal("attn+mamba+moe_router", schema.graph_scope({ "moe_router", "mamba", "attn" }))
    assert.is_nil(schema.graph_scope({ "attn", nil, "mamba" }))
    assert.is_nil(schema.graph_scope({ "attn", x = "mamba" }))
    -- a module given twice, an unknown one, and one the model lacks: one line, exit 2
    for scope, msg in pairs({
      ["attn+attn"] = "training.cuda_graph_scope: expected layer, full_iteration, none, or modules joined by + "
        .. "(each once): attn, mlp, mamba, moe_router, e.g. attn+moe_router (got \"attn+attn\")",
      ["attn+mambo"] = "(got \"attn+mambo\")",
      ["mlp"] = "training.cuda_graph_scope: mlp: every layer of the model is an MoE layer",
    }) do
      local c, o, e = run(scope)
      assert.are.equal(2, c, o)
      assert.truthy(e:find(msg, 1, true), e)
      assert.truthy(e:match("^apsearch: [^\n]+\n$"), e)
    end
  end)
end)

-- Nemotron 3 Super (the held-out config): latent MoE and an MTP depth
-- "*E", trained twice on one depth's weights as the Megatron-Bridge recipe
-- does (mtp_num_layers 2, mtp_use_repeated_layer): --moe-latent-size,
-- --mtp-use-repeated-layer, and the MTP depths after the main pattern, each
-- after a '/' (Megatron-LM d98e8a64 arguments.py l.757-785, 866-876: the
-- unified pattern, --mtp-num-layers inferred from it and equal).
describe("Nemotron 3 Super: apsearch run", function()
  it("writes --moe-latent-size and the MTP depths into --hybrid-layer-pattern", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model",
      "tests/fixtures/heldout_configs/nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json",
      "--cluster", "gb200:16x4", "--set", "training.mtp_num_layers=2", "--set", "training.mtp_repeated_layer=true",
      "--top-k", "1", "--format", "json",
      "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local top = cjson.decode(out).top_k_strategies[1]
    assert.is_not_nil(top, out:sub(1, 400))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    local v = pattern_flag(sh)
    local main, mtp = v:match("^([^/]*)(/.*)$")
    assert.are.equal("/*E/*E", mtp, v)
    assert.are.equal(88, #(main:gsub("|", "")))
    for _, flag in ipairs({ "--moe-latent-size 1024", "--mtp-num-layers 2", "--mtp-use-repeated-layer",
        "--num-experts 512",
        "--moe-router-topk 22", "--moe-shared-expert-intermediate-size 5376", "pretrain_hybrid.py" }) do
      assert.truthy(sh:find(flag, 1, true), flag .. "\n" .. sh)
    end
    H.assert_megatron_flags(sh)
  end)

  it("keeps the MTP pattern without depths, and notes a latent size without E layers (a breaker's finding)", function()
    local cfg = cjson.decode(H.read(ROOT ..
      "/tests/fixtures/heldout_configs/nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json"))
    -- num_nextn_predict_layers 0: the checkpoint has no depth, the pattern
    -- still says what one holds (it was dropped, and training.mtp_num_layers
    -- then asked for the pattern the file gives)
    cfg.num_nextn_predict_layers = 0
    local m = hf.from_config(cfg, "super0.json")
    assert.are.equal("*E", m.mtp_layer_pattern)
    assert.is_true((m.mtp_layers or 0) == 0)
    -- no E layers: the latent width has nothing to act on, said in a note
    cfg.hybrid_override_pattern = cfg.hybrid_override_pattern:gsub("E", "-")
    cfg.mtp_hybrid_override_pattern = nil
    local info
    m, info = hf.from_config(cfg, "dense.json")
    assert.is_nil(m.moe_latent_size)
    local said = false
    for _, n in ipairs(info.notes) do
      said = said or n:find("dense.json: moe_latent_size = 1024 is not used: the pattern has no E (MoE) layers",
        1, true) ~= nil
    end
    assert.is_true(said, table.concat(info.notes, "\n"))
  end)
end)

-- Pipeline parallelism (issue 25): a rank is priced by the layers it holds
-- (src/core/hybrid.c aps_hybrid_stage_mix), and the script cuts the pattern
-- into the same model chunks ('|' segments, which Megatron-LM's HybridModel
-- builds, hybrid_layer_allocation.py select_pipeline_segment @ d98e8a64;
-- checked with Megatron's own code out of the suite, docs/launch.md).
describe("hybrid models with pipeline parallelism: apsearch run", function()
  --- Every stage of the rank-1 strategy holds what the script's segments give
  -- its rank: chunk j on rank (j - 1) % p.
  local function stages_match_segments(r, sh)
    local top, st = r.top_k_strategies[1], r.stage_summary[1].stages
    local _, segs = pattern_flag(sh)
    local p = top.pp_degree
    assert.are.equal(p * top.vpp_degree, #segs)
    for i = 1, p do
      local n = 0
      for j = i, #segs, p do n = n + #segs[j] end
      assert.are.equal(st[i].num_layers, n, "stage " .. i)
    end
  end

  -- ibm-granite/granite-4.0-h-small as tests/lua/models_2026_spec.lua reads
  -- it (32.2B, 72 experts top 10, one Mamba group: TP 1 only): no strategy
  -- fitted one stage of 80 GB; with PP it fits.
  it("Granite-4.0-H-Small fits on 64 H100 nodes, pipelined", function()
    local lt = {}
    for i = 1, 40 do lt[i] = (i % 10 == 0) and "attention" or "mamba" end
    local cfg = { architectures = { "GraniteMoeHybridForCausalLM" }, model_type = "granitemoehybrid",
      hidden_size = 4096, intermediate_size = 768, layer_types = lt, mamba_d_head = 64, mamba_n_heads = 128,
      mamba_d_state = 128, mamba_expand = 2, mamba_n_groups = 1, mamba_d_conv = 4, num_attention_heads = 32,
      num_key_value_heads = 8, num_hidden_layers = 40, num_local_experts = 72, num_experts_per_tok = 10,
      shared_intermediate_size = 1536, tie_word_embeddings = true, vocab_size = 100352, hidden_act = "silu",
      max_position_embeddings = 131072, position_embedding_type = "nope" }
    local dir = H.tmpdir()
    H.write(dir .. "/config.json", cjson.encode(cfg))
    local code, out, err = H.apsearch("run", "--model", dir .. "/config.json", "--cluster", "h100-sxm-80gb:64",
      "--top-k", "3", "--format", "json", "--quiet", "--out", dir .. "/out")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local top = r.top_k_strategies[1]
    assert.is_not_nil(top, out:sub(1, 400))
    assert.is_true(top.pp_degree > 1)
    assert.are.equal(1, top.tp_degree)
    local sh = H.read(dir .. "/out/launch/rank1_megatron.sh")
    stages_match_segments(r, sh)
    H.assert_megatron_flags(sh)
  end)

  it("Nemotron-H-8B with pp_degree = 4, vpp_degree = 2 and full recompute", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "examples/models/nemotron-h-8b-base-8k.json",
      "--cluster", "h100-sxm-80gb:2", "--fix", "pp_degree=4", "--fix", "vpp_degree=2", "--fix",
      "layer_recompute=full", "--fix", "recompute_method=uniform", "--fix", "recompute_num_layers=1", "--top-k", "1", "--format", "json", "--quiet",
      "--out", dir)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local top = r.top_k_strategies[1]
    assert.are.same({ 4, 2, "full" }, { top.pp_degree, top.vpp_degree, top.layer_recompute })
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    stages_match_segments(r, sh)
    assert.are.equal(PATTERN, (pattern_flag(sh):gsub("|", "")))
    assert.truthy(sh:find("--recompute-granularity full", 1, true), sh)
    H.assert_megatron_flags(sh)
  end)
end)

describe("hybrid FSDP", function()
  -- Megatron-LM's torch FSDP2 wraps TransformerLayer units only
  -- (torch_fully_sharded_data_parallel.py l.60-65 @ d98e8a64): a
  -- MambaLayer's parameters would sit in the root unit, gathered for the
  -- whole step, which is not priced (new user, 2026-12-06: ranked first
  -- and likely out of memory); Megatron-FSDP's units include MambaLayer
  it("refuses torch FSDP2 on a model with Mamba-2 layers, takes Megatron-FSDP", function()
    local m = require("apsearch.hf").load(PATH)
    local cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
    local tr = { global_batch_size = 64, seq_length = 8192, framework = "megatron", precision = "bf16" }
    local e = core.context(m, cluster, tr):estimate({ fsdp_degree = 8, micro_batch_size = 1 })
    assert.is_false(e.feasible)
    assert.are.equal("NOT_MODELLED", e.reason)
    assert.truthy(e.message:find("torch FSDP2 shards TransformerLayer units, not MambaLayer", 1, true), e.message)
    -- whole, with its fix (it was cut at 255 bytes, before it: a new
    -- user's pass)
    assert.truthy(e.message:find('use training.fsdp_impl = "megatron_fsdp" or the distributed optimizer$'), e.message)
    tr.fsdp_impl = "megatron_fsdp"
    e = core.context(m, cluster, tr):estimate({ fsdp_degree = 8, micro_batch_size = 1 })
    assert.is_nil(e.message and e.message:find("MambaLayer", 1, true))
  end)
end)
