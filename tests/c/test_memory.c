/*
 * test_memory.c -- src/core/memory.c: activations per layer (Korthikanti et
 * al. 2022, arXiv:2205.05198, Table 2; the tensor table of memory.c for
 * Llama-style layers) and model-state bytes per parameter (ZeRO paper,
 * Megatron distributed optimizer, FSDP2), also through aps_estimate_run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

/* ------------------------------------------- Korthikanti et al. Table 2 */

/* GPT-3 175B shapes of the paper: h = 12288, a = 96, s = 2048, b = 1,
 * GELU, LayerNorm, dropout, no flash attention.
 *   s b h = 2048 * 1 * 12288 = 25,165,824
 *   5 a s / h = 5 * 96 * 2048 / 12288 = 80 */
#define KS 2048.0
#define KH 12288.0
#define KA 96.0
#define SBH (KS * KH)  /* 25,165,824 */

static void korthikanti_setup(aps_model *m, aps_training *t, aps_strategy *s,
                              int64_t tp, bool sp)
{
    fx_gpt3_175b(m);
    fx_training(t, 1, 2048);
    t->dropout = true;
    t->flash_attention = false;
    aps_strategy_defaults(s);
    s->micro_batch_size = 1;
    s->tp_degree = tp;
    s->sequence_parallel = sp;
}

static double act(int64_t tp, bool sp, aps_recompute rc)
{
    aps_model m;
    aps_training t;
    aps_strategy s;
    korthikanti_setup(&m, &t, &s, tp, sp);
    return aps_layer_activation_bytes(&m, &t, &s, rc);
}

/* Table 2, "no parallelism": s b h (34 + 5 a s / h)
 *   = 25,165,824 * (34 + 80) = 25,165,824 * 114 = 2,868,903,936 bytes. */
static void test_korthikanti_table2_no_parallelism(void **state)
{
    (void)state;
    double want = SBH * (34.0 + 5.0 * KA * KS / KH);
    ASSERT_REL(want, 2868903936.0, 0); /* the arithmetic above */
    ASSERT_REL(act(1, false, APS_RECOMPUTE_NONE), want, REL);
    /* SP is meaningless at t = 1: same number */
    ASSERT_REL(act(1, true, APS_RECOMPUTE_NONE), want, REL);
}

/* The two dropouts apart (Megatron --attention-dropout, --hidden-dropout),
 * same shapes: of the 34 s b h, 2 are the hidden dropout's masks after
 * attention and after the MLP (1 byte each); of the 5 a s / h, 3 are the
 * attention dropout's mask (1) and dropped scores (2).  Attention alone:
 * s b h (32 + 5 a s / h) = 25,165,824 x 112 = 2,818,572,288; hidden
 * alone: s b h (34 + 2 a s / h) = 25,165,824 x 66 = 1,660,944,384. */
static void test_korthikanti_dropouts_apart(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    korthikanti_setup(&m, &t, &s, 1, false);
    t.dropout = APS_DEFAULT;
    t.attention_dropout = 0.1;
    t.hidden_dropout = 0.0;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               2818572288.0, REL);
    t.attention_dropout = 0.0;
    t.hidden_dropout = 0.1;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               1660944384.0, REL);
    /* an unset probability follows training.dropout */
    t.dropout = 1;
    t.attention_dropout = APS_DEFAULT;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               2868903936.0, REL);
}

/* Table 2, "tensor parallel (baseline)", t = 8:
 *   s b h (10 + 24/t + 5 a s/(h t)) = 25,165,824 * (10 + 3 + 10)
 *   = 25,165,824 * 23 = 578,813,952 bytes. */
static void test_korthikanti_table2_tp8(void **state)
{
    (void)state;
    double t = 8.0;
    double want = SBH * (10.0 + 24.0 / t + 5.0 * KA * KS / (KH * t));
    ASSERT_REL(want, 578813952.0, 0);
    ASSERT_REL(act(8, false, APS_RECOMPUTE_NONE), want, REL);
    /* t = 2: 25,165,824 * (10 + 12 + 40) = 1,560,281,088 */
    ASSERT_REL(act(2, false, APS_RECOMPUTE_NONE), SBH * 62.0, REL);
}

/* Table 2, "tensor + sequence parallel", t = 8:
 *   s b h (34/t + 5 a s/(h t)) = 25,165,824 * (4.25 + 10)
 *   = 358,612,992 bytes. */
