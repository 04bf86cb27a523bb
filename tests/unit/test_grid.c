/*
 * Unit tests for the uniform neighbour grid (grid.h), used directly with a
 * buffer of grid_bytes(): the layout cuts the world into floor(size / cell)
 * cells no smaller than asked (growing them to fit the cell budget),
 * grid_cell_of() clamps, and grid_build() sorts every boid into the cell
 * that contains it with a valid prefix table (as grid_cells() in pieces
 * and grid_sort() do together), so that any two points closer
 * than the cell size always land in neighbouring cells, borders included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "grid.h"
#include "splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 2000 /* most points any test sorts */

/* A grid on exactly grid_bytes() of heap (so ASan notices any access past
 * what grid_bytes() asked for). One per test; the teardown frees it even
 * when an assertion failed half-way. */
static void *grid_mem;

static void test_grid_init(struct grid *g, uint32_t capacity, uint32_t max_cells)
{
    free(grid_mem);
    grid_mem = malloc(grid_bytes(capacity, max_cells));
    assert_non_null(grid_mem);
    grid_init(g, grid_mem, capacity, max_cells);
}

static int free_grid_memory(void **state)
{
    (void)state;
    free(grid_mem);
    grid_mem = NULL;
    return 0;
}

/* Uniform float in [0, size). */
static float uniform(uint64_t *s, float size)
{
    float v = (float)(splitmix_next(s) >> 40) * (1.0f / 16777216.0f) * size;
    return v < size ? v : 0.0f;
}

/* n points spread evenly over a 1600 x 1000 world, from seed. */
static void scatter(float *x, float *y, uint32_t n, uint64_t seed)
{
    for (uint32_t i = 0; i < n; i++) {
        x[i] = uniform(&seed, 1600.0f);
        y[i] = uniform(&seed, 1000.0f);
    }
}

/*
 * Checks everything grid_build() promises for points (x[i], y[i]): the
 * prefix table starts at 0, never decreases and ends at n; `order` is a
 * permutation of 0..n-1 listing boids cell by cell; every boid's `cell`
 * is grid_cell_of() of its position, and every slot of cell c names a boid
 * whose cell is c.
 */
