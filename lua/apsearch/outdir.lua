--- Atomic result sets for `apsearch run --out DIR` (docs/outputs.md,
-- "Atomic result sets").
--
-- DIR is a symbolic link to a set directory next to it, `.NAME.apsearch-
-- set-<run id>` (NAME = the last component of DIR); a run
--
-- 1. takes a lock on `.NAME.apsearch-lock` (fcntl, released by the kernel
--    when the process ends, even by kill -9); a run that finds it held
--    stops with exit status 2 naming DIR;
-- 2. cleans what interrupted runs left (set directories DIR does not point
--    to, temporary links), each only when it carries apsearch's marker
--    file `.apsearch-set` and holds nothing but the files apsearch writes;
-- 3. writes the whole set into a fresh set directory (the marker first),
--    fsyncs every file and the directories;
-- 4. makes a temporary link to it and renames that link over DIR
--    (rename(2): atomic), fsyncs the parent, then removes the previous set.
--
-- So DIR always shows one complete set: the new one or the previous one.
-- A DIR that is a plain directory holding only files an earlier apsearch
-- wrote (result.json, result.csv, candidates.csv, report.html,
-- launch/rank<N>_<engine files>) is moved into a set directory and linked
-- (migrated); an empty directory is replaced; any other directory, file or
-- symbolic link is refused with exit status 2: apsearch never deletes a
-- file it did not write.
-- @module apsearch.outdir
local lfs = require "lfs"
local util = require "apsearch.util"

local M = {}

--- Name of the marker file in every set directory.
M.MARKER = ".apsearch-set"
local MARKER_HEAD = "apsearch result set\n"

local has_core, core = pcall(require, "apsearch.core")
if not has_core or type(core) ~= "table" or not core.fsync then core = nil end

-- lock file handles held by this process (a collected handle would be
-- closed, and closing it drops the lock)
local held = {}

local TOP_FILES = { ["result.json"] = true, ["result.csv"] = true, ["candidates.csv"] = true,
  ["report.html"] = true }

--- True when `name` is a file apsearch writes at the top of a set.
-- @tparam string name
-- @treturn boolean
function M.own_top(name) return TOP_FILES[name] == true end

--- True when `name` is a launch file apsearch writes (`rank<N>` and an
-- engine suffix of apsearch.launch).
-- @tparam string name
-- @treturn boolean
function M.own_launch(name)
  local rest = name:match("^rank%d+(_.+)$")
  if not rest then return false end
  for _, e in ipairs(require("apsearch.launch").engines) do
    if rest == e.suffix then return true end
  end
  return false
end

local function fail(problem, dir) util.fail("--out", "dir", problem, dir) end

local function mode_of(path) return lfs.symlinkattributes(path, "mode") end

local function sync(path)
  if not core then return true end
  return core.fsync(path)
end

