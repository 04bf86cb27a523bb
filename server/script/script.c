/*
 * script.c — a room's Lua state (see script.h): the capped allocator, the
 * sandbox, the instruction budget and the hooks' calls.
 */
#include "script_internal.h"

#include "clock.h"
#include "proto.h"

#include <lauxlib.h>
#include <lualib.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char script_prelude[];
extern const size_t script_prelude_len;

#define COUNT_EVERY 1000 /* instructions between two calls of the count hook */

/* ---- sources ------------------------------------------------------------------- */

uint64_t script_hash(const char *text, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)text[i]) * 1099511628211ull;
    return h;
}

static bool is_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SCRIPT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
              (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            return false;
    return true;
}

int script_source_set(struct script_source *src, const char *name, const char *text, size_t len)
{
    if (!is_name(name) || len > SCRIPT_SOURCE_MAX || memchr(text, '\0', len))
        return PROTO_E_BAD_ARG;
    char *copy = malloc(len + 1);
    if (!copy)
        return PROTO_E_INTERNAL;
    memcpy(copy, text, len);
    copy[len] = '\0';
    script_source_free(src);
    snprintf(src->name, sizeof src->name, "%s", name);
    src->text = copy;
    src->len = len;
    src->hash = script_hash(text, len);
    return 0;
}

void script_source_free(struct script_source *src)
{
    free(src->text);
    src->text = NULL;
    src->len = 0;
}

/* ---- memory and budget ----------------------------------------------------------- */

static void *allocate(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct script *s = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        s->memory -= old;
        return NULL;
    }
    if (nsize > old && s->memory - old + nsize > s->lim.memory)
        return NULL; /* Lua raises "not enough memory" */
    void *p = realloc(ptr, nsize);
    if (p)
        s->memory = s->memory - old + nsize;
    return p;
}

static void count_hook(lua_State *L, lua_Debug *ar);

/* After the budget ran out: the error again at every instruction, so that
 * no pcall in the script can hold it. */
static void raise_over(lua_State *L, struct script *s)
{
    s->over = true;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    if (s->why[0] == '\0')
        snprintf(s->why, sizeof s->why, "ran over its budget of %llu instructions",
                 (unsigned long long)s->lim.instructions);
    luaL_error(L, "%s", s->why);
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct script *s = script_of(L);
    if (!s->over) {
        s->used += COUNT_EVERY;
        int64_t ms = (clock_mono_ns() - s->started) / 1000000;
        if (ms > SCRIPT_WALL_MS)
            snprintf(s->why, sizeof s->why, "ran for more than %d ms", SCRIPT_WALL_MS);
        if (s->used <= s->lim.instructions && ms <= SCRIPT_WALL_MS)
            return;
    }
    raise_over(L, s);
}

void script__charge(lua_State *L, uint64_t cost)
{
    struct script *s = script_of(L);
    s->used += cost;
    if (s->over || s->used > s->lim.instructions)
        raise_over(L, s);
}

/* ---- the sandbox ----------------------------------------------------------------- */

/* print: to stderr with the room's name, as the log's other lines. */
static int print(lua_State *L)
{
    struct script *s = script_of(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
        if (i < n)
            luaL_addchar(&b, '\t');
    }
    luaL_pushresult(&b);
    fprintf(stderr, "flockd: room %s: script %s: %s\n", s->env.room, s->src.name,
            lua_tostring(L, -1));
    return 0;
}

static void open_lib(lua_State *L, const char *name, lua_CFunction fn)
{
    luaL_requiref(L, name, fn, 1);
    lua_pop(L, 1);
}

static void drop(lua_State *L, const char *table, const char *name)
{
    if (table) {
        lua_getglobal(L, table);
        lua_pushnil(L);
        lua_setfield(L, -2, name);
        lua_pop(L, 1);
    } else {
        lua_pushnil(L);
        lua_setglobal(L, name);
    }
}

/* The libraries a script has: base, table, string, math, utf8; none of
 * what reaches files, the process, the debugger or code as text. */
