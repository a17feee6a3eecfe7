/*
 * schedule_order.c -- the ops of a pipeline schedule in one fixed
 * dependency order, built once per (schedule, p, v, m) and cached.
 *
 * Every rank runs its own order (schedule.c, schedule_zb.c) one op at a
 * time; an op starts at max(its rank free, its input arrived), its input
 * being the finish of one op of another stage (F of j waits for F of
 * j - 1, I or B of j for I or B of j + 1, the last stage's for its own F;
 * W for nothing) plus one p2p hop.  So each finish time is a function of
 * two earlier finish times only, and any order of the ops in which every
 * op follows the op it waits for and its rank's previous op computes the
 * same doubles, summed per rank in the rank's own order, as the event
 * loop did (schedule_run.c runs it).  The order depends on (schedule, p,
 * v, m) only.  It is built in rounds: each round every rank whose next op
 * waits for an op of an earlier round places it, so the ops of a round
 * are independent of each other and a run overlaps up to p of them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/** Orders the per-thread cache keeps at most: the 18 M-candidate bench
 *  space (bench/llama3_405b_16k_18m.lua) meets 125 distinct (p, v, m),
 *  in an order that an 8-entry cache missed 1,745 times in 11,337
 *  simulations. */
#define APS_SCHEDULE_ORDER_ENTRIES 160
/** Heap bytes the cached orders keep beyond the newest (the 125 orders of
 *  the 18 M space take 16 MB). */
#define APS_SCHEDULE_ORDER_CACHE_BYTES APS_SCHEDULE_RESERVE_BYTES
/** Finish cells of a schedule while its order is built: F, then B or I,
 *  then W, of m p v cells each, and one sentinel for ops that wait for
 *  nothing. */
#define APS_ORDER_CELL_ARRAYS 3

static _Thread_local aps_schedule_order *cache[APS_SCHEDULE_ORDER_ENTRIES];

static void order_free(aps_schedule_order *o)
{
    if (o == NULL)
        return;
    if (o->ops_owned)
        free(o->ops); /* and the rank orders after them */
    free(o);
}

/** Index of the sentinel among the finish cells. */
static int64_t sentinel(int64_t cells)
{
    return APS_ORDER_CELL_ARRAYS * cells;
}

/** The finish cell op r waits for (*dep) and its own (*out) (see
 *  APS_ORDER_CELL_ARRAYS). */
static void op_cells(const aps_rank_op *r, int64_t S, int64_t cells,
                     int64_t *dep, int64_t *out)
{
    int64_t cell = (int64_t)r->mb * S + r->j;
    if (r->kind == APS_OP_F) {
        *dep = r->j > 0 ? cell - 1 : sentinel(cells);
        *out = cell;
    } else if (r->kind == APS_OP_W) {
        *dep = sentinel(cells);
        *out = 2 * cells + cell;
    } else {
        *dep = r->j == S - 1 ? cell : cells + cell + 1;
        *out = cells + cell;
    }
}

/** Every rank's order, one after another, into ro (p x the slots one
 *  rank's order needs), their starts into o->start; false when out of
 *  memory. */
static bool rank_orders(aps_schedule_order *o, aps_rank_op *ro)
{
    if (o->sched == APS_PP_1F1B) {
        o->n = aps_schedule_orders_1f1b(o->p, o->v, o->m, o->g, ro,
                                        o->start);
        return o->n >= 0;
    }
    int64_t cnt[2 * APS_MAX_STAGES];
    o->n = 0;
    for (int64_t i = 0; i < o->p; i++) {
        o->start[i] = o->n;
        o->n += aps_schedule_order_zb(o->sched, o->p, o->v, o->m, i,
                                      ro + o->n, cnt);
    }
    o->start[o->p] = o->n;
    return true;
}

/** Frees every cached order. */
static void cache_flush(void)
{
    for (int k = 0; k < APS_SCHEDULE_ORDER_ENTRIES; k++) {
        order_free(cache[k]);
        cache[k] = NULL;
    }
}

/** Room for o's n ops and, under the zero-bubble schedules, their n rank
 *  orders after them (o->rank_ops, the schedules' inflight walks them;
 *  1F1B's walks its own): in the thread's arena
 *  (aps_schedule_arena_take), emptied with the cache when full; an order
 *  larger than the arena gets its own allocation (o->ops_owned).  NULL
 *  when out of memory. */
static aps_fixed_op *order_ops(aps_schedule_order *o)
{
    size_t n = (size_t)o->n;
    o->bytes = n * (sizeof *o->ops +
                    (o->sched == APS_PP_1F1B ? 0 : sizeof *o->rank_ops));
    aps_fixed_op *ops = aps_schedule_arena_take(o->bytes);
    if (ops == NULL && o->bytes <= APS_SCHEDULE_RESERVE_BYTES) {
        cache_flush(); /* every order in the arena goes with it */
        aps_schedule_arena_reset();
        ops = aps_schedule_arena_take(o->bytes);
    }
    if (ops == NULL) {
        ops = malloc(o->bytes);
        o->ops_owned = true;
    }
    if (ops != NULL && o->sched != APS_PP_1F1B)
        o->rank_ops = (aps_rank_op *)(ops + n);
    return ops;
}

/** One round (see the file comment): at[c] is the position of the op
 *  that finishes cell c, -1 for the sentinel, INT32_MAX while unplaced;
 *  ops placed before position `first` are of earlier rounds.  Returns
 *  the ops placed. */
