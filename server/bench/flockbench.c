/*
 * flockbench — runs the simulation core headless and reports its speed.
 *
 * The world is a torus sized so that, spread uniformly, a boid has about
 * `density` others inside its perception radius. The last line printed is
 * one JSON object, for scripts; everything above it is for people.
 */
#define _POSIX_C_SOURCE 200809L

#include "rng.h"
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS  32
#define MAX_THREADS SIM_LANES

struct bench_opts {
    long boids, ticks, threads;
    double density;
    uint64_t seed;
    int brute;
    int nparams;
    const char *param_name[MAX_PARAMS];
    float param_value[MAX_PARAMS];
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flockbench [--boids N] [--ticks T] [--density K] [--threads N]\n"
            "                  [--param NAME=VALUE ...] [--seed S] [--brute] [--help]\n"
            "\n"
            "Runs the flocking core headless from a random start and prints its speed.\n"
            "  --boids N       boids in the world (default 10000, 1..4194304)\n"
            "  --ticks T       ticks to time (default 200, 1..1000000)\n"
            "  --density K     neighbours per perception radius the world is sized for\n"
            "                  (default 15, 0.1..1000)\n"
            "  --threads N     threads computing steering (default 1, 1..%d)\n"
            "  --param N=V     set a flocking parameter for every group (repeatable)\n"
            "  --seed S        PRNG seed (default 1)\n"
            "  --brute         use the O(n^2) reference neighbour search\n"
            "The last line is JSON: boids, ticks, ms_per_tick, boid_updates_per_s,\n"
            "avg_neighbours, polarization, state_hash.\n"
            "\nParameters:\n",
            MAX_THREADS);
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        fprintf(out, "  %-18s default %-7g [%g, %g] %s\n", d->name, (double)d->def, (double)d->min,
                (double)d->max, d->unit);
    }
}

/* Parses a whole number in [lo, hi]; returns 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){.boids = 10000, .ticks = 200, .threads = 1, .density = 15, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--brute")) {
            o->brute = 1;
            continue;
        } else if (!v) {
            fprintf(stderr, "flockbench: %s needs a value (see --help)\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--boids") && !parse_long(v, 1, 4194304, &n)) {
            o->boids = n;
        } else if (!strcmp(a, "--ticks") && !parse_long(v, 1, 1000000, &n)) {
            o->ticks = n;
        } else if (!strcmp(a, "--threads") && !parse_long(v, 1, MAX_THREADS, &n)) {
            o->threads = n;
        } else if (!strcmp(a, "--seed") && !parse_long(v, 0, INT32_MAX, &n)) {
            o->seed = (uint64_t)n;
        } else if (!strcmp(a, "--density")) {
            char *end;
            o->density = strtod(v, &end);
            if (*end || end == v || !(o->density >= 0.1 && o->density <= 1000)) {
                fprintf(stderr, "flockbench: --density must be in [0.1, 1000]\n");
                return -1;
            }
        } else if (!strcmp(a, "--param")) {
            const char *eq = strchr(v, '=');
            char *end;
            if (!eq || o->nparams == MAX_PARAMS) {
                fprintf(stderr, "flockbench: --param wants NAME=VALUE\n");
                return -1;
            }
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
            const struct sim_param_desc *d = sim_param_find(name);
            float val = strtof(eq + 1, &end);
            if (!d || *end || end == eq + 1 || !sim_param_valid(d, val)) {
                fprintf(stderr, "flockbench: bad parameter %s (see --help for names and ranges)\n",
                        v);
                return -1;
            }
            o->param_name[o->nparams] = d->name;
            o->param_value[o->nparams++] = val;
        } else {
            fprintf(stderr, "flockbench: bad option or value: %s %s (see --help)\n", a, v);
            return -1;
        }
    }
    return 0;
}

struct slice {
    struct sim_world *w;
    unsigned lane;
    uint32_t begin, end;
};

static void *steer_slice(void *arg)
{
    struct slice *s = arg;
    sim_steer_range(s->w, s->lane, s->begin, s->end);
    return NULL;
}

/* One tick with the steering phase split across `threads` threads. */
static void step_threaded(struct sim_world *w, uint32_t count, long threads)
{
    pthread_t tid[MAX_THREADS];
    struct slice sl[MAX_THREADS];
    sim_prepare(w);
    for (long t = 0; t < threads; t++) {
        sl[t] = (struct slice){w, (unsigned)t, (uint32_t)((uint64_t)count * t / threads),
                               (uint32_t)((uint64_t)count * (t + 1) / threads)};
        if (t > 0 && pthread_create(&tid[t], NULL, steer_slice, &sl[t]) != 0) {
            fprintf(stderr, "flockbench: pthread_create failed\n");
            exit(1);
        }
    }
    steer_slice(&sl[0]);
    for (long t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
    sim_integrate(w);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    if (parse_args(argc, argv, &o))
        return 2;

    /* Size the world from the perception radius the run will use. */
    struct sim_params defaults;
    sim_params_default(&defaults);
    float perception = defaults.perception;
    for (int k = 0; k < o.nparams; k++)
        if (!strcmp(o.param_name[k], "perception"))
            perception = o.param_value[k];
    double side = sqrt((double)o.boids * 3.14159265358979 * perception * perception / o.density);
    if (side < 16)
        side = 16;

    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = cfg.height = (float)side;
    cfg.capacity = (uint32_t)o.boids;
    cfg.seed = o.seed;
    cfg.brute_force = o.brute;
    const char *err = NULL;
    struct sim_world *w = sim_create(&cfg, &err);
    if (!w) {
        fprintf(stderr, "flockbench: cannot create world: %s\n", err);
        return 1;
    }
    for (int k = 0; k < o.nparams; k++)
        sim_param_set(w, -1, o.param_name[k], o.param_value[k]);

    struct pcg32 rng;
    pcg32_seed(&rng, o.seed, 7);
    for (long i = 0; i < o.boids; i++)
        sim_spawn(w, 1, 0, pcg32_float(&rng) * cfg.width, pcg32_float(&rng) * cfg.height, 0.0f);

    printf("flockbench: %ld boids, %ld ticks, world %.0f x %.0f (torus), density %.1f, "
           "%ld thread%s, %s neighbours\n",
           o.boids, o.ticks, side, side, o.density, o.threads, o.threads == 1 ? "" : "s",
           o.brute ? "brute-force" : "grid");
    fflush(stdout);

    double t0 = now_s();
    for (long t = 0; t < o.ticks; t++) {
        if (o.threads == 1)
            sim_step(w);
        else
            step_threaded(w, (uint32_t)o.boids, o.threads);
    }
    double secs = now_s() - t0;

    struct sim_stats st;
    sim_stats(w, &st);
    double ms = secs * 1000.0 / (double)o.ticks;
    double ups = (double)o.boids * (double)o.ticks / secs;
    uint64_t hash = sim_hash(w);
    printf("  %.3f ms/tick, %.2f M boid-updates/s, %.1f neighbours/boid, polarization %.3f\n", ms,
           ups / 1e6, (double)st.avg_neighbours, (double)st.polarization);
    printf("{\"boids\":%ld,\"ticks\":%ld,\"ms_per_tick\":%.4f,\"boid_updates_per_s\":%.0f,"
           "\"avg_neighbours\":%.2f,\"polarization\":%.4f,\"state_hash\":\"%016" PRIx64 "\"}\n",
           o.boids, o.ticks, ms, ups, (double)st.avg_neighbours, (double)st.polarization, hash);
    sim_destroy(w);
    return 0;
}
