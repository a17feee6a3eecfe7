/*
 * src/lua/lsandbox.c -- the `apsearch.sandbox` module: runs untrusted Lua
 * (policies, rules, objectives, formatters) under an instruction limit, a
 * memory cap and wall-clock and CPU-time limits that the script's own pcall
 * cannot defeat.
 *
 *   local sandbox = require "apsearch.sandbox"
 *   local v = sandbox.run(fn, ...)              -- fn(...) under the limits
 *   local g = sandbox.wrap(fn, 'rule "x"')      -- g(...) == sandbox.run(fn, ...)
 *   sandbox.configure{ instructions = 1e8, memory_mib = 256, seconds = 10,
 *                      cpu_seconds = 5, enabled = true }
 *   sandbox.prepare_fork()                      -- before fork(): no timer thread
 *
 * How the limits work (modelled on lua.c's interrupt hook and Redis's
 * script timeout, made sticky):
 *
 * - Instructions: while a sandboxed call runs, a count hook fires every
 *   SB_GRAIN VM instructions of the thread (coroutines created inside
 *   inherit it).  Past the budget the sandbox "trips": from then on the
 *   hook fires on EVERY instruction and raises each time, until the
 *   sandboxed call returns.  A script that catches the error with pcall
 *   cannot execute one more instruction after the catch without raising
 *   again, so `while true do pcall(f) end` ends.  User xpcall handlers are
 *   skipped once tripped (they would run with hooks off), see sb_xpcall.
 * - Memory: a counting allocator sits in front of the state's allocator
 *   (lua_setallocf, installed when the module opens).  The cap counts live
 *   data, not garbage: when the state grows past <bytes at entry> + cap,
 *   the allocator asks the hook (lua_sethook is async-safe) to run before
 *   the next instruction; the hook collects garbage and trips the sandbox
 *   if the state is still over the cap.  No single request may take the
 *   state past entry + 2 x cap (a string.rep of a GiB, say): it is refused
 *   (NULL) and the sandbox trips -- unless Lua's own emergency collection
 *   and retry of that request make it fit.  After a trip a small slack
 *   (SB_SLACK) lets the report be built.  Shrinks and frees never fail
 *   (Lua requires it).
 * - Time: a timer thread (sb_timer) reads the wall clock and the CPU clock
 *   of the OS thread running the call every SB_TICK_NS; past a limit it
 *   sets the running Lua thread's count hook to fire at the next
 *   instruction, and the hook trips.  It covers what the instruction count
 *   cannot: single VM instructions that take long (comparing or
 *   concatenating long strings) and C functions called in a loop.
 * - Whatever the script did with the errors, sandbox.run checks the trip
 *   flag when the call returns and raises the limit's report: a script that
 *   swallowed the error and returned normally still fails.
 *
 * Reports: "<file>:<line>: <message>\n  in <label>\nstack traceback:\n\t..."
 * with the frames of the sandboxed code only (not the search driver's).
 * The location of a memory trip is recorded inside the allocator with
 * lua_getstack/lua_getinfo("Sln"), which only read the call stack.
 *
 * Memory safety: nothing here mallocs; the state lives in a full userdata
 * held by the registry, so an error (longjmp) never leaks C memory.  The
 * userdata's __gc puts the original allocator back when the state closes
 * (finalizers run before any object is freed, and before the package
 * library's __gc unloads C modules, which were opened earlier).
 *
 * Work in C that the count hook cannot see is charged explicitly (see
 * charge()): the pattern functions of sandbox.string (a metered matcher,
 * also the string metatable's __index, without dump), the string, table
 * and utf8 functions whose work grows with their arguments (METERED;
 * sandbox.string, sandbox.table, sandbox.utf8), table.move
 * (sandbox.table_move), and the tail of every coroutine resume
 * (sandbox.co_create/co_resume/co_wrap).  Tracebacks show the first and
 * last frames only and look up nothing else: linear in the depth.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS (sb_run, shared with forked workers) */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "lsandbox.h"

#define SB_REGISTRY_KEY "apsearch.sandbox.state"
#define SB_STRING_KEY "apsearch.sandbox.string"
#define SB_GRAIN 1000                 /* instructions per hook tick */
#define SB_CO_GRAIN 100               /* the same in coroutines (see co_resume) */
#define SB_SLACK ((size_t)1 << 20)    /* bytes allowed after a trip, for the report */
#define SB_WHERE_LEN 512
#define SB_TRACE_LEN 4096
#define SB_HEAD_FRAMES 12             /* first frames shown in a traceback */
#define SB_TAIL_FRAMES 10             /* last frames shown */

#define SB_TICK_NS 10000000L         /* the timer pokes a running call every 10 ms */
#define SB_NS_PER_S 1000000000L
#define SB_MAX_SECONDS 1.0e9          /* largest time limit configure accepts */

enum { TRIP_NONE = 0, TRIP_INSTRUCTIONS, TRIP_MEMORY, TRIP_TIME, TRIP_CPU, TRIP_RUN,
       TRIP_RUN_TIME, TRIP_STATE };

/* The timer thread of a state (started by the first call with a time
 * limit): while a sandboxed call runs it reads the clocks every
 * SB_TICK_NS (the wall clock, and the CPU clock of the OS thread that
 * entered the call); past a limit it sets the count hook of the running
 * Lua thread to fire at the next instruction, and the hook trips the
 * limit.  (Calls within their limits are never poked, so the instruction
 * count stays exact.)  So a loop whose few
 * instructions each take long (comparing or concatenating long strings,
 * calling a C function that works long) is stopped within one
 * instruction of its time limit, which the instruction count alone would
 * let run for 1000 such instructions per hook tick.  lua_sethook is
 * async-safe (ldebug.c); the mutex makes sure no poke lands after the
 * call is disarmed. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started;               /* the thread runs (mu and cv initialised) */
    int quit;                  /* the state closes: the thread ends */
    int armed;                 /* a timed sandboxed call runs */
    int waiting;               /* the thread sleeps until the next arm */
    unsigned long gen;         /* calls armed so far */
    unsigned long seen_gen;    /* the call the fields below belong to */
    pthread_t owner;           /* the OS thread running the call */
    double wall_base;          /* the wall clock at the call's first tick,
                                  less one tick (the arm reads no clock:
                                  a read costs 0.6 us on a VM's kvm-clock) */
    double cpu_base;           /* the owner's CPU clock at that tick, less
                                  one tick */
} sb_timer;

/* What every sandboxed call of a run has used, shared with the processes
 * the run forks (--jobs workers: memory mapped MAP_SHARED before the fork,
 * so the workers' calls add to one count and the limit is the run's, not
 * each worker's). */
typedef struct {
    atomic_llong instructions; /* charged to the calls that ended */
    atomic_llong ticks;        /* timer ticks that found a call running */
} sb_run;

/* The per-lua_State sandbox state (one, in the registry). */
typedef struct {
    lua_Alloc orig_f;          /* the state's allocator before ours */
    void *orig_ud;
    size_t used;               /* bytes the state holds now */
    size_t soft;               /* entry + cap: live data may not exceed it */
    size_t hard;               /* entry + 2 x cap (+ slack after a trip):
                                  no allocation may take used past it */
    size_t hard_base;          /* hard without the slack */
    size_t entry_used;         /* used when the current call was armed */
    size_t peak_used;          /* highest used during the current/last call */
    int mem_armed;
    int over;                  /* used crossed soft: collect at the next tick */
    int tentative;             /* the trip came from the last refusal */
    void *refused_ptr;         /* the last refused request */
    size_t refused_osize, refused_nsize;

    int enabled;               /* 0 with --unsafe: run only adds reports */
    long long max_instructions; /* per call; 0 = unlimited */
    long long max_run_instructions; /* over every call of the run;
                                       0 = unlimited */
    double max_run_seconds;    /* wall seconds inside calls over the run,
                                  counted by the timer's ticks; 0 = unlimited */
    size_t max_state;          /* bytes the state may hold when a call
                                  starts; 0 = unlimited */
    sb_run *run;               /* the run's counts (shared; see sb_run) */
    int run_shared;            /* run is an mmap to unmap */
    size_t max_memory;         /* bytes per call; 0 = unlimited */

    int depth;                 /* 1 while a sandboxed call runs */
    lua_State *L;              /* the thread that entered it */
    int base_level;            /* stack levels of L at entry (level 0 = run) */
    int grain;                 /* instructions per tick of this call */
    long long count;           /* instructions charged to this call */
    int tripped;
    lua_Hook saved_hook;
    int saved_mask, saved_count;

    double max_seconds;        /* wall-clock seconds per call; 0 = unlimited */
    double max_cpu_seconds;    /* CPU seconds per call; 0 = unlimited */
    double wall_start;         /* without a timer thread: the wall clock */
    double cpu_base;           /* and the CPU clock (< 0: not read yet) */
    double cpu_before;         /* and the wall seconds before that read */
    atomic_int tick;           /* set by the timer: the limit it saw passed */
    lua_State *running;        /* the thread running sandboxed code (the
                                  entering one or a coroutine); written
                                  under timer.mu once the timer runs */
    sb_timer timer;

    long long last_instructions; /* approximate count of the last call */
    lua_Integer failures;      /* failed sandboxed calls, ever */
    char where[SB_WHERE_LEN];  /* "<src>:<line>" of the trip or error */
    char host[SB_WHERE_LEN];   /* source prefix of trusted host Lua (its
                                  functions called from a script: views,
                                  context methods); "" = none */
    char trace[SB_TRACE_LEN];  /* "stack traceback:..." of the same */
} sb_state;

static void *sb_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
static void sb_hook(lua_State *L, lua_Debug *ar);

/* The state of L without touching the Lua stack when our allocator is
 * installed (the hook and the handlers use this); else the registry. */
static sb_state *state_of(lua_State *L)
{
    void *ud = NULL;
    sb_state *sb;
    if (lua_getallocf(L, &ud) == sb_alloc)
        return (sb_state *)ud;
    lua_getfield(L, LUA_REGISTRYINDEX, SB_REGISTRY_KEY);
    sb = (sb_state *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return sb;
}

static size_t sat_add(size_t a, size_t b)
{
    return a > (size_t)-1 - b ? (size_t)-1 : a + b;
}

/* ------------------------------------------------------------------ timer */

/* Seconds on clock id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID). */
static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / (double)SB_NS_PER_S;
}

/* 1 if the calls of this state have a time limit. */
static int timed(const sb_state *sb)
{
    return sb->enabled && (sb->max_seconds > 0 || sb->max_cpu_seconds > 0 ||
                           sb->max_run_seconds > 0);
}

/* CPU seconds of OS thread th (0 if its clock cannot be read). */
static double thread_cpu_seconds(pthread_t th)
{
    clockid_t id;
    if (pthread_getcpuclockid(th, &id) != 0)
        return 0.0;
    return clock_seconds(id);
}

