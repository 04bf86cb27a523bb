/*
 * test_proto_v2 — snapshot frames of version 2 (PROTOCOL.md §11): the
 * golden vectors of proto/vectors/v2 decoded and re-encoded byte for byte,
 * every invalid vector refused with its code, the integer heading and the
 * prediction against their definitions, the state hash against an
 * independent MurmurHash3, random flocks through every frame kind, the
 * decoder's history, and the frame plan for many clients.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <math.h>

#include "proto_v2.h"
#include "proto_v2_impl.h"

#ifndef FLOCKD_VECTORS_DIR
#error "FLOCKD_VECTORS_DIR must name proto/vectors"
#endif
#define V2_DIR FLOCKD_VECTORS_DIR "/v2/"

#define MAX_VBOIDS 16
#define MAX_VFRAME 4096

/* ---- files and JSON ----------------------------------------------------- */

static size_t read_file(const char *name, uint8_t *buf, size_t cap)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", V2_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    assert_true(n < cap);
    fclose(f);
    return n;
}

static cJSON *read_json(const char *name)
{
    static uint8_t text[1 << 20];
    size_t n = read_file(name, text, sizeof text - 1);
    text[n] = 0;
    cJSON *j = cJSON_Parse((const char *)text);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static uint64_t hex64(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    assert_true(cJSON_IsString(v));
    return strtoull(v->valuestring, NULL, 16);
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strlen(s) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned b;
        assert_int_equal(sscanf(s + 2 * i, "%2x", &b), 1);
        out[i] = (uint8_t)b;
    }
    return n;
}

/* A state and its arrays, filled from a vector frame's JSON. */
struct jstate {
    struct proto_v2_state st;
    uint16_t qx[MAX_VBOIDS], qy[MAX_VBOIDS];
    uint8_t heading[MAX_VBOIDS], group[MAX_VBOIDS];
    struct proto_obstacle obstacles[8];
    struct proto_target targets[8];
};

static void state_from_json(const cJSON *frame, struct jstate *j)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(frame, "header"), *item;
    memset(j, 0, sizeof *j);
    j->st = (struct proto_v2_state){.seq = (uint32_t)num(h, "seq"),
                                    .tick = (uint64_t)num(h, "tick"),
                                    .server_time_us = (uint64_t)num(h, "server_time_us"),
                                    .sim_hash = hex64(h, "sim_hash"),
                                    .state_hash = hex64(h, "state_hash"),
                                    .width = (float)num(h, "width"),
                                    .height = (float)num(h, "height"),
                                    .epoch = (uint32_t)num(h, "epoch"),
                                    .flags = (uint8_t)num(h, "flags"),
                                    .qx = j->qx,
                                    .qy = j->qy,
                                    .heading = j->heading,
                                    .group = j->group,
                                    .obstacles = j->obstacles,
                                    .targets = j->targets};
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(frame, "boids"))
    {
        uint32_t i = j->st.count++;
        assert_true(i < MAX_VBOIDS);
        j->qx[i] = (uint16_t)num(item, "qx");
        j->qy[i] = (uint16_t)num(item, "qy");
        j->heading[i] = (uint8_t)num(item, "heading");
        j->group[i] = (uint8_t)num(item, "group");
    }
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(frame, "obstacles"))
    {
        j->obstacles[j->st.obstacle_count++] =
            (struct proto_obstacle){(uint32_t)num(item, "id"), (float)num(item, "x"),
                                    (float)num(item, "y"), (float)num(item, "r")};
    }
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(frame, "targets"))
    {
        j->targets[j->st.target_count++] = (struct proto_target){
            (uint8_t)num(item, "group"), (float)num(item, "x"), (float)num(item, "y")};
    }
}

