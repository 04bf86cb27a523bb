/*
 * flockstats.c — flock measures over a uniform grid (see flockstats.h).
 *
 * One pass does most of the work: boids are sorted into a grid of cells at
 * least R wide, then a breadth-first search labels clusters. Each boid is
 * taken from the queue exactly once and scans its 3 x 3 block of cells;
 * that one scan yields its local polarization, its nearest neighbour (if
 * closer than a cell) and the cluster's next members. Members get a
 * position laid out without the torus seam (the parent's plus the minimal
 * image offset); an edge whose two ends disagree on that layout by about a
 * world size means the cluster wraps around the world. A cluster's members
 * are contiguous in the queue, so its centre, rotation and polarization
 * are summed as soon as it is complete.
 */
#include "flockstats.h"

#include "grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNSEEN UINT32_MAX

struct flockstats {
    uint32_t capacity;
    struct grid grid;
    uint32_t *label; /* per boid: its cluster, or UNSEEN; the grid's cells until
                        the sort is done (a boid's cell is then worked out again) */
    uint32_t *queue; /* boids in visiting order: clusters are contiguous runs */
    float *lx, *ly;  /* per boid: position in its cluster's seamless layout */
    float *ux, *uy;  /* per boid: unit heading; the frame's ux, uy when it has them */
    float *own_ux, *own_uy;
    float *nn; /* per boid: nearest-neighbour distance */
};

/* One grid cell per boid (at least 4096) keeps rings short in sparse worlds. */
static uint32_t cells_for(uint32_t capacity)
{
    return capacity < 4096 ? 4096 : capacity;
}

struct flockstats *flockstats_create(uint32_t capacity, const char **err)
{
    if (capacity < 1 || capacity > FLOCKSTATS_MAX_CAPACITY) {
        if (err)
            *err = "capacity must be in [1, 4194304]";
        return NULL;
    }
    size_t n = capacity, cells = cells_for(capacity);
    size_t bytes = sizeof(struct flockstats) + grid_bytes(capacity, (uint32_t)cells) +
                   2 * n * sizeof(uint32_t) + 5 * n * sizeof(float);
    struct flockstats *s = calloc(1, bytes);
    if (!s) {
        if (err)
            *err = "out of memory";
        return NULL;
    }
    s->capacity = capacity;
    char *cur = (char *)(s + 1);
    grid_init(&s->grid, cur, capacity, (uint32_t)cells);
    cur += grid_bytes(capacity, (uint32_t)cells);
    s->label = (uint32_t *)cur;
    s->queue = s->label + n;
    s->lx = (float *)(s->queue + n);
    s->ly = s->lx + n;
    s->own_ux = s->ly + n;
    s->own_uy = s->own_ux + n;
    s->nn = s->own_uy + n;
    grid_share_cells(&s->grid, s->label); /* calloc'd: the grid's own stay untouched */
    return s;
}

void flockstats_destroy(struct flockstats *s)
{
    free(s);
}

void flockstats_frame_of(const struct sim_world *w, struct flockstats_frame *f)
{
    struct sim_view v;
    sim_view(w, &v);
    *f = (struct flockstats_frame){
        .count = v.count,
        .width = v.width,
        .height = v.height,
        .wrap = sim_config(w)->edges == SIM_EDGES_WRAP,
        .radius = sim_group_params(w, 0)->perception,
        .x = v.x,
        .y = v.y,
        .vx = v.vx,
        .vy = v.vy,
    };
}

static int frame_error(const struct flockstats *s, const struct flockstats_frame *f)
{
    if (f->count > s->capacity)
        return SIM_ECAPACITY;
    if (f->count > 0 && (!f->x || !f->y || !f->vx || !f->vy))
        return SIM_EINVAL;
    if (!(isfinite(f->width) && f->width > 0.0f && isfinite(f->height) && f->height > 0.0f &&
          isfinite(f->radius) && f->radius > 0.0f))
        return SIM_ERANGE;
    for (uint32_t i = 0; i < f->count; i++)
        if (!(f->x[i] >= 0.0f && f->x[i] <= f->width && f->y[i] >= 0.0f && f->y[i] <= f->height &&
              isfinite(f->vx[i]) && isfinite(f->vy[i])))
            return SIM_ERANGE;
    return SIM_OK;
}

