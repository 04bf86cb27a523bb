/*
 * fuzz_snapshot — proto_snapshot_decode() on arbitrary bytes into small
 * caller arrays.
 *
 * Whatever the bytes, the decoder must agree with
 * proto_snapshot_decode_header() on every header-level refusal. When it
 * accepts, the rules of PROTOCOL.md §4.6 must hold for what it filled in:
 * the length is exactly the size of the counts, every count fits its
 * array, every float is finite, runs are non-empty, ascending and sum to
 * the boid count, each boid carries its run's group, obstacle ids ascend
 * from 1 with r > 0, targets ascend. Re-encoding the decoded snapshot must
 * then give back the same bytes (positions through the centre of their
 * quantum, headings through their angle), except for world sizes so small
 * that a quantum is below float precision.
 *
 * The lengths mode: the header's counts fix the snapshot's length to the
 * byte, so a mutation of a count is refused at the length unless the
 * input's length changed with it, which it almost never does, and the
 * fuzzer hardly reaches the sections of other counts. An input whose
 * header is refused only for its length is therefore checked once more,
 * cut to the length its counts say or padded with zeros up to it (when
 * that fits RESIZED_MAX), after it was checked as given.
 */
#include "fuzz_common.h"

#include "proto_snapshot.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define RUNS_CAP      16
#define BOIDS_CAP     128
#define OBSTACLES_CAP 16
#define TARGETS_CAP   16

/* Longest copy the lengths mode makes: above the largest snapshot the caps allow. */
#define RESIZED_MAX 4096

/* Smallest world size whose half quantum (size / 2^17) is a normal float. */
#define ROUNDTRIP_MIN_SIZE (FLT_MIN * 131072.0f)

struct arrays {
    struct proto_run runs[RUNS_CAP];
    struct proto_boid boids[BOIDS_CAP];
    struct proto_obstacle obstacles[OBSTACLES_CAP];
    struct proto_target targets[TARGETS_CAP];
};

static int same_header(const struct proto_snapshot_header *a, const struct proto_snapshot_header *b)
{
    return a->version == b->version && a->type == b->type && a->flags == b->flags &&
           a->tick == b->tick && a->server_time_us == b->server_time_us &&
           memcmp(&a->width, &b->width, sizeof a->width) == 0 &&
           memcmp(&a->height, &b->height, sizeof a->height) == 0 && a->epoch == b->epoch &&
           a->boid_count == b->boid_count && a->run_count == b->run_count &&
           a->obstacle_count == b->obstacle_count && a->target_count == b->target_count;
}

static void check_header(const struct proto_snapshot_header *h, size_t len)
{
    if (len != proto_snapshot_size(h->boid_count, h->run_count, h->obstacle_count, h->target_count))
        fuzz_fail("accepted %zu bytes for counts of another size", len);
    if (h->version != PROTO_VERSION || h->type != PROTO_SNAPSHOT_TYPE)
        fuzz_fail("accepted version %u, type %u", h->version, h->type);
    if (h->flags & ~(PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP))
        fuzz_fail("accepted unknown flags 0x%02x", h->flags);
    if (!isfinite(h->width) || !isfinite(h->height) || !(h->width > 0) || !(h->height > 0))
        fuzz_fail("accepted a world of %g x %g", h->width, h->height);
    if (h->run_count > RUNS_CAP || h->boid_count > BOIDS_CAP || h->obstacle_count > OBSTACLES_CAP ||
        h->target_count > TARGETS_CAP)
        fuzz_fail("accepted counts %u/%u/%u/%u over the capacities", h->run_count, h->boid_count,
                  h->obstacle_count, h->target_count);
}

static void check_body(const struct proto_snapshot *s)
{
    uint32_t i = 0;
    for (uint32_t k = 0; k < s->h.run_count; k++) {
        const struct proto_run *r = &s->runs[k];
        if (r->count == 0 || (k && r->group <= s->runs[k - 1].group))
            fuzz_fail("accepted run %u: group %u, count %u", k, r->group, r->count);
        for (uint32_t j = 0; j < r->count; j++, i++)
            if (i >= s->h.boid_count || s->boids[i].group != r->group)
                fuzz_fail("boid %u is not in run %u", i, k);
    }
    if (i != s->h.boid_count)
        fuzz_fail("runs cover %u of %u boids", i, s->h.boid_count);
    for (uint32_t k = 0; k < s->h.obstacle_count; k++) {
        const struct proto_obstacle *o = &s->obstacles[k];
        if (o->id <= (k ? s->obstacles[k - 1].id : 0) || !isfinite(o->x) || !isfinite(o->y) ||
            !isfinite(o->r) || !(o->r > 0))
            fuzz_fail("accepted obstacle %u: id %u at (%g, %g) r %g", k, o->id, o->x, o->y, o->r);
    }
    for (uint32_t k = 0; k < s->h.target_count; k++) {
        const struct proto_target *t = &s->targets[k];
        if ((k && t->group <= s->targets[k - 1].group) || !isfinite(t->x) || !isfinite(t->y))
            fuzz_fail("accepted target %u: group %u at (%g, %g)", k, t->group, t->x, t->y);
    }
}

