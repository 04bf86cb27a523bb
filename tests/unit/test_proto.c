/*
 * Unit tests for the wire protocol codec (proto/): the golden vectors in
 * proto/vectors decode to their descriptions and re-encode byte for byte
 * from the state they describe; snapshots round-trip within quantization error
 * and cost exactly 5 bytes per boid; the decoder refuses every truncation,
 * every broken field and random garbage without reading out of bounds;
 * every command vector parses to its typed values or its error code; and
 * replies are valid JSON that echo the id exactly as the client sent it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto_command.h"
#include "proto_reply.h"
#include "proto_snapshot.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.141592653589793

/* ---- helpers ------------------------------------------------------------ */

/* Reads a file from the vectors directory; caller frees. NUL-terminated. */
static char *read_vector(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FLOCKD_VECTORS_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static cJSON *load_json(const char *name)
{
    size_t len;
    char *text = read_vector(name, &len);
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!doc)
        fail_msg("%s is not valid JSON", name);
    return doc;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v))
        fail_msg("missing number '%s'", key);
    return v->valuedouble;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v))
        fail_msg("missing string '%s'", key);
    return v->valuestring;
}

/* Decodes a hex string; caller frees. */
static uint8_t *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n + 1);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    *len = n;
    return out;
}

/* Arrays big enough for any test snapshot. */
struct decoded {
    struct proto_snapshot s;
    struct proto_run runs[PROTO_SNAPSHOT_MAX_RUNS];
    struct proto_boid boids[20000];
    struct proto_obstacle obstacles[64];
    struct proto_target targets[PROTO_SNAPSHOT_MAX_TARGETS];
};

static struct decoded *decoded_new(void)
{
    struct decoded *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->s = (struct proto_snapshot){.runs = d->runs,
                                   .runs_cap = PROTO_SNAPSHOT_MAX_RUNS,
                                   .boids = d->boids,
                                   .boids_cap = 20000,
                                   .obstacles = d->obstacles,
                                   .obstacles_cap = 64,
                                   .targets = d->targets,
                                   .targets_cap = PROTO_SNAPSHOT_MAX_TARGETS};
    return d;
}

static uint32_t next_random(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

/* A uniform float in [0, 1). */
static float unit_random(uint64_t *s)
{
    return (float)(next_random(s) >> 8) / 16777216.0f;
}

/* A snapshot's state as plain arrays, the way the server hands it to the
 * encoder: up to `capacity` boids, 64 obstacles and a target per group. */
struct state {
    struct proto_snapshot_view v;
    uint32_t capacity;
    float *x, *y, *vx, *vy;
    uint8_t *group;
    struct proto_obstacle obstacles[64];
    struct proto_target targets[PROTO_GROUPS];
};

static struct state *state_new(float w, float h, int wrap, uint32_t capacity)
{
    struct state *s = calloc(1, sizeof *s);
    assert_non_null(s);
    size_t n = capacity ? capacity : 1;
    s->capacity = capacity;
    s->x = calloc(n, sizeof *s->x);
    s->y = calloc(n, sizeof *s->y);
    s->vx = calloc(n, sizeof *s->vx);
    s->vy = calloc(n, sizeof *s->vy);
    s->group = calloc(n, sizeof *s->group);
    assert_true(s->x && s->y && s->vx && s->vy && s->group);
    s->v = (struct proto_snapshot_view){.width = w,
                                        .height = h,
                                        .wrap = wrap,
                                        .x = s->x,
                                        .y = s->y,
                                        .vx = s->vx,
                                        .vy = s->vy,
                                        .group = s->group,
                                        .obstacles = s->obstacles,
                                        .targets = s->targets};
    return s;
}

static void state_free(struct state *s)
{
    free(s->x);
    free(s->y);
    free(s->vx);
    free(s->vy);
    free(s->group);
    free(s);
}

/* Appends a boid; the caller keeps groups in ascending order. */
static void add_boid(struct state *s, uint8_t group, float x, float y, float vx, float vy)
{
    uint32_t i = s->v.count++;
    assert_true(i < s->capacity);
    s->x[i] = x;
    s->y[i] = y;
    s->vx[i] = vx;
    s->vy[i] = vy;
    s->group[i] = group;
}

static void add_obstacle(struct state *s, uint32_t id, float x, float y, float r)
{
    assert_true(s->v.obstacle_count < 64);
    s->obstacles[s->v.obstacle_count++] = (struct proto_obstacle){id, x, y, r};
}

/* Appends a target; the caller keeps groups in ascending order. */
static void add_target(struct state *s, uint8_t group, float x, float y)
{
    assert_true(s->v.target_count < PROTO_GROUPS);
    s->targets[s->v.target_count++] = (struct proto_target){group, x, y};
}

/* n boids of group spread uniformly in the disc of radius r around
 * (cx, cy), clamped into the world, with random nonzero velocities. */
static void add_flock(struct state *s, uint32_t n, uint8_t group, float cx, float cy, float r,
                      uint64_t *seed)
{
    for (uint32_t i = 0; i < n; i++) {
        float a = 6.2831853f * unit_random(seed), d = r * sqrtf(unit_random(seed));
        float x = fminf(fmaxf(cx + d * cosf(a), 0.0f), s->v.width);
        float y = fminf(fmaxf(cy + d * sinf(a), 0.0f), s->v.height);
        float heading = 6.2831853f * unit_random(seed), speed = 1.0f + 99.0f * unit_random(seed);
        add_boid(s, group, x, y, speed * cosf(heading), speed * sinf(heading));
    }
}

/* Encodes the state's view; caller frees the exact-size buffer. */
static uint8_t *encode(const struct state *s, size_t *len)
{
    size_t cap = proto_snapshot_max_size(s->capacity, 64);
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    ptrdiff_t n = proto_snapshot_encode(&s->v, buf, cap);
    assert_true(n > 0);
    uint8_t *exact = malloc((size_t)n);
    assert_non_null(exact);
    memcpy(exact, buf, (size_t)n);
    free(buf);
    *len = (size_t)n;
    return exact;
}

/* A small world's state with several groups, obstacles and targets. */
static struct state *busy_state(float w, float h, int wrap, uint32_t boids)
{
    struct state *s = state_new(w, h, wrap, boids);
    static const uint8_t groups[] = {0, 3, 17, 255};
    uint64_t seed = boids;
    for (int k = 0; k < 4; k++)
        add_flock(s, boids / 4, groups[k], 0.2f * (float)(k + 1) * w, 0.5f * h, 0.3f * fminf(w, h),
                  &seed);
    add_obstacle(s, 1, 0.5f * w, 0.5f * h, 0.1f * fminf(w, h));
    add_obstacle(s, 2, 0.1f * w, 0.9f * h, 2.0f);
    add_target(s, 3, 0.9f * w, 0.1f * h);
    add_target(s, 200, w, h);
    s->v.tick = 20;
    s->v.epoch = 4;
    return s;
}

static double angle_diff(double a, double b)
{
    double d = fmod(fabs(a - b), 2.0 * PI);
    return d > PI ? 2.0 * PI - d : d;
}

/* ---- snapshot vectors --------------------------------------------------- */

static void check_header(const struct proto_snapshot_header *h, const cJSON *jh)
{
    assert_int_equal(h->version, num(jh, "version"));
    assert_int_equal(h->type, num(jh, "type"));
    assert_int_equal(h->flags, num(jh, "flags"));
    assert_true((double)h->tick == num(jh, "tick"));
    assert_true((double)h->server_time_us == num(jh, "server_time_us"));
    assert_true(h->width == (float)num(jh, "width"));
    assert_true(h->height == (float)num(jh, "height"));
    assert_int_equal(h->epoch, num(jh, "epoch"));
    assert_int_equal(h->boid_count, num(jh, "boid_count"));
    assert_int_equal(h->run_count, num(jh, "group_run_count"));
    assert_int_equal(h->obstacle_count, num(jh, "obstacle_count"));
    assert_int_equal(h->target_count, num(jh, "target_count"));
}

/* The decoded boid matches its description, and the description matches
 * the formulas of PROTOCOL.md applied to the boid's source floats. */
static void check_boid(const struct proto_boid *b, const cJSON *jb, float w, float h)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(jb, "source");
    assert_int_equal(b->group, num(jb, "group"));
    assert_int_equal(b->qx, num(jb, "qx"));
    assert_int_equal(b->qy, num(jb, "qy"));
    assert_int_equal(b->heading, num(jb, "heading"));
    assert_true(proto_dequantize_pos(b->qx, w) == num(jb, "x"));
    assert_true(proto_dequantize_pos(b->qy, h) == num(jb, "y"));
    assert_true(proto_dequantize_heading(b->heading) == num(jb, "heading_rad"));
    assert_true(fabs(num(jb, "x") - num(src, "x")) <= 0.5 * w / 65536.0);
    assert_true(fabs(num(jb, "y") - num(src, "y")) <= 0.5 * h / 65536.0);
    double vx = num(src, "vx"), vy = num(src, "vy");
    if (vx == 0.0 && vy == 0.0)
        assert_int_equal(b->heading, 0);
    else
        assert_true(angle_diff(num(jb, "heading_rad"), atan2(vy, vx)) <= PI / 256.0 + 1e-12);
}

