--- Atomic result sets for `apsearch run --out DIR` (docs/outputs.md,
-- "Atomic result sets").
--
-- DIR is a symbolic link to a set directory next to it, `.NAME.apsearch-
-- set-<run id>` (NAME = the last component of DIR); a run
--
-- 1. takes a lock on `.NAME.apsearch-lock` (fcntl, released by the kernel
--    when the process ends, even by kill -9); a run that finds it held
--    stops with exit status 2 naming DIR;
-- 2. cleans what interrupted runs of the same DIR left (set directories
--    DIR does not point to, temporary links), each only as far as the
--    set's manifest (its marker file `.apsearch-set`) lists it;
-- 3. writes the whole set into a fresh set directory, with the permissions
--    of the directory DIR showed (the previous set, or the empty directory
--    the user made): the marker first, then each file, its name appended
--    to the marker before the file is created; at the end the size and
--    modification time of every file, after one syncfs of the file system
--    (every file's data and name on disk in one journal commit, not one
--    per file; by the set directory's descriptor, opened before its first
--    file: a write-back error since is reported), then fsyncs the marker
--    and the directories;
-- 4. makes a temporary link to it and swaps it with DIR (renameat2
--    RENAME_EXCHANGE; RENAME_NOREPLACE when DIR did not exist): atomic,
--    and what comes back is removed only when it is what DIR was when the
--    run started (the previous link, the empty directory); anything else
--    is swapped back and the run stops with exit status 2.  Then it
--    removes the previous set under the rule of step 2.
--
-- So DIR always shows one complete set: the new one or the previous one.
-- A set directory is removed only when everything in it is listed in its
-- manifest, unchanged since the run recorded it (size and modification
-- time), and the manifest names this DIR; otherwise it is kept whole and
-- logged.  An empty directory at DIR is replaced (not a mount point:
-- refused before the search, M.is_mount_point); any other directory,
-- file or symbolic link is refused with exit status 2: apsearch never
-- moves, replaces or deletes a path it did not create.
-- @module apsearch.outdir
local lfs = require "lfs"
local util = require "apsearch.util"

local M = {}

--- Name of the marker (manifest) file in every set directory.
M.MARKER = ".apsearch-set"
local MARKER_HEAD = "apsearch result set\n"
--- Pattern of a run id: UTC time, process id, 24 random bits.
M.ID_PATTERN = "^%d+T%d+Z%-%d+%-%x+$"
-- names listed in the log when a directory is refused or kept
local LIST_MAX = 5

local has_core, core = pcall(require, "apsearch.core")
if not has_core or type(core) ~= "table" or not core.fsync then core = nil end

-- lock file handles held by this process (a collected handle would be
-- closed, and closing it drops the lock)
local held = {}

local function fail(problem, dir) util.fail("--out", "dir", problem, dir) end

local function mode_of(path) return lfs.symlinkattributes(path, "mode") end

local function sync(path)
  if not core then return true end
  return core.fsync(path)
end

