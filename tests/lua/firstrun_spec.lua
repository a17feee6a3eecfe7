-- tests/lua/firstrun_spec.lua -- the first run of a new user (issue 26):
-- `apsearch run --model M --cluster D:N` with no policy builds one
-- (apsearch.defaults: the recipe tokens-per-GPU batch, the framework's
-- full space), prints the defaults it chose, and finds a feasible top-k
-- on every preset where the model states fit; when nothing fits the
-- terminal says what to relax with numbers; `apsearch init` writes the
-- policy it would use; did-you-mean for model types and device names.
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local H = require "spec_helpers"
local json = require "cjson"
local defaults = require "apsearch.defaults"
local policy = require "apsearch.policy"

-- one run, as JSON; the exit status, the result and stderr
local function run(model, cluster, ...)
  -- --top-k 1 unless the caller gives its own (an option given twice is
  -- refused: cli.lua, 98e806f)
  local args = { "run", "--model", model, "--cluster", cluster, "--format", "json", ... }
  local own = false
  for _, a in ipairs(args) do own = own or a == "--top-k" or a == "-k" end
  if not own then args[#args + 1] = "--top-k" args[#args + 1] = "1" end
  local code, out, err = H.apsearch(table.unpack(args))
  local ok, r = pcall(json.decode, out)
  return code, ok and r or nil, err
end

-- model -> clusters (DEVICE:NODES, hosts of 8 for H100 / B200, trays of 4
-- for GB200) from the smallest that holds the model to 16,384 H100s
local GRID = {
  ["llama-3.1-8b"] = { "h100-sxm-80gb:1", "h100-sxm-80gb:2048", "b200:1", "gb200:16" },
  ["llama-3.1-70b"] = { "h100-sxm-80gb:8", "h100-sxm-80gb:512", "b200:1", "gb200:256" },
  ["llama-3.1-405b"] = { "h100-sxm-80gb:64", "h100-sxm-80gb:2048", "b200:8", "gb200:16" },
  ["qwen2.5-72b"] = { "h100-sxm-80gb:16", "h100-sxm-80gb:2048", "b200:8", "gb200:16" },
  ["mixtral-8x7b"] = { "h100-sxm-80gb:2", "h100-sxm-80gb:2048", "b200:1", "gb200:16" },
  ["qwen3-30b-a3b"] = { "h100-sxm-80gb:1", "h100-sxm-80gb:2048", "b200:8", "gb200:2" },
  ["deepseek-v3"] = { "h100-sxm-80gb:64", "h100-sxm-80gb:2048", "b200:128", "gb200:256" },
}

-- (how long each search takes is bench/run.sh's to print, not a test's:
-- under the sanitizers the same searches take several times as long)

describe("run --model M --cluster D:N without a policy", function()
  for model, clusters in pairs(GRID) do
    for _, cluster in ipairs(clusters) do
      it(("finds a feasible top-k for %s on %s, with the recipe batch"):format(model, cluster), function()
        local code, r, err = run(model, cluster)
        assert.are.equal(0, code, err)
        assert.is_true(r.all_candidate_summary.feasible > 0)
        local m = r.inputs.model
        local n = r.inputs.cluster.num_devices
        local tr = r.inputs.training
        assert.are.equal(defaults.seq_length(m), tr.seq_length)
        assert.are.equal(defaults.batch_sequences(defaults.batch_tokens(m, n), tr.seq_length, n),
          tr.global_batch_size)
        assert.are.equal("megatron", tr.framework)
        assert.truthy(r.inputs.defaults[2]:find("recipe tokens-per-GPU rule", 1, true))
        -- rank 1 is a layout Megatron-LM runs as intended: TP inside one
        -- NVLink domain, every GPU used, the batch split evenly over the
        -- data-parallel ranks' micro-batches, and for an MoE model EP
        -- dividing the experts and ETP x EP the ranks of a pipeline stage
        -- (parallel_state.py initialize_model_parallel)
        local s, cl = r.top_k_strategies[1], r.inputs.cluster
        assert.is_true(s.tp_degree <= math.max(cl.devices_per_node, cl.nvlink_domain_size or 0))
        assert.are.equal(n, s.devices_used)
        local data = s.dp_degree * s.fsdp_degree
        assert.are.equal(0, tr.global_batch_size % (data * s.micro_batch_size))
        assert.are.equal(tr.global_batch_size, data * s.micro_batch_size * s.micro_batch_num)
        if (m.num_experts or 0) > 0 then
          assert.are.equal(0, m.num_experts % s.ep_degree)
          assert.are.equal(0, (data * s.tp_degree * s.cp_degree) % (s.ep_degree * s.etp_degree))
        end
      end)
    end
  end

  it("says without --out when rank 1's launch file for the framework would build another job", function()
    -- Qwen3-30B-A3B on TorchTitan: HEAD's MoE has no load-balancing loss
    local code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100:1x8", "--set",
      "training.framework=fsdp2", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: rank 1's torchtitan launch file would build another job than the one " ..
      "estimated: NOT EXPRESSIBLE in TorchTitan: the load-balancing loss (coefficient 0.001)", 1, true), err)
    -- the same, estimated without the loss: nothing to say
    code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100:1x8", "--set",
      "training.framework=fsdp2", "--set", "model.moe_aux_loss_coeff=0", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.is_nil(err:find("launch file would build another job", 1, true), err)
  end)

  it("prints the chosen defaults in the run's header", function()
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:2048",
      "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("defaults: megatron, bf16, adamw, seq 8192 (dense recipes), the framework's full space",
      1, true), err)
    assert.truthy(err:find("defaults: global batch 2048 x 8192 = 16,777,216 tokens; recipe tokens-per-GPU rule: "
      .. "clamp(16384 GPUs x 16,384, 1,048,576, 16,777,216)", 1, true), err)
    assert.truthy(err:find("note: no policy file; searching the framework's full space: ", 1, true), err)
    -- the log names the policy as built, not as a file called "apsearch init ..."
    assert.truthy(err:find("\npolicy built by --model / --cluster (`apsearch init llama-3.1-405b h100-sxm-80gb:2048` "
      .. "writes it): model llama-3.1-405b (405.85B parameters), 16384 x h100-sxm-80gb", 1, true), err)
    assert.truthy(out:find("llama-3.1-405b on 16384 x h100-sxm-80gb", 1, true), out)
  end)

  it("trains a model's MTP layers under Megatron-LM, as the recipes do, and says so", function()
    -- a new user's finding (2026-12-07): DeepSeek-V3.1, GLM-5.3 and
    -- Nemotron 3 Super were ranked without their MTP layers, and some
    -- "fits" ran out of memory with them
    local code, text = H.apsearch("init", "deepseek-v3", "h800:64")
    assert.are.equal(0, code)
    assert.truthy(text:find("mtp_num_layers = 1", 1, true), text)
    local _, _, err = H.apsearch("run", "--model", "deepseek-v3", "--cluster", "h800:64", "--top-k", "1")
    assert.truthy(err:find("defaults: the config's 1 multi-token-prediction layer(s) trained (training.mtp_num_layers "
      .. "= 1), as Megatron-Bridge's recipes train them; --set training.mtp_num_layers=0 leaves them out", 1, true),
      err)
    -- none under a framework that does not train it, nor when the run says
    -- (a key as the policy reads it: doubled dots, spaces)
    for _, set in ipairs({ "training.framework=fsdp2", "training..framework=fsdp2", "training.mtp_num_layers = 0" }) do
      local c2, _, e2 = H.apsearch("run", "--model", "deepseek-v3", "--cluster", "h800:64", "--top-k", "1",
        "--set", set)
      assert.are.equal(0, c2, e2)
      assert.is_nil(e2:find("multi-token-prediction layer(s) trained", 1, true), e2)
    end
    -- a model without MTP gets no such line
    local _, _, e3 = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2", "--top-k", "1")
    assert.is_nil(e3:find("multi-token-prediction", 1, true), e3)
  end)

  it("says when the batch has fewer sequences than GPUs, and over how many GPUs a sequence is split", function()
    -- Llama-3.1-8B on 16,384 H100s: 16,384 x 16,384 tokens is over the
    -- 16,777,216 cap, so 16,777,216 / 8192 = 2048 sequences; dp x fsdp <=
    -- 2048, so tp x cp x pp >= 16,384 / 2048 = 8
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:2048",
      "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("\ndefaults: 2048 sequences on 16384 GPUs: every strategy splits a sequence over at least "
      .. "8 GPUs (tp x cp x pp); 2048 GPUs or fewer keep a whole sequence a GPU\n", 1, true), err)
    -- 64 GPUs: 128 sequences, two a GPU, no such line
    local _, _, err64 = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:8", "--top-k", "1")
    assert.truthy(err64:find("defaults: global batch 128 x 8192", 1, true), err64)
    assert.is_nil(err64:find("sequences on", 1, true), err64)
  end)

  it("names the first rank with memory headroom when rank 1 is near capacity", function()
    -- Llama-3.1-405B on 128 H100s: rank 1 is above 90 % of the 79.65 GiB
    -- and more than objectives.NEAR_CAPACITY_TIE (1 %) faster than the
    -- first rank below it; the note names that rank and its step time
    -- against rank 1's, (t_k / t_1 - 1) x 100 with one decimal
    local M, C = "llama-3.1-405b", "h100:16"
    local code, r = run(M, C, "--top-k", "10")
    assert.are.equal(0, code)
    local top = r.top_k_strategies
    assert.is_true(top[1].memory_cost.near_capacity)
    local k
    for i, x in ipairs(top) do if not x.memory_cost.near_capacity then k = i break end end
    assert.truthy(k and k > 1)
    assert.is_true(top[k].performance_cost.step_time > 1.01 * top[1].performance_cost.step_time)
    local want = ("; a row marked ! ranks as if 1 %% slower (objectives.NEAR_CAPACITY_TIE); rank 1 is above it, the first rank below it is %d (step time %+.1f %%)"):format(k,
      100 * (top[k].performance_cost.step_time / top[1].performance_cost.step_time - 1))
    local _, out = H.apsearch("run", "-q", "--model", M, "--cluster", C, "--wide")
    assert.truthy(out:find("slow the step beyond the estimate (docs/accuracy.md)" .. want .. "\n", 1, true), out)
    -- only rank 1 listed: the margin that ranks only strategies below 90 %
    -- of the capacity, 0.1 x memory_bytes in GiB rounded up to hundredths,
    -- and with it rank 1 is one
    local margin = ("%.2f"):format(math.ceil(0.1 * r.inputs.cluster.device.memory_bytes / 2 ^ 30 * 100) / 100)
    local _, out1 = H.apsearch("run", "-q", "--model", M, "--cluster", C, "--wide", "-k", "1")
    assert.truthy(out1:find(("; so is every strategy listed (--set training.memory_margin_gib=%s ranks only " ..
      "those below it)\n"):format(margin), 1, true), out1)
    local code2, r2 = run(M, C, "--top-k", "1", "--set",
      "training.memory_margin_gib=" .. margin)
    assert.are.equal(0, code2)
    assert.is_false(r2.top_k_strategies[1].memory_cost.near_capacity)
    assert.are.equal(top[k].performance_cost.step_time, r2.top_k_strategies[1].performance_cost.step_time)
    -- a limit given bounds max reserved and the margin is not read: the
    -- note offers a limit on device memory in use, 90 % of the capacity in
    -- hundredths of a GiB rounded down, which the flag compares
    local gib = math.floor(0.9 * r.inputs.cluster.device.memory_bytes / 2 ^ 30 * 100) / 100
    local _, outl = H.apsearch("run", "-q", "--model", M, "--cluster", C, "--wide", "-k", "1",
      "--set", "cluster.memory_limit_gib=79")
    assert.truthy(outl:find(("; so is every strategy listed (--set constraints.memory_limit_kind=device --set " ..
      "cluster.memory_limit_gib=%.2f ranks only those below it)\n"):format(gib), 1, true), outl)
    local code3, r3 = run(M, C, "--top-k", "1", "--set", "cluster.memory_limit_gib=79", "--set",
      "constraints.memory_limit_kind=device", "--set", ("cluster.memory_limit_gib=%.2f"):format(gib))
    assert.are.equal(0, code3)
    assert.is_false(r3.top_k_strategies[1].memory_cost.near_capacity)
    -- rank 1 with headroom (Llama-3.1-8B on 8 H100s, 64.42 GiB): the note as before, if any
    local _, out8 = H.apsearch("run", "-q", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1", "--wide")
    assert.is_nil(out8:find("rank 1 is above it", 1, true), out8)
  end)

  it("says when rank 1 waits mostly on the host, and that CUDA graphs take that cost", function()
    -- DeepSeek-V3 on 72 GB200 (18 trays of 4): full recompute, TP 8, PP 9
    -- fit; rank 1's largest overhead is the host's launches (new-user pass,
    -- 2026-12-07: nothing said so)
    local code, r = run("deepseek-v3", "gb200:18")
    assert.are.equal(0, code)
    local pc = r.top_k_strategies[1].performance_cost
    local host = pc.breakdown.host_launch.exposed
    for c, v in pairs(pc.breakdown) do
      if c ~= "compute_fwd" and c ~= "compute_bwd" then assert.is_true(v.exposed <= host, c) end
    end
    local _, out = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "gb200:18", "-k", "1", "--wide")
    assert.truthy(out:find(("rank 1 waits for the host launching its kernels (host_launch, its largest overhead: " ..
      "%.2f of %.2f s): Megatron-LM's CUDA graphs take that cost (--set training.cuda_graphs=true; "):format(host,
      pc.step_time), 1, true), out)
    -- with the graphs on, no such line (and rank 1 is faster)
    local code2, r2 = run("deepseek-v3", "gb200:18", "--set", "training.cuda_graphs=true")
    assert.are.equal(0, code2)
    assert.is_true(r2.top_k_strategies[1].performance_cost.step_time < pc.step_time)
    local _, out2 = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "gb200:18", "-k", "1", "--wide",
      "--set", "training.cuda_graphs=true")
    assert.is_nil(out2:find("rank 1 waits for the host", 1, true), out2)
  end)

  it("says when a --set changed the built batch or sequence, and what the rule gave", function()
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
      "--top-k", "1", "--set", "training.global_batch_size=64")
    assert.are.equal(0, code, err)
    local line = err:match("defaults: global batch 64 x [^\n]*")
    assert.truthy(line and line:find("as --set (the recipe tokens-per-GPU rule: clamp(8 GPUs x ", 1, true), err)
    assert.truthy(line:find(") gives global batch ", 1, true), line)
  end)

  -- a sequence --set alone keeps the rule's tokens: MiniMax-M3 on 256
  -- B200 at 32K, clamp(256 x 32,768, 2,097,152, 62,914,560) = 8,388,608
  -- tokens, 256 sequences (not the 2048 the default 4K sequence gives)
  it("a sequence --set without a batch takes the rule's tokens at that sequence", function()
    local code, _, err = H.apsearch("run", "--model", "minimax-m3", "--cluster", "b200:32", "--top-k", "1",
      "--set", "training.seq_length=32768")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("seq 32768 (--set; moe recipes: 4096)", 1, true), err)
    assert.truthy(err:find("defaults: global batch 256 x 32768 = 8,388,608 tokens; recipe tokens-per-GPU rule",
      1, true), err)
  end)

  it("names --cluster for a cluster the core refuses", function()
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "mi300x-192gb:1x16")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: --cluster: cluster.device.intra_node_links: 7 links per GPU cannot fully "
      .. "connect devices_per_node=16 GPUs\n", err)
  end)

  it("says it searches the default space only where it searches one", function()
    local code, out, err = H.apsearch("estimate", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:1",
      "--strategy", "fsdp_degree=8")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("step", 1, true), out)
    assert.falsy(err:find("searching the framework's full space", 1, true), err)
  end)

  it("gives a rack-scale device its NVLink domain (64 GPUs of an NVL72 rack)", function()
    local code, r, err = run("qwen3-30b-a3b", "gb200:256")
    assert.are.equal(0, code, err)
    assert.are.equal(64, r.inputs.cluster.nvlink_domain_size)
    assert.falsy(err:find("NVLink domain of one", 1, true), err)
  end)

  it("makes a job of one rack or less one NVLink domain (72 GPUs: 72, not 64)", function()
    local d = require "apsearch.defaults"
    assert.are.equal(72, d.nvlink_domain({ devices_per_node = 4, num_devices = 72 }, 72))
    assert.are.equal(32, d.nvlink_domain({ devices_per_node = 4, num_devices = 32 }, 72))
    assert.are.equal(64, d.nvlink_domain({ devices_per_node = 4, num_devices = 128 }, 72))
    assert.are.equal(64, d.nvlink_domain({ devices_per_node = 4, num_devices = 160 }, 72))
    -- a multiple of the rack and not of 64: whole racks (144 = 2 x 72, not
    -- 64 + 64 + 16; gb300:36 was estimated apart from gb300:2x72)
    assert.are.equal(72, d.nvlink_domain({ devices_per_node = 4, num_devices = 144 }, 72))
    assert.is_nil(d.nvlink_domain({ devices_per_node = 4, num_devices = 4 }, 72))
    assert.is_nil(d.nvlink_domain({ devices_per_node = 8, num_devices = 64 }, nil))
  end)
