-- tests/lua/hf_spec.lua -- Hugging Face config import (lua/apsearch/hf.lua)
-- and model presets (lua/apsearch/presets.lua), with parameter counts from
-- the C core (core.model_params).
--
-- The repo root comes from APS_ROOT (CTest sets it).

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local presets = require "apsearch.presets"

local H = require "spec_helpers"

local function tmpfile(name, text)
  local dir = H.tmpdir()
  local path = dir .. "/" .. name
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function util_read(path)
  return (require("apsearch.util").read_file(path))
end

local function params(cfg, name)
  return core.model_params((hf.from_config(cfg, name or "config.json")))
end

-- Published parameter counts (shared/models/README.md).
local PUBLISHED = {
  ["llama-3.1-8b"] = 8030261248,
  ["llama-3.1-70b"] = 70553706496,
  ["llama-3.1-405b"] = 405853388800,
  ["llama-2-7b"] = 6738415616,
  ["mistral-7b-v0.1"] = 7241732096,
  ["qwen2.5-7b"] = 7615616512,
  -- Qwen2.5-72B(-Instruct): 72.7B on the model card; the exact count of
  -- its config (untied embeddings, QKV biases)
  ["qwen2.5-72b"] = 72706203648,
}
-- the MoE presets' totals (shared/models/moe/param_counts.csv)
local PUBLISHED_MOE = {
  ["mixtral-8x7b"] = 46702792704,
  ["qwen3-30b-a3b"] = 30532122624,
  ["deepseek-v3"] = 671026419200,
}

