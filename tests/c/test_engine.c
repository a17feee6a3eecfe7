/*
 * tests/c/test_engine.c -- the embedding API (include/apsearch/engine.h,
 * src/lua/engine.c) and, through it, the sandbox (src/lua/lsandbox.c):
 * results, every error class, infinite loops and memory blow-ups under the
 * script's own pcall, bytecode refused, reports with file, line and
 * traceback, the engine still usable after each failure.  Runs under
 * ASan/UBSan in CI (ctest -R '^c_'): every engine is closed, leak-free.
 *
 * APS_ROOT_DIR is the source tree (the Lua sources and examples).
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, strdup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apsearch/engine.h"

#ifndef APS_ROOT_DIR
#define APS_ROOT_DIR "."
#endif

#define EXAMPLE(p) APS_ROOT_DIR "/examples/" p

/* A small search: Llama-3.1-8B on 8 H100, a dozen candidates. */
#define POLICY_HEAD                                                        \
    "return {\n"                                                           \
    "  model = 'llama-3.1-8b',\n"                                          \
    "  cluster = { device = 'h100-sxm-80gb', nodes = 1 },\n"               \
    "  training = { global_batch_size = 64, seq_length = 8192 },\n"        \
    "  search_space = { data_parallel = 'auto', fsdp_degree = { 1, 4, 8 },\n" \
    "                   tp_degree = { 1, 2 }, micro_batch_size = { 1, 2 } },\n"
#define POLICY POLICY_HEAD "}\n"

static aps_engine *open_engine(const aps_engine_options *opts)
{
    aps_engine_options o;
    aps_engine *e = NULL;
    char err[512];
    if (opts == NULL) {
        aps_engine_options_init(&o);
        opts = &o;
    }
    aps_engine_options local = *opts;
    if (local.root == NULL)
        local.root = APS_ROOT_DIR;
    assert_int_equal(aps_engine_open(&e, &local, err, sizeof err), APS_ENGINE_OK);
    assert_non_null(e);
    assert_string_equal(err, "");
    return e;
}

/* Asserts rc and that the error message contains each needle. */
static void expect_error(aps_engine *e, aps_engine_status rc, aps_engine_status want,
                         ...)
{
    va_list ap;
    const char *needle;
    const char *msg = aps_engine_errmsg(e);
    if (rc != want)
        fail_msg("status %s, expected %s; message: %s", aps_engine_status_name(rc),
                 aps_engine_status_name(want), msg);
    va_start(ap, want);
    while ((needle = va_arg(ap, const char *)) != NULL) {
        if (strstr(msg, needle) == NULL) {
            va_end(ap);
            fail_msg("\"%s\" not in the message: %s", needle, msg);
        }
    }
    va_end(ap);
}

