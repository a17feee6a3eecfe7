/*
 * estimate.c -- one strategy end to end: checks, per-stage memory, time per
 * step and derived throughput (MODELING.md s.3, s.4).
 *
 * Step time: with t_f, t_b the forward and backward time of one
 * micro-batch on the slowest stage (compute plus the exposed TP, CP and
 * FSDP communication inside it),
 *   step = m (t_f + t_b) + bubble
 *          + exposed pp p2p + exposed DP / HSDP sync + optimizer,
 * the bubble being that stage's idle time in the simulated schedule
 * (schedule.c; (p-1)/v (t_f + t_b) for equal stages, Narayanan et al.
 * SC'21 s.2.2, which it keeps for strategies over the memory limit).
 * Every category is reported as total and exposed; step = sum of exposed.
 */
#include <math.h>
#include <string.h>
#include "internal.h"

/** Adam step bytes per parameter moved through HBM: read+write fp32
 *  master, m and v (3 x 8) and read the gradient; plus writing the bf16
 *  working copy where one exists (torch.optim.AdamW foreach / Apex
 *  FusedAdam streaming kernels). */
#define APS_ADAM_STATE_TRAFFIC 24.0
/** SGD with momentum: read+write master and momentum (2 x 8). */
#define APS_SGD_STATE_TRAFFIC 16.0
#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct {
    double comp_fwd, comp_bwd, recompute;
    double tp_total, tp_exposed_fwd, tp_exposed_bwd;
    double cp_total, cp_exposed_fwd, cp_exposed_bwd;
    double ag_total, ag_exposed, rs_total, rs_exposed;
    double fsdp_exposed_fwd, fsdp_exposed_bwd;
    double offload_total, offload_exposed_fwd, offload_exposed_bwd;
    double wgrad; /**< the weight-gradient GEMMs within comp_bwd */
} stage_time;

/** Memory-bound seconds for `bytes` of HBM traffic. */
static double hbm_time(const aps_device *d, double bytes)
{
    return bytes / (d->hbm_bandwidth * d->hbm_efficiency);
}

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

/** Exposed seconds of a communication of `total` seconds of which
 *  `exposed` is on the critical path: the hidden rest still costs
 *  training.overlap_interference of its time (shared SMs and HBM). */
static double interfered(const aps_training *t, double total, double exposed)
{
    double hidden = total - exposed;
    return exposed + (hidden > 0.0 ? t->overlap_interference * hidden : 0.0);
}

