/*
 * test_opsac.c -- src/core/opsac.c: the bytes one block keeps under
 * TorchTitan's op-level selective checkpointing
 * (torchtitan/distributed/activation_checkpoint.py _custom_policy @
 * c4e2291: every other aten.mm, the attention output and its fp32
 * log-sum-exp, the all-to-all outputs; the router mm forced to
 * recompute; the experts' grouped mm not saved), hand-counted per op for
 * a small MoE block, and what the MoE deltas do through aps_estimate_run;
 * what its backward recomputes (every expert GEMM among it).
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
    t->fuse_qkv = 0; /* wq, wk, wv apart (TorchTitan before 2026-06-24) */
    t->moe_load_imbalance = 1.0;
    aps_strategy_defaults(s);
    s->fsdp_degree = 2;
    s->ep_degree = 2;
    s->micro_batch_size = 2;
    s->layer_recompute = APS_RECOMPUTE_SELECTIVE;
}

/* small_moe's attention as MLA: q_lora_rank 32, kv_lora_rank 32, dn 16,
 * dr 8, dv 16. */
static void small_mla(aps_model *m)
{
    m->q_lora_rank = 32;
    m->kv_lora_rank = 32;
    m->qk_nope_head_dim = 16;
    m->qk_rope_head_dim = 8;
    m->v_head_dim = 16;
}

/* small_moe without experts: every layer the dense FFN of f 128. */
static void small_dense(aps_model *m)
{
    m->num_experts = 0;
    m->moe_first_dense_layers = 0;
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
    small_mla(&m);
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
    /* and not saved, the backward's recompute dispatches and combines
     * again: the forward's all-to-alls once more, ep_comm 3/2 of the
     * saved policy's (forward + backward, each one way's time) */
    assert_true(on.perf_total[APS_PERF_EP_COMM] > 0.0);
    assert_float_equal(off.perf_total[APS_PERF_EP_COMM],
                       1.5 * on.perf_total[APS_PERF_EP_COMM],
                       1e-9 * on.perf_total[APS_PERF_EP_COMM]);
}

/* Without checkpointing every MoE layer keeps the routed-token operand
 * of TorchTitan's score multiply, T K rows of h (moe.py MoE.forward):
 * eager its fp32 copy, 4 T K h = 4*256*2*64 = 131,072 bytes a layer;
 * compiled the bf16 tensor, 2 T K h = 65,536; Megatron none (the
 * probabilities multiply inside the experts' activation).  3 MoE
 * layers, one micro-batch in flight.  Eager, every SwiGLU also keeps its
 * SiLU's output (aps_recipe_unfused_swiglu): the dense layer's 2 T f =
 * 2*256*128 = 65,536, each MoE layer's experts 2 Te fe = 2*512*32 =
 * 32,768 and shared expert 2 T fs = 2*256*64 = 32,768 (the dense FFN's
 * share cancels in the layer cost): 4 x 65,536 more in the estimate. */
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
                       3.0 * 65536.0 + 4.0 * 65536.0, 1e-6);
}

/* DeepSeek-V3 16B as TorchTitan defines it (torchtitan/models/
 * deepseek_v3/__init__.py flavor "16B" @ c4e2291: dim 2048, 27 layers, 1
 * dense, 16 heads, q_lora_rank 0, kv_lora_rank 512, 128 / 64 / 128, 64
 * experts of 1408, 2 shared (2816), top 6) at the token count of the
 * pull-request 1672 logs (pytorch/torchtitan c4e2291 message): 8 x 512 =
 * 4,096 tokens per GPU, EP 4, balanced load.  Per MoE layer the policy
 * of c4e2291 saves the two _c10d_functional.all_to_all_single outputs of
 * torchtitan/distributed/expert_parallel.py (_token_dispatch: the rows
 * this rank's experts receive; _token_combine: this rank's routed rows
 * back), each T K rows of dim in bf16:
 *   2 x 2 B x 4,096 x 6 x 2,048 = 201,326,592 bytes,
 * x 26 MoE layers = 5,234,491,392 bytes = 4.875 GiB (the logs: 70.02 ->
 * 74.53 GiB max reserved, +4.51).  The rest of the block, by the same
 * walk (mm counter over the block):
 *   block input                 2 T 2048              = 16,777,216
 *   mm 1 wq (saved)             2 T 16 x 192          = 25,165,824
 *   mm 2 wkv_a (recomputed)
 *   mm 3 wkv_b (saved)          2 T 16 x (128 + 128)  = 33,554,432
 *   attention output            2 T 16 x 128          = 16,777,216
 *   its log-sum-exp (fp32)      4 T 16                =    262,144
 *   mm 4 wo (recomputed); router mm forced to recompute
 *   mm 5 shared w1 (saved)      2 T 2816              = 23,068,672
 *   mm 6 shared w3 (recomputed)
 *   mm 7 shared w2 (saved)      2 T 2048              = 16,777,216
 *   without the all-to-alls 132,382,720; with them 333,709,312. */
