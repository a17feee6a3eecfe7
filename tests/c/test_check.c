/*
 * test_check.c -- src/core/check.c: the cheap constraint checks of
 * MODELING.md s.5, each with its reason code and a message naming the field
 * and the numbers (AP-FT-04 TP divisibility, AP-FT-05 batch, AP-FT-06
 * devices / HSDP, plus CP, ZeRO stage, degrees and VPP).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

typedef struct {
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char msg[APS_REASON_LEN];
} ctx;

/* Llama-3.1-8B on N H100, B sequences of 8192 tokens, all degrees 1. */
static void setup(ctx *x, int64_t N, int64_t B)
{
    fx_llama31_8b(&x->m);
    fx_h100(&x->c, N);
    fx_training(&x->t, B, 8192);
    aps_strategy_defaults(&x->s);
    x->msg[0] = '\0';
}

static aps_reason all(ctx *x)
{
    x->msg[0] = '\0';
    return aps_check_all(&x->m, &x->c, &x->t, &x->s, x->msg, sizeof x->msg);
}

/* aps_estimate_run reports the same reason, infeasible, no NaN. */
static void expect_run_reason(ctx *x, aps_reason want)
{
    aps_estimate e;
    fx_run(&x->m, &x->c, &x->t, &x->s, &e);
    ASSERT_REASON(e.reason, want, e.reason_msg);
    assert_false(e.feasible);
    assert_true(e.reason_msg[0] != '\0');
}

/* ------------------------------------------------------- AP-FT-04: TP */

/* heads: Qwen2.5-7B a = 28, t = 8: 28 % 8 = 4 */
static void test_ap_ft_04_tp_heads(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    fx_qwen25_7b(&x.m);
    x.s.tp_degree = 8;
    ASSERT_REASON(all(&x), APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_attention_heads = 28");
    ASSERT_HAS(x.msg, "tp_degree = 8");
    expect_run_reason(&x, APS_REASON_TP_DIVISIBILITY);
    /* t = 4 divides a = 28 and k = 4: fine */
    x.s.tp_degree = 4;
    x.s.dp_degree = 2;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
}

/* kv heads: Llama-3.1-8B k = 8, t = 16 (a = 32 divides).  Megatron-Core
 * takes query groups that are "a multiple or divisor of tensor_model_
 * parallel_size" (transformer_config.py l.1461-1468 @ d98e8a64) and
 * replicates fewer ones (attention.py l.353-379); TorchTitan requires t to
 * divide n_kv_heads (decoder.py l.195-199 @ b5bcd76c). */
static void test_ap_ft_04_tp_kv_heads(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 16, 16);
    x.s.tp_degree = 16;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.t.framework = APS_FW_FSDP2;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_query_groups = 8 is not divisible by tp_degree = "
                      "16 (this framework shards whole KV heads over the TP "
                      "ranks; framework megatron replicates fewer heads");
    ASSERT_REASON(all(&x), APS_REASON_TP_DIVISIBILITY, x.msg);
    expect_run_reason(&x, APS_REASON_TP_DIVISIBILITY);
    /* 3 groups of 8 heads at t = 2: neither multiple nor divisor */
    setup(&x, 2, 2);
    x.m.num_attention_heads = 24;
    x.m.num_query_groups = 3;
    x.s.tp_degree = 2;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_query_groups = 3 is neither a multiple nor a "
                      "divisor of tp_degree = 2 (Megatron-Core's "
                      "TransformerConfig)");
    /* MLA builds no query groups (Megatron's script writes none): no
     * replication priced, the old rule */
    x.m.num_query_groups = 1;
    x.m.kv_lora_rank = 512;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_query_groups = 1 is not divisible by tp_degree = 2");
    /* 28 heads at t = 8 (Qwen2.5-7B, k = 4 < 8 too): the heads are
     * named first */
    fx_qwen25_7b(&x.m);
    x.s.tp_degree = 8;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_attention_heads = 28 is not divisible by tp_degree = 8");
}

