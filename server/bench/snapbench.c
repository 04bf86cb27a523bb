/*
 * snapbench — what snapshot version 2 costs on a real flock: bytes per
 * boid of each frame kind and of what clients receive, and the time to
 * encode (and decode) them.
 *
 * A world is stepped by the simulation core at --tick-hz; every
 * tick_hz / snapshot_hz ticks its state is quantized as flockd does
 * (PROTOCOL.md §4.4) and the frames proto_v2_plan() asks for are encoded
 * once each, as a room would. Two simulated clients take them: one that
 * keeps up and one that takes every other snapshot; each gets the frame
 * proto_v2_pick() chooses for it and, with --verify, decodes it with its
 * own decoder and must reconstruct the state exactly. With --dump FILE
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

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS 16
#define RING       (PROTO_V2_HISTORY + 1) /* this snapshot and the bases it may name */
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

/* One frame kind of the plan, by its gaps, and what it cost. */
struct kind {
    uint8_t gap1, gap0;
    uint64_t frames, bytes;
    int64_t cpu_ns;
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
    struct proto_v2_encoder *enc;
    struct proto_v2_state ring[RING];
    uint8_t *out[PROTO_V2_PLAN_MAX];
    size_t out_cap;
    ptrdiff_t out_len[PROTO_V2_PLAN_MAX];
    struct kind kinds[8];
    unsigned nkinds;
    struct client clients[CLIENTS];
    uint32_t run; /* previous snapshots held with the current epoch */
    int64_t encode_cpu_ns, encode_wall_ns, quantize_ns, max_encode_cpu_ns, hash_ns;
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

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int parse_param(struct opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    char name[64], *end;
    if (!eq || o->nparams == MAX_PARAMS || eq - v >= (ptrdiff_t)sizeof name)
        return -1;
    snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
    const struct sim_param_desc *d = sim_param_find(name);
    float val = strtof(eq + 1, &end);
    if (!d || *end || end == eq + 1 || !sim_param_valid(d, val))
        return -1;
    o->param_name[o->nparams] = d->name;
    o->param_value[o->nparams++] = val;
    return 0;
}

/* Applies one option with its value; -1 if either is bad. */
static int parse_option(struct opts *o, const char *a, const char *v)
{
    double n;
    int rc = -1;
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
            return -1;
        } else {
            i++;
        }
    }
    if (o->snapshot_hz > o->tick_hz) {
        fprintf(stderr, "snapbench: --snapshot-hz must not exceed --tick-hz\n");
        return -1;
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
        return -1;
    }
    for (int k = 0; k < b->o.nparams; k++)
        sim_param_set(b->w, -1, b->o.param_name[k], b->o.param_value[k]);
    sim_scatter(b->w, (uint32_t)b->o.boids, 0); /* as a room starts */
    return 0;
}

static int make_buffers(struct bench *b)
{
    uint32_t n = (uint32_t)b->o.boids;
    const char *err = NULL;
    b->enc = proto_v2_encoder_create(n, &err);
    b->out_cap = proto_v2_frame_max_size(n, 1, 0, 0);
    for (int k = 0; k < RING; k++) {
        struct proto_v2_state *s = &b->ring[k];
        s->qx = malloc(n * sizeof *s->qx);
        s->qy = malloc(n * sizeof *s->qy);
        s->heading = malloc(n);
        s->group = malloc(n);
        if (!s->qx || !s->qy || !s->heading || !s->group)
            return -1;
    }
    for (int k = 0; k < PROTO_V2_PLAN_MAX; k++)
        if (!(b->out[k] = malloc(b->out_cap)))
            return -1;
    b->clients[0] = (struct client){.name = "keeps_up", .stride = 1};
    b->clients[1] = (struct client){.name = "every_other", .stride = 2};
    for (int c = 0; c < CLIENTS && b->o.verify; c++)
        if (!(b->clients[c].dec = proto_v2_decoder_create(n, 0, &err)))
            break;
    if (!b->enc || (b->o.verify && !b->clients[CLIENTS - 1].dec)) {
        fprintf(stderr, "snapbench: %s\n", err ? err : "out of memory");
        return -1;
    }
    return 0;
}

