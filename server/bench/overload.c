/*
 * overload.c — flockbench's overload mode (see overload.h).
 *
 * The machine's capacity is measured first: a world of CALIBRATION_BOIDS
 * in flockd's shape stepped as a big room's steps are (cut into pieces on
 * every tick thread); the big room gets `load` times the boids that fit a
 * period at that speed. The big room ticks alone for the warm-up, then the
 * small one is added; the small room's tick lateness is what room_info()
 * reports over its ticks (its last 1,024), so the measured seconds at its
 * rate should stay under 1,024 ticks.
 */
#define _POSIX_C_SOURCE 200809L

#include "overload.h"

#include "clock.h"
#include "frame.h"
#include "pool.h"
#include "proto.h"
#include "room.h"
#include "sim.h"
#include "stepper.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CALIBRATION_BOIDS 200000
#define MAX_BOIDS         4194304 /* sim.h's most */
#define POLL_NS           5000000 /* the emulated viewers look this often */
#define MAX_SECONDS       600

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A world of n boids in flockd's shape for a room of n, scattered. */
static struct sim_world *make_world(uint32_t n, double tick_hz, struct sim_config *cfg)
{
    sim_default_config(cfg);
    sim_world_for(n, &cfg->width, &cfg->height);
    cfg->dt = (float)(1.0 / tick_hz);
    cfg->capacity = n;
    cfg->seed = 1;
    const char *err = NULL;
    struct sim_world *w = sim_create(cfg, &err);
    if (w)
        sim_scatter(w, n, 0);
    return w;
}

/* Boids `workers` tick threads step in one period, split as a big room's
 * steps are, at the fastest of three rounds of ten ticks (what else runs
 * on the machine only slows a round); 0 if it cannot be measured. */
static long capacity_of(unsigned workers, double tick_hz)
{
    struct sim_config cfg;
    struct sim_world *w = make_world(CALIBRATION_BOIDS, tick_hz, &cfg);
    const char *err = NULL;
    struct pool *p = workers > 1 ? pool_create(workers - 1, &err) : NULL;
    struct sim_fork fork = stepper_fork(p, SIM_PARTS);
    if (!w)
        return 0;
    for (int k = 0; k < 5; k++) /* past the scattered start's first ticks */
        sim_step_forked(w, p ? &fork : NULL);
    double best = INFINITY;
    for (int round = 0; round < 3; round++) {
        int64_t t0 = clock_mono_ns();
        for (int k = 0; k < 10; k++)
            sim_step_forked(w, p ? &fork : NULL);
        best = fmin(best, (double)(clock_mono_ns() - t0) / 10);
    }
    pool_destroy(p);
    sim_destroy(w);
    return lround(1e9 / tick_hz / (best / CALIBRATION_BOIDS));
}

static struct room *make_room(const char *name, long boids, const struct overload_opts *o)
{
    struct room_config c = {.name = name,
                            .mode = PROTO_MODE_SANDBOX,
                            .boids = (uint32_t)boids,
                            .tick_hz = o->tick_hz,
                            .snapshot_hz = o->snapshot_hz,
                            .queue_len = 1024,
                            .frame_pre = FRAME_WS_HEAD_MAX,
                            .max_message = PROTO_DEFAULT_MAX_MESSAGE,
                            .rate = 100,
                            .burst = 200};
    sim_default_config(&c.sim);
    sim_world_for((uint32_t)boids, &c.sim.width, &c.sim.height);
    c.sim.dt = (float)(1.0 / o->tick_hz);
    c.sim.capacity = boids > 0 ? (uint32_t)boids : 1;
    c.sim.seed = 1;
    const char *err = NULL;
    struct room *r = room_create(&c, &err);
    if (!r)
        fprintf(stderr, "flockbench: room %s: %s\n", name, err);
    return r;
}

/* An emulated version 1 viewer of r takes its newest frame: counted in
 * *seen if it is new (its seq then in *last). */
static void watch(struct room *r, uint64_t *last, long *seen)
{
    struct frame *f = room_latest(r);
    if (f && f->seq != *last) {
        *last = f->seq;
        (*seen)++;
    }
    if (f)
        room_want(r, FRAME_V1, f->seq);
    frame_release(f);
}