static void open_sandbox(lua_State *L)
{
    open_lib(L, LUA_GNAME, luaopen_base);
    open_lib(L, LUA_TABLIBNAME, luaopen_table);
    open_lib(L, LUA_STRLIBNAME, luaopen_string);
    open_lib(L, LUA_MATHLIBNAME, luaopen_math);
    open_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
    static const char *const gone[] = {"dofile", "loadfile", "load", "require", "collectgarbage"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        drop(L, NULL, gone[i]);
    drop(L, LUA_STRLIBNAME, "dump");
    drop(L, LUA_MATHLIBNAME, "random");
    drop(L, LUA_MATHLIBNAME, "randomseed");
    lua_pushcfunction(L, print);
    lua_setglobal(L, "print");
}

/* The prelude, run while `next` is still there; its entry points kept. */
static int run_prelude(struct script *s, char *why)
{
    lua_State *L = s->L;
    if (luaL_loadbuffer(L, script_prelude, script_prelude_len, "=prelude") != LUA_OK ||
        lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
        snprintf(why, SCRIPT_REASON_MAX, "the prelude failed: %s", lua_tostring(L, -1));
        return PROTO_E_INTERNAL;
    }
    s->hooks_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    drop(L, NULL, "next");
    drop(L, NULL, "rawget");
    drop(L, NULL, "rawset");
    return 0;
}

/* ---- calls ------------------------------------------------------------------------ */

static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : "(an error that is not a string)", 1);
    return 1;
}

/* Stops the script: the reason's first line kept for admins, all of it
 * (the traceback) logged. */
static void disable(struct script *s, const char *reason)
{
    if (!s->running)
        return;
    s->running = false;
    if (s->why[0] == '\0' || !s->over)
        snprintf(s->why, sizeof s->why, "%.*s", (int)strcspn(reason, "\n"), reason);
    s->stats.errors++;
    fprintf(stderr, "flockd: room %s: script %s disabled: %s\n", s->env.room, s->src.name,
            s->over ? s->why : reason);
}

/* One call of a prelude entry point: its name, what pushes its arguments
 * (a count back; may raise), and the results it leaves. */
typedef int push_fn(lua_State *L, const void *arg);

struct hook_call {
    struct script *s;
    const char *name;
    push_fn *push;
    const void *arg;
    int nres;
};

/* Pushes the prelude's entry point `name`. */
static void push_hook(struct script *s, const char *name)
{
    lua_rawgeti(s->L, LUA_REGISTRYINDEX, s->hooks_ref);
    lua_getfield(s->L, -1, name);
    lua_remove(s->L, -2);
}

/* Everything a call allocates happens in here, protected. */
static int trampoline(lua_State *L)
{
    const struct hook_call *h = lua_touserdata(L, 1);
    lua_settop(L, 0);
    if (h->name)
        push_hook(h->s, h->name);
    else /* the script's own text, at its load */
        lua_getfield(L, LUA_REGISTRYINDEX, "flockd.chunk");
    int n = h->push ? h->push(L, h->arg) : 0;
    lua_call(L, n, h->nres);
    return h->nres;
}

/* Calls the entry point within the budget, leaving h->nres results; false
 * (nothing left) if it failed: the script is then disabled. */
static bool call(struct script *s, const struct hook_call *h)
{
    lua_State *L = s->L;
    int base = lua_gettop(L) + 1;
    lua_pushcfunction(L, traceback);
    lua_pushcfunction(L, trampoline);
    lua_pushlightuserdata(L, (void *)h);
    s->used = 0;
    s->over = false;
    s->in_hook = true;
    s->started = clock_mono_ns();
    lua_sethook(L, count_hook, LUA_MASKCOUNT, COUNT_EVERY);
    int rc = lua_pcall(L, 1, h->nres, base);
    lua_sethook(L, NULL, 0, 0);
    s->in_hook = false;
    double ms = (double)(clock_mono_ns() - s->started) / 1e6;
    s->stats.hooks++;
    s->stats.last_ms = ms;
    if (ms > s->stats.max_ms)
        s->stats.max_ms = ms;
    lua_remove(L, base);
    if (rc == LUA_OK)
        return true;
    char reason[SCRIPT_REASON_MAX];
    if (rc == LUA_ERRMEM)
        snprintf(reason, sizeof reason, "reached its memory cap of %zu bytes", s->lim.memory);
    else
        snprintf(reason, sizeof reason, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    disable(s, reason);
    return false;
}

static bool run(struct script *s, const char *name)
{
    if (!s->running)
        return false;
    struct hook_call h = {s, name, NULL, NULL, 0};
    return call(s, &h);
}

static void push_player(lua_State *L, const struct script_player *p)
{
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)p->id);
    lua_setfield(L, -2, "id");
    lua_pushinteger(L, p->team);
    lua_setfield(L, -2, "team");
    static const char *const roles[] = {"viewer", "player", "admin"};
    lua_pushstring(L, p->role >= 0 && p->role <= 2 ? roles[p->role] : "viewer");
    lua_setfield(L, -2, "role");
    lua_pushstring(L, p->name ? p->name : "");
    lua_setfield(L, -2, "name");
}

