/*
 * stagetime.c -- seconds of one micro-batch on one pipeline rank: its
 * layers' compute (per layer from compute.c), the embedding on the first
 * rank and the output layer and loss on the last, recompute, and the TP,
 * CP, activation-offload and FSDP communication inside it, in total and
 * exposed (MODELING.md s.4, "Time per step").
 *
 * Per layer, backward = 2 x forward for the GEMMs (dX = dY W^T and
 * dW = X^T dY) and the memory-bound kernels, the attention core's own
 * ratio (compute.c).  Of a GEMM's backward the weight gradient is half,
 * as many FLOPs as the forward; attention and elementwise backwards
 * produce input gradients only (Qi et al. 2024, arXiv:2401.10241 s.2: the
 * B / W split of zero-bubble schedules).
 *
 * TP on the edges (Shoeybi et al. 2019 s.3; Korthikanti et al. 2022
 * s.4.2.2 with SP): the vocab-parallel embedding's output is all-reduced
 * (SP: reduce-scattered, an all-gather's time) in the forward; before the
 * output layer SP all-gathers the sequence, and its input gradient is
 * all-reduced (SP: reduce-scattered) in the backward.
 */
#include <string.h>
#include "internal.h"

/** Backward / forward HBM traffic of the memory-bound kernels (norms,
 *  residuals, RoPE, activation): taken as the GEMMs' ratio, as counted
 *  since the first estimator (59a3125); not measured. */
#define APS_MEMBOUND_BWD_RATIO 2.0
/** HBM bytes per logit of the softmax cross-entropy, forward and backward
 *  together: the bf16 logits read and written (2 x APS_ACT_BYTES) plus
 *  three fp32 accesses, as counted since 59a3125; not measured. */
#define APS_CE_BYTES_PER_LOGIT (2.0 * APS_ACT_BYTES + 3.0 * APS_FP32_BYTES)
/** Share of the cross-entropy traffic in the forward; the rest is in the
 *  backward. */
#define APS_CE_FWD_SHARE 0.5
/** Backward / forward HBM traffic of the embedding lookup (the forward
 *  writes the activations; the backward reads their gradient and
 *  accumulates it into the table's rows), as counted since 59a3125. */
#define APS_EMBEDDING_BWD_RATIO 2.0

/** One layer's forward and backward compute seconds. */
static void layer_seconds(const aps_layer_cost *lc, double *fwd, double *bwd)
{
    *fwd = lc->gemm_fwd + lc->attn_fwd + lc->membound_fwd + lc->fp8_cast_fwd;
    *bwd = APS_GEMM_BWD_RATIO * lc->gemm_fwd + lc->attn_bwd +
           APS_MEMBOUND_BWD_RATIO * lc->membound_fwd + lc->fp8_cast_bwd;
}

/** Compute of rank i's layers: forward, backward, its weight-gradient
 *  part, and the recomputed forwards (full layers, or what selective
 *  recompute repeats in every layer). */
static void layers_compute(const aps_strategy *s, const aps_layout *lay,
                           const aps_layer_cost *lc, int64_t i,
                           aps_stage_time *st)
{
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double layer_fwd, layer_bwd;
    layer_seconds(lc, &layer_fwd, &layer_bwd);
    st->comp_fwd = L * layer_fwd;
    st->comp_bwd = L * layer_bwd;
    st->wgrad = L * lc->gemm_fwd;
    st->recompute = rc * layer_fwd;
    if (s->layer_recompute == APS_RECOMPUTE_SELECTIVE)
        st->recompute += L * lc->selective_fwd;
}

/** HBM traffic of the norms of one multi-token-prediction depth: enorm,
 *  hnorm and the final norm, each reading and writing the hidden states
 *  (multi_token_prediction.py @ d98e8a64). */
#define APS_MTP_NORMS 3.0

/** Compute of the embedding lookup (first: write the activations) and of
 *  the output layer GEMM and softmax cross-entropy (last); with
 *  multi-token prediction the last stage repeats the lookup, the output
 *  layer and the loss per depth and adds its norms and eh_proj (its
 *  transformer layer is among the stage's layers, aps_layout.mtp). */
