-- tests/lua/moe_outputs_spec.lua -- what a mixture-of-experts user reads
-- (newuser5, 2026-12-02): the multi-token-prediction depths and the
-- experts named in the run log, the estimate and the report; the
-- selective recompute modules in the estimate's strategy line; the
-- settings `apsearch validate` assumed for empty columns, in its text
-- output.
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local policy = require "apsearch.policy"
local search = require "apsearch.search"
local html = require "apsearch.report.html"
local common = require "apsearch.format.common"
local breakdown = require "apsearch.format.breakdown"
local validate = require "apsearch.validate"

local H = require "spec_helpers"
local ROOT = os.getenv("APS_ROOT") or "."

-- DeepSeek-V3 with one MTP depth on 64 H100 hosts: PP 16 over 61 layers,
-- balanced (the last stage runs the MTP layer after its decoder layers)
local RAW = {
  model = "deepseek-v3",
  cluster = { device = "h100-sxm-80gb", nodes = 64, devices_per_node = 8 },
  training = { global_batch_size = 4096, seq_length = 4096, precision = "bf16",
               framework = "megatron", mtp_num_layers = 1 },
  search_space = { data_parallel = "auto", zero_stage = { 1 }, tp_degree = { 1 },
    pp_degree = { 16 }, layer_offset = { "balanced" }, micro_batch_size = { 1 },
    layer_recompute = { "selective" }, recompute_modules = { "mla_up_proj/mlp/moe" },
    ep_degree = { 16 } },
  top_k = 1,
}