static void check_body(const struct proto_snapshot *s, const cJSON *doc)
{
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
    const cJSON *boids = cJSON_GetObjectItemCaseSensitive(doc, "boids");
    const cJSON *obstacles = cJSON_GetObjectItemCaseSensitive(doc, "obstacles");
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(doc, "targets");
    assert_int_equal(cJSON_GetArraySize(runs), s->h.run_count);
    assert_int_equal(cJSON_GetArraySize(boids), s->h.boid_count);
    assert_int_equal(cJSON_GetArraySize(obstacles), s->h.obstacle_count);
    assert_int_equal(cJSON_GetArraySize(targets), s->h.target_count);
    for (int k = 0; k < s->h.run_count; k++) {
        assert_int_equal(s->runs[k].group, num(cJSON_GetArrayItem(runs, k), "group"));
        assert_int_equal(s->runs[k].count, num(cJSON_GetArrayItem(runs, k), "count"));
    }
    for (uint32_t i = 0; i < s->h.boid_count; i++)
        check_boid(&s->boids[i], cJSON_GetArrayItem(boids, (int)i), s->h.width, s->h.height);
    for (int k = 0; k < s->h.obstacle_count; k++) {
        const cJSON *o = cJSON_GetArrayItem(obstacles, k);
        assert_int_equal(s->obstacles[k].id, num(o, "id"));
        assert_true(s->obstacles[k].x == (float)num(o, "x"));
        assert_true(s->obstacles[k].y == (float)num(o, "y"));
        assert_true(s->obstacles[k].r == (float)num(o, "r"));
    }
    for (int k = 0; k < s->h.target_count; k++) {
        const cJSON *t = cJSON_GetArrayItem(targets, k);
        assert_int_equal(s->targets[k].group, num(t, "group"));
        assert_true(s->targets[k].x == (float)num(t, "x"));
        assert_true(s->targets[k].y == (float)num(t, "y"));
    }
}

/* Calls fn(name, description, bin, len) for each snapshot vector. */
static void for_each_snapshot_vector(void (*fn)(const cJSON *doc, const uint8_t *bin, size_t len))
{
    cJSON *index = load_json("index.json");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(index, "snapshots");
    assert_true(cJSON_GetArraySize(list) >= 3);
    for (int i = 0; i < cJSON_GetArraySize(list); i++) {
        char name[256];
        size_t len;
        snprintf(name, sizeof name, "%s.json", cJSON_GetArrayItem(list, i)->valuestring);
        cJSON *doc = load_json(name);
        uint8_t *bin = (uint8_t *)read_vector(str(doc, "bin"), &len);
        fn(doc, bin, len);
        free(bin);
        cJSON_Delete(doc);
    }
    cJSON_Delete(index);
}

static void decode_and_compare(const cJSON *doc, const uint8_t *bin, size_t len)
{
    struct decoded *d = decoded_new();
    const cJSON *jh = cJSON_GetObjectItemCaseSensitive(doc, "header");
    assert_int_equal(len, num(jh, "size"));
    assert_int_equal(proto_snapshot_decode(bin, len, &d->s), 0);
    check_header(&d->s.h, jh);
    check_body(&d->s, doc);
    free(d);
}

static void snapshot_vectors_decode_to_their_descriptions(void **state)
{
    (void)state;
    for_each_snapshot_vector(decode_and_compare);
}

/* The state a vector's description lists: boids with their source floats,
 * obstacles, targets, and the header's counters, time and flags. */
static struct state *state_from_description(const cJSON *doc)
{
    const cJSON *jw = cJSON_GetObjectItemCaseSensitive(doc, "world");
    const cJSON *jh = cJSON_GetObjectItemCaseSensitive(doc, "header");
    const cJSON *boids = cJSON_GetObjectItemCaseSensitive(doc, "boids");
    const cJSON *obstacles = cJSON_GetObjectItemCaseSensitive(doc, "obstacles");
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(doc, "targets");
    int n = cJSON_GetArraySize(boids);
    struct state *s = state_new((float)num(jw, "width"), (float)num(jw, "height"),
                                strcmp(str(jw, "edges"), "wrap") == 0, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        const cJSON *b = cJSON_GetArrayItem(boids, i);
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
        add_boid(s, (uint8_t)num(b, "group"), (float)num(src, "x"), (float)num(src, "y"),
                 (float)num(src, "vx"), (float)num(src, "vy"));
    }
    for (int k = 0; k < cJSON_GetArraySize(obstacles); k++) {
        const cJSON *o = cJSON_GetArrayItem(obstacles, k);
        add_obstacle(s, (uint32_t)num(o, "id"), (float)num(o, "x"), (float)num(o, "y"),
                     (float)num(o, "r"));
    }
    for (int k = 0; k < cJSON_GetArraySize(targets); k++) {
        const cJSON *t = cJSON_GetArrayItem(targets, k);
        add_target(s, (uint8_t)num(t, "group"), (float)num(t, "x"), (float)num(t, "y"));
    }
    s->v.tick = (uint64_t)num(jh, "tick");
    s->v.epoch = (uint32_t)num(jh, "epoch");
    s->v.server_time_us = (uint64_t)num(jh, "server_time_us");
    s->v.paused = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(jh, "paused"));
    s->v.wrap = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(jh, "wrap"));
    return s;
}

static void reencode_and_compare(const cJSON *doc, const uint8_t *bin, size_t len)
{
    struct state *s = state_from_description(doc);
    uint8_t out[4096];
    assert_int_equal(proto_snapshot_encode(&s->v, out, sizeof out), len);
    assert_memory_equal(out, bin, len);
    state_free(s);
}

static void snapshot_vectors_reencode_byte_for_byte_from_their_described_state(void **state)
{
    (void)state;
    for_each_snapshot_vector(reencode_and_compare);
}

static void invalid_snapshot_vectors_are_refused_with_their_codes(void **state)
{
    (void)state;
    cJSON *doc = load_json("invalid.json");
    struct decoded *d = decoded_new();
    assert_true(cJSON_GetArraySize(doc) >= 10);
    for (int i = 0; i < cJSON_GetArraySize(doc); i++) {
        const cJSON *c = cJSON_GetArrayItem(doc, i);
        size_t len;
        uint8_t *bin = unhex(str(c, "hex"), &len);
        int rc = proto_snapshot_decode(bin, len, &d->s);
        if (strcmp(proto_status_name(rc), str(c, "error")) != 0)
            fail_msg("%s: got %s, want %s", str(c, "name"), proto_status_name(rc), str(c, "error"));
        free(bin);
    }
    free(d);
    cJSON_Delete(doc);
}

/* ---- snapshot behaviour ------------------------------------------------- */

static void check_round_trip(float w, float h, int wrap)
{
    struct state *world = busy_state(w, h, wrap, 1000);
    world->v.server_time_us = 1234567;
    world->v.paused = 1;
    size_t len;
    uint8_t *bin = encode(world, &len);
    struct decoded *d = decoded_new();
    const struct proto_snapshot_view v = world->v;
    assert_int_equal(proto_snapshot_decode(bin, len, &d->s), 0);
    assert_true(d->s.h.tick == v.tick && d->s.h.epoch == v.epoch);
    assert_true(d->s.h.server_time_us == 1234567);
    assert_int_equal(d->s.h.flags, PROTO_SNAPSHOT_FLAG_PAUSED | (v.wrap ? 2 : 0));
    assert_int_equal(d->s.h.boid_count, v.count);
    assert_int_equal(d->s.h.run_count, 4);
    assert_int_equal(d->s.h.obstacle_count, 2);
    assert_int_equal(d->s.h.target_count, 2);
    for (uint32_t i = 0; i < v.count; i++) {
        const struct proto_boid *b = &d->s.boids[i];
        assert_int_equal(b->group, v.group[i]);
        assert_true(fabs(proto_dequantize_pos(b->qx, w) - v.x[i]) <= 0.5 * w / 65536.0 + 1e-9);
        assert_true(fabs(proto_dequantize_pos(b->qy, h) - v.y[i]) <= 0.5 * h / 65536.0 + 1e-9);
        double a = atan2(v.vy[i], v.vx[i]);
        assert_true(angle_diff(proto_dequantize_heading(b->heading), a) <= PI / 256.0 + 1e-9);
    }
    free(d);
    free(bin);
    state_free(world);
}

static void random_worlds_round_trip_within_quantization_error(void **state)
{
    (void)state;
    check_round_trip(1600.0f, 1000.0f, 1);
    check_round_trip(777.7f, 16.0f, 0);
    check_round_trip(1e6f, 333.3f, 1);
}

static void decoder_refuses_every_truncation_of_a_valid_snapshot(void **state)
{
    (void)state;
    struct state *world = busy_state(800.0f, 600.0f, 1, 40);
    size_t len;
    uint8_t *bin = encode(world, &len);
    struct decoded *d = decoded_new();
    for (size_t n = 0; n < len; n++) {
        uint8_t *cut = malloc(n ? n : 1); /* exact size: ASan sees any overread */
        memcpy(cut, bin, n);
        assert_int_equal(proto_snapshot_decode(cut, n, &d->s), PROTO_E_TRUNCATED);
        assert_int_equal(proto_snapshot_decode_header(cut, n, &d->s.h), PROTO_E_TRUNCATED);
        free(cut);
    }
    assert_int_equal(proto_snapshot_decode(bin, len, &d->s), 0);
    free(d);
    free(bin);
    state_free(world);
}

