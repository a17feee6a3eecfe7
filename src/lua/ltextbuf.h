/*
 * ltextbuf.h -- a growable byte buffer for the C modules that assemble text
 * for Lua (ljson.c's JSON encoder, lcsvrows.c's candidates.csv rows): it
 * doubles from APSL_TEXTBUF_START bytes, and running out of memory raises a
 * Lua error naming the module.  The owner frees buf (its __gc).
 */
#ifndef APSL_TEXTBUF_H
#define APSL_TEXTBUF_H

#include <stddef.h>
#include <string.h>
#include <lua.h>

/** First capacity of a buffer, bytes (64 KiB: a few rows or keys never
 *  reallocate). */
#define APSL_TEXTBUF_START ((size_t)1 << 16)

typedef struct {
    char *buf;   /**< the text, not NUL-terminated; NULL until written */
    size_t len;  /**< bytes of text */
    size_t cap;  /**< bytes allocated */
} apsl_textbuf;

/** Makes room for more bytes after len, doubling the capacity; on out of
 *  memory raises "WHO: out of memory" (a Lua error: no return). */
void apsl_textbuf_reserve(lua_State *L, apsl_textbuf *t, size_t more,
                          const char *who);

/** Appends n bytes of s (raises as apsl_textbuf_reserve). */
static inline void apsl_textbuf_put(lua_State *L, apsl_textbuf *t,
                                    const char *s, size_t n, const char *who)
{
    if (t->len + n > t->cap)
        apsl_textbuf_reserve(L, t, n, who);
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

#endif