static void stage_times(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        const aps_layout *lay, const aps_dp_plan *plan,
                        const aps_layer_cost *lc, int64_t i, bool edges,
                        stage_time *st)
{
    const aps_device *d = &c->device;
    double A = APS_ACT_BYTES;
    double tp = (double)lay->t, h = (double)m->hidden_size;
    double T = (double)lay->b * (double)lay->s_local;
    double rep = (lay->t > 1 && s->sequence_parallel) ? tp : 1.0;
    double L = (double)lay->layers[i], rc = (double)lay->recompute[i];
    bool first = edges && i == 0, last = edges && i == lay->p - 1;
    memset(st, 0, sizeof *st);

    double layer_fwd = lc->gemm_fwd + lc->attn_fwd + lc->membound_fwd +
                       lc->fp8_cast_fwd;
    double layer_bwd = 2.0 * lc->gemm_fwd + lc->attn_bwd +
                       2.0 * lc->membound_fwd + lc->fp8_cast_bwd;
    st->comp_fwd = L * layer_fwd;
    st->comp_bwd = L * layer_bwd;
    /* of a GEMM's backward (twice its forward) the weight gradient is
     * half, as many FLOPs as the forward (dW = X^T dY beside dX = dY W^T);
     * attention and elementwise backwards produce input gradients only
     * (Qi et al. 2024 s.2, the B / W split of zero-bubble schedules) */
    st->wgrad = L * lc->gemm_fwd;
    st->recompute = rc * layer_fwd;
    if (s->layer_recompute == APS_RECOMPUTE_SELECTIVE)
        st->recompute += L * lc->selective_fwd;

    /* TP collectives of the embedding (vocab-parallel output reduced) and
     * of the output layer (SP: gather the sequence before it). */
    double tp_edge_fwd = 0.0, tp_edge_bwd = 0.0;
    if (lay->t > 1) {
        double bw, alpha;
        aps_group_link(c, 1, lay->t, &bw, &alpha);
        double act = A * T * h;
        double ag = aps_allgather_time(lay->t, act, bw, alpha);
        double ar = aps_allreduce_time(lay->t, act, bw, alpha);
        if (first) {
            tp_edge_fwd += s->sequence_parallel ? ag : ar;
            tp_edge_bwd += s->sequence_parallel ? ag : 0.0;
        }
        if (last) {
            tp_edge_fwd += s->sequence_parallel ? ag : 0.0;
            tp_edge_bwd += s->sequence_parallel ? ag : ar;
        }
    }
    if (first) { /* embedding lookup: write the activations */
        st->comp_fwd += hbm_time(d, A * T * h / rep);
        st->comp_bwd += hbm_time(d, 2.0 * A * T * h / rep);
    }
    if (last) { /* output layer GEMM and softmax cross-entropy */
        double V = lay->vocab_padded / tp;
        double g = aps_gemm_time(d, t->precision, T, V, h);
        double ce = hbm_time(d, (2.0 * A + 3.0 * APS_FP32_BYTES) * T * V);
        st->comp_fwd += g + 0.5 * ce;
        st->comp_bwd += 2.0 * g + 0.5 * ce;
        st->wgrad += g;
    }

    double tp_fwd = L * lc->tp_fwd + tp_edge_fwd;
    double tp_bwd = L * lc->tp_bwd + rc * lc->tp_fwd + tp_edge_bwd;
    /* TorchTitan's op-level selective recompute re-runs wk and w3, whose
     * sequence all-gathers are not among the saved ops: 2 all-gathers per
     * layer, a quarter each of the forward's 2 x (all-gather +
     * reduce-scatter) */
    if (s->layer_recompute == APS_RECOMPUTE_SELECTIVE &&
        aps_profile(t)->op_sac_selective && lay->t > 1 && s->sequence_parallel)
        tp_bwd += (L - rc) * 0.5 * lc->tp_fwd;
    aps_recipe_offload_times(
        d, aps_recipe_offload_layers(t, lay->layers[i] - lay->recompute[i],
                                        lay->v),
        lc->act_full, layer_fwd, layer_bwd, &st->offload_total,
        &st->offload_exposed_fwd, &st->offload_exposed_bwd);
    st->tp_total = tp_fwd + tp_bwd;
    st->tp_exposed_fwd = interfered(
        t, tp_fwd, aps_recipe_tp_exposed(t, lay->t, tp_fwd, L * lc->gemm_fwd));
    st->tp_exposed_bwd = interfered(
        t, tp_bwd,
        aps_recipe_tp_exposed(t, lay->t, tp_bwd,
                              (2.0 * L + rc) * lc->gemm_fwd));

    if (lay->c > 1) {
        double ef, eb;
        if (s->cp_comm_type == APS_CP_P2P) { /* hidden behind the chunks */
            ef = lc->cp_fwd > lc->attn_fwd ? lc->cp_fwd - lc->attn_fwd : 0;
            eb = lc->cp_bwd > lc->attn_bwd ? lc->cp_bwd - lc->attn_bwd : 0;
        } else {
            ef = lc->cp_fwd;
            eb = lc->cp_bwd;
        }
        ef = interfered(t, lc->cp_fwd, ef);
        eb = interfered(t, lc->cp_bwd, eb);
        st->cp_total = L * (lc->cp_fwd + lc->cp_bwd) + rc * lc->cp_fwd;
        st->cp_exposed_fwd = L * ef;
        st->cp_exposed_bwd = L * eb + rc * ef;
    }

    if (plan->fsdp_like) {
        double bw, alpha;
        int64_t G = plan->shard_group;
        dp_group_link(c, t, lay->t, G, &bw, &alpha);
        double psi = aps_stage_params(m, lay, i);
        double ag = aps_allgather_time(
            G, aps_recipe_gather_bytes(t, psi, L * aps_layer_matmul_params(m) /
                                                   tp),
            bw, alpha);
        /* FSDP under PP (profile pp_unsharded_grads): gathered in the
         * first micro-batch, reduced after the last: once per step, here
         * a 1/m share of each micro-batch */
        bool once = lay->p > 1 && aps_profile(t)->pp_unsharded_grads;
        double per_mb = once ? 1.0 / (double)lay->m : 1.0;
        ag *= per_mb;
        double ag_b = s->reshard_after_forward && !once ? ag : 0.0;
        /* ZeRO-3 recompute releases weights it will not reuse soon */
        if (rc > 0 && s->reshard_after_forward)
            ag_b += aps_allgather_time(
                G, A * rc * aps_regathered_params(
                                m, lay->t, aps_profile(t)->reuse_distance),
                bw, alpha);
        double rs = per_mb * aps_reducescatter_time(
                                 G, (once ? APS_FP32_BYTES : plan->grad_reduce) *
                                        psi, bw, alpha);
        /* Prefetch hides a unit's gather behind the previous unit's
         * compute; the first unit of each pass is always exposed. */
        double units = L + (first ? 1.0 : 0.0) + (last ? 1.0 : 0.0);
        double win_f = t->fsdp_overlap * st->comp_fwd;
        double win_b = t->fsdp_overlap * (st->comp_bwd + st->recompute);
        double ef = interfered(t, ag, ag - win_f > ag / units ? ag - win_f
                                                              : ag / units);
        double bwd = ag_b + rs;
        double eb = interfered(t, bwd, bwd - win_b > bwd / units
                                           ? bwd - win_b : bwd / units);
        st->ag_total = ag + ag_b;
        st->rs_total = rs;
        st->ag_exposed = ef + (bwd > 0 ? eb * ag_b / bwd : 0.0);
        st->rs_exposed = bwd > 0 ? eb * rs / bwd : 0.0;
        st->fsdp_exposed_fwd = ef;
        st->fsdp_exposed_bwd = eb;
    }
}