static void assert_same_state(const struct proto_v2_state *got, const struct proto_v2_state *want)
{
    assert_int_equal(got->seq, want->seq);
    assert_true(got->tick == want->tick && got->server_time_us == want->server_time_us);
    assert_true(got->sim_hash == want->sim_hash && got->state_hash == want->state_hash);
    assert_true(got->width == want->width && got->height == want->height);
    assert_int_equal(got->epoch, want->epoch);
    assert_int_equal(got->flags, want->flags);
    assert_int_equal(got->count, want->count);
    assert_memory_equal(got->qx, want->qx, want->count * sizeof *want->qx);
    assert_memory_equal(got->qy, want->qy, want->count * sizeof *want->qy);
    assert_memory_equal(got->heading, want->heading, want->count);
    assert_memory_equal(got->group, want->group, want->count);
    assert_int_equal(got->obstacle_count, want->obstacle_count);
    for (uint32_t k = 0; k < want->obstacle_count; k++)
        assert_memory_equal(&got->obstacles[k], &want->obstacles[k], sizeof want->obstacles[k]);
    assert_int_equal(got->target_count, want->target_count);
    for (uint32_t k = 0; k < want->target_count; k++) {
        assert_int_equal(got->targets[k].group, want->targets[k].group);
        assert_true(got->targets[k].x == want->targets[k].x);
        assert_true(got->targets[k].y == want->targets[k].y);
    }
}

/* ---- golden vectors ------------------------------------------------------ */

static const cJSON *frame_of_seq(const cJSON *frames, double seq)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, frames)
    {
        if (num(cJSON_GetObjectItemCaseSensitive(f, "header"), "seq") == seq)
            return f;
    }
    fail_msg("no frame of seq %g", seq);
    return NULL;
}

/* Re-encodes a vector frame from its JSON (and its bases' JSON). */
static size_t encode_vector_frame(struct proto_v2_encoder *e, const cJSON *frames,
                                  const cJSON *frame, uint8_t *out)
{
    static struct jstate s, b1, b0;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(frame, "header");
    const cJSON *base1 = cJSON_GetObjectItemCaseSensitive(h, "base1");
    const cJSON *base0 = cJSON_GetObjectItemCaseSensitive(h, "base0");
    state_from_json(frame, &s);
    if (cJSON_IsNumber(base1))
        state_from_json(frame_of_seq(frames, base1->valuedouble), &b1);
    if (cJSON_IsNumber(base0))
        state_from_json(frame_of_seq(frames, base0->valuedouble), &b0);
    proto_v2_state_seal(&s.st);
    assert_true(s.st.state_hash == hex64(h, "state_hash"));
    ptrdiff_t n = proto_v2_encode(e, &s.st, cJSON_IsNumber(base1) ? &b1.st : NULL,
                                  cJSON_IsNumber(base0) ? &b0.st : NULL, out, MAX_VFRAME);
    assert_true(n > 0);
    return (size_t)n;
}

static void check_stream(const char *name)
{
    char file[64];
    snprintf(file, sizeof file, "%s.json", name);
    cJSON *json = read_json(file);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(json, "frames"), *f;
    struct proto_v2_decoder *d = proto_v2_decoder_create(MAX_VBOIDS, 8, NULL);
    struct proto_v2_encoder *e = proto_v2_encoder_create(MAX_VBOIDS, NULL);
    assert_non_null(d);
    assert_non_null(e);
    cJSON_ArrayForEach(f, frames)
    {
        uint8_t bin[MAX_VFRAME], again[MAX_VFRAME];
        static struct jstate want;
        size_t n =
            read_file(cJSON_GetObjectItemCaseSensitive(f, "bin")->valuestring, bin, sizeof bin);
        const struct proto_v2_header *hp;
        struct proto_v2_header h;
        const struct proto_v2_state *got;
        assert_int_equal(n, num(cJSON_GetObjectItemCaseSensitive(f, "header"), "size"));
        assert_int_equal(proto_v2_decode_header(bin, n, &h), 0);
        hp = &h;
        assert_int_equal(hp->plain_len,
                         num(cJSON_GetObjectItemCaseSensitive(f, "header"), "plain_len"));
        assert_int_equal(proto_v2_decode(d, bin, n, &got), 0);
        state_from_json(f, &want);
        assert_same_state(got, &want.st);
        assert_int_equal(encode_vector_frame(e, frames, f, again), n);
        assert_memory_equal(again, bin, n);
    }
    proto_v2_decoder_destroy(d);
    proto_v2_encoder_destroy(e);
    cJSON_Delete(json);
}

static void the_basic_stream_should_decode_and_encode_to_its_vectors(void **state)
{
    (void)state;
    check_stream("basic");
}

