/*
 * script_api.c — the `flock` table a room script acts through (README
 * "Writing a room script" is its reference). Queries run in C over the
 * whole world at once and hand Lua arrays, never one call per boid; each
 * call charges its work against the hook's budget.
 *
 * Bad arguments (a script's bug) raise a Lua error, which disables the
 * script; what the world refuses (no room left, no such squad) returns
 * nil and a reason, which the script may handle.
 */
#include "script_internal.h"

#include <lauxlib.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct sim_world *world_of(lua_State *L)
{
    return script_of(L)->env.world;
}

/* Memory for the call's own work, freed by Lua's collector after it (a
 * Lua error on the way leaks nothing); left on the stack. */
static void *scratch(lua_State *L, size_t bytes)
{
    return lua_newuserdatauv(L, bytes ? bytes : 1, 0);
}

static int fail(lua_State *L, int sim_rc)
{
    lua_pushnil(L);
    lua_pushstring(L, sim_strerror(sim_rc));
    return 2;
}

static int check_team(lua_State *L, int arg)
{
    lua_Integer t = luaL_checkinteger(L, arg);
    luaL_argcheck(L, t >= 0 && t < SIM_GROUPS, arg, "a team is 0..255");
    return (int)t;
}

static float check_float(lua_State *L, int arg)
{
    lua_Number v = luaL_checknumber(L, arg);
    luaL_argcheck(L, isfinite(v), arg, "not a finite number");
    return (float)v;
}

/* ---- time and chance -------------------------------------------------------------- */

static int api_tick(lua_State *L)
{
    struct sim_view v;
    sim_view(world_of(L), &v);
    lua_pushinteger(L, (lua_Integer)v.tick);
    return 1;
}

static int api_tick_hz(lua_State *L)
{
    lua_pushnumber(L, script_of(L)->env.tick_hz);
    return 1;
}

static int api_time(lua_State *L)
{
    struct sim_view v;
    sim_view(world_of(L), &v);
    lua_pushnumber(L, (double)v.tick / script_of(L)->env.tick_hz);
    return 1;
}

/* As math.random: [0, 1), or a whole number in [1, m] or [m, n]; from the
 * room's seed, the same on every replay. */
static int api_random(lua_State *L)
{
    struct pcg32 *r = &script_of(L)->rng;
    uint64_t bits = (uint64_t)pcg32_next(r) << 21 ^ (uint64_t)pcg32_next(r) >> 11;
    double u = (double)(bits & ((1ull << 53) - 1)) / 9007199254740992.0;
    if (lua_gettop(L) == 0) {
        lua_pushnumber(L, u);
        return 1;
    }
    lua_Integer lo = 1, hi = luaL_checkinteger(L, 1);
    if (lua_gettop(L) >= 2) {
        lo = hi;
        hi = luaL_checkinteger(L, 2);
    }
    luaL_argcheck(L, lo <= hi && hi - lo < (1ll << 52), 1, "an empty or too wide interval");
    lua_pushinteger(L, lo + (lua_Integer)(u * (double)(hi - lo + 1)));
    return 1;
}

static int api_world(lua_State *L)
{
    struct script *s = script_of(L);
    const struct sim_config *c = sim_config(s->env.world);
    lua_createtable(L, 0, 4);
    lua_pushnumber(L, c->width);
    lua_setfield(L, -2, "width");
    lua_pushnumber(L, c->height);
    lua_setfield(L, -2, "height");
    lua_pushstring(L, c->edges == SIM_EDGES_WRAP ? "wrap" : "contain");
    lua_setfield(L, -2, "edges");
    lua_pushinteger(L, s->env.max_teams);
    lua_setfield(L, -2, "teams");
    return 1;
}

/* ---- queries -------------------------------------------------------------------------- */

/* Squared distance, across the edges of a torus. */
static float dist2(const struct sim_config *c, float dx, float dy)
{
    if (c->edges == SIM_EDGES_WRAP) {
        dx = fabsf(dx);
        dy = fabsf(dy);
        dx = fminf(dx, c->width - dx);
        dy = fminf(dy, c->height - dy);
    }
    return dx * dx + dy * dy;
}

static void push_counts(lua_State *L, const uint32_t n[SIM_GROUPS], int teams)
{
    lua_createtable(L, teams, 0);
    for (int g = 1; g < SIM_GROUPS; g++)
        if (n[g] || g <= teams) {
            lua_pushinteger(L, n[g]);
            lua_rawseti(L, -2, g);
        }
}

