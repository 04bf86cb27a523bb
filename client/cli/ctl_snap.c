/*
 * ctl_snap.c — snapshot decoding with growing arrays (see ctl_snap.h).
 */
#include "ctl_snap.h"

#include <math.h>
#include <stdlib.h>

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

int ctl_snap_decode(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    struct proto_snapshot *s = &cs->s;
    struct proto_snapshot_header h;
    int rc = proto_snapshot_decode_header(buf, len, &h);
    if (rc < 0)
        return rc;
    if (reserve((void **)&s->runs, &s->runs_cap, h.run_count, sizeof *s->runs) ||
        reserve((void **)&s->boids, &s->boids_cap, h.boid_count, sizeof *s->boids) ||
        reserve((void **)&s->obstacles, &s->obstacles_cap, h.obstacle_count,
                sizeof *s->obstacles) ||
        reserve((void **)&s->targets, &s->targets_cap, h.target_count, sizeof *s->targets))
        return PROTO_E_NOSPACE;
    return proto_snapshot_decode(buf, len, s);
}

void ctl_snap_free(struct ctl_snap *cs)
{
    free(cs->s.runs);
    free(cs->s.boids);
    free(cs->s.obstacles);
    free(cs->s.targets);
    cs->s = (struct proto_snapshot){0};
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
