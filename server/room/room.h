/*
 * room — one simulated world, its tick thread, its command queue and its
 * latest snapshot.
 *
 * A worker of the pool (pool.h) ticks the room on absolute deadlines.
 * Commands do not wait for the tick: a queued command pokes the room's
 * task, and the first free worker drains the command queue in arrival
 * order between two ticks, applies every command, queues one reply per
 * command and calls the notify hook (room_apply_queued). A tick does the
 * same first, for what no poke took yet, then steps the world unless
 * paused, and every tick_hz/snapshot_hz ticks encodes ONE snapshot into a
 * refcounted frame (snapenc.h) that replaces the previous "latest" frame:
 * in each kind of frame its clients took within the last
 * ROOM_WANT_LINGER_S seconds (room_want()), each kind once, whatever the
 * number of clients. Then it calls the notify hook so the network thread
 * can hand the frame to clients. The room never reads the clock for its
 * logic: the time of each tick comes from the pool (struct pool_time), or
 * from a test.
 *
 * The room is where the simulation meets the protocol, which know nothing
 * of each other: it hands the codec plain views of its world (snapshot,
 * welcome, limits) and turns SIM_E* results into wire codes.
 *
 * Never: sockets or lws calls (the network side owns those); membership
 * and roles (the lobby decides those and tells the room who sent what).
 * Threading: room_push*(), room_latest(), room_want(), room_take_replies(),
 * room_take_dirty(), room_info() and room_welcome() are safe from any
 * thread; the world is touched only by the tick, one worker at a time.
 */
#ifndef FLOCKD_ROOM_H
#define FLOCKD_ROOM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "flockstats.h"
#include "measure.h"
#include "pool.h"
#include "proto.h"
#include "proto_command.h"
#include "proto_reply.h"
#include "proto_snapshot.h"
#include "sim.h"
#include "snapenc.h"

/* What a reply starts or restarts on the client's side besides being sent. */
enum room_reply_kind {
    ROOM_REPLY_PLAIN,    /* an ack or an error */
    ROOM_REPLY_WELCOME,  /* the welcome after a join: the client's stream starts */
    ROOM_REPLY_KEYFRAME, /* the ack of keyframe: its next frame is a key frame */
};

/* A reply for one client, produced by the room thread. */
struct room_reply {
    struct room_reply *next;
    uint64_t client;
    enum room_reply_kind kind;
    /* A welcome: the room's count of availability changes before it was
     * written (room_availability()); a later count means news. */
    uint32_t availability_seq;
    int64_t at_ns; /* its command's arrival (struct room_actor); 0: not timed */
    size_t len;
    char text[];
};

struct room;
struct room_actor;

/* A room another node of a cluster placed on this one (room_link.adopt). */
struct room_adoption {
    char name[PROTO_ROOM_MAX + 1];
    enum proto_mode mode;
    uint32_t boids;
    char password[PROTO_TOKEN_MAX + 1];
};

/*
 * A room's link to a cluster of flockd nodes (cluster.h); NULL in a single
 * process. Each hook is called on the room's tick thread and must not block.
 */
