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
#include "reclog.h"
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

/* A room's state where its command log ends, as a checkpoint: out->ck
 * points into out->mem (free with room_resumed_free()). */
struct room_resumed {
    struct ckpt ck;
    uint8_t *mem;
    bool from_checkpoint; /* the log's records after checkpoint c were played */
    uint64_t hash_at;     /* sim_hash at `tick` before its commands; 0: not reached */
};

/*
 * Where a room that stopped without closing (kill -9) carries on: its last
 * checkpoint c (NULL: none) and every command its log holds after it,
 * played as the room played them (replay.h, replay_play_on), the world
 * stepped on to `tick` if the records end before it. Takes log[0..len)
 * (malloc'd). 0 and *out; PROTO_E_NOT_FOUND when the log has nothing to
 * add (its room closed, without a checkpoint; or it ends before c); else
 * a negative code: the log is refused or does not replay. why[0..n) says
 * why.
 */
int room_resume_log(const struct ckpt *c, uint8_t *log, size_t len, uint64_t tick,
                    struct room_resumed *out, char *why, size_t n);
void room_resumed_free(struct room_resumed *out);

/*
 * Starts the room's command log if its persist records: opens
 * DIR/NAME.flog and writes BEGIN with the room as it is now. Before the
 * room is scheduled. A log that cannot be opened is said on stderr and the
 * room runs unrecorded.
 */
void room_record_begin(struct room *r, const struct ckpt *id, enum reclog_reason reason);

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
