/*
 * Megatron-LM's first and last layers in bf16 (src/core/bf16layers.c):
 * a rank holding k bf16 layers of its L is priced as L - k quantized and
 * k bf16 layers; a rank with none, and a training without the setting, as
 * before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "fixtures.h"
#include "../../src/core/internal.h"
#include "fixtures_internal.h"

/** A 4-layer Llama-shaped model: h 4096, 32 heads of 128, 8 KV groups,
 *  SwiGLU f 14336. */
#define TINY_LAYERS 4
#define TINY_H 4096.0
#define TINY_F 14336.0
/** Q + K + V columns: (32 + 8 + 8) x 128. */
#define TINY_QKV 6144.0
/** Tokens of one micro-batch: 1 x 4096. */
#define TINY_SEQ 4096

static void fx_tiny(aps_model *m)
{
    fx_llama(m, "tiny-4", TINY_LAYERS, 4096, 32, 8, 14336, 128256);
    fx_validate(m);
}

/** One layer's forward GEMMs by hand (TP 1): QKV T x 6144 x h, the output
 *  projection T x h x h, SwiGLU's gate and up T x 2f x h, down T x h x f. */
static double tiny_gemm(const aps_device *d, aps_precision p)
{
    double T = TINY_SEQ;
    return aps_gemm_time(d, p, T, TINY_QKV, TINY_H) +
           aps_gemm_time(d, p, T, TINY_H, TINY_H) +
           aps_gemm_time(d, p, T, 2.0 * TINY_F, TINY_H) +
           aps_gemm_time(d, p, T, TINY_H, TINY_F);
}

/** Training of the tiny model: 8 sequences of 4096 in precision p, first
 *  and last layers in bf16 when on (counts unset: Megatron's 1 and 1). */
static void fx_bf16_training(aps_training *t, aps_precision p, bool on)
{
    fx_training(t, 8, TINY_SEQ);
    t->precision = p;
    t->first_last_layers_bf16 = on;
}

static void fx_strategy(aps_strategy *s, int64_t pp)
{
    aps_strategy_defaults(s);
    s->pp_degree = pp;
    s->dp_degree = 8 / pp;
}

/* pp 1, fp8, start 1 and end 1 of 4 layers: layers 0 and 3 in bf16, so
 * the rank's weight-gradient GEMMs (one forward's worth per layer) are 2
 * fp8 layers + 2 bf16 layers, each by hand from aps_gemm_time. */
static void test_bf16_layers_gemm_pp1(void **state)
{
    (void)state;
    aps_model m;
    fx_tiny(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_bf16_training(&t, APS_PREC_FP8, true);
    aps_strategy s;
    fx_strategy(&s, 1);
    double q = tiny_gemm(&c.device, APS_PREC_FP8);
    double b = tiny_gemm(&c.device, APS_PREC_BF16);
    assert_true(b > q);
    aps_stage_time st;
    fx_stage_time(&m, &c, &t, &s, 0, &st);
    ASSERT_REL(st.wgrad, 2.0 * q + 2.0 * b, 1e-12);
    fx_bf16_training(&t, APS_PREC_FP8, false);
    fx_stage_time(&m, &c, &t, &s, 0, &st);
    ASSERT_REL(st.wgrad, 4.0 * q, 1e-12);
}

/* pp 2: rank 0 holds layers 0-1, rank 1 layers 2-3; each one bf16 layer
 * (0, resp. 3) and one fp8 layer.  End 0 leaves rank 1 none: its cost is
 * the model's layer itself (the same pointer, bit for bit). */
static void test_bf16_layers_gemm_pp2(void **state)
{
    (void)state;
    aps_model m;
    fx_tiny(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_bf16_training(&t, APS_PREC_FP8, true);
    aps_strategy s;
    fx_strategy(&s, 2);
    double q = tiny_gemm(&c.device, APS_PREC_FP8);
    double b = tiny_gemm(&c.device, APS_PREC_BF16);
    for (int64_t i = 0; i < 2; i++) {
        aps_stage_time st;
        fx_stage_time(&m, &c, &t, &s, i, &st);
        ASSERT_REL(st.wgrad, q + b, 1e-12);
    }
    t.num_layers_at_end_in_bf16 = 0;
    char msg[APS_REASON_LEN];
    aps_layout lay;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_layer_cost lc, buf;
    fx_layer_cost(&m, &c, &t, &s, &lc);
    assert_ptr_equal(aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, 1, &buf),
                     &lc);
    const aps_layer_cost *r0 =
        aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, 0, &buf);
    /* rank 0: half its layers in bf16, which quantize nothing */
    assert_true(lc.fp8_cast_fwd > 0);
    ASSERT_REL(r0->fp8_cast_fwd, 0.5 * lc.fp8_cast_fwd, 1e-12);
    ASSERT_REL(r0->fp8_cast_bwd, 0.5 * lc.fp8_cast_bwd, 1e-12);
    ASSERT_REL(r0->gemm_fwd, 0.5 * (q + b), 1e-12);
}

