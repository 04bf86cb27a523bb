/*
 * room_persist — a room's command log and checkpoints, for the lobby
 * (lobby_room.c) and flockd --replay --serve: restoring a room from a
 * checkpoint, starting its log, asking for checkpoints. room_persist.c
 * implements the log and the restore; room.c queues the checkpoint
 * requests and takes them in turn. The files are store/FILES.md's.
 *
 * `id` is the lobby's part of a checkpoint (checkpoint.h): the room's
 * name, mode, password and teams; the room adds its own state and its
 * world.
 *
 * Never: the files' bytes or I/O (store/: checkpoint.h, reclog.h,
 * persist.h, recorder.h do those). Threading: as each function says.
 */
#ifndef FLOCKD_ROOM_PERSIST_H
#define FLOCKD_ROOM_PERSIST_H

#include <stdbool.h>

#include "checkpoint.h"
#include "room.h"

/*
 * Sets cfg's world, tick rate and reset boid count to the checkpoint's,
 * so that room_create() makes the room c restores into. 0, or
 * PROTO_E_BAD_VALUE with *why.
 */
int room_config_restoring(struct room_config *cfg, const struct ckpt *c, const char **why);

/*
 * Restores a room just created by room_config_restoring()'s config, not yet
 * scheduled: world, pause, steps still to run, obstacle owners and the
 * checkpoint sequence. 0, or a negative code and *why: the room is then
 * half-restored and must be destroyed.
 */
int room_restore(struct room *r, const struct ckpt *c, const char **why);

/*
 * Starts the room's command log if its persist records: opens
 * DIR/NAME.flog and writes BEGIN with the room as it is now. Before the
 * room is scheduled. A log that cannot be opened is said on stderr and the
 * room runs unrecorded.
 */
void room_record_begin(struct room *r, const struct ckpt *id, bool restored);

/*
 * Asks a scheduled room for a checkpoint (any thread): queued like a
 * command of the server, so it reflects every command queued before it.
 * At its turn the tick copies the room and hands the copy to the writer
 * thread. `id` is copied. 0, PROTO_E_QUEUE_FULL or PROTO_E_INTERNAL.
 */
int room_checkpoint(struct room *r, const struct ckpt *id);

/*
 * The same at once, for a room no worker ticks (flockd stopping): applies
 * the commands still queued, then copies the room for the writer.
 */
void room_checkpoint_now(struct room *r, const struct ckpt *id);

#endif
