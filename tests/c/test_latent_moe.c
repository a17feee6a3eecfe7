/*
 * test_latent_moe.c -- src/core/moe.c: latent MoE (moe_latent_size).
 *
 * Nemotron 3 Super (tests/c/fixtures.h fx_nemotron3_super): h 4096, 512
 * experts of 2688 (squared ReLU: up and down, no gate) at the latent width
 * l = 1024, top 22, a shared expert of 5376, the dense FFN the MoE block
 * replaces of 2688 (intermediate_size).  Megatron-LM @ d98e8a64:
 * moe_layer.py l.265-304 (fc1_latent_proj h x l, fc2_latent_proj l x h,
 * duplicated over TP), experts.py l.219-242 (each expert l -> f_e -> l),
 * mlp.py l.215-243 (the shared expert at h), moe_layer.py l.488-493 (the
 * projection before the dispatch: l-wide tokens travel), training.py
 * l.847-858 (FLOPs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

/** One MoE layer on a rank of EP 8, TP 1, the all-to-all dispatcher, a
 *  balanced load, 4096 tokens. */
static void latent_setup(aps_model *m, aps_cluster *c, aps_training *t,
                         aps_strategy *s)
{
    fx_nemotron3_super(m);
    fx_h100(c, 8);
    fx_training(t, 8, 4096);
    t->moe_load_imbalance = 1.0;
    aps_strategy_defaults(s);
    s->dp_degree = 8;
    s->ep_degree = 8;
    s->moe_token_dispatcher = APS_MOE_ALLTOALL;
}

/* Parameters of one MoE layer on one rank:
 *   experts: 512 / 8 = 64 local, each 2 x 1024 x 2688 = 5,505,024 ->
 *     352,321,536 (at h they would be 4x: 1,409,286,144);
 *   non-expert: router 512 x 4096 = 2,097,152 + expert bias 512, shared
 *     expert 2 x 4096 x 5376 = 44,040,192, latent projections 2 x 4096 x
 *     1024 = 8,388,608 (whole on every TP rank), minus the dense FFN the
 *     block replaces 2 x 4096 x 2688 = 22,020,096 -> 32,506,368; its
 *     matrices without the 512 bias -> 32,505,856. */
static void test_latent_params(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    latent_setup(&m, &c, &t, &s);
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.expert_params, 352321536.0);
    ASSERT_DBL_EXACT(mc.dense_params, 32506368.0);
    ASSERT_DBL_EXACT(mc.dense_matmul_params, 32505856.0);
    ASSERT_DBL_EXACT(aps_moe_latent_params(&m), 8388608.0);
    ASSERT_DBL_EXACT(aps_moe_expert_params(&m), 5505024.0);
    /* TP 2 (sequence parallel): the latent projections stay whole, the
     * shared expert and the dense FFN halve */
    s.tp_degree = 2;
    s.sequence_parallel = true;
    s.dp_degree = 4;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.dense_params,
                     2097152.0 + 512.0 + 44040192.0 / 2 + 8388608.0 -
                         22020096.0 / 2);
}

/* Dispatch buffers, all-to-all over EP 8 (send and receive, one token
 * copy per routed expert): 2 x (2 B x l x 4096 tokens x 22) = 2 x
 * 184,549,376 = 369,098,752 bytes at l = 1024; without the latent
 * projections the tokens travel h = 4096 wide, 4x the bytes. */
static void test_latent_dispatch_bytes(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    latent_setup(&m, &c, &t, &s);
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.ep_buffer, 369098752.0);
    double latent_fwd = mc.ep_fwd;
    m.moe_latent_size = 0;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.ep_buffer, 4.0 * 369098752.0);
    assert_true(mc.ep_fwd > latent_fwd);
}

/* Model FLOPs per token of one MoE layer over the dense FFN (training.py
 * l.852-858): 2 x [2 l f_e k + 2 h (f_s - f) + 2 h l] = 2 x (121,110,528
 * + 22,020,096 + 8,388,608) = 303,038,464. */
