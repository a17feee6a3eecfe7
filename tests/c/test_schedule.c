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
    aps_schedule_in in = {p, v, m, tf, tb, p2p, w, 0, NULL, NULL, 0};
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
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 0, 0, w0), 2.0, 0);
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 0, 1, w1), 1.5, 0);
    ASSERT_REL(aps_schedule_inflight(2, 2, 2, 0, 1, NULL), 1.5, 0);
    /* p = 4, v = 2, m = 8, rank 3: warm-up (v-1)p = 4 (chunk 0 of mb
     * 0..3), one more forward (chunk 1 of mb 0) before the first backward:
     * weights 0.25 / 0.75 give 4 * 0.25 + 0.75 = 1.75; then each 1F1B
     * step adds a forward and frees a backward of the other chunk
     * (F chunk 1 mb 1 with B chunk 1 mb 0: 1.75 +0.75 -0.75 ...), and in
     * the next group F chunk 0 (+0.25) pairs with B chunk 0 (-0.25): the
     * peak stays 1.75, not the even 2.5. */
    double w3[2] = {0.25, 0.75};
    ASSERT_REL(aps_schedule_inflight(4, 2, 8, 0, 3, w3), 1.75, 0);
}

static void run_zb(int schedule, int64_t p, int64_t v, int64_t m,
                   const double *tf, const double *tb, const double *tw,
                   aps_schedule_out *out)
{
    aps_schedule_in in = {p,  v,    m,        tf, tb, NULL,
                          NULL, schedule, tw, NULL, 0};
    assert_int_equal(aps_schedule_simulate(&in, out), APS_OK);
}

/* InterleavedZeroBubble (PyTorch ZB1P order, schedule_zb.c), v = 1, p = 2,
 * F = I = W = 1 (so the full backward B = I + W = 2).
 * m = 2: rank 0 warm = p - 1 - 0 = 1: F0 F1 I0 W0 I1 W1; rank 1 warm 0,
 * its W start after r = 1 pairs: F0 I0 F1 I1 W0 W1.
 *   rank 0: F0 [0,1] F1 [1,2]          I0 [3,4] W0 [4,5] I1 [5,6] W1 [6,7]
 *   rank 1:   F0 [1,2] I0 [2,3] F1 [3,4] I1 [4,5] W0 [5,6] W1 [6,7]
 * step 7; 1F1B with B = 2: (m + p - 1)(F + B) = 3 * 3 = 9.
 * Memory (held from F to W): rank 0 2 (F0 F1), rank 1 2 (W0 after F1),
 * where 1F1B holds 2 and 1.
 * m = 4 (rounds 2, two micro-batches a round): rank 0 F0 F1 I0 W0 F2 I1 W1
 * F3 I2 W2 I3 W3; rank 1 F0 I0 F1 I1 W0 F2 I2 W1 F3 I3 W2 W3.
 *   rank 0: F0 0-1 F1 1-2 I0 3-4 W0 4-5 F2 5-6 I1 6-7 W1 7-8 F3 8-9
 *           I2 9-10 W2 10-11 I3 11-12 W3 12-13
 *   rank 1: F0 1-2 I0 2-3 F1 3-4 I1 4-5 W0 5-6 F2 6-7 I2 7-8 W1 8-9
 *           F3 9-10 I3 10-11 W2 11-12 W3 12-13
 * step 13 against 1F1B's (4 + 1) * 3 = 15; busy 12, bubble 1.  Peaks
 * 2 and 2 (1F1B: 2 and 1). */
static void test_interleaved_zero_bubble(void **state)
{
    (void)state;
    double tf[2] = {1, 1}, tb[2] = {2, 2}, tw[2] = {1, 1};
    aps_schedule_out o, o1;
    run_zb(APS_PP_INTERLEAVED_ZB, 2, 1, 2, tf, tb, tw, &o);
    ASSERT_REL(o.step, 7.0, 1e-12);
    ASSERT_REL(o.inflight[0], 2.0, 0);
    ASSERT_REL(o.inflight[1], 2.0, 0);
    run(2, 1, 2, tf, tb, NULL, NULL, &o1);
    ASSERT_REL(o1.step, 9.0, 1e-12);
    ASSERT_REL(o1.inflight[1], 1.0, 0);
    run_zb(APS_PP_INTERLEAVED_ZB, 2, 1, 4, tf, tb, tw, &o);
    ASSERT_REL(o.step, 13.0, 1e-12);
    ASSERT_REL(o.busy_max, 12.0, 1e-12);
    ASSERT_REL(o.bubble, 1.0, 1e-12);
    ASSERT_REL(o.inflight[0], 2.0, 0);
    ASSERT_REL(o.inflight[1], 2.0, 0);
    run(2, 1, 4, tf, tb, NULL, NULL, &o1);
    ASSERT_REL(o1.step, 15.0, 1e-12);
    /* W = 0: the same order with nothing to defer is 1F1B's time */
    double tw0[2] = {0, 0};
    run_zb(APS_PP_INTERLEAVED_ZB, 2, 1, 4, tf, tb, tw0, &o);
    ASSERT_REL(o.step, 15.0, 1e-12);
}

