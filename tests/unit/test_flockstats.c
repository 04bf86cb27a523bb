/*
 * Unit tests for the flock measures (flockstats.h) on constructed frames
 * with known answers: a perfect lattice (polarization 1, every nearest
 * neighbour at the lattice spacing), a perfect mill in both senses and the
 * same ring flying straight, random headings, a mill across the torus seam
 * (the same as in the middle), a mill too big for its torus (it wraps
 * around the world, so it is never judged), pairs at
 * known distances (nearest-rank percentiles, far neighbours found by the
 * ring search); then every measure against an O(n^2) reference on random
 * frames (torus and walls, clumps, worlds one or two cells across), and
 * bad frames refused without touching the result.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flockstats.h"
#include "splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI      3.14159265358979
#define MAX_N   3000
#define RADIUS  50.0f
#define UNKNOWN 0xFFFFFFFFu

/* The frame under test, in static arrays (tests run one at a time). */
static float xs[MAX_N], ys[MAX_N], vxs[MAX_N], vys[MAX_N];
static struct flockstats *stats;

static int free_stats(void **state)
{
    (void)state;
    flockstats_destroy(stats);
    stats = NULL;
    return 0;
}

static struct flockstats_frame frame(uint32_t n, float width, float height, int wrap)
{
    return (struct flockstats_frame){
        .count = n,
        .width = width,
        .height = height,
        .wrap = wrap,
        .radius = RADIUS,
        .x = xs,
        .y = ys,
        .vx = vxs,
        .vy = vys,
    };
}

static struct flockstats_result measure(const struct flockstats_frame *f)
{
    if (!stats)
        stats = flockstats_create(MAX_N, NULL);
    assert_non_null(stats);
    struct flockstats_result r;
    memset(&r, 0xAB, sizeof r);
    assert_int_equal(flockstats_measure(stats, f, &r), SIM_OK);
    return r;
}

/* Boid i at (x, y) folded onto the torus, heading `angle` at `speed`. */
static void put(uint32_t i, double x, double y, double angle, double speed, float w, float h)
{
    x = fmod(fmod(x, w) + w, w);
    y = fmod(fmod(y, h) + h, h);
    xs[i] = (float)x < w ? (float)x : 0.0f;
    ys[i] = (float)y < h ? (float)y : 0.0f;
    vxs[i] = (float)(speed * cos(angle));
    vys[i] = (float)(speed * sin(angle));
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (double)(splitmix_next(s) >> 11) * (1.0 / 9007199254740992.0) * (hi - lo);
}

/* ---- constructed frames ---------------------------------------------------- */

static void a_lattice_flying_one_way_is_polarized_with_neighbours_at_the_spacing(void **state)
{
    (void)state;
    /* 20 x 20 at spacing 20 fills a 400 x 400 torus: one cluster that wraps. */
    uint32_t n = 0;
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 20; c++)
            put(n++, 10.0 + 20 * c, 10.0 + 20 * r, 0.3, 80.0, 400, 400);
    struct flockstats_frame f = frame(n, 400, 400, 1);
    struct flockstats_result m = measure(&f);
    assert_int_equal(m.count, 400);
    assert_float_equal(m.local_polarization, 1.0, 1e-5);
    assert_float_equal(m.global_polarization, 1.0, 1e-5);
    assert_float_equal(m.nn_p5, 20.0, 1e-3);
    assert_float_equal(m.nn_median, 20.0, 1e-3);
    assert_float_equal(m.mean_speed, 80.0, 1e-3);
    assert_int_equal(m.clusters, 1);
    assert_int_equal(m.largest_cluster, 400);
    assert_int_equal(m.flocks, 1);
    assert_int_equal(m.mills, 0);
    assert_float_equal(m.mill_fraction, 0.0, 0.0);
}

/* Rings of radius 60, 80, 100 about (cx, cy), 12 units apart along each
 * ring, heading along the ring (sense +1 or -1) or all at `straight` when
 * sense is 0. Returns the number of boids. */
static uint32_t rings(double cx, double cy, int sense, double straight, float w, float h)
{
    uint32_t n = 0;
    for (double r = 60; r <= 100; r += 20) {
        int k = (int)(2 * PI * r / 12);
        for (int j = 0; j < k; j++) {
            double a = 2 * PI * j / k;
            double heading = sense ? a + sense * PI / 2 : straight;
            put(n++, cx + r * cos(a), cy + r * sin(a), heading, 50.0, w, h);
        }
    }
    return n;
}

