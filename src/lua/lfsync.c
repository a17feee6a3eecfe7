/*
 * src/lua/lfsync.c -- the two file-system calls stock Lua and LuaFileSystem
 * lack, for the atomic result sets of `apsearch run --out` (lua/apsearch/
 * outdir.lua): fsync of a file or directory by path, and the process id;
 * and realpath, for the files a policy's hf() may open (lua/apsearch/
 * policy.lua, docs/policy.md), and, for the CLI's progress line and
 * reported search times, a monotonic wall clock and isatty.  Registered
 * in the `apsearch.core` module (lcore.c) as fsync, getpid, realpath,
 * monotime and isatty.
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "lconvert.h"

/* core.fsync(path) -> true | nil, message, errno.  Opens path read-only
 * (a file or a directory) and fsyncs it.  A file system that cannot sync
 * (EINVAL, EROFS) counts as done. */
int apsl_fsync(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int r, e;
    if (fd < 0)
        return luaL_fileresult(L, 0, path);
    r = fsync(fd);
    e = errno;
    close(fd);
    if (r != 0 && (e == EINVAL || e == EROFS))
        r = 0;
    errno = e;
    return luaL_fileresult(L, r == 0, path);
}

/* core.getpid() -> integer */
int apsl_getpid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getpid());
    return 1;
}

/* core.realpath(path) -> absolute path with every symbolic link, `.` and
 * `..` resolved | nil, message, errno (the path does not exist, ...). */
int apsl_realpath(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char *real = realpath(path, NULL);
    if (real == NULL)
        return luaL_fileresult(L, 0, path);
    lua_pushstring(L, real);
    free(real);
    return 1;
}

/* core.monotime() -> seconds (float) of CLOCK_MONOTONIC: wall time, for
 * elapsed times (os.clock is the process's CPU time). */
int apsl_monotime(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* core.isatty(fd) -> boolean: fd (0 stdin, 1 stdout, 2 stderr) is a
 * terminal. */
int apsl_isatty(lua_State *L)
{
    lua_Integer fd = luaL_checkinteger(L, 1);
    lua_pushboolean(L, fd >= 0 && fd <= 1024 && isatty((int)fd) == 1);
    return 1;
}
