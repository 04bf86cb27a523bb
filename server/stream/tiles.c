/*
 * tiles.c — a snapshot's boids by tile for version 3, its views and its
 * lazily encoded parts (see tiles.h).
 *
 * Boids are put in (tile, id) order by a least-significant-digit radix
 * sort (the id's bytes, then the tile): a few passes over the boids, no
 * comparison sort. A team's audience filters that order, which keeps it;
 * a view at a shift above 0 sorts its sample again by (super-tile, id).
 *
 * A part's slot goes EMPTY -> BUSY (one thread encodes) -> READY or
 * FAILED; a thread that finds it BUSY yields until it is not. Parts are
 * malloc'd one by one and freed with their tileset.
 */
#define _GNU_SOURCE

#include "tiles.h"

#include "tileneed.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define VIEWS ((PROTO_V3_MAX_SHIFT + 1) * (PROTO_V3_MAX_SAMPLE + 1))
/* The parts a super-tile of a snapshot keeps: its key and up to
 * VARIANTS - 1 deltas, each on the gaps its first taker asked for (clients
 * that keep up share one or two; those that fall behind a few more). */
#define VARIANTS 8

static atomic_uint_fast64_t g_parts, g_part_bytes;

void tiles_counters(uint64_t *parts, uint64_t *bytes)
{
    *parts = atomic_load_explicit(&g_parts, memory_order_relaxed);
    *bytes = atomic_load_explicit(&g_part_bytes, memory_order_relaxed);
}

void tiles_grid_for(float width, float height, float tile, float max_speed, struct tiles_grid *out)
{
    double t = tile >= 1.0f ? tile : 1.0;
    double cols = ceil(width / t), rows = ceil(height / t);
    *out = (struct tiles_grid){.cols = (uint8_t)(cols < 1                    ? 1
                                                 : cols > PROTO_V3_MAX_TILES ? PROTO_V3_MAX_TILES
                                                                             : cols),
                               .rows = (uint8_t)(rows < 1                    ? 1
                                                 : rows > PROTO_V3_MAX_TILES ? PROTO_V3_MAX_TILES
                                                                             : rows),
                               .width = width,
                               .height = height,
                               .vscale = max_speed > 1.27f ? max_speed / 127.0f : 0.01f};
}

/* ---- boids by tile ------------------------------------------------------------ */

static uint32_t tile_of(const struct tiles_grid *g, uint16_t qx, uint16_t qy)
{
    return proto_v3_tile_of(qy, g->rows) * g->cols + proto_v3_tile_of(qx, g->cols);
}

/* Bits that hold every value up to v. */
static unsigned bits_for(uint64_t v)
{
    unsigned n = 0;
    while (v >> n)
        n++;
    return n;
}

/* One pass of a radix sort of key[0..n) by the DIGIT bits from `shift`
 * into out (stable), with idx (if any) moved along into idx_out. */
enum { DIGIT = 11, BUCKETS = 1 << DIGIT };
static void radix_pass(const uint64_t *key, const uint32_t *idx, uint32_t n, unsigned shift,
                       uint32_t *count, uint64_t *out, uint32_t *idx_out)
{
    memset(count, 0, (BUCKETS + 1) * sizeof *count);
    for (uint32_t i = 0; i < n; i++)
        count[(key[i] >> shift & (BUCKETS - 1)) + 1]++;
    for (int d = 0; d < BUCKETS; d++)
        count[d + 1] += count[d];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = count[key[i] >> shift & (BUCKETS - 1)]++;
        out[at] = key[i];
        if (idx)
            idx_out[at] = idx[i];
    }
}

/* The arrays a sort of n boids works in: two of keys, one of counts. */
struct sort_space {
    uint64_t *key, *key2;
    uint32_t *count;
};

/*
 * perm[0..n): 0..n-1 ordered by (tile[i], id[i]): a radix sort of the
 * keys tile << idbits | id, 11 bits a pass (a 250,000-boid room's keys
 * take three passes). When the key and the index fit 64 bits together
 * (always but for ids past 2^26 in the biggest rooms) the index rides in
 * the key's low bits and each pass moves one array; else beside it.
 * scratch holds n entries.
 */
static void sort_by_tile_id(const uint32_t *id, const uint32_t *tile, uint32_t n, uint32_t ntiles,
                            uint32_t *perm, uint32_t *scratch, const struct sort_space *sp)
{
    uint64_t *key = sp->key, *key2 = sp->key2;
    uint32_t *count = sp->count;
    uint32_t most = 0;
    for (uint32_t i = 0; i < n; i++)
        most = id[i] > most ? id[i] : most;
    unsigned idbits = bits_for(most), total = idbits + bits_for(ntiles);
    unsigned low = total + bits_for(n) <= 64 ? bits_for(n) : 0; /* the index's bits in the key */
    for (uint32_t i = 0; i < n; i++) {
        key[i] = ((uint64_t)tile[i] << idbits | id[i]) << low | (low ? i : 0);
        perm[i] = i;
    }
    uint32_t *idx = low ? NULL : perm, *idx2 = scratch;
    for (unsigned shift = low; shift < low + total; shift += DIGIT) {
        radix_pass(key, idx, n, shift, count, key2, idx2);
        uint64_t *k = key;
        key = key2, key2 = k;
        uint32_t *x = idx;
        idx = low ? NULL : idx2, idx2 = x;
    }
    if (low)
        for (uint32_t k = 0; k < n; k++)
            perm[k] = (uint32_t)(key[k] & ((1ull << low) - 1u));
    else if (idx != perm)
        memcpy(perm, idx, (size_t)n * sizeof *perm);
}

