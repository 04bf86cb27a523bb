/*
 * room — one simulated world, its tick thread, its command queue and its
 * latest snapshot.
 *
 * The room thread ticks on absolute deadlines (clock_nanosleep with
 * TIMER_ABSTIME). At each tick boundary it drains the command queue in
 * arrival order, applies every command, queues one reply per command,
 * steps the world unless paused, and every tick_hz/snapshot_hz ticks
 * encodes ONE snapshot into a refcounted frame that replaces the previous
 * "latest" frame. Then it calls the notify hook so the network thread can
 * hand the frame to clients.
 *
 * Never: sockets or lws calls (the network side owns those). Threading:
 * room_push(), room_push_refusal(), room_latest(), room_take_replies() and room_info() are
 * safe from any thread; everything else is for the owner thread.
 */
#ifndef FLOCKD_ROOM_H
#define FLOCKD_ROOM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "proto_command.h"
#include "proto_reply.h"
#include "proto_snapshot.h"
#include "sim.h"

/* An encoded snapshot shared by every client; free when refs drop to 0. */
struct frame {
    atomic_uint refs;
    uint64_t seq; /* 1, 2, 3 ... per room */
    uint64_t tick;
    int64_t time_us;      /* server time stamped into the snapshot */
    size_t pre;           /* headroom before the payload (LWS_PRE) */
    size_t len;           /* payload bytes */
    unsigned char data[]; /* pre bytes of headroom, then the payload */
};

/* Takes another reference / drops one (frees at zero). NULL is ignored. */
struct frame *frame_ref(struct frame *f);
void frame_release(struct frame *f);

/* A reply for one client, produced by the room thread. */
struct room_reply {
    struct room_reply *next;
    uint64_t client;
    size_t len;
    char text[];
};

struct room_config {
    const char *name;
    struct sim_config sim;
    uint32_t boids; /* spawned uniformly at start and by reset */
    double tick_hz, snapshot_hz;
    uint32_t queue_len;        /* bounded command queue */
    size_t frame_pre;          /* headroom to leave in each frame */
    void (*notify)(void *arg); /* called after a new frame or new replies */
    void *notify_arg;
};

struct room;

/*
 * Creates a room and its world (not yet ticking). Returns NULL and a
 * static reason in *err on failure. room_destroy() stops the thread if
 * running and frees everything, including queued replies and frames.
 */
struct room *room_create(const struct room_config *cfg, const char **err);
void room_destroy(struct room *r);

/* Starts the tick thread. Returns 0 or -1 (thread creation failed). */
int room_start(struct room *r);
/* Asks the tick thread to stop and joins it. Idempotent. */
void room_stop(struct room *r);

/*
 * Queues a parsed command from `client` for the next tick. Returns 0, or
 * -1 if the queue is full (the caller replies queue_full).
 */
int room_push(struct room *r, uint64_t client, const struct proto_command *cmd);

/*
 * Queues a refusal found before the room (bad JSON, bad arguments...) so it
 * is answered in turn after the client's earlier commands. The room counts
 * nothing for it (the caller already did). Returns 0, or -1 if the queue is
 * full.
 */
int room_push_refusal(struct room *r, uint64_t client, const char *id, int code,
                      const char *message);

/* The latest frame with a reference taken for the caller, or NULL. */
struct frame *room_latest(struct room *r);

/* Detaches every pending reply (a list the caller frees with free()). */
struct room_reply *room_take_replies(struct room *r);

struct room_info {
    uint64_t tick;
    uint32_t boids;
    int paused;
    float width, height;
    float polarization;
    double tick_hz, snapshot_hz;
    uint32_t capacity, max_obstacles;
    int wrap;
};

/* A consistent copy of the room's public figures (safe from any thread). */
void room_info(struct room *r, struct room_info *out);

/* The world's configuration, fixed for the room's life (any thread). */
const struct sim_config *room_sim_config(const struct room *r);

/* Writes the welcome message for `client` into buf; returns its length or
 * a negative proto status if cap is too small. Safe from any thread. */
int room_welcome(struct room *r, uint64_t client, size_t max_message, char *buf, size_t cap);

#endif
