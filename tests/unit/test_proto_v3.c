/*
 * Unit tests for version 3 view frames (proto_v3.h, PROTOCOL.md §12):
 * tiles of a moving flock, encoded as keys and as deltas on one and two
 * bases, with boids leaving, entering, dying and changing group, with
 * fields, spliced into frames of several parts, decode to exactly the
 * tiles they were made from, and so does each part decoded alone on its
 * bases (proto_v3_decode_part()); every refusal of §12.7 leaves the
 * decoder as it was; the sampling hash nests its samples.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto_sections.h"
#include "proto_v2.h"
#include "proto_v3.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W     1600.0f
#define H     1000.0f
#define MAXN  4096
#define COLS  4
#define ROWS  3
#define TILES (COLS * ROWS)

/* A little world of boids with ids, moving, quantized. */
struct world {
    uint32_t n;
    uint32_t id[MAXN];
    int32_t x[MAXN], y[MAXN], vx[MAXN], vy[MAXN]; /* quantized units */
    uint8_t group[MAXN];
    uint32_t next_id;
    uint32_t rng;
};

static uint32_t rnd(struct world *w)
{
    w->rng = w->rng * 1664525u + 1013904223u;
    return w->rng >> 8;
}

static void add_boids(struct world *w, uint32_t n, uint8_t group)
{
    for (uint32_t k = 0; k < n && w->n < MAXN; k++, w->n++) {
        w->id[w->n] = w->next_id++;
        w->x[w->n] = (int32_t)(rnd(w) % 65536);
        w->y[w->n] = (int32_t)(rnd(w) % 65536);
        w->vx[w->n] = (int32_t)(rnd(w) % 401) - 200;
        w->vy[w->n] = (int32_t)(rnd(w) % 401) - 200;
        w->group[w->n] = group;
    }
}

/* Boid i dies: the last boid takes its place. */
static void kill(struct world *w, uint32_t i)
{
    uint32_t j = --w->n;
    w->id[i] = w->id[j], w->x[i] = w->x[j], w->y[i] = w->y[j];
    w->vx[i] = w->vx[j], w->vy[i] = w->vy[j], w->group[i] = w->group[j];
}

static void step(struct world *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        if (rnd(w) % 10 == 0) /* turn now and then */
            w->vx[i] = (w->vx[i] * 9 + (int32_t)(rnd(w) % 401) - 200) / 10;
        w->x[i] = (w->x[i] + w->vx[i]) & 0xffff;
        w->y[i] = (w->y[i] + w->vy[i]) & 0xffff;
    }
}

static uint8_t heading_of(int32_t vx, int32_t vy)
{
    return vx == 0 && vy == 0 ? 0 : proto_v2_heading_of(vx * 256, vy * 160);
}

/* One tile's boids, sorted by id: what the server holds per tile. */
struct tile {
    uint32_t n;
    uint32_t id[MAXN];
    uint16_t qx[MAXN], qy[MAXN];
    uint8_t h[MAXN], g[MAXN];
    struct proto_v3_field field;
};

/* A boid of a tile being cut: its id and its index in the world. */
struct pick {
    uint32_t id, i;
};

static int by_id(const void *a, const void *b)
{
    uint32_t x = ((const struct pick *)a)->id, y = ((const struct pick *)b)->id;
    return (x > y) - (x < y);
}

/* The boids of tile t of w at sample s, with a field when with_field. */
static void cut(const struct world *w, uint32_t t, unsigned s, bool with_field, struct tile *out)
{
    static struct pick order[MAXN];
    uint32_t m = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        uint32_t tx = proto_v3_tile_of((uint16_t)w->x[i], COLS);
        uint32_t ty = proto_v3_tile_of((uint16_t)w->y[i], ROWS);
        if (ty * COLS + tx == t && proto_v3_in_sample(w->id[i], s))
            order[m++] = (struct pick){w->id[i], i};
    }
    qsort(order, m, sizeof *order, by_id);
    out->n = m;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t i = order[k].i;
        out->id[k] = w->id[i];
        out->qx[k] = (uint16_t)w->x[i];
        out->qy[k] = (uint16_t)w->y[i];
        out->h[k] = heading_of(w->vx[i], w->vy[i]);
        out->g[k] = w->group[i];
    }
    memset(&out->field, 0, sizeof out->field);
    out->field.cells = 4;
    for (uint32_t c = 0; with_field && c < 16; c++) {
        out->field.count[c] = c * 7 + t;
        out->field.vx[c] = (int8_t)(c - 8);
        out->field.vy[c] = (int8_t)(8 - c);
    }
}

