/*
 * test_recipe.c -- recipe settings (recipe.c), GEMM precisions
 * (precision.c) and the frameworks' pipeline split rules (pipeline.c),
 * each against a hand calculation from the formula its source states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

/* Llama-3.1-70B, one layer's matrices: QKV 8192 x (8192 + 2 x 1024)
 * = 83,886,080, output 8192 x 8192 = 67,108,864, SwiGLU 3 x 8192 x 28672
 * = 704,643,072; sum 855,638,016. */
#define L70_LAYER_MATMUL 855638016.0

/** Llama-3.1-8B on 8 H100s, 64 sequences of 4,096 tokens, the default
 *  strategy with data parallelism over the 8. */
static void setup_8b(aps_model *m, aps_cluster *c, aps_training *t,
                     aps_strategy *s)
{
    fx_setup_8b(m, c, t, s, 8, 64, 4096);
    s->dp_degree = 8;
}

static aps_reason chunks_of(int64_t L, int64_t p, int64_t v,
                            aps_pipeline_split split, int64_t *chunks,
                            char *msg, size_t n)
{
    aps_model m;
    fx_llama(&m, "x", L, 1024, 8, 8, 4096, 32000);
    fx_validate(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = p;
    s.vpp_degree = v;
    s.pipeline_split = split;
    return aps_chunk_layers(&m, &s, chunks, msg, n);
}

/* Megatron --account-for-embedding/loss-in-pipeline-split and
 * TorchTitan's default: E = L + 2 units over p v chunks, the first and
 * last chunk one layer short.  126 layers, p 8, v 2: 128 / 16 = 8 per
 * chunk, chunk 1 and chunk 16 hold 7; rank 0 = chunks 1 and 9 = 15,
 * rank 7 = chunks 8 and 16 = 15, ranks 1-6 = 16 (405B's published
 * layout).  TorchTitan with a remainder: 30 layers over 4 chunks, E = 32
 * ... 29 layers, E = 31 = 7 x 4 + 3: 8, 8, 8, 7 less one at each end:
 * 7, 8, 8, 6. */
static void test_split_embedding_loss(void **state)
{
    (void)state;
    int64_t c[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(chunks_of(126, 8, 2, APS_SPLIT_EMBEDDING_LOSS, c, msg,
                            sizeof msg), APS_REASON_NONE, msg);
    assert_int_equal(c[0], 7);
    assert_int_equal(c[15], 7);
    for (int j = 1; j < 15; j++)
        assert_int_equal(c[j], 8);
    aps_model m;
    fx_llama31_405b(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 8;
    s.vpp_degree = 2;
    s.pipeline_split = APS_SPLIT_EMBEDDING_LOSS;
    int64_t r[APS_MAX_STAGES];
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(r[0], 15);
    assert_int_equal(r[7], 15);
    for (int i = 1; i < 7; i++)
        assert_int_equal(r[i], 16);

    ASSERT_REASON(chunks_of(29, 4, 1, APS_SPLIT_EMBEDDING_LOSS, c, msg,
                            sizeof msg), APS_REASON_NONE, msg);
    assert_int_equal(c[0], 7);
    assert_int_equal(c[1], 8);
    assert_int_equal(c[2], 8);
    assert_int_equal(c[3], 6);
}

/* Megatron asserts (L + 2) divisible by p v with both flags
 * (megatron/training/arguments.py): 29 + 2 = 31 over 4 is refused for
 * megatron, accepted for fsdp2 (TorchTitan spreads the remainder). */
static void test_split_embedding_loss_megatron_divisibility(void **state)
{
    (void)state;
    aps_model m;
    fx_llama(&m, "x", 29, 1024, 8, 8, 4096, 32000);
    fx_validate(&m);
    aps_training t;
    fx_training(&t, 16, 1024);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 4;
    s.pipeline_split = APS_SPLIT_EMBEDDING_LOSS;
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(aps_check_pp(&m, &t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "num_layers + 2 = 31 divisible by pp_degree x vpp_degree = 4");
    /* says how to get a split anyway (DeepSeek-V3's 61 layers at pp 2/4/8) */
    ASSERT_HAS(msg, "or layer_offset = \"balanced\"");
    t.framework = APS_FW_FSDP2;
    ASSERT_REASON(aps_check_pp(&m, &t, &s, msg, sizeof msg), APS_REASON_NONE,
                  msg);
}

/* Megatron-DeepSpeed 'type:transformer|embedding' with DeepSpeed's
 * partition_balanced: 96 layers + 2 embeddings = 98 units over 8 parts,
 * 98 = 12 x 8 + 2: 13, 13, 12 x 6 units; layers 12 (first part holds the
 * embedding), 13, 12, 12, 12, 12, 12, 11 (last holds the tied head). */
static void test_split_deepspeed_type(void **state)
{
    (void)state;
    int64_t c[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(chunks_of(96, 8, 1, APS_SPLIT_DEEPSPEED_TYPE, c, msg,
                            sizeof msg), APS_REASON_NONE, msg);
    const int64_t want[8] = {12, 13, 12, 12, 12, 12, 12, 11};
    for (int i = 0; i < 8; i++)
        assert_int_equal(c[i], want[i]);
    ASSERT_REASON(chunks_of(96, 8, 2, APS_SPLIT_DEEPSPEED_TYPE, c, msg,
                            sizeof msg), APS_REASON_VPP_INVALID, msg);
}

/* fill_last over L layers and p x v chunks gives every chunk `each`
 * layers and the last one `last`. */
static void assert_fill_last(int64_t L, int64_t p, int64_t v, int64_t each,
                             int64_t last)
{
    int64_t c[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(chunks_of(L, p, v, APS_SPLIT_FILL_LAST, c, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    for (int64_t j = 0; j + 1 < p * v; j++)
        assert_int_equal(c[j], each);
    assert_int_equal(c[p * v - 1], last);
}

/* fill_last, NVIDIA's DeepSeek-V3 layouts (NeMo 8cfedd72
 * pretrain_deepseek_v3.py map_pp_vp_to_layout): 61 layers over S chunks,
 * ceil(61 / S) each, the last the rest.
 *   4 x 4 = 16 chunks: ceil(61 / 16) = 4; 15 x 4 = 60, last 1.  Rank 0
 *     runs chunks 1, 5, 9, 13 = 16 layers; rank 3 chunks 4, 8, 12, 16 =
 *     4 + 4 + 4 + 1 = 13.
 *   8 x 1: ceil(61 / 8) = 8; 7 x 8 = 56, last 5.
 *   4 x 1: ceil(61 / 4) = 16; 3 x 16 = 48, last 13.
 *   16 x 1: as 4 x 4, 15 x 4 and 1.
 *   8 x 4 = 32 chunks: ceil(61 / 32) = 2; 31 x 2 = 62 > 61 would leave
 *     the last -1: the last chunk holds the loss alone and the first
 *     61 - 30 x 2 = 1, NVIDIA's `Et|(tt|)*30L` (Megatron-LM 3c1b98ef^
 *     docs/discussions/deepseek-v3-gb200-optimization s.1; Megatron-Bridge
 *     r0.1.0 scripts/performance/run_script.py `Et|(tt|)*30mL` on H100).
 *     Rank 0 runs chunks 1, 9, 17, 25 = 1 + 3 x 2 = 7 layers, rank 7
 *     chunks 8, 16, 24, 32 = 3 x 2 + 0 = 6, ranks 1-6 8 each.
 *   16 x 2 = 32 chunks: the same chunks; rank 0 runs 1 + 2 = 3, rank 15
 *     2 + 0 = 2.
 *   4 x 16 = 64 chunks: ceil = 1, the first chunk would hold
 *     61 - 62 x 1 = -1: refused.
 *   10 layers over 6 x 1: 2 each, 5 x 2 = 10, the last chunk and so the
 *     last rank without layers: refused.
 *   64 over 4 x 4: 4 each, the even split. */
static void test_split_fill_last(void **state)
{
    (void)state;
    int64_t c[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    assert_fill_last(61, 4, 4, 4, 1);
    aps_model m;
    fx_llama(&m, "x", 61, 1024, 8, 8, 4096, 32000);
    fx_validate(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 4;
    s.vpp_degree = 4;
    s.pipeline_split = APS_SPLIT_FILL_LAST;
    int64_t r[APS_MAX_STAGES];
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(r[0], 16);
    assert_int_equal(r[1], 16);
    assert_int_equal(r[2], 16);
    assert_int_equal(r[3], 13);

    assert_fill_last(61, 8, 1, 8, 5);
    assert_fill_last(61, 4, 1, 16, 13);
    assert_fill_last(61, 16, 1, 4, 1);
    assert_fill_last(64, 4, 4, 4, 4);

    ASSERT_REASON(chunks_of(61, 8, 4, APS_SPLIT_FILL_LAST, c, msg,
                            sizeof msg), APS_REASON_NONE, msg);
    assert_int_equal(c[0], 1);
    for (int j = 1; j < 31; j++)
        assert_int_equal(c[j], 2);
    assert_int_equal(c[31], 0);
    s.pp_degree = 8;
    s.vpp_degree = 4;
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(r[0], 7);
    for (int i = 1; i < 7; i++)
        assert_int_equal(r[i], 8);
    assert_int_equal(r[7], 6);
    s.pp_degree = 16;
    s.vpp_degree = 2;
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(r[0], 3);
    assert_int_equal(r[1], 4);
    assert_int_equal(r[15], 2);

    ASSERT_REASON(chunks_of(61, 4, 16, APS_SPLIT_FILL_LAST, c, msg,
                            sizeof msg), APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "pipeline_split = fill_last");
    ASSERT_HAS(msg, "ceil(61 / 64) = 1: the 62 middle chunks take 62 layers");
    ASSERT_REASON(chunks_of(10, 6, 1, APS_SPLIT_FILL_LAST, c, msg,
                            sizeof msg), APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "leaves stage 6 without layers");
}

/* stage_partition per model chunk (p v entries, Megatron's
 * --pipeline-model-parallel-layout): 16 layers, p 2, v 2, chunks
 * 3, 5, 5, 3 in schedule order: rank 0 runs chunks 1 and 3 (3 + 5),
 * rank 1 chunks 2 and 4 (5 + 3). */
static void test_partition_per_chunk(void **state)
{
    (void)state;
    aps_model m;
    fx_llama(&m, "x", 16, 1024, 8, 8, 4096, 32000);
    fx_validate(&m);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.pp_degree = 2;
    s.vpp_degree = 2;
    const int64_t part[4] = {3, 5, 5, 3};
    memcpy(s.stage_partition, part, sizeof part);
    assert_int_equal(aps_partition_entries(&s), 4);
    int64_t r[APS_MAX_STAGES];
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    assert_int_equal(r[0], 8);
    assert_int_equal(r[1], 8);
    s.stage_partition[3] = 4; /* sums to 17 */
    ASSERT_REASON(aps_stage_layers(&m, &s, r, msg, sizeof msg),
                  APS_REASON_PP_PARTITION, msg);
    ASSERT_HAS(msg, "sums to 17");
}

/* Megatron main gradients: fp32 (4 B) by default, the parameter dtype
 * (2 B) with grad_reduce_in_fp32 off (--grad-reduce-in-bf16; NeMo and
 * Megatron-Bridge performance recipes).  Llama-3.1-8B (8,030,261,248
 * parameters), DP 8 with the distributed optimizer: grads 4 P vs 2 P. */
static void test_grad_reduce_dtype(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    s.zero_stage = 1;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem[APS_MEM_GRADS], 4.0 * 8030261248.0, REL);
    t.grad_reduce_in_fp32 = 0;
    aps_estimate e2;
    fx_run(&m, &c, &t, &s, &e2);
    ASSERT_REL(e2.mem[APS_MEM_GRADS], 2.0 * 8030261248.0, REL);
    /* the reduce-scatter moves half the bytes */
    assert_true(e2.perf_total[APS_PERF_DP_GRAD_SYNC] <
                e.perf_total[APS_PERF_DP_GRAD_SYNC]);
}

/* NeMo 1.x apex DistributedFusedAdam with store_param_remainders: the
 * fp32 master is the bf16 weight plus a 16-bit remainder, Adam states
 * 2 + 4 + 4 = 10 B instead of 12, over the DP group of 8. */
static void test_store_param_remainders(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    s.zero_stage = 1;
    t.store_param_remainders = true;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem[APS_MEM_OPTIMIZER_STATES], 10.0 * 8030261248.0 / 8.0,
               REL);
}

/* fp8 under Megatron-FSDP (fsdp_impl megatron_fsdp, fsdp_degree 64; its
 * --use-torch-fsdp2 turns fp8_param_gather off, refused by the core:
 * test_check.c test_megatron_fsdp2_fp8_param_gather): the weights are
 * sharded, so
 * TransformerEngine's fp8 copies (weight + transpose, 2 B per matrix
 * parameter) exist only for the gathered units -- the current and the
 * prefetched layer, 2 x 855,638,016 matrix parameters -- never for the
 * whole model (which would add 2 x 69.5e9 B, about 130 GiB).  Params:
 * 2 P / 64 in both precisions; comm_buffers_fsdp: 2 x 2 x 855,638,016
 * more under fp8.  With fp8_param_gather a shard is held in fp8 (1 B per
 * matrix parameter instead of 2) and the gathered units arrive in fp8,
 * their transpose made after the gather. */
static void test_fp8_fsdp_weight_copies(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_70b(&m, &c, &t, &s, 64, 64, 4096);
    s.fsdp_degree = 64;
    s.zero_stage = 3;
    t.fsdp_impl = APS_FSDP_IMPL_MEGATRON_FSDP;
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    aps_estimate bf, f8, pg;
    fx_run(&m, &c, &t, &s, &bf);
    t.precision = APS_PREC_FP8;
    fx_run(&m, &c, &t, &s, &f8);
    double psi = bf.stages[0].params;
    ASSERT_REL(bf.mem[APS_MEM_PARAMS], 2.0 * psi / 64.0, REL);
    ASSERT_REL(f8.mem[APS_MEM_PARAMS], 2.0 * psi / 64.0, REL);
    ASSERT_REL(f8.mem[APS_MEM_COMM_FSDP] - bf.mem[APS_MEM_COMM_FSDP],
               2.0 * 2.0 * L70_LAYER_MATMUL, REL);
    t.fp8_param_gather = 1;
    fx_run(&m, &c, &t, &s, &pg);
    double matmul = 80.0 * L70_LAYER_MATMUL;
    ASSERT_REL(pg.mem[APS_MEM_PARAMS], (2.0 * psi - matmul) / 64.0, REL);
    /* gathered: bf16 2 B, or fp8 + transpose 2 B for the matrices */
    ASSERT_REL(pg.mem[APS_MEM_COMM_FSDP], bf.mem[APS_MEM_COMM_FSDP], REL);
    assert_true(pg.perf_total[APS_PERF_FSDP_ALLGATHER] <
                f8.perf_total[APS_PERF_FSDP_ALLGATHER]);
}

/* torchao's float8 all-gather (TorchTitan, fsdp2): the gathered units of
 * the current and the prefetched layer arrive in fp8, one layout (1 B per
 * matrix parameter instead of bf16's 2), the transpose made per GEMM:
 * comm_buffers_fsdp falls by 2 x 218,103,808 x (2 - 1) bytes. */
static void test_fsdp2_float8_all_gather(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    t.framework = APS_FW_FSDP2;
    t.precision = APS_PREC_FP8;
    s.fsdp_degree = 8;
    aps_estimate off, on;
    fx_run(&m, &c, &t, &s, &off);
    t.fp8_param_gather = 1;
    fx_run(&m, &c, &t, &s, &on);
    ASSERT_REL(off.mem[APS_MEM_COMM_FSDP] - on.mem[APS_MEM_COMM_FSDP],
               2.0 * 218103808.0, REL);
    ASSERT_REL(on.mem[APS_MEM_PARAMS], off.mem[APS_MEM_PARAMS], REL);
}

/* MXFP8 on B200 (TransformerEngine MXFP8BlockScaling), Megatron, DP 8
 * with the distributed optimizer: bf16 weights plus the cached MXFP8
 * copies in both layouts, 2 x (1 + 1/32) B per matrix parameter.
 * Llama-3.1-8B: 32 layers x 218,103,808 matrix parameters. */
static void test_mxfp8_weight_copies(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    assert_int_equal(aps_device_preset("b200", &c.device), APS_OK);
    t.precision = APS_PREC_MXFP8;
    s.dp_degree = 8;
    s.zero_stage = 1;
    char err[256] = "";
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_OK);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    double matmul = 32.0 * aps_layer_matmul_params(&m);
    ASSERT_DBL_EXACT(aps_layer_matmul_params(&m), 218103808.0);
    ASSERT_REL(e.mem[APS_MEM_PARAMS],
               2.0 * 8030261248.0 + matmul * 2.0 * (1.0 + 1.0 / 32.0), REL);
    /* NVFP4: 2 x (1/2 + 1/16) */
    t.precision = APS_PREC_NVFP4;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.mem[APS_MEM_PARAMS],
               2.0 * 8030261248.0 + matmul * 2.0 * (0.5 + 1.0 / 16.0), REL);
    /* and none of them on Hopper */
    fx_h100(&c, 8);
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_ENOTIMPL);
    ASSERT_HAS(err, "nvfp4 on h100-sxm-80gb");
}

/* Megatron --recompute-method uniform, groups of N = 4 over 32 layers:
 * 8 group inputs kept instead of 32 layer inputs, and a whole group (4
 * layers' full activations) rebuilt at once in the backward instead of
 * one layer.  Difference in activation bytes: (8 - 32) in + (4 - 1) full,
 * in = aps_layer_activation_bytes(full recompute), full = (none). */
static void test_recompute_uniform(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    aps_estimate block, uni;
    fx_run(&m, &c, &t, &s, &block);
    s.recompute_method = APS_RECOMPUTE_UNIFORM;
    for (int i = 0; i < APS_MAX_STAGES; i++)
        s.recompute_num_layers[i] = 4;
    fx_run(&m, &c, &t, &s, &uni);
    double in = aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_FULL);
    double full = aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE);
    ASSERT_REL(uni.mem[APS_MEM_ACTIVATIONS] - block.mem[APS_MEM_ACTIVATIONS],
               (8.0 - 32.0) * in + (4.0 - 1.0) * full, REL);
    /* every layer recomputed either way */
    assert_int_equal(uni.stages[0].recompute_layers, 32);
    ASSERT_REL(uni.perf_total[APS_PERF_RECOMPUTE],
               block.perf_total[APS_PERF_RECOMPUTE], REL);
}

/* Activation offload (Megatron --cpu-offloading-num-layers 10): ten
 * layers' saved activations leave the device: -10 full at the peak (the
 * end of the forward, every copy done).  Each goes out over the host link
 * and comes back once per micro-batch: 2 x 10 x full / host_bandwidth
 * (PCIe Gen5 x16, 63e9 B/s) each of the m = 8 micro-batches. */
static void test_activation_offload(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    aps_estimate base, off;
    fx_run(&m, &c, &t, &s, &base);
    t.activation_offload_layers = 10;
    fx_run(&m, &c, &t, &s, &off);
    double full = aps_layer_activation_bytes(&m, &t, &s, APS_RECOMPUTE_NONE);
    ASSERT_REL(off.mem[APS_MEM_ACTIVATIONS] - base.mem[APS_MEM_ACTIVATIONS],
               -10.0 * full, REL);
    ASSERT_DBL_EXACT(c.device.host_bandwidth, 63e9);
    ASSERT_REL(off.perf_total[APS_PERF_OFFLOAD],
               8.0 * 2.0 * 10.0 * full / 63e9, REL);
    assert_true(off.perf_exposed[APS_PERF_OFFLOAD] >= 0.0);
    /* Megatron refuses it with pipeline parallelism */
    s.pp_degree = 2;
    s.dp_degree = 4;
    fx_run(&m, &c, &t, &s, &off);
    ASSERT_REASON(off.reason, APS_REASON_FRAMEWORK_UNSUPPORTED,
                  off.reason_msg);
    ASSERT_HAS(off.reason_msg, "--cpu-offloading");
}

/* tp_comm_overlap (TE userbuffers): a collective split into t chunks,
 * each overlapping the GEMM of the one before; when the GEMMs are longer
 * than the transfer, one chunk of t is exposed.  Llama-3.1-70B, TP 8 on
 * NVLink, 8K tokens: exposed = total / 8 (the fixtures' interference is
 * 0). */
static void test_tp_comm_overlap(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_70b(&m, &c, &t, &s, 64, 64, 8192);
    s.tp_degree = 8;
    s.dp_degree = 8;
    s.zero_stage = 1;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    t.tp_comm_overlap = true;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REL(e.perf_exposed[APS_PERF_TP_COMM],
               e.perf_total[APS_PERF_TP_COMM] / 8.0, 1e-9);
    /* with tp_overlap = 0.95 already hiding more than 7 chunks of 8,
     * turning tp_comm_overlap on must not expose more */
    t.tp_overlap = 0.95;
    aps_estimate on, off;
    fx_run(&m, &c, &t, &s, &on);
    t.tp_comm_overlap = false;
    fx_run(&m, &c, &t, &s, &off);
    assert_true(on.perf_exposed[APS_PERF_TP_COMM] <=
                off.perf_exposed[APS_PERF_TP_COMM]);
    assert_true(on.step_time <= off.step_time);
    t.tp_comm_overlap = true;
    t.tp_overlap = 0.0;
    /* Megatron asserts sequence parallelism with it */
    s.sequence_parallel = false;
    fx_run(&m, &c, &t, &s, &e);
    ASSERT_REASON(e.reason, APS_REASON_FRAMEWORK_UNSUPPORTED, e.reason_msg);
}

/* TorchTitan with PP: PyTorch's pipelining keeps the stage's parameters
 * (bf16) and its gradients (fp32 reduce dtype) unsharded across the
 * micro-batches: comm_buffers_fsdp = (2 + 4) x stage parameters. */
static void test_fsdp2_pp_unsharded(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    t.framework = APS_FW_FSDP2;
    s.pp_degree = 2;
    s.fsdp_degree = 4;
    s.reshard_after_forward = false;
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    for (int i = 0; i < 2; i++)
        ASSERT_REL(e.stages[i].mem[APS_MEM_COMM_FSDP],
                   6.0 * e.stages[i].params, REL);
}

/* TorchTitan with PP and fsdp_reshard_after_forward = "always": PyTorch's
 * pipelining turns off only the reshard after backward
 * (torch/distributed/pipelining/stage.py backward_maybe_with_nosync), so
 * each forward frees the stage's parameters and each micro-batch's
 * backward gathers them again.  Without resharding the stage is gathered
 * once per step (G); with it, once more per micro-batch: G (1 + m).  The
 * memory (parameters and gradients held unsharded) does not change. */
static void test_fsdp2_pp_reshard_after_forward(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 64, 4096);
    t.framework = APS_FW_FSDP2;
    s.pp_degree = 2;
    s.fsdp_degree = 4;
    s.layer_recompute = APS_RECOMPUTE_NONE;
    s.reshard_after_forward = false;
    aps_estimate off, on;
    fx_run(&m, &c, &t, &s, &off);
    s.reshard_after_forward = true;
    fx_run(&m, &c, &t, &s, &on);
    double mb = (double)off.micro_batch_num;
    assert_true(mb > 1.0);
    /* the two stages' parameters differ by the final norm only (4,096 of
     * ~4e9), whichever is the slowest */
    ASSERT_REL(on.perf_total[APS_PERF_FSDP_ALLGATHER],
               (1.0 + mb) * off.perf_total[APS_PERF_FSDP_ALLGATHER], 1e-5);
    for (int i = 0; i < 2; i++)
        ASSERT_REL(on.stages[i].mem[APS_MEM_COMM_FSDP],
                   off.stages[i].mem[APS_MEM_COMM_FSDP], REL);
    assert_true(on.step_time > off.step_time);
}

/* What a framework cannot run of the recipe settings. */
static void test_recipe_framework_support(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    char msg[APS_REASON_LEN] = "";
    /* the training's own inconsistencies: refused with the inputs (exit
     * 2), whatever the strategy */
    t.framework = APS_FW_FSDP;
    t.precision = APS_PREC_FP8;
    t.fp8_param_gather = 1;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.fp8_param_gather does not exist in PyTorch FSDP1");
    t.framework = APS_FW_FSDP2;
    t.precision = APS_PREC_BF16;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.fp8_param_gather needs an fp8, mxfp8 or nvfp4 precision (got bf16)");
    t.fp8_param_gather = APS_DEFAULT;
    t.tp_comm_overlap = true;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.tp_comm_overlap: TorchTitan's async tensor parallelism needs "
                    "training.torch_compile = true");
    t.torch_compile = true;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_OK);
    t.torch_compile = false;
    t.tp_comm_overlap = false;
    t.fp8_param_gather = 1;
    t.precision = APS_PREC_MXFP8;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "fp8_param_gather with mxfp8");
    t.precision = APS_PREC_FP8;
    t.fp8_param_gather = APS_DEFAULT;
    t.framework = APS_FW_FSDP2;
    t.activation_offload_layers = 4;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "--cpu-offloading-num-layers");
    t.activation_offload_layers = 0;
    t.framework = APS_FW_DEEPSPEED;
    t.precision = APS_PREC_MXFP8;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    t.precision = APS_PREC_BF16;
    s.pp_degree = 2;
    s.pipeline_split = APS_SPLIT_EMBEDDING_LOSS;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "deepspeed_type");
    /* fill_last is a per-chunk list: Megatron's layout, TorchTitan's
     * module_fqns_per_model_part; DeepSpeed's PipelineModule has none */
    s.pipeline_split = APS_SPLIT_FILL_LAST;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "deepspeed: pipeline_split = fill_last is not offered");
    t.framework = APS_FW_MEGATRON;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    t.framework = APS_FW_FSDP2;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    /* uniform groups of 2 are Megatron's, not TorchTitan's */
    t.framework = APS_FW_FSDP2;
    s.pp_degree = 1;
    s.pipeline_split = APS_SPLIT_EVEN;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    s.recompute_method = APS_RECOMPUTE_UNIFORM;
    s.recompute_num_layers[0] = 2;
    ASSERT_REASON(aps_check_framework(&t, &s, msg, sizeof msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, msg);
    ASSERT_HAS(msg, "uniform in groups of 2");
    /* a tri-state outside {-1, 0, 1} is bad input */
    fx_training(&t, 64, 4096);
    t.grad_reduce_in_fp32 = 2;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.grad_reduce_in_fp32");
}

