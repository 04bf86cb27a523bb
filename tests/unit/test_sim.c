/*
 * Unit tests for the flocking core (sim.h): the grid neighbour search gives
 * the same steering as brute force (random worlds, cell borders, the wrap
 * seam, crowds, tiny worlds) in both edge modes; the same seed gives the
 * same hash; each rule does what it is for when it acts alone; separation
 * acts all around, fades out at its radius and comes first in the force
 * budget; a lone boid cruises; a group told to seek a point arrives and
 * settles; boids never end a tick inside an obstacle; speed and force caps
 * hold and nothing turns NaN at extreme valid parameters; invalid
 * arguments are refused without side effects; and spawn, scatter,
 * despawn, obstacles, reset and the epoch keep their bookkeeping promises.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flockstats.h"
#include "sim.h"
#include "splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------- */

static struct sim_config test_config(enum sim_edges edges, uint32_t capacity, uint64_t seed)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.edges = edges;
    cfg.capacity = capacity;
    cfg.seed = seed;
    return cfg;
}

/* Every world a test creates, so that the teardown can destroy what a
 * failed assertion left behind and ASan's leak check stays meaningful. */
#define MAX_WORLDS 4
static struct sim_world *worlds[MAX_WORLDS];

/* Worlds keep their forces, so that tests can read them. */
static struct sim_world *world_new(const struct sim_config *cfg)
{
    const char *err = NULL;
    struct sim_config keep = *cfg;
    keep.keep_forces = 1;
    struct sim_world *w = sim_create(&keep, &err);
    if (!w)
        fail_msg("sim_create: %s", err ? err : "(no reason)");
    for (int k = 0; k < MAX_WORLDS; k++) {
        if (!worlds[k]) {
            worlds[k] = w;
            return w;
        }
    }
    sim_destroy(w);
    fail_msg("a test may hold at most %d worlds", MAX_WORLDS);
    return NULL;
}

static void world_free(struct sim_world *w)
{
    for (int k = 0; k < MAX_WORLDS; k++)
        if (worlds[k] == w)
            worlds[k] = NULL;
    sim_destroy(w);
}

static int destroy_leftover_worlds(void **state)
{
    (void)state;
    for (int k = 0; k < MAX_WORLDS; k++) {
        if (worlds[k])
            sim_destroy(worlds[k]);
        worlds[k] = NULL;
    }
    return 0;
}

static void set_param(struct sim_world *w, int group, const char *name, float value)
{
    int rc = sim_param_set(w, group, name, value);
    if (rc != SIM_OK)
        fail_msg("sim_param_set(%s, %g): %s", name, (double)value, sim_strerror(rc));
}

static float get_param(const struct sim_world *w, int group, const char *name)
{
    float v = NAN;
    assert_int_equal(sim_param_get(w, group, name, &v), SIM_OK);
    return v;
}

static void spawn(struct sim_world *w, uint32_t n, int group, float x, float y, float spread)
{
    assert_int_equal(sim_spawn(w, n, group, x, y, spread), (int)n);
}

static void step_n(struct sim_world *w, int ticks)
{
    for (int t = 0; t < ticks; t++)
        sim_step(w);
}

/* Uniform float in [lo, hi). */
static float uniform(uint64_t *s, float lo, float hi)
{
    float v = lo + (float)(splitmix_next(s) >> 40) * (1.0f / 16777216.0f) * (hi - lo);
    return v < hi ? v : lo;
}

/* Signed shortest offset b - a, across the seam on a torus. */
static double offset(double a, double b, double size, int wrap)
{
    double d = b - a;
    if (wrap && d > 0.5 * size)
        d -= size;
    else if (wrap && d < -0.5 * size)
        d += size;
    return d;
}

static double speed_of(const struct sim_view *v, uint32_t i)
{
    return hypot(v->vx[i], v->vy[i]);
}

/* Root mean square distance of the boids to their centroid (no wrap). */
static double rms_spread(const struct sim_world *w)
{
    struct sim_view v;
    sim_view(w, &v);
    double cx = 0, cy = 0, s = 0;
    for (uint32_t i = 0; i < v.count; i++) {
        cx += v.x[i];
        cy += v.y[i];
    }
    cx /= v.count;
    cy /= v.count;
    for (uint32_t i = 0; i < v.count; i++)
        s += (v.x[i] - cx) * (v.x[i] - cx) + (v.y[i] - cy) * (v.y[i] - cy);
    return sqrt(s / v.count);
}

static float polarization(const struct sim_world *w)
{
    struct sim_stats st;
    sim_stats(w, &st);
    return st.polarization;
}

/* Fraction of boids within r of (x, y), across the seam on a torus. */
static double fraction_near(const struct sim_world *w, float x, float y, float r)
{
    struct sim_view v;
    sim_view(w, &v);
    int wrap = sim_config(w)->edges == SIM_EDGES_WRAP;
    uint32_t in = 0;
    for (uint32_t i = 0; i < v.count; i++)
        in += hypot(offset(x, v.x[i], v.width, wrap), offset(y, v.y[i], v.height, wrap)) <= r;
    return v.count ? (double)in / v.count : 0.0;
}

/* ---- grid against brute force -------------------------------------------- */

/* Steering vectors a and b agree to float summation order: each component
 * within 1e-3 plus 1e-4 of the larger vector's length. */
static int same_force(float ax, float ay, float bx, float by)
{
    double tol = 1e-3 + 1e-4 * fmax(hypot(ax, ay), hypot(bx, by));
    return fabs((double)ax - bx) <= tol && fabs((double)ay - by) <= tol;
}

/* The grid world and its brute-force twin computed the same steering for
 * every boid, having seen the same number of neighbours. */
static void assert_same_steering(const struct sim_world *grid, const struct sim_world *brute)
{
    struct sim_view v;
    sim_view(grid, &v);
    const float *gx = sim_last_force_x(grid), *gy = sim_last_force_y(grid);
    const float *bx = sim_last_force_x(brute), *by = sim_last_force_y(brute);
    assert_non_null(gx);
    assert_non_null(gy);
    assert_non_null(bx);
    assert_non_null(by);
    struct sim_stats gs, bs;
    sim_stats(grid, &gs);
    sim_stats(brute, &bs);
    assert_float_equal(gs.avg_neighbours, bs.avg_neighbours, 0.0);
    for (uint32_t i = 0; i < v.count; i++) {
        if (!same_force(gx[i], gy[i], bx[i], by[i]))
            fail_msg("boid %u now at (%.9g, %.9g): grid force (%.9g, %.9g), brute force "
                     "(%.9g, %.9g)",
                     i, (double)v.x[i], (double)v.y[i], (double)gx[i], (double)gy[i], (double)bx[i],
                     (double)by[i]);
    }
}

/* Two worlds alike but for brute_force; the caller spawns into both. */
static void twin_worlds(enum sim_edges edges, uint32_t capacity, float w, float h,
                        struct sim_world **grid, struct sim_world **brute)
{
    struct sim_config cfg = test_config(edges, capacity, 7);
    cfg.width = w;
    cfg.height = h;
    *grid = world_new(&cfg);
    cfg.brute_force = 1;
    *brute = world_new(&cfg);
}

static void set_param_both(struct sim_world *a, struct sim_world *b, int group, const char *name,
                           float value)
{
    set_param(a, group, name, value);
    set_param(b, group, name, value);
}

/* Same seed, same spawns: the twins start identical. */
static void spawn_both(struct sim_world *a, struct sim_world *b, uint32_t n, int group, float x,
                       float y, float spread)
{
    spawn(a, n, group, x, y, spread);
    spawn(b, n, group, x, y, spread);
}

/*
 * Positions in the twin tests are whole multiples of 2^-12. The grid and
 * brute force reach a neighbour across the seam by different float
 * operations; on such positions (below 4096) every one of them is exact,
 * so both see exactly the same offsets and the same neighbours, and only
 * the order of the sums differs. Elsewhere a pair within ~1e-4 of a radius
 * could fall on either side of it.
 */
static float snap(float v)
{
    return roundf(v * 4096.0f) / 4096.0f;
}

/* Boid i gets the same (snapped) position and velocity in both worlds. */
static void place_both(struct sim_world *a, struct sim_world *b, uint32_t i, float x, float y,
                       float vx, float vy)
{
    assert_int_equal(sim_boid_set(a, i, snap(x), snap(y), vx, vy), SIM_OK);
    assert_int_equal(sim_boid_set(b, i, snap(x), snap(y), vx, vy), SIM_OK);
}

/* Scatters every boid uniformly over the world with a random velocity. */
static void scatter_both(struct sim_world *a, struct sim_world *b, uint64_t seed)
{
    struct sim_view v;
    sim_view(a, &v);
    for (uint32_t i = 0; i < v.count; i++) {
        float x = uniform(&seed, 0.0f, v.width), y = uniform(&seed, 0.0f, v.height);
        float vx = uniform(&seed, -70.0f, 70.0f), vy = uniform(&seed, -70.0f, 70.0f);
        place_both(a, b, i, x, y, vx, vy);
    }
}