static struct proto_v3_tile view_of(const struct tile *t, bool with_field)
{
    return (struct proto_v3_tile){
        t->n, t->id, t->qx, t->qy, t->h, t->g, with_field ? &t->field : NULL};
}

/* A frame assembled as a server does: header, sections, parts. */
struct frame {
    uint8_t buf[1 << 20];
    size_t len;
};

struct plan {
    uint8_t gap1, gap0; /* 0: keys */
    unsigned sample;
    bool field;
};

/* A snapshot's tick: 1 or 2 ticks apart by turns, as 20 snapshots a
 * second of a 30 Hz room are (the prediction scales by ticks, §12.5). */
static uint64_t tick_of(uint32_t seq)
{
    return seq + seq / 2;
}

static void assemble(struct proto_v3_encoder *e, struct tile now[TILES], struct tile hist[][TILES],
                     uint32_t seq, const struct plan *p, struct frame *f)
{
    struct proto_v3_header h = {.flags = 0x02,
                                .sample = (uint8_t)p->sample,
                                .cols = COLS,
                                .rows = ROWS,
                                .rect_cols = COLS,
                                .rect_rows = ROWS,
                                .obstacle_count = 1,
                                .target_count = 1,
                                .seq = seq,
                                .room_boids = 1234,
                                .tick = tick_of(seq),
                                .server_time_us = 1000ull * seq,
                                .width = W,
                                .height = H};
    size_t at = PROTO_V3_HEADER_SIZE;
    struct proto_obstacle o = {.id = 7, .x = 100, .y = 200, .r = 30};
    struct proto_target tg = {.group = 2, .x = 300, .y = 400};
    at = (size_t)(proto_sections_put_obstacles(f->buf + at, &o, 1) - f->buf);
    at = (size_t)(proto_sections_put_targets(f->buf + at, &tg, 1) - f->buf);
    for (uint32_t t = 0; t < TILES; t++) {
        struct proto_v3_tile cur = view_of(&now[t], p->field);
        struct proto_v3_tile b1, b0;
        if (p->gap1)
            b1 = view_of(&hist[p->gap1][t], false);
        if (p->gap0)
            b0 = view_of(&hist[p->gap1 + p->gap0][t], false);
        struct proto_v3_bases bases = {.b1 = &b1,
                                       .b0 = p->gap0 ? &b0 : NULL,
                                       .gap1 = p->gap1,
                                       .gap0 = p->gap0,
                                       .tick = tick_of(seq),
                                       .tick1 = tick_of(seq - p->gap1),
                                       .tick0 = tick_of(seq - p->gap1 - p->gap0)};
        ptrdiff_t n = proto_v3_encode_part(e, &cur, p->gap1 ? &bases : NULL, W, H, f->buf + at,
                                           sizeof f->buf - at);
        assert_true(n > 0);
        at += (size_t)n;
        h.frame_hash += proto_v3_tile_hash(&cur);
    }
    proto_v3_put_header(f->buf, &h);
    f->len = at;
}

static void expect_equal(const struct proto_v3_frame *fr, struct tile now[TILES], bool field)
{
    assert_int_equal(fr->part_count, TILES);
    assert_int_equal(fr->h.obstacle_count, 1);
    assert_int_equal(fr->obstacles[0].id, 7);
    assert_int_equal(fr->targets[0].group, 2);
    for (uint32_t t = 0; t < TILES; t++) {
        const struct proto_v3_part *p = &fr->parts[t];
        assert_int_equal(p->ty * COLS + p->tx, t);
        assert_int_equal(p->count, now[t].n);
        assert_memory_equal(p->id, now[t].id, now[t].n * 4);
        assert_memory_equal(p->qx, now[t].qx, now[t].n * 2);
        assert_memory_equal(p->qy, now[t].qy, now[t].n * 2);
        assert_memory_equal(p->heading, now[t].h, now[t].n);
        assert_memory_equal(p->group, now[t].g, now[t].n);
        if (field && (now[t].n || true)) {
            assert_non_null(p->field);
            assert_memory_equal(p->field->count, now[t].field.count, 16 * 4);
            assert_memory_equal(p->field->vx, now[t].field.vx, 16);
        } else {
            assert_null(p->field);
        }
    }
}