static void assert_valid_build(const struct grid *g, const float *x, const float *y, uint32_t n)
{
    static unsigned char seen[MAX_POINTS];
    uint32_t ncells = g->ncols * g->nrows;
    assert_true(n <= MAX_POINTS);
    memset(seen, 0, n);
    assert_int_equal(g->start[0], 0);
    assert_int_equal(g->start[ncells], n);
    for (uint32_t c = 0; c < ncells; c++) {
        assert_true(g->start[c] <= g->start[c + 1]);
        for (uint32_t k = g->start[c]; k < g->start[c + 1]; k++) {
            uint32_t i = g->order[k];
            assert_true(i < n);
            assert_false(seen[i]);
            seen[i] = 1;
            assert_int_equal(g->cell[i], c);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        assert_true(seen[i]);
        assert_int_equal(g->cell[i], grid_cell_of(g, x[i], y[i]));
    }
}

/* Column and row distance between two cells, wrapped if asked. */
static uint32_t cell_gap(uint32_t a, uint32_t b, uint32_t count, int wrap)
{
    uint32_t d = a > b ? a - b : b - a;
    return wrap && count - d < d ? count - d : d;
}

static void grid_bytes_covers_prefix_table_cells_and_order(void **state)
{
    (void)state;
    assert_true(grid_bytes(0, 0) >= sizeof(uint32_t));
    assert_true(grid_bytes(1000, 4096) >= (4097 + 2 * 1000) * sizeof(uint32_t));
    assert_true(grid_bytes(1001, 4096) > grid_bytes(1000, 4096));
    assert_true(grid_bytes(1000, 4097) > grid_bytes(1000, 4096));
}

static void layout_cuts_the_world_into_floor_of_size_over_cell_columns_and_rows(void **state)
{
    (void)state;
    struct grid g;
    test_grid_init(&g, 16, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 50.0f);
    assert_int_equal(g.ncols, 32);
    assert_int_equal(g.nrows, 20);
    assert_float_equal(g.cell_w, 50.0f, 1e-4);
    assert_float_equal(g.cell_h, 50.0f, 1e-4);

    grid_layout(&g, 1000.0f, 997.0f, 47.0f); /* not a multiple: cells grow */
    assert_int_equal(g.ncols, 21);
    assert_int_equal(g.nrows, 21);
    assert_true(g.cell_w >= 47.0f && g.cell_h >= 47.0f);
    assert_float_equal(g.cell_w * (float)g.ncols, 1000.0f, 1e-2);
    assert_float_equal(g.cell_h * (float)g.nrows, 997.0f, 1e-2);
}

static void layout_never_makes_fewer_than_one_cell_per_axis(void **state)
{
    (void)state;
    struct grid g;
    test_grid_init(&g, 16, 4096);
    grid_layout(&g, 100.0f, 16.0f, 250.0f);
    assert_int_equal(g.ncols, 1);
    assert_int_equal(g.nrows, 1);
    assert_float_equal(g.cell_w, 100.0f, 1e-4);
    assert_float_equal(g.cell_h, 16.0f, 1e-4);
    grid_layout(&g, 100.0f, 100.0f, 0.0f); /* degenerate cell size */
    assert_true(g.ncols >= 1 && g.nrows >= 1);
    assert_true(g.ncols * g.nrows <= g.max_cells);
}

static void layout_grows_cells_until_they_fit_the_cell_budget(void **state)
{
    (void)state;
    struct grid g;
    test_grid_init(&g, 16, 100);
    grid_layout(&g, 1600.0f, 1000.0f, 10.0f); /* 160 x 100 cells wanted */
    assert_true(g.ncols * g.nrows <= 100);
    assert_true(g.ncols >= 1 && g.nrows >= 1);
    assert_true(g.cell_w >= 10.0f && g.cell_h >= 10.0f);

    test_grid_init(&g, 16, 4096);
    grid_layout(&g, 1e6f, 1e6f, 1.0f); /* a million by a million */
    assert_true(g.ncols * g.nrows <= 4096);
    assert_true(g.cell_w >= 1.0f && g.cell_h >= 1.0f);
}

static void cell_of_clamps_points_outside_the_grid_to_the_nearest_cell(void **state)
{
    (void)state;
    struct grid g;
    test_grid_init(&g, 16, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 50.0f);
    uint32_t last_col = g.ncols - 1, last_row = g.nrows - 1;
    assert_int_equal(grid_cell_of(&g, 0.0f, 0.0f), 0);
    assert_int_equal(grid_cell_of(&g, -10.0f, -10.0f), 0);
    assert_int_equal(grid_cell_of(&g, 1600.0f, 1000.0f), last_row * g.ncols + last_col);
    assert_int_equal(grid_cell_of(&g, 5000.0f, 3.0f), last_col);
    assert_int_equal(grid_cell_of(&g, 3.0f, 5000.0f), last_row * g.ncols);
    assert_int_equal(grid_cell_of(&g, 75.0f, 125.0f), 2 * g.ncols + 1);
}

static void build_sorts_every_boid_into_its_cell_with_a_valid_prefix_table(void **state)
{
    (void)state;
    enum { N = 2000 };
    static float x[N], y[N];
    scatter(x, y, N, 42);
    struct grid g;
    test_grid_init(&g, N, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 47.0f);
    grid_build(&g, x, y, N);
    assert_valid_build(&g, x, y, N);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t cx = g.cell[i] % g.ncols, cy = g.cell[i] / g.ncols;
        /* The cell contains the point, give or take float rounding. */
        assert_true(x[i] >= (float)cx * g.cell_w - 1e-3f);
        assert_true(x[i] <= (float)(cx + 1) * g.cell_w + 1e-3f);
        assert_true(y[i] >= (float)cy * g.cell_h - 1e-3f);
        assert_true(y[i] <= (float)(cy + 1) * g.cell_h + 1e-3f);
    }
}

static void build_of_no_boids_leaves_every_cell_empty(void **state)
{
    (void)state;
    struct grid g;
    test_grid_init(&g, 8, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 50.0f);
    float x = 10.0f, y = 10.0f;
    grid_build(&g, &x, &y, 1);
    grid_build(&g, &x, &y, 0); /* a rebuild forgets the previous boids */
    for (uint32_t c = 0; c <= g.ncols * g.nrows; c++)
        assert_int_equal(g.start[c], 0);
}

