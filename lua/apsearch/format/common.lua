--- Helpers shared by the formatters: category lists, unit conversion for
-- display (GiB = 2^30 bytes), aligned text tables.
-- @module apsearch.format.common
local M = {}
local util = require "apsearch.util"

--- memory_breakdown categories (MODELING.md section 3), display order.
M.memory_categories = { "params", "grads", "optimizer_states", "activations",
  "comm_buffers", "logits_loss", "workspaces", "reserved" }

--- comm_buffers sub-categories.
M.comm_categories = { "tp", "fsdp", "dp", "pp", "cp", "ep" }

--- performance_breakdown categories (MODELING.md section 4), display order.
M.time_categories = { "compute_fwd", "compute_bwd", "recompute", "tp_comm",
  "cp_comm", "pp_p2p", "pp_bubble", "fsdp_allgather", "fsdp_reducescatter",
  "dp_grad_sync", "hsdp_replicate_sync", "optimizer", "activation_offload", "ep_comm", "host_launch",
  "kernel_gaps" }

--- The micro-batch count a strategy runs when it leaves `micro_batch_num`
-- at the search space's placeholder 0 ("derive from the global batch"):
-- B / (b x dp x fsdp), Megatron's num_microbatches =
-- global_batch_size / (micro_batch_size x data_parallel_size)
-- (megatron/core/num_microbatches_calculator.py).
-- @tparam table s strategy (micro_batch_size, dp_degree, fsdp_degree)
-- @tparam[opt] number gbs global batch size B, sequences
-- @treturn integer|nil the count, nil when B is unknown or not divisible
function M.derived_micro_batch_num(s, gbs)
  local ranks = (s.micro_batch_size or 1) * (s.dp_degree or 1) * (s.fsdp_degree or 1)
  if math.type(gbs) == "float" then gbs = math.tointeger(gbs) end
  if math.type(gbs) == "integer" and math.type(ranks) == "integer" and ranks > 0
      and gbs % ranks == 0 then
    return gbs // ranks
  end
  return nil
end

-- a split or offset at its neutral value: absent, 0, or every entry 0
local function all_zero(v)
  if v == nil then return true end
  if type(v) ~= "table" then return v == 0 end
  for _, x in ipairs(v) do if x ~= 0 then return false end end
  return true
end

--- The strategy fields every output lists in this order (CSV columns, the
-- report's full strategies and chart tooltips), each as field_value
-- spells it.
M.STRATEGY_FIELDS = { "dp_degree", "fsdp_degree", "zero_stage",
  "reshard_after_forward", "tp_degree", "sequence_parallel", "pp_degree",
  "vpp_degree", "pipeline_split", "pp_schedule", "microbatch_group_size",
  "cp_degree", "cp_comm_type",
  "micro_batch_size", "micro_batch_num", "layer_recompute", "recompute_modules",
  "recompute_method", "recompute_num_layers", "stage_partition",
  "layer_offset", "ep_degree", "etp_degree", "moe_token_dispatcher",
  "moe_capacity_factor" }

-- the fields shown empty when their dimension is off (space.moot): the
-- terminal's "-" (cp_comm_type at cp 1, sequence_parallel at tp 1,
-- reshard_after_forward without FSDP, recompute_method without full
-- recompute), in result.csv, candidates.csv and the report
local MOOT_BLANK = { sequence_parallel = true, cp_comm_type = true, reshard_after_forward = true,
  recompute_method = true }