/* Dropout as Megatron-LM has it by default (TransformerConfig
 * hidden_dropout = attention_dropout = 0.1, transformer_config.py:188,
 * 191 @ d98e8a64) when training.dropout is not given: the masks a layer
 * keeps (memory.c: one byte per element after attention and after the
 * MLP, replicated without SP) and the embedding dropout's mask on stage 1.
 * Llama-3.1-8B, s = 4096, b = 1, TP 1, flash: 2 x 4096 x 4096 =
 * 33,554,432 B per layer, x 32 layers + 16,777,216 (embedding) =
 * 1,090,519,040 B.  TorchTitan's models have no dropout: 0. */
static void test_dropout_framework_default(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    aps_estimate off, def;
    fx_run(&m, &c, &t, &s, &off); /* the fixture says no dropout */
    t.dropout = APS_DEFAULT;
    fx_run(&m, &c, &t, &s, &def);
    ASSERT_REL(def.mem[APS_MEM_ACTIVATIONS] - off.mem[APS_MEM_ACTIVATIONS],
               1090519040.0, REL);
    aps_recipe r;
    aps_recipe_resolve(&t, &r);
    assert_true(r.dropout);
    t.framework = APS_FW_FSDP2;
    aps_recipe_resolve(&t, &r);
    assert_false(r.dropout);
    t.framework = APS_FW_DEEPSPEED;
    aps_recipe_resolve(&t, &r);
    assert_true(r.dropout);
    t.framework = APS_FW_FSDP;
    aps_recipe_resolve(&t, &r);
    assert_false(r.dropout);
}

