/*
 * schedule.c -- the order of forward and backward work of every pipeline
 * rank and model chunk, simulated as a list scheduler (on the fixed
 * dependency order of schedule_order.c, run by schedule_run.c).
 *
 * Order (megatron/core/pipeline_parallel/schedules.py):
 *   v = 1, forward_backward_pipelining_without_interleaving: rank i runs
 *     min(p - i - 1, m) warm-up forwards, then one forward and one
 *     backward at a time (1F1B), then the remaining backwards.
 *   v > 1, forward_backward_pipelining_with_interleaving: the m v chunk
 *     forwards of a rank follow get_schedule_table (l.989-1016 at
 *     d98e8a64) -- groups of G micro-batches (G = microbatch_group_size_
 *     per_vp_stage, --microbatch-group-size-per-virtual-pipeline-stage,
 *     default p: model_parallel_config.py:567-568), the last group the
 *     m mod G left when fewer than G remain; within a group model chunk 0
 *     for every micro-batch, then chunk 1, ...; the backwards follow the
 *     same table with the chunk order reversed (get_model_chunk_id
 *     (forward=False)).  Warm-up (get_pp_rank_microbatches, l.958-977):
 *     2(p - i - 1) + (v - 1) G chunk forwards (all m v when that is not
 *     fewer), then 1F1B, then the remaining backwards.
 * Model chunk k of rank i is stage j = i + k p of the p v in schedule
 * order; a forward of stage j > 0 waits for the forward of stage j - 1 of
 * the same micro-batch plus one p2p transfer, a backward of stage j <
 * p v - 1 for the backward of stage j + 1 plus one transfer; a rank runs
 * its list in order, each op as soon as the rank is free and its input
 * has arrived (a list scheduler; transfers occupy the link, not the rank).
 *
 * With equal stage times t_f, t_b per chunk and no transfer time this
 * reproduces the closed forms: v = 1, (m + p - 1)(t_f + t_b) (Narayanan
 * et al. SC'21 s.2.2.1); v > 1, G = p and m a multiple of p, (m v + p -
 * 1)(t_f + t_b) per chunk, i.e. (m + (p-1)/v) times the rank's (s.2.2.2).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int64_t aps_schedule_warmup(int64_t p, int64_t v, int64_t m, int64_t g,
                            int64_t i)
{
    int64_t total = m * v;
    int64_t w = v > 1 ? 2 * (p - i - 1) + (v - 1) * aps_schedule_group(p, g)
                      : p - i - 1;
    if (w > total)
        w = total;
    return w < 0 ? 0 : w;
}

/** Walks Megatron's schedule table (get_schedule_table: groups of G
 *  micro-batches, the last group the remainder; within a group model
 *  chunk 0 for every micro-batch, then chunk 1, ...) one entry at a time,
 *  without divisions. */
typedef struct {
    int64_t mb, k, g, size; /* micro-batch, chunk, group start and size */
} table_iter;

/** The table's first entry; G: micro-batches per group (>= 1). */
static void iter_init(table_iter *it, int64_t G, int64_t m)
{
    it->mb = it->k = it->g = 0;
    it->size = G < m ? G : m;
}

static void iter_next(table_iter *it, int64_t G, int64_t v, int64_t m)
{
    if (++it->mb < it->g + it->size)
        return;
    it->mb = it->g;
    if (++it->k < v)
        return;
    it->k = 0;
    it->g += it->size;
    it->mb = it->g;
    it->size = m - it->g < G ? m - it->g : G;
}

/** Rank i's walk through its order: `warm` chunk forwards, then one
 *  forward and one backward at a time (1F1B), then the backwards left;
 *  forwards in table order, backwards in table order with the chunk
 *  reversed. */
typedef struct {
    int64_t p, v, m, G, i, warm, nf, nb; /* forwards, backwards so far */
    table_iter f, b;                     /* next forward, next backward */
} order_walk;

static void walk_init(order_walk *w, int64_t p, int64_t v, int64_t m,
                      int64_t g, int64_t i)
{
    int64_t G = aps_schedule_group(p, g);
    *w = (order_walk){p, v, m, G, i, aps_schedule_warmup(p, v, m, G, i), 0,
                      0, {0, 0, 0, 0}, {0, 0, 0, 0}};
    iter_init(&w->f, G, m);
    iter_init(&w->b, G, m);
}

