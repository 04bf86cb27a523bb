/*
 * cluster — flockd as one node of a cluster on NATS with JetStream
 * (`--nats URL`; server/cluster/CLUSTER.md has the subjects, keys and messages).
 *
 * The module owns the NATS connection and one steward thread. Every room
 * of this node is attached to it (through its room_link, at creation) and
 * starts as a relay; the steward holds each room's lease in the JetStream
 * key-value bucket: a room whose key is absent, or whose revision has not
 * moved for a lease period, is taken (create / compare-and-set update) and
 * the room ticks here, restored from its last checkpoint in the checkpoint
 * bucket; an owned room's lease is renewed every step, and a room whose
 * lease another node took goes back to relaying. The revision a lease was
 * taken at is the room's term: the owner's frames carry it and a relay
 * drops frames of an older term than it has seen.
 *
 * Owners publish each frame once on the room's subject; relays subscribe
 * to the rooms they have, send their clients' commands to the owner by
 * request-reply, and tell it which kinds of frame their clients take. The
 * node's heartbeat (rooms, boids, clients) and the rooms' directory
 * (/api/rooms) come from the same bucket.
 *
 * Losing NATS: owners keep ticking and serving their local clients (their
 * leases cannot be taken while nobody reaches NATS), relays answer
 * commands with an error naming the loss, and the connection comes back
 * by itself; a lease found taken meanwhile turns the room into a relay.
 *
 * Never: lws calls (the rooms' notify hook wakes the network); blocking a
 * tick (the link's hooks only publish). Threading: libnats calls handlers
 * on its own threads and the steward runs on its own; the attached rooms
 * are guarded by one lock, taken before a room's. cluster_create and
 * cluster_destroy from the main thread.
 */
#ifndef FLOCKD_CLUSTER_H
#define FLOCKD_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "room_relay.h"
#include "textbuf.h"

struct cluster_config {
    const char *url;      /* one NATS URL, or several separated by commas; tls:// asks for TLS;
                             USER:PASSWORD@ or TOKEN@ before a host signs in there */
    const char *node_id;  /* [A-Za-z0-9_-], 1..64 */
    double lease_s;       /* a lease whose revision stays this long is taken; 0: 1 s */
    double step_s;        /* the steward's period (renewals, takeovers); 0: lease / 5 */
    size_t frame_pre;     /* headroom before each part of a relayed frame (LWS_PRE) */
    uint32_t max_message; /* commands from other nodes are parsed against this */
    bool command_log;     /* commands stored in the stream before their acks (CLUSTER.md §2.1) */
    /* Signing in, one way at most (NULL or "": not given), and TLS, which
     * a certificate file asks for as a tls:// URL does. */
    const char *user, *password; /* a user and its password */
    const char *token;
    const char *creds;      /* a NATS credentials file: a user JWT and its NKey seed */
    const char *ca;         /* PEM authorities trusted, besides the system's, to sign NATS's */
    const char *cert, *key; /* PEM certificate and key shown to a NATS that verifies clients */
};

struct cluster;

/*
 * Connects (retrying in the background while no NATS server can be
 * reached) and starts the steward. NULL and a static reason in *err for a
 * bad node id or URL, a certificate or key libnats cannot load, a server
 * that refused the credentials or TLS (the reason names the URLs without
 * their secrets; the next cluster_create() overwrites it), or if nothing
 * could be started. cluster_destroy() after every room is gone.
 */
struct cluster *cluster_create(const struct cluster_config *cfg, const char **err);
void cluster_destroy(struct cluster *c);

/* The URL list urls as it may be shown: a password (USER:***@) or token
 * (***@) hidden. Into out (cap bytes, cut short if need be). Pure. */
void cluster_show_urls(const char *urls, char *out, size_t cap);
/* The URLs as cluster_show_urls() shows them, whether TLS is asked for
 * and how the node signs in, for the start-up log. Pure. */
void cluster_describe(const struct cluster_config *cfg, char *out, size_t cap);

/* From now on nothing from NATS reaches a room (frames, replies, commands,
 * wants are dropped): call it before the network goes away, which the
 * rooms wake. The leases, checkpoints and their removal go on until
 * cluster_destroy(). NULL is ignored. */
void cluster_quiesce(struct cluster *c);

/* The link every room of this node is created with (room_config.link). */
const struct room_link *cluster_link(struct cluster *c);

/* The persist sink (persist.h): stores a room's checkpoint in the bucket.
 * Any thread; dropped (and counted) while NATS is away. */
void cluster_store_checkpoint(void *arg, const char *room, const uint8_t *buf, size_t len);

/*
 * Appends to t: ,"nats":"connected"|"lost","node":"ID" for /healthz;
 * the cluster's series for /metrics; or the rooms of the whole cluster as
 * /api/rooms entries (each with "node"), as the directory (a watcher of
 * the lease keys) last saw them, `default` first, then by name: local()
 * renders a room this node has (true), else a short entry is written.
 * The rooms: how many were written. Any thread.
 */
typedef bool (*cluster_local_fn)(void *arg, struct textbuf *t, const char *name, const char *node,
                                 bool first);
void cluster_render_health(struct cluster *c, struct textbuf *t);
void cluster_render_metrics(struct cluster *c, struct textbuf *t);
int cluster_render_rooms(struct cluster *c, struct textbuf *t, cluster_local_fn local, void *arg);

#endif