static void test_korthikanti_table2_tp8_sp(void **state)
{
    (void)state;
    double t = 8.0;
    double want = SBH * (34.0 / t + 5.0 * KA * KS / (KH * t));
    ASSERT_REL(want, 358612992.0, 0);
    ASSERT_REL(act(8, true, APS_RECOMPUTE_NONE), want, REL);
}

/* Table 2, selective recompute drops the 5 a s/h term:
 *   t = 1: 34 s b h = 855,638,016
 *   t = 8, TP: s b h (10 + 24/8) = 13 s b h = 327,155,712
 *   t = 8, TP + SP: s b h 34/8 = 4.25 s b h = 106,954,752 */
static void test_korthikanti_table2_selective(void **state)
{
    (void)state;
    ASSERT_REL(act(1, false, APS_RECOMPUTE_SELECTIVE), SBH * 34.0, REL);
    ASSERT_REL(act(8, false, APS_RECOMPUTE_SELECTIVE),
               SBH * (10.0 + 24.0 / 8.0), REL);
    ASSERT_REL(act(8, true, APS_RECOMPUTE_SELECTIVE), SBH * 34.0 / 8.0,
               REL);
    ASSERT_REL(SBH * 34.0 / 8.0, 106954752.0, 0);
}

/* Table 2, full recompute: "2 s b h" = 50,331,648 bytes (the layer input
 * in 16 bits).  The table gives 2sbh whatever t is.  The code keeps the
 * layer input sequence-sharded under SP: 2 s b h / t = 6,291,456 at t = 8.
 * That deviates from the table's t-independent row but is what Megatron
 * checkpoints with --sequence-parallel (the hidden state entering each
 * layer is [s/t, b, h]); without SP the input is replicated: 2 s b h. */
static void test_korthikanti_table2_full_recompute(void **state)
{
    (void)state;
    ASSERT_REL(act(1, false, APS_RECOMPUTE_FULL), 2.0 * SBH, REL);
    ASSERT_REL(2.0 * SBH, 50331648.0, 0);
    ASSERT_REL(act(8, false, APS_RECOMPUTE_FULL), 2.0 * SBH, REL);
    /* deviation from Table 2 (SP-sharded checkpoint): 2sbh/t */
    ASSERT_REL(act(8, true, APS_RECOMPUTE_FULL), 2.0 * SBH / 8.0, REL);
}

/* Every term of Table 2 is linear in b: b = 2 gives twice the
 * no-parallelism row, 2 * 2,868,903,936 = 5,737,807,872. */
static void test_korthikanti_microbatch_linear(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    korthikanti_setup(&m, &t, &s, 1, false);
    s.micro_batch_size = 2;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               2.0 * SBH * 114.0, REL);
}

/* ---------------------------------------------------------- AP-FT-03 */

/* Llama-3.1-8B layer, flash attention, no dropout, SwiGLU, GQA k = 8,
 * d = 128, s = 8192, b = 1, from the tensor table of memory.c:
 *   replicated (/t only with SP): norm-1 in, QKV in, norm-2 in, MLP in
 *     4 * 2 s b h = 8 * 8192 * 4096 = 268,435,456
 *   split /t:
 *     Q + context      2 * 2 s b a d = 4 * 33,554,432  = 134,217,728
 *     K, V             2 * 2 s b k d = 4 * 8192 * 1024 =  33,554,432
 *     gate, up, prod   3 * 2 s b f   = 6 * 8192 * 14336 = 704,643,072
 *     flash LSE fp32   4 a s b       = 4 * 32 * 8192   =   1,048,576
 *     sum                                                 873,463,808
 *   SP off: 268,435,456 + 873,463,808 / t
 *     t=1 1,141,899,264; t=2 705,167,360; t=4 486,801,408; t=8 377,618,432
 *   SP on: (268,435,456 + 873,463,808) / t = 1,141,899,264 / t
 *     t=1 1,141,899,264; t=2 570,949,632; t=4 285,474,816; t=8 142,737,408
 */