-- "a, b, c and 4 more"
local function some(names)
  local shown = {}
  for i = 1, math.min(#names, LIST_MAX) do shown[i] = names[i] end
  local s = util.join(shown)
  if #names > LIST_MAX then s = s .. " and " .. (#names - LIST_MAX) .. " more" end
  return s
end

--- Owner permissions added while apsearch writes into a set directory
-- (the directory's own bits are set when the set is sealed).
local OWNER_RWX = 448 -- 0700

-- What a directory shows the world: permission bits (setgid and sticky
-- included), owner and group; through a link, its target's.  nil
-- without the core.
local function access_of(path)
  if not core then return nil end
  local target = mode_of(path) == "link" and util.join_path(util.dirname(path),
    lfs.symlinkattributes(path, "target") or "") or path
  local st = core.lstat(target)
  if not st then return nil end
  return { perm = st.perm, uid = st.uid, gid = st.gid, dev = st.dev, ino = st.ino, mtime = st.mtime_ns }
end

-- A name a set can hold: a file at its top or in its launch/ directory,
-- no other directory, no "." or ".." and no control character (a marker
-- naming anything else was not written by apsearch).
local function set_name(rel)
  if rel:find("%c") then return false end
  local leaf = rel:match("^launch/([^/]+)$") or rel:match("^([^/]+)$")
  return leaf ~= nil and leaf ~= "." and leaf ~= ".."
end

--- Reads a set directory's manifest.
-- @tparam string setdir
-- @treturn table|nil `{id, out, files = {rel...}, listed = {[rel] = true},
--   committed = boolean, stat = {[rel] = stamp}, foreign = rel|nil (a
--   listed name a set cannot hold)}`; nil without a marker whose first
--   line is apsearch's
function M.read_manifest(setdir)
  local p = util.join_path(setdir, M.MARKER)
  if mode_of(p) ~= "file" then return nil end
  local s = util.read_file(p)
  if not s or s:sub(1, #MARKER_HEAD) ~= MARKER_HEAD then return nil end
  local m = { files = {}, listed = {}, stat = {}, committed = false }
  for line in s:gmatch("[^\n]+") do
    local k, v = line:match("^(%S+) (.*)$")
    if k == "run_id" then m.id = v
    elseif k == "out" then m.out = v
    elseif k == "file" and not set_name(v) then m.foreign = m.foreign or v
    elseif k == "file" and not m.listed[v] then m.listed[v] = true m.files[#m.files + 1] = v
    elseif k == "stat" then
      local st, rel = v:match("^([%d ]+%d) (%S+)$")
      if rel then m.stat[rel] = st end
    elseif line == "committed" then m.committed = true end
  end
  return m
end

-- The stamp of a regular file, nil for anything else: "size mtime ctime
-- inode" to the nanosecond (an edit in the same second, of the same
-- size, changes it; so does any chmod or replacement); without the core,
-- size and mtime in seconds.
local function stat_of(p)
  if core then
    local st = core.lstat(p)
    if not st or st.type ~= "file" then return nil end
    return string.format("%d %d %d %d", st.size, st.mtime_ns, st.ctime_ns, st.ino)
  end
  local a = lfs.symlinkattributes(p)
  if not a or a.mode ~= "file" then return nil end
  return string.format("%d %d", a.size, a.modification)
end

-- The name core.fd_tmpfile gives its file for an instant where the file
-- system has no O_TMPFILE (mkostemp, then unlink): a run killed between
-- the two leaves it in the set it was writing.
local TMP_NAME = "^%.apsearch%-tmp%-" .. ("[%w]"):rep(6) .. "$"

-- What in setdir the manifest m does not allow removing: entries it does
-- not list, and listed files changed since the run recorded them; and the
-- temporary files (TMP_NAME) of an uncommitted set, removable with it.
local function not_ours(setdir, m)
  local names, err = util.listdir(setdir)
  if not names then return nil, err end
  local extra, tmps = {}, {}
  local function check(rel)
    local p = util.join_path(setdir, rel)
    if rel == M.MARKER then return end
    if not m.committed and rel:find(TMP_NAME) and stat_of(p) then
      tmps[#tmps + 1] = rel
      return
    end
    if rel == "launch" and mode_of(p) == "directory" then
      for _, l in ipairs(util.listdir(p) or { "?" }) do check("launch/" .. l) end
      return
    end
    local st = stat_of(p)
    if not (m.listed[rel] and st and (not m.committed or m.stat[rel] == st)) then
      extra[#extra + 1] = rel
    end
  end
  for _, n in ipairs(names) do check(n) end
  table.sort(extra)
  return extra, tmps
end

-- What lstat says of path ({type, dev, ino}; without the core module,
-- the type alone), nil when nothing is there.
local function identity(path)
  if core then return core.lstat(path) end
  local t = mode_of(path)
  return t and { type = t == "link" and "link" or t } or nil
end

-- Removes names in order (files of setdir, "launch/<f>" of its launch
-- directory, "launch/" that directory) in the directory id identifies:
-- relative to a descriptor of it (core.remove_in_dir), or by path without
-- the core.
local function remove_names(setdir, id, names)
  if core then return core.remove_in_dir(setdir, id.dev, id.ino, names) end
  for _, rel in ipairs(names) do
    if rel:sub(-1) == "/" then lfs.rmdir(util.join_path(setdir, rel:sub(1, -2)))
    else os.remove(util.join_path(setdir, rel)) end
  end
  return true
end

--- Removes a set directory a run was killed in while writing its marker:
-- nothing in it but the marker, and the marker a beginning of what
-- apsearch writes first (its header; empty when the kill fell between the
-- open and the write).
-- @tparam string setdir
-- @treturn boolean true when removed
function M.remove_unfinished(setdir)
  local id = identity(setdir)
  if not id or id.type ~= "directory" then return false end
  local names = util.listdir(setdir)
  if not (names and #names == 1 and names[1] == M.MARKER) then return false end
  local p = util.join_path(setdir, M.MARKER)
  if mode_of(p) ~= "file" then return false end
  local s = util.read_file(p) or ""
  local head = s:sub(1, #MARKER_HEAD)
  if MARKER_HEAD:sub(1, #head) ~= head then return false end
  if not remove_names(setdir, id, { M.MARKER }) then return false end
  return lfs.rmdir(setdir) ~= nil
end

--- Removes a set directory of DIR's: only when its manifest names DIR
-- (`out`) and lists everything in it, unchanged since it was recorded;
-- the marker goes last, so an interrupted removal is finished by the next
-- run.  A directory without a marker is removed only when empty (a run
-- killed between mkdir and its marker).
-- @tparam string setdir
-- @tparam string name DIR's last component
-- @treturn boolean true when removed
-- @treturn[opt] string why it was kept
function M.remove_set(setdir, name)
  -- the directory checked below, by identity: the removal is made in it
  -- and nowhere else, whatever its path names by then (core.remove_in_dir)
  local id = identity(setdir)
  if not id or id.type ~= "directory" then
    return false, "it is a " .. tostring(mode_of(setdir)) .. ", not a set directory: apsearch follows no link to delete"
  end
  local m = M.read_manifest(setdir)
  if not m then
    if lfs.rmdir(setdir) or M.remove_unfinished(setdir) then return true end
    return false, "no apsearch marker in it"
  end
  if m.foreign then
    return false, "its marker lists " .. m.foreign .. ", a path no result set holds: not apsearch's"
  end
  if m.out ~= name then
    return false, m.out and ("it is the set of --out " .. m.out) or
      "written by an older apsearch (no file list in its marker); remove it yourself when you no longer need it"
  end
  local extra, tmps = not_ours(setdir, m)
  if not extra then return false, tostring(tmps) end
  if #extra > 0 then
    return false, "it holds files apsearch did not write or that changed since: " .. some(extra)
  end
  local names = {}
  for _, rel in ipairs(tmps) do names[#names + 1] = rel end
  for i = #m.files, 1, -1 do names[#names + 1] = m.files[i] end
  names[#names + 1] = "launch/"
  names[#names + 1] = M.MARKER
  local removed, gone = remove_names(setdir, id, names)
  if not removed then return false, tostring(gone) end
  local ok, rerr = lfs.rmdir(setdir)
  if not ok then return false, tostring(rerr) end
  return true
end

local function new_id()
  local pid = core and core.getpid() or 0
  return string.format("%s-%d-%06x", os.date("!%Y%m%dT%H%M%SZ"), pid, math.random(0, 0xffffff))
end

-- The run id in a name `<prefix><kind>-<id>`, nil unless exactly so.
local function id_in(n, prefix, kind)
  local head = prefix .. kind .. "-"
  if n:sub(1, #head) ~= head then return nil end
  local id = n:sub(#head + 1)
  return id:match(M.ID_PATTERN) and id or nil
end

--- Whether the directory at `d` is a mount point: on another device
-- than its parent, or (a bind mount of the same file system, as a
-- container's volume) a mount point /proc/self/mountinfo lists (field 5,
-- octal escapes as the kernel writes them), unless a mount on one of its
-- ancestors listed after it hides it (the directory then seen at `d` is
-- the later file system's own).  rename(2) over a mount point fails with
-- EBUSY.
-- @tparam string d an existing directory, its parent resolved (M.open)
-- @treturn boolean
function M.is_mount_point(d)
  local dev, pdev = lfs.attributes(d, "dev"), lfs.attributes(util.dirname(d), "dev")
  if dev and pdev and dev ~= pdev then return true end
  local real = core and core.realpath(d) or d
  local f = io.open("/proc/self/mountinfo", "r")
  if not f then return false end
  local mounted = false
  for line in f:lines() do
    local point = line:match("^%S+ %S+ %S+ %S+ (%S+)")
    point = point and point:gsub("\\(%d%d%d)", function(o) return string.char(tonumber(o, 8)) end)
    if point == real then
      mounted = true
    elseif point and real:sub(1, #point + 1) == (point == "/" and "/" or point .. "/") then
      mounted = false -- mounted over an ancestor after: hidden
    end
  end
  f:close()
  return mounted
end

-- What DIR (at path d) is: "none", "link" (to the set directory
-- returned), "empty" (a plain empty directory); anything else raises,
-- naming DIR as the user gave it (shown), closing s if given.
local function classify(d, prefix, s, shown)
  local function refuse(problem)
    if s then s:close() end
    fail(problem, shown or d)
  end
  local dm = mode_of(d)
  if dm == nil then return "none" end
  if dm == "link" then
    local target = lfs.symlinkattributes(d, "target")
    if type(target) ~= "string" or not id_in(target, prefix, "set") then
      refuse("is a symbolic link apsearch did not make (to " .. tostring(target) ..
        "); give its target or another directory")
    end
    return "link", target
  elseif dm == "directory" then
    local names, err = util.listdir(d)
    if not names then refuse("cannot list: " .. tostring(err)) end
    if M.is_mount_point(d) then -- empty or not: a volume holding lost+found
      refuse("is a mount point, which apsearch cannot replace by the link to its set (the rename " ..
        "would fail after the search): give a path inside it, e.g. " .. util.join_path(shown or d, "apsearch"))
    end
    if #names > 0 then
      table.sort(names)
      refuse("is a directory with files apsearch did not write (" .. some(names) ..
        "); apsearch never moves or deletes them: choose another --out or move them away")
    end
    return "empty"
  end
  refuse("is a " .. dm .. ", not a directory")
end

local Set = {}
Set.__index = Set

--- Opens DIR for a new result set: lock, clean-up, a fresh set directory.
-- DIR's parent is resolved once (realpath): a link in it that changes
-- during the run cannot send the set and its link to two places.
-- @tparam string dir the `--out` directory
-- @treturn table a set: `id` (the run id), `dir`, `path` (its set
--   directory), `notes` (lines for the log), methods `write`, `stream`,
--   `file`, `commit`, `abort`, `close`
-- @raise `--out: dir: ...` (exit status 2): DIR cannot be used, or another
--   run holds its lock
function M.open(dir)
  local d = dir:gsub("/+$", "")
  if d == "" then d = "/" end
  local name = util.basename(d)
  if name == "" or name == "." or name == ".." then
    fail("must end in a directory name apsearch can link (not /, . or ..)", dir)
  end
  if name:find("%c") then fail("must not hold a control character (a newline, a tab)", dir) end
  local parent = util.dirname(d)
  local ok, created = util.mkdir_p(parent)
  if not ok then fail("cannot create directory: " .. tostring(created), dir) end
  parent = core and core.realpath(parent) or parent
  local prefix = "." .. name .. ".apsearch-"
  local s = setmetatable({ dir = util.join_path(parent, name), shown = dir, parent = parent, name = name,
    prefix = prefix, notes = {}, recorded = {}, created = created }, Set)
  local sok, serr = pcall(function()
    -- DIR checked before the lock file is made (no lock file is left next
    -- to a directory apsearch refuses), and again under the lock
    classify(s.dir, prefix, nil, dir)
    s:take_lock()
    s.kind, s.current = classify(s.dir, prefix, s, dir)
    if s.kind ~= "none" then s.access = access_of(s.dir) end
    s:clean_leftovers()
    s:make_set()
  end)
  if not sok then
    -- the parents this run made go with it (a set name too long for the
    -- file system left 21 of them; breaker pass, 2026-12-05)
    s:close()
    util.remove_created(created)
    error(serr, 0)
  end
  return s
end

-- 1. The lock on `.NAME.apsearch-lock` (fcntl; the kernel drops it when
-- the process ends).
function Set:take_lock()
  self.lockpath = util.join_path(self.parent, self.prefix .. "lock")
  local lm = mode_of(self.lockpath)
  if lm and lm ~= "file" then fail("cannot lock: " .. self.lockpath .. " is a " .. lm, self.shown) end
  self.lock_created = lm == nil
  local fh, ferr = io.open(self.lockpath, "a")
  if not fh then
    fail(("cannot write in %s (its lock file: %s)"):format(self.parent, tostring(ferr)), self.shown)
  end
  if not lfs.lock(fh, "w") then
    fh:close()
    fail("another apsearch run is writing this directory now (lock " .. self.lockpath ..
      " held); run again when it has finished", self.shown)
  end
  held[self.lockpath] = fh
  self.lock = fh
end

-- The set directories next to DIR that a symbolic link there other than
-- apsearch's temporary ones points to (a result kept by renaming its
-- link: `mv DIR keep`): name -> the link's name.
local function kept_by_links(parent, prefix)
  local kept = {}
  for _, n in ipairs(util.listdir(parent) or {}) do
    local p = util.join_path(parent, n)
    if mode_of(p) == "link" and not id_in(n, prefix, "link") then
      local t = (lfs.symlinkattributes(p, "target") or ""):gsub("/+$", "")
      local dir, base = t:match("^(.*)/([^/]+)$")
      base = base or t
      if dir == nil or dir == "." or dir == parent then kept[base] = n end
    end
  end
  return kept
end

-- 2. What interrupted runs of this DIR left: temporary links, and set
-- directories DIR does not point to, as far as their manifests allow;
-- never one another link next to DIR points to.
function Set:clean_leftovers()
  local kept = kept_by_links(self.parent, self.prefix)
  for _, n in ipairs(util.listdir(self.parent) or {}) do
    local p = util.join_path(self.parent, n)
    if id_in(n, self.prefix, "link") and mode_of(p) == "link"
        and id_in(lfs.symlinkattributes(p, "target") or "", self.prefix, "set") then
      os.remove(p)
    elseif id_in(n, self.prefix, "set") and n ~= self.current and kept[n] and mode_of(p) == "directory" then
      self.notes[#self.notes + 1] = "kept " .. p .. ": the link " .. util.join_path(self.parent, kept[n]) ..
        " points to it"
    elseif id_in(n, self.prefix, "set") and n ~= self.current and mode_of(p) == "directory" then
      local m = M.read_manifest(p)
      if not m or m.out == nil or m.out == self.name then
        local removed, why = M.remove_set(p, self.name)
        if not removed then self.notes[#self.notes + 1] = "kept " .. p .. ": " .. tostring(why)
        else self.notes[#self.notes + 1] = "removed " .. p .. ", the set directory of an interrupted run" end
      end
    end
  end
end

-- 3. The new set directory, closed to others as DIR was before anything
-- is in it (apsearch keeps write access until the set is sealed), its
-- marker first, then launch/.
function Set:make_set()
  for _ = 1, 5 do
    self.id = new_id()
    self.setname = self.prefix .. "set-" .. self.id
    self.path = util.join_path(self.parent, self.setname)
    local mok, merr = lfs.mkdir(self.path)
    if mok then break end
    self.path, self.mkdir_err = nil, merr
  end
  if not self.path then
    self:close()
    -- nothing of this DIR was made: the lock file this run created goes
    -- too (a name too long for a set directory left it behind)
    if self.lock_created and mode_of(self.dir) == nil then os.remove(self.lockpath) end
    fail("cannot create a set directory in " .. self.parent .. ": " .. tostring(self.mkdir_err), self.shown)
  end
  -- the descriptor commit's syncfs goes by, opened before any file is
  -- written: it reports a write-back error met at any time since
  -- (core.syncfs)
  local ok, err = true, nil
  if core then
    self.syncfd, err = core.dir_open(self.path)
    ok = self.syncfd ~= nil
  end
  if ok then ok, err = self:keep_access(self.path, true) end
  if ok then
    ok, err = self:write_raw(M.MARKER, string.format("%srun_id %s\nstarted %s\nout %s\n",
      MARKER_HEAD, self.id, os.date("!%Y-%m-%dT%H:%M:%SZ"), self.name))
  end
  local launchdir = util.join_path(self.path, "launch")
  if ok then ok, err = lfs.mkdir(launchdir) end
  if ok then ok, err = self:keep_access(launchdir, true) end
  if not ok then
    self:abort()
    fail("cannot write the set directory " .. self.path .. ": " .. tostring(err), self.shown)
  end
end

-- Gives a directory of the set DIR's group, owner (where allowed) and
-- permission bits; while writing (`writing`) with the owner's rwx added.
-- Nothing to do when DIR did not exist or there is no core.
function Set:keep_access(path, writing)
  local a = self.access
  if not (a and core) then return true end
  -- the group first: chown may clear setgid, chmod then sets it
  if not core.chown(path, a.uid, a.gid) then core.chown(path, -1, a.gid) end
  return core.chmod(path, writing and (a.perm | OWNER_RWX) or a.perm)
end

-- Appends a line to the marker (the manifest).
function Set:note_manifest(line)
  local f, err = io.open(util.join_path(self.path, M.MARKER), "ab")
  if not f then return nil, err end
  local ok, werr = f:write(line, "\n")
  if ok then ok, werr = f:close() else f:close() end
  return ok, werr
end

-- Lists the names of rels (an array) in the manifest before the files are
-- created, each once, in one append.
function Set:record(rels)
  local lines = {}
  for _, rel in ipairs(rels) do
    if not self.recorded[rel] then lines[#lines + 1] = "file " .. rel end
  end
  if #lines == 0 then return true end
  local ok, err = self:note_manifest(table.concat(lines, "\n"))
  if not ok then return ok, err end
  for _, rel in ipairs(rels) do
    if not self.recorded[rel] then
      self.recorded[rel] = true
      self.recorded[#self.recorded + 1] = rel
    end
  end
  return true
end

function Set:write_raw(rel, text)
  local p = util.join_path(self.path, rel)
  if core then return core.write_file(p, text) end
  local f, err = io.open(p, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:close() else f:close() end
  return ok, werr
end

--- Writes files of the set (listed in the manifest, all names before the
-- first file; made durable together at `commit`, core.syncfs).
-- @tparam table files array of `{rel, text}`: rel the path in the set,
--   e.g. `launch/rank1_megatron.sh`
-- @treturn boolean|nil true
-- @treturn[opt] string error
-- @treturn[opt] string the rel that failed
function Set:write_all(files)
  local rels = {}
  for i, f in ipairs(files) do rels[i] = f[1] end
  local ok, err = self:record(rels)
  if not ok then return nil, err, rels[1] end
  for _, f in ipairs(files) do
    ok, err = self:write_raw(f[1], f[2])
    if not ok then return nil, err, f[1] end
  end
  return true
end

--- Writes one file of the set (listed in the manifest).
-- @tparam string rel path in the set, e.g. `result.json`
-- @tparam string text
-- @treturn boolean|nil true
-- @treturn[opt] string error
function Set:write(rel, text)
  return self:write_all({ { rel, text } })
end

--- The path of a file in the set directory (to change it otherwise, e.g.
-- its mode; a file is written only through `write` or `stream`).
-- @tparam string rel
-- @treturn string
function Set:file(rel) return util.join_path(self.path, rel) end

--- Opens one file of the set for writing in pieces (a file streamed while
-- the search runs, e.g. candidates.csv); listed in the manifest.
-- @tparam string rel path inside the set
-- @treturn table|nil `{write = function(text), close = function() -> ok,
--   err, fail = function(why), tmpfile, copy}` (the last two with the
--   core): `write` raises on an error; `close` closes it (its data made
--   durable at `commit`); `fail` raises the run's error for the file;
--   `tmpfile()` an unnamed file in the set directory (an fd;
--   apsearch.core.fd_tmpfile) and `copy(fd, offset, n)` appends a range of
--   one (apsearch.core.fd_copy), for rows written by worker processes
-- @treturn string|nil the error
function Set:stream(rel)
  local rok, rerr = self:record({ rel })
  if not rok then return nil, rerr end
  local p = util.join_path(self.path, rel)
  local f, err = io.open(p, "wb")
  if not f then return nil, err end
  f:setvbuf("full", 1 << 20)
  local s = {}
  function s.write(text)
    local ok, werr = f:write(text)
    if not ok then fail("cannot write " .. rel .. ": " .. tostring(werr), self.shown) end
  end
  function s.close()
    return f:close()
  end
  -- raises the run's error for this file (what the writer of its parts
  -- meets, in the parent or a worker): `--out: dir: cannot write REL: ...`
  function s.fail(why)
    fail("cannot write " .. rel .. ": " .. tostring(why), self.shown)
  end
  -- a file with no name in the set directory (parts written elsewhere,
  -- then copied in: candidates.csv's rows from worker processes), and
  -- the copy of bytes offset..offset+n-1 of one after what was written
  if core then
    function s.tmpfile() return core.fd_tmpfile(self.path) end
    function s.copy(fd, offset, n) return core.fd_copy(fd, offset, n, f) end
  end
  return s
end

-- Closes the manifest: `committed`, then the size and modification time
-- of every file (what a later run checks before removing it); fsynced.
function Set:seal()
  local lines = { "committed" }
  for _, rel in ipairs(self.recorded) do
    local st = stat_of(util.join_path(self.path, rel))
    if not st then return nil, rel .. " is missing or not a file" end
    lines[#lines + 1] = "stat " .. st .. " " .. rel
  end
  local ok, err = self:note_manifest(table.concat(lines, "\n"))
  if ok then ok, err = sync(util.join_path(self.path, M.MARKER)) end
  -- DIR's own permission bits, now that nothing more is written
  local launchdir = util.join_path(self.path, "launch")
  if ok and mode_of(launchdir) == "directory" then ok, err = self:keep_access(launchdir, false) end
  if ok then ok, err = self:keep_access(self.path, false) end
  return ok, err
end

-- core.rename_noreplace / rename_exchange, or "unsupported" (4th value)
-- without the core.
local function rename2(fn, from, to)
  if not core then return nil, "no renameat2", nil, "unsupported" end
  return core[fn](from, to)
end

-- What came back from DIR after the exchange at tmp is what DIR was when
-- the run started: removes it and returns true.
function Set:drop_previous(tmp)
  if self.kind == "link" then
    if mode_of(tmp) == "link" and lfs.symlinkattributes(tmp, "target") == self.current then
      return os.remove(tmp) ~= nil
    end
    return false
  end
  -- the very directory the user made, unchanged (not another one made
  -- meanwhile, which a file system may give the same inode number; the
  -- rename itself changes its ctime, not its mtime)
  local now = access_of(tmp)
  local was = self.access
  if mode_of(tmp) ~= "directory" or (was and not (now and now.dev == was.dev and now.ino == was.ino
      and now.mtime == was.mtime)) then
    return false
  end
  return lfs.rmdir(tmp) ~= nil
end

--- Points DIR at the new set: a temporary link swapped with DIR
-- (renameat2: RENAME_NOREPLACE when DIR did not exist, RENAME_EXCHANGE
-- otherwise); a DIR that changed during the run is put back as it was.
-- Without renameat2 (an old kernel, NFS), DIR is checked again and the
-- link renamed over it (a race window of one check).
-- @treturn boolean|nil true
-- @treturn[opt] string why DIR was left as it is
function Set:link()
  local tmp = util.join_path(self.parent, self.prefix .. "link-" .. self.id)
  local function drop_tmp()
    if mode_of(tmp) == "link" and lfs.symlinkattributes(tmp, "target") == self.setname then os.remove(tmp) end
  end
  drop_tmp()
  local ok, err = lfs.link(self.setname, tmp, true)
  if not ok then return nil, "cannot make a link: " .. tostring(err) end
  local changed = "changed while apsearch ran (it is no longer what it was when the run started); " ..
    "left as it is, no result written"
  local unsupported
  if self.kind == "none" then
    ok, err, _, unsupported = rename2("rename_noreplace", tmp, self.dir)
    if not ok and not unsupported then
      drop_tmp()
      return nil, mode_of(self.dir) and changed or ("cannot link: " .. tostring(err))
    end
  else
    ok, err, _, unsupported = rename2("rename_exchange", tmp, self.dir)
    if ok then
      if not self:drop_previous(tmp) then
        core.rename_exchange(tmp, self.dir)
        drop_tmp()
        return nil, changed
      end
    elseif not unsupported then
      drop_tmp()
      return nil, mode_of(self.dir) and ("cannot replace: " .. tostring(err)) or changed
    end
  end
  if unsupported then
    local kind, current = classify(self.dir, self.prefix)
    if kind ~= self.kind or current ~= self.current then drop_tmp() return nil, changed end
    if kind == "empty" and not lfs.rmdir(self.dir) then drop_tmp() return nil, changed end
    ok, err = os.rename(tmp, self.dir)
    if not ok then drop_tmp() return nil, "cannot replace: " .. tostring(err) end
  end
  sync(self.parent)
  return true
end

--- Makes the set DIR's result set: manifest sealed, fsync, link, the
-- previous set removed.
-- @raise `--out: dir: ...` (exit status 2) when the set cannot be written
--   or DIR changed during the run (DIR is then left as it is)
function Set:commit()
  -- every file written into the set, durable in one flush (they were
  -- written without an fsync each); the marker is then fsynced on its own
  -- a set without launch files (nothing fits) keeps no empty launch/
  local launchdir = util.join_path(self.path, "launch")
  local names = util.listdir(launchdir)
  if names and #names == 0 then lfs.rmdir(launchdir) end
  local ok, err = true, nil
  if core then
    ok, err = core.syncfs(self.syncfd or self.path)
    if not ok then err = "cannot flush the set " .. self.path .. " to disk: " .. tostring(err) end
  end
  if ok then ok, err = self:seal() end
  if ok and mode_of(launchdir) == "directory" then ok, err = sync(launchdir) end
  if ok then ok, err = sync(self.path) end
  if ok then ok, err = self:link() end
  if not ok then self:abort() fail(tostring(err), self.shown) end
  local also = self.current and kept_by_links(self.parent, self.prefix)[self.current]
  if also then
    self.notes[#self.notes + 1] = "kept the previous set " .. util.join_path(self.parent, self.current) ..
      ": the link " .. util.join_path(self.parent, also) .. " points to it"
  elseif self.current then
    local removed, why = M.remove_set(util.join_path(self.parent, self.current), self.name)
    if not removed then
      self.notes[#self.notes + 1] = "kept the previous set " .. util.join_path(self.parent, self.current) ..
        ": " .. tostring(why)
    end
  end
  self.current = self.setname
  self:close()
end

--- Drops the set being written (after an error); DIR is left as it was.
function Set:abort()
  if self.path then M.remove_set(self.path, self.name) end
  self:close()
  util.remove_created(self.created) -- what is left empty of the parents it made
end

--- Releases the lock (and the set directory's descriptor).
function Set:close()
  if self.syncfd then
    core.fd_close(self.syncfd)
    self.syncfd = nil
  end
  if self.lock then
    lfs.unlock(self.lock)
    self.lock:close()
    held[self.lockpath] = nil
    self.lock = nil
  end
end

return M
