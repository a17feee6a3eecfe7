/*
 * test_hybrid.c -- src/core/hybrid.c: hybrid Mamba-2 models (Nemotron-H).
 *
 * nvidia/Nemotron-H-8B-Base-8K (examples/models/nemotron-h-8b-base-8k.json):
 * h 4096, pattern of 52 layers, 24 M, 4 *, 24 -; 32 heads of 128, 8 KV
 * heads; MLP 21504 (squared ReLU, 2 matrices); Mamba-2 nh 128, P 64
 * (d = 8192), N 128, G 8, K 4; V 131072 untied.  Hand counts:
 *   Mamba layer: in_proj 4096 (2*8192 + 2*8*128 + 128 = 18560) =
 *     76,021,760; conv (8192 + 2048 = 10240) * 4 + 10240 = 51,200;
 *     dt_bias, A_log, D 3*128 = 384; gated norm 8192; out_proj 8192*4096 =
 *     33,554,432; pre-norm 4096 -> 109,640,064
 *   attention layer: Q, O 4096^2 each, K, V 4096*1024 each = 41,943,040;
 *     norm 4096 -> 41,947,136
 *   MLP layer: 2*4096*21504 = 176,160,768; norm 4096 -> 176,164,864
 *   layers 24*109,640,064 + 4*41,947,136 + 24*176,164,864 = 7,027,106,816;
 *   embedding + output 2*131072*4096 = 1,073,741,824; final norm 4096
 *   -> 8,100,852,736 (published: "8B", the card's Nemotron-H-8B).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"
#include "fixtures_internal.h"

/** The pattern of nvidia/Nemotron-H-8B-Base-8K (hybrid_override_pattern). */
#define NEMOTRON_H_8B_PATTERN \
    "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"

static void fx_nemotron_h(aps_model *m, const char *pattern)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "nemotron-h-8b-base-8k");
    snprintf(m->hybrid_layer_pattern, sizeof m->hybrid_layer_pattern, "%s",
             pattern);
    m->num_layers = (int64_t)strlen(pattern);
    m->hidden_size = 4096;
    m->num_attention_heads = 32;
    m->num_query_groups = 8;
    m->head_dim = 128;
    m->ffn_hidden_size = 21504;
    m->vocab_size = 131072;
    m->max_position_embeddings = 8192;
    m->norms_per_layer = 1;
    m->mlp = APS_MLP_RELU2;
    m->position_embedding = APS_POS_NONE;
    m->mamba_num_heads = 128;
    m->mamba_head_dim = 64;
    m->mamba_state_dim = 128;
    m->mamba_num_groups = 8;
    m->mamba_conv_kernel = 4;
    m->mamba_chunk_size = 128;
    fx_validate(m);
}

/** The pattern of nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: 23 M, 23 E,
 *  6 *. */
#define NEMOTRON3_NANO_PATTERN \
    "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

/* examples/models/nemotron-3-nano-30b-a3b.json: h 2688, 32 heads of 128,
 * 2 KV heads; Mamba-2 nh 64, P 64 (d 4096), N 128, G 8, K 4; 128 experts
 * of 1856 (squared ReLU), top 6, one shared expert of 3712, the router's
 * expert bias; V 131072 untied. */
static void fx_nemotron3_nano(aps_model *m)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "nemotron-3-nano-30b-a3b");
    snprintf(m->hybrid_layer_pattern, sizeof m->hybrid_layer_pattern, "%s",
             NEMOTRON3_NANO_PATTERN);
    m->num_layers = (int64_t)strlen(NEMOTRON3_NANO_PATTERN);
    m->hidden_size = 2688;
    m->num_attention_heads = 32;
    m->num_query_groups = 2;
    m->head_dim = 128;
    m->ffn_hidden_size = 1856;
    m->vocab_size = 131072;
    m->max_position_embeddings = 262144;
    m->norms_per_layer = 1;
    m->mlp = APS_MLP_RELU2;
    m->position_embedding = APS_POS_NONE;
    m->mamba_num_heads = 64;
    m->mamba_head_dim = 64;
    m->mamba_state_dim = 128;
    m->mamba_num_groups = 8;
    m->mamba_conv_kernel = 4;
    m->mamba_chunk_size = 128;
    m->num_experts = 128;
    m->experts_per_token = 6;
    m->moe_ffn_hidden_size = 1856;
    m->shared_expert_ffn_hidden_size = 3712;
    m->moe_router_bias = true;
    fx_validate(m);
}

/* Hand counts (transformers NemotronHBlock / NemotronHMOE):
 *   Mamba layer: in_proj 2688 (2*4096 + 2*1024 + 64 = 10304) = 27,697,152;
 *     conv 6144*4 + 6144 = 30,720; dt_bias, A_log, D 192; gated norm
 *     4096; out_proj 4096*2688 = 11,010,048; pre-norm 2688 -> 38,744,896
 *   attention layer: Q, O 2688*4096 each, K, V 2688*256 each; norm 2688
 *     -> 23,399,040
 *   MoE layer: router 128*2688 = 344,064, e_score_correction_bias 128,
 *     experts 128 * 2*2688*1856 = 1,277,509,632, shared expert
 *     2*2688*3712 = 19,955,712, norm 2688 -> 1,297,468,160; with 6 experts
 *     (59,885,568) 80,169,728
 *   23 M + 6 * + 23 E = 30,873,294,528; embedding + output 2*131072*2688 =
 *   704,643,072; final norm 2688 -> 31,577,940,288 total, 3,580,076,352
 *   active (published: 31.6B total; 3.2B active without the embedding,
 *   3,227,754,816 here). */
