/*
 * flockbench — runs the simulation core headless: its speed and, with
 * --metrics, what the flock looks like at the end (flockstats.h).
 *
 * By default the world is a torus sized so that, spread uniformly, a boid
 * has about `density` others inside its perception radius; --world gives
 * a size, or `auto` for the world flockd gives that many boids. Boids start
 * scattered uniformly with random headings, as in a room. With --seeds A-B
 * the run is repeated for each seed and the metrics are summarised (mean,
 * min, max). With --threads N, each tick runs as in flockd's biggest
 * rooms: sim_step_forked() cut into SIM_PARTS pieces per phase, which this
 * thread and N - 1 idle workers of a pool (pool.h) take. With --overload
 * it runs rooms instead (overload.h): a small room beside one given many
 * times what the machine can tick. The last line printed is one JSON
 * object, for scripts; everything above it is for people.
 */
#define _POSIX_C_SOURCE 200809L

#include "flockstats.h"
#include "overload.h"
#include "pool.h"
#include "proto.h"
#include "sim.h"
#include "stepper.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS  32
#define MAX_THREADS SIM_PARTS
#define MAX_SEEDS   64
#define TICK_HZ     60.0

struct bench_opts {
    long boids, ticks, threads;
    double density, seconds;
    float width, height; /* 0: from density (or auto) */
    int auto_world;
    uint64_t seed_lo, seed_hi;
    int brute, metrics;
    int seek; /* group 0 seeks (seek_x, seek_y) from the start */
    float seek_x, seek_y;
    int nparams;
    const char *param_name[MAX_PARAMS];
    float param_value[MAX_PARAMS];
    int overload;              /* the overload mode: over says how */
    struct overload_opts over; /* its options (--boids: the big room's) */
};

/* ---- options ------------------------------------------------------------- */

/* One command-line option: its handler parses `value` (NULL for a switch)
 * into *o and returns 0, or PROTO_E_BAD_ARG after printing why it cannot. */
struct option {
    const char *name, *meta, *help;
    int (*parse)(struct bench_opts *o, const char *value);
};

/* Says why an option is refused; PROTO_E_BAD_ARG. */
static int bad(const char *name, const char *why)
{
    fprintf(stderr, "flockbench: %s %s (see --help)\n", name, why);
    return PROTO_E_BAD_ARG;
}

/* Parses a whole number in [lo, hi]: 0, or PROTO_E_BAD_ARG. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return PROTO_E_BAD_ARG;
    *out = v;
    return 0;
}

/* Parses a finite real in [lo, hi], ending at `stop` (or the string's
 * end): 0, or PROTO_E_BAD_ARG. */
static int parse_real(const char *s, double lo, double hi, char stop, double *out,
                      const char **rest)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || (*end != stop && *end) || !isfinite(v) || v < lo || v > hi)
        return PROTO_E_BAD_ARG;
    *out = v;
    if (rest)
        *rest = end;
    return 0;
}

static int opt_boids(struct bench_opts *o, const char *v)
{
    if (parse_long(v, 1, 4194304, &o->boids))
        return bad("--boids", "must be in [1, 4194304]");
    o->over.big = o->boids;
    return 0;
}

static int opt_ticks(struct bench_opts *o, const char *v)
{
    o->seconds = 0;
    return parse_long(v, 1, 100000000, &o->ticks) ? bad("--ticks", "must be in [1, 1e8]") : 0;
}

static int opt_seconds(struct bench_opts *o, const char *v)
{
    if (parse_real(v, 1.0 / TICK_HZ, 1e6, 0, &o->seconds, NULL))
        return bad("--seconds", "must be in [1/60, 1e6]");
    o->ticks = lround(o->seconds * TICK_HZ);
    o->over.seconds = o->seconds;
    return 0;
}

static int opt_threads(struct bench_opts *o, const char *v)
{
    return parse_long(v, 1, MAX_THREADS, &o->threads) ? bad("--threads", "is out of range") : 0;
}

