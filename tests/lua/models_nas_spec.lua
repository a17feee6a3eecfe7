-- tests/lua/models_nas_spec.lua -- Llama-Nemotron NAS (model_type
-- nemotron-nas, DeciLM's block_configs) read as Megatron-Core's
-- heterogeneous config reads it (megatron/core/transformer/heterogeneous/
-- heterogeneous_config.py @ d98e8a64) and priced per pipeline rank by its
-- own layers (src/core/nas.c): the count layer by layer, the patterns, the
-- refusals that name the block and key, and the Megatron flag.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local FILE = H.ROOT .. "/examples/models/llama-3.3-nemotron-super-49b.json"

local function config() return cjson.decode(H.read(FILE)) end

describe("Llama-Nemotron NAS", function()
  -- h 8192, 80 layers, 64 heads of 128; 49 layers with GQA of 8 query
  -- groups (n_heads_in_group 8): q and o 8192 x 8192, k and v 8192 x
  -- 1024, and their norm; every layer's SwiGLU MLP of its width,
  -- ffn_mult_to_intermediate_size(m, 8192) = int(2 m 8192 / 3) rounded up
  -- to 256: 5.25 -> 28672 (49 layers), 1.3125 -> 7168 (10), 1.0 -> 5632
  -- (8), 2.625 -> 14336 (6), 0.5 -> 2816 (6), 3.28125 -> 17920 (1), and
  -- its norm; untied embedding and output layer 128256 x 8192; the final
  -- norm.  The card: 49.9B.
  it("counts 49,867,145,216 parameters layer by layer", function()
    local h = 8192
    assert.are.same({ 28672, 7168, 5632, 14336, 2816, 17920 }, { hf.nas_ffn_width(5.25, h),
      hf.nas_ffn_width(1.3125, h), hf.nas_ffn_width(1.0, h), hf.nas_ffn_width(2.625, h), hf.nas_ffn_width(0.5, h),
      hf.nas_ffn_width(3.28125, h) })
    local attn = 2 * h * h + 2 * h * 1024
    local widths = 49 * 28672 + 10 * 7168 + 8 * 5632 + 6 * 14336 + 6 * 2816 + 17920
    local total = 49 * (attn + h) + 3 * h * widths + 80 * h + 2 * 128256 * h + h
    assert.are.equal(49867145216, total)
    local m = hf.load(FILE)
    local attn_layers = select(2, m.nas_attention_pattern:gsub("A", ""))
    assert.are.same({ 80, 80, 49, 28672, 8 }, { #m.nas_attention_pattern, #m.nas_ffn_pattern, attn_layers,
      m.ffn_hidden_size, m.num_query_groups })
    assert.are.equal(total, core.model_params(m).total)
  end)

  it("prices each pipeline rank by its own layers and writes Megatron's config flag", function()
    -- TP 4 x PP 4 over 20 layers each (Megatron's even split).  Rank 0
    -- holds layers 1-20: attention on 17 ("AAAAAA--AAA-AAAAAAAA"), MLPs of
    -- 14336 x 3, 28672 x 16 and 17920 (519,680 in all): per TP rank
    -- attention 17 x 150,994,944 / 4, MLPs 3 x 8192 x 519,680 / 4, 37
    -- norms of 8192 whole, the embedding 128512 (the vocabulary padded to
    -- 128 x TP) x 8192 / 4 = 4,098,138,112
    local code, out = H.apsearch("estimate", "--model", FILE, "--cluster", "h100-sxm-80gb:4x8", "--strategy",
      "tp_degree=4,pp_degree=4,dp_degree=2,micro_batch_size=1", "--format", "json")
    assert.are.equal(1, code, out) -- the first ranks over the memory limit
    local st = cjson.decode(out).estimate.stages
    assert.are.equal(17 * 150994944 / 4 + 3 * 8192 * 519680 / 4 + 37 * 8192 + 128512 * 8192 / 4, st[1].params)
    assert.is_true(st[3].params < st[1].params / 2) -- layers 41-60: 2 attention layers, narrow MLPs
    local dir = H.tmpdir() .. "/o"
    code = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:4x8", "--out", dir, "-k", "1", "--quiet")
    assert.are.equal(0, code)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    -- absolute, as the cluster may start the script anywhere
    assert.truthy(sh:find("%-%-heterogeneous%-layers%-config%-path /[^\n]*examples/models/" ..
      "llama%-3%.3%-nemotron%-super%-49b%.json\n"), sh)
    assert.matches("heterogeneous layers", H.read(dir .. "/launch/rank1_torchtitan.py"), 1, true)
    -- TorchTitan cannot build them: refused as priced for Megatron only
    code, _, out = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:4x8", "--set",
      "training.framework=fsdp2")
    assert.matches("priced for Megatron-LM only", out .. _, 1, true)
  end)

  -- (blocks named by their 0-based JSON index)
  it("refuses what Megatron's heterogeneous config does not build, naming the block", function()
    local c = config()
    c.block_configs[3].attention.n_heads_in_group = 4
    assert.matches("m.json: block_configs[2].attention: 16 query groups where earlier layers have 8",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    c = config()
    c.block_configs[5].ffn.replace_with_linear = true
    assert.matches("block_configs[4].ffn.replace_with_linear: an MLP replaced by a linear layer",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    c = config()
    c.block_configs[2].attention.window_length = 4096
    assert.matches("block_configs[1].attention.window_length", H.err_of(hf.from_config, c, "m.json"), 1, true)
    -- what Megatron reads as true is not taken as false
    c = config()
    c.block_configs[4].attention.no_op = "true"
    assert.matches('block_configs[3].attention.no_op: expected true or false (got "true")',
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    -- a multiplier past any integer width is refused, not read as no MLP
    c = config()
    c.block_configs[4].ffn.ffn_mult = 1e30
    assert.matches("block_configs[3].ffn.ffn_mult: expected a multiplier giving a width in [1, 2^24]",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    -- Megatron asserts a no-op layer has no query groups
    c = config()
    c.block_configs[7].attention.n_heads_in_group = 8 -- index 6 is a no-op layer
    assert.matches("block_configs[6].attention.n_heads_in_group: expected null on a no_op layer",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
    c = config()
    c.block_configs[1].attention.n_heads_in_group = 3
    assert.matches("block_configs[0].attention.n_heads_in_group: expected a divisor of num_attention_heads = 64",
      H.err_of(hf.from_config, c, "m.json"), 1, true)
  end)

  it("takes a block's ffn_hidden_size before its ffn_mult, as MLPConfig does", function()
    local c = config()
    c.block_configs[4].ffn.ffn_hidden_size = 4096 -- index 3: 5.25 -> 28672
    assert.are.equal(49867145216 - 3 * 8192 * (28672 - 4096), core.model_params(hf.from_config(c, "m.json")).total)
  end)
end)