/* flock.count([x, y, r]): units per team (a table by team), in the circle
 * or in the whole world. */
static int api_count(lua_State *L)
{
    struct sim_world *w = world_of(L);
    struct sim_view v;
    sim_view(w, &v);
    bool all = lua_isnoneornil(L, 1);
    float x = all ? 0 : check_float(L, 1), y = all ? 0 : check_float(L, 2);
    float r = all ? 0 : check_float(L, 3);
    script__charge(L, v.count / 8 + 1);
    uint32_t n[SIM_GROUPS] = {0};
    for (uint32_t i = 0; i < v.count; i++)
        if (all || dist2(sim_config(w), v.x[i] - x, v.y[i] - y) <= r * r)
            n[v.group[i]]++;
    push_counts(L, n, script_of(L)->env.max_teams);
    return 1;
}

/* flock.units(team [, x, y, r]): the ids of the team's units (in the circle). */
static int api_units(lua_State *L)
{
    struct sim_world *w = world_of(L);
    int team = check_team(L, 1);
    bool all = lua_isnoneornil(L, 2);
    float x = all ? 0 : check_float(L, 2), y = all ? 0 : check_float(L, 3);
    float r = all ? 0 : check_float(L, 4);
    struct sim_view v;
    sim_view(w, &v);
    script__charge(L, v.count / 8 + 1);
    lua_newtable(L);
    lua_Integer k = 0;
    for (uint32_t i = 0; i < v.count; i++)
        if (v.group[i] == team && (all || dist2(sim_config(w), v.x[i] - x, v.y[i] - y) <= r * r)) {
            lua_pushinteger(L, v.id[i]);
            lua_rawseti(L, -2, ++k);
        }
    script__charge(L, (uint64_t)k);
    return 1;
}

/* flock.centroid(team): x, y and the count of the team's units; nil if none. */
static int api_centroid(lua_State *L)
{
    int team = check_team(L, 1);
    struct sim_view v;
    sim_view(world_of(L), &v);
    script__charge(L, v.count / 8 + 1);
    double sx = 0, sy = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < v.count; i++)
        if (v.group[i] == team) {
            sx += v.x[i];
            sy += v.y[i];
            n++;
        }
    if (!n) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushnumber(L, sx / n);
    lua_pushnumber(L, sy / n);
    lua_pushinteger(L, n);
    return 3;
}

/* flock.nearest_enemy(team, x, y [, r]): the id, team and distance of the
 * unit of another team (not group 0) nearest the point; nil if none. */
static int api_nearest_enemy(lua_State *L)
{
    struct sim_world *w = world_of(L);
    int team = check_team(L, 1);
    float x = check_float(L, 2), y = check_float(L, 3);
    float r = lua_isnoneornil(L, 4) ? INFINITY : check_float(L, 4);
    struct sim_view v;
    sim_view(w, &v);
    script__charge(L, v.count / 8 + 1);
    float best = r * r;
    int64_t at = -1;
    for (uint32_t i = 0; i < v.count; i++) {
        if (v.group[i] == team || v.group[i] == 0)
            continue;
        float d = dist2(sim_config(w), v.x[i] - x, v.y[i] - y);
        if (d <= best) {
            best = d;
            at = i;
        }
    }
    if (at < 0) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, v.id[at]);
    lua_pushinteger(L, v.group[at]);
    lua_pushnumber(L, sqrt(best));
    return 3;
}

/* Units bucketed by cells of the query's radius. */
struct cells {
    uint32_t cols, rows;
    uint32_t *start; /* cols * rows + 1 */
    uint32_t *index; /* boids, by cell */
    uint16_t *team;  /* per cell: 0 no team's units, 1..255 one team's only, MIXED */
};

#define MIXED 0xffff

static uint32_t cell_of(const struct cells *c, const struct sim_config *cfg, float x, float y)
{
    uint32_t cx = (uint32_t)fminf(fmaxf(x / cfg->width * (float)c->cols, 0.0f), c->cols - 1.0f);
    uint32_t cy = (uint32_t)fminf(fmaxf(y / cfg->height * (float)c->rows, 0.0f), c->rows - 1.0f);
    return cy * c->cols + cx;
}

