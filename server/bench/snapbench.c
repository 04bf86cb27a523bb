/*
 * snapbench — what snapshot version 2 costs on a real flock: bytes per
 * boid of each frame kind and of what clients receive, and the time to
 * encode (and decode) them.
 *
 * A world is stepped by the simulation core at --tick-hz; --snapshot-hz
 * times a second (spread over the ticks as a room spreads them) its
 * snapshot is encoded by snapenc.h, the
 * code a room encodes with, as the key frame and the first --deltas
 * deltas of proto_v2_plan() (as a room whose clients take those). Three
 * simulated clients take them: one that keeps up, one that takes every
 * other snapshot and one served every 2.7 snapshots; each gets the frame
 * frame_pick() chooses for it, as a room would, and, with --verify,
 * decodes it with its own decoder and must reconstruct the world's boids
 * exactly (quantized here, independently of the encoder). With --dump
 * FILE the keeping-up client's frames are written for decoders in other
 * languages (tests/bench/decode_v2_bench.mjs): each frame as a u32
 * little-endian length and the frame.
 *
 * With --views N the same snapshots are also cut into version 3's tiles
 * (PROTOCOL.md §12) by a second encoder, as a room with version 3
 * clients does, and N clients, each looking at its own random view of
 * --view W,H units that keeps up, are sent their frames (view.h: the parts
 * encoded the first time one is needed, then spliced). Version 2's encode
 * and version 3's (the tiles, and the parts and splices of every view) are
 * timed apart, on the same snapshots, so their ratio is side by side. With
 * --verify each view's frames are decoded and must hold exactly the
 * world's quantized boids of the tiles of its rect.
 *
 * The last line printed is one JSON object; everything above is for people.
 */
#define _POSIX_C_SOURCE 200809L

#include "clock.h"
#include "proto_snapshot.h"
#include "proto_v2.h"
#include "proto_v3.h"
#include "sim.h"
#include "snapenc.h"
#include "view.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS 16
#define CLIENTS    3

struct opts {
    long boids;
    double seconds, warmup, tick_hz, snapshot_hz;
    double width, height; /* 0: 1600 x 1000, grown with the boids past 10,000 */
    long seed, deltas;
    int verify;
    const char *dump;
    int nparams;
    const char *param_name[MAX_PARAMS];
    float param_value[MAX_PARAMS];
    long views;            /* version 3 clients, 0: none */
    long lag;              /* every other one takes every lag-th snapshot (1: all keep up) */
    double view_w, view_h; /* their views' size */
    long px, budget;       /* their pixels across (0: one per unit) and budget (bytes/s) */
    double tile;           /* the tile grid's tiles, world units */
};

/* A version 3 client: its view and, with --verify, its decoder. */
struct viewer {
    struct view_feed feed;
    unsigned stride; /* takes the snapshots whose seq is a multiple of this */
    struct proto_v3_decoder *dec;
};

struct client {
    const char *name;
    double every; /* takes snapshot seq when seq / every passes an integer */
    uint32_t sent[PROTO_V2_HISTORY];
    size_t nsent;
    uint64_t frames, bytes, keys;
    struct proto_v2_decoder *dec;
    int64_t decode_ns;
};