/* Decodes bin with byte `at` replaced by v (and `extra` zero bytes added). */
static int decode_patched(const uint8_t *bin, size_t len, size_t at, uint8_t v, size_t extra)
{
    struct decoded *d = decoded_new();
    uint8_t *p = calloc(1, len + extra);
    memcpy(p, bin, len);
    p[at] = v;
    int rc = proto_snapshot_decode(p, len + extra, &d->s);
    free(p);
    free(d);
    return rc;
}

static void decoder_refuses_a_wrong_magic_version_type_or_count(void **state)
{
    (void)state;
    struct state *world = busy_state(800.0f, 600.0f, 0, 40);
    size_t len;
    uint8_t *bin = encode(world, &len);
    assert_int_equal(decode_patched(bin, len, 0, 'f', 0), PROTO_E_BAD_MAGIC);
    assert_int_equal(decode_patched(bin, len, 1, 'J', 0), PROTO_E_BAD_MAGIC);
    assert_int_equal(decode_patched(bin, len, 2, 0, 0), PROTO_E_BAD_VERSION);
    assert_int_equal(decode_patched(bin, len, 2, 2, 0), PROTO_E_BAD_VERSION);
    assert_int_equal(decode_patched(bin, len, 3, 0, 0), PROTO_E_BAD_TYPE);
    assert_int_equal(decode_patched(bin, len, 3, 2, 0), PROTO_E_BAD_TYPE);
    assert_int_equal(decode_patched(bin, len, 4, 0x04, 0), PROTO_E_BAD_VALUE);
    assert_int_equal(decode_patched(bin, len, 5, 0x01, 0), PROTO_E_BAD_VALUE);
    assert_int_equal(decode_patched(bin, len, 6, 5, 0), PROTO_E_TRUNCATED);    /* runs + 1 */
    assert_int_equal(decode_patched(bin, len, 6, 5, 5), PROTO_E_BAD_VALUE);    /* .. and bytes */
    assert_int_equal(decode_patched(bin, len, 36, 41, 0), PROTO_E_TRUNCATED);  /* boids + 1 */
    assert_int_equal(decode_patched(bin, len, 36, 41, 5), PROTO_E_BAD_VALUE);  /* .. and bytes */
    assert_int_equal(decode_patched(bin, len, 36, 39, 0), PROTO_E_BAD_LENGTH); /* boids - 1 */
    assert_int_equal(decode_patched(bin, len, 40, 3, 0), PROTO_E_TRUNCATED);   /* obstacles + 1 */
    assert_int_equal(decode_patched(bin, len, 42, 1, 0), PROTO_E_BAD_LENGTH);  /* targets - 1 */
    assert_int_equal(decode_patched(bin, len, 0, 'F', 1), PROTO_E_BAD_LENGTH); /* a trailing byte */
    assert_int_equal(decode_patched(bin, len, 0, 'F', 0), 0);
    free(bin);
    state_free(world);
}

static void decoder_refuses_counts_above_the_callers_capacities(void **state)
{
    (void)state;
    struct state *world = busy_state(800.0f, 600.0f, 1, 40);
    size_t len;
    uint8_t *bin = encode(world, &len);
    struct decoded *d = decoded_new();
    size_t *caps[] = {&d->s.runs_cap, &d->s.boids_cap, &d->s.obstacles_cap, &d->s.targets_cap};
    size_t exact[] = {4, 40, 2, 2};
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < 4; j++)
            *caps[j] = exact[j] - (j == k);
        assert_int_equal(proto_snapshot_decode(bin, len, &d->s), PROTO_E_OVER_LIMIT);
    }
    for (int j = 0; j < 4; j++)
        *caps[j] = exact[j];
    assert_int_equal(proto_snapshot_decode(bin, len, &d->s), 0);
    free(d);
    free(bin);
    state_free(world);
}

/* Checks what a successful decode promises about its output. */
static void check_decoded_invariants(const struct proto_snapshot *s)
{
    uint64_t sum = 0;
    for (int k = 0; k < s->h.run_count; k++) {
        assert_true(s->runs[k].count > 0);
        assert_true(k == 0 || s->runs[k].group > s->runs[k - 1].group);
        sum += s->runs[k].count;
    }
    assert_true(sum == s->h.boid_count);
    for (int k = 0; k < s->h.obstacle_count; k++)
        assert_true(isfinite(s->obstacles[k].r) && s->obstacles[k].r > 0.0f);
    assert_true(isfinite(s->h.width) && s->h.width > 0.0f);
}

static void decoder_survives_random_corruption_without_reading_out_of_bounds(void **state)
{
    (void)state;
    struct state *world = busy_state(800.0f, 600.0f, 1, 40);
    size_t len;
    uint8_t *bin = encode(world, &len);
    struct decoded *d = decoded_new();
    uint64_t seed = 42;
    int accepted = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = next_random(&seed) % 8 ? len : next_random(&seed) % (len + 16);
        uint8_t *p = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            p[i] = i < len ? bin[i] : (uint8_t)next_random(&seed);
        for (int flips = (int)(next_random(&seed) % 4); flips >= 0 && n; flips--)
            p[next_random(&seed) % n] = (uint8_t)next_random(&seed);
        int rc = proto_snapshot_decode(p, n, &d->s);
        assert_true(rc <= 0);
        if (rc == 0) {
            check_decoded_invariants(&d->s);
            accepted++;
        }
        free(p);
    }
    assert_true(accepted > 0); /* flips inside boid bytes stay valid */
    free(d);
    free(bin);
    state_free(world);
}

static void snapshot_costs_exactly_five_bytes_per_boid_plus_header_and_runs(void **state)
{
    (void)state;
    static const uint32_t counts[] = {0, 1, 1000, 10000};
    for (int k = 0; k < 4; k++) {
        uint32_t n = counts[k];
        struct state *w = state_new(1600.0f, 1000.0f, 1, n);
        uint64_t seed = n;
        add_flock(w, n / 2, 1, 800.0f, 500.0f, 400.0f, &seed);
        add_flock(w, n - n / 2, 2, 800.0f, 500.0f, 400.0f, &seed);
        size_t len;
        uint8_t *bin = encode(w, &len);
        uint32_t runs = n == 0 ? 0 : n == 1 ? 1 : 2;
        assert_int_equal(len, PROTO_SNAPSHOT_HEADER_SIZE + 5 * runs + 5 * (size_t)n);
        assert_int_equal(len, proto_snapshot_size(n, runs, 0, 0));
        free(bin);
        state_free(w);
    }
    assert_int_equal(proto_snapshot_size(1000, 1, 0, 0), 5049);
    assert_int_equal(proto_snapshot_size(10000, 1, 0, 0), 50049);
}

static void encoder_needs_a_buffer_of_exactly_the_snapshot_size(void **state)
{
    (void)state;
    struct state *world = busy_state(800.0f, 600.0f, 1, 40);
    const struct proto_snapshot_view *v = &world->v;
    size_t size = proto_snapshot_size(40, 4, 2, 2);
    uint8_t *buf = malloc(size);
    assert_int_equal(proto_snapshot_encode(v, buf, size - 1), PROTO_E_NOSPACE);
    assert_int_equal(proto_snapshot_encode(v, NULL, size), PROTO_E_NOSPACE);
    assert_int_equal(proto_snapshot_encode(v, buf, size), (ptrdiff_t)size);
    assert_true(proto_snapshot_max_size(40, 64) >= size);
    free(buf);
    state_free(world);
}

static void encoder_refuses_views_the_format_cannot_carry(void **state)
{
    (void)state;
    float xs[3] = {1, 2, 3}, vs[3] = {1, 1, 1};
    uint8_t groups[3] = {0, 5, 4};
    struct proto_obstacle obs[2] = {{1, 10, 10, 5}, {1, 20, 20, 5}};
    struct proto_target targets[2] = {{9, 0, 0}, {9, 1, 1}};
    struct proto_snapshot_view v = {.count = 3,
                                    .width = 100,
                                    .height = 100,
                                    .x = xs,
                                    .y = xs,
                                    .vx = vs,
                                    .vy = vs,
                                    .group = groups,
                                    .obstacles = obs,
                                    .targets = targets};
    uint8_t buf[512];
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    groups[2] = 5;
    assert_true(proto_snapshot_encode(&v, buf, sizeof buf) > 0);
    v.obstacle_count = 2; /* ids 1, 1 */
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    obs[1].id = 2;
    obs[1].r = NAN;
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    obs[1].r = 5;
    v.target_count = 1;
    targets[0].x = INFINITY;
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    targets[0].x = 0;
    v.target_count = 2; /* groups 9, 9 */
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    v.target_count = 1;
    v.width = 0;
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    v.width = 100;
    v.obstacle_count = 65536;
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf), PROTO_E_UNENCODABLE);
    v.obstacle_count = 2;
    assert_int_equal(proto_snapshot_encode(&v, buf, sizeof buf),
                     (ptrdiff_t)proto_snapshot_size(3, 2, 2, 1));
}

