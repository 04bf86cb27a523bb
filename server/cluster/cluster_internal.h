/*
 * cluster_internal — what the seven files of the cluster module share:
 * the private struct cluster, its rooms, the other nodes' pending
 * commands, the directory, and the functions one file calls in another
 * (prefix cluster__). Included by cluster.c, cluster_conn.c,
 * cluster_msg.c, cluster_lease.c, cluster_log.c, cluster_tiles.c and
 * cluster_dir.c only.
 *
 * Calls between the files run one way, and nothing calls back:
 *
 *     cluster.c        calls  cluster_conn.c, cluster_msg.c, cluster_lease.c, cluster_tiles.c,
 *                             cluster_dir.c, cluster_log.c
 *     cluster_msg.c    calls  cluster_tiles.c, cluster_dir.c, cluster_conn.c
 *     cluster_lease.c  calls  cluster_dir.c, cluster_log.c, cluster_conn.c
 *     cluster_conn.c   calls  none of them
 *     cluster_tiles.c  calls  none of them
 *     cluster_dir.c    calls  none of them
 *     cluster_log.c    calls  none of them
 *
 *   cluster_conn.c   the NATS connection: its options (the servers,
 *                    signing in, TLS), the first connection and its
 *                    refusals, libnats's connection callbacks, the ask
 *                    of a room's owner (a request on a one-off inbox).
 *   cluster.c        the steward thread, which acts on what the others
 *                    report (it has cluster_conn.c connect): after each round of
 *                    leases it has cluster_msg.c follow the rooms' roles
 *                    (cluster__follow_roles), reads the directory's
 *                    updates into cluster_dir.c and queues the rooms placed
 *                    here; the link's attach, detach, fetch, adopt and
 *                    owner_of hooks; what the endpoints show.
 *   cluster_msg.c    the messages on NATS: frames, commands, replies,
 *                    wants, parameters.
 *   cluster_tiles.c  version 3's tiles between the nodes (tilefeed.h): an
 *                    owner's feeds of its relays and the thread that
 *                    publishes them, a relay's inbox, its view messages,
 *                    and the pairing of each relayed frame with its tiles.
 *   cluster_lease.c  the leases (a lease taken or lost changes the room's
 *                    role and nothing else: it calls no message code),
 *                    checkpoints, the heartbeat, placing a new room.
 *   cluster_log.c    the rooms' command log in the stream: an owner's
 *                    batches, a takeover's read and mark, trimming.
 *   cluster_dir.c    the directory (the rooms of the cluster as the lease
 *                    watcher shows them, the nodes' loads, placements, the
 *                    rooms placed here): data and its rules, no NATS, no
 *                    lock; calls no other file.
 *
 * cluster_msg.c and cluster_lease.c never call each other, and no file
 * calls cluster.c. The inline helpers at the end of this header (a room by
 * name, unsubscribing, whether NATS is up) call no file. cluster_wire.h
 * and tilefeed.h are modules of their own below all six.
 *
 * Threading and locking: as cluster.h and cluster.c say. `lock` guards
 * the attached rooms and the directory, `pend_lock` the pending commands,
 * `kv_lock` the bucket handles while they are replaced; a room's tiles
 * (struct ctiles) have a lock of their own, never taken with `lock` held,
 * and the tiles' queue `tq_lock`.
 */
#ifndef FLOCKD_CLUSTER_INTERNAL_H
#define FLOCKD_CLUSTER_INTERNAL_H

#include "cluster.h"
#include "frame.h"
#include "textbuf.h"

#include <nats/nats.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BUCKET_ROOMS        "flockd"      /* room.NAME: leases; node.ID: heartbeats */
#define BUCKET_CKPT         "flockd_ckpt" /* NAME: the room's last checkpoint */
#define LOG_STREAM          "FLOCKD_LOG"  /* the rooms' command logs, subjects flockd.log.NAME */
#define LOG_SUBJECTS_PREFIX "flockd.log"
/* An owner whose lease was last renewed (the request sent) this share of
 * a lease ago publishes no frame and applies no command: another node may
 * take the lease a whole lease after the last renewal it saw. */
