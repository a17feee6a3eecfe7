--- Megatron-LM scripts describe the estimated model's architecture (issue
-- 25 item 3): the exact model flags written per 2025 family (gpt-oss,
-- Gemma 2 / 3, OLMoE, DBRX), and a NOT WRITTEN line (the file partial)
-- for what Megatron-LM d98e8a64 cannot express.  The same scripts went
-- through Megatron-LM's own parse_args / validate_args /
-- core_transformer_config_from_args by hand (docs/launch.md).
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local launch = require "apsearch.launch"
local megatron = require "apsearch.launch.megatron"
local options = require "apsearch.launch.options"

local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."

--- The Gemma-2-9B config.json values (hf_spec's) with its window and caps.
local GEMMA2_9B = { model_type = "gemma2", hidden_size = 3584, num_hidden_layers = 42,
  num_attention_heads = 16, num_key_value_heads = 8, head_dim = 256, intermediate_size = 14336,
  vocab_size = 256000, max_position_embeddings = 8192, hidden_activation = "gelu_pytorch_tanh",
  sliding_window = 4096, attn_logit_softcapping = 50.0, final_logit_softcapping = 30.0,
  rms_norm_eps = 1e-6, rope_theta = 10000.0 }

local function path(name) return ROOT .. "/examples/models/" .. name .. ".json" end
local function load(name) return (hf.load(path(name))) end

-- The model-shape part of a script: flag -> value (true for a switch) and
-- the comment notes, for one strategy on 8 GPUs.  `model` is a model
-- table or a config.json path.
local function script(model, strategy, training)
  local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron" }
  for k, v in pairs(training or {}) do tr[k] = v end
  local p = policy.from_table({ model = model, cluster = { device = "h100-sxm-80gb", nodes = 1,
    devices_per_node = 8 }, training = tr, top_k = 1 }, ROOT .. "/examples/x.lua")
  local ctx = search.context(p)
  local est = ctx:estimate(strategy or { dp_degree = 8, zero_stage = 1, micro_batch_size = 1 })
  local rec = { rank = 1, devices_used = est.devices_used, memory_cost = {}, performance_cost = {} }
  for k, v in pairs(est.strategy) do rec[k] = v end
  local stages = {}
  for i, st in ipairs(est.stages) do stages[i] = { num_layers = st.num_layers, recompute_layers = 0 } end
  local result = { inputs = ctx:inputs(), top_k_strategies = { rec }, stage_summary = { { stages = stages } } }
  local text, notes = megatron.render(launch.context(result, rec))
  local flags = {}
  for flag, value in text:gmatch("\n  (%-%-[%w%-]+) ?([^\n]*)") do flags[flag] = value ~= "" and value or true end
  return flags, notes, text
end

-- The notes starting with NOT WRITTEN (what makes the run's report call
-- the file partial, cli.lua write_set).
local function not_written(notes)
  local out = {}
  for _, n in ipairs(notes) do
    if n:match("^NOT WRITTEN") then out[#out + 1] = n end
  end
  return out
end

-- Asserts `flags` holds each of `want` (flag -> value or true) and none of
-- `absent`.
local function has(flags, want, absent)
  for f, v in pairs(want) do assert.are.equal(v, flags[f], f) end
  for _, f in ipairs(absent or {}) do assert.is_nil(flags[f], f) end
end

describe("Megatron-LM model architecture flags (issue 25)", function()
  it("registers every new flag with its facts", function()
    for _, f in ipairs({ "--quick-geglu", "--window-attn-skip-freq", "--softmax-type",
      "--glu-linear-offset", "--activation-func-clamp-value" }) do
      assert.is_true(options.megatron.options[f], f)
    end
    assert.is_true(options.megatron.facts["--softmax-type"].values.learnable)
    assert.are.equal(2, options.megatron.facts["--window-attn-skip-freq"].min)
  end)

  it("gpt-oss-20b: quick GeGLU + 1 clamped at 7, window 127 on odd layers, learned sinks, biases", function()
    local flags, notes = script(path("gpt-oss-20b"))
    has(flags, { ["--quick-geglu"] = true, ["--glu-linear-offset"] = "1",
      ["--activation-func-clamp-value"] = "7", ["--window-size"] = "127,0",
      ["--window-attn-skip-freq"] = "2", ["--softmax-type"] = "learnable",
      ["--num-experts"] = "32", ["--moe-router-topk"] = "4", ["--moe-ffn-hidden-size"] = "2880",
      ["--kv-channels"] = "64", ["--expert-tensor-parallel-size"] = "1" },
      { "--swiglu", "--disable-bias-linear", "--add-qkv-bias", "--qk-layernorm", "--moe-layer-freq" })
    assert.are.same({}, not_written(notes))
  end)

  it("gpt-oss-20b under CP: sinks and window with --cp-comm-type a2a; p2p and all_gather refused", function()
    -- TransformerEngine (context_parallel.py:5057-5067 @ d0067d0d): a
    -- window needs a2a or all_gather, learnable softmax a2a; 64 heads and
    -- 8 query groups over cp 2 divide
    local strat = { dp_degree = 4, cp_degree = 2, cp_comm_type = "a2a", zero_stage = 1,
      micro_batch_size = 1, layer_recompute = "full" }
    local flags = script(path("gpt-oss-20b"), strat)
    has(flags, { ["--context-parallel-size"] = "2", ["--cp-comm-type"] = "a2a",
      ["--softmax-type"] = "learnable", ["--window-size"] = "127,0" })
    local p = policy.from_table({ model = path("gpt-oss-20b"), cluster = { device = "h100-sxm-80gb",
      nodes = 1, devices_per_node = 8 }, training = { global_batch_size = 64, seq_length = 4096,
      framework = "megatron" } }, ROOT .. "/examples/x.lua")
    local ctx = search.context(p)
    for _, comm in ipairs({ "p2p", "all_gather" }) do
      strat.cp_comm_type = comm
      local ok, code, msg = ctx:check("all", strat)
      assert.is_false(ok)
      assert.are.equal("FRAMEWORK_UNSUPPORTED", code)
      assert.truthy(msg:find("cp_comm_type = " .. comm, 1, true), msg)
    end
  end)

  it("gemma-3-1b: quick GeGLU for GeGLU (NOT WRITTEN), window 511 on 5 of 6 layers, per-head QK norm", function()
    local flags, notes = script(load("gemma-3-1b-pt"))
    has(flags, { ["--quick-geglu"] = true, ["--window-size"] = "511,0", ["--window-attn-skip-freq"] = "6",
      ["--qk-layernorm"] = true, ["--disable-bias-linear"] = true, ["--normalization"] = "RMSNorm",
      ["--kv-channels"] = "256", ["--num-query-groups"] = "1",
      -- Gemma3RMSNorm's x * (1 + w), as Megatron-Bridge's Gemma3ModelProvider
      -- sets layernorm_zero_centered_gamma
      ["--apply-layernorm-1p"] = true },
      { "--swiglu", "--softmax-type", "--glu-linear-offset", "--activation-func-clamp-value",
        "--untie-embeddings-and-output-weights" })
    local nw = not_written(notes)
    assert.are.equal(2, #nw)
    assert.truthy(nw[1]:find("GeGLU MLP's GELU (gelu_pytorch_tanh): NOT EXPRESSIBLE in Megatron-LM", 1, true))
    assert.truthy(nw[1]:find("--quick-geglu is written", 1, true))
    assert.truthy(nw[2]:find("4 norms per layer", 1, true))
  end)

  it("CWM: the window on all but the first layer of each four, as --window-attn-skip-freq's list", function()
    local m = hf.from_config({ model_type = "cwm", num_hidden_layers = 8, hidden_size = 512,
      num_attention_heads = 4, num_key_value_heads = 2, intermediate_size = 1024, vocab_size = 1000 }, "cwm.json")
    local flags, notes = script(m)
    has(flags, { ["--window-size"] = "8191,0", ["--window-attn-skip-freq"] = "'([0]+[1]*3)*2'" })
    assert.are.same({}, not_written(notes))
  end)

  it("Mistral Small 4: softmax groups written, the logit ranking Megatron uses said (NOT EXPRESSIBLE)", function()
    local m = hf.from_config({ model_type = "mistral4", num_hidden_layers = 2, hidden_size = 512,
      num_attention_heads = 4, n_routed_experts = 16, num_experts_per_tok = 4, moe_intermediate_size = 128,
      n_group = 8, topk_group = 2, vocab_size = 1000 }, "m4.json")
    local flags, notes = script(m, { dp_degree = 8, ep_degree = 8, zero_stage = 1, micro_batch_size = 1 })
    has(flags, { ["--moe-router-num-groups"] = "8", ["--moe-router-group-topk"] = "2" },
      { "--moe-router-pre-softmax", "--moe-router-enable-expert-bias" })
    local found = false
    for _, n in ipairs(notes) do found = found or n:find("Megatron ranks the groups by their logits", 1, true) ~= nil end
    assert.is_true(found)
  end)

  it("Jais 2: squared ReLU with biases turns the bias-activation fusion off (TransformerConfig refuses it)", function()
    local m = hf.from_config({ model_type = "jais2", num_hidden_layers = 2, hidden_size = 512,
      num_attention_heads = 4, intermediate_size = 1024, vocab_size = 1000 }, "j2.json")
    local flags = script(m)
    has(flags, { ["--squared-relu"] = true, ["--no-bias-gelu-fusion"] = true, ["--normalization"] = nil },
      { "--disable-bias-linear" })
    -- without biases validate_args turns it off itself (arguments.py:1605): not written
    local nb = hf.from_config({ model_type = "jais2", num_hidden_layers = 2, hidden_size = 512, num_attention_heads = 4,
      intermediate_size = 1024, vocab_size = 1000, attention_bias = false, mlp_bias = false }, "j2.json")
    has(script(nb), { ["--squared-relu"] = true, ["--disable-bias-linear"] = true }, { "--no-bias-gelu-fusion" })
  end)

  it("gpt-oss: biases and grouped experts turn the bias-dropout fusion off (TEGroupedMLP asserts it)", function()
    -- moe/experts.py l.205-207 @ d98e8a64; a framework pass found every
    -- gpt-oss and Phi-3.5-MoE script stopping there at model build
    local m = hf.from_config(H.example_config("gpt-oss-20b"), "g.json")
    local flags = script(m, { dp_degree = 8, ep_degree = 8, zero_stage = 1, micro_batch_size = 1 })
    has(flags, { ["--no-bias-dropout-fusion"] = true, ["--moe-grouped-gemm"] = true }, { "--disable-bias-linear" })
    -- without biases the fusion stays (Qwen3-30B-A3B)
    local q = hf.from_config(H.example_config("qwen3-30b-a3b"), "q.json")
    has(script(q, { dp_degree = 8, ep_degree = 8, zero_stage = 1, micro_batch_size = 1 }),
      { ["--disable-bias-linear"] = true }, { "--no-bias-dropout-fusion" })
  end)

  -- Jais 2's two matrices of 1,026 (2 x 512 x 1,026 weights, 4 x 512 x 1,026
  -- FLOPs a token) as TorchTitan's three of 684 (3 x 512 x 684: the same);
  -- 1,024 is not a multiple of 3/2: 683 (2,049 // 3), within one column
  it("TorchTitan: a two-matrix MLP written as SwiGLU of 2/3 its width (the same weights and GEMM FLOPs)", function()
    local tt = require "apsearch.launch.torchtitan"
    local function shape(f)
      local m = hf.from_config({ model_type = "jais2", num_hidden_layers = 2, hidden_size = 512,
        num_attention_heads = 4, intermediate_size = f, vocab_size = 1000 }, "j2.json")
      local s, _, notes = tt.model_shape(m, 1024, 1)
      for _, n in ipairs(notes) do if n[2]:find("MLP: HEAD's llama3 block is SwiGLU", 1, true) then return s, n[2] end end
      return s
    end
    local s, note = shape(1026)
    assert.are.equal(684, s.hidden_dim)
    assert.truthy(note:find("written as SwiGLU of width 684, 2/3 of the model's 1026, with the parameters", 1, true))
    s, note = shape(1024)
    assert.are.equal(683, s.hidden_dim)
    assert.truthy(note:find("within one column of the parameters", 1, true))
    local sw = tt.model_shape(load("llama-3.1-8b"), 1024, 1)
    assert.are.equal(14336, sw.hidden_dim)
  end)

  it("gemma-3-4b: window 1023 with period 6; linear RoPE scaling not written", function()
    local flags, notes = script(load("gemma-3-4b-pt"))
    has(flags, { ["--quick-geglu"] = true, ["--window-size"] = "1023,0", ["--window-attn-skip-freq"] = "6",
      ["--qk-layernorm"] = true }, { "--swiglu" })
    assert.are.equal(3, #not_written(notes))
  end)

  it("gemma-2-9b: window 4095 on every other layer, soft-capping NOT WRITTEN (the bug of issue 25)", function()
    local m = hf.from_config(GEMMA2_9B, "gemma-2-9b.json")
    assert.are.same({ "gelu_tanh", 2, 21, 50, 30 }, { m.glu_activation, m.sliding_window_period,
      m.sliding_window_layers, m.attn_logit_softcapping, m.final_logit_softcapping })
    local flags, notes = script(m)
    has(flags, { ["--quick-geglu"] = true, ["--window-size"] = "4095,0", ["--window-attn-skip-freq"] = "2",
      ["--disable-bias-linear"] = true, ["--apply-layernorm-1p"] = true }, { "--swiglu", "--qk-layernorm" })
    local text = table.concat(not_written(notes), "\n")
    assert.truthy(text:find("attn_logit_softcapping 50: NOT EXPRESSIBLE", 1, true))
    assert.truthy(text:find("final_logit_softcapping 30: NOT EXPRESSIBLE", 1, true))
    -- null caps: none (Gemma2Config's defaults only for absent keys)
    local cfg = {}
    for k, v in pairs(GEMMA2_9B) do cfg[k] = v end
    cfg.attn_logit_softcapping, cfg.final_logit_softcapping = require("cjson").null, nil
    m = hf.from_config(cfg, "gemma-2-9b.json")
    assert.are.same({ 0, 30 }, { m.attn_logit_softcapping or 0, m.final_logit_softcapping })
  end)

  it("olmoe: SwiGLU, per-head QK norm for the full-width norms (NOT WRITTEN), no biases", function()
    local flags, notes = script(path("olmoe-1b-7b-0924"))
    has(flags, { ["--swiglu"] = true, ["--qk-layernorm"] = true, ["--disable-bias-linear"] = true,
      ["--num-experts"] = "64", ["--moe-router-topk"] = "8", ["--moe-ffn-hidden-size"] = "1024",
      ["--moe-router-pre-softmax"] = true },
      { "--quick-geglu", "--window-size", "--softmax-type", "--add-qkv-bias" })
    local nw = not_written(notes)
    assert.are.equal(1, #nw)
    assert.truthy(nw[1]:find("qk_norm_full_width", 1, true))
  end)

  it("dbrx: SwiGLU experts, LayerNorm (bias-free: NOT WRITTEN), no linear biases", function()
    local flags, notes = script(path("dbrx-base"), { dp_degree = 1, ep_degree = 8, etp_degree = 1,
      pp_degree = 8, zero_stage = 1, micro_batch_size = 1 })
    has(flags, { ["--swiglu"] = true, ["--disable-bias-linear"] = true, ["--num-experts"] = "16",
      ["--moe-router-topk"] = "4", ["--moe-ffn-hidden-size"] = "10752", ["--rotary-base"] = "500000" },
      { "--normalization", "--qk-layernorm", "--quick-geglu", "--window-size" })
    local nw = not_written(notes)
    assert.are.equal(1, #nw)
    assert.truthy(nw[1]:find("LayerNorm without bias", 1, true))
  end)

  -- GLM-4.5 (modeling_glm4_moe.py): RoPE on half of each head, q/k/v
  -- biases without o_proj's, per-head QK norms, 3 dense layers then 89
  -- MoE, 160 experts + 1 shared of 1536, DeepSeek-V3's sigmoid router
  -- with the expert bias and routed_scaling_factor 2.5; the MTP layer a
  -- NOTE (not trained unless training.mtp_num_layers).
  it("glm-4.5: --rotary-percent 0.5, qkv bias, QK norm, [0]*3+[1]*89, sigmoid router x2.5", function()
    local flags, notes = script(path("glm-4.5"), { dp_degree = 1, ep_degree = 8, etp_degree = 1,
      pp_degree = 8, zero_stage = 1, micro_batch_size = 1 })
    has(flags, { ["--rotary-percent"] = "0.5", ["--rotary-base"] = "1000000", ["--add-qkv-bias"] = true,
      ["--disable-bias-linear"] = true, ["--qk-layernorm"] = true, ["--swiglu"] = true,
      ["--kv-channels"] = "128", ["--num-query-groups"] = "8", ["--ffn-hidden-size"] = "12288",
      ["--num-experts"] = "160", ["--moe-router-topk"] = "8", ["--moe-ffn-hidden-size"] = "1536",
      ["--moe-shared-expert-intermediate-size"] = "1536", ["--moe-layer-freq"] = "'[0]*3+[1]*89'",
      ["--moe-router-score-function"] = "sigmoid", ["--moe-router-enable-expert-bias"] = true,
      ["--moe-router-topk-scaling-factor"] = "2.5", ["--untie-embeddings-and-output-weights"] = true },
      { "--moe-router-pre-softmax", "--moe-router-num-groups", "--moe-shared-expert-gate", "--mtp-num-layers" })
    assert.are.same({}, not_written(notes))
    assert.truthy(table.concat(notes, "\n"):find("1 multi-token-prediction module(s)", 1, true))
    -- GLM-4.5-Air: no QK norm, one dense layer
    flags = script(path("glm-4.5-air"), { dp_degree = 1, ep_degree = 8, etp_degree = 1, pp_degree = 8,
      zero_stage = 1, micro_batch_size = 1 })
    has(flags, { ["--rotary-percent"] = "0.5", ["--moe-layer-freq"] = "'[0]+[1]*45'" }, { "--qk-layernorm" })
    -- a model with full RoPE writes no --rotary-percent (Megatron's default 1.0)
    has(script(load("llama-3.1-8b")), {}, { "--rotary-percent" })
  end)

  it("a window on layers no period describes is NOT WRITTEN, not a full-window flag", function()
    local m = load("gemma-3-1b-pt")
    m.sliding_window_period, m.sliding_window_layers = nil, 20
    local flags, notes = script(m)
    has(flags, {}, { "--window-size", "--window-attn-skip-freq" })
    assert.truthy(table.concat(not_written(notes), "\n"):find("512-token sliding window on 20 of 26", 1, true))
    -- a window on every layer: --window-size alone (Mistral)
    flags = script(load("mistral-7b-v0.1"))
    has(flags, { ["--window-size"] = "4095,0", ["--swiglu"] = true }, { "--window-attn-skip-freq" })
  end)

  it("mixed biases keep Megatron's all-or-nothing and say which are added", function()
    local m = load("llama-3.1-8b")
    m.qkv_bias, m.attn_out_bias = true, true
    local flags, notes = script(m)
    has(flags, {}, { "--disable-bias-linear", "--add-qkv-bias" })
    assert.truthy(table.concat(not_written(notes), "\n"):find("lacks on: mlp", 1, true))
  end)
end)

describe("model fields of the architecture (issue 25)", function()
  it("reads the window period from layer_types, or none when no period fits", function()
    assert.are.equal(2, hf.window_period(function(i) return i % 2 == 1 end, 24))
    assert.are.equal(6, hf.window_period(function(i) return i % 6 ~= 0 end, 26))
    assert.is_nil(hf.window_period(function(i) return i > 4 end, 26))
    local f = assert(io.open(ROOT .. "/examples/models/gemma-3-1b-pt.json"))
    local cfg = require("cjson").decode(f:read("a")) f:close()
    cfg.layer_types = {}
    for i = 1, 26 do cfg.layer_types[i] = i <= 4 and "full_attention" or "sliding_attention" end
    local m = hf.from_config(cfg, "gemma-3-1b-pt.json")
    assert.are.same({ 22 }, { m.sliding_window_layers })
    assert.is_nil(m.sliding_window_period)
  end)

  it("refuses an unknown Gemma activation naming file, key and value", function()
    local cfg = {}
    for k, v in pairs(GEMMA2_9B) do cfg[k] = v end
    cfg.hidden_activation = "relu"
    local ok, err = pcall(hf.from_config, cfg, "gemma-2-9b.json")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("gemma-2-9b.json: hidden_activation", 1, true), err)
    assert.truthy(tostring(err):find("relu", 1, true), err)
  end)

  it("reads a Gemma 3 config naming the exact GELU (\"gelu\", a re-saved config) as GeGLU of the same count", function()
    -- a new user's MaxText-dumped Gemma 3 configs say hidden_activation
    -- "gelu", which transformers' ACT2FN takes (GELUActivation)
    local f = assert(io.open(ROOT .. "/examples/models/gemma-3-1b-pt.json"))
    local cfg = require("cjson").decode(f:read("a")) f:close()
    local tanh = hf.from_config(cfg, "gemma-3-1b-pt.json")
    cfg.hidden_activation = "gelu"
    local exact = hf.from_config(cfg, "gemma-3-1b-pt.json")
    assert.are.equal("gelu_tanh", tanh.glu_activation)
    assert.are.equal("gelu", exact.glu_activation)
    assert.are.equal(999885952, core.model_params(exact).total)
    assert.are.equal(core.model_params(tanh).total, core.model_params(exact).total)
    local flags, notes = script(exact)
    assert.is_true(flags["--quick-geglu"])
    local nw = not_written(notes) -- and the sandwich norms', as for gelu_pytorch_tanh
    assert.are.equal(2, #nw)
    assert.truthy(nw[1]:find("GeGLU MLP's GELU (gelu): NOT EXPRESSIBLE in Megatron-LM", 1, true), nw[1])
    assert.truthy(nw[1]:find("in place of GELU$"), nw[1])
  end)

  it("the core checks the period against the windowed count and the GLU fields against mlp", function()
    local m = load("gemma-3-1b-pt")
    m.sliding_window_period = 2
    local ok, err = pcall(core.model_params, m)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("sliding_window_period: 2 puts the window on 13 of 26 layers", 1, true), err)
    m = load("llama-2-7b")
    m.mlp, m.glu_activation = "gelu", "gelu_tanh"
    ok, err = pcall(core.model_params, m)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("glu_activation: only a gated MLP", 1, true), err)
  end)

  -- Phi-3.5-MoE (transformers modular_phimoe.py): LayerNorm with bias
  -- (Megatron's default normalization), q/k/v/o biases only (add_bias_linear
  -- adds them to the experts and router too: NOT WRITTEN), an lm_head
  -- bias GPTModel cannot build and longrope positions (NOT WRITTEN).
  it("phi-3.5-moe: 16 experts top 2, LayerNorm; lm_head bias, biases and longrope NOT WRITTEN", function()
    -- longrope: one factor per rotated pair of the 128-dim heads
    local function factors(v)
      local t = {}
      for i = 1, 64 do t[i] = v end
      return t
    end
    local cfg = { model_type = "phimoe", attention_bias = true, lm_head_bias = true, hidden_size = 4096,
      intermediate_size = 6400, max_position_embeddings = 131072, num_attention_heads = 32,
      num_experts_per_tok = 2, num_hidden_layers = 32, num_key_value_heads = 8, num_local_experts = 16,
      rope_scaling = { type = "longrope", short_factor = factors(1.0), long_factor = factors(2.0),
        short_mscale = 1.243163121016122, long_mscale = 1.243163121016122,
        original_max_position_embeddings = 4096 }, rope_theta = 10000.0, sliding_window = 131072,
      tie_word_embeddings = false, vocab_size = 32064 }
    local file = os.tmpname()
    local f = assert(io.open(file, "w"))
    f:write(require("cjson").encode(cfg))
    f:close()
    local flags, notes = script(file, { dp_degree = 1, ep_degree = 8, etp_degree = 1, pp_degree = 8,
      zero_stage = 1, micro_batch_size = 1 })
    os.remove(file)
    has(flags, { ["--swiglu"] = true, ["--num-experts"] = "16", ["--moe-router-topk"] = "2",
      ["--untie-embeddings-and-output-weights"] = true, ["--rotary-base"] = "10000" },
      { "--normalization", "--disable-bias-linear" })
    local text = table.concat(not_written(notes), "\n")
    assert.are.equal(3, #not_written(notes))
    assert.truthy(text:find("output layer's bias (lm_head_bias): NOT EXPRESSIBLE", 1, true), text)
    assert.truthy(text:find("32064 parameters fewer", 1, true), text)
    assert.truthy(text:find("longrope RoPE scaling (factor 32)", 1, true), text)
    assert.truthy(text:find("adds biases the model lacks on: mlp, router", 1, true), text)
  end)

  -- Olmo 3 (modular_olmo3.py): the window on 3 of each 4 layers as
  -- --window-size / --window-attn-skip-freq 4, per-head --qk-layernorm
  -- for its full-width Q/K norms and the norms after attention and MLP
  -- (TransformerLayer normalises before): both NOT WRITTEN.
  it("olmo-3: window 4095 skip 4, yarn; full-width QK norms and reordered norms NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "olmo3", hidden_size = 5120, intermediate_size = 27648,
      num_hidden_layers = 64, num_attention_heads = 40, num_key_value_heads = 8, max_position_embeddings = 65536,
      rope_theta = 500000, rope_scaling = { rope_type = "yarn", factor = 8.0, beta_fast = 32.0, beta_slow = 1.0,
        attention_factor = 1.2079441541679836, original_max_position_embeddings = 8192 },
      vocab_size = 100278 }, "olmo3.json")
    local flags, notes = script(m, { dp_degree = 1, tp_degree = 8, sequence_parallel = true, zero_stage = 1,
      micro_batch_size = 1, layer_recompute = "full" })
    has(flags, { ["--window-size"] = "4095,0", ["--window-attn-skip-freq"] = "4", ["--qk-layernorm"] = true,
      ["--normalization"] = "RMSNorm", ["--disable-bias-linear"] = true, ["--swiglu"] = true,
      ["--rotary-base"] = "500000" })
    local text = table.concat(not_written(notes), "\n")
    assert.truthy(text:find("norms after attention and after the MLP (reordered_norm, OLMo 2)", 1, true), text)
    assert.truthy(text:find("qk_norm_full_width", 1, true), text)
  end)

  it("glm-4: --rotary-percent 0.5 --rotary-interleaved --add-qkv-bias; four norms NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "glm4", hidden_size = 4096, intermediate_size = 13696,
      num_hidden_layers = 40, num_attention_heads = 32, num_key_value_heads = 2, vocab_size = 151552,
      rope_theta = 10000.0 }, "glm4.json")
    local flags, notes = script(m)
    has(flags, { ["--rotary-percent"] = "0.5", ["--rotary-interleaved"] = true, ["--add-qkv-bias"] = true,
      ["--disable-bias-linear"] = true, ["--swiglu"] = true })
    local nw = not_written(notes)
    assert.are.equal(1, #nw)
    assert.truthy(nw[1]:find("4 norms per layer", 1, true))
  end)

  it("granite: the multipliers NOT WRITTEN (Megatron's MuP has no residual multiplier)", function()
    local m = hf.from_config({ model_type = "granite", hidden_size = 4096, intermediate_size = 12800,
      num_attention_heads = 32, num_hidden_layers = 40, num_key_value_heads = 8, vocab_size = 49159,
      tie_word_embeddings = true, residual_multiplier = 0.22 }, "granite.json")
    local flags, notes = script(m)
    has(flags, { ["--swiglu"] = true, ["--disable-bias-linear"] = true, ["--normalization"] = "RMSNorm" },
      { "--untie-embeddings-and-output-weights" })
    local nw = not_written(notes)
    assert.are.equal(1, #nw)
    assert.truthy(nw[1]:find("multipliers (mup_multipliers, Granite)", 1, true), nw[1])
  end)

  it("cohere2: parallel attention and MLP, LayerNorm without bias and the logit scale NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "cohere2", hidden_size = 4096, intermediate_size = 14336,
      num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, vocab_size = 256000,
      rope_theta = 50000 }, "command-r7b.json")
    local flags, notes = script(m)
    has(flags, { ["--window-size"] = "4095,0", ["--window-attn-skip-freq"] = "4", ["--no-rope-freq"] = "4" },
      { "--normalization", "--untie-embeddings-and-output-weights" })
    local text = table.concat(not_written(notes), "\n")
    assert.truthy(text:find("in parallel on one normed input (parallel_attn_mlp, Cohere2)", 1, true), text)
    assert.truthy(text:find("LayerNorm without bias", 1, true), text)
    assert.truthy(text:find("mup_multipliers", 1, true), text)
  end)

  -- Command R (cohere, modular_cohere.py @ 03ea97ae): Cohere2's layer
  -- without the window, its interleaved RoPE written; GLM-4-9B-chat-hf
  -- (glm, modular_glm.py @ 0325dc46): q/k/v biases only, half-head
  -- interleaved RoPE, two norms per layer -- nothing NOT WRITTEN
  it("cohere: --rotary-interleaved, the parallel layer NOT WRITTEN; glm: --add-qkv-bias --rotary-percent 0.5",
    function()
    local m = hf.from_config({ model_type = "cohere", hidden_size = 8192, intermediate_size = 22528,
      num_hidden_layers = 40, num_attention_heads = 64, vocab_size = 256000, rope_theta = 8000000 }, "command-r.json")
    local flags, notes, text = script(m)
    has(flags, { ["--rotary-interleaved"] = true, ["--rotary-base"] = "8000000", ["--disable-bias-linear"] = true },
      { "--normalization", "--untie-embeddings-and-output-weights", "--window-size", "--no-rope-freq" })
    local nw = table.concat(not_written(notes), "\n")
    assert.truthy(nw:find("in parallel on one normed input", 1, true), nw)
    assert.truthy(nw:find("LayerNorm without bias", 1, true), nw)
    H.assert_megatron_flags(text)
    -- Command R+'s per-head Q/K LayerNorms, a weight each: --qk-layernorm shares one, NOT WRITTEN
    m = hf.from_config({ model_type = "cohere", hidden_size = 1024, intermediate_size = 4096, num_hidden_layers = 4,
      num_attention_heads = 8, num_key_value_heads = 2, vocab_size = 32000, use_qk_norm = true }, "r-plus.json")
    flags, notes, text = script(m)
    has(flags, { ["--qk-layernorm"] = true }, {})
    nw = table.concat(not_written(notes), "\n")
    assert.truthy(nw:find("Q/K norms with a weight of their own per head (qk_norm_head_weights, Command R+)", 1,
      true), nw)
    assert.falsy(nw:find("over the whole projection", 1, true), nw)
    H.assert_megatron_flags(text)
    m = hf.from_config({ model_type = "glm", hidden_size = 4096, intermediate_size = 13696, num_hidden_layers = 40,
      num_attention_heads = 32, num_key_value_heads = 2, vocab_size = 151552, rms_norm_eps = 1.5625e-07 },
      "glm-4-9b-chat-hf.json")
    flags, notes, text = script(m)
    has(flags, { ["--rotary-interleaved"] = true, ["--rotary-percent"] = "0.5", ["--disable-bias-linear"] = true,
      ["--add-qkv-bias"] = true, ["--normalization"] = "RMSNorm", ["--swiglu"] = true, ["--num-query-groups"] = "2",
      ["--untie-embeddings-and-output-weights"] = true }, { "--kv-channels" })
    assert.are.same({}, not_written(notes))
    H.assert_megatron_flags(text)
  end)

  -- OLMo 1 (modular_olmo.py @ 00a98e71): LayerNorms with no weight or bias,
  -- which Megatron's norms always have (one NOT WRITTEN line, not the
  -- bias-free one besides); TorchTitan and MindFormers say so too
  it("olmo: weightless LayerNorms NOT WRITTEN, otherwise Llama's flags on a LayerNorm", function()
    local m = hf.from_config({ model_type = "olmo", hidden_size = 4096, intermediate_size = 11008,
      num_hidden_layers = 32, num_attention_heads = 32, vocab_size = 50304, clip_qkv = 8.0 }, "olmo-7b.json")
    local flags, notes, text = script(m)
    has(flags, { ["--swiglu"] = true, ["--disable-bias-linear"] = true, ["--norm-epsilon"] = "1e-05",
      ["--untie-embeddings-and-output-weights"] = true }, { "--normalization", "--apply-layernorm-1p" })
    local nw = not_written(notes)
    assert.are.equal(1, #nw, table.concat(nw, "\n"))
    assert.truthy(nw[1]:find("norms without a weight or bias (norm_weightless, OLMo, nanochat)", 1, true), nw[1])
    H.assert_megatron_flags(text)
    assert.truthy(table.concat(launch.llama_block_features(m), "\n"):find("norm_weightless", 1, true))
  end)

  -- Bamba (modular_bamba.py @ 024072ac): the hybrid pattern with RoPE on
  -- half of each attention head (pretrain_hybrid.py); one Mamba group
  -- keeps tensor parallelism at 1
  it("bamba: --hybrid-layer-pattern, --position-embedding-type rope --rotary-percent 0.5", function()
    local m = hf.from_config({ model_type = "bamba", hidden_size = 1024, intermediate_size = 4096,
      num_hidden_layers = 4, num_attention_heads = 8, num_key_value_heads = 8, vocab_size = 32000,
      attn_layer_indices = { 2 }, mamba_n_heads = 32, mamba_d_state = 128, mamba_chunk_size = 128 }, "bamba.json")
    local flags, notes, text = script(m)
    has(flags, { ["--hybrid-layer-pattern"] = "'M-M-*-M-'", ["--position-embedding-type"] = "rope",
      ["--rotary-percent"] = "0.5", ["--swiglu"] = true, ["--normalization"] = "RMSNorm",
      ["--disable-bias-linear"] = true }, { "--add-qkv-bias" })
    assert.are.same({}, not_written(notes))
    H.assert_megatron_flags(text)
  end)

  -- StarCoder (gpt_bigcode, modeling_gpt_bigcode.py @ 05ff2e98): GPT-2's
  -- layer (Megatron's defaults: learned positions, LayerNorm and linear
  -- biases, GELU, tied) with one K and V head: --num-query-groups 1
  it("gpt_bigcode: multi-query as --num-query-groups 1, learned positions as Megatron's default", function()
    local m = hf.from_config({ model_type = "gpt_bigcode", n_embd = 2048, n_head = 16, n_inner = 8192, n_layer = 24,
      n_positions = 4096, vocab_size = 49280, activation_function = "gelu" }, "santacoder.json")
    local flags, notes, text = script(m)
    has(flags, { ["--group-query-attention"] = true, ["--num-query-groups"] = "1",
      ["--max-position-embeddings"] = "4096" }, { "--position-embedding-type", "--swiglu", "--normalization",
      "--disable-bias-linear", "--untie-embeddings-and-output-weights" })
    assert.are.same({}, not_written(notes))
    H.assert_megatron_flags(text)
  end)

  -- GPT-J (modeling_gptj.py @ 00b676f8): RoPE on a quarter of each head in
  -- interleaved pairs written; the parallel layer, the lm_head bias and the
  -- MLP-only biases NOT WRITTEN
  it("gptj: --rotary-percent 0.25 --rotary-interleaved; parallel layer, lm_head and mixed biases NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "gptj", n_embd = 4096, n_head = 16, n_layer = 28, n_positions = 2048,
      vocab_size = 50400, activation_function = "gelu" }, "gpt-j-6b.json")
    local flags, notes, text = script(m)
    has(flags, { ["--rotary-percent"] = "0.25", ["--rotary-interleaved"] = true,
      ["--untie-embeddings-and-output-weights"] = true }, { "--disable-bias-linear", "--swiglu", "--normalization" })
    local nw = table.concat(not_written(notes), "\n")
    for _, what in ipairs({ "in parallel on one normed input", "the output layer's bias", "biases on only some " ..
      "linear layers" }) do
      assert.truthy(nw:find(what, 1, true), nw)
    end
    H.assert_megatron_flags(text)
  end)

  -- Falcon-40B (modeling_falcon.py): 8 KV heads, no linear biases,
  -- LayerNorm with bias and GELU (Megatron's defaults); attention and MLP
  -- in parallel on a norm each NOT WRITTEN
  it("falcon: --num-query-groups 8 --disable-bias-linear; the parallel layer of two norms NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "falcon", hidden_size = 8192, num_attention_heads = 128,
      num_hidden_layers = 60, num_kv_heads = 8, new_decoder_architecture = true, vocab_size = 65024 }, "f40.json")
    local flags, notes, text = script(m)
    has(flags, { ["--num-query-groups"] = "8", ["--disable-bias-linear"] = true }, { "--swiglu", "--normalization",
      "--untie-embeddings-and-output-weights" })
    local nw = not_written(notes)
    assert.are.equal(1, #nw, table.concat(nw, "\n"))
    assert.truthy(nw[1]:find("attention and MLP in parallel, each on a norm of its own", 1, true), nw[1])
    H.assert_megatron_flags(text)
  end)

  -- ALiBi (MPT) has no Megatron flag: nothing written would be learned
  -- absolute positions, parameters the model lacks; none is written, NOT
  -- WRITTEN saying so
  it("alibi: --position-embedding-type none with a NOT WRITTEN line, never the learned default", function()
    local m = hf.from_config({ model_type = "mpt", d_model = 1024, n_heads = 8, n_layers = 4, expansion_ratio = 4,
      max_seq_len = 4096, vocab_size = 32000, attn_config = { alibi = true } }, "mpt.json")
    local flags, notes, text = script(m)
    has(flags, { ["--position-embedding-type"] = "none" }, {})
    local nw = table.concat(not_written(notes), "\n")
    assert.truthy(nw:find("ALiBi attention biases: NOT EXPRESSIBLE in Megatron-LM", 1, true), nw)
    H.assert_megatron_flags(text)
  end)

  -- BLOOM (modeling_bloom.py): ALiBi as none and the embedding LayerNorm,
  -- both NOT WRITTEN; TorchTitan and MindFormers name the norm too
  it("bloom: --position-embedding-type none; ALiBi and the embedding LayerNorm NOT WRITTEN", function()
    local m = hf.from_config({ model_type = "bloom", n_embed = 1024, n_layer = 24, num_attention_heads = 16,
      vocab_size = 250880, seq_length = 2048 }, "bloom-560m.json")
    local flags, notes, text = script(m)
    has(flags, { ["--position-embedding-type"] = "none" }, { "--disable-bias-linear", "--swiglu",
      "--untie-embeddings-and-output-weights" })
    local nw = table.concat(not_written(notes), "\n")
    assert.truthy(nw:find("ALiBi attention biases", 1, true), nw)
    assert.truthy(nw:find("a LayerNorm on the word embeddings (embedding_norm, BLOOM)", 1, true), nw)
    assert.truthy(nw:find("(2048 parameters fewer)", 1, true), nw)
    H.assert_megatron_flags(text)
    assert.truthy(table.concat(launch.llama_block_features(m), "\n"):find("embedding_norm", 1, true))
  end)

  -- --rotary-base is type=int: Hunyuan's NTK-alpha base 10000 x 1000^(128/126)
  -- rounds (a NOTE), a small fractional base stays NOT EXPRESSIBLE
  -- Nemotron-4 / Minitron (modeling_nemotron.py @ 694aaa7f): the squared
  -- ReLU without a gate (TransformerConfig.activation_func squared_relu,
  -- argument_utils.py @ d98e8a64), LayerNorm1P (layernorm_zero_centered_
  -- gamma), RoPE on half of each head; nothing NOT WRITTEN
  it("nemotron: --squared-relu --apply-layernorm-1p --rotary-percent 0.5, LayerNorm with bias", function()
    local m = hf.from_config({ model_type = "nemotron", hidden_size = 3072, intermediate_size = 9216,
      num_hidden_layers = 32, num_attention_heads = 24, num_key_value_heads = 8, vocab_size = 256000,
      norm_eps = 1e-05, rope_theta = 10000 }, "minitron-4b.json")
    local flags, notes, text = script(m)
    has(flags, { ["--squared-relu"] = true, ["--apply-layernorm-1p"] = true, ["--rotary-percent"] = "0.5",
      ["--norm-epsilon"] = "1e-05", ["--disable-bias-linear"] = true,
      ["--untie-embeddings-and-output-weights"] = true }, { "--swiglu", "--normalization", "--quick-geglu" })
    assert.are.same({}, not_written(notes))
    H.assert_megatron_flags(text)
  end)

  it("arcee: --squared-relu with RMSNorm; starcoder2: GELU, biases, window on every layer", function()
    local m = hf.from_config({ model_type = "arcee", hidden_size = 2560, intermediate_size = 18432,
      num_hidden_layers = 36, num_attention_heads = 20, num_key_value_heads = 4, head_dim = 128,
      vocab_size = 128004 }, "afm.json")
    local flags, notes = script(m)
    has(flags, { ["--squared-relu"] = true, ["--normalization"] = "RMSNorm", ["--disable-bias-linear"] = true },
      { "--swiglu", "--apply-layernorm-1p", "--rotary-percent" })
    assert.are.same({}, not_written(notes))
    m = hf.from_config({ model_type = "starcoder2", hidden_size = 3072, intermediate_size = 12288,
      num_hidden_layers = 30, num_attention_heads = 24, num_key_value_heads = 2, vocab_size = 49152,
      sliding_window = 4096, hidden_act = "gelu" }, "starcoder2-3b.json")
    local text
    flags, notes, text = script(m)
    -- Megatron's defaults: LayerNorm with bias, biases on every linear, GELU
    has(flags, { ["--window-size"] = "4095,0" }, { "--swiglu", "--squared-relu", "--normalization",
      "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--window-attn-skip-freq" })
    assert.are.same({}, not_written(notes))
    H.assert_megatron_flags(text)
  end)

  it("ernie4_5: --rotary-interleaved, biases all or none by use_bias", function()
    local cfg = { model_type = "ernie4_5", hidden_size = 1024, intermediate_size = 3072, num_hidden_layers = 18,
      num_attention_heads = 16, num_key_value_heads = 2, vocab_size = 103424 }
    local flags = script((hf.from_config(cfg, "ernie.json")))
    has(flags, { ["--rotary-interleaved"] = true, ["--swiglu"] = true, ["--disable-bias-linear"] = true,
      ["--kv-channels"] = "128", ["--rotary-base"] = "500000" }, { "--untie-embeddings-and-output-weights" })
    cfg.use_bias = true
    flags = script((hf.from_config(cfg, "ernie.json")))
    has(flags, { ["--rotary-interleaved"] = true }, { "--disable-bias-linear" })
  end)

  it("hunyuan: a fractional RoPE base from 1e4 on written rounded, with a NOTE", function()
    local m = hf.from_config({ model_type = "hunyuan_v1_dense", hidden_size = 1024, intermediate_size = 4096,
      num_hidden_layers = 4, num_attention_heads = 8, num_key_value_heads = 8, head_dim = 128, vocab_size = 32000,
      rope_theta = 10000.0, rope_scaling = { alpha = 1000.0, factor = 1.0, type = "dynamic" } }, "hy.json")
    local flags, notes = script(m)
    assert.are.equal(tostring(math.floor(10000 * 1000 ^ (128 / 126) + 0.5)), flags["--rotary-base"])
    local text = table.concat(notes, "\n")
    assert.truthy(text:find("written as --rotary-base 11158840 (type=int", 1, true), text)
    m.rope_theta = 1000.5
    flags, notes = script(m)
    assert.is_nil(flags["--rotary-base"])
    assert.truthy(table.concat(notes, "\n"):find("rope_theta 1000.5: --rotary-base takes an integer", 1, true))
  end)

  -- both probabilities written as the estimate ran them: with dropout on
  -- (the framework's default here) and none given, Megatron's 0.1 each;
  -- given (a config.json's own, as Ling 1.x's attention_dropout alone),
  -- each as given
  it("dropout: both probabilities written, Megatron's 0.1 by default, the policy's own when given", function()
    local flags = script(load("llama-3.1-8b"))
    assert.are.equal("0.1", flags["--attention-dropout"])
    assert.are.equal("0.1", flags["--hidden-dropout"])
    flags = script(load("llama-3.1-8b"), nil, { attention_dropout = 0.1, hidden_dropout = 0 })
    assert.are.equal("0.1", flags["--attention-dropout"])
    assert.are.equal("0", flags["--hidden-dropout"])
    flags = script(load("llama-3.1-8b"), nil, { dropout = false })
    assert.are.equal("0", flags["--attention-dropout"])
    assert.are.equal("0", flags["--hidden-dropout"])
  end)

  -- TorchTitan's models (@ b5bcd76c and its releases), MindFormers'
  -- LlamaConfig (@ fd4deebc) and AutoModel's recipe (@ 36044ad3: no
  -- dropout key) have no dropout: an estimate with it gets a NOT
  -- EXPRESSIBLE line in those files, one without it none
  it("dropout: TorchTitan, MindFormers and AutoModel files say they train without it", function()
    local dir = H.tmpdir()
    local function notes(set, extra)
      local out = dir .. "/" .. set:gsub("[^%w]", "_") .. (extra and "_rel" or "")
      local args = { "run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1x8", "--set", set,
        "--out", out, "-k", "1", "-q" }
      if extra then args[#args + 1] = extra end
      local code, _, err = H.apsearch(table.unpack(args))
      assert.are.equal(0, code, err)
      local tt = H.read(out .. "/launch/rank1_torchtitan." .. (extra and "toml" or "py"))
      return tt, H.read(out .. "/launch/rank1_mindformers.yaml"), H.read(out .. "/launch/rank1_automodel.yaml")
    end
    local tt, ms, am = notes("training.dropout=true")
    assert.matches("# NOT EXPRESSIBLE in AutoModel: dropout (attention 0.1, hidden 0.1) as estimated: this file " ..
      "sets no dropout", am, 1, true)
    assert.matches("# NOT EXPRESSIBLE in TorchTitan: dropout (attention 0.1, hidden 0.1) as estimated: " ..
      "TorchTitan's llama3, qwen3, deepseek_v3 and gpt_oss models have no dropout", tt, 1, true)
    assert.matches("# NOT EXPRESSIBLE in MindFormers: dropout (attention 0.1, hidden 0.1) as estimated: " ..
      "MindFormers' LlamaConfig has no dropout key", ms, 1, true)
    tt = notes("training.hidden_dropout=0.2", "--torchtitan-version=v0.2.2")
    assert.matches("# NOT EXPRESSIBLE in TorchTitan v0.2.2: dropout (attention 0, hidden 0.2)", tt, 1, true)
    tt, ms, am = notes("training.dropout=false")
    assert.is_nil(tt:find("dropout", 1, true))
    assert.is_nil(ms:find("dropout", 1, true))
    assert.is_nil(am:find("dropout", 1, true))
  end)

  it("MindFormers writes no LlamaConfig architecture for a model of other weights (a breaker's pass)", function()
    local mindspore = require "apsearch.launch.mindspore"
    local function whats(m)
      local out = {}
      for _, e in ipairs(mindspore.shape_lacks(m)) do out[#out + 1] = e.what end
      return table.concat(out, ", ")
    end
    -- it wrote 80 equal Llama layers (about 70B) for the 49.9B NAS model,
    -- 16 attention layers for LFM2's 10 short convolutions and 6
    -- attention layers, and Jamba's Mamba-1 mixers as attention
    assert.are.equal("heterogeneous (NAS) layers", whats(load("llama-3.3-nemotron-super-49b")))
    assert.are.equal("Q/K norms, short-convolution layers", whats(load("lfm2-1.2b")))
    local jamba = load("jamba-1.5-mini")
    assert.truthy(whats(jamba):find("Mamba-1 layers", 1, true), whats(jamba))
    -- OLMoE's Q/K norms over the full width are weights LlamaConfig does
    -- not build; Llama itself has none of these
    assert.are.equal("Q/K norms", whats(load("olmoe-1b-7b-0924")))
    assert.are.equal("", whats(load("llama-3.1-8b")))
    -- a Gemma GeGLU MLP has SwiGLU's three matrices (another activation,
    -- the same weights): said, written
    assert.is_nil(whats(load("gemma-3-1b-pt")):find("MLP", 1, true))
  end)
end)