static void cells_build(lua_State *L, struct cells *c, const struct sim_config *cfg,
                        const struct sim_view *v, float r)
{
    c->cols = (uint32_t)fmaxf(1.0f, fminf(1024.0f, floorf(cfg->width / r)));
    c->rows = (uint32_t)fmaxf(1.0f, fminf(1024.0f, floorf(cfg->height / r)));
    size_t ncell = (size_t)c->cols * c->rows;
    c->start = scratch(L, (ncell + 1) * sizeof *c->start);
    c->index = scratch(L, v->count * sizeof *c->index);
    uint32_t *fill = scratch(L, ncell * sizeof *fill);
    c->team = scratch(L, ncell * sizeof *c->team);
    memset(c->start, 0, (ncell + 1) * sizeof *c->start);
    memset(fill, 0, ncell * sizeof *fill);
    memset(c->team, 0, ncell * sizeof *c->team);
    for (uint32_t i = 0; i < v->count; i++) {
        uint32_t k = cell_of(c, cfg, v->x[i], v->y[i]);
        c->start[k + 1]++;
        uint16_t g = v->group[i];
        if (g && c->team[k] != g)
            c->team[k] = c->team[k] ? MIXED : g;
    }
    for (size_t k = 0; k < ncell; k++)
        c->start[k + 1] += c->start[k];
    for (uint32_t i = 0; i < v->count; i++) {
        uint32_t k = cell_of(c, cfg, v->x[i], v->y[i]);
        c->index[c->start[k] + fill[k]++] = i;
    }
}

/* The cell dx, dy (-1..1) from cell k into *out: false past a contained
 * world's edge or for a cell already seen (a world of fewer than 3 cells
 * across). */
static bool near_cell(const struct cells *c, bool wrap, uint32_t k, int dx, int dy, uint32_t *out)
{
    int cx = (int)(k % c->cols), cy = (int)(k / c->cols);
    int x = cx + dx, y = cy + dy;
    if (wrap) {
        x = (x + (int)c->cols) % (int)c->cols;
        y = (y + (int)c->rows) % (int)c->rows;
    } else if (x < 0 || y < 0 || x >= (int)c->cols || y >= (int)c->rows) {
        return false;
    }
    if ((c->cols < 3 && dx > 0 && x == cx) || (c->rows < 3 && dy > 0 && y == cy))
        return false;
    *out = (uint32_t)y * c->cols + (uint32_t)x;
    return true;
}

/* True if a unit of another team than `own` is in the cells round cell k:
 * else nobody can outnumber boids of cell k. */
static bool is_contested(const struct cells *c, bool wrap, uint32_t k, int own)
{
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            uint32_t n;
            if (near_cell(c, wrap, k, dx, dy, &n) && c->team[n] != 0 && c->team[n] != own)
                return true;
        }
    return false;
}

/* The units of the cells round cell k, gathered side by side by team
 * (positions moved across a torus's edges next to cell k): each unit of
 * cell k counts one run per team, a loop the compiler vectorises. */
struct near {
    float *x, *y;
    uint32_t at[SIM_GROUPS + 1]; /* team g's run: [at[g], at[g] + len[g]) */
    uint32_t len[SIM_GROUPS];
    uint8_t teams[SIM_GROUPS]; /* the teams present, ascending */
    int nteams;
};

/* The cells round cell k (itself included) with the offsets that bring
 * their units next to it: how many (at most 9). */
struct near_cell_at {
    uint32_t cell;
    float ox, oy;
};

static int cells_round(const struct cells *c, const struct sim_config *cfg, uint32_t k,
                       struct near_cell_at out[9])
{
    int n = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            uint32_t m;
            if (!near_cell(c, cfg->edges == SIM_EDGES_WRAP, k, dx, dy, &m))
                continue;
            int cx = (int)(k % c->cols) + dx, cy = (int)(k / c->cols) + dy;
            out[n++] = (struct near_cell_at){.cell = m,
                                             .ox = cx < 0               ? -cfg->width
                                                   : cx >= (int)c->cols ? cfg->width
                                                                        : 0.0f,
                                             .oy = cy < 0               ? -cfg->height
                                                   : cy >= (int)c->rows ? cfg->height
                                                                        : 0.0f};
        }
    return n;
}

