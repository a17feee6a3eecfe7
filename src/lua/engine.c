/*
 * src/lua/engine.c -- libapsearch: the engine API of apsearch/engine.h.
 *
 * An engine is a lua_State running lua/apsearch/engine.lua (the session
 * object, kept in the registry).  Every call goes through call(): a light
 * C function run by lua_pcall, so nothing raises outside a protected call
 * (no panic, no abort), and no C memory is allocated while Lua may
 * longjmp: results are copied out after lua_pcall has returned.
 *
 * Error classes: a failed sandboxed call (apsl_sandbox_failures grew) is
 * APS_ENGINE_ESCRIPT; LUA_ERRMEM is ENOMEM; a message starting with
 * "NotImplemented" is ENOTIMPL; anything else raised by the Lua side is
 * bad input, EINVAL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "apsearch/engine.h"
#include "host.h"
#include "lsandbox.h"

#ifndef APS_VERSION
#define APS_VERSION "0.1.0"
#endif

struct aps_engine {
    lua_State *L;
    int ref;          /* registry reference of the Lua session object */
    char *errmsg;     /* message of the last failed call; NULL = "" */
    char *json;       /* last result as JSON */
    size_t json_len;
    char *rendered;   /* last aps_engine_render text */
    int has_policy;
    int top_k;
    long long feasible;
    double best_step;
};

static const char *const status_names[] = {"OK", "EINVAL", "ENOTIMPL",
                                           "ERANGE"};

const char *aps_engine_status_name(aps_engine_status s)
{
    if ((int)s >= 0 && (int)s < 4)
        return status_names[s];
    switch (s) {
    case APS_ENGINE_ESCRIPT: return "ESCRIPT";
    case APS_ENGINE_ENOMEM: return "ENOMEM";
    case APS_ENGINE_EMISUSE: return "EMISUSE";
    default: return "UNKNOWN";
    }
}

const char *aps_engine_version(void)
{
    return APS_VERSION;
}

void aps_engine_options_init(aps_engine_options *o)
{
    if (o == NULL)
        return;
    memset(o, 0, sizeof *o);
}

/* ------------------------------------------------------------ messages */

static char *dup_string(const char *s, size_t len)
{
    char *p = (char *)malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static const char oom_message[] = "not enough memory";

static void set_error(aps_engine *e, const char *msg)
{
    free(e->errmsg);
    e->errmsg = NULL;
    if (msg == NULL)
        msg = "(no error message)";
    e->errmsg = dup_string(msg, strlen(msg));
}

static void clear_error(aps_engine *e)
{
    free(e->errmsg);
    e->errmsg = NULL;
}

static void write_err(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", msg);
}

/* Message handler: the error object as a string (no traceback: sandbox
 * reports carry their own, and bad input is one line). */
static int msgh(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg != NULL)
        return 1;
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
        return 1;
    if (lua_type(L, 1) == LUA_TTABLE &&
        lua_getfield(L, 1, "message") == LUA_TSTRING)
        return 1;
    lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    return 1;
}

/* ------------------------------------------------------------ protected */

typedef struct {
    const char *method; /* method of the session object */
    const char *arg;    /* its string argument, or NULL */
    const char *arg2;
    int nargs;          /* 0, 1 or 2 */
    int nresults;
} method_call;

/* Protected: session[method](session, args...).  1: the call (light
 * userdata), 2: the session's registry reference. */
static int p_method(lua_State *L)
{
    const method_call *c = (const method_call *)lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, (lua_Integer)lua_tointeger(L, 2));
    lua_getfield(L, -1, c->method);
    lua_insert(L, -2);
    if (c->nargs >= 1)
        lua_pushstring(L, c->arg);
    if (c->nargs >= 2)
        lua_pushstring(L, c->arg2);
    lua_call(L, 1 + c->nargs, c->nresults);
    return c->nresults;
}

