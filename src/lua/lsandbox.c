/*
 * src/lua/lsandbox.c -- the `apsearch.sandbox` module: runs untrusted Lua
 * (policies, rules, objectives, formatters) under an instruction limit and
 * a memory cap that the script's own pcall cannot defeat.
 *
 *   local sandbox = require "apsearch.sandbox"
 *   local v = sandbox.run(fn, ...)              -- fn(...) under the limits
 *   local g = sandbox.wrap(fn, 'rule "x"')      -- g(...) == sandbox.run(fn, ...)
 *   sandbox.configure{ instructions = 1e8, memory_mib = 256, enabled = true }
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
 * Known limit: the instruction count covers Lua code, not time spent
 * inside one C library call; a pathological string pattern can run long
 * inside string.find without executing an instruction (as in Redis).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lsandbox.h"

#define SB_REGISTRY_KEY "apsearch.sandbox.state"
#define SB_GRAIN 1000                 /* instructions per hook tick */
#define SB_SLACK ((size_t)1 << 20)    /* bytes allowed after a trip, for the report */
#define SB_WHERE_LEN 512
#define SB_TRACE_LEN 4096
#define SB_MAX_FRAMES 22              /* frames shown in a traceback */

enum { TRIP_NONE = 0, TRIP_INSTRUCTIONS, TRIP_MEMORY };

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
    size_t max_memory;         /* bytes per call; 0 = unlimited */

    int depth;                 /* 1 while a sandboxed call runs */
    lua_State *L;              /* the thread that entered it */
    int base_level;            /* stack levels of L at entry (level 0 = run) */
    int grain;                 /* instructions per tick of this call */
    long long ticks, max_ticks;
    int tripped;
    lua_Hook saved_hook;
    int saved_mask, saved_count;

    long long last_instructions; /* approximate count of the last call */
    lua_Integer failures;      /* failed sandboxed calls, ever */
    char where[SB_WHERE_LEN];  /* "<src>:<line>" of the trip or error */
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

/* Appends the frames [from, to) of L to sb->trace and fills sb->where with
 * the first one that has a line.  Only reads the stack (no allocation), so
 * it is safe inside the allocator. */
