/*
 * gen_vectors — writes the golden snapshot vectors of proto/vectors.
 *
 *   gen_vectors DIR
 *
 * For each vector below it encodes the listed state with flockproto and
 * writes NAME.bin and NAME.json (the content in full: header fields, runs,
 * per-boid quantized and decoded values with the floats they came from,
 * obstacles, targets), then invalid.json (mutated snapshots every decoder
 * must refuse, with the code) and index.json.
 * commands.json is written by hand. Run it only when the format changes,
 * and review the diff: the vectors are the format's contract.
 */
#include "proto_snapshot.h"
#include "vecjson.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vboid {
    uint8_t group;
    float x, y, vx, vy;
};

struct vspec {
    const char *name, *description;
    float width, height;
    int wrap, paused;
    uint64_t tick, server_time_us;
    uint32_t epoch;
    const struct vboid *boids;
    size_t n_boids;
    const struct proto_obstacle *obstacles;
    size_t n_obstacles;
    const struct proto_target *targets;
    size_t n_targets;
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct vboid two_groups_boids[] = {
    {2, 100.25f, 200.5f, 30.0f, 40.0f},    {2, 800.0f, 500.0f, -10.0f, 0.0f},
    {2, 1599.5f, 999.75f, 0.0f, -25.0f},   {9, 0.1f, 0.2f, 1.0f, 1.0f},
    {9, 400.125f, 600.0625f, -3.0f, 4.0f}, {9, 1234.567f, 89.01f, 0.5f, -0.866f},
};
static const struct proto_obstacle two_groups_obstacles[] = {
    {1, 400.0f, 300.0f, 50.0f},
    {4, 1200.5f, 700.25f, 75.5f},
};
static const struct proto_target two_groups_targets[] = {
    {0, 800.0f, 500.0f},
    {2, 1000.0f, 500.0f},
    {9, 12.5f, 987.25f},
};

/* Odd world size; corners, centre and exact quantum boundaries; headings
 * on the axes, the diagonals and both sides of the +-pi seam. */
static const struct vboid edges_boids[] = {
    {0, 0.0f, 0.0f, 1.0f, 0.0f},
    {0, 1234.5f, 777.25f, 0.0f, 1.0f},
    {0, 617.25f, 388.625f, -1.0f, 0.0f},
    {0, 1234.4998779296875f, 0.0f, 0.0f, -1.0f},
    {0, 0.0565109253f, 777.2499389648438f, 1.0f, 1.0f},
    {0, 0.0565109216f, 0.0f, -1.0f, -1.0f},
    {0, 10.0f, 10.0f, 1.0f, -0.001f},
    {0, 20.0f, 20.0f, -1.0f, -0.000001f},
    {0, 30.0f, 30.0f, -1.0f, 0.0f},
    {0, 40.0f, 40.0f, -1.0f, -0.0f},
    {0, 50.0f, 50.0f, 0.0f, 0.0f},
    {0, 60.0f, 60.0f, 3.0f, -4.0f},
    {255, 1234.5f, 0.0f, 0.70710677f, 0.70710677f},
    {255, 0.0f, 777.25f, -0.5f, 0.8660254f},
};
static const struct proto_obstacle edges_obstacles[] = {{1, 0.0f, 0.0f, 1.0f}};
static const struct proto_target edges_targets[] = {{255, 1234.5f, 777.25f}};

static const struct vspec specs[] = {
    {"empty", "An empty world: header only.", 1600.0f, 1000.0f, 1, 0, 0, 1700000000000000ULL, 1,
     NULL, 0, NULL, 0, NULL, 0},
    {"two_groups",
     "Six boids in groups 2 and 9, two obstacles (ids 1 and 4), targets for groups 0, 2 and 9; "
     "paused, contained edges.",
     1600.0f, 1000.0f, 0, 1, 123456, 1700000000123456ULL, 7, two_groups_boids, N(two_groups_boids),
     two_groups_obstacles, N(two_groups_obstacles), two_groups_targets, N(two_groups_targets)},
    {"edges",
     "Odd world size 1234.5 x 777.25; boids on the world's edges and on quantum boundaries, "
     "headings on quadrant boundaries and around the +-pi seam, a zero velocity; group 255; "
     "large tick, epoch and time.",
     1234.5f, 777.25f, 1, 0, 4503599627370499ULL, 9007199254740991ULL, 4294967295u, edges_boids,
     N(edges_boids), edges_obstacles, N(edges_obstacles), edges_targets, N(edges_targets)},
};

static cJSON *header_json(const struct proto_snapshot_header *h, size_t size)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "magic", "FK");
    vecjson_add_num(o, "version", h->version);
    vecjson_add_num(o, "type", h->type);
    vecjson_add_header_fields(o, h);
    vecjson_add_num(o, "size", (double)size);
    return o;
}

