/*
 * proto_v3_decode.c — the version 3 frame decoder (PROTOCOL.md §12.7):
 * header, sections, each part's base, bounded inflate, reconstruction by
 * id, the frame hash.
 *
 * A decoder owns PROTO_V3_HISTORY + 1 frame slots: the last frames it
 * decoded (the bases later deltas may name) and one the next frame is
 * decoded into; only a frame that passes every check takes its slot into
 * the history, evicting the oldest, so a refused frame changes nothing.
 * Fields are not bases (every part sends its field whole): only the last
 * frame's are kept.
 */
#include "proto_v3.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bytes.h"
#include "proto_sections.h"
#include "proto_v2_impl.h"
#include "proto_v3_impl.h"

#define SLOTS (PROTO_V3_HISTORY + 1)

struct slot {
    struct proto_v3_frame f;
    struct proto_v3_part *parts;
    uint32_t *id;
    uint16_t *qx, *qy;
    uint8_t *heading, *group;
    struct proto_obstacle *obstacles;
    struct proto_target *targets;
    bool held;
    uint64_t age;
};

struct proto_v3_decoder {
    uint32_t max_boids, max_parts, max_obstacles, cells;
    uint64_t clock;
    z_stream z;
    uint8_t *plain; /* an inflated body */
    size_t plain_cap;
    struct proto_v3_field *fields; /* the last frame's, max_parts */
    /* A delta's stayers, gathered from base 1 and base 0 for the prediction. */
    uint16_t *x1, *y1, *x0, *y0;
    uint8_t *h1, *h0, *two, *g1;
    uint32_t *id1;                /* the stayers' ids */
    uint32_t *eid;                /* the entered boids' ids */
    uint32_t *stay_at, *enter_at; /* where each went in the part */
    uint8_t *left;                /* a delta's leave map: base 1's boids that left */
    struct slot slot[SLOTS];
    void *mem;
};

/* ---- decoder object -------------------------------------------------------- */

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static size_t slot_bytes(uint32_t boids, uint32_t parts, uint32_t obstacles)
{
    return round16(parts * sizeof(struct proto_v3_part)) + round16(boids * 4u) +
           2 * round16(boids * 2u) + 2 * round16(boids) +
           round16(obstacles * sizeof(struct proto_obstacle)) +
           round16(PROTO_SNAPSHOT_MAX_TARGETS * sizeof(struct proto_target));
}

static uint8_t *carve_slot(struct slot *s, uint8_t *p, uint32_t boids, uint32_t parts,
                           uint32_t obstacles)
{
    s->parts = (struct proto_v3_part *)(void *)p, p += round16(parts * sizeof *s->parts);
    s->id = (uint32_t *)(void *)p, p += round16(boids * 4u);
    s->qx = (uint16_t *)(void *)p, p += round16(boids * 2u);
    s->qy = (uint16_t *)(void *)p, p += round16(boids * 2u);
    s->heading = p, p += round16(boids);
    s->group = p, p += round16(boids);
    s->obstacles = (struct proto_obstacle *)(void *)p;
    p += round16(obstacles * sizeof(struct proto_obstacle));
    s->targets = (struct proto_target *)(void *)p;
    return p + round16(PROTO_SNAPSHOT_MAX_TARGETS * sizeof(struct proto_target));
}

/* Bytes of the gathered stayers and the fields. */
static size_t work_bytes(uint32_t boids, uint32_t parts)
{
    return 4 * round16(boids * 2u) + 5 * round16(boids) + 4 * round16(boids * 4u) +
           round16(parts * sizeof(struct proto_v3_field));
}

static void carve_work(struct proto_v3_decoder *d, uint8_t *p)
{
    uint32_t n = d->max_boids;
    d->x1 = (uint16_t *)(void *)p, p += round16(n * 2u);
    d->y1 = (uint16_t *)(void *)p, p += round16(n * 2u);
    d->x0 = (uint16_t *)(void *)p, p += round16(n * 2u);
    d->y0 = (uint16_t *)(void *)p, p += round16(n * 2u);
    d->h1 = p, p += round16(n);
    d->h0 = p, p += round16(n);
    d->two = p, p += round16(n);
    d->g1 = p, p += round16(n);
    d->id1 = (uint32_t *)(void *)p, p += round16(n * 4u);
    d->eid = (uint32_t *)(void *)p, p += round16(n * 4u);
    d->stay_at = (uint32_t *)(void *)p, p += round16(n * 4u);
    d->enter_at = (uint32_t *)(void *)p, p += round16(n * 4u);
    d->left = p, p += round16(n);
    d->fields = (struct proto_v3_field *)(void *)p;
}