/* Replicated KV heads under a2a CP: one KV head per TP rank, which the
 * CP group cannot split (TransformerEngine's assert, check_cp_a2a_heads):
 * Llama-3.1-8B at t = 16 with c = 2 */
static void test_cp_a2a_replicated_kv_heads(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 32, 32);
    x.s.tp_degree = 16;
    x.s.cp_degree = 2;
    x.s.cp_comm_type = APS_CP_A2A;
    ASSERT_REASON(aps_check_cp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_CP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "cp_comm_type = a2a: num_query_groups = 8 < "
                      "tp_degree = 16 leaves one replicated KV head per TP "
                      "rank, not divisible by cp_degree = 2");
    x.s.cp_comm_type = APS_CP_P2P;
    ASSERT_REASON(aps_check_cp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
}

/* hidden: h = 4100 with explicit d = 128, a = 32, k = 8, t = 8:
 * 4100 % 8 = 4 (a and k divide) */
static void test_ap_ft_04_tp_hidden(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    fx_llama(&x.m, "h4100", 32, 4100, 32, 8, 14336, 128256);
    x.m.head_dim = 128;
    fx_validate(&x.m);
    x.s.tp_degree = 8;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "hidden_size = 4100");
    expect_run_reason(&x, APS_REASON_TP_DIVISIBILITY);
}

/* ffn: f = 14340, t = 8: 14340 % 8 = 4 (a, k, h divide) */
static void test_ap_ft_04_tp_ffn(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    x.m.ffn_hidden_size = 14340;
    x.s.tp_degree = 8;
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "ffn_hidden_size = 14340");
    expect_run_reason(&x, APS_REASON_TP_DIVISIBILITY);
}

/* sequence with SP: s = 8190, t = 4: 8190 % 4 = 2.  Without SP the
 * sequence is not split: fine.  With CP, SP splits the local s/c:
 * s = 8200, c = 2 (8200 % 4 = 0, CP fine) -> 4100 % 8 = 4 at t = 8. */
static void test_ap_ft_04_tp_sequence_parallel(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 2);
    x.t.seq_length = 8190;
    x.s.tp_degree = 4;
    x.s.dp_degree = 2;
    x.s.sequence_parallel = true;
    ASSERT_REASON(all(&x), APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "seq_length");
    ASSERT_HAS(x.msg, "8190");
    ASSERT_HAS(x.msg, "sequence_parallel");
    expect_run_reason(&x, APS_REASON_TP_DIVISIBILITY);
    x.s.sequence_parallel = false;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);

    setup(&x, 16, 1);
    x.t.seq_length = 8200; /* 8200 % (2*2) = 0: CP fine; 4100 % 8 = 4 */
    x.s.tp_degree = 8;
    x.s.cp_degree = 2;
    ASSERT_REASON(all(&x), APS_REASON_TP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "4100");
}

/* ---------------------------------------------------- AP-FT-05: batch */

/* B = 100, b = 2, D = 8: 100 % 16 = 4 */
static void test_ap_ft_05_batch_divisibility(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 100);
    x.s.dp_degree = 8;
    x.s.micro_batch_size = 2;
    ASSERT_REASON(all(&x), APS_REASON_BATCH_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "global_batch_size = 100");
    ASSERT_HAS(x.msg, "16");
    expect_run_reason(&x, APS_REASON_BATCH_DIVISIBILITY);
    /* HSDP D = R S = 2 * 4 = 8 counts too: 100 % (2 * 8) */
    x.s.dp_degree = 2;
    x.s.fsdp_degree = 4;
    ASSERT_REASON(aps_check_batch(&x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_BATCH_DIVISIBILITY, x.msg);
}

/* B = 64, b = 2, D = 8: m = 64 / 16 = 4, reported by aps_estimate_run;
 * a given micro_batch_num that disagrees (5) is refused. */