/** The rank's next op into op (its chunk into *k); false after the last. */
static bool walk_next(order_walk *w, aps_rank_op *op, int64_t *k)
{
    int64_t total = w->m * w->v;
    bool fwd = w->nf < w->warm || (w->nf < total && w->nf - w->warm == w->nb);
    if (!fwd && w->nb >= total)
        return false;
    table_iter *it = fwd ? &w->f : &w->b;
    *k = fwd ? it->k : w->v - 1 - it->k;
    *op = (aps_rank_op){(int32_t)(w->i + *k * w->p), (int32_t)it->mb,
                        fwd ? APS_OP_F : APS_OP_B, 0};
    if (fwd)
        w->nf++;
    else
        w->nb++;
    iter_next(it, w->G, w->v, w->m);
    return true;
}

/** Rank i's op n-th forward (fwd) or backward of Megatron's table tab
 *  (micro-batch in .mb, chunk in .j). */
static aps_rank_op table_op(const aps_rank_op *tab, int64_t p, int64_t v,
                            int64_t i, int64_t n, bool fwd)
{
    int64_t k = fwd ? tab[n].j : v - 1 - tab[n].j;
    return (aps_rank_op){(int32_t)(i + k * p), tab[n].mb,
                         fwd ? APS_OP_F : APS_OP_B, 0};
}

/** Rank i's order (see order_walk) from the table tab into ops, warm its
 *  warm-up; returns its length, 2 m v. */
static int64_t rank_order(const aps_rank_op *tab, int64_t p, int64_t v,
                          int64_t m, int64_t warm, int64_t i,
                          aps_rank_op *ops)
{
    int64_t total = m * v, n = 0;
    for (int64_t f = 0; f < warm; f++)
        ops[n++] = table_op(tab, p, v, i, f, true);
    for (int64_t b = 0; b < total - warm; b++) {
        ops[n++] = table_op(tab, p, v, i, warm + b, true);
        ops[n++] = table_op(tab, p, v, i, b, false);
    }
    for (int64_t b = total - warm; b < total; b++)
        ops[n++] = table_op(tab, p, v, i, b, false);
    return n;
}

int64_t aps_schedule_orders_1f1b(int64_t p, int64_t v, int64_t m, int64_t g,
                                 aps_rank_op *ops, int64_t *start)
{
    int64_t total = m * v, n = 0, G = aps_schedule_group(p, g);
    aps_rank_op *tab = malloc((size_t)total * sizeof *tab);
    if (tab == NULL)
        return -1;
    table_iter it;
    iter_init(&it, G, m);
    for (int64_t q = 0; q < total; q++, iter_next(&it, G, v, m))
        tab[q] = (aps_rank_op){(int32_t)it.k, (int32_t)it.mb, APS_OP_F, 0};
    for (int64_t i = 0; i < p; i++) {
        start[i] = n;
        n += rank_order(tab, p, v, m, aps_schedule_warmup(p, v, m, G, i), i,
                        ops + n);
    }
    start[p] = n;
    free(tab);
    return n;
}

/** Peak of the activation sets held on rank i, each model chunk k's set
 *  weighing w[k] (NULL: 1/v each) of the rank's whole set: held from the
 *  chunk's forward to its backward. */
double aps_schedule_inflight(int64_t p, int64_t v, int64_t m, int64_t g,
                             int64_t i, const double *w)
{
    if (p <= 1 || v < 1 || m < 1)
        return m > 0 ? 1.0 : 0.0;
    g = v > 1 ? aps_schedule_group(p, g) : p; /* one key per schedule */
    if (w == NULL) { /* the count only: the warm-up plus one */
        int64_t warm = aps_schedule_warmup(p, v, m, g, i);
        int64_t n = warm + 1 < m * v ? warm + 1 : m * v;
        return (double)n / (double)v;
    }
    double held = 0.0, peak = 0.0;
    if (aps_inflight_memo_find(p, v, m, g, i, w, &peak))
        return peak;
    order_walk walk;
    aps_rank_op op;
    int64_t k;
    walk_init(&walk, p, v, m, g, i);
    while (walk_next(&walk, &op, &k)) {
        held += op.kind == APS_OP_F ? w[k] : -w[k];
        if (held > peak)
            peak = held;
    }
    aps_inflight_memo_store(p, v, m, g, i, w, peak);
    return peak;
}