static int opt_density(struct bench_opts *o, const char *v)
{
    o->width = o->height = 0.0f;
    o->auto_world = 0;
    if (parse_real(v, 0.1, 1000, 0, &o->density, NULL))
        return bad("--density", "must be in [0.1, 1000]");
    return 0;
}

static int opt_world(struct bench_opts *o, const char *v)
{
    double w, h;
    const char *rest;
    o->auto_world = !strcmp(v, "auto");
    if (o->auto_world)
        return 0;
    if (parse_real(v, 16, 1e6, 'x', &w, &rest) || *rest != 'x' ||
        parse_real(rest + 1, 16, 1e6, 0, &h, NULL))
        return bad("--world", "wants WIDTHxHEIGHT, each in [16, 1e6], or auto");
    o->width = (float)w;
    o->height = (float)h;
    return 0;
}

static int opt_seed(struct bench_opts *o, const char *v)
{
    long n;
    if (parse_long(v, 0, INT32_MAX, &n))
        return bad("--seed", "must be in [0, 2^31)");
    o->seed_lo = o->seed_hi = (uint64_t)n;
    return 0;
}

static int opt_seeds(struct bench_opts *o, const char *v)
{
    long lo, hi;
    const char *dash = strchr(v, '-');
    char first[32];
    if (!dash || (size_t)(dash - v) >= sizeof first)
        return bad("--seeds", "wants FIRST-LAST");
    snprintf(first, sizeof first, "%.*s", (int)(dash - v), v);
    if (parse_long(first, 0, INT32_MAX, &lo) || parse_long(dash + 1, lo, INT32_MAX, &hi) ||
        hi - lo >= MAX_SEEDS)
        return bad("--seeds", "wants FIRST-LAST, at most 64 seeds");
    o->seed_lo = (uint64_t)lo;
    o->seed_hi = (uint64_t)hi;
    return 0;
}

static int opt_param(struct bench_opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    char name[64];
    double val;
    if (!eq || o->nparams == MAX_PARAMS || (size_t)(eq - v) >= sizeof name)
        return bad("--param", "wants NAME=VALUE");
    snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
    const struct sim_param_desc *d = sim_param_find(name);
    if (!d || parse_real(eq + 1, -1e30, 1e30, 0, &val, NULL) || !sim_param_valid(d, (float)val))
        return bad(v, "is not a parameter with a value in its range");
    o->param_name[o->nparams] = d->name;
    o->param_value[o->nparams++] = (float)val;
    return 0;
}

static int opt_seek(struct bench_opts *o, const char *v)
{
    double x, y;
    const char *rest;
    if (parse_real(v, 0, 1e6, ',', &x, &rest) || *rest != ',' ||
        parse_real(rest + 1, 0, 1e6, 0, &y, NULL))
        return bad("--seek", "wants X,Y inside the world");
    o->seek = 1;
    o->seek_x = (float)x;
    o->seek_y = (float)y;
    return 0;
}

static int opt_brute(struct bench_opts *o, const char *v)
{
    (void)v;
    o->brute = 1;
    return 0;
}

static int opt_metrics(struct bench_opts *o, const char *v)
{
    (void)v;
    o->metrics = 1;
    return 0;
}

static int opt_overload(struct bench_opts *o, const char *v)
{
    (void)v;
    o->overload = 1;
    return 0;
}

static int opt_load(struct bench_opts *o, const char *v)
{
    return parse_real(v, 0.1, 1000, 0, &o->over.load, NULL)
               ? bad("--load", "must be in [0.1, 1000]")
               : 0;
}

static int opt_small(struct bench_opts *o, const char *v)
{
    return parse_long(v, 0, 4194304, &o->over.small) ? bad("--small", "must be in [0, 4194304]")
                                                     : 0;
}