static void test_ap_ft_03_llama31_8b_activations(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    aps_training t;
    fx_training(&t, 1, 8192);
    assert_true(t.flash_attention); /* defaults of the contract */
    assert_false(t.dropout);
    static const struct { int64_t tp; double sp_off, sp_on; } want[] = {
        {1, 1141899264.0, 1141899264.0},
        {2, 705167360.0, 570949632.0},
        {4, 486801408.0, 285474816.0},
        {8, 377618432.0, 142737408.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        aps_strategy s;
        aps_strategy_defaults(&s);
        s.tp_degree = want[i].tp;
        s.sequence_parallel = false;
        ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
                   want[i].sp_off, REL);
        s.sequence_parallel = true;
        ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
                   want[i].sp_on, REL);
    }
}

/* The same layer under TorchTitan (fsdp2) with SP: the QKV and MLP inputs
 * are saved as PrepareModuleInput all-gathered them, the whole sequence,
 * not / t: 2 x 2 s b h = 4 x 33,554,432 = 134,217,728 replaces
 * 134,217,728 / 8 = 16,777,216 at t = 8:
 * 142,737,408 - 16,777,216 + 134,217,728 = 260,177,920.  In fp8 the
 * gather is float8 (Float8ColwiseParallel casts before it), 1 byte per
 * element: 260,177,920 - 67,108,864 = 193,069,056.  Compiled (the SwiGLU
 * fused); eager TorchTitan keeps the SiLU's output too, 2 s b f / t =
 * 2 * 8192 * 14336 / 8 = 29,360,128 more: 289,538,048. */
static void test_fsdp2_sp_saves_gathered_inputs(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    aps_training t;
    fx_training(&t, 1, 8192);
    t.framework = APS_FW_FSDP2;
    t.torch_compile = true;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    s.sequence_parallel = true;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               260177920.0, REL);
    t.torch_compile = false;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               289538048.0, REL);
    t.torch_compile = true;
    t.precision = APS_PREC_FP8;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               193069056.0, REL);
}

/* Same layer, the recompute variants at t = 8 with SP:
 *   selective drops only the flash LSE: (1,141,899,264 - 1,048,576) / 8
 *     = 1,140,850,688 / 8 = 142,606,336
 *   full keeps the SP-sharded input: 2 s b h / 8 = 67,108,864 / 8
 *     = 8,388,608 */
static void test_ap_ft_03_llama31_8b_recompute(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    aps_training t;
    fx_training(&t, 1, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_SELECTIVE),
               142606336.0, REL);
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_FULL),
               8388608.0, REL);
}

/* CP: s -> s/c for every term (flash: no s^2 term).  c = 2, t = 1:
 * 1,141,899,264 / 2 = 570,949,632. */
static void test_ap_ft_03_llama31_8b_cp_halves(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    aps_training t;
    fx_training(&t, 1, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    ASSERT_REL(aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE),
               570949632.0, REL);
}

/* ------------------------------------------------- model-state bytes */

static double bytes_per_param(aps_framework fw, int64_t R, int64_t S,
                              int64_t zero, int64_t c)
{
    aps_training t;
    fx_training(&t, 64, 4096);
    t.framework = fw;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = R;
    s.fsdp_degree = S;
    s.zero_stage = zero;
    s.cp_degree = c;
    aps_state_bytes b;
    aps_model_state_bytes(&t, &s, &b);
    return fx_state_bytes_per_param(&b);
}

/* ZeRO paper (Rajbhandari et al. 2020, s.3.1 and Figure 1, K = 12), D = 8:
 *   stage 0: 2 + 2 + 12 = 16
 *   stage 1: 4 + 12/8 = 5.5
 *   stage 2: 2 + 14/8 = 3.75
 *   stage 3: 16/8 = 2 */
static void test_state_bytes_deepspeed_zero(void **state)
{
    (void)state;
    double D = 8.0;
    ASSERT_REL(bytes_per_param(APS_FW_DEEPSPEED, 8, 1, 0, 1), 16.0, REL);
    ASSERT_REL(bytes_per_param(APS_FW_DEEPSPEED, 8, 1, 1, 1), 4.0 + 12.0 / D,
               REL);
    ASSERT_REL(bytes_per_param(APS_FW_DEEPSPEED, 8, 1, 2, 1), 2.0 + 14.0 / D,
               REL);
    ASSERT_REL(bytes_per_param(APS_FW_DEEPSPEED, 8, 1, 3, 1), 16.0 / D, REL);
    /* D = 64, stage 3: 0.25 */
    ASSERT_REL(bytes_per_param(APS_FW_DEEPSPEED, 64, 1, 3, 1), 0.25, REL);
}

