/*
 * src/lua/lfsync.c -- the two file-system calls stock Lua and LuaFileSystem
 * lack, for the atomic result sets of `apsearch run --out` (lua/apsearch/
 * outdir.lua): fsync of a file or directory by path, and the process id;
 * and realpath, for the files a policy's hf() may open (lua/apsearch/
 * policy.lua, docs/policy.md), and, for the CLI's progress line and
 * reported search times, a monotonic wall clock and isatty; and, so that
 * `--out` never replaces a path it did not make, rename without replacing
 * and rename by exchange (renameat2(2)) and chmod.  Registered in the
 * `apsearch.core` module (lcore.c) as fsync, getpid, realpath, monotime,
 * isatty, rename_noreplace, rename_exchange and chmod.
 */
#define _GNU_SOURCE /* realpath; renameat2 (glibc >= 2.28) */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
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

/* rename(2) with renameat2 flags; where the kernel or the file system has
 * no renameat2 (ENOSYS; EINVAL on e.g. NFS), returns nil, message, errno
 * and `"unsupported"` as a fourth value so the caller can fall back. */
static int rename_flags(lua_State *L, unsigned flags)
{
    const char *from = luaL_checkstring(L, 1);
    const char *to = luaL_checkstring(L, 2);
    int r = renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
    int e = errno;
    if (r == 0) {
        lua_pushboolean(L, 1);
        return 1;
    }
    luaL_fileresult(L, 0, to);
    if (e == ENOSYS || e == EINVAL) {
        lua_pushliteral(L, "unsupported");
        return 4;
    }
    return 3;
}

/* core.rename_noreplace(from, to) -> true | nil, message, errno[,
 * "unsupported"]: renames from to to only when to does not exist
 * (RENAME_NOREPLACE; EEXIST otherwise), atomically. */
int apsl_rename_noreplace(lua_State *L) { return rename_flags(L, RENAME_NOREPLACE); }

/* core.rename_exchange(a, b) -> true | nil, message, errno[,
 * "unsupported"]: swaps the two paths atomically (RENAME_EXCHANGE; both
 * must exist, ENOENT otherwise); neither is ever removed. */
int apsl_rename_exchange(lua_State *L) { return rename_flags(L, RENAME_EXCHANGE); }

/* core.chmod(path, mode) -> true | nil, message, errno: mode is the
 * permission bits (0 .. 07777), e.g. 448 (0700). */
int apsl_chmod(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer mode = luaL_checkinteger(L, 2);
    luaL_argcheck(L, mode >= 0 && mode <= 07777, 2, "permission bits 0 .. 07777");
    return luaL_fileresult(L, chmod(path, (mode_t)mode) == 0, path);
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
