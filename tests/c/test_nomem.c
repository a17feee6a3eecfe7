/*
 * test_nomem.c -- an estimate whose allocations fail: aps_estimate_run and
 * aps_schedule_simulate return APS_ENOMEM (not APS_ERANGE, which means a
 * schedule past the size limit), and the estimate succeeds again once
 * memory is back.  Linked with -Wl,--wrap=malloc,--wrap=calloc
 * (tests/CMakeLists.txt): every malloc and calloc of the core's objects
 * goes through the wrappers below, which fail while `failing` is set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fixtures.h"

static int failing;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);

void *__wrap_malloc(size_t n)
{
    return failing ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
    return failing ? NULL : __real_calloc(k, n);
}

/* Llama-3.1-70B, TP 8 x PP 4 on 32 H100, 64 micro-batches: the bubble is
 * the simulated schedule's, whose op order and finish times are
 * allocated; failing, the estimate says out of memory, and the same
 * strategy estimates once allocations succeed again */
static void test_estimate_out_of_memory(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_70b(&m, &c, &t, &s, 32, 64, 4096);
    s.tp_degree = 8;
    s.pp_degree = 4;
    aps_estimate e;
    failing = 1;
    aps_status st = aps_estimate_run(&m, &c, &t, &s, &e);
    failing = 0;
    assert_int_equal(st, APS_ENOMEM);
    assert_string_equal(aps_status_name(st), "ENOMEM");
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.feasible);
    assert_true(e.step_time > 0.0 && isfinite(e.step_time));
}

/* the simulator alone: 1F1B over p 4, v 1, m 8 with allocations failing
 * is APS_ENOMEM; beyond APS_MAX_SCHEDULE_CELLS it stays APS_ERANGE
 * (refused before any allocation) */
static void test_simulate_out_of_memory(void **state)
{
    (void)state;
    double tf[4] = {1, 1, 1, 1}, tb[4] = {2, 2, 2, 2};
    aps_schedule_in in = {.schedule = APS_PP_1F1B, .p = 4, .v = 1, .m = 8,
                          .t_fwd = tf, .t_bwd = tb};
    aps_schedule_out out;
    /* p = 4, m = 8 under 1F1B with equal stages: m (tf + tb) + (p - 1)
     * (tf + tb) = 8 x 3 + 3 x 3 = 33 */
    assert_int_equal(aps_schedule_simulate(&in, &out), APS_OK);
    assert_true(fabs(out.step - 33.0) < 1e-9);
    in.m = 9; /* an order not cached yet */
    failing = 1;
    aps_status st = aps_schedule_simulate(&in, &out);
    failing = 0;
    assert_int_equal(st, APS_ENOMEM);
    in.m = APS_MAX_SCHEDULE_CELLS / 4 + 1;
    assert_int_equal(aps_schedule_simulate(&in, &out), APS_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_out_of_memory),
        cmocka_unit_test(test_simulate_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