/* Minimal-image offset on a torus: the shortest signed delta. */
static float seam_delta(float d, float size)
{
    if (d > 0.5f * size)
        return d - size;
    if (d < -0.5f * size)
        return d + size;
    return d;
}

/* The distinct cells' columns (or rows) at offsets -1, 0, +1 from c, wrapped
 * on a torus and clipped at walls. Returns how many (1..3). */
static int near_lines(int c, int lines, int wrap, int out[3])
{
    int n = 0;
    for (int d = -1; d <= 1; d++) {
        int v = c + d;
        if (wrap)
            v = (v + lines) % lines;
        else if (v < 0 || v >= lines)
            continue;
        int dup = 0;
        for (int k = 0; k < n; k++)
            dup |= out[k] == v;
        if (!dup)
            out[n++] = v;
    }
    return n;
}

/* What one boid's scan of its block gathers. */
struct probe {
    uint32_t i;
    float hx, hy;    /* sum of unit headings within R, its own included */
    uint32_t near;   /* boids within R, itself included */
    float best2;     /* squared distance of the nearest other boid seen */
    int wraps;       /* an edge disagreed with the seamless layout */
    uint32_t tail;   /* queue end: new cluster members go here */
    uint32_t member; /* label of the cluster being searched */
};

/* Offset from boid i to boid j, by minimal image on a torus. */
static void offset(const struct flockstats_frame *f, uint32_t i, uint32_t j, float *dx, float *dy)
{
    *dx = f->x[j] - f->x[i];
    *dy = f->y[j] - f->y[i];
    if (f->wrap) {
        *dx = seam_delta(*dx, f->width);
        *dy = seam_delta(*dy, f->height);
    }
}

/* Takes boid j, seen from p->i at offset (dx, dy), into the probe. */
static void meet(struct flockstats *s, const struct flockstats_frame *f, struct probe *p,
                 uint32_t j, float dx, float dy)
{
    float d2 = dx * dx + dy * dy;
    if (d2 < p->best2)
        p->best2 = d2;
    if (!(d2 < f->radius * f->radius))
        return;
    p->hx += s->ux[j];
    p->hy += s->uy[j];
    p->near++;
    float lx = s->lx[p->i] + dx, ly = s->ly[p->i] + dy;
    if (s->label[j] == UNSEEN) {
        s->label[j] = p->member;
        s->lx[j] = lx;
        s->ly[j] = ly;
        s->queue[p->tail++] = j;
    } else if (fabsf(lx - s->lx[j]) > 0.5f * f->width || fabsf(ly - s->ly[j]) > 0.5f * f->height) {
        p->wraps = 1;
    }
}

/* Scans the 3 x 3 block of cells around boid p->i. */
static void scan_block(struct flockstats *s, const struct flockstats_frame *f, struct probe *p)
{
    const struct grid *g = &s->grid;
    uint32_t cell = grid_cell_of(g, f->x[p->i], f->y[p->i]);
    int cols[3], rows[3];
    int nc = near_lines((int)(cell % g->ncols), (int)g->ncols, f->wrap, cols);
    int nr = near_lines((int)(cell / g->ncols), (int)g->nrows, f->wrap, rows);
    for (int r = 0; r < nr; r++) {
        for (int c = 0; c < nc; c++) {
            uint32_t k = (uint32_t)rows[r] * g->ncols + (uint32_t)cols[c];
            for (uint32_t q = g->start[k]; q < g->start[k + 1]; q++) {
                uint32_t j = g->order[q];
                float dx, dy;
                if (j == p->i)
                    continue;
                offset(f, p->i, j, &dx, &dy);
                meet(s, f, p, j, dx, dy);
            }
        }
    }
}

