-- tests/lua/fuzz_findings_spec.lua -- one regression test per fault the
-- libFuzzer harnesses of fuzz/ found (docs/fuzzing.md), with the input
-- that found it.
--
-- APS_BIN is the built binary and APS_ROOT the repo root (CTest sets both).

local cjson = require "cjson"
local H = require "spec_helpers"

describe("fuzz findings", function()
  -- fuzz_args, 2026-12-05 (149,821 inputs): a policy path beginning
  -- "not enough memory" and holding bytes that are not UTF-8 was refused
  -- in one line, as it should be, but the message prints the path escaped
  -- (util.printable), so the harness did not see its own input at the
  -- start and took the text for Lua's out-of-memory error: a finding in
  -- the harness, not the tool.  It compares the escaped input too now.
  it("the harness takes a message that begins with the escaped input for the input's own text", function()
    local targets = dofile(H.ROOT .. "/fuzz/targets.lua")
    local path = "not enough memoryexamp\187x.lua"
    local msg = "not enough memoryexamp\\187x.lua: cannot open policy file: No such file or directory"
    assert.is_nil(targets.finding(msg, { "run", path }))
    -- Lua's own error is still one
    assert.truthy(targets.finding("not enough memory", { "run", "x.lua" }))
  end)

  -- fuzz_args, while triaging `validate` with an empty argument: lua-cliargs
  -- keeps "__CLIARGS_NULL__" for `--opt=` (nothing after the `=`) in a
  -- repeatable option's list, so `--set=` failed with `--set: expected
  -- KEY=VALUE (got "__CLIARGS_NULL__")`, naming a value nobody wrote.  It
  -- then set nothing, as `--model=` did -- which a breaker found runs the
  -- default model for `--model=$MODEL` with MODEL unset.  Every `--opt=`
  -- is refused now, naming the option.
  it("an empty --opt= is refused, naming the option (--set=, --model=, --strategy=, --format=)", function()
    for _, case in ipairs({ { "run", "--set=" }, { "run", "--model=" }, { "run", "--cluster=" },
        { "run", "--out=" }, { "estimate", "--strategy=" }, { "validate", "--format=", "x.csv" } }) do
      local code, out, err = H.apsearch(table.unpack(case))
      assert.are.equal(2, code)
      assert.are.equal("", out)
      assert.are.equal(("apsearch: %s: %s expected a value after \"=\" (an empty value would leave %s unset)\n")
        :format(case[1], case[2] .. ":", case[2]:sub(1, -2)), err)
    end
    -- after `--` an argument is positional, not an option
    local cli = require "apsearch.cli"
    assert.has_no.errors(function() cli.refuse_empty_values("run", { "--", "--x=" }) end)
  end)

  -- fuzz_csv, 2026-12-03 (a 14-minute campaign, 74,000 inputs): a row of
  -- the public MoE set with vpp_degree 0 under pp_degree 2 reached the
  -- unstated-layout rule, whose `num_layers % (pp x vpp)` raised Lua's
  -- "attempt to perform 'n%%0'" at validate.lua:187.  Degrees and the
  -- micro-batch are read as positive integers now.
  it("a degree of 0 in a cases row is a one-line row error, not a Lua error", function()
    local src = H.read(H.ROOT .. "/tests/fixtures/moe/public_moe_cases.csv")
    local header, row = src:match("^([^\n]*)\n([^\n]*)")
    local cols, cells = {}, {}
    for c in (header .. ","):gmatch("([^,]*),") do cols[#cols + 1] = c end
    -- the first row's cells, quoted fields kept whole
    local rest = row .. ","
    while #rest > 0 do
      local cell, tail = rest:match('^("[^"]*"),(.*)$')
      if not cell then cell, tail = rest:match("^([^,]*),(.*)$") end
      cells[#cells + 1], rest = cell, tail
    end
    for i, c in ipairs(cols) do
      if c == "pp_degree" then cells[i] = "2" elseif c == "vpp_degree" then cells[i] = "0" end
    end
    local path = H.write(H.tmpdir() .. "/vpp0.csv", header .. "\n" .. table.concat(cells, ",") .. "\n")
    local code, out = H.apsearch("validate", path)
    assert.are.equal(2, code)
    assert.truthy(out:find(': vpp_degree = "0" is not a positive integer', 1, true), out)
    assert.is_nil(out:find("attempt to", 1, true))
  end)

  -- fuzz_sandbox, 2026-12-03 (4,979 inputs): a rule looping over a field of
  -- its candidate tripped the instruction limit inside the candidate
  -- view's __index (lua/apsearch/rules.lua), and the report named that
  -- line, not the rule's.  Trusted host sources are skipped for the
  -- position (sandbox.configure host_source).
  it("a limit tripped in a host function a rule called is reported at the rule's line", function()
    local dir = H.tmpdir()
    local rule = H.write(dir .. "/frule.lua", "return { name = 'fuzz', check = function(c)\n"
      .. "local s = ('x'):rep(0 << 20)\nwhile true do local u = s:upper(c.recompute_modules) end\nend }\n")
    local code, _, err = H.apsearch("run", "--rules", rule, "--sandbox-instructions", "100000")
    assert.are.equal(2, code)
    local first = err:match("^[^\n]*")
    assert.truthy(first:find("frule.lua:3: instruction limit exceeded", 1, true), err)
    assert.is_nil(first:find("rules.lua", 1, true), err)
  end)

  -- fuzz_args, 2026-12-07 (3,099 inputs): `estimate --sandbox-instructions=10`
  -- with no POLICY loads the built-in default policy under that limit, and
  -- the error named a line of examples/llama3_8b_h100.lua -- a file the
  -- user never gave -- with a stack traceback after it.  The limit is said
  -- against the built-in policy now, in one line, exit 2; a policy the user
  -- gives keeps its own file and line.
  it("a sandbox limit too low for the built-in default policy is one line naming it, not a file position", function()
    local code, out, err = H.apsearch("estimate", "--sandbox-instructions=10")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: the built-in default policy (examples/llama3_8b_h100.lua, no POLICY given): " ..
      "instruction limit exceeded: more than 10 Lua instructions in one call (sandbox limit; raise it with " ..
      "--sandbox-instructions)\n", err)
    local targets = dofile(H.ROOT .. "/fuzz/targets.lua")
    assert.is_nil(targets.finding(err:gsub("^apsearch: ", ""), { "estimate", "--sandbox-instructions=10" }))
    code, _, err = H.apsearch("estimate", H.ROOT .. "/examples/llama3_8b_h100.lua", "--sandbox-instructions=10")
    assert.are.equal(2, code)
    assert.truthy(err:find("llama3_8b_h100.lua:%d+: instruction limit exceeded"), err)
  end)
end)