static void test_ap_ft_05_micro_batch_num(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 64);
    x.t.framework = APS_FW_FSDP2;
    x.s.fsdp_degree = 8;
    x.s.micro_batch_size = 2;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    aps_estimate e;
    fx_run(&x.m, &x.c, &x.t, &x.s, &e);
    assert_int_equal(e.micro_batch_num, 4);
    /* tokens per step B s = 64 * 8192 regardless of the split */
    ASSERT_REL(e.tokens_per_s * e.step_time, 64.0 * 8192.0, REL);

    x.s.micro_batch_num = 4;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.micro_batch_num = 5;
    ASSERT_REASON(all(&x), APS_REASON_BATCH_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_num = 5");
}

/* -------------------------------------------------- AP-FT-06: devices */

static void test_ap_ft_06_device_count(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 16);
    x.s.tp_degree = 4;
    x.s.dp_degree = 4; /* 16 > 8 */
    ASSERT_REASON(all(&x), APS_REASON_DEVICE_COUNT, x.msg);
    ASSERT_HAS(x.msg, "16 devices > num_devices = 8");
    expect_run_reason(&x, APS_REASON_DEVICE_COUNT);
}

static void test_ap_ft_06_idle_devices(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 16, 16);
    x.s.tp_degree = 8; /* 8 < 16 */
    ASSERT_REASON(all(&x), APS_REASON_IDLE_DEVICES, x.msg);
    ASSERT_HAS(x.msg, "8 of num_devices = 16 idle");
    expect_run_reason(&x, APS_REASON_IDLE_DEVICES);
    x.s.allow_idle_devices = true;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    aps_estimate e;
    fx_run(&x.m, &x.c, &x.t, &x.s, &e);
    assert_int_equal(e.devices_used, 8);
}

static void test_ap_ft_06_hsdp_invalid(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    x.t.framework = APS_FW_FSDP2;
    x.s.hsdp = true;
    x.s.dp_degree = 8;
    x.s.fsdp_degree = 1; /* S = 1 */
    ASSERT_REASON(all(&x), APS_REASON_HSDP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "shard 1");
    expect_run_reason(&x, APS_REASON_HSDP_INVALID);
    x.s.dp_degree = 1;
    x.s.fsdp_degree = 8; /* R = 1 */
    ASSERT_REASON(all(&x), APS_REASON_HSDP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "replicate 1");
    x.s.dp_degree = 2;
    x.s.fsdp_degree = 4;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

/* ------------------------------------------------ CP, ZeRO, degrees, VPP */

/* s = 8192, c = 3: 8192 % 6 = 2; s = 4098, c = 2: 4098 % 4 = 2 */
static void test_cp_divisibility(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 3, 1);
    x.s.cp_degree = 3;
    ASSERT_REASON(all(&x), APS_REASON_CP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "seq_length = 8192");
    ASSERT_HAS(x.msg, "= 6");
    expect_run_reason(&x, APS_REASON_CP_DIVISIBILITY);
    setup(&x, 2, 1);
    x.t.seq_length = 4098;
    x.s.cp_degree = 2;
    ASSERT_REASON(aps_check_cp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_CP_DIVISIBILITY, x.msg);
    x.t.seq_length = 4096;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

/* Megatron's CP runs in TransformerEngine, whose attn_forward_func_with_cp
 * (context_parallel.py:5057-5067 @ d0067d0d) asserts no sliding window
 * with cp_comm_type p2p (a2a and all_gather only) and attention sinks
 * with a2a only: Mistral-7B's 4096-token window over cp 2 p2p is refused
 * with that reason (on every layer, and on some), all_gather and a2a run,
 * and TorchTitan's CP (no TransformerEngine) is not refused; sinks are
 * refused under all_gather and p2p and run under a2a. */
static void test_cp_p2p_sliding_window(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 2, 1);
    fx_mistral_7b(&x.m);
    x.m.sliding_window = 4096;
    x.s.cp_degree = 2;
    x.s.cp_comm_type = APS_CP_P2P;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "megatron: cp_degree = 2, cp_comm_type = p2p with a "
               "4096-token sliding window");
    ASSERT_HAS(x.msg, "does not support sliding window attention with "
               "cp_comm_type='p2p'\" (context_parallel.py); use a2a or "
               "all_gather");
    expect_run_reason(&x, APS_REASON_FRAMEWORK_UNSUPPORTED);
    x.m.sliding_window_layers = 16;
    x.m.sliding_window_period = 2;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    x.s.cp_comm_type = APS_CP_ALL_GATHER;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.cp_comm_type = APS_CP_A2A;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.cp_comm_type = APS_CP_P2P;
    x.t.framework = APS_FW_FSDP2;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.t.framework = APS_FW_MEGATRON;
    x.m.sliding_window = 0;
    x.m.sliding_window_layers = 0;
    x.m.sliding_window_period = 0;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    /* attention sinks (--softmax-type learnable): a2a only */
    x.m.attention_sinks = true;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    x.s.cp_comm_type = APS_CP_ALL_GATHER;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "megatron: cp_degree = 2, cp_comm_type = all_gather "
               "with attention sinks (--softmax-type learnable)");
    ASSERT_HAS(x.msg, "with cp_comm_type = 'a2a'\" (context_parallel.py); "
               "use a2a");
    x.s.cp_comm_type = APS_CP_A2A;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.cp_degree = 1;
    x.s.dp_degree = 2;
    x.t.global_batch_size = 2;
    x.s.cp_comm_type = APS_CP_P2P;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

