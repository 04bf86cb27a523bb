/*
 * tilefeed_in.c — a relay's inbox of tiles messages (see tilefeed.h;
 * layout in server/cluster/CLUSTER.md §3.8).
 *
 * Each audience block is decoded into a new tilestate (tiles_state_given())
 * and a tileset on the inbox's last states of that audience, the bases its
 * deltas name: the counts section on the state it names, each part on the
 * super-tile of the states its gaps name (proto_v3_decode_part()). The
 * parts of a layer (a shift and sample) come together, by super-tile, so
 * each layer's boids are gathered in one run of the inbox's arrays. A
 * message is taken whole or not at all: the states it makes are kept only
 * once every block decoded.
 */
#include "tilefeed_impl.h"

#include "bytes.h"
#include "proto_sections.h"

#include <stdlib.h>
#include <string.h>

/* A state kept as a base, and its tick. */
struct kept {
    struct tilestate *s;
    uint64_t tick;
};

/* An audience's last states, newest first. */
struct inaud {
    uint8_t audience;
    struct kept hist[PROTO_V3_HISTORY];
};

/* A layer of the block being decoded: its boids at [first, first + n) of
 * the inbox's arrays. */
struct build {
    uint8_t shift, sample;
    uint32_t gc, gr;
    uint8_t *held;
    uint32_t *start;
    struct proto_v3_field *field;
    uint32_t cap; /* super-tiles the arrays hold */
    uint32_t first, n, next_st;
};

/* What a block decoded to, kept once the whole message is. */
struct made {
    uint8_t audience;
    struct tilestate *s;
    uint64_t tick;
    struct tileset *ts;
};

struct tileinbox {
    struct tiles_grid grid;
    struct tileneed *need;
    uint64_t term;
    struct inaud aud[TILEFEED_AUDIENCE_MAX];
    uint32_t naud;
    struct proto_v3_decoder *dec;
    uint32_t dec_max;
    /* The message's boids, layer after layer. */
    uint32_t *id;
    uint16_t *qx, *qy;
    uint8_t *heading, *group;
    uint32_t boids_cap, used;
    struct build builds[TILENEED_LAYERS];
    uint32_t nbuilds;
    uint32_t *counts, *base; /* the block's counts, its base's: cols * rows */
    uint64_t *sums;          /* (cols + 1) * (rows + 1) of counts */
    struct proto_obstacle *obstacles;
    uint32_t obstacles_cap;
    struct proto_target targets[PROTO_SNAPSHOT_MAX_TARGETS];
    struct made made[TILEFEED_AUDIENCE_MAX];
    uint32_t nmade, parts;
};

struct tileinbox *tileinbox_create(const struct tiles_grid *g, struct tileneed *need)
{
    struct tileinbox *in = calloc(1, sizeof *in);
    size_t tiles = (size_t)g->cols * g->rows;
    if (in) {
        in->grid = *g;
        in->counts = malloc(tiles * 4);
        in->base = malloc(tiles * 4);
        in->sums = malloc(((size_t)g->cols + 1) * ((size_t)g->rows + 1) * 8);
    }
    if (!in || !in->counts || !in->base || !in->sums || !g->cols || !g->rows) {
        tileinbox_destroy(in);
        return NULL;
    }
    in->need = tileneed_ref(need);
    return in;
}

/* Forgets every state kept (a new owner). */
static void forget(struct tileinbox *in)
{
    for (uint32_t a = 0; a < in->naud; a++)
        for (int g = 0; g < PROTO_V3_HISTORY; g++)
            tiles_state_release(in->aud[a].hist[g].s);
    in->naud = 0;
}

void tileinbox_destroy(struct tileinbox *in)
{
    if (!in)
        return;
    forget(in);
    for (int k = 0; k < TILENEED_LAYERS; k++) {
        free(in->builds[k].held);
        free(in->builds[k].start);
        free(in->builds[k].field);
    }
    proto_v3_decoder_destroy(in->dec);
    free(in->id);
    free(in->qx);
    free(in->qy);
    free(in->heading);
    free(in->group);
    free(in->counts);
    free(in->base);
    free(in->sums);
    free(in->obstacles);
    tileneed_release(in->need);
    free(in);
}

