/*
 * src/lua/host.h -- the apsearch Lua host: a lua_State with the
 * `apsearch.core` module preloaded and the Lua sources on package.path.
 *
 * Used by the CLI (src/main.c) and by tools that embed the engine:
 *
 *     lua_State *L = luaL_newstate();
 *     luaL_openlibs(L);
 *     char root[APS_HOST_PATH_MAX];
 *     if (aps_host_setup(L, aps_host_find_root(root, sizeof root)) != LUA_OK)
 *         ... lua_tostring(L, -1) is the message ...
 *     ... require "apsearch" / "apsearch.core" from L ...
 */
#ifndef APSEARCH_HOST_H
#define APSEARCH_HOST_H

#include <stddef.h>

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Capacity of a root path buffer, including the NUL. */
#define APS_HOST_PATH_MAX 4096

/**
 * Finds the directory that holds lua/apsearch/ (and rules/, examples/), in
 * this order:
 *   1. the environment variable APSEARCH_ROOT, if set and non-empty (used
 *      as given, not checked);
 *   2. <directory of the executable>/../share/apsearch (the installed
 *      layout; the executable is found through /proc/self/exe);
 *   3. the compile-time APS_SOURCE_LUA_DIR (the source tree: a build-tree
 *      binary runs its own sources, never a stale install);
 *   4. the compile-time APS_INSTALL_LUA_DIR.
 * Candidates 2-4 count only if <dir>/lua/apsearch/cli.lua is readable; if
 * none is, the last compiled-in candidate is returned anyway so that the
 * require error names a path.  Writes the path into buf (n bytes) and
 * returns buf; returns NULL only if nothing fits in buf.
 */
const char *aps_host_find_root(char *buf, size_t n);

/**
 * As aps_host_find_root, for a library: after APSEARCH_ROOT, tries
 * <directory of the shared object holding addr>/APS_LIB_TO_SHARE (the
 * configured lib -> share/apsearch path, e.g. "../share/apsearch"; found
 * with dladdr), then the candidates of aps_host_find_root.  addr is the
 * address of a function of the library (NULL: skip that step).
 */
const char *aps_host_find_root_from(char *buf, size_t n, const void *addr);

/** 1 if dir holds the Lua sources (dir/lua/apsearch/cli.lua readable). */
int aps_host_has_sources(const char *dir);

/**
 * Prepares an opened state (luaL_openlibs done): package.preload
 * ["apsearch.core"] = luaopen_apsearch_core and ["apsearch.sandbox"] =
 * luaopen_apsearch_sandbox (src/lua/lsandbox.c); package.path gets
 * "<root>/lua/?.lua;<root>/lua/?/init.lua;" in front; the global
 * APSEARCH_ROOT = root.  root may be NULL (then only the preload is done).
 * Runs in protected mode: returns LUA_OK, or an error status with the
 * message on top of the stack.
 */
int aps_host_setup(lua_State *L, const char *root);

/**
 * The CLI: runs require("apsearch.cli").main(args), args = {argv[1], ...},
 * in a fresh state and returns the process exit status: the integer main
 * returns (0 ok, 1 no feasible strategy, 2 bad input; nil counts as 0), or
 * 2 if it raises -- then "apsearch: <message>" goes to stderr, with a Lua
 * traceback only when the environment sets APSEARCH_DEBUG.
 */
int aps_host_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* APSEARCH_HOST_H */
