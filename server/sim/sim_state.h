/*
 * sim_state — a world's complete state as bytes, and back: the part of a
 * checkpoint (server/store/checkpoint.h) and of a command log's starting state
 * that belongs to the flocking core.
 *
 * The bytes hold everything a step reads, so a world decoded from them
 * steps exactly as the world they were taken from (same sim_hash, then and
 * after any number of steps on the same build): its config, tick, epoch,
 * PRNG, every group's parameters (with the registry's names, so a build
 * with other parameters refuses them), targets, obstacles with their ids
 * and the next id, the boids in their order, and the squads (squad.h):
 * each boid's squad and slot and every squad's record. The layout is in
 * server/store/FILES.md §3, little-endian.
 *
 * Decoding checks everything before it changes anything: the magic and
 * version, the parameter names, the config (as sim_create() would), counts
 * within capacity, finite values in range, positions in the world, boids
 * sorted by group, boid ids below the next id and none twice, obstacle ids
 * ascending and below the next id, squads counted from their boids with
 * their orders in range, the exact length. A refused state
 * leaves the world as it was.
 *
 * Never: I/O, clocks, globals; allocation only in sim_state_create() and
 * for the checks of the boids' ids (a sorted copy) and squads (their
 * counts), freed before return.
 * Threading: as sim.h (the world's one thread at a time); the functions
 * on bytes alone are reentrant.
 * Errors: 0 (or a length) or a negative SIM_E* code, with a static reason
 * in *why where the signature has one.
 */
#ifndef FLOCKD_SIM_STATE_H
#define FLOCKD_SIM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define SIM_STATE_VERSION                                                                          \
    3 /* 1 and 2 are still read: 1's boids take ids 1..n, neither has squads */
#define SIM_STATE_MAX_V 1e6f /* |vx|, |vy| of a decoded boid, units/s */

/* What a state's bytes say of its world, read before it is restored. */
struct sim_state_info {
    struct sim_config cfg;
    uint64_t tick;
    uint32_t epoch;
    uint32_t count;          /* boids */
    uint32_t obstacle_count; /* obstacles, with ids below next_obstacle_id */
    uint32_t next_obstacle_id;
    uint32_t next_id; /* the next boid id (0: none left) */
};

/* Bytes the state of w takes now, and at most for a world of this size. */
size_t sim_state_size(const struct sim_world *w);
size_t sim_state_max_size(uint32_t capacity, uint32_t max_obstacles);

/*
 * Writes w's state into buf[0..cap). Returns its length
 * (sim_state_size(w)) or SIM_ECAPACITY if cap is smaller. Copies the
 * boids' arrays whole: about as fast as memcpy, so a tick can afford it.
 */
int sim_state_encode(const struct sim_world *w, uint8_t *buf, size_t cap);

/*
 * Checks buf[0..len) as a state (every rule above) without a world and,
 * if it passes, fills *info (may be NULL). Returns 0, SIM_EINVAL (not a
 * state, another version or parameter registry, a bad config or length),
 * SIM_ECAPACITY (a count beyond its capacity) or SIM_ERANGE (a value out
 * of range or order) or SIM_ENOMEM, with a static reason in *why (may be
 * NULL).
 */
int sim_state_check(const uint8_t *buf, size_t len, struct sim_state_info *info, const char **why);

/*
 * Replaces w's state with the one in buf[0..len): sim_state_check(), and
 * the state's config must equal w's (else SIM_EINVAL). All or nothing.
 */
int sim_state_decode(struct sim_world *w, const uint8_t *buf, size_t len, const char **why);

/*
 * A new world holding the state in buf[0..len), created with the state's
 * own config. NULL with a static reason in *why if the state is refused or
 * memory runs out. Free with sim_destroy().
 */
struct sim_world *sim_state_create(const uint8_t *buf, size_t len, const char **why);

#endif