struct proto_v3_decoder *proto_v3_decoder_create(uint32_t max_boids, uint32_t max_parts,
                                                 uint32_t max_obstacles, uint32_t field_cells,
                                                 const char **err)
{
    const char *why = NULL;
    struct proto_v3_decoder *d = NULL;
    size_t plain = pv3_plain_bound(max_boids, field_cells) + 1;
    size_t slots = SLOTS * slot_bytes(max_boids, max_parts, max_obstacles);
    if (max_boids > PV2_MAX_BOIDS || max_parts < 1 ||
        max_parts > PROTO_V3_MAX_TILES * PROTO_V3_MAX_TILES ||
        max_obstacles > PROTO_SNAPSHOT_MAX_OBSTACLES || field_cells < 1 ||
        field_cells * field_cells > PROTO_V3_FIELD_MAX)
        why = "max_boids, max_parts, max_obstacles or field_cells out of range";
    else if (!(d = calloc(1, sizeof *d)) ||
             !(d->mem = malloc(slots + work_bytes(max_boids, max_parts) + round16(plain))))
        why = "out of memory";
    else if (inflateInit2(&d->z, -15) != Z_OK)
        why = "zlib: inflateInit2 failed";
    if (why) {
        if (d)
            free(d->mem);
        free(d);
        *err = why;
        return NULL;
    }
    d->max_boids = max_boids;
    d->max_parts = max_parts;
    d->max_obstacles = max_obstacles;
    d->cells = field_cells;
    uint8_t *p = d->mem;
    for (int k = 0; k < SLOTS; k++)
        p = carve_slot(&d->slot[k], p, max_boids, max_parts, max_obstacles);
    carve_work(d, p);
    p += work_bytes(max_boids, max_parts);
    d->plain = p;
    d->plain_cap = plain;
    return d;
}

void proto_v3_decoder_destroy(struct proto_v3_decoder *d)
{
    if (!d)
        return;
    inflateEnd(&d->z);
    free(d->mem);
    free(d);
}

void proto_v3_decoder_forget(struct proto_v3_decoder *d)
{
    for (int k = 0; k < SLOTS; k++)
        d->slot[k].held = false;
}

static struct slot *free_slot(struct proto_v3_decoder *d)
{
    for (int k = 0; k < SLOTS; k++)
        if (!d->slot[k].held)
            return &d->slot[k];
    return &d->slot[0];
}

static void keep(struct proto_v3_decoder *d, struct slot *s)
{
    s->held = true;
    s->age = ++d->clock;
    int held = 0, oldest = -1;
    for (int k = 0; k < SLOTS; k++) {
        if (!d->slot[k].held)
            continue;
        held++;
        if (oldest < 0 || d->slot[k].age < d->slot[oldest].age)
            oldest = k;
    }
    if (held > PROTO_V3_HISTORY)
        d->slot[oldest].held = false;
}

/* ---- header and sections --------------------------------------------------- */

static void read_header(const uint8_t *p, struct proto_v3_header *h)
{
    h->flags = p[4];
    h->shift = p[5];
    h->sample = p[6];
    h->tick = bytes_le_get(p + PV3_OFF_TICK, 8);
    h->server_time_us = bytes_le_get(p + PV3_OFF_TIME, 8);
    h->width = bytes_le_get_f32(p + PV3_OFF_WIDTH);
    h->height = bytes_le_get_f32(p + PV3_OFF_HEIGHT);
    h->seq = (uint32_t)bytes_le_get(p + PV3_OFF_SEQ, 4);
    h->room_boids = (uint32_t)bytes_le_get(p + PV3_OFF_ROOM_BOIDS, 4);
    h->cols = p[PV3_OFF_COLS];
    h->rows = p[PV3_OFF_ROWS];
    h->rect_cols = p[PV3_OFF_RECT_COLS];
    h->rect_rows = p[PV3_OFF_RECT_ROWS];
    h->rect_x = p[PV3_OFF_RECT_X];
    h->rect_y = p[PV3_OFF_RECT_Y];
    h->obstacle_count = (uint16_t)bytes_le_get(p + PV3_OFF_OBSTACLES, 2);
    h->target_count = (uint16_t)bytes_le_get(p + PV3_OFF_TARGETS, 2);
    h->frame_hash = (uint32_t)bytes_le_get(p + PV3_OFF_HASH, 4);
}

