/*
 * sync.c -- data-parallel and sharding communication and the optimizer
 * step (MODELING.md s.4, "Time per step"):
 *   - FSDP / ZeRO-3, per micro-batch: parameter all-gathers (forward, and
 *     again in the backward when resharding) and gradient reduce-scatters
 *     over the sharding group, hidden behind training.fsdp_overlap of the
 *     compute by prefetch except the first unit's (FSDP2 implicit
 *     prefetch, one unit ahead); under PP with TorchTitan once per step
 *     (torch/distributed/pipelining/stage.py), the backward's gathers
 *     still per micro-batch when resharding after forward; Megatron-FSDP
 *     gathers the modules outside its units once per step (mfsdp.c);
 *   - once per step: the DP gradient all-reduce, or with ZeRO-1/2 a
 *     reduce-scatter and a parameter all-gather (Rajbhandari et al. 2020,
 *     ZeRO, s.5), hidden behind training.dp_overlap of the last backward;
 *     HSDP's all-reduce of the gradient shard across replicas;
 *   - the optimizer step: its state traffic through HBM.
 * Collective times are comm.c's ring formulas on the group's link.
 */
#include "internal.h"

/** Adam step bytes per parameter moved through HBM: read+write fp32
 *  master, m and v (3 x 8) and read the gradient; plus writing the bf16
 *  working copy where one exists (torch.optim.AdamW foreach / Apex
 *  FusedAdam streaming kernels). */
#define APS_ADAM_STATE_TRAFFIC 24.0
/** SGD with momentum: read+write master and momentum (2 x 8). */
#define APS_SGD_STATE_TRAFFIC 16.0

static double max0(double x) { return x > 0.0 ? x : 0.0; }

/** Link of a data-parallel or sharding group (aps_group_link), with the
 *  bandwidth across nodes capped at the framework's rails x NIC when it
 *  does not spread its collectives over every NIC of a node
 *  (training.dp_collective_rails, else the profile's dp_rails). */
static void dp_group_link(const aps_cluster *c, const aps_training *t,
                          int64_t stride, int64_t size, double *bw,
                          double *alpha)
{
    if (aps_group_link(c, stride, size, bw, alpha))
        return;
    int64_t rails = t->dp_collective_rails > 0 ? t->dp_collective_rails
                                               : aps_profile(t)->dp_rails;
    double cap = (double)rails * c->device.inter_node_bandwidth *
                 c->device.collective_efficiency;
    if (rails > 0 && cap < *bw)
        *bw = cap;
}

/** Exposed FSDP time of one micro-batch into st: the forward gathers
 *  (ag) and the backward's gathers (ag_b) and reduce-scatters (rs) hidden
 *  behind training.fsdp_overlap of the pass's compute, the first of
 *  `units` FSDP units of each pass always exposed (prefetch hides a
 *  unit's gather behind the previous unit's compute). */
static void fsdp_exposed(const aps_training *t, double units, double ag,
                         double ag_b, double rs, aps_stage_time *st)
{
    double win_f = t->fsdp_overlap * st->comp_fwd;
    double win_b = t->fsdp_overlap * (st->comp_bwd + st->recompute);
    double ef = aps_interfered(t, ag, ag - win_f > ag / units ? ag - win_f
                                                              : ag / units);
    double bwd = ag_b + rs;
    double eb = aps_interfered(t, bwd, bwd - win_b > bwd / units
                                           ? bwd - win_b : bwd / units);
    st->ag_total = ag + ag_b;
    st->rs_total = rs;
    st->ag_exposed = ef + (bwd > 0 ? eb * ag_b / bwd : 0.0);
    st->rs_exposed = bwd > 0 ? eb * rs / bwd : 0.0;
    st->fsdp_exposed_fwd = ef;
    st->fsdp_exposed_bwd = eb;
}