static void edges_compute(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, bool first, bool last,
                          aps_stage_time *st)
{
    const aps_device *d = &c->device;
    double A = APS_ACT_BYTES;
    double tp = (double)lay->t, h = (double)m->hidden_size;
    double T = (double)lay->b * (double)lay->s_local;
    double rep = (lay->t > 1 && s->sequence_parallel) ? tp : 1.0;
    if (first) {
        st->comp_fwd += aps_hbm_time(d, A * T * h / rep);
        st->comp_bwd += aps_hbm_time(d, APS_EMBEDDING_BWD_RATIO * A * T * h /
                                            rep);
    }
    if (last) {
        double heads = 1.0 + (double)lay->mtp, D = (double)lay->mtp;
        double V = lay->vocab_padded / tp;
        double g = aps_gemm_time(d, t->precision, T, V, h);
        double ce = aps_hbm_time(d, APS_CE_BYTES_PER_LOGIT * T * V);
        /* eh_proj: column-parallel [T, 2h] x [2h, h / tp] */
        double eh = aps_gemm_time(d, t->precision, T, h / tp, 2.0 * h);
        double side = aps_hbm_time(d, (APS_MTP_NORMS * 2.0 + 1.0) * A * T *
                                          h / rep); /* norms, lookup */
        st->comp_fwd += heads * (g + APS_CE_FWD_SHARE * ce) + D * (eh + side);
        st->comp_bwd += heads * (APS_GEMM_BWD_RATIO * g + APS_CE_FWD_SHARE * ce) +
                        D * (APS_GEMM_BWD_RATIO * eh +
                             APS_MEMBOUND_BWD_RATIO * side);
        st->wgrad += heads * g + D * eh;
    }
}

/** TP collectives of the embedding (first) and the output layer (last),
 *  forward and backward (see the file comment). */
static void tp_edges(const aps_model *m, const aps_cluster *c,
                     const aps_strategy *s, const aps_layout *lay,
                     bool first, bool last, double *fwd, double *bwd)
{
    *fwd = *bwd = 0.0;
    if (lay->t <= 1)
        return;
    double bw, alpha;
    aps_group_link(c, 1, lay->t, &bw, &alpha);
    double T = (double)lay->b * (double)lay->s_local;
    double act = APS_ACT_BYTES * T * (double)m->hidden_size;
    double ag = aps_allgather_time(lay->t, act, bw, alpha);
    double ar = aps_allreduce_time(lay->t, act, bw, alpha);
    if (first) {
        *fwd += s->sequence_parallel ? ag : ar;
        *bwd += s->sequence_parallel ? ag : 0.0;
    }
    if (last) {
        /* the output layer per head (1 + MTP depths); each depth's
         * eh_proj gathers its 2h-wide input with SP (its input gradient
         * reduce-scattered), else all-reduces that gradient */
        double heads = 1.0 + (double)lay->mtp, D = (double)lay->mtp;
        double ag2 = aps_allgather_time(lay->t, 2.0 * act, bw, alpha);
        double ar2 = aps_allreduce_time(lay->t, 2.0 * act, bw, alpha);
        *fwd += heads * (s->sequence_parallel ? ag : 0.0) +
                D * (s->sequence_parallel ? ag2 : 0.0);
        *bwd += heads * (s->sequence_parallel ? ag : ar) +
                D * (s->sequence_parallel ? ag2 : ar2);
    }
}

/** TP collectives of rank i: per layer (compute.c) plus the edges, the
 *  recomputed layers' forward ones again in the backward; exposed as
 *  aps_recipe_tp_exposed gives next to the GEMMs they feed, but for the
 *  replicated KV heads' gathers (kv_gather), exposed whole. */