static void positions_quantize_edges_to_the_first_and_last_quantum(void **state)
{
    (void)state;
    assert_int_equal(proto_quantize_pos(0.0f, 1600.0f), 0);
    assert_int_equal(proto_quantize_pos(-5.0f, 1600.0f), 0);
    assert_int_equal(proto_quantize_pos(NAN, 1600.0f), 0);
    assert_int_equal(proto_quantize_pos(1600.0f, 1600.0f), 65535);
    assert_int_equal(proto_quantize_pos(1e9f, 1600.0f), 65535);
    assert_int_equal(proto_quantize_pos(800.0f, 1600.0f), 32768);
    assert_int_equal(proto_quantize_pos(nextafterf(1600.0f, 0.0f), 1600.0f), 65535);
    /* k * 1600 / 65536 = k / 40.96 is exact for k = 4096 (100): on the boundary. */
    assert_int_equal(proto_quantize_pos(100.0f, 1600.0f), 4096);
    assert_int_equal(proto_quantize_pos(nextafterf(100.0f, 0.0f), 1600.0f), 4095);
    assert_true(proto_dequantize_pos(0, 1600.0f) == 0.5 * 1600.0 / 65536.0);
    assert_true(proto_dequantize_pos(65535, 1600.0f) == 1600.0 - 0.5 * 1600.0 / 65536.0);
}

static void headings_quantize_the_axes_to_quadrant_boundaries(void **state)
{
    (void)state;
    assert_int_equal(proto_quantize_heading(1.0f, 0.0f), 0);
    assert_int_equal(proto_quantize_heading(0.0f, 1.0f), 64);
    assert_int_equal(proto_quantize_heading(-1.0f, 0.0f), 128);
    assert_int_equal(proto_quantize_heading(-1.0f, -0.0f), 128);
    assert_int_equal(proto_quantize_heading(0.0f, -1.0f), 192);
    assert_int_equal(proto_quantize_heading(1.0f, 1.0f), 32);
    assert_int_equal(proto_quantize_heading(1.0f, -1e-4f), 0); /* rounds up to 256 = 0 */
    assert_int_equal(proto_quantize_heading(0.0f, 0.0f), 0);
    assert_int_equal(proto_quantize_heading(NAN, 1.0f), 0);
    assert_int_equal(proto_quantize_heading(INFINITY, 1.0f), 0);
    assert_true(proto_dequantize_heading(64) == PI / 2.0);
    assert_true(proto_dequantize_heading(128) == PI);
}

/* §4.4's heading by its definition: atan2 and round half away from zero. */
static uint8_t heading_by_atan2(float vx, float vy)
{
    if (!isfinite(vx) || !isfinite(vy) || (vx == 0.0f && vy == 0.0f))
        return 0;
    return (uint8_t)((unsigned long)lround(atan2((double)vy, (double)vx) / PI * 128.0) & 255u);
}

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* v moved n floats up (n < 0: down). */
static float ulps(float v, int n)
{
    for (int j = 0; j < abs(n); j++)
        v = nextafterf(v, n > 0 ? INFINITY : -INFINITY);
    return v;
}

/* The quantizer takes a shortcut to the angle: it must give atan2's step
 * for random velocities of every size, and on and around every step's
 * rounding boundary, where the shortcut defers to atan2. */
static void headings_are_atan2s_steps_everywhere(void **state)
{
    (void)state;
    uint64_t seed = 7;
    for (int i = 0; i < 2000000; i++) {
        float scale = ldexpf(1.0f, (int)(mix64(&seed) % 40) - 20);
        float vx = ((float)(mix64(&seed) >> 40) / 16777216.0f - 0.5f) * scale;
        float vy = ((float)(mix64(&seed) >> 40) / 16777216.0f - 0.5f) * scale;
        if (proto_quantize_heading(vx, vy) != heading_by_atan2(vx, vy))
            fail_msg("(%a, %a): %d, atan2 says %d", (double)vx, (double)vy,
                     proto_quantize_heading(vx, vy), heading_by_atan2(vx, vy));
    }
    for (int j = 0; j < 32; j++)
        assert_true(fabs(proto_heading_bounds[j] - tan((j + 0.5) * PI / 128.0)) < 1e-16);
    for (int k = -256; k < 256; k++) {
        double a = (k + 0.5) * PI / 128.0;
        for (int d = -40; d <= 40; d++) {
            float vx = ulps((float)cos(a) * 3.0f, d), vy = ulps((float)sin(a) * 3.0f, -d);
            assert_int_equal(proto_quantize_heading(vx, vy), heading_by_atan2(vx, vy));
        }
    }
}

/* ---- command vectors ---------------------------------------------------- */

/* Whether got has exactly want's members with equal values; numbers are
 * equal as doubles or, for values that came from floats, as float32. */
static int json_matches(const cJSON *want, const cJSON *got)
{
    if (cJSON_IsNumber(want))
        return cJSON_IsNumber(got) && (want->valuedouble == got->valuedouble ||
                                       (float)want->valuedouble == (float)got->valuedouble);
    if (cJSON_IsString(want))
        return cJSON_IsString(got) && strcmp(want->valuestring, got->valuestring) == 0;
    if (cJSON_IsObject(want)) {
        if (!cJSON_IsObject(got) || cJSON_GetArraySize(want) != cJSON_GetArraySize(got))
            return 0;
        for (const cJSON *m = want->child; m; m = m->next)
            if (!json_matches(m, cJSON_GetObjectItemCaseSensitive(got, m->string)))
                return 0;
        return 1;
    }
    return got && (want->type & 0xFF) == (got->type & 0xFF);
}

struct command_vectors {
    cJSON *doc;
    struct proto_limits lim;
};

static struct command_vectors load_command_vectors(void)
{
    struct command_vectors v = {.doc = load_json("commands.json")};
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(v.doc, "limits");
    v.lim = (struct proto_limits){(float)num(l, "width"), (float)num(l, "height"),
                                  (uint32_t)num(l, "capacity"), (size_t)num(l, "max_message")};
    return v;
}

/* The case's bytes, in an exact-size buffer without a terminator. */
static char *case_bytes(const cJSON *c, size_t *len)
{
    const cJSON *hex = cJSON_GetObjectItemCaseSensitive(c, "hex");
    if (hex)
        return (char *)unhex(hex->valuestring, len);
    *len = strlen(str(c, "text"));
    char *p = malloc(*len ? *len : 1);
    memcpy(p, str(c, "text"), *len);
    return p;
}

static const char *case_id(const cJSON *c)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
    return cJSON_IsString(id) ? id->valuestring : "";
}

static void check_accepted_case(const cJSON *c, const struct proto_command *cmd)
{
    char text[1024];
    const char *name = str(c, "name");
    if (strcmp(cmd->id, case_id(c)) != 0)
        fail_msg("%s: id text '%s', want '%s'", name, cmd->id, case_id(c));
    assert_true(proto_command_format(cmd, text, sizeof text) > 0);
    cJSON *got = cJSON_Parse(text);
    if (!json_matches(cJSON_GetObjectItemCaseSensitive(c, "command"), got))
        fail_msg("%s: formatted as %s", name, text);
    cJSON_Delete(got);
}

static void check_refused_case(const cJSON *c, int rc, const struct proto_error *err)
{
    const char *name = str(c, "name");
    if (strcmp(proto_status_name(rc), str(c, "error")) != 0)
        fail_msg("%s: got %s (%s), want %s", name, proto_status_name(rc), err->message,
                 str(c, "error"));
    assert_int_equal(err->code, rc);
    assert_true(err->message[0] != '\0');
    if (strcmp(err->id, case_id(c)) != 0)
        fail_msg("%s: error id '%s', want '%s'", name, err->id, case_id(c));
}

static void command_vectors_parse_to_their_expected_results(void **state)
{
    (void)state;
    struct command_vectors v = load_command_vectors();
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(v.doc, "cases");
    int seen_kind[PROTO_CMD_COUNT] = {0}, seen_code[16] = {0};
    assert_true(cJSON_GetArraySize(cases) >= 40);
    for (const cJSON *c = cases->child; c; c = c->next) {
        struct proto_command cmd;
        struct proto_error err;
        size_t len;
        char *text = case_bytes(c, &len);
        int rc = proto_command_parse(text, len, &v.lim, &cmd, &err);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ok"))) {
            if (rc != 0)
                fail_msg("%s: refused with %s: %s", str(c, "name"), proto_status_name(rc),
                         err.message);
            check_accepted_case(c, &cmd);
            seen_kind[cmd.kind] = 1;
        } else {
            check_refused_case(c, rc, &err);
            seen_code[-rc] = 1;
        }
        free(text);
    }
    for (int k = 0; k < PROTO_CMD_COUNT; k++)
        assert_true(seen_kind[k]);
    for (int code = -PROTO_E_BAD_JSON; code <= -PROTO_E_OUT_OF_RANGE; code++)
        assert_true(seen_code[code]);
    cJSON_Delete(v.doc);
}

static void formatted_commands_parse_back_to_the_same_command(void **state)
{
    (void)state;
    struct command_vectors v = load_command_vectors();
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(v.doc, "cases");
    for (const cJSON *c = cases->child; c; c = c->next) {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ok")))
            continue;
        struct proto_command a, b;
        struct proto_error err;
        char text[1024];
        const char *in = str(c, "text");
        assert_int_equal(proto_command_parse(in, strlen(in), &v.lim, &a, &err), 0);
        int n = proto_command_format(&a, text, sizeof text);
        assert_true(n > 0);
        assert_int_equal(proto_command_parse(text, (size_t)n, &v.lim, &b, &err), 0);
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("%s: %s does not parse back to the same command", str(c, "name"), text);
    }
    cJSON_Delete(v.doc);
}

/* ---- command behaviour -------------------------------------------------- */

static const struct proto_limits limits = {1600.0f, 1000.0f, 16384, 4096};

static int parse(const char *text, struct proto_command *cmd, struct proto_error *err)
{
    return proto_command_parse(text, strlen(text), &limits, cmd, err);
}

