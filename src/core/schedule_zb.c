/*
 * schedule_zb.c -- zero-bubble pipeline schedules, as PyTorch pipelining
 * orders them (torch/distributed/pipelining/schedules.py, pytorch/pytorch
 * 1fd7abc2f521e4429a29c3088e39ebaca20f4698; DualPipeV from 00722e648b74
 * 0f91d0e71494baa17891749fd291), simulated as a list scheduler on their
 * fixed dependency order (schedule_order.c, schedule_run.c).
 *
 * The backward of a chunk is split in two ops (Qi et al. 2024, "Zero
 * Bubble Pipeline Parallelism", arXiv 2401.10241 s.2): I, the input
 * gradient the previous stage waits for, and W, the weight gradient no
 * one waits for, which the schedule defers into what would be bubbles.
 *
 * ScheduleInterleavedZeroBubble (ZB1P), _calculate_single_rank_operations
 * and _get_1f1b_rank_ops(enable_zero_bubble=True): rounds = max(1, m / p),
 * g = m / rounds micro-batches per round; rank r runs
 *   warm = min((v - 1) g + p - 1 - r, m v) forwards,
 *   then for each further forward F, I (and from the (r+1)-th pair on a W),
 *   then the remaining I, each followed by a W once r pairs have passed,
 *   then the W left.
 * Op n's forward stage is ((n / g) mod v) p + r, its backward stage
 * (v - 1 - ((n - warm) / g) mod v) p + r; micro-batches count up per
 * stage; the W follow the I in the I's order.  (_add_bubbles_to_actions
 * only pads with idle slots; a list scheduler finds them itself.)
 *
 * ScheduleZBVZeroBubble: v = 2, rank r holds stages r and 2p - 1 - r (the
 * "V": the forward goes down the ranks and comes back up); its order is
 * 2(p - r) - 1 forwards of stage r, r pairs (F of 2p-1-r, F of r), p - r
 * triples (F, I, W of 2p-1-r), a steady phase (F r, I r, W r, F 2p-1-r,
 * I 2p-1-r, W 2p-1-r), and a cool-down (r pairs I r, I 2p-1-r; p - r
 * pairs I r, W r; the W left of 2p-1-r, then of r), built for
 * max(2p - 1, m) micro-batches with the ops of micro-batches >= m dropped.
 *
 * ScheduleDualPipeV (DeepSeek-V3 technical report, arXiv 2412.19437 s.3.2,
 * its "V" variant): the V of ZBV, m >= 2p; _calculate_single_rank_
 * operations gives rank r, chunk 0 = stage r, chunk 1 = stage 2p-1-r:
 *   1. 2(p - r - 1) forwards of chunk 0;
 *   2. r + 1 pairs F chunk 0, F chunk 1;
 *   3. p - r - 1 triples I chunk 1, W (the oldest pending), F chunk 1;
 *   4. m - 2p + r + 1 times: (F chunk 0, B chunk 1), (F chunk 1,
 *      B chunk 0), each pair one OVERLAP_F_B action (on the last rank the
 *      first (F 0, B 1) two plain actions);
 *   5. p - r - 1 times: B chunk 1, then the pair (F chunk 1, B chunk 0);
 *   6. r + 1 times a backward of chunk 1 then of chunk 0, full backwards
 *      (B) until the half-way iteration (r + 1) / 2, input-only (I) from
 *      there -- on an odd rank from that iteration's chunk-1 backward, on
 *      an even one from its chunk-0 backward;
 *   7. p - r - 1 times: W (the oldest pending), a backward of chunk 0 (I);
 *   8. r + 1 W, the ones left.
 * B is the full backward (input and weight gradient, t_bwd); I queues its
 * W, whose micro-batch and stage come from that FIFO.  PyTorch's runtime
 * runs an OVERLAP_F_B pair's two actions one after the other
 * (_PipelineScheduleRuntime._step_microbatches, unless a custom function
 * is registered for OVERLAP_F_B; TorchTitan b5bcd76c registers none
 * outside experiments/graph_trainer), and so does the simulation: the
 * pair shares no time, its ops are marked in the timeline.
 *
 * Dependencies as in schedule.c: F of stage j waits for F of j - 1, I (or
 * B) of j for I of j + 1 (the last stage for its own F), each one p2p
 * transfer later when the two stages are on different ranks; W waits only
 * for its rank (its I ran before it on the same rank).
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

enum { OP_F = APS_OP_F, OP_B = APS_OP_B, OP_I = APS_OP_I, OP_W = APS_OP_W };

typedef aps_rank_op zb_op;

/** Rank of stage j and its model chunk on that rank. */
static int64_t stage_rank(int schedule, int64_t p, int64_t j, int64_t *k)
{
    if (aps_schedule_v_shaped(schedule)) {
        *k = j < p ? 0 : 1;
        return j < p ? j : 2 * p - 1 - j;
    }
    *k = j / p;
    return j % p;
}