/* ZBV, p = 2, m = 4, every op 1 (per chunk F = I = W = 1): rank 0 holds
 * stages 0 and 3, rank 1 stages 1 and 2 (written s_mb below).  Orders
 * (ScheduleZBVZeroBubble):
 *   rank 0: F0_0 F0_1 F0_2 | F3_0 I3_0 W3_0 F3_1 I3_1 W3_1 | F0_3 I0_0
 *           W0_0 F3_2 I3_2 W3_2 | I0_1 W0_1 F3_3 I3_3 W3_3 | I0_2 W0_2
 *           I0_3 W0_3
 *   rank 1: F1_0 | F2_0 F1_1 | F2_1 I2_0 W2_0 | F1_2 I1_0 W1_0 F2_2 I2_1
 *           W2_1 | F1_3 I1_1 W1_1 F2_3 I2_2 W2_2 | I1_2 I2_3 | I1_3 W1_2
 *           | W2_3 W1_3
 * Timeline:
 *   rank 0: F0_0 0-1 F0_1 1-2 F0_2 2-3 F3_0 3-4 I3_0 4-5 W3_0 5-6
 *           F3_1 6-7 I3_1 7-8 W3_1 8-9 F0_3 9-10 I0_0 10-11 W0_0 11-12
 *           F3_2 12-13 I3_2 13-14 W3_2 14-15 I0_1 15-16 W0_1 16-17
 *           F3_3 17-18 I3_3 18-19 W3_3 19-20 I0_2 20-21 W0_2 21-22
 *           I0_3 22-23 W0_3 23-24
 *   rank 1: F1_0 1-2 F2_0 2-3 F1_1 3-4 F2_1 4-5 I2_0 5-6 W2_0 6-7
 *           F1_2 7-8 I1_0 8-9 W1_0 9-10 F2_2 10-11 I2_1 11-12 W2_1 12-13
 *           F1_3 13-14 I1_1 14-15 W1_1 15-16 F2_3 16-17 I2_2 17-18
 *           W2_2 18-19 I1_2 19-20 I2_3 20-21 I1_3 21-22 W1_2 22-23
 *           W2_3 23-24 W1_3 24-25
 * step 25, busy 24 per rank.  Non-interleaved 1F1B over the same work
 * (per rank F = 2, B = 4): (4 + 1) * 6 = 30.  Held chunks (F to W) peak
 * at 4 on both ranks, 4 / v = 2 activation sets. */
static void test_zbv(void **state)
{
    (void)state;
    double tf[4], tb[4], tw[4];
    fill(tf, 4, 1.0);
    fill(tb, 4, 2.0);
    fill(tw, 4, 1.0);
    aps_schedule_out o;
    run_zb(APS_PP_ZBV, 2, 2, 4, tf, tb, tw, &o);
    ASSERT_REL(o.step, 25.0, 1e-12);
    ASSERT_REL(o.busy_max, 24.0, 1e-12);
    ASSERT_REL(o.inflight[0], 2.0, 0);
    ASSERT_REL(o.inflight[1], 2.0, 0);
    double rf[2] = {2, 2}, rb[2] = {4, 4};
    run(2, 1, 4, rf, rb, NULL, NULL, &o);
    ASSERT_REL(o.step, 30.0, 1e-12);
}

/* With the same op times, InterleavedZeroBubble is never slower than
 * (interleaved) 1F1B, and equal to it when there is no W to defer;
 * checked over p, v, m and W shares.  ZB-V's order is built for F = I = W
 * (PyTorch's docstring): with W of at least half of F it is not slower
 * than Megatron's interleaved 1F1B either, but with W = 0 its V (the
 * first chunk's warm-up of 2(p - r) - 1 forwards) costs (p - 1) F more
 * (p = 2, 4, 8: 16 against 15, 36 / 33, 76 / 69 at m = p). */
