-- tests/lua/amd_presets_spec.lua -- the AMD Instinct MI300X and MI325X
-- presets (src/core/presets.c, AMD CDNA 3 white paper Table 2) and the
-- MI355X (CDNA 4: AMD's ROCm blog peaks, secondary HBM and Infinity Fabric
-- figures) as a user meets them: `--cluster mi300x-192gb:8` and
-- `mi355x-288gb:1x8` search, the 8-GPU Infinity Fabric mesh (7 direct
-- links per GPU, intra_node_links = 7) prices a TP pair on one link, a
-- calibration fitted on NVIDIA runs never applies, the MI355X refuses the
-- block-scaled precisions apsearch prices on Blackwell only, and the parts
-- left without a preset say so (the NVIDIA export variants, the H20
-- among them: tests/lua/export_presets_spec.lua).
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local core = require "apsearch.core"
local calibration = require "apsearch.calibration"
local H = require "spec_helpers"

local function llama8b()
  return {
    name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
    num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
    vocab_size = 128256, tie_word_embeddings = false,
  }
end

local function tp_comm(device)
  local ctx = core.context(llama8b(), { device = device, num_devices = 8, devices_per_node = 8 },
    { global_batch_size = 64, seq_length = 8192 })
  return ctx:estimate({ tp_degree = 2, dp_degree = 4 }).performance_breakdown.tp_comm.total
end

