-- tests/lua/dsa_spec.lua -- DeepSeek Sparse Attention (DeepSeek-V3.2,
-- model_type deepseek_v32; GLM-5, glm_moe_dsa): the configs in
-- examples/models read with their indexer, exact parameter counts from the
-- transformers module shapes, the capped attention FLOPs at 32K tokens, an
-- estimate on 1024 H100s and the Megatron-LM flags.

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local hf = require "apsearch.hf"
local H = require "spec_helpers"
local policy = require "apsearch.policy"
local search = require "apsearch.search"

local load, decoded, err_of = H.example_model, H.example_config, H.err_of

--- One layer's lightning indexer (transformers DeepseekV32Indexer;
-- Megatron-LM d98e8a64 dsa.py DSAIndexer): wq_b q_lora_rank x Hi Di, wk
-- h x Di, k_norm LayerNorm(Di) weight and bias, weights_proj h x Hi.
local function indexer(c)
  local h, hi, di = c.hidden_size, c.index_n_heads, c.index_head_dim
  return c.q_lora_rank * hi * di + h * di + 2 * di + h * hi
end

-- the same config without its indexer, read as DeepSeek-V3 (MLA + MoE)
local function without_dsa(c)
  local t = {}
  for k, v in pairs(c) do t[k] = v end
  t.model_type, t.architectures = "deepseek_v3", { "DeepseekV3ForCausalLM" }
  t.index_n_heads, t.index_head_dim, t.index_topk = nil, nil, nil
  return t
end

describe("DeepSeek Sparse Attention: parameters", function()
  -- DeepSeek-V3.2: 1536 x 64 x 128 + 7168 x 128 + 2 x 128 + 7168 x 64 =
  -- 13,959,424 per layer; DeepSeek-V3's 671,026,419,200 + 61 of them =
  -- 671,877,944,064, with the MTP layer (its own indexer) 685,355,329,792:
  -- the card's 685B.
  it("DeepSeek-V3.2: 671,877,944,064 + MTP 13,477,385,728 (685B on the card)", function()
    local c = decoded("deepseek-v3.2")
    assert.are.equal(13959424, indexer(c))
    local core = require "apsearch.core"
    local pc, v3 = core.model_params(load("deepseek-v3.2")), core.model_params(load("deepseek-v3"))
    assert.are.equal(671877944064, pc.total)
    assert.are.equal(v3.total + 61 * 13959424, pc.total)
    assert.are.equal(13477385728, pc.mtp)
    assert.are.equal(v3.mtp + 13959424, pc.mtp)
    assert.are.equal(38403822336, pc.active)
    assert.is_true(math.abs((pc.total + pc.mtp) / 685e9 - 1) < 0.01)
  end)

  -- GLM-5: 2048 x 32 x 128 + 6144 x 128 + 2 x 128 + 6144 x 32 = 9,371,904
  -- per layer over the same config read without it (MLA with dn 192,
  -- dv 256; 3 dense + 75 MoE layers of 256 + 1 experts), 78 layers:
  -- 743,911,218,432, the card's "744B"; its active 41,784,728,832 (the
  -- card rounds to "40B").
  it("GLM-5: 743,911,218,432 (744B on the card), 9,371,904 per indexer", function()
    local c = decoded("glm-5")
    assert.are.equal(9371904, indexer(c))
    local m = load("glm-5")
    local pc = require("apsearch.core").model_params(m)
    assert.are.same({ 32, 128, 2048, 3 }, { m.index_n_heads, m.index_head_dim, m.index_topk,
      m.moe_first_dense_layers })
    local bm = require("apsearch.core").model_params(hf.from_config(without_dsa(c), "glm-5.json"))
    assert.are.equal(bm.total + 78 * 9371904, pc.total)
    assert.are.equal(743911218432, pc.total)
    assert.are.equal(41784728832, pc.active)
    assert.is_true(math.abs(pc.total / 744e9 - 1) < 0.01)
  end)
