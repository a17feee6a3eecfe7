/*
 * test_opsac.c -- src/core/opsac.c: the bytes one block keeps under
 * TorchTitan's op-level selective checkpointing
 * (torchtitan/distributed/activation_checkpoint.py _custom_policy @
 * c4e2291: every other aten.mm, the attention output and its fp32
 * log-sum-exp, the all-to-all outputs; the router mm forced to
 * recompute; the experts' grouped mm not saved), hand-counted per op for
 * a small MoE block, and what the MoE deltas do through aps_estimate_run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

/* A small MoE model: h 64, a = k = 4, d 16, SwiGLU, f 128 (the dense
 * FFN of the first layer), 8 experts of 32, top 2, one shared expert of
 * 64; s 128, b 2 -> T = 256 tokens per micro-batch, bf16 (2 bytes). */
static void small_moe(aps_model *m, aps_training *t, aps_strategy *s)
{
    fx_llama(m, "small-moe", 4, 64, 4, 4, 128, 1024);
    m->head_dim = 16;
    m->num_experts = 8;
    m->experts_per_token = 2;
    m->moe_ffn_hidden_size = 32;
    m->shared_expert_ffn_hidden_size = 64;
    m->moe_first_dense_layers = 1;
    fx_validate(m);
    fx_training(t, 4, 128);
    t->framework = APS_FW_FSDP2;
    t->moe_load_imbalance = 1.0;
    aps_strategy_defaults(s);
    s->fsdp_degree = 2;
    s->ep_degree = 2;
    s->micro_batch_size = 2;
    s->layer_recompute = APS_RECOMPUTE_SELECTIVE;
}

/* GQA + MoE block, T = 256, bytes:
 *   block input               2 T h        = 2*256*64    = 32,768
 *   mm 1 wq   (saved)         2 T a d      = 2*256*64    = 32,768
 *   mm 2 wk   (recomputed)
 *   mm 3 wv   (saved)         2 T k d      = 2*256*64    = 32,768
 *   attention output          2 T a d      =               32,768
 *   its log-sum-exp (fp32)    4 T a        = 4*256*4     =  4,096
 *   mm 4 wo   (recomputed)
 *   router mm: forced recompute, not counted
 *   dispatch all-to-all out   2 T K h      = 2*256*2*64  = 65,536
 *   combine all-to-all out    2 T K h      =               65,536
 *   mm 5 shared w1 (saved)    2 T fs       = 2*256*64    = 32,768
 *   mm 6 shared w3 (recomputed)
 *   mm 7 shared w2 (saved)    2 T h        =               32,768
 *   total 331,776; without the all-to-alls 200,704. */
static void test_moe_block_gqa(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       331776.0, 0.0);
    t.sac_save_alltoall = 0; /* the policy before torchtitan c4e2291 */
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       200704.0, 0.0);
    t.sac_save_alltoall = APS_DEFAULT;
    s.ep_degree = 1; /* no expert parallelism: no all-to-all at all */
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       200704.0, 0.0);
}

/* The dispatch output is the rows the busiest rank's experts receive:
 * with load factor 1.5 it is 1.5 x 65,536 = 98,304; the combine output,
 * this rank's own routed rows, stays 65,536: 331,776 + 32,768. */
static void test_moe_block_load_factor(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    t.moe_load_imbalance = 1.5;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       364544.0, 0.0);
}

/* MLA with q_lora_rank 32, kv_lora_rank 32, dn 16, dr 8, dv 16: five
 * attention mms shift the FFN's parity.
 *   block input                                     32,768
 *   mm 1 wq_a  (saved)   2 T qr      = 2*256*32  = 16,384
 *   mm 2 wq_b  (recomputed)
 *   mm 3 wkv_a (saved)   2 T (kr+dr) = 2*256*40  = 20,480
 *   mm 4 wkv_b (recomputed)
 *   attention output     2 T a dv    = 2*256*64  = 32,768
 *   log-sum-exp          4 T a                   =  4,096
 *   mm 5 wo    (saved)   2 T h                   = 32,768
 *   all-to-alls                                   131,072
 *   mm 6 shared w1 (recomputed)
 *   mm 7 shared w3 (saved) 2 T fs                = 32,768
 *   mm 8 shared w2 (recomputed)
 *   total 303,104.  The dense FFN (f 128) after the same MLA:
 *   mm 6 w1 no, mm 7 w3 (saved) 2 T f = 65,536, mm 8 w2 no:
 *   32,768 + 16,384 + 20,480 + 32,768 + 4,096 + 32,768 + 65,536
 *   = 204,800. */
