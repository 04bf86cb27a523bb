/*
 * proto_v3.c — view frames of version 3 (layout in PROTOCOL.md §12): what
 * encoder and decoder share (the sampling hash, the tile hash, the header)
 * and the encoder of a tile's part. The decoder is in proto_v3_decode.c;
 * both take the prediction and residual coding of version 2 from
 * proto_v2_impl.h, so a tile's stayers are coded exactly as a version 2
 * delta's boids.
 *
 * The encoder's scratch grows to the largest tile it was given (a tile of
 * a big room at a large shift may hold many boids; most hold a few
 * hundred), so one encoder serves every tile of a service thread.
 */
#include "proto_v3.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "proto_deflate.h"
#include "proto_v2_impl.h"
#include "proto_v3_impl.h"

uint32_t proto_v3_mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    return x ^ (x >> 16);
}

uint32_t proto_v3_tile_hash(const struct proto_v3_tile *t)
{
    uint32_t h = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        h = pv2_murmur_round(h, pv2_murmur_mix(t->id[i]));
        h = pv2_murmur_round(h, pv2_murmur_mix((uint32_t)t->qx[i] | (uint32_t)t->qy[i] << 16));
        h = pv2_murmur_round(h,
                             pv2_murmur_mix((uint32_t)t->heading[i] | (uint32_t)t->group[i] << 8));
    }
    return t->count ? pv2_murmur_final(h, t->count * 12u) : 0;
}

void proto_v3_put_header(uint8_t *p, const struct proto_v3_header *h)
{
    memset(p, 0, PROTO_V3_HEADER_SIZE);
    p[0] = 'F';
    p[1] = 'K';
    p[2] = PROTO_V3_VERSION;
    p[3] = PROTO_V3_KIND_FRAME;
    p[4] = h->flags;
    p[5] = h->shift;
    p[6] = h->sample;
    bytes_le_put(p + PV3_OFF_TICK, h->tick, 8);
    bytes_le_put(p + PV3_OFF_TIME, h->server_time_us, 8);
    bytes_le_put_f32(p + PV3_OFF_WIDTH, h->width);
    bytes_le_put_f32(p + PV3_OFF_HEIGHT, h->height);
    bytes_le_put(p + PV3_OFF_SEQ, h->seq, 4);
    bytes_le_put(p + PV3_OFF_ROOM_BOIDS, h->room_boids, 4);
    p[PV3_OFF_COLS] = h->cols;
    p[PV3_OFF_ROWS] = h->rows;
    p[PV3_OFF_RECT_COLS] = h->rect_cols;
    p[PV3_OFF_RECT_ROWS] = h->rect_rows;
    p[PV3_OFF_RECT_X] = h->rect_x;
    p[PV3_OFF_RECT_Y] = h->rect_y;
    bytes_le_put(p + PV3_OFF_OBSTACLES, h->obstacle_count, 2);
    bytes_le_put(p + PV3_OFF_TARGETS, h->target_count, 2);
    bytes_le_put(p + PV3_OFF_HASH, h->frame_hash, 4);
}

/* ---- encoder -------------------------------------------------------------- */

/* The sections of a part's body, in order, as deflate spans. */
enum {
    SEC_LEAVES,    /* delta: the leave map */
    SEC_IDS,       /* key: every id; delta: E and the entered ids (varints) */
    SEC_PLANES,    /* key: six planes; delta: the entered boids' six planes */
    SEC_FIELD,     /* the field, if any */
    SEC_RESIDUALS, /* delta: X0 X1 Y0 Y1 H0 H1 of the stayers */
    SEC_EXCEPTIONS = SEC_RESIDUALS + PV2_PLANES,
    SECTIONS
};

struct proto_v3_encoder {
    uint32_t max_boids, cap; /* cap: boids the scratch holds now */
    uint8_t *mem;
    uint8_t *sec[SECTIONS];
    size_t len[SECTIONS];
    /* The stayers' bases, gathered in stayer order. */
    uint16_t *x1, *y1, *x0, *y0;
    uint8_t *h1, *h0, *two; /* two: the stayer is in base 0 as well */
    uint32_t *cur;          /* its index in the tile now */
    uint32_t *enter;        /* delta: the entered boids' indices in the tile now */
};