/* Bytes of a tiles_boids of n boids and `tiles` tiles, its arrays 16-aligned. */
static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static size_t boids_bytes(uint32_t n, uint32_t tiles)
{
    return round16((size_t)n * 4) + 2 * round16((size_t)n * 2) + 4 * round16(n) +
           round16(((size_t)tiles + 1) * 4);
}

static uint8_t *carve_boids(struct tiles_boids *b, uint8_t *p, uint32_t n, uint32_t tiles)
{
    b->count = n;
    b->id = (uint32_t *)(void *)p, p += round16((size_t)n * 4);
    b->qx = (uint16_t *)(void *)p, p += round16((size_t)n * 2);
    b->qy = (uint16_t *)(void *)p, p += round16((size_t)n * 2);
    b->heading = p, p += round16(n);
    b->group = p, p += round16(n);
    b->vx = (int8_t *)p, p += round16(n);
    b->vy = (int8_t *)p, p += round16(n);
    b->start = (uint32_t *)(void *)p;
    return p + round16(((size_t)tiles + 1) * 4);
}

/* Copies entry j of `from` to entry k of `to`. */
static void copy_boid(struct tiles_boids *to, uint32_t k, const struct tiles_boids *from,
                      uint32_t j)
{
    to->id[k] = from->id[j];
    to->qx[k] = from->qx[j];
    to->qy[k] = from->qy[j];
    to->heading[k] = from->heading[j];
    to->group[k] = from->group[j];
    to->vx[k] = from->vx[j];
    to->vy[k] = from->vy[j];
}

/* Sets b->start from the tile of each boid (entries already in tile order). */
static void set_starts(struct tiles_boids *b, const uint32_t *tile, uint32_t tiles)
{
    memset(b->start, 0, ((size_t)tiles + 1) * sizeof *b->start);
    for (uint32_t k = 0; k < b->count; k++)
        b->start[tile[k] + 1]++;
    for (uint32_t t = 0; t < tiles; t++)
        b->start[t + 1] += b->start[t];
}

struct tilestate {
    atomic_uint refs;
    uint32_t seq;
    uint64_t tick; /* the room's tick of this state */
    struct tiles_grid grid;
    struct tiles_boids base;
    uint32_t *widx; /* the audience of all: each entry's index in the world */
    uint64_t *sums; /* (cols + 1) x (rows + 1): boids of the tiles above and left of each */
    pthread_mutex_t lock;
    struct tiles_view *views[VIEWS];
    void *mem;
    /* A relay's (tiles_state_given()): its views came whole, none is built. */
    bool given;
    struct tileneed *need;
    unsigned audience;
};

static uint32_t grid_tiles(const struct tiles_grid *g)
{
    return (uint32_t)g->cols * g->rows;
}

