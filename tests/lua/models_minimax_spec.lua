-- tests/lua/models_minimax_spec.lua -- MiniMax-Text-01 and MiniMax-M1
-- (model_type minimax; the remote-code types minimax_text_01 and
-- minimax_m1 read by their classes): lightning attention beside GQA
-- softmax attention and Mixtral's experts, read as transformers builds
-- them (models/minimax/modular_minimax.py @ 008e5743) and priced for NeMo
-- AutoModel (src/core/gdn.c): the published counts, the layer kinds, the
-- refusals, the search space and the launch files.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local err_of = H.err_of

-- examples/models/minimax-m1.json, MiniMax's own config.json
-- (MiniMaxM1ForCausalLM, attn_type_list)
local function m1() return H.example_config("minimax-m1") end

-- The same model as transformers' own type writes it (the -hf
-- conversions: model_type minimax, MiniMaxForCausalLM, layer_types and
-- the *_factor residual scales instead of the remote code's keys)
local function hf_form()
  local c = m1()
  c.architectures, c.model_type, c.auto_map = { "MiniMaxForCausalLM" }, "minimax", nil
  c.layer_types = {}
  for i, v in ipairs(c.attn_type_list) do c.layer_types[i] = v == 0 and "linear_attention" or "full_attention" end
  c.attn_type_list = nil
  for _, k in ipairs({ "full_attention", "linear_attention", "mlp" }) do
    c["layernorm_" .. k .. "_alpha"], c["layernorm_" .. k .. "_beta"] = nil, nil
  end
  c.full_attn_alpha_factor, c.linear_attn_alpha_factor, c.mlp_alpha_factor = 3.5565588200778455,
    3.5565588200778455, 3.5565588200778455
  return c
end