/* Runs a method in protected mode.  On success the results are on the
 * stack from *base + 1 up (the caller pops them with lua_settop(L,
 * *base)); on failure the stack is as before and the error is recorded. */
static aps_engine_status call(aps_engine *e, method_call *c, int *base)
{
    lua_State *L = e->L;
    lua_Integer failures = apsl_sandbox_failures(L);
    int top = lua_gettop(L), status;
    const char *msg;
    aps_engine_status rc;

    lua_pushcfunction(L, msgh);
    lua_pushcfunction(L, p_method);
    lua_pushlightuserdata(L, c);
    lua_pushinteger(L, e->ref);
    status = lua_pcall(L, 2, c->nresults, top + 1);
    if (status == LUA_OK) {
        lua_remove(L, top + 1); /* the handler */
        *base = top;
        clear_error(e);
        return APS_ENGINE_OK;
    }
    msg = lua_tostring(L, -1);
    if (status == LUA_ERRMEM)
        rc = APS_ENGINE_ENOMEM;
    else if (apsl_sandbox_failures(L) != failures)
        rc = APS_ENGINE_ESCRIPT;
    else if (msg != NULL && strncmp(msg, "NotImplemented", 14) == 0)
        rc = APS_ENGINE_ENOTIMPL;
    else
        rc = APS_ENGINE_EINVAL;
    set_error(e, status == LUA_ERRMEM ? oom_message : msg);
    lua_settop(L, top);
    return rc;
}

static aps_engine_status misuse(aps_engine *e, const char *msg)
{
    if (e != NULL)
        set_error(e, msg);
    return APS_ENGINE_EMISUSE;
}

/* ---------------------------------------------------------------- open */

typedef struct {
    const char *root;
    const aps_engine_options *opts;
    int ref;
} open_args;

/* Sets field k of the table on top to a time limit of the options: 0
 * leaves the default, a negative value means unlimited (0 for the
 * sandbox); NaN leaves the default too. */
static void push_seconds(lua_State *L, double v, const char *k)
{
    if (v == 0 || v != v)
        return;
    lua_pushnumber(L, v < 0 ? 0 : v);
    lua_setfield(L, -2, k);
}

static int p_open(lua_State *L)
{
    open_args *a = (open_args *)lua_touserdata(L, 1);
    const aps_engine_options *o = a->opts;

    luaL_checkversion(L);
    luaL_openlibs(L);
    if (aps_host_setup(L, a->root) != LUA_OK)
        return lua_error(L);
    if (!aps_host_has_sources(a->root))
        return luaL_error(L, "cannot find the apsearch Lua sources: %s"
                             "/lua/apsearch is missing (set "
                             "aps_engine_options.root or APSEARCH_ROOT to the "
                             "directory that holds lua/apsearch)", a->root);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "apsearch.engine");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "new");
    lua_createtable(L, 0, 3);
    if (o != NULL) {
        lua_pushboolean(L, o->unsafe != 0);
        lua_setfield(L, -2, "unsafe");
        if (o->sandbox_instructions != 0) {
            lua_pushinteger(L, o->sandbox_instructions < 0
                                   ? 0
                                   : (lua_Integer)o->sandbox_instructions);
            lua_setfield(L, -2, "instructions");
        }
        if (o->sandbox_memory_mib != 0) {
            lua_pushinteger(L, o->sandbox_memory_mib < 0
                                   ? 0
                                   : (lua_Integer)o->sandbox_memory_mib);
            lua_setfield(L, -2, "memory_mib");
        }
        push_seconds(L, o->sandbox_seconds, "seconds");
        push_seconds(L, o->sandbox_cpu_seconds, "cpu_seconds");
    }
    lua_call(L, 1, 1);
    a->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

