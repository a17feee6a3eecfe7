/*
 * test_pipeline.c -- src/core/pipeline.c: in-flight micro-batches (1F1B,
 * Narayanan et al. SC'21 s.2.2; interleaved, Korthikanti et al. 2022
 * s.4.2.3 and Megatron's schedules.py), the bubble (p-1)/(v m), the stage
 * partition and its failures, and per-stage parameters / activations of
 * Llama-3.1-405B at TP 8 PP 16 through aps_estimate_run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

/* 1F1B: rank i holds min(p - i, m) micro-batches.
 *   p = 4, m = 8: 4, 3, 2, 1
 *   p = 4, m = 2: min(4, 2) = 2, min(3, 2) = 2, 2, 1 */
static void test_inflight_1f1b(void **state)
{
    (void)state;
    ASSERT_REL(aps_inflight_microbatches(4, 1, 8, 0), 4.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 8, 1), 3.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 8, 2), 2.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 8, 3), 1.0, 0);
    /* fewer micro-batches than stages shrinks it */
    ASSERT_REL(aps_inflight_microbatches(4, 1, 2, 0), 2.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 2, 1), 2.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 2, 2), 2.0, 0);
    ASSERT_REL(aps_inflight_microbatches(4, 1, 2, 3), 1.0, 0);
    ASSERT_REL(aps_inflight_microbatches(16, 1, 1, 0), 1.0, 0);
    /* no pipeline: one set */
    ASSERT_REL(aps_inflight_microbatches(1, 1, 8, 0), 1.0, 0);
}

/* Interleaved, first rank: p (1 + (p-1)/(p v)) (Korthikanti s.4.2.3):
 *   p = 4, v = 2: 4 * (1 + 3/8) = 5.5
 *   p = 8, v = 4: 8 * (1 + 7/32) = 9.75
 *   p = 16, v = 3: 16 * (1 + 15/48) = 21
 * Megatron's warm-up count for rank i is 2(p-i-1) + (v-1)p chunks, plus
 * the chunk of the first 1F1B step, in units of v chunks per micro-batch:
 *   p = 4, v = 2, i = 3: ((v-1)p + 1)/v = 5/2 = 2.5
 *   p = 4, v = 2, i = 1: (2*2 + 4 + 1)/2 = 4.5 */
static void test_inflight_interleaved(void **state)
{
    (void)state;
    static const struct { int64_t p, v; } c[] = {{4, 2}, {8, 4}, {16, 3}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        double p = (double)c[k].p, v = (double)c[k].v;
        ASSERT_REL(aps_inflight_microbatches(c[k].p, c[k].v, 64, 0),
                   p * (1.0 + (p - 1.0) / (p * v)), REL);
    }
    ASSERT_REL(aps_inflight_microbatches(4, 2, 8, 0), 5.5, REL);
    ASSERT_REL(aps_inflight_microbatches(8, 4, 16, 0), 9.75, REL);
    ASSERT_REL(aps_inflight_microbatches(16, 3, 32, 0), 21.0, REL);
    ASSERT_REL(aps_inflight_microbatches(4, 2, 8, 3), 2.5, REL);
    ASSERT_REL(aps_inflight_microbatches(4, 2, 8, 1), 4.5, REL);
    /* m = 4 = p, v = 2: only m v = 8 chunks exist, all warm-up:
     * 8 / 2 = 4 micro-batches (not 5.5) */
    ASSERT_REL(aps_inflight_microbatches(4, 2, 4, 0), 4.0, REL);
}

/* Bubble (p-1)/(v m), SC'21 s.2.2.1-2:
 *   p 8, v 1, m 32: 7/32 = 0.21875;  v 2: 7/64 = 0.109375;
 *   p 16, v 4, m 64: 15/256 = 0.05859375; p 1: 0. */
static void test_bubble_fraction(void **state)
{
    (void)state;
    ASSERT_REL(aps_bubble_fraction(8, 1, 32), 0.21875, REL);
    ASSERT_REL(aps_bubble_fraction(8, 2, 32), 0.109375, REL);
    ASSERT_REL(aps_bubble_fraction(16, 4, 64), 0.05859375, REL);
    ASSERT_REL(aps_bubble_fraction(1, 1, 32), 0.0, 0);
}

/* ----------------------------------------------------- stage layers */

