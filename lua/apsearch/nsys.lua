--- Reads an Nsight Systems SQLite export (`nsys export --type sqlite`)
-- as the events of a PyTorch profiler (Kineto) trace, for
-- apsearch.trace (`apsearch calibrate --trace`): its CUDA runtime calls,
-- kernels and ProfilerStep NVTX ranges, through lua-sql-sqlite3 (Debian
-- package lua-sql-sqlite3).  Tables and columns as Nsight Systems'
-- SQLite schema reference names them (2021-2025 exports; tested on
-- pipit's public exports, tests/lua/trace_spec.lua).
-- @module apsearch.nsys

local M = {}

--- Most rows read from an export: the runtime calls, kernels and NVTX
-- ranges together, and apart the strings they name (StringIds).  A
-- breaker's export of 15 M such rows took 9.0 GB (600 B a row), so this
-- many take about 1.2 GB; a longer profile: record one rank and fewer
-- steps (`nsys profile --capture-range`).
M.MAX_ROWS = 2000000

--- Most bytes of text read from an export (the strings of StringIds, or
-- NVTX_EVENTS' own text): a real profile's names take a few MB; a file of
-- 200 MB strings would hold them all in memory.
M.MAX_TEXT_BYTES = 256 << 20

--- The columns of `CUPTI_ACTIVITY_KIND_RUNTIME` read.
M.RUNTIME_COLUMNS = { "start", "end", "globalTid", "correlationId", "nameId" }

-- The rows of a query on an open export, as tables of named columns.
local function nsys_rows(fail, con, sql)
  local cur, err = con:execute(sql)
  if not cur then fail("Nsight Systems export: " .. tostring(err)) end
  local out = {}
  -- the cursor closed whatever happens (an open one made the connection's
  -- close fail with "there are open cursors", hiding the real error)
  local ok, why = pcall(function()
    local row = cur:fetch({}, "a")
    while row do
      out[#out + 1] = row
      row = cur:fetch({}, "a")
    end
  end)
  cur:close()
  if not ok then fail("Nsight Systems export: reading it failed (" .. tostring(why) .. ")") end
  return out
end

-- The columns of a table of an open export (empty when there is none).
-- Nsight Systems writes tables; a view (or a virtual table) is refused
-- before it is read: its rows are a query's, with no bound on their
-- number or time (a breaker's recursive view hung `calibrate --trace`).
-- (SQLite resolves names without regard to case: so is the lookup, or a
-- view named in lower case passed the check and hung the read.)  A table
-- with a generated column is refused too: its expression runs on every
-- read (a 2 MB export took a second a row; table_xinfo's hidden 2 and 3
-- are the VIRTUAL and STORED generated columns, 1 a virtual table's).
local function nsys_columns(fail, con, tbl)
  local kind = nsys_rows(fail, con, "SELECT type, sql FROM sqlite_master WHERE name = '" .. tbl ..
    "' COLLATE NOCASE")[1]
  if kind and (kind.type ~= "table" or tostring(kind.sql):upper():match("^%s*CREATE%s+VIRTUAL")) then
    fail(("Nsight Systems export: %s is a %s, not a table (nsys export writes tables)"):format(tbl,
      kind.type == "table" and "virtual table" or tostring(kind.type)))
  end
  local cols = {}
  for _, r in ipairs(nsys_rows(fail, con, "PRAGMA table_xinfo(" .. tbl .. ")")) do
    if (tonumber(r.hidden) or 0) ~= 0 then
      fail(("Nsight Systems export: %s.%s is a generated column (nsys export writes plain columns)"):format(tbl,
        tostring(r.name)))
    end
    cols[r.name] = true
  end
  return cols
end

-- The rows of a table, refused past M.MAX_ROWS together with `seen` rows
-- read before; returns the rows and the new total.
local function counted(fail, con, tbl, sql, seen)
  local n = nsys_rows(fail, con, "SELECT count(*) AS n FROM " .. tbl)[1].n
  if seen + n > M.MAX_ROWS then
    fail(("Nsight Systems export: %d rows in %s%s, more than %d: profile fewer steps (nsys profile " ..
      "--capture-range)"):format(n, tbl, seen > 0 and " beyond the ones read before" or "", M.MAX_ROWS))
  end
  return nsys_rows(fail, con, sql), seen + n
end

-- Refuses a text column of a table past M.MAX_TEXT_BYTES, before it is read.
local function text_bounded(fail, con, tbl, col)
  local n = tonumber(nsys_rows(fail, con, ("SELECT total(length(%s)) AS n FROM %s"):format(col, tbl))[1].n) or 0
  if n > M.MAX_TEXT_BYTES then
    fail(("Nsight Systems export: %.0f bytes of text in %s.%s, more than %d"):format(n, tbl, col, M.MAX_TEXT_BYTES))
  end
end

-- A timestamp column of a row as a number of nanoseconds (NULL, text or a
-- blob is refused naming the table, row and column).
local function ns(fail, tbl, i, r, col)
  local v = r[col]
  if math.type(v) ~= "integer" and not (type(v) == "number" and v == v and v > -math.huge and v < math.huge) then
    fail(("Nsight Systems export: %s row %d: %s must be a number of nanoseconds (got %s)"):format(tbl, i, col,
      require("apsearch.util").describe(v)))
  end
  return v
end

-- A Kineto event of a row: ts and dur in microseconds, `src` naming the
-- row for apsearch.trace's messages.
local function event(fail, tbl, i, r, e)
  local start, stop = ns(fail, tbl, i, r, "start"), ns(fail, tbl, i, r, "end")
  e.ph, e.ts, e.dur, e.src = "X", start / 1000, (stop - start) / 1000, ("%s row %d"):format(tbl, i)
  return e
end

-- Nsight Systems' tables as Kineto events (ts and dur in microseconds):
-- runtime calls (`CUPTI_ACTIVITY_KIND_RUNTIME`, their names without the
-- `_v7000` version suffix), kernels (`CUPTI_ACTIVITY_KIND_KERNEL`, absent
-- when nothing was launched) and ProfilerStep NVTX ranges (`NVTX_EVENTS`,
-- as PyTorch's emit_nvtx or torch.cuda.nvtx name them), with the
-- correlation ids that join a launch to its kernel; globalTid packs the
-- process in bits 24-47 and the thread in bits 0-23 (Nsight Systems'
-- SQLite schema reference).
local function nsys_events(fail, con, names, seen)
  local events = {}
  local rows
  rows, seen = counted(fail, con, "CUPTI_ACTIVITY_KIND_RUNTIME", "SELECT start, end, globalTid, correlationId, " ..
    "nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME", seen)
  for i, r in ipairs(rows) do
    local name = tostring(names[r.nameId] or ""):gsub("_v%d+$", "")
    local gtid = math.tointeger(r.globalTid) or 0
    events[#events + 1] = event(fail, "CUPTI_ACTIVITY_KIND_RUNTIME", i, r, { cat = "cuda_runtime", name = name,
      pid = (gtid >> 24) & 0xFFFFFF, tid = gtid & 0xFFFFFF, args = { correlation = r.correlationId } })
  end
  if nsys_columns(fail, con, "CUPTI_ACTIVITY_KIND_KERNEL").start then
    rows, seen = counted(fail, con, "CUPTI_ACTIVITY_KIND_KERNEL", "SELECT start, end, deviceId, streamId, " ..
      "correlationId, demangledName, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL", seen)
    for i, r in ipairs(rows) do
      events[#events + 1] = event(fail, "CUPTI_ACTIVITY_KIND_KERNEL", i, r, { cat = "kernel",
        name = names[r.demangledName] or names[r.shortName] or "", pid = r.deviceId, tid = r.streamId,
        args = { correlation = r.correlationId } })
    end
  end
  local nvtx = nsys_columns(fail, con, "NVTX_EVENTS")
  if nvtx.start and nvtx["end"] and (nvtx.textId or nvtx.text) then
    local text = nvtx.textId and "textId" or "text"
    if text == "text" then text_bounded(fail, con, "NVTX_EVENTS", "text") end
    rows = counted(fail, con, "NVTX_EVENTS", "SELECT start, end, " .. text .. " AS t FROM NVTX_EVENTS " ..
      "WHERE end IS NOT NULL", seen)
    for i, r in ipairs(rows) do
      local name = text == "textId" and names[r.t] or r.t
      if type(name) == "string" and name:match("^ProfilerStep#%d+$") then
        events[#events + 1] = event(fail, "NVTX_EVENTS", i, r, { cat = "user_annotation", name = name,
          pid = 0, tid = 0 })
      end
    end
  end
  return events
end

-- The export's runtime table checked: present, with the columns read.
local function check_runtime(fail, con)
  local cols = nsys_columns(fail, con, "CUPTI_ACTIVITY_KIND_RUNTIME")
  if not next(cols) then
    fail("an SQLite file without CUPTI_ACTIVITY_KIND_RUNTIME: not an Nsight Systems export of a CUDA trace " ..
      "(nsys profile --trace=cuda, then nsys export --type sqlite)")
  end
  for _, c in ipairs(M.RUNTIME_COLUMNS) do
    if not cols[c] then fail("Nsight Systems export: CUPTI_ACTIVITY_KIND_RUNTIME has no column " .. c) end
  end
end

-- An SQLite URI that opens the file read-only and immutable: the export
-- is never written, and a WAL or journal beside it is neither replayed
-- nor removed (SQLite's URI filenames, `mode=ro`, `immutable=1`).
local function readonly_uri(path)
  local abs = require("apsearch.core").realpath(path) or path
  return "file:" .. abs:gsub("[%%?#]", function(c) return ("%%%02X"):format(c:byte()) end) ..
    "?mode=ro&immutable=1"
end

--- Loads an export as apsearch.trace.load does a Kineto trace.
-- @tparam string path an SQLite file (its magic checked by the caller)
-- @tparam function fail called with a one-line problem; must not return
-- @treturn table `{events = {...}, devices = {name...}, memory = {bytes...},
--   path}`; each event's `src` names its table and row
function M.load(path, fail)
  local ok, driver = pcall(require, "luasql.sqlite3")
  if not ok then fail("an Nsight Systems SQLite export needs lua-sql-sqlite3 (Debian package lua-sql-sqlite3)") end
  local env = driver.sqlite3()
  local con, err = env:connect(readonly_uri(path))
  if not con then fail("Nsight Systems export: " .. tostring(err)) end
  local good, result = pcall(function()
    check_runtime(fail, con)
    local names = {}
    nsys_columns(fail, con, "StringIds")
    text_bounded(fail, con, "StringIds", "value")
    local strings, seen = counted(fail, con, "StringIds", "SELECT id, value FROM StringIds", 0)
    for _, r in ipairs(strings) do
      names[r.id] = r.value
    end
    local devices, memory = {}, {}
    local gpu = nsys_columns(fail, con, "TARGET_INFO_GPU")
    if gpu.name then
      text_bounded(fail, con, "TARGET_INFO_GPU", "name")
      for _, r in ipairs((counted(fail, con, "TARGET_INFO_GPU", "SELECT name" .. (gpu.totalMemory and ", totalMemory"
          or "") .. " FROM TARGET_INFO_GPU ORDER BY id", seen))) do
        devices[#devices + 1] = tostring(r.name)
        memory[#devices] = r.totalMemory
      end
    end
    return { events = nsys_events(fail, con, names, seen), devices = devices, memory = memory, path = path }
  end)
  pcall(con.close, con)
  pcall(env.close, env)
  if not good then error(result, 0) end
  return result
end

return M