static void free_bench(struct bench *b)
{
    for (int k = 0; k < RING; k++) {
        free(b->ring[k].qx);
        free(b->ring[k].qy);
        free(b->ring[k].heading);
        free(b->ring[k].group);
    }
    for (int k = 0; k < PROTO_V2_PLAN_MAX; k++)
        free(b->out[k]);
    for (int c = 0; c < CLIENTS; c++)
        proto_v2_decoder_destroy(b->clients[c].dec);
    proto_v2_encoder_destroy(b->enc);
    sim_destroy(b->w);
    if (b->dump)
        fclose(b->dump);
}

/* ---- one snapshot ------------------------------------------------------- */

/* Quantizes the world into the ring slot of seq, as a room would. */
static struct proto_v2_state *quantize(struct bench *b, uint32_t seq)
{
    struct sim_view v;
    sim_view(b->w, &v);
    struct proto_v2_state *s = &b->ring[seq % RING];
    uint32_t prev_epoch = b->ring[(seq + RING - 1) % RING].epoch;
    for (uint32_t i = 0; i < v.count; i++) {
        s->qx[i] = proto_quantize_pos(v.x[i], v.width);
        s->qy[i] = proto_quantize_pos(v.y[i], v.height);
        s->heading[i] = proto_quantize_heading(v.vx[i], v.vy[i]);
    }
    memcpy(s->group, v.group, v.count);
    s->seq = seq;
    s->tick = v.tick;
    s->server_time_us = (uint64_t)clock_wall_us();
    s->sim_hash = sim_hash(b->w);
    s->width = v.width;
    s->height = v.height;
    s->epoch = v.epoch;
    s->flags = PROTO_SNAPSHOT_FLAG_WRAP;
    s->count = v.count;
    b->run = seq > 1 && prev_epoch == v.epoch ? (b->run < RING - 1 ? b->run + 1 : b->run) : 0;
    return s;
}

static struct kind *kind_of(struct bench *b, struct proto_v2_plan_frame f)
{
    for (unsigned k = 0; k < b->nkinds; k++)
        if (b->kinds[k].gap1 == f.gap1 && b->kinds[k].gap0 == f.gap0)
            return &b->kinds[k];
    b->kinds[b->nkinds] = (struct kind){.gap1 = f.gap1, .gap0 = f.gap0};
    return &b->kinds[b->nkinds++];
}

/* Seals s and encodes every frame of the plan once; times all of it. */
static int encode_all(struct bench *b, struct proto_v2_state *s, const struct proto_v2_plan *p)
{
    int64_t c0 = cpu_ns(), w0 = clock_mono_ns();
    proto_v2_state_seal(s);
    b->hash_ns += cpu_ns() - c0;
    for (unsigned k = 0; k < p->count; k++) {
        int64_t k0 = cpu_ns();
        const struct proto_v2_plan_frame *f = &p->frame[k];
        const struct proto_v2_state *b1 = f->gap1 ? &b->ring[(s->seq - f->gap1) % RING] : NULL;
        const struct proto_v2_state *b0 =
            f->gap0 ? &b->ring[(s->seq - f->gap1 - f->gap0) % RING] : NULL;
        b->out_len[k] = proto_v2_encode(b->enc, s, b1, b0, b->out[k], b->out_cap);
        if (b->out_len[k] < 0) {
            fprintf(stderr, "snapbench: encode failed: %s\n",
                    proto_status_name((int)b->out_len[k]));
            return -1;
        }
        kind_of(b, p->frame[k])->cpu_ns += cpu_ns() - k0;
    }
    int64_t cpu = cpu_ns() - c0;
    b->encode_cpu_ns += cpu;
    b->encode_wall_ns += clock_mono_ns() - w0;
    if (cpu > b->max_encode_cpu_ns)
        b->max_encode_cpu_ns = cpu;
    for (unsigned k = 0; k < p->count; k++) {
        struct kind *kd = kind_of(b, p->frame[k]);
        kd->frames++;
        kd->bytes += (uint64_t)b->out_len[k];
    }
    return 0;
}

static bool same_boids(const struct proto_v2_state *a, const struct proto_v2_state *b)
{
    return a->count == b->count && a->seq == b->seq &&
           !memcmp(a->qx, b->qx, a->count * sizeof *a->qx) &&
           !memcmp(a->qy, b->qy, a->count * sizeof *a->qy) &&
           !memcmp(a->heading, b->heading, a->count) && !memcmp(a->group, b->group, a->count);
}