static aps_reason layers_of(int64_t L, int64_t p, int64_t v,
                            const int64_t *part, const int64_t *off,
                            int64_t *out, char *msg, size_t n)
{
    aps_model m;
    fx_llama(&m, "layers", L, 4096, 32, 8, 14336, 32000);
    fx_validate(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = p;
    s.vpp_degree = v;
    for (int64_t i = 0; i < p; i++) {
        if (part)
            s.stage_partition[i] = part[i];
        if (off)
            s.layer_offset[i] = off[i];
    }
    msg[0] = '\0';
    return aps_stage_layers(&m, &s, out, msg, n);
}

static void test_stage_layers_even_offset_partition(void **state)
{
    (void)state;
    int64_t l[APS_MAX_STAGES];
    char msg[APS_REASON_LEN];
    /* even split: 32 / 4 = 8 each */
    ASSERT_REASON(layers_of(32, 4, 1, NULL, NULL, l, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    for (int i = 0; i < 4; i++)
        assert_int_equal(l[i], 8);
    /* offsets -1, 0, 0, +1 (sum 0): 7, 8, 8, 9 */
    const int64_t off[4] = {-1, 0, 0, 1};
    ASSERT_REASON(layers_of(32, 4, 1, NULL, off, l, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(l[0], 7);
    assert_int_equal(l[1], 8);
    assert_int_equal(l[2], 8);
    assert_int_equal(l[3], 9);
    /* explicit partition 6, 10, 10, 6 */
    const int64_t part[4] = {6, 10, 10, 6};
    ASSERT_REASON(layers_of(32, 4, 1, part, NULL, l, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(l[0], 6);
    assert_int_equal(l[1], 10);
    assert_int_equal(l[3], 6);
    /* interleaved: 32 / (4 * 2) = 4 layers per chunk, 8 per rank */
    ASSERT_REASON(layers_of(32, 4, 2, NULL, NULL, l, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(l[0], 8);
}

static void test_stage_layers_failures(void **state)
{
    (void)state;
    int64_t l[APS_MAX_STAGES];
    char msg[APS_REASON_LEN];
    /* offsets not summing to 0: +1 */
    const int64_t off1[4] = {1, 0, 0, 0};
    ASSERT_REASON(layers_of(32, 4, 1, NULL, off1, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "layer_offset");
    /* offsets that empty stage 1: 8 - 8 = 0 layers */
    const int64_t off2[4] = {-8, 0, 0, 8};
    ASSERT_REASON(layers_of(32, 4, 1, NULL, off2, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "stage 1");
    /* a partition with an empty stage 3 */
    const int64_t part0[4] = {10, 12, 0, 10};
    ASSERT_REASON(layers_of(32, 4, 1, part0, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "stage 3");
    /* a partition and offsets together: one of them would be ignored */
    const int64_t part8[4] = {8, 8, 8, 8}, off8[4] = {1, -1, 0, 0};
    ASSERT_REASON(layers_of(32, 4, 1, part8, off8, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "stage_partition and layer_offset");
    /* a partition that does not sum to L: 8 + 8 + 8 + 7 = 31 != 32 */
    const int64_t part1[4] = {8, 8, 8, 7};
    ASSERT_REASON(layers_of(32, 4, 1, part1, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "31");
    /* L not divisible by p v: 32 % (4 * 3) = 8; 30 % 4 = 2; 126 % 16 = 14 */
    ASSERT_REASON(layers_of(32, 4, 3, NULL, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_DIVISIBILITY, msg);
    ASSERT_HAS(msg, "num_layers = 32");
    ASSERT_REASON(layers_of(30, 4, 1, NULL, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_DIVISIBILITY, msg);
    ASSERT_REASON(layers_of(126, 16, 1, NULL, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_DIVISIBILITY, msg);
    /* interleaving splits every rank into equal model chunks: 7 layers
     * cannot make 2, 6 + 10 + 8 + 8 can */
    const int64_t part2[4] = {7, 9, 8, 8};
    ASSERT_REASON(layers_of(32, 4, 2, part2, NULL, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "stage 1 has 7 layers, not divisible into vpp_degree = 2");
    const int64_t part3[4] = {6, 10, 8, 8};
    ASSERT_REASON(layers_of(32, 4, 2, part3, NULL, l, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    /* a balanced split with interleaving needs L % v == 0: DeepSeek-V3's
     * 61 layers over 4 x 4 cannot, and the message says what can (its
     * published layout is 16 per-chunk entries, 4 x 15 + 1) */
    aps_model m;
    fx_llama(&m, "layers", 61, 4096, 32, 8, 14336, 32000);
    fx_validate(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 4;
    s.vpp_degree = 4;
    s.balance_stages = true;
    ASSERT_REASON(aps_stage_layers(&m, &s, l, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "num_layers = 61 cannot be balanced over pp_degree x "
                    "vpp_degree = 4 x 4 equal model chunks per rank (give "
                    "stage_partition per model chunk, 16 entries)");
}

/* ------------------------------- Llama-3.1-405B, TP 8, PP 16, per stage */

/* 126 layers on 16 ranks: 7 on the first and last, 8 on the 14 others
 * (7 + 14 * 8 + 7 = 126).  128 H100, B = 32, b = 1, s = 8192: m = 32.
 * Vocabulary padded to a multiple of 128 * 8 = 1024: 128256 -> 129024.
 * Per layer on one TP rank: matrices 3,187,671,040 / 8 = 398,458,880
 *   + 2 RMSNorms 2 * 16384 = 32,768 (replicated) = 398,491,648.
 * Vocab-parallel embedding / output: 129024 * 16384 / 8 = 264,241,152.
 *   stage 1:  7 * 398,491,648 + 264,241,152          = 3,053,682,688
 *   stage 16: 7 * 398,491,648 + 16,384 + 264,241,152  = 3,053,699,072
 *   stage 2..15: 8 * 398,491,648                       = 3,187,933,184 */
static void setup_405b(aps_model *m, aps_cluster *c, aps_training *t,
                       aps_strategy *s)
{
    fx_llama31_405b(m);
    fx_h100(c, 128);
    fx_training(t, 32, 8192);
    aps_strategy_defaults(s);
    s->tp_degree = 8;
    s->pp_degree = 16;
    for (int i = 0; i < 16; i++)
        s->stage_partition[i] = (i == 0 || i == 15) ? 7 : 8;
}

static void test_pp_405b_stage_params(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_405b(&m, &c, &t, &s);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.reason == APS_REASON_NONE ||
                e.reason == APS_REASON_MEMORY_LIMIT);
    assert_int_equal(e.num_stages, 16);
    assert_int_equal(e.micro_batch_num, 32);
    ASSERT_DBL_EXACT(e.vocab_padded, 129024.0);
    ASSERT_DBL_EXACT(e.params_total, 405853388800.0); /* unpadded V */
    ASSERT_DBL_EXACT(e.stages[0].params, 3053682688.0);
    ASSERT_DBL_EXACT(e.stages[15].params, 3053699072.0);
    for (int i = 1; i < 15; i++)
        ASSERT_DBL_EXACT(e.stages[i].params, 3187933184.0);
    assert_int_equal(e.stages[0].num_layers, 7);
    assert_int_equal(e.stages[0].first_layer, 0);
    assert_int_equal(e.stages[1].first_layer, 7);
    assert_int_equal(e.stages[15].first_layer, 119); /* 7 + 14 * 8 */
    assert_int_equal(e.stages[15].num_layers, 7);
    /* Megatron bf16 weights: 2 bytes per parameter, not sharded */
    ASSERT_REL(e.stages[0].mem[APS_MEM_PARAMS], 2.0 * 3053682688.0, REL);
    ASSERT_REL(e.stages[15].mem[APS_MEM_GRADS], 4.0 * 3053699072.0, REL);

    /* vocab_size_divisible_by = 1: padded to a multiple of 8 only,
     * 128256 = 8 * 16032, embedding 128256 * 2048 = 262,668,288:
     * stage 1 = 2,789,441,536 + 262,668,288 = 3,052,109,824 */
    t.vocab_size_divisible_by = 1;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_DBL_EXACT(e.vocab_padded, 128256.0);
    ASSERT_DBL_EXACT(e.stages[0].params, 3052109824.0);
}

/* Activations per stage, same case.  One layer, t = 8 with SP, flash, no
 * dropout (memory.c table), s = 8192, h = 16384, k d = 1024, f = 53248:
 *   8 s h  = 8 * 134,217,728         = 1,073,741,824  (norm/linear inputs)
 *   4 s h  (Q + context)             =   536,870,912
 *   4 s k d = 4 * 8192 * 1024        =    33,554,432
 *   6 s f  = 6 * 8192 * 53248        = 2,617,245,696
 *   4 a s  = 4 * 128 * 8192          =     4,194,304
 *   sum 4,265,607,168, / t = 533,200,896 per layer.
 *   stage 1 (i = 0): min(16, 32) = 16 in flight * 7 layers
 *     = 16 * 7 * 533,200,896 = 59,718,500,352
 *   stage 2 (i = 1): 15 * 8 * 533,200,896 = 63,984,107,520
 *   stage 16: 1 * (7 * 533,200,896 + final-norm and output-layer inputs
 *     2 * 2 s h / 8 = 67,108,864) = 3,799,515,136 */
static void test_pp_405b_stage_activations(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_405b(&m, &c, &t, &s);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               533200896.0, REL);
    ASSERT_REL(e.stages[0].inflight_microbatches, 16.0, 0);
    ASSERT_REL(e.stages[1].inflight_microbatches, 15.0, 0);
    ASSERT_REL(e.stages[15].inflight_microbatches, 1.0, 0);
    ASSERT_REL(e.stages[0].mem[APS_MEM_ACTIVATIONS], 59718500352.0, REL);
    ASSERT_REL(e.stages[1].mem[APS_MEM_ACTIVATIONS], 63984107520.0, REL);
    ASSERT_REL(e.stages[15].mem[APS_MEM_ACTIVATIONS], 3799515136.0, REL);
    /* logits on the last stage only: 6 s V / t = 6 * 8192 * 129024 / 8
     * = 792,723,456 */
    ASSERT_REL(e.stages[15].mem[APS_MEM_LOGITS_LOSS], 792723456.0, REL);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 0.0, 0);
}

/* Full recompute of every layer: each layer keeps its SP-sharded input,
 * 2 s h / 8 = 33,554,432, plus one layer's full set while it is recomputed:
 *   stage 1: 16 * 7 * 33,554,432 + 533,200,896 = 4,291,297,280 */
static void test_pp_405b_full_recompute(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_405b(&m, &c, &t, &s);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.stages[0].recompute_layers, 7);
    ASSERT_REL(e.stages[0].mem[APS_MEM_ACTIVATIONS], 4291297280.0, REL);
    /* recompute_num_layers = 3 on stage 1: 3 keep the input, 4 keep all:
     *   16 * (3 * 33,554,432 + 4 * 533,200,896) + 533,200,896
     *   = 16 * 2,233,466,880 + 533,200,896 = 36,268,670,976 */
    s.recompute_num_layers[0] = 3;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.stages[0].recompute_layers, 3);
    ASSERT_REL(e.stages[0].mem[APS_MEM_ACTIVATIONS], 36268670976.0, REL);
}

/* The bubble term is (p-1)/(v m) of the m micro-batches' time on the
 * slowest stage (SC'21): perf pp_bubble = 15/32 * (sum of the per-micro-
 * batch terms: compute, recompute, exposed TP/CP/FSDP).  This strategy is
 * over the memory limit (stage 2 holds 64 GB of activations), where the
 * estimator keeps the closed form instead of simulating the schedule
 * (schedule.c; feasible strategies: test_schedule.c, test_estimate.c
 * test_interleaved_bubble). */
static void test_pp_405b_bubble_in_estimate(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_405b(&m, &c, &t, &s);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_false(e.feasible);
    const aps_perf_category per_mb[] = {
        APS_PERF_COMPUTE_FWD, APS_PERF_COMPUTE_BWD, APS_PERF_RECOMPUTE,
        APS_PERF_TP_COMM, APS_PERF_CP_COMM, APS_PERF_FSDP_ALLGATHER,
        APS_PERF_FSDP_REDUCESCATTER, APS_PERF_KERNEL_GAPS};
    double work = 0.0;
    for (size_t k = 0; k < sizeof per_mb / sizeof per_mb[0]; k++)
        work += e.perf_exposed[per_mb[k]];
    assert_true(work > 0.0);
    ASSERT_REL(e.perf_total[APS_PERF_PP_BUBBLE],
               aps_bubble_fraction(16, 1, 32) * work, REL);
    ASSERT_REL(aps_bubble_fraction(16, 1, 32), 15.0 / 32.0, REL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inflight_1f1b),
        cmocka_unit_test(test_inflight_interleaved),
        cmocka_unit_test(test_bubble_fraction),
        cmocka_unit_test(test_stage_layers_even_offset_partition),
        cmocka_unit_test(test_stage_layers_failures),
        cmocka_unit_test(test_pp_405b_stage_params),
        cmocka_unit_test(test_pp_405b_stage_activations),
        cmocka_unit_test(test_pp_405b_full_recompute),
        cmocka_unit_test(test_pp_405b_bubble_in_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
