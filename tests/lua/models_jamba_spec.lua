-- tests/lua/models_jamba_spec.lua -- Jamba (model_type jamba): Mamba-1
-- mixers beside GQA attention without positions, experts on every other
-- layer, read as transformers builds them (models/jamba/modular_jamba.py
-- @ 01596202, configuration_jamba.py @ 161d2bed) and priced for NeMo
-- AutoModel (src/core/selscan.c): the published counts, the layer kinds,
-- the refusals, the search space and the launch files.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local err_of = H.err_of

-- examples/models/jamba-1.5-mini.json
local function mini() return H.example_config("jamba-1.5-mini") end

describe("Jamba", function()
  -- By hand from transformers' modules: embedding and lm_head 65,536 x
  -- 4096 each; a Mamba-1 mixer in_proj 4096 x 2 x 8192, conv 8192 x 4 and
  -- its bias, x_proj 8192 x (256 + 2 x 16), dt_proj 256 x 8192 and its
  -- bias, A_log 8192 x 16, D 8192, out_proj 8192 x 4096, the dt, B, C
  -- norms; an attention layer q, o 4096 x 4096, k, v 4096 x 1024; an MLP 3
  -- x 4096 x 14,336, the experts 16 of them and the router 4096 x 16; two
  -- norms a layer, the final norm.  AI21's model card: "12B active and
  -- 52B total parameters".
  local h, D, N, R, F = 4096, 8192, 16, 256, 14336
  local mixer = h * 2 * D + D * 4 + D + D * (R + 2 * N) + R * D + D + D * N + D + D * h + R + 2 * N
  local attn = 2 * h * h + 2 * h * 1024
  local mlp = 3 * h * F
  local moe = 16 * mlp + h * 16
  -- layers 4, 12, 20, 28 attention (i % 8 == 4), the odd ones MoE
  local total = 2 * 65536 * h + 4 * (attn + mlp) + 12 * (mixer + mlp) + 16 * (mixer + moe) + 32 * 2 * h + h
  local active = total - 16 * 14 * mlp

  it("counts 51,570,323,328 parameters, 12.1 billion active", function()
    assert.are.equal(51570323328, total)
    local m = hf.from_config(mini(), "jamba.json")
    assert.are.same({ "mamba1", "LLLLALLL", 8192, 16, 256, 4, "none", 16, 2, 2, 1, true },
      { m.linear_attention, m.linear_attention_pattern:sub(1, 8), m.linear_inner_size, m.linear_state_dim,
        m.linear_dt_rank, m.linear_conv_kernel_dim, m.position_embedding, m.num_experts, m.experts_per_token,
        m.moe_layer_freq, m.moe_layer_phase, m.moe_router_pre_softmax })
    local p = core.model_params(m)
    assert.are.equal(total, p.total)
    assert.are.equal(active, p.active)
    assert.are.equal(12110311296, p.active)
  end)

  it("reads JambaConfig's defaults, its num_local_experts and refuses what it does not price", function()
    local c = mini()
    c.mamba_dt_rank, c.num_experts, c.num_local_experts = "auto", nil, 16
    local m = hf.from_config(c, "j.json")
    assert.are.equal(256, m.linear_dt_rank) -- ceil(4096 / 16)
    assert.are.equal(16, m.num_experts)
    c.num_experts = 8
    assert.are.equal("j.json: num_local_experts: expected num_experts (JambaConfig reads one as the other) (got 16)",
      err_of(hf.from_config, c, "j.json"))
    -- one expert a layer: every FFN the MLP
    c = mini()
    c.num_experts = 1
    m = hf.from_config(c, "j.json")
    assert.is_nil(m.num_experts)
    assert.are.equal(2 * 65536 * h + 4 * attn + 28 * mixer + 32 * (mlp + 2 * h) + h, core.model_params(m).total)
    c = mini()
    c.attn_layer_offset = 8
    assert.are.equal("j.json: attn_layer_offset: expected less than attn_layer_period = 8 (JambaConfig raises) " ..
      "(got 8)", err_of(hf.from_config, c, "j.json"))
    for k, v in pairs({ mamba_proj_bias = true, mamba_conv_bias = false, use_mamba_kernels = false }) do
      c = mini()
      c[k] = v
      assert.truthy(err_of(hf.from_config, c, "j.json"):find("^NotImplemented: j.json: " .. k .. ": "), k)
    end
    c = mini()
    c.num_hidden_layers = 4 -- layers 0-3: no attention layer (offset 4)
    assert.truthy(err_of(hf.from_config, c, "j.json"):find("a Jamba model without an attention layer", 1, true))
    c = mini()
    c.mamba_expand = 1.5
    assert.truthy(err_of(hf.from_config, c, "j.json"):find("j.json: mamba_expand: expected a positive integer", 1,
      true))
    -- JambaConfig: a None num_key_value_heads is num_attention_heads
    c = mini()
    c.num_key_value_heads = cjson.null
    assert.are.equal(32, hf.from_config(c, "j.json").num_query_groups)
    -- an expert period beyond the layers: the one layer of the offset
    c = mini()
    c.expert_layer_period, c.expert_layer_offset = 64, 20
    m = hf.from_config(c, "j.json")
    assert.are.same({ 32, 20 }, { m.moe_layer_freq, m.moe_layer_phase })
    assert.are.equal(total - 15 * (moe - mlp), core.model_params(m).total)
    -- nulls JambaConfig keeps as None: its modules fail or build another layer
    for _, k in ipairs({ "use_mamba_kernels", "mamba_conv_bias", "num_experts", "hidden_act" }) do
      c = mini()
      c[k] = cjson.null
      assert.are.equal("j.json: " .. k .. ": null is not a value here (JambaConfig computes with it) (got null)",
        err_of(hf.from_config, c, "j.json"))
    end
    c = mini()
    c.use_mamba_kernels = "true"
    assert.are.equal('j.json: use_mamba_kernels: expected true or false (got "true")', err_of(hf.from_config, c,
      "j.json"))
    -- the core's errors name the config key beside the model field
    c = mini()
    c.mamba_d_state = 10000000
    assert.are.equal("j.json: mamba_d_state (model.linear_state_dim): must be in [1, 1048576] with Mamba-1 layers " ..
      "(got 10000000)", err_of(function() return core.model_params(hf.from_config(c, "j.json")) end))
    -- every layer attention: Mixtral-like, no Mamba-1 fields
    c = mini()
    c.attn_layer_period, c.attn_layer_offset = 1, 0
    m = hf.from_config(c, "j.json")
    assert.is_nil(m.linear_attention)
  end)

  it("is searched as NeMo AutoModel trains transformers' JambaForCausalLM: FSDP2 alone", function()
    local path = "examples/models/jamba-1.5-mini.json"
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:4", "--format", "json",
      "-k", "3", "--set", "training.defer_fsdp_grad_sync=false")
    assert.are.equal(0, code, err)
    assert.matches("a built policy uses framework = automodel", err, 1, true)
    assert.matches("tp_degree = {1}, cp_degree = {1}, pp_degree = {1}", err, 1, true)
    assert.matches("layer_recompute = {none, full}", err, 1, true)
    assert.matches("ep_degree = {1}", err, 1, true)
    local doc = cjson.decode(out)
    assert.is_true(doc.inputs.training.hf_eager_layer)
    assert.is_true(doc.inputs.training.transformers_model)
    assert.is_true(#doc.top_k_strategies >= 1)
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:8",
      "--set", "training.framework=fsdp2")
    assert.are.equal(2, code)
    assert.matches("training.framework: jamba-1.5-mini has Jamba's Mamba-1 layers, priced for NeMo AutoModel only",
      err, 1, true)
    code, out = H.apsearch("estimate", "--model", path, "--cluster", "h100-sxm-80gb:4",
      "--strategy", "pp_degree=2,fsdp_degree=16")
    assert.matches("FRAMEWORK_UNSUPPORTED: NeMo AutoModel cannot pipeline Jamba", out, 1, true)
  end)

  -- the scan is priced at the device's scan rate per state element
  -- (cluster.device.ssd_scan_rate; the H100 preset's own is 0.927 x 3.35
  -- TB/s): doubling the rate halves the 28 Mamba-1 layers' forward scan
  -- of a 4096-token micro-batch, 28 x 4096 x 8192 x 16 / (2 x rate), and
  -- nothing else (the model has no Mamba-2 layer)
  it("prices the selective scan by its state elements", function()
    local function fwd(rate)
      local code, out, err = H.apsearch("estimate", "--model", "examples/models/jamba-1.5-mini.json", "--cluster",
        "h100-sxm-80gb:2", "--set", "training.global_batch_size=16", "--set", "training.seq_length=4096",
        "--set", "training.defer_fsdp_grad_sync=false", "--set", "cluster.device.ssd_scan_rate=" .. rate,
        "--strategy", "fsdp_degree=16,micro_batch_size=1,layer_recompute=none", "--format", "json")
      assert.truthy(code == 0 or code == 1, err) -- 1: over the memory limit, still estimated
      return cjson.decode(out).estimate.performance_breakdown.compute_fwd.total
    end
    local rate = 3e12
    local want = 28 * 4096 * 8192 * 16 / (2 * rate)
    local got = fwd(rate) - fwd(2 * rate)
    assert.truthy(math.abs(got - want) < 1e-9, tostring(got) .. " vs " .. tostring(want))
  end)

  -- AutoModel wraps each of transformers' decoder layers as one FSDP
  -- unit, experts inside: while an MoE layer runs its 16 x 176,160,768 =
  -- 2,818,572,288 expert weights are gathered in bf16 and their gradients
  -- held unsharded in fp32 before the reduce-scatter (src/core/moe.c
  -- expert_unit_buffers).  With experts on every layer the next layer's
  -- experts are gathered too: one unit's bf16 weights more
  it("counts the experts in the FSDP unit transformers' layers make", function()
    local function fsdp(period)
      local c = mini()
      c.expert_layer_period, c.expert_layer_offset = period, 0
      local cfg = H.tmpdir() .. "/p" .. period .. ".json"
      H.write(cfg, cjson.encode(c))
      local code, out, err = H.apsearch("estimate", "--model", cfg, "--cluster", "h100-sxm-80gb:4",
        "--set", "training.defer_fsdp_grad_sync=false", "--strategy",
        "fsdp_degree=32,micro_batch_size=1,layer_recompute=full", "--format", "json")
      assert.truthy(code == 0 or code == 1, err)
      return cjson.decode(out).estimate.memory_breakdown.comm_buffers.fsdp
    end
    -- and with experts on every layer no layer has the dense MLP: the
    -- largest unit is the output layer and its norm (65,536 x 4096 + 4096)
    -- where a Mamba layer with its MLP was (mixer + 3 h F + 2 h), and the
    -- mean layer's unit holds the router (h x 16) in place of the MLP; both
    -- gathered in bf16, the largest one's gradients unsharded in fp32
    local head, mamba = 65536 * h + h, mixer + mlp + 2 * h
    local router_for_mlp = h * 16 - mlp
    local units = 2 * ((head - mamba) + router_for_mlp) + 4 * (head - mamba)
    assert.are.equal(2 * 2818572288 + units, fsdp(1) - fsdp(2))
    -- without them (one expert a layer: the MLP) the unit is the dense layer's
    local c = mini()
    c.num_experts = 1
    local cfg = H.tmpdir() .. "/dense.json"
    H.write(cfg, cjson.encode(c))
    local code, out, err = H.apsearch("estimate", "--model", cfg, "--cluster", "h100-sxm-80gb:4",
      "--set", "training.defer_fsdp_grad_sync=false", "--strategy",
      "fsdp_degree=32,micro_batch_size=1,layer_recompute=full", "--format", "json")
    assert.truthy(code == 0 or code == 1, err)
    local dense = cjson.decode(out).estimate.memory_breakdown.comm_buffers.fsdp
    assert.are.equal((2 + 4) * 2818572288, fsdp(2) - dense)
  end)

  it("writes AutoModel's file for transformers' class and says the others are not this model", function()
    local dir = H.tmpdir() .. "/out"
    local code, _, err = H.apsearch("run", "--model", "examples/models/jamba-1.5-mini.json", "--cluster",
      "h100-sxm-80gb:4", "--set", "training.defer_fsdp_grad_sync=false", "--out", dir, "-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    local yaml = H.read(dir .. "/launch/rank1_automodel.yaml")
    assert.matches("transformers builds JambaForCausalLM", yaml, 1, true)
    assert.is_nil(yaml:find("NOT WRITTEN", 1, true))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.matches("# NOT WRITTEN: Jamba's Mamba-1 mixers on the linear layers (LLLLALLL", sh, 1, true)
    local py = H.read(dir .. "/launch/rank1_torchtitan.py")
    assert.matches("NOT EXPRESSIBLE in TorchTitan: Jamba's Mamba-1 mixers", py, 1, true)
  end)

  it("accepts a hand-written Mamba-1 model and checks its fields", function()
    local m = hf.from_config(mini(), "j.json")
    assert.are.equal(total, core.model_params(m).total)
    m.linear_dt_rank = 0
    local ok, e = pcall(core.model_params, m)
    assert.is_false(ok)
    assert.matches("model.linear_dt_rank: must be in [1, 1048576] with Mamba-1 layers (got 0)", tostring(e), 1, true)
  end)
end)