static void rebuild_after_a_new_layout_sorts_into_the_new_cells(void **state)
{
    (void)state;
    enum { N = 500 };
    static float x[N], y[N];
    uint64_t s = 7;
    for (uint32_t i = 0; i < N; i++) {
        x[i] = uniform(&s, 1000.0f);
        y[i] = uniform(&s, 1000.0f);
    }
    struct grid g;
    test_grid_init(&g, N, 4096);
    grid_layout(&g, 1000.0f, 1000.0f, 25.0f);
    grid_build(&g, x, y, N);
    assert_valid_build(&g, x, y, N);
    grid_layout(&g, 1000.0f, 1000.0f, 250.0f);
    grid_build(&g, x, y, N);
    assert_int_equal(g.ncols * g.nrows, 16);
    assert_valid_build(&g, x, y, N);
}

static void cells_in_pieces_then_sort_equal_one_build(void **state)
{
    (void)state;
    enum { N = 1500 };
    static float x[N], y[N];
    static uint32_t start[4097], cell[N], order[N];
    scatter(x, y, N, 11);
    struct grid g;
    test_grid_init(&g, N, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 30.0f);
    grid_build(&g, x, y, N);
    uint32_t cells = g.ncols * g.nrows;
    memcpy(start, g.start, (cells + 1) * sizeof *start);
    memcpy(cell, g.cell, sizeof cell);
    memcpy(order, g.order, sizeof order);
    /* Pieces in any order, of any size, the same grid after the sort. */
    memset(g.cell, 0xff, N * sizeof *g.cell);
    grid_cells(&g, x, y, 1000, N);
    grid_cells(&g, x, y, 0, 7);
    grid_cells(&g, x, y, 7, 7);
    grid_cells(&g, x, y, 7, 1000);
    grid_sort(&g, N);
    assert_memory_equal(g.start, start, (cells + 1) * sizeof *start);
    assert_memory_equal(g.cell, cell, sizeof cell);
    assert_memory_equal(g.order, order, sizeof order);
    assert_valid_build(&g, x, y, N);
}

/* Cells kept in the owner's memory: the same sort, and the grid's own
 * cells are never written; the sort notes how full the fullest cell is. */
static void shared_cells_sort_as_the_grids_own(void **state)
{
    (void)state;
    enum { N = 1000 };
    static float x[N], y[N];
    static uint32_t order[N], mine[N];
    scatter(x, y, N, 5);
    struct grid g;
    test_grid_init(&g, N, 4096);
    grid_layout(&g, 1600.0f, 1000.0f, 40.0f);
    grid_build(&g, x, y, N);
    memcpy(order, g.order, sizeof order);
    uint32_t *own = g.cell;
    memset(own, 0xab, N * sizeof *own);
    grid_share_cells(&g, mine);
    grid_build(&g, x, y, N);
    assert_ptr_equal(g.cell, mine);
    assert_memory_equal(g.order, order, sizeof order);
    uint32_t most = 0; /* the sort also counts the fullest cell */
    for (uint32_t c = 0; c < g.ncols * g.nrows; c++)
        most = g.start[c + 1] - g.start[c] > most ? g.start[c + 1] - g.start[c] : most;
    assert_true(most > 1);
    assert_int_equal(g.most, most);
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(mine[i], grid_cell_of(&g, x[i], y[i]));
        assert_int_equal(own[i], 0xabababab);
    }
    assert_valid_build(&g, x, y, N);
}

/* Adds (x, y) to the point list if it lies in the w x h world. */
static void add_point(float *x, float *y, uint32_t *n, float px, float py, float w, float h)
{
    if (px >= 0.0f && px <= w && py >= 0.0f && py <= h) {
        x[*n] = px;
        y[*n] = py;
        (*n)++;
    }
}

/* Grid lines worth probing: the first three, one in the middle and the
 * last three (the last being the world's far edge). */
static float border_line(uint32_t k, uint32_t cells, float cell, float size)
{
    uint32_t pick[7] = {0, 1, 2, cells / 2, cells - 2, cells - 1, cells};
    return pick[k] >= cells ? size : (float)pick[k] * cell;
}

/* Points on and one float step either side of grid lines and world edges
 * and where they cross, then uniform points; returns how many. */
