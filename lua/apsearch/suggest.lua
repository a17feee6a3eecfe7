--- "Did you mean": the closest known names to a misspelt one, for the
-- messages of unknown options, subcommands, policy fields, presets and
-- enum values.
--
-- The distance is the optimal-string-alignment Damerau-Levenshtein
-- distance (insertions, deletions, substitutions and transpositions of two
-- adjacent characters each cost 1), compared without case.  A known name
-- is suggested when its distance is at most
-- `max(2, floor(#word / 3))` (`M.threshold`), or when one of the two is a
-- prefix of the other and the shorter has at least 3 characters
-- (`h100-sxm` -> `h100-sxm-80gb`), or when the word is the whole first
-- part of the name before a `_` or `-` (`tp` -> `tp_degree`), or when
-- the word's `-` / `_` parts (two or more) are, in order, parts of the
-- name or starts of them, the name having more (`a100-80gb` ->
-- `a100-sxm4-80gb`).  The closest ones are returned (ties kept, up to 3);
-- a prefix match ranks before a parts match, and both before any
-- edit-distance match (`h100` means an H100, not `b200` two edits away).
-- @module apsearch.suggest
local M = {}

--- Optimal-string-alignment distance between two strings (case-insensitive).
-- With `max`, the work stops as soon as the distance is known to exceed it
-- (a length difference above `max`, or a row of the table whose every
-- entry does): a long misspelt name costs a few rows per known name, not
-- its length times theirs.
-- @tparam string a
-- @tparam string b
-- @tparam[opt] integer max the largest distance of interest
-- @treturn integer the distance, or `max + 1` when it exceeds `max`
function M.distance(a, b, max)
  a, b = a:lower(), b:lower()
  local la, lb = #a, #b
  if max and math.abs(la - lb) > max then return max + 1 end
  if la == 0 then return lb end
  if lb == 0 then return la end
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    local ai = a:byte(i)
    local low = i -- the row's smallest entry (d[i][0] = i)
    for j = 1, lb do
      local bj = b:byte(j)
      local cost = ai == bj and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and ai == b:byte(j - 1) and a:byte(i - 1) == bj then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
      if v < low then low = v end
    end
    if max and low > max then return max + 1 end
  end
  return d[la][lb]
end

--- Largest distance at which a name is suggested for `word`.
-- @tparam string word
-- @treturn integer `max(2, floor(#word / 3))`
function M.threshold(word)
  return math.max(2, #word // 3)
end

--- The longest word a suggestion is looked for (bytes): twice the longest
-- name any list holds (field paths, presets, model types: under 40).  The
-- edit distance takes time in the word's length times each name's, so a
-- 300,000-byte key in a policy ran for minutes; a longer word gets no
-- "did you mean".
M.MAX_WORD = 80

local function prefix_of(a, b)
  a, b = a:lower(), b:lower()
  if #a > #b then a, b = b, a end
  if #a >= 3 and b:sub(1, #a) == a then return true end
  -- a short word that is a name's whole first part ("tp" of "tp_degree")
  return #a >= 2 and b:match("^([^_%-]+)[_%-]") == a
end

-- the `-` / `_` separated parts of a string, lower-cased
local function parts(s)
  local out = {}
  for part in s:lower():gmatch("[^_%-]+") do out[#out + 1] = part end
  return out
end

-- true when the word has two or more parts and each is, in order, a part
-- of the name or the start of one: a short form that leaves parts out
-- ("a100-80gb" of "a100-sxm4-80gb")
local function parts_within(word, name)
  local wp, np = parts(word), parts(name)
  if #wp < 2 or #wp >= #np then return false end
  local j = 1
  for _, w in ipairs(wp) do
    while j <= #np and np[j]:sub(1, #w) ~= w do j = j + 1 end
    if j > #np then return false end
    j = j + 1
  end
  return true
end

--- Extra edit charged to a name that is close only once the separators
-- ("-", "_", ".") of both are left out: "llama3-8b" is one digit from
-- "llama-3.1-8b" that way, so it ranks before "llama-2-7b" (three edits
-- either way with the separators), and never ties a name as close with them.
M.UNSEPARATED_PENALTY = 0.25

-- the edit distance of a and b without their separators, plus
-- M.UNSEPARATED_PENALTY (math.huge when beyond max)
local function unseparated_distance(a, b, max)
  local sa, sb = (a:gsub("[%-_%.]", "")), (b:gsub("[%-_%.]", ""))
  if sa == a and sb == b then return math.huge end
  local d = M.distance(sa, sb, max)
  return d <= max and d + M.UNSEPARATED_PENALTY or math.huge
end

--- Names other tools give apsearch's fields (torchrun, DeepSpeed,
-- Megatron-LM, TorchTitan, Slurm) and its framework values (`torchtitan`
-- for `fsdp2`), suggested first when the name they stand for is among the
-- known names: `gpus_per_node` is no edit away from `devices_per_node`.
M.FIELD_ALIASES = {
  gpus_per_node = "devices_per_node", nproc_per_node = "devices_per_node", ngpus_per_node = "devices_per_node",
  num_gpus = "num_devices", gpus = "num_devices", world_size = "num_devices", n_gpus = "num_devices",
  num_nodes = "nodes", nnodes = "nodes", gpu = "device", gpu_type = "device",
  seq_len = "seq_length", max_seq_len = "seq_length", seqlen = "seq_length",
  global_batch = "global_batch_size", train_batch_size = "global_batch_size",
  micro_batch = "micro_batch_size", train_micro_batch_size_per_gpu = "micro_batch_size",
  dtype = "precision", mixed_precision = "precision",
  tensor_parallel_size = "tp_degree", tensor_model_parallel_size = "tp_degree",
  pipeline_parallel_size = "pp_degree", pipeline_model_parallel_size = "pp_degree",
  context_parallel_size = "cp_degree", expert_model_parallel_size = "ep_degree",
  expert_parallel_size = "ep_degree", data_parallel_shard_degree = "fsdp_degree",
  -- the dimensions as people say them, and TorchTitan's [parallelism] and
  -- Megatron-LM's remaining names (torchtitan/config/job_config.py;
  -- megatron/training/arguments.py)
  tensor_parallel = "tp_degree", pipeline_parallel = "pp_degree", context_parallel = "cp_degree",
  expert_parallel = "ep_degree", data_parallel = "dp_degree",
  tensor_parallel_degree = "tp_degree", pipeline_parallel_degree = "pp_degree",
  context_parallel_degree = "cp_degree", expert_parallel_degree = "ep_degree",
  expert_tensor_parallel_degree = "etp_degree", expert_tensor_parallel_size = "etp_degree",
  data_parallel_replicate_degree = "dp_degree", data_parallel_size = "dp_degree",
  virtual_pipeline_model_parallel_size = "vpp_degree", num_virtual_stages_per_pipeline_rank = "vpp_degree",
  recompute_granularity = "layer_recompute", activation_checkpoint = "layer_recompute",
  -- framework names for training.framework's values: TorchTitan is fsdp2,
  -- Megatron-LM (and NeMo, Megatron-Bridge) megatron, llm-foundry fsdp
  torchtitan = "fsdp2", ["megatron-lm"] = "megatron", megatron_lm = "megatron", nemo = "megatron",
  ["megatron-bridge"] = "megatron", ["llm-foundry"] = "fsdp", nemo_automodel = "automodel",
}

