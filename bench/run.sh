#!/usr/bin/env bash
# Prints the performance figures of apsearch (not a test; nothing fails).
#   core estimator evaluations/s, end-to-end search candidates/s, the 70B
#   example's wall time, and peak RSS of the large search.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
./build/bench_core
APS_ROOT=$PWD LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;;" \
  LUA_CPATH="$PWD/build/lua/?.so;;" lua5.4 bench/bench_search.lua
/usr/bin/time -f "apsearch run examples/llama3_70b_h100.lua: %e s wall, %M KiB peak RSS" \
  ./build/apsearch run examples/llama3_70b_h100.lua --quiet >/dev/null
/usr/bin/time -f "apsearch run (1,024-GPU sweep): %e s wall, %M KiB peak RSS" \
  ./build/apsearch run examples/llama3_70b_h100_1024_sweep.lua --quiet >/dev/null
/usr/bin/time -f "apsearch run bench/llama3_405b_16k_wide.lua (2.4 M): %e s wall, %M KiB peak RSS" \
  ./build/apsearch run bench/llama3_405b_16k_wide.lua --quiet >/dev/null
OUT=$(mktemp -d)
/usr/bin/time -f "apsearch run bench/llama3_405b_16k_wide.lua --out (2.4 M): %e s wall, %M KiB peak RSS" \
  ./build/apsearch run bench/llama3_405b_16k_wide.lua --quiet --out "$OUT" >/dev/null
rm -rf "$OUT"
