-- tests/lua/models_lfm2_spec.lua -- LFM2 and LFM2.5 (model_type lfm2):
-- gated short convolutions beside GQA attention, read as transformers
-- builds them (models/lfm2 @ 0096ba4f, configuration_lfm2.py @ 05cd1ec1)
-- and priced for NeMo AutoModel (src/core/gdn.c): the published counts,
-- the MLP width rule, the layer kinds, the refusals, the search space and
-- the launch files.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

-- LiquidAI's LFM2 config.json keys (examples/models/lfm2-1.2b.json and
-- the same keys at the 350M and 700M shapes, typed: no unmodified copy of
-- those two files was reachable); the older files give full_attn_idxs
-- (0-based) and block_ff_dim, which Lfm2Config reads before
-- intermediate_size
local function config(h, heads, ff)
  return {
    architectures = { "Lfm2ForCausalLM" }, model_type = "lfm2", hidden_size = h, num_attention_heads = heads,
    num_heads = heads, num_key_value_heads = 8, num_hidden_layers = 16, vocab_size = 65536,
    block_ff_dim = ff, block_auto_adjust_ff_dim = true, block_ffn_dim_multiplier = 1.0, block_multiple_of = 256,
    conv_L_cache = 3, conv_bias = false, full_attn_idxs = { 2, 5, 8, 10, 12, 14 }, norm_eps = 1e-5,
    rope_theta = 1000000.0, max_position_embeddings = 128000,
  }
end

-- One layer by hand (transformers Lfm2DecoderLayer): a short convolution
-- (in_proj h x 3h, conv h x 3, out_proj h x h) or attention (q, o h x h;
-- k, v h x 512 for 8 KV heads of 64; q/k norms 2 x 64), the SwiGLU MLP
-- 3 h f, two norms 2h; tied embedding 65536 h; the final norm
-- (Lfm2Model.embedding_norm) h.
local function by_hand(h, f)
  local conv = 3 * h * h + 3 * h + h * h
  local attn = 2 * h * h + 2 * h * 512 + 128
  return 65536 * h + 10 * conv + 6 * attn + 16 * (3 * h * f + 2 * h) + h
end

