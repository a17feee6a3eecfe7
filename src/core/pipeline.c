/*
 * pipeline.c -- stage partition, in-flight micro-batches and the bubble.
 *
 * Sources: Narayanan et al., "Efficient Large-Scale Language Model Training
 * on GPU Clusters Using Megatron-LM", SC'21 (arXiv:2104.04473) s.2.2;
 * Korthikanti et al., "Reducing Activation Recomputation in Large
 * Transformer Models", 2022 (arXiv:2205.05198) s.4.2.3;
 * megatron/core/pipeline_parallel/schedules.py.
 */
#include "internal.h"

aps_reason aps_stage_layers(const aps_model *m, const aps_strategy *s,
                            int64_t *layers, char *msg, size_t n)
{
    int64_t p = s->pp_degree, v = s->vpp_degree, L = m->num_layers;
    bool partition = false, offset = false;
    for (int64_t i = 0; i < p; i++) {
        partition |= s->stage_partition[i] != 0;
        offset |= s->layer_offset[i] != 0;
    }
    if (partition && (offset || s->balance_stages)) {
        aps_fmt(msg, n, "stage_partition and layer_offset%s both given; "
                "give one of them", s->balance_stages ? " = balanced" : "");
        return APS_REASON_PP_PARTITION;
    }
    if (s->balance_stages && p > 1 && !partition) {
        /* Placeholder split for the checks; aps_estimate_run replaces it
         * with the time-balanced partition (estimate.c). */
        if (L < p * v || L % v != 0) {
            aps_fmt(msg, n, "num_layers = %lld cannot be balanced over "
                    "pp_degree x vpp_degree = %lld x %lld equal model chunks "
                    "per rank", (long long)L, (long long)p, (long long)v);
            return APS_REASON_PP_PARTITION;
        }
        int64_t U = L / v; /* layers move in units of v */
        for (int64_t i = 0; i < p; i++)
            layers[i] = (U / p + (i < U % p ? 1 : 0)) * v;
    } else if (partition) {
        int64_t sum = 0;
        for (int64_t i = 0; i < p; i++) {
            layers[i] = s->stage_partition[i];
            sum += layers[i];
        }
        if (sum != L) {
            aps_fmt(msg, n, "stage_partition sums to %lld layers, model has "
                    "num_layers = %lld", (long long)sum, (long long)L);
            return APS_REASON_PP_PARTITION;
        }
    } else {
        if (L % p != 0 || (!offset && L % (p * v) != 0)) {
            aps_fmt(msg, n, "num_layers = %lld is not divisible by pp_degree "
                    "x vpp_degree = %lld x %lld (give stage_partition or "
                    "layer_offset for an uneven split)",
                    (long long)L, (long long)p, (long long)v);
            return APS_REASON_PP_DIVISIBILITY;
        }
        int64_t sum = 0;
        for (int64_t i = 0; i < p; i++) {
            layers[i] = L / p + s->layer_offset[i];
            sum += s->layer_offset[i];
        }
        if (sum != 0) {
            aps_fmt(msg, n, "layer_offset sums to %lld, must sum to 0",
                    (long long)sum);
            return APS_REASON_PP_PARTITION;
        }
    }
    for (int64_t i = 0; i < p; i++) {
        if (layers[i] < 1) {
            aps_fmt(msg, n, "stage %lld gets %lld layers, every stage needs "
                    ">= 1", (long long)i + 1, (long long)layers[i]);
            return APS_REASON_PP_PARTITION;
        }
        /* A rank's v model chunks are equal (Megatron-LM, TorchTitan);
         * ranks may differ from each other. */
        if (layers[i] % v != 0) {
            aps_fmt(msg, n, "stage %lld has %lld layers, not divisible into "
                    "vpp_degree = %lld equal model chunks", (long long)i + 1,
                    (long long)layers[i], (long long)v);
            return APS_REASON_PP_PARTITION;
        }
    }
    return APS_REASON_NONE;
}

aps_reason aps_layout_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, aps_layout *lay,
                            char *msg, size_t n)
{
    lay->p = s->pp_degree;
    lay->v = s->vpp_degree;
    lay->t = s->tp_degree;
    lay->c = s->cp_degree;
    lay->b = s->micro_batch_size;
    lay->s_local = t->seq_length / s->cp_degree;
    lay->m = s->micro_batch_num > 0
                 ? s->micro_batch_num
                 : t->global_batch_size /
                       (s->micro_batch_size * s->dp_degree * s->fsdp_degree);
    lay->vocab_padded = aps_padded_vocab(m, t, s->tp_degree);
    aps_reason r = aps_stage_layers(m, s, lay->layers, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    int64_t first = 0;
    for (int64_t i = 0; i < lay->p; i++) {
        lay->first[i] = first;
        first += lay->layers[i];
        int64_t rc = 0;
        if (s->layer_recompute == APS_RECOMPUTE_FULL) {
            int64_t want = s->recompute_num_layers[i];
            rc = (want < 0 || want > lay->layers[i]) ? lay->layers[i] : want;
        }
        lay->recompute[i] = rc;
    }
    return APS_REASON_NONE;
}

double aps_inflight_microbatches(int64_t p, int64_t v, int64_t m, int64_t i)
{
    if (p <= 1)
        return m > 0 ? 1.0 : 0.0;
    if (v <= 1) {
        int64_t k = p - i;
        return (double)(k < m ? k : m);
    }
    /* Interleaved 1F1B: rank i runs 2(p-i-1) + (v-1)p warm-up chunk
     * forwards, then holds one more before its first backward. */
    int64_t chunks = 2 * (p - i - 1) + (v - 1) * p + 1;
    if (chunks > m * v)
        chunks = m * v;
    return (double)chunks / (double)v;
}

double aps_bubble_fraction(int64_t p, int64_t v, int64_t m)
{
    if (p <= 1 || m < 1)
        return 0.0;
    return (double)(p - 1) / ((double)v * (double)m);
}