static void push(zb_op *ops, int64_t *n, int64_t j, int64_t mb, int kind,
                 int64_t m)
{
    if (mb >= m) /* ZBV's padding micro-batches */
        return;
    ops[*n].j = (int32_t)j;
    ops[*n].mb = (int32_t)mb;
    ops[*n].kind = (int16_t)kind;
    ops[*n].overlap = 0;
    (*n)++;
}

/** Rank r's order under ScheduleInterleavedZeroBubble; returns its length
 *  (3 m v).  cnt: 3 p v counters of scratch. */
static int64_t order_izb(int64_t p, int64_t v, int64_t m, int64_t r,
                         zb_op *ops, int64_t *cnt)
{
    int64_t rounds = aps_torch_rounds(m, p), g = m / rounds;
    int64_t total = m * v, warm = (v - 1) * g + p - 1 - r, n = 0;
    if (warm > total)
        warm = total;
    int64_t S = p * v, *fc = cnt, *bc = cnt + S, nw = 0, ni = 0;
    memset(cnt, 0, 2 * (size_t)S * sizeof *cnt);
    zb_op *iops = ops + 3 * total; /* the I in order, for their W */
    for (int64_t op = 0; op < total + warm; op++) {
        if (op < total) {
            int64_t j = ((op / g) % v) * p + r;
            push(ops, &n, j, fc[j]++, OP_F, m);
        }
        if (op < warm)
            continue;
        int64_t j = (v - 1 - ((op - warm) / g) % v) * p + r;
        iops[ni].j = (int32_t)j;
        iops[ni].mb = (int32_t)bc[j]++;
        push(ops, &n, j, iops[ni].mb, OP_I, m);
        ni++;
        if (op - warm >= r) {
            push(ops, &n, iops[nw].j, iops[nw].mb, OP_W, m);
            nw++;
        }
    }
    /* the W left (iops lies past the 3 m v ops) */
    while (nw < ni) {
        push(ops, &n, iops[nw].j, iops[nw].mb, OP_W, m);
        nw++;
    }
    return n;
}

/** Rank r's order under ScheduleZBVZeroBubble (v = 2). */
static int64_t order_zbv(int64_t p, int64_t m, int64_t r, zb_op *ops)
{
    int64_t nm = m > 2 * p - 1 ? m : 2 * p - 1, n = 0;
    int64_t s0 = r, s1 = 2 * p - 1 - r;
    int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    for (int64_t q = 0; q < 2 * (p - r) - 1; q++)
        push(ops, &n, s0, f0++, OP_F, m);
    for (int64_t q = 0; q < r; q++) {
        push(ops, &n, s1, f1++, OP_F, m);
        push(ops, &n, s0, f0++, OP_F, m);
    }
    for (int64_t q = 0; q < p - r; q++) {
        push(ops, &n, s1, f1++, OP_F, m);
        push(ops, &n, s1, b1, OP_I, m);
        push(ops, &n, s1, b1++, OP_W, m);
    }
    while (f1 < f0 || f0 < nm) {
        if (f0 < nm)
            push(ops, &n, s0, f0++, OP_F, m);
        push(ops, &n, s0, b0, OP_I, m);
        push(ops, &n, s0, b0++, OP_W, m);
        push(ops, &n, s1, f1++, OP_F, m);
        push(ops, &n, s1, b1, OP_I, m);
        push(ops, &n, s1, b1++, OP_W, m);
    }
    int64_t w0 = b0, w1 = b1;
    for (int64_t q = 0; q < r; q++) {
        push(ops, &n, s0, b0++, OP_I, m);
        push(ops, &n, s1, b1++, OP_I, m);
    }
    for (int64_t q = 0; q < p - r; q++) {
        push(ops, &n, s0, b0++, OP_I, m);
        push(ops, &n, s0, w0++, OP_W, m);
    }
    while (w1 < b1)
        push(ops, &n, s1, w1++, OP_W, m);
    while (w0 < b0)
        push(ops, &n, s0, w0++, OP_W, m);
    return n;
}