static void test_mla_block_parity(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    m.q_lora_rank = 32;
    m.kv_lora_rank = 32;
    m.qk_nope_head_dim = 16;
    m.qk_rope_head_dim = 8;
    m.v_head_dim = 16;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, true, true),
                       303104.0, 0.0);
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, true, false),
                       204800.0, 0.0);
}

/* The dense GQA block is the formula memory.c used before the walk:
 * T (2 (h + a d + k d + a d + f + h) + 4 a) = 256 (2 (64 + 64 + 64 + 64
 * + 128 + 64) + 16) = 256 * 912 = 233,472. */
static void test_dense_block_unchanged(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 233472.0, 0.0);
}

/* Through aps_estimate_run: saving the all-to-alls adds the 131,072
 * bytes of each MoE layer kept (3 of 4 layers are MoE; 1 micro-batch in
 * flight) and changes what recomputing one layer rebuilds beyond the
 * dense layer's, the MoE block's full saved set (moe.c's count,
 * T = 256, Te = T K = 512 rows):
 *   - dense FFN  -(2 + 2 + 2) T f  = -6*256*128   = -196,608
 *   + router fp32 scores 4 T (E + K) = 4*256*10   =   10,240
 *   + permuted input 2 Te h          = 2*512*64   =   65,536
 *   + experts 6 Te fe                = 6*512*32   =   98,304
 *   + shared expert 6 T fs           = 6*256*64   =   98,304
 *   + the score multiply's fp32 operand (eager TorchTitan, moe.py
 *     MoE.forward)  4 T K h          = 4*256*2*64 =  131,072
 *   = 206,848, minus the op-SAC MoE delta (MoE block minus dense block):
 *   off: 200,704 - 233,472 = -32,768 -> rebuilt 239,616;
 *   on:  331,776 - 233,472 =  98,304 -> rebuilt 108,544.
 * Difference: 3 x 131,072 - (239,616 - 108,544) = 262,144. */
static void test_alltoall_through_estimate(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    fx_h100(&c, 2);
    aps_estimate on, off;
    fx_run(&m, &c, &t, &s, &on);
    t.sac_save_alltoall = 0;
    fx_run(&m, &c, &t, &s, &off);
    assert_float_equal(on.mem[APS_MEM_ACTIVATIONS] -
                           off.mem[APS_MEM_ACTIVATIONS],
                       262144.0, 1e-6);
}

/* Without checkpointing every MoE layer keeps the routed-token operand
 * of TorchTitan's score multiply, T K rows of h (moe.py MoE.forward):
 * eager its fp32 copy, 4 T K h = 4*256*2*64 = 131,072 bytes a layer;
 * compiled the bf16 tensor, 2 T K h = 65,536; Megatron none (the
 * probabilities multiply inside the experts' activation).  3 MoE
 * layers, one micro-batch in flight. */
static void test_score_operand_no_ac(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    s.layer_recompute = APS_RECOMPUTE_NONE;
    fx_h100(&c, 2);
    aps_moe_cost eager, compiled, megatron;
    aps_moe_layer_cost(&m, &c, &t, &s, &eager);
    t.torch_compile = true;
    aps_moe_layer_cost(&m, &c, &t, &s, &compiled);
    t.torch_compile = false;
    t.framework = APS_FW_MEGATRON;
    aps_moe_layer_cost(&m, &c, &t, &s, &megatron);
    assert_float_equal(eager.act - megatron.act, 131072.0, 1e-6);
    assert_float_equal(compiled.act - megatron.act, 65536.0, 1e-6);
    t.framework = APS_FW_FSDP2;
    aps_estimate e, cmp;
    fx_run(&m, &c, &t, &s, &e);
    t.torch_compile = true;
    fx_run(&m, &c, &t, &s, &cmp);
    assert_float_equal(e.mem[APS_MEM_ACTIVATIONS] -
                           cmp.mem[APS_MEM_ACTIVATIONS],
                       3.0 * 65536.0, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_block_gqa),
        cmocka_unit_test(test_moe_block_load_factor),
        cmocka_unit_test(test_mla_block_parity),
        cmocka_unit_test(test_dense_block_unchanged),
        cmocka_unit_test(test_alltoall_through_estimate),
        cmocka_unit_test(test_score_operand_no_ac),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