/* Megatron: bf16 weights 2 + fp32 main grads 4 + fp32 master and Adam 12
 *   = 18; distributed optimizer (zero_stage 1) 6 + 12/D: D = 8 -> 7.5. */
static void test_state_bytes_megatron(void **state)
{
    (void)state;
    ASSERT_REL(bytes_per_param(APS_FW_MEGATRON, 8, 1, 0, 1), 18.0, REL);
    ASSERT_REL(bytes_per_param(APS_FW_MEGATRON, 8, 1, 1, 1), 6.0 + 12.0 / 8.0,
               REL);
    ASSERT_REL(bytes_per_param(APS_FW_MEGATRON, 1, 1, 0, 1), 18.0, REL);
}

/* FSDP2: (4 + 4 + 8)/S; HSDP shards over S only (never R); CP ranks
 * extend the sharding group to S c (and the ZeRO group to R c). */
static void test_state_bytes_fsdp_and_groups(void **state)
{
    (void)state;
    ASSERT_REL(bytes_per_param(APS_FW_FSDP2, 1, 8, 0, 1), 16.0 / 8.0, REL);
    ASSERT_REL(bytes_per_param(APS_FW_FSDP2, 4, 8, 0, 1), 16.0 / 8.0, REL);
    ASSERT_REL(bytes_per_param(APS_FW_FSDP2, 1, 4, 0, 2), 16.0 / 8.0, REL);
    /* Megatron dist-opt over R c = 4 * 2 = 8: 6 + 12/8 */
    ASSERT_REL(bytes_per_param(APS_FW_MEGATRON, 4, 1, 1, 2), 7.5, REL);

    aps_training t;
    fx_training(&t, 64, 4096);
    t.framework = APS_FW_FSDP2;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 2;
    s.fsdp_degree = 8;
    aps_state_bytes b;
    aps_model_state_bytes(&t, &s, &b);
    ASSERT_REL(b.shard_group, 8.0, 0);
    ASSERT_REL(b.weight, 4.0, 0);
    ASSERT_REL(b.grad, 4.0, 0);
    ASSERT_REL(b.optimizer, 8.0, 0);
    assert_true(b.shard_weights && b.shard_grads && b.shard_optimizer);
}

/* ---------------------------------------------------- AP-FT-01 / 02 */

/* Llama-3.1-8B, P = 8,030,261,248 (test_model.c), V kept at 128256. */
#define P8B 8030261248.0

static void fsdp_setup(aps_model *m, aps_cluster *c, aps_training *t,
                       aps_strategy *s, int64_t N, int64_t R, int64_t S)
{
    fx_llama31_8b(m);
    fx_h100(c, N);
    fx_training(t, N, 8192);
    t->framework = APS_FW_FSDP2;
    t->vocab_size_divisible_by = 1;
    aps_strategy_defaults(s);
    s->dp_degree = R;
    s->fsdp_degree = S;
    s->hsdp = R > 1 && S > 1;
    s->micro_batch_size = 1;
}

/* AP-FT-01: FSDP2, S = 8, 8 GPUs:
 *   params 4 P / 8 = 4,015,130,624; grads 4 P / 8 = 4,015,130,624;
 *   optimizer_states 8 P / 8 = 8,030,261,248 bytes. */
static void test_ap_ft_01_fsdp_model_states(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fsdp_setup(&m, &c, &t, &s, 8, 1, 8);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.reason, APS_REASON_NONE);
    ASSERT_DBL_EXACT(e.vocab_padded, 128256.0);
    ASSERT_DBL_EXACT(e.stages[0].params, P8B);
    ASSERT_REL(e.mem[APS_MEM_PARAMS], 4.0 * P8B / 8.0, REL);
    ASSERT_REL(e.mem[APS_MEM_PARAMS], 4015130624.0, REL);
    ASSERT_REL(e.mem[APS_MEM_GRADS], 4015130624.0, REL);
    ASSERT_REL(e.mem[APS_MEM_OPTIMIZER_STATES], 8030261248.0, REL);
    /* Megatron's default divisor 128 leaves V alone at t = 1:
     * 128256 = 128 * 1002. */
    t.vocab_size_divisible_by = 128;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_DBL_EXACT(e.vocab_padded, 128256.0);
    ASSERT_REL(e.mem[APS_MEM_OPTIMIZER_STATES], 8030261248.0, REL);
}