/* The client takes its frame: counts it, decodes and checks it if asked. */
static int deliver(struct bench *b, struct client *c, const struct proto_v2_plan *p,
                   const struct proto_v2_state *s)
{
    unsigned k = proto_v2_pick(p, c->sent, c->nsent);
    c->frames++;
    c->bytes += (uint64_t)b->out_len[k];
    c->keys += k == 0;
    memmove(c->sent + 1, c->sent, (PROTO_V2_HISTORY - 1) * sizeof c->sent[0]);
    c->sent[0] = s->seq;
    c->nsent += c->nsent < PROTO_V2_HISTORY;
    if (c == &b->clients[0] && b->dump) {
        uint8_t len[4] = {(uint8_t)b->out_len[k], (uint8_t)(b->out_len[k] >> 8),
                          (uint8_t)(b->out_len[k] >> 16), (uint8_t)(b->out_len[k] >> 24)};
        fwrite(len, 1, 4, b->dump);
        fwrite(b->out[k], 1, (size_t)b->out_len[k], b->dump);
    }
    if (!c->dec)
        return 0;
    const struct proto_v2_state *got = NULL;
    int64_t t0 = cpu_ns();
    int rc = proto_v2_decode(c->dec, b->out[k], (size_t)b->out_len[k], &got);
    c->decode_ns += cpu_ns() - t0;
    if (rc || !same_boids(got, s)) {
        fprintf(stderr, "snapbench: client %s: frame %u (kind %u) %s\n", c->name, s->seq, k,
                rc ? proto_status_name(rc) : "decoded to another state");
        return -1;
    }
    return 0;
}

static int snapshot(struct bench *b, uint32_t seq)
{
    int64_t t0 = cpu_ns();
    struct proto_v2_state *s = quantize(b, seq);
    b->quantize_ns += cpu_ns() - t0;
    struct proto_v2_plan plan;
    proto_v2_plan(seq, b->run, (unsigned)b->o.deltas, &plan);
    if (encode_all(b, s, &plan))
        return -1;
    b->snapshots++;
    for (int c = 0; c < CLIENTS; c++)
        if (seq % b->clients[c].stride == 0 && deliver(b, &b->clients[c], &plan, s))
            return -1;
    return 0;
}

/* ---- report ------------------------------------------------------------- */

static const char *kind_name(const struct kind *k, char *buf, size_t cap)
{
    if (!k->gap1)
        snprintf(buf, cap, "key");
    else if (!k->gap0)
        snprintf(buf, cap, "delta_%u", k->gap1);
    else
        snprintf(buf, cap, "delta_%u_%u", k->gap1, k->gap0);
    return buf;
}

static double per_boid(uint64_t bytes, uint64_t frames, long boids)
{
    return frames ? (double)bytes / ((double)frames * (double)boids) : 0.0;
}

static void report(const struct bench *b)
{
    char name[32];
    double n = (double)b->snapshots;
    printf("  encode %.3f ms CPU per snapshot (max %.3f, wall %.3f; hash %.3f), quantize %.3f ms\n",
           (double)b->encode_cpu_ns / n / 1e6, (double)b->max_encode_cpu_ns / 1e6,
           (double)b->encode_wall_ns / n / 1e6, (double)b->hash_ns / n / 1e6,
           (double)b->quantize_ns / n / 1e6);
    for (unsigned k = 0; k < b->nkinds; k++)
        printf("  %-12s %6" PRIu64 " frames  %.3f B/boid  %.3f ms\n",
               kind_name(&b->kinds[k], name, sizeof name), b->kinds[k].frames,
               per_boid(b->kinds[k].bytes, b->kinds[k].frames, b->o.boids),
               (double)b->kinds[k].cpu_ns / (double)b->kinds[k].frames / 1e6);
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
           (double)b->max_encode_cpu_ns / 1e6, (double)b->quantize_ns / n / 1e6);
    for (unsigned k = 0; k < b->nkinds; k++)
        printf(",\"%s\":%.4f", kind_name(&b->kinds[k], name, sizeof name),
               per_boid(b->kinds[k].bytes, b->kinds[k].frames, b->o.boids));
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
    uint32_t seq = 0;
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
