/*
 * test_gdn.c -- src/core/gdn.c: Gated DeltaNet layers (Qwen3-Next).
 *
 * Qwen/Qwen3-Next-80B-A3B (examples/models/qwen3-next-80b-a3b.json): h 2048,
 * 48 layers, every 4th gated attention (16 heads of 256, 2 KV heads), the
 * others Gated DeltaNet with nk 16, nv 32, dk = dv = 128 (K 2048, V 4096),
 * conv width 4.  Hand counts of one Gated DeltaNet mixer (transformers
 * Qwen3NextGatedDeltaNet; Megatron GatedDeltaNet @ d98e8a64):
 *   in_proj 2048 x (2*2048 + 2*4096 + 2*32 = 12352) = 25,296,896;
 *   out_proj 4096 x 2048 = 8,388,608 -> matrices 33,685,504;
 *   conv (2*2048 + 4096 = 8192) x 4 = 32,768; dt_bias, A_log 2 x 32;
 *   gated norm 128 -> 33,718,464 (the checkpoint's linear_attn.* tensors).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

static void fx_qwen3_next(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "qwen3-next-80b-a3b");
    m->num_layers = 48;
    m->hidden_size = 2048;
    m->num_attention_heads = 16;
    m->num_query_groups = 2;
    m->head_dim = 256;
    m->ffn_hidden_size = 5120;
    m->vocab_size = 151936;
    m->max_position_embeddings = 262144;
    m->qk_norm = true;
    m->attention_output_gate = true;
    m->norm_zero_centered = true;
    m->rotary_percent = 0.25;
    m->num_experts = 512;
    m->experts_per_token = 10;
    m->moe_ffn_hidden_size = 512;
    m->shared_expert_ffn_hidden_size = 512;
    m->shared_expert_gate = true;
    m->linear_attention_period = 4;
    m->linear_num_key_heads = 16;
    m->linear_num_value_heads = 32;
    m->linear_key_head_dim = 128;
    m->linear_value_head_dim = 128;
    m->linear_conv_kernel_dim = 4;
    fx_validate(m);
}

static void test_gdn_params(void **state)
{
    (void)state;
    aps_model m;
    fx_qwen3_next(&m);
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 12352.0);
    ASSERT_DBL_EXACT(aps_gdn_matmul_params(&m), 33685504.0);
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 1), 33718464.0);
    /* TP 2: all but the replicated 128-wide gated norm split */
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 2), 33718336.0 / 2.0 + 128.0);
    aps_hybrid_counts w;
    aps_hybrid_mix(&m, &w);
    assert_int_equal(w.attn, 12);
    assert_int_equal(w.gdn, 36);
    ASSERT_DBL_EXACT(w.attn_share, 0.25);
    ASSERT_DBL_EXACT(w.gdn_share, 0.75);
    ASSERT_DBL_EXACT(w.mlp_share, 1.0);
    ASSERT_DBL_EXACT(w.blocks, 2.0);
}

/* One Gated DeltaNet layer over T = 4096 tokens, forward FLOPs:
 *   projections 2 T 33,685,504 = 275,951,648,768;
 *   conv 2 T 8192 x 4 = 268,435,456;
 *   chunked delta rule, C = 64, per token and value head (gdn.c): C (3 dk +
 *   2 dv) = 40,960, (C - 1)(2C - 1) / 6 = 1,333.5, 3 dk dv = 49,152 ->
 *   91,445.5 MACs; 2 T 32 x 91,445.5 = 23,971,889,152
 *   -> 300,191,973,376.  (Megatron-LM's gdn_layer_flops, training.py @
 *   d98e8a64, counts the scan as 4 nv dv^2 MACs per token, no intra-chunk
 *   terms: 293,399,953,408 for the layer.)
 * Saved for backward (bf16, TP 1), per token: qkvzba 2 x 12352 = 24,704;
 * conv output 2 x 8192 = 16,384; normalised q, k 2 x 4096 = 8,192; g, beta
 * fp32 4 x 64 = 256; the chunk matrix fp32 4 x 32 x 64 = 8,192; scan
 * output 2 x 4096 = 8,192; out_proj input 2 x 4096 = 8,192 -> 74,112 B,
 * x 4096 = 303,562,752.  State: fp32 32 x 128 x 128 = 2,097,152 B. */
static void test_gdn_layer_cost(void **state)
{
    (void)state;
    aps_model m;
    fx_qwen3_next(&m);
    double T = 4096.0;
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, T), 23971889152.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, T), 300191973376.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, T, 1.0), 303562752.0);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, T, 2.0), 303562752.0 / 2.0);
    ASSERT_DBL_EXACT(aps_gdn_state_bytes(&m), 2097152.0);
}

