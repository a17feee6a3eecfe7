#!/usr/bin/env bash
# Regenerates lua/apsearch/evidence_data.lua: the held-out runs' measured
# over estimated step time, by model shape and device (apsearch.evidence),
# from every file under tests/fixtures/heldout/ with the shipped defaults.
# Run after the estimator changes (as scripts/fit-intervals.sh).
# Usage: scripts/fit-evidence.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
APS_ROOT=$PWD LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;;" \
  LUA_CPATH="$PWD/build/lua/?.so;;" lua5.4 - tests/fixtures/heldout/*.csv \
  > lua/apsearch/evidence_data.lua.tmp <<'LUA'
local validate = require "apsearch.validate"
local evidence = require "apsearch.evidence"
local results, files = {}, {}
for _, path in ipairs(arg) do
  local name = path:match("[^/]+$")
  results[name] = validate.run(path)
  files[#files + 1] = "tests/fixtures/heldout/" .. name
end
io.stdout:write(evidence.source(evidence.build(results), files))
LUA
mv lua/apsearch/evidence_data.lua.tmp lua/apsearch/evidence_data.lua
