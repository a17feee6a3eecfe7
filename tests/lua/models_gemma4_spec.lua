-- tests/lua/models_gemma4_spec.lua -- Gemma 4 (gemma4 around gemma4_text)
-- imported from its Hugging Face config.json (lua/apsearch/hf.lua):
-- exact total and active parameter counts computed here from the config
-- fields as transformers builds the model (gemma4_counts), the model
-- cards' rounded totals as a check, what is refused (per-layer inputs,
-- KV sharing, bidirectional attention) and every bad value of a Gemma 4
-- key naming the file, key and value, the launch files' NOT WRITTEN /
-- NOT EXPRESSIBLE lines, and `apsearch run` on both examples.
--
-- The configs are examples/models/gemma-4-26b-a4b.json (google/gemma-4-
-- 26B-A4B) and gemma-4-31b-it-nvfp4.json (nvidia/Gemma-4-31B-IT-NVFP4,
-- Gemma 4 31B's shapes).

local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local load, decoded, err_of, copy = H.example_model, H.example_config, H.err_of, H.copy

--- The model cards' totals (google/gemma-4-26B-A4B: 25.2B total, 3.8B
-- active; google/gemma-4-31B: 30.7B), of the text model (the vision
-- tower, about 550M, is not in them).
local CARD = { ["gemma-4-26b-a4b"] = { total = 25.2e9, active = 3.8e9 }, ["gemma-4-31b-it-nvfp4"] = { total = 30.7e9 } }

--- Parameters of a gemma4_text config as transformers builds it
-- (models/gemma4/modeling_gemma4.py @ c308a309), from the config fields:
-- Gemma4TextAttention on a sliding layer q h x a d, k and v h x k d, o
-- a d x h, q_norm and k_norm d each (v_norm has no weight); on a full
-- layer d = global_head_dim, and with attention_k_eq_v k =
-- num_global_key_value_heads and no v_proj; Gemma4TextMLP 3 h f;
-- Gemma4TextDecoderLayer's 4 RMSNorms h; with enable_moe_block
-- Gemma4TextExperts E x 2 f_e x h + E x h x f_e, Gemma4TextRouter proj E
-- x h, scale h, per_expert_scale E, 3 more RMSNorms h; embed V x h
-- (tied), the final norm h.  layer_scalar is a buffer, not counted.
-- @treturn table {total=, active=}
local function gemma4_counts(t)
  local h, L, a, V = t.hidden_size, t.num_hidden_layers, t.num_attention_heads, t.vocab_size
  local function attn(k, d, v) return h * a * d + (1 + v) * h * k * d + a * d * h + 2 * d end
  local kg = t.attention_k_eq_v and t.num_global_key_value_heads or t.num_key_value_heads
  local sliding = attn(t.num_key_value_heads, t.head_dim, 1)
  local full = attn(kg, t.global_head_dim, t.attention_k_eq_v and 0 or 1)
  local rest, active_rest = 3 * h * t.intermediate_size + 4 * h, nil
  active_rest = rest
  if t.enable_moe_block then
    local E, expert = t.num_experts, 3 * h * t.moe_intermediate_size
    local common = E * h + h + E + 3 * h
    rest, active_rest = rest + common + E * expert, active_rest + common + t.top_k_experts * expert
  end
  local nfull = 0
  for i = 1, L do nfull = nfull + (t.layer_types[i] == "full_attention" and 1 or 0) end
  local attn_all = (L - nfull) * sliding + nfull * full
  local base = V * h + h + attn_all
  return { total = base + L * rest, active = base + L * active_rest }
end

-- A config file of cfg in a fresh directory, for the binary.
local function write_config(cfg)
  local path = H.tmpdir() .. "/gemma4.json"
  H.write(path, cjson.encode(cfg))
  return path
end

-- The text_config of an example with changes, as the wrapper around it.
local function with_text(name, changes)
  local cfg = decoded(name)
  local t = copy(cfg.text_config)
  for k, v in pairs(changes) do t[k] = v end
  cfg.text_config = t
  return cfg
end

