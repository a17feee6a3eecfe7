/*
 * src/lua/lfsync.c -- the two file-system calls stock Lua and LuaFileSystem
 * lack, for the atomic result sets of `apsearch run --out` (lua/apsearch/
 * outdir.lua): fsync of a file or directory by path, and the process id.
 * Registered in the `apsearch.core` module (lcore.c) as fsync and getpid.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
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