describe("hf.load on the shipped configs", function()
  for name, count in pairs(PUBLISHED) do
    it(name .. " has exactly " .. count .. " parameters", function()
      local m = hf.load(ROOT .. "/examples/models/" .. name .. ".json")
      assert.are.equal(name, m.name)
      local c = core.model_params(m)
      assert.are.equal(count, c.total)
      assert.are.equal(c.embedding + c.layers + c.final_norm + c.output_layer, c.total)
      assert.are.equal(m.num_layers * c.per_layer, c.layers)
    end)
  end

  it("maps Llama-3.1-8B fields", function()
    local m = hf.load(ROOT .. "/examples/models/llama-3.1-8b.json")
    assert.are.same({
      name = "llama-3.1-8b", num_layers = 32, hidden_size = 4096,
      num_attention_heads = 32, num_query_groups = 8, head_dim = 128,
      ffn_hidden_size = 14336, vocab_size = 128256,
      max_position_embeddings = 131072, norms_per_layer = 2,
      mlp = "swiglu", norm = "rmsnorm", position_embedding = "rope",
      norm_bias = false, qkv_bias = false, attn_out_bias = false,
      mlp_bias = false, qk_norm = false, tie_word_embeddings = false,
      rope_theta = 500000.0, rope_scaling_type = "llama3", rope_scaling_factor = 8.0,
      low_freq_factor = 1.0, high_freq_factor = 4.0,
      original_max_position_embeddings = 8192, norm_eps = 1e-5,
    }, m)
  end)

  it("notes a num_key_value_heads left out, which LlamaConfig reads as the heads", function()
    -- Llama-3.1-8B without the key: 32 K/V heads, k and v 4,096 x 4,096
    -- instead of 4,096 x 1,024 each, 32 x 2 x 4,096 x 3,072 =
    -- 805,306,368 more parameters (8,030,261,248 -> 8,835,567,616)
    local cfg = require("cjson").decode(assert(io.open(ROOT .. "/examples/models/llama-3.1-8b.json")):read("a"))
    local _, info = hf.from_config(cfg, "l.json")
    for _, n in ipairs(info.notes) do assert.is_nil(n:find("num_key_value_heads", 1, true), n) end
    cfg.num_key_value_heads = nil
    local m
    m, info = hf.from_config(cfg, "l.json")
    assert.are.equal(32, m.num_query_groups)
    assert.are.equal(8835567616, core.model_params(m).total)
    assert.are.equal("l.json: num_key_value_heads is not in the config: read as num_attention_heads = 32 (multi-head " ..
      "attention), as LlamaConfig reads None; a grouped-query model's config states it", info.notes[1])
  end)

  it("says a key one edit from a shape key the config lacks, and nothing for other families' own keys", function()
    local cfg = require("cjson").decode(assert(io.open(ROOT .. "/examples/models/llama-3.1-8b.json")):read("a"))
    cfg.num_key_value_head, cfg.num_key_value_heads = cfg.num_key_value_heads, nil
    local _, info = hf.from_config(cfg, "l.json")
    assert.are.equal('l.json: key "num_key_value_head" is none this reader takes; did you mean ' ..
      '"num_key_value_heads"? (num_key_value_heads is not in the config: its default applies)', info.notes[1])
    -- two edits away: DeepSeek-V3's v_head_dim (no head_dim key), Hy3's num_shared_experts
    for _, f in ipairs({ "deepseek-v3.json", "hy3.json", "kimi-k2-instruct.json" }) do
      local c = require("cjson").decode(assert(io.open(ROOT .. "/examples/models/" .. f)):read("a"))
      local notes = {}
      hf.misspelt_key_notes(c, f, notes)
      assert.are.same({}, notes)
    end
  end)

  it("reads a left-out num_key_value_heads as the config class's number where it is one", function()
    -- MistralConfig's 8 (configuration_mistral.py @ 008e5743), not the 32
    -- heads: Mistral-7B-v0.1 without the key keeps its 7,241,732,096
    local cfg = require("cjson").decode(assert(io.open(ROOT .. "/examples/models/mistral-7b-v0.1.json")):read("a"))
    local full = core.model_params((hf.from_config(cfg, "m.json"))).total
    assert.are.equal(7241732096, full)
    cfg.num_key_value_heads = nil
    local m, info = hf.from_config(cfg, "m.json")
    assert.are.equal(8, m.num_query_groups)
    assert.are.equal(full, core.model_params(m).total)
    assert.are.equal("m.json: num_key_value_heads is not in the config: read as 8, the config class's default "
      .. "(transformers configuration_mistral.py); a model's own config states it", info.notes[1])
    -- Qwen3MoeConfig's 4 (@ 008e5743) for Qwen3-30B-A3B's 32 heads
    local q = require("cjson").decode(assert(io.open(ROOT .. "/examples/models/qwen3-30b-a3b.json")):read("a"))
    local want = core.model_params((hf.from_config(q, "q.json"))).total
    q.num_key_value_heads = nil
    local mq = hf.from_config(q, "q.json")
    assert.are.equal(4, mq.num_query_groups)
    assert.are.equal(want, core.model_params(mq).total)
    -- a default the heads refuse: the error says the file has no such key
    -- (a breaker's pass: "8 does not divide 4" read as the file's 8)
    cfg.num_attention_heads = 4
    local ok, err = pcall(hf.from_config, cfg, "m.json")
    assert.is_false(ok)
    assert.are.equal("m.json: num_key_value_heads (model.num_query_groups; not in the config: configuration_mistral.py's "
      .. "default 8): 8 does not divide num_attention_heads 4", err)
  end)

  -- the real config.json of shared/models (the examples copy when the
  -- shared directory is absent): RoPE base, llama3 scaling and epsilon
  it("fills the RoPE and norm numerics of Llama-3.1-8B exactly", function()
    local shared = ROOT .. "/../shared/models/llama-3.1-8b.json"
    local f = io.open(shared)
    if f then f:close() else shared = ROOT .. "/examples/models/llama-3.1-8b.json" end
    local m = hf.load(shared)
    assert.are.equal(500000, m.rope_theta)
    assert.are.equal("llama3", m.rope_scaling_type)
    assert.are.equal(8, m.rope_scaling_factor)
    assert.are.equal(1, m.low_freq_factor)
    assert.are.equal(4, m.high_freq_factor)
    assert.are.equal(8192, m.original_max_position_embeddings)
    assert.are.equal(1e-5, m.norm_eps)
    -- the core accepts them (and they change no parameter count)
    assert.are.equal(8030261248, core.model_params(m).total)
  end)

  -- DeepSeek-V3's config.json: rope_scaling yarn, factor 40, original 4096,
  -- beta_fast 32, beta_slow 1, mscale 1.0, mscale_all_dim 1.0
  it("reads YaRN's betas and magnitudes (DeepSeek-V3), refusing bad ones by name", function()
    local m = hf.load(ROOT .. "/examples/models/deepseek-v3.json")
    assert.are.same({ "yarn", 40, 4096, 32, 1, 1, 1 }, { m.rope_scaling_type, m.rope_scaling_factor,
      m.original_max_position_embeddings, m.yarn_beta_fast, m.yarn_beta_slow, m.yarn_mscale,
      m.yarn_mscale_all_dim })
    local f = assert(io.open(ROOT .. "/examples/models/deepseek-v3.json"))
    local cfg = cjson.decode(f:read("a")) f:close()
    -- 0 and absent: not given (transformers' defaults apply)
    cfg.rope_scaling.mscale_all_dim, cfg.rope_scaling.beta_fast = 0, nil
    m = hf.from_config(cfg, "dsv3/config.json")
    assert.is_nil(m.yarn_mscale_all_dim) assert.is_nil(m.yarn_beta_fast)
    assert.are.equal(32.0, hf.yarn_beta(m, "beta_fast"))
    cfg.rope_scaling.mscale = -1
    local ok, err = pcall(hf.from_config, cfg, "dsv3/config.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("dsv3/config.json: rope_scaling: mscale: expected a finite number >= 0", 1, true),
      tostring(err))
    -- a ramp running backwards: the core refuses it by name
    cfg.rope_scaling.mscale, cfg.rope_scaling.beta_fast, cfg.rope_scaling.beta_slow = 1, 1, 32
    ok, err = pcall(function() return core.model_params(hf.from_config(cfg, "dsv3/config.json")) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("yarn_beta_fast: must be >= yarn_beta_slow 32", 1, true), tostring(err))
    -- equal ends (Kimi-K2's 1 and 1): a step, as transformers reads it
    cfg.rope_scaling.beta_fast, cfg.rope_scaling.beta_slow = 1, 1
    assert.is_true(core.model_params(hf.from_config(cfg, "dsv3/config.json")).total > 0)
  end)

  -- gpt-oss's rope_scaling has truncate false; attention_factor gives the
  -- cos/sin factor outright (transformers _compute_yarn_parameters)
  it("reads YaRN's truncate and attention_factor, refusing bad ones by name", function()
    local f = assert(io.open(ROOT .. "/examples/models/qwen2.5-7b.json"))
    local cfg = cjson.decode(f:read("a")) f:close()
    cfg.rope_scaling = { type = "yarn", factor = 4.0, original_max_position_embeddings = 32768, truncate = false,
      attention_factor = 1.5 }
    local m = hf.from_config(cfg, "q/config.json")
    assert.is_true(m.yarn_no_truncate)
    assert.are.equal(1.5, m.yarn_attention_factor)
    assert.are.equal(1.5, hf.yarn_attention_factor(m))
    -- truncate true (the default) is not carried
    cfg.rope_scaling.truncate, cfg.rope_scaling.attention_factor = true, nil
    m = hf.from_config(cfg, "q/config.json")
    assert.is_nil(m.yarn_no_truncate) assert.is_nil(m.yarn_attention_factor)
    for key, bad in pairs({ truncate = "no", attention_factor = -1 }) do
      local c = cjson.decode(cjson.encode(cfg))
      c.rope_scaling[key] = bad
      local ok, err = pcall(hf.from_config, c, "q/config.json")
      assert.is_false(ok)
      assert.truthy(tostring(err):find("^q/config.json: rope_scaling: " .. key .. ": expected"), tostring(err))
    end
    -- neither field belongs to another scaling: the core says which
    local ok, err = pcall(core.model_params, { name = "x", num_layers = 2, hidden_size = 64,
      num_attention_heads = 4, num_query_groups = 4, ffn_hidden_size = 256, vocab_size = 1000,
      rope_scaling_type = "llama3", rope_scaling_factor = 8, yarn_no_truncate = true })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("model.yarn_no_truncate: only yarn RoPE scaling has it", 1, true), tostring(err))
  end)

  -- transformers _compute_yarn_parameters: get_mscale(s, m) = 0.1 m ln s + 1
  -- (1 for s <= 1); cos/sin factor get_mscale(f, mscale) /
  -- get_mscale(f, mscale_all_dim) with both, else get_mscale(f)
  it("computes transformers' YaRN cos/sin factor and the mscale that gives it", function()
    local ln4, ln40 = math.log(4), math.log(40)
    assert.are.equal(1.0, hf.yarn_get_mscale(1, 5))
    assert.are.equal(0.1 * 0.707 * ln40 + 1, hf.yarn_get_mscale(40, 0.707))
    -- Qwen2.5 factor 4: 0.1 ln 4 + 1 = 1.1386294361
    local q = { rope_scaling_type = "yarn", rope_scaling_factor = 4 }
    assert.is_true(math.abs(hf.yarn_attention_factor(q) - 1.1386294361119891) < 1e-15)
    assert.are.equal(1.0, hf.yarn_mscale_for(q, 0))        -- Megatron's default --mscale 1.0
    -- mscale alone is ignored by transformers
    q.yarn_mscale = 0.707
    assert.are.equal(1 + 0.1 * ln4, hf.yarn_attention_factor(q))
    -- DeepSeek-V2-Lite: 0.707 / 0.707 -> 1, the config's mscale written as is
    local d = { rope_scaling_type = "yarn", rope_scaling_factor = 40, yarn_mscale = 0.707, yarn_mscale_all_dim = 0.707 }
    assert.are.equal(1.0, hf.yarn_attention_factor(d))
    assert.are.equal(0.707, hf.yarn_mscale_for(d, 0.707))
    -- mscale_all_dim alone (md = 0.707): transformers' get_mscale(40) =
    -- 1.3688879; (0.1 ms ln 40 + 1) / (0.1 md ln 40 + 1) equals it for
    -- ms = 1 + md + 0.1 md ln 40 = 1.7070 + 0.2608038 = 1.9678038
    d.yarn_mscale = nil
    local ms = hf.yarn_mscale_for(d, 0.707)
    assert.is_true(math.abs(ms - (1.707 + 0.0707 * ln40)) < 1e-12, ms)
    assert.is_true(math.abs(ms - 1.9678038) < 1e-7, ms)
    assert.is_true(math.abs(hf.yarn_get_mscale(40, ms) / hf.yarn_get_mscale(40, 0.707) - (1 + 0.1 * ln40)) < 1e-12)
    -- attention_factor 1.5 at factor 4, mscale_all_dim 0: (1.5 - 1) / (0.1 ln 4) = 3.6067376
    q = { rope_scaling_type = "yarn", rope_scaling_factor = 4, yarn_attention_factor = 1.5 }
    assert.is_true(math.abs(hf.yarn_mscale_for(q, 0) - 0.5 / (0.1 * ln4)) < 1e-12)
    assert.is_true(math.abs(hf.yarn_mscale_for(q, 0) - 3.6067376) < 1e-7)
    -- factor 1: every mscale gives 1, so 1.5 cannot be reached
    q.rope_scaling_factor = 1
    assert.is_nil(hf.yarn_mscale_for(q, 0))
    -- the original context: rope_scaling's, else max_position_embeddings
    assert.are.equal(32768, hf.yarn_original({ original_max_position_embeddings = 32768, max_position_embeddings = 131072 }))
    assert.are.equal(163840, hf.yarn_original({ max_position_embeddings = 163840 }))
    assert.is_nil(hf.yarn_original({}))
  end)

  it("fills rope_theta and norm_eps of the unscaled presets", function()
    local want = { ["llama-2-7b"] = { 10000, 1e-5 }, ["mistral-7b-v0.1"] = { 10000, 1e-5 },
                   ["qwen2.5-7b"] = { 1e6, 1e-6 }, ["llama-3.1-70b"] = { 500000, 1e-5 },
                   ["llama-3.1-405b"] = { 500000, 1e-5 } }
    for name, w in pairs(want) do
      local m = presets.model(name)
      assert.are.equal(w[1], m.rope_theta, name)
      assert.are.equal(w[2], m.norm_eps, name)
      if name:find("llama%-3") then
        assert.are.equal("llama3", m.rope_scaling_type, name)
      else
        assert.is_nil(m.rope_scaling_type, name)
        assert.is_nil(m.rope_scaling_factor, name)
      end
    end
  end)

  it("reads GPT-2 layer_norm_epsilon, the older rope_scaling.type and refuses bad values", function()
    local base = { model_type = "llama", num_hidden_layers = 2, hidden_size = 64,
      num_attention_heads = 4, intermediate_size = 128, vocab_size = 100 }
    local function with(extra)
      local c = {}
      for k, v in pairs(base) do c[k] = v end
      for k, v in pairs(extra) do c[k] = v end
      return c
    end
    local m = hf.from_config(with({ rope_scaling = { type = "linear", factor = 2.0 } }), "x.json")
    assert.are.equal("linear", m.rope_scaling_type)
    assert.are.equal(2, m.rope_scaling_factor)
    m = hf.from_config(with({ rope_scaling = { rope_type = "default" } }), "x.json")
    assert.is_nil(m.rope_scaling_type)
    m = hf.from_config({ model_type = "gpt2", n_embd = 64, n_layer = 2, n_head = 4,
      vocab_size = 100, n_positions = 128, layer_norm_epsilon = 1e-5 }, "g.json")
    assert.are.equal(1e-5, m.norm_eps)
    assert.matches("rope_theta: expected a finite number > 0",
      err_of(hf.from_config, with({ rope_theta = -1 }), "x.json"), 1, true)
    assert.matches("rope_scaling: rope_type: unsupported RoPE scaling",
      err_of(hf.from_config, with({ rope_scaling = { rope_type = "su", factor = 2 } }), "x.json"), 1, true)
    -- dynamic NTK acts only past the trained context: RoPE within it
    m = hf.from_config(with({ rope_scaling = { rope_type = "dynamic", factor = 2 }, rope_theta = 10000 }), "x.json")
    assert.are.same({ true, 10000.0 }, { m.rope_scaling_type == nil, m.rope_theta })
    assert.matches("rope_scaling: factor: required key is missing",
      err_of(hf.from_config, with({ rope_scaling = { rope_type = "llama3" } }), "x.json"), 1, true)
    -- Hunyuan's NTK-alpha base, rope_theta x alpha^(d / (d - 2)) (head width
    -- 16 here): a base past the doubles, or a head width of 2 that divides
    -- by zero in HunYuan's own formula, names alpha (it named rope_theta, or
    -- took 0.5^inf = 0 for "not given"; a breaker's eleventh round)
    local ntk = { rope_type = "dynamic", factor = 1.0, alpha = 1e308 }
    assert.are.equal("x.json: rope_scaling: alpha: gives a RoPE base of inf (rope_theta x alpha^(16 / 14)) " ..
      "(got 1e+308)", err_of(hf.from_config, with({ rope_scaling = ntk, rope_theta = 10000 }), "x.json"))
    ntk.alpha = 0.5
    assert.are.equal("x.json: rope_scaling: alpha: needs a head width above 2 (alpha^(d / (d - 2)) with d = 2) " ..
      "(got 0.5)", err_of(hf.from_config, with({ rope_scaling = ntk, head_dim = 2 }), "x.json"))
  end)

  it("refuses a hexadecimal number, which JSON has not (lua-cjson read 0x1000 as 4096), and not in a string",
    function()
    local dir = H.tmpdir()
    local text = H.read(ROOT .. "/examples/models/llama-3.1-8b.json")
    local hex = H.write(dir .. "/hex.json", (text:gsub('"hidden_size": 4096', '"hidden_size": 0x1000', 1)))
    local line = select(2, text:sub(1, text:find('"hidden_size"', 1, true)):gsub("\n", "")) + 1
    assert.are.equal(("%s:%d: invalid JSON: a hexadecimal number 0x1000 (JSON numbers are decimal)"):format(hex,
      line), err_of(hf.load, hex))
    -- in a string (an escaped quote before it) it is text
    local named = H.write(dir .. "/named.json", (text:gsub("^%s*{", '{"_name_or_path": "a \\" ,0x10",', 1)))
    assert.are.equal(8030261248, core.model_params((hf.load(named))).total)
  end)

  it("refuses an array where a config.json holds an object (it decoded as the empty object)", function()
    -- gemma-3-4b-pt with "text_config": [] was read as a 2.6B model of
    -- Gemma3TextConfig's defaults; transformers builds none from it
    local dir = H.tmpdir()
    local text = H.read(ROOT .. "/examples/models/gemma-3-4b-pt.json")
    for _, key in ipairs({ "text_config", "rope_scaling" }) do
      local edited, n = text:gsub('"' .. key .. '"%s*:%s*%b{}', '"' .. key .. '": []', 1)
      if n == 0 then edited = text:gsub("^%s*{", '{"' .. key .. '": [],', 1) end
      local path = H.write(dir .. "/" .. key .. ".json", edited)
      assert.are.equal(path .. ": " .. key .. ": expected an object or null (got an array)", err_of(hf.load, path))
    end
  end)

  it("gives qwen2 q/k/v biases but no o_proj bias", function()
    local m = hf.load(ROOT .. "/examples/models/qwen2.5-7b.json")
    assert.is_true(m.qkv_bias)
    assert.is_false(m.attn_out_bias)
    assert.are.equal(4, m.num_query_groups)
  end)

  it("defaults num_key_value_heads to the head count (Llama-2 MHA)", function()
    local m = hf.load(ROOT .. "/examples/models/llama-2-7b.json")
    assert.are.equal(32, m.num_query_groups)
  end)
end)