static void dsv3_16b(aps_model *m, aps_training *t, aps_strategy *s)
{
    fx_llama(m, "deepseek-v3-16b-torchtitan", 27, 2048, 16, 16, 10944,
             102400);
    m->q_lora_rank = 0;
    m->kv_lora_rank = 512;
    m->qk_nope_head_dim = 128;
    m->qk_rope_head_dim = 64;
    m->v_head_dim = 128;
    m->num_experts = 64;
    m->experts_per_token = 6;
    m->moe_ffn_hidden_size = 1408;
    m->shared_expert_ffn_hidden_size = 2816;
    m->moe_first_dense_layers = 1;
    fx_validate(m);
    fx_training(t, 64, 512);
    t->framework = APS_FW_FSDP2;
    t->moe_load_imbalance = 1.0;
    aps_strategy_defaults(s);
    s->fsdp_degree = 8;
    s->ep_degree = 4;
    s->micro_batch_size = 8;
    s->layer_recompute = APS_RECOMPUTE_SELECTIVE;
}

static void test_dsv3_16b_pr1672_alltoalls(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    dsv3_16b(&m, &t, &s);
    double on = aps_op_sac_layer_bytes(&m, &t, &s, true, true);
    t.sac_save_alltoall = 0; /* the policy of c4e2291^ */
    double off = aps_op_sac_layer_bytes(&m, &t, &s, true, true);
    assert_float_equal(off, 132382720.0, 0.0);
    assert_float_equal(on, 333709312.0, 0.0);
    assert_float_equal(26.0 * (on - off), 5234491392.0, 0.0);
    /* the default load factor (1.25) scales the dispatch output only:
     * 2 B x 4,096 x 6 x 2,048 x (1.25 + 1) = 226,492,416 a layer */
    t.sac_save_alltoall = APS_DEFAULT;
    t.moe_load_imbalance = 0.0;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, true, true) - off,
                       226492416.0, 0.0);
}

/* The dispatch's send and receive buffers (moe.c ep_buffer) exist only
 * when tokens leave the rank: at EP 1 Megatron's _AllToAll returns its
 * input (megatron/core/tensor_parallel/mappings.py l.433-436 @ d98e8a64)
 * and TorchTitan applies no ExpertParallel (deepseek_v3/infra/
 * parallelize.py l.90 @ 99fee81).  small_moe at EP 2: 2 x 2 B x T K h =
 * 2 x 2 x 256 x 2 x 64 = 131,072 bytes; at EP 1: none. */
static void test_ep_buffer_only_with_ep(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    fx_h100(&c, 2);
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    assert_float_equal(mc.ep_buffer, 131072.0, 1e-6);
    s.ep_degree = 1;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    assert_float_equal(mc.ep_buffer, 0.0, 0.0);
    aps_estimate e;
    fx_run(&m, &c, &t, &s, &e);
    assert_float_equal(e.mem[APS_MEM_COMM_EP], 0.0, 0.0);
}

/* Megatron full recompute, uniform, of small_moe's 4 layers on one rank
 * (the first dense, 3 MoE): while a group's backward runs, its MoE layers
 * hold their whole sets again, the MoE block's beyond the dense layer
 * memory.c's transient counts.  Per MoE layer (moe.c, T = Tin = 256,
 * Te = Tin K = 512 rows at load 1, (up A + Ain) = 2 x 2 + 2 = 6 bytes per
 * fc1/fc2 element):
 *   minus the dense FFN      -6 T f          = -6*256*128  = -196,608
 *   router scores + probs     4 Tin (E + K)  = 4*256*10    =   10,240
 *   permuted input            2 Te h         = 2*512*64    =   65,536
 *   experts                   6 Te fe        = 6*512*32    =   98,304
 *   shared expert             6 T fs         = 6*256*64    =   98,304
 *   total 75,776; groups of 1, 2, 4 layers rebuild 1, 2, 3 MoE layers
 *   (min(group, 3)): 75,776, 151,552, 227,328 bytes. */