end)

describe("the built space's context-parallel exchanges", function()
  -- TorchTitan HEAD all-gathers K/V (decoder_sharding.py
  -- set_gqa_inner_attention_local_map): its space searches what it builds
  it("are the framework's own", function()
    local m = { num_layers = 32, max_position_embeddings = 131072, num_attention_heads = 32 }
    local cl = { num_devices = 64, devices_per_node = 8 }
    local function cp_comm(fw)
      return defaults.search_space(m, cl, { framework = fw, seq_length = 131072 }).cp_comm_type
    end
    assert.are.same({ "all_gather" }, cp_comm("fsdp2"))
    assert.are.same({ "p2p", "all_gather", "a2a" }, cp_comm("megatron"))
    assert.are.same({ "p2p" }, cp_comm("automodel"))
  end)
end)

describe("the recipe tokens-per-GPU rule", function()
  local dense = { num_layers = 32, max_position_embeddings = 131072 }
  local moe = { num_layers = 61, num_experts = 256, max_position_embeddings = 163840 }
  it("gives the recipes' batches", function()
    -- Llama 3 8B / 70B recipes: GBS 128 at 8192 on 8 and 64 GPUs
    assert.are.same({ 128, 8192 }, { defaults.training(dense, 8).global_batch_size, defaults.seq_length(dense) })
    assert.are.equal(128, defaults.training(dense, 64).global_batch_size)
    -- 16M tokens: Llama 3 405B at 8,192 and 16,384 GPUs
    assert.are.equal(2048, defaults.training(dense, 16384).global_batch_size)
    -- DeepSeek-V3 on 1,024 H100s: GBS 8192 at 4096
    assert.are.same({ 8192, 4096 }, { defaults.training(moe, 1024).global_batch_size, defaults.seq_length(moe) })
    -- Qwen3-30B-A3B on 8 GPUs: GBS 512 at 4096
    assert.are.equal(512, defaults.training(moe, 8).global_batch_size)
  end)
  it("keeps a sequence within the model's positions and the batch divisible by the odd part of N", function()
    assert.are.equal(4096, defaults.seq_length({ num_layers = 32, max_position_embeddings = 4096 }))
    -- 24 GPUs: 128 sequences rounded to 2^k x 3
    assert.are.equal(96, defaults.training(dense, 24).global_batch_size)
    -- and the header says so, not a batch below the floor it prints
    local lines = defaults.header(dense, defaults.training(dense, 24), 24)
    assert.are.equal("defaults: global batch 96 x 8192 = 786,432 tokens; recipe tokens-per-GPU rule: "
      .. "clamp(24 GPUs x 16,384, 1,048,576, 16,777,216) = 1,048,576, rounded down to 96 sequences (2^k x 3, "
      .. "the odd part of 24 GPUs, so that the data-parallel degrees dividing the cluster divide the batch)", lines[2])
    -- a cluster whose odd part holds more sequences than the rule's tokens:
    -- the batch is raised to it, and said so (it said "rounded down"; a
    -- breaker's finding): 1,572,867 GPUs, an odd count, take one sequence
    -- each, far past the rule's 16,777,216 / 8,192 = 2,048
    local n = 1572867
    local tr = defaults.training(dense, n)
    assert.are.equal(n, tr.global_batch_size)
    assert.truthy(defaults.header(dense, tr, n)[2]:find("= 16,777,216, raised to 1572867 sequences", 1, true))
    -- 64 GPUs: the rule's batch itself, no rounding said
    assert.are.equal("defaults: global batch 128 x 8192 = 1,048,576 tokens; recipe tokens-per-GPU rule: "
      .. "clamp(64 GPUs x 16,384, 1,048,576, 16,777,216)", defaults.header(dense, defaults.training(dense, 64), 64)[2])
  end)
end)

describe("a policy without search_space", function()
  it("searches the framework's full space: Qwen2.5-72B on 128 H100 was 0 feasible of 24", function()
    local dir = H.tmpdir()
    local p = H.write(dir .. "/q.lua", 'return { model = "qwen2.5-72b", cluster = "h100-sxm-80gb:16", '
      .. 'training = { global_batch_size = 256, seq_length = 8192, framework = "megatron" } }\n')
    local code, out, err = H.apsearch("run", p, "--format", "json", "--top-k", "1")
    assert.are.equal(0, code, err)
    local r = json.decode(out)
    assert.is_true(r.all_candidate_summary.feasible > 0)
    local pol = policy.load(p)
    local dims = pol.search_space.dims
    assert.are.same({ 1, 0 }, dims.zero_stage)
    assert.are.same({ 1, 2, 4, 8, 16 }, dims.pp_degree)
    assert.are.same({ 1, 2, 4 }, dims.vpp_degree)
    assert.are.same({ 1, 2 }, dims.cp_degree)
    assert.are.equal(128, dims.fsdp_degree[#dims.fsdp_degree])
  end)
  it("follows the policy's framework: TorchTitan shards with FSDP only, llm-foundry data only", function()
    local m = { num_layers = 32 }
    local cl = { num_devices = 16, devices_per_node = 8 }
    assert.are.same({ 0 }, defaults.search_space(m, cl, { framework = "fsdp2", seq_length = 8192 }).zero_stage)
    local s = defaults.search_space(m, cl, { framework = "fsdp", seq_length = 8192 })
    assert.are.same({ { 1 }, { 1 }, { 1 } }, { s.tp_degree, s.pp_degree, s.cp_degree })
    -- an MoE model under Megatron: no --use-torch-fsdp2 (refused with EP), expert TP searched
    local e = defaults.search_space({ num_layers = 61, num_experts = 256 }, cl, { framework = "megatron", seq_length = 4096 })
    assert.is_nil(e.fsdp_degree)
    assert.are.same({ 1, 2, 4, 8 }, e.etp_degree)
    assert.are.same({ "fill_last" }, e.pipeline_split)
    -- an even count some pipeline degree divides neither alone nor with
    -- the embedding and loss (GLM-4.5's 92 over 8: 92 and 94): fill_last
    -- beside Megatron's embedding_loss, so pp 8 and 16 stay searched;
    -- none where every degree divides one (Llama-3.1-405B's 126: 128 over
    -- 2 to 16; 70B's 80), nor under TorchTitan, whose rule is its own
    e = defaults.search_space({ num_layers = 92, num_experts = 160 }, cl, { framework = "megatron", seq_length = 4096 })
    assert.are.same({ "embedding_loss", "fill_last" }, e.pipeline_split)
    for _, L in ipairs({ 126, 80 }) do
      assert.is_nil(defaults.search_space({ num_layers = L }, { num_devices = 1024, devices_per_node = 8 },
        { framework = "megatron", seq_length = 8192 }).pipeline_split)
    end
    assert.is_nil(defaults.search_space({ num_layers = 92 }, cl, { framework = "fsdp2", seq_length = 4096 })
      .pipeline_split)
  end)
  it("GLM-4.5 (92 layers) on 512 H100 ranks a 16-stage pipeline first, fill_last's 15 x 6 + 2", function()
    -- with Megatron's rule alone pp 8 and 16 were refused (94 / 8) and
    -- rank 1 was pp 4 at 43.6 s: a strategy 1.5x slower than one the
    -- search could express
    local code, r, err = run("glm-4.5", "h100-sxm-80gb:64", "-q", "--top-k", "1")
    assert.are.equal(0, code, err)
    local top = r.top_k_strategies[1]
    assert.are.same({ 16, "fill_last" }, { top.pp_degree, top.pipeline_split })
    assert.are.same({ 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 2 }, top.stage_partition)
  end)
  it("shards over the whole data-parallel group on a device count that is not a power of two", function()
    local m = { num_layers = 126 }
    local s = defaults.search_space(m, { num_devices = 72, devices_per_node = 4 }, { framework = "megatron" })
    assert.are.same({ 1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 64, 72 }, s.fsdp_degree)
    s = defaults.search_space(m, { num_devices = 24, devices_per_node = 8 }, { framework = "fsdp2" })
    assert.are.same({ 1, 2, 3, 4, 6, 8, 12, 16, 24 }, s.fsdp_degree)
    -- pipeline degrees: the powers of two and 72's other divisors up to
    -- 16, at least 3 layers a rank (DeepSeek-V3's 61 layers: up to 16)
    assert.are.same({ 1, 2, 3, 4, 6, 8, 9, 12, 16 }, defaults.pp_degrees({ num_layers = 61 }, 72))
    assert.are.same({ 1, 2, 3, 4, 6 }, defaults.pp_degrees({ num_layers = 20 }, 72))
    assert.are.same({ 1, 2, 4, 8, 16 }, defaults.pp_degrees({ num_layers = 126 }, 128))
    -- a cluster of 3 x 2^29 devices: its divisors by pairs (a walk to n
    -- took minutes): the 2 x 30 divisors 2^i and 3 x 2^i, and 2^30
    s = defaults.search_space(m, { num_devices = 3 * 2 ^ 29, devices_per_node = 8 }, { framework = "fsdp2" })
    assert.are.equal(3, s.fsdp_degree[3])
    assert.are.equal(3 * 2 ^ 29, s.fsdp_degree[#s.fsdp_degree])
    assert.are.equal(2 * 30 + 1, #s.fsdp_degree)
    -- Llama-3.1-405B on one GB200 NVL72 rack was "no feasible strategy, fits from 256 devices"
    local code, r = run("llama-3.1-405b", "gb200:18")
    assert.are.equal(0, code)
    -- without PP: 8 without CP and 7 with cp 2 over the ring, the 7 again
    -- with the all-gather and the all-to-all (8 / tp query groups divide by
    -- 2); with the PP degrees that divide 72 and no power of two does: PP
    -- 3 at TP 8 (5), PP 6 at TP 4 (1), PP 9 at TP 8 (5) and at TP 4 (4, and
    -- 4 with cp 2 in each of the three exchanges)
    assert.are.equal(8 + 3 * 7 + 5 + 1 + 5 + 4 + 3 * 4, r.all_candidate_summary.feasible)
    assert.is_nil(r.fit_probe)
  end)
end)

describe("the built space holds the recipes' layouts", function()
  it("DeepSeek-V3 on 1,024 H100: NVIDIA's TP 2 PP 8 VP 4 EP 64 with Et|(tt|)*30L (was refused, PP_PARTITION)", function()
    -- Megatron-Bridge r0.1.0 scripts/performance/run_script.py runs
    -- DeepSeek-V3 on 1,024 H100 at PP 8 x VP 4 with the layout
    -- Et|(tt|)*30mL (Megatron-LM's GB200 guide: Et|(tt|)*30L): 61 layers
    -- over 32 chunks, the first 1, then 30 of 2, the last the loss alone;
    -- fill_last's ceil(61 / 32) = 2 a chunk left the last -1 and refused it
    local code, r, err = run("deepseek-v3", "h100-sxm-80gb:128", "-q", "--fix", "tp_degree=2", "--fix", "pp_degree=8",
      "--fix", "vpp_degree=4", "--fix", "ep_degree=64")
    assert.are.equal(0, code, err)
    assert.is_nil(r.infeasible_summary.PP_PARTITION)
    assert.is_true(r.all_candidate_summary.feasible > 0)
    local want = { 1 }
    for j = 2, 31 do want[j] = 2 end
    want[32] = 0
    assert.are.same(want, r.top_k_strategies[1].stage_partition)
  end)
  it("searches the recipes' micro-batch sizes: dense 1 and 2, an MoE model also 4 and 8", function()
    -- Megatron-Bridge 067f987d perf_recipes: Llama 3 at 1 or 2;
    -- qwen3_30b_a3b_pretrain_8gpu_{b200,gb200}_bf16_config micro_batch_size
    -- 4, {b300,gb300} 8 (it was {1, 2} for every model)
    local cl = { num_devices = 8, devices_per_node = 8 }
    local tr = { framework = "megatron", seq_length = 4096 }
    assert.are.same({ 1, 2 }, defaults.search_space({ num_layers = 32 }, cl, tr).micro_batch_size)
    assert.are.same({ 1, 2, 4, 8 },
      defaults.search_space({ num_layers = 48, num_experts = 128 }, cl, tr).micro_batch_size)
    -- the recipe's layout on 8 B200 (TP 1, PP 1, EP 8, MBS 4, GBS 512:
    -- 512 / (8 x 4) = 16 micro-batches) is a candidate of the built space
    local code, r, err = run("qwen3-30b-a3b", "b200:1", "-q", "--fix", "tp_degree=1", "--fix", "pp_degree=1",
      "--fix", "ep_degree=8", "--fix", "micro_batch_size=4")
    assert.are.equal(0, code, err)
    assert.are.equal(512, r.inputs.training.global_batch_size)
    assert.is_true(r.all_candidate_summary.feasible > 0)
    assert.are.equal(16, r.top_k_strategies[1].micro_batch_num)
  end)
end)

describe("apsearch init MODEL CLUSTER", function()
  it("writes a policy run accepts, searching what run --model --cluster searches #bulk", function()
    local code, text, err = H.apsearch("init", "deepseek-v3", "h100-sxm-80gb:128")
    assert.are.equal(0, code, err)
    assert.truthy(text:find("-- defaults: global batch 8192 x 4096", 1, true), text)
    -- an MoE model's header names the overlap NVIDIA's recipes set and the
    -- default leaves off (a new user priced a recipe layout 38 % slow)
    assert.truthy(text:find("-- defaults: MoE as Megatron-LM runs it unless told: the expert all-to-all not " ..
      "overlapped", 1, true), text)
    local _, _, on = H.apsearch("run", "--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:128", "--top-k", "1",
      "--set", "training.overlap_moe_expert_parallel_comm=true")
    assert.truthy(on:find("\ndefaults: global batch", 1, true), on)
    assert.is_nil(on:find("MoE as Megatron-LM runs it", 1, true), on)
    local dir = H.tmpdir()
    local p = H.write(dir .. "/policy.lua", text)
    local c1, out1, e1 = H.apsearch("run", p, "--format", "json", "--top-k", "1")
    assert.are.equal(0, c1, e1)
    local _, r2 = run("deepseek-v3", "h100-sxm-80gb:128")
    local r1 = json.decode(out1)
    assert.are.equal(r2.all_candidate_summary.space_size, r1.all_candidate_summary.space_size)
    assert.are.equal(r2.top_k_strategies[1].performance_cost.step_time,
      r1.top_k_strategies[1].performance_cost.step_time)
    -- the device as given: the stack's attention kernel is the run's to
    -- apply, so a policy moved to another framework does not keep it
    assert.truthy(text:find('\n    device = "h100-sxm-80gb",\n', 1, true), text)
    assert.is_nil(text:find("attention_efficiency", 1, true), text)
    local _, small = H.apsearch("init", "llama-3.1-8b", "h100-sxm-80gb:1")
    local titan = H.write(dir .. "/titan.lua", (small:gsub('framework = "megatron"', 'framework = "fsdp2"')))
    local c3, out3, e3 = H.apsearch("run", titan, "--format", "json", "--top-k", "1")
    assert.are.equal(0, c3, e3)
    -- (JSON keeps 14 significant digits)
    assert.near(require("apsearch.stacks").H100_FA2_ATTENTION,
      json.decode(out3).inputs.cluster.device.attention_efficiency, 1e-12)
  end)
end)

describe("when nothing fits", function()
  it("says what to relax with numbers: the closest strategies and the devices the model needs", function()
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1")
    assert.are.equal(1, code)
    -- Megatron-LM's 18 B a parameter (bf16 weights, fp32 main gradients,
    -- fp32 Adam: its dist_optimizer.md): 405,853,388,800 x 18 B = 6804
    -- GiB over 78.65 GiB a device = 86.5, whole hosts of 8: 88 devices;
    -- on 8 only more devices help, so that comes first and no knob of the
    -- space is offered
    assert.truthy(out:gsub("\n +", " "):find("no feasible strategy\n\nwhat to relax: 1. With training.framework = "
      .. "megatron the model needs at least 88 devices: 405,853,388,800 parameters x 18 bytes of model states", 1, true),
      out)
    assert.truthy(out:find("\n  2. The closest strategy needs ", 1, true), out)
    assert.truthy(out:find("no strategy on 8 devices can hold the model states; use more devices.", 1, true), out)
    assert.is_nil(out:find("\n  3. ", 1, true), out)
    assert.is_nil(out:find("wider tp_degree", 1, true), out)
    assert.truthy(out:find("closest strategies (least estimated memory):\n  dp=", 1, true), out)
    assert.truthy(out:find("GiB over the 78.65 GiB limit", 1, true), out)
    -- doubling from 16 hosts (the first power of two over the 11 the
    -- states need) fits, then bisecting 11..16: 14 hosts fit at PP 14 (126
    -- layers, 9 a stage), 13 do not, at the run's global batch of 128
    -- sequences, which every probe keeps
    assert.truthy(out:find("fits on 112 devices (h100-sxm-80gb:14x8, not on 104; the same defaults and global batch, "
      .. "--set\n  training.global_batch_size=128, host counts doubled, then bisected): ", 1, true), out)
    -- and the clusters named, with that --set, are what a run on them finds
    local _, r = run("llama-3.1-405b", "h100-sxm-80gb:1")
    local c16, r16, e16 = run("llama-3.1-405b", r.fit_probe.cluster, "--set", "training.global_batch_size=128")
    assert.are.equal(0, c16, e16)
    assert.are.equal(r16.top_k_strategies[1].performance_cost.step_time, r.fit_probe.step_time)
    local c13, r13 = run("llama-3.1-405b", "h100-sxm-80gb:13x8", "--set", "training.global_batch_size=128")
    assert.are.equal(1, c13)
    assert.are.equal(0, #r13.top_k_strategies)
  end)
  it("names a --fix that leaves no valid value before memory or devices", function()
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:1",
      "--fix", "tp_degree=3")
    assert.are.equal(1, code)
    -- Llama 3.1 70B has 64 heads: TP 3 divides none of them, so no
    -- candidate reaches the estimate and no cluster size helps (the
    -- suggestion is folded at 120 columns: joined back here)
    out = out:gsub("\n    ", " ")
    assert.truthy(out:find("what to relax:\n  1. No candidate reached the estimate: all 348 were refused by the "
      .. "checks before it (TP_DIVISIBILITY 348: num_attention_heads = 64 is not divisible by tp_degree = 3); the "
      .. "space was narrowed by --fix tp_degree=3: drop it or fix a value the checks accept.", 1, true), out)
  end)
  it("does not offer a memory limit that --launchable would refuse anyway", function()
    -- Gemma 3's GeGLU-tanh MLP is not expressible in Megatron: every
    -- strategy's launch file differs, so a limit that admits the closest
    -- one (10.59 GiB max reserved on the 79.65 GiB device: TP 8 over its 4
    -- KV heads, which Megatron-Core replicates) would only move it to
    -- LAUNCH_DIFFERS; without --launchable the limit is the advice
    local args = { "run", "-q", "--model", "gemma-3-4b-pt", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "cluster.memory_limit_gib=5" }
    -- (lines folded at 120 columns joined back)
    local function joined(text) return (text:gsub("\n +", " ")) end
    local _, plain = H.apsearch(table.unpack(args))
    plain = joined(plain)
    -- (Gemma3TextConfig's attention_dropout 0.0: no dropout masks)
    -- (the output layer's inputs held for the loss chunk's one micro-batch
    -- in flight, not the rank's: 13.07 GiB before)
    assert.truthy(plain:find("1. The closest strategy needs 10.59 GiB, 5.59 GiB over the 5.00 GiB limit and within " ..
      "the device's 79.65 GiB: --set cluster.memory_limit_gib=10.59 would admit it", 1, true), plain)
    args[#args + 1] = "--launchable"
    args[#args + 1] = "megatron"
    local _, raw = H.apsearch(table.unpack(args))
    local out = joined(raw)
    assert.truthy(out:find("1. The closest strategy needs 10.59 GiB, 5.59 GiB over the 5.00 GiB limit, but raising " ..
      "the limit would not admit it: --launchable megatron refuses it too (NOT WRITTEN: the GeGLU MLP's GELU).", 1,
      true), out)
    assert.is_nil(out:find("memory_limit_gib=10.5", 1, true), out)
    -- at 20 GiB some strategies fit and their launch files differ as the
    -- closest one's does (the model's MLP, not the strategy): no degree,
    -- split or limit is offered, only the launch restriction and why more
    -- memory does not help
    local _, raw20 = H.apsearch("run", "-q", "--model", "gemma-3-4b-pt", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "cluster.memory_limit_gib=20", "--launchable", "megatron")
    assert.truthy(raw20:find("what to relax:\n  1. launch: ", 1, true), raw20)
    assert.truthy(raw20:find("\n  2. The closest strategy needs ", 1, true), raw20)
    assert.is_nil(raw20:find("\n  3. ", 1, true), raw20)
    -- the limit it offers without --launchable is one the policy takes,
    -- and admits the closest strategy
    local code = H.apsearch("run", "-q", "--model", "gemma-3-4b-pt", "--cluster", "h100-sxm-80gb:1x8", "--set",
      "cluster.memory_limit_gib=10.59", "-k", "1")
    assert.are.equal(0, code)
  end)
  it("says a miss of a few MiB in MiB, not as 0.00 GiB", function()
    local common = require "apsearch.format.common"
    assert.are.equal("+3.1 MiB", common.over_text(3.1 * 2 ^ 20))
    assert.are.equal("-4.0 MiB", common.over_text(-4 * 2 ^ 20))
    assert.are.equal("+0.17 GiB", common.over_text(0.17 * 2 ^ 30))
    assert.are.equal("+0.00 GiB", common.over_text(0))
  end)
  it("offers no knob of the framework's full space a built policy already searched; a --fix brings them back #bulk",
    function()
    -- DeepSeek-V3 on 64 B200s: nothing fits; vpp_degree = 1, every pp /
    -- tp degree and full recompute were searched, so "allow vpp_degree =
    -- 1" misleads.  Its model states with the MTP depth the built policy
    -- trains need 72 devices under Megatron (682,636,487,424 x 18 B =
    -- 11444 GiB / 178.06 GiB = 64.3, in whole hosts), which the second
    -- line says; TorchTitan, without MTP and with bf16 gradients, fits
    local code, out = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "b200:8")
    assert.are.equal(1, code)
    assert.truthy(out:find("what to relax:\n  1. The closest strategy needs ", 1, true), out)
    assert.truthy(out:find("raising the limit cannot help; the default search space was searched (a --set of " ..
      "search_space.*", 1, true), out)
    assert.truthy(out:gsub("\n +", " "):find("use more devices; training.framework = fsdp2 fits on these devices " ..
      "(below).", 1, true), out)
    -- Megatron's bound, said as Megatron's: TorchTitan's 16 bytes fit on 64
    assert.truthy(out:gsub("\n +", " "):find(" 2. With training.framework = megatron the model needs at least 72 "
      .. "devices: 682,636,487,424 parameters x 18 bytes", 1, true), out)
    assert.truthy(out:find("fits on 80 devices (b200:10x8, not on 72; ", 1, true), out)
    -- a --set of a training field leaves the space whole: still no knob
    -- of it offered (a new user's Megatron-FSDP run was told to "allow
    -- vpp_degree = 1", already searched)
    local _, set = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "b200:8", "--set",
      "training.framework=megatron", "--set", "training.fsdp_impl=megatron_fsdp")
    assert.truthy(set:find("what to relax:\n  1. The closest strategy needs ", 1, true), set)
    local relax = set:match("what to relax:\n(.-)\n\n") or ""
    assert.is_nil(relax:find("interleaving", 1, true), set)
    assert.is_nil(relax:find("vpp_degree", 1, true), set)
    -- (the second line's lower bound names devices; no other knob does)
    assert.is_nil(relax:gsub("needs at least %d+ devices:", ""):find("devices:", 1, true), set)
    -- but a framework refusal a training --set causes is offered: what
    -- blocks 2,002 candidates is the user's setting, not the space
    local _, off = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--set",
      "training.activation_offload_layers=4")
    local relax2 = (off:match("what to relax:\n(.-)\n\n") or ""):gsub("\n +", " ")
    assert.truthy(relax2:find("2. framework: training.framework cannot run these strategies", 1, true), off)
    assert.truthy(relax2:find("activation_offload_layers = 4", 1, true), off)
    local _, fixed = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "b200:8", "--fix", "vpp_degree=4")
    assert.truthy(fixed:find("\n  3. interleaving: vpp_degree > 1 needs pp_degree > 1 and micro_batch_num divisible by pp_degree",
      1, true), fixed)
    assert.truthy(fixed:find("shard or recompute more (wider tp_degree", 1, true), fixed)
  end)
  it("says which framework rule refused and what lifts it", function()
    -- flex + a capacity factor on DeepEP: Megatron refuses the padding;
    -- the suggestion quotes the rule, which names the backend to set
    local code, out = H.apsearch("run", "-q", "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm-80gb:2",
      "--fix", "moe_token_dispatcher=flex", "--fix", "moe_capacity_factor=1.0")
    assert.are.equal(1, code)
    local relax = out:match("what to relax:\n(.-)\n\n") or ""
    assert.truthy(relax:find("1. framework:", 1, true), out)
    assert.truthy(relax:find("training.moe_flex_dispatcher_backend", 1, true), out)
  end)
  it("names the doubled cluster tried before the one that fits #bulk", function()
    -- Llama-3.1-70B on 8 H100s: its model states need 15 devices (70.6e9
    -- x 18 B over 78.65 GiB), 2 hosts; the probe starts there, where
    -- nothing fits, then 4 hosts fit, and the bisection between tries 3,
    -- whose 24 devices fit at TP 8 x PP 3 (80 layers: 27 + 27 + 26)
    local code, out = H.apsearch("run", "-q", "--wide", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:1")
    assert.are.equal(1, code)
    assert.truthy(out:find("\nfits on 24 devices (h100-sxm-80gb:3x8, not on 16; the same defaults and global batch, "
      .. "--set training.global_batch_size=128, host counts doubled, then bisected): dp=1 fsdp=1 tp=8 sp=on pp=3 ", 1,
      true), out)
    local _, r = run("llama-3.1-70b", "h100-sxm-80gb:1")
    assert.are.equal(24, r.fit_probe.devices)
    assert.are.equal(16, r.fit_probe.not_on)
    -- DeepSeek-V3 with the MTP depth the built policy trains: its states
    -- need 152 devices (682.6e9 x 18 B), 19 hosts; the probe starts at 32
    -- hosts and bisects 19..32: 25 hosts do not fit, 28 and 26 do (PP 13),
    -- so it names 26 -- though 24 fit too (PP 6; it named 24 while the
    -- bound left the MTP depth out and the bisection started at 16): a
    -- fit is not monotone in the host count, the bisection's is not
    -- always the fewest (cli.lua narrow_hosts)
    _, r = run("deepseek-v3", "h100-sxm-80gb:1")
    assert.are.equal(208, r.fit_probe.devices)
    assert.are.equal(200, r.fit_probe.not_on)
  end)
  it("doubles from the power of two above the hosts given, not from twice them", function()
    -- Llama-3.1-405B on 96 H100s (12 hosts): its model states need 80
    -- devices, 10 hosts; the first power of two above 12 is 16 hosts, 128
    -- devices (it said 256: the doubling started at 2 x 12 = 24 -> 32);
    -- bisecting from the run's own 12 hosts: 14 fit at PP 14, 13 do not
    -- fit the run's batch of 192
    local code, out = H.apsearch("run", "-q", "--wide", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:12")
    assert.are.equal(1, code)
    assert.truthy(out:find("\nfits on 112 devices (h100-sxm-80gb:14x8, not on 104; the same defaults and global batch, "
      .. "--set training.global_batch_size=192, host counts doubled, then bisected): ", 1, true), out)
  end)

  it("doubles the hosts past a --set cluster.num_devices (it searched the run's 16 GPUs at every size)", function()
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--set",
      "cluster.num_devices=16", "--wide")
    assert.are.equal(1, code)
    assert.truthy(out:find("\nfits on 112 devices (h100-sxm-80gb:14x8, not on 104; the same defaults", 1, true), out)
    -- and past a --set cluster.nodes
    local _, nodes = H.apsearch("run", "-q", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--set",
      "cluster.nodes=2", "--wide")
    assert.truthy(nodes:find("\nfits on 112 devices (h100-sxm-80gb:14x8, not on 104; the same defaults", 1, true), nodes)
  end)

  it("on a host count that is not a power of two, tries the power of two below it first #bulk", function()
    -- DeepSeek-V3 on 1,000 H100s (125 hosts): 1000 = 8 x 125 divides into
    -- no TP x PP over 8, and nothing that fits; 64 hosts (512 devices, over
    -- the 128 its model states need) fit, where it said "fits from 2,048"
    local code, out = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:125", "--wide")
    assert.are.equal(1, code)
    assert.truthy(out:find("\nfits on 512 of the 1,000 devices (h100-sxm-80gb:64x8; the same defaults and global batch, "
      .. "--set training.global_batch_size=8000): ", 1, true), out)
    assert.truthy(out:find("the degrees that would fit do not divide these devices, a part of them does (below); "
      .. "training.framework = fsdp2 fits on these devices (below).", 1, true), out)
    assert.is_nil(out:find("fits on [%d,]+ devices"), out)
    local _, r = run("deepseek-v3", "h100-sxm-80gb:125")
    assert.are.equal(512, r.fit_probe.smaller.devices)
    assert.are.equal("h100-sxm-80gb:64x8", r.fit_probe.smaller.cluster)
  end)

  it("says when a setting the framework defaults fits on the same devices, and not when the run set it", function()
    -- Muse-Glimmer-30B on 16 H100s, NeMo AutoModel: the deferred FSDP
    -- gradient sync holds every fp32 gradient unsharded (closest 92.53
    -- GiB); sharded after each micro-batch it fits (a new user's pass,
    -- 2026-12-06: "use more devices" alone, though the second suggestion
    -- would have done)
    local cfg = "tests/fixtures/heldout_configs/meta-models--Muse-Glimmer-30B.json"
    local code, out = H.apsearch("run", "-q", "--model", cfg, "--cluster", "h100-sxm-80gb:2", "--wide")
    assert.are.equal(1, code)
    assert.truthy(out:find("use more devices; --set training.defer_fsdp_grad_sync=false fits on these devices " ..
      "(below).", 1, true), out)
    -- a model AutoModel alone builds: no TorchTitan alternative
    assert.is_nil(out:find("training.framework = fsdp2", 1, true), out)
    local fit, step = out:match("\nfits with %-%-set training%.defer_fsdp_grad_sync=false on these devices %(the " ..
      "FSDP gradients sharded after each micro%-batch; this run's command with it added%): ([^\n]-), step ([%d.]+) s")
    assert.truthy(fit, out)
    -- that strategy is what the run with the setting ranks first
    local code2, set = H.apsearch("run", "-q", "--model", cfg, "--cluster", "h100-sxm-80gb:2", "--wide", "--set",
      "training.defer_fsdp_grad_sync=false", "--top-k", "1", "--format", "json")
    assert.are.equal(0, code2, set)
    local top = require("cjson").decode(set).top_k_strategies[1]
    assert.are.equal(step, ("%.3f"):format(top.performance_cost.step_time))
    assert.truthy(fit:find("fsdp=" .. math.tointeger(top.fsdp_degree) .. " tp=" .. math.tointeger(top.tp_degree), 1, true))
    -- set by the run: not tried again
    local _, chosen = H.apsearch("run", "-q", "--model", cfg, "--cluster", "h100-sxm-80gb:1", "--wide", "--set",
      "training.defer_fsdp_grad_sync=true")
    assert.is_nil(chosen:find("fits with --set", 1, true), chosen)
  end)

  it("offers AutoModel's per-micro-batch gradient sync only where the closest strategy shards gradients", function()
    -- Llama 3.1 405B on 96 H100, AutoModel, local batch 16: the closest strategies (TP 8 x PP 12, no FSDP,
    -- ZeRO 0) hold no deferred FSDP gradient, so the setting cannot help (a new user's round, 2026-12-07)
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:12",
      "--set", "training.framework=automodel", "--set", "training.local_batch_size=16")
    assert.are.equal(1, code)
    assert.truthy(out:find("closest strategies (least estimated memory):\n  dp=1 fsdp=1 tp=8", 1, true), out)
    assert.is_nil(out:find("defer_fsdp_grad_sync", 1, true), out)
  end)

  it("says when one distributed optimizer instance fits where the run's partial ones do not", function()
    -- Llama 3.1 70B on 32 H100s, Megatron with --num-distributed-optimizer-instances 2: the
    -- optimizer states sharded over half the data-parallel ranks (closest 82.43 GiB); one instance fits
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:4", "--wide",
      "--set", "training.distributed_optimizer_instances=2")
    assert.are.equal(1, code)
    assert.truthy(out:find("--set training.distributed_optimizer_instances=1 fits on these devices (below).", 1,
      true), out)
    local step = out:match("\nfits with %-%-set training%.distributed_optimizer_instances=1 on these devices %(one " ..
      "distributed optimizer instance: its states sharded over every data%-parallel rank; this run's command with it " ..
      "added%): [^\n]-, step ([%d.]+) s")
    assert.truthy(step, out)
    local code2, set = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:4", "--set",
      "training.distributed_optimizer_instances=1", "--top-k", "1", "--format", "json")
    assert.are.equal(0, code2, set)
    local top = require("cjson").decode(set).top_k_strategies[1]
    assert.are.equal(step, ("%.3f"):format(top.performance_cost.step_time))
  end)

  it("says when the other framework fits on the same devices, and not when the run chose the framework", function()
    -- Llama 3.1 70B on 16 H100s: Megatron's closest needs 81.98 GiB (bf16
    -- weights beside fp32 main weights and gradients on a 16-way model
    -- split), FSDP2's TP 4 x PP 4 fits; "use more devices" alone misled
    local code, out = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--wide")
    assert.are.equal(1, code)
    assert.truthy(out:find("use more devices; training.framework = fsdp2 fits on these devices (below).", 1, true), out)
    assert.truthy(out:find("\nfits with training.framework = fsdp2 on these devices (this run's command with "
      .. "--set training.framework=fsdp2 added): dp=1 fsdp=1 tp=4 sp=on pp=4 ", 1, true), out)
    local _, r = run("llama-3.1-70b", "h100-sxm-80gb:2")
    assert.are.equal("fsdp2", r.fit_probe.framework.framework)
    assert.are.equal(16, r.fit_probe.framework.devices)
    -- the same search with the framework chosen: no other framework tried
    local _, chosen = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--set",
      "training.framework=megatron")
    assert.is_nil(chosen:find("training.framework = fsdp2", 1, true), chosen)
    -- chosen with spaces or doubled dots, as the policy reads the key
    local _, spaced = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--set",
      " training.framework =megatron")
    assert.is_nil(spaced:find("training.framework = fsdp2", 1, true), spaced)
    -- NeMo AutoModel, which only a --set reaches: TorchTitan's FSDP2 is tried all the same (Llama 3.1 405B on 96
    -- H100s, local batch 16: AutoModel's deferred gradient sync and fp32 loss fit nothing, TorchTitan's TP 8 x PP 12)
    local am = { "run", "-q", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:12", "--set",
      "training.framework=automodel", "--set", "training.local_batch_size=16" }
    local function with(extra)
      local a = { table.unpack(am) }
      for _, x in ipairs(extra) do a[#a + 1] = x end
      return table.unpack(a)
    end
    local code3, amj = H.apsearch(with({ "--format", "json" }))
    assert.are.equal(1, code3, amj)
    local fw = require("cjson").decode(amj).fit_probe.framework
    assert.are.equal("fsdp2", fw.framework)
    assert.are.equal(96, fw.devices)
    local code4, tt = H.apsearch(with({ "--set", "training.framework=fsdp2", "--top-k", "1", "--format", "json" }))
    assert.are.equal(0, code4, tt)
    assert.are.equal(fw.step_time, require("cjson").decode(tt).top_k_strategies[1].performance_cost.step_time)
    -- a setting FSDP2 refuses (dropout is Megatron-LM's here) is no fit of
    -- it, not an error of the run (it exited 2 naming fsdp2)
    local code2, out2 = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--set",
      "training.dropout=true")
    assert.are.equal(1, code2, out2)
    assert.truthy(out2:find("no feasible strategy", 1, true), out2)
    -- the run's rules hold in the probe: the strategy named is one the
    -- suggested command ranks (a rule against pp > 2 made it name pp 4)
    local dir = H.tmpdir()
    local rule = H.write(dir .. "/pp2.lua", 'return { name = "pp_le_2", code = "PP_TOO_DEEP", cheap = true, '
      .. 'description = "pp_degree at most 2", check = function(c) if (c.pp_degree or 1) <= 2 then return true end '
      .. 'return false, "PP_TOO_DEEP", "pp_degree > 2" end }')
    local _, ruled = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--rules",
      rule, "--wide")
    local step = ruled:match("fits with training.framework = fsdp2 on these devices %b(): [^\n]-, step ([%d.]+) s")
    assert.truthy(step, ruled)
    assert.truthy(ruled:find("pp=1", 1, true), ruled)
    local _, top = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:2", "--rules",
      rule, "--set", "training.framework=fsdp2", "--top-k", "1")
    assert.truthy(top:find("  " .. step .. "  ", 1, true), step .. "\n" .. top)
  end)

  it("probes no more devices when no strategy was refused for its memory or device count (a new user's "
    .. "--fix tp_degree=16 was probed up to 4,096 devices)", function()
    -- 8B on 800,000 H100: the batch and divisibility rules refuse every
    -- strategy (it probed up to the core's 2^24 devices before); 70B with
    -- TP 16 under TorchTitan, which shards whole KV heads (its 8 do not
    -- divide by 16)
    local code, out, err = H.apsearch("run", "-q", "--model", "llama-3.1-8b", "--cluster", "h100-sxm-80gb:100000")
    assert.are.equal(1, code, err)
    assert.are.equal("", err)
    assert.truthy(out:find("no feasible strategy", 1, true), out)
    assert.is_nil(out:find("no fit up to", 1, true), out)
    assert.is_nil(out:find("fits on", 1, true), out)
    local _, out2 = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8", "--fix",
      "tp_degree=16", "--set", "training.framework=fsdp2")
    assert.truthy(out2:find("TP_DIVISIBILITY", 1, true), out2)
    assert.is_nil(out2:find("no fit up to", 1, true), out2)
  end)

  it("fills a host of part of its board before adding hosts: 8B on one H100 fits on h100:1x2, not 3 hosts of 1",
    function()
    local _, out, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "h100:1x1")
    -- one GPU: no note about what joins it to others
    assert.is_nil(err:find("NVLink", 1, true), err)
    assert.truthy(out:find("fits on 2 devices (h100-sxm-80gb:1x2, not on 1; the same defaults and global batch, --set\n  "
      .. "training.global_batch_size=128, the host's GPUs doubled): ", 1, true), out)
    -- a model the whole board does not hold: then whole boards, as from
    -- one full host (a breaker's pass: 70B went on with 22 hosts of 1)
    local _, part = H.apsearch("run", "-q", "--wide", "--model", "llama-3.1-70b", "--cluster", "h100:1x1")
    local _, full = H.apsearch("run", "-q", "--wide", "--model", "llama-3.1-70b", "--cluster", "h100:1")
    local fit = full:match("\nfits on [^\n]*")
    assert.truthy(fit and fit:find("(h100-sxm-80gb:3x8, not on 16;", 1, true), full)
    -- the same fit, saying the hosts grew from the run's one GPU to the board's 8 (a new user's round, 2026-12-07)
    assert.are.equal(fit:gsub("host counts doubled", "hosts of 8 GPUs, the whole board (the run's used 1), host " ..
      "counts doubled"), part:match("\nfits on [^\n]*"))
  end)
  it("says the doublings are all it tried: a count of 3 hosts is never probed (a breaker's --fix fsdp_degree=12)",
    function()
    local _, out = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:1", "--fix",
      "fsdp_degree=12", "--wide")
    assert.truthy(out:find("\nno fit up to 512 devices (h100-sxm-80gb:64x8) with the same defaults and global batch, "
      .. "--set training.global_batch_size=128, on the host counts tried (doubled; counts between them were not)", 1,
      true), out)
    -- and 3 hosts fit at their own default batch, which FSDP 12 divides
    -- (not the run's 128, which the probe keeps)
    local code = H.apsearch("run", "-q", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:3", "--fix",
      "fsdp_degree=12")
    assert.are.equal(0, code)
  end)
  it("stops at the first doubling where strategies fit but the --launchable file builds none (it took 10 s)",
    function()
    local code, r = run("deepseek-v3", "h100-sxm-80gb:1", "--launchable", "torchtitan")
    assert.are.equal(1, code)
    assert.is_true(r.fit_probe.launch_differs)
    assert.are.equal(256, r.fit_probe.tried)
    local _, out = H.apsearch("run", "-q", "--model", "deepseek-v3", "--cluster", "h100-sxm-80gb:1", "--launchable",
      "torchtitan", "--wide")
    assert.truthy(out:find("\nno fit on 256 devices (h100-sxm-80gb:32x8) with the same defaults and global batch, "
      .. "--set training.global_batch_size=512: strategies fit there, "
      .. "but the --launchable file builds none of them as estimated (LAUNCH_DIFFERS); more hosts were not tried", 1, true),
      out)
  end)
  it("keeps the run's result when a rule fails on a probed cluster, and says where (it exited 2 with a traceback)",
    function()
    local rule = H.write(H.tmpdir() .. "/r_err.lua", 'return { name = "err_big", code = "ERRBIG", check = '
      .. 'function(c, ctx) if ctx.cluster.num_devices > 64 then error("boom at " .. ctx.cluster.num_devices) end '
      .. 'return true end }')
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--rules", rule)
    assert.are.equal(1, code, err)
    assert.truthy(out:find("no feasible strategy", 1, true), out)
    assert.truthy(err:find("apsearch: note: the fit probe stopped on h100-sxm-80gb:16x8: " .. rule
      .. ":1: boom at 128\n", 1, true), err)
    assert.is_nil(err:find("traceback", 1, true), err)
  end)
  it("estimates the doubled cluster with the --calibration the run was given (it was left out)", function()
    local calib = H.write(H.tmpdir() .. "/c.json", '{"devices": {"h100-sxm-80gb": {"gemm_efficiency": 0.35}}}')
    local code, r, err = run("llama-3.1-70b", "h100-sxm-80gb:1", "-q", "--calibration", calib)
    assert.are.equal(1, code, err)
    local probe = r.fit_probe
    assert.are.equal("h100-sxm-80gb:3x8", probe.cluster)
    local c2, r2, e2 = run("llama-3.1-70b", probe.cluster, "-q", "--calibration", calib, "--set",
      "training.global_batch_size=128")
    assert.are.equal(0, c2, e2)
    assert.are.equal(r2.top_k_strategies[1].performance_cost.step_time, probe.step_time)
    -- and the calibration moved it: without, the same cluster is faster
    local _, r3 = run("llama-3.1-70b", probe.cluster, "-q", "--set", "training.global_batch_size=128")
    assert.is_true(r3.top_k_strategies[1].performance_cost.step_time < probe.step_time)
  end)
  it("puts the same in the JSON result (fit_probe) and the report's suggestions #bulk", function()
    local code, r = run("deepseek-v3", "b200:1")
    assert.are.equal(1, code)
    assert.are.equal(80, r.fit_probe.devices)
    local d = require("apsearch.report.html").diagnose(r)
    assert.is_true(d.min_devices.devices >= 64)
    assert.truthy(table.concat(d.suggestions, "\n"):find("the model needs at least", 1, true))
  end)
end)

describe("did you mean", function()
  it("for a Hugging Face Hub id: not downloaded, the command that fetches it, the preset of that name", function()
    -- a new user's first try (it said only "No such file or directory")
    local code, _, err = H.apsearch("run", "--model", "meta-llama/Llama-3.1-405B", "--cluster", "h100-sxm-80gb:8")
    assert.are.equal(2, code)
    assert.are.equal("apsearch: meta-llama/Llama-3.1-405B: cannot read config: No such file or directory; apsearch "
      .. "reads a config.json on disk, it does not download from the Hugging Face Hub (hf download "
      .. "meta-llama/Llama-3.1-405B config.json --local-dir DIR writes DIR/config.json); or its preset, "
      .. "llama-3.1-405b\n", err)
    local c2, _, e2 = H.apsearch("inspect", "Qwen/Qwen3-235B-A22B")
    assert.are.equal(2, c2)
    local tail = "; or its preset, qwen3-235b-a22b\n"
    assert.are.equal(tail, e2:sub(-#tail), e2)
    -- no near preset offered: a near name is another model (breaker pass:
    -- Mixtral-8x22B was offered mistral-7b-v0.1); a trailing slash is the id
    local c4, _, e4 = H.apsearch("inspect", "mistralai/Mixtral-8x22B-v0.1/")
    assert.are.equal(2, c4)
    assert.is_nil(e4:find("preset", 1, true), e4)
    assert.truthy(e4:find("(hf download mistralai/Mixtral-8x22B-v0.1 config.json --local-dir DIR", 1, true), e4)
    -- a path that is not an id keeps the plain error
    local c3, _, e3 = H.apsearch("inspect", "./nothere/config.json")
    assert.are.equal(2, c3)
    assert.are.equal("apsearch: ./nothere/config.json: cannot read config: No such file or directory\n", e3)
  end)
  it("for a model type (qwen25 -> qwen2)", function()
    local dir = H.tmpdir()
    local cfg = H.write(dir .. "/config.json", json.encode({ model_type = "qwen25", hidden_size = 64,
      num_hidden_layers = 2, num_attention_heads = 4, intermediate_size = 128, vocab_size = 100 }))
    local code, _, err = H.apsearch("inspect", cfg)
    assert.are.equal(2, code)
    assert.truthy(err:find('model_type: unsupported model type; did you mean "qwen2"?', 1, true), err)
  end)
  it("for a device name that leaves parts out (a100-80gb -> a100-sxm4-80gb)", function()
    local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "a100-80gb:1")
    assert.are.equal(2, code)
    assert.truthy(err:find('unknown device preset; did you mean "a100-sxm4-80gb"?', 1, true), err)
    code, _, err = H.apsearch("init", "qwen25-72b", "h100-sxm-80gb:1")
    assert.are.equal(2, code)
    assert.truthy(err:find('did you mean "qwen2.5-72b"?', 1, true), err)
  end)
  it("init writes no policy that run would refuse (a breaker's finding: it wrote them and exited 0)", function()
    local code, text, err = H.apsearch("init", "qwen3-30b-a3b", "b200:1x8",
      "--set", "training.moe_paged_stash_page_size=64")
    assert.are.equal(2, code)
    assert.are.equal("", text)
    assert.are.equal("apsearch: --set: training.moe_paged_stash_page_size: acts with moe_paged_stash only\n", err)
  end)
end)

describe("estimate --model M --cluster D:N without a policy", function()
  it("estimates with the policy run builds (framework, batch), not the 8B example's", function()
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8",
      "--format", "json", "--quiet", "--top-k", "1")
    assert.are.equal(0, code, err)
    local r = json.decode(out)
    local tr = r.inputs.training
    local c2, o2, e2 = H.apsearch("estimate", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8",
      "--format", "json", "--strategy", "tp_degree=8,pp_degree=4,dp_degree=2,micro_batch_size=1")
    assert.is_true(c2 == 0 or c2 == 1, e2)
    local et = json.decode(o2).inputs.training
    assert.are.same({ tr.framework, tr.global_batch_size, tr.seq_length },
      { et.framework, et.global_batch_size, et.seq_length })
  end)
end)

describe("the candidate counts of an MoE search", function()
  it("add up: every reason in one phase, early reasons sum to the filtered, late ones to the infeasible", function()
    local code, out, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "b200:1", "--format", "json",
      "--quiet", "--top-k", "1")
    assert.are.equal(0, code, err)
    local r = json.decode(out)
    local s = r.all_candidate_summary
    local early, late = 0, 0
    for _, e in pairs(r.infeasible_summary) do
      if e.phase == "early" then early = early + e.count else late = late + e.count end
    end
    assert.are.equal("early", r.infeasible_summary.EP_DIVISIBILITY.phase)
    assert.are.same({ s.filtered_early, s.infeasible, s.generated }, { early, late, s.filtered_early + s.estimated })
    assert.are.equal(s.estimated, s.infeasible + s.feasible)
  end)
end)
