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
--    modification time of every file, then fsyncs files and directories;
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
-- logged.  An empty directory at DIR is replaced; any other directory,
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

-- Permission bits of a path (following links) as an integer, from
-- LuaFileSystem's "rwxr-x---" string.
local function perm_bits(path)
  local p = lfs.attributes(path, "permissions")
  if type(p) ~= "string" or #p ~= 9 then return nil end
  local bits = 0
  for i = 1, 9 do
    bits = bits * 2 + (p:sub(i, i) == "-" and 0 or 1)
  end
  return bits
end

--- Reads a set directory's manifest.
-- @tparam string setdir
-- @treturn table|nil `{id, out, files = {rel...}, listed = {[rel] = true},
--   committed = boolean, stat = {[rel] = "size mtime"}}`; nil without a
--   marker whose first line is apsearch's
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
    elseif k == "file" and not m.listed[v] then m.listed[v] = true m.files[#m.files + 1] = v
    elseif k == "stat" then
      local st, rel = v:match("^(%d+ %d+) (.+)$")
      if rel then m.stat[rel] = st end
    elseif line == "committed" then m.committed = true end
  end
  return m
end

-- "size mtime" of a regular file, nil for anything else.
local function stat_of(p)
  local a = lfs.symlinkattributes(p)
  if not a or a.mode ~= "file" then return nil end
  return string.format("%d %d", a.size, a.modification)
end

-- What in setdir the manifest m does not allow removing: entries it does
-- not list, and listed files changed since the run recorded them.
local function not_ours(setdir, m)
  local names, err = util.listdir(setdir)
  if not names then return nil, err end
  local extra = {}
  local function check(rel)
    local p = util.join_path(setdir, rel)
    if rel == M.MARKER then return end
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
  return extra
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
  local m = M.read_manifest(setdir)
  if not m then
    if lfs.rmdir(setdir) then return true end
    return false, "no apsearch marker in it"
  end
  if m.out ~= name then
    return false, m.out and ("it is the set of --out " .. m.out) or
      "written by an older apsearch (no file list in its marker); remove it yourself when you no longer need it"
  end
  local extra, err = not_ours(setdir, m)
  if not extra then return false, tostring(err) end
  if #extra > 0 then
    return false, "it holds files apsearch did not write or that changed since: " .. some(extra)
  end
  for i = #m.files, 1, -1 do os.remove(util.join_path(setdir, m.files[i])) end
  lfs.rmdir(util.join_path(setdir, "launch"))
  os.remove(util.join_path(setdir, M.MARKER))
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

-- What DIR is: "none", "link" (to the set directory returned), "empty"
-- (a plain empty directory); anything else raises (closing s, if given).
local function classify(d, prefix, s)
  local function refuse(problem)
    if s then s:close() end
    fail(problem, d)
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
  local parent = util.dirname(d)
  local ok, err = util.mkdir_p(parent)
  if not ok then fail("cannot create directory: " .. tostring(err), dir) end
  local prefix = "." .. name .. ".apsearch-"
  local s = setmetatable({ dir = d, parent = parent, name = name, prefix = prefix, notes = {},
    recorded = {} }, Set)
  local function at(n) return util.join_path(parent, n) end

  -- DIR checked before the lock file is made (no lock file is left next
  -- to a directory apsearch refuses), and again under the lock
  classify(d, prefix)

  -- 1. the lock
  s.lockpath = at(prefix .. "lock")
  local lm = mode_of(s.lockpath)
  if lm and lm ~= "file" then fail("cannot lock: " .. s.lockpath .. " is a " .. lm, dir) end
  local fh, ferr = io.open(s.lockpath, "a")
  if not fh then fail("cannot create the lock file: " .. tostring(ferr), dir) end
  local lok = lfs.lock(fh, "w")
  if not lok then
    fh:close()
    fail("another apsearch run is writing this directory now (lock " .. s.lockpath ..
      " held); run again when it has finished", dir)
  end
  held[s.lockpath] = fh
  s.lock = fh

  -- 2. what DIR is now; the permissions the new set keeps
  s.kind, s.current = classify(d, prefix, s)
  if s.kind ~= "none" then s.perm = perm_bits(d) end

  -- 3. leftovers of interrupted runs of this DIR
  for _, n in ipairs(util.listdir(parent) or {}) do
    local p = at(n)
    if id_in(n, prefix, "link") and mode_of(p) == "link"
        and id_in(lfs.symlinkattributes(p, "target") or "", prefix, "set") then
      os.remove(p)
    elseif id_in(n, prefix, "set") and n ~= s.current and mode_of(p) == "directory" then
      local m = M.read_manifest(p)
      if not m or m.out == nil or m.out == name then
        local removed, why = M.remove_set(p, name)
        if not removed then s.notes[#s.notes + 1] = "kept " .. p .. ": " .. tostring(why) end
      end
    end
  end

  -- 4. the new set directory (DIR's permissions before anything is in
  -- it), its marker first
  for _ = 1, 5 do
    s.id = new_id()
    s.setname = prefix .. "set-" .. s.id
    s.path = at(s.setname)
    if lfs.mkdir(s.path) then break end
    s.path = nil
  end
  if not s.path then s:close() fail("cannot create a set directory in " .. parent, dir) end
  local pok, perr = s:keep_perm(s.path)
  local wok, werr = pok and s:write_raw(M.MARKER, string.format("%srun_id %s\nstarted %s\nout %s\n",
    MARKER_HEAD, s.id, os.date("!%Y-%m-%dT%H:%M:%SZ"), name))
  local launchdir = util.join_path(s.path, "launch")
  local mok, merr = wok and lfs.mkdir(launchdir)
  if mok then mok, merr = s:keep_perm(launchdir) end
  if not (pok and wok and mok) then
    s:abort()
    fail("cannot write into " .. parent .. ": " .. tostring(perr or werr or merr), dir)
  end
  return s
end

-- Gives a directory of the set the permissions DIR had (nothing to do
-- when DIR did not exist or there is no core).
function Set:keep_perm(path)
  if not (self.perm and core) then return true end
  return core.chmod(path, self.perm)
end

-- Appends a line to the marker (the manifest).
function Set:note_manifest(line)
  local f, err = io.open(util.join_path(self.path, M.MARKER), "ab")
  if not f then return nil, err end
  local ok, werr = f:write(line, "\n")
  if ok then ok, werr = f:close() else f:close() end
  return ok, werr
end

-- Lists rel in the manifest before the file is created (once).
function Set:record(rel)
  if self.recorded[rel] then return true end
  local ok, err = self:note_manifest("file " .. rel)
  if ok then
    self.recorded[rel] = true
    self.recorded[#self.recorded + 1] = rel
  end
  return ok, err
end

function Set:write_raw(rel, text)
  local p = util.join_path(self.path, rel)
  local f, err = io.open(p, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:close() else f:close() end
  if not ok then return nil, werr end
  return sync(p)
end

--- Writes one file of the set (listed in the manifest, fsynced).
-- @tparam string rel path in the set, e.g. `launch/rank1_megatron.sh`
-- @tparam string text
-- @treturn boolean|nil true
-- @treturn[opt] string error
function Set:write(rel, text)
  local ok, err = self:record(rel)
  if not ok then return nil, err end
  return self:write_raw(rel, text)
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
--   err}`: `write` raises on an error; `close` closes and fsyncs
-- @treturn string|nil the error
function Set:stream(rel)
  local rok, rerr = self:record(rel)
  if not rok then return nil, rerr end
  local p = util.join_path(self.path, rel)
  local f, err = io.open(p, "wb")
  if not f then return nil, err end
  f:setvbuf("full", 1 << 20)
  local s = {}
  function s.write(text)
    local ok, werr = f:write(text)
    if not ok then fail("cannot write " .. rel .. ": " .. tostring(werr), self.dir) end
  end
  function s.close()
    local ok, cerr = f:close()
    if not ok then return nil, cerr end
    return sync(p)
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
  if not ok then return nil, err end
  return sync(util.join_path(self.path, M.MARKER))
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
  return mode_of(tmp) == "directory" and lfs.rmdir(tmp) ~= nil
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
      return nil, "cannot replace: " .. tostring(err)
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
  local ok, err = self:seal()
  if ok then ok, err = sync(util.join_path(self.path, "launch")) end
  if ok then ok, err = sync(self.path) end
  if ok then ok, err = self:link() end
  if not ok then self:abort() fail(tostring(err), self.dir) end
  if self.current then
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
end

--- Releases the lock.
function Set:close()
  if self.lock then
    lfs.unlock(self.lock)
    self.lock:close()
    held[self.lockpath] = nil
    self.lock = nil
  end
end

return M
