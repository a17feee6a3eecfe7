#!/usr/bin/env bash
# Held-out accuracy on NVIDIA's Megatron-Bridge performance summaries
# (docs/accuracy.md "Held out: Megatron-Bridge performance summaries").
# Usage: scripts/heldout-report.sh [CASES.csv] [--calibration FILE]
# Prints mean |error| of tokens/s per GPU per release x system x precision
# (release "?" when the row's source names no NeMo container release),
# then per system x precision and per release, and the runs estimated over
# the memory limit with their three largest memory terms.  Needs jq.
# APS_BIN: the apsearch binary (default build/apsearch of this tree).
set -euo pipefail
# a CASES path is the caller's, relative to where it was run
cases=${1:-}
[ -n "$cases" ] && [ "${cases#/}" = "$cases" ] && cases="$PWD/$cases"
cd "$(dirname "$0")/.."
cases=${cases:-tests/fixtures/heldout/megatron_bridge_perf.csv}
shift || true
# validate exits 2 when some rows cannot be estimated and still reports
# the others; without a report (no such file, bad options) stop here
json=$("${APS_BIN:-./build/apsearch}" validate "$cases" --format json "$@" || true)
# (jq 1.6 -e exits 0 on empty input: test for it apart)
if [ -z "$json" ] || ! jq -e '.cases | type == "array"' >/dev/null 2>&1 <<<"$json"; then
  echo "heldout-report.sh: $cases: apsearch validate gave no report" >&2
  exit 2
fi
rows=$(jq -r '.cases[] | select(.error_pct.tokens_per_s_per_gpu != null) |
  [((.source | capture(", (?<r>[0-9.]+) NeMo").r) // "?"), .inputs.cluster.device.base,
   .inputs.training.precision, .error_pct.tokens_per_s_per_gpu] | @tsv' <<<"$json")
if [ -z "$rows" ]; then
  echo "heldout-report.sh: $cases: no run compared (every row failed or has no measured throughput)" >&2
  exit 2
fi
group() { # $1: awk key expression over release ($1), device ($2), precision ($3)
  awk -F'\t' -v OFS='\t' "{ k = $1; e = \$4 < 0 ? -\$4 : \$4; n[k]++; s[k] += e; b[k] += \$4;
    if (e > m[k]) m[k] = e } END { for (k in n) printf \"%s\t%d\t%.1f\t%+.1f\t%.1f\n\", k, n[k], s[k] / n[k],
    b[k] / n[k], m[k] }" <<<"$rows" | sort -V
}
echo "# release/device/precision  runs  mean|err|%  mean err%  max|err|%"
group '$1 "/" $2 "/" $3'
echo "# device/precision"
group '$2 "/" $3'
echo "# release"
group '$1'
echo "# all"
group '"all"'
echo "# estimated over the memory limit (case, model, device, precision, GiB, top memory terms)"
jq -r '.cases[] | select(.predicted.fits == false) |
  [.case_id, .model, .inputs.cluster.device.base, .inputs.training.precision,
   (.predicted.mem_gib * 10 | round / 10),
   ([.top_terms.memory[] | "\(.name) \(.gib * 10 | round / 10)"] | join(", "))] | @tsv' <<<"$json"