uint64_t tileinbox_term(const struct tileinbox *in)
{
    return in->term;
}

void tileinbox_out_free(struct tileinbox_out *out)
{
    for (uint32_t a = 0; a < out->v3.count; a++)
        tiles_set_release(out->v3.sets[a]);
    free(out->v3.sets);
    tiles_set_release(out->v3.delayed);
    memset(&out->v3, 0, sizeof out->v3);
}

/* ---- room ------------------------------------------------------------------------- */

/* Room for `more` boids past the used ones: false if memory ran out. */
static bool boids_room(struct tileinbox *in, uint32_t more)
{
    if (in->boids_cap - in->used >= more)
        return true;
    size_t cap = (size_t)in->used + more + in->boids_cap / 2 + 1024;
    uint32_t *id = realloc(in->id, cap * 4);
    in->id = id ? id : in->id;
    uint16_t *qx = id ? realloc(in->qx, cap * 2) : NULL;
    in->qx = qx ? qx : in->qx;
    uint16_t *qy = qx ? realloc(in->qy, cap * 2) : NULL;
    in->qy = qy ? qy : in->qy;
    uint8_t *h = qy ? realloc(in->heading, cap) : NULL;
    in->heading = h ? h : in->heading;
    uint8_t *g = h ? realloc(in->group, cap) : NULL;
    in->group = g ? g : in->group;
    if (!g)
        return false;
    in->boids_cap = (uint32_t)cap;
    return true;
}

/* A decoder that takes parts of n boids and bases of as many. */
static bool decoder_for(struct tileinbox *in, uint32_t n)
{
    if (in->dec && in->dec_max >= n)
        return true;
    uint32_t max = in->dec_max ? in->dec_max : 4096;
    while (max < n)
        max *= 2;
    const char *err;
    struct proto_v3_decoder *d = proto_v3_decoder_create(max, 1, 0, PROTO_V3_FIELD_CELLS, &err);
    if (!d)
        return false;
    proto_v3_decoder_destroy(in->dec);
    in->dec = d;
    in->dec_max = max;
    return true;
}

/* ---- the audiences' states --------------------------------------------------------- */

static struct inaud *aud_of(struct tileinbox *in, uint8_t a)
{
    for (uint32_t k = 0; k < in->naud; k++)
        if (in->aud[k].audience == a)
            return &in->aud[k];
    return NULL;
}

/* Audience a's state of snapshot seq, or NULL. */
static const struct kept *kept_of(struct tileinbox *in, uint8_t a, uint32_t seq)
{
    const struct inaud *au = aud_of(in, a);
    for (int g = 0; au && g < PROTO_V3_HISTORY; g++)
        if (au->hist[g].s && tiles_state_seq(au->hist[g].s) == seq)
            return &au->hist[g];
    return NULL;
}

/* Keeps m's state as its audience's newest. */
static void keep(struct tileinbox *in, const struct made *m)
{
    struct inaud *au = aud_of(in, m->audience);
    if (!au && in->naud < TILEFEED_AUDIENCE_MAX)
        au = &in->aud[in->naud++], *au = (struct inaud){.audience = m->audience};
    if (!au)
        return;
    tiles_state_release(au->hist[PROTO_V3_HISTORY - 1].s);
    memmove(&au->hist[1], &au->hist[0], (PROTO_V3_HISTORY - 1) * sizeof au->hist[0]);
    au->hist[0] = (struct kept){.s = tiles_state_ref(m->s), .tick = m->tick};
}

/* ---- a block --------------------------------------------------------------------- */

/* A block's fixed fields (TILEFEED_BLOCK bytes). */
struct block {
    uint8_t audience, flags, counts_base;
    uint32_t seq, room_boids, obstacles, targets, counts_len, parts;
    uint64_t tick;
    int64_t time_us;
};

