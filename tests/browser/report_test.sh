#!/usr/bin/env bash
# tests/browser/report_test.sh -- renders apsearch's HTML report in a real
# headless browser (Debian's chromium) and checks that every chart drew
# with data and no script raised an error; keeps a screenshot.
#
#   report_test.sh APSEARCH_BIN REPO_ROOT ARTIFACT_DIR
#
# The report marks itself when drawing is done (lua/apsearch/report/
# report.js): <html data-charts-ok="8" data-charts-rendered="8"
# data-script-errors="0" ...>.  The test reads the DOM chromium dumps after
# a virtual-time budget, once with ECharts inlined (all eight charts) and
# once with `--echarts none` (tables only, a plain notice, no script error).
#
# Exit 0 pass, 1 fail, 77 skipped (chromium not installed; CTest
# SKIP_RETURN_CODE).
set -u
BIN=${1:?usage: report_test.sh APSEARCH_BIN REPO_ROOT ARTIFACT_DIR}
ROOT=${2:?usage: report_test.sh APSEARCH_BIN REPO_ROOT ARTIFACT_DIR}
ART=${3:?usage: report_test.sh APSEARCH_BIN REPO_ROOT ARTIFACT_DIR}

CHROMIUM=""
for c in chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then CHROMIUM=$(command -v "$c"); break; fi
done
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium); the report was not rendered"
  exit 77
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$ART"
fail=0
say() { printf '%s\n' "$*"; }
bad() { say "FAIL: $*"; fail=1; }

BUDGET=5000
chrome() {  # chrome OUT_ARGS... URL
  local profile
  profile=$(mktemp -d "$WORK/profile.XXXXXX")
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
    --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-dev-shm-usage --user-data-dir="$profile" \
    --virtual-time-budget="$BUDGET" "$@" 2>>"$WORK/chromium.log"
}

dump() {  # dump URL OUT: the DOM once drawing is done (a longer budget on a slow first start)
  for BUDGET in 5000 15000 30000; do
    chrome --dump-dom "$1" >"$2"
    grep -q '<html[^>]*data-charts-rendered=' "$2" && return 0
    grep -q '<html[^>]*data-echarts="missing"' "$2" && return 0
  done
  BUDGET=5000
  return 0
}

attr() {  # attr NAME FILE -> value of NAME on the <html> element
  sed -n 's/.*<html[^>]*[[:space:]]'"$1"'="\([^"]*\)".*/\1/p' "$2" | head -n 1
}

# 1. the 405B example: pipeline stages, CP, early and late filters
OUT="$WORK/out"
if ! APSEARCH_ROOT="$ROOT" "$BIN" run "$ROOT/examples/llama3_405b_h100_16k.lua" --top-k 8 \
     --out "$OUT" --quiet >/dev/null 2>"$WORK/run.err"; then
  bad "apsearch run failed: $(cat "$WORK/run.err")"
  exit 1
fi
if grep -q 'id="no-echarts"' "$OUT/report.html"; then
  bad "report.html has no ECharts inlined (was it fetched at configure time? see the CMake output)"
  exit 1
fi
dump "file://$OUT/report.html" "$WORK/dom.html"
say "rendered: $(grep -o '<html[^>]*>' "$WORK/dom.html" | head -n 1)"
[ "$(attr data-script-errors "$WORK/dom.html")" = "0" ] || bad "script errors: $(attr data-script-errors "$WORK/dom.html") ($(sed -n 's/.*<pre id="script-errors"[^>]*>\([^<]*\).*/\1/p' "$WORK/dom.html"))"
[ "$(attr data-charts-rendered "$WORK/dom.html")" = "8" ] || bad "charts rendered: '$(attr data-charts-rendered "$WORK/dom.html")', expected 8"
[ "$(attr data-charts-ok "$WORK/dom.html")" = "8" ] || bad "charts with data: '$(attr data-charts-ok "$WORK/dom.html")', expected 8 (empty: $(attr data-charts-empty "$WORK/dom.html"))"
for i in 1 2 3 4 5 6 7 8; do
  grep -q "id=\"chart$i\"[^>]*_echarts_instance_" "$WORK/dom.html" || bad "chart$i has no ECharts instance"
done
grep -q '<canvas' "$WORK/dom.html" || bad "no canvas drawn"
BUDGET=8000 chrome --screenshot="$ART/report.png" --window-size=1400,4000 "file://$OUT/report.html" >/dev/null
[ -s "$ART/report.png" ] && say "screenshot: $ART/report.png" || bad "no screenshot written"
cp "$OUT/report.html" "$ART/report.html"

# 2. without ECharts: tables and a plain notice, no script error
OUT2="$WORK/out2"
APSEARCH_ROOT="$ROOT" "$BIN" run "$ROOT/examples/llama3_70b_h100.lua" --top-k 3 --echarts none \
  --out "$OUT2" --quiet >/dev/null 2>&1 || bad "apsearch run --echarts none failed"
dump "file://$OUT2/report.html" "$WORK/dom2.html"
[ "$(attr data-echarts "$WORK/dom2.html")" = "missing" ] || bad "tables-only report: data-echarts is '$(attr data-echarts "$WORK/dom2.html")'"
[ "$(attr data-script-errors "$WORK/dom2.html")" = "0" ] || bad "tables-only report: script errors"
grep -q 'Charts need Apache ECharts' "$WORK/dom2.html" || bad "tables-only report: no notice"
grep -q '<table>' "$WORK/dom2.html" || bad "tables-only report: no table"

if [ "$fail" -ne 0 ]; then
  say "chromium log (tail):"; tail -n 20 "$WORK/chromium.log"
  exit 1
fi
say "PASS: 8 charts rendered with data, no script errors; tables-only report readable"
exit 0
