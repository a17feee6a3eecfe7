/*
 * test_schedule_fixed.c -- the schedule simulation on its fixed
 * dependency order (src/core/schedule_order.c, schedule_run.c) against
 * the event loop it replaced (schedule_ref.h, the old code verbatim):
 * every output field bit for bit -- step, busy_max, bubble, slowest_rank,
 * every rank's inflight, the status, and every timeline event -- on
 * every schedule kind (1F1B, interleaved 1F1B, ZB1P, ZBV, DualPipeV),
 * many (p, v, m) including m < p and m not a multiple of p, equal and
 * uneven stages, recompute on some stages (a longer backward), p2p hops
 * or none, per-stage activation weights or none, a weight-gradient part
 * or none.  Exact equality throughout: the new run performs the same
 * additions and comparisons on the same operands (schedule_run.c), so no
 * tolerance is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "schedule_ref.h"

/** A deterministic uniform draw in [0, 1) (a 64-bit LCG, Knuth's MMIX
 *  constants), so every run tests the same cases. */
static double draw(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0; /* 2^53 */
}

/** Stage times of one case: equal (1 and 2 s per chunk), uneven, or
 *  uneven with full recompute on every third stage (its backward runs
 *  the forward again) and the embedding / output layer on the first and
 *  last stage. */
typedef struct {
    double tf[APS_MAX_STAGES], tb[APS_MAX_STAGES], tw[APS_MAX_STAGES];
    double p2p[APS_MAX_STAGES], w[APS_MAX_STAGES];
} case_times;

enum { TIMES_EQUAL, TIMES_UNEVEN, TIMES_RECOMPUTE, TIMES_KINDS };

static void make_times(int kind, int64_t S, uint64_t *rng, case_times *c)
{
    for (int64_t j = 0; j < S; j++) {
        bool eq = kind == TIMES_EQUAL;
        c->tf[j] = eq ? 1.0 : 0.5 + draw(rng);
        c->tb[j] = eq ? 2.0 : 2.0 * c->tf[j] + 0.1 * draw(rng);
        if (kind == TIMES_RECOMPUTE && j % 3 == 1)
            c->tb[j] += c->tf[j];
        c->tw[j] = (0.3 + 0.3 * draw(rng)) * c->tb[j];
        c->p2p[j] = eq ? 0.125 : 0.01 + 0.2 * draw(rng);
        c->w[j] = eq ? 0.5 : 0.2 + draw(rng);
    }
    if (kind == TIMES_RECOMPUTE) {
        c->tf[0] += 0.7;
        c->tf[S - 1] += 1.3;
        c->tb[S - 1] += 2.1;
    }
}

/** Every field of two simulation results equal (doubles bit for bit). */
static void assert_same_out(const aps_schedule_out *got,
                            const aps_schedule_out *want, int64_t p)
{
    ASSERT_DBL_EXACT(got->step, want->step);
    ASSERT_DBL_EXACT(got->busy_max, want->busy_max);
    ASSERT_DBL_EXACT(got->bubble, want->bubble);
    assert_int_equal(got->slowest_rank, want->slowest_rank);
    for (int64_t i = 0; i < p; i++)
        ASSERT_DBL_EXACT(got->inflight[i], want->inflight[i]);
}

/** Simulates in with the new code (twice: the order built, then taken
 *  from the cache) and the reference; asserts the same status and
 *  output; returns the status. */
static aps_status compare(const aps_schedule_in *in)
{
    aps_schedule_out got, again, want;
    aps_status sw = ref_simulate(in, &want);
    aps_status sg = aps_schedule_simulate(in, &got);
    assert_int_equal(sg, sw);
    assert_int_equal(aps_schedule_simulate(in, &again), sw);
    if (sw == APS_OK) {
        assert_same_out(&got, &want, in->p);
        assert_same_out(&again, &want, in->p);
    }
    return sw;
}

/** Micro-batch counts of a case with p ranks: below p, p, around p and
 *  its multiples, and a few that are not multiples of p. */
