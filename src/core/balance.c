/*
 * balance.c -- layers and recomputed layers per pipeline rank (MODELING.md
 * "Pipeline balancing").
 *
 * balance_stages: the contiguous partition with the shortest step among
 * the layouts the search visits, a layout that fits the memory limit
 * beating one that does not.  Layers move in units of v (a rank's model
 * chunks stay equal).
 *
 * 1. Every layer costs the same (the uniform per-layer cost: a rank's
 *    first/last layers in bf16, bf16layers.c, are not told apart here;
 *    steps 2 and 3 score layouts with them), so stage i costs about
 *    e_i + k u_i for k layers, e_i being its fixed work (embedding on the
 *    first, output layer and loss on the last), sampled from the
 *    estimator for every stage.
 *    For Megatron-LM the split keeps the middle stages equal, what
 *    --decoder-first/last-pipeline-num-layers express: there the middle
 *    count is searched and the rest split between first and last.  Otherwise a
 *    bisection on the bottleneck T gives stage i floor((T - e_i) / u_i)
 *    layers (the linear-partition bottleneck problem; Galvatron and
 *    MindSpore's SAPP balance the same way, by cost per stage).
 * 2. Then, except for Megatron's constrained split, a local search moves v
 *    layers across one boundary at a time while that lowers the slowest
 *    stage's real cost (stage_cost: exposed FSDP time, auto recompute and
 *    memory overflow included), which the affine model leaves out.
 * 3. The slowest stage sets the steady 1F1B pace, but not the warm-up and
 *    cool-down: which stage is slow, the output layer on the last stage,
 *    interleaving and the zero-bubble orders change the step (with m = 2
 *    micro-batches 1F1B's step is sum_i T_i + T_last + 2 (p - 1) hops,
 *    whatever the slowest stage; tests/c/test_estimate.c
 *    test_balanced_by_simulated_step).  So every layout of steps 1 and 2
 *    is scored (score_layout) by the step estimate.c reports: memory with
 *    recompute assigned as below, then for a layout that fits the same
 *    event simulation (schedule.c, schedule_zb.c) of every rank's times
 *    with the same p2p and schedule, plus the data-parallel sync and
 *    optimizer step, which follow the largest stage (the PP p2p term is
 *    the same for every split and left out).  From the best, a hill-climb
 *    scores every neighbour -- v layers across one boundary either way;
 *    for Megatron's split, v between first and last, or v more or fewer
 *    on every middle stage with the rest split as in step 1 -- and moves
 *    while the step falls.  While nothing fits it climbs on the largest
 *    stage's overflow instead (from at most APS_BALANCE_OVERFLOW_REACH
 *    times the limit); when nothing it met fits, the layout of
 *    step 2 stands (the estimate then reports the memory limit).  At most
 *    APS_BALANCE_SIM_LAYOUTS layouts are scored per strategy, a layout
 *    met twice once: each simulation is O(p v m) events, and only
 *    strategies with balance_stages pay (bench/run.sh, docs/modeling.md).
 *
 * auto_recompute (full granularity): per stage, the fewest recomputed
 * layers that bring the stage under the memory limit; 0 where it already
 * fits, all of the stage's layers where nothing fits (the memory check
 * then reports it).  A framework with one recompute count for every model
 * chunk (Megatron's --recompute-num-layers) then takes the smallest count
 * that gives every stage at least what it needs.  Memory falls as
 * recomputed layers grow (each keeps only its input), past the one-layer
 * transient that the first adds, so a bisection over r in [1, layers]
 * finds the minimum.  Under balance_stages the recompute is chosen this
 * way for every layout scored, so the step judges a layout with the
 * recompute it will run (a split that moves layers off a stage that must
 * recompute saves its recompute time in the simulation).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/** Seconds per micro-batch a stage cost adds per unit of memory overflow
 *  (mem_limited / limit), so that a partition that fits always beats one
 *  that does not. */
