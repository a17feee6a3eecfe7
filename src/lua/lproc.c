/*
 * src/lua/lproc.c -- the process calls stock Lua lacks, for the worker
 * processes of `apsearch run --jobs N` (lua/apsearch/parallel.lua): the
 * number of cores the process may run on, pipes, fork, reads and writes of
 * a file descriptor, poll, waitpid, kill and _exit; and the unnamed
 * temporary files a worker writes its share of candidates.csv into, whose
 * byte ranges the parent copies into the file in enumeration order.
 * Registered in the `apsearch.core` module (lcore.c) as ncpu, pipe, fork,
 * fd_read, fd_write, fd_close, poll, waitpid, kill, exit_now, fd_tmpfile,
 * fd_pread and fd_copy.
 *
 * Errors: every call but ncpu and exit_now returns nil, a message
 * ("<call>: <strerror>") and the errno on failure, as io.open does; a bad
 * argument raises.  EINTR is retried.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lconvert.h"

/* Most file descriptors one core.poll call watches (a worker each). */
#define PROC_MAX_POLL 1024

/* Largest read one core.fd_read call makes, bytes (a worker's frame is
 * read in pieces of at most this). */
#define PROC_MAX_READ (1 << 20)

/* Most bytes one fd_pread call returns, and the buffer of fd_copy's
 * fallback when the kernel cannot copy between the two files. */
#define PROC_COPY_PIECE (1 << 20)

/* Capacity asked for each pipe, bytes (Linux F_SETPIPE_SZ; its default is
 * 64 KiB and /proc/sys/fs/pipe-max-size, 1 MiB by default, the most an
 * unprivileged process gets).  A worker's output (candidates.csv rows,
 * about 0.5 MB a frame) then crosses in one write and one read instead of
 * eight of each.  Best effort: the pipe keeps its default when refused. */
#define PROC_PIPE_SIZE (1 << 20)

static int fail(lua_State *L, const char *call)
{
    int e = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", call, strerror(e));
    lua_pushinteger(L, e);
    return 3;
}

static int check_fd(lua_State *L, int arg)
{
    lua_Integer fd = luaL_checkinteger(L, arg);
    luaL_argcheck(L, fd >= 0 && fd <= INT_MAX, arg, "not a file descriptor");
    return (int)fd;
}

/* core.ncpu() -> integer >= 1: the cores this process may run on (its CPU
 * affinity mask), else the cores online (sysconf), else 1. */
int apsl_ncpu(lua_State *L)
{
    long n = 0;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    lua_pushinteger(L, n < 1 ? 1 : (lua_Integer)n);
    return 1;
}

/* core.pipe() -> read_fd, write_fd (close-on-exec) | nil, message, errno */
int apsl_pipe(lua_State *L)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0)
        return fail(L, "pipe");
#ifdef F_SETPIPE_SZ
    (void)fcntl(fd[1], F_SETPIPE_SZ, PROC_PIPE_SIZE);
#endif
    lua_pushinteger(L, fd[0]);
    lua_pushinteger(L, fd[1]);
    return 2;
}

/* core.fork() -> pid in the parent, 0 in the child | nil, message, errno.
 * On Linux the child is killed (SIGKILL) when the parent dies, so an
 * interrupted or killed run leaves no worker behind.  Flush Lua's output
 * buffers before: the child inherits them. */
int apsl_fork(lua_State *L)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return fail(L, "fork");
#ifdef __linux__
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the parent died before the prctl */
            _exit(1);
    }
#else
    (void)parent;
#endif
    lua_pushinteger(L, pid);
    return 1;
}

/* core.fd_read(fd, n) -> string of 1..n bytes, "" at end of file | nil,
 * message, errno.  n in 1..PROC_MAX_READ.  The buffer is the size of
 * what is waiting (FIONREAD) when that is less than n: a read of a pipe
 * gets what is there, and allocating n bytes each time cost more than the
 * read (a 1 MiB buffer is a fresh mmap). */
int apsl_fd_read(lua_State *L)
{
    int fd = check_fd(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 1 && n <= PROC_MAX_READ, 2, "out of range");
    int waiting = 0;
    if (ioctl(fd, FIONREAD, &waiting) == 0 && waiting > 0 && waiting < n)
        n = waiting;
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, (size_t)n);
    ssize_t r;
    do {
        r = read(fd, p, (size_t)n);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return fail(L, "read");
    luaL_pushresultsize(&b, (size_t)r);
    return 1;
}

