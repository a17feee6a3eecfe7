-- tests/lua/heldout_memory_reports_spec.lua -- the held-out memory reports
-- (tests/fixtures/heldout/memory_reports.csv; tests/fixtures/heldout/
-- README.md): 44 public runs that trained or ran out of memory, none of
-- them in the repository's other sets, never fitted.  Checked here: the
-- file is read through `validate`, every row is estimated (none refused),
-- and the rows keep their outcome and kind of peak.  No accuracy figure is
-- asserted: the set is out of sample, and what the estimate gets wrong on
-- it is reported in the README, not pinned by a test.

local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."
local FILE = ROOT .. "/tests/fixtures/heldout/memory_reports.csv"

local finite = H.finite

local function run() return H.validated(FILE) end

describe("held out: public memory reports", function()
  it("reads and estimates all 44 rows, none refused", function()
    local r = run()
    assert.are.equal(44, r.summary.cases)
    assert.are.equal(0, r.summary.failed)
    assert.are.equal(44, #r.cases)
    for _, c in ipairs(r.cases) do
      assert.is_nil(c.error, c.case_id)
      assert.is_true(finite(c.predicted.mem_device_gib) and c.predicted.mem_device_gib > 0, c.case_id)
      assert.is_true(finite(c.predicted.mem_limit_gib) and c.predicted.mem_limit_gib > 0, c.case_id)
      assert.is_boolean(c.predicted.fits, c.case_id)
    end
  end)

  it("keeps each row's outcome: 32 trained, 12 out of memory, each called one way", function()
    local r = run()
    local n = { ran = 0, oom = 0 }
    for _, c in ipairs(r.cases) do
      assert.is_truthy(c.outcome == "ran" or c.outcome == "oom", c.case_id)
      n[c.outcome] = n[c.outcome] + 1
    end
    assert.are.equal(32, n.ran)
    assert.are.equal(12, n.oom)
    local f = r.summary.fit_calls
    assert.are.equal(32, f.ran.count)
    assert.are.equal(12, f.oom.count)
    assert.are.equal(f.ran.count, f.ran.called_fit + f.ran.called_oom)
    assert.are.equal(f.oom.count, f.oom.called_fit + f.oom.called_oom)
  end)

  it("compares the 21 measured peaks by their kind: 18 max reserved, 3 max allocated", function()
    local r = run()
    local kinds = { reserved = 0, allocated = 0 }
    for _, c in ipairs(r.cases) do
      if c.measured and c.measured.mem_gib then
        assert.are.equal("ran", c.outcome, c.case_id)
        assert.is_truthy(kinds[c.mem_kind], c.case_id)
        kinds[c.mem_kind] = kinds[c.mem_kind] + 1
        assert.is_true(finite(c.error_pct.mem_gib), c.case_id)
      end
    end
    assert.are.equal(18, kinds.reserved)
    assert.are.equal(3, kinds.allocated)
    assert.are.equal(21, r.summary.memory.count)
  end)
end)