static bool header_ok(const uint8_t *p, const struct proto_v3_header *h)
{
    if ((h->flags & ~PV3_KNOWN_FLAGS) || p[7] || p[50] || p[51])
        return false;
    if (!(h->width > 0.0f) || !isfinite(h->width) || !(h->height > 0.0f) || !isfinite(h->height))
        return false;
    if (h->shift > PROTO_V3_MAX_SHIFT || h->sample > PROTO_V3_MAX_SAMPLE || !h->cols || !h->rows)
        return false;
    uint32_t gc = proto_v3_grid_at(h->cols, h->shift), gr = proto_v3_grid_at(h->rows, h->shift);
    return h->rect_cols >= 1 && h->rect_rows >= 1 && h->rect_cols <= gc && h->rect_rows <= gr &&
           h->rect_x < gc && h->rect_y < gr && h->target_count <= PROTO_SNAPSHOT_MAX_TARGETS;
}

static int decode_header(const uint8_t *buf, size_t len, struct proto_v3_header *h)
{
    if (len < 4)
        return PROTO_E_TRUNCATED;
    if (buf[0] != 'F' || buf[1] != 'K')
        return PROTO_E_BAD_MAGIC;
    if (buf[2] != PROTO_V3_VERSION)
        return PROTO_E_BAD_VERSION;
    if (buf[3] != PROTO_V3_KIND_FRAME)
        return PROTO_E_BAD_TYPE;
    if (len < PROTO_V3_HEADER_SIZE)
        return PROTO_E_TRUNCATED;
    read_header(buf, h);
    return header_ok(buf, h) ? 0 : PROTO_E_BAD_VALUE;
}

/* ---- parts ----------------------------------------------------------------- */

/* What a delta part is decoded on: base 1 and base 0 (or NULL), and the
 * gaps its prediction scales by (proto_v3_pred_gaps()). */
struct dbases {
    const struct proto_v3_part *b1, *b0;
    int32_t g1, g0;
};

/* A part's fixed fields (§12.5). */
struct part_head {
    uint8_t kind;
    uint8_t gap1, gap0;
    uint32_t count, packed, plain;
};

static int read_part_head(const uint8_t *buf, size_t len, size_t *at, struct part_head *ph)
{
    if (*at >= len)
        return PROTO_E_TRUNCATED;
    *ph = (struct part_head){.kind = buf[(*at)++]};
    unsigned kind = ph->kind & 3u;
    if ((ph->kind & ~7u) || kind == 3 || (kind == PROTO_V3_PART_EMPTY && ph->kind))
        return PROTO_E_BAD_VALUE;
    if (kind == PROTO_V3_PART_EMPTY)
        return 0;
    if (kind == PROTO_V3_PART_DELTA) {
        if (*at >= len)
            return PROTO_E_TRUNCATED;
        ph->gap1 = buf[*at] & 15u;
        ph->gap0 = buf[(*at)++] >> 4;
        if (ph->gap1 == 0)
            return PROTO_E_BAD_VALUE;
    }
    if (!pv3_get_varint(buf, len, at, &ph->count) || !pv3_get_varint(buf, len, at, &ph->packed) ||
        (kind == PROTO_V3_PART_KEY && !pv3_get_varint(buf, len, at, &ph->plain)))
        return PROTO_E_TRUNCATED;
    if (len - *at < ph->packed)
        return PROTO_E_TRUNCATED;
    if ((uint64_t)ph->plain > (uint64_t)ph->packed * PV2_MAX_RATIO)
        return PROTO_E_BAD_VALUE;
    return 0;
}

/* The part at super-tile (tx, ty) of a held frame of seq with the same
 * shift and sample, or NULL. */
