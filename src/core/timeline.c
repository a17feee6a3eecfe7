/*
 * timeline.c -- the timeline of a simulated pipeline schedule: what each
 * rank ran and when (schedule.c, schedule_zb.c record it), for the
 * report's Gantt chart.
 *
 * Per rank the first `keep` ops and the last `keep` are stored: a rank
 * runs its ops one after another, so these are its start (the warm-up,
 * where the fill bubble is) and its end (the cool-down, the drain
 * bubble), whatever p v m; the middle, the steady state, is counted only.
 * Storage is the caller's (ranks_cap x 2 keep events), the tail of each
 * rank a ring of keep entries.
 *
 * aps_estimate_timeline runs the estimate with the timeline installed for
 * the calling thread; aps_pipeline_step (schedule.c) hands it to the
 * simulation, so the estimate itself is unchanged.
 */
#include <string.h>
#include "internal.h"

/** The timeline the running estimate records into, per thread. */
static _Thread_local aps_timeline *capture;

aps_timeline *aps_timeline_capture(void)
{
    return capture;
}

void aps_timeline_begin(aps_timeline *tl, const aps_schedule_in *in)
{
    tl->p = in->p;
    tl->v = in->v;
    tl->m = in->m;
    tl->schedule = in->schedule;
    tl->recorded = true;
    memset(tl->count, 0, sizeof tl->count);
    memset(tl->busy, 0, sizeof tl->busy);
}

void aps_timeline_add(aps_timeline *tl, int64_t i,
                      const aps_schedule_event *ev)
{
    int64_t q = tl->count[i]++, keep = tl->keep;
    aps_schedule_event *base = tl->events + 2 * keep * i;
    tl->busy[i] += ev->end - ev->start;
    if (q < keep)
        base[q] = *ev;
    else
        base[keep + (q - keep) % keep] = *ev;
}

int64_t aps_timeline_kept(const aps_timeline *tl, int64_t i)
{
    if (tl == NULL || !tl->recorded || i < 0 || i >= tl->p)
        return 0;
    int64_t n = tl->count[i];
    return n < 2 * tl->keep ? n : 2 * tl->keep;
}

const aps_schedule_event *aps_timeline_event(const aps_timeline *tl,
                                             int64_t i, int64_t q)
{
    if (q < 0 || q >= aps_timeline_kept(tl, i))
        return NULL;
    int64_t keep = tl->keep, n = tl->count[i];
    const aps_schedule_event *base = tl->events + 2 * keep * i;
    if (q < keep)
        return &base[q];
    /* the tail: ops n - keep .. n - 1 (or keep .. n - 1 when fewer),
     * op k >= keep at ring slot (k - keep) mod keep */
    int64_t first = n > 2 * keep ? n - keep : keep;
    int64_t k = first + (q - keep);
    return &base[keep + (k - keep) % keep];
}

bool aps_timeline_windows(const aps_timeline *tl, double step,
                          double *head_end, double *tail_start)
{
    bool cut = false;
    double head = step, tail = 0.0;
    for (int64_t i = 0; tl != NULL && tl->recorded && i < tl->p; i++) {
        if (tl->count[i] <= 2 * tl->keep)
            continue;
        cut = true;
        double e = aps_timeline_event(tl, i, tl->keep - 1)->end;
        double s = aps_timeline_event(tl, i, tl->keep)->start;
        if (e < head)
            head = e;
        if (s > tail)
            tail = s;
    }
    if (!cut || head >= tail) { /* every op in view, or no gap between */
        *head_end = *tail_start = step;
        return false;
    }
    *head_end = head;
    *tail_start = tail;
    return true;
}

/** Stored ops that start before t (head) or end after t (tail). */
static int64_t count_ops(const aps_timeline *tl, double t, bool head)
{
    int64_t n = 0;
    for (int64_t i = 0; i < tl->p; i++)
        for (int64_t q = 0; q < aps_timeline_kept(tl, i); q++) {
            const aps_schedule_event *e = aps_timeline_event(tl, i, q);
            n += head ? e->start < t : e->end > t;
        }
    return n;
}

/** Bisection steps of aps_timeline_select: the window edges to 2^-50 of
 *  the interval searched. */
#define TIMELINE_BISECT_STEPS 50