#define FENCE_SHARE   0.75
#define WAIT_MS       500          /* the longest a key-value call waits */
#define MAX_ROOMS     1024         /* attached rooms (max-rooms is at most 1024) */
#define PENDING       4096         /* other nodes' commands awaiting a reply */
#define PENDING_TTL_S 10.0         /* a reply not produced by then is forgotten */
#define FORWARDS      4096         /* this node's clients' commands awaiting the owner's reply */
#define RESEND_S      1.0          /* a forwarded command unanswered this long is sent again */
#define FORWARD_TTL_S 8.0          /* ... and answered `unavailable` after this long */
#define LOG_KEEP_S    12.0         /* a room's log keeps this long: FORWARD_TTL_S and 4 resends */
#define LOG_MARKS     32           /* checkpoint marks a room's owner remembers */
#define REMOTE        (1ull << 63) /* client ids of other nodes' clients here */
#define SUBJECT_MAX   128
#define HEARTBEAT_S   1.0  /* how often a node writes its heartbeat */
#define DIR_WAIT_MS   50   /* the longest the steward waits for a lease update at once */
#define MAX_DIR       4096 /* rooms of the cluster the directory lists */
#define MAX_NODES     256  /* nodes whose load a placement weighs */
#define NODE_STALE_S  3.0  /* a node without a heartbeat this long is not placed on */
#define MAX_ADOPT     32   /* rooms placed here waiting for the lobby */
#define MAX_PLACED    64   /* rooms placed lately whose node's heartbeat may not count them yet */
#define PLACED_TTL_S  10.0 /* a placement forgotten by then in any case */
/* The buckets are opened again this long after NATS is back, not at once:
 * libnats (3.4.1) recreates the directory watcher's consumer on a thread
 * of its own right after a reconnect, and stopping the watcher meanwhile
 * reads a consumer name that thread frees. */
#define REOPEN_AFTER_S 1.0
/* A relay without a frame this long tells its clients the room is unavailable. */
#define OWNER_SILENT_S 2.0

/* Version 3's tiles (cluster_tiles.c). */
#define TILE_FEEDS  16  /* relay nodes an owner feeds a room's tiles, at most */
#define TILE_FEED_S 2.0 /* a relay that has not asked for this long is fed no more */
#define TILE_LINGER 5   /* steps a super-tile stays wanted after a client's frame held it */
#define TILE_QUEUE  8   /* frames waiting for the tiles thread; the oldest goes */
#define TILE_HOLD_S 0.1 /* the longest a relayed frame waits for its tiles */

#define MAX_FETCHED 8   /* owners' parameters fetched for rooms about to open here */
#define ASK_MS      250 /* how long a join waits for the owner's parameters */
#define GONE_MS     100 /* how long a takeover waits for a quiet owner to answer an ask */

/* The owner's parameters of a room a join is opening here (fetch), for
 * the room when it attaches. */
struct fetched {
    char name[PROTO_ROOM_MAX + 1]; /* "": free */
    struct sim_params values[SIM_GROUPS];
};

/* A room of this node, relaying or owned. */
struct croom {
    struct room *room;
    char name[PROTO_ROOM_MAX + 1];
    bool owner;
    uint64_t rev;        /* the lease key's revision last seen (owner: last written) */
    int64_t rev_seen_ns; /* when rev was first seen (relay: the lease runs from here) */
    uint64_t term;       /* owner: the revision the lease was taken at */
    uint64_t term_seen;  /* relay: the highest term of a frame accepted */
    int64_t frame_ns;    /* relay: when it last accepted a frame (or became a relay) */
    bool unavailable;    /* relay: its clients were told the owner cannot be reached */
    int64_t renewed_ns;  /* owner: when the last renewal that held was sent */
    /* owner: the room's command log (cluster_log.c): the last message of
     * the subject (what the next write expects), whether a write failed
     * (the room steps down), and the messages holding checkpoint marks */
    uint64_t log_seq;
    bool log_failed;
    struct {
        uint32_t ckpt;
        uint64_t seq;
        int64_t ns; /* clock_mono_ns() when it was written */
    } marks[LOG_MARKS];
    natsSubscription *frames, *cmds, *wants, *params, *asks;
    natsSubscription *tiles, *views; /* relay: its tiles; owner: its relays' views */
    struct ctiles *ct;               /* version 3's tiles (cluster_tiles.c); NULL: none */
    /* relay: a frame waiting for its tiles, or tiles waiting for their
     * frame (cluster__tiles_frame()), and the frame the last tiles were of */
    struct frame *held;
    uint32_t held_boids;
    bool held_paused;
    int64_t held_ns;
    struct frame_v3 ready;
    uint64_t ready_seq, tiles_seq;
};

