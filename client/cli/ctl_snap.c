/*
 * ctl_snap.c — snapshot decoding of both versions with growing arrays
 * (see ctl_snap.h).
 */
#include "ctl_snap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Makes *arr hold at least n entries of size bytes; -1 if out of memory. */
static int reserve(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *p = realloc(*arr, n * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

/* Makes the arrays of s hold the counts of h; PROTO_E_NOSPACE if out of memory. */
static int reserve_all(struct proto_snapshot *s, const struct proto_snapshot_header *h)
{
    if (reserve((void **)&s->runs, &s->runs_cap, h->run_count, sizeof *s->runs) ||
        reserve((void **)&s->boids, &s->boids_cap, h->boid_count, sizeof *s->boids) ||
        reserve((void **)&s->obstacles, &s->obstacles_cap, h->obstacle_count,
                sizeof *s->obstacles) ||
        reserve((void **)&s->targets, &s->targets_cap, h->target_count, sizeof *s->targets))
        return PROTO_E_NOSPACE;
    return 0;
}

static int decode_v1(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    struct proto_snapshot_header h;
    int rc = proto_snapshot_decode_header(buf, len, &h);
    if (rc == 0)
        rc = reserve_all(&cs->s, &h);
    return rc ? rc : proto_snapshot_decode(buf, len, &cs->s);
}

/* A decoder that takes h's counts (a new one holds no base). */
static int v2_decoder_for(struct ctl_snap *cs, const struct proto_v2_header *h)
{
    if (cs->dec && h->boid_count <= cs->dec_boids && h->obstacle_count <= cs->dec_obstacles)
        return 0;
    uint32_t boids = h->boid_count > 2 * cs->dec_boids ? h->boid_count : 2 * cs->dec_boids;
    uint32_t obstacles =
        h->obstacle_count > cs->dec_obstacles ? h->obstacle_count : cs->dec_obstacles;
    const char *err = NULL;
    struct proto_v2_decoder *d = proto_v2_decoder_create(boids, obstacles, &err);
    if (!d)
        return h->boid_count > 4194304 ? PROTO_E_OVER_LIMIT : PROTO_E_NOSPACE;
    proto_v2_decoder_destroy(cs->dec);
    cs->dec = d;
    cs->dec_boids = boids;
    cs->dec_obstacles = obstacles;
    return 0;
}

/* The decoded state in the layout of version 1. */
static void v2_to_snapshot(const struct proto_v2_state *st, const struct proto_v2_header *h,
                           struct proto_snapshot *s)
{
    s->h = proto_v2_common_header(h);
    uint32_t run = 0;
    for (uint32_t i = 0; i < st->count; i++) {
        if (i == 0 || st->group[i] != st->group[i - 1])
            s->runs[run++] = (struct proto_run){.group = st->group[i], .count = 0};
        s->runs[run - 1].count++;
        s->boids[i] = (struct proto_boid){st->qx[i], st->qy[i], st->heading[i], st->group[i]};
    }
    /* The arrays are NULL until a snapshot has some: memcpy takes no NULL. */
    if (st->obstacle_count)
        memcpy(s->obstacles, st->obstacles, st->obstacle_count * sizeof *s->obstacles);
    if (st->target_count)
        memcpy(s->targets, st->targets, st->target_count * sizeof *s->targets);
}

static int decode_v2(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    struct proto_v2_header h;
    const struct proto_v2_state *st;
    int rc = proto_v2_decode_header(buf, len, &h);
    if (rc)
        return rc;
    rc = v2_decoder_for(cs, &h);
    if (rc == 0)
        rc = proto_v2_decode(cs->dec, buf, len, &st);
    struct proto_snapshot_header counts = {.boid_count = h.boid_count,
                                           .run_count = h.run_count,
                                           .obstacle_count = h.obstacle_count,
                                           .target_count = h.target_count};
    if (rc == 0)
        rc = reserve_all(&cs->s, &counts);
    if (rc)
        return rc;
    cs->v2 = h;
    v2_to_snapshot(st, &h, &cs->s);
    return 0;
}

int ctl_snap_decode(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    int version = len >= 3 ? buf[2] : 0;
    int rc = version == PROTO_V2_VERSION ? decode_v2(cs, buf, len) : decode_v1(cs, buf, len);
    if (rc == 0)
        cs->version = version;
    return rc;
}

void ctl_snap_forget(struct ctl_snap *cs)
{
    if (cs->dec)
        proto_v2_decoder_forget(cs->dec);
}

void ctl_snap_free(struct ctl_snap *cs)
{
    free(cs->s.runs);
    free(cs->s.boids);
    free(cs->s.obstacles);
    free(cs->s.targets);
    proto_v2_decoder_destroy(cs->dec);
    *cs = (struct ctl_snap){0};
}

double ctl_snap_polarization(const struct proto_snapshot *s)
{
    uint32_t n = s->h.boid_count;
    if (!n)
        return 0;
    /* Count headings first: 256 trig calls instead of one per boid. */
    uint32_t hist[256] = {0};
    for (uint32_t i = 0; i < n; i++)
        hist[s->boids[i].heading]++;
    double sx = 0, sy = 0;
    for (int h = 0; h < 256; h++) {
        if (!hist[h])
            continue;
        double a = proto_dequantize_heading((uint8_t)h);
        sx += hist[h] * cos(a);
        sy += hist[h] * sin(a);
    }
    return sqrt(sx * sx + sy * sy) / n;
}
