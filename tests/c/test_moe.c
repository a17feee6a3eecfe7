/*
 * test_moe.c -- Megatron-Core's sync-free experts and their paged stash
 * (src/core/moe.c aps_moe_static_rows, aps_moe_stash_bytes; memory.c
 * full_graph_inputs), hand-computed from Megatron-LM d98e8a64:
 *
 *   moe/token_dispatcher.py setup_metadata l.1098-1110: budget =
 *     int(tokens * topk * moe_expert_rank_capacity_factor), rounded up
 *     to pad_multiple = 256 (moe_utils.py get_align_size_for_quantization
 *     with the TransformerEngine op fuser);
 *   moe/experts.py l.769-776: avg_num_tokens = int(budget // cap_factor);
 *   moe/paged_stash.py on_save_for_backward / allocate_stash_buffers /
 *     PagedStashBuffer: per (dtype, width) the peak of the live layers'
 *     avg tokens (// 32 for an MXFP8 scale), num_tokens = int(peak *
 *     factor), ceil(num_tokens / page_size) pages of page_size tokens;
 *   TransformerEngine d0067d0da ops/fused/grouped_mlp.py l.1749-1772: the
 *     stashed tensors per routed row, fc1 input columnwise (h fp8 + h/32
 *     e8m0), activation_in (2 f_e bf16), the probabilities (fp32), fc2
 *     input columnwise (f_e fp8 + f_e/32 e8m0);
 *   full_cuda_graph.py StaticBufferLoader: every micro-batch's inputs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

/* budget = ceil256(int(copies x cf)) */
static void test_static_rows(void **state)
{
    (void)state;
    /* mw01: 4 x 4096 tokens x top-8 = 131072 copies x 1.5 = 196608,
     * 768 x 256 already */
    assert_true(aps_moe_static_rows(131072.0, 1.5) == 196608.0);
    /* 1000 x 1.3 = 1300 -> 6 x 256 = 1536 */
    assert_true(aps_moe_static_rows(1000.0, 1.3) == 1536.0);
    assert_true(aps_moe_static_rows(1000.0, 0.0) == 0.0);
}

/* The stash of mw01 (avg 196608 // 1.5 = 131072 tokens per layer, 48
 * layers live, factor 1.2, 64-token pages), per stashed tensor:
 *   fc1 data   int(48 x 131072 x 1.2) = 7549747 -> 117965 pages = 7549760
 *              tokens x 2048 x 1 B  = 15461908480
 *   fc1 scales int(48 x 4096 x 1.2) = 235929 -> 3687 pages = 235968
 *              tokens x 2048 x 1 B  =   483262464
 *   act_in     7549760 x 1536 x 2 B = 23192862720
 *   probs      7549760 x 1 x 4 B    =    30199040
 *   fc2 data   7549760 x 768 x 1 B  =  5798215680
 *   fc2 scales 235968 x 768 x 1 B   =   181223424
 *   total                             45147671808 (42.05 GiB) */
static void test_stash_bytes(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.moe_expert_rank_capacity_factor = 1.5;
    t.moe_paged_stash = true;
    t.moe_paged_stash_buffer_size_factor_cuda = 1.2;
    assert_true(aps_moe_stash_bytes(&m, &t, &s, 131072.0, 48.0) ==
                45147671808.0);
    /* Megatron's default factor 1.10: int(6291456 x 1.1) = 6920601 ->
     * 108135 pages = 6920640 tokens; int(196608 x 1.1) = 216268 -> 3380
     * pages = 216320 tokens: 6920640 x (2048 + 3072 + 4 + 768) + 216320 x
     * (2048 + 768) = 40776410880 + 609157120 */
    t.moe_paged_stash_buffer_size_factor_cuda = 0.0;
    assert_true(aps_moe_stash_bytes(&m, &t, &s, 131072.0, 48.0) ==
                41385568000.0);
    /* bf16: the fused grouped MLP (MXFP8 / NVFP4 only) marks nothing */
    t.precision = APS_PREC_BF16;
    assert_true(aps_moe_stash_bytes(&m, &t, &s, 131072.0, 48.0) == 0.0);
}

