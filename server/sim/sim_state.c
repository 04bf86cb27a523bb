/*
 * sim_state.c — a world's state to bytes and back (see sim_state.h; the
 * layout is server/store/FILES.md §3).
 *
 * Encoding writes fields in order through a cursor; the boids' arrays are
 * copied whole on little-endian hosts. Decoding runs the same layout twice:
 * a check pass over the bytes alone (every count, value and order), then,
 * only if all of it passed, a write pass into the world.
 */
#include "sim_state.h"

#include "bytes.h"
#include "params.h"
#include "sim_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t MAGIC[4] = {'F', 'K', 'S', 'W'};

#define HEADER_V1    88 /* version 1: no boid ids */
#define HEADER_BYTES 96 /* version 2: the next boid id at 88, then 4 bytes zero */
#define TARGET_BYTES 9
#define OBST_BYTES   16
#define BOID_V1      17  /* version 1: x, y, vx, vy as f32 and the group */
#define BOID_BYTES   21  /* version 2: and the id, u32 */
#define BOID_SQUAD   5   /* version 3, when a group has squads: u8 squad, u32 slot a boid */
#define SQUAD_BYTES  192 /* one squad's record */
#define SQUAD_GROUP  (1 + SIM_SQUADS * SQUAD_BYTES) /* a group's: u8 group, its 32 records */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_IS_LE 1
#else
#define HOST_IS_LE 0
#endif

/* ---- little-endian fields ------------------------------------------------ */