describe("presets", function()
  it("loads every model preset by name, case-insensitively", function()
    for _, name in ipairs(presets.model_names) do
      local m, info = presets.model(name:upper())
      assert.are.equal(name, m.name)
      assert.are.equal(PUBLISHED[name] or PUBLISHED_MOE[name], core.model_params(m).total)
      assert.truthy(info.source:find("examples/models/" .. name .. ".json", 1, true))
    end
  end)

  it("refuses an unknown preset, listing the known ones", function()
    local e = err_of(presets.model, "llama-9")
    assert.truthy(e:find('"llama-9"', 1, true))
    assert.truthy(e:find("llama-3.1-8b", 1, true))
  end)

  it("builds clusters", function()
    assert.are.same({ device = "h100-sxm-80gb", num_devices = 16, devices_per_node = 8 },
      presets.cluster("h100-sxm-80gb", 2, 8))
    assert.are.same({ device = "b200", num_devices = 8, devices_per_node = 8 },
      presets.cluster("b200"))
    assert.truthy(err_of(presets.cluster, "b200", 0):find("nodes", 1, true))
  end)
end)

describe("model types", function()
  it("imports gpt2 keys (GPT-2 small: 124,439,808 parameters)", function()
    local cfg = { model_type = "gpt2", n_embd = 768, n_layer = 12, n_head = 12,
      n_positions = 1024, n_ctx = 1024, vocab_size = 50257, n_inner = cjson.null,
      activation_function = "gelu_new" }
    local m = hf.from_config(cfg, "gpt2/config.json")
    assert.are.equal("gpt2", m.name)
    assert.are.equal(3072, m.ffn_hidden_size)      -- n_inner null -> 4 * n_embd
    assert.are.equal("learned", m.position_embedding)
    assert.are.equal(1024, m.max_position_embeddings)
    assert.are.equal("layernorm", m.norm)
    assert.are.equal("gelu", m.mlp)
    assert.is_true(m.norm_bias and m.qkv_bias and m.attn_out_bias and m.mlp_bias)
    assert.is_true(m.tie_word_embeddings)
    local c = core.model_params(m)
    assert.are.equal(124439808, c.total)
    assert.are.equal(0, c.output_layer)             -- tied
    assert.are.equal(50257 * 768 + 1024 * 768, c.embedding)
  end)

  it("uses n_inner when given", function()
    local m = hf.from_config({ model_type = "gpt2", n_embd = 64, n_layer = 2, n_head = 4,
      n_positions = 128, vocab_size = 1000, n_inner = 100 }, "tiny.json")
    assert.are.equal(100, m.ffn_hidden_size)
  end)

  it("imports gpt_neox (Pythia-160M: 162,322,944 parameters, untied)", function()
    local cfg = { model_type = "gpt_neox", hidden_size = 768, num_hidden_layers = 12,
      num_attention_heads = 12, intermediate_size = 3072, vocab_size = 50304,
      max_position_embeddings = 2048, rotary_pct = 0.25, use_parallel_residual = true,
      tie_word_embeddings = false }
    local m = hf.from_config(cfg, "pythia-160m.json")
    assert.are.equal("rope", m.position_embedding)
    assert.are.equal("layernorm", m.norm)
    local c = core.model_params(m)
    assert.are.equal(162322944, c.total)
    assert.are.equal(50304 * 768, c.output_layer)
  end)

  it("honours an explicit head_dim with a * d != h (Qwen3-0.6B, tied, qk_norm)", function()
    -- 28 x (3 x 1024 x 2048 + 2 x 1024 x 1024 ... ) by hand: per layer
    -- q 2,097,152 + k,v 2,097,152 + o 2,097,152 + MLP 9,437,184 + norms 2,048
    -- + q/k norms 256 = 15,730,944; x 28 + embedding 155,582,464 + final
    -- norm 1,024 = 596,049,920 (0.44 B non-embedding, as published).
    local cfg = { model_type = "qwen3", hidden_size = 1024, num_hidden_layers = 28,
      num_attention_heads = 16, num_key_value_heads = 8, head_dim = 128,
      intermediate_size = 3072, vocab_size = 151936, max_position_embeddings = 40960,
      tie_word_embeddings = true, attention_bias = false }
    local m = hf.from_config(cfg, "Qwen3-0.6B/config.json")
    assert.are.equal("Qwen3-0.6B", m.name)
    -- a download saved with its kind in the name (a new user's pass)
    assert.are.equal("Qwen--Qwen3-0.6B", hf.from_config(cfg, "x/Qwen--Qwen3-0.6B_config.json").name)
    assert.are.equal("Qwen3-0.6B", hf.from_config(cfg, "Qwen3-0.6B-config.json").name)
    assert.are.equal("config", hf.from_config(cfg, "config").name)
    assert.are.equal(128, m.head_dim)
    assert.is_true(m.qk_norm)
    assert.is_true(m.tie_word_embeddings)
    local c = core.model_params(m)
    assert.are.equal(15730944, c.per_layer)
    assert.are.equal(596049920, c.total)
    assert.are.equal(0, c.output_layer)
  end)

  it("imports gemma2 (Gemma-2-9B: 9,241,705,984; 4 norms, head_dim 256, tied, gated)", function()
    local cfg = { model_type = "gemma2", hidden_size = 3584, num_hidden_layers = 42,
      num_attention_heads = 16, num_key_value_heads = 8, head_dim = 256,
      intermediate_size = 14336, vocab_size = 256000, max_position_embeddings = 8192,
      hidden_activation = "gelu_pytorch_tanh", hidden_act = "gelu_pytorch_tanh" }
    local m = hf.from_config(cfg, "gemma-2-9b.json")
    assert.are.equal(4, m.norms_per_layer)
    assert.are.equal("swiglu", m.mlp)                -- gated: 3 matrices
    assert.is_true(m.tie_word_embeddings)
    assert.are.equal(256, m.head_dim)
    assert.are.equal(9241705984, core.model_params(m).total)
  end)

  it("imports sliding windows: Mistral every layer, Gemma-2 every other, Qwen2 from max_window_layers", function()
    local m = hf.load(ROOT .. "/examples/models/mistral-7b-v0.1.json")
    assert.are.equal(4096, m.sliding_window)
    assert.are.equal(32, m.sliding_window_layers)
    local g = hf.from_config({ model_type = "gemma2", hidden_size = 3584, num_hidden_layers = 42,
      num_attention_heads = 16, num_key_value_heads = 8, head_dim = 256,
      intermediate_size = 14336, vocab_size = 256000, sliding_window = 4096 }, "g.json")
    assert.are.equal(4096, g.sliding_window)
    assert.are.equal(21, g.sliding_window_layers)
    local base_q = { model_type = "qwen2", hidden_size = 3584, num_hidden_layers = 28,
      num_attention_heads = 28, num_key_value_heads = 4, intermediate_size = 18944,
      vocab_size = 152064, sliding_window = 131072, max_window_layers = 20 }
    local q = hf.from_config(base_q, "q.json")             -- use_sliding_window absent: off
    assert.is_nil(q.sliding_window)
    base_q.use_sliding_window = true
    q = hf.from_config(base_q, "q.json")
    assert.are.equal(8, q.sliding_window_layers)            -- layers 20..27
    local l = hf.load(ROOT .. "/examples/models/llama-3.1-8b.json")
    assert.is_nil(l.sliding_window)
  end)

  it("imports mpt (MPT-7B: 6,649,286,656; no biases, ALiBi, tied)", function()
    local cfg = { model_type = "mpt", d_model = 4096, n_heads = 32, n_layers = 32,
      expansion_ratio = 4, max_seq_len = 2048, vocab_size = 50432, no_bias = true,
      learned_pos_emb = true, attn_config = { alibi = true, attn_type = "multihead_attention" } }
    local m = hf.from_config(cfg, "mpt-7b.json")
    assert.are.equal("alibi", m.position_embedding)
    assert.is_false(m.norm_bias)
    assert.are.equal(16384, m.ffn_hidden_size)
    assert.are.equal(6649286656, core.model_params(m).total)
  end)

  it("maps llama attention_bias to q, k, v and o, mlp_bias to the MLP", function()
    local m = hf.from_config({ model_type = "llama", hidden_size = 64, num_hidden_layers = 2,
      num_attention_heads = 4, intermediate_size = 128, vocab_size = 100,
      attention_bias = true, mlp_bias = true }, "x.json")
    assert.is_true(m.qkv_bias and m.attn_out_bias and m.mlp_bias)
    local plain = hf.from_config({ model_type = "llama", hidden_size = 64, num_hidden_layers = 2,
      num_attention_heads = 4, intermediate_size = 128, vocab_size = 100 }, "x.json")
    -- biases: q,k,v 3 x 64 + o 64 + gate, up 2 x 128 + down 64 per layer
    assert.are.equal(2 * (4 * 64 + 2 * 128 + 64),
      core.model_params(m).total - core.model_params(plain).total)
  end)
end)

describe("refusals", function()
  local base = { hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32,
    num_key_value_heads = 8, intermediate_size = 14336, vocab_size = 32000 }
  local function with(t, extra)
    local r = {}
    for k, v in pairs(t) do r[k] = v end
    for k, v in pairs(extra) do r[k] = v end
    return r
  end

  it("takes a misspelt supported type for a typo, not an unmodelled MoE", function()
    for bad, good in pairs({ granite_moe = "granitemoe", dots_1 = "dots1", Qwen3MoE = "qwen3_moe" }) do
      assert.are.equal(('m.json: model_type: unsupported model type; did you mean "%s"? (got "%s")'):format(good, bad),
        err_of(hf.from_config, { model_type = bad, num_local_experts = 8, hidden_size = 64 }, "m.json"))
    end
  end)

  it("refuses an MoE of a type it cannot model, naming the key", function()
    local path = tmpfile("jetmoe.json", cjson.encode(with(base,
      { model_type = "jetmoe", num_local_experts = 40, num_experts_per_tok = 8 })))
    assert.are.equal("NotImplemented: " .. path .. ": MoE config (num_local_experts = 40) of model_type " ..
      "\"jetmoe\" is not modelled (supported MoE types: " .. table.concat(hf.moe_supported, ", ") .. "); write it "
      .. "as a policy's model table of its sizes (num_experts, experts_per_token, moe_ffn_hidden_size, "
      .. "shared_expert_ffn_hidden_size, moe_first_dense_layers, MLA's q_lora_rank / kv_lora_rank; docs/policy.md "
      .. "\"model\")", err_of(hf.load, path))
    -- a misspelt supported MoE type is suggested (gpt_os: gpt_oss)
    assert.truthy(err_of(hf.from_config, with(base, { model_type = "gpt_os", num_local_experts = 32 }), "g.json")
      :find('of model_type "gpt_os" is not modelled; did you mean "gpt_oss"? (supported MoE types: ', 1, true))
    -- a missing key with a close one in the file: the file's is named
    assert.are.equal('m.json: num_hidden_layers: required key is missing; the file has "num_hiden_layers": ' ..
      "misspelt?", err_of(hf.from_config, { model_type = "llama", hidden_size = 4096,
        num_hiden_layers = 32, num_attention_heads = 32, intermediate_size = 11008, vocab_size = 32000 }, "m.json"))
    -- another type's key for the same quantity is named (a Qwen3-MoE config
    -- re-saved with Mixtral's num_local_experts; a new user's finding)
    local qwen3 = cjson.decode(assert(io.open(ROOT .. "/examples/models/qwen3-30b-a3b.json")):read("a"))
    qwen3.num_local_experts, qwen3.num_experts = qwen3.num_experts, nil
    assert.are.equal("q.json: num_experts: required key is missing; the file has num_local_experts, which this " ..
      "model type does not read (it reads num_experts)", err_of(hf.from_config, qwen3, "q.json"))
    -- a longer key that begins the same is another key, not a misspelling
    assert.are.equal("m.json: intermediate_size: required key is missing (got nothing)",
      err_of(hf.from_config, { model_type = "llama", hidden_size = 4096, num_hidden_layers = 32,
        num_attention_heads = 32, intermediate_size_mlp = 11008, vocab_size = 32000 }, "m.json"))
    local e1 = err_of(hf.from_config, with(base, { model_type = "llama", num_local_experts = 8 }), "l.json")
    assert.truthy(e1:match("^NotImplemented: l%.json: MoE config %(num_local_experts = 8%) of model_type \"llama\""), e1)
    local e2 = err_of(hf.from_config, with(base, { model_type = "falcon", ffn_config = { moe_num_experts = 16 } }), "d.json")
    assert.truthy(e2:match("^NotImplemented: d%.json: MoE config %(moe_num_experts = 16%)"), e2)
    local e3 = err_of(hf.from_config, with(base, { model_type = "jetmoe" }), "g.json")
    assert.truthy(e3:match("^NotImplemented: g%.json: MoE config %(model_type = \"jetmoe\"%)"), e3)
  end)

  it("names the file and the key when a required key is missing", function()
    local cfg = with(base, { model_type = "llama" })
    cfg.num_hidden_layers = nil
    local path = tmpfile("broken.json", cjson.encode(cfg))
    local e = err_of(hf.load, path)
    assert.are.equal(path .. ": num_hidden_layers: required key is missing (got nothing)", e)
    local e2 = err_of(hf.from_config, { model_type = "gpt2", n_layer = 2, n_head = 2,
      vocab_size = 10, n_positions = 8 }, "g.json")
    assert.are.equal("g.json: n_embd: required key is missing (got nothing)", e2)
  end)

  it("names the key and value of a wrong type", function()
    local e = err_of(hf.from_config, with(base, { model_type = "llama", hidden_size = "4096" }), "c.json")
    assert.are.equal('c.json: hidden_size: expected a positive integer <= 16777216 (got "4096")', e)
  end)

  it("names the file and the config key when the core refuses the shape", function()
    local e = err_of(hf.from_config, with(base, { model_type = "llama", num_key_value_heads = 5 }), "k.json")
    assert.truthy(e:find("k.json: num_key_value_heads (model.num_query_groups): 5 does not divide", 1, true), e)
    e = err_of(hf.from_config, with(base, { model_type = "llama", num_hidden_layers = 1e30 }), "b.json")
    assert.are.equal("b.json: num_hidden_layers: expected a positive integer <= 16777216 (got 1e+30)", e)
  end)

  it("names an unknown model_type, the way through and the supported list", function()
    local e = err_of(hf.from_config, with(base, { model_type = "rwkv" }), "f.json")
    assert.truthy(e:find('f.json: model_type: unsupported model type (supported: llama, mistral, qwen2, qwen3', 1,
      true), e)
    assert.truthy(e:find('); write another as a policy\'s model table of its sizes (docs/policy.md "model")', 1, true), e)
    -- the host cuts the list to the terminal's 120 columns (it printed
    -- 1,139), saying how many it left out (suggest.fold_known)
    local cut = require("apsearch.suggest").fold_known(e)
    assert.truthy(cut:find("unsupported model type %(%d+ supported types%); write another"), cut)
    assert.truthy(e:find('(got "rwkv")', 1, true))
  end)

  it("reports unreadable and malformed files", function()
    assert.truthy(err_of(hf.load, "/nonexistent/config.json"):find("/nonexistent/config.json: cannot read", 1, true))
    local path = tmpfile("bad.json", "{ not json")
    assert.truthy(err_of(hf.load, path):find(path .. ": invalid JSON", 1, true))
    -- the decoder's character offset also as line and column (a trailing comma)
    path = tmpfile("comma.json", '{\n  "a": 1,\n}\n')
    assert.truthy(err_of(hf.load, path):find("at line 3, column 1 (character 13)", 1, true), err_of(hf.load, path))
    -- an empty file and JSON that is no object say so (they read "invalid
    -- JSON: ... T_END" and "model_type: required key is missing"; a new
    -- user's finding)
    path = tmpfile("empty.json", " \n")
    assert.are.equal(path .. ": empty file (a Hugging Face config.json is one JSON object)", err_of(hf.load, path))
    path = tmpfile("array.json", '[{"model_type": "llama"}]')
    assert.are.equal(path .. ": expected one JSON object (a Hugging Face config.json), got an array",
      err_of(hf.load, path))
    -- a UTF-8 byte-order mark before the object is read past
    path = tmpfile("bom.json", "\239\187\191" .. '{"model_type": "llama", "num_hidden_layers": 2, ' ..
      '"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}')
    local ok_bom, m_bom = pcall(hf.load, path)
    assert.is_true(ok_bom, tostring(m_bom))
    assert.are.equal(2, m_bom.num_layers)
    -- an empty array too (it decodes to an empty table and read "model_type:
    -- required key is missing"; breaker pass, 2026-12-05)
    path = tmpfile("empty_array.json", " [ ] ")
    assert.are.equal(path .. ": expected one JSON object (a Hugging Face config.json), got an array",
      err_of(hf.load, path))
    -- a key given twice in one object: lua-cjson kept the last silently
    -- (breaker pass, 2026-12-05); the same key in two objects is fine
    path = tmpfile("dup.json", '{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,\n' ..
      '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,\n"hidden_size": 128}')
    assert.are.equal(path .. ':3: key "hidden_size" is given twice in one object (JSON readers keep the last; ' ..
      'remove one)', err_of(hf.load, path))
    local core = require "apsearch.core"
    assert.is_nil(core.json_duplicate_key('{"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}], "d": "a"}'))
    -- a key spelt with an escape is the key it decodes to (it overrode
    -- hidden_size silently; a second breaker pass)
    assert.are.same({ "hidd\\u0065n_size", 1 }, { core.json_duplicate_key('{"hidden_size": 1, "hidd\\u0065n_size": 2}') })
    assert.are.same({ "\\ud83d\\ude00", 1 }, { core.json_duplicate_key('{"\240\159\152\128": 1, "\\ud83d\\ude00": 2}') })
    -- keys in strings and escaped quotes are not keys; a nested object's repeat is found
    assert.are.same({ "a", 2 }, { core.json_duplicate_key('{"s": "\\"a\\":", "a\\"": 1,\n"b": [1, {"a": 1, "a": 2}]}') })
    path = tmpfile("null.json", "null")
    assert.are.equal(path .. ": expected one JSON object (a Hugging Face config.json), got null", err_of(hf.load, path))
  end)
end)

-- Dropout carried from the config into training (hf.lua header,
-- docs/policy.md "model").  GPT-2 large (transformers gpt2-large
-- config.json): 36 layers, n_embd 1280, 20 heads, vocab 50257, 1024
-- positions, attn/resid/embd_pdrop 0.1.  NVIDIA/Megatron-LM issue 525:
-- GPT-2 large under Megatron-LM without flash attention on 32 GB V100s
-- runs out of memory ("31.74 GiB total capacity").
describe("dropout from a Hugging Face config", function()
  local policy = require "apsearch.policy"
  local GPT2_LARGE = {
    model_type = "gpt2", n_layer = 36, n_embd = 1280, n_head = 20,
    vocab_size = 50257, n_positions = 1024,
    attn_pdrop = 0.1, resid_pdrop = 0.1, embd_pdrop = 0.1,
  }
  local GIB = 2 ^ 30

  -- Megatron, fp16, no flash attention, DP 8 on 8 GPUs of 32 GiB (an A100
  -- with the V100's capacity), micro batch 8 of 1024 tokens, no recompute
  local function gpt2_policy(path, set)
    return policy.from_table({
      model = path,
      cluster = { device = { base = "a100-sxm4-40gb", memory_gib = 32 },
                  num_devices = 8, devices_per_node = 8 },
      training = { global_batch_size = 64, seq_length = 1024, precision = "fp16",
                   framework = "megatron", flash_attention = false },
      search_space = { dp_degree = 8, micro_batch_size = 8 },
    }, "policy.lua", { base_dir = "/", set = set })
  end
  local STRATEGY = { dp_degree = 8, micro_batch_size = 8, layer_recompute = "none" }
  local function estimate(p)
    return core.context(p.model, p.cluster, p.training):estimate(STRATEGY)
  end

  it("reports the first dropout key > 0 in info; 0.0 (Llama) is no dropout", function()
    local m, info = hf.from_config(GPT2_LARGE, "gpt2-large.json")
    assert.are.equal(36, m.num_layers)
    assert.is_true(info.dropout)
    assert.are.equal("attn_pdrop", info.dropout_key)
    assert.are.equal(0.1, info.dropout_value)
    local _, linfo = hf.load(ROOT .. "/examples/models/llama-3.1-8b.json")
    assert.is_false(linfo.dropout)
    local cfg = cjson.decode(cjson.encode(GPT2_LARGE))
    cfg.attn_pdrop, cfg.resid_pdrop, cfg.embd_pdrop = 0, 0, nil
    cfg.hidden_dropout_prob = 0.2
    local _, binfo = hf.from_config(cfg, "c.json")
    assert.are.equal("hidden_dropout_prob", binfo.dropout_key)
  end)

  it("refuses a dropout probability outside [0, 1), naming the key", function()
    local cfg = cjson.decode(cjson.encode(GPT2_LARGE))
    cfg.resid_pdrop = 1.5
    assert.are.equal("c.json: resid_pdrop: expected a dropout probability in [0, 1) (got 1.5)",
      err_of(hf.from_config, cfg, "c.json"))
  end)

  it("turns training.dropout on unless the policy sets it (model path, config, hf())", function()
    local path = tmpfile("gpt2-large.json", cjson.encode(GPT2_LARGE))
    assert.is_true(gpt2_policy(path).training.dropout)
    local p = policy.from_table({ model = { config = path }, cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024 } }, "policy.lua", { base_dir = "/" })
    assert.is_true(p.training.dropout)
    -- the policy wins, in the file or with --set
    p = policy.from_table({ model = path, cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024, dropout = false } }, "policy.lua",
      { base_dir = "/" })
    assert.is_false(p.training.dropout)
    assert.is_false(gpt2_policy(path, { "training.dropout=false" }).training.dropout)
    -- hf() inside a policy file
    local dir = path:match("^(.*)/[^/]+$")
    local file = dir .. "/policy.lua"
    local f = assert(io.open(file, "w"))
    f:write('return { model = hf("gpt2-large.json"), cluster = "a100-sxm4-40gb",\n',
      '  training = { global_batch_size = 8, seq_length = 1024 } }\n')
    f:close()
    assert.is_true(policy.load(file).training.dropout)
    -- TorchTitan (fsdp2) builds its own models, which have no dropout: the
    -- config's is not applied, and the note says so
    p = policy.from_table({ model = path, cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024, framework = "fsdp2" } }, "policy.lua",
      { base_dir = "/" })
    assert.is_nil(p.training.dropout)
    assert.are.equal("note: the model config's dropout is not applied: TorchTitan's models have none "
      .. "(framework = fsdp2)", p.warnings[#p.warnings])
    -- a preset (Llama: attention_dropout 0.0) says none: off, not
    -- Megatron's default 0.1
    p = policy.from_table({ model = "llama-3.1-8b", cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024 } }, "policy.lua")
    assert.is_false(p.training.dropout)
  end)

  it("takes the configuration class's default when the config states no dropout key", function()
    -- GPT2Config's attn_pdrop, resid_pdrop, embd_pdrop default to 0.1
    local cfg = {}
    for k, v in pairs(GPT2_LARGE) do cfg[k] = v end
    cfg.attn_pdrop, cfg.resid_pdrop, cfg.embd_pdrop = nil, nil, nil
    local path = tmpfile("gpt2-nodrop.json", cjson.encode(cfg))
    local model, info = hf.load(path)
    assert.is_table(model)
    assert.is_true(info.dropout_stated)
    assert.are.same({ true, "attn_pdrop (the class's default)", 0.1 },
      { info.dropout, info.dropout_key, info.dropout_value })
    local p = policy.from_table({ model = path, cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024 } }, "policy.lua", { base_dir = "/" })
    assert.is_true(p.training.dropout)
    -- Gemma 3 (Gemma3TextConfig attention_dropout 0.0) states none: off, not
    -- Megatron's 0.1 (a new user's finding)
    p = policy.from_table({ model = ROOT .. "/examples/models/gemma-3-4b-pt.json", cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024 } }, "policy.lua", { base_dir = "/" })
    assert.is_false(p.training.dropout)
    -- stated 0.0: off
    cfg.attn_pdrop = 0.0
    path = tmpfile("gpt2-zero.json", cjson.encode(cfg))
    p = policy.from_table({ model = path, cluster = "a100-sxm4-40gb",
      training = { global_batch_size = 8, seq_length = 1024 } }, "policy.lua", { base_dir = "/" })
    assert.is_false(p.training.dropout)
  end)

  it("GPT-2 large on 32 GiB without flash attention is out of memory (Megatron-LM issue 525)", function()
    local path = tmpfile("gpt2-large.json", cjson.encode(GPT2_LARGE))
    local on = gpt2_policy(path)
    local off = gpt2_policy(path, { "training.dropout=false" })
    assert.are.equal(32 * GIB, on.cluster.device.memory_bytes)
    local e_on, e_off = estimate(on), estimate(off)
    assert.are.equal("MEMORY_LIMIT", e_on.reason)
    assert.is_false(e_on.feasible)
    assert.is_true(e_off.memory_breakdown.total < e_on.memory_breakdown.total)
    -- memory.c's dropout terms, per layer and micro-batch, t = 1, no SP,
    -- s = 1024, b = 8, h = 1280, a = 20, one micro-batch in flight (p = 1):
    --   masks after attention and after the MLP   2 x 1 s b h = 20,971,520
    --   attention-core mask and dropout output    (1 + 2) a s s b = 503,316,480
    --   x 36 layers = 18,874,368,000
    --   + embedding dropout mask, 1 s b h = 10,485,760
    local s, b, h, a, L = 1024, 8, 1280, 20, 36
    local per_layer = 2 * 1 * s * b * h + (1 + 2) * a * s * s * b
    assert.are.equal(524288000, per_layer)
    local want = L * per_layer + 1 * s * b * h
    assert.are.equal(18884853760, want)
    assert.are.equal(want, e_on.memory_breakdown.activations - e_off.memory_breakdown.activations)
  end)

  it("keeps the attention and the hidden probabilities apart, each as the config states it", function()
    local cfg = {}
    for k, v in pairs(GPT2_LARGE) do cfg[k] = v end
    -- attention dropout only (Ling 1.x's BailingMoeConfig has only that)
    cfg.resid_pdrop, cfg.embd_pdrop = 0.0, 0.0
    local path = tmpfile("gpt2-attn-only.json", cjson.encode(cfg))
    local _, info = hf.load(path)
    assert.are.same({ 0.1, 0.0 }, { info.attention_dropout, info.hidden_dropout })
    local att, off = gpt2_policy(path), gpt2_policy(path, { "training.dropout=false" })
    assert.are.same({ true, 0.1, 0.0 },
      { att.training.dropout, att.training.attention_dropout, att.training.hidden_dropout })
    -- only the attention core's mask and dropped scores, (1 + 2) a s s b a
    -- layer (s = 1024, b = 8, a = 20, 36 layers): no masks after attention
    -- and the MLP, none after the embedding
    local s, b, a, L = 1024, 8, 20, 36
    assert.are.equal(L * 3 * a * s * s * b,
      estimate(att).memory_breakdown.activations - estimate(off).memory_breakdown.activations)
    -- hidden only (BERT-style hidden_dropout_prob)
    local _, hinfo = hf.from_config({ model_type = "gpt2", n_layer = 2, n_embd = 64, n_head = 4, vocab_size = 100,
      n_positions = 64, attn_pdrop = 0.0, resid_pdrop = 0.05, embd_pdrop = 0.05 }, "h.json")
    assert.are.same({ 0.0, 0.05 }, { hinfo.attention_dropout, hinfo.hidden_dropout })
    -- a class default: GPT2Config's 0.1 each
    local _, dinfo = hf.from_config({ model_type = "gpt2", n_layer = 2, n_embd = 64, n_head = 4, vocab_size = 100,
      n_positions = 64 }, "d.json")
    assert.are.same({ 0.1, 0.1 }, { dinfo.attention_dropout, dinfo.hidden_dropout })
    -- the policy's own probability wins, the other is the config's
    local p = gpt2_policy(path, { "training.hidden_dropout=0.05" })
    assert.are.same({ 0.1, 0.05 }, { p.training.attention_dropout, p.training.hidden_dropout })
  end)
end)