static void commands_parse_into_correctly_typed_values(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    assert_int_equal(parse("{\"cmd\":\"seek\",\"group\":7,\"x\":10.5,\"y\":999}", &c, &e), 0);
    assert_int_equal(c.kind, PROTO_CMD_SEEK);
    assert_int_equal(c.args.seek.group, 7);
    assert_true(c.args.seek.x == 10.5f && c.args.seek.y == 999.0f);
    assert_int_equal(parse("{\"cmd\":\"spawn\",\"n\":3,\"group\":1,\"x\":1,\"y\":2}", &c, &e), 0);
    assert_true(c.args.spawn.n == 3 && c.args.spawn.spread == PROTO_DEFAULT_SPREAD);
    assert_int_equal(parse("{\"cmd\":\"despawn\",\"n\":4}", &c, &e), 0);
    assert_true(c.args.despawn.n == 4 && c.args.despawn.group == -1);
    assert_int_equal(parse("{\"cmd\":\"obstacle_remove\",\"obstacle\":4294967295}", &c, &e), 0);
    assert_true(c.args.obstacle_remove.id == UINT32_MAX);
    assert_int_equal(parse("{\"cmd\":\"params\",\"w_seek\":2.5,\"max_speed\":7}", &c, &e), 0);
    assert_true(c.args.params.group == -1 && c.args.params.count == 2);
    assert_ptr_equal(c.args.params.items[0].desc, sim_param_find("w_seek"));
    assert_true(c.args.params.items[0].value == 2.5f && c.args.params.items[1].value == 7.0f);
    assert_int_equal(parse("{\"cmd\":\"reset\",\"seed\":9007199254740992}", &c, &e), 0);
    assert_true(c.args.reset.has_seed && !c.args.reset.has_boids);
    assert_true(c.args.reset.seed == 9007199254740992ULL);
    assert_int_equal(parse("{\"cmd\":\"step\"}", &c, &e), 0);
    assert_int_equal(c.args.step.n, 1);
    assert_int_equal(
        parse("{\"cmd\":\"join\",\"room\":\"r\",\"role\":\"admin\",\"token\":\"t\"}", &c, &e), 0);
    assert_string_equal(c.args.join.room, "r");
    assert_true(c.args.join.role == PROTO_ROLE_ADMIN && c.args.join.mode == PROTO_MODE_ANY);
    assert_true(c.args.join.has_token && !c.args.join.has_name);
    assert_string_equal(c.args.join.token, "t");
    assert_int_equal(parse("{\"cmd\":\"obstacle_add\",\"x\":0,\"y\":1000,\"r\":250}", &c, &e), 0);
    assert_true(c.args.obstacle_add.y == 1000.0f && c.args.obstacle_add.r == 250.0f);
}

/* A join's fields for the room it creates; canonical text keeps them. */
static void join_parses_the_world_and_teams_of_the_room_it_creates(void **state)
{
    (void)state;
    struct proto_command c, back;
    struct proto_error e;
    assert_int_equal(parse("{\"cmd\":\"join\",\"room\":\"war\",\"role\":\"player\",\"mode\":"
                           "\"rts\",\"width\":3000.5,\"height\":16,\"edges\":\"wrap\","
                           "\"teams\":2,\"units\":0}",
                           &c, &e),
                     0);
    const struct proto_join_args *a = &c.args.join;
    assert_true(a->has_width && a->has_height && a->has_teams && a->has_units);
    assert_true(a->width == 3000.5f && a->height == 16.0f && a->edges == PROTO_EDGES_WRAP);
    assert_true(a->teams == 2 && a->units == 0);
    char text[1024];
    assert_true(proto_command_format(&c, text, sizeof text) > 0);
    assert_non_null(strstr(text, "\"edges\":\"wrap\",\"teams\":2,\"units\":0"));
    assert_int_equal(parse(text, &back, &e), 0);
    assert_true(back.args.join.width == a->width && back.args.join.edges == a->edges);
    assert_int_equal(parse("{\"cmd\":\"join\",\"room\":\"r\",\"role\":\"viewer\","
                           "\"edges\":\"contain\",\"width\":1e6,\"teams\":255,\"units\":100000}",
                           &c, &e),
                     0);
    assert_true(a->edges == PROTO_EDGES_CONTAIN && a->width == 1e6f && !a->has_height);
    assert_true(a->teams == 255 && a->units == 100000);
    assert_int_equal(parse("{\"cmd\":\"join\",\"room\":\"r\",\"role\":\"viewer\"}", &c, &e), 0);
    assert_true(!a->has_width && !a->has_height && !a->has_teams && !a->has_units);
    assert_int_equal(a->edges, PROTO_EDGES_ANY);
}

static void join_refuses_a_world_or_teams_out_of_range_or_of_the_wrong_type(void **state)
{
    (void)state;
    static const struct {
        const char *field, *value;
        int code;
    } cases[] = {
        {"width", "15.9", PROTO_E_OUT_OF_RANGE},   {"width", "1000001", PROTO_E_OUT_OF_RANGE},
        {"height", "1e400", PROTO_E_OUT_OF_RANGE}, {"height", "\"800\"", PROTO_E_BAD_ARG},
        {"width", "null", PROTO_E_BAD_ARG},        {"edges", "\"torus\"", PROTO_E_BAD_ARG},
        {"edges", "true", PROTO_E_BAD_ARG},        {"teams", "1", PROTO_E_OUT_OF_RANGE},
        {"teams", "256", PROTO_E_OUT_OF_RANGE},    {"teams", "2.5", PROTO_E_BAD_ARG},
        {"units", "-1", PROTO_E_OUT_OF_RANGE},     {"units", "100001", PROTO_E_OUT_OF_RANGE},
        {"units", "false", PROTO_E_BAD_ARG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"cmd\":\"join\",\"room\":\"r\",\"role\":\"player\",\"%s\":%s}", cases[i].field,
                 cases[i].value);
        struct proto_command c;
        struct proto_error e;
        assert_int_equal(parse(text, &c, &e), cases[i].code);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", cases[i].field);
        assert_non_null(strstr(e.message, quoted));
        assert_non_null(strstr(e.message, "join: "));
    }
}

static void params_reset_needs_no_parameter_and_takes_only_a_boolean(void **state)
{
    (void)state;
    struct proto_command c, back;
    struct proto_error e;
    assert_int_equal(parse("{\"cmd\":\"params\",\"group\":3,\"reset\":true}", &c, &e), 0);
    assert_true(c.args.params.reset == 1 && c.args.params.group == 3 && c.args.params.count == 0);
    assert_int_equal(parse("{\"cmd\":\"params\",\"reset\":true,\"max_speed\":150}", &c, &e), 0);
    assert_true(c.args.params.reset && c.args.params.group == -1 && c.args.params.count == 1);
    char text[512];
    assert_true(proto_command_format(&c, text, sizeof text) > 0);
    assert_string_equal(text, "{\"cmd\":\"params\",\"reset\":true,\"max_speed\":150}");
    assert_int_equal(parse(text, &back, &e), 0);
    assert_true(back.args.params.reset && back.args.params.count == 1);
    assert_int_equal(parse("{\"cmd\":\"params\",\"group\":3,\"reset\":false}", &c, &e),
                     PROTO_E_BAD_ARG);
    assert_non_null(strstr(e.message, "no parameter"));
    assert_int_equal(parse("{\"cmd\":\"params\",\"reset\":false,\"w_seek\":1}", &c, &e), 0);
    assert_false(c.args.params.reset);
    assert_true(proto_command_format(&c, text, sizeof text) > 0);
    assert_null(strstr(text, "reset"));
    static const char *const bad[] = {"1", "0", "\"true\"", "null"};
    for (size_t i = 0; i < 4; i++) {
        char msg[128];
        snprintf(msg, sizeof msg, "{\"cmd\":\"params\",\"group\":3,\"reset\":%s}", bad[i]);
        assert_int_equal(parse(msg, &c, &e), PROTO_E_BAD_ARG);
        assert_non_null(strstr(e.message, "'reset'"));
    }
}

static void negative_zero_arguments_become_positive_zero(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    assert_int_equal(parse("{\"cmd\":\"seek\",\"group\":-0,\"x\":-0.0,\"y\":-0e5}", &c, &e), 0);
    assert_false(signbit(c.args.seek.x) || signbit(c.args.seek.y));
}

static void errors_name_the_field_and_carry_the_id(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    assert_int_equal(
        parse("{\"cmd\":\"seek\",\"id\":\"q\",\"group\":0,\"x\":1,\"y\":1001}", &c, &e),
        PROTO_E_OUT_OF_RANGE);
    assert_string_equal(e.id, "\"q\"");
    assert_non_null(strstr(e.message, "'y'"));
    assert_int_equal(parse("{\"cmd\":\"ping\",\"id\":[1]}", &c, &e), PROTO_E_BAD_ARG);
    assert_string_equal(e.id, "");
    /* A long multi-byte field name is shown cut on a character boundary. */
    assert_int_equal(
        parse("{\"cmd\":\"ping\",\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
              "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\":1}",
              &c, &e),
        PROTO_E_BAD_ARG);
    assert_non_null(strstr(e.message, "\u00e9..."));
    char reply[PROTO_REPLY_BYTES];
    assert_true(proto_reply_error(reply, sizeof reply, e.id, e.code, e.message) > 0);
    cJSON *doc = cJSON_Parse(reply);
    assert_non_null(doc);
    assert_string_equal(str(doc, "message"), e.message);
    cJSON_Delete(doc);
}