/* AP-FT-02: HSDP S = 8, R = 2 on 16 GPUs holds the model states of FSDP
 * S = 8 on 8 GPUs.  The replicate sync is a ring all-reduce of the fp32
 * gradient shard over R = 2 ranks on the inter-node link (the R group has
 * stride t S = 8, span 16 > 8 GPUs per node):
 *   bytes = 4 P / 8 = 4,015,130,624
 *   bw = 50e9 * 0.8 = 40e9 B/s (H100 preset NIC x collective_efficiency)
 *   alpha = 8e-6 s (inter_node_latency)
 *   2 (R-1)/R bytes/bw + 2 alpha = 1 * 4,015,130,624 / 40e9 + 16e-6
 *   = 0.1003782656 + 0.000016 = 0.1003942656 s. */
static void test_ap_ft_02_hsdp(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fsdp_setup(&m, &c, &t, &s, 8, 1, 8);
    aps_estimate fsdp;
    fx_run(&m, &c, &t, &s, &fsdp);
    assert_int_equal(fsdp.reason, APS_REASON_NONE);
    ASSERT_REL(fsdp.perf_total[APS_PERF_HSDP_REPLICATE_SYNC], 0.0, 0);

    fsdp_setup(&m, &c, &t, &s, 16, 2, 8);
    aps_estimate hsdp;
    fx_run(&m, &c, &t, &s, &hsdp);
    assert_int_equal(hsdp.reason, APS_REASON_NONE);
    assert_int_equal(hsdp.devices_used, 16);
    ASSERT_REL(hsdp.mem[APS_MEM_PARAMS], fsdp.mem[APS_MEM_PARAMS], REL);
    ASSERT_REL(hsdp.mem[APS_MEM_GRADS], fsdp.mem[APS_MEM_GRADS], REL);
    ASSERT_REL(hsdp.mem[APS_MEM_OPTIMIZER_STATES],
               fsdp.mem[APS_MEM_OPTIMIZER_STATES], REL);

    const aps_device *d = &c.device;
    double bytes = 4.0 * P8B / 8.0;
    double bw = d->inter_node_bandwidth * d->collective_efficiency;
    double R = 2.0;
    double want = 2.0 * (R - 1.0) / R * bytes / bw +
                  2.0 * (R - 1.0) * d->inter_node_latency;
    ASSERT_REL(want, 0.1003942656, 1e-12); /* the arithmetic above */
    ASSERT_REL(hsdp.perf_total[APS_PERF_HSDP_REPLICATE_SYNC], want, REL);
    assert_true(hsdp.perf_exposed[APS_PERF_HSDP_REPLICATE_SYNC] <=
                hsdp.perf_total[APS_PERF_HSDP_REPLICATE_SYNC]);
}

/* Model states through aps_estimate_run on Llama-3.1-8B, 8-way DP, tp 1:
 *   deepspeed ZeRO-2: params 2P = 16,060,522,496; grads 2P/8 =
 *     2,007,565,312; optimizer 12P/8 = 12,045,391,872
 *   megatron distributed optimizer: params 2P = 16,060,522,496;
 *     grads 4P = 32,121,044,992; optimizer 12P/8 = 12,045,391,872 */
static void test_state_bytes_through_estimate(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 8, 4096);
    s.dp_degree = 8;
    aps_estimate e;

    t.framework = APS_FW_DEEPSPEED;
    s.zero_stage = 2;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.reason == APS_REASON_NONE ||
                     e.reason == APS_REASON_MEMORY_LIMIT, 1);
    ASSERT_REL(e.mem[APS_MEM_PARAMS], 16060522496.0, REL);
    ASSERT_REL(e.mem[APS_MEM_GRADS], 2007565312.0, REL);
    ASSERT_REL(e.mem[APS_MEM_OPTIMIZER_STATES], 12045391872.0, REL);

    t.framework = APS_FW_MEGATRON;
    s.zero_stage = 1;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem[APS_MEM_PARAMS], 16060522496.0, REL);
    ASSERT_REL(e.mem[APS_MEM_GRADS], 32121044992.0, REL);
    ASSERT_REL(e.mem[APS_MEM_OPTIMIZER_STATES], 12045391872.0, REL);
}