/** The routed experts' FSDP collectives of one micro-batch (held: what
 *  the rank holds of them): their all-gather into *ag and their
 *  gradients' reduce-scatter into *rs, over the expert shard group
 *  (aps_moe_expert_shard, etp x ep apart) when FSDP shards them (more
 *  than one rank): TorchTitan's and AutoModel's fully_shard(experts) on
 *  the expert mesh, Megatron-FSDP's units over the expert-data-parallel
 *  group (mcore_fsdp_adapter.py:398-430 @ d98e8a64); grad_bytes per
 *  reduced element. */
static void expert_fsdp_times(const aps_cluster *c, const aps_training *t,
                              const aps_strategy *s, const aps_dp_plan *plan,
                              const aps_moe_held *held, double grad_bytes,
                              double *ag, double *rs)
{
    int64_t E = aps_moe_expert_shard(t, s, plan);
    *ag = *rs = 0.0;
    if (E <= 1 || !(held->experts > 0))
        return;
    double bw, alpha;
    aps_group_link(c, aps_moe_etp(s) * aps_moe_ep(s), E, &bw, &alpha);
    *ag = aps_allgather_time(
        E, aps_recipe_gather_bytes(t, held->experts, held->expert_matmul), bw,
        alpha);
    *rs = aps_reducescatter_time(E, grad_bytes * held->experts, bw, alpha);
}

void aps_fsdp_stage_times(const aps_model *m, const aps_cluster *c,
                          const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay, const aps_dp_plan *plan,
                          const aps_moe_cost *mc, int64_t i, bool first,
                          bool last, aps_stage_time *st)
{
    if (!plan->fsdp_like)
        return;
    double bw, alpha;
    int64_t G = plan->shard_group;
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    dp_group_link(c, t, lay->t, G, &bw, &alpha);
    /* the MoE layers' own non-expert parameters, not the dense FFN's */
    aps_moe_held held;
    aps_moe_stage_params(m, lay, mc, i, &held);
    double psi = aps_stage_params(m, lay, i) + held.psi;
    double matmul = aps_stage_matmul_params(m, lay, i) + held.matmul;
    double ag = aps_allgather_time(G, aps_recipe_gather_bytes(t, psi, matmul),
                                   bw, alpha);
    double ag_b = s->reshard_after_forward ? ag : 0.0;
    /* Megatron-FSDP keeps the modules outside its units (embedding,
     * output layer) gathered for the step (mfsdp.c): their gather once per
     * step, a 1/m share here, and none in the backward */
    if (plan->mfsdp == APS_MFSDP_OPTIM_GRADS_PARAMS) {
        double outside = aps_stage_nonunit_params(m, lay, i);
        ag_b = aps_allgather_time(
            G, aps_recipe_gather_bytes(t, psi - outside, matmul), bw, alpha);
        ag = ag_b + aps_allgather_time(
                        G, APS_ACT_BYTES * outside, bw, alpha) / (double)lay->m;
    }
    /* FSDP under PP (profile pp_unsharded_grads): gathered in the first
     * micro-batch, reduced after the last: once per step, here a 1/m share
     * of each micro-batch.  The pipeline turns off only the reshard after
     * backward (set_reshard_after_backward(False)); with
     * reshard_after_forward (TorchTitan fsdp_reshard_after_forward =
     * "always") each forward still frees the stage's parameters, so every
     * micro-batch's backward gathers them again (the warm-up forwards'
     * gathers, fewer than p per step, are not counted). */
    bool once = lay->p > 1 && aps_profile(t)->pp_unsharded_grads;
    double per_mb = once ? 1.0 / (double)lay->m : 1.0;
    ag *= per_mb;
    /* deferred gradient sync (profile defer_grad_sync, AutoModel): the
     * parameters are gathered every micro-batch, the fp32 gradients
     * reduce-scattered once per step */
    bool deferred = once || aps_recipe_defer_grad_sync(t);
    double rs_per_mb = deferred ? 1.0 / (double)lay->m : 1.0;
    /* ZeRO-3 recompute releases weights it will not reuse soon */
    if (rc > 0 && s->reshard_after_forward)
        ag_b += aps_allgather_time(
            G, APS_ACT_BYTES * rc * aps_regathered_params(
                                        m, lay->t,
                                        aps_profile(t)->reuse_distance),
            bw, alpha);
    double grad_bytes = deferred ? APS_FP32_BYTES : plan->grad_reduce;
    double rs = rs_per_mb * aps_reducescatter_time(G, grad_bytes * psi, bw,
                                                   alpha);
    /* the experts, gathered and reduced as the rest */
    double ag_e, rs_e;
    expert_fsdp_times(c, t, s, plan, &held, grad_bytes, &ag_e, &rs_e);
    ag += per_mb * ag_e;
    ag_b += s->reshard_after_forward ? ag_e : 0.0;
    rs += rs_per_mb * rs_e;
    double units = L + (first ? 1.0 : 0.0) + (last ? 1.0 : 0.0);
    fsdp_exposed(t, units, ag, ag_b, rs, st);
}