/** Megatron's (interleaved) 1F1B, arguments checked: the fixed order of
 *  the ranks' ops (schedule_order.c), p2p hops between any two
 *  consecutive stages. */
static aps_status simulate_1f1b(const aps_schedule_in *in,
                                aps_schedule_out *out)
{
    int64_t p = in->p, v = in->v, m = in->m, g = in->g;
    const aps_schedule_order *o;
    aps_status st = aps_schedule_order_get(APS_PP_1F1B, p, v, m, g, &o);
    if (st == APS_OK)
        st = aps_schedule_run_order(o, in, true, out);
    if (st != APS_OK)
        return st;
    for (int64_t i = 0; i < p; i++) {
        double w[APS_MAX_STAGES];
        bool even = true;
        for (int64_t k = 0; k < v; k++) {
            w[k] = in->weight ? in->weight[i + k * p] : 1.0 / (double)v;
            even &= w[k] == w[0];
        }
        out->inflight[i] =
            aps_schedule_inflight(p, v, m, g, i, even ? NULL : w);
    }
    return APS_OK;
}

aps_status aps_schedule_simulate(const aps_schedule_in *in,
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
                        ? aps_schedule_simulate_zb(in, out) /* schedule_zb.c */
                        : simulate_1f1b(in, out);
    if (tl != NULL) {
        tl->recorded = st == APS_OK;
        tl->result = *out;
    }
    return st;
}

double aps_schedule_lower_bound(const aps_schedule_in *in)
{
    if (in == NULL || in->p < 1 || in->v < 1 || in->m < 1 ||
        in->p * in->v > APS_MAX_STAGES || in->t_fwd == NULL ||
        in->t_bwd == NULL ||
        (aps_schedule_v_shaped(in->schedule) && in->v != 2))
        return 0.0;
    int64_t p = in->p, S = p * in->v;
    double busy[APS_MAX_STAGES] = {0.0};
    for (int64_t j = 0; j < S; j++) {
        int64_t rank = j % p;
        if (aps_schedule_v_shaped(in->schedule) && j >= p)
            rank = S - 1 - j; /* the V: back up the ranks */
        busy[rank] += in->t_fwd[j] + in->t_bwd[j];
    }
    bool drains = in->schedule == APS_PP_1F1B || p == 1;
    double fill = 0.0, drain = 0.0, bound = 0.0;
    for (int64_t i = 0; i < p; i++) {
        double b = fill + (double)in->m * busy[i] + (drains ? drain : 0.0);
        bound = b > bound ? b : bound;
        double hop = in->p2p != NULL && i + 1 < S ? in->p2p[i] : 0.0;
        fill += in->t_fwd[i] + hop;
        drain += in->t_bwd[i] + hop;
    }
    return bound;
}

/** Chunk k's share of rank i's layers, NULL-equivalent (false) when the
 *  rank's chunks are equal. */
static bool chunk_weights(const aps_layout *lay, int64_t i, double *w)
{
    int64_t L = lay->layers[i], c0 = aps_layout_chunk(lay, i, 0);
    bool even = true;
    for (int64_t k = 0; k < lay->v; k++) {
        int64_t ck = aps_layout_chunk(lay, i, k);
        even &= ck == c0;
        w[k] = L > 0 ? (double)ck / (double)L : 1.0 / (double)lay->v;
    }
    return !even;
}

double aps_layout_inflight(const aps_layout *lay, int64_t i)
{
    double w[APS_MAX_STAGES];
    bool uneven = lay->v > 1 && chunk_weights(lay, i, w);
    if (lay->sched != APS_PP_1F1B && lay->p > 1) {
        if (!uneven)
            for (int64_t k = 0; k < lay->v; k++)
                w[k] = 1.0 / (double)lay->v;
        return aps_schedule_inflight_of(lay->sched, lay->p, lay->v, lay->m,
                                        lay->g, i, w);
    }
    return aps_schedule_inflight(lay->p, lay->v, lay->m, lay->g, i,
                                 uneven ? w : NULL);
}

