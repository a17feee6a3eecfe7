-- tests/lua/router_spec.lua -- the MoE router as the model's config.json
-- gives it, and the launch flags that train it.
--
-- hf.lua reads the router keys (Mixtral, Qwen2/Qwen3-MoE: router_aux_loss_coef,
-- norm_topk_prob; DeepSeek-V2/V3: aux_loss_alpha, seq_aux, topk_method,
-- n_group, topk_group, norm_topk_prob, routed_scaling_factor,
-- scoring_func); the Megatron launcher maps them as Megatron-Bridge v0.5.0
-- does (model_bridge.py CONFIG_MAPPING, the DeepSeek and Qwen3-MoE
-- bridges), checked against Megatron-LM d98e8a64 moe_utils.py
-- topk_routing_with_score_function; TorchTitan's deepseek_v3 builder
-- (b5bcd76c) takes the model's groups, route scale and route norm; the
-- MindFormers writer writes the keys LLamaDecodeLayer's MoEV3 / MoEV2
-- (TopkRouterV2) read, checked against mindformers fd4deebc moe.py /
-- moev3.py.
-- Expected values are the configs' own numbers (shared/models/moe,
-- examples/models).
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local cjson = require "cjson"
local hf = require "apsearch.hf"
local megatron = require "apsearch.launch.megatron"
local tt = require "apsearch.launch.torchtitan"
local mindspore = require "apsearch.launch.mindspore"
local options = require "apsearch.launch.options"
local H = require "spec_helpers"

local ROOT = H.ROOT
-- shared/models/moe next to the repository, else tests/fixtures/moe (the
-- same files, copied), as hf_spec.lua finds them
local MOE = ROOT .. "/../shared/models/moe"
do
  local f = io.open(MOE .. "/deepseek-v2-lite.json")
  if f then f:close() else MOE = ROOT .. "/tests/fixtures/moe" end
end

local function cfg_of(path)
  local text = H.read(path)
  assert.is_string(text, path)
  return cjson.decode(text)
end
local function model_of(path, edit)
  local c = cfg_of(path)
  if edit then edit(c) end
  return hf.from_config(c, "m.json")
end

