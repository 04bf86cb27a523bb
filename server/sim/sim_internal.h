/*
 * sim_internal — what the core's own modules may see of a world beyond
 * sim.h: pointers to every field of its state, for the state codec
 * (sim_state.c), which must read and restore all of it, PRNG included.
 * Included by sim.c and sim_state.c only; nothing outside server/sim.
 *
 * Never: I/O, allocation. Threading: as sim.h (one thread per world).
 */
#ifndef FLOCKD_SIM_INTERNAL_H
#define FLOCKD_SIM_INTERNAL_H

#include <stdint.h>

#include "rng.h"
#include "sim.h"

/* Every field of a world's state, by address. The arrays hold
 * cfg->capacity entries (obstacles: cfg->max_obstacles, targets and
 * params: SIM_GROUPS). `stepped` says whether the last step's forces and
 * neighbours can be read: no step reads them, so a restore clears it. */
struct sim_state_ref {
    const struct sim_config *cfg;
    uint64_t *tick;
    uint32_t *epoch, *count;
    struct pcg32 *rng;
    float *x, *y, *vx, *vy;
    uint8_t *group;
    uint32_t *id, *next_id;
    int *stepped;
    struct sim_obstacle *obstacles;
    uint32_t *obstacle_count, *next_obstacle_id;
    struct sim_target *targets;
    struct sim_params *params;
    /* Squads (squad.h): each boid's squad and slot, the records of every
     * group, the groups that have had squads, the squads with units and
     * the groups' news counts. */
    uint8_t *squad;
    uint32_t *slot;
    struct sim_squad (*squads)[SIM_SQUADS + 1];
    uint64_t *squads_used; /* SIM_GROUPS bits */
    uint32_t *squads_live;
    uint32_t *squad_news; /* SIM_GROUPS */
};

/* Fills *out with the addresses of w's state. */
void sim__state_ref(struct sim_world *w, struct sim_state_ref *out);

/* Why sim_create() would refuse c (a static string), or NULL if it is valid. */
const char *sim__config_error(const struct sim_config *c);

#endif
