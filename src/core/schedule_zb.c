/*
 * schedule_zb.c -- zero-bubble pipeline schedules, as PyTorch pipelining
 * orders them (torch/distributed/pipelining/schedules.py, pytorch/pytorch
 * 1fd7abc2f521e4429a29c3088e39ebaca20f4698), simulated event by event.
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
 * Dependencies as in schedule.c: F of stage j waits for F of j - 1, I (or
 * B) of j for I of j + 1 (the last stage for its own F), each one p2p
 * transfer later when the two stages are on different ranks; W waits only
 * for its rank (its I ran before it on the same rank).
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

enum { OP_F, OP_I, OP_W };

typedef struct {
    int32_t j, mb;
    int32_t kind;
} zb_op;

/** Rank of stage j and its model chunk on that rank. */
static int64_t stage_rank(int schedule, int64_t p, int64_t j, int64_t *k)
{
    if (schedule == APS_PP_ZBV) {
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
    ops[*n].kind = kind;
    (*n)++;
}

/** Rank r's order under ScheduleInterleavedZeroBubble; returns its length
 *  (3 m v).  cnt: 3 p v counters of scratch. */
static int64_t order_izb(int64_t p, int64_t v, int64_t m, int64_t r,
                         zb_op *ops, int64_t *cnt)
{
    int64_t rounds = m / p > 1 ? m / p : 1, g = m / rounds;
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

/** Rank r's order; ops holds 3 m v entries plus m v of scratch (the I
 *  list of order_izb), cnt 2 p v. */
static int64_t order_of(int schedule, int64_t p, int64_t v, int64_t m,
                        int64_t r, zb_op *ops, int64_t *cnt)
{
    if (schedule == APS_PP_ZBV)
        return order_zbv(p, m, r, ops);
    return order_izb(p, v, m, r, ops, cnt);
}

/** Slots an order of a rank needs (see order_of); ZBV's padded
 *  micro-batches are dropped, so 3 m v entries hold its ops. */
static size_t order_slots(int64_t v, int64_t m)
{
    return 4 * (size_t)m * (size_t)v;
}

double aps_schedule_inflight_of(int schedule, int64_t p, int64_t v,
                                int64_t m, int64_t i, const double *w)
{
    if (schedule == APS_PP_1F1B || p <= 1)
        return aps_schedule_inflight(p, v, m, i, w);
    zb_op *ops = malloc(order_slots(v, m) * sizeof *ops);
    int64_t cnt[2 * APS_MAX_STAGES];
    if (ops == NULL)
        return (double)m; /* every micro-batch: the most it can be */
    int64_t n = order_of(schedule, p, v, m, i, ops, cnt);
    double held = 0.0, peak = 0.0;
    for (int64_t q = 0; q < n; q++) {
        int64_t k;
        stage_rank(schedule, p, ops[q].j, &k);
        double wk = w ? w[k] : 1.0 / (double)v;
        if (ops[q].kind == OP_F)
            held += wk;
        else if (ops[q].kind == OP_W)
            held -= wk;
        if (held > peak)
            peak = held;
    }
    free(ops);
    return peak;
}

typedef struct {
    const zb_op *ops;
    int64_t n, pos;
    double free_at, busy;
} zb_rank;

/** Runs rank r's ops in order while their inputs are there. */
static int64_t zb_advance(const aps_schedule_in *in, zb_rank *r,
                          double *fdone, double *bdone)
{
    int64_t p = in->p, S = p * in->v, ran = 0;
    while (r->pos < r->n) {
        const zb_op *op = &r->ops[r->pos];
        int64_t j = op->j, cell = (int64_t)op->mb * S + j, k;
        double ready = 0.0, t, wgt = in->t_wgt ? in->t_wgt[j] : 0.0;
        if (op->kind == OP_F) {
            if (j > 0) {
                if (fdone[cell - 1] < 0.0)
                    break;
                ready = fdone[cell - 1];
                if (in->p2p && stage_rank(in->schedule, p, j - 1, &k) !=
                                   stage_rank(in->schedule, p, j, &k))
                    ready += in->p2p[j - 1];
            }
            t = in->t_fwd[j];
        } else if (op->kind == OP_I) {
            double down = j == S - 1 ? fdone[cell] : bdone[cell + 1];
            if (down < 0.0)
                break;
            ready = down;
            if (j < S - 1 && in->p2p &&
                stage_rank(in->schedule, p, j + 1, &k) !=
                    stage_rank(in->schedule, p, j, &k))
                ready += in->p2p[j];
            t = in->t_bwd[j] - wgt;
        } else {
            t = wgt;
        }
        double start = ready > r->free_at ? ready : r->free_at;
        r->free_at = start + t;
        r->busy += t;
        if (op->kind == OP_F)
            fdone[cell] = r->free_at;
        else if (op->kind == OP_I)
            bdone[cell] = r->free_at;
        r->pos++;
        ran++;
    }
    return ran;
}

aps_status aps_schedule_simulate_zb(const aps_schedule_in *in,
                                    aps_schedule_out *out)
{
    int64_t p = in->p, v = in->v, m = in->m, S = p * v;
    size_t cells = (size_t)m * (size_t)S, slots = order_slots(v, m);
    double *fdone = malloc(2 * cells * sizeof *fdone);
    zb_op *ops = malloc((size_t)p * slots * sizeof *ops);
    if (fdone == NULL || ops == NULL) {
        free(fdone);
        free(ops);
        return APS_ERANGE;
    }
    double *bdone = fdone + cells;
    for (size_t c = 0; c < 2 * cells; c++)
        fdone[c] = -1.0;
    zb_rank rs[APS_MAX_STAGES];
    int64_t cnt[2 * APS_MAX_STAGES], left = 0;
    for (int64_t i = 0; i < p; i++) {
        zb_op *o = ops + (size_t)i * slots;
        rs[i] = (zb_rank){o, order_of(in->schedule, p, v, m, i, o, cnt), 0,
                          0.0, 0.0};
        left += rs[i].n;
    }
    aps_status st = APS_OK;
    while (left > 0) {
        int64_t ran = 0;
        for (int64_t i = 0; i < p; i++)
            ran += zb_advance(in, &rs[i], fdone, bdone);
        for (int64_t i = p - 1; i >= 0; i--)
            ran += zb_advance(in, &rs[i], fdone, bdone);
        if (ran == 0) { /* cannot happen for the orders above */
            st = APS_EINVAL;
            break;
        }
        left -= ran;
    }
    free(fdone);
    for (int64_t i = 0; st == APS_OK && i < p; i++) {
        if (rs[i].free_at > out->step)
            out->step = rs[i].free_at;
        if (rs[i].busy > out->busy_max) {
            out->busy_max = rs[i].busy;
            out->slowest_rank = i;
        }
    }
    free(ops);
    if (st != APS_OK)
        return st;
    out->bubble = out->step - out->busy_max;
    for (int64_t i = 0; i < p; i++) {
        double w[APS_MAX_STAGES];
        for (int64_t j = 0; j < S; j++) {
            int64_t k;
            if (stage_rank(in->schedule, p, j, &k) == i)
                w[k] = in->weight ? in->weight[j] : 1.0 / (double)v;
        }
        out->inflight[i] =
            aps_schedule_inflight_of(in->schedule, p, v, m, i, w);
    }
    return APS_OK;
}