static void messages_over_the_limit_are_too_large_and_zero_means_no_limit(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    char text[5000];
    memset(text, ' ', sizeof text);
    memcpy(text, "{\"cmd\":\"ping\"}", 14);
    assert_int_equal(proto_command_parse(text, 4097, &limits, &c, &e), PROTO_E_TOO_LARGE);
    assert_int_equal(proto_command_parse(text, 4096, &limits, &c, &e), 0);
    struct proto_limits unlimited = limits;
    unlimited.max_message = 0;
    assert_int_equal(proto_command_parse(text, sizeof text, &unlimited, &c, &e), 0);
}

static void parser_reads_only_the_given_length(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    const char *text = "{\"cmd\":\"step\",\"n\":12}garbage";
    char *exact = malloc(21);
    memcpy(exact, text, 21); /* no terminator: ASan sees any overread */
    assert_int_equal(proto_command_parse(exact, 21, &limits, &c, &e), 0);
    assert_int_equal(c.args.step.n, 12);
    assert_int_equal(proto_command_parse(exact, 20, &limits, &c, &e), PROTO_E_BAD_JSON);
    assert_int_equal(proto_command_parse(NULL, 0, &limits, &c, &e), PROTO_E_BAD_JSON);
    free(exact);
}

static void parser_survives_random_corruption_of_valid_commands(void **state)
{
    (void)state;
    struct command_vectors v = load_command_vectors();
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(v.doc, "cases");
    uint64_t seed = 7;
    for (const cJSON *c = cases->child; c; c = c->next) {
        size_t len;
        char *src = case_bytes(c, &len);
        for (int iter = 0; iter < 200 && len; iter++) {
            size_t n = next_random(&seed) % (len + 1);
            char *p = malloc(n ? n : 1);
            memcpy(p, src, n);
            for (int flips = (int)(next_random(&seed) % 3); flips >= 0 && n; flips--)
                p[next_random(&seed) % n] = (char)next_random(&seed);
            struct proto_command cmd;
            struct proto_error err;
            int rc = proto_command_parse(p, n, &v.lim, &cmd, &err);
            assert_true(rc == 0 || proto_status_is_wire(rc));
            free(p);
        }
        free(src);
    }
    cJSON_Delete(v.doc);
}

static void parameter_registry_fits_in_one_params_command(void **state)
{
    (void)state;
    char text[2048];
    size_t n = (size_t)snprintf(text, sizeof text, "{\"cmd\":\"params\"");
    assert_true(sim_param_count() <= PROTO_MAX_PARAMS);
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        n += (size_t)snprintf(text + n, sizeof text - n, ",\"%s\":%.9g", d->name, (double)d->def);
    }
    snprintf(text + n, sizeof text - n, "}");
    struct proto_command c;
    struct proto_error e;
    assert_int_equal(parse(text, &c, &e), 0);
    assert_int_equal(c.args.params.count, sim_param_count());
}

static void every_command_has_a_distinct_wire_name(void **state)
{
    (void)state;
    for (int k = 0; k < PROTO_CMD_COUNT; k++) {
        assert_non_null(proto_cmd_name((enum proto_cmd)k));
        for (int j = 0; j < k; j++)
            assert_string_not_equal(proto_cmd_name((enum proto_cmd)k),
                                    proto_cmd_name((enum proto_cmd)j));
    }
    assert_null(proto_cmd_name(PROTO_CMD_COUNT));
}

/* ---- replies ------------------------------------------------------------ */

static void acks_are_valid_json_and_echo_ids_verbatim(void **state)
{
    (void)state;
    static const char *ids[] = {"7",
                                "-0",
                                "1.50e2",
                                "12345678901234567890",
                                "\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\"",
                                "\"\u00e9\"",
                                "null"};
    static const struct proto_ack_field extra[] = {{"obstacle", 7, NULL}};
    char buf[PROTO_REPLY_BYTES], want[256];
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        assert_true(proto_reply_ack(buf, sizeof buf, ids[i], 99, extra, 1) > 0);
        snprintf(want, sizeof want, "\"id\":%s,", ids[i]);
        assert_non_null(strstr(buf, want));
        cJSON *doc = cJSON_Parse(buf);
        assert_non_null(doc);
        assert_string_equal(str(doc, "type"), "ack");
        assert_true(num(doc, "tick") == 99 && num(doc, "obstacle") == 7);
        cJSON_Delete(doc);
    }
}

static void replies_send_a_missing_or_malformed_id_as_null(void **state)
{
    (void)state;
    static const char *ids[] = {NULL, "", "{}", "\"open", "1 2", "01", "nul", "\"\\u0000\""};
    char buf[PROTO_REPLY_BYTES];
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        assert_true(proto_reply_error(buf, sizeof buf, ids[i], PROTO_E_BAD_ARG, "m") > 0);
        cJSON *doc = cJSON_Parse(buf);
        assert_non_null(doc);
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "id")));
        cJSON_Delete(doc);
    }
}

static void parsed_ids_round_trip_through_the_error_reply(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    char buf[PROTO_REPLY_BYTES];
    assert_int_equal(parse("{\"id\":\"x\\\"y\\u2713\",\"cmd\":\"nope\"}", &c, &e),
                     PROTO_E_UNKNOWN_CMD);
    assert_true(proto_reply_error(buf, sizeof buf, e.id, e.code, e.message) > 0);
    assert_non_null(strstr(buf, "\"id\":\"x\\\"y\\u2713\""));
    cJSON *doc = cJSON_Parse(buf);
    assert_string_equal(str(doc, "id"), "x\"y\u2713");
    assert_string_equal(str(doc, "code"), "unknown_cmd");
    cJSON_Delete(doc);
}

static void error_replies_are_valid_json_with_a_stable_code(void **state)
{
    (void)state;
    char buf[PROTO_REPLY_BYTES];
    for (int code = PROTO_E_BAD_JSON; code >= PROTO_E_INTERNAL; code--) {
        assert_true(proto_reply_error(buf, sizeof buf, "1", code, "a \"b\"\n\x01 \xff!") > 0);
        cJSON *doc = cJSON_Parse(buf);
        assert_non_null(doc);
        assert_string_equal(str(doc, "type"), "error");
        assert_string_equal(str(doc, "code"), proto_status_name(code));
        assert_string_equal(str(doc, "message"), "a \"b\"\n\x01 \xef\xbf\xbd!");
        cJSON_Delete(doc);
    }
    assert_true(proto_reply_error(buf, sizeof buf, NULL, PROTO_E_NOSPACE, NULL) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_string_equal(str(doc, "code"), "internal");
    assert_string_equal(str(doc, "message"), "");
    cJSON_Delete(doc);
}

static void room_messages_carry_room_role_team_and_escaped_names(void **state)
{
    (void)state;
    char buf[PROTO_WELCOME_BYTES];
    struct proto_welcome w = {.client = 9,
                              .tick = 3,
                              .tick_hz = 60,
                              .snapshot_hz = 20,
                              .width = 100,
                              .height = 100,
                              .capacity = 10,
                              .max_message = 4096,
                              .room = "war",
                              .mode = PROTO_MODE_RTS,
                              .role = PROTO_ROLE_PLAYER,
                              .team = 2,
                              .rate = 50,
                              .burst = 100,
                              .player_obstacles = 8};
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(str(doc, "room"), "war");
    assert_string_equal(str(doc, "mode"), "rts");
    assert_string_equal(str(doc, "role"), "player");
    assert_true(num(doc, "team") == 2);
    cJSON *lim = cJSON_GetObjectItemCaseSensitive(doc, "limits");
    assert_true(num(lim, "rate") == 50 && num(lim, "burst") == 100 &&
                num(lim, "player_obstacles") == 8);
    cJSON_Delete(doc);

    struct proto_ack_field extra[] = {{"room", 0, "war"}, {"team", 2, NULL}};
    assert_true(proto_reply_ack(buf, sizeof buf, "1", 7, extra, 2) > 0);
    assert_string_equal(buf, "{\"type\":\"ack\",\"id\":1,\"tick\":7,\"room\":\"war\",\"team\":2}");

    struct proto_roster_entry e[] = {{4, "a\"b\\\u00e9", PROTO_ROLE_ADMIN, -1, 1},
                                     {0, "", PROTO_ROLE_PLAYER, 3, 0}};
    assert_true(proto_reply_roster(buf, sizeof buf, "war", PROTO_MODE_RTS, 5, e, 2, 7) > 0);
    doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(str(doc, "type"), "roster");
    assert_true(num(doc, "viewers") == 5 && num(doc, "more") == 7);
    cJSON *players = cJSON_GetObjectItemCaseSensitive(doc, "players");
    assert_int_equal(cJSON_GetArraySize(players), 2);
    cJSON *first = cJSON_GetArrayItem(players, 0), *second = cJSON_GetArrayItem(players, 1);
    assert_string_equal(str(first, "name"), "a\"b\\\u00e9");
    assert_null(cJSON_GetObjectItemCaseSensitive(first, "team"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(second, "connected")));
    assert_true(num(second, "team") == 3 && num(second, "client") == 0);
    cJSON_Delete(doc);
    assert_int_equal(proto_reply_roster(buf, 40, "war", PROTO_MODE_RTS, 5, e, 2, 0),
                     PROTO_E_NOSPACE);
}

static void welcome_names_the_protocol_the_connection_speaks(void **state)
{
    (void)state;
    char buf[PROTO_WELCOME_BYTES];
    struct proto_welcome w = {.width = 100, .height = 100, .tick_hz = 60, .snapshot_hz = 20};
    for (unsigned version = 0; version <= 2; version++) {
        w.protocol = version;
        assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
        cJSON *doc = cJSON_Parse(buf);
        assert_non_null(doc);
        assert_true(num(doc, "protocol") == (version ? version : PROTO_VERSION));
        cJSON_Delete(doc);
    }
}

static void a_welcome_says_unavailable_only_when_its_room_cannot_be_reached(void **state)
{
    (void)state;
    char buf[PROTO_WELCOME_BYTES];
    struct proto_welcome w = {.width = 100, .height = 100, .tick_hz = 60, .snapshot_hz = 20};
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_null(cJSON_GetObjectItemCaseSensitive(doc, "available"));
    cJSON_Delete(doc);
    w.unavailable = 1;
    w.unavailable_reason = "its node \"n1\" cannot be reached";
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    doc = cJSON_Parse(buf);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "available")));
    assert_string_equal(str(doc, "reason"), "its node \"n1\" cannot be reached");
    cJSON_Delete(doc);
}

