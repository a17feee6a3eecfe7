--- CSV views of a search result (RFC 4180 quoting).  Units are in the
-- column names (`_s`, `_bytes`, `_gib`); array fields (stage_partition,
-- ...) are joined with `;`.
--
-- * `format(result)`: a header and one row per top-k strategy.  Memory
--   columns are the worst stage's breakdown; time columns are the exposed
--   (critical-path) seconds of each category.
-- * `candidate_writer(write, mode, gbs)`: candidates.csv of `apsearch run
--   --out`, streamed while the search runs: every candidate (`all`) or the
--   feasible ones, in enumeration order, each with its reason code.
-- @module apsearch.format.csv
local common = require "apsearch.format.common"

local M = {}

local STRATEGY = common.STRATEGY_FIELDS

local function cell(v)
  if v == nil then return "" end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = tostring(x) end
    v = table.concat(parts, ";")
  elseif type(v) == "number" then
    if math.type(v) == "integer" then v = tostring(v)
    elseif v == math.floor(v) and math.abs(v) < 1e15 then v = string.format("%.0f", v)
    else v = string.format("%.12g", v) end
  else
    v = tostring(v)
  end
  if v:find('[,"\r\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
  return v
end

--- The candidates.csv cell of a strategy field: the space's placeholders
-- spelt out (common.field_value; per-stage lists joined by ";", a moot
-- field empty), quoted as RFC 4180 asks.
-- @tparam table s strategy (a candidate)
-- @tparam string f field name
-- @tparam[opt] number gbs global batch size, sequences
-- @treturn string the cell's text
function M.strategy_cell(s, f, gbs)
  return cell(common.field_value(s, f, gbs))
end
local strategy_cell = M.strategy_cell

--- Column names, in order.
-- @treturn table array of strings
function M.columns()
  local cols = { "rank" }
  for _, f in ipairs(STRATEGY) do cols[#cols + 1] = f end
  for _, c in ipairs({ "pipeline_schedules", "objective_value", "step_time_s", "step_time_lo_s", "step_time_hi_s", "tokens_per_s",
    "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hfu", "mem_peak_bytes",
    "mem_peak_gib", "mem_peak_lo_gib", "mem_peak_hi_gib", "mem_limit_bytes" }) do
    cols[#cols + 1] = c
  end
  for _, c in ipairs(common.memory_categories) do
    if c == "comm_buffers" then
      for _, s in ipairs(common.comm_categories) do cols[#cols + 1] = "mem_comm_" .. s .. "_bytes" end
    else
      cols[#cols + 1] = "mem_" .. c .. "_bytes"
    end
  end
  for _, c in ipairs(common.time_categories) do cols[#cols + 1] = "time_" .. c .. "_s" end
  return cols
end

--- Formats a search result as CSV.
-- @tparam table result the result of apsearch.search.run
-- @treturn string CSV text, lines ending in "\n"
function M.format(result)
  local lines = { table.concat(M.columns(), ",") }
  local tr = type(result.inputs) == "table" and result.inputs.training or {}
  local gbs = tr.global_batch_size
  for _, r in ipairs(result.top_k_strategies or {}) do
    local mc, pc = r.memory_cost or {}, r.performance_cost or {}
    local row = { cell(r.rank) }
    local lay = common.resolved_layout(r)
    for _, f in ipairs(STRATEGY) do row[#row + 1] = cell(common.output_value(r, f, gbs, lay)) end
    -- the pipeline schedules of a step (training.local_batch_size), 1 without passes: not
    -- named gradient_accumulation_steps, which TorchTitan and AutoModel also count without PP
    row[#row + 1] = cell(pc.gradient_accumulation_steps or 1)
    row[#row + 1] = cell(r.objective_value)
    local si, mi = pc.step_time_interval or {}, mc.total_interval or {}
    -- (an interval may be absent: nil cells, so a counted loop)
    local vals = { pc.step_time, si.lo, si.hi, pc.tokens_per_s, pc.tokens_per_s_per_gpu,
      pc.model_tflops_per_gpu, pc.mfu, pc.hfu, mc.total, common.gib(mc.total),
      mi.lo and common.gib(mi.lo), mi.hi and common.gib(mi.hi), mc.limit }
    for i = 1, 13 do row[#row + 1] = cell(vals[i]) end
    local bd = mc.breakdown or {}
    for _, c in ipairs(common.memory_categories) do
      if c == "comm_buffers" then
        local cb = bd.comm_buffers or {}
        for _, s in ipairs(common.comm_categories) do row[#row + 1] = cell(cb[s]) end
      else
        row[#row + 1] = cell(bd[c])
      end
    end
    for _, c in ipairs(common.time_categories) do
      row[#row + 1] = cell(common.time_value(pc.breakdown, c))
    end
    lines[#lines + 1] = table.concat(row, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

--- Column names of candidates.csv, in order.
-- `index` is the enumeration position (1-based); `status` is `feasible`,
-- `infeasible` (estimated, over a limit) or `filtered` (failed a cheap
-- check, never estimated); `phase` is `early` or `estimate` (empty when
-- feasible); `reason` the filter reason code; `step_time_s` and
-- `mem_peak_bytes` are the core's estimate (empty when filtered);
-- `micro_batch_num` 0 means derived from the global batch.  The top-k rank
-- of a row is not a column (the file is written before the top-k is
-- known): `top_k_strategies[].index` of result.json names the row.
-- @treturn table array of strings
function M.candidate_columns()
  local cols = { "index", "status", "phase", "reason", "step_time_s",
    "mem_peak_bytes", "mem_peak_gib" }
  for _, f in ipairs(STRATEGY) do cols[#cols + 1] = f end
  return cols
end

--- Modes of candidates.csv (`--candidates`): every candidate, the
-- feasible ones, or no file.
M.candidate_modes = { "all", "feasible", "none" }
--- The default mode.
M.default_candidate_mode = "feasible"

--- Rows buffered before one `write` call.
M.stream_rows = 4096

--- A streaming writer of candidates.csv: a sink for apsearch.search.run
-- (`opts.candidates`) that formats each candidate as it is decided and
-- hands the text to `write` in pieces of M.stream_rows rows (the header
-- first).  The rows are assembled in C (apsearch.core.csv_rows), each
-- strategy cell spelt once here (strategy_cell) per distinct value and
-- the values its spelling reads (format.common.field_reads).  Memory
-- stays bounded whatever the number of candidates.
--
-- With `out`, the search may run on worker processes (`--jobs`): the
-- parent opens one unnamed temporary file per worker (`split`), each
-- worker appends its chunks' rows to its own (`worker`, `task_begin`,
-- `task_end`: the byte range and rows of a chunk), and the parent copies
-- each chunk's range into the file in enumeration order (`take`), so the
-- file is the one walk's, byte for byte.
-- @tparam function write `write(text)`; its errors propagate
-- @tparam string mode `all` or `feasible`
-- @tparam[opt] integer gbs global batch size (sequences), to spell out a
--   micro_batch_num left to the search as the derived count
-- @tparam[opt] table out `{tmpfile = function() -> fd | nil, err, copy =
--   function(fd, offset, bytes) -> true | nil, err, fail = function(err)}`:
--   a temporary file beside the output, the copy of a range of one into
--   it (after what `write` wrote), and optionally the error to raise when
--   either fails or a worker cannot write its file (it raises)
-- @treturn table sink `{mode, row = function(index, entry, step, mem,
--   cand), block = function(start, cand, cls, ent, cols) (mode all: a
--   block's rows, search.run), finish = function() -> rows written}`,
--   and with `out` split,
--   worker, task_begin, task_end, take and close_split (above)
function M.candidate_writer(write, mode, gbs, out)
  assert(mode == "all" or mode == "feasible", "candidate_writer: mode all or feasible")
  write(table.concat(M.candidate_columns(), ",") .. "\n")
  local rows_c = require("apsearch.core").csv_rows(STRATEGY, common.field_reads,
    function(cand, i) return strategy_cell(cand, STRATEGY[i], gbs) end)
  local rows, bn = 0, 0
  local FULL = M.stream_rows
  local put = rows_c.row
  local target = write
  -- the status, phase and reason cells of a reason's entry
  local heads = setmetatable({}, { __mode = "k" })
  local function head_of(e)
    local head = heads[e]
    if not head then
      head = (e.phase == "early" and "filtered," or "infeasible,") .. (e.phase or "") .. "," .. cell(e.code) .. ","
      heads[e] = head
    end
    return head
  end
  -- n rows more in the buffer: handed to `target` once there are FULL
  local function added(n)
    bn = bn + n
    if bn >= FULL then
      target((rows_c:take()))
      rows = rows + bn
      bn = 0
    end
  end
  local function row(index, e, st, mem, cand)
    put(rows_c, index, e and head_of(e) or "feasible,,,", st, mem, cand)
    added(1)
  end
  -- the rows of a block filtered before its estimate, in one call: the
  -- candidate at position pos (index start + pos - 1) has the reason
  -- entry ent[cls[pos]] and cand's fields with cols' values at pos
  -- (search.block_pruner's columns); the search never changes an ent it
  -- handed on, so the heads by class are made once per ent
  local heads_by_ent = setmetatable({}, { __mode = "k" })
  local function block(start, cand, cls, ent, cols)
    local by_class = heads_by_ent[ent]
    if not by_class then
      by_class = {}
      for cl, e in pairs(ent) do by_class[cl] = head_of(e) end
      heads_by_ent[ent] = by_class
    end
    rows_c:block(start, cand, cls, by_class, cols)
    added(cols.n)
  end
  local function finish()
    if bn > 0 then
      target((rows_c:take()))
      rows = rows + bn
      bn = 0
    end
    return rows
  end
  local sink = { mode = mode, row = row, block = mode == "all" and block or nil, finish = finish }
  if out then M.add_split(sink, out, function(to) target = to end, finish, function(n) rows = n end) end
  return sink
end

--- The worker side of a candidates writer (see candidate_writer).
-- @tparam table sink the writer
-- @tparam table out `{tmpfile, copy}`
-- @tparam function retarget `retarget(write)`: where rows go from now on
-- @tparam function flush `flush() -> rows written since the last reset`
-- @tparam function reset `reset(n)`: sets the rows written
function M.add_split(sink, out, retarget, flush, reset)
  local core = require "apsearch.core"
  local files, mine, at = {}, nil, 0
  -- (the output's own error when it has one: `--out: dir: ...` naming
  -- DIR, as a write by the parent raises it)
  local function check(ok, err)
    if not ok then
      if out.fail then out.fail(err) end
      error("cannot write candidates.csv: " .. tostring(err), 0)
    end
    return ok
  end
  -- opens one temporary file per worker (in the parent, before the fork)
  function sink.split(jobs)
    for i = 1, jobs do files[i] = check(out.tmpfile()) end
  end
  -- in worker i: rows go to its file
  function sink.worker(i)
    mine = i
    retarget(function(text)
      check(core.fd_write(files[i], text))
      at = at + #text
    end)
  end
  -- in a worker, before a chunk: where its rows start
  function sink.task_begin()
    reset(0)
    return at
  end
  -- in a worker, after a chunk: `{file, offset, bytes, rows}`
  function sink.task_end(from)
    local n = flush()
    return { file = mine, offset = from, bytes = at - from, rows = n }
  end
  local taken = 0
  -- in the parent, in chunk order: the chunk's rows into the file
  function sink.take(share)
    check(out.copy(files[share.file], share.offset, share.bytes))
    taken = taken + share.rows
    reset(taken)
  end
  -- in the parent: the temporary files closed (their space freed)
  function sink.close_split()
    for i, fd in ipairs(files) do core.fd_close(fd) files[i] = nil end
  end
end

--- Most bytes read back at once from a worker's temporary file by
-- `candidates_of` (core.fd_pread's limit, PROC_COPY_PIECE in
-- src/lua/lproc.c).
M.PREAD_PIECE = 1 << 20

--- candidates.csv of a policy as one string (tests, small spaces): runs
-- the search with a writer into memory.
-- @tparam table policy normalized policy
-- @tparam[opt="all"] string mode
-- @tparam[opt] table opts more options of apsearch.search.run
-- @treturn string CSV text
-- @treturn table the search result
function M.candidates_of(policy, mode, opts)
  local parts = {}
  local core = require "apsearch.core"
  local w = M.candidate_writer(function(t) parts[#parts + 1] = t end, mode or "all",
    policy.training and policy.training.global_batch_size, {
      tmpfile = function() return core.fd_tmpfile(os.getenv("TMPDIR") or "/tmp") end,
      copy = function(fd, offset, bytes)
        local piece = M.PREAD_PIECE
        for at = offset, offset + bytes - 1, piece do
          local s, err = core.fd_pread(fd, at, math.min(piece, offset + bytes - at))
          if not s then return nil, err end
          parts[#parts + 1] = s
        end
        return true
      end })
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.candidates = w
  local result = require("apsearch.search").run(policy, o)
  w.finish()
  return table.concat(parts), result
end

return M