/* A tilestate of n boids (arrays carved, nothing filled). */
static struct tilestate *state_new(const struct tiles_grid *g, uint32_t seq, uint32_t n, bool widx)
{
    struct tilestate *s = calloc(1, sizeof *s);
    size_t sums = ((size_t)g->cols + 1) * ((size_t)g->rows + 1) * sizeof *s->sums;
    size_t bytes =
        boids_bytes(n, grid_tiles(g)) + round16(sums) + (widx ? round16((size_t)n * 4) : 0);
    if (!s || !(s->mem = malloc(bytes))) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->seq = seq;
    s->grid = *g;
    uint8_t *p = carve_boids(&s->base, s->mem, n, grid_tiles(g));
    s->sums = (uint64_t *)(void *)p;
    p += round16(sums);
    s->widx = widx ? (uint32_t *)(void *)p : NULL;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

/* The table of sums of the tiles' counts (tiles_state_count_rect()): of
 * counts[] (one per tile), or of the state's own boids when NULL. */
static void set_sums(struct tilestate *s, const uint32_t *counts)
{
    uint32_t c = s->grid.cols, r = s->grid.rows;
    uint64_t *t = s->sums;
    memset(t, 0, ((size_t)c + 1) * (r + 1) * sizeof *t);
    for (uint32_t y = 0; y < r; y++)
        for (uint32_t x = 0; x < c; x++)
            t[(y + 1) * (c + 1) + x + 1] =
                (counts ? counts[y * c + x]
                        : s->base.start[y * c + x + 1] - s->base.start[y * c + x]) +
                t[y * (c + 1) + x + 1] + t[(y + 1) * (c + 1) + x] - t[y * (c + 1) + x];
}

/* Boids in tiles [x0, x1) x [y0, y1), none wrapping. */
static uint64_t sum_in(const struct tilestate *s, uint32_t x0, uint32_t y0, uint32_t x1,
                       uint32_t y1)
{
    const uint64_t *t = s->sums;
    uint32_t w = s->grid.cols + 1u;
    return t[y1 * w + x1] - t[y0 * w + x1] - t[y1 * w + x0] + t[y0 * w + x0];
}

uint64_t tiles_state_count_rect(const struct tilestate *s, uint32_t tx, uint32_t ty, uint32_t cols,
                                uint32_t rows)
{
    uint32_t gc = s->grid.cols, gr = s->grid.rows;
    cols = cols < gc ? cols : gc;
    rows = rows < gr ? rows : gr;
    tx %= gc;
    ty %= gr;
    /* Split at the grid's edges: up to four rects that do not wrap. */
    uint32_t xs[2][2] = {{tx, tx + cols < gc ? tx + cols : gc},
                         {0, tx + cols > gc ? tx + cols - gc : 0}};
    uint32_t ys[2][2] = {{ty, ty + rows < gr ? ty + rows : gr},
                         {0, ty + rows > gr ? ty + rows - gr : 0}};
    uint64_t n = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (xs[i][1] > xs[i][0] && ys[j][1] > ys[j][0])
                n += sum_in(s, xs[i][0], ys[j][0], xs[i][1], ys[j][1]);
    return n;
}

/* A velocity in steps of a field's mean (1 / inv_vscale units/s each),
 * rounded, within -127..127. */
static int8_t velocity_step(float v, float inv_vscale)
{
    float q = v * inv_vscale;
    q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q == q ? q : 0.0f;
    return (int8_t)(q + (q >= 0.0f ? 0.5f : -0.5f));
}

/* How many boids ahead gather_part() asks for a record. */
#define TILES_PREFETCH 16

/* A boid as a tile holds it, packed so that putting the boids in tile
 * order reads one record a boid rather than one line of each array. */
struct rec {
    uint32_t id;
    uint16_t qx, qy;
    uint8_t heading, group;
    int8_t vx, vy;
};

/* A tilestate being built: what its pieces (parts of the boids, cut
 * alike for each phase) read and write. */
struct build {
    const struct tiles_input *in;
    struct tilestate *s;
    struct rec *rec;
    uint32_t *tile, *perm, *sorted_tile;
    uint32_t n;
    unsigned parts;
};

/* Boids [from, to) of part `part` of n. */
static void part_range(uint32_t n, unsigned part, unsigned parts, uint32_t *from, uint32_t *to)
{
    *from = (uint32_t)((uint64_t)n * part / parts);
    *to = (uint32_t)((uint64_t)n * (part + 1) / parts);
}

/* A part of the world's boids as records, in world order, and each one's tile. */
static void recs_part(void *arg, unsigned part)
{
    const struct build *b = arg;
    const struct sim_view *w = b->in->world;
    const struct tiles_grid *g = b->in->grid;
    float inv = 1.0f / g->vscale;
    uint32_t from, to;
    part_range(b->n, part, b->parts, &from, &to);
    for (uint32_t i = from; i < to; i++) {
        struct rec *r = &b->rec[i];
        r->id = w->id[i];
        r->qx = b->in->qx ? b->in->qx[i] : proto_quantize_pos(w->x[i], w->width);
        r->qy = b->in->qy ? b->in->qy[i] : proto_quantize_pos(w->y[i], w->height);
        r->heading =
            b->in->heading ? b->in->heading[i] : proto_quantize_heading(w->vx[i], w->vy[i]);
        r->group = w->group[i];
        r->vx = velocity_step(w->vx[i], inv);
        r->vy = velocity_step(w->vy[i], inv);
        b->tile[i] = tile_of(g, r->qx, r->qy);
    }
}

/* A part of the sorted boids copied from their records into the state. */
static void gather_part(void *arg, unsigned part)
{
    const struct build *b = arg;
    struct tilestate *s = b->s;
    uint32_t from, to;
    part_range(b->n, part, b->parts, &from, &to);
    for (uint32_t k = from; k < to; k++) {
        uint32_t i = b->perm[k];
        /* The records are read in tile order, all over memory: ask for
         * one a few boids ahead while this one is copied. */
        if (k + TILES_PREFETCH < to) {
            uint32_t ahead = b->perm[k + TILES_PREFETCH];
            __builtin_prefetch(&b->rec[ahead]);
            __builtin_prefetch(&b->tile[ahead]);
        }
        const struct rec *r = &b->rec[i];
        s->widx[k] = i;
        s->base.id[k] = r->id;
        s->base.qx[k] = r->qx;
        s->base.qy[k] = r->qy;
        s->base.heading[k] = r->heading;
        s->base.group[k] = r->group;
        s->base.vx[k] = r->vx;
        s->base.vy[k] = r->vy;
        b->sorted_tile[k] = b->tile[i];
    }
}

/* fn over b's parts: through the fork when there is one, else here. */
static void run_parts(const struct sim_fork *fork, sim_part_fn *fn, struct build *b)
{
    if (b->parts > 1)
        fork->run(fork->ctx, fn, b, b->parts);
    else
        fn(b, 0);
}

void tiles_scratch_free(struct tiles_scratch *sc)
{
    free(sc->mem);
    *sc = (struct tiles_scratch){0};
}

/* A build's working arrays for n boids, carved from one block: the
 * caller's scratch (grown if need be) or, without one, *own (to free). */
static bool carve(struct tiles_scratch *sc, uint32_t n, struct build *b, struct sort_space *sp,
                  void **own)
{
    size_t m = (size_t)n + 1, u32 = round16(m * 4), u64 = round16(m * 8);
    size_t recs = round16(m * sizeof *b->rec), counts = round16((BUCKETS + 1) * 4);
    size_t bytes = 3 * u32 + recs + 2 * u64 + counts;
    uint8_t *p;
    *own = NULL;
    if (!sc) {
        p = *own = malloc(bytes);
    } else {
        if (sc->cap < bytes) {
            free(sc->mem);
            sc->cap = 0;
            if ((sc->mem = malloc(bytes)))
                sc->cap = bytes;
        }
        p = sc->mem;
    }
    if (!p)
        return false;
    b->tile = (uint32_t *)(void *)p;
    b->perm = (uint32_t *)(void *)(p + u32);
    b->sorted_tile = (uint32_t *)(void *)(p + 2 * u32);
    b->rec = (struct rec *)(void *)(p + 3 * u32);
    sp->key = (uint64_t *)(void *)(p + 3 * u32 + recs);
    sp->key2 = (uint64_t *)(void *)(p + 3 * u32 + recs + u64);
    sp->count = (uint32_t *)(void *)(p + 3 * u32 + recs + 2 * u64);
    return true;
}

struct tilestate *tiles_state_build(const struct tiles_input *in)
{
    const struct sim_view *w = in->world;
    const struct tiles_grid *g = in->grid;
    uint32_t n = w->count;
    struct build b = {.in = in, .s = state_new(g, in->seq, n, true), .n = n, .parts = 1};
    struct sort_space sp;
    void *own;
    if (in->fork && in->fork->run && n >= TILES_FORK_MIN)
        b.parts = in->fork->parts < SIM_PARTS ? in->fork->parts : SIM_PARTS;
    if (!carve(in->scratch, n, &b, &sp, &own) || !b.s) {
        free(own);
        tiles_state_release(b.s);
        return NULL;
    }
    b.s->tick = w->tick;
    run_parts(in->fork, recs_part, &b);
    sort_by_tile_id(w->id, b.tile, n, grid_tiles(g), b.perm, b.sorted_tile, &sp);
    run_parts(in->fork, gather_part, &b);
    set_starts(&b.s->base, b.sorted_tile, grid_tiles(g));
    set_sums(b.s, NULL);
    free(own);
    return b.s;
}

struct tilestate *tiles_state_filter(const struct tilestate *all, const struct sim_view *world,
                                     const uint32_t *visible, unsigned bit)
{
    (void)world;
    const struct tiles_boids *a = &all->base;
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->count; k++)
        n += visible[all->widx[k]] >> bit & 1u;
    struct tilestate *s = state_new(&all->grid, all->seq, n, false);
    uint32_t *tile = malloc(((size_t)n + 1) * 4);
    if (!s || !tile) {
        free(tile);
        tiles_state_release(s);
        return NULL;
    }
    s->tick = all->tick;
    uint32_t m = 0, tiles = grid_tiles(&all->grid);
    for (uint32_t t = 0; t < tiles; t++) {
        for (uint32_t k = a->start[t]; k < a->start[t + 1]; k++) {
            if (!(visible[all->widx[k]] >> bit & 1u))
                continue;
            tile[m] = t;
            copy_boid(&s->base, m++, a, k);
        }
    }
    set_starts(&s->base, tile, tiles);
    set_sums(s, NULL);
    free(tile);
    return s;
}

