/*
 * proto_snapshot.c — snapshot encoder and decoder (layout in PROTOCOL.md §4).
 *
 * Every multi-byte field is written and read byte by byte in little-endian
 * order (proto.h), so neither the host's endianness nor alignment matters.
 */
#include "proto_snapshot.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define PI          3.141592653589793 /* the double nearest pi, as JavaScript's Math.PI */
#define QUANTA      65536.0
#define KNOWN_FLAGS (PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP)

/* Header offsets (PROTOCOL.md §4.2). */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 2,
    OFF_TYPE = 3,
    OFF_FLAGS = 4,
    OFF_RESERVED = 5,
    OFF_RUNS = 6,
    OFF_TICK = 8,
    OFF_TIME = 16,
    OFF_WIDTH = 24,
    OFF_HEIGHT = 28,
    OFF_EPOCH = 32,
    OFF_BOIDS = 36,
    OFF_OBSTACLES = 40,
    OFF_TARGETS = 42,
};

/* ---- little-endian bytes (proto_get_le/proto_put_le, proto.h) ---------- */

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
    proto_put_le(p, v, 2);
    return p + 2;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    proto_put_le(p, v, 4);
    return p + 4;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    proto_put_le(p, v, 8);
    return p + 8;
}

static uint8_t *put_f32(uint8_t *p, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put_u32(p, bits);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)proto_get_le(p, 2);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)proto_get_le(p, 4);
}

