/*
 * src/lua/lfsync.c -- the file-system calls stock Lua and LuaFileSystem
 * lack, for the atomic result sets of `apsearch run --out` (lua/apsearch/
 * outdir.lua): fsync of a file or directory by path, and the process id;
 * and realpath, for the files a policy's hf() may open (lua/apsearch/
 * policy.lua, docs/policy.md), and, for the CLI's progress line and
 * reported search times, a monotonic wall clock and isatty; and, so that
 * `--out` never replaces a path it did not make, rename without replacing
 * and rename by exchange (renameat2(2)), chmod, chown and lstat (the
 * permissions, owner and exact stamps of what it writes and replaces);
 * and the one reader of every input file, which refuses at once what is
 * not a regular file; and a file written in one call and the file system
 * flushed in one call (the thousands of launch files of a set, written,
 * then made durable together).  Registered in the `apsearch.core` module
 * (lcore.c) as fsync, getpid, realpath, monotime, isatty,
 * rename_noreplace, rename_exchange, chmod, lstat, chown, read_regular,
 * write_file, syncfs, dir_open and remove_in_dir.
 */
#define _GNU_SOURCE /* realpath; renameat2 (glibc >= 2.28) */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "lconvert.h"

/* fsync(fd), a file system that cannot sync (EINVAL, EROFS) counting as
 * done; errno kept. */
static int sync_fd(int fd)
{
    int r = fsync(fd);
    if (r != 0 && (errno == EINVAL || errno == EROFS))
        r = 0;
    return r;
}

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
    r = sync_fd(fd);
    e = errno;
    close(fd);
    errno = e;
    return luaL_fileresult(L, r == 0, path);
}

/* core.write_file(path, text) -> true | nil, message, errno.  Creates or
 * truncates the file at path (mode 0666 less the umask, as fopen; a
 * symbolic link at path is refused), writes text and closes it; not
 * synced (core.syncfs makes a set's files durable together). */
int apsl_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0)
        return luaL_fileresult(L, 0, path);
    int r = 0;
    while (len > 0 && r == 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            r = -1;
        else {
            text += n;
            len -= (size_t)n;
        }
    }
    int e = errno;
    if (close(fd) != 0 && r == 0) {
        r = -1;
        e = errno;
    }
    errno = e;
    return luaL_fileresult(L, r == 0, path);
}

/* core.syncfs(dir) -> true | nil, message, errno.  Flushes the file
 * system that holds dir (a directory's path, or a descriptor of one from
 * core.dir_open) to its device: every file written into a set is durable
 * after one call, where an fsync per file costs a journal commit each
 * (ext4: 3,000 launch files 1.0 s with an fsync each, 0.2 s written then
 * one syncfs, measured on this project's VM).  A file system that cannot
 * sync (EINVAL, EROFS) counts as done.
 *
 * syncfs reports a write-back error of the file system only when it came
 * after the descriptor was opened, or when no other descriptor has
 * reported it yet: a descriptor opened just before the call misses an
 * error that write-back met earlier and another process's syncfs already
 * saw (a loop device over a full disk: the writes "succeed", the data is
 * lost).  outdir.lua opens the set directory's descriptor when it creates
 * the set, before the first file, and syncs by that one. */
int apsl_syncfs(lua_State *L)
{
    int fd, own = 0;
    const char *name = "syncfs";
    if (lua_type(L, 1) == LUA_TNUMBER) {
        lua_Integer n = luaL_checkinteger(L, 1);
        luaL_argcheck(L, n >= 0 && n <= INT_MAX, 1, "not a file descriptor");
        fd = (int)n;
    } else {
        const char *path = luaL_checkstring(L, 1);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return luaL_fileresult(L, 0, path);
        own = 1;
        name = path;
    }
    int r = syncfs(fd);
    if (r != 0 && (errno == EINVAL || errno == EROFS))
        r = 0;
    int e = errno;
    if (own)
        close(fd);
    errno = e;
    return luaL_fileresult(L, r == 0, name);
}

/* core.dir_open(path) -> fd | nil, message, errno: a read-only descriptor
 * of the directory at path (close-on-exec; a symbolic link at path is
 * refused), for core.syncfs; closed with core.fd_close. */
int apsl_dir_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return luaL_fileresult(L, 0, path);
    lua_pushinteger(L, fd);
    return 1;
}

