/*
 * schedule_ref.h -- the pipeline schedule simulation as it was before the
 * fixed dependency order (src/core/schedule.c and schedule_zb.c at main
 * 73cc800): Megatron's (interleaved) 1F1B and the zero-bubble schedules
 * run by the list scheduler's event loop, and the activation peaks, kept
 * verbatim (renamed ref_*, made static) as the reference that
 * test_schedule_fixed.c compares the fast path with.  Test-only code.
 */
#ifndef APS_TEST_SCHEDULE_REF_H
#define APS_TEST_SCHEDULE_REF_H

#include <stdlib.h>
#include <string.h>
#include "../../src/core/internal.h"

static aps_status ref_simulate_zb(const aps_schedule_in *in,
                                  aps_schedule_out *out);

/* ---- schedule.c ---- */

static int64_t ref_warmup(int64_t p, int64_t v, int64_t m, int64_t i)
{
    int64_t total = m * v;
    int64_t w = v > 1 ? 2 * (p - i - 1) + (v - 1) * p : p - i - 1;
    if (w > total)
        w = total;
    return w < 0 ? 0 : w;
}

typedef struct {
    int64_t mb, k; /* micro-batch, model chunk of the rank */
    bool fwd;
} sched_op;

/** Micro-batch and model chunk of the n-th chunk forward (or backward) of
 *  a rank: Megatron's get_schedule_table with groups of p micro-batches,
 *  the last group the remainder. */
static void table_entry(int64_t p, int64_t v, int64_t m, int64_t n, bool fwd,
                        sched_op *op)
{
    int64_t full = m / p, g, in, size;
    if (n < full * p * v) {
        g = n / (p * v) * p;
        in = n % (p * v);
        size = p;
    } else {
        g = full * p;
        in = n - full * p * v;
        size = m - g;
    }
    op->k = in / size;
    op->mb = g + in % size;
    if (!fwd)
        op->k = v - 1 - op->k;
    op->fwd = fwd;
}

/** The q-th op (0 .. 2 m v - 1) of a rank with `warm` warm-up forwards. */
static void op_at(int64_t p, int64_t v, int64_t m, int64_t warm, int64_t q,
                  sched_op *op)
{
    int64_t total = m * v, steady = total - warm;
    if (q < warm) {
        table_entry(p, v, m, q, true, op);
        return;
    }
    q -= warm;
    if (q < 2 * steady) {
        if (q % 2 == 0)
            table_entry(p, v, m, warm + q / 2, true, op);
        else
            table_entry(p, v, m, q / 2, false, op);
        return;
    }
    table_entry(p, v, m, steady + (q - 2 * steady), false, op);
}

/** Peak of the activation sets held on rank i, each model chunk k's set
 *  weighing w[k] (NULL: 1/v each) of the rank's whole set: held from the
 *  chunk's forward to its backward. */
static double ref_inflight(int64_t p, int64_t v, int64_t m, int64_t i,
                             const double *w)
{
    if (p <= 1 || v < 1 || m < 1)
        return m > 0 ? 1.0 : 0.0;
    int64_t warm = ref_warmup(p, v, m, i);
    if (w == NULL) { /* the count only: the warm-up plus one */
        int64_t n = warm + 1 < m * v ? warm + 1 : m * v;
        return (double)n / (double)v;
    }
    double held = 0.0, peak = 0.0;
    for (int64_t q = 0; q < 2 * m * v; q++) {
        sched_op op;
        op_at(p, v, m, warm, q, &op);
        held += op.fwd ? w[op.k] : -w[op.k];
        if (held > peak)
            peak = held;
    }
    return peak;
}

/** Walks Megatron's schedule table (table_entry) one entry at a time,
 *  without divisions. */
typedef struct {
    int64_t mb, k, g, size; /* micro-batch, chunk, group start and size */
} table_iter;

static void iter_init(table_iter *it, int64_t p, int64_t m)
{
    it->mb = it->k = it->g = 0;
    it->size = p < m ? p : m;
}

static void iter_next(table_iter *it, int64_t p, int64_t v, int64_t m)
{
    if (++it->mb < it->g + it->size)
        return;
    it->mb = it->g;
    if (++it->k < v)
        return;
    it->k = 0;
    it->g += it->size;
    it->mb = it->g;
    it->size = m - it->g < p ? m - it->g : p;
}

/** One rank's progress through its order. */
typedef struct {
    int64_t warm, nf, nb;   /* warm-up forwards, forwards and backwards run */
    table_iter f, b;        /* next forward, next backward */
    double free_at, busy;
} rank_state;

/** Runs rank i's ops in order while their inputs are there; returns the
 *  number run. */
