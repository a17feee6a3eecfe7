-- tests/lua/heldout_found_runs_spec.lua -- the published runs found on
-- 2026-12-06 after the estimator's last change (tests/fixtures/heldout/
-- public_runs_found.csv; tests/fixtures/heldout/README.md): 14 runs from
-- Pai-Megatron-Patch issues, a Megatron-Bridge issue, NeMo's long-sequence
-- performance page and torchao's float8 README, none in the repository's
-- other sets, never fitted.  Checked here: every row is read and estimated
-- (none refused) with a finite throughput; no accuracy figure is asserted
-- (out of sample: the README reports it).

local H = require "spec_helpers"

local ROOT = os.getenv("APS_ROOT") or "."
local FILE = ROOT .. "/tests/fixtures/heldout/public_runs_found.csv"

describe("held out: published runs found on 2026-12-06", function()
  it("reads and estimates all 14 rows, none refused", function()
    H.assert_all_estimated(FILE, 14)
  end)
end)
