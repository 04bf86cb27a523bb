/*
 * sim.c — world storage, rules and integration (see sim.h for contracts).
 *
 * Layout: one allocation per world holds every array. Canonical boid
 * arrays (x, y, vx, vy, group) are in stable boid order. Each step copies
 * positions, unit headings and groups into cell-sorted scratch arrays so
 * the neighbour scan reads contiguous memory; then, a slice of sorted slots
 * at a time, it scans their neighbourhoods, turns the sums into steering
 * and moves those boids in the canonical arrays. What lives per boid is
 * the state, the sorted copies and the grid's order; the sums and forces
 * live per slice.
 */
#include "sim.h"

#include "grid.h"
#include "squad.h"
#include "rng.h"
#include "sim_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(_Alignof(max_align_t) >= 16, "calloc's blocks hold the arrays' 16-byte alignment");

#define PI_F 3.14159265358979f

/* A cell's 3 x 3 neighbourhood is copied here before its boids scan it;
 * blocks with more candidates are scanned in place. */
#define SIM_GATHER_MAX 2048

#define SIM_GATHER_PAD 16 /* gathers are padded to a multiple of this */
#define SIM_CHUNK      8  /* gathers copy runs in chunks of this many floats */
#define SIM_PREFETCH   16 /* the sorted copy prefetches this many slots ahead */

/* The sums of one boid's neighbour scan, in a lane's sum[] arrays. */
enum sum_field { SUM_SEP_X, SUM_SEP_Y, SUM_ALI_X, SUM_ALI_Y, SUM_COH_X, SUM_COH_Y, SUM_NALL };
#define SIM_SUMS 7 /* neighbourhood sums per boid: enum sum_field */

/* Padding slots sit this far away: never neighbours, and every product in
 * the scan stays finite (1e18^2 < FLT_MAX) so masks zero them exactly. */
#define SIM_FAR 1e18f

/* The candidates of one cell's block: five arrays (x, y, ux, uy, g) one
 * after the other, each as long as the block needs (gather_block()), so a
 * small block touches a page, not five; gathers hold at most
 * SIM_GATHER_MAX - SIM_GATHER_PAD, so whole chunks always fit. */
struct gather {
    float mem[5 * SIM_GATHER_MAX];
};

/* Steering runs over a part's sorted slots a slice of this many at a time:
 * the scan's sums, each boid's own velocity and its force live only as
 * long as their slice, in the lane's buffers, not once per boid. A
 * multiple of SIM_CUT (see there), so a slice's vectorised loops put each
 * slot in a vector or the scalar tail as a loop over the whole part would. */
#define SIM_SLICE 128

/* What one part of the steering works in: its gather buffer, the slice's
 * sums and motion (index: slot - the slice's first), and the neighbours
 * its boids saw in this step. */
struct lane {
    struct gather gather;
    float sum[SIM_SUMS][SIM_SLICE]; /* indexed by enum sum_field */
    float vx[SIM_SLICE], vy[SIM_SLICE];
    float fx[SIM_SLICE], fy[SIM_SLICE];
    uint64_t neighbours;
};

struct sim_world {
    struct sim_config cfg;
    uint64_t tick;
    uint32_t epoch;
    uint32_t count;
    struct pcg32 rng;

    float *x, *y, *vx, *vy;
    uint8_t *group;
    uint32_t *id;     /* each boid's id: 1, 2, ... in spawn order, never reused */
    uint32_t next_id; /* the id the next boid spawned gets; 0: ids are used up */
    float *fx, *fy;   /* steering of the last step, boid order: cfg.keep_forces only */
    int stepped;
    uint64_t neighbours;    /* neighbours the boids of the last step saw, summed */
    uint32_t stepped_count; /* the boids of the last step */

    /* Cell-sorted scratch, rebuilt at the start of each step. sx's memory
     * is also the grid's per-boid cells, which are read last by the
     * counting sort, before sx is written. skey is each slot's kin key as
     * a float (kin_key()): the neighbour scan compares it in its lanes. */
    float *sx, *sy, *sux, *suy, *skey;
    uint8_t *sg;
    struct grid grid;
    float grid_cell; /* min cell size the grid was laid out for */

    float cos_sq[SIM_GROUPS];                 /* per group: c*|c|, c = cos(fov/2); -1: sees all */
    float vmax[SIM_GROUPS], vmin[SIM_GROUPS]; /* per group speed limits */
    float fmax[SIM_GROUPS], wali[SIM_GROUPS];
    float ksep[SIM_GROUPS], kcoh[SIM_GROUPS]; /* per group rule gains (flock_rules) */
    int extras;         /* targets, obstacles or walls: steering needs the scalar pass */
    struct lane *lanes; /* SIM_PARTS of them: one per part of the steering */

    struct sim_obstacle *obstacles;
    uint32_t obstacle_count;
    uint32_t next_obstacle_id;

    struct sim_target targets[SIM_GROUPS];
    struct sim_params params[SIM_GROUPS];

    /* Squads (squad.h): each boid's squad and slot, boid order; the
     * records; and the step's scratch. */
    uint8_t *squad;
    uint32_t *slot;
    struct sim_squad (*squads)[SIM_SQUADS + 1];
    struct squad_acc (*squad_acc)[SIM_SQUADS + 1];
    struct squad_key *squad_keys;
    uint32_t squad_news[SIM_GROUPS];
    uint32_t squads_live;
    uint64_t squads_used[SIM_GROUPS / 64];
    int pulls; /* groups flee or pursue this step: the steering looks around */
};

const char *sim_strerror(int err)
{
    switch (err) {
    case SIM_OK:
        return "ok";
    case SIM_EINVAL:
        return "invalid argument";
    case SIM_ERANGE:
        return "value out of range";
    case SIM_ECAPACITY:
        return "capacity exceeded";
    case SIM_ENOENT:
        return "no such obstacle";
    case SIM_ENOMEM:
        return "out of memory";
    case SIM_EOTHER:
        return "a unit of another group";
    case SIM_EEMPTY:
        return "nothing selected";
    default:
        return "unknown error";
    }
}

void sim_default_config(struct sim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->width = 1600.0f;
    cfg->height = 1000.0f;
    cfg->dt = 1.0f / 60.0f;
    cfg->capacity = 16384;
    cfg->max_obstacles = 64;
    cfg->edges = SIM_EDGES_WRAP;
    cfg->edge_margin = 50.0f;
    cfg->seed = 1;
    cfg->brute_force = 0;
}

void sim_world_for(uint32_t boids, float *width, float *height)
{
    double grow = boids > 1000 ? sqrt(boids / 1000.0) : 1.0;
    *width = (float)round(1600.0 * grow);
    *height = (float)round(1000.0 * grow);
}

static const char *config_error(const struct sim_config *c)
{
    if (!(c->width >= 16.0f && c->width <= 1e6f) || !(c->height >= 16.0f && c->height <= 1e6f))
        return "world width and height must be in [16, 1e6]";
    if (!(c->dt > 0.0f && c->dt <= 1.0f))
        return "dt must be in (0, 1]";
    if (c->capacity < 1 || c->capacity > 4194304)
        return "capacity must be in [1, 4194304]";
    if (c->max_obstacles > 65536)
        return "max_obstacles must be in [0, 65536]";
    if (c->edges != SIM_EDGES_WRAP && c->edges != SIM_EDGES_CONTAIN)
        return "edges must be wrap or contain";
    if (!(c->edge_margin >= 0.0f && c->edge_margin <= 0.5f * fminf(c->width, c->height)))
        return "edge_margin must be in [0, min(width, height) / 2]";
    return NULL;
}

/* Cells are budgeted at four per boid (at least 4096) so a sparse world's
 * grid never costs more than its boids. */
static uint32_t max_cells_for(uint32_t capacity)
{
    uint64_t cells = 4 * (uint64_t)capacity;
    return cells < 4096 ? 4096 : (uint32_t)cells;
}

/* Carves `bytes` (rounded up to 16) off *cursor. */
static void *carve(char **cursor, size_t bytes)
{
    void *p = *cursor;
    *cursor += (bytes + 15) & ~(size_t)15;
    return p;
}

struct sim_world *sim_create(const struct sim_config *cfg, const char **err)
{
    const char *why = config_error(cfg);
    if (why) {
        if (err)
            *err = why;
        return NULL;
    }
    size_t n = cfg->capacity, cells = max_cells_for(cfg->capacity);
    size_t f = (n * sizeof(float) + 15) & ~(size_t)15;
    size_t fs = f + SIM_CHUNK * sizeof(float); /* sorted arrays: slack for copy_chunks */
    size_t b = (n + 15) & ~(size_t)15;
    size_t squads =
        SIM_GROUPS * (SIM_SQUADS + 1) * (sizeof(struct sim_squad) + sizeof(struct squad_acc));
    size_t total = ((sizeof(struct sim_world) + 15) & ~(size_t)15) + 8 * f + 5 * fs + 3 * b + 16 +
                   squads + 32 + n * sizeof(struct squad_key) + 16 +
                   ((cfg->max_obstacles * sizeof(struct sim_obstacle) + 15) & ~(size_t)15) +
                   ((grid_bytes(cfg->capacity, (uint32_t)cells) + 15) & ~(size_t)15) +
                   SIM_PARTS * ((sizeof(struct lane) + 15) & ~(size_t)15);
    /* Zeroed by calloc: a big world's arrays are fresh pages that cost
     * nothing until written, so capacity no boid uses stays free (and so
     * do fx and fy without cfg->keep_forces, and the grid's own cells). */
    char *mem = calloc(1, total);
    if (!mem) {
        if (err)
            *err = "out of memory";
        return NULL;
    }
    char *cur = mem;
    struct sim_world *w = carve(&cur, sizeof *w);
    w->cfg = *cfg;
    w->x = carve(&cur, f);
    w->y = carve(&cur, f);
    w->vx = carve(&cur, f);
    w->vy = carve(&cur, f);
    w->fx = carve(&cur, f);
    w->fy = carve(&cur, f);
    w->sx = carve(&cur, fs);
    w->sy = carve(&cur, fs);
    w->sux = carve(&cur, fs);
    w->suy = carve(&cur, fs);
    w->skey = carve(&cur, fs);
    w->sg = carve(&cur, b);
    w->group = carve(&cur, b);
    w->squad = carve(&cur, b);
    w->slot = carve(&cur, f);
    w->squads = carve(&cur, SIM_GROUPS * sizeof *w->squads);
    w->squad_acc = carve(&cur, SIM_GROUPS * sizeof *w->squad_acc);
    w->squad_keys = carve(&cur, n * sizeof(struct squad_key));
    w->id = carve(&cur, f); /* 4 bytes a boid, as a float */
    w->obstacles = carve(&cur, cfg->max_obstacles * sizeof(struct sim_obstacle));
    w->lanes = carve(&cur, SIM_PARTS * sizeof(struct lane));
    grid_init(&w->grid, carve(&cur, grid_bytes(cfg->capacity, (uint32_t)cells)), cfg->capacity,
              (uint32_t)cells);
    grid_share_cells(&w->grid, (uint32_t *)(void *)w->sx);
    w->next_id = 1;
    sim_reset(w, cfg->seed);
    w->epoch = 0; /* a new world has changed nothing yet */
    return w;
}

