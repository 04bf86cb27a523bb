/*
 * gen_vectors_v3 — writes the golden vectors of version 3 view frames
 * (PROTOCOL.md §12) into proto/vectors/v3.
 *
 *   gen_vectors_v3 DIR
 *
 * One stream of frames of a small world made by hand (a 3 x 2 tile grid,
 * boids with ids that move across tile borders, one that dies, one that is
 * born, one that changes group), as a client that looks at part of the
 * world receives it: keys, deltas on one and on two bases (equal and
 * unequal gaps), a rect that wraps around the grid, super-tiles at shift 1, a sample with
 * fields. Each frame is written as view_SEQ.bin and
 * described in view.json (the header and, per part, its super-tile, its
 * kind and gaps, and the decoded boids and field); invalid.json holds
 * frames a decoder must refuse after the frames named with them. Every
 * frame is decoded here before anything is written. Run it only when the
 * format changes and review the diff: the vectors are the format's contract.
 */
#include "proto_sections.h"
#include "proto_v2.h"
#include "proto_v3.h"
#include "proto_v3_impl.h"
#include "vecjson.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS      3
#define ROWS      2
#define MAX_BOIDS 16
#define N(a)      (sizeof(a) / sizeof((a)[0]))
#define W         1200.0f
#define H         800.0f

/* A boid of the hand-made world: where it is at each seq (1..8), 0 id: gone. */
struct vboid {
    uint32_t id;
    uint8_t group;
    int32_t x0, y0, dx, dy; /* quantized start and step per seq */
    uint32_t born, dies;    /* present for born <= seq < dies (0: always) */
    uint32_t regroup;       /* from this seq on its group is group ^ 1 (0: never) */
};

static const struct vboid boids[] = {
    {1, 0, 10000, 10000, 900, 300, 0, 0, 0},    /* crosses into the next tile column */
    {2, 0, 21000, 12000, -700, 500, 0, 0, 0},   /* crosses back the other way */
    {5, 0, 30000, 40000, 100, -1200, 0, 0, 0},  /* crosses from row 1 into row 0 */
    {7, 2, 50000, 20000, 1500, 0, 0, 0, 0},     /* crosses the x seam (wraps) */
    {8, 2, 60000, 50000, 20, 20, 0, 6, 0},      /* dies at seq 6 */
    {9, 0, 5000, 60000, -400, 800, 0, 0, 0},    /* crosses both seams */
    {12, 0, 40000, 30000, 0, 0, 0, 0, 0},       /* stands still */
    {13, 3, 15000, 45000, 2500, 1300, 0, 0, 4}, /* fast (exceptions); changes group at 4 */
    {20, 0, 45000, 8000, 300, 200, 3, 0, 0},    /* born at seq 3 */
    {33, 2, 33000, 33000, -200, 150, 0, 0, 0},  {40, 0, 1000, 1000, 150, 150, 0, 0, 0},
};

/* The frames a client receives: seq, grid shift, sample, rect, and the
 * gaps its parts are deltas on (0: keys). */
struct vframe {
    uint32_t seq;
    uint8_t shift, sample, rect_x, rect_y, rect_cols, rect_rows, gap1, gap0;
};

static const struct vframe frames[] = {
    {1, 0, 0, 0, 0, 3, 2, 0, 0}, /* the whole grid, keys */
    {2, 0, 0, 0, 0, 3, 2, 1, 0}, /* deltas on one base */
    {3, 0, 0, 0, 0, 3, 2, 1, 1}, /* on two bases, equal gaps */
    {5, 0, 0, 0, 0, 3, 2, 2, 1}, /* a frame skipped: unequal gaps */
    {6, 0, 0, 2, 1, 2, 1, 1, 0}, /* a rect of two tiles that wraps around the grid */
    {7, 1, 0, 1, 0, 1, 1, 0, 0}, /* shift 1: super-tiles of 2 x 2 tiles; the rect wraps */
    {8, 0, 1, 0, 0, 3, 2, 0, 0}, /* sample 1 with fields, keys */
};

/* A frame's tick: snapshots 1 or 2 ticks apart by turns (20 a second of
 * a 30 Hz room), so the prediction's tick gaps differ from its frame gaps. */
static uint64_t tick_of(uint32_t seq)
{
    return 1000u + seq + seq / 2;
}

static uint8_t group_at(const struct vboid *b, uint32_t seq)
{
    return b->regroup && seq >= b->regroup ? (uint8_t)(b->group ^ 1) : b->group;
}

static bool alive(const struct vboid *b, uint32_t seq)
{
    return seq >= b->born && (!b->dies || seq < b->dies);
}

static uint16_t qx_at(const struct vboid *b, uint32_t seq)
{
    return (uint16_t)(b->x0 + b->dx * (int32_t)seq);
}