static void a_perfect_mill_is_a_mill_whichever_way_it_turns(void **state)
{
    (void)state;
    for (int sense = -1; sense <= 1; sense += 2) {
        uint32_t n = rings(500, 500, sense, 0, 1000, 1000);
        struct flockstats_frame f = frame(n, 1000, 1000, 1);
        struct flockstats_result m = measure(&f);
        assert_true(m.global_polarization < 0.05f);
        assert_int_equal(m.clusters, 1);
        assert_int_equal(m.flocks, 1);
        assert_int_equal(m.mills, 1);
        assert_float_equal(m.mill_fraction, 1.0, 0.0);
    }
}

static void the_same_rings_flying_straight_are_no_mill(void **state)
{
    (void)state;
    uint32_t n = rings(500, 500, 0, 1.0, 1000, 1000);
    struct flockstats_frame f = frame(n, 1000, 1000, 1);
    struct flockstats_result m = measure(&f);
    assert_float_equal(m.global_polarization, 1.0, 1e-5);
    assert_int_equal(m.flocks, 1);
    assert_int_equal(m.mills, 0);
    assert_float_equal(m.mill_fraction, 0.0, 0.0);
}

static void a_mill_across_the_torus_corner_measures_as_it_does_in_the_middle(void **state)
{
    (void)state;
    uint32_t n = rings(500, 500, 1, 0, 1000, 1000);
    struct flockstats_frame f = frame(n, 1000, 1000, 1);
    struct flockstats_result middle = measure(&f);
    assert_int_equal(rings(0, 0, 1, 0, 1000, 1000), n); /* split over all four corners */
    struct flockstats_result corner = measure(&f);
    assert_int_equal(corner.mills, 1);
    assert_int_equal(corner.clusters, middle.clusters);
    assert_int_equal(corner.largest_cluster, middle.largest_cluster);
    assert_float_equal(corner.local_polarization, middle.local_polarization, 1e-5);
    assert_float_equal(corner.nn_p5, middle.nn_p5, 1e-3);
    assert_float_equal(corner.nn_median, middle.nn_median, 1e-3);
}

static void a_mill_too_big_for_its_torus_wraps_around_it_and_is_not_judged(void **state)
{
    (void)state;
    /* The outer ring is 200 across: in a torus 230 high its top and bottom
     * meet across the seam, so the cluster wraps around the world. */
    uint32_t n = rings(500, 115, 1, 0, 1000, 230);
    struct flockstats_frame f = frame(n, 1000, 230, 1);
    struct flockstats_result m = measure(&f);
    assert_int_equal(m.clusters, 1);
    assert_int_equal(m.flocks, 1);
    assert_int_equal(m.mills, 0);
    assert_float_equal(m.mill_fraction, 0.0, 0.0);
}

static void random_headings_give_polarization_near_one_over_root_n(void **state)
{
    (void)state;
    uint64_t seed = 11;
    uint32_t n = 2000;
    for (uint32_t i = 0; i < n; i++)
        put(i, uniform(&seed, 0, 1000), uniform(&seed, 0, 1000), uniform(&seed, 0, 2 * PI), 30.0,
            1000, 1000);
    struct flockstats_frame f = frame(n, 1000, 1000, 1);
    struct flockstats_result m = measure(&f);
    /* |mean of n random unit vectors| is about 0.89 / sqrt(n) = 0.02. */
    assert_true(m.global_polarization < 3.0 / sqrt(n));
    /* About 15 neighbours each: |mean of 16 random unit vectors| ~ 0.22. */
    assert_true(m.local_polarization > 0.1f && m.local_polarization < 0.4f);
    assert_int_equal(m.mills, 0);
}

static void pairs_at_known_distances_give_nearest_rank_percentiles(void **state)
{
    (void)state;
    /* 20 pairs, far apart from each other, at distances 5, 10, ..., 100:
     * each boid's nearest neighbour is its partner. Those beyond a cell
     * (50) are found by searching rings of cells further out. */
    uint32_t n = 0;
    for (int k = 0; k < 20; k++) {
        double d = 5.0 * (k + 1), x = 150.0 + 400 * (k % 5), y = 150.0 + 400 * (k / 5);
        put(n++, x, y, 0, 10.0, 2000, 1600);
        put(n++, x + d, y, 0, 10.0, 2000, 1600);
    }
    struct flockstats_frame f = frame(n, 2000, 1600, 0);
    struct flockstats_result m = measure(&f);
    /* 40 distances, each twice: p5 is sorted[ceil(2) - 1] = 5, the median
     * sorted[19] = 50. */
    assert_float_equal(m.nn_p5, 5.0, 1e-4);
    assert_float_equal(m.nn_median, 50.0, 1e-4);
    assert_int_equal(m.clusters, 9 + 2 * 11); /* pairs 50 or more apart are two clusters */
    assert_int_equal(m.largest_cluster, 2);
    assert_int_equal(m.flocks, 0);
}

