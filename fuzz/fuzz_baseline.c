/*
 * fuzz/fuzz_baseline.c -- libFuzzer harness for the baseline reader:
 * `apsearch run --baseline FILE` against a result searched once
 * (apsearch.report.baseline: the reader, the diff, the diff in every
 * output). The target is fuzz/targets.lua's `baseline`; fuzz/harness.h has
 * the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("baseline")
