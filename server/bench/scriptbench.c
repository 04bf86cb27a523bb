/*
 * scriptbench — what a room script costs a tick: the sample game
 * (server/scripts/flockwars.lua, or --script FILE) with 4 teams of 500
 * units playing, its tick hook every tick, side by side with the same
 * world stepped without a script. Prints the script's time per tick and
 * each world's step time (p50, p99), and the difference of the p99s.
 *
 *   scriptbench [--script FILE] [--teams N] [--units N] [--ticks N]
 */
#include "clock.h"
#include "script.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[(int)fmin(n - 1, floor(p * n))];
}

static struct sim_world *world(void)
{
    struct sim_config c;
    sim_default_config(&c);
    c.width = 2400.0f;
    c.height = 1500.0f;
    c.edges = SIM_EDGES_CONTAIN;
    c.capacity = 8192;
    c.seed = 5;
    return sim_create(&c, NULL);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(SCRIPT_SOURCE_MAX + 1) : NULL;
    *len = buf ? fread(buf, 1, SCRIPT_SOURCE_MAX, f) : 0;
    if (f)
        fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    const char *path = "server/scripts/flockwars.lua";
    int teams = 4, units = 500, ticks = 3000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--script"))
            path = argv[i + 1];
        else if (!strcmp(argv[i], "--teams"))
            teams = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--units"))
            units = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ticks"))
            ticks = atoi(argv[i + 1]);
    }
    size_t len;
    char *text = read_all(path, &len);
    struct sim_world *w = world(), *bare = world();
    struct script_source src = {0};
    if (!text || !w || !bare || script_source_set(&src, "bench", text, len) < 0) {
        fprintf(stderr, "scriptbench: cannot read %s\n", path);
        return 1;
    }
    char why[SCRIPT_REASON_MAX];
    struct script_env env = {
        .world = w, .seed = 5, .tick_hz = 60.0, .max_teams = teams, .room = "bench"};
    struct script *s = script_create(&src, &env, NULL, NULL, 0, why);
    if (!s) {
        fprintf(stderr, "scriptbench: %s\n", why);
        return 1;
    }
    script_start(s);
    char units_cmd[64];
    snprintf(units_cmd, sizeof units_cmd, "{\"action\":\"units\",\"n\":%d}", units);
    struct script_player admin = {.id = 99, .role = 2, .team = -1, .name = "admin"};
    script_command(s, &admin, units_cmd, strlen(units_cmd), why);
    for (int t = 1; t <= teams; t++) {
        struct script_player p = {.id = (uint64_t)t, .role = 1, .team = t, .name = "p"};
        script_player_event(s, SCRIPT_JOIN, &p);
        script_command(s, &p, "{\"action\":\"ready\"}", 18, why);
    }
    for (int k = 0; k < 400; k++) { /* the countdown, then the units spawn */
        script_tick(s);
        sim_step(w);
    }
    struct sim_view v;
    sim_view(w, &v);
    for (uint32_t i = 0; i < v.count; i++) /* the same units in the bare world */
        sim_spawn(bare, 1, v.group[i], v.x[i], v.y[i], 0.0f);
    double *hook = malloc(sizeof *hook * (size_t)ticks);
    double *step = malloc(sizeof *step * (size_t)ticks);
    double *plain = malloc(sizeof *plain * (size_t)ticks);
    for (int k = 0; k < ticks; k++) {
        int64_t t0 = clock_mono_ns();
        script_tick(s);
        int64_t t1 = clock_mono_ns();
        sim_step(w);
        int64_t t2 = clock_mono_ns();
        sim_step(bare);
        int64_t t3 = clock_mono_ns();
        hook[k] = (double)(t1 - t0) / 1e6;
        step[k] = (double)(t2 - t0) / 1e6; /* the scripted tick: hook and step */
        plain[k] = (double)(t3 - t2) / 1e6;
    }
    char running[SCRIPT_REASON_MAX];
    bool ok = script_is_running(s, running, sizeof running);
    sim_view(w, &v);
    double h50 = pct(hook, ticks, 0.5), h99 = pct(hook, ticks, 0.99);
    double s50 = pct(step, ticks, 0.5), s99 = pct(step, ticks, 0.99);
    double p50 = pct(plain, ticks, 0.5), p99 = pct(plain, ticks, 0.99);
    printf("scriptbench: %d teams x %d units, %d ticks, script %s (%s)\n", teams, units, ticks,
           path, ok ? "running" : running);
    printf("  script hook    p50 %.3f ms  p99 %.3f ms\n", h50, h99);
    printf("  tick, scripted p50 %.3f ms  p99 %.3f ms\n", s50, s99);
    printf("  tick, bare     p50 %.3f ms  p99 %.3f ms\n", p50, p99);
    printf("  p99 difference %+.3f ms; units now %u\n", s99 - p99, v.count);
    script_destroy(s);
    script_source_free(&src);
    sim_destroy(w);
    sim_destroy(bare);
    free(text);
    free(hook);
    free(step);
    free(plain);
    return 0;
}