static void stage_tp(const aps_model *m, const aps_cluster *c,
                     const aps_training *t, const aps_strategy *s,
                     const aps_layout *lay, const aps_layer_cost *lc,
                     const aps_moe_stage_cost *mo, int64_t i, bool first,
                     bool last, aps_stage_time *st)
{
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double edge_fwd, edge_bwd;
    tp_edges(m, c, s, lay, first, last, &edge_fwd, &edge_bwd);
    /* an MoE layer without shared expert drops the FFN block's share of
     * them (its experts' own collectives are in mo's times) */
    double tp_fwd = (L - mo->drop_tp_layers) * lc->tp_fwd + edge_fwd;
    double tp_bwd = (L - mo->drop_tp_layers) * lc->tp_bwd +
                    (rc - mo->drop_tp_recompute) * lc->tp_fwd +
                    edge_bwd;
    /* TorchTitan's op-level selective recompute re-runs wk and w3, whose
     * sequence all-gathers are not among the saved ops: 2 all-gathers per
     * layer, a quarter each of the forward's 2 x (all-gather +
     * reduce-scatter) */
    if (aps_op_sac_on(t, s) && lay->t > 1 && s->sequence_parallel)
        tp_bwd += (L - rc) * 0.5 * lc->tp_fwd;
    double kv_fwd = L * lc->kv_gather, kv_bwd = (L + rc) * lc->kv_gather;
    st->tp_total = tp_fwd + tp_bwd + kv_fwd + kv_bwd;
    st->tp_exposed_fwd =
        aps_interfered(t, tp_fwd,
                       aps_recipe_tp_exposed(t, lay->t, tp_fwd,
                                             L * lc->gemm_fwd)) +
        kv_fwd;
    st->tp_exposed_bwd =
        aps_interfered(t, tp_bwd,
                       aps_recipe_tp_exposed(t, lay->t, tp_bwd,
                                             (2.0 * L + rc) * lc->gemm_fwd)) +
        kv_bwd;
}

/** MoE and MLA layers of rank i (moe.c): their compute differences from
 *  the dense layer added to st (whose layers_compute already holds the
 *  rank's layers), and the expert dispatch and combine, exposed but for
 *  what the shared expert hides, or with --overlap-moe-expert-parallel-
 *  comm what the other micro-batch's compute hides: the combined 1F1B
 *  schedule (Megatron-LM b0cc2706 pipeline_parallel/combined_1f1b.py,
 *  schedules.py:598, 775-779) runs micro-batch i+1's forward beside i's
 *  backward, so the forward's dispatch and combine hide behind the
 *  rank's backward compute and the backward's behind its forward
 *  compute, each up to that compute.  The schedule's one extra warm-up
 *  forward and the last backward run alone: not counted, one of the
 *  run's micro-batches.  Hidden parts are interfered, as every
 *  overlapped communication. */
static void stage_moe(const aps_training *t, const aps_moe_stage_cost *mo,
                      aps_stage_time *st)
{
    st->comp_fwd += mo->comp_fwd;
    st->comp_bwd += mo->comp_bwd;
    st->wgrad += mo->wgrad;
    st->recompute += mo->recompute;
    st->ep_total = mo->ep_fwd + mo->ep_bwd;
    double hf = mo->ep_hidden_fwd, hb = mo->ep_hidden_bwd;
    if (t->overlap_moe_expert_parallel_comm) {
        hf = mo->ep_fwd < st->comp_bwd ? mo->ep_fwd : st->comp_bwd;
        hb = mo->ep_bwd < st->comp_fwd ? mo->ep_bwd : st->comp_fwd;
    }
    st->ep_exposed_fwd = aps_interfered(t, mo->ep_fwd, mo->ep_fwd - hf);
    st->ep_exposed_bwd = aps_interfered(t, mo->ep_bwd, mo->ep_bwd - hb);
}

/** CP communication of rank i: the ring's K/V passing hidden behind each
 *  chunk's attention (exposed where longer), the all-gather and a2a
 *  variants exposed in full (their collectives finish before the
 *  attention starts: compute.c layer_cp, layer_cp_a2a); recomputed layers
 *  repeat the forward's. */
static void stage_cp(const aps_training *t, const aps_strategy *s,
                     const aps_layout *lay, const aps_layer_cost *lc,
                     int64_t i, aps_stage_time *st)
{
    if (lay->c <= 1)
        return;
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double ef, eb;
    if (s->cp_comm_type == APS_CP_P2P) { /* hidden behind the chunks */
        ef = lc->cp_fwd > lc->attn_fwd ? lc->cp_fwd - lc->attn_fwd : 0;
        eb = lc->cp_bwd > lc->attn_bwd ? lc->cp_bwd - lc->attn_bwd : 0;
    } else {
        ef = lc->cp_fwd;
        eb = lc->cp_bwd;
    }
    ef = aps_interfered(t, lc->cp_fwd, ef);
    eb = aps_interfered(t, lc->cp_bwd, eb);
    /* the layers whose attention runs again in the backward, its context-
     * parallel exchange with it (the ring is inside the attention
     * function: TE's AttnFuncWithCPAndKVP2P): the fully recomputed ones,
     * and under selective recompute the others too when the attention
     * kernel is recomputed (Megatron's core_attn module; op-level
     * checkpointing of an attention its policy does not see, opsac.c) */
    double ra = rc;
    if (s->layer_recompute == APS_RECOMPUTE_SELECTIVE &&
        (aps_profile(t)->op_sac_selective
             ? aps_op_sac_attention_recomputed(t)
             : (aps_recompute_modules(t, s) & APS_RCM_CORE_ATTN) != 0u))
        ra = L;
    st->cp_total = L * (lc->cp_fwd + lc->cp_bwd) + ra * lc->cp_fwd;
    st->cp_exposed_fwd = L * ef;
    st->cp_exposed_bwd = L * eb + ra * ef;
}