static cJSON *boids_json(const struct vspec *s)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < s->n_boids; i++) {
        const struct vboid *b = &s->boids[i];
        uint16_t qx = proto_quantize_pos(b->x, s->width), qy = proto_quantize_pos(b->y, s->height);
        uint8_t h = proto_quantize_heading(b->vx, b->vy);
        cJSON *o = cJSON_CreateObject(), *src = cJSON_CreateObject();
        vecjson_add_num(o, "group", b->group);
        vecjson_add_num(o, "qx", qx);
        vecjson_add_num(o, "qy", qy);
        vecjson_add_num(o, "heading", h);
        vecjson_add_num(o, "x", proto_dequantize_pos(qx, s->width));
        vecjson_add_num(o, "y", proto_dequantize_pos(qy, s->height));
        vecjson_add_num(o, "heading_rad", proto_dequantize_heading(h));
        vecjson_add_num(src, "x", b->x);
        vecjson_add_num(src, "y", b->y);
        vecjson_add_num(src, "vx", b->vx);
        vecjson_add_num(src, "vy", b->vy);
        cJSON_AddItemToObject(o, "source", src);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Encodes one spec; returns the malloc'd bytes (caller frees) and their length. */
static uint8_t *encode_spec(const struct vspec *s, size_t *len)
{
    size_t n = s->n_boids ? s->n_boids : 1;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    float *vx = calloc(n, sizeof *vx), *vy = calloc(n, sizeof *vy);
    uint8_t *group = calloc(n, sizeof *group);
    size_t cap = proto_snapshot_max_size((uint32_t)s->n_boids, (uint32_t)s->n_obstacles);
    uint8_t *buf = malloc(cap);
    if (!x || !y || !vx || !vy || !group || !buf)
        vecjson_die(s->name, "out of memory");
    for (size_t i = 0; i < s->n_boids; i++) {
        x[i] = s->boids[i].x;
        y[i] = s->boids[i].y;
        vx[i] = s->boids[i].vx;
        vy[i] = s->boids[i].vy;
        group[i] = s->boids[i].group;
    }
    struct proto_snapshot_view v = {.tick = s->tick,
                                    .server_time_us = s->server_time_us,
                                    .epoch = s->epoch,
                                    .width = s->width,
                                    .height = s->height,
                                    .paused = s->paused,
                                    .wrap = s->wrap,
                                    .count = (uint32_t)s->n_boids,
                                    .x = x,
                                    .y = y,
                                    .vx = vx,
                                    .vy = vy,
                                    .group = group,
                                    .obstacle_count = (uint32_t)s->n_obstacles,
                                    .obstacles = s->obstacles,
                                    .target_count = (uint32_t)s->n_targets,
                                    .targets = s->targets};
    ptrdiff_t len_or_err = proto_snapshot_encode(&v, buf, cap);
    free(x);
    free(y);
    free(vx);
    free(vy);
    free(group);
    if (len_or_err < 0)
        vecjson_die(s->name, proto_status_name((int)len_or_err));
    *len = (size_t)len_or_err;
    return buf;
}

static void write_spec(const char *dir, const struct vspec *s)
{
    size_t len;
    uint8_t *bin = encode_spec(s, &len);
    struct proto_run runs[PROTO_SNAPSHOT_MAX_RUNS];
    struct proto_snapshot snap = {.runs = runs, .runs_cap = PROTO_SNAPSHOT_MAX_RUNS};
    if (proto_snapshot_decode_header(bin, len, &snap.h) != 0)
        vecjson_die(s->name, "does not decode");
    snap.boids = calloc(s->n_boids + 1, sizeof *snap.boids);
    snap.boids_cap = s->n_boids;
    snap.obstacles = calloc(s->n_obstacles + 1, sizeof *snap.obstacles);
    snap.obstacles_cap = s->n_obstacles;
    snap.targets = calloc(s->n_targets + 1, sizeof *snap.targets);
    snap.targets_cap = s->n_targets;
    if (proto_snapshot_decode(bin, len, &snap) != 0)
        vecjson_die(s->name, "does not decode");
    char file[256];
    snprintf(file, sizeof file, "%s.bin", s->name);
    vecjson_write_file(dir, file, bin, len);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "name", s->name);
    cJSON_AddStringToObject(doc, "description", s->description);
    cJSON_AddStringToObject(doc, "bin", file);
    cJSON *world = cJSON_AddObjectToObject(doc, "world");
    vecjson_add_num(world, "width", s->width);
    vecjson_add_num(world, "height", s->height);
    cJSON_AddStringToObject(world, "edges", s->wrap ? "wrap" : "contain");
    cJSON_AddItemToObject(doc, "header", header_json(&snap.h, len));
    uint8_t *group = calloc(s->n_boids + 1, 1);
    if (!group)
        vecjson_die(s->name, "out of memory");
    for (size_t i = 0; i < s->n_boids; i++)
        group[i] = s->boids[i].group;
    cJSON_AddItemToObject(doc, "runs", vecjson_runs(group, (uint32_t)s->n_boids));
    free(group);
    cJSON_AddItemToObject(doc, "boids", boids_json(s));
    vecjson_add_obstacles_targets(doc, s->obstacles, s->n_obstacles, s->targets, s->n_targets);
    snprintf(file, sizeof file, "%s.json", s->name);
    vecjson_write_json(dir, file, doc);
    free(snap.boids);
    free(snap.obstacles);
    free(snap.targets);
    free(bin);
}

