/*
 * src/lua/host.c -- the apsearch Lua host (the CLI's C side).
 *
 * Modelled on lua.c: everything that can raise runs inside one lua_pcall
 * with a message handler; the state is closed before exit.  User errors are
 * one line ("apsearch: <message>"); APSEARCH_DEBUG=1 adds the traceback.
 */
#define _GNU_SOURCE /* readlink, access, realpath, dladdr */

#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "host.h"
#include "lconvert.h"
#include "lsandbox.h"

#ifndef APS_INSTALL_LUA_DIR
#define APS_INSTALL_LUA_DIR "/usr/local/share/apsearch"
#endif
#ifndef APS_SOURCE_LUA_DIR
#define APS_SOURCE_LUA_DIR "."
#endif
#ifndef APS_LIB_TO_SHARE
#define APS_LIB_TO_SHARE "../share/apsearch"
#endif

#define CLI_MARKER "/lua/apsearch/cli.lua"

/* 1 if dir/lua/apsearch/cli.lua is readable. */
static int has_cli(const char *dir)
{
    char path[APS_HOST_PATH_MAX];
    int w = snprintf(path, sizeof path, "%s%s", dir, CLI_MARKER);
    if (w < 0 || (size_t)w >= sizeof path)
        return 0;
    return access(path, R_OK) == 0;
}

static const char *copy_path(char *buf, size_t n, const char *path)
{
    size_t len = strlen(path);
    if (len + 1 > n)
        return NULL;
    memcpy(buf, path, len + 1);
    return buf;
}

const char *aps_host_find_root(char *buf, size_t n)
{
    const char *env = getenv("APSEARCH_ROOT");
    char exe[APS_HOST_PATH_MAX];
    ssize_t len;

    if (env != NULL && env[0] != '\0')
        return copy_path(buf, n, env);

    len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        char cand[APS_HOST_PATH_MAX + 32];
        char *slash;
        exe[len] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(cand, sizeof cand, "%s/../share/apsearch", exe);
            if (has_cli(cand)) {
                char real[PATH_MAX];
                if (realpath(cand, real) != NULL)
                    return copy_path(buf, n, real);
                return copy_path(buf, n, cand);
            }
        }
    }
    /* A build-tree binary runs its own sources, never a stale install. */
    if (has_cli(APS_SOURCE_LUA_DIR))
        return copy_path(buf, n, APS_SOURCE_LUA_DIR);
    return copy_path(buf, n, APS_INSTALL_LUA_DIR);
}

int aps_host_has_sources(const char *dir)
{
    return dir != NULL && has_cli(dir);
}

const char *aps_host_find_root_from(char *buf, size_t n, const void *addr)
{
    const char *env = getenv("APSEARCH_ROOT");
    Dl_info info;

    if (env != NULL && env[0] != '\0')
        return copy_path(buf, n, env);
    /* The object holding addr: libapsearch.so, or the executable when the
     * static library is linked in.  <its dir>/APS_LIB_TO_SHARE is the
     * install layout (lib/ -> share/apsearch). */
    if (addr != NULL && dladdr(addr, &info) != 0 && info.dli_fname != NULL &&
        strchr(info.dli_fname, '/') != NULL) {
        char cand[APS_HOST_PATH_MAX + 64];
        const char *slash = strrchr(info.dli_fname, '/');
        int w = snprintf(cand, sizeof cand, "%.*s/%s",
                         (int)(slash - info.dli_fname), info.dli_fname,
                         APS_LIB_TO_SHARE);
        if (w > 0 && (size_t)w < sizeof cand && has_cli(cand)) {
            char real[PATH_MAX];
            if (realpath(cand, real) != NULL)
                return copy_path(buf, n, real);
            return copy_path(buf, n, cand);
        }
    }
    return aps_host_find_root(buf, n);
}

/* Protected part of aps_host_setup: root string (or nil) at index 1. */
static int setup_protected(lua_State *L)
{
    const char *root = lua_tostring(L, 1);

    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_apsearch_core);
    lua_setfield(L, -2, "apsearch.core");
    lua_pushcfunction(L, luaopen_apsearch_sandbox);
    lua_setfield(L, -2, "apsearch.sandbox");
    lua_pop(L, 1);

    if (root == NULL)
        return 0;
    lua_getglobal(L, "package");
    if (!lua_istable(L, -1))
        return luaL_error(L, "the package library is not open");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s", root, root,
                    lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);

    lua_pushstring(L, root);
    lua_setglobal(L, "APSEARCH_ROOT");
    return 0;
}

int aps_host_setup(lua_State *L, const char *root)
{
    lua_pushcfunction(L, setup_protected);
    if (root != NULL)
        lua_pushstring(L, root);
    else
        lua_pushnil(L);
    return lua_pcall(L, 1, 0, 0);
}

/* Message handler (lua.c's msghandler): the error object as a string, plus
 * a traceback when upvalue 1 is true (APSEARCH_DEBUG).  A table error with
 * a string field "message" is shown as that message. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") &&
            lua_type(L, -1) == LUA_TSTRING) {
            msg = lua_tostring(L, -1);
        } else if (lua_type(L, 1) == LUA_TTABLE &&
                   lua_getfield(L, 1, "message") == LUA_TSTRING) {
            msg = lua_tostring(L, -1);
        } else {
            msg = lua_pushfstring(L, "(error object is a %s value)",
                                  luaL_typename(L, 1));
        }
    }
    if (lua_toboolean(L, lua_upvalueindex(1)))
        luaL_traceback(L, L, msg, 1);
    else
        lua_pushstring(L, msg);
    return 1;
}

/* Protected main: argc (integer), argv (light userdata), root (string).
 * Returns the exit status as an integer. */