/** Host copies of rank i's saved activations per micro-batch: the layers
 *  Megatron's --cpu-offloading-num-layers offloads whole, or what the
 *  fine-grained offload modules move (offload.c), each layer's going out
 *  beside the next layer's forward and back beside the backward
 *  (aps_recipe_offload_times). */
static void stage_offload(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, const aps_layer_cost *lc,
                          int64_t i, double layer_fwd, double layer_bwd,
                          aps_stage_time *st)
{
    int64_t kept = lay->layers[i] - lay->recompute[i];
    int64_t layers = aps_recipe_offload_layers(t, kept, lay->v);
    double bytes = lc->act_full;
    if (t->offload_modules != 0u) {
        double margin;
        int64_t run = aps_layout_run_layers(lay, i) -
                      aps_layout_run_recompute(lay, i);
        double total = aps_offload_stage_bytes(m, t, s, lay, lc, i, &margin);
        layers = run;
        bytes = run > 0 ? (total - margin) / (double)run : 0.0;
    }
    aps_recipe_offload_times(&c->device, layers, bytes, layer_fwd, layer_bwd,
                             &st->offload_total, &st->offload_exposed_fwd,
                             &st->offload_exposed_bwd);
}

/** The combine's share of an MoE layer's dispatch and combine
 *  all-to-all: the combine returns every dispatched token's hidden state
 *  to its source, the same bytes each way (Megatron-Core
 *  MoEAlltoAllTokenDispatcher: token_dispatch and token_combine exchange
 *  the same output_splits / input_splits, reversed). */
#define APS_COMBINE_SHARE 0.5

/** The host's launches of rank i's layers, the GPU's gaps between their
 *  kernels, and the GPU forward of one MoE layer before its dispatch sync
 *  (attention, norm, router: the layer's forward without the FFN it
 *  replaces) and after it (the MoE block and its exposed dispatch and
 *  combine), each with its kernels' gaps.  The layers whose forward
 *  kernels the backward launches again: the fully recomputed ones, and
 *  under op-level selective checkpointing every layer (opsac.c: every
 *  elementwise op runs again; the few saved matmuls' launches among
 *  them are counted too, an upper bound). */
static void stage_host(const aps_cluster *c, const aps_training *t,
                       const aps_strategy *s, const aps_layout *lay,
                       const aps_layer_cost *lc, const aps_moe_stage_cost *mo,
                       int64_t i, double layer_fwd, aps_stage_time *st)
{
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    if (aps_op_sac_on(t, s))
        rc = L;
    aps_launch_costs host = aps_host_launch_costs(&c->device);
    aps_launch_costs gap = aps_gpu_gap_costs(&c->device);
    aps_host_stage(&host, &lc->host, L, mo->moe_layers, rc, &st->host);
    aps_host_stage(&gap, &lc->kernels, L, mo->moe_layers, rc, &st->gaps);
    if (mo->moe_layers > 0) {
        /* an MLA / DSA model's attention is the layer cost's plus its
         * delta, which comp_fwd adds on every layer (moe.c) */
        st->moe_g_pre = layer_fwd - lc->moe.dense_mlp_fwd + mo->attn_delta_fwd +
                        mo->router_floor_fwd + st->gaps.attn + st->gaps.moe_pre;
        st->moe_g_post = lc->moe.moe_fwd + st->ep_exposed_fwd / mo->moe_layers +
                         st->gaps.moe_post;
        /* the combine moves the dispatch's bytes back: half the exposed
         * all-to-all (token_dispatcher.py token_dispatch / token_combine) */
        st->moe_g_tail = APS_COMBINE_SHARE * st->ep_exposed_fwd / mo->moe_layers;
    }
}

