/*
 * room_relay — a room of a cluster (room.h, cfg.link): the cluster's side
 * of a room, for server/cluster (CLUSTER.md). room_relay.c implements it
 * (room_values(): room.c).
 *
 * A room with a link starts as a relay: it ticks without stepping its
 * world, answers joins itself, hands every other command to the link for
 * the owner node and serves the frames the link gives it. The cluster
 * makes it the owner (and back) with room_relay_set(); the switch happens
 * before the room's next commands are applied or forwarded (a tick, or a
 * poke between ticks). A relay that cannot reach its owner says so to its
 * members (room.h, availability).
 *
 * Never: talks to the cluster itself (the link's hooks do: struct
 * room_link). A room without a link is never a relay, watched or
 * unavailable. Threading: as each function and each hook says.
 */
#ifndef FLOCKD_ROOM_RELAY_H
#define FLOCKD_ROOM_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "room.h"

/* A room another node of a cluster placed on this one (room_link.adopt). */
struct room_adoption {
    char name[PROTO_ROOM_MAX + 1];
    enum proto_mode mode;
    uint32_t boids;
    char password[PROTO_TOKEN_MAX + 1];
};

/*
 * A room's link to a cluster of flockd nodes (cluster.h); NULL in a single
 * process. Each hook is called on the room's tick thread and must not block
 * (but `log`, which waits for the cluster to store its records).
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
    /* The room ticks here: true if its commands can be logged now (the
     * cluster's command log is reachable). NULL: the cluster keeps no log. */
    bool (*can_log)(void *arg, struct room *r);
    /* The room ticks here: stores records[0..len) (reclog.h's records of
     * the commands a batch applied) in the cluster's command log and waits
     * for it, the one hook that may: 0 once stored; PROTO_E_UNAVAILABLE
     * when the log surely lacks them, PROTO_E_INTERNAL when it may hold
     * them (its answer lost). Either way the room then relays: another
     * node carries it on from what the log holds. */
    int (*log)(void *arg, struct room *r, const uint8_t *records, size_t len,
               uint32_t checkpoint); /* the checkpoint they mark (0: none) */
};

/* What a node that takes a room over carries it on from (CLUSTER.md §2):
 * buffers malloc'd, NULL for none. */
struct room_takeover {
    uint8_t *ck; /* the room's last checkpoint */
    size_t ck_len;
    uint8_t *log; /* the command log's records from before that checkpoint on */
    size_t log_len;
    uint64_t tick; /* the tick the old owner last published: the world steps on to it */
};

/* Frees t's buffers. */
void room_takeover_free(struct room_takeover *t);

/* The record a node taking a room over (lease term `term`) writes into
 * the room's command log: the room carries on from there, stepped on to
 * `tick` (reclog.h, RESUME). Its length, or a negative code. */
int room_resume_mark(uint8_t *buf, size_t cap, uint64_t tick, uint64_t term);

/*
 * Asks the room to tick its world (owner, carrying on from t if t has a
 * checkpoint, else from its own state) or to relay another node's (owner
 * false; t NULL). Takes t's buffers. Any thread; the last request before a
 * tick wins.
 */
void room_relay_set(struct room *r, bool owner, struct room_takeover *t);

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

/* The room's version 3 tile grid (fixed for its life), into out. Any thread. */
void room_relay_grid(const struct room *r, struct tiles_grid *out);

/* Every group's parameters as welcomes show them, into out. Any thread. */
void room_values(struct room *r, struct sim_params out[SIM_GROUPS]);

/* The owner's parameters (every group) for the relay's welcomes, which
 * show them instead of its copy's from then on, until the room ticks
 * here. Any thread. */
void room_relay_params(struct room *r, const struct sim_params values[SIM_GROUPS]);

#endif