/* a2a scatters a TP rank's heads over the CP group: TransformerEngine
 * asserts num_heads % cp_size == 0 for Q and for K, V (context_parallel.py:
 * 4246 @ d0067d0d).  Llama-3.1-8B (a = 32, k = 8) on 16 GPUs: tp 1 cp 16
 * gives 8 query groups over 16 ranks; tp 2 cp 8, 4 over 8; tp 1 cp 8 runs.
 * Qwen2.5-7B (a = 28, k = 4): tp 1 cp 8, 28 query heads over 8.  Sinks
 * under a2a need FusedAttention, which utils.py:1272 turns off for odd
 * heads or groups per TP rank: a = 24, k = 3, tp 1, cp 3 (seq 6144,
 * divisible by 2 c = 6) passes the head check and is refused there.
 * TorchTitan has no a2a CP. */
static void test_cp_a2a_heads(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 16, 1);
    x.s.cp_comm_type = APS_CP_A2A;
    x.s.cp_degree = 16;
    ASSERT_REASON(all(&x), APS_REASON_CP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "cp_comm_type = a2a: num_query_groups / tp_degree = "
               "8 / 1 = 8 is not divisible by cp_degree = 16 "
               "(TransformerEngine asserts \"cp_comm_type='a2a' requires "
               "num_heads % cp_size == 0 for Q, K, V\", context_parallel.py)");
    expect_run_reason(&x, APS_REASON_CP_DIVISIBILITY);
    x.s.tp_degree = 2;
    x.s.cp_degree = 8;
    ASSERT_REASON(all(&x), APS_REASON_CP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_query_groups / tp_degree = 8 / 2 = 4 is not "
               "divisible by cp_degree = 8");
    x.s.cp_comm_type = APS_CP_P2P;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    setup(&x, 8, 1);
    x.s.cp_comm_type = APS_CP_A2A;
    x.s.cp_degree = 8;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.t.framework = APS_FW_FSDP2;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "fsdp2: cp_comm_type = a2a; TorchTitan's context "
               "parallelism is ring attention");
    setup(&x, 8, 1);
    fx_qwen25_7b(&x.m);
    x.s.cp_comm_type = APS_CP_A2A;
    x.s.cp_degree = 8;
    ASSERT_REASON(all(&x), APS_REASON_CP_DIVISIBILITY, x.msg);
    ASSERT_HAS(x.msg, "num_attention_heads / tp_degree = 28 / 1 = 28 is "
               "not divisible by cp_degree = 8");
    setup(&x, 3, 1);
    x.t.seq_length = 6144;
    x.m.num_attention_heads = 24;
    x.m.num_query_groups = 3;
    x.m.head_dim = 128;
    x.m.attention_sinks = true;
    x.s.cp_comm_type = APS_CP_A2A;
    x.s.cp_degree = 3;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "megatron: cp_comm_type = a2a with attention sinks and "
               "24 heads, 3 query groups per TP rank");
    x.m.attention_sinks = false;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