static uint32_t border_points(const struct grid *g, float w, float h, float *x, float *y)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < 7; i++) {
        float bx = border_line(i, g->ncols, g->cell_w, w);
        float xs[3] = {nextafterf(bx, -1.0f), bx, nextafterf(bx, 2.0f * w)};
        for (uint32_t j = 0; j < 7; j++) {
            float by = border_line(j, g->nrows, g->cell_h, h);
            float ys[3] = {nextafterf(by, -1.0f), by, nextafterf(by, 2.0f * h)};
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    add_point(x, y, &n, xs[a], ys[b], w, h);
        }
    }
    uint64_t s = 99;
    for (int k = 0; k < 1000; k++)
        add_point(x, y, &n, uniform(&s, w), uniform(&s, h), w, h);
    return n;
}

/* Fails if two points closer than min_cell (dx, dy apart) sit in cells
 * more than one column or row apart. */
static void assert_neighbouring(const struct grid *g, uint32_t ci, uint32_t cj, double dx,
                                double dy, float min_cell, int wrap)
{
    if (dx * dx + dy * dy >= (double)min_cell * min_cell)
        return;
    if (cell_gap(ci % g->ncols, cj % g->ncols, g->ncols, wrap) > 1 ||
        cell_gap(ci / g->ncols, cj / g->ncols, g->nrows, wrap) > 1)
        fail_msg("points %.9g apart%s are in cells %u and %u", sqrt(dx * dx + dy * dy),
                 wrap ? " across the seam" : "", ci, cj);
}

/* The grid's one promise to the neighbour search: two points closer than
 * the cell size it was laid out for are at most one column and one row
 * apart, in the plane and on the torus (where positions across the seam
 * differ by a world size). */
static void assert_close_points_are_in_neighbouring_cells(float w, float h, float min_cell)
{
    enum { CAP = 1500 };
    static float x[CAP], y[CAP];
    struct grid g;
    test_grid_init(&g, CAP, 4096);
    grid_layout(&g, w, h, min_cell);
    uint32_t n = border_points(&g, w, h, x, y);
    assert_true(n > 1300 && n <= CAP);
    grid_build(&g, x, y, n);
    assert_valid_build(&g, x, y, n);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = i + 1; j < n; j++) {
            double dx = fabs((double)x[i] - x[j]), dy = fabs((double)y[i] - y[j]);
            assert_neighbouring(&g, g.cell[i], g.cell[j], dx, dy, min_cell, 0);
            assert_neighbouring(&g, g.cell[i], g.cell[j], fmin(dx, w - dx), fmin(dy, h - dy),
                                min_cell, 1);
        }
    }
}

static void points_closer_than_a_cell_land_in_neighbouring_cells_even_on_borders(void **state)
{
    (void)state;
    assert_close_points_are_in_neighbouring_cells(1600.0f, 1000.0f, 50.0f);
    assert_close_points_are_in_neighbouring_cells(1600.0f, 1000.0f, 33.3f);
    assert_close_points_are_in_neighbouring_cells(1234.0f, 997.0f, 40.0f);
    assert_close_points_are_in_neighbouring_cells(997.0f, 1234.0f, 64.0f);
    assert_close_points_are_in_neighbouring_cells(150.0f, 150.0f, 50.0f);
}

/* Every test, with the teardown that frees its grid. */
#define TEST(f) cmocka_unit_test_teardown(f, free_grid_memory)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(grid_bytes_covers_prefix_table_cells_and_order),
        TEST(layout_cuts_the_world_into_floor_of_size_over_cell_columns_and_rows),
        TEST(layout_never_makes_fewer_than_one_cell_per_axis),
        TEST(layout_grows_cells_until_they_fit_the_cell_budget),
        TEST(cell_of_clamps_points_outside_the_grid_to_the_nearest_cell),
        TEST(build_sorts_every_boid_into_its_cell_with_a_valid_prefix_table),
        TEST(build_of_no_boids_leaves_every_cell_empty),
        TEST(rebuild_after_a_new_layout_sorts_into_the_new_cells),
        TEST(cells_in_pieces_then_sort_equal_one_build),
        TEST(shared_cells_sort_as_the_grids_own),
        TEST(points_closer_than_a_cell_land_in_neighbouring_cells_even_on_borders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
