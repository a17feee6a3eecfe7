/*
 * src/lua/ljsonsize.c -- core.json_decoded_bytes: the memory lua-cjson
 * would take to decode a JSON text, counted before it is decoded.
 *
 * A trace's JSON may be large (hundreds of MB from one profiler rank) and
 * its size in bytes does not bound what decoding it costs: "{}" is two
 * bytes of text and a Lua table of some 70 bytes, so half a gigabyte of
 * "[{},{},...]" (0.5 MB of gzip) decodes into about 16 GB.  The scan
 * counts the containers and values outside strings and prices each as
 * Lua 5.4 allocates it on a 64-bit host (lobject.h: a Table header is 56
 * bytes, an array slot a 16-byte TValue, a hash node 24 bytes; both parts
 * grow by powers of two, so up to twice the slots; malloc adds about 16
 * bytes a block).  Strings cost at most their text plus a header, which
 * the text's own length bounds.  The result is an upper estimate for the
 * caller to refuse a text by, not a measurement.
 */
#include <stddef.h>

#include <lauxlib.h>

#include "lconvert.h"

/** Bytes a decoded object or array takes beyond its slots: Lua 5.4's
 *  Table header (56 bytes, lobject.h) and a malloc block header. */
#define APSL_JSON_CONTAINER_BYTES 72.0
/** Bytes a decoded value takes in its container: a 24-byte hash node (an
 *  object's key and value) at up to twice the used slots (power-of-two
 *  growth); an array's 16-byte slots cost less. */
#define APSL_JSON_VALUE_BYTES 48.0
/** Bytes a decoded string takes beyond its characters (TString header and
 *  a malloc block header). */
#define APSL_JSON_STRING_BYTES 40.0

/* core.json_decoded_bytes(text) -> number: an upper estimate of the bytes
 * lua-cjson's decode of text allocates: the text's length (the strings'
 * characters), plus APSL_JSON_CONTAINER_BYTES per '{' or '[',
 * APSL_JSON_VALUE_BYTES per value (each ',' and each container's first)
 * and APSL_JSON_STRING_BYTES per string, counted outside strings.  The
 * text need not be valid JSON (decoding it then fails anyway). */
int apsl_json_decoded_bytes(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    double containers = 0, values = 0, strings = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            strings++;
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
        } else if (c == '{' || c == '[') {
            containers++;
            values++;
        } else if (c == ',') {
            values++;
        }
    }
    lua_pushnumber(L, (double)n + containers * APSL_JSON_CONTAINER_BYTES +
                          values * APSL_JSON_VALUE_BYTES +
                          strings * APSL_JSON_STRING_BYTES);
    return 1;
}
