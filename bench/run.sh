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
# the 2.4 M-candidate space: the search alone, then with --out in each
# --candidates mode (issue 14: within 1.5x of the search, under 200 MB)
W=bench/llama3_405b_16k_wide.lua
OUT=$(mktemp -d)
fig() { # label, then the command: prints its wall time and peak RSS
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null
  read -r wall kib <"$OUT/time"
  printf '%-62s %6.2f s wall, %7d KiB peak RSS' "$label" "$wall" "$kib"
}
fig "apsearch run $W (2.4 M, no --out):" ./build/apsearch run $W --quiet
base=$wall
echo
for mode in feasible all none; do
  fig "apsearch run $W --out --candidates $mode:" \
    ./build/apsearch run $W --quiet --out "$OUT/$mode" --candidates $mode
  awk -v a="$wall" -v b="$base" 'BEGIN { printf ", %.2fx the search alone\n", a / b }'
done
rm -rf "$OUT"