/* Gives both worlds the current state of `from` (same count and order). */
static void sync_both(struct sim_world *from, struct sim_world *to)
{
    struct sim_view v;
    sim_view(from, &v);
    for (uint32_t i = 0; i < v.count; i++)
        place_both(from, to, i, fminf(v.x[i], v.width), fminf(v.y[i], v.height), v.vx[i], v.vy[i]);
}

/* Two groups with different radii (the larger sets the cell size), one
 * flocking only with itself and seeing all round, and a seek target, so
 * every term of the steering is exercised. */
static void mixed_groups_both(struct sim_world *a, struct sim_world *b)
{
    spawn_both(a, b, 1200, 0, 800.0f, 500.0f, 500.0f);
    spawn_both(a, b, 300, 3, 800.0f, 500.0f, 500.0f);
    set_param_both(a, b, 3, "perception", 70.0f);
    set_param_both(a, b, 3, "separation_radius", 40.0f);
    set_param_both(a, b, 3, "own_group_only", 1.0f);
    set_param_both(a, b, 3, "fov", 360.0f);
    assert_int_equal(sim_target_set(a, 3, 100.0f, 100.0f), SIM_OK);
    assert_int_equal(sim_target_set(b, 3, 100.0f, 100.0f), SIM_OK);
}

/* Steps both twins once and compares their steering. */
static void step_both_and_compare(struct sim_world *grid, struct sim_world *brute)
{
    sim_step(grid);
    sim_step(brute);
    assert_same_steering(grid, brute);
}

static void assert_grid_matches_brute_force_on_random_worlds(enum sim_edges edges)
{
    struct sim_world *grid, *brute;
    twin_worlds(edges, 2000, 1600.0f, 1000.0f, &grid, &brute);
    mixed_groups_both(grid, brute);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        scatter_both(grid, brute, seed);
        step_both_and_compare(grid, brute);
    }
    /* From identical states again and again as the flock evolves. */
    for (int t = 0; t < 20; t++) {
        sync_both(grid, brute);
        step_both_and_compare(grid, brute);
    }
    world_free(grid);
    world_free(brute);
}

static void grid_and_brute_force_give_identical_steering_in_wrap_mode(void **state)
{
    (void)state;
    assert_grid_matches_brute_force_on_random_worlds(SIM_EDGES_WRAP);
}

static void grid_and_brute_force_give_identical_steering_in_contain_mode(void **state)
{
    (void)state;
    assert_grid_matches_brute_force_on_random_worlds(SIM_EDGES_CONTAIN);
}

/* A random grid line of an axis cut into cells of `cell` (0 and size
 * included), or one position step (2^-12) beside it, kept in [0, size]. */
static float on_line(uint64_t *s, float cell, float size, int beside)
{
    float cells = floorf(size / cell + 0.5f);
    float k = floorf(uniform(s, 0.0f, cells + 1.0f));
    float v = snap(k >= cells ? size : k * cell);
    if (beside)
        v += splitmix_next(s) & 1 ? 1.0f / 4096.0f : -1.0f / 4096.0f;
    return fminf(fmaxf(v, 0.0f), size);
}

/* A coordinate within `band` of the seam: near 0 or near size. */
static float near_seam(uint64_t *s, float size, float band)
{
    float d = uniform(s, 0.0f, band);
    return splitmix_next(s) & 1 ? d : size - d;
}

/*
 * Places every boid, the same in both worlds, with a random velocity and
 * one or both coordinates on a cell border (cw x ch cells), just beside
 * one, or near the wrap seam (x near 0 and W, y near 0 and H, corners).
 * The other coordinate is random so that no neighbourhood is symmetric: a
 * symmetric one sums to a near-zero vector whose direction is rounding
 * noise.
 */
static void place_on_borders(struct sim_world *a, struct sim_world *b, float cw, float ch)
{
    struct sim_view v;
    sim_view(a, &v);
    uint64_t s = 11;
    for (uint32_t i = 0; i < v.count; i++) {
        float x = uniform(&s, 0.0f, v.width), y = uniform(&s, 0.0f, v.height);
        switch (i % 16 / 2) {
        case 0:
            x = on_line(&s, cw, v.width, 0);
            break;
        case 1:
            y = on_line(&s, ch, v.height, 0);
            break;
        case 2:
            x = on_line(&s, cw, v.width, 1);
            break;
        case 3:
            y = on_line(&s, ch, v.height, 1);
            break;
        case 4:
            x = near_seam(&s, v.width, 10.0f);
            break;
        case 5:
            y = near_seam(&s, v.height, 10.0f);
            break;
        case 6:
            x = on_line(&s, cw, v.width, 0);
            y = on_line(&s, ch, v.height, 0);
            break;
        default:
            x = near_seam(&s, v.width, 25.0f);
            y = near_seam(&s, v.height, 25.0f);
            break;
        }
        place_both(a, b, i, x, y, uniform(&s, -80.0f, 80.0f), uniform(&s, -80.0f, 80.0f));
    }
}

static void assert_grid_matches_brute_force_on_borders(enum sim_edges edges, float perception)
{
    struct sim_world *grid, *brute;
    twin_worlds(edges, 3000, 1600.0f, 1000.0f, &grid, &brute);
    /* Unsaturated forces make the steering sensitive to every neighbour. */
    set_param_both(grid, brute, -1, "max_force", 10000.0f);
    set_param_both(grid, brute, -1, "perception", perception);
    set_param_both(grid, brute, -1, "separation_radius", 0.5f * perception);
    spawn_both(grid, brute, 3000, 0, 800.0f, 500.0f, 500.0f);
    /* The world is cut into floor(size / perception) cells per axis. */
    place_on_borders(grid, brute, 1600.0f / floorf(1600.0f / perception),
                     1000.0f / floorf(1000.0f / perception));
    step_both_and_compare(grid, brute);
    struct sim_stats st;
    sim_stats(grid, &st);
    assert_true(st.avg_neighbours > 3.0f); /* the borders really have neighbours */
    world_free(grid);
    world_free(brute);
}

static void grid_and_brute_force_agree_on_cell_borders_and_across_the_wrap_seam(void **state)
{
    (void)state;
    assert_grid_matches_brute_force_on_borders(SIM_EDGES_WRAP, 50.0f);
    assert_grid_matches_brute_force_on_borders(SIM_EDGES_WRAP, 47.0f);
    assert_grid_matches_brute_force_on_borders(SIM_EDGES_CONTAIN, 50.0f);
    assert_grid_matches_brute_force_on_borders(SIM_EDGES_CONTAIN, 47.0f);
}

/* The whole flock, 3000 boids, inside one 3 x 3 block of big cells (on a
 * torus wrapped round the corner): thousands of candidates per boid. */
static void grid_and_brute_force_agree_when_the_whole_flock_crowds_into_one_block(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_world *grid, *brute;
        twin_worlds((enum sim_edges)edges, 3000, 1600.0f, 1000.0f, &grid, &brute);
        set_param_both(grid, brute, -1, "perception", 250.0f); /* 6 x 4 cells */
        /* On a torus around the corner (so across both seams), else inside. */
        float at = edges == SIM_EDGES_WRAP ? 0.0f : 625.0f;
        /* Two groups that flock only with their own: scanned in place, the
         * candidates' groups must be there too. */
        spawn_both(grid, brute, 2000, 0, at, at, 250.0f);
        spawn_both(grid, brute, 1000, 2, at, at, 250.0f);
        set_param_both(grid, brute, -1, "own_group_only", 1.0f);
        sync_both(grid, brute);
        step_both_and_compare(grid, brute);
        struct sim_stats st;
        sim_stats(grid, &st);
        assert_true(st.avg_neighbours > 300.0f);
        world_free(grid);
        world_free(brute);
    }
}

static void grid_and_brute_force_agree_in_a_world_only_three_cells_across(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_world *grid, *brute;
        twin_worlds((enum sim_edges)edges, 400, 150.0f, 150.0f, &grid, &brute);
        set_param_both(grid, brute, -1, "max_force", 10000.0f);
        spawn_both(grid, brute, 400, 0, 75.0f, 75.0f, 75.0f);
        scatter_both(grid, brute, 5);
        for (int t = 0; t < 10; t++) {
            sync_both(grid, brute);
            step_both_and_compare(grid, brute);
        }
        world_free(grid);
        world_free(brute);
    }
}

/* Fraction of boids of a and b (same count and order) more than `tol`
 * apart. */
static double fraction_apart(const struct sim_world *a, const struct sim_world *b, double tol)
{
    struct sim_view va, vb;
    sim_view(a, &va);
    sim_view(b, &vb);
    int wrap = sim_config(a)->edges == SIM_EDGES_WRAP;
    uint32_t apart = 0;
    for (uint32_t i = 0; i < va.count; i++)
        apart += hypot(offset(va.x[i], vb.x[i], va.width, wrap),
                       offset(va.y[i], vb.y[i], va.height, wrap)) > tol;
    return (double)apart / va.count;
}

/* Stepped independently, the twins drift apart only as fast as rounding
 * differences grow: flocking is chaotic, so a boid now and then crosses a
 * radius in one world and not the other, but the flock as a whole stays
 * put. */
