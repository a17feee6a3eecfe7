-- tests/lua/cli_spec.lua -- the `apsearch` binary end to end (src/main.c ->
-- host -> lua/apsearch/cli.lua): exit status 0 / 1 / 2, one-line errors on
-- stderr, stdout formats, --out files.
--
-- APS_BIN is the built binary and APS_ROOT the repo root (CTest sets both).

local cjson = require "cjson"

local BIN = os.getenv("APS_BIN")
local H = require "spec_helpers"
local q, read, write, tmpdir, apsearch = H.q, H.read, H.write, H.tmpdir, H.apsearch
local ROOT = os.getenv("APS_ROOT") or "."

local function one_line_error(code, out, err)
  assert.are.equal(2, code)
  assert.are.equal("", out)
  assert.truthy(err:match("^apsearch: [^\n]+\n$"), "not one line: " .. err)
  return err:sub(11, -2)
end

local POLICY_HEAD = [[
return {
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 1 },
  training = { global_batch_size = 64, seq_length = 8192 },
]]

describe("apsearch binary", function()
  setup(function()
    assert.is_string(BIN, "APS_BIN must name the built apsearch binary")
  end)

  describe("exit 0", function()
    it("runs the built-in default policy and prints the table", function()
      local code, out, err = apsearch("run", "--top-k", "3")
      assert.are.equal(0, code)
      assert.truthy(out:match("^llama%-3%.1%-8b on 8 x h100%-sxm%-80gb: %d+ feasible of %d+ candidates"))
      assert.truthy(out:find("step (s)", 1, true))   -- headers abbreviated to fit 120 columns
      assert.truthy(out:find("peak GiB", 1, true))
      local rows = 0
      for line in out:gmatch("\n%s+(%d+)  ") do rows = rows + 1 end
      assert.are.equal(3, rows)
      assert.truthy(err:find("search space: ", 1, true))   -- log on stderr
      assert.truthy(err:find("feasible: ", 1, true))
    end)

    it("is quiet with --quiet and emits JSON with --format json", function()
      local code, out, err = apsearch("run", "examples/qwen25_7b_a100.lua", "--format", "json",
        "--quiet", "--top-k", "4", "--set", "cluster.memory_limit_gib=60", "--fix", "micro_batch_size=1")
      assert.are.equal(0, code)
      assert.are.equal("", err)
      local r = cjson.decode(out)
      assert.are.equal(1, r.schema_version)
      assert.are.equal(4, #r.top_k_strategies)
      assert.are.equal(cjson.null, r.top_k_strategies[1].filter_reason)
      assert.are.equal(1, r.top_k_strategies[1].micro_batch_size)
      assert.are.equal(60 * 2 ^ 30, r.inputs.training.memory_limit_bytes)
      assert.are.same({ kind = "set", key = "cluster.memory_limit_gib", value = 60 }, r.inputs.overrides[1])
      assert.are.same({ kind = "fix", key = "micro_batch_size", value = 1 }, r.inputs.overrides[2])
      assert.are.equal(r.all_candidate_summary.generated,
        r.all_candidate_summary.filtered_early + r.all_candidate_summary.estimated)
      assert.is_true(r.infeasible_summary.TP_DIVISIBILITY.count > 0)
      assert.are.equal("table", type(r.search_log))
    end)

    it("shows an option of its own in the report's overrides as typed (--top-k 2, not --set top_k=2)", function()
      local dir = tmpdir() .. "/ov"
      local code = apsearch("run", "examples/qwen25_7b_a100.lua", "--quiet", "--top-k", "2", "--candidates", "none",
        "--set", "cluster.memory_limit_gib=60", "--out", dir)
      assert.are.equal(0, code)
      local report = read(dir .. "/report.html")
      assert.truthy(report:find("--set cluster.memory_limit_gib=60 --top-k 2<", 1, true))
      assert.is_nil(report:find("--set top_k", 1, true))
    end)

    it("emits CSV, one row per top-k strategy", function()
      local code, out = apsearch("run", "--format", "csv", "--quiet", "--top-k", "2")
      assert.are.equal(0, code)
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.are.equal(3, #lines)
      assert.truthy(lines[1]:match("^rank,dp_degree,fsdp_degree,"))
      assert.truthy(lines[2]:match("^1,"))
      assert.truthy(lines[3]:match("^2,"))
    end)

    it("writes result.json and result.csv atomically with --out", function()
      local dir = tmpdir() .. "/results/sub"
      local code = apsearch("run", "--quiet", "--top-k", "2", "--out", dir)
      assert.are.equal(0, code)
      local r = cjson.decode(read(dir .. "/result.json"))
      assert.are.equal(2, #r.top_k_strategies)
      assert.truthy(read(dir .. "/result.csv"):match("^rank,"))
      local p = io.popen("ls -a " .. q(dir))
      local names = {}
      for n in p:lines() do if n ~= "." and n ~= ".." then names[#names + 1] = n end end
      p:close()
      table.sort(names)
      -- no temp files left (report, candidates and launch configs:
      -- tests/lua/report_spec.lua, launch_spec.lua; the set: outdir_spec.lua)
      assert.are.same({ ".apsearch-set", "candidates.csv", "launch", "report.html", "result.csv",
        "result.json" }, names)
    end)

    it("estimates one strategy with its breakdown", function()
      -- recompute_modules' modules are joined by '/': ':' (the per-stage
      -- separator) says so
      local c2, _, e2 = apsearch("estimate", "--strategy", "layer_recompute=selective,recompute_modules=mlp:core_attn")
      assert.are.equal(2, c2)
      assert.truthy(e2:find("recompute_modules: expected module names joined by '/'", 1, true), e2)
      local code, out = apsearch("estimate", "--strategy", "fsdp_degree=8,micro_batch_size=1")
      assert.are.equal(0, code)
      assert.truthy(out:find("feasible  yes", 1, true))
      assert.truthy(out:find("memory per device", 1, true))
      assert.truthy(out:find("optimizer_states", 1, true))
      assert.truthy(out:find("step time", 1, true))
      assert.truthy(out:find("pipeline stages", 1, true))
      local c2, j = apsearch("estimate", "--model", "llama-2-7b", "--cluster", "a100-sxm4-80gb:2x8",
        "--strategy", "tp_degree=2,fsdp_degree=8", "--format", "json")
      assert.are.equal(0, c2)
      local e = cjson.decode(j)
      assert.are.equal(1, e.estimate.strategy.dp_degree)            -- 16 / (tp 2 x fsdp 8)
      assert.are.equal(16, e.inputs.cluster.num_devices)
      assert.are.equal(6738415616, e.estimate.params_total)
    end)

    it("estimates pipeline_split = fill_last: ceil(61 / 16) = 4 per model chunk, the last 1", function()
      local code, j = apsearch("estimate", "examples/deepseek_v3_h100_1024.lua", "-q", "--format", "json",
        "--strategy", "tp_degree=2,pp_degree=8,vpp_degree=2,ep_degree=16,zero_stage=1,layer_recompute=full,pipeline_split=fill_last")
      assert.are.equal(0, code)
      local e = cjson.decode(j).estimate
      assert.are.equal("fill_last", e.strategy.pipeline_split)
      assert.are.same({ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1 }, e.strategy.stage_partition)
      -- rank 8 runs chunks 8 and 16: 4 + 1
      assert.are.equal(5, e.stages[8].num_layers)
      assert.are.equal("--strategy: pipeline_split: expected one of even, embedding_loss, deepspeed_type, " ..
        "fill_last, fill_first; did you mean \"fill_last\"? (got \"fill_lst\")",
        one_line_error(apsearch("estimate", "--strategy", "pipeline_split=fill_lst")))
    end)

    it("lists presets and inspects models", function()
      local code, out = apsearch("presets")
      assert.are.equal(0, code)
      assert.truthy(out:find("llama%-3%.1%-405b%s+405,853,388,800"), out)
      assert.truthy(out:find("gpt%-oss%-120b%s+116,829,156,672"), out) -- an example config, by its file name
      assert.truthy(out:find("h100-sxm-80gb", 1, true))
      local c2, j = apsearch("presets", "--format", "json")
      assert.are.equal(0, c2)
      local p = cjson.decode(j)
      -- the 10 presets, then every other config of examples/models
      local files = 0
      for f in require("lfs").dir(ROOT .. "/examples/models") do if f:match("%.json$") then files = files + 1 end end
      assert.are.equal(files, #p.models)
      assert.are.equal("llama-3.1-8b", p.models[1].name)
      assert.is_true(#p.devices >= 5)
      local c3, i = apsearch("inspect", "examples/models/mistral-7b-v0.1.json")
      assert.are.equal(0, c3)
      assert.truthy(i:find("\ntotal%s+7,241,732,096\n"), i)
      -- active with and without the embedding and output layer (untied: 2 x 32,000 x 4,096)
      assert.truthy(i:find("active %(with embedding, output%)%s+7,241,732,096\n"), i)
      assert.truthy(i:find("active without embedding, output%s+6,979,588,096\n"), i)
      local c4, ij = apsearch("inspect", "qwen2.5-7b", "--format", "json")
      assert.are.equal(0, c4)
      assert.are.equal(7615616512, cjson.decode(ij).parameters.total)
      -- -q drops the notes on stderr, as on every other command (it was
      -- refused; a breaker's finding)
      local r1 = ROOT .. "/tests/fixtures/heldout_configs/deepseek-ai--DeepSeek-R1.json"
      local _, _, noted = apsearch("inspect", r1)
      assert.truthy(noted:find("apsearch: note: ", 1, true), noted)
      local c5, r1_out, quiet = apsearch("inspect", r1, "-q")
      assert.are.equal(0, c5)
      assert.are.equal("", quiet)
      -- the MTP module as the checkpoint stores it, and as Megatron-LM
      -- trains it, without its embedding and output copies: 13,463,426,304
      -- less 2 x 129,280 x 7,168 (a new user saw 13.46B in inspect and
      -- +11.61B in run without a word on why)
      assert.truthy(r1_out:find("\nmtp %(as the checkpoint stores it%)%s+13,463,426,304\n"), r1_out)
      assert.are.equal(11610068224, 13463426304 - 2 * 129280 * 7168)
      assert.truthy(r1_out:find("\nmtp trained %(Megatron%-LM: shares embedding, output%)%s+11,610,068,224\n"), r1_out)
    end)

    it("prints help", function()
      local code, out = apsearch("help")
      assert.are.equal(0, code)
      assert.truthy(out:find("usage: apsearch", 1, true))
      local c2, o2 = apsearch("run", "--help")
      assert.are.equal(0, c2)
      assert.truthy(o2:find("--fix", 1, true))
    end)
  end)

  describe("exit 1", function()
    it("when no strategy fits", function()
      local code, out = apsearch("run", "--quiet", "--set", "cluster.memory_limit_gib=4")
      assert.are.equal(1, code)
      assert.truthy(out:find("no feasible strategy", 1, true))
      assert.truthy(out:find("MEMORY_LIMIT", 1, true))
    end)

    it("when the estimated strategy is infeasible", function()
      -- pure DP of Llama-3.1-8B over 8 GPUs: every rank holds the model states
      local code, out = apsearch("estimate", "--strategy", "dp_degree=8")
      assert.are.equal(1, code)
      assert.truthy(out:find("feasible  NO: MEMORY_LIMIT", 1, true))
    end)

    it("fills the devices a strategy leaves the way the framework would", function()
      -- TorchTitan (the default policy's fsdp2) shards them:
      -- data_parallel_shard_degree = -1, so tp 2 on 8 GPUs is fsdp 4
      local code, out = apsearch("estimate", "--strategy", "tp_degree=2")
      assert.are.equal(0, code, out)
      assert.truthy(out:find("dp_degree=1 fsdp_degree=4 zero_stage=3 tp_degree=2", 1, true), out)
    end)
  end)

  describe("exit 2 with one line naming file, field and value", function()
    local dir
    setup(function() dir = tmpdir() end)

    it("for a malformed policy", function()
      local path = write(dir .. "/syntax.lua", POLICY_HEAD .. "  search_space = { tp_degree = { 1, 2 }\n")
      local msg = one_line_error(apsearch("run", path))
      assert.truthy(msg:find(path .. ":", 1, true) == 1, msg)
      local notab = write(dir .. "/notab.lua", "return 'x'\n")
      assert.are.equal(notab .. ': (return value): a policy must return a table (got "x")',
        one_line_error(apsearch("run", notab)))
    end)

    it("for a zero degree (policy, --fix, --strategy)", function()
      local path = write(dir .. "/zero.lua", POLICY_HEAD .. "  search_space = { tp_degree = { 0, 2 } },\n}\n")
      assert.are.equal(path .. ": search_space.tp_degree[1]: must be a positive integer (got 0)",
        one_line_error(apsearch("run", path)))
      assert.are.equal("--fix: search_space.tp_degree: must be a positive integer (got 0)",
        one_line_error(apsearch("run", "--fix", "tp_degree=0")))
      assert.are.equal("--strategy: pp_degree: must be a positive integer (got 0)",
        one_line_error(apsearch("estimate", "--strategy", "pp_degree=0")))
    end)

    it("for --model and --cluster, naming the option; --set cluster.* after --cluster works", function()
      local unknown = one_line_error(apsearch("run", "--model", "nosuch"))
      assert.truthy(unknown:find("--model: model: unknown model preset", 1, true) == 1)
      -- and that a config.json path is taken too (a new user did not know)
      assert.truthy(unknown:find("), or a config.json path (got \"nosuch\")", 1, true), unknown)
      assert.are.equal("--cluster: nodes: expected a positive integer (got 0)",
        one_line_error(apsearch("run", "--cluster", "h100-sxm-80gb:0")))
      local code, out = apsearch("run", "--quiet", "--cluster", "h100-sxm-80gb:1x8",
        "--set", "cluster.memory_limit_gib=60")
      assert.are.equal(0, code)
      assert.truthy(out:find("on 8 x h100-sxm-80gb", 1, true))
    end)

    it("refuses a --cluster count whose product wraps in 64-bit integers", function()
      -- 4611686018427387905 hosts x 4 GPUs is 4 in Lua's integers: a breaker's
      -- run searched 4 GB200s and exited 0 (2026-12-07)
      local code, _, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "gb200:4611686018427387905")
      assert.are.equal(2, code)
      assert.are.equal("apsearch: --cluster: num_devices: nodes x devices per node must be below 2^24 "
        .. "(got \"4611686018427387905\")\n", err)
      code, _, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2x4611686018427387905")
      assert.are.equal(2, code)
      assert.truthy(err:find("must be below 2^24", 1, true), err)
    end)

    it("notes that --cluster DEVICE:NODES counts hosts, with the spec for that many GPUs", function()
      local _, _, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:64", "--top-k", "1")
      assert.truthy(err:find("apsearch: note: --cluster h100-sxm-80gb:64 is 64 hosts of 8 GPUs, 512 GPUs "
        .. "(for 64 GPUs: h100-sxm-80gb:8x8)\n", 1, true), err)
      local cli = require "apsearch.cli"
      local policy = require "apsearch.policy"
      assert.are.equal("note: --cluster gb200:3 is 3 hosts of 4 GPUs, 12 GPUs",
        cli.cluster_note("gb200:3", policy.parse_cluster_spec("gb200:3")))
      -- one host, or xGPUS given: nothing to misread
      assert.is_nil(cli.cluster_note("b200:1", policy.parse_cluster_spec("b200:1")))
      assert.is_nil(cli.cluster_note("b200:8x8", policy.parse_cluster_spec("b200:8x8")))
      -- a host larger than the device's board is said (1x1024 read as one
      -- NVLink switch of 1,024 H100s; breaker pass, 2026-12-05)
      assert.are.equal("note: --cluster h100-sxm-80gb:1x1024 gives hosts of 1024 GPUs on one NVLink switch each; "
        .. "a h100-sxm-80gb board holds 8 (an NVLink domain across hosts is cluster.nvlink_domain_size)",
        cli.cluster_note("h100-sxm-80gb:1x1024", policy.parse_cluster_spec("h100-sxm-80gb:1x1024")))
      assert.is_nil(cli.cluster_note("gb200:2x4", policy.parse_cluster_spec("gb200:2x4")))
      -- and a host smaller than the board (a new user's finding: b200:2x4
      -- passed without a word while gb200:1x8 was explained)
      assert.are.equal("note: --cluster b200:2x4 uses 4 of each host's 8 b200 GPUs: NVLink joins those 4, the "
        .. "network the hosts", cli.cluster_note("b200:2x4", policy.parse_cluster_spec("b200:2x4")))
      assert.are.equal("note: --cluster h100-sxm-80gb:4x1 uses 1 of each host's 8 h100-sxm-80gb GPUs: no NVLink "
        .. "between them: the network joins every GPU",
        cli.cluster_note("h100-sxm-80gb:4x1", policy.parse_cluster_spec("h100-sxm-80gb:4x1")))
      -- the count read as a number (01 is 1), AMD's parts by their fabric;
      -- one GPU in all: nothing joins it to another, no note
      assert.truthy(cli.cluster_note("h100-sxm-80gb:2x01", policy.parse_cluster_spec("h100-sxm-80gb:2x01")):find(
        "uses 1 of each host's 8 h100-sxm-80gb GPUs: no NVLink between them", 1, true))
      assert.is_nil(cli.cluster_note("h100-sxm-80gb:1x01", policy.parse_cluster_spec("h100-sxm-80gb:1x01")))
      assert.are.equal("note: --cluster mi300x-192gb:1x4 uses 4 of each host's 8 mi300x-192gb GPUs: Infinity Fabric "
        .. "joins those 4, the network the hosts",
        cli.cluster_note("mi300x-192gb:1x4", policy.parse_cluster_spec("mi300x-192gb:1x4")))
    end)

    it("reads a part's short name as its one preset, and says so (a new user wrote h100:8)", function()
      local cli = require "apsearch.cli"
      local policy = require "apsearch.policy"
      assert.are.same({ "h100-sxm-80gb", true }, { policy.device_preset_name("H100") })
      assert.are.same({ "gb200", false }, { policy.device_preset_name("gb200") })
      assert.are.same({ "gb200", true }, { policy.device_preset_name("GB200") })
      assert.are.same({ "mi355x-288gb", true }, { policy.device_preset_name("mi355x") })
      -- the board without its memory (a new user's "h100-sxm", 2026-12-07)
      assert.are.same({ "h100-sxm-80gb", true }, { policy.device_preset_name("H100-SXM") })
      -- two A100 presets (40 and 80 GB): no alias, the name asks which
      assert.is_nil(policy.device_preset_name("a100"))
      local c = policy.parse_cluster_spec("h200:2")
      assert.are.equal(16, c.num_devices)
      assert.are.equal('note: device "h200" read as the preset h200-sxm-141gb (apsearch presets lists the '
        .. 'others); --cluster h200:2 is 2 hosts of 8 GPUs, 16 GPUs', cli.cluster_note("h200:2", c))
      -- a GB200 tray's 4 GPUs by its short name in any case
      assert.are.equal(4, policy.parse_cluster_spec("GB200:3").devices_per_node)
      local code, out, err = apsearch("run", "--model", "llama-3.1-8b", "--cluster", "H100:1", "--top-k", "1")
      assert.are.equal(0, code, err)
      assert.truthy(out:find("on 8 x h100-sxm-80gb", 1, true), out)
      assert.truthy(err:find('apsearch: note: device "H100" read as the preset h100-sxm-80gb', 1, true), err)
      -- in a policy file's cluster table too
      local code2, _, err2 = apsearch("run", "--cluster", "a100:1")
      assert.are.equal(2, code2)
      assert.truthy(err2:find('did you mean "a100-sxm4-40gb" or "a100-sxm4-80gb"?', 1, true), err2)
    end)

    it("for another name of a framework, suggesting apsearch's (a new user's finding)", function()
      assert.are.equal('--set: training.framework: expected one of megatron, fsdp2, fsdp, deepspeed, automodel; '
        .. 'did you mean "fsdp2"? (got "torchtitan")',
        one_line_error(apsearch("run", "--set", "training.framework=torchtitan")))
      assert.are.equal('--launchable: launchable: must be megatron, torchtitan, mindformers, automodel; '
        .. 'did you mean "megatron"? (got "megatrn")',
        one_line_error(apsearch("run", "--launchable", "megatrn")))
      -- a framework built on an engine names that engine (a new user's
      -- "nemo" got 'did you mean "megatron"?' for no stated reason)
      assert.are.equal('--launchable: launchable: must be megatron, torchtitan, mindformers, automodel; '
        .. 'NeMo\'s LLM recipes run Megatron-Core: give "megatron" (Megatron-LM\'s arguments) or, for NeMo '
        .. 'AutoModel, "automodel" (got "NeMo")',
        one_line_error(apsearch("run", "--launchable", "NeMo")))
    end)

    it("for a memory limit, naming the field as written and its value #bulk", function()
      assert.are.equal("--set: cluster.memory_limit_gib: must be a finite number > 0 (got -5)",
        one_line_error(apsearch("run", "--set", "cluster.memory_limit_gib=-5")))
      -- a positive limit of a few bytes: nothing fits, said as such (the
      -- devices the model states would need are past what a count says;
      -- was an internal "attempt to compare number with nil")
      local code_t, out_t, err_t = apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "b200:1x8",
        "--set", "cluster.memory_limit_gib=1e-300", "--top-k", "1", "-q")
      assert.are.equal(1, code_t)
      assert.is_nil(err_t:find("attempt to", 1, true), err_t)
      assert.truthy(out_t:find("0.00 GiB limit", 1, true), out_t)
      -- 0 is refused, not read as the default (the core's "unset")
      assert.are.equal("--set: cluster.memory_limit_gib: must be a finite number > 0 (got 0)",
        one_line_error(apsearch("run", "--set", "cluster.memory_limit_gib=0")))
      assert.are.equal("--set: constraints.memory_limit_gib: 90.00 GiB exceeds the device capacity "
        .. "79.65 GiB (cluster.device.memory_bytes)",
        one_line_error(apsearch("run", "--set", "constraints.memory_limit_gib=90")))
      -- within 0.005 GiB of the capacity the two are said in bytes (a
      -- breaker's "79.65 GiB exceeds the device capacity 79.65 GiB")
      local lim, cap = one_line_error(apsearch("run", "--set", "constraints.memory_limit_gib=79.65")):match(
        "^%-%-set: constraints%.memory_limit_gib: (%d+) bytes exceeds the device capacity (%d+) bytes " ..
        "%(cluster%.device%.memory_bytes%)$")
      assert.is_true(tonumber(lim) > tonumber(cap) and tonumber(lim) - tonumber(cap) < 0.005 * 2 ^ 30, lim)
    end)

    it("for a YaRN rope_scaling value transformers cannot use (truncate, attention_factor)", function()
      local base = { model_type = "qwen2", hidden_size = 3584, num_hidden_layers = 28, num_attention_heads = 28,
        num_key_value_heads = 4, intermediate_size = 18944, vocab_size = 152064, max_position_embeddings = 131072 }
      base.rope_scaling = { type = "yarn", factor = 4.0, original_max_position_embeddings = 32768, truncate = "no" }
      local cfg = write(dir .. "/yarn_truncate.json", cjson.encode(base))
      assert.are.equal(cfg .. ': rope_scaling: truncate: expected true or false (got "no")',
        one_line_error(apsearch("inspect", cfg)))
      base.rope_scaling.truncate, base.rope_scaling.attention_factor = false, 0
      cfg = write(dir .. "/yarn_af.json", cjson.encode(base))
      assert.are.equal(cfg .. ": rope_scaling: attention_factor: expected a finite number > 0 (got 0)",
        one_line_error(apsearch("inspect", cfg)))
    end)

    it("for an unknown field", function()
      local path = write(dir .. "/unknown.lua", POLICY_HEAD .. "  search_space = { tp = { 1, 2 } },\n}\n")
      local msg = one_line_error(apsearch("run", path))
      assert.truthy(msg:find(path .. ": search_space.tp: unknown field", 1, true) == 1, msg)
      assert.truthy(msg:match("%(got {1, 2}%)$"))
      assert.are.equal("--set: training.learning_rate: unknown field (got 0.0003)",
        H.plain(one_line_error(apsearch("run", "--set", "training.learning_rate=3e-4"))))
    end)

    it("for an MoE config", function()
      local cfg = write(dir .. "/mixtral.json", cjson.encode({ model_type = "mixtral",
        hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32,
        num_key_value_heads = 8, intermediate_size = 14336, vocab_size = 32000,
        num_local_experts = 8, num_experts_per_tok = 2 }))
      local path = write(dir .. "/moe.lua", [[
return { model = "mixtral.json", cluster = { device = "h100-sxm-80gb", nodes = 1 },
  training = { global_batch_size = 64, seq_length = 4096 } }
]])
      -- estimated as MoE (issue 13); an expert degree for it is checked
      -- 46.7 B parameters do not fit one node: every candidate of the
      -- framework's full space (ep_degree 1, 2, 4, 8 among its dimensions)
      -- filtered or estimated and over the limit
      local code, out = apsearch("run", path, "--set", "top_k=1")
      assert.are.equal(1, code)
      assert.truthy(out:find("0 feasible of %d+ candidates %(%d+ filtered early, %d+ over a limit%)"), out)
      -- JetMoE (model_type jetmoe): still refused, naming the key
      local jetmoe = write(dir .. "/jetmoe.json", cjson.encode({ model_type = "jetmoe",
        hidden_size = 1536, num_hidden_layers = 32, num_attention_heads = 24,
        intermediate_size = 512, vocab_size = 49155, num_local_experts = 40, num_experts_per_tok = 8 }))
      -- the list cut to the terminal's 120 columns (suggest.fold_known)
      local e = one_line_error(apsearch("inspect", jetmoe))
      assert.truthy(e:find("NotImplemented: " .. jetmoe .. ": MoE config (num_local_experts = 40) of model_type " ..
        "\"jetmoe\" is not modelled (", 1, true), e)
      assert.truthy(e:find("supported MoE types", 1, true), e)
    end)

    it("finds an example from outside the tree, or names where the examples are", function()
      local elsewhere = tmpdir()
      local function from(dir, ...)
        local args = {}
        for i, a in ipairs({ ... }) do args[i] = q(a) end
        local o = tmpdir()
        local _, _, code = os.execute(("cd %s && APSEARCH_ROOT=%s %s %s > %s/out 2> %s/err"):format(
          q(dir), q(ROOT), q(BIN), table.concat(args, " "), o, o))
        return code, read(o .. "/out"), read(o .. "/err")
      end
      local code, out, err = from(elsewhere, "run", "examples/llama3_8b_h100.lua", "-q", "--top-k", "1")
      assert.are.equal(0, code)
      assert.are.equal(("apsearch: examples/llama3_8b_h100.lua: not found here; using the installed " ..
        "%s/examples/llama3_8b_h100.lua\n"):format(ROOT), err)
      assert.truthy(out:find("llama-3.1-8b on 8 x h100-sxm-80gb", 1, true))
      assert.are.equal(("examples/none.lua: cannot open policy file: No such file or directory " ..
        "(the examples are in %s/examples)"):format(ROOT),
        one_line_error(from(elsewhere, "run", "examples/none.lua")))
      -- a --model path of the examples too (it failed as a missing config)
      code, out, err = from(elsewhere, "run", "--model", "examples/models/llama-3.1-8b.json", "--cluster",
        "h100-sxm-80gb:1", "-q", "--top-k", "1")
      assert.are.equal(0, code, err)
      assert.are.equal(("apsearch: examples/models/llama-3.1-8b.json: not found here; using the installed " ..
        "%s/examples/models/llama-3.1-8b.json\n"):format(ROOT), err)
      assert.truthy(out:find("llama-3.1-8b on 8 x h100-sxm-80gb", 1, true), out)
      -- inspect and init too, and ./ or // spellings of the same path
      code, out, err = from(elsewhere, "inspect", ".//examples/models/llama-3.1-8b.json")
      assert.are.equal(0, code, err)
      assert.truthy(err:find("not found here; using the installed", 1, true), err)
      code, out, err = from(elsewhere, "init", "examples/models/llama-3.1-8b.json", "h100-sxm-80gb:1")
      assert.are.equal(0, code, err)
      -- a ".." component never resolves into the installed tree
      code, out, err = from(elsewhere, "inspect", "examples/../examples/models/llama-3.1-8b.json")
      assert.are.equal(2, code, err)
      assert.is_nil(err:find("using the installed", 1, true), err)
    end)

    it("for bad options, commands and files", function()
      assert.truthy(one_line_error(apsearch("run", "--bogus")):find("unknown/bad flag: --bogus", 1, true))
      assert.truthy(one_line_error(apsearch("frobnicate")):find('unknown command "frobnicate"', 1, true))
      assert.truthy(one_line_error(apsearch("run", dir .. "/missing.lua")):find("cannot open policy file", 1, true))
      -- a model's config.json given as the policy (a new user's mistake):
      -- said so, not Lua's "unexpected symbol near '{'"
      local cfg = ROOT .. "/tests/fixtures/heldout_configs/Qwen--Qwen3-8B.json"
      assert.are.equal(cfg .. ": not a Lua policy file: the file is JSON (a Hugging Face config.json is given "
        .. "with --model " .. cfg .. ")", one_line_error(apsearch("run", cfg)))
      assert.are.equal('run: --format: expected table, json, csv (got "yaml")',
        one_line_error(apsearch("run", "--format", "yaml")))
      assert.are.equal('--top-k: top_k: must be a positive integer (got "0")',
        one_line_error(apsearch("run", "--top-k", "0")))
      local msg = one_line_error(apsearch("run", "--set", "cluster.device=z100"))
      assert.truthy(msg:match('^%-%-set: cluster%.device: .*z100'), msg)
    end)
  end)
end)

describe("allocator outputs and dependent flags (issue 24)", function()
  it("refuses a flag that needs another, in one line, exit 2", function()
    assert.are.equal("--set: training.compile_loss: megatron has no compiled loss (TorchTitan's "
      .. "compile.components = [\"loss\"], fsdp2)",
      one_line_error(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
        "--set", "training.compile_loss=true")))
    local msg = one_line_error(apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
      "--set", "training.cuda_graph_scope=attn"))
    assert.truthy(msg:find("training.cuda_graph_scope: needs training.cuda_graphs = true", 1, true), msg)
  end)

  it("reports max allocated, max reserved and device memory in use, and which one the limit bounds", function()
    local code, out, err = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--format", "json",
      "--top-k", "1")
    assert.are.equal(0, code, err)
    local mc = require("cjson").decode(out).top_k_strategies[1].memory_cost
    assert.is_true(mc.allocated < mc.reserved and mc.reserved < mc.device)
    assert.are.equal(mc.total, mc.device)
    assert.are.equal("device", mc.limit_kind) -- no limit given: the capacity's
    code, out = apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--top-k", "1",
      "--set", "cluster.memory_limit_gib=70")
    assert.are.equal(0, code)
    assert.truthy(out:find("peak GiB = device memory in use (max reserved + CUDA context + NCCL); rank 1: "
      .. "max allocated", 1, true), out)
    assert.truthy(out:find("limit on max reserved", 1, true), out)
  end)
end)