struct bench {
    struct opts o;
    struct sim_world *w;
    struct snapenc *enc;
    uint16_t *qx, *qy; /* --verify: the world's boids, quantized here */
    uint8_t *heading;
    struct client clients[CLIENTS];
    int64_t encode_cpu_ns, encode_wall_ns, max_encode_cpu_ns;
    uint64_t snapshots;
    FILE *dump;
    /* --views: version 3's encoder and clients, and what they cost. */
    struct snapenc *enc3;
    struct viewer *viewers;
    struct view_scratch scratch;
    struct tiles_grid grid;
    uint32_t *ids, *order, *tile_start; /* --verify: the world's boids by (tile, id) */
    int64_t tiles_cpu_ns, views_cpu_ns;
    uint64_t view_frames, view_bytes, view_keys, view_boids;
    uint64_t lag_frames, lag_bytes; /* --lag: the lagging viewers' share of those */
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: snapbench [--boids N] [--seconds S] [--warmup S] [--tick-hz HZ]\n"
            "                 [--snapshot-hz HZ]\n"
            "                 [--width W --height H] [--param NAME=VALUE ...] [--deltas K]\n"
            "                 [--seed S] [--verify] [--dump FILE]\n"
            "                 [--views N [--view W,H] [--tile T] [--lag K]]\n"
            "                 [--help]\n"
            "\n"
            "Steps a flock and encodes its snapshots as version 2 frames, as a room would.\n"
            "  --boids N         boids, scattered at the start (default 10000, 1..1000000)\n"
            "  --seconds S       simulated time (default 60)\n"
            "  --warmup S        simulated time stepped first, with no snapshot (default 0)\n"
            "  --tick-hz HZ      simulation rate (default 60)\n"
            "  --snapshot-hz HZ  snapshot rate (default 20)\n"
            "  --width, --height world size (default 1600 x 1000, scaled to keep the\n"
            "                    density of 10,000 boids when there are more)\n"
            "  --param N=V       a flocking parameter for every group (repeatable)\n"
            "  --deltas K        most delta kinds per snapshot (default 3, 0..20)\n"
            "  --seed S          PRNG seed (default 1)\n"
            "  --verify          each client decodes what it gets and checks the state\n"
            "  --dump FILE       write the frames the keeping-up client gets\n"
            "  --views N         also version 3: N clients with a random view each (0..10000)\n"
            "  --view W,H        the views' size in world units (default 1600,900)\n"
            "  --px P            pixels across each view is drawn at (default: one per unit)\n"
            "  --budget B        bytes per second each view accepts (default 100000000)\n"
            "  --tile T          tiles of about T world units (default 300, as flockd)\n"
            "  --lag K           every other view takes only every K-th snapshot (default 1)\n"
            "The last line is JSON: per kind and per client, frames and bytes per boid;\n"
            "encode CPU time per snapshot (all kinds together, hash included); with\n"
            "--views, version 2's and version 3's encode CPU per snapshot and their ratio,\n"
            "and each view's bytes per frame.\n");
}

/* A number in [lo, hi] into *out: 0, or PROTO_E_BAD_ARG. */
static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return PROTO_E_BAD_ARG;
    *out = v;
    return 0;
}

/* --param NAME=VALUE into o: 0, or PROTO_E_BAD_ARG. */
static int parse_param(struct opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    char name[64], *end;
    if (!eq || o->nparams == MAX_PARAMS || eq - v >= (ptrdiff_t)sizeof name)
        return PROTO_E_BAD_ARG;
    snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
    const struct sim_param_desc *d = sim_param_find(name);
    float val = strtof(eq + 1, &end);
    if (!d || *end || end == eq + 1 || !sim_param_valid(d, val))
        return PROTO_E_BAD_ARG;
    o->param_name[o->nparams] = d->name;
    o->param_value[o->nparams++] = val;
    return 0;
}

/* Applies one option with its value: 0, or PROTO_E_BAD_ARG if either is
 * bad. */
static int parse_option(struct opts *o, const char *a, const char *v)
{
    double n;
    int rc = PROTO_E_BAD_ARG;
    if (!strcmp(a, "--boids") && !(rc = parse_num(v, 1, 1000000, &n)))
        o->boids = (long)n;
    else if (!strcmp(a, "--seconds") && !(rc = parse_num(v, 0.1, 3600, &n)))
        o->seconds = n;
    else if (!strcmp(a, "--tick-hz") && !(rc = parse_num(v, 1, 240, &n)))
        o->tick_hz = n;
    else if (!strcmp(a, "--snapshot-hz") && !(rc = parse_num(v, 1, 240, &n)))
        o->snapshot_hz = n;
    else if (!strcmp(a, "--width") && !(rc = parse_num(v, 16, 1e6, &n)))
        o->width = n;
    else if (!strcmp(a, "--height") && !(rc = parse_num(v, 16, 1e6, &n)))
        o->height = n;
    else if (!strcmp(a, "--deltas") && !(rc = parse_num(v, 0, PROTO_V2_PLAN_MAX - 1, &n)))
        o->deltas = (long)n;
    else if (!strcmp(a, "--seed") && !(rc = parse_num(v, 0, INT32_MAX, &n)))
        o->seed = (long)n;
    else if (!strcmp(a, "--dump"))
        o->dump = v, rc = 0;
    else if (!strcmp(a, "--views") && !(rc = parse_num(v, 0, 10000, &n)))
        o->views = (long)n;
    else if (!strcmp(a, "--warmup") && !(rc = parse_num(v, 0, 3600, &n)))
        o->warmup = n;
    else if (!strcmp(a, "--lag") && !(rc = parse_num(v, 1, 100, &n)))
        o->lag = (long)n;
    else if (!strcmp(a, "--tile") && !(rc = parse_num(v, 1, 1e6, &n)))
        o->tile = n;
    else if (!strcmp(a, "--px") && !(rc = parse_num(v, 1, PROTO_VIEW_PX_MAX, &n)))
        o->px = (long)n;
    else if (!strcmp(a, "--budget") &&
             !(rc = parse_num(v, PROTO_VIEW_BUDGET_MIN, PROTO_VIEW_BUDGET_MAX, &n)))
        o->budget = (long)n;
    else if (!strcmp(a, "--view"))
        rc = sscanf(v, "%lf,%lf", &o->view_w, &o->view_h) == 2 && o->view_w >= 1 &&
                     o->view_h >= 1 && o->view_w <= 1e6 && o->view_h <= 1e6
                 ? 0
                 : PROTO_E_BAD_ARG;
    else if (!strcmp(a, "--param"))
        rc = parse_param(o, v);
    return rc;
}

