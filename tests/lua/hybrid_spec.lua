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
    list[3] = "conv"
    assert.are.equal('n.json: layers_block_type[3]: expected mamba, attention or mlp (got "conv")',
      H.err_of(hf.from_config, cfg, "n.json"))
    list[3] = "moe"
    assert.are.equal('NotImplemented: n.json: layers_block_type: MoE (moe) layers are not modelled (got "moe")',
      H.err_of(hf.from_config, cfg, "n.json"))
  end)
end)

describe("nemotron_h: bad values exit 2 naming file, key and value", function()
  local cases = {
    { "hybrid_override_pattern", "M-X", 'hybrid_override_pattern: character 3 is not M, * or - (got "M-X")' },
    { "hybrid_override_pattern", "M*E-", 'NotImplemented: %s: hybrid_override_pattern: MoE (E) layers are ' ..
      'not modelled (got "M*E-")' },
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
    { "num_nextn_predict_layers", 1, "NotImplemented: %s: num_nextn_predict_layers: multi-token-prediction " ..
      "layers are not modelled (got 1)" },
  }
  local dir = H.tmpdir()
  for i, case in ipairs(cases) do
    it(case[1] .. " = " .. tostring(case[2]), function()
      local cfg = decoded()
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
    -- every flag with a value has its fact (apsearch.launch.options), ints at least their minimum
    local options = require "apsearch.launch.options"
    local block = assert(sh:match("MEGATRON_ARGS=%((.-)\n%)"), sh)
    for flag, val in block:gmatch("\n  (%-%-[%w%-]+) ([^\n]+)") do
      local fact = options.megatron.facts[flag]
      assert.truthy(fact, "no fact for " .. flag)
      if fact.type == "int" then assert.is_true(tonumber(val) >= (fact.min or 1), flag .. " " .. val) end
      if fact.values then assert.is_true(fact.values[val] == true, flag .. " " .. val) end
    end
    assert.truthy(H.read(dir .. "/launch/rank1_torchtitan.py"):find("NOT EXPRESSIBLE", 1, true))
    assert.truthy(H.read(dir .. "/launch/rank1_mindformers.yaml"):find("NOT EXPRESSIBLE", 1, true))
  end)
end)
