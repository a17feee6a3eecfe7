/*
 * test_schedule.c -- src/core/schedule.c: Megatron's (interleaved) 1F1B
 * order simulated event by event against the closed forms (Narayanan et
 * al. SC'21 s.2.2) and against hand-built timelines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

static void run(int64_t p, int64_t v, int64_t m, const double *tf,
                const double *tb, const double *p2p, const double *w,
                aps_schedule_out *out)
{
    aps_schedule_in in = {p, v, m, tf, tb, p2p, w};
    assert_int_equal(aps_schedule_simulate(&in, out), APS_OK);
}

static void fill(double *x, int64_t n, double val)
{
    for (int64_t j = 0; j < n; j++)
        x[j] = val;
}

/* 1F1B, p = 4, m = 8, t_f = 1, t_b = 2 on every stage:
 *   step = (m + p - 1)(t_f + t_b) = 11 * 3 = 33, busy 8 * 3 = 24,
 *   bubble (p - 1)(t_f + t_b) = 9; in flight min(p - i, m) = 4, 3, 2, 1 */
static void test_1f1b_closed_form(void **state)
{
    (void)state;
    double tf[4], tb[4];
    fill(tf, 4, 1.0);
    fill(tb, 4, 2.0);
    aps_schedule_out o;
    run(4, 1, 8, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 33.0, 0);
    ASSERT_REL(o.busy_max, 24.0, 0);
    ASSERT_REL(o.bubble, 9.0, 0);
    for (int64_t i = 0; i < 4; i++)
        ASSERT_REL(o.inflight[i], (double)(4 - i), 0);
    /* m = 2 < p: min(p - i, m) = 2, 2, 2, 1; the pipeline is fill and
     * drain only: (m + p - 1)(t_f + t_b) = 5 * 3 = 15 */
    run(4, 1, 2, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 15.0, 0);
    ASSERT_REL(o.inflight[0], 2.0, 0);
    ASSERT_REL(o.inflight[3], 1.0, 0);
    /* one stage: m (t_f + t_b) = 24, no bubble */
    run(1, 1, 8, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 24.0, 0);
    ASSERT_REL(o.bubble, 0.0, 0);
}

/* Interleaved, p = 4, v = 2, m = 8, per chunk t_f = 1, t_b = 2 (rank
 * times 2 and 4): step = (m + (p-1)/v)(2 + 4) = 9.5 * 6 = 57 = (m v + p
 * - 1)(1 + 2); bubble (p-1)/v * 6 = 9.  In flight: (min(2(p-i-1) +
 * (v-1)p + 1, m v)) / v = 5.5, 4.5, 3.5, 2.5 (Megatron's warm-up). */
static void test_interleaved_closed_form(void **state)
{
    (void)state;
    double tf[8], tb[8];
    fill(tf, 8, 1.0);
    fill(tb, 8, 2.0);
    aps_schedule_out o;
    run(4, 2, 8, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 57.0, 1e-12);
    ASSERT_REL(o.bubble, 9.0, 1e-12);
    const double want[] = {5.5, 4.5, 3.5, 2.5};
    for (int64_t i = 0; i < 4; i++) {
        ASSERT_REL(o.inflight[i], want[i], 0);
        ASSERT_REL(o.inflight[i], aps_inflight_microbatches(4, 2, 8, i), 0);
    }
    /* p = 8, v = 4, m = 16, chunk times 0.5 and 1: (16 * 4 + 7) * 1.5
     * = 106.5 */
    double tf2[32], tb2[32];
    fill(tf2, 32, 0.5);
    fill(tb2, 32, 1.0);
    run(8, 4, 16, tf2, tb2, NULL, NULL, &o);
    ASSERT_REL(o.step, 106.5, 1e-12);
    for (int64_t i = 0; i < 8; i++)
        ASSERT_REL(o.inflight[i], aps_inflight_microbatches(8, 4, 16, i), 0);
}