describe("multi-token prediction and experts in the outputs", function()
  local result
  setup(function()
    result = search.run(policy.from_table(RAW, "dsv3.lua", { quiet = true }))
  end)

  it("names the MTP depths and the experts where the training and model are described", function()
    assert.are.equal(", MTP 1", common.mtp_note({ mtp_num_layers = 1 }))
    assert.are.equal("", common.mtp_note({ mtp_num_layers = 0 }))
    assert.are.equal("", common.mtp_note({}))
    -- with the model, the trained depths' parameters: one DeepSeek-V3 MTP
    -- depth is an MoE layer (MLA 187,107,328 + norms 14,336 + 256 experts
    -- and a shared one of 3 x 7168 x 2048, router 256 x 7168 and its bias
    -- 256: 11,507,286,272), enorm, hnorm and the final norm (3 x 7168) and
    -- eh_proj (2 x 7168^2): 11,610,068,224; Megatron runs the model's own
    -- embedding and output layer (the checkpoint's model.layers.61 also
    -- stores copies, 2 x 129,280 x 7168 more); two depths twice that, a
    -- repeated layer once
    local m = result.inputs.model
    assert.are.equal(11610068224, common.mtp_depth_params(m))
    assert.are.equal(", MTP 1 (+11.61B parameters)", common.mtp_note({ mtp_num_layers = 1 }, m))
    assert.are.equal(", MTP 2 (+23.22B parameters)", common.mtp_note({ mtp_num_layers = 2 }, m))
    assert.are.equal(", MTP 2 (+11.61B parameters)",
      common.mtp_note({ mtp_num_layers = 2, mtp_repeated_layer = true }, m))
    assert.are.equal(", 256 experts top-8", common.experts_note({ num_experts = 256, experts_per_token = 8 }))
    assert.are.equal("", common.experts_note({ num_experts = 0 }))
    -- the search log's first line
    assert.truthy(result.search_log[1]:find("megatron, MTP 1 (+11.61B parameters)", 1, true), result.search_log[1])
  end)

  it("shows the MTP layer on the last pipeline stage of the report, and MTP and experts in its header", function()
    local rec = result.top_k_strategies[1]
    assert.are.equal(16, rec.pp_degree)
    local ss = result.stage_summary[1].stages
    assert.are.equal(1, ss[16].mtp_layers)
    assert.is_nil(ss[15].mtp_layers)
    local d = html.chart_data(result)
    local last = d.topk[1].stages[16]
    -- 61 layers balanced over 16 stages: 15 x 4, then 1 (layer 60) + MTP
    assert.are.equal("60 +1 MTP", last.layers)
    assert.are.equal("56-59", d.topk[1].stages[15].layers)
    local page = html.render(result)
    assert.truthy(page:find("bf16, megatron, MTP 1 (+11.61B parameters)", 1, true))
    assert.truthy(page:find("hidden 7168, 256 experts top-8", 1, true))
    assert.truthy(page:find("<td>60 +1 MTP</td>", 1, true))
  end)

  it("says under the table that the MoE interval's runs are few and never-fitted runs spread wider", function()
    local note = common.interval_note(result)
    assert.truthy(note:find("(moe, ", 1, true), note)
    assert.truthy(note:find("MoE runs never fitted spread wider (docs/accuracy.md, Prediction intervals)", 1, true), note)
    local dense = search.run(policy.load(ROOT .. "/examples/llama3_8b_h100.lua", { quiet = true, top_k = 2 }))
    assert.falsy(common.interval_note(dense):find("MoE", 1, true))
    assert.falsy(common.interval_note(dense):find("hybrid", 1, true))
  end)

  it("says under the table that no run of a hybrid model is behind the factors, and how far off they were", function()
    local code, out = H.apsearch("run", "--model", ROOT .. "/examples/models/nemotron-h-8b-base-8k.json",
      "--cluster", "h100-sxm-80gb:4", "-k", "2", "--wide")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("a hybrid Mamba-2 / linear-attention model: no published run of one is behind these "
      .. "factors, and the 50 held-out Nemotron 3 Nano and Super runs ran from 3 % faster to 41 % slower than "
      .. "estimated (14 % on average)", 1, true), out)
  end)

  it("says under the table how far off the held-out gpt-oss runs were, and not for other MoE models", function()
    local code, out = H.apsearch("run", "--model", ROOT .. "/examples/models/gpt-oss-20b.json",
      "--cluster", "h100-sxm-80gb:1", "-k", "1", "--wide")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("a gpt-oss model: the 2 held-out gpt-oss-120b runs (GB200 bf16, GB300 mxfp8) ran "
      .. "1.4x slower than estimated, outside these factors", 1, true), out)
    assert.falsy(common.interval_note(result):find("gpt-oss", 1, true))
    -- in result.json (the interval's caveats) and under estimate's interval
    local intervals = require "apsearch.intervals"
    assert.are.same({}, intervals.model_caveats(result.inputs.model))
    -- the held-out evidence is Megatron-LM's: AutoModel's own gpt-oss runs
    -- were estimated slow, within the factors
    local gptoss = { glu_activation = "quick_gelu", attention_sinks = true }
    assert.are.equal(1, #intervals.model_caveats(gptoss, "megatron"))
    assert.are.same({}, intervals.model_caveats(gptoss, "automodel"))
    assert.are.same({}, intervals.model_caveats(gptoss, "fsdp2"))
    local dir = H.tmpdir() .. "/go"
    local c2, o2 = H.apsearch("run", "-q", "--model", ROOT .. "/examples/models/gpt-oss-20b.json", "--cluster",
      "h100-sxm-80gb:1", "-k", "1", "--out", dir)
    assert.are.equal(0, c2, o2)
    local r = require("cjson").decode(H.read(dir .. "/result.json"))
    local cv = r.top_k_strategies[1].performance_cost.step_time_interval.caveats
    assert.truthy(cv and cv[1]:find("^a gpt%-oss model: "), tostring(cv))
    local c3, o3 = H.apsearch("estimate", "--from", dir, "--rank", "1")
    assert.are.equal(0, c3, o3)
    assert.truthy(o3:find("published runs; out-of-sample errors, docs/accuracy.md)\n  a gpt-oss model: the 2 "
      .. "held-out gpt-oss-120b runs", 1, true), o3)
  end)

  it("lists the expert settings among the report's full strategies", function()
    local text = html.strategy_text(result.top_k_strategies[1], 4096)
    assert.truthy(text:find("ep_degree=16 etp_degree=1 moe_token_dispatcher=alltoall moe_capacity_factor=0",
      1, true), text)
  end)

  it("writes the selective recompute modules to result.csv and candidates.csv", function()
    local csv = require "apsearch.format.csv"
    local header, first = csv.format(result):match("^([^\n]*)\n([^\n]*)")
    local at, cells = {}, {}
    for i, c in ipairs(csv.columns()) do at[c] = i end
    for c in (first .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
    assert.are.equal(table.concat(csv.columns(), ","), header)
    assert.are.equal("selective", cells[at.layer_recompute])
    assert.are.equal("mla_up_proj/mlp/moe", cells[at.recompute_modules])
    -- the expert settings the strategy ran, the search's defaults spelt out
    -- (the table's dispatcher column says the same)
    assert.are.equal("16", cells[at.ep_degree])
    assert.are.equal("alltoall", cells[at.moe_token_dispatcher])
    assert.are.equal("0", cells[at.moe_capacity_factor])
    -- moot without selective recompute: empty
    local parts = {}
    local w = csv.candidate_writer(function(t) parts[#parts + 1] = t end, "all", 4096)
    w.row(1, nil, 1.0, 2 ^ 30, { dp_degree = 32, layer_recompute = "full", recompute_modules = "moe" })
    w.row(2, nil, 1.0, 2 ^ 30, { dp_degree = 32, layer_recompute = "selective", recompute_modules = "moe" })
    w.finish()
    local lines = {}
    for l in table.concat(parts):gmatch("[^\n]+") do lines[#lines + 1] = l end
    local cat = {}
    for i, c in ipairs(csv.candidate_columns()) do cat[c] = i end
    local function cell(line, col)
      local c = {}
      for x in (line .. ","):gmatch("([^,]*),") do c[#c + 1] = x end
      return c[cat[col]]
    end
    assert.are.equal("", cell(lines[2], "recompute_modules"))
    assert.are.equal("moe", cell(lines[3], "recompute_modules"))
  end)

  it("charts the best step time per expert-parallel degree (chart 6)", function()
    local policy_raw = {}
    for k, v in pairs(RAW) do policy_raw[k] = v end
    policy_raw.search_space = {}
    for k, v in pairs(RAW.search_space) do policy_raw.search_space[k] = v end
    policy_raw.search_space.ep_degree = { 16, 32 }
    local r = search.run(policy.from_table(policy_raw, "dsv3.lua", { quiet = true }))
    local ep = r.trends[5]
    assert.are.equal(5, #r.trends)
    assert.are.equal("ep_degree", ep.dimension)
    assert.are.equal(2, #ep.points)
    -- each point is the best feasible candidate of its degree: the top-1's
    -- degree has the top-1's step time
    local top = r.top_k_strategies[1]
    for _, p in ipairs(ep.points) do
      assert.are.equal(p.value, p.strategy.ep_degree)
      if p.value == top.ep_degree then assert.are.equal(top.performance_cost.step_time, p.step_time) end
      assert.truthy(p.step_time >= top.performance_cost.step_time)
    end
  end)

  it("prints the selective recompute modules and MTP in `apsearch estimate`", function()
    local s = { dp_degree = 32, tp_degree = 1, pp_degree = 16, layer_recompute = "selective",
      recompute_modules = "mla_up_proj/mlp/moe" }
    assert.truthy(breakdown.strategy_line(s):find("layer_recompute=selective recompute_modules=mla_up_proj/mlp/moe", 1, true))
    s.layer_recompute = "full" -- Megatron reads the modules with selective only
    assert.falsy(breakdown.strategy_line(s):find("recompute_modules", 1, true))
    local code, out = H.apsearch("estimate", ROOT .. "/examples/deepseek_v3_h100_1024.lua", "--quiet",
      "--strategy", "tp_degree=1,pp_degree=16,ep_degree=8,zero_stage=1,layer_offset=balanced,"
      .. "layer_recompute=selective,recompute_modules=mla_up_proj/mlp/moe")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("training  global batch 8192 sequences x 4096 tokens, bf16, adamw, megatron, MTP 1 (+11.61B parameters); stack",
      1, true), out)
    assert.truthy(out:find("recompute_modules=mla_up_proj/mlp/moe", 1, true), out)
    assert.truthy(out:find("+1 MTP", 1, true), out)
    -- the stage table's recomp column: the modules on every layer, not 0 layers
    assert.truthy(out:find("\n    1  4     sel ", 1, true), out)
    assert.is_nil(out:find("\n    1  4       0 ", 1, true))
  end)
end)

-- mp001 of the MoE fixture (DeepSeek-V3, 512 H100, TP 2, PP 8, EP 64):
-- its column names, its cells, and the position of each column
local function mp001()
  -- (the fixture has CRLF line ends)
  local src = H.read(ROOT .. "/tests/fixtures/moe/public_moe_cases.csv"):gsub("\r", "")
  local header, row = src:match("^([^\n]+)\n(mp001[^\n]+)")
  local cols = {}
  for c in (header .. ","):gmatch("([^,]*),") do cols[#cols + 1] = c end
  local cells = {}
  -- split the row; its last field (notes) is quoted and holds commas
  local rest = row
  while #cells < #cols - 1 do
    local cell, tail = rest:match("^([^,]*),(.*)$")
    cells[#cells + 1], rest = cell, tail
  end
  cells[#cells + 1] = rest
  local at = {}
  for k, c in ipairs(cols) do at[c] = k end
  return cols, cells, at
end

describe("validate: the assumed settings in the text output", function()
  it("cuts a note to the setting and the name of what set it", function()
    assert.are.equal("moe_capacity_factor = 1.0 (NeMo recipe, r2.3 (token drop))",
      validate.assumed_short("moe_capacity_factor = 1.0 (NeMo recipe, r2.3 (token drop): a.py:40, 67-81 (USE_TOKEN_DROP))"))
    -- a colon inside a nested group, or without a space after it, is not the cut
    assert.are.equal("software read as NeMo 25.04.01 (dgxc 25.08) (DGX Cloud 25.08 (nemo:25.04.01 container))",
      validate.assumed_short("software read as NeMo 25.04.01 (dgxc 25.08) (DGX Cloud 25.08 (nemo:25.04.01 container): launch.sh:33)"))
    -- no source to cut: whole
    assert.are.equal("layer_recompute = none (not stated; the framework's default)",
      validate.assumed_short("layer_recompute = none (not stated; the framework's default)"))
    assert.are.equal("vpp_degree = 4 ignored", validate.assumed_short("vpp_degree = 4 ignored"))
  end)

  it("lists each row's assumed settings between the table and the summary", function()
    -- mp001 of the MoE fixture with one MTP depth and the recompute modules
    -- stated, software "dgxc-benchmarking 25.08": the r2.3 recipe fills the
    -- dispatcher, the capacity factor, the layout and the shared-expert overlap
    local cols, cells, at = mp001()
    cells[at.mtp_layers] = "1"
    cells[at.layer_recompute] = "selective"
    cells[at.software] = "dgxc-benchmarking 25.08"
    cols[#cols + 1], cells[#cells + 1] = "recompute_modules", "mla_up_proj mlp moe"
    local path = H.write(H.tmpdir() .. "/mine.csv",
      table.concat(cols, ",") .. "\n" .. table.concat(cells, ",") .. "\n")
    local code, out, err = H.apsearch("validate", path)
    assert.are.equal(0, code, out .. tostring(err))
    local s = out:find("\nassumed where a column is empty or implies it", 1, true)
    assert.truthy(s, out)
    assert.truthy(out:find("\n  mp001: software read as NeMo 25.04.01", s, true), out)
    assert.truthy(out:find("\n         moe_token_dispatcher = alltoall (NeMo DeepSeek-V3 performance script, r2.3 (all-to-all with token drop))\n", s, true), out)
    assert.truthy(out:find("\n         pipeline_layout = 7,8,8,8,8,8,8,6 (", s, true), out)
    -- stated columns are not assumed; the file references stay in the JSON
    assert.falsy(out:find("mtp_num_layers =", s, true), out)
    assert.falsy(out:find("recompute_modules =", s, true), out)
    assert.falsy(out:find("pretrain_deepseek_v3.py", 1, true), out)
    -- the summary lines stay last (scripts/fit-defaults.sh reads them with tail)
    assert.truthy(out:find("runs that trained but are estimated over the memory limit: %d+[^\n]*\n$"), out)
    assert.truthy(s < out:find("\n1 cases, 0 failed", 1, true))
  end)
end)

describe("estimate --strategy: an array written with another separator", function()
  it("says arrays take colons on the command line (exit 2, one line)", function()
    local code, out, err = H.apsearch("estimate", ROOT .. "/examples/deepseek_v3_h100_1024.lua", "--quiet",
      "--strategy", "pp_degree=4,vpp_degree=4,stage_partition=4/4/4/4/4/4/4/4/4/4/4/4/4/4/4/1")
    assert.are.equal(2, code, out)
    assert.truthy(err:find("stage_partition: expected a non-empty array of integers (one per pipeline stage; "
      .. "--strategy writes one with colons, 7:8:8:9)", 1, true), err)
    assert.falsy(err:find("\n.", 1, false), err)
  end)
end)

describe("estimate --strategy stage_partition with a policy that searches layer_offset", function()
  -- examples/deepseek_v3_h100_1024.lua searches layer_offset = {"balanced"};
  -- a layout given with --strategy used to be refused as "stage_partition
  -- and layer_offset = balanced both given" (the user gave one)
  it("takes the given split instead of the policy's single layer_offset", function()
    local code, out, err = H.apsearch("estimate", ROOT .. "/examples/deepseek_v3_h100_1024.lua", "--quiet",
      "--strategy", "tp_degree=2,pp_degree=16,ep_degree=64,layer_recompute=selective,stage_partition=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:find("stage_partition=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2", 1, true), out)
    assert.falsy(out:find("layer_offset", 1, true), out)
    -- the last stage: layers 59-60 and the MTP layer
    assert.truthy(out:find("\n%s+16%s[^\n]*%s59%-60 %+1 MTP\n"), out)
  end)
end)

describe("validate: a recipe setting the row's own columns exclude is not assumed", function()
  local function inputs(set)
    local cols, cells = mp001()
    local row = {}
    for k, c in ipairs(cols) do row[c] = cells[k] end
    row.software = "dgxc-benchmarking 25.08"
    for k, v in pairs(set) do row[k] = v end
    local _, _, training, strategy, _, assumed = validate.case_inputs(row)
    return training, strategy, table.concat(assumed, "\n")
  end

  it("keeps the shared-expert overlap off when the row overlaps the all-to-all (1F1B)", function()
    -- Megatron asserts the two exclude each other; the r2.3 recipe turns the
    -- shared-expert overlap on, so the row used to be refused for an
    -- assumption (FRAMEWORK_UNSUPPORTED "excludes moe_shared_expert_overlap")
    local t, _, notes = inputs({ overlap_moe_expert_parallel_comm = "true", vpp_degree = "2" })
    assert.is_true(t.overlap_moe_expert_parallel_comm)
    assert.is_nil(t.moe_shared_expert_overlap)
    assert.truthy(notes:find("moe_shared_expert_overlap = true not assumed, overlap_moe_expert_parallel_comm = true excludes it", 1, true), notes)
    local c = validate.run_case((function()
      local cols, cells = mp001()
      local row = {}
      for k, col in ipairs(cols) do row[col] = cells[k] end
      row.software, row.overlap_moe_expert_parallel_comm, row.vpp_degree = "dgxc-benchmarking 25.08", "true", "2"
      return row
    end)())
    assert.is_nil(c.error, c.error)
    -- without the overlap column the recipe's setting stands
    t = inputs({})
    assert.is_true(t.moe_shared_expert_overlap)
  end)

  it("does not drop tokens at the recipe's capacity when the row runs the flex dispatcher", function()
    local _, s, notes = inputs({ moe_token_dispatcher = "flex" })
    assert.are.equal("flex", s.moe_token_dispatcher)
    assert.is_nil(s.moe_capacity_factor)
    assert.truthy(notes:find("moe_capacity_factor = 1.0 not assumed, moe_token_dispatcher = flex with the deepep backend " ..
      "does not pad to capacity", 1, true), notes)
    _, s = inputs({})
    assert.are.equal("alltoall", s.moe_token_dispatcher)
    assert.are.equal(1.0, s.moe_capacity_factor)
    -- HybridEP pads to capacity (_HybridEPManager drop_and_pad): the
    -- recipe's token drop stands
    local t
    t, s = inputs({ moe_token_dispatcher = "flex", moe_flex_dispatcher_backend = "hybridep" })
    assert.are.equal("hybridep", t.moe_flex_dispatcher_backend)
    assert.are.equal(1.0, s.moe_capacity_factor)
  end)

  it("refuses a flex run that pads to capacity with DeepEP, and a backend Megatron does not have", function()
    local c = validate.run_case((function()
      local cols, cells = mp001()
      local row = {}
      for k, col in ipairs(cols) do row[col] = cells[k] end
      row.moe_token_dispatcher, row.moe_capacity_factor = "flex", "1.0"
      return row
    end)())
    assert.truthy(c.error and c.error:find("the deepep backend does not pad to capacity", 1, true), c.error)
    local ok, err = pcall(inputs, { moe_token_dispatcher = "flex", moe_flex_dispatcher_backend = "nccl" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("moe_flex_dispatcher_backend", 1, true), err)
  end)
end)

describe("the Megatron launch of an MLA model with YaRN (DeepSeek-V3)", function()
  local megatron = require "apsearch.launch.megatron"
  local function rope(m)
    local args, notes = {}, {}
    megatron.rope_args(m, function(flag, v) args[flag] = v == nil and true or tostring(v) end,
      function(kind, text) notes[#notes + 1] = kind .. ": " .. text end)
    return args, table.concat(notes, "\n")
  end

  it("writes the YaRN factor and magnitudes MLA reads, and says which YaRN values it cannot", function()
    -- examples/models/deepseek-v3.json: rope_scaling yarn, factor 40,
    -- original_max_position_embeddings 4096, beta_fast 32, beta_slow 1,
    -- mscale 1.0, mscale_all_dim 1.0 (read by hf.lua)
    local dsv3 = require("apsearch.hf").load(ROOT .. "/examples/models/deepseek-v3.json")
    assert.are.same({ 32, 1, 1, 1 }, { dsv3.yarn_beta_fast, dsv3.yarn_beta_slow, dsv3.yarn_mscale,
      dsv3.yarn_mscale_all_dim })
    local args, notes = rope(dsv3)
    assert.are.equal("40", args["--rotary-scaling-factor"])
    assert.are.equal("10000", args["--rotary-base"])
    -- Megatron's defaults are 1.0 / 0.0: without --mscale-all-dim 1 the
    -- softmax scale would lack DeepSeek's (0.1 ln 40 + 1)^2 = 1.8722
    assert.are.equal("1", args["--mscale"])
    assert.are.equal("1", args["--mscale-all-dim"])
    -- not "positions are not scaled": MLA scales them (multi_latent_attention.py)
    assert.falsy(notes:find("positions are not scaled", 1, true), notes)
    assert.are.equal("", notes)
    -- neither magnitude given: Megatron's defaults are transformers' (nothing written)
    dsv3.yarn_mscale, dsv3.yarn_mscale_all_dim = nil, nil
    args, notes = rope(dsv3)
    assert.is_nil(args["--mscale"]) assert.is_nil(args["--mscale-all-dim"])
    assert.are.equal("", notes)
    -- mscale_all_dim alone: written for the softmax; transformers' cos/sin
    -- factor is then get_mscale(40) = 0.1 ln 40 + 1, which Megatron's
    -- (0.1 ms ln 40 + 1) / (0.1 * 0.707 ln 40 + 1) gives for ms = 1 + 0.707
    -- + 0.0707 ln 40 = 1.96780 (hf.yarn_mscale_for)
    dsv3.yarn_mscale_all_dim = 0.707
    args, notes = rope(dsv3)
    assert.are.equal("0.707", args["--mscale-all-dim"])
    assert.is_true(math.abs(tonumber(args["--mscale"]) - (1.707 + 0.0707 * math.log(40))) < 1e-12, args["--mscale"])
    assert.are.equal("", notes)
    -- truncate false: MLA rounds the ramp's ends (no flag)
    dsv3.yarn_no_truncate = true
    _, notes = rope(dsv3)
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: yarn truncate false", 1, true), notes)
    dsv3.yarn_no_truncate = nil
    -- a ramp other than MLATransformerConfig's fixed betas
    dsv3.yarn_mscale_all_dim, dsv3.yarn_beta_fast = nil, 16
    _, notes = rope(dsv3)
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: yarn beta_fast 16: MLATransformerConfig fixes it " ..
      "at 32", 1, true), notes)
    -- with the setting that builds the same job (Kimi-K2's beta_fast 1:
    -- run --launchable megatron found nothing and its what-to-relax did
    -- not say how; a new user's find)
    assert.truthy(notes:find("it changes no time or memory: --set model.yarn_beta_fast=32 estimates the job " ..
      "the script builds", 1, true), notes)
    dsv3.yarn_beta_fast = 32
    _, notes = rope(dsv3)
    assert.falsy(notes:find("beta_fast", 1, true), notes)
    -- another original context has no flag
    dsv3.original_max_position_embeddings = 8192
    _, notes = rope(dsv3)
    assert.truthy(notes:find("NOT EXPRESSIBLE in Megatron-LM: yarn original_max_position_embeddings 8192: " ..
      "MLATransformerConfig fixes it at 4096", 1, true), notes)
    -- no original context in rope_scaling: transformers takes
    -- max_position_embeddings (163840), MLA its fixed 4096
    dsv3.original_max_position_embeddings = nil
    _, notes = rope(dsv3)
    assert.truthy(notes:find("yarn original_max_position_embeddings 163840 (transformers: " ..
      "max_position_embeddings): MLATransformerConfig fixes it at 4096", 1, true), notes)
  end)

  -- gpt_model.py @ d98e8a64 builds YarnRotaryEmbedding for
  -- --position-embedding-type yarn from the flags argument_utils.py
  -- _apply_yarn_config_from_args maps (checked with validate_args and
  -- core_transformer_config_from_args: docs/launch.md)
  it("writes GPTModel's yarn positions for a model without MLA (Qwen2.5-7B, factor 4)", function()
    local q = { rope_theta = 1e6, rope_scaling_type = "yarn", rope_scaling_factor = 4,
      original_max_position_embeddings = 32768, max_position_embeddings = 131072 }
    local args, notes = rope(q)
    assert.are.same({ "yarn", "4", "32768", "32", "1", "1000000" }, { args["--position-embedding-type"],
      args["--rotary-scaling-factor"], args["--yarn-original-max-position-embeddings"], args["--yarn-beta-fast"],
      args["--yarn-beta-slow"], args["--rotary-base"] })
    -- transformers' cos/sin factor get_mscale(4) is Megatron's default
    -- --mscale 1.0 over --mscale-all-dim 0.0: neither is written
    assert.is_nil(args["--mscale"]) assert.is_nil(args["--mscale-all-dim"])
    assert.is_nil(args["--no-yarn-correction-range-round-to-int"])
    assert.are.equal("", notes)
    -- truncate false (gpt-oss) and an attention_factor 1.2 given outright:
    -- --mscale (1.2 - 1) / (0.1 ln 4) = 1.4426950
    q.yarn_no_truncate, q.yarn_attention_factor = true, 1.2
    args = rope(q)
    assert.is_true(args["--no-yarn-correction-range-round-to-int"])
    assert.is_true(math.abs(tonumber(args["--mscale"]) - 1.4426950408889634) < 1e-12, args["--mscale"])
    assert.is_nil(args["--mscale-all-dim"])
    -- both magnitudes (0.707 / 0.5): the pair as given, as transformers' ratio
    q.yarn_no_truncate, q.yarn_attention_factor, q.yarn_mscale, q.yarn_mscale_all_dim = nil, nil, 0.707, 0.5
    args = rope(q)
    assert.are.same({ "0.707", "0.5" }, { args["--mscale"], args["--mscale-all-dim"] })
    -- without original_max_position_embeddings: max_position_embeddings
    q.original_max_position_embeddings = nil
    args = rope(q)
    assert.are.equal("131072", args["--yarn-original-max-position-embeddings"])
    -- with multi-token prediction validate_args allows rope positions only
    local a2, n2 = {}, {}
    megatron.rope_args(q, function(flag, v) a2[flag] = v == nil and true or tostring(v) end,
      function(kind, text) n2[#n2 + 1] = kind .. ": " .. text end, { mtp_num_layers = 1 })
    assert.are.equal("rope", a2["--position-embedding-type"])
    assert.is_nil(a2["--rotary-scaling-factor"])
    assert.truthy(table.concat(n2):find("NOT EXPRESSIBLE in Megatron-LM: yarn RoPE scaling (factor 4): " ..
      "validate_args allows multi-token prediction only with rope", 1, true), table.concat(n2))
  end)
end)

describe("a GB200 / GB300 cluster whose NVLink domain is one host", function()
  it("gets a note: --cluster gb200:64x4 drops the rack's domain", function()
    local note = policy.rack_note({ device = "gb200", devices_per_node = 4, num_devices = 256 })
    assert.truthy(note:find("^note: cluster.device gb200 with an NVLink domain of one 4%-GPU host"), note)
    assert.truthy(note:find("--set cluster.nvlink_domain_size=64", 1, true), note)
    -- a table device, by its base preset
    assert.truthy(policy.rack_note({ device = { base = "gb300" }, devices_per_node = 4, num_devices = 8 }))
    -- no note: the domain given, one host, or not a rack-scale part
    assert.is_nil(policy.rack_note({ device = "gb200", devices_per_node = 4, num_devices = 256, nvlink_domain_size = 64 }))
    assert.is_nil(policy.rack_note({ device = "gb200", devices_per_node = 4, num_devices = 4 }))
    assert.is_nil(policy.rack_note({ device = "b200", devices_per_node = 8, num_devices = 64 }))
    -- hosts of a whole rack (--cluster gb200:3x72) already are a rack's domain: no note
    assert.is_nil(policy.rack_note({ device = "gb200", devices_per_node = 72, num_devices = 216 }))
    assert.truthy(policy.rack_note({ device = "gb200", devices_per_node = 36, num_devices = 216 }))
    -- on stderr, from the command line; --quiet drops it
    local code, _, err = H.apsearch("run", ROOT .. "/examples/deepseek_v3_h100_1024.lua", "--cluster", "gb200:64x4",
      "--fix", "tp_degree=1", "--fix", "pp_degree=16", "--fix", "ep_degree=8", "--fix", "layer_recompute=full", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: cluster.device gb200 with an NVLink domain of one 4-GPU host", 1, true), err)
    local _, _, qerr = H.apsearch("run", ROOT .. "/examples/deepseek_v3_h100_1024.lua", "--cluster", "gb200:64x4",
      "--fix", "tp_degree=1", "--fix", "pp_degree=16", "--fix", "ep_degree=8", "--fix", "layer_recompute=full",
      "--top-k", "1", "--quiet")
    assert.falsy(qerr:find("note:", 1, true), qerr)
  end)
end)

describe("TorchTitan HSDP with experts (fsdp2, dp_degree > 1)", function()
  it("holds each expert sharded over dp_shard x cp x tp / ep, not over the replicas too (a wrong 'fits')", function()
    -- Mixtral-8x7B, dp_replicate 32 x dp_shard 2, EP 1: every parameter,
    -- dense or expert, sharded over 2 in fp32 (TorchTitan's efsdp mesh,
    -- parallel_dims.py): 46,702,792,704 x 4 B / 2 = 86.99 GiB of weights,
    -- where it said 5.62 (the experts over 64) and called it feasible
    local code, out = H.apsearch("estimate", "--model", "mixtral-8x7b", "--cluster", "h100-sxm-80gb:8", "--quiet",
      "--set", "training.framework=fsdp2", "--strategy",
      "dp_degree=32,fsdp_degree=2,tp_degree=1,ep_degree=1,etp_degree=1,pp_degree=1,vpp_degree=1,"
      .. "micro_batch_size=1,layer_recompute=none")
    assert.are.equal(1, code, out)
    assert.truthy(out:find(("\nparams%%s+%.2f\n"):format(46702792704 * 4 / 2 / 2 ^ 30)), out)
    assert.truthy(out:find("feasible  NO: MEMORY_LIMIT", 1, true), out)
  end)
end)
