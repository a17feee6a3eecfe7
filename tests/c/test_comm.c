/*
 * test_comm.c -- src/core/comm.c: ring collectives (alpha-beta model,
 * Thakur, Rabenseifner, Gropp 2005; NCCL PERFORMANCE.md) and group
 * placement, plus the TP and DP communication terms of aps_estimate_run
 * (AP-FT-07).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

/* bytes 1e9, bw 1e11 B/s (bytes/bw = 0.01 s), alpha 1e-5 s. */
#define BYTES 1e9
#define BW 1e11
#define ALPHA 1e-5

/* All-reduce 2 (n-1)/n bytes/bw + 2 (n-1) alpha:
 *   n = 2:  1     * 0.01 + 2 * 1e-5  = 0.01002
 *   n = 4:  1.5   * 0.01 + 6 * 1e-5  = 0.01506
 *   n = 8:  1.75  * 0.01 + 14 * 1e-5 = 0.01764
 *   n = 16: 1.875 * 0.01 + 30 * 1e-5 = 0.01905
 *   n = 3:  4/3   * 0.01 + 4 * 1e-5  = 0.0133733... */
static void test_ap_ft_07_allreduce_ring(void **state)
{
    (void)state;
    ASSERT_REL(aps_allreduce_time(2, BYTES, BW, ALPHA), 0.01002, REL);
    ASSERT_REL(aps_allreduce_time(4, BYTES, BW, ALPHA), 0.01506, REL);
    ASSERT_REL(aps_allreduce_time(8, BYTES, BW, ALPHA), 0.01764, REL);
    ASSERT_REL(aps_allreduce_time(16, BYTES, BW, ALPHA), 0.01905, REL);
    ASSERT_REL(aps_allreduce_time(3, BYTES, BW, ALPHA),
               4.0 / 3.0 * 0.01 + 4e-5, REL);
}

/* All-gather and reduce-scatter (n-1)/n bytes/bw + (n-1) alpha:
 *   n = 2:  0.5    * 0.01 + 1e-5      = 0.00501
 *   n = 8:  0.875  * 0.01 + 7 * 1e-5  = 0.00882
 *   n = 16: 0.9375 * 0.01 + 15 * 1e-5 = 0.009525 */
static void test_ap_ft_07_allgather_reducescatter_ring(void **state)
{
    (void)state;
    ASSERT_REL(aps_allgather_time(2, BYTES, BW, ALPHA), 0.00501, REL);
    ASSERT_REL(aps_allgather_time(8, BYTES, BW, ALPHA), 0.00882, REL);
    ASSERT_REL(aps_allgather_time(16, BYTES, BW, ALPHA), 0.009525, REL);
    ASSERT_REL(aps_reducescatter_time(2, BYTES, BW, ALPHA), 0.00501, REL);
    ASSERT_REL(aps_reducescatter_time(8, BYTES, BW, ALPHA), 0.00882, REL);
    ASSERT_REL(aps_reducescatter_time(16, BYTES, BW, ALPHA), 0.009525, REL);
    /* an all-reduce is a reduce-scatter followed by an all-gather */
    for (int64_t n = 2; n <= 64; n *= 2)
        ASSERT_REL(aps_allreduce_time(n, BYTES, BW, ALPHA),
                   aps_reducescatter_time(n, BYTES, BW, ALPHA) +
                       aps_allgather_time(n, BYTES, BW, ALPHA),
                   REL);
}

/* One rank communicates with nobody: 0 s, whatever the latency. */
static void test_ap_ft_07_single_rank_is_free(void **state)
{
    (void)state;
    ASSERT_REL(aps_allreduce_time(1, BYTES, BW, ALPHA), 0.0, 0);
    ASSERT_REL(aps_allgather_time(1, BYTES, BW, ALPHA), 0.0, 0);
    ASSERT_REL(aps_reducescatter_time(1, BYTES, BW, ALPHA), 0.0, 0);
    ASSERT_REL(aps_allreduce_time(0, BYTES, BW, ALPHA), 0.0, 0);
}

/* Doubling bw halves the bandwidth term exactly and leaves alpha alone:
 *   all-reduce n = 8: (0.01764 - 14e-5) = 0.0175 -> 0.00875 at 2 bw. */