/* The options into o: 0, or PROTO_E_BAD_ARG (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.boids = 10000,
                       .seconds = 60,
                       .tick_hz = 60,
                       .snapshot_hz = 20,
                       .seed = 1,
                       .deltas = 3,
                       .budget = PROTO_VIEW_BUDGET_MAX,
                       .view_w = 1600,
                       .view_h = 900,
                       .tile = 300,
                       .lag = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--verify")) {
            o->verify = 1;
        } else if (!v || parse_option(o, a, v)) {
            fprintf(stderr, "snapbench: bad option or value: %s %s (see --help)\n", a, v ? v : "");
            return PROTO_E_BAD_ARG;
        } else {
            i++;
        }
    }
    if (o->snapshot_hz > o->tick_hz) {
        fprintf(stderr, "snapbench: --snapshot-hz must not exceed --tick-hz\n");
        return PROTO_E_BAD_ARG;
    }
    return 0;
}

static int64_t cpu_ns(void)
{
    /* clock.h has no CPU clock: this program measures CPU cost on a machine
     * that other work shares, so it reads the thread's own. */
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- setup -------------------------------------------------------------- */

/* The world: 0, or PROTO_E_INTERNAL (said). */
static int make_world(struct bench *b)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    double grow = b->o.boids > 10000 ? sqrt((double)b->o.boids / 10000.0) : 1.0;
    cfg.width = (float)(b->o.width > 0 ? b->o.width : cfg.width * grow);
    cfg.height = (float)(b->o.height > 0 ? b->o.height : cfg.height * grow);
    cfg.capacity = (uint32_t)b->o.boids;
    cfg.dt = (float)(1.0 / b->o.tick_hz);
    cfg.seed = (uint64_t)b->o.seed;
    const char *err = NULL;
    b->w = sim_create(&cfg, &err);
    if (!b->w) {
        fprintf(stderr, "snapbench: cannot create world: %s\n", err);
        return PROTO_E_INTERNAL;
    }
    for (int k = 0; k < b->o.nparams; k++)
        sim_param_set(b->w, -1, b->o.param_name[k], b->o.param_value[k]);
    sim_scatter(b->w, (uint32_t)b->o.boids, 0); /* as a room starts */
    return 0;
}

/* The encoder, the clients' decoders, --verify's arrays: 0, or
 * PROTO_E_INTERNAL (said). */
static int make_buffers(struct bench *b)
{
    uint32_t n = (uint32_t)b->o.boids;
    const char *err = NULL;
    struct snapenc_config ec = {.capacity = n, .clock_ns = cpu_ns};
    b->enc = snapenc_create(&ec, &err);
    b->clients[0] = (struct client){.name = "keeps_up", .every = 1};
    b->clients[1] = (struct client){.name = "every_other", .every = 2};
    /* Served every 2.7 snapshots, gaps of 2 and 3 mixed: a client of a
     * server whose core is full (10,000 viewers of fanout_bench.py). */
    b->clients[2] = (struct client){.name = "one_in_2_7", .every = 2.7};
    for (int c = 0; c < CLIENTS && b->o.verify; c++)
        if (!(b->clients[c].dec = proto_v2_decoder_create(n, 0, &err)))
            break;
    if (b->o.verify) {
        b->qx = malloc(n * sizeof *b->qx);
        b->qy = malloc(n * sizeof *b->qy);
        b->heading = malloc(n);
    }
    if (!b->enc ||
        (b->o.verify && (!b->clients[CLIENTS - 1].dec || !b->qx || !b->qy || !b->heading))) {
        fprintf(stderr, "snapbench: %s\n", err ? err : "out of memory");
        return PROTO_E_INTERNAL;
    }
    return 0;
}