static void grid_and_brute_force_worlds_stay_close_over_many_steps(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_world *grid, *brute;
        twin_worlds((enum sim_edges)edges, 2000, 1600.0f, 1000.0f, &grid, &brute);
        mixed_groups_both(grid, brute);
        for (int t = 1; t <= 20; t++) {
            sim_step(grid);
            sim_step(brute);
            double apart = fraction_apart(grid, brute, 0.01);
            if (apart > 0.01)
                fail_msg("tick %d: %.1f%% of boids over 0.01 from their twins", t, 100 * apart);
        }
        struct sim_stats gs, bs;
        sim_stats(grid, &gs);
        sim_stats(brute, &bs);
        assert_float_equal(gs.mean_speed, bs.mean_speed, 1e-3 * bs.mean_speed);
        assert_float_equal(gs.polarization, bs.polarization, 1e-3);
        world_free(grid);
        world_free(brute);
    }
}

/* ---- determinism and the hash -------------------------------------------- */

/* A world with some of everything: groups, parameters, a target, obstacles. */
static struct sim_world *busy_world(uint64_t seed)
{
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 1000, seed);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 300, 0, 400.0f, 400.0f, 200.0f);
    spawn(w, 200, 1, 1200.0f, 600.0f, 200.0f);
    set_param(w, 1, "max_speed", 140.0f);
    assert_int_equal(sim_target_set(w, 1, 300.0f, 700.0f), SIM_OK);
    assert_true(sim_obstacle_add(w, 800.0f, 500.0f, 60.0f) > 0);
    return w;
}

static void same_seed_gives_the_same_hash_after_1000_ticks(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(1234), *b = busy_world(1234);
    assert_true(sim_hash(a) == sim_hash(b));
    step_n(a, 1000);
    step_n(b, 1000);
    struct sim_view va, vb;
    sim_view(a, &va);
    sim_view(b, &vb);
    assert_int_equal(va.tick, 1000);
    assert_memory_equal(va.x, vb.x, va.count * sizeof(float));
    assert_memory_equal(va.vy, vb.vy, va.count * sizeof(float));
    assert_true(sim_hash(a) == sim_hash(b));
    world_free(a);
    world_free(b);
}

static void a_different_seed_gives_a_different_hash(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(1234), *b = busy_world(1235);
    assert_true(sim_hash(a) != sim_hash(b));
    step_n(a, 1000);
    step_n(b, 1000);
    assert_true(sim_hash(a) != sim_hash(b));
    world_free(a);
    world_free(b);
}

static void moving_one_boid_changes_the_hash(void **state)
{
    (void)state;
    struct sim_world *w = busy_world(99);
    step_n(w, 10);
    struct sim_view v;
    sim_view(w, &v);
    uint64_t before = sim_hash(w);
    float x = v.x[123], y = v.y[123], vx = v.vx[123], vy = v.vy[123];
    float moved = x > 1.0f ? nextafterf(x, 0.0f) : nextafterf(x, 2.0f); /* one float step */
    assert_int_equal(sim_boid_set(w, 123, moved, y, vx, vy), SIM_OK);
    assert_true(sim_hash(w) != before);
    assert_int_equal(sim_boid_set(w, 123, x, y, vx, nextafterf(vy, 1e9f)), SIM_OK);
    assert_true(sim_hash(w) != before);
    assert_int_equal(sim_boid_set(w, 123, x, y, vx, vy), SIM_OK);
    assert_true(sim_hash(w) == before);
    world_free(w);
}

/* Fills a stretch of stack with `byte`, so that whatever is later built in
 * that memory without being written starts out as `byte`. Called through a
 * volatile pointer so it cannot be inlined away. */
static void scribble(unsigned char byte)
{
    volatile unsigned char junk[512];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = byte;
}

static void (*volatile scribble_stack)(unsigned char) = scribble;

/* Two worlds in the same state hash the same, whatever the stack held when
 * the state was written: bytes that are not state (struct padding) must
 * not reach the hash. */
static void the_hash_covers_state_not_leftover_memory(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *a = world_new(&cfg), *b = world_new(&cfg);
    scribble_stack(0x00);
    assert_int_equal(sim_target_set(a, 5, 10.0f, 20.0f), SIM_OK);
    scribble_stack(0xa5);
    assert_int_equal(sim_target_set(b, 5, 10.0f, 20.0f), SIM_OK);
    assert_true(sim_hash(a) == sim_hash(b));
    world_free(a);
    world_free(b);
}

/* ---- the rules one at a time --------------------------------------------- */

static void alignment_alone_takes_polarization_from_below_0_2_to_above_0_9(void **state)
{
    (void)state;
    /* A small torus so the whole flock keeps meeting itself. */
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 400, 3);
    cfg.width = cfg.height = 300.0f;
    struct sim_world *w = world_new(&cfg);
    set_param(w, -1, "w_separation", 0.0f);
    set_param(w, -1, "w_cohesion", 0.0f);
    assert_true(get_param(w, 0, "w_alignment") > 0.0f);
    assert_int_equal(sim_scatter(w, 400, 0), 400);
    assert_true(polarization(w) < 0.2f);
    step_n(w, 60 * 10);
    float p = polarization(w);
    if (p <= 0.9f)
        fail_msg("polarization after 10 s of alignment alone: %g", (double)p);
    world_free(w);
}

static void without_alignment_the_default_flock_stays_unpolarized(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 400, 3);
    cfg.width = cfg.height = 300.0f;
    struct sim_world *w = world_new(&cfg);
    set_param(w, -1, "w_alignment", 0.0f);
    assert_int_equal(sim_scatter(w, 400, 0), 400);
    for (int t = 1; t <= 60 * 10; t++) {
        sim_step(w);
        float p = polarization(w);
        if (p >= 0.3f)
            fail_msg("polarization %g at tick %d without alignment", (double)p, t);
    }
    world_free(w);
}

static void cohesion_alone_pulls_a_resting_group_together(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_CONTAIN, 150, 5);
    struct sim_world *w = world_new(&cfg);
    set_param(w, -1, "w_separation", 0.0f);
    set_param(w, -1, "w_alignment", 0.0f);
    spawn(w, 150, 0, 800.0f, 500.0f, 40.0f);
    struct sim_view v;
    sim_view(w, &v);
    for (uint32_t i = 0; i < v.count; i++)
        assert_int_equal(sim_boid_set(w, i, v.x[i], v.y[i], 0.0f, 0.0f), SIM_OK);
    /* Cohesion is a spring toward the neighbours' centre: it gathers a
     * resting group within about a second (nothing damps it after). */
    double before = rms_spread(w), least = before;
    for (int t = 0; t < 60; t++) {
        sim_step(w);
        least = fmin(least, rms_spread(w));
    }
    if (!(least < 0.5 * before))
        fail_msg("RMS spread %g -> at least %g in 1 s of cohesion alone", before, least);
    world_free(w);
}

/* Nearest-neighbour p5 and median of w's boids. */
static struct flockstats_result measure(const struct sim_world *w)
{
    struct flockstats_frame f;
    struct flockstats_result r;
    flockstats_frame_of(w, &f);
    struct flockstats *fs = flockstats_create(f.count, NULL);
    assert_non_null(fs);
    assert_int_equal(flockstats_measure(fs, &f, &r), SIM_OK);
    flockstats_destroy(fs);
    return r;
}

static void separation_alone_spreads_an_overlapping_crowd_past_the_separation_radius(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_CONTAIN, 60, 5);
    struct sim_world *w = world_new(&cfg);
    set_param(w, -1, "w_cohesion", 0.0f);
    set_param(w, -1, "w_alignment", 0.0f);
    spawn(w, 60, 0, 800.0f, 500.0f, 100.0f);
    float radius = get_param(w, 0, "separation_radius");
    struct flockstats_result before = measure(w);
    assert_true(before.nn_p5 < 0.5f * radius && before.nn_median < radius);
    step_n(w, 60 * 6);
    struct flockstats_result after = measure(w);
    if (!(after.nn_p5 > 0.6f * radius && after.nn_median > radius))
        fail_msg("nearest-neighbour p5 %g -> %g, median %g -> %g after 6 s of separation alone",
                 (double)before.nn_p5, (double)after.nn_p5, (double)before.nn_median,
                 (double)after.nn_median);
    world_free(w);
}

/* A wrapping world of n boids at rest, for probing one step's steering. */
static struct sim_world *probe_world(uint32_t n)
{
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, n, 1);
    struct sim_world *w = world_new(&cfg);
    spawn(w, n, 0, 800.0f, 500.0f, 0.0f);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(sim_boid_set(w, i, 800.0f, 500.0f, 0.0f, 0.0f), SIM_OK);
    return w;
}

/* A boid's position and velocity: x, y, vx, vy. */
typedef float boid_state[4];

/* Two boids placed as given, with the separation, alignment and cohesion
 * weights given (a negative weight keeps the default). */