static void the_epoch_stream_should_decode_and_encode_to_its_vectors(void **state)
{
    (void)state;
    check_stream("epoch");
}

static void every_invalid_vector_should_be_refused_with_its_code(void **state)
{
    (void)state;
    cJSON *cases = read_json("invalid.json");
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        struct proto_v2_decoder *d = proto_v2_decoder_create(MAX_VBOIDS, 8, NULL);
        const cJSON *b;
        const struct proto_v2_state *got = NULL;
        uint8_t buf[MAX_VFRAME];
        cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(c, "before"))
        {
            size_t n = read_file(b->valuestring, buf, sizeof buf);
            assert_int_equal(proto_v2_decode(d, buf, n, &got), 0);
        }
        size_t n = unhex(cJSON_GetObjectItemCaseSensitive(c, "hex")->valuestring, buf, sizeof buf);
        const struct proto_v2_state *kept = got;
        int rc = proto_v2_decode(d, buf, n, &got);
        const char *want = cJSON_GetObjectItemCaseSensitive(c, "error")->valuestring;
        if (strcmp(proto_status_name(rc), want) != 0)
            fail_msg("%s: %s, expected %s",
                     cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                     proto_status_name(rc), want);
        assert_ptr_equal(got, kept); /* *out untouched */
        proto_v2_decoder_destroy(d);
    }
    cJSON_Delete(cases);
}

static void a_refused_frame_should_leave_the_bases_as_they_were(void **state)
{
    (void)state;
    uint8_t buf[MAX_VFRAME];
    const struct proto_v2_state *got;
    struct proto_v2_decoder *d = proto_v2_decoder_create(MAX_VBOIDS, 8, NULL);
    for (int k = 1; k <= 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "basic_%d.bin", k);
        assert_int_equal(proto_v2_decode(d, buf, read_file(name, buf, sizeof buf), &got), 0);
    }
    size_t n = read_file("basic_3.bin", buf, sizeof buf);
    struct proto_v2_header h;
    assert_int_equal(proto_v2_decode_header(buf, n, &h), 0);
    for (size_t at = n - h.packed_len; at < n; at++) { /* corrupt the body, then retry intact */
        buf[at] ^= 0x55;
        assert_int_not_equal(proto_v2_decode(d, buf, n, &got), 0);
        buf[at] ^= 0x55;
    }
    assert_true(proto_v2_decoder_has(d, 1) && proto_v2_decoder_has(d, 2));
    assert_false(proto_v2_decoder_has(d, 3));
    assert_int_equal(proto_v2_decode(d, buf, n, &got), 0);
    assert_int_equal(got->seq, 3);
    proto_v2_decoder_destroy(d);
}

/* ---- the definitions of §11.4 and §11.6 ---------------------------------- */

static void the_octant_table_should_be_the_rounded_arctangent_far_from_ties(void **state)
{
    (void)state;
    cJSON *index = read_json("index.json");
    const cJSON *table = cJSON_GetObjectItemCaseSensitive(index, "octant_turns");
    assert_int_equal(cJSON_GetArraySize(table), 257);
    for (unsigned t = 0; t <= 256; t++) {
        double v = atan(t / 256.0) * 32768.0 / 3.141592653589793;
        assert_true(fabs(v - floor(v) - 0.5) > 1e-3);
        assert_int_equal(pv2_octant_turns(t), (unsigned)floor(v + 0.5));
        assert_int_equal(pv2_octant_turns(t), cJSON_GetArrayItem(table, (int)t)->valueint);
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(index, "heading_of"))
    {
        assert_int_equal(proto_v2_heading_of((int32_t)num(c, "x"), (int32_t)num(c, "y")),
                         num(c, "heading"));
    }
    cJSON_Delete(index);
}

