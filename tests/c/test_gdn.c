/*
 * test_gdn.c -- src/core/gdn.c: Gated DeltaNet layers (Qwen3-Next), Kimi
 * Delta Attention (Kimi Linear), LFM2's gated short convolutions and
 * MiniMax's lightning attention.
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
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, T, 4096.0), 23971889152.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, T, 4096.0), 300191973376.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, T, 1.0), 303562752.0);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, T, 2.0), 303562752.0 / 2.0);
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

/* CP > 1 is refused with its reason (PP > 1 and full recompute are
 * priced stage by stage, test_gdn_stage_*); TP must divide the delta
 * rule's heads (TransformerConfig's asserts). */
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
    ASSERT_REASON(r, APS_REASON_NONE, msg);
    s.vpp_degree = 2;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NONE, msg);
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
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
    aps_layer_cost lc;
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(lc.fp8_cast_fwd * hbm, 4096.0 * 44032.0, 1e-12);
    ASSERT_REL(lc.fp8_cast_bwd * hbm, 4096.0 * 93376.0, 1e-12);
}

/* A dense 6-layer Qwen3-Next shape (no experts, every 4th layer gated
 * attention: "GGGAGG", 0-based layer 3 the attention) and an 8-layer one
 * ("GGGAGGGA") for the virtual stages.  Per layer, TP 1: the Gated
 * DeltaNet mixer 33,718,464 (test_gdn_params); the gated attention QKV
 * (2 x 16 + 2 x 2) 256 x 2048 = 18,874,368, out-proj 4096 x 2048 =
 * 8,388,608, Q/K norms 2 x 256 -> 27,263,488; the SwiGLU MLP 3 x 2048 x
 * 5120 = 31,457,280; two RMSNorms 2 x 2048.  So a G layer 65,179,840, an
 * A layer 58,724,864; embedding and output layer 151936 x 2048 =
 * 311,164,928 each (151936 is a multiple of 128), final norm 2048. */
static void fx_gdn_small(aps_model *m, int64_t layers)
{
    fx_qwen3_next(m);
    m->num_layers = layers;
    m->num_experts = 0;
    m->experts_per_token = 0;
    m->moe_ffn_hidden_size = 0;
    m->shared_expert_ffn_hidden_size = 0;
    m->shared_expert_gate = false;
    m->moe_layer_freq = 0; /* the first validation's 1 (MoE): unset */
    fx_validate(m);
}

/* Parameters of each rank as Megatron-LM builds it: the layer specs of
 * the whole pattern sliced to the rank's global layer ids
 * (experimental_attention_variant_module_specs.py l.322-332 @ d98e8a64):
 *   pp 2 (3 + 3 layers): "GGG" + embedding = 506,704,448;
 *     "AGG" + norm + output = 500,251,520;
 *   pp 2, vpp 2 on 8 layers (chunks "GG" "GA" "GG" "GA"; rank 0 holds
 *     chunks 0 and 2, rank 1 chunks 1 and 3): 4 G + embedding =
 *     571,884,288; 2 G + 2 A + norm + output = 558,976,384.
 * The model's mean layer would give both ranks the same layers.  The
 * FSDP unit: the largest layer the rank holds (G on both; an all-G rank
 * has no attention to weigh). */
static void test_gdn_stage_params(void **state)
{
    (void)state;
    const double G = 65179840.0, A = 58724864.0, E = 311164928.0, N = 2048.0;
    struct { int64_t L, v; double want[2]; } cases[] = {
        {6, 1, {3 * G + E, A + 2 * G + N + E}},
        {8, 2, {4 * G + E, 2 * G + 2 * A + N + E}},
    };
    ASSERT_DBL_EXACT(cases[0].want[0], 506704448.0);
    ASSERT_DBL_EXACT(cases[0].want[1], 500251520.0);
    ASSERT_DBL_EXACT(cases[1].want[0], 571884288.0);
    ASSERT_DBL_EXACT(cases[1].want[1], 558976384.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.dp_degree = 4;
    char msg[APS_REASON_LEN];
    aps_layout lay;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        aps_model m;
        fx_gdn_small(&m, cases[k].L);
        s.vpp_degree = cases[k].v;
        assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                         APS_REASON_NONE);
        for (int64_t i = 0; i < 2; i++) {
            ASSERT_DBL_EXACT(aps_stage_params(&m, &lay, i), cases[k].want[i]);
            ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, i), G);
        }
    }
}

/* The attention core of each rank, "GGGAGG" over pp 2, T = 4096 tokens,
 * bf16, TP 1: the causal flash core of one gated-attention layer,
 * 4 T (T / 2) a d = 4 x 4096 x 2048 x 16 x 256 = 137,438,953,472 FLOPs,
 * on rank 1's 3 layers (its mean layer holds a third of it); none on
 * rank 0.  The launches: rank 0's attention slot the Gated DeltaNet
 * block's alone. */