static const struct proto_v3_part *base_part(const struct proto_v3_decoder *d, uint32_t seq,
                                             const struct proto_v3_header *h, uint32_t tx,
                                             uint32_t ty, uint64_t *tick)
{
    const struct slot *best = NULL;
    for (int k = 0; k < SLOTS; k++) {
        const struct slot *s = &d->slot[k];
        if (s->held && s->f.h.seq == seq && (!best || s->age > best->age))
            best = s;
    }
    if (!best || best->f.h.shift != h->shift || best->f.h.sample != h->sample ||
        best->f.h.cols != h->cols || best->f.h.rows != h->rows)
        return NULL;
    const struct proto_v3_header *bh = &best->f.h;
    *tick = bh->tick;
    uint32_t gc = proto_v3_grid_at(bh->cols, bh->shift), gr = proto_v3_grid_at(bh->rows, bh->shift);
    uint32_t cx = (tx + gc - bh->rect_x) % gc, cy = (ty + gr - bh->rect_y) % gr;
    if (cx >= bh->rect_cols || cy >= bh->rect_rows)
        return NULL;
    return &best->parts[cy * bh->rect_cols + cx];
}

static int inflate_part(struct proto_v3_decoder *d, const uint8_t *body, const struct part_head *ph)
{
    z_stream *z = &d->z;
    if (inflateReset(z) != Z_OK)
        return PROTO_E_INTERNAL;
    z->next_in = (Bytef *)(uintptr_t)body; /* zlib's API is not const; it only reads */
    z->avail_in = ph->packed;
    z->next_out = d->plain;
    z->avail_out = ph->plain + 1u;
    int rc = inflate(z, Z_FINISH);
    if (rc != Z_STREAM_END || z->avail_in != 0 || z->total_out != ph->plain)
        return PROTO_E_BAD_BODY;
    return 0;
}

/* A cursor over an inflated body. */
struct body {
    const uint8_t *p;
    size_t len, at;
    int rc;
};

static uint32_t take_varint(struct body *b)
{
    uint32_t v = 0;
    if (!b->rc && !pv3_get_varint(b->p, b->len, &b->at, &v))
        b->rc = PROTO_E_BAD_BODY;
    return v;
}

static const uint8_t *take(struct body *b, size_t n)
{
    if (b->rc || b->len - b->at < n) {
        b->rc = PROTO_E_BAD_BODY;
        return NULL;
    }
    const uint8_t *p = b->p + b->at;
    b->at += n;
    return p;
}

/* n ids as varint differences after `prev`, ascending, into id[]. */
static void take_ids(struct body *b, uint32_t n, uint32_t prev, uint32_t *id)
{
    for (uint32_t k = 0; k < n && !b->rc; k++) {
        uint32_t step = take_varint(b);
        if (step == 0 || step > UINT32_MAX - prev)
            b->rc = PROTO_E_BAD_BODY;
        prev += step;
        id[k] = prev;
    }
}

/* Six planes of n boids into the part's arrays at [k0, k0 + n), by index idx. */
static void take_planes(struct body *b, uint32_t n, struct proto_v3_part *part, uint32_t *at)
{
    const uint8_t *p = take(b, (size_t)n * 6);
    for (uint32_t k = 0; p && k < n; k++) {
        uint32_t i = at ? at[k] : k;
        ((uint16_t *)part->qx)[i] = (uint16_t)(p[k] | p[2 * n + k] << 8);
        ((uint16_t *)part->qy)[i] = (uint16_t)(p[n + k] | p[3 * n + k] << 8);
        ((uint8_t *)part->heading)[i] = p[4 * n + k];
        ((uint8_t *)part->group)[i] = p[5 * n + k];
    }
}

static void take_field(struct proto_v3_decoder *d, struct body *b, struct proto_v3_field *f)
{
    f->cells = d->cells;
    for (uint32_t c = 0; c < d->cells * d->cells && !b->rc; c++) {
        f->count[c] = take_varint(b);
        const uint8_t *v = take(b, 2);
        if (v) {
            f->vx[c] = (int8_t)v[0];
            f->vy[c] = (int8_t)v[1];
        }
    }
}

/* The leavers (§12.5 step 4) from r: l gaps coded with a parameter, into
 * d->left, a byte per boid of base 1's b. False if one lies past b. */
static bool take_leaves(struct proto_v3_decoder *d, struct pv3_bitr *r, uint32_t l, uint32_t b)
{
    memset(d->left, 0, b);
    if (!l)
        return true;
    unsigned k = pv3_get_bits(r, 4);
    uint64_t at = 0;
    for (uint32_t j = 0; j < l && !r->bad; j++) {
        at += pv3_get_rice(r, k);
        if (at >= b)
            return false;
        d->left[at++] = 1;
    }
    return !r->bad;
}