/** FLOPs of one step with `recomputed` layers fully recomputed (summed
 *  over stages) and, if selective, what selective recompute repeats in
 *  every layer: the attention core (Megatron) or, with the fsdp2 profile,
 *  the even-numbered matmuls of TorchTitan's op-level checkpointing. */
static double flops_step(const aps_model *m, const aps_training *t,
                         bool causal, double recomputed, bool selective)
{
    double B = (double)t->global_batch_size, S = (double)t->seq_length;
    double L = (double)m->num_layers, h = (double)m->hidden_size;
    double attn = 4.0 * S * aps_attention_keys(m, S, causal) *
                  (double)m->num_attention_heads * (double)m->head_dim;
    double matmul = 2.0 * S * aps_layer_matmul_params(m);
    double fwd = B * (L * (matmul + attn) + 2.0 * S * h * (double)m->vocab_size);
    double flops = 3.0 * fwd + B * recomputed * (matmul + attn);
    if (selective)
        flops += B * L * (aps_profile(t)->op_sac_selective
                              ? 2.0 * S * aps_op_sac_recompute_params(m)
                              : attn);
    return flops;
}

double aps_flops_per_step(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, bool causal,
                          bool with_recompute)
{
    double rc = 0.0;
    if (with_recompute && s->layer_recompute == APS_RECOMPUTE_FULL) {
        int64_t layers[APS_MAX_STAGES];
        if (aps_stage_layers(m, s, layers, NULL, 0) == APS_REASON_NONE)
            for (int64_t i = 0; i < s->pp_degree; i++)
                rc += (double)aps_given_recompute(s, i, layers[i]);
    }
    return flops_step(m, t, causal, rc,
                      with_recompute &&
                          s->layer_recompute == APS_RECOMPUTE_SELECTIVE);
}

/** Forward and backward seconds of one micro-batch on a stage: compute
 *  plus the exposed TP, CP and FSDP communication inside it. */