-- Mixture of experts (issue 13): shared/models/moe/param_counts.csv gives
-- the total and active counts every config must reproduce
-- (shared/validation/moe/README.md: total without DeepSeek's MTP module;
-- active with the input embedding and the output layer).
local function moe_dir()
  local shared = ROOT .. "/../shared/models/moe"
  local f = io.open(shared .. "/param_counts.csv")
  if f then f:close() return shared end
  return ROOT .. "/tests/fixtures/moe" -- the same files, copied
end

local function read_counts(dir)
  local rows, n = {}, 0
  for line in io.lines(dir .. "/param_counts.csv") do
    local file, total, active, rest = line:match("^([^,]+),(%d+),(%d+),(.*)$")
    if file then
      rows[file] = { total = math.tointeger(tonumber(total)), active = math.tointeger(tonumber(active)),
                     how = rest }
      n = n + 1
    end
  end
  return rows, n
end

describe("mixture-of-experts import", function()
  local dir = moe_dir()
  local rows, n = read_counts(dir)

  it("has the shared folder's files (or their copy)", function()
    assert.is_true(n >= 7, dir)
    local fixture = read_counts(ROOT .. "/tests/fixtures/moe")
    assert.are.same(fixture, (read_counts(dir))) -- the copy is current
  end)

  for _, file in ipairs({ "mixtral-8x7b.json", "mixtral-8x22b.json", "qwen3-30b-a3b.json",
      "qwen3-235b-a22b.json", "qwen1.5-moe-a2.7b.json", "deepseek-v3.json", "deepseek-v2-lite.json" }) do
    it(file .. " reproduces param_counts.csv total and active", function()
      local want = rows[file]
      assert.is_not_nil(want, file)
      local c = core.model_params((hf.load(dir .. "/" .. file)))
      assert.are.equal(want.total, c.total)
      assert.are.equal(want.active, c.active)
      assert.are.equal(c.embedding + c.layers + c.final_norm + c.output_layer, c.total)
    end)
  end

  it("imports every JSON of the folder, each listed in param_counts.csv", function()
    local seen = 0
    local p = assert(io.popen('ls "' .. dir .. '"'))
    for name in p:lines() do
      if name:match("%.json$") then
        local want = rows[name]
        assert.is_not_nil(want, name .. " has no row in param_counts.csv")
        local c = core.model_params((hf.load(dir .. "/" .. name)))
        assert.are.same({ want.total, want.active }, { c.total, c.active }, name)
        seen = seen + 1
      end
    end
    p:close()
    assert.are.equal(n, seen)
  end)

  it("counts DeepSeek-V3's MTP module apart, as the how column does", function()
    local c = core.model_params((hf.load(dir .. "/deepseek-v3.json")))
    assert.are.equal(13463426304, c.mtp)
    assert.are.equal(684489845504, c.total + c.mtp) -- total incl. MTP
    assert.are.equal(38240398080, c.active + c.mtp_active) -- active incl. MTP layer
    assert.are.equal(58, c.moe_layers)
  end)

  it("maps the Mixtral, Qwen and DeepSeek fields", function()
    local m = hf.load(dir .. "/mixtral-8x7b.json")
    assert.are.same({ 8, 2, 14336, 14336 },
      { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size, m.ffn_hidden_size })
    assert.is_nil(m.shared_expert_ffn_hidden_size)
    local q = hf.load(dir .. "/qwen1.5-moe-a2.7b.json")
    assert.are.same({ 60, 4, 1408, 5632, true, true, 1, 0 },
      { q.num_experts, q.experts_per_token, q.moe_ffn_hidden_size,
        q.shared_expert_ffn_hidden_size, q.shared_expert_gate, q.qkv_bias,
        q.moe_layer_freq, q.moe_layer_phase })
    local q3 = hf.load(dir .. "/qwen3-30b-a3b.json")
    assert.is_true(q3.qk_norm)
    assert.is_nil(q3.moe_dense_layers) -- mlp_only_layers = []
    local d = hf.load(dir .. "/deepseek-v3.json")
    assert.are.same({ 1536, 512, 128, 64, 128, 192, 128, 1 },
      { d.q_lora_rank, d.kv_lora_rank, d.qk_nope_head_dim, d.qk_rope_head_dim,
        d.v_head_dim, d.head_dim, d.num_query_groups, d.mtp_layers })
    assert.are.same({ 256, 8, 2048, 2048, 3, 1, true, 18432 },
      { d.num_experts, d.experts_per_token, d.moe_ffn_hidden_size,
        d.shared_expert_ffn_hidden_size, d.moe_first_dense_layers, d.moe_layer_freq,
        d.moe_router_bias, d.ffn_hidden_size })
    local lite = hf.load(dir .. "/deepseek-v2-lite.json")
    assert.is_nil(lite.q_lora_rank) -- null: a plain q_proj
    assert.is_nil(lite.moe_router_bias) -- no topk_method = "noaux_tc"
    assert.are.equal(2 * 1408, lite.shared_expert_ffn_hidden_size)
  end)

  it("follows decoder_sparse_step and mlp_only_layers (Qwen2MoeDecoderLayer)", function()
    local cfg = cjson.decode(util_read(dir .. "/qwen3-30b-a3b.json"))
    local one = core.model_params((hf.from_config(cfg, "q.json")))
    cfg.mlp_only_layers = { 5, 0 }
    local m = hf.from_config(cfg, "q.json")
    assert.are.same({ 0, 5 }, m.moe_dense_layers)
    local two = core.model_params(m)
    assert.are.equal(46, two.moe_layers)
    -- a dense layer swaps the experts and router for a 3 h f MLP (f = 6144)
    local h, E, fm, f = 2048, 128, 768, 6144
    assert.are.equal(one.total - 2 * (h * E + E * 3 * h * fm) + 2 * 3 * h * f, two.total)
    cfg.mlp_only_layers = {}
    cfg.decoder_sparse_step = 2 -- layers 1, 3, 5, ... ((i + 1) % 2 == 0)
    local m2 = hf.from_config(cfg, "q.json")
    assert.are.same({ 2, 1 }, { m2.moe_layer_freq, m2.moe_layer_phase })
    assert.are.equal(24, core.model_params(m2).moe_layers)
  end)

  it("refuses what it cannot model, naming the key", function()
    local cfg = cjson.decode(util_read(dir .. "/deepseek-v3.json"))
    cfg.attention_bias = true
    assert.are.equal("NotImplemented: d.json: attention_bias = true with multi-head latent " ..
      "attention is not modelled", err_of(hf.from_config, cfg, "d.json"))
    cfg.attention_bias, cfg.first_k_dense_replace = false, 61
    assert.truthy(err_of(hf.from_config, cfg, "d.json"):match("^d%.json: first_k_dense_replace: no layer"))
    cfg.first_k_dense_replace, cfg.num_experts_per_tok = 3, 300
    assert.truthy(err_of(hf.from_config, cfg, "d.json"):match("^d%.json: model%.experts_per_token: 300 exceeds num_experts"))
    local q = cjson.decode(util_read(dir .. "/qwen1.5-moe-a2.7b.json"))
    q.shared_expert_intermediate_size = nil
    assert.are.equal("q.json: shared_expert_intermediate_size: required key is missing (got nothing)",
      err_of(hf.from_config, q, "q.json"))
    q.shared_expert_intermediate_size, q.mlp_only_layers = 5632, { 24 }
    assert.are.equal("q.json: mlp_only_layers[0]: expected a layer index in [0, 24) (got 24)",
      err_of(hf.from_config, q, "q.json"))
  end)

  it("keeps the model table of a dense config as before", function()
    local m = hf.load(ROOT .. "/examples/models/llama-3.1-8b.json")
    for _, k in ipairs({ "num_experts", "moe_layer_freq", "kv_lora_rank", "mtp_layers", "moe_dense_layers" }) do
      assert.is_nil(m[k], k)
    end
    local c = core.model_params(m)
    assert.are.equal(c.total, c.active)
    assert.is_nil(c.moe_layers)
  end)
end)