static void test_hybrid_params_nemotron3_nano(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_nano(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_mamba_layer, 38744896.0);
    ASSERT_DBL_EXACT(pc.per_attention_layer, 23399040.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 1297468160.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 80169728.0);
    ASSERT_DBL_EXACT(pc.moe_layers, 23.0);
    ASSERT_DBL_EXACT(pc.mlp_layers, 0.0);
    ASSERT_DBL_EXACT(pc.layers, 30873294528.0);
    ASSERT_DBL_EXACT(pc.total, 31577940288.0);
    ASSERT_DBL_EXACT(pc.active, 3580076352.0);
    assert_false(aps_model_is_moe_layer(&m, 0));
    assert_true(aps_model_is_moe_layer(&m, 1));
    assert_false(aps_model_is_moe_layer(&m, 5));
    assert_true(aps_model_is_moe_layer(&m, 51));
}

/* Nemotron 3 Super (fx_nemotron3_super), transformers NemotronHBlock /
 * NemotronHMOE with the latent projections, Megatron's MTP block:
 *   Mamba layer (nh 128, P 64, N 128, G 8 at h 4096, as Nemotron-H-8B's)
 *     109,640,064
 *   attention layer: Q, O 4096^2 each, K, V 4096*256 each; norm 4096 ->
 *     35,655,680
 *   MoE layer: router 512*4096 = 2,097,152, e_score_correction_bias 512,
 *     fc1/fc2_latent_proj 2*4096*1024 = 8,388,608, experts 512 * 2*1024*
 *     2688 = 2,818,572,288, shared expert 2*4096*5376 = 44,040,192, norm
 *     4096 -> 2,873,102,848; with 22 experts (121,110,528) 175,641,088
 *   40 M + 8 * + 40 E = 119,594,961,920; embedding + output 2*131072*4096
 *     = 1,073,741,824; final norm 4096 -> 120,668,707,840 total,
 *     12,770,237,440 active
 *   MTP depth "*E": 35,655,680 + 2,873,102,848 + enorm, hnorm, final norm
 *     3*4096 + eh_proj 2*4096^2 = 33,554,432 -> 2,942,325,248 (active
 *     244,863,488)
 * Total with the MTP depth 123,611,033,088: the element count of the
 * BF16 checkpoint Megatron-Bridge's conversion reproduces (Megatron-Bridge
 * 067f987df examples/model_verification_cards/nemotron-3-super-120b-a12b/
 * card.yaml, "all 42,683 source tensors and 123,611,033,088 elements"). */
static void test_hybrid_params_nemotron3_super(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_super(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_mamba_layer, 109640064.0);
    ASSERT_DBL_EXACT(pc.per_attention_layer, 35655680.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 2873102848.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 175641088.0);
    ASSERT_DBL_EXACT(pc.moe_layers, 40.0);
    ASSERT_DBL_EXACT(pc.mamba_layers, 40.0);
    ASSERT_DBL_EXACT(pc.attention_layers, 8.0);
    ASSERT_DBL_EXACT(pc.total, 120668707840.0);
    ASSERT_DBL_EXACT(pc.active, 12770237440.0);
    ASSERT_DBL_EXACT(pc.mtp, 2942325248.0);
    ASSERT_DBL_EXACT(pc.mtp_active, 244863488.0);
    ASSERT_DBL_EXACT(pc.total + pc.mtp, 123611033088.0);
}

/* Training two MTP depths (Megatron --mtp-num-layers 2) on one stage at
 * TP 1: each depth runs the "*E" layers after the decoder
 * (multi_token_prediction.py l.1196-1214), so the rank runs 88 + 4
 * layers, 10 attention, 42 MoE, 40 Mamba-2; it holds (aps_stage_params)
 * 40 M (109,640,064) + 10 * (35,655,680) + 42 E layers as MLP blocks
 * (norm + 2*4096*2688 = 22,024,192; moe.c adds the MoE difference of its
 * 42 MoE layers) + embedding and output 2*536,870,912 + final norm 4096
 * + per depth enorm, hnorm, final norm and eh_proj (12,288 + 33,554,432)
 * = 6,808,054,784.
 * Step FLOPs of one 4096-token sequence grow by 3 x per depth (training.py
 * l.1042-1046, 964-1010): attention layer 2 S 35,651,584 + 4 S (S/2) 32
 * 128 = 429,496,729,600; MoE layer 2 S 22,020,096 + S 303,038,464 (moe.c
 * test_latent_flops) = 1,421,634,174,976; norms and eh_proj 2 S (3 h +
 * 2 h^2) = 274,978,570,240; logits 2 S h V = 4,398,046,511,104 -> 3 x
 * 6,524,155,985,920 = 19,572,467,957,760. */
