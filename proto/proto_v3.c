/*
 * proto_v3.c — view frames of version 3 (layout in PROTOCOL.md §12): what
 * encoder and decoder share (the sampling hash, the tile hash, the header)
 * and the encoder of a tile's part. The decoder is in proto_v3_decode.c;
 * both take the prediction and residual coding of version 2 from
 * proto_v2_impl.h, so a tile's stayers are coded exactly as a version 2
 * delta's boids.
 *
 * A key is deflated (its planes, like version 2's key frames); a delta is
 * bit-packed Rice codes (§12.5): a small part pays a few bytes for its
 * codes' parameters where a deflate block would pay a Huffman table.
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
    SEC_IDS,    /* key: every id; delta: E and the new boids' ids (varints) */
    SEC_PLANES, /* key: six planes; delta: the new boids' six planes */
    SEC_LEAVES, /* delta: L, the boids of base 1 that left (a varint) */
    SEC_FIELD,  /* the field, if any */
    SECTIONS
};

struct proto_v3_encoder {
    uint32_t max_boids, cap; /* cap: boids the scratch holds now */
    uint8_t *mem;
    uint8_t *sec[SECTIONS];
    size_t len[SECTIONS];
    /* The stayers' bases, gathered in stayer order. */
    uint16_t *x1, *y1, *x0, *y0;
    uint8_t *h1, *h0, *two;              /* two: the stayer is in base 0 as well */
    uint32_t *cur;                       /* its index in the tile now */
    uint32_t *enter;                     /* delta: the entered boids' indices in the tile now */
    uint16_t *zx, *zy;                   /* delta: each stayer's position codes... */
    uint8_t *zh, *ctx;                   /* ...its heading code and its context */
    uint16_t *gaps;                      /* delta: where the leavers were in base 1, as gaps */
    uint8_t *bits;                       /* delta: the bit section */
    uint8_t leave_count[PV3_VARINT_MAX]; /* SEC_LEAVES's bytes */
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
    e->zx = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->zy = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->gaps = (uint16_t *)(void *)p, p += (size_t)cap * 2;
    e->h1 = p, p += cap;
    e->h0 = p, p += cap;
    e->two = p, p += cap;
    e->zh = p, p += cap;
    e->ctx = p, p += cap;
    e->sec[SEC_IDS] = p, p += (size_t)cap * 5 + 5;
    e->sec[SEC_PLANES] = p, p += (size_t)cap * 6;
    e->bits = p, p += (size_t)cap * PV3_RICE_MAX_BYTES + 16;
    e->sec[SEC_FIELD] = p;
    e->sec[SEC_LEAVES] = e->leave_count;
    return 0;
}

size_t proto_v3_part_max_size(uint32_t n, uint32_t b, uint32_t cells)
{
    size_t key = pv2_packed_bound(pv3_plain_bound(n, cells));
    /* A new boid at most 11 bytes, a stayer 3 codes, a leaver 1 (and 4 bits). */
    size_t delta = (size_t)n * (11 + 14) + (size_t)b * 5 + (size_t)cells * cells * 7 + 32;
    return PV3_PART_HEAD_MAX + (key > delta ? key : delta);
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

/* The stayers' codes (§12.5): each predicted from its bases, zigzagged. */
static void stayer_codes(struct proto_v3_encoder *e, const struct proto_v3_tile *t, uint32_t s,
                         const struct proto_v3_bases *bs, float width, float height)
{
    int32_t gap1, gap0;
    proto_v3_pred_gaps(bs->tick, bs->tick1, bs->tick0, bs->gap1, bs->b0 ? bs->gap0 : 0, &gap1,
                       &gap0);
    gap0 = bs->b0 ? gap0 : 0;
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
        e->ctx[k] = (uint8_t)g.ctx;
        e->zx[k] = pv2_zigzag16((uint16_t)(t->qx[i] - g.x));
        e->zy[k] = pv2_zigzag16((uint16_t)(t->qy[i] - g.y));
        e->zh[k] =
            pv2_zigzag8((uint8_t)(t->heading[i] - pv2_predict_heading(&b, k, t->qx[i], t->qy[i])));
    }
}