static size_t trace_frames(sb_state *sb, lua_State *L, int from, int to,
                           size_t len, int *shown)
{
    lua_Debug ar;
    for (int level = from; level < to && lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sln", &ar))
            break;
        if (sb->where[0] == '\0' && ar.currentline > 0)
            snprintf(sb->where, sizeof sb->where, "%s:%d", ar.short_src,
                     ar.currentline);
        if (*shown == SB_MAX_FRAMES) {
            len = append(sb->trace, sizeof sb->trace, len, "%s", "\n\t...");
            (*shown)++;
        }
        if (*shown > SB_MAX_FRAMES)
            continue;
        (*shown)++;
        if (ar.currentline > 0)
            len = append(sb->trace, sizeof sb->trace, len, "\n\t%s:%d: in ",
                         ar.short_src, ar.currentline);
        else
            len = append(sb->trace, sizeof sb->trace, len, "\n\t%s: in ",
                         ar.short_src);
        if (ar.namewhat != NULL && *ar.namewhat != '\0' && ar.name != NULL) {
            const char *kind = strcmp(ar.namewhat, "global") == 0 ||
                                       strcmp(ar.namewhat, "metamethod") == 0
                                   ? "function"
                                   : ar.namewhat;
            len = append(sb->trace, sizeof sb->trace, len, "%s ", kind);
            len = append(sb->trace, sizeof sb->trace, len, "'%s'", ar.name);
        } else if (*ar.what == 'm') {
            len = append(sb->trace, sizeof sb->trace, len, "%s", "main chunk");
        } else if (*ar.what != 'C') {
            len = append(sb->trace, sizeof sb->trace, len, "function <%s:%d>",
                         ar.short_src, ar.linedefined);
        } else {
            len = append(sb->trace, sizeof sb->trace, len, "%s", "?");
        }
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
        len = trace_frames(sb, L, skip, 1 << 30, len, &shown), skip = 0;
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
            lua_sethook(sb->L, sb_hook, LUA_MASKCOUNT, 1);
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
            lua_sethook(L, sb_hook, LUA_MASKCOUNT, sb->grain);
            return;
        }
    }
    if (sb->tripped == TRIP_NONE) {
        if (lua_gethookcount(L) != sb->grain) /* a thread left at 1 by an */
            lua_sethook(L, sb_hook, LUA_MASKCOUNT, sb->grain); /* old trip */
        if (sb->max_ticks <= 0 || ++sb->ticks <= sb->max_ticks)
            return;
        sb->tripped = TRIP_INSTRUCTIONS;
        if (sb->mem_armed)
            sb->hard = sat_add(sb->used > sb->hard ? sb->used : sb->hard,
                               SB_SLACK);
        record(sb, L, 0);
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
        char text[256];
        if (sb->where[0] != '\0') {
            luaL_addstring(&b, sb->where);
            luaL_addstring(&b, ": ");
        }
        if (tripped == TRIP_INSTRUCTIONS)
            snprintf(text, sizeof text,
                     "instruction limit exceeded: more than %lld Lua "
                     "instructions in one call (sandbox limit; raise it with "
                     "--sandbox-instructions)", sb->max_instructions);
        else
            snprintf(text, sizeof text,
                     "memory limit exceeded: more than %.0f MiB in use by "
                     "one call (sandbox limit; raise it with "
                     "--sandbox-memory-mib)",
                     (double)sb->max_memory / (1024.0 * 1024.0));
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

static void arm(lua_State *L, sb_state *sb)
{
    sb->depth = 1;
    sb->L = L;
    sb->tripped = TRIP_NONE;
    sb->tentative = 0;
    sb->over = 0;
    sb->ticks = 0;
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
    sb->max_ticks = sb->max_instructions > 0
                        ? (sb->max_instructions + sb->grain - 1) / sb->grain
                        : 0;
    lua_sethook(L, sb_hook, LUA_MASKCOUNT, sb->grain);
    if (sb->max_memory > 0) {
        sb->soft = sat_add(sb->used, sb->max_memory);
        sb->hard = sb->hard_base = sat_add(sb->soft, sb->max_memory);
        sb->mem_armed = 1;
    }
}

static void disarm(lua_State *L, sb_state *sb)
{
    sb->mem_armed = 0;
    sb->depth = 0;
    sb->last_instructions = sb->enabled ? sb->ticks * (long long)sb->grain : 0;
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
    lua_createtable(L, 0, 4);
    lua_pushboolean(L, sb->enabled);
    lua_setfield(L, -2, "enabled");
    lua_pushinteger(L, (lua_Integer)sb->max_instructions);
    lua_setfield(L, -2, "instructions");
    lua_pushinteger(L, (lua_Integer)sb->max_memory);
    lua_setfield(L, -2, "memory_bytes");
    lua_pushnumber(L, (lua_Number)sb->max_memory / (1024.0 * 1024.0));
    lua_setfield(L, -2, "memory_mib");
}

/**
 * sandbox.limits() -> {enabled, instructions, memory_bytes, memory_mib}
 * The current settings (0 = unlimited).
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

/**
 * sandbox.configure{enabled =, instructions =, memory_mib = | memory_bytes =}
 * -> previous limits.  Fields left out keep their value; 0 means
 * unlimited; enabled = false (--unsafe) lifts both limits (reports keep
 * their traceback).  Raises on a bad value, or inside a sandboxed call.
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
    if ((v = check_count(L, 1, "memory_mib", 1.0e9)) >= 0) {
        lua_getfield(L, 1, "memory_mib");
        sb->max_memory = (size_t)(lua_tonumber(L, -1) * 1024.0 * 1024.0);
        lua_pop(L, 1);
    }
    if ((v = check_count(L, 1, "memory_bytes", 9.0e18)) >= 0)
        sb->max_memory = (size_t)v;
    return 1;
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
    if (sb != NULL && lua_getallocf(L, &ud) == sb_alloc && ud == sb)
        lua_setallocf(L, sb->orig_f, sb->orig_ud);
    return 0;
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
    sb->max_memory = (size_t)APSL_SANDBOX_DEFAULT_MEMORY_MIB << 20;
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
        {NULL, NULL},
    };
    push_state(L);
    luaL_newlibtable(L, funcs);
    lua_pushvalue(L, -2);
    luaL_setfuncs(L, funcs, 1);
    lua_pushinteger(L, (lua_Integer)APSL_SANDBOX_DEFAULT_INSTRUCTIONS);
    lua_setfield(L, -2, "DEFAULT_INSTRUCTIONS");
    lua_pushinteger(L, (lua_Integer)APSL_SANDBOX_DEFAULT_MEMORY_MIB);
    lua_setfield(L, -2, "DEFAULT_MEMORY_MIB");
    lua_pushinteger(L, SB_GRAIN);
    lua_setfield(L, -2, "GRAIN");
    return 1;
}
