/*
 * src/lua/ljson.c -- core.json_encode: the JSON text of a result
 * (lua/apsearch/format/json.lua) written in one pass over the Lua tables,
 * with no copy of them.
 *
 * The text is what lua-cjson wrote (encode_sparse_array, 14 significant
 * digits) for the copy format/json.lua used to make, with every object's
 * keys sorted by their bytes, so that two runs write the same bytes:
 *
 * - numbers as "%.14g"; a non-finite number is null;
 * - strings escaped as cjson escapes them (", \, control characters,
 *   DEL as \u007f), except "/", written as is; each byte that does not
 *   start or continue a valid UTF-8 sequence (RFC 3629: no surrogates,
 *   nothing above U+10FFFF, no overlong forms) is written as U+FFFD;
 * - a table is an array when every key of an encoded value is an integer
 *   >= 1 and it is not sparse (its largest key at most 10 or at most twice
 *   the number of keys; holes are null), otherwise an object (number keys
 *   spelt as numbers); an empty table is {}, or [] when its metatable is
 *   named "apsearch.array" (apsearch.util.array_mt);
 * - functions, threads, userdata other than null (cjson.null), tables
 *   whose metatable has __json = false, and keys that are neither strings
 *   nor numbers are left out; a table nested deeper than MAX_DEPTH is null;
 * - tables are read raw (no __index, no __pairs);
 * - with the option `script`, "<" in a string is written \u003c, so that
 *   the text can stand in an HTML <script> element ("</script>" and
 *   "<!--" cannot occur in it; "<" occurs only inside strings).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lconvert.h"
#include "ltextbuf.h"

#define JSON_MT "apsearch.json_state"
#define MAX_DEPTH 64        /* deeper tables are null (format/json.lua's cap) */
#define EXACT_INT 1e14      /* below it, "%.14g" spells an integer in full */
#define SPARSE_RATIO 2      /* cjson's encode_sparse_ratio */
#define SPARSE_SAFE 10      /* cjson's encode_sparse_safe */
#define ARG_OVERLAY 2       /* stack index of json_encode's overlay */
#define ARG_SPELL 4         /* stack index of the option spell (or nil) */
#define NUM_LEN 32          /* room for "%.14g" of any double */

typedef struct {            /* one key of an object being written */
    const char *s;          /* a string key's bytes; NULL: num's */
    size_t len;
    int idx;                /* stack index of the key */
    int overlay;            /* the value is the overlay's */
    char num[NUM_LEN];      /* a number key's spelling */
} json_key;

typedef struct {
    apsl_textbuf out;       /* the text written so far */
    int script;             /* "<" written \u003c */
    int spell;              /* the option spell is a function */
    json_key *keys;         /* the keys of the objects being written, a stack */
    size_t nkeys, kcap;
} json_state;

/* Frees the buffers (the state's __gc: also after an error). */
static int state_gc(lua_State *L)
{
    json_state *st = lua_touserdata(L, 1);
    free(st->out.buf);
    free(st->keys);
    st->out.buf = NULL;
    st->keys = NULL;
    return 0;
}

/* Appends len bytes of text (raises on out of memory). */
static inline void put(lua_State *L, json_state *st, const char *s, size_t len)
{
    apsl_textbuf_put(L, &st->out, s, len, "json_encode");
}

#define PUT_LIT(L, st, lit) put(L, st, lit, sizeof(lit) - 1)

/* Spells a number as cjson does ("%.14g"); integers below EXACT_INT
 * directly (the same digits).  Returns the length written to out. */
