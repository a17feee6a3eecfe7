/*
 * estimate.c -- one strategy end to end (MODELING.md s.3, s.4): runs the
 * modules in order and computes nothing itself.
 *
 *   checks                        check.c     aps_check_all
 *   layout (layers per rank)      pipeline.c  aps_layout_build
 *   sharding plan, activations    memory.c    aps_dp_plan_build,
 *                                             aps_layer_activations
 *   one layer's times             compute.c   aps_layer_times
 *   balanced layers, recompute    balance.c   aps_balance_layout
 *   per-stage memory              memory.c    aps_stage_memory
 *   per-stage times               stagetime.c aps_stage_time_rank
 *   bubble and PP p2p             schedule.c  aps_pipeline_perf
 *   DP / HSDP sync, optimizer     sync.c      aps_sync_perf
 *   FLOPs, tokens/s, MFU, HFU     throughput.c aps_throughput
 *   memory limit                  check.c     aps_check_memory_limit
 *
 * Step time: with t_f, t_b the forward and backward time of one
 * micro-batch on the slowest stage (compute plus the exposed TP, CP and
 * FSDP communication inside it) and m the micro-batches of one pipeline
 * schedule,
 *   step = G (m (t_f + t_b) + bubble
 *             + exposed pp p2p + exposed DP / HSDP sync) + optimizer,
 * G the schedules a step runs (1, or the passes of training.
 * local_batch_size: repeat_passes),
 * the bubble being that stage's idle time in the simulated schedule
 * (schedule.c; (p-1)/v (t_f + t_b) for equal stages, Narayanan et al.
 * SC'21 s.2.2, which it keeps for strategies over the memory limit).
 * Every category is reported as total and exposed; step = sum of exposed.
 */
#include <string.h>
#include "internal.h"

/** What the stages leave for the per-step terms: the slowest stage's
 *  times (largest t_f + t_b, the first on ties) and every rank's. */
typedef struct {
    aps_stage_time slow;
    double tf, tb;
    aps_stage_times ranks;
} stage_pass;

/** The strategy the layout runs: under auto_recompute a layout that
 *  recomputes no layer runs without recompute -- the result says "none"
 *  and the launch files write no recompute -- so it is priced as s
 *  without recompute (buf), not as a full-recompute strategy, which takes
 *  the whole-iteration CUDA graph (layerprog.c
 *  aps_cuda_graph_effective_scope); else s. */
static const aps_strategy *run_strategy(const aps_strategy *s,
                                        const aps_layout *lay,
                                        aps_strategy *buf)
{
    if (!(s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL))
        return s;
    for (int64_t i = 0; i < lay->p; i++)
        if (lay->recompute[i] > 0)
            return s;
    *buf = *s;
    buf->auto_recompute = false;
    buf->layer_recompute = APS_RECOMPUTE_NONE;
    return buf;
}

aps_cuda_graph_scope aps_estimate_graph_scope(const aps_training *t,
                                              const aps_strategy *s,
                                              const aps_estimate *e)
{
    aps_strategy buf = *s;
    if (s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL) {
        bool any = false;
        for (int64_t i = 0; i < e->num_stages; i++)
            any = any || e->stages[i].recompute_layers > 0;
        if (!any)
            buf.layer_recompute = APS_RECOMPUTE_NONE;
    }
    return aps_cuda_graph_effective_scope(t, &buf);
}

/** Memory and times of every stage into out->stages and sp; the stage
 *  with the most memory into out (worst_stage, mem, mem_peak). */
static void run_stages(const aps_model *m, const aps_cluster *c,
                       const aps_training *t, const aps_strategy *s,
                       const aps_layout *lay, const aps_dp_plan *plan,
                       const aps_layer_cost *lc, aps_estimate *out,
                       stage_pass *sp)
{
    int64_t worst = 0;
    for (int64_t i = 0; i < lay->p; i++) {
        aps_stage_estimate *st = &out->stages[i];
        st->first_layer = lay->first[i];
        st->mtp_layers = aps_layout_mtp_layers(lay, i);
        st->num_layers = lay->layers[i];
        st->recompute_layers = lay->recompute[i];
        aps_stage_memory(m, c, t, s, lay, plan, lc, i, st);
        aps_stage_time tm; /* the rank as the schedule runs it */
        aps_stage_time_rank(m, c, t, s, lay, plan, lc, i, &tm, &sp->ranks);
        aps_stage_fwd_bwd(&tm, &st->time_fwd, &st->time_bwd);
        st->host_fwd = tm.host.fwd;
        st->host_bwd = tm.host.bwd;
        if (st->time_fwd + st->time_bwd > sp->tf + sp->tb || i == 0) {
            sp->slow = tm;
            sp->tf = st->time_fwd;
            sp->tb = st->time_bwd;
        }
        if (st->mem_total > out->stages[worst].mem_total)
            worst = i;
    }
    out->worst_stage = worst;
    memcpy(out->mem, out->stages[worst].mem, sizeof out->mem);
    out->mem_peak = out->stages[worst].mem_total;
    out->mem_allocated = out->stages[worst].mem_allocated;
    out->mem_reserved = out->stages[worst].mem_reserved;
    out->mem_limited = out->stages[worst].mem_limited;
}

