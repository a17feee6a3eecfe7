/*
 * fuzz/fuzz_policy.c -- libFuzzer harness for policy loading: the input is a
 * policy file, run as `apsearch run FILE` (the sandbox, the fields'
 * validation, the search, every output). The target is fuzz/targets.lua's
 * `policy`; fuzz/harness.h has the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("policy")