static void stage_fwd_bwd(const stage_time *tm, double *tf, double *tb)
{
    *tf = tm->comp_fwd + tm->tp_exposed_fwd + tm->cp_exposed_fwd +
          tm->fsdp_exposed_fwd + tm->offload_exposed_fwd;
    *tb = tm->comp_bwd + tm->recompute + tm->tp_exposed_bwd +
          tm->cp_exposed_bwd + tm->fsdp_exposed_bwd + tm->offload_exposed_bwd;
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
 *  stage_recompute), plus a penalty of 1e6 s per unit of memory overflow
 *  so that a partition that fits always beats one that does not. */
static double stage_cost(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         aps_layout *lay, const aps_dp_plan *plan,
                         const aps_layer_cost *lc, int64_t i, double limit)
{
    lay->recompute[i] = stage_recompute(m, c, t, s, lay, plan, lc, i, limit);
    stage_time tm;
    double tf, tb;
    stage_times(m, c, t, s, lay, plan, lc, i, true, &tm);
    stage_fwd_bwd(&tm, &tf, &tb);
    aps_stage_estimate st;
    aps_stage_memory(m, c, t, s, lay, plan, lc, i, &st);
    double over = st.mem_total > limit ? st.mem_total / limit : 0.0;
    return tf + tb + 1e6 * over;
}

static void set_firsts(aps_layout *lay)
{
    int64_t first = 0;
    lay->chunks_valid = false; /* rebalanced: equal chunks per rank */
    for (int64_t i = 0; i < lay->p; i++) {
        lay->first[i] = first;
        first += lay->layers[i];
    }
}

/**
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
 */