/* The estimate of mw01 with and without the settings: the capacity factor
 * alone sizes the 48 layers' expert tensors at the 196608-row budget
 * instead of the 1.25-loaded 163840 rows (MXFP8 GEMM inputs at 1 + 1/32
 * B with their scales: the fc1 input 2048 x 1.03125 = 2112 B, fc1 outputs
 * and fc2 input 768 x (2 x 2 + 1.03125) = 3864 B, 5976 B per row; 48 x
 * 32768 x 5976 = 9399435264 B more) and the receive buffer at 196608
 * rows x 2048 x 2 B = 805306368 B (the send buffer unchanged, half of the
 * dropless pair); the stash then takes those tensors (48 x 196608 x 5976
 * = 56396611584 B) and holds 45147671808 B plus one layer at its static
 * shape, 196608 x 5980 B (2048 + 64 + 3072 + 4 + 768 + 24) = 1175715840
 * B. */
static void test_stash_estimate(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    static aps_estimate base, cap, stash;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    fx_run(&m, &c, &t, &s, &base);
    t.moe_expert_rank_capacity_factor = 1.5;
    fx_run(&m, &c, &t, &s, &cap);
    double act0 = base.mem[APS_MEM_ACTIVATIONS];
    double act1 = cap.mem[APS_MEM_ACTIVATIONS];
    assert_true(fabs(act1 - act0 - 9399435264.0) < 1.0);
    double ep0 = base.mem[APS_MEM_COMM_EP];
    double ep1 = cap.mem[APS_MEM_COMM_EP];
    assert_true(fabs(ep1 - (ep0 / 2.0 + 805306368.0)) < 1.0);
    t.moe_paged_stash = true;
    t.moe_paged_stash_buffer_size_factor_cuda = 1.2;
    fx_run(&m, &c, &t, &s, &stash);
    double act2 = stash.mem[APS_MEM_ACTIVATIONS];
    assert_true(fabs(act2 - (act1 - 56396611584.0 + 45147671808.0 +
                             1175715840.0)) < 1.0);
}

/* Full-iteration CUDA graphs keep every micro-batch's inputs: mw01 runs
 * 512 / (8 x 4) = 16 micro-batches of 4 x 4096 tokens at 28 B (tokens,
 * labels, position ids int64; loss mask fp32): 7340032 B; per-layer
 * graphs keep none. */
static void test_full_graph_inputs(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    static aps_estimate off, layer, full;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    fx_run(&m, &c, &t, &s, &off);
    t.cuda_graphs = true;
    t.cuda_graph_scope = APS_CG_ATTN_MOE_ROUTER;
    fx_run(&m, &c, &t, &s, &layer);
    t.cuda_graph_scope = APS_CG_FULL_ITERATION;
    fx_run(&m, &c, &t, &s, &full);
    double a0 = off.mem[APS_MEM_ACTIVATIONS];
    assert_true(layer.mem[APS_MEM_ACTIVATIONS] == a0);
    assert_true(fabs(full.mem[APS_MEM_ACTIVATIONS] - a0 -
                     7340032.0) < 1e-3);
}

/* Refused as Megatron refuses them (transformer_config.py __post_init__
 * @ d98e8a64), or as apsearch cannot price them; one line naming the
 * field. */