/* A stream's values summed shifted by each Rice parameter: what coding
 * them with parameter k costs is count (k + 1) + shifted[k] bits (an
 * escape aside), so one pass finds the best parameter. */
struct rice_sums {
    uint32_t count;
    uint64_t shifted[PV3_RICE_K];
};

static inline void rice_add(struct rice_sums *r, uint32_t v)
{
    r->count++;
    for (unsigned k = 0; k < PV3_RICE_K; k++)
        r->shifted[k] += v >> k;
}

/* The parameter that codes the values summed in r in the fewest bits. */
static unsigned rice_best(const struct rice_sums *r)
{
    unsigned best = 0;
    for (unsigned k = 1; k < PV3_RICE_K; k++)
        if ((uint64_t)r->count * k + r->shifted[k] < (uint64_t)r->count * best + r->shifted[best])
            best = k;
    return best;
}

/* The bit section (§12.5 step 4): the leavers' gaps (l of them), the
 * stayers' six parameters, each stayer's three codes. Its length in bytes. */
static size_t put_bits(struct proto_v3_encoder *e, uint32_t l, uint32_t s)
{
    struct pv3_bits w = {.p = e->bits, .start = e->bits};
    if (l) {
        struct rice_sums gaps = {0};
        for (uint32_t j = 0; j < l; j++)
            rice_add(&gaps, e->gaps[j]);
        unsigned kl = rice_best(&gaps);
        pv3_put_bits(&w, kl, 4);
        for (uint32_t j = 0; j < l; j++)
            pv3_put_rice(&w, e->gaps[j], kl);
    }
    struct rice_sums sums[3][2] = {{{0}}};
    for (uint32_t i = 0; i < s; i++) {
        unsigned c = e->ctx[i];
        rice_add(&sums[0][c], e->zx[i]);
        rice_add(&sums[1][c], e->zy[i]);
        rice_add(&sums[2][c], e->zh[i]);
    }
    unsigned k[3][2];
    for (int f = 0; f < 3; f++)
        for (unsigned c = 0; c < 2; c++)
            pv3_put_bits(&w, k[f][c] = rice_best(&sums[f][c]), 4);
    for (uint32_t i = 0; i < s; i++) {
        unsigned c = e->ctx[i];
        pv3_put_rice(&w, e->zx[i], k[0][c]);
        pv3_put_rice(&w, e->zy[i], k[1][c]);
        pv3_put_rice(&w, e->zh[i], k[2][c]);
    }
    return pv3_bits_end(&w);
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

/* Merges base 1 and t by id: the leavers (their gaps, *leaves of them),
 * the entered boids (indices of t into *enter), the stayers (gathered
 * bases, e->cur). Returns S. */
static uint32_t merge(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                      const struct proto_v3_tile *b1, uint32_t *enter, uint32_t *nenter,
                      uint32_t *leaves)
{
    uint32_t i = 0, j = 0, s = 0, en = 0, l = 0, last = 0;
    while (i < t->count || j < b1->count) {
        uint64_t a = i < t->count ? t->id[i] : UINT64_MAX;
        uint64_t b = j < b1->count ? b1->id[j] : UINT64_MAX;
        if (j < b1->count && (b < a || (b == a && b1->group[j] != t->group[i]))) {
            e->gaps[l++] = (uint16_t)(j - last); /* left, or changed group */
            last = ++j;
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
    *nenter = en;
    *leaves = l;
    return s;
}

/* A delta's sections: the new boids in SEC_IDS and SEC_PLANES, the
 * leavers' count in SEC_LEAVES, and the bit section's length into *bits. */
static void delta_body(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                       const struct proto_v3_bases *b, float width, float height, size_t *bits)
{
    uint32_t en, l;
    uint32_t s = merge(e, t, b->b1, e->enter, &en, &l);
    uint8_t *ids = e->sec[SEC_IDS];
    size_t n = pv3_put_varint(ids, en);
    for (uint32_t k = 0; k < en; k++)
        n += pv3_put_varint(ids + n, t->id[e->enter[k]] - (k ? t->id[e->enter[k - 1]] : 0));
    e->len[SEC_IDS] = n;
    put_planes(e->sec[SEC_PLANES], t, e->enter, en);
    e->len[SEC_PLANES] = (size_t)en * 6;
    e->len[SEC_LEAVES] = pv3_put_varint(e->leave_count, l);
    gather_base0(e, t, s, b->b0);
    stayer_codes(e, t, s, b, width, height);
    *bits = put_bits(e, l, s);
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

/* Deflates the key's sections into out[0..cap): its packed length. */
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

/* Copies a delta's sections and its bit section into out[0..cap): its
 * length, or PROTO_E_NOSPACE. */
static ptrdiff_t copy_body(const struct proto_v3_encoder *e, size_t bits, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (int k = 0; k < SECTIONS; k++)
        n += e->len[k];
    if (cap < n + bits)
        return PROTO_E_NOSPACE;
    n = 0;
    for (int k = 0; k < SECTIONS; k++) {
        memcpy(out + n, e->sec[k], e->len[k]);
        n += e->len[k];
    }
    memcpy(out + n, e->bits, bits);
    return (ptrdiff_t)(n + bits);
}

static bool part_ok(const struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                    const struct proto_v3_bases *b)
{
    if (t->count > e->max_boids || !ids_ascending(t))
        return false;
    if (t->field && (t->field->cells < 1 || t->field->cells * t->field->cells > PROTO_V3_FIELD_MAX))
        return false;
    if (!b)
        return true;
    if (!b->b1 || b->b1->count > e->max_boids || !ids_ascending(b->b1) || b->gap1 < 1 ||
        b->gap1 > PROTO_V3_MAX_GAP)
        return false;
    return !b->b0 || (b->gap0 >= 1 && b->gap0 <= PROTO_V3_MAX_GAP && ids_ascending(b->b0));
}

ptrdiff_t proto_v3_encode_part(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                               const struct proto_v3_bases *b, float width, float height,
                               uint8_t *buf, size_t cap)
{
    if (!part_ok(e, t, b))
        return PROTO_E_UNENCODABLE;
    if (cap < 1)
        return PROTO_E_NOSPACE;
    if (t->count == 0 && !t->field) {
        buf[0] = PROTO_V3_PART_EMPTY;
        return 1;
    }
    uint32_t nb = b ? b->b1->count : 0;
    if (reserve(e, t->count > nb ? t->count : nb) < 0)
        return PROTO_E_INTERNAL;
    memset(e->len, 0, sizeof e->len);
    size_t bits = 0, plain = 0;
    if (b)
        delta_body(e, t, b, width, height, &bits);
    else
        key_body(e, t);
    field_body(e, t->field);
    if (cap < PV3_PART_HEAD_MAX)
        return PROTO_E_NOSPACE;
    uint8_t *body = buf + PV3_PART_HEAD_MAX;
    ptrdiff_t packed = b ? copy_body(e, bits, body, cap - PV3_PART_HEAD_MAX)
                         : deflate_body(e, body, cap - PV3_PART_HEAD_MAX, &plain);
    if (packed < 0)
        return packed;
    uint8_t head[PV3_PART_HEAD_MAX];
    size_t h = 0;
    head[h++] = (uint8_t)((b ? PROTO_V3_PART_DELTA : PROTO_V3_PART_KEY) |
                          (t->field ? PROTO_V3_PART_FIELD : 0));
    if (b)
        head[h++] = (uint8_t)(b->gap1 | (b->b0 ? b->gap0 : 0) << 4);
    h += pv3_put_varint(head + h, t->count);
    h += pv3_put_varint(head + h, (uint32_t)packed);
    if (!b)
        h += pv3_put_varint(head + h, (uint32_t)plain);
    memmove(buf + h, buf + PV3_PART_HEAD_MAX, (size_t)packed);
    memcpy(buf, head, h);
    return (ptrdiff_t)(h + (size_t)packed);
}
