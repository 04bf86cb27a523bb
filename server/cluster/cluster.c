/*
 * cluster.c — the steward thread, the rooms attached to the cluster, and
 * what the endpoints show (see cluster.h; subjects and keys in
 * server/cluster/CLUSTER.md). The NATS connection is made in
 * cluster_conn.c, the messages between nodes are in cluster_msg.c, the
 * leases in cluster_lease.c, the directory in cluster_dir.c; this file
 * calls them and none calls it (cluster_internal.h).
 *
 * Locking: `lock` guards the attached rooms (their list, terms and
 * subscriptions) and the directory; `pend_lock` the other nodes' clients
 * whose commands await their replies. NATS handlers look a room up by the
 * name in the subject under `lock` and use it there, so a room detached
 * meanwhile is never touched. The steward does its key-value calls (which
 * wait on the server, at most WAIT_MS) outside the lock and applies the
 * results under it if the room is still attached.
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "clock.h"
#include "cluster_wire.h"
#include "secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long cluster_destroy waits for the NATS library's threads. */
#define NATS_CLOSE_WAIT_MS 15000

static void link_attach(void *arg, struct room *r)
{
    struct cluster *c = arg;
    struct croom *cr = calloc(1, sizeof *cr);
    if (!cr)
        return; /* the room relays nothing and is never taken: it stays empty */
    cr->room = r;
    cr->frame_ns = clock_mono_ns();
    snprintf(cr->name, sizeof cr->name, "%s", room_name(r));
    if (cluster__tiles_attach(c, cr) < 0) /* then no version 3 client here gets its tiles */
        fprintf(stderr, "flockd: cluster: room \"%s\": no memory for its tiles\n", cr->name);
    pthread_mutex_lock(&c->lock);
    cluster__take_fetched(c, r); /* the owner's parameters, if a join asked for them */
    if (c->nrooms < MAX_ROOMS) {
        c->rooms[c->nrooms++] = cr;
        cluster__resubscribe(c, cr); /* a relay's frames and parameters from now on */
    } else {
        cluster__tiles_free(cr);
        free(cr);
    }
    pthread_mutex_unlock(&c->lock);
    /* The steward looks at its lease at its next step. */
}

/* Gives up r: its lease goes (another node may take it at once), its
 * subscriptions end. */
static void link_detach(void *arg, struct room *r)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = NULL;
    for (size_t i = 0; i < c->nrooms; i++)
        if (c->rooms[i]->room == r) {
            cr = c->rooms[i];
            c->rooms[i] = c->rooms[--c->nrooms];
            break;
        }
    pthread_mutex_unlock(&c->lock);
    if (!cr)
        return;
    cluster__unsubscribe(&cr->frames);
    cluster__unsubscribe(&cr->cmds);
    cluster__unsubscribe(&cr->wants);
    cluster__unsubscribe(&cr->params);
    cluster__unsubscribe(&cr->asks);
    cluster__tiles_free(cr);
    if (cr->owner)
        cluster__lease_give_up(c, cr->name);
    free(cr);
}

/* The link's fetch hook (room_relay.h): the room's lease and last checkpoint;
 * then, as a copy opens here, the owner's parameters for its welcomes. */
static int link_fetch(void *arg, const char *name, uint8_t **ck, size_t *len)
{
    struct cluster *c = arg;
    bool is_elsewhere = cluster__lease_fetch(c, name, ck, len);
    if (is_elsewhere)
        cluster__ask_params(c, name);
    return is_elsewhere;
}

/* The link's adopt hook (room_relay.h): a room another node placed here. */
static int link_adopt(void *arg, struct room_adoption *out)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    bool got = cluster__dir_adopt_take(&c->dir, out);
    pthread_mutex_unlock(&c->lock);
    return got;
}

/* The link's owner_of hook (room_relay.h): a room this node relays, from the
 * directory and this node's placements. */
static int link_owner_of(void *arg, struct room *r, char *node, size_t cap)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    const struct croom *cr = cluster__find_room(c, r);
    const char *other = cr && !cr->owner ? cluster__dir_other_node(&c->dir, room_name(r)) : NULL;
    if (other)
        snprintf(node, cap, "%s", other);
    pthread_mutex_unlock(&c->lock);
    return other != NULL;
}

const struct room_link *cluster_link(struct cluster *c)
{
    return &c->link;
}

