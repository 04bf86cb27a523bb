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

#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A queued command, or a refusal found while parsing (refused != 0): both
 * wait their turn so each client's replies leave in the order it sent. */
struct queued {
    struct room_actor who;
    int refused; /* a PROTO_E_* code, 0 for a command */
    struct proto_command cmd;
    char message[PROTO_MESSAGE_MAX];
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
    atomic_int dirty;

    /* Tick-thread state. */
    int paused;
    uint32_t steps_pending;  /* ticks to run while paused (step command) */
    uint64_t snapshot_every; /* ticks per snapshot */
    uint64_t since_snapshot;
    uint64_t frame_seq;
    unsigned char *scratch; /* snapshot encode buffer */
    size_t scratch_cap;
    struct proto_obstacle *view_obstacles;          /* the world's, for the codec */
    struct proto_target view_targets[PROTO_GROUPS]; /* its active targets, for the codec */
    struct queued *batch;                           /* commands taken off the ring this tick */
    struct obstacle_owner *owners;                  /* one per obstacle, max_obstacles */
    uint32_t nowners;

    pthread_mutex_t lock;
    struct queued *ring; /* bounded command queue */
    uint32_t head, count;
    struct room_reply *replies, **replies_tail;
    struct frame *latest;
    struct room_info info;
    struct sim_params values;    /* group 0's parameters, for the welcome */
    float late_ms[LATE_SAMPLES]; /* ring of recent tick start delays */
    uint32_t late_next, late_count;
};

/* ---- room.c ---- */

/*
 * Queues text[0..len) as a reply for client (dropped for client 0, the
 * server's own commands; counted as internal if memory runs out). welcome:
 * it is the welcome after a join. Takes the lock.
 */
void room__add_reply(struct room *r, uint64_t client, int welcome, const char *text, size_t len);

/* Brings what a welcome reports up to now: the tick and group 0's
 * parameters. Tick thread; takes the lock. */
void room__refresh_welcome(struct room *r);

/* What a room starts with and a reset restores, in a world just created or
 * reset: its mode's parameters and n boids of group 0 spread over it. */
void room__populate(struct room *r, uint32_t n);

/* ---- room_apply.c ---- */

/* Applies one queued command (or answers a refusal queued in its turn) and
 * queues its ack or error, plus the welcome after a join. Tick thread. */
void room__apply_command(struct room *r, const struct queued *q);

#endif
