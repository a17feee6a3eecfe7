/*
 * schedule_memo.c -- the steps of the pipeline simulations this thread
 * ran, and the activation peaks it walked, found again by their exact
 * inputs.
 *
 * A search meets the same stage times again and again: the split
 * balance.c chose, which the estimate then runs, and strategies that
 * differ only where the stage times do not (a comm type, a recompute
 * method without recompute; issue 15 item 3).  On the 18 M-candidate
 * bench space (bench/llama3_405b_16k_18m.lua) a ring of the last 4
 * simulations answered 10,857 of 22,193 lookups; this table (1,024
 * slots) answers 16,238, so 5,955 simulations run instead of 11,336.
 * Entries are found by a hash of the inputs and confirmed by comparing
 * them whole (memcmp, as the ring did), so a hit returns the step the
 * same inputs gave.
 *
 * The peak of the activations a rank holds under Megatron's order with
 * uneven chunk weights (aps_schedule_inflight) walks the rank's 2 m v
 * ops; memory.c asks it for every stage of every memory estimate, the
 * recompute bisection of balance.c for the same stage many times over, so
 * those peaks are remembered the same way.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/** Slots of the per-thread table (direct-mapped by hash), each with room
 *  for a key of the most stages, APS_MEMO_ARRAYS APS_MAX_STAGES doubles,
 *  in this thread's reserved buffer APS_RESERVED_MEMO (schedule_mem.c;
 *  10.5 MB of address space, touched as used: 5 KB a slot at 128
 *  stages). */
#define APS_SCHEDULE_MEMO_SLOTS 1024
/** The input arrays a key holds per stage: t_fwd, t_bwd, t_wgt, weight
 *  and p2p (one fewer p2p: p v - 1 links). */
#define APS_MEMO_ARRAYS 5
/** FNV-1a's 64-bit offset basis and prime (Fowler, Noll, Vo), applied
 *  to 64-bit words rather than bytes, then the high bits folded down
 *  (the table index takes the low ones). */
#define APS_FNV_OFFSET 14695981039346656037ULL
#define APS_FNV_PRIME 1099511628211ULL
#define APS_HASH_FOLD 29

/** One remembered simulation: its inputs and its step. */
typedef struct {
    uint64_t hash;
    int64_t p, v, m, g; /**< g: the interleaved table's group size */
    int sched;
    bool used;
    double step;
} memo_entry;

static _Thread_local memo_entry table[APS_SCHEDULE_MEMO_SLOTS];

/** Room for the key of slot e (APS_MEMO_ARRAYS APS_MAX_STAGES doubles);
 *  NULL when the reserved buffer cannot be had. */
static double *key_room(const memo_entry *e)
{
    _Static_assert(APS_SCHEDULE_MEMO_SLOTS * APS_MEMO_ARRAYS *
                           APS_MAX_STAGES * sizeof(double) <=
                       APS_SCHEDULE_RESERVE_BYTES,
                   "the memo's keys fit in a reserved buffer");
    double *base = aps_schedule_reserved(APS_RESERVED_MEMO);
    size_t slot = (size_t)(e - table);
    return base ? base + slot * APS_MEMO_ARRAYS * APS_MAX_STAGES : NULL;
}

/** Doubles in the key of a simulation of S stages. */
static size_t key_len(int64_t S)
{
    return APS_MEMO_ARRAYS * (size_t)S - 1;
}

/** The key of in (its five arrays, one after another) into key. */
static void key_of(const aps_schedule_in *in, double *key)
{
    size_t S = (size_t)(in->p * in->v), n = S * sizeof(double);
    memcpy(key, in->t_fwd, n);
    memcpy(key + S, in->t_bwd, n);
    memcpy(key + 2 * S, in->t_wgt, n);
    memcpy(key + 3 * S, in->weight, n);
    memcpy(key + 4 * S, in->p2p, n - sizeof(double));
}

/** in's group size as its order is keyed (aps_schedule_order_get): g
 *  resolved under interleaved 1F1B, else p (no group). */
static int64_t group_of(const aps_schedule_in *in)
{
    bool grouped = in->schedule == APS_PP_1F1B && in->v > 1;
    return grouped ? aps_schedule_group(in->p, in->g) : in->p;
}

/** Words of a key's shape: p, v, m, schedule, group size. */
#define APS_MEMO_SHAPE 5