static struct sim_world *pair_world(const float weights[3], const boid_state a, const boid_state b)
{
    static const char *const names[3] = {"w_separation", "w_alignment", "w_cohesion"};
    struct sim_world *w = probe_world(2);
    for (int k = 0; k < 3; k++)
        if (weights[k] >= 0.0f)
            set_param(w, -1, names[k], weights[k]);
    assert_int_equal(sim_boid_set(w, 0, a[0], a[1], a[2], a[3]), SIM_OK);
    assert_int_equal(sim_boid_set(w, 1, b[0], b[1], b[2], b[3]), SIM_OK);
    return w;
}

/* The steering boid i got from one step, and its length. */
static double force_after_step(struct sim_world *w, uint32_t i, double *fx, double *fy)
{
    sim_step(w);
    *fx = sim_last_force_x(w)[i];
    *fy = sim_last_force_y(w)[i];
    return hypot(*fx, *fy);
}

static void separation_acts_all_around_while_alignment_and_cohesion_see_only_ahead(void **state)
{
    (void)state;
    /* Boid 0 flies +x; boid 1 is 10 units straight behind it, in the
     * 90-degree blind cone of the default field of view. */
    double fx, fy;
    const float separation_only[3] = {-1.0f, 0.0f, 0.0f}, cohesion_only[3] = {0.0f, 0.0f, -1.0f};
    struct sim_world *w = pair_world(separation_only, (boid_state){500.0f, 500.0f, 50.0f, 0.0f},
                                     (boid_state){490.0f, 500.0f, 50.0f, 0.0f});
    assert_true(force_after_step(w, 0, &fx, &fy) > 0.0);
    assert_true(fx > 0.0 && fabs(fy) < 1e-3 * fx); /* pushed forward, away from it */
    world_free(w);

    w = pair_world(cohesion_only, (boid_state){500.0f, 500.0f, 50.0f, 0.0f},
                   (boid_state){470.0f, 500.0f, 50.0f, 0.0f});
    assert_true(force_after_step(w, 0, &fx, &fy) == 0.0); /* cohesion does not see it */
    assert_true(force_after_step(w, 1, &fx, &fy) > 0.0);  /* but the one behind sees boid 0 */
    assert_true(fx > 0.0);
    world_free(w);
}

/* Steering of a resting boid with one resting neighbour d units away. */
static double push_at(double d)
{
    double fx, fy;
    const float no_cohesion[3] = {-1.0f, -1.0f, 0.0f};
    struct sim_world *w = pair_world(no_cohesion, (boid_state){800.0f, 500.0f, 0.0f, 0.0f},
                                     (boid_state){(float)(800.0 + d), 500.0f, 0.0f, 0.0f});
    double f = force_after_step(w, 0, &fx, &fy);
    assert_true(f == 0.0 || (fx < 0.0 && fabs(fy) <= 1e-4 * f)); /* straight away from it */
    world_free(w);
    return f;
}

static void separation_fades_out_at_its_radius_and_takes_its_whole_share_up_close(void **state)
{
    (void)state;
    struct sim_params p;
    sim_params_default(&p);
    double r = p.separation_radius, edge = push_at(0.999 * r), near = push_at(0.9 * r);
    double mid = push_at(0.8 * r), close = push_at(0.5 * r), share = SIM_SEPARATION_SHARE;
    assert_true(push_at(1.01 * r) == 0.0);
    if (!(edge < 0.01 * p.max_force && edge < near && near < mid && mid < close))
        fail_msg("push at 0.999, 0.9, 0.8, 0.5 r: %g, %g, %g, %g", edge, near, mid, close);
    assert_float_equal(close, share * p.max_force, 1e-3 * p.max_force);
}

static void a_close_neighbour_takes_its_share_of_the_budget_before_alignment(void **state)
{
    (void)state;
    /* Boid 0 flies +x with boid 1 5 units to its side flying -x.
     * Separation comes first and wants more than max_force: it gets its
     * whole share, straight away from boid 1. Alignment, next, sees two
     * opposite headings, so it wants the boid to stop, and gets the rest;
     * nothing is left for cohesion. */
    double fx, fy;
    const float strong_pulls[3] = {-1.0f, 10.0f, 10.0f};
    struct sim_world *w = pair_world(strong_pulls, (boid_state){500.0f, 500.0f, 50.0f, 0.0f},
                                     (boid_state){500.0f, 505.0f, -50.0f, 0.0f});
    float max_force = get_param(w, 0, "max_force");
    assert_true(force_after_step(w, 0, &fx, &fy) > 0.0);
    assert_float_equal(fy, -SIM_SEPARATION_SHARE * max_force, 1e-3 * max_force);
    assert_float_equal(fx, -(1.0 - SIM_SEPARATION_SHARE) * max_force, 1e-3 * max_force);
    world_free(w);
}

static void a_lone_boid_cruises_up_to_max_speed(void **state)
{
    (void)state;
    struct sim_world *w = probe_world(1);
    assert_int_equal(sim_boid_set(w, 0, 500.0f, 500.0f, 0.0f, 10.0f), SIM_OK);
    step_n(w, 120);
    struct sim_view v;
    sim_view(w, &v);
    double max_speed = get_param(w, 0, "max_speed");
    if (!(speed_of(&v, 0) > 0.95 * max_speed && fabs(v.vx[0]) < 1e-3 * max_speed))
        fail_msg("a lone boid's speed after 2 s: %g (vx %g)", speed_of(&v, 0), (double)v.vx[0]);
    world_free(w);
}

/* ---- seek and arrive ------------------------------------------------------ */

struct settle_report {
    double inside;       /* fraction within arrive_radius at the end */
    double worst_speed;  /* highest mean speed over the final seconds */
    double worst_centre; /* farthest the centroid strayed from the target then */
};

/* Lets a group of n seek (tx, ty) for `seconds`, watching the last five. */
static struct settle_report seek_and_watch(struct sim_world *w, uint32_t n, float tx, float ty,
                                           int seconds)
{
    struct settle_report r = {0};
    spawn(w, n, 0, 300.0f, 300.0f, 60.0f);
    assert_int_equal(sim_target_set(w, 0, tx, ty), SIM_OK);
    for (int t = 1; t <= 60 * seconds; t++) {
        sim_step(w);
        if (t <= 60 * (seconds - 5))
            continue;
        struct sim_stats st;
        struct sim_view v;
        sim_stats(w, &st);
        sim_view(w, &v);
        double cx = 0, cy = 0;
        for (uint32_t i = 0; i < v.count; i++) {
            cx += v.x[i];
            cy += v.y[i];
        }
        r.worst_speed = fmax(r.worst_speed, st.mean_speed);
        r.worst_centre = fmax(r.worst_centre, hypot(cx / v.count - tx, cy / v.count - ty));
    }
    r.inside = fraction_near(w, tx, ty, get_param(w, 0, "arrive_radius"));
    return r;
}

static void a_group_told_to_seek_a_point_arrives_and_settles_without_orbiting(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_CONTAIN, 30, 2);
    struct sim_world *w = world_new(&cfg);
    /* Default parameters: arrive slows alignment and cohesion too, so the
     * whole group settles rather than cruising around its target. */
    float max_speed = get_param(w, 0, "max_speed");
    float radius = get_param(w, 0, "arrive_radius");
    struct settle_report r = seek_and_watch(w, 30, 1200.0f, 700.0f, 40);
    if (r.inside < 0.95 || r.worst_speed >= 0.05 * max_speed || r.worst_centre >= 0.25 * radius)
        fail_msg("%.0f%% inside arrive radius, mean speed up to %g, centroid up to %g away",
                 100 * r.inside, r.worst_speed, r.worst_centre);
    world_free(w);
}

/* ---- obstacles ------------------------------------------------------------ */

/* Fails if any boid's centre is inside an obstacle, beyond float rounding
 * of the distance (1e-5 of the radius). */
static void assert_no_boid_inside_an_obstacle(const struct sim_world *w, int tick)
{
    struct sim_view v;
    sim_view(w, &v);
    int wrap = sim_config(w)->edges == SIM_EDGES_WRAP;
    for (uint32_t k = 0; k < v.obstacle_count; k++) {
        const struct sim_obstacle *o = &v.obstacles[k];
        double inner = (double)o->r * (1.0 - 1e-5);
        for (uint32_t i = 0; i < v.count; i++) {
            double dx = offset(o->x, v.x[i], v.width, wrap);
            double dy = offset(o->y, v.y[i], v.height, wrap);
            if (dx * dx + dy * dy < inner * inner)
                fail_msg("tick %d: boid %u at (%g, %g) is %g inside obstacle %u (r %g)", tick, i,
                         (double)v.x[i], (double)v.y[i], o->r - sqrt(dx * dx + dy * dy), o->id,
                         (double)o->r);
        }
    }
}

