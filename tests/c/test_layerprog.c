/*
 * test_layerprog.c -- src/core/layerprog.c: the kernels one layer launches
 * per micro-batch (Megatron-Core with TransformerEngine), what CUDA graphs
 * capture, the host's seconds, and a rank's time when the host sets it.
 *
 * Counts, forward, from the layer program's table:
 *   attention: input norm + QKV, core, projection, bias-dropout-add = 5;
 *     RoPE +2 (Q and K); Q/K norms +2; SP all-gather and reduce-scatter
 *     +2; one quantize per GEMM input in fp8 (2 GEMMs) +2
 *   dense MLP: norm + fc1, activation, fc2, bias-dropout-add = 5; SP +2;
 *     fp8 +2
 *   MoE before the sync: norm 1 + fused router 31 + all-to-all
 *     preprocess 9 = 41 (flex: norm 1 + router and preprocess 17 = 18);
 *     with the router captured: norm 1 + one graph = 2 (backward 2 + 1)
 *   MoE after the sync: dispatch and combine all-to-alls 3 (flex 2),
 *     unpermute 1, sorts 3 (more than one local expert), TEGroupedMLP 3
 *     from Python; per local expert from TE's loop: 2 GEMMs x (GEMM 1 +
 *     fp8 quantize 1)
 *   backward: twice the forward; a captured block, one graph each way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

/** The layer program of m under t and s. */
static aps_host_program program_of(const aps_model *m, const aps_training *t,
                                   const aps_strategy *s)
{
    aps_host_program hp;
    aps_host_program_build(m, t, s, NULL, &hp);
    return hp;
}

/** Qwen3-30B-A3B's MoE layout (128 experts, top-8, Q/K norms) on EP 8,
 *  8 sequences of 4,096 tokens in fp8. */
static void qwen3_moe(aps_model *m, aps_training *t, aps_strategy *s)
{
    fx_qwen3_30b_a3b(m);
    aps_strategy_defaults(s);
    s->ep_degree = 8;
    fx_training(t, 8, 4096);
    t->precision = APS_PREC_FP8;
}

static void test_dense_counts(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    fx_llama31_8b(&m);
    fx_training(&t, 1, 4096);
    aps_strategy_defaults(&s);
    aps_host_program hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 7.0 && hp.attn.bwd == 14.0); /* 5 + RoPE 2 */
    assert_true(hp.mlp.fwd == 5.0 && hp.mlp.bwd == 10.0);
    assert_true(hp.moe_pre.fwd == 0.0 && !hp.sync && !hp.step_graphed);

    /* fp8, TP 2 with SP, Q/K norms: 5 + 2 + 2 + 2 + 2 and 5 + 2 + 2 */
    m.qk_norm = true;
    t.precision = APS_PREC_FP8;
    s.tp_degree = 2;
    s.sequence_parallel = true;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 13.0 && hp.attn.bwd == 26.0);
    assert_true(hp.mlp.fwd == 9.0 && hp.mlp.bwd == 18.0);

    /* TP 16 over the 8 KV heads (replicated): the QKV output's all-gather
     * and its torch.cat, 2 more forward, twice that backward */
    s.tp_degree = 16;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 15.0 && hp.attn.bwd == 30.0);
    assert_true(hp.mlp.fwd == 9.0);
}

