/*
 * gen_vectors_v2 — writes the golden vectors of snapshot version 2
 * (PROTOCOL.md §11) into proto/vectors/v2.
 *
 *   gen_vectors_v2 DIR
 *
 * Two streams of states made by hand (integer trajectories chosen to hit
 * every rule: the world seam in x and y, the heading byte wrapping, a boid
 * that stands still, residuals that need exceptions, one and two bases,
 * equal and unequal gaps, a skipped frame, a spawn and a despawn with their
 * epoch changes) are encoded with flockproto; each frame is written as
 * STREAM_SEQ.bin and described in STREAM.json (header, runs, boids,
 * obstacles, targets, the inflated body and, for deltas, the prediction of
 * every boid). invalid.json holds frames every decoder must refuse, each
 * with the frames to decode before it. index.json lists the files and
 * carries the octant table and cases of the integer heading function.
 * Every frame is decoded again here and every refusal checked before
 * anything is written. Run it only when the format changes and review the
 * diff: the vectors are the format's contract.
 */
#include "bytes.h"
#include "proto_deflate.h"
#include "proto_v2.h"
#include "proto_v2_impl.h"
#include "vecjson.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_BOIDS  8
#define MAX_FRAME  1024
#define MAX_STATES 8
#define N(a)       (sizeof(a) / sizeof((a)[0]))

/* One state and the arrays it points at. */
struct vstate {
    struct proto_v2_state st;
    uint16_t qx[MAX_BOIDS], qy[MAX_BOIDS];
    uint8_t heading[MAX_BOIDS], group[MAX_BOIDS];
};

/* A frame of a stream: its state and its bases (0 = none). */
struct vframe {
    uint32_t seq, base1, base0;
};

struct vstream {
    const char *name, *description;
    struct vstate states[MAX_STATES + 1]; /* by seq, 1..MAX_STATES */
    const struct vframe *frames;
    size_t n_frames;
};

static struct proto_obstacle basic_obstacles[] = {{1, 400.0f, 300.0f, 50.0f},
                                                  {4, 1200.5f, 700.25f, 75.5f}};
static struct proto_target basic_targets[] = {{0, 800.0f, 500.0f}, {2, 12.5f, 987.25f}};
static struct proto_target epoch_targets[] = {{1, 100.0f, 900.0f}};

/* ---- the states ---------------------------------------------------------- */

/* Six boids in groups 0 and 2 on a 1600 x 1000 torus, at seq s. */
static void basic_state(struct vstate *v, uint32_t s)
{
    static const uint8_t groups[6] = {0, 0, 0, 0, 2, 2};
    int32_t t = (int32_t)s;
    /* boid 0 crosses the x seam between seq 1 and 2; boid 1 the y seam */
    v->qx[0] = (uint16_t)(65500 + 20 * t + t * t), v->qy[0] = (uint16_t)(30000 + 5 * t);
    v->qx[1] = (uint16_t)(12000 - 3 * t), v->qy[1] = (uint16_t)(40 - 30 * t);
    /* boid 2 turns: its heading byte wraps from 253 to 0 */
    v->qx[2] = (uint16_t)(20000 + 100 * t), v->qy[2] = (uint16_t)(20000 + 2 * t * t);
    /* boid 3 stands still; boid 4 accelerates hard (exceptions) */
    v->qx[3] = 5000, v->qy[3] = 6000;
    v->qx[4] = (uint16_t)(30000 + 400 * t * t), v->qy[4] = (uint16_t)(50000 - 50 * t);
    v->qx[5] = (uint16_t)(60000 + 7 * t), v->qy[5] = (uint16_t)(100 + 11 * t);
    uint8_t h[6] = {(uint8_t)(2 + s % 2),   (uint8_t)(191 + s % 3), (uint8_t)(250 + 3 * s), 77,
                    (uint8_t)(255 - s % 2), (uint8_t)(40 + s)};
    memcpy(v->heading, h, sizeof h);
    memcpy(v->group, groups, sizeof groups);
    v->st = (struct proto_v2_state){.seq = s,
                                    .tick = 1000 + 3 * (uint64_t)s,
                                    .server_time_us = 1700000000000000 + 50000 * (uint64_t)s,
                                    .sim_hash = 0x0123456789abcdefull ^ s,
                                    .width = 1600.0f,
                                    .height = 1000.0f,
                                    .epoch = 7,
                                    .flags = PROTO_SNAPSHOT_FLAG_WRAP,
                                    .count = 6,
                                    .obstacle_count = N(basic_obstacles),
                                    .obstacles = basic_obstacles,
                                    .target_count = N(basic_targets),
                                    .targets = basic_targets};
}