/* Base 1's stayers (those not left) gathered into d, with base 0's copy of
 * each where it has one. Returns S. */
static uint32_t gather_stayers(struct proto_v3_decoder *d, const struct proto_v3_part *b1,
                               const struct proto_v3_part *b0)
{
    uint32_t s = 0, j = 0;
    for (uint32_t k = 0; k < b1->count; k++) {
        if (d->left[k])
            continue;
        d->id1[s] = b1->id[k];
        d->x1[s] = b1->qx[k];
        d->y1[s] = b1->qy[k];
        d->h1[s] = b1->heading[k];
        d->g1[s] = b1->group[k];
        while (b0 && j < b0->count && b0->id[j] < b1->id[k])
            j++;
        d->two[s] = b0 && j < b0->count && b0->id[j] == b1->id[k];
        d->x0[s] = d->two[s] ? b0->qx[j] : 0;
        d->y0[s] = d->two[s] ? b0->qy[j] : 0;
        d->h0[s] = d->two[s] ? b0->heading[j] : 0;
        s++;
    }
    return s;
}

/* Merges the stayers' ids (d->id1[0..s)) and the new boids'
 * (d->eid[0..e)) into out's id order: where each went into d->stay_at and
 * d->enter_at. An id twice is a bad body. */
static int merge_ids(struct proto_v3_decoder *d, struct proto_v3_part *out, uint32_t s, uint32_t e)
{
    uint32_t *id = (uint32_t *)out->id;
    uint32_t i = 0, j = 0;
    for (uint32_t at = 0; at < s + e; at++) {
        uint64_t a = i < s ? d->id1[i] : UINT64_MAX, b = j < e ? d->eid[j] : UINT64_MAX;
        if (a == b)
            return PROTO_E_BAD_BODY;
        if (a < b) {
            id[at] = (uint32_t)a;
            d->stay_at[i++] = at;
        } else {
            id[at] = (uint32_t)b;
            d->enter_at[j++] = at;
        }
    }
    return 0;
}

/* The stayers' codes (§12.5 step 4) from r, predicted from their bases. */
static void take_stayers(struct proto_v3_decoder *d, struct pv3_bitr *r, uint32_t s,
                         const unsigned k[3][2], const struct dbases *db,
                         const struct proto_v3_header *h, struct proto_v3_part *out)
{
    struct pv2_bases bs = {.x1 = d->x1,
                           .y1 = d->y1,
                           .h1 = d->h1,
                           .x0 = d->x0,
                           .y0 = d->y0,
                           .h0 = d->h0,
                           .gap1 = db->g1,
                           .gap0 = db->g0,
                           .inv_den = db->g0 ? 1.0 / (2.0 * db->g0) : 0.0};
    pv2_aspect(h->width, h->height, &bs.ax, &bs.ay);
    enum pv2_mode two = db->g0 ? (db->g1 == db->g0 ? PV2_EVEN : PV2_UNEVEN) : PV2_ONE_BASE;
    for (uint32_t i = 0; i < s && !r->bad; i++) {
        struct pv2_guess g = pv2_guess_of(&bs, d->two[i] ? two : PV2_ONE_BASE, i);
        uint32_t zx = pv3_get_rice(r, k[0][g.ctx]), zy = pv3_get_rice(r, k[1][g.ctx]);
        uint32_t zh = pv3_get_rice(r, k[2][g.ctx]);
        if (zx > 0xffffu || zy > 0xffffu || zh > 0xffu) {
            r->bad = true;
            return;
        }
        uint16_t qx = (uint16_t)(g.x + pv2_unzigzag16((uint16_t)zx));
        uint16_t qy = (uint16_t)(g.y + pv2_unzigzag16((uint16_t)zy));
        uint32_t at = d->stay_at[i];
        ((uint16_t *)out->qx)[at] = qx;
        ((uint16_t *)out->qy)[at] = qy;
        ((uint8_t *)out->heading)[at] =
            (uint8_t)(pv2_predict_heading(&bs, i, qx, qy) + pv2_unzigzag8((uint8_t)zh));
        ((uint8_t *)out->group)[at] = d->g1[i];
    }
}

