-- tests/lua/estimate_from_spec.lua -- `apsearch estimate --from
-- result.json --rank N` (issue 26 item 4): the estimate of a top-k rank is
-- the one the search ranked; bad --from / --rank input is one line, exit
-- 2; the help's --strategy examples run; a --strategy split wins over the
-- policy's, with a note.

local H = require "spec_helpers"
local cli = require "apsearch.cli"
local json = require "cjson"

local EX = H.ROOT .. "/examples/"
-- relative agreement of the re-estimate with the ranked record (the JSON
-- keeps 14 significant digits)
local TOLERANCE = 1e-9

local function close(a, b) return math.abs(a - b) <= TOLERANCE * math.abs(a) end

-- runs a search into a result.json; returns its path and decoded result
local function searched(dir, name, ...)
  local code, out, err = H.apsearch("run", "--format", "json", "--quiet", ...)
  assert.are.equal(0, code, err)
  return H.write(dir .. "/" .. name .. ".json", out), json.decode(out)
end

-- exit 2, nothing on stdout, one line on stderr holding `text`
local function refused(text, ...)
  local code, out, err = H.apsearch(...)
  assert.are.equal(2, code, err)
  assert.are.equal("", out)
  assert.are.equal(1, select(2, err:gsub("\n", "")), err)
  assert.truthy(err:find(text, 1, true), err)
end

