/*
 * fuzz/harness.h -- the libFuzzer side shared by the apsearch fuzz targets
 * (fuzz/fuzz_<target>.c, built with -DAPS_FUZZ=ON; docs/fuzzing.md).
 *
 * A target is a function of fuzz/targets.lua run in one Lua state set up
 * as the CLI sets its own (src/lua/host.c: apsearch.core and
 * apsearch.sandbox preloaded, the source tree's lua/ on package.path).
 * Each input is handed to it as a Lua string; the Lua side decides whether
 * what apsearch did with it is a finding (a Lua error that is not a clean
 * one-line message: see targets.lua).  A finding, or an error of the
 * driver itself, is printed and ends the process with abort(), which
 * libFuzzer records as a crash with the input that caused it.  C faults
 * (out-of-bounds access, use after free, undefined behaviour) are found by
 * AddressSanitizer and UBSan directly.
 *
 * libFuzzer sees the coverage of the instrumented C code only, not of the
 * Lua sources (the Lua VM is Debian's, uninstrumented).  A line hook gives
 * it the Lua side too: every (line, previous line) pair of apsearch's Lua
 * code that runs bumps a counter of APS_FUZZ_LUA_COUNTERS extra counters
 * (libFuzzer's __libfuzzer_extra_counters section), so an input that
 * reaches new Lua lines is kept in the corpus like one that reaches new C
 * edges.
 */
#ifndef APSEARCH_FUZZ_HARNESS_H
#define APSEARCH_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/** Number of extra counters for the Lua line pairs (a power of two; a
 *  pair's slot is its hash modulo this).  64 Ki: apsearch has about 13,000
 *  Lua lines, so collisions between the pairs that matter are rare. */
#define APS_FUZZ_LUA_COUNTERS (1u << 16)

/**
 * Sets up the target named `target` (a field of fuzz/targets.lua:
 * "config_json", "csv", "baseline", "args" or "policy"): creates the Lua
 * state, a private temporary directory (under $TMPDIR, else /tmp; removed
 * at exit) that the target writes its input files and outputs into, sends
 * stdout to /dev/null (apsearch writes results there; libFuzzer writes to
 * stderr), and runs targets.lua's setup for the target.  The source tree
 * is $APSEARCH_ROOT, else the one the harness was built from.  On failure
 * prints the reason and exits 1.  Returns 0 (LLVMFuzzerInitialize's
 * contract).
 */
int aps_fuzz_init(const char *target);

/** Runs the target on one input (data, size bytes).  Returns 0; calls
 *  abort() on a finding. */
int aps_fuzz_one(const uint8_t *data, size_t size);

/** Defines LLVMFuzzerInitialize and LLVMFuzzerTestOneInput for a target. */
#define APS_FUZZ_TARGET(name)                                                 \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                        \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);             \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                         \
    {                                                                         \
        (void)argc;                                                           \
        (void)argv;                                                           \
        return aps_fuzz_init(name);                                           \
    }                                                                         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)              \
    {                                                                         \
        return aps_fuzz_one(data, size);                                      \
    }

#endif /* APSEARCH_FUZZ_HARNESS_H */
