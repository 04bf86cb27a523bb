/*
 * snapenc.c — a room's snapshot in every kind its clients take (see
 * snapenc.h).
 *
 * Each part is encoded straight into the frame, each after `pre` bytes of
 * headroom: the frame is allocated at the most its parts can take and
 * shrunk to what they took, so a frame never holds more than it uses and
 * nothing is copied. (A big frame's allocation is a mapping of its own,
 * flockd's malloc policy in main.c: the pages its parts did not write are
 * never touched, and the shrink hands them back.)
 */
#include "snapenc.h"

#include "fog.h"
#include "proto_snapshot.h"
#include "tiles.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ring of quantized states: this snapshot and the bases it may name,
 * by seq % RING; a power of two, so that a sequence number's slot is the
 * same whether it is counted in 64 bits or in a frame's 32, and across 0. */
#define RING 16
_Static_assert(RING > PROTO_V2_PLAN_REACH && (RING & (RING - 1)) == 0, "a ring of bases");

/* Version 2's deltas past the first four of a snapshot are encoded while
 * the snapshot's deltas so far cover fewer boids than this (each delta
 * encodes every boid, about 30 ns a boid on the machine of
 * server/bench/README.md): every kind asked for in a room of 10,000 boids,
 * the first four alone from 100,000 on, so that clients that fall behind
 * never cost a big room more encoding than clients that keep up. */
#define DELTA_BOIDS_MAX 400000u

/* A snapshot of more boids than this lets its scratch go once encoded:
 * the encoder's planes and the spare state (about 10 bytes a boid, each a
 * mapping of its own, so freeing hands it back; taking them again costs a
 * page fault per 4 KiB, which snapbench's encode time at 100,000 boids
 * did not show). A smaller one keeps them for the next. */
#define KEEP_BOIDS 16384u

_Static_assert(PROTO_GROUPS == SIM_GROUPS, "the wire's group ids are the world's");

struct snapenc {
    struct snapenc_config cfg;
    struct proto_obstacle *obstacles;          /* the world's, for the codecs */
    struct proto_target targets[PROTO_GROUPS]; /* its active targets */
    /* Version 2, allocated at the first snapshot that wants it. */
    struct proto_v2_encoder *enc;
    struct proto_v2_state ring[RING]; /* by seq % RING; held while it has planes (qx) */
    uint8_t *spare;                   /* the planes of a state let go, for the next snapshot */
    uint64_t held_seq;                /* the newest state in the ring; 0: none */
    uint32_t run; /* states before held_seq in the ring with its epoch, unbroken */
    struct snapenc_stats stats;
    /* Version 3, made at the first snapshot that wants it, let go when one does not. */
    struct tilestate *hist[1 + FOG_MAX_TEAMS][TILES_KEEP]; /* by audience, newest first */
    struct tiles_scratch scratch;                          /* where the tiles are sorted */
    struct fog *fog;
    uint32_t *visible;
    struct tileset **delay_ring; /* the audience of all, by seq % (delay + 1) */
};

/* ---- life cycle ------------------------------------------------------------ */

struct snapenc *snapenc_create(const struct snapenc_config *cfg, const char **err)
{
    struct snapenc *e = calloc(1, sizeof *e);
    if (e)
        e->obstacles = calloc((size_t)cfg->max_obstacles + 1, sizeof *e->obstacles);
    if (!e || !e->obstacles || cfg->capacity < 1) {
        *err = e && e->obstacles ? "snapenc: capacity must be at least 1" : "out of memory";
        snapenc_destroy(e);
        return NULL;
    }
    e->cfg = *cfg;
    return e;
}

static void drop_v3(struct snapenc *e);

void snapenc_destroy(struct snapenc *e)
{
    if (!e)
        return;
    drop_v3(e);
    fog_destroy(e->fog);
    free(e->visible);
    proto_v2_encoder_destroy(e->enc);
    for (int k = 0; k < RING; k++)
        free(e->ring[k].qx);
    free(e->spare);
    free(e->obstacles);
    free(e);
}

/* Version 2's encoder, at capacity; false if memory ran out. */
static bool has_v2(struct snapenc *e)
{
    if (e->enc)
        return true;
    const char *err = NULL;
    e->enc = proto_v2_encoder_create(e->cfg.capacity, &err);
    return e->enc != NULL;
}

/* ---- the states kept as bases ---------------------------------------------- */

/*
 * A state's planes (qx, qy, heading) are one allocation at capacity; its
 * groups are not kept: the encoder reads only the groups of the snapshot
 * it encodes, never a base's, so a state points at the world's while it is
 * encoded (quantize()). Gives s planes, the spare ones if there are;
 * false if memory ran out.
 */
