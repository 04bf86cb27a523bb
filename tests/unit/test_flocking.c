/*
 * The flock's emergent targets on shortened runs, with default parameters
 * and a random start in the world flockd gives that many boids
 * (sim_world_for): averaged over 10 to 15 s of simulated time (one sample
 * a second, as one instant may catch two flocks crossing), a 1,000-boid
 * flock (seeds 1..3) and a 4,000-boid one at the same density are locally
 * aligned (local polarization >= 0.9), spaced (nearest-neighbour p5 >= half
 * the separation radius), cruising (mean speed >= half max_speed) and not
 * milling (<= 5 % of boids in mills); a crowd ten times denser still
 * aligns and cruises; without alignment they stay unpolarized (global
 * polarization <= 0.3); a 100-boid group told to seek a point gets 95 % of
 * its boids within arrive_radius within 30 s, then settles below 20 % of
 * max_speed and stays. The full-length figures (20 s, 120 s, 10,000 boids,
 * seeds 1..5) come from `flockbench --metrics`; these runs are short so
 * that `make test` notices a change that breaks flocking.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flockstats.h"
#include "sim.h"

#include <math.h>

#define TICK_HZ 60

static struct sim_world *world;
static struct flockstats *stats;

static int free_world(void **state)
{
    (void)state;
    sim_destroy(world);
    flockstats_destroy(stats);
    world = NULL;
    stats = NULL;
    return 0;
}

/* n boids scattered over a width x height world (0: their default world)
 * with `seed`; `alignment` < 0 keeps the default weight. */
static void start_in(uint32_t n, uint64_t seed, float alignment, float width, float height)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    sim_world_for(n, &cfg.width, &cfg.height);
    if (width > 0.0f) {
        cfg.width = width;
        cfg.height = height;
    }
    cfg.capacity = n;
    cfg.seed = seed;
    const char *err = NULL;
    free_world(NULL);
    world = sim_create(&cfg, &err);
    if (!world)
        fail_msg("sim_create: %s", err);
    stats = flockstats_create(n, &err);
    assert_non_null(stats);
    if (alignment >= 0.0f)
        assert_int_equal(sim_param_set(world, -1, "w_alignment", alignment), SIM_OK);
    assert_int_equal(sim_scatter(world, n, 0), (int)n);
}

static void start(uint32_t n, uint64_t seed, float alignment)
{
    start_in(n, seed, alignment, 0.0f, 0.0f);
}

static void run_seconds(double seconds)
{
    for (long t = 0; t < lround(seconds * TICK_HZ); t++)
        sim_step(world);
}

static struct flockstats_result measure(void)
{
    struct flockstats_frame f;
    struct flockstats_result r;
    flockstats_frame_of(world, &f);
    assert_int_equal(flockstats_measure(stats, &f, &r), SIM_OK);
    return r;
}

/*
 * The measures averaged over one sample a second from `from` to `to`
 * seconds: one instant can catch two flocks in the middle of crossing.
 */
static struct flockstats_result measure_over(double from, double to)
{
    struct flockstats_result sum = {0};
    int samples = 0;
    run_seconds(from);
    for (double t = from; t <= to + 1e-9; t += 1.0, samples++) {
        if (t > from)
            run_seconds(1.0);
        struct flockstats_result m = measure();
        sum.local_polarization += m.local_polarization;
        sum.global_polarization += m.global_polarization;
        sum.nn_p5 += m.nn_p5;
        sum.mean_speed += m.mean_speed;
        sum.mill_fraction += m.mill_fraction;
    }
    sum.local_polarization /= (float)samples;
    sum.global_polarization /= (float)samples;
    sum.nn_p5 /= (float)samples;
    sum.mean_speed /= (float)samples;
    sum.mill_fraction /= (float)samples;
    return sum;
}

/* Fails unless the default flock of n boids meets every target, averaged
 * over 10 to 15 s. */
