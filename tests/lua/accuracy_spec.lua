-- tests/lua/accuracy_spec.lua -- issue 5's targets on the published runs:
-- `apsearch validate public_cases.csv` (the shared validation file when it
-- sits beside the repo, else its copy in tests/fixtures) must give a
-- throughput MAPE <= 12 %, no run worse than 30 % but the outliers listed
-- below with the reason they are not modelled, memory within 10 % on every
-- run that measured it and no memory under-estimate beyond 5 %.  An outlier
-- that comes back under 30 % fails the test too, so the list cannot rot.

local validate = require "apsearch.validate"
local H = require "spec_helpers"

local SHARED = H.ROOT .. "/../shared/validation/public_cases.csv"
local CASES = H.read(SHARED) and SHARED or (H.ROOT .. "/tests/fixtures/public_cases.csv")

-- docs/accuracy.md, "What is not modelled"
local OUTLIERS = {
  -- MPT-30B at 8K on 8 A100s: the same model at 4K and 2K is within 7 %
  -- and MPT-13B at 8K within 5 %; the run sits at the highest estimated
  -- memory of the MosaicML rows (74 of 80 GiB), where the caching
  -- allocator's retries (not modelled) likely slow a step
  c217 = true,
}

describe("accuracy on the published runs (" .. CASES .. ")", function()
  local r
  setup(function() r = validate.run(CASES) end)

  it("estimates every row", function()
    assert.are.equal(0, r.summary.failed)
    assert.is_true(r.summary.cases >= 71)
  end)

  it("has a throughput MAPE of at most 12 %", function()
    assert.is_true(r.summary.throughput.mape_pct <= 12, r.summary.throughput.mape_pct)
  end)

  it("has no run worse than 30 % outside the listed outliers", function()
    for _, c in ipairs(r.cases) do
      local e = math.abs(c.error_pct.tokens_per_s_per_gpu)
      if OUTLIERS[c.case_id] then
        assert.is_true(e > 30, c.case_id .. " is back within 30 %: remove it from OUTLIERS")
      else
        assert.is_true(e <= 30, ("%s: %+.1f %%"):format(c.case_id, c.error_pct.tokens_per_s_per_gpu))
      end
    end
  end)

  it("has memory within 10 % on every run that measured it, none under-estimated beyond 5 %", function()
    local n = 0
    for _, c in ipairs(r.cases) do
      local e = c.error_pct.mem_gib
      if e then
        n = n + 1
        assert.is_true(math.abs(e) <= 10, c.case_id)
        assert.is_true(e >= -5, c.case_id)
      end
    end
    assert.is_true(n >= 7)
    assert.are.equal(0, r.summary.memory.under_estimates_beyond_5pct)
  end)
end)
