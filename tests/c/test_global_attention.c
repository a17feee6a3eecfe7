/*
 * test_global_attention.c -- a second attention shape on the layers
 * without the window (global_head_dim, global_num_query_groups,
 * global_k_eq_v: Gemma 4's full-attention layers, transformers
 * models/gemma4/modeling_gemma4.py @ c308a309 Gemma4TextAttention),
 * priced kind by kind (src/core/model.c aps_attn_kinds).
 *
 * google/gemma-4-31B (its text_config): h 5376, 60 layers, every 6th full
 * attention (10), the others a 1024-token window (50); 32 query heads;
 * windowed layers 16 KV heads of 256, full layers 4 KV heads of 512 with
 * V taken from K's projection (attention_k_eq_v); MLP 21504 (GeGLU, 3
 * matrices), 4 RMSNorms per layer, per-head q_norm and k_norm, vocab
 * 262144 tied.  Hand counts:
 *   windowed attention: q 5376 x 8192 = 44,040,192, k and v 5376 x 4096 =
 *     22,020,096 each, o 44,040,192, q_norm + k_norm 2 x 256
 *     -> 132,121,088;
 *   full attention: q 5376 x 16384 = 88,080,384, k 5376 x 2048 =
 *     11,010,048, no v, o 88,080,384, norms 2 x 512 -> 187,171,840;
 *   MLP 3 x 5376 x 21504 = 346,816,512; norms 4 x 5376 = 21,504;
 *   50 x 478,959,104 + 10 x 534,009,856 = 29,288,053,760 layers;
 *   embedding 262144 x 5376 = 1,409,286,144; final norm 5376
 *   -> 30,697,345,280 (the model card's 30.7B).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

#define GEMMA4_31B_TOTAL 30697345280.0
#define GEMMA4_31B_WINDOWED_ATTN 132121088.0
#define GEMMA4_31B_FULL_ATTN 187171840.0

static void fx_gemma4_31b(aps_model *m)
{
    fx_llama(m, "gemma-4-31b", 60, 5376, 32, 16, 21504, 262144);
    m->head_dim = 256;
    m->norms_per_layer = 4;
    m->tie_word_embeddings = true;
    m->qk_norm = true;
    m->glu_activation = APS_GLU_GELU_TANH;
    m->sliding_window = 1024;
    m->sliding_window_layers = 50;
    m->sliding_window_period = 6;
    m->global_head_dim = 512;
    m->global_num_query_groups = 4;
    m->global_k_eq_v = true;
    fx_validate(m);
}

/* The same model with every layer of one kind: the windowed layers'
 * shape everywhere, or (no window) the full layers' everywhere. */
static void uniform(const aps_model *m, bool full, aps_model *out)
{
    *out = *m;
    if (full) {
        out->sliding_window = 0;
        out->sliding_window_layers = 0;
        out->sliding_window_period = 0;
    } else {
        out->sliding_window_layers = out->num_layers;
        out->sliding_window_period = 0;
        out->global_head_dim = 0;
        out->global_num_query_groups = 0;
        out->global_k_eq_v = false;
    }
    fx_validate(out);
}

static void test_global_attention_kinds(void **state)
{
    (void)state;
    aps_model m;
    fx_gemma4_31b(&m);
    aps_attn_kind k[APS_ATTN_KINDS];
    assert_int_equal(aps_attn_kinds(&m, k), 2);
    ASSERT_DBL_EXACT(k[0].layers, 50.0);
    ASSERT_DBL_EXACT(k[0].k, 16.0);
    ASSERT_DBL_EXACT(k[0].d, 256.0);
    ASSERT_DBL_EXACT(k[0].v, 1.0);
    ASSERT_DBL_EXACT(k[1].layers, 10.0);
    ASSERT_DBL_EXACT(k[1].k, 4.0);
    ASSERT_DBL_EXACT(k[1].d, 512.0);
    ASSERT_DBL_EXACT(k[1].v, 0.0);
    /* keys per query at S = 4096: the window's w - w^2 / (2 S) = 896, the
     * full layers' S / 2 = 2048 */
    ASSERT_DBL_EXACT(aps_attn_kind_keys(&m, &k[0], 4096.0, true), 896.0);
    ASSERT_DBL_EXACT(aps_attn_kind_keys(&m, &k[1], 4096.0, true), 2048.0);
    ASSERT_DBL_EXACT(aps_attn_kind_keys(&m, &k[1], 4096.0, false), 4096.0);
}