end)

describe("DeepSeek Sparse Attention: configs", function()
  it("reads the class defaults", function()
    local c = decoded("glm-5")
    c.index_topk, c.index_n_heads = nil, nil
    local m = hf.from_config(c, "m.json")
    assert.are.same({ 32, 2048 }, { m.index_n_heads, m.index_topk })
    assert.is_nil(m.index_topk_freq)
  end)

  -- GLM-5.2's IndexShare (zai-org/GLM-5.2 config.json, held out in
  -- tests/fixtures/heldout_configs): index_topk_freq 4 after
  -- index_skip_topk_offset 3, 78 indexer_types; Megatron-LM d98e8a64
  -- is_dsa_skip_topk_layer computes on 1-based layers 1-3, 7, 11, ..., 75
  it("cross-layer top-k sharing: Megatron's schedule, every per-layer list checked against it", function()
    local function shared(freq, offset, L)
      local t = {}
      for i = 1, L do t[i] = hf.dsa_computes_topk(i - 1, freq, offset) and "full" or "shared" end
      return t
    end
    local types = shared(4, 3, 78)
    assert.are.same({ "full", "full", "full", "shared", "shared", "shared", "full", "shared" },
      { table.unpack(types, 1, 8) })
    local n = 0
    for _, v in ipairs(types) do n = n + (v == "full" and 1 or 0) end
    assert.are.equal(21, n)
    local c = decoded("glm-5")
    c.index_topk_freq, c.index_skip_topk_offset, c.indexer_types = 4, 3, types
    local m = hf.from_config(c, "m.json")
    assert.are.same({ 4, 3 }, { m.index_topk_freq, m.index_skip_topk_offset })
    local pc = require("apsearch.core").model_params(m)
    assert.are.equal(743911218432 - 57 * 9371904, pc.total)
    -- the example (zai-org/GLM-5.2's config) reads the same
    assert.are.same(pc, require("apsearch.core").model_params((hf.load(ROOT .. "/examples/models/glm-5.2.json"))))
    -- the letters of index_topk_pattern say the same
    c.indexer_types = nil
    c.index_topk_pattern = ("FFF" .. ("SSSF"):rep(18) .. "SSS")
    assert.are.same({ 4, 3 }, { hf.from_config(c, "m.json").index_topk_freq, 3 })
    -- a list Megatron cannot express, a schedule without its offset
    c = decoded("glm-5")
    c.index_topk_freq, c.index_skip_topk_offset, c.indexer_types = 4, 3, shared(4, 3, 78)
    c.indexer_types[7] = "shared"
    assert.are.equal('NotImplemented: m.json: indexer_types[6]: "shared" differs from the schedule of ' ..
      'index_topk_freq = 4 and index_skip_topk_offset = 3, the only one Megatron-Core expresses (got "shared")',
      err_of(hf.from_config, c, "m.json"))
    c.indexer_types, c.index_skip_topk_offset = nil, nil
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("^m%.json: index_skip_topk_offset: required with " ..
      "cross%-layer top%-k sharing"))
    c.index_skip_topk_offset, c.indexer_types = 3, { "full", "shared" }
    assert.truthy(err_of(hf.from_config, c, "m.json"):find("^m%.json: indexer_types: expected a list of 78 entries"))
    -- a long list too short: its length said (a new user's pass: GLM-5.3's
    -- 74 entries for 78 layers read as a list of six and "...")
    c.indexer_types = { table.unpack(shared(4, 3, 78), 1, 74) }
    assert.truthy(err_of(hf.from_config, c, "m.json"):find('(got {"full", "full", "full", "shared", "shared", ' ..
      '"shared", ... 74 in all})', 1, true))
  end)

  it("GLM-5.2 pipelines only where every model chunk starts on a layer computing its top-k #bulk", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "tests/fixtures/heldout_configs/zai-org--GLM-5.2.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "3", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local res = H.read_json(dir .. "/result.json")
    local pipelined = 0
    for rank, r in ipairs(res.stage_summary) do
      -- first_layer is where a rank's layers start with one chunk a rank
      assert.are.equal(1, res.top_k_strategies[rank].vpp_degree)
      for _, st in ipairs(r.stages) do
        assert.is_true(hf.dsa_computes_topk(st.first_layer, 4, 3), "stage starts on layer " .. st.first_layer)
        pipelined = pipelined + (st.first_layer > 0 and 1 or 0)
      end
    end
    assert.is_true(pipelined > 0)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("\n  --dsa-indexer-topk-freq 4\n  --dsa-indexer-skip-topk-offset 3\n", 1, true))
    -- the log line of a ranked record names its resolved split and
    -- recompute, as --strategy takes them (a new user re-estimated the
    -- balanced job from it and got another split)
    local rec = res.top_k_strategies[1]
    local line = require("apsearch.search").describe_strategy(rec)
    local parts = {}
    for _, st in ipairs(res.stage_summary[1].stages) do parts[#parts + 1] = st.num_layers end
    assert.truthy(line:find("stage_partition=" .. table.concat(parts, ":"), 1, true), line)
    -- a strategy split by its rule has no partition of its own to name
    assert.is_nil(require("apsearch.search").describe_strategy({ dp_degree = 1, fsdp_degree = 1, tp_degree = 1,
      pp_degree = 4, cp_degree = 1, micro_batch_size = 1, layer_recompute = "none",
      stage_partition = { 0, 0, 0, 0 } }):find("stage_partition", 1, true))
    -- a split that starts a chunk on a sharing layer is refused as Megatron-Core refuses it
    local out
    code, out = H.apsearch("estimate", "--model", "tests/fixtures/heldout_configs/zai-org--GLM-5.2.json",
      "--cluster", "h100-sxm-80gb:64", "--strategy", "pp_degree=2,stage_partition=39:39,ep_degree=8")
    assert.truthy(out:find("NO: PP_PARTITION: model chunk 2 starts on layer 40 (1-based), which reuses layer 39's " ..
      "top-k", 1, true), out)
    assert.truthy(out:gsub("%s+", " "):find("start it on layer 39 or 43", 1, true), out)
    -- NeMo AutoModel passes the previous stage's top-k on (glm_moe_dsa/model.py prev_topk_indices):
    -- the same split estimates there
    code, out = H.apsearch("estimate", "--model", "tests/fixtures/heldout_configs/zai-org--GLM-5.2.json",
      "--cluster", "h100-sxm-80gb:64", "--set", "training.framework=automodel", "--strategy",
      "pp_degree=2,stage_partition=39:39,ep_degree=8,fsdp_degree=256,dp_degree=1")
    assert.is_nil(out:find("PP_PARTITION", 1, true), out)
    assert.truthy(out:find("\nstrategy  ", 1, true), out)
  end)

  it("the hardware FLOPs of a split only NeMo AutoModel runs count its recomputed layers", function()
    -- full recompute of every layer: hardware = model + one more forward of the layers; the split
    -- 39:39 Megatron-Core refuses was counted with no recompute (ratio 1) before aps_flops_per_step
    -- read the framework's split rule
    local p = policy.from_table({ model = hf.load(ROOT .. "/tests/fixtures/heldout_configs/zai-org--GLM-5.2.json"),
      cluster = { device = "h100-sxm-80gb", nodes = 64, devices_per_node = 8 },
      training = { global_batch_size = 512, seq_length = 4096, framework = "automodel" } }, ROOT .. "/examples/x.lua")
    local ctx = search.context(p)
    local function ratio(split)
      local s = { pp_degree = 2, stage_partition = split, ep_degree = 8, fsdp_degree = 256, dp_degree = 1,
        micro_batch_size = 1, layer_recompute = "full", moe_token_dispatcher = "flex" }
      local hw, code, msg = ctx:flops(s, "hardware-causal")
      assert.is_number(hw, tostring(code) .. ": " .. tostring(msg))
      return hw / ctx:flops(s, "model-causal")
    end
    local even = ratio({ 38, 40 })
    assert.is_true(even > 1.3, even)
    assert.are.equal(even, ratio({ 39, 39 }))
  end)

  it("the core refuses an indexer without MLA, naming the field", function()
    local m = load("llama-3.1-8b")
    m.index_n_heads, m.index_head_dim, m.index_topk = 8, 128, 256
    local ok, e = pcall(require("apsearch.core").model_params, m)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("model.index_n_heads: 8 given without multi-head latent attention", 1, true))
  end)
