/*
 * fog — which boids each team of an rts room sees (PROTOCOL.md §12.1):
 * its own units, and other teams' units within the sight radius (the
 * parameter sight_radius of the seeing unit's group) of one of its own.
 * Teams are the groups 1..teams; distances are the world's (the shorter
 * way around on a torus).
 *
 * A uniform grid of cells as large as the largest sight radius buckets the
 * units by cell and team, so each boid asks only each other team's units
 * in the 3 x 3 cells around its own, and stops at the first that sees it.
 *
 * Never: I/O, clocks, locks. Threading: a fog is used by one thread at a
 * time (its room's tick). Memory: fog_create() allocates for `capacity`
 * boids; nothing after.
 */
#ifndef FLOCKD_FOG_H
#define FLOCKD_FOG_H

#include <stdint.h>

#include "sim.h"

#define FOG_MAX_TEAMS 31 /* teams a visibility word holds (bit t: team t) */

struct fog;

/* A fog for worlds of up to capacity boids; NULL and *err on no memory. */
struct fog *fog_create(uint32_t capacity, const char **err);
void fog_destroy(struct fog *f);

/*
 * visible[i] for each boid i of the world (in world order): bit t set
 * when team t (1..teams, at most FOG_MAX_TEAMS) sees it. world gives the
 * boids, params each group's sight radius.
 */
void fog_compute(struct fog *f, const struct sim_view *world, const struct sim_world *params,
                 unsigned teams, uint32_t *visible);

#endif