void aps_stage_time_build(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, const aps_dp_plan *plan,
                          const aps_layer_cost *lc, int64_t i, bool edges,
                          aps_stage_time *st)
{
    bool first = edges && i == 0, last = edges && i == lay->p - 1;
    aps_layer_cost own; /* a hybrid rank's layers (aps_stage_layer_cost) */
    lc = aps_stage_layer_cost(m, c, t, s, lay, lc, i, &own);
    memset(st, 0, sizeof *st);
    layers_compute(s, lay, lc, i, st);
    aps_moe_stage_cost mo;
    aps_moe_stage(m, t, s, lay, &lc->moe, i, &mo);
    stage_moe(t, &mo, st);
    edges_compute(m, c, t, s, lay, first, last, st);
    stage_tp(m, c, t, s, lay, lc, &mo, i, first, last, st);
    double layer_fwd, layer_bwd;
    layer_seconds(lc, &layer_fwd, &layer_bwd);
    stage_offload(m, c, t, s, lay, lc, i, layer_fwd, layer_bwd, st);
    stage_cp(t, s, lay, lc, i, st);
    aps_fsdp_stage_times(m, c, t, s, lay, plan, &lc->moe, i, first, last,
                         st);
    stage_host(c, t, s, lay, lc, &mo, i, layer_fwd, st);
}

/** GPU seconds of one micro-batch's forward and backward on the rank,
 *  the gaps between its kernels included. */
static void stage_gpu_fwd_bwd(const aps_stage_time *st, double *tf, double *tb)
{
    *tf = st->comp_fwd + st->tp_exposed_fwd + st->cp_exposed_fwd +
          st->fsdp_exposed_fwd + st->offload_exposed_fwd + st->ep_exposed_fwd +
          st->gaps.fwd;
    *tb = st->comp_bwd + st->recompute + st->tp_exposed_bwd +
          st->cp_exposed_bwd + st->fsdp_exposed_bwd + st->offload_exposed_bwd +
          st->ep_exposed_bwd + st->gaps.bwd;
}

void aps_stage_fwd_bwd(const aps_stage_time *st, double *tf, double *tb)
{
    double gf, gb;
    stage_gpu_fwd_bwd(st, &gf, &gb);
    *tf = aps_host_bound_fwd(&st->host, gf, st->moe_g_pre, st->moe_g_post,
                             st->moe_g_tail);
    *tb = gb > st->host.bwd ? gb : st->host.bwd;
}

/** Seconds one micro-batch on the rank waits for the host's launches
 *  (forward and backward): what the host adds to the GPU's time. */
static double stage_host_exposed(const aps_stage_time *st)
{
    double gf, gb, tf, tb;
    stage_gpu_fwd_bwd(st, &gf, &gb);
    aps_stage_fwd_bwd(st, &tf, &tb);
    return (tf - gf) + (tb - gb);
}

/** tm += sign x (a - b), every category. */
static void stage_time_add_diff(aps_stage_time *tm, const aps_stage_time *a,
                                const aps_stage_time *b, double sign)
{
#define APS_ADD_DIFF(f) tm->f += sign * (a->f - b->f)
    APS_ADD_DIFF(comp_fwd);
    APS_ADD_DIFF(comp_bwd);
    APS_ADD_DIFF(recompute);
    APS_ADD_DIFF(tp_total);
    APS_ADD_DIFF(tp_exposed_fwd);
    APS_ADD_DIFF(tp_exposed_bwd);
    APS_ADD_DIFF(cp_total);
    APS_ADD_DIFF(cp_exposed_fwd);
    APS_ADD_DIFF(cp_exposed_bwd);
    APS_ADD_DIFF(ag_total);
    APS_ADD_DIFF(ag_exposed);
    APS_ADD_DIFF(rs_total);
    APS_ADD_DIFF(rs_exposed);
    APS_ADD_DIFF(fsdp_exposed_fwd);
    APS_ADD_DIFF(fsdp_exposed_bwd);
    APS_ADD_DIFF(offload_total);
    APS_ADD_DIFF(offload_exposed_fwd);
    APS_ADD_DIFF(offload_exposed_bwd);
    APS_ADD_DIFF(wgrad);
#undef APS_ADD_DIFF
}