static void test_zero_bubble_not_slower(void **state)
{
    (void)state;
    double tf[32], tb[32], tw[32];
    for (int64_t p = 2; p <= 8; p *= 2)
        for (int64_t v = 1; v <= 2; v++)
            for (int64_t m = p; m <= 4 * p; m += p)
                for (int q = 0; q <= 2; q++) {
                    int64_t S = p * v;
                    fill(tf, S, 1.0);
                    fill(tb, S, 2.0);
                    fill(tw, S, 0.5 * q);
                    aps_schedule_out a, z;
                    run(p, v, m, tf, tb, NULL, NULL, &a);
                    run_zb(APS_PP_INTERLEAVED_ZB, p, v, m, tf, tb, tw, &z);
                    assert_true(z.step <= a.step + 1e-9);
                    if (q == 0)
                        ASSERT_REL(z.step, a.step, 1e-12);
                    if (v == 2) {
                        run_zb(APS_PP_ZBV, p, v, m, tf, tb, tw, &z);
                        if (q > 0)
                            assert_true(z.step <= a.step + 1e-9);
                        else
                            ASSERT_REL(z.step, a.step + (double)(p - 1),
                                       1e-12);
                    }
                }
}

/* Records every op of a simulation: keep = 64 per end holds all of the
 * small timelines below. */
enum { KEEP = 64, RANKS = 8 };
static aps_schedule_event ev_buf[RANKS * 2 * KEEP];

static void run_tl(int schedule, int64_t p, int64_t v, int64_t m,
                   const double *tf, const double *tb, const double *tw,
                   const double *p2p, aps_timeline *tl, aps_schedule_out *out)
{
    memset(tl, 0, sizeof *tl);
    tl->keep = KEEP;
    tl->events = ev_buf;
    tl->ranks_cap = RANKS;
    aps_schedule_in in = {p, v, m, tf, tb, p2p, NULL, schedule, tw, tl, 0};
    assert_int_equal(aps_schedule_simulate(&in, out), APS_OK);
    assert_true(tl->recorded);
}

/* Rank i's ops as text, "F0_0 I3_0 ..." (kind, stage _ micro-batch), with
 * the times when `times`, "F0_0@0-1", and a '*' on OVERLAP_F_B halves. */
static const char *rank_text(const aps_timeline *tl, int64_t i, bool times)
{
    static char buf[4096];
    size_t n = 0;
    buf[0] = '\0';
    for (int64_t q = 0; q < aps_timeline_kept(tl, i); q++) {
        const aps_schedule_event *e = aps_timeline_event(tl, i, q);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%c%d_%d%s",
                              q ? " " : "", "FBIW"[e->kind], e->stage, e->mb,
                              e->overlap ? "*" : "");
        if (times)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "@%g-%g",
                                  e->start, e->end);
    }
    return buf;
}

/* DualPipeV, p = 2, m = 4, every op 1 (F = I = W = 1, B = I + W = 2);
 * rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.  ScheduleDualPipeV.
 * _calculate_single_rank_operations (pytorch 00722e64), rank 0:
 *   1. 2(p-r-1) = 2 F0: F0_0 F0_1;  2. r+1 = 1 (F0, F3): F0_2 F3_0;
 *   3. p-r-1 = 1 (I3, W, F3): I3_0 W3_0 F3_1;
 *   4. m-2p+r+1 = 1 (F0 B3)(F3 B0) overlapped: F0_3* B3_1* F3_2* B0_0*;
 *   5. p-r-1 = 1 B3, (F3 B0): B3_2 F3_3* B0_1*;
 *   6. r+1 = 1: B3_3, then (half-way, even rank) I0_2;
 *   7. p-r-1 = 1 (W, I0): W0_2 I0_3;  8. r+1 = 1 W: W0_3.
 * Rank 1: 2. (F1, F2) x 2: F1_0 F2_0 F1_1 F2_1; 4. m-2p+r+1 = 2, the
 * last rank's first (F1, B2) not paired: F1_2 B2_0 F2_2* B1_0* F1_3* B2_1*
 * F2_3* B1_1*; 6. r+1 = 2: B2_2 B1_2, then (odd rank, from the half-way
 * iteration's chunk 1) I2_3 I1_3; 8. W2_3 W1_3.
 * Timeline (each op as soon as its rank is free and its input is there):
 *   rank 0: F0_0 0-1 F0_1 1-2 F0_2 2-3 F3_0 3-4 I3_0 4-5 W3_0 5-6 F3_1 6-7
 *           F0_3 7-8 B3_1 8-10 F3_2 10-11 B0_0 11-13 B3_2 13-15 F3_3 15-16
 *           [idle 16-17: B1_1 ends at 17] B0_1 17-19 B3_3 19-21 I0_2 21-22
 *           W0_2 22-23 I0_3 23-24 W0_3 24-25
 *   rank 1: F1_0 1-2 F2_0 2-3 F1_1 3-4 F2_1 4-5 F1_2 5-6 B2_0 6-8 F2_2 8-9
 *           B1_0 9-11 F1_3 11-12 B2_1 12-14 F2_3 14-15 B1_1 15-17
 *           B2_2 17-19 B1_2 19-21 I2_3 21-22 I1_3 22-23 W2_3 23-24
 *           W1_3 24-25
 * step 25, busy 24 per rank (4 x (2 F + 2 B) chunk-ops of 1 + 2 per chunk
 * and micro-batch: 2 m (F + I + W) = 24).  In flight (F adds a chunk's
 * set, B or W frees it): rank 0 peaks at F0_3 with 5 chunks (F0_0..2,
 * F3_1, F0_3), 5 / v = 2.5 activation sets; rank 1 at F1_2 with 5.
 * A transfer of 0.5 between the ranks: 27 (the fill's two hops and the
 * drain's two). */
