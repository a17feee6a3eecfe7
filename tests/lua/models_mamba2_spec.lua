-- tests/lua/models_mamba2_spec.lua -- pure Mamba-2 models (model_type
-- mamba2; transformers configuration_mamba2.py @ f2a39d49 Mamba2Config,
-- modeling_mamba2.py Mamba2Block / Mamba2Mixer): every layer one RMSNorm
-- and a Mamba-2 mixer with its gated RMSNorm, an all-M hybrid pattern,
-- which Megatron-LM's pretrain_hybrid.py builds.

local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local copy, err_of = H.copy, H.err_of

-- mistralai/Mamba-Codestral-7B-v0.1's shape keys
local CODESTRAL = {
  architectures = { "Mamba2ForCausalLM" }, model_type = "mamba2", chunk_size = 256, conv_kernel = 4, expand = 2,
  head_dim = 64, hidden_act = "silu", hidden_size = 4096, layer_norm_epsilon = 1e-5, n_groups = 8, num_heads = 128,
  num_hidden_layers = 64, residual_in_fp32 = true, rms_norm = true, state_size = 128, tie_word_embeddings = false,
  use_bias = false, use_conv_bias = true, vocab_size = 32768,
}

describe("mamba2 import", function()
  -- per layer (Mamba2Mixer, d = 2 x 4096 = 128 x 64 = 8192, conv_dim
  -- 8192 + 2 x 8 x 128 = 10240): in_proj 4096 x (8192 + 10240 + 128) =
  -- 76,021,760, conv1d 10240 x 4 + 10240 = 51,200, dt_bias, A_log, D
  -- 3 x 128, the gated norm 8192, out_proj 8192 x 4096 = 33,554,432, the
  -- block's norm 4096: 109,640,064; 64 layers 7,016,964,096; embedding and
  -- lm_head 2 x 32768 x 4096; norm_f 4096.  Published: 7,285,403,648
  -- (Mamba-Codestral-7B's model card).
  it("Mamba-Codestral-7B: 7,285,403,648 parameters", function()
    local m = hf.from_config(copy(CODESTRAL), "c.json")
    assert.are.same({ 64, string.rep("M", 64), 128, 64, 128, 8, 4, 256 },
      { m.num_layers, m.hybrid_layer_pattern, m.mamba_num_heads, m.mamba_head_dim, m.mamba_state_dim,
        m.mamba_num_groups, m.mamba_conv_kernel, m.mamba_chunk_size })
    -- no attention or MLP layer: the mixer's heads and groups, Megatron's
    -- default FFN width (4 x hidden_size), none priced
    assert.are.same({ 128, 8, 64, 16384 }, { m.num_attention_heads, m.num_query_groups, m.head_dim,
      m.ffn_hidden_size })
    local c = core.model_params(m)
    assert.are.same({ 64, 109640064, 0, 0 }, { c.mamba_layers, c.per_mamba_layer, c.attention_layers, c.mlp_layers })
    assert.are.equal(7285403648, c.total)
  end)

  it("refuses a width the mixer cannot reshape, and biases", function()
    local c = copy(CODESTRAL)
    c.head_dim = 32
    assert.are.equal("c.json: expand: expected expand x hidden_size = num_heads x head_dim = 4096 (got 2)",
      err_of(hf.from_config, c, "c.json"))
    c = copy(CODESTRAL)
    c.use_bias = true
    assert.are.equal("c.json: use_bias: expected false (biases are not modelled on a hybrid model) (got true)",
      err_of(hf.from_config, c, "c.json"))
    -- the core's checks name the file's own keys (n_groups, not
    -- num_key_value_heads); a null is refused, not read as the default
    c = copy(CODESTRAL)
    c.n_groups = 3
    assert.are.equal("c.json: n_groups (model.num_query_groups): 3 does not divide num_attention_heads 128",
      err_of(hf.from_config, c, "c.json"))
    c = copy(CODESTRAL)
    c.state_size = require("cjson").null
    assert.are.equal("c.json: state_size: null is not a value here (Mamba2Config computes with it) (got null)",
      err_of(hf.from_config, c, "c.json"))
  end)
end)

describe("mamba2 search space", function()
  -- no attention, MLP or MoE layer: Megatron's selective recompute modules
  -- name none of its layers, so the full space leaves "selective" out (it
  -- would rank a copy of "none")
  it("offers none and full recompute, not selective", function()
    local m = hf.from_config(copy(CODESTRAL), "c.json")
    local function modes()
      return require("apsearch.defaults").search_space(m,
        { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }, { framework = "megatron" })
        .layer_recompute
    end
    assert.are.same({ "none", "full" }, modes())
    m.hybrid_layer_pattern = "M*" .. string.rep("M", 62)
    assert.are.same({ "none", "selective", "full" }, modes())
  end)
end)

describe("mamba2 inspect", function()
  -- the attention and MLP fields of a model without such layers (the
  -- mixer's heads, Megatron's default FFN width) are not shown as if they
  -- were the model's; the JSON keeps the table the estimate reads
  it("shows the Mamba-2 fields, not attention or MLP ones", function()
    local dir = H.tmpdir()
    H.write(dir .. "/c.json", require("cjson").encode(CODESTRAL))
    local code, out, err = H.apsearch("inspect", dir .. "/c.json")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("\nmamba_num_heads +128\n", 1), out)
    for _, f in ipairs({ "num_attention_heads", "num_query_groups", "ffn_hidden_size", "mlp " }) do
      assert.is_nil(out:find("\n" .. f, 1, true), f)
    end
    code, out = H.apsearch("inspect", dir .. "/c.json", "--format", "json")
    assert.are.equal(0, code)
    assert.are.equal(16384, require("cjson").decode(out).model.ffn_hidden_size)
  end)
end)

describe("mamba2 Megatron-LM script", function()
  -- MambaMixer fixes chunk_size = 128 and d_conv = 4 (mamba_mixer.py @
  -- d98e8a64): another chunk computes the same function (a NOTE, the job
  -- estimated); another conv width is another model (NOT EXPRESSIBLE)
  -- rank 1's Megatron-LM script of a run on one H100 host of config c
  local function script(dir, name, c)
    H.write(dir .. "/" .. name .. ".json", require("cjson").encode(c))
    local code, _, err = H.apsearch("run", "--model", dir .. "/" .. name .. ".json", "--cluster", "h100-sxm-80gb:1",
      "-q", "--top-k", "1", "--out", dir .. "/" .. name)
    assert.are.equal(0, code, err)
    return H.read(dir .. "/" .. name .. "/launch/rank1_megatron.sh")
  end

  it("notes Codestral's chunk of 256 and refuses to call another conv width the same job", function()
    local dir = H.tmpdir()
    local sh = script(dir, "c", CODESTRAL)
    assert.truthy(sh:find("# NOTE: mamba_chunk_size 256: MambaMixer fixes chunk_size = 128", 1, true), sh)
    assert.is_nil(sh:find("NOT EXPRESSIBLE", 1, true), sh)
    local c = copy(CODESTRAL)
    c.conv_kernel = 3
    sh = script(dir, "k", c)
    assert.truthy(sh:find("NOT EXPRESSIBLE in Megatron-LM: mamba_conv_kernel 3: MambaMixer fixes d_conv = 4", 1, true),
      sh)
  end)
end)