end)

describe("DeepSeek Sparse Attention: estimate", function()
  local policy, search = require "apsearch.policy", require "apsearch.search"

  local function flops(path, S)
    local p = policy.from_table({ model = path, cluster = { device = "h100-sxm-80gb", nodes = 1,
      devices_per_node = 8 }, training = { global_batch_size = 8, seq_length = S, framework = "megatron",
      mtp_num_layers = 1 }, top_k = 1 }, ROOT .. "/examples/x.lua")
    local est = search.context(p):estimate({ dp_degree = 8, ep_degree = 8, micro_batch_size = 1 })
    assert.is_true(est.model_flops_per_step > 0, tostring(est.reason))
    return est.model_flops_per_step
  end

  -- At S = 32768 with top-k 2048 a query attends k - k^2 / (2 S) = 1984
  -- keys on average, not causal's 16384; MLA's core is 2 S keys a (dn + dr
  -- + dv) = 2 S keys 128 x 320 per layer (training.py's MLA branch), 3 x
  -- per step over the 61 layers and the MTP layer.  The indexer adds its
  -- forward once per layer (it has no backward): 2 S x 13,959,168 + 2 S
  -- (S / 2) 64 x 128 = 9,710,921,056,256.
  it("caps the attention at index_topk keys: DeepSeek-V3 minus V3.2 at 32K tokens", function()
    local dir = H.tmpdir()
    local base = dir .. "/v3.json"
    H.write(base, cjson.encode(without_dsa(decoded("deepseek-v3.2"))))
    local B, L, S = 8, 61 + 1, 32768
    local core = 3 * B * L * 2 * S * (16384 - 1984) * 128 * 320
    local idx = B * L * 9710921056256
    local got = flops(base, S) - flops(ROOT .. "/examples/models/deepseek-v3.2.json", S)
    assert.is_true(math.abs(got - (core - idx)) <= 1e-9 * core, ("%.17g vs %.17g"):format(got, core - idx))
  end)

  it("DeepSeek-V3.2 on h100-sxm-80gb:128 has feasible strategies and writes the dsa flags #bulk", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "examples/models/deepseek-v3.2.json",
      "--cluster", "h100-sxm-80gb:128", "--top-k", "3", "--format", "json", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.is_not_nil(r.top_k_strategies[1], out:sub(1, 400))
    assert.is_true(r.top_k_strategies[1].performance_cost.step_time > 0)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    for _, flag in ipairs({ "--multi-latent-attention", "--experimental-attention-variant dsa",
        "--dsa-indexer-n-heads 64", "--dsa-indexer-head-dim 128", "--dsa-indexer-topk 2048",
        "--dsa-kernel-backend tilelang", "--no-rope-fusion" }) do
      assert.truthy(sh:find("\n  " .. flag .. "\n", 1, true) or sh:find("\n  " .. flag .. " ", 1, true), flag)
    end
    assert.is_nil(sh:find("--dsa-indexer-rope-interleaved", 1, true))
    -- TransformerConfig refuses tilelang without the kernels: the script says so
    assert.truthy(sh:find("# NOTE: --dsa-kernel-backend tilelang needs Megatron-LM's TileLang DSA kernels", 1, true))
    H.assert_megatron_flags(sh)
    assert.truthy(H.read(dir .. "/launch/rank1_torchtitan.py"):find("NOT EXPRESSIBLE in TorchTitan: DeepSeek " ..
      "Sparse Attention", 1, true))
  end)

  -- training.dsa_indexer_loss_coeff trains the indexer with its sparse KL
  -- loss: more model FLOPs by aps_dsa_indexer_train_flops per layer (the
  -- target 2 a (k_r + d_r) and the scores' backward 4 H_i D_i per token
  -- and top-k key, the projections' weight gradients 2 S P), the flags
  -- written; refused on a model without an indexer.
  it("a trained indexer: its loss and backward priced, the flags written", function()
    local S = 32768
    local c = decoded("deepseek-v3.2")
    local keys = 2048 - 2048 * 2048 / (2 * S)
    local P = 1536 * 64 * 128 + 7168 * 128 + 7168 * 64
    local per_layer = S * keys * (2 * 128 * (512 + 64) + 4 * 64 * 128) + 2 * S * P
    local policy, search = require "apsearch.policy", require "apsearch.search"
    local function flops(coeff)
      local p = policy.from_table({ model = ROOT .. "/examples/models/deepseek-v3.2.json",
        cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
        training = { global_batch_size = 8, seq_length = S, framework = "megatron", mtp_num_layers = 1,
          dsa_indexer_loss_coeff = coeff }, top_k = 1 }, ROOT .. "/examples/x.lua")
      return search.context(p):estimate({ dp_degree = 8, ep_degree = 8, micro_batch_size = 1 })
        .model_flops_per_step
    end
    assert.are.equal(c.index_topk, 2048)
    assert.are.equal(8 * (61 + 1) * per_layer, flops(0.001) - flops(0))
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/glm-5.json", "--cluster",
      "h100-sxm-80gb:128", "--top-k", "1", "--quiet", "--out", dir, "--set", "training.dsa_indexer_loss_coeff=0.001")
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("\n  --dsa-indexer-loss-coeff 0.001", 1, true))
    assert.truthy(sh:find("\n  --dsa-indexer-use-sparse-loss", 1, true))
    code, _, err = H.apsearch("run", "--model", "examples/models/deepseek-v3.json", "--cluster",
      "h100-sxm-80gb:128", "--quiet", "--set", "training.dsa_indexer_loss_coeff=0.001")
    assert.are.equal(2, code)
    assert.truthy(err:find("training.dsa_indexer_loss_coeff: must be 0 (none) or finite and > 0 with DeepSeek " ..
      "Sparse Attention (got 0.001; deepseek-v3 has no indexer)", 1, true), err)
  end)

  it("GLM-5's interleaved indexer RoPE is written for Megatron-LM", function()
    local m = load("glm-5")
    assert.is_true(m.index_rope_interleave)
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "--model", "examples/models/glm-5.json",
      "--cluster", "h100-sxm-80gb:128", "--top-k", "1", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.truthy(sh:find("\n  --dsa-indexer-rope-interleaved", 1, true))
    assert.truthy(sh:find("\n  --dsa-indexer-n-heads 32", 1, true))
  end)

  it("Megatron: context parallelism with DSA is all_gather only #bulk", function()
    local code, out, err = H.apsearch("run", "--model", "examples/models/glm-5.json",
      "--cluster", "h100-sxm-80gb:128", "--top-k", "20", "--format", "json", "--quiet",
      "--set", "training.seq_length=32768")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    assert.is_not_nil(r.top_k_strategies[1], out:sub(1, 400))
    for _, s in ipairs(r.top_k_strategies) do
      if s.cp_degree > 1 then assert.are.equal("all_gather", s.cp_comm_type) end
    end
  end)
end)