static void availability_messages_name_the_room_and_a_reason_only_when_unavailable(void **state)
{
    (void)state;
    char buf[PROTO_REPLY_BYTES];
    assert_true(proto_reply_availability(buf, sizeof buf, "arena", 0, "NATS lost") > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_string_equal(str(doc, "type"), "availability");
    assert_string_equal(str(doc, "room"), "arena");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "available")));
    assert_string_equal(str(doc, "reason"), "NATS lost");
    cJSON_Delete(doc);
    assert_true(proto_reply_availability(buf, sizeof buf, "arena", 1, "ignored") > 0);
    assert_string_equal(buf, "{\"type\":\"availability\",\"room\":\"arena\",\"available\":true}");
    assert_true(proto_reply_availability(buf, 20, "arena", 0, NULL) < 0);
}

static void a_dilation_message_says_the_factor_and_the_rates_now(void **state)
{
    (void)state;
    char buf[PROTO_REPLY_BYTES];
    struct proto_dilation d = {
        .room = "big", .factor = 0.042, .tick_hz = 1.26, .snapshot_hz = 1.26};
    assert_true(proto_reply_dilation(buf, sizeof buf, &d) > 0);
    assert_string_equal(buf, "{\"type\":\"dilation\",\"room\":\"big\",\"factor\":0.042,"
                             "\"tick_hz\":1.26,\"snapshot_hz\":1.26}");
    d = (struct proto_dilation){.room = "big", .factor = 1, .tick_hz = 30, .snapshot_hz = 20};
    assert_true(proto_reply_dilation(buf, sizeof buf, &d) > 0);
    assert_string_equal(buf, "{\"type\":\"dilation\",\"room\":\"big\",\"factor\":1,"
                             "\"tick_hz\":30,\"snapshot_hz\":20}");
    assert_true(proto_reply_dilation(buf, 30, &d) < 0);
    /* The welcome has "dilation" only while the room runs slow. */
    struct proto_welcome w = {.width = 1, .height = 1, .dilation = 1.0};
    static char welcome[PROTO_WELCOME_BYTES];
    assert_true(proto_reply_welcome(welcome, sizeof welcome, &w) > 0);
    cJSON *doc = cJSON_Parse(welcome);
    assert_null(cJSON_GetObjectItemCaseSensitive(doc, "dilation"));
    cJSON_Delete(doc);
    w.dilation = 0.25;
    assert_true(proto_reply_welcome(welcome, sizeof welcome, &w) > 0);
    doc = cJSON_Parse(welcome);
    assert_true(num(doc, "dilation") == 0.25);
    cJSON_Delete(doc);
}

static void welcome_lists_every_parameter_and_group_zero_values(void **state)
{
    (void)state;
    struct sim_params values;
    sim_params_default(&values);
    values.max_speed = 123.5f;
    struct proto_welcome w = {.client = 42,
                              .tick = 7,
                              .tick_hz = 60,
                              .snapshot_hz = 20,
                              .width = 1600,
                              .height = 1000,
                              .wrap = 0,
                              .capacity = 16384,
                              .max_obstacles = 64,
                              .max_message = 4096,
                              .values = &values};
    char buf[PROTO_WELCOME_BYTES];
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(str(doc, "type"), "welcome");
    assert_true(num(doc, "protocol") == PROTO_VERSION && num(doc, "client") == 42);
    assert_string_equal(str(doc, "server"), "flockd");
    assert_true(str(doc, "version")[0] != '\0');
    assert_true(num(doc, "tick") == 7 && num(doc, "tick_hz") == 60 &&
                num(doc, "snapshot_hz") == 20);
    const cJSON *world = cJSON_GetObjectItemCaseSensitive(doc, "world");
    assert_true(num(world, "width") == 1600 && num(world, "capacity") == 16384);
    assert_string_equal(str(world, "edges"), "contain");
    assert_true(num(cJSON_GetObjectItemCaseSensitive(doc, "limits"), "max_message") == 4096);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(doc, "params");
    assert_int_equal(cJSON_GetArraySize(params), sim_param_count());
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        const cJSON *p = cJSON_GetArrayItem(params, (int)i);
        assert_string_equal(str(p, "name"), d->name);
        assert_true((float)num(p, "min") == d->min && (float)num(p, "max") == d->max);
        assert_true((float)num(p, "default") == d->def);
        assert_true(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(p, "integer")));
        assert_true(str(p, "help")[0] != '\0');
    }
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(doc, "values");
    assert_int_equal(cJSON_GetArraySize(vals), sim_param_count());
    assert_true(num(vals, "max_speed") == 123.5 && (float)num(vals, "w_separation") == 1.5f);
    cJSON_Delete(doc);
}

static void welcome_lists_each_group_that_differs_with_what_differs_and_the_flock(void **state)
{
    (void)state;
    struct sim_params base, fast, every;
    sim_params_default(&base);
    fast = base;
    fast.max_speed = 150;
    every = base;
    every.w_cohesion = 0;
    every.fov = 180;
    struct proto_group_values groups[] = {{3, &fast}, {255, &every}};
    struct proto_flock flock = {
        .tick = 120, .boids = 1000, .local_polarization = 0.5f, .mills = 2, .mill_fraction = 0.25f};
    struct proto_welcome w = {.width = 100,
                              .height = 100,
                              .tick_hz = 60,
                              .snapshot_hz = 20,
                              .values = &base,
                              .groups = groups,
                              .n_groups = 2,
                              .flock = &flock};
    char buf[PROTO_WELCOME_BYTES];
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, "groups");
    assert_int_equal(cJSON_GetArraySize(g), 2);
    const cJSON *g3 = cJSON_GetObjectItemCaseSensitive(g, "3");
    assert_int_equal(cJSON_GetArraySize(g3), 1);
    assert_true(num(g3, "max_speed") == 150);
    const cJSON *g255 = cJSON_GetObjectItemCaseSensitive(g, "255");
    assert_int_equal(cJSON_GetArraySize(g255), 2);
    assert_true(num(g255, "w_cohesion") == 0 && num(g255, "fov") == 180);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "flock");
    assert_true(num(f, "tick") == 120 && num(f, "boids") == 1000 && num(f, "mills") == 2);
    assert_true(num(f, "local_polarization") == 0.5 && num(f, "mill_fraction") == 0.25);
    cJSON_Delete(doc);
    /* No group differs, nothing measured: neither member. */
    w.n_groups = 0;
    w.flock = NULL;
    assert_true(proto_reply_welcome(buf, sizeof buf, &w) > 0);
    assert_null(strstr(buf, "\"groups\""));
    assert_null(strstr(buf, "\"flock\""));
}

/* 255 groups that differ in every parameter still fit the welcome buffer. */
static void the_largest_welcome_fits_its_buffer(void **state)
{
    (void)state;
    struct sim_params base, other[255];
    struct proto_group_values groups[255];
    sim_params_default(&base);
    for (unsigned g = 0; g < 255; g++) {
        for (size_t i = 0; i < sim_param_count(); i++) {
            const struct sim_param_desc *d = sim_param_at(i);
            *sim_param_field(&other[g], d) = d->min + (d->max - d->min) * 0.123456789f;
        }
        groups[g] = (struct proto_group_values){g + 1, &other[g]};
    }
    struct proto_flock flock = {.tick = UINT64_MAX / 2, .boids = UINT32_MAX};
    struct proto_welcome w = {.width = 1e6f,
                              .height = 1e6f,
                              .tick_hz = 60,
                              .snapshot_hz = 20,
                              .room = "abcdefghijklmnopqrstuvwxyz012345",
                              .values = &base,
                              .groups = groups,
                              .n_groups = 255,
                              .flock = &flock,
                              .tick = UINT64_MAX / 2,
                              .client = UINT64_MAX / 2,
                              .rate = 1e6,
                              .replay = 1,
                              .replay_last = UINT64_MAX / 2};
    static char buf[PROTO_WELCOME_BYTES];
    int n = proto_reply_welcome(buf, sizeof buf, &w);
    assert_true(n > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "groups")), 255);
    cJSON_Delete(doc);
}