static int64_t m_values(int64_t p, int64_t *ms)
{
    int64_t cand[] = {1, 2, 3, p - 1, p, p + 1, 2 * p - 1, 2 * p,
                      2 * p + 1, 3 * p + 2, 13, 4 * p};
    int64_t n = 0;
    for (size_t k = 0; k < sizeof cand / sizeof cand[0]; k++) {
        bool dup = false;
        for (int64_t q = 0; q < n; q++)
            dup |= ms[q] == cand[k];
        if (cand[k] >= 1 && !dup)
            ms[n++] = cand[k];
    }
    return n;
}

/** Runs every (p, v, m) of schedule `sched` over every kind of times and
 *  every option (p2p, weights, weight gradient), comparing; returns the
 *  cases that simulated (APS_OK). */
static int64_t sweep(int sched, const int64_t *vs, int nv)
{
    const int64_t ps[] = {1, 2, 3, 4, 5, 7, 8, 16};
    uint64_t rng = 12345u + (uint64_t)sched;
    int64_t ok = 0;
    for (size_t a = 0; a < sizeof ps / sizeof ps[0]; a++)
        for (int b = 0; b < nv; b++) {
            int64_t p = ps[a], v = vs[b], ms[16];
            int64_t nm = m_values(p, ms);
            for (int64_t c = 0; c < nm; c++)
                for (int kind = 0; kind < TIMES_KINDS; kind++)
                    for (int opt = 0; opt < 8; opt++) {
                        case_times t;
                        make_times(kind, p * v, &rng, &t);
                        aps_schedule_in in = {
                            p, v, ms[c], t.tf, t.tb,
                            opt & 1 ? t.p2p : NULL, opt & 2 ? t.w : NULL,
                            sched, opt & 4 ? t.tw : NULL, NULL, 0};
                        ok += compare(&in) == APS_OK;
                    }
        }
    return ok;
}

/* The (p, m) of sweep: m_values gives p = 1, 2, 3, 4, 5, 7, 8, 16 6, 7,
 * 10, 11, 12, 11, 12 and 12 distinct m, 81 in all, each run on 3 kinds
 * of times x 8 options = 24 cases. */
#define SWEEP_PM 81
#define SWEEP_CASES_PER_PM (TIMES_KINDS * 8)

/* Megatron's 1F1B (v = 1) and interleaved 1F1B (v = 2, 3, 4).  Not every
 * (p, v, m) simulates: with m not a multiple of p some interleaved orders
 * deadlock (p = 4, v = 3, m = 5: a rank waits for an op that waits for
 * it), and both sides refuse those with APS_EINVAL (compare checks it);
 * 37 of the 324 (p, v, m) do (counted on the reference), 287 x 24 cases
 * simulate, every v = 1 one among them. */
static void test_1f1b_same_as_event_loop(void **state)
{
    (void)state;
    const int64_t v1[] = {1}, vs[] = {1, 2, 3, 4};
    assert_int_equal(sweep(APS_PP_1F1B, v1, 1), SWEEP_PM * SWEEP_CASES_PER_PM);
    assert_int_equal(sweep(APS_PP_1F1B, vs, 4), 287 * SWEEP_CASES_PER_PM);
}

/* ZB1P (ScheduleInterleavedZeroBubble), v = 1, 2, 3: as for 1F1B, some
 * orders with m not a multiple of p deadlock on both sides; 209 of the
 * 243 (p, v, m) simulate (counted on the reference). */
static void test_zb1p_same_as_event_loop(void **state)
{
    (void)state;
    const int64_t vs[] = {1, 2, 3};
    assert_int_equal(sweep(APS_PP_INTERLEAVED_ZB, vs, 3),
                     209 * SWEEP_CASES_PER_PM);
}

/* ZBV and DualPipeV (v = 2).  DualPipeV refuses m < 2p (both sides give
 * APS_EINVAL, compared too): the m >= 2p of m_values are 5, 4, 5, 5, 5,
 * 4, 4 and 4 for the p of sweep, 36 (p, m). */