/* Last stage: logits bf16 2 s b V/t + fp32 copy 4 s b V/t.  Llama-3.1-8B,
 * t = 1, s = 8192, b = 1, V = 128256: 6 * 8192 * 128256 = 6,304,038,912. */
static void test_logits_loss_bytes(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 8, 8192);
    s.dp_degree = 8;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 6304038912.0, REL);
}

/* TorchTitan's chunked loss (training.loss_chunks; ChunkedLossWrapper,
 * torchtitan/components/loss.py @ b5bcd76c) on the same run under fsdp2
 * (FSDP 8, eager loss: 12 bytes per logit, V = 128,256 unpadded): one
 * chunk's logits plus the fp32 hidden-state gradient buffer and one
 * chunk's bf16 gradient, (4 + 2 / c) s b h with h = 4096:
 *   c = 1 (plain cross entropy): 12 * 8192 * 128256 = 12,608,077,824
 *   c = 8 (the default): 12,608,077,824 / 8 = 1,576,009,728
 *                        + 4.25 * 8192 * 4096 = 142,606,336
 *                        = 1,718,616,064
 *   c = 4: 3,152,019,456 + 4.5 * 33,554,432 = 3,303,014,400 */
static void test_logits_loss_chunked(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 8, 8192);
    t.framework = APS_FW_FSDP2;
    s.fsdp_degree = 8;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 1718616064.0, REL);
    t.loss_chunks = 1;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 12608077824.0, REL);
    t.loss_chunks = 4;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 3303014400.0, REL);
    /* 8192 chunks: the loop holds 12 * 128256 + (4 + 2 / 8192) * 8192 *
     * 4096 = 1,539,072 + 134,221,824 = 135,760,896; after it the fp32
     * buffer and its bf16 copy, 6 * 8192 * 4096 = 201,326,592, the peak */
    t.loss_chunks = 8192;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.stages[0].mem[APS_MEM_LOGITS_LOSS], 201326592.0, REL);
    /* 7 chunks of 8192 tokens: TorchTitan asserts they divide */
    t.loss_chunks = 7;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.reason, APS_REASON_FRAMEWORK_UNSUPPORTED);
    t.loss_chunks = 4;
    /* the other frameworks have no chunked loss: refused, not ignored */
    t.framework = APS_FW_MEGATRON;
    char err[256];
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "training.loss_chunks"));
}

/* The allocator's three peaks (memory.c allocator_peaks) on Llama-3.1-8B,
 * DP 8 under Megatron: max allocated = every category but `reserved`;
 * max reserved = allocated x (1 + 0.05), Megatron's launcher leaving
 * expandable segments off; device memory in use = reserved + the CUDA
 * context (0.75 GiB = 805,306,368 B) + one NCCL communicator (the DP
 * group, 500,000,000 B, and its NVLS buffers: 8 GPUs of one H100 node x
 * 32 MiB = 268,435,456 B; no distributed optimizer, no TP x PP group) =
 * reserved + 1,573,741,824 B.  With expandable segments and
 * allocator_fragmentation_expandable 0.02: x 1.02. */
static void test_allocator_peaks(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    s.dp_degree = 8;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    double allocated = 0.0;
    for (int j = 0; j < APS_MEM_COUNT; j++)
        if (j != APS_MEM_RESERVED)
            allocated += e.mem[j];
    ASSERT_REL(e.mem_allocated, allocated, REL);
    ASSERT_REL(e.mem_reserved, 1.05 * allocated, REL);
    ASSERT_REL(e.mem_peak - e.mem_reserved, 1573741824.0, REL);
    ASSERT_REL(e.mem[APS_MEM_RESERVED], 0.05 * allocated + 1573741824.0, REL);
    t.expandable_segments = 1;
    t.allocator_fragmentation_expandable = 0.02;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_reserved, 1.02 * allocated, REL);
    ASSERT_REL(e.mem_peak, 1.02 * allocated + 1573741824.0, REL);
}

