#!/usr/bin/env bash
# Prints the cost of apsearch's outputs against the search alone (issue 28
# item 3; not a test, nothing fails): on one policy (default the 2.4 M
# bench/llama3_405b_16k_wide.lua), the median of RUNS (default 3) wall
# and CPU (user + sys) seconds of
#   run POLICY --format F                      (the search alone), F in
#                                              table, json, csv
#   run POLICY --format F --top-k 1000
#   run POLICY --out DIR (--candidates feasible, all; none --top-k 1000)
# and each one's ratio of CPU seconds to the search alone (table).  The machine may be
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
#
# Second round (branch h-outspeed): the Lua tree of be1f3e5 (before) and
# after, the same binary, one after the other on the same VM with a load
# average of 1.1-1.2, median of 3, CPU s (user + sys):
#   search alone (table, json, csv)  0.92-1.13           -> 1.03-1.05
#                                    (that path did not change: the spread
#                                    is the neighbours)
#   --top-k 1000 json / table / csv  4.50 / 2.46 / 2.14  -> 2.15 / 2.22 / 1.83
#   --out --candidates all           4.23                -> 4.13
#   --out --candidates none -k 1000  7.66                -> 5.25
# (an earlier pair at a load of 1.5-1.9, before the last two changes:
# json 3.34 -> 2.27, --out -k 1000 7.20 -> 5.52).  JSON is written by the
# C core (core.json_encode): the 24 MB of --top-k 1000 in 0.49 s in
# process against 1.46 s for lua-cjson with its sanitized copy, keys in
# byte order.  Left in --out -k 1000, in process (CPU s): report.html
# 0.95 (its chart data, per strategy text, is Lua), the 3,000 launch files
# rendered 0.57 and written 0.4-0.9 (create, fsync; the previous set's
# 3,000 removed), result.json 0.40, the stdout table 0.12; and in every
# --top-k 1000 run the search's own work for 1000 strategies (a full
# estimate each, 0.3 s; 4,000 re-estimates of chart 8, 0.3 s).  Met: the
# json ratio is about 2x (2.09x here); not met: --candidates all (4x: the
# Lua walk of every candidate) and --out -k 1000 (5x).
#
# Third look (branch h-speed, nothing of the outputs changed; load 1.4-1.6,
# median of 3, wall / CPU s): search alone 0.63 / 0.92 (two workers),
# --out --candidates all 5.28 / 4.94 (5.4x the CPU), --out --candidates
# none --top-k 1000 6.34 / 6.13 (6.7x).  Where the CPU of the last goes
# (in process, monotonic clock and os.clock at a load of 4): the search
# and the top-k's 1,000 full estimates and 4,000 re-estimates 0.9 s, the
# launch files rendered 0.56 and written 1.1 (3,000 files: an open at
# about 140 us of system time each in a directory that holds thousands,
# write, fsync at 70-80 us), report.html 1.38 (Lua: per strategy, per
# stage the layer ranges and breakdowns, no single hot spot), result.json
# 0.68, the previous set's 3,000 files removed 0.2.  Writing the files
# first and fsyncing them after saved nothing measurable (3,000 files:
# 1.9-5.6 s against 2.4-3.9 s one by one, and a second open each).
# --candidates all: 54 % of its CPU is the Lua walk that yields each of
# the 2.43 M candidates and hands it to the row writer, 18 % the C rows
# (field cache lookups 8 %), 13 % the kernel writing 310 MB.  Neither
# ratio (2x, 3x) is within reach without rows written per block of
# candidates in C and the report's per-stage text built in C.
#
# Fourth look (2026-12-04, main after the outputs' worker processes; the
# 2-core AMD EPYC Firecracker VM idle, load 0.3-1.1; three runs each,
# alternating, wall s (CPU s), median):
#                                     --jobs 1       --jobs 2 (default)
#   search alone                      0.56 (0.56)    0.43 (0.77)
#   search alone --top-k 1000         1.30 (1.29)    1.20 (1.57)
#   --out (candidates feasible)       0.82 (0.73)    0.75 (1.05)
#   --out --candidates all            5.05 (4.69)    2.94 (5.06)
#   --out --candidates none -k 1000   5.2  (4.8)     4.75 (6.8)
# candidates.csv is now written by the workers (each appends its chunks'
# rows to an unnamed temporary file, the parent copies them in order with
# copy_file_range): --candidates all 1.72x faster in wall time, and the
# default --out no longer falls back to one process.  A large top-k's
# files are rendered and written by workers (launch files in parts, then
# report.html beside result.json): about 5 % less wall time than one
# process writing them after a two-worker search (4.75 against 5.0 s),
# for twice the system time -- this VM charges about 20 us per page
# fault, and a forked worker's heap pages fault in as it writes; on
# hardware with ordinary fault costs the split is worth more.  The 3,000
# launch files are flushed by one syncfs instead of 3,000 fsyncs (1.0 ->
# 0.2 s of the write on this ext4).  Against issue 28's ratios: --out
# --candidates all is 6.8x the search alone (it was 11.7x with the
# one-process fallback), --out -k 1000 4.0x the search of the same top-k
# (neither 3x nor 2x: the Lua walk of every candidate, about 1 us each,
# and the Lua rendering of 57 MB of report, JSON and launch text remain).
#
# Fifth look (2026-12-06, after csv_rows:block: a block the fast path
# rejects at once is written by C in one call, not walked candidate by
# candidate in Lua; the same VM idle, load 0.5-0.9, median of 3, CPU s):
#                                     --jobs 1       --jobs 2 (default)
#   search alone                      0.50           0.57
#   --out --candidates all            4.69 -> 1.58   5.06 -> 1.95
#   ratio to the search alone         9.4x -> 3.1x   6.8x (8.9x of 0.57) -> 3.4x
# candidates.csv byte for byte the same (2,430,560 rows, 310 MB).  Where
# the 1.1 s over the search goes with --jobs 1: the Lua walk down to each
# of the 120,256 blocks (the fast path's subtree skips above the blocks
# are off when every row is written) and its per-block bookkeeping about
# 0.3 s, the rows in C about 0.45 s (0.19 us a row: the template's fixed
# cells looked up once per block, the varying ones once per block shape),
# writing 310 MB 0.15 s, the other outputs 0.14 s.  --candidates all is
# within 3.1-3.4x of the search, not yet 3x; --out --top-k 1000 unchanged.
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
row() { # label, then the command; the ratio is of CPU seconds
  local label=$1; shift
  med "$@"
  [ -n "${base:-}" ] || base=$cpu
  printf '%-44s %7.2f s wall %7.2f s CPU  %5.2fx the search  (load %s)\n' "$label" "$wall" "$cpu" \
    "$(awk -v a="$cpu" -v b="$base" 'BEGIN { print a / b }')" "$(cut -d' ' -f1 /proc/loadavg)"
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