#define HIST 8

/* Each part of frame f decoded alone, on the tiles of hist its gaps name:
 * the tiles now (hist[0]); a delta without its bases is NO_BASE. */
static void expect_parts_alone(struct proto_v3_decoder *d, const struct frame *f,
                               struct tile hist[][TILES], uint32_t seq, bool field, bool delta)
{
    static uint32_t id[MAXN];
    static uint16_t qx[MAXN], qy[MAXN];
    static uint8_t h[MAXN], g[MAXN];
    size_t at = PROTO_V3_HEADER_SIZE + PROTO_SNAPSHOT_OBSTACLE_SIZE + PROTO_SNAPSHOT_TARGET_SIZE;
    struct proto_v3_header head = {.tick = tick_of(seq), .width = W, .height = H};
    if (delta && hist[0][0].n) {
        struct proto_v3_part_bases none = {0};
        struct proto_v3_part out = {.id = id, .qx = qx, .qy = qy, .heading = h, .group = g};
        struct proto_v3_field fl;
        size_t from = at;
        assert_int_equal(proto_v3_decode_part(d, f->buf, f->len, &from, &none, &head, &out, &fl),
                         PROTO_E_NO_BASE);
    }
    for (uint32_t t = 0; t < TILES; t++) {
        struct proto_v3_part base[PROTO_V3_HISTORY];
        struct proto_v3_part_bases b = {0};
        for (unsigned k = 1; k <= PROTO_V3_HISTORY && k < seq; k++) {
            const struct tile *bt = &hist[k][t];
            base[k - 1] = (struct proto_v3_part){.count = bt->n,
                                                 .id = bt->id,
                                                 .qx = bt->qx,
                                                 .qy = bt->qy,
                                                 .heading = bt->h,
                                                 .group = bt->g};
            b.base[k - 1] = &base[k - 1];
            b.tick[k - 1] = tick_of(seq - k);
        }
        struct proto_v3_part out = {.id = id, .qx = qx, .qy = qy, .heading = h, .group = g};
        struct proto_v3_field fl;
        assert_int_equal(proto_v3_decode_part(d, f->buf, f->len, &at, &b, &head, &out, &fl), 0);
        assert_int_equal(out.count, hist[0][t].n);
        assert_memory_equal(out.id, hist[0][t].id, out.count * 4);
        assert_memory_equal(out.qx, hist[0][t].qx, out.count * 2);
        assert_memory_equal(out.heading, hist[0][t].h, out.count);
        assert_true(field ? out.field == &fl : out.field == NULL);
    }
    assert_int_equal(at, f->len);
}

/* Runs a flock for `frames` snapshots, each encoded by plan and decoded;
 * changes the flock (deaths, births, a change of group) as it goes. */
static void run(const struct plan *p, int frames)
{
    static struct world w;
    static struct tile hist[HIST][TILES]; /* hist[g]: the tiles g frames ago */
    static struct frame f;
    memset(&w, 0, sizeof w);
    w.next_id = 1;
    w.rng = 42;
    add_boids(&w, 600, 0);
    add_boids(&w, 200, 3);
    const char *err = NULL;
    struct proto_v3_encoder *e = proto_v3_encoder_create(MAXN, &err);
    struct proto_v3_decoder *d = proto_v3_decoder_create(MAXN, 64, 16, 4, &err);
    struct proto_v3_decoder *alone = proto_v3_decoder_create(MAXN, 1, 0, 4, &err);
    assert_non_null(e);
    assert_non_null(d);
    assert_non_null(alone);
    for (int seq = 1; seq <= frames; seq++) {
        memmove(hist[1], hist[0], sizeof hist[0] * (HIST - 1));
        for (uint32_t t = 0; t < TILES; t++)
            cut(&w, t, p->sample, p->field, &hist[0][t]);
        struct plan now = *p;
        if (seq <= p->gap1 + p->gap0) /* the first frames: keys until bases are held */
            now.gap1 = now.gap0 = 0;
        assemble(e, hist[0], hist, (uint32_t)seq, &now, &f);
        const struct proto_v3_frame *fr = NULL;
        int rc = proto_v3_decode(d, f.buf, f.len, &fr);
        if (rc)
            fail_msg("frame %d: %s", seq, proto_status_name(rc));
        expect_equal(fr, hist[0], p->field);
        expect_parts_alone(alone, &f, hist, (uint32_t)seq, p->field, now.gap1 > 0);
        step(&w);
        if (seq % 5 == 0) { /* two boids die, three are born, one changes group */
            kill(&w, 3);
            kill(&w, 10);
            add_boids(&w, 3, 3);
            w.group[20] ^= 1;
        }
    }
    proto_v3_encoder_destroy(e);
    proto_v3_decoder_destroy(d);
    proto_v3_decoder_destroy(alone);
}