static int push_one_player(lua_State *L, const void *arg)
{
    push_player(L, arg);
    return 1;
}

struct command_args {
    const struct script_player *p;
    const cJSON *msg;
};

static int push_command(lua_State *L, const void *arg)
{
    const struct command_args *c = arg;
    push_player(L, c->p);
    script__push_cjson(L, c->msg);
    return 2;
}

struct saved_args {
    const uint8_t *buf;
    size_t len;
};

static int push_saved(lua_State *L, const void *arg)
{
    const struct saved_args *a = arg;
    script__push_saved(L, a->buf, a->len);
    return 1;
}

/* ---- life --------------------------------------------------------------------------- */

static bool restore(struct script *s, const uint8_t *saved, size_t len, char *why)
{
    if (len < 16) {
        snprintf(why, SCRIPT_REASON_MAX, "a saved state shorter than its header");
        return false;
    }
    uint64_t st = 0, inc = 0;
    for (int i = 7; i >= 0; i--) {
        st = st << 8 | saved[i];
        inc = inc << 8 | saved[8 + i];
    }
    s->rng = (struct pcg32){st, inc | 1u};
    struct saved_args a = {saved + 16, len - 16};
    struct hook_call h = {s, "restore", push_saved, &a, 0};
    if (!call(s, &h)) {
        snprintf(why, SCRIPT_REASON_MAX, "restoring its state: %.200s", s->why);
        return false;
    }
    return true;
}

struct script *script_create(const struct script_source *src, const struct script_env *env,
                             const struct script_limits *lim, const uint8_t *saved,
                             size_t saved_len, char *why)
{
    struct script *s = calloc(1, sizeof *s);
    if (!s || script_source_set(&s->src, src->name, src->text, src->len) < 0) {
        snprintf(why, SCRIPT_REASON_MAX, "out of memory");
        free(s);
        return NULL;
    }
    s->env = *env;
    s->lim.instructions = lim && lim->instructions ? lim->instructions : SCRIPT_INSTRUCTIONS;
    s->lim.memory = lim && lim->memory ? lim->memory : SCRIPT_MEMORY;
    pcg32_seed(&s->rng, env->seed, src->hash);
    s->running = true;
    s->L = lua_newstate(allocate, s);
    if (!s->L) {
        snprintf(why, SCRIPT_REASON_MAX, "out of memory");
        script_destroy(s);
        return NULL;
    }
    *(struct script **)lua_getextraspace(s->L) = s;
    open_sandbox(s->L);
    script__open_api(s->L);
    char chunk[SCRIPT_NAME_MAX + 8];
    snprintf(chunk, sizeof chunk, "=%s.lua", src->name);
    bool ok = run_prelude(s, why) == 0;
    if (ok && luaL_loadbufferx(s->L, src->text, src->len, chunk, "t") != LUA_OK) {
        snprintf(why, SCRIPT_REASON_MAX, "%s", lua_tostring(s->L, -1));
        ok = false;
    } else if (ok) {
        lua_setfield(s->L, LUA_REGISTRYINDEX, "flockd.chunk");
        struct hook_call h = {s, NULL, NULL, NULL, 0};
        if (!call(s, &h)) {
            snprintf(why, SCRIPT_REASON_MAX, "%s", s->why);
            ok = false;
        }
    }
    if (ok && saved)
        ok = restore(s, saved, saved_len, why);
    if (!ok) {
        script_destroy(s);
        return NULL;
    }
    s->stats.errors = 0;
    return s;
}