/** Parameters of the rank holding the most (the first such rank), and the
 *  matrix parameters of its layers on one TP rank. */
static void largest_stage(const aps_model *m, const aps_layout *lay,
                          const aps_estimate *out, double *psi,
                          double *matmul)
{
    *psi = *matmul = 0.0;
    for (int64_t i = 0; i < lay->p; i++)
        if (out->stages[i].params > *psi) {
            *psi = out->stages[i].params;
            *matmul = aps_stage_matmul_params(m, lay, i);
        }
}

/** DP_GRAD_SYNC without weight sharding over plan->dp_group ranks: an
 *  all-reduce of the gradients of psi parameters, or with ZeRO-1/2 a
 *  reduce-scatter and an all-gather of the updated parameters (matmul of
 *  them in linear layers) over the sharding group, and under Megatron's
 *  partial distributed optimizer (plan->replicate instances) an all-reduce
 *  of the gradient shard across the instances (param_and_grad_buffer.py
 *  :725-760, 810-840 @ d98e8a64); tf, tb hide them. */
static void dp_sync(const aps_cluster *c, const aps_training *t,
                    const aps_strategy *s, const aps_dp_plan *plan,
                    int64_t m, double psi, double matmul, double tf,
                    double tb, aps_estimate *out)
{
    const aps_state_bytes *by = &plan->bytes;
    double mb = (double)m;
    double bw, alpha;
    int64_t S = plan->shard_group; /* dp_group but for partial DistOpt */
    dp_group_link(c, t, s->tp_degree, S, &bw, &alpha);
    double grads = plan->grad_reduce * psi;
    double sync, gather = 0.0, times = 1.0;
    if (by->shard_optimizer) { /* ZeRO-1/2: reduce-scatter, gather */
        sync = aps_reducescatter_time(S, grads, bw, alpha);
        gather = aps_allgather_time(
            S, aps_recipe_gather_bytes(t, psi, matmul), bw, alpha);
        if (plan->replicate > 1) {
            dp_group_link(c, t, s->tp_degree * S, plan->replicate, &bw,
                          &alpha);
            sync += aps_allreduce_time(plan->replicate, grads / (double)S,
                                       bw, alpha);
        }
        /* ZeRO-2 keeps only its gradient shard, so it reduce-scatters
         * after every micro-batch's backward, not once per step
         * (Rajbhandari et al. 2020 s.5.2; deepspeedai/DeepSpeed#2252) */
        if (by->shard_grads)
            times = mb;
    } else {
        sync = aps_allreduce_time(plan->dp_group, grads, bw, alpha);
    }
    /* TorchTitan's DDP all-reduces after every micro-batch */
    if (aps_profile(t)->sync_every_microbatch)
        times = mb;
    double exposed =
        times * aps_interfered(t, sync, max0(sync - t->dp_overlap * tb)) +
        aps_interfered(t, gather, max0(gather - t->dp_overlap * tf));
    aps_set_perf(out, APS_PERF_DP_GRAD_SYNC, times * sync + gather, exposed);
}