--- The known names closest to `word`.
-- @tparam string word what was given
-- @tparam table candidates array of known names (or a set: name -> true)
-- @treturn table array of up to 3 names, closest first (empty when none is close)
function M.closest(word, candidates)
  word = tostring(word)
  if #word > M.MAX_WORD then return {} end
  local list = {}
  if #candidates > 0 then list = candidates
  else for k in pairs(candidates) do list[#list + 1] = tostring(k) end table.sort(list) end
  local scored = {}
  local limit = M.threshold(word)
  local alias = M.FIELD_ALIASES[word]
  for _, c in ipairs(list) do
    c = tostring(c)
    if c == alias then
      scored[#scored + 1] = { c, 0 }
    elseif c ~= word then
      -- a name the word is the start of ("h100" of "h100-sxm-80gb") is
      -- what was meant before any name a few edits away ("b200")
      if prefix_of(word, c) then
        scored[#scored + 1] = { c, 0.5 }
      elseif parts_within(word, c) then
        scored[#scored + 1] = { c, 0.75 }
      else
        local d = math.min(M.distance(word, c, limit), unseparated_distance(word, c, limit))
        if d <= limit then scored[#scored + 1] = { c, d } end
      end
    end
  end
  table.sort(scored, function(x, y)
    if x[2] ~= y[2] then return x[2] < y[2] end
    return x[1] < y[1]
  end)
  local out = {}
  for i = 1, #scored do
    if #out >= 3 or scored[i][2] > scored[1][2] then break end
    out[#out + 1] = scored[i][1]
  end
  return out
end

--- `did you mean "x"?` (or `"x" or "y"?`), or nil when nothing is close.
-- @tparam string word
-- @tparam table candidates
-- @treturn string|nil
function M.did_you_mean(word, candidates)
  return M.did_you_mean_of(M.closest(word, candidates))
end

--- `did you mean "x"?` (or `"x" or "y"?`) of names already chosen, or nil
-- for none.
-- @tparam table names array of strings, best first
-- @treturn string|nil
function M.did_you_mean_of(names)
  if #names == 0 then return nil end
  local q = {}
  for i, s in ipairs(names) do q[i] = string.format("%q", s) end
  return "did you mean " .. table.concat(q, " or ") .. "?"
end

--- A problem text with the suggestion inserted: `<problem>; did you mean
-- "x"?` when a name is close, else `<problem>` unchanged.
-- @tparam string problem e.g. "unknown field"
-- @tparam string word
-- @tparam table candidates
-- @treturn string
function M.problem(problem, word, candidates)
  local s = M.did_you_mean(word, candidates)
  return s and (problem .. "; " .. s) or problem
end

--- An "unknown" problem text with the suggestion and the valid names:
-- `unknown field; did you mean "x"? (known: a, b, c)`.
-- @tparam string problem e.g. "unknown field"
-- @tparam string word what was given
-- @tparam table candidates array of known names, or a set
-- @treturn string
function M.unknown(problem, word, candidates)
  local list = candidates
  if #candidates == 0 then list = M.keys(candidates) end
  return M.problem(problem, tostring(word), list) .. " (known: " .. table.concat(list, ", ") .. ")"
end

--- What the host writes before an error message ("apsearch: ",
-- src/lua/host.c report).
M.ERROR_PREFIX = "apsearch: "

-- the openings of the name lists fold_known cuts: unknown fields, presets
-- and options; the model types a config.json may name (apsearch.hf)
local KNOWN_OPENS = { " (known: ", " (supported: ", " (supported MoE types: " }
-- what stands for a list none of whose names fits, by its opening
local NONE_FITS = { [" (known: "] = " (%d known names",
  [" (supported: "] = " (%d supported types", [" (supported MoE types: "] = " (%d supported MoE types" }

--- Sorts `names` (in place) by their distance to the misspelt word of
-- an error message -- the last name before ": unknown" (`--set: training.
-- global_bach_size: unknown field` -> `global_bach_size`) -- closest
-- first, the given order between equals; unchanged without such a word.
-- @tparam table names
-- @tparam string head the message before its "(known: ...)" list
function M.closest_first(names, head)
  local word = head:match("([^%s:]+): unknown")
  word = word and word:match("([^%.]+)$")
  if not word or #word > M.MAX_WORD then return end
  local rank = {}
  for i, n in ipairs(names) do rank[n] = { M.distance(word:lower(), n:lower()), i } end
  table.sort(names, function(x, y)
    local p, q = rank[x], rank[y]
    if p[1] ~= q[1] then return p[1] < q[1] end
    return p[2] < q[2]
  end)
end

--- An error message whose "(known: a, b, ...)" list (or "(supported:
-- ...)", "(supported MoE types: ...)") is cut so that the
-- line the host prints (M.ERROR_PREFIX and the message) fits `width`
-- characters: the names that fit, closest to the misspelt word first
-- (M.closest_first), then "... and N more" ("(N known names)" when none
-- fits)
-- (docs/outputs.md says where each full list is).  A message that fits,
-- has no such list, or whose list is short (M.SHORT_LIST_CHARS), is
-- returned unchanged; the message stays one line.
-- @tparam string msg
-- @tparam[opt] number width (default apsearch.format.common.TERMINAL_WIDTH)
-- @treturn string
function M.fold_known(msg, width)
  local common = require "apsearch.format.common"
  width = (width or common.TERMINAL_WIDTH) - common.width(M.ERROR_PREFIX)
  local a, open
  for _, o in ipairs(KNOWN_OPENS) do
    a = msg:find(o, 1, true)
    if a then open = o break end
  end
  local b = a and msg:find(")", a, true)
  if not b or common.width(msg) <= width then return msg end
  if b - a - #open <= M.SHORT_LIST_CHARS then return msg end
  local head, tail = msg:sub(1, a - 1) .. open, msg:sub(b)
  local names = {}
  for name in (msg:sub(a + #open, b - 1) .. ", "):gmatch("(.-), ") do names[#names + 1] = name end
  M.closest_first(names, msg:sub(1, a - 1))
  local kept = {}
  for i, name in ipairs(names) do
    local more = (", ... and %d more"):format(#names - i)
    local try = table.concat(kept, ", ") .. (#kept > 0 and ", " or "") .. name
    if common.width(head .. try .. (i < #names and more or "") .. tail) > width then break end
    kept[#kept + 1] = name
  end
  if #kept == #names then return msg end
  if #kept == 0 then return msg:sub(1, a - 1) .. NONE_FITS[open]:format(#names) .. tail end
  return head .. table.concat(kept, ", ") .. (", ... and %d more"):format(#names - #kept) .. tail
end

--- The longest name list (its characters, separators included) that
-- fold_known never cuts: a handful of short names (the RoPE scaling
-- types, the dispatchers) read better whole on a line a little over the
-- terminal's width than as "(5 supported types)".
M.SHORT_LIST_CHARS = 64

--- Sorted names of a table's keys (for "known: ..." lists).
-- @tparam table t
-- @treturn table
function M.keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = tostring(k) end
  table.sort(out)
  return out
end

return M
