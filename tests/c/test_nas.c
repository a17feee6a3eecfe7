/*
 * test_nas.c -- src/core/nas.c: heterogeneous layers (Llama-Nemotron NAS).
 *
 * A 4-layer Llama 3.1 8B shape (h 4096, 32 heads of 128, 8 KV heads,
 * vocab 128256, untied) made heterogeneous: attention on layers 1, 3, 4
 * ("A-AA"), MLPs of 14336, 7168, none, 14336 ("ab-a", widths
 * "14336,7168").  Hand counts (Megatron-Core heterogeneous_layer_specs.py
 * @ d98e8a64: a no-op block has no norm):
 *   attention block q, o 4096^2 each, k, v 4096 x 1024 each: 41,943,040
 *   MLP 3 x 4096 x f: 176,160,768 (14336), 88,080,384 (7168)
 *   norms: 3 attention + 3 MLP blocks, 6 x 4096
 *   layers 3 x 41,943,040 + 2 x 176,160,768 + 88,080,384 + 24,576
 *        = 566,255,616
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

static void fx_nas(aps_model *m)
{
    fx_llama31_8b(m);
    m->num_layers = 4;
    snprintf(m->nas_attention_pattern, sizeof m->nas_attention_pattern, "A-AA");
    snprintf(m->nas_ffn_pattern, sizeof m->nas_ffn_pattern, "ab-a");
    snprintf(m->nas_ffn_widths, sizeof m->nas_ffn_widths, "14336,7168");
    fx_validate(m);
}

static void test_nas_counts(void **state)
{
    (void)state;
    aps_model m;
    fx_nas(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.layers, 566255616.0);
    /* the mean layer: 3 / 4 attention, MLP widths 35,840 / (4 x 14336),
     * 6 / 4 blocks */
    aps_hybrid_counts w;
    aps_hybrid_mix(&m, &w);
    assert_int_equal(w.attn, 3);
    assert_int_equal(w.mlp, 3);
    ASSERT_DBL_EXACT(w.attn_share, 0.75);
    ASSERT_DBL_EXACT(w.mlp_share, 35840.0 / (4.0 * 14336.0));
    ASSERT_DBL_EXACT(w.blocks, 1.5);
    ASSERT_DBL_EXACT(aps_nas_mlp_blocks(&w), 0.75);
    /* the mean layer's parameters times 4 are the layers' */
    ASSERT_REL(4.0 * aps_layer_params_tp(&m, 1), 566255616.0, 1e-15);
    /* layers 2-3 alone ("-A", "b-"): 1 attention, 1 MLP of 7168 */
    aps_hybrid_counts part = {0};
    double sum = 0.0;
    aps_nas_count(&m, 1, 2, &part, &sum);
    assert_int_equal(part.attn, 1);
    assert_int_equal(part.mlp, 1);
    ASSERT_DBL_EXACT(sum, 7168.0);
}

/* The FSDP unit of each pipeline rank is its own largest layer: PP 2 puts
 * layers 1-2 ("A-", "ab") and 3-4 ("AA", "-a") on the ranks; rank 0's
 * largest is layer 1 (attention 41,943,040 + MLP 176,160,768 + 2 norms),
 * rank 1's layer 4 the same; with layer 1's MLP 7168 wide ("bb-a")
 * rank 0's is layer 1 at 41,943,040 + 88,080,384 + 2 norms. */
static void test_nas_largest_layer(void **state)
{
    (void)state;
    char msg[256];
    aps_model m;
    fx_nas(&m);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    aps_layout lay;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 0),
                     41943040.0 + 176160768.0 + 2.0 * 4096.0);
    m.nas_ffn_pattern[0] = 'b';
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 0),
                     41943040.0 + 88080384.0 + 2.0 * 4096.0);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 1),
                     41943040.0 + 176160768.0 + 2.0 * 4096.0);
    /* TP 4 divides 14336 and 7168; a width it does not is refused */
    snprintf(m.nas_ffn_widths, sizeof m.nas_ffn_widths, "14336,7170");
    s.pp_degree = 1;
    s.tp_degree = 4;
    assert_int_equal(aps_check_tp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_TP_DIVISIBILITY);
    ASSERT_HAS(msg, "nas_ffn_widths: 7170 is not divisible by tp_degree = 4");
}

static void test_nas_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_nas(&m);
    m.nas_ffn_pattern[1] = 'c';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.nas_ffn_pattern: letter 2 is 'c'");
    fx_nas(&m);
    m.nas_attention_pattern[3] = '\0';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "needs one letter per layer, num_layers = 4 (got 3)");
    fx_nas(&m);
    m.ffn_hidden_size = 7168;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.ffn_hidden_size: with nas_ffn_widths it is the "
                    "widest, 14336 (got 7168)");
    fx_nas(&m);
    snprintf(m.nas_ffn_widths, sizeof m.nas_ffn_widths, "14336,x");
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.nas_ffn_widths: expected up to 26 positive");
    /* digits and commas only: a trailing comma, a space, a sign refused */
    const char *bad[] = {"14336,7168,", "14336, 7168", "+14336,7168", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fx_nas(&m);
        snprintf(m.nas_ffn_widths, sizeof m.nas_ffn_widths, "%s", bad[i]);
        assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    }
    fx_nas(&m);
    snprintf(m.nas_attention_pattern, sizeof m.nas_attention_pattern, "----");
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "no layer has attention");
    fx_nas(&m);
    m.mlp = APS_MLP_GELU;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "SwiGLU without biases");
}

/* Megatron-LM builds them (--heterogeneous-layers-config-path); the
 * others are refused with the reason. */
static void test_nas_refusal(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    assert_null(aps_nas_refusal(&t, &s, &code));
    s.vpp_degree = 2; /* Megatron builds them without vp_stage */
    ASSERT_HAS(aps_nas_refusal(&t, &s, &code), "without virtual pipeline");
    assert_int_equal(code, APS_REASON_FRAMEWORK_UNSUPPORTED);
    t.framework = APS_FW_FSDP2;
    ASSERT_HAS(aps_nas_refusal(&t, &s, &code), "priced for Megatron-LM only");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nas_counts),
        cmocka_unit_test(test_nas_largest_layer),
        cmocka_unit_test(test_nas_validation),
        cmocka_unit_test(test_nas_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