static uint16_t qy_at(const struct vboid *b, uint32_t seq)
{
    return (uint16_t)(b->y0 + b->dy * (int32_t)seq);
}

/* One super-tile's content, ascending by id. */
struct vtile {
    uint32_t n;
    uint32_t id[MAX_BOIDS];
    uint16_t qx[MAX_BOIDS], qy[MAX_BOIDS];
    uint8_t h[MAX_BOIDS], g[MAX_BOIDS];
    struct proto_v3_field field;
};

static void cut(uint32_t seq, unsigned shift, unsigned sample, uint32_t tx, uint32_t ty,
                struct vtile *t)
{
    memset(t, 0, sizeof *t);
    for (size_t k = 0; k < N(boids); k++) {
        const struct vboid *b = &boids[k];
        uint16_t x = qx_at(b, seq), y = qy_at(b, seq);
        if (!alive(b, seq) || proto_v3_tile_of(x, COLS) >> shift != tx ||
            proto_v3_tile_of(y, ROWS) >> shift != ty)
            continue;
        if (sample) { /* every boid counts in the field; the first cell here */
            t->field.count[0]++;
            t->field.vx[0] = (int8_t)(b->dx / 100);
            t->field.vy[0] = (int8_t)(b->dy / 100);
        }
        if (!proto_v3_in_sample(b->id, sample))
            continue;
        t->id[t->n] = b->id;
        t->qx[t->n] = x;
        t->qy[t->n] = y;
        t->h[t->n] = proto_v2_heading_of(b->dx * 256, b->dy * 171);
        t->g[t->n++] = group_at(b, seq);
    }
    t->field.cells = PROTO_V3_FIELD_CELLS;
}

static struct proto_v3_tile tile_of(const struct vtile *t, bool field)
{
    return (struct proto_v3_tile){t->n, t->id, t->qx, t->qy, t->h, t->g, field ? &t->field : NULL};
}

static const struct proto_obstacle obstacles[] = {{3, 600.0f, 400.0f, 40.0f}};
static const struct proto_target targets[] = {{2, 100.5f, 700.25f}};

/* Encodes frame f into buf: its length. */
static size_t encode(struct proto_v3_encoder *e, const struct vframe *f, uint8_t *buf, size_t cap)
{
    uint32_t gc = proto_v3_grid_at(COLS, f->shift), gr = proto_v3_grid_at(ROWS, f->shift);
    struct proto_v3_header h = {.flags = PROTO_SNAPSHOT_FLAG_WRAP,
                                .shift = f->shift,
                                .sample = f->sample,
                                .cols = COLS,
                                .rows = ROWS,
                                .rect_x = f->rect_x,
                                .rect_y = f->rect_y,
                                .rect_cols = f->rect_cols,
                                .rect_rows = f->rect_rows,
                                .obstacle_count = 1,
                                .target_count = 1,
                                .seq = f->seq,
                                .room_boids = 11,
                                .tick = tick_of(f->seq),
                                .server_time_us = 1700000000000000ull + 50000ull * f->seq,
                                .width = W,
                                .height = H};
    uint8_t *p = buf + PROTO_V3_HEADER_SIZE;
    p = proto_sections_put_obstacles(p, obstacles, 1);
    p = proto_sections_put_targets(p, targets, 1);
    for (uint32_t k = 0; k < (uint32_t)f->rect_cols * f->rect_rows; k++) {
        uint32_t tx = (f->rect_x + k % f->rect_cols) % gc, ty = (f->rect_y + k / f->rect_cols) % gr;
        static struct vtile now, b1, b0;
        cut(f->seq, f->shift, f->sample, tx, ty, &now);
        struct proto_v3_tile t = tile_of(&now, f->sample > 0), t1, t0;
        if (f->gap1) {
            cut(f->seq - f->gap1, f->shift, f->sample, tx, ty, &b1);
            t1 = tile_of(&b1, false);
        }
        if (f->gap0) {
            cut(f->seq - f->gap1 - f->gap0, f->shift, f->sample, tx, ty, &b0);
            t0 = tile_of(&b0, false);
        }
        struct proto_v3_bases bases = {.b1 = &t1,
                                       .b0 = f->gap0 ? &t0 : NULL,
                                       .gap1 = f->gap1,
                                       .gap0 = f->gap0,
                                       .tick = tick_of(f->seq),
                                       .tick1 = tick_of(f->seq - f->gap1),
                                       .tick0 = tick_of(f->seq - f->gap1 - f->gap0)};
        ptrdiff_t n =
            proto_v3_encode_part(e, &t, f->gap1 ? &bases : NULL, W, H, p, cap - (size_t)(p - buf));
        if (n < 0)
            vecjson_die("encode", proto_status_name((int)n));
        p += n;
        h.frame_hash += proto_v3_tile_hash(&t);
    }
    proto_v3_put_header(buf, &h);
    return (size_t)(p - buf);
}