static void key_frames_decode_to_their_tiles(void **state)
{
    (void)state;
    struct plan p = {0};
    run(&p, 3);
}

static void deltas_on_one_base_follow_a_changing_flock(void **state)
{
    (void)state;
    struct plan p = {.gap1 = 1};
    run(&p, 30);
}

static void deltas_on_two_bases_follow_a_changing_flock(void **state)
{
    (void)state;
    struct plan even = {.gap1 = 1, .gap0 = 1};
    run(&even, 30);
    struct plan uneven = {.gap1 = 2, .gap0 = 1};
    run(&uneven, 30);
}

static void samples_and_fields_round_trip(void **state)
{
    (void)state;
    struct plan p = {.gap1 = 1, .gap0 = 1, .sample = 2, .field = true};
    run(&p, 20);
    struct plan keys = {.sample = 3, .field = true};
    run(&keys, 3);
}

static void samples_nest_and_keep_about_their_share(void **state)
{
    (void)state;
    uint32_t in[5] = {0};
    for (uint32_t id = 1; id <= 100000; id++) {
        for (unsigned s = 0; s < 5; s++) {
            bool here = proto_v3_in_sample(id, s);
            in[s] += here;
            if (here && s > 0)
                assert_true(proto_v3_in_sample(id, s - 1));
        }
    }
    assert_int_equal(in[0], 100000);
    for (unsigned s = 1; s < 5; s++) /* within 5 % of 1 / 2^s */
        assert_true(in[s] > (95000u >> s) && in[s] < (105000u >> s));
}

/* A good frame 2 (a delta on frame 1) to break; the decoder holds frame 1. */
struct broken {
    struct proto_v3_decoder *d;
    struct frame f;
};

static void setup_broken(struct broken *b)
{
    static struct world w;
    static struct tile hist[HIST][TILES];
    memset(&w, 0, sizeof w);
    w.next_id = 1;
    w.rng = 9;
    add_boids(&w, 300, 0);
    const char *err = NULL;
    struct proto_v3_encoder *e = proto_v3_encoder_create(MAXN, &err);
    b->d = proto_v3_decoder_create(MAXN, 64, 16, 4, &err);
    for (uint32_t t = 0; t < TILES; t++)
        cut(&w, t, 0, false, &hist[0][t]);
    struct plan key = {0}, delta = {.gap1 = 1};
    assemble(e, hist[0], hist, 1, &key, &b->f);
    const struct proto_v3_frame *fr;
    assert_int_equal(proto_v3_decode(b->d, b->f.buf, b->f.len, &fr), 0);
    step(&w);
    memmove(hist[1], hist[0], sizeof hist[0]);
    for (uint32_t t = 0; t < TILES; t++)
        cut(&w, t, 0, false, &hist[0][t]);
    assemble(e, hist[0], hist, 2, &delta, &b->f);
    proto_v3_encoder_destroy(e);
}