static void boids_never_enter_obstacles_on_a_long_run_past_them(void **state)
{
    (void)state;
    enum { LEG = 60 * 45 }; /* ticks per crossing */
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_config cfg = test_config((enum sim_edges)edges, 200, 8);
        struct sim_world *w = world_new(&cfg);
        spawn(w, 200, 0, 450.0f, 500.0f, 70.0f);
        /* Between x = 450 and x = 1150, the short way round on a torus too. */
        assert_true(sim_obstacle_add(w, 650.0f, 500.0f, 60.0f) > 0);
        assert_true(sim_obstacle_add(w, 800.0f, 390.0f, 50.0f) > 0);
        assert_true(sim_obstacle_add(w, 800.0f, 610.0f, 50.0f) > 0);
        assert_true(sim_obstacle_add(w, 950.0f, 500.0f, 40.0f) > 0);
        assert_true(sim_obstacle_add(w, 1600.0f, 0.0f, 100.0f) > 0); /* on the corner */
        int arrivals = 0;
        for (int t = 1; t <= 2 * LEG; t++) {
            float tx = (t - 1) / LEG % 2 ? 450.0f : 1150.0f; /* there and back */
            if (t % LEG == 1)
                assert_int_equal(sim_target_set(w, 0, tx, 500.0f), SIM_OK);
            sim_step(w);
            assert_no_boid_inside_an_obstacle(w, t);
            if (t % LEG == 0)
                arrivals += fraction_near(w, tx, 500.0f, 250.0f) > 0.9;
        }
        assert_int_equal(arrivals, 2); /* the flock really went past them, both ways */
        world_free(w);
    }
}

static void an_obstacle_dropped_onto_a_flock_pushes_every_boid_out_in_one_step(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_config cfg = test_config((enum sim_edges)edges, 2000, 4);
        struct sim_world *w = world_new(&cfg);
        spawn(w, 1000, 0, 800.0f, 500.0f, 150.0f);
        spawn(w, 1000, 0, 0.0f, 0.0f, 150.0f);
        assert_true(sim_obstacle_add(w, 800.0f, 500.0f, 120.0f) > 0);
        if (edges == SIM_EDGES_WRAP) /* straddling both seams */
            assert_true(sim_obstacle_add(w, 5.0f, 5.0f, 120.0f) > 0);
        sim_step(w);
        assert_no_boid_inside_an_obstacle(w, 1);
        world_free(w);
    }
}

static void overlapping_obstacles_dropped_onto_a_flock_push_every_boid_out(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_config cfg = test_config((enum sim_edges)edges, 1000, 4);
        struct sim_world *w = world_new(&cfg);
        spawn(w, 1000, 0, 800.0f, 500.0f, 150.0f);
        /* Centres 150 apart, radii 100: they overlap in a lens. */
        assert_true(sim_obstacle_add(w, 725.0f, 500.0f, 100.0f) > 0);
        assert_true(sim_obstacle_add(w, 875.0f, 500.0f, 100.0f) > 0);
        for (int t = 1; t <= 3; t++) {
            sim_step(w);
            assert_no_boid_inside_an_obstacle(w, t);
        }
        world_free(w);
    }
}

static void an_obstacle_against_a_contained_worlds_wall_pushes_every_boid_out(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_CONTAIN, 1000, 4);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 1000, 0, 30.0f, 500.0f, 90.0f);
    assert_true(sim_obstacle_add(w, 30.0f, 500.0f, 100.0f) > 0);
    for (int t = 1; t <= 3; t++) {
        sim_step(w);
        assert_no_boid_inside_an_obstacle(w, t);
    }
    world_free(w);
}

/* ---- caps and extreme parameters ----------------------------------------- */

/* Fails unless every boid's speed and last steering respect its group's
 * caps and every number in the state is finite. */
static void assert_caps_hold(const struct sim_world *w, int tick)
{
    struct sim_view v;
    sim_view(w, &v);
    const float *fx = sim_last_force_x(w), *fy = sim_last_force_y(w);
    assert_non_null(fx);
    assert_non_null(fy);
    for (uint32_t i = 0; i < v.count; i++) {
        const struct sim_params *p = sim_group_params(w, v.group[i]);
        if (!isfinite(v.x[i]) || !isfinite(v.y[i]) || !isfinite(v.vx[i]) || !isfinite(v.vy[i]) ||
            !isfinite(fx[i]) || !isfinite(fy[i]))
            fail_msg("tick %d: boid %u has a non-finite position, velocity or force", tick, i);
        if (v.x[i] < 0.0f || v.x[i] > v.width || v.y[i] < 0.0f || v.y[i] > v.height)
            fail_msg("tick %d: boid %u left the world: (%g, %g)", tick, i, (double)v.x[i],
                     (double)v.y[i]);
        if (speed_of(&v, i) > p->max_speed * (1.0 + 1e-5))
            fail_msg("tick %d: boid %u flies at %g > max_speed %g", tick, i, speed_of(&v, i),
                     (double)p->max_speed);
        if (hypot(fx[i], fy[i]) > p->max_force * (1.0 + 1e-5))
            fail_msg("tick %d: boid %u steers with %g > max_force %g", tick, i, hypot(fx[i], fy[i]),
                     (double)p->max_force);
    }
}

/* A crowded world with every feature on, for the cap tests: three groups,
 * one of them spawned on a single point, targets, obstacles. */
static struct sim_world *crowded_world(enum sim_edges edges)
{
    struct sim_config cfg = test_config(edges, 1200, 21);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 500, 0, 800.0f, 500.0f, 300.0f);
    spawn(w, 400, 1, 20.0f, 20.0f, 100.0f);
    spawn(w, 300, 2, 1200.0f, 300.0f, 0.0f); /* all on one point */
    assert_int_equal(sim_target_set(w, 0, 1500.0f, 900.0f), SIM_OK);
    assert_int_equal(sim_target_set(w, 2, 0.0f, 0.0f), SIM_OK);
    assert_true(sim_obstacle_add(w, 900.0f, 600.0f, 100.0f) > 0);
    assert_true(sim_obstacle_add(w, 400.0f, 300.0f, 50.0f) > 0);
    return w;
}

static void run_checking_caps(struct sim_world *w, int ticks)
{
    for (int t = 1; t <= ticks; t++) {
        sim_step(w);
        assert_caps_hold(w, t);
    }
}

static void speed_and_force_caps_hold_every_tick(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_world *w = crowded_world((enum sim_edges)edges);
        set_param(w, 1, "max_speed", 250.0f);
        set_param(w, 1, "max_force", 40.0f);
        set_param(w, 2, "w_separation", 10.0f);
        set_param(w, 2, "max_speed", 30.0f);
        run_checking_caps(w, 400);
        world_free(w);
    }
}

/* Sets every registered parameter of every group to its min (0) or max (1). */
static void set_every_param_to_a_bound(struct sim_world *w, int which)
{
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        set_param(w, -1, d->name, which ? d->max : d->min);
    }
}

static void every_parameter_at_its_min_or_max_keeps_the_state_finite(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        for (int which = 0; which <= 1; which++) {
            struct sim_world *w = crowded_world((enum sim_edges)edges);
            set_every_param_to_a_bound(w, which);
            run_checking_caps(w, 120);
            world_free(w);
        }
    }
}

static void blind_all_seeing_zero_radius_and_fixed_speed_boids_stay_finite(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_world *w = crowded_world((enum sim_edges)edges);
        set_param(w, 0, "fov", 0.0f);
        set_param(w, 1, "fov", 360.0f);
        set_param(w, 1, "separation_radius", 0.0f);
        set_param(w, 1, "arrive_radius", 0.0f);
        set_param(w, 2, "min_speed", 100.0f); /* min_speed = max_speed */
        set_param(w, 2, "max_speed", 100.0f);
        set_param(w, 2, "max_force", 10000.0f);
        set_param(w, 2, "w_separation", 10.0f);
        run_checking_caps(w, 300);
        /* Walls and obstacles may take speed away; nothing else may. */
        struct sim_view v;
        sim_view(w, &v);
        uint32_t fixed = 0, in_group = 0;
        for (uint32_t i = 0; i < v.count; i++) {
            in_group += v.group[i] == 2;
            fixed += v.group[i] == 2 && fabs(speed_of(&v, i) - 100.0) < 1e-3;
        }
        assert_true(fixed >= 0.9 * in_group);
        world_free(w);
    }
}

/* ---- argument validation -------------------------------------------------- */

/* Sets `name` of group 4 to `bad` and expects `code` and no change anywhere. */
static void assert_param_refused(struct sim_world *w, const char *name, float bad, int code)
{
    uint64_t before = sim_hash(w);
    float old = get_param(w, 4, name);
    assert_int_equal(sim_param_set(w, 4, name, bad), code);
    assert_int_equal(sim_param_set(w, -1, name, bad), code);
    assert_float_equal(get_param(w, 4, name), old, 0.0);
    assert_true(sim_hash(w) == before);
}

static void invalid_parameters_are_refused_and_leave_every_value_unchanged(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_param_refused(w, d->name, NAN, SIM_ERANGE);
        assert_param_refused(w, d->name, INFINITY, SIM_ERANGE);
        assert_param_refused(w, d->name, -INFINITY, SIM_ERANGE);
        assert_param_refused(w, d->name, nextafterf(d->min, -INFINITY), SIM_ERANGE);
        assert_param_refused(w, d->name, nextafterf(d->max, INFINITY), SIM_ERANGE);
        if (d->integer)
            assert_param_refused(w, d->name, d->min + 0.5f, SIM_ERANGE);
    }
    uint64_t before = sim_hash(w);
    float v = 0.0f;
    assert_int_equal(sim_param_set(w, 0, "no_such_parameter", 1.0f), SIM_EINVAL);
    assert_int_equal(sim_param_set(w, 0, NULL, 1.0f), SIM_EINVAL);
    assert_int_equal(sim_param_set(w, SIM_GROUPS, "max_speed", 50.0f), SIM_EINVAL);
    assert_int_equal(sim_param_set(w, -2, "max_speed", 50.0f), SIM_EINVAL);
    assert_int_equal(sim_param_get(w, 0, "no_such_parameter", &v), SIM_EINVAL);
    assert_int_equal(sim_param_get(w, SIM_GROUPS, "max_speed", &v), SIM_EINVAL);
    assert_true(sim_hash(w) == before);
    world_free(w);
}

