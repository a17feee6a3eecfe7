-- tests/lua/new_readers_edges_spec.lua -- bad and borderline inputs to the
-- readers of Phi-3.5-MoE (phimoe), LongRoPE, transformers-5 rope_parameters,
-- the Mistral 3 wrapper (mistral3) and a policy's hand-written MoE model
-- table: each is one line naming the file, the key as the file spells it
-- and the value, or is read as transformers reads it.

local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local err_of = H.err_of

local function filled(n, v)
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

-- Phi-3.5-MoE's shapes (hidden 4096, 32 layers, 32 heads of 128, 8 KV
-- heads, 16 experts of 6400, vocab 32064), no biases, longrope from 4096.
local function phimoe(changes)
  local cfg = { model_type = "phimoe", hidden_size = 4096, intermediate_size = 6400,
    max_position_embeddings = 131072, num_attention_heads = 32, num_experts_per_tok = 2, num_hidden_layers = 32,
    num_key_value_heads = 8, num_local_experts = 16, rope_theta = 10000.0, tie_word_embeddings = false,
    vocab_size = 32064, rope_scaling = { type = "longrope", short_factor = filled(64, 1.0),
      long_factor = filled(64, 1.5), short_mscale = 1.243163121016122, long_mscale = 1.243163121016122,
      original_max_position_embeddings = 4096 } }
  for k, v in pairs(changes or {}) do cfg[k] = v end
  return cfg
end

describe("phimoe: what sparsemixer and PhimoeConfig require", function()
  it("routes every token to 2 experts: another num_experts_per_tok or a single expert is refused", function()
    -- sparsemixer ignores its top_k: a top-3 config would be priced with 3
    -- experts' work where transformers computes 2
    assert.are.equal("p.json: num_experts_per_tok: expected 2 (sparsemixer routes every token to 2 experts " ..
      "whatever this key says) (got 3)", err_of(hf.from_config, phimoe({ num_experts_per_tok = 3 }), "p.json"))
    assert.are.equal("p.json: num_local_experts: expected at least 2 (sparsemixer picks a second expert) (got 1)",
      err_of(hf.from_config, phimoe({ num_local_experts = 1 }), "p.json"))
    -- 2 experts: both active.  Per layer q, o 4096^2 + k, v 4096 x 1024,
    -- two LayerNorms with bias 2 x 8192, router 2 x 4096, 2 experts of
    -- 3 x 4096 x 6400; embedding and lm_head 32064 x 4096; final norm 8192
    local c = core.model_params(hf.from_config(phimoe({ num_local_experts = 2 }), "p.json"))
    local layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 8192 + 2 * 4096 + 2 * 3 * 4096 * 6400
    assert.are.equal(32 * layer + 2 * 32064 * 4096 + 8192, c.total)
    assert.are.same({ 6638804992, 6638804992 }, { c.total, c.active })
  end)

  it("refuses a rope_scaling without number short_mscale and long_mscale (PhimoeConfig's TypeError)", function()
    local cfg = phimoe()
    cfg.rope_scaling.long_mscale = nil
    assert.are.equal("p.json: rope_scaling: long_mscale: expected a number (PhimoeConfig requires it) (got nothing)",
      err_of(hf.from_config, cfg, "p.json"))
    cfg.rope_scaling.long_mscale, cfg.rope_scaling.short_mscale = 1.2, "1.2"
    assert.are.equal('p.json: rope_scaling: short_mscale: expected a number (PhimoeConfig requires it) (got "1.2")',
      err_of(hf.from_config, cfg, "p.json"))
  end)

  it("ties the lm_head's weight to the embedding and keeps its bias", function()
    local untied = core.model_params(hf.from_config(phimoe({ lm_head_bias = true }), "p.json"))
    local tied = core.model_params(hf.from_config(phimoe({ lm_head_bias = true, tie_word_embeddings = true }), "p.json"))
    assert.are.equal(untied.total - 32064 * 4096, tied.total)
  end)
end)

