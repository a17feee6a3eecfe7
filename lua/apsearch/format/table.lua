--- Aligned text table of a search result's top-k strategies, with a summary
-- header and the filter reasons.  Units are in the headers: step time in
-- seconds, throughput in tokens/s per GPU, MFU in percent, memory in GiB
-- (2^30 bytes).
-- @module apsearch.format.table
local common = require "apsearch.format.common"

local M = {}

local HEADERS = { "rank", "dp", "fsdp", "zero", "reshard", "tp", "sp", "pp",
  "vpp", "schedule", "layers", "cp", "cp comm", "ep", "dispatcher", "mbs", "mbn", "recompute",
  "step time (s)", "tokens/s/GPU", "MFU (%)", "peak (GiB)", "top memory (GiB)", "top overhead (s)",
  "objective" }
local RIGHT = { true, true, true, true, false, true, false, true, true, false, false, true,
  false, true, false, true, true, false, true, true, true, true, false, false, true }

-- the "ep" cell: expert parallelism of an MoE strategy, "8" or with expert
-- tensor parallelism "8 x etp 2"; "-" for a dense model.  Under tensor
-- parallelism the expert TP is said even at 1 ("8 x etp 1"): Megatron-Core
-- defaults it to the TP degree, as `estimate` does, so a row typed back
-- without it would estimate another layout
local function ep_text(r)
  if r.ep_degree == nil then return "-" end
  local etp = r.etp_degree or 1
  local said = etp > 1 or (r.tp_degree or 1) > 1
  return tostring(r.ep_degree) .. (said and (" x etp " .. tostring(etp)) or "")
end

-- the "dispatcher" cell: an MoE strategy's token dispatcher (Megatron
-- --moe-token-dispatcher-type; the search's default alltoall when the
-- record leaves it out), with " cap F" when tokens are dropped at
-- capacity factor F (--moe-expert-capacity-factor; 0 = dropless, not
-- shown); "-" for a dense model
local function dispatcher_text(r)
  if r.ep_degree == nil then return "-" end
  local cf = r.moe_capacity_factor
  return tostring(common.field_value(r, "moe_token_dispatcher")) ..
    ((type(cf) == "number" and cf > 0) and string.format(" cap %g", cf) or "")
end

-- the "schedule" cell: the pipeline schedule, with " g5" when Megatron's
-- interleaved table runs groups of 5 micro-batches per model chunk
-- (microbatch_group_size; not shown at its default, pp_degree); "-"
-- without pipelining
local function schedule_text(r)
  if (r.pp_degree or 1) == 1 then return "-" end
  local g = common.field_value(r, "microbatch_group_size")
  return tostring(r.pp_schedule or "1f1b") .. (g and (" g" .. tostring(g)) or "")
end

-- column of the objective's score (last of M.rows; the text table moves
-- it next to rank)
local OBJECTIVE_COL = #HEADERS

--- Width the text table and its lines fit by default (`--wide`: no
-- limit), common.TERMINAL_WIDTH.
M.max_width = common.TERMINAL_WIDTH

--- The objective's score as a cell: step_time in s, memory in GiB of
-- peak, throughput in tokens/s per GPU, the composite's score, the Pareto
-- front number, a user score with 4 significant digits; "-" without one.
-- @tparam string|nil name the objective's name (result.inputs.objective)
-- @param v the record's objective_value
-- @treturn string
function M.objective_cell(name, v)
  if type(v) ~= "number" then return "-" end
  if name == "step_time" then return string.format("%.3f", v) end
  if name == "memory" then return string.format("%.2f", common.gib(v)) end
  if name == "throughput" then return string.format("%.0f", v) end
  if name == "pareto" then return string.format("%d", v) end
  if type(name) == "string" and name:match("^composite") then return string.format("%.4f", v) end
  -- "%#.4g": four significant digits always written (3.020e+05 beside
  -- 3.078e+05, not 3.02e+05)
  return string.format("%#.4g", v)
end

--- The column of the text table that shows the built-in objective's score
-- (step_time: "step (s)", memory: "peak GiB"), or nil: another objective,
-- or a policy's own (`inputs.objective_custom`) whatever its name.
-- @tparam table result
-- @treturn string|nil
function M.score_column(result)
  local inp = result.inputs or {}
  if inp.objective_custom then return nil end
  return ({ step_time = "step (s)", memory = "peak GiB" })[inp.objective]
end