static void test_global_attention_params_gemma4_31b(void **state)
{
    (void)state;
    aps_model m;
    fx_gemma4_31b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, GEMMA4_31B_TOTAL);
    ASSERT_DBL_EXACT(pc.active, GEMMA4_31B_TOTAL);
    ASSERT_DBL_EXACT(pc.layers, 50.0 * (GEMMA4_31B_WINDOWED_ATTN + 346838016.0) +
                                    10.0 * (GEMMA4_31B_FULL_ATTN + 346838016.0));
    /* the FSDP unit is the largest layer, a full-attention one */
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_layout lay;
    char msg[APS_REASON_LEN] = "";
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 0),
                     GEMMA4_31B_FULL_ATTN + 346838016.0);
}

/* The mean layer's times, activations and FLOPs are each kind's by its
 * share of the layers: 50/60 of the windowed model's and 10/60 of the
 * full model's. */
static void test_global_attention_costs_by_share(void **state)
{
    (void)state;
    aps_model m, local, full;
    fx_gemma4_31b(&m);
    uniform(&m, false, &local);
    uniform(&m, true, &full);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 4;
    s.sequence_parallel = true;
    s.dp_degree = 2;
    const double wl = 50.0 / 60.0, wg = 10.0 / 60.0;
    aps_layer_cost two = {0}, a = {0}, b = {0};
    aps_layer_times(&m, &c, &t, &s, NULL, &two);
    aps_layer_times(&local, &c, &t, &s, NULL, &a);
    aps_layer_times(&full, &c, &t, &s, NULL, &b);
    ASSERT_REL(two.gemm_fwd, wl * a.gemm_fwd + wg * b.gemm_fwd, 1e-12);
    ASSERT_REL(two.attn_fwd, wl * a.attn_fwd + wg * b.attn_fwd, 1e-12);
    ASSERT_REL(two.membound_fwd, wl * a.membound_fwd + wg * b.membound_fwd,
               1e-12);
    aps_layer_activations(&m, &t, &s, NULL, &two);
    aps_layer_activations(&local, &t, &s, NULL, &a);
    aps_layer_activations(&full, &t, &s, NULL, &b);
    ASSERT_REL(two.act_full, wl * a.act_full + wg * b.act_full, 1e-12);
    /* model FLOPs: the layers' matrices and attention cores by kind, the
     * output layer once */
    double fm = aps_flops_per_step(&m, &t, &s, true, false);
    double fl = aps_flops_per_step(&local, &t, &s, true, false);
    double fg = aps_flops_per_step(&full, &t, &s, true, false);
    ASSERT_REL(fm, wl * fl + wg * fg, 1e-12);
}

static void test_global_attention_validate_and_tp(void **state)
{
    (void)state;
    aps_model m;
    char err[256] = "";
    fx_gemma4_31b(&m);
    m.global_num_query_groups = 3;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "model.global_num_query_groups: 3 does not "
                                "divide num_attention_heads 32"));
    fx_gemma4_31b(&m);
    m.sliding_window_layers = 60;
    m.sliding_window_period = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "every layer windowed"));
    fx_gemma4_31b(&m);
    m.attention_chunk_size = 8192;
    m.sliding_window = 0;
    m.sliding_window_layers = 0;
    m.sliding_window_period = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "model.attention_chunk_size: given with a "
                                "global attention shape"));
    /* TP must divide the full layers' 4 KV heads too */
    fx_gemma4_31b(&m);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    char msg[APS_REASON_LEN] = "";
    assert_int_equal(aps_check_tp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_TP_DIVISIBILITY);
    assert_non_null(strstr(msg, "global_num_query_groups = 4"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_attention_kinds),
        cmocka_unit_test(test_global_attention_params_gemma4_31b),
        cmocka_unit_test(test_global_attention_costs_by_share),
        cmocka_unit_test(test_global_attention_validate_and_tp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