static void gather_near(const struct cells *c, const struct sim_config *cfg,
                        const struct sim_view *v, uint32_t k, struct near *out)
{
    struct near_cell_at round[9];
    int nr = cells_round(c, cfg, k, round);
    memset(out->len, 0, sizeof out->len);
    for (int q = 0; q < nr; q++)
        for (uint32_t j = c->start[round[q].cell]; j < c->start[round[q].cell + 1]; j++)
            out->len[v->group[c->index[j]]]++;
    out->nteams = 0;
    uint32_t at = 0;
    for (int g = 0; g < SIM_GROUPS; g++) {
        out->at[g] = at;
        at += out->len[g];
        if (out->len[g])
            out->teams[out->nteams++] = (uint8_t)g;
        out->len[g] = 0;
    }
    for (int q = 0; q < nr; q++)
        for (uint32_t j = c->start[round[q].cell]; j < c->start[round[q].cell + 1]; j++) {
            uint32_t b = c->index[j];
            uint32_t i = out->at[v->group[b]] + out->len[v->group[b]]++;
            out->x[i] = v->x[b] + round[q].ox;
            out->y[i] = v->y[b] + round[q].oy;
        }
}

/* How many of team g's gathered units are within r of (x, y). */
static uint32_t count_near(const struct near *nb, int g, float x, float y, float r)
{
    const float *px = nb->x + nb->at[g], *py = nb->y + nb->at[g];
    uint32_t n = 0, len = nb->len[g];
    float r2 = r * r;
    for (uint32_t j = 0; j < len; j++) {
        float dx = px[j] - x, dy = py[j] - y;
        n += dx * dx + dy * dy <= r2;
    }
    return n;
}

/*
 * flock.outnumbered(r, ratio [, least]): the units of teams (groups 1..)
 * that another team outnumbers within r: more than ratio times as many of
 * that team as of the unit's own (itself counted), and at least `least`
 * (default 1). Returns two arrays: the units' ids and, for each, the team
 * that outnumbers it most (the lower team on a tie).
 */
static int api_outnumbered(lua_State *L)
{
    struct sim_world *w = world_of(L);
    const struct sim_config *cfg = sim_config(w);
    float r = check_float(L, 1), ratio = check_float(L, 2);
    lua_Integer least = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, r > 0.0f, 1, "a radius > 0");
    luaL_argcheck(L, ratio >= 0.0f, 2, "a ratio >= 0");
    struct sim_view v;
    sim_view(w, &v);
    script__charge(L, (uint64_t)v.count * 4 + 1);
    struct cells c = {0};
    cells_build(L, &c, cfg, &v, r); /* four scratch blocks on the stack till the end */
    lua_newtable(L);
    lua_newtable(L);
    lua_Integer k = 0;
    uint64_t scanned = 0;
    struct near *nb = scratch(L, sizeof *nb);
    nb->x = scratch(L, v.count * sizeof(float));
    nb->y = scratch(L, v.count * sizeof(float));
    lua_rotate(L, -5, 3); /* the result tables on top again, the scratch under them */
    bool wrap = cfg->edges == SIM_EDGES_WRAP;
    for (uint32_t cell = 0; cell < c.cols * c.rows; cell++) {
        if (c.team[cell] == 0)
            continue;
        bool gathered = false;
        for (uint32_t j = c.start[cell]; j < c.start[cell + 1]; j++) {
            uint32_t i = c.index[j];
            int mine = v.group[i];
            if (mine == 0 || !is_contested(&c, wrap, cell, mine))
                continue;
            if (!gathered)
                gather_near(&c, cfg, &v, cell, nb);
            gathered = true;
            uint32_t own = count_near(nb, mine, v.x[i], v.y[i], r), top = 0;
            int by = 0;
            for (int t = 0; t < nb->nteams; t++) { /* ascending: the lower team wins a tie */
                int g = nb->teams[t];
                uint32_t n = g && g != mine ? count_near(nb, g, v.x[i], v.y[i], r) : 0;
                scanned += nb->len[g];
                if (n > top) {
                    top = n;
                    by = g;
                }
            }
            if (by && (lua_Integer)top >= least && (double)top > (double)ratio * own) {
                lua_pushinteger(L, v.id[i]);
                lua_rawseti(L, -3, ++k);
                lua_pushinteger(L, by);
                lua_rawseti(L, -2, k);
            }
        }
    }
    script__charge(L, scanned / 8 + (uint64_t)k);
    return 2;
}

/* ---- changes ----------------------------------------------------------------------- */