static int spell_number(char out[NUM_LEN], lua_State *L, int idx)
{
    double d = lua_tonumber(L, idx);
    if (fabs(d) < EXACT_INT && d == floor(d) && !(d == 0 && signbit(d))) {
        long long v = lua_isinteger(L, idx) ? (long long)lua_tointeger(L, idx) : (long long)d;
        char tmp[NUM_LEN];
        int n = 0, neg = v < 0;
        unsigned long long u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do {
            tmp[n++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        int len = 0;
        if (neg)
            out[len++] = '-';
        while (n)
            out[len++] = tmp[--n];
        return len;
    }
    return snprintf(out, NUM_LEN, "%.14g", d);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min, max = 0xBF;   /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        min = c == 0xE0 ? 0xA0 : 0x80;  /* overlong */
        if (c == 0xED)
            max = 0x9F;                 /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        min = c == 0xF0 ? 0x90 : 0x80;  /* overlong */
        if (c == 0xF4)
            max = 0x8F;                 /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < min || s[1] > max)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/* The escape of an ASCII byte, NULL when it is written as is. */
static const char *escape_of(unsigned char c, int script, char tmp[8])
{
    switch (c) {
    case '<': return script ? "\\u003c" : NULL;
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default:
        if (c >= 0x20 && c != 0x7F)
            return NULL;
        snprintf(tmp, 8, "\\u%04x", c);
        return tmp;
    }
}

/* Appends s as a JSON string. */
static void put_string(lua_State *L, json_state *st, const char *str, size_t n)
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD";   /* U+FFFD */
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0, i = 0;   /* s[run..i) is written as is */
    char tmp[8];
    PUT_LIT(L, st, "\"");
    while (i < n) {
        const char *esc = NULL;
        size_t len = 1;
        if (s[i] < 0x80) {
            esc = escape_of(s[i], st->script, tmp);
        } else {
            len = utf8_seq(s + i, n - i);
            if (!len) {
                esc = REPLACEMENT;
                len = 1;
            }
        }
        if (esc) {
            put(L, st, str + run, i - run);
            put(L, st, esc, strlen(esc));
            run = i + len;
        }
        i += len;
    }
    put(L, st, str + run, n - run);
    PUT_LIT(L, st, "\"");
}

/* 1 when the value at idx (a value of a table at depth) is left out. */
static int left_out(lua_State *L, int idx, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TFUNCTION:
    case LUA_TTHREAD:
    case LUA_TUSERDATA:
        return 1;
    case LUA_TLIGHTUSERDATA:
        return lua_touserdata(L, idx) != NULL;
    case LUA_TTABLE: {
        if (depth > MAX_DEPTH || !luaL_getmetafield(L, idx, "__json"))
            return 0;
        int out = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
        lua_pop(L, 1);
        return out;
    }
    default:
        return 0;
    }
}

/* The positive integer a key at idx is, 0 when it is not one. */
static lua_Integer array_index(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TNUMBER)
        return 0;
    double k = lua_tonumber(L, idx);
    return (k >= 1 && k == floor(k) && k < -(double)LUA_MININTEGER) ? (lua_Integer)k : 0;
}

/* Pushes the key at idx's entry onto the key stack (the key stays on the
 * Lua stack at idx). */
static void push_key(lua_State *L, json_state *st, int idx, int overlay)
{
    if (st->nkeys == st->kcap) {
        size_t cap = st->kcap ? st->kcap * 2 : 256;
        json_key *k = realloc(st->keys, cap * sizeof *k);
        if (!k)
            luaL_error(L, "json_encode: out of memory");
        st->keys = k;
        st->kcap = cap;
    }
    json_key *k = &st->keys[st->nkeys++];
    k->idx = idx;
    k->overlay = overlay;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        k->len = (size_t)spell_number(k->num, L, idx);
        k->s = NULL;   /* the entry moves (realloc, qsort) */
    } else {
        k->s = lua_tolstring(L, idx, &k->len);
    }
}

/* Collects the keys of the encoded values of table t (the overlay's
 * entries first, when o is not 0) onto the key and Lua stacks.  Returns
 * the number of keys; *max is the largest array index, or -1 when a key
 * is not an array index. */