/* The dropout probabilities: in [0, 1), not against an explicit
 * training.dropout, and none above 0 where the framework's models have no
 * dropout (TorchTitan); each message names its field. */
static void test_dropout_probabilities_checked(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 8, 1024);
    char msg[APS_REASON_LEN];
    t.dropout = APS_DEFAULT;
    t.attention_dropout = 0.1;
    t.hidden_dropout = 0.0;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_OK);
    aps_recipe r;
    aps_recipe_resolve(&t, &r);
    assert_true(r.dropout);
    assert_true(r.attention_dropout);
    assert_false(r.hidden_dropout);
    t.hidden_dropout = 1.0;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.hidden_dropout: must be a probability in [0, 1) (got 1)");
    t.hidden_dropout = 0.0;
    t.dropout = 0;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.attention_dropout: 0.1 given with training.dropout = false");
    t.dropout = 1;
    t.attention_dropout = 0.0;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.dropout: true given with attention_dropout and hidden_dropout both 0");
    t.dropout = APS_DEFAULT;
    t.framework = APS_FW_FSDP2;
    t.hidden_dropout = 0.05;
    assert_int_equal(aps_training_validate(&t, msg, sizeof msg), APS_EINVAL);
    ASSERT_HAS(msg, "training.hidden_dropout: fsdp2 trains without dropout");
    ASSERT_HAS(msg, "set it 0");
}

/* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True as each framework's
 * launcher sets it: TorchTitan's run_train.sh:43 @ b5bcd76c, not
 * Megatron-LM's, DeepSpeed's or llm-foundry's; a given value wins, and
 * the fragmentation follows it. */
static void test_expandable_segments_default(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 8, 1024);
    aps_recipe r;
    aps_recipe_resolve(&t, &r);
    assert_false(r.expandable_segments);
    t.framework = APS_FW_FSDP2;
    aps_recipe_resolve(&t, &r);
    assert_true(r.expandable_segments);
    t.allocator_fragmentation_expandable = 0.02;
    aps_recipe_resolve(&t, &r);
    ASSERT_REL(r.fragmentation, 0.02, 0);
    t.expandable_segments = 0;
    aps_recipe_resolve(&t, &r);
    assert_false(r.expandable_segments);
    ASSERT_REL(r.fragmentation, 0.05, 0);
}

/** aps_training_validate's message for t, asserting APS_EINVAL. */
static void assert_refused(const aps_training *t, const char *needle)
{
    char err[256] = "";
    assert_int_equal(aps_training_validate(t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, needle);
    assert_null(strchr(err, '\n')); /* one line */
}

/* Settings that act only with another are refused with the reason, not
 * ignored: compile_loss without a compiled loss (TorchTitan's
 * compile.components), exp_avg_bf16 with SGD, store_param_remainders with
 * fp32 weights (fsdp2).  TorchTitan compiles the loss alone with
 * compile.enable and components = ["loss"] (torchtitan b5bcd76c
 * torchtitan/components/loss.py _maybe_compile): its logits then take the
 * compiled 4 B per logit (bf16 logits + their gradient) instead of the
 * eager 12, whatever the model's compile; unset, the loss follows the
 * model. */
static void test_dependent_flags_refused(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 8, 1024);
    t.framework = APS_FW_FSDP2;
    char err[256] = "";
    const struct {
        bool model;
        int loss;
        double bytes;
    } compiled[] = {{false, APS_DEFAULT, 12.0}, {true, APS_DEFAULT, 4.0},
                    {false, 1, 4.0}, {true, 0, 12.0}, {true, 1, 4.0}};
    for (size_t i = 0; i < sizeof compiled / sizeof compiled[0]; i++) {
        t.torch_compile = compiled[i].model;
        t.compile_loss = compiled[i].loss;
        assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
        aps_recipe r;
        aps_recipe_resolve(&t, &r);
        ASSERT_REL(r.logits_bytes, compiled[i].bytes, 0);
        assert_true(r.compile_loss == (compiled[i].bytes == 4.0));
    }
    t.compile_loss = 1;
    t.framework = APS_FW_MEGATRON;
    assert_refused(&t, "megatron has no compiled loss");
    fx_training(&t, 8, 1024);
    t.optimizer = APS_OPT_SGD;
    t.exp_avg_bf16 = true;
    assert_refused(&t, "exp_avg_bf16: needs an Adam optimizer");
    fx_training(&t, 8, 1024);
    t.framework = APS_FW_FSDP2;
    t.store_param_remainders = true;
    assert_refused(&t, "store_param_remainders: fsdp2 keeps fp32");
    /* dropout on a framework whose models have none; on the others it is
     * the user's choice (Megatron --hidden-dropout, MPT resid_pdrop) */
    fx_training(&t, 8, 1024);
    t.framework = APS_FW_FSDP2;
    t.dropout = 1;
    assert_refused(&t, "training.dropout: fsdp2 trains without dropout");
    t.dropout = 0;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    const aps_framework fws[] = {APS_FW_MEGATRON, APS_FW_FSDP,
                                 APS_FW_DEEPSPEED};
    for (size_t i = 0; i < sizeof fws / sizeof fws[0]; i++) {
        t.framework = fws[i];
        t.dropout = 1;
        assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    }
    /* MoE overlaps on a dense model (aps_inputs_validate) */
    aps_model m;
    aps_cluster c;
    aps_strategy s;
    setup_8b(&m, &c, &t, &s);
    t.moe_shared_expert_overlap = true;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    ASSERT_HAS(err, "has no shared expert");
    t.moe_shared_expert_overlap = false;
    t.overlap_moe_expert_parallel_comm = true;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    ASSERT_HAS(err, "has no experts");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_embedding_loss),
        cmocka_unit_test(test_split_embedding_loss_megatron_divisibility),
        cmocka_unit_test(test_split_deepspeed_type),
        cmocka_unit_test(test_split_fill_last),
        cmocka_unit_test(test_partition_per_chunk),
        cmocka_unit_test(test_grad_reduce_dtype),
        cmocka_unit_test(test_store_param_remainders),
        cmocka_unit_test(test_fp8_fsdp_weight_copies),
        cmocka_unit_test(test_fsdp2_float8_all_gather),
        cmocka_unit_test(test_mxfp8_weight_copies),
        cmocka_unit_test(test_recompute_uniform),
        cmocka_unit_test(test_activation_offload),
        cmocka_unit_test(test_tp_comm_overlap),
        cmocka_unit_test(test_fsdp2_pp_unsharded),
        cmocka_unit_test(test_fsdp2_pp_reshard_after_forward),
        cmocka_unit_test(test_recipe_framework_support),
        cmocka_unit_test(test_dropout_framework_default),
        cmocka_unit_test(test_dropout_probabilities_checked),
        cmocka_unit_test(test_expandable_segments_default),
        cmocka_unit_test(test_dependent_flags_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