static void stop_watching(struct cluster *c)
{
    if (c->watcher) {
        kvWatcher_Stop(c->watcher);
        kvWatcher_Destroy(c->watcher);
        c->watcher = NULL;
    }
}

/* Watches the directory (the rooms' bucket) anew, the watcher replaying
 * every lease first: 0, or PROTO_E_INTERNAL if NATS refused (under load
 * the consumer's creation can time out; tried again at the next step). */
static int watch_directory(struct cluster *c)
{
    stop_watching(c);
    kvWatcher *w = NULL;
    if (kvStore_WatchAll(&w, c->kv, NULL) != NATS_OK) {
        kvWatcher_Destroy(w);
        return PROTO_E_INTERNAL;
    }
    c->watcher = w;
    pthread_mutex_lock(&c->lock);
    cluster__dir_clear(&c->dir);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Opens (creating if need be) both buckets and watches the first anew: 0,
 * or PROTO_E_INTERNAL if NATS refused (tried again at the next step). */
static int open_buckets(struct cluster *c)
{
    kvStore *kv = NULL, *ck = NULL;
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = BUCKET_ROOMS;
    kc.History = 1;
    natsStatus s = js_CreateKeyValue(&kv, c->js, &kc);
    if (s != NATS_OK)
        s = js_KeyValue(&kv, c->js, BUCKET_ROOMS);
    kvConfig_Init(&kc);
    kc.Bucket = BUCKET_CKPT;
    kc.History = 1;
    natsStatus s2 = s == NATS_OK ? js_CreateKeyValue(&ck, c->js, &kc) : s;
    if (s == NATS_OK && s2 != NATS_OK)
        s2 = js_KeyValue(&ck, c->js, BUCKET_CKPT);
    if (s != NATS_OK || s2 != NATS_OK || (c->cfg.command_log && cluster__log_open(c) < 0)) {
        kvStore_Destroy(kv);
        kvStore_Destroy(ck);
        return PROTO_E_INTERNAL;
    }
    pthread_mutex_lock(&c->kv_lock);
    kvStore_Destroy(c->kv);
    kvStore_Destroy(c->ckpt);
    c->kv = kv;
    c->ckpt = ck;
    pthread_mutex_unlock(&c->kv_lock);
    return watch_directory(c);
}

/* One update of the watcher into the directory; a room placed here is
 * queued for the lobby unless this node has it. Under lock. */
static void dir_update(struct cluster *c, kvEntry *e)
{
    struct room_adoption ad;
    int rc = cluster__dir_apply(&c->dir, kvEntry_Key(e), kvEntry_Operation(e) == kvOp_Put,
                                kvEntry_ValueString(e), kvEntry_ValueLen(e), clock_mono_ns(), &ad);
    if (rc < 0)
        cluster__reject(c, "a directory entry that does not read");
    else if (rc > 0 && !cluster__find(c, ad.name, strlen(ad.name)))
        cluster__dir_adopt_queue(&c->dir, &ad);
}

/* Every update the watcher holds, into the directory (sorted for
 * /api/rooms when it changed), the first waited for up to wait_ms: true,
 * or false if the watcher could not be read (none, or NATS is away). */
static bool read_directory(struct cluster *c, int64_t wait_ms)
{
    bool changed = false, answered = false;
    for (int k = 0; k < 100000 && c->watcher; k++) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, c->watcher, k == 0 && wait_ms > 1 ? wait_ms : 1);
        answered |= s == NATS_OK || s == NATS_TIMEOUT;
        if (s != NATS_OK)
            break;
        if (!e)
            continue; /* the initial values are all in */
        pthread_mutex_lock(&c->lock);
        dir_update(c, e);
        pthread_mutex_unlock(&c->lock);
        kvEntry_Destroy(e);
        changed = true;
    }
    if (changed) {
        pthread_mutex_lock(&c->lock);
        cluster__dir_sort(&c->dir);
        pthread_mutex_unlock(&c->lock);
    }
    return answered;
}