static int read_block(struct bytes_r *r, int prev_audience, struct block *b)
{
    const uint8_t *p = bytes_take(r, TILEFEED_BLOCK);
    if (!p)
        return PROTO_E_TRUNCATED;
    *b = (struct block){.audience = p[0],
                        .flags = p[1],
                        .counts_base = p[2],
                        .seq = (uint32_t)bytes_le_get(p + 4, 4),
                        .tick = bytes_le_get(p + 8, 8),
                        .time_us = (int64_t)bytes_le_get(p + 16, 8),
                        .room_boids = (uint32_t)bytes_le_get(p + 24, 4),
                        .obstacles = (uint32_t)bytes_le_get(p + 28, 2),
                        .targets = (uint32_t)bytes_le_get(p + 30, 2),
                        .counts_len = (uint32_t)bytes_le_get(p + 32, 4),
                        .parts = (uint32_t)bytes_le_get(p + 36, 4)};
    if (!tilefeed_is_audience(b->audience) || (int)b->audience <= prev_audience || p[3] ||
        (b->flags & ~(PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP)) ||
        b->counts_base > PROTO_V3_HISTORY || b->seq == 0 || b->targets > PROTO_SNAPSHOT_MAX_TARGETS)
        return PROTO_E_BAD_VALUE;
    return 0;
}

/* The block's obstacles and targets, into the inbox. */
static int read_sections(struct tileinbox *in, struct bytes_r *r, const struct block *b)
{
    const uint8_t *o = bytes_take(r, (size_t)b->obstacles * PROTO_SNAPSHOT_OBSTACLE_SIZE);
    const uint8_t *t = bytes_take(r, (size_t)b->targets * PROTO_SNAPSHOT_TARGET_SIZE);
    if (!o || !t)
        return PROTO_E_TRUNCATED;
    if (in->obstacles_cap < b->obstacles) {
        struct proto_obstacle *grown = realloc(in->obstacles, b->obstacles * sizeof *grown);
        if (!grown)
            return PROTO_E_INTERNAL;
        in->obstacles = grown;
        in->obstacles_cap = b->obstacles;
    }
    if (proto_sections_get_obstacles(o, b->obstacles, in->obstacles) < 0 ||
        proto_sections_get_targets(t, b->targets, in->targets) < 0)
        return PROTO_E_BAD_VALUE;
    return 0;
}

/* The block's counts into in->counts and their sums into in->sums: 0, or
 * PROTO_E_NO_BASE (the state they are a delta on is not kept), a code. */
static int read_counts(struct tileinbox *in, struct bytes_r *r, const struct block *b)
{
    uint32_t cols = in->grid.cols, rows = in->grid.rows, n = cols * rows;
    const uint8_t *p = bytes_take(r, b->counts_len);
    if (!p)
        return PROTO_E_TRUNCATED;
    const struct kept *base =
        b->counts_base ? kept_of(in, b->audience, b->seq - b->counts_base) : NULL;
    if (b->counts_base && !base)
        return PROTO_E_NO_BASE;
    for (uint32_t t = 0; base && t < n; t++)
        in->base[t] = tiles_state_count(base->s, t);
    if (tilefeed_counts_get(p, b->counts_len, base ? in->base : NULL, n, in->counts) < 0)
        return PROTO_E_BAD_BODY;
    uint64_t sum = 0, *s = in->sums;
    memset(s, 0, (size_t)(cols + 1) * (rows + 1) * sizeof *s);
    for (uint32_t y = 0; y < rows; y++)
        for (uint32_t x = 0; x < cols; x++) {
            sum += in->counts[y * cols + x];
            s[(y + 1) * (cols + 1) + x + 1] = in->counts[y * cols + x] + s[y * (cols + 1) + x + 1] +
                                              s[(y + 1) * (cols + 1) + x] - s[y * (cols + 1) + x];
        }
    /* Every boid (all, delayed) or those a team sees of the room's. */
    bool whole = b->audience == 0 || b->audience == TILENEED_DELAYED;
    return (whole ? sum == b->room_boids : sum <= b->room_boids) ? 0 : PROTO_E_BAD_VALUE;
}

/* The boids the counts put in super-tile st of a grid at shift k. */
static uint64_t counted(const struct tileinbox *in, unsigned k, uint32_t st, uint32_t gc)
{
    uint32_t cols = in->grid.cols, rows = in->grid.rows, w = cols + 1;
    uint32_t x0 = (st % gc) << k, y0 = (st / gc) << k;
    uint32_t x1 = x0 + (1u << k) < cols ? x0 + (1u << k) : cols;
    uint32_t y1 = y0 + (1u << k) < rows ? y0 + (1u << k) : rows;
    const uint64_t *s = in->sums;
    return s[y1 * w + x1] - s[y0 * w + x1] - s[y1 * w + x0] + s[y0 * w + x0];
}