static void put_u32s(uint8_t *p, const uint32_t *a, size_t n)
{
    if (HOST_IS_LE) {
        memcpy(p, a, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        bytes_le_put(p + 4 * i, a[i], 4);
}

static void get_u32s(uint32_t *a, const uint8_t *p, size_t n)
{
    if (HOST_IS_LE) {
        memcpy(a, p, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (uint32_t)bytes_le_get(p + 4 * i, 4);
}

static void put_f32s(uint8_t *p, const float *a, size_t n)
{
    if (HOST_IS_LE) {
        memcpy(p, a, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        bytes_le_put_f32(p + 4 * i, a[i]);
}

static void get_f32s(float *a, const uint8_t *p, size_t n)
{
    if (HOST_IS_LE) {
        memcpy(a, p, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = bytes_le_get_f32(p + 4 * i);
}

/* ---- sizes ------------------------------------------------------------------ */

/* Bytes of the parameter names table: per registry entry a length byte
 * and the name. */
static size_t names_bytes_of(size_t count)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += 1 + strlen(sim_param_at(i)->name);
    return n;
}

static size_t names_bytes(void)
{
    return names_bytes_of(sim_param_count());
}

/* The squads section: for `groups` groups that have had squads. */
static size_t squads_bytes(size_t boids, size_t groups)
{
    return groups ? boids * BOID_SQUAD + groups * SQUAD_GROUP : 0;
}

static size_t size_for(size_t boids, size_t obstacles, size_t squad_groups)
{
    return HEADER_BYTES + names_bytes() + (size_t)SIM_GROUPS * sim_param_count() * 4 +
           (size_t)SIM_GROUPS * TARGET_BYTES + obstacles * OBST_BYTES + boids * BOID_BYTES +
           squads_bytes(boids, squad_groups);
}

static bool has_squads(const uint64_t *used, int g)
{
    return used[g / 64] >> (g % 64) & 1u;
}

static size_t squad_groups(const struct sim_state_ref *s)
{
    size_t n = 0;
    for (int g = 0; g < SIM_GROUPS; g++)
        n += has_squads(s->squads_used, g);
    return n;
}

size_t sim_state_size(const struct sim_world *w)
{
    struct sim_state_ref s;
    sim__state_ref((struct sim_world *)w, &s); /* read only */
    return size_for(*s.count, *s.obstacle_count, squad_groups(&s));
}

size_t sim_state_max_size(uint32_t capacity, uint32_t max_obstacles)
{
    return size_for(capacity, max_obstacles, SIM_GROUPS);
}

/* ---- encode ----------------------------------------------------------------- */

static uint8_t *encode_header(const struct sim_state_ref *s, uint8_t *p)
{
    const struct sim_config *c = s->cfg;
    memset(p, 0, HEADER_BYTES);
    memcpy(p, MAGIC, 4);
    bytes_le_put(p + 4, SIM_STATE_VERSION, 2);
    bytes_le_put(p + 6, sim_param_count(), 2);
    bytes_le_put_f32(p + 8, c->width);
    bytes_le_put_f32(p + 12, c->height);
    bytes_le_put_f32(p + 16, c->dt);
    bytes_le_put(p + 20, c->capacity, 4);
    bytes_le_put(p + 24, c->max_obstacles, 4);
    p[28] = (uint8_t)c->edges;
    p[29] = c->brute_force ? 1 : 0;
    bytes_le_put_f32(p + 32, c->edge_margin);
    bytes_le_put(p + 36, *s->epoch, 4);
    bytes_le_put(p + 40, c->seed, 8);
    bytes_le_put(p + 48, *s->tick, 8);
    bytes_le_put(p + 56, s->rng->state, 8);
    bytes_le_put(p + 64, s->rng->inc, 8);
    bytes_le_put(p + 72, *s->count, 4);
    bytes_le_put(p + 76, *s->next_obstacle_id, 4);
    bytes_le_put(p + 80, *s->obstacle_count, 4);
    bytes_le_put(p + 84, names_bytes(), 4);
    bytes_le_put(p + 88, *s->next_id, 4);
    bytes_le_put(p + 92, squad_groups(s), 4);
    return p + HEADER_BYTES;
}

static uint8_t *encode_params(const struct sim_state_ref *s, uint8_t *p)
{
    for (size_t i = 0; i < sim_param_count(); i++) {
        const char *name = sim_param_at(i)->name;
        size_t len = strlen(name);
        *p++ = (uint8_t)len;
        memcpy(p, name, len);
        p += len;
    }
    for (int g = 0; g < SIM_GROUPS; g++)
        for (size_t i = 0; i < sim_param_count(); i++, p += 4)
            bytes_le_put_f32(p, *sim_param_field(&s->params[g], sim_param_at(i)));
    return p;
}

static uint8_t *encode_things(const struct sim_state_ref *s, uint8_t *p)
{
    for (int g = 0; g < SIM_GROUPS; g++, p += TARGET_BYTES) {
        p[0] = s->targets[g].active;
        bytes_le_put_f32(p + 1, s->targets[g].x);
        bytes_le_put_f32(p + 5, s->targets[g].y);
    }
    for (uint32_t k = 0; k < *s->obstacle_count; k++, p += OBST_BYTES) {
        const struct sim_obstacle *o = &s->obstacles[k];
        bytes_le_put(p, o->id, 4);
        bytes_le_put_f32(p + 4, o->x);
        bytes_le_put_f32(p + 8, o->y);
        bytes_le_put_f32(p + 12, o->r);
    }
    size_t n = *s->count;
    put_f32s(p, s->x, n);
    put_f32s(p + 4 * n, s->y, n);
    put_f32s(p + 8 * n, s->vx, n);
    put_f32s(p + 12 * n, s->vy, n);
    memcpy(p + 16 * n, s->group, n);
    put_u32s(p + 17 * n, s->id, n);
    return p + BOID_BYTES * n;
}

/* One squad's record, field by field (FILES.md §3). */
static uint8_t *put_squad(const struct sim_squad *q, uint8_t *p)
{
    const float f[] = {q->spacing, q->ax, q->ay,  q->facing, q->avx, q->avy,
                       q->cx,      q->cy, q->err, q->gx,     q->gy};
    bytes_le_put(p, q->units, 4);
    p[4] = q->order, p[5] = q->shape, p[6] = q->nway, p[7] = q->next;
    put_f32s(p + 8, &q->way[0][0], 2 * SIM_WAYPOINTS);
    put_f32s(p + 136, f, 11);
    bytes_le_put(p + 180, q->follow_squad, 2);
    bytes_le_put(p + 182, q->follow_group, 2);
    bytes_le_put(p + 184, q->follow_unit, 4);
    bytes_le_put(p + 188, q->flags, 4);
    return p + SQUAD_BYTES;
}

static void encode_squads(const struct sim_state_ref *s, uint8_t *p)
{
    if (!squad_groups(s))
        return;
    size_t n = *s->count;
    memcpy(p, s->squad, n);
    put_u32s(p + n, s->slot, n);
    p += BOID_SQUAD * n;
    for (int g = 0; g < SIM_GROUPS; g++) {
        if (!has_squads(s->squads_used, g))
            continue;
        *p++ = (uint8_t)g;
        for (int k = 1; k <= SIM_SQUADS; k++)
            p = put_squad(&s->squads[g][k], p);
    }
}

int sim_state_encode(const struct sim_world *w, uint8_t *buf, size_t cap)
{
    size_t need = sim_state_size(w);
    if (cap < need || need > INT32_MAX)
        return SIM_ECAPACITY;
    struct sim_state_ref s;
    sim__state_ref((struct sim_world *)w, &s); /* read only */
    uint8_t *p = encode_header(&s, buf);
    p = encode_params(&s, p);
    p = encode_things(&s, p);
    encode_squads(&s, p);
    return (int)need;
}

/* ---- check ------------------------------------------------------------------- */

/* A refusal: the code, with its reason in *why. */
static int refuse(const char **why, int code, const char *reason)
{
    if (why)
        *why = reason;
    return code;
}

/* The header's fields into *info and where the sections start. */
struct layout {
    struct sim_state_info info;
    unsigned version;
    size_t params_in;    /* the state's parameters: the registry's first params_in */
    size_t squad_groups; /* groups with squad records (version 3) */
    uint64_t rng_state, rng_inc;
    size_t names, params, targets, obstacles, boids, squads, end;
};

static int read_header(const uint8_t *b, size_t len, struct layout *l, const char **why)
{
    if (len < HEADER_V1 || memcmp(b, MAGIC, 4) != 0)
        return refuse(why, SIM_EINVAL, "not a world state");
    l->version = (unsigned)bytes_le_get(b + 4, 2);
    if (l->version < 1 || l->version > SIM_STATE_VERSION)
        return refuse(why, SIM_EINVAL, "a world state of another version");
    if (l->version > 1 && len < HEADER_BYTES)
        return refuse(why, SIM_EINVAL, "not a world state");
    l->squad_groups = l->version > 2 ? (size_t)bytes_le_get(b + 92, 4) : 0;
    if ((l->version == 2 && bytes_le_get(b + 92, 4) != 0) || l->squad_groups > SIM_GROUPS)
        return refuse(why, SIM_EINVAL,
                      l->version == 2 ? "a world state with bad reserved bytes"
                                      : "a world state with squads of more groups than there are");
    /* A state of an older registry (a prefix of this one) loads; its
     * missing parameters take their defaults. check_params() compares the names. */
    l->params_in = (size_t)bytes_le_get(b + 6, 2);
    if (l->params_in < 1 || l->params_in > sim_param_count() ||
        bytes_le_get(b + 84, 4) != names_bytes_of(l->params_in))
        return refuse(why, SIM_EINVAL, "a world state with other flocking parameters");
    struct sim_config *c = &l->info.cfg;
    sim_default_config(c);
    c->width = bytes_le_get_f32(b + 8);
    c->height = bytes_le_get_f32(b + 12);
    c->dt = bytes_le_get_f32(b + 16);
    c->capacity = (uint32_t)bytes_le_get(b + 20, 4);
    c->max_obstacles = (uint32_t)bytes_le_get(b + 24, 4);
    c->edges = b[28] == 0 ? SIM_EDGES_WRAP : SIM_EDGES_CONTAIN;
    c->brute_force = b[29];
    c->edge_margin = bytes_le_get_f32(b + 32);
    c->seed = bytes_le_get(b + 40, 8);
    if (b[28] > 1 || b[29] > 1 || b[30] || b[31])
        return refuse(why, SIM_EINVAL, "a world state with bad flags");
    const char *bad = sim__config_error(c);
    if (bad)
        return refuse(why, SIM_EINVAL, bad);
    l->info.epoch = (uint32_t)bytes_le_get(b + 36, 4);
    l->info.tick = bytes_le_get(b + 48, 8);
    l->rng_state = bytes_le_get(b + 56, 8);
    l->rng_inc = bytes_le_get(b + 64, 8);
    l->info.count = (uint32_t)bytes_le_get(b + 72, 4);
    l->info.next_obstacle_id = (uint32_t)bytes_le_get(b + 76, 4);
    l->info.obstacle_count = (uint32_t)bytes_le_get(b + 80, 4);
    /* Version 1 had no ids: its boids take 1..n in their order. */
    l->info.next_id = l->version > 1 ? (uint32_t)bytes_le_get(b + 88, 4) : l->info.count + 1;
    return 0;
}

/* Where each section starts, once the counts are known to fit. */
static int lay_out(size_t len, struct layout *l, const char **why)
{
    const struct sim_state_info *in = &l->info;
    if (in->count > in->cfg.capacity)
        return refuse(why, SIM_ECAPACITY, "more boids than the world's capacity");
    if (in->obstacle_count > in->cfg.max_obstacles)
        return refuse(why, SIM_ECAPACITY, "more obstacles than the world holds");
    l->names = l->version > 1 ? HEADER_BYTES : HEADER_V1;
    l->params = l->names + names_bytes_of(l->params_in);
    l->targets = l->params + (size_t)SIM_GROUPS * l->params_in * 4;
    l->obstacles = l->targets + (size_t)SIM_GROUPS * TARGET_BYTES;
    l->boids = l->obstacles + (size_t)in->obstacle_count * OBST_BYTES;
    l->squads = l->boids + (size_t)in->count * (l->version > 1 ? BOID_BYTES : BOID_V1);
    l->end = l->squads + squads_bytes(in->count, l->squad_groups);
    if (len != l->end)
        return refuse(why, SIM_EINVAL,
                      len < l->end ? "the world state is cut short"
                                   : "the world state is too long");
    if (!(l->rng_inc & 1))
        return refuse(why, SIM_ERANGE, "the random stream's increment is even");
    return 0;
}

static int is_in_world(const struct sim_config *c, float x, float y)
{
    return isfinite(x) && isfinite(y) && x >= 0.0f && x <= c->width && y >= 0.0f && y <= c->height;
}

static int check_params(const uint8_t *b, const struct layout *l, const char **why)
{
    const uint8_t *p = b + l->names;
    for (size_t i = 0; i < l->params_in; i++) {
        const char *name = sim_param_at(i)->name;
        size_t n = strlen(name);
        if (p[0] != n || memcmp(p + 1, name, n) != 0)
            return refuse(why, SIM_EINVAL, "a world state with other flocking parameters");
        p += 1 + n;
    }
    for (int g = 0; g < SIM_GROUPS; g++)
        for (size_t i = 0; i < l->params_in; i++, p += 4)
            if (!sim_param_valid(sim_param_at(i), bytes_le_get_f32(p)))
                return refuse(why, SIM_ERANGE, "a parameter outside its range");
    return 0;
}

static int check_targets(const uint8_t *b, const struct layout *l, const char **why)
{
    const uint8_t *p = b + l->targets;
    for (int g = 0; g < SIM_GROUPS; g++, p += TARGET_BYTES) {
        float x = bytes_le_get_f32(p + 1), y = bytes_le_get_f32(p + 5);
        int ok = p[0] == 1
                     ? is_in_world(&l->info.cfg, x, y)
                     : p[0] == 0 && bytes_le_get(p + 1, 4) == 0 && bytes_le_get(p + 5, 4) == 0;
        if (!ok)
            return refuse(why, SIM_ERANGE, "a target outside the world or malformed");
    }
    return 0;
}

static int check_obstacles(const uint8_t *b, const struct layout *l, const char **why)
{
    const struct sim_config *c = &l->info.cfg;
    const uint8_t *p = b + l->obstacles;
    uint32_t last = 0;
    for (uint32_t k = 0; k < l->info.obstacle_count; k++, p += OBST_BYTES) {
        uint32_t id = (uint32_t)bytes_le_get(p, 4);
        float r = bytes_le_get_f32(p + 12);
        if (id <= last || id >= l->info.next_obstacle_id)
            return refuse(why, SIM_ERANGE, "obstacle ids out of order or not below the next id");
        if (!is_in_world(c, bytes_le_get_f32(p + 4), bytes_le_get_f32(p + 8)) || !(r >= 1.0f) ||
            r > 0.25f * fminf(c->width, c->height))
            return refuse(why, SIM_ERANGE, "an obstacle outside the world or of a bad radius");
        last = id;
    }
    if (l->info.next_obstacle_id == 0)
        return refuse(why, SIM_ERANGE, "the next obstacle id is 0");
    return 0;
}

/* Ascending, for qsort. */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The ids of a version 2 state: each in 1..next_id - 1 (any, if the ids
 * ran out: next_id 0), none twice. Sorts a copy to find repeats. */
static int check_ids(const uint8_t *p, const struct layout *l, const char **why)
{
    size_t n = l->info.count;
    uint32_t next = l->info.next_id;
    uint32_t *ids = n ? malloc(n * sizeof *ids) : NULL;
    if (n && !ids)
        return refuse(why, SIM_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        ids[i] = (uint32_t)bytes_le_get(p + 4 * i, 4);
        if (ids[i] == 0 || (next != 0 && ids[i] >= next))
            rc = refuse(why, SIM_ERANGE, "a boid id of 0 or not below the next id");
    }
    if (rc == 0 && n > 1) {
        qsort(ids, n, sizeof *ids, cmp_u32);
        for (size_t i = 1; i < n && rc == 0; i++)
            if (ids[i] == ids[i - 1])
                rc = refuse(why, SIM_ERANGE, "two boids with one id");
    }
    free(ids);
    return rc;
}

static int check_boids(const uint8_t *b, const struct layout *l, const char **why)
{
    size_t n = l->info.count;
    const uint8_t *x = b + l->boids, *y = x + 4 * n, *vx = y + 4 * n, *vy = vx + 4 * n;
    const uint8_t *g = vy + 4 * n;
    for (size_t i = 0; i < n; i++) {
        if (!is_in_world(&l->info.cfg, bytes_le_get_f32(x + 4 * i), bytes_le_get_f32(y + 4 * i)))
            return refuse(why, SIM_ERANGE, "a boid outside the world");
        float u = bytes_le_get_f32(vx + 4 * i), v = bytes_le_get_f32(vy + 4 * i);
        if (!(fabsf(u) <= SIM_STATE_MAX_V && fabsf(v) <= SIM_STATE_MAX_V))
            return refuse(why, SIM_ERANGE, "a boid's velocity is not finite or too large");
        if (i > 0 && g[i] < g[i - 1])
            return refuse(why, SIM_ERANGE, "boids not sorted by group");
    }
    if (l->version > 1)
        return check_ids(g + n, l, why);
    if (l->info.next_id == 0)
        return refuse(why, SIM_ERANGE, "a version 1 state of more boids than ids");
    return 0;
}

/* One squad's record (FILES.md §3): an empty one all zeros, a live one
 * with its units counted from the boids and every value in range. */
static bool is_squad_ok(const uint8_t *p, uint32_t units)
{
    if (bytes_le_get(p, 4) != units)
        return false;
    if (units == 0) {
        for (size_t k = 0; k < SQUAD_BYTES; k++)
            if (p[k])
                return false;
        return true;
    }
    uint8_t order = p[4], shape = p[5], nway = p[6], next = p[7];
    if (order >= SIM_ORDER_COUNT || shape >= SIM_SHAPE_COUNT || nway > SIM_WAYPOINTS ||
        (next >= nway && next != 0))
        return false;
    for (size_t k = 0; k < 2 * SIM_WAYPOINTS + 11; k++)
        if (!isfinite(bytes_le_get_f32(p + 8 + 4 * k)))
            return false;
    float spacing = bytes_le_get_f32(p + 136);
    return spacing >= 1.0f && spacing <= 200.0f && bytes_le_get(p + 180, 2) <= SIM_SQUADS &&
           bytes_le_get(p + 182, 2) < SIM_GROUPS && bytes_le_get(p + 188, 4) <= 3;
}

/* The squads of a version 3 state: each boid's squad in 0..32 and of a
 * group listed, the groups ascending, each record as is_squad_ok(). */
static int check_squads(const uint8_t *b, const struct layout *l, const char **why)
{
    size_t n = l->info.count, groups = l->squad_groups;
    if (groups == 0)
        return 0;
    const uint8_t *sq = b + l->squads, *grp = b + l->boids + 16 * n, *list = sq + BOID_SQUAD * n;
    int at[SIM_GROUPS]; /* each listed group's place in the list; -1: not listed */
    for (int g = 0; g < SIM_GROUPS; g++)
        at[g] = -1;
    for (size_t j = 0; j < groups; j++) {
        uint8_t g = list[j * SQUAD_GROUP];
        if (j > 0 && g <= list[(j - 1) * SQUAD_GROUP])
            return refuse(why, SIM_ERANGE, "squads' groups out of order");
        at[g] = (int)j;
    }
    uint32_t *units = calloc(groups * (SIM_SQUADS + 1), sizeof *units);
    if (!units)
        return refuse(why, SIM_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sq[i] > SIM_SQUADS || (sq[i] && at[grp[i]] < 0))
            rc = refuse(why, SIM_ERANGE, "a boid in a squad that is not there");
        else if (sq[i])
            units[(size_t)at[grp[i]] * (SIM_SQUADS + 1) + sq[i]]++;
    }
    for (size_t j = 0; j < groups && rc == 0; j++)
        for (int k = 1; k <= SIM_SQUADS && rc == 0; k++) {
            const uint8_t *p = list + j * SQUAD_GROUP + 1 + (size_t)(k - 1) * SQUAD_BYTES;
            if (!is_squad_ok(p, units[j * (SIM_SQUADS + 1) + (size_t)k]))
                rc = refuse(why, SIM_ERANGE, "a squad's record is malformed or miscounted");
        }
    free(units);
    return rc;
}

/* Every rule of sim_state.h on the bytes alone; fills *l. */
static int check_all(const uint8_t *buf, size_t len, struct layout *l, const char **why)
{
    int rc = read_header(buf, len, l, why);
    if (rc == 0)
        rc = lay_out(len, l, why);
    if (rc == 0)
        rc = check_params(buf, l, why);
    if (rc == 0)
        rc = check_targets(buf, l, why);
    if (rc == 0)
        rc = check_obstacles(buf, l, why);
    if (rc == 0)
        rc = check_boids(buf, l, why);
    if (rc == 0)
        rc = check_squads(buf, l, why);
    return rc;
}

int sim_state_check(const uint8_t *buf, size_t len, struct sim_state_info *info, const char **why)
{
    struct layout l;
    int rc = check_all(buf, len, &l, why);
    if (rc == 0 && info)
        *info = l.info;
    return rc;
}

/* ---- decode ------------------------------------------------------------------ */

static int same_config(const struct sim_config *a, const struct sim_config *b)
{
    return memcmp(&a->width, &b->width, 4) == 0 && memcmp(&a->height, &b->height, 4) == 0 &&
           memcmp(&a->dt, &b->dt, 4) == 0 && a->capacity == b->capacity &&
           a->max_obstacles == b->max_obstacles && a->edges == b->edges &&
           memcmp(&a->edge_margin, &b->edge_margin, 4) == 0 && a->seed == b->seed &&
           !a->brute_force == !b->brute_force;
}

static void write_params(const struct sim_state_ref *s, const uint8_t *b, const struct layout *l)
{
    const uint8_t *p = b + l->params;
    for (int g = 0; g < SIM_GROUPS; g++) {
        sim_params_default(&s->params[g]); /* what an older registry lacks */
        for (size_t i = 0; i < l->params_in; i++, p += 4)
            *sim_param_field(&s->params[g], sim_param_at(i)) = bytes_le_get_f32(p);
    }
    p = b + l->targets;
    for (int g = 0; g < SIM_GROUPS; g++, p += TARGET_BYTES)
        s->targets[g] = (struct sim_target){
            .active = p[0], .x = bytes_le_get_f32(p + 1), .y = bytes_le_get_f32(p + 5)};
    p = b + l->obstacles;
    for (uint32_t k = 0; k < l->info.obstacle_count; k++, p += OBST_BYTES)
        s->obstacles[k] = (struct sim_obstacle){.id = (uint32_t)bytes_le_get(p, 4),
                                                .x = bytes_le_get_f32(p + 4),
                                                .y = bytes_le_get_f32(p + 8),
                                                .r = bytes_le_get_f32(p + 12)};
}

static void write_boids(const struct sim_state_ref *s, const uint8_t *b, const struct layout *l)
{
    size_t n = l->info.count;
    const uint8_t *p = b + l->boids;
    get_f32s(s->x, p, n);
    get_f32s(s->y, p + 4 * n, n);
    get_f32s(s->vx, p + 8 * n, n);
    get_f32s(s->vy, p + 12 * n, n);
    memcpy(s->group, p + 16 * n, n);
    if (l->version > 1) {
        get_u32s(s->id, p + 17 * n, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        s->id[i] = (uint32_t)i + 1;
}

static void get_squad(struct sim_squad *q, const uint8_t *p)
{
    float f[11];
    q->units = (uint32_t)bytes_le_get(p, 4);
    q->order = p[4], q->shape = p[5], q->nway = p[6], q->next = p[7];
    get_f32s(&q->way[0][0], p + 8, 2 * SIM_WAYPOINTS);
    get_f32s(f, p + 136, 11);
    q->spacing = f[0], q->ax = f[1], q->ay = f[2], q->facing = f[3], q->avx = f[4];
    q->avy = f[5], q->cx = f[6], q->cy = f[7], q->err = f[8], q->gx = f[9], q->gy = f[10];
    q->follow_squad = (uint16_t)bytes_le_get(p + 180, 2);
    q->follow_group = (uint16_t)bytes_le_get(p + 182, 2);
    q->follow_unit = (uint32_t)bytes_le_get(p + 184, 4);
    q->flags = (uint32_t)bytes_le_get(p + 188, 4);
}

/* The state's squads replace the world's (none before version 3); every
 * group whose squads change hears of it (sim_squad_news). */
static void write_squads(const struct sim_state_ref *s, const uint8_t *b, const struct layout *l)
{
    size_t n = l->info.count;
    for (int g = 0; g < SIM_GROUPS; g++)
        if (has_squads(s->squads_used, g)) {
            memset(s->squads[g], 0, sizeof s->squads[g]);
            s->squad_news[g]++;
        }
    memset(s->squads_used, 0, SIM_GROUPS / 8);
    *s->squads_live = 0;
    memset(s->squad, 0, n);
    memset(s->slot, 0, n * sizeof *s->slot);
    if (l->squad_groups == 0)
        return;
    const uint8_t *p = b + l->squads;
    memcpy(s->squad, p, n);
    get_u32s(s->slot, p + n, n);
    p += BOID_SQUAD * n;
    for (size_t j = 0; j < l->squad_groups; j++) {
        int g = *p++;
        s->squads_used[g / 64] |= 1ull << (g % 64);
        s->squad_news[g]++;
        for (int k = 1; k <= SIM_SQUADS; k++, p += SQUAD_BYTES) {
            get_squad(&s->squads[g][k], p);
            *s->squads_live += s->squads[g][k].units > 0;
        }
    }
}

int sim_state_decode(struct sim_world *w, const uint8_t *buf, size_t len, const char **why)
{
    struct layout l;
    int rc = check_all(buf, len, &l, why);
    if (rc < 0)
        return rc;
    struct sim_state_ref s;
    sim__state_ref(w, &s);
    if (!same_config(&l.info.cfg, s.cfg))
        return refuse(why, SIM_EINVAL, "the state is of a world of another size or capacity");
    *s.tick = l.info.tick;
    *s.epoch = l.info.epoch;
    *s.count = l.info.count;
    s.rng->state = l.rng_state;
    s.rng->inc = l.rng_inc;
    *s.next_obstacle_id = l.info.next_obstacle_id;
    *s.next_id = l.info.next_id;
    *s.obstacle_count = l.info.obstacle_count;
    *s.stepped = 0;
    write_params(&s, buf, &l);
    write_boids(&s, buf, &l);
    write_squads(&s, buf, &l);
    return 0;
}

struct sim_world *sim_state_create(const uint8_t *buf, size_t len, const char **why)
{
    struct sim_state_info info;
    if (sim_state_check(buf, len, &info, why) < 0)
        return NULL;
    struct sim_world *w = sim_create(&info.cfg, why);
    if (w && sim_state_decode(w, buf, len, why) < 0) {
        sim_destroy(w);
        return NULL;
    }
    return w;
}
