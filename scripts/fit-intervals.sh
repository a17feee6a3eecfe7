#!/usr/bin/env bash
# Regenerates lua/apsearch/intervals_data.lua: the prediction intervals'
# residual table, from the leave-one-source-out residuals of the published
# runs (apsearch.crossval, apsearch.intervals).  Run after the efficiency
# defaults change (scripts/fit-defaults.sh).  The MoE cases, when present,
# give MoE models their own step-time class (the shipped estimate's
# errors on them: its defaults were fitted to no MoE run); the memory
# cases give the peak-memory bounds, pooled and by framework; the
# held-out published sets (tests/fixtures/heldout) only the best published
# MFU per hardware generation (the "^" marker).  Usage:
#   scripts/fit-intervals.sh [CASES.csv [MOE_CASES.csv [MEMORY_CASES.csv]]]
set -euo pipefail
# CASES and MOE_CASES paths are the caller's, relative to where it was
# run; given and missing is an error (it used to fall back silently)
root=$(cd "$(dirname "$0")/.." && pwd)
given() { # $1: argument, $2: its name; prints the path (from the root when under it)
  local p=$1
  [ "${p#/}" = "$p" ] && p="$PWD/$p"
  if [ ! -f "$p" ]; then
    echo "fit-intervals.sh: $2 $1: no such file" >&2
    exit 2
  fi
  echo "${p#"$root"/}"
}
cases=${1:+$(given "$1" CASES)}
moe_cases=${2:+$(given "$2" MOE_CASES)}
mem_cases=${3:+$(given "$3" MEMORY_CASES)}
cd "$root"
# the repository's copies (corrected since ../shared/validation's, and
# what a clone has), as the shipped table was generated from
[ -n "$cases" ] || cases=tests/fixtures/public_cases.csv
[ -n "${2:-}" ] || moe_cases=tests/fixtures/moe/public_moe_cases.csv
[ -n "$mem_cases" ] || mem_cases=tests/fixtures/memory/public_memory_cases.csv
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
APS_ROOT=$PWD LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;;" \
  LUA_CPATH="$PWD/build/lua/?.so;;" lua5.4 - "$cases" "$moe_cases" "$mem_cases" tests/fixtures/heldout/*.csv \
  > lua/apsearch/intervals_data.lua.tmp <<'LUA'
local cv = require "apsearch.crossval"
local validate = require "apsearch.validate"
local res = cv.run(arg[1])
local moe = arg[2] ~= "" and validate.run(arg[2]) or nil
local mem = validate.run(arg[3])
-- the held-out published sets: only the best-MFU marker reads them
local refs = {}
for i = 4, #arg do refs[#refs + 1] = validate.run(arg[i]) end
io.stdout:write(cv.data_source(res, moe, mem, refs))
local c = res.coverage
io.stderr:write(string.format("coverage of the %d %% intervals, leave-one-source-out: "
  .. "step time %d of %d, memory %d of %d\n", math.floor(c.level * 100 + 0.5),
  c.step_time.covered, c.step_time.rows, c.mem_peak.covered, c.mem_peak.rows))
LUA
mv lua/apsearch/intervals_data.lua.tmp lua/apsearch/intervals_data.lua