describe("apsearch.hf architectures", function()
  local hf = require "apsearch.hf"
  local core = require "apsearch.core"

  it("reads a model_type it has no reader for by its architectures class (Kimi-K2 as DeepSeek-V3)", function()
    local cfg = {
      architectures = { "DeepseekV3ForCausalLM" }, model_type = "kimi_k2", hidden_size = 7168,
      intermediate_size = 18432, moe_intermediate_size = 2048, num_hidden_layers = 61,
      num_attention_heads = 64, num_key_value_heads = 64, n_routed_experts = 384, n_shared_experts = 1,
      num_experts_per_tok = 8, first_k_dense_replace = 1, q_lora_rank = 1536, kv_lora_rank = 512,
      qk_nope_head_dim = 128, qk_rope_head_dim = 64, v_head_dim = 128, vocab_size = 163840,
      max_position_embeddings = 131072, topk_method = "noaux_tc", scoring_func = "sigmoid",
      n_group = 1, topk_group = 1, norm_topk_prob = true, routed_scaling_factor = 2.827,
      tie_word_embeddings = false,
      -- Kimi-K2's YaRN ramp has equal ends
      rope_scaling = { type = "yarn", factor = 32.0, original_max_position_embeddings = 4096,
        beta_fast = 1.0, beta_slow = 1.0, mscale = 1.0, mscale_all_dim = 1.0 },
    }
    local m, info = hf.from_config(cfg, "kimi/config.json")
    assert.truthy(table.concat(info.notes, "\n"):find("kimi/config.json: model_type kimi_k2 read as deepseek_v3 " ..
      "(architectures names DeepseekV3ForCausalLM, that type's modelling class)", 1, true))
    cfg.model_type = nil
    local _, info2 = hf.from_config(cfg, "kimi/config.json")
    assert.truthy(table.concat(info2.notes, "\n"):find("kimi/config.json: model_type (missing) read as " ..
      "deepseek_v3 (architectures", 1, true))
    -- JSON null and "" are missing too
    for _, v in ipairs({ require("cjson").null, "" }) do
      cfg.model_type = v
      local _, info3 = hf.from_config(cfg, "kimi/config.json")
      assert.truthy(table.concat(info3.notes, "\n"):find("model_type (missing) read as deepseek_v3", 1, true))
    end
    -- a megabyte model_type is cut in the note as in an error (a
    -- breaker's pass: the note echoed it whole), at 120 bytes
    cfg.model_type = string.rep("k", 1000000)
    local _, info4 = hf.from_config(cfg, "kimi/config.json")
    local line = table.concat(info4.notes, "\n"):match("[^\n]*read as deepseek_v3[^\n]*")
    assert.truthy(line:find("model_type " .. string.rep("k", 117) .. "... read as deepseek_v3", 1, true), line)
    assert.is_true(#line < 300, #line)
    cfg.model_type = "deepseek_v3"
    local same = hf.from_config(cfg, "kimi/config.json")
    assert.are.same(core.model_params(same), core.model_params(m))
    -- an unknown class still names the unsupported type
    cfg.model_type, cfg.architectures = "kimi_k3", { "KimiK3ForCausalLM" }
    local ok, err = pcall(hf.from_config, cfg, "k3/config.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("k3/config.json", 1, true), tostring(err))
  end)
end)

describe("apsearch.hf and the Hugging Face cache", function()
  local hf = require "apsearch.hf"
  local lfs = require "lfs"

  it("reads models--ORG--NAME through refs/main or its only snapshot, and names the model NAME", function()
    local base = os.tmpname()
    os.remove(base)
    local cache = base .. "/models--google--gemma-3-1b-pt"
    local snap = cache .. "/snapshots/9b2a5e4b1c0d"
    assert(os.execute("mkdir -p '" .. snap .. "' '" .. cache .. "/refs'"))
    local src = assert(io.open(H.ROOT .. "/examples/models/gemma-3-1b-pt.json")):read("a")
    assert(io.open(snap .. "/config.json", "w")):write(src):close()
    local m = hf.load(cache)
    assert.are.equal("gemma-3-1b-pt", m.name)
    assert.are.equal("gemma-3-1b-pt", hf.load(snap).name)
    -- two snapshots: refs/main decides
    assert(lfs.mkdir(cache .. "/snapshots/0000000000ab"))
    local ok, err = pcall(hf.load, cache)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("a directory without a config.json", 1, true), tostring(err))
    assert(io.open(cache .. "/refs/main", "w")):write("9b2a5e4b1c0d\n"):close()
    assert.are.equal("gemma-3-1b-pt", hf.load(cache).name)
    os.execute("rm -rf '" .. base .. "'")
  end)
end)

describe("model types a new user brings", function()
  local hf = require "apsearch.hf"
  local H = require "spec_helpers"

  it("lists every type a reader has among the supported ones", function()
    local listed = {}
    for _, t in ipairs(hf.supported) do listed[t] = true end
    for _, t in ipairs(hf.moe_supported) do listed[t] = true end
    for _, t in ipairs({ "apertus", "exaone", "internlm2", "internlm3", "ministral", "vaultgemma", "bailing_moe",
                         "llama", "deepseek_v3" }) do
      assert.is_true(listed[t], t)
    end
  end)

  it("offers no hint towards a reader whose model is another (Qwen v1 is not qwen2), and says why", function()
    local e = H.err_of(hf.from_config, { model_type = "qwen", hidden_size = 2048 }, "q.json")
    assert.matches('q.json: model_type: unsupported model type: Qwen v1 (QWenLMHeadModel', e, 1, true)
    assert.is_nil(e:find("did you mean", 1, true))
    e = H.err_of(hf.from_config, { model_type = "hunyuan", num_experts = 16 }, "h.json")
    assert.matches('it is Hunyuan-Large (K/V shared across layers', e, 1, true)
    assert.is_nil(e:find("did you mean", 1, true))
  end)

  it("says an encoder-decoder or encoder-only config is not a decoder-only model (a new user's T5, BERT)", function()
    local e = H.err_of(hf.from_config, { model_type = "t5", is_encoder_decoder = true, d_model = 512 }, "t5.json")
    assert.matches("t5.json: model_type: unsupported model type: an encoder-decoder model (is_encoder_decoder " ..
      "true); apsearch models decoder-only language models", e, 1, true)
    e = H.err_of(hf.from_config, { model_type = "bert", hidden_size = 768 }, "b.json")
    assert.matches("unsupported model type: an encoder-only model (bert); apsearch models decoder-only", e, 1, true)
    assert.is_nil(e:find("did you mean", 1, true))
  end)

  it("reads a Kimi-K2 config copied without architectures by the class its released file names", function()
    assert.are.same({ "deepseek_v3", "DeepseekV3ForCausalLM" }, { hf.model_type_of({ model_type = "kimi_k2" }) })
    -- a file that names another class keeps it
    assert.are.same({ "kimi_k2" }, { hf.model_type_of({ model_type = "kimi_k2", architectures = { "X" } }) })
  end)

  it("refuses an unmodelled family named only by its class as that family", function()
    assert.matches("(read as longcat_flash by its architectures class LongcatFlashForCausalLM): LongCat-Flash's",
      H.err_of(hf.from_config, { architectures = { "LongcatFlashForCausalLM" }, hidden_size = 1024 }, "l.json"), 1,
      true)
    assert.matches("(read as zamba2 by its architectures class Zamba2ForCausalLM)",
      H.err_of(hf.from_config, { architectures = { "Zamba2ForCausalLM" } }, "z.json"), 1, true)
  end)
end)
