-- tests/lua/models2025_spec.lua -- the 2025 families of issue 25 (items 1
-- and 2) imported from their Hugging Face config.json (lua/apsearch/hf.lua):
-- OLMoE, DBRX, gpt-oss, Gemma 3 (text and multimodal), with exact total and
-- active parameter counts (core.model_params), the notes for what no
-- estimate term prices, refusals of bad values naming file, key and value,
-- and `apsearch run` on each.
--
-- The configs are examples/models/*.json, written as published on the Hub.

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local MODELS = ROOT .. "/examples/models/"

local load, decoded = H.example_model, H.example_config

local err_of = H.err_of

local function has_note(info, text)
  for _, n in ipairs(info.notes or {}) do
    if n:find(text, 1, true) then return true end
  end
  return false
end

describe("2025 families: exact parameter counts", function()
  -- allenai/OLMoE-1B-7B-0924 (card: 6.9B total, 1.3B active; paper
  -- arXiv:2409.02060 "1B active / 7B total").  transformers
  -- modeling_olmoe.py @ f321adbc: OlmoeAttention q,k,v,o 4*2048^2 =
  -- 16,777,216; q_norm RMSNorm(hidden_size) 2,048 and k_norm
  -- RMSNorm(head_dim * num_key_value_heads) 2,048 (full width, not 2*128);
  -- 2 RMSNorms 4,096; OlmoeSparseMoeBlock gate 64*2048 = 131,072 (no bias);
  -- 64 experts of 3*2048*1024 = 6,291,456 -> 402,653,184 (top-8:
  -- 50,331,648).  Per layer 419,569,664 (67,248,128 active); x16 =
  -- 6,713,114,624 (1,075,970,048); embed + lm_head 2*50304*2048 =
  -- 206,045,184; norm 2,048.  Total 6,919,161,856; active 1,282,017,280.
  it("OLMoE-1B-7B-0924: 6,919,161,856 total, 1,282,017,280 active", function()
    local m = load("olmoe-1b-7b-0924")
    assert.is_true(m.qk_norm and m.qk_norm_full_width)
    assert.are.same({ 64, 8, 1024 }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size })
    assert.is_true(m.moe_router_pre_softmax) -- norm_topk_prob false
    assert.are.equal(0.01, m.moe_aux_loss_coeff)
    local c = core.model_params(m)
    assert.are.equal(419569664, c.per_moe_layer)
    assert.are.equal(6919161856, c.total)
    assert.are.equal(1282017280, c.active)
  end)

  -- databricks/dbrx-base (blog: 132B total, 36B active).  transformers
  -- modeling_dbrx.py @ 7c65d177: DbrxAttention Wqkv 6144 x (6144 + 2*8*128)
  -- = 44,040,192 + out_proj 6144^2 = 37,748,736 (no biases); norm_1, norm_2
  -- nn.LayerNorm(d_model, bias=False) 12,288; DbrxRouter 16*6144 = 98,304;
  -- DbrxExpertGLU w1, v1, w2 16 x 3*6144*10752 = 3,170,893,824 (top-4:
  -- 792,723,456).  Per layer 3,259,084,800 (880,914,432 active); x40 =
  -- 130,363,392,000 (35,236,577,280); wte + lm_head 2*100352*6144 =
  -- 1,233,125,376; norm_f 6,144.  Total 131,596,523,520; active
  -- 36,469,708,800.
  it("DBRX: 131,596,523,520 total, 36,469,708,800 active", function()
    local m = load("dbrx-base")
    assert.are.same({ 40, 6144, 48, 8, 128, 10752, 32768 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size,
      m.max_position_embeddings })
    assert.are.same({ "layernorm", false, 500000.0 }, { m.norm, m.norm_bias, m.rope_theta })
    assert.are.same({ 16, 4 }, { m.num_experts, m.experts_per_token })
    local c = core.model_params(m)
    assert.are.equal(131596523520, c.total)
    assert.are.equal(36469708800, c.active)
  end)

  -- openai/gpt-oss-20b and gpt-oss-120b (model card arXiv:2508.10925,
  -- table 1: 20.91B total / 3.61B active, 116.83B / 5.13B; its active
  -- leaves out the input embedding).  transformers modeling_gpt_oss.py @
  -- 00d4b3d2: GptOssAttention q,o 2*2880*4096 + k,v 2*2880*512 =
  -- 26,542,080, biases 4096 + 512 + 512 + 2880 = 8,000, sinks 64 ->
  -- 26,550,144; 2 RMSNorms 5,760; GptOssTopKRouter E*2880 + E; GptOssExperts
  -- per expert gate_up_proj 2880*5760 + gate_up_proj_bias 5760 + down_proj
  -- 2880*2880 + down_proj_bias 2880 = 24,891,840; embed + lm_head
  -- 2*201088*2880 = 1,158,266,880; norm 2,880.
  -- 20b (L 24, E 32): layer 26,550,144 + 5,760 + 92,192 + 32*24,891,840 =
  -- 823,186,976 (top-4: 126,215,456) -> total 20,914,757,184, active
  -- 4,187,440,704 = 3,608,307,264 + the input embedding 579,133,440.
  -- 120b (L 36, E 128): 26,550,144 + 5,760 + 368,768 + 128*24,891,840 =
  -- 3,213,080,192 (top-4: 126,492,032) -> total 116,829,156,672, active
  -- 5,711,982,912 = 5,132,849,472 + 579,133,440.
  local EMBED = 201088 * 2880
  for _, case in ipairs({
      { "gpt-oss-20b", 24, 32, 823186976, 20914757184, 4187440704, 3608307264 },
      { "gpt-oss-120b", 36, 128, 3213080192, 116829156672, 5711982912, 5132849472 } }) do
    local name, L, E, layer, total, active, card = table.unpack(case)
    it(name .. ": " .. total .. " total, " .. active .. " active", function()
      local m = load(name)
      assert.are.same({ L, E, 4, 64 }, { m.num_layers, m.num_experts, m.experts_per_token, m.head_dim })
      assert.is_true(m.qkv_bias and m.attn_out_bias and m.mlp_bias)
      assert.is_true(m.attention_sinks and m.moe_router_linear_bias)
      assert.is_nil(m.moe_router_bias) -- not DeepSeek's selection bias
      assert.are.same({ 128, L // 2 }, { m.sliding_window, m.sliding_window_layers })
      assert.are.same({ "yarn", 32.0, 4096, true }, { m.rope_scaling_type, m.rope_scaling_factor,
        m.original_max_position_embeddings, m.yarn_no_truncate })
      local c = core.model_params(m)
      assert.are.equal(layer, c.per_moe_layer)
      assert.are.equal(total, c.total)
      assert.are.equal(active, c.active)
      assert.are.equal(card, c.active - EMBED)
    end)
  end

  -- google/gemma-3-1b-pt (Gemma 3 report arXiv:2503.19786 table 1: 302M
  -- embedding, 698M non-embedding).  transformers modeling_gemma3.py
  -- Gemma3Attention q 1152*1024 + k,v 2*1152*256 + o 1024*1152 =
  -- 2,949,120, q_norm, k_norm RMSNorm(head_dim) 512; 4 RMSNorms 4,608;
  -- Gemma3MLP 3*1152*6912 = 23,887,872 -> 26,842,112 per layer, x26 =
  -- 697,894,912; tied embedding 262144*1152 = 301,989,888; norm 1,152.
  -- Total 999,885,952 (the card's 1B).  sliding_window_pattern 6: layers
  -- 5, 11, 17, 23 global, 22 windowed.
  it("Gemma-3-1B (gemma3_text): 999,885,952", function()
    local m, info = load("gemma-3-1b-pt")
    assert.are.same({ 4, "swiglu", true, true, 256 }, { m.norms_per_layer, m.mlp, m.qk_norm,
      m.tie_word_embeddings, m.head_dim })
    assert.is_nil(m.qk_norm_full_width)
    assert.are.same({ 512, 22 }, { m.sliding_window, m.sliding_window_layers })
    local c = core.model_params(m)
    assert.are.equal(26842112, c.per_layer)
    assert.are.equal(999885952, c.total)
    assert.are.equal(c.total, c.active)
    assert.is_nil(info.vision_params)
  end)

  -- google/gemma-3-4b-pt (HF: 4,300,079,472 parameters; report: 417M
  -- vision, 675M embedding, 3,209M non-embedding).  text_config leaves
  -- heads, head_dim and vocab to Gemma3TextConfig's defaults (8 heads, 4
  -- KV, 256, 262,208).  Layer: q 2560*2048 + k,v 2*2560*1024 + o
  -- 2048*2560 = 15,728,640 + Q/K norms 512 + 4 norms 10,240 + MLP
  -- 3*2560*10240 = 78,643,200 -> 94,382,592; x34 = 3,209,008,128; tied
  -- embedding 262208*2560 = 671,252,480; norm 2,560 -> text 3,880,263,168.
  -- Vision apart (modeling_siglip.py): patch conv 3*14*14*1152 + 1152 =
  -- 678,528; positions (896/14)^2*1152 = 4,718,592; 27 layers of 4*(1152^2
  -- + 1152) + 4*1152 + 2*1152*4304 + 4304 + 1152 = 15,239,504 ->
  -- 411,466,608; post_layernorm 2,304 -> 416,866,032; projector
  -- 1152*2560 + 1152 = 2,950,272.  3,880,263,168 + 419,816,304 =
  -- 4,300,079,472.
  it("Gemma-3-4B (gemma3, nested text_config): text 3,880,263,168; vision apart", function()
    local m, info = load("gemma-3-4b-pt")
    assert.are.same({ 34, 2560, 8, 4, 256, 262208 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.vocab_size })
    assert.are.same({ 1024, 29, "linear", 8.0, 1e-6, 1000000.0 }, { m.sliding_window,
      m.sliding_window_layers, m.rope_scaling_type, m.rope_scaling_factor, m.norm_eps, m.rope_theta })
    local c = core.model_params(m)
    assert.are.equal(3880263168, c.total)
    assert.are.equal(c.total, c.active)
    local tower, proj = hf.gemma3_vision_params(decoded("gemma-3-4b-pt").vision_config, 2560, "v")
    assert.are.same({ 416866032, 2950272 }, { tower, proj })
    assert.are.equal(4300079472, c.total + info.vision_params)
    assert.is_true(has_note(info, "the vision tower (SigLIP, 416866032 parameters) and the " ..
      "multimodal projector (2950272) are counted apart"))
    -- the published config leaves four shape keys to the defaults: said
    assert.is_true(has_note(info, "the text model's num_attention_heads 8, num_key_value_heads 4, " ..
      "head_dim 256, vocab_size 262208 taken from transformers' Gemma3TextConfig defaults"))
  end)

  it("Gemma 3 with an empty text_config says every shape it took from the defaults", function()
    -- it imported a 26-layer 2,304-wide model without a word (breaker pass)
    local path = H.write(H.tmpdir() .. "/g3.json", '{"model_type":"gemma3","text_config":{}}')
    local m, info = hf.load(path)
    assert.are.same({ 26, 2304 }, { m.num_layers, m.hidden_size })
    assert.is_true(has_note(info, "num_hidden_layers 26, hidden_size 2304, intermediate_size 9216"))
  end)

  it("a text config saved under a wrapper's type is refused, naming the shape keys it would lose", function()
    -- Gemma 3 27B's text fields at the top level under model_type gemma3
    -- (Megatron-Bridge's test_gemma3_bridge.py fixture does this):
    -- Gemma3Config ignores them and builds Gemma3TextConfig's 2.6B default
    -- text model, which a new user's search took for the 27B (2026-12-07)
    local dir = H.tmpdir()
    local path = H.write(dir .. "/g3.json", '{"model_type":"gemma3","hidden_size":5376,"num_hidden_layers":62,' ..
      '"intermediate_size":21504,"num_attention_heads":32,"num_key_value_heads":16,"head_dim":128}')
    assert.are.equal(path .. ": num_hidden_layers, hidden_size, intermediate_size, num_attention_heads: model_type " ..
      "gemma3 reads its text model from text_config, not the top level: transformers ignores these (62, 5376, " ..
      "21504, 32) and builds the text model's defaults; move them into text_config, or set model_type to " ..
      "gemma3_text", H.err_of(hf.load, path))
    -- the same under Llama 4's and Gemma 4's wrappers; a top-level key the
    -- text_config also gives is the text_config's (no refusal)
    path = H.write(dir .. "/l4.json", '{"model_type":"llama4","hidden_size":5120}')
    assert.truthy(H.err_of(hf.load, path):find(": hidden_size: model_type llama4 reads its text model from " ..
      "text_config", 1, true))
    path = H.write(dir .. "/g4.json", '{"model_type":"gemma4","num_hidden_layers":60}')
    assert.truthy(H.err_of(hf.load, path):find("set model_type to gemma4_text$"))
    path = H.write(dir .. "/ok.json", '{"model_type":"gemma3","hidden_size":2304,"text_config":{"hidden_size":2304}}')
    assert.are.equal(2304, hf.load(path).hidden_size)
  end)

  it("a flat type's keys saved under text_config are refused, naming them", function()
    -- a Qwen3-Next config moved under text_config read "hidden_act: expected
    -- silu (got nothing)", and a Llama one "num_hidden_layers: required key
    -- is missing" (2026-12-07 pass over 2025-26 configs)
    local dir = H.tmpdir()
    local path = H.write(dir .. "/l.json", '{"model_type":"llama","text_config":{"hidden_size":4096,' ..
      '"num_hidden_layers":32,"num_attention_heads":32}}')
    assert.are.equal(path .. ": text_config: model_type llama reads its keys at the top level, not from " ..
      "text_config, which gives num_hidden_layers, hidden_size, num_attention_heads: move text_config's keys " ..
      "to the top level, or name the wrapper's model_type", H.err_of(hf.load, path))
    -- with the shape at the top level, a text_config beside it is left alone
    path = H.write(dir .. "/ok.json", '{"model_type":"llama","hidden_size":512,"num_hidden_layers":2,' ..
      '"num_attention_heads":8,"intermediate_size":1024,"vocab_size":1000,"text_config":{"hidden_size":4096}}')
    assert.are.equal(512, hf.load(path).hidden_size)
    -- a build that took a shape key from the class defaults, which the
    -- text_config gives, is refused too (Gemma3TextConfig's 26 layers)
    path = H.write(dir .. "/g.json", '{"model_type":"gemma3_text","text_config":{"hidden_size":5376,' ..
      '"num_hidden_layers":62}}')
    assert.truthy(H.err_of(hf.load, path):find(": text_config: model_type gemma3_text reads its keys at the top " ..
      "level, not from text_config, which gives num_hidden_layers, hidden_size: ", 1, true))
    -- a type that names its shape otherwise builds from its own keys, a
    -- leftover text_config aside (DBRX's d_model; breaker pass, 2026-12-07)
    local dbrx = require("cjson").decode(H.read(ROOT .. "/examples/models/dbrx-base.json"))
    dbrx.text_config = { hidden_size = 6144 }
    path = H.write(dir .. "/dbrx.json", require("cjson").encode(dbrx))
    assert.are.equal(6144, hf.load(path).hidden_size)
  end)
end)

describe("2025 families: what the estimate does not price is said", function()
  it("notes sinks, the clamped SwiGLU and the MXFP4 checkpoint of gpt-oss", function()
    local _, info = load("gpt-oss-20b")
    assert.is_true(has_note(info, "attention sinks (one learned logit per head and layer, 64 per layer)"))
    assert.is_true(has_note(info, "clamped SwiGLU (swiglu_limit 7)"))
    assert.is_true(has_note(info, "mxfp4 weights (quantization_config) are not modelled"))
    -- OpenAI's 3.6B active for gpt-oss-20b is apsearch's 4,187,440,704 less
    -- one 201,088 x 2,880 vocabulary matrix: 3,608,307,264
    assert.is_true(has_note(info, "the active count includes the input embedding and the output layer " ..
      "(201088 x 2880 each); the model card's active figure counts one of them"))
  end)

  it("notes DBRX's clip_qkv and router jitter, OLMoE's full-width norms", function()
    local _, d = load("dbrx-base")
    assert.is_true(has_note(d, "clip_qkv = 8 clamps Q, K and V element-wise"))
    assert.is_true(has_note(d, "moe_jitter_eps = 0.01"))
    local _, o = load("olmoe-1b-7b-0924")
    assert.is_true(has_note(o, "the Q/K norms span the whole projection"))
    assert.is_false(has_note(o, "clip_qkv")) -- null in the published config
  end)

  it("prints the notes on stderr for run and inspect, and inspect shows the vision count", function()
    local code, out, err = H.apsearch("inspect", "examples/models/gemma-3-4b-pt.json")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("vision %(apart%)%s+419,816,304"), out)
    assert.truthy(err:find("apsearch: note: examples/models/gemma-3-4b-pt.json: the vision tower", 1, true), err)
    code, out, err = H.apsearch("run", "--model", "examples/models/gpt-oss-20b.json",
      "--cluster", "h100-sxm-80gb:1", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: examples/models/gpt-oss-20b.json: attention sinks", 1, true), err)
  end)
end)

describe("2025 families: bad values exit 2 naming file, key and value", function()
  it("refuses a bad layer_types entry or length", function()
    local cfg = decoded("gpt-oss-20b")
    cfg.layer_types[3] = "chunked_attention"
    assert.are.equal('g.json: layer_types[2]: expected "sliding_attention" or "full_attention" ' ..
      '(got "chunked_attention")', err_of(hf.from_config, cfg, "g.json"))
    cfg.layer_types = { "full_attention" }
    assert.truthy(err_of(hf.from_config, cfg, "g.json"):find(
      "g.json: layer_types: expected an array of num_hidden_layers = 24 entries", 1, true))
  end)

  it("refuses bad gpt-oss, OLMoE and DBRX keys", function()
    local g = decoded("gpt-oss-20b")
    g.swiglu_limit = -1
    assert.are.equal("g.json: swiglu_limit: expected a finite number > 0 (got -1)",
      err_of(hf.from_config, g, "g.json"))
    local o = decoded("olmoe-1b-7b-0924")
    o.clip_qkv = "8"
    assert.are.equal('o.json: clip_qkv: expected a finite number > 0 (got "8")',
      err_of(hf.from_config, o, "o.json"))
    local d = decoded("dbrx-base")
    d.ffn_config.moe_top_k = 0
    assert.are.equal("d.json: ffn_config: moe_top_k: expected a positive integer <= 16777216 (got 0)",
      err_of(hf.from_config, d, "d.json"))
    d = decoded("dbrx-base")
    d.attn_config = 8
    assert.are.equal("d.json: attn_config: expected an object (got 8)", err_of(hf.from_config, d, "d.json"))
    d = decoded("dbrx-base")
    d.ffn_config.moe_normalize_expert_weights = -2
    assert.are.equal("d.json: ffn_config: moe_normalize_expert_weights: expected a finite number > 0 " ..
      "or null (got -2)", err_of(hf.from_config, d, "d.json"))
    d.ffn_config.moe_normalize_expert_weights = cjson.null
    assert.is_true(hf.from_config(d, "d.json").moe_router_pre_softmax)
  end)

  it("refuses bad Gemma 3 keys, naming the nested config", function()
    local g = decoded("gemma-3-4b-pt")
    g.text_config.sliding_window_pattern = 0
    assert.are.equal("g.json: text_config: sliding_window_pattern: expected a positive integer <= 16777216 (got 0)",
      err_of(hf.from_config, g, "g.json"))
    g = decoded("gemma-3-4b-pt")
    g.vision_config.patch_size = "14"
    assert.are.equal('g.json: vision_config: patch_size: expected a positive integer <= 16777216 (got "14")',
      err_of(hf.from_config, g, "g.json"))
    g = decoded("gemma-3-4b-pt")
    g.text_config = "gemma"
    assert.are.equal('g.json: text_config: expected an object (got "gemma")', err_of(hf.from_config, g, "g.json"))
  end)

  it("exits 2 from the binary with the file, key and value", function()
    local dir = H.tmpdir()
    local cfg = decoded("olmoe-1b-7b-0924")
    cfg.num_experts_per_tok = 65
    local path = dir .. "/olmoe.json"
    local f = assert(io.open(path, "w"))
    f:write(cjson.encode(cfg))
    f:close()
    local code, _, err = H.apsearch("inspect", path)
    assert.are.equal(2, code)
    assert.truthy(err:find(path .. ": model.experts_per_token: 65 exceeds num_experts = 64", 1, true), err)
  end)
end)

describe("2025 families: apsearch run estimates them", function()
  for _, case in ipairs({ { "olmoe-1b-7b-0924", "h100-sxm-80gb:1" }, { "dbrx-base", "h100-sxm-80gb:8" },
      { "gpt-oss-120b", "h100-sxm-80gb:4" }, { "gemma-3-1b-pt", "h100-sxm-80gb:1" },
      { "gemma-3-4b-pt", "h100-sxm-80gb:1" } }) do
    it(case[1] .. " on " .. case[2], function()
      local code, out, err = H.apsearch("run", "--model", "examples/models/" .. case[1] .. ".json",
        "--cluster", case[2], "--top-k", "1", "--format", "json", "--quiet")
      assert.are.equal(0, code, err)
      local r = cjson.decode(out)
      assert.is_not_nil(r.top_k_strategies[1], out:sub(1, 400))
      assert.is_true(#r.stage_summary > 0 and #r.memory_breakdown > 0, out:sub(1, 400))
    end)
  end
end)
