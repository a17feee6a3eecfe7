/*
 * opsac.c -- what one transformer block keeps for backward under
 * TorchTitan's op-level selective activation checkpointing
 * (activation_checkpoint.selective_ac_option = "op").
 *
 * Source: pytorch/torchtitan, torchtitan/distributed/activation_checkpoint.py
 * _apply_ac_to_transformer_block, _custom_policy (@ c4e2291, 2025-09-06;
 * the same policy @ f738a03 and @ 99fee81), with the save lists of
 * torchtitan/models/{llama3,deepseek_v3}/infra/parallelize.py
 * (_save_list / _op_sac_save_list):
 *
 *   - every block is one checkpoint region; its input (the residual
 *     stream, sequence-split under SP) stays referenced;
 *   - inside it the outputs of aten.mm, the attention kernels (SDPA
 *     flash / efficient, flex_attention: output and fp32 log-sum-exp),
 *     reduce_scatter_tensor, max (and, from c4e2291 on,
 *     _c10d_functional.all_to_all_single) are saved (MUST_SAVE), except
 *     every second aten.mm of the region ("save every other mm": the mm
 *     counter runs over the whole block, attention and FFN alike);
 *   - mms whose weight shape is listed by
 *     per_op_sac_force_recompute_mm_shapes_by_fqns (default
 *     ["moe.router.gate"], torchtitan/config/job_config.py @ f738a03 and
 *     @ 99fee81) are recomputed and not counted;
 *   - everything else (norms, RoPE, SiLU, routing, token gather and
 *     scatter, the experts' aten._grouped_mm) is recomputed in backward.
 *     _grouped_mm is in neither list: PyTorch's partitioner
 *     compute_intensive_ops (mm, bmm, addmm, _scaled_mm, the SDPA and
 *     convolution kernels; torch/_functorch/partitioners.py
 *     get_default_op_list), which TorchTitan's save set is built from
 *     (activation_checkpoint.py _get_default_save_ops @ b5bcd76c), nor
 *     the mm counter (mm_ops = aten.mm, aten.linear), so every expert
 *     GEMM runs again in the backward.  NeMo AutoModel, whose policy is
 *     TorchTitan's otherwise, alternates _grouped_mm with the mms for
 *     this reason: "otherwise selective AC would recompute every expert
 *     GEMM, matching full checkpointing" (nemo_automodel/components/
 *     distributed/activation_checkpointing.py @ 36044ad3,
 *     _SELECTIVE_AC_MATMUL_OPS).
 *
 * Forward mm order of a block (models/llama3/model/model.py Attention,
 * FeedForward; models/deepseek_v3/model/model.py Attention (MLA);
 * models/moe.py MoE.forward @ c4e2291 and @ 99fee81):
 *   GQA:  wq, wk, wv, [attention], wo; from 3396a4b37 (2026-06-24,
 *         training.fuse_qkv) wqkv, [attention], wo (FusedQKVLinear, the
 *         llama3, qwen3 and gpt_oss builders' default @ b5bcd76c)
 *   MLA:  wq (q_lora_rank 0) or wq_a, wq_b; wkv_a, wkv_b, [attention], wo
 *   FFN:  w1, w3, w2 (SwiGLU, w2(silu(w1 x) * w3 x)); fc1, fc2 (GELU)
 *   MoE:  router gate (forced recompute), dispatch all-to-all,
 *         grouped mm x 3, combine all-to-all, shared experts w1, w3, w2.
 * A row-parallel mm (wo, w2) outputs the full hidden width (partial sums
 * before the reduction).  The all-to-all that exchanges the per-expert
 * token counts (E integers, torchtitan/distributed/expert_parallel.py
 * _token_dispatch) is left out: under a kilobyte.
 *
 * NeMo AutoModel's policy (nemo_automodel/components/distributed/
 * activation_checkpointing.py make_selective_checkpoint_context_fn @
 * 36044ad3, the same for MoE blocks, moe/parallelizer.py apply_ac) is
 * TorchTitan's with three differences, and its own model classes add a
 * fourth:
 *   - no mm is forced to recompute: the router gate (F.linear on the
 *     Gate's weight, moe/layers.py Gate.forward) is counted;
 *   - aten._grouped_mm alternates with the mms (_SELECTIVE_AC_MATMUL_OPS;
 *     the torch_mm experts run two, gate_up and down: moe/experts.py
 *     _torch_mm_experts_fwd);
 *   - DeepEP's and HybridEP's dispatch and combine are Python calls into
 *     their extension, not ops the policy sees: recomputed, so the
 *     backward dispatches and combines again (taken for the torch
 *     dispatcher too, whose all-gather runs again but whose
 *     reduce-scatter output is saved: an upper bound there);
 *   - its own model classes build their attention with backend.attn,
 *     TransformerEngine's by default, and its own MoE classes their
 *     linears with backend.linear, TransformerEngine's by default
 *     (initialize_linear_module: models/{deepseek_v3,qwen3_moe,gpt_oss,
 *     glm4_moe,...}; the dense llama, qwen2 and qwen3 classes build
 *     nn.Linear, models/llama/model.py:112-125, 267-269):
 *     TransformerEngine's GEMM and fused-attention kernels are pybind11
 *     calls (transformer_engine/pytorch/cpp_extensions, TransformerEngine
 *     d0067d0d), not PyTorch operators, so the policy never sees them:
 *     they are neither saved nor counted and run again in the backward.
 *     With backend.attn sdpa or flex the attention kernel is an operator
 *     of the save set again.
 * A model AutoModel builds through transformers (training.
 * transformers_model: nn.Linear, SDPA) is walked as TorchTitan's.
 * The walk puts the shared experts after the routed ones, as TorchTitan
 * runs them; AutoModel runs them first, which changes no count (they are
 * TransformerEngine linears).
 *
 * The same walk gives what the backward recomputes
 * (aps_op_sac_layer_recompute): the forward seconds and weight elements
 * of the mms it does not save (the even-numbered ones, the router gate
 * under TorchTitan, TorchTitan's every grouped mm, AutoModel's
 * TransformerEngine linears) and whether the attention kernel runs again
 * (aps_op_sac_attention_recomputed); the elementwise ops it also
 * recomputes are priced by the callers (compute.c layer_selective,
 * moe.c).
 */
