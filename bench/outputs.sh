#!/usr/bin/env bash
# Prints the cost of apsearch's outputs against the search alone (issue 28
# item 3; not a test, nothing fails): on one policy (default the 2.4 M
# bench/llama3_405b_16k_wide.lua), the median of RUNS (default 3) wall
# and CPU (user + sys) seconds of
#   run POLICY --format F                      (the search alone), F in
#                                              table, json, csv
#   run POLICY --format F --top-k 1000
#   run POLICY --out DIR (--candidates feasible, all; none --top-k 1000)
# and each one's ratio to the search alone (table).  The machine may be
# shared: the load average is printed beside the figures.
# To time another tree's Lua code with this binary (the binary reads its
# Lua sources from APSEARCH_ROOT), e.g. a commit before a change:
#   git archive BASE | tar -x -C /tmp/base && APSEARCH_ROOT=/tmp/base bench/outputs.sh
# Usage: bench/outputs.sh [POLICY] [RUNS]
#
# Issue 28 item 3, branch h-outspeed: the Lua tree of 04453b3 (before) and
# after, same binary, one after the other on the 2-core AMD EPYC VM with a
# load average of 5-9 from other work (wall times are 2-4x their CPU time
# and move with the neighbours: compare CPU), median of 3, CPU s (wall s):
#   search alone (table, json, csv)  1.26-1.32 (3.7-4.7) -> 1.07-1.15 (1.6-2.2)
#                                    (the load: that path did not change)
#   --out --candidates all           16.42 (27.2)        -> 5.60 (13.1)
#   --out --candidates none -k 1000  10.00 (27.1)        -> 8.92 (22.3)
#   --top-k 1000 json / table / csv  3.88 / 2.01 / 2.14  -> 3.94 / 2.10 / 2.14
# candidates.csv's 2.43 M rows: rows assembled in C (core.csv_rows: about
# 0.9 us of CPU per row against 4.3 us for the Lua writer, in-process);
# what is left of --candidates all is the Lua walk of every candidate
# (about 1 us each: the fast path
# counts most blocks without walking them, and must walk them to write
# their rows).  JSON encoding is about 25 % faster (1.1-1.4 s -> 0.94 s
# for the 21 MB of --top-k 1000, measured in one process), too little to
# see under this load; --top-k 1000 --out spends its time in report.html
# (its Lua rendering), the JSON encodes, the 3,000 launch files and their
# fsynced writes.  Neither of issue 28's ratios (3x, 2x) is met.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-bench/llama3_405b_16k_wide.lua} RUNS=${2:-3}
cmake --build build -j2 >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "policy: $P; Lua tree: ${APSEARCH_ROOT:-$PWD}; median of $RUNS runs"
# median wall and CPU of RUNS runs of the command: sets $wall $cpu
med() {
  local i
  : >"$T/runs"
  for i in $(seq "$RUNS"); do
    rm -rf "$T/out"
    /usr/bin/time -f "%e %U %S" -o "$T/t" "$@" >/dev/null 2>&1
    awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$T/t" >>"$T/runs"
  done
  wall=$(cut -d' ' -f1 "$T/runs" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  cpu=$(cut -d' ' -f2 "$T/runs" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
}
row() { # label, then the command
  local label=$1; shift
  med "$@"
  [ -n "${base:-}" ] || base=$wall
  printf '%-44s %7.2f s wall %7.2f s CPU  %5.2fx the search  (load %s)\n' "$label" "$wall" "$cpu" \
    "$(awk -v a="$wall" -v b="$base" 'BEGIN { print a / b }')" "$(cut -d' ' -f1 /proc/loadavg)"
}
A=(./build/apsearch run "$P" --quiet)
base=
row "search alone (table)" "${A[@]}"
for f in json csv; do row "search alone ($f)" "${A[@]}" --format "$f"; done
for f in table json csv; do row "--top-k 1000 ($f)" "${A[@]}" --format "$f" --top-k 1000; done
row "--out (--candidates feasible)" "${A[@]}" --echarts none --out "$T/out"
row "--out --candidates all" "${A[@]}" --echarts none --out "$T/out" --candidates all
row "--out --candidates none --top-k 1000" "${A[@]}" --echarts none --out "$T/out" \
  --candidates none --top-k 1000
