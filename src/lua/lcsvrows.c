/*
 * src/lua/lcsvrows.c -- the row buffer of candidates.csv (`apsearch run
 * --out DIR --candidates all|feasible`, lua/apsearch/format/csv.lua).
 *
 * A search hands every candidate to the writer as it is decided: millions
 * of rows.  Each row is `index,head,estimate,cell_1,...,cell_n`; the text
 * of a strategy cell is made once by a Lua function (the single source of
 * the cell's spelling, format/csv.lua) and remembered per field under the
 * values it depends on: the field's own value and the values of the fields
 * its spelling also reads (`deps`).  Strings, tables and other objects are
 * remembered by identity and kept alive by the writer (an anchor table),
 * so an address always names the object it was remembered for.  Rows are
 * appended to one C buffer that the caller takes in pieces.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lconvert.h"
#include "ltextbuf.h"

#define CSVROWS_MT "apsearch.csv_rows"
#define MAX_DEPS 3 /* fields a cell's spelling reads besides its own */
#define KEYS (MAX_DEPS + 1)

typedef struct {                /* one remembered cell */
    uint64_t val[KEYS];         /* payload: integer, float bits, address */
    unsigned char type[KEYS];   /* LUA_T* of each key value (+1: used slot) */
    char *text;
    size_t len;
} cell_entry;

typedef struct {                /* the cells of one field */
    const char *name;
    const char *deps[MAX_DEPS];
    int key, dkey[MAX_DEPS];    /* the names' indices in uservalue 3 */
    int ndeps;
    cell_entry *slot;
    size_t cap, used;           /* cap: a power of two */
    cell_entry last;            /* the key of the cell of the row before
                                   (type[0] 0: none) and its text: rows come
                                   in enumeration order, where most fields
                                   keep their values from row to row */
} field_cache;

typedef struct {
    int n;
    field_cache *f;
    apsl_textbuf out;           /* the rows appended since the last take */
    lua_Integer rows;           /* rows in out */
} csv_rows;

/* Appends len bytes to the row buffer (raises on out of memory). */
static inline void put(lua_State *L, csv_rows *w, const char *s, size_t len)
{
    apsl_textbuf_put(L, &w->out, s, len, "csv_rows");
}

/* The key of the Lua value at idx: its type and payload (an object's
 * address; new_cell anchors the object). */
static void value_key(lua_State *L, int idx, unsigned char *type, uint64_t *val)
{
    int t = lua_type(L, idx);
    *type = (unsigned char)(t + 2); /* LUA_TNONE is -1; 0 marks a free slot */
    *val = 0;
    if (t == LUA_TBOOLEAN) {
        *val = (uint64_t)lua_toboolean(L, idx);
    } else if (t == LUA_TNUMBER && lua_isinteger(L, idx)) {
        *val = (uint64_t)lua_tointeger(L, idx);
    } else if (t == LUA_TNUMBER) {
        double d = (double)lua_tonumber(L, idx);
        *type = 0xff;
        memcpy(val, &d, sizeof d);
    } else if (t != LUA_TNIL && t != LUA_TNONE) {
        *val = (uint64_t)(uintptr_t)lua_topointer(L, idx);
    }
}

static uint64_t key_hash(const cell_entry *k, int nk)
{
    uint64_t h = 1469598103934665603u;
    for (int i = 0; i < nk; i++)
        h = (h ^ (k->val[i] + k->type[i])) * 1099511628211u;
    return h ^ (h >> 29);
}

static int key_equal(const cell_entry *a, const cell_entry *b, int nk)
{
    for (int i = 0; i < nk; i++)
        if (a->type[i] != b->type[i] || a->val[i] != b->val[i])
            return 0;
    return 1;
}

/* The slot of key k in f: its entry, or the free slot where it goes. */
static cell_entry *find_slot(field_cache *f, const cell_entry *k, int nk)
{
    size_t i = (size_t)key_hash(k, nk) & (f->cap - 1);
    while (f->slot[i].type[0] != 0 && !key_equal(&f->slot[i], k, nk))
        i = (i + 1) & (f->cap - 1);
    return &f->slot[i];
}

/* Doubles f's table (64 slots at first); keeps it at most half full. */
static void grow(lua_State *L, field_cache *f, int nk)
{
    size_t cap = f->cap ? 2 * f->cap : 64;
    cell_entry *old = f->slot, *s = calloc(cap, sizeof *s);
    size_t oldcap = f->cap;
    if (!s)
        luaL_error(L, "csv_rows: out of memory");
    f->slot = s;
    f->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].type[0] != 0)
            *find_slot(f, &old[i], nk) = old[i];
    free(old);
}

