/*
 * squad — a world's squads, orders and formations (sim.h, PROTOCOL.md
 * §13): who is in which squad, where each squad is heading, and the pull
 * of its order on each of its units.
 *
 * sim.c owns the memory and hands it in as a struct squad_world; this
 * module keeps no state of its own. Never: I/O, clocks, allocation,
 * randomness. Threading: as sim.h; squad_pull() only reads and may run on
 * the step's threads at once.
 */
#ifndef FLOCKD_SIM_SQUAD_H
#define FLOCKD_SIM_SQUAD_H

#include <stdint.h>

#include "params.h"
#include "sim.h"

/* Scratch for one unit while slots are assigned. */
struct squad_key {
    float along, across; /* its offset from the squad's centre along f and r */
    uint32_t i;          /* boid index */
};

/* Sums over one squad's units in a step. */
struct squad_acc {
    double dx, dy, err;
    uint32_t n;
};

/* What squads see of a world (sim.c fills it from its own). */
struct squad_world {
    uint32_t count;
    float width, height, dt;
    int wrap;
    const float *x, *y, *vx, *vy;
    const uint8_t *group;            /* sorted ascending */
    const uint32_t *id;              /* ascending within a group */
    uint8_t *squad;                  /* per boid, 0: none */
    uint32_t *slot;                  /* per boid, its slot in its squad's formation */
    const struct sim_params *params; /* SIM_GROUPS */
    const struct sim_obstacle *obstacles;
    uint32_t obstacle_count;
    struct sim_squad (*sq)[SIM_SQUADS + 1];  /* SIM_GROUPS rows; entry 0 unused */
    uint32_t *news;                          /* SIM_GROUPS */
    uint32_t *live;                          /* squads with units, all groups */
    uint64_t *used;                          /* SIM_GROUPS bits: groups that have had squads */
    struct squad_key *keys;                  /* capacity entries */
    struct squad_acc (*acc)[SIM_SQUADS + 1]; /* SIM_GROUPS rows */
};

int squad_select(struct squad_world *sw, int group, int squad, const struct sim_selection *sel);
int squad_order(struct squad_world *sw, int group, int squad, const struct sim_order_args *o);
int squad_formation(struct squad_world *sw, int group, int squad, enum sim_shape shape,
                    float spacing);

/* Forgets every squad (the world was reset). */
void squad_reset(struct squad_world *sw);

/* The serial start of a step: counts and centres, slots, orders. */
void squad_step(struct squad_world *sw);

/* What a unit's squad asks of it. */
/* Seconds a unit takes to reach the velocity its slot asks (SQUAD_SLOT),
 * force permitting: with squad.c's SLOT_TAU, a unit settles into a slot
 * without swinging past it. */
#define SQUAD_REACT 0.1f

enum squad_pull_kind {
    SQUAD_FREE,  /* no squad: the group's rules and target */
    SQUAD_FLOCK, /* flocks with its squad, no goal */
    SQUAD_SEEK,  /* seeks/arrives at (x, y), flocking with its squad */
    SQUAD_SLOT,  /* flies at velocity (x, y) to its moving slot */
};

struct squad_pull {
    enum squad_pull_kind kind;
    float x, y;
    float to_x, to_y; /* SQUAD_SLOT: the slot */
    int may_pursue, may_flee;
};

struct squad_pull squad_pull(const struct squad_world *sw, uint32_t i, float px, float py);

#endif
