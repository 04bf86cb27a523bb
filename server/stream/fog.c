/*
 * fog.c — each team's sight over a room's boids (see fog.h).
 */
#include "fog.h"

#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CELLS   256        /* cells across or down */
#define MAX_BUCKETS (1u << 18) /* cells x teams */

struct fog {
    uint32_t capacity;
    uint32_t *bucket; /* each unit's bucket: its cell x teams + its team - 1 */
    uint32_t *order;  /* the units by bucket */
    uint32_t *start;  /* MAX_BUCKETS + 1 */
};

struct fog *fog_create(uint32_t capacity, const char **err)
{
    struct fog *f = calloc(1, sizeof *f);
    if (f) {
        f->capacity = capacity;
        f->bucket = malloc(((size_t)capacity + 1) * sizeof *f->bucket);
        f->order = malloc(((size_t)capacity + 1) * sizeof *f->order);
        f->start = malloc(((size_t)MAX_BUCKETS + 1) * sizeof *f->start);
    }
    if (!f || !f->bucket || !f->order || !f->start) {
        fog_destroy(f);
        *err = "out of memory";
        return NULL;
    }
    return f;
}

void fog_destroy(struct fog *f)
{
    if (!f)
        return;
    free(f->bucket);
    free(f->order);
    free(f->start);
    free(f);
}

/* The grid: cells of at least `size` units, at most MAX_CELLS across, and
 * no more than MAX_BUCKETS / teams of them. */
struct grid {
    uint32_t nx, ny;
    float cx, cy; /* cell width and height */
    int wrap;
};

static struct grid grid_for(const struct sim_view *w, float size, unsigned teams, int wrap)
{
    struct grid g = {.wrap = wrap};
    float s = size > 1.0f ? size : 1.0f;
    for (;; s *= 1.5f) {
        g.nx = (uint32_t)fminf(fmaxf(floorf(w->width / s), 1.0f), MAX_CELLS);
        g.ny = (uint32_t)fminf(fmaxf(floorf(w->height / s), 1.0f), MAX_CELLS);
        if ((uint64_t)g.nx * g.ny * teams <= MAX_BUCKETS)
            break;
    }
    g.cx = w->width / (float)g.nx;
    g.cy = w->height / (float)g.ny;
    return g;
}

static uint32_t axis_cell(float v, float c, uint32_t n)
{
    float k = floorf(v / c);
    return k < 0.0f ? 0 : k >= (float)n ? n - 1 : (uint32_t)k;
}

static uint32_t cell_of(const struct sim_view *w, const struct grid *g, uint32_t i)
{
    return axis_cell(w->y[i], g->cy, g->ny) * g->nx + axis_cell(w->x[i], g->cx, g->nx);
}

/* Buckets the units of teams 1..teams by cell and team (a counting sort
 * into f->order); the other boids see nothing and are left out. */
static void bucket(struct fog *f, const struct sim_view *w, const struct grid *g, unsigned teams)
{
    uint32_t buckets = g->nx * g->ny * teams;
    memset(f->start, 0, ((size_t)buckets + 1) * sizeof *f->start);
    for (uint32_t i = 0; i < w->count; i++) {
        unsigned t = w->group[i];
        if (t < 1 || t > teams)
            continue;
        f->bucket[i] = cell_of(w, g, i) * teams + t - 1;
        f->start[f->bucket[i] + 1]++;
    }
    for (uint32_t b = 0; b < buckets; b++)
        f->start[b + 1] += f->start[b];
    for (uint32_t i = 0; i < w->count; i++) {
        unsigned t = w->group[i];
        if (t >= 1 && t <= teams)
            f->order[f->start[f->bucket[i]]++] = i;
    }
    for (uint32_t b = buckets; b > 0; b--) /* back to the starts */
        f->start[b] = f->start[b - 1];
    f->start[0] = 0;
}

/* The distance along an axis of size `size`, the shorter way on a torus. */
static float axis_gap(float a, float b, float size, int wrap)
{
    float d = fabsf(a - b);
    return wrap && d > size - d ? size - d : d;
}

/* The cells around cell c (3 x 3, wrapped on a torus, cut at the edges
 * otherwise), each once even on a grid smaller than 3 across. */
static unsigned cells_around(const struct grid *g, uint32_t c, uint32_t *out)
{
    int32_t cx = (int32_t)(c % g->nx), cy = (int32_t)(c / g->nx);
    unsigned n = 0;
    for (int32_t dy = -1; dy <= 1; dy++) {
        for (int32_t dx = -1; dx <= 1; dx++) {
            int32_t x = cx + dx, y = cy + dy;
            if (g->wrap) {
                x = (x + (int32_t)g->nx) % (int32_t)g->nx;
                y = (y + (int32_t)g->ny) % (int32_t)g->ny;
            } else if (x < 0 || y < 0 || x >= (int32_t)g->nx || y >= (int32_t)g->ny) {
                continue;
            }
            uint32_t near = (uint32_t)y * g->nx + (uint32_t)x;
            unsigned k = 0;
            while (k < n && out[k] != near)
                k++;
            if (k == n)
                out[n++] = near;
        }
    }
    return n;
}

/* Whether a unit of team t (bucketed, teams in all) is within sqrt(r2)
 * of boid v, looking in the n cells given: stops at the first. */
static bool seen_by(const struct fog *f, const struct sim_view *w, const struct grid *g,
                    const uint32_t *cells, unsigned n, unsigned teams, unsigned t, float r2,
                    uint32_t v)
{
    for (unsigned j = 0; j < n; j++) {
        uint32_t b = cells[j] * teams + t - 1;
        for (uint32_t k = f->start[b]; k < f->start[b + 1]; k++) {
            uint32_t u = f->order[k];
            float ex = axis_gap(w->x[u], w->x[v], w->width, g->wrap);
            float ey = axis_gap(w->y[u], w->y[v], w->height, g->wrap);
            if (ex * ex + ey * ey <= r2)
                return true;
        }
    }
    return false;
}

/*
 * Each boid asks each other team whether one of its units near enough
 * sees it, and stops at the first that does: units crowd (a squad in
 * formation), so the answer comes after a look or two, where marking
 * from every unit outwards touched each boid once per unit around it.
 */
void fog_compute(struct fog *f, const struct sim_view *world, const struct sim_world *params,
                 unsigned teams, uint32_t *visible)
{
    if (teams > FOG_MAX_TEAMS)
        teams = FOG_MAX_TEAMS;
    memset(visible, 0, (size_t)world->count * sizeof *visible);
    if (teams == 0)
        return;
    float reach = 1.0f, r2[FOG_MAX_TEAMS + 1];
    for (unsigned t = 1; t <= teams; t++) {
        float r = sim_group_params(params, (int)t)->sight_radius;
        r2[t] = r > 0.0f ? r * r : -1.0f; /* sight 0: its own units only */
        reach = fmaxf(reach, r);
    }
    struct grid g = grid_for(world, reach, teams, sim_config(params)->edges == SIM_EDGES_WRAP);
    bucket(f, world, &g, teams);
    for (uint32_t v = 0; v < world->count; v++) {
        unsigned own = world->group[v];
        uint32_t cells[9];
        unsigned n = cells_around(&g, cell_of(world, &g, v), cells);
        uint32_t seen = own >= 1 && own <= teams ? 1u << own : 0;
        for (unsigned t = 1; t <= teams; t++)
            if (t != own && r2[t] >= 0.0f && seen_by(f, world, &g, cells, n, teams, t, r2[t], v))
                seen |= 1u << t;
        visible[v] = seen;
    }
}
