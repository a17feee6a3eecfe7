-- tests/lua/csvread_spec.lua -- the RFC 4180 reader of cases files
-- (apsearch.csvread, issue 26 item 9): the examples of RFC 4180 section 2,
-- rules 1-7, the byte-order mark and line ends spreadsheets write, the
-- malformed cases refused with file, line and column, and `validate` /
-- `calibrate` reading a spreadsheet export of the fixture.

local csvread = require "apsearch.csvread"
local validate = require "apsearch.validate"
local H = require "spec_helpers"

local CRLF = "\r\n"
local FIXTURE = H.ROOT .. "/tests/fixtures/cases_small.csv"

local function parse(text) return (csvread.parse(text, "t.csv")) end

local function refused(text)
  local ok, err = pcall(csvread.parse, text, "t.csv")
  assert.is_false(ok)
  return err
end

describe("RFC 4180 section 2", function()
  local two = { { "aaa", "bbb", "ccc" }, { "zzz", "yyy", "xxx" } }

  it("rule 1: records end with CRLF", function()
    assert.are.same(two, parse("aaa,bbb,ccc" .. CRLF .. "zzz,yyy,xxx" .. CRLF))
  end)

  it("rule 2: the last record may end without a line break", function()
    assert.are.same(two, parse("aaa,bbb,ccc" .. CRLF .. "zzz,yyy,xxx"))
  end)

  it("rule 3: a header line reads as the first record", function()
    local r = parse("field_name,field_name,field_name" .. CRLF .. "aaa,bbb,ccc" .. CRLF)
    assert.are.same({ { "field_name", "field_name", "field_name" }, { "aaa", "bbb", "ccc" } }, r)
  end)

  it("rule 4: commas separate fields, spaces are part of them, a trailing comma is an empty field", function()
    assert.are.same({ { " aaa ", "bbb", "" } }, parse(" aaa ,bbb," .. CRLF))
  end)

  it("rule 5: fields may be quoted", function()
    assert.are.same(two, parse('"aaa","bbb","ccc"' .. CRLF .. "zzz,yyy,xxx"))
  end)

  it("rule 6: quoted fields hold line breaks, quotes and commas", function()
    local r = parse('"aaa","b' .. CRLF .. 'bb","ccc"' .. CRLF .. "zzz,yyy,xxx")
    assert.are.same({ { "aaa", "b" .. CRLF .. "bb", "ccc" }, { "zzz", "yyy", "xxx" } }, r)
    assert.are.same({ { "a,b", "c" } }, parse('"a,b",c'))
  end)

  it("rule 7: a doubled quote inside a quoted field is one quote", function()
    assert.are.same({ { "aaa", 'b"bb', "ccc" } }, parse('"aaa","b""bb","ccc"'))
    assert.are.same({ { '"', "" } }, parse('"""",""'))
  end)
end)

describe("what spreadsheets and other tools write", function()
  it("skips a UTF-8 byte-order mark, reads LF and lone CR line ends", function()
    assert.are.same({ { "a", "b" }, { "1", "2" } }, parse(csvread.BOM .. "a,b\n1,2\n"))
    assert.are.same({ { "a", "b" }, { "1", "2" } }, parse("a,b\r1,2\r"))
  end)

  it("reads empty lines outside quotes as no record, a quoted empty field as one", function()
    assert.are.same({ { "a" }, { "1" } }, parse("a\n\n1\n\n\n"))
    assert.are.same({ { "a" }, { "" } }, parse('a\n""\n'))
  end)

  it("gives the line each record starts on", function()
    local _, lines = csvread.parse('a,b\n"x\ny",1\nz,2\n', "t.csv")
    assert.are.same({ 1, 2, 4 }, lines)
  end)
end)