static void test_moe_full_recompute_transient(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    t.framework = APS_FW_MEGATRON;
    s.fsdp_degree = 1;
    s.dp_degree = 2;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    s.recompute_method = APS_RECOMPUTE_UNIFORM;
    aps_cluster c;
    fx_h100(&c, 2);
    const double want[3] = {75776.0, 151552.0, 227328.0};
    const int64_t n[3] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        s.recompute_num_layers[0] = n[k];
        char msg[APS_REASON_LEN];
        aps_layout lay;
        assert_int_equal(aps_layout_build(&m, &t, &s, &lay, msg, sizeof msg),
                         APS_REASON_NONE);
        aps_dp_plan plan;
        aps_dp_plan_build(&t, &s, &plan);
        aps_moe_cost mc;
        aps_moe_layer_cost(&m, &c, &t, &s, &mc);
        ASSERT_REL(mc.act, 75776.0, 1e-12);
        aps_stage_estimate st;
        memset(&st, 0, sizeof st);
        aps_moe_stage_memory(&m, &t, &s, &lay, &plan, &mc, 0, 1.0, &st);
        ASSERT_REL(st.mem[APS_MEM_ACTIVATIONS], want[k], 1e-12);
    }
}

/* What the backward multiplies again (aps_op_sac_recompute_params), per
 * token, full width, for small_moe (h 64, a = k = 4, d 16, f 128, 8
 * experts of 32, top 2, shared 64):
 *   dense layer: wk k d h = 4096, wo h a d = 4096, w3 f h = 8192:
 *     16,384 (the formula compute.c had before the walk);
 *   MoE layer: wk 4096, wo 4096, the router gate E h = 512, every expert
 *     GEMM K (2 fe h + h fe) = 2 (4096 + 2048) = 12,288 (torchtitan
 *     @ b5bcd76c saves no _grouped_mm), shared w3 fs h = 4096: 25,088;
 *   mean over the 1 dense and 3 MoE layers: (16,384 + 3 x 25,088) / 4
 *   = 22,912. */
static void test_recompute_params(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 22912.0, 0.0);
    small_dense(&m); /* a dense model: every layer 16,384 */
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 16384.0, 0.0);
}

/* The seconds the backward runs again in an MoE layer beyond the dense
 * layer's (moe.c op_sac_recompute), from the shapes of the walk above at
 * T = 256 tokens on one rank (ep 2: 4 local experts, T K = 512 routed
 * rows at load 1, 128 per expert): plus the router gate (256 x 8 over
 * 64, bf16) and the shared w3 (256 x 64 over 64), minus the dense w3
 * (256 x 128 over 64), plus the experts' GEMMs 4 x (128 x 2 fe = 64 over
 * 64 + 128 x 64 over 32) and the block's elementwise, cast, bias and
 * router-kernel time; 0 under Megatron's selective recompute. */
static void test_recompute_seconds(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    fx_h100(&c, 2);
    const aps_device *d = &c.device;
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    double want = aps_gemm_time(d, APS_PREC_BF16, 256, 8, 64) +
                  aps_gemm_time(d, t.precision, 256, 64, 64) -
                  aps_gemm_time(d, t.precision, 256, 128, 64) +
                  4.0 * (aps_gemm_time(d, t.precision, 128, 64, 64) +
                         aps_gemm_time(d, t.precision, 128, 64, 32)) +
                  mc.membound_fwd + mc.cast_fwd + mc.bias_fwd +
                  mc.router_floor_fwd;
    ASSERT_REL(mc.sac_moe_fwd, want, 1e-12);
    assert_true(mc.sac_moe_fwd > 0.0);
    assert_float_equal(mc.sac_mla_fwd, 0.0, 0.0);
    t.framework = APS_FW_MEGATRON;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    assert_float_equal(mc.sac_moe_fwd, 0.0, 0.0);
}