struct proto_v3_encoder *proto_v3_encoder_create(uint32_t max_boids, const char **err)
{
    struct proto_v3_encoder *e = NULL;
    if (max_boids < 1 || max_boids > PV2_MAX_BOIDS) {
        *err = "max_boids must be in [1, 4194304]";
        return NULL;
    }
    if (!(e = calloc(1, sizeof *e))) {
        *err = "out of memory";
        return NULL;
    }
    e->max_boids = max_boids;
    return e;
}

void proto_v3_encoder_destroy(struct proto_v3_encoder *e)
{
    if (!e)
        return;
    free(e->mem);
    free(e);
}

/* Grows the scratch to hold a part of n boids (PV3_SCRATCH_PER_BOID bytes
 * a boid: the word arrays first, for their alignment). */
static int reserve(struct proto_v3_encoder *e, uint32_t n)
{
    if (n <= e->cap && e->mem)
        return 0;
    uint32_t cap = n < 256 ? 256 : n;
    uint8_t *mem = malloc((size_t)cap * PV3_SCRATCH_PER_BOID + PV3_SCRATCH_FIXED);
    if (!mem)
        return PROTO_E_INTERNAL;
    free(e->mem);
    e->mem = mem;
    e->cap = cap;
    uint8_t *p = mem;
    e->cur = (uint32_t *)(void *)p, p += (size_t)cap * 4;
    e->enter = (uint32_t *)(void *)p, p += (size_t)cap * 4;
    e->x1 = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->y1 = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->x0 = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->y0 = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->h1 = p, p += cap;
    e->h0 = p, p += cap;
    e->two = p, p += cap;
    e->sec[SEC_IDS] = p, p += (size_t)cap * 5 + 5;
    e->sec[SEC_PLANES] = p, p += (size_t)cap * 6;
    for (int k = 0; k < PV2_PLANES; k++)
        e->sec[SEC_RESIDUALS + k] = p, p += cap;
    e->sec[SEC_EXCEPTIONS] = p, p += (size_t)cap * 4;
    e->sec[SEC_LEAVES] = p, p += cap / 8 + 1;
    e->sec[SEC_FIELD] = p;
    return 0;
}

size_t proto_v3_part_max_size(uint32_t n, uint32_t b, uint32_t cells)
{
    size_t plain = pv3_plain_bound(n, b, cells);
    return PV3_PART_HEAD_MAX + pv2_packed_bound(plain);
}

static bool ids_ascending(const struct proto_v3_tile *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->id[i] == 0 || (i > 0 && t->id[i] <= t->id[i - 1]))
            return false;
    return true;
}

/* Appends the six planes of boids idx[0..n) of t (all of t with idx NULL). */
static void put_planes(uint8_t *p, const struct proto_v3_tile *t, const uint32_t *idx, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = idx ? idx[k] : k;
        p[k] = (uint8_t)t->qx[i];
        p[n + k] = (uint8_t)t->qy[i];
        p[2 * n + k] = (uint8_t)(t->qx[i] >> 8);
        p[3 * n + k] = (uint8_t)(t->qy[i] >> 8);
        p[4 * n + k] = t->heading[i];
        p[5 * n + k] = t->group[i];
    }
}

static void key_body(struct proto_v3_encoder *e, const struct proto_v3_tile *t)
{
    uint8_t *ids = e->sec[SEC_IDS];
    size_t n = 0;
    for (uint32_t i = 0; i < t->count; i++)
        n += pv3_put_varint(ids + n, t->id[i] - (i ? t->id[i - 1] : 0));
    e->len[SEC_IDS] = n;
    put_planes(e->sec[SEC_PLANES], t, NULL, t->count);
    e->len[SEC_PLANES] = (size_t)t->count * 6;
}

/* Appends a position residual's zigzag code to a plane, escaping codes of
 * 255 and more into the exceptions (§11.5). */
static void put_residual(struct proto_v3_encoder *e, int plane, uint16_t zz)
{
    uint8_t *p = e->sec[SEC_RESIDUALS + plane];
    if (zz < PV2_ESCAPE) {
        p[e->len[SEC_RESIDUALS + plane]++] = (uint8_t)zz;
        return;
    }
    p[e->len[SEC_RESIDUALS + plane]++] = PV2_ESCAPE;
    uint8_t *x = e->sec[SEC_EXCEPTIONS];
    x[e->len[SEC_EXCEPTIONS]++] = (uint8_t)zz;
    x[e->len[SEC_EXCEPTIONS]++] = (uint8_t)(zz >> 8);
}