void sim_destroy(struct sim_world *w)
{
    free(w);
}

const struct sim_config *sim_config(const struct sim_world *w)
{
    return &w->cfg;
}

/* What squad.c sees of w. A const world's is only read (squad_pull). */
static struct squad_world squads_of(const struct sim_world *w)
{
    struct sim_world *m = (struct sim_world *)w;
    return (struct squad_world){
        .count = w->count,
        .width = w->cfg.width,
        .height = w->cfg.height,
        .dt = w->cfg.dt,
        .wrap = w->cfg.edges == SIM_EDGES_WRAP,
        .x = w->x,
        .y = w->y,
        .vx = w->vx,
        .vy = w->vy,
        .group = w->group,
        .id = w->id,
        .squad = w->squad,
        .slot = w->slot,
        .params = w->params,
        .obstacles = w->obstacles,
        .obstacle_count = w->obstacle_count,
        .sq = w->squads,
        .news = m->squad_news,
        .live = &m->squads_live,
        .used = m->squads_used,
        .keys = w->squad_keys,
        .acc = w->squad_acc,
    };
}

void sim_reset(struct sim_world *w, uint64_t seed)
{
    w->count = 0;
    w->tick = 0;
    w->epoch++;
    w->stepped = 0;
    w->obstacle_count = 0;
    if (w->next_obstacle_id == 0) /* ids are never reused, not even across resets */
        w->next_obstacle_id = 1;
    w->grid_cell = 0.0f;
    pcg32_seed(&w->rng, seed, 0x666c6f636bULL);
    memset(w->targets, 0, sizeof w->targets);
    for (int g = 0; g < SIM_GROUPS; g++)
        sim_params_default(&w->params[g]);
    struct squad_world sw = squads_of(w);
    squad_reset(&sw);
}

static int valid_group(int group)
{
    return group >= 0 && group < SIM_GROUPS;
}

static int in_world(const struct sim_world *w, float x, float y)
{
    return isfinite(x) && isfinite(y) && x >= 0.0f && x <= w->cfg.width && y >= 0.0f &&
           y <= w->cfg.height;
}

/* Brings a coordinate back into [0, size): wrap on a torus, clamp otherwise. */
static float edge_fold(float v, float size, int wrap)
{
    if (wrap) {
        if (v >= size)
            v -= size;
        if (v < 0.0f)
            v += size;
        if (v >= size || v < 0.0f) /* far out or rounding at the seam */
            v = fmodf(fmodf(v, size) + size, size);
        return v >= size ? 0.0f : v;
    }
    return fminf(fmaxf(v, 0.0f), size);
}

/* Moves boids [at, count) up by n slots and grows count by n. */
static void open_gap(struct sim_world *w, uint32_t at, uint32_t n)
{
    size_t tail = w->count - at;
    memmove(w->x + at + n, w->x + at, tail * sizeof(float));
    memmove(w->y + at + n, w->y + at, tail * sizeof(float));
    memmove(w->vx + at + n, w->vx + at, tail * sizeof(float));
    memmove(w->vy + at + n, w->vy + at, tail * sizeof(float));
    if (w->cfg.keep_forces) {
        memmove(w->fx + at + n, w->fx + at, tail * sizeof(float));
        memmove(w->fy + at + n, w->fy + at, tail * sizeof(float));
    }
    memmove(w->group + at + n, w->group + at, tail);
    memmove(w->id + at + n, w->id + at, tail * sizeof(uint32_t));
    memmove(w->squad + at + n, w->squad + at, tail);
    memmove(w->slot + at + n, w->slot + at, tail * sizeof(uint32_t));
    w->count += n;
}

/* Where a spawn puts its boids: a disc around (x, y), or (whole) the world. */
struct spawn_area {
    int whole;
    float x, y, spread;
};

static void spawn_place(struct sim_world *w, const struct spawn_area *area, float *x, float *y)
{
    int wrap = w->cfg.edges == SIM_EDGES_WRAP;
    if (area->whole) {
        *x = edge_fold(pcg32_float(&w->rng) * w->cfg.width, w->cfg.width, wrap);
        *y = edge_fold(pcg32_float(&w->rng) * w->cfg.height, w->cfg.height, wrap);
        return;
    }
    float r = area->spread * sqrtf(pcg32_float(&w->rng));
    float a = 2.0f * PI_F * pcg32_float(&w->rng);
    *x = edge_fold(area->x + r * cosf(a), w->cfg.width, wrap);
    *y = edge_fold(area->y + r * sinf(a), w->cfg.height, wrap);
}

/* Whether n more boids can have ids of their own (ids run out at 2^32 - 1). */
static bool ids_left(const struct sim_world *w, uint32_t n)
{
    return n == 0 || (w->next_id != 0 && (uint64_t)w->next_id + n - 1 <= UINT32_MAX);
}

static int spawn_in(struct sim_world *w, uint32_t n, int group, const struct spawn_area *area)
{
    if (n > w->cfg.capacity - w->count || !ids_left(w, n))
        return SIM_ECAPACITY;
    float speed = 0.5f * w->params[group].max_speed;
    /* Boids stay sorted by group: the new ones go after the last of theirs. */
    uint32_t at = w->count;
    while (at > 0 && w->group[at - 1] > (uint8_t)group)
        at--;
    open_gap(w, at, n);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = at + k;
        spawn_place(w, area, &w->x[i], &w->y[i]);
        float h = 2.0f * PI_F * pcg32_float(&w->rng);
        w->vx[i] = speed * cosf(h);
        w->vy[i] = speed * sinf(h);
        w->group[i] = (uint8_t)group;
        w->squad[i] = 0;
        w->slot[i] = 0;
        w->id[i] = w->next_id++; /* wraps to 0 after the last: ids_left() then refuses */
        if (w->cfg.keep_forces)
            w->fx[i] = w->fy[i] = 0.0f;
    }
    if (n)
        w->epoch++;
    return (int)n;
}

int sim_spawn(struct sim_world *w, uint32_t n, int group, float x, float y, float spread)
{
    if (!valid_group(group) || !isfinite(spread) || spread < 0.0f)
        return SIM_EINVAL;
    if (!in_world(w, x, y) || spread > fmaxf(w->cfg.width, w->cfg.height))
        return SIM_ERANGE;
    struct spawn_area area = {.whole = 0, .x = x, .y = y, .spread = spread};
    return spawn_in(w, n, group, &area);
}

int sim_scatter(struct sim_world *w, uint32_t n, int group)
{
    if (!valid_group(group))
        return SIM_EINVAL;
    struct spawn_area area = {.whole = 1};
    return spawn_in(w, n, group, &area);
}

