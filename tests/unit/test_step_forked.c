/*
 * test_step_forked — a step cut into pieces on several threads
 * (sim_step_forked over pool_fork, as flockd's big rooms and flockbench
 * --threads run it) leaves the world exactly as sim_step() does: the same
 * state hash and the same bytes, whatever the number of threads and of
 * pieces, in a torus of one group and in a walled world with groups,
 * targets and obstacles, with boid counts that do not fall on the cut.
 *
 * The tests named forked_* are the fast tier's; heavy_* is the
 * 1,000-tick room of 100,000 boids, registered as its own ctest test
 * (tests/unit/CMakeLists.txt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pool.h"
#include "sim.h"
#include "stepper.h"

#include <stdlib.h>
#include <string.h>

/* How a world is stepped: `threads` threads (this one and threads - 1
 * pool workers), each phase cut into `parts` pieces; 1 and 1: sim_step(). */
struct stepping {
    unsigned threads, parts;
};

/* A runner of pieces one after another on this thread, in reverse. */
static void run_here(void *ctx, sim_part_fn *fn, void *arg, unsigned parts)
{
    (void)ctx;
    while (parts-- > 0)
        fn(arg, parts);
}

/* The world every run of a test starts from: n boids over a torus sized
 * as flockd sizes it, or, when `busy`, a walled world with three groups
 * (each its own parameters), two targets and obstacles. */
static struct sim_world *start_world(uint32_t n, int busy)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = n;
    cfg.seed = 42;
    sim_world_for(n, &cfg.width, &cfg.height);
    cfg.edges = busy ? SIM_EDGES_CONTAIN : SIM_EDGES_WRAP;
    cfg.keep_forces = 1;
    const char *err = NULL;
    struct sim_world *w = sim_create(&cfg, &err);
    if (!w)
        fail_msg("sim_create: %s", err ? err : "(no reason)");
    if (!busy) {
        assert_int_equal(sim_scatter(w, n, 0), (int)n);
        return w;
    }
    uint32_t third = n / 3;
    assert_int_equal(sim_scatter(w, third, 0), (int)third);
    assert_int_equal(sim_scatter(w, third, 1), (int)third);
    assert_int_equal(sim_scatter(w, n - 2 * third, 7), (int)(n - 2 * third));
    assert_int_equal(sim_param_set(w, 1, "max_speed", 160.0f), SIM_OK);
    assert_int_equal(sim_param_set(w, 7, "fov", 360.0f), SIM_OK);
    assert_int_equal(sim_param_set(w, 7, "own_group_only", 1.0f), SIM_OK);
    assert_int_equal(sim_target_set(w, 0, 0.25f * cfg.width, 0.5f * cfg.height), SIM_OK);
    assert_int_equal(sim_target_set(w, 7, 0.75f * cfg.width, 0.25f * cfg.height), SIM_OK);
    for (int k = 1; k <= 6; k++)
        assert_true(sim_obstacle_add(w, cfg.width * (float)k / 7.0f, 0.5f * cfg.height,
                                     0.02f * cfg.width) > 0);
    return w;
}

/* Steps a new start_world() `ticks` times as s says; returns it. */
static struct sim_world *run(uint32_t n, int busy, uint64_t ticks, struct stepping s)
{
    struct sim_world *w = start_world(n, busy);
    struct pool *pool = NULL;
    if (s.threads > 1) {
        const char *err = NULL;
        pool = pool_create(s.threads - 1, &err);
        assert_non_null(pool);
    }
    struct sim_fork fork = stepper_fork(pool, s.parts);
    for (uint64_t t = 0; t < ticks; t++) {
        if (!pool && s.parts == 1)
            sim_step(w);
        else if (!pool)
            sim_step_forked(w, &(struct sim_fork){run_here, NULL, s.parts});
        else
            sim_step_forked(w, &fork);
    }
    pool_destroy(pool);
    return w;
}

/* Every stepping of `ways` ends in the state the first one does. */
static void assert_same_end(uint32_t n, int busy, uint64_t ticks, const struct stepping *ways,
                            int count)
{
    struct sim_world *ref = run(n, busy, ticks, ways[0]);
    struct sim_view a;
    sim_view(ref, &a);
    assert_int_equal(a.tick, ticks);
    assert_int_equal(a.count, n);
    for (int k = 1; k < count; k++) {
        struct sim_world *w = run(n, busy, ticks, ways[k]);
        struct sim_view b;
        sim_view(w, &b);
        if (sim_hash(w) != sim_hash(ref))
            fail_msg("%u threads, %u pieces: hash %016llx, sim_step: %016llx", ways[k].threads,
                     ways[k].parts, (unsigned long long)sim_hash(w),
                     (unsigned long long)sim_hash(ref));
        assert_memory_equal(a.x, b.x, n * sizeof(float));
        assert_memory_equal(a.vy, b.vy, n * sizeof(float));
        assert_memory_equal(sim_last_force_x(ref), sim_last_force_x(w), n * sizeof(float));
        sim_destroy(w);
    }
    sim_destroy(ref);
}

static const struct stepping ways[] = {
    {1, 1},                         /* sim_step */
    {2, 2}, {7, 7}, {2, SIM_PARTS}, /* as flockd cuts a room's step */
    {1, 5},                         /* pieces one after the other on this thread */
};

#define WAYS ((int)(sizeof ways / sizeof ways[0]))

static void forked_steps_equal_sim_step_in_a_torus(void **state)
{
    (void)state;
    assert_same_end(20011, 0, 60, ways, WAYS); /* 20011: no multiple of any cut */
}

static void forked_steps_equal_sim_step_with_walls_targets_and_obstacles(void **state)
{
    (void)state;
    assert_same_end(9001, 1, 60, ways, WAYS);
}

static void forked_steps_equal_sim_step_with_fewer_boids_than_pieces(void **state)
{
    (void)state;
    assert_same_end(5, 0, 30, ways, WAYS);
    assert_same_end(130, 1, 30, ways, WAYS);
}

static void heavy_a_100k_room_after_400_ticks_is_the_same_on_1_2_and_7_threads(void **state)
{
    (void)state;
    const struct stepping three[] = {{1, 1}, {2, 2}, {7, 7}};
    assert_same_end(100000, 0, 400, three, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forked_steps_equal_sim_step_in_a_torus),
        cmocka_unit_test(forked_steps_equal_sim_step_with_walls_targets_and_obstacles),
        cmocka_unit_test(forked_steps_equal_sim_step_with_fewer_boids_than_pieces),
        cmocka_unit_test(heavy_a_100k_room_after_400_ticks_is_the_same_on_1_2_and_7_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
