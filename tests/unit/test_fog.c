/*
 * Unit tests for the fog of war (stream/fog.h): each team sees exactly its
 * own units and the other boids within its units' sight radius, the
 * shorter way around on a torus, as a brute-force count says, scattered
 * or crowded in squads; a team with sight 0 sees only its own.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fog.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>

static float gap(float a, float b, float size, int wrap)
{
    float d = fabsf(a - b);
    return wrap && d > size - d ? size - d : d;
}

/* Scattered: boids and units over the whole world; crowded: each team's
 * units packed in two squads, some near the others' (and across the seam
 * of a torus), as an rts room's formations are. */
static void fog_equals_brute_force(enum sim_edges edges, float w, float h, bool crowded)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = w;
    cfg.height = h;
    cfg.edges = edges;
    cfg.capacity = 3000;
    struct sim_world *world = sim_create(&cfg, NULL);
    assert_non_null(world);
    assert_int_equal(sim_scatter(world, 600, 0), 600);
    for (int t = 1; t <= 4; t++) {
        if (!crowded) {
            assert_int_equal(sim_scatter(world, 300, t), 300);
            continue;
        }
        assert_int_equal(sim_spawn(world, 150, t, 100.0f * (float)t, 20.0f, 40.0f), 150);
        assert_int_equal(sim_spawn(world, 150, t, w / 2 + 40.0f * (float)t, h / 2, 60.0f), 150);
    }
    assert_int_equal(sim_param_set(world, 1, "sight_radius", 120.0f), 0);
    assert_int_equal(sim_param_set(world, 2, "sight_radius", 450.0f), 0);
    assert_int_equal(sim_param_set(world, 4, "sight_radius", 0.0f), 0);
    for (int k = 0; k < 20; k++)
        sim_step(world);
    struct sim_view v;
    sim_view(world, &v);
    const char *err;
    struct fog *f = fog_create(3000, &err);
    uint32_t *visible = calloc(v.count, sizeof *visible);
    fog_compute(f, &v, world, 4, visible);
    int wrap = edges == SIM_EDGES_WRAP;
    for (unsigned t = 1; t <= 4; t++) {
        float r = sim_group_params(world, (int)t)->sight_radius;
        for (uint32_t i = 0; i < v.count; i++) {
            int sees = v.group[i] == t;
            for (uint32_t u = 0; u < v.count && !sees; u++) {
                if (v.group[u] != t)
                    continue;
                float ex = gap(v.x[u], v.x[i], w, wrap), ey = gap(v.y[u], v.y[i], h, wrap);
                sees = ex * ex + ey * ey <= r * r;
            }
            if (sees != (int)(visible[i] >> t & 1u))
                fail_msg("team %u, boid %u of group %u: fog says %u", t, i, v.group[i],
                         visible[i] >> t & 1u);
        }
    }
    free(visible);
    fog_destroy(f);
    sim_destroy(world);
}

static void each_team_sees_its_own_and_what_is_in_its_sight(void **state)
{
    (void)state;
    for (int crowded = 0; crowded <= 1; crowded++) {
        fog_equals_brute_force(SIM_EDGES_WRAP, 1600, 1000, crowded);
        fog_equals_brute_force(SIM_EDGES_CONTAIN, 1600, 1000, crowded);
        /* sight wider than a third of the world */
        fog_equals_brute_force(SIM_EDGES_WRAP, 700, 500, crowded);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_team_sees_its_own_and_what_is_in_its_sight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
