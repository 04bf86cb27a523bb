/*
 * snapbench — what snapshot version 2 costs on a real flock: bytes per
 * boid of each frame kind and of what clients receive, and the time to
 * encode (and decode) them.
 *
 * A world is stepped by the simulation core at --tick-hz; every
 * tick_hz / snapshot_hz ticks its snapshot is encoded by snapenc.h, the
 * code a room encodes with, as the key frame and the first --deltas
 * deltas of proto_v2_plan() (as a room whose clients take those). Two
 * simulated clients take them: one that keeps up and one that takes every
 * other snapshot; each gets the frame frame_pick() chooses for it, as
 * a room would, and, with --verify, decodes it with its own decoder and must
 * reconstruct the world's boids exactly (quantized here, independently of
 * the encoder). With --dump FILE
 * the keeping-up client's frames are written for decoders in other
 * languages (tests/bench/decode_v2_bench.mjs): each frame as a u32
 * little-endian length and the frame.
 *
 * The last line printed is one JSON object; everything above is for people.
 */
#define _POSIX_C_SOURCE 200809L

#include "clock.h"
#include "proto_snapshot.h"
#include "proto_v2.h"
#include "sim.h"
#include "snapenc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS 16
#define CLIENTS    2

struct opts {
    long boids;
    double seconds, tick_hz, snapshot_hz;
    double width, height; /* 0: 1600 x 1000, grown with the boids past 10,000 */
    long seed, deltas;
    int verify;
    const char *dump;
    int nparams;
    const char *param_name[MAX_PARAMS];
    float param_value[MAX_PARAMS];
};

struct client {
    const char *name;
    unsigned stride; /* takes snapshots whose seq is a multiple of this */
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
};

static void usage(FILE *out)
{
    fprintf(out, "usage: snapbench [--boids N] [--seconds S] [--tick-hz HZ] [--snapshot-hz HZ]\n"
                 "                 [--width W --height H] [--param NAME=VALUE ...] [--deltas K]\n"
                 "                 [--seed S] [--verify] [--dump FILE] [--help]\n"
                 "\n"
                 "Steps a flock and encodes its snapshots as version 2 frames, as a room would.\n"
                 "  --boids N         boids, scattered at the start (default 10000, 1..1000000)\n"
                 "  --seconds S       simulated time (default 60)\n"
                 "  --tick-hz HZ      simulation rate (default 60)\n"
                 "  --snapshot-hz HZ  snapshot rate (default 20)\n"
                 "  --width, --height world size (default 1600 x 1000, scaled to keep the\n"
                 "                    density of 10,000 boids when there are more)\n"
                 "  --param N=V       a flocking parameter for every group (repeatable)\n"
                 "  --deltas K        most delta kinds per snapshot (default 3, 0..4)\n"
                 "  --seed S          PRNG seed (default 1)\n"
                 "  --verify          each client decodes what it gets and checks the state\n"
                 "  --dump FILE       write the frames the keeping-up client gets\n"
                 "The last line is JSON: per kind and per client, frames and bytes per boid;\n"
                 "encode CPU time per snapshot (all kinds together, hash included).\n");
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
    else if (!strcmp(a, "--param"))
        rc = parse_param(o, v);
    return rc;
}

/* The options into o: 0, or PROTO_E_BAD_ARG (said). */
static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){
        .boids = 10000, .seconds = 60, .tick_hz = 60, .snapshot_hz = 20, .seed = 1, .deltas = 3};
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
    b->clients[0] = (struct client){.name = "keeps_up", .stride = 1};
    b->clients[1] = (struct client){.name = "every_other", .stride = 2};
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

static void free_bench(struct bench *b)
{
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
        if (seq % b->clients[c].stride == 0)
            rc = deliver(b, &b->clients[c], f);
    frame_release(f);
    return rc;
}

/* ---- report ------------------------------------------------------------- */

static double per_boid(uint64_t bytes, uint64_t frames, long boids)
{
    return frames ? (double)bytes / ((double)frames * (double)boids) : 0.0;
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
    printf("}\n");
}

int main(int argc, char **argv)
{
    static struct bench b;
    if (parse_args(argc, argv, &b.o))
        return 2;
    if (make_world(&b) || make_buffers(&b)) {
        free_bench(&b);
        return 1;
    }
    if (b.o.dump && !(b.dump = fopen(b.o.dump, "wb"))) {
        fprintf(stderr, "snapbench: %s: %s\n", b.o.dump, strerror(errno));
        free_bench(&b);
        return 1;
    }
    long ticks = lround(b.o.seconds * b.o.tick_hz);
    long every = lround(b.o.tick_hz / b.o.snapshot_hz);
    const struct sim_config *cfg = sim_config(b.w);
    printf("snapbench: %ld boids, world %.0f x %.0f, %ld ticks at %g Hz, a snapshot every %ld\n",
           b.o.boids, (double)cfg->width, (double)cfg->height, ticks, b.o.tick_hz, every);
    fflush(stdout);
    int rc = 0;
    uint64_t seq = 0;
    for (long t = 1; t <= ticks && rc == 0; t++) {
        sim_step(b.w);
        if (t % every == 0)
            rc = snapshot(&b, ++seq);
    }
    if (rc == 0)
        report(&b);
    free_bench(&b);
    return rc ? 1 : 0;
}