/* TransformerEngine's cuBLAS workspaces (memory.c te_workspaces; TE
 * d0067d0da transformer_engine/pytorch/cpp_extensions/gemm.py): 32 MiB +
 * 1,024 B per GEMM stream on a part with fp8 tensor cores (compute
 * capability 9+), 4 MiB before; one stream for plain GEMMs, 4 more for
 * grouped GEMMs (MoE), 3 more with TP communication overlap:
 *  - Llama-3.1-8B, Megatron, H100, DP 8: 33,555,456 B;
 *  - TP 2 + SP + --tp-comm-overlap: 4 x 33,555,456 = 134,221,824 B;
 *  - the same on A100 (no fp8): 4 x 4,194,304 = 16,777,216 B;
 *  - FSDP2 (TorchTitan's GEMMs are PyTorch's): 0;
 *  - Qwen3-30B-A3B (128 experts) on H100, EP 8, grouped GEMM (the
 *    default): 5 x 33,555,456 = 167,777,280 B, on every rank. */
static void test_te_workspaces(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    aps_estimate e;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    s.dp_degree = 8;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.mem[APS_MEM_WORKSPACES] == 33555456.0);
    s.dp_degree = 4;
    s.tp_degree = 2;
    s.sequence_parallel = true;
    t.tp_comm_overlap = true;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.mem[APS_MEM_WORKSPACES] == 134221824.0);
    if (aps_device_preset("a100-sxm4-80gb", &c.device) != APS_OK)
        fail_msg("no a100-sxm4-80gb preset");
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.mem[APS_MEM_WORKSPACES] == 16777216.0);
    fx_h100(&c, 8);
    t.tp_comm_overlap = false;
    t.framework = APS_FW_FSDP2;
    s.tp_degree = 1;
    s.sequence_parallel = false;
    s.dp_degree = 1;
    s.fsdp_degree = 8;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.mem[APS_MEM_WORKSPACES] == 0.0);

    fx_llama(&m, "qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936);
    m.head_dim = 128;
    m.num_experts = 128;
    m.experts_per_token = 8;
    m.moe_ffn_hidden_size = 768;
    fx_validate(&m);
    fx_training(&t, 64, 4096);
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.mem[APS_MEM_WORKSPACES] == 167777280.0);
}

/* NCCL communicators outside the allocator (memory.c nccl_bytes), by
 * hand, Llama-3.1-8B on H100 nodes of 8, nccl_comm_bytes 0.5e9 and
 * nccl_nvls_bytes_per_rank 192 MiB (NCCL 2.17-2.20) = 201,326,592 B:
 *  - 8 GPUs, TP 2, DP 4, distributed optimizer (zero 1): TP (2 GPUs, no
 *    NVLS: gpuCount <= 2), DP (4 of the node, stride 2: + 4 x 192 MiB),
 *    the world for the gradient norm (8: + 8 x 192 MiB):
 *    3 x 0.5e9 + 12 x 201,326,592 = 3,915,919,104 B;
 *  - the same with zero 0: the world is not made, the TP x PP group (=
 *    the TP ranks, a group of its own) is: 3 x 0.5e9 + 4 x 201,326,592 =
 *    2,305,306,368 B;
 *  - 16 GPUs on 2 nodes, TP 2, DP 8, zero 1: DP and the world span the
 *    nodes (NVLS not counted): 3 x 0.5e9;
 *  - 8 GPUs, PP 2, DP 4, zero 1, tied embeddings: PP (2, stride 4), DP
 *    (4, stride 1: + 4 x 192 MiB), world (+ 8 x 192 MiB), the embedding
 *    group of the first and last stage (2): 4 x 0.5e9 + 12 x 201,326,592 =
 *    4,415,919,104 B on both stages.
 *  device memory in use - max reserved = the CUDA context 805,306,368 B +
 *  these. */