static void test_hybrid_mtp_stage(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_super(&m);
    aps_training t;
    fx_training(&t, 8, 4096);
    t.mtp_num_layers = 2;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    char msg[APS_REASON_LEN];
    aps_layout lay;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    assert_int_equal(aps_layout_mtp_depths(&lay, 0), 2);
    assert_int_equal(aps_layout_mtp_layers(&lay, 0), 4);
    assert_int_equal(aps_layout_run_layers(&lay, 0), 92);
    aps_hybrid_counts w;
    aps_hybrid_stage_mix(&m, &lay, 0, &w);
    assert_int_equal(w.attn, 10);
    assert_int_equal(w.moe, 42);
    assert_int_equal(w.mamba, 40);
    assert_int_equal(aps_moe_stage_moe_layers(&m, &lay, 0), 42);
    ASSERT_REL(aps_stage_params(&m, &lay, 0), 6808054784.0, 1e-12);
    /* --mtp-use-repeated-layer: the same 92 layers run, one depth's
     * weights held: minus an attention layer (35,655,680), an E layer's
     * MLP block (22,024,192), the norms and eh_proj (33,566,720) ->
     * 6,716,808,192; the MoE difference on 41 MoE layers' weights */
    t.mtp_repeated_layer = true;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    assert_int_equal(aps_layout_run_layers(&lay, 0), 92);
    assert_int_equal(aps_layout_mtp_shared_depths(&lay, 0), 1);
    ASSERT_REL(aps_stage_params(&m, &lay, 0), 6716808192.0, 1e-12);
    ASSERT_REL(aps_stage_matmul_params(&m, &lay, 0),
               40.0 * (76021760.0 + 33554432.0) + 9.0 * 35651584.0 +
                   41.0 * 22020096.0,
               1e-12);

    aps_training t1;
    fx_training(&t1, 1, 4096);
    double base = aps_flops_per_step(&m, &t1, &s, true, false);
    t1.mtp_num_layers = 1;
    ASSERT_REL(aps_flops_per_step(&m, &t1, &s, true, false) - base,
               19572467957760.0, 1e-9);
}

/* The MTP depth's pattern: M, *, - and E (E with experts), required with
 * mtp_layers on a hybrid model, refused on a transformer; training
 * mtp_num_layers on a hybrid model without it is not priced. */
