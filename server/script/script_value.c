/*
 * script_value.c — Lua values out of and into a script (script_internal.h):
 * as JSON (what a script publishes, what a client's custom command hands
 * it) and as bytes (its state in a checkpoint).
 *
 * Both walk a table's keys in a fixed order (numbers ascending, then
 * strings), so the same table always gives the same text and bytes.
 *
 * The bytes: a tag byte per value: 'n' nil, 'f' false, 't' true, 'i' and
 * an i64, 'd' and the f64's bits, 's' u32 length and the bytes, 'T' u32
 * count and that many key, value pairs; little-endian.
 */
#include "script_internal.h"

#include "bytes.h"
#include "proto.h"
#include "proto_json.h"

#include <cjson/cJSON.h>
#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 32

/* ---- keys in order ------------------------------------------------------------------ */

struct key {
    int is_num;
    lua_Integer i;
    lua_Number d;
    const char *s;
    size_t len;
};

static int key_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->is_num != y->is_num)
        return x->is_num ? -1 : 1;
    if (x->is_num)
        return (x->d > y->d) - (x->d < y->d);
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The keys of the table at idx (nested `depth` deep), sorted, into a
 * malloc'd *out; their count, or PROTO_E_BAD_VALUE (nested deeper than
 * DEPTH_MAX, a key that is neither a number nor a string) or
 * PROTO_E_INTERNAL (memory) with a reason. The strings stay valid while
 * the table is on the stack. */
static int sorted_keys(lua_State *L, int idx, int depth, struct key **out, char *why, size_t cap)
{
    if (depth > DEPTH_MAX) {
        snprintf(why, cap, "tables nested deeper than %d", DEPTH_MAX);
        return PROTO_E_BAD_VALUE;
    }
    size_t n = 0, have = 8;
    struct key *k = malloc(have * sizeof *k);
    bool oom = k == NULL;
    lua_pushnil(L);
    while (!oom && lua_next(L, idx)) {
        lua_pop(L, 1);
        int t = lua_type(L, -1);
        if (t != LUA_TNUMBER && t != LUA_TSTRING) {
            lua_pop(L, 1);
            snprintf(why, cap, "a table key of type %s", lua_typename(L, t));
            free(k);
            return PROTO_E_BAD_VALUE;
        }
        if (n == have) {
            struct key *more = realloc(k, (have *= 2) * sizeof *k);
            oom = more == NULL;
            if (oom) {
                lua_pop(L, 1);
                break;
            }
            k = more;
        }
        struct key *e = &k[n++];
        *e = (struct key){.is_num = t == LUA_TNUMBER};
        if (e->is_num) {
            e->d = lua_tonumber(L, -1);
            e->i = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
        } else {
            e->s = lua_tolstring(L, -1, &e->len);
        }
    }
    if (oom) {
        free(k);
        snprintf(why, cap, "out of memory");
        return PROTO_E_INTERNAL;
    }
    qsort(k, n, sizeof *k, key_cmp);
    *out = k;
    return (int)n;
}

static void push_key(lua_State *L, const struct key *k)
{
    if (!k->is_num)
        lua_pushlstring(L, k->s, k->len);
    else if (k->d == (lua_Number)k->i)
        lua_pushinteger(L, k->i);
    else
        lua_pushnumber(L, k->d);
}

/* True if the table's keys are exactly 1..n (n >= 1): a JSON array. */
static bool is_array(const struct key *k, int n)
{
    for (int j = 0; j < n; j++)
        if (!k[j].is_num || k[j].d != (lua_Number)(j + 1))
            return false;
    return n > 0;
}

/* ---- to JSON -------------------------------------------------------------------------- */

static int json_value(lua_State *L, int idx, struct proto_json_writer *w, int depth, char *why,
                      size_t cap);

static int json_table(lua_State *L, int idx, struct proto_json_writer *w, int depth, char *why,
                      size_t cap)
{
    struct key *k;
    int n = sorted_keys(L, idx, depth, &k, why, cap);
    if (n < 0)
        return n;
    bool arr = is_array(k, n);
    proto_json_open(w, arr ? '[' : '{');
    int rc = 0;
    for (int j = 0; j < n && rc == 0 && !w->overflow; j++) {
        char num[32];
        if (!arr && k[j].is_num && k[j].d != (lua_Number)k[j].i) {
            snprintf(why, cap, "a table key that is not a whole number (%g)", k[j].d);
            rc = PROTO_E_BAD_VALUE;
            break;
        }
        if (!arr) {
            if (k[j].is_num)
                snprintf(num, sizeof num, "%lld", (long long)k[j].i);
            else if (memchr(k[j].s, '\0', k[j].len))
                snprintf(why, cap, "a key with a NUL byte"), rc = PROTO_E_BAD_VALUE;
            proto_json_key(w, k[j].is_num ? num : k[j].s);
        }
        push_key(L, &k[j]);
        lua_gettable(L, idx);
        if (rc == 0)
            rc = json_value(L, lua_gettop(L), w, depth + 1, why, cap);
        lua_pop(L, 1);
    }
    free(k);
    proto_json_close(w, arr ? ']' : '}');
    return rc;
}