static size_t collect(lua_State *L, json_state *st, int t, int o, int depth, lua_Integer *max)
{
    size_t n = 0;
    *max = o ? -1 : 0;
    for (int src = o ? 0 : 1; src < 2; src++) {
        int tab = src == 0 ? o : t;
        lua_pushnil(L);
        while (lua_next(L, tab)) {
            int kt = lua_type(L, -2);
            int skip = (kt != LUA_TSTRING && kt != LUA_TNUMBER) || left_out(L, -1, depth + 1);
            if (!skip && src == 1 && o) {
                lua_pushvalue(L, -2);
                skip = lua_rawget(L, o) != LUA_TNIL;
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
            if (skip)
                continue;
            luaL_checkstack(L, 4, "json_encode: too many keys");
            push_key(L, st, lua_gettop(L), src == 0);
            lua_Integer i = array_index(L, -1);
            if (*max >= 0)
                *max = i > 0 ? (i > *max ? i : *max) : -1;
            n++;
            lua_pushvalue(L, -1);   /* the key lua_next continues from */
        }
    }
    return n;
}

/* The bytes of a key. */
static const char *key_text(const json_key *k)
{
    return k->s ? k->s : k->num;
}

/* Orders keys by their bytes, then by position (a number key and the
 * string of its spelling). */
static int key_cmp(const void *a, const void *b)
{
    const json_key *x = a, *y = b;
    int c = memcmp(key_text(x), key_text(y), x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void encode(lua_State *L, json_state *st, int idx, int depth);

/* Appends the array t[1..max] (holes are null). */
static void put_array(lua_State *L, json_state *st, int t, lua_Integer max, int depth)
{
    PUT_LIT(L, st, "[");
    for (lua_Integer i = 1; i <= max; i++) {
        if (i > 1)
            PUT_LIT(L, st, ",");
        lua_rawgeti(L, t, i);
        if (left_out(L, -1, depth + 1))
            PUT_LIT(L, st, "null");
        else
            encode(L, st, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    PUT_LIT(L, st, "]");
}

/* Appends the object of the keys st->keys[base..base+n) in key order. */
static void put_object(lua_State *L, json_state *st, int t, int o, size_t base, size_t n, int depth)
{
    qsort(st->keys + base, n, sizeof *st->keys, key_cmp);
    PUT_LIT(L, st, "{");
    for (size_t i = 0; i < n; i++) {
        const json_key *k = &st->keys[base + i];   /* encode may move st->keys */
        if (i)
            PUT_LIT(L, st, ",");
        put_string(L, st, key_text(k), k->len);
        PUT_LIT(L, st, ":");
        lua_pushvalue(L, k->idx);
        lua_rawget(L, k->overlay ? o : t);
        encode(L, st, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    PUT_LIT(L, st, "}");
}

/* 1 when the table at idx has the metatable of apsearch.util.array_mt. */
static int marked_array(lua_State *L, int idx)
{
    int t = luaL_getmetafield(L, idx, "__name");
    int marked = t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "apsearch.array") == 0;
    if (t != LUA_TNIL)
        lua_pop(L, 1);
    return marked;
}

/* The type of the raw field name of the table at t. */
static int raw_type(lua_State *L, int t, const char *name)
{
    lua_pushstring(L, name);
    int type = lua_rawget(L, t);
    lua_pop(L, 1);
    return type;
}

/* 1 when the table at t may be a strategy (numbers dp_degree and
 * micro_batch_size, a string layer_recompute) or hold one beside its
 * stages (tables strategy and stages): the option spell is called on it. */
static int may_spell(lua_State *L, int t)
{
    if (raw_type(L, t, "dp_degree") == LUA_TNUMBER && raw_type(L, t, "micro_batch_size") == LUA_TNUMBER
        && raw_type(L, t, "layer_recompute") == LUA_TSTRING)
        return 1;
    return raw_type(L, t, "strategy") == LUA_TTABLE && raw_type(L, t, "stages") == LUA_TTABLE;
}

/* Appends the table at idx (depth: its nesting, the top level 0). */
static void put_table(lua_State *L, json_state *st, int t, int depth)
{
    luaL_checkstack(L, 8, "json_encode: nesting too deep");
    int top = lua_gettop(L);
    int o = 0;
    if (st->spell && may_spell(L, t)) {
        lua_pushvalue(L, ARG_SPELL);
        lua_pushvalue(L, t);
        lua_call(L, 1, 0);
    }
    lua_pushvalue(L, t);
    if (lua_rawget(L, ARG_OVERLAY) == LUA_TTABLE)
        o = lua_gettop(L);
    else
        lua_pop(L, 1);
    size_t base = st->nkeys;
    lua_Integer max;
    size_t n = collect(L, st, t, o, depth, &max);
    if (n == 0) {
        lua_pushnil(L);
        int empty = !o && !lua_next(L, t);
        if (empty && marked_array(L, t))
            PUT_LIT(L, st, "[]");
        else
            PUT_LIT(L, st, "{}");
    } else if (max > 0 && !(max > (lua_Integer)n * SPARSE_RATIO && max > SPARSE_SAFE)) {
        put_array(L, st, t, max, depth);
    } else {
        put_object(L, st, t, o, base, n, depth);
    }
    st->nkeys = base;
    lua_settop(L, top);
}

/* Appends the value at idx (a value of a table at depth - 1). */
static void encode(lua_State *L, json_state *st, int idx, int depth)
{
    char num[NUM_LEN];
    size_t len;
    const char *s;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: {
        lua_Number d = lua_tonumber(L, idx);
        if (!lua_isinteger(L, idx) && !isfinite(d))
            PUT_LIT(L, st, "null");
        else
            put(L, st, num, (size_t)spell_number(num, L, idx));
        break;
    }
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &len);
        put_string(L, st, s, len);
        break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, idx))
            PUT_LIT(L, st, "true");
        else
            PUT_LIT(L, st, "false");
        break;
    case LUA_TTABLE:
        if (depth > MAX_DEPTH)
            PUT_LIT(L, st, "null");
        else
            put_table(L, st, idx, depth);
        break;
    default:   /* nil (a hole), null */
        PUT_LIT(L, st, "null");
    }
}

/* core.json_encode(value [, overlay [, opts]]) -> string: the JSON text
 * of value (the header above says how).  overlay maps a table of value to
 * a table of fields written in place of the table's own (and beside
 * them): the value of each is written as the field's.  opts: `script`
 * (boolean: "<" as \u003c), `suffix` (string appended to the text, e.g.
 * a newline), `spell` (a function called with each table that may be a
 * strategy or hold one, see may_spell, before the table is written: it
 * may add the table's entry to overlay).  Raises on out of memory and
 * what spell raises. */
int apsl_json_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_settop(L, 3);
    lua_pushnil(L);   /* ARG_SPELL */
    int script = 0;
    size_t slen = 0;
    const char *suffix = NULL;
    if (!lua_isnil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        script = lua_getfield(L, 3, "script") != LUA_TNIL && lua_toboolean(L, -1);
        if (lua_getfield(L, 3, "suffix") != LUA_TNIL)
            suffix = luaL_checklstring(L, -1, &slen);
        if (lua_getfield(L, 3, "spell") != LUA_TNIL) {
            luaL_checktype(L, -1, LUA_TFUNCTION);
            lua_replace(L, ARG_SPELL);
        } else {
            lua_pop(L, 1);
        }
    }
    json_state *st = lua_newuserdatauv(L, sizeof *st, 0);
    memset(st, 0, sizeof *st);
    st->script = script;
    st->spell = lua_isfunction(L, ARG_SPELL);
    if (luaL_newmetatable(L, JSON_MT)) {
        lua_pushcfunction(L, state_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    encode(L, st, 1, 0);
    if (suffix)
        put(L, st, suffix, slen);
    lua_pushlstring(L, st->out.buf ? st->out.buf : "", st->out.len);
    lua_pushcfunction(L, state_gc);   /* free the buffers now, not at a GC */
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    return 1;
}