/* What the run saw of the big room in one second. */
struct second {
    double ticks, frames, dilation, snapshot_hz;
};

/* The rooms and their emulated viewers; big NULL: the small room alone. */
struct rooms {
    struct room *big, *small;
    double tick_hz;
    uint64_t big_seq, small_seq;
    long big_frames, small_frames;
};

/* How the small room kept time. */
struct keeping {
    double ticks_per_s;
    double p50, p99, max; /* tick lateness, ms */
};

/* One second of watching the rooms; what the big room (if any) did in it. */
static struct second one_second(struct rooms *rs)
{
    struct room_info a = {0}, b = {0};
    if (rs->big)
        room_info(rs->big, &a);
    long frames = rs->big_frames;
    int64_t until = clock_mono_ns() + 1000000000LL;
    while (clock_mono_ns() < until) {
        if (rs->big)
            watch(rs->big, &rs->big_seq, &rs->big_frames);
        if (rs->small)
            watch(rs->small, &rs->small_seq, &rs->small_frames);
        sleep_ns(POLL_NS);
    }
    if (rs->big)
        room_info(rs->big, &b);
    return (struct second){(double)(b.tick - a.tick), (double)(rs->big_frames - frames), b.dilation,
                           b.snapshot_hz_now};
}

/* Watches the rooms for n seconds, into secs[0..n), a line for each
 * about the big room (`phase` names the part of the run). */
static void observe(struct rooms *rs, int n, struct second *secs, const char *phase)
{
    for (int s = 0; s < n; s++) {
        secs[s] = one_second(rs);
        if (!rs->big)
            continue;
        printf("  %s %3d s  big room: %5.2f ticks/s (%.3f of %g), dilation %.3f reported, "
               "%5.2f snapshots/s (%.2f chosen)\n",
               phase, s + 1, secs[s].ticks, secs[s].ticks / rs->tick_hz, rs->tick_hz,
               secs[s].dilation, secs[s].frames, secs[s].snapshot_hz);
        fflush(stdout);
    }
}

/* The small room scheduled on pool for n seconds (rs->big ticking
 * beside it, if any): how it kept time. */
static int keep_time(struct rooms *rs, struct pool *pool, int n, struct second *secs,
                     struct keeping *k)
{
    struct room_info before, after;
    room_info(rs->small, &before);
    int rc = room_schedule(rs->small, pool);
    if (rc < 0)
        return rc;
    int64_t t0 = clock_mono_ns();
    observe(rs, n, secs, "beside");
    room_info(rs->small, &after);
    double s = (double)(clock_mono_ns() - t0) / 1e9;
    room_unschedule(rs->small, pool);
    *k = (struct keeping){(double)(after.tick - before.tick) / s, after.late_p50_ms,
                          after.late_p99_ms, after.late_max_ms};
    return 0;
}

/* Mean, least and most of a figure over n seconds, and its standard
 * deviation. */
struct spread {
    double mean, min, max, sd;
};

static struct spread spread_of(const struct second *secs, int n, size_t off)
{
    struct spread sp = {0, INFINITY, -INFINITY, 0};
    for (int s = 0; s < n; s++) {
        double v = *(const double *)(const void *)((const char *)&secs[s] + off);
        sp.mean += v / n;
        sp.min = fmin(sp.min, v);
        sp.max = fmax(sp.max, v);
    }
    for (int s = 0; s < n; s++) {
        double v = *(const double *)(const void *)((const char *)&secs[s] + off);
        sp.sd += (v - sp.mean) * (v - sp.mean) / n;
    }
    sp.sd = sqrt(sp.sd);
    return sp;
}

#define SPREAD(secs, n, f) spread_of(secs, n, offsetof(struct second, f))