static void the_integer_heading_should_be_within_a_step_of_atan2(void **state)
{
    (void)state;
    assert_int_equal(proto_v2_heading_of(100, 0), 0);
    assert_int_equal(proto_v2_heading_of(0, 100), 64);
    assert_int_equal(proto_v2_heading_of(-100, 0), 128);
    assert_int_equal(proto_v2_heading_of(0, -100), 192);
    assert_int_equal(proto_v2_heading_of(7, 7), 32);
    assert_int_equal(proto_v2_heading_of(1, -1000000), 192);
    uint32_t r = 7;
    for (int k = 0; k < 200000; k++) {
        r = r * 1664525u + 1013904223u;
        int32_t x = (int32_t)(r >> 8) - (1 << 23);
        r = r * 1664525u + 1013904223u;
        int32_t y = (int32_t)(r >> 8) - (1 << 23);
        if (!x && !y)
            continue;
        double exact = atan2(y, x) * 128.0 / 3.141592653589793;
        int h = proto_v2_heading_of(x, y);
        double diff = fmod(h - exact + 512.0, 256.0);
        assert_true(diff < 0.6 || diff > 255.4); /* rounding, and t to 1/256 */
    }
}

static void uneven_extrapolation_should_equal_integer_floor_division(void **state)
{
    (void)state;
    struct proto_v2_state b1 = {0}, b0 = {0};
    for (int g1 = 1; g1 <= 255; g1 += 1) {
        for (int g0 = 1; g0 <= 255; g0 += (g1 % 17) + 1) {
            struct pv2_bases b;
            pv2_bases_init(&b, 1.0f, 1.0f, &b1, &b0, (uint8_t)g1, (uint8_t)g0);
            for (int32_t d = -32768; d <= 32767; d += g1 <= 4 && g0 <= 4 ? 1 : 97) {
                int64_t num = 2 * (int64_t)d * g1 + g0, den = 2 * (int64_t)g0;
                int64_t q = num / den - ((num % den != 0) && (num < 0));
                assert_int_equal(pv2_extrapolate(&b, 1000, d), (uint16_t)(1000 + q));
            }
        }
    }
}

