/*
 * cluster_internal — what cluster.c, cluster_msg.c and cluster_lease.c
 * share: the private struct cluster, its rooms, the other nodes' pending
 * commands and the directory, and the few functions one file calls in
 * another (prefix cluster__). Included by those three files only.
 *
 * Threading and locking: as cluster.h and cluster.c say. `lock` guards
 * the attached rooms and the directory, `pend_lock` the pending commands,
 * `kv_lock` the bucket handles while they are replaced.
 */
#ifndef FLOCKD_CLUSTER_INTERNAL_H
#define FLOCKD_CLUSTER_INTERNAL_H

#include "cluster.h"

#include <nats/nats.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUCKET_ROOMS  "flockd"      /* room.NAME: leases; node.ID: heartbeats */
#define BUCKET_CKPT   "flockd_ckpt" /* NAME: the room's last checkpoint */
#define WAIT_MS       500           /* the longest a key-value call waits */
#define MAX_ROOMS     1024          /* attached rooms (max-rooms is at most 1024) */
#define PENDING       4096          /* other nodes' commands awaiting a reply */
#define PENDING_TTL_S 10.0          /* a reply not produced by then is forgotten */
#define REMOTE        (1ull << 63)  /* client ids of other nodes' clients here */
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

#define MAX_FETCHED 8   /* owners' parameters fetched for rooms about to open here */
#define ASK_MS      250 /* how long a join waits for the owner's parameters */

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
    natsSubscription *frames, *cmds, *wants, *params, *asks;
};

/* An other node's command awaiting the room's reply. */
struct pending {
    uint64_t gen; /* 0: free */
    uint64_t client;
    int64_t at_ns;
    char room[PROTO_ROOM_MAX + 1];
    char reply_to[SUBJECT_MAX];
};

/* One room of the cluster as the directory shows it. */
struct dir_entry {
    char name[PROTO_ROOM_MAX + 1];
    char node[PROTO_NODE_MAX + 1];
    char mode[16];
    uint32_t boids, viewers;
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

struct cluster_counters {
    atomic_uint_fast64_t frames_published, frames_relayed, frames_dropped, frames_stale;
    atomic_uint_fast64_t commands_forwarded, commands_served, replies_relayed;
    atomic_uint_fast64_t renewals, takeovers, leases_lost;
    atomic_uint_fast64_t checkpoints_stored, checkpoints_dropped, rejected;
    atomic_uint_fast64_t disconnects, reconnects;
    atomic_int_fast64_t rtt_us;
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
    struct room_link link;

    pthread_mutex_t lock;
    bool quiet; /* cluster_quiesce(): messages no longer reach the rooms */
    struct croom *rooms[MAX_ROOMS];
    size_t nrooms;
    struct dir_entry *dir;
    size_t ndir;

    pthread_mutex_t pend_lock;
    struct pending pend[PENDING];
    uint64_t pend_gen;

    pthread_t steward;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop, started;
    int64_t heartbeat_ns;
    kvWatcher *watcher;                /* the steward's: every update of a lease or heartbeat key */
    struct node_load nodes[MAX_NODES]; /* under lock */
    size_t nnodes;
    struct fetched fetched[MAX_FETCHED]; /* under lock */
    struct placement placed[MAX_PLACED]; /* under lock */
    size_t nplaced;
    struct room_adoption adopt[MAX_ADOPT]; /* rooms placed here, for the lobby; under lock */
    size_t nadopt;
    struct cluster_counters n;
};

#define COUNT(c, field) atomic_fetch_add_explicit(&(c)->n.field, 1, memory_order_relaxed)

/* ---- cluster.c ---- */

/* True if s[0..len) is 1..max characters of [A-Za-z0-9_-]: a node id. */
bool cluster__is_token(const char *s, size_t len, size_t max);
/* The attached room called name (len bytes) / holding r, or NULL (the
 * first also once the cluster is quiet: what NATS brings is dropped).
 * Under lock. */
struct croom *cluster__find(struct cluster *c, const char *name, size_t len);
struct croom *cluster__find_room(struct cluster *c, const struct room *r);
/* Ends and frees *s, if any; *s becomes NULL. */
void cluster__unsubscribe(natsSubscription **s);

/* ---- cluster_msg.c: frames, commands, replies and wants on NATS ---- */

/* The link's hooks of an owner (frame, reply) and a relay (forward). */
void cluster__link_frame(void *arg, struct room *r, const struct frame *f);
bool cluster__link_reply(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                         size_t len);
int cluster__link_forward(void *arg, struct room *r, const struct room_actor *who,
                          const struct proto_command *cmd, int refused, const char *message);
/* The handler of this node's reply subject. */
void cluster__on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg);
/* The subscriptions cr needs as owner (commands, wants) or relay (frames). Under lock. */
void cluster__resubscribe(struct cluster *c, struct croom *cr);
/* The link's params hook: an owner publishes its room's parameters. */
void cluster__link_params(void *arg, struct room *r);
/* Every owned room's parameters again, for relays that came since. Steward. */
void cluster__publish_params(struct cluster *c);
/* The owner's parameters of room `name` into c->fetched, asked for at
 * once (waits up to ASK_MS); nothing if it does not answer. */
void cluster__ask_params(struct cluster *c, const char *name);
/* Gives r the parameters fetched for it, if any. Under lock. */
void cluster__take_fetched(struct cluster *c, struct room *r);
/* Tells the clients of each relayed room whether its owner can be reached
 * (NATS up and a frame within OWNER_SILENT_S), on a change. Steward. */
void cluster__availability(struct cluster *c, int64_t now);

/* ---- cluster_lease.c: leases, checkpoints, the directory, the heartbeat ---- */

/* The link's fetch hook (room.h). */
int cluster__link_fetch(void *arg, const char *name, uint8_t **ck, size_t *len);
/* The node named in a lease value into node (cap bytes): 0, or -1 (counted). */
int cluster__lease_node(struct cluster *c, const char *val, int len, char *node, size_t cap);
/* Every attached room's lease (take, renew, lose), then the relays' wants. Steward. */
void cluster__leases(struct cluster *c, int64_t now);
/* The lease updates the watcher holds, into the directory, waiting up to
 * wait_ms for the first: true, or false if the watcher could not be read
 * (none, or NATS is away). Steward. */
bool cluster__read_directory(struct cluster *c, int64_t wait_ms);
/* The directory's entry of room `name`, or NULL. Under lock. */
struct dir_entry *cluster__dir_find(struct cluster *c, const char *name);
/* This node's figures under node.ID. Steward. */
void cluster__heartbeat(struct cluster *c);
/* The link's place and adopt hooks (room.h): a room a join creates goes
 * to the least loaded node; the rooms placed here go to the lobby. */
int cluster__link_place(void *arg, const char *name, enum proto_mode mode, uint32_t boids,
                        const char *password);
int cluster__link_adopt(void *arg, struct room_adoption *out);
/* The link's owner_of hook (room.h): from the room's role here, the
 * directory and this node's placements. */
int cluster__link_owner_of(void *arg, struct room *r, char *node, size_t cap);

#endif