static int opt_workers(struct bench_opts *o, const char *v)
{
    long n;
    if (parse_long(v, 0, 256, &n))
        return bad("--workers", "must be in [0, 256]");
    o->over.workers = (unsigned)n;
    return 0;
}

static int opt_tick_hz(struct bench_opts *o, const char *v)
{
    return parse_real(v, 1, 240, 0, &o->over.tick_hz, NULL)
               ? bad("--tick-hz", "must be in [1, 240]")
               : 0;
}

static int opt_snapshot_hz(struct bench_opts *o, const char *v)
{
    if (parse_real(v, 1, 240, 0, &o->over.snapshot_hz, NULL))
        return bad("--snapshot-hz", "must be in [1, 240]");
    return 0;
}

static int opt_warmup(struct bench_opts *o, const char *v)
{
    return parse_real(v, 0, 600, 0, &o->over.warmup, NULL) ? bad("--warmup", "must be in [0, 600]")
                                                           : 0;
}

static const struct option options[] = {
    {"--boids", "N", "boids in the world (default 10000, 1..4194304)", opt_boids},
    {"--ticks", "T", "ticks to run (default 200)", opt_ticks},
    {"--seconds", "S",
     "simulated seconds to run, at 60 ticks/s (instead of --ticks); overload: seconds measured "
     "with both rooms (default 30)",
     opt_seconds},
    {"--density", "K",
     "size the torus for K neighbours per perception radius (default 15, 0.1..1000)", opt_density},
    {"--world", "WxH", "world size instead (e.g. 1600x1000), or auto: flockd's world for --boids",
     opt_world},
    {"--threads", "N", "threads stepping the world (default 1, 1..8)", opt_threads},
    {"--param", "N=V", "set a flocking parameter for every group (repeatable)", opt_param},
    {"--seed", "S", "PRNG seed (default 1)", opt_seed},
    {"--seeds", "A-B", "run once per seed A..B and summarise (mean, min, max)", opt_seeds},
    {"--seek", "X,Y", "group 0 seeks (X, Y) from the start; reports its arrival", opt_seek},
    {"--metrics", NULL, "measure the flock at the end (flockstats.h)", opt_metrics},
    {"--brute", NULL, "use the O(n^2) reference neighbour search", opt_brute},
    {"--overload", NULL,
     "rooms on tick threads instead: a small room beside a big one (--boids, or --load times "
     "what the machine ticks): the small one's lateness, the big one's dilation",
     opt_overload},
    {"--load", "K", "overload: the big room's boids, K times what the machine ticks (default 10)",
     opt_load},
    {"--small", "N", "overload: the small room's boids (default 1000)", opt_small},
    {"--workers", "N", "overload: tick threads (default 0: one per core)", opt_workers},
    {"--tick-hz", "HZ", "overload: both rooms' tick rate (default 30)", opt_tick_hz},
    {"--snapshot-hz", "HZ", "overload: both rooms' snapshot rate (default 20)", opt_snapshot_hz},
    {"--warmup", "S", "overload: seconds the big room ticks alone first (default 5)", opt_warmup},
};