/* ---- invalid snapshots -------------------------------------------------- */

struct mutation {
    const char *name, *description;
    int error;
    size_t at;     /* byte to overwrite (SIZE_MAX: none) */
    uint8_t value; /* new value of that byte */
    long resize;   /* bytes to add (> 0, zeros) or drop (< 0) at the end */
};

/* Offsets into two_groups.bin (143 bytes): header 0..43, runs at 44 and
 * 49, boids 54..83, obstacles at 84 and 100, targets at 116, 125, 134. */
static const struct mutation mutations[] = {
    {"empty", "no bytes at all", PROTO_E_TRUNCATED, SIZE_MAX, 0, -143},
    {"short_header", "the first 20 bytes", PROTO_E_TRUNCATED, SIZE_MAX, 0, -123},
    {"last_byte_missing", "one byte short", PROTO_E_TRUNCATED, SIZE_MAX, 0, -1},
    {"trailing_byte", "one byte too many", PROTO_E_BAD_LENGTH, SIZE_MAX, 0, 1},
    {"bad_magic", "magic 'GK'", PROTO_E_BAD_MAGIC, 0, 'G', 0},
    {"bad_version", "version 2", PROTO_E_BAD_VERSION, 2, 2, 0},
    {"bad_type", "type 2", PROTO_E_BAD_TYPE, 3, 2, 0},
    {"unknown_flag", "flag bit 7 set", PROTO_E_BAD_VALUE, 4, 0x83, 0},
    {"reserved_set", "reserved byte 5 is 1", PROTO_E_BAD_VALUE, 5, 1, 0},
    {"too_many_runs", "group_run_count 258", PROTO_E_BAD_VALUE, 7, 1, 0},
    {"nan_width", "width is a NaN", PROTO_E_BAD_VALUE, 27, 0x7F, 0},
    {"boid_count_too_big", "boid_count 7, body unchanged", PROTO_E_TRUNCATED, 36, 7, 0},
    {"runs_sum_short", "boid_count 7 and 5 more bytes: runs sum to 6", PROTO_E_BAD_VALUE, 36, 7, 5},
    {"runs_not_ascending", "second run's group is 2 again", PROTO_E_BAD_VALUE, 49, 2, 0},
    {"empty_run", "first run's count is 0", PROTO_E_BAD_VALUE, 45, 0, 0},
    {"obstacle_ids_not_ascending", "second obstacle id 1", PROTO_E_BAD_VALUE, 100, 1, 0},
    {"zero_obstacle_id", "first obstacle id 0", PROTO_E_BAD_VALUE, 84, 0, 0},
    {"negative_radius", "first obstacle's r is negative", PROTO_E_BAD_VALUE, 99, 0xC2, 0},
    {"nan_target", "first target's y is a NaN", PROTO_E_BAD_VALUE, 124, 0x7F, 0},
    {"targets_not_ascending", "second target's group is 0", PROTO_E_BAD_VALUE, 125, 0, 0},
};