#include "internal.h"

/** What a framework's policy sees and saves (the file comment). */
typedef struct {
    bool attn_seen;        /**< the attention's and dense MLP's linears are
                                PyTorch ops the policy sees; false:
                                TransformerEngine's, recomputed */
    bool moe_seen;         /**< the MoE block's linears (shared experts,
                                latent projections) likewise */
    bool fused_qkv;        /**< one wqkv mm (TorchTitan from 2026-06-24) */
    bool attention_saved;  /**< the attention kernel is in the save set */
    bool router_counted;   /**< the router gate is an mm of the count;
                                false: forced to recompute (TorchTitan) */
    bool grouped_counted;  /**< the grouped mms alternate with the mms;
                                false: all recomputed (TorchTitan) */
    bool dispatch_saved;   /**< the dispatch and combine outputs are saved */
} sac_policy;

/** TorchTitan's policy, or AutoModel's on its own model classes (m NULL:
 *  what does not depend on the model). */
static sac_policy sac_policy_of(const aps_model *m, const aps_training *t)
{
    sac_policy p = {true, true, aps_recipe_fuse_qkv(t), true, false, false,
                    aps_recipe_sac_save_a2a(t)};
    if (t->framework == APS_FW_AUTOMODEL && !t->transformers_model) {
        /* the MoE classes' initialize_linear_module; Kimi K3's attention
         * and MLP are nn.Linear (models/kimi_k3/model.py:324-396), its
         * MoE block moe/layers.py's */
        bool te = m != NULL && m->num_experts > 0;
        p.attn_seen = !te || m->mla_output_gate;
        p.moe_seen = !te;
        p.attention_saved = t->attn_backend == APS_ATTN_SDPA ||
                            t->attn_backend == APS_ATTN_FLEX;
        p.router_counted = true;
        p.grouped_counted = true;
        p.dispatch_saved = false;
    }
    return p;
}