static int64_t advance(const aps_schedule_in *in, int64_t i, rank_state *r,
                       double *fdone, double *bdone)
{
    int64_t p = in->p, v = in->v, m = in->m, S = p * v, total = m * v;
    int64_t ran = 0;
    for (;;) {
        bool fwd = r->nf < r->warm ||
                   (r->nf < total && r->nf - r->warm == r->nb);
        if (!fwd && r->nb >= total)
            break;
        double ready, t;
        int64_t cell;
        if (fwd) {
            int64_t j = i + r->f.k * p;
            cell = r->f.mb * S + j;
            ready = 0.0;
            if (j > 0) {
                double up = fdone[cell - 1];
                if (up < 0.0)
                    break;
                ready = up + (in->p2p ? in->p2p[j - 1] : 0.0);
            }
            t = in->t_fwd[j];
        } else {
            int64_t j = i + (v - 1 - r->b.k) * p;
            cell = r->b.mb * S + j;
            double down = j == S - 1 ? fdone[cell] : bdone[cell + 1];
            if (down < 0.0)
                break;
            ready = down + (j < S - 1 && in->p2p ? in->p2p[j] : 0.0);
            t = in->t_bwd[j];
        }
        double start = ready > r->free_at ? ready : r->free_at;
        r->free_at = start + t;
        r->busy += t;
        if (in->timeline) {
            aps_schedule_event ev = {
                fwd ? APS_OP_F : APS_OP_B, (int32_t)(cell / S),
                (int32_t)(cell % S), (int32_t)(cell % S / p), 0, start,
                r->free_at};
            aps_timeline_add(in->timeline, i, &ev);
        }
        if (fwd) {
            fdone[cell] = r->free_at;
            r->nf++;
            iter_next(&r->f, p, v, m);
        } else {
            bdone[cell] = r->free_at;
            r->nb++;
            iter_next(&r->b, p, v, m);
        }
        ran++;
    }
    return ran;
}

/** Megatron's (interleaved) 1F1B, arguments checked. */
static aps_status simulate_1f1b(const aps_schedule_in *in,
                                aps_schedule_out *out)
{
    int64_t p = in->p, v = in->v, m = in->m, S = p * v;
    size_t cells = (size_t)m * (size_t)S;
    double *fdone = malloc(2 * cells * sizeof *fdone);
    if (fdone == NULL)
        return APS_ERANGE; /* no memory for m x p v finish times */
    double *bdone = fdone + cells;
    for (size_t c = 0; c < 2 * cells; c++)
        fdone[c] = -1.0;
    rank_state rs[APS_MAX_STAGES];
    for (int64_t i = 0; i < p; i++) {
        memset(&rs[i], 0, sizeof rs[i]);
        rs[i].warm = ref_warmup(p, v, m, i);
        iter_init(&rs[i].f, p, m);
        iter_init(&rs[i].b, p, m);
    }
    int64_t left = 2 * m * v * p;
    while (left > 0) {
        int64_t ran = 0;
        /* forwards flow up the ranks, backwards down: sweep both ways so
         * a pass moves a wave as far as it goes */
        for (int64_t i = 0; i < p; i++)
            ran += advance(in, i, &rs[i], fdone, bdone);
        for (int64_t i = p - 1; i >= 0; i--)
            ran += advance(in, i, &rs[i], fdone, bdone);
        if (ran == 0) { /* cannot happen for the orders above */
            free(fdone);
            return APS_EINVAL;
        }
        left -= ran;
    }
    free(fdone);
    for (int64_t i = 0; i < p; i++) {
        if (rs[i].free_at > out->step)
            out->step = rs[i].free_at;
        if (rs[i].busy > out->busy_max) {
            out->busy_max = rs[i].busy;
            out->slowest_rank = i;
        }
    }
    out->bubble = out->step - out->busy_max;
    for (int64_t i = 0; i < p; i++) {
        double w[APS_MAX_STAGES];
        bool even = true;
        for (int64_t k = 0; k < v; k++) {
            w[k] = in->weight ? in->weight[i + k * p] : 1.0 / (double)v;
            even &= w[k] == w[0];
        }
        out->inflight[i] = ref_inflight(p, v, m, i, even ? NULL : w);
    }
    return APS_OK;
}

static aps_status ref_simulate(const aps_schedule_in *in,
                                 aps_schedule_out *out)
{
    if (in == NULL || out == NULL || in->p < 1 || in->v < 1 || in->m < 1 ||
        in->p * in->v > APS_MAX_STAGES || in->t_fwd == NULL ||
        in->t_bwd == NULL)
        return APS_EINVAL;
    memset(out, 0, sizeof *out);
    /* before any allocation (aps_check_schedule_size says why) */
    if (in->m > APS_MAX_SCHEDULE_CELLS / (in->p * in->v))
        return APS_ERANGE;
    if (aps_schedule_v_shaped(in->schedule) && in->v != 2)
        return APS_EINVAL;
    if (in->schedule == APS_PP_DUALPIPEV && in->m < 2 * in->p)
        return APS_EINVAL; /* ScheduleDualPipeV: m >= its 2p stages */
    aps_timeline *tl = in->timeline;
    if (tl != NULL) {
        if (tl->events == NULL || tl->keep < 1 || tl->ranks_cap < in->p)
            return APS_EINVAL;
        aps_timeline_begin(tl, in);
    }
    aps_status st = in->schedule != APS_PP_1F1B && in->p > 1
                        ? ref_simulate_zb(in, out) /* schedule_zb.c */
                        : simulate_1f1b(in, out);
    if (tl != NULL) {
        tl->recorded = st == APS_OK;
        tl->result = *out;
    }
    return st;
}


