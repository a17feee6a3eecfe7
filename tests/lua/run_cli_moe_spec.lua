-- tests/lua/run_cli_moe_spec.lua -- what a user planning an MoE job from the
-- command line reads (newuser6, 2026-12-02).  `--cluster
-- DEVICE[:NODES[xGPUS]]` without xGPUS takes the device's host size:
-- `gb200:16` was 16 hosts of 8 GB200, 128 GPUs, while a GB200 / GB300
-- NVL72 compute tray holds 4 (NVIDIA GB200 NVL72 datasheet, 2024: 18
-- trays of 4 = 72 GPUs a rack).  The run log's top-k lines print tokens/s
-- per GPU in whole tokens, as the table does.
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local policy = require "apsearch.policy"
local H = require "spec_helpers"

describe("--cluster DEVICE:NODES", function()
  it("gives a GB200 or GB300 node its 4-GPU compute tray", function()
    assert.are.same({ device = "gb200", num_devices = 64, devices_per_node = 4 },
      policy.parse_cluster_spec("gb200:16"))
    assert.are.same({ device = "gb300", num_devices = 4, devices_per_node = 4 },
      policy.parse_cluster_spec("gb300"))
    -- 18 trays of 4: one NVL72 rack
    assert.are.equal(72, policy.parse_cluster_spec("gb200:18").num_devices)
  end)

  it("keeps 8 a node for the HGX boards, and an explicit xGPUS wins", function()
    assert.are.same({ device = "b200", num_devices = 16, devices_per_node = 8 },
      policy.parse_cluster_spec("b200:2"))
    assert.are.same({ device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 },
      policy.parse_cluster_spec("h100-sxm-80gb"))
    assert.are.same({ device = "gb200", num_devices = 128, devices_per_node = 8 },
      policy.parse_cluster_spec("gb200:16x8"))
  end)

  it("reports the cluster it built in the run log", function()
    local code, _, err = H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "gb200:16",
      "--set", "cluster.nvlink_domain_size=64", "--fix", "tp_degree=1", "--fix", "layer_recompute=none",
      "--fix", "micro_batch_size=1", "--fix", "ep_degree=8", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("64 x gb200 (4 per node, NVLink domain 64)", 1, true), err)
  end)
end)

describe("the run log's top-k lines", function()
  -- one Qwen3-30B-A3B strategy on 16 GB200, with the extra arguments
  local function run(...)
    return H.apsearch("run", "--model", "qwen3-30b-a3b", "--cluster", "gb200:16",
      "--set", "cluster.nvlink_domain_size=64", "--fix", "tp_degree=1", "--fix", "layer_recompute=none",
      "--fix", "micro_batch_size=1", "--fix", "ep_degree=16", "--top-k", "1", ...)
  end
  it("print tokens/s per GPU as the table does, in whole tokens (was 2.358e+04)", function()
    local code, out, err = run("--format", "json")
    assert.are.equal(0, code, err)
    local tps = require("cjson").decode(out).top_k_strategies[1].performance_cost.tokens_per_s_per_gpu
    assert.is_true(tps > 1e4, tostring(tps))
    local line = err:match("top%-1: [^\n]*")
    assert.truthy(line, err)
    assert.truthy(line:find(string.format(", %.0f tokens/s/GPU,", tps), 1, true), line)
    assert.falsy(line:find("e%+0"), line)
  end)

  it("are left out of stderr when the table goes to stdout, terminal or not (the table shows them)", function()
    local code, out, err = run()
    assert.are.equal(0, code, err)
    assert.truthy(out:find("rank", 1, true), out)
    assert.falsy(err:find("top%-1: "), err)
    local cli = require "apsearch.cli"
    local log = { "search space: 4 candidates", "top-1: dp=4: step 1.000 s" }
    assert.are.same({ "search space: 4 candidates" }, cli.log_lines(log, true))
    assert.are.same(log, cli.log_lines(log, false))
  end)
end)
