--- Small helpers shared by the apsearch Lua modules.
--
-- Error convention: bad input raises a one-line string
-- `<file>: <field>: <problem> (got <value>)` with `error(msg, 0)`, so no
-- Lua position is prepended; the CLI prints it after `apsearch: `.
-- @module apsearch.util
local lfs = require "lfs"

local M = {}

local type, tostring, pairs, ipairs, format = type, tostring, pairs, ipairs, string.format
local floor, huge = math.floor, math.huge

--- Metatable that marks a table as a JSON array even when it is empty.
-- Tables carrying it are written as `[]` by apsearch.format.json.
-- `__metatable` hides and locks it: a sandboxed script that gets such a
-- table (e.g. from `range()`) can neither read nor change the shared
-- metatable (no `__gc` or `__newindex` planted in host tables).
M.array_mt = { __name = "apsearch.array", __metatable = "apsearch.array" }

--- True if t carries the array mark (looks past `__metatable`).
-- @param t any value
-- @treturn boolean
function M.is_marked_array(t)
  return type(t) == "table" and rawequal(debug.getmetatable(t), M.array_mt)
end

--- Makes (or marks) a table as an array for JSON output.
-- @tparam[opt] table t the table to mark; a new one when nil
-- @treturn table t, with metatable `array_mt`
function M.array(t)
  t = t or {}
  if rawequal(debug.getmetatable(t), M.array_mt) then return t end
  return setmetatable(t, M.array_mt)
end

-- how many levels of nested tables describe shows (deeper ones are
-- `{...}`): a script's cyclic or exponentially shared table is described
-- in at most 6 + 6^2 steps, not walked
local DESCRIBE_DEPTH = 2
-- how many array items or record fields describe shows of a table, and
-- the most fields it sorts to choose them by name
local DESCRIBE_ITEMS = 6
local DESCRIBE_FIELDS_SCANNED = 64

-- v (a string) itself when at most max bytes long, else its first bytes
-- and "..." in max bytes, cut between UTF-8 characters: back over the
-- continuation bytes (10xxxxxx) of a character the cut would split
local function cut_text(v, max)
  if #v <= max then return v end
  local n = max - 3
  while n > 0 and v:byte(n + 1) & 0xC0 == 0x80 do n = n - 1 end
  return v:sub(1, n) .. "..."
end