static void test_stash_refusals(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char err[APS_REASON_LEN];
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.moe_paged_stash = true;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "requires moe_expert_rank_capacity_factor"));
    t.moe_expert_rank_capacity_factor = 1.5;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    t.activation_offload_layers = 1;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "cpu_offloading"));
    t.activation_offload_layers = 0;
    t.moe_paged_stash_buffer_size_factor_cuda = -1.2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "moe_paged_stash_buffer_size_factor_cuda"));
    t.moe_paged_stash_buffer_size_factor_cuda = 1.2;
    t.precision = APS_PREC_NVFP4;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_ENOTIMPL);
    /* bf16 / per-tensor fp8: TE's fused grouped MLP, whose tensors the
     * stash takes, runs in the block-scaled recipes only: nothing would
     * be stashed (a breaker's finding: it was accepted and ignored) */
    t.precision = APS_PREC_BF16;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "mxfp8 or nvfp4 only"));
    t.precision = APS_PREC_FP8;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    t.precision = APS_PREC_MXFP8;
    /* below the balanced share every step overflows (Megatron spills or
     * re-runs the step): not modelled; it priced a 0-row budget before */
    t.moe_expert_rank_capacity_factor = 1e-6;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_ENOTIMPL);
    assert_non_null(strstr(err, "below the balanced share"));
    t.moe_expert_rank_capacity_factor = 1.5;
    t.moe_paged_stash_buffer_size_factor_cuda = 0.5;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_ENOTIMPL);
    t.moe_paged_stash_buffer_size_factor_cuda = 1.0;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    t.moe_paged_stash_buffer_size_factor_cuda = 1.2;
    t.moe_flex_dispatcher_backend = APS_FLEX_DEEPEP;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "'hybridep' or 'ncclep'"));
    t.moe_flex_dispatcher_backend = APS_FLEX_HYBRIDEP;
    t.moe_paged_stash = false;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "acts with moe_paged_stash only"));
    t.moe_paged_stash_buffer_size_factor_cuda = 0.0;
    t.framework = APS_FW_FSDP2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "moe_expert_rank_capacity_factor"));
    t.framework = APS_FW_MEGATRON;
    /* the strategy's dispatcher must be flex */
    s.moe_token_dispatcher = APS_MOE_ALLTOALL;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, err, sizeof err),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(err, "moe_token_dispatcher = flex"));
    /* a dense model has nothing to budget */
    m.num_experts = 0;
    m.experts_per_token = 0;
    m.moe_ffn_hidden_size = 0;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    assert_non_null(strstr(err, "has no experts"));
    /* the backend alone, on a dense model: nothing to dispatch (it was
     * accepted and ignored; a breaker's finding) */
    t.moe_paged_stash = false;
    t.moe_expert_rank_capacity_factor = 0.0;
    t.moe_paged_stash_buffer_size_factor_cuda = 0.0;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    assert_non_null(strstr(err, "moe_flex_dispatcher_backend"));
    t.moe_flex_dispatcher_backend = APS_FLEX_DEEPEP;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_OK);
}

/* TransformerEngine's fused grouped MLP (training.cutedsl_fused_grouped_
 * mlp): the experts' SwiGLU runs in fc1's GEMM epilogue, its backward in
 * fc2's dgrad GEMM, and under MXFP8 fc2's input and fc1's output gradient
 * leave those epilogues quantized (ops/fused/grouped_mlp.py @ d0067d0da).
 * Qwen3-30B-A3B on 8 B200s, MBS 4 x 4096, EP 8: T = 16,384 tokens, each
 * routed to 8 experts, 131,072 rows of width f_e = 768 (load 1). */
