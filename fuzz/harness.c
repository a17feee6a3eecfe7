/*
 * fuzz/harness.c -- the libFuzzer side of the apsearch fuzz targets (see
 * harness.h).  Set up once per process (aps_fuzz_init), then one protected
 * call of the target per input (aps_fuzz_one).
 */
#define _GNU_SOURCE /* mkdtemp, nftw */

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "harness.h"
#include "lua/host.h"

#ifndef APS_FUZZ_SOURCE_ROOT
#error "APS_FUZZ_SOURCE_ROOT (the source tree) must be defined by the build"
#endif

/* The Lua line pairs as libFuzzer extra counters (harness.h). */
__attribute__((section("__libfuzzer_extra_counters"), used))
static uint8_t lua_counters[APS_FUZZ_LUA_COUNTERS];

static lua_State *fuzz_L;
static int target_ref = LUA_NOREF;  /* registry ref of the run function */
static char tmp_dir[APS_HOST_PATH_MAX];
static uintptr_t prev_line;         /* hash of the previous line run */

/* Count hook on lines: the pair (previous line, this line) of a Lua
 * function, as AFL counts edges.  A line is its chunk's source string
 * (interned, so one address per file) and its number. */
static void line_hook(lua_State *L, lua_Debug *ar)
{
    uintptr_t cur;
    if (ar->event != LUA_HOOKLINE || !lua_getinfo(L, "S", ar))
        return;
    cur = ((uintptr_t)ar->source * 0x9E3779B97F4A7C15u) ^
          ((uintptr_t)ar->currentline * 0xBF58476D1CE4E5B9u);
    cur ^= cur >> 29;
    lua_counters[(cur ^ prev_line) & (APS_FUZZ_LUA_COUNTERS - 1)]++;
    prev_line = cur >> 1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void cleanup(void)
{
    if (tmp_dir[0] != '\0')
        nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fail(const char *what, const char *msg)
{
    fprintf(stderr, "apsearch fuzz: %s: %s\n", what, msg ? msg : "(no message)");
    exit(1);
}

/* Message handler: the error as a string, with a traceback. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL)
        msg = lua_pushfstring(L, "(error object is a %s value)",
                              luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int aps_fuzz_init(const char *target)
{
    const char *env = getenv("APSEARCH_ROOT");
    const char *root = (env != NULL && env[0] != '\0') ? env : APS_FUZZ_SOURCE_ROOT;
    const char *tmp = getenv("TMPDIR");
    lua_State *L;
    int w;

    w = snprintf(tmp_dir, sizeof tmp_dir, "%s/apsearch-fuzz-XXXXXX",
                 (tmp != NULL && tmp[0] != '\0') ? tmp : "/tmp");
    if (w < 0 || (size_t)w >= sizeof tmp_dir || mkdtemp(tmp_dir) == NULL) {
        tmp_dir[0] = '\0';
        fail("cannot create a temporary directory", tmp);
    }
    atexit(cleanup);
    /* results go to stdout; libFuzzer reports on stderr */
    if (freopen("/dev/null", "w", stdout) == NULL)
        fail("cannot send stdout to /dev/null", NULL);

    L = luaL_newstate();
    if (L == NULL)
        fail("cannot create the Lua state", "not enough memory");
    luaL_openlibs(L);
    if (aps_host_setup(L, root) != LUA_OK)
        fail("setting up the Lua host", lua_tostring(L, -1));

    lua_pushcfunction(L, msghandler);
    lua_pushfstring(L, "%s/fuzz/targets.lua", root);
    if (luaL_loadfile(L, lua_tostring(L, -1)) != LUA_OK)
        fail("loading fuzz/targets.lua", lua_tostring(L, -1));
    lua_remove(L, -2);
    if (lua_pcall(L, 0, 1, -2) != LUA_OK)
        fail("running fuzz/targets.lua", lua_tostring(L, -1));
    /* targets.setup(name, tmp_dir) returns the function to run per input */
    lua_getfield(L, -1, "setup");
    lua_pushstring(L, target);
    lua_pushstring(L, tmp_dir);
    if (lua_pcall(L, 2, 1, -5) != LUA_OK)
        fail(target, lua_tostring(L, -1));
    if (!lua_isfunction(L, -1))
        fail(target, "targets.setup did not return a function");
    target_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, 0);

    lua_sethook(L, line_hook, LUA_MASKLINE, 0);
    fuzz_L = L;
    return 0;
}

int aps_fuzz_one(const uint8_t *data, size_t size)
{
    lua_State *L = fuzz_L;
    int status;

    prev_line = 0;
    lua_pushcfunction(L, msghandler);
    lua_rawgeti(L, LUA_REGISTRYINDEX, target_ref);
    lua_pushlstring(L, (const char *)data, size);
    status = lua_pcall(L, 1, 1, 1);
    if (status != LUA_OK) {
        /* the driver itself failed: out of memory, or a bug in targets.lua */
        fprintf(stderr, "apsearch fuzz: the driver raised (status %d):\n%s\n",
                status, lua_tostring(L, -1));
        abort();
    }
    if (lua_type(L, -1) == LUA_TSTRING) {
        fprintf(stderr, "apsearch fuzz: finding:\n%s\n", lua_tostring(L, -1));
        abort();
    }
    lua_settop(L, 0);
    return 0;
}
