/*
 * ctl_snap.c — snapshot decoding of every version with growing arrays
 * (see ctl_snap.h).
 */
#include "ctl_snap.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most boids a version 2 or 3 decoder takes (proto_v2.h, proto_v3.h). */
#define MOST_BOIDS 4194304u

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
        return h->boid_count > MOST_BOIDS ? PROTO_E_OVER_LIMIT : PROTO_E_NOSPACE;
    proto_v2_decoder_destroy(cs->dec);
    cs->dec = d;
    cs->dec_boids = boids;
    cs->dec_obstacles = obstacles;
    return 0;
}

/* Copies a decoded frame's obstacles and targets into s (whose arrays
 * hold them). The arrays are NULL until a snapshot has some: memcpy takes
 * no NULL. */
static void copy_sections(struct proto_snapshot *s, const struct proto_obstacle *obstacles,
                          uint32_t nobstacles, const struct proto_target *targets,
                          uint32_t ntargets)
{
    if (nobstacles)
        memcpy(s->obstacles, obstacles, nobstacles * sizeof *s->obstacles);
    if (ntargets)
        memcpy(s->targets, targets, ntargets * sizeof *s->targets);
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
    copy_sections(s, st->obstacles, st->obstacle_count, st->targets, st->target_count);
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

/* Room to spare for what later frames need: four times this one's (at
 * least `least`, twice what was taken before), but no more than `most`
 * unless this frame needs more. */
static uint32_t spare(uint64_t need, uint32_t had, uint64_t least, uint64_t most)
{
    uint64_t n = 4 * need > 2u * (uint64_t)had ? 4 * need : 2u * (uint64_t)had;
    n = n < least ? least : n;
    n = n > most ? most : n;
    return (uint32_t)(n < need ? need : n);
}

/* A version 3 decoder that takes sh's boids and parts and h's obstacles
 * (a new one holds no base). */
static int v3_decoder_for(struct ctl_snap *cs, const struct proto_v3_header *h,
                          const struct proto_v3_shape *sh)
{
    uint32_t cells = cs->cells ? cs->cells : PROTO_V3_FIELD_CELLS;
    if (cs->dec3 && sh->boids <= cs->dec3_boids && sh->parts <= cs->dec3_parts &&
        h->obstacle_count <= cs->dec3_obstacles)
        return 0;
    if (sh->boids > MOST_BOIDS)
        return PROTO_E_OVER_LIMIT;
    /* A frame holds no more boids than the room has (a delayed audience's
     * about as many), and no more parts than the grid has tiles. */
    uint64_t room = h->room_boids < MOST_BOIDS ? h->room_boids : MOST_BOIDS;
    uint32_t boids = spare(sh->boids, cs->dec3_boids, 1024, room);
    uint32_t parts = spare(sh->parts, cs->dec3_parts, 16, (uint32_t)h->cols * h->rows);
    uint32_t obstacles =
        spare(h->obstacle_count, cs->dec3_obstacles, 16, PROTO_SNAPSHOT_MAX_OBSTACLES);
    const char *err = NULL;
    struct proto_v3_decoder *d = proto_v3_decoder_create(boids, parts, obstacles, cells, &err);
    if (!d)
        return PROTO_E_NOSPACE;
    proto_v3_decoder_destroy(cs->dec3);
    cs->v3 = NULL;
    cs->dec3 = d;
    cs->dec3_boids = boids;
    cs->dec3_parts = parts;
    cs->dec3_obstacles = obstacles;
    return 0;
}

/* The decoded frame in the layout of version 1 (no runs), its ids beside. */
static void v3_to_snapshot(const struct proto_v3_frame *f, struct proto_snapshot *s, uint32_t *ids)
{
    const struct proto_v3_header *h = &f->h;
    s->h = (struct proto_snapshot_header){.version = PROTO_V3_VERSION,
                                          .type = PROTO_V3_KIND_FRAME,
                                          .flags = h->flags,
                                          .tick = h->tick,
                                          .server_time_us = h->server_time_us,
                                          .width = h->width,
                                          .height = h->height,
                                          .boid_count = f->boid_count,
                                          .obstacle_count = h->obstacle_count,
                                          .target_count = h->target_count};
    uint32_t i = 0;
    for (uint32_t k = 0; k < f->part_count; k++) {
        const struct proto_v3_part *p = &f->parts[k];
        for (uint32_t j = 0; j < p->count; j++, i++) {
            ids[i] = p->id[j];
            s->boids[i] = (struct proto_boid){p->qx[j], p->qy[j], p->heading[j], p->group[j]};
        }
    }
    copy_sections(s, f->obstacles, h->obstacle_count, f->targets, h->target_count);
}

static int decode_v3(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    struct proto_v3_header h;
    struct proto_v3_shape sh;
    const struct proto_v3_frame *f = NULL;
    int rc = proto_v3_scan(buf, len, &h, &sh);
    if (rc == 0)
        rc = v3_decoder_for(cs, &h, &sh);
    if (rc == 0)
        rc = proto_v3_decode(cs->dec3, buf, len, &f);
    if (rc)
        return rc;
    struct proto_snapshot_header counts = {.boid_count = f->boid_count,
                                           .obstacle_count = h.obstacle_count,
                                           .target_count = h.target_count};
    if (reserve_all(&cs->s, &counts) ||
        reserve((void **)&cs->ids, &cs->ids_cap, f->boid_count, sizeof *cs->ids))
        return PROTO_E_NOSPACE;
    cs->v3 = f;
    cs->v3h = h;
    cs->v3_shape = sh;
    v3_to_snapshot(f, &cs->s, cs->ids);
    return 0;
}

int ctl_snap_decode(struct ctl_snap *cs, const uint8_t *buf, size_t len)
{
    int version = len >= 3 ? buf[2] : 0;
    int rc = version == PROTO_V3_VERSION   ? decode_v3(cs, buf, len)
             : version == PROTO_V2_VERSION ? decode_v2(cs, buf, len)
                                           : decode_v1(cs, buf, len);
    if (rc == 0)
        cs->version = version;
    return rc;
}

void ctl_snap_welcome(struct ctl_snap *cs, const cJSON *welcome)
{
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(welcome, "stream");
    const cJSON *field = cJSON_GetObjectItemCaseSensitive(stream, "field");
    double cells = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(field, "cells"));
    uint32_t c = cells >= 1 && cells * cells <= PROTO_V3_FIELD_MAX ? (uint32_t)cells : 0;
    if (cs->dec)
        proto_v2_decoder_forget(cs->dec);
    if (cs->dec3 && c == cs->cells) {
        proto_v3_decoder_forget(cs->dec3);
    } else if (cs->dec3) { /* fields of another size: a decoder made for them */
        proto_v3_decoder_destroy(cs->dec3);
        cs->dec3 = NULL;
        cs->v3 = NULL;
        cs->dec3_boids = cs->dec3_parts = cs->dec3_obstacles = 0;
    }
    cs->cells = c;
}

void ctl_snap_free(struct ctl_snap *cs)
{
    free(cs->s.runs);
    free(cs->s.boids);
    free(cs->s.obstacles);
    free(cs->s.targets);
    proto_v2_decoder_destroy(cs->dec);
    free(cs->ids);
    proto_v3_decoder_destroy(cs->dec3);
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
