/*
 * test_stepper — when a room's step runs on several tick threads: a room
 * whose last two ticks took more than their share of the period splits its steps
 * (counted in flockd_split_ticks_total), a quick one never does, one that
 * lost most of its boids or whose long tick was a hiccup goes back to one
 * thread, a single worker or no
 * pool means one thread; and split or not, the world ends the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics.h"
#include "stepper.h"

#include <stdlib.h>

#define PERIOD_NS 16666667 /* 60 Hz */

static struct sim_world *world_of(uint32_t n)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = n;
    sim_world_for(n, &cfg.width, &cfg.height);
    const char *err = NULL;
    struct sim_world *w = sim_create(&cfg, &err);
    assert_non_null(w);
    assert_int_equal(sim_scatter(w, n, 0), (int)n);
    return w;
}

static struct pool *pool_of(unsigned workers)
{
    const char *err = NULL;
    struct pool *p = pool_create(workers, &err);
    assert_non_null(p);
    return p;
}

/* Steps w once as a tick whose previous run took last_ns; returns whether
 * the step was split (the metric moved). */
static bool step(struct stepper *s, struct sim_world *w, struct pool *p, int64_t last_ns)
{
    uint64_t before = atomic_load(&g_metrics.split_ticks);
    struct pool_time t = {.last_ns = last_ns, .pool = p};
    stepper_step(s, w, &t, PERIOD_NS);
    bool split = atomic_load(&g_metrics.split_ticks) != before;
    assert_int_equal(split, stepper_is_split(s));
    return split;
}

static void a_long_tick_splits_the_steps_and_a_short_one_does_not(void **state)
{
    (void)state;
    struct pool *p = pool_of(2);
    struct sim_world *w = world_of(4000);
    struct stepper s = {0};
    assert_false(step(&s, w, p, 0));              /* the first tick */
    assert_false(step(&s, w, p, PERIOD_NS / 10)); /* under the share */
    assert_false(step(&s, w, p, PERIOD_NS / 4));  /* over it once */
    assert_false(step(&s, w, p, PERIOD_NS / 10));
    assert_false(step(&s, w, p, PERIOD_NS / 4));
    assert_true(step(&s, w, p, PERIOD_NS / 4));     /* twice in a row */
    assert_true(step(&s, w, p, PERIOD_NS / 4 / 2)); /* split, as long as one thread */
    assert_true(step(&s, w, p, PERIOD_NS / 4 / 2));
    sim_destroy(w);
    pool_destroy(p);
}

static void a_room_that_lost_most_of_its_boids_goes_back_to_one_thread(void **state)
{
    (void)state;
    struct pool *p = pool_of(2);
    struct sim_world *w = world_of(4000);
    struct stepper s = {0};
    assert_false(step(&s, w, p, PERIOD_NS / 4));
    assert_true(step(&s, w, p, PERIOD_NS / 4)); /* twice the share at 4000 boids */
    assert_int_equal(sim_despawn(w, 2500, -1), 2500);
    assert_true(step(&s, w, p, PERIOD_NS / 4)); /* 1500: still 3/4 of the share */
    assert_int_equal(sim_despawn(w, 1000, -1), 1000);
    assert_false(step(&s, w, p, PERIOD_NS / 4)); /* 500: a quarter */
    assert_int_equal(sim_despawn(w, 500, -1), 500);
    assert_false(step(&s, w, p, PERIOD_NS)); /* no boids: nothing to share */
    sim_destroy(w);
    pool_destroy(p);
}

static void one_long_tick_does_not_keep_a_quick_room_split(void **state)
{
    (void)state;
    struct pool *p = pool_of(2);
    struct sim_world *w = world_of(4000);
    struct stepper s = {0};
    assert_false(step(&s, w, p, PERIOD_NS));
    assert_true(step(&s, w, p, PERIOD_NS)); /* a hiccup of two ticks */
    assert_false(step(&s, w, p, PERIOD_NS / 100));
    assert_false(step(&s, w, p, PERIOD_NS / 100));
    sim_destroy(w);
    pool_destroy(p);
}

static void one_worker_or_no_pool_steps_on_one_thread(void **state)
{
    (void)state;
    struct pool *p = pool_of(1);
    struct sim_world *w = world_of(2000);
    struct stepper s = {0};
    assert_false(step(&s, w, p, PERIOD_NS));
    assert_false(step(&s, w, NULL, PERIOD_NS));
    sim_destroy(w);
    pool_destroy(p);
}

static void split_or_not_the_world_ends_the_same(void **state)
{
    (void)state;
    struct pool *p = pool_of(3);
    struct sim_world *a = world_of(3001), *b = world_of(3001);
    struct stepper sa = {0}, sb = {0};
    for (int k = 0; k < 50; k++) {
        assert_false(step(&sa, a, p, 0));
        assert_int_equal(step(&sb, b, p, PERIOD_NS), k > 0);
    }
    assert_true(sim_hash(a) == sim_hash(b));
    sim_destroy(a);
    sim_destroy(b);
    pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_long_tick_splits_the_steps_and_a_short_one_does_not),
        cmocka_unit_test(a_room_that_lost_most_of_its_boids_goes_back_to_one_thread),
        cmocka_unit_test(one_long_tick_does_not_keep_a_quick_room_split),
        cmocka_unit_test(one_worker_or_no_pool_steps_on_one_thread),
        cmocka_unit_test(split_or_not_the_world_ends_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