struct tilestate *tiles_state_ref(struct tilestate *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

/* A view is one allocation for its struct and hashes, another for its
 * boids (none at shift and sample 0: the state's own are its boids), and
 * another for its fields. */
struct view_block {
    struct tiles_view v;
    void *mem;
};

static void view_free(struct tiles_view *v)
{
    struct view_block *vb = (struct view_block *)(void *)v;
    if (!vb)
        return;
    free(vb->mem);
    free(v->field);
    free(vb);
}

void tiles_state_release(struct tilestate *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int k = 0; k < VIEWS; k++)
        view_free(s->views[k]);
    pthread_mutex_destroy(&s->lock);
    tileneed_release(s->need);
    free(s->mem);
    free(s);
}

uint32_t tiles_state_seq(const struct tilestate *s)
{
    return s->seq;
}

const struct tiles_grid *tiles_state_grid(const struct tilestate *s)
{
    return &s->grid;
}

uint32_t tiles_state_count(const struct tilestate *s, uint32_t t)
{
    uint32_t x = t % s->grid.cols, y = t / s->grid.cols;
    return t < grid_tiles(&s->grid) ? (uint32_t)sum_in(s, x, y, x + 1, y + 1) : 0;
}

/* ---- views -------------------------------------------------------------------- */

/* The super-tile of base tile t at shift k on a grid of gc super-tiles across. */
static uint32_t super_of(const struct tiles_grid *g, uint32_t t, unsigned k, uint32_t gc)
{
    return (t / g->cols >> k) * gc + (t % g->cols >> k);
}

