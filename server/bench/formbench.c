/*
 * formbench — how fast a squad takes a formation where it is sent
 * (PROTOCOL.md §13.3), on the simulation core alone.
 *
 * For each shape (and, with --obstacle, again with an obstacle across the
 * way) and each of --seeds worlds: --units units of one team spawn in a
 * disc around a point, fly for a second, are selected into a squad, given
 * the shape and sent --distance units east (the obstacle: a third of the
 * way, on the line, radius 80). The squad's travel time is
 * its centre's straight line to the goal at the group's max_speed; the
 * time taken is the first step after which 95 % of its units are within
 * half a separation radius of their slots. A unit still more than three
 * spacings from its slot --settle seconds after the anchor arrived is
 * counted as stuck.
 *
 * With --ticks N it also times the step of a room of --teams teams of
 * --units units each, every team re-ordering a squad of half its units
 * once a second (move, alternating between two points), against the same
 * world without orders, in alternating runs of N steps: the ratio of the
 * two is the orders' cost, measured side by side.
 *
 * The last line printed is one JSON object; everything above is for people.
 */
#define _POSIX_C_SOURCE 200809L

#include "clock.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPES 4

struct opts {
    long units, seeds, teams, ticks;
    double distance, settle;
    int obstacle;
};

static const char *const shape_names[SHAPES + 1] = {"none", "line", "column", "wedge", "box"};

static void usage(FILE *out)
{
    fprintf(out, "usage: formbench [--units N] [--distance UNITS] [--seeds N] [--obstacle]\n"
                 "                 [--settle S] [--ticks N] [--teams N]\n"
                 "  --units N        units in the squad (and per team with --ticks); default 200\n"
                 "  --distance D     how far east the squad is sent, world units; default 1000\n"
                 "  --seeds N        worlds per shape; default 5\n"
                 "  --obstacle       also each shape with an obstacle of radius 80 across the way\n"
                 "  --settle S       seconds after the anchor arrives a unit may take; default 5\n"
                 "  --ticks N        also time N steps of --teams teams re-ordering (0: not)\n"
                 "  --teams N        teams for --ticks; default 8\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.units = 200, .seeds = 5, .teams = 8, .distance = 1000, .settle = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0.0;
        int num = v && end && *end == '\0' && isfinite(x);
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--obstacle") == 0) {
            o->obstacle = 1;
            continue;
        } else if (!num) {
            fprintf(stderr, "formbench: %s needs a number\n", a);
            return -1;
        } else if (strcmp(a, "--units") == 0 && x >= 1 && x <= 100000) {
            o->units = (long)x;
        } else if (strcmp(a, "--distance") == 0 && x >= 100 && x <= 20000) {
            o->distance = x;
        } else if (strcmp(a, "--seeds") == 0 && x >= 1 && x <= 1000) {
            o->seeds = (long)x;
        } else if (strcmp(a, "--settle") == 0 && x >= 0 && x <= 600) {
            o->settle = x;
        } else if (strcmp(a, "--ticks") == 0 && x >= 0 && x <= 1e7) {
            o->ticks = (long)x;
        } else if (strcmp(a, "--teams") == 0 && x >= 1 && x <= 64) {
            o->teams = (long)x;
        } else {
            fprintf(stderr, "formbench: bad option or value: %s %s (see --help)\n", a, v);
            return -1;
        }
        i++;
    }
    return 0;
}

/* A walled world with room for the trip: the squad starts 300 units in. */
static struct sim_world *world_for(const struct opts *o, uint64_t seed, uint32_t capacity)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = (float)(o->distance + 1000.0);
    cfg.height = 1600.0f;
    cfg.edges = SIM_EDGES_CONTAIN;
    cfg.capacity = capacity;
    cfg.seed = seed;
    struct sim_world *w = sim_create(&cfg, NULL);
    if (!w) {
        fprintf(stderr, "formbench: cannot create a world\n");
        exit(1);
    }
    return w;
}

/* Squad 1's units within `within` of their slots: a share; *worst the farthest. */
static double in_slots(struct sim_world *w, float within, float *worst)
{
    const struct sim_squad *s = sim_squad(w, 1, 1);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t in = 0, n = 0;
    *worst = 0.0f;
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t slot;
        float x, y;
        if (sim_boid_squad(w, i, &slot) != 1)
            continue;
        sim_slot_position(s, slot, &x, &y);
        float d = hypotf(v.x[i] - x, v.y[i] - y);
        *worst = fmaxf(*worst, d);
        in += d < within;
        n++;
    }
    return n ? (double)in / n : 0.0;
}

