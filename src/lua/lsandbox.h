/*
 * src/lua/lsandbox.h -- the `apsearch.sandbox` module: an instruction limit
 * and a memory cap for untrusted Lua (policies, rules, objectives,
 * formatters) that the script's own pcall cannot defeat.
 *
 * Internal to the bindings, the host and the engine; Lua code sees it as
 * `require "apsearch.sandbox"` (lsandbox.c documents the functions).
 */
#ifndef APSEARCH_LSANDBOX_H
#define APSEARCH_LSANDBOX_H

#include <lua.h>

/** Default instruction limit of one sandboxed call (Lua VM instructions;
 *  about 0.2 to 1 s of Lua on a current CPU). */
#define APSL_SANDBOX_DEFAULT_INSTRUCTIONS 100000000LL
/** Default instruction limit over every sandboxed call of a run (its
 *  rules, objectives and formatters, in every --jobs worker together;
 *  about 4 to 17 minutes of script time at the per-call limit's rate): a
 *  script that stays under each call's limits on millions of candidates
 *  still ends. */
#define APSL_SANDBOX_DEFAULT_RUN_INSTRUCTIONS 100000000000LL
/** Default wall-clock limit over every sandboxed call of a run, seconds
 *  (counted by the timer thread's 10 ms ticks that find a call running):
 *  a script whose few instructions each do long work (comparing 48 MiB
 *  strings) stays under the instruction counts and still ends. */
#define APSL_SANDBOX_DEFAULT_RUN_SECONDS 600.0
/** Default cap on the whole Lua state when a sandboxed call starts, MiB:
 *  what scripts keep from call to call (under each call's memory cap) is
 *  bounded over the run. */
#define APSL_SANDBOX_DEFAULT_STATE_MIB 8192LL
/** Default memory cap of one sandboxed call, MiB the state may grow by. */
#define APSL_SANDBOX_DEFAULT_MEMORY_MIB 256LL
/** Default wall-clock limit of one sandboxed call, seconds (checked from
 *  a timer thread, so work inside C functions and single slow VM
 *  instructions are covered too). */
#define APSL_SANDBOX_DEFAULT_SECONDS 10.0
/** Default CPU-time limit of one sandboxed call, seconds (CPU time of the
 *  thread running the script). */
#define APSL_SANDBOX_DEFAULT_CPU_SECONDS 5.0

/** Entry point: returns the module table.  The first call on a state
 *  creates the sandbox state (kept in the registry, freed with the state)
 *  and installs a counting allocator in front of the state's allocator
 *  (lua_setallocf); it only counts until a sandboxed call arms it. */
LUAMOD_API int luaopen_apsearch_sandbox(lua_State *L);

/** Number of sandboxed calls that failed (error, limit, or a bad return
 *  value reported through sandbox.raise) since the state was created; 0 if
 *  the module was never opened.  The engine compares it before and after a
 *  call to tell a script failure from bad input.  Never raises. */
lua_Integer apsl_sandbox_failures(lua_State *L);

#endif /* APSEARCH_LSANDBOX_H */