--- A command-line override as the user typed it: `--top-k 3` for an
-- option of its own (the override's `flag`), `--set top_k=3` / `--fix
-- tp_degree=8` otherwise.
-- @tparam table ov an entry of a policy's `overrides` (kind, key, value,
--   flag)
-- @tparam function text the value's text (e.g. M.describe)
-- @treturn string
function M.override_text(ov, text)
  if ov.flag then return ov.flag .. " " .. text(ov.value) end
  return "--" .. tostring(ov.kind) .. " " .. tostring(ov.key) .. "=" .. text(ov.value)
end

--- Short printable description of a value for error messages.
-- Strings are quoted and cut at 60 bytes; tables are summarized (the
-- first 6 array items, or up to 6 fields by name, DESCRIBE_DEPTH levels
-- deep, raw access only).
-- @param v any value
-- @param[opt] depth levels already shown (internal)
-- @treturn string e.g. `"fp7"`, `2.5`, `true`, `nil`, `{max = 8, min = 1}`, `{...}`
function M.describe(v, depth)
  local t = type(v)
  if t == "userdata" and package.loaded.cjson and v == package.loaded.cjson.null then
    return "null"
  elseif t == "string" then
    v = cut_text(v, 60)
    local q = format("%q", v):gsub("\\\n", "\\n")
    if not utf8.len(q) then -- bytes that are not UTF-8, as escapes
      q = q:gsub("[\128-\255]", function(c) return format("\\%d", c:byte()) end)
    end
    -- and the bidirectional controls (M.printable)
    return (M.printable(q))
  elseif t == "number" then
    if math.type(v) == "float" and v == floor(v) and v > -2^53 and v < 2^53 then
      return format("%d", v)
    end
    if v ~= v then return "nan" end -- tostring gives the C library's "-nan" or "nan"
    return tostring(v)
  elseif t == "table" then
    -- raw access only: v may be a script's table with __len / __index
    depth = depth or 0
    if depth >= DESCRIBE_DEPTH then return "{...}" end
    local n = rawlen(v)
    if n > 0 then
      local parts = {}
      for i = 1, math.min(n, DESCRIBE_ITEMS) do parts[i] = M.describe(rawget(v, i), depth + 1) end
      if n > DESCRIBE_ITEMS then parts[#parts + 1] = "... " .. n .. " in all" end
      return "{" .. table.concat(parts, ", ") .. "}"
    end
    -- a record: its first fields by name, as a script would write them;
    -- one of more than DESCRIBE_FIELDS_SCANNED fields is not walked
    -- whole (a script's large table) and said as {...}
    local keys = {}
    for k in next, v do
      keys[#keys + 1] = k
      if #keys > DESCRIBE_FIELDS_SCANNED then return "{...}" end
    end
    if #keys == 0 then return "{}" end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local more = #keys > DESCRIBE_ITEMS
    for i = #keys, DESCRIBE_ITEMS + 1, -1 do keys[i] = nil end
    local parts = {}
    for i, k in ipairs(keys) do
      -- (a name as long as a string value is cut as one: a script's key of 100 KB)
      local name = type(k) == "string" and k:match("^[%a_][%w_]*$") and cut_text(k, 60)
        or "[" .. M.describe(k, depth + 1) .. "]"
      parts[i] = name .. " = " .. M.describe(rawget(v, k), depth + 1)
    end
    if more then parts[#parts + 1] = "..." end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

--- The longest field name an input error prints whole (bytes); a longer
-- one is cut with "...".
M.FIELD_TEXT_MAX = 120

--- A name or value shown unquoted in a message, cut as M.fail cuts a
-- field name: at most M.FIELD_TEXT_MAX bytes, "..." where it was cut (a
-- config's model_type of a megabyte was echoed whole).
-- @param v any value (tostring'd)
-- @treturn string
function M.clip(v)
  v = tostring(v)
  return cut_text(v, M.FIELD_TEXT_MAX)
end

--- Raises the one-line input error `<file>: <field>: <problem> (got <value>)`.
-- @tparam string file the file (or `--set`, `--fix`) the bad value came from
-- @tparam string field the dotted field path
-- @tparam string problem what is wrong
-- @param[opt] got the offending value (described with `describe`; nil: "nothing")
-- @param[opt] has_got pass false to omit the `(got ...)` part
-- @raise always: the formatted string
function M.fail(file, field, problem, got, has_got)
  local msg
  -- a field name a script or file made long (a 300,000-byte key) is cut
  -- as a long value is (M.describe)
  field = M.clip(field)
  if has_got == false then
    msg = format("%s: %s: %s", file, field, problem)
  else
    -- an absent value is said as such, not as Lua's nil
    msg = format("%s: %s: %s (got %s)", file, field, problem, got == nil and "nothing" or M.describe(got))
  end
  error(msg, 0)
end

--- `s` without its leading and trailing blanks (the pattern class %s),
-- in time linear in its length (`^%s*(.-)%s*$` takes time quadratic in
-- a run of blanks inside it: a CSV cell of 100,000 spaces ran for 37 s).
-- @tparam string s
-- @treturn string
function M.trim(s)
  local i = s:find("%S")
  if not i then return "" end
  return s:sub(i, #s + 1 - s:reverse():find("%S"))
end

--- `s` without its trailing blanks, in linear time (as M.trim).
-- @tparam string s
-- @treturn string
function M.rtrim(s)
  local k = s:reverse():find("%S")
  return k and s:sub(1, #s + 1 - k) or ""
end

--- True if v is a number with an integral value (integer or integral float).
-- @param v any value
-- @treturn boolean
function M.is_integer(v)
  return type(v) == "number" and v == floor(v) and v > -huge and v < huge
end

--- The number a user wrote in decimal: digits with an optional sign,
-- decimal point and exponent ("8", "-0.5", "1e3", ".5"), else nil.  Lua's
-- tonumber also reads "0x10" as 16, "inf"-like overflows and surrounding
-- blanks; what a user types on a command line, in a CSV cell or after
-- `--set K=` is read as decimal only, so "0x10" is refused (or stays a
-- string) instead of becoming 16.
-- @tparam string text
-- @treturn number|nil
function M.decimal(text)
  if type(text) ~= "string" then return nil end
  -- a sign, digits with at most one point ("5", "5.", ".5"), an exponent
  local mant, exp = text:match("^[+-]?([%d%.]+)(.*)$")
  if not mant or not mant:find("%d") or select(2, mant:gsub("%.", "")) > 1 then return nil end
  if exp ~= "" and not exp:match("^[eE][+-]?%d+$") then return nil end
  return tonumber(text)
end

--- True if v is a finite number.
-- @param v any value
-- @treturn boolean
function M.is_finite(v)
  return type(v) == "number" and v == v and v > -huge and v < huge
end

--- Converts an integral number to a Lua integer (2.0 -> 2), else returns it.
-- @tparam number v
-- @treturn number
function M.int(v)
  return math.tointeger(v) or v
end

--- Shallow copy of a table (metatable kept).
-- @tparam table t
-- @treturn table
function M.copy(t)
  local r = {}
  for k, v in pairs(t) do r[k] = v end
  return setmetatable(r, debug.getmetatable(t))
end

--- Deep copy of plain data tables (functions and userdata are shared).
-- @param v any value
-- @return the copy
function M.deepcopy(v)
  if type(v) ~= "table" then return v end
  local r = {}
  for k, x in pairs(v) do r[M.deepcopy(k)] = M.deepcopy(x) end
  return setmetatable(r, debug.getmetatable(v))
end

--- Sorted array of the keys of a table (strings before numbers, each sorted;
-- keys of other types, which a policy file may write, by type name and text).
-- @tparam table t
-- @treturn table array of keys
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta > tb end -- "string" > "number"
    if ta == "string" or ta == "number" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys
end

--- Array of the values of a set-like list, joined with ", " for messages.
-- @tparam table list
-- @treturn string
function M.join(list)
  local parts = {}
  for i, v in ipairs(list) do parts[i] = tostring(v) end
  return table.concat(parts, ", ")
end

--- Largest input file `read_file` reads (bytes): model configs, cluster
-- files, measurements.
M.max_input_bytes = 64 << 20

--- Reads a whole input file, the one check every command's inputs go
-- through (policies, rules, objectives, formatters, model configs, cases,
-- calibrations, baselines): the file is opened without blocking and read
-- only if the opened file is a regular file of at most `max_bytes`
-- (default `M.max_input_bytes`); a directory, a device, a FIFO or a
-- bigger file is refused at once (`apsearch.core.read_regular`).
-- @tparam string path
-- @tparam[opt] integer max_bytes
-- @treturn string|nil contents
-- @treturn[opt] string why it cannot be read (`not a regular file (a
--   named pipe)`, `No such file or directory`, ...), without the path:
--   callers name the file themselves
function M.read_file(path, max_bytes)
  local data, err = require("apsearch.core").read_regular(path, max_bytes or M.max_input_bytes)
  if data then
    -- every file a command reads is an input it must not write over
    -- (M.refuse_input_as_output): a policy, a model's config.json, a
    -- rule or objective file, a preset, a cases file, a log or a trace
    local a = lfs.attributes(path)
    if a then M.inputs_read[a.dev .. ":" .. a.ino] = M.inputs_read[a.dev .. ":" .. a.ino] or path end
  end
  return data, err
end

--- The files read so far by M.read_file, `"dev:ino"` -> the path read
-- (one entry a file, however often or by whatever spelling it is read).
M.inputs_read = {}

--- True if something exists at path (any file type; nothing is opened,
-- so a FIFO cannot block).  Whether it can be read is `read_file`'s
-- answer, with the reason.
-- @tparam string path
-- @treturn boolean
function M.file_exists(path)
  return lfs.attributes(path, "mode") ~= nil
end

--- Directory part of a path ("." when it has none).
-- @tparam string path
-- @treturn string
function M.dirname(path)
  local d = path:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end

--- File name part of a path.
-- @tparam string path
-- @treturn string
function M.basename(path)
  return path:match("([^/]*)$")
end

--- Joins a base directory and a path; absolute paths are returned unchanged.
-- @tparam string base directory
-- @tparam string path
-- @treturn string
function M.join_path(base, path)
  if path:sub(1, 1) == "/" or base == nil or base == "" or base == "." then
    return path
  end
  if base:sub(-1) == "/" then return base .. path end
  return base .. "/" .. path
end

--- Lists the entries of a directory (names only, sorted), without `.`/`..`.
-- Uses LuaFileSystem (Debian package lua-filesystem).
-- @tparam string dir
-- @treturn table|nil array of names
-- @treturn[opt] string error message
function M.listdir(dir)
  local names = {}
  local okd, iter, state = pcall(lfs.dir, dir)
  if not okd then return nil, tostring(iter) end
  for name in iter, state do
    if name ~= "." and name ~= ".." then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

--- Creates a directory (and its parents) if it does not exist.
-- @tparam string dir
-- @treturn boolean|nil true on success
-- @treturn string|table the error message, or on success the directories
--   this call created, outermost first (M.remove_created takes them back)
function M.mkdir_p(dir)
  local path = dir:sub(1, 1) == "/" and "" or nil
  local created = {}
  for part in dir:gmatch("[^/]+") do
    path = path and (path .. "/" .. part) or part
    if lfs.attributes(path, "mode") == nil then
      local mk, err = lfs.mkdir(path)
      if mk then created[#created + 1] = path end
      if not mk and lfs.attributes(path, "mode") ~= "directory" then
        M.remove_created(created)
        return nil, err
      end
    end
  end
  if lfs.attributes(dir, "mode") ~= "directory" then
    return nil, dir .. ": not a directory"
  end
  return true, created
end

--- Whether `path`, once the symbolic links of its existing part are
-- followed, lies in directory `dir` (or is it): a policy's output
-- directory must not leave the policy's directory through a linked
-- subdirectory.  The deepest existing ancestor of `path` is resolved
-- (apsearch.core.realpath); what does not exist yet adds no link.
-- @tparam string path
-- @tparam string dir
-- @treturn boolean
function M.resolves_under(path, dir)
  local core = require "apsearch.core"
  local root = core.realpath(dir)
  if not root then return false end
  local p = path
  while lfs.symlinkattributes(p, "mode") == nil do
    local up = M.dirname(p)
    if up == p then return false end
    p = up
  end
  local real = core.realpath(p)
  return real ~= nil and (real == root or real:sub(1, #root + 1) == root:gsub("/$", "") .. "/")
end

--- Removes the directories M.mkdir_p created, innermost first, each only
-- while it is empty (rmdir): a run that fails leaves no parent it made.
-- @tparam table created M.mkdir_p's second value
function M.remove_created(created)
  for i = #(created or {}), 1, -1 do
    if not lfs.rmdir(created[i]) then return end
  end
end

--- Symbolic links followed before a write: as many as the kernel follows
-- (Linux's MAXSYMLINKS, 40) before it gives ELOOP.
M.MAX_SYMLINKS = 40

-- The file a path names once its symbolic links are followed (the path
-- itself when it is no link; a dangling link's target, which the write
-- then creates, as a shell's `>` does).
local function link_target(path)
  local lfs = require "lfs"
  for _ = 1, M.MAX_SYMLINKS do
    if lfs.symlinkattributes(path, "mode") ~= "link" then return path end
    local target = lfs.symlinkattributes(path, "target")
    if not target then return nil, path .. ": cannot read the link" end
    path = target:sub(1, 1) == "/" and target or M.join_path(M.dirname(path), target)
  end
  return nil, path .. ": too many levels of symbolic links"
end

--- Whether two paths name the same existing file (the same device and
-- inode after symbolic links are followed: a link, a hard link or another
-- spelling of one path count as it).
-- @tparam string a
-- @tparam string b
-- @treturn boolean false when either does not exist
function M.same_file(a, b)
  local lfs = require "lfs"
  local x, y = lfs.attributes(a), lfs.attributes(b)
  return x ~= nil and y ~= nil and x.dev == y.dev and x.ino == y.ino
end

--- Refuses (M.fail, exit 2) an output file that is one of the command's
-- input files, before anything is written: writing over it would replace
-- what the user gave (a cases file, a policy, a trace) with the output.
-- @tparam string flag the output's option, e.g. "--output"
-- @tparam string out the output path
-- @tparam table inputs array of input paths (nil entries allowed, up to
--   `inputs.n` when set)
-- @raise the one-line error naming the output and the input it is
function M.refuse_input_as_output(flag, out, inputs)
  if type(out) ~= "string" then return end
  for i = 1, inputs.n or #inputs do
    local p = inputs[i]
    if type(p) == "string" and M.same_file(out, p) then
      M.fail(flag, "file", ("is an input of this command (%s): refusing to write over it"):format(p), out)
    end
  end
  -- and every file read so far (the policy's model config, its rules and
  -- objective, a preset: M.read_file records them)
  local a = lfs.attributes(out)
  local read = a and M.inputs_read[a.dev .. ":" .. a.ino]
  if read then
    M.fail(flag, "file", ("is an input of this command (%s): refusing to write over it"):format(read), out)
  end
end

--- Writes a file atomically: a temporary file in the same directory, then
-- `os.rename` over the target, so a crash never leaves half a file.  A
-- path that is the user's symbolic link is written through: the link's
-- target gets the file, the link stays.
-- @tparam string path target file
-- @tparam string data contents
-- @treturn boolean|nil true on success
-- @treturn[opt] string error message
function M.write_atomic(path, data)
  local lerr
  path, lerr = link_target(path)
  if not path then return nil, lerr end
  local tmp = string.format("%s.tmp-%d-%d", path, os.time(), math.random(1, 1e9))
  local f, err = io.open(tmp, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(data)
  if not ok then f:close() os.remove(tmp) return nil, werr end
  ok, werr = f:close()
  if not ok then os.remove(tmp) return nil, werr end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp) return nil, rerr end
  return true
end

--- Refuses a text with a NUL byte before it is decoded as JSON: lua-cjson
-- stops reading at the first NUL, so a file with garbage after one was
-- read as the object before it (JSON has no NUL outside a string's
-- escape, RFC 8259 s.7).
-- @tparam string path the file, for the message
-- @tparam string text its contents
-- @tparam[opt] function raise called with the problem instead (a caller's
--   own message form)
-- @raise `<path>: a NUL byte at offset N: not JSON text`
function M.refuse_nul(path, text, raise)
  local at = text:find("\0", 1, true)
  if not at then return end
  local problem = ("a NUL byte at offset %d: not JSON text"):format(at - 1)
  if raise then raise(problem) end
  error(path .. ": " .. problem, 0)
end

--- Refuses a JSON file (already decoded) whose object gives a key twice:
-- lua-cjson keeps the last one silently, so a hand edit that repeats
-- `hidden_size` would estimate another model than the file seems to say
-- (apsearch.core.json_duplicate_key).
-- @tparam string path the file, for the message
-- @tparam string text its JSON text
-- @raise `<path>:<line>: key "<key>" is given twice in one object (JSON keeps the last; remove one)`,
--   or `<path>: more than N keys: not a file apsearch reads` (past what the scan tracks)
function M.refuse_duplicate_key(path, text)
  local key, line = require("apsearch.core").json_duplicate_key(text)
  if key == false then
    error(("%s: %s: not a file apsearch reads (a config.json has hundreds)"):format(path, line), 0)
  end
  if key then
    error(("%s:%d: key %s is given twice in one object (JSON readers keep the last; remove one)")
      :format(path, line, M.describe(key)), 0)
  end
end

--- Bytes of an existing output file read to tell whether apsearch wrote
-- it (M.write_output's `ours`).
M.OUTPUT_HEAD_BYTES = 65536

--- Writes a file an option names (`estimate --trace`, `calibrate
-- --output`) without losing one of the user's: a path that does not exist
-- is created; an existing one (a symbolic link is followed, as
-- M.write_atomic writes through it) is replaced only when it is a
-- writable regular file that `ours(head)` recognises as this output of a
-- previous run (head: its first M.OUTPUT_HEAD_BYTES bytes).  Anything else
-- -- the user's profile, another file, a read-only one -- is refused, exit
-- 2, before anything is written.
-- @tparam string flag the option, e.g. "--trace"
-- @tparam string path
-- @tparam string data
-- @tparam string what the output's name in the message ("an apsearch trace")
-- @tparam function ours `ours(head) -> boolean`
-- @raise the one-line refusal, or "cannot write: <reason>"
function M.write_output(flag, path, data, what, ours)
  M.check_output(flag, path, what, ours)
  local ok, err = M.write_atomic(path, data)
  if not ok then M.fail(flag, "file", "cannot write: " .. tostring(err), path) end
end

--- The refusals of M.write_output, before anything is computed: a command
-- that takes long to make its output (a fit) checks the path first.
-- @tparam string flag the option, e.g. "--output"
-- @tparam string path
-- @tparam string what the output's name in the message
-- @tparam function ours `ours(head) -> boolean`
-- @raise the one-line refusal
function M.check_output(flag, path, what, ours)
  local target = link_target(path) or path
  local mode = lfs.attributes(target, "mode")
  if mode ~= nil then
    if mode ~= "file" then M.fail(flag, "file", "cannot write: a " .. mode .. " is in the way", path) end
    -- the owner's write bit, not whether this process may write (root
    -- may), says whether the file is meant to be replaced; a hard link
    -- would keep the old content under its other name
    local a = lfs.attributes(target)
    if not tostring(a.permissions):match("^.w") then
      M.fail(flag, "file", "exists and is read-only: refusing to replace it", path)
    end
    if (a.nlink or 1) > 1 then
      M.fail(flag, "file", ("exists with %d hard links: refusing to replace it (the others would keep the "
        .. "old content)"):format(a.nlink), path)
    end
    local f = io.open(target, "rb")
    if not f then M.fail(flag, "file", "exists and cannot be read: refusing to replace it", path) end
    local head = f:read(M.OUTPUT_HEAD_BYTES) or ""
    f:close()
    if not ours(head) then
      M.fail(flag, "file", ("exists and is not %s: refusing to replace it (remove it or give a new path)")
        :format(what), path)
    end
  end
end

--- Parses a command-line scalar: `true`/`false` -> boolean, numbers ->
-- number (integers stay integers), anything else -> the string.  A value
-- containing commas becomes an array of parsed scalars.
-- @tparam string s
-- @return parsed value
function M.parse_scalar(s)
  if s:find(",", 1, true) then
    local list = M.array()
    for part in (s .. ","):gmatch("([^,]*),") do
      if part ~= "" then list[#list + 1] = M.parse_scalar(part) end
    end
    return list
  end
  local trimmed = M.trim(s)
  if trimmed == "true" then return true end
  if trimmed == "false" then return false end
  local n = M.decimal(trimmed)
  if n ~= nil then return math.tointeger(n) or n end
  return trimmed
end

--- Root of the apsearch tree (holding lua/, rules/, examples/): the global
-- APSEARCH_ROOT set by the host, else the environment variable APS_ROOT,
-- else the directory this module was loaded from (`<root>/lua/apsearch/
-- util.lua` on package.path: a stock lua5.4 with LUA_PATH pointing into an
-- install, docs/embedding.md; `<prefix>/share/apsearch` for modules found
-- in `<prefix>/share/lua/5.4/apsearch`, Lua's standard path; the newest
-- `<tree>/lib/luarocks/rocks-5.4/apsearch/<version>/share/apsearch` in a
-- luarocks tree), else ".".
-- @treturn string
function M.root()
  local r = rawget(_G, "APSEARCH_ROOT")
  if type(r) == "string" and r ~= "" then return r end
  r = os.getenv("APS_ROOT")
  if r and r ~= "" then return r end
  local path = package.searchpath("apsearch.util", package.path)
  -- Lua's standard path under an install prefix (share/lua/5.4/apsearch,
  -- `cmake --install`, luarocks): the data are in <prefix>/share/apsearch
  local prefix = path and path:match("^(.*)/share/lua/5%.%d/apsearch/util%.lua$")
  if prefix and M.file_exists(prefix .. "/share/apsearch/rules/memory_limit.lua") then
    return prefix .. "/share/apsearch"
  end
  -- a luarocks tree (apsearch-dev-1.rockspec): the rock's own files are in
  -- <tree>/lib/luarocks/rocks-5.4/apsearch/<version>/share/apsearch
  local ok, lfs = pcall(require, "lfs")
  local rocks = prefix and (prefix .. "/lib/luarocks/rocks-5.4/apsearch")
  if ok and rocks and lfs.attributes(rocks, "mode") == "directory" then
    local versions = {}
    for v in lfs.dir(rocks) do if v ~= "." and v ~= ".." then versions[#versions + 1] = v end end
    table.sort(versions)
    for i = #versions, 1, -1 do
      local d = rocks .. "/" .. versions[i] .. "/share/apsearch"
      if M.file_exists(d .. "/rules/memory_limit.lua") then return d end
    end
  end
  r = path and (path:match("^(.*)/lua/apsearch/util%.lua$") or
    (path:match("^lua/apsearch/util%.lua$") and "."))
  if r and M.file_exists(r .. "/rules/memory_limit.lua") then return r end
  return "."
end

--- Text safe to print on a terminal: control characters (bytes 0-31 and
-- 127: escape sequences, line breaks a config's string could carry) as
-- `\ddd` escapes, and the Unicode bidirectional controls (U+202A-U+202E,
-- U+2066-U+2069, which reorder what a terminal shows) as `\u{XXXX}`; in
-- text that is not UTF-8, every byte past 127 as `\ddd`; the rest
-- unchanged.
-- @tparam string s
-- @treturn string
function M.printable(s)
  s = tostring(s):gsub("[%z\1-\31\127]", function(c) return format("\\%d", c:byte()) end)
  -- bytes that are not UTF-8: each as an escape, as describe does
  if not utf8.len(s) then s = s:gsub("[\128-\255]", function(c) return format("\\%d", c:byte()) end) end
  s = s:gsub("\226\128([\170-\174])", function(c) return format("\\u{%X}", 0x2000 + c:byte() - 0x80) end)
  return (s:gsub("\226\129([\166-\169])", function(c) return format("\\u{%X}", 0x2040 + c:byte() - 0x80) end))
end

-- The width notes on stderr are folded at (the tables' width) when stderr
-- is a terminal, else false; nil until the first line is written.
local log_width

--- Turns the folding of M.log's lines off (`--wide`: no width limit) or
-- back to its default (folded on a terminal).
-- @tparam boolean fold
function M.set_log_fold(fold)
  if fold then log_width = nil else log_width = false end
end

--- Writes one line to stderr (logs and progress; stdout carries results),
-- folded at the tables' width (apsearch.format.table.max_width, 120
-- columns) when stderr is a terminal, as the tables are; a pipe or a
-- file gets the line whole.  Stdout is flushed first, so that with both
-- streams on one pipe (`2>&1 | less`) a note follows the lines written
-- before it instead of landing inside one.
-- @tparam string fmt `string.format` format
-- @param ... format arguments
function M.log(fmt, ...)
  local text = string.format(fmt, ...)
  if log_width == nil then
    local ok, core = pcall(require, "apsearch.core")
    log_width = ok and type(core) == "table" and core.isatty and core.isatty(2)
      and require("apsearch.format.table").max_width or false
  end
  if log_width and #text > log_width then text = require("apsearch.format.common").fold_text(text, log_width) end
  io.stdout:flush()
  io.stderr:write(text, "\n")
end

--- A generated data module (a table a script writes, e.g.
-- apsearch.intervals_data), or nil when it is not installed: required once
-- per name and remembered either way.
-- @tparam string name module name
-- @treturn table|nil
local data_modules = {}
function M.data_module(name)
  if data_modules[name] == nil then
    local ok, d = pcall(require, name)
    data_modules[name] = ok and type(d) == "table" and d or false
  end
  return data_modules[name] or nil
end

return M
