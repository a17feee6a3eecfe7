-- tests/lua/opsac_examples_spec.lua -- the worked examples of
-- docs/modeling.md on op-level selective checkpointing (TorchTitan and
-- NeMo AutoModel, src/core/opsac.c), run through `apsearch estimate` as a
-- user runs them, so the figures the docs quote are the ones printed.
-- The walk's shapes and counts themselves are hand-checked in
-- tests/c/test_opsac.c; here the orderings the mechanism implies are
-- asserted beside the quoted values.
--
-- APS_ROOT is the repo root, APS_BIN the built binary (CTest sets both).

local H = require "spec_helpers"
local json = require "cjson"

local GIB = 2 ^ 30

-- the estimate of qwen3-30b-a3b with `--set` training fields, a strategy
local function estimate(cluster, sets, strategy)
  local args = { "estimate", "--model", "qwen3-30b-a3b", "--cluster", cluster, "--format", "json", "-q",
    "--strategy", strategy }
  for _, s in ipairs(sets) do args[#args + 1] = "--set" args[#args + 1] = s end
  -- (exit status 1: the layout does not fit; its breakdown is printed)
  local code, out, err = H.apsearch(table.unpack(args))
  assert.is_true(code == 0 or code == 1, err)
  local e = json.decode(out).estimate
  return { recompute = e.performance_breakdown.recompute.total, step = e.step_time,
    act = e.memory_breakdown.activations / GIB }
end

local function round(x, n) return math.floor(x * 10 ^ n + 0.5) / 10 ^ n end

describe("docs/modeling.md's op-level checkpointing examples", function()
  it("TorchTitan, Qwen3-30B-A3B on 8 B200: 0.51 s of a 4.1 s step against 1.03 s under full recompute", function()
    local sets = { "training.framework=fsdp2", "training.seq_length=8192", "training.global_batch_size=64",
      "training.torch_compile=true", "training.compile_loss=true" }
    local S = "fsdp_degree=8,micro_batch_size=8,ep_degree=1,layer_recompute="
    local sel = estimate("b200:1", sets, S .. "selective")
    local full = estimate("b200:1", sets, S .. "full")
    assert.are.equal(0.51, round(sel.recompute, 2))
    assert.are.equal(4.1, round(sel.step, 1))
    assert.are.equal(1.03, round(full.recompute, 2))
    assert.is_true(sel.recompute < full.recompute)
  end)

  it("AutoModel against TorchTitan, Qwen3-30B-A3B on 16 H100: 17.32 against 36.25 GiB, 0.41 against 0.39 s", function()
    local base = { "training.seq_length=4096", "training.global_batch_size=64" }
    local S = "fsdp_degree=16,micro_batch_size=2,ep_degree=8,layer_recompute="
    local function run(fw, r)
      local sets = { "training.framework=" .. fw, base[1], base[2] }
      return estimate("h100-sxm-80gb:2", sets, S .. r)
    end
    local am, tt, am_full = run("automodel", "selective"), run("fsdp2", "selective"), run("automodel", "full")
    assert.are.equal(17.32, round(am.act, 2))
    assert.are.equal(36.25, round(tt.act, 2))
    assert.are.equal(0.41, round(am.recompute, 2))
    assert.are.equal(0.39, round(tt.recompute, 2))
    assert.are.equal(0.47, round(am_full.recompute, 2))
    -- TransformerEngine's attention and linears keep nothing: less kept,
    -- more recomputed than TorchTitan's walk, less than full recompute
    assert.is_true(am.act < tt.act and am.recompute > tt.recompute and am.recompute < am_full.recompute)
  end)
end)