static void assert_flocks(uint32_t n, uint64_t seed)
{
    start(n, seed, -1.0f);
    struct flockstats_result m = measure_over(10, 15);
    const struct sim_params *p = sim_group_params(world, 0);
    if (!(m.local_polarization >= 0.9f && m.nn_p5 >= 0.5f * p->separation_radius &&
          m.mean_speed >= 0.5f * p->max_speed && m.mill_fraction <= 0.05f))
        fail_msg(
            "%u boids, seed %llu, 10..15 s: local polarization %.3f, nearest-neighbour p5 %.2f "
            "(separation radius %g), mean speed %.1f (max %g), %.1f%% in mills",
            n, (unsigned long long)seed, (double)m.local_polarization, (double)m.nn_p5,
            (double)p->separation_radius, (double)m.mean_speed, (double)p->max_speed,
            100.0 * m.mill_fraction);
}

static void a_thousand_boids_align_keep_apart_and_cruise_without_milling(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++)
        assert_flocks(1000, seed);
}

static void four_thousand_boids_at_the_same_density_do_too(void **state)
{
    (void)state;
    assert_flocks(4000, 1);
}

static void a_crowd_packed_tighter_than_separation_allows_still_aligns_and_cruises(void **state)
{
    (void)state;
    /* 160 square units per boid: spacing 12.6, half the separation radius.
     * Separation cannot be satisfied; its share of the force budget leaves
     * the rest to alignment. */
    start_in(1000, 1, -1.0f, 400.0f, 400.0f);
    struct flockstats_result m = measure_over(5, 10);
    const struct sim_params *p = sim_group_params(world, 0);
    if (!(m.local_polarization >= 0.9f && m.mean_speed >= 0.5f * p->max_speed))
        fail_msg("1000 boids in 400 x 400 over 5..10 s: local polarization %.3f, mean speed %.1f",
                 (double)m.local_polarization, (double)m.mean_speed);
}

static void without_alignment_a_thousand_boids_stay_unpolarized(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        start(1000, seed, 0.0f);
        struct flockstats_result m = measure_over(10, 15);
        if (!(m.global_polarization <= 0.3f))
            fail_msg("seed %llu: global polarization %.3f over 10..15 s without alignment",
                     (unsigned long long)seed, (double)m.global_polarization);
    }
}

/* Fraction of boids within arrive_radius of group 0's target and their
 * mean speed as a fraction of max_speed. */
static void seek_sample(double *inside, double *speed)
{
    struct sim_view v;
    sim_view(world, &v);
    const struct sim_params *p = sim_group_params(world, 0);
    double in = 0, sp = 0;
    for (uint32_t i = 0; i < v.count; i++) {
        double dx = fabs(v.x[i] - v.targets[0].x), dy = fabs(v.y[i] - v.targets[0].y);
        in += hypot(fmin(dx, v.width - dx), fmin(dy, v.height - dy)) < p->arrive_radius;
        sp += hypot(v.vx[i], v.vy[i]);
    }
    *inside = in / v.count;
    *speed = sp / v.count / p->max_speed;
}

static void a_group_of_100_told_to_seek_arrives_within_30_s_then_settles_and_stays(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        start(100, seed, -1.0f);
        assert_int_equal(sim_target_set(world, 0, 800.0f, 500.0f), SIM_OK);
        double arrived = -1, least_inside = 1, fastest = 0, inside, speed;
        for (int t = 1; t <= 45 * TICK_HZ; t++) {
            sim_step(world);
            seek_sample(&inside, &speed);
            if (arrived < 0 && inside >= 0.95)
                arrived = (double)t / TICK_HZ;
            if (t > 35 * TICK_HZ) { /* the last 10 s */
                least_inside = fmin(least_inside, inside);
                fastest = fmax(fastest, speed);
            }
        }
        if (!(arrived >= 0 && arrived <= 30 && least_inside >= 0.95 && fastest < 0.2))
            fail_msg("seed %llu: 95%% inside at %.2f s; over 35..45 s at least %.0f%% inside, "
                     "mean speed up to %.0f%% of max",
                     (unsigned long long)seed, arrived, 100 * least_inside, 100 * fastest);
    }
}

#define TEST(f) cmocka_unit_test_teardown(f, free_world)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(a_thousand_boids_align_keep_apart_and_cruise_without_milling),
        TEST(four_thousand_boids_at_the_same_density_do_too),
        TEST(a_crowd_packed_tighter_than_separation_allows_still_aligns_and_cruises),
        TEST(without_alignment_a_thousand_boids_stay_unpolarized),
        TEST(a_group_of_100_told_to_seek_arrives_within_30_s_then_settles_and_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