struct trip {
    double travel_s; /* the centre's straight line at max_speed */
    double took_s;   /* to 95 % in slots; INFINITY: never */
    uint32_t stuck;  /* units more than three spacings off at the end */
};

static struct trip one_trip(const struct opts *o, int shape, int obstacle, uint64_t seed)
{
    struct sim_world *w = world_for(o, seed, (uint32_t)o->units + 16);
    const float y0 = 800.0f, x0 = 300.0f, hz = 60.0f;
    sim_spawn(w, (uint32_t)o->units, 1, x0, y0, 8.0f * sqrtf((float)o->units));
    for (int t = 0; t < 60; t++)
        sim_step(w);
    struct sim_selection all = {.by = SIM_SELECT_ALL};
    sim_select(w, 1, 1, &all);
    sim_formation(w, 1, 1, (enum sim_shape)shape, 0.0f);
    const struct sim_squad *s = sim_squad(w, 1, 1);
    float gx = (float)(s->cx + o->distance), gy = s->cy;
    if (obstacle)
        sim_obstacle_add(w, s->cx + (float)o->distance / 3.0f, gy, 80.0f);
    struct sim_order_args move = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{gx, gy}}};
    sim_order(w, 1, 1, &move);
    float speed;
    sim_param_get(w, 1, "max_speed", &speed);
    float sep;
    sim_param_get(w, 1, "separation_radius", &sep);
    struct trip r = {.travel_s = o->distance / speed, .took_s = INFINITY};
    double arrived = INFINITY;
    float worst;
    for (long t = 1; t <= (long)(hz * (3.0 * r.travel_s + o->settle)); t++) {
        sim_step(w);
        double now = t / hz;
        if (arrived == INFINITY && s->order == SIM_ORDER_STOP)
            arrived = now;
        if (r.took_s == INFINITY && arrived < INFINITY && in_slots(w, 0.5f * sep, &worst) >= 0.95)
            r.took_s = now;
        if (now >= arrived + o->settle && r.took_s < INFINITY)
            break;
    }
    struct sim_view v;
    sim_view(w, &v);
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t slot;
        float x, y;
        if (sim_boid_squad(w, i, &slot) != 1)
            continue;
        sim_slot_position(s, slot, &x, &y);
        r.stuck += hypotf(v.x[i] - x, v.y[i] - y) > 3.0f * s->spacing;
    }
    sim_destroy(w);
    return r;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the teams' orders: the step's cost ------------------------------------------ */

/* Steps n times; each step's milliseconds into ms[]. Every second each
 * team re-orders its squad when `orders`. */
static void time_steps(struct sim_world *w, const struct opts *o, long n, int orders, long *clock,
                       double *ms)
{
    for (long k = 0; k < n; k++, (*clock)++) {
        if (orders && *clock % 60 == 0)
            for (int t = 1; t <= o->teams; t++) {
                float x = (*clock / 60 + t) % 2 ? 400.0f : 1400.0f;
                struct sim_order_args m = {
                    .order = SIM_ORDER_MOVE, .nway = 1, .way = {{x, 300.0f + 100.0f * (float)t}}};
                sim_order(w, t, 1, &m);
            }
        int64_t t0 = clock_mono_ns();
        sim_step(w);
        ms[k] = (double)(clock_mono_ns() - t0) / 1e6;
    }
}

static struct sim_world *teams_world(const struct opts *o, int squads)
{
    struct opts wide = *o;
    wide.distance = 1200.0;
    struct sim_world *w = world_for(&wide, 7, (uint32_t)(o->teams * o->units));
    for (int t = 1; t <= o->teams; t++) {
        double a = 2.0 * 3.14159265358979 * (t - 1) / o->teams;
        sim_spawn(w, (uint32_t)o->units, t, (float)(1100 + 500 * cos(a)),
                  (float)(800 + 500 * sin(a)), 100.0f);
    }
    sim_param_set(w, -1, "own_group_only", 1.0f);
    for (int t = 1; squads && t <= o->teams; t++) {
        struct sim_selection all = {.by = SIM_SELECT_ALL};
        sim_select(w, t, 1, &all);
        sim_formation(w, t, 1, (enum sim_shape)(1 + t % 4), 0.0f);
    }
    return w;
}

