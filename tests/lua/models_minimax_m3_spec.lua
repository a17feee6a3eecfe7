-- tests/lua/models_minimax_m3_spec.lua -- MiniMax-M3 (model_type
-- minimax_m3) read as NeMo AutoModel builds its text model
-- (components/models/minimax_m3_vl/layers.py @ 00affc66): the held-out
-- config (tests/fixtures/heldout_configs) counted module by module, the
-- block-sparse attention's keys and indexer priced (src/core/msa.c),
-- refusals that name the key, and the launch notes.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

local FILE = "tests/fixtures/heldout_configs/MiniMaxAI--MiniMax-M3.json"

local function config()
  return cjson.decode(H.read(H.ROOT .. "/" .. FILE))
end

describe("MiniMax-M3", function()
  -- h 6144, 60 layers: attention q and o 6144 x 64 x 128 each, k and v
  -- 6144 x 4 x 128 each, per-head Gemma Q/K norms 2 x 128; the indexer of
  -- the 57 sparse layers index_q 6144 x 4 x 128, index_k 6144 x 128, two
  -- norms of 128; 2 norms of 6144 per layer; layers 1-3 a SwiGLU-OAI MLP
  -- of 12288, the other 57 128 experts of 3072 (top 4), a shared expert
  -- of 3072, the router 128 x 6144 and its routing bias of 128; untied
  -- embedding and lm_head of 200064 x 6144; the final norm.
  it("counts 426,174,572,928 parameters, 25,962,473,856 active", function()
    local attn = 2 * 6144 * 64 * 128 + 2 * 6144 * 4 * 128 + 2 * 128
    local indexer = 6144 * 4 * 128 + 6144 * 128 + 2 * 128
    local expert = 3 * 6144 * 3072
    local moe = 128 * expert + 3 * 6144 * 3072 + 128 * 6144 + 128
    local total = 60 * (attn + 2 * 6144) + 57 * indexer + 3 * 3 * 6144 * 12288 + 57 * moe +
      2 * 200064 * 6144 + 6144
    local active = total - 57 * 124 * expert
    assert.are.equal(426174572928, total)
    assert.are.equal(25962473856, active)
    local m = hf.from_config(config(), "m.json")
    assert.are.same({ 57, 4, 128, 128, 16, 1 }, { m.msa_layers, m.msa_index_heads, m.msa_index_dim,
      m.msa_block_size, m.msa_topk_blocks, m.msa_local_blocks })
    assert.are.same({ 128, 4, 3072, 3072, 12288, 3, 2.0 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.ffn_hidden_size, m.moe_first_dense_layers,
      m.moe_router_topk_scaling_factor })
    assert.are.same({ "quick_gelu", 1, 7.0 }, { m.glu_activation, m.glu_linear_offset, m.glu_clamp })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
    -- the example is the same file
    assert.are.same(pc, core.model_params((hf.load(H.ROOT .. "/examples/models/minimax-m3.json"))))
  end)

  -- S = 4096, blocks of 128, the top 16: the first 2048 queries attend
  -- every causal key (2048^2 / 2 pairs), each later one 15 blocks and its
  -- own up to itself (2048 x 15 x 128 + 16 x 128^2 / 2): 6,160,384 pairs,
  -- 1504 keys a query against the dense 2048.  Model FLOPs per sequence
  -- then differ from the same model attending densely by 3 x 4 S (2048 -
  -- 1504) a d on each of the 57 sparse layers, less the indexer's forward
  -- 2 S (index_q + index_k weights) + 2 S (S / 2) 4 x 128.
  it("prices the sparse layers' keys and the indexer's forward", function()
    local function flops(m)
      return H.model_flops(m, 8, 64, { dp_degree = 16, tp_degree = 4, sequence_parallel = true,
        ep_degree = 16, micro_batch_size = 1 })
    end
    local m = hf.from_config(config(), "m.json")
    local dense = H.copy(m)
    for _, k in ipairs({ "msa_layers", "msa_index_heads", "msa_index_dim", "msa_block_size", "msa_topk_blocks",
      "msa_local_blocks" }) do dense[k] = nil end
    local S = 4096
    local core_saved = 3 * 4 * S * (2048 - 1504) * 64 * 128
    local indexer = 2 * S * (6144 * 4 * 128 + 6144 * 128) + 2 * S * (S / 2) * 4 * 128
    local want = 64 * 57 * (core_saved - indexer)
    local got = flops(dense) - flops(m)
    assert.is_true(math.abs(got / want - 1) < 1e-9, ("%.6g vs %.6g"):format(got, want))
  end)

  it("refuses what AutoModel would not build, naming the key", function()
    local function refused(change)
      local c = config()
      change(c)
      return H.err_of(hf.from_config, c, "m.json")
    end
    assert.truthy(refused(function(c) c.hidden_act = "silu" end):find("^NotImplemented: m%.json: hidden_act: " ..
      "an MLP activation other than SwiGLU%-OAI is not modelled"))
    assert.truthy(refused(function(c) c.sparse_attention_config.sparse_disable_index_value[10] = 0 end):find(
      "sparse_disable_index_value[9]: an index value and output projection on a sparse layer", 1, true))
    assert.truthy(refused(function(c) c.sparse_attention_config.sparse_local_block = 0 end):find(
      "NotImplemented: m.json: sparse_attention_config: sparse_local_block: only 1 (the query's own block always " ..
      "attended, MiniMax-M3's) is modelled (got 0)", 1, true))
    assert.truthy(refused(function(c) c.sparse_attention_config.sparse_disable_index_value[10] = false end):find(
      "sparse_disable_index_value[9]: an index value and output projection on a sparse layer", 1, true))
    -- AutoModel's truth test: use_sparse_attention 0 builds dense attention
    local c = config()
    c.sparse_attention_config.use_sparse_attention = 0
    assert.is_nil(hf.from_config(c, "m.json").msa_layers)
    assert.truthy(refused(function(c) c.sparse_attention_config.sparse_attention_freq = { 1, 0 } end):find(
      "sparse_attention_config: sparse_attention_freq: expected an array of num_hidden_layers = 60 entries", 1, true))
    assert.truthy(refused(function(c) c.first_k_dense_replace = 2 end):find(
      "m.json: first_k_dense_replace: expected 3, the leading dense layers of moe_layer_freq", 1, true))
  end)

  it("runs on 512 H100s; every launch file says it does not build the sparse attention", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", FILE, "--cluster", "h100-sxm-80gb:64", "--top-k", "1",
      "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    assert.truthy(H.read(dir .. "/launch/rank1_megatron.sh"):find("NOT WRITTEN: MiniMax-M3's block-sparse " ..
      "attention on 57 of 60 layers", 1, true))
    assert.truthy(H.read(dir .. "/launch/rank1_torchtitan.py"):find("block-sparse attention", 1, true))
    assert.truthy(H.read(dir .. "/launch/rank1_mindformers.yaml"):find("block-sparse attention", 1, true))
  end)
end)