static void test_gdn_stage_time_terms(void **state)
{
    (void)state;
    aps_model m;
    fx_gdn_small(&m, 6);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.dp_degree = 4;
    char msg[APS_REASON_LEN];
    aps_layout lay;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_layer_cost lc, own[2];
    aps_layer_activations(&m, &t, &s, NULL, &lc);
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    double rate = c.device.peak_flops_bf16 * 0.45;
    const aps_layer_cost *r0 =
        aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, 0, &own[0]);
    const aps_layer_cost *r1 =
        aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, 1, &own[1]);
    ASSERT_DBL_EXACT(r0->attn_fwd, 0.0);
    ASSERT_REL(3.0 * r1->attn_fwd, 137438953472.0 / rate, 1e-12);
    ASSERT_REL(3.0 * r1->attn_fwd, 6.0 * lc.attn_fwd, 1e-12);
    aps_host_program gdn_only;
    aps_hybrid_counts w = {.gdn = 1, .gdn_share = 1.0, .mlp_share = 1.0,
                           .blocks = 2.0};
    aps_host_program_build(&m, &t, &s, &w, &gdn_only);
    ASSERT_REL(r0->host.attn.fwd, gdn_only.attn.fwd, 1e-12);
}

/* Full recompute (uniform, one layer per group), "GGGAGG" over pp 2,
 * T = 4096, bf16, TP 1, flash, no dropout: every layer keeps its input,
 * 2 x 4096 x 2048 = 16,777,216 bytes, and in the backward one layer's
 * whole set is alive again: at the peak, the largest kind the rank holds
 * (as for the hybrid Mamba-2 models).  Saved per layer: the two blocks' norm input and output
 * 4 x 16,777,216 = 67,108,864; the SwiGLU MLP's fc1 output and fc2 input
 * 2 x 4096 x (2 x 5120 + 5120) = 125,829,120; a Gated DeltaNet mixer
 * 303,562,752 (test_gdn_layer_cost) -> G 496,500,736; the gated
 * attention's Q, K, V 2 x 4096 x 5120 = 41,943,040, context 33,554,432,
 * Q/K norms 2 x 4096 x 18 x 256 = 37,748,736, gate and gated context
 * 67,108,864, softmax statistics 4 x 16 x 4096 = 262,144 -> A
 * 373,555,200.  1F1B with 2 micro-batches (8 sequences over DP 4): rank 0
 * holds 2 in flight, rank 1 one.
 *   rank 0 "GGG": 2 x 3 x 16,777,216 + 496,500,736 = 597,164,032
 *   rank 1 "AGG": (3 + 2) x 16,777,216 (with the final norm's and the
 *     output layer's inputs) + 496,500,736 (G, above A) = 580,386,816
 *     (the mean layer's, 455,518,890.67, was counted before) */
static void test_gdn_stage_full_recompute(void **state)
{
    (void)state;
    aps_model m;
    fx_gdn_small(&m, 6);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.dp_degree = 4;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    s.recompute_method = APS_RECOMPUTE_UNIFORM;
    s.recompute_num_layers[0] = 1;
    aps_estimate *e = test_malloc(sizeof *e);
    fx_run(&m, &c, &t, &s, e);
    assert_int_equal(e->reason, APS_REASON_NONE);
    ASSERT_DBL_EXACT(e->stages[0].inflight_microbatches, 2.0);
    ASSERT_DBL_EXACT(e->stages[1].inflight_microbatches, 1.0);
    ASSERT_REL(e->stages[0].mem[APS_MEM_ACTIVATIONS], 597164032.0, 1e-12);
    ASSERT_REL(e->stages[1].mem[APS_MEM_ACTIVATIONS], 580386816.0, 1e-12);
    assert_int_equal(e->stages[0].recompute_layers, 3);
    test_free(e);
}

/* Kimi Linear (moonshotai/Kimi-Linear-48B-A3B-Instruct): h 2304, 27
 * layers, MLA (32 heads, no query compression, kv_lora 512, nope 128,
 * rope 64, v 128) on the 1-based layers 4, 8, ..., 24, 27, Kimi Delta
 * Attention on the others (H = 32 heads of d = 128, conv 4); experts as
 * tests/lua/models_kimi_linear_spec.lua.  One KDA mixer (AutoModel
 * KimiDeltaAttention @ 36044ad3):
 *   from h: q, k, v 3 x 4096, f_a and g_a 2 x 128, b_proj 32 -> 12,576
 *     columns, 2304 x 12,576 = 28,975,104;
 *   gate ups f_b, g_b: 128 x 2 x 4096 = 1,048,576; o_proj 4096 x 2304 =
 *     9,437,184 -> matrices 39,460,864;
 *   convs 12,288 x 4 = 49,152; A_log 32, dt_bias 4096; o_norm 128
 *   -> 39,514,272. */