static void test_dualpipev_p2(void **state)
{
    (void)state;
    double tf[4], tb[4], tw[4], d[3];
    fill(tf, 4, 1.0);
    fill(tb, 4, 2.0);
    fill(tw, 4, 1.0);
    fill(d, 3, 0.5);
    aps_timeline tl;
    aps_schedule_out o;
    run_tl(APS_PP_DUALPIPEV, 2, 2, 4, tf, tb, tw, NULL, &tl, &o);
    assert_string_equal(rank_text(&tl, 0, false),
                        "F0_0 F0_1 F0_2 F3_0 I3_0 W3_0 F3_1 F0_3* B3_1* "
                        "F3_2* B0_0* B3_2 F3_3* B0_1* B3_3 I0_2 W0_2 I0_3 "
                        "W0_3");
    assert_string_equal(rank_text(&tl, 1, false),
                        "F1_0 F2_0 F1_1 F2_1 F1_2 B2_0 F2_2* B1_0* F1_3* "
                        "B2_1* F2_3* B1_1* B2_2 B1_2 I2_3 I1_3 W2_3 W1_3");
    assert_string_equal(rank_text(&tl, 0, true),
                        "F0_0@0-1 F0_1@1-2 F0_2@2-3 F3_0@3-4 I3_0@4-5 "
                        "W3_0@5-6 F3_1@6-7 F0_3*@7-8 B3_1*@8-10 F3_2*@10-11 "
                        "B0_0*@11-13 B3_2@13-15 F3_3*@15-16 B0_1*@17-19 "
                        "B3_3@19-21 I0_2@21-22 W0_2@22-23 I0_3@23-24 "
                        "W0_3@24-25");
    assert_string_equal(rank_text(&tl, 1, true),
                        "F1_0@1-2 F2_0@2-3 F1_1@3-4 F2_1@4-5 F1_2@5-6 "
                        "B2_0@6-8 F2_2*@8-9 B1_0*@9-11 F1_3*@11-12 "
                        "B2_1*@12-14 F2_3*@14-15 B1_1*@15-17 B2_2@17-19 "
                        "B1_2@19-21 I2_3@21-22 I1_3@22-23 W2_3@23-24 "
                        "W1_3@24-25");
    ASSERT_REL(o.step, 25.0, 0);
    ASSERT_REL(o.busy_max, 24.0, 0);
    ASSERT_REL(tl.busy[0], 24.0, 0);
    ASSERT_REL(tl.busy[1], 24.0, 0);
    ASSERT_REL(o.bubble, 1.0, 0);
    ASSERT_REL(o.inflight[0], 2.5, 0);
    ASSERT_REL(o.inflight[1], 2.5, 0);
    run_tl(APS_PP_DUALPIPEV, 2, 2, 4, tf, tb, tw, d, &tl, &o);
    ASSERT_REL(o.step, 27.0, 1e-12);
}

