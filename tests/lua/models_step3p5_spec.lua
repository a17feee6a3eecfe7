-- tests/lua/models_step3p5_spec.lua -- Step-3.5-Flash (model_type
-- step3p5) read as vLLM builds it (vllm/model_executor/models/step3p5.py
-- @ 01b50b9e): the held-out config (tests/fixtures/heldout_configs, the
-- Hub config a Megatron-Bridge fork vendors for its step3p5 bridge test)
-- counted module by module, its two attention kinds, refusals naming the
-- key.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local FILE = "tests/fixtures/heldout_configs/stepfun-ai--Step-3.5-Flash.json"

local function config()
  return cjson.decode(H.read(H.ROOT .. "/" .. FILE))
end

describe("Step-3.5-Flash", function()
  -- h 4096, 45 layers, every 4th (12) full attention of 64 heads, the
  -- other 33 a 512-token window with 96 heads (attention_other_setting),
  -- both 8 KV heads of 128: q and o h a d, k and v h 8 d, g_proj h a (the
  -- head-wise gate), per-head q_norm and k_norm; layers 1-3 a SwiGLU MLP of
  -- 11264, layers 4-45 288 experts of 1280 (top 8), the share_expert of
  -- 1280, the gate 288 x h and its router_bias; two norms a layer, untied
  -- embedding and lm_head of 128896 x h, the final norm.  The card's 196B
  -- and 11B are without the embeddings (195.9B, 10.9B).
  it("counts 196,956,130,368 parameters, 11,987,323,968 active", function()
    local h = 4096
    local function attn(a) return 2 * h * a * 128 + 2 * h * 8 * 128 + h * a + 2 * 128 end
    local expert = 3 * h * 1280
    local moe = 288 * expert + 3 * h * 1280 + 288 * h + 288
    local total = 12 * attn(64) + 33 * attn(96) + 45 * 2 * h + 3 * 3 * h * 11264 + 42 * moe +
      2 * 128896 * h + h
    local active = total - 42 * 280 * expert
    assert.are.equal(196956130368, total)
    assert.are.equal(11987323968, active)
    local m, info = hf.from_config(config(), "s.json")
    -- its groups are num_attention_groups (no num_key_value_heads): read,
    -- not defaulted to the heads, so no note says they were (a new user's
    -- eleventh round)
    for _, n in ipairs(info.notes) do assert.is_nil(n:find("num_key_value_heads", 1, true), n) end
    assert.are.same({ 96, 64, 8, 128, 512, 33, 3 }, { m.num_attention_heads, m.global_num_attention_heads,
      m.num_query_groups, m.head_dim, m.sliding_window, m.sliding_window_layers, m.moe_first_dense_layers })
    assert.is_true(m.attention_head_gate)
    assert.are.same({ 288, 8, 1280, 1280, 3.0 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size,
      m.shared_expert_ffn_hidden_size, m.moe_router_topk_scaling_factor })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
    -- the example is the same file
    assert.are.same(pc, core.model_params((hf.load(H.ROOT .. "/examples/models/step-3.5-flash.json"))))
  end)

  -- Step-3.7-Flash's released config.json is Step3p7ForConditionalGeneration
  -- with a text_config of model_type step3p5 (NeMo AutoModel 36044ad3
  -- components/models/step3p7: Step3p7TextConfig, and Step3p7Model's
  -- language_model is Step3p5Model): the text model reads as Step-3.5's,
  -- the vision tower not counted (a note)
  it("reads Step-3.7-Flash's wrapper through its step3p5 text_config", function()
    local text = config()
    text.architectures = nil
    local wrapper = { model_type = "step3p7", architectures = { "Step3p7ForConditionalGeneration" },
                      text_config = text, vision_config = { width = 1536, layers = 47, heads = 16 } }
    local m, info = hf.from_config(wrapper, "s37.json")
    local c = core.model_params(m)
    assert.are.same({ 196956130368, 11987323968 }, { c.total, c.active })
    local said = false
    for _, n in ipairs(info.notes) do said = said or n:find("vision tower (vision_config) is neither", 1, true) ~= nil end
    assert.is_true(said)
    -- Step3p7Config fills in its default vision config: the text_config
    -- alone is read the same
    wrapper.vision_config = nil
    assert.are.equal(196956130368, core.model_params((hf.from_config(wrapper, "s37.json"))).total)
    wrapper.text_config = "step3p5"
    assert.are.equal('s37.json: text_config: expected an object (got "step3p5")',
      H.err_of(hf.from_config, wrapper, "s37.json"))
  end)

  it("refuses what vLLM would not build, naming the key", function()
    local function refused(change)
      local c = config()
      change(c)
      return H.err_of(hf.from_config, c, "s.json")
    end
    assert.truthy(refused(function(c) c.att_impl_type = "MLA" end):find("^NotImplemented: s%.json: att_impl_type: " ..
      "an attention other than GQA"))
    assert.truthy(refused(function(c) c.attention_other_setting.attention_type = "full_attention" end):find(
      "attention_other_setting.attention_type: another shape on layers other than the sliding_attention ones", 1, true))
    for _, bad in ipairs({ "3,4,99", "", "5,,6", "3,", "3.0", "0x3" }) do
      assert.truthy(refused(function(c) c.moe_layers_enum = bad end):find(
        "s.json: moe_layers_enum: expected comma-separated layer indices in [0, 45)", 1, true), bad)
    end
    -- the keys whose defaults the Step3p5Config mirrors disagree on, or
    -- that vLLM defaults to what is not modelled
    assert.truthy(refused(function(c) c.share_expert_dim = nil end):find("s.json: share_expert_dim: required", 1,
      true))
    assert.truthy(refused(function(c) c.moe_router_activation = nil end):find("^NotImplemented: s%.json: " ..
      "moe_router_activation: router scores other than sigmoid"))
    assert.truthy(refused(function(c) c.need_fp32_gate = false end):find("need_fp32_gate: a router gate outside " ..
      "fp32", 1, true))
    assert.truthy(refused(function(c) c.layer_types[6] = "sliding_attnetion" end):find(
      'layer_types[5]: expected "full_attention" or "sliding_attention" (0-based index)', 1, true))
    local c = config()
    c.norm_expert_weight = nil -- vLLM's default: renormalised
    assert.is_nil(hf.from_config(c, "s.json").moe_router_pre_softmax)
    assert.truthy(refused(function(c) c.layer_types = { "full_attention" } end):find(
      "s.json: layer_types: expected at least num_hidden_layers = 45 entries", 1, true))
  end)

  it("runs on 64 H100s and says what Megatron's script does not build", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:8", "--top-k", "1",
      "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("NOT WRITTEN: 64 query heads on the 12 full-attention layers", 1, true), sh)
    assert.truthy(sh:find("NOT WRITTEN: the gate per query head", 1, true), sh)
  end)
end)
