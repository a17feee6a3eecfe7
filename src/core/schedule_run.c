/*
 * schedule_run.c -- a pipeline schedule simulated on its fixed dependency
 * order (schedule_order.c): one pass over the ops, no event loop.
 *
 * Op q starts at max(its rank free, done[dep] + hop) and finishes at
 * start + t, into done[q]; t and hop depend on the op's kind and stage
 * only (its slot), so they are looked up in two small tables built per
 * call.  The doubles are those of the list scheduler it replaces
 * (schedule.c before, Megatron's order; schedule_zb.c, PyTorch's): the
 * same additions and comparisons on the same operands, and each rank's
 * busy time summed in the rank's own order.  Where the event loop added
 * nothing (no p2p, the first stage's forward, W) this adds a hop of +0.0,
 * which leaves every finish time (>= 0, or NaN) as it is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/** Op kinds (aps_op_kind), the rows of a run's slot tables. */
#define APS_RUN_KINDS (APS_OP_W + 1)

/** Stage j's rank under the schedule (the V of ZBV and DualPipeV: back up
 *  the ranks from j = p on), and its model chunk on that rank into *k. */
static int64_t rank_of(int sched, int64_t p, int64_t j, int64_t *k)
{
    if (aps_schedule_v_shaped(sched) && p > 1) {
        *k = j < p ? 0 : 1;
        return j < p ? j : 2 * p - 1 - j;
    }
    *k = j / p;
    return j % p;
}

/** Per-slot tables of a run: each op kind's seconds on each stage (t) and
 *  the p2p hop before it may start (hop); see aps_schedule_run_order. */
static void slot_tables(const aps_schedule_in *in, int sched,
                        bool hop_always, double *t, double *hop)
{
    int64_t S = in->p * in->v, k;
    for (int64_t j = 0; j < S; j++) {
        double wgt = in->t_wgt ? in->t_wgt[j] : 0.0;
        int64_t r = rank_of(sched, in->p, j, &k);
        bool up = j > 0 && in->p2p &&
                  (hop_always || rank_of(sched, in->p, j - 1, &k) != r);
        bool down = j < S - 1 && in->p2p &&
                    (hop_always || rank_of(sched, in->p, j + 1, &k) != r);
        t[APS_OP_F * S + j] = in->t_fwd[j];
        t[APS_OP_B * S + j] = in->t_bwd[j];
        t[APS_OP_I * S + j] = in->t_bwd[j] - wgt;
        t[APS_OP_W * S + j] = wgt;
        hop[APS_OP_F * S + j] = up ? in->p2p[j - 1] : 0.0;
        hop[APS_OP_B * S + j] = down ? in->p2p[j] : 0.0;
        hop[APS_OP_I * S + j] = hop[APS_OP_B * S + j];
        hop[APS_OP_W * S + j] = 0.0;
    }
}

/** The event of op (started at start, ended at end) into its rank's
 *  timeline, r its entry in the rank's order. */
static void record(const aps_schedule_order *o, const aps_schedule_in *in,
                   const aps_fixed_op *op, const aps_rank_op *r,
                   double start, double end)
{
    int64_t k;
    rank_of(o->sched, o->p, r->j, &k);
    aps_schedule_event ev = {r->kind, r->mb, r->j, (int32_t)k, r->overlap,
                             start, end};
    aps_timeline_add(in->timeline, op->rank, &ev);
}

/** Every rank's order of o, for a timeline: o->rank_ops, or under 1F1B
 *  (whose order keeps none) built into scratch; NULL when out of memory.
 *  Hand back with aps_schedule_scratch_done(APS_SCRATCH_RANK_OPS). */
static aps_rank_op *rank_orders(const aps_schedule_order *o)
{
    if (o->rank_ops != NULL)
        return o->rank_ops;
    int64_t start[APS_MAX_STAGES + 1];
    aps_rank_op *ro = aps_schedule_scratch(APS_SCRATCH_RANK_OPS,
                                           (size_t)o->n * sizeof *ro);
    if (ro != NULL &&
        aps_schedule_orders_1f1b(o->p, o->v, o->m, o->g, ro, start) < 0) {
        aps_schedule_scratch_done(APS_SCRATCH_RANK_OPS, ro);
        ro = NULL;
    }
    return ro;
}