static void an_empty_frame_and_a_lone_boid_measure_as_documented(void **state)
{
    (void)state;
    struct flockstats_frame f = frame(0, 100, 100, 1);
    struct flockstats_result m = measure(&f);
    assert_int_equal(m.count, 0);
    assert_int_equal(m.clusters, 0);
    assert_true(m.local_polarization == 0.0f && m.global_polarization == 0.0f);
    assert_true(m.nn_p5 == 0.0f && m.nn_median == 0.0f && m.mill_fraction == 0.0f);
    put(0, 50, 50, 2.0, 7.0, 100, 100);
    f = frame(1, 100, 100, 1);
    m = measure(&f);
    assert_float_equal(m.local_polarization, 1.0, 1e-6);
    assert_float_equal(m.mean_speed, 7.0, 1e-5);
    assert_true(m.nn_p5 == 0.0f && m.nn_median == 0.0f);
    assert_int_equal(m.clusters, 1);
    assert_int_equal(m.largest_cluster, 1);
}

/* ---- against an O(n^2) reference ------------------------------------------- */

static double ref_delta(double d, double size, int wrap)
{
    if (wrap && d > 0.5 * size)
        return d - size;
    if (wrap && d < -0.5 * size)
        return d + size;
    return d;
}

struct reference {
    double local, global, p5, median;
    uint32_t clusters, largest, flocks, mills;
};

static uint32_t label[MAX_N], queue[MAX_N];
static double lx[MAX_N], ly[MAX_N], nn[MAX_N];

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void unit(uint32_t i, double *ux, double *uy)
{
    double s = hypot(vxs[i], vys[i]);
    *ux = s > 0 ? vxs[i] / s : 0;
    *uy = s > 0 ? vys[i] / s : 0;
}

/* Mill judgement of the cluster queue[a, b) laid out in lx/ly. */
static int ref_is_mill(uint32_t a, uint32_t b)
{
    double cx = 0, cy = 0, px = 0, py = 0, rot = 0, ux, uy;
    for (uint32_t q = a; q < b; q++) {
        cx += lx[queue[q]] / (b - a);
        cy += ly[queue[q]] / (b - a);
    }
    for (uint32_t q = a; q < b; q++) {
        uint32_t i = queue[q];
        unit(i, &ux, &uy);
        px += ux;
        py += uy;
        double rx = lx[i] - cx, ry = ly[i] - cy, r = hypot(rx, ry);
        rot += r > 0 ? (rx * uy - ry * ux) / r : 0;
    }
    return fabs(rot) / (b - a) > FLOCKSTATS_MILL_ROTATION &&
           hypot(px, py) / (b - a) < FLOCKSTATS_MILL_POLARIZATION;
}

