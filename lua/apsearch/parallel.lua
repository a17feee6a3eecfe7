--- Tasks on worker processes (`apsearch run --jobs N`): the parent
-- forks N workers, which take numbered tasks in order from a shared pipe
-- as they finish one and send each task's value back through their own
-- pipe, serialized (`M.serialize`); the parent hands the values over in
-- task order.  A Lua state is not thread-safe and the search calls the
-- policy's Lua rules and objective per candidate: each worker is a fork
-- of the whole state, policy loaded, so no state is shared.
--
-- Frames on a worker's pipe: kind (1 byte), task (u32), payload length
-- (u32), payload.  Kinds: "P" progress (payload: candidates done since
-- the last, i64), "R" a task's value, "E" a task's error (its message),
-- "F" the worker's final value (after its last task).
-- @module apsearch.parallel
local core = require "apsearch.core"
local util = require "apsearch.util"

local M = {}

--- Most tasks of one run.
M.max_tasks = 4096

--- Task numbers in the task pipe at once, at most: the first ones are
-- written before the workers start, then one more each time a task ends
-- (its number was read), so the pipe never holds more than this many
-- (4 bytes each: 4 KiB, one page, what every pipe holds: a pipe may hold
-- less than Linux's default 64 KiB, 8 KiB for a user past
-- /proc/sys/fs/pipe-user-pages-soft, and a write that does not fit
-- would block the run for ever).
M.tasks_in_pipe = 1024

-- the frame header: kind, task, payload length
local HEADER = "<c1I4I4"
local HEADER_SIZE = string.packsize(HEADER)
local TASK = "<I4"
local TASK_SIZE = string.packsize(TASK)
-- largest piece of a payload read at once, bytes
local READ_PIECE = 1 << 20
-- SIGKILL: a worker is stopped when another failed
local SIGKILL = 9

-- Lua's reserved words: not a bare key
local RESERVED = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return " ..
  "then true until while"):gmatch("%a+") do RESERVED[w] = true end

-- the text of a number, exact: integers in decimal, floats in hexadecimal
local function number_text(x)
  if math.type(x) == "integer" then
    -- (the literal of math.mininteger would read as a float)
    if x == math.mininteger then return "(-9223372036854775807-1)" end
    return string.format("%d", x)
  end
  if x ~= x then return "(0/0)" end
  if x == math.huge then return "1e9999" end
  if x == -math.huge then return "-1e9999" end
  return string.format("%a", x)
end

--- Lua text of a value made of tables, numbers, strings and booleans,
-- exact (floats in hexadecimal, integers kept integers); an array marked
-- for JSON (util.array) stays marked; other metatables are dropped.
-- @param v the value
-- @treturn string
-- @raise `parallel: cannot send a <type>` (a function, userdata, thread)
function M.serialize(v)
  local out, n = {}, 0
  local put
  -- the text of each string met (they repeat: field values); numbers are
  -- not kept (1 and 1.0, 0.0 and -0.0 are one key of a table)
  local seen = {}
  -- the text of each string key met, with its "=" (field names repeat
  -- in every strategy and entry)
  local keys = {}
  local function scalar(x)
    local t = type(x)
    if t == "string" then
      local s = seen[x]
      if not s then
        s = string.format("%q", x)
        seen[x] = s
      end
      return s
    end
    if t == "number" then return number_text(x) end
    if t == "boolean" then return x and "true" or "false" end
    error("parallel: cannot send a " .. t, 0)
  end
  function put(x)
    if type(x) ~= "table" then
      n = n + 1
      out[n] = scalar(x)
      return
    end
    n = n + 1
    out[n] = util.is_marked_array(x) and "A{" or "{"
    -- the array part by position, then the other keys
    local len = #x
    for i = 1, len do
      local e = x[i]
      if e == nil then
        n = n + 1
        out[n] = "nil" -- a hole under the border #x
      else
        put(e)
      end
      n = n + 1
      out[n] = ","
    end
    for key, val in pairs(x) do
      if not (math.type(key) == "integer" and key >= 1 and key <= len) then
        n = n + 1
        local kt = type(key) == "string" and keys[key]
        if not kt then
          if type(key) == "string" and not RESERVED[key] and key:match("^[%a_][%w_]*$") then
            kt = key .. "="
          else
            kt = "[" .. scalar(key) .. "]="
          end
          if type(key) == "string" then keys[key] = kt end
        end
        out[n] = kt
        put(val)
        n = n + 1
        out[n] = ","
      end
    end
    n = n + 1
    out[n] = "}"
  end
  put(v)
  return table.concat(out)