static void valid_parameters_are_stored_per_group_or_for_every_group(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    set_param(w, 7, "perception", 80.0f);
    assert_float_equal(get_param(w, 7, "perception"), 80.0f, 0.0);
    assert_float_equal(sim_group_params(w, 7)->perception, 80.0f, 0.0);
    assert_float_equal(get_param(w, 6, "perception"), sim_param_find("perception")->def, 0.0);
    set_param(w, -1, "fov", 123.0f);
    assert_float_equal(get_param(w, 0, "fov"), 123.0f, 0.0);
    assert_float_equal(get_param(w, SIM_GROUPS - 1, "fov"), 123.0f, 0.0);
    assert_null(sim_group_params(w, SIM_GROUPS));
    assert_null(sim_group_params(w, -1));
    world_free(w);
}

/* Expects sim_create to refuse cfg and give a reason. */
static void assert_config_refused(const struct sim_config *cfg)
{
    const char *err = NULL;
    struct sim_world *w = sim_create(cfg, &err);
    assert_null(w);
    assert_non_null(err);
    assert_true(strlen(err) > 0);
    assert_null(sim_create(cfg, NULL)); /* the reason is optional */
}

static void create_refuses_an_invalid_config_with_a_reason(void **state)
{
    (void)state;
    const struct sim_config good = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_config bad = good;
    bad.width = 15.0f;
    assert_config_refused(&bad);
    bad = good;
    bad.height = NAN;
    assert_config_refused(&bad);
    bad = good;
    bad.dt = 0.0f;
    assert_config_refused(&bad);
    bad = good;
    bad.capacity = 0;
    assert_config_refused(&bad);
    bad = good;
    bad.max_obstacles = 65537;
    assert_config_refused(&bad);
    bad = good;
    bad.edges = (enum sim_edges)7;
    assert_config_refused(&bad);
    bad = good;
    bad.edge_margin = 0.6f * good.height;
    assert_config_refused(&bad);
    struct sim_world *w = world_new(&good);
    const struct sim_config *kept = sim_config(w);
    assert_true(kept->width == good.width && kept->height == good.height);
    assert_true(kept->capacity == good.capacity && kept->seed == good.seed);
    assert_null(sim_last_force_x(w)); /* nothing computed before the first step */
    assert_null(sim_last_force_y(w));
    world_free(w);
    /* Without keep_forces a world keeps no forces, stepped or not, but
     * still counts the neighbours its boids saw. */
    const char *err = NULL;
    struct sim_config plain = test_config(SIM_EDGES_WRAP, 64, 1);
    w = sim_create(&plain, &err);
    assert_non_null(w);
    assert_int_equal(sim_spawn(w, 50, 0, 800.0f, 500.0f, 40.0f), 50);
    sim_step(w);
    assert_null(sim_last_force_x(w));
    assert_null(sim_last_force_y(w));
    struct sim_stats st;
    sim_stats(w, &st);
    assert_true(st.avg_neighbours > 1.0f);
    sim_destroy(w);
}

static void out_of_world_targets_and_obstacles_are_refused_with_erange(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_CONTAIN, 16, 1);
    struct sim_world *w = world_new(&cfg);
    const float outside[][2] = {
        {-0.01f, 10.0f}, {10.0f, -0.01f}, {1600.01f, 10.0f}, {10.0f, 1000.01f}, {-1e30f, 1e30f}};
    for (size_t k = 0; k < sizeof outside / sizeof outside[0]; k++) {
        assert_int_equal(sim_target_set(w, 0, outside[k][0], outside[k][1]), SIM_ERANGE);
        assert_int_equal(sim_obstacle_add(w, outside[k][0], outside[k][1], 10.0f), SIM_ERANGE);
    }
    assert_int_equal(sim_obstacle_add(w, 10.0f, 10.0f, 0.5f), SIM_ERANGE);   /* r < 1 */
    assert_int_equal(sim_obstacle_add(w, 10.0f, 10.0f, 250.5f), SIM_ERANGE); /* > min/4 */
    int rc = sim_target_set(w, 0, NAN, 10.0f);
    assert_true(rc == SIM_EINVAL || rc == SIM_ERANGE);
    assert_true(sim_obstacle_add(w, 10.0f, 10.0f, NAN) < 0);
    assert_int_equal(sim_target_set(w, SIM_GROUPS, 10.0f, 10.0f), SIM_EINVAL);
    assert_int_equal(sim_target_set(w, -1, 10.0f, 10.0f), SIM_EINVAL);
    struct sim_view v;
    sim_view(w, &v);
    assert_int_equal(v.obstacle_count, 0);
    assert_false(v.targets[0].active);
    /* The edges themselves are in the world. */
    assert_int_equal(sim_target_set(w, 0, 1600.0f, 1000.0f), SIM_OK);
    assert_true(sim_obstacle_add(w, 0.0f, 0.0f, 250.0f) > 0);
    sim_view(w, &v);
    assert_true(v.targets[0].active);
    assert_int_equal(v.obstacle_count, 1);
    assert_int_equal(sim_target_clear(w, 0), SIM_OK);
    sim_view(w, &v);
    assert_false(v.targets[0].active);
    world_free(w);
}

static void boid_set_refuses_bad_indices_and_positions_outside_the_world(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 4, 0, 100.0f, 100.0f, 10.0f);
    uint64_t before = sim_hash(w);
    assert_int_equal(sim_boid_set(w, 4, 10.0f, 10.0f, 0.0f, 0.0f), SIM_EINVAL);
    assert_int_equal(sim_boid_set(w, 0, -1.0f, 10.0f, 0.0f, 0.0f), SIM_ERANGE);
    assert_int_equal(sim_boid_set(w, 0, 10.0f, 1000.5f, 0.0f, 0.0f), SIM_ERANGE);
    assert_true(sim_boid_set(w, 0, 10.0f, 10.0f, NAN, 0.0f) < 0);
    assert_true(sim_boid_set(w, 0, 10.0f, 10.0f, 0.0f, INFINITY) < 0);
    assert_true(sim_hash(w) == before);
    world_free(w);
}

/* ---- spawn, despawn, obstacles, reset ------------------------------------- */

static void assert_sorted_by_group(const struct sim_world *w)
{
    struct sim_view v;
    sim_view(w, &v);
    for (uint32_t i = 1; i < v.count; i++)
        assert_true(v.group[i - 1] <= v.group[i]);
}

static void spawn_keeps_boids_sorted_by_group_and_bumps_epoch(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 100, 1);
    struct sim_world *w = world_new(&cfg);
    const int groups[] = {5, 2, 9, 2, 0, 255, 5};
    struct sim_view v;
    for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
        sim_view(w, &v);
        uint32_t epoch = v.epoch, count = v.count;
        spawn(w, 10, groups[k], 800.0f, 500.0f, 100.0f);
        sim_view(w, &v);
        assert_int_equal(v.count, count + 10);
        assert_true(v.epoch != epoch);
        assert_sorted_by_group(w);
    }
    /* Spawned at half their group's max speed. */
    set_param(w, 3, "max_speed", 60.0f);
    spawn(w, 5, 3, 800.0f, 500.0f, 0.0f);
    sim_view(w, &v);
    for (uint32_t i = 0; i < v.count; i++)
        if (v.group[i] == 3)
            assert_float_equal(speed_of(&v, i), 30.0, 1e-3);
    world_free(w);
}

static void spawn_puts_new_boids_after_their_groups_last_and_keeps_the_others(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 100, 1);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 3, 1, 100.0f, 100.0f, 0.0f);
    spawn(w, 3, 4, 900.0f, 900.0f, 0.0f);
    spawn(w, 2, 1, 500.0f, 500.0f, 0.0f); /* must land between the two */
    struct sim_view v;
    sim_view(w, &v);
    const uint8_t want_group[8] = {1, 1, 1, 1, 1, 4, 4, 4};
    const float want_x[8] = {100, 100, 100, 500, 500, 900, 900, 900};
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(v.group[i], want_group[i]);
        assert_float_equal(v.x[i], want_x[i], 1e-3);
    }
    world_free(w);
}

