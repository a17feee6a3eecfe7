-- tests/lua/offload_spec.lua -- Megatron-Core's fine-grained activation
-- offloading from the user's side (training.offload_modules,
-- activation_offload_fraction; src/core/offload.c): the spelling the
-- policy and the cases file take, the refusals, the Megatron launch flags
-- and the memory it moves.  The byte counts are hand-computed in
-- tests/c/test_offload.c.

local schema = require "apsearch.schema"
local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."

local POLICY = [[
return {
  model = { config = "%s/examples/models/qwen3-30b-a3b.json" },
  cluster = { device = "h100-sxm-80gb", num_devices = 16, devices_per_node = 8 },
  training = { seq_length = 4096, global_batch_size = 512, precision = "bf16", framework = "megatron"%s },
  search_space = { tp_degree = {1}, pp_degree = {1}, dp_degree = {16}, ep_degree = {8},
    micro_batch_size = {1}, layer_recompute = {"none"}, zero_stage = {1} },
}
]]

local function policy(extra)
  local dir = H.tmpdir()
  local path = dir .. "/p.lua"
  H.write(path, POLICY:format(ROOT, extra or ""))
  return path, dir
end

describe("offload_modules", function()
  it("takes Megatron's module names joined by / or as an array, spelt back in one order", function()
    assert.are.equal("expert_fc1/moe_act", schema.offload_modules("moe_act/expert_fc1"))
    assert.are.equal("expert_fc1/moe_act", schema.offload_modules("moe_act,expert_fc1"))
    assert.are.equal("core_attn/attn_proj", schema.offload_modules({ "attn_proj", "core_attn" }))
    assert.is_nil(schema.offload_modules("expert_fc1/expert_fc1"))
    assert.is_nil(schema.offload_modules("fc1"))
    assert.is_nil(schema.offload_modules({}))
    local none, unmodelled = schema.offload_modules("expert_fc1/qkv_linear")
    assert.is_nil(none)
    assert.are.equal("qkv_linear", unmodelled)
  end)

  it("refuses a module apsearch does not model, and Megatron's refusals, in one line with exit 2", function()
    local p = policy()
    local code, _, err = H.apsearch("run", p, "--set", "training.offload_modules=qkv_linear")
    assert.are.equal(2, code)
    assert.truthy(err:find("training.offload_modules: Megatron's offload module qkv_linear is not modelled", 1, true),
      err)
    code, _, err = H.apsearch("run", p, "--set", "training.offload_modules=attn_proj")
    assert.are.equal(2, code)
    assert.truthy(err:find("attn_proj without core_attn", 1, true), err)
    code, _, err = H.apsearch("run", p, "--set", "training.activation_offload_fraction=0.9")
    assert.are.equal(2, code)
    assert.truthy(err:find("activation_offload_fraction: 0.9 needs training.offload_modules", 1, true), err)
    code, _, err = H.apsearch("run", p, "--set", "training.offload_modules=expert_fc1",
      "--set", "training.framework=fsdp2")
    assert.are.equal(2, code)
    assert.truthy(err:find("Megatron-Core's --fine-grained-activation-offloading", 1, true), err)
  end)

  it("moves the experts' fc1 inputs off the device and writes Megatron's flags", function()
    local p = policy()
    local function peak(...)
      local dir = H.tmpdir()
      local code, _, err = H.apsearch("run", p, "--top-k", "1", "--out", dir .. "/o", ...)
      assert.are.equal(0, code, err)
      local r = H.read_json(dir .. "/o/result.json")
      return r.top_k_strategies[1], dir .. "/o"
    end
    local _, none = H.apsearch("run", p, "--top-k", "1")
    -- without offload the layout is over the 80 GB device (activations of
    -- 48 layers of 32,768 routed rows)
    assert.truthy(none:find("no feasible strategy", 1, true), none)
    local top, out = peak("--set", "training.offload_modules=expert_fc1", "--set",
      "training.activation_offload_fraction=0.9")
    assert.are.equal("expert_fc1", top.training and top.training.offload_modules or
      H.read_json(out .. "/result.json").inputs.training.offload_modules)
    local sh = assert(H.read(out .. "/launch/rank1_megatron.sh"))
    H.assert_megatron_flags(sh)
    assert.truthy(sh:find("\n  --fine-grained-activation-offloading\n  --offload-modules expert_fc1\n" ..
      "  --activation-offload-fraction 0.9\n", 1, true), sh)
    assert.truthy(sh:find("\nexport NVTE_CPU_OFFLOAD_V1=1 ", 1, true), sh)
    local tt = assert(H.read(out .. "/launch/rank1_torchtitan.py"))
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: fine-grained activation offload", 1, true))
    -- full-iteration graphs: Megatron-Core asserts a cap on the copies in
    -- flight (transformer_config.py @ d98e8a64), which the file sets
    local _, graphed = peak("--set", "training.offload_modules=expert_fc1", "--set", "training.cuda_graphs=true",
      "--set", "training.cuda_graph_scope=full_iteration")
    sh = assert(H.read(graphed .. "/launch/rank1_megatron.sh"))
    H.assert_megatron_flags(sh)
    assert.truthy(sh:find("\n  --cuda-graph-impl full_iteration\n", 1, true), sh)
    assert.truthy(sh:find("\n  --fine-grained-offloading-max-inflight-offloads 1\n", 1, true), sh)
  end)

  it("reads the cases file's offload_modules and exp_avg_bf16 columns (Megatron-LM's DeepSeek-V3 GB200 recipe)",
    function()
      local r = H.validated(ROOT .. "/tests/fixtures/heldout/megatron_lm_moe_recipes.csv")
      local c = H.by_id(r.cases).mlr002
      assert.are.equal("expert_fc1", c.inputs.training.offload_modules)
      assert.is_true(c.inputs.training.exp_avg_bf16)
      local dir = H.tmpdir()
      local bad = dir .. "/bad.csv"
      local text = assert(H.read(ROOT .. "/tests/fixtures/heldout/megatron_lm_moe_recipes.csv"))
      H.write(bad, (text:gsub(",expert_fc1,true,", ",mlp_norm,true,", 1)))
      local code, out, err = H.apsearch("validate", bad)
      assert.truthy((out .. err):find('offload_modules = "mlp_norm": Megatron\'s offload module mlp_norm is not modelled',
        1, true), out .. err)
      assert.is_true(code == 0 or code == 2)
    end)
end)