/* The layer (shift, sample) of the block, made after the last one (layers
 * come in order); NULL if too many or no memory. */
static struct build *build_of(struct tileinbox *in, unsigned shift, unsigned sample)
{
    struct build *b = in->nbuilds ? &in->builds[in->nbuilds - 1] : NULL;
    if (b && b->shift == shift && b->sample == sample)
        return b;
    if (in->nbuilds == TILENEED_LAYERS)
        return NULL;
    b = &in->builds[in->nbuilds];
    uint32_t gc = proto_v3_grid_at(in->grid.cols, shift),
             gr = proto_v3_grid_at(in->grid.rows, shift);
    if (b->cap < gc * gr) {
        free(b->held), free(b->start), free(b->field);
        b->held = malloc((size_t)gc * gr);
        b->start = malloc(((size_t)gc * gr + 1) * 4);
        b->field = malloc((size_t)gc * gr * sizeof *b->field);
        b->cap = b->held && b->start && b->field ? gc * gr : 0;
        if (!b->cap)
            return NULL;
    }
    memset(b->held, 0, (size_t)gc * gr);
    b->shift = (uint8_t)shift, b->sample = (uint8_t)sample, b->gc = gc, b->gr = gr;
    b->first = in->used, b->n = 0, b->next_st = 0;
    in->nbuilds++;
    return b;
}

/* Super-tile st of layer b in audience a's states before seq, as bases. */
static void bases_of(struct tileinbox *in, uint8_t a, uint32_t seq, const struct build *b,
                     uint32_t st, struct proto_v3_part parts[PROTO_V3_HISTORY],
                     struct proto_v3_part_bases *out, uint32_t *most)
{
    *out = (struct proto_v3_part_bases){0};
    for (unsigned g = 1; g <= PROTO_V3_HISTORY; g++) {
        const struct kept *k = kept_of(in, a, seq - g);
        const struct tiles_view *v = k ? tiles_state_view(k->s, b->shift, b->sample) : NULL;
        if (!v || !v->held || !v->held[st])
            continue;
        uint32_t at = v->b.start[st], n = v->b.start[st + 1] - at;
        parts[g - 1] = (struct proto_v3_part){.count = n,
                                              .id = v->b.id + at,
                                              .qx = v->b.qx + at,
                                              .qy = v->b.qy + at,
                                              .heading = v->b.heading + at,
                                              .group = v->b.group + at};
        out->base[g - 1] = &parts[g - 1];
        out->tick[g - 1] = k->tick;
        *most = n > *most ? n : *most;
    }
}

/* Whether a decoded part is what the counts and the owner's hash say:
 * every boid of the super-tile at sample 0 (and no field), a field of
 * every boid above it. */
static bool is_true(const struct proto_v3_part *p, unsigned sample, uint64_t boids, uint32_t hash)
{
    struct proto_v3_tile t = {p->count, p->id, p->qx, p->qy, p->heading, p->group, NULL};
    uint64_t in_field = 0;
    for (uint32_t c = 0; p->field && c < p->field->cells * p->field->cells; c++)
        in_field += p->field->count[c];
    bool counts_ok = sample == 0 ? p->count == boids && !p->field
                                 : p->count <= boids && p->field && in_field == boids;
    return counts_ok && proto_v3_tile_hash(&t) == hash;
}

