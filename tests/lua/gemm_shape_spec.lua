-- tests/lua/gemm_shape_spec.lua -- the GEMM shape fields of a device
-- (src/core/gemm.c) as a user meets them: the presets' SM counts and
-- microbenchmark-fitted terms (src/core/presets.c), a device table that
-- overrides them, and a bad value refused with one line naming the file,
-- the field and the value (exit 2).
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local core = require "apsearch.core"
local H = require "spec_helpers"

describe("GEMM shape fields", function()
  it("carry each preset's SM count and the shared microbenchmark fit", function()
    -- white papers and XLA's device specs (presets.c APS_SMS_*)
    local want = { ["a100-sxm4-80gb"] = 108, ["h100-sxm-80gb"] = 132, ["h200-sxm-141gb"] = 132,
      ["h800-sxm-80gb"] = 132, ["a800-sxm4-80gb"] = 108,
      b200 = 148, gb200 = 148, gb300 = 158, ["mi300x-192gb"] = 304, ["mi325x-256gb"] = 304,
      ["mi355x-288gb"] = 256, ["h20-96gb"] = 78 }
    for name, sms in pairs(want) do
      local d = core.device_preset(name)
      assert.are.equal(sms, d.sm_count, name)
      assert.are.equal(64, d.gemm_tile_m, name)
      assert.are.equal(128, d.gemm_tile_n, name)
      assert.are.equal(288, d.gemm_half_dim, name)
      assert.are.equal(4e-6, d.gemm_fixed_seconds, name)
    end
  end)

  local function policy(device_fields)
    local dir = H.tmpdir()
    local path = dir .. "/p.lua"
    H.write(path, ([[
return { name = "x", model = "llama-3.1-8b",
  cluster = { device = { base = "h100-sxm-80gb", %s }, nodes = 1, devices_per_node = 8 },
  training = { global_batch_size = 64, seq_length = 4096 },
  search_space = { tp_degree = { 1 }, pp_degree = { 1 }, cp_degree = { 1 } } }
]]):format(device_fields))
    return path
  end

  it("refuses a bad value with one line naming the file, the field and the value", function()
    local cases = {
      { "gemm_tile_m = -64", "cluster.device.gemm_tile_m: must be a finite number >= 0 (got -64)" },
      { "sm_count = 1.5", "cluster.device.sm_count: must be an integer >= 0 (got 1.5)" },
      { "gemm_tile_m = 0", "cluster.device.gemm_tile_m, gemm_tile_n: both 0 (no tile term) or "
        .. "both > 0 (got 0, 128)" },
      { "gemm_fixed_seconds = 1", "cluster.device.gemm_fixed_seconds: must be a number in [0, 0.01] (got 1)" },
      { "gemm_tile_m = 2^62, gemm_tile_n = 2^62",
        "cluster.device.gemm_tile_m: must be a whole number in [0, 1024] (got 4.61169e+18)" },
    }
    for _, c in ipairs(cases) do
      local path = policy(c[1])
      local code, _, err = H.apsearch("run", path, "--quiet")
      assert.are.equal(2, code, c[1])
      local lines = {}
      for l in err:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.are.equal(1, #lines, err)
      assert.truthy(lines[1]:find(path, 1, true), err)
      assert.truthy(lines[1]:find(c[2], 1, true), err)
    end
  end)

  it("takes a device table's fixed time per GEMM: one per GEMM kernel of the forward", function()
    -- Llama-3.1-8B on one GPU, one micro-batch: 32 layers x 4 GEMMs (QKV,
    -- O, MLP up, MLP down) + the output layer = 129 GEMMs, so 1 ms more
    -- per GEMM is 0.129 s more forward
    local model = { name = "Llama-3.1-8B", num_layers = 32, hidden_size = 4096,
      num_attention_heads = 32, num_query_groups = 8, ffn_hidden_size = 14336,
      vocab_size = 128256, tie_word_embeddings = false }
    local function fwd(t0)
      local dev = { base = "h100-sxm-80gb", gemm_fixed_seconds = t0 }
      local ctx = core.context(model, { device = dev, num_devices = 1, devices_per_node = 1 },
        { global_batch_size = 1, seq_length = 4096 })
      return ctx:estimate({ tp_degree = 1, dp_degree = 1 }).performance_breakdown.compute_fwd.total
    end
    assert.is_true(math.abs(fwd(1e-3) - fwd(0) - 0.129) < 1e-9, tostring(fwd(1e-3) - fwd(0)))
  end)
end)
