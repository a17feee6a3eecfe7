-- tests/lua/qwen3_next_spec.lua -- Qwen3-Next (Gated DeltaNet hybrid MoE):
-- the qwen3_next import (lua/apsearch/hf.lua) of Qwen/Qwen3-Next-80B-A3B
-- with its exact total and active parameter counts, bad values of every
-- new config key exiting 2 with the file, key and value, `apsearch run`
-- giving feasible strategies with a breakdown, and the launch files
-- (Megatron-LM's gdn attention variant; NOT EXPRESSIBLE notes for
-- TorchTitan and MindFormers).

local ROOT = os.getenv("APS_ROOT") or "."
local cjson = require "cjson"
local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local PATH = ROOT .. "/examples/models/qwen3-next-80b-a3b.json"

local function decoded()
  local f = assert(io.open(PATH))
  local cfg = cjson.decode(f:read("a"))
  f:close()
  return cfg
end

describe("qwen3_next import", function()
  -- Hand counts (transformers Qwen3NextModel, modeling_qwen3_next.py @
  -- 7515843b): 36 Gated DeltaNet mixers of 33,718,464 (tests/c/test_gdn.c);
  -- 12 gated attention mixers of 27,263,488 (q_proj 2048 x 8192, k, v 2048 x
  -- 512, o_proj 4096 x 2048, q/k norms 2 x 256); 48 MoE blocks of
  -- 1,614,809,088 (512 experts x 3 x 2048 x 512, router 512 x 2048, shared
  -- expert 3 x 2048 x 512, its gate 2048), 10 experts active: 35,653,632;
  -- 2 norms of 2048 per layer; embedding and output 2 x 151936 x 2048; final
  -- norm 2048 -> 79,674,391,296 total, 3,874,929,408 active.  Published:
  -- "80B in total and 3B activated" (model card).  The checkpoint's
  -- safetensors hold 81,324,862,720 (a listing of Qwen3-Next-80B-A3B-
  -- Instruct's 41 shards): these plus its MTP module, mtp.fc 4096 x 2048,
  -- 3 norms, one gated-attention + MoE layer, mtp.norm = 1,650,471,424,
  -- which transformers does not load (_keys_to_ignore_on_load_unexpected).
  it("Qwen3-Next-80B-A3B: 79,674,391,296 total, 3,874,929,408 active", function()
    local m, info = hf.load(PATH)
    assert.are.same({ 48, 2048, 16, 2, 256, 5120, 151936 }, { m.num_layers, m.hidden_size,
      m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size, m.vocab_size })
    assert.are.same({ 4, 16, 32, 128, 128, 4 }, { m.linear_attention_period, m.linear_num_key_heads,
      m.linear_num_value_heads, m.linear_key_head_dim, m.linear_value_head_dim, m.linear_conv_kernel_dim })
    assert.are.same({ true, true, true, 0.25 }, { m.attention_output_gate, m.norm_zero_centered, m.qk_norm,
      m.rotary_percent })
    assert.are.same({ 512, 10, 512, 512, true }, { m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size,
      m.shared_expert_ffn_hidden_size, m.shared_expert_gate })
    local c = core.model_params(m)
    assert.are.equal(79674391296, c.total)
    assert.are.equal(3874929408, c.active)
    local mtp = 2048 * 4096 + 5 * 2048 + 27263488 + 1614809088
    assert.are.equal(1650471424, mtp)
    assert.are.equal(81324862720, c.total + mtp)
    assert.are.equal(80, math.floor(c.total / 1e9 + 0.5))
    assert.are.equal(3, c.active // 1e9)
    assert.truthy(table.concat(info.notes, "\n"):find("mtp.*", 1, true))
  end)

  -- Qwen3NextDecoderLayer: a dense MLP of intermediate_size 5120 (3 x 2048 x
  -- 5120 = 31,457,280) on the layers in mlp_only_layers and those whose
  -- (i + 1) is not a multiple of decoder_sparse_step, in place of the MoE
  -- block of 1,614,809,088.
  it("mlp_only_layers and decoder_sparse_step give dense layers", function()
    local cfg = decoded()
    cfg.mlp_only_layers = { 0 }
    assert.are.equal(78091039488, core.model_params(hf.from_config(cfg, "q.json")).total)
    cfg.mlp_only_layers, cfg.decoder_sparse_step = {}, 2
    assert.are.equal(41673947904, core.model_params(hf.from_config(cfg, "q.json")).total)
  end)

  it("reads layer_types as Qwen3NextConfig writes it, and refuses another list", function()
    local cfg = decoded()
    local lt = {}
    for i = 1, 48 do lt[i] = i % 4 == 0 and "full_attention" or "linear_attention" end
    cfg.layer_types, cfg.full_attention_interval = lt, nil -- the default interval 4
    assert.are.equal(4, hf.from_config(cfg, "q.json").linear_attention_period)
    -- layer_types wins over full_attention_interval, as in transformers
    -- (the interval only fills layer_types in when it is absent)
    local lt3 = {}
    for i = 1, 48 do lt3[i] = i % 3 == 0 and "full_attention" or "linear_attention" end
    cfg.layer_types, cfg.full_attention_interval = lt3, 4
    assert.are.equal(3, hf.from_config(cfg, "q.json").linear_attention_period)
    cfg.layer_types = lt
    lt[5] = "full_attention"
    assert.are.equal("NotImplemented: q.json: layer_types[4]: full_attention breaks the period 4 of the " ..
      "first full_attention layer (apsearch prices every k-th layer as full attention) " ..
      '(got "full_attention")', H.err_of(hf.from_config, cfg, "q.json"))
  end)
end)

describe("qwen3_next: bad values exit 2 naming file, key and value", function()
  local cases = {
    { "full_attention_interval", 0, "full_attention_interval: expected an integer in [1, num_hidden_layers = 48] " ..
      "(got 0)" },
    { "full_attention_interval", 49, "full_attention_interval: expected an integer in [1, num_hidden_layers = 48] " ..
      "(got 49)" },
    { "layer_types", { "linear_attention" }, "layer_types: expected an array of num_hidden_layers = 48 layer types" },
    { "linear_num_key_heads", 0, "linear_num_key_heads: expected a positive integer <= 16777216 (got 0)" },
    { "linear_num_value_heads", 24, "linear_num_value_heads (model.linear_num_value_heads): 24 is not a " ..
      "multiple of linear_num_key_heads 16" },
    { "linear_key_head_dim", -1, "linear_key_head_dim: expected a positive integer <= 16777216 (got -1)" },
    { "linear_value_head_dim", 1.5, "linear_value_head_dim: expected a positive integer <= 16777216 (got 1.5)" },
    { "linear_conv_kernel_dim", "4", 'linear_conv_kernel_dim: expected a positive integer <= 16777216 (got "4")' },
    { "shared_expert_intermediate_size", -512, "shared_expert_intermediate_size: expected an integer in " ..
      "[0, 16777216] (got -512)" },
    { "hidden_act", "gelu", 'hidden_act: expected "silu" (the Gated DeltaNet conv and the SwiGLU experts\' ' ..
      'activation) (got "gelu")' },
    { "attention_bias", true, "NotImplemented: %s: attention_bias: Qwen3-Next attention with biases is not " ..
      "modelled (got true)" },
    { "mtp_num_hidden_layers", -1, "mtp_num_hidden_layers: expected an integer in [0, 16777216] (got -1)" },
    -- an object, not an array (it was taken as an empty list)
    { "mlp_only_layers", { ["0"] = 1 }, "mlp_only_layers: expected an array of layer indices (got {[\"0\"] = 1})" },
  }
  local dir = H.tmpdir()
  for i, case in ipairs(cases) do
    it(case[1] .. " = " .. cjson.encode(case[2]), function()
      local cfg = decoded()
      cfg[case[1]] = case[2]
      local path = dir .. "/bad" .. i .. ".json"
      H.write(path, cjson.encode(cfg))
      local code, _, err = H.apsearch("inspect", path)
      assert.are.equal(2, code, err)
      local want = case[3]:find("%s", 1, true) and case[3]:format(path) or (path .. ": " .. case[3])
      assert.truthy(err:find(want, 1, true), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err) -- one line
    end)
  end
end)

describe("qwen3_next: pipelined strategies rank", function()
  it("--model qwen3-next-80b-a3b --cluster h100-sxm-80gb:64 ranks pp > 1 (and full recompute), never cp > 1", function()
    local code, out, err = H.apsearch("run", "--model", "qwen3-next-80b-a3b", "--cluster", "h100-sxm-80gb:64",
      "--top-k", "10", "--format", "json", "--quiet")
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local pp, full = 0, false
    for _, s in ipairs(r.top_k_strategies) do
      assert.are.equal(1, s.cp_degree)
      if s.pp_degree > 1 then pp = pp + 1 end
      full = full or s.layer_recompute == "full"
    end
    assert.is_true(pp >= 5, out:sub(1, 600))
    assert.is_true(r.top_k_strategies[1].pp_degree > 1)
    assert.is_true(full, "no full recompute among the top 10")
  end)
end)

describe("qwen3_next: apsearch run", function()
  it("finds feasible strategies on 64 H100 nodes, with a breakdown and the gdn flags", function()
    local dir = H.tmpdir()
    local code, out, err = H.apsearch("run", "--model", "examples/models/qwen3-next-80b-a3b.json",
      "--cluster", "h100-sxm-80gb:64", "--top-k", "1", "--format", "json", "--quiet", "--out", dir)
    assert.are.equal(0, code, err)
    local r = cjson.decode(out)
    local top = r.top_k_strategies[1]
    assert.is_not_nil(top, out:sub(1, 400))
    -- pipelined strategies are priced rank by rank (src/core/gdn.c) and
    -- rank first: pp 1 gave 7.802 s at best (tp 2, selective), pp 4 x
    -- vpp 4 gives 5.094 s; CP stays refused
    assert.is_true(top.pp_degree > 1, out:sub(1, 400))
    assert.are.equal(1, top.cp_degree)
    -- each rank's parameters by the kinds of its layers: chunk j of 3
    -- layers holds global layers 3j .. 3j + 2, so rank 0 (chunks 0, 4, 8,
    -- 12: layers = 0, 1, 2 mod 4) has no gated attention and every other
    -- rank 4; with as many layers, rank 0's Gated DeltaNet mixers make its
    -- decoder layers 4 x (33,718,464 - 27,263,488) = 25,819,904 larger
    -- than rank 1's (mixers of tests/c/test_gdn.c; embedding 311,164,928)
    if top.pp_degree == 4 and top.vpp_degree == 4 and top.tp_degree == 1 then
      local st = r.stage_summary[1].stages
      assert.are.equal(25819904, st[1].params - 311164928 - st[2].params)
      assert.are.equal(st[2].params, st[3].params)
    end
    assert.is_true(#r.memory_breakdown > 0 and #r.stage_summary > 0)
    assert.is_true(top.performance_cost.step_time > 0 and top.memory_cost.total > 0)
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    for _, flag in ipairs({ "--experimental-attention-variant gdn", "--linear-attention-freq 4",
        "--linear-conv-kernel-dim 4", "--linear-key-head-dim 128", "--linear-value-head-dim 128",
        "--linear-num-key-heads 16", "--linear-num-value-heads 32", "--attention-output-gate",
        "--apply-layernorm-1p", "--rotary-percent 0.25", "--qk-layernorm", "--num-experts 512",
        "--moe-router-topk 10", "--moe-shared-expert-intermediate-size 512", "--moe-shared-expert-gate",
        "pretrain_gpt.py" }) do
      assert.truthy(sh:find(flag, 1, true), flag .. "\n" .. sh)
    end
    -- every Gated DeltaNet flag with a value has its fact (apsearch.launch.options)
    local options = require "apsearch.launch.options"
    local block = assert(sh:match("MEGATRON_ARGS=%((.-)\n%)"), sh)
    for flag, val in block:gmatch("\n  (%-%-[%w%-]+) ([^\n]+)") do
      local fact = options.megatron.facts[flag]
      if flag:find("linear", 1, true) or flag:find("attention-variant", 1, true) then
        assert.truthy(fact, "no fact for " .. flag)
      end
      fact = fact or {}
      if fact.type == "int" then assert.is_true(tonumber(val) >= (fact.min or 1), flag .. " " .. val) end
      if fact.values then assert.is_true(fact.values[val] == true, flag .. " " .. val) end
    end
    local tt = H.read(dir .. "/launch/rank1_torchtitan.py")
    assert.truthy(tt:find("NOT EXPRESSIBLE in TorchTitan: the Gated DeltaNet layers", 1, true), tt:sub(1, 2000))
    assert.truthy(H.read(dir .. "/launch/rank1_mindformers.yaml"):find("NOT EXPRESSIBLE in MindFormers: the " ..
      "Gated DeltaNet layers", 1, true))
  end)
end)
