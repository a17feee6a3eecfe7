-- tests/lua/models_cwm_spec.lua -- Code World Model (model_type cwm) read
-- as transformers' modular_cwm.py builds it, and a window layout no period
-- counts (sliding_window_layout) as the core checks it and Megatron-LM's
-- --window-attn-skip-freq list form writes it.

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local megatron = require "apsearch.launch.megatron"
local H = require "spec_helpers"

-- The 0/1 list of `s` ("0111") repeated n times.
local function bits(s, n)
  local out = {}
  for _ = 1, n do for c in s:gmatch(".") do out[#out + 1] = tonumber(c) end end
  return out
end

-- CwmConfig's defaults (facebook/cwm): h 6144, 64 layers, 48 heads of 128,
-- 8 KV heads, no biases; q, o 6144 x 6144, k, v 6144 x 1024; SwiGLU of
-- 21504; two norms; untied embedding and lm_head 128256 x 6144; the final
-- norm.  The card: 32B.
local h = 6144
local layer = 2 * h * h + 2 * h * 1024 + 3 * h * 21504 + 2 * h
local TOTAL = 64 * layer + 2 * 128256 * h + h

describe("Code World Model (cwm)", function()
  it("counts CwmConfig(): 32,581,097,472 parameters, the window on 48 of 64 layers", function()
    assert.are.equal(32581097472, TOTAL)
    local m = hf.from_config({ architectures = { "CwmForCausalLM" }, model_type = "cwm" }, "t.json")
    assert.are.equal(TOTAL, core.model_params(m).total)
    assert.are.same({ 8192, 48, false, false }, { m.sliding_window, m.sliding_window_layers, m.qkv_bias,
      m.attn_out_bias })
    -- the first layer of each four attends fully: no period says that
    assert.are.equal(("FSSS"):rep(16), m.sliding_window_layout)
    assert.is_nil(m.sliding_window_period)
    assert.are.same({ 1e6, "llama3", 16.0, 8192 }, { m.rope_theta, m.rope_scaling_type, m.rope_scaling_factor,
      m.original_max_position_embeddings })
  end)

  it("takes a periodic layer_types as a period, a null window as none, attention_bias as none", function()
    local types = {}
    for i = 1, 8 do types[i] = i % 4 == 0 and "full_attention" or "sliding_attention" end
    local m = hf.from_config({ model_type = "cwm", num_hidden_layers = 8, layer_types = types,
      attention_bias = true }, "t.json")
    assert.are.same({ 4, 6, false }, { m.sliding_window_period, m.sliding_window_layers, m.qkv_bias })
    assert.is_nil(m.sliding_window_layout)
    local none = hf.from_config({ model_type = "cwm", sliding_window = require("cjson").null }, "t.json")
    assert.is_nil(none.sliding_window)
    assert.is_nil(none.sliding_window_layout)
  end)

  it("refuses a layer_types list of the wrong length, naming the key", function()
    assert.matches("t.json: layer_types", H.err_of(hf.from_config, { model_type = "cwm", num_hidden_layers = 8,
      layer_types = { "full_attention" } }, "t.json"), 1, true)
  end)
end)

describe("sliding_window_layout", function()
  local function model(layout, changes)
    local m = { num_layers = 4, hidden_size = 64, num_attention_heads = 4, num_query_groups = 4,
      ffn_hidden_size = 128, vocab_size = 100, sliding_window = 16, sliding_window_layers = 3,
      sliding_window_layout = layout }
    for k, v in pairs(changes or {}) do m[k] = v end
    return m
  end

  it("is checked against num_layers, its letters, sliding_window_layers and a period", function()
    assert.is_table(core.model_params(model("FSSS")))
    assert.matches("model.sliding_window_layout: letter 2 is 'x'",
      H.err_of(core.model_params, model("Fxss")), 1, true)
    for _, bad in ipairs({ model("FSS"), model("FFSS"), model("FSSS", { sliding_window_period = 4 }) }) do
      assert.matches("model.sliding_window_layout: must have num_layers = 4 letters, 3 of them S",
        H.err_of(core.model_params, bad), 1, true)
    end
  end)

  it("is written as --window-attn-skip-freq's list (1 windowed, 0 full), run-length coded", function()
    assert.are.equal("([0]+[1]*3)*16", megatron.freq_list(bits("0111", 16)))
    assert.are.equal("[0]*3+[1]*58", megatron.freq_list(bits(("0"):rep(3) .. ("1"):rep(58), 1)))
  end)
end)

describe("inspect", function()
  it("folds a window layout past 120 columns under its field, every line within 120", function()
    local dir = H.tmpdir()
    H.write(dir .. "/cwm.json", '{"model_type": "cwm", "num_hidden_layers": 160}')
    local code, out = H.apsearch("inspect", dir .. "/cwm.json")
    assert.are.equal(0, code)
    local layout, on = {}, false
    for line in out:gmatch("[^\n]+") do
      assert.is_true(#line <= 120, line)
      if line:match("^sliding_window_layout ") then on = true
      elseif on and not line:match("^ ") then on = false end
      if on then layout[#layout + 1] = line:match("([FS]+)%s*$") end
    end
    assert.is_true(#layout > 1)
    assert.are.equal(("FSSS"):rep(40), table.concat(layout))
  end)
end)
