/*
 * bench_core.c -- C estimator evaluations per second on one core.
 *
 * Llama-3.1-70B on 1,024 H100s: cycles through every (tp, pp, cp, fsdp,
 * micro-batch size, recompute) combination that uses all devices and
 * prints evaluations/s over at least one second of wall time.  A figure to
 * read, not a test: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
#include "apsearch/core.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    aps_model m;
    aps_model_defaults(&m);
    m.num_layers = 80; m.hidden_size = 8192; m.num_attention_heads = 64;
    m.num_query_groups = 8; m.ffn_hidden_size = 28672; m.vocab_size = 128256;
    aps_cluster c = {0}; /* nvlink_domain_size 0: one host per NVLink domain */
    aps_device_preset("h100-sxm-80gb", &c.device);
    c.num_devices = 1024; c.devices_per_node = 8;
    aps_training t;
    aps_training_defaults(&t);
    t.global_batch_size = 1024; t.seq_length = 8192;
    char err[256];
    if (aps_model_validate(&m, err, sizeof err) != APS_OK ||
        aps_cluster_validate(&c, err, sizeof err) != APS_OK ||
        aps_training_validate(&t, err, sizeof err) != APS_OK) {
        fprintf(stderr, "bench_core: %s\n", err);
        return 2;
    }
    enum { NS = 4096 };
    static aps_strategy s[NS];
    int n = 0;
    for (int64_t tp = 1; tp <= 8; tp *= 2)
        for (int64_t pp = 1; pp <= 16; pp *= 2)
            for (int64_t cp = 1; cp <= 4; cp *= 2)
                for (int64_t b = 1; b <= 4; b *= 2)
                    for (int rc = 0; rc < 3 && n < NS; rc++) {
                        aps_strategy_defaults(&s[n]);
                        s[n].tp_degree = tp; s[n].pp_degree = pp;
                        s[n].cp_degree = cp; s[n].micro_batch_size = b;
                        s[n].fsdp_degree = 1024 / (tp * pp * cp);
                        s[n].layer_recompute = (aps_recompute)rc;
                        n++;
                    }
    static aps_estimate e;
    long evals = 0, feasible = 0;
    double t0 = now(), t1;
    do {
        for (int i = 0; i < n; i++) {
            aps_estimate_run(&m, &c, &t, &s[i], &e);
            feasible += e.feasible;
        }
        evals += n;
        t1 = now();
    } while (t1 - t0 < 1.0);
    printf("core estimator: %ld evaluations in %.3f s = %.0f evaluations/s "
           "(%d distinct strategies, %.0f%% feasible)\n",
           evals, t1 - t0, (double)evals / (t1 - t0), n,
           100.0 * (double)feasible / (double)evals);
    return 0;
}