static void reference(const struct flockstats_frame *f, struct reference *r)
{
    uint32_t n = f->count, tail = 0;
    double gx = 0, gy = 0, r2 = (double)f->radius * f->radius;
    memset(r, 0, sizeof *r);
    for (uint32_t i = 0; i < n; i++)
        label[i] = UNKNOWN;
    for (uint32_t s = 0; s < n; s++) {
        if (label[s] != UNKNOWN)
            continue;
        uint32_t first = tail, head = tail, wraps = 0;
        label[s] = s, lx[s] = xs[s], ly[s] = ys[s], queue[tail++] = s;
        while (head < tail) {
            uint32_t i = queue[head++];
            double hx, hy, ux, uy, near = 1;
            unit(i, &hx, &hy);
            gx += hx, gy += hy;
            nn[i] = INFINITY;
            for (uint32_t j = 0; j < n; j++) {
                double dx = ref_delta((double)xs[j] - xs[i], f->width, f->wrap);
                double dy = ref_delta((double)ys[j] - ys[i], f->height, f->wrap);
                double d2 = dx * dx + dy * dy;
                if (j == i)
                    continue;
                nn[i] = fmin(nn[i], sqrt(d2));
                if (!(d2 < r2))
                    continue;
                unit(j, &ux, &uy);
                hx += ux, hy += uy, near++;
                if (label[j] == UNKNOWN) {
                    label[j] = s, lx[j] = lx[i] + dx, ly[j] = ly[i] + dy, queue[tail++] = j;
                } else if (fabs(lx[i] + dx - lx[j]) > 0.5 * f->width ||
                           fabs(ly[i] + dy - ly[j]) > 0.5 * f->height) {
                    wraps = 1;
                }
            }
            r->local += hypot(hx, hy) / near / n;
        }
        uint32_t size = tail - first;
        r->clusters++;
        r->largest = size > r->largest ? size : r->largest;
        r->flocks += size >= FLOCKSTATS_MILL_MIN;
        r->mills += size >= FLOCKSTATS_MILL_MIN && !wraps && ref_is_mill(first, tail);
    }
    /* gx, gy summed each boid's own heading once, before its neighbours. */
    r->global = n ? hypot(gx, gy) / n : 0;
    qsort(nn, n, sizeof nn[0], by_value);
    r->p5 = n > 1 ? nn[(uint32_t)ceil(0.05 * n) - 1] : 0;
    r->median = n > 1 ? nn[(uint32_t)ceil(0.5 * n) - 1] : 0;
}

/* n boids: a share in `clumps` tight groups flying alike, the rest spread. */
static void random_frame(uint64_t *seed, uint32_t n, float w, float h, int clumps)
{
    for (uint32_t i = 0; i < n; i++) {
        int k = clumps ? (int)(splitmix_next(seed) % (uint64_t)(clumps + 1)) : clumps;
        double x, y, a;
        if (k < clumps) {
            double cx = w * (k + 0.5) / clumps, cy = h * 0.5;
            x = cx + uniform(seed, -60, 60), y = cy + uniform(seed, -60, 60);
            a = k + uniform(seed, -0.3, 0.3);
        } else {
            x = uniform(seed, 0, w), y = uniform(seed, 0, h), a = uniform(seed, 0, 2 * PI);
        }
        put(i, x, y, a, uniform(seed, 0, 1) < 0.02 ? 0.0 : uniform(seed, 5, 100), w, h);
    }
}

static void every_measure_matches_a_brute_force_reference_on_random_frames(void **state)
{
    (void)state;
    static const struct {
        uint32_t n;
        float w, h;
        int wrap, clumps;
    } cases[] = {
        {1500, 1600, 1000, 1, 0}, {1500, 1600, 1000, 0, 0}, {2000, 1200, 900, 1, 4},
        {2000, 1200, 900, 0, 3},  {300, 90, 1000, 1, 1},    {300, 120, 70, 1, 0},
        {300, 40, 40, 0, 0},      {200, 5000, 4000, 1, 2},  {2, 1000, 1000, 1, 0},
    };
    uint64_t seed = 5;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        random_frame(&seed, cases[c].n, cases[c].w, cases[c].h, cases[c].clumps);
        struct flockstats_frame f = frame(cases[c].n, cases[c].w, cases[c].h, cases[c].wrap);
        struct flockstats_result m = measure(&f);
        struct reference r;
        reference(&f, &r);
        if (fabs(m.local_polarization - r.local) > 1e-4 ||
            fabs(m.global_polarization - r.global) > 1e-4 || fabs(m.nn_p5 - r.p5) > 1e-3 ||
            fabs(m.nn_median - r.median) > 1e-3 || m.clusters != r.clusters ||
            m.largest_cluster != r.largest || m.flocks != r.flocks || m.mills != r.mills)
            fail_msg("case %zu: local %g/%g global %g/%g p5 %g/%g median %g/%g clusters %u/%u "
                     "largest %u/%u flocks %u/%u mills %u/%u",
                     c, (double)m.local_polarization, r.local, (double)m.global_polarization,
                     r.global, (double)m.nn_p5, r.p5, (double)m.nn_median, r.median, m.clusters,
                     r.clusters, m.largest_cluster, r.largest, m.flocks, r.flocks, m.mills,
                     r.mills);
    }
}

/* ---- refusals ------------------------------------------------------------- */

static void assert_refused(const struct flockstats_frame *f, int code)
{
    struct flockstats_result r, before;
    memset(&r, 0x5A, sizeof r);
    before = r;
    assert_int_equal(flockstats_measure(stats, f, &r), code);
    assert_memory_equal(&r, &before, sizeof r);
}