describe("longrope: one factor > 0 per rotated pair", function()
  it("refuses lists of another length than head_dim * partial_rotary_factor / 2, and factors <= 0", function()
    local cfg = phimoe()
    cfg.rope_scaling.short_factor = filled(63, 1.0)
    assert.are.equal("p.json: rope_scaling: short_factor: expected 64 factors, one per rotated pair of the " ..
      "head's 128 RoPE dims (got 63)", err_of(hf.from_config, cfg, "p.json"))
    cfg.rope_scaling.short_factor = filled(64, 1.0)
    cfg.rope_scaling.long_factor[7] = 0
    assert.are.equal("p.json: rope_scaling: long_factor[6]: expected a finite number > 0 (got 0)",
      err_of(hf.from_config, cfg, "p.json"))
    -- GLM-4 rotates half of each 128-wide head: 32 pairs
    local glm = { model_type = "glm4", hidden_size = 4096, intermediate_size = 13696, num_attention_heads = 32,
      num_hidden_layers = 2, num_key_value_heads = 2, vocab_size = 1000, max_position_embeddings = 131072,
      rope_scaling = { rope_type = "longrope", short_factor = filled(32, 1.0), long_factor = filled(32, 1.0),
        original_max_position_embeddings = 32768 } }
    assert.are.same({ "longrope", 4.0 }, { hf.from_config(glm, "g.json").rope_scaling_type,
      hf.from_config(glm, "g.json").rope_scaling_factor })
    glm.rope_scaling.long_factor = filled(64, 1.0)
    assert.truthy(err_of(hf.from_config, glm, "g.json"):find("expected 32 factors", 1, true))
  end)

  -- Phi-4-mini's shapes (phi3: hidden 3072, 24 heads of 128, 8 KV heads,
  -- MLP 8192, 32 layers, vocab 200064 tied, partial_rotary_factor 0.75):
  -- 96 rotated dims, 48 factors.  Per layer qkv 3072 x 5120, o 3072^2,
  -- MLP 3 x 3072 x 8192, two norms; embedding; final norm.
  it("counts the pairs of a partial RoPE (Phi-4-mini: 48 factors)", function()
    local cfg = { model_type = "phi3", hidden_size = 3072, num_attention_heads = 24, num_key_value_heads = 8,
      intermediate_size = 8192, num_hidden_layers = 32, vocab_size = 200064, tie_word_embeddings = true,
      partial_rotary_factor = 0.75, max_position_embeddings = 131072, original_max_position_embeddings = 4096,
      rope_scaling = { type = "longrope", short_factor = filled(48, 1.0), long_factor = filled(48, 1.0) } }
    local m = hf.from_config(cfg, "phi4.json")
    local layer = 3072 * 5120 + 3072 * 3072 + 3 * 3072 * 8192 + 2 * 3072
    assert.are.equal(32 * layer + 200064 * 3072 + 3072, core.model_params(m).total)
    assert.are.same({ "longrope", 32.0, 0.75 }, { m.rope_scaling_type, m.rope_scaling_factor, m.rotary_percent })
  end)

  it("reads Phi-3's older scaling names su and yarn as longrope, as Phi3Config does", function()
    for _, kind in ipairs({ "su", "yarn" }) do
      local m = hf.from_config({ model_type = "phi3", hidden_size = 3072, num_attention_heads = 32,
        intermediate_size = 8192, num_hidden_layers = 2, vocab_size = 32064, max_position_embeddings = 131072,
        original_max_position_embeddings = 4096, rope_scaling = { type = kind, short_factor = filled(48, 1.0),
          long_factor = filled(48, 1.0) } }, "phi3.json")
      assert.are.same({ "longrope", 32.0 }, { m.rope_scaling_type, m.rope_scaling_factor }, kind)
    end
  end)

  it("names the top-level original_max_position_embeddings where the value is read from there", function()
    local cfg = phimoe({ original_max_position_embeddings = "4096" })
    cfg.rope_scaling.original_max_position_embeddings = nil
    assert.are.equal('p.json: original_max_position_embeddings: expected a positive integer <= 16777216 ' ..
      '(got "4096")', err_of(hf.from_config, cfg, "p.json"))
  end)
end)

describe("transformers-5 rope_parameters", function()
  local function olmo3(rp, changes)
    local cfg = { model_type = "olmo3", hidden_size = 512, intermediate_size = 1024, num_hidden_layers = 4,
      num_attention_heads = 8, num_key_value_heads = 8, vocab_size = 1000, max_position_embeddings = 65536,
      rope_parameters = rp }
    for k, v in pairs(changes or {}) do cfg[k] = v end
    return cfg
  end
  local full = function() return { rope_type = "yarn", rope_theta = 500000.0, factor = 8.0,
    original_max_position_embeddings = 8192 } end

  it("errors name the entry the value is in", function()
    local f = full()
    f.rope_theta = "x"
    assert.are.equal('o.json: rope_parameters.full_attention: rope_theta: expected a finite number > 0 (got "x")',
      err_of(hf.from_config, olmo3({ full_attention = f }), "o.json"))
    f = full()
    f.factor = nil
    assert.are.equal("o.json: rope_parameters.full_attention: factor: required key is missing (got nothing)",
      err_of(hf.from_config, olmo3({ full_attention = f }), "o.json"))
    f = full()
    f.partial_rotary_factor = 2
    assert.are.equal("o.json: rope_parameters.full_attention: partial_rotary_factor: expected a number in (0, 1] " ..
      "(got 2)", err_of(hf.from_config, olmo3({ full_attention = f }), "o.json"))
    assert.are.equal('o.json: rope_parameters: rope_theta: expected a finite number > 0 (got "x")',
      err_of(hf.from_config, olmo3({ rope_type = "default", rope_theta = "x" }), "o.json"))
    assert.are.equal('o.json: rope_parameters.sliding_attention: expected an object (got "x")',
      err_of(hf.from_config, olmo3({ full_attention = full(), sliding_attention = "x" }), "o.json"))
  end)

  it("its rope_theta wins over a top-level one (convert_rope_params_to_dict's setdefault)", function()
    local m = hf.from_config(olmo3({ sliding_attention = { rope_type = "default", rope_theta = 10000.0 },
      full_attention = full() }, { rope_theta = 10000.0 }), "o.json")
    assert.are.same({ 500000.0, "yarn", 8.0 }, { m.rope_theta, m.rope_scaling_type, m.rope_scaling_factor })
    -- a flat object with only partial_rotary_factor is read too
    m = hf.from_config(olmo3({ partial_rotary_factor = 0.5 }, { rope_theta = 10000.0 }), "o.json")
    assert.are.same({ 10000.0, 0.5 }, { m.rope_theta, m.rotary_percent })
  end)
end)

