-- tests/lua/models_llava_spec.lua -- multimodal wrappers whose language
-- model is AutoModel.from_config(text_config), read through to that text
-- model: LLaVA 1.5 / NeXT and Idefics 3 (text type default "llama"),
-- LLaVA-OneVision and InternVL (default "qwen2"); transformers
-- configuration_llava.py @ 053f59ef, configuration_llava_next.py @
-- 063b32f6, configuration_idefics3.py @ 0025a6f5,
-- configuration_llava_onevision.py @ 04ea11d8, configuration_internvl.py
-- @ 04ea98d5; and InternVL's original format (internvl_chat), whose
-- remote code builds `llm_config` by its architectures[0] (OpenGVLab/
-- InternVL 016ae21f configuration_internvl_chat.py).

local hf = require "apsearch.hf"
local core = require "apsearch.core"
local cjson = require "cjson"

local function read_json(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return cjson.decode(s)
end

local ROOT = os.getenv("APS_ROOT") or "."

-- llava-hf/llava-1.5-7b-hf's config.json: its Vicuna-7B text_config gives
-- only vocab_size, max_position_embeddings and rms_norm_eps; LlamaConfig
-- fills the Llama-2-7B shapes (configuration_llama.py @ 008e5743)
local function llava15()
  return {
    architectures = { "LlavaForConditionalGeneration" }, ignore_index = -100, image_token_index = 32000,
    model_type = "llava", pad_token_id = 32001, projector_hidden_act = "gelu",
    text_config = { _name_or_path = "lmsys/vicuna-7b-v1.5", architectures = { "LlamaForCausalLM" },
      max_position_embeddings = 4096, model_type = "llama", rms_norm_eps = 1e-05, torch_dtype = "float16",
      vocab_size = 32064 },
    tie_word_embeddings = false, torch_dtype = "float16",
    vision_config = { hidden_size = 1024, image_size = 336, intermediate_size = 4096,
      model_type = "clip_vision_model", num_attention_heads = 16, num_hidden_layers = 24, patch_size = 14,
      projection_dim = 768, vocab_size = 32000 },
    vision_feature_layer = -2, vision_feature_select_strategy = "default", vocab_size = 32064,
  }
end

describe("LLaVA-family wrappers", function()
  it("read LLaVA 1.5's text model with LlamaConfig's defaults: Vicuna-7B, 6,738,939,904", function()
    -- Llama-2-7B's 6,738,415,616 (models/README.md) with 64 more tokens in
    -- the embedding and the untied output layer: + 2 x 64 x 4096
    local m, info = hf.from_config(llava15(), "llava.json")
    assert.are.equal(6738415616 + 2 * 64 * 4096, core.model_params(m).total)
    assert.are.equal(32, m.num_layers)
    assert.are.equal(11008, m.ffn_hidden_size)
    assert.are.equal(32, m.num_query_groups)
    assert.truthy(info.notes[1]:find("model_type llava is multimodal: the estimate trains its text model " ..
      "(text_config, model_type llama)", 1, true), info.notes[1])
    assert.are.equal("LlavaForConditionalGeneration", info.architecture)
  end)

  it("read a text_config without model_type as llama (LLaVA-NeXT, Idefics 3) or qwen2 (OneVision, InternVL)",
    function()
      local qwen = read_json(ROOT .. "/examples/models/qwen2.5-7b.json")
      local llama = read_json(ROOT .. "/examples/models/llama-2-7b.json")
      -- Qwen2.5-7B 7,615,616,512 (q/k/v biases), Llama-2-7B 6,738,415,616
      for wrapper, case in pairs({ llava_next = { llama, 6738415616 }, idefics3 = { llama, 6738415616 },
        llava_onevision = { qwen, 7615616512 }, internvl = { qwen, 7615616512 } }) do
        local t = {}
        for k, v in pairs(case[1]) do t[k] = v end
        t.model_type = nil
        local m = hf.from_config({ model_type = wrapper, text_config = t, vision_config = {} }, wrapper .. ".json")
        assert.are.equal(case[2], core.model_params(m).total, wrapper)
      end
    end)

  it("read InternVL's llm_config (internvl_chat) by its class, whatever its model_type says", function()
    -- Qwen2.5-7B's config under InternVL's Qwen2ForCausalLM: 7,615,616,512
    local qwen = read_json(ROOT .. "/examples/models/qwen2.5-7b.json")
    qwen.model_type = "not_read"
    local m, info = hf.from_config({ model_type = "internvl_chat", architectures = { "InternVLChatModel" },
      llm_config = qwen, vision_config = { model_type = "intern_vit_6b" } }, "iv.json")
    assert.are.equal(7615616512, core.model_params(m).total)
    assert.truthy(info.notes[1]:find("(llm_config, model_type qwen2)", 1, true), info.notes[1])
    -- a class InternVL does not build: refused, naming the key and the class
    qwen.architectures = { "MistralForCausalLM" }
    local ok, err = pcall(hf.from_config, { model_type = "internvl_chat", llm_config = qwen }, "iv.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find('iv.json: llm_config.architectures: expected a class the wrapper builds', 1,
      true), err)
    assert.truthy(tostring(err):find("MistralForCausalLM", 1, true), err)
    ok, err = pcall(hf.from_config, { model_type = "internvl_chat", llm_config = cjson.null }, "iv.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("iv.json: llm_config: expected an object", 1, true), err)
  end)

  it("read LLaVA-NeXT's Mistral text_config with MistralConfig's defaults (its null window: none)", function()
    -- llava-hf/llava-v1.6-mistral-7b-hf: hidden size, layers and heads left
    -- to MistralConfig (configuration_mistral.py @ 001f85b3); Mistral-7B's
    -- 7,241,732,096 with 64 more tokens in and out: + 2 x 64 x 4096
    local cfg = { architectures = { "LlavaNextForConditionalGeneration" }, model_type = "llava_next",
      text_config = { _name_or_path = "mistralai/Mistral-7B-Instruct-v0.2", architectures = { "MistralForCausalLM" },
        intermediate_size = 14336, max_position_embeddings = 32768, model_type = "mistral", num_key_value_heads = 8,
        rms_norm_eps = 1e-05, rope_theta = 1000000.0, sliding_window = cjson.null, vocab_size = 32064 },
      vision_config = { model_type = "clip_vision_model" }, vocab_size = 32064 }
    local m = hf.from_config(cfg, "llava16.json")
    assert.are.equal(7241732096 + 2 * 64 * 4096, core.model_params(m).total)
    assert.are.equal(8, m.num_query_groups)
    assert.is_true((m.sliding_window or 0) == 0)
    -- without the key, MistralConfig's 4096-token window on every layer
    cfg.text_config.sliding_window = nil
    assert.are.equal(4096, hf.from_config(cfg, "llava16.json").sliding_window)
  end)

  it("refuse a text_config whose model_type is no text model apsearch reads, whatever its class", function()
    -- transformers builds CONFIG_MAPPING[model_type]: a wrapper's type (a
    -- LlavaConfig, not a text model) or an unknown one is not LlamaForCausalLM
    for _, mt in ipairs({ "llava", "vicuna", 7 }) do
      local cfg = llava15()
      cfg.text_config.model_type = mt
      local ok, err = pcall(hf.from_config, cfg, "llava.json")
      assert.is_false(ok, tostring(mt))
      assert.truthy(tostring(err):find("its text_config gives model_type " .. require("apsearch.util").describe(mt),
        1, true), err)
    end
    -- a top-level tie_word_embeddings that is no boolean, even beside the text's own
    local cfg = llava15()
    cfg.tie_word_embeddings = "yes"
    local ok, err = pcall(hf.from_config, cfg, "llava.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find('llava.json: tie_word_embeddings: expected true or false (got "yes")', 1, true),
      err)
  end)

  it("refuse a text model apsearch has no reader for, naming it", function()
    local cfg = llava15()
    cfg.text_config.model_type = "no_such_text"
    cfg.text_config.architectures = nil
    local ok, err = pcall(hf.from_config, cfg, "llava.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("llava.json", 1, true), err)
    assert.truthy(tostring(err):find("no_such_text", 1, true), err)
  end)
end)
