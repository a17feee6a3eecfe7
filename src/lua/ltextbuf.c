/*
 * ltextbuf.c -- the growable text buffer of ltextbuf.h.
 */
#include <stdlib.h>
#include <lauxlib.h>
#include "ltextbuf.h"

void apsl_textbuf_reserve(lua_State *L, apsl_textbuf *t, size_t more,
                          const char *who)
{
    size_t cap = t->cap ? t->cap : APSL_TEXTBUF_START;
    while (cap < t->len + more)
        cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b)
        luaL_error(L, "%s: out of memory", who);
    t->buf = b;
    t->cap = cap;
}