/* A number from *state, uniform in [0, 1) (splitmix64). */
static double uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* --views: version 3's encoder on the room's grid, and the viewers, each
 * with its own random view within the world: 0, or PROTO_E_INTERNAL (said). */
static int make_viewers(struct bench *b)
{
    const struct sim_config *cfg = sim_config(b->w);
    const char *err = NULL;
    struct snapenc_config ec = {.capacity = (uint32_t)b->o.boids, .clock_ns = cpu_ns};
    tiles_grid_for(cfg->width, cfg->height, (float)b->o.tile, sim_group_params(b->w, 0)->max_speed,
                   &ec.grid);
    b->grid = ec.grid;
    b->enc3 = snapenc_create(&ec, &err);
    b->viewers = calloc((size_t)b->o.views, sizeof *b->viewers);
    if (b->o.verify) {
        b->ids = malloc((size_t)b->o.boids * sizeof *b->ids);
        b->order = malloc((size_t)b->o.boids * sizeof *b->order);
        b->tile_start = malloc(((size_t)b->grid.cols * b->grid.rows + 1) * sizeof *b->tile_start);
    }
    if (!b->enc3 || !b->viewers || (b->o.verify && (!b->ids || !b->order || !b->tile_start))) {
        fprintf(stderr, "snapbench: %s\n", err ? err : "out of memory");
        return PROTO_E_INTERNAL;
    }
    uint64_t rng = (uint64_t)b->o.seed;
    double w = fmin(b->o.view_w, cfg->width), h = fmin(b->o.view_h, cfg->height);
    uint32_t parts = VIEW_RECT_MAX * VIEW_RECT_MAX;
    for (long k = 0; k < b->o.views; k++) {
        struct viewer *v = &b->viewers[k];
        v->stride = k % 2 ? (unsigned)b->o.lag : 1;
        v->feed.req.args = (struct proto_view_args){.x = (float)(uniform(&rng) * (cfg->width - w)),
                                                    .y = (float)(uniform(&rng) * (cfg->height - h)),
                                                    .w = (float)w,
                                                    .h = (float)h,
                                                    .px = (uint32_t)b->o.px,
                                                    .budget = (uint32_t)b->o.budget};
        if (b->o.verify && !(v->dec = proto_v3_decoder_create((uint32_t)b->o.boids, parts, 0,
                                                              PROTO_V3_FIELD_CELLS, &err))) {
            fprintf(stderr, "snapbench: %s\n", err);
            return PROTO_E_INTERNAL;
        }
    }
    return 0;
}

static void free_bench(struct bench *b)
{
    for (long k = 0; b->viewers && k < b->o.views; k++)
        proto_v3_decoder_destroy(b->viewers[k].dec);
    free(b->viewers);
    free(b->ids);
    free(b->order);
    free(b->tile_start);
    view_scratch_free(&b->scratch);
    snapenc_destroy(b->enc3);
    for (int c = 0; c < CLIENTS; c++)
        proto_v2_decoder_destroy(b->clients[c].dec);
    snapenc_destroy(b->enc);
    free(b->qx);
    free(b->qy);
    free(b->heading);
    sim_destroy(b->w);
    if (b->dump)
        fclose(b->dump);
}

/* ---- one snapshot ------------------------------------------------------- */

/* The kinds a room whose clients take the key and the first --deltas
 * deltas encodes. */
static unsigned wanted(const struct bench *b)
{
    unsigned want = 1u << FRAME_KEY;
    for (long k = 1; k <= b->o.deltas; k++)
        want |= 1u << (FRAME_KEY + k);
    return want;
}

