/*
 * src/lua/lfsync.c -- the two file-system calls stock Lua and LuaFileSystem
 * lack, for the atomic result sets of `apsearch run --out` (lua/apsearch/
 * outdir.lua): fsync of a file or directory by path, and the process id;
 * and realpath, for the files a policy's hf() may open (lua/apsearch/
 * policy.lua, docs/policy.md).  Registered in the `apsearch.core` module
 * (lcore.c) as fsync, getpid and realpath.
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
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