/* An other node's command awaiting the room's reply. */
struct pending {
    uint64_t gen; /* 0: free */
    uint64_t client;
    uint64_t origin;
    int64_t at_ns;
    char room[PROTO_ROOM_MAX + 1];
    char reply_to[SUBJECT_MAX];
};

/* A command of this node's client forwarded to the owner, until its reply
 * comes: sent again every RESEND_S (to whichever node owns the room then:
 * it applies it once, by its origin), answered `unavailable` after
 * FORWARD_TTL_S. */
struct forward {
    uint64_t origin; /* 0: free */
    uint64_t client;
    char room[PROTO_ROOM_MAX + 1];
    char id[PROTO_ID_TEXT_MAX];
    uint8_t *msg; /* the command message as sent */
    size_t len;
    int64_t first_ns, sent_ns;
};

/* ---- cluster_dir.c: the directory (calls no other file) ---- */

/* One room of the cluster as the directory shows it. */
struct dir_entry {
    char name[PROTO_ROOM_MAX + 1];
    char node[PROTO_NODE_MAX + 1];
    char mode[16];
    uint32_t boids;
    uint64_t tick;
    bool placed;  /* named by the node that placed it there, not yet taken by it */
    bool counted; /* a heartbeat of its node came after its node's own lease: in its figures */
};

/* A room a join here placed on a node (this one too), counted in that
 * node's load until the directory has its lease (which then counts it). */
struct placement {
    char name[PROTO_ROOM_MAX + 1];
    char node[PROTO_NODE_MAX + 1];
    uint32_t boids;
    int64_t at_ns;
};

/* A node of the cluster as its last heartbeat showed it. */
struct node_load {
    char id[PROTO_NODE_MAX + 1];
    uint64_t boids;
    uint32_t rooms;
    int64_t clients;
    int64_t seen_ns; /* when its heartbeat reached this node (monotonic) */
};

/* The directory. Every function below runs under the cluster's lock. */
struct cluster_dir {
    char self[PROTO_NODE_MAX + 1]; /* this node's id */
    struct dir_entry *rooms;       /* owned: MAX_DIR; `default` first, then by name */
    size_t nrooms;
    struct node_load nodes[MAX_NODES];
    size_t nnodes;
    struct placement placed[MAX_PLACED];
    size_t nplaced;
    struct room_adoption adopt[MAX_ADOPT]; /* rooms placed here, for the lobby */
    size_t nadopt;
};

/* An empty directory of node self: 0, or PROTO_E_INTERNAL (out of
 * memory). cluster__dir_free() releases it. */
int cluster__dir_init(struct cluster_dir *d, const char *self);
void cluster__dir_free(struct cluster_dir *d);
/* Forgets every room and node (a new watcher replays them all). */
void cluster__dir_clear(struct cluster_dir *d);
/* The node a lease or heartbeat value names, into node (cap bytes): 0, or
 * PROTO_E_BAD_VALUE if the value names none (the caller counts it: a
 * hostile or garbled key). */
int cluster__dir_node_of(const char *val, int len, char *node, size_t cap);
/*
 * One update of a key of the bucket: a heartbeat (node.ID) into the nodes'
 * loads; a lease (room.NAME) put adds or refreshes its room, a delete or
 * purge removes it. now: when it arrived (monotonic). Returns
 * PROTO_E_BAD_VALUE for a put whose value names no node (count it); 1 for
 * a lease another node wrote when it placed its room on this one, with
 * the room in *ad (the caller queues it unless it has the room); else 0.
 * cluster__dir_sort() after a batch.
 */
int cluster__dir_apply(struct cluster_dir *d, const char *key, bool is_put, const char *val,
                       int len, int64_t now, struct room_adoption *ad);
/* The rooms in the order /api/rooms lists them: `default`, then by name. */
void cluster__dir_sort(struct cluster_dir *d);
/* The directory's entry of room `name`, or NULL. */
const struct dir_entry *cluster__dir_find(const struct cluster_dir *d, const char *name);
/* The node other than this one that the directory (or, when it has no
 * lease of the room yet, a placement made here) names for room `name`,
 * or NULL. */
const char *cluster__dir_other_node(const struct cluster_dir *d, const char *name);
/* Queues a room placed here for the lobby (once, while MAX_ADOPT allow). */
void cluster__dir_adopt_queue(struct cluster_dir *d, const struct room_adoption *ad);
/* The oldest room placed here into *out: true, or false if none waits. */
bool cluster__dir_adopt_take(struct cluster_dir *d, struct room_adoption *out);
/* The least loaded node seen lately (fewest boids it ticks, then fewest
 * rooms, then clients), into best (cap bytes): true, or false if none.
 * Placements older than PLACED_TTL_S are forgotten first. */