/* Writes the new boids' values where the merge put them. */
static void place_entered(const struct proto_v3_decoder *d, const uint8_t *planes, uint32_t e,
                          struct proto_v3_part *out)
{
    for (uint32_t j = 0; j < e; j++) { /* the new boids' planes, as a key's */
        uint32_t at = d->enter_at[j];
        ((uint16_t *)out->qx)[at] = (uint16_t)(planes[j] | planes[2 * e + j] << 8);
        ((uint16_t *)out->qy)[at] = (uint16_t)(planes[e + j] | planes[3 * e + j] << 8);
        ((uint8_t *)out->heading)[at] = planes[4 * e + j];
        ((uint8_t *)out->group)[at] = planes[5 * e + j];
    }
}

/* A delta's body (§12.5): the new boids, L and the field, then the bit
 * section to its end (the leavers, the stayers' parameters and codes, zero
 * bits to the byte). */
static void unpack_delta(struct proto_v3_decoder *d, struct body *b, const struct part_head *ph,
                         const struct proto_v3_header *h, const struct dbases *bs,
                         struct proto_v3_part *out, struct proto_v3_field *field)
{
    uint32_t e = take_varint(b);
    if (!b->rc && e > ph->count)
        b->rc = PROTO_E_BAD_BODY;
    take_ids(b, e, 0, d->eid);
    const uint8_t *planes = take(b, (size_t)e * 6);
    uint32_t l = take_varint(b);
    if (ph->kind & PROTO_V3_PART_FIELD)
        take_field(d, b, field);
    if (!b->rc && l > bs->b1->count)
        b->rc = PROTO_E_BAD_BODY;
    if (b->rc)
        return;
    struct pv3_bitr r = {.p = b->p + b->at, .len = b->len - b->at};
    if (!take_leaves(d, &r, l, bs->b1->count)) {
        b->rc = PROTO_E_BAD_BODY;
        return;
    }
    uint32_t s = bs->b1->count - l;
    unsigned k[3][2];
    for (int f = 0; f < 3; f++)
        for (int c = 0; c < 2; c++)
            k[f][c] = pv3_get_bits(&r, 4);
    if (r.bad || (uint64_t)s + e != ph->count || gather_stayers(d, bs->b1, bs->b0) != s ||
        merge_ids(d, out, s, e) != 0) {
        b->rc = PROTO_E_BAD_BODY;
        return;
    }
    place_entered(d, planes, e, out);
    take_stayers(d, &r, s, k, bs, h, out);
    /* The bits end in the last byte, and whatever pads it is zero. */
    size_t at = pv3_bits_read(&r);
    if (r.bad || (at + 7) / 8 != r.len || (at % 8 && r.p[r.len - 1] >> (at % 8)))
        b->rc = PROTO_E_BAD_BODY;
    b->at = b->len;
}

/* Decodes one part's body (a key's inflated) into out (whose arrays hold
 * its count). */
static int unpack_part(struct proto_v3_decoder *d, const uint8_t *body, const struct part_head *ph,
                       const struct proto_v3_header *h, const struct dbases *bs,
                       struct proto_v3_part *out, struct proto_v3_field *field)
{
    const struct proto_v3_part *b1 = bs->b1;
    struct body b = {.p = b1 ? body : d->plain, .len = b1 ? ph->packed : ph->plain};
    if (!b1) {
        take_ids(&b, ph->count, 0, (uint32_t *)out->id);
        take_planes(&b, ph->count, out, NULL);
        if (ph->kind & PROTO_V3_PART_FIELD)
            take_field(d, &b, field);
    } else {
        unpack_delta(d, &b, ph, h, bs, out, field);
    }
    out->field = ph->kind & PROTO_V3_PART_FIELD ? field : NULL;
    if (!b.rc && b.at != b.len)
        b.rc = PROTO_E_BAD_BODY; /* exceptions or bytes left over */
    return b.rc;
}

/* The bases of a delta part at (tx, ty): NO_BASE unless held as §12.7 says. */
static int part_bases(const struct proto_v3_decoder *d, const struct proto_v3_header *h,
                      const struct part_head *ph, uint32_t tx, uint32_t ty, struct dbases *bs)
{
    *bs = (struct dbases){0};
    if ((ph->kind & 3u) != PROTO_V3_PART_DELTA)
        return 0;
    uint32_t seq = h->seq - ph->gap1;
    uint64_t t1 = 0, t0 = 0;
    bs->b1 = base_part(d, seq, h, tx, ty, &t1);
    bs->b0 = ph->gap0 ? base_part(d, seq - ph->gap0, h, tx, ty, &t0) : NULL;
    if (!bs->b1 || (ph->gap0 && !bs->b0))
        return PROTO_E_NO_BASE;
    proto_v3_pred_gaps(h->tick, t1, t0, ph->gap1, ph->gap0, &bs->g1, &bs->g0);
    bs->g0 = ph->gap0 ? bs->g0 : 0;
    return 0;
}