static void test_fused_grouped_mlp(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char err[APS_REASON_LEN];
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.moe_load_imbalance = 1.0;
    aps_moe_cost off, on;
    aps_moe_layer_cost(&m, &c, &t, &s, &off);
    t.cutedsl_fused_grouped_mlp = true;
    aps_moe_layer_cost(&m, &c, &t, &s, &on);
    double rows = 16384.0 * 8.0, fe = 768.0;
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    /* the activation pass: SwiGLU reads 2 f_e bf16 and writes f_e bf16
     * per row, 6 bytes per element of f_e (aps_act_fn_bytes) */
    assert_true(fabs(aps_act_fn_bytes(&m, &t) - 6.0) < 1e-12);
    ASSERT_REL(off.membound_fwd - on.membound_fwd,
                    6.0 * rows * fe / hbm, REL);
    /* MXFP8's fused quantize: fc2's input (f_e) forward, fc1's output
     * gradient (2 f_e) backward, at the fused cast's bytes per element */
    double unfused, fused;
    aps_cast_bytes(&t, &unfused, &fused);
    ASSERT_REL(off.cast_fwd - on.cast_fwd, fused * rows * fe / hbm, REL);
    ASSERT_REL(off.cast_bwd - on.cast_bwd, fused * rows * 2.0 * fe / hbm, REL);
    /* the GEMMs are unchanged */
    ASSERT_REL(off.gemm_fwd, on.gemm_fwd, REL);
    /* NVFP4 quantizes both apart: only the activation pass goes */
    t.precision = APS_PREC_NVFP4;
    t.cutedsl_fused_grouped_mlp = false;
    aps_moe_layer_cost(&m, &c, &t, &s, &off);
    t.cutedsl_fused_grouped_mlp = true;
    aps_moe_layer_cost(&m, &c, &t, &s, &on);
    ASSERT_REL(off.cast_fwd, on.cast_fwd, REL);
    ASSERT_REL(off.membound_fwd - on.membound_fwd,
                    6.0 * rows * fe / hbm, REL);
    /* host: 3 kernels from Python (fc1's input quantize, fc1 + SwiGLU,
     * fc2), none per expert; NVFP4 one more (fc2's input quantize) */
    aps_host_program hp;
    t.cuda_graphs = false;
    aps_host_program_build(&m, &t, &s, NULL, &hp);
    assert_true(hp.moe_loop.fwd == 0.0);
    t.precision = APS_PREC_MXFP8;
    aps_host_program hq;
    aps_host_program_build(&m, &t, &s, NULL, &hq);
    ASSERT_REL(hp.moe_post.fwd - hq.moe_post.fwd, 1.0, REL);
    t.cutedsl_fused_grouped_mlp = false;
    aps_host_program hr;
    aps_host_program_build(&m, &t, &s, NULL, &hr);
    /* unfused: TEGroupedMLP's 3 Python calls, 16 local experts x 2 GEMMs
     * from TE's loops: a quantize and a cuBLASLt GEMM each */
    ASSERT_REL(hr.moe_loop.fwd, 16.0 * 2.0, REL);
    ASSERT_REL(hr.moe_loop_gemm.fwd, 16.0 * 2.0, REL);
    assert_true(hp.moe_loop_gemm.fwd == 0.0);
    ASSERT_REL(hr.moe_post.fwd, hq.moe_post.fwd, REL);
    /* refusals: Megatron-Core and the block-scaled recipes only; SwiGLU
     * experts; an expert TP group of one and the grouped GEMM */
    t.cutedsl_fused_grouped_mlp = true;
    t.precision = APS_PREC_BF16;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "mxfp8 or nvfp4 only"));
    t.precision = APS_PREC_MXFP8;
    t.framework = APS_FW_FSDP2;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "framework megatron"));
    t.framework = APS_FW_MEGATRON;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    assert_int_equal(aps_check_all(&m, &c, &t, &s, err, sizeof err),
                     APS_REASON_NONE);
    s.tp_degree = 2;
    s.dp_degree = 4;
    s.etp_degree = 2;
    s.ep_degree = 4;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, err, sizeof err),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(err, "etp_degree = 1"));
    m.mlp = APS_MLP_RELU2;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_ENOTIMPL);
    m.mlp = APS_MLP_SWIGLU;
    m.num_experts = 0;
    m.experts_per_token = 0;
    m.moe_ffn_hidden_size = 0;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    assert_non_null(strstr(err, "has no experts"));
}

/* DeepEP's copies across NVLink domains under DeepSeek-V3's node-limited
 * routing (256 experts top-8 in 8 groups, 4 groups a token; EP 64 over 8
 * hosts of 8: a host's 32 experts are a group).  Uniform: 7 other hosts,
 * each missed by all 8 experts with p = prod (224 - j) / (256 - j); with
 * the groups: 4 chosen hosts, each missed with q = prod (96 - j) / (128 -
 * j), the sender's own among them with probability 4 / 8. */