/* The ids in the table at arg into a scratch array (*n of them). */
static uint32_t *check_ids(lua_State *L, int arg, uint32_t *n)
{
    luaL_checktype(L, arg, LUA_TTABLE);
    lua_Integer len = luaL_len(L, arg);
    luaL_argcheck(L, len >= 0 && len <= 4194304, arg, "too many ids");
    script__charge(L, (uint64_t)len * 4 + 1);
    uint32_t *ids = scratch(L, (size_t)len * sizeof *ids);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, arg, i);
        int ok;
        lua_Integer id = lua_tointegerx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok || id < 1 || id > UINT32_MAX)
            luaL_error(L, "bad argument #%d: ids are whole numbers >= 1 (entry %d)", arg, (int)i);
        ids[i - 1] = (uint32_t)id;
    }
    *n = (uint32_t)len;
    return ids;
}

static int api_despawn(lua_State *L)
{
    uint32_t n;
    uint32_t *ids = check_ids(L, 1, &n);
    int rc = sim_remove_ids(world_of(L), ids, n);
    if (rc < 0)
        return fail(L, rc);
    lua_pushinteger(L, rc);
    return 1;
}

static int api_convert(lua_State *L)
{
    uint32_t n;
    int team = check_team(L, 2);
    struct sim_view v;
    sim_view(world_of(L), &v);
    script__charge(L, v.count / 4 + 1);
    uint32_t *ids = check_ids(L, 1, &n);
    int rc = sim_regroup_ids(world_of(L), ids, n, team);
    if (rc < 0)
        return fail(L, rc);
    lua_pushinteger(L, rc);
    return 1;
}

/* flock.spawn(team, n, x, y [, spread]): the first new id and the count. */
static int api_spawn(lua_State *L)
{
    struct sim_world *w = world_of(L);
    int team = check_team(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 0 && n <= 4194304, 2, "0..4194304 units");
    float x = check_float(L, 3), y = check_float(L, 4);
    float spread = lua_isnoneornil(L, 5) ? 40.0f : check_float(L, 5);
    script__charge(L, (uint64_t)n * 4 + 1);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t first = v.next_id;
    int rc = sim_spawn(w, (uint32_t)n, team, x, y, spread);
    if (rc < 0)
        return fail(L, rc);
    lua_pushinteger(L, first);
    lua_pushinteger(L, rc);
    return 2;
}