static float get_f32(const uint8_t *p)
{
    uint32_t bits = get_u32(p);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* ---- quantization ------------------------------------------------------- */

uint16_t proto_quantize_pos(float v, float size)
{
    if (!(v > 0.0f))
        return 0;
    /* Exact in double for float inputs: v * 2^16 is exact and the quotient
     * of two floats is never within a double rounding of an integer unless
     * it is that integer, so floor() sees the true value. */
    double q = floor((double)v * QUANTA / (double)size);
    if (!(q >= 0.0))
        return 0;
    return q >= QUANTA - 1.0 ? (uint16_t)65535 : (uint16_t)q;
}

uint8_t proto_quantize_heading(float vx, float vy)
{
    if (!isfinite(vx) || !isfinite(vy) || (vx == 0.0f && vy == 0.0f))
        return 0;
    long step = lround(atan2((double)vy, (double)vx) / PI * 128.0); /* -128..128 */
    return (uint8_t)((unsigned long)step & 255u);
}

double proto_dequantize_pos(uint16_t q, float size)
{
    return ((double)q + 0.5) * (double)size / QUANTA;
}

double proto_dequantize_heading(uint8_t h)
{
    return (double)h * PI / 128.0;
}

/* ---- the format's rules (PROTOCOL.md §4.6), for encoder and decoder ---- */

/* A world size: finite and > 0. */
static int size_ok(float v)
{
    return v > 0.0f && isfinite(v);
}

/* Obstacle k (prev: obstacle k - 1, NULL for the first): ids strictly
 * ascending from 1, finite, r > 0. */
static int obstacle_ok(const struct proto_obstacle *o, const struct proto_obstacle *prev)
{
    return o->id > (prev ? prev->id : 0) && isfinite(o->x) && isfinite(o->y) && isfinite(o->r) &&
           o->r > 0.0f;
}

/* Target k (prev: target k - 1, NULL for the first): groups strictly
 * ascending, finite. */
static int target_ok(const struct proto_target *t, const struct proto_target *prev)
{
    return (!prev || t->group > prev->group) && isfinite(t->x) && isfinite(t->y);
}

/* ---- encoding ----------------------------------------------------------- */

size_t proto_snapshot_size(uint32_t boids, uint32_t runs, uint32_t obstacles, uint32_t targets)
{
    /* In 64 bits: a hostile header's counts must not wrap a 32-bit size_t. */
    uint64_t total = PROTO_SNAPSHOT_HEADER_SIZE + (uint64_t)runs * PROTO_SNAPSHOT_RUN_SIZE +
                     (uint64_t)boids * PROTO_SNAPSHOT_BOID_SIZE +
                     (uint64_t)obstacles * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                     (uint64_t)targets * PROTO_SNAPSHOT_TARGET_SIZE;
    return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

size_t proto_snapshot_max_size(uint32_t capacity, uint32_t max_obstacles)
{
    uint32_t obstacles =
        max_obstacles > PROTO_SNAPSHOT_MAX_OBSTACLES ? PROTO_SNAPSHOT_MAX_OBSTACLES : max_obstacles;
    uint32_t runs = capacity < PROTO_SNAPSHOT_MAX_RUNS ? capacity : PROTO_SNAPSHOT_MAX_RUNS;
    return proto_snapshot_size(capacity, runs, obstacles, PROTO_SNAPSHOT_MAX_TARGETS);
}

/* Counts of a view, checked against the format's rules. */
struct plan {
    uint32_t runs;
    size_t size;
};

/* Counts group runs; fails if groups are not in ascending order. */
static int count_runs(const struct proto_snapshot_view *v, uint32_t *runs)
{
    *runs = v->count > 0;
    for (uint32_t i = 1; i < v->count; i++) {
        if (v->group[i] < v->group[i - 1])
            return PROTO_E_UNENCODABLE;
        *runs += v->group[i] != v->group[i - 1];
    }
    return 0;
}

static int check_obstacles(const struct proto_snapshot_view *v)
{
    if (v->obstacle_count > PROTO_SNAPSHOT_MAX_OBSTACLES)
        return PROTO_E_UNENCODABLE;
    for (uint32_t k = 0; k < v->obstacle_count; k++)
        if (!obstacle_ok(&v->obstacles[k], k ? &v->obstacles[k - 1] : NULL))
            return PROTO_E_UNENCODABLE;
    return 0;
}

static int check_targets(const struct proto_snapshot_view *v)
{
    if (v->target_count > PROTO_SNAPSHOT_MAX_TARGETS)
        return PROTO_E_UNENCODABLE;
    for (uint32_t k = 0; k < v->target_count; k++)
        if (!target_ok(&v->targets[k], k ? &v->targets[k - 1] : NULL))
            return PROTO_E_UNENCODABLE;
    return 0;
}

static int plan_view(const struct proto_snapshot_view *v, struct plan *p)
{
    if (!size_ok(v->width) || !size_ok(v->height))
        return PROTO_E_UNENCODABLE;
    int rc = count_runs(v, &p->runs);
    if (rc == 0)
        rc = check_obstacles(v);
    if (rc == 0)
        rc = check_targets(v);
    if (rc == 0)
        p->size = proto_snapshot_size(v->count, p->runs, v->obstacle_count, v->target_count);
    return rc;
}

static uint8_t *put_header(uint8_t *buf, const struct proto_snapshot_view *v, const struct plan *p)
{
    buf[OFF_MAGIC] = 'F';
    buf[OFF_MAGIC + 1] = 'K';
    buf[OFF_VERSION] = PROTO_VERSION;
    buf[OFF_TYPE] = PROTO_SNAPSHOT_TYPE;
    buf[OFF_FLAGS] = (uint8_t)((v->paused ? PROTO_SNAPSHOT_FLAG_PAUSED : 0u) |
                               (v->wrap ? PROTO_SNAPSHOT_FLAG_WRAP : 0u));
    buf[OFF_RESERVED] = 0;
    put_u16(buf + OFF_RUNS, (uint16_t)p->runs);
    put_u64(buf + OFF_TICK, v->tick);
    put_u64(buf + OFF_TIME, v->server_time_us);
    put_f32(buf + OFF_WIDTH, v->width);
    put_f32(buf + OFF_HEIGHT, v->height);
    put_u32(buf + OFF_EPOCH, v->epoch);
    put_u32(buf + OFF_BOIDS, v->count);
    put_u16(buf + OFF_OBSTACLES, (uint16_t)v->obstacle_count);
    put_u16(buf + OFF_TARGETS, (uint16_t)v->target_count);
    return buf + PROTO_SNAPSHOT_HEADER_SIZE;
}

static uint8_t *put_runs(uint8_t *p, const struct proto_snapshot_view *v)
{
    for (uint32_t i = 0; i < v->count;) {
        uint32_t end = i + 1;
        while (end < v->count && v->group[end] == v->group[i])
            end++;
        *p++ = v->group[i];
        p = put_u32(p, end - i);
        i = end;
    }
    return p;
}

static uint8_t *put_boids(uint8_t *p, const struct proto_snapshot_view *v)
{
    for (uint32_t i = 0; i < v->count; i++) {
        p = put_u16(p, proto_quantize_pos(v->x[i], v->width));
        p = put_u16(p, proto_quantize_pos(v->y[i], v->height));
        *p++ = proto_quantize_heading(v->vx[i], v->vy[i]);
    }
    return p;
}

static uint8_t *put_obstacles_targets(uint8_t *p, const struct proto_snapshot_view *v)
{
    for (uint32_t k = 0; k < v->obstacle_count; k++) {
        const struct proto_obstacle *o = &v->obstacles[k];
        p = put_u32(p, o->id);
        p = put_f32(p, o->x);
        p = put_f32(p, o->y);
        p = put_f32(p, o->r);
    }
    for (uint32_t k = 0; k < v->target_count; k++) {
        *p++ = v->targets[k].group;
        p = put_f32(p, v->targets[k].x);
        p = put_f32(p, v->targets[k].y);
    }
    return p;
}

ptrdiff_t proto_snapshot_encode(const struct proto_snapshot_view *view, uint8_t *buf, size_t cap)
{
    struct plan plan;
    int rc = plan_view(view, &plan);
    if (rc)
        return rc;
    if (!buf || plan.size > cap || plan.size > PTRDIFF_MAX)
        return PROTO_E_NOSPACE;
    uint8_t *p = put_header(buf, view, &plan);
    p = put_runs(p, view);
    p = put_boids(p, view);
    p = put_obstacles_targets(p, view);
    return p - buf;
}

/* ---- decoding ----------------------------------------------------------- */

static int check_header_bytes(const uint8_t *buf, size_t len)
{
    if (len < 4)
        return PROTO_E_TRUNCATED;
    if (buf[OFF_MAGIC] != 'F' || buf[OFF_MAGIC + 1] != 'K')
        return PROTO_E_BAD_MAGIC;
    if (buf[OFF_VERSION] != PROTO_VERSION)
        return PROTO_E_BAD_VERSION;
    if (buf[OFF_TYPE] != PROTO_SNAPSHOT_TYPE)
        return PROTO_E_BAD_TYPE;
    if (len < PROTO_SNAPSHOT_HEADER_SIZE)
        return PROTO_E_TRUNCATED;
    return 0;
}

static void read_header(const uint8_t *buf, struct proto_snapshot_header *h)
{
    h->version = buf[OFF_VERSION];
    h->type = buf[OFF_TYPE];
    h->flags = buf[OFF_FLAGS];
    h->run_count = get_u16(buf + OFF_RUNS);
    h->tick = proto_get_le(buf + OFF_TICK, 8);
    h->server_time_us = proto_get_le(buf + OFF_TIME, 8);
    h->width = get_f32(buf + OFF_WIDTH);
    h->height = get_f32(buf + OFF_HEIGHT);
    h->epoch = get_u32(buf + OFF_EPOCH);
    h->boid_count = get_u32(buf + OFF_BOIDS);
    h->obstacle_count = get_u16(buf + OFF_OBSTACLES);
    h->target_count = get_u16(buf + OFF_TARGETS);
}

static int header_values_ok(const uint8_t *buf, const struct proto_snapshot_header *h)
{
    return (h->flags & ~KNOWN_FLAGS) == 0 && buf[OFF_RESERVED] == 0 && size_ok(h->width) &&
           size_ok(h->height) && h->run_count <= PROTO_SNAPSHOT_MAX_RUNS &&
           h->target_count <= PROTO_SNAPSHOT_MAX_TARGETS;
}

int proto_snapshot_decode_header(const uint8_t *buf, size_t len, struct proto_snapshot_header *h)
{
    int rc = check_header_bytes(buf, len);
    if (rc)
        return rc;
    read_header(buf, h);
    if (!header_values_ok(buf, h))
        return PROTO_E_BAD_VALUE;
    size_t want =
        proto_snapshot_size(h->boid_count, h->run_count, h->obstacle_count, h->target_count);
    if (len < want)
        return PROTO_E_TRUNCATED;
    return len > want ? PROTO_E_BAD_LENGTH : 0;
}

static int fits(const struct proto_snapshot *s)
{
    return s->h.run_count <= s->runs_cap && s->h.boid_count <= s->boids_cap &&
           s->h.obstacle_count <= s->obstacles_cap && s->h.target_count <= s->targets_cap;
}

/* Runs: non-empty, strictly ascending groups, summing to boid_count. */
static const uint8_t *get_runs(const uint8_t *p, struct proto_snapshot *s, int *rc)
{
    uint64_t sum = 0;
    for (uint32_t k = 0; k < s->h.run_count; k++, p += PROTO_SNAPSHOT_RUN_SIZE) {
        struct proto_run *r = &s->runs[k];
        r->group = p[0];
        r->count = get_u32(p + 1);
        if (r->count == 0 || (k && r->group <= s->runs[k - 1].group))
            *rc = PROTO_E_BAD_VALUE;
        sum += r->count;
    }
    if (sum != s->h.boid_count)
        *rc = PROTO_E_BAD_VALUE;
    return p;
}

/* Boids: only called once the runs are known to sum to boid_count. */
static const uint8_t *get_boids(const uint8_t *p, struct proto_snapshot *s)
{
    uint32_t i = 0;
    for (uint32_t k = 0; k < s->h.run_count; k++) {
        for (uint32_t j = 0; j < s->runs[k].count; j++, i++, p += PROTO_SNAPSHOT_BOID_SIZE) {
            s->boids[i] = (struct proto_boid){
                .qx = get_u16(p), .qy = get_u16(p + 2), .heading = p[4], .group = s->runs[k].group};
        }
    }
    return p;
}

static const uint8_t *get_obstacles(const uint8_t *p, struct proto_snapshot *s, int *rc)
{
    for (uint32_t k = 0; k < s->h.obstacle_count; k++, p += PROTO_SNAPSHOT_OBSTACLE_SIZE) {
        struct proto_obstacle *o = &s->obstacles[k];
        *o = (struct proto_obstacle){
            .id = get_u32(p), .x = get_f32(p + 4), .y = get_f32(p + 8), .r = get_f32(p + 12)};
        if (!obstacle_ok(o, k ? &s->obstacles[k - 1] : NULL))
            *rc = PROTO_E_BAD_VALUE;
    }
    return p;
}

static void get_targets(const uint8_t *p, struct proto_snapshot *s, int *rc)
{
    for (uint32_t k = 0; k < s->h.target_count; k++, p += PROTO_SNAPSHOT_TARGET_SIZE) {
        struct proto_target *t = &s->targets[k];
        *t = (struct proto_target){.group = p[0], .x = get_f32(p + 1), .y = get_f32(p + 5)};
        if (!target_ok(t, k ? &s->targets[k - 1] : NULL))
            *rc = PROTO_E_BAD_VALUE;
    }
}

int proto_snapshot_decode(const uint8_t *buf, size_t len, struct proto_snapshot *out)
{
    int rc = proto_snapshot_decode_header(buf, len, &out->h);
    if (rc)
        return rc;
    if (!fits(out))
        return PROTO_E_OVER_LIMIT;
    /* The header check made len exactly the size of every section below. */
    const uint8_t *p = get_runs(buf + PROTO_SNAPSHOT_HEADER_SIZE, out, &rc);
    if (rc)
        return rc;
    p = get_boids(p, out);
    p = get_obstacles(p, out, &rc);
    get_targets(p, out, &rc);
    return rc;
}