/* MurmurHash3_x86_32 of a byte string, written from the reference. */
static uint32_t murmur3(const uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t h = seed;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
                     (uint32_t)p[i + 3] << 24;
        k *= 0xcc9e2d51u;
        k = k << 15 | k >> 17;
        k *= 0x1b873593u;
        h ^= k;
        h = h << 13 | h >> 19;
        h = h * 5 + 0xe6546b64u;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

static void the_state_hash_should_be_two_murmur3_lanes_of_eight_bytes_per_boid(void **state)
{
    (void)state;
    uint16_t qx[3] = {1, 65535, 300}, qy[3] = {2, 0, 40000};
    uint8_t heading[3] = {3, 255, 128}, group[3] = {0, 0, 7}, bytes[24] = {0};
    struct proto_v2_state s = {.count = 3, .qx = qx, .qy = qy, .heading = heading, .group = group};
    for (int i = 0; i < 3; i++) {
        bytes[8 * i] = (uint8_t)qx[i], bytes[8 * i + 1] = (uint8_t)(qx[i] >> 8);
        bytes[8 * i + 2] = (uint8_t)qy[i], bytes[8 * i + 3] = (uint8_t)(qy[i] >> 8);
        bytes[8 * i + 4] = heading[i], bytes[8 * i + 5] = group[i];
    }
    uint64_t want = (uint64_t)murmur3(bytes, 24, 1) << 32 | murmur3(bytes, 24, 0);
    assert_true(proto_v2_state_hash(&s) == want);
    s.count = 0;
    assert_true(proto_v2_state_hash(&s) ==
                ((uint64_t)murmur3(bytes, 0, 1) << 32 | murmur3(bytes, 0, 0)));
    s.count = 3;
    heading[2] = 129; /* one field of one boid changes both halves */
    uint64_t other = proto_v2_state_hash(&s);
    assert_true((uint32_t)other != (uint32_t)want && (other >> 32) != (want >> 32));
}

/* ---- random flocks through every kind ----------------------------------- */

struct flock {
    uint32_t n;
    uint16_t *qx, *qy;
    uint8_t *heading, *group;
    struct proto_v2_state st;
};

static void flock_alloc(struct flock *f, uint32_t n)
{
    f->n = n;
    f->qx = calloc(n, 2), f->qy = calloc(n, 2), f->heading = calloc(n, 1), f->group = calloc(n, 1);
    assert_true(f->qx && f->qy && f->heading && f->group);
}

static void flock_free(struct flock *f)
{
    free(f->qx), free(f->qy), free(f->heading), free(f->group);
}

/* Boids with velocities and noise; `wild` makes every tenth jump anywhere. */
static void flock_state(struct flock *f, uint32_t seq, int wild, uint32_t *rng)
{
    for (uint32_t i = 0; i < f->n; i++) {
        *rng = *rng * 1664525u + 1013904223u;
        int32_t vx = (int32_t)(i % 61) - 30, vy = (int32_t)(i % 47) - 23;
        int32_t noise = (int32_t)(*rng >> 28) - 8;
        f->qx[i] = (uint16_t)(i * 977u + (uint32_t)(vx * (int32_t)seq * 40) + (uint32_t)noise);
        f->qy[i] = (uint16_t)(i * 331u + (uint32_t)(vy * (int32_t)seq * 40) - (uint32_t)noise);
        f->heading[i] = (uint8_t)(i * 13u + seq * (i % 5) + (uint32_t)(noise & 3));
        if (wild && (*rng >> 8) % 10 == 0)
            f->qx[i] = (uint16_t)(*rng >> 7), f->qy[i] = (uint16_t)(*rng >> 3),
            f->heading[i] = (uint8_t)(*rng >> 13);
        f->group[i] = (uint8_t)(i * 5 / f->n);
    }
    f->st = (struct proto_v2_state){.seq = seq,
                                    .tick = seq * 3u,
                                    .width = 1600.0f,
                                    .height = 1000.0f,
                                    .epoch = 9,
                                    .flags = PROTO_SNAPSHOT_FLAG_WRAP,
                                    .count = f->n,
                                    .qx = f->qx,
                                    .qy = f->qy,
                                    .heading = f->heading,
                                    .group = f->group};
    proto_v2_state_seal(&f->st);
}

static void random_flocks_should_survive_every_frame_kind(void **state)
{
    (void)state;
    enum { N = 3000, SEQS = 12 };
    static const uint8_t gaps[][2] = {{0, 0}, {1, 0}, {1, 1}, {2, 2},
                                      {1, 2}, {2, 1}, {3, 5}, {5, 0}};
    struct flock f[SEQS + 1];
    uint32_t rng = 1;
    size_t cap = proto_v2_frame_max_size(N, 5, 0, 0);
    uint8_t *buf = malloc(cap);
    struct proto_v2_encoder *e = proto_v2_encoder_create(N, NULL);
    assert_non_null(buf);
    for (int wild = 0; wild <= 1; wild++) {
        for (uint32_t s = 1; s <= SEQS; s++) {
            flock_alloc(&f[s], N);
            flock_state(&f[s], s, wild, &rng);
        }
        for (size_t k = 0; k < sizeof gaps / sizeof gaps[0]; k++) {
            uint32_t s = SEQS, b1 = s - gaps[k][0], b0 = b1 - gaps[k][1];
            struct proto_v2_decoder *d = proto_v2_decoder_create(N, 0, NULL);
            const struct proto_v2_state *got;
            const uint32_t bases[2] = {gaps[k][1] ? b0 : 0, gaps[k][0] ? b1 : 0};
            for (int j = 0; j < 2; j++) { /* the decoder gets the bases as key frames */
                if (!bases[j])
                    continue;
                ptrdiff_t n = proto_v2_encode(e, &f[bases[j]].st, NULL, NULL, buf, cap);
                assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), 0);
            }
            ptrdiff_t n = proto_v2_encode(e, &f[s].st, gaps[k][0] ? &f[b1].st : NULL,
                                          gaps[k][1] ? &f[b0].st : NULL, buf, cap);
            assert_true(n > 0 && (size_t)n <= cap);
            assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), 0);
            assert_memory_equal(got->qx, f[s].qx, 2 * N);
            assert_memory_equal(got->qy, f[s].qy, 2 * N);
            assert_memory_equal(got->heading, f[s].heading, N);
            assert_memory_equal(got->group, f[s].group, N);
            proto_v2_decoder_destroy(d);
        }
        for (uint32_t s = 1; s <= SEQS; s++)
            flock_free(&f[s]);
    }
    proto_v2_encoder_destroy(e);
    free(buf);
}