static void fx_kimi_linear(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "kimi-linear");
    m->num_layers = 27;
    m->hidden_size = 2304;
    m->num_attention_heads = 32;
    m->num_query_groups = 32;
    m->head_dim = 192;
    m->ffn_hidden_size = 9216;
    m->vocab_size = 163840;
    m->max_position_embeddings = 1048576;
    m->position_embedding = APS_POS_NONE;
    m->kv_lora_rank = 512;
    m->qk_nope_head_dim = 128;
    m->qk_rope_head_dim = 64;
    m->v_head_dim = 128;
    m->num_experts = 256;
    m->experts_per_token = 8;
    m->moe_ffn_hidden_size = 1024;
    m->shared_expert_ffn_hidden_size = 1024;
    m->moe_first_dense_layers = 1;
    m->moe_router_bias = true;
    m->linear_attention = APS_LINEAR_KDA;
    snprintf(m->linear_attention_pattern, sizeof m->linear_attention_pattern,
             "%s", "LLLALLLALLLALLLALLLALLLALLA");
    m->linear_num_key_heads = m->linear_num_value_heads = 32;
    m->linear_key_head_dim = m->linear_value_head_dim = 128;
    m->linear_conv_kernel_dim = 4;
    fx_validate(m);
}

/* Over T = 4096 tokens, forward: projections 2 T 39,460,864 =
 * 323,263,397,888; convs 2 T 12,288 x 4 = 402,653,184; the chunked rule
 * as Gated DeltaNet's (test_gdn_layer_cost: 2 T 32 x 91,445.5 =
 * 23,971,889,152) -> 347,637,940,224.  Saved per token (bf16, FLA
 * chunk_kda's ctx.save_for_backward @ df21b259 and _kda_core's
 * autograd): projections' outputs 2 x 12,288 = 24,576; f_a, g_a 2 x 2 x
 * 128 = 512; f_b, g_b outputs 2 x 8192 = 16,384; q, k, v into the kernel
 * 24,576; rstd 2 x 32, g 4096 and beta 32 in fp32, 4 x 4192 = 16,768;
 * Aqk and Akk 4 x 2 x 32 x 64 = 16,384; the kernel output 8192; o_proj's
 * input 8192 -> 115,584 bytes. */
static void test_kda_layer(void **state)
{
    (void)state;
    aps_model m;
    fx_kimi_linear(&m);
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 12576.0);
    aps_gemm_nk g[2];
    assert_int_equal(aps_gdn_inner_gemms(&m, g), 1); /* f_b, g_b: dv -> 2V */
    ASSERT_DBL_EXACT(g[0].n, 8192.0);
    ASSERT_DBL_EXACT(g[0].k, 128.0);
    ASSERT_DBL_EXACT(aps_gdn_matmul_params(&m), 39460864.0);
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 1), 39514272.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, 4096.0, 4096.0), 347637940224.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 115584.0);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 23.0);
    aps_hybrid_counts w;
    aps_hybrid_mix(&m, &w);
    assert_int_equal(w.attn, 7);
    assert_int_equal(w.gdn, 20);
    ASSERT_DBL_EXACT(aps_gdn_attn_share(&m), 7.0 / 27.0);
    /* pipeline stages count the pattern's letters: layers 9 .. 17 hold
     * the 1-based 12 and 16 */
    aps_hybrid_counts part = {0};
    aps_gdn_count(&m, 9, 9, &part);
    assert_int_equal(part.attn, 2);
    assert_int_equal(part.gdn, 7);
}

/* NeMo AutoModel trains it (no TP, no PP; its CP not priced); another
 * framework is refused with the reason. */
/* Op-level selective checkpointing walks attention blocks, not a
 * mixer's ops: selective refused under it, full recompute priced. */
static void assert_op_sac_refused(const aps_model *m, const aps_training *t)
{
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    ASSERT_HAS(aps_gdn_refusal(m, t, &s, &code), "op-level selective");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_null(aps_gdn_refusal(m, t, &s, &code));
}

static void test_kda_refusals(void **state)
{
    (void)state;
    aps_model m;
    fx_kimi_linear(&m);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "priced for NeMo "
               "AutoModel only");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    t.framework = APS_FW_AUTOMODEL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
    s.tp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "supports_tp = False");
    assert_int_equal(code, APS_REASON_FRAMEWORK_UNSUPPORTED);
    aps_strategy_defaults(&s);
    s.pp_degree = 3;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "supports_pp = False");
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "context parallelism");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    assert_op_sac_refused(&m, &t);
}

static void test_kda_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_kimi_linear(&m);
    m.linear_attention_pattern[3] = 'M';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_attention_pattern: letter 4 is 'M'");
    fx_kimi_linear(&m);
    m.linear_attention_pattern[26] = '\0';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "needs one letter per layer, num_layers (got 26 letters");
    fx_kimi_linear(&m);
    m.linear_attention_period = 4;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "give it or linear_attention_period, not both");
    fx_kimi_linear(&m);
    m.linear_value_head_dim = 64;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "as many key heads as value heads of one width");
}