/* The stayers' residuals (§12.5 step 3): each predicted from its bases. */
static void stayer_residuals(struct proto_v3_encoder *e, const struct proto_v3_tile *t, uint32_t s,
                             uint8_t gap1, uint8_t gap0, float width, float height)
{
    struct pv2_bases b = {.x1 = e->x1,
                          .y1 = e->y1,
                          .h1 = e->h1,
                          .x0 = e->x0,
                          .y0 = e->y0,
                          .h0 = e->h0,
                          .gap1 = gap1,
                          .gap0 = gap0,
                          .inv_den = gap0 ? 1.0 / (2.0 * gap0) : 0.0};
    pv2_aspect(width, height, &b.ax, &b.ay);
    enum pv2_mode two = gap0 ? (gap1 == gap0 ? PV2_EVEN : PV2_UNEVEN) : PV2_ONE_BASE;
    for (uint32_t k = 0; k < s; k++) {
        struct pv2_guess g = pv2_guess_of(&b, e->two[k] ? two : PV2_ONE_BASE, k);
        uint32_t i = e->cur[k];
        put_residual(e, g.ctx, pv2_zigzag16((uint16_t)(t->qx[i] - g.x)));
        put_residual(e, 2 + g.ctx, pv2_zigzag16((uint16_t)(t->qy[i] - g.y)));
        uint8_t ph = pv2_predict_heading(&b, k, t->qx[i], t->qy[i]);
        uint8_t *hp = e->sec[SEC_RESIDUALS + 4 + g.ctx];
        hp[e->len[SEC_RESIDUALS + 4 + g.ctx]++] = pv2_zigzag8((uint8_t)(t->heading[i] - ph));
    }
}

/* Base 0's index of each stayer (by id, both ascending): e->two, x0, y0, h0. */
static void gather_base0(struct proto_v3_encoder *e, const struct proto_v3_tile *t, uint32_t s,
                         const struct proto_v3_tile *b0)
{
    uint32_t j = 0;
    for (uint32_t k = 0; k < s; k++) {
        uint32_t id = t->id[e->cur[k]];
        while (b0 && j < b0->count && b0->id[j] < id)
            j++;
        e->two[k] = b0 && j < b0->count && b0->id[j] == id;
        e->x0[k] = e->two[k] ? b0->qx[j] : 0;
        e->y0[k] = e->two[k] ? b0->qy[j] : 0;
        e->h0[k] = e->two[k] ? b0->heading[j] : 0;
    }
}

/* Merges base 1 and t by id: the leave map, the entered boids (indices of
 * t into *enter), the stayers (gathered bases, e->cur). Returns S. */
static uint32_t merge(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                      const struct proto_v3_tile *b1, uint32_t *enter, uint32_t *nenter)
{
    uint8_t *leaves = e->sec[SEC_LEAVES];
    memset(leaves, 0, b1->count / 8 + 1);
    uint32_t i = 0, j = 0, s = 0, en = 0;
    while (i < t->count || j < b1->count) {
        uint32_t a = i < t->count ? t->id[i] : UINT32_MAX;
        uint32_t b = j < b1->count ? b1->id[j] : UINT32_MAX;
        if (j < b1->count && (b < a || (b == a && b1->group[j] != t->group[i]))) {
            leaves[j / 8] |= (uint8_t)(1u << (j % 8)); /* left, or changed group */
            j++;
        } else if (b == a) {
            e->x1[s] = b1->qx[j];
            e->y1[s] = b1->qy[j];
            e->h1[s] = b1->heading[j];
            e->cur[s++] = i++;
            j++;
        } else {
            enter[en++] = i++;
        }
    }
    e->len[SEC_LEAVES] = (b1->count + 7) / 8;
    *nenter = en;
    return s;
}

static void delta_body(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                       const struct proto_v3_tile *b1, const struct proto_v3_tile *b0, uint8_t gap1,
                       uint8_t gap0, float width, float height)
{
    uint32_t *enter = e->enter, en;
    uint32_t s = merge(e, t, b1, enter, &en);
    uint8_t *ids = e->sec[SEC_IDS];
    size_t n = pv3_put_varint(ids, en);
    for (uint32_t k = 0; k < en; k++)
        n += pv3_put_varint(ids + n, t->id[enter[k]] - (k ? t->id[enter[k - 1]] : 0));
    e->len[SEC_IDS] = n;
    put_planes(e->sec[SEC_PLANES], t, enter, en);
    e->len[SEC_PLANES] = (size_t)en * 6;
    gather_base0(e, t, s, b0);
    stayer_residuals(e, t, s, gap1, b0 ? gap0 : 0, width, height);
    e->len[SEC_RESIDUALS + 2] = e->len[SEC_RESIDUALS + 4] = e->len[SEC_RESIDUALS];
    e->len[SEC_RESIDUALS + 3] = e->len[SEC_RESIDUALS + 5] = e->len[SEC_RESIDUALS + 1];
}