bool aps_op_sac_on(const aps_training *t, const aps_strategy *s)
{
    return aps_profile(t)->op_sac_selective &&
           s->layer_recompute == APS_RECOMPUTE_SELECTIVE;
}

bool aps_op_sac_attention_recomputed(const aps_training *t)
{
    return !sac_policy_of(NULL, t).attention_saved;
}

bool aps_op_sac_saves_dispatch(const aps_training *t)
{
    return sac_policy_of(NULL, t).dispatch_saved;
}

/** Bytes saved so far and the mm counter of one checkpoint region, and
 *  what its backward recomputes: the recomputed mms' forward seconds on
 *  device d (none when d is NULL) in precision prec, and their weight
 *  elements on one rank. */
typedef struct {
    sac_policy pol;
    double bytes;
    int mm_count;
    const aps_device *d;
    aps_precision prec;
    double secs;
    double params;
} sac_walk;

/** A matmul of rows x cols outputs over inner the backward runs again. */
static void sac_recompute(sac_walk *w, aps_precision p, double rows,
                          double cols, double inner)
{
    w->params += cols * inner;
    if (w->d != NULL)
        w->secs += aps_gemm_time(w->d, p, rows, cols, inner);
}

/** One aten.mm of rows x cols bf16 outputs over inner: saved when it is
 *  an odd-numbered mm of the region (the 1st, 3rd, ...), else recomputed. */
static void sac_mm(sac_walk *w, double rows, double cols, double inner)
{
    w->mm_count++;
    if (w->mm_count % 2 == 1)
        w->bytes += APS_ACT_BYTES * rows * cols;
    else
        sac_recompute(w, w->prec, rows, cols, inner);
}

/** One saved op output of rows x cols elements of `bytes` each. */
static void sac_save(sac_walk *w, double rows, double cols, double bytes)
{
    w->bytes += bytes * rows * cols;
}

/** A linear layer of the block (rows x cols outputs over inner): one the
 *  policy does not see (seen false: TransformerEngine's) is recomputed
 *  and not counted; with a bias it is aten.addmm (F.linear's 2-D and
 *  contiguous 3-D path), which PyTorch's compute_intensive_ops save
 *  whole and the count skips (mm_ops: aten.mm, aten.linear); else an
 *  aten.mm of the count. */
static void sac_linear(sac_walk *w, bool seen, bool bias, double rows,
                       double cols, double inner)
{
    if (!seen)
        sac_recompute(w, w->prec, rows, cols, inner);
    else if (bias)
        sac_save(w, rows, cols, APS_ACT_BYTES);
    else
        sac_mm(w, rows, cols, inner);
}

/** The attention kernel: when the policy saves it, its output (heads x
 *  value width, bf16) and its fp32 log-sum-exp, one per head and token,
 *  on one TP rank (its time, when recomputed, is the caller's). */
static void sac_attention(sac_walk *w, double T, double heads, double dv)
{
    if (!w->pol.attention_saved)
        return;
    sac_save(w, T, heads * dv, APS_ACT_BYTES);
    sac_save(w, T, heads, APS_FP32_BYTES);
}

/** GQA attention: wq, wk, wv (or one wqkv), the kernel, wo. */
static void sac_gqa(sac_walk *w, const aps_model *m, double T, double tp)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    bool seen = w->pol.attn_seen, qb = m->qkv_bias;
    if (w->pol.fused_qkv) {
        sac_linear(w, seen, qb, T, (a + 2.0 * k) * d / tp, h);
    } else {
        sac_linear(w, seen, qb, T, a * d / tp, h);
        sac_linear(w, seen, qb, T, k * d / tp, h);
        sac_linear(w, seen, qb, T, k * d / tp, h);
    }
    sac_attention(w, T, a / tp, d);
    sac_linear(w, seen, m->attn_out_bias, T, h, a * d / tp);
}

