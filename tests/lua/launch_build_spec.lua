--- tests/lua/launch_build_spec.lua -- a Megatron-LM script builds the job
-- that was estimated: the layers per (pipeline rank, virtual stage) that
-- Megatron-LM derives from the script's flags equal the estimate's model
-- chunks (under every pipeline_split, with a layer_offset, balanced, even
-- and uneven, interleaved or not), and the window flags put the estimated
-- window on the estimated layers.
--
-- Megatron-LM cannot run here (no torch); its rules are transcribed below
-- from the functions that decide what a launch builds, at d98e8a64.  The
-- same scripts went through Megatron's own parse_args / validate_args /
-- core_transformer_config_from_args / get_num_layers_to_build /
-- is_layer_window_attention out of the suite (docs/launch.md).
local core = require "apsearch.core"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local launch = require "apsearch.launch"
local megatron = require "apsearch.launch.megatron"

local ROOT = os.getenv("APS_ROOT") or "."

--- A 1B-class model of L layers on 8 H100s (a policy's model table).
local function model(L, extra)
  local m = { name = "m", num_layers = L, hidden_size = 1024, num_attention_heads = 16,
    num_query_groups = 8, ffn_hidden_size = 4096, vocab_size = 32000 }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

--- The Megatron script of one strategy, its flags (flag -> value, true for
-- a switch) and the estimate.
local function script(m, strategy)
  local p = policy.from_table({ model = m, cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
    training = { global_batch_size = 64, seq_length = 2048, framework = "megatron" }, top_k = 1 },
    ROOT .. "/examples/x.lua")
  local ctx = search.context(p)
  local est = ctx:estimate(strategy)
  assert(est.feasible, est.message)
  local rec = { rank = 1, devices_used = est.devices_used, memory_cost = {}, performance_cost = {} }
  for k, v in pairs(est.strategy) do rec[k] = v end
  local stages = {}
  for i, st in ipairs(est.stages) do stages[i] = { num_layers = st.num_layers, recompute_layers = 0 } end
  local result = { inputs = ctx:inputs(), top_k_strategies = { rec }, stage_summary = { { stages = stages } } }
  local text = megatron.render(launch.context(result, rec))
  local flags = {}
  for flag, value in text:gmatch("\n  (%-%-[%w%-]+) ?([^\n]*)") do
    flags[flag] = value ~= "" and (value:match("^'(.*)'$") or value) or true
  end
  return flags, est, rec
end

-- Megatron-LM's layers per chunk from the flags (tests/lua/megatron_layers.lua)
local megatron_chunks = require("megatron_layers").chunks

--- The estimate's chunks, as the core split them.
local function estimate_chunks(L, rec)
  return core.chunk_layers(L, search.strategy_of(rec))
end

describe("Megatron-LM scripts build the estimated pipeline split", function()
  it("a layer_offset under embedding_loss is written as the offset's split, not the rule's", function()
    -- 32 layers, pp 2, offset +1/-1: estimated 17 / 15; the account flags
    -- would build (32 + 2) / 2 - 1 = 16 on both ranks
    local f, est, rec = script(model(32), { pp_degree = 2, dp_degree = 4, zero_stage = 1, micro_batch_size = 1,
      pipeline_split = "embedding_loss", layer_offset = { 1, -1 } })
    assert.are.same({ 17, 15 }, { est.stages[1].num_layers, est.stages[2].num_layers })
    assert.is_nil(f["--account-for-embedding-in-pipeline-split"])
    assert.is_nil(f["--account-for-loss-in-pipeline-split"])
    assert.are.equal("17", f["--decoder-first-pipeline-num-layers"])
    assert.are.same({ 17, 15 }, (megatron_chunks(f, 32)))
    assert.are.same(estimate_chunks(32, rec), (megatron_chunks(f, 32)))
  end)

  it("every split, even and uneven, interleaved or not, builds the estimated chunks", function()
    local cases = {
      -- L, pp, vpp, split, layer_offset, Megatron's chunks (by hand)
      { 30, 4, 2, "embedding_loss", nil, { 3, 4, 4, 4, 4, 4, 4, 3 } },       -- (30 + 2) / 8 = 4, ends one fewer
      { 62, 8, 1, "embedding_loss", nil, { 7, 8, 8, 8, 8, 8, 8, 7 } },
      { 46, 2, 2, "embedding_loss", nil, { 11, 12, 12, 11 } },
      { 32, 4, 2, "embedding_loss", { 2, 2, -2, -2 }, { 5, 5, 3, 3, 5, 5, 3, 3 } },
      { 32, 4, 1, "fill_last", { 1, 1, -1, -1 }, { 9, 9, 7, 7 } },
      { 61, 4, 2, "fill_last", nil, { 8, 8, 8, 8, 8, 8, 8, 5 } },
      -- 61 over 8 x 4: the first chunk 1, 30 of 2, the last the loss alone,
      -- NVIDIA's Et|(tt|)*30L (src/core/pipeline.c split_rule)
      { 61, 8, 4, "fill_last", nil, { 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        2, 2, 2, 2, 2, 0 } },
      { 32, 4, 1, "even", { 2, 0, 0, -2 }, { 10, 8, 8, 6 } },                -- first / last counts
      { 32, 2, 4, "even", { -4, 4 }, { 3, 5, 3, 5, 3, 5, 3, 5 } },
      { 32, 4, 2, "even", nil, { 4, 4, 4, 4, 4, 4, 4, 4 } },
    }
    for _, c in ipairs(cases) do
      local L, pp, vpp = c[1], c[2], c[3]
      local s = { pp_degree = pp, vpp_degree = vpp, dp_degree = 8 // pp, zero_stage = 1, micro_batch_size = 1,
        pipeline_split = c[4], layer_offset = c[5] }
      local f, _, rec = script(model(L), s)
      local what = string.format("L %d pp %d vpp %d %s %s", L, pp, vpp, c[4], c[5] and table.concat(c[5], ":") or "")
      assert.are.same(c[6], estimate_chunks(L, rec), what)
      assert.are.same(c[6], megatron_chunks(f, L), what)
    end
  end)

  -- a hybrid model: the chunks are the '|' segments of its pattern, and no
  -- other split flag (Megatron-LM d98e8a64 arguments.py:802-862 asserts
  -- the layout, the virtual-stage and the account flags away with a
  -- hybrid pattern, and the first / last counts with '|')
  it("a hybrid model's chunks are its pattern's '|' segments, every split", function()
    local pattern = "M-M*M-M-M*M-M-M-M*M-"
    local hyb = model(#pattern, { hybrid_layer_pattern = pattern, mamba_num_heads = 16, mamba_head_dim = 64,
      mamba_state_dim = 64, mamba_num_groups = 2, mlp = "relu2", norms_per_layer = 1, position_embedding = "none" })
    local cases = {
      -- pp, vpp, split, layer_offset, balanced, Megatron's chunks (by hand)
      { 2, 1, "even", nil, false, { 10, 10 } },
      -- 20 + 2 units over 8 chunks: 3 on the first 6, 2 on the last 2, the
      -- first and the last chunk one fewer (src/core/pipeline.c split_rule)
      { 4, 2, "embedding_loss", nil, false, { 2, 3, 3, 3, 3, 3, 2, 1 } },
      { 4, 1, "even", { 1, 1, -1, -1 }, false, { 6, 6, 4, 4 } },
      { 2, 2, "even", { -2, 2 }, false, { 4, 6, 4, 6 } },
      { 4, 1, "even", nil, true },
    }
    for _, c in ipairs(cases) do
      local s = { pp_degree = c[1], vpp_degree = c[2], dp_degree = 8 // c[1], zero_stage = 1, micro_batch_size = 1,
        pipeline_split = c[3], layer_offset = c[4], balance_stages = c[5] or nil }
      local f, _, rec = script(hyb, s)
      local what = string.format("pp %d vpp %d %s", c[1], c[2], c[3])
      local got, v = megatron_chunks(f, #pattern)
      if c[6] then assert.are.same(c[6], got, what) end
      assert.are.same(estimate_chunks(#pattern, rec), got, what)
      assert.are.equal(c[2], v, what)
      assert.are.equal(pattern, (f["--hybrid-layer-pattern"]:gsub("|", "")), what)
      for _, flag in ipairs({ "--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers",
          "--decoder-last-pipeline-num-layers", "--num-layers-per-virtual-pipeline-stage",
          "--num-virtual-stages-per-pipeline-rank", "--account-for-embedding-in-pipeline-split",
          "--account-for-loss-in-pipeline-split" }) do
        assert.is_nil(f[flag], what .. ": " .. flag)
      end
    end
  end)

  -- a Gated DeltaNet model: the split flags of any GPT model, and each rank
  -- holds the kinds of its global layer ids (Megatron-LM d98e8a64
  -- experimental_attention_variant_module_specs.py l.322-332 slices the
  -- whole pattern's specs); the estimate prices each rank by them.  Per
  -- layer (h 1024, 16 heads of 64, 8 KV heads, SwiGLU 4096, RMSNorm, two
  -- norms): attention 1024 x 32 x 64 + 1024 x 1024 = 3,145,728, Gated
  -- DeltaNet (K 4 x 64, V 8 x 64) in_proj 1024 x 1552, out_proj 512 x
  -- 1024, conv 1024 x 4, dt_bias and A_log 16, norm 64 = 2,117,712, MLP
  -- 12,582,912, norms 2048; embedding and output 32000 x 1024 each.
  it("a Gated DeltaNet model's ranks hold the estimated layers and kinds, every split", function()
    local gdn = model(16, { mlp = "swiglu", linear_attention_period = 4, linear_num_key_heads = 4,
      linear_num_value_heads = 8, linear_key_head_dim = 64, linear_value_head_dim = 64, linear_conv_kernel_dim = 4 })
    local MLP, N = 12582912, 2048
    local A, G, E = 3145728 + MLP + N, 2117712 + MLP + N, 32000 * 1024
    local cases = {
      -- pp, vpp, split, layer_offset, Megatron's attention layers per rank (by hand)
      { 2, 1, "even", nil, { 2, 2 } },
      { 4, 2, "even", nil, { 0, 2, 0, 2 } },           -- chunks of 2: rank r layers 2r, 2r+1, 8+2r, 9+2r
      { 4, 1, "even", { -1, 1, -1, 1 }, { 0, 2, 0, 2 } },  -- 3, 5, 3, 5 layers: 0-2, 3-7, 8-10, 11-15
      { 2, 1, "fill_last", nil, { 2, 2 } },
    }
    for _, c in ipairs(cases) do
      local f, est, rec = script(gdn, { pp_degree = c[1], vpp_degree = c[2], dp_degree = 8 // c[1], zero_stage = 1,
        micro_batch_size = 1, pipeline_split = c[3], layer_offset = c[4] })
      local what = string.format("pp %d vpp %d %s", c[1], c[2], c[3])
      assert.are.equal("4", f["--linear-attention-freq"], what)
      assert.are.same(estimate_chunks(16, rec), (megatron_chunks(f, 16)), what)
      local kinds = require("megatron_layers").kinds(f, 16)
      for i, st in ipairs(est.stages) do
        local k = kinds[i]
        assert.are.equal(c[5][i], k.attn, what .. " rank " .. i)
        assert.are.equal(st.num_layers, k.attn + k.gdn, what .. " rank " .. i)
        local want = k.attn * A + k.gdn * G + (i == 1 and E or 0) + (i == c[1] and E + 1024 or 0)
        assert.are.equal(want, st.params, what .. " rank " .. i)
      end
    end
  end)

  it("a balanced split (layer_offset = balanced) under embedding_loss is the balanced one", function()
    local f, est, rec = script(model(30), { pp_degree = 4, vpp_degree = 1, dp_degree = 2, zero_stage = 1,
      micro_batch_size = 1, pipeline_split = "embedding_loss", balance_stages = true })
    local per = {}
    for i, st in ipairs(est.stages) do per[i] = st.num_layers end
    assert.are.same(per, (megatron_chunks(f, 30)))
    assert.are.same(estimate_chunks(30, rec), (megatron_chunks(f, 30)))
  end)
end)

--- The layers (1-based) Megatron-LM d98e8a64 gives a window:
-- transformer/utils.py is_layer_window_attention (l.531-546): none without
-- --window-size; every layer without --window-attn-skip-freq; with an
-- integer k the layers whose number is not a multiple of k.
local function megatron_windowed(f, L)
  local out = {}
  if not f["--window-size"] then return out end
  local k = tonumber(f["--window-attn-skip-freq"])
  for i = 1, L do
    if not k or i % k ~= 0 then out[#out + 1] = i end
  end
  return out
end

describe("Megatron-LM scripts build the estimated sliding window", function()
  local dense = { pp_degree = 1, dp_degree = 8, zero_stage = 1, micro_batch_size = 1 }

  it("a window on every layer (sliding_window_layers 0) is --window-size W - 1,0 on all layers", function()
    -- the core counts sliding_window_layers = 0 with a window as every
    -- layer (include/apsearch/types.h): the estimate's keys per query are
    -- the windowed ones, (S w - w^2 / 2) / S
    local function flops(w)
      local p = policy.from_table({ model = model(32, { sliding_window = w }), cluster = { device = "h100-sxm-80gb",
        nodes = 1, devices_per_node = 8 }, training = { global_batch_size = 64, seq_length = 2048,
        framework = "megatron" } }, ROOT .. "/examples/x.lua")
      local ctx = search.context(p)
      return ctx:flops(dense, "model-causal"), ctx:inputs().model
    end
    local full = flops(0)
    local windowed, m = flops(512)
    assert.are.equal(0, m.sliding_window_layers)
    -- priced on all 32 layers: 3 x 4 B S (S / 2 - (w - w^2 / 2S)) a d L fewer
    -- FLOPs = 3 x 4 x 131072 x (1024 - 448) x 1024 x 32
    assert.are.equal(29686813949952, math.floor(full - windowed + 0.5))
    local f = script(model(32, { sliding_window = 512 }), dense)
    assert.are.equal("511,0", f["--window-size"])
    assert.is_nil(f["--window-attn-skip-freq"])
    assert.are.equal(32, #megatron_windowed(f, 32))
  end)

  it("a window with a period k is on the layers whose number is not a multiple of k", function()
    -- 26 layers, k 6 (Gemma 3): 26 - 26 // 6 = 22 windowed, layers 6, 12, 18, 24 full
    local f = script(model(26, { sliding_window = 512, sliding_window_layers = 22, sliding_window_period = 6 }), dense)
    assert.are.equal("511,0", f["--window-size"])
    assert.are.equal("6", f["--window-attn-skip-freq"])
    local w = megatron_windowed(f, 26)
    assert.are.equal(22, #w)
    for _, i in ipairs(w) do assert.are_not.equal(0, i % 6) end
  end)
end)

--- `apsearch run ... --out DIR` with `extra` arguments: exit code, result
-- table, stderr, the candidates.csv records (header first).
local function run_out(extra)
  local H = require "spec_helpers"
  local cjson = require "cjson"
  local dir = H.tmpdir() .. "/out"
  local args = { "run", "examples/llama3_8b_h100.lua", "--set", "training.framework=megatron",
    "--set", "training.exp_avg_bf16=true", "--top-k", "5", "--out", dir, "--format", "json" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  local code, out, err = H.apsearch(table.unpack(args))
  local csv = require("apsearch.csvread").parse(H.read(dir .. "/candidates.csv") or "", "candidates.csv")
  return code, code <= 1 and cjson.decode(out) or nil, err, csv
end

describe("apsearch run --launchable FRAMEWORK", function()
  it("ranks only strategies whose launch file builds the estimated job, the others counted as LAUNCH_DIFFERS", function()
    -- exp_avg_bf16 needs Megatron's distributed optimizer (zero_stage 1):
    -- the script of every other data-parallel layout (FSDP2, plain DDP)
    -- says NOT EXPRESSIBLE, so those strategies are not launchable
    local code, plain, _, csv = run_out()
    assert.are.equal(0, code)
    local col = {}
    for i, name in ipairs(csv[1]) do col[name] = i end
    local differ = 0
    for i = 2, #csv do
      if csv[i][col.zero_stage] ~= "1" then differ = differ + 1 end
    end
    assert.is_true(differ > 0)
    local marked = 0
    for _, rec in ipairs(plain.top_k_strategies) do
      if rec.launch_differs and rec.launch_differs.megatron then marked = marked + 1 end
    end
    assert.is_true(marked > 0, "the plain run ranks strategies whose Megatron script differs")

    local code2, res, err = run_out({ "--launchable", "megatron" })
    assert.are.equal(0, code2)
    local e = res.infeasible_summary.LAUNCH_DIFFERS
    assert.are.equal(differ, e.count)
    assert.are.equal("launchable", e.rule)
    assert.are.equal("estimate", e.phase)
    assert.truthy(e.message:find("^megatron: NOT EXPRESSIBLE in Megatron%-LM: exp_avg_bf16 without the distributed optimizer"))
    local s0, s1 = plain.all_candidate_summary, res.all_candidate_summary
    assert.are.equal(s0.estimated, s1.estimated)
    assert.are.equal(s0.feasible - differ, s1.feasible)
    assert.are.equal(s0.infeasible + differ, s1.infeasible)
    assert.are.equal(s1.estimated, s1.feasible + s1.infeasible)
    assert.are.equal(5, #res.top_k_strategies)
    for _, rec in ipairs(res.top_k_strategies) do
      assert.are.equal(1, rec.zero_stage)
      assert.is_nil((rec.launch_differs or {}).megatron)
    end
    assert.are.equal("megatron", res.inputs.launchable)
    assert.truthy(err:find(("LAUNCH_DIFFERS %d"):format(differ), 1, true), err)
    assert.truthy(err:find("--launchable megatron: only strategies its launch file builds as estimated", 1, true), err)
  end)

  it("says below the table, even with --quiet, whose framework estimated a --launchable ranking", function()
    -- a new user's finding (nu7 #8, nu8): --quiet dropped the only line
    -- saying the torchtitan files' strategies were estimated as Megatron-LM
    local H = require "spec_helpers"
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
      "--launchable", "torchtitan", "--quiet", "--top-k", "2")
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    assert.truthy(out:find("launch files: torchtitan's; the strategies are estimated as framework = megatron " ..
      "runs them (for torchtitan's own\n  overheads and space: --set training.framework=fsdp2)", 1, true), out)
    -- none with the engine's own framework
    code, out = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--launchable",
      "torchtitan", "--set", "training.framework=fsdp2", "--quiet", "--top-k", "2")
    assert.are.equal(0, code)
    assert.is_nil(out:find("launch files:", 1, true), out)
  end)

  it("leads what to relax with the setting a launch file names when it builds another job", function()
    -- a TorchTitan user's first MoE run (2026-12-07): the one --set that
    -- estimates TorchTitan's job was inside the example, after the advice
    -- to drop --launchable
    local html = require "apsearch.report.html"
    local out = { suggestions = {}, reasons = { { code = "LAUNCH_DIFFERS", count = 12, phase = "estimate",
      message = "torchtitan: NOT EXPRESSIBLE in TorchTitan: the load-balancing loss (coefficient 0.001): ...; " ..
        "--set model.moe_aux_loss_coeff=0 estimates the job without it" } } }
    html.relax_suggestions(out, false, false, true, false)
    assert.truthy(out.suggestions[1]:find("^launch: %-%-set model%.moe_aux_loss_coeff=0 estimates the job the " ..
      "example's launch file builds; otherwise, %-%-launchable keeps only"), out.suggestions[1])
    out = { suggestions = {}, reasons = { { code = "LAUNCH_DIFFERS", count = 1, phase = "estimate",
      message = "megatron: NOT EXPRESSIBLE: something" } } }
    html.relax_suggestions(out, false, false, true, false)
    assert.truthy(out.suggestions[1]:find("^launch: %-%-launchable keeps only"), out.suggestions[1])
  end)

  it("says what to relax when no strategy is launchable, and refuses an unknown framework", function()
    local H = require "spec_helpers"
    -- TorchTitan's llama3 model has no sliding window: no Mistral strategy is launchable there
    local code, out, err = H.apsearch("run", "--model", "mistral-7b-v0.1", "--launchable", "torchtitan")
    assert.are.equal(1, code)
    -- the built policy estimates Megatron-LM's job: the run says how to estimate TorchTitan's own
    assert.truthy(err:find('note: --launchable torchtitan keeps the strategies torchtitan\'s launch file builds, ' ..
      'estimated as framework = megatron runs them (its overheads and search space); for torchtitan\'s own, set ' ..
      'training.framework = "fsdp2" (--set training.framework=fsdp2)', 1, true), err)
    -- counted apart from the memory limit, first in what to relax, not
    -- among the closest strategies (they fit; their launch file differs)
    local early, over, differ = out:match("0 feasible of %d+ candidates %((%d+) filtered early, (%d+) over a limit, " ..
      "(%d+) not\n?%s*launchable by torchtitan%)")
    assert.truthy(differ and tonumber(differ) > 0, out)
    assert.truthy(out:find("what to relax:\n  1. launch: --launchable keeps only the strategies", 1, true), out)
    local closest = out:match("closest strategies %(least estimated memory%):\n(.-)\n\n")
    assert.truthy(closest and closest:find("MEMORY_LIMIT", 1, true), out)
    assert.is_nil(closest:find("LAUNCH_DIFFERS", 1, true))
    -- what the launch file cannot express, from the example; more hosts do
    -- not change it, so no probe of larger clusters
    assert.truthy(out:find("after the estimate%):%s+e%.g%.%s+torchtitan:%s+NOT%s+EXPRESSIBLE%s+in%s+TorchTitan:"), out)
    assert.is_nil(out:find("no fit up to", 1, true), out)
    -- a limit that would admit the closest strategy is not offered: its
    -- launch file has the same window
    local joined = out:gsub("\n +", " ")
    assert.truthy(joined:find("but raising the limit would not admit it: --launchable torchtitan refuses it too " ..
      "(NOT EXPRESSIBLE in TorchTitan: the 4096-token sliding window on 32 of 32 layers", 1, true), out)
    assert.is_nil(out:find("memory_limit_gib=", 1, true), out)
    local code2, _, err = H.apsearch("run", "--launchable", "deepspeed")
    assert.are.equal(2, code2)
    assert.are.equal('apsearch: --launchable: launchable: must be megatron, torchtitan, mindformers, automodel (got "deepspeed")\n', err)
  end)
end)