static void test_graph_scopes(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    fx_llama31_8b(&m);
    fx_training(&t, 1, 4096);
    aps_strategy_defaults(&s);
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_LAYER; /* the whole layer: one graph */
    aps_host_program hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 1.0 && hp.attn.bwd == 1.0);
    assert_true(hp.mlp.fwd == 0.0 && hp.mlp.bwd == 0.0);
    t.cuda_graph_scope = APS_CG_ATTN;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 1.0 && hp.mlp.fwd == 5.0 && hp.mlp.bwd == 10.0);
    /* modules: the dense MLP alone, then with the attention */
    t.cuda_graph_scope = APS_CG_MLP;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 7.0 && hp.mlp.fwd == 1.0 && hp.mlp.bwd == 1.0);
    t.cuda_graph_scope = APS_CG_ATTN | APS_CG_MLP;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 1.0 && hp.mlp.fwd == 1.0);
    /* a dense model has no router, nor Mamba-2 mixers: refused */
    aps_cluster c;
    fx_h100(&c, 8);
    char why[APS_REASON_LEN] = "";
    t.cuda_graph_scope = APS_CG_ATTN | APS_CG_MOE_ROUTER;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, why, sizeof why),
                     APS_EINVAL);
    assert_string_equal(why, "training.cuda_graph_scope: moe_router: the "
                             "model has no experts (llama-3.1-8b)");
    t.cuda_graph_scope = APS_CG_MAMBA;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, why, sizeof why),
                     APS_EINVAL);
    assert_string_equal(why, "training.cuda_graph_scope: mamba: the model "
                             "has no Mamba-2 layers (llama-3.1-8b)");
    /* a value that is no scope */
    t.cuda_graph_scope = (aps_cuda_graph_scope)64;
    assert_int_equal(aps_training_validate(&t, why, sizeof why), APS_EINVAL);
    t.cuda_graph_scope = APS_CG_FULL_ITERATION;
    assert_true(program_of(&m, &t, &s).step_graphed);
    /* the scope does nothing without cuda_graphs, and is refused so */
    t.cuda_graphs = false;
    hp = program_of(&m, &t, &s);
    assert_true(hp.attn.fwd == 7.0 && !hp.step_graphed);
    char err[APS_REASON_LEN] = "";
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_string_equal(err, "training.cuda_graph_scope: a scope needs "
                             "training.cuda_graphs = true (it says what the "
                             "graphs capture)");
    t.cuda_graph_scope = APS_CG_LAYER; /* the default: accepted */
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
}