/* DualPipeV, p = 4, m = 8, F = I = W = 1 (B = 2).  Orders by the same
 * eight steps (rank r: 2(3-r) F0; r+1 (F0 F1); 3-r (I1 W F1); 8-8+r+1
 * pairs of pairs; 3-r (B1, F1B0); r+1 (B1 B0) with I from half-way; 3-r
 * (W I0); r+1 W) -- rank 0 (stages 0, 7) and rank 3 (stages 3, 4):
 *   rank 0: F0_0..F0_6, F7_0 I7_0 W7_0 F7_1 I7_1 W7_1 F7_2 I7_2 W7_2 F7_3,
 *           (F0_7 B7_3)(F7_4 B0_0), B7_4 (F7_5 B0_1), B7_5 (F7_6 B0_2),
 *           B7_6 (F7_7 B0_3), B7_7 I0_4, W0_4 I0_5, W0_5 I0_6, W0_6 I0_7,
 *           W0_7
 *   rank 3: (F3 F4) x 4, F3_4 B4_0 (unpaired, the last rank), (F4_4 B3_0)
 *           (F3_5 B4_1)(F4_5 B3_1) (F3_6 B4_2)(F4_6 B3_2) (F3_7 B4_3)
 *           (F4_7 B3_3), B4_4 B3_4 B4_5 B3_5, I4_6 I3_6 I4_7 I3_7,
 *           W4_6 W3_6 W4_7 W3_7
 * Every rank is busy 2 m (F + I + W) = 48; rank 0 waits three times
 * (B0_1, B0_2, B0_3 wait for rank 1's B1_1 .. B1_3, one unit each: 26-27,
 * 32-33, 38-39) and ends at 51 = the step; the others end with it (their
 * last W at 50-51).  ZB-V over the same ops also takes 51 (PyTorch runs a
 * pair's two actions one after the other, so pairing gains no time here)
 * but holds 8 chunks at its peak where DualPipeV holds 2p + 1 = 9 (4.5
 * activation sets). */
static void test_dualpipev_p4(void **state)
{
    (void)state;
    double tf[8], tb[8], tw[8];
    fill(tf, 8, 1.0);
    fill(tb, 8, 2.0);
    fill(tw, 8, 1.0);
    aps_timeline tl;
    aps_schedule_out o, z;
    run_tl(APS_PP_DUALPIPEV, 4, 2, 8, tf, tb, tw, NULL, &tl, &o);
    assert_string_equal(rank_text(&tl, 0, false),
                        "F0_0 F0_1 F0_2 F0_3 F0_4 F0_5 F0_6 F7_0 I7_0 W7_0 "
                        "F7_1 I7_1 W7_1 F7_2 I7_2 W7_2 F7_3 F0_7* B7_3* "
                        "F7_4* B0_0* B7_4 F7_5* B0_1* B7_5 F7_6* B0_2* B7_6 "
                        "F7_7* B0_3* B7_7 I0_4 W0_4 I0_5 W0_5 I0_6 W0_6 I0_7 "
                        "W0_7");
    assert_string_equal(rank_text(&tl, 3, false),
                        "F3_0 F4_0 F3_1 F4_1 F3_2 F4_2 F3_3 F4_3 F3_4 B4_0 "
                        "F4_4* B3_0* F3_5* B4_1* F4_5* B3_1* F3_6* B4_2* "
                        "F4_6* B3_2* F3_7* B4_3* F4_7* B3_3* B4_4 B3_4 B4_5 "
                        "B3_5 I4_6 I3_6 I4_7 I3_7 W4_6 W3_6 W4_7 W3_7");
    ASSERT_REL(o.step, 51.0, 0);
    ASSERT_REL(o.busy_max, 48.0, 0);
    for (int64_t i = 0; i < 4; i++) {
        ASSERT_REL(tl.busy[i], 48.0, 0);
        ASSERT_REL(o.inflight[i], 4.5, 0);
    }
    /* rank 0's three waits */
    const aps_schedule_event *e = aps_timeline_event(&tl, 0, 23);
    assert_int_equal(e->stage, 0);
    assert_int_equal(e->mb, 1);
    ASSERT_REL(e->start, 27.0, 0);
    ASSERT_REL(aps_timeline_event(&tl, 0, 22)->end, 26.0, 0);
    run_zb(APS_PP_ZBV, 4, 2, 8, tf, tb, tw, &z);
    ASSERT_REL(z.step, 51.0, 0);
    ASSERT_REL(z.inflight[0], 4.0, 0);
}

/* The timeline keeps each rank's first and last `keep` ops.  1F1B, p = 2,
 * m = 4, t_f = 1, t_b = 2: rank 0 runs F0 F1 B0 F2 B1 F3 B2 B3
 *   F0 0-1 F1 1-2 B0 4-6 F2 6-7 B1 7-9 F3 9-10 B2 10-12 B3 13-15,
 * rank 1 F0 1-2 B0 2-4 F1 4-5 B1 5-7 F2 7-8 B2 8-10 F3 10-11 B3 11-13
 * (step (m + p - 1)(t_f + t_b) = 15).  keep = 2: rank 0 stores F0 F1 and
 * B2 B3, rank 1 F0 B0 and F3 B3.  Every op before the least end of a
 * rank's second op (rank 1's B0, 4; rank 0's F1 ends at 2) and after the
 * largest start of a rank's second-to-last (rank 0's B2 at 10; rank 1's
 * F3 at 10) is stored: windows [0, 2] and [10, 15]. */