static void test_hybrid_mtp_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_nemotron3_super(&m);
    m.mtp_layer_pattern[1] = 'X';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mtp_layer_pattern: layer 1 is 'X'");
    fx_nemotron3_super(&m);
    m.mtp_layer_pattern[0] = '\0';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mtp_layers: 1 multi-token-prediction layers of "
                    "a hybrid model need model.mtp_layer_pattern");
    aps_model d;
    fx_llama31_8b(&d);
    snprintf(d.mtp_layer_pattern, sizeof d.mtp_layer_pattern, "*-");
    assert_int_equal(aps_model_validate(&d, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mtp_layer_pattern: given without a "
                    "hybrid_layer_pattern");

    aps_model nano;
    fx_nemotron3_nano(&nano);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    t.mtp_num_layers = 1;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    char msg[APS_REASON_LEN];
    ASSERT_REASON(aps_check_all(&nano, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "training.mtp_num_layers needs the layers of an MTP "
                    "depth, model.mtp_layer_pattern");
    fx_nemotron3_super(&m);
    ASSERT_REASON(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NONE, msg);
}

/* Model FLOPs of one 4096-token sequence, each kind of layer once:
 * Mamba 2 S h 10304 + 2 S 6144 K + 7 S d N + 2 S d h = 332,323,094,528;
 * attention 2 S (2 h 4096 + 2 h 256) + 4 S (S / 2) 32 128 =
 * 329,101,869,056; MoE 2 S 2 h (6 * 1856 + 3712) = 653,908,770,816 (the
 * router not counted, as Megatron-LM's moe_layer_flops, training.py @
 * d98e8a64 l.845); logits 2 S h V = 2,886,218,022,912
 * -> 3 x (23 M + 6 * + 23 E + logits) = 82,632,486,420,480: the E layers
 * priced as MoE blocks, not as attention or a dense MLP. */
static void test_hybrid_moe_step_flops(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_nano(&m);
    aps_training t;
    fx_training(&t, 1, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_REL(aps_flops_per_step(&m, &t, &s, true, false),
               82632486420480.0, 1e-12);
}

/* Host launches: the MLP slot is launched on the 29 layers that are not
 * MoE, and holds their 23 Mamba-2 blocks (11 kernels each at TP 1); the
 * attention slot 6 of 52 layers' 5 kernels (no RoPE); fp8 adds one
 * quantize kernel per GEMM. */
static void test_hybrid_moe_host_kernels(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron3_nano(&m);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_host_program hp;
    aps_host_program_build(&m, &t, &s, NULL, &hp);
    ASSERT_REL(29.0 * hp.mlp.fwd, 23.0 * 11.0, 1e-12);
    ASSERT_REL(52.0 * hp.attn.fwd, 6.0 * 5.0, 1e-12);
    /* fp8: a quantize kernel before each of the mixer's two GEMMs, as
     * before the attention's */
    t.precision = APS_PREC_FP8;
    aps_host_program_build(&m, &t, &s, NULL, &hp);
    ASSERT_REL(29.0 * hp.mlp.fwd, 23.0 * (11.0 + 2.0), 1e-12);
    ASSERT_REL(52.0 * hp.attn.fwd, 6.0 * (5.0 + 2.0), 1e-12);
    /* the mamba module captured (Megatron-Bridge's Nemotron 3 recipes,
     * cuda_graph_scope ["attn", "mamba", "moe_router", "moe_preprocess"]):
     * each Mamba-2 block one graph each way, so the MLP slot of the 29
     * non-MoE layers holds 23 launches; the attention slot's 6 graphs */
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_ATTN | APS_CG_MAMBA | APS_CG_MOE_ROUTER;
    aps_host_program_build(&m, &t, &s, NULL, &hp);
    ASSERT_REL(29.0 * hp.mlp.fwd, 23.0 * 1.0, 1e-12);
    ASSERT_REL(29.0 * hp.mlp.bwd, 23.0 * 1.0, 1e-12);
    ASSERT_REL(52.0 * hp.attn.fwd, 6.0 * 1.0, 1e-12);
    /* the mamba module alone (the H100 fp8 recipe): attention from Python */
    t.cuda_graph_scope = APS_CG_MAMBA;
    aps_host_program_build(&m, &t, &s, NULL, &hp);
    ASSERT_REL(29.0 * hp.mlp.fwd, 23.0 * 1.0, 1e-12);
    ASSERT_REL(52.0 * hp.attn.fwd, 6.0 * (5.0 + 2.0), 1e-12);
    /* modules the model lacks are refused, as Megatron-Core asserts */
    char err[APS_REASON_LEN] = "";
    aps_cluster c;
    fx_h100(&c, 8);
    t.cuda_graph_scope = APS_CG_MLP;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    assert_non_null(strstr(err, "training.cuda_graph_scope: mlp: every layer "
                                "of the model is an MoE layer"));
    /* whole layers of this dropless MoE model: its attention, Mamba-2
     * mixers and router, the modules the launch file writes */
    assert_int_equal(aps_cuda_graph_dropless_modules(&m),
                     APS_CG_ATTN | APS_CG_MAMBA | APS_CG_MOE_ROUTER);
}

/** Nemotron 3 Nano on 8 H100, 8 sequences of 4,096 tokens, the default
 *  strategy. */
static void nano_on_h100x8(aps_model *m, aps_cluster *c, aps_training *t,
                           aps_strategy *s)
{
    fx_nemotron3_nano(m);
    fx_h100(c, 8);
    fx_training(t, 8, 4096);
    aps_strategy_defaults(s);
}

/* The combine's share of the sync segment (stagetime.c stage_host): a
 * dropless all-to-all dispatch over 8 EP ranks syncs every MoE layer, and
 * the GPU work after the host's last expert launch is the combine, half
 * the layer's exposed dispatch and combine (APS_COMBINE_SHARE 0.5: the
 * same bytes each way). */
static void test_hybrid_moe_sync_tail(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    nano_on_h100x8(&m, &c, &t, &s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    s.micro_batch_size = 1;
    aps_stage_time st;
    fx_stage_time(&m, &c, &t, &s, 0, &st);
    ASSERT_REL(st.host.sync_layers, 23.0, 0.0); /* every MoE layer syncs */
    assert_true(st.ep_exposed_fwd > 0.0);
    ASSERT_REL(st.moe_g_tail, 0.5 * st.ep_exposed_fwd / 23.0, 1e-12);
    assert_true(st.moe_g_tail < st.moe_g_post);
    /* token drop with padding: static splits, no sync, no segment */
    s.moe_capacity_factor = 1.0;
    fx_stage_time(&m, &c, &t, &s, 0, &st);
    ASSERT_REL(st.host.sync_layers, 0.0, 0.0);
}

/* Without a shared expert an MoE layer's dense-FFN TP collectives go: the
 * whole layer's on a hybrid model (one block per layer), half a
 * transformer layer's (stagetime.c takes drop_mlp_tp layers' worth); with
 * the shared expert they stay. */
static void test_hybrid_moe_tp_drop(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    nano_on_h100x8(&m, &c, &t, &s);
    s.tp_degree = 2;
    s.sequence_parallel = true;
    s.dp_degree = 4;
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.drop_mlp_tp, 0.0);
    m.shared_expert_ffn_hidden_size = 0;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.drop_mlp_tp, 1.0);
    m.hybrid_layer_pattern[0] = '\0'; /* the same widths as a transformer */
    m.mamba_num_heads = m.mamba_head_dim = m.mamba_state_dim = 0;
    m.mamba_num_groups = m.mamba_conv_kernel = m.mamba_chunk_size = 0;
    m.norms_per_layer = 2;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_DBL_EXACT(mc.drop_mlp_tp, 0.5);
}

static void test_hybrid_params_nemotron_h_8b(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    aps_hybrid_counts w;
    aps_hybrid_mix(&m, &w);
    assert_int_equal(w.mamba, 24);
    assert_int_equal(w.attn, 4);
    assert_int_equal(w.mlp, 24);
    /* the mixer without its pre-norm: 109,640,064 - 4,096 */
    ASSERT_DBL_EXACT(aps_mamba_params_tp(&m, 1), 109635968.0);
    /* TP 2: everything split (MambaMixer: tensor_model_parallel on every
     * parameter) */
    ASSERT_DBL_EXACT(aps_mamba_params_tp(&m, 2), 54817984.0);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_mamba_layer, 109640064.0);
    ASSERT_DBL_EXACT(pc.per_attention_layer, 41947136.0);
    ASSERT_DBL_EXACT(pc.per_mlp_layer, 176164864.0);
    ASSERT_DBL_EXACT(pc.mamba_layers, 24.0);
    ASSERT_DBL_EXACT(pc.attention_layers, 4.0);
    ASSERT_DBL_EXACT(pc.mlp_layers, 24.0);
    ASSERT_DBL_EXACT(pc.layers, 7027106816.0);
    ASSERT_DBL_EXACT(pc.embedding, 536870912.0);
    ASSERT_DBL_EXACT(pc.output_layer, 536870912.0);
    ASSERT_DBL_EXACT(pc.final_norm, 4096.0);
    ASSERT_DBL_EXACT(pc.total, 8100852736.0);
    ASSERT_DBL_EXACT(pc.active, 8100852736.0);
}

/* A pattern with parallel layers P (Falcon-H1's FalconH1Layer: a Mamba-2
 * and an attention mixer under one norm, then an MLP under a second) on
 * Nemotron-H-8B's widths, "PPM*": 4 layers, each P one layer of every
 * kind and two blocks.  Kinds: mamba 3, attn 3, mlp 2, parallel 2;
 * shares per layer 3/4, 3/4, 2/4; blocks (4 + 2) / 4 = 1.5.  Parameters:
 * the kinds' per-layer counts (each with a norm, test above) less one
 * norm per P: 3 x 109,640,064 + 3 x 41,947,136 + 2 x 176,164,864 -
 * 2 x 4,096 = 807,083,136; the mean layer on one rank the same over 4. */