--- A strategy field as outputs show it: the search space's internal
-- placeholders (space.lua) spelt as what they mean, so no output holds
-- `micro_batch_num = 0` or `recompute_num_layers = -1` (issue 16):
-- * micro_batch_num 0: the derived count (derived_micro_batch_num), or
--   the string "derived" when the global batch is not known;
-- * recompute_num_layers: nil when layer_recompute is not "full" (the
--   field is moot); -1 ("every layer of the stage") as "all", alone or
--   per stage;
-- * stage_partition and layer_offset all 0 (split by `pipeline_split`,
--   no shift): nil;
-- * pp_schedule without pipelining (pp_degree 1): nil (moot);
-- * microbatch_group_size 0 or pp_degree (Megatron's default) or outside
--   the interleaved 1F1B schedule (space.moot): nil;
-- * sequence_parallel, cp_comm_type, reshard_after_forward and
--   recompute_method where space.moot says their dimension is off: nil.
-- Other fields and values are returned as they are.
-- @tparam table s strategy (candidate or top-k record)
-- @tparam string f field name
-- @tparam[opt] number gbs global batch size, sequences
-- @return the value to show, or nil for "not set / moot"
function M.field_value(s, f, gbs)
  local v = s[f]
  if f == "micro_batch_num" and v == 0 then
    return M.derived_micro_batch_num(s, gbs) or "derived"
  elseif f == "recompute_num_layers" then
    if s.layer_recompute ~= "full" then return nil end
    if v == -1 then return "all" end
    if type(v) == "table" then
      local out = {}
      for i, x in ipairs(v) do out[i] = x == -1 and "all" or x end
      return out
    end
  elseif (f == "stage_partition" or f == "layer_offset") and all_zero(v) then
    return nil
  elseif f == "pp_schedule" and (s.pp_degree or 1) == 1 then
    return nil
  elseif f == "microbatch_group_size" and (v == 0 or v == s.pp_degree or
      require("apsearch.space").moot(s, f)) then
    return nil
  elseif f == "recompute_modules" and s.layer_recompute ~= "selective" then
    return nil -- Megatron reads --recompute-modules with selective only
  elseif (f == "moe_token_dispatcher" or f == "moe_capacity_factor") and v == nil and s.ep_degree ~= nil then
    -- an MoE strategy that leaves it out ran the search's default
    -- (alltoall, dropless)
    return require("apsearch.space").moe_defaults("megatron")[f]
  elseif MOOT_BLANK[f] and require("apsearch.space").moot(s, f) then
    return nil -- the setting of a dimension that is off, as the table's "-"
  end
  return v
end

--- The other strategy fields M.field_value(s, f) reads for field f (the
-- value of field f itself aside): the spelling of f's value is a function
-- of these and gbs (candidates.csv remembers each cell under them,
-- apsearch.format.csv; tests/lua/csv_rows_spec.lua checks the list).
M.field_reads = {
  micro_batch_num = { "micro_batch_size", "dp_degree", "fsdp_degree" },
  recompute_num_layers = { "layer_recompute" },
  pp_schedule = { "pp_degree" },
  microbatch_group_size = { "pp_degree", "vpp_degree", "pp_schedule" },
  recompute_modules = { "layer_recompute" },
  moe_token_dispatcher = { "ep_degree" },
  moe_capacity_factor = { "ep_degree" },
  sequence_parallel = { "tp_degree" },
  cp_comm_type = { "cp_degree" },
  reshard_after_forward = { "fsdp_degree" },
  recompute_method = { "layer_recompute" },
}

-- the V schedules: stage i and 2p - 1 - i on rank i (M.chunk_layers)
local function v_shaped(t, p, v)
  return p > 1 and v == 2 and (t.pp_schedule == "zbv_zero_bubble" or t.pp_schedule == "dualpipev")
end

-- The layers of each model chunk (virtual stage, model order) of
-- M.chunk_layers: a new array of p x v counts.
local function chunk_sizes(t, counts)
  local p, v = t.pp_degree or 1, t.vpp_degree or 1
  local S = p * v
  local V = v_shaped(t, p, v)
  -- the stage (1-based) chunk k (0-based) of rank i (1-based) runs
  local function stage(i, k)
    if V then return k == 0 and i or 2 * p + 1 - i end
    return i + k * p
  end
  local sizes
  local sp = t.stage_partition
  local given = not all_zero(sp)
  if v > 1 and given and #sp == S then
    sizes = {}
    for j = 1, S do sizes[j] = sp[j] end
  elseif p > 1 and v > 1 and not given and all_zero(t.layer_offset) and not t.balance_stages
      and (t.pipeline_split or "even") ~= "even" then
    local L = 0
    for i = 1, p do L = L + (counts[i] or 0) end
    -- the estimator's own rule (src/core/pipeline.c: embedding_loss, fill_last)
    sizes = require("apsearch.core").chunk_layers(L,
      { pp_degree = p, vpp_degree = v, pipeline_split = t.pipeline_split })
  end
  local function fits(sz)
    if not sz then return false end
    for i = 1, p do
      local n = 0
      for k = 0, v - 1 do
        local c = sz[stage(i, k)]
        if not c or c < 0 then return false end
        n = n + c
      end
      if n ~= (counts[i] or 0) then return false end
    end
    return true
  end
  if not fits(sizes) then
    sizes = {}
    for i = 1, p do
      local n = counts[i] or 0
      for k = 0, v - 1 do sizes[stage(i, k)] = n // v + (k < n % v and 1 or 0) end
    end
  end
  return sizes
end

--- The pipeline layout a top-k strategy ran, resolved from its estimate:
-- `stage_partition` as layers per pipeline rank (vpp = 1) or per model
-- chunk in schedule order (vpp > 1, src/core/pipeline.c aps_chunk_layers,
-- the same form `--strategy stage_partition=` takes), so a strategy
-- written with an even split, a split rule or a balanced search reads as
-- the layers each stage holds; `recompute_num_layers` per rank as the
-- stages recompute them (block: layers recomputed, from the estimate's
-- per-stage `recompute_layers`; uniform: the group size, 1 where not
-- given, as memory.c takes it), nil when layer_recompute is not "full".
-- layer_offset is then moot (nil).
-- @tparam table rec top-k record (strategy fields and
--   memory_cost.per_stage {num_layers, recompute_layers})
-- @treturn table {stage_partition=, recompute_num_layers=} (either nil
--   when it cannot be resolved: no per-stage record)
function M.resolved_layout(rec)
  local per = rec.memory_cost and rec.memory_cost.per_stage or {}
  local out = {}
  if #per == 0 then return out end
  local counts = {}
  for i, st in ipairs(per) do counts[i] = math.tointeger(st.num_layers) or 0 end
  if not all_zero(rec.stage_partition) then
    out.stage_partition = rec.stage_partition
  elseif (rec.vpp_degree or 1) > 1 then
    out.stage_partition = chunk_sizes(rec, counts)   -- model order
  else
    out.stage_partition = counts
  end
  if rec.layer_recompute == "full" then
    local rc, list = rec.recompute_num_layers, {}
    for i, st in ipairs(per) do
      local given = type(rc) == "table" and rc[i] or rc
      if rec.recompute_method == "uniform" then
        list[i] = (math.type(given) and given > 0) and given or 1
      else
        list[i] = math.tointeger(st.recompute_layers) or counts[i]
      end
    end
    out.recompute_num_layers = list
  end
  return out
end

--- Layers of each model chunk of a pipeline rank, as the core lays them
-- out (src/core/pipeline.c aps_chunk_layers): p x v model chunks in
-- model order, virtual stage j = i + k p (0-based) being chunk k of
-- rank i -- under pp_schedule zbv_zero_bubble and dualpipev the V, stage
-- i (k = 0) and 2p - 1 - i (k = 1) (aps_chunk_stage); layers are
-- numbered 0.. in that order, so with vpp > 1 a rank holds
-- non-contiguous layers.  Chunk sizes: `stage_partition` given per
-- chunk (p v entries); else a `pipeline_split` rule (no partition,
-- offset or balancing): `embedding_loss` splits L + 2 units evenly over
-- the p v chunks, the first and last giving one unit to the embedding and
-- the loss, `fill_last` gives each chunk ceil(L / (p v)) and the last the
-- rest; else a rank's layers (stage_summary's count, which includes a
-- balanced split) are split equally over its v chunks (the first ones one
-- more when they do not divide, aps_layout_chunk).  Whatever the rule,
-- the chunk sizes must add up to each rank's count in `counts`; where
-- they do not, the equal split is used.
-- @tparam table t top-k record (pp_degree, vpp_degree, stage_partition,
--   layer_offset, pipeline_split, balance_stages, pp_schedule)
-- @tparam table counts layers per rank (stage_summary num_layers), p entries
-- @treturn table per rank (1-based) an array of chunks
--   `{virtual_stage (1-based), first, last}` (`first > last`: no layers)
function M.chunk_layers(t, counts)
  local p, v = t.pp_degree or 1, t.vpp_degree or 1
  local V = v_shaped(t, p, v)
  local sizes = chunk_sizes(t, counts)
  local out, first = {}, 0
  for i = 1, p do out[i] = {} end
  for j = 1, p * v do
    local i, k = (j - 1) % p + 1, (j - 1) // p
    if V then i, k = j <= p and j or 2 * p + 1 - j, j <= p and 0 or 1 end
    out[i][k + 1] = { j, first, first + sizes[j] - 1 }
    first = first + sizes[j]
  end
  return out