static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    const char *root = lua_tostring(L, 3);
    lua_Integer code = 0;

    luaL_checkversion(L);
    lua_gc(L, LUA_GCSTOP);
    luaL_openlibs(L);
    lua_gc(L, LUA_GCRESTART);
    lua_gc(L, LUA_GCGEN, 0, 0); /* as lua.c: many short-lived tables */

    lua_pushcfunction(L, setup_protected);
    lua_pushstring(L, root);
    lua_call(L, 1, 0);

    /* arg as lua.c sets it, for scripts that look for it */
    lua_createtable(L, argc > 0 ? argc - 1 : 0, 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i);
    }
    lua_setglobal(L, "arg");

    if (!has_cli(root))
        return luaL_error(L, "cannot find the Lua sources: %s%s is missing "
                             "(set APSEARCH_ROOT to the directory that holds "
                             "lua/apsearch)", root, CLI_MARKER);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "apsearch.cli");
    lua_call(L, 1, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "module apsearch.cli did not return a table "
                             "(root %s)", root);
    if (lua_getfield(L, -1, "main") != LUA_TFUNCTION)
        return luaL_error(L, "module apsearch.cli has no main function");
    lua_createtable(L, argc > 0 ? argc - 1 : 0, 0);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i);
    }
    lua_call(L, 1, 1);

    switch (lua_type(L, -1)) {
    case LUA_TNIL:
        code = 0;
        break;
    case LUA_TBOOLEAN:
        code = lua_toboolean(L, -1) ? 0 : 1;
        break;
    case LUA_TNUMBER: {
        int isint = 0;
        code = lua_tointegerx(L, -1, &isint);
        if (!isint || code < 0 || code > 255)
            return luaL_error(L, "apsearch.cli.main returned %s, not an exit "
                                 "status 0..255", lua_tostring(L, -1));
        break;
    }
    default:
        return luaL_error(L, "apsearch.cli.main returned a %s, not an exit "
                             "status", luaL_typename(L, -1));
    }
    lua_pushinteger(L, code);
    return 1;
}

/** Lua's message for an allocation that failed (lstate.c, luaD_throw's
 *  LUA_ERRMEM), alone or at the end of a message that wraps it. */
#define APS_LUA_MEMERR "not enough memory"

static void report(const char *msg)
{
    static const char prefix[] = "apsearch: ";
    if (msg == NULL)
        msg = "(no error message)";
    size_t len = strlen(msg), k = sizeof APS_LUA_MEMERR - 1;
    if (len >= k && strcmp(msg + len - k, APS_LUA_MEMERR) == 0) {
        /* whatever ran out (a module being loaded, a table being built),
         * what the user can change is the limit */
        msg = "out of memory (the process's memory limit, e.g. ulimit -v, "
              "is too low for this run)";
    }
    if (strncmp(msg, prefix, sizeof prefix - 1) == 0)
        msg += sizeof prefix - 1;
    fputs(prefix, stderr);
    const char *debug = getenv("APSEARCH_DEBUG");
    if ((debug != NULL && debug[0] != '\0') ||
        strstr(msg, "\nstack traceback:") != NULL) {
        /* a traceback (debug mode, or a failing policy or rule script
         * reported by the sandbox): on several lines, as written */
        fputs(msg, stderr);
    } else {
        /* one line, whatever the message carries (a key or value with a
         * newline in it): control characters are written as \ooo */
        for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
            if (*c < 0x20 || *c == 0x7f)
                fprintf(stderr, "\\%03o", *c);
            else
                fputc(*c, stderr);
        }
    }
    fputc('\n', stderr);
    fflush(stderr);
}

int aps_host_main(int argc, char **argv)
{
    char root[APS_HOST_PATH_MAX];
    const char *debug = getenv("APSEARCH_DEBUG");
    int status, code = 2;
    lua_State *L;

    /* A write past the file size limit (ulimit -f) fails with EFBIG, and
     * the run stops with its one-line error and drops the set it was
     * writing, instead of being killed by SIGXFSZ mid-write (the worker
     * processes of --jobs inherit this). */
    signal(SIGXFSZ, SIG_IGN);
    if (aps_host_find_root(root, sizeof root) == NULL) {
        report("APSEARCH_ROOT or the install path is too long");
        return 2;
    }
    L = luaL_newstate();
    if (L == NULL) {
        report("cannot create the Lua state: not enough memory");
        return 2;
    }
    lua_pushboolean(L, debug != NULL && debug[0] != '\0' &&
                           strcmp(debug, "0") != 0);
    lua_pushcclosure(L, msghandler, 1);
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    lua_pushstring(L, root);
    status = lua_pcall(L, 3, 1, 1);
    if (status == LUA_OK)
        code = (int)lua_tointeger(L, -1);
    else
        report(lua_tostring(L, -1));
    lua_close(L);

    if (fflush(stdout) != 0 || ferror(stdout)) {
        report("error writing to standard output");
        if (code == 0)
            code = 2;
    }
    return code;
}