--- One line naming the objective of the `objective` column and its unit.
-- @tparam table result
-- @treturn string|nil
function M.objective_note(result)
  local name = (result.inputs or {}).objective
  if name == nil then return nil end
  local what = {
    step_time = "step time in s, lower is better",
    memory = "peak memory in GiB, lower is better",
    throughput = "tokens/s per GPU, higher is better",
    pareto = "Pareto front number, 1 = on the step time / memory front",
  }
  local text = what[name]
  if not text and tostring(name):match("^composite") then
    text = "sum of weight x log(term), lower is better"
  end
  local inp = result.inputs or {}
  if inp.objective_custom then text = nil end
  -- (the text table shows a built-in's score in that column alone)
  if text and M.score_column(result) then text = text .. ": the " .. M.score_column(result) .. " column" end
  if not text and inp.objective_unit then
    local dir = inp.objective_maximize == true and ", higher is better"
      or (inp.objective_maximize == false and ", lower is better" or "")
    text = tostring(inp.objective_unit) .. dir
  end
  return string.format("objective: %s (%s)", tostring(name), text or "the objective's score")
end

--- Layers per pipeline stage, run-length encoded as count x layers:
-- "7+14x8+7" (7, then 14 stages of 8, then 7), "31x4+2";
-- "-" without pipeline parallelism.
-- @tparam table per_stage memory_cost.per_stage of a top-k record
-- @treturn string
function M.split_text(per_stage)
  if not per_stage or #per_stage < 2 then return "-" end
  local parts, i = {}, 1
  while i <= #per_stage do
    local n, j = per_stage[i].num_layers, i
    while j < #per_stage and per_stage[j + 1].num_layers == n do j = j + 1 end
    parts[#parts + 1] = (j > i) and string.format("%dx%d", j - i + 1, n) or tostring(n)
    i = j + 1
  end
  return table.concat(parts, "+")
end

local function yn(b) return b and "on" or "off" end

-- a folded cell's text as the strategy fields --strategy and --fix take
-- back (schema.strategy_short): the cells that join two fields split
-- ("64 x etp 1", "alltoall cap 1.25", "1f1b g5"), the two-word header
-- spelt as the field's short name
local SAME_PAIR = {
  ["cp comm"] = function(v) return "cp_comm=" .. v end,
  ep = function(v)
    local ep, etp = v:match("^(%d+) x etp (%d+)$")
    return ep and ("ep=" .. ep .. " etp=" .. etp) or ("ep=" .. v)
  end,
  dispatcher = function(v)
    local d, cf = v:match("^(%S+) cap (%S+)$")
    return d and ("dispatcher=" .. d .. " capacity=" .. cf) or ("dispatcher=" .. v)
  end,
  schedule = function(v)
    local sched, g = v:match("^(%S+) g(%d+)$")
    return sched and ("schedule=" .. sched .. " mbgroup=" .. g) or ("schedule=" .. v)
  end,
}

--- A column folded into the "same for every row" line as `key=value`
-- pairs that `estimate --strategy` and `run --fix` take as they are.
-- @tparam string header the column's header (M.rows)
-- @tparam string value its cell text, the same on every row
-- @treturn string
function M.same_pair(header, value)
  local f = SAME_PAIR[header]
  return f and f(value) or (header .. "=" .. value)
end

--- Rows of the top-k table (cells as strings), for reuse.
-- @tparam table result search result
-- @treturn table headers
-- @treturn table rows
-- @treturn table right-alignment flags
function M.rows(result)
  local rows = {}
  for _, r in ipairs(result.top_k_strategies or {}) do
    local mc, pc = r.memory_cost or {}, r.performance_cost or {}
    local tm, tmv = common.top_memory(mc.breakdown)
    local tt, ttv = common.top_time(pc.breakdown, true)
    -- "full(N/L)": N of the L layers recomputed in all (per stage, or chosen by
    -- recompute_num_layers = "auto"), as the stages run them (a count above
    -- a stage's layers recomputes that stage's layers); plain "full": every
    -- layer; none recomputed: "none"; "uniform(G)": every layer, in
    -- groups of G (Megatron --recompute-method uniform; G per stage joined
    -- by "/" where the stages differ); "selective(M)": selective recompute
    -- of the modules M (Megatron --recompute-modules, "/" between), plain
    -- "selective" when none are given (the framework's own set)
    local rc = tostring(r.layer_recompute)
    local mods = r.recompute_modules
    if r.layer_recompute == "selective" and type(mods) == "string" and mods ~= "" then
      rc = "selective(" .. mods .. ")"
    end
    local rnl = r.recompute_num_layers
    if r.layer_recompute == "full" and r.recompute_method == "uniform" then
      local groups, seen = {}, {}
      local list = type(rnl) == "table" and rnl or { rnl }
      for _, v in ipairs(list) do
        local g = (type(v) == "number" and v > 0) and v or 1 -- as the core takes it
        if not seen[g] then seen[g] = true groups[#groups + 1] = tostring(g) end
      end
      rc = "uniform(" .. (#groups > 0 and table.concat(groups, "/") or "1") .. ")"
    elseif r.layer_recompute == "full" then
      local per = mc.per_stage or {}
      local list = type(rnl) == "table" and rnl or {}
      local n, layers = 0, 0
      for i, st in ipairs(per) do
        local k = st.num_layers or 0
        local v = list[i] or (type(rnl) == "number" and rnl or -1)
        n, layers = n + ((v < 0 or v > k) and k or v), layers + k
      end
      if #per == 0 then rc = "full"
      elseif n == 0 then rc = "none"
      elseif n < layers then rc = rc .. "(" .. n .. "/" .. layers .. ")" end
    end
    rows[#rows + 1] = {
      tostring(r.rank), tostring(r.dp_degree), tostring(r.fsdp_degree),
      tostring(r.zero_stage),
      (r.fsdp_degree or 1) > 1 and yn(r.reshard_after_forward) or "-",
      tostring(r.tp_degree), r.tp_degree == 1 and "-" or yn(r.sequence_parallel),
      tostring(r.pp_degree), tostring(r.vpp_degree),
      schedule_text(r),
      M.split_text(mc.per_stage),
      tostring(r.cp_degree),
      (r.cp_degree or 1) > 1 and tostring(r.cp_comm_type) or "-",
      ep_text(r), dispatcher_text(r),
      tostring(r.micro_batch_size), common.mbn_text(r), rc,
      string.format("%.3f", pc.step_time or 0),
      string.format("%.0f", pc.tokens_per_s_per_gpu or 0),
      string.format("%.1f", 100 * (pc.mfu or 0)) .. (pc.mfu_above_published and "^" or ""),
      string.format("%.2f", common.gib(mc.total)) .. (mc.near_capacity and "!" or ""),
      tm and string.format("%s %.2f", tm, common.gib(tmv)) or "-",
      tt and string.format("%s %.3f", tt, ttv) or "-",
      M.objective_cell((result.inputs or {}).objective, r.objective_value),
    }
  end
  -- copies: callers reorder them (table_text moves the objective column)
  return table.move(HEADERS, 1, #HEADERS, 1, {}), rows, table.move(RIGHT, 1, #RIGHT, 1, {})
end

-- strategy columns (2 .. 18 of M.rows) that hold one value in every row
-- move to a line above the table; `pareto_front` gets a column when present

--- The columns of a top-k table to keep and those that fold into a "same
-- for every row" line: a foldable column with one value in every row folds
-- (with two rows or more); a setting that is off in every row ("-": no TP
-- for sp, no experts for ep) leaves the table, one row or many. The text
-- table and the report's share it.
-- @tparam table headers column names
-- @tparam table rows arrays of cells (strings)
-- @tparam function foldable `foldable(j)`: column j may fold
-- @treturn table keep: the column numbers shown, in order
-- @treturn table same: `{header, value}` of each folded column
function M.fold_columns(headers, rows, foldable)
  local keep, same = {}, {}
  for j = 1, #headers do
    local constant = #rows >= 1 and foldable(j)
    if constant then
      for i = 2, #rows do
        if tostring(rows[i][j]) ~= tostring(rows[1][j]) then constant = false break end
      end
    end
    local v = constant and tostring(rows[1][j])
    if constant and v == "-" then -- off everywhere: left out
    elseif constant and #rows >= 2 then same[#same + 1] = { headers[j], v }
    else keep[#keep + 1] = j end
  end
  return keep, same
end

-- columns fitted to M.max_width, in this order, until the table fits
-- (headers always abbreviated): the "top ..." columns left out (--wide shows
-- them), then one space between columns instead of two, and last the
-- throughput column (for one model, batch and cluster the step time says
-- the same)
local ABBREV = { ["step time (s)"] = "step (s)", ["tokens/s/GPU"] = "tok/s/GPU",
  ["recompute"] = "recomp", ["peak (GiB)"] = "peak GiB" }
local DROP = { "top overhead (s)", "top memory (GiB)" }

local function width_of(text)
  local w = 0
  for line in text:gmatch("[^\n]+") do if #line > w then w = #line end end
  return w
end

-- removes the column headed `name` from headers h, rows rr and right
-- flags rt; true when there was one
local function leave_out(h, rr, rt, name)
  for n = #h, 1, -1 do
    if h[n] == name then
      table.remove(h, n) table.remove(rt, n)
      for _, row in ipairs(rr) do table.remove(row, n) end
      return true
    end
  end
  return false
end

-- the aligned table of headers h, rows rr, right flags rt fitted to
-- `width` as the comment of ABBREV / DROP says (in place); returns the
-- text and the names of the columns left out
local function fit_columns(h, rr, rt, width)
  -- the short headers always, so that every table names its columns alike
  for n, name in ipairs(h) do h[n] = ABBREV[name] or name end
  local out = common.align(h, rr, rt):gsub("\n$", "")
  local hidden = {}
  for _, name in ipairs(DROP) do
    if width_of(out) <= width then break end
    if leave_out(h, rr, rt, name) then
      hidden[#hidden + 1] = name
      out = common.align(h, rr, rt):gsub("\n$", "")
    end
  end
  if width_of(out) > width then out = common.align(h, rr, rt, " "):gsub("\n$", "") end
  if width_of(out) > width and leave_out(h, rr, rt, "tok/s/GPU") then
    hidden[#hidden + 1] = "tok/s/GPU"
    out = common.align(h, rr, rt, " "):gsub("\n$", "")
  end
  return out, hidden
end

--- The top-k table as text: constant strategy columns folded into a
-- "same for every row" line (when there are two rows or more); the
-- objective's score next to rank (none for the step time, which the step
-- time column shows); at most M.max_width columns wide unless
-- `opts.wide` (abbreviated headers; the "top memory" and "top
-- overhead" columns left out, with a line saying so; then one space
-- between columns, and last the throughput column).
-- @tparam table result search result
-- @tparam[opt] table opts `wide` (no width limit)
-- @treturn string
function M.table_text(result, opts)
  opts = opts or {}
  local headers, rows, right = M.rows(result)
  -- the objective's score after rank
  table.insert(headers, 2, table.remove(headers, OBJECTIVE_COL))
  table.insert(right, 2, table.remove(right, OBJECTIVE_COL))
  for _, r in ipairs(rows) do table.insert(r, 2, table.remove(r, OBJECTIVE_COL)) end
  local FOLDABLE = {}
  for j = 3, 19 do FOLDABLE[j] = true end
  local fronts = false
  for _, r in ipairs(result.top_k_strategies or {}) do if r.pareto_front then fronts = true end end
  local keep, folded = M.fold_columns(headers, rows, function(j) return FOLDABLE[j] end)
  local same = {}
  for n, hv in ipairs(folded) do same[n] = M.same_pair(hv[1], hv[2]) end
  local h, rr, rt = {}, {}, {}
  for n, j in ipairs(keep) do h[n], rt[n] = headers[j], right[j] end
  if fronts then table.insert(h, 2, "front") table.insert(rt, 2, true) end
  for i, r in ipairs(rows) do
    local row = {}
    for n, j in ipairs(keep) do row[n] = r[j] end
    if fronts then table.insert(row, 2, tostring(result.top_k_strategies[i].pareto_front or "-")) end
    rr[i] = row
  end
  -- a built-in objective whose score a column shows (step time, peak
  -- memory): not printed twice
  if M.score_column(result) then leave_out(h, rr, rt, "objective") end
  local out, hidden = fit_columns(h, rr, rt, opts.wide and math.huge or M.max_width)
  if #hidden > 0 then
    out = out .. "\n(" .. table.concat(hidden, ", ") .. ": left out to fit " .. M.max_width ..
      " columns; --wide shows them)"
  end
  return M.with_notes(out, result, same, opts.wide and math.huge or M.max_width)
end

--- The table text with its prose lines, each folded at `width`: the
-- "same for every row" line above, the objective, interval, MFU, peak
-- (which memory peak the column shows) and memory notes below.
-- @tparam string tbl the aligned table
-- @tparam table result search result
-- @tparam table same `header=value` texts of the folded columns
-- @tparam number width
-- @treturn string
function M.with_notes(tbl, result, same, width)
  local lines = {}
  if #same > 0 then lines[1] = "same for every row: " .. table.concat(same, " ") end
  lines[#lines + 1] = tbl
  for _, note in ipairs({ M.objective_note(result) or false, common.interval_note(result) or false,
      common.mfu_note(result) or false, common.mfu_basis_note(result) or false, common.peak_note(result) or false,
      common.near_capacity_note(result) or false, common.host_bound_note(result) or false,
      common.full_graph_note(result) or false,
      common.passes_note(result) or false,
      common.launchable_note(result) or false }) do
    if note then lines[#lines + 1] = note end
  end
  for i, line in ipairs(lines) do
    if line ~= tbl then lines[i] = common.fold_text(line, width) end
  end
  return table.concat(lines, "\n")
end

--- How many closest strategies the terminal lists when nothing fits.
M.closest_rows = 3

--- What to relax when nothing fits, as the report's "no feasible
-- strategy" section says it (apsearch.report.html.diagnose): the
-- suggestions with their numbers (the closest strategy's overflow, the
-- fewest devices that could hold the model), the closest strategies, and
-- the fit a power-of-two part of the cluster or a larger cluster gives
-- (`result.fit_probe`, set by the CLI).
-- @tparam table result a result with no feasible strategy
-- @treturn table lines
function M.no_fit_lines(result)
  local d = require("apsearch.report.html").diagnose(result, M.closest_rows)
  local lines = {}
  if #d.suggestions > 0 then
    lines[#lines + 1] = "\nwhat to relax:"
    for i, t in ipairs(d.suggestions) do lines[#lines + 1] = string.format("  %d. %s", i, t) end
  end
  if #d.closest > 0 then
    lines[#lines + 1] = "\nclosest strategies (least estimated memory):"
    -- the figure the limit bounds: the device peak, or max reserved /
    -- allocated under a limit given
    local kind = common.limited_kind((result.inputs or {}).training)
    local what = kind == "device" and "peak" or ("max " .. kind)
    for _, c in ipairs(d.closest) do
      lines[#lines + 1] = string.format("  %s: %s %.2f GiB (%s over the limit), step %.3f s, %s",
        c.short_text, what, c.mem_limited / 2 ^ 30, common.over_text(c.over_bytes or 0), c.step_time,
        tostring(c.reason))
    end
  end
  local probe = common.fit_probe_text(result)
  if probe then lines[#lines + 1] = "\n" .. probe end
  return lines
end

--- Formats a search result as text.
-- @tparam table result the result of apsearch.search.run
-- @tparam[opt] table opts `wide` (see `table_text`)
-- @treturn string the summary line, the table, the filter reasons, and
--   the changes vs a baseline (`--baseline`)
function M.format(result, opts)
  opts = opts or {}
  local width = opts.wide and math.huge or M.max_width
  return common.fold_text(M.format_lines(result, opts), width)
end

--- The text of M.format before its prose lines are folded (the table
-- inside is already fitted and folding leaves it as it is).
-- @tparam table result
-- @tparam table opts
-- @treturn string
function M.format_lines(result, opts)
  local s = result.all_candidate_summary or {}
  local inp = result.inputs or {}
  local cl = inp.cluster or {}
  local dev = type(cl.device) == "table" and cl.device.name or tostring(cl.device)
  local out = {}
  out[#out + 1] = string.format(
    "%s on %s x %s: %d feasible of %d candidates (%d filtered early, %s), %.2f s",
    tostring(inp.model and inp.model.name), tostring(cl.num_devices), tostring(dev),
    s.feasible or 0, s.space_size or 0, s.filtered_early or 0, common.refused_text(result),
    s.seconds or 0)
  if #(result.top_k_strategies or {}) == 0 then
    out[#out + 1] = "no feasible strategy"
    for _, line in ipairs(M.no_fit_lines(result)) do out[#out + 1] = line end
  else
    out[#out + 1] = "\n" .. M.table_text(result, opts)
  end
  local codes = {}
  for code, e in pairs(result.infeasible_summary or {}) do codes[#codes + 1] = { code, e } end
  table.sort(codes, function(a, b)
    if a[2].count ~= b[2].count then return a[2].count > b[2].count end
    return a[1] < b[1]
  end)
  if #codes > 0 then
    out[#out + 1] = "\nfilter reasons:"
    -- the codes' column as wide as the longest (FRAMEWORK_UNSUPPORTED is
    -- 21 characters), so the counts line up
    local w = 20
    for _, ce in ipairs(codes) do w = math.max(w, #tostring(ce[1])) end
    for _, ce in ipairs(codes) do
      out[#out + 1] = string.format("  %-" .. w .. "s %8d  (%s) e.g. %s", ce[1], ce[2].count,
        ce[2].phase == "early" and "early" or "after estimate", tostring(ce[2].message))
    end
  end
  if result.baseline_diff then
    out[#out + 1] = ""
    for _, line in ipairs(require("apsearch.report.baseline").lines(result.baseline_diff)) do
      out[#out + 1] = line
    end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
