-- tests/lua/models_deepseek_v4_spec.lua -- DeepSeek-V4 (deepseek_v4)
-- imported from its Hugging Face config.json (lua/apsearch/hf.lua):
-- exact total, active and MTP parameter counts computed here module by
-- module from the config keys as transformers builds the model
-- (src/transformers/models/deepseek_v4/modeling_deepseek_v4.py @
-- 36145589; the MTP module as vLLM's deepseek_v4_mtp.py @ 45292767 loads
-- it), the model cards' rounded figures as a check (DeepSeek-V4-Flash
-- "284B total, 13B activated"; DeepSeek-V4-Pro "1.6T total, 49B
-- activated"), the layer kinds read from compress_ratios / layer_types /
-- mlp_layer_types / num_hash_layers, what is refused and every bad value
-- naming the file, key and value, `apsearch run` on B200 with per-stage
-- breakdowns, and the launch files' NOT WRITTEN / NOT EXPRESSIBLE lines.
--
-- The config is examples/models/deepseek-v4-flash.json, a copy of
-- tests/fixtures/heldout_configs/deepseek-ai--DeepSeek-V4-Flash.json.

local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local load, decoded, err_of, copy = H.example_model, H.example_config, H.err_of, H.copy
local NAME = "deepseek-v4-flash"
local PRO = H.ROOT .. "/tests/fixtures/heldout_configs/nvidia--DeepSeek-V4-Pro-NVFP4.json"