struct room_link {
    void *arg;
    /* The room ticks here: a new frame to publish for the other nodes. */
    void (*frame)(void *arg, struct room *r, const struct frame *f);
    /* The room relays another node's: a command (or, with refused != 0, a
     * refusal with its message) of a client of this node for the owner.
     * 0 once sent; a negative wire code to answer the client at once. */
    int (*forward)(void *arg, struct room *r, const struct room_actor *who,
                   const struct proto_command *cmd, int refused, const char *message);
    /* A reply for client: true if it is another node's client and the link
     * took the reply, false to answer a client of this node as usual. */
    bool (*reply)(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                  size_t len);
    /* The room was created (its name set) / is about to be freed; the
     * network's thread. */
    void (*attach)(void *arg, struct room *r);
    void (*detach)(void *arg, struct room *r);
    /* The network's thread, at a join of a room this node does not have:
     * 1 if another node has it, with *ck its last checkpoint (malloc'd,
     * the caller frees it; NULL if none yet) of *len bytes; 0 if the
     * cluster has no such room. May wait on the cluster briefly. */
    int (*fetch)(void *arg, const char *name, uint8_t **ck, size_t *len);
    /* The network's thread, before a join creates a room: the cluster may
     * place it on a less loaded node (1: placed there, this node's copy
     * relays it; 0: it is this node's). May wait on the cluster briefly. */
    int (*place)(void *arg, const char *name, enum proto_mode mode, uint32_t boids,
                 const char *password);
    /* The network's thread: a room another node placed here, to open
     * (1 and *out), or 0 when none waits. */
    int (*adopt)(void *arg, struct room_adoption *out);
    /* The room ticks here and its parameters may have changed (a command,
     * a reset, a restore, a join): room_values() has them. Tick thread. */
    void (*params)(void *arg, struct room *r);
    /* The network's thread: 1 and the node's id in node (cap bytes) if
     * another node ticks r or was chosen to (its RTS teams are that
     * node's), 0 if this node does or will. */
    int (*owner_of)(void *arg, struct room *r, char *node, size_t cap);
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
    struct persist *persist;      /* command logs and checkpoints (persist.h); NULL: none */
    struct replay *replay;        /* not NULL: the room plays this recording (room_replay.c) */
    struct measure *measure;      /* takes the flock's live measures (measure.h); NULL: none */
    const struct room_link *link; /* a cluster's node (room_relay.c); NULL: a single process */
};

/* How often a room offers its flock to be measured, per second. */
#define ROOM_MEASURE_HZ 4.0

/* Who sent a command, as the room's members table at the network side
 * knows it. The room checks ownership and quotas with it. */