static void test_flex_remote_domains(void **state)
{
    (void)state;
    aps_model m;
    memset(&m, 0, sizeof m);
    double p = 1.0, q = 1.0;
    for (int j = 0; j < 8; j++) {
        p *= (224.0 - j) / (256.0 - j);
        q *= (96.0 - j) / (128.0 - j);
    }
    ASSERT_REL(aps_moe_flex_remote_domains(&m, 256, 8, 8), 7.0 * (1.0 - p), REL);
    m.moe_router_num_groups = 8;
    m.moe_router_group_topk = 4;
    double grouped = 4.0 * (1.0 - q) * (1.0 - 1.0 / 8.0);
    ASSERT_REL(aps_moe_flex_remote_domains(&m, 256, 8, 8), grouped, REL);
    /* 3.18 remote hosts a token, against 4.63 spread uniformly */
    assert_true(grouped > 3.1 && grouped < 3.2);
    assert_true(7.0 * (1.0 - p) > 4.5 && 7.0 * (1.0 - p) < 4.7);
    /* two groups a domain (4 hosts of 64 experts): j of a host's 2 groups
     * among the 4 of 8 chosen, C(2, j) C(6, 4 - j) / C(8, 4) = 15, 40, 15
     * over 70; the host missed with prod over the 128 chosen experts of
     * (128 - 32 j - i) / (128 - i) */
    double u = 1.0, w = 1.0;
    for (int j = 0; j < 8; j++) {
        u *= (64.0 - j) / (128.0 - j);
        w *= (112.0 - j) / (128.0 - j);
    }
    double missed = (15.0 + 40.0 * q + 15.0 * u) / 70.0;
    ASSERT_REL(aps_moe_flex_remote_domains(&m, 256, 8, 4),
               4.0 * (1.0 - missed) * 3.0 / 4.0, REL);
    /* two domains a group (16 hosts of 16 experts): a host reached when its
     * group is chosen (4 / 8) and the 8 experts do not all miss its 16 of
     * the 128 chosen */
    ASSERT_REL(aps_moe_flex_remote_domains(&m, 256, 8, 16),
               16.0 * 0.5 * (1.0 - w) * 15.0 / 16.0, REL);
    /* the stricter routing reaches fewer hosts: G 16, g 4 on 8 hosts */
    m.moe_router_num_groups = 16;
    assert_true(aps_moe_flex_remote_domains(&m, 256, 8, 8) < grouped);
    /* 4,096 groups of one expert, 2,048 chosen: C(4096, 2048) is past a
     * double's range, the spread stays a count of hosts (no inf / NaN) */
    aps_model big = m;
    big.num_experts = 4096;
    big.moe_router_num_groups = 4096;
    big.moe_router_group_topk = 2048;
    double wide = aps_moe_flex_remote_domains(&big, 4096, 8, 8);
    assert_true(isfinite(wide) && wide > 0.0 && wide <= 7.0);
    /* each of the 8 experts a group of its own, chosen among 2,048 of
     * 4,096: the hosts are hit as under the uniform spread over 4,096 */
    double v = 1.0;
    for (int j = 0; j < 8; j++)
        v *= (4096.0 - 512.0 - j) / (4096.0 - j);
    ASSERT_REL(wide, 7.0 * (1.0 - v), 1e-6);
    /* groups that do not tile the domains: DeepSeek-V2's 160 experts in 8
     * groups of 20, top-3 groups, 6 experts, on 5 domains of 32 and 10 of
     * 16 -- against every one of the C(8, 3) = 56 group choices, each
     * domain missed with C(60 - overlap, 6) / C(60, 6) */
    aps_model v2 = m;
    v2.num_experts = 160;
    v2.moe_router_num_groups = 8;
    v2.moe_router_group_topk = 3;
    static const double doms[] = {5.0, 10.0};
    for (int t = 0; t < 2; t++) {
        double D = doms[t], ed = 160.0 / D, reached = 0.0;
        int choices = 0;
        for (int mask = 0; mask < 256; mask++) {
            if (__builtin_popcount((unsigned)mask) != 3)
                continue;
            choices++;
            for (int d = 0; d < (int)D; d++) {
                double over = 0.0;
                for (int e = (int)(d * ed); e < (int)((d + 1) * ed); e++)
                    over += (mask >> (e / 20)) & 1 ? 1.0 : 0.0;
                double miss = 1.0;
                for (int j = 0; j < 6; j++)
                    miss *= (60.0 - over - j) / (60.0 - j);
                reached += 1.0 - (miss > 0.0 ? miss : 0.0);
            }
        }
        assert_int_equal(choices, 56);
        ASSERT_REL(aps_moe_flex_remote_domains(&v2, 160, 6, D),
                   reached / choices * (1.0 - 1.0 / D), 1e-9);
    }
    /* a domain count that does not divide the experts (6): uniform */
    double r = 1.0;
    for (int j = 0; j < 8; j++)
        r *= (256.0 - 256.0 / 6.0 - j) / (256.0 - j);
    ASSERT_REL(aps_moe_flex_remote_domains(&m, 256, 8, 6), 5.0 * (1.0 - r), REL);
}

/* Megatron-Core's quick-GEGLU experts clamp eagerly before the compiled
 * kernel (fused_bias_geglu.py weighted_bias_quick_geglu_impl): chunk,
 * clamp each half (2 + 2 bytes an element each), concatenate (4 + 4):
 * 16 bytes per element of f_e forward, and fc1's output kept for clamp's
 * mask (2 f_e bf16 = 4 bytes an element), freed under moe_act */
