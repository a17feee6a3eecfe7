-- tests/lua/fuzz_findings_spec.lua -- one regression test per fault the
-- libFuzzer harnesses of fuzz/ found (docs/fuzzing.md), with the input
-- that found it.
--
-- APS_BIN is the built binary and APS_ROOT the repo root (CTest sets both).

local cjson = require "cjson"
local H = require "spec_helpers"

describe("fuzz findings", function()
  -- fuzz_args, while triaging `validate` with an empty argument: lua-cliargs
  -- keeps "__CLIARGS_NULL__" for `--opt=` (nothing after the `=`) in a
  -- repeatable option's list, so `--set=` failed with `--set: expected
  -- KEY=VALUE (got "__CLIARGS_NULL__")`, naming a value nobody wrote.  It
  -- sets nothing now, as `--model=` does.
  it("an empty --set=, --fix=, --rules= or --strategy= adds nothing", function()
    local code, out, err = H.apsearch("run", "--set=", "--fix=", "--rules=", "--set=top_k=2",
      "--format", "json", "--quiet")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local r = cjson.decode(out)
    -- the one real override, and the default policy's 117-candidate space
    assert.are.same({ { kind = "set", key = "top_k", value = 2 } }, r.inputs.overrides)
    assert.are.equal(2, #r.top_k_strategies)
    assert.are.equal(117, r.all_candidate_summary.space_size)

    code, out, err = H.apsearch("estimate", "--strategy=", "--format", "json", "--quiet")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local e = cjson.decode(out).estimate
    -- TorchTitan fills the 8 GPUs with FSDP: fsdp = 8 / (tp cp pp) = 8
    assert.are.equal(8, e.strategy.fsdp_degree)
    assert.are.equal(1, e.strategy.tp_degree)
  end)
end)