describe("LFM2", function()
  -- LiquidAI's model cards (huggingface.co/LiquidAI/LFM2-350M, "Model
  -- details": one table for the family): LFM2-350M 354,483,968, LFM2-700M
  -- 742,489,344, LFM2-1.2B 1,170,340,608 parameters, 16 layers (10 conv +
  -- 6 attn); MLP widths 2/3 of block_ff_dim rounded up to 256: 6656 ->
  -- 4608, 10240 -> 6912, 12288 -> 8192
  it("counts the published totals of LFM2-350M, -700M and -1.2B", function()
    for _, c in ipairs({ { 1024, 16, 6656, 4608, 354483968 }, { 1536, 24, 10240, 6912, 742489344 },
                         { 2048, 32, 12288, 8192, 1170340608 } }) do
      assert.are.equal(c[5], by_hand(c[1], c[4]))
      local m = hf.from_config(config(c[1], c[2], c[3]), "lfm2.json")
      assert.are.same({ "short_conv", "LLALLALLALALALAL", 3, c[4], true, true }, { m.linear_attention,
        m.linear_attention_pattern, m.linear_conv_kernel_dim, m.ffn_hidden_size, m.qk_norm, m.tie_word_embeddings })
      assert.are.equal(c[5], core.model_params(m).total)
    end
    local m = H.example_model("lfm2-1.2b")
    assert.are.equal(1170340608, core.model_params(m).total)
  end)

  -- The same table: LFM2-2.6B 2,569,272,320 parameters, 30 layers (22 conv
  -- + 8 attn), h 2048; its MLP of 10752 as given (block_auto_adjust_ff_dim
  -- false, as LFM2.5-2.6B's config gives it). Where the 8 attention layers
  -- sit does not change the count (the positions here are not the
  -- checkpoint's).
  it("counts LFM2-2.6B's published 2,569,272,320", function()
    local h, f = 2048, 10752
    local conv = 3 * h * h + 3 * h + h * h
    local attn = 2 * h * h + 2 * h * 512 + 128
    local total = 65536 * h + 22 * conv + 8 * attn + 30 * (3 * h * f + 2 * h) + h
    assert.are.equal(2569272320, total)
    local c = config(h, 32, nil)
    c.block_ff_dim, c.intermediate_size, c.block_auto_adjust_ff_dim = nil, f, false
    c.num_hidden_layers, c.full_attn_idxs = 30, { 2, 6, 10, 14, 18, 21, 24, 27 }
    local m = hf.from_config(c, "lfm2-2.6b.json")
    assert.are.same({ f, 8 }, { m.ffn_hidden_size, select(2, m.linear_attention_pattern:gsub("A", "")) })
    assert.are.equal(total, core.model_params(m).total)
  end)

  -- Lfm2MLP @ 0096ba4f: int(2 f / 3) with block_auto_adjust_ff_dim, then
  -- with a multiplier int(mult f) rounded up to block_multiple_of; no
  -- multiplier, no rounding
  it("builds the MLP width as Lfm2MLP does", function()
    local function w(t) return hf.lfm2_ffn_width(t, "x.json") end
    assert.are.equal(8192, w({ block_ff_dim = 12288, intermediate_size = 8192, block_auto_adjust_ff_dim = true,
      block_ffn_dim_multiplier = 1.0, block_multiple_of = 256 }))
    assert.are.equal(4608, w({ intermediate_size = 6656, block_auto_adjust_ff_dim = true,
      block_ffn_dim_multiplier = 1.0, block_multiple_of = 256 }))
    assert.are.equal(4437, w({ intermediate_size = 6656, block_auto_adjust_ff_dim = true,
      block_ffn_dim_multiplier = cjson.null, block_multiple_of = 256 }))
    assert.are.equal(10752, w({ intermediate_size = 10752, block_auto_adjust_ff_dim = false }))
    -- 1.5 x 8192 = 12288, a multiple of 256; 1.3 x 8192 = 10649.6 -> 10649 -> 10752
    assert.are.equal(10752, w({ block_ff_dim = 12288, block_auto_adjust_ff_dim = true,
      block_ffn_dim_multiplier = 1.3, block_multiple_of = 256 }))
  end)

  it("reads layer_types, untied embeddings, and refuses what it does not model", function()
    local c = config(1024, 16, 6656)
    c.full_attn_idxs = nil
    c.layer_types = { "conv", "full_attention", "conv", "conv", "conv", "conv", "conv", "conv", "conv", "conv",
      "conv", "conv", "conv", "conv", "conv", "full_attention" }
    c.tie_embedding = false
    local m = hf.from_config(c, "l.json")
    assert.are.equal("LALLLLLLLLLLLLLA", m.linear_attention_pattern)
    assert.is_false(m.tie_word_embeddings)
    local tied = by_hand(1024, 4608) + 4 * (4 * 1024 * 1024 + 3 * 1024 - (2 * 1024 * 1024 + 2 * 1024 * 512 + 128))
    assert.are.equal(tied + 65536 * 1024, core.model_params(m).total)
    c.layer_types[3] = "mamba"
    assert.matches("l.json: layer_types[2]: expected \"conv\" or \"full_attention\" (got \"mamba\")",
      H.err_of(hf.from_config, c, "l.json"), 1, true)
    c = config(1024, 16, 6656)
    c.conv_bias = true
    assert.matches("NotImplemented: b.json: conv_bias: LFM2's short-convolution biases",
      H.err_of(hf.from_config, c, "b.json"), 1, true)
    c = config(1024, 16, 6656)
    c.full_attn_idxs = { 2, 16 }
    assert.matches("full_attn_idxs[1]: expected a layer in [0, 15]", H.err_of(hf.from_config, c, "i.json"), 1, true)
    -- every layer attention (Lfm2Config without layer_types or
    -- full_attn_idxs): still transformers' LFM2 under AutoModel, refused
    c = config(1024, 16, 6656)
    c.full_attn_idxs = nil
    assert.matches("NotImplemented: a.json: full_attn_idxs: an LFM2 model without short-convolution layers",
      H.err_of(hf.from_config, c, "a.json"), 1, true)
    -- Lfm2MLP's `if config.block_auto_adjust_ff_dim:`: null skips the 2/3
    c = config(1024, 16, 6656)
    c.block_auto_adjust_ff_dim = cjson.null
    assert.are.equal(6656, hf.from_config(c, "n.json").ffn_hidden_size)
    c.block_ff_dim = cjson.null
    assert.matches("n.json: block_ff_dim: null is not a value here (Lfm2Config computes with it)",
      H.err_of(hf.from_config, c, "n.json"), 1, true)
    -- kwargs.get("theta", kwargs.get("rope_theta")): theta first
    c = config(1024, 16, 6656)
    c.theta = 5000.0
    assert.are.equal(5000.0, hf.from_config(c, "t.json").rope_theta)
    c = config(1024, 16, 6656)
    c.block_ffn_dim_multiplier = 1e20
    assert.matches("block_ffn_dim_multiplier: gives an MLP width of 4.437e+23, outside [1, 2147483648]",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    -- LFM2's attention layers: GQA (experts are LFM2-MoE's, below)
    m = hf.from_config(config(1024, 16, 6656), "l.json")
    m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.head_dim = 512, 128, 64, 128, 192
    assert.matches("model.kv_lora_rank: short convolutions beside multi-latent attention are not modelled",
      H.err_of(core.model_params, m), 1, true)
    -- a hand-written model gives the short convolution no heads
    m = hf.from_config(config(1024, 16, 6656), "l.json")
    m.linear_num_key_heads = 4
    assert.matches("model.linear_num_key_heads: a gated short convolution (linear_attention = short_conv) has " ..
      "no heads", H.err_of(core.model_params, m), 1, true)
  end)

  it("is searched as NeMo AutoModel runs transformers' LFM2: FSDP2, no TP, PP or CP", function()
    local path = "examples/models/lfm2-1.2b.json"
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8", "--format", "json")
    assert.are.equal(0, code, err)
    assert.matches("a built policy uses framework = automodel", err, 1, true)
    assert.matches("tp_degree = {1}, cp_degree = {1}, pp_degree = {1}", err, 1, true)
    local doc = cjson.decode(out)
    assert.is_true(doc.inputs.training.hf_eager_layer)
    local top = doc.top_k_strategies[1]
    assert.are.same({ 1, 1, 1 }, { top.tp_degree, top.pp_degree, top.cp_degree })
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8",
      "--set", "training.framework=megatron")
    assert.are.equal(2, code)
    assert.matches("training.framework: lfm2-1.2b has LFM2's gated short convolutions, priced for NeMo AutoModel " ..
      "only", err, 1, true)
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8", "--launchable", "torchtitan")
    assert.are.equal(2, code)
    assert.matches("lfm2-1.2b's gated short convolutions are built by the automodel launch file only", err, 1, true)
    code, out = H.apsearch("estimate", "--model", path, "--cluster", "h100-sxm-80gb:1x8",
      "--strategy", "tp_degree=2,fsdp_degree=4")
    assert.matches("shards the LM head alone", out, 1, true)
  end)

  it("writes AutoModel's file without model.backend and says the others are not this model", function()
    local dir = H.tmpdir() .. "/out"
    local code, _, err = H.apsearch("run", "--model", "examples/models/lfm2-1.2b.json", "--cluster",
      "h100-sxm-80gb:2x8", "--out", dir, "-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    local yaml = H.read(dir .. "/launch/rank1_automodel.yaml")
    assert.matches("examples/models/lfm2-1.2b.json  # the config.json of " ..
      "LiquidAI/LFM2-1.2B", yaml, 1, true)
    assert.matches("attn_implementation: flash_attention_2", yaml, 1, true)
    assert.is_nil(yaml:find("backend:\n", 1, true))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.matches("# NOT WRITTEN: LFM2's gated short convolutions on the linear layers (LLALLALLALALALAL", sh, 1, true)
    assert.is_nil(sh:find("--experimental-attention-variant", 1, true))
    local py = H.read(dir .. "/launch/rank1_torchtitan.py")
    assert.matches("NOT EXPRESSIBLE in TorchTitan: LFM2's gated short convolutions", py, 1, true)
    assert.is_nil(py:find("Gated DeltaNet", 1, true))
    assert.is_nil(py:find("Kimi Delta Attention", 1, true))
  end)
end)

-- LFM2-MoE (model_type lfm2_moe; transformers models/lfm2_moe/
-- modeling_lfm2_moe.py @ 772df24b): LFM2's layers, the first
-- num_dense_layers MLPs dense, the others Lfm2MoeSparseMoeBlock.
describe("LFM2-MoE", function()
  local function path() return H.ROOT .. "/examples/models/lfm2-8b-a1b.json" end
  local function cfg()
    local f = assert(io.open(path(), "rb"))
    local c = cjson.decode(f:read("a"))
    f:close()
    return c
  end

  -- By hand from the modeling file: embedding 65536 h (tied); an attention
  -- layer q, o h x h, k, v h x 512 (8 KV heads of 64), q/k norms 2 x 64;
  -- a conv layer in_proj h x 3h, conv h x 3, out_proj h x h; two norms 2h
  -- a layer; a dense MLP 3 h 7168; an MoE block E x 3 h f experts, the
  -- E x h gate and the E expert_bias buffer the checkpoint holds; the
  -- final norm (embedding_norm) h. Active: top_k of the E experts.
  local function by_hand(L, attn_layers, E, f, k)
    local h = 2048
    local attn, conv = 2 * h * h + 2 * h * 512 + 128, 3 * h * h + 3 * h + h * h
    local base = 65536 * h + attn_layers * attn + (L - attn_layers) * conv + L * 2 * h + h + 2 * 3 * h * 7168
    return base + (L - 2) * (E * 3 * h * f + E * h + E), base + (L - 2) * (k * 3 * h * f + E * h + E)
  end

  -- LiquidAI's card (huggingface.co/LiquidAI/LFM2-8B-A1B, "Model details"):
  -- "Total parameters 8.3B, Active parameters 1.5B", 24 layers (18 conv +
  -- 6 attn), 32 experts, top 4
  it("counts LFM2-8B-A1B: 8,339,930,560 parameters, 1,557,740,992 active (the card's 8.3B and 1.5B)", function()
    local total, active = by_hand(24, 6, 32, 1792, 4)
    assert.are.same({ 8339930560, 1557740992 }, { total, active })
    local m = hf.load(path())
    local p = core.model_params(m)
    assert.are.same({ total, active }, { p.total, p.active })
    assert.are.equal("8.3", ("%.1f"):format(p.total / 1e9))
    assert.are.equal("1.5", ("%.1f"):format(math.floor(p.active / 1e8) / 10)) -- the card cuts 1.557 to 1.5
    assert.are.same({ "short_conv", "LLALLLALLLALLLALLLALLALL", 2, 32, 4, 1792, true },
      { m.linear_attention, m.linear_attention_pattern, m.moe_first_dense_layers, m.num_experts,
        m.experts_per_token, m.moe_ffn_hidden_size, m.moe_router_bias })
    assert.are.equal(1000000.0, m.rope_theta)
  end)

  -- LiquidAI's LFM2-24B-A2B announcement: "24B total parameters, 2.3B
  -- active", 40 layers (10 attention), 64 experts of width 1536, top 4,
  -- the 8B's hidden size and attention, two dense first layers (its dense
  -- width assumed the 8B's: no config.json of it was reachable)
  it("counts LFM2-24B-A2B's shape: 23,787,038,336 parameters, 2,270,258,816 active (24B and 2.3B)", function()
    local c = cfg()
    c.num_hidden_layers, c.num_experts, c.moe_intermediate_size = 40, 64, 1536
    c.layer_types = {}
    for i = 1, 40 do c.layer_types[i] = (i % 4 == 3) and "full_attention" or "conv" end
    local total, active = by_hand(40, 10, 64, 1536, 4)
    assert.are.same({ 23787038336, 2270258816 }, { total, active })
    local p = core.model_params(hf.from_config(c, "24b.json"))
    assert.are.same({ total, active }, { p.total, p.active })
    assert.are.same({ "24", "2.3" }, { ("%.0f"):format(p.total / 1e9), ("%.1f"):format(p.active / 1e9) })
  end)

  it("reads the router as Lfm2MoeSparseMoeBlock does and refuses what the class cannot build", function()
    local c = cfg()
    c.use_expert_bias, c.norm_topk_prob = false, false
    local m = hf.from_config(c, "x.json")
    assert.is_true(m.moe_router_sigmoid)
    assert.is_nil(m.moe_router_bias)
    assert.is_true(m.moe_router_pre_softmax) -- weights not renormalised over the top k
    c = cfg()
    c.layer_types = nil
    assert.matches("x.json: layer_types: required key is missing: Lfm2MoeDecoderLayer indexes config.layer_types",
      H.err_of(hf.from_config, c, "x.json"), 1, true)
    c = cfg()
    c.num_dense_layers = 24
    assert.matches("x.json: num_dense_layers: no layer would have experts (num_hidden_layers = 24) (got 24)",
      H.err_of(hf.from_config, c, "x.json"), 1, true)
    c = cfg()
    c.conv_bias = true
    assert.matches("conv_bias: LFM2's short-convolution biases", H.err_of(hf.from_config, c, "x.json"), 1, true)
    c = cfg()
    c.num_experts = cjson.null
    assert.matches("x.json: num_experts:", H.err_of(hf.from_config, c, "x.json"), 1, true)
    c = cfg()
    c.conv_bias = "false"
    assert.matches('x.json: conv_bias: expected true or false (got "false")', H.err_of(hf.from_config, c, "x.json"),
      1, true)
    c = cfg()
    c.tie_embedding = "yes"
    assert.matches('x.json: tie_embedding: expected true or false (got "yes")',
      H.err_of(hf.from_config, c, "x.json"), 1, true)
    -- a null is None in Lfm2MoeConfig: use_expert_bias None is false there
    c = cfg()
    c.use_expert_bias = cjson.null
    assert.matches("x.json: use_expert_bias: null is not a value here (Lfm2MoeConfig computes with it)",
      H.err_of(hf.from_config, c, "x.json"), 1, true)
    -- another class named: that class is what transformers and AutoModel build
    c = cfg()
    c.architectures = { "Qwen3MoeForCausalLM" }
    assert.matches('x.json: architectures: expected ["Lfm2MoeForCausalLM"] for model_type lfm2_moe (got ' ..
      '{"Qwen3MoeForCausalLM"})', H.err_of(hf.from_config, c, "x.json"), 1, true)
    c = cfg()
    c.tie_embedding = false
    local p = core.model_params(hf.from_config(c, "x.json"))
    assert.are.equal(8339930560 + 65536 * 2048, p.total) -- an untied lm_head
  end)

  it("is searched as AutoModel trains transformers' class: FSDP2 without expert parallelism", function()
    local code, out, err = H.apsearch("run", "--model", path(), "--cluster", "h100-sxm-80gb:1x8", "--format", "json")
    assert.are.equal(0, code, err)
    assert.matches("ep_degree = {1}, etp_degree = {1}", err, 1, true)
    local doc = cjson.decode(out)
    assert.is_true(doc.inputs.training.transformers_model)
    local top = doc.top_k_strategies[1]
    assert.are.same({ 1, 1, 1, 1, "allgather" }, { top.tp_degree, top.pp_degree, top.cp_degree, top.ep_degree,
      top.moe_token_dispatcher })
    code, out = H.apsearch("estimate", "--model", path(), "--cluster", "h100-sxm-80gb:1x8",
      "--strategy", "fsdp_degree=8,ep_degree=8,moe_token_dispatcher=allgather")
    assert.are.equal(1, code) -- not feasible
    assert.matches("automodel: ep_degree = 8; expert parallelism needs an MoE model of AutoModel's own", out, 1, true)
    -- AutoModel has no LFM2 of its own: saying it does is refused
    local err
    code, _, err = H.apsearch("run", "--model", path(), "--cluster", "h100-sxm-80gb:1x8",
      "--set", "training.transformers_model=false")
    assert.are.equal(2, code)
    assert.matches("training.transformers_model: LFM2 has no model of AutoModel's own", err, 1, true)
  end)
end)