static void test_timeline_keep(void **state)
{
    (void)state;
    double tf[2] = {1, 1}, tb[2] = {2, 2};
    aps_schedule_event small[2 * 2 * 2];
    aps_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.keep = 2;
    tl.events = small;
    tl.ranks_cap = 2;
    aps_schedule_in in = {2, 1, 4, tf, tb, NULL, NULL, APS_PP_1F1B, NULL,
                          &tl, 0};
    aps_schedule_out o;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    ASSERT_REL(o.step, 15.0, 0);
    assert_int_equal(tl.count[0], 8);
    assert_int_equal(aps_timeline_kept(&tl, 0), 4);
    assert_string_equal(rank_text(&tl, 0, true),
                        "F0_0@0-1 F0_1@1-2 B0_2@10-12 B0_3@13-15");
    assert_string_equal(rank_text(&tl, 1, true),
                        "F1_0@1-2 B1_0@2-4 F1_3@10-11 B1_3@11-13");
    ASSERT_REL(tl.busy[0], 12.0, 0);
    double h, t;
    assert_true(aps_timeline_windows(&tl, o.step, &h, &t));
    ASSERT_REL(h, 2.0, 0);
    ASSERT_REL(t, 10.0, 0);
    assert_null(aps_timeline_event(&tl, 0, 4));
    assert_int_equal(aps_timeline_kept(&tl, 2), 0);
    /* keep = 4 holds all 8: one window, the whole step */
    aps_schedule_event all[2 * 2 * 4];
    tl.keep = 4;
    tl.events = all;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    assert_false(aps_timeline_windows(&tl, o.step, &h, &t));
    ASSERT_REL(h, 15.0, 0);
    assert_string_equal(rank_text(&tl, 0, false),
                        "F0_0 F0_1 B0_0 F0_2 B0_1 F0_3 B0_2 B0_3");
    /* aps_timeline_select over these 16 ops (all stored):
     *   starts 0 1 1 2 4 4 5 6 7 7 8 9 10 10 11 13,
     *   ends   1 2 2 4 5 6 7 7 8 9 10 10 11 12 13 15.
     * max_ops 16: one window.  max_ops 8 (4 a window): the fill, until
     * each rank ran its first backward and 2 more ops (rank 0: B1 ends
     * at 9; rank 1: B1 at 7), reaches past the drain, from 2 ops before
     * each rank's last forward (rank 0: F2 at 6; rank 1: F2 at 7), so the
     * halves take the whole step: 4 ops start before 4 (0 1 1 2) and 4
     * end after 10 (11 12 13 15). */
    assert_false(aps_timeline_select(&tl, o.step, 16, &h, &t));
    ASSERT_REL(h, 15.0, 0);
    assert_true(aps_timeline_select(&tl, o.step, 8, &h, &t));
    ASSERT_REL(h, 4.0, 1e-12);
    ASSERT_REL(t, 10.0, 1e-12);
    /* too few ranks in the buffer */
    tl.ranks_cap = 1;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_EINVAL);
}

/* The fill and the drain of a longer step.  1F1B, p = 2, m = 16, t_f = 1,
 * t_b = 2, step (m + 1) 3 = 51.  Rank 0: F0 0-1 F1 1-2, then B_k at 4+3k
 * and F_(k+2) at 6+3k (k = 0..13), B14 46-48, B15 49-51; rank 1: F0 1-2
 * B0 2-4, then F_k at 1+3k, B_k at 2+3k.  Fill: rank 0's first backward
 * B0 and 2 more (B1 ends at 9), rank 1's B0 and 2 more (B1 at 7): 9.
 * Drain: 2 ops before each rank's last forward, F14 (rank 0 at 42, rank 1
 * at 43): 42.  max_ops 40: the fill holds 11 ops, the drain 10, both
 * within 20: [0, 9] and [42, 51].  max_ops 12: 6 start before 5 (0 1 1 2 4
 * 4) and 6 end after 45 (46 46 47 48 49 51): [0, 5], [45, 51]. */
static void test_timeline_fill_drain(void **state)
{
    (void)state;
    double tf[2] = {1, 1}, tb[2] = {2, 2}, h, t;
    aps_timeline tl;
    aps_schedule_out o;
    run_tl(APS_PP_1F1B, 2, 1, 16, tf, tb, NULL, NULL, &tl, &o);
    ASSERT_REL(o.step, 51.0, 0);
    assert_false(aps_timeline_select(&tl, o.step, 64, &h, &t));
    assert_true(aps_timeline_select(&tl, o.step, 40, &h, &t));
    ASSERT_REL(h, 9.0, 0);
    ASSERT_REL(t, 42.0, 0);
    assert_true(aps_timeline_select(&tl, o.step, 12, &h, &t));
    ASSERT_REL(h, 5.0, 1e-12);
    ASSERT_REL(t, 45.0, 1e-12);
}

