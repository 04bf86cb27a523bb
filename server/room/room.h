/*
 * room — one simulated world, its tick thread, its command queue and its
 * latest snapshot.
 *
 * A worker of the pool (pool.h) ticks the room on absolute deadlines.
 * Commands do not wait for the tick: a queued command pokes the room's
 * task, and the first free worker drains the command queue in arrival
 * order between two ticks, applies every command, queues one reply per
 * command and calls the notify hook. A tick does the
 * same first, for what no poke took yet, then steps the world unless
 * paused, and every tick_hz/snapshot_hz ticks encodes ONE snapshot into a
 * refcounted frame (snapenc.h) that replaces the previous "latest" frame:
 * in each kind of frame its clients took within the last
 * ROOM_WANT_LINGER_S seconds (room_want()), each kind once, whatever the
 * number of clients. Then it calls the notify hook so the network thread
 * can hand the frame to clients. The room never reads the clock for its
 * logic: the time of each tick and how long the last one took come from
 * the pool (struct pool_time), or from a test; what its snapshots took to
 * encode, from the encoder's stats (timed by the clock it was given).
 *
 * A room whose work outgrows its rates degrades in pace.h's order (room_pace.c,
 * PROTOCOL.md §6.7): fewer snapshots first, down to a floor, then fewer
 * ticks a second (time dilation), each tick the same step, so that the
 * same seed and commands give the same ticks and hashes. A dilated room is
 * behind for the pool (pool_pace): it never takes the worker the rooms
 * that keep their rate need. Its members are told by `dilation` messages
 * (room_take_dilation_news()); the welcome, stats and /metrics say it.
 *
 * The room is where the simulation meets the protocol, which know nothing
 * of each other: it hands the codec plain views of its world (snapshot,
 * welcome, limits) and turns SIM_E* results into wire codes.
 *
 * The room's other callers have headers of their own: room_persist.h
 * (the lobby: command log, checkpoints, restoring) and room_relay.h (the
 * cluster: a room another node ticks).
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

#include "flockstats.h"
#include "measure.h"
#include "pool.h"
#include "proto.h"
#include "proto_command.h"
#include "proto_reply.h"
#include "proto_snapshot.h"
#include "script.h"
#include "sim.h"
#include "snapenc.h"

/* What a reply starts or restarts on the client's side besides being sent. */
enum room_reply_kind {
    ROOM_REPLY_PLAIN,    /* an ack or an error */
    ROOM_REPLY_WELCOME,  /* the welcome after a join: the client's stream starts */
    ROOM_REPLY_KEYFRAME, /* the ack of keyframe: its next frame is a key frame */
    ROOM_REPLY_VIEW,     /* the ack of view: its frames follow the view in `view` */
};

/* A reply for one client, produced by the room thread. */
struct room_reply {
    struct room_reply *next;
    uint64_t client;
    enum room_reply_kind kind;
    /* A welcome: the room's count of availability changes before it was
     * written (room_availability()); a later count means news. */
    uint32_t availability_seq;
    /* A welcome: the version of the room's dilation board before it was
     * written (room_dilation_version()); what is newer is news to it. */
    uint64_t dilation_seen;
    int64_t at_ns;               /* its command's arrival (struct room_actor); 0: not timed */
    struct proto_view_args view; /* ROOM_REPLY_VIEW: what the client looks at now */
    size_t len;
    char text[];
};

struct room;
struct room_actor;
struct room_link;
struct persist;
struct replay;

/* Version 3's tile size when a room's config names none: about the best
 * bytes a frame for a 1600 x 900 view (snapbench --views --tile; smaller
 * tiles fit the view closer, each part costs ~10 bytes of its own). */
#define ROOM_TILE 300.0f

struct room_config {
    const char *name;
    enum proto_mode mode; /* rts: every group aligns and coheres with its own group only */
    struct sim_config sim;
    uint32_t boids; /* spawned uniformly at start and by reset */
    double tick_hz, snapshot_hz;
    uint32_t queue_len;        /* bounded command queue */
    uint32_t team_cap;         /* rts: most boids of one team (groups 1..max_teams) */
    uint32_t max_teams;        /* rts */
    uint32_t team_units;       /* rts: units a new team starts with (the welcome says) */
    size_t frame_pre;          /* headroom to leave in each frame */
    uint32_t max_message;      /* announced in the welcome, with: */
    double rate;               /*   commands per second per connection */
    uint32_t burst;            /*   bucket size */
    uint32_t player_obstacles; /*   obstacles per owner */
    float tile;                /* version 3: tiles of about this many world units (0: ROOM_TILE) */
    double spectator_delay;    /* version 3, rts: seconds spectators' frames lag; 0: none */
    double view_budget;        /* version 3: bytes per second a client gets until it says */
    void (*notify)(void *arg); /* called after a new frame or new replies */
    void *notify_arg;
    struct persist *persist;      /* command logs and checkpoints (persist.h); NULL: none */
    struct replay *replay;        /* not NULL: the room plays this recording (replay.h) */
    struct measure *measure;      /* takes the flock's live measures (measure.h); NULL: none */
    const struct room_link *link; /* a cluster's node (room_relay.h); NULL: a single process */
    const struct script_source *script; /* the room's rules (§14); NULL: none */
    struct script_dir *scripts;         /* where a reload finds a new version; NULL: none */
    struct script_limits script_limits; /* each hook's budget, the script's memory */
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
    /* Another node's command: its key in the cluster (top bit set), which
     * its log records instead of the client and by which a command sent
     * again is known (applied once, acked again); 0: a client of here. */
    uint64_t origin;
};

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
    double view_budget; /* version 3: bytes per second of a view that names none */
    uint32_t capacity, max_obstacles;
    int wrap;
    double late_p99_ms;              /* how late recent ticks started, 99th percentile */
    double late_p50_ms, late_max_ms; /* ... their median and maximum */
    double tick_ms_mean;             /* how long recent ticks took (pool_time.last_ns) */
    double tick_ms_p99;
    double dilation;        /* ticks a second over tick_hz, smoothed; 1: keeping up (pace.h) */
    double snapshot_hz_now; /* snapshots a second now: snapshot_hz unless shedding */
    int has_flock;          /* flock holds a measure (cfg.measure) */
    uint64_t flock_tick;    /* the tick it was taken at */
    double flock_ms;        /* how long measuring it took */
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