static void steward_step(struct cluster *c, int64_t now)
{
    if (natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED)
        atomic_store(&c->connected, true);
    cluster__availability(c, now);
    cluster__resend(c, now);
    if (!cluster__is_connected(c))
        return;
    bool is_reopen = atomic_load(&c->reconnected) &&
                     (double)(now - atomic_load(&c->reconnected_ns)) >= REOPEN_AFTER_S * 1e9;
    if (is_reopen)
        atomic_store(&c->reconnected, false);
    if ((is_reopen || !c->kv) && open_buckets(c) < 0)
        return;
    if (!c->watcher && watch_directory(c) < 0)
        return;
    cluster__leases(c, now);           /* the rooms' roles (taken, lost) */
    cluster__follow_roles(c);          /* each room's subscriptions for its role, relays' wants */
    cluster__tiles_step(c, true, now); /* relays' views of their tiles */
    read_directory(c, 0);
    if ((double)(now - c->heartbeat_ns) >= HEARTBEAT_S * 1e9) {
        c->heartbeat_ns = now;
        cluster__heartbeat(c);
        cluster__publish_params(c); /* for relays that subscribed since the last change */
    }
}

/* Sleeps for ns unless stopped meanwhile: false if stopped. */
static bool steward_sleep(struct cluster *c, int64_t ns)
{
    pthread_mutex_lock(&c->stop_lock);
    if (!c->stop && ns > 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t at = until.tv_nsec + ns;
        until.tv_sec += at / 1000000000;
        until.tv_nsec = at % 1000000000;
        pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &until);
    }
    bool go_on = !c->stop;
    pthread_mutex_unlock(&c->stop_lock);
    return go_on;
}

/* Between two steps: the directory's updates are read as they come, in
 * slices of DIR_WAIT_MS, so that a room another node placed counts
 * in this node's next placement within milliseconds, not at its next step
 * (joins through different nodes in quick succession then spread). */
static void *steward_main(void *arg)
{
    struct cluster *c = arg;
    for (bool go_on = true; go_on;) {
        int64_t next = clock_mono_ns() + (int64_t)(c->cfg.step_s * 1e9);
        steward_step(c, clock_mono_ns());
        for (int64_t left; go_on && (left = next - clock_mono_ns()) > 0;) {
            int64_t slice_ms = left / 1000000 < DIR_WAIT_MS ? left / 1000000 : DIR_WAIT_MS;
            cluster__tiles_step(c, false, clock_mono_ns()); /* new views, lost bases */
            if (slice_ms < 1 || !cluster__is_connected(c) || !read_directory(c, slice_ms))
                go_on = steward_sleep(c, slice_ms < 1 ? left : slice_ms * 1000000);
            else
                go_on = steward_sleep(c, 0);
        }
    }
    return NULL;
}

/* Connects (or starts connecting in the background) and subscribes to
 * this node's reply subject: 0, or a negative PROTO_E* with a static
 * reason in *err (cluster__connect()). */
static int connect_nats(struct cluster *c, const char **err)
{
    int rc = cluster__connect(c, err);
    if (rc < 0)
        return rc;
    *err = "cannot set up the NATS connection";
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = WAIT_MS;
    snprintf(c->reply_subject, sizeof c->reply_subject, "flockd.node.%s.reply", c->node);
    if (natsConnection_JetStream(&c->js, c->nc, &jo) != NATS_OK ||
        natsConnection_Subscribe(&c->replies, c->nc, c->reply_subject, cluster__on_reply, c) !=
            NATS_OK)
        return PROTO_E_INTERNAL;
    *err = NULL;
    return 0;
}

struct cluster *cluster_create(const struct cluster_config *cfg, const char **err)
{
    if (!cluster_is_token(cfg->node_id, strlen(cfg->node_id), PROTO_NODE_MAX)) {
        *err = "--node-id: 1 to 64 characters of [A-Za-z0-9_-]";
        return NULL;
    }
    struct cluster *c = calloc(1, sizeof *c);
    if (!c) {
        *err = "out of memory";
        return NULL;
    }
    c->cfg = *cfg;
    if (cluster__dir_init(&c->dir, cfg->node_id) < 0) {
        free(c);
        *err = "out of memory";
        return NULL;
    }
    if (!(c->cfg.lease_s > 0))
        c->cfg.lease_s = 1.0;
    if (!(c->cfg.step_s > 0))
        c->cfg.step_s = c->cfg.lease_s / 5;
    snprintf(c->node, sizeof c->node, "%s", cfg->node_id);
    c->link = (struct room_link){.arg = c,
                                 .frame = cluster__link_frame,
                                 .forward = cluster__link_forward,
                                 .reply = cluster__link_reply,
                                 .attach = link_attach,
                                 .detach = link_detach,
                                 .fetch = link_fetch,
                                 .place = cluster__link_place,
                                 .adopt = link_adopt,
                                 .params = cluster__link_params,
                                 .owner_of = link_owner_of};
    if (cfg->command_log) {
        c->link.can_log = cluster__link_can_log;
        c->link.log = cluster__link_log;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->kv_lock, NULL);
    pthread_mutex_init(&c->pend_lock, NULL);
    pthread_mutex_init(&c->fwd_lock, NULL);
    char token[SECRET_TOKEN_LEN + 1];
    secret_token(token, clock_mono_ns()); /* the origins' base: random, per run */
    token[16] = '\0';
    c->origin_base = strtoull(token, NULL, 16);
    pthread_mutex_init(&c->stop_lock, NULL);
    pthread_cond_init(&c->stop_cond, NULL);
    if (nats_Open(-1) != NATS_OK || connect_nats(c, err) < 0 || cluster__tiles_start(c) < 0 ||
        pthread_create(&c->steward, NULL, steward_main, c) != 0) {
        if (*err == NULL)
            *err = "cannot start the cluster's thread";
        cluster_destroy(c);
        return NULL;
    }
    c->started = true;
    return c;
}