static void spawn_inside_the_world_stays_inside_it_in_both_edge_modes(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_config cfg = test_config((enum sim_edges)edges, 1000, 1);
        struct sim_world *w = world_new(&cfg);
        spawn(w, 500, 0, 0.0f, 0.0f, 300.0f);
        spawn(w, 500, 0, 1600.0f, 1000.0f, 1600.0f);
        struct sim_view v;
        sim_view(w, &v);
        for (uint32_t i = 0; i < v.count; i++) {
            assert_true(v.x[i] >= 0.0f && v.x[i] <= v.width);
            assert_true(v.y[i] >= 0.0f && v.y[i] <= v.height);
            if (edges == SIM_EDGES_WRAP) /* on a torus W is 0 */
                assert_true(v.x[i] < v.width && v.y[i] < v.height);
        }
        world_free(w);
    }
}

static void scatter_spreads_boids_evenly_over_the_whole_world(void **state)
{
    (void)state;
    for (int edges = SIM_EDGES_WRAP; edges <= SIM_EDGES_CONTAIN; edges++) {
        struct sim_config cfg = test_config((enum sim_edges)edges, 4010, 1);
        struct sim_world *w = world_new(&cfg);
        spawn(w, 10, 5, 800.0f, 500.0f, 10.0f);
        struct sim_view v;
        sim_view(w, &v);
        uint32_t epoch = v.epoch;
        assert_int_equal(sim_scatter(w, 4000, 2), 4000);
        assert_int_equal(sim_scatter(w, 1, 0), SIM_ECAPACITY);
        assert_int_equal(sim_scatter(w, 0, SIM_GROUPS), SIM_EINVAL);
        sim_view(w, &v);
        assert_true(v.epoch != epoch);
        assert_sorted_by_group(w);
        uint32_t region[4][4] = {{0}}; /* 250 boids each on average */
        for (uint32_t i = 0; i < 4000; i++) {
            assert_true(v.x[i] >= 0.0f && v.x[i] < v.width);
            assert_true(v.y[i] >= 0.0f && v.y[i] < v.height);
            assert_float_equal(speed_of(&v, i), 0.5 * get_param(w, 2, "max_speed"), 1e-3);
            region[(int)(4.0f * v.x[i] / v.width)][(int)(4.0f * v.y[i] / v.height)]++;
        }
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                assert_in_range(region[a][b], 180, 320);
        world_free(w);
    }
}

static void spawn_refuses_bad_arguments_and_spawns_nothing(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 100, 1);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 60, 0, 800.0f, 500.0f, 10.0f);
    uint64_t before = sim_hash(w);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t epoch = v.epoch;
    assert_int_equal(sim_spawn(w, 41, 0, 800.0f, 500.0f, 10.0f), SIM_ECAPACITY);
    assert_int_equal(sim_spawn(w, UINT32_MAX, 1, 800.0f, 500.0f, 10.0f), SIM_ECAPACITY);
    assert_int_equal(sim_spawn(w, 1, SIM_GROUPS, 800.0f, 500.0f, 10.0f), SIM_EINVAL);
    assert_int_equal(sim_spawn(w, 1, -1, 800.0f, 500.0f, 10.0f), SIM_EINVAL);
    assert_int_equal(sim_spawn(w, 1, 0, 800.0f, 500.0f, -1.0f), SIM_EINVAL);
    assert_true(sim_spawn(w, 1, 0, 800.0f, 500.0f, NAN) < 0);
    assert_int_equal(sim_spawn(w, 1, 0, -5.0f, 500.0f, 10.0f), SIM_ERANGE);
    assert_int_equal(sim_spawn(w, 1, 0, 800.0f, 500.0f, 1e7f), SIM_ERANGE);
    assert_true(sim_spawn(w, 1, 0, NAN, 500.0f, 10.0f) < 0);
    sim_view(w, &v);
    assert_int_equal(v.count, 60);
    assert_int_equal(v.epoch, epoch);
    assert_true(sim_hash(w) == before);
    spawn(w, 40, 2, 800.0f, 500.0f, 10.0f); /* exactly to capacity */
    sim_view(w, &v);
    assert_int_equal(v.count, 100);
    assert_int_equal(sim_spawn(w, 1, 0, 800.0f, 500.0f, 10.0f), SIM_ECAPACITY);
    world_free(w);
}

static void despawn_removes_the_newest_boids_of_a_group_first_and_keeps_order(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 100, 1);
    struct sim_world *w = world_new(&cfg);
    spawn(w, 3, 1, 100.0f, 100.0f, 0.0f);
    spawn(w, 3, 4, 900.0f, 900.0f, 0.0f);
    spawn(w, 2, 1, 500.0f, 500.0f, 0.0f);
    spawn(w, 2, 4, 300.0f, 300.0f, 0.0f);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t epoch = v.epoch;
    assert_int_equal(sim_despawn(w, 3, 1), 3); /* both at 500 and one at 100 */
    sim_view(w, &v);
    assert_true(v.epoch != epoch);
    const uint8_t want_group[7] = {1, 1, 4, 4, 4, 4, 4};
    const float want_x[7] = {100, 100, 900, 900, 900, 300, 300};
    assert_int_equal(v.count, 7);
    for (uint32_t i = 0; i < 7; i++) {
        assert_int_equal(v.group[i], want_group[i]);
        assert_float_equal(v.x[i], want_x[i], 1e-3);
    }
    assert_int_equal(sim_despawn(w, 50, 4), 5); /* only as many as there are */
    assert_int_equal(sim_despawn(w, 5, 9), 0);  /* none of that group */
    sim_view(w, &v);
    epoch = v.epoch;
    assert_int_equal(sim_despawn(w, 0, 1), 0);
    assert_int_equal(sim_despawn(w, 1, SIM_GROUPS), SIM_EINVAL);
    sim_view(w, &v);
    assert_int_equal(v.count, 2);
    assert_int_equal(v.epoch, epoch);
    assert_int_equal(sim_despawn(w, 10, -1), 2); /* any group */
    sim_view(w, &v);
    assert_int_equal(v.count, 0);
    world_free(w);
}

static void obstacle_ids_are_never_reused_after_remove_or_clear(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    cfg.max_obstacles = 3;
    struct sim_world *w = world_new(&cfg);
    int64_t seen[12];
    int n = 0;
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 3; k++) {
            int64_t id = sim_obstacle_add(w, 100.0f * (float)(k + 1), 100.0f, 20.0f);
            assert_true(id >= 1);
            for (int j = 0; j < n; j++)
                assert_true(seen[j] != id);
            seen[n++] = id;
        }
        assert_int_equal(sim_obstacle_add(w, 500.0f, 500.0f, 20.0f), SIM_ECAPACITY);
        if (round == 0) {
            assert_int_equal(sim_obstacle_remove(w, (uint32_t)seen[n - 2]), SIM_OK);
            assert_int_equal(sim_obstacle_remove(w, (uint32_t)seen[n - 2]), SIM_ENOENT);
            int64_t id = sim_obstacle_add(w, 700.0f, 700.0f, 20.0f);
            assert_true(id > seen[n - 1]);
            seen[n++] = id;
        }
        sim_obstacle_clear(w);
    }
    struct sim_view v;
    sim_view(w, &v);
    assert_int_equal(v.obstacle_count, 0);
    assert_int_equal(sim_obstacle_remove(w, 0), SIM_ENOENT);
    world_free(w);
}

static void obstacle_removal_keeps_the_other_obstacles(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    int64_t a = sim_obstacle_add(w, 100.0f, 100.0f, 10.0f);
    int64_t b = sim_obstacle_add(w, 200.0f, 100.0f, 20.0f);
    int64_t c = sim_obstacle_add(w, 300.0f, 100.0f, 30.0f);
    assert_int_equal(sim_obstacle_remove(w, (uint32_t)b), SIM_OK);
    struct sim_view v;
    sim_view(w, &v);
    assert_int_equal(v.obstacle_count, 2);
    assert_int_equal(v.obstacles[0].id, a);
    assert_int_equal(v.obstacles[1].id, c);
    assert_float_equal(v.obstacles[1].r, 30.0f, 0.0);
    world_free(w);
}

static void obstacle_ids_are_not_reused_after_a_reset(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    int64_t first = sim_obstacle_add(w, 100.0f, 100.0f, 10.0f);
    assert_true(first >= 1);
    sim_reset(w, 1);
    int64_t second = sim_obstacle_add(w, 100.0f, 100.0f, 10.0f);
    /* A client still holding `first` must not be able to remove this one. */
    assert_true(second >= 1);
    assert_true(second != first);
    world_free(w);
}

/* The id of the boid at index i. */
static uint32_t id_at(const struct sim_world *w, uint32_t i)
{
    struct sim_view v;
    sim_view(w, &v);
    assert_true(i < v.count);
    return v.id[i];
}

static void boids_keep_their_ids_through_spawns_despawns_steps_and_resets(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 64, 1);
    struct sim_world *w = world_new(&cfg);
    assert_int_equal(sim_spawn(w, 3, 5, 100, 100, 10), 3); /* ids 1, 2, 3 */
    assert_int_equal(sim_spawn(w, 2, 2, 100, 100, 10), 2); /* ids 4, 5: before group 5 */
    uint32_t want[] = {4, 5, 1, 2, 3};
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(id_at(w, i), want[i]);
    step_n(w, 20); /* steps move boids, never their ids */
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(id_at(w, i), want[i]);
    assert_int_equal(sim_despawn(w, 1, 2), 1); /* the newest of group 2: id 5 */
    uint32_t left[] = {4, 1, 2, 3};
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(id_at(w, i), left[i]);
    assert_int_equal(sim_spawn(w, 1, 2, 100, 100, 10), 1); /* id 6, not 5 again */
    assert_int_equal(id_at(w, 1), 6);
    sim_reset(w, 3);
    assert_int_equal(sim_scatter(w, 2, 0), 2); /* ids go on after a reset */
    assert_int_equal(id_at(w, 0), 7);
    assert_int_equal(id_at(w, 1), 8);
    world_free(w);
}