static void stats_ack_carries_the_figures_and_a_null_flock_before_a_measure(void **state)
{
    (void)state;
    struct proto_stats st = {.boids = 40,
                             .paused = 1,
                             .tick_ms_mean = 0.5,
                             .tick_ms_p99 = 2,
                             .late_ms_p99 = 0.25,
                             .dilation = 0.5,
                             .snapshot_hz = 5};
    char buf[PROTO_REPLY_BYTES];
    assert_true(proto_reply_stats(buf, sizeof buf, "\"s\"", 9, &st) > 0);
    cJSON *doc = cJSON_Parse(buf);
    assert_string_equal(str(doc, "type"), "ack");
    assert_string_equal(str(doc, "id"), "s");
    assert_true(num(doc, "tick") == 9);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "stats");
    assert_true(num(s, "boids") == 40 && num(s, "tick_ms_mean") == 0.5 &&
                num(s, "tick_ms_p99") == 2 && num(s, "late_ms_p99") == 0.25);
    assert_true(num(s, "dilation") == 0.5 && num(s, "snapshot_hz") == 5);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "paused")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "flock")));
    cJSON_Delete(doc);
    struct proto_flock flock = {.tick = 8, .boids = 40, .nn_p5 = 12.5f, .ms = 1.5};
    st.flock = &flock;
    assert_true(proto_reply_stats(buf, sizeof buf, NULL, 9, &st) > 0);
    doc = cJSON_Parse(buf);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "id")));
    const cJSON *f =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "stats"), "flock");
    assert_true(num(f, "tick") == 8 && num(f, "nn_p5") == 12.5 && num(f, "measure_ms") == 1.5);
    cJSON_Delete(doc);
}

static void replies_report_nospace_when_the_buffer_is_too_small(void **state)
{
    (void)state;
    char buf[64];
    int n = proto_reply_error(buf, sizeof buf, "1", PROTO_E_BAD_ARG, "short");
    assert_true(n > 0 && (size_t)n < sizeof buf);
    for (size_t cap = 0; cap <= (size_t)n; cap++) {
        memset(buf, 'z', sizeof buf);
        assert_int_equal(proto_reply_error(buf, cap, "1", PROTO_E_BAD_ARG, "short"),
                         PROTO_E_NOSPACE);
        assert_true(cap == 0 || buf[0] == '\0');
    }
    assert_int_equal(proto_reply_error(buf, (size_t)n + 1, "1", PROTO_E_BAD_ARG, "short"), n);
    struct proto_welcome w = {.width = 1, .height = 1};
    assert_int_equal(proto_reply_welcome(buf, sizeof buf, &w), PROTO_E_NOSPACE);
}

static void statuses_have_distinct_stable_names(void **state)
{
    (void)state;
    for (int a = 0; a >= PROTO_E_OVER_LIMIT; a--) {
        if (strcmp(proto_status_name(a), "unknown") == 0)
            continue;
        for (int b = 0; b > a; b--)
            assert_string_not_equal(proto_status_name(a), proto_status_name(b));
    }
    assert_string_equal(proto_status_name(PROTO_E_BAD_JSON), "bad_json");
    assert_string_equal(proto_status_name(PROTO_E_QUEUE_FULL), "queue_full");
    assert_string_equal(proto_status_name(1), "unknown");
    assert_true(proto_status_is_wire(PROTO_E_INTERNAL) && !proto_status_is_wire(PROTO_E_NOSPACE));
}

/* The view a URL's query asks for: read as the view command would be. */
static void a_urls_view_parses_as_the_view_command_would(void **state)
{
    (void)state;
    struct proto_command c;
    struct proto_error e;
    const char *none[] = {"room=x", "t=1"};
    assert_int_equal(proto_view_from_query(none, 2, &limits, &c, &e), 0);
    const char *some[] = {"t=1", "view=10,20.5,300,1e2", "px=640", "budget=50000"};
    assert_int_equal(proto_view_from_query(some, 4, &limits, &c, &e), 1);
    assert_int_equal(c.kind, PROTO_CMD_VIEW);
    assert_string_equal(c.id, "");
    assert_true(c.args.view.x == 10.0f && c.args.view.y == 20.5f && c.args.view.w == 300.0f &&
                c.args.view.h == 100.0f);
    assert_true(c.args.view.px == 640 && c.args.view.budget == 50000);
    static const struct {
        const char *parts[2];
        int code;
    } bad[] = {{{"view=1,2,3", NULL}, PROTO_E_BAD_ARG},
               {{"view=1,2,3,4,", NULL}, PROTO_E_BAD_ARG},
               {{"view=1,,3,4", NULL}, PROTO_E_BAD_ARG},
               {{"view=nan,2,3,4", NULL}, PROTO_E_BAD_ARG},
               {{"view=0x10,2,3,4", NULL}, PROTO_E_BAD_ARG},
               {{"view=1e999,2,3,4", NULL}, PROTO_E_BAD_ARG},
               {{"view=1,2,3,4", "view=1,2,3,4"}, PROTO_E_BAD_ARG},
               {{"budget=5000", NULL}, PROTO_E_BAD_ARG},
               {{"view=1,2,3,4", "px=1.5"}, PROTO_E_BAD_ARG},
               {{"view=1601,2,3,4", NULL}, PROTO_E_OUT_OF_RANGE},
               {{"view=0,0,0,4", NULL}, PROTO_E_OUT_OF_RANGE},
               {{"view=0,0,10,10", "budget=999"}, PROTO_E_OUT_OF_RANGE}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t n = bad[k].parts[1] ? 2 : 1;
        assert_int_equal(proto_view_from_query(bad[k].parts, n, &limits, &c, &e), bad[k].code);
        assert_int_equal(e.code, bad[k].code);
        assert_true(strncmp(e.message, "the URL's view: ", 16) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_vectors_decode_to_their_descriptions),
        cmocka_unit_test(snapshot_vectors_reencode_byte_for_byte_from_their_described_state),
        cmocka_unit_test(invalid_snapshot_vectors_are_refused_with_their_codes),
        cmocka_unit_test(random_worlds_round_trip_within_quantization_error),
        cmocka_unit_test(decoder_refuses_every_truncation_of_a_valid_snapshot),
        cmocka_unit_test(decoder_refuses_a_wrong_magic_version_type_or_count),
        cmocka_unit_test(decoder_refuses_counts_above_the_callers_capacities),
        cmocka_unit_test(decoder_survives_random_corruption_without_reading_out_of_bounds),
        cmocka_unit_test(snapshot_costs_exactly_five_bytes_per_boid_plus_header_and_runs),
        cmocka_unit_test(encoder_needs_a_buffer_of_exactly_the_snapshot_size),
        cmocka_unit_test(encoder_refuses_views_the_format_cannot_carry),
        cmocka_unit_test(positions_quantize_edges_to_the_first_and_last_quantum),
        cmocka_unit_test(headings_quantize_the_axes_to_quadrant_boundaries),
        cmocka_unit_test(headings_are_atan2s_steps_everywhere),
        cmocka_unit_test(command_vectors_parse_to_their_expected_results),
        cmocka_unit_test(formatted_commands_parse_back_to_the_same_command),
        cmocka_unit_test(commands_parse_into_correctly_typed_values),
        cmocka_unit_test(join_parses_the_world_and_teams_of_the_room_it_creates),
        cmocka_unit_test(join_refuses_a_world_or_teams_out_of_range_or_of_the_wrong_type),
        cmocka_unit_test(params_reset_needs_no_parameter_and_takes_only_a_boolean),
        cmocka_unit_test(negative_zero_arguments_become_positive_zero),
        cmocka_unit_test(errors_name_the_field_and_carry_the_id),
        cmocka_unit_test(messages_over_the_limit_are_too_large_and_zero_means_no_limit),
        cmocka_unit_test(parser_reads_only_the_given_length),
        cmocka_unit_test(parser_survives_random_corruption_of_valid_commands),
        cmocka_unit_test(parameter_registry_fits_in_one_params_command),
        cmocka_unit_test(every_command_has_a_distinct_wire_name),
        cmocka_unit_test(acks_are_valid_json_and_echo_ids_verbatim),
        cmocka_unit_test(replies_send_a_missing_or_malformed_id_as_null),
        cmocka_unit_test(parsed_ids_round_trip_through_the_error_reply),
        cmocka_unit_test(error_replies_are_valid_json_with_a_stable_code),
        cmocka_unit_test(welcome_names_the_protocol_the_connection_speaks),
        cmocka_unit_test(welcome_lists_every_parameter_and_group_zero_values),
        cmocka_unit_test(a_welcome_says_unavailable_only_when_its_room_cannot_be_reached),
        cmocka_unit_test(availability_messages_name_the_room_and_a_reason_only_when_unavailable),
        cmocka_unit_test(a_dilation_message_says_the_factor_and_the_rates_now),
        cmocka_unit_test(welcome_lists_each_group_that_differs_with_what_differs_and_the_flock),
        cmocka_unit_test(the_largest_welcome_fits_its_buffer),
        cmocka_unit_test(stats_ack_carries_the_figures_and_a_null_flock_before_a_measure),
        cmocka_unit_test(room_messages_carry_room_role_team_and_escaped_names),
        cmocka_unit_test(replies_report_nospace_when_the_buffer_is_too_small),
        cmocka_unit_test(statuses_have_distinct_stable_names),
        cmocka_unit_test(a_urls_view_parses_as_the_view_command_would),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
