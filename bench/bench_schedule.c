/*
 * bench_schedule.c -- CPU nanoseconds per simulated pipeline op on one
 * core (aps_schedule_simulate), for the schedules and sizes the bench
 * spaces meet.
 *
 * For each (schedule, p, v, m): "run", the same inputs simulated again
 * and again (the order cached, as a search finds it after its first
 * simulation of that shape; the memo of steps is aps_pipeline_step's and
 * not involved), and "first", a different multiple of p more micro-
 * batches each time so that every simulation also builds its order.  An
 * op is a chunk's F or B (1F1B), F, I or W (the zero-bubble schedules;
 * DualPipeV's full backwards make its true count a little smaller).  A
 * figure to read, not a test.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
#include "apsearch/core.h"

/** Simulated ops per figure, at least (enough for a stable CPU time). */
#define BENCH_OPS 5e7
/** Distinct m the "first" figure cycles through (more than the orders
 *  a thread caches, so each is built again). */
#define BENCH_DISTINCT_M 200

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/** CPU ns per op simulating (sched, p, v, m + p (k % spread)) for k = 0,
 *  1, ... until BENCH_OPS ops (spread 1: always the same m). */
static double ns_per_op(int sched, int64_t p, int64_t v, int64_t m,
                        int64_t spread)
{
    double tf[APS_MAX_STAGES], tb[APS_MAX_STAGES], tw[APS_MAX_STAGES];
    double p2p[APS_MAX_STAGES];
    for (int64_t j = 0; j < p * v; j++) { /* uneven stages, as laid out */
        tf[j] = 1.0 + 0.01 * (double)j;
        tb[j] = 2.0 + 0.003 * (double)j;
        tw[j] = 0.4 * tb[j];
        p2p[j] = 0.05;
    }
    double ops = 0.0, t0 = cpu_now();
    aps_schedule_out out;
    for (int64_t k = 0; ops < BENCH_OPS; k++) {
        int64_t mk = m + p * (k % spread);
        aps_schedule_in in = {p, v, mk, tf, tb, p2p, NULL, sched, tw, NULL, 0};
        if (aps_schedule_simulate(&in, &out) != APS_OK)
            return -1.0;
        ops += (sched == APS_PP_1F1B ? 2.0 : 3.0) * (double)(mk * v * p);
    }
    return (cpu_now() - t0) / ops * 1e9;
}

int main(void)
{
    static const struct {
        const char *name;
        int sched;
        int64_t p, v, m;
    } cases[] = {
        {"1f1b", APS_PP_1F1B, 16, 1, 64},
        {"1f1b", APS_PP_1F1B, 64, 1, 128},
        {"interleaved 1f1b", APS_PP_1F1B, 32, 2, 64},
        {"interleaved 1f1b", APS_PP_1F1B, 16, 4, 32},
        {"interleaved zero bubble", APS_PP_INTERLEAVED_ZB, 16, 2, 64},
        {"zbv", APS_PP_ZBV, 16, 2, 64},
        {"dualpipev", APS_PP_DUALPIPEV, 16, 2, 64},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double run = ns_per_op(cases[c].sched, cases[c].p, cases[c].v,
                               cases[c].m, 1);
        double first = ns_per_op(cases[c].sched, cases[c].p, cases[c].v,
                                 cases[c].m, BENCH_DISTINCT_M);
        printf("schedule %-24s p %3lld v %lld m %4lld: %5.2f ns/op run, "
               "%5.2f ns/op with its order built\n",
               cases[c].name, (long long)cases[c].p, (long long)cases[c].v,
               (long long)cases[c].m, run, first);
    }
    return 0;
}
