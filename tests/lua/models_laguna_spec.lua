-- tests/lua/models_laguna_spec.lua -- Laguna (poolside, model_type
-- laguna) read as transformers builds it (models/laguna/modeling_laguna.py
-- @ 0205eec1, configuration_laguna.py @ 08911d5f): the held-out Laguna
-- XS.2 config (tests/fixtures/heldout_configs) counted module by module,
-- its two layer kinds' query heads and the per-head output gate priced,
-- refusals that name the key, and the launch notes.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local FILE = "tests/fixtures/heldout_configs/poolside--Laguna-XS.2-FP8.json"

local function config()
  return cjson.decode(H.read(H.ROOT .. "/" .. FILE))
end

-- One Laguna layer's attention, h = 2048, 8 KV heads of 128, a query
-- heads: q_proj 2048 a 128, k_proj and v_proj 2048 x 8 x 128 each, o_proj
-- a 128 x 2048, g_proj 2048 a (one softplus gate per head), q_norm and
-- k_norm 128 each.
local function attention(a)
  return 2048 * a * 128 + 2 * 2048 * 8 * 128 + a * 128 * 2048 + 2048 * a + 2 * 128
end

describe("Laguna XS.2", function()
  -- 10 full-attention layers of 48 query heads (layers 1, 5, ..., 37,
  -- 1-based) and 30 windowed ones of 64: 29,458,688 and 37,880,064 each;
  -- 2 RMSNorms of 2048 per layer; layer 1 a dense SwiGLU of 8192
  -- (50,331,648), the other 39 256 experts of 512 (805,306,368), the
  -- shared expert of 512 (3,145,728), the router 256 x 2048 and its score
  -- bias of 256; untied embedding and lm_head of 100352 x 2048; the final
  -- norm.  Active: 8 of the 256 experts.
  it("counts 33,442,617,088 parameters, 3,017,135,872 active (33B-A3B, its card)", function()
    assert.are.equal(29458688, attention(48))
    assert.are.equal(37880064, attention(64))
    local moe_mlp = 256 * 3 * 2048 * 512 + 3 * 2048 * 512 + 256 * 2048 + 256
    local total = 10 * attention(48) + 30 * attention(64) + 40 * 2 * 2048 + 3 * 2048 * 8192 +
      39 * moe_mlp + 2 * 100352 * 2048 + 2048
    local active = total - 39 * 248 * 3 * 2048 * 512
    assert.are.equal(33442617088, total)
    assert.are.equal(3017135872, active)
    local m = hf.from_config(config(), "l.json")
    assert.are.same({ 64, 48, 8, 128, 512, 30 }, { m.num_attention_heads, m.global_num_attention_heads,
      m.num_query_groups, m.head_dim, m.sliding_window, m.sliding_window_layers })
    -- full attention on layers 0, 4, 8, ... (0-based): no period of
    -- Megatron's int form, its list form (a new user's finding: the
    -- launch file dropped the window as not expressible)
    assert.is_nil(m.sliding_window_period)
    assert.are.equal(("FSSS"):rep(10), m.sliding_window_layout)
    local launch = require "apsearch.launch.megatron"
    local args = {}
    launch.window_args(m, function(k, v) args[#args + 1] = k .. " " .. tostring(v) end, function() end)
    assert.are.same({ "--window-size 511,0", "--window-attn-skip-freq ([0]+[1]*3)*10" }, args)
    assert.is_true(m.attention_head_gate)
    assert.is_true(m.qk_norm)
    assert.are.same({ 256, 8, 512, 512, 1, 2.5 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size,
      m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers, m.moe_router_topk_scaling_factor })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
    -- the example is the same file
    assert.are.same(pc, core.model_params((hf.load(H.ROOT .. "/examples/models/laguna-xs.2-fp8.json"))))
  end)

  -- the model FLOPs of the attention cores: each kind's heads over its
  -- keys, 4 S keys a d per layer and sequence (QK^T and PV, d = dv = 128);
  -- at S = 4096 a full layer's causal keys are S / 2, a windowed one's
  -- the 512-token window's: the 10 full layers of 48 heads against the
  -- same model with 64 heads on them
  it("prices each kind's query heads: 16 fewer on the 10 full layers", function()
    local function flops(m)
      return H.model_flops(m, 1, 8, { dp_degree = 8, ep_degree = 8, micro_batch_size = 1 })
    end
    local m = hf.from_config(config(), "l.json")
    local same = H.copy(m)
    same.global_num_attention_heads = nil
    local f48, f64 = flops(m), flops(same)
    -- q_proj, o_proj and g_proj of 16 heads: 2 S (2 x 2048 x 16 x 128 +
    -- 2048 x 16) per layer, times 3 (forward and backward); the core:
    -- 4 S (S / 2) 16 x 128, times 3
    local S = 4096
    local proj = 2 * S * (2 * 2048 * 16 * 128 + 2048 * 16)
    local cores = 4 * S * (S / 2) * 16 * 128
    -- 8 sequences a step
    assert.is_true(math.abs((f64 - f48) / (8 * 3 * 10 * (proj + cores)) - 1) < 1e-9,
      ("%.6g vs %.6g"):format(f64 - f48, 8 * 3 * 10 * (proj + cores)))
  end)

  it("refuses what transformers would not build, naming the key", function()
    local c = config()
    c.num_attention_heads_per_layer[5] = 64 -- a full layer like the windowed ones
    assert.truthy(H.err_of(hf.from_config, c, "l.json"):find("^NotImplemented: l%.json: num_attention_heads_per_layer%[4%]: " ..
      "full_attention layers with 48 query heads %(entry 0%) and 64 %(this one%)"))
    c = config()
    c.gating = "per-channel"
    assert.are.equal('l.json: gating: expected true, false, "per-head" or "per-element" (got "per-channel")',
      H.err_of(hf.from_config, c, "l.json"))
    c = config()
    c.moe_apply_router_weight_on_input = true
    assert.truthy(H.err_of(hf.from_config, c, "l.json"):find("moe_apply_router_weight_on_input: transformers' " ..
      "Laguna raises NotImplementedError", 1, true))
    c = config()
    c.gating = "per-element"
    assert.truthy(H.err_of(hf.from_config, c, "l.json"):find('^NotImplemented: l%.json: gating: a gate per head ' ..
      'and channel beside two query%-head counts %(64 windowed, 48 full%)'))
    for _, bad in ipairs({ {}, { ["0"] = 48 }, { 48, 64 } }) do
      c = config()
      c.num_attention_heads_per_layer = bad
      assert.truthy(H.err_of(hf.from_config, c, "l.json"):find("^l%.json: num_attention_heads_per_layer: expected a " ..
        "list of num_hidden_layers = 40 entries"))
    end
    c = config()
    c.num_attention_heads_per_layer[2] = 32 -- the first windowed layer
    assert.truthy(H.err_of(hf.from_config, c, "l.json"):find("num_attention_heads_per_layer[2]: sliding_attention " ..
      "layers with 32 query heads (entry 1) and 64 (this one)", 1, true))
    c = config()
    c.num_attention_heads_per_layer = { 48, 64 }
    assert.truthy(H.err_of(hf.from_config, c, "l.json"):find("^l%.json: num_attention_heads_per_layer: expected a " ..
      "list of num_hidden_layers = 40 entries"))
  end)

  it("the core refuses a per-head gate beside the full-width one, and TP that splits a kind's heads", function()
    local m = hf.from_config(config(), "l.json")
    m.attention_output_gate, m.global_num_attention_heads = true, nil
    local _, err = pcall(core.model_params, m)
    assert.truthy(tostring(err):find("model.attention_head_gate: given with attention_output_gate", 1, true), err)
    m = hf.from_config(config(), "l.json")
    m.global_num_attention_heads = 44 -- 8 KV heads do not divide it
    _, err = pcall(core.model_params, m)
    assert.truthy(tostring(err):find("model.num_query_groups: 8 does not divide global_num_attention_heads 44",
      1, true), err)
  end)

  it("runs on 64 H100s; Megatron's script says what it cannot build", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:8", "--top-k", "1",
      "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("NOT WRITTEN: 48 query heads on the 10 full-attention layers", 1, true), sh)
    assert.truthy(sh:find("NOT WRITTEN: the gate per query head", 1, true), sh)
  end)
end)
