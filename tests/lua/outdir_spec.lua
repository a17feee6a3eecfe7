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
  -- a set with no strategy has no launch files, and no launch/
  local want = { [".apsearch-set"] = true, launch = #r.top_k_strategies > 0 or nil }
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
  if want.launch then assert.are.equal(4 * #r.top_k_strategies, #ls(dir .. "/launch")) end
  local rows = select(2, read(dir .. "/result.csv"):gsub("\n", ""))
  assert.are.equal(#r.top_k_strategies + 1, rows)
  return id, r, target
end

describe("core.remove_in_dir: removals in the directory checked, never through a swapped path", function()
  it("removes files, then launch/, relative to the directory it was given; refuses a link or another directory",
    function()
    local core = require "apsearch.core"
    local base = tmpdir()
    local set, victim = base .. "/set", base .. "/victim"
    assert(lfs.mkdir(set)) assert(lfs.mkdir(set .. "/launch")) assert(lfs.mkdir(victim))
    write(set .. "/a.csv", "x") write(set .. "/launch/r1.sh", "x") write(victim .. "/a.csv", "mine")
    local id = core.lstat(set)
    -- swapped for a link to another directory after the check (a
    -- breaker's race deleted a file of the victim's): refused, nothing lost
    assert(os.rename(set, base .. "/set.real"))
    assert(lfs.link(victim, set, true))
    local ok, err = core.remove_in_dir(set, id.dev, id.ino, { "a.csv" })
    assert.is_nil(ok)
    assert.truthy(err, "an error")
    assert.are.equal("mine", read(victim .. "/a.csv"))
    -- ... or for another directory: not the one checked
    os.remove(set)
    assert(lfs.mkdir(set))
    write(set .. "/a.csv", "other")
    ok, err = core.remove_in_dir(set, id.dev, id.ino, { "a.csv" })
    assert.is_nil(ok)
    assert.truthy(err:find("not the directory checked", 1, true), err)
    assert.are.equal("other", read(set .. "/a.csv"))
    -- the directory itself: its files, a launch file, then launch/
    local real = base .. "/set.real"
    assert.is_true(core.remove_in_dir(real, id.dev, id.ino, { "a.csv", "launch/r1.sh", "launch/", "gone.txt" }))
    assert.is_nil((mode(real .. "/a.csv")))
    assert.is_nil((mode(real .. "/launch")))
  end)
end)

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

  it("a run that cannot make its set leaves none of the parent directories it created", function()
    -- a breaker pass (2026-12-05): a name too long for the file system
    -- failed the run and left 21 new directories behind
    local base = tmpdir()
    local dir = base .. "/a/b/c/" .. ("x"):rep(250)
    local code, out, err = apsearch("run", "--quiet", "--top-k", "1", "--out", dir)
    assert.are.equal(2, code, err)
    assert.are.equal("", out)
    assert.truthy(err:find("File name too long", 1, true), err)
    assert.are.same({}, ls(base))
    -- a parent that was there stays, and so does what it holds
    assert(lfs.mkdir(base .. "/keep"))
    write(base .. "/keep/mine.txt", "mine")
    code = apsearch("run", "--quiet", "--top-k", "1", "--out", base .. "/keep/d/" .. ("y"):rep(250))
    assert.are.equal(2, code)
    assert.are.same({ "mine.txt" }, ls(base .. "/keep"))
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

  it("a run where nothing fits writes no empty launch/, and its set replaces and is replaced", function()
    -- a new user's finding (2026-12-07): the set of a no-fit run held an
    -- empty launch/ directory
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    local nofit = { "run", "--quiet", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--out", dir }
    local code, _, err = apsearch(table.unpack(nofit))
    assert.are.equal(1, code, err) -- nothing fits
    local _, r, t = check_set(dir)
    assert.are.same({}, r.top_k_strategies)
    assert.is_nil(mode(dir .. "/launch"))
    assert.are.same({ ".out.apsearch-lock", t, "out" }, ls(base))
    -- and its log names no launch/ (it said "launch/ (0)")
    local code0, _, err0 = apsearch("run", "--model", "llama-3.1-405b", "--cluster", "h100-sxm-80gb:1", "--out",
      base .. "/out0")
    assert.are.equal(1, code0, err0)
    assert.truthy(err0:find("wrote 4 files to " .. base .. "/out0: result.json, result.csv, candidates.csv, " ..
      "report.html\n", 1, true), err0)
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    local _, r2, t2 = check_set(dir)
    assert.are.equal(2, #r2.top_k_strategies)
    local others = ls(base)
    for i = #others, 1, -1 do if others[i]:find("out0", 1, true) then table.remove(others, i) end end
    assert.are.same({ ".out.apsearch-lock", t2, "out" }, others)
  end)

  it("cleans what interrupted runs left, only as far as their manifest lists it", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    -- staged but not switched: the marker lists what was being written
    local staged = base .. "/.out.apsearch-set-20250101T000000Z-1-abcdef"
    assert(lfs.mkdir(staged)) assert(lfs.mkdir(staged .. "/launch"))
    write(staged .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-1-abcdef\nstarted x\nout out\n" ..
      "file launch/rank1_megatron.sh\nfile result.csv\n")
    write(staged .. "/result.csv", "rank,")
    write(staged .. "/launch/rank1_megatron.sh", "#!/bin/sh\n")
    -- killed between mkdir and the marker: empty
    assert(lfs.mkdir(base .. "/.out.apsearch-set-20250101T000000Z-2-000000"))
    -- killed while writing the marker: an empty one, and a cut one
    assert(lfs.mkdir(base .. "/.out.apsearch-set-20250101T000000Z-7-000000"))
    write(base .. "/.out.apsearch-set-20250101T000000Z-7-000000/.apsearch-set", "")
    assert(lfs.mkdir(base .. "/.out.apsearch-set-20250101T000000Z-8-000000"))
    write(base .. "/.out.apsearch-set-20250101T000000Z-8-000000/.apsearch-set", "apsearch res")
    -- a temporary link not yet swapped with DIR
    assert(lfs.link(".out.apsearch-set-20250101T000000Z-1-abcdef", base .. "/.out.apsearch-link-20250101T000000Z-1-abcdef", true))
    -- a set whose manifest does not list a file in it (launch/rank9_megatron.sh has an apsearch name)
    local listed = base .. "/.out.apsearch-set-20250101T000000Z-4-aaaaaa"
    assert(lfs.mkdir(listed)) assert(lfs.mkdir(listed .. "/launch"))
    write(listed .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-4-aaaaaa\nout out\nfile result.csv\n")
    write(listed .. "/result.csv", "rank,")
    write(listed .. "/launch/rank9_megatron.sh", "mine")
    -- a set of an older apsearch (no file list) and one of another --out
    local older = base .. "/.out.apsearch-set-20250101T000000Z-5-bbbbbb"
    assert(lfs.mkdir(older))
    write(older .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-5-bbbbbb\n")
    write(older .. "/result.json", "{}")
    local other = base .. "/.out.apsearch-set-20250101T000000Z-6-cccccc"
    assert(lfs.mkdir(other))
    write(other .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-6-cccccc\nout out2\nfile result.json\n")
    write(other .. "/result.json", "{}")
    -- look-alikes that are not named as apsearch names its sets: not touched, not logged
    local nomark = base .. "/.out.apsearch-set-nomarker"
    assert(lfs.mkdir(nomark)) write(nomark .. "/result.json", "mine")
    assert(lfs.link("elsewhere", base .. "/.out.apsearch-link-x", true))
    write(base .. "/.out.apsearch-notes", "mine")

    local code, _, err = apsearch("run", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code, err)
    local _, _, target = check_set(dir)
    assert.are.same({ ".out.apsearch-link-x", ".out.apsearch-lock", ".out.apsearch-notes",
      ".out.apsearch-set-20250101T000000Z-4-aaaaaa", ".out.apsearch-set-20250101T000000Z-5-bbbbbb",
      ".out.apsearch-set-20250101T000000Z-6-cccccc", target, ".out.apsearch-set-nomarker", "out" }, ls(base))
    assert.are.equal("mine", read(nomark .. "/result.json"))
    assert.are.equal("mine", read(listed .. "/launch/rank9_megatron.sh"))
    assert.are.equal("rank,", read(listed .. "/result.csv"))
    assert.are.equal("{}", read(older .. "/result.json"))
    assert.are.equal("{}", read(other .. "/result.json"))
    assert.truthy(err:find("kept " .. listed .. ": it holds files apsearch did not write or that changed since: " ..
      "launch/rank9_megatron.sh", 1, true), err)
    assert.truthy(err:find("kept " .. older .. ": written by an older apsearch", 1, true), err)
    assert.is_nil(err:find(other, 1, true), err)
    assert.is_nil(err:find("nomarker", 1, true), err)
    -- what it removed, it says (it was silent: breaker pass, 2026-12-05)
    assert.is_nil(lfs.attributes(staged))
    assert.truthy(err:find("removed " .. staged .. ", the set directory of an interrupted run", 1, true), err)
  end)

  it("keeps a set another link next to DIR points to: a result kept by renaming its link, or linked again", function()
    local base = tmpdir()
    local dir = base .. "/res"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir)))
    -- mv res keep: a working link to a complete set (a breaker's round 13: it was removed as an
    -- interrupted run's)
    assert(os.rename(dir, base .. "/keep"))
    local kept = lfs.symlinkattributes(base .. "/keep", "target")
    local code, _, err = apsearch("run", "--top-k", "1", "--out", dir)
    assert.are.equal(0, code, err)
    check_set(dir)
    assert.truthy(read(base .. "/keep/result.json"):find('"top_k_strategies"', 1, true))
    assert.truthy(err:find("kept " .. base .. "/" .. kept .. ": the link " .. base .. "/keep points to it", 1, true), err)
    -- ln -s to the set DIR shows, then a run of DIR: the previous set stays for the other link
    local now = lfs.symlinkattributes(dir, "target")
    assert(lfs.link(now, base .. "/also", true))
    code, _, err = apsearch("run", "--top-k", "1", "--out", dir)
    assert.are.equal(0, code, err)
    assert.truthy(read(base .. "/also/result.json"):find('"top_k_strategies"', 1, true))
    assert.truthy(err:find("kept the previous set " .. base .. "/" .. now .. ": the link " .. base ..
      "/also points to it", 1, true), err)
  end)

  it("cleans a set killed while its unnamed file had a name (no O_TMPFILE: mkostemp, then unlink)", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "2", "--out", dir)))
    local function staged(id, committed, tmpname)
      local p = base .. "/.out.apsearch-set-20250101T000000Z-" .. id
      assert(lfs.mkdir(p)) assert(lfs.mkdir(p .. "/launch"))
      write(p .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-" .. id .. "\nstarted x\nout out\n" ..
        "file candidates.csv\n" .. (committed and "committed\n" or ""))
      write(p .. "/candidates.csv", "index,")
      write(p .. "/" .. tmpname, "1,feasible")
      return p
    end
    -- killed in the instant: removed with its set
    local killed = staged("1-aaaaaa", false, ".apsearch-tmp-Ab12Cd")
    -- in a committed set, or not of that name: a user's file, kept
    local done = staged("2-bbbbbb", true, ".apsearch-tmp-Ab12Cd")
    local other = staged("3-cccccc", false, ".apsearch-tmp-Ab12Cd7")
    local code, _, err = apsearch("run", "--top-k", "2", "--out", dir)
    assert.are.equal(0, code, err)
    assert.is_nil(mode(killed))
    assert.are.equal("1,feasible", read(done .. "/.apsearch-tmp-Ab12Cd"))
    assert.are.equal("1,feasible", read(other .. "/.apsearch-tmp-Ab12Cd7"))
    assert.truthy(err:find("kept " .. other .. ": it holds files apsearch did not write", 1, true), err)
  end)

  it("a write-back error before commit stops the run, even one another process's syncfs saw first", function()
    -- a loop-mounted ext2 of 64 MiB over a 4 MiB tmpfs (needs root, tmpfs
    -- and a loop device): the set directory, its marker and launch/ reach
    -- the disk first; then a file fills the tmpfs, so that the data of the
    -- set's next file is written but cannot be written back; then the
    -- space comes back, and what commit rewrites and fsyncs itself (the
    -- marker, the directories, in blocks the tmpfs holds) succeeds
    local base = tmpdir()
    local lo, tiny = base .. "/lo", base .. "/tiny"
    local made = os.execute(string.format("mkdir -p %s %s && mount -t tmpfs -o size=4m tmpfs %s 2>/dev/null && " ..
      "truncate -s 64M %s/img && mkfs.ext2 -q -F %s/img >/dev/null 2>&1 && " ..
      "mount -o loop,errors=continue %s/img %s 2>/dev/null", q(tiny), q(lo), q(tiny), q(tiny), q(tiny), q(tiny), q(lo)))
    finally(function()
      os.execute(string.format("umount %s 2>/dev/null; umount %s 2>/dev/null", q(lo), q(tiny)))
    end)
    if not made then
      pending("needs root, tmpfs and a loop device")
      return
    end
    local core = require "apsearch.core"
    local set = require("apsearch.outdir").open(lo .. "/o")
    assert(core.syncfs(lo))
    os.execute(string.format("head -c 8388608 /dev/zero > %s/pad 2>/dev/null", q(tiny)))
    assert(set:write("result.json", string.rep("x", 8 << 20)))
    -- another process flushes the file system and is told of the error
    assert.is_nil((core.syncfs(lo)))
    os.remove(tiny .. "/pad")
    local ok, err = pcall(set.commit, set)
    assert.is_false(ok, "committed a set whose result.json did not reach the disk")
    assert.truthy(tostring(err):find('^%-%-out: dir: cannot flush the set [^\n]* to disk: ' ..
      '[^\n]*%(got "[^\n]*/o"%)$'), err)
    assert.is_nil(mode(lo .. "/o"))
  end)

  it("never deletes files apsearch did not write", function()
    local base = tmpdir()
    local outside = write(base .. "/outside.sh", "#!/bin/sh\necho mine\n")
    -- a plain directory, even one holding only names apsearch uses (the
    -- user's own result.json and report.html): refused, nothing moved
    local dir = base .. "/out"
    assert(lfs.mkdir(dir)) assert(lfs.mkdir(dir .. "/launch"))
    write(dir .. "/result.json", "{}")
    write(dir .. "/report.html", "mine")
    assert(lfs.link(outside, dir .. "/launch/rank1_foo.sh", true))
    local code, out, err = apsearch("run", "--quiet", "--out", dir)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find("is a directory with files apsearch did not write (launch, report.html, result.json)", 1, true), err)
    assert.truthy(err:find(dir, 1, true), err)
    assert.are.equal("directory", mode(dir))
    assert.are.equal("link", mode(dir .. "/launch/rank1_foo.sh"))
    assert.are.equal("{}", read(dir .. "/result.json"))
    assert.are.equal("mine", read(dir .. "/report.html"))
    assert.are.equal("#!/bin/sh\necho mine\n", read(outside))
    assert.are.same({ "out", "outside.sh" }, ls(base))   -- no lock file either

    -- files a user puts into DIR (through the link) stay, in the old set:
    -- a new file, one with an apsearch launch name, a hand-edited launch file
    local dir2 = base .. "/o2"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir2)))
    local old = base .. "/" .. lfs.symlinkattributes(dir2, "target")
    assert(lfs.link(outside, dir2 .. "/launch/rank1_foo.sh", true))
    write(dir2 .. "/notes.txt", "mine")
    write(dir2 .. "/launch/rank5_megatron.sh", "mine")
    local c2, _, e2 = apsearch("run", "--top-k", "1", "--out", dir2)
    assert.are.equal(0, c2, e2)
    check_set(dir2)
    assert.truthy(e2:find("kept the previous set " .. old .. ": it holds files apsearch did not write or that " ..
      "changed since: launch/rank1_foo.sh, launch/rank5_megatron.sh, notes.txt", 1, true), e2)
    assert.are.equal("mine", read(old .. "/notes.txt"))
    assert.are.equal("mine", read(old .. "/launch/rank5_megatron.sh"))
    assert.are.equal("link", mode(old .. "/launch/rank1_foo.sh"))
    assert.are.equal("#!/bin/sh\necho mine\n", read(outside))

    local prev = base .. "/" .. lfs.symlinkattributes(dir2, "target")
    write(dir2 .. "/launch/rank1_megatron.sh", "#!/bin/sh\n# my edit\n")
    local c5, _, e5 = apsearch("run", "--top-k", "1", "--out", dir2)
    assert.are.equal(0, c5, e5)
    assert.truthy(e5:find("kept the previous set " .. prev .. ": it holds files apsearch did not write or that " ..
      "changed since: launch/rank1_megatron.sh", 1, true), e5)
    assert.are.equal("#!/bin/sh\n# my edit\n", read(prev .. "/launch/rank1_megatron.sh"))

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

  it("replaces an empty directory and keeps its permissions, run after run", function()
    local base = tmpdir()
    local empty = base .. "/e/out"
    assert(os.execute("mkdir -p " .. q(empty) .. " && chmod 0700 " .. q(empty)))
    assert.are.equal(0, (apsearch("run", "--quiet", "--out", empty)))
    local _, _, t1 = check_set(empty)
    assert.are.equal("rwx------", lfs.attributes(base .. "/e/" .. t1, "permissions"))
    assert.are.equal("rwx------", lfs.attributes(base .. "/e/" .. t1 .. "/launch", "permissions"))
    assert.are.equal(0, (apsearch("run", "--quiet", "--out", empty)))
    local _, _, t2 = check_set(empty)
    assert.are_not.equal(t1, t2)
    assert.are.equal("rwx------", lfs.attributes(base .. "/e/" .. t2, "permissions"))
    -- a chmod of DIR (its set) carries to the next run
    assert(os.execute("chmod 0750 " .. q(empty .. "/")))
    assert.are.equal(0, (apsearch("run", "--quiet", "--out", empty)))
    local _, _, t3 = check_set(empty)
    assert.are.equal("rwxr-x---", lfs.attributes(base .. "/e/" .. t3, "permissions"))
  end)

  it("refuses a mount point before the search, and says to give a path inside it", function()
    -- an empty tmpfs or bind mount at DIR searched, then failed its rename
    -- with EBUSY and printed nothing (new-user pass, 2026-12-07)
    local outdir = require "apsearch.outdir"
    assert.is_true(outdir.is_mount_point("/proc"))
    local base = tmpdir()
    assert(os.execute("mkdir -p " .. q(base .. "/plain")))
    assert.is_false(outdir.is_mount_point(base .. "/plain"))
    -- a real mount where the tests run as root (CI containers do)
    local mnt = base .. "/mnt"
    if not os.execute("mkdir -p " .. q(mnt) .. " && mount -t tmpfs none " .. q(mnt) .. " 2>/dev/null") then
      return
    end
    local code, out, err = apsearch("run", "--quiet", "--out", mnt)
    -- a volume holding lost+found says the same, not "move the files away"
    os.execute("mkdir " .. q(mnt .. "/lost+found"))
    local code1, _, err1 = apsearch("run", "--quiet", "--out", mnt)
    os.execute("umount " .. q(mnt))
    assert.are.equal(2, code1)
    assert.are.equal(err, err1)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: --out: dir: is a mount point, which apsearch cannot replace by the link to its " ..
      "set (the rename would fail after the search): give a path inside it, e.g. " .. mnt .. "/apsearch (got \"" ..
      mnt .. "\")\n", err)
    assert.are.same({ "mnt", "plain" }, ls(base))
    -- a mount hidden by a later mount on its parent: the directory now at
    -- that path is the later file system's own, and is used (breaker
    -- pass, 2026-12-07: it was refused)
    local a = base .. "/A"
    assert(os.execute("mkdir -p " .. q(a .. "/B") .. " && mount -t tmpfs none " .. q(a .. "/B") ..
      " && mount -t tmpfs none " .. q(a) .. " && mkdir " .. q(a .. "/B")))
    assert.is_false(outdir.is_mount_point(a .. "/B"))
    local code2 = apsearch("run", "--quiet", "--out", a .. "/B")
    os.execute("umount " .. q(a) .. " && umount " .. q(a .. "/B"))
    assert.are.equal(0, code2)
    -- an empty directory of an overlay's lower layer (rename gives EXDEV:
    -- the swap falls back to rmdir and rename, as without renameat2)
    local o = base .. "/o"
    assert(os.execute("mkdir -p " .. q(o .. "/lo/e") .. " " .. q(o .. "/up") .. " " .. q(o .. "/wk") .. " " ..
      q(o .. "/ov")))
    if os.execute("mount -t overlay overlay -o lowerdir=" .. q(o .. "/lo") .. ",upperdir=" .. q(o .. "/up") ..
        ",workdir=" .. q(o .. "/wk") .. " " .. q(o .. "/ov") .. " 2>/dev/null") then
      local code3, _, err3 = apsearch("run", "--quiet", "--out", o .. "/ov/e")
      local id = code3 == 0 and check_set(o .. "/ov/e")
      os.execute("umount " .. q(o .. "/ov"))
      assert.are.equal(0, code3, err3)
      assert.truthy(id)
    end
  end)

  it("never replaces what a user puts at DIR while it runs, and leaves the previous set", function()
    local outdir = require "apsearch.outdir"
    local base = tmpdir()
    -- DIR missing at the start, a file there at the end
    local s = outdir.open(base .. "/out")
    assert(s:write("result.json", "{}"))
    write(base .. "/out", "mine")
    local ok, err = pcall(s.commit, s)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("changed while apsearch ran", 1, true), err)
    assert.are.equal("mine", read(base .. "/out"))
    assert.are.same({ ".out.apsearch-lock", "out" }, ls(base))

    -- DIR a link to the previous set at the start, the user's directory at the end
    local dir = base .. "/o2"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir)))
    local _, _, prev = check_set(dir)
    local s2 = outdir.open(dir)
    assert(s2:write("result.json", "{}"))
    assert(os.remove(dir)) assert(lfs.mkdir(dir)) write(dir .. "/mine.txt", "mine")
    local ok2, err2 = pcall(s2.commit, s2)
    assert.is_false(ok2)
    assert.truthy(tostring(err2):find("changed while apsearch ran", 1, true), err2)
    assert.are.equal("directory", mode(dir))
    assert.are.equal("mine", read(dir .. "/mine.txt"))
    assert.are.same({ ".o2.apsearch-lock", prev, ".out.apsearch-lock", "o2", "out" }, ls(base))

    -- an empty directory at the start, a file in it at the end
    local e = base .. "/o3"
    assert(lfs.mkdir(e))
    local s3 = outdir.open(e)
    write(e .. "/mine.txt", "mine")
    local ok3 = pcall(s3.commit, s3)
    assert.is_false(ok3)
    assert.are.equal("mine", read(e .. "/mine.txt"))
  end)

  it("deletes nothing a planted marker names outside its set, and follows no link to delete", function()
    local base = tmpdir()
    local victim = write(base .. "/victim.txt", "precious")
    local abs = write(base .. "/abs.txt", "precious")
    local shared = base .. "/shared"
    assert(lfs.mkdir(shared))
    local planted = shared .. "/.out.apsearch-set-20250101T000000Z-1-abcdef"
    assert(lfs.mkdir(planted))
    write(planted .. "/.apsearch-set", "apsearch result set\nrun_id 20250101T000000Z-1-abcdef\nout out\n" ..
      "file ../victim.txt\nfile " .. abs .. "\nfile launch/../../victim.txt\n")
    local code, _, err = apsearch("run", "--top-k", "1", "--out", shared .. "/out")
    assert.are.equal(0, code, err)
    assert.are.equal("precious", read(victim))
    assert.are.equal("precious", read(abs))
    assert.truthy(err:find("kept " .. planted .. ": its marker lists ../victim.txt, a path no result set holds", 1, true), err)

    -- the previous set moved away by the user and left as a link: not followed
    local dir = base .. "/o"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir)))
    local set = base .. "/" .. lfs.symlinkattributes(dir, "target")
    assert(os.rename(set, base .. "/kept"))
    assert(lfs.link(base .. "/kept", set, true))
    local c2, _, e2 = apsearch("run", "--top-k", "1", "--out", dir)
    assert.are.equal(0, c2, e2)
    assert.truthy(read(base .. "/kept/result.json"))
    assert.truthy(read(base .. "/kept/launch/rank1_megatron.sh") or read(base .. "/kept/launch/rank1_torchtitan.py"))
    assert.truthy(e2:find("it is a link, not a set directory: apsearch follows no link to delete", 1, true), e2)
  end)

  it("keeps a launch file edited within the same second at the same size", function()
    local base = tmpdir()
    local dir = base .. "/out"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir)))
    local prev = base .. "/" .. lfs.symlinkattributes(dir, "target")
    local f = dir .. "/launch/rank1_torchtitan.py"
    local text = read(f)
    write(f, (text:gsub("#", "%%", 1)))   -- one byte changed, same size, same second
    local code, _, err = apsearch("run", "--top-k", "1", "--out", dir)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("kept the previous set " .. prev, 1, true), err)
  end)

  it("keeps a shared directory's group, setgid bit and read-only mode; refuses a name with a newline", function()
    local base = tmpdir()
    local dir = base .. "/grp"
    assert(lfs.mkdir(dir))
    local core = require "apsearch.core"
    -- a group the process may give (root: any; else its own)
    local gid = core.lstat(base).gid
    assert(core.chown(dir, -1, gid))
    assert(core.chmod(dir, 1528))            -- 02770
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", dir)))
    local st = core.lstat(base .. "/" .. lfs.symlinkattributes(dir, "target"))
    assert.are.same({ 1528, gid }, { st.perm, st.gid })
    local ro = base .. "/ro"
    assert(lfs.mkdir(ro))
    assert(core.chmod(ro, 320))              -- 0500
    local code, _, err = apsearch("run", "--quiet", "--top-k", "1", "--out", ro)
    if code == 0 then                        -- root may write into it
      assert.are.equal(320, core.lstat(base .. "/" .. lfs.symlinkattributes(ro, "target")).perm)
    else
      assert.truthy(err:find("cannot write the set directory", 1, true), err)
      assert.is_nil(err:find(": nil", 1, true), err)
    end
    local c3, _, e3 = apsearch("run", "--quiet", "--out", base .. "/a\nb")
    assert.are.equal(2, c3)
    assert.truthy(e3:find("must not hold a control character", 1, true), e3)
  end)

  it("leaves a new empty directory a user made at DIR during the run", function()
    local outdir = require "apsearch.outdir"
    local base = tmpdir()
    local dir = base .. "/e"
    assert(lfs.mkdir(dir))
    local s = outdir.open(dir)
    assert(lfs.rmdir(dir)) assert(lfs.mkdir(dir))   -- another, empty
    local ok, err = pcall(s.commit, s)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("changed while apsearch ran", 1, true), err)
    assert.are.equal("directory", mode(dir))
  end)

  it("does not touch the sets of a neighbouring --out whose name extends DIR's", function()
    local base = tmpdir()
    local near = base .. "/x.apsearch-set-20250101T000000Z-1-abcdef"
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", near)))
    local id = check_set(near)
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", base .. "/x")))
    assert.are.equal(0, (apsearch("run", "--quiet", "--top-k", "1", "--out", base .. "/x")))
    assert.are.equal(id, (check_set(near)))
    check_set(base .. "/x")
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