static void incompressible_frames_should_fit_the_announced_maximum(void **state)
{
    (void)state;
    enum { N = 5000 };
    struct flock a, b, c;
    uint32_t rng = 42;
    flock_alloc(&a, N), flock_alloc(&b, N), flock_alloc(&c, N);
    flock_state(&a, 1, 1, &rng), flock_state(&b, 2, 1, &rng), flock_state(&c, 3, 1, &rng);
    for (uint32_t i = 0; i < N; i++) { /* every residual an exception */
        rng = rng * 1664525u + 1013904223u;
        c.qx[i] = (uint16_t)(rng >> 5), c.qy[i] = (uint16_t)(rng >> 11) | 0x8000u;
        c.heading[i] = (uint8_t)(rng >> 24);
    }
    proto_v2_state_seal(&c.st);
    size_t cap = proto_v2_frame_max_size(N, 5, 0, 0);
    uint8_t *buf = malloc(cap);
    struct proto_v2_encoder *e = proto_v2_encoder_create(N, NULL);
    ptrdiff_t n = proto_v2_encode(e, &c.st, &b.st, &a.st, buf, cap);
    assert_true(n > 0 && (size_t)n <= cap);
    struct proto_v2_header h;
    assert_int_equal(proto_v2_decode_header(buf, (size_t)n, &h), 0);
    assert_true(h.plain_len > 6 * N); /* nearly all escaped */
    assert_int_equal(proto_v2_encode(e, &c.st, &b.st, &a.st, buf, (size_t)n - 1), PROTO_E_NOSPACE);
    proto_v2_encoder_destroy(e);
    free(buf);
    flock_free(&a), flock_free(&b), flock_free(&c);
}

/* ---- encoder refusals, decoder limits and history ------------------------ */

static void the_encoder_should_refuse_what_the_format_cannot_carry(void **state)
{
    (void)state;
    struct flock a, b;
    uint32_t rng = 3;
    flock_alloc(&a, 100), flock_alloc(&b, 100);
    flock_state(&a, 1, 0, &rng), flock_state(&b, 2, 0, &rng);
    uint8_t buf[2048];
    struct proto_v2_encoder *e = proto_v2_encoder_create(100, NULL), *small;
    assert_null(proto_v2_encoder_create(0, NULL));
    const char *err = NULL;
    assert_null(proto_v2_decoder_create(4194305, 0, &err));
    assert_non_null(err);
    assert_int_equal(proto_v2_encode(e, &b.st, NULL, &a.st, buf, sizeof buf), PROTO_E_UNENCODABLE);
    a.st.seq = 2; /* gap 0 */
    assert_int_equal(proto_v2_encode(e, &b.st, &a.st, NULL, buf, sizeof buf), PROTO_E_UNENCODABLE);
    a.st.seq = 2u - 256u; /* gap 256 */
    assert_int_equal(proto_v2_encode(e, &b.st, &a.st, NULL, buf, sizeof buf), PROTO_E_UNENCODABLE);
    a.st.seq = 1, a.st.epoch = 8; /* another epoch */
    assert_int_equal(proto_v2_encode(e, &b.st, &a.st, NULL, buf, sizeof buf), PROTO_E_UNENCODABLE);
    a.st.epoch = 9, b.group[50] = 0; /* groups not ascending */
    assert_int_equal(proto_v2_encode(e, &b.st, NULL, NULL, buf, sizeof buf), PROTO_E_UNENCODABLE);
    b.group[50] = 2, b.st.flags = 0x80;
    assert_int_equal(proto_v2_encode(e, &b.st, NULL, NULL, buf, sizeof buf), PROTO_E_UNENCODABLE);
    b.st.flags = 0;
    assert_true(proto_v2_encode(e, &b.st, &a.st, NULL, buf, sizeof buf) > 0);
    assert_int_equal(proto_v2_encode(e, &b.st, &a.st, NULL, buf, 10), PROTO_E_NOSPACE);
    small = proto_v2_encoder_create(99, NULL);
    assert_int_equal(proto_v2_encode(small, &b.st, NULL, NULL, buf, sizeof buf),
                     PROTO_E_UNENCODABLE);
    proto_v2_encoder_destroy(small);
    proto_v2_encoder_destroy(e);
    flock_free(&a), flock_free(&b);
}