static void test_hybrid_parallel_layers(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, "PPM*");
    aps_hybrid_counts w;
    aps_hybrid_mix(&m, &w);
    assert_int_equal(w.mamba, 3);
    assert_int_equal(w.attn, 3);
    assert_int_equal(w.mlp, 2);
    assert_int_equal(w.parallel, 2);
    ASSERT_DBL_EXACT(w.mamba_share, 0.75);
    ASSERT_DBL_EXACT(w.attn_share, 0.75);
    ASSERT_DBL_EXACT(w.mlp_share, 0.5);
    ASSERT_DBL_EXACT(w.blocks, 1.5);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.layers, 807083136.0);
    assert_true(fabs(4.0 * aps_layer_params_tp(&m, 1) - 807083136.0) < 1e-3);
    /* without the gated RMSNorm: d = 8192 fewer per Mamba-2 mixer */
    m.mamba_no_rmsnorm = true;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.layers, 807083136.0 - 3.0 * 8192.0);
}

/* One Mamba-2 layer of Nemotron-H-8B over T = 8192 tokens, forward:
 *   in_proj 2 T h 18560 = 1,245,540,515,840
 *   conv    2 T 10240 * 4 = 671,088,640
 *   scan    7 T d N = 7 * 8192 * 8192 * 128 = 60,129,542,144
 *   out_proj 2 T d h = 549,755,813,888
 *   -> 1,856,096,960,512.
 * Saved for backward (bf16, TP 1), per token: zxBCdt 2 * 18560 = 37,120;
 * out_x and y 2 * 2 * 8192 = 32,768; out_proj input 2 * 8192 = 16,384
 * -> 86,272 B, x 8192 = 706,740,224; with the block's norm input and
 * output (2 + 2) * 4096 per token: 840,957,952. */
static void test_hybrid_mamba_layer_cost(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    double T = 8192.0;
    ASSERT_DBL_EXACT(aps_mamba_flops(&m, T), 1856096960512.0);
    ASSERT_DBL_EXACT(aps_mamba_scan_flops(&m, T), 60129542144.0);
    aps_training t;
    fx_training(&t, 8, 8192);
    ASSERT_DBL_EXACT(aps_mamba_saved_bytes(&m, &t, T, 1.0), 706740224.0);
    /* a Mamba-only pattern: the mean layer is the Mamba-2 layer */
    aps_model mm;
    fx_nemotron_h(&mm, "MMMM");
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_layer_cost lc;
    aps_layer_activations(&mm, &t, &s, NULL, &lc);
    ASSERT_DBL_EXACT(lc.act_full, 840957952.0);
    ASSERT_DBL_EXACT(lc.act_input, 2.0 * T * 4096.0);
}

/* The SSD scan at its measured training rate (internal.h
 * APS_SSD_ELEMS_PER_HBM_BYTE, derived from state-spaces/mamba issue 904):
 * on the H100 preset (3.35e12 B/s) 0.927 x 3.35e12 = 3.10545e12 state
 * elements/s; a B200 takes the measured Blackwell rate, 4.972e12, not
 * its bandwidth's 0.927 x 8e12 = 7.416e12.  A Mamba-only layer's forward
 * GEMM slot is in_proj + out_proj + T d N / rate: Nemotron-H 8B, T = 8192,
 * d = 8192, N = 128: 8,589,934,592 elements / 3.10545e12 = 2.766 ms.  A
 * device's ssd_scan_rate replaces the derived rate. */
static void test_hybrid_ssd_scan_rate(void **state)
{
    (void)state;
    aps_cluster c;
    fx_h100(&c, 8);
    ASSERT_REL(aps_ssd_scan_rate(&c.device), 3.10545e12, 1e-12);
    aps_device b200;
    assert_int_equal(aps_device_preset("b200", &b200), APS_OK);
    ASSERT_REL(aps_ssd_scan_rate(&b200), 4.972e12, 1e-12);
    aps_model mm;
    fx_nemotron_h(&mm, "MMMM");
    aps_training t;
    fx_training(&t, 8, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_layer_cost lc;
    aps_layer_activations(&mm, &t, &s, NULL, &lc);
    aps_layer_times(&mm, &c, &t, &s, NULL, &lc);
    double T = 8192.0, gemms = aps_gemm_time(&c.device, t.precision, T,
                                             18560.0, 4096.0) +
                               aps_gemm_time(&c.device, t.precision, T,
                                             4096.0, 8192.0);
    ASSERT_REL(lc.gemm_fwd, gemms + T * 8192.0 * 128.0 / 3.10545e12, 1e-12);
    c.device.ssd_scan_rate = 1e12; /* the user's own */
    aps_layer_times(&mm, &c, &t, &s, NULL, &lc);
    ASSERT_REL(lc.gemm_fwd, gemms + T * 8192.0 * 128.0 / 1e12, 1e-12);
    c.device.ssd_scan_rate = 1.0; /* below the bound: refused */
    char msg[APS_REASON_LEN];
    assert_int_equal(aps_cluster_validate(&c, msg, sizeof msg), APS_EINVAL);
    assert_non_null(strstr(msg, "cluster.device.ssd_scan_rate: must be 0"));
}

/* Model FLOPs of one 8192-token sequence against Megatron-LM's
 * hybrid_flops (training.py @ d98e8a64), plus the conv term it leaves out:
 * 3 x (4 attn + 24 mlp + 24 mamba + logits), attn = 4 T h (h + h g/n) +
 * 2 T^2 h = 1,236,950,581,248; mlp 4 T h f = 2,886,218,022,912; mamba
 * 1,856,096,960,512; logits 2 T h V = 8,796,093,022,208
 * -> 3 x 127,559,454,949,376 = 382,678,364,848,128. */
static void test_hybrid_step_flops(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    aps_training t;
    fx_training(&t, 1, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    ASSERT_REL(aps_flops_per_step(&m, &t, &s, true, false),
               382678364848128.0, 1e-12);
}

/* Bad values: one-line messages naming the field and the value. */
static void test_hybrid_validation(void **state)
{
    (void)state;
    char err[256];
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    m.hybrid_layer_pattern[3] = 'X';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.hybrid_layer_pattern: layer 3 is 'X'");
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    m.hybrid_layer_pattern[3] = 'E';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "E (MoE) layers without num_experts");
    fx_nemotron3_nano(&m);
    m.moe_layer_freq = 2;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "its E layers place the experts");
    fx_nemotron3_nano(&m);
    m.hybrid_layer_pattern[1] = 'M';
    for (char *c = m.hybrid_layer_pattern; *c; c++)
        if (*c == 'E')
            *c = '-';
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "num_experts given without E (MoE) layers");
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    m.num_layers = 50;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "52 layers, but num_layers = 50");
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    m.mamba_num_groups = 3;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mamba_num_groups: 3 does not divide");
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    m.mamba_state_dim = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mamba_state_dim: must be in [1, 1048576]");
    aps_model d;
    fx_llama31_8b(&d);
    d.mamba_num_heads = 8;
    assert_int_equal(aps_model_validate(&d, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.mamba_num_heads: 8 given without a "
                    "hybrid_layer_pattern");
}