/* Four boids of group 1 in a contained 1000 x 1000 world; a fifth is
 * spawned at seq 3 (after the others, as the simulation appends) and
 * despawned at seq 6. Paused at seq 5. */
static void epoch_state(struct vstate *v, uint32_t s)
{
    int32_t t = (int32_t)s;
    uint32_t n = s >= 3 && s < 6 ? 5 : 4;
    for (uint32_t i = 0; i < n; i++) {
        v->qx[i] = (uint16_t)(10000 * (i + 1) + 300 * t + (int32_t)i * t * t);
        v->qy[i] = (uint16_t)(9000 * (i + 1) - 200 * t);
        v->heading[i] = (uint8_t)(224 + i + (s % 2));
        v->group[i] = 1;
    }
    v->st = (struct proto_v2_state){.seq = s,
                                    .tick = 30 * (uint64_t)s,
                                    .server_time_us = 1700000100000000 + 50000 * (uint64_t)s,
                                    .sim_hash = 0xfedcba9876543210ull - s,
                                    .width = 1000.0f,
                                    .height = 1000.0f,
                                    .epoch = s < 3   ? 3
                                             : s < 6 ? 4
                                                     : 5,
                                    .flags = s == 5 ? PROTO_SNAPSHOT_FLAG_PAUSED : 0,
                                    .count = n,
                                    .target_count = N(epoch_targets),
                                    .targets = epoch_targets};
}

static const struct vframe basic_frames[] = {
    {1, 0, 0}, /* key */
    {2, 1, 0}, /* one base */
    {3, 2, 1}, /* two bases */
    {4, 3, 2}, /* delta on delta */
    {6, 4, 2}, /* seq 5 skipped: every other frame */
    {7, 6, 4}, /* unequal gaps */
};

static const struct vframe epoch_frames[] = {
    {1, 0, 0}, {2, 1, 0},            /* epoch 3 */
    {3, 0, 0}, {4, 3, 0}, {5, 4, 3}, /* spawn: epoch 4 */
    {6, 0, 0}, {7, 6, 0},            /* despawn: epoch 5 */
};

static void fill_states(struct vstream *s, void (*make)(struct vstate *, uint32_t))
{
    for (uint32_t q = 1; q <= MAX_STATES; q++) {
        make(&s->states[q], q);
        struct vstate *v = &s->states[q];
        v->st.qx = v->qx, v->st.qy = v->qy, v->st.heading = v->heading, v->st.group = v->group;
        proto_v2_state_seal(&v->st);
    }
}

/* ---- output ------------------------------------------------------------- */

static cJSON *hash_string(uint64_t h)
{
    char s[17];
    snprintf(s, sizeof s, "%016" PRIx64, h);
    return cJSON_CreateString(s);
}

