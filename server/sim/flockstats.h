/*
 * flockstats — emergent measures of a flock: how aligned it is, how close
 * its members fly, how fast, how it breaks into clusters and whether those
 * clusters mill (circle about their centre).
 *
 * Definitions (u_i = unit heading of boid i, a zero velocity counts as a
 * zero vector; R = the frame's radius; distances by minimal image on a
 * torus, plain on a walled world):
 *  - local polarization  = mean over i of | mean of u_j over j within R of
 *    i, i included |;
 *  - global polarization = | mean over i of u_i |;
 *  - nearest-neighbour distance of i = min over j != i of |r_j - r_i|;
 *    p5 and median are nearest-rank percentiles (the value at sorted index
 *    ceil(p n) - 1), so the median of an even count is the lower middle;
 *  - cluster = connected component of "closer than R" (a lone boid is a
 *    cluster of one);
 *  - for a cluster k of >= FLOCKSTATS_MILL_MIN boids that does not wrap
 *    around the world, M_k = | mean over i in k of
 *    ((r_i - c_k) x u_i) / |r_i - c_k| | with c_k the mean of its members'
 *    positions, laid out without the torus seam; the cluster is a mill when
 *    M_k > FLOCKSTATS_MILL_ROTATION and its own global polarization is
 *    below FLOCKSTATS_MILL_POLARIZATION.
 * "Within R" means strictly closer than R, as for the flocking rules.
 *
 * Cost: O(n k) for n boids with k candidates in their 3 x 3 grid cells
 * (cells at least R wide), plus a search in growing rings for a boid whose
 * nearest neighbour is farther than a cell. All scratch is allocated once,
 * by flockstats_create(), for a fixed capacity.
 *
 * Never: I/O, clocks, globals, allocation after create. The input is a
 * frame of plain arrays, so a caller may measure a copy of a world's state
 * (flockstats_frame_of() fills one from a live world).
 *
 * Threading: a flockstats object is used by one thread at a time; the
 * frame's arrays must not change during flockstats_measure().
 */
#ifndef FLOCKD_SIM_FLOCKSTATS_H
#define FLOCKD_SIM_FLOCKSTATS_H

#include <stdint.h>

#include "sim.h"

#define FLOCKSTATS_MAX_CAPACITY      4194304u /* most boids a flockstats object measures */
#define FLOCKSTATS_MILL_MIN          10       /* smallest cluster tested for milling */
#define FLOCKSTATS_MILL_ROTATION     0.65f    /* M_k above this ... */
#define FLOCKSTATS_MILL_POLARIZATION 0.35f    /* ... and polarization below this: a mill */

/* What to measure: n boids in a width x height world. The caller owns the
 * arrays; flockstats only reads them, but for ux and uy. */
struct flockstats_frame {
    uint32_t count;
    float width, height;
    int wrap;     /* 1: torus, distances by minimal image; 0: walls */
    float radius; /* R: the neighbourhood of local polarization and clusters */
    const float *x, *y, *vx, *vy;
    /* Optional (NULL: flockstats' own scratch): where the measure keeps the
     * unit headings, count floats each. They may be vx and vy, whose values
     * are then lost: a caller that measures a copy saves 8 bytes a boid. */
    float *ux, *uy;
};

struct flockstats_result {
    uint32_t count;
    float local_polarization;  /* [0, 1]; 0 for an empty frame */
    float global_polarization; /* [0, 1]; 0 for an empty frame */
    float nn_p5, nn_median;    /* units; 0 with fewer than two boids */
    float mean_speed;          /* units/s */
    uint32_t clusters;         /* connected components, lone boids included */
    uint32_t largest_cluster;  /* boids in the biggest one */
    uint32_t flocks;           /* clusters of >= FLOCKSTATS_MILL_MIN boids */
    uint32_t mills;            /* flocks that mill */
    float mill_fraction;       /* boids in mills / count; 0 for an empty frame */
};

struct flockstats;

/*
 * Allocates scratch for frames of up to `capacity` boids (1 ..
 * FLOCKSTATS_MAX_CAPACITY).
 * Returns NULL on failure with a static reason in *err (if err is not
 * NULL). Free with flockstats_destroy().
 */
struct flockstats *flockstats_create(uint32_t capacity, const char **err);
void flockstats_destroy(struct flockstats *s);

/*
 * Measures frame f into *out. Returns 0, or a negative SIM_E* code with
 * *out untouched: SIM_ECAPACITY if f->count exceeds the capacity,
 * SIM_EINVAL for a missing array, SIM_ERANGE for a size or radius that is
 * not finite and positive or a boid outside the world.
 */
int flockstats_measure(struct flockstats *s, const struct flockstats_frame *f,
                       struct flockstats_result *out);

/* Points *f at w's current state, with R = group 0's perception. Valid
 * until w next changes. */
void flockstats_frame_of(const struct sim_world *w, struct flockstats_frame *f);

#endif