#define APS_BALANCE_OVERFLOW_PENALTY 1e6
/** Bisection steps on the bottleneck time: 64 halvings shrink the
 *  interval by 2^-64, below a double's resolution (2^-52 relative). */
#define APS_BALANCE_BISECTION_STEPS 64
/** Local-search moves allowed, per layer of the model. */
#define APS_BALANCE_ROUNDS_PER_LAYER 4
/** Seconds a move must gain to be taken (ends ties). */
#define APS_BALANCE_MIN_GAIN 1e-12
/** Largest overflow (the fullest stage's memory / limit) from which the
 *  hill-climb still looks for a split that fits when none of the
 *  bottleneck search's does: on bench/llama3_70b_1024_balanced.lua no
 *  split further over (the affine split's overflow up to 1.55) reached
 *  one that fits, and those climbs were half of all layouts scored. */
#define APS_BALANCE_OVERFLOW_REACH 1.5
/** Layouts one balanced search scores by the simulated step at most (the
 *  affine split, the bottleneck search's path, then the hill-climb's
 *  neighbours; a layout met twice is scored once): bounds the extra
 *  simulations per strategy, each O(p v m) (issue 15 item 3). */
#define APS_BALANCE_SIM_LAYOUTS 48

/** Forward plus backward seconds of one micro-batch on stage i as laid
 *  out, the embedding and the output layer where the schedule runs them
 *  (aps_stage_time_placed: both on rank 0 under the V). */
static double stage_seconds(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            const aps_layout *lay, const aps_dp_plan *plan,
                            const aps_layer_cost *lc, int64_t i)
{
    aps_stage_time tm;
    double tf, tb;
    aps_stage_time_placed(m, c, t, s, lay, plan, lc, i, &tm);
    aps_stage_fwd_bwd(&tm, &tf, &tb);
    return tf + tb;
}

/** True under auto_recompute with full recompute (see the file comment). */
static bool auto_full(const aps_strategy *s)
{
    return s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL;
}

/** Recomputed layers of stage i as laid out: under auto_recompute the
 *  fewest that fit the memory limit (memory falls as recomputed layers
 *  grow, past the one-layer transient the first adds, so a bisection over
 *  [1, layers] finds it; all layers when nothing fits), else the
 *  strategy's recompute_num_layers. */