static cJSON *header_json(const struct proto_v2_header *h, size_t size)
{
    cJSON *j = cJSON_CreateObject();
    uint32_t base1 = h->seq - h->gap1, base0 = base1 - h->gap0;
    struct proto_snapshot_header common = proto_v2_common_header(h);
    cJSON_AddStringToObject(j, "kind", h->kind == PROTO_V2_KIND_KEY ? "key" : "delta");
    vecjson_add_num(j, "seq", h->seq);
    vecjson_add_num(j, "gap1", h->gap1);
    vecjson_add_num(j, "gap0", h->gap0);
    cJSON_AddItemToObject(j, "base1", h->gap1 ? cJSON_CreateNumber(base1) : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "base0", h->gap0 ? cJSON_CreateNumber(base0) : cJSON_CreateNull());
    vecjson_add_header_fields(j, &common);
    vecjson_add_num(j, "packed_len", h->packed_len);
    vecjson_add_num(j, "plain_len", h->plain_len);
    cJSON_AddItemToObject(j, "sim_hash", hash_string(h->sim_hash));
    cJSON_AddItemToObject(j, "state_hash", hash_string(h->state_hash));
    vecjson_add_num(j, "size", (double)size);
    return j;
}

static cJSON *boids_json(const struct proto_v2_state *s)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < s->count; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddNumberToObject(b, "group", s->group[i]);
        cJSON_AddNumberToObject(b, "qx", s->qx[i]);
        cJSON_AddNumberToObject(b, "qy", s->qy[i]);
        cJSON_AddNumberToObject(b, "heading", s->heading[i]);
        cJSON_AddItemToArray(a, b);
    }
    return a;
}

/* Per boid of a delta: its context and what the bases predict (§11.4). */
static cJSON *prediction_json(const struct proto_v2_state *s, const struct proto_v2_state *b1,
                              const struct proto_v2_state *b0)
{
    struct pv2_bases b;
    pv2_bases_init(&b, s->width, s->height, b1, b0, (uint8_t)(s->seq - b1->seq),
                   (uint8_t)(b0 ? b1->seq - b0->seq : 0));
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < s->count; i++) {
        struct pv2_guess g = pv2_guess_of(&b, pv2_mode_of(&b), i);
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "ctx", g.ctx);
        cJSON_AddNumberToObject(p, "x", g.x);
        cJSON_AddNumberToObject(p, "y", g.y);
        cJSON_AddNumberToObject(p, "heading", pv2_predict_heading(&b, i, s->qx[i], s->qy[i]));
        cJSON_AddItemToArray(a, p);
    }
    return a;
}