/* One part entry of the block: decoded into its layer. */
static int read_part(struct tileinbox *in, struct bytes_r *r, const struct block *blk,
                     uint32_t *prev_key)
{
    const uint8_t *h = bytes_take(r, TILEFEED_PART_HEAD);
    if (!h)
        return PROTO_E_TRUNCATED;
    unsigned shift = h[0], sample = h[1];
    uint32_t st = (uint32_t)bytes_le_get(h + 2, 2), hash = (uint32_t)bytes_le_get(h + 4, 4);
    uint32_t key = shift << 21 | sample << 16 | st;
    if (shift > PROTO_V3_MAX_SHIFT || sample > PROTO_V3_MAX_SAMPLE ||
        (*prev_key && key <= *prev_key))
        return PROTO_E_BAD_VALUE;
    *prev_key = key;
    struct build *b = build_of(in, shift, sample);
    if (!b)
        return in->nbuilds == TILENEED_LAYERS ? PROTO_E_OVER_LIMIT : PROTO_E_INTERNAL;
    if (st >= b->gc * b->gr)
        return PROTO_E_BAD_VALUE;
    uint64_t boids = counted(in, shift, st, b->gc);
    struct proto_v3_part parts[PROTO_V3_HISTORY];
    struct proto_v3_part_bases bases;
    uint32_t most = (uint32_t)boids;
    bases_of(in, blk->audience, blk->seq, b, st, parts, &bases, &most);
    /* The decoder writes up to its most boids into the arrays. */
    if (!decoder_for(in, most) || !boids_room(in, in->dec_max))
        return PROTO_E_INTERNAL;
    struct proto_v3_part out = {.id = in->id + in->used,
                                .qx = in->qx + in->used,
                                .qy = in->qy + in->used,
                                .heading = in->heading + in->used,
                                .group = in->group + in->used};
    struct proto_v3_header ph = {
        .tick = blk->tick, .width = in->grid.width, .height = in->grid.height};
    int rc =
        proto_v3_decode_part(in->dec, r->buf, r->len, &r->at, &bases, &ph, &out, &b->field[st]);
    if (rc)
        return rc;
    if (!is_true(&out, sample, boids, hash))
        return PROTO_E_HASH_MISMATCH;
    for (; b->next_st <= st; b->next_st++)
        b->start[b->next_st] = b->n;
    b->held[st] = 1;
    b->n += out.count;
    in->used += out.count;
    in->parts++;
    return 0;
}

/* The block's layers as given views (their starts ended). */
static void given_views(struct tileinbox *in, struct tiles_given_view *views)
{
    for (uint32_t k = 0; k < in->nbuilds; k++) {
        struct build *b = &in->builds[k];
        for (; b->next_st <= b->gc * b->gr; b->next_st++)
            b->start[b->next_st] = b->n;
        views[k] = (struct tiles_given_view){.shift = b->shift,
                                             .sample = b->sample,
                                             .held = b->held,
                                             .start = b->start,
                                             .id = in->id + b->first,
                                             .qx = in->qx + b->first,
                                             .qy = in->qy + b->first,
                                             .heading = in->heading + b->first,
                                             .group = in->group + b->first,
                                             .field = b->sample ? b->field : NULL};
    }
}

/* The block's state and tileset into in->made. */
static int make_block(struct tileinbox *in, const struct block *b)
{
    struct tiles_given_view views[TILENEED_LAYERS];
    given_views(in, views);
    struct tiles_given g = {.grid = &in->grid,
                            .seq = b->seq,
                            .tick = b->tick,
                            .counts = in->counts,
                            .views = views,
                            .nviews = in->nbuilds,
                            .need = in->need,
                            .audience = b->audience};
    struct made *m = &in->made[in->nmade];
    *m = (struct made){.audience = b->audience, .tick = b->tick, .s = tiles_state_given(&g)};
    if (!m->s)
        return PROTO_E_INTERNAL;
    /* prev[g - 1]: the state g snapshots back; a relay keeps the last
     * PROTO_V3_HISTORY (a client of it that falls further behind gets keys). */
    struct tilestate *prev[TILES_KEEP] = {0};
    for (unsigned back = 1; back <= PROTO_V3_HISTORY; back++) {
        const struct kept *k = kept_of(in, b->audience, b->seq - back);
        prev[back - 1] = k ? k->s : NULL;
    }
    struct tiles_meta meta = {
        .tick = b->tick, .time_us = b->time_us, .flags = b->flags, .room_boids = b->room_boids};
    m->ts =
        tiles_set_create(m->s, prev, &meta, in->obstacles, b->obstacles, in->targets, b->targets);
    in->nmade++;
    return m->ts ? 0 : PROTO_E_INTERNAL;
}