static void print_keeping(const char *what, const struct keeping *k)
{
    printf("small room %s: %.2f ticks/s; tick lateness p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           what, k->ticks_per_s, k->p50, k->p99, k->max);
}

static void report(const struct overload_opts *o, long big, const struct second *secs, int n,
                   const struct keeping *alone, const struct keeping *beside)
{
    struct spread d = SPREAD(secs, n, dilation), t = SPREAD(secs, n, ticks);
    struct spread f = SPREAD(secs, n, frames);
    print_keeping("alone (the machine's own lateness)", alone);
    print_keeping("beside the big room", beside);
    printf("big room (%ld boids): dilation reported mean %.3f (min %.3f, max %.3f, sd %.4f); "
           "measured %.3f (%.2f ticks/s, sd %.2f); %.2f snapshots/s (sd %.2f)\n",
           big, d.mean, d.min, d.max, d.sd, t.mean / o->tick_hz, t.mean, t.sd, f.mean, f.sd);
    printf("{\"workers\":%u,\"tick_hz\":%g,\"small_boids\":%ld,\"big_boids\":%ld,\"seconds\":%d,"
           "\"alone_late_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"max\":%.4f},"
           "\"small_ticks_per_s\":%.3f,\"small_late_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"max\":%.4f},"
           "\"big_dilation\":{\"mean\":%.4f,\"min\":%.4f,\"max\":%.4f,\"sd\":%.5f},"
           "\"big_ticks_per_s\":%.3f,\"big_snapshots_per_s\":%.3f}\n",
           o->workers, o->tick_hz, o->small, big, n, alone->p50, alone->p99, alone->max,
           beside->ticks_per_s, beside->p50, beside->p99, beside->max, d.mean, d.min, d.max, d.sd,
           t.mean, f.mean);
}

/* The big room's boids: o->big, or o->load times what the machine ticks. */
static long big_boids(const struct overload_opts *o)
{
    if (o->big > 0)
        return o->big;
    long cap = capacity_of(o->workers, o->tick_hz);
    long big = lround(fmin(MAX_BOIDS, o->load * (double)cap));
    printf("the machine steps %ld boids a period at %g Hz on %u tick thread%s; the big room "
           "gets %g times that: %ld\n",
           cap, o->tick_hz, o->workers, o->workers == 1 ? "" : "s", o->load, big);
    return big;
}

/* The run's parts on the pool: a small room alone (the control), the big
 * room alone for the warm-up, then a second small room beside it. */
static int run_rooms(const struct overload_opts *o, struct pool *pool, long big)
{
    int n = (int)fmin(MAX_SECONDS, o->seconds), w = (int)fmin(MAX_SECONDS, o->warmup);
    struct second *secs = calloc((size_t)(n > w ? n : w) + 1, sizeof *secs);
    struct rooms alone = {.small = make_room("alone", o->small, o), .tick_hz = o->tick_hz};
    struct rooms rs = {.big = make_room("big", big, o),
                       .small = make_room("small", o->small, o),
                       .tick_hz = o->tick_hz};
    struct keeping k0, k1;
    int rc = secs && alone.small && rs.big && rs.small ? 0 : PROTO_E_INTERNAL;
    if (rc == 0)
        rc = keep_time(&alone, pool, n, secs, &k0);
    if (rc == 0)
        rc = room_schedule(rs.big, pool);
    if (rc == 0) {
        observe(&rs, w, secs, "alone ");
        rc = keep_time(&rs, pool, n, secs, &k1);
        room_unschedule(rs.big, pool);
    }
    if (rc == 0)
        report(o, big, secs, n, &k0, &k1);
    room_destroy(alone.small);
    room_destroy(rs.small);
    room_destroy(rs.big);
    free(secs);
    return rc;
}

int overload_run(const struct overload_opts *given)
{
    struct overload_opts o = *given;
    if (o.workers == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        o.workers = cores > 0 ? (unsigned)cores : 1;
    }
    long big = big_boids(&o);
    printf("flockbench --overload: a %ld-boid room alone for %g s, then a %ld-boid room alone "
           "for %g s and beside a %ld-boid room for %g s; %g ticks and %g snapshots a second, "
           "%u tick thread%s\n",
           o.small, o.seconds, big, o.warmup, o.small, o.seconds, o.tick_hz, o.snapshot_hz,
           o.workers, o.workers == 1 ? "" : "s");
    fflush(stdout);
    const char *err = NULL;
    struct pool *pool = pool_create(o.workers, &err);
    if (!pool) {
        fprintf(stderr, "flockbench: %s\n", err);
        return PROTO_E_INTERNAL;
    }
    int rc = run_rooms(&o, pool, big);
    pool_destroy(pool);
    return rc;
}