-- The entries of a directory that apsearch did not write, as relative
-- names (nil when it cannot be listed); launch/ must hold only launch
-- files.  `marker` allows the marker file.
local function foreign_entries(dir, marker)
  local names, err = util.listdir(dir)
  if not names then return nil, err end
  local foreign = {}
  for _, n in ipairs(names) do
    local p = util.join_path(dir, n)
    local m = mode_of(p)
    if n == "launch" and m == "directory" then
      for _, l in ipairs(util.listdir(p) or { "?" }) do
        if not (M.own_launch(l) and mode_of(util.join_path(p, l)) == "file") then
          foreign[#foreign + 1] = "launch/" .. l
        end
      end
    elseif not ((M.own_top(n) or (marker and n == M.MARKER)) and m == "file") then
      foreign[#foreign + 1] = n
    end
  end
  return foreign, names
end

local function read_marker(setdir)
  local p = util.join_path(setdir, M.MARKER)
  if mode_of(p) ~= "file" then return nil end
  local s = util.read_file(p)
  if not s or s:sub(1, #MARKER_HEAD) ~= MARKER_HEAD then return nil end
  return s
end

--- Removes a set directory of apsearch's: only when it holds the marker
-- and nothing apsearch did not write; the marker goes last, so an
-- interrupted removal is finished by the next run.
-- @tparam string setdir
-- @treturn boolean true when removed
-- @treturn[opt] string why it was kept
function M.remove_set(setdir)
  if not read_marker(setdir) then
    -- created, killed before the marker: an empty directory only
    if lfs.rmdir(setdir) then return true end
    return false, "no apsearch marker in it"
  end
  local foreign, names = foreign_entries(setdir, true)
  if not foreign then return false, names end
  if #foreign > 0 then return false, "it holds files apsearch did not write: " .. util.join(foreign) end
  for _, n in ipairs(names) do
    local p = util.join_path(setdir, n)
    if n == "launch" then
      for _, l in ipairs(util.listdir(p) or {}) do os.remove(util.join_path(p, l)) end
      lfs.rmdir(p)
    elseif n ~= M.MARKER then
      os.remove(p)
    end
  end
  os.remove(util.join_path(setdir, M.MARKER))
  local ok, err = lfs.rmdir(setdir)
  if not ok then return false, tostring(err) end
  return true
end

local function new_id()
  local pid = core and core.getpid() or 0
  return string.format("%s-%d-%06x", os.date("!%Y%m%dT%H%M%SZ"), pid, math.random(0, 0xffffff))
end

-- What DIR is: "none", "link" (to the set directory returned), "empty"
-- (a plain empty directory), "legacy" (a plain directory holding only
-- files apsearch writes); anything else raises (closing s, if given).
local function classify(d, prefix, s)
  local function refuse(problem)
    if s then s:close() end
    fail(problem, d)
  end
  local dm = mode_of(d)
  if dm == nil then return "none" end
  if dm == "link" then
    local target = lfs.symlinkattributes(d, "target")
    if type(target) ~= "string" or target:sub(1, #prefix + 4) ~= prefix .. "set-" or target:find("/", 1, true) then
      refuse("is a symbolic link apsearch did not make (to " .. tostring(target) ..
        "); give its target or another directory")
    end
    return "link", target
  elseif dm == "directory" then
    local foreign, names = foreign_entries(d, false)
    if not foreign then refuse("cannot list: " .. tostring(names)) end
    if #foreign > 0 then
      refuse("is a directory with files apsearch did not write (" .. util.join(foreign) ..
        "); apsearch never deletes them: choose another --out or move them away")
    end
    return #names == 0 and "empty" or "legacy"
  end
  refuse("is a " .. dm .. ", not a directory")
end

local Set = {}
Set.__index = Set

--- Opens DIR for a new result set: lock, clean-up, a fresh set directory.
-- @tparam string dir the `--out` directory
-- @treturn table a set: `id` (the run id), `dir`, `path` (its set
--   directory), `notes` (lines for the log), methods `write`, `commit`,
--   `abort`, `close`
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
  local s = setmetatable({ dir = d, parent = parent, name = name, prefix = prefix, notes = {} }, Set)
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

  -- 2. what DIR is now (a kill in the middle of a migration: link again)
  M.relink_migrated(s)
  local kind, current = classify(d, prefix, s)
  if kind == "empty" then s.replace_empty = true
  elseif kind == "legacy" then s:migrate()
  else s.current = current end

  -- 3. leftovers of interrupted runs
  for _, n in ipairs(util.listdir(parent) or {}) do
    if n:sub(1, #prefix) == prefix then
      local rest, p = n:sub(#prefix + 1), at(n)
      local m = mode_of(p)
      if rest:match("^link%-") and m == "link" then
        os.remove(p)
      elseif rest:match("^set%-") and m == "directory" and n ~= s.current then
        local removed, why = M.remove_set(p)
        if not removed then s.notes[#s.notes + 1] = "kept " .. p .. ": " .. tostring(why) end
      end
    end
  end

  -- 4. the new set directory, its marker first
  for _ = 1, 5 do
    s.id = new_id()
    s.setname = prefix .. "set-" .. s.id
    s.path = at(s.setname)
    if lfs.mkdir(s.path) then break end
    s.path = nil
  end
  if not s.path then s:close() fail("cannot create a set directory in " .. parent, dir) end
  local wok, werr = s:write(M.MARKER, string.format("%srun_id %s\nstarted %s\n", MARKER_HEAD, s.id,
    os.date("!%Y-%m-%dT%H:%M:%SZ")))
  local mok, merr = wok and lfs.mkdir(util.join_path(s.path, "launch"))
  if not (wok and mok) then
    s:abort()
    fail("cannot write into " .. parent .. ": " .. tostring(werr or merr), dir)
  end
  return s
end

--- Moves a plain DIR of an older apsearch (only its own files) into a set
-- directory and links DIR to it.  Between the two renames DIR is missing
-- for an instant; the marker says `migrated` so that the next run links it
-- again if a kill fell exactly there.
function Set:migrate()
  local id = new_id()
  local setname = self.prefix .. "set-" .. id
  local ok, err = util.write_atomic(util.join_path(self.dir, M.MARKER),
    string.format("%srun_id %s\nmigrated from a plain directory\n", MARKER_HEAD, id))
  if not ok then self:close() fail("cannot migrate: " .. tostring(err), self.dir) end
  sync(self.dir)
  local rok, rerr = os.rename(self.dir, util.join_path(self.parent, setname))
  if not rok then
    os.remove(util.join_path(self.dir, M.MARKER))
    self:close()
    fail("cannot migrate: " .. tostring(rerr), self.dir)
  end
  self.current = setname
  self:link(setname)
  self.notes[#self.notes + 1] = "moved the files of an earlier apsearch in " .. self.dir ..
    " to " .. util.join_path(self.parent, setname) .. " (now a link to a result set)"
end

--- Points DIR at a set directory: a temporary link renamed over DIR.
-- @tparam string setname set directory name (in DIR's parent)
function Set:link(setname)
  local tmp = util.join_path(self.parent, self.prefix .. "link-" .. setname:sub(#self.prefix + 5))
  os.remove(tmp)
  local ok, err = lfs.link(setname, tmp, true)
  if not ok then fail("cannot make a link: " .. tostring(err), self.dir) end
  ok, err = os.rename(tmp, self.dir)
  if not ok then os.remove(tmp) fail("cannot replace: " .. tostring(err), self.dir) end
  sync(self.parent)
end

--- Writes one file of the set (fsynced).
-- @tparam string rel path in the set, e.g. `launch/rank1_megatron.sh`
-- @tparam string text
-- @treturn boolean|nil true
-- @treturn[opt] string error
function Set:write(rel, text)
  local p = util.join_path(self.path, rel)
  local f, err = io.open(p, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:close() else f:close() end
  if not ok then return nil, werr end
  return sync(p)
end

--- The path of a file in the set directory (to write it otherwise).
-- @tparam string rel
-- @treturn string
function Set:file(rel) return util.join_path(self.path, rel) end

--- Opens one file of the set for writing in pieces (a file streamed while
-- the search runs, e.g. candidates.csv).
-- @tparam string rel path inside the set
-- @treturn table|nil `{write = function(text), close = function() -> ok,
--   err}`: `write` raises on an error; `close` closes and fsyncs
-- @treturn string|nil the error
function Set:stream(rel)
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

--- Makes the set DIR's result set: fsync, link, remove the previous set.
function Set:commit()
  local ok, err = sync(util.join_path(self.path, "launch"))
  if ok then ok, err = sync(self.path) end
  if not ok then self:abort() fail("cannot write: " .. tostring(err), self.dir) end
  if self.replace_empty then
    local rok, rerr = lfs.rmdir(self.dir)
    if not rok then self:abort() fail("cannot replace the empty directory: " .. tostring(rerr), self.dir) end
  end
  self:link(self.setname)
  if self.current then
    local removed, why = M.remove_set(util.join_path(self.parent, self.current))
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
  if self.path then M.remove_set(self.path) end
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

--- Links DIR again to a migrated set when a kill fell between the two
-- renames of a migration (DIR missing).  Called by open, under the lock.
-- @tparam table s the set being opened
function M.relink_migrated(s)
  if mode_of(s.dir) ~= nil then return end
  for _, n in ipairs(util.listdir(s.parent) or {}) do
    if n:sub(1, #s.prefix + 4) == s.prefix .. "set-" then
      local m = read_marker(util.join_path(s.parent, n))
      if m and m:find("\nmigrated ", 1, true) then
        s:link(n)
        s.current = n
        return
      end
    end
  end
end

return M
