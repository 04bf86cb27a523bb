/*
 * persist — flockd's files on disk: the rooms' checkpoints in
 * --checkpoint-dir (checkpoint.h's bytes in DIR/ROOM.ckpt) and the
 * directory of their command logs, --record (recorder.h writes them); and
 * the one thread that writes checkpoints and syncs logs, so that no tick
 * waits for a disk.
 *
 * A checkpoint is handed over as a job the tick thread filled with copies
 * (persist_checkpoint_job); the writer stamps it, encodes it, writes it to
 * DIR/ROOM.ckpt.tmp, fsyncs, renames it over DIR/ROOM.ckpt and fsyncs the
 * directory: a crash leaves the old checkpoint or the new one, never half
 * of one. Jobs run in the order they were handed over.
 *
 * At creation it loads every checkpoint of the directory and checks it
 * whole (checkpoint.h, and within this server's limits); each one refused
 * is named on stderr with the reason and what becomes of its room, and
 * renamed to FILE.refused so the next start does not trip on it again.
 * The lobby takes the good ones (persist_restored) to restore its rooms.
 *
 * This is an edge module: it does file I/O, reads the clock (a
 * checkpoint's wall time) and writes messages to stderr.
 * Threading: persist_checkpoint_due() and the restored list belong to the
 * lobby's thread; everything else is safe from any thread.
 * Errors: 0 or a negative PROTO_E_* code; constructors NULL and a reason.
 */
#ifndef FLOCKD_PERSIST_H
#define FLOCKD_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

enum persist_fsync {
    PERSIST_FSYNC_NEVER,    /* logs reach the disk when the kernel writes them back */
    PERSIST_FSYNC_INTERVAL, /* the writer thread syncs each log at most a second behind */
    PERSIST_FSYNC_ALWAYS,   /* every tick's records are synced before the tick ends */
};

struct persist_config {
    const char *record_dir;     /* "" or NULL: no command logs */
    enum persist_fsync fsync;   /* of the logs */
    uint32_t hash_every;        /* ticks between a log's HASH records, >= 1 */
    const char *checkpoint_dir; /* "" or NULL: no checkpoints */
    double checkpoint_every;    /* seconds between checkpoints; 0: only when flockd stops */
    const char *build;          /* this build's id, written into every file */
    uint32_t max_capacity;      /* a checkpoint of a bigger world is refused (oversized) */
    uint32_t max_obstacles;
    /* Where else each checkpoint goes (a cluster's bucket, cluster.h),
     * called on the writer thread with the encoded bytes; NULL: nowhere.
     * With a sink and no directory, checkpoints go to the sink alone. */
    void (*sink)(void *arg, const char *room, const uint8_t *buf, size_t len);
    void *sink_arg;
};

struct persist;

/*
 * Makes the directories (one level), checks that they are writable, loads
 * the checkpoints and starts the writer thread. NULL and a static reason
 * in *err if a directory cannot be used. Free with persist_destroy(),
 * after every room closed.
 */
struct persist *persist_create(const struct persist_config *cfg, const char **err);
/* Runs every job still queued, stops the thread, frees the rest. */
void persist_destroy(struct persist *p);

const struct persist_config *persist_config(const struct persist *p);
bool persist_is_recording(const struct persist *p);
bool persist_has_checkpoints(const struct persist *p);

/* ---- checkpoints ---- */

/*
 * A checkpoint the tick filled: `ck` with its identity and room state,
 * `ck.owners` and `ck.world` pointing into `mem`. Allocate with
 * persist_job_alloc(), hand over with persist_write(), which owns it
 * from then on (also when it fails).
 */
struct persist_job {
    struct persist_job *next;
    struct ckpt ck;
    uint8_t *mem;
};

/* A job with mem of `bytes`; NULL if memory runs out. */
struct persist_job *persist_job_alloc(size_t bytes);
void persist_job_free(struct persist_job *j);

/* Stamps c with this build's id and the wall clock now. */
void persist_stamp(const struct persist *p, struct ckpt *c);

/* Queues the checkpoint for writing (any thread). */
void persist_write(struct persist *p, struct persist_job *j);
/* Queues the removal of ROOM.ckpt (the room is gone for good). */
void persist_remove(struct persist *p, const char *room);
/* Waits until every job queued so far has been done. */
void persist_flush(struct persist *p);

/* True when `now` (monotonic ns) is checkpoint-every seconds past the
 * last time it said so (the first call starts the count). Lobby thread. */
bool persist_checkpoint_due(struct persist *p, int64_t now);

/* The checkpoint loaded for `room`, or NULL. Valid until
 * persist_restored_done(). Lobby thread. */
const struct ckpt *persist_restored(const struct persist *p, const char *room);
/* The i-th loaded checkpoint (any room), or NULL past the last. */
const struct ckpt *persist_restored_at(const struct persist *p, size_t i);
/* The i-th room (any order) with a command log in the record directory
 * when p was made, or NULL past the last. Lobby thread. */
const char *persist_logged_at(const struct persist *p, size_t i);
/* Reads DIR/ROOM.flog (at most RECLOG_FILE_MAX bytes) whole into *buf
 * (malloc'd, the caller frees): 1, 0 if there is none, or a negative
 * code (said on stderr). */
int persist_read_log(const struct persist *p, const char *room, uint8_t **buf, size_t *len);
/* Frees the loaded checkpoints and the list of logs. */
void persist_restored_done(struct persist *p);

/* Writes "flockd: MESSAGE" to stderr (a room that could not be restored). */
void persist_say(const struct persist *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- command logs ---- */

/*
 * Has the writer thread fdatasync() and close fd, a dup() of a log's
 * descriptor the caller gave up (PERSIST_FSYNC_INTERVAL).
 */
void persist_sync_later(struct persist *p, int fd);

/* Writes buf[0..len) to fd whole, through short writes and EINTR: 0, or
 * a negative errno. */
int persist_write_all(int fd, const uint8_t *buf, size_t len);

#endif
