-- tests/lua/models_mimo_v2_spec.lua -- MiMo-V2-Flash (mimo_v2_flash)
-- imported from its Hugging Face config.json (lua/apsearch/hf.lua):
-- exact total and active parameter counts computed here layer by layer
-- from the config fields as vLLM builds the model (mimo_counts), the
-- model card's rounded figures as a check (XiaomiMiMo/MiMo-V2-Flash:
-- "309B total parameters and 15B active parameters"), what is refused
-- and every bad value of a MiMo-V2-Flash key naming the file, key and
-- value, `apsearch run` on H100 and B200, and the launch files' NOT
-- WRITTEN / NOT EXPRESSIBLE lines.
--
-- The config is examples/models/mimo-v2-flash.json, a copy of
-- tests/fixtures/heldout_configs/XiaomiMiMo--MiMo-V2-Flash.json.

local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local load, decoded, err_of, copy = H.example_model, H.example_config, H.err_of, H.copy
local NAME = "mimo-v2-flash"

--- Parameters of a mimo_v2_flash config as vLLM builds it
-- (vllm/model_executor/models/mimo_v2_flash.py @ 01ed47b4), layer by
-- layer: MiMoV2Attention q h x a d, k h x k d, v h x k dv, o a dv x h
-- (no biases: attention_bias false), attention_sink_bias a on the
-- hybrid_layer_pattern 1 layers with add_swa_attention_sink_bias, the
-- swa_* shape there and num_key_value_heads, head_dim, v_head_dim on
-- the others; MiMoV2MLP 3 h f where moe_layer_freq is 0, else MiMoV2MoE:
-- gate E x h, e_score_correction_bias E, E experts of 3 h f_e (top-k of
-- them active); two RMSNorms h per layer, the final norm h, embed_tokens
-- and lm_head V x h each (untied).
-- @treturn table {total=, active=}
local function mimo_counts(c)
  local h, V = c.hidden_size, c.vocab_size
  local function attn(a, k, d, dv, sinks) return h * a * d + h * k * d + h * k * dv + a * dv * h + (sinks and a or 0) end
  local swa = attn(c.swa_num_attention_heads, c.swa_num_key_value_heads, c.swa_head_dim, c.swa_v_head_dim,
    c.add_swa_attention_sink_bias)
  local full = attn(c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.v_head_dim, false)
  local E, expert = c.n_routed_experts, 3 * h * c.moe_intermediate_size
  local total, active = 2 * V * h + h, 2 * V * h + h
  for i = 1, c.num_hidden_layers do
    local layer = (c.hybrid_layer_pattern[i] == 1 and swa or full) + 2 * h
    if c.moe_layer_freq[i] == 1 then
      total = total + layer + E * h + E + E * expert
      active = active + layer + E * h + E + c.num_experts_per_tok * expert
    else
      total, active = total + layer + 3 * h * c.intermediate_size, active + layer + 3 * h * c.intermediate_size
    end
  end
  return { total = total, active = active }
end

-- The example's config with changes.
local function changed(changes)
  local cfg = copy(decoded(NAME))
  for k, v in pairs(changes) do cfg[k] = v end
  return cfg
end

-- A config file of cfg in a fresh directory, for the binary.
local function write_config(cfg)
  local path = H.tmpdir() .. "/mimo.json"
  H.write(path, cjson.encode(cfg))
  return path
end

-- A list of L entries, those at the 1-based positions of `at` set to b,
-- the others to a.
local function flags(L, a, b, at)
  local out = {}
  for i = 1, L do out[i] = at[i] and b or a end
  return out
end

