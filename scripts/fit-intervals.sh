#!/usr/bin/env bash
# Regenerates lua/apsearch/intervals_data.lua: the prediction intervals'
# residual table, from the leave-one-source-out residuals of the published
# runs (apsearch.crossval, apsearch.intervals).  Run after the efficiency
# defaults change (scripts/fit-defaults.sh).  The MoE cases, when present,
# give MoE models their own step-time class.  Usage:
#   scripts/fit-intervals.sh [CASES.csv [MOE_CASES.csv]]
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-../shared/validation/public_cases.csv}
[ -f "$cases" ] || cases=tests/fixtures/public_cases.csv
moe_cases=${2:-../shared/validation/moe/public_moe_cases.csv}
[ -f "$moe_cases" ] || moe_cases=""
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
APS_ROOT=$PWD LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;;" \
  LUA_CPATH="$PWD/build/lua/?.so;;" lua5.4 - "$cases" $moe_cases > lua/apsearch/intervals_data.lua.tmp <<'LUA'
local cv = require "apsearch.crossval"
local res = cv.run(arg[1])
local moe = arg[2] and cv.run(arg[2]) or nil
io.stdout:write(cv.data_source(res, moe))
local c = res.coverage
io.stderr:write(string.format("coverage of the %d %% intervals, leave-one-source-out: "
  .. "step time %d of %d, memory %d of %d\n", math.floor(c.level * 100 + 0.5),
  c.step_time.covered, c.step_time.rows, c.mem_peak.covered, c.mem_peak.rows))
LUA
mv lua/apsearch/intervals_data.lua.tmp lua/apsearch/intervals_data.lua
