-- tests/lua/evidence_spec.lua -- apsearch.evidence: the held-out runs of
-- an estimate's own model and device, said when they landed outside the
-- step-time interval.
local H = require "spec_helpers"

describe("apsearch.evidence", function()
  local evidence = require "apsearch.evidence"

  it("knows a model by its shape", function()
    assert.are.equal("32/4096/0/0/128256", evidence.signature({ num_layers = 32, hidden_size = 4096,
      vocab_size = 128256, experts_per_token = 8 })) -- no experts: top-k is not part of a dense shape
    assert.are.equal("48/2048/128/8/151936", evidence.signature({ num_layers = 48, hidden_size = 2048,
      num_experts = 128, experts_per_token = 8, vocab_size = 151936 }))
    assert.is_nil(evidence.signature({ hidden_size = 4096 }))
    assert.is_nil(evidence.signature(nil))
  end)

  it("groups runs by shape, device and framework, ratio = 1 + error / 100", function()
    local model = { num_layers = 2, hidden_size = 8, vocab_size = 16 }
    local function case(err, dev, fw) return { error_pct = { tokens_per_s_per_gpu = err },
      inputs = { model = model, cluster = { device = { base = dev } }, training = { framework = fw } } } end
    local built = evidence.build({
      ["b.csv"] = { cases = { case(50, "h100-sxm-80gb"), case(0 / 0, "h100-sxm-80gb") } },
      ["a.csv"] = { cases = { case(-20, "h100-sxm-80gb"), case(10, "b200"), { error = "x" },
        case(30, "h100-sxm-80gb", "fsdp2"), case(-30, "h100-sxm-80gb", "automodel"),
        case(-10, "b200", "automodel") } },
    })
    -- AutoModel's (evidence.FRAMEWORK_WIDE) also over every model and device; FSDP2's not
    assert.are.same({ runs = 2, lo = 0.7, hi = 0.9, files = { "a.csv" } }, built.groups["*|*|automodel"])
    assert.is_nil(built.groups["*|*|fsdp2"])
    assert.is_nil(built.groups["*|*|megatron"])
    -- an FSDP2 run is a group of its own
    assert.are.equal(1.3, built.groups["2/8/0/0/16|h100-sxm-80gb|fsdp2"].hi)
    local g = built.groups["2/8/0/0/16|h100-sxm-80gb|megatron"]
    assert.are.equal(2, g.runs) -- the NaN error is no run
    assert.are.equal(0.8, g.lo)
    assert.are.equal(1.5, g.hi)
    assert.are.same({ "a.csv", "b.csv" }, g.files)
    assert.are.equal(1, built.groups["2/8/0/0/16|b200|megatron"].runs)
    -- and its source loads back
    local src = evidence.source(built, { "a.csv", "b.csv" })
    local back = assert(load(src))()
    assert.are.equal(1.5, back.groups["2/8/0/0/16|h100-sxm-80gb|megatron"].hi)
  end)

  it("says the shipped evidence only outside the interval's factors", function()
    local qwen = { num_layers = 48, hidden_size = 2048, num_experts = 128, experts_per_token = 8,
      vocab_size = 151936 }
    local g = assert(evidence.of(qwen, "h100-sxm-80gb"))
    assert.truthy(evidence.caveat(qwen, "h100-sxm-80gb", "megatron", 0.837, 1.194):find(
      ("the %d held-out megatron runs of this model (by its shape) on h100-sxm-80gb measured x%.2f-%.2f"):format(g.runs,
        g.lo, g.hi), 1, true))
    assert.is_nil(evidence.caveat(qwen, "h100-sxm-80gb", nil, g.lo, g.hi))
    assert.is_nil(evidence.caveat(qwen, "tpu-v5p", nil, 0.837, 1.194))
    -- the Megatron-Bridge runs say nothing of an FSDP2 estimate
    assert.is_nil(evidence.of(qwen, "h100-sxm-80gb", "fsdp2"))
    assert.is_nil(evidence.caveat(qwen, "h100-sxm-80gb", "fsdp2", 0.837, 1.194))
    -- an AutoModel estimate of a model its held-out runs do not have: its runs of every model and GPU
    local llama405 = { num_layers = 126, hidden_size = 16384, vocab_size = 128256 }
    assert.is_nil(evidence.of(llama405, "h100-sxm-80gb", "automodel"))
    local all = assert(evidence.framework_runs("automodel"))
    assert.truthy(evidence.caveat(llama405, "h100-sxm-80gb", "automodel", 0.88, 1.14):find(
      ("the %d held-out automodel runs (every model and GPU) measured x%.2f-%.2f the estimated step time, outside " ..
        "these factors (automodel_perf.csv"):format(all.runs, all.lo, all.hi), 1, true))
    assert.is_nil(evidence.caveat(llama405, "h100-sxm-80gb", "automodel", all.lo, all.hi))
    assert.is_nil(evidence.framework_runs("megatron"))
  end)

  it("matches a fresh validation of NeMo AutoModel's runs, every model and GPU", function()
    local results = { ["automodel_perf.csv"] = require("apsearch.validate").run(H.ROOT ..
      "/tests/fixtures/heldout/automodel_perf.csv") }
    local fresh = evidence.build(results).groups["*|*|automodel"]
    local shipped = require("apsearch.evidence_data").groups["*|*|automodel"]
    assert.are.equal(shipped.runs, fresh.runs)
    assert.is_true(math.abs(shipped.lo - fresh.lo) < 5e-5, fresh.lo)
    assert.is_true(math.abs(shipped.hi - fresh.hi) < 5e-5, fresh.hi)
  end)

  -- the shipped table is the estimator's: one group recomputed from a
  -- fresh validation of its files (scripts/fit-evidence.sh after the
  -- estimator changes or a held-out file gains rows)
  it("matches a fresh validation of the Qwen3-30B-A3B Megatron runs on B200", function()
    local results = {}
    for _, f in ipairs({ "megatron_bridge_perf_moe.csv", "public_runs_found.csv" }) do
      results[f] = require("apsearch.validate").run(H.ROOT .. "/tests/fixtures/heldout/" .. f)
    end
    local fresh = evidence.build(results).groups["48/2048/128/8/151936|b200|megatron"]
    local shipped = require("apsearch.evidence_data").groups["48/2048/128/8/151936|b200|megatron"]
    assert.are.same({ "megatron_bridge_perf_moe.csv", "public_runs_found.csv" }, shipped.files)
    assert.are.equal(shipped.runs, fresh.runs)
    assert.is_true(math.abs(shipped.lo - fresh.lo) < 5e-5, fresh.lo)
    assert.is_true(math.abs(shipped.hi - fresh.hi) < 5e-5, fresh.hi)
  end)
end)