static void percentiles(double *ms, long n, double *p50, double *p99)
{
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    *p50 = ms[n / 2];
    *p99 = ms[(size_t)((double)n * 0.99)];
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) < 0)
        return 2;
    printf("formbench: %ld units sent %.0f units east, %ld worlds a shape\n", o.units, o.distance,
           o.seeds);
    printf("%-8s %-9s %9s %12s %7s %9s %7s %7s\n", "shape", "obstacle", "travel s", "95% in s p50",
           "worst", "ratio p50", "stuck", "<=1.2x");
    char json[8192];
    size_t jl = 0;
    for (int obstacle = 0; obstacle <= o.obstacle; obstacle++)
        for (int shape = 1; shape <= SHAPES; shape++) {
            double took[1000];
            uint32_t stuck = 0;
            double travel = 0.0;
            for (long k = 0; k < o.seeds; k++) {
                struct trip r = one_trip(&o, shape, obstacle, 1000 + (uint64_t)k);
                took[k] = r.took_s;
                stuck += r.stuck;
                travel = r.travel_s;
            }
            long met = 0; /* trips within the target: 1.2 x the travel time */
            for (long k = 0; k < o.seeds; k++)
                met += took[k] <= 1.2 * travel;
            qsort(took, (size_t)o.seeds, sizeof took[0], cmp_double);
            double p50 = took[o.seeds / 2], worst = took[o.seeds - 1];
            char ratio[2][16]; /* JSON has no infinity: null */
            for (int k = 0; k < 2; k++) {
                double v = (k ? worst : p50) / travel;
                if (isfinite(v))
                    snprintf(ratio[k], sizeof ratio[k], "%.3f", v);
                else
                    snprintf(ratio[k], sizeof ratio[k], "null");
            }
            printf("%-8s %-9s %9.1f %12.2f %7.2f %9.2f %7u %5ld/%ld\n", shape_names[shape],
                   obstacle ? "one" : "none", travel, p50, worst, p50 / travel, stuck, met,
                   o.seeds);
            jl += (size_t)snprintf(
                json + jl, sizeof json - jl,
                "%s{\"shape\":\"%s\",\"obstacle\":%d,\"travel_s\":%.2f,"
                "\"ratio_p50\":%s,\"ratio_worst\":%s,\"stuck\":%u,\"within_1_2\":%ld}",
                jl ? "," : "", shape_names[shape], obstacle, travel, ratio[0], ratio[1], stuck,
                met);
        }
    double p50[2] = {0}, p99[2] = {0};
    if (o.ticks > 0) {
        /* Alternating runs of a tenth each, so both see the same machine. */
        long run = o.ticks / 10 > 60 ? o.ticks / 10 : 60, clocks[2] = {0, 0};
        double *ms[2] = {malloc(sizeof(double) * (size_t)o.ticks * 2),
                         malloc(sizeof(double) * (size_t)o.ticks * 2)};
        long got[2] = {0, 0};
        struct sim_world *w[2] = {teams_world(&o, 0), teams_world(&o, 1)};
        if (!ms[0] || !ms[1])
            return 1;
        while (got[0] < o.ticks)
            for (int k = 0; k < 2; k++) {
                time_steps(w[k], &o, run, k, &clocks[k], ms[k] + got[k]);
                got[k] += run;
            }
        for (int k = 0; k < 2; k++) {
            percentiles(ms[k], got[k], &p50[k], &p99[k]);
            sim_destroy(w[k]);
            free(ms[k]);
        }
        printf("%ld teams x %ld units, %ld steps each: step p50 %.3f / p99 %.3f ms without "
               "orders, %.3f / %.3f ms with a squad re-ordered a second (p99 +%.3f ms)\n",
               o.teams, o.units, got[0], p50[0], p99[0], p50[1], p99[1], p99[1] - p99[0]);
    }
    printf("{\"trips\":[%s],\"teams\":{\"teams\":%ld,\"units\":%ld,\"steps\":%ld,\"p50_ms\":[%.3f,%"
           ".3f],"
           "\"p99_ms\":[%.3f,%.3f]}}\n",
           json, o.teams, o.units, o.ticks, p50[0], p50[1], p99[0], p99[1]);
    return 0;
}