/** Rank r's order under ScheduleDualPipeV (v = 2, m >= 2p); ops holds
 *  6 m entries plus 2 m of scratch (the FIFO of pending W). */
typedef struct {
    zb_op *ops, *wq;   /* the order, the pending W (stage, micro-batch) */
    int64_t n, wh, wt; /* ops written, FIFO head and tail */
    int64_t st[2];     /* stage of chunk 0 and chunk 1 */
    int64_t f[2], b[2]; /* next forward / backward micro-batch per chunk */
} dpv_order;

static void dpv_f(dpv_order *o, int c, int overlap)
{
    zb_op *op = &o->ops[o->n++];
    *op = (zb_op){(int32_t)o->st[c], (int32_t)o->f[c]++, OP_F,
                  (int16_t)overlap};
}

/** A backward of chunk c, full (OP_B) or input-only (OP_I, its W
 *  queued). */
static void dpv_b(dpv_order *o, int c, int kind, int overlap)
{
    zb_op *op = &o->ops[o->n++];
    *op = (zb_op){(int32_t)o->st[c], (int32_t)o->b[c]++, (int16_t)kind,
                  (int16_t)overlap};
    if (kind == OP_I)
        o->wq[o->wt++] = (zb_op){op->j, op->mb, OP_W, 0};
}

/** The oldest pending W, if any (add_weight_action_if_pending). */
static void dpv_w(dpv_order *o)
{
    if (o->wh < o->wt)
        o->ops[o->n++] = o->wq[o->wh++];
}

static int64_t order_dualpipev(int64_t p, int64_t m, int64_t r, zb_op *ops)
{
    dpv_order o = {ops, ops + 6 * m, 0, 0, 0, {r, 2 * p - 1 - r},
                   {0, 0}, {0, 0}};
    for (int64_t q = 0; q < 2 * (p - r - 1); q++) /* 1: F0 */
        dpv_f(&o, 0, 0);
    for (int64_t q = 0; q < r + 1; q++) { /* 2: F0 F1 */
        dpv_f(&o, 0, 0);
        dpv_f(&o, 1, 0);
    }
    for (int64_t q = 0; q < p - r - 1; q++) { /* 3: I1 W F1 */
        dpv_b(&o, 1, OP_I, 0);
        dpv_w(&o);
        dpv_f(&o, 1, 0);
    }
    for (int64_t q = 0; q < m - 2 * p + r + 1; q++) { /* 4: F0B1 F1B0 */
        int pair = !(q == 0 && r == p - 1);
        dpv_f(&o, 0, pair);
        dpv_b(&o, 1, OP_B, pair);
        dpv_f(&o, 1, 1);
        dpv_b(&o, 0, OP_B, 1);
    }
    for (int64_t q = 0; q < p - r - 1; q++) { /* 5: B1, F1B0 */
        dpv_b(&o, 1, OP_B, 0);
        dpv_f(&o, 1, 1);
        dpv_b(&o, 0, OP_B, 1);
    }
    int kind = OP_B; /* 6: B1 B0, input-only from half-way */
    for (int64_t q = 0; q < r + 1; q++) {
        if (q == (r + 1) / 2 && r % 2 == 1)
            kind = OP_I;
        dpv_b(&o, 1, kind, 0);
        if (q == (r + 1) / 2 && r % 2 == 0)
            kind = OP_I;
        dpv_b(&o, 0, kind, 0);
    }
    for (int64_t q = 0; q < p - r - 1; q++) { /* 7: W, I0 */
        dpv_w(&o);
        dpv_b(&o, 0, kind, 0);
    }
    for (int64_t q = 0; q < r + 1; q++) /* 8: W */
        dpv_w(&o);
    return o.n;
}