static void field_body(struct proto_v3_encoder *e, const struct proto_v3_field *f)
{
    uint8_t *p = e->sec[SEC_FIELD];
    size_t n = 0;
    for (uint32_t c = 0; f && c < f->cells * f->cells; c++) {
        n += pv3_put_varint(p + n, f->count[c]);
        p[n++] = (uint8_t)f->vx[c];
        p[n++] = (uint8_t)f->vy[c];
    }
    e->len[SEC_FIELD] = n;
}

/* Deflates the body's sections into out[0..cap): its packed length. */
static ptrdiff_t deflate_body(const struct proto_v3_encoder *e, uint8_t *out, size_t cap,
                              size_t *plain)
{
    struct proto_deflate d;
    struct proto_deflate_span span[SECTIONS];
    *plain = 0;
    for (int k = 0; k < SECTIONS; k++) {
        span[k] = (struct proto_deflate_span){e->sec[k], e->len[k]};
        *plain += e->len[k];
    }
    proto_deflate_begin(&d, out, cap);
    proto_deflate_block(&d, span, SECTIONS, true);
    return proto_deflate_end(&d);
}

static bool part_ok(const struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                    const struct proto_v3_tile *b1, const struct proto_v3_tile *b0, uint8_t gap1,
                    uint8_t gap0)
{
    if (t->count > e->max_boids || !ids_ascending(t))
        return false;
    if (t->field && (t->field->cells < 1 || t->field->cells * t->field->cells > PROTO_V3_FIELD_MAX))
        return false;
    if (!b1)
        return !b0;
    if (b1->count > e->max_boids || !ids_ascending(b1) || gap1 < 1 || gap1 > PROTO_V3_MAX_GAP)
        return false;
    return !b0 || (gap0 >= 1 && gap0 <= PROTO_V3_MAX_GAP && ids_ascending(b0));
}

ptrdiff_t proto_v3_encode_part(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                               const struct proto_v3_tile *base1, const struct proto_v3_tile *base0,
                               uint8_t gap1, uint8_t gap0, float width, float height, uint8_t *buf,
                               size_t cap)
{
    if (!part_ok(e, t, base1, base0, gap1, gap0))
        return PROTO_E_UNENCODABLE;
    if (cap < 1)
        return PROTO_E_NOSPACE;
    if (t->count == 0 && !t->field) {
        buf[0] = PROTO_V3_PART_EMPTY;
        return 1;
    }
    uint32_t b = base1 ? base1->count : 0;
    if (reserve(e, t->count > b ? t->count : b) < 0)
        return PROTO_E_INTERNAL;
    memset(e->len, 0, sizeof e->len);
    if (base1)
        delta_body(e, t, base1, base0, gap1, gap0, width, height);
    else
        key_body(e, t);
    field_body(e, t->field);
    if (cap < PV3_PART_HEAD_MAX)
        return PROTO_E_NOSPACE;
    size_t plain;
    ptrdiff_t packed = deflate_body(e, buf + PV3_PART_HEAD_MAX, cap - PV3_PART_HEAD_MAX, &plain);
    if (packed < 0)
        return packed;
    uint8_t head[PV3_PART_HEAD_MAX];
    size_t h = 0;
    head[h++] = (uint8_t)((base1 ? PROTO_V3_PART_DELTA : PROTO_V3_PART_KEY) |
                          (t->field ? PROTO_V3_PART_FIELD : 0));
    if (base1)
        head[h++] = (uint8_t)(gap1 | (base0 ? gap0 : 0) << 4);
    h += pv3_put_varint(head + h, t->count);
    h += pv3_put_varint(head + h, (uint32_t)packed);
    h += pv3_put_varint(head + h, (uint32_t)plain);
    memmove(buf + h, buf + PV3_PART_HEAD_MAX, (size_t)packed);
    memcpy(buf, head, h);
    return (ptrdiff_t)(h + (size_t)packed);
}