/** Op q of a run: its finish into done[q] and its rank's free_at, its
 *  time onto the rank's busy, its start into *start; false (nothing
 *  changed) when its input finished at a negative time. */
static inline bool run_op(const aps_fixed_op *op, int64_t q, const double *t,
                          const double *hop, double *done, double *free_at,
                          double *busy, double *start)
{
    double arrived = done[op->dep];
    if (arrived < 0.0)
        return false;
    double ready = arrived + hop[op->slot], f = free_at[op->rank];
    double d = t[op->slot];
    *start = ready > f ? ready : f;
    free_at[op->rank] = *start + d;
    busy[op->rank] += d;
    done[q] = *start + d;
    return true;
}

/** One pass over o's ops into free_at and busy per rank; false when an
 *  op waits for a negative finish. */
static bool run_ops(const aps_schedule_order *o, const double *t,
                    const double *hop, double *done, double *free_at,
                    double *busy)
{
    double start;
    done[o->n] = 0.0; /* the sentinel: ops that wait for nothing */
    for (int64_t q = 0; q < o->n; q++)
        if (!run_op(&o->ops[q], q, t, hop, done, free_at, busy, &start))
            return false;
    return true;
}

/** run_ops recording every op into in->timeline, each rank's ops taken
 *  from its order (ro, see rank_orders) in turn. */
static bool run_ops_recorded(const aps_schedule_order *o,
                             const aps_schedule_in *in, const aps_rank_op *ro,
                             const double *t, const double *hop, double *done,
                             double *free_at, double *busy)
{
    int64_t next[APS_MAX_STAGES];
    double start;
    memcpy(next, o->start, (size_t)o->p * sizeof next[0]);
    done[o->n] = 0.0;
    for (int64_t q = 0; q < o->n; q++) {
        const aps_fixed_op *op = &o->ops[q];
        if (!run_op(op, q, t, hop, done, free_at, busy, &start))
            return false;
        record(o, in, op, &ro[next[op->rank]++], start, done[q]);
    }
    return true;
}

aps_status aps_schedule_run_order(const aps_schedule_order *o,
                                  const aps_schedule_in *in, bool hop_always,
                                  aps_schedule_out *out)
{
    double t[APS_RUN_KINDS * APS_MAX_STAGES];
    double hop[APS_RUN_KINDS * APS_MAX_STAGES];
    double free_at[APS_MAX_STAGES] = {0.0}, busy[APS_MAX_STAGES] = {0.0};
    slot_tables(in, o->sched, hop_always, t, hop);
    size_t bytes = ((size_t)o->n + 1) * sizeof(double);
    double *done = aps_schedule_scratch(APS_SCRATCH_FINISH, bytes);
    if (done == NULL)
        return APS_ENOMEM; /* no memory for the finish times */
    aps_status st = APS_OK;
    if (in->timeline == NULL) {
        st = run_ops(o, t, hop, done, free_at, busy) ? APS_OK : APS_EINVAL;
    } else {
        aps_rank_op *ro = rank_orders(o);
        st = ro == NULL ? APS_ENOMEM /* no memory for the rank orders */
             : run_ops_recorded(o, in, ro, t, hop, done, free_at, busy)
                 ? APS_OK
                 : APS_EINVAL;
        if (ro != o->rank_ops)
            aps_schedule_scratch_done(APS_SCRATCH_RANK_OPS, ro);
    }
    aps_schedule_scratch_done(APS_SCRATCH_FINISH, done);
    if (st != APS_OK)
        return st;
    for (int64_t i = 0; i < o->p; i++) {
        if (free_at[i] > out->step)
            out->step = free_at[i];
        if (busy[i] > out->busy_max) {
            out->busy_max = busy[i];
            out->slowest_rank = i;
        }
    }
    out->bubble = out->step - out->busy_max;
    return APS_OK;
}