/* p = 2, m = 2, t_f = 1, t_b = 2, a transfer of 0.5 between the stages.
 * Rank 0 runs F0 F1 B0 B1 (one warm-up forward), rank 1 F0 B0 F1 B1:
 *   rank 0: F0 [0,1]  F1 [1,2]                    B0 [5,7]     B1 [8,10]
 *   rank 1:   F0 [1.5,2.5] B0 [2.5,4.5] F1 [4.5,5.5] B1 [5.5,7.5]
 * (each input 0.5 after its producer ends: B0 reaches rank 0 at 5, B1 at
 * 8).  step 10; without the transfer (m + p - 1)(t_f + t_b) = 9. */
static void test_p2p_delay(void **state)
{
    (void)state;
    double tf[2] = {1.0, 1.0}, tb[2] = {2.0, 2.0}, d[1] = {0.5};
    aps_schedule_out o;
    run(2, 1, 2, tf, tb, d, NULL, &o);
    ASSERT_REL(o.step, 10.0, 1e-12);
    run(2, 1, 2, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 9.0, 1e-12);
}

/* Uneven stages, p = 2, m = 2: stage 0 t_f = 1, t_b = 2; stage 1 (output
 * layer) t_f = 2, t_b = 4.
 *   rank 0: F0 [0,1] F1 [1,2]                      B0 [7,9]  B1 [13,15]
 *   rank 1:        F0 [1,3] B0 [3,7] F1 [7,9] B1 [9,13]
 * step 15; the closed form on the slowest stage, (m + p - 1) * 6 = 18,
 * overstates the fill and drain, which run at stage 0's pace. */
static void test_uneven_stages(void **state)
{
    (void)state;
    double tf[2] = {1.0, 2.0}, tb[2] = {2.0, 4.0};
    aps_schedule_out o;
    run(2, 1, 2, tf, tb, NULL, NULL, &o);
    ASSERT_REL(o.step, 15.0, 1e-12);
    ASSERT_REL(o.busy_max, 12.0, 0);
    assert_int_equal(o.slowest_rank, 1);
    ASSERT_REL(o.bubble, 3.0, 1e-12);
}

/* Unequal chunks, p = 2, v = 2, m = 2: stages j = 0..3 (chunk k of rank
 * i is j = i + 2k).  Weights of rank 0: chunk 0 0.25, chunk 1 0.75.
 * Warm-up of rank 0: 2(p-1) + (v-1)p = 4 = m v: every forward first, so
 * the peak holds all: 2 * (0.25 + 0.75) = 2 = m, as with equal chunks
 * (min(4 + 1, 4) / 2 = 2).  Rank 1: warm-up 2, order F(0,0) F(1,0)
 * F(0,1) B(0,1) F(1,1) B(1,1) B(0,0) B(1,0) with its weights 0.5 / 0.5:
 * peak after 3 forwards = 1.5 = (2 + 1)/2. */
static void test_unequal_chunk_weights(void **state)
{
    (void)state;
    double w0[2] = {0.25, 0.75}, w1[2] = {0.5, 0.5};
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 0, w0), 2.0, 0);
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 1, w1), 1.5, 0);
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 1, NULL), 1.5, 0);
    /* p = 4, v = 2, m = 8, rank 3: warm-up (v-1)p = 4 (chunk 0 of mb
     * 0..3), one more forward (chunk 1 of mb 0) before the first backward:
     * weights 0.25 / 0.75 give 4 * 0.25 + 0.75 = 1.75; then each 1F1B
     * step adds a forward and frees a backward of the other chunk
     * (F chunk 1 mb 1 with B chunk 1 mb 0: 1.75 +0.75 -0.75 ...), and in
     * the next group F chunk 0 (+0.25) pairs with B chunk 0 (-0.25): the
     * peak stays 1.75, not the even 2.5. */
    double w3[2] = {0.25, 0.75};
    ASSERT_REL(aps_schedule_inflight(4, 2, 8, 3, w3), 1.75, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_closed_form),
        cmocka_unit_test(test_interleaved_closed_form),
        cmocka_unit_test(test_p2p_delay),
        cmocka_unit_test(test_uneven_stages),
        cmocka_unit_test(test_unequal_chunk_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
