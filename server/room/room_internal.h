/*
 * room_internal — the private parts of a room (room.h), shared by the four
 * files one room is made of, each a concern of the same struct room on
 * the same tick thread:
 *
 *   room.c          the queue, the tick, replies, frames, the life cycle
 *   room_apply.c    a command's turn: the room's checks and bookkeeping
 *                   around the world's part (apply.h), its ack
 *   room_persist.c  the command log, checkpoints, restoring (room_persist.h)
 *   room_relay.c    a room of a cluster (room_relay.h): its relay state,
 *                   private to that file, and its switches
 *   room_squads.c   the teams' squads messages
 *   room_script.c   the room's script (script.h) and what it publishes
 *   room_board.c    the texts those two write for members (room_board.h)
 *   room_pace.c     its rates under load (pace.h) and its `dilation`
 *                   messages
 *
 * Nothing else includes this header. replay.c and apply.c are modules of
 * their own (replay.h, apply.h) that know nothing of a room.
 *
 * Calls run one way. room.c calls the other three through the functions
 * listed under their names below; they call back only the helpers room.c
 * exports here (and room.h's public functions of room.c), never one
 * another: a tick that applies, records and relays is room.c's sequence,
 * in room.c.
 *
 * Threading: as room.h. The tick-thread fields of struct room are touched
 * only by the tick (a command's turn runs inside it); the fields under
 * `lock` only with it held. The relay's state has a lock of its own
 * (room_relay.c).
 */
#ifndef FLOCKD_ROOM_INTERNAL_H
#define FLOCKD_ROOM_INTERNAL_H

#include "room.h"
#include "room_persist.h"
#include "room_relay.h"

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

/* A command the room applied, for its log: as applied (a reset with its
 * defaults resolved), the tick it took effect at, the id an obstacle_add
 * gave. */
struct room_applied {
    struct proto_command cmd;
    uint64_t tick;
    uint32_t obstacle;
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
    struct room_relay *relay; /* room_relay.c's; NULL: not of a cluster */
    /* room_squads.c's; NULL: no squad yet. Set once by the room thread,
     * read by the service threads. */
    _Atomic(struct room_squads *) squads;
    struct room_store *store;   /* room_persist.c's; NULL: neither log nor checkpoints */
    struct room_script *script; /* room_script.c's; NULL: the room runs no script */
    struct room_pace *pace;     /* room_pace.c's */

