#!/usr/bin/env bash
# Writes the outputs of `apsearch run` on several policies into DIR (every
# format, --top-k 1000, --out with --candidates all and feasible), so that
# two builds can be compared byte for byte: run it before and after a
# change, then `bench/outputs_snapshot.sh --compare OLD NEW`.  JSON (stdout,
# result.json and the data block of report.html, kept as
# report.data.json beside the rest of the page) is compared with its keys
# sorted: apsearch before core.json_encode wrote a table's keys in Lua's
# hash order, which is seeded per process.
# The search's own timings (all_candidate_summary seconds, search_seconds,
# candidates_per_s, its log line; the table's first lines) and the set's
# directory and run_id in result.json are masked, and so is the tree a
# model file was read from (APSEARCH_ROOT).
# Usage: bench/outputs_snapshot.sh DIR [APSEARCH]
#        bench/outputs_snapshot.sh --compare OLD NEW
set -euo pipefail
abs() { realpath -m "$1"; }
if [ "${1:-}" = --compare ]; then
  old=$(abs "$2") new=$(abs "$3") bad=0
  JQ='del(.all_candidate_summary.seconds?, .all_candidate_summary.search_seconds?,
    .all_candidate_summary.candidates_per_s?, .run_id?) | walk(if type == "string"
    then sub("candidates in [0-9.]+ s [(][0-9]+ candidates/s[)]"; "T") else . end)'
  norm() { case $1 in
    *.json) sed -E -e 's#[^" ]*/\.tmp([/"])#OUT\1#g' -e 's#"[^"]*/(examples/models/)#"ROOT/\1#g' "$1" |
      jq -S "$JQ" ;;
    *.table) sed -E 's/(^ *|, )[0-9]+\.[0-9]+ s$/\1T s/' "$1" ;;
    *.html) sed -E -e 's/searched in [0-9.]+ s/searched in T s/' \
      -e 's/candidates in [0-9.]+ s [(][0-9]+ candidates\/s[)]/T/g' "$1" ;;
    *) cat "$1" ;;
  esac; }
  # each tree normalized into a copy, then compared whole
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  for side in old new; do
    src=${!side}
    (cd "$src" && find . -type f) | while IFS= read -r rel; do
      mkdir -p "$T/$side/$(dirname "$rel")"
      norm "$src/$rel" >"$T/$side/$rel"
    done
  done
  diff -rq "$T/old" "$T/new" | sed "s#$T/##g" || bad=1
  [ $bad = 0 ] && echo "identical: $(find "$old" -type f | wc -l) files"
  exit $bad
fi
dir=$(abs "$1") bin=$(abs "${2:-$(dirname "$0")/../build/apsearch}")
cd "$(dirname "$0")/.."
mkdir -p "$dir"
for pol in examples/llama3_8b_h100.lua examples/llama3_70b_h100_1024_sweep.lua \
           examples/mixtral_8x7b_h100.lua examples/qwen3_30b_a3b_h100.lua \
           bench/llama3_405b_16k_wide.lua; do
  n=$(basename "$pol" .lua)
  for f in table json csv; do
    "$bin" run "$pol" --quiet --format "$f" >"$dir/$n.$f"
    "$bin" run "$pol" --quiet --format "$f" --top-k 1000 >"$dir/$n.k1000.$f"
  done
  for mode in all feasible; do
    rm -rf "$dir/.tmp"
    "$bin" run "$pol" --quiet --echarts none --out "$dir/.tmp" --candidates "$mode" \
      --top-k 1000 >/dev/null
    mkdir -p "$dir/$n.out-$mode"
    # the set's files without its run id (a time stamp and pid)
    for g in candidates.csv result.csv result.json report.html; do
      [ -f "$dir/.tmp/$g" ] && sed 's/apsearch-set-[0-9TZ]*-[0-9]*-[0-9a-f]*/SET/g' \
        "$dir/.tmp/$g" >"$dir/$n.out-$mode/$g"
    done
    # the report's data block apart (its JSON keys sorted on --compare)
    h="$dir/$n.out-$mode/report.html"
    sed -n 's#^<script type="application/json" id="apsearch-data">\(.*\)</script>$#\1#p' "$h" \
      >"$dir/$n.out-$mode/report.data.json"
    sed -i -e 's#^\(<script type="application/json" id="apsearch-data">\).*\(</script>\)$#\1DATA\2#' \
      -e 's#\(<meta name="apsearch-run-id" content="\)[^"]*#\1ID#' "$h"
    cp -r "$dir/.tmp/launch" "$dir/$n.out-$mode/launch"
    rm -rf "$dir"/.tmp "$dir"/..tmp.apsearch-*
  done
done
