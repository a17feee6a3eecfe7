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
 *
 * A block of candidates the search's fast path rejects at once (most of
 * a large space with `--candidates all`) is written in one call
 * (w:block): the candidate's fixed cells are looked up once per block,
 * the cells that vary with the block's positions once per block shape
 * and candidate values, and each row is copied from those pieces.
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
#define BLOCKKEYS_MT "apsearch.csv_block_keys"
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
    cell_entry bkey;            /* rows:block: the key, its values from the
                                   candidate filled in once per block */
    const char *btext;          /* rows:block: the cell's text when no key
                                   value varies in the block, else NULL */
    size_t blen;
} field_cache;

typedef struct {                /* a piece of a block's row template */
    int field;                  /* the field of a varying cell, or -1 */
    size_t off, len;            /* -1: the constant text in csv_rows.tmpl */
} row_piece;

typedef struct {
    int n;
    field_cache *f;
    apsl_textbuf out;           /* the rows appended since the last take */
    lua_Integer rows;           /* rows in out */
    uint64_t id;                /* this writer's serial (block keys' owner) */
    apsl_textbuf tmpl;          /* rows:block: the template's constant text */
    row_piece *piece;           /* rows:block: the template, 2 n + 1 pieces */
    const char **head;          /* rows:block: the head of each class */
    size_t *hlen;
    int hcap;                   /* classes head and hlen hold (from 1) */
} csv_rows;

/* Serial of the last writer made (block_keys.owner); one process, one
 * Lua state per thread of control (workers are processes). */
static uint64_t writers_made;

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

/* The key values of field f's cells: its own and its dependencies'
 * (read_deps keeps ndeps <= MAX_DEPS; the bound is stated for the
 * compiler). */
static inline int key_count(const field_cache *f)
{
    return f->ndeps < MAX_DEPS ? 1 + f->ndeps : KEYS;
}

/* The remembered cell of field f for key k (nk values), or NULL; a hit
 * becomes f->last. */
static const cell_entry *cell_find(field_cache *f, const cell_entry *k, int nk)
{
    if (f->last.type[0] != 0 && key_equal(&f->last, k, nk))
        return &f->last;
    if (f->cap == 0)
        return NULL;
    cell_entry *e = find_slot(f, k, nk);
    if (e->type[0] == 0)
        return NULL;
    f->last = *e; /* (its text is the table's: freed with it, not here) */
    return e;
}

/* Makes and remembers field i's cell for key k, whose nk values are on
 * the stack from base: the writer's Lua function `cell(cand, i) ->
 * string` spells it from the candidate at index cand, the key's objects
 * are anchored. */
static const cell_entry *cell_make(lua_State *L, field_cache *f, int i, int base, int cand,
                                   cell_entry k)
{
    int nk = key_count(f);
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
    cell_entry *e = find_slot(f, &k, nk);
    *e = k;
    f->used++;
    f->last = k;
    return e;
}

/* The remembered text of field i's cell for the values at the top of the
 * stack (nk of them, from base): made by the writer's Lua function on a
 * miss (`cell(cand, i) -> string`), its key values anchored. */