static void test_ap_ft_07_double_bandwidth_halves_term(void **state)
{
    (void)state;
    for (int64_t n = 2; n <= 128; n *= 2) {
        double k = (double)(n - 1);
        double ar1 = aps_allreduce_time(n, BYTES, BW, ALPHA) - 2 * k * ALPHA;
        double ar2 = aps_allreduce_time(n, BYTES, 2 * BW, ALPHA) - 2 * k * ALPHA;
        ASSERT_REL(ar2, ar1 / 2.0, 1e-12);
        double ag1 = aps_allgather_time(n, BYTES, BW, ALPHA) - k * ALPHA;
        double ag2 = aps_allgather_time(n, BYTES, 2 * BW, ALPHA) - k * ALPHA;
        ASSERT_REL(ag2, ag1 / 2.0, 1e-12);
        /* alpha = 0: the whole time halves */
        ASSERT_REL(aps_reducescatter_time(n, BYTES, 2 * BW, 0.0),
                   aps_reducescatter_time(n, BYTES, BW, 0.0) / 2.0, 1e-15);
    }
    ASSERT_REL(aps_allreduce_time(8, BYTES, 2 * BW, ALPHA) - 14e-5, 0.00875,
               REL);
}

/* Group placement on 64 H100 (8 nodes of 8); ranks tp, cp, fsdp, dp, pp:
 *   NVLink bw = 450e9 * 0.8 = 360e9 B/s, alpha 3e-6 s
 *   NIC    bw =  50e9 * 0.8 =  40e9 B/s, alpha 8e-6 s */