/** Ops of the steady state shown next to the fill and the drain: past a
 *  rank's first backward, before its last forward (one F and one B of
 *  1F1B). */
#define TIMELINE_STEADY_OPS 2

/** The fill and the drain: *fill_end, when every rank has run its first
 *  backward and TIMELINE_STEADY_OPS more ops; *drain_start, when the
 *  first rank is TIMELINE_STEADY_OPS ops before its last forward; within
 *  the stored windows [0, h] and [t, step]. */
static void fill_drain(const aps_timeline *tl, double h, double t,
                       double *fill_end, double *drain_start)
{
    double fe = 0.0, dmin = -1.0;
    for (int64_t i = 0; i < tl->p; i++) {
        int64_t n = aps_timeline_kept(tl, i), q0 = -1, q1 = -1;
        bool whole = tl->count[i] <= 2 * tl->keep;
        for (int64_t q = 0; q < n && q0 < 0; q++)
            if (aps_timeline_event(tl, i, q)->kind != APS_OP_F)
                q0 = q;
        for (int64_t q = n - 1; q >= 0 && q1 < 0; q--)
            if (aps_timeline_event(tl, i, q)->kind == APS_OP_F)
                q1 = q;
        double e = h, s = t;
        if (q0 >= 0 && (whole || q0 < tl->keep)) {
            int64_t q = q0 + TIMELINE_STEADY_OPS < n ? q0 + TIMELINE_STEADY_OPS
                                                     : n - 1;
            e = aps_timeline_event(tl, i, q)->end;
        }
        if (q1 >= 0 && (whole || q1 >= tl->keep)) {
            int64_t q = q1 >= TIMELINE_STEADY_OPS ? q1 - TIMELINE_STEADY_OPS
                                                  : 0;
            s = aps_timeline_event(tl, i, q)->start;
        }
        if (e > fe)
            fe = e;
        if (dmin < 0.0 || s < dmin)
            dmin = s;
    }
    *fill_end = fe < h ? fe : h;
    *drain_start = dmin > t ? dmin : t;
}

/** The latest t in [lo, hi] with at most `most` ops starting before it
 *  (head) or the earliest with at most `most` ending after it (tail). */
static double bisect(const aps_timeline *tl, double lo, double hi,
                     int64_t most, bool head)
{
    if (count_ops(tl, head ? hi : lo, head) <= most)
        return head ? hi : lo;
    for (int k = 0; k < TIMELINE_BISECT_STEPS; k++) {
        double mid = 0.5 * (lo + hi);
        bool ok = count_ops(tl, mid, head) <= most;
        if (ok == head)
            lo = mid;
        else
            hi = mid;
    }
    return head ? lo : hi;
}

bool aps_timeline_select(const aps_timeline *tl, double step, int64_t max_ops,
                         double *head_end, double *tail_start)
{
    double h, t;
    bool cut = aps_timeline_windows(tl, step, &h, &t);
    int64_t kept = 0, half = max_ops / 2;
    for (int64_t i = 0; tl != NULL && tl->recorded && i < tl->p; i++)
        kept += aps_timeline_kept(tl, i);
    *head_end = *tail_start = step;
    if (!cut && kept <= max_ops)
        return false;
    if (!cut) { /* all stored: the windows may reach anywhere */
        h = step;
        t = 0.0;
    }
    double fe, ds;
    fill_drain(tl, h, t, &fe, &ds);
    if (fe >= ds) { /* fill and drain meet: halves of the whole step */
        fe = h;
        ds = t;
    }
    double he = bisect(tl, 0.0, fe, half, true);
    double ts = bisect(tl, ds, step, half, false);
    if (he >= ts) /* they meet: everything fits */
        return false;
    *head_end = he;
    *tail_start = ts;
    return true;
}

aps_status aps_estimate_timeline(const aps_model *m, const aps_cluster *c,
                                 const aps_training *t,
                                 const aps_strategy *s, aps_timeline *tl,
                                 aps_estimate *out)
{
    if (tl == NULL || s == NULL || tl->events == NULL || tl->keep < 1 ||
        tl->ranks_cap < s->pp_degree)
        return APS_EINVAL;
    tl->recorded = false;
    tl->p = 0;
    capture = tl;
    aps_status st = aps_estimate_run(m, c, t, s, out);
    capture = NULL;
    return st;
}