--- Parameters of a deepseek_v4 config as transformers builds it, module
-- by module (DeepseekV4Attention, its compressor, DeepseekV4HyperConnection,
-- DeepseekV4SparseMoeBlock, DeepseekV4HyperHead), with the first
-- num_hidden_layers entries of compress_ratios (0 sliding, 4 CSA, 128
-- HCA); MTP: one sliding layer, enorm, hnorm, shared_head.norm, e_proj
-- and h_proj, hc_head, the embedding and head copies.
-- @treturn table {total=, active=, mtp=, mtp_active=}
local function dsv4_counts(c)
  local h, a, d, V = c.hidden_size, c.num_attention_heads, c.head_dim, c.vocab_size
  local qr, g, r, n = c.q_lora_rank, c.o_groups, c.o_lora_rank, c.hc_mult
  local hi, di = c.index_n_heads, c.index_head_dim
  -- q_a, q_a_norm, q_b, kv_proj, kv_norm, o_a (g blocks of r x a d / g), o_b, sinks
  local attn = h * qr + qr + qr * a * d + h * d + d + g * r * (a * d // g) + g * r * h + a
  local comp = {
    [0] = 0,
    -- kv_proj, gate_proj h -> 2 d, position_bias 4 x 2 d, kv_norm d; the
    -- indexer's kv_proj, gate_proj h -> 2 di, position_bias 4 x 2 di,
    -- kv_norm di, q_b qr -> hi di, weights_proj h -> hi
    [4] = 2 * h * 2 * d + 4 * 2 * d + d + 2 * h * 2 * di + 4 * 2 * di + di + qr * hi * di + h * hi,
    -- kv_proj, gate_proj h -> d, position_bias 128 x d, kv_norm d
    [128] = 2 * h * d + 128 * d + d,
  }
  local hc = 2 * ((2 + n) * n * n * h + (2 + n) * n + 3)
  local expert, E, k = 3 * h * c.moe_intermediate_size, c.n_routed_experts, c.num_experts_per_tok
  local moe = E * h + expert -- gate E x h, one shared expert
  local head = n * n * h + n + 1
  local total, active = 2 * V * h + h + head, 2 * V * h + h + head
  for i = 1, c.num_hidden_layers do
    local layer = attn + comp[c.compress_ratios[i]] + hc + 2 * h + moe
    total, active = total + layer + E * expert, active + layer + k * expert
  end
  local mtp_layer = attn + hc + 2 * h + moe
  local extra = 3 * h + 2 * h * h + head
  return { total = total, active = active, mtp = mtp_layer + E * expert + extra + 2 * V * h,
           mtp_active = mtp_layer + k * expert + extra }
end

-- The example's config with changes.
local function changed(changes)
  local cfg = copy(decoded(NAME))
  for key, v in pairs(changes) do cfg[key] = v end
  return cfg
end

-- A config file of cfg in a fresh directory, for the binary.
local function write_config(cfg)
  local path = H.tmpdir() .. "/dsv4.json"
  H.write(path, cjson.encode(cfg))
  return path
end

-- A list of L copies of v, those at the 1-based positions of `at` set to b.
local function list(L, v, at)
  local out = {}
  for i = 1, L do out[i] = at and at[i] ~= nil and at[i] or v end
  return out
end

describe("deepseek_v4: exact parameter counts", function()
  it("total, active and MTP as transformers builds it, within the Flash card's 284B and 13B", function()
    local want = dsv4_counts(decoded(NAME))
    local p = core.model_params((load(NAME)))
    assert.are.equal(want.total, p.total)
    assert.are.equal(want.active, p.active)
    assert.are.equal(want.mtp, p.mtp)
    assert.are.equal(want.mtp_active, p.mtp_active)
    assert.is_true(H.near_card(p.total, 284e9, H.CARD_ROUNDING), tostring(p.total))
    -- "13B activated": 13.80B with both vocabulary matrices, 13.27B
    -- without the input embedding (a lookup): the card's figure truncated
    assert.is_true(p.active >= 13e9 and p.active - p.embedding < 14e9, tostring(p.active))
  end)

  it("pins the counts: 284,332,230,231 total, 13,799,622,231 active, MTP 7,669,110,395", function()
    local p = core.model_params((load(NAME)))
    assert.are.equal(284332230231, p.total)
    assert.are.equal(13799622231, p.active)
    assert.are.equal(7669110395, p.mtp)
    assert.are.equal(318592635, p.mtp_active)
  end)

  it("DeepSeek-V4-Pro's shapes: 1,572,997,179,491 total, 49,779,058,787 active (the card's 1.6T and 49B)", function()
    local want = dsv4_counts(H.read_json(PRO))
    local p = core.model_params((hf.load(PRO)))
    assert.are.equal(want.total, p.total)
    assert.are.equal(want.active, p.active)
    assert.are.equal(1572997179491, p.total)
    assert.are.equal(49779058787, p.active)
    assert.is_true(H.near_card(p.total, 1.6e12, H.CARD_ROUNDING_2), tostring(p.total))
    assert.is_true(p.active >= 49e9 and p.active < 50e9, tostring(p.active))
    -- the example under examples/models is the same file, by its preset name
    local ex = core.model_params((hf.load(H.ROOT .. "/examples/models/deepseek-v4-pro-nvfp4.json")))
    assert.are.same({ 1572997179491, 49779058787 }, { ex.total, ex.active })
  end)

  it("reads the layer kinds and hash layers from compress_ratios, layer_types, mlp_layer_types, num_hash_layers", function()
    local m = load(NAME)
    assert.are.equal(21, m.csa_layers)
    assert.are.equal(20, m.hca_layers)
    assert.are.equal(4, m.csa_compress_rate)
    assert.are.equal(128, m.hca_compress_rate)
    assert.are.equal(3, m.moe_hash_layers)
    assert.are.equal(1, m.num_query_groups)
    assert.are.equal(512, m.head_dim)
    assert.are.equal(0.125, m.rotary_percent)
    assert.are.equal(10.0, m.glu_clamp)
    assert.are.equal(2048, m.shared_expert_ffn_hidden_size)
    assert.are.equal(4, m.hc_mult)
    local L = 43
    -- layer_types wins over compress_ratios (DeepseekV4Config.__post_init__)
    local types = list(L, "heavily_compressed_attention", { "sliding_attention", "compressed_sparse_attention" })
    m = hf.from_config(changed({ layer_types = types }), "m.json")
    assert.are.equal(1, m.csa_layers)
    assert.are.equal(41, m.hca_layers)
    m = hf.from_config(changed({ mlp_layer_types = list(L, "moe", { "hash_moe", "hash_moe" }) }), "m.json")
    assert.are.equal(2, m.moe_hash_layers)
    m = hf.from_config(changed({ num_hash_layers = cjson.null }), "m.json")
    assert.are.equal(3, m.moe_hash_layers)
    -- every layer sliding: no compressor, no indexer
    m = hf.from_config(changed({ compress_ratios = list(L, 0) }), "m.json")
    assert.are.equal(0, m.csa_layers + m.hca_layers)
    local p = core.model_params(m)
    local c = changed({ compress_ratios = list(L, 0) })
    assert.are.equal(dsv4_counts(c).total, p.total)
  end)
end)

describe("deepseek_v4: refusals and bad values name the file, key and value", function()
  local function refused(changes) return err_of(hf.from_config, changed(changes), "m.json") end

  it("refuses what transformers does not build or apsearch cannot price, one line each", function()
    local cases = {
      { { num_key_value_heads = 2 }, "NotImplemented: m.json: num_key_value_heads: DeepseekV4Attention builds one " ..
        "shared KV head (kv_proj h -> head_dim) whatever it says; 1 is (got 2)" },
      { { n_shared_experts = 2 }, "NotImplemented: m.json: n_shared_experts: DeepseekV4SparseMoeBlock builds one " ..
        "shared expert of moe_intermediate_size whatever it says; 1 is (got 2)" },
      { { attention_bias = true }, "NotImplemented: m.json: attention_bias: DeepseekV4Attention's projections have " ..
        "no bias; false is (got true)" },
      { { tie_word_embeddings = true }, "NotImplemented: m.json: tie_word_embeddings: DeepseekV4ForCausalLM's " ..
        "lm_head is its own; false is (got true)" },
      { { compress_ratios = list(44, 4, { [1] = 0 }) }, "NotImplemented: m.json: compress_ratios[43]: a compressed " ..
        "MTP layer: apsearch prices the MTP layer sliding-window only (0) (got 4)" },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], refused(c[1])) end
  end)

  it("every other bad value is one line naming the file, key and value", function()
    local cases = {
      { { compress_ratios = { 0, 4 } }, "compress_ratios: expected an array of num_hidden_layers = 43 entries " ..
        "(or 44 with the MTP layers')" },
      { { compress_ratios = list(43, 4, { [3] = 5 }) }, "compress_ratios[2]: expected 0, 4 or 128 " ..
        "(transformers' _COMPRESS_RATIO_TO_LAYER_TYPE: sliding, CSA, HCA) (got 5)" },
      { { layer_types = list(43, "full_attention") }, "layer_types[0]: expected sliding_attention, " ..
        "compressed_sparse_attention or heavily_compressed_attention (got \"full_attention\")" },
      { { mlp_layer_types = list(43, "moe", { [2] = "dense" }) }, "mlp_layer_types[1]: expected hash_moe or moe " ..
        "(got \"dense\")" },
      { { num_hash_layers = 50 }, "num_hash_layers: expected at most num_hidden_layers = 43 (got 50)" },
      { { num_hash_layers = -1 }, "num_hash_layers: expected an integer in [0, " },
      { { compress_rates = { compressed_sparse_attention = 0 } }, "compress_rates.compressed_sparse_attention: " ..
        "expected a positive integer" },
      { { o_groups = 3 }, "o_groups (model.o_groups): 3 does not divide num_attention_heads x head_dim = 32768" },
      { { o_lora_rank = 0 }, "o_lora_rank: expected a positive integer" },
      { { hc_mult = 0 }, "hc_mult: expected a positive integer" },
      -- (a breaker's findings: 2^24 streams were priced, a list of rates ignored)
      { { hc_mult = 16777216 }, "hc_mult (model.hc_mult): must be in [1, 64] residual streams (got 16777216)" },
      { { compress_rates = { 4, 128 } }, "compress_rates: expected an object of rates by layer type" },
      { { hc_sinkhorn_iters = 1.5 }, "hc_sinkhorn_iters: expected a positive integer" },
      { { hc_eps = -1 }, "hc_eps: expected a finite number > 0 (got -1)" },
      { { head_dim = cjson.null }, "head_dim: required key is missing" },
      { { q_lora_rank = "1024" }, "q_lora_rank: expected a positive integer" },
      { { qk_rope_head_dim = 1024 }, "qk_rope_head_dim: expected at most head_dim = 512 (got 1024)" },
      { { sliding_window = 0 }, "sliding_window: expected a positive integer" },
      { { index_topk = 0 }, "index_topk: expected a positive integer" },
      { { scoring_func = "relu" }, "scoring_func: expected sqrtsoftplus, softmax or sigmoid " ..
        "(DeepseekV4TopKRouter's score_fn) (got \"relu\")" },
      { { topk_method = "greedy" }, "topk_method: expected \"noaux_tc\"" },
      { { hidden_act = "gelu" }, "hidden_act: expected \"silu\"" },
      { { swiglu_limit = -1 }, "swiglu_limit: expected a finite number > 0 (got -1)" },
      { { routed_scaling_factor = "x" }, "routed_scaling_factor: expected a finite number >= 0 (got \"x\")" },
      { { n_routed_experts = cjson.null }, "n_routed_experts: required key is missing" },
      { { num_experts_per_tok = 300 }, "num_experts_per_tok (model.experts_per_token)" },
      { { norm_topk_prob = "yes" }, "norm_topk_prob: expected true or false (got \"yes\")" },
    }
    for _, c in ipairs(cases) do
      local e = refused(c[1])
      assert.truthy(e:find("m.json: " .. c[2], 1, true), e)
      assert.is_nil(e:find("\n", 1, true), e)
    end
  end)

  it("exits 2 from the binary with one line", function()
    local path = write_config(changed({ num_key_value_heads = 8 }))
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "b200:64", "--top-k", "1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find(path .. ": num_key_value_heads: DeepseekV4Attention builds one shared KV head", 1, true),
      err)
    path = write_config(changed({ compress_ratios = list(43, 4, { [7] = 64 }) }))
    code, out, err = H.apsearch("inspect", path)
    assert.are.equal(2, code)
    assert.truthy(err:find(path .. ": compress_ratios[6]: expected 0, 4 or 128", 1, true), err)
  end)
end)