/* Every boid the audience sees into its super-tile's field (§12.6). */
static void add_fields(const struct tilestate *s, struct tiles_view *v)
{
    const struct tiles_boids *b = &s->base;
    uint32_t cells = PROTO_V3_FIELD_CELLS, st_count = v->gc * v->gr;
    int32_t(*sum)[2] = calloc((size_t)st_count * cells * cells, sizeof *sum);
    for (uint32_t st = 0; st < st_count; st++)
        v->field[st].cells = cells;
    for (uint32_t t = 0; t < grid_tiles(&s->grid); t++) {
        uint32_t st = super_of(&s->grid, t, v->shift, v->gc);
        /* The super-tile's quantized extent: 2^shift tiles of 65536 / cols each. */
        uint64_t x0 = ((uint64_t)(st % v->gc) << v->shift) * 65536u / s->grid.cols;
        uint64_t y0 = ((uint64_t)(st / v->gc) << v->shift) * 65536u / s->grid.rows;
        uint64_t sx = ((uint64_t)65536u << v->shift) / s->grid.cols;
        uint64_t sy = ((uint64_t)65536u << v->shift) / s->grid.rows;
        for (uint32_t k = b->start[t]; k < b->start[t + 1]; k++) {
            uint64_t cx = (b->qx[k] - x0) * cells / sx, cy = (b->qy[k] - y0) * cells / sy;
            uint32_t c =
                (uint32_t)((cy < cells ? cy : cells - 1) * cells + (cx < cells ? cx : cells - 1));
            v->field[st].count[c]++;
            if (sum) {
                sum[(size_t)st * cells * cells + c][0] += b->vx[k];
                sum[(size_t)st * cells * cells + c][1] += b->vy[k];
            }
        }
    }
    for (uint32_t st = 0; sum && st < st_count; st++) {
        for (uint32_t c = 0; c < cells * cells; c++) {
            uint32_t n = v->field[st].count[c];
            int32_t *s2 = sum[(size_t)st * cells * cells + c];
            v->field[st].vx[c] = (int8_t)(n ? s2[0] / (int32_t)n : 0);
            v->field[st].vy[c] = (int8_t)(n ? s2[1] / (int32_t)n : 0);
        }
    }
    free(sum);
}

/* The sample's boids of s in (super-tile, id) order into v->b. */
static bool view_boids(const struct tilestate *s, struct tiles_view *v, void **mem)
{
    const struct tiles_boids *b = &s->base;
    uint32_t st_count = v->gc * v->gr, n = 0;
    for (uint32_t k = 0; k < b->count; k++)
        n += proto_v3_in_sample(b->id[k], v->sample);
    uint32_t *pick = malloc(((size_t)n + 1) * 4), *st = malloc(((size_t)n + 1) * 4);
    uint32_t *ids = malloc(((size_t)n + 1) * 4), *perm = malloc(((size_t)n + 1) * 4);
    uint32_t *scratch = malloc(((size_t)n + 1) * 4);
    struct sort_space sp = {malloc(((size_t)n + 1) * 8), malloc(((size_t)n + 1) * 8),
                            malloc((BUCKETS + 1) * 4)};
    *mem = malloc(boids_bytes(n, st_count));
    bool ok = pick && st && ids && perm && scratch && sp.key && sp.key2 && sp.count && *mem;
    uint32_t m = 0;
    for (uint32_t t = 0; ok && t < grid_tiles(&s->grid); t++) {
        for (uint32_t k = b->start[t]; k < b->start[t + 1]; k++) {
            if (!proto_v3_in_sample(b->id[k], v->sample))
                continue;
            pick[m] = k;
            ids[m] = b->id[k];
            st[m++] = super_of(&s->grid, t, v->shift, v->gc);
        }
    }
    if (ok) {
        sort_by_tile_id(ids, st, n, st_count, perm, scratch, &sp);
        carve_boids(&v->b, *mem, n, st_count);
        for (uint32_t k = 0; k < n; k++) {
            copy_boid(&v->b, k, b, pick[perm[k]]);
            scratch[k] = st[perm[k]];
        }
        set_starts(&v->b, scratch, st_count);
    }
    free(pick);
    free(st);
    free(ids);
    free(perm);
    free(scratch);
    free(sp.key);
    free(sp.key2);
    free(sp.count);
    return ok;
}

static void view_hashes(struct tiles_view *v)
{
    for (uint32_t st = 0; st < v->gc * v->gr; st++) {
        uint32_t a = v->b.start[st], n = v->b.start[st + 1] - a;
        struct proto_v3_tile t = {
            n, v->b.id + a, v->b.qx + a, v->b.qy + a, v->b.heading + a, v->b.group + a, NULL};
        v->hash[st] = proto_v3_tile_hash(&t);
    }
}

static struct tiles_view *view_build(const struct tilestate *s, unsigned shift, unsigned sample)
{
    uint32_t gc = proto_v3_grid_at(s->grid.cols, shift), gr = proto_v3_grid_at(s->grid.rows, shift);
    struct view_block *vb = calloc(1, sizeof *vb + (size_t)gc * gr * 4);
    if (!vb)
        return NULL;
    struct tiles_view *v = &vb->v;
    *v =
        (struct tiles_view){.shift = (uint8_t)shift, .sample = (uint8_t)sample, .gc = gc, .gr = gr};
    v->hash = (uint32_t *)(void *)(vb + 1);
    if (sample > 0 && !(v->field = calloc((size_t)gc * gr, sizeof *v->field))) {
        free(vb);
        return NULL;
    }
    if (shift == 0 && sample == 0)
        v->b = s->base; /* the state's own order is this view's */
    else if (!view_boids(s, v, &vb->mem)) {
        free(vb->mem);
        free(v->field);
        free(vb);
        return NULL;
    }
    view_hashes(v);
    if (v->field)
        add_fields(s, v);
    return v;
}

