/*
 * fuzz/fuzz_args.c -- libFuzzer harness for the argument-string parsers: the
 * input's lines are the arguments of `apsearch <command> ...` (the option
 * parser, --set/--fix KEY=VALUE, ranges, lists, --cluster, --strategy). The
 * target is fuzz/targets.lua's `args`; fuzz/harness.h has the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("args")
