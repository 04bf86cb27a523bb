/*
 * apply — what each command does to a world: the one place a command's
 * effect on the simulation is written. The live room (room_apply.c) and
 * the replay of its log (replay.c) both apply commands through it, so a
 * replay changes its world exactly as the room changed its own, bit for
 * bit.
 *
 * Only the world: what is the room's (pause and steps, obstacle owners,
 * quotas, team caps, acks, the log) stays with the room, which checks and
 * books around apply_command(). Commands come in validated (by
 * proto_command_parse() or the log's reader, reclog.h), and a reset with
 * its seed and boid count resolved, a params reset as the values it sets
 * (apply_resolve_params): the room fills in its defaults before it
 * applies and records them, so its log holds them.
 *
 * Never: I/O, clocks, allocation, state of its own. Threading: the
 * world's (one thread at a time).
 */
#ifndef FLOCKD_APPLY_H
#define FLOCKD_APPLY_H

#include <stdint.h>

#include "proto_command.h"
#include "sim.h"

/* The parameters a world has in a room of this mode, from its creation
 * and after every reset (rts: every group flocks with its own kind only). */
void apply_mode_params(struct sim_world *w, enum proto_mode mode);

/*
 * A params reset as the world takes it and the log records it: every
 * registry parameter at its default in a room of this mode (rts:
 * own_group_only 1), the values given with the reset in their place, and
 * no reset left. Nothing changes for a params without reset.
 */
void apply_resolve_params(enum proto_mode mode, struct proto_params_args *a);

/*
 * Applies the world's part of cmd to w, a world of a room in `mode`:
 * seek, seek_clear, obstacle_add, obstacle_remove, obstacle_clear, spawn,
 * despawn, params and reset (with the mode's parameters after it). Returns
 * obstacle_add's new id, the boids spawn, despawn or reset added or
 * removed, 0 for the others (a command that is not the world's, such as
 * pause or join, changes nothing); or a negative SIM_E* code with the
 * world as it was.
 */
int64_t apply_command(struct sim_world *w, enum proto_mode mode, const struct proto_command *cmd);

#endif