/* DualPipeV's constraints (ScheduleDualPipeV.__init__): two stages per
 * rank, at least as many micro-batches as stages (2p). */
static void test_dualpipev_refused(void **state)
{
    (void)state;
    double tf[8], tb[8];
    fill(tf, 8, 1.0);
    fill(tb, 8, 2.0);
    aps_schedule_out o;
    aps_schedule_in in = {4, 2, 7, tf, tb, NULL, NULL, APS_PP_DUALPIPEV,
                          NULL, NULL, 0};
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_EINVAL);
    in.m = 8;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    in.v = 1;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_EINVAL);
}

/* aps_schedule_lower_bound, 1F1B, p = 4, m = 2, a heavy last stage:
 * t_f = 1, 1, 1, 2, t_b = 2, 2, 2, 4, one hop 0.1.  Rank 3: its first
 * forward waits for micro-batch 0 through stages 0-2, fill = 3 (1 + 0.1)
 * = 3.3, then it runs 2 (2 + 4) = 12, then micro-batch 1's backward goes
 * down stages 2-0, drain = 3 (2 + 0.1) = 6.3: 21.6, which is the step,
 * sum (t_f + t_b) + t_f,3 + t_b,3 + 2 x 3 hops = 15 + 6 + 0.6 (the last
 * stage is the critical path twice).  Ranks 0-2 bound less (rank 0: 2 x 3
 * = 6). */
static void test_lower_bound_hand(void **state)
{
    (void)state;
    double tf[4] = {1, 1, 1, 2}, tb[4] = {2, 2, 2, 4}, p2p[3];
    fill(p2p, 3, 0.1);
    aps_schedule_in in = {4, 1, 2, tf, tb, p2p, NULL, APS_PP_1F1B, NULL,
                          NULL, 0};
    ASSERT_REL(aps_schedule_lower_bound(&in), 21.6, 1e-12);
    aps_schedule_out o;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    ASSERT_REL(o.step, 21.6, 1e-12);
    in.m = 8; /* steady state: rank 3 paces, 3.3 + 8 x 6 + 6.3 = 57.6 */
    ASSERT_REL(aps_schedule_lower_bound(&in), 57.6, 1e-12);
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    assert_true(o.step >= 57.6 - 1e-12);
    in.schedule = APS_PP_ZBV; /* the V needs v = 2: no bound */
    ASSERT_REL(aps_schedule_lower_bound(&in), 0.0, 0);
}

/* The bound never exceeds the simulated step, for every schedule, with
 * uneven stage times (stage j: t_f = 1 + (j mod 3) / 2, t_b = 2 t_f +
 * (j mod 2), W a third of t_b, hop 0.05): what balance.c relies on to
 * skip simulations that cannot win. */
static void test_lower_bound_below_step(void **state)
{
    (void)state;
    double tf[8], tb[8], tw[8], p2p[7];
    for (int j = 0; j < 8; j++) {
        tf[j] = 1.0 + (double)(j % 3) / 2.0;
        tb[j] = 2.0 * tf[j] + (double)(j % 2);
        tw[j] = tb[j] / 3.0;
    }
    fill(p2p, 7, 0.05);
    const int sched[5] = {APS_PP_1F1B, APS_PP_1F1B, APS_PP_INTERLEAVED_ZB,
                          APS_PP_ZBV, APS_PP_DUALPIPEV};
    const int64_t v[5] = {1, 2, 2, 2, 2};
    for (int k = 0; k < 5; k++)
        for (int64_t m = 8; m <= 16; m += 8) {
            aps_schedule_in in = {4, v[k], m, tf, tb, p2p, NULL, sched[k],
                                  tw, NULL, 0};
            aps_schedule_out o;
            assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
            double lb = aps_schedule_lower_bound(&in);
            assert_true(lb > 0.0);
            assert_true(lb <= o.step + 1e-12);
        }
}

/* Megatron's interleaved 1F1B with microbatch_group_size_per_vp_stage G
 * = 5, p = 2, v = 2, m = 5 (schedules.py @ d98e8a64): get_schedule_table
 * is one group, chunk 0 of micro-batches 0-4 then chunk 1 of 0-4;
 * get_pp_rank_microbatches' warm-up 2(p - i - 1) + (v - 1) G = 7 on rank
 * 0 and 5 on rank 1 (G = p = 2, m = 4: 4 and 2).  Rank 0 (stages 0, 2)
 * then runs 1F1B from the 8th forward (F2_2), backwards in table order
 * with the chunks reversed (stage 2 first); in flight (warm-up + 1) / v
 * = 4 and 3. */
