/*
 * apsearch/engine.h -- the search engine as a C library (libapsearch).
 *
 * One aps_engine is one search session: a Lua 5.4 state (hidden) running
 * the apsearch Lua sources, with policies, rules and objectives in the
 * sandbox of docs/writing-rules.md.  Build with
 *
 *     cc app.c $(pkg-config --cflags --libs apsearch)
 *
 * and use it as
 *
 *     aps_engine *e;
 *     char err[512];
 *     if (aps_engine_open(&e, NULL, err, sizeof err) != APS_ENGINE_OK) {
 *         fprintf(stderr, "%s\n", err);
 *         return 2;
 *     }
 *     if (aps_engine_load_policy_file(e, "policy.lua") != APS_ENGINE_OK ||
 *         aps_engine_set(e, "cluster.memory_limit_gib=60") != APS_ENGINE_OK ||
 *         aps_engine_run(e) != APS_ENGINE_OK)
 *         fprintf(stderr, "%s\n", aps_engine_errmsg(e));
 *     else
 *         puts(aps_engine_result_json(e, NULL));
 *     aps_engine_close(e);
 *
 * Errors, SQLite style: every call returns an aps_engine_status (0 is
 * success); on failure aps_engine_errmsg() is the message, the same text
 * the apsearch CLI prints (one line naming the file, field and value for
 * bad input; "<file>:<line>: ...", the sandbox label and a traceback for a
 * failing script).  The message stays valid until the next call on the
 * engine.  A failed call leaves the engine usable: the policy, overrides
 * and last result it had are kept.  No call aborts the process or leaks
 * on error; an out-of-memory inside Lua is APS_ENGINE_ENOMEM.
 *
 * Threads: engines are independent (no global state); one engine must not
 * be used by two threads at once.
 *
 * Lua sources: an engine needs the apsearch Lua tree (lua/apsearch/,
 * rules/).  aps_engine_options.root names it; NULL looks, in order, at
 * $APSEARCH_ROOT, <directory of libapsearch>/../share/apsearch (the
 * `cmake --install` layout), <directory of the executable>/../share/
 * apsearch, the source tree it was built from, and the configured install
 * prefix.  The Lua packages lua-cjson and lua-filesystem must be
 * installed (Debian: lua-cjson, lua-filesystem).
 */
#ifndef APSEARCH_ENGINE_H
#define APSEARCH_ENGINE_H

#include <stddef.h>

#include "apsearch/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Status of an engine call.  The first four are the core's aps_status
 *  values (same numbers), so `(aps_status)rc` is meaningful for them. */
typedef enum {
    APS_ENGINE_OK = APS_OK,             /**< success */
    APS_ENGINE_EINVAL = APS_EINVAL,     /**< bad input: a policy field, an
                                             override, a file that cannot be
                                             read; the message names it */
    APS_ENGINE_ENOTIMPL = APS_ENOTIMPL, /**< a model apsearch does not model
                                             (mixture of experts) */
    APS_ENGINE_ERANGE = APS_ERANGE,     /**< a value out of representable
                                             range */
    APS_ENGINE_ESCRIPT = 64,            /**< a policy, rule, objective or
                                             formatter script failed: a Lua
                                             error, a bad return value, or a
                                             sandbox limit exceeded */
    APS_ENGINE_ENOMEM,                  /**< out of memory (outside the
                                             sandbox's own cap) */
    APS_ENGINE_EMISUSE                  /**< API misuse: NULL argument, run
                                             before a policy was loaded,
                                             result read before a run */
} aps_engine_status;

/** Short name of a status, e.g. "ESCRIPT"; "UNKNOWN" if out of range. */
const char *aps_engine_status_name(aps_engine_status s);

/** Opaque engine handle. */
typedef struct aps_engine aps_engine;

/** Engine options; aps_engine_options_init() fills the defaults. */
typedef struct {
    /** Directory holding lua/apsearch/ and rules/; NULL: searched (see
     *  the file comment). */
    const char *root;
    /** Nonzero: no sandbox (scripts see the full Lua library, no limits;
     *  the CLI's --unsafe).  Only for trusted scripts. */
    int unsafe;
    /** Instruction limit of one sandboxed call (Lua VM instructions);
     *  0 = the default, 100,000,000; negative = unlimited. */
    long long sandbox_instructions;
    /** Memory cap of one sandboxed call in MiB; 0 = the default, 256;
     *  negative = unlimited. */
    long long sandbox_memory_mib;
    /** Wall-clock limit of one sandboxed call in seconds; 0 = the default,
     *  10; negative = unlimited. */
    double sandbox_seconds;
    /** CPU-time limit of one sandboxed call in seconds; 0 = the default,
     *  5; negative = unlimited. */
    double sandbox_cpu_seconds;
} aps_engine_options;

/** Fills *o with the defaults: root NULL, sandbox on, default limits. */
void aps_engine_options_init(aps_engine_options *o);