static bool hold(struct snapenc *e, struct proto_v2_state *s)
{
    if (s->qx)
        return true;
    size_t n = e->cfg.capacity, stride = (5 * n + 15) & ~(size_t)15;
    uint8_t *p = e->spare ? e->spare : malloc(stride);
    if (!p)
        return false;
    e->spare = NULL;
    s->qx = (uint16_t *)(void *)p;
    s->qy = (uint16_t *)(void *)(p + 2 * n);
    s->heading = p + 4 * n;
    s->group = NULL;
    return true;
}

/* Lets s's planes go: kept as the spare, or freed if there is one. */
static void let_go(struct snapenc *e, struct proto_v2_state *s)
{
    if (!s->qx)
        return;
    if (e->spare)
        free(s->qx);
    else
        e->spare = (uint8_t *)s->qx;
    s->qx = s->qy = NULL;
    s->heading = NULL;
}

/* Whether the ring holds the state of snapshot seq. */
static bool is_held(const struct snapenc *e, uint32_t seq)
{
    const struct proto_v2_state *s = &e->ring[seq % RING];
    return s->qx && s->seq == seq;
}

/*
 * After snapshot seq: keeps the states the next snapshot's deltas may
 * name, as far back as the deepest kind in `want` reaches (a delta on
 * (seq-2, seq-4) reaches 4, one on (seq-4, seq-8) 8), and at least 2
 * (clients that keep up, or took a first key frame, never wait); lets the
 * older ones go. A client that falls behind and wants a deeper kind gets
 * it once the ring holds its bases again (the room asks for the key frame
 * meanwhile).
 */
static void keep_bases(struct snapenc *e, uint32_t seq, unsigned want)
{
    struct proto_v2_plan full;
    proto_v2_plan(0, PROTO_V2_PLAN_REACH, PROTO_V2_PLAN_MAX - 1, &full);
    unsigned depth = 2;
    for (unsigned k = 0; k < full.count; k++) {
        unsigned reach = full.frame[k].gap1 + full.frame[k].gap0;
        if (want & 1u << (FRAME_KEY + k) && reach > depth)
            depth = reach;
    }
    for (unsigned back = depth; back < RING; back++)
        let_go(e, &e->ring[(seq - back) % RING]);
}

/* ---- the snapshot's views -------------------------------------------------- */

/* The world as the version 1 codec sees it; its obstacles and targets are
 * copied into e's arrays (the codec has types of its own). */
static void v1_view(struct snapenc *e, const struct snapenc_input *in, const struct sim_view *v,
                    struct proto_snapshot_view *out)
{
    uint32_t targets = 0;
    for (uint32_t k = 0; k < v->obstacle_count; k++) {
        const struct sim_obstacle *o = &v->obstacles[k];
        e->obstacles[k] = (struct proto_obstacle){o->id, o->x, o->y, o->r};
    }
    for (int g = 0; g < SIM_GROUPS; g++)
        if (v->targets[g].active)
            e->targets[targets++] =
                (struct proto_target){(uint8_t)g, v->targets[g].x, v->targets[g].y};
    *out = (struct proto_snapshot_view){
        .tick = v->tick,
        .server_time_us = (uint64_t)in->wall_us,
        .epoch = v->epoch,
        .width = v->width,
        .height = v->height,
        .paused = in->paused,
        .wrap = sim_config(in->world)->edges == SIM_EDGES_WRAP,
        .count = v->count,
        .x = v->x,
        .y = v->y,
        .vx = v->vx,
        .vy = v->vy,
        .group = v->group,
        .obstacle_count = v->obstacle_count,
        .obstacles = e->obstacles,
        .target_count = targets,
        .targets = e->targets,
    };
}

/* Quantizes the snapshot into its ring slot (the quantization of §4.4,
 * as version 1 sends it), seals it and extends or restarts the run of
 * bases. */