static char *write_temp(const char *text, size_t len)
{
    char *path = strdup("/tmp/aps_engine_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static void remove_temp(char *path)
{
    unlink(path);
    free(path);
}

/* The engine still works after a failure. */
static void assert_usable(aps_engine *e)
{
    assert_int_equal(aps_engine_load_policy_string(e, POLICY, "good"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_clear_overrides(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_true(aps_engine_top_k_count(e) > 0);
    assert_string_equal(aps_engine_errmsg(e), "");
}

/* ---------------------------------------------------------------- basics */

static void test_names_and_version(void **state)
{
    (void)state;
    assert_string_equal(aps_engine_status_name(APS_ENGINE_OK), "OK");
    assert_string_equal(aps_engine_status_name(APS_ENGINE_EINVAL), "EINVAL");
    assert_string_equal(aps_engine_status_name(APS_ENGINE_ESCRIPT), "ESCRIPT");
    assert_string_equal(aps_engine_status_name(APS_ENGINE_EMISUSE), "EMISUSE");
    assert_string_equal(aps_engine_status_name((aps_engine_status)999), "UNKNOWN");
    assert_int_equal((int)APS_ENGINE_EINVAL, (int)APS_EINVAL);
    assert_string_equal(aps_engine_version(), "0.1.0");
}

static void test_run_policy_file(void **state)
{
    aps_engine *e = open_engine(NULL);
    size_t len = 0;
    const char *json;
    (void)state;
    assert_null(aps_engine_result_json(e, &len));
    assert_int_equal(aps_engine_top_k_count(e), 0);
    assert_true(aps_engine_best_step_time(e) < 0);
    assert_int_equal(aps_engine_load_policy_file(e, EXAMPLE("llama3_8b_h100.lua")),
                     APS_ENGINE_OK);
    assert_int_equal(aps_engine_set(e, "top_k=3"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_fix(e, "tp_degree=1,2"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_top_k_count(e), 3);
    assert_true(aps_engine_feasible_count(e) >= 3);
    assert_true(aps_engine_best_step_time(e) > 1.0 &&
                aps_engine_best_step_time(e) < 100.0);
    json = aps_engine_result_json(e, &len);
    assert_non_null(json);
    assert_int_equal(strlen(json), len);
    assert_true(json[0] == '{');
    assert_non_null(strstr(json, "\"top_k_strategies\":["));
    assert_non_null(strstr(json, "\"key\":\"top_k\""));
    assert_string_equal(aps_engine_errmsg(e), "");
    aps_engine_close(e);
}

static void test_policy_string_render_rules_objective(void **state)
{
    aps_engine *e = open_engine(NULL);
    const char *text = NULL;
    (void)state;
    assert_int_equal(aps_engine_load_policy_string(e, POLICY, "inline"), APS_ENGINE_OK);
    /* 8 nodes of 1 GPU: any tp_degree > 1 crosses nodes */
    assert_int_equal(aps_engine_set(e, "cluster.nodes=8"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_set(e, "cluster.devices_per_node=1"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_add_rule_file(e, EXAMPLE("rules/tp_in_node.lua")),
                     APS_ENGINE_OK);
    assert_int_equal(aps_engine_set_objective(
                         e, EXAMPLE("objectives/gpu_hours_per_trillion_tokens.lua")),
                     APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_true(aps_engine_top_k_count(e) > 0);
    assert_non_null(strstr(aps_engine_result_json(e, NULL),
                           "\"objective\":\"gpu_hours_per_trillion_tokens\""));
    assert_non_null(strstr(aps_engine_result_json(e, NULL), "\"TP_CROSSES_NODE\""));
    assert_non_null(strstr(aps_engine_result_json(e, NULL), "\"tp_in_node\""));
    assert_int_equal(aps_engine_render(e, "table", &text), APS_ENGINE_OK);
    assert_non_null(strstr(text, "llama-3.1-8b on 8 x h100-sxm-80gb"));
    assert_int_equal(aps_engine_render(e, "csv", &text), APS_ENGINE_OK);
    assert_non_null(strstr(text, "rank"));
    assert_int_equal(aps_engine_render(e, EXAMPLE("formatters/markdown.lua"), &text),
                     APS_ENGINE_OK);
    assert_non_null(strstr(text, "| rank | dp | fsdp |"));
    expect_error(e, aps_engine_render(e, "yaml", &text), APS_ENGINE_EINVAL, "yaml", NULL);
    assert_null(text);
    /* back to the policy's objective, no extra rule */
    assert_int_equal(aps_engine_clear_overrides(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_set_objective(e, "memory"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_non_null(strstr(aps_engine_result_json(e, NULL), "\"objective\":\"memory\""));
    aps_engine_close(e);
}

static void test_rule_filters(void **state)
{
    aps_engine *e = open_engine(NULL);
    (void)state;
    /* a rule function written in the policy, with its own reason code */
    assert_int_equal(aps_engine_load_policy_string(
                         e, POLICY_HEAD "  constraints = { rules = { function(s)\n"
                                        "    return (s.tp_degree or 1) < 2, 'NO_TP2', 'no TP 2'\n"
                                        "  end } },\n}\n", "rules"),
                     APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_non_null(strstr(aps_engine_result_json(e, NULL), "\"NO_TP2\""));
    aps_engine_close(e);
}

static void test_no_feasible_strategy_is_ok(void **state)
{
    aps_engine *e = open_engine(NULL);
    (void)state;
    assert_int_equal(aps_engine_load_policy_string(e, POLICY, "p"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_set(e, "cluster.memory_limit_gib=4"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_top_k_count(e), 0);
    assert_int_equal(aps_engine_feasible_count(e), 0);
    assert_true(aps_engine_best_step_time(e) < 0);
    aps_engine_close(e);
}

/* ---------------------------------------------------------------- errors */

static void test_misuse(void **state)
{
    aps_engine *e;
    char err[256];
    (void)state;
    assert_int_equal(aps_engine_open(NULL, NULL, err, sizeof err), APS_ENGINE_EMISUSE);
    assert_non_null(strstr(err, "out is NULL"));
    aps_engine_close(NULL);
    assert_int_equal(aps_engine_run(NULL), APS_ENGINE_EMISUSE);
    assert_int_equal(aps_engine_top_k_count(NULL), 0);
    assert_null(aps_engine_result_json(NULL, NULL));
    e = open_engine(NULL);
    expect_error(e, aps_engine_run(e), APS_ENGINE_EMISUSE, "no policy loaded", NULL);
    expect_error(e, aps_engine_render(e, "table", NULL), APS_ENGINE_EMISUSE, "no result",
                 NULL);
    expect_error(e, aps_engine_load_policy_file(e, NULL), APS_ENGINE_EMISUSE, "path is NULL",
                 NULL);
    expect_error(e, aps_engine_set(e, NULL), APS_ENGINE_EMISUSE, "NULL", NULL);
    assert_usable(e);
    aps_engine_close(e);
}

static void test_open_errors(void **state)
{
    aps_engine_options o;
    aps_engine *e = (aps_engine *)&o; /* must be reset to NULL */
    char err[512];
    (void)state;
    aps_engine_options_init(&o);
    o.root = "/nonexistent/apsearch";
    assert_int_equal(aps_engine_open(&e, &o, err, sizeof err), APS_ENGINE_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err, "/nonexistent/apsearch/lua/apsearch is missing"));
    /* a short buffer is truncated, never overrun */
    assert_int_equal(aps_engine_open(&e, &o, err, 8), APS_ENGINE_EINVAL);
    assert_int_equal(strlen(err), 7);
}

static void test_bad_input(void **state)
{
    aps_engine *e = open_engine(NULL);
    (void)state;
    expect_error(e, aps_engine_load_policy_file(e, "/nonexistent/policy.lua"),
                 APS_ENGINE_EINVAL, "/nonexistent/policy.lua: cannot open policy file", NULL);
    expect_error(e, aps_engine_load_policy_string(e, "return { model = ", "syntax"),
                 APS_ENGINE_EINVAL, "syntax:1:", NULL);
    expect_error(e, aps_engine_set(e, "no equals sign"), APS_ENGINE_EINVAL,
                 "--set: expected KEY=VALUE", NULL);
    expect_error(e, aps_engine_add_rule_file(e, "/nonexistent/rule.lua"), APS_ENGINE_EINVAL,
                 "rule file not found", NULL);
    assert_int_equal(aps_engine_load_policy_string(e, POLICY, "p"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_set(e, "training.precision=fp7"), APS_ENGINE_OK);
    expect_error(e, aps_engine_run(e), APS_ENGINE_EINVAL, "precision", "fp7", NULL);
    assert_int_equal(aps_engine_clear_overrides(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_set(e, "training.no_such_field=1"), APS_ENGINE_OK);
    expect_error(e, aps_engine_run(e), APS_ENGINE_EINVAL, "no_such_field", NULL);
    assert_usable(e);
    aps_engine_close(e);
}

static void test_not_implemented(void **state)
{
    static const char moe[] =
        "{\"model_type\": \"jetmoe\", \"hidden_size\": 1536, \"num_hidden_layers\": 32,"
        " \"num_attention_heads\": 24, \"intermediate_size\": 512,"
        " \"vocab_size\": 49155, \"num_local_experts\": 40, \"num_experts_per_tok\": 8}";
    char *json = write_temp(moe, sizeof moe - 1);
    char policy[512];
    aps_engine *e = open_engine(NULL);
    (void)state;
    snprintf(policy, sizeof policy,
             "return { model = '%s', cluster = 'h100-sxm-80gb:1x8',"
             " training = { global_batch_size = 64, seq_length = 4096 } }",
             json);
    assert_int_equal(aps_engine_load_policy_string(e, policy, "moe"), APS_ENGINE_OK);
    expect_error(e, aps_engine_run(e), APS_ENGINE_ENOTIMPL, "NotImplemented",
                 "of model_type \"jetmoe\" is not modelled",
                 NULL);
    assert_usable(e);
    aps_engine_close(e);
    remove_temp(json);
}

/* --------------------------------------------------------------- sandbox */

static void test_sandbox_infinite_loop_under_pcall(void **state)
{
    aps_engine_options o;
    aps_engine *e;
    (void)state;
    aps_engine_options_init(&o);
    o.sandbox_instructions = 200000;
    e = open_engine(&o);
    expect_error(e,
                 aps_engine_load_policy_string(
                     e, "local function spin() while true do end end\n"
                        "while true do pcall(spin) end\n",
                     "loop.lua"),
                 APS_ENGINE_ESCRIPT,
                 "loop.lua:1: instruction limit exceeded: more than 200000",
                 "in policy loop.lua", "stack traceback:", "loop.lua:2: in main chunk",
                 NULL);
    expect_error(e,
                 aps_engine_load_policy_string(
                     e, "while true do\n"
                        "  xpcall(function() while true do end end,\n"
                        "         function() while true do end end)\nend\n",
                     "xpcall.lua"),
                 APS_ENGINE_ESCRIPT, "instruction limit exceeded", NULL);
    assert_usable(e);
    aps_engine_close(e);
}

static void test_sandbox_memory_under_pcall(void **state)
{
    aps_engine_options o;
    aps_engine *e;
    (void)state;
    aps_engine_options_init(&o);
    o.sandbox_memory_mib = 16;
    e = open_engine(&o);
    expect_error(e,
                 aps_engine_load_policy_string(
                     e, "local t = {}\n"
                        "while true do pcall(function() t[#t + 1] = ('x'):rep(100) .. #t end) end\n",
                     "mem.lua"),
                 APS_ENGINE_ESCRIPT, "mem.lua:2: memory limit exceeded: more than 16 MiB",
                 "stack traceback:", NULL);
    expect_error(e,
                 aps_engine_load_policy_string(
                     e, "local ok = pcall(string.rep, 'x', 1 << 30)\nreturn {}\n", "rep.lua"),
                 APS_ENGINE_ESCRIPT, "rep.lua:1: memory limit exceeded", NULL);
    assert_usable(e);
    aps_engine_close(e);
}

static void test_sandbox_globals_and_errors(void **state)
{
    aps_engine *e = open_engine(NULL);
    char *rule;
    static const char bad_rule[] =
        "return { name = 'bad',\n  check = function(c)\n    return 'yes'\n  end }\n";
    static const char err_rule[] =
        "local function helper(c)\n  return c.x.y\nend\n"
        "return { name = 'err', check = function(c)\n  local v = helper(c)\n  return v\nend }\n";
    (void)state;
    expect_error(e, aps_engine_load_policy_string(e, "os.execute('true')\nreturn {}", "os.lua"),
                 APS_ENGINE_ESCRIPT, "os.lua:1: attempt to index a nil value (global 'os')",
                 NULL);
    expect_error(e, aps_engine_load_policy_string(e, "return { io = io.open('x', 'w') }", "io.lua"),
                 APS_ENGINE_ESCRIPT, "global 'io'", NULL);
    expect_error(e, aps_engine_load_policy_string(e, "return require('os')", "req.lua"),
                 APS_ENGINE_ESCRIPT, "global 'require'", NULL);
    expect_error(e, aps_engine_load_policy_string(e, "return debug.getinfo(1)", "dbg.lua"),
                 APS_ENGINE_ESCRIPT, "global 'debug'", NULL);
    expect_error(e, aps_engine_load_policy_string(e, "return load('return 1')()", "load.lua"),
                 APS_ENGINE_ESCRIPT, "global 'load'", NULL);
    expect_error(e, aps_engine_load_policy_string(e, "\x1bLua\x54\x00 bytecode", "bin.lua"),
                 APS_ENGINE_EINVAL, "attempt to load a binary chunk (mode is 't')", NULL);

    rule = write_temp(bad_rule, sizeof bad_rule - 1);
    assert_int_equal(aps_engine_load_policy_string(e, POLICY, "p"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_add_rule_file(e, rule), APS_ENGINE_OK);
    expect_error(e, aps_engine_run(e), APS_ENGINE_ESCRIPT,
                 ":2: rule \"bad\" (check) returned \"yes\"", NULL);
    remove_temp(rule);

    rule = write_temp(err_rule, sizeof err_rule - 1);
    assert_int_equal(aps_engine_clear_overrides(e), APS_ENGINE_OK);
    assert_int_equal(aps_engine_add_rule_file(e, rule), APS_ENGINE_OK);
    expect_error(e, aps_engine_run(e), APS_ENGINE_ESCRIPT,
                 ":2: attempt to index a nil value (field 'x')", "in rule \"err\" (check)",
                 "stack traceback:", "in upvalue 'helper'", NULL);
    remove_temp(rule);
    assert_usable(e);
    aps_engine_close(e);
}

static void test_sandbox_limits_and_unsafe(void **state)
{
    aps_engine_options o;
    aps_engine *e;
    static const char busy[] = "for i = 1, 1e6 do end\n" POLICY;
    static const char trusted[] = "assert(os.getenv('PATH'))\n" POLICY;
    (void)state;
    aps_engine_options_init(&o);
    o.sandbox_instructions = 1000;
    e = open_engine(&o);
    expect_error(e, aps_engine_load_policy_string(e, busy, "busy"), APS_ENGINE_ESCRIPT,
                 "more than 1000 Lua instructions", NULL);
    aps_engine_close(e);

    o.sandbox_instructions = -1; /* unlimited */
    e = open_engine(&o);
    assert_int_equal(aps_engine_load_policy_string(e, busy, "busy"), APS_ENGINE_OK);
    expect_error(e, aps_engine_load_policy_string(e, trusted, "trusted"), APS_ENGINE_ESCRIPT,
                 "global 'os'", NULL);
    aps_engine_close(e);

    aps_engine_options_init(&o);
    o.unsafe = 1;
    e = open_engine(&o);
    assert_int_equal(aps_engine_load_policy_string(e, trusted, "trusted"), APS_ENGINE_OK);
    assert_int_equal(aps_engine_run(e), APS_ENGINE_OK);
    aps_engine_close(e);
}

static void test_engines_are_independent(void **state)
{
    aps_engine_options o;
    aps_engine *a, *b;
    (void)state;
    aps_engine_options_init(&o);
    o.sandbox_instructions = 1000;
    a = open_engine(&o);
    b = open_engine(NULL);
    assert_int_equal(aps_engine_load_policy_string(b, "for i = 1, 1e5 do end\n" POLICY, "b"),
                     APS_ENGINE_OK);
    expect_error(a, aps_engine_load_policy_string(a, "for i = 1, 1e5 do end\n" POLICY, "a"),
                 APS_ENGINE_ESCRIPT, "instruction limit", NULL);
    assert_string_equal(aps_engine_errmsg(b), "");
    aps_engine_close(a);
    assert_int_equal(aps_engine_run(b), APS_ENGINE_OK);
    aps_engine_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_version),
        cmocka_unit_test(test_run_policy_file),
        cmocka_unit_test(test_policy_string_render_rules_objective),
        cmocka_unit_test(test_rule_filters),
        cmocka_unit_test(test_no_feasible_strategy_is_ok),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_not_implemented),
        cmocka_unit_test(test_sandbox_infinite_loop_under_pcall),
        cmocka_unit_test(test_sandbox_memory_under_pcall),
        cmocka_unit_test(test_sandbox_globals_and_errors),
        cmocka_unit_test(test_sandbox_limits_and_unsafe),
        cmocka_unit_test(test_engines_are_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