/* Squared distance from boid i to its nearest neighbour among the cells at
 * Chebyshev distance exactly `ring` from cell (cx, cy), or INFINITY. */
static float ring_best(const struct flockstats *s, const struct flockstats_frame *f, uint32_t i,
                       int cx, int cy, int ring)
{
    const struct grid *g = &s->grid;
    int nc = (int)g->ncols, nr = (int)g->nrows;
    float best = INFINITY;
    for (int dy = -ring; dy <= ring; dy++) {
        int edge = dy == -ring || dy == ring, step = edge ? 1 : 2 * ring;
        for (int dx = -ring; dx <= ring; dx += step) {
            int col = cx + dx, row = cy + dy;
            if (f->wrap) {
                col = ((col % nc) + nc) % nc;
                row = ((row % nr) + nr) % nr;
            } else if (col < 0 || col >= nc || row < 0 || row >= nr) {
                continue;
            }
            uint32_t k = (uint32_t)row * g->ncols + (uint32_t)col;
            for (uint32_t q = g->start[k]; q < g->start[k + 1]; q++) {
                uint32_t j = g->order[q];
                float ox, oy;
                if (j == i)
                    continue;
                offset(f, i, j, &ox, &oy);
                best = fminf(best, ox * ox + oy * oy);
            }
        }
    }
    return best;
}

/*
 * Nearest neighbour of a boid none of whose block's boids is within a cell
 * width: rings of cells further out, until the best distance found is no
 * more than the nearest an unsearched cell could hold (ring - 1 cells), or
 * every cell was searched.
 */
static float far_nearest(const struct flockstats *s, const struct flockstats_frame *f, uint32_t i,
                         float best2)
{
    const struct grid *g = &s->grid;
    float cell = fminf(g->cell_w, g->cell_h);
    uint32_t at = grid_cell_of(g, f->x[i], f->y[i]);
    int cx = (int)(at % g->ncols), cy = (int)(at / g->ncols);
    int last = (int)(g->ncols > g->nrows ? g->ncols : g->nrows);
    for (int ring = 1;; ring++) {
        float reach = (float)ring * cell;
        if (best2 <= reach * reach || ring >= last)
            return best2;
        best2 = fminf(best2, ring_best(s, f, i, cx, cy, ring + 1));
    }
}

/* Sums of one complete cluster, queue[a, b). */
struct cluster_sum {
    double cx, cy, px, py, rot;
};

static void judge_cluster(const struct flockstats *s, uint32_t a, uint32_t b, int wraps,
                          struct flockstats_result *out, uint32_t *milling)
{
    uint32_t n = b - a;
    out->clusters++;
    if (n > out->largest_cluster)
        out->largest_cluster = n;
    if (n < FLOCKSTATS_MILL_MIN)
        return;
    out->flocks++;
    if (wraps)
        return;
    struct cluster_sum c = {0};
    for (uint32_t q = a; q < b; q++) {
        uint32_t i = s->queue[q];
        c.cx += s->lx[i];
        c.cy += s->ly[i];
        c.px += s->ux[i];
        c.py += s->uy[i];
    }
    c.cx /= n;
    c.cy /= n;
    for (uint32_t q = a; q < b; q++) {
        uint32_t i = s->queue[q];
        double rx = s->lx[i] - c.cx, ry = s->ly[i] - c.cy, r = sqrt(rx * rx + ry * ry);
        if (r > 0.0)
            c.rot += (rx * s->uy[i] - ry * s->ux[i]) / r;
    }
    double m = fabs(c.rot) / n, pol = sqrt(c.px * c.px + c.py * c.py) / n;
    if (m > FLOCKSTATS_MILL_ROTATION && pol < FLOCKSTATS_MILL_POLARIZATION) {
        out->mills++;
        *milling += n;
    }
}

/* Unit headings and the measures that need no neighbours. The headings
 * may overwrite the velocities (f->ux == f->vx): each is read first. */
