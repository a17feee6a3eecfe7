#!/usr/bin/env bash
# scripts/stress-out.sh [KILLS] [PAIRS] [RACES] [WORKERS] [PKILLS] [BIGPAIRS] [SWAPS] -- stresses the atomic result sets
# of `apsearch run --out DIR` (docs/outputs.md, "Atomic result sets"):
#
# 1. KILLS runs (default 300), each killed with SIGKILL after a random
#    0.01-0.5 s (`timeout -s KILL`), top-k random 1..8; after each, DIR must
#    be one complete set (scripts/check-out-set.lua) and either the previous
#    set or a new one; a run that exited 0 must have switched;
# 2. PAIRS pairs (default 60) of concurrent runs into DIR (every other pair
#    with its second run killed at a random moment): each run ends 0, 2
#    with "another apsearch run is writing this directory now" naming DIR,
#    or by the kill; DIR is then one complete set, that of the run that
#    finished last when both finished.
#
# User files next to DIR, in a look-alike set directory (with a marker,
# a notes.txt and a launch/rank1_foo.sh symlink to a file outside) and a
# launch file the user added to a real set (launch/rank9_megatron.sh, so
# that set must be kept) must stay byte for byte; after a final clean run
# only the lock, DIR, its set, the kept set and the user's files may
# remain.  Then the --out contract's other cases (docs/outputs.md):
#
# 3. RACES runs (default 40) while a user replaces DIR with a file of their
#    own at a random moment: each run ends 0 or 2, the user's file is
#    never replaced;
# 4. a plain directory holding the user's result.json and report.html is
#    refused (exit 2) and untouched; a private (0700) directory keeps its
#    permissions in the set that replaces it; a neighbouring --out whose
#    name extends DIR's (`out.apsearch-set-<id>`) keeps its set.
#
# Then the search on worker processes (`--jobs 2`, BIG_POLICY, default the
# 122,580-candidate examples/llama3_70b_h100_1024_sweep.lua, with
# `--candidates all`: every worker writes its rows to an unnamed
# temporary file in the new set directory, the parent copies them into
# candidates.csv), into the same DIR:
#
# 5. WORKERS runs (default 40) with one worker killed by SIGKILL at a
#    random 0.1-0.55 s: each ends 2 with exactly the one line `search:
#    worker process PID was killed by signal 9 before it finished` (PID
#    the killed worker) and DIR still the previous set, or 0 (the worker
#    had finished) with candidates.csv byte for byte that of `--jobs 1`;
# 6. PKILLS runs (default 40) whose parent is killed by SIGKILL at a
#    random 0.05-0.8 s: DIR one complete set, no worker left running, and
#    a finished one's candidates.csv that of `--jobs 1`;
# 7. BIGPAIRS (default 10) pairs of such runs into DIR, each beside a run
#    into a neighbouring DIR2 (`out2`): DIR holds a finished run's set,
#    DIR2 its own.
# After each, no set directory but DIR's, the kept set and the user's is
# left next to DIR once the next run has cleaned, and the user's files
# are unchanged.
# 8. SWAPS runs (default 150) while a look-alike set directory beside DIR,
#    whose marker names DIR and lists precious.txt, is swapped back and
#    forth with a link to a directory outside holding a precious.txt of its
#    own (renameat2 RENAME_EXCHANGE in a loop, a racer compiled with cc):
#    the file outside is never removed (the clean-up removes through a
#    descriptor of the directory it checked, core.remove_in_dir).
#
# Prints the counts; exit 1 on any fault.  KEEP_W=1 keeps the work
# directory (its final.err: the final run's log, with what it kept).
set -u
cd "$(dirname "$0")/.."
BIN=${APS_BIN:-$PWD/build/apsearch}
POLICY=${POLICY:-examples/llama3_70b_h100.lua}
KILLS=${1:-300}
PAIRS=${2:-60}
RACES=${3:-40}
WORKERS=${4:-40}
PKILLS=${5:-40}
BIGPAIRS=${6:-10}
SWAPS=${7:-150}
BIG_POLICY=${BIG_POLICY:-examples/llama3_70b_h100_1024_sweep.lua}
CHECK="lua5.4 scripts/check-out-set.lua"
W=$(mktemp -d)
B=$W/base
DIR=$B/out
mkdir -p "$B/.out.apsearch-set-user/launch"
echo "outside, mine" > "$W/outside.sh"
echo "mine" > "$B/user.txt"
printf 'apsearch result set\nrun_id user\n' > "$B/.out.apsearch-set-user/.apsearch-set"
echo "mine" > "$B/.out.apsearch-set-user/notes.txt"
ln -s "$W/outside.sh" "$B/.out.apsearch-set-user/launch/rank1_foo.sh"
user_sum() {
  { cat "$W/outside.sh" "$B/user.txt" "$B/.out.apsearch-set-user/notes.txt" \
        "$B/.out.apsearch-set-user/.apsearch-set"
    readlink "$B/.out.apsearch-set-user/launch/rank1_foo.sh"; } 2>&1 | md5sum
}
# a launch file added by hand to a real set: that set is kept from then on
"$BIN" run "$POLICY" --quiet --top-k 1 --out "$DIR" >/dev/null 2>&1 || { echo "FAULT: first run"; exit 1; }
KEPT=$(readlink "$DIR")
KEPT_ID=$($CHECK "$DIR")
echo "mine" > "$DIR/launch/rank9_megatron.sh"
# check-out-set.lua DIR, but DIR still on the kept set (a launch file added
# by hand, so not a set as apsearch wrote it) gives that set's run id
check_dir() {
  if [ "$(readlink "$DIR")" = "$KEPT" ]; then echo "$KEPT_ID"; else $CHECK "$DIR"; fi
}
user_sum() {
  { cat "$W/outside.sh" "$B/user.txt" "$B/.out.apsearch-set-user/notes.txt" \
        "$B/.out.apsearch-set-user/.apsearch-set" "$B/$KEPT/launch/rank9_megatron.sh"
    readlink "$B/.out.apsearch-set-user/launch/rank1_foo.sh"; } 2>&1 | md5sum
}
USER_SUM=$(user_sum)
faults=0
# faults on fd 3 (the terminal); the shell's own stderr, which carries its
# "Killed" notice for each run timeout kills, is dropped
exec 3>&2 2>/dev/null
fault() { echo "FAULT: $*" >&3; faults=$((faults + 1)); }
rand_time() { local ms=$((10 + RANDOM % 491)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
# set directories other than DIR's and the user's
leftovers() {
  local cur n c=0
  cur=$(readlink "$DIR" 2>/dev/null)
  for n in "$B"/.out.apsearch-set-* "$B"/.out.apsearch-link-*; do
    [ -e "$n" ] || [ -L "$n" ] || continue
    n=${n##*/}
    [ "$n" = "$cur" ] || [ "$n" = ".out.apsearch-set-user" ] || [ "$n" = "$KEPT" ] || c=$((c + 1))
  done
  echo $c
}

prev=$KEPT_ID
killed=0 completed=0 switched_killed=0 kept_killed=0 none=0 max_left=0
for i in $(seq 1 "$KILLS"); do
  k=$((1 + RANDOM % 8))
  timeout -s KILL "$(rand_time)" "$BIN" run "$POLICY" --quiet --top-k "$k" --out "$DIR" \
    >/dev/null 2>"$W/err"
  rc=$?
  id=$(check_dir)
  crc=$?
  if [ $crc = 3 ] && [ -z "$prev" ]; then
    none=$((none + 1))
  elif [ $crc != 0 ]; then
    fault "kill run $i (rc $rc): DIR is not one complete set"
  fi
  case $rc in
    0) completed=$((completed + 1))
       [ "$id" != "$prev" ] || fault "run $i exited 0 but DIR still holds $prev" ;;
    137) killed=$((killed + 1))
         if [ "$id" != "$prev" ]; then switched_killed=$((switched_killed + 1)); else kept_killed=$((kept_killed + 1)); fi ;;
    *) fault "run $i exited $rc: $(cat "$W/err")" ;;
  esac
  [ "$(user_sum)" = "$USER_SUM" ] || fault "run $i: a user file changed"
  l=$(leftovers); [ "$l" -gt "$max_left" ] && max_left=$l
  prev=$id