/* PP > 1 and full recompute are priced stage by stage
 * (test_hybrid_stages); TP must divide the Mamba heads and groups
 * (MambaMixer's asserts). */
static void test_hybrid_refusals(void **state)
{
    (void)state;
    char msg[APS_REASON_LEN];
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 64, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.dp_degree = 4;
    aps_reason r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NONE, msg);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NONE, msg);

    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    /* context parallelism: Megatron runs it, apsearch does not price the
     * Mamba layers under it */
    s.dp_degree = 4;
    s.cp_degree = 2;
    r = aps_check_all(&m, &c, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "context parallelism of the Mamba layers");
    aps_model nano;
    fx_nemotron3_nano(&nano);
    aps_training to = t;
    to.overlap_moe_expert_parallel_comm = true;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    r = aps_check_all(&nano, &c, &to, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "build_schedule_plan");
    assert_int_equal(aps_check_all(&nano, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    m.mamba_num_groups = 2; /* 128 heads % 2 = 0, but tp 8 */
    aps_strategy_defaults(&s);
    s.tp_degree = 8;
    r = aps_check_tp(&m, &t, &s, msg, sizeof msg);
    ASSERT_REASON(r, APS_REASON_TP_DIVISIBILITY, msg);
    ASSERT_HAS(msg, "mamba_num_groups = 2 is not divisible by tp_degree = 8");
}

/* fp8 (per-tensor current scaling, Megatron-LM / TransformerEngine: an
 * unfused cast 4 B per element, one fused into its producer 3 B) on
 * Nemotron-H-8B, T = 8192 tokens, TP 1.  Every block's GEMMs cast their
 * inputs forward and their output gradients backward, each block by its
 * share of the pattern, per token:
 *   attention (QKV 6144 columns from the fused norm, out-proj 4096):
 *     fwd 3 h + 4 * 4096 = 28,672; bwd 4 (6144 + h) = 40,960
 *   MLP (fc1 from the fused norm, fc2's input and fc1's output gradient
 *     from the activation, fused; f = 21504):
 *     fwd 3 h + 3 f = 76,800; bwd 4 h + 3 f = 80,896
 *   Mamba-2 (in_proj 18560 columns from the fused norm, out_proj's input
 *     d = 8192 from the gated RMSNorm):
 *     fwd 3 h + 4 d = 45,056; bwd 4 (18560 + h) = 90,624
 * Over the 52 layers (4 *, 24 -, 24 M): fwd 3,039,232 and bwd 4,280,320
 * bytes per token -> 24,897,388,544 and 35,064,381,440 bytes.  Weight
 * copies (both fp8 layouts, 2 B per matrix parameter, kept across the
 * micro-batches): 24 M (in_proj 76,021,760 + out_proj 33,554,432) + 4 *
 * 41,943,040 + 24 - 176,160,768 = 7,025,459,200 matrix parameters ->
 * 14,050,918,400 bytes more than bf16 at TP 1 (the conv, dt_bias, A_log, D and
 * the norms are not matrices; embedding and output layer are not TE
 * linears). */
static void test_hybrid_fp8_casts_and_copies(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, NEMOTRON_H_8B_PATTERN);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 8192);
    t.precision = APS_PREC_FP8;
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    aps_layer_cost lc;
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(52.0 * lc.fp8_cast_fwd * hbm, 24897388544.0, 1e-12);
    ASSERT_REL(52.0 * lc.fp8_cast_bwd * hbm, 35064381440.0, 1e-12);
    ASSERT_REL(52.0 * aps_layer_matmul_params(&m), 7025459200.0, 1e-12);
    /* a quantized run estimates (it was refused): TP 2 with SP, the
     * distributed optimizer over DP 4; the weight copies split with the
     * matrices, 14,050,918,400 / 2 bytes more than bf16 */
    s.tp_degree = 2;
    s.sequence_parallel = true;
    s.dp_degree = 4;
    s.zero_stage = 1;
    char msg[APS_REASON_LEN];
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_estimate *q = test_malloc(sizeof *q), *b = test_malloc(sizeof *b);
    fx_run(&m, &c, &t, &s, q);
    assert_int_equal(q->reason, APS_REASON_NONE);
    assert_true(q->step_time > 0);
    t.precision = APS_PREC_BF16;
    fx_run(&m, &c, &t, &s, b);
    ASSERT_REL(q->mem[APS_MEM_PARAMS] - b->mem[APS_MEM_PARAMS],
               14050918400.0 / 2.0, 1e-9);
    test_free(q);
    test_free(b);
}