/* The remembered text of field i's cell for the values at the top of the
 * stack (nk of them, from base): made by the writer's Lua function on a
 * miss (`cell(cand, i) -> string`), its key values anchored. */
static const cell_entry *cell_of(lua_State *L, field_cache *f, int i, int base, int cand)
{
    int nk = 1 + f->ndeps;
    cell_entry k = {0};
    for (int j = 0; j < nk; j++)
        value_key(L, base + j, &k.type[j], &k.val[j]);
    if (f->last.type[0] != 0 && key_equal(&f->last, &k, nk))
        return &f->last;
    if (f->cap == 0)
        grow(L, f, nk);
    cell_entry *e = find_slot(f, &k, nk);
    if (e->type[0] != 0) {
        f->last = *e; /* (its text is the table's: freed with it, not here) */
        return e;
    }
    lua_getiuservalue(L, 1, 2);
    lua_pushvalue(L, cand);
    lua_pushinteger(L, i + 1);
    lua_call(L, 2, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "csv_rows: the cell of field %s is a %s, not a string", f->name,
                   luaL_typename(L, -1));
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    k.text = malloc(len + 1);
    if (!k.text)
        luaL_error(L, "csv_rows: out of memory");
    memcpy(k.text, s, len + 1);
    k.len = len;
    lua_pop(L, 1);
    lua_getiuservalue(L, 1, 1); /* the anchor table */
    for (int j = 0; j < nk; j++)
        if (k.type[j] != LUA_TNIL + 2 && k.type[j] != LUA_TBOOLEAN + 2
            && k.type[j] != LUA_TNUMBER + 2 && k.type[j] != 0xff) {
            lua_pushvalue(L, base + j);
            lua_pushboolean(L, 1);
            lua_rawset(L, -3);
        }
    lua_pop(L, 1);
    if (2 * (f->used + 1) > f->cap)
        grow(L, f, nk);
    e = find_slot(f, &k, nk);
    *e = k;
    f->used++;
    f->last = k;
    return e;
}

static csv_rows *check_rows(lua_State *L)
{
    return (csv_rows *)luaL_checkudata(L, 1, CSVROWS_MT);
}

/* The estimate's cells: "step,mem,mem_gib," (%.9g s, %.0f bytes, %.3f GiB),
 * or ",,," when st is nil (a candidate filtered before its estimate). */
static void put_estimate(lua_State *L, csv_rows *w, int st, int mem)
{
    char b[128];
    if (lua_isnoneornil(L, st)) {
        put(L, w, ",,,", 3);
        return;
    }
    double s = (double)luaL_checknumber(L, st), m = (double)luaL_checknumber(L, mem);
    int n = snprintf(b, sizeof b, "%.9g,%.0f,%.3f,", s, m, m / 1073741824.0);
    if (n < 0 || (size_t)n >= sizeof b)
        luaL_error(L, "csv_rows: estimate out of range");
    put(L, w, b, (size_t)n);
}

/* w:row(index, head, step_time, mem_peak, cand): appends the row
 * `index,head` .. the estimate's three cells (empty when step_time is nil)
 * .. the n strategy cells of cand, and a newline.  index: integer; head:
 * string (the status, phase and reason cells, each followed by a comma);
 * step_time in s, mem_peak in bytes (numbers or nil); cand: the candidate
 * table.  Raises when a cell function raises or returns a non-string. */
static int rows_row(lua_State *L)
{
    csv_rows *w = check_rows(L);
    lua_Integer index = luaL_checkinteger(L, 2);
    size_t hlen;
    const char *head = luaL_checklstring(L, 3, &hlen);
    luaL_checktype(L, 6, LUA_TTABLE);
    char b[32];
    int n = snprintf(b, sizeof b, LUA_INTEGER_FMT ",", (LUAI_UACINT)index);
    put(L, w, b, (size_t)n);
    put(L, w, head, hlen);
    put_estimate(L, w, 4, 5);
    lua_settop(L, 6);
    lua_getiuservalue(L, 1, 3); /* the names, 7 */
    for (int i = 0; i < w->n; i++) {
        field_cache *f = &w->f[i];
        lua_rawgeti(L, 7, f->key);
        lua_rawget(L, 6);
        for (int j = 0; j < f->ndeps; j++) {
            lua_rawgeti(L, 7, f->dkey[j]);
            lua_rawget(L, 6);
        }
        const cell_entry *e = cell_of(L, f, i, 8, 6);
        if (i > 0)
            put(L, w, ",", 1);
        put(L, w, e->text, e->len);
        lua_settop(L, 7);
    }
    put(L, w, "\n", 1);
    w->rows++;
    return 0;
}

