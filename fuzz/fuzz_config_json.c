/*
 * fuzz/fuzz_config_json.c -- libFuzzer harness for config.json import:
 * `apsearch inspect FILE`, then `apsearch estimate --model FILE`
 * (apsearch.hf, the core's model checks, parameter counts and estimate). The
 * target is fuzz/targets.lua's `config_json`; fuzz/harness.h has the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("config_json")