describe("gemma4: exact parameter counts", function()
  for name, card in pairs(CARD) do
    it(name .. ": total and active as transformers builds it, within the card's rounding", function()
      local want = gemma4_counts(decoded(name).text_config)
      local p = core.model_params((load(name)))
      assert.are.equal(want.total, p.total)
      assert.are.equal(want.active, p.active)
      assert.is_true(H.near_card(p.total, card.total, H.CARD_ROUNDING), tostring(p.total))
      if card.active then assert.is_true(H.near_card(p.active, card.active, H.CARD_ROUNDING_2)) end
    end)
  end

  it("pins the counts: 26B-A4B 25,233,141,760 total, 3,822,530,560 active; 31B 30,697,345,280", function()
    local moe = core.model_params((load("gemma-4-26b-a4b")))
    assert.are.equal(25233141760, moe.total)
    assert.are.equal(3822530560, moe.active)
    local dense = core.model_params((load("gemma-4-31b-it-nvfp4")))
    assert.are.equal(30697345280, dense.total)
    assert.are.equal(dense.total, dense.active)
  end)

  it("reads the full-attention layers, the MoE block beside the dense MLP and the router's scales", function()
    local m, info = load("gemma-4-26b-a4b")
    assert.are.equal(512, m.global_head_dim)
    assert.are.equal(2, m.global_num_query_groups)
    assert.is_true(m.global_k_eq_v)
    assert.are.equal(25, m.sliding_window_layers)
    assert.are.equal(6, m.sliding_window_period)
    assert.are.equal(1024, m.sliding_window)
    assert.are.equal(7, m.norms_per_layer)
    assert.are.equal(2112, m.shared_expert_ffn_hidden_size)
    assert.are.equal(704, m.moe_ffn_hidden_size)
    assert.are.equal(128, m.num_experts)
    assert.are.equal(8, m.experts_per_token)
    assert.is_true(m.moe_router_scales)
    assert.is_true(m.qk_norm)
    -- Gemma 4's norms scale by w, not Gemma 1-3's 1 + w (Megatron-Bridge's
    -- gemma4_provider.py:284 layernorm_zero_centered_gamma False)
    assert.is_nil(m.norm_zero_centered)
    assert.are.equal("gelu_tanh", m.glu_activation)
    assert.are.equal(1000000.0, m.rope_theta)
    assert.is_nil(m.rotary_percent)
    local notes = table.concat(info.notes, "\n")
    assert.truthy(notes:find("the vision tower (569548080 parameters) and its projection into the text model " ..
      "(3244032) are counted apart", 1, true))
    assert.truthy(notes:find("full_attention proportional, rope_theta 1000000, partial_rotary_factor 0.25", 1, true))
    assert.truthy(notes:find("final_logit_softcapping = 30", 1, true))
    -- the head-width note names where its limit was read, not the cluster
    assert.truthy(notes:find("global_head_dim 512 is wider than the 256 FlashAttention and cuDNN fused attention " ..
      "train (TransformerEngine v2.2's limit, read for Hopper; other parts: your kernels' own)", 1, true), notes)
  end)

  it("counts the vision tower and its projection apart, as transformers builds them", function()
    -- Gemma4VisionModel: input_proj 3 p^2 h, position_embedding_table
    -- 2 x 10240 x h, 27 layers of q, k, v, o h x a d (a = k = 16, d = 72),
    -- q_norm and k_norm d, the gated MLP 3 h f, 4 norms h;
    -- Gemma4MultimodalEmbedder h x h_text (the card: a ~550M encoder)
    local v = decoded("gemma-4-26b-a4b").vision_config
    local h, f, d = v.hidden_size, v.intermediate_size, v.head_dim
    local layer = 4 * h * 16 * d + 2 * d + 3 * h * f + 4 * h
    local tower = 3 * 16 * 16 * h + 2 * 10240 * h + v.num_hidden_layers * layer
    local _, info = load("gemma-4-26b-a4b")
    assert.are.equal(569548080, tower)
    assert.are.equal(tower + h * 2816, info.vision_params)
    -- no vision_config: no tower; an audio_config is said
    local cfg = decoded("gemma-4-26b-a4b")
    cfg.vision_config, cfg.audio_config = cjson.null, {}
    local _, i2 = hf.from_config(cfg, "g.json")
    assert.is_nil(i2.vision_params)
    assert.truthy(table.concat(i2.notes, "\n"):find("the audio tower (audio_config) is neither modelled nor counted",
      1, true))
    local bad = decoded("gemma-4-26b-a4b")
    bad.vision_config.patch_size = 0
    assert.are.equal("g.json: vision_config: patch_size: expected a positive integer <= 16777216 (got 0)",
      err_of(hf.from_config, bad, "g.json"))
  end)

  it("without attention_k_eq_v the full layers keep their own V and the windowed layers' KV heads", function()
    local m = hf.from_config(with_text("gemma-4-31b-it-nvfp4", { attention_k_eq_v = false }), "g.json")
    assert.is_nil(m.global_num_query_groups)
    assert.is_nil(m.global_k_eq_v)
    assert.are.equal(512, m.global_head_dim)
    local t = copy(decoded("gemma-4-31b-it-nvfp4").text_config)
    t.attention_k_eq_v = false
    assert.are.equal(gemma4_counts(t).total, core.model_params(m).total)
    -- global_head_dim 0 (transformers: falsy) or equal to head_dim: one shape
    local one = hf.from_config(with_text("gemma-4-31b-it-nvfp4", { attention_k_eq_v = false, global_head_dim = 0 }),
      "g.json")
    assert.is_nil(one.global_head_dim)
  end)

  it("makes the last layer full attention as Gemma4TextConfig does, and says so", function()
    local cfg = decoded("gemma-4-26b-a4b")
    local types = {}
    for i, v in ipairs(cfg.text_config.layer_types) do types[i] = v end
    types[30] = "sliding_attention"
    local m, info = hf.from_config(with_text("gemma-4-26b-a4b", { layer_types = types }), "g.json")
    assert.are.equal(25, m.sliding_window_layers)
    assert.truthy(table.concat(info.notes, "\n"):find("the last layer is sliding_attention in layer_types: " ..
      "Gemma4TextConfig makes it full_attention", 1, true))
    -- absent: every 6th layer full (Gemma4TextConfig.__post_init__)
    local d = hf.from_config(with_text("gemma-4-26b-a4b", { layer_types = cjson.null }), "g.json")
    assert.are.equal(25, d.sliding_window_layers)
    assert.are.equal(6, d.sliding_window_period)
  end)
end)