aps_engine_status aps_engine_open(aps_engine **out,
                                  const aps_engine_options *opts, char *err,
                                  size_t errlen)
{
    char root[APS_HOST_PATH_MAX];
    aps_engine *e;
    open_args a;
    int status;

    if (out == NULL) {
        write_err(err, errlen, "aps_engine_open: out is NULL");
        return APS_ENGINE_EMISUSE;
    }
    *out = NULL;
    if (opts != NULL && opts->root != NULL) {
        if (strlen(opts->root) + 1 > sizeof root) {
            write_err(err, errlen, "aps_engine_open: root path too long");
            return APS_ENGINE_EINVAL;
        }
        memcpy(root, opts->root, strlen(opts->root) + 1);
    } else if (aps_host_find_root_from(root, sizeof root,
                                       (const void *)aps_engine_open) == NULL) {
        write_err(err, errlen, "aps_engine_open: APSEARCH_ROOT or the install "
                               "path is too long");
        return APS_ENGINE_EINVAL;
    }
    e = (aps_engine *)calloc(1, sizeof *e);
    if (e == NULL) {
        write_err(err, errlen, oom_message);
        return APS_ENGINE_ENOMEM;
    }
    e->best_step = -1.0;
    e->L = luaL_newstate();
    if (e->L == NULL) {
        free(e);
        write_err(err, errlen, oom_message);
        return APS_ENGINE_ENOMEM;
    }
    a.root = root;
    a.opts = opts;
    a.ref = LUA_NOREF;
    lua_pushcfunction(e->L, msgh);
    lua_pushcfunction(e->L, p_open);
    lua_pushlightuserdata(e->L, &a);
    status = lua_pcall(e->L, 1, 0, 1);
    if (status != LUA_OK) {
        aps_engine_status rc =
            status == LUA_ERRMEM ? APS_ENGINE_ENOMEM : APS_ENGINE_EINVAL;
        write_err(err, errlen,
                  status == LUA_ERRMEM ? oom_message : lua_tostring(e->L, -1));
        lua_close(e->L);
        free(e);
        return rc;
    }
    lua_settop(e->L, 0);
    e->ref = a.ref;
    *out = e;
    write_err(err, errlen, "");
    return APS_ENGINE_OK;
}

void aps_engine_close(aps_engine *e)
{
    if (e == NULL)
        return;
    if (e->L != NULL)
        lua_close(e->L);
    free(e->errmsg);
    free(e->json);
    free(e->rendered);
    free(e);
}

const char *aps_engine_errmsg(const aps_engine *e)
{
    if (e == NULL)
        return "aps_engine_errmsg: engine is NULL";
    return e->errmsg != NULL ? e->errmsg : "";
}

/* -------------------------------------------------------------- methods */

static aps_engine_status simple(aps_engine *e, const char *method,
                                const char *arg, const char *what)
{
    method_call c = {method, arg, NULL, arg != NULL ? 1 : 0, 0};
    int base;
    aps_engine_status rc;
    if (e == NULL)
        return APS_ENGINE_EMISUSE;
    if (what != NULL && arg == NULL) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s is NULL", what);
        return misuse(e, msg);
    }
    rc = call(e, &c, &base);
    if (rc == APS_ENGINE_OK)
        lua_settop(e->L, base);
    return rc;
}

aps_engine_status aps_engine_load_policy_file(aps_engine *e, const char *path)
{
    aps_engine_status rc =
        simple(e, "load_file", path, "aps_engine_load_policy_file: path");
    if (rc == APS_ENGINE_OK)
        e->has_policy = 1;
    return rc;
}

aps_engine_status aps_engine_load_policy_string(aps_engine *e,
                                                const char *text,
                                                const char *name)
{
    method_call c = {"load_string", text, name != NULL ? name : "policy", 2, 0};
    int base;
    aps_engine_status rc;
    if (e == NULL)
        return APS_ENGINE_EMISUSE;
    if (text == NULL)
        return misuse(e, "aps_engine_load_policy_string: text is NULL");
    rc = call(e, &c, &base);
    if (rc == APS_ENGINE_OK) {
        lua_settop(e->L, base);
        e->has_policy = 1;
    }
    return rc;
}

