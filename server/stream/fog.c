/*
 * fog.c — each team's sight over a room's boids (see fog.h).
 */
#include "fog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CELLS 256 /* cells across or down */

struct fog {
    uint32_t capacity;
    uint32_t *cell;  /* each boid's cell */
    uint32_t *order; /* boids by cell */
    uint32_t *start; /* MAX_CELLS^2 + 1 */
};

struct fog *fog_create(uint32_t capacity, const char **err)
{
    struct fog *f = calloc(1, sizeof *f);
    if (f) {
        f->capacity = capacity;
        f->cell = malloc(((size_t)capacity + 1) * sizeof *f->cell);
        f->order = malloc(((size_t)capacity + 1) * sizeof *f->order);
        f->start = malloc(((size_t)MAX_CELLS * MAX_CELLS + 1) * sizeof *f->start);
    }
    if (!f || !f->cell || !f->order || !f->start) {
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
    free(f->cell);
    free(f->order);
    free(f->start);
    free(f);
}

/* The grid: cells of at least `size` units, at most MAX_CELLS across. */
struct grid {
    uint32_t nx, ny;
    float cx, cy; /* cell width and height */
    int wrap;
};

static struct grid grid_for(const struct sim_view *w, float size, int wrap)
{
    struct grid g = {.wrap = wrap};
    float s = size > 1.0f ? size : 1.0f;
    g.nx = (uint32_t)fminf(fmaxf(floorf(w->width / s), 1.0f), MAX_CELLS);
    g.ny = (uint32_t)fminf(fmaxf(floorf(w->height / s), 1.0f), MAX_CELLS);
    g.cx = w->width / (float)g.nx;
    g.cy = w->height / (float)g.ny;
    return g;
}

static uint32_t axis_cell(float v, float c, uint32_t n)
{
    float k = floorf(v / c);
    return k < 0.0f ? 0 : k >= (float)n ? n - 1 : (uint32_t)k;
}

/* Buckets the boids by cell (a counting sort into f->order). */
static void bucket(struct fog *f, const struct sim_view *w, const struct grid *g)
{
    uint32_t cells = g->nx * g->ny;
    memset(f->start, 0, ((size_t)cells + 1) * sizeof *f->start);
    for (uint32_t i = 0; i < w->count; i++) {
        f->cell[i] = axis_cell(w->y[i], g->cy, g->ny) * g->nx + axis_cell(w->x[i], g->cx, g->nx);
        f->start[f->cell[i] + 1]++;
    }
    for (uint32_t c = 0; c < cells; c++)
        f->start[c + 1] += f->start[c];
    for (uint32_t i = 0; i < w->count; i++)
        f->order[f->start[f->cell[i]]++] = i;
    for (uint32_t c = cells; c > 0; c--) /* back to the starts */
        f->start[c] = f->start[c - 1];
    f->start[0] = 0;
}

/* The distance along an axis of size `size`, the shorter way on a torus. */
static float axis_gap(float a, float b, float size, int wrap)
{
    float d = fabsf(a - b);
    return wrap && d > size - d ? size - d : d;
}

/* The cells around u's (3 x 3, wrapped on a torus, cut at the edges
 * otherwise), each once even on a grid smaller than 3 across. */
static unsigned cells_around(const struct fog *f, const struct grid *g, uint32_t u, uint32_t *out)
{
    int32_t ux = (int32_t)(f->cell[u] % g->nx), uy = (int32_t)(f->cell[u] / g->nx);
    unsigned n = 0;
    for (int32_t dy = -1; dy <= 1; dy++) {
        for (int32_t dx = -1; dx <= 1; dx++) {
            int32_t x = ux + dx, y = uy + dy;
            if (g->wrap) {
                x = (x + (int32_t)g->nx) % (int32_t)g->nx;
                y = (y + (int32_t)g->ny) % (int32_t)g->ny;
            } else if (x < 0 || y < 0 || x >= (int32_t)g->nx || y >= (int32_t)g->ny) {
                continue;
            }
            uint32_t c = (uint32_t)y * g->nx + (uint32_t)x;
            unsigned k = 0;
            while (k < n && out[k] != c)
                k++;
            if (k == n)
                out[n++] = c;
        }
    }
    return n;
}

/* Unit u marks with `bit` every boid within sqrt(r2) of it. */
static void look(const struct fog *f, const struct sim_view *w, const struct grid *g, uint32_t u,
                 float r2, uint32_t bit, uint32_t *visible)
{
    uint32_t cells[9];
    unsigned n = cells_around(f, g, u, cells);
    for (unsigned j = 0; j < n; j++) {
        for (uint32_t k = f->start[cells[j]]; k < f->start[cells[j] + 1]; k++) {
            uint32_t v = f->order[k];
            float ex = axis_gap(w->x[u], w->x[v], w->width, g->wrap);
            float ey = axis_gap(w->y[u], w->y[v], w->height, g->wrap);
            if (ex * ex + ey * ey <= r2)
                visible[v] |= bit;
        }
    }
}

void fog_compute(struct fog *f, const struct sim_view *world, const struct sim_world *params,
                 unsigned teams, uint32_t *visible)
{
    if (teams > FOG_MAX_TEAMS)
        teams = FOG_MAX_TEAMS;
    memset(visible, 0, (size_t)world->count * sizeof *visible);
    float reach = 1.0f;
    for (unsigned t = 1; t <= teams; t++)
        reach = fmaxf(reach, sim_group_params(params, (int)t)->sight_radius);
    struct grid g = grid_for(world, reach, sim_config(params)->edges == SIM_EDGES_WRAP);
    bucket(f, world, &g);
    for (uint32_t u = 0; u < world->count; u++) {
        unsigned t = world->group[u];
        if (t < 1 || t > teams)
            continue;
        uint32_t bit = 1u << t;
        visible[u] |= bit;
        float r = sim_group_params(params, (int)t)->sight_radius;
        if (r > 0.0f)
            look(f, world, &g, u, r * r, bit, visible);
    }
}