/* core.fd_write(fd, s) -> true | nil, message, errno: writes all of s. */
int apsl_fd_write(lua_State *L)
{
    int fd = check_fd(L, 1);
    size_t len;
    const char *s = luaL_checklstring(L, 2, &len);
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return fail(L, "write");
        s += w;
        len -= (size_t)w;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* core.fd_close(fd) -> true | nil, message, errno */
int apsl_fd_close(lua_State *L)
{
    if (close(check_fd(L, 1)) != 0)
        return fail(L, "close");
    lua_pushboolean(L, 1);
    return 1;
}

/* core.poll(fds, timeout_ms) -> array of the fds of `fds` (an array of at
 * most PROC_MAX_POLL) that can be read or are at end of file (possibly
 * empty: the timeout passed; -1 waits for ever) | nil, message, errno. */
int apsl_poll(lua_State *L)
{
    struct pollfd p[PROC_MAX_POLL];
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer timeout = luaL_checkinteger(L, 2);
    luaL_argcheck(L, timeout >= -1 && timeout <= INT_MAX, 2, "out of range");
    lua_Integer n = luaL_len(L, 1);
    luaL_argcheck(L, n >= 0 && n <= PROC_MAX_POLL, 1, "too many descriptors");
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        lua_Integer fd = luaL_checkinteger(L, -1);
        luaL_argcheck(L, fd >= 0 && fd <= INT_MAX, 1, "not a file descriptor");
        lua_pop(L, 1);
        p[i].fd = (int)fd;
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    int r;
    do {
        r = poll(p, (nfds_t)n, (int)timeout);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return fail(L, "poll");
    lua_createtable(L, r, 0);
    int k = 0;
    for (lua_Integer i = 0; i < n; i++) {
        if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
            lua_pushinteger(L, p[i].fd);
            lua_rawseti(L, -2, ++k);
        }
    }
    return 1;
}

/* core.waitpid(pid) -> "exit", code | "signal", signal number | nil,
 * message, errno: waits for the child to end. */
int apsl_waitpid(lua_State *L)
{
    lua_Integer pid = luaL_checkinteger(L, 1);
    luaL_argcheck(L, pid > 0 && pid <= INT_MAX, 1, "not a process id");
    int st;
    pid_t r;
    do {
        r = waitpid((pid_t)pid, &st, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return fail(L, "waitpid");
    if (WIFSIGNALED(st)) {
        lua_pushliteral(L, "signal");
        lua_pushinteger(L, WTERMSIG(st));
    } else {
        lua_pushliteral(L, "exit");
        lua_pushinteger(L, WEXITSTATUS(st));
    }
    return 2;
}

/* core.kill(pid, sig) -> true | nil, message, errno (sig: a number, e.g.
 * 9 for SIGKILL) */
int apsl_kill(lua_State *L)
{
    lua_Integer pid = luaL_checkinteger(L, 1);
    lua_Integer sig = luaL_checkinteger(L, 2);
    luaL_argcheck(L, pid > 0 && pid <= INT_MAX, 1, "not a process id");
    luaL_argcheck(L, sig >= 0 && sig < 65, 2, "not a signal number");
    if (kill((pid_t)pid, (int)sig) != 0)
        return fail(L, "kill");
    lua_pushboolean(L, 1);
    return 1;
}

/* core.exit_now(code): ends the process at once (_exit: no Lua state
 * closed, no stdio buffer flushed -- a forked worker's way out). */
int apsl_exit_now(lua_State *L)
{
    lua_Integer code = luaL_optinteger(L, 1, 0);
    _exit((int)(code & 0xff));
    return 0;
}

/* core.fd_tmpfile(dir) -> fd | nil, message, errno: a new, empty file in
 * directory dir that has no name (O_TMPFILE; where the file system lacks
 * it, a mkstemp file removed at once), open for reading and writing,
 * close-on-exec.  Nothing is left in dir whatever happens to the process;
 * the space goes when the last descriptor is closed. */
int apsl_fd_tmpfile(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, dir);
        luaL_addstring(&b, "/.apsearch-tmp-XXXXXX");
        luaL_pushresult(&b);
        char *path = strdup(lua_tostring(L, -1));
        if (!path)
            return luaL_error(L, "fd_tmpfile: out of memory");
        fd = mkostemp(path, O_CLOEXEC);
        int saved = errno;
        if (fd >= 0)
            unlink(path);
        free(path);
        errno = saved;
        if (fd < 0)
            return fail(L, "tmpfile");
    }
    lua_pushinteger(L, fd);
    return 1;
}

/* core.fd_pread(fd, offset, n) -> string of n bytes | nil, message,
 * errno: bytes offset..offset+n-1 of a file (fewer at its end).  n in
 * 0..PROC_COPY_PIECE. */
int apsl_fd_pread(lua_State *L)
{
    int fd = check_fd(L, 1);
    lua_Integer off = luaL_checkinteger(L, 2), n = luaL_checkinteger(L, 3);
    luaL_argcheck(L, off >= 0, 2, "out of range");
    luaL_argcheck(L, n >= 0 && n <= PROC_COPY_PIECE, 3, "out of range");
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, (size_t)n + 1);
    size_t have = 0;
    while (have < (size_t)n) {
        ssize_t r = pread(fd, p + have, (size_t)n - have, (off_t)(off + (lua_Integer)have));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return fail(L, "pread");
        if (r == 0)
            break;
        have += (size_t)r;
    }
    luaL_pushresultsize(&b, have);
    return 1;
}