static struct proto_v2_state *quantize(struct snapenc *e, const struct snapenc_input *in,
                                       const struct proto_snapshot_view *v)
{
    struct proto_v2_state *s = &e->ring[in->seq % RING];
    const struct proto_v2_state *prev = &e->ring[(in->seq - 1) % RING];
    if (!hold(e, s))
        return NULL;
    bool continues = e->held_seq && e->held_seq == in->seq - 1 && prev->epoch == v->epoch;
    e->run = continues ? (e->run < RING - 1 ? e->run + 1 : e->run) : 0;
    e->held_seq = in->seq;
    for (uint32_t i = 0; i < v->count; i++) {
        s->qx[i] = proto_quantize_pos(v->x[i], v->width);
        s->qy[i] = proto_quantize_pos(v->y[i], v->height);
        s->heading[i] = proto_quantize_heading(v->vx[i], v->vy[i]);
    }
    s->group = (uint8_t *)(uintptr_t)v->group; /* read, never written */
    s->seq = (uint32_t)in->seq;
    s->tick = v->tick;
    s->server_time_us = v->server_time_us;
    s->sim_hash = sim_hash(in->world);
    s->width = v->width;
    s->height = v->height;
    s->epoch = v->epoch;
    s->flags = (uint8_t)((v->paused ? PROTO_SNAPSHOT_FLAG_PAUSED : 0u) |
                         (v->wrap ? PROTO_SNAPSHOT_FLAG_WRAP : 0u));
    s->count = v->count;
    s->obstacle_count = v->obstacle_count;
    s->obstacles = e->obstacles;
    s->target_count = v->target_count;
    s->targets = e->targets;
    proto_v2_state_seal(s);
    return s;
}

/* ---- assembly -------------------------------------------------------------- */

static int64_t now_ns(const struct snapenc *e)
{
    return e->cfg.clock_ns ? e->cfg.clock_ns() : 0;
}

/* Records the part just written at *used (its length or a codec error:
 * then the part stays empty) and moves *used past it. */
static void add_part(struct snapenc *e, struct frame *parts, unsigned kind, size_t *used,
                     ptrdiff_t len, int64_t t0)
{
    if (len <= 0)
        return;
    frame_set_part(parts, kind, *used + e->cfg.pre, (size_t)len);
    *used += e->cfg.pre + (size_t)len;
    e->stats.frames[kind]++;
    e->stats.bytes[kind] += (uint64_t)len;
    e->stats.ns[kind] += (uint64_t)(now_ns(e) - t0);
}

/* The most bytes one version 1 part / one version 2 part may take. */
static size_t v1_max(const struct proto_snapshot_view *v)
{
    return proto_snapshot_max_size(v->count, v->obstacle_count);
}

static size_t v2_max(const struct proto_v2_state *s)
{
    uint32_t runs = s->count < PROTO_SNAPSHOT_MAX_RUNS ? s->count : PROTO_SNAPSHOT_MAX_RUNS;
    return proto_v2_frame_max_size(s->count, runs, s->obstacle_count, s->target_count);
}

static void encode_v1(struct snapenc *e, const struct proto_snapshot_view *v, struct frame *f,
                      size_t *used)
{
    int64_t t0 = now_ns(e);
    ptrdiff_t len = proto_snapshot_encode(v, f->data + *used + e->cfg.pre, v1_max(v));
    add_part(e, f, FRAME_V1, used, len, t0);
}

/*
 * The plan's frames of f to encode (their indices into ks, in the plan's
 * order): those `want` names, the deltas past the fourth only while the
 * deltas before them cover fewer than DELTA_BOIDS_MAX boids.
 */
static unsigned to_encode(const struct frame *f, unsigned want, uint32_t boids,
                          unsigned ks[PROTO_V2_PLAN_MAX])
{
    unsigned n = 0;
    uint64_t deltas = 0;
    for (unsigned k = 0; k < f->plan.count; k++) {
        if (!(want & 1u << f->kind[k]))
            continue;
        if (f->plan.frame[k].gap1 && deltas >= 4 && deltas * boids >= DELTA_BOIDS_MAX)
            break;
        deltas += f->plan.frame[k].gap1 != 0;
        ks[n++] = k;
    }
    return n;
}

/* The frames of the plan to_encode() names, on the ring's bases. */
static void encode_v2(struct snapenc *e, const struct proto_v2_state *s, unsigned want,
                      struct frame *f, size_t *used)
{
    size_t max = v2_max(s);
    unsigned ks[PROTO_V2_PLAN_MAX], n = to_encode(f, want, s->count, ks);
    for (unsigned i = 0; i < n; i++) {
        const struct proto_v2_plan_frame *pf = &f->plan.frame[ks[i]];
        uint32_t seq1 = s->seq - pf->gap1, seq0 = seq1 - pf->gap0;
        if ((pf->gap1 && !is_held(e, seq1)) || (pf->gap0 && !is_held(e, seq0)))
            continue; /* a base let go (keep_bases()) */
        const struct proto_v2_state *b1 = pf->gap1 ? &e->ring[seq1 % RING] : NULL;
        const struct proto_v2_state *b0 = pf->gap0 ? &e->ring[seq0 % RING] : NULL;
        int64_t t0 = now_ns(e);
        ptrdiff_t len = proto_v2_encode(e->enc, s, b1, b0, f->data + *used + e->cfg.pre, max);
        add_part(e, f, f->kind[ks[i]], used, len, t0);
    }
}