/** How many times a step the gradients are reduced across HSDP replicas:
 *  every micro-batch under a profile that syncs after each backward
 *  (FSDP2 in TorchTitan) unless the gradients wait for the last one (a
 *  pipeline stage's, PyTorch's set_requires_gradient_sync(False), or a
 *  deferred sync: aps_fsdp_grads_deferred), else once. */
static double replica_syncs(const aps_training *t, const aps_layout *lay)
{
    return aps_profile(t)->sync_every_microbatch &&
                   !aps_fsdp_grads_deferred(t, lay)
               ? (double)lay->m : 1.0;
}

/** HSDP_REPLICATE_SYNC: the all-reduce of the gradient shard (psi
 *  parameters over the sharding group) across plan->replicate replicas,
 *  replica_syncs times, hidden behind dp_overlap of tb. */
static void hsdp_sync(const aps_cluster *c, const aps_training *t,
                      const aps_strategy *s, const aps_dp_plan *plan,
                      const aps_layout *lay, double psi, double tb,
                      aps_estimate *out)
{
    double bw, alpha;
    dp_group_link(c, t, s->tp_degree * plan->shard_group, plan->replicate,
                  &bw, &alpha);
    double shard = plan->grad_reduce * psi / (double)plan->shard_group;
    double ar = aps_allreduce_time(plan->replicate, shard, bw, alpha);
    /* FSDP2 (TorchTitan) reduces across replicas after every micro-batch's
     * backward; Megatron-FSDP on the last micro-batch's reduce only
     * (megatron_fsdp.py:776-786 @ d98e8a64: outer_fsdp_group_grad_reduce
     * needs is_last_microbatch) */
    double times = replica_syncs(t, lay);
    aps_set_perf(out, APS_PERF_HSDP_REPLICATE_SYNC, times * ar,
                 times * aps_interfered(t, ar, max0(ar - t->dp_overlap * tb)));
}

/** The routed experts' gradient reduction over the expert-data-parallel
 *  group (aps_moe_edp ranks, etp x ep apart: Megatron-Core's
 *  expert_data_parallel group, parallel_state.py) for expert_params on
 *  the busiest rank, added to DP_GRAD_SYNC: a reduce-scatter and an
 *  all-gather of the updated parameters under a sharded optimizer, else
 *  an all-reduce; under HSDP the reduce-scatter and gather span the
 *  expert shard group (aps_moe_expert_shard) and the shard is
 *  all-reduced across the replicas; hidden behind dp_overlap of tb (tf
 *  for the gather). */