/* MXFP8 (block-scaled: a cast reads bf16 and writes both layouts, 1 +
 * 1/32 B each: 2 + 2 x 33/32 = 4.0625 B unfused, 2.0625 B fused into an
 * activation; the norm's output is cast in a pass of its own, unfused) on
 * a Mamba-only pattern, per token: fwd 4.0625 (h + d) = 49,920; bwd
 * 4.0625 (18560 + h) = 92,040. */
static void test_hybrid_mxfp8_mamba_casts(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, "MMMM");
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 8192);
    t.precision = APS_PREC_MXFP8;
    aps_strategy s;
    aps_strategy_defaults(&s);
    aps_layer_cost lc;
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(lc.fp8_cast_fwd * hbm, 8192.0 * 49920.0, 1e-12);
    ASSERT_REL(lc.fp8_cast_bwd * hbm, 8192.0 * 92040.0, 1e-12);
}

/* Pipeline stages of a small pattern "M-M*M-M-" (Nemotron-H-8B widths:
 * per layer M 109,640,064, * 41,947,136, - 176,164,864 parameters; test_
 * hybrid_params_nemotron_h_8b) as Megatron-LM's HybridModel builds them:
 * segment vp p + rank of the pattern split into the model chunks
 * (hybrid_layer_allocation.py select_pipeline_segment @ d98e8a64).
 * Parameters of each rank, TP 1, embedding and output layer 131072 x 4096
 * = 536,870,912 each (Megatron pads to 128: 131072 stays), final norm
 * 4096:
 *   pp 2: "M-M*" 2 M + - + * + embedding = 974,263,040;
 *         "M-M-" 2 M + 2 - + norm + output = 1,108,484,864
 *   pp 4: "M-" 285,804,928 + embedding; "M*" 151,587,200; "M-";
 *         "M-" + norm + output
 *   pp 2, vpp 2 (chunks "M-" "M*" "M-" "M-"; rank 0 holds chunks 0 and
 *         2, rank 1 chunks 1 and 3): "M-" "M-" + embedding =
 *         1,108,480,768; "M*" "M-" + norm + output = 974,267,136.
 * The pattern's mean layer would give every rank the same 4 layers. */
static void test_hybrid_stage_params(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, "M-M*M-M-");
    aps_training t;
    fx_training(&t, 8, 8192);
    aps_strategy s;
    aps_strategy_defaults(&s);
    char msg[APS_REASON_LEN];
    aps_layout lay;
    const double E = 536870912.0, M = 109640064.0, A = 41947136.0,
                 F = 176164864.0, N = 4096.0;
    struct { int64_t p, v; double want[4]; } cases[] = {
        {2, 1, {2 * M + F + A + E, 2 * M + 2 * F + N + E}},
        {4, 1, {M + F + E, M + A, M + F, M + F + N + E}},
        {2, 2, {2 * M + 2 * F + E, 2 * M + A + F + N + E}},
    };
    ASSERT_DBL_EXACT(cases[0].want[0], 974263040.0);
    ASSERT_DBL_EXACT(cases[0].want[1], 1108484864.0);
    ASSERT_DBL_EXACT(cases[2].want[0], 1108480768.0);
    ASSERT_DBL_EXACT(cases[2].want[1], 974267136.0);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        s.pp_degree = cases[k].p;
        s.vpp_degree = cases[k].v;
        s.dp_degree = 8 / cases[k].p;
        assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                         APS_REASON_NONE);
        for (int64_t i = 0; i < cases[k].p; i++)
            ASSERT_DBL_EXACT(aps_stage_params(&m, &lay, i), cases[k].want[i]);
    }
    /* the FSDP unit: the largest layer the rank holds (rank 1 of pp 4:
     * "M*", the Mamba-2 layer; the MLP layer elsewhere) */
    s.pp_degree = 4;
    s.vpp_degree = 1;
    s.dp_degree = 2;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 1), M);
    ASSERT_DBL_EXACT(aps_largest_layer_params(&m, &lay, 0), F);
}

/* Time terms of each rank's layers, "M-M*M-M-" over pp 2, T = 8192
 * tokens, TP 1 (test_hybrid_fp8_casts_and_copies has the per-token cast
 * bytes of each block):
 *   fp8 casts, forward per token: attention 28,672, MLP 76,800, Mamba-2
 *     45,056 -> "M-M*" 2 x 45,056 + 76,800 + 28,672 = 195,584;
 *     "M-M-" 2 x 45,056 + 2 x 76,800 = 243,712;
 *   backward: attention 40,960, MLP 80,896, Mamba-2 90,624 -> 303,104
 *     and 343,040;
 *   attention core (bf16, flash, causal: 4 T (T / 2) a d = 4 x 8192 x
 *     4096 x 32 x 128 = 549,755,813,888 FLOPs) on the rank holding the
 *     attention layer, none on the other;
 *   host: 11 Mamba-2 kernels per layer on both; the attention layer's on
 *     rank 0 only.
 * Each is the rank's sum over its layers: layers x its mean layer
 * (aps_stage_layer_cost). */