/* rename(2) with renameat2 flags; where the kernel or the file system has
 * no renameat2 (ENOSYS; EINVAL on e.g. NFS), or cannot move the directory
 * in place (EXDEV: overlayfs, a directory of a lower layer), returns nil,
 * message, errno and `"unsupported"` as a fourth value so the caller can
 * fall back. */
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
    if (e == ENOSYS || e == EINVAL || e == EXDEV) {
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

/* t[name] = v for the table on top of the stack. */
static void set_int(lua_State *L, const char *name, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, name);
}

/* core.lstat(path) -> {type, perm, uid, gid, dev, ino, size, mtime_ns,
 * ctime_ns} | nil, message, errno: lstat(2) (a link is described, not
 * followed).  type: "file", "directory", "link" or "other"; perm: the
 * permission bits with setuid, setgid and sticky (0 .. 07777); times in
 * nanoseconds since the epoch (as exact as the file system keeps them). */
int apsl_lstat(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat st;
    if (lstat(path, &st) != 0)
        return luaL_fileresult(L, 0, path);
    const char *type = S_ISREG(st.st_mode) ? "file"
                       : S_ISDIR(st.st_mode) ? "directory"
                       : S_ISLNK(st.st_mode) ? "link" : "other";
    lua_createtable(L, 0, 9);
    lua_pushstring(L, type);
    lua_setfield(L, -2, "type");
    set_int(L, "perm", (lua_Integer)(st.st_mode & 07777));
    set_int(L, "uid", (lua_Integer)st.st_uid);
    set_int(L, "gid", (lua_Integer)st.st_gid);
    set_int(L, "dev", (lua_Integer)st.st_dev);
    set_int(L, "ino", (lua_Integer)st.st_ino);
    set_int(L, "size", (lua_Integer)st.st_size);
    set_int(L, "mtime_ns", (lua_Integer)st.st_mtim.tv_sec * 1000000000 +
                               (lua_Integer)st.st_mtim.tv_nsec);
    set_int(L, "ctime_ns", (lua_Integer)st.st_ctim.tv_sec * 1000000000 +
                               (lua_Integer)st.st_ctim.tv_nsec);
    return 1;
}

/* core.chown(path, uid, gid) -> true | nil, message, errno: chown(2); -1
 * leaves that id as it is. */