static int64_t place_round(aps_schedule_order *o, const aps_rank_op *ro,
                           int64_t *pos, int32_t *at)
{
    int64_t S = o->p * o->v, cells = o->m * S, first = o->placed, moved = 0;
    for (int64_t i = 0; i < o->p; i++) {
        if (pos[i] == o->start[i + 1])
            continue;
        const aps_rank_op *r = &ro[pos[i]];
        int64_t dep, out;
        op_cells(r, S, cells, &dep, &out);
        if (at[dep] >= first)
            continue;
        int64_t q = o->placed++;
        at[out] = (int32_t)q;
        o->ops[q] = (aps_fixed_op){at[dep] < 0 ? (int32_t)o->n : at[dep],
                                   (uint16_t)(r->kind * S + r->j),
                                   (uint8_t)i, (uint8_t)r->overlap};
        pos[i]++;
        moved++;
    }
    return moved;
}

/** The rounds over the rank orders ro into o->ops: APS_ENOMEM
 *  when out of memory, APS_EINVAL when a round places nothing (a
 *  deadlock). */
static aps_status place_ops(aps_schedule_order *o, const aps_rank_op *ro)
{
    int64_t cells = o->m * o->p * o->v;
    size_t n_at = (size_t)sentinel(cells) + 1;
    int32_t *at = aps_schedule_scratch(APS_SCRATCH_PLACED, n_at * sizeof *at);
    o->ops = order_ops(o);
    aps_status st = APS_ENOMEM; /* no memory for the order */
    if (at != NULL && o->ops != NULL) {
        for (size_t c = 0; c + 1 < n_at; c++)
            at[c] = INT32_MAX;
        at[n_at - 1] = -1;
        int64_t pos[APS_MAX_STAGES];
        memcpy(pos, o->start, (size_t)o->p * sizeof pos[0]);
        while (o->placed < o->n && place_round(o, ro, pos, at) > 0)
            ;
        st = o->placed == o->n ? APS_OK : APS_EINVAL;
    }
    aps_schedule_scratch_done(APS_SCRATCH_PLACED, at);
    return st;
}

/** Keeps the rank orders ro in o->rank_ops, where order_ops made room
 *  for them (the zero-bubble schedules only). */
static void keep_rank_orders(aps_schedule_order *o, const aps_rank_op *ro)
{
    if (o->rank_ops != NULL)
        memcpy(o->rank_ops, ro, (size_t)o->n * sizeof *ro);
}

/** A new order of (sched, p, v, m, g) into *out (see
 *  aps_schedule_order_get; g resolved). */
static aps_status order_build(int sched, int64_t p, int64_t v, int64_t m,
                              int64_t g, aps_schedule_order **out)
{
    aps_schedule_order *o = calloc(1, sizeof *o);
    size_t slots = sched == APS_PP_1F1B ? 2 * (size_t)m * (size_t)v
                                        : aps_schedule_order_slots(v, m);
    size_t ro_bytes = (size_t)p * slots * sizeof(aps_rank_op);
    aps_rank_op *ro = aps_schedule_scratch(APS_SCRATCH_RANK_OPS, ro_bytes);
    aps_status st = APS_ENOMEM; /* no memory for the rank orders */
    if (o != NULL && ro != NULL) {
        *o = (aps_schedule_order){.sched = sched, .p = p, .v = v, .m = m,
                                  .g = g};
        if (rank_orders(o, ro))
            st = place_ops(o, ro);
    }
    if (st == APS_OK)
        keep_rank_orders(o, ro);
    aps_schedule_scratch_done(APS_SCRATCH_RANK_OPS, ro);
    if (st != APS_OK)
        order_free(o);
    *out = st == APS_OK ? o : NULL;
    return st;
}

/** Puts o first in the cache, dropping the least recently used entry
 *  past APS_SCHEDULE_ORDER_ENTRIES and every entry from the first that
 *  takes the cache past its byte budget (the newest stays whatever its
 *  size). */
static void cache_push(aps_schedule_order *o)
{
    order_free(cache[APS_SCHEDULE_ORDER_ENTRIES - 1]);
    memmove(cache + 1, cache, (APS_SCHEDULE_ORDER_ENTRIES - 1) * sizeof *cache);
    cache[0] = o;
    size_t bytes = o->bytes;
    for (int k = 1; k < APS_SCHEDULE_ORDER_ENTRIES; k++) {
        if (cache[k] == NULL)
            continue;
        bytes += cache[k]->bytes;
        if (bytes > APS_SCHEDULE_ORDER_CACHE_BYTES) {
            order_free(cache[k]);
            cache[k] = NULL;
        }
    }
}

aps_status aps_schedule_order_get(int sched, int64_t p, int64_t v, int64_t m,
                                  int64_t g, const aps_schedule_order **out)
{
    if (p == 1)
        sched = APS_PP_1F1B;
    /* one key per order: the group size shapes interleaved 1F1B only */
    g = sched == APS_PP_1F1B && v > 1 ? aps_schedule_group(p, g) : p;
    for (int k = 0; k < APS_SCHEDULE_ORDER_ENTRIES; k++) {
        aps_schedule_order *o = cache[k];
        if (o != NULL && o->sched == sched && o->p == p && o->v == v &&
            o->m == m && o->g == g) {
            memmove(cache + 1, cache, (size_t)k * sizeof *cache);
            cache[0] = o;
            *out = o;
            return APS_OK;
        }
    }
    aps_schedule_order *o;
    aps_status st = order_build(sched, p, v, m, g, &o);
    if (st == APS_OK)
        cache_push(o);
    *out = o;
    return st;
}

void aps_schedule_order_flush(void)
{
    cache_flush();
}