/* The world's boids as PROTOCOL.md §4.4 quantizes them, for --verify. */
static void quantize_world(struct bench *b)
{
    struct sim_view v;
    sim_view(b->w, &v);
    for (uint32_t i = 0; i < v.count; i++) {
        b->qx[i] = proto_quantize_pos(v.x[i], v.width);
        b->qy[i] = proto_quantize_pos(v.y[i], v.height);
        b->heading[i] = proto_quantize_heading(v.vx[i], v.vy[i]);
    }
}

static bool same_boids(const struct bench *b, const struct proto_v2_state *got)
{
    uint32_t n = got->count;
    return n == (uint32_t)b->o.boids && !memcmp(got->qx, b->qx, n * sizeof *b->qx) &&
           !memcmp(got->qy, b->qy, n * sizeof *b->qy) && !memcmp(got->heading, b->heading, n);
}

static void dump_frame(FILE *out, const uint8_t *p, size_t len)
{
    uint8_t head[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                       (uint8_t)(len >> 24)};
    fwrite(head, 1, 4, out);
    fwrite(p, 1, len, out);
}

/* The client takes its frame (the one a room would send it: frame_pick()
 * among the kinds encoded): counts it, decodes and checks it if asked.
 * 0, or the decoder's code (PROTO_E_HASH_MISMATCH: another state), said. */
static int deliver(struct bench *b, struct client *c, struct frame *f)
{
    unsigned ideal;
    int picked = frame_pick(f, c->sent, c->nsent, &ideal);
    if (picked < 0)
        return 0; /* cannot happen: the key frame is always encoded here */
    unsigned kind = (unsigned)picked;
    const uint8_t *p = frame_payload(f, kind);
    size_t len = f->part[kind].len;
    c->frames++;
    c->bytes += len;
    c->keys += kind == FRAME_KEY;
    memmove(c->sent + 1, c->sent, (PROTO_V2_HISTORY - 1) * sizeof c->sent[0]);
    c->sent[0] = (uint32_t)f->seq;
    c->nsent += c->nsent < PROTO_V2_HISTORY;
    if (c == &b->clients[0] && b->dump)
        dump_frame(b->dump, p, len);
    if (!c->dec)
        return 0;
    const struct proto_v2_state *got = NULL;
    int64_t t0 = cpu_ns();
    int rc = proto_v2_decode(c->dec, p, len, &got);
    c->decode_ns += cpu_ns() - t0;
    if (rc || !same_boids(b, got)) {
        fprintf(stderr, "snapbench: client %s: frame %" PRIu64 " (%s) %s\n", c->name, f->seq,
                frame_kind_name(kind), rc ? proto_status_name(rc) : "decoded to another state");
        return rc ? rc : PROTO_E_HASH_MISMATCH;
    }
    return 0;
}

/* ---- version 3 ---------------------------------------------------------- */

static const struct bench *sorting; /* qsort's comparators read the bench */

static uint32_t tile_at(const struct bench *b, uint32_t i)
{
    return proto_v3_tile_of(b->qy[i], b->grid.rows) * b->grid.cols +
           proto_v3_tile_of(b->qx[i], b->grid.cols);
}

static int by_tile_id(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, c = *(const uint32_t *)pb;
    uint32_t ta = tile_at(sorting, a), tc = tile_at(sorting, c);
    if (ta != tc)
        return ta < tc ? -1 : 1;
    return sorting->ids[a] < sorting->ids[c] ? -1 : sorting->ids[a] > sorting->ids[c];
}

static int by_id(const void *pa, const void *pb)
{
    uint32_t a = sorting->ids[*(const uint32_t *)pa], c = sorting->ids[*(const uint32_t *)pb];
    return a < c ? -1 : a > c;
}

/* --verify: the world's boids (quantize_world() done) by tile and id,
 * with qsort, apart from the tiles' own sort. */
static void index_world(struct bench *b)
{
    struct sim_view v;
    sim_view(b->w, &v);
    uint32_t n = v.count, tiles = (uint32_t)b->grid.cols * b->grid.rows;
    memcpy(b->ids, v.id, n * sizeof *b->ids);
    for (uint32_t i = 0; i < n; i++)
        b->order[i] = i;
    sorting = b;
    qsort(b->order, n, sizeof *b->order, by_tile_id);
    memset(b->tile_start, 0, ((size_t)tiles + 1) * sizeof *b->tile_start);
    for (uint32_t k = 0; k < n; k++)
        b->tile_start[tile_at(b, b->order[k]) + 1]++;
    for (uint32_t t = 0; t < tiles; t++)
        b->tile_start[t + 1] += b->tile_start[t];
}