static cJSON *u32_array(const uint32_t *v, uint32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *describe_part(const struct proto_v3_part *p, const uint8_t *kind)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tx", p->tx);
    cJSON_AddNumberToObject(o, "ty", p->ty);
    cJSON_AddStringToObject(o, "kind",
                            kind[0] == 0         ? "empty"
                            : (kind[0] & 3) == 1 ? "key"
                                                 : "delta");
    if ((kind[0] & 3) == 2) {
        cJSON_AddNumberToObject(o, "gap1", kind[1] & 15);
        cJSON_AddNumberToObject(o, "gap0", kind[1] >> 4);
    }
    uint32_t q[MAX_BOIDS], r[MAX_BOIDS], hd[MAX_BOIDS], g[MAX_BOIDS];
    for (uint32_t i = 0; i < p->count; i++)
        q[i] = p->qx[i], r[i] = p->qy[i], hd[i] = p->heading[i], g[i] = p->group[i];
    cJSON_AddItemToObject(o, "id", u32_array(p->id, p->count));
    cJSON_AddItemToObject(o, "qx", u32_array(q, p->count));
    cJSON_AddItemToObject(o, "qy", u32_array(r, p->count));
    cJSON_AddItemToObject(o, "heading", u32_array(hd, p->count));
    cJSON_AddItemToObject(o, "group", u32_array(g, p->count));
    struct proto_v3_tile t = {p->count, p->id, p->qx, p->qy, p->heading, p->group, NULL};
    vecjson_add_u64(o, "tile_hash", proto_v3_tile_hash(&t));
    if (p->field) {
        cJSON *f = cJSON_CreateObject();
        uint32_t cells = p->field->cells * p->field->cells, vx[PROTO_V3_FIELD_MAX],
                 vy[PROTO_V3_FIELD_MAX];
        cJSON *ax = cJSON_CreateArray(), *ay = cJSON_CreateArray();
        for (uint32_t c = 0; c < cells; c++) {
            cJSON_AddItemToArray(ax, cJSON_CreateNumber(p->field->vx[c]));
            cJSON_AddItemToArray(ay, cJSON_CreateNumber(p->field->vy[c]));
        }
        (void)vx, (void)vy;
        cJSON_AddNumberToObject(f, "cells", p->field->cells);
        cJSON_AddItemToObject(f, "count", u32_array(p->field->count, cells));
        cJSON_AddItemToObject(f, "vx", ax);
        cJSON_AddItemToObject(f, "vy", ay);
        cJSON_AddItemToObject(o, "field", f);
    }
    return o;
}

/* Where each part of buf starts (for describe_part's kind byte). */
static void part_kinds(const uint8_t *buf, size_t len, uint32_t parts, const uint8_t **at)
{
    size_t p = PROTO_V3_HEADER_SIZE + 16 + 9;
    for (uint32_t k = 0; k < parts; k++) {
        at[k] = buf + p;
        uint8_t kind = buf[p++];
        if ((kind & 3) == 0)
            continue;
        if ((kind & 3) == 2)
            p++;
        uint32_t v[3] = {0};
        for (int j = 0; j < ((kind & 3) == 1 ? 3 : 2); j++)
            (void)pv3_get_varint(buf, len, &p, &v[j]);
        p += v[1];
    }
}

static cJSON *describe(const struct proto_v3_frame *fr, const uint8_t *buf, size_t len,
                       const char *file)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    vecjson_add_u64(o, "seq", fr->h.seq);
    vecjson_add_u64(o, "tick", fr->h.tick);
    vecjson_add_u64(o, "server_time_us", fr->h.server_time_us);
    cJSON_AddNumberToObject(o, "flags", fr->h.flags);
    cJSON_AddNumberToObject(o, "shift", fr->h.shift);
    cJSON_AddNumberToObject(o, "sample", fr->h.sample);
    vecjson_add_num(o, "width", fr->h.width);
    vecjson_add_num(o, "height", fr->h.height);
    cJSON_AddNumberToObject(o, "room_boids", fr->h.room_boids);
    cJSON_AddNumberToObject(o, "cols", fr->h.cols);
    cJSON_AddNumberToObject(o, "rows", fr->h.rows);
    uint32_t rect[4] = {fr->h.rect_x, fr->h.rect_y, fr->h.rect_cols, fr->h.rect_rows};
    cJSON_AddItemToObject(o, "rect", u32_array(rect, 4));
    vecjson_add_u64(o, "frame_hash", fr->h.frame_hash);
    cJSON_AddNumberToObject(o, "size", (double)len);
    vecjson_add_obstacles_targets(o, fr->obstacles, fr->h.obstacle_count, fr->targets,
                                  fr->h.target_count);
    const uint8_t *at[64];
    part_kinds(buf, len, fr->part_count, at);
    cJSON *parts = cJSON_AddArrayToObject(o, "parts");
    for (uint32_t k = 0; k < fr->part_count; k++)
        cJSON_AddItemToArray(parts, describe_part(&fr->parts[k], at[k]));
    return o;
}

