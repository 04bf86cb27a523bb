/*
 * proto_snapshot.c — snapshot encoder and decoder (layout in PROTOCOL.md §4).
 *
 * Every multi-byte field is written and read byte by byte in little-endian
 * order (proto.h), so neither the host's endianness nor alignment matters.
 */
#include "proto_snapshot.h"

#include "bytes.h"
#include "proto_sections.h"

#include <math.h>
#include <stdbool.h>
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

/* ---- little-endian bytes (proto.h) ------------------------------------- */

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
    bytes_le_put(p, v, 2);
    return p + 2;
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)bytes_le_get(p, 2);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)bytes_le_get(p, 4);
}

/* ---- quantization ------------------------------------------------------- */

uint16_t proto_quantize_pos(float v, float size)
{
    if (!(v > 0.0f))
        return 0;
    /* Exact in double for float inputs: v * 2^16 is exact and the quotient
     * of two floats is never within a double rounding of an integer unless
     * it is that integer, so its floor (a truncation: it is not negative)
     * is the true value's. */
    double q = (double)v * QUANTA / (double)size;
    if (!(q >= 0.0))
        return 0;
    return q >= QUANTA - 1.0 ? (uint16_t)65535 : (uint16_t)(uint32_t)q;
}

/* tan((j + 0.5) pi / 128), j = 0..31: where the heading step changes
 * within the first octant (test_proto checks them against tan()). */
const double proto_heading_bounds[32] = {
    0.012272462379566276, 0.036832180994845636, 0.06143635258159376, 0.0861148511976279,
    0.11089791159591302,  0.1358162787093877,   0.16090136245348918, 0.1861853995275837,
    0.21170162402398335,  0.23748444881607017,  0.263569659899918,   0.2899946261126061,
    0.3167985269526038,   0.3440226015924263,   0.37171042261274345, 0.3999081985145372,
    0.4286651096994995,   0.4580336833706724,   0.48807021372286286, 0.5188352348999757,
    0.550394055537264,    0.5828173653349761,   0.616181926094866,   0.6505713620801533,
    0.6860770675448629,   0.7227992529642059,   0.7608481560702512,  0.8003454494993202,
    0.8414258840072547,   0.8842392152253498,   0.9289524733703675,  0.9757526499323765};

/*
 * The heading step round(atan2(vy, vx) / pi * 128) mod 256 without a
 * trigonometric function (a snapshot quantizes every boid): the octant's
 * ratio t = min / max in [0, 1] is placed among proto_heading_bounds (a
 * guess, then the bounds beside it), then mirrored into its octant. Only when t lies within
 * 1e-12 of a bound (where the rounded ratio and the rounded table could
 * disagree with atan2) does atan2() decide, so the result is always
 * atan2's.
 */