static int64_t stage_recompute(const aps_model *m, const aps_cluster *c,
                               const aps_training *t, const aps_strategy *s,
                               aps_layout *lay, const aps_dp_plan *plan,
                               const aps_layer_cost *lc, int64_t i,
                               double limit)
{
    if (!auto_full(s))
        return aps_given_recompute(s, i, lay->layers[i]);
    aps_stage_estimate st;
    lay->recompute[i] = 0;
    aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
    if (st.mem_limited <= limit)
        return 0;
    int64_t lo = 1, hi = lay->layers[i];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        lay->recompute[i] = mid;
        aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
        if (st.mem_limited <= limit)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/** Every stage's recompute as the estimate runs it: stage_recompute, then
 *  under auto_recompute Megatron's one count for every model chunk (see
 *  the file comment). */
static void assign_recompute(const aps_model *m, const aps_cluster *c,
                             const aps_training *t, const aps_strategy *s,
                             aps_layout *lay, const aps_dp_plan *plan,
                             const aps_layer_cost *lc, double limit)
{
    for (int64_t i = 0; i < lay->p; i++)
        lay->recompute[i] = stage_recompute(m, c, t, s, lay, plan, lc, i, limit);
    if (auto_full(s) && aps_profile(t)->recompute_count_per_chunk)
        aps_layout_one_recompute_count(lay);
}

/** Time per micro-batch of stage i as laid out (its recompute chosen by
 *  stage_recompute), plus APS_BALANCE_OVERFLOW_PENALTY per unit of
 *  memory overflow. */
static double stage_cost(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, int64_t i, double limit)
{
    lay->recompute[i] = stage_recompute(m, c, t, s, lay, plan, lc, i, limit);
    double seconds = stage_seconds(m, c, t, s, lay, plan, lc, i);
    aps_stage_estimate st;
    aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
    double over = st.mem_limited > limit ? st.mem_limited / limit : 0.0;
    return seconds + APS_BALANCE_OVERFLOW_PENALTY * over;
}

/** First layer of every rank from the layers per rank. */
static void set_firsts(aps_layout *lay)
{
    int64_t first = 0;
    lay->chunks_valid = false; /* rebalanced: equal chunks per rank */
    for (int64_t i = 0; i < lay->p; i++) {
        lay->first[i] = first;
        first += lay->layers[i];
    }
}

/** The affine cost e[i] + k u[i] of k layers on every stage, sampled at
 *  v and 2 v layers; false when a sample is degenerate (u <= 0), the
 *  layout's layers left as they were. */
static bool affine_costs(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, double *e, double *u)
{
    int64_t v = lay->v;
    int64_t keep[APS_MAX_STAGES];
    memcpy(keep, lay->layers, sizeof keep);
    for (int64_t i = 0; i < lay->p; i++) {
        double cost[2];
        for (int64_t j = 1; j <= 2; j++) {
            lay->layers[i] = j * v;
            lay->recompute[i] =
                s->auto_recompute ? 0 : aps_given_recompute(s, i, j * v);
            cost[j - 1] = stage_seconds(m, c, t, s, lay, plan, lc, i);
        }
        lay->layers[i] = keep[i];
        u[i] = (cost[1] - cost[0]) / (double)v;
        e[i] = cost[0] - (double)v * u[i];
        if (!(u[i] > 0.0)) /* degenerate sample: keep the placeholder */
            return false;
    }
    return true;
}

/** True when k layers per rank, each rank's split into v chunks as
 *  aps_layout_chunk splits it, start every model chunk on a layer that
 *  computes its top-k (aps_dsa_chunks_check); always without cross-layer
 *  top-k sharing. */
static bool dsa_split_ok(const aps_model *m, const aps_layout *lay,
                         const int64_t *k)
{
    if (m->index_topk_freq <= 1 || lay->dsa_split_free)
        return true;
    int64_t chunks[APS_MAX_STAGES];
    for (int64_t i = 0; i < lay->p; i++)
        for (int64_t c = 0; c < lay->v; c++)
            chunks[aps_chunk_stage(lay->sched, lay->p, i, c)] =
                k[i] / lay->v + (c < k[i] % lay->v ? 1 : 0);
    return aps_dsa_chunks_check(m, chunks, lay->p * lay->v, NULL, 0) ==
           APS_REASON_NONE;
}

/** Moves each boundary of the one-chunk-per-rank split k to the nearest
 *  layer that computes its top-k (ties: the earlier), keeping every rank
 *  at least one layer, so that the bottleneck split of a model sharing
 *  top-k across layers starts from a layout Megatron-Core builds; with v
 *  > 1 or without sharing k is left as it is. */
static void snap_to_computing(const aps_model *m, const aps_layout *lay,
                              int64_t *k)
{
    int64_t p = lay->p, L = m->num_layers;
    if (m->index_topk_freq <= 1 || lay->v != 1)
        return;
    int64_t prev = 0, at = 0;
    for (int64_t i = 1; i < p; i++) {
        at += k[i - 1];
        int64_t lo = prev + 1, hi = L - (p - i), best = -1;
        for (int64_t d = 0; best < 0 && d <= L; d++) {
            if (at - d >= lo && at - d <= hi && aps_dsa_layer_computes_topk(m, at - d))
                best = at - d;
            else if (at + d >= lo && at + d <= hi && aps_dsa_layer_computes_topk(m, at + d))
                best = at + d;
        }
        if (best < 0)
            return; /* none: the check after balancing refuses it */
        k[i - 1] = best - prev;
        prev = best;
    }
    k[p - 1] = L - prev;
}

/** Megatron's split (p > 2) with km layers on each middle stage: the
 *  rest, R = L - (p - 2) km, split between the first and the last stage
 *  as the pair (k0, R - k0) that minimises the largest affine cost, into
 *  k; returns that cost, or -1 when no pair exists (R < 2 v). */
static double split_first_last_at(const aps_model *m, const aps_layout *lay,
                                  const double *e, const double *u,
                                  int64_t km, int64_t *k)
{
    int64_t p = lay->p, L = m->num_layers, v = lay->v;
    int64_t kk[APS_MAX_STAGES];
    for (int64_t i = 1; i < p - 1; i++)
        kk[i] = km;
    double best = -1.0, cm = 0.0;
    for (int64_t i = 1; i < p - 1; i++) {
        double ci = e[i] + (double)km * u[i];
        cm = ci > cm ? ci : cm;
    }
    int64_t R = L - (p - 2) * km;
    for (int64_t k0 = v; k0 <= R - v; k0 += v) {
        double c0 = e[0] + (double)k0 * u[0];
        /* c0 grows with k0 (u[0] > 0, affine_costs), so no later pair
         * costs less than best: stop (the same pair as the full scan) */
        if (best >= 0.0 && c0 >= best)
            break;
        double cl = e[p - 1] + (double)(R - k0) * u[p - 1];
        double cost = cm > c0 ? cm : c0;
        cost = cl > cost ? cl : cost;
        kk[0] = k0;
        kk[p - 1] = R - k0;
        if ((best < 0.0 || cost < best) && dsa_split_ok(m, lay, kk)) {
            best = cost;
            memcpy(k, kk, (size_t)p * sizeof kk[0]);
        }
    }
    return best;
}

/** Megatron's split (p > 2): km layers on each middle stage, the rest
 *  split between the first and the last, the (km, k0) that minimises the
 *  largest affine cost, into k; false if none exists. */
static bool split_first_last(const aps_model *m, const aps_layout *lay,
                             const double *e, const double *u, int64_t *k)
{
    int64_t p = lay->p, L = m->num_layers, v = lay->v;
    double best = -1.0;
    for (int64_t km = v; km * (p - 2) <= L - 2 * v; km += v) {
        int64_t kk[APS_MAX_STAGES];
        double cost = split_first_last_at(m, lay, e, u, km, kk);
        if (cost >= 0.0 && (best < 0.0 || cost < best)) {
            best = cost;
            memcpy(k, kk, (size_t)p * sizeof kk[0]);
        }
    }
    return best >= 0.0;
}

/** Layers (a multiple of v, at least v, at most L) a stage of affine cost
 *  e + k u takes within the bottleneck time T. */
static int64_t layers_within(double T, double e, double u, int64_t L,
                             int64_t v)
{
    double cap = (T - e) / u;
    int64_t ki = cap > (double)L ? L : (int64_t)cap / v * v;
    return ki < v ? v : ki;
}

/** The bottleneck split: bisection on the slowest stage's time T for the
 *  smallest at which the stages' layers_within cover all L layers, then
 *  the surplus taken v at a time off the costliest stages, into k. */
static bool split_bisect(int64_t p, int64_t L, int64_t v, const double *e,
                         const double *u, int64_t *k)
{
    double lo = 0.0, hi = 0.0;
    for (int64_t i = 0; i < p; i++) {
        double one = e[i] + (double)v * u[i], all = e[i] + (double)L * u[i];
        lo = one > lo ? one : lo;
        hi = all > hi ? all : hi;
    }
    for (int iter = 0; iter < APS_BALANCE_BISECTION_STEPS; iter++) {
        double mid = 0.5 * (lo + hi);
        int64_t sum = 0;
        for (int64_t i = 0; i < p && sum < L; i++)
            sum += layers_within(mid, e[i], u[i], L, v);
        if (sum >= L)
            hi = mid;
        else
            lo = mid;
    }
    int64_t sum = 0;
    for (int64_t i = 0; i < p; i++) {
        k[i] = layers_within(hi, e[i], u[i], L, v);
        sum += k[i];
    }
    while (sum > L) { /* take the surplus off the costliest stages */
        int64_t worst = -1;
        for (int64_t i = 0; i < p; i++)
            if (k[i] > v && (worst < 0 || e[i] + (double)k[i] * u[i] >
                                              e[worst] + (double)k[worst] * u[worst]))
                worst = i;
        if (worst < 0)
            return false; /* cannot happen: L >= p v was checked */
        k[worst] -= v;
        sum -= v;
    }
    return true;
}

/** Moves n layers from stage `from` to stage `to` and resets the firsts. */
static void move_layers(aps_layout *lay, int64_t from, int64_t to, int64_t n)
{
    lay->layers[from] -= n;
    lay->layers[to] += n;
    set_firsts(lay);
}

/** The neighbour of stage `slow` whose taking v of its layers lowers the
 *  pair's larger stage_cost most (the layout restored afterwards), with
 *  the pair's costs after the move; -1 if no move gains. */
static int64_t best_move(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, double limit,
                         int64_t slow, double slow_cost, double *cs_best,
                         double *ct_best)
{
    int64_t v = lay->v, best_to = -1;
    double best_pair = slow_cost;
    for (int64_t to = slow - 1; to <= slow + 1; to += 2) {
        if (to < 0 || to >= lay->p || lay->layers[slow] - v < v)
            continue;
        move_layers(lay, slow, to, v);
        double cs = stage_cost(m, c, t, s, lay, plan, lc, slow, limit);
        double ct = stage_cost(m, c, t, s, lay, plan, lc, to, limit);
        double pair = cs > ct ? cs : ct;
        if (pair < best_pair - APS_BALANCE_MIN_GAIN) {
            best_pair = pair;
            best_to = to;
            *cs_best = cs;
            *ct_best = ct;
        }
        move_layers(lay, to, slow, v);
        lay->recompute[slow] = stage_recompute(m, c, t, s, lay, plan, lc, slow, limit);
        lay->recompute[to] = stage_recompute(m, c, t, s, lay, plan, lc, to, limit);
    }
    return best_to;
}

/** A layout the balanced search scored: layers per rank, whether every
 *  stage fits the memory limit (recompute as the estimate assigns it),
 *  and then its step, else its overflow. */
typedef struct {
    int64_t layers[APS_MAX_STAGES];
    bool fits;
    double step; /**< s, layout_step; only when fits */
    double over; /**< the largest stage's mem_limited / limit; only when
                      it does not fit */
} scored_layout;

/** True if layout a is better than b (b NULL: any is): one that fits
 *  beats one that does not; of two that fit, the shorter step by more
 *  than APS_BALANCE_MIN_GAIN; of two that do not, the smaller overflow
 *  by more than that. */
static bool better(const scored_layout *a, const scored_layout *b)
{
    if (b == NULL)
        return true;
    if (a->fits != b->fits)
        return a->fits;
    return a->fits ? a->step < b->step - APS_BALANCE_MIN_GAIN
                   : a->over < b->over - APS_BALANCE_MIN_GAIN;
}

/** The layouts one balanced search has scored (at most
 *  APS_BALANCE_SIM_LAYOUTS) and the best of them (better); est is
 *  scratch for the per-step terms. */
typedef struct {
    scored_layout seen[APS_BALANCE_SIM_LAYOUTS];
    int n;
    const scored_layout *best;
    aps_estimate est;
} layout_scores;

/** Step of a layout that fits (lay's recompute assigned), seconds: the
 *  simulated pipeline of every rank's times (aps_stage_time_rank), as
 *  estimate.c simulates it (the same p2p and schedule), but never less
 *  than m micro-batches of the slowest rank as the schedule runs it
 *  (estimate.c's compute plus bubble), plus the exposed data-parallel sync and optimizer step
 *  (aps_sync_perf), which follow the rank with the most parameters and
 *  the slowest rank's times.  That is the step the estimate reports less
 *  its PP p2p term, the same for every split.  A layout whose step
 *  exceeds `cutoff` seconds by its schedule's lower bound alone is not
 *  simulated (aps_pipeline_step): its step is then that bound, > cutoff.
 *  est->stages[i].params must hold every rank's parameters; false when
 *  the simulation fails. */
static bool layout_step(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        const aps_layout *lay, const aps_dp_plan *plan,
                        const aps_layer_cost *lc, double cutoff,
                        aps_estimate *est, double *step)
{
    aps_stage_times r;
    double tf = 0.0, tb = 0.0;
    for (int64_t i = 0; i < lay->p; i++) {
        aps_stage_time tm; /* the rank as the schedule runs it */
        double f, b;
        aps_stage_time_rank(m, c, t, s, lay, plan, lc, i, &tm, &r);
        aps_stage_fwd_bwd(&tm, &f, &b);
        if (i == 0 || f + b > tf + tb) {
            tf = f;
            tb = b;
        }
    }
    memset(est->perf_exposed, 0, sizeof est->perf_exposed);
    aps_sync_perf(m, c, t, s, lay, plan, tf, tb, est);
    double per_step = 0.0;
    for (int k = 0; k < APS_PERF_COUNT; k++)
        per_step += est->perf_exposed[k];
    double pace = (double)lay->m * (tf + tb), pipe;
    if (aps_pipeline_step(m, c, s, lay, &r, NULL, cutoff - per_step,
                          &pipe) != APS_OK)
        return false;
    *step = (pipe > pace ? pipe : pace) + per_step;
    return true;
}

/** Scores lay's layers (a scratch copy: lay is unchanged): the memory of
 *  every stage with recompute assigned as the estimate assigns it
 *  (assign_recompute), and for a layout that fits, layout_step.  A layout
 *  met before returns its earlier score; NULL when the table is full or
 *  absent (sc NULL: no memory for it).  Makes it the best unless the best
 *  is better (ties go to the later layout). */
static const scored_layout *
score_layout(const aps_model *m, const aps_cluster *c, const aps_training *t,
             const aps_strategy *s, const aps_layout *lay,
             const aps_dp_plan *plan, const aps_layer_cost *lc, double limit,
             layout_scores *sc)
{
    if (sc == NULL || !dsa_split_ok(m, lay, lay->layers))
        return NULL; /* a split Megatron-Core refuses is never the best */
    size_t bytes = (size_t)lay->p * sizeof lay->layers[0];
    for (int j = 0; j < sc->n; j++)
        if (memcmp(sc->seen[j].layers, lay->layers, bytes) == 0)
            return &sc->seen[j];
    if (sc->n == APS_BALANCE_SIM_LAYOUTS)
        return NULL;
    scored_layout *out = &sc->seen[sc->n++];
    memcpy(out->layers, lay->layers, bytes);
    aps_layout trial = *lay;
    assign_recompute(m, c, t, s, &trial, plan, lc, limit);
    double peak = 0.0;
    for (int64_t i = 0; i < trial.p; i++) {
        aps_stage_estimate *st = &sc->est.stages[i];
        aps_stage_memory(m, c, t, s, &trial, plan, lc, i, st);
        peak = st->mem_limited > peak ? st->mem_limited : peak;
    }
    out->fits = peak <= limit;
    out->over = peak / limit;
    out->step = 0.0;
    /* not simulated unless it may beat the best by APS_BALANCE_MIN_GAIN;
     * a failed simulation is judged as not fitting */
    double cutoff = sc->best != NULL && sc->best->fits
                        ? sc->best->step + APS_BALANCE_MIN_GAIN
                        : HUGE_VAL;
    if (out->fits)
        out->fits = layout_step(m, c, t, s, &trial, plan, lc, cutoff,
                                &sc->est, &out->step);
    if (sc->best == NULL || !better(sc->best, out))
        sc->best = out;
    return out;
}

/** Hill-climb from the best scored layout (better: on the step, or on the
 *  overflow while none fits): scores every neighbour (v layers across one
 *  boundary, either way; under Megatron's split (first_last), v layers
 *  between the first and the last stage, or v more or fewer on every
 *  middle stage with the rest split by split_first_last_at), moves to the
 *  best while it gains, and stops when none gains, the table is full, or
 *  nothing fits and the best overflows by more than
 *  APS_BALANCE_OVERFLOW_REACH.  The best is left in sc->best. */
static void simulated_climb(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            aps_layout *lay, const aps_dp_plan *plan,
                            const aps_layer_cost *lc, double limit,
                            bool first_last, const double *e, const double *u,
                            layout_scores *sc)
{
    int64_t p = lay->p, v = lay->v;
    const scored_layout *from = NULL;
    while (sc != NULL && sc->best != NULL && sc->best != from &&
           sc->n < APS_BALANCE_SIM_LAYOUTS &&
           (sc->best->fits || sc->best->over <= APS_BALANCE_OVERFLOW_REACH)) {
        from = sc->best;
        int64_t base[APS_MAX_STAGES];
        size_t bytes = (size_t)p * sizeof base[0];
        memcpy(base, from->layers, bytes);
        /* neighbours: a move of v from stage a to stage b, or (first_last)
         * the middle count one step of v either way; for a model sharing
         * top-k across layers the smallest multiple of v (up to its
         * index_topk_freq) that keeps every chunk on a computing layer */
        int64_t moves = first_last ? 4 : 2 * (p - 1);
        int64_t steps = m->index_topk_freq > 1 ? m->index_topk_freq : 1;
        for (int64_t n = 0; n < moves; n++) {
            for (int64_t j = 1; j <= steps; j++) {
                int64_t step = j * v;
                memcpy(lay->layers, base, bytes);
                if (first_last && n >= 2) {
                    int64_t km = base[1] + (n == 2 ? step : -step);
                    if (km < v || split_first_last_at(m, lay, e, u, km,
                                                      lay->layers) < 0.0)
                        continue;
                } else {
                    /* boundary n / 2: odd n moves up, even n down */
                    int64_t a = first_last ? (n == 0 ? 0 : p - 1)
                                           : n / 2 + (n % 2 ? 0 : 1);
                    int64_t b = first_last ? p - 1 - a
                                           : n / 2 + (n % 2 ? 1 : 0);
                    if (lay->layers[a] - step < v)
                        break;
                    lay->layers[a] -= step;
                    lay->layers[b] += step;
                }
                if (!dsa_split_ok(m, lay, lay->layers))
                    continue;
                set_firsts(lay);
                score_layout(m, c, t, s, lay, plan, lc, limit, sc);
                break;
            }
        }
        if (!better(sc->best, from))
            sc->best = from; /* a tie: no gain, stop here */
    }
}

/** Local search from the layout: v layers at a time off the slowest stage
 *  to a neighbour while that lowers the pair's larger real cost; cost[i]
 *  holds stage_cost of every stage and is kept up to date.  Every layout
 *  it reaches is scored into sc. */
static void local_search(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, double limit, double *cost,
                         layout_scores *sc)
{
    int64_t rounds = APS_BALANCE_ROUNDS_PER_LAYER * m->num_layers;
    for (int64_t round = 0; round < rounds; round++) {
        int64_t slow = 0;
        for (int64_t i = 1; i < lay->p; i++)
            if (cost[i] > cost[slow])
                slow = i;
        double bc_slow = 0, bc_to = 0;
        int64_t to = best_move(m, c, t, s, lay, plan, lc, limit, slow,
                               cost[slow], &bc_slow, &bc_to);
        if (to < 0)
            break;
        move_layers(lay, slow, to, lay->v);
        cost[slow] = bc_slow;
        cost[to] = bc_to;
        lay->recompute[slow] = stage_recompute(m, c, t, s, lay, plan, lc, slow, limit);
        lay->recompute[to] = stage_recompute(m, c, t, s, lay, plan, lc, to, limit);
        score_layout(m, c, t, s, lay, plan, lc, limit, sc);
    }
}

/** The layouts balance_partition scores, kept per thread: a search
 *  balances tens of thousands of strategies (28,736 on the 18 M bench
 *  space), each of these 155 KB a fresh allocation before. */
static _Thread_local layout_scores *scores;

/** balance_stages (see the file comment): the affine split, the local
 *  search on the real costs, each layout scored by the simulated step,
 *  then the hill-climb on it; the fitting layout with the smallest step
 *  wins, the bottleneck search's own when none fits.  The layout is left
 *  as it was when the affine samples are degenerate or no split exists. */
static void balance_partition(const aps_model *m, const aps_cluster *c,
                              const aps_training *t, const aps_strategy *s,
                              aps_layout *lay, const aps_dp_plan *plan,
                              const aps_layer_cost *lc, double limit)
{
    int64_t p = lay->p, L = m->num_layers, v = lay->v;
    double e[APS_MAX_STAGES], u[APS_MAX_STAGES];
    if (!affine_costs(m, c, t, s, lay, plan, lc, e, u))
        return;
    int64_t k[APS_MAX_STAGES];
    bool first_last = aps_profile(t)->first_last_partition_only && p > 2;
    if (!(first_last ? split_first_last(m, lay, e, u, k)
                     : split_bisect(p, L, v, e, u, k)))
        return;
    if (!first_last)
        snap_to_computing(m, lay, k);
    memcpy(lay->layers, k, (size_t)p * sizeof k[0]);
    set_firsts(lay);
    if (scores == NULL) /* kept for the thread's next search */
        scores = malloc(sizeof *scores);
    layout_scores *sc = scores;
    if (sc != NULL) {
        sc->n = 0;
        sc->best = NULL;
        score_layout(m, c, t, s, lay, plan, lc, limit, sc);
    }
    if (!first_last) {
        double cost[APS_MAX_STAGES];
        for (int64_t i = 0; i < p; i++)
            cost[i] = stage_cost(m, c, t, s, lay, plan, lc, i, limit);
        local_search(m, c, t, s, lay, plan, lc, limit, cost, sc);
    }
    if (dsa_split_ok(m, lay, lay->layers)) /* the bottleneck's */
        memcpy(k, lay->layers, (size_t)p * sizeof k[0]);
    simulated_climb(m, c, t, s, lay, plan, lc, limit, first_last, e, u, sc);
    bool fits = sc != NULL && sc->best != NULL && sc->best->fits;
    memcpy(lay->layers, fits ? sc->best->layers : k, (size_t)p * sizeof k[0]);
    set_firsts(lay);
}

/** True if the strategy gives stage_partition explicitly. */
static bool partition_given(const aps_strategy *s)
{
    for (int64_t i = 0; i < s->pp_degree; i++)
        if (s->stage_partition[i] != 0)
            return true;
    return false;
}

void aps_balance_layout(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        aps_layout *lay, const aps_dp_plan *plan,
                        const aps_layer_cost *lc, double limit)
{
    bool balanced = s->balance_stages && lay->p > 1 && !partition_given(s);
    if (balanced)
        balance_partition(m, c, t, s, lay, plan, lc, limit);
    if (balanced || auto_full(s)) /* the recompute of the layers chosen */
        assign_recompute(m, c, t, s, lay, plan, lc, limit);
}
