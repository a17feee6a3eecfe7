-- tests/lua/outdir_spec.lua -- `apsearch run --out DIR` writes one result
-- set atomically (lua/apsearch/outdir.lua, docs/outputs.md "Atomic result
-- sets"): DIR is a link to a set directory switched by rename(2); leftovers
-- of interrupted runs are cleaned only when they are apsearch's own; files
-- apsearch did not write are never deleted; a concurrent run is refused.

local cjson = require "cjson"
local lfs = require "lfs"

local BIN = os.getenv("APS_BIN")
local H = require "spec_helpers"
local q, read, write, tmpdir, apsearch = H.q, H.read, H.write, H.tmpdir, H.apsearch

local function ls(dir)
  local names = {}
  for n in lfs.dir(dir) do if n ~= "." and n ~= ".." then names[#names + 1] = n end end
  table.sort(names)
  return names
end

local function mode(p) return lfs.symlinkattributes(p, "mode") end

-- Checks that dir is one complete set and returns its run id and result.
local function check_set(dir)
  assert.are.equal("link", mode(dir))
  local target = lfs.symlinkattributes(dir, "target")
  local name = dir:match("([^/]+)$")
  assert.are.equal("." .. name .. ".apsearch-set-", target:sub(1, #name + 15))
  local marker = read(dir .. "/.apsearch-set")
  local id = marker:match("^apsearch result set\nrun_id (%S+)\n")
  assert.truthy(id, marker)
  local r = cjson.decode(read(dir .. "/result.json"))
  assert.are.equal(id, r.run_id)
  assert.truthy(read(dir .. "/report.html"):find('<meta name="apsearch-run-id" content="' .. id .. '">', 1, true))
  local want = { [".apsearch-set"] = true, launch = true }
  for _, f in ipairs(r.output_files) do
    local rel = f:sub(#dir + 2)
    assert.truthy(read(f), f)
    if rel:match("^launch/") then
      assert.truthy(read(f):find("of the top-" .. #r.top_k_strategies .. ":", 1, true), f)
    else
      want[rel] = true
    end
  end
  local got = {}
  for _, n in ipairs(ls(dir)) do got[n] = true end
  assert.are.same(want, got)
  assert.are.equal(3 * #r.top_k_strategies, #ls(dir .. "/launch"))
  local rows = select(2, read(dir .. "/result.csv"):gsub("\n", ""))
  assert.are.equal(#r.top_k_strategies + 1, rows)
  return id, r, target
end

describe("apsearch run --out: atomic result sets", function()
  setup(function()
    assert.is_string(BIN, "APS_BIN must name the built apsearch binary")
  end)

  it("writes one complete set: DIR links to a set directory with a marker and the run id", function()
    local base = tmpdir()
    local dir = base .. "/out"
    local code, _, err = apsearch("run", "--quiet", "--top-k", "3", "--out", dir)
    assert.are.equal(0, code, err)
    local id, r, target = check_set(dir)
    assert.are.equal(3, #r.top_k_strategies)
    assert.are.same({ ".out.apsearch-lock", target, "out" }, ls(base))
    assert.truthy(id:match("^%d+T%d+Z%-%d+%-%x+$"), id)
  end)

  it("replaces the set with a second run and removes the previous one", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "3", "--out", dir)))
    local id1, _, t1 = check_set(dir)
    local code, _, err = apsearch("run", "--quiet", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code, err)
    local id2, r2, t2 = check_set(dir)
    assert.are_not.equal(id1, id2)
    assert.are_not.equal(t1, t2)
    assert.are.equal(2, #r2.top_k_strategies)
    assert.is_nil(read(dir .. "/launch/rank3_megatron.sh"))
    assert.are.same({ ".out.apsearch-lock", t2, "out" }, ls(base))
  end)

  it("cleans what interrupted runs left, only when it is apsearch's own", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    -- staged but not switched: the marker and part of a set
    local staged = base .. "/.out.apsearch-set-20250101T000000Z-1-abcdef"
    assert(lfs.mkdir(staged)) assert(lfs.mkdir(staged .. "/launch"))
    write(staged .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-1-abcdef\n")
    write(staged .. "/result.csv", "rank,")
    write(staged .. "/launch/rank1_megatron.sh", "#!/bin/sh\n")
    -- killed between mkdir and the marker: empty
    assert(lfs.mkdir(base .. "/.out.apsearch-set-20250101T000000Z-2-000000"))
    -- a temporary link not yet renamed over DIR
    assert(lfs.link(".out.apsearch-set-20250101T000000Z-1-abcdef", base .. "/.out.apsearch-link-x", true))
    -- look-alikes that are not apsearch's: kept
    local nomark = base .. "/.out.apsearch-set-nomarker"
    assert(lfs.mkdir(nomark)) write(nomark .. "/result.json", "mine")
    local withuser = base .. "/.out.apsearch-set-user"
    assert(lfs.mkdir(withuser))
    write(withuser .. "/.apsearch-set", "apsearch result set\nrun_id x\n")
    write(withuser .. "/notes.txt", "mine")
    write(base .. "/.out.apsearch-notes", "mine")

    local code, _, err = apsearch("run", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code, err)
    local _, _, target = check_set(dir)
    assert.are.same({ ".out.apsearch-lock", ".out.apsearch-notes", target, ".out.apsearch-set-nomarker",
      ".out.apsearch-set-user", "out" }, ls(base))
    assert.are.equal("mine", read(nomark .. "/result.json"))
    assert.are.equal("mine", read(withuser .. "/notes.txt"))
    assert.truthy(err:find("kept " .. withuser .. ": it holds files apsearch did not write: notes.txt", 1, true), err)
  end)

  it("never deletes files apsearch did not write", function()
    local base = tmpdir()
    local outside = write(base .. "/outside.sh", "#!/bin/sh\necho mine\n")
    -- a plain directory (the layout of older versions) with a user's
    -- launch file that is a symbolic link to a file outside: refused
    local dir = base .. "/out"
    assert(lfs.mkdir(dir)) assert(lfs.mkdir(dir .. "/launch"))
    write(dir .. "/result.json", "{}")
    assert(lfs.link(outside, dir .. "/launch/rank1_foo.sh", true))
    local code, out, err = apsearch("run", "--quiet", "--out", dir)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find("is a directory with files apsearch did not write (launch/rank1_foo.sh)", 1, true), err)
    assert.truthy(err:find(dir, 1, true), err)
    assert.are.equal("link", mode(dir .. "/launch/rank1_foo.sh"))
    assert.are.equal("{}", read(dir .. "/result.json"))
    assert.are.equal("#!/bin/sh\necho mine\n", read(outside))
    assert.are.same({ "out", "outside.sh" }, ls(base))   -- no lock file either

    -- files a user puts into DIR (through the link) stay, in the old set
    local dir2 = base .. "/o2"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir2)))
    local old = base .. "/" .. lfs.symlinkattributes(dir2, "target")
    assert(lfs.link(outside, dir2 .. "/launch/rank1_foo.sh", true))
    write(dir2 .. "/notes.txt", "mine")
    local c2, _, e2 = apsearch("run", "--top-k", "1", "--out", dir2)
    assert.are.equal(0, c2, e2)
    check_set(dir2)
    assert.truthy(e2:find("kept the previous set " .. old, 1, true), e2)
    assert.are.equal("mine", read(old .. "/notes.txt"))
    assert.are.equal("link", mode(old .. "/launch/rank1_foo.sh"))
    assert.are.equal("#!/bin/sh\necho mine\n", read(outside))

    -- a symbolic link apsearch did not make, a file: refused
    local c3, _, e3 = apsearch("run", "--quiet", "--out", base .. "/outside.sh")
    assert.are.equal(2, c3)
    assert.truthy(e3:find("is a file, not a directory", 1, true), e3)
    assert(lfs.link(base, base .. "/mylink", true))
    local c4, _, e4 = apsearch("run", "--quiet", "--out", base .. "/mylink")
    assert.are.equal(2, c4)
    assert.truthy(e4:find("is a symbolic link apsearch did not make", 1, true), e4)
    assert.are.equal("#!/bin/sh\necho mine\n", read(outside))
  end)

  it("migrates a directory of an older apsearch and replaces an empty one", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert(lfs.mkdir(dir)) assert(lfs.mkdir(dir .. "/launch"))
    write(dir .. "/result.json", "{}")
    write(dir .. "/launch/rank7_megatron.sh", "old")
    local code, _, err = apsearch("run", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("moved the files of an earlier apsearch in " .. dir, 1, true), err)
    local _, _, target = check_set(dir)
    assert.are.same({ ".out.apsearch-lock", target, "out" }, ls(base))

    local empty = base .. "/e/out"
    assert(os.execute("mkdir -p " .. q(empty)))
    assert.are.equal(0, (apsearch("run", "--quiet", "--out", empty)))
    check_set(empty)
  end)

  it("links a migrated set again when a kill fell between its two renames", function()
    local outdir = require "apsearch.outdir"
    local base = tmpdir()
    local set = base .. "/.out.apsearch-set-20250101T000000Z-3-123456"
    assert(lfs.mkdir(set))
    write(set .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-3-123456\nmigrated from a plain directory\n")
    write(set .. "/result.json", "{}")
    local s = outdir.open(base .. "/out")
    assert.are.equal(".out.apsearch-set-20250101T000000Z-3-123456", lfs.symlinkattributes(base .. "/out", "target"))
    s:abort()
    assert.are.equal("{}", read(base .. "/out/result.json"))
    assert.are.same({ ".out.apsearch-lock", ".out.apsearch-set-20250101T000000Z-3-123456", "out" }, ls(base))
  end)

  it("refuses a run while another holds the lock, naming DIR (exit 2)", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    local id = check_set(dir)
    local f = assert(io.open(base .. "/.out.apsearch-lock", "a"))
    assert(lfs.lock(f, "w"))
    local code, out, err = apsearch("run", "--quiet", "--out", dir)
    lfs.unlock(f) f:close()
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: --out: dir: another apsearch run is writing this directory now (lock " .. base ..
      "/.out.apsearch-lock held); run again when it has finished (got \"" .. dir .. "\")\n", err)
    assert.are.equal(id, (check_set(dir)))
  end)

  it("leaves one complete set after concurrent runs", function()
    local base = tmpdir()
    local dir = base .. "/out"
    local H2 = require "spec_helpers"
    local cmd = {}
    for i = 1, 4 do
      cmd[i] = string.format("(cd %s && APSEARCH_ROOT=%s %s run --quiet --top-k %d --out %s >/dev/null 2>%s/err%d; echo $? > %s/rc%d) &",
        q(H2.ROOT), q(H2.ROOT), q(BIN), i, q(dir), q(base), i, q(base), i)
    end
    assert(os.execute(table.concat(cmd, " ") .. " wait"))
    local ok = 0
    for i = 1, 4 do
      local rc = tonumber(read(base .. "/rc" .. i))
      if rc == 0 then ok = ok + 1 else
        assert.are.equal(2, rc)
        assert.truthy(read(base .. "/err" .. i):find("another apsearch run is writing this directory now", 1, true))
        assert.truthy(read(base .. "/err" .. i):find(dir, 1, true))
      end
    end
    assert.is_true(ok >= 1)
    local _, _, target = check_set(dir)
    local sets = 0
    for _, n in ipairs(ls(base)) do if n:match("^%.out%.apsearch%-set%-") then sets = sets + 1 assert.are.equal(target, n) end end
    assert.are.equal(1, sets)
  end)
end)