/* The bytes the parts `want` names may take at most, headroom included. */
static size_t frame_bound(const struct snapenc *e, const struct proto_snapshot_view *v,
                          const struct proto_v2_state *s, unsigned want, const struct frame *f)
{
    size_t bound = want & 1u << FRAME_V1 ? e->cfg.pre + v1_max(v) : 0;
    unsigned ks[PROTO_V2_PLAN_MAX];
    if (s)
        bound += to_encode(f, want, s->count, ks) * (e->cfg.pre + v2_max(s));
    return bound;
}

/* ---- version 3 ------------------------------------------------------------------ */

/* Lets go of every tilestate, delayed tileset and scratch kept (no
 * version 3 client lately): the next snapshot that wants tiles starts
 * without bases. */
static void drop_v3(struct snapenc *e)
{
    for (unsigned a = 0; a <= FOG_MAX_TEAMS; a++) {
        for (unsigned g = 0; g < TILES_KEEP; g++) {
            tiles_state_release(e->hist[a][g]);
            e->hist[a][g] = NULL;
        }
    }
    tiles_scratch_free(&e->scratch);
    for (uint32_t k = 0; e->delay_ring && k <= e->cfg.delay; k++)
        tiles_set_release(e->delay_ring[k]);
    free(e->delay_ring);
    e->delay_ring = NULL;
}

/* Keeps s as audience a's newest state, letting go of the oldest. */
static void keep_state(struct snapenc *e, unsigned a, struct tilestate *s)
{
    tiles_state_release(e->hist[a][TILES_KEEP - 1]);
    memmove(&e->hist[a][1], &e->hist[a][0], (TILES_KEEP - 1) * sizeof e->hist[a][0]);
    e->hist[a][0] = tiles_state_ref(s);
}

/* Audience a's tileset of state st: team a (a > 0) sees every obstacle
 * and its own target only. */
static struct tileset *set_for(struct snapenc *e, unsigned a, struct tilestate *st,
                               const struct tiles_meta *meta, const struct proto_snapshot_view *v)
{
    const struct proto_target *targets = v->targets;
    uint32_t ntargets = v->target_count;
    if (a > 0) {
        ntargets = 0;
        for (uint32_t k = 0; k < v->target_count && !ntargets; k++)
            if (v->targets[k].group == a)
                targets = &v->targets[k], ntargets = 1;
    }
    struct tileset *ts =
        tiles_set_create(st, e->hist[a], meta, v->obstacles, v->obstacle_count, targets, ntargets);
    keep_state(e, a, st);
    return ts;
}

/* The fog of `teams` teams into e->visible (made at the first use). */
static bool see(struct snapenc *e, const struct snapenc_input *in, const struct sim_view *sv,
                unsigned teams)
{
    const char *err;
    if (!e->fog && !(e->fog = fog_create(e->cfg.capacity, &err)))
        return false;
    if (!e->visible && !(e->visible = malloc(((size_t)e->cfg.capacity + 1) * 4)))
        return false;
    fog_compute(e->fog, sv, in->world, teams, e->visible);
    return true;
}

/* The spectators' tileset: the audience of all `delay` snapshots ago. */
static struct tileset *delayed(struct snapenc *e, uint64_t seq, struct tileset *all)
{
    uint32_t n = e->cfg.delay + 1;
    if (!e->delay_ring && !(e->delay_ring = calloc(n, sizeof *e->delay_ring)))
        return NULL;
    tiles_set_release(e->delay_ring[seq % n]);
    e->delay_ring[seq % n] = tiles_set_ref(all);
    struct tileset *old = e->delay_ring[(seq + 1) % n]; /* seq - delay, if it was kept */
    return old && tiles_state_seq(tiles_set_state(old)) == (uint32_t)(seq - e->cfg.delay)
               ? tiles_set_ref(old)
               : NULL;
}

/* The frame's version 3 tilesets: every boid, then each team's fog; q,
 * when version 2 quantized this snapshot, its boids quantized. */
