-- scripts/check-out-set.lua DIR -- checks that DIR (written by `apsearch run
-- --out DIR`) is one complete result set, every file from the same run:
-- the marker's run id = result.json's run_id = report.html's
-- apsearch-run-id; the files present = output_files (no more, no fewer);
-- each launch file says "of the top-K" with K = the top-k in result.json;
-- result.csv has K rows, candidates.csv one row per generated candidate
-- (--candidates all) or per feasible one (feasible), none without it.
-- Prints the run id; exit 1 with the reason when the set is not whole,
-- 3 when DIR does not exist.  Used by scripts/stress-out.sh.
local lfs = require "lfs"
local cjson = require "cjson"

local dir = assert(arg[1], "usage: check-out-set.lua DIR")
local function bad(fmt, ...)
  io.stderr:write("check-out-set: ", dir, ": ", string.format(fmt, ...), "\n")
  os.exit(1)
end
local function read(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end
local function lines(s) return select(2, s:gsub("\n", "")) end

local m = lfs.symlinkattributes(dir, "mode")
if m == nil then os.exit(3) end
if m ~= "link" then bad("not a link but a %s", m) end
local marker = read(dir .. "/.apsearch-set") or bad("no marker")
local id = marker:match("^apsearch result set\nrun_id (%S+)\n") or bad("bad marker %q", marker)
local js = read(dir .. "/result.json") or bad("no result.json")
local okj, r = pcall(cjson.decode, js)
if not okj then bad("result.json does not parse: %s", r) end
if r.run_id ~= id then bad("result.json run_id %s, marker %s", tostring(r.run_id), id) end
local html = read(dir .. "/report.html") or bad("no report.html")
if not html:find('<meta name="apsearch-run-id" content="' .. id .. '">', 1, true) then
  bad("report.html is not from run %s", id)
end
if not html:find("</html>%s*$") then bad("report.html is cut") end
local k = #r.top_k_strategies
local want = { [".apsearch-set"] = true, ["launch"] = true }
local nlaunch = 0
for _, f in ipairs(r.output_files) do
  local rel = f:sub(#dir + 2)
  local text = read(f) or bad("%s listed but missing", rel)
  if rel:match("^launch/") then
    nlaunch = nlaunch + 1
    if not text:find("of the top-" .. k .. ":", 1, true) then bad("%s is not from a top-%d run", rel, k) end
  else
    want[rel] = true
  end
end
for n in lfs.dir(dir) do
  if n ~= "." and n ~= ".." then
    if not want[n] then bad("unexpected %s", n) end
    want[n] = nil
  end
end
if next(want) then bad("missing %s", next(want)) end
-- one launch file per engine a rank has one for (rank<r>_<engine>.<ext>:
-- Megatron-LM, TorchTitan, MindFormers, NeMo AutoModel), every rank of
-- the top-k with at least one
local nl, ranks = 0, {}
for n in lfs.dir(dir .. "/launch") do
  if n ~= "." and n ~= ".." then
    nl = nl + 1
    local r = tonumber(n:match("^rank(%d+)_"))
    if not r or r < 1 or r > k then bad("launch file %s of no rank of the top-%d", n, k) end
    ranks[r] = true
  end
end
if nl ~= nlaunch then bad("%d launch files, %d listed", nl, nlaunch) end
for r = 1, k do if not ranks[r] then bad("no launch file for rank %d of the top-%d", r, k) end end
local csv = read(dir .. "/result.csv") or bad("no result.csv")
if lines(csv) ~= k + 1 then bad("result.csv has %d lines for top-%d", lines(csv), k) end
-- candidates.csv: as --candidates chose (result.json candidates_csv)
local cc = r.candidates_csv
local cand = read(dir .. "/candidates.csv")
if cc == nil or cc == cjson.null then
  if cand then bad("candidates.csv without candidates_csv in result.json") end
else
  if not cand then bad("no candidates.csv") end
  local want = cc.mode == "all" and r.all_candidate_summary.generated or r.all_candidate_summary.feasible
  if cc.rows ~= want or lines(cand) ~= want + 1 then
    bad("candidates.csv (%s) has %d lines for %d rows", tostring(cc.mode), lines(cand), want)
  end
end
print(id)
