-- candidates.csv rows assembled in C (apsearch.core.csv_rows) from cells
-- spelt in Lua (format.csv.strategy_cell) and remembered under the values
-- each spelling reads (format.common.field_reads): every row must be the
-- one spelt cell by cell, on real spaces and on values chosen to catch a
-- cell remembered under too few values.
local csv = require "apsearch.format.csv"
local common = require "apsearch.format.common"
local core = require "apsearch.core"
local policy = require "apsearch.policy"
local search = require "apsearch.search"

local ROOT = os.getenv("APS_ROOT") or "."
local NHEAD = 7 -- index, status, phase, reason, step_time_s, mem_peak_bytes, mem_peak_gib

local function strategy_fields()
  local f = {}
  for i, c in ipairs(csv.candidate_columns()) do if i > NHEAD then f[#f + 1] = c end end
  return f
end

-- the status, phase and reason cells of a candidate's reason entry (nil:
-- feasible), as the writer's contract spells them
local function head_of(e)
  if not e then return "feasible,,," end
  return (e.phase == "early" and "filtered," or "infeasible,") .. (e.phase or "") .. "," .. e.code .. ","
end

-- the row as the writer's contract spells it, without any cache
local function expected_row(index, head, st, mem, cand, gbs)
  local cells = {}
  for i, f in ipairs(strategy_fields()) do cells[i] = csv.strategy_cell(cand, f, gbs) end
  local est = st and string.format("%.9g,%.0f,%.3f,", st, mem, mem / 1073741824) or ",,,"
  return index .. "," .. head .. est .. table.concat(cells, ",") .. "\n"
end