/* The inflated body of a frame, with zlib (independent of the writer). */
static cJSON *plain_json(const uint8_t *frame, const struct proto_v2_header *h)
{
    static uint8_t plain[MAX_BOIDS * PV2_DELTA_MAX_PER_BOID + 1];
    size_t head = (size_t)h->run_count * PROTO_SNAPSHOT_RUN_SIZE +
                  (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                  (size_t)h->target_count * PROTO_SNAPSHOT_TARGET_SIZE + PROTO_V2_HEADER_SIZE;
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        vecjson_die("zlib", "inflateInit2");
    z.next_in = (Bytef *)(uintptr_t)(frame + head);
    z.avail_in = h->packed_len;
    z.next_out = plain;
    z.avail_out = sizeof plain;
    if (inflate(&z, Z_FINISH) != Z_STREAM_END || z.total_out != h->plain_len)
        vecjson_die("zlib", "the body does not inflate to plain_len");
    inflateEnd(&z);
    return vecjson_hex(plain, h->plain_len);
}

/* ---- streams ------------------------------------------------------------- */

static size_t encode(struct proto_v2_encoder *e, struct vstream *s, const struct vframe *f,
                     uint8_t *buf)
{
    const struct proto_v2_state *b1 = f->base1 ? &s->states[f->base1].st : NULL;
    const struct proto_v2_state *b0 = f->base0 ? &s->states[f->base0].st : NULL;
    ptrdiff_t n = proto_v2_encode(e, &s->states[f->seq].st, b1, b0, buf, MAX_FRAME);
    if (n < 0)
        vecjson_die(s->name, proto_status_name((int)n));
    return (size_t)n;
}

/* Decodes the frame as a client would and checks it gives the state. */
static void check_decodes(struct proto_v2_decoder *d, const uint8_t *buf, size_t n,
                          const struct proto_v2_state *want, const char *what)
{
    const struct proto_v2_state *got;
    int rc = proto_v2_decode(d, buf, n, &got);
    if (rc)
        vecjson_die(what, proto_status_name(rc));
    if (got->count != want->count || memcmp(got->qx, want->qx, 2 * want->count) ||
        memcmp(got->qy, want->qy, 2 * want->count) ||
        memcmp(got->heading, want->heading, want->count) ||
        memcmp(got->group, want->group, want->count))
        vecjson_die(what, "decodes to another state");
}

static cJSON *frame_json(struct vstream *s, const struct vframe *f, const uint8_t *buf, size_t n,
                         const char *bin)
{
    struct proto_v2_header h;
    if (proto_v2_decode_header(buf, n, &h))
        vecjson_die(bin, "header");
    const struct proto_v2_state *st = &s->states[f->seq].st;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "bin", bin);
    cJSON_AddItemToObject(j, "header", header_json(&h, n));
    cJSON_AddItemToObject(j, "runs", vecjson_runs(st->group, st->count));
    cJSON_AddItemToObject(j, "boids", boids_json(st));
    vecjson_add_obstacles_targets(j, st->obstacles, st->obstacle_count, st->targets,
                                  st->target_count);
    cJSON_AddItemToObject(j, "plain", plain_json(buf, &h));
    if (f->base1)
        cJSON_AddItemToObject(j, "prediction",
                              prediction_json(st, &s->states[f->base1].st,
                                              f->base0 ? &s->states[f->base0].st : NULL));
    return j;
}

static void write_stream(const char *dir, struct proto_v2_encoder *e, struct vstream *s)
{
    const char *err = NULL;
    struct proto_v2_decoder *d = proto_v2_decoder_create(MAX_BOIDS, 16, &err);
    if (!d)
        vecjson_die("decoder", err);
    cJSON *json = cJSON_CreateObject(), *frames = cJSON_CreateArray();
    cJSON_AddStringToObject(json, "name", s->name);
    cJSON_AddStringToObject(json, "description", s->description);
    for (size_t k = 0; k < s->n_frames; k++) {
        uint8_t buf[MAX_FRAME];
        char bin[64];
        size_t n = encode(e, s, &s->frames[k], buf);
        snprintf(bin, sizeof bin, "%s_%u.bin", s->name, s->frames[k].seq);
        check_decodes(d, buf, n, &s->states[s->frames[k].seq].st, bin);
        vecjson_write_file(dir, bin, buf, n);
        cJSON_AddItemToArray(frames, frame_json(s, &s->frames[k], buf, n, bin));
    }
    cJSON_AddItemToObject(json, "frames", frames);
    char name[64];
    snprintf(name, sizeof name, "%s.json", s->name);
    vecjson_write_json(dir, name, json);
    proto_v2_decoder_destroy(d);
}

/* ---- frames every decoder refuses ----------------------------------------- */

struct vinvalid {
    const char *name, *description, *error;
    const char *before[4]; /* frames of a stream decoded first, in order */
    uint8_t buf[MAX_FRAME];
    size_t len;
};

/* Overwrites a frame's body with `plain` deflated, and fixes the lengths. */
static void set_body(struct vinvalid *v, const uint8_t *plain, size_t plain_len,
                     uint32_t claimed_plain)
{
    struct proto_v2_header h;
    if (proto_v2_decode_header(v->buf, v->len, &h))
        vecjson_die(v->name, "base frame");
    size_t head = v->len - h.packed_len;
    struct proto_deflate d;
    struct proto_deflate_span span = {plain, plain_len};
    proto_deflate_begin(&d, v->buf + head, MAX_FRAME - head);
    proto_deflate_block(&d, &span, 1, true);
    ptrdiff_t packed = proto_deflate_end(&d);
    if (packed < 0)
        vecjson_die(v->name, "deflate");
    bytes_le_put(v->buf + PV2_OFF_PACKED, (uint64_t)packed, 4);
    bytes_le_put(v->buf + PV2_OFF_PLAIN, claimed_plain, 4);
    v->len = head + (size_t)packed;
}