/* In the timer thread, under its mutex: the limit the armed call is past
 * (TRIP_TIME, TRIP_CPU) or TRIP_NONE.  Both clocks count from the call's
 * first tick less one tick (the call began at most one tick before it:
 * the thread ticks every SB_TICK_NS while calls run, and an arm wakes it
 * when it sleeps), so a limit may trip up to a tick early or late. */
static int timer_over(sb_state *sb)
{
    sb_timer *t = &sb->timer;
    double tick = (double)SB_TICK_NS / (double)SB_NS_PER_S;
    double wall = clock_seconds(CLOCK_MONOTONIC);
    double cpu = sb->max_cpu_seconds > 0 ? thread_cpu_seconds(t->owner) : 0;
    if (t->seen_gen != t->gen) {
        t->seen_gen = t->gen;
        t->wall_base = wall - tick;
        t->cpu_base = cpu - tick;
    }
    if (sb->max_seconds > 0 && wall - t->wall_base > sb->max_seconds)
        return TRIP_TIME;
    if (sb->max_cpu_seconds > 0 && cpu - t->cpu_base > sb->max_cpu_seconds)
        return TRIP_CPU;
    return TRIP_NONE;
}

/* 1 when ticks timer ticks have passed the run's time limit. */
static int run_time_over(const sb_state *sb, long long ticks)
{
    return sb->max_run_seconds > 0 &&
           (double)ticks * (double)SB_TICK_NS / (double)SB_NS_PER_S >
               sb->max_run_seconds;
}