describe("mimo_v2_flash: exact parameter counts", function()
  it("total and active as vLLM builds it, within the card's 309B and 15B", function()
    local want = mimo_counts(decoded(NAME))
    local p = core.model_params((load(NAME)))
    assert.are.equal(want.total, p.total)
    assert.are.equal(want.active, p.active)
    assert.is_true(H.near_card(p.total, 309e9, H.CARD_ROUNDING), tostring(p.total))
    assert.is_true(H.near_card(p.active, 15e9, H.CARD_ROUNDING_2), tostring(p.active))
  end)

  it("pins the counts: 308,778,780,864 total, 15,445,936,320 active", function()
    local p = core.model_params((load(NAME)))
    assert.are.equal(308778780864, p.total)
    assert.are.equal(15445936320, p.active)
  end)

  it("reads both attention kinds, the V width, the windowed layers' sinks and the dense first layer", function()
    local m, info = load(NAME)
    assert.are.equal(8, m.num_query_groups)
    assert.are.equal(192, m.head_dim)
    assert.are.equal(4, m.global_num_query_groups)
    assert.is_nil(m.global_head_dim)
    assert.are.equal(128, m.attn_v_head_dim)
    assert.is_true(m.attention_sinks)
    assert.is_true(m.window_attention_sinks)
    assert.are.equal(128, m.sliding_window)
    assert.are.equal(39, m.sliding_window_layers)
    assert.is_nil(m.sliding_window_period)
    assert.are.equal(1, m.moe_first_dense_layers)
    assert.are.equal(256, m.num_experts)
    assert.are.equal(8, m.experts_per_token)
    assert.are.equal(2048, m.moe_ffn_hidden_size)
    assert.is_true(m.moe_router_bias)
    assert.is_nil(m.moe_router_pre_softmax)
    assert.is_nil(m.moe_router_topk_scaling_factor)
    assert.are.equal(5000000.0, m.rope_theta)
    assert.are.equal(0.334, m.rotary_percent)
    assert.are.equal(1e-5, m.norm_eps)
    local notes = table.concat(info.notes, "\n")
    for _, s in ipairs({ "swa_rope_theta 10000", "attention_value_scale = 0.707", "attention_chunk_size is read by " ..
      "neither", "64 per windowed layer", "3-layer multi-token-prediction module" }) do
      assert.truthy(notes:find(s, 1, true), s)
    end
  end)

  it("counts other layouts as vLLM builds them: a dense middle layer, every layer full, every layer windowed, " ..
    "windowed layers with their own query heads", function()
    local L = 48
    local cases = {
      { moe_layer_freq = flags(L, 1, 0, { [1] = true, [20] = true }) },
      { hybrid_layer_pattern = flags(L, 0, 1, {}) },
      { hybrid_layer_pattern = flags(L, 1, 0, {}) },
      { swa_head_dim = 128, swa_v_head_dim = 128 },
      -- the windowed layers' own query heads (swa_num_attention_heads),
      -- priced as their kind's since attention kinds carry query heads
      { swa_num_attention_heads = 32 },
    }
    for i, c in ipairs(cases) do
      local cfg = changed(c)
      local p = core.model_params((hf.from_config(cfg, "m.json")))
      local want = mimo_counts(cfg)
      assert.are.equal(want.total, p.total, "case " .. i)
      assert.are.equal(want.active, p.active, "case " .. i)
    end
    local m = hf.from_config(changed(cases[1]), "m.json")
    assert.are.same({ 0, 19 }, m.moe_dense_layers)
    m = hf.from_config(changed(cases[2]), "m.json")
    assert.is_nil(m.sliding_window)
    assert.are.equal(4, m.num_query_groups)
    assert.is_nil(m.attention_sinks)
    m = hf.from_config(changed(cases[5]), "m.json")
    assert.are.same({ 32, 64 }, { m.num_attention_heads, m.global_num_attention_heads })
  end)
end)