static void test_zero_stage_invalid(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    x.s.dp_degree = 8;
    x.s.zero_stage = 5;
    ASSERT_REASON(all(&x), APS_REASON_ZERO_STAGE_INVALID, x.msg);
    ASSERT_HAS(x.msg, "zero_stage = 5");
    expect_run_reason(&x, APS_REASON_ZERO_STAGE_INVALID);
    x.s.zero_stage = -1;
    ASSERT_REASON(aps_check_zero(&x.s, x.msg, sizeof x.msg),
                  APS_REASON_ZERO_STAGE_INVALID, x.msg);
    /* ZeRO-2 on top of FSDP sharding is meaningless */
    x.s.dp_degree = 1;
    x.s.fsdp_degree = 8;
    x.s.zero_stage = 2;
    ASSERT_REASON(aps_check_zero(&x.s, x.msg, sizeof x.msg),
                  APS_REASON_ZERO_STAGE_INVALID, x.msg);
    /* every ZeRO stage over DP exists in DeepSpeed */
    x.t.framework = APS_FW_DEEPSPEED;
    for (int64_t z = 0; z <= 3; z++) {
        x.s.dp_degree = 8;
        x.s.fsdp_degree = 1;
        x.s.zero_stage = z;
        ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    }
}

/* What each framework profile can run (aps_check_framework). */
static void test_framework_unsupported(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 64);
    /* megatron: ZeRO-2 over DDP, HSDP, uneven chunks with interleaving */
    x.s.dp_degree = 8;
    x.s.zero_stage = 2;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "zero_stage = 2");
    x.s.zero_stage = 0;
    x.s.dp_degree = 2;
    x.s.fsdp_degree = 4;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "HSDP");
    /* fsdp2: HSDP is fine, ZeRO-1 over DDP and TP without SP are not */
    x.t.framework = APS_FW_FSDP2;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.fsdp_degree = 1;
    x.s.dp_degree = 8;
    x.s.zero_stage = 1;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    x.s.zero_stage = 0;
    x.s.dp_degree = 4;
    x.s.tp_degree = 2;
    /* DDP (replicate only) with TP: TorchTitan's DDP is 1D */
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "DDP");
    /* FSDP with TP but without SP */
    x.s.dp_degree = 1;
    x.s.fsdp_degree = 4;
    x.s.sequence_parallel = false;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "sequence-parallel");
    x.s.fsdp_degree = 1;
    x.s.dp_degree = 4;
    /* fsdp (FSDP1): data parallelism only */
    x.t.framework = APS_FW_FSDP;
    x.s.sequence_parallel = true;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "tp_degree = 2");
    /* deepspeed: no CP */
    x.t.framework = APS_FW_DEEPSPEED;
    x.s.tp_degree = 1;
    x.s.dp_degree = 4;
    x.s.cp_degree = 2;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "cp_degree = 2");
}

/* Megatron's --use-torch-fsdp2 turns --fp8-param-gather off with
 * TransformerEngine >= 2.0 (megatron/training/arguments.py l.1051-1057 @
 * d98e8a64): fp8 with fp8_param_gather over FSDP2 is refused (the job
 * gathers bf16); the distributed optimizer keeps it, and NVFP4's
 * --fp4-param-gather stays on (TE >= 2.7, l.1058-1063). */
