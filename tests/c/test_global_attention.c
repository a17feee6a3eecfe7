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
        out->global_num_attention_heads = 0;
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

/* Asserts that m's mean-layer times, activations and FLOPs are each
 * kind's by its share of the layers, wl of the windowed model's and wg of
 * the full model's (TP 4 with SP, DP 2, 8 x 4096 tokens on one H100
 * host). */
static void assert_costs_by_share(const aps_model *m, double wl, double wg)
{
    aps_model local, full;
    uniform(m, false, &local);
    uniform(m, true, &full);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 4;
    s.sequence_parallel = true;
    s.dp_degree = 2;
    aps_layer_cost two = {0}, a = {0}, b = {0};
    aps_layer_times(m, &c, &t, &s, NULL, &two);
    aps_layer_times(&local, &c, &t, &s, NULL, &a);
    aps_layer_times(&full, &c, &t, &s, NULL, &b);
    ASSERT_REL(two.gemm_fwd, wl * a.gemm_fwd + wg * b.gemm_fwd, 1e-12);
    ASSERT_REL(two.attn_fwd, wl * a.attn_fwd + wg * b.attn_fwd, 1e-12);
    ASSERT_REL(two.membound_fwd, wl * a.membound_fwd + wg * b.membound_fwd,
               1e-12);
    aps_layer_activations(m, &t, &s, NULL, &two);
    aps_layer_activations(&local, &t, &s, NULL, &a);
    aps_layer_activations(&full, &t, &s, NULL, &b);
    ASSERT_REL(two.act_full, wl * a.act_full + wg * b.act_full, 1e-12);
    /* model FLOPs: the layers' matrices and attention cores by kind, the
     * output layer once */
    double fm = aps_flops_per_step(m, &t, &s, true, false);
    double fl = aps_flops_per_step(&local, &t, &s, true, false);
    double fg = aps_flops_per_step(&full, &t, &s, true, false);
    ASSERT_REL(fm, wl * fl + wg * fg, 1e-12);
}

/* The mean layer's times, activations and FLOPs are each kind's by its
 * share of the layers: 50/60 of the windowed model's and 10/60 of the
 * full model's. */
static void test_global_attention_costs_by_share(void **state)
{
    (void)state;
    aps_model m;
    fx_gemma4_31b(&m);
    assert_costs_by_share(&m, 50.0 / 60.0, 10.0 / 60.0);
}

/* Laguna XS.2's attention (transformers models/laguna/modeling_laguna.py
 * @ 0205eec1 LagunaAttention) on a dense model of its widths: h 2048, 40
 * layers, 30 windowed (512 tokens) with 64 query heads, 10 full with 48
 * (global_num_attention_heads), 8 KV heads of 128, per-head Q/K norms,
 * g_proj h x a (attention_head_gate), SwiGLU 8192, untied vocabulary
 * 100352.  Hand counts: windowed attention 2048 x 64 x 128 (q) + 2 x
 * 2048 x 8 x 128 (k, v) + 64 x 128 x 2048 (o) + 2048 x 64 (g) + 2 x 128
 * = 37,880,064; full 29,458,688 (48 heads); MLP 3 x 2048 x 8192 =
 * 50,331,648; norms 2 x 2048 -> 30 x 88,215,808 + 10 x 79,794,432 +
 * 2 x 100352 x 2048 + 2048 = 3,855,462,400. */
static void fx_laguna_dense(aps_model *m)
{
    fx_llama(m, "laguna-dense", 40, 2048, 64, 8, 8192, 100352);
    m->head_dim = 128;
    m->tie_word_embeddings = false;
    m->qk_norm = true;
    m->sliding_window = 512;
    m->sliding_window_layers = 30;
    m->global_num_attention_heads = 48;
    m->attention_head_gate = true;
    fx_validate(m);
}