void cluster_quiesce(struct cluster *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->quiet = true; /* a handler that holds the lock finishes first */
    pthread_mutex_unlock(&c->lock);
}

void cluster_destroy(struct cluster *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->stop_lock);
    c->stop = true; /* also: the connection's close below is not news (cluster_conn.c) */
    pthread_cond_signal(&c->stop_cond);
    pthread_mutex_unlock(&c->stop_lock);
    if (c->started)
        pthread_join(c->steward, NULL);
    cluster__tiles_stop(c); /* before NATS goes: it publishes */
    cluster__unsubscribe(&c->replies);
    stop_watching(c);
    if (c->nc)
        natsConnection_Close(c->nc);
    kvStore_Destroy(c->kv);
    kvStore_Destroy(c->ckpt);
    jsCtx_Destroy(c->js);
    natsConnection_Destroy(c->nc);
    natsOptions_Destroy(c->opts);
    /* The library's threads deliver what they hold and end; on a loaded
     * machine that may take seconds, and what they still hold if it gives
     * up is leaked: wait long, and say so if even that was not enough. */
    if (nats_CloseAndWait(NATS_CLOSE_WAIT_MS) != NATS_OK)
        fprintf(stderr, "flockd: cluster: the NATS library did not stop within %d s\n",
                NATS_CLOSE_WAIT_MS / 1000);
    for (size_t i = 0; i < c->nrooms; i++) { /* rooms still attached at exit */
        cluster__tiles_free(c->rooms[i]);
        free(c->rooms[i]);
    }
    cluster__dir_free(&c->dir);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->kv_lock);
    pthread_mutex_destroy(&c->pend_lock);
    cluster__forwards_free(c);
    pthread_mutex_destroy(&c->fwd_lock);
    pthread_mutex_destroy(&c->stop_lock);
    pthread_cond_destroy(&c->stop_cond);
    free(c);
}

void cluster_render_health(struct cluster *c, struct textbuf *t)
{
    textbuf_printf(t, ",\"nats\":\"%s\",\"node\":\"%s\"",
                   cluster__is_connected(c) ? "connected" : "lost", c->node);
}

int cluster_render_rooms(struct cluster *c, struct textbuf *t, cluster_local_fn local, void *arg)
{
    pthread_mutex_lock(&c->lock);
    int n = cluster__dir_render(&c->dir, t, local, arg);
    pthread_mutex_unlock(&c->lock);
    return n;
}