#define OPTION_COUNT (sizeof options / sizeof options[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: flockbench [options]\n\n"
                 "Runs the flocking core headless from a random start and prints its speed\n"
                 "and, with --metrics, the flock's measures. With --overload it runs rooms\n"
                 "on tick threads instead: a small room beside one far too big.\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        char flag[32];
        snprintf(flag, sizeof flag, "%s %s", options[i].name,
                 options[i].meta ? options[i].meta : "");
        fprintf(out, "  %-16s %s\n", flag, options[i].help);
    }
    fprintf(out, "The last line is JSON: boids, ticks, world, ms_per_tick, boid_updates_per_s,\n"
                 "avg_neighbours, polarization, state_hash, and with --metrics or --seek the\n"
                 "measures of each seed's run and their mean, min and max.\n\nParameters:\n");
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        fprintf(out, "  %-18s default %-7g [%g, %g] %s\n", d->name, (double)d->def, (double)d->min,
                (double)d->max, d->unit);
    }
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){.boids = 10000,
                             .ticks = 200,
                             .threads = 1,
                             .density = 15,
                             .seed_lo = 1,
                             .seed_hi = 1,
                             .over = {.load = 10,
                                      .small = 1000,
                                      .seconds = 30,
                                      .warmup = 5,
                                      .tick_hz = 30,
                                      .snapshot_hz = 20}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        const struct option *opt = NULL;
        for (size_t k = 0; k < OPTION_COUNT && !opt; k++)
            if (!strcmp(a, options[k].name))
                opt = &options[k];
        if (!opt)
            return bad(a, "is not an option");
        if (opt->meta && i + 1 >= argc)
            return bad(a, "needs a value");
        int rc = opt->parse(o, opt->meta ? argv[++i] : NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- one run -------------------------------------------------------------- */

/* Every figure a run reports, in the order they are printed. */
enum fig {
    FIG_MS_PER_TICK,
    FIG_UPDATES,
    FIG_NEIGHBOURS,
    FIG_POLARIZATION,
    FIG_LOCAL_POL,
    FIG_GLOBAL_POL,
    FIG_NN_P5,
    FIG_NN_MEDIAN,
    FIG_NN_P5_REL,
    FIG_SPEED,
    FIG_SPEED_REL,
    FIG_CLUSTERS,
    FIG_LARGEST,
    FIG_FLOCKS,
    FIG_MILLS,
    FIG_MILL_FRACTION,
    FIG_ARRIVE_S,
    FIG_SETTLE_S,
    FIG_INSIDE_AFTER,
    FIG_FINAL_SPEED_REL,
    FIG_COUNT
};

enum fig_kind { KIND_SPEED, KIND_METRICS, KIND_SEEK };

static const struct {
    const char *name;
    int decimals;
    enum fig_kind kind;
} figs[FIG_COUNT] = {
    [FIG_MS_PER_TICK] = {"ms_per_tick", 4, KIND_SPEED},
    [FIG_UPDATES] = {"boid_updates_per_s", 0, KIND_SPEED},
    [FIG_NEIGHBOURS] = {"avg_neighbours", 2, KIND_SPEED},
    [FIG_POLARIZATION] = {"polarization", 4, KIND_SPEED},
    [FIG_LOCAL_POL] = {"local_polarization", 4, KIND_METRICS},
    [FIG_GLOBAL_POL] = {"global_polarization", 4, KIND_METRICS},
    [FIG_NN_P5] = {"nn_p5", 3, KIND_METRICS},
    [FIG_NN_MEDIAN] = {"nn_median", 3, KIND_METRICS},
    [FIG_NN_P5_REL] = {"nn_p5_per_separation_radius", 4, KIND_METRICS},
    [FIG_SPEED] = {"mean_speed", 3, KIND_METRICS},
    [FIG_SPEED_REL] = {"mean_speed_per_max_speed", 4, KIND_METRICS},
    [FIG_CLUSTERS] = {"clusters", 1, KIND_METRICS},
    [FIG_LARGEST] = {"largest_cluster", 1, KIND_METRICS},
    [FIG_FLOCKS] = {"flocks", 1, KIND_METRICS},
    [FIG_MILLS] = {"mills", 1, KIND_METRICS},
    [FIG_MILL_FRACTION] = {"mill_fraction", 4, KIND_METRICS},
    [FIG_ARRIVE_S] = {"arrive_s", 3, KIND_SEEK},
    [FIG_SETTLE_S] = {"settle_s", 3, KIND_SEEK},
    [FIG_INSIDE_AFTER] = {"inside_after_settling", 4, KIND_SEEK},
    [FIG_FINAL_SPEED_REL] = {"final_speed_per_max_speed", 4, KIND_SEEK},
};

struct run {
    uint64_t seed, hash;
    double fig[FIG_COUNT];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The world size a run uses. */
static void world_size(const struct bench_opts *o, float *width, float *height)
{
    if (o->auto_world) {
        sim_world_for((uint32_t)o->boids, width, height);
        return;
    }
    if (o->width > 0.0f) {
        *width = o->width;
        *height = o->height;
        return;
    }
    /* Sized from the perception radius the run will use. */
    struct sim_params defaults;
    sim_params_default(&defaults);
    float perception = defaults.perception;
    for (int k = 0; k < o->nparams; k++)
        if (!strcmp(o->param_name[k], "perception"))
            perception = o->param_value[k];
    double side = sqrt((double)o->boids * 3.14159265358979 * perception * perception / o->density);
    *width = *height = (float)fmax(side, 16.0);
}

static struct sim_world *make_world(const struct bench_opts *o, uint64_t seed)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    world_size(o, &cfg.width, &cfg.height);
    cfg.dt = (float)(1.0 / TICK_HZ);
    cfg.capacity = (uint32_t)o->boids;
    cfg.seed = seed;
    cfg.brute_force = o->brute;
    const char *err = NULL;
    struct sim_world *w = sim_create(&cfg, &err);
    if (!w) {
        fprintf(stderr, "flockbench: cannot create world: %s\n", err);
        exit(1);
    }
    for (int k = 0; k < o->nparams; k++)
        sim_param_set(w, -1, o->param_name[k], o->param_value[k]);
    sim_scatter(w, (uint32_t)o->boids, 0);
    if (o->seek && sim_target_set(w, 0, o->seek_x, o->seek_y) < 0) {
        fprintf(stderr, "flockbench: --seek %g,%g is outside the %g x %g world\n",
                (double)o->seek_x, (double)o->seek_y, (double)cfg.width, (double)cfg.height);
        exit(2);
    }
    return w;
}

/* Fraction of boids within arrive_radius of group 0's target, and their
 * mean speed as a fraction of max_speed. */
static void seek_sample(const struct sim_world *w, double *inside, double *speed)
{
    struct sim_view v;
    sim_view(w, &v);
    const struct sim_params *p = sim_group_params(w, 0);
    const struct sim_target *t = &v.targets[0];
    double in = 0, sp = 0;
    int wrap = sim_config(w)->edges == SIM_EDGES_WRAP;
    for (uint32_t i = 0; i < v.count; i++) {
        double dx = fabs(v.x[i] - t->x), dy = fabs(v.y[i] - t->y);
        if (wrap) {
            dx = fmin(dx, v.width - dx);
            dy = fmin(dy, v.height - dy);
        }
        in += hypot(dx, dy) < p->arrive_radius;
        sp += hypot(v.vx[i], v.vy[i]);
    }
    *inside = v.count ? in / v.count : 0.0;
    *speed = v.count ? sp / v.count / p->max_speed : 0.0;
}

/*
 * The seek figures from per-tick samples: arrival, the first time 95 % of
 * the group is within arrive_radius; settling, the time from which the mean
 * speed stays below 20 % of max_speed to the end (-1 if it never does); the
 * least fraction inside from then on; the mean speed at the end.
 */
static void seek_figures(const double *inside, const double *speed, long ticks, double *fig)
{
    long arrive = -1, settle = ticks;
    for (long k = 0; k < ticks && arrive < 0; k++)
        if (inside[k] >= 0.95)
            arrive = k;
    while (settle > 0 && speed[settle - 1] < 0.2)
        settle--;
    double stay = settle < ticks ? 1.0 : 0.0;
    for (long k = settle; k < ticks; k++)
        stay = fmin(stay, inside[k]);
    fig[FIG_ARRIVE_S] = arrive < 0 ? -1.0 : (double)(arrive + 1) / TICK_HZ;
    fig[FIG_SETTLE_S] = settle < ticks ? (double)(settle + 1) / TICK_HZ : -1.0;
    fig[FIG_INSIDE_AFTER] = stay;
    fig[FIG_FINAL_SPEED_REL] = speed[ticks - 1];
}

static void measure(const struct sim_world *w, struct run *r)
{
    struct flockstats_frame f;
    struct flockstats_result m;
    flockstats_frame_of(w, &f);
    struct flockstats *s = flockstats_create(f.count ? f.count : 1, NULL);
    if (!s || flockstats_measure(s, &f, &m) < 0) {
        fprintf(stderr, "flockbench: cannot measure the flock\n");
        exit(1);
    }
    flockstats_destroy(s);
    const struct sim_params *p = sim_group_params(w, 0);
    r->fig[FIG_LOCAL_POL] = m.local_polarization;
    r->fig[FIG_GLOBAL_POL] = m.global_polarization;
    r->fig[FIG_NN_P5] = m.nn_p5;
    r->fig[FIG_NN_MEDIAN] = m.nn_median;
    r->fig[FIG_NN_P5_REL] = p->separation_radius > 0 ? m.nn_p5 / p->separation_radius : 0;
    r->fig[FIG_SPEED] = m.mean_speed;
    r->fig[FIG_SPEED_REL] = m.mean_speed / p->max_speed;
    r->fig[FIG_CLUSTERS] = m.clusters;
    r->fig[FIG_LARGEST] = m.largest_cluster;
    r->fig[FIG_FLOCKS] = m.flocks;
    r->fig[FIG_MILLS] = m.mills;
    r->fig[FIG_MILL_FRACTION] = m.mill_fraction;
}

static void run_one(const struct bench_opts *o, const struct sim_fork *fork, uint64_t seed,
                    struct run *r)
{
    struct sim_world *w = make_world(o, seed);
    double *inside = NULL, *speed = NULL;
    if (o->seek) {
        inside = calloc((size_t)o->ticks, sizeof *inside);
        speed = calloc((size_t)o->ticks, sizeof *speed);
        if (!inside || !speed) {
            fprintf(stderr, "flockbench: out of memory\n");
            exit(1);
        }
    }
    double busy = 0;
    for (long t = 0; t < o->ticks; t++) {
        double t0 = now_s();
        sim_step_forked(w, fork);
        busy += now_s() - t0;
        if (o->seek)
            seek_sample(w, &inside[t], &speed[t]);
    }
    struct sim_stats st;
    sim_stats(w, &st);
    *r = (struct run){.seed = seed, .hash = sim_hash(w)};
    r->fig[FIG_MS_PER_TICK] = busy * 1000.0 / (double)o->ticks;
    r->fig[FIG_UPDATES] = (double)o->boids * (double)o->ticks / busy;
    r->fig[FIG_NEIGHBOURS] = st.avg_neighbours;
    r->fig[FIG_POLARIZATION] = st.polarization;
    if (o->metrics)
        measure(w, r);
    if (o->seek)
        seek_figures(inside, speed, o->ticks, r->fig);
    free(inside);
    free(speed);
    sim_destroy(w);
}

/* ---- output --------------------------------------------------------------- */

static int shown(const struct bench_opts *o, int f)
{
    return figs[f].kind == KIND_SPEED || (figs[f].kind == KIND_METRICS && o->metrics) ||
           (figs[f].kind == KIND_SEEK && o->seek);
}

static void print_run(const struct bench_opts *o, const struct run *r)
{
    printf("  seed %" PRIu64 ": %.3f ms/tick, %.2f M boid-updates/s, %.1f neighbours/boid, "
           "state %016" PRIx64 "\n",
           r->seed, r->fig[FIG_MS_PER_TICK], r->fig[FIG_UPDATES] / 1e6, r->fig[FIG_NEIGHBOURS],
           r->hash);
    for (int f = FIG_LOCAL_POL; f < FIG_COUNT; f++) {
        if (!shown(o, f))
            continue;
        printf("    %-36s %.*f\n", figs[f].name, figs[f].decimals, r->fig[f]);
    }
}

/* "name":value for every figure shown, from fig[]. */
static void json_figs(const struct bench_opts *o, const double *fig)
{
    const char *sep = "";
    for (int f = 0; f < FIG_COUNT; f++) {
        if (!shown(o, f))
            continue;
        printf("%s\"%s\":%.*f", sep, figs[f].name, figs[f].decimals, fig[f]);
        sep = ",";
    }
}

static void summarise(const struct bench_opts *o, const struct run *runs, int n, float width,
                      float height)
{
    double mean[FIG_COUNT], lo[FIG_COUNT], hi[FIG_COUNT];
    for (int f = 0; f < FIG_COUNT; f++) {
        mean[f] = 0, lo[f] = INFINITY, hi[f] = -INFINITY;
        for (int k = 0; k < n; k++) {
            mean[f] += runs[k].fig[f] / n;
            lo[f] = fmin(lo[f], runs[k].fig[f]);
            hi[f] = fmax(hi[f], runs[k].fig[f]);
        }
    }
    if (n > 1) {
        printf("  over %d seeds:                        mean       min       max\n", n);
        for (int f = 0; f < FIG_COUNT; f++)
            if (shown(o, f))
                printf("    %-36s %9.4g %9.4g %9.4g\n", figs[f].name, mean[f], lo[f], hi[f]);
    }
    printf("{\"boids\":%ld,\"ticks\":%ld,\"world\":[%.1f,%.1f],", o->boids, o->ticks, (double)width,
           (double)height);
    json_figs(o, mean);
    printf(",\"state_hash\":\"%016" PRIx64 "\"", runs[0].hash);
    if (n > 1 || o->metrics || o->seek) {
        printf(",\"runs\":[");
        for (int k = 0; k < n; k++) {
            printf("%s{\"seed\":%" PRIu64 ",\"state_hash\":\"%016" PRIx64 "\",", k ? "," : "",
                   runs[k].seed, runs[k].hash);
            json_figs(o, runs[k].fig);
            printf("}");
        }
        printf("],\"min\":{");
        json_figs(o, lo);
        printf("},\"max\":{");
        json_figs(o, hi);
        printf("}");
    }
    printf("}\n");
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    if (parse_args(argc, argv, &o))
        return 2;
    if (o.overload) {
        if (o.over.snapshot_hz > o.over.tick_hz) {
            bad("--snapshot-hz", "must be at most --tick-hz");
            return 2;
        }
        return overload_run(&o.over) < 0 ? 1 : 0;
    }
    float width, height;
    world_size(&o, &width, &height);
    int n = (int)(o.seed_hi - o.seed_lo + 1);
    printf("flockbench: %ld boids, %ld ticks (%.1f s), world %.0f x %.0f (torus), "
           "%ld thread%s, %s neighbours\n",
           o.boids, o.ticks, (double)o.ticks / TICK_HZ, (double)width, (double)height, o.threads,
           o.threads == 1 ? "" : "s", o.brute ? "brute-force" : "grid");
    fflush(stdout);
    struct pool *pool = NULL;
    if (o.threads > 1) {
        const char *err = NULL;
        pool = pool_create((unsigned)o.threads - 1, &err);
        if (!pool) {
            fprintf(stderr, "flockbench: %s\n", err);
            return 1;
        }
    }
    struct sim_fork fork = stepper_fork(pool, SIM_PARTS);
    static struct run runs[MAX_SEEDS];
    for (int k = 0; k < n; k++) {
        run_one(&o, pool ? &fork : NULL, o.seed_lo + (uint64_t)k, &runs[k]);
        print_run(&o, &runs[k]);
        fflush(stdout);
    }
    pool_destroy(pool);
    summarise(&o, runs, n, width, height);
    return 0;
}