static void reset_restores_a_freshly_created_world(void **state)
{
    (void)state;
    struct sim_world *w = busy_world(1234);
    step_n(w, 50);
    set_param(w, 9, "fov", 90.0f);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t epoch = v.epoch;
    sim_reset(w, 77);
    struct sim_config cfg = *sim_config(w);
    cfg.seed = 77;
    struct sim_world *fresh = world_new(&cfg);
    /* Boid ids keep counting across a reset: a fresh world that used as many. */
    uint32_t used = v.next_id - 1;
    assert_int_equal(sim_scatter(fresh, used, 0), (int)used);
    sim_reset(fresh, 77);
    assert_true(sim_hash(w) == sim_hash(fresh));
    sim_view(w, &v);
    assert_true(v.epoch != epoch);
    assert_int_equal(v.count, 0);
    assert_int_equal(v.tick, 0);
    assert_int_equal(v.obstacle_count, 0);
    for (int g = 0; g < SIM_GROUPS; g++)
        assert_false(v.targets[g].active);
    assert_float_equal(get_param(w, 9, "fov"), sim_param_find("fov")->def, 0.0);
    assert_null(sim_last_force_x(w));
    /* And it goes on exactly like the fresh one. */
    spawn(w, 200, 0, 800.0f, 500.0f, 300.0f);
    spawn(fresh, 200, 0, 800.0f, 500.0f, 300.0f);
    step_n(w, 100);
    step_n(fresh, 100);
    assert_true(sim_hash(w) == sim_hash(fresh));
    world_free(w);
    world_free(fresh);
}

static uint32_t epoch_of(const struct sim_world *w)
{
    struct sim_view v;
    sim_view(w, &v);
    return v.epoch;
}

static void a_new_world_is_at_epoch_0_and_a_reset_with_its_flock_advances_it_by_one(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 100, 3);
    struct sim_world *w = world_new(&cfg);
    assert_int_equal(epoch_of(w), 0);
    assert_int_equal(sim_scatter(w, 50, 0), 50);
    assert_int_equal(epoch_of(w), 1);
    step_n(w, 10);
    assert_int_equal(sim_reset_scatter(w, 9, 80, 2), 80);
    assert_int_equal(epoch_of(w), 2);
    /* The same as a fresh world given the same seed and flock. */
    cfg.seed = 9;
    struct sim_world *fresh = world_new(&cfg);
    assert_int_equal(sim_scatter(fresh, 50, 0), 50); /* the ids w used before its reset */
    sim_reset(fresh, 9);
    assert_int_equal(sim_scatter(fresh, 80, 2), 80);
    assert_true(sim_hash(w) == sim_hash(fresh));
    /* Refused: nothing changes, not even the epoch. */
    uint64_t hash = sim_hash(w);
    assert_int_equal(sim_reset_scatter(w, 1, 101, 0), SIM_ECAPACITY);
    assert_int_equal(sim_reset_scatter(w, 1, 10, SIM_GROUPS), SIM_EINVAL);
    assert_int_equal(sim_reset_scatter(w, 1, 10, -1), SIM_EINVAL);
    assert_true(sim_hash(w) == hash);
    assert_int_equal(epoch_of(w), 2);
    sim_reset(w, 1);
    assert_int_equal(epoch_of(w), 3);
    assert_int_equal(sim_reset_scatter(w, 1, 0, 0), 0);
    assert_int_equal(epoch_of(w), 4);
    world_free(w);
    world_free(fresh);
}

static void stats_report_count_speed_and_polarization_of_the_state(void **state)
{
    (void)state;
    struct sim_config cfg = test_config(SIM_EDGES_WRAP, 16, 1);
    struct sim_world *w = world_new(&cfg);
    struct sim_stats st;
    sim_stats(w, &st);
    assert_int_equal(st.count, 0);
    assert_float_equal(st.polarization, 0.0f, 0.0);
    spawn(w, 4, 0, 800.0f, 500.0f, 100.0f);
    assert_int_equal(sim_boid_set(w, 0, 10.0f, 10.0f, 30.0f, 40.0f), SIM_OK);
    assert_int_equal(sim_boid_set(w, 1, 20.0f, 10.0f, 3.0f, 4.0f), SIM_OK);
    assert_int_equal(sim_boid_set(w, 2, 30.0f, 10.0f, -30.0f, -40.0f), SIM_OK);
    assert_int_equal(sim_boid_set(w, 3, 40.0f, 10.0f, 0.0f, 10.0f), SIM_OK);
    sim_stats(w, &st);
    assert_int_equal(st.count, 4);
    assert_float_equal(st.mean_speed, (50.0 + 5.0 + 50.0 + 10.0) / 4.0, 1e-4);
    /* Unit headings (.6,.8) + (.6,.8) + (-.6,-.8) + (0,1), over 4. */
    assert_float_equal(st.polarization, hypot(0.6, 1.8) / 4.0, 1e-5);
    world_free(w);
}

/* Every test, with the teardown that destroys worlds a failure left. */
#define TEST(f) cmocka_unit_test_teardown(f, destroy_leftover_worlds)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(grid_and_brute_force_give_identical_steering_in_wrap_mode),
        TEST(grid_and_brute_force_give_identical_steering_in_contain_mode),
        TEST(grid_and_brute_force_agree_on_cell_borders_and_across_the_wrap_seam),
        TEST(grid_and_brute_force_agree_when_the_whole_flock_crowds_into_one_block),
        TEST(grid_and_brute_force_agree_in_a_world_only_three_cells_across),
        TEST(grid_and_brute_force_worlds_stay_close_over_many_steps),
        TEST(same_seed_gives_the_same_hash_after_1000_ticks),
        TEST(a_different_seed_gives_a_different_hash),
        TEST(moving_one_boid_changes_the_hash),
        TEST(the_hash_covers_state_not_leftover_memory),
        TEST(alignment_alone_takes_polarization_from_below_0_2_to_above_0_9),
        TEST(without_alignment_the_default_flock_stays_unpolarized),
        TEST(cohesion_alone_pulls_a_resting_group_together),
        TEST(separation_alone_spreads_an_overlapping_crowd_past_the_separation_radius),
        TEST(separation_acts_all_around_while_alignment_and_cohesion_see_only_ahead),
        TEST(separation_fades_out_at_its_radius_and_takes_its_whole_share_up_close),
        TEST(a_close_neighbour_takes_its_share_of_the_budget_before_alignment),
        TEST(a_lone_boid_cruises_up_to_max_speed),
        TEST(a_group_told_to_seek_a_point_arrives_and_settles_without_orbiting),
        TEST(boids_never_enter_obstacles_on_a_long_run_past_them),
        TEST(an_obstacle_dropped_onto_a_flock_pushes_every_boid_out_in_one_step),
        TEST(overlapping_obstacles_dropped_onto_a_flock_push_every_boid_out),
        TEST(an_obstacle_against_a_contained_worlds_wall_pushes_every_boid_out),
        TEST(speed_and_force_caps_hold_every_tick),
        TEST(every_parameter_at_its_min_or_max_keeps_the_state_finite),
        TEST(blind_all_seeing_zero_radius_and_fixed_speed_boids_stay_finite),
        TEST(invalid_parameters_are_refused_and_leave_every_value_unchanged),
        TEST(valid_parameters_are_stored_per_group_or_for_every_group),
        TEST(create_refuses_an_invalid_config_with_a_reason),
        TEST(out_of_world_targets_and_obstacles_are_refused_with_erange),
        TEST(boid_set_refuses_bad_indices_and_positions_outside_the_world),
        TEST(spawn_keeps_boids_sorted_by_group_and_bumps_epoch),
        TEST(spawn_puts_new_boids_after_their_groups_last_and_keeps_the_others),
        TEST(spawn_inside_the_world_stays_inside_it_in_both_edge_modes),
        TEST(scatter_spreads_boids_evenly_over_the_whole_world),
        TEST(spawn_refuses_bad_arguments_and_spawns_nothing),
        TEST(despawn_removes_the_newest_boids_of_a_group_first_and_keeps_order),
        TEST(obstacle_ids_are_never_reused_after_remove_or_clear),
        TEST(obstacle_removal_keeps_the_other_obstacles),
        TEST(obstacle_ids_are_not_reused_after_a_reset),
        TEST(boids_keep_their_ids_through_spawns_despawns_steps_and_resets),
        TEST(reset_restores_a_freshly_created_world),
        TEST(a_new_world_is_at_epoch_0_and_a_reset_with_its_flock_advances_it_by_one),
        TEST(stats_report_count_speed_and_polarization_of_the_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