bool cluster__dir_least_loaded(struct cluster_dir *d, int64_t now, char *best, size_t cap);
/* A room placed on node at now, counted in its load until that node's
 * heartbeat counts it (the oldest placement goes if the table is full). */
void cluster__dir_count_placed(struct cluster_dir *d, const char *name, const char *node,
                               uint32_t boids, int64_t now);
/* Each room as an /api/rooms entry (cluster_render_rooms()): how many. */
int cluster__dir_render(const struct cluster_dir *d, struct textbuf *t, cluster_local_fn local,
                        void *arg);

struct cluster_counters {
    atomic_uint_fast64_t frames_published, frames_relayed, frames_dropped, frames_stale;
    atomic_uint_fast64_t commands_forwarded, commands_served, replies_relayed;
    atomic_uint_fast64_t commands_resent, commands_expired, replies_duplicate;
    atomic_uint_fast64_t renewals, takeovers, leases_lost;
    atomic_uint_fast64_t checkpoints_stored, checkpoints_dropped, rejected;
    atomic_uint_fast64_t disconnects, reconnects;
    atomic_uint_fast64_t tiles_published, tiles_dropped, tiles_received, tiles_stale;
    atomic_uint_fast64_t tiles_bytes, tiles_parts, tiles_restarts;
    atomic_uint_fast64_t log_batches, log_failures, log_trims, log_takeovers, frames_fenced;
    atomic_int_fast64_t rtt_us;
    atomic_int_fast64_t tiles_wanted; /* super-tiles this node's relayed rooms ask for */
};

/* A job of the tiles thread: an owned room's frame to feed its relays. */
struct tile_job {
    struct ctiles *ct;
    struct frame *f;
    uint64_t term;
    char name[PROTO_ROOM_MAX + 1];
};

struct cluster {
    struct cluster_config cfg;
    char node[PROTO_NODE_MAX + 1];
    char reply_subject[SUBJECT_MAX];
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv, *ckpt; /* steward thread (and the checkpoint sink, under kv_lock) */
    pthread_mutex_t kv_lock;
    natsSubscription *replies;
    atomic_bool connected, reconnected;
    atomic_int_fast64_t reconnected_ns; /* when NATS came back last (clock.h) */
    atomic_int_fast64_t refused_ns;     /* when a refused subject was last said (cluster_conn.c) */
    struct room_link link;

    pthread_mutex_t lock;
    bool quiet; /* cluster_quiesce(): messages no longer reach the rooms */
    struct croom *rooms[MAX_ROOMS];
    size_t nrooms;
    struct cluster_dir dir;

    pthread_mutex_t pend_lock;
    struct pending pend[PENDING];
    uint64_t pend_gen;
    /* This node's forwarded commands, under fwd_lock; origins are
     * origin_base + a count (a random base: unique across nodes and runs). */
    pthread_mutex_t fwd_lock;
    struct forward fwd[FORWARDS];
    uint64_t origin_base, origin_count;

    pthread_t steward;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop, started;
    int64_t heartbeat_ns;
    kvWatcher *watcher; /* the steward's: every update of a lease or heartbeat key */
    struct fetched fetched[MAX_FETCHED]; /* under lock */
    struct cluster_counters n;

    /* The tiles thread (cluster_tiles.c) and its queue, under tq_lock. */
    pthread_t tiles_thread;
    bool tiles_started, tq_stop;
    pthread_mutex_t tq_lock;
    pthread_cond_t tq_cond;
    struct tile_job tq[TILE_QUEUE];
    size_t tq_head, tq_len;
};

#define COUNT(c, field) atomic_fetch_add_explicit(&(c)->n.field, 1, memory_order_relaxed)

/* ---- inline helpers: call no file ---- */

/* Counts a message from NATS refused (messages_rejected) and says what it
 * was on stderr the 1st, 2nd, 4th, 8th... time: a flood cannot flood
 * the log. */
static inline void cluster__reject(struct cluster *c, const char *what)
{
    uint64_t n = atomic_fetch_add_explicit(&c->n.rejected, 1, memory_order_relaxed) + 1;
    if ((n & (n - 1)) == 0)
        fprintf(stderr, "flockd: cluster: refused %s (%llu so far)\n", what, (unsigned long long)n);
}