static void test_v_schedules_same_as_event_loop(void **state)
{
    (void)state;
    const int64_t vs[] = {2};
    assert_int_equal(sweep(APS_PP_ZBV, vs, 1), SWEEP_PM * SWEEP_CASES_PER_PM);
    assert_int_equal(sweep(APS_PP_DUALPIPEV, vs, 1), 36 * SWEEP_CASES_PER_PM);
}

/* A negative forward time on stage 0: the event loop read its finish as
 * "not yet run" and stopped with APS_EINVAL; so does the fixed order. */
static void test_negative_time_refused_alike(void **state)
{
    (void)state;
    case_times t;
    uint64_t rng = 7;
    make_times(TIMES_UNEVEN, 8, &rng, &t);
    t.tf[0] = -5.0;
    for (int sched = APS_PP_1F1B; sched <= APS_PP_DUALPIPEV; sched++) {
        aps_schedule_in in = {4, 2, 8, t.tf, t.tb, NULL, NULL, sched, NULL,
                              NULL, 0};
        assert_int_equal(compare(&in), APS_EINVAL);
    }
}

/** Every event of every rank of two timelines equal. */
static void assert_same_timeline(const aps_timeline *a, const aps_timeline *b)
{
    assert_true(a->recorded && b->recorded);
    for (int64_t i = 0; i < a->p; i++) {
        assert_int_equal(a->count[i], b->count[i]);
        ASSERT_DBL_EXACT(a->busy[i], b->busy[i]);
        assert_int_equal(aps_timeline_kept(a, i), aps_timeline_kept(b, i));
        for (int64_t q = 0; q < aps_timeline_kept(a, i); q++) {
            const aps_schedule_event *x = aps_timeline_event(a, i, q);
            const aps_schedule_event *y = aps_timeline_event(b, i, q);
            assert_int_equal(x->kind, y->kind);
            assert_int_equal(x->mb, y->mb);
            assert_int_equal(x->stage, y->stage);
            assert_int_equal(x->chunk, y->chunk);
            assert_int_equal(x->overlap, y->overlap);
            ASSERT_DBL_EXACT(x->start, y->start);
            ASSERT_DBL_EXACT(x->end, y->end);
        }
    }
}

/** Timeline capacity of the comparisons: every op of the largest case
 *  kept (3 ops x m v chunks, m <= 24, v <= 3). */
#define TL_KEEP 256
#define TL_RANKS 8

/* The timelines, op by op, with every op kept and with only 3 at each
 * end (the ring of the middle), on every schedule kind. */
static void test_timeline_same_as_event_loop(void **state)
{
    (void)state;
    static aps_schedule_event ea[TL_RANKS * 2 * TL_KEEP];
    static aps_schedule_event eb[TL_RANKS * 2 * TL_KEEP];
    const int scheds[] = {APS_PP_1F1B, APS_PP_1F1B, APS_PP_INTERLEAVED_ZB,
                          APS_PP_ZBV, APS_PP_DUALPIPEV};
    const int64_t vs[] = {1, 3, 2, 2, 2}, keeps[] = {TL_KEEP, 3};
    uint64_t rng = 99;
    for (int s = 0; s < 5; s++)
        for (int64_t m = 8; m <= 24; m += 4) /* multiples of p: none
                                                 deadlocks */
            for (int k = 0; k < 2; k++) {
                case_times t;
                make_times(TIMES_RECOMPUTE, 4 * vs[s], &rng, &t);
                aps_timeline a = {.keep = keeps[k], .events = ea,
                                  .ranks_cap = TL_RANKS};
                aps_timeline b = a;
                b.events = eb;
                aps_schedule_in in = {4,   vs[s], m, t.tf, t.tb, t.p2p, t.w,
                                      scheds[s], t.tw, &a, 0};
                aps_schedule_out oa = {0}, ob = {0};
                assert_int_equal(aps_schedule_simulate(&in, &oa), APS_OK);
                in.timeline = &b;
                assert_int_equal(ref_simulate(&in, &ob), APS_OK);
                assert_same_out(&oa, &ob, 4);
                assert_same_timeline(&a, &b);
            }
}