done
echo "kills: $KILLS runs: $killed killed ($kept_killed left the previous set, $switched_killed had already switched), $completed completed, $none before any set existed; $faults faults; at most $max_left leftover set dirs between runs"

pair_ok=0 pair_refused=0 pair_both=0 pair_killed=0 f0=$faults
for j in $(seq 1 "$PAIRS"); do
  k1=$((1 + RANDOM % 8)); k2=$((1 + RANDOM % 8))
  "$BIN" run "$POLICY" --quiet --top-k "$k1" --format json --out "$DIR" >"$W/o1" 2>"$W/e1" &
  p1=$!
  if [ $((j % 2)) = 0 ]; then
    timeout -s KILL "$(rand_time)" "$BIN" run "$POLICY" --quiet --top-k "$k2" --format json --out "$DIR" \
      >"$W/o2" 2>"$W/e2" &
  else
    "$BIN" run "$POLICY" --quiet --top-k "$k2" --format json --out "$DIR" >"$W/o2" 2>"$W/e2" &
  fi
  p2=$!
  wait $p1; r1=$?
  wait $p2; r2=$?
  id=$(check_dir) || fault "pair $j ($r1, $r2): DIR is not one complete set"
  ok_ids=""
  for n in 1 2; do
    eval "r=\$r$n"
    case $r in
      0) ok_ids="$ok_ids $(grep -o '"run_id":"[^"]*"' "$W/o$n" | cut -d'"' -f4)" ;;
      2) grep -q "another apsearch run is writing this directory now" "$W/e$n" && grep -qF "$DIR" "$W/e$n" \
           || fault "pair $j: run $n exit 2: $(cat "$W/e$n")"
         pair_refused=$((pair_refused + 1)) ;;
      137) pair_killed=$((pair_killed + 1)) ;;
      *) fault "pair $j: run $n exited $r: $(cat "$W/e$n")" ;;
    esac
  done
  [ "$r1" = 0 ] && [ "$r2" = 0 ] && pair_both=$((pair_both + 1))
  case " $ok_ids " in
    *" $id "*) pair_ok=$((pair_ok + 1)) ;;
    *) [ -z "$ok_ids" ] || fault "pair $j: DIR holds $id, not a finished run's set ($ok_ids)" ;;
  esac
  [ "$(user_sum)" = "$USER_SUM" ] || fault "pair $j: a user file changed"
