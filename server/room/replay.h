/*
 * replay — a room's command log (reclog.h) played back on a world of its
 * own: the records in order, the world stepped between them as their
 * ticks say, each recorded hash compared on the way.
 *
 * A log holds one or more segments, each opened by a BEGIN record with
 * the room's state as a checkpoint: the room started fresh, or carried on
 * from a checkpoint after a restart. Playing a record at tick T first
 * steps the world up to T; a COMMAND is applied as the room applied it; a
 * HASH or END is compared with the world's sim_hash (with verify on); a
 * CHECKPOINT remembers the hash of the state it was taken from, and a
 * BEGIN that restored that checkpoint is compared with it: so a log
 * replays across a crash and its restore.
 *
 * Positions are counted in steps from the start of the log (a reset sets
 * the tick back, a restore too; the step count only grows).
 * replay_seek() goes to any step: from the latest of the states it kept
 * while playing (at most REPLAY_KEPT, spaced wider as the log grows) and
 * forward from there. That is what serving a recording to viewers needs.
 *
 * Never: I/O, clocks. Threading: one thread at a time per replay.
 * Errors: 0/1 or a negative PROTO_E_* code; constructors NULL and a reason.
 */
#ifndef FLOCKD_REPLAY_H
#define FLOCKD_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "sim.h"

#define REPLAY_KEPT     64           /* states kept for seeking */
#define REPLAY_KEPT_MAX (256u << 20) /* bytes they may take together */

struct replay;

/*
 * Reads the log in buf[0..len) whole: every record (reclog_next, the torn
 * rule included), every BEGIN's checkpoint (ckpt_decode); the first
 * record must be a BEGIN. Takes buf (malloc'd; freed with the replay).
 * NULL on refusal, with the reason and the offset of the bad record in
 * why[0..n).
 */
struct replay *replay_open(uint8_t *buf, size_t len, char *why, size_t n);
void replay_destroy(struct replay *rp);

/* How many segments (BEGIN records) the log has, and the build of each. */
size_t replay_segments(const struct replay *rp);
const char *replay_build(const struct replay *rp, size_t segment);
/* True if the log ended in a torn record (ignored). */
bool replay_is_torn(const struct replay *rp);
/* True if every segment's world has the same config (size, capacity...). */
bool replay_is_one_world(const struct replay *rp);
/* The first segment's checkpoint (its world config, rates, mode). */
const struct ckpt *replay_first(const struct replay *rp);
/* The lowest and highest tick the log reaches (fixed when it is opened:
 * safe from any thread while another plays it). */
void replay_tick_range(const struct replay *rp, uint64_t *first, uint64_t *last);

/* With verify on, every HASH and END is compared, and a restore with the
 * checkpoint it came from. */
void replay_set_verify(struct replay *rp, bool verify);

/*
 * Plays records until the world took one step (returns 1), or returns 0
 * when the log has no more records or the world's tick is `until` or
 * more before a step or a command, or a negative code at a divergence
 * (PROTO_E_HASH_MISMATCH: a hash differs; PROTO_E_BAD_VALUE: a command
 * the world refuses, an obstacle id that differs, a record behind the
 * world's tick) with replay_divergence() saying where.
 */
int replay_advance(struct replay *rp, uint64_t until);

/* The world as played so far (valid until the next call). */
struct sim_world *replay_world(const struct replay *rp);
uint64_t replay_steps(const struct replay *rp);    /* steps taken since the start */
uint64_t replay_verified(const struct replay *rp); /* hashes compared and equal */
/* True after a divergence, with its tick and reason. */
bool replay_divergence(const struct replay *rp, uint64_t *tick, const char **why);

/* ---- resuming a room that stopped without closing ---- */

/* True if the log's last record is an END: its room closed in order. */
bool replay_is_closed(const struct replay *rp);

/*
 * Plays a fresh replay to where its room carries on after a crash: from
 * the checkpoint c when the log's last segment records taking it (a
 * CHECKPOINT of its sequence number at its tick), else from that
 * segment's BEGIN; then every record to the end of the log, and the world
 * stepped on (as the room ticks: rules, step, pause) until `tick` if the
 * records end before it. *from is set to the state it started from (*c,
 * or the BEGIN's, pointing into the log: valid while the replay lives);
 * *hash_at to the world's sim_hash when it was at `tick` before that
 * tick's commands (the state a frame of that tick showed), 0 if it was
 * never there. 0, or a negative code as replay_advance.
 */
int replay_play_on(struct replay *rp, const struct ckpt *c, uint64_t tick, struct ckpt *from,
                   uint64_t *hash_at);
/* The script as played (the replay owns it), NULL: none. */
struct script *replay_script(const struct replay *rp);
/* The room's pause and the steps a `step` still has to run, as played. */
void replay_pause_state(const struct replay *rp, bool *paused, uint32_t *steps_pending);

/* ---- seeking ---- */

/* Steps from the start to the end of the log. */
uint64_t replay_total_steps(const struct replay *rp);
/* The first step at which the room's tick is `tick`: 0 or PROTO_E_NOT_FOUND. */
int replay_step_of_tick(const struct replay *rp, uint64_t tick, uint64_t *step);
/* Goes to `step` (<= total): 0, or a negative code as replay_advance. */
int replay_seek(struct replay *rp, uint64_t step);

#endif