describe("mimo_v2_flash: refusals and bad values name the file, key and value", function()
  local function refused(changes) return err_of(hf.from_config, changed(changes), "m.json") end

  it("refuses what neither reference builds or apsearch cannot price, one line each", function()
    local cases = {
      { { add_full_attention_sink_bias = true }, "NotImplemented: m.json: add_full_attention_sink_bias: sinks on " ..
        "the full-attention layers are built by neither vLLM's MiMoV2Attention nor transformers' " ..
        "MiMoV2FlashAttention; false is (got true)" },
      { { swa_v_head_dim = 192 }, "NotImplemented: m.json: v_head_dim: V heads of another width than " ..
        "swa_v_head_dim's 192: apsearch's V width is one for every layer (got 128)" },
      { { n_shared_experts = 1 }, "NotImplemented: m.json: n_shared_experts: MiMoV2MoE has no shared expert; " ..
        "0 or null is (got 1)" },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], refused(c[1])) end
  end)

  it("every other bad value is one line naming the file, key and value", function()
    local cases = {
      { { hybrid_layer_pattern = { 0, 1 } }, "hybrid_layer_pattern: expected an array of num_hidden_layers = 48 " ..
        "entries of 0 or 1" },
      { { hybrid_layer_pattern = cjson.null }, "hybrid_layer_pattern: expected an array of num_hidden_layers = 48" },
      { { hybrid_layer_pattern = flags(48, 0, 2, { [3] = true }) }, "hybrid_layer_pattern[2]: expected 0 or 1 (got 2)" },
      { { moe_layer_freq = 1 }, "moe_layer_freq: expected an array of num_hidden_layers = 48 entries of 0 or 1 (got 1)" },
      { { moe_layer_freq = flags(48, 1, true, { [2] = true }) }, "moe_layer_freq[1]: expected 0 or 1 (got true)" },
      { { swa_num_attention_heads = cjson.null }, "swa_num_attention_heads: required key is missing" },
      { { swa_num_key_value_heads = 3 }, "swa_num_key_value_heads (model.num_query_groups): 3 does not divide " ..
        "num_attention_heads 64" },
      { { num_key_value_heads = 3 }, "num_key_value_heads (model.global_num_query_groups): 3 does not divide " ..
        "num_attention_heads 64" },
      { { swa_head_dim = 0 }, "swa_head_dim: expected a positive integer" },
      { { v_head_dim = "128" }, "v_head_dim: expected a positive integer" },
      { { swa_v_head_dim = 1.5 }, "swa_v_head_dim: expected a positive integer" },
      { { add_swa_attention_sink_bias = "yes" }, 'add_swa_attention_sink_bias: expected true or false (got "yes")' },
      { { add_full_attention_sink_bias = 1 }, "add_full_attention_sink_bias: expected true or false (got 1)" },
      { { sliding_window = 256 }, "sliding_window: expected sliding_window_size's 128 (vLLM reads " ..
        "sliding_window_size, transformers sliding_window) (got 256)" },
      { { sliding_window = cjson.null, sliding_window_size = 0 }, "sliding_window_size: expected a window of >= 1 " ..
        "tokens for the layers hybrid_layer_pattern marks 1 (got 0)" },
      { { sliding_window_size = -1 }, "sliding_window_size: expected an integer in [0, " },
      { { n_routed_experts = cjson.null }, "n_routed_experts: required key is missing" },
      { { num_experts_per_tok = 0 }, "num_experts_per_tok: expected a positive integer" },
      { { n_shared_experts = -1 }, "n_shared_experts: expected an integer in [0, " },
      { { scoring_func = "softmax" }, 'scoring_func: expected "sigmoid" (MiMoV2MoE scores with a sigmoid whatever ' ..
        'it says) (got "softmax")' },
      { { topk_method = "greedy" }, 'topk_method: expected "noaux_tc" (MiMoV2MoE always adds ' ..
        'e_score_correction_bias) (got "greedy")' },
      { { hidden_act = "gelu" }, 'hidden_act: expected "silu"' },
      { { norm_topk_prob = "true" }, 'norm_topk_prob: expected true or false (got "true")' },
      { { routed_scaling_factor = -1 }, "routed_scaling_factor: expected a finite number >= 0 (got -1)" },
      { { attention_value_scale = 0 }, "attention_value_scale: expected a finite number > 0 (got 0)" },
      { { swa_rope_theta = "x" }, 'swa_rope_theta: expected a finite number > 0 (got "x")' },
      { { layernorm_epsilon = -1 }, "layernorm_epsilon: expected a finite number > 0 (got -1)" },
      { { attention_chunk_size = -5 }, "attention_chunk_size: expected an integer in [0, " },
      { { partial_rotary_factor = 2 }, "partial_rotary_factor: expected a number in (0, 1] (got 2)" },
      { { attention_bias = "no" }, 'attention_bias: expected true or false (got "no")' },
    }
    for _, c in ipairs(cases) do
      local e = refused(c[1])
      assert.truthy(e:find("m.json: " .. c[2], 1, true), e)
      assert.is_nil(e:find("\n", 1, true), e)
    end
  end)

  it("exits 2 from the binary with one line", function()
    local path = write_config(changed({ add_full_attention_sink_bias = true }))
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:64", "--top-k", "1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": add_full_attention_sink_bias: sinks on the full-attention layers", 1, true), err)
    path = write_config(changed({ swa_v_head_dim = -128 }))
    code, out, err = H.apsearch("inspect", path)
    assert.are.equal(2, code)
    assert.truthy(err:find(path .. ": swa_v_head_dim: expected a positive integer", 1, true), err)
  end)