static void balance_partition(const aps_model *m, const aps_cluster *c,
                              const aps_training *t, const aps_strategy *s,
                              aps_layout *lay, const aps_dp_plan *plan,
                              const aps_layer_cost *lc, double limit)
{
    int64_t p = lay->p, L = m->num_layers, v = lay->v;
    double e[APS_MAX_STAGES], u[APS_MAX_STAGES];
    int64_t keep[APS_MAX_STAGES];
    memcpy(keep, lay->layers, sizeof keep);
    for (int64_t i = 0; i < p; i++) {
        double cost[2];
        for (int64_t j = 1; j <= 2; j++) {
            lay->layers[i] = j * v;
            lay->recompute[i] = s->auto_recompute ? 0 : aps_given_recompute(s, i, j * v);
            stage_time tm;
            double tf, tb;
            stage_times(m, c, t, s, lay, plan, lc, i, true, &tm);
            stage_fwd_bwd(&tm, &tf, &tb);
            cost[j - 1] = tf + tb;
        }
        lay->layers[i] = keep[i];
        u[i] = (cost[1] - cost[0]) / (double)v;
        e[i] = cost[0] - (double)v * u[i];
        if (!(u[i] > 0.0)) /* degenerate sample: keep the placeholder */
            return;
    }
    int64_t k[APS_MAX_STAGES];
    bool first_last = aps_profile(t)->first_last_partition_only && p > 2;
    if (first_last) {
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
        if (best < 0.0)
            return;
    } else {
        double lo = 0.0, hi = 0.0;
        for (int64_t i = 0; i < p; i++) {
            double one = e[i] + (double)v * u[i], all = e[i] + (double)L * u[i];
            lo = one > lo ? one : lo;
            hi = all > hi ? all : hi;
        }
        for (int iter = 0; iter < 64; iter++) {
            double mid = 0.5 * (lo + hi);
            int64_t sum = 0;
            for (int64_t i = 0; i < p && sum < L; i++) {
                double cap = (mid - e[i]) / u[i];
                int64_t ki = cap > (double)L ? L : (int64_t)cap / v * v;
                sum += ki < v ? v : ki;
            }
            if (sum >= L)
                hi = mid;
            else
                lo = mid;
        }
        int64_t sum = 0;
        for (int64_t i = 0; i < p; i++) {
            double cap = (hi - e[i]) / u[i];
            int64_t ki = cap > (double)L ? L : (int64_t)cap / v * v;
            k[i] = ki < v ? v : ki;
            sum += k[i];
        }
        while (sum > L) { /* take the surplus off the costliest stages */
            int64_t worst = -1;
            for (int64_t i = 0; i < p; i++)
                if (k[i] > v && (worst < 0 || e[i] + (double)k[i] * u[i] >
                                                  e[worst] + (double)k[worst] * u[worst]))
                    worst = i;
            if (worst < 0)
                return; /* cannot happen: L >= p v was checked */
            k[worst] -= v;
            sum -= v;
        }
    }
    memcpy(lay->layers, k, (size_t)p * sizeof k[0]);
    set_firsts(lay);

    double cost[APS_MAX_STAGES];
    for (int64_t i = 0; i < p; i++)
        cost[i] = stage_cost(m, c, t, s, lay, plan, lc, i, limit);
    if (first_last)
        return;
    for (int64_t round = 0; round < 4 * L; round++) {
        int64_t slow = 0;
        for (int64_t i = 1; i < p; i++)
            if (cost[i] > cost[slow])
                slow = i;
        /* move v layers off the slowest stage to a neighbour, whichever
         * lowers the pair's larger cost most */
        int64_t best_to = -1;
        double best_pair = cost[slow], bc_slow = 0, bc_to = 0;
        for (int64_t to = slow - 1; to <= slow + 1; to += 2) {
            if (to < 0 || to >= p || lay->layers[slow] - v < v)
                continue;
            lay->layers[slow] -= v;
            lay->layers[to] += v;
            set_firsts(lay);
            double cs = stage_cost(m, c, t, s, lay, plan, lc, slow, limit);
            double ct = stage_cost(m, c, t, s, lay, plan, lc, to, limit);
            double pair = cs > ct ? cs : ct;
            if (pair < best_pair - 1e-12) {
                best_pair = pair;
                best_to = to;
                bc_slow = cs;
                bc_to = ct;
            }
            lay->layers[slow] += v;
            lay->layers[to] -= v;
            set_firsts(lay);
            lay->recompute[slow] = stage_recompute(m, c, t, s, lay, plan, lc, slow, limit);
            lay->recompute[to] = stage_recompute(m, c, t, s, lay, plan, lc, to, limit);
        }
        if (best_to < 0)
            break;
        lay->layers[slow] -= v;
        lay->layers[best_to] += v;
        set_firsts(lay);
        cost[slow] = bc_slow;
        cost[best_to] = bc_to;
        lay->recompute[slow] = stage_recompute(m, c, t, s, lay, plan, lc, slow, limit);
        lay->recompute[best_to] = stage_recompute(m, c, t, s, lay, plan, lc, best_to, limit);
    }
}

/**
 * auto_recompute (full granularity): per stage, the fewest recomputed
 * layers that bring the stage under the memory limit; 0 where it already
 * fits, all of the stage's layers where nothing fits (the memory check
 * then reports it).  A framework with one recompute count for every model
 * chunk (Megatron's --recompute-num-layers) then takes the smallest count
 * that gives every stage at least what it needs.  Memory falls as recomputed layers grow (each keeps
 * only its input), past the one-layer transient that the first adds, so a
 * bisection over r in [1, layers] finds the minimum.
 */
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

static void set_perf(aps_estimate *out, aps_perf_category k, double total,
                     double exposed)
{
    out->perf_total[k] = total;
    out->perf_exposed[k] = exposed;
}

static double max0(double x) { return x > 0.0 ? x : 0.0; }

