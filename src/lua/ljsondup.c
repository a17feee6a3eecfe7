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
 * between them.  Keys are compared as decoded ("hidd\u0065n" is "hidden"),
 * each object's keys in one open-addressing table keyed by (object number,
 * key) under a hash seeded per process, so that no file can be made to
 * collide on purpose.  A file of more than APSL_DUP_MAX_KEYS keys is not
 * scanned (the caller refuses it: no config has that many); nesting past
 * APSL_DUP_MAX_DEPTH is cjson's to refuse first (its limit is 1000).
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
    const char *key;  /* the key's bytes, decoded (in the text when it has
                         no escape, else in a buffer of the scan's) */
    size_t len;
    uint64_t object;  /* the object's number, 0 = empty slot */
} dup_slot;

typedef struct {
    dup_slot *slots;
    size_t cap, used;
    uint64_t seed;
    char **decoded;   /* the keys decoded into buffers, freed at the end */
    size_t ndecoded, capdecoded;
} dup_table;

/** FNV-1a over the key's bytes, seeded with the scan's seed and the
 *  object's number. */
static uint64_t key_hash(const dup_table *t, const char *s, size_t len,
                         uint64_t object)
{
    uint64_t h = (14695981039346656037ULL ^ t->seed) + object * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/** Inserts the key; 1 when the object had it, 0 when new, -1 out of
 *  memory or past the key limit. */
static int dup_insert(dup_table *t, const char *key, size_t len,
                      uint64_t object)
{
    if (t->used + 1 > t->cap / 2) {
        if (t->used >= APSL_DUP_MAX_KEYS)
            return -1;
        size_t cap = t->cap ? 2 * t->cap : 64;
        dup_slot *n = calloc(cap, sizeof *n);
        if (n == NULL)
            return -1;
        for (size_t i = 0; i < t->cap; i++) {
            dup_slot *o = &t->slots[i];
            if (o->object == 0)
                continue;
            size_t j = key_hash(t, o->key, o->len, o->object) & (cap - 1);
            while (n[j].object != 0)
                j = (j + 1) & (cap - 1);
            n[j] = *o;
        }
        free(t->slots);
        t->slots = n;
        t->cap = cap;
    }
    size_t j = key_hash(t, key, len, object) & (t->cap - 1);
    for (; t->slots[j].object != 0; j = (j + 1) & (t->cap - 1)) {
        dup_slot *s = &t->slots[j];
        if (s->object == object && s->len == len &&
            memcmp(s->key, key, len) == 0)
            return 1;
    }
    t->slots[j] = (dup_slot){key, len, object};
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

/** The value of the 4 hex digits at s (valid JSON: cjson decoded it). */
static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/** Appends code point u as UTF-8 (a lone surrogate as its 3 bytes). */
static size_t put_utf8(char *o, unsigned u)
{
    if (u < 0x80) {
        o[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        o[0] = (char)(0xC0 | u >> 6);
        o[1] = (char)(0x80 | (u & 0x3F));
        return 2;
    }
    if (u < 0x10000) {
        o[0] = (char)(0xE0 | u >> 12);
        o[1] = (char)(0x80 | (u >> 6 & 0x3F));
        o[2] = (char)(0x80 | (u & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | u >> 18);
    o[1] = (char)(0x80 | (u >> 12 & 0x3F));
    o[2] = (char)(0x80 | (u >> 6 & 0x3F));
    o[3] = (char)(0x80 | (u & 0x3F));
    return 4;
}

/** Decodes the escapes of s[0 .. len) into o (at most len bytes: an
 *  escape is never shorter than what it stands for); returns the length. */
static size_t decode_escapes(const char *s, size_t len, char *o)
{
    static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            o[k++] = s[i];
            continue;
        }
        char e = s[++i];
        if (e == 'u' && i + 4 < len) {
            unsigned u = hex4(s + i + 1);
            i += 4;
            if (u >= 0xD800 && u < 0xDC00 && i + 6 < len && s[i + 1] == '\\' &&
                s[i + 2] == 'u') {
                unsigned lo = hex4(s + i + 3);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            k += put_utf8(o + k, u);
            continue;
        }
        const char *p = strchr(simple, e);
        o[k++] = p != NULL && e != '\0' ? p[1] : e;
    }
    return k;
}

/** The key s[0 .. len) as compared: itself, or decoded into a buffer the
 *  table keeps; NULL out of memory. */
static const char *key_bytes(dup_table *t, const char *s, size_t *len)
{
    if (memchr(s, '\\', *len) == NULL)
        return s;
    if (t->ndecoded == t->capdecoded) {
        size_t cap = t->capdecoded ? 2 * t->capdecoded : 16;
        char **n = realloc(t->decoded, cap * sizeof *n);
        if (n == NULL)
            return NULL;
        t->decoded = n;
        t->capdecoded = cap;
    }
    char *o = malloc(*len > 0 ? *len : 1);
    if (o == NULL)
        return NULL;
    t->decoded[t->ndecoded++] = o;
    *len = decode_escapes(s, *len, o);
    return o;
}

static void dup_free(dup_table *t)
{
    for (size_t i = 0; i < t->ndecoded; i++)
        free(t->decoded[i]);
    free(t->decoded);
    free(t->slots);
}

/** The process's hash seed: the address of a static (randomised by ASLR)
 *  mixed with the scan's own stack address. */
static uint64_t scan_seed(void)
{
    static const char anchor = 0;
    volatile char local = 0;
    return ((uint64_t)(uintptr_t)&anchor * 0x9E3779B97F4A7C15ULL) ^
           (uint64_t)(uintptr_t)&local;
}

/** The first repeated key: its offset and length in the text (returns 1),
 *  0 when none, -1 when the text has too many keys to scan. */
static int find_duplicate(const char *s, size_t n, size_t *off, size_t *len)
{
    uint64_t stack[APSL_DUP_MAX_DEPTH]; /* object number, 0 for an array */
    bool want_key[APSL_DUP_MAX_DEPTH];
    int depth = 0, found = 0;
    uint64_t objects = 0;
    dup_table t = {NULL, 0, 0, scan_seed(), NULL, 0, 0};
    for (size_t i = 0; i < n && found == 0; i++) {
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
                size_t klen = e - i - 1;
                const char *k = key_bytes(&t, s + i + 1, &klen);
                int r = k == NULL ? -1 : dup_insert(&t, k, klen, stack[depth - 1]);
                if (r < 0)
                    found = -1;
                else if (r == 1) {
                    *off = i + 1;
                    *len = e - i - 1;
                    found = 1;
                }
            }
            i = e;
        }
    }
    dup_free(&t);
    return found;
}

/* core.json_duplicate_key(text) -> nil | key, line | false, "too many
 * keys": the first key an object of the (valid) JSON text gives twice, as
 * written, and the 1-based line of its second occurrence; false when the
 * text holds more keys than the scan tracks (APSL_DUP_MAX_KEYS). */
int apsl_json_duplicate_key(lua_State *L)
{
    size_t n, off, len;
    const char *s = luaL_checklstring(L, 1, &n);
    int r = find_duplicate(s, n, &off, &len);
    if (r == 0)
        return 0;
    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_pushfstring(L, "more than %d keys", APSL_DUP_MAX_KEYS);
        return 2;
    }
    lua_Integer line = 1;
    for (size_t i = 0; i < off; i++)
        line += s[i] == '\n';
    lua_pushlstring(L, s + off, len);
    lua_pushinteger(L, line);
    return 2;
}