end)

describe("mimo_v2_flash: apsearch run estimates it and the launch files say what they cannot express", function()
  for _, cluster in ipairs({ "h100-sxm-80gb:64", "b200:64" }) do
    it("on " .. cluster .. ": feasible, finite, TP within the full layers' 4 KV heads", function()
      local code, out, err = H.apsearch("run", "--model", "examples/models/" .. NAME .. ".json",
        "--cluster", cluster, "--top-k", "3", "--format", "json", "--quiet")
      assert.are.equal(0, code, err)
      local r = cjson.decode(out)
      assert.is_true(#r.top_k_strategies >= 1, out:sub(1, 400))
      for _, s in ipairs(r.top_k_strategies) do
        local perf = s.performance_cost
        assert.is_true(s.tp_degree <= 4)
        assert.is_true(H.finite(perf.step_time) and perf.step_time > 0, out:sub(1, 400))
        assert.is_true(perf.mfu > 0 and perf.mfu < 1, out:sub(1, 400))
        assert.is_true(H.finite(s.memory_cost.device) and s.memory_cost.device > 0, out:sub(1, 400))
      end
    end)
  end

  it("every launch file says what it does not build: the full layers' KV heads, the V width, the sinks", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/" .. NAME .. ".json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = assert(H.read(dir .. "/launch/rank1_megatron.sh"))
    H.assert_megatron_flags(sh)
    for _, s in ipairs({ "# NOT WRITTEN: the full-attention layers' own attention (4 KV heads) on 9 of 48 layers: " ..
      "NOT EXPRESSIBLE in Megatron-LM", "# NOT WRITTEN: V heads 128 wide beside Q/K heads 192 wide (attn_v_head_dim): " ..
      "NOT EXPRESSIBLE in Megatron-LM", "# NOT WRITTEN: attention sinks on the 39 windowed layers only " ..
      "(window_attention_sinks): NOT EXPRESSIBLE in Megatron-LM" }) do
      assert.truthy(sh:find(s, 1, true), s)
    end
    for _, f in ipairs({ { "rank1_torchtitan.py", "TorchTitan" }, { "rank1_mindformers.yaml", "MindFormers" } }) do
      local text = assert(H.read(dir .. "/launch/" .. f[1]))
      for _, s in ipairs({ "V heads narrower than Q/K's (attn_v_head_dim, MiMo-V2-Flash)",
        "attention sinks on the windowed layers only (window_attention_sinks, MiMo-V2-Flash)" }) do
        assert.truthy(text:find("NOT EXPRESSIBLE in " .. f[2] .. ": " .. s, 1, true), f[1] .. ": " .. s)
      end
    end
  end)
end)
