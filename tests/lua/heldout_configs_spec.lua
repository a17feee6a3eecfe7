-- tests/lua/heldout_configs_spec.lua -- real Hugging Face config.json files
-- of 2025-26 families that no other spec reads, imported as a user brings
-- them (tests/fixtures/heldout_configs/, unmodified; its README says where
-- each file was copied from and the count its publisher gives): every file
-- either imports with the counts below or is refused with one
-- NotImplemented line that names the file and what is not modelled.
--
-- The counts of the families new here are computed in the comments from
-- the modelling code's shapes (file and commit named) and checked against
-- the published totals; the others are the counts apsearch gives, each
-- within the rounding of its card's total (tests/fixtures/heldout_configs/
-- FINDINGS.md lists the comparison).

local core = require "apsearch.core"
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local DIR = H.ROOT .. "/tests/fixtures/heldout_configs/"

local err_of, copy = H.err_of, H.copy
local near, CARD_ROUNDING, CARD_ROUNDING_2 = H.near_card, H.CARD_ROUNDING, H.CARD_ROUNDING_2

local function load(name) return hf.load(DIR .. name .. ".json") end
local function decoded(name) return H.read_json(DIR .. name .. ".json") end

local function has_note(info, text)
  for _, n in ipairs(info.notes or {}) do
    if n:find(text, 1, true) then return true end
  end
  return false
end

--- Parameters of a dense Qwen3 text model as transformers'
-- Qwen3ForCausalLM builds it (modeling_qwen3.py @ 02e8340b: Qwen3Attention
-- q h x a d, k and v h x kv d, o a d x h, no biases, q_norm and k_norm
-- RMSNorm(d); Qwen3MLP 3 h f; two RMSNorms h), times the layers; the
-- embedding V x h, the lm_head V x h unless tied, the final norm h.
local function qwen3_dense(c)
  local h, a, kv, d = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim
  local layer = 2 * h * a * d + 2 * h * kv * d + 2 * d + 3 * h * c.intermediate_size + 2 * h
  local V = c.vocab_size
  return c.num_hidden_layers * layer + (c.tie_word_embeddings and 1 or 2) * V * h + h, V * h
end

