-- tests/lua/models_muse_glimmer_spec.lua -- Muse Glimmer (model_type
-- muse_glimmer, text model muse_glimmer_text) read as NeMo AutoModel
-- builds its text model (components/models/muse_glimmer @ 36044ad3): the
-- held-out config counted module by module, the wrapper's keys, the
-- refusals that name the key.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local FILE = H.ROOT .. "/tests/fixtures/heldout_configs/meta-models--Muse-Glimmer-30B.json"

describe("Muse Glimmer", function()
  -- h 6656, 52 layers: q 6656 x 32 x 128, k and v 6656 x 2 x 128 each,
  -- o 4096 x 6656, the output gate's output_gate_proj 6656 x 4096 (the
  -- wrapper's use_attn_output_gate, default true), Q/K norms without
  -- weights; four norms of 6656 a layer; the SwiGLU MLP 3 x 6656 x 19968;
  -- untied embedding and lm_head 202048 x 6656; the final norm.
  it("counts its text model, 27,854,780,928 parameters", function()
    local h = 6656
    local layer = h * 4096 + 2 * h * 256 + 4096 * h + h * 4096 + 4 * h + 3 * h * 19968
    local total = 52 * layer + 2 * 202048 * h + h
    assert.are.equal(483944448, layer)
    assert.are.equal(27854780928, total)
    local m = hf.load(FILE)
    assert.are.same({ true, true, true, 4, 2048, 39, 4, 20.0 }, { m.attention_output_gate, m.qk_norm,
      m.qk_norm_weightless, m.norms_per_layer, m.sliding_window, m.sliding_window_layers, m.nope_layer_period,
      m.final_logit_softcapping })
    assert.are.equal(total, core.model_params(m).total)
  end)

  it("takes the wrapper's use_attn_output_gate and use_qk_norm", function()
    local c = cjson.decode(H.read(FILE))
    c.use_attn_output_gate, c.use_qk_norm = false, false
    local m = hf.from_config(c, "g.json")
    assert.are.same({ false, false }, { m.attention_output_gate or false, m.qk_norm or false })
    -- without the gate: 52 x 6656 x 4096 fewer
    assert.are.equal(27854780928 - 52 * 6656 * 4096, core.model_params(m).total)
  end)

  it("is searched as NeMo AutoModel runs it: no pipeline parallelism", function()
    local code, _, err = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:8", "--quiet")
    assert.are.equal(0, code, err)
    code, _, err = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:8")
    assert.matches("pp_degree = {1}", err, 1, true)
    assert.matches("defaults: automodel", err, 1, true)
    local out
    code, out = H.apsearch("estimate", "--model", FILE, "--cluster", "h100-sxm-80gb:8", "--strategy",
      "pp_degree=2,fsdp_degree=32")
    assert.matches("FRAMEWORK_UNSUPPORTED: NeMo AutoModel's Muse Glimmer has no pipeline parallelism", out, 1, true)
  end)

  it("refuses what AutoModel does not build, naming the key", function()
    local c = cjson.decode(H.read(FILE))
    c.text_config.attention_bias = true
    assert.matches("g.json: text_config: attention_bias: expected false", H.err_of(hf.from_config, c, "g.json"),
      1, true)
    c = cjson.decode(H.read(FILE))
    c.text_config.layer_rope_theta[1] = 0
    assert.matches("layer_rope_theta[0]: expected 0 exactly on the full_attention layers",
      H.err_of(hf.from_config, c, "g.json"), 1, true)
  end)
end)