static void test_eager_glu_clamp(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.moe_load_imbalance = 1.0;
    t.precision = APS_PREC_BF16;
    m.glu_activation = APS_GLU_QUICK_GELU;
    m.glu_linear_offset = 1.0;
    aps_moe_cost off, on;
    aps_moe_layer_cost(&m, &c, &t, &s, &off);
    m.glu_clamp = 7.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &on);
    /* 4 x 4,096 tokens, top 8, EP 8 over 128 experts: 131,072 rows */
    double rows = 16384.0 * 8.0, fe = 768.0;
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(on.membound_fwd - off.membound_fwd, 16.0 * rows * fe / hbm, REL);
    ASSERT_REL(on.actfn_fwd - off.actfn_fwd, 16.0 * rows * fe / hbm, REL);
    ASSERT_REL(on.act - off.act, 4.0 * rows * fe, REL);
    ASSERT_REL(on.actfn_act - off.actfn_act, 4.0 * rows * fe, REL);
    ASSERT_REL(on.moe_int_act - off.moe_int_act, 4.0 * rows * fe, REL);
    ASSERT_REL(on.gemm_fwd, off.gemm_fwd, REL);
    /* clamped inside a kernel: TE's fused grouped MLP (MXFP8), the op
     * fuser of the sync-free experts, and another framework's experts */
    aps_moe_cost a, b;
    t.precision = APS_PREC_MXFP8;
    t.cutedsl_fused_grouped_mlp = true;
    m.glu_clamp = 0.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &a);
    m.glu_clamp = 7.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &b);
    ASSERT_REL(a.membound_fwd, b.membound_fwd, REL);
    ASSERT_REL(a.act, b.act, REL);
    t.cutedsl_fused_grouped_mlp = false;
    t.moe_expert_rank_capacity_factor = 1.5;
    m.glu_clamp = 0.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &a);
    m.glu_clamp = 7.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &b);
    ASSERT_REL(a.membound_fwd, b.membound_fwd, REL);
    t.moe_expert_rank_capacity_factor = 0.0;
    t.framework = APS_FW_FSDP2;
    t.precision = APS_PREC_BF16;
    m.glu_clamp = 0.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &a);
    m.glu_clamp = 7.0;
    aps_moe_layer_cost(&m, &c, &t, &s, &b);
    ASSERT_REL(a.membound_fwd, b.membound_fwd, REL);
    ASSERT_REL(a.act, b.act, REL);
}

/* Megatron-Core adds the experts' fc2 bias expert by expert in PyTorch
 * (experts.py _apply_bias: t + b * p with fp32 probabilities, the pieces
 * concatenated and cast back): 28 bytes per routed row and element of h
 * forward, 20 backward; none without biases, under TE's fused grouped
 * MLP, or on another framework */
static void test_eager_expert_bias(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.moe_load_imbalance = 1.0;
    t.precision = APS_PREC_BF16;
    aps_moe_cost plain, biased;
    aps_moe_layer_cost(&m, &c, &t, &s, &plain);
    assert_true(plain.bias_fwd == 0.0 && plain.bias_bwd == 0.0);
    m.mlp_bias = true;
    aps_moe_layer_cost(&m, &c, &t, &s, &biased);
    double rows = 16384.0 * 8.0, h = 2048.0;
    double hbm = c.device.hbm_bandwidth * c.device.hbm_efficiency;
    ASSERT_REL(biased.bias_fwd, 28.0 * rows * h / hbm, REL);
    ASSERT_REL(biased.bias_bwd, 20.0 * rows * h / hbm, REL);
    ASSERT_REL(biased.moe_fwd - plain.moe_fwd, 28.0 * rows * h / hbm, REL);
    /* in a rank's stage: forward and backward of each MoE layer */
    aps_layout lay;
    char msg[APS_REASON_LEN];
    assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_moe_stage_cost a, b;
    aps_moe_stage(&m, &t, &s, &lay, &plain, 0, &a);
    aps_moe_stage(&m, &t, &s, &lay, &biased, 0, &b);
    ASSERT_REL(b.comp_fwd - a.comp_fwd, 48.0 * 28.0 * rows * h / hbm, REL);
    ASSERT_REL(b.comp_bwd - a.comp_bwd, 48.0 * 20.0 * rows * h / hbm, REL);
    t.cutedsl_fused_grouped_mlp = true;
    t.precision = APS_PREC_MXFP8;
    aps_moe_layer_cost(&m, &c, &t, &s, &biased);
    assert_true(biased.bias_fwd == 0.0 && biased.bias_bwd == 0.0);
    t.cutedsl_fused_grouped_mlp = false;
    t.framework = APS_FW_FSDP2;
    aps_moe_layer_cost(&m, &c, &t, &s, &biased);
    assert_true(biased.bias_fwd == 0.0 && biased.bias_bwd == 0.0);
}