describe("candidates.csv rows (core.csv_rows)", function()
  it("are the rows spelt cell by cell, every candidate of real spaces", function()
    -- written in pieces of 7 rows (the writer takes the C buffer each time)
    local stream_rows = csv.stream_rows
    finally(function() csv.stream_rows = stream_rows end)
    csv.stream_rows = 7
    for _, file in ipairs({ "examples/llama3_8b_h100.lua", "examples/mixtral_8x7b_h100.lua",
                            "examples/qwen3_30b_a3b_h100.lua" }) do
      local p = policy.load(ROOT .. "/" .. file, { quiet = true })
      local gbs = p.training.global_batch_size
      local want, n, parts = {}, 0, {}
      local w = csv.candidate_writer(function(t) parts[#parts + 1] = t end, "all", gbs)
      local sink = { mode = "all", row = function(index, e, st, mem, cand)
        n = n + 1
        want[n] = expected_row(index, head_of(e), st, mem, cand, gbs)
        w.row(index, e, st, mem, cand)
      end }
      search.run(p, { candidates = sink, jobs = 1 })
      assert.are.equal(n, w.finish())
      local body = table.concat(parts):gsub("^[^\n]*\n", "")
      assert.is_true(n > 50 and #parts > n // 7, file)
      assert.are.equal(table.concat(want), body, file)
    end
  end)

  -- a block filtered before its estimate is written in one call
  -- (csv_rows:block): each of its rows must be the one spelt cell by cell
  -- for the block's candidate with its position's values
  it("are the rows spelt cell by cell in blocks written at once, on real spaces #bulk", function()
    local stream_rows = csv.stream_rows
    finally(function() csv.stream_rows = stream_rows end)
    csv.stream_rows = 5
    for _, file in ipairs({ "examples/llama3_405b_h100_16k.lua", "examples/llama3_70b_h100_1024_sweep.lua",
                            "examples/deepseek_v3_h100_1024.lua" }) do
      local p = policy.load(ROOT .. "/" .. file, { quiet = true })
      local gbs = p.training.global_batch_size
      local want, n, blocks, parts = {}, 0, 0, {}
      local w = csv.candidate_writer(function(t) parts[#parts + 1] = t end, "all", gbs)
      local sink = { mode = "all",
        row = function(index, e, st, mem, cand)
          n = n + 1
          want[n] = expected_row(index, head_of(e), st, mem, cand, gbs)
          w.row(index, e, st, mem, cand)
        end,
        block = function(start, cand, cls, ent, cols)
          blocks = blocks + 1
          for pos = 1, cols.n do
            local c = {}
            for k, v in pairs(cand) do c[k] = v end
            for j, f in ipairs(cols.fields) do
              local v = cols[j][pos]
              if v == cols.none then v = nil end
              c[f] = v
            end
            n = n + 1
            want[n] = expected_row(start + pos - 1, head_of(ent[cls[pos]]), nil, nil, c, gbs)
          end
          w.block(start, cand, cls, ent, cols)
        end }
      search.run(p, { candidates = sink, jobs = 1, sensitivity = false })
      assert.are.equal(n, w.finish())
      assert.is_true(blocks > 0, file)
      local body = table.concat(parts):gsub("^[^\n]*\n", "")
      assert.are.equal(table.concat(want), body, file)
    end
  end)

  it("write a block's rows with nil values, and again when the candidate's values change", function()
    local w = core.csv_rows({ "a", "b", "c" }, { b = { "a" } }, function(c, i)
      if i == 1 then return tostring(c.a) end
      if i == 2 then return tostring(c.b) .. "/" .. tostring(c.a) end
      return tostring(c.c)
    end)
    local NONE = {}
    -- b varies with the position (nil at 2), a and c are the candidate's
    local cols = { fields = { "b" }, n = 3, none = NONE, { 4, NONE, 6 } }
    local cls, heads = { 1, 2, 1 }, { "x,", "y," }
    w:block(10, { a = 1, c = "k" }, cls, heads, cols)
    -- the same positions, another value of a (which b's spelling reads)
    w:block(20, { a = 2, c = "k" }, cls, heads, cols)
    assert.are.equal(6, w:count())
    assert.are.equal("10,x,,,,1,4/1,k\n11,y,,,,1,nil/1,k\n12,x,,,,1,6/1,k\n"
      .. "20,x,,,,2,4/2,k\n21,y,,,,2,nil/2,k\n22,x,,,,2,6/2,k\n", (w:take()))
    assert.has_error(function() w:block(30, { a = 1 }, { 1, 3, 1 }, heads, cols) end,
      "csv_rows: block: no head for class 3")
    assert.has_error(function() w:block(30, { a = 1 }, { 1, 1 }, heads, cols) end,
      "csv_rows: block: 2 classes for 3 positions")
  end)

  it("spell a cell again when a value its spelling reads changes", function()
    local gbs = 512
    local parts = {}
    local w = csv.candidate_writer(function(t) parts[#parts + 1] = t end, "all", gbs)
    local split = { 3, 5 }
    local cands = {
      { dp_degree = 8, fsdp_degree = 1, micro_batch_size = 1, micro_batch_num = 0, pp_degree = 2,
        pp_schedule = "1f1b", layer_recompute = "full", recompute_num_layers = -1,
        recompute_modules = "mlp", stage_partition = split },
      -- the same field values; micro_batch_num 0 derived from other degrees,
      -- moot recompute fields, no pipelining
      { dp_degree = 4, fsdp_degree = 2, micro_batch_size = 2, micro_batch_num = 0, pp_degree = 1,
        pp_schedule = "1f1b", layer_recompute = "selective", recompute_num_layers = -1,
        recompute_modules = "mlp", stage_partition = split },
      { dp_degree = 8, fsdp_degree = 1, micro_batch_size = 1, micro_batch_num = 0, pp_degree = 2,
        pp_schedule = "1f1b", layer_recompute = "full", recompute_num_layers = -1,
        recompute_modules = "mlp", stage_partition = split, cp_degree = 2, cp_comm_type = 'a,"b' },
      -- cp_comm_type at cp 1, reshard_after_forward without FSDP: moot,
      -- empty as the table's "-"
      { dp_degree = 8, fsdp_degree = 1, micro_batch_size = 1, micro_batch_num = 0, pp_degree = 1,
        layer_recompute = "none", cp_degree = 1, cp_comm_type = "p2p", reshard_after_forward = true,
        tp_degree = 1, sequence_parallel = true },
    }
    local want = { table.concat(csv.candidate_columns(), ",") .. "\n" }
    for i, c in ipairs(cands) do
      w.row(i, nil, 1.25 * i, 3 * 2 ^ 30 + i, c)
      want[#want + 1] = expected_row(i, "feasible,,,", 1.25 * i, 3 * 2 ^ 30 + i, c, gbs)
    end
    w.finish()
    local text = table.concat(parts)
    assert.are.equal(table.concat(want), text)
    -- the values themselves: 512 / (1 x 8 x 1) = 64, 512 / (2 x 4 x 2) = 32
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.truthy(lines[2]:find(",1f1b,,,,1,64,full,,,all,3;5,", 1, true), lines[2])
    assert.truthy(lines[3]:find(",1,,,,,,,2,32,selective,mlp,,,3;5,", 1, true), lines[3])
    assert.truthy(lines[4]:find(',"a,""b",', 1, true), lines[4])
    assert.is_nil(lines[5]:find("p2p", 1, true), lines[5])
    assert.is_nil(lines[5]:find("true", 1, true), lines[5])
  end)

  it("lists every other field common.field_value reads", function()
    local cand = { dp_degree = 4, fsdp_degree = 2, micro_batch_size = 2, micro_batch_num = 0,
      pp_degree = 2, pp_schedule = "1f1b", layer_recompute = "full", recompute_num_layers = -1,
      recompute_modules = "mlp", stage_partition = { 1, 2 }, layer_offset = 0, tp_degree = 2 }
    for _, f in ipairs(strategy_fields()) do
      local read = {}
      local proxy = setmetatable({}, { __index = function(_, k) read[k] = true return cand[k] end })
      common.field_value(proxy, f, 512)
      local allowed = { [f] = true }
      for _, d in ipairs(common.field_reads[f] or {}) do allowed[d] = true end
      for k in pairs(read) do
        assert.is_true(allowed[k] == true, f .. " reads " .. k .. ", not in common.field_reads")
      end
    end
  end)

  it("refuses a cell that is not a string, and too many dependencies", function()
    local w = core.csv_rows({ "a" }, nil, function() return 5 end)
    assert.has_error(function() w:row(1, "feasible,,,", nil, nil, { a = 1 }) end,
      "csv_rows: the cell of field a is a number, not a string")
    assert.has_error(function()
      core.csv_rows({ "a" }, { a = { "b", "c", "d", "e" } }, tostring)
    end, "csv_rows: deps.a: at most 3 fields (got 4)")
    local ok = core.csv_rows({ "a", "b" }, nil, function(c, i) return tostring(c[i == 1 and "a" or "b"]) end)
    ok:row(7, "h,", 2.5, 1073741824, { a = 1.5, b = true })
    ok:row(8, "h,", nil, nil, { a = 1 })
    assert.are.equal(2, ok:count())
    local text, rows = ok:take()
    assert.are.equal("7,h,2.5,1073741824,1.000,1.5,true\n8,h,,,,1,nil\n", text)
    assert.are.equal(2, rows)
    assert.are.equal(0, ok:count())
  end)
end)