static void a_decoder_should_hold_the_last_four_states_and_forget_on_request(void **state)
{
    (void)state;
    struct flock f[8];
    uint32_t rng = 5;
    uint8_t buf[4096];
    const struct proto_v2_state *got;
    struct proto_v2_encoder *e = proto_v2_encoder_create(100, NULL);
    struct proto_v2_decoder *d = proto_v2_decoder_create(100, 0, NULL), *tiny;
    for (uint32_t s = 1; s <= 7; s++) {
        flock_alloc(&f[s], 100);
        flock_state(&f[s], s, 0, &rng);
        ptrdiff_t n =
            proto_v2_encode(e, &f[s].st, s > 1 ? &f[s - 1].st : NULL, NULL, buf, sizeof buf);
        assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), 0);
    }
    for (uint32_t s = 1; s <= 7; s++)
        assert_int_equal(proto_v2_decoder_has(d, s), s >= 4);
    ptrdiff_t n = proto_v2_encode(e, &f[7].st, &f[3].st, NULL, buf, sizeof buf);
    assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), PROTO_E_NO_BASE);
    n = proto_v2_encode(e, &f[7].st, &f[4].st, NULL, buf, sizeof buf);
    assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), 0);
    proto_v2_decoder_forget(d);
    assert_false(proto_v2_decoder_has(d, 7));
    assert_int_equal(proto_v2_decode(d, buf, (size_t)n, &got), PROTO_E_NO_BASE);
    tiny = proto_v2_decoder_create(99, 0, NULL); /* fewer boids than the frame */
    n = proto_v2_encode(e, &f[7].st, NULL, NULL, buf, sizeof buf);
    assert_int_equal(proto_v2_decode(tiny, buf, (size_t)n, &got), PROTO_E_OVER_LIMIT);
    proto_v2_decoder_destroy(tiny);
    proto_v2_decoder_destroy(d);
    proto_v2_encoder_destroy(e);
    for (uint32_t s = 1; s <= 7; s++)
        flock_free(&f[s]);
}

/* ---- the plan for many clients ------------------------------------------- */

static void the_plan_should_offer_deltas_the_room_can_encode_in_order(void **state)
{
    (void)state;
    struct proto_v2_plan p;
    proto_v2_plan(100, 0, 4, &p); /* epoch just changed: a key frame only */
    assert_int_equal(p.count, 1);
    assert_int_equal(p.frame[0].gap1, 0);
    proto_v2_plan(100, 1, 4, &p);
    assert_int_equal(p.count, 2);
    assert_true(p.frame[1].gap1 == 1 && p.frame[1].gap0 == 0);
    proto_v2_plan(100, 4, 3, &p);
    assert_int_equal(p.count, 4);
    assert_true(p.frame[1].gap1 == 1 && p.frame[1].gap0 == 1);
    assert_true(p.frame[2].gap1 == 2 && p.frame[2].gap0 == 2);
    assert_true(p.frame[3].gap1 == 1 && p.frame[3].gap0 == 2);
    proto_v2_plan(100, 4, 99, &p); /* the kinds whose bases lie within 4 */
    assert_int_equal(p.count, 11);
    for (unsigned k = 1; k < p.count; k++)
        assert_true(p.frame[k].gap1 + p.frame[k].gap0 <= 4);
    proto_v2_plan(100, PROTO_V2_PLAN_REACH, 99, &p); /* every pair of gaps 1..4, then one base */
    assert_int_equal(p.count, PROTO_V2_PLAN_MAX);
    for (unsigned k = 1; k < p.count; k++) {
        assert_true(p.frame[k].gap1 >= 1 && p.frame[k].gap1 <= 4 && p.frame[k].gap0 <= 4);
        assert_true(k < 17 ? p.frame[k].gap0 >= 1 : p.frame[k].gap0 == 0);
        for (unsigned j = 1; j < k; j++)
            assert_false(p.frame[j].gap1 == p.frame[k].gap1 && p.frame[j].gap0 == p.frame[k].gap0);
    }
    proto_v2_plan(100, 4, 0, &p);
    assert_int_equal(p.count, 1);
}