end

--- A rank's chunks as text: `31, 63-64, 95` (layer ranges, 0-based; a
-- chunk without layers left out), the `layers` of the estimate's and the
-- report's stage tables.
-- @tparam table chunks one rank's entry of `chunk_layers`
-- @treturn string
function M.chunks_text(chunks)
  local parts = {}
  for _, c in ipairs(chunks) do
    if c[3] >= c[2] then
      parts[#parts + 1] = c[3] == c[2] and tostring(c[2]) or (c[2] .. "-" .. c[3])
    end
  end
  return #parts > 0 and table.concat(parts, ", ") or "none"
end

--- A strategy field as every output shows it: for a top-k record (one
-- with `memory_cost.per_stage`) the resolved split and recompute
-- (resolved_layout; layer_offset then moot), otherwise field_value.
-- @tparam table s strategy (candidate or top-k record)
-- @tparam string f field name
-- @tparam[opt] number gbs global batch size, sequences
-- @tparam[opt] table lay resolved_layout(s), when the caller has it
-- @return the value to show, or nil for "not set / moot"
function M.output_value(s, f, gbs, lay)
  lay = lay or ((s.memory_cost and s.memory_cost.per_stage) and M.resolved_layout(s) or {})
  if lay.stage_partition then
    if f == "stage_partition" or f == "recompute_num_layers" then return lay[f] end
    if f == "layer_offset" then return nil end
  end
  return M.field_value(s, f, gbs)
end

--- Bytes to GiB (2^30 bytes).
-- @tparam number bytes
-- @treturn number GiB
function M.gib(bytes) return (bytes or 0) / 2 ^ 30 end

--- Value of a memory category in a breakdown (comm_buffers: its total).
-- @tparam table bd memory_breakdown
-- @tparam string cat category
-- @treturn number bytes
function M.mem_value(bd, cat)
  local v = bd and bd[cat]
  if type(v) == "table" then v = v.total end
  return tonumber(v) or 0
end

--- Largest memory category of a breakdown.
-- @tparam table bd memory_breakdown
-- @treturn string|nil category name
-- @treturn number bytes
function M.top_memory(bd)
  local best, bv = nil, -1
  for _, c in ipairs(M.memory_categories) do
    local v = M.mem_value(bd, c)
    if v > bv then best, bv = c, v end
  end
  return best, bv
end

--- Exposed (critical-path) seconds of a time category.
-- @tparam table bd performance_breakdown
-- @tparam string cat category
-- @tparam[opt="exposed"] string which "exposed" or "total"
-- @treturn number seconds
function M.time_value(bd, cat, which)
  local v = bd and bd[cat]
  if type(v) == "table" then v = v[which or "exposed"] end
  return tonumber(v) or 0
end

--- Category with the largest exposed time; with `overhead`, the largest
-- beyond the forward and backward compute (what separates strategies:
-- bubble, communication, recompute, optimizer), nil when all are zero.
-- @tparam table bd performance_breakdown
-- @tparam[opt] boolean overhead skip compute_fwd and compute_bwd
-- @treturn string|nil category name
-- @treturn number seconds
function M.top_time(bd, overhead)
  local best, bv = nil, overhead and 0 or -1
  for _, c in ipairs(M.time_categories) do
    if not (overhead and (c == "compute_fwd" or c == "compute_bwd")) then
      local v = M.time_value(bd, c)
      if v > bv then best, bv = c, v end
    end
  end
  return best, bv
end

--- Formats rows as an aligned text table (widths in UTF-8 characters).
-- @tparam table headers array of header strings
-- @tparam table rows array of arrays of cell strings
-- @tparam[opt] table right array of booleans: right-align column i
-- @tparam[opt="  "] string gap what separates two columns
-- @treturn string lines joined by "\n" (with a trailing newline)
function M.align(headers, rows, right, gap)
  right = right or {}
  gap = gap or "  "
  local w = {}
  for i, h in ipairs(headers) do w[i] = M.width(h) end
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do if M.width(c) > (w[i] or 0) then w[i] = M.width(c) end end
  end
  local function line(cells)
    local parts = {}
    for i = 1, #headers do
      local c = cells[i] or ""
      local pad = string.rep(" ", w[i] - M.width(c))
      parts[i] = right[i] and (pad .. c) or (c .. pad)
    end
    return util.rtrim(table.concat(parts, gap))
  end
  local out = { line(headers) }
  local sep = {}
  for i = 1, #headers do sep[i] = string.rep("-", w[i]) end
  out[2] = table.concat(sep, gap)
  for _, r in ipairs(rows) do out[#out + 1] = line(r) end
  return table.concat(out, "\n") .. "\n"
end

--- Width of the text outputs by default, in columns (characters): the
-- README's promise; `run --wide` and `presets --wide` lift it.
M.TERMINAL_WIDTH = 120

--- Columns a folded line's continuation lines are indented by, beyond
-- the line's own indent.
M.FOLD_INDENT = 2

--- Narrowest a folded table column gets (`fold_last_column`), however
-- wide the columns before it.
M.MIN_FOLD_COLUMN = 24

--- Display width of a line: its UTF-8 characters (bytes when it is not
-- valid UTF-8).
-- @tparam string s
-- @treturn integer
function M.width(s)
  return utf8.len(s) or #s
end

-- `word` cut into pieces of at most `n` characters
local function cut(word, n)
  local pieces, piece = {}, ""
  for _, code in utf8.codes(utf8.len(word) and word or "") do
    if M.width(piece) >= n then pieces[#pieces + 1], piece = piece, "" end
    piece = piece .. utf8.char(code)
  end
  if not utf8.len(word) then -- not UTF-8: bytes
    for i = 1, #word, n do pieces[#pieces + 1] = word:sub(i, i + n - 1) end
    return pieces
  end
  pieces[#pieces + 1] = piece
  return pieces
end

--- Units a fold keeps on the line of the number before them ("2.57 s",
-- "78.65 GiB", "41.2 %"), with any punctuation after them.
M.FOLD_UNITS = { s = true, ms = true, us = true, GiB = true, MiB = true, KiB = true, GB = true, MB = true,
  TB = true, ["GB/s"] = true, ["TB/s"] = true, ["%"] = true, x = true, GPUs = true, devices = true }

-- the (separator, word) pairs of text, a unit joined to the number before it
local function fold_words(text)
  local words = {}
  for sep, word in text:gmatch("( *)(%S+)") do
    local prev = words[#words]
    local unit = word:match("^(%%)") or word:match("^([%a/]+)[%p]*$")
    if prev and sep == " " and unit and M.FOLD_UNITS[unit] and prev[2]:find("%d$") then
      prev[2] = prev[2] .. sep .. word
    else
      words[#words + 1] = { sep, word }
    end
  end
  return words
end

--- One line folded at spaces into lines of at most `width` characters;
-- continuation lines are indented by the line's own indent plus
-- M.FOLD_INDENT; a word longer than a line is cut; a unit stays with its
-- number (M.FOLD_UNITS).
-- @tparam string line (no newline)
-- @tparam[opt=M.TERMINAL_WIDTH] number width (math.huge: unchanged)
-- @treturn string the lines joined by "\n"
function M.fold(line, width)
  width = width or M.TERMINAL_WIDTH
  if M.width(line) <= width then return line end
  local lead = line:match("^ *")
  local indent = lead .. string.rep(" ", M.FOLD_INDENT)
  local out, cur = {}, lead
  for _, w in ipairs(fold_words(line:sub(#lead + 1))) do
    local sep, word = w[1], w[2]
    local start = cur == lead and "" or sep
    if M.width(cur) + M.width(start) + M.width(word) <= width then
      cur = cur .. start .. word
    else
      local first_line = #out == 0 and cur == lead
      if not first_line then out[#out + 1] = cur end
      local pieces = cut(word, math.max(1, width - #indent))
      for i, piece in ipairs(pieces) do
        local text = ((i == 1 and first_line) and lead or indent) .. piece
        if i < #pieces then out[#out + 1] = text else cur = text end
      end
    end
  end
  out[#out + 1] = cur
  return table.concat(out, "\n")
end

--- Every line of a text folded (M.fold).
-- @tparam string text
-- @tparam[opt=M.TERMINAL_WIDTH] number width
-- @treturn string
function M.fold_text(text, width)
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = M.fold(line, width) end
  return table.concat(lines, "\n", 1, #lines - (text:sub(-1) == "\n" and 1 or 0))
    .. (text:sub(-1) == "\n" and "\n" or "")
end

--- An aligned table (M.align) whose last column is folded at spaces so
-- that the table fits `width`: a long cell goes on over the next lines,
-- under itself.
-- @tparam table headers
-- @tparam table rows arrays of cell strings
-- @tparam[opt] table right right-alignment flags
-- @tparam[opt=M.TERMINAL_WIDTH] number width (math.huge: M.align)
-- @tparam[opt=M.MIN_FOLD_COLUMN] number min narrowest the last column is
--   folded to (the table goes past `width` rather than below it)
-- @treturn string
function M.fold_last_column(headers, rows, right, width, min)
  width = width or M.TERMINAL_WIDTH
  local n = #headers
  local start = 0
  for i = 1, n - 1 do
    local w = M.width(headers[i])
    for _, r in ipairs(rows) do w = math.max(w, M.width(r[i] or "")) end
    start = start + w + 2
  end
  local avail = math.max(width - start, min or M.MIN_FOLD_COLUMN)
  local out = {}
  for _, r in ipairs(rows) do
    local parts = {}
    for piece in (M.fold(r[n] or "", avail) .. "\n"):gmatch("([^\n]*)\n") do
      parts[#parts + 1] = piece:gsub("^ +", "")
    end
    local first = table.move(r, 1, n - 1, 1, {})
    first[n] = parts[1]
    out[#out + 1] = first
    for k = 2, #parts do
      local more = {}
      for i = 1, n - 1 do more[i] = "" end
      more[n] = parts[k]
      out[#out + 1] = more
    end
  end
  return M.align(headers, out, right)
end

--- How far a peak is over (or under) a memory limit, signed: GiB with two
-- decimals, or MiB with one when that would print as 0.00 GiB (a limit
-- missed by a few MiB is still missed).
-- @tparam number bytes peak minus limit
-- @treturn string e.g. "+0.17 GiB", "+3.1 MiB"
function M.over_text(bytes)
  if bytes ~= 0 and math.abs(bytes) < 0.005 * 2 ^ 30 then
    return string.format("%+.1f MiB", bytes / 2 ^ 20)
  end
  return string.format("%+.2f GiB", bytes / 2 ^ 30)
end

--- Number with thousands separators: 8030261248 -> "8,030,261,248".
-- @tparam number n
-- @treturn string
function M.commas(n)
  local s = string.format("%.0f", n)
  local neg = s:sub(1, 1) == "-"
  if neg then s = s:sub(2) end
  s = s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return (neg and "-" or "") .. s
end

--- The estimated candidates a search refused, as its summaries say it:
-- "N over a limit" (a memory limit or a rule), and with `run --launchable`
-- those whose launch file does not build the estimated job apart:
-- "N over a limit, M not launchable by megatron".
-- @tparam table result a search result
-- @tparam[opt] function num number formatter (default tostring)
-- @treturn string
function M.refused_text(result, num)
  num = num or tostring
  local s = result.all_candidate_summary or {}
  local e = (result.infeasible_summary or {}).LAUNCH_DIFFERS
  local n = e and e.count or 0
  local text = num(math.tointeger((s.infeasible or 0) - n) or 0) .. " over a limit"
  if n == 0 then return text end
  return text .. ", " .. num(math.tointeger(n) or n) .. " not launchable by " ..
    tostring((result.inputs or {}).launchable)
end

--- The NVLink-domain suffix of a cluster line: ", NVLink domain D" when
-- `cluster.nvlink_domain_size` spans more than one host (GB200 NVL72: 4
-- per host, up to 72 per domain), else "".
-- @tparam table cluster normalized cluster table
-- @treturn string
function M.nvlink_domain_note(cluster)
  local d = cluster.nvlink_domain_size or 0
  if d > (cluster.devices_per_node or 0) then
    return string.format(", NVLink domain %d", d)
  end
  return ""
end

--- ", MTP D" for a training that trains D multi-token-prediction depths
-- with the model (`training.mtp_num_layers`, Megatron --mtp-num-layers;
-- docs/modeling.md "Multi-token prediction"), else "": the run, estimate
-- and report lines that describe the training name it.  Given the model,
-- the parameters those depths add are said too, ", MTP D (+P parameters)":
-- D copies of one depth's (M.mtp_depth_params; one with
-- `training.mtp_repeated_layer`, Megatron --mtp-use-repeated-layer, which
-- builds one depth and runs it D times).
-- @tparam table training normalized training table
-- @tparam[opt] table model normalized model table
-- @treturn string
function M.mtp_note(training, model)
  local d = training and training.mtp_num_layers or 0
  if type(d) ~= "number" or d <= 0 then return "" end
  local p = M.mtp_trained_params(training, model)
  if not p then return string.format(", MTP %d", d) end
  return string.format(", MTP %d (+%s parameters)", d, M.billions(p))
end

--- Parameters the multi-token-prediction depths a training trains add to
-- the model (M.mtp_note's P): D depths' (M.mtp_depth_params), one with
-- `training.mtp_repeated_layer`; 0 without MTP.
-- @tparam table training normalized training table
-- @tparam table model normalized model table
-- @treturn number|nil parameters; nil when the count cannot be taken
function M.mtp_trained_params(training, model)
  local d = training and training.mtp_num_layers or 0
  if type(d) ~= "number" or d <= 0 then return 0 end
  local per = type(model) == "table" and M.mtp_depth_params(model)
  if not per then return nil end
  return (training.mtp_repeated_layer and 1 or d) * per
end

--- Parameters one trained multi-token-prediction depth adds to a model as
-- Megatron-LM builds it: its layer, enorm, hnorm, eh_proj and final norm,
-- and no embedding or output copy -- the MTP block runs the model's own
-- (gpt_model.py @ d98e8a64 l.173-174: the last stage's embedding, built
-- for mtp_process, is the tied copy of the model's; l.724-767 pass
-- embedding= and output_layer= to the MTP block), unlike a checkpoint's
-- modules, which may store both (DeepSeek-V3's model.layers.61).
-- core.model_params of the model with one MTP module, shared embeddings.
-- @tparam table model normalized model table
-- @treturn number|nil parameters; nil when the count cannot be taken
function M.mtp_depth_params(model)
  local one = {}
  for k, v in pairs(model) do one[k] = v end
  one.mtp_layers, one.mtp_shared_embeddings = 1, true
  local ok, pc = pcall(require("apsearch.core").model_params, one)
  if not ok or type(pc) ~= "table" or type(pc.mtp) ~= "number" then return nil end
  return pc.mtp
end

--- A parameter count in billions with two decimals, or millions with one
-- below a billion ("671.03B", "83.9M").
-- @tparam number x parameters
-- @treturn string
function M.billions(x)
  if x >= 1e9 then return string.format("%.2fB", x / 1e9) end
  return string.format("%.1fM", x / 1e6)
end

--- " (P parameters)" or " (P parameters, A active)" of a model, in
-- billions with two decimals (millions below one billion): the count
-- core.model_params gives (embedding and output layer included, MTP
-- modules apart), so a user sees which model the estimate read.
-- @tparam table model normalized model table
-- @treturn string "" when the count cannot be taken
function M.params_note(model)
  local ok, pc = pcall(require("apsearch.core").model_params, model)
  if not ok or type(pc) ~= "table" or type(pc.total) ~= "number" then return "" end
  local n = M.billions
  if pc.active and pc.active < pc.total then
    return string.format(" (%s parameters, %s active)", n(pc.total), n(pc.active))
  end
  return string.format(" (%s parameters)", n(pc.total))
end

--- ", E experts top-k" for a mixture-of-experts model (`num_experts` > 0,
-- `experts_per_token`), else "".
-- @tparam table model normalized model table
-- @treturn string
function M.experts_note(model)
  local e = model and model.num_experts or 0
  if type(e) == "number" and e > 0 then
    return string.format(", %d experts top-%d", e, model.experts_per_token or 0)
  end
  return ""
end

--- The peak the memory limit bounds (src/core/memory.c
-- aps_memory_checked): device memory in use against the device's
-- capacity, else training.memory_limit_kind's (default reserved).
-- @tparam[opt] table training the run's training table
-- @treturn string "reserved", "allocated" or "device"
function M.limited_kind(training)
  training = training or {}
  if not ((training.memory_limit_bytes or 0) > 0) then return "device" end
  return training.memory_limit_kind or "reserved"
end

--- What the memory limit applies to, for the line after it.
-- @tparam[opt] table training
-- @treturn string
function M.limit_text(training)
  local kind = M.limited_kind(training)
  if not (((training or {}).memory_limit_bytes or 0) > 0) then
    return "on device memory in use (capacity less the margin)"
  end
  return "on " .. (kind == "device" and "device memory in use" or ("max " .. kind))
end

--- The allocator's peaks of an estimate, for the rows under its total:
-- max allocated (live tensors), max reserved (PyTorch's caching
-- allocator: what Megatron's memory report and TorchTitan's log print);
-- the total is device memory in use (reserved plus the CUDA context and
-- NCCL buffers: what nvidia-smi shows).
-- @tparam table est estimate (mem_allocated, mem_reserved)
-- @treturn table rows {label, bytes, note}
function M.peak_rows(est)
  if not est.mem_allocated then return {} end
  return {
    { "  max allocated", est.mem_allocated, "live tensors (torch.cuda.max_memory_allocated)" },
    { "  max reserved", est.mem_reserved, "allocated + fragmentation (max_memory_reserved)" },
    { "  device in use", est.mem_peak, "reserved + CUDA context + NCCL (nvidia-smi); = total" },
  }
end

--- The footnote saying which peak the table's `peak GiB` is, with the
-- first row's allocator peaks, or nil without a feasible row.
-- @tparam table result search result
-- @treturn string|nil
function M.peak_note(result)
  local r = (result.top_k_strategies or {})[1]
  local mc = r and r.memory_cost
  if not (mc and mc.allocated) then return nil end
  local G = 2 ^ 30
  return string.format("peak GiB = device memory in use (max reserved + CUDA context + NCCL); rank 1: "
    .. "max allocated %.2f, max reserved %.2f GiB; limit %s", mc.allocated / G, mc.reserved / G,
    M.limit_text((result.inputs or {}).training))
end

local function near_capacity(r) return r.memory_cost and r.memory_cost.near_capacity end

-- when rank 1 is flagged near capacity: which rank is the first that is
-- not, and how much slower it is estimated; when every listed one is, the
-- margin that ranks only strategies below the fraction (the default limit
-- is the capacity less training.memory_margin_bytes, on device memory in
-- use: what the flag compares).  "" when rank 1 is not flagged.
local function first_with_headroom(top, capacity, training)
  if not (top[1] and near_capacity(top[1])) then return "" end
  for _, r in ipairs(top) do
    if not near_capacity(r) then
      return string.format("; rank 1 is above it, the first rank below it is %d (step time %+.1f %%)", r.rank,
        100 * (r.performance_cost.step_time / top[1].performance_cost.step_time - 1))
    end
  end
  if not capacity then return "; so is every strategy listed" end
  local frac = require("apsearch.search").near_capacity_fraction
  if ((training or {}).memory_limit_bytes or 0) > 0 then
    -- a limit given bounds max reserved unless its kind says otherwise:
    -- the margin is not read then; a limit on device memory in use is
    -- what the flag compares
    return string.format("; so is every strategy listed (--set constraints.memory_limit_kind=device --set "
      .. "cluster.memory_limit_gib=%.2f ranks only those below it)", math.floor(frac * capacity / 2 ^ 30 * 100) / 100)
  end
  -- in hundredths of a GiB rounded up: at least the margin the flag needs
  local margin = math.ceil((1 - frac) * capacity / 2 ^ 30 * 100) / 100
  return string.format("; so is every strategy listed (--set training.memory_margin_gib=%.2f ranks only "
    .. "those below it)", margin)
end

--- The footnote of a top-k with a strategy flagged `near_capacity`
-- (apsearch.search.near_capacity_fraction), or nil when none is; when
-- rank 1 is flagged it names the first rank that is not and its step
-- time against rank 1's.
-- @tparam table result search result
-- @treturn string|nil
function M.near_capacity_note(result)
  local top = result.top_k_strategies or {}
  local objective = (result.inputs or {}).objective
  local tie = require("apsearch.objectives").NEAR_CAPACITY_TIE
  local ranked = (objective == "step_time" or objective == "throughput") and tie > 0
    and ("; a row marked ! ranks as if %g %% slower (objectives.NEAR_CAPACITY_TIE)"):format(100 * tie) or ""
  for _, r in ipairs(top) do
    if near_capacity(r) then
      return string.format("! peak above %.0f%% of device memory: the caching allocator may "
        .. "retry allocations and slow the step beyond the estimate (docs/accuracy.md)%s%s",
        100 * require("apsearch.search").near_capacity_fraction, ranked,
        first_with_headroom(top, (((result.inputs or {}).cluster or {}).device or {}).memory_bytes,
          (result.inputs or {}).training))
    end
  end
  return nil
end

--- The `mbn` cell of a top-k record: its micro-batches per step, or, run
-- as G pipeline schedules (training.local_batch_size), "GxM" (G passes of
-- M micro-batches; performance_cost.gradient_accumulation_steps).
-- @tparam table r top-k record
-- @treturn string
function M.mbn_text(r)
  local g = ((r.performance_cost or {}).gradient_accumulation_steps) or 1
  local m = r.micro_batch_num
  if g > 1 and type(m) == "number" then return ("%dx%d"):format(g, m // g) end
  return tostring(m)
end

--- The footnote of a top-k whose rank 1 waits mostly on the host that
-- launches its kernels (its largest overhead, M.top_time, is
-- `host_launch`) under Megatron-LM without CUDA graphs, which take that
-- launch cost (docs/modeling.md "Host time"), or nil.
-- @tparam table result search result
-- @treturn string|nil
function M.host_bound_note(result)
  local r = (result.top_k_strategies or {})[1]
  local tr = (result.inputs or {}).training or {}
  if not r or tr.framework ~= "megatron" or tr.cuda_graphs then return nil end
  local pc = r.performance_cost or {}
  local top, secs = M.top_time(pc.breakdown, true)
  if top ~= "host_launch" then return nil end
  return ("rank 1 waits for the host launching its kernels (host_launch, its largest overhead: %.2f of %.2f s): "
    .. "Megatron-LM's CUDA graphs take that cost (--set training.cuda_graphs=true; training.cuda_graph_scope says "
    .. "what they capture, docs/policy.md)"):format(secs, pc.step_time or 0)
end

--- The footnote of a top-k whose micro-batches run as several pipeline
-- schedules a step (M.mbn_text's "GxM"), or nil.
-- @tparam table result
-- @treturn string|nil
function M.passes_note(result)
  for _, r in ipairs(result.top_k_strategies or {}) do
    if (((r.performance_cost or {}).gradient_accumulation_steps) or 1) > 1 then
      return "mbn GxM: G pipeline schedules a step (training.local_batch_size), M micro-batches each; " ..
        "each pays its own bubble and gradient reduction"
    end
  end
  return nil
end

--- The footnote of a top-k priced with CUDA graphs of the whole
-- iteration (`performance_cost.cuda_graph_scope`, what ctx:estimate
-- priced), or nil when none is: which ranks Megatron-Core switches to them
-- (full recompute or CPU offloading take no other scope) when the training
-- asked for another scope, and that the private pool such a capture keeps
-- is not in the peak (docs/accuracy.md "Memory: public measured peaks").
-- @tparam table result search result
-- @treturn string|nil
function M.full_graph_note(result)
  local asked = (((result.inputs or {}).training or {}).cuda_graph_scope) or "layer"
  local ranks = {}
  for _, r in ipairs(result.top_k_strategies or {}) do
    if (r.performance_cost or {}).cuda_graph_scope == "full_iteration" then ranks[#ranks + 1] = r.rank end
  end
  if #ranks == 0 then return nil end
  local which = #ranks == #(result.top_k_strategies or {}) and "every rank" or
    ("rank" .. (#ranks > 1 and "s " or " ") .. table.concat(ranks, ", "))
  local switched = asked == "full_iteration" and "" or
    (" (Megatron-Core captures the whole iteration under full recompute or CPU offloading; "
      .. "cuda_graph_scope " .. tostring(asked) .. " was asked)")
  local at = require("apsearch.intervals").FULL_GRAPH_OOM_AT
  return string.format("%s: CUDA graphs of the whole iteration%s, priced without host time; the memory "
    .. "pool the capture keeps is not in the peak (published runs with them ran out of memory estimated at "
    .. "%.0f-%.0f %% of the limit), so a fit is not one to bet on", which, switched, 100 * at.lo, 100 * at.hi)
end

--- What the fit probe found when nothing fits (`result.fit_probe`, set
-- by the CLI for a built policy: the other framework on the same devices,
-- the same defaults on part of the cluster, or on doubled host counts),
-- one sentence for the terminal and
-- the report alike; nil without a probe.
-- @tparam table result a result with no feasible strategy
-- @treturn string|nil
function M.fit_probe_text(result)
  local fp = result.fit_probe
  if not fp then return nil end
  local parts = {}
  -- every probe keeps the run's global batch (cli.fit_probe)
  local gbs = ((result.inputs or {}).training or {}).global_batch_size
  local same = gbs and string.format("the same defaults and global batch, --set training.global_batch_size=%d",
    gbs) or "the same defaults"
  if fp.framework then
    local f = fp.framework
    parts[1] = string.format("fits with training.framework = %s on these devices (this run's command with "
      .. "--set training.framework=%s added): %s, step %.3f s", f.framework, f.framework, f.strategy, f.step_time)
  end
  if fp.setting then
    local f = fp.setting
    parts[#parts + 1] = string.format("fits with --set %s on these devices (%s; this run's command with it "
      .. "added): %s, step %.3f s", f.set, f.why, f.strategy, f.step_time)
  end
  if fp.smaller then
    local f = fp.smaller
    parts[#parts + 1] = string.format("fits on %s of the %s devices (%s; %s): %s, step %.3f s",
      M.commas(f.devices), M.commas(((result.inputs or {}).cluster or {}).num_devices or 0), f.cluster,
      same, f.strategy, f.step_time)
  elseif fp.devices then
    local below = fp.not_on and string.format(", not on %s", M.commas(fp.not_on)) or ""
    local how = fp.in_host and "the host's GPUs doubled" or "host counts doubled, then bisected"
    -- a host using part of its board grown to whole boards first (cli host_fit): said, the host size changed
    local per, run_per = fp.per_node, ((result.inputs or {}).cluster or {}).devices_per_node
    if not fp.in_host and per and run_per and per ~= run_per then
      how = ("hosts of %d GPUs, the whole board (the run's used %d), host counts doubled, then bisected"):format(
        per, math.tointeger(run_per) or run_per)
    end
    parts[#parts + 1] = string.format("fits on %s devices (%s%s; %s, %s): %s, step %.3f s",
      M.commas(fp.devices), fp.cluster, below, same, how, fp.strategy, fp.step_time)
  elseif fp.tried and fp.launch_differs then
    parts[#parts + 1] = string.format("no fit on %s devices (%s) with %s: strategies fit there, but "
      .. "the --launchable file builds none of them as estimated (LAUNCH_DIFFERS); more hosts were not tried",
      M.commas(fp.tried), fp.cluster, same)
  elseif fp.tried then
    parts[#parts + 1] = string.format("no fit up to %s devices (%s) with %s, on the host counts "
      .. "tried (doubled; counts between them were not)", M.commas(fp.tried), fp.cluster, same)
    -- nothing here was over a memory limit: the filter reasons' rules
    -- refused every strategy, which more devices may not change
    if not (result.infeasible_summary or {}).MEMORY_LIMIT then
      parts[#parts] = parts[#parts] .. "; no strategy here was over a memory limit: the rules in the " ..
        "filter reasons refused them all"
    end
  end
  return #parts > 0 and table.concat(parts, "\n") or nil
end

--- One line on the prediction intervals of a result's top-k (the
-- estimate times the factors; apsearch.intervals), or nil without them.
-- Rows that share their factors are described once.
-- @tparam table result search result
-- @treturn string|nil
function M.interval_note(result)
  local seen, parts = {}, {}
  for _, r in ipairs(result.top_k_strategies or {}) do
    local si = r.performance_cost and r.performance_cost.step_time_interval
    local mi = r.memory_cost and r.memory_cost.total_interval
    if si and r.performance_cost.step_time > 0 then
      local st = r.performance_cost.step_time
      local text = string.format("step time x%.2f-%.2f (%s, %d published runs)", si.lo / st, si.hi / st,
        si.pooled and "all classes" or tostring(si.class), si.rows or 0)
      if mi and r.memory_cost.total > 0 then
        text = text .. string.format(", peak memory x%.2f-%.2f (%s, %d runs)",
          mi.lo / r.memory_cost.total, mi.hi / r.memory_cost.total,
          mi.pooled and "all frameworks" or tostring(mi.class), mi.rows or 0)
      end
      if not seen[text] then
        seen[text] = true
        parts[#parts + 1] = text
      end
    end
  end
  if #parts == 0 then return nil end
  local level = result.top_k_strategies[1].performance_cost.step_time_interval.level
  local cl = (result.inputs or {}).cluster or {}
  local dev = type(cl.device) == "table" and (cl.device.base or cl.device.name) or cl.device
  local gen = require("apsearch.intervals").generation(dev)
  if gen ~= "ampere" and gen ~= "hopper" then
    -- the interval's runs, not every run apsearch was checked on: Blackwell
    -- runs never fitted have their own errors (docs/accuracy.md)
    parts[#parts] = parts[#parts] .. "; none of those runs is of this hardware generation (runs never fitted " ..
      "on it, where published: docs/accuracy.md)"
  end
  -- the MoE interval rests on a dozen runs of three publications (and is
  -- floored at the dense one); runs apsearch was never fitted to land
  -- inside it far less often (docs/accuracy.md "Prediction intervals":
  -- the held-out Megatron-Bridge MoE runs), which the line must not hide
  local si1 = result.top_k_strategies[1].performance_cost.step_time_interval
  if si1.class == require("apsearch.intervals").MOE_CLASS and not si1.pooled then
    parts[#parts] = parts[#parts] .. "; MoE runs never fitted spread wider (docs/accuracy.md, Prediction intervals)"
  end
  -- what no factor covers for the model (intervals.model_caveats): said,
  -- not hidden
  for _, c in ipairs(si1.caveats or {}) do parts[#parts] = parts[#parts] .. "; " .. c end
  return string.format("%d %% of measured runs land within: %s; out-of-sample errors, docs/accuracy.md",
    math.floor(level * 100 + 0.5), table.concat(parts, "; "))
end

--- The MFU of the bf16 dense peak, for an estimate trained in fp8, mxfp8
-- or nvfp4, whose `mfu` is of that precision's peak (apsearch's
-- convention, docs/outputs.md), which many published runs do not use
-- (DeepSeek-V3's 38.94 % and most vendor tables are of the bf16 peak):
-- model TFLOP/s per GPU x 1e12 / the device's peak_flops_bf16.
-- @tparam table perf an estimate or a record's performance_cost
--   (model_tflops_per_gpu [TFLOP/s], mfu)
-- @tparam table inputs training.precision, cluster.device.peak_flops_bf16 [FLOP/s]
-- @treturn number|nil a fraction; nil in 16- and 32-bit training or without the figures
function M.bf16_peak_mfu(perf, inputs)
  local prec = ((inputs or {}).training or {}).precision
  local dev = ((inputs or {}).cluster or {}).device
  local bf16 = type(dev) == "table" and tonumber(dev.peak_flops_bf16) or 0
  if prec == nil or prec == "bf16" or prec == "fp16" or prec == "fp32" or bf16 <= 0
      or not (perf and perf.model_tflops_per_gpu) then
    return nil
  end
  return perf.model_tflops_per_gpu * 1e12 / bf16
end

--- Under fp8, mxfp8 or nvfp4: the line that says the MFU column is of
-- that precision's dense peak and the factor to the bf16 peak's MFU
-- (M.bf16_peak_mfu / mfu of the first ranked record); nil otherwise.
-- @tparam table result a search result
-- @treturn string|nil
function M.mfu_basis_note(result)
  local r = (result.top_k_strategies or {})[1]
  local pc = r and r.performance_cost or {}
  local bf16 = M.bf16_peak_mfu(pc, result.inputs)
  if not (bf16 and pc.mfu and pc.mfu > 0) then return nil end
  return string.format("MFU (%%) is of the %s dense peak; of the bf16 peak, as many published runs give it, "
    .. "it is x%.2f", result.inputs.training.precision, bf16 / pc.mfu)
end

--- Under `run --launchable NAME` with another training.framework than
-- NAME's own (apsearch.launch ENGINE_FRAMEWORK): the line saying the
-- ranking is that framework's estimate of the strategies NAME's launch
-- file builds; nil otherwise, or with no strategy ranked.
-- @tparam table result search result (inputs.launchable,
--   inputs.training.framework)
-- @treturn string|nil
function M.launchable_note(result)
  local inputs = result.inputs or {}
  local name = inputs.launchable
  local own = name and require("apsearch.launch").ENGINE_FRAMEWORK[name]
  local fw = (inputs.training or {}).framework or "megatron"
  if not own or own == fw or #(result.top_k_strategies or {}) == 0 then return nil end
  return ("launch files: %s's; the strategies are estimated as framework = %s runs them (for %s's own " ..
    "overheads and space: --set training.framework=%s)"):format(name, fw, name, own)
end

--- One line when a top-k MFU is above every published run of its
-- hardware and precision (`performance_cost.mfu_above_published`), or nil: its MFU, case id, cases file and source.
-- @tparam table result search result
-- @treturn string|nil
function M.mfu_note(result)
  for _, r in ipairs(result.top_k_strategies or {}) do
    local b = r.performance_cost and r.performance_cost.mfu_above_published
    if b then
      return string.format("^ MFU above the best published run of this hardware and precision "
        .. "(%.1f %%, %s%s: %s): expect it slower than estimated", 100 * b.mfu, b.case,
        b.file and (" in " .. b.file) or "", b.source)
    end
  end
  return nil
end

--- A policy or strategy value as text: an array with its entries joined
-- by ":" (stage_partition 7:8:8:9), anything else as tostring does.
-- @param v value
-- @treturn string
function M.value_text(v)
  if type(v) ~= "table" then return tostring(v) end
  -- numbers and strings joined by table.concat (its spelling of a number
  -- is tostring's); anything else through tostring
  local n, plain = 0, true
  for i, x in ipairs(v) do
    local t = type(x)
    if t ~= "number" and t ~= "string" then plain = false end
    n = i
  end
  if plain then return table.concat(v, ":", 1, n) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = tostring(x) end
  return table.concat(parts, ":")
end

--- The error of an estimate against a measure, in percent of the measure.
-- @tparam number est
-- @tparam number meas (not 0)
-- @treturn number
function M.pct_error(est, meas) return (est - meas) / meas * 100 end

return M
