/*
 * room — one simulated world, its tick thread, its command queue and its
 * latest snapshot.
 *
 * A worker of the pool (pool.h) ticks the room on absolute deadlines. At
 * each tick boundary it drains the command queue in
 * arrival order, applies every command, queues one reply per command,
 * steps the world unless paused, and every tick_hz/snapshot_hz ticks
 * encodes ONE snapshot into a refcounted frame that replaces the previous
 * "latest" frame. Then it calls the notify hook so the network thread can
 * hand the frame to clients. The room never reads the clock: the time of
 * each tick comes from the pool (struct pool_time), or from a test.
 *
 * The room is where the simulation meets the protocol, which know nothing
 * of each other: it hands the codec plain views of its world (snapshot,
 * welcome, limits) and turns SIM_E* results into wire codes.
 *
 * Never: sockets or lws calls (the network side owns those); membership
 * and roles (the lobby decides those and tells the room who sent what).
 * Threading: room_push*(), room_latest(), room_take_replies(),
 * room_take_dirty(), room_info() and room_welcome() are safe from any
 * thread; the world is touched only by the tick, one worker at a time.
 */
#ifndef FLOCKD_ROOM_H
#define FLOCKD_ROOM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
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
    int welcome; /* this is the welcome after a join: the client's stream starts */
    size_t len;
    char text[];
};

struct room_config {
    const char *name;
    enum proto_mode mode; /* rts: every group aligns and coheres with its own group only */
    struct sim_config sim;
    uint32_t boids; /* spawned uniformly at start and by reset */
    double tick_hz, snapshot_hz;
    uint32_t queue_len;        /* bounded command queue */
    uint32_t team_cap;         /* rts: most boids of one team (groups 1..max_teams) */
    uint32_t max_teams;        /* rts */
    size_t frame_pre;          /* headroom to leave in each frame */
    uint32_t max_message;      /* announced in the welcome, with: */
    double rate;               /*   commands per second per connection */
    uint32_t burst;            /*   bucket size */
    uint32_t player_obstacles; /*   obstacles per owner */
    void (*notify)(void *arg); /* called after a new frame or new replies */
    void *notify_arg;
};

/* Who sent a command, as the room's members table at the network side
 * knows it. The room checks ownership and quotas with it. */
struct room_actor {
    uint64_t client; /* 0: the server itself (no reply) */
    enum proto_role role;
    int team;       /* rts player's group; -1: none */
    uint64_t owner; /* obstacles added are owned by this key */
};

struct room;

/*
 * Creates a room and its world (not yet ticking). Returns NULL and a
 * static reason in *err on failure. room_destroy() frees everything,
 * including queued replies and frames; unschedule the room first.
 */
struct room *room_create(const struct room_config *cfg, const char **err);
void room_destroy(struct room *r);

/* Starts ticking the room on the pool's workers / stops (waits for a tick
 * in progress). Returns 0 or PROTO_E_CAPACITY (the pool is full). */
int room_schedule(struct room *r, struct pool *p);
void room_unschedule(struct room *r, struct pool *p);

/*
 * One tick boundary started at *t: what a pool worker runs every period
 * while the room is scheduled. t->late_ns feeds room_info's lateness and
 * t->wall_us stamps a snapshot published by this tick. Tests drive an
 * unscheduled room by calling it with times of their choosing; never call
 * it for a scheduled room.
 */
void room_tick(struct room *r, const struct pool_time *t);

/*
 * Queues a parsed command from `who` for the next tick. Returns 0, or
 * PROTO_E_QUEUE_FULL (the caller replies queue_full). Commands from the
 * server itself (who->client == 0) use a reserve the clients cannot fill.
 */
int room_push(struct room *r, const struct room_actor *who, const struct proto_command *cmd);

/*
 * Queues a refusal found before the room (bad JSON, bad arguments...) so it
 * is answered in turn after the client's earlier commands. The room counts
 * nothing for it (the caller already did). Returns 0, or PROTO_E_QUEUE_FULL.
 */
int room_push_refusal(struct room *r, uint64_t client, const char *id, int code,
                      const char *message);

/* The latest frame with a reference taken for the caller, or NULL. */
struct frame *room_latest(struct room *r);

/* Detaches every pending reply (a list the caller frees with free()). */
struct room_reply *room_take_replies(struct room *r);

/* 1 if the room produced a frame or replies since the last call (any thread). */
int room_take_dirty(struct room *r);

struct room_info {
    uint64_t tick;
    uint32_t boids;
    int paused;
    float width, height;
    float polarization;
    double tick_hz, snapshot_hz;
    uint32_t capacity, max_obstacles;
    int wrap;
    double late_p99_ms; /* how late recent ticks started, 99th percentile */
};

/* A consistent copy of the room's public figures (safe from any thread). */
void room_info(struct room *r, struct room_info *out);

/* The limits the room's commands are parsed against (proto_command_parse):
 * its world's size and capacity, and max_message, the server's limit on a
 * client message. Fixed for the room's life (any thread). */
void room_limits(const struct room *r, size_t max_message, struct proto_limits *out);

/*
 * The wire code for a SIM_E* result of applying a command to the world:
 * SIM_ERANGE -> out_of_range, SIM_ECAPACITY -> capacity, SIM_ENOENT ->
 * not_found, SIM_EINVAL -> bad_arg, anything else negative -> internal;
 * 0 and positive results (counts, ids) -> PROTO_OK.
 */
int room_status_from_sim(int sim_result);
const char *room_name(const struct room *r);
enum proto_mode room_mode(const struct room *r);

/* Writes the welcome message for `who` into buf; returns its length or a
 * negative proto status if cap is too small. Safe from any thread. */
int room_welcome(struct room *r, const struct room_actor *who, char *buf, size_t cap);

#endif