/* ---- schedule_zb.c ---- */

enum { OP_F = APS_OP_F, OP_B = APS_OP_B, OP_I = APS_OP_I, OP_W = APS_OP_W };

typedef struct {
    int32_t j, mb;
    int16_t kind;    /* aps_op_kind */
    int16_t overlap; /* 1: half of an OVERLAP_F_B pair */
} zb_op;

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

/** Rank r's order; ops holds order_slots(v, m) entries (the orders plus
 *  the scratch of order_izb and order_dualpipev), cnt 2 p v. */
static int64_t order_of(int schedule, int64_t p, int64_t v, int64_t m,
                        int64_t r, zb_op *ops, int64_t *cnt)
{
    if (schedule == APS_PP_ZBV)
        return order_zbv(p, m, r, ops);
    if (schedule == APS_PP_DUALPIPEV)
        return order_dualpipev(p, m, r, ops);
    return order_izb(p, v, m, r, ops, cnt);
}

/** Slots an order of a rank needs (see order_of): at most 3 ops per
 *  chunk and micro-batch (F, I, W) and m v of scratch; ZBV's padded
 *  micro-batches are dropped, so 3 m v entries hold its ops. */
static size_t order_slots(int64_t v, int64_t m)
{
    return 4 * (size_t)m * (size_t)v;
}

static double ref_inflight_of(int schedule, int64_t p, int64_t v,
                                int64_t m, int64_t i, const double *w)
{
    if (schedule == APS_PP_1F1B || p <= 1)
        return ref_inflight(p, v, m, i, w);
    /* the orders exist for two chunks per rank on the V, and DualPipeV's
     * for m >= 2p only (aps_check_pp refuses the rest first) */
    if ((aps_schedule_v_shaped(schedule) && v != 2) ||
        (schedule == APS_PP_DUALPIPEV && m < 2 * p))
        return (double)m; /* every micro-batch: the most it can be */
    if (m > APS_MAX_SCHEDULE_CELLS / v)
        return (double)m; /* beyond the size limit: no order allocated */
    zb_op *ops = malloc(order_slots(v, m) * sizeof *ops);
    int64_t cnt[2 * APS_MAX_STAGES];
    if (ops == NULL)
        return (double)m;
    int64_t n = order_of(schedule, p, v, m, i, ops, cnt);
    double held = 0.0, peak = 0.0;
    for (int64_t q = 0; q < n; q++) {
        int64_t k;
        stage_rank(schedule, p, ops[q].j, &k);
        double wk = w ? w[k] : 1.0 / (double)v;
        if (ops[q].kind == OP_F)
            held += wk;
        else if (ops[q].kind == OP_W || ops[q].kind == OP_B)
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

/** Runs rank i's ops in order while their inputs are there. */
static int64_t zb_advance(const aps_schedule_in *in, int64_t i, zb_rank *r,
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
        } else if (op->kind == OP_I || op->kind == OP_B) {
            double down = j == S - 1 ? fdone[cell] : bdone[cell + 1];
            if (down < 0.0)
                break;
            ready = down;
            if (j < S - 1 && in->p2p &&
                stage_rank(in->schedule, p, j + 1, &k) !=
                    stage_rank(in->schedule, p, j, &k))
                ready += in->p2p[j];
            t = op->kind == OP_B ? in->t_bwd[j] : in->t_bwd[j] - wgt;
        } else {
            t = wgt;
        }
        double start = ready > r->free_at ? ready : r->free_at;
        r->free_at = start + t;
        r->busy += t;
        if (in->timeline) {
            stage_rank(in->schedule, p, j, &k);
            aps_schedule_event ev = {op->kind, op->mb,      (int32_t)j,
                                     (int32_t)k, op->overlap, start,
                                     r->free_at};
            aps_timeline_add(in->timeline, i, &ev);
        }
        if (op->kind == OP_F)
            fdone[cell] = r->free_at;
        else if (op->kind != OP_W)
            bdone[cell] = r->free_at;
        r->pos++;
        ran++;
    }
    return ran;
}

static aps_status ref_simulate_zb(const aps_schedule_in *in,
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
            ran += zb_advance(in, i, &rs[i], fdone, bdone);
        for (int64_t i = p - 1; i >= 0; i--)
            ran += zb_advance(in, i, &rs[i], fdone, bdone);
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
            ref_inflight_of(in->schedule, p, v, m, i, w);
    }
    return APS_OK;
}

#endif