/** A step of lay->passes pipeline schedules (training.local_batch_size):
 *  every term of one pass -- its micro-batches, bubble, point-to-point
 *  and the data-parallel gathers and reduction at its last backward
 *  (torch.distributed.pipelining stage.py backward_maybe_with_nosync, as
 *  TorchTitan and AutoModel run it) -- once per pass; the optimizer once
 *  per step (TorchTitan trainer.py train_step: gradient accumulation
 *  then optimizers.step). */
static void repeat_passes(const aps_layout *lay, aps_estimate *out)
{
    if (lay->passes <= 1)
        return;
    double g = (double)lay->passes;
    for (int k = 0; k < APS_PERF_COUNT; k++) {
        if (k == APS_PERF_OPTIMIZER)
            continue;
        out->perf_total[k] *= g;
        out->perf_exposed[k] *= g;
    }
}

/** The per-step terms from the stages: m micro-batches of the slowest
 *  stage, the pipeline's, data parallelism's and the optimizer's; the
 *  step time is the sum of their exposed parts. */
static aps_status step_terms(const aps_model *m, const aps_cluster *c,
                             const aps_training *t, const aps_strategy *s,
                             const aps_layout *lay, const aps_dp_plan *plan,
                             const stage_pass *sp, aps_estimate *out)
{
    aps_stage_time_perf(&sp->slow, lay->m, out);
    aps_status st = lay->p > 1 ? aps_pipeline_perf(m, c, t, s, lay,
                                                   &sp->ranks, sp->tf, sp->tb,
                                                   out)
                               : APS_OK;
    if (st != APS_OK)
        return st;
    aps_sync_perf(m, c, t, s, lay, plan, sp->tf, sp->tb, out);
    repeat_passes(lay, out);
    out->step_time = 0.0;
    for (int k = 0; k < APS_PERF_COUNT; k++)
        out->step_time += out->perf_exposed[k];
    return APS_OK;
}

aps_status aps_estimate_run(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            aps_estimate *out)
{
    if (m == NULL || c == NULL || t == NULL || s == NULL || out == NULL)
        return APS_EINVAL;
    memset(out, 0, offsetof(aps_estimate, stages));
    out->worst_stage = -1;
    aps_param_counts pc;
    aps_model_param_counts(m, &pc);
    out->params_total = pc.total;
    out->mem_limit = aps_memory_limit(c, t);
    out->reason = aps_check_all(m, c, t, s, out->reason_msg,
                                sizeof out->reason_msg);
    if (out->reason != APS_REASON_NONE)
        return APS_OK;

    aps_layout lay;
    out->reason = aps_layout_build(m, t, s, &lay, out->reason_msg,
                                   sizeof out->reason_msg);
    if (out->reason != APS_REASON_NONE)
        return APS_OK;
    aps_dp_plan plan;
    aps_dp_plan_build(t, s, &plan);
    aps_layer_cost lc;
    aps_layer_activations(m, t, s, NULL, &lc);
    aps_layer_times(m, c, t, s, NULL, &lc);
    aps_moe_layer_cost(m, c, t, s, &lc.moe);
    aps_balance_layout(m, c, t, s, &lay, &plan, &lc, out->mem_limit);
    out->reason = aps_layout_dsa_check(m, &lay, out->reason_msg,
                                       sizeof out->reason_msg);
    if (out->reason != APS_REASON_NONE)
        return APS_OK;
    aps_strategy none_s;
    if (run_strategy(s, &lay, &none_s) != s) {
        s = &none_s;
        aps_layer_activations(m, t, s, NULL, &lc);
        aps_layer_times(m, c, t, s, NULL, &lc);
        aps_moe_layer_cost(m, c, t, s, &lc.moe);
    }
    out->micro_batch_num = lay.m * lay.passes;
    out->gradient_accumulation_steps = lay.passes;
    out->vocab_padded = lay.vocab_padded;
    out->devices_used = aps_strategy_devices(s);
    out->num_stages = lay.p;

    stage_pass sp; /* sp.ranks is filled for ranks 0 .. p-1 */
    memset(&sp.slow, 0, sizeof sp.slow);
    sp.tf = sp.tb = 0.0;
    run_stages(m, c, t, s, &lay, &plan, &lc, out, &sp);
    aps_status st = step_terms(m, c, t, s, &lay, &plan, &sp, out);
    if (st == APS_ENOMEM) {
        /* near the address-space limit the simulation's reserved buffers
         * can be what is missing: handed back, it runs once more with
         * buffers allocated per use (aps_schedule_release) */
        aps_schedule_release();
        st = step_terms(m, c, t, s, &lay, &plan, &sp, out);
    }
    if (st != APS_OK)
        return st;
    aps_throughput(m, c, t, s, &lay, out);
    out->reason = aps_check_memory_limit(c, t, out, lay.p);
    out->feasible = out->reason == APS_REASON_NONE;
    return APS_OK;
}