describe("estimate --from result.json --rank N", function()
  local dir
  setup(function() dir = H.tmpdir() end)

  -- a dense FSDP policy, Megatron with a balanced split and CP, an MoE
  -- policy and a policy built from --model / --cluster
  local RUNS = {
    { "llama8b", EX .. "llama3_8b_h100.lua" },
    { "cp128k", EX .. "llama3_8b_128k_cp.lua" },
    { "qwen3moe", EX .. "qwen3_30b_a3b_h100.lua" },
    { "built", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8" },
    -- auto recompute that resolves to no layer, with CUDA graphs: the search
    -- priced such a strategy as full recompute under a whole-iteration graph
    -- (no host time), while its record (and launch file) said no recompute
    -- (breaker pass, 2026-12-05)
    { "autograph", "--model", "nemotron-3-nano-30b-a3b", "--cluster", "h100-sxm-80gb:2",
      "--set", "training.cuda_graphs=true", "--set", "training.cuda_graph_scope=attn", "--top-k", "3" },
  }
  for _, run in ipairs(RUNS) do
    it("estimates each top-k rank to the step time and memory it was ranked by: " .. run[1], function()
      local path, result = searched(dir, run[1], "--top-k", "2", table.unpack(run, 2))
      for _, rec in ipairs(result.top_k_strategies) do
        local code, out, err = H.apsearch("estimate", "--from", path, "--rank", tostring(rec.rank),
          "--format", "json", "--quiet")
        assert.are.equal(0, code, err)
        local e = json.decode(out)
        assert.is_true(close(rec.performance_cost.step_time, e.estimate.step_time), out)
        assert.is_true(close(rec.memory_cost.total, e.estimate.mem_peak), out)
        assert.are.same({ file = path, rank = rec.rank }, e.inputs.from)
      end
    end)
  end

  -- the run's "top-N: dp=4 fsdp=1 tp=8 sp=on ..." log lines, pasted back
  -- as they are printed (a new user's pass, 2026-12-06: "dp: unknown
  -- strategy field")
  it("estimates a strategy line the run printed, pasted back with its short names #bulk", function()
    -- spaces whose ranked strategies differ only in the selective modules,
    -- the full-recompute method, the dispatcher or the capacity factor,
    -- which the lines once left out (a breaker's find: four MoE strategies
    -- printed one line, a selective one pasted back out of memory)
    local rec_policy, moe_policy = dir .. "/recompute_lines.lua", dir .. "/moe_lines.lua"
    H.write(rec_policy, [[return { model = "llama-3.1-70b", cluster = { device = "h100-sxm-80gb", nodes = 4,
      devices_per_node = 8 }, training = { global_batch_size = 64, seq_length = 8192, framework = "megatron" },
      search_space = { data_parallel = "auto", zero_stage = { 0, 1 }, tp_degree = { 4, 8 }, pp_degree = { 4, 8 },
        sequence_parallel = { true }, micro_batch_size = { 1 }, layer_recompute = { "full", "selective" },
        recompute_method = { "block", "uniform" }, recompute_num_layers = { 1, 2 },
        recompute_modules = { "core_attn", "mlp" } }, top_k = 8 }]])
    H.write(moe_policy, [[return { model = "mixtral-8x7b", cluster = { device = "h100-sxm-80gb", nodes = 2,
      devices_per_node = 8 }, training = { global_batch_size = 64, seq_length = 4096, framework = "megatron" },
      search_space = { data_parallel = "auto", zero_stage = { 1 }, tp_degree = { 2 }, sequence_parallel = { true },
        pp_degree = { 2 }, micro_batch_size = { 1 }, layer_recompute = { "selective" }, ep_degree = { 4 },
        moe_token_dispatcher = { "allgather", "alltoall" }, moe_capacity_factor = { 0, 1.0 } }, top_k = 4 }]])
    for _, run in ipairs({ { EX .. "llama3_8b_h100.lua" }, { "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:16" },
        { EX .. "llama3_8b_128k_cp.lua" }, { "--model", "mixtral-8x7b", "--cluster", "h100:4x8" }, { rec_policy },
        { moe_policy } }) do
      -- (Mixtral's top 4 holds a zero=0 line between zero=1 ones, which
      -- once printed no zero= and re-estimated at stage 1: a breaker's find)
      local code, out, err = H.apsearch("run", "--format", "json", "--top-k", "8", table.unpack(run))
      assert.are.equal(0, code, err)
      local result = json.decode(out)
      local n = 0
      for rank, line in err:gmatch("top%-(%d+): ([^\n]-): step [%d.]+ s") do
        n = n + 1
        local args = { "estimate", "--format", "json", "--quiet", "--strategy", line }
        for i = 1, #run do args[#args + 1] = run[i] end
        local code2, out2, err2 = H.apsearch(table.unpack(args))
        assert.are.equal(0, code2, err2)
        local rec = result.top_k_strategies[tonumber(rank)]
        local e = json.decode(out2).estimate
        assert.is_true(close(rec.performance_cost.step_time, e.step_time), line)
        assert.is_true(close(rec.memory_cost.total, e.mem_peak), line)
      end
      assert.is_true(n >= 2, err)
    end
  end)

  it("names the MoE dispatcher in every MoE line, alltoall where a record leaves the core's default out", function()
    -- (a line without it is estimated at the framework's default, which
    -- is not alltoall for NeMo AutoModel)
    local search = require "apsearch.search"
    local line = search.describe_strategy({ dp_degree = 1, fsdp_degree = 8, tp_degree = 1, pp_degree = 1,
      cp_degree = 1, ep_degree = 8, etp_degree = 1, micro_batch_size = 1, layer_recompute = "none" })
    assert.truthy(line:find("ep=8 etp=1 dispatcher=alltoall mbs=1", 1, true), line)
    assert.is_nil(search.describe_strategy({ dp_degree = 8, fsdp_degree = 1, tp_degree = 1, pp_degree = 1,
      cp_degree = 1, micro_batch_size = 1, layer_recompute = "none" }):find("dispatcher", 1, true))
    assert.are.same({ moe_token_dispatcher = "flex", moe_capacity_factor = 1.25 },
      cli.parse_strategy({ "dispatcher=flex capacity=1.25" }))
  end)

  it("names vpp wherever it pipelines and a stage's layer count where the core holds -1", function()
    local search = require "apsearch.search"
    local base = { dp_degree = 1, fsdp_degree = 1, tp_degree = 8, cp_degree = 1, micro_batch_size = 1 }
    local function line(t)
      local s = {}
      for k, v in pairs(base) do s[k] = v end
      for k, v in pairs(t) do s[k] = v end
      return search.describe_strategy(s)
    end
    -- pasted as --fix flags, a line without vpp= leaves it free
    assert.truthy(line({ pp_degree = 2, vpp_degree = 1, layer_recompute = "none" }):find(" pp=2 vpp=1 ", 1, true))
    assert.is_nil(line({ pp_degree = 1, vpp_degree = 1, layer_recompute = "none" }):find("vpp", 1, true))
    -- -1 is every layer of the stage: 61 on one stage, 31 and 30 on two
    local one = line({ pp_degree = 1, layer_recompute = "full", recompute_num_layers = { -1 },
      memory_cost = { per_stage = { { num_layers = 61 } } } })
    assert.truthy(one:find("recompute=full recompute_num_layers=61$"), one)
    local two = line({ pp_degree = 2, vpp_degree = 1, layer_recompute = "full", recompute_num_layers = { -1, 4 },
      memory_cost = { per_stage = { { num_layers = 31 }, { num_layers = 30 } } } })
    assert.truthy(two:find("recompute_num_layers=31:4$"), two)
    -- without the record's stages, no count at all rather than -1
    local bare = line({ pp_degree = 1, layer_recompute = "full", recompute_num_layers = { -1 } })
    assert.is_nil(bare:find("recompute_num_layers", 1, true), bare)
  end)

  it("reads the short names' values as the table prints them, and says what they take", function()
    local s = cli.parse_strategy({ "dp=2 tp=4 sp=on mbs=1", "recompute=full,zero=1" })
    assert.are.same({ dp_degree = 2, tp_degree = 4, sequence_parallel = true, micro_batch_size = 1,
      layer_recompute = "full", zero_stage = 1 }, s)
    assert.are.same({ sequence_parallel = false, pp_degree = 2 }, cli.parse_strategy({ "sp=off, pp_degree = 2" }))
    refused('--strategy: sp: expected on, off, true or false (got "yes")', "estimate", "--strategy", "tp=2,sp=yes")
    refused('--strategy: tp_degree: given twice (got "4")', "estimate", "--strategy", "tp=2 tp_degree=4")
    -- a cell the table shows as "-" (the setting does not apply) sets nothing
    assert.are.same({ tp_degree = 1 }, cli.parse_strategy({ "tp=1 sp=- cp_comm=- reshard=-" }))
  end)

  it("takes the table's folded line and layers cell as they are printed", function()
    -- "layers" is the table's run-length split (format.table.split_text)
    assert.are.same({ pp_degree = 16, stage_partition = { 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7 } },
      cli.parse_strategy({ "pp=16 layers=7+14x8+7" }))
    assert.are.same({ stage_partition = { 16, 16, 16, 13 } }, cli.parse_strategy({ "layers=3x16+13" }))
    refused("--strategy: layers: expected a non-empty array of integers", "estimate", "--strategy", "layers=3x16+")
    -- a count past an integer or past the pipeline's chunks: the value as typed
    refused('--strategy: layers: expected a non-empty array of integers (one per pipeline stage; --strategy ' ..
      'writes one with colons, 7:8:8:9) or "even" (got "2x99999999999999999999")', "estimate", "--strategy",
      "layers=2x99999999999999999999")
    local most = require("apsearch.core").MAX_STAGES
    assert.is_nil(require("apsearch.schema").layers_cell((most + 1) .. "x1"))
    assert.are.equal(most, #require("apsearch.schema").layers_cell((most - 1) .. "x1+1"))
    local policy = require "apsearch.policy"
    local k, v = policy.fix_field("layers", "2x24")
    assert.are.equal("stage_partition", k)
    assert.are.same({ { 24, 24 } }, v)
    -- the "same for every row" line spells joined cells as fields (a new
    -- user pasted "cp comm=all_gather" and "ep=32 x etp 1": not pairs)
    local tbl = require "apsearch.format.table"
    assert.are.equal("cp_comm=all_gather", tbl.same_pair("cp comm", "all_gather"))
    assert.are.equal("ep=32 etp=1", tbl.same_pair("ep", "32 x etp 1"))
    assert.are.equal("ep=8", tbl.same_pair("ep", "8"))
    assert.are.equal("dispatcher=alltoall capacity=1.25", tbl.same_pair("dispatcher", "alltoall cap 1.25"))
    assert.are.equal("schedule=1f1b mbgroup=5", tbl.same_pair("schedule", "1f1b g5"))
    assert.are.same({ cp_comm_type = "all_gather", ep_degree = 32, etp_degree = 1, moe_token_dispatcher = "alltoall",
      moe_capacity_factor = 1.25, pp_schedule = "1f1b", microbatch_group_size = 5 },
      cli.parse_strategy({ "cp_comm=all_gather ep=32 etp=1 dispatcher=alltoall capacity=1.25 schedule=1f1b mbgroup=5" }))
  end)

  it("reads an --out directory's result.json", function()
    local code, _, err = H.apsearch("run", "--top-k", "1", "--quiet", "--out", dir .. "/set", "--candidates", "none")
    assert.are.equal(0, code, err)
    local code2, out = H.apsearch("estimate", "--from", dir .. "/set", "--rank", "1", "--quiet")
    assert.are.equal(0, code2)
    assert.truthy(out:find("feasible  yes", 1, true), out)
  end)

  it("refuses a rank the result does not have, naming its ranks", function()
    local path = searched(dir, "three", "--top-k", "3")
    refused("--rank: rank: not in " .. path .. ", which has ranks 1-3 (got 7)",
      "estimate", "--from", path, "--rank", "7")
    refused('--rank: rank: must be a positive integer (got "0")', "estimate", "--from", path, "--rank", "0")
    -- the value as typed (0x1 was said as "got 1"; a second breaker pass)
    refused('--rank: rank: must be a positive integer (got "0x1")', "estimate", "--from", path, "--rank", "0x1")
    -- (the path was said as if it were the problem: "(got path)")
    refused("--from: " .. path .. ": needs --rank N as well (the top-k rank of this result to estimate)",
      "estimate", "--from", path)
    refused("--rank: rank: needs --from RESULT", "estimate", "--rank", "1")
    refused("--from: strategy: --strategy cannot be given with --from",
      "estimate", "--from", path, "--rank", "1", "--strategy", "tp_degree=2")
    refused("--from: calibration: --calibration cannot be given with --from (the result's inputs and rank fix it); " ..
      "to rank under a calibration, run the search again with --calibration FILE",
      "estimate", "--from", path, "--rank", "1", "--calibration", path)
  end)

  it("refuses a result of another schema_version", function()
    local _, result = searched(dir, "v", "--top-k", "1")
    result.schema_version = 99
    local path = H.write(dir .. "/v99.json", json.encode(result))
    refused("--from: " .. path .. ": schema_version 99, not 1", "estimate", "--from", path, "--rank", "1")
  end)

  it("takes a device field an earlier apsearch did not record from the device's preset, with a note", function()
    -- the MoE example at micro-batch 1, dropless on EP 8: host-bound, so the
    -- loop GEMMs' host cost (added 2026-12-05) moves its step
    local path, result = searched(dir, "old", "--top-k", "1", EX .. "qwen3_30b_a3b_h100.lua")
    local dev = result.inputs.cluster.device
    local preset = require("apsearch.core").device_preset(dev.name)
    assert.are.equal(preset.host_seconds_per_loop_gemm, dev.host_seconds_per_loop_gemm)
    dev.host_seconds_per_loop_gemm = nil
    local old = H.write(dir .. "/old_missing.json", json.encode(result))
    local code, out, err = H.apsearch("estimate", "--from", old, "--rank", "1", "--format", "json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: " .. old .. " records no cluster.device.host_seconds_per_loop_gemm " ..
      "(an earlier apsearch wrote it): the " .. dev.name .. " preset's value taken", 1, true), err)
    local rec = result.top_k_strategies[1]
    assert.is_true(close(rec.performance_cost.step_time, json.decode(out).estimate.step_time), out)
    -- the file named it: nothing to fill, no note
    local _, _, err2 = H.apsearch("estimate", "--from", path, "--rank", "1")
    assert.falsy(err2:find("records no", 1, true), err2)
    -- a field every result records, absent: said missing, not "got 0"
    local seq = result.inputs.training.seq_length
    result.inputs.training.seq_length = nil
    local noseq = H.write(dir .. "/old_noseq.json", json.encode(result))
    refused("--from: " .. noseq .. ": inputs.training.seq_length: missing (every result of apsearch run records it)",
      "estimate", "--from", noseq, "--rank", "1")
    result.inputs.training.seq_length = seq
    -- a device of the user's own (no preset of its name): the field the
    -- file lacks, not what a policy's device table must set
    dev.name = "my-gpu"
    local own = H.write(dir .. "/old_own.json", json.encode(result))
    refused("--from: " .. own .. ": inputs.cluster.device.host_seconds_per_loop_gemm: missing (an earlier apsearch " ..
      "wrote this result) and its device \"my-gpu\" is no preset to take it from", "estimate", "--from", own,
      "--rank", "1")
  end)

  it("names the file for a bad training value the run had set with --set (not --set)", function()
    local _, result = searched(dir, "setrec", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2", "--top-k",
      "1", "--set", "training.framework=megatron", "--set", "training.distributed_optimizer_instances=2")
    result.inputs.training.distributed_optimizer_instances = -1
    local bad = H.write(dir .. "/setrec_bad.json", json.encode(result))
    refused("apsearch: --from: " .. bad .. ": inputs: training.distributed_optimizer_instances: must be 0 (one) or " ..
      "in [1, 16777216] (got -1)", "estimate", "--from", bad, "--rank", "1")
  end)

  it("refuses a hand-edited strategy field naming the file, the record and the field", function()
    local _, result = searched(dir, "edit", "--top-k", "1")
    for _, case in ipairs({ { "tp_degree", "2", 'must be a positive integer (got "2")' },
        { "pp_degree", {}, "must be a positive integer (got {})" },
        { "micro_batch_size", 0, "must be a positive integer (got 0)" },
        { "zero_stage", 7, "must be 0, 1, 2 or 3 (got 7)" } }) do
      local saved = result.top_k_strategies[1][case[1]]
      result.top_k_strategies[1][case[1]] = case[2]
      local path = H.write(dir .. "/edited.json", json.encode(result))
      refused("--from: " .. path .. ": top_k_strategies[0]." .. case[1] .. ": " .. case[3],
        "estimate", "--from", path, "--rank", "1")
      result.top_k_strategies[1][case[1]] = saved
    end
  end)

  it("refuses a stack that is not a known stack's name (true crashed in the breakdown; a breaker's eleventh round)",
    function()
    local _, result = searched(dir, "stack", "--top-k", "1")
    for _, v in ipairs({ true, "bogus" }) do
      result.inputs.stack = v
      local path = H.write(dir .. "/stack.json", json.encode(result))
      refused(("--from: %s: inputs.stack: expected a known stack name (megatron-bridge-25, "):format(path),
        "estimate", "--from", path, "--rank", "1")
    end
  end)

  it("refuses a record without the step it was ranked at (it crashed indexing nil)", function()
    local _, result = searched(dir, "nostep", "--top-k", "1")
    local saved = result.top_k_strategies[1].performance_cost
    for _, case in ipairs({ { nil, "nil" }, { { step_time = "fast" }, '"fast"' }, { { step_time = -1 }, "-1" },
        { { mfu = 0.4 }, "nil" } }) do
      result.top_k_strategies[1].performance_cost = case[1]
      local path = H.write(dir .. "/nostep.json", json.encode(result))
      refused("--from: " .. path .. ": top_k_strategies[0].performance_cost.step_time: expected a positive " ..
        "number (got " .. case[2] .. ")", "estimate", "--from", path, "--rank", "1")
    end
    result.top_k_strategies[1].performance_cost = saved
  end)

  it("refuses a file that is not a result of apsearch run", function()
    refused("--from: " .. EX .. "llama3_8b_h100.lua: not JSON (",
      "estimate", "--from", EX .. "llama3_8b_h100.lua", "--rank", "1")
    refused("): give a run's result.json or its --out directory",
      "estimate", "--from", EX .. "llama3_8b_h100.lua", "--rank", "1")
    local code, out = H.apsearch("estimate", "--format", "json", "--quiet")
    assert.are.equal(0, code)
    local est = H.write(dir .. "/estimate.json", out)
    refused("--from: " .. est .. ": not a result.json of apsearch run", "estimate", "--from", est, "--rank", "1")
    refused("--from: " .. dir .. "/none.json: cannot read the file", "estimate", "--from", dir .. "/none.json",
      "--rank", "1")
    -- an --out link copied without its set (cp -r, tar): the link and why,
    -- not "No such file or directory" beside a name ls lists
    assert(os.execute("ln -sfn .gone.apsearch-set-x " .. dir .. "/copied"))
    refused("--from: " .. dir .. "/copied: a symbolic link to .gone.apsearch-set-x, which does not resolve (an "
      .. "--out DIR is a link to the result set beside it: copy it with cp -rL, tar -h or rsync -L",
      "estimate", "--from", dir .. "/copied", "--rank", "1")
    refused("--baseline: " .. dir .. "/copied: a symbolic link to .gone.apsearch-set-x, which does not resolve",
      "run", EX .. "llama3_8b_h100.lua", "--baseline", dir .. "/copied")
    -- DIR/ and DIR/result.json say the same; a loop or another link to
    -- nothing is not called an --out set
    refused("--from: " .. dir .. "/copied/: a symbolic link to .gone.apsearch-set-x, which does not resolve",
      "estimate", "--from", dir .. "/copied/", "--rank", "1")
    refused("--from: " .. dir .. "/copied/result.json: a symbolic link to .gone.apsearch-set-x, which does not "
      .. "resolve", "estimate", "--from", dir .. "/copied/result.json", "--rank", "1")
    assert(os.execute("ln -sfn loopb " .. dir .. "/loopa && ln -sfn loopa " .. dir .. "/loopb"))
    refused("--from: " .. dir .. "/loopa: a symbolic link to loopb, which does not resolve (a link to nothing or "
      .. "a loop)", "estimate", "--from", dir .. "/loopa", "--rank", "1")
    -- a preset name where the resolved model belongs: said as such (it said
    -- "inputs.model missing")
    local named = H.write(dir .. "/named.json", '{"schema_version":1,"inputs":{"model":"no-such-model",' ..
      '"cluster":{},"training":{}},"top_k_strategies":[]}')
    refused("--from: " .. named .. ': inputs.model: expected the resolved model table a result records ' ..
      '(got "no-such-model")', "estimate", "--from", named, "--rank", "1")
  end)
end)

describe("estimate --strategy with dimensions left out", function()
  it("says what it took for each dimension the policy searches over several values", function()
    -- NVIDIA's Llama 3.1 405B degrees typed alone: zero_stage takes the
    -- built policy's first, the recipes' distributed optimizer (1), not
    -- the core's 0 (Adam unsharded)
    local code, _, err = H.apsearch("estimate", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:128",
      "--strategy", "tp_degree=8,pp_degree=8,cp_degree=2,vpp_degree=8")
    assert.are.equal(1, code)
    assert.truthy(err:find("apsearch: note: not given with --strategy, so taken as: cp_comm_type=p2p (searched: "
      .. "p2p, all_gather, a2a); layer_recompute=none (searched: none, selective, full); micro_batch_size=1 "
      .. "(searched: 1, 2); zero_stage=1 (searched: 1, 0)", 1, true), err)
    -- sharded through HSDP's degrees: the sharding fixes the stage, as
    -- with fsdp_degree (the policy's first, 1, is not taken: it was refused
    -- with ZERO_STAGE_INVALID); HSDP without replication is refused for that
    local c1, o1 = H.apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "-q",
      "--strategy", "fsdp_degree=8")
    local c2, o2 = H.apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "-q",
      "--strategy", "hsdp_shard_degree=8")
    assert.are.equal(0, c1, o1)
    assert.are.equal(1, c2, o2)
    assert.truthy(o2:find("zero_stage=0", 1, true), o2)
    assert.truthy(o2:find("feasible  NO: HSDP_INVALID", 1, true), o2)
    -- every dimension given, or -q: no note
    local _, _, e2 = H.apsearch("estimate", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:128", "-q",
      "--strategy", "tp_degree=8,pp_degree=8,cp_degree=2,vpp_degree=8")
    assert.is_nil(e2:find("not given", 1, true), e2)
  end)
end)

describe("estimate of a strategy that takes more GPUs than the cluster has", function()
  it("says the device count beside the model-shape reason the core names first", function()
    -- tp 16 on the example's 8 H100: the core names Llama 3.1 8B's 8 query
    -- groups (aps_check_all's order); 1 x 1 x 16 x 1 x 1 = 16 > 8
    local code, out, err = H.apsearch("estimate", "--strategy", "tp_degree=16")
    assert.are.equal(1, code)
    assert.truthy(out:find("NO: TP_DIVISIBILITY: num_query_groups = 8 is not divisible by tp_degree = 16", 1, true), out)
    assert.truthy(err:find("apsearch: note: the strategy is also refused for DEVICE_COUNT: dp 1 x fsdp 1 x tp 16 "
      .. "x pp 1 x cp 1 = 16 devices > num_devices = 8", 1, true), err)
    -- tp 3 (32 heads) leaves 5 of the 8 idle
    local _, _, e3 = H.apsearch("estimate", "--strategy", "tp_degree=3")
    assert.truthy(e3:find("also refused for IDLE_DEVICES: dp 1 x fsdp 1 x tp 3 x pp 1 x cp 1 = 3 devices leaves 5 of "
      .. "num_devices = 8 idle", 1, true), e3)
    -- a feasible strategy: no note
    local _, _, e2 = H.apsearch("estimate", "--strategy", "tp_degree=2")
    assert.is_nil(e2:find("also refused", 1, true), e2)
  end)
end)

describe("estimate --format json", function()
  it("carries the notes stderr prints, without their prefix, also under --quiet", function()
    local cjson = require "cjson"
    -- tp 16 on the example's 8 H100 with the other dimensions left out:
    -- the defaulted dimensions' note, then the device count's
    local code, out = H.apsearch("estimate", "--strategy", "tp_degree=16", "--format", "json", "--quiet")
    assert.are.equal(1, code)
    local notes = cjson.decode(out).notes
    assert.are.equal(2, #notes)
    assert.truthy(notes[1]:find("^not given with %-%-strategy, so taken as: "), notes[1])
    assert.are.equal("the strategy is also refused for DEVICE_COUNT: dp 1 x fsdp 1 x tp 16 x pp 1 x cp 1 = 16 "
      .. "devices > num_devices = 8", notes[2])
    -- --cluster D:N reads N as hosts: its note comes first, as on stderr
    code, out = H.apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:8", "--format", "json",
      "--strategy", "tp_degree=8,pp_degree=1,cp_degree=1,vpp_degree=1,micro_batch_size=1,zero_stage=1,"
      .. "layer_recompute=none,cp_comm_type=p2p")
    assert.are.equal(0, code)
    notes = cjson.decode(out).notes
    assert.are.same({ "--cluster h100-sxm-80gb:8 is 8 hosts of 8 GPUs, 64 GPUs (for 8 GPUs: h100-sxm-80gb:1x8)" },
      notes)
  end)
end)

describe("estimate --help", function()
  it("shows --strategy examples that each run on the default policy", function()
    local _, help = H.apsearch("estimate", "--help")
    for _, ex in ipairs(cli.ESTIMATE_EXAMPLES) do
      assert.truthy(help:find(ex, 1, true), ex)
      local code, out, err = H.apsearch("estimate", "--strategy", ex, "--quiet")
      assert.are.equal(0, code, ex .. ": " .. err)
      assert.truthy(out:find("feasible  yes", 1, true), ex)
    end
  end)
end)

describe("a --strategy split and the policy's (issue 26)", function()
  it("the command line wins: the policy's layer_offset = balanced is not inherited, with a note", function()
    local code, out, err = H.apsearch("estimate", EX .. "llama3_8b_128k_cp.lua",
      "--strategy", "pp_degree=2,pipeline_split=even")
    assert.are.equal(1, code) -- does not fit: what matters is the split estimated
    assert.truthy(err:find("apsearch: note: --strategy pipeline_split=even replaces the policy's "
      .. "layer_offset = balanced (a split on the command line wins over the policy's)\n", 1, true), err)
    assert.truthy(out:find("stage 1 of 2", 1, true), out)
    local _, balanced = H.apsearch("estimate", EX .. "llama3_8b_128k_cp.lua", "--strategy", "pp_degree=2")
    -- the strategy line and what it goes on with (folded at 120 columns)
    local function strategy(t) return t:match("strategy  [^\n]*\n[^\n]*\n[^\n]*") end
    assert.are_not.equal(strategy(balanced), strategy(out))
  end)

  it("a policy's pipeline_split gives way to a --strategy stage_partition, with a note", function()
    local code, _, err = H.apsearch("estimate", EX .. "deepseek_v3_h100_1024.lua", "--strategy",
      "tp_degree=1,pp_degree=16,dp_degree=64,ep_degree=64,zero_stage=1,layer_recompute=full,"
      .. "stage_partition=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("replaces the policy's pipeline_split = fill_last", 1, true), err)
  end)

  it("says nothing when the command line gives no split", function()
    local code, _, err = H.apsearch("estimate", EX .. "deepseek_v3_h100_1024.lua", "--strategy",
      "tp_degree=1,pp_degree=16,dp_degree=64,ep_degree=64,zero_stage=1,layer_recompute=full")
    assert.are.equal(0, code, err)
    assert.is_nil(err:find("replaces the policy's", 1, true), err)
  end)

  it("takes the first searched rule Megatron accepts: fill_last where 92 + 2 layers do not divide by 16", function()
    -- GLM-4.5 (92 layers) on 512 H100: the built space searches
    -- {embedding_loss, fill_last}; rank 1's degrees typed without a split
    -- estimate as ranked (15 x 6 + 2), not refused for embedding_loss
    local code, out, err = H.apsearch("estimate", "--model", "glm-4.5", "--cluster", "h100-sxm-80gb:64",
      "--strategy", "dp_degree=16,tp_degree=2,pp_degree=16,ep_degree=8,etp_degree=1,micro_batch_size=1,"
      .. "layer_recompute=full,recompute_num_layers=2")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("pipeline_split=fill_last", 1, true), out)
    assert.truthy(err:find("pipeline_split=fill_last (searched: embedding_loss, fill_last)", 1, true), err)
    -- pp 2: 94 divides by 2, so the first listed, embedding_loss, is taken
    local _, out2 = H.apsearch("estimate", "--model", "glm-4.5", "--cluster", "h100-sxm-80gb:64", "-q",
      "--strategy", "tp_degree=8,pp_degree=2,ep_degree=8,etp_degree=1,micro_batch_size=1,layer_recompute=full")
    assert.truthy(out2:find("pipeline_split=embedding_loss", 1, true), out2)
  end)

  it("the JSON notes carry the note of a policy split a --strategy split replaced", function()
    local cjson = require "cjson"
    local _, out = H.apsearch("estimate", EX .. "deepseek_v3_h100_1024.lua", "--format", "json", "--strategy",
      "tp_degree=1,pp_degree=16,dp_degree=64,ep_degree=64,zero_stage=1,layer_recompute=full,"
      .. "stage_partition=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2")
    local notes = cjson.decode(out).notes
    local found
    for _, n in ipairs(notes) do
      found = found or n:find("^%-%-strategy stage_partition=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2 replaces the "
        .. "policy's pipeline_split = fill_last")
    end
    assert.truthy(found, table.concat(notes, "\n"))
  end)

  it("inherit_dims keeps a policy split when --strategy gives none", function()
    local given = { pp_degree = 2 }
    assert.are.same({}, cli.inherit_dims({ layer_offset = { "balanced" }, tp_degree = { 2 } }, given))
    assert.are.same({ pp_degree = 2, layer_offset = "balanced", tp_degree = 2 }, given)
  end)
end)