const struct tiles_view *tiles_state_view(struct tilestate *s, unsigned shift, unsigned sample)
{
    if (shift > PROTO_V3_MAX_SHIFT || sample > PROTO_V3_MAX_SAMPLE)
        return NULL;
    unsigned k = shift * (PROTO_V3_MAX_SAMPLE + 1) + sample;
    pthread_mutex_lock(&s->lock);
    if (!s->views[k] && !s->given)
        s->views[k] = view_build(s, shift, sample);
    const struct tiles_view *v = s->views[k];
    pthread_mutex_unlock(&s->lock);
    return v;
}

/* ---- the tileset: a snapshot served, its parts --------------------------------- */

enum slot_state { SLOT_EMPTY, SLOT_BUSY, SLOT_READY, SLOT_FAILED };

struct slot {
    atomic_uint tag; /* 0: free; else 1 + (gap1 << 4 | gap0): the part it holds */
    atomic_int state;
    int rc; /* SLOT_FAILED: why */
    uint32_t len;
    uint8_t *bytes;
};

/* The parts of one super-tile of one view: v[0] the key, then deltas. */
struct slots {
    struct slot v[VARIANTS];
};

/* The parts of one view (shift, sample): a slots per super-tile, made the
 * first time one of its parts is asked for. */
struct partcache {
    uint32_t count;
    _Atomic(struct slots *) st[];
};

struct tileset {
    atomic_uint refs;
    uint64_t serial; /* tiles_set_serial() */
    struct tiles_meta meta;
    struct tilestate *now, *prev[TILES_KEEP];
    struct proto_obstacle *obstacles;
    struct proto_target *targets;
    uint32_t nobstacles, ntargets;
    pthread_mutex_t lock; /* making a partcache or a slots */
    _Atomic(struct partcache *) cache[VIEWS];
};

static atomic_uint_fast64_t set_serials; /* the last tiles_set_serial() given */

struct tileset *tiles_set_create(struct tilestate *now, struct tilestate *const *prev,
                                 const struct tiles_meta *meta,
                                 const struct proto_obstacle *obstacles, uint32_t nobstacles,
                                 const struct proto_target *targets, uint32_t ntargets)
{
    struct tileset *ts = calloc(1, sizeof *ts);
    if (ts) {
        ts->obstacles = malloc((size_t)nobstacles * sizeof *obstacles + 1);
        ts->targets = malloc((size_t)ntargets * sizeof *targets + 1);
    }
    if (!ts || !ts->obstacles || !ts->targets) {
        if (ts)
            free(ts->obstacles);
        free(ts);
        return NULL;
    }
    atomic_init(&ts->refs, 1);
    ts->serial = atomic_fetch_add_explicit(&set_serials, 1, memory_order_relaxed) + 1;
    ts->meta = *meta;
    ts->now = tiles_state_ref(now);
    for (int g = 0; g < TILES_KEEP; g++)
        ts->prev[g] = tiles_state_ref(prev ? prev[g] : NULL);
    if (nobstacles)
        memcpy(ts->obstacles, obstacles, (size_t)nobstacles * sizeof *obstacles);
    if (ntargets)
        memcpy(ts->targets, targets, (size_t)ntargets * sizeof *targets);
    ts->nobstacles = nobstacles;
    ts->ntargets = ntargets;
    pthread_mutex_init(&ts->lock, NULL);
    return ts;
}

uint64_t tiles_set_serial(const struct tileset *ts)
{
    return ts->serial;
}

struct tileset *tiles_set_ref(struct tileset *ts)
{
    if (ts)
        atomic_fetch_add_explicit(&ts->refs, 1, memory_order_relaxed);
    return ts;
}

static void cache_free(struct partcache *c)
{
    for (uint32_t k = 0; c && k < c->count; k++) {
        struct slots *s = atomic_load_explicit(&c->st[k], memory_order_relaxed);
        for (int v = 0; s && v < VARIANTS; v++)
            free(s->v[v].bytes);
        free(s);
    }
    free(c);
}

