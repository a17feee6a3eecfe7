/*
 * fuzz/fuzz_trace.c -- libFuzzer harness for the profiler trace reader:
 * `apsearch calibrate --trace FILE` (apsearch.trace: the Kineto JSON
 * reader, the host, kernel-gap and step measures, the GEMM and attention
 * fits).  The target is fuzz/targets.lua's `trace`; fuzz/harness.h has
 * the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("trace")