double aps_layout_chunk_inflight(const aps_layout *lay, int64_t i, int64_t k)
{
    if (lay->v <= 1 || lay->p <= 1 || lay->sched != APS_PP_1F1B || k < 0 ||
        k >= lay->v)
        return aps_layout_inflight(lay, i);
    /* the walk's held count with weight 1 on chunk k alone: its most
     * micro-batches held at any point of the rank's ops */
    double w[APS_MAX_STAGES];
    for (int64_t j = 0; j < lay->v; j++)
        w[j] = j == k ? 1.0 : 0.0;
    return aps_schedule_inflight(lay->p, lay->v, lay->m, lay->g, i, w);
}

/** Ranks between consecutive pipeline ranks: tp x cp x fsdp x dp (the
 *  tp-cp-fsdp-dp-pp order, pp outermost). */
static int64_t pp_stride(const aps_strategy *s)
{
    return s->tp_degree * s->cp_degree * s->fsdp_degree * s->dp_degree;
}

/** Bytes of one activation (or its gradient) passed between stages: one
 *  micro-batch's hidden states, sequence-split under SP. */
static double p2p_bytes(const aps_model *m, const aps_strategy *s,
                        const aps_layout *lay)
{
    double rep = (lay->t > 1 && s->sequence_parallel) ? (double)lay->t : 1.0;
    /* DeepSeek-V4 passes its hc_mult residual streams, [b, s, n, h]
     * (DeepseekV4DecoderLayer) */
    double streams = m->hc_mult > 0 ? (double)m->hc_mult : 1.0;
    return APS_ACT_BYTES * (double)lay->b * (double)lay->s_local *
           (double)m->hidden_size * streams / rep;
}

void aps_pipeline_p2p(const aps_model *m, const aps_cluster *c,
                      const aps_strategy *s, const aps_layout *lay,
                      double *d)
{
    int64_t p = lay->p, S = p * lay->v;
    int64_t stride = pp_stride(s);
    double bytes = p2p_bytes(m, s, lay);
    for (int64_t j = 0; j + 1 < S; j++) {
        double bw, alpha;
        int64_t a = j % p, b = (j + 1) % p;
        if (aps_schedule_v_shaped(lay->sched)) { /* the V: down, back up */
            a = j < p ? j : S - 1 - j;
            b = j + 1 < p ? j + 1 : S - 2 - j;
        }
        aps_p2p_pair_link(c, stride, a, b, &bw, &alpha);
        d[j] = bytes / bw + alpha;
    }
}

/** Per-stage inputs of a simulation of the layout (aps_pipeline_step),
 *  the storage in's pointers point into. */
typedef struct {
    double cf[APS_MAX_STAGES], cb[APS_MAX_STAGES], cw[APS_MAX_STAGES];
    double cg[APS_MAX_STAGES], p2p[APS_MAX_STAGES];
} pipeline_stages;

/** The simulation inputs of the layout's ranks r into in (see
 *  aps_pipeline_step), recording into tl. */
static void pipeline_in(const aps_model *m, const aps_cluster *c,
                        const aps_strategy *s, const aps_layout *lay,
                        const aps_stage_times *r, aps_timeline *tl,
                        pipeline_stages *st, aps_schedule_in *in)
{
    int64_t p = lay->p, v = lay->v, S = p * v;
    aps_pipeline_p2p(m, c, s, lay, st->p2p);
    for (int64_t i = 0; i < p; i++) {
        double w[APS_MAX_STAGES];
        chunk_weights(lay, i, w);
        for (int64_t k = 0; k < v; k++) {
            int64_t j = aps_chunk_stage(lay->sched, p, i, k);
            st->cw[j] = w[k];
            st->cf[j] = (r->tf[i] - r->ef[i]) * w[k];
            st->cb[j] = (r->tb[i] - r->eb[i]) * w[k];
            st->cg[j] = (r->tw[i] - r->ew[i]) * w[k];
        }
    }
    /* the embedding on stage 0, the output layer and loss on the last
     * (on rank 0 under the V schedules) */
    st->cf[0] += r->ef[0];
    st->cb[0] += r->eb[0];
    st->cg[0] += r->ew[0];
    if (p > 1) {
        st->cf[S - 1] += r->ef[p - 1];
        st->cb[S - 1] += r->eb[p - 1];
        st->cg[S - 1] += r->ew[p - 1];
    }
    *in = (aps_schedule_in){p,       v,      lay->m,     st->cf, st->cb,
                            st->p2p, st->cw, lay->sched, st->cg, tl,
                            lay->g};
}