--- What each file gives: its total and active counts, or the start of its
-- refusal (after "NotImplemented: <file>: ").
local EXPECT = {
  ["Qwen--Qwen3-0.6B"] = { total = 596049920 },
  ["Qwen--Qwen3-1.7B"] = { total = 1720574976 },
  ["Qwen--Qwen3-8B"] = { total = 8190735360 },
  ["Qwen--Qwen3-32B"] = { total = 32762123264 },
  ["Qwen--Qwen3-32B-FP8"] = { total = 32762123264 },
  ["Qwen--Qwen3-VL-4B-Instruct"] = { total = 4022468096 },
  ["Qwen--Qwen3-VL-8B-Instruct"] = { total = 8190735360 },
  ["Qwen--Qwen3.5-122B-A10B"] = { total = 122111526912, active = 9771288576 },
  ["Qwen--Qwen3.5-397B-A17B"] = { total = 396346350336, active = 17349040896 },
  ["Qwen--Qwen3.8-2.4T-A95B"] = { total = 2419804697984, active = 95287866752 },
  ["MiniMaxAI--MiniMax-M2.5"] = { total = 228689764864, active = 11030553088 },
  ["XiaomiMiMo--MiMo-7B-Base"] = { total = 7622619136 },
  ["deepseek-ai--DeepSeek-R1"] = { total = 671026419200, active = 37552297472 },
  ["google--gemma-3-27b"] = { total = 27009346304 },
  ["his0si--EXAONE-4.0-1.2B-w4a16"] = { total = 1279391488 },
  ["mistralai--Mixtral-8x22B-v0.1"] = { total = 140620634112, active = 39152031744 },
  ["moonshotai--Kimi-K2.5"] = { total = 1026408232448, active = 32861500928 },
  ["nvidia--Nemotron-H-56B-Base-8K"] = { total = 56324350464 },
  ["zai-org--GLM-5.1"] = { total = 743911218432, active = 41784728832 },
  ["deepcogito--cogito-v1-preview-qwen-14B"] = { total = 14765947904 },
  ["mistralai--Devstral-Small-2507"] = { total = 23572403200 },
  ["google--medgemma-27b-it"] = { total = 27009346304 },
  ["ibm-granite--granite-3.1-1b-a400m-instruct"] = { total = 1334628352, active = 428658688 },
  ["jj8127--mimo_kor"] = { total = 7622619136 },
  ["bryce-hoehn--Qwen3.5-18B-REAP-A3B-Coding"] = { total = 18543997568, active = 3444503168 },
  ["tencent--Hunyuan-A13B"] = { total = 80393183232, active = 12747448320 },
  -- counted module by module in tests/lua/models_minimax_m3_spec.lua
  ["MiniMaxAI--MiniMax-M3"] = { total = 426174572928, active = 25962473856 },
  -- hand-counted layer by layer in tests/lua/models_mimo_v2_spec.lua (the card: 309B total, 15B active)
  ["XiaomiMiMo--MiMo-V2-Flash"] = { total = 308778780864, active = 15445936320 },
  -- hand-counted module by module in tests/lua/models_deepseek_v4_spec.lua
  -- and tests/c/test_dsv4.c (the cards: 284B / 13B, 1.6T / 49B); the
  -- FP8 copy names the class under model_type deepseek_ref
  ["deepseek-ai--DeepSeek-V4-Flash"] = { total = 284332230231, active = 13799622231 },
  ["sgl-project--DeepSeek-V4-Flash-FP8"] = { total = 284332230231, active = 13799622231 },
  ["nvidia--DeepSeek-V4-Pro-NVFP4"] = { total = 1572997179491, active = 49779058787 },
  -- the text model, hand-counted in tests/lua/models_gemma4_spec.lua
  -- (the card: 25.2B total, 3.8B active)
  ["google--gemma-4-26B-A4B"] = { total = 25233141760, active = 3822530560 },
  -- the text model as NeMo AutoModel builds it, counted module by module
  -- in tests/lua/models_muse_glimmer_spec.lua
  ["meta-models--Muse-Glimmer-30B"] = { total = 27854780928 },
  -- the text model as NeMo AutoModel's kimi_k3 builds it, counted module by
  -- module in tests/lua/models_kimi_linear_spec.lua
  ["moonshotai--Kimi-K3"] = { total = 2779484476000, active = 105364017760 },
  -- latent MoE and one MTP depth "*E" (tests/c/test_hybrid.c
  -- test_hybrid_params_nemotron3_super has the hand count)
  ["nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8"] = { total = 120668707840, active = 12770237440 },
  -- transformers' newer list form: the layers and the MTP depth as
  -- layers_block_type / mtp_layers_block_type, no num_hidden_layers
  ["nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"] = { total = 549308993536, active = 56058843136 },
  ["nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"] = { total = 31577940288, active = 3580076352 },
  -- counted module by module in tests/lua/models_laguna_spec.lua (33B-A3B)
  ["poolside--Laguna-XS.2-FP8"] = { total = 33442617088, active = 3017135872 },
  -- counted module by module in tests/lua/models_step3p5_spec.lua (196B-A11B
  -- without the embeddings)
  ["stepfun-ai--Step-3.5-Flash"] = { total = 196956130368, active = 11987323968 },
  -- vLLM's and SGLang's step3p7.py run Step3p5ForCausalLM, whose keys
  -- (moe_num_experts, use_head_wise_attn_gate, ...) this file does not give
  ["stepfun-ai--Step-3.7-Flash"] = { refused = "model_type: step3p7: Step-3.7-Flash without a text_config is " ..
    "not read: its language model is Step3p5ForCausalLM" },
  -- GLM-5.1's shapes with indexers on 21 of the 78 layers (Megatron-Core's
  -- and vLLM's schedule of index_topk_freq 4, offset 3: layers 1-3, 7, 11,
  -- ..., 75 1-based): GLM-5.1 less 57 indexers of 2048 x 32 x 128 (wq_b) +
  -- 6144 x 128 (wk) + 6144 x 32 (weights_proj) + 2 x 128 (k_norm) =
  -- 9,371,904 parameters each
  ["zai-org--GLM-5.2"] = { total = 743911218432 - 57 * 9371904, active = 41784728832 - 57 * 9371904 },
  -- not NotImplemented: an unknown type, named with the types apsearch reads
  -- the Phi-3 language model vLLM's phi4siglip.py builds on the top-level
  -- config: 40 layers of qkv (40 + 2 x 10) x 128 x 5120, o 5120^2, MLP 3 x
  -- 5120 x 17920, 2 norms; untied 100352 x 5120 twice; the final norm
  -- (Phi-4's card: 14.7B; the name's 15B counts the SigLIP2 tower)
  ["microsoft--Phi-4-reasoning-vision-15B"] = { total = 40 * (60 * 128 * 5120 + 5120 * 5120 + 3 * 5120 * 17920 +
    2 * 5120) + 2 * 100352 * 5120 + 5120 },
  -- Llama with q, k, v and o biases (its modeling_openpangu_dense.py @
  -- 26a4a87d): 34 layers of 4096 x 4096 + 4096 (q), 2 x (4096 x 1024 +
  -- 1024) (k, v), 4096 x 4096 + 4096 (o), 3 x 4096 x 12800 (MLP), 2 x
  -- 4096 (norms) = 199,247,872; untied 153376 x 4096 twice; the final
  -- norm: 8,030,887,936 (6,774,427,648 without the embeddings: the
  -- name's 7B)
  ["IDLEOAK--openPangu-Embedded"] = { total = 34 * (4096 * 4096 + 4096 + 2 * (4096 * 1024 + 1024) + 4096 * 4096 +
    4096 + 3 * 4096 * 12800 + 2 * 4096) + 2 * 153376 * 4096 + 4096 },
  -- Mistral's native params.json, beside Devstral's config.json
  ["mistralai--Devstral-Small-2507.params"] = { native_params = true },
}