static int api_seek(lua_State *L)
{
    int team = check_team(L, 1);
    int rc = lua_isnoneornil(L, 2)
                 ? sim_target_clear(world_of(L), team)
                 : sim_target_set(world_of(L), team, check_float(L, 2), check_float(L, 3));
    if (rc < 0)
        return fail(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

/* flock.params(team, {name = value, ...}): every value or none. */
static int api_params(lua_State *L)
{
    struct sim_world *w = world_of(L);
    int team = check_team(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct sim_params saved = *sim_group_params(w, team);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        int ok = 0;
        lua_Number val = lua_tonumberx(L, -1, &ok);
        int rc = name && ok ? sim_param_set(w, team, name, (float)val) : SIM_EINVAL;
        lua_pop(L, 1);
        if (rc < 0) {
            for (size_t k = 0; k < sim_param_count(); k++) { /* none of them, then */
                const struct sim_param_desc *d = sim_param_at(k);
                sim_param_set(w, team, d->name, *sim_param_field(&saved, d));
            }
            lua_pop(L, 1);
            lua_pushnil(L);
            lua_pushfstring(L, "%s: %s", name ? name : "(a key that is not a name)",
                            sim_strerror(rc));
            return 2;
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

static const char *const order_names[] = {"none", "move", "patrol", "follow", "hold", "stop", NULL};
static const char *const shape_names[] = {"none", "line", "column", "wedge", "box", NULL};

static int check_squad(lua_State *L, int arg)
{
    lua_Integer k = luaL_checkinteger(L, arg);
    luaL_argcheck(L, k >= 1 && k <= SIM_SQUADS, arg, "a squad is 1..32");
    return (int)k;
}

/* Waypoints {{x, y}, ...} of the order table at arg, field "to". */
static void read_way(lua_State *L, int arg, struct sim_order_args *o)
{
    if (lua_getfield(L, arg, "to") != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    lua_Integer n = luaL_len(L, -1);
    luaL_argcheck(L, n >= 0 && n <= SIM_WAYPOINTS, arg, "1..16 waypoints");
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        o->way[o->nway][0] = (float)luaL_checknumber(L, -2);
        o->way[o->nway++][1] = (float)luaL_checknumber(L, -1);
        lua_pop(L, 3);
    }
    lua_pop(L, 1);
}

/* flock.order(team, squad, {what = "move", to = {{x, y}, ...}, queue = b,
 * squad_of = k, unit = id}). */
static int api_order(lua_State *L)
{
    int team = check_team(L, 1), squad = check_squad(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    struct sim_order_args o = {0};
    lua_getfield(L, 3, "what");
    o.order = (enum sim_order)luaL_checkoption(L, -1, NULL, order_names);
    lua_pop(L, 1);
    read_way(L, 3, &o);
    lua_getfield(L, 3, "queue");
    o.queue = lua_toboolean(L, -1);
    lua_getfield(L, 3, "squad_of");
    o.follow_squad = (int)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 3, "unit");
    o.follow_unit = (uint32_t)luaL_optinteger(L, -1, 0);
    lua_pop(L, 3);
    int rc = sim_order(world_of(L), team, squad, &o);
    if (rc < 0)
        return fail(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

/* flock.select(team, squad, ids): the ids (up to 256) into the squad; its number. */
static int api_select(lua_State *L)
{
    int team = check_team(L, 1);
    lua_Integer squad = luaL_checkinteger(L, 2);
    uint32_t n;
    uint32_t *ids = check_ids(L, 3, &n);
    struct sim_selection sel = {.by = SIM_SELECT_IDS, .ids = ids, .n = n};
    int rc = n > SIM_SELECT_MAX ? SIM_ERANGE : sim_select(world_of(L), team, (int)squad, &sel);
    if (rc < 0)
        return fail(L, rc);
    lua_pushinteger(L, rc);
    return 1;
}

static int api_formation(lua_State *L)
{
    int team = check_team(L, 1), squad = check_squad(L, 2);
    int shape = luaL_checkoption(L, 3, NULL, shape_names);
    float spacing = lua_isnoneornil(L, 4) ? 0.0f : check_float(L, 4);
    int rc = sim_formation(world_of(L), team, squad, (enum sim_shape)shape, spacing);
    if (rc < 0)
        return fail(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

static int api_obstacle_add(lua_State *L)
{
    int64_t id =
        sim_obstacle_add(world_of(L), check_float(L, 1), check_float(L, 2), check_float(L, 3));
    if (id < 0)
        return fail(L, (int)id);
    lua_pushinteger(L, id);
    return 1;
}

static int api_obstacle_remove(lua_State *L)
{
    lua_Integer id = luaL_checkinteger(L, 1);
    int rc =
        id >= 1 && id <= UINT32_MAX ? sim_obstacle_remove(world_of(L), (uint32_t)id) : SIM_ENOENT;
    if (rc < 0)
        return fail(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

static int api_obstacle_clear(lua_State *L)
{
    sim_obstacle_clear(world_of(L));
    return 0;
}

/* flock.publish(state [, team]): the state as JSON to everyone, or to the
 * team's player (and admins). */
static int api_publish(lua_State *L)
{
    struct script *s = script_of(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    int team = lua_isnoneornil(L, 2) ? 0 : check_team(L, 2);
    char *json, why[SCRIPT_REASON_MAX];
    int n = script__to_json(L, 1, SCRIPT_PUBLISH_MAX, &json, why, sizeof why);
    if (n < 0)
        return luaL_error(L, "publish: %s", why);
    if (s->env.publish)
        s->env.publish(s->env.arg, team, json, (size_t)n);
    free(json);
    script__charge(L, (uint64_t)n / 4 + 1);
    return 0;
}

void script__open_api(lua_State *L)
{
    static const luaL_Reg api[] = {
        {"tick", api_tick},
        {"tick_hz", api_tick_hz},
        {"time", api_time},
        {"random", api_random},
        {"world", api_world},
        {"count", api_count},
        {"units", api_units},
        {"centroid", api_centroid},
        {"nearest_enemy", api_nearest_enemy},
        {"outnumbered", api_outnumbered},
        {"despawn", api_despawn},
        {"convert", api_convert},
        {"spawn", api_spawn},
        {"seek", api_seek},
        {"params", api_params},
        {"order", api_order},
        {"select", api_select},
        {"formation", api_formation},
        {"obstacle_add", api_obstacle_add},
        {"obstacle_remove", api_obstacle_remove},
        {"obstacle_clear", api_obstacle_clear},
        {"publish", api_publish},
        {NULL, NULL},
    };
    luaL_newlib(L, api);
    lua_setglobal(L, "flock");
    lua_getglobal(L, "flock");
    lua_getglobal(L, "print");
    lua_setfield(L, -2, "log");
    lua_pop(L, 1);
}
