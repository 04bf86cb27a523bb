/*
 * script_internal — the parts of a room's script (script.h) its files
 * share: script.c (the Lua state, the sandbox, the budget, the hooks),
 * script_api.c (the `flock` table) and script_value.c (Lua values to JSON
 * and to bytes and back). Nothing outside server/script includes it.
 *
 * Threading: as script.h.
 */
#ifndef FLOCKD_SCRIPT_INTERNAL_H
#define FLOCKD_SCRIPT_INTERNAL_H

#include "script.h"

#include "rng.h"

#include <lua.h>

struct script {
    lua_State *L;
    struct script_source src;
    struct script_env env;
    struct script_limits lim;
    struct pcg32 rng; /* flock.random's stream, saved with the state */
    int hooks_ref;    /* the prelude's entry points (registry) */
    size_t memory;    /* bytes the state holds */
    uint64_t used;    /* budget spent by the hook call in progress */
    int64_t started;  /* when it began (clock.h), for the wall-time guard */
    bool in_hook;
    bool over; /* the budget or the wall time ran out: stop at once */
    bool running;
    char why[SCRIPT_REASON_MAX];
    struct script_stats stats;
};

/* The script of a Lua state (its extra space). */
static inline struct script *script_of(lua_State *L)
{
    return *(struct script **)lua_getextraspace(L);
}

/* Charges an API call's work against the hook's budget (units: about one
 * Lua instruction each); raises an error if the budget is spent. */
void script__charge(lua_State *L, uint64_t cost);

/* Opens the `flock` table of the API as a global. */
void script__open_api(lua_State *L);

/* Lua value at idx to compact JSON into a malloc'd *out (its length), or a
 * negative code with a reason in why: a function, a table key that is not
 * a string or a whole number, nesting past 32, or more than max bytes. */
int script__to_json(lua_State *L, int idx, size_t max, char **out, char *why, size_t cap);

/* A parsed JSON value pushed as a Lua value (objects and arrays as
 * tables). May raise a Lua error (memory): call it protected. */
struct cJSON;
void script__push_cjson(lua_State *L, const struct cJSON *j);

/* The value at idx as bytes (booleans, numbers, strings, tables of them;
 * keys in a fixed order) into a malloc'd *out: its length, or a negative
 * code with a reason in why. */
int script__encode(lua_State *L, int idx, size_t max, uint8_t **out, char *why, size_t cap);

/* Bytes of script__encode() pushed as a Lua value; raises a Lua error if
 * they are not such bytes: call it protected. */
void script__push_saved(lua_State *L, const uint8_t *buf, size_t len);

#endif