/* HSDP under FSDP2 replicates the experts as it does the dense weights:
 * Qwen3-30B-A3B on 8 B200s at EP 4, dp_replicate 2 x dp_shard 4 against
 * dp_shard 8 alone.  TorchTitan's efsdp is dp_shard x cp x tp / ep: 1
 * under HSDP, 2 under FSDP 8 (parallel_dims.py l.282 @ b5bcd76c); the
 * dense weights are sharded over 4 and 8.  Every model state, dense or
 * expert, is then held twice over under HSDP: exactly twice FSDP 8's
 * bytes in each of params, grads and optimizer states (the experts were
 * sharded over dp x dp_shard / ep = 2 under both, a wrong "fits"). */
static void test_hsdp_expert_shard(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_qwen3_30b_b200(&m, &c, &t, &s);
    t.framework = APS_FW_FSDP2;
    t.precision = APS_PREC_BF16;
    t.moe_flex_dispatcher_backend = APS_FLEX_DEEPEP;
    s.moe_token_dispatcher = APS_MOE_ALLTOALL;
    s.zero_stage = 3;
    s.ep_degree = 4;
    s.micro_batch_size = 1;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    aps_dp_plan plan;
    s.dp_degree = 2;
    s.fsdp_degree = 4;
    aps_dp_plan_build(&t, &s, &plan);
    assert_int_equal(aps_moe_edp(&s), 2);
    assert_int_equal(aps_moe_expert_shard(&t, &s, &plan), 1);
    static aps_estimate hsdp, fsdp;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &hsdp), APS_OK);
    s.dp_degree = 1;
    s.fsdp_degree = 8;
    aps_dp_plan_build(&t, &s, &plan);
    assert_int_equal(aps_moe_expert_shard(&t, &s, &plan), 2);
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &fsdp), APS_OK);
    assert_true(hsdp.num_stages == 1 && fsdp.num_stages == 1);
    for (int k = APS_MEM_PARAMS; k <= APS_MEM_OPTIMIZER_STATES; k++)
        ASSERT_REL(hsdp.stages[0].mem[k], 2.0 * fsdp.stages[0].mem[k], 1e-12);
    /* Megatron's distributed optimizer: the expert-dp group is dp x ... /
     * ep whole (no replicas) */
    t.framework = APS_FW_MEGATRON;
    s.dp_degree = 8;
    s.fsdp_degree = 1;
    s.zero_stage = 1;
    aps_dp_plan_build(&t, &s, &plan);
    assert_int_equal(aps_moe_expert_shard(&t, &s, &plan), 2);
    /* NeMo AutoModel's ep_shard spans its replicas: dp 2 x dp_shard 4 / ep
     * 4 = 2, as edp */
    t.framework = APS_FW_AUTOMODEL;
    s.dp_degree = 2;
    s.fsdp_degree = 4;
    s.zero_stage = 3;
    aps_dp_plan_build(&t, &s, &plan);
    assert_int_equal(aps_moe_expert_shard(&t, &s, &plan), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_rows),
        cmocka_unit_test(test_stash_bytes),
        cmocka_unit_test(test_stash_estimate),
        cmocka_unit_test(test_full_graph_inputs),
        cmocka_unit_test(test_stash_refusals),
        cmocka_unit_test(test_fused_grouped_mlp),
        cmocka_unit_test(test_flex_remote_domains),
        cmocka_unit_test(test_eager_glu_clamp),
        cmocka_unit_test(test_eager_expert_bias),
        cmocka_unit_test(test_hsdp_expert_shard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
