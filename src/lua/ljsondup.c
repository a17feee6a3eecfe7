/*
 * src/lua/ljsondup.c -- core.json_duplicate_key: the first key a JSON
 * object gives twice.
 *
 * lua-cjson keeps the last of two equal keys ({"hidden_size": 4096,
 * "hidden_size": 8192} reads 8192) and says nothing; RFC 8259 s.4 leaves
 * the behaviour to the reader ("The names within an object SHOULD be
 * unique").  A config.json or calibration file with a repeated key is a
 * hand edit gone wrong, which the readers refuse naming the key and its
 * line.  The scan runs on text lua-cjson has already decoded, so it is
 * valid JSON: strings, the six structural characters and the scalars
 * between them.  Keys are compared by their bytes as written (an escape
 * spelt two ways is two keys, as no config writes).  Each object's keys
 * go into one open-addressing table keyed by (object number, bytes);
 * past APSL_DUP_MAX_KEYS keys, or APSL_DUP_MAX_DEPTH levels, the scan
 * stops and reports nothing (cjson's own depth limit is 1000).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "lconvert.h"

/** Keys the scan tracks at most (a config.json has hundreds): bounds the
 *  table to 2^21 slots of 24 bytes. */
#define APSL_DUP_MAX_KEYS (1 << 20)
/** Nesting the scan follows at most. */
#define APSL_DUP_MAX_DEPTH 1024

typedef struct {
    size_t off, len;  /* the key's bytes in the text (inside the quotes) */
    uint64_t object;  /* the object's number, 0 = empty slot */
} dup_slot;

typedef struct {
    dup_slot *slots;
    size_t cap, used;
} dup_table;

/** FNV-1a over the key's bytes and its object's number. */
static uint64_t key_hash(const char *s, size_t len, uint64_t object)
{
    uint64_t h = 14695981039346656037ULL ^ object;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/** Inserts the key; 1 when the object had it, 0 when new, -1 out of
 *  memory or past the key limit. */
static int dup_insert(dup_table *t, const char *text, size_t off, size_t len,
                      uint64_t object)
{
    if (t->used + 1 > t->cap / 2) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        if (t->used >= APSL_DUP_MAX_KEYS)
            return -1;
        dup_slot *n = calloc(cap, sizeof *n);
        if (n == NULL)
            return -1;
        for (size_t i = 0; i < t->cap; i++) {
            dup_slot *o = &t->slots[i];
            if (o->object == 0)
                continue;
            size_t j = key_hash(text + o->off, o->len, o->object) & (cap - 1);
            while (n[j].object != 0)
                j = (j + 1) & (cap - 1);
            n[j] = *o;
        }
        free(t->slots);
        t->slots = n;
        t->cap = cap;
    }
    size_t j = key_hash(text + off, len, object) & (t->cap - 1);
    for (; t->slots[j].object != 0; j = (j + 1) & (t->cap - 1)) {
        dup_slot *s = &t->slots[j];
        if (s->object == object && s->len == len &&
            memcmp(text + s->off, text + off, len) == 0)
            return 1;
    }
    t->slots[j] = (dup_slot){off, len, object};
    t->used++;
    return 0;
}

/** End of the string whose opening quote is at i: the index of its
 *  closing quote, n when the text ends first (not valid JSON). */
static size_t string_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\')
            i++;
    return i < n ? i : n;
}

/** The first repeated key: its offset and length (returns 1), or 0. */
static int find_duplicate(const char *s, size_t n, size_t *off, size_t *len)
{
    uint64_t stack[APSL_DUP_MAX_DEPTH]; /* object number, 0 for an array */
    bool want_key[APSL_DUP_MAX_DEPTH];
    int depth = 0, found = 0;
    uint64_t objects = 0;
    dup_table t = {NULL, 0, 0};
    for (size_t i = 0; i < n && !found; i++) {
        char c = s[i];
        if (c == '{' || c == '[') {
            if (depth == APSL_DUP_MAX_DEPTH)
                break;
            stack[depth] = c == '{' ? ++objects : 0;
            want_key[depth++] = c == '{';
        } else if (c == '}' || c == ']') {
            depth -= depth > 0;
        } else if (c == ',' && depth > 0) {
            want_key[depth - 1] = stack[depth - 1] != 0;
        } else if (c == '"') {
            size_t e = string_end(s, n, i);
            if (e == n)
                break;
            if (depth > 0 && want_key[depth - 1]) {
                want_key[depth - 1] = false;
                int r = dup_insert(&t, s, i + 1, e - i - 1, stack[depth - 1]);
                if (r < 0)
                    break;
                if (r == 1) {
                    *off = i + 1;
                    *len = e - i - 1;
                    found = 1;
                }
            }
            i = e;
        }
    }
    free(t.slots);
    return found;
}

/* core.json_duplicate_key(text) -> nil | key, line: the first key an
 * object of the (valid) JSON text gives twice, and the 1-based line of
 * its second occurrence. */
int apsl_json_duplicate_key(lua_State *L)
{
    size_t n, off, len;
    const char *s = luaL_checklstring(L, 1, &n);
    if (!find_duplicate(s, n, &off, &len))
        return 0;
    lua_Integer line = 1;
    for (size_t i = 0; i < off; i++)
        line += s[i] == '\n';
    lua_pushlstring(L, s + off, len);
    lua_pushinteger(L, line);
    return 2;
}
