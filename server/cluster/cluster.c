/*
 * cluster.c — the NATS connection and the steward thread, the rooms
 * attached to the cluster, and what the endpoints show (see cluster.h;
 * subjects and keys in server/cluster/CLUSTER.md). The messages between nodes are
 * in cluster_msg.c, the leases and the directory in cluster_lease.c.
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
#include "metrics.h"
#include "proto_reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool cluster_is_connected(const struct cluster *c)
{
    return atomic_load_explicit(&c->connected, memory_order_acquire);
}

/* True if s[0..len) is 1..max characters of [A-Za-z0-9_-]: a node id. */
bool cluster__is_token(const char *s, size_t len, size_t max)
{
    if (len < 1 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!cluster_is_room_name(s + i, 1))
            return false;
    return true;
}

/* The attached room called name (len bytes), or NULL. Under lock. */
struct croom *cluster__find(struct cluster *c, const char *name, size_t len)
{
    if (c->quiet)
        return NULL;
    for (size_t i = 0; i < c->nrooms; i++)
        if (strlen(c->rooms[i]->name) == len && memcmp(c->rooms[i]->name, name, len) == 0)
            return c->rooms[i];
    return NULL;
}

struct croom *cluster__find_room(struct cluster *c, const struct room *r)
{
    for (size_t i = 0; i < c->nrooms; i++)
        if (c->rooms[i]->room == r)
            return c->rooms[i];
    return NULL;
}

void cluster__unsubscribe(natsSubscription **s)
{
    if (*s) {
        natsSubscription_Unsubscribe(*s);
        natsSubscription_Destroy(*s);
        *s = NULL;
    }
}

static void link_attach(void *arg, struct room *r)
{
    struct cluster *c = arg;
    struct croom *cr = calloc(1, sizeof *cr);
    if (!cr)
        return; /* the room relays nothing and is never taken: it stays empty */
    cr->room = r;
    cr->frame_ns = clock_mono_ns();
    snprintf(cr->name, sizeof cr->name, "%s", room_name(r));
    pthread_mutex_lock(&c->lock);
    cluster__take_fetched(c, r); /* the owner's parameters, if a join asked for them */
    if (c->nrooms < MAX_ROOMS) {
        c->rooms[c->nrooms++] = cr;
        cluster__resubscribe(c, cr); /* a relay's frames and parameters from now on */
    } else {
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
    if (cr->owner && cluster_is_connected(c)) {
        char key[64];
        snprintf(key, sizeof key, "room.%s", cr->name);
        pthread_mutex_lock(&c->kv_lock);
        if (c->kv)
            kvStore_Delete(c->kv, key);
        pthread_mutex_unlock(&c->kv_lock);
    }
    free(cr);
}

const struct room_link *cluster_link(struct cluster *c)
{
    return &c->link;
}

static void on_disconnected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->connected, false);
    COUNT(c, disconnects);
    fprintf(stderr, "flockd: cluster: NATS lost; owned rooms tick on, relayed rooms wait\n");
}

/* The first connection, made in the background when NATS was not there
 * at start (a connect never blocks start-up). */
static void on_connected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->connected, true);
    fprintf(stderr, "flockd: cluster: connected to NATS\n");
}

static void on_reconnected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->reconnected_ns, clock_mono_ns());
    atomic_store(&c->reconnected, true);
    atomic_store(&c->connected, true);
    COUNT(c, reconnects);
    fprintf(stderr, "flockd: cluster: NATS is back\n");
}

static void stop_watching(struct cluster *c)
{
    if (c->watcher) {
        kvWatcher_Stop(c->watcher);
        kvWatcher_Destroy(c->watcher);
        c->watcher = NULL;
    }
}

/* Opens (creating if need be) both buckets. 0, or -1 (tried again later). */
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
    if (s != NATS_OK || s2 != NATS_OK) {
        kvStore_Destroy(kv);
        kvStore_Destroy(ck);
        return -1;
    }
    pthread_mutex_lock(&c->kv_lock);
    kvStore_Destroy(c->kv);
    kvStore_Destroy(c->ckpt);
    c->kv = kv;
    c->ckpt = ck;
    pthread_mutex_unlock(&c->kv_lock);
    /* The directory anew: the watcher replays every lease first. */
    stop_watching(c);
    kvStore_WatchAll(&c->watcher, kv, NULL);
    pthread_mutex_lock(&c->lock);
    c->ndir = 0;
    c->nnodes = 0;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static void steward_step(struct cluster *c, int64_t now)
{
    if (natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED)
        atomic_store(&c->connected, true);
    cluster__availability(c, now);
    if (!cluster_is_connected(c))
        return;
    bool is_reopen = atomic_load(&c->reconnected) &&
                     (double)(now - atomic_load(&c->reconnected_ns)) >= REOPEN_AFTER_S * 1e9;
    if (is_reopen)
        atomic_store(&c->reconnected, false);
    if ((is_reopen || !c->kv) && open_buckets(c) < 0)
        return;
    cluster__leases(c, now);
    cluster__read_directory(c, 0);
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
            if (slice_ms < 1 || !cluster_is_connected(c) || !cluster__read_directory(c, slice_ms))
                go_on = steward_sleep(c, slice_ms < 1 ? left : slice_ms * 1000000);
            else
                go_on = steward_sleep(c, 0);
        }
    }
    return NULL;
}

/* The URLs of cfg as libnats takes them (split at commas). 0 or -1. */
static int set_servers(natsOptions *o, const char *url)
{
    char copy[1024];
    const char *list[32];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", url);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && n < 32;
         tok = strtok_r(NULL, ",", &save))
        list[n++] = tok;
    return n > 0 && natsOptions_SetServers(o, list, n) == NATS_OK ? 0 : -1;
}