/* Whether part p of a frame at this shift and sample holds exactly the
 * world's boids of its super-tile. */
static bool part_is_world(const struct bench *b, const struct proto_v3_part *p, unsigned shift,
                          unsigned sample, uint32_t *want)
{
    uint32_t n = 0, cols = b->grid.cols, rows = b->grid.rows;
    for (uint32_t ty = p->ty << shift; ty < ((p->ty + 1) << shift) && ty < rows; ty++)
        for (uint32_t tx = p->tx << shift; tx < ((p->tx + 1) << shift) && tx < cols; tx++)
            for (uint32_t k = b->tile_start[ty * cols + tx]; k < b->tile_start[ty * cols + tx + 1];
                 k++)
                if (proto_v3_in_sample(b->ids[b->order[k]], sample))
                    want[n++] = b->order[k];
    qsort(want, n, sizeof *want, by_id);
    if (n != p->count)
        return false;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = want[k];
        if (p->id[k] != b->ids[i] || p->qx[k] != b->qx[i] || p->qy[k] != b->qy[i] ||
            p->heading[k] != b->heading[i])
            return false;
    }
    return true;
}

/* --verify: viewer k's frame decodes, and each part is the world's. 0, or
 * the decoder's code or PROTO_E_HASH_MISMATCH, said. */
static int check_view(struct bench *b, long k, const uint8_t *p, size_t len, uint64_t seq)
{
    const struct proto_v3_frame *f = NULL;
    int rc = proto_v3_decode(b->viewers[k].dec, p, len, &f);
    uint32_t *want = rc ? NULL : malloc(((size_t)b->o.boids + 1) * sizeof *want);
    for (uint32_t j = 0; !rc && j < f->part_count; j++)
        if (!want || !part_is_world(b, &f->parts[j], f->h.shift, f->h.sample, want))
            rc = PROTO_E_HASH_MISMATCH;
    free(want);
    if (rc)
        fprintf(stderr, "snapbench: view %ld: snapshot %" PRIu64 ": %s\n", k, seq,
                rc == PROTO_E_HASH_MISMATCH ? "a part is not the world's boids of its tiles"
                                            : proto_status_name(rc));
    return rc;
}

/* The snapshot cut into tiles, and every viewer's frame of it: 0, or a
 * negative PROTO_E_* code (said). */
static int serve_views(struct bench *b, uint64_t seq, int64_t wall_us)
{
    struct snapenc_input in = {
        .world = b->w, .seq = seq, .wall_us = wall_us, .want = 1u << FRAME_WANT_V3};
    int64_t c0 = cpu_ns();
    struct frame *f = snapenc_encode(b->enc3, &in);
    b->tiles_cpu_ns += cpu_ns() - c0;
    if (!f || !f->v3.sets || !f->v3.sets[0]) {
        frame_release(f);
        fprintf(stderr, "snapbench: out of memory\n");
        return PROTO_E_INTERNAL;
    }
    if (b->o.verify)
        index_world(b);
    int rc = 0;
    for (long k = 0; k < b->o.views && rc == 0; k++) {
        struct view_made made;
        if (seq % b->viewers[k].stride)
            continue;
        c0 = cpu_ns();
        int64_t now = (int64_t)((double)seq * 1e9 / b->o.snapshot_hz); /* the room's clock */
        ptrdiff_t len = view_frame(f->v3.sets[0], &b->viewers[k].feed, 0, (double)b->o.budget,
                                   b->o.snapshot_hz, now, &b->scratch, &made);
        b->views_cpu_ns += cpu_ns() - c0;
        if (len == 0)
            continue; /* its budget holds it back this snapshot */
        if (len < 0) {
            fprintf(stderr, "snapbench: view %ld: no frame (%td)\n", k, len);
            rc = PROTO_E_INTERNAL;
            break;
        }
        b->view_frames++;
        b->view_bytes += (uint64_t)len;
        b->view_keys += made.keys;
        b->view_boids += made.boids;
        if (b->viewers[k].stride > 1)
            b->lag_frames++, b->lag_bytes += (uint64_t)len;
        if (b->viewers[k].dec)
            rc = check_view(b, k, b->scratch.buf + b->scratch.pre, (size_t)len, seq);
    }
    frame_release(f);
    return rc;
}