/* Applies m to a copy of base; returns the mutated length. */
static size_t mutate(const uint8_t *base, size_t len, const struct mutation *m, uint8_t *out)
{
    size_t n = m->resize < 0 ? len - (size_t)-m->resize : len + (size_t)m->resize;
    memset(out, 0, n);
    memcpy(out, base, n < len ? n : len);
    if (m->at != SIZE_MAX)
        out[m->at] = m->value;
    return n;
}

static void write_invalid(const char *dir)
{
    size_t len;
    uint8_t *base = encode_spec(&specs[1], &len), buf[512];
    struct proto_run runs[PROTO_SNAPSHOT_MAX_RUNS];
    struct proto_boid boids[16];
    struct proto_obstacle obstacles[4];
    struct proto_target targets[4];
    if (len != 143)
        vecjson_die("invalid.json", "two_groups.bin changed size: update the offsets");
    cJSON *doc = cJSON_CreateArray();
    for (size_t k = 0; k < N(mutations); k++) {
        const struct mutation *m = &mutations[k];
        size_t n = mutate(base, len, m, buf);
        struct proto_snapshot s = {{0},       runs,         N(runs), boids,     N(boids),
                                   obstacles, N(obstacles), targets, N(targets)};
        if (proto_snapshot_decode(buf, n, &s) != m->error)
            vecjson_die(m->name, "decoder disagrees with the expected code");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->name);
        cJSON_AddStringToObject(o, "description", m->description);
        cJSON_AddItemToObject(o, "hex", vecjson_hex(buf, n));
        cJSON_AddStringToObject(o, "error", proto_status_name(m->error));
        cJSON_AddItemToArray(doc, o);
    }
    free(base);
    vecjson_write_json(dir, "invalid.json", doc);
}

static void write_index(const char *dir)
{
    cJSON *doc = cJSON_CreateObject();
    vecjson_add_num(doc, "protocol", PROTO_VERSION);
    cJSON *list = cJSON_AddArrayToObject(doc, "snapshots");
    for (size_t i = 0; i < N(specs); i++)
        cJSON_AddItemToArray(list, cJSON_CreateString(specs[i].name));
    cJSON_AddStringToObject(doc, "invalid_snapshots", "invalid.json");
    cJSON_AddStringToObject(doc, "commands", "commands.json");
    vecjson_write_json(dir, "index.json", doc);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_vectors DIR\n");
        return 2;
    }
    vecjson_set_program("gen_vectors");
    for (size_t i = 0; i < N(specs); i++)
        write_spec(argv[1], &specs[i]);
    write_invalid(argv[1]);
    write_index(argv[1]);
    return 0;
}