done
echo "pairs: $PAIRS ($((PAIRS / 2)) with the second run killed at random): DIR held a finished run's set after $pair_ok; $pair_refused runs refused (exit 2), $pair_killed killed, $pair_both pairs where both finished; $((faults - f0)) faults"

"$BIN" run "$POLICY" --out "$DIR" >/dev/null 2>"$W/final.err" || fault "final run: $(cat "$W/final.err")"
$CHECK "$DIR" >/dev/null || fault "final set"
cur=$(readlink "$DIR")
expect=$(printf '%s\n' .out.apsearch-lock "$cur" "$KEPT" .out.apsearch-set-user out user.txt | sort)
got=$(ls -A "$B" | sort)
[ "$got" = "$expect" ] || fault "after a clean run: $(echo $got); its log: $(grep kept "$W/final.err")"
[ "$(user_sum)" = "$USER_SUM" ] || fault "a user file changed"
echo "final: $(ls -A "$B" | wc -l) entries next to DIR (lock, link, set, the kept set, the user's two); faults $faults"

# 3. a user replaces DIR with their own file while runs go on
R=$W/race; mkdir -p "$R"; f0=$faults; race_ok=0 race_refused=0
for j in $(seq 1 "$RACES"); do
  rm -f "$R/out"
  "$BIN" run "$POLICY" --quiet --top-k 1 --out "$R/out" >/dev/null 2>"$W/err" &
  p=$!
  sleep "$(rand_time)"
  rm -f "$R/out"; echo "mine $j" > "$R/out"
  wait $p; r=$?
  case $r in
    0) race_ok=$((race_ok + 1)) ;;
    2) grep -q "changed while apsearch ran\|is a file, not a directory" "$W/err" \
         || fault "race $j: exit 2: $(cat "$W/err")"
       race_refused=$((race_refused + 1)) ;;
    *) fault "race $j: exit $r: $(cat "$W/err")" ;;
  esac
  [ "$(cat "$R/out" 2>/dev/null)" = "mine $j" ] || fault "race $j: the user's file at DIR was replaced"
done
echo "races: $RACES runs while DIR was replaced by a user's file: $race_ok finished first, $race_refused stopped (exit 2); $((faults - f0)) faults"

# 4. a plain directory of the user's, a private directory, a neighbour
P=$W/plain; mkdir -p "$P/out"; echo '{"mine":1}' > "$P/out/result.json"; echo mine > "$P/out/report.html"
"$BIN" run "$POLICY" --quiet --out "$P/out" >/dev/null 2>&1; r=$?
[ $r = 2 ] || fault "plain directory: exit $r"
[ "$(cat "$P/out/result.json" "$P/out/report.html")" = "$(printf '{"mine":1}\nmine')" ] && [ "$(ls -A "$P")" = out ] \
  || fault "plain directory: the user's files changed"
