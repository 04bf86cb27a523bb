/*
 * grid — uniform spatial grid for neighbour search.
 *
 * The world is cut into ncols x nrows cells at least `min_cell` wide, so
 * every neighbour within that radius lies in the 3 x 3 cells around a
 * boid. grid_build() sorts boid indices by cell with a counting sort in
 * O(n + cells): `order` lists boids cell by cell, row-major, and the boids
 * of cell c are order[start[c] .. start[c+1]). Boids of one row's adjacent
 * cells are therefore contiguous, which keeps the neighbour scan linear.
 *
 * Never: allocation (memory is handed in by the owner), I/O.
 * Threading: a grid is written by grid_build() (or grid_cells() and
 * grid_sort()) only; reads may be shared. grid_cells() on disjoint ranges
 * may run concurrently.
 */
#ifndef FLOCKD_SIM_GRID_H
#define FLOCKD_SIM_GRID_H

#include <stddef.h>
#include <stdint.h>

struct grid {
    uint32_t ncols, nrows;
    uint32_t max_cells; /* capacity of `start` minus one */
    float cell_w, cell_h;
    float inv_cw, inv_ch;
    uint32_t *start; /* max_cells + 1 prefix offsets */
    uint32_t *cell;  /* per boid: its cell index */
    uint32_t *order; /* sorted slot -> boid index */
    uint32_t most;   /* boids in the fullest cell, as of the last sort */
};

/* Bytes of memory grid_init() needs for `capacity` boids and `max_cells`. */
size_t grid_bytes(uint32_t capacity, uint32_t max_cells);

/* Lays the grid's arrays into mem (grid_bytes() long, 4-byte aligned). */
void grid_init(struct grid *g, void *mem, uint32_t capacity, uint32_t max_cells);

/*
 * Keeps the per-boid cells in `cell` (capacity entries, 4-byte aligned)
 * instead of in the grid's memory, which then never touches that part of
 * it: for an owner with scratch that is free from grid_cells() until
 * grid_sort() returns, the only calls that use the cells.
 */
void grid_share_cells(struct grid *g, uint32_t *cell);

/*
 * Chooses cell counts for a width x height world with cells at least
 * min_cell wide; cells grow beyond min_cell when max_cells would be
 * exceeded. Must be called before grid_build() whenever min_cell changes.
 */
void grid_layout(struct grid *g, float width, float height, float min_cell);

/* Cell index of a point (clamped into the grid). */
uint32_t grid_cell_of(const struct grid *g, float x, float y);

/* Sorts boids 0..n-1 at (x[i], y[i]) into cells: grid_cells(0, n), then grid_sort(n). */
void grid_build(struct grid *g, const float *x, const float *y, uint32_t n);

/* The first half of grid_build(): notes the cell of boids [begin, end). */
void grid_cells(struct grid *g, const float *x, const float *y, uint32_t begin, uint32_t end);

/* The second half: the counting sort of boids 0..n-1 by the cells noted. */
void grid_sort(struct grid *g, uint32_t n);

#endif