static void from_frame(struct vinvalid *v, struct proto_v2_encoder *e, struct vstream *s,
                       size_t frame)
{
    v->len = encode(e, s, &s->frames[frame], v->buf);
}

/* Frame 3 of basic (a delta on seq 2 and 1) after the frames it needs. */
static void basic_delta(struct vinvalid *v, struct proto_v2_encoder *e, struct vstream *s)
{
    static const char *const need[] = {"basic_1.bin", "basic_2.bin"};
    memcpy(v->before, need, sizeof need);
    from_frame(v, e, s, 2);
}

static size_t make_invalid(struct vinvalid *out, struct proto_v2_encoder *e, struct vstream *basic,
                           struct vstream *epoch)
{
    size_t n = 0;
    struct vinvalid *v;
#define CASE(nm, desc, err) (v = &out[n++], *v = (struct vinvalid){nm, desc, err, {0}, {0}, 0})
    CASE("empty", "no bytes at all", "truncated");
    CASE("magic_only", "the magic alone", "truncated");
    memcpy(v->buf, "FK", 2), v->len = 2;
    CASE("bad_magic", "a key frame starting \"FX\"", "bad_magic");
    from_frame(v, e, basic, 0), v->buf[1] = 'X';
    CASE("version_1", "a key frame marked version 1", "bad_version");
    from_frame(v, e, basic, 0), v->buf[2] = 1;
    CASE("bad_kind", "kind 3", "bad_type");
    from_frame(v, e, basic, 0), v->buf[3] = 3;
    CASE("short_header", "the first 79 bytes of a key frame", "truncated");
    from_frame(v, e, basic, 0), v->len = PROTO_V2_HEADER_SIZE - 1;
    CASE("reserved_byte", "header byte 50 not zero", "bad_value");
    from_frame(v, e, basic, 0), v->buf[50] = 1;
    CASE("unknown_flag", "flag bit 2 set", "bad_value");
    from_frame(v, e, basic, 0), v->buf[PV2_OFF_FLAGS] |= 4;
    CASE("key_with_base", "a key frame naming a base", "bad_value");
    from_frame(v, e, basic, 0), v->buf[PV2_OFF_GAP1] = 1;
    CASE("delta_without_base", "a delta whose gap1 is 0", "bad_value");
    basic_delta(v, e, basic), v->buf[PV2_OFF_GAP1] = 0;
    CASE("key_plain_len", "a key frame whose plain_len is not 5 per boid", "bad_value");
    from_frame(v, e, basic, 0), bytes_le_put(v->buf + PV2_OFF_PLAIN, 29, 4);
    CASE("delta_plain_len_odd", "a delta whose exceptions would be half a code", "bad_value");
    basic_delta(v, e, basic), bytes_le_put(v->buf + PV2_OFF_PLAIN, 19, 4);
    CASE("ratio", "plain_len more than 1032 times packed_len", "bad_value");
    from_frame(v, e, basic, 0);
    {
        uint8_t plain[30] = {0};
        set_body(v, plain, sizeof plain, 30);
        bytes_le_put(v->buf + PV2_OFF_BOIDS, 200000, 4);
        bytes_le_put(v->buf + PV2_OFF_PLAIN, 1000000, 4);
    }
    CASE("extra_byte", "a key frame with one byte after its body", "bad_length");
    from_frame(v, e, basic, 0), v->buf[v->len++] = 0;
    CASE("body_cut", "a key frame one byte short", "truncated");
    from_frame(v, e, basic, 0), v->len--;
    CASE("runs_not_ascending", "group runs 2 then 0", "bad_value");
    from_frame(v, e, basic, 0), v->buf[PROTO_V2_HEADER_SIZE] = 2,
                                v->buf[PROTO_V2_HEADER_SIZE + 5] = 0;
    CASE("no_base", "a delta to a decoder that holds nothing", "no_base");
    from_frame(v, e, basic, 2);
    CASE("base_of_other_epoch", "after a spawn, a delta naming a base of the old epoch", "no_base");
    {
        static const char *const need[] = {"epoch_1.bin", "epoch_2.bin", "epoch_3.bin"};
        memcpy(v->before, need, sizeof need);
        from_frame(v, e, epoch, 4); /* seq 5 on 4 and 3 */
        v->buf[PV2_OFF_GAP1] = 3;   /* seq 5 on 2: epoch 3, four boids */
        v->buf[PV2_OFF_GAP0] = 0;
    }
    CASE("not_deflate", "a body of a reserved deflate block type", "bad_body");
    from_frame(v, e, basic, 0), v->buf[v->len - bytes_le_get(v->buf + PV2_OFF_PACKED, 4)] = 0x07;
    CASE("inflates_longer", "a body inflating past plain_len (the bound of a bomb)", "bad_body");
    from_frame(v, e, basic, 0);
    {
        uint8_t plain[60] = {0};
        set_body(v, plain, sizeof plain, 30);
    }
    CASE("inflates_shorter", "a body inflating to less than plain_len", "bad_body");
    from_frame(v, e, basic, 0);
    {
        uint8_t plain[29] = {0};
        set_body(v, plain, sizeof plain, 30);
    }
    CASE("bytes_after_stream", "packed_len counts a byte after the deflate stream", "bad_body");
    from_frame(v, e, basic, 0);
    v->buf[v->len++] = 0;
    bytes_le_put(v->buf + PV2_OFF_PACKED, bytes_le_get(v->buf + PV2_OFF_PACKED, 4) + 1, 4);
    CASE("escape_without_exception", "a residual byte 255 and no exceptions", "bad_body");
    basic_delta(v, e, basic);
    {
        uint8_t plain[18] = {255};
        set_body(v, plain, sizeof plain, 18);
    }
    CASE("escape_of_small_code", "an exception carrying a code below 255", "bad_body");
    basic_delta(v, e, basic);
    {
        uint8_t plain[20] = {255, [18] = 254, [19] = 0};
        set_body(v, plain, sizeof plain, 20);
    }
    CASE("hash_mismatch", "a delta whose state_hash is off by one bit", "hash_mismatch");
    basic_delta(v, e, basic), v->buf[PV2_OFF_STATE_HASH] ^= 1;
#undef CASE
    return n;
}