static void test_hybrid_stage_time_terms(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, "M-M*M-M-");
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 8192);
    t.precision = APS_PREC_FP8;
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
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    double rate = c.device.peak_flops_bf16 * 0.45, T = 8192.0;
    double cast_f[] = {195584.0, 243712.0}, cast_b[] = {303104.0, 343040.0};
    double core[] = {549755813888.0 / rate, 0.0};
    for (int64_t i = 0; i < 2; i++) {
        const aps_layer_cost *r =
            aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, i, &own[i]);
        assert_ptr_equal(r, &own[i]);
        ASSERT_REL(4.0 * r->fp8_cast_fwd * hbm, T * cast_f[i], 1e-12);
        ASSERT_REL(4.0 * r->fp8_cast_bwd * hbm, T * cast_b[i], 1e-12);
        ASSERT_REL(4.0 * r->attn_fwd, core[i], 1e-12);
    }
    /* launches: the attention slot holds the attention share of the
     * rank's layers (rank 1: none), the MLP slot the Mamba-2 and MLP
     * blocks of its non-MoE layers */
    aps_host_program whole;
    aps_host_program_build(&m, &t, &s, NULL, &whole);
    assert_true(own[0].host.attn.fwd > 0.0);
    ASSERT_DBL_EXACT(own[1].host.attn.fwd, 0.0);
    ASSERT_REL(own[0].host.attn.fwd, 0.25 / 0.125 * whole.attn.fwd, 1e-12);
    /* one stage: the model's mean layer itself */
    s.pp_degree = 1;
    s.dp_degree = 8;
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    assert_ptr_equal(aps_stage_layer_cost(&m, &c, &t, &s, &lay, &lc, 0,
                                          &own[0]), &lc);
}

/* Full recompute (uniform, one layer per group; Megatron-LM d98e8a64
 * megatron/core/recompute.py checkpointed_forward, which HybridStack runs
 * as TransformerBlock does): every layer keeps its input, A s h =
 * 2 x 8192 x 4096 = 67,108,864 bytes, whatever its kind, and in the
 * backward one layer's whole set is alive again: at the peak, the largest
 * kind the rank holds.  Saved per layer (bf16, TP 1, flash, no
 * dropout), the block's norm input and output 2 x 67,108,864 =
 * 134,217,728 plus: Mamba-2 706,740,224 (test_hybrid_mamba_layer_cost)
 * -> 840,957,952; attention Q, K, V 2 x 8192 x (4096 + 2048) and the
 * context 2 x 8192 x 4096 = 167,772,160 and the softmax statistics
 * 4 x 32 x 8192 = 1,048,576 -> 303,038,464; MLP (squared ReLU) the fc1
 * output and the fc2 input 4 x 8192 x 21504 = 704,643,072 -> 838,860,800.
 * pp 2, 1F1B, 2 micro-batches (8 sequences over DP 4): rank 0 holds 2
 * in flight, rank 1 one.
 *   rank 0 "M-M*": 2 x 4 x 67,108,864 + 840,957,952 (Mamba-2) =
 *     536,870,912 + 840,957,952 = 1,377,828,864
 *   rank 1 "M-M-": (4 + 2) x 67,108,864 (with the final norm's and the
 *     output layer's inputs) + 840,957,952 (Mamba-2, above the MLP's
 *     838,860,800) = 402,653,184 + 840,957,952 = 1,243,611,136
 * (the mean layer's, 705,953,792 and 839,909,376, was counted before) */
static void test_hybrid_stage_full_recompute(void **state)
{
    (void)state;
    aps_model m;
    fx_nemotron_h(&m, "M-M*M-M-");
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 8192);
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
    ASSERT_REL(e->stages[0].mem[APS_MEM_ACTIVATIONS], 1377828864.0, 1e-12);
    ASSERT_REL(e->stages[1].mem[APS_MEM_ACTIVATIONS], 1243611136.0, 1e-12);
    assert_int_equal(e->stages[0].recompute_layers, 4);
    /* the recomputed forward is the rank's layers' forward: with every
     * layer recomputed, the forward of its layers once more */
    for (int64_t i = 0; i < 2; i++) {
        aps_stage_time st;
        fx_stage_time(&m, &c, &t, &s, i, &st);
        ASSERT_REL(st.recompute, st.comp_fwd, 1e-12);
    }
    test_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hybrid_params_nemotron_h_8b),
        cmocka_unit_test(test_hybrid_mamba_layer_cost),
        cmocka_unit_test(test_hybrid_ssd_scan_rate),
        cmocka_unit_test(test_hybrid_step_flops),
        cmocka_unit_test(test_hybrid_validation),
        cmocka_unit_test(test_hybrid_parallel_layers),
        cmocka_unit_test(test_hybrid_refusals),
        cmocka_unit_test(test_hybrid_stage_params),
        cmocka_unit_test(test_hybrid_stage_time_terms),
        cmocka_unit_test(test_hybrid_stage_full_recompute),
        cmocka_unit_test(test_hybrid_params_nemotron3_nano),
        cmocka_unit_test(test_hybrid_moe_step_flops),
        cmocka_unit_test(test_hybrid_params_nemotron3_super),
        cmocka_unit_test(test_hybrid_mtp_stage),
        cmocka_unit_test(test_hybrid_mtp_validation),
        cmocka_unit_test(test_hybrid_moe_host_kernels),
        cmocka_unit_test(test_hybrid_moe_sync_tail),
        cmocka_unit_test(test_hybrid_moe_tp_drop),
        cmocka_unit_test(test_hybrid_fp8_casts_and_copies),
        cmocka_unit_test(test_hybrid_mxfp8_mamba_casts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