int sim_reset_scatter(struct sim_world *w, uint64_t seed, uint32_t n, int group)
{
    if (!valid_group(group))
        return SIM_EINVAL;
    if (n > w->cfg.capacity)
        return SIM_ECAPACITY;
    sim_reset(w, seed);
    uint32_t epoch = w->epoch; /* the scatter is part of the same change */
    int rc = sim_scatter(w, n, group);
    w->epoch = epoch;
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* mark[i] = 1 for each boid whose id is among ids[0..n); returns how many,
 * or SIM_ECAPACITY. The caller frees *mark. */
static int mark_ids(const struct sim_world *w, const uint32_t *ids, uint32_t n, uint8_t **mark)
{
    uint32_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    *mark = calloc(w->count ? w->count : 1, 1);
    if (!sorted || !*mark) {
        free(sorted);
        free(*mark);
        *mark = NULL;
        return SIM_ECAPACITY;
    }
    memcpy(sorted, ids, (size_t)n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    int marked = 0;
    for (uint32_t i = 0; i < w->count; i++)
        if (n && bsearch(&w->id[i], sorted, n, sizeof *sorted, cmp_u32)) {
            (*mark)[i] = 1;
            marked++;
        }
    free(sorted);
    return marked;
}

/* Boid `from`'s record into place `to`. */
static void move_boid(struct sim_world *w, uint32_t to, uint32_t from)
{
    w->x[to] = w->x[from];
    w->y[to] = w->y[from];
    w->vx[to] = w->vx[from];
    w->vy[to] = w->vy[from];
    w->group[to] = w->group[from];
    w->id[to] = w->id[from];
    w->squad[to] = w->squad[from];
    w->slot[to] = w->slot[from];
    if (w->cfg.keep_forces) {
        w->fx[to] = w->fx[from];
        w->fy[to] = w->fy[from];
    }
}

int sim_remove_ids(struct sim_world *w, const uint32_t *ids, uint32_t n)
{
    uint8_t *mark;
    int removed = mark_ids(w, ids, n, &mark);
    if (removed > 0) {
        uint32_t out = 0;
        for (uint32_t i = 0; i < w->count; i++)
            if (!mark[i])
                move_boid(w, out++, i);
        w->count = out;
        w->epoch++;
    }
    free(mark);
    return removed;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts boid indices idx[0..n) by the boids' ids, in keys[0..n). */
static void sort_by_id(const struct sim_world *w, uint32_t *idx, uint32_t n, uint64_t *keys)
{
    for (uint32_t a = 0; a < n; a++)
        keys[a] = (uint64_t)w->id[idx[a]] << 32 | idx[a];
    qsort(keys, n, sizeof *keys, cmp_u64);
    for (uint32_t a = 0; a < n; a++)
        idx[a] = (uint32_t)keys[a];
}

/* Applies a permutation: the boid at order[k] goes to place k. tmp holds
 * count entries of 4 bytes. */
#define PERMUTE(arr, T, order, count, tmp)                                                         \
    do {                                                                                           \
        T *t_ = (T *)(tmp);                                                                        \
        for (uint32_t k_ = 0; k_ < (count); k_++)                                                  \
            t_[k_] = (arr)[(order)[k_]];                                                           \
        memcpy((arr), t_, (size_t)(count) * sizeof(T));                                            \
    } while (0)

int sim_regroup_ids(struct sim_world *w, const uint32_t *ids, uint32_t n, int group)
{
    if (!valid_group(group))
        return SIM_EINVAL;
    uint8_t *mark;
    int moved = mark_ids(w, ids, n, &mark);
    uint32_t *order = moved > 0 ? malloc((size_t)w->count * sizeof *order) : NULL;
    uint32_t *tmp = order ? malloc((size_t)w->count * sizeof *tmp) : NULL;
    uint64_t *keys = tmp ? malloc((size_t)moved * sizeof *keys) : NULL;
    if (moved > 0 && !keys) {
        free(tmp);
        free(order);
        free(mark);
        return SIM_ECAPACITY;
    }
    if (moved > 0) {
        /* The groups before, the group with its newcomers merged in by id
         * (a group's boids stay in id order: squad.c finds ids by bisection),
         * the groups after. tmp holds the newcomers by id for a while. */
        uint32_t k = 0, g = (uint32_t)group, nm = 0;
        for (uint32_t i = 0; i < w->count; i++)
            if (mark[i])
                tmp[nm++] = i;
        sort_by_id(w, tmp, nm, keys);
        for (uint32_t i = 0; i < w->count; i++)
            if (!mark[i] && w->group[i] < g)
                order[k++] = i;
        uint32_t j = 0;
        for (uint32_t i = 0; i < w->count; i++) {
            if (mark[i] || w->group[i] != g)
                continue;
            while (j < nm && w->id[tmp[j]] < w->id[i])
                order[k++] = tmp[j++];
            order[k++] = i;
        }
        while (j < nm)
            order[k++] = tmp[j++];
        for (uint32_t i = 0; i < w->count; i++)
            if (!mark[i] && w->group[i] > g)
                order[k++] = i;
        for (uint32_t m = 0; m < nm; m++) {
            w->group[tmp[m]] = (uint8_t)g;
            w->squad[tmp[m]] = 0;
            w->slot[tmp[m]] = 0;
        }
        PERMUTE(w->x, float, order, w->count, tmp);
        PERMUTE(w->y, float, order, w->count, tmp);
        PERMUTE(w->vx, float, order, w->count, tmp);
        PERMUTE(w->vy, float, order, w->count, tmp);
        PERMUTE(w->group, uint8_t, order, w->count, tmp);
        PERMUTE(w->id, uint32_t, order, w->count, tmp);
        PERMUTE(w->squad, uint8_t, order, w->count, tmp);
        PERMUTE(w->slot, uint32_t, order, w->count, tmp);
        if (w->cfg.keep_forces) {
            PERMUTE(w->fx, float, order, w->count, tmp);
            PERMUTE(w->fy, float, order, w->count, tmp);
        }
        w->epoch++;
    }
    free(keys);
    free(tmp);
    free(order);
    free(mark);
    return moved;
}

int sim_despawn(struct sim_world *w, uint32_t n, int group)
{
    if (group >= SIM_GROUPS)
        return SIM_EINVAL;
    /* The newest n matching boids are exactly the matching ones at or
     * after `cut`; compact the rest down, preserving order. */
    uint32_t removed = 0;
    uint32_t cut = w->count;
    for (uint32_t i = w->count; i-- > 0 && removed < n;) {
        if (group < 0 || w->group[i] == (uint8_t)group) {
            removed++;
            cut = i;
        }
    }
    if (!removed)
        return 0;
    uint32_t out = cut;
    for (uint32_t i = cut; i < w->count; i++) {
        if (group < 0 || w->group[i] == (uint8_t)group)
            continue;
        move_boid(w, out++, i);
    }
    w->count = out;
    w->epoch++;
    return (int)removed;
}

int sim_target_set(struct sim_world *w, int group, float x, float y)
{
    if (!valid_group(group))
        return SIM_EINVAL;
    if (!in_world(w, x, y))
        return SIM_ERANGE;
    w->targets[group] = (struct sim_target){.active = 1, .x = x, .y = y};
    return SIM_OK;
}

int sim_target_clear(struct sim_world *w, int group)
{
    if (!valid_group(group))
        return SIM_EINVAL;
    w->targets[group] = (struct sim_target){0};
    return SIM_OK;
}

int64_t sim_obstacle_add(struct sim_world *w, float x, float y, float r)
{
    if (!isfinite(r))
        return SIM_EINVAL;
    if (!in_world(w, x, y) || r < 1.0f || r > 0.25f * fminf(w->cfg.width, w->cfg.height))
        return SIM_ERANGE;
    if (w->obstacle_count >= w->cfg.max_obstacles || w->next_obstacle_id == UINT32_MAX)
        return SIM_ECAPACITY;
    uint32_t id = w->next_obstacle_id++;
    w->obstacles[w->obstacle_count++] = (struct sim_obstacle){.id = id, .x = x, .y = y, .r = r};
    return id;
}

int sim_obstacle_remove(struct sim_world *w, uint32_t id)
{
    for (uint32_t i = 0; i < w->obstacle_count; i++) {
        if (w->obstacles[i].id == id) {
            memmove(&w->obstacles[i], &w->obstacles[i + 1],
                    (w->obstacle_count - i - 1) * sizeof *w->obstacles);
            w->obstacle_count--;
            return SIM_OK;
        }
    }
    return SIM_ENOENT;
}

void sim_obstacle_clear(struct sim_world *w)
{
    w->obstacle_count = 0;
}

int sim_param_set(struct sim_world *w, int group, const char *name, float value)
{
    const struct sim_param_desc *d = sim_param_find(name);
    if (!d || group < -1 || group >= SIM_GROUPS)
        return SIM_EINVAL;
    if (!sim_param_valid(d, value))
        return SIM_ERANGE;
    int lo = group < 0 ? 0 : group, hi = group < 0 ? SIM_GROUPS - 1 : group;
    for (int g = lo; g <= hi; g++)
        *sim_param_field(&w->params[g], d) = value;
    return SIM_OK;
}

int sim_param_get(const struct sim_world *w, int group, const char *name, float *value)
{
    const struct sim_param_desc *d = sim_param_find(name);
    if (!d || !valid_group(group))
        return SIM_EINVAL;
    *value = *sim_param_field((struct sim_params *)&w->params[group], d);
    return SIM_OK;
}

const struct sim_params *sim_group_params(const struct sim_world *w, int group)
{
    return valid_group(group) ? &w->params[group] : NULL;
}

int sim_boid_set(struct sim_world *w, uint32_t i, float x, float y, float vx, float vy)
{
    if (i >= w->count)
        return SIM_EINVAL;
    if (!in_world(w, x, y) || !isfinite(vx) || !isfinite(vy))
        return SIM_ERANGE;
    w->x[i] = x;
    w->y[i] = y;
    w->vx[i] = vx;
    w->vy[i] = vy;
    return SIM_OK;
}

/* ---- steering ---------------------------------------------------------- */

/* Sums over one boid's neighbourhood. Relative offsets (dx, dy) = other -
 * self, so cohesion's centre of mass needs no wrap handling. */
struct nsum {
    float sep_x, sep_y, ali_x, ali_y, coh_x, coh_y;
    float n_all;
};

/* Per-boid constants of the neighbour test. */
struct probe {
    float px, py, hx, hy;
    float cos_sq;     /* c*|c| with c = cos(fov/2); -1 sees everything */
    float per2, sep2; /* squared radii */
    float inv_sep2;   /* 1 / sep2, 0 without separation */
    float key;        /* its kin key (kin_key()) */
    int own_only;     /* flocks only with its own key */
};

/* Candidate neighbours in structure-of-arrays form: positions, unit
 * headings and kin keys. Either the world's sorted arrays or a gather buffer. */
struct cands {
    const float *x, *y, *ux, *uy;
    const float *key; /* kin keys as floats: compares stay in the float lanes */
};

/* Accumulates candidates [a, b), their positions shifted by (ox, oy).
 * Written branch-free over floats so the compiler vectorises it. */
static inline void scan(const struct cands *c, const struct probe *p, uint32_t a, uint32_t b,
                        float ox, float oy, struct nsum *s)
{
    const float *restrict sx = c->x, *restrict sy = c->y;
    const float *restrict ux = c->ux, *restrict uy = c->uy;
    const float *restrict key = c->key;
    float sep_x = 0, sep_y = 0, ali_x = 0, ali_y = 0, coh_x = 0, coh_y = 0, n_all = 0;
    float bx = ox - p->px, by = oy - p->py;
    float hx = p->hx, hy = p->hy, cos_sq = p->cos_sq, per2 = p->per2, sep2 = p->sep2;
    float inv_sep2 = p->inv_sep2;
    float any_group = p->own_only ? 0.0f : 1.0f, own = p->key;
    /* Reassociating these sums is fine: the order is fixed per build, so
     * results stay deterministic; it lets the loop run in SIMD lanes. */
#pragma omp simd reduction(+ : sep_x, sep_y, ali_x, ali_y, coh_x, coh_y, n_all)
#if defined(__clang__)
    /* One vector per iteration: gathers are padded to 16, and interleaving
     * four vectors of 8 left them a scalar tail that made a 100k-boid tick
     * 1.7 times as long. */
#pragma clang loop interleave_count(1)
#endif
    for (uint32_t j = a; j < b; j++) {
        float dx = sx[j] + bx, dy = sy[j] + by;
        float d2 = dx * dx + dy * dy;
        float dot = hx * dx + hy * dy;
        /* Alignment and cohesion follow the boids in view: of its own key
         * (group or squad) only with own_group_only or in a squad, else
         * every boid in no squad; separation keeps clear of every boid
         * all around: blind behind, it would push a boid back from those
         * ahead and never forward from those behind, which brakes a crowd. */
        int seen = (d2 > 0.0f) & (dot * fabsf(dot) >= cos_sq * d2);
        int kin = (key[j] == own) | ((any_group > 0.0f) & (key[j] >= 0.0f));
        float in_p = (seen & kin & (d2 < per2)) ? 1.0f : 0.0f;
        float in_s = ((d2 > 0.0f) & (d2 < sep2)) ? 1.0f : 0.0f;
        /* 1/d - d/r_s along the unit offset, over r_s: grows like 1/d up
         * close and fades to 0 at the radius. in_s implies d2 > 0. */
        float inv = in_s != 0.0f ? 1.0f / d2 - inv_sep2 : 0.0f;
        sep_x += -dx * inv;
        sep_y += -dy * inv;
        ali_x += in_p * ux[j];
        ali_y += in_p * uy[j];
        coh_x += in_p * dx;
        coh_y += in_p * dy;
        n_all += in_p;
    }
    s->sep_x += sep_x;
    s->sep_y += sep_y;
    s->ali_x += ali_x;
    s->ali_y += ali_y;
    s->coh_x += coh_x;
    s->coh_y += coh_y;
    s->n_all += n_all;
}

/* Minimal-image offset on a torus: the shortest signed delta. */
static inline float wrap_delta(float d, float size)
{
    if (d > 0.5f * size)
        d -= size;
    else if (d < -0.5f * size)
        d += size;
    return d;
}

/* Turns the offset (*dx, *dy) into its minimal image on a torus. */
static inline void world_offset(const struct sim_world *w, float *dx, float *dy)
{
    if (w->cfg.edges == SIM_EDGES_WRAP) {
        *dx = wrap_delta(*dx, w->cfg.width);
        *dy = wrap_delta(*dy, w->cfg.height);
    }
}

static struct cands sorted_cands(const struct sim_world *w)
{
    return (struct cands){w->sx, w->sy, w->sux, w->suy, w->skey};
}

/* Reference path: every other boid, minimal image on a torus. */
static void scan_brute(const struct sim_world *w, const struct probe *p, struct nsum *s)
{
    struct cands c = sorted_cands(w);
    int wrap = w->cfg.edges == SIM_EDGES_WRAP;
    for (uint32_t j = 0; j < w->count; j++) {
        float ox = 0.0f, oy = 0.0f;
        if (wrap) { /* the shift that realises the minimal image: 0 or +-size */
            float dx = w->sx[j] - p->px, dy = w->sy[j] - p->py;
            ox = dx > 0.5f * w->cfg.width ? -w->cfg.width
                                          : (dx < -0.5f * w->cfg.width ? w->cfg.width : 0.0f);
            oy = dy > 0.5f * w->cfg.height ? -w->cfg.height
                                           : (dy < -0.5f * w->cfg.height ? w->cfg.height : 0.0f);
        }
        scan(&c, p, j, j + 1, ox, oy, s);
    }
}

/* The 3 x 3 block of cells around a cell, as at most 9 runs of sorted slots
 * [a, b) with the shift (ox, oy) that brings them next to the cell: on a
 * torus, cells past an edge are the ones on the other side. */
struct block {
    uint32_t n;
    uint32_t a[9], b[9];
    float ox[9], oy[9];
};

static void block_of(const struct sim_world *w, uint32_t cell, struct block *bl)
{
    const struct grid *g = &w->grid;
    int wrap = w->cfg.edges == SIM_EDGES_WRAP;
    int nc = (int)g->ncols, nr = (int)g->nrows;
    int cx = (int)(cell % g->ncols), cy = (int)(cell / g->ncols);
    bl->n = 0;
    for (int dy = -1; dy <= 1; dy++) {
        int row = cy + dy;
        float oy = 0.0f;
        if (row < 0 || row >= nr) {
            if (!wrap)
                continue;
            oy = row < 0 ? -w->cfg.height : w->cfg.height;
            row = row < 0 ? nr - 1 : 0;
        }
        const uint32_t *start = g->start + (uint32_t)row * g->ncols;
        int lo = cx - 1, hi = cx + 1;
        int a = lo < 0 ? 0 : lo, b = hi >= nc ? nc - 1 : hi;
        /* Adjacent cells of one row are contiguous slots. */
        bl->a[bl->n] = start[a], bl->b[bl->n] = start[b + 1];
        bl->ox[bl->n] = 0.0f, bl->oy[bl->n++] = oy;
        if (wrap && lo < 0) {
            bl->a[bl->n] = start[nc - 1], bl->b[bl->n] = start[nc];
            bl->ox[bl->n] = -w->cfg.width, bl->oy[bl->n++] = oy;
        }
        if (wrap && hi >= nc) {
            bl->a[bl->n] = start[0], bl->b[bl->n] = start[1];
            bl->ox[bl->n] = w->cfg.width, bl->oy[bl->n++] = oy;
        }
    }
}

/* Copies len floats from src to dst in whole chunks of SIM_CHUNK: up to
 * SIM_CHUNK - 1 floats past each end are read and written. The sorted
 * arrays carry that much slack and a gather stops that far short of its
 * end. Fixed-size copies compile to a few vector moves, where a call to
 * memcpy per run of a dozen floats cost more than the copy. */
static inline void copy_chunks(float *restrict dst, const float *restrict src, uint32_t len)
{
    for (uint32_t j = 0; j < len; j += SIM_CHUNK) {
        __builtin_memcpy(dst + j, src + j, SIM_CHUNK * sizeof(float));
        /* Keeps the loop a loop of chunks: no memcpy call is made of it. */
        __asm__("" : : "r"(dst + j));
    }
}

/* Copies a block's candidates, shifted, into one contiguous gather buffer
 * so each boid of the cell scans them in a single SIMD loop, and points *c
 * at them. Returns the number gathered, or SIM_ECAPACITY if they do not
 * fit (then scan the runs directly). */
static inline __attribute__((always_inline)) int
gather_block(const struct sim_world *w, const struct block *bl, struct gather *gb, struct cands *c)
{
    uint32_t n = 0;
    for (uint32_t r = 0; r < bl->n; r++)
        n += bl->b[r] - bl->a[r];
    if (n > SIM_GATHER_MAX - SIM_GATHER_PAD)
        return SIM_ECAPACITY;
    /* Room for the padding and for copy_chunks' overrun past the last
     * run: at most SIM_GATHER_MAX. */
    size_t stride = (n + SIM_CHUNK + SIM_GATHER_PAD - 1) / SIM_GATHER_PAD * SIM_GATHER_PAD;
    float *gx = gb->mem, *gy = gx + stride, *gux = gy + stride, *guy = gux + stride;
    float *gg = guy + stride;
    n = 0;
    for (uint32_t r = 0; r < bl->n; r++) {
        uint32_t a = bl->a[r], len = bl->b[r] - a;
        copy_chunks(gx + n, w->sx + a, len);
        copy_chunks(gy + n, w->sy + a, len);
        copy_chunks(gux + n, w->sux + a, len);
        copy_chunks(guy + n, w->suy + a, len);
        copy_chunks(gg + n, w->skey + a, len);
        if (bl->ox[r] != 0.0f || bl->oy[r] != 0.0f) /* only across the torus seam */
            for (uint32_t j = n; j < n + len; j++) {
                gx[j] += bl->ox[r];
                gy[j] += bl->oy[r];
            }
        n += len;
    }
    for (; n % SIM_GATHER_PAD; n++) {
        gx[n] = gy[n] = SIM_FAR;
        gux[n] = guy[n] = gg[n] = 0.0f;
    }
    *c = (struct cands){gx, gy, gux, guy, gg};
    return (int)n;
}

static void scan_block(const struct sim_world *w, const struct block *bl, const struct probe *p,
                       struct nsum *s)
{
    struct cands c = sorted_cands(w);
    for (uint32_t r = 0; r < bl->n; r++)
        scan(&c, p, bl->a[r], bl->b[r], bl->ox[r], bl->oy[r], s);
}

/* Truncates (x, y) to length max. */
static inline void truncate2(float *x, float *y, float max)
{
    float l2 = *x * *x + *y * *y;
    if (l2 > max * max) {
        float k = max / sqrtf(l2);
        *x *= k;
        *y *= k;
    }
}

/* Adds weight * truncate(desired - v, max_force) to (*fx, *fy). */
static inline void steer_toward(float dvx, float dvy, float vx, float vy, float max_force,
                                float weight, float *fx, float *fy)
{
    float sx = dvx - vx, sy = dvy - vy;
    truncate2(&sx, &sy, max_force);
    *fx += weight * sx;
    *fy += weight * sy;
}

/* Scales (x, y) to length len; a zero vector stays zero. */
static inline void set_length(float *x, float *y, float len)
{
    float l = sqrtf(*x * *x + *y * *y);
    float k = l > 0.0f ? len / l : 0.0f;
    *x *= k;
    *y *= k;
}

/* Adds seek/arrive toward t to (*fx, *fy); returns 1 inside the arrive radius. */
static int steer_seek(const struct sim_world *w, const struct sim_params *pp,
                      const struct sim_target *t, float px, float py, float vx, float vy, float *fx,
                      float *fy)
{
    float dx = t->x - px, dy = t->y - py;
    world_offset(w, &dx, &dy);
    float dist = sqrtf(dx * dx + dy * dy);
    float speed = pp->max_speed;
    int arriving = dist < pp->arrive_radius;
    if (arriving)
        speed *= dist / pp->arrive_radius;
    set_length(&dx, &dy, speed);
    steer_toward(dx, dy, vx, vy, pp->max_force, pp->w_seek, fx, fy);
    return arriving;
}

/* Obstacles repel within one perception radius of their surface, growing
 * stronger toward it; the hard constraint in integrate() does the rest. */
static void steer_avoid(const struct sim_world *w, const struct sim_params *pp, float px, float py,
                        float vx, float vy, float *fx, float *fy)
{
    float reach = fmaxf(pp->perception, 1.0f);
    int wrap = w->cfg.edges == SIM_EDGES_WRAP;
    for (uint32_t k = 0; k < w->obstacle_count; k++) {
        const struct sim_obstacle *o = &w->obstacles[k];
        float dx = px - o->x, dy = py - o->y;
        world_offset(w, &dx, &dy);
        float lim = o->r + reach;
        float d2 = dx * dx + dy * dy;
        if (d2 >= lim * lim)
            continue;
        float d = sqrtf(d2);
        float strength = 1.0f - (d - o->r) / reach;
        if (d <= 0.0f) {
            dx = 1.0f;
            dy = 0.0f;
        }
        set_length(&dx, &dy, pp->max_speed);
        steer_toward(dx, dy, vx, vy, pp->max_force, pp->w_avoid * fminf(strength, 1.0f), fx, fy);
    }
    if (wrap)
        return;
    float m = w->cfg.edge_margin, dvx = vx, dvy = vy;
    if (px < m)
        dvx = pp->max_speed;
    else if (px > w->cfg.width - m)
        dvx = -pp->max_speed;
    if (py < m)
        dvy = pp->max_speed;
    else if (py > w->cfg.height - m)
        dvy = -pp->max_speed;
    if (dvx != vx || dvy != vy)
        steer_toward(dvx, dvy, vx, vy, pp->max_force, pp->w_avoid, fx, fy);
}

/* The radius within which a group's boids look for other groups' (flee,
 * pursue); 0 if they do not. */
static float pull_radius(const struct sim_params *pp)
{
    return fmaxf(pp->w_flee > 0.0f ? pp->flee_radius : 0.0f,
                 pp->w_pursue > 0.0f ? pp->pursue_radius : 0.0f);
}

static float max_radius(const struct sim_world *w)
{
    float r = 1.0f;
    for (int g = 0; g < SIM_GROUPS; g++) {
        const struct sim_params *pp = &w->params[g];
        r = fmaxf(r, fmaxf(fmaxf(pp->perception, pp->separation_radius), pull_radius(pp)));
    }
    return r;
}

/* The serial start of a step: the grid's layout and each group's
 * constants as the rules read them. */
static void prepare_groups(struct sim_world *w)
{
    float cell = max_radius(w);
    if (cell != w->grid_cell) {
        grid_layout(&w->grid, w->cfg.width, w->cfg.height, cell);
        w->grid_cell = cell;
    }
    for (int k = 0; k < SIM_GROUPS; k++) {
        const struct sim_params *pp = &w->params[k];
        float c = cosf(0.5f * pp->fov * (PI_F / 180.0f));
        w->cos_sq[k] = pp->fov >= 360.0f ? -1.0f : c * fabsf(c);
        w->vmax[k] = pp->max_speed;
        w->vmin[k] = fminf(pp->min_speed, pp->max_speed);
        w->fmax[k] = pp->max_force;
        w->wali[k] = pp->w_alignment;
        w->ksep[k] = pp->w_separation * pp->max_force * pp->separation_radius;
        w->kcoh[k] = pp->w_cohesion * pp->max_force / pp->perception; /* perception >= 1 */
    }
    int targets = 0, pulls = 0;
    for (int k = 0; k < SIM_GROUPS; k++) {
        targets |= w->targets[k].active;
        pulls |= pull_radius(&w->params[k]) > 0.0f;
    }
    w->pulls = pulls;
    w->extras = targets || pulls || w->squads_live || w->obstacle_count > 0 ||
                w->cfg.edges != SIM_EDGES_WRAP;
}

/* A boid's kin key: its group, or in a squad -(64 x group + squad), so
 * a scan tells squads apart and any squad from none by one compare. Exact
 * in a float. */
static inline float kin_key(uint8_t group, uint8_t squad)
{
    return squad ? -(float)(64 * group + squad) : (float)group;
}

/* Copies sorted slots [begin, end) of the grid's order into the scratch
 * arrays the neighbour scan reads: position, unit heading, group, kin key. */
static void prepare_slots(struct sim_world *w, uint32_t begin, uint32_t end)
{
    const uint32_t *order = w->grid.order;
    const float *x = w->x, *y = w->y, *vx = w->vx, *vy = w->vy;
    for (uint32_t k = begin; k < end; k++) {
        uint32_t i = order[k];
        /* Boids in cell order are all over memory: ask for one a few
         * slots ahead while this one is copied. */
        if (k + SIM_PREFETCH < end) {
            uint32_t ahead = order[k + SIM_PREFETCH];
            __builtin_prefetch(x + ahead);
            __builtin_prefetch(y + ahead);
            __builtin_prefetch(vx + ahead);
            __builtin_prefetch(vy + ahead);
        }
        float ux = vx[i], uy = vy[i];
        float l = sqrtf(ux * ux + uy * uy);
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        w->sx[k] = x[i];
        w->sy[k] = y[i];
        w->sux[k] = ux * inv;
        w->suy[k] = uy * inv;
        w->sg[k] = w->group[i];
        w->skey[k] = kin_key(w->group[i], w->squad[i]);
    }
}

/* The grid is usable when each axis has 3 or more cells: then the 3 x 3
 * block around a cell never visits a cell twice, even on a torus. */
static int grid_usable(const struct sim_world *w)
{
    return !w->cfg.brute_force && w->grid.ncols >= 3 && w->grid.nrows >= 3;
}

static void probe_init(const struct sim_world *w, uint32_t k, struct probe *p)
{
    uint8_t g = w->sg[k];
    const struct sim_params *pp = &w->params[g];
    float key = w->skey[k];
    int blind = w->sux[k] == 0.0f && w->suy[k] == 0.0f;
    *p = (struct probe){
        .px = w->sx[k],
        .py = w->sy[k],
        .hx = w->sux[k],
        .hy = w->suy[k],
        .cos_sq = blind ? -1.0f : w->cos_sq[g],
        .per2 = pp->perception * pp->perception,
        .sep2 = pp->separation_radius * pp->separation_radius,
        .inv_sep2 = pp->separation_radius > 0.0f
                        ? 1.0f / (pp->separation_radius * pp->separation_radius)
                        : 0.0f,
        .key = key,
        .own_only = pp->own_group_only != 0.0f || key < 0.0f,
    };
}

/* The neighbour scan is the hot loop: on x86-64 build it three times, for
 * AVX-512, for AVX2 and for the baseline, and let the loader pick what the
 * CPU runs (AVX-512's 16 lanes scan a gather padded to 16 in one vector: a
 * 250,000-boid step 11 % shorter than with AVX2's 8). Each machine always
 * takes the same path, so runs stay deterministic on it. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__clang__) || __GNUC__ >= 6)
#define SIM_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIM_HOT
#endif

static void store_sums(struct lane *ln, uint32_t j, const struct nsum *s)
{
    ln->sum[SUM_SEP_X][j] = s->sep_x;
    ln->sum[SUM_SEP_Y][j] = s->sep_y;
    ln->sum[SUM_ALI_X][j] = s->ali_x;
    ln->sum[SUM_ALI_Y][j] = s->ali_y;
    ln->sum[SUM_COH_X][j] = s->coh_x;
    ln->sum[SUM_COH_Y][j] = s->coh_y;
    ln->sum[SUM_NALL][j] = s->n_all;
}

/* One slot's neighbourhood sums and motion, as the rules read them. */
struct slot {
    float sep_x, sep_y, ali_x, ali_y, coh_x, coh_y, n; /* sums of the scan */
    float ux, uy, vx, vy;                              /* own heading and velocity */
};

/* Slot k, the j-th of the lane's slice. */
static inline struct slot slot_at(const struct sim_world *w, const struct lane *ln, uint32_t k,
                                  uint32_t j)
{
    return (struct slot){
        ln->sum[SUM_SEP_X][j],
        ln->sum[SUM_SEP_Y][j],
        ln->sum[SUM_ALI_X][j],
        ln->sum[SUM_ALI_Y][j],
        ln->sum[SUM_COH_X][j],
        ln->sum[SUM_COH_Y][j],
        ln->sum[SUM_NALL][j],
        w->sux[k],
        w->suy[k],
        ln->vx[j],
        ln->vy[j],
    };
}

/* A group's constants as the rules use them (prepare_groups fills them). */
struct gains {
    float mf;   /* max_force */
    float ksep; /* w_separation x max_force x separation_radius */
    float wali; /* w_alignment */
    float kcoh; /* w_cohesion x max_force / perception */
};

static inline struct gains gains_of(const struct sim_world *w, uint8_t g)
{
    return (struct gains){w->fmax[g], w->ksep[g], w->wali[g], w->kcoh[g]};
}

/* The three flocking forces of one boid, each weighted, in units/s^2. */
struct rules {
    float sx, sy, ax, ay, cx, cy;
};

/*
 * Separation pushes away from every boid closer than r_s with w_separation
 * x max_force x (r_s / d - d / r_s), summed: nothing at the radius, one
 * max_force (times the weight) at 0.62 r_s, without bound closer in.
 * Alignment steers toward the mean heading of the neighbours in view and
 * the boid itself at speed `mc` (desired - velocity, truncated to max_force
 * and weighted): its own heading keeps a lone boid cruising. Cohesion pulls
 * toward the centre of the neighbours in view like a spring, w_cohesion x
 * max_force at one perception radius. None of them brakes a boid that flies
 * with its neighbours. Branch-free for SIMD lanes.
 */
static inline void flock_rules(const struct gains *c, float mc, const struct slot *s,
                               struct rules *r)
{
    r->sx = c->ksep * s->sep_x;
    r->sy = c->ksep * s->sep_y;
    float hx = s->ali_x + s->ux, hy = s->ali_y + s->uy, l = sqrtf(hx * hx + hy * hy);
    float ka = l > 0.0f ? mc / l : 0.0f;
    float dx = hx * ka - s->vx, dy = hy * ka - s->vy, l2 = dx * dx + dy * dy;
    float kt = c->wali * (l2 > c->mf * c->mf ? c->mf / sqrtf(l2) : 1.0f);
    r->ax = kt * dx;
    r->ay = kt * dy;
    float kc = s->n > 0.0f ? c->kcoh / s->n : 0.0f;
    r->cx = kc * s->coh_x;
    r->cy = kc * s->coh_y;
}

/*
 * Prioritised allocation (Reynolds 1999): adds as much of (fx, fy) as the
 * remaining budget of acceleration allows, but no more than `most`, and
 * spends that much. Called in priority order, so a pressing rule (an
 * obstacle ahead, a neighbour too close) is never drowned out by the ones
 * after it. Branch-free.
 */
static inline void allot(float fx, float fy, float most, float *budget, float *ox, float *oy)
{
    float cap = fminf(most, *budget), l = sqrtf(fx * fx + fy * fy), k = l > cap ? cap / l : 1.0f;
    *ox += k * fx;
    *oy += k * fy;
    *budget = fmaxf(*budget - k * l, 0.0f);
}

/*
 * Steering of the lane's slice, sorted slots [begin, end), in a world with
 * no targets, obstacles or walls: separation (up to its share), then
 * alignment, then cohesion, from a budget of max_force, into ln->fx, fy.
 * Every array is read through its own restrict pointer so the loop runs
 * across boids in SIMD lanes.
 */
SIM_HOT static void flock_forces(const struct sim_world *w, struct lane *ln, uint32_t begin,
                                 uint32_t end)
{
    const float *restrict sep_x = ln->sum[SUM_SEP_X], *restrict sep_y = ln->sum[SUM_SEP_Y];
    const float *restrict ali_x = ln->sum[SUM_ALI_X], *restrict ali_y = ln->sum[SUM_ALI_Y];
    const float *restrict coh_x = ln->sum[SUM_COH_X], *restrict coh_y = ln->sum[SUM_COH_Y];
    const float *restrict n_all = ln->sum[SUM_NALL];
    const float *restrict sux = w->sux + begin, *restrict suy = w->suy + begin;
    const float *restrict svx = ln->vx, *restrict svy = ln->vy;
    const float *restrict fmax = w->fmax, *restrict ksep = w->ksep, *restrict wali = w->wali;
    const float *restrict kcoh = w->kcoh, *restrict vmax = w->vmax;
    const uint8_t *restrict sg = w->sg + begin;
    float *restrict out_x = ln->fx, *restrict out_y = ln->fy;
    uint32_t len = end - begin;
#pragma omp simd
    for (uint32_t k = 0; k < len; k++) {
        uint8_t g = sg[k];
        struct gains c = {fmax[g], ksep[g], wali[g], kcoh[g]};
        struct slot s = {sep_x[k], sep_y[k], ali_x[k], ali_y[k], coh_x[k], coh_y[k],
                         n_all[k], sux[k],   suy[k],   svx[k],   svy[k]};
        struct rules r;
        flock_rules(&c, vmax[g], &s, &r);
        float budget = c.mf, fx = 0.0f, fy = 0.0f;
        allot(r.sx, r.sy, SIM_SEPARATION_SHARE * budget, &budget, &fx, &fy);
        allot(r.ax, r.ay, budget, &budget, &fx, &fy);
        allot(r.cx, r.cy, budget, &budget, &fx, &fy);
        out_x[k] = fx;
        out_y[k] = fy;
    }
}

/* What a boid sees of other groups' boids within its group's pull radius. */
struct others {
    float sum_x, sum_y; /* offsets of those within flee_radius, summed */
    uint32_t near;      /* how many */
    float best;         /* squared distance of the nearest within pursue_radius; INFINITY: none */
    float to_x, to_y;   /* the offset to it */
};

/* Looks at the candidates [a, b) shifted by (ox, oy) for slot k's others. */
static void look_at(const struct sim_world *w, uint32_t k, const struct sim_params *pp, uint32_t a,
                    uint32_t b, float ox, float oy, struct others *o)
{
    float flee2 = pp->w_flee > 0.0f ? pp->flee_radius * pp->flee_radius : 0.0f;
    float pursue2 = pp->w_pursue > 0.0f ? pp->pursue_radius * pp->pursue_radius : 0.0f;
    int brute = !grid_usable(w);
    for (uint32_t j = a; j < b; j++) {
        if (w->sg[j] == w->sg[k])
            continue;
        float dx = w->sx[j] + ox - w->sx[k], dy = w->sy[j] + oy - w->sy[k];
        if (brute)
            world_offset(w, &dx, &dy);
        float d2 = dx * dx + dy * dy;
        if (d2 < flee2)
            o->sum_x += dx, o->sum_y += dy, o->near++;
        if (d2 < pursue2 && d2 < o->best)
            o->best = d2, o->to_x = dx, o->to_y = dy;
    }
}

/* Slot k's others: in its 3 x 3 block of cells (the grid's cells are at
 * least every pull radius wide), or among every boid without a grid. */
static void others_of(const struct sim_world *w, uint32_t k, const struct sim_params *pp,
                      struct others *o)
{
    *o = (struct others){.best = INFINITY};
    if (!grid_usable(w)) {
        look_at(w, k, pp, 0, w->count, 0.0f, 0.0f, o);
        return;
    }
    struct block bl;
    block_of(w, grid_cell_of(&w->grid, w->sx[k], w->sy[k]), &bl);
    for (uint32_t r = 0; r < bl.n; r++)
        look_at(w, k, pp, bl.a[r], bl.b[r], bl.ox[r], bl.oy[r], o);
}

/* Flee and pursuit of slot k (PROTOCOL.md §13.4), into (*fx, *fy) and (*px, *py). */
static void pull_forces(const struct sim_world *w, uint32_t k, const struct sim_params *pp,
                        const struct squad_pull *q, const struct slot *s, float *fx, float *fy,
                        float *px, float *py)
{
    if (!w->pulls || pull_radius(pp) <= 0.0f || !(q->may_flee || q->may_pursue))
        return;
    struct others o;
    others_of(w, k, pp, &o);
    if (q->may_flee && o.near > 0) {
        float dx = -o.sum_x, dy = -o.sum_y;
        set_length(&dx, &dy, pp->max_speed);
        steer_toward(dx, dy, s->vx, s->vy, pp->max_force, pp->w_flee, fx, fy);
    }
    if (q->may_pursue && o.best < INFINITY) {
        float dx = o.to_x, dy = o.to_y;
        set_length(&dx, &dy, pp->max_speed);
        steer_toward(dx, dy, s->vx, s->vy, pp->max_force, pp->w_pursue, px, py);
    }
}

#define DETOUR_AHEAD  300.0f /* units: how far ahead a unit looks for obstacles on its way */
#define DETOUR_MARGIN 4.0f   /* separation radii a detour keeps off an obstacle's edge */

/*
 * A unit whose straight way from (px, py) to (gx, gy) runs into an
 * obstacle (its radius plus `margin`) within DETOUR_AHEAD turns its
 * velocity (*vx, *vy) along the line from it that touches the nearest
 * such circle, on the side of its goal (inside the circle: across the
 * way to the obstacle), and so goes round rather than pressing against
 * it, and no wider than it must.
 */
static void detour(const struct sim_world *w, float px, float py, float gx, float gy, float margin,
                   float *vx, float *vy)
{
    float dx = gx - px, dy = gy - py;
    world_offset(w, &dx, &dy);
    float dl2 = dx * dx + dy * dy, best = INFINITY, bx = 0.0f, by = 0.0f, reach = 0.0f;
    if (dl2 <= 0.0f)
        return;
    for (uint32_t k = 0; k < w->obstacle_count; k++) {
        const struct sim_obstacle *o = &w->obstacles[k];
        float cx = o->x - px, cy = o->y - py;
        world_offset(w, &cx, &cy);
        float t = fminf(fmaxf((cx * dx + cy * dy) / dl2, 0.0f), 1.0f);
        float ex = cx - t * dx, ey = cy - t * dy, lim = o->r + margin, c2 = cx * cx + cy * cy;
        if (t <= 0.0f || ex * ex + ey * ey >= lim * lim || c2 >= best)
            continue;
        if (sqrtf(c2) - o->r > DETOUR_AHEAD)
            continue;
        best = c2, bx = cx, by = cy, reach = lim;
    }
    if (best == INFINITY)
        return;
    float side = bx * dy - by * dx < 0.0f ? -1.0f : 1.0f, d = sqrtf(best);
    float sn = d > reach ? reach / d : 1.0f, cs = sqrtf(1.0f - sn * sn);
    float tx = (bx * cs - side * by * sn) / d, ty = (by * cs + side * bx * sn) / d;
    set_length(&tx, &ty, sqrtf(*vx * *vx + *vy * *vy));
    *vx = tx, *vy = ty;
}

/*
 * Steering of the lane's slice, sorted slots [begin, end), when the world
 * has targets, obstacles, walls, squads or pulls, in priority order:
 * avoidance, separation (up to its share of max_force), flee, the seek of
 * its target or squad (or its slot), pursuit, alignment, cohesion. A boid
 * with a target flies at the pace seek sets: alignment only turns it,
 * keeping its own speed. Inside the arrive radius cohesion stops and the
 * target gathers the group: cohesion toward the neighbours in view, all
 * ahead, would keep a settled group walking. A unit in a formation flies
 * to its slot and neither aligns nor coheres. The group's target moves
 * only its units in no squad.
 */
static void extra_forces(const struct sim_world *w, struct lane *ln, uint32_t begin, uint32_t end)
{
    struct squad_world sw = squads_of(w);
    for (uint32_t k = begin; k < end; k++) {
        uint8_t g = w->sg[k];
        const struct sim_params *pp = &w->params[g];
        struct slot s = slot_at(w, ln, k, k - begin);
        float px = w->sx[k], py = w->sy[k];
        struct squad_pull q = {.kind = SQUAD_FREE, .may_pursue = 1, .may_flee = 1};
        if (w->squads_live)
            q = squad_pull(&sw, w->grid.order[k], px, py);
        struct sim_target goal = {.active = 1, .x = q.x, .y = q.y};
        const struct sim_target *t = q.kind == SQUAD_SEEK                           ? &goal
                                     : q.kind == SQUAD_FREE && w->targets[g].active ? &w->targets[g]
                                                                                    : NULL;
        struct rules r;
        float own = sqrtf(s.vx * s.vx + s.vy * s.vy);
        struct gains c = gains_of(w, g);
        flock_rules(&c, t ? own : w->vmax[g], &s, &r);
        float ax = 0.0f, ay = 0.0f, tx = 0.0f, ty = 0.0f, ex = 0.0f, ey = 0.0f, hx = 0.0f,
              hy = 0.0f;
        steer_avoid(w, pp, px, py, s.vx, s.vy, &ax, &ay);
        if (t && steer_seek(w, pp, t, px, py, s.vx, s.vy, &tx, &ty))
            r.cx = r.cy = 0.0f;
        if (q.kind == SQUAD_SLOT && w->obstacle_count > 0)
            detour(w, px, py, q.to_x, q.to_y, DETOUR_MARGIN * pp->separation_radius, &q.x, &q.y);
        if (q.kind == SQUAD_SLOT) { /* reaches the velocity asked in SQUAD_REACT seconds */
            tx = (q.x - s.vx) * (pp->w_seek / SQUAD_REACT);
            ty = (q.y - s.vy) * (pp->w_seek / SQUAD_REACT);
            truncate2(&tx, &ty, pp->max_force);
            r.ax = r.ay = r.cx = r.cy = 0.0f;
        }
        pull_forces(w, k, pp, &q, &s, &ex, &ey, &hx, &hy);
        float budget = pp->max_force, fx = 0.0f, fy = 0.0f;
        allot(ax, ay, budget, &budget, &fx, &fy);
        allot(r.sx, r.sy, SIM_SEPARATION_SHARE * pp->max_force, &budget, &fx, &fy);
        allot(ex, ey, budget, &budget, &fx, &fy);
        allot(tx, ty, budget, &budget, &fx, &fy);
        allot(hx, hy, budget, &budget, &fx, &fy);
        allot(r.ax, r.ay, budget, &budget, &fx, &fy);
        allot(r.cx, r.cy, budget, &budget, &fx, &fy);
        ln->fx[k - begin] = fx;
        ln->fy[k - begin] = fy;
    }
}

/* ---- integration -------------------------------------------------------- */

/* Index of the first obstacle containing (x, y), or SIM_ENOENT for none. */
static int64_t containing(const struct sim_world *w, float x, float y, float *dx, float *dy)
{
    for (uint32_t k = 0; k < w->obstacle_count; k++) {
        const struct sim_obstacle *o = &w->obstacles[k];
        float ex = x - o->x, ey = y - o->y;
        world_offset(w, &ex, &ey);
        if (ex * ex + ey * ey < o->r * o->r) {
            *dx = ex;
            *dy = ey;
            return k;
        }
    }
    return SIM_ENOENT;
}

#define KEEP_OUT_MAX 16 /* obstacles considered around one boid */

/* The best exit found so far: a clear point nearest the boid. */
struct exit_search {
    float x0, y0; /* the boid, in world coordinates */
    float bx, by, best;
    int wrap;
};

/* Considers exit (ex, ey), given relative to the boid. */
static void try_exit(const struct sim_world *w, struct exit_search *e, float ex, float ey)
{
    float d2 = ex * ex + ey * ey, gx = e->x0 + ex, gy = e->y0 + ey, ox, oy;
    if (d2 >= e->best)
        return;
    if (!e->wrap && (gx < 0.0f || gx > w->cfg.width || gy < 0.0f || gy > w->cfg.height))
        return;
    gx = edge_fold(gx, w->cfg.width, e->wrap);
    gy = edge_fold(gy, w->cfg.height, e->wrap);
    if (containing(w, gx, gy, &ox, &oy) >= 0)
        return;
    e->best = d2;
    e->bx = gx;
    e->by = gy;
}

/* Exits across the circle (cx, cy, r) given relative to the boid: the
 * radial one and, in a contained world, where it meets the walls. */
static void try_circle(const struct sim_world *w, struct exit_search *e, float cx, float cy,
                       float r)
{
    float out = r * 1.0001f + 1e-3f; /* strictly outside after rounding */
    float d = sqrtf(cx * cx + cy * cy);
    float nx = d > 0.0f ? -cx / d : 1.0f, ny = d > 0.0f ? -cy / d : 0.0f;
    try_exit(w, e, cx + nx * out, cy + ny * out);
    if (e->wrap)
        return;
    float walls[4] = {-e->x0, w->cfg.width - e->x0, -e->y0, w->cfg.height - e->y0};
    for (int k = 0; k < 4; k++) {
        float along = k < 2 ? walls[k] - cx : walls[k] - cy, h = out * out - along * along;
        if (h < 0.0f)
            continue;
        h = sqrtf(h);
        if (k < 2) {
            try_exit(w, e, walls[k], cy - h);
            try_exit(w, e, walls[k], cy + h);
        } else {
            try_exit(w, e, cx - h, walls[k]);
            try_exit(w, e, cx + h, walls[k]);
        }
    }
}

/* Exits where two circles (relative to the boid) cross, nudged outward
 * along their common chord so they are clear of both. */
static void try_crossings(const struct sim_world *w, struct exit_search *e, const float *c1,
                          const float *c2)
{
    float ux = c2[0] - c1[0], uy = c2[1] - c1[1], d = sqrtf(ux * ux + uy * uy);
    if (d <= 0.0f || d >= c1[2] + c2[2] || d <= fabsf(c1[2] - c2[2]))
        return;
    float a = (c1[2] * c1[2] - c2[2] * c2[2] + d * d) / (2.0f * d);
    float h = sqrtf(fmaxf(c1[2] * c1[2] - a * a, 0.0f));
    h += 1e-3f + 1e-4f * fmaxf(c1[2], c2[2]);
    float mx = c1[0] + a * ux / d, my = c1[1] + a * uy / d, px = -uy / d, py = ux / d;
    try_exit(w, e, mx + h * px, my + h * py);
    try_exit(w, e, mx - h * px, my - h * py);
}

/*
 * Keeps boid centres out of obstacles. A boid inside one or more is moved
 * to the nearest clear point among: each containing circle's radial exit,
 * where those circles meet the walls (contained worlds) and where they
 * cross each other; it loses the inward part of its velocity. If none is
 * clear, the boid keeps its previous position (px, py) when that is clear.
 */
static void keep_out(const struct sim_world *w, float px, float py, float *x, float *y, float *vx,
                     float *vy)
{
    float dx, dy, c[KEEP_OUT_MAX][3];
    if (containing(w, *x, *y, &dx, &dy) < 0)
        return;
    int wrap = w->cfg.edges == SIM_EDGES_WRAP, m = 0, inside = 0;
    float reach = 0.0f; /* the largest obstacle radius */
    for (uint32_t k = 0; k < w->obstacle_count; k++)
        if (w->obstacles[k].r > reach)
            reach = w->obstacles[k].r;
    /* Containing circles first, then those that may overlap them. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < w->obstacle_count && m < KEEP_OUT_MAX; k++) {
            const struct sim_obstacle *o = &w->obstacles[k];
            float ex = o->x - *x, ey = o->y - *y; /* centre relative to the boid */
            world_offset(w, &ex, &ey);
            float d2 = ex * ex + ey * ey, near = o->r + 2.0f * reach;
            int in = d2 < o->r * o->r;
            if (pass == 0 ? in : (!in && d2 < near * near))
                c[m][0] = ex, c[m][1] = ey, c[m++][2] = o->r;
        }
        if (pass == 0)
            inside = m;
    }
    struct exit_search e = {.x0 = *x, .y0 = *y, .best = INFINITY, .wrap = wrap};
    for (int i = 0; i < inside; i++) {
        try_circle(w, &e, c[i][0], c[i][1], c[i][2]);
        for (int j = i + 1; j < m; j++)
            try_crossings(w, &e, c[i], c[j]);
    }
    if (e.best == INFINITY) {
        if (containing(w, px, py, &dx, &dy) < 0) {
            *x = px, *y = py, *vx = *vy = 0.0f;
        }
        return;
    }
    float nx = e.bx - *x, ny = e.by - *y;
    world_offset(w, &nx, &ny);
    float len = sqrtf(nx * nx + ny * ny);
    *x = e.bx;
    *y = e.by;
    if (len > 0.0f) {
        nx /= len, ny /= len;
        float vn = *vx * nx + *vy * ny;
        if (vn < 0.0f)
            *vx -= vn * nx, *vy -= vn * ny;
    }
}

/*
 * Moves the boids of the lane's slice, sorted slots [begin, end), by the
 * forces settle_slice() left in it: velocity += force * dt, speed clamped
 * to its group's [min, max], position += velocity * dt, then folded onto
 * the torus or stopped at the walls; then keeps them out of obstacles. The
 * previous positions are the sorted copy's. Adds what the boids saw to the
 * lane's count of neighbours.
 */
SIM_HOT static void integrate_slice(struct sim_world *w, struct lane *ln, uint32_t begin,
                                    uint32_t end)
{
    const float dt = w->cfg.dt, W = w->cfg.width, H = w->cfg.height;
    const float iw = 1.0f / W, ih = 1.0f / H;
    float *restrict x = w->x, *restrict y = w->y, *restrict vx = w->vx, *restrict vy = w->vy;
    const float *restrict px = w->sx, *restrict py = w->sy;
    const float *restrict fx = ln->fx, *restrict fy = ln->fy;
    const float *restrict ovx = ln->vx, *restrict ovy = ln->vy;
    const float *restrict n_all = ln->sum[SUM_NALL];
    const float *restrict vmax = w->vmax, *restrict vmin = w->vmin;
    const uint8_t *restrict g = w->sg;
    const uint32_t *restrict order = w->grid.order;
    const uint8_t *restrict squad = w->squads_live ? w->squad : NULL;
    const int wrap = w->cfg.edges == SIM_EDGES_WRAP;
    uint64_t seen = 0;
    /* Not in vectors: the vectoriser would take hi / sqrtf() as an
     * estimate, and each boid's speed must come out as it always has. */
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
    for (uint32_t k = begin; k < end; k++) {
        uint32_t j = k - begin, i = order[k];
        float ux = ovx[j] + fx[j] * dt, uy = ovy[j] + fy[j] * dt;
        float s = sqrtf(ux * ux + uy * uy), hi = vmax[g[k]], lo = vmin[g[k]];
        lo = squad && squad[i] ? 0.0f : lo; /* a squad's units may stand still */
        /* hi / s above the top speed, lo / s below the least, else 1, as
         * one division without branches: a flock cruises about its top
         * speed, some boids a hair above it and some below, and branching
         * on which was mispredicted half the time. s / s is exactly 1. */
        float num = s > hi ? hi : (s < lo ? lo : s);
        float q = s > 0.0f ? num / s : 1.0f;
        ux *= q;
        uy *= q;
        float nx = px[k] + ux * dt, ny = py[k] + uy * dt;
        if (wrap) {
            nx -= W * floorf(nx * iw);
            ny -= H * floorf(ny * ih);
            nx = nx >= W ? nx - W : (nx < 0.0f ? 0.0f : nx); /* rounding at the seam */
            ny = ny >= H ? ny - H : (ny < 0.0f ? 0.0f : ny);
        } else {
            /* A wall stops the outward part of the velocity. */
            ux = (nx <= 0.0f && ux < 0.0f) || (nx >= W && ux > 0.0f) ? 0.0f : ux;
            uy = (ny <= 0.0f && uy < 0.0f) || (ny >= H && uy > 0.0f) ? 0.0f : uy;
            nx = nx < 0.0f ? 0.0f : (nx > W ? W : nx);
            ny = ny < 0.0f ? 0.0f : (ny > H ? H : ny);
        }
        x[i] = nx;
        y[i] = ny;
        vx[i] = ux;
        vy[i] = uy;
        seen += (uint16_t)fminf(n_all[j], 65535.0f);
    }
    ln->neighbours += seen;
    if (w->cfg.keep_forces)
        for (uint32_t k = begin; k < end; k++) {
            w->fx[order[k]] = fx[k - begin];
            w->fy[order[k]] = fy[k - begin];
        }
    if (w->obstacle_count > 0)
        for (uint32_t k = begin; k < end; k++) {
            uint32_t i = order[k];
            keep_out(w, px[k], py[k], &x[i], &y[i], &vx[i], &vy[i]);
        }
}

/* ---- steering and integration, a slice at a time --------------------- */

/* (Defined after integrate_slice(), not after a declaration of it: clang
 * 14 miscompiled a call to a target_clones function declared first.) */

/*
 * Finishes the lane's slice, sorted slots [begin, end) whose sums the scan
 * stored: reads each boid's velocity, computes its steering and moves it.
 * Nothing of the step reads a boid's own arrays after this (the scan reads
 * the sorted copies), so the boid can move at once.
 */
static void settle_slice(struct sim_world *w, struct lane *ln, uint32_t begin, uint32_t end)
{
    const uint32_t *order = w->grid.order;
    for (uint32_t k = begin; k < end; k++) {
        uint32_t i = order[k];
        ln->vx[k - begin] = w->vx[i];
        ln->vy[k - begin] = w->vy[i];
    }
    if (w->extras)
        extra_forces(w, ln, begin, end);
    else
        flock_forces(w, ln, begin, end);
    integrate_slice(w, ln, begin, end);
}

/*
 * Steering and integration of sorted slots [begin, end), a slice at a
 * time, in lane `lane` (concurrent calls: distinct lanes, disjoint ranges).
 */
SIM_HOT static void steer_range(struct sim_world *w, unsigned lane, uint32_t begin, uint32_t end)
{
    const struct grid *g = &w->grid;
    struct lane *ln = &w->lanes[lane % SIM_PARTS];
    struct gather *gb = &ln->gather;
    int use_grid = grid_usable(w);
    struct block bl = {.n = 0};
    struct cands gc = {0};
    int gathered = -1;
    if (end > w->count)
        end = w->count;
    /* Slots are sorted by cell: the cell of slot k is the one whose run of
     * slots holds k, found by walking the prefix table along with k (where
     * looking it up per slot missed the cache once a boid). */
    uint32_t cell = begin < end ? grid_cell_of(g, w->sx[begin], w->sy[begin]) : 0;
    uint32_t cell_end = 0; /* the slot the current gather's cell ends at; 0: none yet */
    for (uint32_t first = begin; first < end; first += SIM_SLICE) {
        uint32_t last = end - first > SIM_SLICE ? first + SIM_SLICE : end;
        for (uint32_t k = first; k < last; k++) {
            struct probe p;
            struct nsum s = {0};
            probe_init(w, k, &p);
            if (!use_grid) {
                scan_brute(w, &p, &s);
            } else {
                /* Gather each cell's block once. */
                if (k >= cell_end) {
                    while (g->start[cell + 1] <= k)
                        cell++;
                    cell_end = g->start[cell + 1];
                    block_of(w, cell, &bl);
                    gathered = gather_block(w, &bl, gb, &gc);
                }
                if (gathered >= 0) {
                    scan(&gc, &p, 0, (uint32_t)gathered, 0.0f, 0.0f, &s);
                } else {
                    scan_block(w, &bl, &p, &s);
                }
            }
            store_sums(ln, k - first, &s);
        }
        settle_slice(w, ln, first, last);
    }
}

/* ---- the step, in phases ------------------------------------------------- */

/*
 * A step runs as: the groups' constants (serial); each boid's cell (by
 * boid); the counting sort (serial); the sorted scratch (by slot); the
 * steering and integration (by slot, a slice at a time). Every phase
 * computes each element from state the phases before it finished, never
 * from a neighbour in the same phase (the steering reads the sorted
 * scratch, and moves each boid's own state only), so how a phase is cut
 * and who runs which piece changes nothing in the result.
 */
struct step_job {
    struct sim_world *w;
    unsigned parts;
};

/* Pieces of a phase start at multiples of this many elements. A loop the
 * compiler vectorised runs its elements in vectors from its start and the
 * last few one by one, and the two can round differently (flock_forces'
 * vectors take 1 / sqrt as an estimate refined by a Newton step, its
 * scalar tail divides by sqrtf). Cut at a multiple of every vector step
 * (lanes x unroll <= 64), each element falls on the same side of that line
 * as in an uncut loop: in a vector when [0, n) would run it in a vector. */
#define SIM_CUT 64

/* Part `part` of `parts` of [0, n), cut at multiples of SIM_CUT. */
static void part_range(uint32_t n, unsigned part, unsigned parts, uint32_t *a, uint32_t *b)
{
    uint32_t cut = ~(uint32_t)(SIM_CUT - 1);
    *a = (uint32_t)((uint64_t)n * part / parts) & cut;
    *b = part + 1 == parts ? n : (uint32_t)((uint64_t)n * (part + 1) / parts) & cut;
}

static void phase_cells(void *arg, unsigned part)
{
    struct step_job *j = arg;
    struct sim_world *w = j->w;
    uint32_t a, b;
    part_range(w->count, part, j->parts, &a, &b);
    grid_cells(&w->grid, w->x, w->y, a, b);
}

static void phase_slots(void *arg, unsigned part)
{
    struct step_job *j = arg;
    uint32_t a, b;
    part_range(j->w->count, part, j->parts, &a, &b);
    prepare_slots(j->w, a, b);
}

static void phase_steer(void *arg, unsigned part)
{
    struct step_job *j = arg;
    uint32_t a, b;
    part_range(j->w->count, part, j->parts, &a, &b);
    steer_range(j->w, part, a, b); /* concurrent parts: distinct lanes */
}

/* Runs every part of a phase: through the fork, or here one by one. */
static void run_phase(const struct sim_fork *f, sim_part_fn *fn, struct step_job *j)
{
    if (f && j->parts > 1) {
        f->run(f->ctx, fn, j, j->parts);
        return;
    }
    for (unsigned p = 0; p < j->parts; p++)
        fn(j, p);
}

void sim_step_forked(struct sim_world *w, const struct sim_fork *f)
{
    struct step_job j = {w, 1};
    if (f && f->parts > 1)
        j.parts = f->parts < SIM_PARTS ? f->parts : SIM_PARTS;
    prepare_groups(w);
    struct squad_world sw = squads_of(w);
    squad_step(&sw);
    for (unsigned p = 0; p < SIM_PARTS; p++)
        w->lanes[p].neighbours = 0;
    run_phase(f, phase_cells, &j);
    grid_sort(&w->grid, w->count);
    run_phase(f, phase_slots, &j);
    run_phase(f, phase_steer, &j);
    w->neighbours = 0;
    for (unsigned p = 0; p < SIM_PARTS; p++)
        w->neighbours += w->lanes[p].neighbours;
    w->stepped_count = w->count;
    w->tick++;
    w->stepped = 1;
}

void sim_step(struct sim_world *w)
{
    sim_step_forked(w, NULL);
}

/* ---- squads ------------------------------------------------------------- */

int sim_select(struct sim_world *w, int group, int squad, const struct sim_selection *sel)
{
    struct squad_world sw = squads_of(w);
    return squad_select(&sw, group, squad, sel);
}

int sim_order(struct sim_world *w, int group, int squad, const struct sim_order_args *o)
{
    struct squad_world sw = squads_of(w);
    return o ? squad_order(&sw, group, squad, o) : SIM_EINVAL;
}

int sim_formation(struct sim_world *w, int group, int squad, enum sim_shape shape, float spacing)
{
    struct squad_world sw = squads_of(w);
    return squad_formation(&sw, group, squad, shape, spacing);
}

const struct sim_squad *sim_squad(const struct sim_world *w, int group, int squad)
{
    if (!valid_group(group) || squad < 1 || squad > SIM_SQUADS)
        return NULL;
    return &w->squads[group][squad];
}

uint32_t sim_squad_news(const struct sim_world *w, int group)
{
    return valid_group(group) ? w->squad_news[group] : 0;
}

int sim_boid_squad(const struct sim_world *w, uint32_t i, uint32_t *slot)
{
    if (slot)
        *slot = i < w->count ? w->slot[i] : 0;
    return i < w->count ? w->squad[i] : 0;
}

/* ---- views, hash, stats ------------------------------------------------- */

void sim_view(const struct sim_world *w, struct sim_view *out)
{
    *out = (struct sim_view){
        .tick = w->tick,
        .epoch = w->epoch,
        .count = w->count,
        .width = w->cfg.width,
        .height = w->cfg.height,
        .x = w->x,
        .y = w->y,
        .vx = w->vx,
        .vy = w->vy,
        .group = w->group,
        .id = w->id,
        .next_id = w->next_id,
        .obstacle_count = w->obstacle_count,
        .obstacles = w->obstacles,
        .targets = w->targets,
    };
}

const float *sim_last_force_x(const struct sim_world *w)
{
    return w->stepped && w->cfg.keep_forces ? w->fx : NULL;
}

const float *sim_last_force_y(const struct sim_world *w)
{
    return w->stepped && w->cfg.keep_forces ? w->fy : NULL;
}

/* FNV-1a over 32-bit words: cheap enough to run every tick. */
static uint64_t hash_words(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 4 <= bytes; i += 4) {
        uint32_t v;
        memcpy(&v, p + i, 4);
        h = (h ^ v) * 0x100000001b3ULL;
    }
    for (; i < bytes; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t sim_hash(const struct sim_world *w)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t n = w->count;
    h = hash_words(h, &w->tick, sizeof w->tick);
    h = hash_words(h, &w->count, sizeof w->count);
    h = hash_words(h, w->x, n * sizeof(float));
    h = hash_words(h, w->y, n * sizeof(float));
    h = hash_words(h, w->vx, n * sizeof(float));
    h = hash_words(h, w->vy, n * sizeof(float));
    h = hash_words(h, w->group, n);
    h = hash_words(h, w->id, n * sizeof(uint32_t));
    h = hash_words(h, &w->next_id, sizeof w->next_id);
    h = hash_words(h, w->obstacles, w->obstacle_count * sizeof *w->obstacles);
    for (int g = 0; g < SIM_GROUPS; g++) { /* field by field: the struct has padding */
        const struct sim_target *t = &w->targets[g];
        h = hash_words(h, &t->active, sizeof t->active);
        h = hash_words(h, &t->x, sizeof t->x);
        h = hash_words(h, &t->y, sizeof t->y);
    }
    h = hash_words(h, w->params, sizeof w->params);
    h = hash_words(h, &w->rng, sizeof w->rng);
    /* Squads once a squad has had units since the reset (a world without
     * them hashes as it always has). The records have no padding. */
    for (int g = 0; g < SIM_GROUPS; g++)
        if (w->squads_used[g / 64] >> (g % 64) & 1u) {
            h = hash_words(h, &g, sizeof g);
            h = hash_words(h, w->squads[g], sizeof w->squads[g]);
        }
    if (w->squads_used[0] | w->squads_used[1] | w->squads_used[2] | w->squads_used[3]) {
        h = hash_words(h, w->squad, n);
        h = hash_words(h, w->slot, n * sizeof(uint32_t));
    }
    return h;
}

void sim_stats(const struct sim_world *w, struct sim_stats *out)
{
    double ux = 0, uy = 0, speed = 0;
    for (uint32_t i = 0; i < w->count; i++) {
        float s = sqrtf(w->vx[i] * w->vx[i] + w->vy[i] * w->vy[i]);
        if (s > 0.0f) {
            ux += w->vx[i] / s;
            uy += w->vy[i] / s;
        }
        speed += s;
    }
    double n = w->count ? w->count : 1;
    double stepped = w->stepped_count ? w->stepped_count : 1;
    out->count = w->count;
    out->polarization = (float)(sqrt(ux * ux + uy * uy) / n);
    out->mean_speed = (float)(speed / n);
    out->avg_neighbours = w->stepped ? (float)((double)w->neighbours / stepped) : 0.0f;
}

/* ---- for the core's own modules (sim_internal.h) ------------------------ */

void sim__state_ref(struct sim_world *w, struct sim_state_ref *out)
{
    *out = (struct sim_state_ref){
        .cfg = &w->cfg,
        .tick = &w->tick,
        .epoch = &w->epoch,
        .count = &w->count,
        .rng = &w->rng,
        .x = w->x,
        .y = w->y,
        .vx = w->vx,
        .vy = w->vy,
        .group = w->group,
        .id = w->id,
        .next_id = &w->next_id,
        .stepped = &w->stepped,
        .obstacles = w->obstacles,
        .obstacle_count = &w->obstacle_count,
        .next_obstacle_id = &w->next_obstacle_id,
        .targets = w->targets,
        .params = w->params,
        .squad = w->squad,
        .slot = w->slot,
        .squads = w->squads,
        .squads_used = w->squads_used,
        .squads_live = &w->squads_live,
        .squad_news = w->squad_news,
    };
}

const char *sim__config_error(const struct sim_config *c)
{
    return config_error(c);
}