/* Decodes each case after its `before` frames; its error must be the one listed. */
static void check_invalid(const char *dir, const struct vinvalid *v)
{
    const char *err = NULL;
    struct proto_v2_decoder *d = proto_v2_decoder_create(MAX_BOIDS, 16, &err);
    if (!d)
        vecjson_die("decoder", err);
    for (size_t k = 0; k < N(v->before) && v->before[k]; k++) {
        char path[1024];
        uint8_t buf[MAX_FRAME];
        const struct proto_v2_state *st;
        snprintf(path, sizeof path, "%s/%s", dir, v->before[k]);
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (!f || fclose(f) || proto_v2_decode(d, buf, n, &st))
            vecjson_die(v->name, "a frame before it does not decode");
    }
    const struct proto_v2_state *st;
    int rc = proto_v2_decode(d, v->buf, v->len, &st);
    if (strcmp(proto_status_name(rc), v->error) != 0)
        vecjson_die(v->name, proto_status_name(rc));
    proto_v2_decoder_destroy(d);
}

static void write_invalid(const char *dir, struct proto_v2_encoder *e, struct vstream *basic,
                          struct vstream *epoch)
{
    static struct vinvalid cases[32];
    size_t n = make_invalid(cases, e, basic, epoch);
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; k < n; k++) {
        check_invalid(dir, &cases[k]);
        cJSON *c = cJSON_CreateObject(), *before = cJSON_CreateArray();
        cJSON_AddStringToObject(c, "name", cases[k].name);
        cJSON_AddStringToObject(c, "description", cases[k].description);
        for (size_t b = 0; b < N(cases[k].before) && cases[k].before[b]; b++)
            cJSON_AddItemToArray(before, cJSON_CreateString(cases[k].before[b]));
        cJSON_AddItemToObject(c, "before", before);
        cJSON_AddItemToObject(c, "hex", vecjson_hex(cases[k].buf, cases[k].len));
        cJSON_AddStringToObject(c, "error", cases[k].error);
        cJSON_AddItemToArray(a, c);
    }
    vecjson_write_json(dir, "invalid.json", a);
}