/* Kimi K3's attention residuals (attnres.c), 93 layers in blocks of 12,
 * h 7168 (the held-out Kimi-K3 config).  Layer i mixes its attention
 * input from the blocks so far and the running sum (not layer 0), then
 * its MLP input from those and, when i % 12 == 0, its own new block:
 * attention mixes over layers 1-92 of 2 (x 12), 3, ..., 8 (x 12 each)
 * and 9 (x 8) values: 492; MLP mixes 2 + 11 x 2, 3 + 11 x 3, ..., 8 + 11
 * x 8, 9 + 8 x 9: 501; the output mix the 8 blocks and the sum: 9.
 * 186 mixes of 1002 values.  Per token and value: v and keys fp32, 2 x 4
 * x 7168, and two fp32 scalars: 1002 x 57,352 / 93 = 617,921.548...
 * bytes the mean layer saves; traffic (1002 x 46 + 186 x 10) x 7168 /
 * 93.  Under full recompute: the block stack, sizes 1 .. 8 bf16, 36 x
 * 2 x 7168, and the output mix's 9 x 57,352, over 93 layers. */
static void test_attnres(void **state)
{
    (void)state;
    aps_model m;
    aps_model_defaults(&m);
    m.num_layers = 93;
    m.hidden_size = 7168;
    m.attn_res_block_size = 12;
    double mixes, values;
    aps_attnres_mixes(&m, &mixes, &values);
    ASSERT_DBL_EXACT(mixes, 186.0);
    ASSERT_DBL_EXACT(values, 1002.0);
    ASSERT_REL(aps_attnres_saved_per_token(&m), 1002.0 * 57352.0 / 93.0, 1e-15);
    ASSERT_REL(aps_attnres_traffic_per_token(&m),
               (1002.0 * 46.0 + 186.0 * 10.0) * 7168.0 / 93.0, 1e-15);
    ASSERT_REL(aps_attnres_kept_per_token(&m),
               (36.0 * 2.0 * 7168.0 + 9.0 * 57352.0) / 93.0, 1e-15);
    ASSERT_DBL_EXACT(aps_attnres_layer_params(&m), 4.0 * 7168.0);
    ASSERT_DBL_EXACT(aps_attnres_model_params(&m), 2.0 * 7168.0);
    m.attn_res_block_size = 0;
    aps_attnres_mixes(&m, &mixes, &values);
    ASSERT_DBL_EXACT(values, 0.0);
    ASSERT_DBL_EXACT(aps_attnres_kept_per_token(&m), 0.0);
}

/* Kimi K3's KDA with the full-rank output gate and its SiTU (h 7168, 96
 * heads of 128,
 * V = 12,288): from h q, k, v 3 x 12,288, f_a 128, g_proj 12,288, beta
 * 96 -> 49,376 columns; the gate up f_b alone, 12,288.  Saved per token:
 * f_a's output alone, 2 x 128 (the low-rank pair's two: 4 x 128). */
static void test_kda_full_rank_gate(void **state)
{
    (void)state;
    aps_model m;
    fx_kimi_linear(&m);
    m.hidden_size = 7168;
    m.linear_num_key_heads = m.linear_num_value_heads = 96;
    m.linear_output_gate_full_rank = true;
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 49376.0);
    aps_gemm_nk g[2];
    assert_int_equal(aps_gdn_inner_gemms(&m, g), 1); /* f_b alone: dv -> V */
    ASSERT_DBL_EXACT(g[0].n, 12288.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    double full = aps_gdn_saved_bytes(&m, &t, 1.0, 1.0);
    m.linear_output_gate_full_rank = false;
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0) - full, 2.0 * 128.0);
    /* SiTU (SituAndMul): six fp32 tensors a width element and the bf16
     * fc2 input, 6 x 4 + 2, against SwiGLU's gate and up and the fc2
     * input, 3 x 2 */
    ASSERT_DBL_EXACT(aps_mlp_bytes_per_width(&m, &t), 6.0);
    m.glu_activation = APS_GLU_SITU;
    ASSERT_DBL_EXACT(aps_mlp_bytes_per_width(&m, &t), 26.0);
}

/* LiquidAI/LFM2-1.2B (examples/models/lfm2-1.2b.json): h 2048, 16 layers,
 * attention on the 0-based 2, 5, 8, 10, 12, 14 (32 heads of 64, 8 KV
 * heads, q/k norms), gated short convolutions of 3 taps on the other 10,
 * SwiGLU 8192 everywhere.  One short convolution (transformers
 * Lfm2ShortConv @ 0096ba4f): in_proj 2048 x 6144 = 12,582,912; out_proj
 * 2048 x 2048 = 4,194,304 -> matrices 16,777,216; conv 2048 x 3 = 6,144
 * -> 16,783,360 (no bias, no norm). */
static void fx_lfm2(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "lfm2-1.2b");
    m->num_layers = 16;
    m->hidden_size = 2048;
    m->num_attention_heads = 32;
    m->num_query_groups = 8;
    m->ffn_hidden_size = 8192;
    m->vocab_size = 65536;
    m->max_position_embeddings = 128000;
    m->qk_norm = true;
    m->tie_word_embeddings = true;
    m->linear_attention = APS_LINEAR_SHORT_CONV;
    snprintf(m->linear_attention_pattern, sizeof m->linear_attention_pattern,
             "%s", "LLALLALLALALALAL");
    m->linear_conv_kernel_dim = 3;
    fx_validate(m);
}

