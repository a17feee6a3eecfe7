/*
 * fuzz/fuzz_sandbox.c -- libFuzzer harness for the sandbox: the input is
 * the body of a rule's check function, run once on a one-candidate search
 * with the sandbox's limits as oracles (its time and memory limits must
 * hold). The target is fuzz/targets.lua's `sandbox`; fuzz/harness.h has
 * the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("sandbox")