static void test_group_size_order(void **state)
{
    (void)state;
    assert_int_equal(aps_schedule_warmup(2, 2, 5, 5, 0), 7);
    assert_int_equal(aps_schedule_warmup(2, 2, 5, 5, 1), 5);
    assert_int_equal(aps_schedule_warmup(2, 2, 4, 0, 0), 4);
    assert_int_equal(aps_schedule_warmup(2, 2, 4, 0, 1), 2);
    /* PP 4, VPP 3, m = 5, G = 5 (Megatron's tunable_overlap tests): 2 x 3
     * + 2 x 5 = 16 >= m v = 15, every forward first on rank 0 */
    assert_int_equal(aps_schedule_warmup(4, 3, 5, 5, 0), 15);
    assert_int_equal(aps_schedule_warmup(4, 3, 5, 5, 3), 10);
    double tf[4] = {1, 1, 1, 1}, tb[4] = {2, 2, 2, 2};
    aps_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.keep = KEEP;
    tl.events = ev_buf;
    tl.ranks_cap = RANKS;
    aps_schedule_in in = {2, 2, 5, tf, tb, NULL, NULL, APS_PP_1F1B, NULL,
                          &tl, 5};
    aps_schedule_out o;
    assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
    assert_string_equal(rank_text(&tl, 0, false),
                        "F0_0 F0_1 F0_2 F0_3 F0_4 F2_0 F2_1 F2_2 B2_0 F2_3 "
                        "B2_1 F2_4 B2_2 B2_3 B2_4 B0_0 B0_1 B0_2 B0_3 B0_4");
    assert_string_equal(rank_text(&tl, 1, false),
                        "F1_0 F1_1 F1_2 F1_3 F1_4 F3_0 B3_0 F3_1 B3_1 F3_2 "
                        "B3_2 F3_3 B3_3 F3_4 B3_4 B1_0 B1_1 B1_2 B1_3 B1_4");
    ASSERT_REL(o.inflight[0], 4.0, 0);
    ASSERT_REL(o.inflight[1], 3.0, 0);
}

/* The cached order is keyed by the group size too: m = 6 in groups of
 * G = 6 after groups of p = 2 (g = 0) runs the one-group order (rank 0:
 * six chunk-0 forwards first), and g = 0 after it the default's again. */
static void test_group_size_cache_key(void **state)
{
    (void)state;
    double tf[4] = {1, 1, 1, 1}, tb[4] = {2, 2, 2, 2};
    aps_timeline tl;
    aps_schedule_out o;
    const int64_t groups[3] = {0, 6, 0};
    const char *want[3] = {"F0_0 F0_1 F2_0 F2_1 F0_2",
                           "F0_0 F0_1 F0_2 F0_3 F0_4",
                           "F0_0 F0_1 F2_0 F2_1 F0_2"};
    for (int k = 0; k < 3; k++) {
        memset(&tl, 0, sizeof tl);
        tl.keep = KEEP;
        tl.events = ev_buf;
        tl.ranks_cap = RANKS;
        aps_schedule_in in = {2,    2,    6,           tf,   tb,
                              NULL, NULL, APS_PP_1F1B, NULL, &tl,
                              groups[k]};
        assert_int_equal(aps_schedule_simulate(&in, &o), APS_OK);
        assert_int_equal(strncmp(rank_text(&tl, 0, false), want[k],
                                 strlen(want[k])), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_closed_form),
        cmocka_unit_test(test_interleaved_closed_form),
        cmocka_unit_test(test_p2p_delay),
        cmocka_unit_test(test_uneven_stages),
        cmocka_unit_test(test_unequal_chunk_weights),
        cmocka_unit_test(test_interleaved_zero_bubble),
        cmocka_unit_test(test_zbv),
        cmocka_unit_test(test_zero_bubble_not_slower),
        cmocka_unit_test(test_dualpipev_p2),
        cmocka_unit_test(test_dualpipev_p4),
        cmocka_unit_test(test_timeline_keep),
        cmocka_unit_test(test_timeline_fill_drain),
        cmocka_unit_test(test_dualpipev_refused),
        cmocka_unit_test(test_lower_bound_hand),
        cmocka_unit_test(test_lower_bound_below_step),
        cmocka_unit_test(test_group_size_order),
        cmocka_unit_test(test_group_size_cache_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