/* Per token: in_proj's output 3 x 2048 (B, C, x kept by B * x), B x
 * (the conv's input) 2048, the conv's output 2048, out_proj's input
 * 2048, bf16: 2 x 12,288 = 24,576 bytes.  Memory-bound elements: the
 * conv 2 x 2048, B x and C conv_out 3 x 2048 each, the transpose's copy
 * 2 x 2048: 20,480.  FLOPs: the projections 2 T 16,777,216 and the conv
 * 2 T 2048 x 3, no scan.  Totals: embedding 134,217,728, 10 x
 * (16,783,360 + 50,331,648 MLP + 4096 norms) + 6 x (10,485,760 attention
 * + 128 q/k norms + 50,331,648 + 4096), final norm 2048: 1,170,340,608,
 * LiquidAI's published count for LFM2-1.2B. */
static void test_short_conv_layer(void **state)
{
    (void)state;
    aps_model m;
    fx_lfm2(&m);
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 6144.0);
    ASSERT_DBL_EXACT(aps_gdn_conv_dim(&m), 2048.0);
    aps_gemm_nk g[2];
    assert_int_equal(aps_gdn_inner_gemms(&m, g), 0);
    ASSERT_DBL_EXACT(aps_gdn_out_width(&m), 2048.0);
    ASSERT_DBL_EXACT(aps_gdn_matmul_params(&m), 16777216.0);
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 1), 16783360.0);
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, 4096.0, 4096.0), 0.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, 4096.0, 4096.0),
                     2.0 * 4096.0 * (16777216.0 + 6144.0));
    ASSERT_DBL_EXACT(aps_gdn_elementwise_elems(&m, 4096.0), 20480.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 24576.0);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 7.0);
    ASSERT_DBL_EXACT(aps_gdn_attn_share(&m), 6.0 / 16.0);
    aps_param_counts c;
    aps_model_param_counts(&m, &c);
    ASSERT_DBL_EXACT(c.embedding + c.layers + c.final_norm + c.output_layer,
                     1170340608.0);
}

/* AutoModel trains it as transformers builds it: TP shards the LM head
 * alone (not modelled), its HF pipeline forward cannot run it, CP not
 * priced; another framework is refused with the reason. */
static void test_short_conv_refusals(void **state)
{
    (void)state;
    aps_model m;
    fx_lfm2(&m);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "short convolutions are "
               "priced for NeMo AutoModel only");
    t.framework = APS_FW_AUTOMODEL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
    s.tp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "shards the LM head alone");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "names pos_emb");
    assert_int_equal(code, APS_REASON_FRAMEWORK_UNSUPPORTED);
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "context parallelism");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    assert_op_sac_refused(&m, &t);
}

static void test_short_conv_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_lfm2(&m);
    m.linear_num_value_heads = 16;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_num_value_heads: a gated short convolution "
               "(linear_attention = short_conv) has no heads");
    fx_lfm2(&m);
    m.linear_conv_kernel_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_conv_kernel_dim: must be in [1, 1048576]");
    fx_lfm2(&m);
    m.linear_attention_pattern[0] = '\0';
    m.linear_conv_kernel_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_attention: short_conv given without a "
                    "linear_attention_pattern");
    /* LFM2-MoE's experts are accepted, MLA beside the convolutions not */
    fx_lfm2(&m);
    m.num_experts = 32;
    m.experts_per_token = 4;
    m.moe_ffn_hidden_size = 1792;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    fx_lfm2(&m);
    m.kv_lora_rank = 512;
    m.qk_nope_head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    m.head_dim = 192;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.kv_lora_rank: short convolutions beside "
                    "multi-latent attention are not modelled");
}

/* MiniMaxAI/MiniMax-M1-80k (config.json: h 6144, 80 layers, attn_type_list
 * seven lightning layers then one softmax layer, 64 heads of 128, 8 KV
 * heads, 32 experts of 9216, top-2, vocab 200,064, untied, block_size
 * 256 by default).  One lightning mixer (transformers
 * MiniMaxLightningAttention @ 008e5743), V = 64 x 128 = 8192: qkv_proj
 * 6144 x 24,576 = 150,994,944; output_gate 6144 x 8192 and out_proj 8192 x
 * 6144, 50,331,648 each -> matrices 251,658,240; the norm 8192 ->
 * 251,666,432. */
static void fx_minimax_m1(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "minimax-m1-80k");
    m->num_layers = 80;
    m->hidden_size = 6144;
    m->num_attention_heads = 64;
    m->num_query_groups = 8;
    m->head_dim = 128;
    m->ffn_hidden_size = 9216;
    m->vocab_size = 200064;
    m->max_position_embeddings = 10240000;
    m->num_experts = 32;
    m->experts_per_token = 2;
    m->moe_ffn_hidden_size = 9216;
    m->linear_attention = APS_LINEAR_LIGHTNING;
    for (int i = 0; i < 80; i++)
        m->linear_attention_pattern[i] = i % 8 == 7 ? 'A' : 'L';
    m->linear_attention_pattern[80] = '\0';
    m->linear_num_key_heads = m->linear_num_value_heads = 64;
    m->linear_key_head_dim = m->linear_value_head_dim = 128;
    m->linear_block_size = 256;
    fx_validate(m);
}

