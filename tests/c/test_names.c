/*
 * test_names.c -- src/core/names.c: the stable strings of the output
 * schema (reason codes, memory_breakdown and performance_breakdown keys,
 * status names); out-of-range values give "UNKNOWN" or NULL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

/* aps_fmt: a message that fits is written whole; one that does not ends
 * in "..." where it was cut, never cut silently */
static void test_fmt_marks_a_cut(void **state)
{
    (void)state;
    char buf[16];
    aps_fmt(buf, sizeof buf, "%s", "fits in 16");
    assert_string_equal(buf, "fits in 16");
    aps_fmt(buf, sizeof buf, "%s = %d", "pp_degree", 12345678);
    /* "pp_degree = 12345678" is 20 bytes: 12 of it, then "..." */
    assert_string_equal(buf, "pp_degree = ...");
    aps_fmt(buf, sizeof buf, "%s", "exactly 15 byte");
    assert_string_equal(buf, "exactly 15 byte");
}

static void test_reason_code_names(void **state)
{
    (void)state;
    static const char *const want[APS_REASON_COUNT] = {
        "NONE", "INVALID_DEGREE", "TP_DIVISIBILITY", "CP_DIVISIBILITY",
        "PP_DIVISIBILITY", "PP_PARTITION", "VPP_INVALID",
        "BATCH_DIVISIBILITY", "DEVICE_COUNT", "IDLE_DEVICES", "HSDP_INVALID",
        "ZERO_STAGE_INVALID", "MEMORY_LIMIT", "FRAMEWORK_UNSUPPORTED",
        "EP_DIVISIBILITY", "NOT_MODELLED"};
    for (int r = 0; r < APS_REASON_COUNT; r++)
        assert_string_equal(aps_reason_code((aps_reason)r), want[r]);
    assert_string_equal(aps_reason_code(APS_REASON_COUNT), "UNKNOWN");
    assert_string_equal(aps_reason_code((aps_reason)-1), "UNKNOWN");
}

/* MODELING.md s.3: params, grads, optimizer_states, activations,
 * comm_buffers (split tp / fsdp / dp / pp / cp), logits_loss, reserved,
 * then the categories added later: comm_buffers_ep, workspaces. */
static void test_mem_category_names(void **state)
{
    (void)state;
    static const char *const want[APS_MEM_COUNT] = {
        "params", "grads", "optimizer_states", "activations",
        "comm_buffers_tp", "comm_buffers_fsdp", "comm_buffers_dp",
        "comm_buffers_pp", "comm_buffers_cp", "logits_loss", "reserved",
        "comm_buffers_ep", "workspaces"};
    for (int k = 0; k < APS_MEM_COUNT; k++)
        assert_string_equal(aps_mem_category_name((aps_mem_category)k),
                            want[k]);
    assert_null(aps_mem_category_name(APS_MEM_COUNT));
    assert_null(aps_mem_category_name((aps_mem_category)-1));
}

/* MODELING.md s.4: compute_fwd, compute_bwd, recompute, tp_comm, cp_comm,
 * pp_p2p, pp_bubble, fsdp_allgather, fsdp_reducescatter, dp_grad_sync,
 * hsdp_replicate_sync, optimizer; activation_offload (recipe.c). */
static void test_perf_category_names(void **state)
{
    (void)state;
    static const char *const want[APS_PERF_COUNT] = {
        "compute_fwd", "compute_bwd", "recompute", "tp_comm", "cp_comm",
        "pp_p2p", "pp_bubble", "fsdp_allgather", "fsdp_reducescatter",
        "dp_grad_sync", "hsdp_replicate_sync", "optimizer", "activation_offload",
        "ep_comm", "host_launch", "kernel_gaps"};
    for (int k = 0; k < APS_PERF_COUNT; k++)
        assert_string_equal(aps_perf_category_name((aps_perf_category)k),
                            want[k]);
    assert_null(aps_perf_category_name(APS_PERF_COUNT));
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(aps_status_name(APS_OK), "OK");
    assert_string_equal(aps_status_name(APS_EINVAL), "EINVAL");
    assert_string_equal(aps_status_name(APS_ENOTIMPL), "ENOTIMPL");
    assert_string_equal(aps_status_name(APS_ERANGE), "ERANGE");
    assert_string_equal(aps_status_name(APS_ENOMEM), "ENOMEM");
    assert_string_equal(aps_status_name((aps_status)99), "UNKNOWN");
}

/* the pipeline_split values as policies spell them (schema.lua) */
static void test_pipeline_split_names(void **state)
{
    (void)state;
    assert_string_equal(aps_pipeline_split_name(APS_SPLIT_EVEN), "even");
    assert_string_equal(aps_pipeline_split_name(APS_SPLIT_EMBEDDING_LOSS),
                        "embedding_loss");
    assert_string_equal(aps_pipeline_split_name(APS_SPLIT_DEEPSPEED_TYPE),
                        "deepspeed_type");
    assert_string_equal(aps_pipeline_split_name(APS_SPLIT_FILL_LAST),
                        "fill_last");
    assert_string_equal(aps_pipeline_split_name(APS_SPLIT_FILL_FIRST),
                        "fill_first");
    assert_string_equal(aps_pipeline_split_name((aps_pipeline_split)5),
                        "UNKNOWN");
    assert_string_equal(aps_pipeline_split_name((aps_pipeline_split)-1),
                        "UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_marks_a_cut),
        cmocka_unit_test(test_reason_code_names),
        cmocka_unit_test(test_mem_category_names),
        cmocka_unit_test(test_perf_category_names),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_pipeline_split_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