describe("MiniMax-Text-01 / M1", function()
  -- By hand from transformers' modules: embedding and lm_head 200,064 x
  -- 6144 each; a lightning layer qkv_proj 6144 x 3 x 8192, output_gate
  -- 6144 x 8192, out_proj 8192 x 6144, its norm 8192; a softmax layer q, o
  -- 6144 x 8192, k, v 6144 x 1024; every layer 32 experts 3 x 6144 x 9216,
  -- the router 6144 x 32, two norms; the final norm.  MiniMax (model card,
  -- arXiv:2501.08313): "456 billion parameters, of which 45.9 billion are
  -- activated per token" -- the active count without the embedding and
  -- output layer.
  local h, V, E, F = 6144, 8192, 32, 9216
  local lightning = 3 * h * V + h * V + V * h + V
  local softmax = 2 * h * V + 2 * h * 1024
  local per_layer = E * 3 * h * F + h * E + 2 * h
  local total = 2 * 200064 * h + 70 * lightning + 10 * softmax + 80 * per_layer + h
  local active = total - 80 * (E - 2) * 3 * h * F

  it("counts 456,089,655,296 parameters and 45.9 billion active, from either config form", function()
    assert.are.equal(456089655296, total)
    for _, c in ipairs({ m1(), hf_form() }) do
      local m = hf.from_config(c, "minimax.json")
      assert.are.same({ "lightning", string.rep("LLLLLLLA", 10), 64, 64, 128, 128, 256, 0, 32, 2, 9216, 0.5 },
        { m.linear_attention, m.linear_attention_pattern, m.linear_num_key_heads, m.linear_num_value_heads,
          m.linear_key_head_dim, m.linear_value_head_dim, m.linear_block_size, m.linear_conv_kernel_dim,
          m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size, m.rotary_percent })
      local p = core.model_params(m)
      assert.are.equal(total, p.total)
      assert.are.equal(active, p.active)
      assert.are.equal(45944920064, p.active - 2 * 200064 * h)
    end
  end)

  it("reads MiniMaxConfig's default layer kinds and refuses what transformers' class does not build", function()
    local c = hf_form()
    c.layer_types, c.num_hidden_layers = nil, 4
    assert.are.equal("ALAL", hf.from_config(c, "m.json").linear_attention_pattern)
    c = m1()
    c.attn_type_list[3] = 2
    assert.are.equal("m.json: attn_type_list[2]: expected 0 (lightning attention) or 1 (softmax attention) " ..
      "(got 2)", err_of(hf.from_config, c, "m.json"))
    c = hf_form()
    c.layer_types[1] = "sliding_attention"
    assert.are.equal('m.json: layer_types[0]: expected "linear_attention" or "full_attention" ' ..
      '(got "sliding_attention")', err_of(hf.from_config, c, "m.json"))
    c = hf_form()
    c.attn_type_list = m1().attn_type_list
    c.attn_type_list[1] = 1
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("m.json: attn_type_list: expected the layers of " ..
      "layer_types (LLLLLLLA", 1, true))
    c = m1()
    table.remove(c.attn_type_list)
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("m.json: attn_type_list: expected an array of " ..
      "num_hidden_layers = 80 entries (got {0, 0", 1, true))
    c = m1()
    c.shared_intermediate_size = 1024
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("^NotImplemented: m.json: shared_intermediate_size: " ..
      "MiniMax's shared expert"))
    c = m1()
    c.sliding_window = 4096
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("^NotImplemented: m.json: sliding_window: a window " ..
      "on MiniMax's softmax layers"))
    -- every layer softmax: Mixtral's layer, no lightning fields
    c = m1()
    for i = 1, 80 do c.attn_type_list[i] = 1 end
    local m = hf.from_config(c, "m.json")
    assert.is_nil(m.linear_attention)
    assert.are.equal(80 * softmax + 80 * per_layer + 2 * 200064 * h + h, core.model_params(m).total)
  end)

  it("is searched as NeMo AutoModel trains transformers' MiniMaxForCausalLM: FSDP2 alone", function()
    local path = "examples/models/minimax-m1.json"
    -- a 5.4B-parameter decoder layer is one FSDP unit (transformers' experts
    -- inside it): its gathered weights and fp32 gradients do not leave room
    -- on an 80 GB part (src/core/moe.c expert_unit_buffers); B200s hold it
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "b200:512", "--format", "json",
      "-k", "3")
    assert.are.equal(0, code, err)
    assert.matches("a built policy uses framework = automodel", err, 1, true)
    assert.matches("tp_degree = {1}, cp_degree = {1}, pp_degree = {1}", err, 1, true)
    assert.matches("ep_degree = {1}", err, 1, true)
    local doc = cjson.decode(out)
    assert.is_true(doc.inputs.training.hf_eager_layer)
    assert.is_true(doc.inputs.training.transformers_model)
    assert.is_true(#doc.top_k_strategies >= 1)
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:8",
      "--set", "training.framework=megatron")
    assert.are.equal(2, code)
    assert.matches("training.framework: minimax-m1 has MiniMax's lightning attention, priced for NeMo AutoModel " ..
      "only", err, 1, true)
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:8", "--launchable", "megatron")
    assert.are.equal(2, code)
    assert.matches("minimax-m1's lightning-attention layers are built by the automodel launch file only", err, 1,
      true)
    code, out = H.apsearch("estimate", "--model", path, "--cluster", "h100-sxm-80gb:64x8",
      "--strategy", "pp_degree=2,fsdp_degree=256")
    assert.matches("NOT_MODELLED: MiniMax's transformers class over pipeline stages is not modelled", out, 1, true)
  end)

  -- transformers' block loop launches 13 kernels a 256-token block from
  -- Python (gdn.c APS_HK_LIGHTNING_BLOCK), 30 us each on the preset's host
  -- (host_seconds_per_kernel): from 4K tokens (16 blocks) to 8K (32)
  -- the 70 lightning layers launch 70 x 13 x 16 more a pass, and with
  -- full recompute a micro-batch runs the forward twice and the backward
  -- (2 launches a forward one): 4 passes, one micro-batch a step
  it("prices the host's launches of the block loop by the sequence length", function()
    local function host(seq)
      local code, out, err = H.apsearch("estimate", "--model", "examples/models/minimax-m1.json", "--cluster",
        "h100-sxm-80gb:64x8", "--set", "training.seq_length=" .. seq, "--set", "training.global_batch_size=512",
        "--strategy", "fsdp_degree=512,micro_batch_size=1,layer_recompute=full", "--format", "json")
      assert.truthy(code == 0 or code == 1, err) -- 1: over the memory limit, still estimated
      return cjson.decode(out).estimate.performance_breakdown.host_launch.total
    end
    local want = 4 * 70 * 13 * (32 - 16) * 30e-6
    assert.truthy(math.abs(host(8192) - host(4096) - want) < 1e-9, tostring(host(8192) - host(4096)))
  end)

  it("writes AutoModel's file for transformers' class and says the others are not this model", function()
    local dir = H.tmpdir() .. "/out"
    local code, _, err = H.apsearch("run", "--model", "examples/models/minimax-m1.json", "--cluster",
      "b200:512", "--out", dir, "-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    local yaml = H.read(dir .. "/launch/rank1_automodel.yaml")
    assert.matches("# NOT WRITTEN: transformers' MiniMaxForCausalLM as estimated: the config names " ..
      "MiniMaxM1ForCausalLM, the checkpoint's remote code", yaml, 1, true)
    assert.matches("transformers builds MiniMaxForCausalLM", yaml, 1, true)
    assert.is_nil(yaml:find("backend:\n", 1, true))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.matches("# NOT WRITTEN: MiniMax's lightning attention on the linear layers (LLLLLLLA", sh, 1, true)
    local py = H.read(dir .. "/launch/rank1_torchtitan.py")
    assert.matches("NOT EXPRESSIBLE in TorchTitan: MiniMax's lightning attention", py, 1, true)
    -- transformers' own type: no such note
    local cfg = dir .. "/minimax-hf.json"
    H.write(cfg, cjson.encode(hf_form()))
    code, _, err = H.apsearch("run", "--model", cfg, "--cluster", "b200:512", "--out", dir .. "/hf",
      "-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    yaml = H.read(dir .. "/hf/launch/rank1_automodel.yaml")
    assert.is_nil(yaml:find("NOT WRITTEN", 1, true))
    assert.matches("transformers builds MiniMaxForCausalLM", yaml, 1, true)
  end)

  -- AutoModel wraps transformers' experts as it wraps every module: under
  -- HSDP they are sharded over the shard group alone (src/core/moe.c
  -- aps_moe_expert_shard), so a GPU's weights do not shrink with replicas
  it("shards transformers' experts over the FSDP group, not the replicas", function()
    local function params(cluster, dp)
      local code, out, err = H.apsearch("estimate", "--model", "examples/models/minimax-m1.json", "--cluster",
        cluster, "--set", "training.global_batch_size=4096", "--strategy", "dp_degree=" .. dp ..
        ",fsdp_degree=16,micro_batch_size=1,layer_recompute=full", "--format", "json")
      assert.truthy(code == 0 or code == 1, err)
      return cjson.decode(out).estimate.memory_breakdown.params
    end
    local one, many = params("gb200:4", 1), params("gb200:512", 128)
    -- 456,089,655,296 fp32 master weights over 16 shards
    assert.are.equal(456089655296 * 4 // 16, one)
    assert.are.equal(one, many)
  end)

  it("accepts a hand-written lightning model and checks its fields", function()
    local m = hf.from_config(m1(), "m.json")
    assert.are.equal(total, core.model_params(m).total)
    m.linear_block_size = 0
    local ok, e = pcall(core.model_params, m)
    assert.is_false(ok)
    assert.matches("model.linear_block_size: must be in [1, 1048576] with lightning attention layers (got 0)",
      tostring(e), 1, true)
  end)
end)