/* Activations: the bf16 layers save what a bf16 layer saves.  pp 2, 1F1B,
 * 1 micro-batch per DP rank (8 sequences over DP 4 is 2 micro-batches):
 * each rank's activation memory grows by its in-flight micro-batches x
 * (one bf16 layer's bytes - one fp8 layer's). */
static void test_bf16_layers_activations(void **state)
{
    (void)state;
    aps_model m;
    fx_tiny(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training on, off, bf;
    fx_bf16_training(&on, APS_PREC_FP8, true);
    fx_bf16_training(&off, APS_PREC_FP8, false);
    fx_bf16_training(&bf, APS_PREC_BF16, false);
    aps_strategy s;
    fx_strategy(&s, 2);
    aps_layer_cost q, b;
    aps_layer_activations(&m, &off, &s, NULL, &q);
    aps_layer_activations(&m, &bf, &s, NULL, &b);
    assert_true(b.act_full > q.act_full);
    aps_estimate *e_on = test_malloc(sizeof *e_on);
    aps_estimate *e_off = test_malloc(sizeof *e_off);
    fx_run(&m, &c, &on, &s, e_on);
    fx_run(&m, &c, &off, &s, e_off);
    for (int64_t i = 0; i < 2; i++) {
        double n = e_on->stages[i].inflight_microbatches;
        ASSERT_REL(e_on->stages[i].mem[APS_MEM_ACTIVATIONS] -
                       e_off->stages[i].mem[APS_MEM_ACTIVATIONS],
                   n * (b.act_full - q.act_full), 1e-9);
    }
    assert_true(e_on->step_time > e_off->step_time);
    test_free(e_on);
    test_free(e_off);
}

/* A hybrid pattern "M-*-" (Mamba-2, MLP, attention, MLP; squared-ReLU MLP
 * f 21504) under fp8 with end 1, start 0: the bf16 layer is the last MLP,
 * so the rank's GEMMs change by that MLP's bf16 - fp8 time (its kinds',
 * not the mean layer's): T x f x h + T x h x f, by hand. */
static void test_bf16_layers_hybrid_kind(void **state)
{
    (void)state;
    aps_model m;
    aps_model_defaults(&m);
    snprintf(m.name, sizeof m.name, "hybrid-4");
    snprintf(m.hybrid_layer_pattern, sizeof m.hybrid_layer_pattern, "M-*-");
    m.num_layers = 4;
    m.hidden_size = 4096;
    m.num_attention_heads = 32;
    m.num_query_groups = 8;
    m.head_dim = 128;
    m.ffn_hidden_size = 21504;
    m.vocab_size = 131072;
    m.max_position_embeddings = 8192;
    m.norms_per_layer = 1;
    m.mlp = APS_MLP_RELU2;
    m.position_embedding = APS_POS_NONE;
    m.mamba_num_heads = 128;
    m.mamba_head_dim = 64;
    m.mamba_state_dim = 128;
    m.mamba_num_groups = 8;
    m.mamba_conv_kernel = 4;
    m.mamba_chunk_size = 128;
    fx_validate(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_bf16_training(&t, APS_PREC_FP8, true);
    t.num_layers_at_start_in_bf16 = 0;
    aps_strategy s;
    fx_strategy(&s, 1);
    aps_stage_time on, off;
    fx_stage_time(&m, &c, &t, &s, 0, &on);
    t.first_last_layers_bf16 = false;
    t.num_layers_at_start_in_bf16 = t.num_layers_at_end_in_bf16 = APS_DEFAULT;
    fx_stage_time(&m, &c, &t, &s, 0, &off);
    double T = TINY_SEQ, h = 4096.0, f = 21504.0;
    double mlp_b = aps_gemm_time(&c.device, APS_PREC_BF16, T, f, h) +
                   aps_gemm_time(&c.device, APS_PREC_BF16, T, h, f);
    double mlp_q = aps_gemm_time(&c.device, APS_PREC_FP8, T, f, h) +
                   aps_gemm_time(&c.device, APS_PREC_FP8, T, h, f);
    ASSERT_REL(on.wgrad - off.wgrad, mlp_b - mlp_q, 1e-9);
}

/* An MoE model of 4 layers, every one MoE (128 experts top 8, width
 * 768), MXFP8 on 8 B200 with EP 8: start 1 and end 1 put half the rank's
 * layers, and half its MoE layers, in bf16, so each of the rank's compute
 * terms -- dense parts, expert GEMMs, casts -- is the mean of the same
 * rank all-MXFP8 and all-bf16 (edges left out: the output layer stays
 * quantized). */
static void test_bf16_layers_moe_mean(void **state)
{
    (void)state;
    aps_model m;
    fx_llama(&m, "moe-4", TINY_LAYERS, 2048, 32, 4, 6144, 151936);
    m.head_dim = 128;
    m.num_experts = 128;
    m.experts_per_token = 8;
    m.moe_ffn_hidden_size = 768;
    fx_validate(&m);
    aps_cluster c = {0};
    assert_int_equal(aps_device_preset("b200", &c.device), APS_OK);
    c.num_devices = 8;
    c.devices_per_node = 8;
    aps_training t;
    fx_bf16_training(&t, APS_PREC_MXFP8, true);
    t.moe_flex_dispatcher_backend = APS_FLEX_HYBRIDEP;
    aps_strategy s;
    fx_strategy(&s, 1);
    s.ep_degree = 8;
    s.moe_token_dispatcher = APS_MOE_FLEX;
    aps_stage_time on, q, b;
    fx_stage_time(&m, &c, &t, &s, 0, &on);
    fx_bf16_training(&t, APS_PREC_MXFP8, false);
    t.moe_flex_dispatcher_backend = APS_FLEX_HYBRIDEP;
    fx_stage_time(&m, &c, &t, &s, 0, &q);
    t.precision = APS_PREC_BF16;
    fx_stage_time(&m, &c, &t, &s, 0, &b);
    assert_true(b.comp_fwd > q.comp_fwd);
    ASSERT_REL(on.comp_fwd, 0.5 * (q.comp_fwd + b.comp_fwd), 1e-12);
    ASSERT_REL(on.comp_bwd, 0.5 * (q.comp_bwd + b.comp_bwd), 1e-12);
    ASSERT_REL(on.wgrad, 0.5 * (q.wgrad + b.wgrad), 1e-12);
}

/* Refusals: the counts without the bool, a negative count, the setting
 * off Megatron; under fp8 a count above num_layers // pp filters the
 * strategy (Megatron's check), under nvfp4 it does not. */
static void test_bf16_layers_refusals(void **state)
{
    (void)state;
    char err[APS_REASON_LEN] = "";
    aps_training t;
    fx_bf16_training(&t, APS_PREC_FP8, false);
    t.num_layers_at_end_in_bf16 = 2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.num_layers_at_end_in_bf16 = 2: acts with "
                    "first_last_layers_bf16 only");
    t.first_last_layers_bf16 = true;
    t.num_layers_at_start_in_bf16 = -2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.num_layers_at_start_in_bf16: must be in [0, "
                    "2^20] layers (got -2)");
    t.num_layers_at_start_in_bf16 = 0;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    t.framework = APS_FW_FSDP2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.first_last_layers_bf16: a Megatron-Core "
                    "setting (framework megatron; got fsdp2)");
    aps_model m;
    fx_tiny(&m);
    fx_bf16_training(&t, APS_PREC_FP8, true);
    t.num_layers_at_end_in_bf16 = 3; /* above 4 // 2 */
    aps_strategy s;
    fx_strategy(&s, 2);
    char msg[APS_REASON_LEN] = "";
    assert_int_equal(aps_check_pp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_PP_PARTITION);
    ASSERT_HAS(msg, "num_layers_at_end_in_bf16 (3) must be between 0 and "
                    "number of layers per pipeline stage (2)");
    t.num_layers_at_end_in_bf16 = 2;
    assert_int_equal(aps_check_pp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.num_layers_at_end_in_bf16 = 3;
    t.precision = APS_PREC_NVFP4; /* Megatron's check is under fp8 only */
    assert_int_equal(aps_check_pp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
}

/* The split of a rank's layers, virtual stages included: pp 2 x vpp 2 of
 * 8 layers puts chunks 0-1 and 4-5 on rank 0, 2-3 and 6-7 on rank 1;
 * start 1, end 2 (layers 0, 6, 7) leaves rank 0 one bf16 layer, rank 1
 * two.  In bf16 training nothing is split off. */
static void test_bf16_layers_split(void **state)
{
    (void)state;
    aps_model m;
    fx_llama(&m, "tiny-8", 8, 4096, 32, 8, 14336, 128256);
    fx_validate(&m);
    aps_training t;
    fx_bf16_training(&t, APS_PREC_MXFP8, true);
    t.num_layers_at_end_in_bf16 = 2;
    aps_strategy s;
    fx_strategy(&s, 2);
    s.vpp_degree = 2;
    char msg[APS_REASON_LEN];
    aps_layout lay;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_layer_spans bf16, quant;
    aps_bf16_rank_split(&m, &t, &lay, 0, &bf16, &quant);
    assert_int_equal(bf16.layers, 1);
    assert_int_equal(bf16.start[0], 0);
    assert_int_equal(quant.layers, 3);
    aps_bf16_rank_split(&m, &t, &lay, 1, &bf16, &quant);
    assert_int_equal(bf16.layers, 2);
    assert_int_equal(bf16.start[0], 6);
    assert_int_equal(bf16.len[0], 2);
    assert_int_equal(quant.layers, 2);
    t.precision = APS_PREC_BF16;
    aps_bf16_rank_split(&m, &t, &lay, 1, &bf16, &quant);
    assert_int_equal(bf16.layers, 0);
    assert_int_equal(quant.layers, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_layers_gemm_pp1),
        cmocka_unit_test(test_bf16_layers_gemm_pp2),
        cmocka_unit_test(test_bf16_layers_activations),
        cmocka_unit_test(test_bf16_layers_hybrid_kind),
        cmocka_unit_test(test_bf16_layers_moe_mean),
        cmocka_unit_test(test_bf16_layers_refusals),
        cmocka_unit_test(test_bf16_layers_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