describe("malformed CSV", function()
  it("refuses an unterminated quote at the line and column of its opening quote", function()
    local err = refused('a,b\n1,"never\nclosed\n')
    assert.truthy(err:find('^t%.csv:2:3: a quoted field is never closed'), err)
  end)

  it("refuses a quote in an unquoted field at the quote", function()
    local err = refused('a,b\n1,ab"c"\n')
    assert.truthy(err:find("^t%.csv:2:5: a quote in an unquoted field"), err)
  end)

  it("refuses text after a closing quote, counting columns in UTF-8 characters", function()
    local err = refused('a,b\n"é"x,1\n')
    assert.truthy(err:find("^t%.csv:2:4: text after the closing quote"), err)
  end)

  it("counts lines inside quoted fields", function()
    local err = refused('a,b\n"x\ny",1\n2,"z\n')
    assert.truthy(err:find("^t%.csv:4:3: a quoted field is never closed"), err)
  end)
end)

describe("validate and calibrate read a spreadsheet export (issue 26)", function()
  local dir, export, plain
  local NOTE = 'said "fast"' .. CRLF .. "second line, with a comma"
  setup(function()
    dir = H.tmpdir()
    -- the fixture as Excel's "CSV UTF-8" writes it: a byte-order mark,
    -- CRLF, every field quoted, the first row's notes with a quote, a
    -- comma and a line break
    plain = validate.load(FIXTURE)
    local header = {}
    for name in (assert(H.read(FIXTURE)):match("^[^\r\n]*") .. ","):gmatch("([^,]*),") do
      header[#header + 1] = name
    end
    local function quoted(cells)
      local out = {}
      for i, c in ipairs(cells) do out[i] = '"' .. c:gsub('"', '""') .. '"' end
      return table.concat(out, ",")
    end
    local lines = { quoted(header) }
    for r, row in ipairs(plain) do
      local cells = {}
      for i, name in ipairs(header) do cells[i] = (r == 1 and name == "notes") and NOTE or row[name] end
      lines[#lines + 1] = quoted(cells)
    end
    export = H.write(dir .. "/export.csv", csvread.BOM .. table.concat(lines, CRLF) .. CRLF)
  end)

  it("reads the same rows as the plain fixture, the quoted note as written", function()
    local rows = validate.load(export)
    assert.are.equal(NOTE, rows[1].notes)
    rows[1].notes = plain[1].notes
    assert.are.same(plain, rows)
  end)

  it("validate gives the same estimates on the export as on the fixture", function()
    local json = require "cjson"
    local code, out = H.apsearch("validate", export, "--format", "json")
    local code0, out0 = H.apsearch("validate", FIXTURE, "--format", "json")
    assert.are.equal(code0, code)
    local r, r0 = json.decode(out), json.decode(out0)
    assert.are.same(r0.summary, r.summary)
    for i, c in ipairs(r0.cases) do
      -- (top_terms: ties such as params = grads come in either order)
      assert.are.same({ c.case_id, c.predicted, c.error }, { r.cases[i].case_id, r.cases[i].predicted, r.cases[i].error })
    end
  end)

  it("reads TRUE/FALSE, True/False and 1/0 as the booleans they are (Excel, pandas)", function()
    local header = assert(H.read(FIXTURE)):match("^[^\r\n]*")
    local first = assert(H.read(FIXTURE)):match("\n([^\r\n]*)")
    local spellings = { { "TRUE", "FALSE" }, { "True", "False" }, { "1", "0" } }
    for i, sp in ipairs(spellings) do
      local row = ("," .. first .. ","):gsub(",true,", "," .. sp[1] .. ","):gsub(",false,", "," .. sp[2] .. ",")
      row = row:gsub(",true,", "," .. sp[1] .. ","):gsub(",false,", "," .. sp[2] .. ",")
      local f = H.write(dir .. "/b" .. i .. ".csv", header .. "\n" .. row:sub(2, -2) .. "\n")
      local got = validate.load(f)[1]
      local want = validate.load(FIXTURE)[1]
      local code, out = H.apsearch("validate", f, "--format", "json")
      assert.are.equal(0, code, out)
      local code0, out0 = H.apsearch("validate", H.write(dir .. "/p.csv", header .. "\n" .. first .. "\n"), "--format", "json")
      assert.are.equal(0, code0)
      local json = require "cjson"
      assert.are.same(json.decode(out0).cases[1].predicted, json.decode(out).cases[1].predicted)
      assert.are_not.equal(want.flash_attention, got.flash_attention) -- the spelling really changed
    end
  end)

  it("ignores unnamed trailing columns while they are empty, refuses a value in one", function()
    local header = assert(H.read(FIXTURE)):match("^[^\r\n]*")
    local first = assert(H.read(FIXTURE)):match("\n([^\r\n]*)")
    local ok = H.write(dir .. "/trail.csv", header .. ",,\n" .. first .. ",,\n")
    assert.are.equal(1, #validate.load(ok))
    local ncol = select(2, header:gsub(",", "")) + 2
    local bad = H.write(dir .. "/trailbad.csv", header .. ",\n" .. first .. ",x\n")
    local okk, err = pcall(validate.load, bad)
    assert.is_false(okk)
    assert.are.equal(bad .. ":2: column " .. ncol .. ' has no name in the header but holds "x"', err)
  end)

  it("refuses a semicolon-separated export saying so", function()
    local header = assert(H.read(FIXTURE)):match("^[^\r\n]*"):gsub(",", ";")
    local f = H.write(dir .. "/semi.csv", csvread.BOM .. header .. "\nc1;x\n")
    local code, out, err = H.apsearch("validate", f)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: " .. f .. ":1: the header's fields are separated by ';': apsearch reads "
      .. "comma-separated CSV (export with ',' as the field separator)\n", err)
  end)

  it("exits 2 with file, line and column on malformed CSV, validate and calibrate alike", function()
    local header = assert(H.read(FIXTURE)):match("^[^\r\n]*")
    local bad = H.write(dir .. "/bad.csv", header .. "\nc1,\"never closed\n")
    for _, args in ipairs({ { "validate", bad }, { "calibrate", bad, "-o", dir .. "/c.json" } }) do
      local code, out, err = H.apsearch(table.unpack(args))
      assert.are.equal(2, code, err)
      assert.are.equal("", out)
      assert.truthy(err:find("^apsearch: " .. bad:gsub("%p", "%%%0") .. ":2:4: a quoted field is never closed"), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")))
    end
  end)

  it("exits 2 on a row that cannot be estimated, validate and calibrate alike (calibrate fitted the others)", function()
    local text = assert(H.read(FIXTURE))
    local header, first = text:match("^([^\r\n]*)\r?\n([^\r\n]*)")
    local cols, i = {}, 0
    for name in header:gmatch("[^,]+") do i = i + 1 cols[name] = i end
    local cells = {}
    for v in (first .. ","):gmatch("([^,]*),") do cells[#cells + 1] = v end
    local good = table.concat(cells, ",")
    cells[cols.case_id] = "typo"
    cells[cols.device] = "h100-sxm-80g"
    local bad = H.write(dir .. "/typo.csv", header .. "\n" .. good .. "\n" .. table.concat(cells, ",") .. "\n")
    local code, out, err = H.apsearch("calibrate", bad, "-o", dir .. "/c.json")
    assert.are.equal(2, code, err)
    assert.are.equal("", out)
    assert.truthy(err:find('row typo: device = "h100-sxm-80g": unknown device preset; did you mean "h100-sxm-80gb"?',
      1, true), err)
    assert.truthy(err:find("%(fix or remove the row%)\n$"), err)
    assert.is_nil(io.open(dir .. "/c.json"))
    -- per software stack too (its groups' fits were run under pcall: a
    -- broken row read "stack not fitted")
    code, out, err = H.apsearch("calibrate", bad, "--group", "software", "-o", dir .. "/c.json")
    assert.are.equal(2, code, err)
    assert.truthy(err:find("row typo: device", 1, true), err)
    code = H.apsearch("validate", bad)
    assert.are.equal(2, code)
  end)
end)