/* copies len bytes of in from *off to out's position by read and write;
 * 0 or -1 (errno set) */
static int copy_by_hand(int in, off_t *off, int out, size_t len)
{
    char *buf = malloc(PROC_COPY_PIECE);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    while (len > 0 && rc == 0) {
        size_t want = len < PROC_COPY_PIECE ? len : PROC_COPY_PIECE;
        ssize_t r = pread(in, buf, want, *off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO; /* the range is past the file's end */
            rc = -1;
            break;
        }
        for (ssize_t done = 0; done < r && rc == 0;) {
            ssize_t w = write(out, buf + done, (size_t)(r - done));
            if (w < 0 && errno != EINTR)
                rc = -1;
            else if (w > 0)
                done += w;
        }
        *off += r;
        len -= (size_t)r;
    }
    free(buf);
    return rc;
}

/* core.fd_copy(in_fd, offset, n, file) -> true | nil, message, errno:
 * appends bytes offset..offset+n-1 of in_fd at the position of `file` (a
 * Lua file handle open for writing, flushed first), by copy_file_range
 * (the kernel copies, no byte passes through the process) or, where the
 * two files cannot be copied between so, by read and write.  The copied
 * range of in_fd is then freed on disk (a hole punched, best effort): a
 * worker's temporary file does not hold what candidates.csv already does. */
int apsl_fd_copy(lua_State *L)
{
    int in = check_fd(L, 1);
    lua_Integer off = luaL_checkinteger(L, 2), n = luaL_checkinteger(L, 3);
    luaL_argcheck(L, off >= 0, 2, "out of range");
    luaL_argcheck(L, n >= 0, 3, "out of range");
    luaL_Stream *ls = (luaL_Stream *)luaL_checkudata(L, 4, LUA_FILEHANDLE);
    luaL_argcheck(L, ls->closef != NULL, 4, "closed file");
    if (fflush(ls->f) != 0)
        return fail(L, "fflush");
    int out = fileno(ls->f);
    off_t at = (off_t)off;
    size_t left = (size_t)n;
    while (left > 0) {
        ssize_t c = copy_file_range(in, &at, out, NULL, left, 0);
        if (c < 0 && errno == EINTR)
            continue;
        if (c < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
            if (copy_by_hand(in, &at, out, left) != 0)
                return fail(L, "copy");
            left = 0;
            break;
        }
        if (c <= 0) {
            if (c == 0)
                errno = EIO; /* the range is past the file's end */
            return fail(L, "copy_file_range");
        }
        left -= (size_t)c;
    }
#ifdef FALLOC_FL_PUNCH_HOLE
    if (n > 0)
        (void)fallocate(in, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)n);
#endif
    lua_pushboolean(L, 1);
    return 1;
}
