-- tests/lua/width_spec.lua -- text output within 120 columns by default
-- (issue 26 item 7): `apsearch run` on every example policy and `apsearch
-- presets` print no stdout line wider than 120 characters (UTF-8
-- characters, utf8.len); `--wide` still shows everything; an
-- unknown-field error's list is cut to fit, in one line.

local H = require "spec_helpers"
local lfs = require "lfs"
local common = require "apsearch.format.common"
local suggest = require "apsearch.suggest"

local WIDTH = 120

-- the lines of `text` wider than WIDTH characters, with their widths
local function too_wide(text)
  local bad = {}
  for line in text:gmatch("[^\n]+") do
    local w = utf8.len(line) or #line
    if w > WIDTH then bad[#bad + 1] = w .. ": " .. line end
  end
  return bad
end

local function examples()
  local list = {}
  for f in lfs.dir(H.ROOT .. "/examples") do
    if f:match("%.lua$") then list[#list + 1] = f end
  end
  table.sort(list)
  return list
end

describe("stdout within 120 columns", function()
  it("the table width is common.TERMINAL_WIDTH, 120", function()
    assert.are.equal(WIDTH, common.TERMINAL_WIDTH)
  end)

  for _, f in ipairs(examples()) do
    it("apsearch run examples/" .. f, function()
      local code, out, err = H.apsearch("run", H.ROOT .. "/examples/" .. f, "--top-k", "3", "--quiet")
      assert.is_true(code == 0 or code == 1, err)
      assert.are.same({}, too_wide(out))
    end)
  end

  it("apsearch run when nothing fits (what to relax, closest strategies, filter reasons)", function()
    local code, out = H.apsearch("run", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--quiet")
    assert.are.equal(1, code)
    assert.truthy(out:find("what to relax", 1, true))
    assert.are.same({}, too_wide(out))
  end)

  -- the table of `out` is whole: its header, the dashes under it, then
  -- `rows` lines that each start with their rank (a fold cut them in two)
  local function whole_table(out, rows)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    local at
    for i, line in ipairs(lines) do if line:match("^rank ") then at = i break end end
    assert.truthy(at, out)
    assert.truthy(lines[at]:find("peak GiB$"), lines[at])
    assert.truthy(lines[at + 1]:match("^%-%-%-%- [%- ]+$"), lines[at + 1])
    for r = 1, rows do assert.truthy(lines[at + 1 + r]:match("^ *" .. r .. " "), lines[at + 1 + r]) end
  end

  it("an MoE top-k with expert TP (ep cells \"8 x etp 4\") fits, its step-time objective in the step column", function()
    -- Mixtral-8x7B on 16,384 H100s: its table was 128 columns after the
    -- "top" columns were left out, and the fold cut its header in two
    local code, out = H.apsearch("run", "--model", "mixtral-8x7b", "--cluster", "h100-sxm-80gb:2048", "--quiet")
    assert.are.equal(0, code)
    assert.are.same({}, too_wide(out))
    whole_table(out, 10)
    -- the step time objective's score is the step column's: no column
    -- of its own (issue 26: the column repeated the step time)
    assert.truthy(out:find("\n(top overhead (s), top memory (GiB): left out to fit 120 columns", 1, true), out)
    assert.is_nil(out:find("\nrank +objective", 1), out)
    assert.truthy(out:find("\nobjective: step_time (step time in s, lower is better: the step (s) column)\n", 1, true),
      out)
  end)

  it("keeps the objective column of a policy's own objective, whatever its name", function()
    -- a custom objective called step_time ranks by memory: its scores are
    -- no column's (breaker, 2026-12-06: they were hidden)
    local dir = H.tmpdir()
    H.write(dir .. "/o.lua", 'return { name = "step_time", unit = "GiB", ' ..
      'score = function(e) return e.mem_peak / 2^30 end }')
    local code, out = H.apsearch("run", "examples/llama3_8b_h100.lua", "--objective", dir .. "/o.lua", "-k", "3", "-q")
    assert.are.equal(0, code)
    assert.truthy(out:find("\nrank  objective ", 1, true), out)
    assert.truthy(out:find("\nobjective: step_time (GiB, lower is better)\n", 1, true), out)
    -- the built-in memory objective's score is the peak GiB column
    code, out = H.apsearch("run", "examples/llama3_8b_h100.lua", "--set", "objective=memory", "-k", "3", "-q")
    assert.are.equal(0, code)
    assert.is_nil(out:find("\nrank  objective ", 1, true), out)
    assert.truthy(out:find("\nobjective: memory (peak memory in GiB, lower is better: the peak GiB column)\n", 1, true),
      out)
  end)

  it("a top-k whose strategies differ in every column leaves out tok/s/GPU last", function()
    -- Llama-3.1-70B on 4,096 H100s: 18 columns differ; 121 columns with
    -- one space between them and tok/s/GPU kept
    local code, out = H.apsearch("run", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:512", "--quiet")
    assert.are.equal(0, code)
    assert.are.same({}, too_wide(out))
    whole_table(out, 10)
    assert.truthy(out:find("\n(top overhead (s), top memory (GiB), tok/s/GPU: left out to fit "
      .. "120 columns; --wide shows them)\n", 1, true), out)
  end)

  it("a dense top-k whose strategies differ in 15 columns fits with one space between columns", function()
    -- Llama-3.1-70B on 512 H100s: dp fsdp zero reshard tp sp pp vpp
    -- schedule layers "cp comm" mbn recomp differ; 134 columns with two
    -- spaces even without the objective
    local code, out = H.apsearch("run", "--model", "llama-3.1-70b", "--cluster", "h100-sxm-80gb:64", "--quiet")
    assert.are.equal(0, code)
    assert.are.same({}, too_wide(out))
    whole_table(out, 10)
    assert.truthy(out:find("\nrank dp fsdp zero reshard tp sp pp vpp schedule layers cp comm    mbn recomp ", 1, true),
      out)
  end)

  it("apsearch presets, its sources folded under themselves", function()
    local code, out = H.apsearch("presets")
    assert.are.equal(0, code)
    assert.are.same({}, too_wide(out))
    local _, wide = H.apsearch("presets", "--wide")
    assert.is_true(#too_wide(wide) > 0)
    -- the same words, folded or not
    local function words(t) return (t:gsub("%-%-+", ""):gsub("%s+", " ")) end
    assert.are.equal(words(wide), words(out))
  end)

  it("--wide shows every column and the notes unfolded", function()
    local path = H.ROOT .. "/examples/deepseek_v3_h100_1024.lua"
    local _, out = H.apsearch("run", path, "--top-k", "3", "--quiet")
    local _, wide = H.apsearch("run", path, "--top-k", "3", "--quiet", "--wide")
    assert.truthy(out:find("left out to fit 120 columns", 1, true))
    assert.is_nil(wide:find("left out to fit", 1, true))
    assert.truthy(wide:find("top memory (GiB)", 1, true))
    assert.is_true(#too_wide(wide) > 0)
    local note = wide:match("\n(80 %% of measured runs land within: [^\n]*)")
    assert.truthy(note and note:find("spread wider", 1, true), wide)
  end)
end)

describe("estimate and validate within 120 columns", function()
  for _, f in ipairs(examples()) do
    it("apsearch estimate examples/" .. f .. ": long labelled lines go on under their text", function()
      local _, out = H.apsearch("estimate", H.ROOT .. "/examples/" .. f, "--quiet")
      assert.are.same({}, too_wide(out))
    end)
  end

  it("the strategy line of an estimate folds at the label's width, words kept", function()
    local _, out = H.apsearch("estimate", "--strategy", "tp_degree=2", "--quiet")
    local strat = out:match("\n(strategy  [^\n]*\n          [^\n]*)")
    assert.truthy(strat, out)
    assert.truthy(strat:find("micro_batch_num=16", 1, true), strat)
  end)

  it("apsearch validate: model names cut to fit, whole with --wide; summary lines whole in a pipe", function()
    local cases = H.ROOT .. "/tests/fixtures/memory/public_memory_cases.csv"
    local _, out = H.apsearch("validate", cases)
    local _, wide = H.apsearch("validate", cases, "--wide")
    local table_part = out:match("^(.-)\n\n")
    assert.are.same({}, too_wide(table_part))
    assert.truthy(table_part:find("…", 1, true))
    -- the longest model name of the set, whole only with --wide
    local longest = ""
    for line in io.lines(cases) do
      local name = line:match("^[^,]*,[^,]*,[^,]*,([^,]*),")
      if name and #name > #longest and not name:find('"') then longest = name end
    end
    assert.is_true(utf8.len(longest) > 30, longest)
    assert.is_nil(table_part:find(longest, 1, true))
    assert.truthy(wide:find(longest, 1, true))
    -- not a terminal: the summary lines stay whole (scripts read them)
    assert.truthy(out:find("\nfit/no%-fit: [^\n]+%(called out of memory %d+, fit %d+%)"), out)
  end)

  it("clipped_table cuts the named column only, down to its floor", function()
    local cli = require "apsearch.cli"
    local rows = { { "a1", string.rep("m", 40), "1" }, { "a2", "short", "22" } }
    local text = cli.clipped_table({ "id", "model", "n" }, rows, { false, false, true }, 2, 30)
    for line in text:gmatch("[^\n]+") do assert.is_true(utf8.len(line) <= 30, line) end
    assert.truthy(text:find("a1  " .. string.rep("m", 21) .. "…  ", 1, true), text) -- 22 = 40 - (48 - 30)
    assert.truthy(text:find("a2  short", 1, true))
    -- never below MIN_CLIPPED_COLUMN characters, even if the table stays wider
    rows = { { "a1", string.rep("m", 40), "1" } }
    text = cli.clipped_table({ "id", "model", "n" }, rows, { false, false, true }, 2, 10)
    assert.truthy(text:find(string.rep("m", cli.MIN_CLIPPED_COLUMN - 1) .. "…", 1, true), text)
  end)
end)

describe("common.fold", function()
  it("folds at spaces within the width, continuation lines indented, words kept", function()
    local line = "  " .. string.rep("word ", 60) .. "end"
    local folded = common.fold(line, 40)
    for piece in folded:gmatch("[^\n]+") do assert.is_true(utf8.len(piece) <= 40, piece) end
    assert.truthy(folded:find("\n    word", 1, true))
    assert.are.equal((line:gsub("%s+", " ")), (folded:gsub("%s+", " ")))
  end)

  it("cuts a word longer than a line, counting UTF-8 characters", function()
    local folded = common.fold("x " .. string.rep("é", 50), 20)
    for piece in folded:gmatch("[^\n]+") do assert.is_true(utf8.len(piece) <= 20, piece) end
  end)

  it("keeps a unit on the line of its number (a summary once ended '... 0.17' / '  s')", function()
    local head = string.rep("x", 100)
    assert.are.equal(head .. " took\n  0.17 s, 78.65 GiB, 41.2 % done",
      common.fold(head .. " took 0.17 s, 78.65 GiB, 41.2 % done", 110))
    -- a word that is no unit, or a unit after no number, folds as before
    assert.are.equal(head .. " 0.17\n  sec", common.fold(head .. " 0.17 sec", 105))
    assert.are.equal(head .. " a\n  s", common.fold(head .. " a s", 103))
  end)

  it("leaves a line that fits, and everything under math.huge", function()
    assert.are.equal("a b", common.fold("a b", 3))
    local long = string.rep("a ", 100)
    assert.are.equal(long, common.fold(long, math.huge))
  end)
end)

describe("unknown-field lists", function()
  it("are cut to fit 120 columns with the count left out, in one line", function()
    local code, out, err = H.apsearch("run", "--set", "training.foo=1")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal(1, select(2, err:gsub("\n", "")))
    assert.is_true(utf8.len(err) - 1 <= WIDTH, err)
    assert.truthy(err:find("^apsearch: %-%-set: training%.foo: unknown field %(known: [%w_, ]+%.%.%. and %d+ more%) %(got 1%)\n$"), err)
  end)

  it("count the comma before the names left out (an unknown device's line was 121 columns)", function()
    local code, _, err = H.apsearch("run", "--cluster", "zzz:1")
    assert.are.equal(2, code)
    assert.is_true(utf8.len(err) - 1 <= WIDTH, err)
    assert.truthy(err:find(", ... and %d+ more%) %(got \"zzz\"%)\n$"), err)
  end)

  it("fold_known keeps a message that fits, and the names that fit in their order", function()
    assert.are.equal("x: unknown field (known: a, b)", suggest.fold_known("x: unknown field (known: a, b)"))
    local names = {}
    for i = 1, 40 do names[i] = ("field_%02d"):format(i) end
    local msg = suggest.fold_known("f: unknown field (known: " .. table.concat(names, ", ") .. ") (got 1)", 80)
    assert.is_true(#suggest.ERROR_PREFIX + utf8.len(msg) <= 80, msg)
    assert.truthy(msg:find("^f: unknown field %(known: field_01, field_02, [^)]*%.%.%. and %d+ more%) %(got 1%)$"), msg)
  end)

  it("fold_known keeps a short list whole, past the width", function()
    -- 6 names in 52 characters: under suggest.SHORT_LIST_CHARS (64)
    local list = "default, linear, dynamic, yarn, llama3, longrope"
    local msg = ("/a/long/path/%s/config.json: rope_scaling: rope_type: unsupported RoPE scaling " ..
      "(supported: %s) (got \"proportional\")"):format(("x"):rep(40), list)
    assert.are.equal(msg, suggest.fold_known(msg))
  end)
end)