-- Megatron's router flags (in order) and notes for a model
local function router(m)
  local flags, notes = {}, {}
  megatron.router_args({ model = m }, function(flag, v)
    flags[#flags + 1] = v == nil and flag or (flag .. " " .. tostring(v))
  end, function(kind, text) notes[#notes + 1] = kind .. ": " .. text end)
  return flags, table.concat(notes, "\n")
end

local ROUTER_FIELDS = { "moe_aux_loss_coeff", "moe_seq_aux_loss", "moe_router_num_groups",
  "moe_router_group_topk", "moe_router_group_score_topk", "moe_router_topk_scaling_factor",
  "moe_router_pre_softmax" }
local function fields(m)
  local t = {}
  for _, k in ipairs(ROUTER_FIELDS) do t[k] = m[k] end
  return t
end

describe("hf.lua reads the router", function()
  it("of Mixtral, Qwen3-MoE, Qwen1.5-MoE, DeepSeek-V3 and DeepSeek-V2-Lite as their configs give it", function()
    -- Mixtral: router_aux_loss_coef 0.02, renormalised top-2 (no key)
    assert.are.same({ moe_aux_loss_coeff = 0.02 }, fields(hf.load(MOE .. "/mixtral-8x7b.json")))
    -- Qwen3-30B-A3B: router_aux_loss_coef 0.001, norm_topk_prob true
    assert.are.same({ moe_aux_loss_coeff = 0.001 }, fields(hf.load(MOE .. "/qwen3-30b-a3b.json")))
    -- Qwen1.5-MoE-A2.7B: norm_topk_prob false, no coefficient in the file
    assert.are.same({ moe_router_pre_softmax = true }, fields(hf.load(MOE .. "/qwen1.5-moe-a2.7b.json")))
    -- DeepSeek-V3: noaux_tc, n_group 8, topk_group 4 (a group scored by its
    -- top 2), routed_scaling_factor 2.5, norm_topk_prob true, no aux_loss_alpha
    assert.are.same({ moe_router_num_groups = 8, moe_router_group_topk = 4, moe_router_group_score_topk = 2,
      moe_router_topk_scaling_factor = 2.5 }, fields(hf.load(ROOT .. "/examples/models/deepseek-v3.json")))
    -- DeepSeek-V2-Lite: greedy, norm_topk_prob false, routed_scaling_factor 1.0
    assert.are.same({ moe_router_pre_softmax = true, moe_router_topk_scaling_factor = 1.0 },
      fields(hf.load(MOE .. "/deepseek-v2-lite.json")))
  end)

  it("follows each gate: seq_aux, topk_method, V2's scaling only without renormalisation, n_group 1", function()
    local lite = MOE .. "/deepseek-v2-lite.json"
    -- aux_loss_alpha with DeepseekV2Config's seq_aux default (true)
    local m = model_of(lite, function(c) c.aux_loss_alpha = 0.001 end)
    assert.are.same({ 0.001, true }, { m.moe_aux_loss_coeff, m.moe_seq_aux_loss })
    m = model_of(lite, function(c) c.aux_loss_alpha, c.seq_aux = 0.001, false end)
    assert.are.same({ 0.001 }, { m.moe_aux_loss_coeff, m.moe_seq_aux_loss })
    -- DeepSeek-V2's group_limited_greedy: a group's max (top 1)
    m = model_of(lite, function(c) c.topk_method, c.n_group, c.topk_group = "group_limited_greedy", 8, 3 end)
    assert.are.same({ 8, 3, 1 }, { m.moe_router_num_groups, m.moe_router_group_topk, m.moe_router_group_score_topk })
    -- greedy ignores n_group / topk_group (MoEGate), and n_group 1 limits nothing
    m = model_of(lite, function(c) c.n_group, c.topk_group = 8, 3 end)
    assert.is_nil(m.moe_router_num_groups)
    m = model_of(lite, function(c) c.topk_method, c.n_group, c.topk_group = "group_limited_greedy", 1, 1 end)
    assert.is_nil(m.moe_router_num_groups)
    -- V2 renormalised: routed_scaling_factor is not applied (else branch only)
    m = model_of(lite, function(c) c.norm_topk_prob, c.routed_scaling_factor = true, 16.0 end)
    assert.are.same({}, fields(m))
    -- V3 renormalises and then scales; without norm_topk_prob it only scales
    m = model_of(ROOT .. "/examples/models/deepseek-v3.json", function(c) c.norm_topk_prob = false end)
    assert.are.same({ true, 2.5 }, { m.moe_router_pre_softmax, m.moe_router_topk_scaling_factor })
  end)

  it("refuses a bad router value by file, key and value", function()
    local v3, q3 = ROOT .. "/examples/models/deepseek-v3.json", MOE .. "/qwen3-30b-a3b.json"
    local function err(path, edit) return H.err_of(model_of, path, edit) end
    assert.are.equal("m.json: routed_scaling_factor: expected a finite number >= 0 (got -1)",
      err(v3, function(c) c.routed_scaling_factor = -1 end))
    assert.are.equal('m.json: router_aux_loss_coef: expected a finite number >= 0 (got "0.01")',
      err(q3, function(c) c.router_aux_loss_coef = "0.01" end))
    assert.are.equal('m.json: norm_topk_prob: expected true or false (got "yes")',
      err(q3, function(c) c.norm_topk_prob = "yes" end))
    assert.are.equal('m.json: scoring_func: expected sigmoid with topk_method noaux_tc (DeepSeek-V3\'s gate) ' ..
      '(got "softmax")', err(v3, function(c) c.scoring_func = "softmax" end))
    assert.are.equal('m.json: topk_method: expected greedy, group_limited_greedy or noaux_tc (got "topk")',
      err(v3, function(c) c.topk_method = "topk" end))
    assert.are.equal("m.json: topk_group: expected a positive integer <= 16777216 (got 0)",
      err(v3, function(c) c.topk_group = 0 end))
    -- the core's checks, named by the config key
    assert.are.equal("m.json: n_group (model.moe_router_num_groups): must divide num_experts = 256 (got 7)",
      err(v3, function(c) c.n_group = 7 end))
    assert.are.equal("m.json: topk_group (model.moe_router_group_topk): must be in [1, moe_router_num_groups " ..
      "= 8] (got 9)", err(v3, function(c) c.topk_group = 9 end))
    assert.are.equal("m.json: topk_group (model.moe_router_group_topk): 1 groups of 4 experts hold fewer than " ..
      "experts_per_token = 8", err(v3, function(c) c.n_group, c.topk_group = 64, 1 end))
  end)
end)

describe("Megatron-LM router flags", function()
  it("train DeepSeek-V3 with its group-limited routing and score scaling", function()
    local flags, notes = router(hf.load(ROOT .. "/examples/models/deepseek-v3.json"))
    -- fp32 routing as Megatron-Bridge's DeepSeek-V3 bridge sets it (moe_router_dtype = "fp32",
    -- models/deepseek/deepseek_v3_bridge.py:75 @ 067f987df)
    assert.are.same({ "--moe-router-score-function sigmoid", "--moe-router-enable-expert-bias",
      "--moe-router-dtype fp32", "--moe-router-num-groups 8", "--moe-router-group-topk 4",
      "--moe-router-topk-scaling-factor 2.5" }, flags)
    -- Megatron scores a group by its best 8 // 4 = 2 experts, as noaux_tc
    assert.are.equal("NOTE: router settings the model does not use are left off, as Megatron's defaults have " ..
      "them: the " ..
      "load-balancing loss (the model gives no coefficient above 0: --moe-aux-loss-coeff 0, no auxiliary loss; " ..
      "balanced by the expert bias)", notes)
  end)

  it("train Mixtral-8x7B and Qwen3-30B-A3B with their load-balancing loss", function()
    local flags, notes = router(hf.load(ROOT .. "/examples/models/mixtral-8x7b.json"))
    assert.are.same({ "--moe-router-load-balancing-type aux_loss", "--moe-aux-loss-coeff 0.02" }, flags)
    assert.truthy(notes:find("NOTE: --moe-aux-loss-coeff is the config's coefficient unchanged", 1, true), notes)
    assert.truthy(notes:find("left off, as Megatron's defaults have them: group-limited routing, score scaling", 1, true), notes)
    -- Gemma 4's multimodal config (gemma4): its VL bridge's provider is
    -- Gemma4ModelProvider, moe_router_dtype fp32 (gemma4_provider.py:316)
    assert.is_true(hf.load(ROOT .. "/examples/models/gemma-4-26b-a4b.json").moe_router_fp32)
    -- neither bridge sets moe_router_dtype: Megatron's default, no flag
    flags = router(hf.load(ROOT .. "/examples/models/qwen3-30b-a3b.json"))
    assert.are.same({ "--moe-router-load-balancing-type aux_loss", "--moe-aux-loss-coeff 0.001" }, flags)
  end)

  it("train Qwen1.5-MoE and DeepSeek-V2-Lite without renormalising the top k", function()
    local flags, notes = router(hf.load(MOE .. "/qwen1.5-moe-a2.7b.json"))
    assert.are.same({ "--moe-router-pre-softmax" }, flags)
    assert.truthy(notes:find("the load-balancing loss (the model gives no coefficient above 0", 1, true), notes)
    -- DeepSeek-V2's bridge routes in fp32 (deepseek_v2_bridge.py:61)
    flags = router(hf.load(MOE .. "/deepseek-v2-lite.json"))
    assert.are.same({ "--moe-router-dtype fp32", "--moe-router-pre-softmax", "--moe-router-topk-scaling-factor 1" },
      flags)
    -- with DeepSeek's per-sequence loss
    flags = router(model_of(MOE .. "/deepseek-v2-lite.json", function(c) c.aux_loss_alpha = 0.001 end))
    assert.are.same({ "--moe-router-dtype fp32", "--moe-router-load-balancing-type seq_aux_loss",
      "--moe-aux-loss-coeff 0.001", "--moe-router-pre-softmax", "--moe-router-topk-scaling-factor 1" }, flags)
  end)

  it("write no flag whose meaning differs from the config's, and say so", function()
    local lite = MOE .. "/deepseek-v2-lite.json"
    -- group_limited_greedy (a group's max) with top-6 of 3 groups: Megatron
    -- scores a group by its best 6 // 3 = 2
    local flags, notes = router(model_of(lite, function(c)
      c.topk_method, c.n_group, c.topk_group = "group_limited_greedy", 8, 3 end))
    assert.are.same({ "--moe-router-dtype fp32", "--moe-router-pre-softmax", "--moe-router-topk-scaling-factor 1" },
      flags)
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: n_group = 8, topk_group = 3 with a group scored " ..
      "by its best 1 expert(s): group_limited_topk scores it by its best moe_router_topk / group_topk = 2", 1, true),
      notes)
    -- with topk_group 6, 6 // 6 = 1: the same group score, written
    flags = router(model_of(lite, function(c)
      c.topk_method, c.n_group, c.topk_group = "group_limited_greedy", 8, 6 end))
    assert.are.same({ "--moe-router-dtype fp32", "--moe-router-pre-softmax", "--moe-router-num-groups 8",
      "--moe-router-group-topk 6", "--moe-router-topk-scaling-factor 1" }, flags)
    -- sigmoid without renormalisation: Megatron divides by the sum
    flags, notes = router(model_of(ROOT .. "/examples/models/deepseek-v3.json",
      function(c) c.norm_topk_prob = false end))
    assert.is_nil(table.concat(flags, " "):find("pre-softmax", 1, true))
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: norm_topk_prob = false with sigmoid scores", 1, true))
    -- renormalised top-1 softmax: weight 1, which Megatron cannot give
    local m = hf.load(ROOT .. "/examples/models/mixtral-8x7b.json")
    m.experts_per_token = 1
    flags, notes = router(m)
    assert.is_nil(table.concat(flags, " "):find("pre-softmax", 1, true))
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: renormalised top-1 routing", 1, true), notes)
  end)

  it("are registered with their Megatron defaults", function()
    local facts = require("apsearch.launch.options").megatron
    for _, f in ipairs({ "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-router-num-groups",
      "--moe-router-group-topk", "--moe-router-topk-scaling-factor", "--moe-router-pre-softmax" }) do
      assert.is_true(facts.options[f], f)
    end
    assert.truthy(facts.facts["--moe-aux-loss-coeff"].constraint:find("default 0.0", 1, true))
    assert.is_true(facts.facts["--moe-router-load-balancing-type"].values.seq_aux_loss)
  end)
end)

describe("TorchTitan router arguments", function()
  local function titan(m)
    local mm = assert(tt.moe_model(m, 4096))
    local a, notes = {}, {}
    for _, kv in ipairs(mm.args) do a[kv[1]] = kv[2] end
    for _, n in ipairs(mm.notes) do notes[#notes + 1] = n[1] .. ": " .. n[2] end
    return a, table.concat(notes, "\n"), mm.flavor
  end

  it("take DeepSeek-V3's and DeepSeek-V2-Lite's groups, route scale and norm from the model", function()
    local a, notes, flavor = titan(hf.load(ROOT .. "/examples/models/deepseek-v3.json"))
    assert.are.equal("671B", flavor)
    assert.are.same({ 8, 4, 2.5, true }, { a.router_num_expert_groups, a.router_num_limited_groups,
      a.router_route_scale, a.router_route_norm })
    assert.is_nil(notes:find("router from the model", 1, true))  -- the 671B flavour's too
    a, notes, flavor = titan(hf.load(MOE .. "/deepseek-v2-lite.json"))
    assert.are.equal("16B", flavor)
    assert.are.same({ 1.0, false }, { a.router_route_scale, a.router_route_norm })
    assert.is_nil(a.router_num_expert_groups)
    -- topk_group 2 of DeepSeek-V3's 8 groups: the model's, not the flavour's 4
    a, notes = titan(model_of(ROOT .. "/examples/models/deepseek-v3.json", function(c) c.topk_group = 2 end))
    assert.are.same({ 8, 2 }, { a.router_num_expert_groups, a.router_num_limited_groups })
    assert.truthy(notes:find("NOTE: router from the model, not HEAD's 671B flavour: router_num_limited_groups",
      1, true), notes)
    -- a group's max (group_limited_greedy): TorchTitan sums its top 2
    a, notes = titan(model_of(MOE .. "/deepseek-v2-lite.json", function(c)
      c.topk_method, c.n_group, c.topk_group = "group_limited_greedy", 8, 3 end))
    assert.is_nil(a.router_num_expert_groups)
    assert.truthy(notes:find("NOT EXPRESSIBLE in TorchTitan: n_group = 8, topk_group = 3 with a group scored by " ..
      "its best 1 expert(s): TokenChoiceTopKRouter sums its top 2", 1, true), notes)
  end)

  it("say what _build_qwen3_moe_layers cannot take", function()
    local _, notes = titan(model_of(MOE .. "/qwen3-30b-a3b.json", function(c) c.norm_topk_prob = false end))
    assert.truthy(notes:find("NOT EXPRESSIBLE in TorchTitan: norm_topk_prob = false (moe_router_pre_softmax): " ..
      "_build_qwen3_moe_layers renormalises", 1, true), notes)
    assert.truthy(notes:find("NOT EXPRESSIBLE in TorchTitan: the load-balancing loss (coefficient 0.001)", 1, true),
      notes)
  end)
end)

describe("router settings in the CLI", function()
  local dir
  setup(function() dir = H.tmpdir() end)

  it("exit 2 with one line naming the file, key and value", function()
    local c = cfg_of(ROOT .. "/examples/models/deepseek-v3.json")
    c.n_group = 7
    local path = H.write(dir .. "/dsv3_g7.json", cjson.encode(c))
    local code, out, err = H.apsearch("inspect", path)
    assert.are.same({ 2, "" }, { code, out })
    assert.are.equal("apsearch: " .. path .. ": n_group (model.moe_router_num_groups): must divide " ..
      "num_experts = 256 (got 7)\n", err)
    local pol = H.write(dir .. "/neg.lua", "return { model = { config = " .. H.q(MOE .. "/qwen3-30b-a3b.json"):gsub(
      "'", '"') .. ", moe_aux_loss_coeff = -1 },\n" ..
      "  cluster = { device = 'h100-sxm-80gb', nodes = 2 }, training = { global_batch_size = 512, " ..
      "seq_length = 4096 } }\n")
    code, out, err = H.apsearch("run", pol)
    assert.are.same({ 2, "" }, { code, out })
    assert.truthy(err:match("^apsearch: [^\n]*model%.moe_aux_loss_coeff[^\n]*%-1[^\n]*\n$"), err)
  end)

  it("keeps result.json's model without the router fields a config does not give", function()
    local out = dir .. "/q15"
    local code, _, err = H.apsearch("run", "--model", MOE .. "/qwen1.5-moe-a2.7b.json", "--cluster",
      "h100-sxm-80gb:1", "--fix", "ep_degree=4", "--fix", "tp_degree=1", "--fix", "pp_degree=1",
      "--top-k", "1", "--out", out, "--quiet")
    assert.are.equal(0, code, err)
    local m = cjson.decode(H.read(out .. "/result.json")).inputs.model
    assert.is_true(m.moe_router_pre_softmax)
    for _, k in ipairs(ROUTER_FIELDS) do
      if k ~= "moe_router_pre_softmax" then assert.is_nil(m[k], k) end
    end
  end)
end)

-- MindFormers' router keys (moe_config.* -> value) and notes for a model,
-- on MoEV3 (gmm) or MoEV2 (TopkRouterV2)
local function mf_router(m, gmm)
  local keys, notes = {}, {}
  mindspore.router_keys({ model = m }, function(k, v)
    assert.is_nil(keys[k], k)
    keys[k] = v
  end, function(kind, text) notes[#notes + 1] = kind .. ": " .. text end, gmm)
  return keys, table.concat(notes, "\n")
end

-- the moe_config block of a MindFormers YAML as key -> text value
local function moe_block(text)
  local block = text:match("\nmoe_config:\n(.-)\n%S") or text:match("\nmoe_config:\n(.*)$")
  local t = {}
  for k, v in block:gmatch("\n?  ([%w_]+): ([^#\n]-)%s*[#\n]") do t[k] = v end
  return t
end

describe("MindFormers router keys (LLamaDecodeLayer's MoEV3 / MoEV2 @ fd4deebc)", function()
  local LOSS = "NOT EXPRESSIBLE in MindFormers: the load-balancing loss (moe_aux_loss_coeff = "

  it("of Mixtral, Qwen3-MoE and Qwen1.5-MoE: norm_topk_prob as the config renormalises, no loss", function()
    -- MixtralSparseMoeBlock renormalises its top 2 (MoEConfig's default
    -- True, written); router_aux_loss_coef 0.02 cannot reach the loss
    for _, gmm in ipairs({ true, false }) do
      local k, n = mf_router(hf.load(ROOT .. "/examples/models/mixtral-8x7b.json"), gmm)
      assert.are.same({ ["moe_config.norm_topk_prob"] = true }, k)
      assert.truthy(n:find(LOSS .. "0.02): LLamaDecodeLayer builds " .. (gmm and "MoEV3" or "MoEV2") ..
        " without return_extra_loss", 1, true), n)
      assert.truthy(n:find("aux_loss_factor (default 0.05) is read only by the TopkRouterV1 MoE layer", 1, true))
      -- the setting that estimates the job the file builds (run --launchable's what-to-relax quotes it)
      assert.truthy(n:find("none written (--set model.moe_aux_loss_coeff=0 estimates the job without it)", 1, true), n)
    end
    -- TorchTitan's note names it too
    local tt = require "apsearch.launch.torchtitan"
    local mm = assert(tt.moe_model(hf.load(ROOT .. "/examples/models/qwen3-30b-a3b.json"), 4096))
    local found
    for _, x in ipairs(mm.notes) do
      if x[2]:find("^the load%-balancing loss %(coefficient 0%.001%)") then found = x[2] end
    end
    local lift = "; --set model.moe_aux_loss_coeff=0 estimates the job without it"
    assert.are.equal(lift, found and found:sub(-#lift))
    -- Qwen3-30B-A3B: norm_topk_prob true, router_aux_loss_coef 0.001
    local k, n = mf_router(hf.load(ROOT .. "/examples/models/qwen3-30b-a3b.json"), true)
    assert.are.same({ ["moe_config.norm_topk_prob"] = true }, k)
    assert.truthy(n:find(LOSS .. "0.001): ", 1, true), n)
    -- Qwen1.5-MoE-A2.7B: norm_topk_prob false (the softmax weights of the
    -- top 4 as they are), no coefficient in the file: no note at all
    k, n = mf_router(hf.load(MOE .. "/qwen1.5-moe-a2.7b.json"), true)
    assert.are.same({ ["moe_config.norm_topk_prob"] = false }, k)
    assert.are.equal("", n)
  end)

  it("of DeepSeek: sigmoid, scaling, groups on TopkRouterV2 only; the expert bias not expressible", function()
    local v3 = hf.load(ROOT .. "/examples/models/deepseek-v3.json")
    -- MoEV2: noaux_tc scores a group by its top-2 sum (moe.py:1537), as
    -- DeepSeek-V3's gate; n_group 8, topk_group 4, routed_scaling_factor 2.5
    local k, n = mf_router(v3, false)
    assert.are.same({ ["moe_config.use_gating_sigmoid"] = true, ["moe_config.norm_topk_prob"] = true,
      ["moe_config.routed_scaling_factor"] = 2.5, ["moe_config.topk_method"] = "noaux_tc",
      ["moe_config.n_group"] = 8, ["moe_config.topk_group"] = 4 }, k)
    assert.truthy(n:find("NOT EXPRESSIBLE in MindFormers: the expert bias (moe_router_bias)", 1, true), n)
    assert.is_nil(n:find("load-balancing", 1, true))      -- aux_loss_alpha absent
    -- MoEV3 has no group-limited routing
    k, n = mf_router(v3, true)
    assert.is_nil(k["moe_config.n_group"])
    assert.is_nil(k["moe_config.topk_method"])
    assert.truthy(n:find("NOT EXPRESSIBLE in MindFormers: n_group = 8, topk_group = 4: MoEV3 (use_gmm) has " ..
      "no group-limited routing", 1, true), n)
    -- no score count given (Megatron's meaning): top-k / group_topk = 8 / 4 = 2 -> noaux_tc
    v3.moe_router_group_score_topk = nil
    assert.are.equal("noaux_tc", mf_router(v3, false)["moe_config.topk_method"])
    -- a group scored by its best 3: neither max nor top-2 sum
    v3.moe_router_group_score_topk = 3
    k, n = mf_router(v3, false)
    assert.is_nil(k["moe_config.n_group"])
    assert.truthy(n:find("n_group = 8, topk_group = 4 with a group scored by its best 3 expert(s) over 256", 1,
      true), n)
    -- DeepSeek-V2-Lite: greedy top-6, not renormalised, routed_scaling_factor 1.0
    k = mf_router(hf.load(MOE .. "/deepseek-v2-lite.json"), true)
    assert.are.same({ ["moe_config.norm_topk_prob"] = false, ["moe_config.routed_scaling_factor"] = 1.0 }, k)
  end)

  it("top-1: renormalised (weight 1) not expressible, as they renormalise only when k > 1", function()
    local m = model_of(ROOT .. "/examples/models/mixtral-8x7b.json", function(c) c.num_experts_per_tok = 1 end)
    local k, n = mf_router(m, true)
    assert.is_nil(k["moe_config.norm_topk_prob"])
    assert.truthy(n:find("NOT EXPRESSIBLE in MindFormers: renormalised top-1 routing (weight 1): MoEV3 " ..
      "renormalises only when num_experts_chosen > 1", 1, true), n)
  end)

  it("in the YAML apsearch writes, each key registered with an accepted value", function()
    local dir = H.tmpdir()
    local want = {
      { ROOT .. "/examples/models/mixtral-8x7b.json", { expert_num = "8", num_experts_chosen = "2",
        norm_topk_prob = "True" }, "0.02" },
      -- Qwen1.5-MoE without its shared expert (Qwen3-MoE's Q/K norms are
      -- weights LlamaConfig does not build: M.shape_lacks): every layer
      -- MoE, so intermediate_size is the experts' 1,408, not the
      -- config's dense 5,632; norm_topk_prob false (Qwen2MoeConfig's);
      -- the file gives no router_aux_loss_coef and no loss is trained
      { "qwen15-noshared", { expert_num = "60", num_experts_chosen = "4", norm_topk_prob = "False" }, nil,
        "1408" },
      -- shared experts: LlamaConfig would build another model, so no
      -- moe_config (the router's keys: mf_router above)
      { MOE .. "/qwen1.5-moe-a2.7b.json", nil },
    }
    local q = cfg_of(MOE .. "/qwen1.5-moe-a2.7b.json")
    q.shared_expert_intermediate_size = 0
    want[2][1] = H.write(dir .. "/qwen15-noshared.json", cjson.encode(q))
    for i, w in ipairs(want) do
      local out = dir .. "/m" .. i
      local code, _, err = H.apsearch("run", "--model", w[1], "--cluster", "h100-sxm-80gb:2x8", "--fix",
        "moe_grouped_gemm=true", "--top-k", "1", "--out", out, "--quiet")
      assert.are.equal(0, code, err)
      local text = H.read(out .. "/launch/rank1_mindformers.yaml")
      if not w[2] then
        assert.is_nil(text:find("\nmoe_config:", 1, true), text)
        assert.truthy(text:find("# NOT WRITTEN: the model's architecture (model.model_config's type and sizes, " ..
          "model.arch, moe_config): LlamaConfig would build a model of other weights (shared experts)", 1, true), text)
        goto next
      end
      do
      if w[4] then assert.truthy(text:find("\n    intermediate_size: " .. w[4] .. "  # the experts' width", 1, true), text) end
      local moe = moe_block(text)
      for key, v in pairs(w[2]) do assert.are.equal(v, moe[key], key) end
      for _, key in ipairs({ "aux_loss_factor", "aux_loss_types", "aux_loss_factors", "routed_scaling_factor",
        "use_gating_sigmoid", "topk_method", "n_group", "topk_group" }) do
        assert.is_nil(moe[key], key)
      end
      for key in pairs(moe) do assert.is_truthy(options.mindformers.keys["moe_config." .. key], key) end
      if w[3] then
        assert.truthy(text:find("# " .. LOSS .. w[3] .. "): ", 1, true), w[1])
      else
        assert.is_nil(text:find("load-balancing", 1, true))
      end
      end
      ::next::
    end
  end)
end)