void tiles_set_release(struct tileset *ts)
{
    if (!ts || atomic_fetch_sub_explicit(&ts->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int k = 0; k < VIEWS; k++)
        cache_free(atomic_load_explicit(&ts->cache[k], memory_order_relaxed));
    tiles_state_release(ts->now);
    for (int g = 0; g < TILES_KEEP; g++)
        tiles_state_release(ts->prev[g]);
    pthread_mutex_destroy(&ts->lock);
    free(ts->obstacles);
    free(ts->targets);
    free(ts);
}

const struct tiles_meta *tiles_set_meta(const struct tileset *ts)
{
    return &ts->meta;
}

struct tilestate *tiles_set_state(const struct tileset *ts)
{
    return ts->now;
}

struct tilestate *tiles_set_base(const struct tileset *ts, unsigned g)
{
    return g >= 1 && g <= TILES_KEEP ? ts->prev[g - 1] : NULL;
}

void tiles_set_sections(const struct tileset *ts, const struct proto_obstacle **obstacles,
                        uint32_t *nobstacles, const struct proto_target **targets,
                        uint32_t *ntargets)
{
    *obstacles = ts->obstacles;
    *nobstacles = ts->nobstacles;
    *targets = ts->targets;
    *ntargets = ts->ntargets;
}

/* Whether (gap1, gap0) names a part: a key (0, 0) or a delta whose bases
 * the tileset keeps. */
static bool gaps_ok(unsigned gap1, unsigned gap0)
{
    if (gap1 == 0)
        return gap0 == 0;
    return gap1 <= PROTO_V3_MAX_GAP && gap0 <= PROTO_V3_MAX_GAP && gap1 + gap0 <= TILES_KEEP;
}

/* The slot of slots that holds (gap1, gap0): the key's, or the delta's,
 * claimed now if no slot holds it yet; NULL when every slot holds another
 * delta. */
static struct slot *slot_for(struct slots *slots, unsigned gap1, unsigned gap0)
{
    if (gap1 == 0)
        return &slots->v[0];
    unsigned want = 1u + (gap1 << 4 | gap0);
    for (int k = 1; k < VARIANTS; k++) {
        unsigned tag = atomic_load_explicit(&slots->v[k].tag, memory_order_acquire);
        if (tag == 0 && atomic_compare_exchange_strong(&slots->v[k].tag, &tag, want))
            return &slots->v[k];
        if (tag == want)
            return &slots->v[k];
    }
    return NULL;
}

/* The slots of super-tile st of view k, made if none yet. */
static struct slots *slots_of(struct tileset *ts, unsigned k, uint32_t count, uint32_t st)
{
    struct partcache *c = atomic_load_explicit(&ts->cache[k], memory_order_acquire);
    struct slots *s = c ? atomic_load_explicit(&c->st[st], memory_order_acquire) : NULL;
    if (s)
        return s;
    pthread_mutex_lock(&ts->lock);
    c = atomic_load_explicit(&ts->cache[k], memory_order_relaxed);
    if (!c && (c = calloc(1, sizeof *c + (size_t)count * sizeof c->st[0])) != NULL) {
        c->count = count;
        atomic_store_explicit(&ts->cache[k], c, memory_order_release);
    }
    s = c ? atomic_load_explicit(&c->st[st], memory_order_relaxed) : NULL;
    if (c && !s && (s = calloc(1, sizeof *s)) != NULL)
        atomic_store_explicit(&c->st[st], s, memory_order_release);
    pthread_mutex_unlock(&ts->lock);
    return s;
}

/* Super-tile st of view v as the codec takes it. */
static struct proto_v3_tile tile_in(const struct tiles_view *v, uint32_t st, bool field)
{
    uint32_t a = v->b.start[st], n = v->b.start[st + 1] - a;
    return (struct proto_v3_tile){n,
                                  v->b.id + a,
                                  v->b.qx + a,
                                  v->b.qy + a,
                                  v->b.heading + a,
                                  v->b.group + a,
                                  field && v->field ? &v->field[st] : NULL};
}

/* The view of the base g snapshots back at the same shift and sample, and
 * its tick: 0 and *out, or PROTO_E_NO_BASE (none held, not seq - g, or a
 * relay's base without super-tile st), _INTERNAL. */
static int base_view(const struct tileset *ts, unsigned g, const struct tiles_view *v, uint32_t st,
                     const struct tiles_view **out, uint64_t *tick)
{
    struct tilestate *s = tiles_set_base(ts, g);
    if (!s || tiles_state_seq(s) != ts->now->seq - g)
        return PROTO_E_NO_BASE;
    *tick = s->tick;
    *out = tiles_state_view(s, v->shift, v->sample);
    if (!*out)
        return s->given ? PROTO_E_NO_BASE : PROTO_E_INTERNAL;
    return (*out)->held && !(*out)->held[st] ? PROTO_E_NO_BASE : 0;
}

/* Encodes super-tile st of the view into slot `out`: a key (gap1 0) or a
 * delta. 0 or a code. */
static int encode_slot(struct tileset *ts, const struct tiles_view *v, uint32_t st, unsigned gap1,
                       unsigned gap0, struct proto_v3_encoder *enc, struct slot *out)
{
    struct proto_v3_tile t = tile_in(v, st, true), b1, b0;
    const struct tiles_view *v1 = NULL, *v0 = NULL;
    struct proto_v3_bases bases = {
        .gap1 = (uint8_t)gap1, .gap0 = (uint8_t)gap0, .tick = ts->now->tick};
    int rc = gap1 ? base_view(ts, gap1, v, st, &v1, &bases.tick1) : 0;
    if (rc == 0 && gap0)
        rc = base_view(ts, gap1 + gap0, v, st, &v0, &bases.tick0);
    if (rc)
        return rc;
    if (gap1) {
        b1 = tile_in(v1, st, false);
        bases.b1 = &b1;
    }
    if (gap0) {
        b0 = tile_in(v0, st, false);
        bases.b0 = &b0;
    }
    size_t cap = proto_v3_part_max_size(t.count, gap1 ? b1.count : 0, PROTO_V3_FIELD_CELLS);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return PROTO_E_INTERNAL;
    const struct tiles_grid *g = &ts->now->grid;
    ptrdiff_t len =
        proto_v3_encode_part(enc, &t, gap1 ? &bases : NULL, g->width, g->height, buf, cap);
    if (len < 0) {
        free(buf);
        return (int)len;
    }
    uint8_t *fit = realloc(buf, (size_t)len);
    out->bytes = fit ? fit : buf;
    out->len = (uint32_t)len;
    atomic_fetch_add_explicit(&g_parts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_part_bytes, (uint64_t)len, memory_order_relaxed);
    return 0;
}

int tiles_set_part(struct tileset *ts, unsigned shift, unsigned sample, uint32_t st, unsigned gap1,
                   unsigned gap0, struct proto_v3_encoder *enc, struct tiles_part *out)
{
    bool ok = gaps_ok(gap1, gap0);
    const struct tiles_view *v = ok ? tiles_state_view(ts->now, shift, sample) : NULL;
    if (!v)
        return ok ? PROTO_E_INTERNAL : PROTO_E_BAD_ARG;
    if (st >= v->gc * v->gr)
        return PROTO_E_BAD_ARG;
    struct slots *slots =
        slots_of(ts, shift * (PROTO_V3_MAX_SAMPLE + 1) + sample, v->gc * v->gr, st);
    if (!slots)
        return PROTO_E_INTERNAL;
    struct slot *s = slot_for(slots, gap1, gap0);
    if (!s)
        return PROTO_E_NOSPACE;
    int state = SLOT_EMPTY;
    if (atomic_compare_exchange_strong(&s->state, &state, SLOT_BUSY)) {
        s->rc = encode_slot(ts, v, st, gap1, gap0, enc, s);
        state = s->rc ? SLOT_FAILED : SLOT_READY;
        atomic_store_explicit(&s->state, state, memory_order_release);
    }
    while ((state = atomic_load_explicit(&s->state, memory_order_acquire)) == SLOT_BUSY)
        sched_yield();
    if (state == SLOT_FAILED)
        return s->rc;
    *out = (struct tiles_part){.bytes = s->bytes, .len = s->len, .hash = v->hash[st]};
    return 0;
}

/* ---- a relay's tilestate: the owner's tiles, as much of them as came ------------ */

/* The given view `in` of grid g as a view of its own (boids, hashes, held
 * super-tiles, fields copied); NULL if memory ran out or its super-tiles'
 * starts do not run from 0 upwards. */
static struct tiles_view *given_view(const struct tiles_grid *g, const struct tiles_given_view *in)
{
    uint32_t gc = proto_v3_grid_at(g->cols, in->shift), gr = proto_v3_grid_at(g->rows, in->shift);
    uint32_t st_count = gc * gr, n = in->start[st_count];
    for (uint32_t st = 0; st < st_count; st++)
        if (in->start[st + 1] < in->start[st] ||
            (!in->held[st] && in->start[st + 1] > in->start[st]))
            return NULL;
    struct view_block *vb = calloc(1, sizeof *vb + (size_t)st_count * 5);
    if (in->start[0] != 0 || !vb) {
        free(vb);
        return NULL;
    }
    struct tiles_view *v = &vb->v;
    *v = (struct tiles_view){.shift = in->shift, .sample = in->sample, .gc = gc, .gr = gr};
    v->hash = (uint32_t *)(void *)(vb + 1);
    v->held = memcpy(v->hash + st_count, in->held, st_count);
    vb->mem = malloc(boids_bytes(n, st_count));
    if (!vb->mem || (in->sample > 0 && !(v->field = calloc(st_count, sizeof *v->field)))) {
        view_free(v);
        return NULL;
    }
    carve_boids(&v->b, vb->mem, n, st_count);
    memcpy(v->b.id, in->id, (size_t)n * 4);
    memcpy(v->b.qx, in->qx, (size_t)n * 2);
    memcpy(v->b.qy, in->qy, (size_t)n * 2);
    memcpy(v->b.heading, in->heading, n);
    memcpy(v->b.group, in->group, n);
    memset(v->b.vx, 0, n);
    memset(v->b.vy, 0, n);
    memcpy(v->b.start, in->start, ((size_t)st_count + 1) * 4);
    if (v->field)
        memcpy(v->field, in->field, (size_t)st_count * sizeof *v->field);
    view_hashes(v);
    return v;
}

struct tilestate *tiles_state_given(const struct tiles_given *in)
{
    struct tilestate *s = state_new(in->grid, in->seq, 0, false);
    if (!s)
        return NULL;
    s->tick = in->tick;
    s->given = true;
    s->need = tileneed_ref(in->need);
    s->audience = in->audience;
    set_starts(&s->base, NULL, grid_tiles(in->grid));
    set_sums(s, in->counts);
    for (uint32_t k = 0; k < in->nviews; k++) {
        const struct tiles_given_view *gv = &in->views[k];
        unsigned at = gv->shift * (PROTO_V3_MAX_SAMPLE + 1u) + gv->sample;
        if (gv->shift > PROTO_V3_MAX_SHIFT || gv->sample > PROTO_V3_MAX_SAMPLE || s->views[at] ||
            !(s->views[at] = given_view(in->grid, gv))) {
            tiles_state_release(s);
            return NULL;
        }
    }
    return s;
}

bool tiles_state_holds(const struct tilestate *s, unsigned shift, unsigned sample, uint32_t rect_x,
                       uint32_t rect_y, uint32_t cols, uint32_t rows)
{
    if (!s->given)
        return true;
    if (shift > PROTO_V3_MAX_SHIFT || sample > PROTO_V3_MAX_SAMPLE)
        return false;
    const struct tiles_view *v = s->views[shift * (PROTO_V3_MAX_SAMPLE + 1) + sample];
    for (uint32_t j = 0; v && j < rows; j++)
        for (uint32_t i = 0; i < cols; i++)
            if (!v->held[((rect_y + j) % v->gr) * v->gc + (rect_x + i) % v->gc])
                return false;
    return v != NULL;
}

struct tileneed *tiles_state_need(const struct tilestate *s, unsigned *audience)
{
    *audience = s->audience;
    return s->need;
}