aps_status aps_pipeline_step(const aps_model *m, const aps_cluster *c,
                             const aps_strategy *s, const aps_layout *lay,
                             const aps_stage_times *r, aps_timeline *tl,
                             double cutoff, double *step)
{
    pipeline_stages st;
    aps_schedule_in in;
    pipeline_in(m, c, s, lay, r, tl, &st, &in);
    uint64_t h = 0;
    if (tl == NULL) {
        *step = aps_schedule_lower_bound(&in);
        if (*step > cutoff || aps_schedule_memo_find(&in, step, &h))
            return APS_OK;
    }
    aps_schedule_out out;
    aps_status status = aps_schedule_simulate(&in, &out);
    *step = out.step;
    if (status == APS_OK && tl == NULL)
        aps_schedule_memo_store(&in, h, out.step);
    return status;
}

static double max0(double x) { return x > 0.0 ? x : 0.0; }

/** PP_BUBBLE: the slowest rank's idle time in the simulated schedule, or
 *  when not `simulated` the closed form on the slowest stage (SC'21
 *  s.2.2), which costs nothing to compute. */
static aps_status pipeline_bubble(const aps_model *m, const aps_cluster *c,
                                  const aps_strategy *s, const aps_layout *lay,
                                  const aps_stage_times *r, double tf,
                                  double tb, bool simulated, aps_estimate *out)
{
    double bubble = (double)(lay->p - 1) / (double)lay->v * (tf + tb);
    if (simulated) {
        double step;
        aps_status st = aps_pipeline_step(m, c, s, lay, r,
                                          aps_timeline_capture(), HUGE_VAL,
                                          &step);
        if (st != APS_OK)
            return st;
        bubble = max0(step - (double)lay->m * (tf + tb));
    }
    aps_set_perf(out, APS_PERF_PP_BUBBLE, bubble, bubble);
    return APS_OK;
}

/** Share of the p2p transfers hidden behind compute: training.
 *  pp_p2p_overlap, or under the interleaved schedule with
 *  overlap_p2p_comm (Megatron --overlap-p2p-communication) all but the
 *  warm-up chunks of the first rank, (p-1) x 2 + (v-1) x G, and as many in
 *  the flush (Megatron's get_num_warmup_microbatches; --overlap-p2p-
 *  communication-warmup-flush is off by default), of `chunks`. */
static double p2p_hidden(const aps_training *t, const aps_layout *lay,
                         double chunks, bool simulated)
{
    double hidden = t->pp_p2p_overlap;
    if (lay->v > 1 && t->overlap_p2p_comm &&
        aps_profile(t)->interleaved_p2p_overlap) {
        double p = (double)lay->p, v = (double)lay->v;
        double G = (double)aps_schedule_group(lay->p, lay->g);
        double warm = 2.0 * (p - 1.0) + (v - 1.0) * G;
        double steady = 1.0 - warm / chunks; /* 2 warm of 2 chunks */
        /* simulated, the warm-up and flush transfers delay the next stage
         * on the schedule's critical path (in the bubble) and the rank
         * runs on: none left exposed here */
        if (simulated)
            steady = 1.0;
        if (steady > hidden)
            hidden = steady;
    }
    return hidden;
}

aps_status aps_pipeline_perf(const aps_model *m, const aps_cluster *c,
                             const aps_training *t, const aps_strategy *s,
                             const aps_layout *lay, const aps_stage_times *r,
                             double tf, double tb, aps_estimate *out)
{
    bool simulated = out->mem_limited <= out->mem_limit;
    aps_status st = pipeline_bubble(m, c, s, lay, r, tf, tb, simulated, out);
    if (st != APS_OK)
        return st;
    double bw, alpha;
    aps_p2p_link(c, pp_stride(s), lay->p, &bw, &alpha);
    double chunks = (double)lay->m * (double)lay->v;
    double p2p = 2.0 * chunks * (p2p_bytes(m, s, lay) / bw + alpha);
    double hidden = p2p_hidden(t, lay, chunks, simulated);
    aps_set_perf(out, APS_PERF_PP_P2P, p2p,
                 aps_interfered(t, p2p, p2p * (1.0 - hidden)));
    return APS_OK;
}