describe("mistral3: the wrapper reads its text_config", function()
  local function mistral3(text, changes)
    local cfg = { model_type = "mistral3", text_config = text }
    for k, v in pairs(changes or {}) do cfg[k] = v end
    return cfg
  end
  local text = { model_type = "mistral", hidden_size = 512, intermediate_size = 1024, num_hidden_layers = 2,
    num_attention_heads = 8, num_key_value_heads = 8, vocab_size = 1000 }

  it("a text type without a reader is refused as such, with or without a vision_config", function()
    local msg = "NotImplemented: m.json: model_type: mistral3 is multimodal: its vision tower (vision_config) " ..
      'is not modelled; its text_config is not either (model_type "xlstm")'
    assert.are.equal(msg, err_of(hf.from_config, mistral3({ model_type = "xlstm" }), "m.json"))
    assert.are.equal(msg, err_of(hf.from_config, mistral3({ model_type = "xlstm" },
      { vision_config = { model_type = "pixtral" } }), "m.json"))
    -- a wrapper inside the wrapper
    assert.truthy(err_of(hf.from_config, mistral3(mistral3(text)), "m.json"):find(
      'its text_config is not either (model_type "mistral3")', 1, true))
  end)

  it("a text_config that is an array, or a top-level tie_word_embeddings not a boolean: one line naming it", function()
    assert.are.equal("m.json: text_config: expected an object (got {1, 2})",
      err_of(hf.from_config, mistral3({ 1, 2 }), "m.json"))
    assert.are.equal('m.json: tie_word_embeddings: expected true or false (got "yes")',
      err_of(hf.from_config, mistral3(text, { tie_word_embeddings = "yes" }), "m.json"))
  end)
end)

describe("a hand-written model table the core refuses", function()
  it("is one line on stderr, without the search-space warnings it would also raise", function()
    local dir = H.tmpdir()
    local path = dir .. "/p.lua"
    H.write(path, [[return { model = { name = "m", num_layers = 4, hidden_size = 512, num_attention_heads = 8,
      num_query_groups = 8, ffn_hidden_size = 1024, vocab_size = 1000, num_experts = 0, experts_per_token = 2 },
      cluster = { device = "h800-sxm-80gb", nodes = 1, devices_per_node = 8 },
      training = { global_batch_size = 64, seq_length = 4096 },
      search_space = { data_parallel = "auto", ep_degree = { 1, 2 } } }]])
    local code, _, err = H.apsearch("run", "-q", path)
    assert.are.equal(2, code)
    assert.are.equal(path .. ": model.experts_per_token: given without num_experts (a dense model)",
      (err:gsub("^apsearch: ", ""):gsub("\n$", "")))
  end)
end)

describe("TorchTitan and MindFormers files of GLM-4 and Phi-3.5-MoE", function()
  it("say that the Llama block lacks the sandwich norms and the output layer's bias", function()
    local launch = require "apsearch.launch"
    assert.are.same({}, launch.llama_block_features({ norms_per_layer = 2 }))
    assert.are.same({ "4 norms per layer (sandwich norms after attention and MLP): the Llama block has 2, " ..
      "written with 2", "the output layer's bias (lm_head_bias, 32064 parameters): the Llama output layer " ..
      "has none; written without" }, launch.llama_block_features({ norms_per_layer = 4, lm_head_bias = true,
      vocab_size = 32064 }))
    -- end to end: a 2-layer GLM-4 run writes the line into both files
    local dir = H.tmpdir()
    H.write(dir .. "/glm4.json", require("cjson").encode({ model_type = "glm4", hidden_size = 1024,
      intermediate_size = 2048, num_attention_heads = 8, num_hidden_layers = 2, num_key_value_heads = 2,
      vocab_size = 1000, max_position_embeddings = 4096 }))
    local code = H.apsearch("run", "-q", "--model", dir .. "/glm4.json", "--cluster", "h800-sxm-80gb:1", "--top-k", "1",
      "--candidates", "none", "--out", dir .. "/out")
    assert.are.equal(0, code)
    for _, f in ipairs({ "rank1_torchtitan.py", "rank1_mindformers.yaml" }) do
      local text = H.read(dir .. "/out/launch/" .. f)
      assert.truthy(text:find("NOT EXPRESSIBLE in %a+: 4 norms per layer %(sandwich norms after attention and MLP%)"), f)
    end
  end)
end)