static void bad_frames_are_refused_and_leave_the_result_untouched(void **state)
{
    (void)state;
    const char *err = NULL;
    assert_null(flockstats_create(0, &err));
    assert_non_null(err);
    stats = flockstats_create(10, &err);
    assert_non_null(stats);
    for (uint32_t i = 0; i < 10; i++)
        put(i, 10.0 * i, 5, 0, 1, 100, 100);
    struct flockstats_frame good = frame(10, 100, 100, 1), f = good;
    f.count = 11;
    assert_refused(&f, SIM_ECAPACITY);
    f = good, f.vy = NULL;
    assert_refused(&f, SIM_EINVAL);
    f = good, f.radius = 0.0f;
    assert_refused(&f, SIM_ERANGE);
    f = good, f.radius = NAN;
    assert_refused(&f, SIM_ERANGE);
    f = good, f.width = -100.0f;
    assert_refused(&f, SIM_ERANGE);
    f = good, f.height = INFINITY;
    assert_refused(&f, SIM_ERANGE);
    xs[3] = 100.5f;
    assert_refused(&good, SIM_ERANGE);
    xs[3] = 30.0f, vxs[4] = NAN;
    assert_refused(&good, SIM_ERANGE);
    vxs[4] = 1.0f;
    struct flockstats_result r;
    assert_int_equal(flockstats_measure(stats, &good, &r), SIM_OK);
    assert_int_equal(r.count, 10);
}

static void a_frame_of_a_world_is_its_state_with_group_0s_perception(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = 100;
    cfg.edges = SIM_EDGES_CONTAIN;
    struct sim_world *w = sim_create(&cfg, NULL);
    assert_non_null(w);
    assert_int_equal(sim_scatter(w, 100, 0), 100);
    assert_int_equal(sim_param_set(w, 0, "perception", 70.0f), SIM_OK);
    struct flockstats_frame f;
    struct sim_view v;
    flockstats_frame_of(w, &f);
    sim_view(w, &v);
    assert_int_equal(f.count, 100);
    assert_true(f.x == v.x && f.y == v.y && f.vx == v.vx && f.vy == v.vy);
    assert_true(f.width == 1600.0f && f.height == 1000.0f && f.wrap == 0);
    assert_true(f.radius == 70.0f);
    sim_destroy(w);
}

/* Headings kept over the frame's own velocities measure the same, bit
 * for bit, as in flockstats' scratch; the velocities become the headings. */
static void headings_over_the_velocities_measure_the_same(void **state)
{
    (void)state;
    uint32_t n = rings(500, 500, 1, 0.3, 1000, 1000);
    static float ux[MAX_N], uy[MAX_N];
    struct flockstats_frame f = frame(n, 1000, 1000, 1);
    struct flockstats_result own = measure(&f);
    for (uint32_t i = 0; i < n; i++) {
        float v = sqrtf(vxs[i] * vxs[i] + vys[i] * vys[i]);
        ux[i] = v > 0.0f ? vxs[i] * (1.0f / v) : 0.0f;
        uy[i] = v > 0.0f ? vys[i] * (1.0f / v) : 0.0f;
    }
    f.ux = vxs;
    f.uy = vys;
    struct flockstats_result over = measure(&f);
    assert_memory_equal(&own, &over, sizeof own);
    assert_memory_equal(vxs, ux, n * sizeof *ux);
    assert_memory_equal(vys, uy, n * sizeof *uy);
}

#define TEST(f) cmocka_unit_test_teardown(f, free_stats)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(a_lattice_flying_one_way_is_polarized_with_neighbours_at_the_spacing),
        TEST(a_perfect_mill_is_a_mill_whichever_way_it_turns),
        TEST(the_same_rings_flying_straight_are_no_mill),
        TEST(a_mill_across_the_torus_corner_measures_as_it_does_in_the_middle),
        TEST(a_mill_too_big_for_its_torus_wraps_around_it_and_is_not_judged),
        TEST(random_headings_give_polarization_near_one_over_root_n),
        TEST(pairs_at_known_distances_give_nearest_rank_percentiles),
        TEST(an_empty_frame_and_a_lone_boid_measure_as_documented),
        TEST(every_measure_matches_a_brute_force_reference_on_random_frames),
        TEST(bad_frames_are_refused_and_leave_the_result_untouched),
        TEST(a_frame_of_a_world_is_its_state_with_group_0s_perception),
        TEST(headings_over_the_velocities_measure_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