struct room_actor {
    uint64_t client;   /* 0: the server itself (no reply) */
    unsigned protocol; /* the version its connection speaks (its welcome says so); 0: 1 */
    enum proto_role role;
    int team;       /* rts player's group; -1: none */
    uint64_t owner; /* obstacles added are owned by this key */
    int64_t at_ns;  /* when its command arrived (clock.h); 0: not timed */
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
 * Applies (or, in a relay, forwards) every queued command and wakes the
 * service threads for the replies: what a poke runs between ticks, and
 * each tick before its step. Returns true for a relay, whose tick ends
 * there. The same rule as room_tick: tests only, for a scheduled room.
 */
bool room_apply_queued(struct room *r);

/*
 * Queues a parsed command from `who`, to be applied before the next step
 * (at once, if a worker is free). Returns 0, or
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

/* Seconds a kind of frame is still encoded after a client last took it. */
#define ROOM_WANT_LINGER_S 2.0

/*
 * A client takes (or would have taken) a frame of this kind (FRAME_*)
 * of the frame with sequence number seq: the room encodes that kind in
 * its snapshots for the next ROOM_WANT_LINGER_S seconds. A kind it did not
 * encode is there from its next snapshot on. Any thread.
 */
void room_want(struct room *r, unsigned kind, uint64_t seq);

/* Detaches every pending reply (a list the caller frees with free()). */
struct room_reply *room_take_replies(struct room *r);

/* Detaches the pending replies to the clients of one service thread of
 * `threads` (client % threads == thread), in order; the others stay. A
 * list the caller frees with free(). Any thread. */
struct room_reply *room_take_replies_of(struct room *r, unsigned thread, unsigned threads);

/* 1 if the room produced a frame or replies since service thread `thread`
 * (0..63) last asked, else 0; each thread has its own flag (any thread). */
int room_take_dirty(struct room *r, unsigned thread);

struct room_info {
    uint64_t tick;
    uint32_t boids;
    int paused;
    float width, height;
    float polarization;
    double tick_hz, snapshot_hz;
    uint32_t capacity, max_obstacles;
    int wrap;
    double late_p99_ms;  /* how late recent ticks started, 99th percentile */
    double tick_ms_mean; /* how long recent ticks took (pool_time.last_ns) */
    double tick_ms_p99;
    int has_flock;                  /* flock holds a measure (cfg.measure) */
    uint64_t flock_tick;            /* the tick it was taken at */
    double flock_ms;                /* how long measuring it took */
    struct flockstats_result flock; /* the flock's measures (flockstats.h) */
};

/* A consistent copy of the room's public figures (safe from any thread). */
void room_info(struct room *r, struct room_info *out);

/* The flock's measures in info (info->has_flock set) as the protocol
 * reports them. */
void room_flock(const struct room_info *info, struct proto_flock *out);

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

/* ---- a room that plays a recording (cfg.replay; room_replay.c) ------------
 * Its world is the replay's (replay_world(), borrowed, at the state the
 * replay is at when the room is created); it starts paused, each step
 * plays the recording on by one tick, and it pauses itself at the end. It takes ping,
 * pause, resume, step and goto (jump to a tick); every other command that
 * would change the world is refused forbidden. */

/* ---- command log and checkpoints (room_persist.c) -------------------------
 * `id` is the lobby's part of a checkpoint (checkpoint.h): the room's name,
 * mode, password and teams; the room adds its own state and its world. */

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

/* ---- a room of a cluster (cfg.link; room_relay.c) ---------------------------
 * A room with a link starts as a relay: it ticks without stepping its
 * world, answers joins itself, hands every other command to the link for
 * the owner node and serves the frames the link gives it. The cluster
 * makes it the owner (and back) with room_relay_set(); the switch happens
 * before the room's next commands are applied or forwarded (a tick or a
 * poke, room_apply_queued). */

/*
 * Asks the room to tick its world (owner, with the checkpoint ck of len
 * bytes to restore first, or NULL to carry on from its own state) or to
 * relay another node's (owner false; ck ignored). Takes ck (malloc'd).
 * Any thread; the last request before a tick wins.
 */
void room_relay_set(struct room *r, bool owner, uint8_t *ck, size_t len);

/* True while the room relays another node's (any thread). */
bool room_is_relay(const struct room *r);

/* A frame from the owner becomes the latest (the room takes the caller's
 * reference); its tick, and the boids and pause its parts say, show in
 * room_info(). Any thread. */
void room_relay_frame(struct room *r, struct frame *f, uint32_t boids, bool paused);

/* A reply from the owner for a client of this node. Any thread. */
void room_relay_reply(struct room *r, uint64_t client, enum room_reply_kind kind, const char *text,
                      size_t len);

/* The kinds of frame (bit k: SNAPENC kind k) this node's clients took
 * lately, relative to the latest frame (any thread). */
unsigned room_relay_wanted(struct room *r);

/* Another node's clients take these kinds (bit k: kind k) at `now`
 * (monotonic ns): encode them from the next snapshot on, as room_want()
 * (any thread). */
void room_relay_want(struct room *r, unsigned kinds, int64_t now);

/* How long after the last room_relay_want() the room counts as watched
 * by another node's clients, and whether it is at `now` (then it does not
 * expire, even without members here). */
#define ROOM_WATCHED_S 5.0
bool room_relay_is_watched(struct room *r, int64_t now);

/*
 * The relayed room lost its owner (NATS lost, or no frame from it for a
 * while: available false, with a reason for people) or has it again. On a
 * change, every service thread is woken to tell each of its members that
 * has the room's welcome (PROTOCOL.md §6.6, room_take_availability_news())
 * and later welcomes say so. Any thread; a room is available when made.
 */
void room_relay_set_available(struct room *r, bool available, const char *reason);

/* Bytes of an availability reason, NUL included (longer ones are cut):
 * room for a cluster node's id and the words around it. */
#define ROOM_REASON_MAX (PROTO_NODE_MAX + 96)

/* True once per service thread after a change of r's availability (then
 * room_availability() says what it is now). Any thread. */
bool room_take_availability_news(struct room *r, unsigned thread);

/* The count of changes of r's availability so far (read it before
 * writing a welcome: a later count means news for its client). Any
 * thread. */
uint32_t room_availability_seq(struct room *r);

/* r's availability message as it is now (PROTOCOL.md §6.6) into buf (cap
 * bytes): its length, 0 if it does not fit; *seq the count of changes it
 * reflects (compare with a welcome's availability_seq). Any thread. */
int room_availability(struct room *r, char *buf, size_t cap, uint32_t *seq);

/* Every group's parameters as welcomes show them, into out. Any thread. */
void room_values(struct room *r, struct sim_params out[SIM_GROUPS]);

/* The owner's parameters (every group) for the relay's welcomes, which
 * show them instead of its copy's from then on, until the room ticks
 * here. Any thread. */
void room_relay_params(struct room *r, const struct sim_params values[SIM_GROUPS]);

#endif