static void test_megatron_fsdp2_fp8_param_gather(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 64);
    x.t.precision = APS_PREC_FP8;
    x.t.fp8_param_gather = 1;
    x.s.fsdp_degree = 8;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "turns --fp8-param-gather off");
    x.t.precision = APS_PREC_MXFP8;
    ASSERT_REASON(all(&x), APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    x.t.precision = APS_PREC_NVFP4;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.t.precision = APS_PREC_FP8;
    x.t.fp8_param_gather = 0;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.t.fp8_param_gather = 1;
    x.s.fsdp_degree = 1;
    x.s.dp_degree = 8;
    x.s.zero_stage = 1;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

/* The model-shape reasons come before the device count: tp 3 with 32
 * heads on 8 GPUs is a TP reason, not idle devices. */
static void test_check_order(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 64);
    x.s.tp_degree = 3;
    x.s.dp_degree = 2;
    ASSERT_REASON(all(&x), APS_REASON_TP_DIVISIBILITY, x.msg);
}

static void test_invalid_degree(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    x.s.tp_degree = 0;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "tp_degree = 0");
    expect_run_reason(&x, APS_REASON_INVALID_DEGREE);
    /* each check is safe on its own: no division by 0 */
    ASSERT_REASON(aps_check_tp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_INVALID_DEGREE, x.msg);
    aps_strategy_defaults(&x.s);
    x.s.dp_degree = 0;
    ASSERT_REASON(aps_check_batch(&x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "dp_degree = 0");
    aps_strategy_defaults(&x.s);
    x.s.micro_batch_size = -2;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_size = -2");
    aps_strategy_defaults(&x.s);
    x.s.pp_degree = APS_MAX_STAGES + 1;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "pp_degree");
    /* uniform recompute in groups of 0 layers: Megatron's loop never
     * advances; groups of 1 (and the default, -1) are fine */
    aps_strategy_defaults(&x.s);
    x.s.dp_degree = 8;
    x.s.layer_recompute = APS_RECOMPUTE_FULL;
    x.s.recompute_method = APS_RECOMPUTE_UNIFORM;
    x.s.recompute_num_layers[0] = 0;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "recompute_num_layers[1] = 0");
    ASSERT_HAS(x.msg, "uniform");
    expect_run_reason(&x, APS_REASON_INVALID_DEGREE);
    x.s.recompute_num_layers[0] = 1;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.recompute_num_layers[0] = -1;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    /* auto (per-stage block counts) does not mix with uniform */
    x.s.auto_recompute = true;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    ASSERT_HAS(x.msg, "recompute_num_layers = auto with recompute_method = uniform");
    x.s.recompute_method = APS_RECOMPUTE_BLOCK;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    x.s.auto_recompute = false;
    /* block: 0 layers recomputed is a valid count */
    x.s.recompute_method = APS_RECOMPUTE_BLOCK;
    x.s.recompute_num_layers[0] = 0;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
    /* enums out of range from the C API */
    x.s.recompute_method = (aps_recompute_method)7;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
    x.s.recompute_method = APS_RECOMPUTE_BLOCK;
    x.s.pipeline_split = (aps_pipeline_split)-1;
    ASSERT_REASON(all(&x), APS_REASON_INVALID_DEGREE, x.msg);
}

static void test_vpp_invalid(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 8, 8);
    x.s.dp_degree = 8;
    x.s.vpp_degree = 2; /* p = 1 */
    ASSERT_REASON(all(&x), APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "vpp_degree = 2");
    ASSERT_HAS(x.msg, "pp_degree");
    expect_run_reason(&x, APS_REASON_VPP_INVALID);
    /* p = 4, v = 2, m = 6 (B 6): 6 % 4 = 2 */
    setup(&x, 4, 6);
    x.s.pp_degree = 4;
    x.s.vpp_degree = 2;
    ASSERT_REASON(all(&x), APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_num = 6");
    /* m = 8: fine */
    x.t.global_batch_size = 8;
    ASSERT_REASON(all(&x), APS_REASON_NONE, x.msg);
}