static void test_latent_flops(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_super(&m);
    ASSERT_DBL_EXACT(aps_moe_ffn_flops_delta(&m, 1.0), 303038464.0);
    ASSERT_DBL_EXACT(aps_moe_expert_width(&m), 1024.0);
}

/* Bad input: the latent width needs experts (arguments.py l.1982) and is
 * > 0 (l.1981); Megatron-LM only, and not with the shared-expert overlap
 * its training forward raises on (moe_layer.py l.476-481). */
static void test_latent_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model d;
    fx_llama31_8b(&d);
    d.moe_latent_size = 1024;
    assert_int_equal(aps_model_validate(&d, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.moe_latent_size: given without num_experts");
    aps_model m;
    fx_nemotron3_super(&m);
    m.moe_latent_size = -1;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.moe_latent_size: must be 0 (none) or in "
                    "[1, 2^24] (got -1)");

    /* a transformer with latent experts: priced for Megatron-LM only */
    fx_llama31_8b(&d);
    d.num_experts = 8;
    d.experts_per_token = 2;
    d.moe_ffn_hidden_size = 1024;
    d.moe_latent_size = 1024;
    fx_validate(&d);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    char msg[APS_REASON_LEN];
    ASSERT_REASON(aps_check_all(&d, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    t.moe_shared_expert_overlap = true;
    ASSERT_REASON(aps_check_all(&d, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "Shared expert overlap with MoE latent projections");
    t.moe_shared_expert_overlap = false;
    t.framework = APS_FW_FSDP2;
    ASSERT_REASON(aps_check_all(&d, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "latent MoE is priced for Megatron-LM (--moe-latent-size) "
                    "and NeMo AutoModel only");
    /* and before any strategy: one refusal, exit 2, not every candidate's
     * reason (a breaker's finding) */
    assert_int_equal(aps_inputs_validate(&d, &c, &t, err, sizeof err),
                     APS_EINVAL);
    ASSERT_HAS(err, "latent MoE is priced for Megatron-LM (--moe-latent-size) "
                    "and NeMo AutoModel only");
    /* NeMo AutoModel builds the same projections (MoEConfig.
     * moe_latent_size, components/moe/layers.py @ 36044ad3) */
    t.framework = APS_FW_AUTOMODEL;
    assert_int_equal(aps_moe_check_latent(&d, &t, err, sizeof err),
                     APS_REASON_NONE);
    t.framework = APS_FW_MEGATRON;
    assert_int_equal(aps_inputs_validate(&d, &c, &t, err, sizeof err), APS_OK);

    /* a hybrid model trained with MTP depths needs their layers */
    fx_nemotron3_super(&m);
    m.mtp_layer_pattern[0] = '\0';
    m.mtp_layers = 0;
    fx_validate(&m);
    t.mtp_num_layers = 2;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_ENOTIMPL);
    ASSERT_HAS(err, "a hybrid model's MTP depth needs its layers");
    t.mtp_num_layers = 0;
}

/* The expert and non-expert parameters a rank holds: per MoE layer it
 * holds weights of (test_latent_params: 352,321,536 expert and 32,506,368
 * non-expert at EP 8).  Two MTP depths "*E" of Nemotron 3 Super run 42
 * MoE layers; with --mtp-use-repeated-layer the rank holds 41. */
static void test_latent_repeated_mtp_experts(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    latent_setup(&m, &c, &t, &s);
    t.mtp_num_layers = 2;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_DBL_EXACT(e.stages[0].expert_params, 42.0 * 352321536.0);
    t.mtp_repeated_layer = true;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_DBL_EXACT(e.stages[0].expert_params, 41.0 * 352321536.0);
    char err[256];
    t.mtp_num_layers = 0;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.mtp_repeated_layer: given without "
                    "mtp_num_layers");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latent_params),
        cmocka_unit_test(test_latent_dispatch_bytes),
        cmocka_unit_test(test_latent_flops),
        cmocka_unit_test(test_latent_validation),
        cmocka_unit_test(test_latent_repeated_mtp_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