static void every_broken_frame_is_refused_and_changes_nothing(void **state)
{
    (void)state;
    static struct broken b;
    setup_broken(&b);
    static uint8_t copy[1 << 20];
    const struct proto_v3_frame *fr;
    struct {
        const char *what;
        size_t at;
        uint8_t value;
        size_t len;
        int code;
    } cases[] = {
        {"magic", 0, 'X', 0, PROTO_E_BAD_MAGIC},
        {"version", 2, 2, 0, PROTO_E_BAD_VERSION},
        {"kind", 3, 2, 0, PROTO_E_BAD_TYPE},
        {"flags", 4, 0x42, 0, PROTO_E_BAD_VALUE},
        {"shift", 5, 8, 0, PROTO_E_BAD_VALUE},
        {"reserved", 7, 1, 0, PROTO_E_BAD_VALUE},
        {"rect wider than the grid", 42, COLS + 1, 0, PROTO_E_BAD_VALUE},
        {"the seq: no base", 32, 9, 0, PROTO_E_NO_BASE},
        {"frame hash", 52, 0x5a, 0, PROTO_E_HASH_MISMATCH},
        {"cut short", 0, 0, 40, PROTO_E_TRUNCATED},
        {"cut in the parts", 0, 0, 100, PROTO_E_TRUNCATED},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memcpy(copy, b.f.buf, b.f.len);
        size_t len = cases[k].len ? cases[k].len : b.f.len;
        if (!cases[k].len)
            copy[cases[k].at] = cases[k].value;
        int rc = proto_v3_decode(b.d, copy, len, &fr);
        if (rc != cases[k].code)
            fail_msg("%s: %s, expected %s", cases[k].what, proto_status_name(rc),
                     proto_status_name(cases[k].code));
    }
    /* A byte more, and a flipped byte inside a body. */
    memcpy(copy, b.f.buf, b.f.len);
    copy[b.f.len] = 0;
    assert_int_equal(proto_v3_decode(b.d, copy, b.f.len + 1, &fr), PROTO_E_BAD_LENGTH);
    memcpy(copy, b.f.buf, b.f.len);
    copy[b.f.len - 3] ^= 0x55;
    int rc = proto_v3_decode(b.d, copy, b.f.len, &fr);
    assert_true(rc == PROTO_E_BAD_BODY || rc == PROTO_E_HASH_MISMATCH || rc == PROTO_E_TRUNCATED);
    /* Nothing of those frames was kept: the good one still decodes on frame 1. */
    assert_int_equal(proto_v3_decode(b.d, b.f.buf, b.f.len, &fr), 0);
    proto_v3_decoder_destroy(b.d);
}

static void random_bytes_never_crash_the_decoder(void **state)
{
    (void)state;
    static struct broken b;
    setup_broken(&b);
    static uint8_t copy[1 << 20];
    const struct proto_v3_frame *fr;
    uint32_t r = 7;
    for (int k = 0; k < 20000; k++) {
        memcpy(copy, b.f.buf, b.f.len);
        for (int j = 0; j < 1 + k % 4; j++) {
            r = r * 1664525u + 1013904223u;
            copy[PROTO_V3_HEADER_SIZE + (r >> 8) % (b.f.len - PROTO_V3_HEADER_SIZE)] ^=
                (uint8_t)(r >> 3);
        }
        (void)proto_v3_decode(b.d, copy, b.f.len, &fr);
        proto_v3_decoder_forget(b.d);
    }
    proto_v3_decoder_destroy(b.d);
}

/* ---- the golden vectors (proto/vectors/v3) ------------------------------------ */