static void test_nccl_communicators(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    aps_estimate e;
    const double ctx = 805306368.0, nvls = 201326592.0;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    c.device.nccl_nvls_bytes_per_rank = nvls;
    s.tp_degree = 2;
    s.sequence_parallel = true;
    s.dp_degree = 4;
    s.zero_stage = 1;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_peak - e.mem_reserved, ctx + 3.0 * 0.5e9 + 12.0 * nvls, REL);
    /* the loss reported over the DP group without CP (dp_loss_group): one
     * more communicator of 4 GPUs of the node, + 0.5e9 + 4 x 192 MiB */
    t.dp_loss_group = true;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_peak - e.mem_reserved, ctx + 4.0 * 0.5e9 + 16.0 * nvls, REL);
    t.dp_loss_group = false;
    s.zero_stage = 0;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_peak - e.mem_reserved, ctx + 3.0 * 0.5e9 + 4.0 * nvls, REL);
    fx_setup_8b(&m, &c, &t, &s, 16, 64, 4096);
    c.device.nccl_nvls_bytes_per_rank = nvls;
    s.tp_degree = 2;
    s.sequence_parallel = true;
    s.dp_degree = 8;
    s.zero_stage = 1;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_peak - e.mem_reserved, ctx + 3.0 * 0.5e9, REL);
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    c.device.nccl_nvls_bytes_per_rank = nvls;
    m.tie_word_embeddings = true;
    s.pp_degree = 2;
    s.dp_degree = 4;
    s.zero_stage = 1;
    fx_run(&m, &c, &t, &s, &e);
    for (int i = 0; i < 2; i++)
        ASSERT_REL(e.stages[i].mem_total - e.stages[i].mem_reserved,
                   ctx + 4.0 * 0.5e9 + 12.0 * nvls, REL);
    /* no NVLS (A100, or NCCL_NVLS_ENABLE=0): the communicators alone */
    c.device.nccl_nvls_bytes_per_rank = 0.0;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem_peak - e.mem_reserved, ctx + 4.0 * 0.5e9, REL);
}

/* A memory_limit_bytes bounds training.memory_limit_kind's peak (default
 * max reserved); the device's capacity always bounds device memory in
 * use.  A limit between reserved and device in use fits by reserved, not
 * by device; one between allocated and reserved fits by allocated only,
 * and the message names the peak. */
static void test_memory_limit_kind(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    s.dp_degree = 8;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    double alloc = e.mem_allocated, res = e.mem_reserved, dev = e.mem_peak;
    ASSERT_REL(e.mem_limited, dev, 0); /* no limit given: the capacity's */
    t.memory_limit_bytes = 0.5 * (res + dev);
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.feasible);
    ASSERT_REL(e.mem_limited, res, 0);
    t.memory_limit_kind = APS_MEM_KIND_DEVICE;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REASON(e.reason, APS_REASON_MEMORY_LIMIT, e.reason_msg);
    t.memory_limit_kind = APS_MEM_KIND_RESERVED;
    t.memory_limit_bytes = 0.5 * (alloc + res);
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REASON(e.reason, APS_REASON_MEMORY_LIMIT, e.reason_msg);
    ASSERT_HAS(e.reason_msg, "GiB max reserved > memory limit");
    t.memory_limit_kind = APS_MEM_KIND_ALLOCATED;
    fx_run(&m, &c, &t, &s, &e);
    assert_true(e.feasible);
    ASSERT_REL(e.mem_limited, alloc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_te_workspaces),
        cmocka_unit_test(test_korthikanti_table2_no_parallelism),
        cmocka_unit_test(test_korthikanti_dropouts_apart),
        cmocka_unit_test(test_korthikanti_table2_tp8),
        cmocka_unit_test(test_korthikanti_table2_tp8_sp),
        cmocka_unit_test(test_korthikanti_table2_selective),
        cmocka_unit_test(test_korthikanti_table2_full_recompute),
        cmocka_unit_test(test_korthikanti_microbatch_linear),
        cmocka_unit_test(test_ap_ft_03_llama31_8b_activations),
        cmocka_unit_test(test_ap_ft_03_llama31_8b_recompute),
        cmocka_unit_test(test_fsdp2_sp_saves_gathered_inputs),
        cmocka_unit_test(test_ap_ft_03_llama31_8b_cp_halves),
        cmocka_unit_test(test_state_bytes_deepspeed_zero),
        cmocka_unit_test(test_state_bytes_megatron),
        cmocka_unit_test(test_state_bytes_fsdp_and_groups),
        cmocka_unit_test(test_ap_ft_01_fsdp_model_states),
        cmocka_unit_test(test_ap_ft_02_hsdp),
        cmocka_unit_test(test_state_bytes_through_estimate),
        cmocka_unit_test(test_logits_loss_bytes),
        cmocka_unit_test(test_logits_loss_chunked),
        cmocka_unit_test(test_allocator_peaks),
        cmocka_unit_test(test_nccl_communicators),
        cmocka_unit_test(test_memory_limit_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