/* Per token and head the block loop multiplies 2 B d (Q K^T and its
 * product with V over the whole 256-token block) + 2 d^2 (with the state,
 * and the state's update) = 65,536 + 32,768 = 98,304 times: over 4096
 * tokens and 64 heads 2 x 4096 x 64 x 98,304 = 51,539,607,552 FLOPs.
 * Saved bytes a token (bf16): qkv_proj's output and SiLU's 2 x 2 x 24,576
 * = 98,304; the decayed Q K^T 2 x 64 x 256 = 32,768; Q and K decayed 2 x 2
 * x 8192 = 32,768; the state 2 x 64 x 128 x 128 / 256 = 8,192; the norm's
 * fp32 copy and output 4 x 8192 + 2 x 8192 = 49,152; the sigmoid's output
 * and out_proj's input 2 x 2 x 8192 = 32,768: 253,952.  Memory-bound
 * elements: 40 x 8192 + 2 x 64 x 256 + 5 x 64 x 64 = 380,928.  Kernels at
 * 4096 tokens: 28 + 13 x 16 blocks = 236; at 32,768: 28 + 13 x 128.
 * Totals: embedding and output layer 2 x 200,064 x 6144 = 2,458,386,432;
 * 70 lightning layers 251,666,432 and 10 softmax ones 6144 x (8192 + 2 x
 * 1024) + 8192 x 6144 = 113,246,208; every layer 32 experts 3 x 6144 x 9216
 * = 5,435,817,984, the router 196,608 and two norms 12,288; the final
 * norm 6144: 456,089,655,296 (MiniMax: "456 billion parameters"); active
 * with two experts 48,403,306,496, of it 45,944,920,064 without the
 * embedding and output layer (MiniMax: "45.9 billion ... activated per
 * token"). */
static void test_lightning_layer(void **state)
{
    (void)state;
    aps_model m;
    fx_minimax_m1(&m);
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 32768.0);
    ASSERT_DBL_EXACT(aps_gdn_conv_dim(&m), 0.0);
    aps_gemm_nk g[2];
    assert_int_equal(aps_gdn_inner_gemms(&m, g), 0);
    ASSERT_DBL_EXACT(aps_gdn_out_width(&m), 8192.0);
    ASSERT_DBL_EXACT(aps_gdn_matmul_params(&m), 251658240.0);
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 1), 251666432.0);
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, 4096.0, 4096.0), 51539607552.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, 4096.0, 4096.0),
                     2.0 * 4096.0 * 251658240.0 + 51539607552.0);
    ASSERT_DBL_EXACT(aps_gdn_elementwise_elems(&m, 4096.0), 380928.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 253952.0);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 236.0);
    t.seq_length = 32768;
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 28.0 + 13.0 * 128.0);
    t.seq_length = 4097; /* a partial last block is a block */
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 28.0 + 13.0 * 17.0);
    /* a sequence shorter than a block is one block of its own length:
     * 2 x 128 x 64 x (2 x 128 x 128 + 2 x 128^2) FLOPs; saved H B = 64 x
     * 128 and H d^2 / B = 64 x 128 a token (2 bytes each): 253,952 -
     * 32,768 + 16,384 - 8,192 + 16,384; memory-bound 40 x 8192 + 2 x 64 x
     * 128 + 5 x 64 x 128 */
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, 128.0, 128.0), 1073741824.0);
    t.seq_length = 128;
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 245760.0);
    ASSERT_DBL_EXACT(aps_gdn_elementwise_elems(&m, 128.0), 385024.0);
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 28.0 + 13.0);
    ASSERT_DBL_EXACT(aps_gdn_attn_share(&m), 10.0 / 80.0);
    aps_param_counts c;
    aps_model_param_counts(&m, &c);
    ASSERT_DBL_EXACT(c.embedding + c.layers + c.final_norm + c.output_layer,
                     456089655296.0);
}

/* NeMo AutoModel trains transformers' MiniMaxForCausalLM: any other
 * framework is refused, and TP, PP and CP are not modelled. */
static void test_lightning_refusals(void **state)
{
    (void)state;
    aps_model m;
    fx_minimax_m1(&m);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "lightning attention is "
               "priced for NeMo AutoModel only");
    assert_int_equal(code, APS_REASON_NOT_MODELLED); /* as KDA's, LFM2's */
    char err[256];
    assert_int_equal(aps_gdn_framework(&m, &t, err, sizeof err),
                     APS_ENOTIMPL);
    ASSERT_HAS(err, "training.framework: minimax-m1-80k has MiniMax's "
                    "lightning attention, priced for NeMo AutoModel only "
                    "(framework = automodel, which trains transformers' "
                    "MiniMaxForCausalLM): Megatron-LM, TorchTitan and "
                    "MindFormers have no such layer");
    t.framework = APS_FW_AUTOMODEL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
    assert_int_equal(aps_gdn_framework(&m, &t, err, sizeof err), APS_OK);
    s.tp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "leaves the lightning "
               "layers' qkv_proj");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "over pipeline stages");
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "context parallelism");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    aps_strategy_defaults(&s);
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "op-level selective "
               "activation checkpointing is not modelled");
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
}

