#!/usr/bin/env bash
# scripts/fuzz.sh SECONDS [TARGET...] -- builds the libFuzzer harnesses of
# fuzz/ (clang, ASan + UBSan; docs/fuzzing.md) in their own build directory
# and runs each target for SECONDS, one after the other (APS_FUZZ_JOBS
# at a time: default 1, the machine is shared).  Targets: config_json csv baseline args policy sandbox (all
# when none is named).  Prints the executions of each and exits 1 on a
# finding (the input is kept in build-fuzz/fuzz-work/artifacts/<target>/),
# 2 on bad usage or a missing toolchain.
#
# Environment (all optional):
#   APS_FUZZ_BUILD    build directory (build-fuzz)
#   APS_FUZZ_CC       clang to use (clang)
#   APS_FUZZ_TIMEOUT  seconds one input may take before it is a finding (25;
#                     a normal input takes milliseconds)
#   APS_FUZZ_RSS_MB   memory limit of the process, MiB (2048)
#   APS_FUZZ_FLAGS    more libFuzzer flags, e.g. "-seed=1 -max_len=8192"
#   APS_FUZZ_JOBS     targets fuzzed at a time (1)
#
# The corpus each target grows is kept in build-fuzz/fuzz-work/corpus/
# <target> and read again next time, with the seeds of fuzz/corpus/<target>
# and, not copied into fuzz/corpus, the repository's own inputs of that
# kind (seeds_of below: the example policies, the shipped model configs).
# Reproduce a finding with
#   build-fuzz/fuzz/fuzz_<target> build-fuzz/fuzz-work/artifacts/<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

usage() {
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]  (targets: config_json csv baseline args trace policy sandbox)" >&2
  exit 2
}
[ $# -ge 1 ] || usage
case "$1" in ''|*[!0-9]*) echo "scripts/fuzz.sh: SECONDS must be a positive integer (got \"$1\")" >&2; usage ;; esac
[ "$1" -gt 0 ] || usage
TIME="$1"
shift
ALL="config_json csv baseline args trace policy sandbox"
TARGETS="${*:-$ALL}"
for t in $TARGETS; do
  case " $ALL " in *" $t "*) ;; *) echo "scripts/fuzz.sh: unknown target \"$t\"" >&2; usage ;; esac
done

# APS_FUZZ_JOBS targets at a time (default 1: the machine is shared; CI,
# which has the machine to itself, runs 2); checked before the build
JOBS="${APS_FUZZ_JOBS:-1}"
case "$JOBS" in ''|*[!0-9]*|0) echo "scripts/fuzz.sh: APS_FUZZ_JOBS must be a positive integer (got \"$JOBS\")" >&2; exit 2 ;; esac
BUILD="${APS_FUZZ_BUILD:-build-fuzz}"
CC_FUZZ="${APS_FUZZ_CC:-clang}"
TIMEOUT="${APS_FUZZ_TIMEOUT:-25}"
RSS="${APS_FUZZ_RSS_MB:-2048}"

# clang with libFuzzer and the sanitizer runtimes (Debian: clang and
# libclang-rt-dev, scripts/install-deps.sh)
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe/p.c"
if ! command -v "$CC_FUZZ" >/dev/null 2>&1 ||
   ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
  echo "scripts/fuzz.sh: $CC_FUZZ cannot build a libFuzzer program with ASan + UBSan" \
       "(install clang and libclang-rt-dev: scripts/install-deps.sh)" >&2
  sed 's/^/  /' "$probe/err" >&2 2>/dev/null || true
  exit 2
fi

build_log="$probe/build.log"
if ! { cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DAPS_FUZZ=ON \
         -DAPS_FETCH_ECHARTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$BUILD" -j2 --target aps_fuzzers; } >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "scripts/fuzz.sh: building the harnesses in $BUILD failed" >&2
  exit 2
fi

WORK="$BUILD/fuzz-work"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
BIN="$(cd "$BUILD/fuzz" && pwd)"
status=0
total=0
printf '%-12s %12s %8s %8s  %s\n' target executions exec/s corpus result
# the repository's files that are seeds of a target as they are
seeds_of() {
  case "$1" in
    policy) ls "$ROOT"/examples/*.lua ;;
    config_json) ls "$ROOT"/examples/models/*.json "$ROOT"/tests/fixtures/moe/*.json ;;
  esac
}
# one target: fuzzes it and writes its table line (and the status) to
# $WORK/$t.result
run_target() {
  local t="$1" log rc execs rate corpus result unit
  mkdir -p "$WORK/corpus/$t" "$WORK/artifacts/$t"
  rm -rf "$WORK/seeds/$t" && mkdir -p "$WORK/seeds/$t"
  for f in $(seeds_of "$t"); do cp "$f" "$WORK/seeds/$t/"; done
  lua5.4 fuzz/dict.lua "$t" "$ROOT" > "$WORK/$t.dict"
  log="$WORK/$t.log"
  rc=0
  # -detect_leaks=0: the Lua state frees garbage when its collector runs,
  # not per input, so libFuzzer's per-input leak check would run a full
  # LeakSanitizer scan on most inputs (5x slower) and find only garbage;
  # LeakSanitizer still checks the process at exit
  # shellcheck disable=SC2086
  (cd "$WORK" && ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$BIN/fuzz_$t" -max_total_time="$TIME" -timeout="$TIMEOUT" -rss_limit_mb="$RSS" \
      -dict="$t.dict" -artifact_prefix="artifacts/$t/" -print_final_stats=1 -detect_leaks=0 \
      ${APS_FUZZ_FLAGS:-} "corpus/$t" "$ROOT/fuzz/corpus/$t" "seeds/$t") >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  corpus="$(find "$WORK/corpus/$t" -type f | wc -l)"
  if [ "$rc" -eq 0 ]; then
    result="ok"
  else
    unit="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
    result="FINDING (exit $rc)${unit:+: $WORK/$unit}"
  fi
  printf '%s %s %-12s %12s %8s %8s  %s\n' "$rc" "${execs:-0}" "$t" "${execs:-?}" "${rate:-?}" "$corpus" \
    "$result" > "$WORK/$t.result"
}
# prints a target's table line (and its log's end on a finding)
print_result() {
  local t="$1" rc execs line
  if [ ! -f "$WORK/$t.result" ]; then
    printf '%-12s %12s %8s %8s  %s\n' "$t" "?" "?" "?" "FINDING (the harness run did not finish)"
    status=1
    return
  fi
  read -r rc execs line < "$WORK/$t.result"
  printf '%s\n' "$line"
  total=$((total + execs))
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "--- $WORK/$t.log (last 40 lines):"
    tail -n 40 "$WORK/$t.log"
  fi
}
if [ "$JOBS" -eq 1 ]; then
  # one after the other, each line as its target ends
  for t in $TARGETS; do
    rm -f "$WORK/$t.result"
    run_target "$t"
    print_result "$t"
  done
else
  running=0
  for t in $TARGETS; do
    rm -f "$WORK/$t.result"
    run_target "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait
  for t in $TARGETS; do print_result "$t"; done
fi
echo "total executions: $total"
exit "$status"