describe("AMD CDNA 3 presets", function()
  it("carry the white paper's figures and the mesh's 7 links", function()
    local x = core.device_preset("mi300x-192gb")
    assert.are.equal(192 * 2 ^ 30, x.memory_bytes)
    assert.are.equal(1307.4e12, x.peak_flops_bf16)
    assert.are.equal(2614.9e12, x.peak_flops_fp8)
    assert.are.equal(448e9, x.intra_node_bandwidth) -- 896 GB/s both ways / 2
    assert.are.equal(7, x.intra_node_links)
    assert.are.equal(6000e9, core.device_preset("mi325x-256gb").hbm_bandwidth)
    -- switched (NVSwitch) devices keep their tables as before: no such key
    assert.is_nil(core.device_preset("h100-sxm-80gb").intra_node_links)
  end)

  it("accept a device table without base that leaves intra_node_links out", function()
    local dev = core.device_preset("h100-sxm-80gb")
    dev.name = "my-gpu"
    local ctx = core.context(llama8b(), { device = dev, num_devices = 8, devices_per_node = 8 },
      { global_batch_size = 64, seq_length = 8192 })
    assert.is_true(ctx:estimate({ dp_degree = 8 }).step_time > 0)
  end)

  it("price a TP pair on one of the 7 links: 7 times the bandwidth term of a switched host", function()
    -- latency 0 so that only the bandwidth term is left: 448e9 / 7 = 64e9
    -- B/s per link against 448e9 behind a switch
    local mesh = tp_comm({ base = "mi300x-192gb", intra_node_latency = 0 })
    local switched = tp_comm({ base = "mi300x-192gb", intra_node_latency = 0, intra_node_links = 0 })
    assert.is_true(switched > 0)
    assert.is_true(math.abs(mesh / switched - 7) < 1e-9, tostring(mesh / switched))
  end)

  it("form the calibration family cdna3, which an NVIDIA calibration does not reach", function()
    assert.are.equal("cdna3", calibration.family("mi300x-192gb"))
    assert.are.equal("cdna3", calibration.family("MI325X-256GB"))
    local calib = { devices = { ["h100-sxm-80gb"] = { gemm_efficiency = 0.66 } } }
    assert.is_nil(calibration.fields_for(calib, "mi300x-192gb"))
    local _, applied = calibration.apply({ device = "mi300x-192gb" }, calib)
    assert.is_false(applied)
    calib = { devices = { ["mi300x-192gb"] = { gemm_efficiency = 0.5 } } }
    assert.are.equal(0.5, calibration.fields_for(calib, "mi325x-256gb").gemm_efficiency)
  end)

  it("are the presets of the GPU names HIP reports in a trace", function()
    local trace = require "apsearch.trace"
    assert.are.equal("mi300x-192gb", trace.preset_of({ devices = { "AMD Instinct MI300X" } }))
    assert.are.equal("mi325x-256gb", trace.preset_of({ devices = { "AMD Instinct MI325X" } }))
  end)

  it("leave the MI350X and the H800 / A800 PCIe cards out, and say why rather than suggest another part", function()
    for _, name in ipairs({ "mi350x", "mi350x-288gb", "h800-pcie", "a800-pcie-80gb", "a800-40gb" }) do
      local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", name)
      assert.are.equal(2, code, err)
      assert.truthy(err:find("no device preset for this part (no vendor datasheet", 1, true), err)
      assert.falsy(err:find("did you mean", 1, true), err)
    end
    -- the bare part name is read as its one preset, with a note; a near
    -- miss still gets its suggestion
    for name, preset in pairs({ mi300x = "mi300x-192gb", mi355x = "mi355x-288gb" }) do
      local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", name, "--top-k", "1")
      assert.are.equal(0, code, err)
      assert.truthy(err:find('note: device "' .. name .. '" read as the preset ' .. preset, 1, true), err)
    end
    local _, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "mi300x-19gb")
    assert.truthy(err:find('did you mean "mi300x-192gb"', 1, true), err)
  end)

  it("mi355x-288gb carries AMD's dense peaks, 288 GiB and the 7-link mesh", function()
    local x = core.device_preset("mi355x-288gb")
    assert.are.equal(288 * 2 ^ 30, x.memory_bytes) -- ROCm GPU specifications
    assert.are.equal(2500e12, x.peak_flops_bf16) -- AMD ROCm blog: Matrix FP16 2.5 PF
    assert.are.equal(5000e12, x.peak_flops_fp8) -- Matrix FP8 5 PF
    assert.are.equal(0, x.peak_flops_fp4) -- no NVFP4 (its MXFP4 10 PF is not held)
    assert.are.equal(8000e9, x.hbm_bandwidth) -- secondary
    assert.near(7 * 153.6e9 / 2, x.intra_node_bandwidth, 1) -- secondary: 153.6 GB/s per link both ways
    assert.are.equal(7, x.intra_node_links)
    assert.are.equal(256, x.sm_count)
    local src
    for _, p in ipairs(core.device_presets()) do if p.name == "mi355x-288gb" then src = p.source end end
    assert.truthy(src:find("rocm.blogs.amd.com", 1, true), src)
    assert.truthy(src:find("SECONDARY", 1, true), src)
  end)

  it("mi355x-288gb is the calibration family cdna4, apart from CDNA 3 and NVIDIA", function()
    assert.are.equal("cdna4", calibration.family("mi355x-288gb"))
    local calib = { devices = { ["mi300x-192gb"] = { gemm_efficiency = 0.5 } } }
    assert.is_nil(calibration.fields_for(calib, "mi355x-288gb"))
    calib = { devices = { ["h100-sxm-80gb"] = { gemm_efficiency = 0.66 } } }
    assert.is_nil(calibration.fields_for(calib, "mi355x-288gb"))
  end)

  it("mi355x-288gb is the preset of HIP's name, the MI350X has none", function()
    local trace = require "apsearch.trace"
    assert.are.equal("mi355x-288gb", trace.preset_of({ devices = { "AMD Instinct MI355X" } }))
    assert.is_nil(trace.preset_of({ devices = { "AMD Instinct MI350X" } }))
  end)

  it("refuse mxfp8 and nvfp4 on mi355x-288gb, naming what is missing", function()
    for _, prec in ipairs({ "mxfp8", "nvfp4" }) do
      local code, _, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "mi355x-288gb:1x8",
        "--jobs", "1", "--set", "training.precision=" .. prec)
      assert.are_not.equal(0, code, err)
      assert.truthy(err:find("training.precision: " .. prec .. " on mi355x-288gb, which has no NVFP4 peak", 1, true),
        err)
    end
    -- fp8 (per-tensor) runs at the 5 PF peak
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "mi355x-288gb:1x8",
      "--jobs", "1", "--fix", "tp_degree=1", "--fix", "cp_degree=1", "--set", "training.precision=fp8",
      "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("feasible", 1, true), out)
  end)

  it("find feasible strategies for Llama-3.1-70B on --cluster mi355x-288gb:1x8", function()
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-70b", "--cluster", "mi355x-288gb:1x8",
      "--jobs", "1", "--fix", "tp_degree=1,2", "--fix", "cp_degree=1", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("8 x mi355x-288gb (8 per node)", 1, true), err)
    local n = tonumber(out:match("(%d+) feasible of"))
    assert.is_true(n ~= nil and n > 0, out)
  end)

  it("find a feasible strategy for Llama-3.1-8B on --cluster mi300x-192gb:8 (8 hosts of 8)", function()
    local code, out, err = H.apsearch("run", "--model", "llama-3.1-8b", "--cluster", "mi300x-192gb:8",
      "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("64 x mi300x-192gb (8 per node)", 1, true), err)
    assert.truthy(out:find("feasible", 1, true), out)
  end)
end)