/* ---- index: file list, octant table, heading cases ----------------------- */

static void write_index(const char *dir)
{
    static const int32_t cases[][2] = {
        {1, 0},       {0, 1},
        {-1, 0},      {0, -1},
        {5, 5},       {-5, 5},
        {-5, -5},     {5, -5},
        {256, 160},   {-400, 9},
        {400, -9},    {8388607, 1},
        {1, 8388607}, {-8388607, -8388607},
        {1000, 999},  {3, -1000},
        {-7, 2},      {123456, -654321},
    };
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "protocol", PROTO_V2_VERSION);
    cJSON *streams = cJSON_AddArrayToObject(j, "streams");
    cJSON_AddItemToArray(streams, cJSON_CreateString("basic"));
    cJSON_AddItemToArray(streams, cJSON_CreateString("epoch"));
    cJSON_AddStringToObject(j, "invalid", "invalid.json");
    cJSON *table = cJSON_AddArrayToObject(j, "octant_turns");
    for (unsigned t = 0; t <= 256; t++)
        cJSON_AddItemToArray(table, cJSON_CreateNumber(pv2_octant_turns(t)));
    cJSON *heading = cJSON_AddArrayToObject(j, "heading_of");
    for (size_t k = 0; k < N(cases); k++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "x", cases[k][0]);
        cJSON_AddNumberToObject(c, "y", cases[k][1]);
        cJSON_AddNumberToObject(c, "heading", proto_v2_heading_of(cases[k][0], cases[k][1]));
        cJSON_AddItemToArray(heading, c);
    }
    vecjson_write_json(dir, "index.json", j);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_vectors_v2 DIR   (normally proto/vectors/v2)\n");
        return 2;
    }
    vecjson_set_program("gen_vectors_v2");
    static struct vstream basic = {
        .name = "basic",
        .description =
            "six boids in two groups on a torus: the x and y seams, a heading byte that "
            "wraps, a boid standing still, exceptions; one base, two bases, a skipped frame, "
            "unequal gaps",
        .frames = basic_frames,
        .n_frames = N(basic_frames)};
    static struct vstream epoch = {
        .name = "epoch",
        .description =
            "a contained world: a boid spawned at seq 3 and despawned at seq 6, each a new "
            "epoch starting on a key frame; paused at seq 5",
        .frames = epoch_frames,
        .n_frames = N(epoch_frames)};
    fill_states(&basic, basic_state);
    fill_states(&epoch, epoch_state);
    const char *err = NULL;
    struct proto_v2_encoder *e = proto_v2_encoder_create(MAX_BOIDS, &err);
    if (!e)
        vecjson_die("encoder", err);
    write_stream(argv[1], e, &basic);
    write_stream(argv[1], e, &epoch);
    write_invalid(argv[1], e, &basic, &epoch);
    write_index(argv[1]);
    proto_v2_encoder_destroy(e);
    return 0;
}