int64_t aps_schedule_order_zb(int sched, int64_t p, int64_t v, int64_t m,
                              int64_t r, aps_rank_op *ops, int64_t *cnt)
{
    if (sched == APS_PP_ZBV)
        return order_zbv(p, m, r, ops);
    if (sched == APS_PP_DUALPIPEV)
        return order_dualpipev(p, m, r, ops);
    return order_izb(p, v, m, r, ops, cnt);
}

/* at most 3 ops per chunk and micro-batch (F, I, W) and m v of scratch;
 * ZBV's padded micro-batches are dropped, so 3 m v entries hold its ops */
size_t aps_schedule_order_slots(int64_t v, int64_t m)
{
    return 4 * (size_t)m * (size_t)v;
}

double aps_schedule_peak_held(int sched, int64_t p, int64_t v,
                              const aps_rank_op *ops, int64_t n,
                              const double *w)
{
    double held = 0.0, peak = 0.0;
    for (int64_t q = 0; q < n; q++) {
        int64_t k;
        stage_rank(sched, p, ops[q].j, &k);
        double wk = w ? w[k] : 1.0 / (double)v;
        if (ops[q].kind == OP_F)
            held += wk;
        else if (ops[q].kind == OP_W || ops[q].kind == OP_B)
            held -= wk;
        if (held > peak)
            peak = held;
    }
    return peak;
}

double aps_schedule_inflight_of(int schedule, int64_t p, int64_t v,
                                int64_t m, int64_t g, int64_t i,
                                const double *w)
{
    if (schedule == APS_PP_1F1B || p <= 1)
        return aps_schedule_inflight(p, v, m, g, i, w);
    /* the orders exist for two chunks per rank on the V, and DualPipeV's
     * for m >= 2p only (aps_check_pp refuses the rest first) */
    if ((aps_schedule_v_shaped(schedule) && v != 2) ||
        (schedule == APS_PP_DUALPIPEV && m < 2 * p))
        return (double)m; /* every micro-batch: the most it can be */
    if (m > APS_MAX_SCHEDULE_CELLS / v)
        return (double)m; /* beyond the size limit: no order allocated */
    zb_op *ops = malloc(aps_schedule_order_slots(v, m) * sizeof *ops);
    int64_t cnt[2 * APS_MAX_STAGES];
    if (ops == NULL)
        return (double)m;
    int64_t n = aps_schedule_order_zb(schedule, p, v, m, i, ops, cnt);
    double peak = aps_schedule_peak_held(schedule, p, v, ops, n, w);
    free(ops);
    return peak;
}

aps_status aps_schedule_simulate_zb(const aps_schedule_in *in,
                                    aps_schedule_out *out)
{
    int64_t p = in->p, v = in->v, m = in->m, S = p * v;
    const aps_schedule_order *o;
    aps_status st = aps_schedule_order_get(in->schedule, p, v, m, 0, &o);
    if (st == APS_OK)
        st = aps_schedule_run_order(o, in, false, out);
    if (st != APS_OK)
        return st;
    for (int64_t i = 0; i < p; i++) {
        double w[APS_MAX_STAGES];
        for (int64_t j = 0; j < S; j++) {
            int64_t k;
            if (stage_rank(in->schedule, p, j, &k) == i)
                w[k] = in->weight ? in->weight[j] : 1.0 / (double)v;
        }
        out->inflight[i] = aps_schedule_peak_held(
            in->schedule, p, v, o->rank_ops + o->start[i],
            o->start[i + 1] - o->start[i], w);
    }
    return APS_OK;
}