/** MLA (DeepSeek-V3): wq or wq_a + wq_b, wkv_a, wkv_b, the kernel, Kimi
 *  K3's output gate g_proj (mla_output_gate: the context times
 *  sigmoid(g_proj(x)), models/kimi_k3/model.py:525-527), wo. */
static void sac_mla(sac_walk *w, const aps_model *m, double T, double tp)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
    double dn = (double)m->qk_nope_head_dim, dr = (double)m->qk_rope_head_dim;
    double dv = (double)m->v_head_dim;
    bool seen = w->pol.attn_seen;
    if (qr > 0) {
        sac_linear(w, seen, false, T, qr, h);
        sac_linear(w, seen, false, T, a * (dn + dr) / tp, qr);
    } else {
        sac_linear(w, seen, false, T, a * (dn + dr) / tp, h);
    }
    sac_linear(w, seen, false, T, kr + dr, h);
    sac_linear(w, seen, false, T, a * (dn + dv) / tp, kr);
    sac_attention(w, T, a / tp, dv);
    if (m->mla_output_gate)
        sac_linear(w, seen, false, T, a * dv / tp, h);
    sac_linear(w, seen, false, T, h, a * dv / tp);
}

/** A dense FFN of width f / tp whose linears the policy sees or not
 *  (seen): w1, w3, w2 (SwiGLU) or fc1, fc2, biased with mlp_bias. */
static void sac_ffn(sac_walk *w, const aps_model *m, bool seen, double T,
                    double f, double tp)
{
    double h = (double)m->hidden_size;
    bool b = m->mlp_bias;
    if (f <= 0)
        return;
    sac_linear(w, seen, b, T, f / tp, h);
    if (m->mlp == APS_MLP_SWIGLU)
        sac_linear(w, seen, b, T, f / tp, h);
    sac_linear(w, seen, b, T, h, f / tp);
}

/** One of the experts' grouped mms (down: the down projection, else
 *  gate and up), full width per routed token in weight elements: saved
 *  when the policy counts it and it is odd-numbered (the busiest rank's
 *  rows, bf16), else recomputed (moe.c aps_moe_grouped_fwd's seconds).
 *  s NULL: the weights alone. */
static void sac_grouped(sac_walk *w, const aps_model *m,
                        const aps_training *t, const aps_strategy *s,
                        bool down)
{
    double up = m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0;
    double fe = (double)m->moe_ffn_hidden_size, x = aps_moe_expert_width(m);
    double cols = down ? x : up * fe, K = (double)m->experts_per_token;
    if (w->pol.grouped_counted) {
        w->mm_count++;
        if (w->mm_count % 2 == 1) {
            if (s != NULL)
                sac_save(w, aps_moe_expert_rows(m, t, s),
                         down ? cols : cols / (double)aps_moe_etp(s),
                         APS_ACT_BYTES);
            return;
        }
    }
    w->params += K * cols * (down ? fe : x);
    if (w->d != NULL && s != NULL)
        w->secs += aps_moe_grouped_fwd(m, w->d, t, s, down);
}

/** The MoE block (TorchTitan models/moe.py; AutoModel moe/layers.py
 *  MoE.forward): the router gate (forced to recompute under TorchTitan,
 *  per_op_sac_force_recompute_mm_shapes_by_fqns, in bf16 under FSDP2's
 *  mixed precision; an mm of the count under AutoModel), with expert
 *  parallelism and a saved dispatch the dispatch output (the rows this
 *  rank's experts receive, T k x the load factor on the busiest rank) and
 *  the combine output (this rank's T k routed rows back), the experts'
 *  two grouped mms, then the shared experts' FFN.  s NULL: the weights
 *  alone. */