/* The activation peaks alone (memory.c calls them per stage): Megatron's
 * walk and the zero-bubble orders, weighted and not. */
static void test_inflight_same_as_before(void **state)
{
    (void)state;
    uint64_t rng = 4242;
    for (int64_t p = 1; p <= 9; p++)
        for (int64_t v = 1; v <= 4; v++)
            for (int64_t m = 1; m <= 3 * p + 2; m++)
                for (int64_t i = 0; i < p; i++) {
                    double w[APS_MAX_STAGES];
                    for (int64_t k = 0; k < v; k++)
                        w[k] = 0.1 + draw(&rng);
                    double want = ref_inflight(p, v, m, i, w);
                    /* twice: walked, then remembered (schedule_memo.c) */
                    for (int twice = 0; twice < 2; twice++)
                        ASSERT_DBL_EXACT(
                            aps_schedule_inflight(p, v, m, 0, i, w), want);
                    ASSERT_DBL_EXACT(aps_schedule_inflight(p, v, m, 0, i, NULL),
                                     ref_inflight(p, v, m, i, NULL));
                    for (int s = APS_PP_1F1B; s <= APS_PP_DUALPIPEV; s++)
                        ASSERT_DBL_EXACT(
                            aps_schedule_inflight_of(s, p, v, m, 0, i, w),
                            ref_inflight_of(s, p, v, m, i, w));
                }
}

/* The memo of simulated steps (schedule_memo.c): a step stored is found
 * for the same inputs in other arrays, and not for inputs that differ in
 * one bit of one array, in m, in the schedule, or in the interleaved
 * table's group size (g 0 and g = p are one key: the same order). */
static void test_step_memo_exact_inputs(void **state)
{
    (void)state;
    case_times a, b;
    uint64_t rng = 5;
    make_times(TIMES_UNEVEN, 8, &rng, &a);
    b = a;
    aps_schedule_in ia = {4, 2, 8, a.tf, a.tb, a.p2p, a.w, 0, a.tw, NULL, 0};
    aps_schedule_in ib = {4, 2, 8, b.tf, b.tb, b.p2p, b.w, 0, b.tw, NULL, 0};
    double step = 0.0;
    uint64_t h, hb;
    assert_false(aps_schedule_memo_find(&ia, &step, &h));
    aps_schedule_memo_store(&ia, h, 42.5);
    assert_true(aps_schedule_memo_find(&ib, &step, &hb));
    ASSERT_DBL_EXACT(step, 42.5);
    assert_true(h == hb);
    b.p2p[6] = nextafter(b.p2p[6], 1.0); /* the last link, one ulp */
    assert_false(aps_schedule_memo_find(&ib, &step, &hb));
    b = a;
    b.w[3] = nextafter(b.w[3], 0.0);
    assert_false(aps_schedule_memo_find(&ib, &step, &hb));
    b = a;
    ib.m = 9;
    assert_false(aps_schedule_memo_find(&ib, &step, &hb));
    ib.m = 8;
    ib.schedule = APS_PP_INTERLEAVED_ZB;
    assert_false(aps_schedule_memo_find(&ib, &step, &hb));
    ib.schedule = 0;
    assert_true(aps_schedule_memo_find(&ib, &step, &hb));
    ib.g = 8; /* G = m: one group */
    assert_false(aps_schedule_memo_find(&ib, &step, &hb));
    ib.g = 4; /* G = p, Megatron's default */
    assert_true(aps_schedule_memo_find(&ib, &step, &hb));
    ASSERT_DBL_EXACT(step, 42.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_same_as_event_loop),
        cmocka_unit_test(test_zb1p_same_as_event_loop),
        cmocka_unit_test(test_v_schedules_same_as_event_loop),
        cmocka_unit_test(test_negative_time_refused_alike),
        cmocka_unit_test(test_timeline_same_as_event_loop),
        cmocka_unit_test(test_inflight_same_as_before),
        cmocka_unit_test(test_step_memo_exact_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
