/*
 * schedule_mem.c -- the per-thread memory of the schedule simulation:
 * scratch buffers, the arena the cached orders' ops live in, and the
 * keys of the memo of steps (schedule_memo.c).
 *
 * Each is one allocation of APS_SCHEDULE_RESERVE_BYTES of address space,
 * made once per thread; the system maps a page only when it is first
 * touched, so what costs memory is what a search uses, and a page once
 * touched is never fresh again.  Growing a buffer instead (free, then a
 * larger malloc) hands back fresh pages each time, and on the 2-core
 * bench VM a fresh page costs a fault of about 20 us: building the 86
 * orders of bench/llama3_405b_16k_wide.lua spent 55 ns per op, most of
 * it in page faults, against 10 ns with the pages already there.  Where
 * the system has transparent huge pages (Linux madvise MADV_HUGEPAGE),
 * the reservations ask for them: one fault per 2 MiB instead of per
 * 4 KiB (those 55 ns fell to 41 with the reservations alone, to 32 with
 * huge pages; the whole search 0.62 -> 0.56 s CPU).  When a reservation
 * cannot be had, buffers are allocated per use.
 */
#define _DEFAULT_SOURCE /* madvise (POSIX.1-2001, hidden by -std=c11) */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "internal.h"

/** Alignment of what the arena gives (a cache line). */
#define APS_ARENA_ALIGN 64
/** Size of a transparent huge page on x86-64 and arm64 with 4 KiB pages
 *  (Linux Documentation/admin-guide/mm/transhuge.rst). */
#define APS_HUGE_PAGE_BYTES ((uintptr_t)2 << 20)

/** A reserved buffer: its memory (NULL until reserved) and whether the
 *  reservation failed (then never tried again). */
typedef struct {
    char *mem;
    bool failed;
} reserved;

static _Thread_local reserved scratch[APS_SCRATCH_KINDS];
static _Thread_local reserved arena;
static _Thread_local size_t arena_used;

/** Asks for huge pages over the whole 2 MiB pages within mem's
 *  reservation, where the system has them (a hint: ignored otherwise). */
static void advise_huge(char *mem)
{
#ifdef MADV_HUGEPAGE
    uintptr_t lo = ((uintptr_t)mem + APS_HUGE_PAGE_BYTES - 1) &
                   ~(APS_HUGE_PAGE_BYTES - 1);
    uintptr_t hi = ((uintptr_t)mem + APS_SCHEDULE_RESERVE_BYTES) &
                   ~(APS_HUGE_PAGE_BYTES - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)mem;
#endif
}

/** r's memory, reserved on first use; NULL when it cannot be. */
static char *reserve(reserved *r)
{
    if (r->mem == NULL && !r->failed) {
        r->mem = malloc(APS_SCHEDULE_RESERVE_BYTES);
        r->failed = r->mem == NULL;
        if (r->mem != NULL)
            advise_huge(r->mem);
    }
    return r->mem;
}

void *aps_schedule_reserved(int which)
{
    return reserve(&scratch[which]);
}

void *aps_schedule_scratch(int which, size_t bytes)
{
    char *mem = bytes <= APS_SCHEDULE_RESERVE_BYTES
                    ? reserve(&scratch[which])
                    : NULL;
    return mem != NULL ? mem : malloc(bytes);
}

void aps_schedule_scratch_done(int which, void *mem)
{
    if (mem != scratch[which].mem)
        free(mem);
}

void *aps_schedule_arena_take(size_t bytes)
{
    size_t room = (bytes + APS_ARENA_ALIGN - 1) / APS_ARENA_ALIGN *
                  APS_ARENA_ALIGN;
    char *mem = reserve(&arena);
    if (mem == NULL || room > APS_SCHEDULE_RESERVE_BYTES - arena_used)
        return NULL;
    arena_used += room;
    return mem + arena_used - room;
}

void aps_schedule_arena_reset(void)
{
    arena_used = 0;
}

/** Frees r's memory and never reserves it again in this thread. */
static void unreserve(reserved *r)
{
    free(r->mem);
    r->mem = NULL;
    r->failed = true;
}

void aps_schedule_release(void)
{
    aps_schedule_order_flush(); /* their ops live in the arena */
    aps_schedule_memo_clear();  /* its keys live in a reserved buffer */
    for (int k = 0; k < APS_SCRATCH_KINDS; k++)
        unreserve(&scratch[k]);
    unreserve(&arena);
    arena_used = 0;
}
