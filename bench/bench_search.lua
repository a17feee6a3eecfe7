--- End-to-end search throughput: prints figures, asserts nothing.
-- Usage: lua5.4 bench/bench_search.lua  (from the repo root, after a build;
-- bench/run.sh sets the paths). Space: Llama-3.1-70B on 1,024 H100s,
-- examples/llama3_70b_h100_1024_sweep.lua (122,580 candidates).
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local root = os.getenv("APS_ROOT") or "."
local p = policy.load(root .. "/examples/llama3_70b_h100_1024_sweep.lua")
local best, r = math.huge, nil
for _ = 1, 3 do
  local t0 = os.clock()
  r = search.run(p)
  local dt = os.clock() - t0
  if dt < best then best = dt end
end
local s = r.all_candidate_summary
print(string.format("search: %d candidates (%d filtered early, %d estimated, %d feasible) " ..
  "in %.3f s CPU = %.0f candidates/s end to end (best of 3)",
  s.generated, s.filtered_early, s.estimated, s.feasible, best, s.generated / best))