mkdir -m 0700 "$P/priv"
"$BIN" run "$POLICY" --quiet --out "$P/priv" >/dev/null 2>&1 || fault "private directory: run failed"
[ "$(stat -L -c %a "$P/priv")" = 700 ] || fault "private directory: its set is $(stat -L -c %a "$P/priv")"
NB=$B/out.apsearch-set-20250101T000000Z-1-abcdef
"$BIN" run "$POLICY" --quiet --out "$NB" >/dev/null 2>&1 || fault "neighbour: run failed"
nid=$($CHECK "$NB")
"$BIN" run "$POLICY" --quiet --out "$DIR" >/dev/null 2>&1 || fault "neighbour: run into DIR failed"
[ "$($CHECK "$NB")" = "$nid" ] || fault "neighbour: its set was touched by a run into DIR"
[ "$(user_sum)" = "$USER_SUM" ] || fault "a user file changed"
echo "plain, private and neighbouring directories: $faults faults in all"

# 5.-7. the search on worker processes, candidates.csv written by them
BIGARGS=(run "$BIG_POLICY" --quiet --jobs 2 --candidates all --echarts none)
"$BIN" "${BIGARGS[@]}" --jobs 1 --out "$W/ref" >/dev/null 2>&1 || fault "reference run (--jobs 1)"
REF="$W/ref/candidates.csv"
rand_big() { local ms=$(($1 + RANDOM % ($2 - $1 + 1))); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
same_csv() { cmp -s "$REF" "$DIR/candidates.csv" || fault "$1: candidates.csv differs from --jobs 1's"; }
# the worker processes of run p (its children), one a line
workers_of() { pgrep -P "$1" 2>/dev/null; }
prev=$($CHECK "$DIR")
# what section 4 left that leftovers() counts (the neighbour's set and lock)
L0=$(leftovers)
f0=$faults; w_killed=0 w_done=0
for i in $(seq 1 "$WORKERS"); do
  k=$((1 + RANDOM % 8))
  "$BIN" "${BIGARGS[@]}" --top-k "$k" --out "$DIR" >/dev/null 2>"$W/err" &
  p=$!
  sleep "$(rand_big 100 550)"
  victim=$(workers_of "$p" | shuf -n 1)
  [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
  wait "$p"; r=$?
  id=$($CHECK "$DIR") || fault "worker kill $i (rc $r): DIR is not one complete set"
  case $r in
    2) w_killed=$((w_killed + 1))
       [ "$(cat "$W/err")" = "apsearch: search: worker process $victim was killed by signal 9 before it finished" ] \
         || fault "worker kill $i: stderr is not the one line naming worker $victim: $(cat "$W/err")"
       [ "$id" = "$prev" ] || fault "worker kill $i: exit 2 but DIR switched to $id" ;;
    0) w_done=$((w_done + 1)); same_csv "worker kill $i"
       [ "$id" != "$prev" ] || fault "worker kill $i: exit 0 but DIR still holds $prev" ;;
    *) fault "worker kill $i: exit $r: $(cat "$W/err")" ;;
  esac
  l=$(leftovers); [ "$l" = "$L0" ] || fault "worker kill $i: $((l - L0)) set directories left beside DIR"
  [ "$(user_sum)" = "$USER_SUM" ] || fault "worker kill $i: a user file changed"
  prev=$id
done
echo "worker kills: $WORKERS runs (--jobs 2, --candidates all): $w_killed stopped by a killed worker (exit 2), $w_done finished first; $((faults - f0)) faults"

f0=$faults; p_killed=0 p_done=0
for i in $(seq 1 "$PKILLS"); do
  k=$((1 + RANDOM % 8))
  timeout -s KILL "$(rand_big 50 800)" "$BIN" "${BIGARGS[@]}" --top-k "$k" --out "$DIR" >/dev/null 2>"$W/err"
  r=$?
  id=$($CHECK "$DIR") || fault "parent kill $i (rc $r): DIR is not one complete set"
  case $r in
    137) p_killed=$((p_killed + 1)) ;;
    0) p_done=$((p_done + 1)); same_csv "parent kill $i"
       [ "$id" != "$prev" ] || fault "parent kill $i: exit 0 but DIR still holds $prev" ;;
    *) fault "parent kill $i: exit $r: $(cat "$W/err")" ;;
  esac
  # the workers die with their parent (PR_SET_PDEATHSIG)
  sleep 0.05
  pgrep -f -- "--out $DIR\$" >/dev/null && fault "parent kill $i: a worker outlived its parent"
  l=$(leftovers); [ "$l" -le $((L0 + 1)) ] || fault "parent kill $i: $((l - L0)) set directories left beside DIR"
  [ "$(user_sum)" = "$USER_SUM" ] || fault "parent kill $i: a user file changed"
  prev=$id