int apsl_chown(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer uid = luaL_checkinteger(L, 2), gid = luaL_checkinteger(L, 3);
    return luaL_fileresult(L, chown(path, (uid_t)uid, (gid_t)gid) == 0, path);
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

/* The name LuaFileSystem gives a file type (lfs.attributes().mode), for
 * the message that refuses a file that is not regular. */
static const char *mode_name(mode_t m)
{
    if (S_ISDIR(m)) return "directory";
    if (S_ISFIFO(m)) return "named pipe";
    if (S_ISCHR(m)) return "char device";
    if (S_ISBLK(m)) return "block device";
    if (S_ISSOCK(m)) return "socket";
    return "other";
}

/* Reads at most max bytes of the open regular file fd into a string on
 * the stack; returns 1, or 0 (the caller resets the stack) when the file holds more
 * (it grew after fstat) or a read fails (errno set). */
static int read_bounded(lua_State *L, int fd, lua_Integer max)
{
    luaL_Buffer b;
    lua_Integer total = 0;
    luaL_buffinit(L, &b);
    for (;;) {
        char *p = luaL_prepbuffer(&b);
        ssize_t n = read(fd, p, LUAL_BUFFERSIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 0;
        if (n == 0)
            break;
        total += n;
        if (total > max) {
            errno = EFBIG;
            return 0;
        }
        luaL_addsize(&b, (size_t)n);
    }
    luaL_pushresult(&b);
    return 1;
}

/* core.read_regular(path, max_bytes) -> contents | nil, message.  Opens
 * path without blocking (O_NONBLOCK: a FIFO with no writer, a terminal)
 * and reads it only if the opened file is a regular file of at most
 * max_bytes; anything else is refused at once with "not a regular file
 * (a named pipe)" or "larger than the N MiB limit (S bytes)".  The check is
 * on the descriptor that is read (fstat), so the path cannot be swapped
 * for a FIFO between the check and the read.  The message does not repeat
 * the path: callers name the file themselves. */
int apsl_read_regular(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max = luaL_checkinteger(L, 2);
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int e, top;
    if (fd < 0 || fstat(fd, &st) != 0) {
        e = errno;
        if (fd >= 0) close(fd);
        lua_pushnil(L);
        lua_pushstring(L, strerror(e));
        return 2;
    }
    lua_pushnil(L);
    top = lua_gettop(L);
    if (!S_ISREG(st.st_mode)) {
        lua_pushfstring(L, "not a regular file (a %s)", mode_name(st.st_mode));
    } else if ((lua_Integer)st.st_size > max) {
        lua_pushfstring(L, "larger than the %d MiB limit (%I bytes)",
                        (int)(max >> 20), (lua_Integer)st.st_size);
    } else if (read_bounded(L, fd, max)) {
        close(fd);
        return 1;
    } else {
        e = errno;
        lua_settop(L, top); /* the buffer's slot */
        if (e == EFBIG)
            lua_pushfstring(L, "larger than the %d MiB limit (it grew while read)", (int)(max >> 20));
        else
            lua_pushstring(L, strerror(e));
    }
    close(fd);
    return 2;
}

/* Unlinks name (one component) in directory fd dfd; a missing one is no
 * error. */
static int unlink_in(int dfd, const char *name, int flags)
{
    return unlinkat(dfd, name, flags) == 0 || errno == ENOENT ? 0 : -1;
}

/* core.remove_in_dir(dir, dev, ino, names) -> true | nil, message: removes
 * names in order from directory dir: each a file "f" or "sub/f" (one level
 * of subdirectory), or "sub/", that subdirectory if empty (an error there
 * is left to the caller's rmdir of dir to find).  dir must be the
 * directory (dev, ino) the caller checked: it is opened once without
 * following a link (O_NOFOLLOW | O_DIRECTORY), its identity compared, and
 * every removal made relative to that descriptor (unlinkat(2)), the
 * subdirectories opened the same way.  So a directory swapped for a link
 * or another directory between the caller's checks and the removal loses
 * nothing outside it (`--out`'s clean-up of a leftover set, outdir.lua
 * remove_set: a breaker's symlink swap deleted a file of another
 * directory when the removal went by path). */
int apsl_remove_in_dir(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    lua_Integer dev = luaL_checkinteger(L, 2), ino = luaL_checkinteger(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return luaL_fileresult(L, 0, dir);
    struct stat st;
    if (fstat(dfd, &st) != 0 || (lua_Integer)st.st_dev != dev ||
        (lua_Integer)st.st_ino != ino) {
        close(dfd);
        lua_pushnil(L);
        lua_pushfstring(L, "%s: not the directory checked (changed since)", dir);
        return 2;
    }
    lua_Integer n = luaL_len(L, 4);
    int bad = 0;
    for (lua_Integer i = 1; i <= n && !bad; i++) {
        lua_geti(L, 4, i);
        const char *rel = luaL_checkstring(L, -1);
        const char *slash = strchr(rel, '/');
        if (slash == NULL) {
            bad = unlink_in(dfd, rel, 0);
        } else if (slash[1] == '\0' && slash != rel && (size_t)(slash - rel) < 256) {
            char sub[256];
            memcpy(sub, rel, (size_t)(slash - rel));
            sub[slash - rel] = '\0';
            (void)unlinkat(dfd, sub, AT_REMOVEDIR); /* a directory only */
        } else if (strchr(slash + 1, '/') == NULL && slash != rel) {
            char sub[256];
            size_t len = (size_t)(slash - rel);
            if (len >= sizeof sub) {
                bad = -1;
            } else {
                memcpy(sub, rel, len);
                sub[len] = '\0';
                int sfd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sfd < 0) {
                    bad = errno == ENOENT ? 0 : -1;
                } else {
                    bad = unlink_in(sfd, slash + 1, 0);
                    close(sfd);
                }
            }
        } else {
            bad = -1;
            errno = EINVAL;
        }
        lua_pop(L, 1);
        if (bad) {
            int e = errno;
            close(dfd);
            errno = e;
            lua_geti(L, 4, i);
            return luaL_fileresult(L, 0, lua_tostring(L, -1));
        }
    }
    close(dfd);
    lua_pushboolean(L, 1);
    return 1;
}