/* TorchTitan from 3396a4b37 (2026-06-24) projects Q, K, V by one fused
 * wqkv, one mm of the count: the dense block keeps wqkv's output, 2 T
 * (a + 2k) d = 2*256*192 = 98,304, where wq and wv kept 65,536, and
 * recomputes wo and w3 (mm 2 and 4) but no longer wk:
 *   233,472 + 32,768 = 266,240 bytes; weights recomputed a d h + f h =
 *   4096 + 8192 = 12,288 per token.  The attention is apart under
 *   NeMo AutoModel's own llama class (nn.Linear q, k, v). */
static void test_fused_qkv(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    small_dense(&m);
    t.fuse_qkv = APS_DEFAULT;
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 266240.0, 0.0);
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 12288.0, 0.0);
    t.framework = APS_FW_AUTOMODEL;
    t.attn_backend = APS_ATTN_SDPA;
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 233472.0, 0.0);
}

/* Biased linears run as aten.addmm, which the policy saves whole and
 * the mm count skips.  small_moe's dense block with q, k, v and output
 * biases (wq, wk, wv apart): the input, wq, wk, wv and wo each 2 T 64 =
 * 32,768, the attention 36,864, then w1 (mm 1, saved, 65,536), w3 (mm
 * 2, recomputed), w2 (mm 3, saved, 32,768): 299,008 bytes; w3 alone
 * recomputed, f h = 8192 weights per token.  Kimi K3's output gate
 * g_proj is an mm of the count between the attention and wo: on the MLA
 * block of test_mla_block_parity it is mm 5 (saved, 2 T a dv = 32,768),
 * wo mm 6, and the dense FFN's w1, w3, w2 mm 7 to 9 keep w1 (65,536)
 * and w2 (32,768): 32,768 + 16,384 + 20,480 + 36,864 + 32,768 + 65,536
 * + 32,768 = 237,568.  AutoModel's latent projections (Nemotron 3, l
 * 16) are TransformerEngine's in its MoE classes: recomputed, l h = 1024
 * each, and the experts' gate_up runs at the latent width, K 2 fe l =
 * 2048: the MoE layer's weights 16,384 + 1024 + 2048 + 1024 + 12,288 =
 * 32,768, the mean with the dense layer's 40,960 is 34,816. */
static void test_biases_gate_latent(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    small_dense(&m);
    m.qkv_bias = true;
    m.attn_out_bias = true;
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 299008.0, 0.0);
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 8192.0, 0.0);
    small_moe(&m, &t, &s);
    small_mla(&m);
    m.mla_output_gate = true;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, true, false),
                       237568.0, 0.0);
    small_moe(&m, &t, &s);
    t.framework = APS_FW_AUTOMODEL;
    m.moe_latent_size = 16;
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 34816.0, 0.0);
}

/* The dense layer's recompute (compute.c layer_selective): the walk's
 * mms, every elementwise op and, in fp8, every cast (the quantizations
 * run again before the recomputed and the saved mms alike); the
 * TransformerEngine attention kernel under AutoModel. */
static void test_dense_selective_terms(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    small_dense(&m);
    fx_h100(&c, 2);
    t.precision = APS_PREC_FP8;
    aps_layer_cost lc;
    memset(&lc, 0, sizeof lc);
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    assert_true(lc.fp8_cast_fwd > 0.0);
    ASSERT_REL(lc.selective_fwd,
               aps_op_sac_layer_recompute(&m, &c.device, &t, &s, false, false) +
                   lc.membound_fwd + lc.fp8_cast_fwd, 1e-12);
    t.precision = APS_PREC_BF16;
    t.framework = APS_FW_AUTOMODEL;
    memset(&lc, 0, sizeof lc);
    aps_layer_times(&m, &c, &t, &s, NULL, &lc);
    ASSERT_REL(lc.selective_fwd,
               aps_op_sac_layer_recompute(&m, &c.device, &t, &s, false, false) +
                   lc.membound_fwd + lc.attn_fwd, 1e-12);
}

/* DeepSeek Sparse Attention under op-level checkpointing: the indexer's
 * fp32 score bmm (b x index heads x s x s a layer) is in the save set,
 * not modelled: refused, and priced under full recompute. */
static void test_dsa_selective_refused(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    small_mla(&m);
    m.index_n_heads = 4;
    m.index_head_dim = 16;
    m.index_topk = 64;
    char msg[APS_REASON_LEN] = "";
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NOT_MODELLED);
    assert_non_null(strstr(msg, "indexer's fp32 scores"));
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
}