void aps_stage_time_placed(const aps_model *m, const aps_cluster *c,
                           const aps_training *t, const aps_strategy *s,
                           const aps_layout *lay, const aps_dp_plan *plan,
                           const aps_layer_cost *lc, int64_t i,
                           aps_stage_time *tm)
{
    aps_stage_time_build(m, c, t, s, lay, plan, lc, i, true, tm);
    /* On the V (ZB-V, DualPipeV) the last stage, 2p - 1, is rank 0's
     * second chunk: the output layer and loss run there (schedule.c puts
     * rank p - 1's fixed work on it), so rank 0's time gains and rank
     * p - 1's loses them. */
    if (lay->p > 1 && aps_schedule_v_shaped(lay->sched) &&
        (i == 0 || i == lay->p - 1)) {
        aps_stage_time with, without;
        aps_stage_time_build(m, c, t, s, lay, plan, lc, lay->p - 1, true,
                             &with);
        aps_stage_time_build(m, c, t, s, lay, plan, lc, lay->p - 1, false,
                             &without);
        stage_time_add_diff(tm, &with, &without, i == 0 ? 1.0 : -1.0);
    }
}

void aps_stage_time_rank(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         const aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, int64_t i,
                         aps_stage_time *tm, aps_stage_times *r)
{
    aps_stage_time own; /* the rank with its own edges */
    aps_stage_time_build(m, c, t, s, lay, plan, lc, i, true, &own);
    aps_stage_fwd_bwd(&own, &r->tf[i], &r->tb[i]);
    r->tw[i] = own.wgrad;
    r->ef[i] = r->eb[i] = r->ew[i] = 0.0;
    if (lay->p > 1 && (i == 0 || i == lay->p - 1)) {
        aps_stage_time mid; /* the same rank without embedding / output */
        double mf, mb;
        aps_stage_time_build(m, c, t, s, lay, plan, lc, i, false, &mid);
        aps_stage_fwd_bwd(&mid, &mf, &mb);
        r->ef[i] = r->tf[i] - mf;
        r->eb[i] = r->tb[i] - mb;
        r->ew[i] = own.wgrad - mid.wgrad;
    }
    aps_stage_time_placed(m, c, t, s, lay, plan, lc, i, tm);
}

void aps_stage_time_perf(const aps_stage_time *slow, int64_t m,
                         aps_estimate *out)
{
    double mb = (double)m;
    aps_set_perf(out, APS_PERF_COMPUTE_FWD, mb * slow->comp_fwd,
                 mb * slow->comp_fwd);
    aps_set_perf(out, APS_PERF_COMPUTE_BWD, mb * slow->comp_bwd,
                 mb * slow->comp_bwd);
    aps_set_perf(out, APS_PERF_RECOMPUTE, mb * slow->recompute,
                 mb * slow->recompute);
    aps_set_perf(out, APS_PERF_TP_COMM, mb * slow->tp_total,
                 mb * (slow->tp_exposed_fwd + slow->tp_exposed_bwd));
    aps_set_perf(out, APS_PERF_CP_COMM, mb * slow->cp_total,
                 mb * (slow->cp_exposed_fwd + slow->cp_exposed_bwd));
    aps_set_perf(out, APS_PERF_FSDP_ALLGATHER, mb * slow->ag_total,
                 mb * slow->ag_exposed);
    aps_set_perf(out, APS_PERF_FSDP_REDUCESCATTER, mb * slow->rs_total,
                 mb * slow->rs_exposed);
    aps_set_perf(out, APS_PERF_OFFLOAD, mb * slow->offload_total,
                 mb * (slow->offload_exposed_fwd + slow->offload_exposed_bwd));
    aps_set_perf(out, APS_PERF_EP_COMM, mb * slow->ep_total,
                 mb * (slow->ep_exposed_fwd + slow->ep_exposed_bwd));
    aps_set_perf(out, APS_PERF_HOST, mb * (slow->host.fwd + slow->host.bwd),
                 mb * stage_host_exposed(slow));
    aps_set_perf(out, APS_PERF_KERNEL_GAPS, mb * (slow->gaps.fwd + slow->gaps.bwd),
                 mb * (slow->gaps.fwd + slow->gaps.bwd));
}