describe("gemma4: refusals and bad values name the file, key and value", function()
  local function refused(changes)
    return err_of(hf.from_config, with_text("gemma-4-26b-a4b", changes), "g.json")
  end

  it("refuses per-layer inputs, KV sharing and bidirectional attention on every token", function()
    assert.truthy(refused({ hidden_size_per_layer_input = 256 }):find("^NotImplemented: g%.json: text_config: " ..
      "hidden_size_per_layer_input: Gemma 4's per%-layer inputs .* are not modelled; 0 %(none%) is %(got 256%)$"))
    assert.truthy(refused({ num_kv_shared_layers = 20 }):find("^NotImplemented: g%.json: text_config: " ..
      "num_kv_shared_layers: KV sharing .* is not modelled; 0 %(none%) is %(got 20%)$"))
    assert.truthy(refused({ use_bidirectional_attention = "all" }):find("^NotImplemented: g%.json: text_config: " ..
      "use_bidirectional_attention: bidirectional attention on every token .* %(got \"all\"%)$"))
    -- absent, per-layer inputs take Gemma4TextConfig's 256
    assert.truthy(refused({ hidden_size_per_layer_input = cjson.null }):find("hidden_size_per_layer_input", 1, true))
    local rp = copy(decoded("gemma-4-26b-a4b").text_config.rope_parameters)
    rp.full_attention = { rope_type = "yarn", rope_theta = 1e6, factor = 8 }
    assert.are.equal("NotImplemented: g.json: text_config: rope_parameters.full_attention.rope_type: apsearch " ..
      "reads Gemma 4's full_attention layers with RoPE default, proportional only (got \"yarn\")",
      refused({ rope_parameters = rp }))
  end)

  it("every other bad value is one line naming the file, key and value", function()
    local cases = {
      { { global_head_dim = -1 }, "text_config: global_head_dim: expected an integer in [0, " },
      { { global_head_dim = "x" }, "text_config: global_head_dim: expected an integer" },
      { { attention_k_eq_v = "yes" }, 'text_config: attention_k_eq_v: expected true or false (got "yes")' },
      { { num_global_key_value_heads = cjson.null }, "text_config: num_global_key_value_heads: required key is missing" },
      { { num_global_key_value_heads = 3 }, "text_config: num_global_key_value_heads (model.global_num_query_groups): " ..
        "3 does not divide num_attention_heads 16" },
      { { global_head_dim = 1 << 30 }, "text_config: global_head_dim: expected an integer in [0, 16777216] " ..
        "(got 1073741824)" },
      { { enable_moe_block = 1 }, "text_config: enable_moe_block: expected true or false (got 1)" },
      { { num_experts = cjson.null }, "text_config: num_experts: required key is missing" },
      { { top_k_experts = 0 }, "text_config: top_k_experts: expected a positive integer" },
      { { moe_intermediate_size = 1.5 }, "text_config: moe_intermediate_size: expected a positive integer" },
      { { num_kv_shared_layers = -1 }, "text_config: num_kv_shared_layers: expected an integer in [0, " },
      { { hidden_size_per_layer_input = "x" }, "text_config: hidden_size_per_layer_input: expected an integer" },
      { { vocab_size_per_layer_input = 0 }, "text_config: vocab_size_per_layer_input: expected a positive integer" },
      { { use_double_wide_mlp = "no" }, "text_config: use_double_wide_mlp: expected true or false" },
      { { use_bidirectional_attention = "text" }, 'text_config: use_bidirectional_attention: expected "vision", ' ..
        '"all" or null (got "text")' },
      { { final_logit_softcapping = -30 }, "text_config: final_logit_softcapping: expected a finite number > 0" },
      { { layer_types = { "full_attention" } }, "text_config: layer_types: expected an array of num_hidden_layers = 30" },
      { { rope_parameters = { full_attention = { rope_type = "proportional" },
          sliding_attention = { rope_theta = 1e4 } } },
        "text_config: rope_parameters.full_attention.rope_theta: required key is missing" },
      { { rope_parameters = { full_attention = { rope_theta = 1e6, partial_rotary_factor = 2 },
          sliding_attention = { rope_theta = 1e4 } } },
        "text_config: rope_parameters.full_attention: partial_rotary_factor: expected a number in (0, 1] (got 2)" },
      { { rope_parameters = { sliding_attention = { rope_theta = 1e4 } } },
        "text_config: rope_parameters.full_attention: expected an object (got nothing)" },
    }
    for _, c in ipairs(cases) do
      local e = refused(c[1])
      assert.truthy(e:find("g.json: " .. c[2], 1, true), e)
      assert.is_nil(e:find("\n", 1, true), e)
    end
  end)

  it("exits 2 from the binary with one line", function()
    local path = write_config(with_text("gemma-4-26b-a4b", { num_kv_shared_layers = 20 }))
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:64", "--top-k", "1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": text_config: num_kv_shared_layers: KV sharing", 1, true), err)
    path = write_config(with_text("gemma-4-26b-a4b", { global_head_dim = -512 }))
    code, out, err = H.apsearch("inspect", path)
    assert.are.equal(2, code)
    assert.truthy(err:find(path .. ": text_config: global_head_dim: expected an integer in [0, ", 1, true), err)
  end)