/* NeMo AutoModel's policy on its own model classes (opsac.c file
 * comment): TransformerEngine linears and attention unseen, the router
 * gate and the two grouped mms counted, DeepEP's dispatch not saved.
 * small_moe's MoE block, T = 256, Te = 256 x 2 = 512 routed rows:
 *   block input               2 T h      = 2*256*64   = 32,768
 *   wq, wk, wv, wo, attention: TransformerEngine's, nothing saved
 *   mm 1 router gate (saved)  2 T E      = 2*256*8    =  4,096
 *   mm 2 grouped gate_up (recomputed)
 *   mm 3 grouped down (saved) 2 Te h     = 2*512*64   = 65,536
 *   shared w1, w3, w2: TransformerEngine's, nothing saved
 *   total 102,400; a dense block keeps its input alone, 32,768.
 * With backend.attn sdpa the attention output (2 T a d = 32,768) and
 * its log-sum-exp (4 T a = 4,096) are saved: 139,264 and 69,632.  A
 * model built through transformers is walked as TorchTitan's (ep 1:
 * 200,704, test_moe_block_gqa).  A dense model's own class (llama)
 * builds nn.Linear: TorchTitan's dense walk less the TransformerEngine
 * attention's output and log-sum-exp, 233,472 - 36,864 = 196,608. */
static void test_automodel_block_bytes(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    t.framework = APS_FW_AUTOMODEL;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       102400.0, 0.0);
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 32768.0, 0.0);
    assert_true(aps_op_sac_attention_recomputed(&t));
    assert_false(aps_op_sac_saves_dispatch(&t));
    t.attn_backend = APS_ATTN_SDPA;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       139264.0, 0.0);
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 69632.0, 0.0);
    assert_false(aps_op_sac_attention_recomputed(&t));
    t.attn_backend = APS_ATTN_FRAMEWORK;
    t.transformers_model = true;
    s.ep_degree = 1;
    assert_float_equal(aps_op_sac_layer_bytes(&m, &t, &s, false, true),
                       200704.0, 0.0);
    t.transformers_model = false;
    small_dense(&m);
    assert_float_equal(aps_op_sac_bytes(&m, &t, &s), 196608.0, 0.0);
}

/* AutoModel's recompute, per token and full width (weights): a dense
 * layer every linear, 4 x 4096 + 3 x 8192 = 40,960; an MoE layer the
 * attention's 16,384, the grouped gate_up K 2 fe h = 8192 (mm 2; the
 * router gate and the down projection saved) and the shared expert's
 * 3 x 4096: 36,864; mean (40,960 + 3 x 36,864) / 4 = 37,888.  Seconds
 * beyond the dense layer: the gate_up GEMMs, 4 local experts x (128
 * rows x 64 over 64), and the shared expert's three (256 x 64 over 64,
 * twice, and 256 x 64 over 64) less the dense FFN's (256 x 128 over 64,
 * twice, and 256 x 64 over 128), and the block's elementwise work. */
static void test_automodel_recompute(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    t.framework = APS_FW_AUTOMODEL;
    assert_float_equal(aps_op_sac_recompute_params(&m, &t), 37888.0, 0.0);
    fx_h100(&c, 2);
    const aps_device *d = &c.device;
    aps_precision p = t.precision;
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    double want = 4.0 * aps_gemm_time(d, p, 128, 64, 64) +
                  3.0 * aps_gemm_time(d, p, 256, 64, 64) -
                  2.0 * aps_gemm_time(d, p, 256, 128, 64) -
                  aps_gemm_time(d, p, 256, 64, 128) + mc.membound_fwd +
                  mc.cast_fwd + mc.bias_fwd + mc.router_floor_fwd;
    ASSERT_REL(mc.sac_moe_fwd, want, 1e-12);
}

/* A fully recomputed layer runs its forward again, MoE block included:
 * the hardware FLOPs under full recompute of every layer are the model's
 * plus its layers' forward, the model's third less the output layer's
 * 2 s h V per sequence (4 sequences of 128, h 64, V 1024: 67,108,864),
 * with no shared expert so that an MoE layer's FLOPs differ from the
 * dense layer's.
 * Op-level selective checkpointing launches every layer's forward
 * kernels again, as full recompute does (stagetime.c stage_host). */