static void each_client_should_get_a_frame_whose_bases_it_was_sent(void **state)
{
    (void)state;
    struct proto_v2_plan p;
    proto_v2_plan(100, 4, 3, &p);
    const uint32_t keeps_up[] = {99, 98, 97, 96}, every_other[] = {98, 96, 94, 92},
                   skipped_one[] = {99, 97, 96, 95}, fresh[] = {99}, late[] = {90, 89, 88, 87},
                   old_news[] = {97, 96, 95, 94, 99, 98};
    assert_int_equal(proto_v2_pick(&p, keeps_up, 4), 1);
    assert_int_equal(proto_v2_pick(&p, every_other, 4), 2);
    assert_int_equal(proto_v2_pick(&p, skipped_one, 4), 3);
    assert_int_equal(proto_v2_pick(&p, fresh, 1), 0);
    assert_int_equal(proto_v2_pick(&p, late, 4), 0);
    assert_int_equal(proto_v2_pick(&p, NULL, 0), 0);
    assert_int_equal(proto_v2_pick(&p, old_news, 6), 0); /* only the newest four count */
    proto_v2_plan(100, 1, 3, &p);
    assert_int_equal(proto_v2_pick(&p, fresh, 1), 1);
    /* With every kind: clients served irregularly get a delta on two of
     * the frames they hold, the nearest pair the plan offers. */
    proto_v2_plan(100, PROTO_V2_PLAN_REACH, PROTO_V2_PLAN_MAX - 1, &p);
    const uint32_t two_three[] = {98, 95, 93, 90}, three_two[] = {97, 95, 92, 90},
                   far_behind[] = {96, 92, 88, 84}, alone[] = {97}, fell_away[] = {95, 91};
    const struct {
        const uint32_t *sent;
        size_t n;
        uint8_t gap1, gap0;
    } cases[] = {{two_three, 4, 2, 3},
                 {three_two, 4, 3, 2},
                 {far_behind, 4, 4, 4},
                 {alone, 1, 3, 0},
                 {fell_away, 2, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned k = proto_v2_pick(&p, cases[i].sent, cases[i].n);
        assert_int_equal(p.frame[k].gap1, cases[i].gap1);
        assert_int_equal(p.frame[k].gap0, cases[i].gap0);
    }
}

static void status_names_should_stay_distinct_with_the_v2_codes(void **state)
{
    (void)state;
    for (int a = 0; a >= PROTO_E_HASH_MISMATCH; a--) {
        if (strcmp(proto_status_name(a), "unknown") == 0)
            continue;
        for (int b = 0; b > a; b--)
            assert_string_not_equal(proto_status_name(a), proto_status_name(b));
    }
    assert_string_equal(proto_status_name(PROTO_E_NO_BASE), "no_base");
    assert_string_equal(proto_status_name(PROTO_E_BAD_BODY), "bad_body");
    assert_string_equal(proto_status_name(PROTO_E_HASH_MISMATCH), "hash_mismatch");
    assert_false(proto_status_is_wire(PROTO_E_NO_BASE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_basic_stream_should_decode_and_encode_to_its_vectors),
        cmocka_unit_test(the_epoch_stream_should_decode_and_encode_to_its_vectors),
        cmocka_unit_test(every_invalid_vector_should_be_refused_with_its_code),
        cmocka_unit_test(a_refused_frame_should_leave_the_bases_as_they_were),
        cmocka_unit_test(the_octant_table_should_be_the_rounded_arctangent_far_from_ties),
        cmocka_unit_test(the_integer_heading_should_be_within_a_step_of_atan2),
        cmocka_unit_test(uneven_extrapolation_should_equal_integer_floor_division),
        cmocka_unit_test(the_state_hash_should_be_two_murmur3_lanes_of_eight_bytes_per_boid),
        cmocka_unit_test(random_flocks_should_survive_every_frame_kind),
        cmocka_unit_test(incompressible_frames_should_fit_the_announced_maximum),
        cmocka_unit_test(the_encoder_should_refuse_what_the_format_cannot_carry),
        cmocka_unit_test(a_decoder_should_hold_the_last_four_states_and_forget_on_request),
        cmocka_unit_test(the_plan_should_offer_deltas_the_room_can_encode_in_order),
        cmocka_unit_test(each_client_should_get_a_frame_whose_bases_it_was_sent),
        cmocka_unit_test(status_names_should_stay_distinct_with_the_v2_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