static int connect_nats(struct cluster *c, const char **err)
{
    *err = "cannot set up the NATS connection";
    if (natsOptions_Create(&c->opts) != NATS_OK)
        return -1;
    natsOptions *o = c->opts;
    if (set_servers(o, c->cfg.url) < 0) {
        *err = "--nats: not a NATS URL list";
        return -1;
    }
    if (natsOptions_SetName(o, c->node) != NATS_OK ||
        natsOptions_SetTimeout(o, WAIT_MS) != NATS_OK ||
        natsOptions_SetMaxReconnect(o, -1) != NATS_OK ||
        natsOptions_SetReconnectWait(o, 250) != NATS_OK ||
        natsOptions_SetPingInterval(o, 1000) != NATS_OK ||
        natsOptions_SetMaxPingsOut(o, 2) != NATS_OK ||
        natsOptions_SetReconnectBufSize(o, 1 << 20) != NATS_OK ||
        natsOptions_SetRetryOnFailedConnect(o, true, on_connected, c) != NATS_OK ||
        natsOptions_SetDisconnectedCB(o, on_disconnected, c) != NATS_OK ||
        natsOptions_SetReconnectedCB(o, on_reconnected, c) != NATS_OK)
        return -1;
    natsStatus s = natsConnection_Connect(&c->nc, o);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
        *err = "--nats: cannot connect";
        return -1;
    }
    atomic_store(&c->connected, s == NATS_OK);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = WAIT_MS;
    snprintf(c->reply_subject, sizeof c->reply_subject, "flockd.node.%s.reply", c->node);
    if (natsConnection_JetStream(&c->js, c->nc, &jo) != NATS_OK ||
        natsConnection_Subscribe(&c->replies, c->nc, c->reply_subject, cluster__on_reply, c) !=
            NATS_OK)
        return -1;
    return 0;
}

struct cluster *cluster_create(const struct cluster_config *cfg, const char **err)
{
    if (!cluster__is_token(cfg->node_id, strlen(cfg->node_id), PROTO_NODE_MAX)) {
        *err = "--node-id: 1 to 64 characters of [A-Za-z0-9_-]";
        return NULL;
    }
    struct cluster *c = calloc(1, sizeof *c);
    if (!c) {
        *err = "out of memory";
        return NULL;
    }
    c->cfg = *cfg;
    c->dir = calloc(MAX_DIR, sizeof *c->dir);
    if (!c->dir) {
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
                                 .fetch = cluster__link_fetch,
                                 .place = cluster__link_place,
                                 .adopt = cluster__link_adopt,
                                 .params = cluster__link_params,
                                 .owner_of = cluster__link_owner_of};
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->kv_lock, NULL);
    pthread_mutex_init(&c->pend_lock, NULL);
    pthread_mutex_init(&c->stop_lock, NULL);
    pthread_cond_init(&c->stop_cond, NULL);
    if (nats_Open(-1) != NATS_OK || connect_nats(c, err) < 0 ||
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
    if (c->started) {
        pthread_mutex_lock(&c->stop_lock);
        c->stop = true;
        pthread_cond_signal(&c->stop_cond);
        pthread_mutex_unlock(&c->stop_lock);
        pthread_join(c->steward, NULL);
    }
    cluster__unsubscribe(&c->replies);
    stop_watching(c);
    if (c->nc)
        natsConnection_Close(c->nc);
    kvStore_Destroy(c->kv);
    kvStore_Destroy(c->ckpt);
    jsCtx_Destroy(c->js);
    natsConnection_Destroy(c->nc);
    natsOptions_Destroy(c->opts);
    nats_CloseAndWait(2000);
    for (size_t i = 0; i < c->nrooms; i++)
        free(c->rooms[i]); /* rooms still attached at exit */
    free(c->dir);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->kv_lock);
    pthread_mutex_destroy(&c->pend_lock);
    pthread_mutex_destroy(&c->stop_lock);
    pthread_cond_destroy(&c->stop_cond);
    free(c);
}

void cluster_render_health(struct cluster *c, struct textbuf *t)
{
    textbuf_printf(t, ",\"nats\":\"%s\",\"node\":\"%s\"",
                   cluster_is_connected(c) ? "connected" : "lost", c->node);
}

int cluster_render_rooms(struct cluster *c, struct textbuf *t, cluster_local_fn local, void *arg)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->ndir; i++) {
        const struct dir_entry *d = &c->dir[i];
        if (local(arg, t, d->name, d->node, i == 0))
            continue;
        textbuf_printf(t,
                       "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":0,\"admins\":0,"
                       "\"viewers\":0,\"boids\":%u,\"tick\":%llu,\"password\":false,"
                       "\"teams\":0,\"node\":\"%s\"}",
                       i ? "," : "", d->name, d->mode, d->boids, (unsigned long long)d->tick,
                       d->node);
    }
    int n = (int)c->ndir;
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
        {"checkpoints_dropped", "checkpoints not stored (NATS lost)", &c->n.checkpoints_dropped},
        {"messages_rejected", "messages from NATS refused as malformed or hostile", &c->n.rejected},
        {"nats_disconnects", "times the NATS connection was lost", &c->n.disconnects},
        {"nats_reconnects", "times it came back", &c->n.reconnects},
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
                   "# HELP flockd_cluster_nats_rtt_seconds round trip to the NATS server\n"
                   "# TYPE flockd_cluster_nats_rtt_seconds gauge\n"
                   "flockd_cluster_nats_rtt_seconds{node=\"%s\"} %.6f\n",
                   c->node, owned, c->node, relayed, c->node, cluster_is_connected(c) ? 1 : 0,
                   c->node, (double)atomic_load(&c->n.rtt_us) / 1e6);
}