void script_destroy(struct script *s)
{
    if (!s)
        return;
    if (s->L)
        lua_close(s->L);
    script_source_free(&s->src);
    free(s);
}

bool script_start(struct script *s)
{
    return run(s, "start");
}

bool script_tick(struct script *s)
{
    return run(s, "tick");
}

bool script_player_event(struct script *s, enum script_event ev, const struct script_player *p)
{
    if (!s->running || ev == SCRIPT_COMMAND)
        return s->running;
    struct hook_call h = {s, ev == SCRIPT_JOIN ? "join" : "leave", push_one_player, p, 0};
    return call(s, &h);
}

int script_command(struct script *s, const struct script_player *p, const char *json, size_t len,
                   char *why)
{
    if (!s->running) {
        snprintf(why, SCRIPT_REASON_MAX, "the room's script is disabled: %.200s", s->why);
        return PROTO_E_REFUSED;
    }
    cJSON *msg = cJSON_ParseWithLength(json, len);
    if (!msg) {
        snprintf(why, SCRIPT_REASON_MAX, "not JSON");
        return PROTO_E_BAD_ARG;
    }
    struct command_args a = {p, msg};
    struct hook_call h = {s, "command", push_command, &a, 2};
    bool ok = call(s, &h);
    cJSON_Delete(msg);
    if (!ok) {
        snprintf(why, SCRIPT_REASON_MAX, "the room's script failed: %.200s", s->why);
        return PROTO_E_REFUSED;
    }
    lua_State *L = s->L;
    bool refused = lua_toboolean(L, -2) == 0 && !lua_isnil(L, -2);
    if (refused) {
        const char *r = lua_tostring(L, -1);
        snprintf(why, SCRIPT_REASON_MAX, "%s", r ? r : "refused by the room's script");
    }
    lua_pop(L, 2);
    return refused ? PROTO_E_REFUSED : 0;
}

void script_end(struct script *s)
{
    run(s, "finish");
}

bool script_is_reloadable(struct script *s)
{
    if (!s->running)
        return true;
    struct hook_call h = {s, "reloadable", NULL, NULL, 1};
    if (!call(s, &h))
        return true;
    bool yes = lua_toboolean(s->L, -1);
    lua_pop(s->L, 1);
    return yes;
}

int script_save(struct script *s, uint8_t **out, char *why)
{
    lua_State *L = s->L;
    *out = NULL;
    struct hook_call h = {s, "save", NULL, NULL, 1};
    bool was = s->running;
    s->running = true; /* a disabled script's state is still saved as it was */
    bool ok = call(s, &h);
    s->running = was;
    if (!ok) {
        snprintf(why, SCRIPT_REASON_MAX, "saving its state: %.200s", s->why);
        return PROTO_E_INTERNAL;
    }
    uint8_t *body;
    int n = script__encode(L, -1, SCRIPT_STATE_MAX - 16, &body, why, SCRIPT_REASON_MAX);
    lua_pop(L, 1);
    if (n < 0)
        return n;
    uint8_t *buf = malloc((size_t)n + 16);
    if (!buf) {
        free(body);
        return PROTO_E_INTERNAL;
    }
    for (int i = 0; i < 8; i++) {
        buf[i] = (uint8_t)(s->rng.state >> (8 * i));
        buf[8 + i] = (uint8_t)(s->rng.inc >> (8 * i));
    }
    memcpy(buf + 16, body, (size_t)n);
    free(body);
    *out = buf;
    return n + 16;
}

bool script_is_running(const struct script *s, char *why, size_t cap)
{
    if (why && cap)
        snprintf(why, cap, "%s", s->running ? "" : s->why);
    return s->running;
}

void script_stats(const struct script *s, struct script_stats *out)
{
    *out = s->stats;
    out->memory = s->memory;
}

const struct script_source *script_source(const struct script *s)
{
    return &s->src;
}