static void expert_sync(const aps_cluster *c, const aps_training *t,
                        const aps_strategy *s, const aps_dp_plan *plan,
                        const aps_layout *lay, double expert_params,
                        double tf, double tb, aps_estimate *out)
{
    int64_t edp = aps_moe_edp(s), shard = aps_moe_expert_shard(t, s, plan);
    int64_t replicas = edp / shard; /* HSDP's copies of each shard, else 1 */
    if (edp <= 1 || expert_params <= 0)
        return;
    double bw, alpha, sync = 0.0, gather = 0.0;
    int64_t apart = aps_moe_etp(s) * aps_moe_ep(s);
    double grads = plan->grad_reduce * expert_params;
    if (!plan->bytes.shard_optimizer) {
        aps_group_link(c, apart, edp, &bw, &alpha);
        sync = aps_allreduce_time(edp, grads, bw, alpha);
    } else {
        aps_group_link(c, apart, shard, &bw, &alpha);
        /* FSDP gathers and reduces them every micro-batch
         * (aps_fsdp_stage_times); ZeRO-1/2 once a step here */
        if (shard > 1 && !plan->fsdp_like) {
            sync = aps_reducescatter_time(shard, grads, bw, alpha);
            gather = aps_allgather_time(
                shard,
                aps_recipe_gather_bytes(t, expert_params, expert_params), bw,
                alpha);
        }
        if (replicas > 1) {
            /* across HSDP replicas as the dense shard (hsdp_sync) */
            double times = plan->fsdp_like ? replica_syncs(t, lay) : 1.0;
            aps_group_link(c, apart * shard, replicas, &bw, &alpha);
            sync += times * aps_allreduce_time(replicas, grads / (double)shard,
                                               bw, alpha);
        }
    }
    aps_set_perf(out, APS_PERF_DP_GRAD_SYNC,
                 out->perf_total[APS_PERF_DP_GRAD_SYNC] + sync + gather,
                 out->perf_exposed[APS_PERF_DP_GRAD_SYNC] +
                     aps_interfered(t, sync, max0(sync - t->dp_overlap * tb)) +
                     aps_interfered(t, gather,
                                    max0(gather - t->dp_overlap * tf)));
}

/** OPTIMIZER: the state traffic of the optimizer step of psi parameters
 *  (its shard under ZeRO-1 and up) through HBM, plus reading the gradient
 *  and writing the working copy where the weights are held in fewer
 *  bytes than fp32. */
static void optimizer_step(const aps_cluster *c, const aps_training *t,
                           const aps_strategy *s, const aps_dp_plan *plan,
                           double psi, double expert_params,
                           aps_estimate *out)
{
    const aps_state_bytes *by = &plan->bytes;
    double traffic = (t->optimizer == APS_OPT_SGD ? APS_SGD_STATE_TRAFFIC
                                                  : APS_ADAM_STATE_TRAFFIC) +
                     by->grad + (by->weight < APS_FP32_BYTES ? by->weight : 0.0);
    /* bf16 moments (exp_avg_bf16): each read and written in 2 bytes */
    if (t->exp_avg_bf16 && t->optimizer != APS_OPT_SGD)
        traffic -= 2.0 * APS_ADAM_MOMENTS * (APS_FP32_BYTES - APS_ACT_BYTES);
    /* bf16 weights, no master (bf16_weights): the weight and each buffer
     * read and written in 2 bytes, the gradient read */
    if (t->bf16_weights)
        traffic = 2.0 * by->weight + 2.0 * by->optimizer + by->grad;
    double psi_opt = psi / (by->shard_optimizer ? (double)plan->shard_group
                                                : 1.0);
    psi_opt += expert_params / (by->shard_optimizer /* over expert-dp */
                                    ? (double)aps_moe_expert_shard(t, s, plan)
                                    : 1.0);
    double opt = aps_hbm_time(&c->device, psi_opt * traffic);
    aps_set_perf(out, APS_PERF_OPTIMIZER, opt, opt);
}

void aps_sync_perf(const aps_model *m, const aps_cluster *c,
                   const aps_training *t, const aps_strategy *s,
                   const aps_layout *lay, const aps_dp_plan *plan,
                   double tf, double tb, aps_estimate *out)
{
    double psi, matmul;
    largest_stage(m, lay, out, &psi, &matmul);
    if (!plan->fsdp_like && plan->dp_group > 1)
        dp_sync(c, t, s, plan, lay->m, psi, matmul, tf, tb, out);
    if (plan->fsdp_like && plan->replicate > 1)
        hsdp_sync(c, t, s, plan, lay, psi, tb, out);
    double experts = 0.0; /* routed experts' parameters, busiest rank */
    for (int64_t i = 0; i < lay->p; i++)
        if (out->stages[i].expert_params > experts)
            experts = out->stages[i].expert_params;
    expert_sync(c, t, s, plan, lay, experts, tf, tb, out);
    optimizer_step(c, t, s, plan, psi, experts, out);
}
