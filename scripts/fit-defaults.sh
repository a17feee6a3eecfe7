#!/usr/bin/env bash
# Reproduces the kernel-efficiency defaults of src/core/presets.c: fits them
# to the published runs and prints the validation figures of
# docs/accuracy.md.  Usage: scripts/fit-defaults.sh [CASES.csv]
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-../shared/validation/public_cases.csv}
[ -f "$cases" ] || cases=tests/fixtures/public_cases.csv
cmake -S . -B build >/dev/null && cmake --build build -j2 >/dev/null
./build/apsearch calibrate "$cases" -o build/calib-public.json
./build/apsearch validate "$cases" --calibration build/calib-public.json | tail -3
cat build/calib-public.json
# the per-stack fit of docs/accuracy.md "Software stacks" (not shipped)
./build/apsearch calibrate "$cases" --group software -q -o build/calib-public-stacks.json