aps_engine_status aps_engine_set(aps_engine *e, const char *assignment)
{
    return simple(e, "set", assignment, "aps_engine_set: assignment");
}

aps_engine_status aps_engine_fix(aps_engine *e, const char *assignment)
{
    return simple(e, "fix", assignment, "aps_engine_fix: assignment");
}

aps_engine_status aps_engine_add_rule_file(aps_engine *e, const char *path)
{
    return simple(e, "add_rules", path, "aps_engine_add_rule_file: path");
}

aps_engine_status aps_engine_set_objective(aps_engine *e,
                                           const char *name_or_path)
{
    return simple(e, "set_objective", name_or_path,
                  "aps_engine_set_objective: name_or_path");
}

aps_engine_status aps_engine_clear_overrides(aps_engine *e)
{
    return simple(e, "clear_overrides", NULL, NULL);
}

aps_engine_status aps_engine_run(aps_engine *e)
{
    method_call c = {"run", NULL, NULL, 0, 4};
    int base;
    aps_engine_status rc;
    const char *json;
    size_t len = 0;
    char *copy;
    if (e == NULL)
        return APS_ENGINE_EMISUSE;
    if (!e->has_policy)
        return misuse(e, "aps_engine_run: no policy loaded "
                         "(aps_engine_load_policy_file or _string first)");
    rc = call(e, &c, &base);
    if (rc != APS_ENGINE_OK)
        return rc;
    json = lua_tolstring(e->L, base + 1, &len);
    copy = json != NULL ? dup_string(json, len) : NULL;
    if (copy == NULL) {
        lua_settop(e->L, base);
        set_error(e, oom_message);
        return APS_ENGINE_ENOMEM;
    }
    free(e->json);
    e->json = copy;
    e->json_len = len;
    e->top_k = (int)lua_tointeger(e->L, base + 2);
    e->feasible = (long long)lua_tointeger(e->L, base + 3);
    e->best_step = (double)lua_tonumber(e->L, base + 4);
    lua_settop(e->L, base);
    return APS_ENGINE_OK;
}

aps_engine_status aps_engine_render(aps_engine *e, const char *format,
                                    const char **out)
{
    method_call c = {"render", format, NULL, 1, 1};
    int base;
    aps_engine_status rc;
    const char *text;
    size_t len = 0;
    char *copy;
    if (out != NULL)
        *out = NULL;
    if (e == NULL)
        return APS_ENGINE_EMISUSE;
    if (format == NULL)
        return misuse(e, "aps_engine_render: format is NULL");
    if (e->json == NULL)
        return misuse(e, "aps_engine_render: no result yet (aps_engine_run "
                         "first)");
    rc = call(e, &c, &base);
    if (rc != APS_ENGINE_OK)
        return rc;
    text = lua_tolstring(e->L, base + 1, &len);
    copy = text != NULL ? dup_string(text, len) : NULL;
    lua_settop(e->L, base);
    if (copy == NULL) {
        set_error(e, oom_message);
        return APS_ENGINE_ENOMEM;
    }
    free(e->rendered);
    e->rendered = copy;
    if (out != NULL)
        *out = copy;
    return APS_ENGINE_OK;
}

const char *aps_engine_result_json(const aps_engine *e, size_t *len)
{
    if (len != NULL)
        *len = e != NULL && e->json != NULL ? e->json_len : 0;
    return e != NULL ? e->json : NULL;
}

int aps_engine_top_k_count(const aps_engine *e)
{
    return e != NULL && e->json != NULL ? e->top_k : 0;
}

long long aps_engine_feasible_count(const aps_engine *e)
{
    return e != NULL && e->json != NULL ? e->feasible : 0;
}

double aps_engine_best_step_time(const aps_engine *e)
{
    return e != NULL && e->json != NULL && e->top_k > 0 ? e->best_step : -1.0;
}