/* The timer thread (see sb_timer). */
static void *timer_main(void *arg)
{
    sb_state *sb = (sb_state *)arg;
    sb_timer *t = &sb->timer;
    pthread_mutex_lock(&t->mu);
    while (!t->quit) {
        struct timespec at;
        if (!t->armed) {
            t->waiting = 1;
            pthread_cond_wait(&t->cv, &t->mu);
            t->waiting = 0;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_nsec += SB_TICK_NS;
        if (at.tv_nsec >= SB_NS_PER_S) {
            at.tv_sec++;
            at.tv_nsec -= SB_NS_PER_S;
        }
        if (pthread_cond_timedwait(&t->cv, &t->mu, &at) == ETIMEDOUT &&
            t->armed && !t->quit && sb->running != NULL) {
            /* a tick that finds a call running: SB_TICK_NS of the run's
             * time in scripts (calls shorter than a tick are counted as
             * often as a tick lands in one: in proportion to their time) */
            long long ticks = atomic_fetch_add(&sb->run->ticks, 1) + 1;
            int why = run_time_over(sb, ticks) ? TRIP_RUN_TIME : timer_over(sb);
            if (why != TRIP_NONE) {
                atomic_store(&sb->tick, why);
                lua_sethook(sb->running, sb_hook, LUA_MASKCOUNT, 1);
            }
        }
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Starts the timer thread once (signals blocked in it: they stay the main
 * thread's).  Returns 0 if it cannot run; the time limits are then checked
 * at the count hook's ticks only. */
static int timer_start(sb_state *sb)
{
    sb_timer *t = &sb->timer;
    pthread_condattr_t ca;
    sigset_t all, old;
    if (t->started)
        return 1;
    if (pthread_condattr_init(&ca) != 0)
        return 0;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        pthread_condattr_destroy(&ca);
        return 0;
    }
    if (pthread_cond_init(&t->cv, &ca) != 0) {
        pthread_condattr_destroy(&ca);
        pthread_mutex_destroy(&t->mu);
        return 0;
    }
    pthread_condattr_destroy(&ca);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    t->started = pthread_create(&t->thread, NULL, timer_main, sb) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!t->started) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    return t->started;
}

/* Sets the thread the timer pokes (NULL: none). */
static void set_running(sb_state *sb, lua_State *L)
{
    if (!sb->timer.started) {
        sb->running = L;
        return;
    }
    pthread_mutex_lock(&sb->timer.mu);
    sb->running = L;
    pthread_mutex_unlock(&sb->timer.mu);
}

/* Arms the timer for a call entered by L: the clocks start now. */
static void timer_arm(sb_state *sb, lua_State *L)
{
    sb_timer *t = &sb->timer;
    atomic_store(&sb->tick, 0);
    if (!timer_start(sb)) {
        sb->wall_start = clock_seconds(CLOCK_MONOTONIC);
        sb->cpu_base = -1.0;
        sb->running = L;
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->armed = 1;
    t->gen++;
    t->owner = pthread_self();
    sb->running = L;
    if (t->waiting)
        pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Disarms the timer: no poke after this returns. */
static void timer_disarm(sb_state *sb)
{
    sb_timer *t = &sb->timer;
    if (!t->started) {
        sb->running = NULL;
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->armed = 0;
    sb->running = NULL;
    pthread_mutex_unlock(&t->mu);
}

/* Ends the timer thread (the state closes). */
static void timer_stop(sb_state *sb)
{
    sb_timer *t = &sb->timer;
    if (!t->started)
        return;
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    t->started = 0;
}

/* Without a timer thread (it could not start), in the hook: the time limit
 * the current call is past, as timer_over, from the running thread's own
 * CPU clock. */
static int time_over(sb_state *sb)
{
    double wall = clock_seconds(CLOCK_MONOTONIC) - sb->wall_start;
    double cpu;
    if (sb->max_seconds > 0 && wall > sb->max_seconds)
        return TRIP_TIME;
    if (sb->max_cpu_seconds <= 0)
        return TRIP_NONE;
    cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    if (sb->cpu_base < 0) {
        double most = 2.0 * (double)SB_TICK_NS / (double)SB_NS_PER_S;
        sb->cpu_base = cpu;
        sb->cpu_before = wall < most ? wall : most;
    }
    return cpu - sb->cpu_base + sb->cpu_before > sb->max_cpu_seconds
               ? TRIP_CPU
               : TRIP_NONE;
}

/* ------------------------------------------------------------- tracebacks */

/* Number of call-stack levels of L (level 0 = the running function). */
static int count_levels(lua_State *L)
{
    lua_Debug ar;
    int lo = 0, hi = 1;
    if (!lua_getstack(L, 0, &ar))
        return 0;
    while (lua_getstack(L, hi, &ar)) {
        lo = hi;
        hi = hi < (1 << 20) ? hi * 2 : hi + 1;
    }
    while (hi - lo > 1) {  /* level lo exists, level hi does not */
        int mid = lo + (hi - lo) / 2;
        if (lua_getstack(L, mid, &ar))
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static size_t append(char *buf, size_t cap, size_t len, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (len + 1 >= cap)
        return len;
    va_start(ap, fmt);
    w = vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
    if (w < 0)
        return len;
    len += (size_t)w;
    return len < cap ? len : cap - 1;
}

/* Appends one frame of L to sb->trace and fills sb->where with the first
 * frame that has a line.  Only reads the stack (no allocation), so it is
 * safe inside the allocator. */
static size_t trace_frame(sb_state *sb, lua_State *L, lua_Debug *ar, size_t len)
{
    if (!lua_getinfo(L, "Sln", ar))
        return len;
    /* where: the first frame of the script itself, past host functions it
     * called (a read-only view's metamethod is not where the script was) */
    int host = sb->host[0] != '\0' &&
               strncmp(ar->source, sb->host, strlen(sb->host)) == 0;
    if (sb->where[0] == '\0' && ar->currentline > 0 && !host)
        snprintf(sb->where, sizeof sb->where, "%s:%d", ar->short_src,
                 ar->currentline);
    if (ar->currentline > 0)
        len = append(sb->trace, sizeof sb->trace, len, "\n\t%s:%d: in ",
                     ar->short_src, ar->currentline);
    else
        len = append(sb->trace, sizeof sb->trace, len, "\n\t%s: in ",
                     ar->short_src);
    if (ar->namewhat != NULL && *ar->namewhat != '\0' && ar->name != NULL) {
        const char *kind = strcmp(ar->namewhat, "global") == 0 ||
                                   strcmp(ar->namewhat, "metamethod") == 0
                               ? "function"
                               : ar->namewhat;
        len = append(sb->trace, sizeof sb->trace, len, "%s ", kind);
        len = append(sb->trace, sizeof sb->trace, len, "'%s'", ar->name);
    } else if (*ar->what == 'm') {
        len = append(sb->trace, sizeof sb->trace, len, "%s", "main chunk");
    } else if (*ar->what != 'C') {
        len = append(sb->trace, sizeof sb->trace, len, "function <%s:%d>",
                     ar->short_src, ar->linedefined);
    } else {
        len = append(sb->trace, sizeof sb->trace, len, "%s", "?");
    }
    return len;
}

/* Appends the frames [from, to) of L (to < 0: all of them): the first
 * SB_HEAD_FRAMES and the last SB_TAIL_FRAMES, "..." between.  Time linear
 * in the stack depth: lua_getstack(L, n) walks n frames, so only the
 * frames shown are looked up (a runaway recursion of 200,000 frames is
 * reported in milliseconds, not minutes). */
static size_t trace_frames(sb_state *sb, lua_State *L, int from, int to,
                           size_t len, int *shown)
{
    lua_Debug ar;
    int level, tail_from;
    if (to < 0)
        to = count_levels(L);
    for (level = from; level < to && *shown < SB_HEAD_FRAMES; level++) {
        if (!lua_getstack(L, level, &ar))
            return len;
        len = trace_frame(sb, L, &ar, len);
        (*shown)++;
    }
    tail_from = to - SB_TAIL_FRAMES;
    if (tail_from > level) {
        len = append(sb->trace, sizeof sb->trace, len, "\n\t...\t(skipping %d levels)",
                     tail_from - level);
        level = tail_from;
    }
    for (; level < to && lua_getstack(L, level, &ar); level++) {
        len = trace_frame(sb, L, &ar, len);
        (*shown)++;
    }
    return len;
}

/* Records where the sandboxed code is: sb->where and sb->trace.  L is the
 * running thread (may be a coroutine created inside the sandbox); skip
 * levels at its top are left out (the message handler itself). */
static void record(sb_state *sb, lua_State *L, int skip)
{
    size_t len;
    int shown = 0;
    sb->where[0] = '\0';
    len = append(sb->trace, sizeof sb->trace, 0, "%s", "stack traceback:");
    if (L != sb->L) /* a coroutine: all of it, then the entering thread */
        len = trace_frames(sb, L, skip, -1, len, &shown), skip = 0;
    if (sb->L != NULL) {
        int top = count_levels(sb->L) - sb->base_level; /* level of run */
        len = trace_frames(sb, sb->L, skip, top, len, &shown);
    }
    if (shown == 0)
        sb->trace[0] = '\0';
    (void)len;
}

/* -------------------------------------------------------------- allocator */

static void *sb_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sb_state *sb = (sb_state *)ud;
    size_t old = ptr != NULL ? osize : 0;
    void *p;
    if (nsize > old && sb->mem_armed) {
        size_t grow = nsize - old;
        int fits = sb->used <= sb->hard && grow <= sb->hard - sb->used;
        if (sb->tentative && ptr == sb->refused_ptr &&
            osize == sb->refused_osize && nsize == sb->refused_nsize) {
            /* Lua's retry of a refused request after an emergency
             * collection: if it fits now, garbage was the problem and the
             * trip is undone; else the trip stands. */
            sb->tentative = 0;
            if (sb->used > sb->hard_base || grow > sb->hard_base - sb->used)
                return NULL;
            sb->tripped = TRIP_NONE;
            sb->hard = sb->hard_base;
            sb->where[0] = sb->trace[0] = '\0';
        } else if (!fits) {
            /* Past the hard bound: refuse and trip.  A request that Lua
             * does not retry (lauxlib buffers, string.rep) leaves the trip
             * as is; the slack leaves room for the report. */
            if (sb->tripped == TRIP_NONE) {
                if (sb->L != NULL)
                    record(sb, sb->L, 0);
                sb->tripped = TRIP_MEMORY;
                sb->tentative = 1;
                sb->hard = sat_add(sb->hard, SB_SLACK);
                sb->refused_ptr = ptr;
                sb->refused_osize = osize;
                sb->refused_nsize = nsize;
            }
            return NULL;
        } else {
            sb->tentative = 0;
        }
        if (!sb->over && sb->tripped == TRIP_NONE && sb->L != NULL &&
            (sb->used > sb->soft || grow > sb->soft - sb->used)) {
            /* Past the cap: garbage may be the cause, which only a
             * collection can tell, and the allocator may not collect.  The
             * hook does it before the next instruction (lua_sethook is
             * async-safe, see ldebug.c). */
            sb->over = 1;
            lua_sethook(sb->running != NULL ? sb->running : sb->L, sb_hook,
                        LUA_MASKCOUNT, 1);
        }
    }
    p = sb->orig_f(sb->orig_ud, ptr, osize, nsize);
    if (nsize == 0) {
        sb->used = sb->used >= old ? sb->used - old : 0;
        return p;
    }
    if (p == NULL)
        return NULL;
    sb->used = (sb->used >= old ? sb->used - old : 0) + nsize;
    if (nsize > old && sb->used > sb->peak_used)
        sb->peak_used = sb->used;
    return p;
}

/* ------------------------------------------------------------------- hook */

/* Instructions per hook tick of thread L: coroutines have a finer grain,
 * because what a coroutine runs after its last tick is charged as a whole
 * tick when its resume returns (co_resume). */
static int grain_of(const sb_state *sb, lua_State *L)
{
    return L == sb->L || sb->grain < SB_CO_GRAIN ? sb->grain : SB_CO_GRAIN;
}

/* Trips limit why (TRIP_INSTRUCTIONS, TRIP_TIME, TRIP_CPU) now: records
 * where, makes the hook raise before every further instruction of L and
 * of the entering thread, and raises. */
static int trip_now(lua_State *L, sb_state *sb, int why)
{
    sb->tripped = why;
    if (sb->mem_armed)
        sb->hard = sat_add(sb->used > sb->hard ? sb->used : sb->hard, SB_SLACK);
    record(sb, L, 0);
    if (sb->L != NULL && sb->L != L)
        lua_sethook(sb->L, sb_hook, LUA_MASKCOUNT, 1);
    lua_sethook(L, sb_hook, LUA_MASKCOUNT, 1);
    lua_pushliteral(L, "apsearch sandbox: limit exceeded");
    return lua_error(L);
}

/* The instruction limit the running call is past (TRIP_INSTRUCTIONS:
 * its own; TRIP_RUN: the process's, over every call so far), or
 * TRIP_NONE. */
static int count_over(const sb_state *sb)
{
    if (sb->max_instructions > 0 && sb->count > sb->max_instructions)
        return TRIP_INSTRUCTIONS;
    if (sb->max_run_instructions > 0 &&
        sb->count > sb->max_run_instructions -
                        atomic_load_explicit(&sb->run->instructions,
                                             memory_order_relaxed))
        return TRIP_RUN;
    return TRIP_NONE;
}

/* 1 while a metered sandboxed call runs. */
static int metering(const sb_state *sb)
{
    return sb != NULL && sb->depth > 0 && sb->enabled;
}

/* Charges n instructions (work done in C on the script's behalf: pattern
 * matching, table.move, the tail of a coroutine) to the running call;
 * raises past the limit, or if the call has already tripped. */
static void charge(lua_State *L, sb_state *sb, long long n)
{
    if (!metering(sb))
        return;
    if (sb->tripped != TRIP_NONE) {
        lua_sethook(L, sb_hook, LUA_MASKCOUNT, 1);
        lua_pushliteral(L, "apsearch sandbox: limit exceeded");
        lua_error(L);
    }
    sb->count = n > (long long)9e18 - sb->count ? (long long)9e18 : sb->count + n;
    if (count_over(sb) != TRIP_NONE)
        trip_now(L, sb, count_over(sb));
    if (atomic_load(&sb->tick) != TRIP_NONE || (timed(sb) && !sb->timer.started)) {
        int why = atomic_exchange(&sb->tick, TRIP_NONE);
        if (why == TRIP_NONE)
            why = time_over(sb);
        if (why != TRIP_NONE)
            trip_now(L, sb, why);
    }
}

static void sb_hook(lua_State *L, lua_Debug *ar)
{
    sb_state *sb = state_of(L);
    (void)ar;
    if (sb == NULL || sb->depth == 0 || !sb->enabled)
        return;
    if (sb->over && sb->tripped == TRIP_NONE) {
        /* The allocator crossed the cap: collect, then judge live data. */
        sb->over = 0;
        lua_gc(L, LUA_GCCOLLECT, 0);
        if (sb->used > sb->soft) {
            sb->tripped = TRIP_MEMORY;
            sb->hard = sat_add(sb->used > sb->hard ? sb->used : sb->hard,
                               SB_SLACK);
            record(sb, L, 0);
        } else {
            lua_sethook(L, sb_hook, LUA_MASKCOUNT, grain_of(sb, L));
            return;
        }
    }
    if (sb->tripped == TRIP_NONE) {
        int why = atomic_exchange(&sb->tick, TRIP_NONE); /* the timer's poke */
        if (why == TRIP_NONE && timed(sb) && !sb->timer.started)
            why = time_over(sb);
        if (why != TRIP_NONE)
            trip_now(L, sb, why);
    }
    if (sb->tripped == TRIP_NONE) {
        int want = grain_of(sb, L), n = lua_gethookcount(L);
        if (n != want) /* a thread left at 1 by a poke, an old trip or the cap */
            lua_sethook(L, sb_hook, LUA_MASKCOUNT, want);
        sb->count += n;
        if (count_over(sb) == TRIP_NONE)
            return;
        trip_now(L, sb, count_over(sb));
    }
    /* Tripped: raise now and before every further instruction. */
    lua_sethook(L, sb_hook, LUA_MASKCOUNT, 1);
    lua_pushliteral(L, "apsearch sandbox: limit exceeded");
    lua_error(L);
}

/* -------------------------------------------------------------- reporting */

/* 1 if s starts with "<something>:<digits>:" on its first line. */
static int has_position(const char *s)
{
    for (const char *p = s; *p != '\0' && *p != '\n'; p++) {
        if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
            const char *q = p + 1;
            while (*q >= '0' && *q <= '9')
                q++;
            if (*q == ':')
                return 1;
        }
    }
    return 0;
}

/* Message handler of the sandboxed pcall: the error as a string with the
 * position of the failing sandboxed frame; records the traceback. */
static int sb_msgh(lua_State *L)
{
    sb_state *sb = state_of(L);
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else if (lua_type(L, 1) == LUA_TTABLE &&
                 lua_getfield(L, 1, "message") == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)",
                                  luaL_typename(L, 1));
    }
    if (sb == NULL)
        return lua_pushstring(L, msg), 1;
    if (sb->mem_armed) /* room for the report, bounded */
        sb->hard = sat_add(sb->used > sb->hard ? sb->used : sb->hard, SB_SLACK);
    if (sb->tripped != TRIP_NONE) /* the trip's record stands */
        return lua_pushstring(L, msg), 1;
    record(sb, L, 1);
    if (!has_position(msg) && sb->where[0] != '\0')
        lua_pushfstring(L, "%s: %s", sb->where, msg);
    else
        lua_pushstring(L, msg);
    return 1;
}

/* What each limit's report says: "<kind> limit exceeded: more than
 * <amount> (sandbox limit; raise it with --<flag>)", the amount formatted
 * from limit_value. */
static const struct {
    int trip;
    const char *kind, *flag, *amount;
} LIMIT_TEXTS[] = {
    {TRIP_INSTRUCTIONS, "instruction", "sandbox-instructions",
     "%.0f Lua instructions in one call"},
    {TRIP_TIME, "time", "sandbox-seconds", "%g s of wall-clock time in one call"},
    {TRIP_CPU, "CPU time", "sandbox-cpu-seconds", "%g s of CPU time in one call"},
    {TRIP_RUN, "run instruction", "sandbox-run-instructions",
     "%.0f Lua instructions in the scripts' calls of this run"},
    {TRIP_RUN_TIME, "run time", "sandbox-run-seconds",
     "%g s of wall-clock time in the scripts' calls of this run"},
    {TRIP_STATE, "memory", "sandbox-state-mib",
     "%.0f MiB held by the Lua state when a call starts, what scripts kept "
     "from their calls included"},
    {TRIP_MEMORY, "memory", "sandbox-memory-mib", "%.0f MiB in use by one call"},
};

/* The setting a tripped limit is past, in its report's unit. */
static double limit_value(const sb_state *sb, int tripped)
{
    double mib = 1024.0 * 1024.0;
    switch (tripped) {
    case TRIP_INSTRUCTIONS: return (double)sb->max_instructions;
    case TRIP_TIME: return sb->max_seconds;
    case TRIP_CPU: return sb->max_cpu_seconds;
    case TRIP_RUN: return (double)sb->max_run_instructions;
    case TRIP_RUN_TIME: return sb->max_run_seconds;
    case TRIP_STATE: return (double)sb->max_state / mib;
    default: return (double)sb->max_memory / mib;
    }
}

/* The line a tripped limit reports (LIMIT_TEXTS). */
static void limit_text(const sb_state *sb, int tripped, char *text, size_t n)
{
    size_t k = sizeof LIMIT_TEXTS / sizeof LIMIT_TEXTS[0] - 1; /* memory */
    for (size_t i = 0; i < k; i++)
        if (LIMIT_TEXTS[i].trip == tripped)
            k = i;
    char amount[160];
    snprintf(amount, sizeof amount, LIMIT_TEXTS[k].amount, limit_value(sb, tripped));
    snprintf(text, n, "%s limit exceeded: more than %s (sandbox limit; raise "
             "it with --%s)", LIMIT_TEXTS[k].kind, amount, LIMIT_TEXTS[k].flag);
}

/* Raises the report of a failed sandboxed call.  The error value of the
 * pcall (a string from sb_msgh, or Lua's memory message) is on top. */
static int fail(lua_State *L, sb_state *sb, int status, int tripped,
                const char *label)
{
    luaL_Buffer b;
    const char *msg = lua_tostring(L, -1);
    int limited = tripped != TRIP_NONE;
    sb->failures++;
    luaL_buffinit(L, &b);
    if (limited) {
        char text[384];
        if (sb->where[0] != '\0') {
            luaL_addstring(&b, sb->where);
            luaL_addstring(&b, ": ");
        }
        limit_text(sb, tripped, text, sizeof text);
        luaL_addstring(&b, text);
    } else if (status == LUA_ERRMEM) {
        luaL_addstring(&b, "not enough memory");
    } else {
        luaL_addstring(&b, msg != NULL ? msg : "(error without a message)");
    }
    if (label != NULL && label[0] != '\0') {
        luaL_addstring(&b, "\n  in ");
        luaL_addstring(&b, label);
    }
    if (sb->trace[0] != '\0') {
        luaL_addchar(&b, '\n');
        luaL_addstring(&b, sb->trace);
    }
    luaL_pushresult(&b);
    return lua_error(L);
}

/* ----------------------------------------------------------------- guard */

/* At a call's start: the run's time already spent, or a state grown past
 * max_state by what earlier calls kept (collected first: garbage is not
 * kept), trips the call at its first instruction. */
static void arm_run_limits(lua_State *L, sb_state *sb)
{
    int why = TRIP_NONE;
    if (run_time_over(sb, atomic_load(&sb->run->ticks)))
        why = TRIP_RUN_TIME;
    else if (sb->max_state > 0 && sb->used > sb->max_state) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        if (sb->used > sb->max_state)
            why = TRIP_STATE;
    }
    if (why != TRIP_NONE) {
        atomic_store(&sb->tick, why);
        lua_sethook(L, sb_hook, LUA_MASKCOUNT, 1);
    }
}

static void arm(lua_State *L, sb_state *sb)
{
    sb->depth = 1;
    sb->L = L;
    sb->tripped = TRIP_NONE;
    sb->tentative = 0;
    sb->over = 0;
    sb->count = 0;
    sb->where[0] = sb->trace[0] = '\0';
    sb->entry_used = sb->peak_used = sb->used;
    sb->base_level = count_levels(L);
    sb->saved_hook = lua_gethook(L);
    sb->saved_mask = lua_gethookmask(L);
    sb->saved_count = lua_gethookcount(L);
    if (!sb->enabled)
        return;
    sb->grain = SB_GRAIN;
    if (sb->max_instructions > 0 && sb->max_instructions < SB_GRAIN)
        sb->grain = (int)sb->max_instructions;
    lua_sethook(L, sb_hook, LUA_MASKCOUNT, sb->grain);
    if (timed(sb))
        timer_arm(sb, L);
    else
        sb->running = L;
    arm_run_limits(L, sb);
    if (sb->max_memory > 0) {
        sb->soft = sat_add(sb->used, sb->max_memory);
        sb->hard = sb->hard_base = sat_add(sb->soft, sb->max_memory);
        sb->mem_armed = 1;
    }
}

/* Adds the ended call's count to the process's: at most the call's own
 * limit (work charged past it, string.rep(x, 2^40) refused, was never
 * done), and no further than the run's limit when that one stopped it. */
static void run_charge(sb_state *sb)
{
    long long n = sb->last_instructions;
    long long used = atomic_load(&sb->run->instructions);
    if (sb->max_instructions > 0 && n > sb->max_instructions)
        n = sb->max_instructions;
    if (sb->max_run_instructions > 0 && n > sb->max_run_instructions - used)
        n = sb->max_run_instructions > used ? sb->max_run_instructions - used : 0;
    if (n > (long long)9e18 - used)
        n = (long long)9e18 - used;
    atomic_fetch_add(&sb->run->instructions, n);
}

static void disarm(lua_State *L, sb_state *sb)
{
    sb->mem_armed = 0;
    sb->depth = 0;
    sb->last_instructions = sb->enabled ? sb->count : 0;
    run_charge(sb);
    timer_disarm(sb);
    lua_sethook(L, sb->saved_hook, sb->saved_mask, sb->saved_count);
}

/* Calls the function at index base with the values above it as arguments,
 * under the limits.  Returns the number of results, left from base up.
 * Raises the report on failure. */
static int guard(lua_State *L, sb_state *sb, int base, const char *label)
{
    int nargs = lua_gettop(L) - base;
    int status, tripped;
    if (sb->depth > 0) { /* nested: the outer call's limits and report */
        lua_call(L, nargs, LUA_MULTRET);
        return lua_gettop(L) - base + 1;
    }
    lua_pushcfunction(L, sb_msgh);
    lua_insert(L, base);
    arm(L, sb);
    status = lua_pcall(L, nargs, LUA_MULTRET, base);
    tripped = sb->tripped;
    disarm(L, sb);
    if (status == LUA_OK && tripped == TRIP_NONE) {
        lua_remove(L, base);
        return lua_gettop(L) - base + 1;
    }
    if (status == LUA_OK) /* the script swallowed the limit's error */
        lua_pushnil(L);
    return fail(L, sb, status, tripped, label);
}

static sb_state *upstate(lua_State *L)
{
    return (sb_state *)lua_touserdata(L, lua_upvalueindex(1));
}

/**
 * sandbox.run(fn, ...) -> fn(...)
 * Calls fn under the limits (when enabled) and returns its results.  On an
 * error, an exceeded limit (even one the script caught), raises
 * "<file>:<line>: <message>\nstack traceback:\n\t..." (a string).  Inside
 * a sandboxed call it is a plain call (the outer limits apply).
 */
static int l_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    return guard(L, upstate(L), 1, NULL);
}

static int wrapped(lua_State *L)
{
    sb_state *sb = upstate(L);
    const char *label = lua_tostring(L, lua_upvalueindex(3));
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    return guard(L, sb, 1, label);
}

/**
 * sandbox.wrap(fn[, label]) -> function
 * A function that calls sandbox.run(fn, ...); label (e.g. 'rule "x"
 * (check)') is added to reports as "  in <label>".
 */
static int l_wrap(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_optstring(L, 2, NULL);
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushcclosure(L, wrapped, 3);
    return 1;
}

static int xpcall_handler(lua_State *L)
{
    sb_state *sb = state_of(L);
    if (sb != NULL && sb->depth > 0 && sb->tripped != TRIP_NONE)
        return 1; /* a limit's error: no user code runs after a trip */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int finish_xpcall(lua_State *L, int status, lua_KContext extra)
{
    if (status != LUA_OK && status != LUA_YIELD) {
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

/**
 * sandbox.xpcall(f, msgh, ...) -- xpcall for sandbox environments: the same
 * results, but msgh is not called for the error of an exceeded limit (the
 * standard xpcall would run it with hooks off, out of the limit's reach).
 */
static int l_xpcall(lua_State *L)
{
    int n = lua_gettop(L), status;
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, xpcall_handler, 1);
    lua_replace(L, 2);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);
    status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_xpcall);
    return finish_xpcall(L, status, 2);
}

/**
 * sandbox.raise(message) -- raises message (level 0) and counts it as a
 * failed script (for bad return values found by the caller of a sandboxed
 * function; the engine reports it as APS_ENGINE_ESCRIPT).
 */
static int l_raise(lua_State *L)
{
    sb_state *sb = upstate(L);
    luaL_checkany(L, 1);
    sb->failures++;
    lua_settop(L, 1);
    return lua_error(L);
}

static void push_limits(lua_State *L, const sb_state *sb)
{
    lua_createtable(L, 0, 11);
    lua_pushboolean(L, sb->enabled);
    lua_setfield(L, -2, "enabled");
    lua_pushnumber(L, (lua_Number)sb->max_seconds);
    lua_setfield(L, -2, "seconds");
    lua_pushnumber(L, (lua_Number)sb->max_cpu_seconds);
    lua_setfield(L, -2, "cpu_seconds");
    lua_pushinteger(L, (lua_Integer)sb->max_instructions);
    lua_setfield(L, -2, "instructions");
    lua_pushinteger(L, (lua_Integer)sb->max_run_instructions);
    lua_setfield(L, -2, "run_instructions");
    lua_pushinteger(L, (lua_Integer)atomic_load(&sb->run->instructions));
    lua_setfield(L, -2, "run_used");
    lua_pushnumber(L, (lua_Number)sb->max_run_seconds);
    lua_setfield(L, -2, "run_seconds");
    lua_pushnumber(L, (lua_Number)atomic_load(&sb->run->ticks) *
                          (lua_Number)SB_TICK_NS / (lua_Number)SB_NS_PER_S);
    lua_setfield(L, -2, "run_seconds_used");
    lua_pushnumber(L, (lua_Number)sb->max_state / (1024.0 * 1024.0));
    lua_setfield(L, -2, "state_mib");
    lua_pushinteger(L, (lua_Integer)sb->max_memory);
    lua_setfield(L, -2, "memory_bytes");
    lua_pushnumber(L, (lua_Number)sb->max_memory / (1024.0 * 1024.0));
    lua_setfield(L, -2, "memory_mib");
}

/**
 * sandbox.limits() -> {enabled, instructions, run_instructions,
 * run_used, memory_bytes, memory_mib, seconds, cpu_seconds}
 * The current settings (0 = unlimited); run_used: the instructions the
 * process's sandboxed calls have been charged so far.
 */
static int l_limits(lua_State *L)
{
    push_limits(L, upstate(L));
    return 1;
}

static long long check_count(lua_State *L, int t, const char *k, double max)
{
    lua_Number v;
    if (lua_getfield(L, t, k) == LUA_TNIL) {
        lua_pop(L, 1);
        return -1;
    }
    if (!lua_isnumber(L, -1))
        luaL_error(L, "sandbox.configure: %s: expected a number (got %s)", k,
                   luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
    if (!(v >= 0 && v <= max))
        luaL_error(L, "sandbox.configure: %s: must be in [0, %f] (got %f)", k,
                   max, (double)v);
    lua_pop(L, 1);
    return (long long)v;
}

/* The number field k of table t in [0, SB_MAX_SECONDS] into *out; leaves
 * *out when the field is absent. */
static void check_seconds(lua_State *L, int t, const char *k, double *out)
{
    lua_Number v;
    if (lua_getfield(L, t, k) == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_isnumber(L, -1))
        luaL_error(L, "sandbox.configure: %s: expected a number (got %s)", k,
                   luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
    if (!(v >= 0 && v <= SB_MAX_SECONDS))
        luaL_error(L, "sandbox.configure: %s: must be in [0, %f] (got %f)", k,
                   SB_MAX_SECONDS, (double)v);
    *out = (double)v;
    lua_pop(L, 1);
}

/**
 * sandbox.configure{enabled =, instructions =, run_instructions =,
 * memory_mib = | memory_bytes =, seconds =, cpu_seconds =, host_source =}
 * -> previous limits (run_instructions: over every call of the process,
 * checked as the per-call count is).  Fields left
 * out keep their value; 0 means unlimited; enabled = false (--unsafe) lifts
 * every limit (reports keep their traceback); host_source is the source
 * prefix ("@<dir>/") of trusted Lua whose functions scripts call, left out
 * of the position a report names (it names the script's line).  Raises on
 * a bad value, or inside a sandboxed call.
 */
static int l_configure(lua_State *L)
{
    sb_state *sb = upstate(L);
    long long v;
    luaL_checktype(L, 1, LUA_TTABLE);
    if (sb->depth > 0)
        return luaL_error(L, "sandbox.configure: not allowed in sandboxed code");
    push_limits(L, sb);
    if (lua_getfield(L, 1, "enabled") != LUA_TNIL) {
        if (!lua_isboolean(L, -1))
            return luaL_error(L, "sandbox.configure: enabled: expected a boolean");
        sb->enabled = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    if ((v = check_count(L, 1, "instructions", 9.0e18)) >= 0)
        sb->max_instructions = v;
    if ((v = check_count(L, 1, "run_instructions", 9.0e18)) >= 0)
        sb->max_run_instructions = v;
    if ((v = check_count(L, 1, "state_mib", 1.0e9)) >= 0)
        sb->max_state = (size_t)v << 20;
    check_seconds(L, 1, "run_seconds", &sb->max_run_seconds);
    if ((v = check_count(L, 1, "memory_mib", 1.0e9)) >= 0) {
        lua_getfield(L, 1, "memory_mib");
        sb->max_memory = (size_t)(lua_tonumber(L, -1) * 1024.0 * 1024.0);
        lua_pop(L, 1);
    }
    if ((v = check_count(L, 1, "memory_bytes", 9.0e18)) >= 0)
        sb->max_memory = (size_t)v;
    check_seconds(L, 1, "seconds", &sb->max_seconds);
    check_seconds(L, 1, "cpu_seconds", &sb->max_cpu_seconds);
    if (lua_getfield(L, 1, "host_source") != LUA_TNIL) {
        size_t n;
        const char *h = lua_tolstring(L, -1, &n);
        if (h == NULL || n >= sizeof sb->host)
            return luaL_error(L, "sandbox.configure: host_source: expected a "
                              "string shorter than %d bytes", (int)sizeof sb->host);
        memcpy(sb->host, h, n + 1);
    }
    lua_pop(L, 1);
    return 1;
}

/**
 * sandbox.reset_run(): a run starts (apsearch.search.run): the counts the
 * run-wide limits read (run_instructions, run_seconds) start again from 0,
 * so that each search of an embedding's process has the whole budget.
 * Raises inside a sandboxed call.
 */
static int l_reset_run(lua_State *L)
{
    sb_state *sb = upstate(L);
    if (sb->depth > 0)
        return luaL_error(L, "sandbox.reset_run: not allowed in sandboxed code");
    atomic_store(&sb->run->instructions, 0);
    atomic_store(&sb->run->ticks, 0);
    return 0;
}

/**
 * sandbox.prepare_fork(): ends the timer thread (joined), so that the
 * process forks with no thread but its own (lua/apsearch/parallel.lua's
 * workers): a fork copies only the calling thread, and the timer's mutex
 * and condition variable with whatever state the timer left them in.
 * The next timed call, in the parent or a child, starts a timer again.
 * Raises inside a sandboxed call.
 */
static int l_prepare_fork(lua_State *L)
{
    sb_state *sb = upstate(L);
    if (sb->depth > 0)
        return luaL_error(L, "sandbox.prepare_fork: not allowed in sandboxed code");
    timer_stop(sb);
    sb->timer.quit = 0; /* timer_stop left it set: a new thread must run */
    return 0;
}

/**
 * sandbox.stats() -> {instructions, memory_bytes, peak_bytes, failures}
 * instructions: approximate count of the last sandboxed call (multiple of
 * the hook grain); memory_bytes: bytes the state holds now; peak_bytes:
 * growth of the last call above its entry; failures: failed calls so far.
 */
static int l_stats(lua_State *L)
{
    sb_state *sb = upstate(L);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)sb->last_instructions);
    lua_setfield(L, -2, "instructions");
    lua_pushinteger(L, (lua_Integer)sb->used);
    lua_setfield(L, -2, "memory_bytes");
    lua_pushinteger(L, (lua_Integer)(sb->peak_used > sb->entry_used
                                         ? sb->peak_used - sb->entry_used
                                         : 0));
    lua_setfield(L, -2, "peak_bytes");
    lua_pushinteger(L, sb->failures);
    lua_setfield(L, -2, "failures");
    return 1;
}

/** sandbox.active() -> true inside a sandboxed call. */
static int l_active(lua_State *L)
{
    lua_pushboolean(L, upstate(L)->depth > 0);
    return 1;
}

/* __gc of the state: the original allocator back, if ours is in place. */
static int state_gc(lua_State *L)
{
    sb_state *sb = (sb_state *)lua_touserdata(L, 1);
    void *ud = NULL;
    if (sb != NULL)
        timer_stop(sb);
    if (sb != NULL && sb->run_shared) {
        munmap(sb->run, sizeof(sb_run));
        sb->run_shared = 0;
    }
    if (sb != NULL && lua_getallocf(L, &ud) == sb_alloc && ud == sb)
        lua_setallocf(L, sb->orig_f, sb->orig_ud);
    return 0;
}

/* The run's counts: a shared anonymous mapping (the run's --jobs workers
 * fork after it and add to it), else -- no mmap -- a static of this
 * process (each state its own would be nicer; one state per process is
 * what apsearch makes). */
static void run_counts_init(sb_state *sb)
{
    static sb_run local;
    void *p = mmap(NULL, sizeof(sb_run), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sb->run_shared = p != MAP_FAILED;
    sb->run = sb->run_shared ? (sb_run *)p : &local;
    atomic_init(&sb->run->instructions, 0);
    atomic_init(&sb->run->ticks, 0);
}

/* Pushes the state userdata, creating it (and installing the allocator)
 * on first use. */
static sb_state *push_state(lua_State *L)
{
    sb_state *sb;
    if (lua_getfield(L, LUA_REGISTRYINDEX, SB_REGISTRY_KEY) == LUA_TUSERDATA)
        return (sb_state *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    sb = (sb_state *)lua_newuserdatauv(L, sizeof *sb, 0);
    memset(sb, 0, sizeof *sb);
    sb->enabled = 1;
    sb->max_instructions = APSL_SANDBOX_DEFAULT_INSTRUCTIONS;
    sb->max_run_instructions = APSL_SANDBOX_DEFAULT_RUN_INSTRUCTIONS;
    sb->max_run_seconds = APSL_SANDBOX_DEFAULT_RUN_SECONDS;
    sb->max_state = (size_t)APSL_SANDBOX_DEFAULT_STATE_MIB << 20;
    run_counts_init(sb);
    sb->max_memory = (size_t)APSL_SANDBOX_DEFAULT_MEMORY_MIB << 20;
    sb->max_seconds = APSL_SANDBOX_DEFAULT_SECONDS;
    sb->max_cpu_seconds = APSL_SANDBOX_DEFAULT_CPU_SECONDS;
    atomic_init(&sb->tick, 0);
    sb->grain = SB_GRAIN;
    lua_createtable(L, 0, 2);
    lua_pushliteral(L, SB_REGISTRY_KEY);
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, SB_REGISTRY_KEY);
    /* Nothing allocates between the count and the switch. */
    sb->orig_f = lua_getallocf(L, &sb->orig_ud);
    sb->used = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024u +
               (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
    lua_setallocf(L, sb_alloc, sb);
    return sb;
}

/* ------------------------------------------------------------- coroutines */

/* A coroutine's count hook fires every SB_CO_GRAIN instructions of its
 * own; what it ran after its last tick would be lost when it yields or
 * dies (a loop of short-lived coroutine.wrap calls used to run ~100x the
 * budget).  So the sandbox's coroutine.create/wrap give the new thread
 * the hook, and every resume is charged SB_CO_GRAIN instructions on
 * return: an over-count of at most SB_CO_GRAIN per resume, never an
 * under-count. */

static lua_State *new_coroutine(lua_State *L)
{
    sb_state *sb = state_of(L);
    lua_State *co;
    luaL_checktype(L, 1, LUA_TFUNCTION);
    co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    if (metering(sb))
        lua_sethook(co, sb_hook, LUA_MASKCOUNT,
                    sb->tripped != TRIP_NONE ? 1 : grain_of(sb, co));
    return co;
}

/* Resumes co with the narg values on top of L; moves its results (>= 0)
 * or its error value (-1) to L. */
static int resume_metered(lua_State *L, lua_State *co, int narg)
{
    sb_state *sb = state_of(L);
    lua_State *outer = sb != NULL ? sb->running : NULL;
    int status, nres = 0;
    if (!lua_checkstack(co, narg)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, narg);
    if (metering(sb))
        set_running(sb, co); /* the timer pokes the coroutine */
    status = lua_resume(co, L, narg, &nres);
    if (metering(sb))
        set_running(sb, outer);
    if (metering(sb))
        charge(L, sb, SB_CO_GRAIN); /* raises if tripped or past the limit */
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nres);
        return nres;
    }
    lua_xmove(co, L, 1);
    return -1;
}

/** sandbox.co_create(f): coroutine.create for sandbox environments. */
static int l_co_create(lua_State *L)
{
    new_coroutine(L);
    return 1;
}

/** sandbox.co_resume(co, ...): coroutine.resume, metered (see above). */
static int l_co_resume(lua_State *L)
{
    lua_State *co = lua_tothread(L, 1);
    int r;
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    r = resume_metered(L, co, lua_gettop(L) - 1);
    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(r + 1));
    return r + 1;
}

static int co_wrapped(lua_State *L)
{
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int r = resume_metered(L, co, lua_gettop(L));
    if (r >= 0)
        return r;
    if (lua_status(co) != LUA_OK && lua_status(co) != LUA_YIELD) {
#if LUA_VERSION_RELEASE_NUM >= 50406
        lua_closethread(co, L);
#else
        lua_resetthread(co);
#endif
    }
    if (lua_type(L, -1) == LUA_TSTRING) { /* the error's position */
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

/** sandbox.co_wrap(f): coroutine.wrap, metered (see above). */
static int l_co_wrap(lua_State *L)
{
    new_coroutine(L);
    lua_pushcclosure(L, co_wrapped, 1);
    return 1;
}

/* ----------------------------------------------------------------- helpers */

/* Skips a "<source>:<line>: " prefix at the start of msg. */
static const char *skip_position(const char *msg)
{
    for (const char *p = msg; *p != '\0' && *p != '\n'; p++) {
        if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
            const char *q = p + 1;
            while (*q >= '0' && *q <= '9')
                q++;
            if (q[0] == ':' && q[1] == ' ')
                return q + 2;
            return msg;
        }
    }
    return msg;
}

static int helper_call(lua_State *L)
{
    sb_state *sb = state_of(L);
    int status;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    if (status == LUA_OK)
        return lua_gettop(L);
    if ((sb != NULL && sb->tripped != TRIP_NONE) || status == LUA_ERRMEM ||
        lua_type(L, -1) != LUA_TSTRING)
        return lua_error(L);
    {
        const char *msg = lua_tostring(L, -1);
        luaL_where(L, 1);
        lua_pushstring(L, skip_position(msg));
        lua_concat(L, 2);
    }
    return lua_error(L);
}

/**
 * sandbox.helper(fn) -> function
 * fn for scripts (the policy helpers hf, model, device, ...; ctx methods):
 * the same results, but an error names the script's line that called it,
 * "<file>:<line>: <message>", never apsearch's own sources (a position at
 * the start of the message is replaced).  A limit's error passes as is.
 */
static int l_helper(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, helper_call, 1);
    return 1;
}

/** sandbox.table_move(a1, f, e, t[, a2]): table.move, charged e - f + 1
 *  instructions first (it loops in C, out of the count hook's reach). */
static int l_table_move(lua_State *L)
{
    sb_state *sb = state_of(L);
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
    if (e >= f && metering(sb)) {
        lua_Unsigned n = (lua_Unsigned)e - (lua_Unsigned)f;
        charge(L, sb, n >= (lua_Unsigned)9e18 ? (long long)9e18 : (long long)n + 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* ------------------------------------------------ metered library functions */

/* The C functions of the string, table and utf8 libraries whose work
 * grows with their arguments run in C, where the count hook never fires:
 * table.sort of millions of elements, string.rep, upper, utf8.len of a
 * string of hundreds of MiB, table.insert at the front of a long array.
 * The sandbox's copies charge that work to the call as instructions
 * before they run (a call that cannot fit in the budget is stopped before
 * it starts): one instruction per SB_BYTES_PER_INSTRUCTION bytes read or
 * written, one per element moved or pushed, SB_SORT_COMPARE_COST per
 * comparison of a sort (n log2 n of them, and log2 n passes over the
 * bytes of string elements, which strcoll compares).  Measured on the
 * 2-core development machine: a VM instruction takes 2.5 ns, reading a
 * byte (utf8.len) 1.9 ns, writing one into fresh memory (upper, rep) 6 to
 * 8 ns, a comparison of table.sort 15 to 25 ns; the CPU-time limit
 * covers what these rates under-charge.  Functions whose
 * work is constant, or already charged (the pattern functions), are the
 * stock ones.  Outside a sandboxed call nothing is charged. */
#define SB_BYTES_PER_INSTRUCTION 1.0
#define SB_SORT_COMPARE_COST 8.0
#define SB_MAX_CHARGE 9.0e18
#define SB_MAX_PUSH 1000000.0   /* values one call can push (LUAI_MAXSTACK):
                                   more fails at once in the stock function */

/* Charges n instructions, n a double (rounded up, clamped). */
static void charge_n(lua_State *L, sb_state *sb, double n)
{
    if (n > 0)
        charge(L, sb, n >= SB_MAX_CHARGE ? (long long)SB_MAX_CHARGE
                                         : (long long)n + 1);
}

/* Length of the string argument i (0 if it is not a string: the stock
 * function reports a wrong type itself). */
static double str_arg_len(lua_State *L, int i)
{
    return lua_type(L, i) == LUA_TSTRING ? (double)lua_rawlen(L, i) : 0.0;
}

/* The integer argument i, or def when absent or not an integer. */
static double int_arg(lua_State *L, int i, double def)
{
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, i, &isint);
    return isint ? (double)v : def;
}

/* Elements of the range [i, j] of a sequence of n (1-based, negative
 * from the end, as string.sub / string.byte clamp them). */
static double range_len(double n, double i, double j)
{
    if (i < 0)
        i = n + i + 1 < 1 ? 1 : n + i + 1;
    else if (i == 0)
        i = 1;
    if (j < 0)
        j = n + j + 1;
    else if (j > n)
        j = n;
    return j >= i ? j - i + 1 : 0;
}

/* Length of table argument 1 as the stock function sees it (luaL_len:
 * its __len runs, metered like any script code); -1 if not a table. */
static double table_arg_len(lua_State *L)
{
    lua_Integer n;
    if (lua_type(L, 1) != LUA_TTABLE)
        return -1;
    n = luaL_len(L, 1);
    return (double)n;
}

static void cost_bytes(lua_State *L, sb_state *sb)      /* upper, lower, reverse */
{
    charge_n(L, sb, str_arg_len(L, 1) / SB_BYTES_PER_INSTRUCTION);
}

static void cost_all_strings(lua_State *L, sb_state *sb) /* format, pack */
{
    double bytes = 0;
    for (int i = 1, n = lua_gettop(L); i <= n; i++)
        bytes += str_arg_len(L, i);
    charge_n(L, sb, bytes / SB_BYTES_PER_INSTRUCTION);
}

static void cost_nargs(lua_State *L, sb_state *sb)      /* string.char, utf8.char */
{
    charge_n(L, sb, (double)lua_gettop(L));
}

static void cost_sub(lua_State *L, sb_state *sb)        /* string.sub: the copy */
{
    double n = str_arg_len(L, 1);
    charge_n(L, sb, range_len(n, int_arg(L, 2, 1), int_arg(L, 3, -1)) /
                        SB_BYTES_PER_INSTRUCTION);
}

/* n values pushed, at most what the stack can hold (the stock function
 * refuses more at once, an error a script may catch). */
static void charge_pushes(lua_State *L, sb_state *sb, double n)
{
    charge_n(L, sb, n < SB_MAX_PUSH ? n : SB_MAX_PUSH);
}

static void cost_byte(lua_State *L, sb_state *sb)       /* byte, codepoint: pushes */
{
    double i = int_arg(L, 2, 1);
    charge_pushes(L, sb, range_len(str_arg_len(L, 1), i, int_arg(L, 3, i)));
}

static void cost_utf8_len(lua_State *L, sb_state *sb)   /* utf8.len: the scan */
{
    double n = str_arg_len(L, 1);
    charge_n(L, sb, range_len(n, int_arg(L, 2, 1), int_arg(L, 3, -1)) /
                        SB_BYTES_PER_INSTRUCTION);
}

static void cost_utf8_offset(lua_State *L, sb_state *sb) /* may scan it all */
{
    charge_n(L, sb, str_arg_len(L, 1) / SB_BYTES_PER_INSTRUCTION);
}

static void cost_insert(lua_State *L, sb_state *sb)     /* elements shifted */
{
    double n = lua_gettop(L) == 3 ? table_arg_len(L) : -1;
    if (n >= 0)
        charge_n(L, sb, n - int_arg(L, 2, n + 1) + 1);
}

static void cost_remove(lua_State *L, sb_state *sb)     /* elements shifted */
{
    double n = table_arg_len(L);
    if (n >= 0)
        charge_n(L, sb, n - int_arg(L, 2, n));
}

static void cost_unpack(lua_State *L, sb_state *sb)     /* values pushed */
{
    double i = int_arg(L, 2, 1);
    double j = lua_isnoneornil(L, 3) ? table_arg_len(L) : int_arg(L, 3, 0);
    charge_pushes(L, sb, j - i + 1);
}

/* Bytes of the string elements t[i..j] of table argument 1 (raw; the
 * caller charged j - i + 1 first, which bounds the pass). */
static double string_bytes(lua_State *L, double i, double j)
{
    double bytes = 0;
    for (lua_Integer k = (lua_Integer)i; k <= (lua_Integer)j; k++) {
        if (lua_rawgeti(L, 1, k) == LUA_TSTRING)
            bytes += (double)lua_rawlen(L, -1);
        lua_pop(L, 1);
    }
    return bytes;
}

/* table.concat: the elements it joins (raw, up to the first that is not
 * a string or number, where the stock function stops with an error) and
 * their bytes with the separators.  The pass is bounded by the table's
 * array, which the memory cap bounds. */
static void cost_concat(lua_State *L, sb_state *sb)
{
    double i = int_arg(L, 3, 1), j, count = 0, bytes = 0;
    double sep = str_arg_len(L, 2);
    j = lua_isnoneornil(L, 4) ? table_arg_len(L) : int_arg(L, 4, 0);
    if (lua_type(L, 1) != LUA_TTABLE || i < -SB_MAX_CHARGE || j > SB_MAX_CHARGE)
        return; /* (the stock function refuses such a range) */
    for (lua_Integer k = (lua_Integer)i; k <= (lua_Integer)j; k++) {
        int t = lua_rawgeti(L, 1, k);
        if (t == LUA_TSTRING || t == LUA_TNUMBER)
            bytes += (t == LUA_TSTRING ? (double)lua_rawlen(L, -1) : 1.0) + sep;
        lua_pop(L, 1);
        if (t != LUA_TSTRING && t != LUA_TNUMBER)
            break;
        count++;
    }
    charge_n(L, sb, count + bytes / SB_BYTES_PER_INSTRUCTION);
}

static void cost_sort(lua_State *L, sb_state *sb)       /* n log2 n comparisons */
{
    double n = table_arg_len(L), depth;
    if (n < 2)
        return;
    depth = 1;
    for (double m = n; m > 1; m /= 2)
        depth++;
    charge_n(L, sb, n * depth * SB_SORT_COMPARE_COST); /* bounds the pass */
    if (sb->max_instructions <= 0)
        return;
    charge_n(L, sb, depth * string_bytes(L, 1, n) / SB_BYTES_PER_INSTRUCTION);
}

typedef void (*sb_cost)(lua_State *L, sb_state *sb);

/* The metered functions: library, name, cost. */
static const struct {
    const char *lib, *name;
    sb_cost cost;
} METERED[] = {
    {"string", "upper", cost_bytes},      {"string", "lower", cost_bytes},
    {"string", "reverse", cost_bytes},    {"string", "format", cost_all_strings},
    {"string", "pack", cost_all_strings}, {"string", "char", cost_nargs},
    {"string", "sub", cost_sub},          {"string", "byte", cost_byte},
    {"utf8", "len", cost_utf8_len},       {"utf8", "codepoint", cost_byte},
    {"utf8", "offset", cost_utf8_offset}, {"utf8", "char", cost_nargs},
    {"table", "insert", cost_insert},     {"table", "remove", cost_remove},
    {"table", "unpack", cost_unpack},     {"table", "concat", cost_concat},
    {"table", "sort", cost_sort},
};

/* A metered function: upvalues (the stock function, 1 if it is a light C
 * function that can be called directly, the METERED index). */
static int metered_call(lua_State *L)
{
    sb_state *sb = state_of(L);
    if (metering(sb)) {
        int top = lua_gettop(L);
        METERED[lua_tointeger(L, lua_upvalueindex(3))].cost(L, sb);
        lua_settop(L, top);
    }
    if (lua_toboolean(L, lua_upvalueindex(2)))
        return lua_tocfunction(L, lua_upvalueindex(1))(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* Replaces the functions of library lib in table t (a copy of it) by
 * their metered versions. */
static void meter_lib(lua_State *L, int t, const char *lib)
{
    for (size_t i = 0; i < sizeof METERED / sizeof METERED[0]; i++) {
        if (strcmp(METERED[i].lib, lib) != 0)
            continue;
        if (lua_getfield(L, t, METERED[i].name) != LUA_TFUNCTION) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushboolean(L, lua_iscfunction(L, -1) &&
                               lua_getupvalue(L, -1, 1) == NULL);
        lua_pushinteger(L, (lua_Integer)i);
        lua_pushcclosure(L, metered_call, 3);
        lua_setfield(L, t, METERED[i].name);
    }
}

/* Pushes a copy of the global library lib with its metered functions. */
static void push_metered_lib(lua_State *L, const char *lib)
{
    int t;
    lua_newtable(L);
    t = lua_gettop(L);
    if (lua_getglobal(L, lib) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, t);
        }
    }
    lua_settop(L, t);
    meter_lib(L, t, lib);
}

/** sandbox.string.rep: string.rep, charged for the bytes it writes; an
 *  empty result is returned at once (the stock one loops n times even when
 *  the pieces are empty). */
static int l_str_rep(lua_State *L)
{
    size_t l, lsep;
    lua_Integer n;
    double total;
    sb_state *sb = state_of(L);
    luaL_checklstring(L, 1, &l);
    luaL_optlstring(L, 3, "", &lsep);
    n = luaL_checkinteger(L, 2);
    if (n <= 0 || l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    total = ((double)l + (double)lsep) * (double)n;
    /* a result past the memory cap is refused by the allocator, which
     * reports the memory limit; anything else is charged */
    if (metering(sb) && !(sb->mem_armed && sb->used <= sb->hard &&
                          total > (double)(sb->hard - sb->used)))
        charge_n(L, sb, total / SB_BYTES_PER_INSTRUCTION);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* --------------------------------------------------------- pattern matching */

/* string.find, match, gmatch and gsub for the sandbox (also behind the
 * string metatable, so ("x"):find(p) is the same function).  The stock
 * matcher runs in C, where the count hook never fires: twelve "a-" items
 * backtrack for minutes.  This one implements the same Lua 5.4 pattern
 * language (written for apsearch, following the reference manual, §6.4.1)
 * and counts its steps: every MS_CHUNK steps they are charged to the
 * sandboxed call as instructions, so the instruction limit stops it.
 * Outside a sandboxed call nothing is charged. */

#define MS_MAXCAPTURES 32
#define MS_MAXDEPTH 200
#define MS_CHUNK 4096
#define CAP_OPEN (-1)
#define CAP_POSITION (-2)

typedef struct {
    const char *src, *src_end;  /* the subject */
    const char *pat_end;        /* the pattern's end (a '\0' follows it) */
    lua_State *L;
    sb_state *sb;
    long long steps;            /* steps not yet charged */
    int depth;                  /* C recursion left */
    int level;                  /* captures open or closed */
    struct {
        const char *at;
        ptrdiff_t len;          /* length, CAP_OPEN or CAP_POSITION */
    } cap[MS_MAXCAPTURES];
} mstate;

static void ms_charge(mstate *ms)
{
    long long n = ms->steps;
    ms->steps = 0;
    if (metering(ms->sb))
        charge(ms->L, ms->sb, n);
}

#define MS_STEP(ms) \
    do { if (++(ms)->steps >= MS_CHUNK) ms_charge(ms); } while (0)

static void ms_init(mstate *ms, lua_State *L, const char *s, size_t ls,
                    const char *p, size_t lp)
{
    ms->L = L;
    ms->sb = state_of(L);
    ms->src = s;
    ms->src_end = s + ls;
    ms->pat_end = p + lp;
    ms->steps = 0;
}

static int class_has(int c, int cl)
{
    int r;
    switch (cl | 0x20) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    case 'z': r = (c == 0); break; /* deprecated, still in Lua 5.4's */
    default: return cl == c;
    }
    if (isupper(cl))
        r = !r;
    return r != 0;
}

/* Is c in the set [...] from p (at '[') to close (at its ']')? */
static int set_has(int c, const char *p, const char *close)
{
    int found = 0, neg = 0;
    p++;
    if (*p == '^') {
        neg = 1;
        p++;
    }
    while (p < close && !found) {
        if (*p == '%' && p + 1 < close) {
            found = class_has(c, (unsigned char)p[1]);
            p += 2;
        } else if (p[1] == '-' && p + 2 < close) {
            found = (unsigned char)p[0] <= c && c <= (unsigned char)p[2];
            p += 3;
        } else {
            found = (unsigned char)*p == c;
            p++;
        }
    }
    return found != neg;
}

/* The end of the single-character class at p. */
static const char *item_end(mstate *ms, const char *p)
{
    if (*p == '%') {
        if (p + 1 >= ms->pat_end)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 2;
    }
    if (*p == '[') {
        p++;
        if (*p == '^')
            p++;
        do {
            if (p >= ms->pat_end)
                luaL_error(ms->L, "malformed pattern (missing ']')");
            if (*p++ == '%' && p < ms->pat_end)
                p++;
        } while (*p != ']');
        return p + 1;
    }
    return p + 1;
}

/* Does the character at s match the class [p, ep)? */
static int item_has(mstate *ms, const char *s, const char *p, const char *ep)
{
    int c;
    if (s >= ms->src_end)
        return 0;
    c = (unsigned char)*s;
    switch (*p) {
    case '.': return 1;
    case '%': return class_has(c, (unsigned char)p[1]);
    case '[': return set_has(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

static const char *do_match(mstate *ms, const char *s, const char *p);

static const char *greedy(mstate *ms, const char *s, const char *p, const char *ep)
{
    ptrdiff_t n = 0;
    while (item_has(ms, s + n, p, ep)) {
        n++;
        MS_STEP(ms);
    }
    for (; n >= 0; n--) {
        const char *r = do_match(ms, s + n, ep + 1);
        if (r != NULL)
            return r;
    }
    return NULL;
}

static const char *lazy(mstate *ms, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = do_match(ms, s, ep + 1);
        if (r != NULL)
            return r;
        if (!item_has(ms, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *open_cap(mstate *ms, const char *s, const char *p, ptrdiff_t what)
{
    const char *r;
    if (ms->level >= MS_MAXCAPTURES)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].at = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    if ((r = do_match(ms, s, p)) == NULL)
        ms->level--;
    return r;
}

static const char *close_cap(mstate *ms, const char *s, const char *p)
{
    int l = ms->level - 1;
    const char *r;
    while (l >= 0 && ms->cap[l].len != CAP_OPEN)
        l--;
    if (l < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[l].len = s - ms->cap[l].at;
    if ((r = do_match(ms, s, p)) == NULL)
        ms->cap[l].len = CAP_OPEN;
    return r;
}

static const char *back_ref(mstate *ms, const char *s, int d)
{
    int l = d - '1';
    size_t len;
    if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_OPEN)
        luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    if (ms->cap[l].len == CAP_POSITION)
        return NULL;
    len = (size_t)ms->cap[l].len;
    if ((size_t)(ms->src_end - s) >= len && memcmp(ms->cap[l].at, s, len) == 0)
        return s + len;
    return NULL;
}

static const char *balanced(mstate *ms, const char *s, const char *p)
{
    int open, close, n = 1;
    if (p + 1 >= ms->pat_end)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    open = (unsigned char)p[0];
    close = (unsigned char)p[1];
    if (s >= ms->src_end || (unsigned char)*s != open)
        return NULL;
    while (++s < ms->src_end) {
        int c = (unsigned char)*s;
        MS_STEP(ms);
        if (c == close) {
            if (--n == 0)
                return s + 1;
        } else if (c == open) {
            n++;
        }
    }
    return NULL;
}

/* Matches the pattern at p against the subject at s: the end of the
 * match, or NULL. */
static const char *do_match(mstate *ms, const char *s, const char *p)
{
    if (ms->depth-- == 0)
        luaL_error(ms->L, "pattern too complex");
    for (;;) {
        const char *ep;
        int has;
        MS_STEP(ms);
        if (p == ms->pat_end)
            break;
        if (*p == '(') {
            s = p[1] == ')' ? open_cap(ms, s, p + 2, CAP_POSITION)
                            : open_cap(ms, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            s = close_cap(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->pat_end) {
            if (s != ms->src_end)
                s = NULL;
            break;
        }
        if (*p == '%' && p[1] == 'b') {
            s = balanced(ms, s, p + 2);
            if (s == NULL)
                break;
            p += 4;
            continue;
        }
        if (*p == '%' && p[1] == 'f') {
            int before, here;
            p += 2;
            if (*p != '[')
                luaL_error(ms->L, "missing '[' after '%%f' in pattern");
            ep = item_end(ms, p);
            before = s == ms->src ? 0 : (unsigned char)s[-1];
            here = s < ms->src_end ? (unsigned char)*s : 0;
            if (set_has(before, p, ep - 1) || !set_has(here, p, ep - 1)) {
                s = NULL;
                break;
            }
            p = ep;
            continue;
        }
        if (*p == '%' && p[1] >= '0' && p[1] <= '9') {
            s = back_ref(ms, s, (unsigned char)p[1]);
            if (s == NULL)
                break;
            p += 2;
            continue;
        }
        ep = item_end(ms, p);
        has = item_has(ms, s, p, ep);
        if (*ep == '?') {
            const char *r;
            if (has && (r = do_match(ms, s + 1, ep + 1)) != NULL) {
                s = r;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (*ep == '+') {
            s = has ? greedy(ms, s + 1, p, ep) : NULL;
            break;
        }
        if (*ep == '*') {
            s = greedy(ms, s, p, ep);
            break;
        }
        if (*ep == '-') {
            s = lazy(ms, s, p, ep);
            break;
        }
        if (!has) {
            s = NULL;
            break;
        }
        s++;
        p = ep;
    }
    ms->depth++;
    return s;
}

/* Pushes capture i (the whole match [s, e) when there are none and i is
 * 0). */
static void push_cap(mstate *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
    } else if (ms->cap[i].len == CAP_OPEN) {
        luaL_error(ms->L, "unfinished capture");
    } else if (ms->cap[i].len == CAP_POSITION) {
        lua_pushinteger(ms->L, (lua_Integer)(ms->cap[i].at - ms->src) + 1);
    } else {
        lua_pushlstring(ms->L, ms->cap[i].at, (size_t)ms->cap[i].len);
    }
}

/* Pushes all captures (or the whole match if s != NULL and there are
 * none); returns how many. */
static int push_caps(mstate *ms, const char *s, const char *e)
{
    int n = ms->level == 0 && s != NULL ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        push_cap(ms, i, s, e);
    return n;
}

/* A 1-based start position from init (negative: from the end). */
static size_t start_pos(lua_Integer init, size_t len)
{
    if (init > 0)
        return (size_t)init;
    if (init == 0 || init < -(lua_Integer)len)
        return 1;
    return len + (size_t)init + 1;
}

static int has_specials(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (strchr("^$*+?.([%-", p[i]) != NULL && p[i] != '\0')
            return 1;
    return 0;
}

/* Plain search for p in s, metered (the naive search is len(s) x len(p)
 * in the worst case). */
static const char *plain_find(mstate *ms, const char *s, size_t ls,
                              const char *p, size_t lp)
{
    const char *end;
    if (lp == 0)
        return s;
    if (lp > ls)
        return NULL;
    end = s + (ls - lp) + 1;
    while (s < end) {
        const char *hit = memchr(s, *p, (size_t)(end - s));
        if (hit == NULL)
            return NULL;
        ms->steps += 1 + (long long)(lp >> 6);
        if (ms->steps >= MS_CHUNK)
            ms_charge(ms);
        if (memcmp(hit + 1, p + 1, lp - 1) == 0)
            return hit;
        s = hit + 1;
    }
    return NULL;
}

static int find_or_match(lua_State *L, int find)
{
    size_t ls, lp, init;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    mstate ms;
    init = start_pos(luaL_optinteger(L, 3, 1), ls);
    if (init > ls + 1) {
        luaL_pushfail(L);
        return 1;
    }
    ms_init(&ms, L, s, ls, p, lp);
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
        const char *hit = plain_find(&ms, s + init - 1, ls - init + 1, p, lp);
        ms_charge(&ms);
        if (hit == NULL) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (lua_Integer)(hit - s) + 1);
        lua_pushinteger(L, (lua_Integer)(hit - s) + (lua_Integer)lp);
        return 2;
    } else {
        const char *at = s + init - 1;
        int anchor = *p == '^';
        if (anchor)
            p++;
        do {
            const char *e;
            ms.level = 0;
            ms.depth = MS_MAXDEPTH;
            if ((e = do_match(&ms, at, p)) != NULL) {
                ms_charge(&ms);
                if (!find)
                    return push_caps(&ms, at, e);
                lua_pushinteger(L, (lua_Integer)(at - s) + 1);
                lua_pushinteger(L, (lua_Integer)(e - s));
                return push_caps(&ms, NULL, NULL) + 2;
            }
        } while (at++ < ms.src_end && !anchor);
        ms_charge(&ms);
    }
    luaL_pushfail(L);
    return 1;
}

static int l_str_find(lua_State *L) { return find_or_match(L, 1); }
static int l_str_match(lua_State *L) { return find_or_match(L, 0); }

/* gmatch state: the next position and the end of the last match (-1:
 * none), in a full userdata upvalue. */
typedef struct {
    size_t pos;
    ptrdiff_t last;
} gm_state;

static int gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    gm_state *g = (gm_state *)lua_touserdata(L, lua_upvalueindex(3));
    mstate ms;
    ms_init(&ms, L, s, ls, p, lp);
    for (const char *at = s + g->pos; at <= ms.src_end; at++) {
        const char *e;
        ms.level = 0;
        ms.depth = MS_MAXDEPTH;
        if ((e = do_match(&ms, at, p)) != NULL && (e - s) != g->last) {
            g->pos = (size_t)(e - s);
            g->last = e - s;
            ms_charge(&ms);
            return push_caps(&ms, at, e);
        }
    }
    g->pos = ls + 1;
    ms_charge(&ms);
    return 0;
}

static int l_str_gmatch(lua_State *L)
{
    size_t ls, init;
    gm_state *g;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    init = start_pos(luaL_optinteger(L, 3, 1), ls);
    /* as lstrlib.c's gmatch: an init past len + 1 starts after the end
     * (no match, not even the empty one at len + 1) */
    if (init > ls + 1)
        init = ls + 2;
    lua_settop(L, 2);
    g = (gm_state *)lua_newuserdatauv(L, sizeof *g, 0);
    g->pos = init - 1;
    g->last = -1;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* Adds the replacement of the match [s, e) to b. */
static void add_repl(mstate *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
    lua_State *L = ms->L;
    if (tr == LUA_TSTRING || tr == LUA_TNUMBER) {
        size_t lr;
        const char *r = lua_tolstring(L, 3, &lr), *end = r + lr;
        for (; r < end; r++) {
            if (*r != '%') {
                luaL_addchar(b, *r);
                continue;
            }
            r++;
            if (r < end && *r == '%') {
                luaL_addchar(b, '%');
            } else if (r < end && *r == '0') {
                luaL_addlstring(b, s, (size_t)(e - s));
            } else if (r < end && *r >= '1' && *r <= '9') {
                push_cap(ms, *r - '1', s, e);
                luaL_tolstring(L, -1, NULL);
                lua_remove(L, -2);
                luaL_addvalue(b);
            } else {
                luaL_error(L, "invalid use of '%c' in replacement string", '%');
            }
        }
        return;
    }
    if (tr == LUA_TFUNCTION) {
        int n;
        lua_pushvalue(L, 3);
        n = push_caps(ms, s, e);
        lua_call(L, n, 1);
    } else {
        push_cap(ms, 0, s, e);
        lua_gettable(L, 3);
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
        luaL_addvalue(b);
    }
}

static int l_str_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    const char *at = s, *last = NULL;
    int tr = lua_type(L, 3), anchor;
    lua_Integer max_n = luaL_optinteger(L, 4, (lua_Integer)ls + 1), n = 0;
    mstate ms;
    luaL_Buffer b;
    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING ||
                            tr == LUA_TFUNCTION || tr == LUA_TTABLE,
                     3, "string/function/table");
    luaL_buffinit(L, &b);
    anchor = *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    ms_init(&ms, L, s, ls, p, lp);
    while (n < max_n) {
        const char *e;
        ms.level = 0;
        ms.depth = MS_MAXDEPTH;
        if ((e = do_match(&ms, at, p)) != NULL && e != last) {
            n++;
            add_repl(&ms, &b, at, e, tr);
            at = last = e;
        } else if (at < ms.src_end) {
            luaL_addchar(&b, *at++);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    ms_charge(&ms);
    luaL_addlstring(&b, at, (size_t)(ms.src_end - at));
    luaL_pushresult(&b);
    lua_pushinteger(L, n);
    return 2;
}

/* The string table of sandbox environments, also the string metatable's
 * __index: the string library without dump, with the metered functions
 * above (the stock ones stay in the global `string` of trusted code).
 * Built once per state (kept in the registry). */
static void push_safe_string(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"find", l_str_find},     {"match", l_str_match},
        {"gmatch", l_str_gmatch}, {"gsub", l_str_gsub},
        {NULL, NULL},
    };
    int safe;
    if (lua_getfield(L, LUA_REGISTRYINDEX, SB_STRING_KEY) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_newtable(L);
    safe = lua_gettop(L);
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        int mt = lua_gettop(L), lib = mt + 1;
        if (lua_getfield(L, mt, "__index") == LUA_TTABLE) {
            lua_pushnil(L);
            while (lua_next(L, lib)) {
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, safe);
            }
            lua_getfield(L, lib, "rep");
            lua_pushcclosure(L, l_str_rep, 1);
            lua_setfield(L, safe, "rep");
            meter_lib(L, safe, "string");
            lua_pushnil(L);
            lua_setfield(L, safe, "dump");
            lua_pushvalue(L, safe);
            lua_setfield(L, mt, "__index"); /* ("").dump is gone */
        }
    }
    lua_settop(L, safe);
    luaL_setfuncs(L, fns, 0);
    lua_pushvalue(L, safe);
    lua_setfield(L, LUA_REGISTRYINDEX, SB_STRING_KEY);
}

lua_Integer apsl_sandbox_failures(lua_State *L)
{
    void *ud = NULL;
    if (lua_getallocf(L, &ud) == sb_alloc)
        return ((sb_state *)ud)->failures;
    return 0;
}

LUAMOD_API int luaopen_apsearch_sandbox(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"run", l_run},           {"wrap", l_wrap},
        {"xpcall", l_xpcall},     {"raise", l_raise},
        {"limits", l_limits},     {"configure", l_configure},
        {"stats", l_stats},       {"active", l_active},
        {"co_create", l_co_create}, {"co_resume", l_co_resume},
        {"co_wrap", l_co_wrap},   {"helper", l_helper},
        {"prepare_fork", l_prepare_fork}, {"reset_run", l_reset_run},
        {NULL, NULL},
    };
    int top;
    push_state(L);
    luaL_newlibtable(L, funcs);
    lua_pushvalue(L, -2);
    luaL_setfuncs(L, funcs, 1);
    lua_pushinteger(L, (lua_Integer)APSL_SANDBOX_DEFAULT_INSTRUCTIONS);
    lua_setfield(L, -2, "DEFAULT_INSTRUCTIONS");
    lua_pushinteger(L, (lua_Integer)APSL_SANDBOX_DEFAULT_MEMORY_MIB);
    lua_setfield(L, -2, "DEFAULT_MEMORY_MIB");
    lua_pushnumber(L, (lua_Number)APSL_SANDBOX_DEFAULT_SECONDS);
    lua_setfield(L, -2, "DEFAULT_SECONDS");
    lua_pushnumber(L, (lua_Number)APSL_SANDBOX_DEFAULT_CPU_SECONDS);
    lua_setfield(L, -2, "DEFAULT_CPU_SECONDS");
    lua_pushinteger(L, SB_GRAIN);
    lua_setfield(L, -2, "GRAIN");
    push_safe_string(L);
    lua_setfield(L, -2, "string");
    top = lua_gettop(L);
    if (lua_getglobal(L, "table") == LUA_TTABLE &&
        lua_getfield(L, -1, "move") == LUA_TFUNCTION) {
        lua_pushcclosure(L, l_table_move, 1);
        lua_setfield(L, -3, "table_move");
    }
    lua_settop(L, top);
    push_metered_lib(L, "table");
    lua_getfield(L, -2, "table_move");
    lua_setfield(L, -2, "move");
    lua_setfield(L, -2, "table");
    push_metered_lib(L, "utf8");
    lua_setfield(L, -2, "utf8");
    return 1;
}