static void encode_v3(struct snapenc *e, const struct snapenc_input *in, const struct sim_view *sv,
                      const struct proto_snapshot_view *v, const struct proto_v2_state *q,
                      struct frame *f)
{
    int64_t t0 = now_ns(e);
    unsigned teams = in->teams < FOG_MAX_TEAMS ? in->teams : FOG_MAX_TEAMS;
    struct tiles_input ti = {.grid = &e->cfg.grid,
                             .world = sv,
                             .seq = (uint32_t)in->seq,
                             .qx = q ? q->qx : NULL,
                             .qy = q ? q->qy : NULL,
                             .heading = q ? q->heading : NULL,
                             .fork = in->fork,
                             .scratch = &e->scratch};
    struct tilestate *all = tiles_state_build(&ti);
    f->v3.sets = all ? calloc(1 + teams, sizeof *f->v3.sets) : NULL;
    if (!f->v3.sets || (teams && !see(e, in, sv, teams))) {
        tiles_state_release(all);
        drop_v3(e);
        return;
    }
    struct tiles_meta meta = {.tick = sv->tick,
                              .time_us = in->wall_us,
                              .flags = (uint8_t)((v->paused ? PROTO_SNAPSHOT_FLAG_PAUSED : 0) |
                                                 (v->wrap ? PROTO_SNAPSHOT_FLAG_WRAP : 0)),
                              .room_boids = sv->count};
    f->v3.count = 1 + teams;
    for (unsigned a = 0; a <= teams; a++) {
        struct tilestate *st =
            a ? tiles_state_filter(all, sv, e->visible, a) : tiles_state_ref(all);
        f->v3.sets[a] = st ? set_for(e, a, st, &meta, v) : NULL;
        tiles_state_release(st);
    }
    tiles_state_release(all);
    if (teams && e->cfg.delay && f->v3.sets[0])
        f->v3.delayed = delayed(e, in->seq, f->v3.sets[0]);
    e->stats.v3_snapshots++;
    e->stats.v3_ns += (uint64_t)(now_ns(e) - t0);
}

struct frame *snapenc_encode(struct snapenc *e, const struct snapenc_input *in)
{
    struct sim_view sv;
    struct proto_snapshot_view v;
    sim_view(in->world, &sv);
    v1_view(e, in, &sv, &v);
    struct frame parts = {
        .seq = in->seq, .tick = sv.tick, .time_us = in->wall_us, .pre = e->cfg.pre};
    const struct proto_v2_state *s = NULL;
    /* Version 2's kinds: every want bit below FRAME_KINDS but version 1's. */
    uint32_t v2_want = in->want & ((1u << FRAME_KINDS) - 1u) & ~(1u << FRAME_V1);
    if (v2_want && has_v2(e)) {
        int64_t t0 = now_ns(e);
        s = quantize(e, in, &v);
        e->stats.prepare_ns += (uint64_t)(now_ns(e) - t0);
    }
    /* Without this snapshot's state the plan is the key frame alone: a
     * client that asks for it gets it from the next snapshot on. */
    proto_v2_plan((uint32_t)in->seq, s ? e->run : 0, PROTO_V2_PLAN_MAX - 1, &parts.plan);
    for (unsigned k = 0; k < parts.plan.count; k++)
        parts.kind[k] = (uint8_t)frame_kind_of(parts.plan.frame[k].gap1, parts.plan.frame[k].gap0);
    struct frame *f = malloc(sizeof *f + frame_bound(e, &v, s, in->want, &parts));
    if (!f) {
        e->held_seq = 0; /* the clients never get this one: no base on it */
        return NULL;
    }
    memcpy(f, &parts, sizeof *f);
    atomic_init(&f->refs, 1);
    if (in->want & 1u << FRAME_WANT_V3 && e->cfg.grid.cols)
        encode_v3(e, in, &sv, &v, s, f);
    else if (e->hist[0][0])
        drop_v3(e);
    size_t used = 0;
    if (in->want & 1u << FRAME_V1)
        encode_v1(e, &v, f, &used);
    if (s) {
        encode_v2(e, s, in->want, f, &used);
        keep_bases(e, s->seq, in->want);
        if (s->count > KEEP_BOIDS) {
            free(e->spare);
            e->spare = NULL;
            proto_v2_encoder_destroy(e->enc);
            e->enc = NULL;
        }
    }
    struct frame *shrunk = realloc(f, sizeof *f + used);
    return shrunk ? shrunk : f;
}

struct tilestate *snapenc_state(const struct snapenc *e, unsigned audience)
{
    return audience <= FOG_MAX_TEAMS ? tiles_state_ref(e->hist[audience][0]) : NULL;
}

void snapenc_stats(const struct snapenc *e, struct snapenc_stats *out)
{
    *out = e->stats;
}