/** FNV-1a on words over the shape and the bits of the key. */
static uint64_t hash_of(const aps_schedule_in *in, const double *key)
{
    uint64_t shape[APS_MEMO_SHAPE] = {(uint64_t)in->p, (uint64_t)in->v,
                                      (uint64_t)in->m, (uint64_t)in->schedule,
                                      (uint64_t)group_of(in)};
    uint64_t h = APS_FNV_OFFSET;
    for (size_t k = 0; k < APS_MEMO_SHAPE; k++)
        h = (h ^ shape[k]) * APS_FNV_PRIME;
    for (size_t k = 0; k < key_len(in->p * in->v); k++) {
        uint64_t w;
        memcpy(&w, &key[k], sizeof w);
        h = (h ^ w) * APS_FNV_PRIME;
    }
    return h ^ (h >> APS_HASH_FOLD);
}

/** True if e holds the simulation of in (key its key, h its hash). */
static bool matches(const memo_entry *e, const aps_schedule_in *in,
                    const double *key, uint64_t h)
{
    return e->used && e->hash == h && e->p == in->p && e->v == in->v &&
           e->m == in->m && e->sched == in->schedule &&
           e->g == group_of(in) &&
           memcmp(key_room(e), key,
                  key_len(in->p * in->v) * sizeof *key) == 0;
}

bool aps_schedule_memo_find(const aps_schedule_in *in, double *step,
                            uint64_t *h)
{
    double key[APS_MEMO_ARRAYS * APS_MAX_STAGES];
    key_of(in, key);
    *h = hash_of(in, key);
    const memo_entry *e = &table[*h % APS_SCHEDULE_MEMO_SLOTS];
    if (!matches(e, in, key, *h))
        return false;
    *step = e->step;
    return true;
}

void aps_schedule_memo_store(const aps_schedule_in *in, uint64_t h,
                             double step)
{
    memo_entry *e = &table[h % APS_SCHEDULE_MEMO_SLOTS];
    double *room = key_room(e);
    if (room == NULL)
        return; /* not remembered: the next lookup simulates again */
    key_of(in, room);
    e->used = true;
    e->hash = h;
    e->p = in->p;
    e->v = in->v;
    e->m = in->m;
    e->g = group_of(in);
    e->sched = in->schedule;
    e->step = step;
}

/** Slots of the per-thread table of activation peaks (direct-mapped). */
#define APS_INFLIGHT_MEMO_SLOTS 256
/** Most chunks per rank whose peaks are remembered (more are walked every
 *  time). */
#define APS_INFLIGHT_MEMO_MAX_V 16

/** One remembered peak: (p, v, m, group size, rank, chunk weights) and
 *  the peak. */
typedef struct {
    int64_t p, v, m, G, i; /**< v = 0: empty */
    double w[APS_INFLIGHT_MEMO_MAX_V];
    double peak;
} inflight_entry;

static _Thread_local inflight_entry peaks[APS_INFLIGHT_MEMO_SLOTS];

/** The slot of (p, v, m, G, i, w): FNV-1a on words, as hash_of. */
static inflight_entry *peak_slot(int64_t p, int64_t v, int64_t m, int64_t G,
                                 int64_t i, const double *w)
{
    uint64_t shape[APS_MEMO_SHAPE] = {(uint64_t)p, (uint64_t)v, (uint64_t)m,
                                      (uint64_t)G, (uint64_t)i};
    uint64_t h = APS_FNV_OFFSET;
    for (size_t k = 0; k < APS_MEMO_SHAPE; k++)
        h = (h ^ shape[k]) * APS_FNV_PRIME;
    for (int64_t k = 0; k < v; k++) {
        uint64_t x;
        memcpy(&x, &w[k], sizeof x);
        h = (h ^ x) * APS_FNV_PRIME;
    }
    return &peaks[(h ^ (h >> APS_HASH_FOLD)) % APS_INFLIGHT_MEMO_SLOTS];
}

bool aps_inflight_memo_find(int64_t p, int64_t v, int64_t m, int64_t G,
                            int64_t i, const double *w, double *peak)
{
    if (v > APS_INFLIGHT_MEMO_MAX_V)
        return false;
    const inflight_entry *e = peak_slot(p, v, m, G, i, w);
    if (e->v != v || e->p != p || e->m != m || e->G != G || e->i != i ||
        memcmp(e->w, w, (size_t)v * sizeof *w) != 0)
        return false;
    *peak = e->peak;
    return true;
}

void aps_inflight_memo_store(int64_t p, int64_t v, int64_t m, int64_t G,
                             int64_t i, const double *w, double peak)
{
    if (v > APS_INFLIGHT_MEMO_MAX_V)
        return;
    inflight_entry *e = peak_slot(p, v, m, G, i, w);
    e->p = p;
    e->v = v;
    e->m = m;
    e->G = G;
    e->i = i;
    memcpy(e->w, w, (size_t)v * sizeof *w);
    e->peak = peak;
}

void aps_schedule_memo_clear(void)
{
    memset(table, 0, sizeof table);
}