static void test_lightning_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_minimax_m1(&m);
    m.linear_block_size = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_block_size: must be in [1, 1048576] with "
                    "lightning attention layers (got 0)");
    fx_minimax_m1(&m);
    m.linear_conv_kernel_dim = 4;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_conv_kernel_dim: lightning attention has "
                    "no convolution: give 0 (got 4)");
    fx_minimax_m1(&m);
    m.linear_key_head_dim = 64;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "as many key heads as value heads of one width (got 64 "
                    "x 64 keys, 64 x 128 values)");
    fx_minimax_m1(&m);
    m.linear_num_key_heads = m.linear_num_value_heads = 32;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "lightning attention has the attention's heads, "
                    "num_attention_heads = 64 of head_dim = 128 "
                    "(MiniMaxLightningAttention; got 32 x 128)");
    fx_minimax_m1(&m);
    m.linear_attention_pattern[0] = '\0';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_num_key_heads: 64 given without a "
                    "linear_attention_period or linear_attention_pattern");
    /* a block length on another mixer is refused */
    fx_lfm2(&m);
    m.linear_block_size = 256;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_block_size: lightning attention's block "
                    "length, given without linear_attention = lightning");
}

/* Jamba 1.5 Mini (ai21labs/AI21-Jamba-1.5-Mini config.json): 32 layers,
 * attention on i % 8 == 4, 16 experts on the odd layers; the Mamba-1
 * mixer of D = 2 x 4096 channels, state 16, dt rank 256, conv 4. */
static void fx_jamba_mini(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "jamba-1.5-mini");
    m->num_layers = 32;
    m->hidden_size = 4096;
    m->num_attention_heads = 32;
    m->num_query_groups = 8;
    m->ffn_hidden_size = 14336;
    m->vocab_size = 65536;
    m->position_embedding = APS_POS_NONE;
    m->num_experts = 16;
    m->experts_per_token = 2;
    m->moe_ffn_hidden_size = 14336;
    m->moe_layer_freq = 2;
    m->moe_layer_phase = 1;
    m->moe_router_pre_softmax = true;
    m->linear_attention = APS_LINEAR_MAMBA1;
    for (int i = 0; i < 32; i++)
        m->linear_attention_pattern[i] = i % 8 == 4 ? 'A' : 'L';
    m->linear_attention_pattern[32] = '\0';
    m->linear_inner_size = 8192;
    m->linear_state_dim = 16;
    m->linear_dt_rank = 256;
    m->linear_conv_kernel_dim = 4;
    fx_validate(m);
}

/* The mixer (transformers JambaMambaMixer): in_proj 4096 x 16,384 =
 * 67,108,864, x_proj 8192 x (256 + 32) = 2,359,296, dt_proj 256 x 8192 =
 * 2,097,152, out_proj 8192 x 4096 = 33,554,432: 105,119,744 GEMM weights;
 * conv 8192 x 4 + 8192 bias, dt_proj's bias 8192, A_log 8192 x 16, D
 * 8192, the dt, B, C norms 256 + 2 x 16: 188,704 more.  Over 4096 tokens:
 * the scan 8 x 4096 x 8192 x 16 = 4,294,967,296 FLOPs; the layer 2 x 4096
 * x 105,119,744 + 2 x 4096 x 8192 x 4 (conv) + the scan =
 * 865,704,345,600.  Saved a token (bf16 2 bytes, fp32 4): in_proj's
 * output 2 x 16,384; the conv output and its copy 2 x 16,384; the norms
 * (4 + 2) x 288; dt_proj's input 2 x 256; delta, z, B, C 2 x 16,416; the
 * chunk states 4 x 8192 x 32 x 2 chunks / 4096 tokens = 512; the scan
 * output and out_proj's input 2 x 2 x 8192: 133,888.  Memory-bound
 * elements: 10 x 8192 + 18 x 288 + 4 x 16 = 87,168.  Totals: the
 * embedding and output layer 2 x 65,536 x 4096; 4 attention layers 4096
 * x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040, 28 Mamba-1 mixers
 * 105,308,448; 16 dense MLPs 3 x 4096 x 14,336 = 176,160,768 and 16 MoE
 * blocks of 16 of them with the router 65,536; two norms a layer and the
 * final one: 51,570,323,328 (AI21: "52B"), active with two experts
 * 12,110,311,296 (AI21: "12B active"). */
