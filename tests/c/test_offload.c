/*
 * test_offload.c -- Megatron-Core's fine-grained activation offloading
 * (src/core/offload.c, memory.c, moe.c, stagetime.c), hand-computed from
 * Megatron-LM d98e8a64:
 *
 *   moe/experts.py l.928-1038: expert_fc1 offloads what linear_fc1 saves
 *     (the permuted tokens, rows x h), moe_act what the activation saves
 *     (fc1's output, rows x 2 f_e for SwiGLU);
 *   pipeline_parallel/fine_grained_activation_offload.py: tensors below
 *     min_offloaded_tensor_size = 1,048,576 elements stay; after the
 *     warm-up the last group of each module name stays (post_warmup_
 *     callback); activation_offload_fraction keeps int(groups x (1 -
 *     fraction)) of a chunk's groups;
 *   transformer_config.py l.2127-2203: the option rules.
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

#define REL 1e-9

/* Qwen3-30B-A3B in bf16, MBS 4 x 4096, EP 8, balanced: T = 16,384 tokens,
 * 131,072 routed rows per rank. */
static void qwen3_bf16(aps_model *m, aps_cluster *c, aps_training *t,
                       aps_strategy *s)
{
    fx_qwen3_30b_b200(m, c, t, s);
    t->precision = APS_PREC_BF16;
    t->moe_load_imbalance = 1.0;
}

static void test_moe_bytes(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    qwen3_bf16(&m, &c, &t, &s);
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    assert_true(mc.offload_act == 0.0);
    /* fc1's input: 131,072 rows x 2,048 x 2 B */
    t.offload_modules = APS_OFM_EXPERT_FC1;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_REL(mc.offload_act, 536870912.0, REL);
    /* fc1's output: 131,072 rows x 2 x 768 x 2 B */
    t.offload_modules = APS_OFM_MOE_ACT;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_REL(mc.offload_act, 402653184.0, REL);
    t.offload_modules = APS_OFM_EXPERT_FC1 | APS_OFM_MOE_ACT;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_REL(mc.offload_act, 536870912.0 + 402653184.0, REL);
    /* 32 tokens of one sequence: 256 rows x 2,048 = 524,288 elements,
     * under the 1,048,576 Megatron offloads; 64 tokens: 1,048,576, taken */
    t.offload_modules = APS_OFM_EXPERT_FC1;
    t.seq_length = 32;
    s.micro_batch_size = 1;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    assert_true(mc.offload_act == 0.0);
    t.seq_length = 64;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    ASSERT_REL(mc.offload_act, 2097152.0, REL);
}

/* The stage: one micro-batch in flight (PP 1), 48 MoE layers each moving
 * 536,870,912 B but the last (its group stays): 47 x that leave. */
static void test_stage_memory(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    qwen3_bf16(&m, &c, &t, &s);
    aps_estimate off, on;
    fx_run(&m, &c, &t, &s, &off);
    t.offload_modules = APS_OFM_EXPERT_FC1;
    fx_run(&m, &c, &t, &s, &on);
    ASSERT_REL(off.stages[0].mem[APS_MEM_ACTIVATIONS] -
                   on.stages[0].mem[APS_MEM_ACTIVATIONS],
               47.0 * 536870912.0, 1e-6);
    /* the copies: what leaves goes out and comes back, 47 x 536,870,912
     * B each way per micro-batch over the host link, for the step's 512 /
     * (8 x 4) = 16 micro-batches */
    assert_true(off.perf_total[APS_PERF_OFFLOAD] == 0.0);
    ASSERT_REL(on.perf_total[APS_PERF_OFFLOAD],
               16.0 * 2.0 * 47.0 * 536870912.0 / c.device.host_bandwidth,
               1e-9);
    /* the fraction: half of the 48 groups of the chunk stay */
    t.activation_offload_fraction = 0.5;
    aps_estimate half;
    fx_run(&m, &c, &t, &s, &half);
    ASSERT_REL(off.stages[0].mem[APS_MEM_ACTIVATIONS] -
                   half.stages[0].mem[APS_MEM_ACTIVATIONS],
               23.0 * 536870912.0, 1e-6);
}