void cluster_render_metrics(struct cluster *c, struct textbuf *t)
{
    uint32_t owned = 0, relayed = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms; i++)
        c->rooms[i]->owner ? owned++ : relayed++;
    pthread_mutex_unlock(&c->lock);
    const struct {
        const char *name, *help;
        const atomic_uint_fast64_t *v;
    } counters[] = {
        {"frames_published", "frames this node's rooms published for other nodes",
         &c->n.frames_published},
        {"frames_relayed", "frames of other nodes' rooms relayed to this node's clients",
         &c->n.frames_relayed},
        {"frames_dropped", "frames not published (NATS lost or refused)", &c->n.frames_dropped},
        {"frames_stale", "relayed frames dropped for an older lease term", &c->n.frames_stale},
        {"commands_forwarded", "commands of this node's clients sent to an owner node",
         &c->n.commands_forwarded},
        {"commands_served", "replies sent to other nodes' clients", &c->n.commands_served},
        {"replies_relayed", "replies of owner nodes handed to this node's clients",
         &c->n.replies_relayed},
        {"lease_renewals", "lease renewals of owned rooms", &c->n.renewals},
        {"lease_takeovers", "rooms this node took (new, or expired elsewhere)", &c->n.takeovers},
        {"leases_lost", "owned rooms another node took", &c->n.leases_lost},
        {"checkpoints_stored", "checkpoints stored in the bucket", &c->n.checkpoints_stored},
        {"checkpoints_dropped",
         "checkpoints not stored (NATS lost, or the lease not renewed lately)",
         &c->n.checkpoints_dropped},
        {"log_batches", "batches of commands stored in the rooms' command log", &c->n.log_batches},
        {"log_failures", "batches the command log did not store (the room stepped down)",
         &c->n.log_failures},
        {"log_trims", "times a room's log was trimmed (to a checkpoint's mark 12 s old)",
         &c->n.log_trims},
        {"log_takeovers", "rooms taken over with their command log read and marked",
         &c->n.log_takeovers},
        {"frames_fenced", "frames not published: the lease not renewed lately enough",
         &c->n.frames_fenced},
        {"commands_resent", "forwarded commands sent again (no reply within a second)",
         &c->n.commands_resent},
        {"commands_expired", "forwarded commands answered unavailable (no reply in 8 s)",
         &c->n.commands_expired},
        {"replies_duplicate", "owners' replies to commands already answered, dropped",
         &c->n.replies_duplicate},
        {"messages_rejected", "messages from NATS refused as malformed or hostile", &c->n.rejected},
        {"nats_disconnects", "times the NATS connection was lost", &c->n.disconnects},
        {"nats_reconnects", "times it came back", &c->n.reconnects},
        {"tiles_published", "version 3 tiles messages this node's rooms sent relay nodes",
         &c->n.tiles_published},
        {"tiles_dropped", "tiles messages not sent (NATS lost, too large, the thread behind)",
         &c->n.tiles_dropped},
        {"tiles_received", "tiles messages of other nodes' rooms taken", &c->n.tiles_received},
        {"tiles_bytes_received", "bytes of the tiles messages taken", &c->n.tiles_bytes},
        {"tiles_parts_received", "super-tiles (version 3 parts) of the tiles messages taken",
         &c->n.tiles_parts},
        {"tiles_stale", "tiles messages dropped for an older lease term", &c->n.tiles_stale},
        {"tiles_restarts", "times a relay asked an owner for keys (a base it lacked)",
         &c->n.tiles_restarts},
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        textbuf_printf(t,
                       "# HELP flockd_cluster_%s_total %s\n# TYPE flockd_cluster_%s_total counter\n"
                       "flockd_cluster_%s_total{node=\"%s\"} %llu\n",
                       counters[i].name, counters[i].help, counters[i].name, counters[i].name,
                       c->node, (unsigned long long)atomic_load(counters[i].v));
    textbuf_printf(t,
                   "# HELP flockd_cluster_rooms rooms of this node by role\n"
                   "# TYPE flockd_cluster_rooms gauge\n"
                   "flockd_cluster_rooms{node=\"%s\",role=\"owner\"} %u\n"
                   "flockd_cluster_rooms{node=\"%s\",role=\"relay\"} %u\n"
                   "# HELP flockd_cluster_nats_up 1 while connected to NATS\n"
                   "# TYPE flockd_cluster_nats_up gauge\nflockd_cluster_nats_up{node=\"%s\"} %d\n"
                   "# HELP flockd_cluster_tiles_wanted super-tiles this node asks owners for\n"
                   "# TYPE flockd_cluster_tiles_wanted gauge\n"
                   "flockd_cluster_tiles_wanted{node=\"%s\"} %lld\n"
                   "# HELP flockd_cluster_nats_rtt_seconds round trip to the NATS server\n"
                   "# TYPE flockd_cluster_nats_rtt_seconds gauge\n"
                   "flockd_cluster_nats_rtt_seconds{node=\"%s\"} %.6f\n",
                   c->node, owned, c->node, relayed, c->node, cluster__is_connected(c) ? 1 : 0,
                   c->node, (long long)atomic_load(&c->n.tiles_wanted), c->node,
                   (double)atomic_load(&c->n.rtt_us) / 1e6);
}