/* A part's body at buf[*at..) (its head read into ph) on bases bs into
 * out and *field; *at moves past it. */
static int decode_body(struct proto_v3_decoder *d, const uint8_t *buf, size_t *at,
                       const struct part_head *ph, const struct proto_v3_header *h,
                       const struct dbases *bs, struct proto_v3_part *out,
                       struct proto_v3_field *field)
{
    int rc;
    if (!bs->b1 && ph->plain > pv3_plain_bound(ph->count, d->cells))
        return PROTO_E_BAD_VALUE;
    if (!bs->b1 && (rc = inflate_part(d, buf + *at, ph)) != 0)
        return rc;
    const uint8_t *body = buf + *at;
    *at += ph->packed;
    out->count = ph->count;
    return unpack_part(d, body, ph, h, bs, out, field);
}

/* One part at buf[*at..len) into the slot's arrays from boid *n on. */
static int decode_part(struct proto_v3_decoder *d, const uint8_t *buf, size_t len, size_t *at,
                       struct slot *s, uint32_t k, uint32_t *n)
{
    const struct proto_v3_header *h = &s->f.h;
    uint32_t gc = proto_v3_grid_at(h->cols, h->shift), gr = proto_v3_grid_at(h->rows, h->shift);
    struct proto_v3_part *out = &s->parts[k];
    *out = (struct proto_v3_part){.tx = (h->rect_x + k % h->rect_cols) % gc,
                                  .ty = (h->rect_y + k / h->rect_cols) % gr,
                                  .id = s->id + *n,
                                  .qx = s->qx + *n,
                                  .qy = s->qy + *n,
                                  .heading = s->heading + *n,
                                  .group = s->group + *n};
    struct part_head ph;
    struct dbases bs;
    int rc = read_part_head(buf, len, at, &ph);
    if (rc || (ph.kind & 3u) == PROTO_V3_PART_EMPTY)
        return rc;
    if (ph.count > d->max_boids - *n)
        return PROTO_E_OVER_LIMIT;
    if ((rc = part_bases(d, h, &ph, out->tx, out->ty, &bs)) != 0)
        return rc;
    rc = decode_body(d, buf, at, &ph, h, &bs, out, &d->fields[k]);
    *n += ph.count;
    return rc;
}

/* A lone part's bases (proto_v3_decode_part()): NO_BASE unless b holds
 * those its gaps name; OVER_LIMIT for a base the decoder cannot gather. */
static int lone_bases(const struct proto_v3_decoder *d, const struct part_head *ph, uint64_t tick,
                      const struct proto_v3_part_bases *b, struct dbases *bs)
{
    *bs = (struct dbases){0};
    if ((ph->kind & 3u) != PROTO_V3_PART_DELTA)
        return 0;
    if ((unsigned)ph->gap1 + ph->gap0 > PROTO_V3_HISTORY)
        return PROTO_E_NO_BASE;
    bs->b1 = b->base[ph->gap1 - 1];
    bs->b0 = ph->gap0 ? b->base[ph->gap1 + ph->gap0 - 1] : NULL;
    if (!bs->b1 || (ph->gap0 && !bs->b0))
        return PROTO_E_NO_BASE;
    if (bs->b1->count > d->max_boids || (bs->b0 && bs->b0->count > d->max_boids))
        return PROTO_E_OVER_LIMIT;
    uint64_t t0 = ph->gap0 ? b->tick[ph->gap1 + ph->gap0 - 1] : 0;
    proto_v3_pred_gaps(tick, b->tick[ph->gap1 - 1], t0, ph->gap1, ph->gap0, &bs->g1, &bs->g0);
    bs->g0 = ph->gap0 ? bs->g0 : 0;
    return 0;
}