/* Megatron's group size G (--microbatch-group-size-per-virtual-pipeline-
 * stage; forward_backward_pipelining_with_interleaving, schedules.py:
 * 1160-1180 @ d98e8a64): p = 2, v = 2, m = 5 runs in one group of G = 5
 * and in groups of 3 (5 mod 3 = 2 >= p); G = 2, Megatron's default p,
 * leaves a last group of 1 < p (RuntimeError), G = 6 > m and G = 1 < p
 * are out of [p, m] (ValueError); only Megatron-LM has the setting. */
static void test_vpp_group_size(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 2, 5);
    x.s.pp_degree = 2;
    x.s.vpp_degree = 2;
    x.s.microbatch_group_size = 5;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.s.microbatch_group_size = 3;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.s.microbatch_group_size = 0; /* p: m % p = 1 */
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_num = 5 divisible by pp_degree = 2");
    x.s.microbatch_group_size = 4;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_num = 5 mod microbatch_group_size = 4");
    ASSERT_HAS(x.msg, "got 1");
    x.s.microbatch_group_size = 6;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "in [pp_degree = 2, micro_batch_num = 5]");
    x.s.microbatch_group_size = 1;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    x.s.microbatch_group_size = -1;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_INVALID_DEGREE, x.msg);
    /* without interleaving nothing reads a group size (Megatron's
     * non-interleaved schedule ignores it): refused rather than kept as
     * a setting the estimate never applied (a breaker pass found it
     * recorded as 8 with vpp 1); 0 is the default there as anywhere */
    x.s.vpp_degree = 1;
    x.s.microbatch_group_size = 6;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "applies to Megatron's interleaved schedule only");
    x.s.microbatch_group_size = 0;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    /* Megatron-LM's alone */
    x.s.vpp_degree = 2;
    x.s.microbatch_group_size = 5;
    x.t.framework = APS_FW_FSDP2;
    ASSERT_REASON(aps_check_framework(&x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_FRAMEWORK_UNSUPPORTED, x.msg);
    ASSERT_HAS(x.msg, "microbatch_group_size = 5 is Megatron-LM's");
    x.t.framework = APS_FW_MEGATRON;
    ASSERT_REASON(aps_check_framework(&x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
}

/* PyTorch's zero-bubble orders do not need m a multiple of p (pytorch
 * 1fd7abc2 torch/distributed/pipelining/schedules.py):
 * ScheduleInterleavedZeroBubble needs m a multiple of its rounds, max(1,
 * m / p) -- p = 4, m = 6: one round, accepted; m = 9: 2 rounds, 9 % 2 =
 * 1, refused; ScheduleZBVZeroBubble builds its order for max(2p - 1, m)
 * micro-batches, any m (6, 9).  ScheduleInterleaved1F1B, TorchTitan's
 * interleaved 1F1B, has the same rounds rule (6: accepted, 9: refused);
 * Megatron's keeps its m % p = 0 (6 % 4 = 2: refused). */
static void test_vpp_zero_bubble_microbatches(void **state)
{
    (void)state;
    ctx x;
    setup(&x, 4, 6);
    x.t.framework = APS_FW_FSDP2;
    x.s.pp_degree = 4;
    x.s.vpp_degree = 2;
    x.s.pp_schedule = APS_PP_INTERLEAVED_ZB;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.s.pp_schedule = APS_PP_ZBV;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.t.global_batch_size = 9;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.s.pp_schedule = APS_PP_INTERLEAVED_ZB;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "max(1, m / pp_degree) = 2");
    x.s.pp_schedule = APS_PP_1F1B;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "needs the 9 micro-batches per schedule to be a "
                      "multiple of its rounds, max(1, m // pp_degree) = 2");
    x.t.global_batch_size = 6;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_NONE, x.msg);
    x.t.framework = APS_FW_MEGATRON;
    ASSERT_REASON(aps_check_pp(&x.m, &x.t, &x.s, x.msg, sizeof x.msg),
                  APS_REASON_VPP_INVALID, x.msg);
    ASSERT_HAS(x.msg, "micro_batch_num = 6 divisible by pp_degree = 4");
}