end)

describe("gemma4: apsearch run estimates it and the launch files say what they cannot express", function()
  for _, cluster in ipairs({ "h100-sxm-80gb:64", "b200:64" }) do
    it("gemma-4-26b-a4b on " .. cluster .. ": feasible, finite, TP within the full layers' 2 KV heads", function()
      local code, out, err = H.apsearch("run", "--model", "examples/models/gemma-4-26b-a4b.json",
        "--cluster", cluster, "--top-k", "3", "--format", "json", "--quiet")
      assert.are.equal(0, code, err)
      local r = cjson.decode(out)
      assert.is_true(#r.top_k_strategies >= 1, out:sub(1, 400))
      for _, s in ipairs(r.top_k_strategies) do
        local perf = s.performance_cost
        assert.is_true(s.tp_degree <= 2)
        assert.is_true(H.finite(perf.step_time) and perf.step_time > 0, out:sub(1, 400))
        assert.is_true(perf.mfu > 0 and perf.mfu < 1, out:sub(1, 400))
        assert.is_true(H.finite(s.memory_cost.device) and s.memory_cost.device > 0, out:sub(1, 400))
      end
    end)
  end

  it("Megatron-LM's script says NOT WRITTEN for the full layers' shape and the router's scales", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/gemma-4-26b-a4b.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = assert(H.read(dir .. "/launch/rank1_megatron.sh"))
    H.assert_megatron_flags(sh)
    assert.truthy(sh:find("# NOT WRITTEN: the full-attention layers' own attention (head width 512, 2 KV heads, " ..
      "V from K's projection) on 5 of 30 layers: NOT EXPRESSIBLE in Megatron-LM", 1, true))
    assert.truthy(sh:find("# NOT WRITTEN: the router's input scale and per-expert scales (moe_router_scales): " ..
      "NOT EXPRESSIBLE in Megatron-LM", 1, true))
    for _, f in ipairs({ { "rank1_torchtitan.py", "TorchTitan" }, { "rank1_mindformers.yaml", "MindFormers" } }) do
      local text = assert(H.read(dir .. "/launch/" .. f[1]))
      assert.truthy(text:find("NOT EXPRESSIBLE in " .. f[2] .. ": V taken from K's projection on the " ..
        "full-attention layers (global_k_eq_v, Gemma 4)", 1, true), f[1])
    end
  end)
end)