/* An invalid frame: a good one with one byte changed (or cut). */
struct vbad {
    const char *name;
    uint32_t frame; /* index into frames: the good frame broken; those before are decoded first */
    size_t at;      /* byte to change; 0 with cut: cut the frame to `cut` bytes */
    uint8_t value;
    size_t cut;
    int code;
};

static const struct vbad bad[] = {
    {"version 2", 1, 2, 2, 0, PROTO_E_BAD_VERSION},
    {"a reserved flag bit", 1, 4, 0x12, 0, PROTO_E_BAD_VALUE},
    {"a shift above 7", 1, 5, 8, 0, PROTO_E_BAD_VALUE},
    {"a rect wider than the grid", 1, 42, 4, 0, PROTO_E_BAD_VALUE},
    {"a delta whose base is not held (its seq moved on)", 1, 32, 9, 0, PROTO_E_NO_BASE},
    {"a wrong frame hash", 1, 52, 0, 0, PROTO_E_HASH_MISMATCH},
    {"cut inside the header", 1, 0, 0, 30, PROTO_E_TRUNCATED},
    {"cut inside a part", 1, 0, 0, 120, PROTO_E_TRUNCATED},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_vectors_v3 DIR   (normally proto/vectors/v3)\n");
        return 2;
    }
    vecjson_set_program("gen_vectors_v3");
    const char *err = NULL;
    struct proto_v3_encoder *e = proto_v3_encoder_create(MAX_BOIDS, &err);
    struct proto_v3_decoder *d = proto_v3_decoder_create(64, 16, 4, PROTO_V3_FIELD_CELLS, &err);
    if (!e || !d)
        vecjson_die("create", err);
    static uint8_t buf[N(frames)][4096];
    size_t len[N(frames)];
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "description",
                            "a 1200 x 800 torus cut into 3 x 2 tiles; eleven boids with ids that "
                            "cross tile borders and the seams, one dies, one is born, one changes "
                            "group; keys, deltas on one and two bases, a skipped frame, a rect "
                            "that wraps, shift 1, sample 1 with fields");
    cJSON_AddNumberToObject(doc, "field_cells", PROTO_V3_FIELD_CELLS);
    cJSON *list = cJSON_AddArrayToObject(doc, "frames");
    for (size_t k = 0; k < N(frames); k++) {
        len[k] = encode(e, &frames[k], buf[k], sizeof buf[k]);
        const struct proto_v3_frame *fr;
        int rc = proto_v3_decode(d, buf[k], len[k], &fr);
        if (rc)
            vecjson_die("decode", proto_status_name(rc));
        char name[32];
        snprintf(name, sizeof name, "view_%u.bin", frames[k].seq);
        vecjson_write_file(argv[1], name, buf[k], len[k]);
        cJSON_AddItemToArray(list, describe(fr, buf[k], len[k], name));
    }
    vecjson_write_json(argv[1], "view.json", doc);
    cJSON *inv = cJSON_CreateArray();
    for (size_t k = 0; k < N(bad); k++) {
        static uint8_t copy[4096];
        memcpy(copy, buf[bad[k].frame], len[bad[k].frame]);
        size_t n = bad[k].cut ? bad[k].cut : len[bad[k].frame];
        if (!bad[k].cut)
            copy[bad[k].at] = bad[k].value;
        proto_v3_decoder_forget(d);
        const struct proto_v3_frame *fr;
        for (uint32_t j = 0; j < bad[k].frame; j++)
            (void)proto_v3_decode(d, buf[j], len[j], &fr);
        int rc = proto_v3_decode(d, copy, n, &fr);
        if (rc != bad[k].code)
            vecjson_die(bad[k].name, proto_status_name(rc));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", bad[k].name);
        cJSON *after = cJSON_AddArrayToObject(o, "after");
        for (uint32_t j = 0; j < bad[k].frame; j++) {
            char name[32];
            snprintf(name, sizeof name, "view_%u.bin", frames[j].seq);
            cJSON_AddItemToArray(after, cJSON_CreateString(name));
        }
        cJSON_AddItemToObject(o, "hex", vecjson_hex(copy, n));
        cJSON_AddStringToObject(o, "error", proto_status_name(bad[k].code));
        cJSON_AddItemToArray(inv, o);
    }
    vecjson_write_json(argv[1], "invalid.json", inv);
    proto_v3_encoder_destroy(e);
    proto_v3_decoder_destroy(d);
    return 0;
}