static void test_moe_counts(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    qwen3_moe(&m, &t, &s);
    aps_host_program hp = program_of(&m, &t, &s);
    /* dropless all-to-all on EP 8: synced; 16 local experts */
    assert_true(hp.sync);
    assert_true(hp.attn.fwd == 13.0 - 2.0);   /* no SP at TP 1 */
    assert_true(hp.moe_pre.fwd == 41.0 && hp.moe_pre.bwd == 82.0);
    assert_true(hp.moe_post.fwd == 10.0 && hp.moe_post.bwd == 20.0);
    /* TE's loops: per local expert and GEMM (fc1, fc2) one quantize
     * (_split_quantize) and one cuBLASLt GEMM (general_grouped_gemm);
     * the backward's dgrad and wgrad twice as many */
    assert_true(hp.moe_loop.fwd == 32.0 && hp.moe_loop.bwd == 64.0);
    assert_true(hp.moe_loop_gemm.fwd == 32.0 && hp.moe_loop_gemm.bwd == 64.0);

    /* the router unfused (training.moe_router_fusion off): NVIDIA's 72
     * router kernels for the fused 31 */
    t.moe_router_fusion = false;
    hp = program_of(&m, &t, &s);
    assert_true(hp.moe_pre.fwd == 41.0 - 31.0 + 72.0);
    t.moe_router_fusion = true;

    /* router and preprocess captured (moe_router + moe_preprocess) */
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_MOE_ROUTER;
    hp = program_of(&m, &t, &s);
    assert_true(hp.moe_pre.fwd == 2.0 && hp.moe_pre.bwd == 3.0);
    assert_true(hp.attn.fwd == 11.0);
    /* under a capacity factor the all-to-all's preprocess syncs with the
     * host and stays outside the graph (Megatron-Core asserts
     * moe_preprocess away; the launch file writes moe_router alone):
     * norm 1 + graph 1 + preprocess 9, backward 2 x 10 + 1 */
    s.moe_capacity_factor = 1.0;
    hp = program_of(&m, &t, &s);
    assert_true(hp.moe_pre.fwd == 11.0 && hp.moe_pre.bwd == 21.0);
    s.moe_capacity_factor = 0.0;

    /* whole-layer graphs capture a token-drop layer, not a dropless one */
    t.cuda_graph_scope = APS_CG_LAYER;
    hp = program_of(&m, &t, &s);
    assert_true(hp.moe_post.fwd == 10.0 && hp.moe_pre.fwd == 2.0);
    s.moe_capacity_factor = 1.0;
    hp = program_of(&m, &t, &s);
    assert_true(!hp.sync && hp.moe_pre.fwd == 0.0 && hp.moe_post.fwd == 0.0 &&
                hp.moe_loop.fwd == 0.0 && hp.attn.fwd == 1.0);

    /* flex (DeepEP / HybridEP): 18 before, 9 after; dropless, its
     * dispatch waits on the host for the received counts (fused_a2a.py):
     * synced as the all-to-all is */
    t.cuda_graphs = false;
    s.moe_capacity_factor = 0.0;
    s.moe_token_dispatcher = APS_MOE_FLEX;
    hp = program_of(&m, &t, &s);
    assert_true(hp.sync && hp.moe_pre.fwd == 18.0 && hp.moe_post.fwd == 9.0);
    /* one EP rank (and ETP 1): no dispatch, no sync */
    s.ep_degree = 1;
    hp = program_of(&m, &t, &s);
    assert_true(!hp.sync);
    s.ep_degree = 8;

    /* padded token drop: HybridEP knows its permuted token count on the
     * host (_HybridEPManager drop_and_pad), no sync; DeepEP cannot pad,
     * which the MoE check refuses naming the backend
     * (transformer_config.py l.1754-1761 @ d98e8a64) */
    char msg[256];
    s.dp_degree = 8; /* the ep 8 ranks out of the stage's dp 8 */
    s.moe_capacity_factor = 1.0;
    t.moe_flex_dispatcher_backend = APS_FLEX_HYBRIDEP;
    hp = program_of(&m, &t, &s);
    assert_true(!hp.sync);
    assert_int_equal(aps_check_moe(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    /* dropless HybridEP with a rank budget: num_permuted_tokens is the
     * static budget, the dispatch non-blocking (token_dispatcher.py
     * l.1098-1110, fused_a2a.py l.418-420 @ d98e8a64): no sync either */
    s.moe_capacity_factor = 0.0;
    hp = program_of(&m, &t, &s);
    assert_true(hp.sync);
    t.moe_expert_rank_capacity_factor = 1.5;
    hp = program_of(&m, &t, &s);
    assert_true(!hp.sync && hp.moe_pre.fwd == 18.0 && hp.moe_post.fwd == 9.0);
    t.moe_expert_rank_capacity_factor = 0.0;
    s.moe_capacity_factor = 1.0;
    t.moe_flex_dispatcher_backend = APS_FLEX_DEEPEP;
    assert_int_equal(aps_check_moe(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "deepep backend does not pad to capacity"));
    s.moe_capacity_factor = 0.0;
    assert_int_equal(aps_check_moe(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    /* DeepEP needs TP x EP > 1 of the experts (token_dispatcher.py
     * "DeepEP dispatcher requires TPxEP > 1"); HybridEP does not */
    s.ep_degree = 1;
    assert_int_equal(aps_check_moe(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "deepep backend needs expert"));
    t.moe_flex_dispatcher_backend = APS_FLEX_HYBRIDEP;
    assert_int_equal(aps_check_moe(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.moe_flex_dispatcher_backend = APS_FLEX_DEEPEP;
    s.ep_degree = 8;
    s.dp_degree = 1;

    /* SequentialMLP: 3 + 2 quantizes per expert from Python, no loop */
    s.moe_token_dispatcher = APS_MOE_ALLTOALL;
    s.moe_grouped_gemm = 0;
    hp = program_of(&m, &t, &s);
    assert_true(hp.moe_post.fwd == 7.0 + 16.0 * 5.0 && hp.moe_loop.fwd == 0.0);
}

/* Megatron refuses selective recompute of the whole MoE block around a
 * graphed router (transformer_config.py l.2862-2868 @ d98e8a64): the
 * moe_router scopes, and whole-layer graphs of a dropless layer, which the
 * launch file writes as attn moe_router moe_preprocess; moe_act, padded
 * whole-layer graphs and attention graphs pass. */
static void test_graph_recompute_refused(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    char msg[512];
    qwen3_moe(&m, &t, &s);
    s.dp_degree = 8;
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    s.recompute_modules = APS_RCM_MLP | APS_RCM_MOE;
    t.cuda_graphs = true;
    const aps_cuda_graph_scope refused[] = {APS_CG_MOE_ROUTER,
                                            APS_CG_ATTN_MOE_ROUTER, APS_CG_LAYER};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        t.cuda_graph_scope = refused[i];
        assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                         APS_REASON_FRAMEWORK_UNSUPPORTED);
        assert_non_null(strstr(msg, "recompute_modules moe with a CUDA graph"));
    }
    s.moe_capacity_factor = 1.0; /* padded: the layer is one graph */
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.moe_capacity_factor = 0.0;
    t.cuda_graph_scope = APS_CG_ATTN;
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.cuda_graph_scope = APS_CG_MOE_ROUTER;
    s.recompute_modules = APS_RCM_MLP | APS_RCM_MOE_ACT;
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);

    /* the 1F1B EP overlap with Megatron-FSDP takes no per-layer graphs
     * (mcore_fsdp_adapter.py:182-187 @ d98e8a64) */
    s.layer_recompute = APS_RECOMPUTE_NONE;
    s.recompute_modules = 0u;
    s.dp_degree = 1;
    s.fsdp_degree = 8;
    t.fsdp_impl = APS_FSDP_IMPL_MEGATRON_FSDP;
    t.overlap_moe_expert_parallel_comm = true;
    t.cuda_graph_scope = APS_CG_ATTN;
    assert_int_equal(aps_mfsdp_check(&t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "per-layer CUDA graphs"));
    t.cuda_graph_scope = APS_CG_FULL_ITERATION;
    assert_int_equal(aps_mfsdp_check(&t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.cuda_graphs = false;
    t.cuda_graph_scope = APS_CG_LAYER;
    assert_int_equal(aps_mfsdp_check(&t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
}

/* Host seconds of a rank: 4 layers, 2 of them MoE, 1 recomputed, at 1 ms
 * per Python launch, 0.1 ms per loop launch and 0.5 ms per loop GEMM,
 * with the program of test_moe_counts (fp8, EP 8, no graphs; 32 quantizes
 * and 32 GEMMs in TE's loops forward):
 *   forward  4 x 11 ms (attention) + 2 x 7 ms (the dense layers' fp8
 *            MLP) + 2 x (41 + 10 + 3.2 + 16) ms = 198.4 ms
 *   backward 4 x 22 + 2 x 14 + 2 x (82 + 20) = 320 ms Python, 2 x 6.4
 *            ms quantizes, 2 x 32 ms GEMMs, + 1/4 of the forward
 *            = 320 + 12.8 + 64 + 49.6 ms */
static void test_host_stage_seconds(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    qwen3_moe(&m, &t, &s);
    aps_host_program hp = program_of(&m, &t, &s);
    aps_device d = {0};
    d.host_seconds_per_kernel = 1e-3;
    d.host_seconds_per_loop_kernel = 1e-4;
    d.host_seconds_per_loop_gemm = 5e-4;
    aps_host_stage_time h;
    aps_launch_costs k = aps_host_launch_costs(&d);
    aps_host_stage(&k, &hp, 4.0, 2.0, 1.0, &h);
    ASSERT_REL(h.attn, 11e-3, REL);
    ASSERT_REL(h.moe_pre, 41e-3, REL);
    ASSERT_REL(h.moe_post, 29.2e-3, REL);
    ASSERT_REL(h.fwd, 198.4e-3, REL);
    ASSERT_REL(h.bwd, (320.0 + 12.8 + 64.0 + 49.6) * 1e-3, REL);
    ASSERT_REL(h.sync_layers, 2.0, 0.0);
}

/* The GPU's side of the same program: every kernel, captured or not,
 * pays the gap between queued kernels.  Qwen3-30B-A3B on EP 8 in fp8
 * with attention and router captured: the host launches one graph for
 * each, the GPU still runs attention 11, MoE before the sync 41, after
 * it 10 + 16 x 2 quantizes + 16 x 2 GEMMs = 74 kernels a layer forward.
 * At 2 us a kernel, 4 layers (2 MoE, 2 with a dense MLP of 5 + 2 fp8
 * quantizes = 7) and 1 recomputed:
 *   forward  4 x 11 + 2 x 7 + 2 x (41 + 74) = 288 kernels = 576 us
 *   backward 2 x 288 + 288 / 4 (recompute) = 648 kernels = 1,296 us */
static void test_kernel_gaps(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    qwen3_moe(&m, &t, &s);
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_ATTN | APS_CG_MOE_ROUTER;
    aps_host_program host = program_of(&m, &t, &s), gpu;
    aps_kernel_program_build(&m, &t, &s, NULL, &gpu);
    assert_true(host.attn.fwd == 1.0 && gpu.attn.fwd == 11.0);
    assert_true(gpu.moe_pre.fwd == 41.0 && gpu.moe_post.fwd == 10.0);
    assert_true(gpu.moe_loop.fwd == 32.0 && gpu.moe_loop_gemm.fwd == 32.0);
    assert_true(gpu.mlp.fwd == 7.0 && gpu.mlp.bwd == 14.0);
    aps_device d = {0};
    d.gpu_seconds_per_kernel = 2e-6;
    d.host_seconds_per_loop_gemm = 1.0; /* the host's costs are not read */
    aps_launch_costs k = aps_gpu_gap_costs(&d);
    aps_host_stage_time g;
    aps_host_stage(&k, &gpu, 4.0, 2.0, 1.0, &g);
    ASSERT_REL(g.attn, 22e-6, REL);
    ASSERT_REL(g.moe_pre, 82e-6, REL);
    ASSERT_REL(g.moe_post, 148e-6, REL);
    ASSERT_REL(g.fwd, 576e-6, REL);
    ASSERT_REL(g.bwd, 1296e-6, REL);
    /* a step captured whole: the host launches nothing, the GPU runs the
     * same kernels */
    t.cuda_graph_scope = APS_CG_FULL_ITERATION;
    host = program_of(&m, &t, &s);
    aps_kernel_program_build(&m, &t, &s, NULL, &gpu);
    assert_true(host.step_graphed && !gpu.step_graphed);
    assert_true(gpu.attn.fwd == 11.0 && gpu.moe_loop_gemm.fwd == 32.0);
}

/* The router's floor: Qwen3-30B-A3B's MoE block runs 41 kernels before
 * the sync (norm 1, fused router 31, preprocess 9) and 82 backward; at
 * 1.5 us each against a priced router of 10 us forward (20 backward):
 *   forward  41 x 1.5 - 10 = 51.5 us;  backward 82 x 1.5 - 20 = 103 us;
 * a router priced above its kernels' floor adds nothing. */
static void test_router_floor(void **state)
{
    (void)state;
    aps_model m;
    aps_training t;
    aps_strategy s;
    qwen3_moe(&m, &t, &s);
    aps_host_program k;
    aps_kernel_program_build(&m, &t, &s, NULL, &k);
    aps_device d = {0};
    d.gpu_min_kernel_seconds = 1.5e-6;
    aps_moe_cost mc;
    memset(&mc, 0, sizeof mc);
    mc.router_fwd = 10e-6;
    aps_router_floor(&d, &k, &mc);
    ASSERT_REL(mc.router_floor_fwd, 51.5e-6, REL);
    ASSERT_REL(mc.router_floor_bwd, 103e-6, REL);
    mc.router_fwd = 1e-3;
    aps_router_floor(&d, &k, &mc);
    ASSERT_REL(mc.router_floor_fwd, 0.0, 0.0);
    ASSERT_REL(mc.router_floor_bwd, 0.0, 0.0);
}

/* The larger of GPU and host: without a sync over the whole forward;
 * with one per MoE layer, from one sync to the next (the host's post-sync
 * launches, then the next layer's attention and router; the GPU's
 * post-sync block, then its pre-sync one).  Host: attention 1, router 2,
 * after the sync 5 per MoE layer, 2 MoE layers, 3 s in the rest (forward
 * 19); GPU: 4 before, 3 after of which the combine 1, 1 in the rest (15):
 *   no sync  max(15, 19) = 19
 *   sync     max(1, 3) + 2 x max(3 + 4, 5 + 1 + 4, 5 + 3) = 3 + 2 x 10 = 23
 *            (the combine runs after the host's last expert launch: 1 s a
 *            layer more than the two sides' larger before and after the
 *            sync apart, 3 + 2 x (4 + 5) = 21)
 *   no tail  3 + 2 x max(7, 9, 8) = 21 */
static void test_host_bound_forward(void **state)
{
    (void)state;
    aps_host_stage_time h = {.fwd = 19.0, .attn = 1.0, .moe_pre = 2.0,
                             .moe_post = 5.0, .sync_layers = 0.0};
    ASSERT_REL(aps_host_bound_fwd(&h, 15.0, 4.0, 3.0, 1.0), 19.0, 0.0);
    ASSERT_REL(aps_host_bound_fwd(&h, 25.0, 4.0, 3.0, 1.0), 25.0, 0.0);
    h.sync_layers = 2.0;
    ASSERT_REL(aps_host_bound_fwd(&h, 15.0, 4.0, 3.0, 1.0), 23.0, 0.0);
    ASSERT_REL(aps_host_bound_fwd(&h, 15.0, 4.0, 3.0, 0.0), 21.0, 0.0);
    /* a host-heavy attention block (3 + 3) launched while the GPU still
     * runs the previous layer's experts (6, combine 1): the segment is
     * max(6 + 2, 1 + 1 + 2, 1 + 6) = 8, not max(2, 6) + max(6, 1) = 12;
     * host 2 x 7 + 1 = 15 in all, GPU 2 x 8 + 1 = 17: 1 + 2 x 8 = 17 */
    aps_host_stage_time heavy = {.fwd = 15.0, .attn = 3.0, .moe_pre = 3.0,
                                 .moe_post = 1.0, .sync_layers = 2.0};
    ASSERT_REL(aps_host_bound_fwd(&heavy, 17.0, 2.0, 6.0, 1.0), 17.0, 0.0);
    /* pieces summing past the GPU time (2 x (4 + 3) = 14 > 10) with a host
     * of 0.5 s: 2 x (4 + 3) = 14 by the pieces, bounded by the two one
     * after the other, 10 + 0.5 */
    aps_host_stage_time tiny = {.fwd = 0.5, .attn = 0.1, .moe_pre = 0.1,
                                .moe_post = 0.05, .sync_layers = 2.0};
    ASSERT_REL(aps_host_bound_fwd(&tiny, 10.0, 4.0, 3.0, 1.0), 10.5, 1e-12);
}

/* End to end, Llama-3.1-8B on one H100, one micro-batch of 4,096 tokens:
 * 32 layers x (7 + 5) x 3 = 1,152 launches a step.  At the preset's
 * 30 us the GPU sets the pace (host_launch exposed 0); at 1 ms a launch
 * the host does, and the step grows by exactly what the breakdown says
 * the GPU waited: 1.152 s less the GPU's forward and backward, its 1,152
 * kernels' gaps of 1.184 us (the H100 preset's gpu_seconds_per_kernel)
 * included.  Captured whole, the host launches nothing and the GPU still
 * runs, and pays the gaps of, the same 1,152 kernels. */
static void test_host_bound_step(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    aps_estimate gpu, host;
    fx_setup_8b(&m, &c, &t, &s, 1, 1, 4096);
    c.device.memory_bytes = 1e15; /* the memory limit is not the point */
    fx_run(&m, &c, &t, &s, &gpu);
    ASSERT_REL(gpu.perf_total[APS_PERF_HOST], 1152 * 30e-6, REL);
    ASSERT_REL(gpu.perf_total[APS_PERF_KERNEL_GAPS], 1152 * 1.184e-6, REL);
    ASSERT_REL(gpu.perf_exposed[APS_PERF_KERNEL_GAPS], 1152 * 1.184e-6, REL);
    ASSERT_REL(gpu.perf_exposed[APS_PERF_HOST], 0.0, 0.0);
    c.device.host_seconds_per_kernel = 1e-3;
    fx_run(&m, &c, &t, &s, &host);
    ASSERT_REL(host.perf_total[APS_PERF_HOST], 1.152, REL);
    double exposed = host.perf_exposed[APS_PERF_HOST];
    assert_true(exposed > 0.5);
    ASSERT_REL(host.step_time - gpu.step_time, exposed, 1e-9);
    /* one GPU, one micro-batch: what the GPU would have taken is its
     * forward and backward compute */
    ASSERT_REL(1.152 - exposed, gpu.perf_exposed[APS_PERF_COMPUTE_FWD] +
                                    gpu.perf_exposed[APS_PERF_COMPUTE_BWD] +
                                    gpu.perf_exposed[APS_PERF_KERNEL_GAPS],
               1e-9);
    /* whole-step graphs: nothing for the host */
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_FULL_ITERATION;
    fx_run(&m, &c, &t, &s, &host);
    ASSERT_REL(host.perf_total[APS_PERF_HOST], 0.0, 0.0);
    ASSERT_REL(host.perf_total[APS_PERF_KERNEL_GAPS], 1152 * 1.184e-6, REL);
    ASSERT_REL(host.step_time, gpu.step_time, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_counts),
        cmocka_unit_test(test_graph_scopes),
        cmocka_unit_test(test_moe_counts),
        cmocka_unit_test(test_host_stage_seconds),
        cmocka_unit_test(test_kernel_gaps),
        cmocka_unit_test(test_router_floor),
        cmocka_unit_test(test_host_bound_forward),
        cmocka_unit_test(test_host_bound_step),
        cmocka_unit_test(test_graph_recompute_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