/* What paces a version 3 client's frames: the bytes per second of a view
 * that names none, and the snapshots a second asked for. Fixed for the
 * room's life (any thread, no lock: a delivery asks it for every frame). */
void room_view_pacing(const struct room *r, double *budget, double *snapshot_hz);

/*
 * The wire code for a SIM_E* result of applying a command to the world:
 * SIM_ERANGE -> out_of_range, SIM_ECAPACITY -> capacity, SIM_ENOENT ->
 * not_found, SIM_EINVAL -> bad_arg, anything else negative -> internal;
 * 0 and positive results (counts, ids) -> PROTO_OK.
 */
int room_status_from_sim(int sim_result);
const char *room_name(const struct room *r);
enum proto_mode room_mode(const struct room *r);

/* Which frames a version 3 member gets (PROTOCOL.md §12.1): every boid
 * (sandbox rooms, admins), its team's fog (an rts player), or the room
 * delayed (an rts viewer). */
enum room_audience { ROOM_AUDIENCE_ALL, ROOM_AUDIENCE_TEAM, ROOM_AUDIENCE_DELAYED };
enum room_audience room_audience(const struct room *r, const struct room_actor *who);

/* Writes the welcome message for `who` into buf; returns its length or a
 * negative proto status if cap is too small. Safe from any thread. */
int room_welcome(struct room *r, const struct room_actor *who, char *buf, size_t cap);

/* ---- a room that plays a recording (cfg.replay) ------------------------------
 * Its world is the replay's (replay_world(), borrowed, at the state the
 * replay is at when the room is created); it starts paused, each step
 * plays the recording on by one tick, and it pauses itself at the end. It
 * takes ping, pause, resume, step and goto (jump to a tick); every other
 * command that would change the world is refused forbidden. */

/* ---- availability (room_relay.c) ------------------------------------------------
 * A room of a cluster that cannot reach the node ticking it is
 * unavailable (room_relay.h); its members are told so (PROTOCOL.md §6.6).
 * Any other room is available, always. */

/* Bytes of an availability reason, NUL included (longer ones are cut):
 * room for a cluster node's id and the words around it. */
#define ROOM_REASON_MAX (PROTO_NODE_MAX + 96)

/* True once per service thread after a change of r's availability (then
 * room_availability() says what it is now). Any thread. */
bool room_take_availability_news(struct room *r, unsigned thread);

/* The teams' `squads` messages (PROTOCOL.md §13.5). True once per service
 * thread after new ones were written. */
bool room_take_squads_news(struct room *r, unsigned thread);

typedef void room_text_fn(void *ctx, const char *text, size_t len);

/* Calls send() with each message written after board version `since`
 * (0: all) of team `team` (-1: every team's); returns the version now. */
uint64_t room_squads_send(struct room *r, uint64_t since, int team, room_text_fn *send, void *ctx);

/* A room script's board (PROTOCOL.md §14): true once per service thread
 * after something new was published. */
bool room_take_game_news(struct room *r, unsigned thread);

/* Calls send() with each `game` message written after board version
 * `since` for a member of `team` (the room-wide one, its team's; an
 * admin's: every team's and the `script` status); returns the version now. */
uint64_t room_game_send(struct room *r, uint64_t since, int team, bool admin, room_text_fn *send,
                        void *ctx);

/* The room's `dilation` messages (PROTOCOL.md §6.7): true once per service
 * thread after a new one was written. */
bool room_take_dilation_news(struct room *r, unsigned thread);

/* Calls send() with the room's latest dilation message if it was written
 * after board version `since`; returns the version now. Any thread. */
uint64_t room_dilation_send(struct room *r, uint64_t since, room_text_fn *send, void *ctx);

/* The dilation board's version now (read it before writing a welcome:
 * what is written after is news to its client). Any thread. */
uint64_t room_dilation_version(struct room *r);

/* The room's script, its hash and what it cost: false if it has none. */
bool room_script_info(struct room *r, char name[SCRIPT_NAME_MAX + 1], uint64_t *hash,
                      struct script_stats *stats);

/* The count of changes of r's availability so far (read it before
 * writing a welcome: a later count means news for its client). Any
 * thread. */
uint32_t room_availability_seq(struct room *r);

/* r's availability message as it is now (PROTOCOL.md §6.6) into buf (cap
 * bytes): its length, 0 if it does not fit; *seq the count of changes it
 * reflects (compare with a welcome's availability_seq). Any thread. */
int room_availability(struct room *r, char *buf, size_t cap, uint32_t *seq);

#endif