static uint8_t *read_file(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/v3/%s", FLOCKD_VECTORS_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static cJSON *read_json(const char *name)
{
    size_t len;
    uint8_t *text = read_file(name, &len);
    cJSON *doc = cJSON_ParseWithLength((const char *)text, len);
    free(text);
    assert_non_null(doc);
    return doc;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* The part's values equal the array `key` of the description. */
static void expect_values(const cJSON *desc, const char *key, uint32_t n, uint32_t (*get)(uint32_t))
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(desc, key);
    assert_int_equal(cJSON_GetArraySize(a), n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(cJSON_GetArrayItem(a, (int)i)->valuedouble, get(i));
}

static const struct proto_v3_part *g_part;
static uint32_t get_id(uint32_t i)
{
    return g_part->id[i];
}
static uint32_t get_qx(uint32_t i)
{
    return g_part->qx[i];
}
static uint32_t get_qy(uint32_t i)
{
    return g_part->qy[i];
}
static uint32_t get_h(uint32_t i)
{
    return g_part->heading[i];
}
static uint32_t get_g(uint32_t i)
{
    return g_part->group[i];
}
static uint32_t get_count(uint32_t i)
{
    return g_part->field->count[i];
}

static void the_vectors_decode_to_their_descriptions(void **state)
{
    (void)state;
    cJSON *doc = read_json("view.json");
    const char *err = NULL;
    struct proto_v3_decoder *d = proto_v3_decoder_create(64, 16, 4, 4, &err);
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(doc, "frames"))
    {
        size_t len;
        uint8_t *buf = read_file(cJSON_GetObjectItemCaseSensitive(f, "file")->valuestring, &len);
        const struct proto_v3_frame *fr;
        assert_int_equal(proto_v3_decode(d, buf, len, &fr), 0);
        assert_int_equal(fr->h.seq, num(f, "seq"));
        assert_int_equal(fr->h.shift, num(f, "shift"));
        assert_int_equal(fr->h.sample, num(f, "sample"));
        assert_int_equal(fr->h.frame_hash, num(f, "frame_hash"));
        const cJSON *parts = cJSON_GetObjectItemCaseSensitive(f, "parts");
        assert_int_equal(cJSON_GetArraySize(parts), fr->part_count);
        for (uint32_t k = 0; k < fr->part_count; k++) {
            const cJSON *p = cJSON_GetArrayItem(parts, (int)k);
            g_part = &fr->parts[k];
            assert_int_equal(g_part->tx, num(p, "tx"));
            assert_int_equal(g_part->ty, num(p, "ty"));
            expect_values(p, "id", g_part->count, get_id);
            expect_values(p, "qx", g_part->count, get_qx);
            expect_values(p, "qy", g_part->count, get_qy);
            expect_values(p, "heading", g_part->count, get_h);
            expect_values(p, "group", g_part->count, get_g);
            const cJSON *field = cJSON_GetObjectItemCaseSensitive(p, "field");
            assert_true(!field == !g_part->field);
            if (field)
                expect_values(field, "count", 16, get_count);
        }
        free(buf);
    }
    proto_v3_decoder_destroy(d);
    cJSON_Delete(doc);
}

static void the_invalid_vectors_are_refused_with_their_codes(void **state)
{
    (void)state;
    cJSON *doc = read_json("invalid.json");
    const char *err = NULL;
    struct proto_v3_decoder *d = proto_v3_decoder_create(64, 16, 4, 4, &err);
    const cJSON *c, *name;
    cJSON_ArrayForEach(c, doc)
    {
        proto_v3_decoder_forget(d);
        const struct proto_v3_frame *fr;
        cJSON_ArrayForEach(name, cJSON_GetObjectItemCaseSensitive(c, "after"))
        {
            size_t len;
            uint8_t *buf = read_file(name->valuestring, &len);
            assert_int_equal(proto_v3_decode(d, buf, len, &fr), 0);
            free(buf);
        }
        const char *hex = cJSON_GetObjectItemCaseSensitive(c, "hex")->valuestring;
        size_t n = strlen(hex) / 2;
        uint8_t *bytes = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            sscanf(hex + 2 * i, "%2hhx", &bytes[i]);
        int rc = proto_v3_decode(d, bytes, n, &fr);
        const char *want = cJSON_GetObjectItemCaseSensitive(c, "error")->valuestring;
        if (strcmp(proto_status_name(rc), want) != 0)
            fail_msg("%s: %s, expected %s",
                     cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                     proto_status_name(rc), want);
        free(bytes);
    }
    proto_v3_decoder_destroy(d);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_frames_decode_to_their_tiles),
        cmocka_unit_test(deltas_on_one_base_follow_a_changing_flock),
        cmocka_unit_test(deltas_on_two_bases_follow_a_changing_flock),
        cmocka_unit_test(samples_and_fields_round_trip),
        cmocka_unit_test(samples_nest_and_keep_about_their_share),
        cmocka_unit_test(every_broken_frame_is_refused_and_changes_nothing),
        cmocka_unit_test(random_bytes_never_crash_the_decoder),
        cmocka_unit_test(the_vectors_decode_to_their_descriptions),
        cmocka_unit_test(the_invalid_vectors_are_refused_with_their_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