end

--- The value of `M.serialize`'s text.
-- @tparam string s
-- @return the value
function M.deserialize(s)
  local f = assert(load("return " .. s, "=worker value", "t", { A = util.array }))
  return f()
end

-- the text of an error value
local function error_text(e)
  if type(e) == "string" then return e end
  return util.describe(e)
end

-- worker number i: takes tasks from fd `tasks` until none is left, sends
-- frames on fd `out`; never returns
local function worker_main(opts, i, tasks, out)
  local function send(kind, task, payload)
    -- (two writes, not a copy of a large payload: only this worker
    -- writes to its pipe)
    assert(core.fd_write(out, string.pack(HEADER, kind, task, #payload)))
    assert(core.fd_write(out, payload))
  end
  local ok, err = pcall(function()
    if opts.start then opts.start(i) end
    while true do
      local s = assert(core.fd_read(tasks, TASK_SIZE))
      if s == "" then break end
      assert(#s == TASK_SIZE, "parallel: a cut task number")
      local task = string.unpack(TASK, s)
      local reported = 0
      local function report(done)
        if done > reported then
          send("P", task, string.pack("<i8", done - reported))
          reported = done
        end
      end
      local wok, v = pcall(opts.work, task, report)
      if not wok then
        send("E", task, error_text(v))
        core.exit_now(0)
      end
      send("R", task, M.serialize(v))
    end
    send("F", 0, M.serialize(opts.finish and opts.finish() or false))
  end)
  if not ok then pcall(send, "E", 0, error_text(err)) end
  core.exit_now(0)
end

-- reads exactly n bytes of fd: the string, or nil at end of file first
local function read_exactly(fd, n)
  local parts, have = {}, 0
  while have < n do
    local s = assert(core.fd_read(fd, math.min(n - have, READ_PIECE)))
    if s == "" then return nil end
    parts[#parts + 1] = s
    have = have + #s
  end
  return table.concat(parts)
end

-- the error of workers that cannot be started (a pipe or a fork refused:
-- the open-file or process limit)
local function cannot_start(opts, err)
  error(string.format("%s: cannot start the %d worker processes of --jobs %d: %s; raise the limit " ..
    "(ulimit -n for open files, ulimit -u for processes) or run in one process with --jobs 1",
    opts.label or "search", opts.jobs, opts.jobs, tostring(err)), 0)
end

-- forks worker number i; returns its pid and the read end of its pipe;
-- the child closes the descriptors of `others` (the parent's ends)
local function start_worker(opts, i, tasks, others)
  local r, w, perr = core.pipe()
  if not r then cannot_start(opts, w or perr) end
  local sandbox = require "apsearch.sandbox"
  io.stdout:flush()
  io.stderr:flush()
  sandbox.prepare_fork()
  local pid, err = core.fork()
  if pid == 0 then
    core.fd_close(r)
    for _, fd in ipairs(others) do core.fd_close(fd) end
    worker_main(opts, i, tasks, w)
  end
  core.fd_close(w)
  if not pid then
    core.fd_close(r)
    cannot_start(opts, err)
  end
  return pid, r
end

-- the parent's side: reads every worker's frames until all have ended,
-- feeding the task pipe (`feed()` after each task that ended); returns
-- nil, or the error to raise
local function collect(opts, fds, feed)
  local pending, next_task, done = {}, 1, 0
  local err_task, err_msg = math.huge, nil
  local open, finished = #fds, {}
  local watch = {}
  for i, fd in ipairs(fds) do watch[i] = fd end
  while open > 0 do
    for _, fd in ipairs(assert(core.poll(watch, -1))) do
      local h = read_exactly(fd, HEADER_SIZE)
      local kind, task, len
      if h then kind, task, len = string.unpack(HEADER, h) end
      local payload = h and read_exactly(fd, len)
      if not payload then
        -- end of file: the worker is done, or died
        for i = #watch, 1, -1 do if watch[i] == fd then table.remove(watch, i) end end
        open = open - 1
      elseif kind == "P" then
        done = done + string.unpack("<i8", payload)
        if opts.progress then opts.progress(done) end
      elseif kind == "R" then
        feed()
        pending[task] = M.deserialize(payload)
        while pending[next_task] ~= nil and next_task < err_task do
          opts.on_result(next_task, pending[next_task])
          pending[next_task] = nil
          next_task = next_task + 1
        end
      elseif kind == "E" then
        if task > 0 then feed() end
        if task < err_task then err_task, err_msg = task, payload end
      elseif kind == "F" then
        finished[fd] = true
        if opts.on_finish then opts.on_finish(M.deserialize(payload)) end
      end
      -- an error: raised once every task before it is done (the one walk
      -- would have met it first)
      if err_msg and next_task >= err_task then return err_msg end
    end
  end
  for _, fd in ipairs(fds) do
    if not finished[fd] then return false end
  end
  return nil
end

--- Runs tasks 1..`tasks` on `jobs` worker processes.
-- @tparam table opts
--   `jobs` (workers, >= 1), `tasks` (1..M.max_tasks);
--   `work(task, report)` (in a worker: the task's value; `report(done)`
--   tells the parent how much of the task is done, a count);
--   `start(i)` (in worker number i, 1..jobs, before its first task);
--   `finish()` (in a worker, after its last task: its final value);
--   `on_result(task, value)` (in the parent, in task order);
--   `on_finish(value)` (in the parent, once per worker, in any order);
--   `progress(done)` (in the parent: the sum of every task's reports);
--   `label` (the command its errors name, default "search")
-- @raise the error of the earliest task that raised one (its message, as
--   raised), or `<label>: worker process N was killed by signal S before
--   it finished`
function M.run(opts)
  assert(opts.tasks >= 1 and opts.tasks <= M.max_tasks, "parallel: tasks out of range")
  local tr, tw = core.pipe()
  if not tr then cannot_start(opts, tw) end
  -- task numbers: the first M.tasks_in_pipe now, then one each time a
  -- task ends (`feed`); the write end closed after the last, so that a
  -- worker's read then meets the end of the pipe
  local written = 0
  local function write_tasks(n)
    local nums = {}
    for t = written + 1, math.min(opts.tasks, written + n) do nums[#nums + 1] = string.pack(TASK, t) end
    written = written + #nums
    if #nums > 0 then assert(core.fd_write(tw, table.concat(nums))) end
    if written == opts.tasks and tw then
      core.fd_close(tw)
      tw = nil
    end
  end
  write_tasks(M.tasks_in_pipe)
  local pids, fds = {}, {}
  local ok, err = pcall(function()
    for i = 1, opts.jobs do
      -- the child closes the write end of the task pipe (else its reads
      -- never meet the end) and the read ends of the workers before it
      local others = {}
      for k, fd in ipairs(fds) do others[k] = fd end
      if tw then others[#others + 1] = tw end
      pids[i], fds[i] = start_worker(opts, i, tr, others)
    end
  end)
  core.fd_close(tr)
  local failure
  if ok then
    ok, failure = pcall(collect, opts, fds, function() if tw then write_tasks(1) end end)
    if not ok then err = failure end
  end
  if tw then
    core.fd_close(tw)
    tw = nil
  end
  -- every worker is stopped and waited for, whatever happened
  if not ok or failure ~= nil then
    for _, pid in ipairs(pids) do core.kill(pid, SIGKILL) end
  end
  local died
  for _, pid in ipairs(pids) do
    local how, code = core.waitpid(pid)
    if how == "signal" then
      died = died or string.format("worker process %d was killed by signal %d", pid, code)
    elseif how ~= "exit" or code ~= 0 then
      died = died or string.format("worker process %d ended with status %s", pid, tostring(code))
    end
  end
  for _, fd in ipairs(fds) do core.fd_close(fd) end
  if not ok then error(err, 0) end
  if failure then error(failure, 0) end
  if failure == false then
    error((opts.label or "search") .. ": " .. (died or "a worker process ended") .. " before it finished", 0)
  end
end

return M