aps_status aps_estimate_run(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            aps_estimate *out)
{
    if (m == NULL || c == NULL || t == NULL || s == NULL || out == NULL)
        return APS_EINVAL;
    memset(out, 0, offsetof(aps_estimate, stages));
    out->worst_stage = -1;
    if (aps_model_is_moe(m)) { /* issue 13: not estimated as dense */
        aps_moe_refusal(m, out->reason_msg, sizeof out->reason_msg);
        return APS_ENOTIMPL;
    }

    aps_param_counts pc;
    aps_model_param_counts(m, &pc);
    out->params_total = pc.total;
    out->mem_limit = t->memory_limit_bytes > 0
                         ? t->memory_limit_bytes
                         : c->device.memory_bytes - t->memory_margin_bytes;

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
    aps_layer_activations(m, t, s, &lc);
    aps_layer_times(m, c, t, s, &lc);
    if (s->balance_stages && lay.p > 1 && !partition_given(s))
        balance_partition(m, c, t, s, &lay, &plan, &lc, out->mem_limit);
    if (s->auto_recompute && s->layer_recompute == APS_RECOMPUTE_FULL)
        assign_recompute(m, c, t, s, &lay, &plan, &lc, out->mem_limit);

    const aps_device *d = &c->device;
    double A = APS_ACT_BYTES;
    double mb = (double)lay.m;
    out->micro_batch_num = lay.m;
    out->vocab_padded = lay.vocab_padded;
    out->devices_used = s->dp_degree * s->fsdp_degree * s->tp_degree *
                        s->pp_degree * s->cp_degree;
    out->num_stages = lay.p;

    /* Per stage: memory and the per-micro-batch times; keep the worst. */
    stage_time slow = {0};
    double slow_tf = 0, slow_tb = 0, psi_max = 0, matmul_max = 0;
    aps_stage_times rt;
    int64_t worst = 0;
    for (int64_t i = 0; i < lay.p; i++) {
        aps_stage_estimate *st = &out->stages[i];
        st->first_layer = lay.first[i];
        st->num_layers = lay.layers[i];
        st->recompute_layers = lay.recompute[i];
        aps_stage_memory(m, c, t, s, &lay, &plan, &lc, i, st);
        stage_time tm;
        stage_times(m, c, t, s, &lay, &plan, &lc, i, true, &tm);
        stage_fwd_bwd(&tm, &st->time_fwd, &st->time_bwd);
        rt.tf[i] = st->time_fwd;
        rt.tb[i] = st->time_bwd;
        rt.tw[i] = tm.wgrad;
        rt.ef[i] = rt.eb[i] = rt.ew[i] = 0.0;
        if (lay.p > 1 && (i == 0 || i == lay.p - 1)) {
            stage_time mid; /* the same rank without embedding / output */
            double mf, mb_;
            stage_times(m, c, t, s, &lay, &plan, &lc, i, false, &mid);
            stage_fwd_bwd(&mid, &mf, &mb_);
            rt.ef[i] = rt.tf[i] - mf;
            rt.eb[i] = rt.tb[i] - mb_;
            rt.ew[i] = tm.wgrad - mid.wgrad;
        }
        if (st->time_fwd + st->time_bwd > slow_tf + slow_tb || i == 0) {
            slow = tm;
            slow_tf = st->time_fwd;
            slow_tb = st->time_bwd;
        }
        if (st->params > psi_max) {
            psi_max = st->params;
            matmul_max = (double)lay.layers[i] * aps_layer_matmul_params(m) /
                         (double)lay.t;
        }
        if (st->mem_total > out->stages[worst].mem_total)
            worst = i;
    }
    out->worst_stage = worst;
    memcpy(out->mem, out->stages[worst].mem, sizeof out->mem);
    out->mem_peak = out->stages[worst].mem_total;

    /* Time per step: m micro-batches of the slowest stage, then the rest. */
    set_perf(out, APS_PERF_COMPUTE_FWD, mb * slow.comp_fwd, mb * slow.comp_fwd);
    set_perf(out, APS_PERF_COMPUTE_BWD, mb * slow.comp_bwd, mb * slow.comp_bwd);
    set_perf(out, APS_PERF_RECOMPUTE, mb * slow.recompute, mb * slow.recompute);
    set_perf(out, APS_PERF_TP_COMM, mb * slow.tp_total,
             mb * (slow.tp_exposed_fwd + slow.tp_exposed_bwd));
    set_perf(out, APS_PERF_CP_COMM, mb * slow.cp_total,
             mb * (slow.cp_exposed_fwd + slow.cp_exposed_bwd));
    set_perf(out, APS_PERF_FSDP_ALLGATHER, mb * slow.ag_total,
             mb * slow.ag_exposed);
    set_perf(out, APS_PERF_FSDP_REDUCESCATTER, mb * slow.rs_total,
             mb * slow.rs_exposed);
    set_perf(out, APS_PERF_OFFLOAD, mb * slow.offload_total,
             mb * (slow.offload_exposed_fwd + slow.offload_exposed_bwd));

    if (lay.p > 1) {
        /* the schedule simulated, the slowest rank's idle time; a
         * strategy over the memory limit keeps the closed form on the
         * slowest stage (SC'21 s.2.2), which costs nothing to compute */
        double bubble = (double)(lay.p - 1) / (double)lay.v *
                        (slow_tf + slow_tb);
        bool simulated = out->mem_peak <= out->mem_limit;
        if (simulated) {
            double hop[APS_MAX_STAGES];
            aps_schedule_out sched;
            aps_pipeline_p2p(m, c, s, &lay, hop);
            if (aps_pipeline_schedule(&lay, &rt, hop, &sched) != APS_OK)
                return APS_ERANGE;
            bubble = max0(sched.step - mb * (slow_tf + slow_tb));
        }
        set_perf(out, APS_PERF_PP_BUBBLE, bubble, bubble);
        double bw, alpha;
        int64_t stride = s->tp_degree * s->cp_degree * s->fsdp_degree *
                         s->dp_degree;
        aps_p2p_link(c, stride, lay.p, &bw, &alpha);
        double rep = (lay.t > 1 && s->sequence_parallel) ? (double)lay.t : 1.0;
        double bytes = A * (double)lay.b * (double)lay.s_local *
                       (double)m->hidden_size / rep;
        double chunks = mb * (double)lay.v;
        double p2p = 2.0 * chunks * (bytes / bw + alpha);
        double hidden = t->pp_p2p_overlap;
        if (lay.v > 1 && t->overlap_p2p_comm &&
            aps_profile(t)->interleaved_p2p_overlap) {
            /* Exposed: the warmup chunks of the first rank, (p-1) x 2 +
             * (v-1) x p, and as many in the flush (Megatron's
             * get_num_warmup_microbatches; --overlap-p2p-communication-
             * warmup-flush is off by default) */
            double p = (double)lay.p, v = (double)lay.v;
            double warm = 2.0 * (p - 1.0) + (v - 1.0) * p;
            double steady = 1.0 - warm / chunks; /* 2 warm of 2 chunks */
            /* simulated, the warm-up and flush transfers delay the next
             * stage on the schedule's critical path (in the bubble) and
             * the rank runs on: none left exposed here */
            if (simulated)
                steady = 1.0;
            if (steady > hidden)
                hidden = steady;
        }
        set_perf(out, APS_PERF_PP_P2P, p2p,
                 interfered(t, p2p, p2p * (1.0 - hidden)));
    }

    const aps_state_bytes *by = &plan.bytes;
    if (!plan.fsdp_like && plan.dp_group > 1) {
        double bw, alpha;
        dp_group_link(c, t, s->tp_degree, plan.dp_group, &bw, &alpha);
        double grads = plan.grad_reduce * psi_max;
        double sync, gather = 0.0, times = 1.0;
        if (by->shard_optimizer) { /* ZeRO-1/2: reduce-scatter, gather */
            sync = aps_reducescatter_time(plan.dp_group, grads, bw, alpha);
            gather = aps_allgather_time(
                plan.dp_group,
                aps_recipe_gather_bytes(t, psi_max, matmul_max), bw, alpha);
            /* ZeRO-2 keeps only its gradient shard, so it reduce-scatters
             * after every micro-batch's backward, not once per step
             * (Rajbhandari et al. 2020 s.5.2; deepspeedai/DeepSpeed#2252) */
            if (by->shard_grads)
                times = mb;
        } else {
            sync = aps_allreduce_time(plan.dp_group, grads, bw, alpha);
        }
        /* TorchTitan's DDP all-reduces after every micro-batch */
        if (aps_profile(t)->sync_every_microbatch)
            times = mb;
        double exposed =
            times * interfered(t, sync, max0(sync - t->dp_overlap * slow_tb)) +
            interfered(t, gather, max0(gather - t->dp_overlap * slow_tf));
        set_perf(out, APS_PERF_DP_GRAD_SYNC, times * sync + gather, exposed);
    }
    if (plan.fsdp_like && plan.replicate > 1) {
        double bw, alpha;
        dp_group_link(c, t, s->tp_degree * plan.shard_group, plan.replicate,
                      &bw, &alpha);
        double shard = plan.grad_reduce * psi_max / (double)plan.shard_group;
        double ar = aps_allreduce_time(plan.replicate, shard, bw, alpha);
        /* FSDP2 (TorchTitan) reduces across replicas after every
         * micro-batch's backward */
        double times = aps_profile(t)->sync_every_microbatch ? mb : 1.0;
        set_perf(out, APS_PERF_HSDP_REPLICATE_SYNC, times * ar,
                 times * interfered(t, ar, max0(ar - t->dp_overlap * slow_tb)));
    }
    {
        double traffic = (t->optimizer == APS_OPT_SGD ? APS_SGD_STATE_TRAFFIC
                                                      : APS_ADAM_STATE_TRAFFIC) +
                         by->grad + (by->weight < 4.0 ? by->weight : 0.0);
        double psi_opt = psi_max / (by->shard_optimizer
                                        ? (double)plan.shard_group : 1.0);
        double opt = hbm_time(d, psi_opt * traffic);
        set_perf(out, APS_PERF_OPTIMIZER, opt, opt);
    }
    out->step_time = 0.0;
    for (int k = 0; k < APS_PERF_COUNT; k++)
        out->step_time += out->perf_exposed[k];

    /* Derived throughput: model FLOPs with causal attention and no
     * recompute (MFU), hardware FLOPs with recompute (HFU). */
    double recomputed = 0.0;
    for (int64_t i = 0; i < lay.p; i++)
        recomputed += (double)lay.recompute[i];
    out->model_flops_per_step = flops_step(m, t, true, 0.0, false);
    out->hardware_flops_per_step = flops_step(
        m, t, true, recomputed, s->layer_recompute == APS_RECOMPUTE_SELECTIVE);
    double B = (double)t->global_batch_size, S = (double)t->seq_length;

    double n = (double)out->devices_used;
    double peak = aps_peak_flops(d, t->precision);
    out->tokens_per_s = B * S / out->step_time;
    out->tokens_per_s_per_gpu = out->tokens_per_s / n;
    out->model_tflops_per_gpu =
        out->model_flops_per_step / out->step_time / n / 1e12;
    out->mfu = out->model_flops_per_step / (out->step_time * n * peak);
    out->hfu = out->hardware_flops_per_step / (out->step_time * n * peak);

    if (out->mem_peak > out->mem_limit) {
        const aps_stage_estimate *w = &out->stages[worst];
        int big = 0;
        for (int k = 1; k < APS_MEM_COUNT; k++)
            if (w->mem[k] > w->mem[big])
                big = k;
        out->reason = APS_REASON_MEMORY_LIMIT;
        /* enough decimals that the two numbers differ as printed */
        int dec = 2;
        while (dec < 6 && (int64_t)(out->mem_peak / GIB * pow(10, dec) + 0.5) <=
                              (int64_t)(out->mem_limit / GIB * pow(10, dec) + 0.5))
            dec++;
        aps_fmt(out->reason_msg, sizeof out->reason_msg,
                "stage %lld of %lld needs %.*f GiB > memory limit %.*f GiB "
                "(largest: %s %.2f GiB)",
                (long long)worst + 1, (long long)lay.p, dec, out->mem_peak / GIB,
                dec, out->mem_limit / GIB,
                aps_mem_category_name((aps_mem_category)big), w->mem[big] / GIB);
        return APS_OK;
    }
    out->feasible = true;
    return APS_OK;
}
