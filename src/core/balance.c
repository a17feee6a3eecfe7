/*
 * balance.c -- layers and recomputed layers per pipeline rank (MODELING.md
 * "Pipeline balancing").
 *
 * balance_stages: the contiguous partition that minimises the slowest
 * stage's time per micro-batch (which sets the 1F1B pace and the bubble),
 * among those that fit the memory limit.  Layers move in units of v (a
 * rank's model chunks stay equal).
 *
 * 1. Every layer costs the same, so stage i costs about e_i + k u_i for k
 *    layers, e_i being its fixed work (embedding on the first, output layer
 *    and loss on the last), sampled from the estimator for every stage.
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
 *
 * auto_recompute (full granularity): per stage, the fewest recomputed
 * layers that bring the stage under the memory limit; 0 where it already
 * fits, all of the stage's layers where nothing fits (the memory check
 * then reports it).  A framework with one recompute count for every model
 * chunk (Megatron's --recompute-num-layers) then takes the smallest count
 * that gives every stage at least what it needs.  Memory falls as
 * recomputed layers grow (each keeps only its input), past the one-layer
 * transient that the first adds, so a bisection over r in [1, layers]
 * finds the minimum.
 */
#include <string.h>
#include "internal.h"

/** Seconds per micro-batch a stage cost adds per unit of memory overflow
 *  (mem_total / limit), so that a partition that fits always beats one
 *  that does not. */
#define APS_BALANCE_OVERFLOW_PENALTY 1e6
/** Bisection steps on the bottleneck time: 64 halvings shrink the
 *  interval by 2^-64, below a double's resolution (2^-52 relative). */
#define APS_BALANCE_BISECTION_STEPS 64
/** Local-search moves allowed, per layer of the model. */
#define APS_BALANCE_ROUNDS_PER_LAYER 4
/** Seconds a move must gain to be taken (ends ties). */
#define APS_BALANCE_MIN_GAIN 1e-12

/** Forward plus backward seconds of one micro-batch on stage i as laid
 *  out (aps_stage_time_build with the embedding and output layer). */
static double stage_seconds(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            const aps_layout *lay, const aps_dp_plan *plan,
                            const aps_layer_cost *lc, int64_t i)
{
    aps_stage_time tm;
    double tf, tb;
    aps_stage_time_build(m, c, t, s, lay, plan, lc, i, true, &tm);
    aps_stage_fwd_bwd(&tm, &tf, &tb);
    return tf + tb;
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
    if (!(s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL))
        return aps_given_recompute(s, i, lay->layers[i]);
    aps_stage_estimate st;
    lay->recompute[i] = 0;
    aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
    if (st.mem_total <= limit)
        return 0;
    int64_t lo = 1, hi = lay->layers[i];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        lay->recompute[i] = mid;
        aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
        if (st.mem_total <= limit)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
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
    double over = st.mem_total > limit ? st.mem_total / limit : 0.0;
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

/** Megatron's split (p > 2): km layers on each middle stage, the rest
 *  split between the first and the last, the pair that minimises the
 *  largest affine cost, into k; false if none exists. */
static bool split_first_last(int64_t p, int64_t L, int64_t v,
                             const double *e, const double *u, int64_t *k)
{
    double best = -1.0;
    for (int64_t km = v; km * (p - 2) <= L - 2 * v; km += v) {
        double cm = 0.0;
        for (int64_t i = 1; i < p - 1; i++) {
            double ci = e[i] + (double)km * u[i];
            cm = ci > cm ? ci : cm;
        }
        int64_t R = L - (p - 2) * km;
        for (int64_t k0 = v; k0 <= R - v; k0 += v) {
            double c0 = e[0] + (double)k0 * u[0];
            double cl = e[p - 1] + (double)(R - k0) * u[p - 1];
            double cost = cm > c0 ? cm : c0;
            cost = cl > cost ? cl : cost;
            if (best < 0.0 || cost < best) {
                best = cost;
                k[0] = k0;
                k[p - 1] = R - k0;
                for (int64_t i = 1; i < p - 1; i++)
                    k[i] = km;
            }
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

/** Local search from the layout: v layers at a time off the slowest stage
 *  to a neighbour while that lowers the pair's larger real cost; cost[i]
 *  holds stage_cost of every stage and is kept up to date. */
static void local_search(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, double limit, double *cost)
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
    }
}

/** balance_stages (see the file comment): the affine split, then the
 *  local search on the real costs; the layout is left as it was when the
 *  affine samples are degenerate or no split exists. */
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
    if (!(first_last ? split_first_last(p, L, v, e, u, k)
                     : split_bisect(p, L, v, e, u, k)))
        return;
    memcpy(lay->layers, k, (size_t)p * sizeof k[0]);
    set_firsts(lay);
    double cost[APS_MAX_STAGES];
    for (int64_t i = 0; i < p; i++)
        cost[i] = stage_cost(m, c, t, s, lay, plan, lc, i, limit);
    if (!first_last)
        local_search(m, c, t, s, lay, plan, lc, limit, cost);
}

/** auto_recompute (see the file comment). */
static void assign_recompute(const aps_model *m, const aps_cluster *c,
                             const aps_training *t, const aps_strategy *s,
                             aps_layout *lay, const aps_dp_plan *plan,
                             const aps_layer_cost *lc, double limit)
{
    for (int64_t i = 0; i < lay->p; i++)
        lay->recompute[i] = stage_recompute(m, c, t, s, lay, plan, lc, i, limit);
    if (aps_profile(t)->recompute_count_per_chunk)
        aps_layout_one_recompute_count(lay);
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
    if (s->balance_stages && lay->p > 1 && !partition_given(s))
        balance_partition(m, c, t, s, lay, plan, lc, limit);
    if (s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL)
        assign_recompute(m, c, t, s, lay, plan, lc, limit);
}