/* The attention output gate (Qwen3NextAttention q_proj h -> 2 a d; Megatron
 * training.py @ d98e8a64 adds gate_projection_size = a d to the QKV
 * projection's count): Llama-3.1-8B's shape with it, one 8192-token
 * sequence, 3 (forward and backward) x 32 layers x 2 S h a d =
 * 3 x 32 x 2 x 8192 x 4096 x 4096 = 26,388,279,066,624 more FLOPs, and
 * h a d = 16,777,216 more parameters per layer. */
static void test_gdn_attention_output_gate(void **state)
{
    (void)state;
    aps_model m, g;
    fx_llama31_8b(&m);
    g = m;
    g.attention_output_gate = true;
    fx_validate(&g);
    aps_training t;
    fx_training(&t, 1, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_DBL_EXACT(aps_flops_per_step(&g, &t, &s, true, false) -
                         aps_flops_per_step(&m, &t, &s, true, false),
                     26388279066624.0);
    ASSERT_DBL_EXACT(aps_layer_params_tp(&g, 1) - aps_layer_params_tp(&m, 1),
                     16777216.0);
}

/* Bad values: one-line messages naming the field and the value. */
static void test_gdn_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_qwen3_next(&m);
    m.linear_num_value_heads = 24;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_num_value_heads: 24 is not a multiple of "
                    "linear_num_key_heads 16");
    fx_qwen3_next(&m);
    m.linear_key_head_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_key_head_dim: must be in [1, 1048576]");
    fx_qwen3_next(&m);
    m.linear_attention_period = 49;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_attention_period: must be in [1, "
                    "num_layers = 48] (got 49)");
    fx_qwen3_next(&m);
    m.mtp_layers = 1;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "MTP layers");
    aps_model d;
    fx_llama31_8b(&d);
    d.linear_num_key_heads = 16;
    assert_int_equal(aps_model_validate(&d, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_num_key_heads: 16 given without a "
                    "linear_attention_period");
}

/* PP > 1 and CP > 1 are refused with their reasons; TP must divide the
 * delta rule's heads (TransformerConfig's asserts). */
static void test_gdn_refusals(void **state)
{
    (void)state;
    char msg[APS_REASON_LEN];
    aps_model m;
    fx_qwen3_next(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.dp_degree = 4;
    aps_reason r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "pp_degree = 1 only");
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    s.dp_degree = 4;
    r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "all-to-all of heads");
    m.num_query_groups = 8;     /* divisible by tp 8, as the heads are */
    m.linear_num_key_heads = 4; /* 32 % 4 = 0, but tp 8 */
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    r = aps_check_tp(&m, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_TP_DIVISIBILITY, msg);
    ASSERT_HAS(msg, "linear_num_key_heads = 4 is not divisible by "
                    "tp_degree = 8");
}

/* fp8 (per-tensor, TransformerEngine: an unfused cast 4 B per element,
 * one fused into its producer 3 B): the Gated DeltaNet mixer's in_proj
 * (a TELayerNormColumnParallelLinear, its input cast by the norm) and
 * out_proj (its input from the gated norm, unfused) are quantized as the
 * attention's QKV and output projection.  Per token, T = 4096, TP 1:
 *   attention (QKV with the output gate (2 x 16 + 2 x 2) 256 = 9216
 *     columns, out-proj 16 x 256 = 4096): fwd 3 h + 4 x 4096 = 22,528,
 *     bwd 4 (9216 + h) = 45,056
 *   MLP (SwiGLU, f 5120): fwd 3 h + 3 f = 21,504, bwd 4 h + 3 x 2 f =
 *     38,912
 *   Gated DeltaNet (in_proj 2 x 2048 + 2 x 4096 + 2 x 32 = 12,352, V =
 *     4096): fwd 3 h + 4 V = 22,528, bwd 4 (12,352 + h) = 57,600
 * mean layer (12 attention, 36 GDN of 48; MLP on every layer): fwd 44,032,
 * bwd 11,264 + 38,912 + 43,200 = 93,376; the MoE layers' swap of the
 * dense MLP's casts is moe.c's. */
static void test_gdn_fp8_casts(void **state)
{
    (void)state;
    aps_model m;
    fx_qwen3_next(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    t.precision = APS_PREC_FP8;
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    assert_null(aps_gdn_refusal(&t, &s, &code));
    /* full recompute: refused as what apsearch does not price, not as
     * what Megatron-LM cannot run */
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_non_null(aps_gdn_refusal(&t, &s, &code));
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    s.layer_recompute = APS_RECOMPUTE_NONE;
    aps_layer_cost lc;
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(lc.fp8_cast_fwd * hbm, 4096.0 * 44032.0, 1e-12);
    ASSERT_REL(lc.fp8_cast_bwd * hbm, 4096.0 * 93376.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdn_params),
        cmocka_unit_test(test_gdn_layer_cost),
        cmocka_unit_test(test_gdn_attention_output_gate),
        cmocka_unit_test(test_gdn_validation),
        cmocka_unit_test(test_gdn_refusals),
        cmocka_unit_test(test_gdn_fp8_casts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
