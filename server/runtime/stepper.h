/*
 * stepper — how a room steps its world: on its own tick thread, or, once
 * its ticks grow long, with each phase of the step cut into pieces that
 * the pool's idle workers take beside the tick thread (sim_step_forked
 * over pool_fork), joined before the tick goes on.
 *
 * A room splits its steps when its last two ticks each took more than
 * 1/STEPPER_SHARE of its period (one long tick may be a cold start or a
 * busy machine) and the pool has a second worker; it goes
 * back to one thread once its boids, at the cost per boid measured when it
 * split, would take less than half that. Small rooms therefore never pay
 * for the fork. Which way a step runs changes only its speed: the world
 * ends bit for bit the same (sim.h), whatever --workers says.
 *
 * Never: reads the clock (durations come from the pool), allocates.
 * Threading: a room's stepper is used by its tick only.
 */
#ifndef FLOCKD_STEPPER_H
#define FLOCKD_STEPPER_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "sim.h"

/* A tick longer than period / STEPPER_SHARE splits the room's steps. */
#define STEPPER_SHARE 8

/* A room's choice; all zero (one thread) to start with. */
struct stepper {
    bool is_split;
    int long_ticks;     /* ticks in a row over the share, while not split */
    double ns_per_boid; /* a tick's duration per boid when the room split */
};

/*
 * Steps w once, split or not as the room's last tick (t->last_ns, of a
 * room ticking every period_ns) and t->pool's workers say. A t without a
 * pool steps on this thread. Nothing can fail.
 */
void stepper_step(struct stepper *s, struct sim_world *w, const struct pool_time *t,
                  int64_t period_ns);

/*
 * The way to run a step's pieces on pool p (pool_fork: its idle workers
 * beside the calling thread), each phase cut into `parts` pieces: what
 * stepper_step() hands sim_step_forked() (with SIM_PARTS), and flockbench
 * too. p must outlive its use.
 */
struct sim_fork stepper_fork(struct pool *p, unsigned parts);

/* Whether the next step may be split: the choice as the last step left it. */
bool stepper_is_split(const struct stepper *s);

#endif