/* One snapshot encoded and taken by the clients: 0, or a negative
 * PROTO_E_* code (said). */
static int snapshot(struct bench *b, uint64_t seq)
{
    struct snapenc_input in = {
        .world = b->w, .seq = seq, .wall_us = clock_wall_us(), .want = wanted(b)};
    int64_t c0 = cpu_ns(), w0 = clock_mono_ns();
    struct frame *f = snapenc_encode(b->enc, &in);
    int64_t cpu = cpu_ns() - c0;
    b->encode_cpu_ns += cpu;
    b->encode_wall_ns += clock_mono_ns() - w0;
    if (cpu > b->max_encode_cpu_ns)
        b->max_encode_cpu_ns = cpu;
    if (!f) {
        fprintf(stderr, "snapbench: out of memory\n");
        return PROTO_E_INTERNAL;
    }
    b->snapshots++;
    if (b->o.verify)
        quantize_world(b);
    int rc = 0;
    for (int c = 0; c < CLIENTS && rc == 0; c++)
        if (floor((double)seq / b->clients[c].every) >
            floor((double)(seq - 1) / b->clients[c].every))
            rc = deliver(b, &b->clients[c], f);
    frame_release(f);
    if (rc == 0 && b->o.views)
        rc = serve_views(b, seq, in.wall_us);
    return rc;
}

/* ---- report ------------------------------------------------------------- */

static double per_boid(uint64_t bytes, uint64_t frames, long boids)
{
    return frames ? (double)bytes / ((double)frames * (double)boids) : 0.0;
}

/* --views: version 3's figures beside version 2's; json: as the JSON's
 * members, else for people. */
static void report_views(const struct bench *b, bool json)
{
    double n = (double)b->snapshots, frames = (double)b->view_frames;
    double v2 = (double)b->encode_cpu_ns / n / 1e6, tiles = (double)b->tiles_cpu_ns / n / 1e6;
    double views = (double)b->views_cpu_ns / n / 1e6, bytes = (double)b->view_bytes / frames;
    double boids = (double)b->view_boids / frames;
    double kbs = (double)b->view_bytes / (double)b->o.views / (n / b->o.snapshot_hz) / 1e3;
    uint64_t parts, part_bytes;
    tiles_counters(&parts, &part_bytes);
    double lag = b->lag_frames ? (double)b->lag_bytes / (double)b->lag_frames : 0.0;
    double keep = (double)(b->view_bytes - b->lag_bytes) / (double)(b->view_frames - b->lag_frames);
    if (json) {
        printf(",\"views\":%ld,\"v3_encode_ms\":%.4f,\"v3_tiles_ms\":%.4f,\"v3_views_ms\":%.4f,"
               "\"v3_over_v2\":%.4f,\"view_frame_bytes\":%.1f,\"view_boids\":%.1f,"
               "\"view_kb_per_s\":%.3f,\"keep_up_frame_bytes\":%.1f,\"lag_frame_bytes\":%.1f",
               b->o.views, tiles + views, tiles, views, (tiles + views) / v2, bytes, boids, kbs,
               keep, lag);
        return;
    }
    if (b->lag_frames)
        printf("    a frame of a view that keeps up: %.0f B; of one that takes every %ld-th "
               "snapshot: %.0f B (%.2f x)\n",
               keep, b->o.lag, lag, lag / keep);
    printf("  version 3, tiles of %.0f x %.0f units (%u x %u), %ld views of %g x %g:\n"
           "    encode %.3f ms CPU per snapshot: tiles %.3f, parts and splices of every view "
           "%.3f (%.2f x version 2's %.3f)\n"
           "    a view's frame: %.0f B, %.0f boids, %.2f key parts; %.1f KB/s a view (%g "
           "snapshots/s)\n"
           "    parts encoded: %.0f per snapshot (%u super-tiles at shift 0)\n",
           (double)b->grid.width / b->grid.cols, (double)b->grid.height / b->grid.rows,
           b->grid.cols, b->grid.rows, b->o.views, b->o.view_w, b->o.view_h, tiles + views, tiles,
           views, (tiles + views) / v2, v2, bytes, boids, (double)b->view_keys / frames, kbs,
           b->o.snapshot_hz, (double)parts / n, (unsigned)b->grid.cols * b->grid.rows);
}