/* The attention modules of Llama-3.1-8B (32 query heads and 8 KV heads
 * of 128), one sequence of 4,096 tokens, TP 1, bf16: core_attn moves
 * Q 4,096 x 32 x 128 x 2 B = 33,554,432 B, K and V 8,388,608 B each;
 * flash attention's log-sum-exp, 32 x 4,096 = 131,072 fp32 elements, is
 * under the 1,048,576 Megatron offloads and stays; attn_proj moves the
 * context, 33,554,432 B.  Unfused attention saves the 32 x 4,096 x 4,096
 * scores, 2 B each: 1,073,741,824 B that core_attn moves too. */
static void test_attention_bytes(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    fx_setup_8b(&m, &c, &t, &s, 8, 8, 4096);
    t.framework = APS_FW_MEGATRON;
    aps_layer_cost lc;
    t.offload_modules = APS_OFM_CORE_ATTN;
    aps_layer_activations(&m, &t, &s, NULL, &lc);
    ASSERT_REL(lc.offload_attn, 33554432.0 + 2.0 * 8388608.0, REL);
    assert_true(lc.offload_core == 0.0);
    t.offload_modules = APS_OFM_CORE_ATTN | APS_OFM_ATTN_PROJ;
    aps_layer_activations(&m, &t, &s, NULL, &lc);
    ASSERT_REL(lc.offload_attn, 2.0 * 33554432.0 + 2.0 * 8388608.0, REL);
    t.flash_attention = false;
    aps_layer_activations(&m, &t, &s, NULL, &lc);
    ASSERT_REL(lc.offload_core, 1073741824.0, REL);
    t.offload_modules = 0u;
    aps_layer_activations(&m, &t, &s, NULL, &lc);
    assert_true(lc.offload_attn == 0.0 && lc.offload_core == 0.0);
}

/* int(groups x (1 - fraction)) of a chunk's groups stay */
static void test_share(void **state)
{
    (void)state;
    aps_training t;
    aps_training_defaults(&t);
    assert_true(aps_offload_share(&t, 48.0) == 1.0);
    t.activation_offload_fraction = 0.5;
    assert_true(aps_offload_share(&t, 48.0) == 0.5);
    t.activation_offload_fraction = 0.3; /* int(33.6) = 33 stay */
    ASSERT_REL(aps_offload_share(&t, 48.0), 15.0 / 48.0, REL);
    t.activation_offload_fraction = 0.0;
    assert_true(aps_offload_share(&t, 48.0) == 0.0);
}

static void test_refusals(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char err[APS_REASON_LEN];
    qwen3_bf16(&m, &c, &t, &s);
    t.activation_offload_fraction = 0.5;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "needs training.offload_modules"));
    t.offload_modules = APS_OFM_ATTN_PROJ;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "attn_proj without core_attn"));
    t.offload_modules = APS_OFM_FUSED_GROUP_MLP;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "use_transformer_engine_op_fuser"));
    t.offload_modules = APS_OFM_EXPERT_FC1;
    t.activation_offload_layers = 2;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "cpu_offloading"));
    t.activation_offload_layers = 0;
    t.framework = APS_FW_FSDP2;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "framework megatron"));
    t.framework = APS_FW_MEGATRON;
    assert_int_equal(aps_training_dependencies(&t, err, sizeof err), APS_OK);
    /* MLA's saved tensors are not split by module */
    t.offload_modules = APS_OFM_CORE_ATTN;
    m.kv_lora_rank = 512;
    assert_int_equal(aps_offload_inputs(&m, &c, &t, err, sizeof err),
                     APS_ENOTIMPL);
    m.kv_lora_rank = 0;
    /* expert modules need experts */
    t.offload_modules = APS_OFM_MOE_ACT;
    m.num_experts = 0;
    assert_int_equal(aps_offload_inputs(&m, &c, &t, err, sizeof err),
                     APS_EINVAL);
    assert_non_null(strstr(err, "has no experts"));
    m.num_experts = 128;
    /* not inside a recomputed MoE layer */
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    s.recompute_modules = APS_RCM_MOE;
    assert_int_equal(aps_check_offload(&m, &t, &s, err, sizeof err),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    s.recompute_modules = APS_RCM_MOE_ACT;
    assert_int_equal(aps_check_offload(&m, &t, &s, err, sizeof err),
                     APS_REASON_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_bytes),
        cmocka_unit_test(test_stage_memory),
        cmocka_unit_test(test_attention_bytes),
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