static inline bool cluster__is_connected(const struct cluster *c)
{
    return atomic_load_explicit(&c->connected, memory_order_acquire);
}

/* True if owned room cr's lease was last renewed too long ago to act as
 * its owner (FENCE_SHARE). Under lock. */
static inline bool cluster__is_fenced(const struct cluster *c, const struct croom *cr, int64_t now)
{
    return (double)(now - cr->renewed_ns) > FENCE_SHARE * c->cfg.lease_s * 1e9;
}

/* Owned room cr relays from its next tick: its lease counted as seen
 * now, the term it had the highest a relay accepts. Under lock. */
static inline void cluster__become_relay(struct croom *cr, int64_t now)
{
    cr->owner = false;
    cr->term_seen = cr->term;
    cr->rev_seen_ns = now;
    cr->frame_ns = now;
    room_relay_set(cr->room, false, NULL);
}

/* The attached room called name (len bytes), or NULL, also once the
 * cluster is quiet (what NATS brings then is dropped). Under lock. */
static inline struct croom *cluster__find(struct cluster *c, const char *name, size_t len)
{
    if (c->quiet)
        return NULL;
    for (size_t i = 0; i < c->nrooms; i++)
        if (strlen(c->rooms[i]->name) == len && memcmp(c->rooms[i]->name, name, len) == 0)
            return c->rooms[i];
    return NULL;
}

/* The attached room holding r, or NULL. Under lock. */
static inline struct croom *cluster__find_room(struct cluster *c, const struct room *r)
{
    for (size_t i = 0; i < c->nrooms; i++)
        if (c->rooms[i]->room == r)
            return c->rooms[i];
    return NULL;
}

/* Ends and frees *s, if any; *s becomes NULL. */
static inline void cluster__unsubscribe(natsSubscription **s)
{
    if (*s) {
        natsSubscription_Unsubscribe(*s);
        natsSubscription_Destroy(*s);
        *s = NULL;
    }
}

/* ---- cluster_conn.c: the NATS connection (calls no other file) ---- */

/* c->opts and c->nc as c->cfg says, connected or connecting in the
 * background (c->connected says which): 0, or PROTO_E_BAD_ARG (the URLs,
 * a file libnats cannot load, a server that refused the credentials or
 * TLS) or PROTO_E_INTERNAL, with the reason in *err (cluster_create()). */
int cluster__connect(struct cluster *c, const char **err);
/* Asks the owner of room `room` (CLUSTER.md §3.6) from a one-off inbox
 * of this node's (ended here, whatever comes to it later) and waits at
 * most wait_ms for the answer, into *reply (the caller destroys it; NULL
 * if none): NATS_OK, NATS_TIMEOUT, NATS_NO_RESPONDERS (the server knows
 * nobody who listens: no node owns the room, or its owner's connection is
 * gone) or another failure. */
natsStatus cluster__ask(struct cluster *c, const char *room, int64_t wait_ms, natsMsg **reply);

/* ---- cluster_msg.c: frames, commands, replies, wants, parameters (calls cluster_dir.c,
 * cluster_conn.c) ---- */

/* The link's hooks of an owner (frame, reply, params) and a relay (forward). */
void cluster__link_frame(void *arg, struct room *r, const struct frame *f);
bool cluster__link_reply(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                         size_t len);
int cluster__link_forward(void *arg, struct room *r, const struct room_actor *who,
                          const struct proto_command *cmd, int refused, const char *message);
void cluster__link_params(void *arg, struct room *r);
/* The handler of this node's reply subject. */
void cluster__on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg);
/* The subscriptions cr needs as owner (commands, wants, asks) or relay
 * (frames, parameters). Under lock. */
void cluster__resubscribe(struct cluster *c, struct croom *cr);
/* Every attached room's subscriptions for the role its lease gives it
 * now (cluster__resubscribe()), and each relay's wants to its owner.
 * Steward, after cluster__leases(). */
void cluster__follow_roles(struct cluster *c);
/* Every owned room's parameters again, for relays that came since. Steward. */
void cluster__publish_params(struct cluster *c);
/* The owner's parameters of room `name` into c->fetched, asked for at
 * once (waits up to ASK_MS); nothing if it does not answer. */
void cluster__ask_params(struct cluster *c, const char *name);
/* Gives r the parameters fetched for it, if any. Under lock. */
void cluster__take_fetched(struct cluster *c, struct room *r);
/* Forwarded commands without a reply: sent again, or answered
 * `unavailable` when too old. Steward. */