describe("held-out config.json files", function()
  it("every file in the folder is listed here, and imports or is refused as listed", function()
    local seen = 0
    for entry in require("lfs").dir(DIR) do
      local name = entry:match("^(.+)%.json$")
      if name then
        seen = seen + 1
        local want = EXPECT[name]
        assert.is_not_nil(want, name .. " is not listed in EXPECT")
        local path = DIR .. entry
        if want.total then
          local m = hf.load(path)
          local c = core.model_params(m)
          assert.are.same({ want.total, want.active or want.total }, { c.total, c.active }, name)
        else
          local e = err_of(hf.load, path)
          if want.native_params then
            assert.truthy(e:find(path .. ": model_type: required key is missing: the file has the keys of a " ..
              "native params.json", 1, true), e)
          elseif want.refused then
            assert.are.equal("NotImplemented: " .. path .. ": " .. want.refused,
              e:sub(1, #("NotImplemented: " .. path .. ": " .. want.refused)), name)
            assert.is_nil(e:find("\n"), name)
          else
            assert.truthy(e:find(path .. ": model_type: unsupported model type", 1, true), e)
            assert.truthy(e:find('(got "' .. want.unknown .. '")', 1, true), e)
          end
        end
      end
    end
    local listed = 0
    for _ in pairs(EXPECT) do listed = listed + 1 end
    assert.are.equal(listed, seen)
  end)

  -- Qwen3 dense (cards: 0.6B, 0.44B without the embedding; 1.7B, 1.4B;
  -- 8.2B, 6.95B; 32.8B, 31.2B): the formula of qwen3_dense on each file.
  -- Qwen3-0.6B by hand: layer 3 x 2,097,152 (q, k + v, o) + 256 (Q/K
  -- norms) + 3 x 1024 x 3072 (MLP) + 2,048 = 15,730,944; x 28 =
  -- 440,466,432; tied embedding 151936 x 1024 = 155,582,464; final norm
  -- 1,024: 596,049,920 (440,467,456 without the embedding, the card's
  -- 0.44B).
  it("Qwen3 dense 0.6B-32B: the Qwen3ForCausalLM count, within the cards' totals", function()
    local cards = { ["Qwen--Qwen3-0.6B"] = { 0.6e9, 0.44e9 }, ["Qwen--Qwen3-1.7B"] = { 1.7e9, 1.4e9 },
      ["Qwen--Qwen3-8B"] = { 8.2e9, 6.95e9 }, ["Qwen--Qwen3-32B"] = { 32.8e9, 31.2e9 } }
    for name, card in pairs(cards) do
      local want, emb = qwen3_dense(decoded(name))
      local c = core.model_params((load(name)))
      assert.are.equal(want, c.total, name)
      assert.is_true(near(want, card[1], CARD_ROUNDING_2), name)
      assert.is_true(near(c.total - c.embedding - c.output_layer, card[2], CARD_ROUNDING_2), name)
    end
    assert.are.equal(596049920, (qwen3_dense(decoded("Qwen--Qwen3-0.6B"))))
    -- Qwen3-VL's dense text models are Qwen3's: the 8B's is Qwen3-8B's
    local vl = decoded("Qwen--Qwen3-VL-8B-Instruct").text_config
    assert.are.equal(qwen3_dense(decoded("Qwen--Qwen3-8B")), (qwen3_dense(vl)))
  end)

  -- sgl-project/DeepSeek-V4-Flash-FP8 names DeepSeek-V4's class under
  -- model_type "deepseek_ref": read as DeepSeek-V4 (it was refused for its
  -- index_n_heads as if DSA were modelled on other types, then as
  -- DeepSeek-V4 while that was not modelled), with DeepseekV4Config's
  -- defaults for the keys it leaves out (swiglu_limit, hidden_act, ...);
  -- nvidia/MiniMax-M3-NVFP4's text_config names MiniMax-M3's sparse class
  -- and no model_type (its refusal said "model_type nil").  That file is
  -- 3 MB of quantization lists and not kept: its wrapper is rebuilt here
  -- around MiniMax-M3's own config, as the NVFP4 file has it.
  it("a class under another model_type or none is read as its type, or refused as that type", function()
    local path = DIR .. "sgl-project--DeepSeek-V4-Flash-FP8.json"
    local m, info = hf.load(path)
    assert.are.equal("deepseek_v4", info.model_type)
    assert.truthy(table.concat(info.notes, "\n"):find(path .. ": model_type deepseek_ref read as deepseek_v4 " ..
      "(architectures names DeepseekV4ForCausalLM, that type's modelling class)", 1, true))
    assert.are.equal(10.0, m.glu_clamp) -- DeepseekV4Config's swiglu_limit
    assert.are.same(core.model_params((hf.load(DIR .. "deepseek-ai--DeepSeek-V4-Flash.json"))), core.model_params(m))
    local text = decoded("MiniMaxAI--MiniMax-M3")
    text.model_type, text.architectures = nil, { "MiniMaxM3SparseForCausalLM" }
    local wrapper = { model_type = "minimax_m3_vl", architectures = { "MiniMaxM3SparseForConditionalGeneration" },
      text_config = text, vision_config = {} }
    -- (MiniMax-M3 is read since 2026-12-05: the wrapper trains its text model)
    assert.are.same(core.model_params((hf.load(DIR .. "MiniMaxAI--MiniMax-M3.json"))),
      core.model_params((hf.from_config(wrapper, "m.json"))))
    -- the wrapper names its text type: a text_config with neither a
    -- model_type nor a class is read as MiniMax-M3's
    text.architectures = nil
    assert.are.same(core.model_params((hf.load(DIR .. "MiniMaxAI--MiniMax-M3.json"))),
      core.model_params((hf.from_config(wrapper, "m.json"))))
  end)

  -- PanguEmbeddedConfig (its remote configuration_openpangu_dense.py)
  -- defaults bias to True: q, k, v and o keep their biases without the key
  it("openPangu-Embedded: the biases by the config class's default when bias is absent", function()
    local cfg = decoded("IDLEOAK--openPangu-Embedded")
    cfg.bias = nil
    local m = hf.from_config(cfg, "p.json")
    assert.are.same({ true, true }, { m.qkv_bias, m.attn_out_bias })
    cfg.bias = false
    assert.are.equal(8030887936 - 34 * (4096 + 2 * 1024 + 4096), core.model_params((hf.from_config(cfg, "p.json"))).total)
  end)

  it("Step-3.7-Flash is refused under its class too, naming the keys its reference reads", function()
    local cfg = decoded("stepfun-ai--Step-3.7-Flash")
    cfg.model_type = nil
    assert.are.equal("NotImplemented: s.json: model_type: (missing) (read as step3p7 by its architectures class " ..
      "Step3p7FlashForCausalLM): " .. hf.UNMODELLED.step3p7, err_of(hf.from_config, cfg, "s.json"))
    for _, key in ipairs({ "use_head_wise_attn_gate", "attention_other_setting", "moe_layers_enum",
      "moe_num_experts", "swiglu_limits" }) do
      assert.truthy(hf.UNMODELLED.step3p7:find(key, 1, true), key)
    end
  end)

  -- XiaomiMiMo/MiMo-7B-Base (mimo; card: 7B, "one MTP layer"): Qwen2's
  -- model (Qwen2Attention's q/k/v biases), vLLM mimo.py / mimo_mtp.py @
  -- 0bb55d60.  Layer: q 4096 x 4096 + 4096, k and v 4096 x 1024 + 1024
  -- each, o 4096 x 4096, the MLP 3 x 4096 x 11008, two norms:
  -- 177,223,680; x 36 = 6,380,052,480; embedding and lm_head 2 x 151680 x
  -- 4096 = 1,242,562,560; final norm 4,096.  Total 7,622,619,136.  Its MTP
  -- layer (a decoder layer, input_proj 2 x 4096 x 4096 = 33,554,432 and
  -- three norms, 210,790,400) is not counted: with it the checkpoint has
  -- 7,833,409,536.  It was refused as an unknown type ("did you mean
  -- olmo?").
  it("MiMo-7B-Base (mimo): Qwen2's 7,622,619,136; its MTP layer noted, not counted", function()
    local m, info = load("XiaomiMiMo--MiMo-7B-Base")
    local h, layer = 4096, 4096 * 4096 + 4096 + 2 * (4096 * 1024 + 1024) + 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert.are.equal(177223680, layer)
    local c = core.model_params(m)
    assert.are.equal(36 * layer + 2 * 151680 * h + h, c.total)
    assert.are.equal(7622619136, c.total)
    assert.are.equal(7833409536, c.total + layer + 2 * h * h + 3 * h)
    assert.is_true(near(c.total, 7e9, 0.1)) -- the card's "7B"
    assert.is_true(m.qkv_bias and not m.attn_out_bias)
    assert.is_nil(m.mtp_layers)
    assert.is_true(has_note(info, "the checkpoint's 1 multi-token-prediction layer(s) (num_nextn_predict_layers"))
    -- read by its class under another type name, as Kimi-K2 is
    local cfg = decoded("XiaomiMiMo--MiMo-7B-Base")
    cfg.model_type = "mimo_7b"
    assert.are.equal(7622619136, core.model_params((hf.from_config(cfg, "m.json"))).total)
  end)

  -- A quantized checkpoint's config imports as the model it is and says
  -- that the estimate trains in training.precision: the note was written
  -- for gpt-oss's mxfp4 only, and Qwen3-32B-FP8, a user's int4 re-save of
  -- EXAONE-4.0-1.2B and Kimi-K2.5's compressed-tensors text_config
  -- imported silently.
  it("a quantization_config of any type or wrapper is noted, naming its method", function()
    local function notes_of(name) return select(2, load(name)) end
    local base = DIR .. "Qwen--Qwen3-32B-FP8.json"
    assert.is_true(has_note(notes_of("Qwen--Qwen3-32B-FP8"), base .. ": the checkpoint's fp8 weights " ..
      "(quantization_config) are not modelled: the estimate trains in training.precision"))
    assert.is_true(has_note(notes_of("his0si--EXAONE-4.0-1.2B-w4a16"), "the checkpoint's compressed-tensors weights"))
    assert.is_true(has_note(notes_of("moonshotai--Kimi-K2.5"), "text_config: the checkpoint's compressed-tensors"))
    -- modelopt's files name the format in quant_algo; a wrapper's own
    -- quantization_config (nvidia's NVFP4 Qwen3.5) is read too
    local cfg = decoded("Qwen--Qwen3.5-122B-A10B")
    cfg.quantization_config = { quant_method = "modelopt", quant_algo = "NVFP4" }
    local _, info = hf.from_config(cfg, "m.json")
    assert.is_true(has_note(info, "m.json: the checkpoint's modelopt NVFP4 weights (quantization_config)"))
    assert.are.equal(122111526912, core.model_params((hf.from_config(cfg, "m.json"))).total)
    assert.is_false(has_note(notes_of("Qwen--Qwen3-32B"), "quantization_config"))
  end)

  -- Where a copy of the checkpoint's safetensors index was at hand, the
  -- count is the checkpoint's own: total_size / 2 bytes of bf16 (or the
  -- index's total_parameters), each file's repository and commit in the
  -- README.  MiMo (jj8127/mimo_kor, MiMo-7B's keys): 15,666,819,072 / 2 =
  -- 7,833,409,536, the import's 7,622,619,136 and the MTP layer's
  -- 210,790,400 (MiMo spec above).  medgemma-27b-it: 54,864,813,280 / 2 =
  -- 27,432,406,640, Gemma-3-27B's (its total_parameters, 28,842,036,848,
  -- counts the tied lm_head a second time: + 262208 x 5376).  A Qwen3.5
  -- MoE pruned to 128 experts, with no vision tower or MTP weights in its
  -- index: 37,087,995,136 / 2.
  it("the counts equal the checkpoints' safetensors totals", function()
    local function total(name) return core.model_params((load(name))).total end
    assert.are.equal(29531895808 // 2, total("deepcogito--cogito-v1-preview-qwen-14B"))
    assert.are.equal(23572403200, total("mistralai--Devstral-Small-2507")) -- total_parameters
    assert.are.equal(15666819072 // 2, total("jj8127--mimo_kor") + 210790400)
    local m, info = load("google--medgemma-27b-it")
    assert.are.equal(54864813280 // 2, core.model_params(m).total + info.vision_params)
    assert.are.equal(28842036848, 54864813280 // 2 + 262208 * 5376)
    assert.are.equal(37087995136 // 2, total("bryce-hoehn--Qwen3.5-18B-REAP-A3B-Coding"))
  end)

  -- A user who gives the params.json of a Mistral repository (Devstral's
  -- sits beside its config.json) was told only that model_type is
  -- missing, with the list of supported types.
  it("a native params.json is named as such, with the file to give instead", function()
    local path = DIR .. "mistralai--Devstral-Small-2507.params.json"
    assert.are.equal(path .. ": model_type: required key is missing: the file has the keys of a native " ..
      "params.json (dim, n_layers, n_heads), which Mistral's and Meta's Hub repositories ship beside the " ..
      "Hugging Face config.json: give that config.json (got nothing)", err_of(hf.load, path))
    -- one of the keys missing: the generic message
    local cfg = decoded("mistralai--Devstral-Small-2507.params")
    cfg.n_heads = nil
    assert.truthy(err_of(hf.from_config, cfg, "p.json"):find("^p%.json: model_type: required key is missing %(supported"))
    -- NVIDIA ModelOpt's hf_quant_config.json (aiconfigurator's model_configs
    -- folder holds 27 of them beside the configs) is named too
    assert.are.equal("q.json: model_type: required key is missing: the file is a quantization config " ..
      "(hf_quant_config.json: producer, quantization), which quantized checkpoints ship beside their " ..
      "config.json: give that config.json (got nothing)", err_of(hf.from_config, { producer = { name = "modelopt" },
        quantization = { quant_algo = "NVFP4" } }, "q.json"))
    -- the Nemotron 3 Super / Ultra FP8 files have no producer
    assert.truthy(err_of(hf.from_config, { quantization = { quant_algo = "FP8", kv_cache_quant_algo = "FP8" } },
      "q.json"):find("the file is a quantization config", 1, true))
  end)

  -- nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8: latent MoE
  -- (moe_latent_size 1024) and one MTP depth of mtp_hybrid_override_pattern
  -- "*E".  With the MTP depth it is 123,611,033,088: the element count of
  -- the BF16 checkpoint (Megatron-Bridge 067f987df examples/
  -- model_verification_cards/nemotron-3-super-120b-a12b/card.yaml).
  it("Nemotron 3 Super: latent MoE and its MTP depth, 123,611,033,088 with it", function()
    local m = load("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    assert.are.same({ 1024, 1, "*E" }, { m.moe_latent_size, m.mtp_layers, m.mtp_layer_pattern })
    local c = core.model_params(m)
    assert.are.equal(123611033088, c.total + c.mtp)
    local cfg = decoded("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    cfg.mtp_hybrid_override_pattern = "*X"
    assert.are.equal('s.json: mtp_hybrid_override_pattern: character 2 is not M, *, - or E (got "*X")',
      err_of(hf.from_config, cfg, "s.json"))
  end)

  it("Nemotron 3 Ultra and 3.5 Lightning: the list form's layers and MTP depth, the default depth noted", function()
    local m, info = load("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert.are.same({ 108, 2048, 1, "*E" }, { m.num_layers, m.moe_latent_size, m.mtp_layers, m.mtp_layer_pattern })
    assert.is_false(has_note(info, "default mtp_layers_block_type"))
    -- less the input embedding (131,072 x 8,192), the active count is the
    -- name's 55B: 56,058,843,136 - 1,073,741,824 = 54,985,101,312
    local c = core.model_params(m)
    assert.are.equal(54985101312, c.active - 131072 * 8192)
    assert.are.equal(11215610368, c.mtp)
    -- no MTP list: transformers' default ['attention', 'moe'], said
    local cfg = decoded("nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4")
    cfg.mtp_layers_block_type = nil
    local m2, info2 = hf.from_config(cfg, "l.json")
    assert.are.same({ 1, "*E" }, { m2.mtp_layers, m2.mtp_layer_pattern })
    assert.is_true(has_note(info2, "each depth taken as transformers' default mtp_layers_block_type " ..
      "['attention', 'moe']"))
    cfg.mtp_layers_block_type = { "attention", "router" }
    assert.are.equal('l.json: mtp_layers_block_type[1]: expected mamba, attention, mlp or moe (got "router")',
      err_of(hf.from_config, cfg, "l.json"))
    -- both spellings: taken when they agree, refused when they do not
    cfg.mtp_layers_block_type, cfg.mtp_hybrid_override_pattern = { "attention", "moe" }, "*E"
    assert.are.equal("*E", hf.from_config(cfg, "l.json").mtp_layer_pattern)
    cfg.mtp_hybrid_override_pattern = "MMMM"
    assert.are.equal('l.json: mtp_hybrid_override_pattern: disagrees with mtp_layers_block_type (*E): give one of ' ..
      'them (got "MMMM")', err_of(hf.from_config, cfg, "l.json"))
    cfg.mtp_hybrid_override_pattern = nil
    cfg.hybrid_override_pattern = string.rep("ME", 10)
    assert.truthy(err_of(hf.from_config, cfg, "l.json"):find("l.json: hybrid_override_pattern: disagrees with " ..
      "layers_block_type (", 1, true))
    cfg.hybrid_override_pattern, cfg.layers_block_type = nil, "mamba"
    assert.are.equal('l.json: layers_block_type: expected a non-empty list of mamba, attention, mlp or moe ' ..
      '(got "mamba")', err_of(hf.from_config, cfg, "l.json"))
  end)

  -- google/gemma-3-27b (Gemma3ForConditionalGeneration): the text model
  -- 27,009,346,304 plus the SigLIP tower 416,866,032 and the projector
  -- 6,194,304 (1152 x 5376 + 1152) is 27,432,406,640, the checkpoint's
  -- parameter count (its card: 27B).
  it("Gemma-3-27B: its text model 27,009,346,304, 27,432,406,640 with the vision tower", function()
    local m, info = load("google--gemma-3-27b")
    assert.are.equal(27432406640, core.model_params(m).total + info.vision_params)
  end)
end)