/* ------------------------------------------- schedule size (issue 27) */

/* m x p x v cells up to APS_MAX_SCHEDULE_CELLS pass; one micro-batch more
 * of a 16-chunk schedule is refused with the numbers; no pipeline, no
 * limit; aps_schedule_simulate refuses the same shape (ERANGE) before it
 * allocates anything. */
static void test_schedule_size_limit(void **state)
{
    (void)state;
    ctx x;
    int64_t limit_m = APS_MAX_SCHEDULE_CELLS / 16; /* p 8 x v 2 */
    setup(&x, 8, limit_m);
    x.s.pp_degree = 8;
    x.s.vpp_degree = 2;
    assert_true(aps_check_schedule_size(&x.t, &x.s, x.msg, sizeof x.msg));
    x.t.global_batch_size = limit_m + 1;
    assert_false(aps_check_schedule_size(&x.t, &x.s, x.msg, sizeof x.msg));
    ASSERT_HAS(x.msg, "micro_batch_num = 262145 x pp_degree = 8 x "
               "vpp_degree = 2 = 4194320 schedule cells, over the "
               "simulation's limit of 4194304");
    x.s.pp_degree = 1;
    x.s.vpp_degree = 1;
    x.t.global_batch_size = INT64_C(1) << 30;
    assert_true(aps_check_schedule_size(&x.t, &x.s, x.msg, sizeof x.msg));

    double tf[16], tb[16];
    for (int j = 0; j < 16; j++)
        tf[j] = tb[j] = 1.0;
    aps_schedule_in in = {8,    2,    limit_m + 1, tf,  tb,
                          NULL, NULL, 0,           NULL, NULL, 0};
    aps_schedule_out out;
    assert_int_equal(aps_schedule_simulate(&in, &out), APS_ERANGE);
    in.schedule = APS_PP_INTERLEAVED_ZB;
    assert_int_equal(aps_schedule_simulate(&in, &out), APS_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ap_ft_04_tp_heads),
        cmocka_unit_test(test_ap_ft_04_tp_kv_heads),
        cmocka_unit_test(test_cp_a2a_replicated_kv_heads),
        cmocka_unit_test(test_ap_ft_04_tp_hidden),
        cmocka_unit_test(test_ap_ft_04_tp_ffn),
        cmocka_unit_test(test_ap_ft_04_tp_sequence_parallel),
        cmocka_unit_test(test_ap_ft_05_batch_divisibility),
        cmocka_unit_test(test_ap_ft_05_micro_batch_num),
        cmocka_unit_test(test_ap_ft_06_device_count),
        cmocka_unit_test(test_ap_ft_06_idle_devices),
        cmocka_unit_test(test_ap_ft_06_hsdp_invalid),
        cmocka_unit_test(test_cp_divisibility),
        cmocka_unit_test(test_cp_p2p_sliding_window),
        cmocka_unit_test(test_cp_a2a_heads),
        cmocka_unit_test(test_zero_stage_invalid),
        cmocka_unit_test(test_invalid_degree),
        cmocka_unit_test(test_vpp_invalid),
        cmocka_unit_test(test_vpp_zero_bubble_microbatches),
        cmocka_unit_test(test_vpp_group_size),
        cmocka_unit_test(test_framework_unsupported),
        cmocka_unit_test(test_megatron_fsdp2_fp8_param_gather),
        cmocka_unit_test(test_check_order),
        cmocka_unit_test(test_schedule_size_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