uint8_t proto_quantize_heading(float vx, float vy)
{
    if (!isfinite(vx) || !isfinite(vy) || (vx == 0.0f && vy == 0.0f))
        return 0;
    double x = fabs((double)vx), y = fabs((double)vy);
    bool steep = y > x;
    double t = (steep ? x : y) / (steep ? y : x);
    const double *b = proto_heading_bounds;
    /* Bounds at or below t: floor(atan(t) * 128 / pi + 0.5), first from
     * atan(t) ~ t (pi / 4 + 0.273 (1 - t)) (within 0.004 rad, a sixth of a
     * step), then set right by the bounds beside it. Written as selects,
     * not branches: the octants of a flock's velocities are a coin toss
     * each, and mispredicted branches took half the time. */
    unsigned j = (unsigned)(t * (32.0 + 11.1226 * (1.0 - t)) + 0.5);
    double above = j < 32 ? b[j] : 2.0, below = j > 0 ? b[j - 1] : -1.0;
    unsigned up = above <= t, down = below > t;
    j = j + up - (down & !up);
    above = j < 32 ? b[j] : 2.0, below = j > 0 ? b[j - 1] : -1.0;
    if (t - below < 1e-12 || above - t < 1e-12)
        return (uint8_t)((unsigned long)lround(atan2((double)vy, (double)vx) / PI * 128.0) & 255u);
    long step = steep ? 64 - (long)j : (long)j; /* 0..64 in the first quadrant */
    step = vx < 0.0f ? 128 - step : step;
    step = vy < 0.0f ? -step : step;
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

/* A world size: finite and > 0. */
static int size_ok(float v)
{
    return v > 0.0f && isfinite(v);
}

/* ---- encoding ----------------------------------------------------------- */

size_t proto_snapshot_size(uint32_t boids, uint32_t runs, uint32_t obstacles, uint32_t targets)
{
    /* In 64 bits: a hostile header's counts must not wrap a 32-bit size_t. */
    uint64_t total = PROTO_SNAPSHOT_HEADER_SIZE + (uint64_t)boids * PROTO_SNAPSHOT_BOID_SIZE +
                     proto_sections_size(runs, obstacles, targets);
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

static int plan_view(const struct proto_snapshot_view *v, struct plan *p)
{
    if (!size_ok(v->width) || !size_ok(v->height))
        return PROTO_E_UNENCODABLE;
    int rc = proto_sections_check(v->group, v->count, v->obstacles, v->obstacle_count, v->targets,
                                  v->target_count, &p->runs);
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
    bytes_le_put(buf + OFF_RUNS, p->runs, 2);
    bytes_le_put(buf + OFF_TICK, v->tick, 8);
    bytes_le_put(buf + OFF_TIME, v->server_time_us, 8);
    bytes_le_put_f32(buf + OFF_WIDTH, v->width);
    bytes_le_put_f32(buf + OFF_HEIGHT, v->height);
    bytes_le_put(buf + OFF_EPOCH, v->epoch, 4);
    bytes_le_put(buf + OFF_BOIDS, v->count, 4);
    bytes_le_put(buf + OFF_OBSTACLES, v->obstacle_count, 2);
    bytes_le_put(buf + OFF_TARGETS, v->target_count, 2);
    return buf + PROTO_SNAPSHOT_HEADER_SIZE;
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

ptrdiff_t proto_snapshot_encode(const struct proto_snapshot_view *view, uint8_t *buf, size_t cap)
{
    struct plan plan;
    int rc = plan_view(view, &plan);
    if (rc)
        return rc;
    if (!buf || plan.size > cap || plan.size > PTRDIFF_MAX)
        return PROTO_E_NOSPACE;
    uint8_t *p = put_header(buf, view, &plan);
    p = proto_sections_put_runs(p, view->group, view->count);
    p = put_boids(p, view);
    p = proto_sections_put_obstacles(p, view->obstacles, view->obstacle_count);
    p = proto_sections_put_targets(p, view->targets, view->target_count);
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
    h->tick = bytes_le_get(buf + OFF_TICK, 8);
    h->server_time_us = bytes_le_get(buf + OFF_TIME, 8);
    h->width = bytes_le_get_f32(buf + OFF_WIDTH);
    h->height = bytes_le_get_f32(buf + OFF_HEIGHT);
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

int proto_snapshot_decode(const uint8_t *buf, size_t len, struct proto_snapshot *out)
{
    int rc = proto_snapshot_decode_header(buf, len, &out->h);
    if (rc)
        return rc;
    if (!fits(out))
        return PROTO_E_OVER_LIMIT;
    /* The header check made len exactly the size of every section below. */
    const struct proto_snapshot_header *h = &out->h;
    const uint8_t *p = buf + PROTO_SNAPSHOT_HEADER_SIZE;
    rc = proto_sections_get_runs(p, h->run_count, h->boid_count, out->runs, NULL);
    if (rc)
        return rc;
    p = get_boids(p + (size_t)h->run_count * PROTO_SNAPSHOT_RUN_SIZE, out);
    rc = proto_sections_get_obstacles(p, h->obstacle_count, out->obstacles);
    p += (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE;
    int rc_targets = proto_sections_get_targets(p, h->target_count, out->targets);
    return rc ? rc : rc_targets;
}