static void test_full_recompute_flops_and_launches(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    m.shared_expert_ffn_hidden_size = 0; /* experts 2 x 32 < dense 128 */
    fx_h100(&c, 2);
    aps_estimate sel, full;
    fx_run(&m, &c, &t, &s, &sel);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    fx_run(&m, &c, &t, &s, &full);
    ASSERT_REL(full.hardware_flops_per_step - full.model_flops_per_step,
               full.model_flops_per_step / 3.0 - 67108864.0, 1e-12);
    assert_true(full.hardware_flops_per_step > sel.hardware_flops_per_step);
    assert_true(sel.perf_total[APS_PERF_HOST] > 0.0);
    ASSERT_REL(sel.perf_total[APS_PERF_HOST], full.perf_total[APS_PERF_HOST],
               1e-12);
}

/* A recomputed attention kernel runs its context-parallel exchange
 * again (the ring is inside the attention function): AutoModel's
 * TransformerEngine attention under selective recompute costs cp_comm
 * as full recompute does, SDPA's (saved) less; so does Megatron's
 * core_attn recompute module. */
static void test_cp_exchange_rerun(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s; aps_cluster c;
    small_moe(&m, &t, &s);
    small_dense(&m);
    fx_h100(&c, 2);
    t.framework = APS_FW_AUTOMODEL;
    s.fsdp_degree = 1;
    s.ep_degree = 1;
    s.cp_degree = 2;
    aps_estimate te, sdpa, full;
    fx_run(&m, &c, &t, &s, &te);
    t.attn_backend = APS_ATTN_SDPA;
    fx_run(&m, &c, &t, &s, &sdpa);
    s.layer_recompute = APS_RECOMPUTE_FULL;
    fx_run(&m, &c, &t, &s, &full);
    assert_true(sdpa.perf_total[APS_PERF_CP_COMM] > 0.0);
    assert_true(te.perf_total[APS_PERF_CP_COMM] >
                sdpa.perf_total[APS_PERF_CP_COMM]);
    ASSERT_REL(te.perf_total[APS_PERF_CP_COMM],
               full.perf_total[APS_PERF_CP_COMM], 1e-12);
}

/* The attention backend is AutoModel's setting, refused elsewhere, and
 * te is its own classes' (a model transformers builds runs SDPA or
 * flex); fuse_qkv is TorchTitan's, refused elsewhere. */
static void test_attn_backend_automodel_only(void **state)
{
    (void)state;
    aps_model m; aps_training t; aps_strategy s;
    small_moe(&m, &t, &s);
    t.attn_backend = APS_ATTN_FLEX;
    char err[256] = "";
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "training.attn_backend: NeMo AutoModel's"));
    t.framework = APS_FW_AUTOMODEL;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "training.fuse_qkv: TorchTitan's fused wqkv"));
    t.fuse_qkv = APS_DEFAULT;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    t.transformers_model = true;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_OK);
    t.attn_backend = APS_ATTN_TE;
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    assert_non_null(strstr(err, "runs sdpa or flex"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_block_gqa),
        cmocka_unit_test(test_moe_full_recompute_transient),
        cmocka_unit_test(test_moe_block_load_factor),
        cmocka_unit_test(test_mla_block_parity),
        cmocka_unit_test(test_dense_block_unchanged),
        cmocka_unit_test(test_alltoall_through_estimate),
        cmocka_unit_test(test_score_operand_no_ac),
        cmocka_unit_test(test_dsv3_16b_pr1672_alltoalls),
        cmocka_unit_test(test_ep_buffer_only_with_ep),
        cmocka_unit_test(test_recompute_params),
        cmocka_unit_test(test_recompute_seconds),
        cmocka_unit_test(test_automodel_block_bytes),
        cmocka_unit_test(test_automodel_recompute),
        cmocka_unit_test(test_attn_backend_automodel_only),
        cmocka_unit_test(test_full_recompute_flops_and_launches),
        cmocka_unit_test(test_fused_qkv),
        cmocka_unit_test(test_biases_gate_latent),
        cmocka_unit_test(test_dense_selective_terms),
        cmocka_unit_test(test_dsa_selective_refused),
        cmocka_unit_test(test_cp_exchange_rerun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