static void test_query_heads_per_kind(void **state)
{
    (void)state;
    aps_model m, local;
    fx_laguna_dense(&m);
    aps_attn_kind k[APS_ATTN_KINDS];
    assert_int_equal(aps_attn_kinds(&m, k), 2);
    ASSERT_DBL_EXACT(k[0].a, 64.0);
    ASSERT_DBL_EXACT(k[1].a, 48.0);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, 3855462400.0);
    ASSERT_DBL_EXACT(pc.layers, 30.0 * 88215808.0 + 10.0 * 79794432.0);
    /* the mean layer's costs are each kind's by its share */
    assert_costs_by_share(&m, 30.0 / 40.0, 10.0 / 40.0);
    uniform(&m, false, &local);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 4;
    s.sequence_parallel = true;
    /* the gate: g_proj h x a more weights and the gate's saved input and
     * context, T a (d + 1) bytes of bf16 per layer (T = 4096 tokens of a
     * micro-batch, a / t = 16 heads on a rank of the windowed model) */
    aps_model nog = local;
    nog.attention_head_gate = false;
    aps_param_counts pg, pn;
    aps_model_param_counts(&local, &pg);
    aps_model_param_counts(&nog, &pn);
    ASSERT_DBL_EXACT(pg.total - pn.total, 40.0 * 2048.0 * 64.0);
    aps_layer_cost gc = {0}, nc = {0};
    aps_layer_activations(&local, &t, &s, NULL, &gc);
    aps_layer_activations(&nog, &t, &s, NULL, &nc);
    ASSERT_REL(gc.act_full - nc.act_full, 2.0 * 4096.0 * 16.0 * 129.0, 1e-12);
    /* the KV heads must divide each kind's query heads (and so TP, which
     * must divide the KV heads, divides both) */
    aps_model bad = m;
    bad.global_num_attention_heads = 44;
    char err[256];
    assert_int_equal(aps_model_validate(&bad, err, sizeof err), APS_EINVAL);
    assert_string_equal(err, "model.num_query_groups: 8 does not divide "
                             "global_num_attention_heads 44");
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
    /* the full layers' 4 KV heads at TP 8: Megatron-Core replicates them
     * (attention.py l.353-379 @ d98e8a64); TorchTitan needs TP to divide
     * them too */
    fx_gemma4_31b(&m);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    char msg[APS_REASON_LEN] = "";
    assert_int_equal(aps_check_tp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.framework = APS_FW_FSDP2;
    assert_int_equal(aps_check_tp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_TP_DIVISIBILITY);
    assert_non_null(strstr(msg, "global_num_query_groups = 4"));
    /* 3 of them at TP 2: neither multiple nor divisor */
    t.framework = APS_FW_MEGATRON;
    m.global_num_query_groups = 3;
    m.global_num_attention_heads = 24;
    s.tp_degree = 2;
    assert_int_equal(aps_check_tp(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_TP_DIVISIBILITY);
    assert_non_null(strstr(msg, "global_num_query_groups = 3 is neither"));
}

/*
 * V heads narrower than Q/K's and sinks on the windowed layers only
 * (attn_v_head_dim, window_attention_sinks): XiaomiMiMo/MiMo-V2-Flash as
 * vLLM builds it (vllm/model_executor/models/mimo_v2_flash.py @
 * 01ed47b4): h 4096, 48 layers, 39 windowed (128 tokens) with 8 KV heads
 * and a sink per query head, 9 full with 4 KV heads; 64 query heads of
 * 192, V heads of 128; layer 0 a dense MLP of 16384, the 47 others 256
 * experts of 2048 (top 8) with a router h x E and its score bias E;
 * vocab 152576 untied.  Hand counts:
 *   windowed attention: q 4096 x 12288 = 50,331,648, k 4096 x 1536 =
 *     6,291,456, v 4096 x 1024 = 4,194,304, o 8192 x 4096 = 33,554,432,
 *     sinks 64 -> 94,371,904;
 *   full attention: q 50,331,648, k 3,145,728, v 2,097,152, o
 *     33,554,432 -> 89,128,960;
 *   dense MLP 3 x 4096 x 16384 = 201,326,592; an MoE block 256 x 3 x
 *     4096 x 2048 + 4096 x 256 + 256 = 6,443,499,776 (active: 8 experts,
 *     202,375,424); norms 2 x 4096 per layer;
 *   39 x 94,371,904 + 9 x 89,128,960 + 201,326,592 + 47 x 6,443,499,776
 *     + 48 x 8192 = 307,528,874,176 layers; embedding and output layer
 *     152576 x 4096 = 624,951,296 each; final norm 4096
 *   -> 308,778,780,864 total, 15,445,936,320 active (the card's 309B and
 *   15B).
 */
#define MIMO_V2_TOTAL 308778780864.0
#define MIMO_V2_ACTIVE 15445936320.0

static void fx_mimo_v2_flash(aps_model *m)
{
    fx_llama(m, "mimo-v2-flash", 48, 4096, 64, 8, 16384, 152576);
    m->head_dim = 192;
    m->attn_v_head_dim = 128;
    m->sliding_window = 128;
    m->sliding_window_layers = 39;
    m->global_num_query_groups = 4;
    m->attention_sinks = true;
    m->window_attention_sinks = true;
    m->num_experts = 256;
    m->experts_per_token = 8;
    m->moe_ffn_hidden_size = 2048;
    m->moe_router_bias = true;
    m->moe_first_dense_layers = 1;
    fx_validate(m);
}

static void test_v_width_params_mimo_v2_flash(void **state)
{
    (void)state;
    aps_model m;
    fx_mimo_v2_flash(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, MIMO_V2_TOTAL);
    ASSERT_DBL_EXACT(pc.active, MIMO_V2_ACTIVE);
    ASSERT_DBL_EXACT(pc.layers, 307528874176.0);
    aps_attn_kind k[APS_ATTN_KINDS];
    assert_int_equal(aps_attn_kinds(&m, k), 2);
    ASSERT_DBL_EXACT(k[0].dv, 128.0);
    ASSERT_DBL_EXACT(k[1].dv, 128.0);
    ASSERT_DBL_EXACT(k[0].sinks, 1.0);
    ASSERT_DBL_EXACT(k[1].sinks, 0.0);
}

/* A dense model with V heads of dv beside Q/K heads of d: the attention
 * core's FLOPs (QK^T d wide, PV dv wide) are (d + dv) / 2d of the model
 * with V as wide as Q/K, each layer's weights h k (d - dv) + a (d - dv) h
 * fewer, its activations and model FLOPs fewer too. */
static void test_v_width_costs(void **state)
{
    (void)state;
    aps_model m, same;
    fx_llama(&m, "v-width", 8, 4096, 64, 8, 16384, 32000);
    m.head_dim = 192;
    same = m;
    m.attn_v_head_dim = 128;
    fx_validate(&m);
    fx_validate(&same);
    aps_param_counts pm, ps;
    aps_model_param_counts(&m, &pm);
    aps_model_param_counts(&same, &ps);
    ASSERT_DBL_EXACT(ps.total - pm.total,
                     8.0 * (4096.0 * 8 * 64 + 64.0 * 64 * 4096));
    aps_cluster c;
    fx_h100(&c, 1);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    aps_layer_cost a = {0}, b = {0};
    aps_layer_times(&m, &c, &t, &s, NULL, &a);
    aps_layer_times(&same, &c, &t, &s, NULL, &b);
    ASSERT_REL(a.attn_fwd, b.attn_fwd * (192.0 + 128.0) / 384.0, 1e-12);
    assert_true(a.gemm_fwd < b.gemm_fwd);
    aps_layer_activations(&m, &t, &s, NULL, &a);
    aps_layer_activations(&same, &t, &s, NULL, &b);
    assert_true(a.act_full < b.act_full);
    assert_true(aps_flops_per_step(&m, &t, &s, true, false) <
                aps_flops_per_step(&same, &t, &s, true, false));
}

static void test_v_width_validate(void **state)
{
    (void)state;
    aps_model m;
    char err[256] = "";
    fx_mimo_v2_flash(&m);
    m.attn_v_head_dim = -1;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.attn_v_head_dim: must be >= 1 (got -1)");
    fx_mimo_v2_flash(&m);
    m.attention_sinks = false;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.window_attention_sinks: needs attention_sinks");
    fx_mimo_v2_flash(&m);
    m.global_num_query_groups = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "a global attention shape");
    fx_llama(&m, "v-width", 8, 4096, 64, 8, 16384, 32000);
    m.head_dim = 192;
    m.attn_v_head_dim = 128;
    m.attention_output_gate = true;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.attention_output_gate: given with attn_v_head_dim");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_attention_kinds),
        cmocka_unit_test(test_global_attention_params_gemma4_31b),
        cmocka_unit_test(test_global_attention_costs_by_share),
        cmocka_unit_test(test_global_attention_validate_and_tp),
        cmocka_unit_test(test_query_heads_per_kind),
        cmocka_unit_test(test_v_width_params_mimo_v2_flash),
        cmocka_unit_test(test_v_width_costs),
        cmocka_unit_test(test_v_width_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