void cluster__resend(struct cluster *c, int64_t now);
/* Frees every forwarded command still held (the cluster goes). */
void cluster__forwards_free(struct cluster *c);
/* Tells the clients of each relayed room whether its owner can be reached
 * (NATS up and a frame within OWNER_SILENT_S), on a change. Steward. */
void cluster__availability(struct cluster *c, int64_t now);

/* ---- cluster_tiles.c: version 3's tiles between the nodes (calls no other file) ---- */

/* A room's tiles state for cr (its room's grid): 0, or PROTO_E_INTERNAL.
 * cluster__tiles_free() ends it (the tiles thread may hold it a while). */
int cluster__tiles_attach(struct cluster *c, struct croom *cr);
void cluster__tiles_free(struct croom *cr);
/* Starts / stops the tiles thread: 0, or PROTO_E_INTERNAL. */
int cluster__tiles_start(struct cluster *c);
void cluster__tiles_stop(struct cluster *c);
/* An owned room's frame (the link's frame hook, after its frame message):
 * queued for the tiles thread when relays asked for its tiles. */
void cluster__tiles_publish(struct cluster *c, struct croom *cr, const struct frame *f,
                            uint64_t term);
/* A relayed room's accepted frame: shown with its tiles, held until they
 * come (at most TILE_HOLD_S), or shown at once (takes f). Under lock. */
void cluster__tiles_frame(struct cluster *c, struct croom *cr, struct frame *f, uint32_t boids,
                          bool paused);
/* The subscriptions of cr's tiles for its role (a relay's tiles, an
 * owner's views), and what the other role kept let go. Under lock. */
void cluster__tiles_resubscribe(struct cluster *c, struct croom *cr);
/* Each relayed room's view message to its owner (every step: advance
 * true; between steps only those with news, advance false), held frames
 * that waited too long shown. Steward. */
void cluster__tiles_step(struct cluster *c, bool advance, int64_t now);

/* ---- cluster_log.c: the rooms' command log (calls no other file) ---- */

/* The stream of the logs, made if missing: 0, or PROTO_E_INTERNAL. Steward. */
int cluster__log_open(struct cluster *c);
/* The link's can_log and log hooks (room_relay.h). */
bool cluster__link_can_log(void *arg, struct room *r);
int cluster__link_log(void *arg, struct room *r, const uint8_t *records, size_t len,
                      uint32_t checkpoint);
/*
 * A takeover of room `room` at lease term `term`: reads its log into t
 * (t->log; t->tick already set) and marks it as this node's (a RESUME
 * record at t->tick, written only if no other write came after what was
 * read: a write that came first is read too), *seq the mark's sequence
 * number. 0, or PROTO_E_INTERNAL (t->log NULL). Steward, outside the lock.
 */
int cluster__log_take(struct cluster *c, const char *room, uint64_t term, struct room_takeover *t,
                      uint64_t *seq);
/* Checkpoint `stored` of room is in the bucket: the log's messages before
 * the previous checkpoint's mark go. The writer thread. */
void cluster__log_trim(struct cluster *c, const char *room, uint32_t stored);

/* ---- cluster_lease.c: leases, checkpoints, heartbeat, placing (calls cluster_dir.c,
 * cluster_log.c, cluster_conn.c) ---- */

/* Another node has room `name` (it holds a lease): true, with *ck its last
 * checkpoint (malloc'd, the caller frees it; NULL if none) of *len bytes;
 * false if no node has it or NATS cannot say. The network's thread. */
bool cluster__lease_fetch(struct cluster *c, const char *name, uint8_t **ck, size_t *len);
/* Every attached room's lease: taken, renewed or lost, which sets the
 * room's role (owner or relay) and nothing else; the steward then has the
 * messages follow (cluster__follow_roles()). Steward. */
void cluster__leases(struct cluster *c, int64_t now);
/* Deletes the lease of a room this node owned and gives up (another node
 * may take it at once). */
void cluster__lease_give_up(struct cluster *c, const char *name);
/* This node's figures under node.ID. Steward. */
void cluster__heartbeat(struct cluster *c);
/* The link's place hook (room_relay.h): a room a join creates goes to the
 * least loaded node. */
int cluster__link_place(void *arg, const char *name, enum proto_mode mode, uint32_t boids,
                        const char *password);

#endif
