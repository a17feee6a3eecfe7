/*
 * fuzz/fuzz_csv.c -- libFuzzer harness for the CSV reader: `apsearch
 * validate FILE` (apsearch.validate: the reader, every row's inputs, the
 * core's estimate). The target is fuzz/targets.lua's `csv`; fuzz/harness.h
 * has the rest.
 */
#include "harness.h"

APS_FUZZ_TARGET("csv")