/**
 * Creates an engine.  opts may be NULL (defaults).  On success *out is the
 * handle (free it with aps_engine_close).  On failure *out is NULL and, if
 * err is not NULL, a message is written into err (errlen bytes, always
 * NUL-terminated); statuses: APS_ENGINE_EINVAL (the Lua sources are not
 * found or do not load, a bad option), APS_ENGINE_ENOMEM,
 * APS_ENGINE_EMISUSE (out is NULL).
 */
aps_engine_status aps_engine_open(aps_engine **out,
                                  const aps_engine_options *opts, char *err,
                                  size_t errlen);

/** Frees the engine and everything it holds.  NULL is a no-op. */
void aps_engine_close(aps_engine *e);

/** The message of the engine's last failed call ("" after a success). */
const char *aps_engine_errmsg(const aps_engine *e);

/**
 * Loads a policy file (docs/policy.md) in the sandbox.  Paths inside it
 * are relative to its directory.  Replaces any previous policy; keeps the
 * overrides, rules and objective given so far.  Errors: EINVAL (cannot
 * read, syntax error, not a table), ESCRIPT (the file raised or exceeded
 * a limit), ENOMEM, EMISUSE.  Field values are checked by aps_engine_run.
 */
aps_engine_status aps_engine_load_policy_file(aps_engine *e, const char *path);

/**
 * Loads a policy from Lua source text; name labels it in messages
 * ("<name>:<line>: ..."; NULL: "policy").  Paths inside are relative to
 * the current directory.  Errors as aps_engine_load_policy_file.
 */
aps_engine_status aps_engine_load_policy_string(aps_engine *e,
                                                const char *text,
                                                const char *name);

/**
 * Adds an override "key=value" (the CLI's --set), e.g.
 * "cluster.memory_limit_gib=60", "training.global_batch_size=1024",
 * "top_k=5".  Values parse as on the command line (numbers, true/false,
 * comma-separated lists).  The syntax is checked now (EINVAL); the field
 * and value when the search runs.
 */
aps_engine_status aps_engine_set(aps_engine *e, const char *assignment);

/** Pins a search dimension "dim=value[,value...]" (the CLI's --fix), e.g.
 *  "tp_degree=8".  Checked like aps_engine_set. */
aps_engine_status aps_engine_fix(aps_engine *e, const char *assignment);

/** Adds a constraint-rule file (the CLI's --rules), loaded in the sandbox
 *  now.  Errors: EINVAL (missing file, invalid rule table), ESCRIPT. */
aps_engine_status aps_engine_add_rule_file(aps_engine *e, const char *path);

/** Sets the ranking objective (the CLI's --objective): a built-in name
 *  ("step_time", "memory", "throughput", ...) or an objective file
 *  (docs/writing-rules.md), loaded in the sandbox now. */
aps_engine_status aps_engine_set_objective(aps_engine *e, const char *name_or_path);

/** Forgets the overrides, rules and objective added so far (the loaded
 *  policy stays). */
aps_engine_status aps_engine_clear_overrides(aps_engine *e);

/**
 * Runs the search of the loaded policy with the overrides.  Success means
 * the search ran: a search with no feasible strategy is APS_ENGINE_OK with
 * aps_engine_top_k_count() == 0.  Errors: EINVAL (a bad field or value,
 * named), ENOTIMPL, ESCRIPT (a rule or objective failed), ENOMEM, EMISUSE
 * (no policy loaded).  The previous result is kept on failure.
 */
aps_engine_status aps_engine_run(aps_engine *e);

/**
 * The last successful run's result as JSON (docs/outputs.md schema, the
 * same text as `apsearch run --format json`), NUL-terminated; *len (if
 * len is not NULL) is its length.  NULL before any successful run.  Valid
 * until the next successful run or aps_engine_close.
 */
const char *aps_engine_result_json(const aps_engine *e, size_t *len);

/**
 * Renders the last result with a formatter: "table", "csv", "json", or a
 * formatter file (docs/writing-rules.md), run in the sandbox.  *out (if
 * out is not NULL) receives the NUL-terminated text, valid until the next
 * call on the engine.  Errors: EMISUSE (no result), EINVAL (unknown
 * format), ESCRIPT (the formatter failed).
 */
aps_engine_status aps_engine_render(aps_engine *e, const char *format,
                                    const char **out);

/** Number of strategies in the last result's top-k (0: none feasible, or
 *  no run yet). */
int aps_engine_top_k_count(const aps_engine *e);

/** Number of feasible candidates of the last run (0 if none / no run). */
long long aps_engine_feasible_count(const aps_engine *e);

/** Estimated step time [s] of the best strategy of the last run; a
 *  negative value when there is none (no run, or nothing feasible). */
double aps_engine_best_step_time(const aps_engine *e);

/** Library version, e.g. "0.1.0". */
const char *aps_engine_version(void);

#ifdef __cplusplus
}
#endif
#endif /* APSEARCH_ENGINE_H */
