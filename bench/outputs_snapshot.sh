#!/usr/bin/env bash
# Writes the outputs of `apsearch run` on several policies into DIR (every
# format, --top-k 1000, --out with --candidates all and feasible), so that
# two builds can be compared byte for byte: run it before and after a
# change, then `bench/outputs_snapshot.sh --compare OLD NEW`.  JSON (stdout
# and result.json; report.html embeds JSON too) is compared with its keys
# sorted: lua-cjson writes a table's keys in Lua's hash order, which is
# seeded per process, so two runs of one build differ in key order only.
# Usage: bench/outputs_snapshot.sh DIR [APSEARCH]
#        bench/outputs_snapshot.sh --compare OLD NEW
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --compare ]; then
  old=$2 new=$3 bad=0
  while IFS= read -r f; do
    rel=${f#"$old"/}
    case $rel in
      *.json) cmp -s <(jq -S . "$f") <(jq -S . "$new/$rel") || { echo "DIFFERS: $rel"; bad=1; } ;;
      */report.html) ;;  # holds JSON in hash order; its other bytes below
      *) cmp -s "$f" "$new/$rel" || { echo "DIFFERS: $rel"; bad=1; } ;;
    esac
  done < <(find "$old" -type f | sort)
  [ "$(cd "$old" && find . -type f | sort)" = "$(cd "$new" && find . -type f | sort)" ] ||
    { echo "DIFFERS: the lists of files"; bad=1; }
  [ $bad = 0 ] && echo "identical: $(find "$old" -type f | wc -l) files"
  exit $bad
fi
dir=$1 bin=${2:-./build/apsearch}
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
    for g in candidates.csv result.csv result.json; do
      [ -f "$dir/.tmp/$g" ] && sed 's/apsearch-set-[0-9TZ]*-[0-9]*-[0-9a-f]*/SET/g' \
        "$dir/.tmp/$g" >"$dir/$n.out-$mode/$g"
    done
    cp -r "$dir/.tmp/launch" "$dir/$n.out-$mode/launch"
    rm -rf "$dir"/.tmp "$dir"/..tmp.apsearch-*
  done
done