/* One audience block at r. */
static int read_audience(struct tileinbox *in, struct bytes_r *r, int prev_audience)
{
    struct block b;
    int rc = read_block(r, prev_audience, &b);
    const struct inaud *au = rc ? NULL : aud_of(in, b.audience);
    if (!rc && au && au->hist[0].s && tiles_state_seq(au->hist[0].s) >= b.seq)
        rc = PROTO_E_BAD_VALUE; /* not after the last one */
    if (!rc)
        rc = read_sections(in, r, &b);
    if (!rc)
        rc = read_counts(in, r, &b);
    in->nbuilds = 0;
    in->used = 0;
    uint32_t key = 0;
    for (uint32_t k = 0; !rc && k < b.parts; k++)
        rc = read_part(in, r, &b, &key);
    return rc ? rc : make_block(in, &b);
}

/* ---- a message -------------------------------------------------------------------- */

static int read_head(struct tileinbox *in, struct bytes_r *r, struct tileinbox_out *out,
                     uint32_t *blocks)
{
    const uint8_t *p = bytes_take(r, TILEFEED_HEADER);
    if (!p)
        return PROTO_E_TRUNCATED;
    if (memcmp(p, TILEFEED_MAGIC_TILES, 4) != 0)
        return PROTO_E_BAD_MAGIC;
    if (bytes_le_get(p + 4, 2) != TILEFEED_VERSION)
        return PROTO_E_BAD_VERSION;
    out->term = bytes_le_get(p + 8, 8);
    out->frame_seq = bytes_le_get(p + 16, 8);
    float vscale = bytes_le_get_f32(p + 32);
    *blocks = p[36];
    /* The grid must be this node's: its welcomes announced it. */
    if (p[6] != in->grid.cols || p[7] != in->grid.rows ||
        bytes_le_get_f32(p + 24) != in->grid.width || bytes_le_get_f32(p + 28) != in->grid.height ||
        !(vscale > 0.0f && vscale < 1e6f) || !out->term || !out->frame_seq || !*blocks ||
        *blocks > TILEFEED_AUDIENCE_MAX || p[37] || p[38] || p[39] || out->term < in->term)
        return PROTO_E_BAD_VALUE;
    /* The owner's top speed (its plans' margins): its room's, fixed when
     * it was made, which a copy opened later from a checkpoint may not
     * share. */
    in->grid.vscale = vscale;
    return 0;
}

/* The tilesets made, as a frame's (sets by team audience, the delayed). */
static int hand_over(struct tileinbox *in, struct tileinbox_out *out)
{
    uint32_t count = 0;
    for (uint32_t k = 0; k < in->nmade; k++)
        if (in->made[k].audience != TILENEED_DELAYED)
            count = in->made[k].audience + 1u;
    if (count && !(out->v3.sets = calloc(count, sizeof *out->v3.sets)))
        return PROTO_E_INTERNAL;
    out->v3.count = count;
    for (uint32_t k = 0; k < in->nmade; k++) {
        struct made *m = &in->made[k];
        keep(in, m);
        if (m->audience == TILENEED_DELAYED)
            out->v3.delayed = m->ts;
        else
            out->v3.sets[m->audience] = m->ts;
        m->ts = NULL;
    }
    return 0;
}

static void drop_made(struct tileinbox *in)
{
    for (uint32_t k = 0; k < in->nmade; k++) {
        tiles_state_release(in->made[k].s);
        tiles_set_release(in->made[k].ts);
    }
    in->nmade = 0;
}

int tileinbox_take(struct tileinbox *in, const uint8_t *buf, size_t len, struct tileinbox_out *out)
{
    memset(out, 0, sizeof *out);
    struct bytes_r r = {.buf = buf, .len = len};
    uint32_t blocks = 0;
    in->parts = 0;
    int rc = read_head(in, &r, out, &blocks);
    if (!rc && out->term > in->term) {
        forget(in);
        in->term = out->term;
    }
    for (uint32_t k = 0; !rc && k < blocks; k++)
        rc = read_audience(in, &r, k ? in->made[in->nmade - 1].audience : -1);
    if (!rc && r.at != len)
        rc = PROTO_E_BAD_LENGTH;
    if (!rc)
        rc = hand_over(in, out);
    out->parts = rc ? 0 : in->parts;
    drop_made(in);
    if (rc) {
        tileinbox_out_free(out);
        out->restart = true; /* whatever went wrong, the next message is keys */
    }
    return rc;
}