static void test_mamba1_layer(void **state)
{
    (void)state;
    aps_model m;
    fx_jamba_mini(&m);
    ASSERT_DBL_EXACT(aps_gdn_in_proj_width(&m), 16384.0);
    ASSERT_DBL_EXACT(aps_gdn_conv_dim(&m), 8192.0);
    ASSERT_DBL_EXACT(aps_gdn_out_width(&m), 8192.0);
    aps_gemm_nk g[2];
    assert_int_equal(aps_gdn_inner_gemms(&m, g), 2);
    ASSERT_DBL_EXACT(g[0].n, 288.0); /* x_proj: D -> R + 2N */
    ASSERT_DBL_EXACT(g[0].k, 8192.0);
    ASSERT_DBL_EXACT(g[1].n, 8192.0); /* dt_proj: R -> D */
    ASSERT_DBL_EXACT(g[1].k, 256.0);
    ASSERT_DBL_EXACT(aps_gdn_matmul_params(&m), 105119744.0);
    ASSERT_DBL_EXACT(aps_gdn_params_tp(&m, 1), 105308448.0);
    ASSERT_DBL_EXACT(aps_gdn_scan_flops(&m, 4096.0, 4096.0), 4294967296.0);
    ASSERT_DBL_EXACT(aps_gdn_flops(&m, 4096.0, 4096.0), 865704345600.0);
    ASSERT_DBL_EXACT(aps_selscan_state_elems(&m, 4096.0), 536870912.0);
    ASSERT_DBL_EXACT(aps_gdn_elementwise_elems(&m, 4096.0), 87168.0);
    aps_training t;
    fx_training(&t, 8, 4096);
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 133888.0);
    /* one 2048-token chunk state for a 1024-token sequence: 4 x 8192 x 32
     * / 1024 = 1024 bytes a token, 512 more */
    t.seq_length = 1024;
    ASSERT_DBL_EXACT(aps_gdn_saved_bytes(&m, &t, 1.0, 1.0), 134400.0);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_DBL_EXACT(aps_gdn_kernels(&m, &t, &s), 53.0);
    ASSERT_DBL_EXACT(aps_gdn_attn_share(&m), 4.0 / 32.0);
    aps_param_counts c;
    aps_model_param_counts(&m, &c);
    ASSERT_DBL_EXACT(c.embedding + c.layers + c.final_norm + c.output_layer,
                     51570323328.0);
}

/* NeMo AutoModel trains transformers' JambaForCausalLM: another framework
 * is refused; TP, PP, CP and selective recompute under op-level SAC are
 * not modelled. */
static void test_mamba1_refusals(void **state)
{
    (void)state;
    aps_model m;
    fx_jamba_mini(&m);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_reason code = APS_REASON_NONE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "Jamba's Mamba-1 layers "
               "are priced for NeMo AutoModel only");
    char err[256];
    assert_int_equal(aps_gdn_framework(&m, &t, err, sizeof err),
                     APS_ENOTIMPL);
    ASSERT_HAS(err, "training.framework: jamba-1.5-mini has Jamba's Mamba-1 "
                    "layers, priced for NeMo AutoModel only (framework = "
                    "automodel, which trains transformers' "
                    "JambaForCausalLM)");
    t.framework = APS_FW_AUTOMODEL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
    s.tp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "JambaForCausalLM._tp_plan");
    assert_int_equal(code, APS_REASON_NOT_MODELLED);
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "model.rotary_emb");
    aps_strategy_defaults(&s);
    s.cp_degree = 2;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "context parallelism");
    aps_strategy_defaults(&s);
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    ASSERT_HAS(aps_gdn_refusal(&m, &t, &s, &code), "op-level selective");
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_null(aps_gdn_refusal(&m, &t, &s, &code));
}

static void test_mamba1_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_jamba_mini(&m);
    m.linear_state_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_state_dim: must be in [1, 1048576] with "
                    "Mamba-1 layers (got 0)");
    fx_jamba_mini(&m);
    m.linear_num_value_heads = 4;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_num_value_heads: a Mamba-1 mixer "
                    "(linear_attention = mamba1) has no heads, its width is "
                    "linear_inner_size: give 0 (got 4)");
    fx_jamba_mini(&m);
    m.linear_conv_kernel_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_conv_kernel_dim: must be in [1, 1048576]");
    /* a pattern without a linear layer leaves the widths describing
     * nothing */
    fx_jamba_mini(&m);
    memset(m.linear_attention_pattern, 'A', 32);
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_attention_pattern: needs at least one "
                    "linear-attention layer L");
    /* a Mamba-1 width on another mixer is refused */
    fx_lfm2(&m);
    m.linear_dt_rank = 256;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.linear_dt_rank: a Mamba-1 mixer's width, given "
                    "without linear_attention = mamba1 layers (got 256)");
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
        cmocka_unit_test(test_gdn_stage_params),
        cmocka_unit_test(test_gdn_stage_time_terms),
        cmocka_unit_test(test_gdn_stage_full_recompute),
        cmocka_unit_test(test_kda_layer),
        cmocka_unit_test(test_kda_refusals),
        cmocka_unit_test(test_kda_validation),
        cmocka_unit_test(test_attnres),
        cmocka_unit_test(test_kda_full_rank_gate),
        cmocka_unit_test(test_short_conv_layer),
        cmocka_unit_test(test_short_conv_refusals),
        cmocka_unit_test(test_short_conv_validation),
        cmocka_unit_test(test_lightning_layer),
        cmocka_unit_test(test_lightning_refusals),
        cmocka_unit_test(test_lightning_validation),
        cmocka_unit_test(test_mamba1_layer),
        cmocka_unit_test(test_mamba1_refusals),
        cmocka_unit_test(test_mamba1_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