/* Encodes the decoded snapshot again and compares with the input. */
static void check_roundtrip(const struct proto_snapshot *s, const uint8_t *data, size_t size)
{
    static float x[BOIDS_CAP], y[BOIDS_CAP], vx[BOIDS_CAP], vy[BOIDS_CAP];
    static uint8_t group[BOIDS_CAP], out[4096];

    if (!(s->h.width >= ROUNDTRIP_MIN_SIZE) || !(s->h.height >= ROUNDTRIP_MIN_SIZE))
        return;
    for (uint32_t i = 0; i < s->h.boid_count; i++) {
        const struct proto_boid *b = &s->boids[i];
        double a = proto_dequantize_heading(b->heading);
        x[i] = (float)proto_dequantize_pos(b->qx, s->h.width);
        y[i] = (float)proto_dequantize_pos(b->qy, s->h.height);
        vx[i] = (float)cos(a);
        vy[i] = (float)sin(a);
        group[i] = b->group;
    }
    struct proto_snapshot_view view = {
        .tick = s->h.tick,
        .server_time_us = s->h.server_time_us,
        .epoch = s->h.epoch,
        .width = s->h.width,
        .height = s->h.height,
        .paused = !!(s->h.flags & PROTO_SNAPSHOT_FLAG_PAUSED),
        .wrap = !!(s->h.flags & PROTO_SNAPSHOT_FLAG_WRAP),
        .count = s->h.boid_count,
        .x = x,
        .y = y,
        .vx = vx,
        .vy = vy,
        .group = group,
        .obstacle_count = s->h.obstacle_count,
        .obstacles = s->obstacles,
        .target_count = s->h.target_count,
        .targets = s->targets,
    };
    ptrdiff_t n = proto_snapshot_encode(&view, out, sizeof out);
    if (n < 0)
        fuzz_fail("could not encode a decoded snapshot: %s", proto_status_name((int)n));
    if ((size_t)n != size)
        fuzz_fail("re-encoded snapshot has %td bytes, not %zu", n, size);
    for (size_t i = 0; i < size; i++)
        if (out[i] != data[i])
            fuzz_fail("re-encoded snapshot differs at byte %zu: %02x, not %02x", i, out[i],
                      data[i]);
}

static void check_snapshot(const uint8_t *data, size_t size)
{
    static struct arrays a;
    struct proto_snapshot_header h;
    struct proto_snapshot s = {.runs = a.runs,
                               .runs_cap = RUNS_CAP,
                               .boids = a.boids,
                               .boids_cap = BOIDS_CAP,
                               .obstacles = a.obstacles,
                               .obstacles_cap = OBSTACLES_CAP,
                               .targets = a.targets,
                               .targets_cap = TARGETS_CAP};

    int hrc = proto_snapshot_decode_header(data, size, &h);
    int rc = proto_snapshot_decode(data, size, &s);
    if (hrc != 0 && rc != hrc)
        fuzz_fail("header refused with %s, decode returned %s", proto_status_name(hrc),
                  proto_status_name(rc));
    if (rc != 0) {
        if (rc != hrc && rc != PROTO_E_OVER_LIMIT && rc != PROTO_E_BAD_VALUE)
            fuzz_fail("decode refused a good header with %s", proto_status_name(rc));
        return;
    }
    if (!same_header(&h, &s.h))
        fuzz_fail("decode and decode_header read different headers");
    check_header(&s.h, size);
    check_body(&s);
    check_roundtrip(&s, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_snapshot(data, size);
    struct proto_snapshot_header h;
    int rc = proto_snapshot_decode_header(data, size, &h);
    if (size < PROTO_SNAPSHOT_HEADER_SIZE || (rc != PROTO_E_TRUNCATED && rc != PROTO_E_BAD_LENGTH))
        return 0; /* no header, or refused for more than its length */
    size_t want = proto_snapshot_size(h.boid_count, h.run_count, h.obstacle_count, h.target_count);
    static uint8_t resized[RESIZED_MAX];
    if (want > sizeof resized)
        return 0;
    memset(resized, 0, want);
    memcpy(resized, data, size < want ? size : want);
    check_snapshot(resized, want);
    return 0;
}
