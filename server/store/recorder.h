/*
 * recorder — one room's command log file, DIR/ROOM.flog (reclog.h's
 * bytes, FILES.md §1), appended to by the room's tick.
 *
 * The tick adds records as they happen (recorder_add copies them into a
 * buffer) and writes them once per tick (recorder_flush: one write(), so
 * a kill -9 loses at most the tick in progress). Syncing to the disk
 * follows the policy (persist.h): never, at most a second behind on the
 * writer thread, or on every flush.
 *
 * Opening an existing log reads it through first: a torn tail is cut off
 * so the next record follows the last whole one; a log that is corrupt
 * or of another format version is kept aside as FILE.corrupt and a new
 * one started; both are said on stderr. A write that fails stops the
 * recording of that room, said once on stderr; the room goes on.
 *
 * Never: reads the clock (`now` comes in). Threading: one recorder is
 * used by one thread at a time (its room's tick; open and close wherever
 * the room is created and destroyed).
 */
#ifndef FLOCKD_RECORDER_H
#define FLOCKD_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "persist.h"

struct recorder;

/* Opens DIR/ROOM.flog (DIR: persist's record directory) for appending.
 * NULL and a static reason in *err if it cannot be opened or written. */
struct recorder *recorder_open(struct persist *p, const char *room, const char **err);

/* Adds one record (as reclog_put_* wrote it) for the next flush. */
void recorder_add(struct recorder *r, const uint8_t *record, size_t len);

/* Writes what was added since the last flush and syncs as the policy
 * says; `now` is monotonic ns. */
void recorder_flush(struct recorder *r, int64_t now);

/* Flushes, syncs, closes the file and frees r. NULL is ignored. */
void recorder_close(struct recorder *r);

#endif