/* w:take() -> text, rows: the rows appended since the last take, and
 * their number; the buffer is emptied. */
static int rows_take(lua_State *L)
{
    csv_rows *w = check_rows(L);
    lua_pushlstring(L, w->out.buf ? w->out.buf : "", w->out.len);
    lua_pushinteger(L, w->rows);
    w->out.len = 0;
    w->rows = 0;
    return 2;
}

/* w:count() -> the rows appended since the last take. */
static int rows_count(lua_State *L)
{
    lua_pushinteger(L, check_rows(L)->rows);
    return 1;
}

static int rows_gc(lua_State *L)
{
    csv_rows *w = check_rows(L);
    for (int i = 0; w->f && i < w->n; i++) {
        for (size_t j = 0; j < w->f[i].cap; j++)
            free(w->f[i].slot[j].text);
        free(w->f[i].slot);
    }
    free(w->f);
    free(w->out.buf);
    w->f = NULL;
    w->out.buf = NULL;
    w->n = 0;
    return 0;
}

/* A field name at the top of the stack, popped and kept alive in the
 * table at keep (so the returned pointer stays valid), its index there in
 * *at; raises when it is not a string. */
static const char *keep_name(lua_State *L, int keep, const char *what, int *at)
{
    if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "csv_rows: %s must be a string (got %s)", what, luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    *at = (int)lua_rawlen(L, keep) + 1;
    lua_rawseti(L, keep, *at);
    return s;
}

/* Reads deps[name] (an array of at most MAX_DEPS field names, or nil)
 * into f. */
static void read_deps(lua_State *L, field_cache *f, int deps, int keep)
{
    if (lua_isnoneornil(L, deps) || lua_getfield(L, deps, f->name) == LUA_TNIL) {
        lua_settop(L, keep);
        return;
    }
    int d = lua_gettop(L);
    luaL_checktype(L, d, LUA_TTABLE);
    lua_Integer nd = (lua_Integer)lua_rawlen(L, d);
    if (nd > MAX_DEPS)
        luaL_error(L, "csv_rows: deps.%s: at most %d fields (got %d)", f->name, MAX_DEPS,
                   (int)nd);
    for (lua_Integer j = 1; j <= nd; j++) {
        lua_rawgeti(L, d, j);
        f->deps[f->ndeps] = keep_name(L, keep, "a dependency", &f->dkey[f->ndeps]);
        f->ndeps++;
    }
    lua_settop(L, keep);
}

/* core.csv_rows(fields, deps, cell) -> writer: a row buffer of
 * candidates.csv (lua/apsearch/format/csv.lua).  fields: array of the
 * strategy field names, in column order; deps: nil or a table, field name
 * -> array of at most 3 other field names the cell's spelling also reads;
 * cell: function(cand, i) -> string, the text of field i's cell (CSV
 * quoting included), called once per field and distinct values.  Methods:
 * row, take, count (above).  Raises on a bad argument. */
int apsl_csv_rows(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    int n = (int)lua_rawlen(L, 1);
    luaL_argcheck(L, n >= 1, 1, "at least one field");
    csv_rows *w = lua_newuserdatauv(L, sizeof *w, 3);
    memset(w, 0, sizeof *w);
    luaL_setmetatable(L, CSVROWS_MT);
    int ud = lua_gettop(L);
    lua_newtable(L);
    lua_setiuservalue(L, ud, 1); /* anchors */
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, ud, 2); /* cell */
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, ud, 3); /* the names */
    int keep = lua_gettop(L);
    w->f = calloc((size_t)n, sizeof *w->f);
    if (!w->f)
        return luaL_error(L, "csv_rows: out of memory");
    w->n = n;
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        w->f[i].name = keep_name(L, keep, "a field", &w->f[i].key);
        read_deps(L, &w->f[i], 2, keep);
    }
    lua_pushvalue(L, ud);
    return 1;
}

static const luaL_Reg rows_methods[] = {
    {"row", rows_row},
    {"take", rows_take},
    {"count", rows_count},
    {NULL, NULL}
};

/* Registers the writer's metatable (called by luaopen_apsearch_core). */
void apsl_csv_rows_register(lua_State *L)
{
    if (luaL_newmetatable(L, CSVROWS_MT)) {
        lua_pushcfunction(L, rows_gc);
        lua_setfield(L, -2, "__gc");
        luaL_newlib(L, rows_methods);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
}
