--- End-to-end search throughput: prints figures, asserts nothing.
-- Usage: lua5.4 bench/bench_search.lua  (from the repo root, after a build;
-- bench/run.sh sets the paths). Spaces: Llama-3.1-70B on 1,024 H100s,
-- examples/llama3_70b_h100_1024_sweep.lua (122,580 candidates, best of 3),
-- the same with balanced stages and auto recompute,
-- bench/llama3_70b_1024_balanced.lua (where balance.c simulates its
-- splits), and Llama-3.1-405B on 16,384 H100s with every dimension wide,
-- bench/llama3_405b_16k_wide.lua (2,430,560 candidates, best of 3; its
-- full walk once); each with
-- the fast path (search.block_pruner) and the full walk; then
-- bench/llama3_405b_16k_18m.lua (18,411,200 candidates, the fast path
-- only: its full walk takes minutes).
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local root = os.getenv("APS_ROOT") or "."
local function bench(file, reps, label, opts)
  local p = policy.load(root .. "/" .. file)
  local best, r = math.huge, nil
  for _ = 1, reps do
    local t0 = os.clock()
    r = search.run(p, opts)
    local dt = os.clock() - t0
    if dt < best then best = dt end
  end
  local s = r.all_candidate_summary
  print(string.format("search %s: %d candidates (%d filtered early, %d estimated, %d feasible) " ..
    "in %.3f s CPU = %.0f candidates/s end to end (best of %d)",
    label, s.generated, s.filtered_early, s.estimated, s.feasible, best, s.generated / best, reps))
end
bench("examples/llama3_70b_h100_1024_sweep.lua", 3, "122,580 sweep")
bench("examples/llama3_70b_h100_1024_sweep.lua", 3, "122,580 sweep, full walk", { enumerate = "full" })
bench("bench/llama3_70b_1024_balanced.lua", 3, "122,580 sweep, balanced stages")
bench("bench/llama3_405b_16k_wide.lua", 3, "2.4 M 405B space")
bench("bench/llama3_405b_16k_wide.lua", 1, "2.4 M 405B space, full walk", { enumerate = "full" })
bench("bench/llama3_405b_16k_18m.lua", 1, "18 M 405B space")