static const cell_entry *cell_of(lua_State *L, field_cache *f, int i, int base, int cand)
{
    int nk = key_count(f);
    cell_entry k = {0};
    for (int j = 0; j < nk; j++)
        value_key(L, base + j, &k.type[j], &k.val[j]);
    const cell_entry *e = cell_find(f, &k, nk);
    return e ? e : cell_make(L, f, i, base, cand, k);
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

/* The keys of a block's rows (w:block's `cols`), made once per cols table
 * and writer: for each position and written field, the key of its value;
 * for each strategy field of the writer, the source of each of its key
 * values (a written field's column, 0-based, or -1: the candidate). */
typedef struct {                /* one varying field's cells, by position */
    cell_entry outer;           /* the key values from the candidate they
                                   were found for (the positions' slots 0) */
    int valid;                  /* outer is set */
    const char **text;          /* [npos]: NULL until found */
    size_t *len;                /* [npos] */
} block_cells;

typedef struct {
    uint64_t owner;             /* csv_rows.id of the writer */
    int nw, npos;
    uint64_t *val;              /* [npos][nw] */
    unsigned char *type;        /* [npos][nw] */
    int *src;                   /* [n][KEYS] */
    block_cells *cells;         /* [n]: a varying field's texts as found
                                   last (the table's, never freed before
                                   the writer) */
} block_keys;

/* Column c's value at position pos (1-based) pushed, cols.none as nil. */
static void push_column_value(lua_State *L, int cols, int none, int c, lua_Integer pos)
{
    lua_rawgeti(L, cols, c + 1);
    lua_rawgeti(L, -1, pos);
    lua_remove(L, -2);
    if (lua_rawequal(L, -1, none)) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
}

/* The block keys of cols (at index cols) for writer w: cols.ckeys, made
 * when absent or another writer's.  fields (index) is cols.fields, none
 * cols.none.  Raises on a malformed cols. */
static block_keys *block_keys_of(lua_State *L, csv_rows *w, int cols, int fields, int none)
{
    lua_getfield(L, cols, "ckeys");
    block_keys *bk = luaL_testudata(L, -1, BLOCKKEYS_MT);
    lua_pop(L, 1);
    if (bk && bk->owner == w->id)
        return bk;
    int nw = (int)lua_rawlen(L, fields);
    lua_getfield(L, cols, "n");
    lua_Integer npos = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (npos < 0 || npos > (lua_Integer)1 << 24)
        luaL_error(L, "csv_rows: block: cols.n out of range");
    size_t cells = (size_t)npos * (size_t)nw, nf = (size_t)w->n;
    size_t size = sizeof *bk + nf * sizeof(block_cells)
        + nf * (size_t)npos * (sizeof(const char *) + sizeof(size_t))
        + cells * sizeof(uint64_t) + nf * KEYS * sizeof(int) + cells;
    bk = lua_newuserdatauv(L, size, 0);
    memset(bk, 0, size);
    luaL_setmetatable(L, BLOCKKEYS_MT);
    bk->owner = w->id;
    bk->nw = nw;
    bk->npos = (int)npos;
    bk->cells = (block_cells *)(bk + 1);
    const char **texts = (const char **)(bk->cells + nf);
    size_t *lens = (size_t *)(texts + nf * (size_t)npos);
    for (size_t i = 0; i < nf; i++) {
        bk->cells[i].text = texts + i * (size_t)npos;
        bk->cells[i].len = lens + i * (size_t)npos;
    }
    bk->val = (uint64_t *)(lens + nf * (size_t)npos);
    bk->src = (int *)(bk->val + cells);
    bk->type = (unsigned char *)(bk->src + nf * KEYS);
    for (int c = 0; c < nw; c++) {
        lua_rawgeti(L, cols, c + 1);
        luaL_checktype(L, -1, LUA_TTABLE);
        lua_pop(L, 1);
        for (lua_Integer pos = 1; pos <= npos; pos++) {
            size_t at = (size_t)(pos - 1) * (size_t)nw + (size_t)c;
            push_column_value(L, cols, none, c, pos);
            value_key(L, -1, &bk->type[at], &bk->val[at]);
            lua_pop(L, 1);
        }
    }
    for (int i = 0; i < w->n; i++) {
        field_cache *f = &w->f[i];
        for (int j = 0; j < key_count(f); j++) {
            const char *name = j == 0 ? f->name : f->deps[j - 1];
            int src = -1;
            for (int c = 0; c < nw && src < 0; c++) {
                lua_rawgeti(L, fields, c + 1);
                const char *wn = lua_tostring(L, -1);
                if (!wn)
                    luaL_error(L, "csv_rows: block: cols.fields[%d] is not a string", c + 1);
                if (strcmp(wn, name) == 0)
                    src = c;
                lua_pop(L, 1);
            }
            bk->src[i * KEYS + j] = src;
        }
    }
    lua_setfield(L, cols, "ckeys");
    return bk;
}

/* Writes the decimal digits of v >= 0 and a comma to b (at least 22
 * bytes); returns the length. */
static size_t index_cell(char *b, lua_Integer v)
{
    char t[24];
    size_t n = 0;
    unsigned long long u = (unsigned long long)v;
    do {
        t[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++)
        b[i] = t[n - 1 - i];
    b[n] = ',';
    return n + 1;
}

/* Fills each field's key values that come from the candidate (at cand)
 * and, for a field none of whose key values varies in the block, its
 * text; then builds the row template in w->piece (constant runs in
 * w->tmpl, with the separators).  Returns the number of pieces. */
static int block_template(lua_State *L, csv_rows *w, const block_keys *bk, int cand, int names)
{
    w->tmpl.len = 0;
    int np = 0;
    row_piece *run = NULL;
    for (int i = 0; i < w->n; i++) {
        field_cache *f = &w->f[i];
        int nk = key_count(f), varying = 0, base = lua_gettop(L) + 1;
        memset(&f->bkey, 0, sizeof f->bkey);
        for (int j = 0; j < nk; j++) {
            lua_rawgeti(L, names, j == 0 ? f->key : f->dkey[j - 1]);
            lua_rawget(L, cand);
            if (bk->src[i * KEYS + j] < 0)
                value_key(L, -1, &f->bkey.type[j], &f->bkey.val[j]);
            else
                varying = 1;
        }
        f->btext = NULL;
        if (!varying) {
            const cell_entry *e = cell_of(L, f, i, base, cand);
            f->btext = e->text;
            f->blen = e->len;
        } else {
            /* the texts found for another block hold when its key values
               from the candidate were these */
            block_cells *bc = &bk->cells[i];
            if (!bc->valid || !key_equal(&bc->outer, &f->bkey, nk)) {
                memset(bc->text, 0, (size_t)bk->npos * sizeof *bc->text);
                bc->outer = f->bkey;
                bc->valid = 1;
            }
        }
        lua_settop(L, base - 1);
        if (!run) {
            run = &w->piece[np++];
            run->field = -1;
            run->off = w->tmpl.len;
        }
        if (i > 0)
            apsl_textbuf_put(L, &w->tmpl, ",", 1, "csv_rows");
        if (f->btext) {
            apsl_textbuf_put(L, &w->tmpl, f->btext, f->blen, "csv_rows");
        } else {
            run->len = w->tmpl.len - run->off;
            w->piece[np].field = i;
            np++;
            run = NULL;
        }
    }
    if (run)
        run->len = w->tmpl.len - run->off;
    return np;
}

/* The cell of varying field i at position pos of a block: its key from
 * the candidate's values (f->bkey) and the position's; on a miss the
 * candidate (cand) gets the position's written values and the writer's
 * Lua function spells the cell. */
static const cell_entry *block_cell(lua_State *L, csv_rows *w, const block_keys *bk, int i,
                                    lua_Integer pos, int cand, int names, int cols, int fields,
                                    int none)
{
    field_cache *f = &w->f[i];
    int nk = key_count(f);
    cell_entry k = f->bkey;
    size_t row = (size_t)(pos - 1) * (size_t)bk->nw;
    for (int j = 0; j < nk; j++) {
        int c = bk->src[i * KEYS + j];
        if (c >= 0) {
            k.type[j] = bk->type[row + (size_t)c];
            k.val[j] = bk->val[row + (size_t)c];
        }
    }
    const cell_entry *e = cell_find(f, &k, nk);
    if (e)
        return e;
    for (int c = 0; c < bk->nw; c++) {
        lua_rawgeti(L, fields, c + 1);
        push_column_value(L, cols, none, c, pos);
        lua_rawset(L, cand);
    }
    int base = lua_gettop(L) + 1;
    for (int j = 0; j < nk; j++) {
        lua_rawgeti(L, names, j == 0 ? f->key : f->dkey[j - 1]);
        lua_rawget(L, cand);
    }
    e = cell_make(L, f, i, base, cand, k);
    lua_settop(L, base - 1);
    return e;
}

/* The classes of a block's positions (w:block's cls), as C integers: made
 * once per cls table and kept in the writer's weak table (uservalue 4). */
typedef struct {
    int n, max;                 /* positions; the largest class */
    int cl[];                   /* [n] */
} block_classes;

static const block_classes *classes_of(lua_State *L, int cls)
{
    lua_getiuservalue(L, 1, 4);
    lua_pushvalue(L, cls);
    lua_rawget(L, -2);
    block_classes *bc = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (bc) {
        lua_pop(L, 1);
        return bc;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, cls);
    if (n > (lua_Integer)1 << 24)
        luaL_error(L, "csv_rows: block: too many positions");
    bc = lua_newuserdatauv(L, sizeof *bc + (size_t)n * sizeof(int), 0);
    bc->n = (int)n;
    bc->max = 0;
    for (lua_Integer pos = 1; pos <= n; pos++) {
        lua_rawgeti(L, cls, pos);
        lua_Integer c = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (c < 1 || c > (lua_Integer)1 << 24)
            luaL_error(L, "csv_rows: block: cls[%d] is not a class", (int)pos);
        bc->cl[pos - 1] = (int)c;
        if (c > bc->max)
            bc->max = (int)c;
    }
    lua_pushvalue(L, cls);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
    lua_pop(L, 2);
    return bc;
}

/* Reads heads[1..max] (strings, or nil for a class no position has) into
 * w->head, w->hlen. */
static void block_heads(lua_State *L, csv_rows *w, int heads, int max)
{
    if (max > w->hcap) {
        int cap = max > 2 * w->hcap ? max : 2 * w->hcap;
        const char **h = realloc(w->head, (size_t)(cap + 1) * sizeof *h);
        if (h)
            w->head = h;
        size_t *hl = h ? realloc(w->hlen, (size_t)(cap + 1) * sizeof *hl) : NULL;
        if (hl)
            w->hlen = hl;
        if (!h || !hl)
            luaL_error(L, "csv_rows: out of memory");
        w->hcap = cap;
    }
    for (int c = 1; c <= max; c++) {
        lua_rawgeti(L, heads, c);
        w->head[c] = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &w->hlen[c]) : NULL;
        /* (a string: kept alive by heads) */
        lua_pop(L, 1);
    }
}

/* The varying cells of position pos (found once per block keys and
 * candidate values); returns their total length. */
static size_t position_cells(lua_State *L, csv_rows *w, block_keys *bk, int np, lua_Integer pos)
{
    size_t len = 0;
    for (int p = 0; p < np; p++) {
        const row_piece *pc = &w->piece[p];
        if (pc->field < 0)
            continue;
        block_cells *bc = &bk->cells[pc->field];
        if (!bc->text[pos - 1]) {
            const cell_entry *e = block_cell(L, w, bk, pc->field, pos, 3, 7, 6, 8, 9);
            bc->text[pos - 1] = e->text;
            bc->len[pos - 1] = e->len;
        }
        len += bc->len[pos - 1];
    }
    return len;
}

/* w:block(start, cand, cls, heads, cols): appends the rows of a block of
 * candidates filtered before their estimate, the one at position pos
 * (1..cols.n) of index start + pos - 1: `index,head,,,,` and its strategy
 * cells, cand (the block's candidate table, its fields outside the block's
 * written ones fixed in the block) with the position's values of the
 * fields cols.fields (an array of names): cols[c][pos], cols.none
 * standing for nil.  head: heads[cls[pos]] (as w:row's; heads an array
 * by class).  The keys of cols are kept in cols.ckeys (one conversion per
 * cols table), cls's classes in the writer (one per cls table: neither
 * may change after its first block); the cells none of whose key values
 * varies are looked up once per block.  cand's written fields are left at
 * some position's values.  Raises as w:row, and on a class without a
 * head. */
static int rows_block(lua_State *L)
{
    csv_rows *w = check_rows(L);
    lua_Integer start = luaL_checkinteger(L, 2);
    luaL_argcheck(L, start >= 1, 2, "the first index must be 1 or more");
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    luaL_checktype(L, 5, LUA_TTABLE);
    luaL_checktype(L, 6, LUA_TTABLE);
    lua_settop(L, 6);
    lua_getiuservalue(L, 1, 3); /* the names, 7 */
    lua_getfield(L, 6, "fields"); /* 8 */
    luaL_checktype(L, 8, LUA_TTABLE);
    lua_getfield(L, 6, "none"); /* 9 */
    block_keys *bk = block_keys_of(L, w, 6, 8, 9);
    const block_classes *ca = classes_of(L, 4);
    if (ca->n != bk->npos)
        luaL_error(L, "csv_rows: block: %d classes for %d positions", ca->n, bk->npos);
    block_heads(L, w, 5, ca->max);
    int np = block_template(L, w, bk, 3, 7);
    for (lua_Integer pos = 1; pos <= bk->npos; pos++) {
        int cl = ca->cl[pos - 1];
        const char *head = w->head[cl];
        if (!head)
            luaL_error(L, "csv_rows: block: no head for class %d", cl);
        size_t need = 24 + w->hlen[cl] + 3 + w->tmpl.len + 1
            + position_cells(L, w, bk, np, pos);
        if (w->out.len + need > w->out.cap)
            apsl_textbuf_reserve(L, &w->out, need, "csv_rows");
        char *o = w->out.buf + w->out.len;
        o += index_cell(o, start + pos - 1);
        memcpy(o, head, w->hlen[cl]);
        o += w->hlen[cl];
        memcpy(o, ",,,", 3);
        o += 3;
        for (int p = 0; p < np; p++) {
            const row_piece *pc = &w->piece[p];
            const char *t;
            size_t n;
            if (pc->field < 0) {
                t = w->tmpl.buf + pc->off;
                n = pc->len;
            } else {
                t = bk->cells[pc->field].text[pos - 1];
                n = bk->cells[pc->field].len[pos - 1];
            }
            memcpy(o, t, n);
            o += n;
        }
        *o++ = '\n';
        w->out.len = (size_t)(o - w->out.buf);
    }
    w->rows += bk->npos;
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
    free(w->tmpl.buf);
    free(w->piece);
    free(w->head);
    free(w->hlen);
    w->head = NULL;
    w->hlen = NULL;
    w->f = NULL;
    w->out.buf = NULL;
    w->tmpl.buf = NULL;
    w->piece = NULL;
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
 * row, block, take, count (above).  Raises on a bad argument. */
int apsl_csv_rows(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TFUNCTION);
    int n = (int)lua_rawlen(L, 1);
    luaL_argcheck(L, n >= 1, 1, "at least one field");
    csv_rows *w = lua_newuserdatauv(L, sizeof *w, 4);
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
    lua_newtable(L); /* the classes of w:block's cls tables, weak keys */
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setiuservalue(L, ud, 4);
    int keep = lua_gettop(L);
    w->f = calloc((size_t)n, sizeof *w->f);
    w->piece = calloc(2 * (size_t)n + 1, sizeof *w->piece);
    if (!w->f || !w->piece)
        return luaL_error(L, "csv_rows: out of memory");
    w->n = n;
    w->id = ++writers_made;
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
    {"block", rows_block},
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
    luaL_newmetatable(L, BLOCKKEYS_MT);
    lua_pop(L, 1);
}