static int json_value(lua_State *L, int idx, struct proto_json_writer *w, int depth, char *why,
                      size_t cap)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        proto_json_null(w);
        return 0;
    case LUA_TBOOLEAN:
        proto_json_bool(w, lua_toboolean(L, idx));
        return 0;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            proto_json_i64(w, lua_tointeger(L, idx));
        else
            proto_json_double(w, lua_tonumber(L, idx)); /* not finite: null */
        return 0;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (memchr(s, '\0', len)) {
            snprintf(why, cap, "a string with a NUL byte");
            return PROTO_E_BAD_VALUE;
        }
        proto_json_str(w, s);
        return 0;
    }
    case LUA_TTABLE:
        return json_table(L, idx, w, depth, why, cap);
    default:
        snprintf(why, cap, "a value of type %s", luaL_typename(L, idx));
        return PROTO_E_BAD_VALUE;
    }
}

int script__to_json(lua_State *L, int idx, size_t max, char **out, char *why, size_t cap)
{
    idx = lua_absindex(L, idx);
    char *buf = malloc(max + 1);
    if (!buf) {
        snprintf(why, cap, "out of memory");
        return PROTO_E_INTERNAL;
    }
    struct proto_json_writer w;
    proto_json_init(&w, buf, max + 1);
    int rc = json_value(L, idx, &w, 0, why, cap);
    int len = rc == 0 ? proto_json_finish(&w) : rc;
    if (rc == 0 && len < 0)
        snprintf(why, cap, "more than %zu bytes of JSON", max);
    if (len < 0) {
        free(buf);
        return len;
    }
    *out = buf;
    return len;
}

/* ---- from JSON ------------------------------------------------------------------------ */

static void push_json(lua_State *L, const cJSON *j, int depth)
{
    luaL_checkstack(L, 3, "nested too deep");
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)d);
        else
            lua_pushnumber(L, d);
    } else if (cJSON_IsString(j)) {
        lua_pushstring(L, j->valuestring);
    } else if (cJSON_IsBool(j)) {
        lua_pushboolean(L, cJSON_IsTrue(j));
    } else if (cJSON_IsArray(j)) {
        lua_createtable(L, cJSON_GetArraySize(j), 0);
        lua_Integer i = 0;
        for (const cJSON *e = j->child; e; e = e->next) {
            push_json(L, e, depth + 1);
            lua_rawseti(L, -2, ++i);
        }
    } else if (cJSON_IsObject(j)) {
        lua_createtable(L, 0, cJSON_GetArraySize(j));
        for (const cJSON *e = j->child; e; e = e->next) {
            push_json(L, e, depth + 1);
            lua_setfield(L, -2, e->string);
        }
    } else {
        lua_pushnil(L);
    }
}

void script__push_cjson(lua_State *L, const struct cJSON *j)
{
    push_json(L, j, 0);
}

/* ---- bytes ---------------------------------------------------------------------------- */

struct enc {
    uint8_t *buf;
    size_t len, cap, max;
    bool full;
};

static void put(struct enc *e, const void *p, size_t n)
{
    if (e->full || e->len + n > e->max) {
        e->full = true;
        return;
    }
    if (e->len + n > e->cap) {
        size_t cap = e->cap ? e->cap : 256;
        while (cap < e->len + n)
            cap *= 2;
        uint8_t *more = realloc(e->buf, cap);
        if (!more) {
            e->full = true;
            return;
        }
        e->buf = more;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, p, n);
    e->len += n;
}

static void put_le(struct enc *e, uint64_t v, int n)
{
    uint8_t b[8];
    bytes_le_put(b, v, n);
    put(e, b, (size_t)n);
}

static int enc_value(lua_State *L, int idx, struct enc *e, int depth, char *why, size_t cap);