describe("deepseek_v4: apsearch run estimates it and the launch files say what they cannot express", function()
  it("on b200:64: feasible, finite, tp = cp = 1, a memory breakdown per stage", function()
    local code, out, err = H.apsearch("run", "--model", "examples/models/" .. NAME .. ".json",
      "--cluster", "b200:64", "--top-k", "3", "--format", "json", "--quiet")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.is_true(#r.top_k_strategies >= 1, out:sub(1, 400))
    for _, s in ipairs(r.top_k_strategies) do
      local perf = s.performance_cost
      assert.are.equal(1, s.tp_degree)
      assert.are.equal(1, s.cp_degree)
      assert.is_true(H.finite(perf.step_time) and perf.step_time > 0, out:sub(1, 400))
      assert.is_true(perf.mfu > 0 and perf.mfu < 1, out:sub(1, 400))
      local stages = s.memory_cost.per_stage
      assert.are.equal(s.pp_degree, #stages)
      for _, st in ipairs(stages) do
        assert.is_true(H.finite(st.total) and st.total > 0 and st.total <= s.memory_cost.limit, out:sub(1, 400))
      end
    end
  end)

  it("searches no tp or cp of DeepSeek-V4 in the built space (the core refuses them)", function()
    local defaults = require "apsearch.defaults"
    local m = load(NAME)
    local space = defaults.search_space(m, { num_devices = 128, devices_per_node = 4 },
      { framework = "megatron", seq_length = 4096 })
    assert.are.same({ 1 }, space.tp_degree)
    assert.are.same({ 1 }, space.cp_degree)
    assert.is_nil(space.cp_comm_type)
  end)

  it("refuses tp > 1 and cp > 1 as NOT_MODELLED with the reason (no feasible strategy: exit 1)", function()
    for _, fix in ipairs({ { "tp_degree=2", "DeepSeek-V4 with tp_degree > 1" },
                           { "cp_degree=2", "DeepSeek-V4 with cp_degree > 1" } }) do
      local code, out, err = H.apsearch("run", "--model", "examples/models/" .. NAME .. ".json",
        "--cluster", "b200:64", "--fix", fix[1], "--top-k", "1", "--format", "json", "--quiet")
      assert.are.equal(1, code, err)
      local r = cjson.decode(out)
      assert.are.equal(0, r.all_candidate_summary.feasible)
      local nm = r.infeasible_summary.NOT_MODELLED
      assert.are.equal(r.all_candidate_summary.generated, nm.count)
      assert.truthy(out:find(fix[2], 1, true), out:sub(1, 600))
    end
  end)

  it("every launch file says what it does not build", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/" .. NAME .. ".json",
      "--cluster", "b200:64", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = assert(H.read(dir .. "/launch/rank1_megatron.sh"))
    H.assert_megatron_flags(sh)
    assert.truthy(sh:find("# NOT WRITTEN: DeepSeek-V4's layers (21 CSA and 20 HCA compressed layers with the " ..
      "indexer, the grouped output projection of o_groups 8 x o_lora_rank 1024, the low-rank query, 3 hash-routed " ..
      "MoE layers, hyper-connections of 4 streams): NOT EXPRESSIBLE in Megatron-LM d98e8a64", 1, true), sh)
    assert.is_nil(sh:find("--experimental-attention-variant", 1, true))
    assert.is_nil(sh:find("--dsa-indexer", 1, true))
    for _, f in ipairs({ { "rank1_torchtitan.py", "TorchTitan" }, { "rank1_mindformers.yaml", "MindFormers" } }) do
      local text = assert(H.read(dir .. "/launch/" .. f[1]))
      assert.truthy(text:find("NOT EXPRESSIBLE in " .. f[2] .. ": DeepSeek-V4's layers (hyper-connections hc_mult",
        1, true), f[1])
    end
  end)
end)