static void test_ap_ft_07_group_link(void **state)
{
    (void)state;
    aps_cluster c;
    fx_h100(&c, 64);
    double bw = 0, alpha = 0;

    /* tp group of 8, stride 1: ranks 0..7 = one node */
    assert_int_equal(aps_group_link(&c, 1, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 360e9, REL);
    ASSERT_REL(alpha, 3e-6, REL);

    /* 16 consecutive ranks: two nodes, inter-node latency */
    assert_int_equal(aps_group_link(&c, 1, 16, &bw, &alpha), 0);
    ASSERT_REL(alpha, 8e-6, REL);

    /* stride 8 (e.g. dp outside tp 8): one member per node, so every
     * ring step crosses a NIC: the per-GPU NIC (MODELING.md s.4) */
    assert_int_equal(aps_group_link(&c, 8, 2, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    ASSERT_REL(alpha, 8e-6, REL);
    assert_int_equal(aps_group_link(&c, 8, 8, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    assert_int_equal(aps_group_link(&c, 16, 4, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);

    /* stride 2, size 4 (dp inside a node after tp 2): ranks 0,2,4,6 */
    assert_int_equal(aps_group_link(&c, 2, 4, &bw, &alpha), 1);
    ASSERT_REL(bw, 360e9, REL);
    /* stride 4, size 4: ranks 0,4,8,12 span two nodes */
    assert_int_equal(aps_group_link(&c, 4, 4, &bw, &alpha), 0);
    /* a single rank is no group: intra, whatever the stride */
    assert_int_equal(aps_group_link(&c, 64, 1, &bw, &alpha), 1);

    /* a 4-GPU cluster smaller than a node: everything is NVLink */
    fx_h100(&c, 4);
    assert_int_equal(aps_group_link(&c, 1, 4, &bw, &alpha), 1);
    ASSERT_REL(bw, 360e9, REL);
}

/* A cross-node group with g > 1 members per node (rail-aligned, one NCCL
 * ring per NIC, as comm.c's aps_group_link comment says).  In a ring
 * all-gather every one of the n - 1 steps moves one chunk of bytes/n over
 * every ring link, so each link carries (n-1)/n * bytes of its ring --
 * including the link entering a node: a ring cannot avoid forwarding the
 * node's own chunks back into it (n = 4 on 2 nodes, ring A0 A1 B0 B1: B1's
 * chunk reaches B0 only through A0, A1 and the A1 -> B0 NIC, which so
 * carries 3/4 of the tensor, not the (k-1)/k = 1/2 node B lacks).  With g
 * rings on g NICs each NIC carries (n-1)/n * bytes / g, and the NVLink
 * hops (n-1)/n * bytes per GPU, so in the ring formula
 *   bw = min(NVLink, g * NIC).
 * (k-1)/k * bytes / (g NIC) is the volume of a hierarchical algorithm
 * (rail all-gather between nodes, then NVLink inside), not of a ring.
 *   16 ranks, stride 1 (g 8, k 2):  min(360e9, 8 * 40e9) = 320e9
 *   32 ranks, stride 1 (g 8, k 4):  min(360e9, 320e9)    = 320e9
 *   4 ranks, stride 4 (g 2, k 2):   min(360e9, 2 * 40e9) = 80e9
 * NCCL's maintainers describe the same: ring traffic enters and leaves a
 * node once per ring, and more NICs raise ring bus bandwidth up to the
 * NVLink bandwidth (NVIDIA/nccl issues 412 and 687).  Only NCCL's tree /
 * NVLS-tree all-reduce on few nodes can beat g * NIC (nccl-tests issue
 * 196), and aps_group_link also serves all-gathers and reduce-scatters.
 * comm.c instead scales the NIC term by ((n-1)/n)/((k-1)/k): 16 ranks ->
 * 600e9 capped at NVLink 360e9; 4 ranks stride 4 -> 120e9.  This test
 * fails against that formula (reported; not skipped). */
static void test_ap_ft_07_group_link_cross_node_ring(void **state)
{
    (void)state;
    aps_cluster c;
    fx_h100(&c, 64);
    double bw = 0, alpha = 0;
    assert_int_equal(aps_group_link(&c, 1, 16, &bw, &alpha), 0);
    ASSERT_REL(bw, 320e9, REL);
    assert_int_equal(aps_group_link(&c, 1, 32, &bw, &alpha), 0);
    ASSERT_REL(bw, 320e9, REL);
    assert_int_equal(aps_group_link(&c, 4, 4, &bw, &alpha), 0);
    ASSERT_REL(bw, 80e9, REL);
}

/* ------------------------------------------ through aps_estimate_run */

/* Llama-3.1-8B, t = 8 with SP, one node, B = 4, s = 8192, b = 1: m = 4.
 * Per layer per micro-batch (compute.c): 2 all-gathers + 2 reduce-scatters
 * forward and again backward = 8 collectives over 8 ranks of the activation
 * 2 b s h = 2 * 8192 * 4096 = 67,108,864 bytes.  The stage is first and
 * last (p = 1), so stagetime.c adds the embedding's and the output layer's
 * all-gathers, 2 forward and 2 backward.  Per micro-batch:
 *   (32 * 8 + 4) = 260 collectives of 7/8 * act/bw + 7 alpha;
 *   x m = 4: 1040 * 7/8 = 910 act/bw + 1040 * 7 = 7280 alpha.
 *   bw = 450e9 * 0.8 = 360e9, alpha = 3e-6:
 *   910 * 67,108,864 / 360e9 = 0.16963629511...; 7280 * 3e-6 = 0.02184. */
static void tp_setup(aps_model *m, aps_cluster *c, aps_training *t,
                     aps_strategy *s)
{
    fx_llama31_8b(m);
    fx_h100(c, 8);
    fx_training(t, 4, 8192);
    aps_strategy_defaults(s);
    s->tp_degree = 8;
    s->sequence_parallel = true;
}

static void test_ap_ft_07_tp_comm_through_estimate(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    tp_setup(&m, &c, &t, &s);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_int_equal(e.micro_batch_num, 4);
    double act = 2.0 * 8192.0 * 4096.0;
    double want = 910.0 * act / 360e9 + 7280.0 * 3e-6;
    ASSERT_REL(e.perf_total[APS_PERF_TP_COMM], want, REL);
    /* tp_overlap defaults to 0: all exposed */
    ASSERT_REL(e.perf_exposed[APS_PERF_TP_COMM], want, REL);

    /* Without SP: 4 all-reduces per layer (2 (n-1)/n each) and the
     * embedding / output all-reduce, 2 per micro-batch: the same bytes on
     * the wire as SP, (32 * 4 + 2) * 2 * 7/8 = 227.5 act/bw per micro-batch
     * and 130 * 14 = 1820 alpha; x 4 = 910 act/bw + 7280 alpha. */
    s.sequence_parallel = false;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.perf_total[APS_PERF_TP_COMM], want, REL);
}

/* Fewer KV heads than TP ranks (Megatron-Core replicates them,
 * attention.py l.353-379 @ d98e8a64): with 4 query groups at t = 8 each
 * rank all-gathers the QKV output forward and reduce-scatters its
 * gradient backward (get_query_key_value_tensors l.1864), over the fused
 * projection's (32 + 2 x 4) x 128 = 5,120 columns of the 8,192 tokens,
 * bf16: 83,886,080 B; (7/8) x 83,886,080 / 360e9 + 7 x 3e-6 each way, and
 * the torch.cat copy of the whole tensor each makes (mappings.py
 * _gather_along_last_dim, _reduce_scatter_along_last_dim: 2 x 83,886,080
 * B read and written at the HBM's 3.35e12 x 0.80), 32 layers, 4
 * micro-batches, on top of the test above's TP time (the SP collectives
 * are of the hidden width, unchanged); blocking, so exposed whole under
 * tp_comm_overlap too. */
static void test_tp_comm_replicated_kv_heads(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    tp_setup(&m, &c, &t, &s);
    m.num_query_groups = 4;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REASON(e.reason, APS_REASON_NONE, e.reason_msg);
    double act = 2.0 * 8192.0 * 4096.0;
    double base = 910.0 * act / 360e9 + 7280.0 * 3e-6;
    ASSERT_REL(c.device.hbm_bandwidth * c.device.hbm_efficiency, 2.68e12,
               1e-9);
    double gather = 7.0 / 8.0 * 83886080.0 / 360e9 + 7.0 * 3e-6 +
                    2.0 * 83886080.0 / 2.68e12;
    ASSERT_REL(gather, 2.8749133e-4, 1e-6);
    double kv = 2.0 * 32.0 * 4.0 * gather;
    ASSERT_REL(e.perf_total[APS_PERF_TP_COMM], base + kv, REL);
    /* the gathered output and its reordered copy outgrow the SP input
     * buffer: 2 x 83,886,080 B against 2 x 8,192 x 4,096 = 67,108,864 */
    ASSERT_REL(e.mem[APS_MEM_COMM_TP], 167772160.0, REL);
    /* each rank keeps one K and one V head, as with 8 groups at t = 8
     * (the core's config of num_query_groups = world_size, l.374-379);
     * half a head each at t = 8 would be 2 x 8,192 x 64 x 2 B less per
     * layer */
    aps_estimate e8;
    m.num_query_groups = 8;
    fx_run(&m, &c, &t, &s, &e8);
    ASSERT_REL(e.mem[APS_MEM_ACTIVATIONS], e8.mem[APS_MEM_ACTIVATIONS], REL);
    /* with the SP collectives overlapped, the gathers stay exposed */
    t.tp_comm_overlap = true;
    m.num_query_groups = 4;
    fx_run(&m, &c, &t, &s, &e);
    /* (aps_recipe_tp_exposed: at least the first of 8 chunks of the SP
     * collectives exposed, some of the rest hidden; the gathers all) */
    ASSERT_REL(e.perf_total[APS_PERF_TP_COMM], base + kv, REL);
    assert_true(e.perf_exposed[APS_PERF_TP_COMM] >= kv + base / 8.0);
    assert_true(e.perf_exposed[APS_PERF_TP_COMM] < kv + base);
    t.tp_comm_overlap = false;
    /* TorchTitan shards whole KV heads: refused */
    t.framework = APS_FW_FSDP2;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REASON(e.reason, APS_REASON_TP_DIVISIBILITY, e.reason_msg);
}

/* Doubling intra_node_bandwidth halves the bandwidth term of the TP
 * time: 0.16963629511.../2 + 0.02184; with zero latency the whole TP time
 * halves. */
static void test_ap_ft_07_tp_comm_double_nvlink(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    tp_setup(&m, &c, &t, &s);
    aps_estimate e1, e2;
    fx_run(&m, &c, &t, &s, &e1);
    c.device.intra_node_bandwidth *= 2.0;
    fx_run(&m, &c, &t, &s, &e2);
    double act = 2.0 * 8192.0 * 4096.0;
    double bw_term = 910.0 * act / 360e9;
    double alpha_term = 7280.0 * 3e-6;
    ASSERT_REL(e1.perf_total[APS_PERF_TP_COMM], bw_term + alpha_term, REL);
    ASSERT_REL(e2.perf_total[APS_PERF_TP_COMM], bw_term / 2.0 + alpha_term,
               REL);

    tp_setup(&m, &c, &t, &s);
    c.device.intra_node_latency = 0.0;
    fx_run(&m, &c, &t, &s, &e1);
    c.device.intra_node_bandwidth *= 2.0;
    fx_run(&m, &c, &t, &s, &e2);
    ASSERT_REL(e2.perf_total[APS_PERF_TP_COMM],
               e1.perf_total[APS_PERF_TP_COMM] / 2.0, REL);
    /* the inter-node link does not carry TP 8 inside a node */
    tp_setup(&m, &c, &t, &s);
    fx_run(&m, &c, &t, &s, &e1);
    c.device.inter_node_bandwidth *= 2.0;
    fx_run(&m, &c, &t, &s, &e2);
    ASSERT_REL(e2.perf_total[APS_PERF_TP_COMM],
               e1.perf_total[APS_PERF_TP_COMM], 0);
}

/* Quantized sequence-parallel all-gathers: under fp8 TransformerEngine
 * gathers the layers' GEMM inputs (forward) and output gradients
 * (backward) as fp8, 1 byte per element instead of 2; the reduce-scatters
 * and the embedding / output layer's collectives stay bf16.  Of the 260
 * collectives per micro-batch of tp_setup, the 32 x 4 layer all-gathers
 * carry half the bytes: 32 * 4 * 7/8 * act/2 = 56 act/bw less per
 * micro-batch, x 4: 910 - 224 = 686 act/bw.  MXFP8 adds one scale byte per
 * 32 elements: (1 + 1/32) / 2 of act, 910 - 224 * (1 - 1.03125) * 2
 * = 910 - 217 = 693 act/bw.  TorchTitan gathers float8 tensorwise only
 * (torchao Float8ColwiseParallel); its MXFP8 all-gathers stay bf16. */
static void test_tp_quantized_allgather(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    double act = 2.0 * 8192.0 * 4096.0, alpha_term = 7280.0 * 3e-6;
    const struct {
        aps_framework fw;
        aps_precision p;
        double act_over_bw;
    } cases[] = {
        {APS_FW_MEGATRON, APS_PREC_BF16, 910.0},
        {APS_FW_MEGATRON, APS_PREC_FP8, 686.0},
        {APS_FW_MEGATRON, APS_PREC_MXFP8, 693.0},
        {APS_FW_FSDP2, APS_PREC_FP8, 686.0},
        {APS_FW_FSDP2, APS_PREC_MXFP8, 910.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_setup(&m, &c, &t, &s);
        t.framework = cases[i].fw;
        t.precision = cases[i].p;
        aps_estimate e;
        fx_run(&m, &c, &t, &s, &e);
        ASSERT_REL(e.perf_total[APS_PERF_TP_COMM],
                   cases[i].act_over_bw * act / 360e9 + alpha_term, REL);
    }
}

/* DP gradient all-reduce (Megatron, zero_stage 0, S = 1): fp32 grads of
 * Llama-3.1-8B, 4 P = 4 * 8,030,261,248 = 32,121,044,992 bytes, once per
 * step over D = 8 ranks of one node (NVLink 360e9, 3e-6):
 *   2 * 7/8 * 32,121,044,992 / 360e9 + 14 * 3e-6
 *   = 56,211,828,736 / 360e9 + 42e-6 = 0.15614396871... + 0.000042. */
static void test_ap_ft_07_dp_allreduce_through_estimate(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 8, 4096);
    s.dp_degree = 8;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.perf_total[APS_PERF_DP_GRAD_SYNC],
               56211828736.0 / 360e9 + 42e-6, REL);
}

/* DP across nodes, one member per node: TP 8 inside each node, DP 2 over
 * 2 nodes (stride 8): the per-GPU NIC, 40e9 B/s, 8e-6 s.
 * Stage parameters at t = 8 (V padded to a multiple of 1024: 129024):
 *   layer 218,103,808 / 8 + 2 * 4096 = 27,271,168; x 32 = 872,677,376
 *   embedding + output 2 * 129024 * 4096 / 8 = 132,120,576; norm 4,096
 *   -> 1,004,802,048; fp32 grads 4x = 4,019,208,192 bytes.
 *   2 * 1/2 * 4,019,208,192 / 40e9 + 2 * 8e-6 = 0.1004802048 + 0.000016.
 * Doubling the NIC bandwidth halves the first term. */
static void test_ap_ft_07_dp_cross_node_through_estimate(void **state)
{
    (void)state;
    aps_model m; aps_cluster c; aps_training t; aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 16, 8, 4096);
    s.tp_degree = 8;
    s.dp_degree = 2;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_DBL_EXACT(e.stages[0].params, 1004802048.0);
    ASSERT_REL(e.perf_total[APS_PERF_DP_GRAD_SYNC], 0.1004802048 + 16e-6,
               REL);
    c.device.inter_node_bandwidth *= 2.0;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.perf_total[APS_PERF_DP_GRAD_SYNC],
               0.1004802048 / 2.0 + 16e-6, REL);
}

/* Point-to-point sends (CP ring, PP) leave a node through one NIC: a
 * 16-rank CP ring on two 8-GPU nodes runs at 50e9 * 0.8 = 40e9 B/s, and
 * doubling the NIC bandwidth halves its bandwidth term. */
static void test_p2p_link_cross_node(void **state)
{
    (void)state;
    aps_cluster c;
    fx_h100(&c, 16);
    double bw, alpha;
    assert_int_equal(aps_p2p_link(&c, 1, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 360e9, REL);
    assert_int_equal(aps_p2p_link(&c, 1, 16, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    ASSERT_REL(alpha, 8e-6, REL);

    /* Through the estimate: Llama-3.1-8B, s = 32768, b = 1, CP 16, B = 16
     * (m = 16 micro-batches), no recompute.  K/V chunk per ring step:
     * 2 (K, V) x 2 B x 1 x 2048 tokens x 8 x 128 = 8,388,608 B; 15 steps
     * forward, 30 backward per layer: 45 x (8388608 / 40e9 + 8e-6) s per
     * layer per micro-batch, x 32 layers x 16 micro-batches. */
    aps_model m;
    fx_llama31_8b(&m);
    aps_training t;
    fx_training(&t, 16, 32768);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.cp_degree = 16;
    aps_estimate *e = test_malloc(sizeof *e);
    fx_run(&m, &c, &t, &s, e);
    double step = 8388608.0 / 40e9 + 8e-6;
    ASSERT_REL(e->perf_total[APS_PERF_CP_COMM], 45.0 * step * 32.0 * 16.0, REL);
    c.device.inter_node_bandwidth *= 2.0;
    c.device.inter_node_latency = 0.0;
    fx_run(&m, &c, &t, &s, e);
    ASSERT_REL(e->perf_total[APS_PERF_CP_COMM],
               45.0 * (8388608.0 / 80e9) * 32.0 * 16.0, REL);
    test_free(e);
}

/* GB200 NVL72 (NVIDIA GB200 NVL72 datasheet, 2024): 4 GPUs per compute
 * tray (devices_per_node = 4), the rack's NVLink switches join up to 72;
 * the job uses 64 per rack (nvlink_domain_size = 64).  Preset links
 * 900e9 B/s NVLink and 50e9 B/s NIC per GPU; collective_efficiency set to
 * 0.8 and latencies to 3e-6 / 8e-6 s so that
 *   NVLink bw = 900e9 * 0.8 = 720e9 B/s, NIC bw = 50e9 * 0.8 = 40e9 B/s. */
static void fx_gb200(aps_cluster *c, int64_t N, int64_t domain)
{
    *c = (aps_cluster){0};
    if (aps_device_preset("gb200", &c->device) != APS_OK)
        fail_msg("no gb200 preset");
    c->device.collective_efficiency = 0.8;
    c->device.intra_node_latency = 3e-6;
    c->device.inter_node_latency = 8e-6;
    c->num_devices = N;
    c->devices_per_node = 4;
    c->nvlink_domain_size = domain;
    char err[256] = "";
    if (aps_cluster_validate(c, err, sizeof err) != APS_OK)
        fail_msg("gb200 fixture does not validate: %s", err);
}

/* 64 GPUs in one NVLink domain of 64: TP 8 (stride 1, size 8) and DP 8
 * outside it (stride 8, size 8, span 64 = D) both run at NVLink, 720e9,
 * alpha 3e-6; so do PP sends between ranks 32 apart (stride 32, size 2).
 * With nvlink_domain_size = 0 the domain is the 4-GPU tray, as before:
 *   TP 8: span 8 > 4, g = 4 / 1 = 4 per tray: min(720e9, 4 * 40e9) = 160e9
 *   DP 8: stride 8 > 4, g = 1:                the NIC, 40e9
 *   PP p2p across trays:                       the NIC, 40e9 */
static void test_group_link_nvl72_domain(void **state)
{
    (void)state;
    aps_cluster c;
    double bw = 0, alpha = 0;
    fx_gb200(&c, 64, 64);
    assert_int_equal(aps_group_link(&c, 1, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
    ASSERT_REL(alpha, 3e-6, REL);
    assert_int_equal(aps_group_link(&c, 8, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
    ASSERT_REL(alpha, 3e-6, REL);
    assert_int_equal(aps_group_link(&c, 1, 64, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
    assert_int_equal(aps_p2p_link(&c, 32, 2, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);

    fx_gb200(&c, 64, 0);
    assert_int_equal(aps_group_link(&c, 1, 8, &bw, &alpha), 0);
    ASSERT_REL(bw, 160e9, REL);
    ASSERT_REL(alpha, 8e-6, REL);
    assert_int_equal(aps_group_link(&c, 8, 8, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    assert_int_equal(aps_group_link(&c, 1, 4, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
    assert_int_equal(aps_p2p_link(&c, 32, 2, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);

    /* nvlink_domain_size = devices_per_node is the same as 0 */
    fx_gb200(&c, 64, 4);
    assert_int_equal(aps_group_link(&c, 1, 8, &bw, &alpha), 0);
    ASSERT_REL(bw, 160e9, REL);
}

/* 128 GPUs in two domains of 64 (two racks, 64 of 72 GPUs each):
 *   DP 16 outside TP 8 (stride 8, span 128): g = 64 / 8 = 8 members per
 *     domain, each with its own NIC: min(720e9, 8 * 40e9) = 320e9, 8e-6
 *   16 consecutive ranks (stride 1, size 16): span 16 divides 64, so
 *     ranks 0..15, 16..31, ... each stay in one domain: 720e9
 *   DP 2 across the racks (stride 64, size 2): g = 1, the NIC 40e9
 *   PP sends between the racks (stride 64, size 2): one NIC, 40e9
 * A job smaller than its domain (32 GPUs, domain 64): D = 32, so a group
 * of all 32 is NVLink. */
static void test_group_link_nvl72_two_domains(void **state)
{
    (void)state;
    aps_cluster c;
    double bw = 0, alpha = 0;
    fx_gb200(&c, 128, 64);
    assert_int_equal(aps_group_link(&c, 8, 16, &bw, &alpha), 0);
    ASSERT_REL(bw, 320e9, REL);
    ASSERT_REL(alpha, 8e-6, REL);
    assert_int_equal(aps_group_link(&c, 1, 16, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
    assert_int_equal(aps_group_link(&c, 64, 2, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    assert_int_equal(aps_p2p_link(&c, 64, 2, &bw, &alpha), 0);
    ASSERT_REL(bw, 40e9, REL);
    ASSERT_REL(alpha, 8e-6, REL);
    assert_int_equal(aps_p2p_link(&c, 8, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);

    fx_gb200(&c, 32, 64);
    assert_int_equal(aps_group_link(&c, 1, 32, &bw, &alpha), 1);
    ASSERT_REL(bw, 720e9, REL);
}

/* MI300X hosts (AMD CDNA 3 white paper): 8 GPUs fully connected by 7
 * Infinity Fabric links of 64e9 B/s per direction, 448e9 per GPU; NIC
 * 50e9.  collective_efficiency 1 so that the link figures show:
 *   TP 8 (stride 1, size 8): all 7 links, 448e9, as on a switch
 *   TP 4: 3 links, 192e9;  TP 2, or a pair 4 ranks apart: one link, 64e9
 *   point-to-point sends in the host: one link, 64e9
 * Two hosts (16 GPUs):
 *   16 consecutive ranks: g = 8 per host, min(7 links 448e9, 8 x 50e9) = 400e9
 *   4 ranks 4 apart: g = 2 per host, min(1 link 64e9, 2 x 50e9) = 64e9
 *     (behind a switch: min(448e9, 100e9) = 100e9)
 *   2 ranks 8 apart: g = 1, the NIC, 50e9
 *   all-to-all of 4 ranks 4 apart, 2e9 B inside the hosts and 1e9 across:
 *     max(2e9 / 64e9, 1e9 / 50e9) + 3 x 8e-6 = 0.03125 + 2.4e-5 s */
static void fx_mi300x(aps_cluster *c, int64_t N)
{
    *c = (aps_cluster){0};
    if (aps_device_preset("mi300x-192gb", &c->device) != APS_OK)
        fail_msg("no mi300x-192gb preset");
    c->device.collective_efficiency = 1.0;
    c->device.inter_node_latency = 8e-6;
    c->num_devices = N;
    c->devices_per_node = 8;
    char err[256] = "";
    if (aps_cluster_validate(c, err, sizeof err) != APS_OK)
        fail_msg("mi300x fixture does not validate: %s", err);
}

static void test_group_link_mesh(void **state)
{
    (void)state;
    aps_cluster c;
    double bw = 0, alpha = 0;
    fx_mi300x(&c, 8);
    assert_int_equal(aps_group_link(&c, 1, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 448e9, REL);
    assert_int_equal(aps_group_link(&c, 1, 4, &bw, &alpha), 1);
    ASSERT_REL(bw, 192e9, REL);
    assert_int_equal(aps_group_link(&c, 1, 2, &bw, &alpha), 1);
    ASSERT_REL(bw, 64e9, REL);
    assert_int_equal(aps_group_link(&c, 4, 2, &bw, &alpha), 1);
    ASSERT_REL(bw, 64e9, REL);
    assert_int_equal(aps_p2p_link(&c, 1, 8, &bw, &alpha), 1);
    ASSERT_REL(bw, 64e9, REL);
    assert_int_equal(aps_p2p_pair_link(&c, 1, 0, 3, &bw, &alpha), 1);
    ASSERT_REL(bw, 64e9, REL);

    fx_mi300x(&c, 16);
    assert_int_equal(aps_group_link(&c, 1, 16, &bw, &alpha), 0);
    ASSERT_REL(bw, 400e9, REL);
    assert_int_equal(aps_group_link(&c, 4, 4, &bw, &alpha), 0);
    ASSERT_REL(bw, 64e9, REL);
    assert_int_equal(aps_group_link(&c, 8, 2, &bw, &alpha), 0);
    ASSERT_REL(bw, 50e9, REL);
    ASSERT_REL(aps_group_alltoall_time(&c, 4, 4, 2e9, 1e9), 0.03125 + 2.4e-5,
               REL);

    /* the same host behind a switch: every group at the full bandwidth */
    c.device.intra_node_links = 0;
    assert_int_equal(aps_group_link(&c, 4, 4, &bw, &alpha), 0);
    ASSERT_REL(bw, 100e9, REL);
    fx_mi300x(&c, 8);
    c.device.intra_node_links = 0;
    assert_int_equal(aps_group_link(&c, 1, 2, &bw, &alpha), 1);
    ASSERT_REL(bw, 448e9, REL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ap_ft_07_allreduce_ring),
        cmocka_unit_test(test_ap_ft_07_allgather_reducescatter_ring),
        cmocka_unit_test(test_ap_ft_07_single_rank_is_free),
        cmocka_unit_test(test_ap_ft_07_double_bandwidth_halves_term),
        cmocka_unit_test(test_ap_ft_07_group_link),
        cmocka_unit_test(test_ap_ft_07_group_link_cross_node_ring),
        cmocka_unit_test(test_ap_ft_07_tp_comm_through_estimate),
        cmocka_unit_test(test_ap_ft_07_tp_comm_double_nvlink),
        cmocka_unit_test(test_tp_comm_replicated_kv_heads),
        cmocka_unit_test(test_tp_quantized_allgather),
        cmocka_unit_test(test_ap_ft_07_dp_allreduce_through_estimate),
        cmocka_unit_test(test_ap_ft_07_dp_cross_node_through_estimate),
        cmocka_unit_test(test_p2p_link_cross_node),
        cmocka_unit_test(test_group_link_nvl72_domain),
        cmocka_unit_test(test_group_link_nvl72_two_domains),
        cmocka_unit_test(test_group_link_mesh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