static void report(const struct bench *b)
{
    struct snapenc_stats st;
    snapenc_stats(b->enc, &st);
    double n = (double)b->snapshots;
    printf("  encode %.3f ms CPU per snapshot (max %.3f, wall %.3f), of which quantize and "
           "hash %.3f ms\n",
           (double)b->encode_cpu_ns / n / 1e6, (double)b->max_encode_cpu_ns / 1e6,
           (double)b->encode_wall_ns / n / 1e6, (double)st.prepare_ns / n / 1e6);
    for (unsigned k = FRAME_KEY; k < FRAME_KINDS; k++)
        if (st.frames[k])
            printf("  %-12s %6" PRIu64 " frames  %.3f B/boid  %.3f ms\n", frame_kind_name(k),
                   st.frames[k], per_boid(st.bytes[k], st.frames[k], b->o.boids),
                   (double)st.ns[k] / (double)st.frames[k] / 1e6);
    for (int c = 0; c < CLIENTS; c++) {
        const struct client *cl = &b->clients[c];
        printf("  client %-11s %6" PRIu64 " frames (%" PRIu64 " key)  %.3f B/boid", cl->name,
               cl->frames, cl->keys, per_boid(cl->bytes, cl->frames, b->o.boids));
        if (cl->dec)
            printf("  decode %.3f ms", (double)cl->decode_ns / (double)cl->frames / 1e6);
        printf("\n");
    }
    if (b->o.views)
        report_views(b, false);
    printf("{\"boids\":%ld,\"snapshots\":%" PRIu64 ",\"encode_ms\":%.4f,\"encode_max_ms\":%.4f,"
           "\"quantize_ms\":%.4f",
           b->o.boids, b->snapshots, (double)b->encode_cpu_ns / n / 1e6,
           (double)b->max_encode_cpu_ns / 1e6, (double)st.prepare_ns / n / 1e6);
    for (unsigned k = FRAME_KEY; k < FRAME_KINDS; k++)
        if (st.frames[k])
            printf(",\"%s\":%.4f", frame_kind_name(k),
                   per_boid(st.bytes[k], st.frames[k], b->o.boids));
    for (int c = 0; c < CLIENTS; c++) {
        const struct client *cl = &b->clients[c];
        printf(",\"%s\":%.4f", cl->name, per_boid(cl->bytes, cl->frames, b->o.boids));
        if (cl->dec)
            printf(",\"%s_decode_ms\":%.4f", cl->name,
                   (double)cl->decode_ns / (double)cl->frames / 1e6);
    }
    if (b->o.views)
        report_views(b, true);
    printf("}\n");
}

int main(int argc, char **argv)
{
    static struct bench b;
    if (parse_args(argc, argv, &b.o))
        return 2;
    if (make_world(&b) || make_buffers(&b) || (b.o.views && make_viewers(&b))) {
        free_bench(&b);
        return 1;
    }
    if (b.o.dump && !(b.dump = fopen(b.o.dump, "wb"))) {
        fprintf(stderr, "snapbench: %s: %s\n", b.o.dump, strerror(errno));
        free_bench(&b);
        return 1;
    }
    long ticks = lround(b.o.seconds * b.o.tick_hz);
    const struct sim_config *cfg = sim_config(b.w);
    printf("snapbench: %ld boids, world %.0f x %.0f, %ld ticks at %g Hz, %g snapshots a second\n",
           b.o.boids, (double)cfg->width, (double)cfg->height, ticks, b.o.tick_hz, b.o.snapshot_hz);
    fflush(stdout);
    for (long t = lround(b.o.warmup * b.o.tick_hz); t > 0; t--)
        sim_step(b.w); /* the flock forms before it is measured */
    int rc = 0;
    uint64_t seq = 0;
    double phase = 0; /* the snapshots spread over the ticks, as a room spreads them */
    for (long t = 1; t <= ticks && rc == 0; t++) {
        sim_step(b.w);
        phase += b.o.snapshot_hz;
        if (phase >= b.o.tick_hz * (1.0 - 1e-9)) {
            phase = fmax(0.0, phase - b.o.tick_hz);
            rc = snapshot(&b, ++seq);
        }
    }
    if (rc == 0)
        report(&b);
    free_bench(&b);
    return rc ? 1 : 0;
}