    /* Tick-thread state. */
    struct stepper stepper; /* one tick thread or several for the step */
    int paused;
    uint32_t steps_pending; /* ticks to run while paused (step command) */
    /* Snapshots at snapshot_hz, spread over the ticks: each tick adds
     * snapshot_hz to the phase, and one that takes it to tick_hz publishes
     * (20 a second of a 30 Hz room: 2 ticks of every 3). */
    double snapshot_phase;
    int64_t snapshot_ns; /* what encoding the last tick's snapshot took; -1: it made none */
    uint64_t frame_seq;
    atomic_uint_fast64_t published_seq; /* frame_seq of the newest snapshot, for room_want() */
    uint64_t linger;                    /* snapshots a kind is encoded after it was wanted */
    struct snapenc *enc;                /* the snapshots' encodings */
    struct tiles_grid grid;             /* version 3's tiles (fixed for the room's life) */
    struct snapenc_stats stats;         /* what it had cost at the last snapshot */
    atomic_uint_fast64_t wanted[FRAME_KINDS + 1]; /* seq a kind (or FRAME_WANT_V3) was last
                                                   wanted at; 0: never */
    struct queued *batch;                         /* commands taken off the ring this tick */
    struct obstacle_owner *owners;                /* one per obstacle, max_obstacles */
    uint32_t nowners;
    uint64_t start_hash;            /* sim_hash as this batch of commands began, for pings */
    struct measure_client measurer; /* the room's side of cfg.measure */
    uint64_t measure_every;         /* ticks between offers */
    uint64_t since_measure;
    bool unmeasured;    /* the world changed since the last frame measure took */
    bool offered_empty; /* the last frame offered had no boids */
    /* A batch's replies while it runs, held until the cluster's command log
     * (cfg.link->log) has its records: they leave after, or as refusals. */
    bool staging;
    struct staged *staged, **staged_tail, *staged_last;

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

/* ---- room.c: the helpers the others call back ---- */

/*
 * Queues text[0..len) as a reply of that kind for who->client, stamped
 * with who->at_ns (dropped for client 0, the server's own commands;
 * counted as internal if memory runs out). Takes the lock.
 */
void room__add_reply(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                     const char *text, size_t len);

/* The same from any thread, never held with a batch's replies. */
void room__add_reply_now(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                         const char *text, size_t len);

/* The ack of view (text) with the view it installs for the client, as
 * room__add_reply() (ROOM_REPLY_VIEW). */
void room__add_view_reply(struct room *r, const struct room_actor *who, const char *text,
                          size_t len, const struct proto_view_args *view);

/* The welcome after who's join, queued after its ack: it starts the
 * client's stream. Tick thread. */
void room__send_welcome(struct room *r, const struct room_actor *who);

/* Tells the service threads that the room has news (replies, a frame):
 * its dirty flag, then the notify hook. */
void room__wake(struct room *r);

/* Brings what a welcome reports up to now: the tick and every group's
 * parameters (and tells the link, if the room ticks for a cluster).
 * Tick thread; takes the lock. */
void room__refresh_welcome(struct room *r);

/* Brings room_info() up to the world as it is: tick, boids, pause,
 * polarization. Tick thread; takes the lock. */
void room__update_info(struct room *r);

/* The sequence number of the latest frame; 0: none yet. Takes the lock. */
uint64_t room__latest_seq(struct room *r);

/* The kinds of frame some client took within the last linger snapshots
 * before seq. */
unsigned room__wanted_kinds(struct room *r, uint64_t seq);

/* A frame made elsewhere (a relay's, from the owner) becomes the latest:
 * the room takes the caller's reference. room_info() shows its tick, and
 * with has_counts the boids and pause it says; the service threads are
 * woken. Any thread. */
void room__show_frame(struct room *r, struct frame *f, bool has_counts, uint32_t boids,
                      bool paused);

/* ---- room_apply.c ---- */

/* Before the batch's n commands: the hash a ping among them reports. */
void room__hash_for_pings(struct room *r, uint32_t n);

/*
 * A queued command's turn (or a refusal's, queued in its turn): applies
 * it, queues its ack or error and, after a join, the welcome. True if it
 * was applied, with *out what the log records of it (if its kind is
 * recorded, reclog.h). Tick thread.
 */
bool room__apply_command(struct room *r, const struct queued *q, struct room_applied *out);

/* ---- room_persist.c ---- */

/* Commands of other nodes the room remembers having applied: a resend of
 * one (after a failover, or a reply lost) is acked again, not applied. */
#define ROOM_ORIGINS 4096
struct room_origin {
    uint64_t origin, tick;
    uint32_t obstacle; /* the id an obstacle_add gave */
};
/* Notes the origin of a command of another node applied at tick (the
 * obstacle it added); finds one; forgets them all (a takeover: what the
 * room holds is the log's, not what it applied before). Tick thread. */
void room__origin_note(struct room *r, uint64_t origin, uint64_t tick, uint32_t obstacle);
bool room__origin_find(const struct room *r, uint64_t origin, struct room_origin *out);
void room__origin_forget(struct room *r);

/* True if the room writes a cluster's command log (it ticks for a cluster
 * whose link logs). Tick thread. */
bool room__logs_to_cluster(struct room *r);

/* Hands the records of this batch to the cluster's command log and waits
 * until they are stored: 0 (none or stored), or the link's negative code
 * (room_link.log): they are not stored, or may not be, and the room no
 * longer ticks for the cluster. A checkpoint the batch marks goes to the
 * writer if it is stored, else is dropped. Tick thread. */
int room__clog_flush(struct room *r);

/* Forgets the records not yet handed to the cluster's log and the
 * checkpoint they mark: the room switches between owner and relay (they
 * are nobody's now: the owner of then carries on from the log). Tick
 * thread. */
void room__clog_reset(struct room *r);

/* After a command was applied: logs it if the log records its kind. Tick
 * thread. */
void room__record_command(struct room *r, uint64_t client, const struct room_applied *a);

/* At the end of a tick that stepped (or not): the tick's hash every N
 * ticks, then this tick's records to the file. Tick thread. */
void room__record_tick(struct room *r, bool stepped, int64_t now_ns);

/* Writes what the log holds so far (flockd stopping). */
void room__record_flush(struct room *r);

/* The checkpoint with this id, taken now: the room copied for the
 * writer thread, a mark in the log; in a room that writes a cluster's
 * log the copy waits for the mark to be stored (room__clog_flush).
 * Tick thread. */
void room__take_checkpoint(struct room *r, const struct ckpt *id);

/* What the room carries on from as it takes the room over (t has a
 * checkpoint): the checkpoint, the command log's records after it, the
 * world stepped on to t->tick (room_resume_log); the checkpoint alone if
 * the log does not replay from it. Said on stderr, and why not if nothing
 * can be restored (the room then carries on from its own state). Tick
 * thread. */
void room__resume_from(struct room *r, const struct room_takeover *t);

/* The room's script as it runs from now on, in the log (SCRIPT). */
void room__record_script(struct room *r);

/* Closes the log with END and frees the store. */
void room__store_close(struct room *r);

/* ---- room_relay.c ---- */

/* A switch between relaying and ticking (room_relay_set). */
struct room_switch {
    bool owner;                /* tick the world here; false: relay the owner's */
    struct room_takeover from; /* owner: what to carry on from (its ck NULL: its own state) */
    bool stepped_down;         /* owner: a switch to relay came first, not yet taken: what
                                * the room ticked since holds records the log may lack */
};

/* The relay's state for a room with cfg.link, which starts as a relay,
 * and the link told the room exists. 0, or PROTO_E_INTERNAL (out of
 * memory). */
int room__relay_create(struct room *r);

/* Tells the link the room goes, and frees the relay's state. */
void room__relay_destroy(struct room *r);

/* True while the room relays another node's (any thread). */
bool room__is_relay(const struct room *r);

/* The switch asked for since the last tick, if any, into *sw (the caller
 * frees sw->from's buffers): true, or false for none. Tick thread. */
bool room__relay_take_switch(struct room *r, struct room_switch *sw);

/* The room relays (owner false) or ticks from now on; ticking, its
 * welcomes show its own world's parameters again. Tick thread. */
void room__relay_become(struct room *r, bool owner);

/* One queued item of a relay at its turn: true once handed to the link
 * for the owner (an error answered at once if it cannot go) or dropped
 * (a checkpoint request, freed; a command of the server itself); false
 * for a join, which the room answers itself. Tick thread. */
bool room__relay_forward(struct room *r, const struct queued *q);

/* True if welcomes show the owner's parameters (a relay that has them),
 * copied into out. Any thread. */
bool room__relay_values(struct room *r, struct sim_params out[SIM_GROUPS]);

/* A relay's newest tilestate of audience a (0: every boid, t: team t), as
 * its latest frame brought it from the owner (a reference for the caller),
 * or NULL. */
struct tilestate *room__relay_tiles(struct room *r, unsigned audience);

/* True if the room cannot reach its owner, with the reason into
 * reason[0..cap). Any thread. */
bool room__relay_is_unavailable(struct room *r, char *reason, size_t cap);

/* ---- room_pace.c ------------------------------------------------------------------- */

/* The room's pace at its nominal rates: 0, or PROTO_E_INTERNAL (out of
 * memory). */
int room__pace_create(struct room *r);
void room__pace_destroy(struct room *r);

/* At the start of a tick started at *t, the last run having encoded a
 * snapshot in snapshot_ns (-1: none): the rates chosen, the pool told the
 * next period (pool_pace), room_info's dilation and snapshot rate brought
 * up to date, and the members told when pace.h says so. Tick thread;
 * takes the lock. */
void room__pace_tick(struct room *r, const struct pool_time *t, int64_t snapshot_ns);

/* What this tick adds to the snapshot phase (pace_snapshot_step()). */
double room__snapshot_step(const struct room *r);

/* ---- room_squads.c ----------------------------------------------------------------- */

/* ---- room_script.c ------------------------------------------------------------------ */

/* The room runs src from now on (saved: its state from a checkpoint, else
 * it starts); 0, or a negative code with the reason in
 * why[0..SCRIPT_REASON_MAX). Tick thread (or creation). */
int room__script_create(struct room *r, const struct script_source *src, const uint8_t *saved,
                        size_t len, char *why);
void room__script_destroy(struct room *r);
/* Before a step: a reload due now, then the script's tick hook. */
void room__script_tick(struct room *r);
bool room__script_is_on(const struct room *r);
/* A game command's turn (a custom command, a join, a leave): 0, or a code
 * with the reason in why[0..PROTO_MESSAGE_MAX). */
int room__script_game(struct room *r, const struct proto_command *c, char *why);
/* An admin's reload: the scripts directory's version becomes pending; *at
 * says when it runs ("now", "next_match", "unchanged"). */
int room__script_reload(struct room *r, char *why, const char **at);
/* The running script (NULL: none), for checkpoints. */
struct script *room__script(const struct room *r);

/* After a step (the room thread): writes the teams' squads messages due. */
void room__squads_after_step(struct room *r, int64_t now);
void room__squads_destroy(struct room *r);

#endif