static void sac_moe(sac_walk *w, const aps_model *m, const aps_training *t,
                    const aps_strategy *s, double T, double tp)
{
    double h = (double)m->hidden_size, K = (double)m->experts_per_token;
    double E = (double)m->num_experts, l = (double)m->moe_latent_size;
    if (l > 0) /* AutoModel's fc1_latent_proj, before the router */
        sac_linear(w, w->pol.moe_seen, false, T, l, h);
    if (m->moe_router_linear_bias) /* addmm: saved, skipped by the count */
        sac_save(w, T, E, APS_ACT_BYTES);
    else if (w->pol.router_counted)
        sac_mm(w, T, E, h);
    else
        sac_recompute(w, APS_PREC_BF16, T, E, h);
    if (s != NULL && aps_moe_ep(s) > 1 && w->pol.dispatch_saved) {
        double routed = T * K;
        sac_save(w, routed * aps_moe_load_factor(t, s), h, APS_ACT_BYTES);
        sac_save(w, routed, h, APS_ACT_BYTES);
    }
    sac_grouped(w, m, t, s, false);
    sac_grouped(w, m, t, s, true);
    if (l > 0) /* fc2_latent_proj */
        sac_linear(w, w->pol.moe_seen, false, T, h, l);
    sac_ffn(w, m, w->pol.moe_seen, T, (double)m->shared_expert_ffn_hidden_size,
            tp);
}

/** The walk of one layer's checkpoint region: attention MLA (mla) or GQA,
 *  FFN the MoE block (moe) or the dense FFN, T tokens on a rank of tp
 *  (sequence-split under sp); s NULL: no all-to-all output saved (the
 *  weights alone, aps_op_sac_recompute_params). */
static sac_walk sac_layer(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, const aps_device *d,
                          double T, double tp, bool sp, bool mla, bool moe)
{
    double rep = sp ? tp : 1.0;
    double h = (double)m->hidden_size;
    sac_walk w = {sac_policy_of(m, t), 0.0, 0, d, t->precision, 0.0, 0.0};
    sac_save(&w, T, h / rep, APS_ACT_BYTES); /* the block input */
    if (mla)
        sac_mla(&w, m, T, tp);
    else
        sac_gqa(&w, m, T, tp);
    if (moe)
        sac_moe(&w, m, t, s, T / rep, tp);
    else
        sac_ffn(&w, m, w.pol.attn_seen, T, (double)m->ffn_hidden_size, tp);
    if (sp) /* the reduce-scatter outputs after wo and w2 */
        sac_save(&w, T, 2.0 * h / tp, APS_ACT_BYTES);
    return w;
}

/** sac_layer with one micro-batch of strategy s on one rank. */
static sac_walk sac_rank_layer(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, const aps_device *d,
                               bool mla, bool moe)
{
    double T = (double)t->seq_length / (double)s->cp_degree *
               (double)s->micro_batch_size;
    return sac_layer(m, t, s, d, T, (double)s->tp_degree,
                     s->tp_degree > 1 && s->sequence_parallel, mla, moe);
}

double aps_op_sac_layer_bytes(const aps_model *m, const aps_training *t,
                              const aps_strategy *s, bool mla, bool moe)
{
    return sac_rank_layer(m, t, s, NULL, mla, moe).bytes;
}

double aps_op_sac_layer_recompute(const aps_model *m, const aps_device *d,
                                  const aps_training *t, const aps_strategy *s,
                                  bool mla, bool moe)
{
    return sac_rank_layer(m, t, s, d, mla, moe).secs;
}

double aps_op_sac_recompute_params(const aps_model *m, const aps_training *t)
{
    bool mla = m->kv_lora_rank > 0;
    double L = (double)m->num_layers;
    double nm = m->num_experts > 0
                    ? (double)aps_model_moe_layers_in(m, 0, m->num_layers) : 0.0;
    double dense = sac_layer(m, t, NULL, NULL, 1.0, 1.0, false, mla, false).params;
    double moe = nm > 0 ? sac_layer(m, t, NULL, NULL, 1.0, 1.0, false, mla, true).params
                        : 0.0;
    return L > 0 ? ((L - nm) * dense + nm * moe) / L : 0.0;
}

double aps_op_sac_bytes(const aps_model *m, const aps_training *t,
                        const aps_strategy *s)
{
    return aps_op_sac_layer_bytes(m, t, s, false, false);
}