static void headings(struct flockstats *s, const struct flockstats_frame *f,
                     struct flockstats_result *out)
{
    double sx = 0, sy = 0, speed = 0;
    s->ux = f->ux && f->uy ? f->ux : s->own_ux;
    s->uy = f->ux && f->uy ? f->uy : s->own_uy;
    for (uint32_t i = 0; i < f->count; i++) {
        float vx = f->vx[i], vy = f->vy[i];
        float v = sqrtf(vx * vx + vy * vy);
        float k = v > 0.0f ? 1.0f / v : 0.0f;
        s->ux[i] = vx * k;
        s->uy[i] = vy * k;
        sx += s->ux[i];
        sy += s->uy[i];
        speed += v;
        s->label[i] = UNSEEN;
    }
    double n = f->count ? f->count : 1;
    out->global_polarization = (float)(sqrt(sx * sx + sy * sy) / n);
    out->mean_speed = (float)(speed / n);
}

/* Labels every cluster breadth-first, measuring each boid on the way. */
static double search_clusters(struct flockstats *s, const struct flockstats_frame *f,
                              struct flockstats_result *out, uint32_t *milling)
{
    double local = 0;
    struct probe p = {.tail = 0, .member = 0};
    for (uint32_t seed = 0; seed < f->count; seed++) {
        if (s->label[seed] != UNSEEN)
            continue;
        uint32_t head = p.tail, first = p.tail;
        s->label[seed] = p.member;
        s->lx[seed] = f->x[seed];
        s->ly[seed] = f->y[seed];
        s->queue[p.tail++] = seed;
        p.wraps = 0;
        while (head < p.tail) {
            p.i = s->queue[head++];
            p.hx = s->ux[p.i];
            p.hy = s->uy[p.i];
            p.near = 1;
            p.best2 = INFINITY;
            scan_block(s, f, &p);
            s->nn[p.i] = sqrtf(far_nearest(s, f, p.i, p.best2));
            local += sqrt((double)p.hx * p.hx + (double)p.hy * p.hy) / p.near;
        }
        judge_cluster(s, first, p.tail, p.wraps, out, milling);
        p.member++;
    }
    return local;
}

static void swap_f(float *a, float *b)
{
    float t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest of v[0 .. n) (0-based); reorders v. Quickselect with a
 * median-of-three pivot and Hoare partitioning (Wirth's), which splits runs
 * of equal values evenly: a lattice's distances are all equal. */
static float select_kth(float *v, uint32_t n, uint32_t kth)
{
    long lo = 0, hi = (long)n - 1, k = (long)kth;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo])
            swap_f(&v[mid], &v[lo]);
        if (v[hi] < v[lo])
            swap_f(&v[hi], &v[lo]);
        if (v[hi] < v[mid])
            swap_f(&v[hi], &v[mid]);
        float pivot = v[mid];
        long i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j)
                swap_f(&v[i++], &v[j--]);
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Nearest-rank percentile p in (0, 1] of v[0 .. n), n >= 1. */
static float percentile(float *v, uint32_t n, double p)
{
    double rank = ceil(p * n);
    uint32_t k = rank < 1 ? 0 : (uint32_t)rank - 1;
    return select_kth(v, n, k < n ? k : n - 1);
}

int flockstats_measure(struct flockstats *s, const struct flockstats_frame *f,
                       struct flockstats_result *out)
{
    int rc = frame_error(s, f);
    if (rc < 0)
        return rc;
    struct flockstats_result r = {.count = f->count};
    grid_layout(&s->grid, f->width, f->height, f->radius);
    grid_build(&s->grid, f->x, f->y, f->count); /* the cells in label[], before headings() */
    headings(s, f, &r);
    uint32_t milling = 0;
    double local = search_clusters(s, f, &r, &milling);
    if (f->count > 0) {
        r.local_polarization = (float)(local / f->count);
        r.mill_fraction = (float)milling / (float)f->count;
    }
    if (f->count > 1) {
        r.nn_p5 = percentile(s->nn, f->count, 0.05);
        r.nn_median = percentile(s->nn, f->count, 0.5);
    }
    *out = r;
    return SIM_OK;
}
