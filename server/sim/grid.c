/*
 * grid.c — counting-sort uniform grid (see grid.h).
 */
#include "grid.h"

#include <math.h>
#include <string.h>

size_t grid_bytes(uint32_t capacity, uint32_t max_cells)
{
    return ((size_t)max_cells + 1 + 2 * (size_t)capacity) * sizeof(uint32_t);
}

void grid_init(struct grid *g, void *mem, uint32_t capacity, uint32_t max_cells)
{
    memset(g, 0, sizeof *g);
    g->max_cells = max_cells;
    g->start = mem;
    g->cell = g->start + max_cells + 1;
    g->order = g->cell + capacity;
    g->ncols = g->nrows = 1;
}

void grid_share_cells(struct grid *g, uint32_t *cell)
{
    g->cell = cell;
}

void grid_layout(struct grid *g, float width, float height, float min_cell)
{
    double cell = min_cell > 0 ? min_cell : 1.0;
    double cols = floor(width / cell), rows = floor(height / cell);
    if (cols < 1)
        cols = 1;
    if (rows < 1)
        rows = 1;
    /* Too many cells for the budget: grow cells uniformly until they fit. */
    while (cols * rows > g->max_cells) {
        cell *= 1.25;
        cols = floor(width / cell);
        rows = floor(height / cell);
        if (cols < 1)
            cols = 1;
        if (rows < 1)
            rows = 1;
    }
    g->ncols = (uint32_t)cols;
    g->nrows = (uint32_t)rows;
    g->cell_w = width / (float)g->ncols;
    g->cell_h = height / (float)g->nrows;
    g->inv_cw = (float)g->ncols / width;
    g->inv_ch = (float)g->nrows / height;
}

uint32_t grid_cell_of(const struct grid *g, float x, float y)
{
    int cx = (int)(x * g->inv_cw), cy = (int)(y * g->inv_ch);
    if (cx < 0)
        cx = 0;
    if (cx >= (int)g->ncols)
        cx = (int)g->ncols - 1;
    if (cy < 0)
        cy = 0;
    if (cy >= (int)g->nrows)
        cy = (int)g->nrows - 1;
    return (uint32_t)cy * g->ncols + (uint32_t)cx;
}

void grid_build(struct grid *g, const float *x, const float *y, uint32_t n)
{
    grid_cells(g, x, y, 0, n);
    grid_sort(g, n);
}

void grid_cells(struct grid *g, const float *x, const float *y, uint32_t begin, uint32_t end)
{
    for (uint32_t i = begin; i < end; i++)
        g->cell[i] = grid_cell_of(g, x[i], y[i]);
}

void grid_sort(struct grid *g, uint32_t n)
{
    uint32_t ncells = g->ncols * g->nrows;
    memset(g->start, 0, ((size_t)ncells + 1) * sizeof *g->start);
    for (uint32_t i = 0; i < n; i++)
        g->start[g->cell[i] + 1]++;
    uint32_t most = 0;
    for (uint32_t c = 0; c < ncells; c++) {
        most = g->start[c + 1] > most ? g->start[c + 1] : most;
        g->start[c + 1] += g->start[c];
    }
    g->most = most;
    /* Stable scatter: within a cell boids stay in index order. Uses
     * start[c] as the running cursor, then shifts it back. */
    for (uint32_t i = 0; i < n; i++)
        g->order[g->start[g->cell[i]]++] = i;
    memmove(g->start + 1, g->start, (size_t)ncells * sizeof *g->start);
    g->start[0] = 0;
}