done
echo "parent kills: $PKILLS runs (--jobs 2, --candidates all): $p_killed killed, $p_done finished first; $((faults - f0)) faults"

f0=$faults; bp_ok=0 bp_refused=0
DIR2=$B/out2
for j in $(seq 1 "$BIGPAIRS"); do
  "$BIN" "${BIGARGS[@]}" --format json --out "$DIR" >"$W/o1" 2>"$W/e1" & p1=$!
  "$BIN" "${BIGARGS[@]}" --format json --out "$DIR" >"$W/o2" 2>"$W/e2" & p2=$!
  "$BIN" "${BIGARGS[@]}" --format json --out "$DIR2" >"$W/o3" 2>"$W/e3" & p3=$!
  wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
  id=$($CHECK "$DIR") || fault "big pair $j: DIR is not one complete set"
  ok_ids=""
  for n in 1 2; do
    eval "r=\$r$n"
    case $r in
      0) ok_ids="$ok_ids $(grep -o '"run_id":"[^"]*"' "$W/o$n" | cut -d'"' -f4)" ;;
      2) grep -q "another apsearch run is writing this directory now" "$W/e$n" || fault "big pair $j: run $n: $(cat "$W/e$n")"
         bp_refused=$((bp_refused + 1)) ;;
      *) fault "big pair $j: run $n exited $r: $(cat "$W/e$n")" ;;
    esac
  done
  case " $ok_ids " in *" $id "*) bp_ok=$((bp_ok + 1)) ;; *) fault "big pair $j: DIR holds $id, not a finished run's ($ok_ids)" ;; esac
  same_csv "big pair $j"
  [ "$r3" = 0 ] || fault "big pair $j: the run into DIR2 exited $r3: $(cat "$W/e3")"
  [ "$($CHECK "$DIR2")" = "$(grep -o '"run_id":"[^"]*"' "$W/o3" | cut -d'"' -f4)" ] || fault "big pair $j: DIR2 is not its run's set"
  cmp -s "$REF" "$DIR2/candidates.csv" || fault "big pair $j: DIR2's candidates.csv differs from --jobs 1's"
  l=$(leftovers); [ "$l" = "$L0" ] || fault "big pair $j: $((l - L0)) set directories left beside DIR"
  [ "$(user_sum)" = "$USER_SUM" ] || fault "big pair $j: a user file changed"
done
n2=$(ls -A "$B" | grep -c '^\.out2\.apsearch-set-')
[ "$n2" = 1 ] || fault "DIR2: $n2 set directories beside it"
echo "big pairs: $BIGPAIRS (two runs into DIR beside one into DIR2, --jobs 2): DIR held a finished run's set after $bp_ok, $bp_refused refused; $((faults - f0)) faults"

f0=$faults; swapped=0
mkdir -p "$W/victim"
echo "outside, mine" > "$W/victim/precious.txt"
cat > "$W/racer.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    for (;;)
        renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE);
}
C
if cc -o "$W/racer" "$W/racer.c" 2>/dev/null; then
  FAKE=.out.apsearch-set-20260101T000000Z-1-abcdef
  for k in $(seq 1 "$SWAPS"); do
    (cd "$B" && rm -rf "$FAKE" alt && mkdir "$FAKE" &&
      printf 'apsearch result set\nrun_id 20260101T000000Z-1-abcdef\nout out\nfile precious.txt\n' > "$FAKE/.apsearch-set" &&
      touch "$FAKE/precious.txt" && ln -s "$W/victim" alt)
    (cd "$B" && exec "$W/racer" "$FAKE" alt) & rp=$!
    sleep 0.01
    # (the fewest steps before the clean-up: the old by-path removal lost
    # the file outside at the 52nd such run)
    "$BIN" run "$POLICY" --top-k 1 --quiet --jobs 1 --candidates none --out "$DIR" >/dev/null 2>"$W/es"
    kill $rp; wait $rp 2>/dev/null
    [ -e "$W/victim/precious.txt" ] || { fault "swap $k: the file outside was removed"; break; }
    swapped=$((swapped + 1))
  done
  (cd "$B" && rm -rf "$FAKE" alt)
  echo "swaps: $swapped runs beside a look-alike set swapped with a link outside; $((faults - f0)) faults"
else
  echo "swaps: skipped (no C compiler for the racer)"
fi

[ "${KEEP_W:-}" ] && echo "kept $W" >&3 || rm -rf "$W"
[ $faults = 0 ]
