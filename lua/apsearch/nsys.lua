--- Reads an Nsight Systems SQLite export (`nsys export --type sqlite`)
-- as the events of a PyTorch profiler (Kineto) trace, for
-- apsearch.trace (`apsearch calibrate --trace`): its CUDA runtime calls,
-- kernels and ProfilerStep NVTX ranges, through lua-sql-sqlite3 (Debian
-- package lua-sql-sqlite3).  Tables and columns as Nsight Systems'
-- SQLite schema reference names them (2021-2025 exports; tested on
-- pipit's public exports, tests/lua/trace_spec.lua).
-- @module apsearch.nsys

local M = {}

--- Most rows read from one table of an Nsight Systems export: a longer
-- profile, record one rank and fewer steps (`nsys profile --capture-range`).
M.MAX_ROWS = 5000000

-- The rows of a query on an open export, as tables of named columns.
local function nsys_rows(fail, con, sql)
  local cur, err = con:execute(sql)
  if not cur then fail("Nsight Systems export: " .. tostring(err)) end
  local out = {}
  local row = cur:fetch({}, "a")
  while row do
    out[#out + 1] = row
    row = cur:fetch({}, "a")
  end
  cur:close()
  return out
end

-- The columns of a table of an open export (empty when there is none).
local function nsys_columns(fail, con, tbl)
  local cols = {}
  for _, r in ipairs(nsys_rows(fail, con, "PRAGMA table_info(" .. tbl .. ")")) do cols[r.name] = true end
  return cols
end

-- Nsight Systems' tables as Kineto events (ts and dur in microseconds):
-- runtime calls (`CUPTI_ACTIVITY_KIND_RUNTIME`, their names without the
-- `_v7000` version suffix), kernels (`CUPTI_ACTIVITY_KIND_KERNEL`) and
-- ProfilerStep NVTX ranges (`NVTX_EVENTS`, as PyTorch's emit_nvtx or
-- torch.cuda.nvtx name them), with the correlation ids that join a launch
-- to its kernel; globalTid packs the process in bits 24-47 and the
-- thread in bits 0-23 (Nsight Systems' SQLite schema reference).
local function nsys_events(fail, con, names)
  local events = {}
  for _, tbl in ipairs({ "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS" }) do
    local cols = nsys_columns(fail, con, tbl)
    local n = next(cols) and nsys_rows(fail, con, "SELECT count(*) AS n FROM " .. tbl)[1].n or 0
    if n > M.MAX_ROWS then
      fail(("Nsight Systems export: %s has %d rows, more than %d: profile fewer steps"):format(tbl, n,
        M.MAX_ROWS))
    end
  end
  for _, r in ipairs(nsys_rows(fail, con, "SELECT start, end, globalTid, correlationId, nameId " ..
      "FROM CUPTI_ACTIVITY_KIND_RUNTIME")) do
    local name = tostring(names[r.nameId] or ""):gsub("_v%d+$", "")
    local gtid = math.tointeger(r.globalTid) or 0
    events[#events + 1] = { ph = "X", cat = "cuda_runtime", name = name, pid = (gtid >> 24) & 0xFFFFFF,
      tid = gtid & 0xFFFFFF, ts = r.start / 1000, dur = (r["end"] - r.start) / 1000,
      args = { correlation = r.correlationId } }
  end
  for _, r in ipairs(nsys_rows(fail, con, "SELECT start, end, deviceId, streamId, correlationId, demangledName, " ..
      "shortName FROM CUPTI_ACTIVITY_KIND_KERNEL")) do
    events[#events + 1] = { ph = "X", cat = "kernel", name = names[r.demangledName] or names[r.shortName] or "",
      pid = r.deviceId, tid = r.streamId, ts = r.start / 1000, dur = (r["end"] - r.start) / 1000,
      args = { correlation = r.correlationId } }
  end
  local nvtx = nsys_columns(fail, con, "NVTX_EVENTS")
  if nvtx.start then
    local text = nvtx.textId and "textId" or "text"
    for _, r in ipairs(nsys_rows(fail, con, "SELECT start, end, " .. text .. " AS t FROM NVTX_EVENTS " ..
        "WHERE end IS NOT NULL")) do
      local name = text == "textId" and names[r.t] or r.t
      if type(name) == "string" and name:match("^ProfilerStep#%d+$") then
        events[#events + 1] = { ph = "X", cat = "user_annotation", name = name, pid = 0, tid = 0,
          ts = r.start / 1000, dur = (r["end"] - r.start) / 1000 }
      end
    end
  end
  return events
end

--- Loads an export as apsearch.trace.load does a Kineto trace.
-- @tparam string path an SQLite file (its magic checked by the caller)
-- @tparam function fail called with a one-line problem; must not return
-- @treturn table `{events = {...}, devices = {name...}, memory = {bytes...},
--   path}`
function M.load(path, fail)
  local ok, driver = pcall(require, "luasql.sqlite3")
  if not ok then fail("an Nsight Systems SQLite export needs lua-sql-sqlite3 (Debian package lua-sql-sqlite3)") end
  local env = driver.sqlite3()
  local con, err = env:connect(path)
  if not con then fail("Nsight Systems export: " .. tostring(err)) end
  local good, result = pcall(function()
    if not nsys_columns(fail, con, "CUPTI_ACTIVITY_KIND_RUNTIME").start then
      fail("an SQLite file without CUPTI_ACTIVITY_KIND_RUNTIME: not an Nsight Systems export of a CUDA trace " ..
        "(nsys profile --trace=cuda, then nsys export --type sqlite)")
    end
    local names = {}
    for _, r in ipairs(nsys_rows(fail, con, "SELECT id, value FROM StringIds")) do names[r.id] = r.value end
    local devices, memory = {}, {}
    local gpu = nsys_columns(fail, con, "TARGET_INFO_GPU")
    if gpu.name then
      for _, r in ipairs(nsys_rows(fail, con, "SELECT name" .. (gpu.totalMemory and ", totalMemory" or "") ..
          " FROM TARGET_INFO_GPU ORDER BY id")) do
        devices[#devices + 1] = tostring(r.name)
        memory[#devices] = r.totalMemory
      end
    end
    return { events = nsys_events(fail, con, names), devices = devices, memory = memory, path = path }
  end)
  con:close()
  env:close()
  if not good then error(result, 0) end
  return result
end

return M