static int enc_table(lua_State *L, int idx, struct enc *e, int depth, char *why, size_t cap)
{
    struct key *k;
    int n = sorted_keys(L, idx, depth, &k, why, cap);
    if (n < 0)
        return n;
    put(e, "T", 1);
    put_le(e, (uint64_t)n, 4);
    int rc = 0;
    for (int j = 0; j < n && rc == 0; j++) {
        push_key(L, &k[j]);
        rc = enc_value(L, lua_gettop(L), e, depth + 1, why, cap);
        lua_pushvalue(L, -1);
        lua_gettable(L, idx);
        if (rc == 0)
            rc = enc_value(L, lua_gettop(L), e, depth + 1, why, cap);
        lua_pop(L, 2);
    }
    free(k);
    return rc;
}

static int enc_value(lua_State *L, int idx, struct enc *e, int depth, char *why, size_t cap)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        put(e, "n", 1);
        return 0;
    case LUA_TBOOLEAN:
        put(e, lua_toboolean(L, idx) ? "t" : "f", 1);
        return 0;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            put(e, "i", 1);
            put_le(e, (uint64_t)lua_tointeger(L, idx), 8);
        } else {
            double d = lua_tonumber(L, idx);
            uint64_t bits;
            memcpy(&bits, &d, 8);
            put(e, "d", 1);
            put_le(e, bits, 8);
        }
        return 0;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        put(e, "s", 1);
        put_le(e, len, 4);
        put(e, s, len);
        return 0;
    }
    case LUA_TTABLE:
        return enc_table(L, idx, e, depth, why, cap);
    default:
        snprintf(why, cap, "state holds a value of type %s, which cannot be saved",
                 luaL_typename(L, idx));
        return PROTO_E_BAD_VALUE;
    }
}

int script__encode(lua_State *L, int idx, size_t max, uint8_t **out, char *why, size_t cap)
{
    idx = lua_absindex(L, idx);
    struct enc e = {.max = max};
    int rc = enc_value(L, idx, &e, 0, why, cap);
    if (rc == 0 && e.full) {
        snprintf(why, cap, "state larger than %zu bytes", max);
        rc = PROTO_E_OVER_LIMIT;
    }
    if (rc < 0) {
        free(e.buf);
        return rc;
    }
    *out = e.buf;
    return (int)e.len;
}

struct dec {
    const uint8_t *p;
    size_t left;
};

static uint64_t take(lua_State *L, struct dec *d, int n)
{
    if (d->left < (size_t)n)
        luaL_error(L, "a saved state cut short");
    uint64_t v = bytes_le_get(d->p, n);
    d->p += n;
    d->left -= (size_t)n;
    return v;
}

static void dec_value(lua_State *L, struct dec *d, int depth)
{
    luaL_checkstack(L, 3, "nested too deep");
    if (depth > DEPTH_MAX + 1)
        luaL_error(L, "a saved state nested too deep");
    char tag = (char)take(L, d, 1);
    switch (tag) {
    case 'n':
        lua_pushnil(L);
        return;
    case 'f':
        lua_pushboolean(L, 0);
        return;
    case 't':
        lua_pushboolean(L, 1);
        return;
    case 'i':
        lua_pushinteger(L, (lua_Integer)take(L, d, 8));
        return;
    case 'd': {
        uint64_t bits = take(L, d, 8);
        double v;
        memcpy(&v, &bits, 8);
        lua_pushnumber(L, v);
        return;
    }
    case 's': {
        uint64_t n = take(L, d, 4);
        if (n > d->left)
            luaL_error(L, "a saved state cut short");
        lua_pushlstring(L, (const char *)d->p, (size_t)n);
        d->p += n;
        d->left -= (size_t)n;
        return;
    }
    case 'T': {
        uint64_t n = take(L, d, 4);
        if (n > d->left / 2)
            luaL_error(L, "a saved state cut short");
        lua_createtable(L, 0, (int)n);
        for (uint64_t k = 0; k < n; k++) {
            dec_value(L, d, depth + 1);
            dec_value(L, d, depth + 1);
            if (lua_isnil(L, -2) || (lua_type(L, -2) == LUA_TNUMBER && isnan(lua_tonumber(L, -2))))
                luaL_error(L, "a saved state with a nil or NaN key");
            lua_rawset(L, -3);
        }
        return;
    }
    default:
        luaL_error(L, "a saved state with an unknown tag 0x%02x", (unsigned)(uint8_t)tag);
    }
}

void script__push_saved(lua_State *L, const uint8_t *buf, size_t len)
{
    struct dec d = {buf, len};
    dec_value(L, &d, 0);
    if (d.left)
        luaL_error(L, "a saved state with %d bytes after its end", (int)d.left);
}