int proto_v3_decode_part(struct proto_v3_decoder *d, const uint8_t *buf, size_t len, size_t *at,
                         const struct proto_v3_part_bases *b, const struct proto_v3_header *h,
                         struct proto_v3_part *out, struct proto_v3_field *field)
{
    struct part_head ph;
    struct dbases bs;
    out->count = 0;
    out->field = NULL;
    int rc = read_part_head(buf, len, at, &ph);
    if (rc || (ph.kind & 3u) == PROTO_V3_PART_EMPTY)
        return rc;
    if (ph.count > d->max_boids)
        return PROTO_E_OVER_LIMIT;
    if ((rc = lone_bases(d, &ph, h->tick, b, &bs)) != 0)
        return rc;
    return decode_body(d, buf, at, &ph, h, &bs, out, field);
}

/* Obstacles and targets (§12.7 step 3); *at moves past them. */
static int decode_sections(const uint8_t *buf, size_t len, struct slot *s, size_t *at)
{
    const struct proto_v3_header *h = &s->f.h;
    size_t need = (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                  (size_t)h->target_count * PROTO_SNAPSHOT_TARGET_SIZE;
    if (len - *at < need)
        return PROTO_E_TRUNCATED;
    int rc = proto_sections_get_obstacles(buf + *at, h->obstacle_count, s->obstacles);
    *at += (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE;
    if (rc == 0)
        rc = proto_sections_get_targets(buf + *at, h->target_count, s->targets);
    *at += (size_t)h->target_count * PROTO_SNAPSHOT_TARGET_SIZE;
    return rc;
}

/* Every part, the length, the hash (§12.7 steps 4-6). */
static int decode_parts(struct proto_v3_decoder *d, const uint8_t *buf, size_t len, size_t at,
                        struct slot *s)
{
    uint32_t parts = (uint32_t)s->f.h.rect_cols * s->f.h.rect_rows, n = 0, hash = 0;
    if (parts > d->max_parts)
        return PROTO_E_OVER_LIMIT;
    for (uint32_t k = 0; k < parts; k++) {
        int rc = decode_part(d, buf, len, &at, s, k, &n);
        if (rc)
            return rc;
        const struct proto_v3_part *p = &s->parts[k];
        struct proto_v3_tile t = {p->count, p->id, p->qx, p->qy, p->heading, p->group, NULL};
        hash += proto_v3_tile_hash(&t);
    }
    if (at != len)
        return PROTO_E_BAD_LENGTH;
    if (hash != s->f.h.frame_hash)
        return PROTO_E_HASH_MISMATCH;
    s->f.part_count = parts;
    s->f.boid_count = n;
    s->f.parts = s->parts;
    s->f.obstacles = s->obstacles;
    s->f.targets = s->targets;
    return 0;
}

int proto_v3_decode(struct proto_v3_decoder *d, const uint8_t *buf, size_t len,
                    const struct proto_v3_frame **out)
{
    struct slot *s = free_slot(d);
    int rc = decode_header(buf, len, &s->f.h);
    if (rc)
        return rc;
    if (s->f.h.obstacle_count > d->max_obstacles)
        return PROTO_E_OVER_LIMIT;
    size_t at = PROTO_V3_HEADER_SIZE;
    if ((rc = decode_sections(buf, len, s, &at)) != 0)
        return rc;
    if ((rc = decode_parts(d, buf, len, at, s)) != 0)
        return rc;
    keep(d, s);
    *out = &s->f;
    return 0;
}

/* ---- scan ------------------------------------------------------------------ */

int proto_v3_scan(const uint8_t *buf, size_t len, struct proto_v3_header *h,
                  struct proto_v3_shape *out)
{
    int rc = decode_header(buf, len, h);
    if (rc)
        return rc;
    size_t at = PROTO_V3_HEADER_SIZE;
    size_t sections = (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                      (size_t)h->target_count * PROTO_SNAPSHOT_TARGET_SIZE;
    if (len - at < sections)
        return PROTO_E_TRUNCATED;
    at += sections;
    *out = (struct proto_v3_shape){.parts = (uint32_t)h->rect_cols * h->rect_rows};
    for (uint32_t k = 0; k < out->parts; k++) {
        struct part_head ph;
        if ((rc = read_part_head(buf, len, &at, &ph)) != 0)
            return rc;
        out->keys += (ph.kind & 3u) == PROTO_V3_PART_KEY;
        out->deltas += (ph.kind & 3u) == PROTO_V3_PART_DELTA;
        out->fields += (ph.kind & PROTO_V3_PART_FIELD) != 0;
        out->boids += ph.count;
        at += ph.packed;
    }
    return at == len ? 0 : PROTO_E_BAD_LENGTH;
}
