/*
 * room_internal — what room.c and room_apply.c share: the private struct
 * room and the few functions one calls in the other. Included by those two
 * files only; everything else uses room.h.
 *
 * Threading: as room.h. The tick-thread fields of struct room are touched
 * only by the tick (room__apply_command runs inside it); the fields under
 * `lock` only with it held.
 */
#ifndef FLOCKD_ROOM_INTERNAL_H
#define FLOCKD_ROOM_INTERNAL_H

#include "room.h"

#include "news.h"
#include "pool.h"
#include "stepper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A queued command, or a refusal found while parsing (refused != 0): both
 * wait their turn so each client's replies leave in the order it sent. */
struct queued {
    struct room_actor who;
    int refused; /* a PROTO_E_* code, 0 for a command */
    struct proto_command cmd;
    char message[PROTO_MESSAGE_MAX];
    struct ckpt *checkpoint; /* not NULL: take a checkpoint with this id here (no command) */
};

#define LATE_SAMPLES 1024 /* recent tick start delays kept for the p99 */

/* Who added an obstacle, for ownership and quotas. */
struct obstacle_owner {
    uint32_t id;
    uint64_t owner;
};

struct room {
    struct room_config cfg;
    char name[64];
    struct sim_world *world;
    struct pool_task task;
    int scheduled;
    _Atomic(struct pool *) pool; /* the pool ticking it, for pokes; NULL: none */
    /* A bit per service thread that has not yet taken the frame or replies
     * published since (room_take_dirty); news.h. */
    _Atomic uint64_t dirty;

    /* Tick-thread state. */
    struct stepper stepper; /* one tick thread or several for the step */
    int paused;
    uint32_t steps_pending;  /* ticks to run while paused (step command) */
    uint64_t snapshot_every; /* ticks per snapshot */
    uint64_t since_snapshot;
    uint64_t frame_seq;
    atomic_uint_fast64_t published_seq; /* frame_seq of the newest snapshot, for room_want() */
    uint64_t linger;                    /* snapshots a kind is encoded after it was wanted */
    struct snapenc *enc;                /* the snapshots' encodings */
    struct snapenc_stats stats;         /* what it had cost at the last snapshot */
    atomic_uint_fast64_t wanted[FRAME_KINDS]; /* seq a kind was last wanted at; 0: never */
    struct queued *batch;                     /* commands taken off the ring this tick */
    struct obstacle_owner *owners;            /* one per obstacle, max_obstacles */
    uint32_t nowners;
    struct room_store *store; /* command log and checkpoints (room_persist.c); NULL: neither */
    uint64_t start_hash;      /* sim_hash as this batch of commands began, for pings */
    struct measure_client measurer; /* the room's side of cfg.measure */
    uint64_t measure_every;         /* ticks between offers */
    uint64_t since_measure;
    bool unmeasured;    /* the world changed since the last frame measure took */
    bool offered_empty; /* the last frame offered had no boids */

    /* A room of a cluster (room_relay.c): it relays another node's while
     * `relay`; a switch asked for waits in `switch_to` for the tick. */
    atomic_bool relay;
    bool attached;                  /* told the link it exists */
    atomic_int_fast64_t watched_ns; /* another node's clients last took frames; 0: never */
    struct room_switch *switch_to;  /* under lock */
    bool unavailable;               /* under lock: no owner reached (room_relay_set_available) */
    char unavailable_reason[ROOM_REASON_MAX]; /* under lock */
    uint32_t availability_seq;                /* under lock: changes of availability so far */
    /* A bit per service thread not yet told of a change of availability
     * (room_take_availability_news). */
    _Atomic uint64_t availability_news;
    bool has_owner_values; /* under lock: values are the owner's (room_relay_params) */

    pthread_mutex_t lock;
    struct queued *ring; /* bounded command queue */
    uint32_t head, count;
    struct room_reply *replies, **replies_tail;
    struct frame *latest;
    struct room_info info;
    struct sim_params values[SIM_GROUPS]; /* every group's parameters, for the welcome */
    float late_ms[LATE_SAMPLES];          /* rings of recent tick start delays ... */
    float run_ms[LATE_SAMPLES];           /* ... and durations */
    uint32_t late_next, late_count;
};

/* ---- room.c ---- */

/*
 * Queues text[0..len) as a reply of that kind for who->client, stamped
 * with who->at_ns (dropped for client 0, the server's own commands;
 * counted as internal if memory runs out). Takes the lock.
 */
void room__add_reply(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                     const char *text, size_t len);

/* A welcome for who: as room__add_reply, and the availability_seq read
 * before the welcome was written (struct room_reply). */
void room__add_welcome(struct room *r, const struct room_actor *who, const char *text, size_t len,
                       uint32_t availability_seq);

/* Tells the service threads that the room has news (replies, a frame):
 * its dirty flag, then the notify hook. */
void room__wake(struct room *r);

/* Brings what a welcome reports up to now: the tick and every group's
 * parameters. Tick thread; takes the lock. */
void room__refresh_welcome(struct room *r);

/* Moves every queued command into r->batch; returns how many. */
uint32_t room__take_batch(struct room *r);

/* ---- room_persist.c ---- */

/* After a command was applied at `tick` (as applied: a reset's defaults
 * resolved): logs it if it changed the room (obstacle: the id an
 * obstacle_add gave). Tick thread. */
void room__record_command(struct room *r, uint64_t client, const struct proto_command *cmd,
                          uint64_t tick, uint32_t obstacle);

/* At the end of a tick that stepped (or not): the tick's hash every N
 * ticks, then this tick's records to the file. Tick thread. */
void room__record_tick(struct room *r, bool stepped, int64_t now_ns);

/* The checkpoint a queued request asks for, taken now; frees id. */
void room__take_checkpoint(struct room *r, struct ckpt *id);

/* Closes the log with END; frees checkpoint requests still queued. */
void room__store_close(struct room *r);

/* ---- room_replay.c ---- */

/* One step of the world: the simulation's (on the pool's idle workers too
 * when the room's ticks are long: stepper.h; t as the tick was handed it),
 * or the recording's next tick (which pauses the room at the recording's
 * end). Tick thread. */
void room__step(struct room *r, const struct pool_time *t);

/* 0 if the room may apply a command of this kind: any, unless it plays a
 * recording; else PROTO_E_FORBIDDEN with *message. */
int room__replay_allows(const struct room *r, enum proto_cmd kind, const char **message);

/* goto: the recording's playback jumps to the first point at `tick`.
 * 0, or a wire code with *message. Tick thread. */
int room__goto(struct room *r, uint64_t tick, const char **message);

/* ---- room_apply.c ---- */

/* Before the batch's commands: the hash a ping among them reports. */
void room__hash_for_pings(struct room *r, uint32_t n);

/* Applies one queued command (or answers a refusal queued in its turn) and
 * queues its ack or error, plus the welcome after a join. Tick thread. */
void room__apply_command(struct room *r, const struct queued *q);

/* The kinds of frame some client took within the last linger snapshots
 * before seq (room.c). */
unsigned room__wanted_kinds(struct room *r, uint64_t seq);

/* room_relay.c: at the start of a tick, a switch asked for; then true if
 * the room relays (the tick has handed on its commands and is done). */
bool room__relay_tick(struct room *r);
void room__relay_destroy(struct room *r);

#endif
