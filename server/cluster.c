/*
 * cluster.c — the NATS connection, the leases, the relays and the owners'
 * side of them (see cluster.h; subjects and keys in server/CLUSTER.md).
 *
 * Locking: `lock` guards the attached rooms (their list, terms and
 * subscriptions) and the directory; `pend_lock` the other nodes' clients
 * whose commands await their replies. NATS handlers look a room up by the
 * name in the subject under `lock` and use it there, so a room detached
 * meanwhile is never touched. The steward does its key-value calls (which
 * wait on the server, at most `wait_ms`) outside the lock and applies the
 * results under it if the room is still attached.
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster.h"

#include "clock.h"
#include "cluster_wire.h"
#include "metrics.h"
#include "proto_reply.h"

#include <nats/nats.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUCKET_ROOMS  "flockd"      /* room.NAME: leases; node.ID: heartbeats */
#define BUCKET_CKPT   "flockd_ckpt" /* NAME: the room's last checkpoint */
#define WAIT_MS       500           /* the longest a key-value call waits */
#define MAX_ROOMS     1024          /* attached rooms (max-rooms is at most 1024) */
#define PENDING       4096          /* other nodes' commands awaiting a reply */
#define PENDING_TTL_S 10.0          /* a reply not produced by then is forgotten */
#define REMOTE        (1ull << 63)  /* client ids of other nodes' clients here */
#define SUBJECT_MAX   128
#define HEARTBEAT_S   1.0  /* how often a node writes its heartbeat */
#define MAX_DIR       4096 /* rooms of the cluster the directory lists */

/* A room of this node, relaying or owned. */
struct croom {
    struct room *room;
    char name[PROTO_ROOM_MAX + 1];
    bool owner;
    uint64_t rev;        /* the lease key's revision last seen (owner: last written) */
    int64_t rev_seen_ns; /* when rev was first seen (relay: the lease runs from here) */
    uint64_t term;       /* owner: the revision the lease was taken at */
    uint64_t term_seen;  /* relay: the highest term of a frame accepted */
    natsSubscription *frames, *cmds, *wants;
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
    char node[65];
    char mode[16];
    uint32_t boids, viewers;
    uint64_t tick;
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
    char node[65];
    char reply_subject[SUBJECT_MAX];
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv, *ckpt; /* steward thread (and the checkpoint sink, under kv_lock) */
    pthread_mutex_t kv_lock;
    natsSubscription *replies;
    atomic_bool connected, reconnected;
    struct room_link link;

    pthread_mutex_t lock;
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
    kvWatcher *watcher; /* the steward's: every update of a lease key */
    struct cluster_counters n;
};

static _Atomic(struct cluster *) g_cluster;

#define COUNT(c, field) atomic_fetch_add_explicit(&(c)->n.field, 1, memory_order_relaxed)

struct cluster *cluster_current(void)
{
    return atomic_load_explicit(&g_cluster, memory_order_acquire);
}

const char *cluster_node_id(const struct cluster *c)
{
    return c->node;
}

bool cluster_is_connected(const struct cluster *c)
{
    return atomic_load_explicit(&c->connected, memory_order_acquire);
}

/* True if s[0..len) is 1..max characters of [A-Za-z0-9_-]: a node id. */
static bool is_token(const char *s, size_t len, size_t max)
{
    if (len < 1 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!cluster_is_room_name(s + i, 1))
            return false;
    return true;
}

/* ---- rooms by name ------------------------------------------------------------ */

/* The attached room called name (len bytes), or NULL. Under lock. */
static struct croom *find(struct cluster *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->nrooms; i++)
        if (strlen(c->rooms[i]->name) == len && memcmp(c->rooms[i]->name, name, len) == 0)
            return c->rooms[i];
    return NULL;
}

static struct croom *find_room(struct cluster *c, const struct room *r)
{
    for (size_t i = 0; i < c->nrooms; i++)
        if (c->rooms[i]->room == r)
            return c->rooms[i];
    return NULL;
}

/* The room name in "flockd.room.NAME.KIND", checked: its start and length,
 * or NULL. */
static const char *subject_room(const char *subject, size_t *len)
{
    static const char prefix[] = "flockd.room.";
    if (strncmp(subject, prefix, sizeof prefix - 1) != 0)
        return NULL;
    const char *name = subject + sizeof prefix - 1;
    const char *dot = strchr(name, '.');
    if (!dot || !cluster_is_room_name(name, (size_t)(dot - name)))
        return NULL;
    *len = (size_t)(dot - name);
    return name;
}

/* ---- the owner's side: frames out, commands in, replies out ----------------------- */

static void link_frame(void *arg, struct room *r, const struct frame *f)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = find_room(c, r);
    uint64_t term = cr && cr->owner ? cr->term : 0;
    pthread_mutex_unlock(&c->lock);
    if (!term)
        return;
    if (!cluster_is_connected(c)) { /* nothing buffers while NATS is away */
        COUNT(c, frames_dropped);
        return;
    }
    size_t size = cluster_frame_size(f);
    uint8_t *buf = malloc(size);
    int len = buf ? cluster_frame_encode(f, term, buf, size) : PROTO_E_NOSPACE;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.frame", room_name(r));
    if (len > 0 && natsConnection_Publish(c->nc, subject, buf, len) == NATS_OK)
        COUNT(c, frames_published);
    else
        COUNT(c, frames_dropped);
    free(buf);
}

/* A slot for a command from reply_to's client: its client id here, or 0
 * if every slot is taken. */
static uint64_t pending_take(struct cluster *c, const char *room, const char *reply_to,
                             uint64_t client)
{
    int64_t now = clock_mono_ns();
    uint64_t id = 0;
    pthread_mutex_lock(&c->pend_lock);
    for (uint32_t i = 0; i < PENDING && !id; i++) {
        struct pending *p = &c->pend[i];
        if (p->gen && (double)(now - p->at_ns) < PENDING_TTL_S * 1e9)
            continue;
        *p = (struct pending){.gen = ++c->pend_gen, .client = client, .at_ns = now};
        snprintf(p->room, sizeof p->room, "%s", room);
        snprintf(p->reply_to, sizeof p->reply_to, "%s", reply_to);
        id = REMOTE | (p->gen << 12) | i;
    }
    pthread_mutex_unlock(&c->pend_lock);
    return id;
}

/* Forgets a command whose reply will never come. */
static void pending_free(struct cluster *c, uint64_t client)
{
    uint32_t i = (uint32_t)(client & 0xfff);
    pthread_mutex_lock(&c->pend_lock);
    if (c->pend[i].gen == (client & ~REMOTE) >> 12)
        c->pend[i].gen = 0;
    pthread_mutex_unlock(&c->pend_lock);
}

/* True if subject is a node's reply subject, flockd.node.ID.reply. */
static bool is_reply_subject(const char *subject)
{
    static const char prefix[] = "flockd.node.", suffix[] = ".reply";
    size_t n = strlen(subject);
    if (n >= SUBJECT_MAX || n <= sizeof prefix + sizeof suffix - 2 ||
        strncmp(subject, prefix, sizeof prefix - 1) != 0 ||
        strcmp(subject + n - (sizeof suffix - 1), suffix) != 0)
        return false;
    return is_token(subject + sizeof prefix - 1, n - (sizeof prefix - 1) - (sizeof suffix - 1), 64);
}

/* Sends a reply to the node whose client it is. */
static void send_reply(struct cluster *c, const struct pending *p, enum room_reply_kind kind,
                       const char *text, size_t len)
{
    struct cluster_reply rep = {.client = p->client, .kind = kind, .text = text, .text_len = len};
    snprintf(rep.room, sizeof rep.room, "%s", p->room);
    uint8_t buf[PROTO_REPLY_BYTES + 128];
    int n = len <= PROTO_REPLY_BYTES ? cluster_reply_encode(&rep, buf, sizeof buf) : -1;
    if (n > 0 && natsConnection_Publish(c->nc, p->reply_to, buf, n) == NATS_OK)
        COUNT(c, commands_served);
}

static bool link_reply(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                       size_t len)
{
    struct cluster *c = arg;
    if (!(client & REMOTE))
        return false;
    uint32_t i = (uint32_t)(client & 0xfff);
    uint64_t gen = (client & ~REMOTE) >> 12;
    struct pending p = {0};
    pthread_mutex_lock(&c->pend_lock);
    if (c->pend[i].gen == gen) {
        p = c->pend[i];
        c->pend[i].gen = 0;
    }
    pthread_mutex_unlock(&c->pend_lock);
    if (p.gen)
        send_reply(c, &p, kind, text, len);
    return true;
}

/* An error for a command that never reached the room, straight back. */
static void refuse_now(struct cluster *c, const struct cluster_cmd *cmd, const char *reply_to,
                       int code, const char *message)
{
    char text[PROTO_REPLY_BYTES];
    int len = proto_reply_error(text, sizeof text, cmd->id, code, message);
    struct pending p = {.gen = 1, .client = cmd->who.client};
    snprintf(p.room, sizeof p.room, "%s", cmd->room);
    snprintf(p.reply_to, sizeof p.reply_to, "%s", reply_to);
    if (len > 0)
        send_reply(c, &p, ROOM_REPLY_PLAIN, text, (size_t)len);
}

/* The key of the obstacles another node's client adds here: its own key
 * there, moved into a space no key of this node uses. */
static uint64_t remote_owner(const char *reply_to, uint64_t owner)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = reply_to; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return REMOTE | ((h ^ owner * 0x9E3779B97F4A7C15ull) & ~REMOTE);
}

/* Pushes a decoded command into the owned room r. Under lock. */
static void serve_command(struct cluster *c, struct room *r, struct cluster_cmd *cmd,
                          const char *reply_to)
{
    struct proto_command pc;
    struct proto_error perr;
    struct proto_limits lim;
    int refused = cmd->refused;
    const char *message = "";
    char msg[PROTO_MESSAGE_MAX];
    if (refused) {
        snprintf(msg, sizeof msg, "%.*s", (int)cmd->text_len, cmd->text);
        message = msg;
    } else {
        room_limits(r, c->cfg.max_message, &lim);
        if (proto_command_parse(cmd->text, cmd->text_len, &lim, &pc, &perr) < 0 ||
            pc.kind == PROTO_CMD_JOIN) {
            COUNT(c, rejected);
            refuse_now(c, cmd, reply_to, PROTO_E_BAD_ARG, "the owner node refused the command");
            return;
        }
    }
    uint64_t client = pending_take(c, cmd->room, reply_to, cmd->who.client);
    if (!client) {
        refuse_now(c, cmd, reply_to, PROTO_E_QUEUE_FULL, "the owner node has too many commands");
        return;
    }
    struct room_actor who = cmd->who;
    who.client = client;
    who.owner = remote_owner(reply_to, cmd->who.owner);
    who.team = -1; /* teams are the owner's lobby's */
    int rc =
        refused ? room_push_refusal(r, client, cmd->id, refused, message) : room_push(r, &who, &pc);
    if (rc < 0) {
        pending_free(c, client);
        refuse_now(c, cmd, reply_to, rc, "the room's command queue is full");
    }
}

static void on_command(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    struct cluster_cmd cmd;
    size_t len;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    const char *reply_to = natsMsg_GetReply(msg);
    if (!name || !reply_to || !is_reply_subject(reply_to) ||
        cluster_cmd_decode((const uint8_t *)natsMsg_GetData(msg),
                           (size_t)natsMsg_GetDataLength(msg), &cmd) < 0 ||
        strlen(cmd.room) != len || memcmp(cmd.room, name, len) != 0) {
        COUNT(c, rejected);
        natsMsg_Destroy(msg);
        return;
    }
    pthread_mutex_lock(&c->lock);
    struct croom *cr = find(c, name, len);
    if (cr && cr->owner)
        serve_command(c, cr->room, &cmd, reply_to);
    else
        refuse_now(c, &cmd, reply_to, PROTO_E_INTERNAL, "the room moved to another node; retry");
    pthread_mutex_unlock(&c->lock);
    natsMsg_Destroy(msg);
}

static void on_want(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    size_t len;
    unsigned kinds;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    if (!name || cluster_want_decode((const uint8_t *)natsMsg_GetData(msg),
                                     (size_t)natsMsg_GetDataLength(msg), &kinds) < 0) {
        COUNT(c, rejected);
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = find(c, name, len);
        if (cr && cr->owner)
            room_relay_want(cr->room, kinds, clock_mono_ns());
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

/* ---- the relay's side: frames in, commands out, replies in ------------------------ */

static void on_frame(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    size_t len = 0;
    char name[PROTO_ROOM_MAX + 1];
    const char *subject_name = subject_room(natsMsg_GetSubject(msg), &len);
    if (subject_name)
        memcpy(name, subject_name, len); /* the subject goes with the message */
    struct cluster_frame_meta meta = {0};
    int rc = PROTO_E_BAD_VALUE;
    struct frame *f = subject_name ? cluster_frame_decode((const uint8_t *)natsMsg_GetData(msg),
                                                          (size_t)natsMsg_GetDataLength(msg),
                                                          c->cfg.frame_pre, &meta, &rc)
                                   : NULL;
    uint64_t term = meta.term;
    natsMsg_Destroy(msg);
    if (!f) {
        COUNT(c, rejected);
        return;
    }
    pthread_mutex_lock(&c->lock);
    struct croom *cr = find(c, name, len);
    if (cr && !cr->owner && term >= cr->term_seen) {
        cr->term_seen = term;
        room_relay_frame(cr->room, f, meta.boids, meta.paused); /* takes f */
        f = NULL;
        COUNT(c, frames_relayed);
    } else if (cr && !cr->owner) {
        COUNT(c, frames_stale); /* an owner that lost its lease */
    }
    pthread_mutex_unlock(&c->lock);
    frame_release(f);
}

static int link_forward(void *arg, struct room *r, const struct room_actor *who,
                        const struct proto_command *cmd, int refused, const char *message)
{
    struct cluster *c = arg;
    if (!cluster_is_connected(c))
        return PROTO_E_INTERNAL;
    char text[CLUSTER_TEXT_MAX < 65536 ? CLUSTER_TEXT_MAX : 65536];
    int tlen = refused ? snprintf(text, sizeof text, "%s", message)
                       : proto_command_format(cmd, text, sizeof text);
    if (tlen < 0 || (size_t)tlen >= sizeof text)
        return PROTO_E_INTERNAL;
    struct cluster_cmd m = {
        .who = *who, .refused = refused, .text = text, .text_len = (size_t)tlen};
    snprintf(m.room, sizeof m.room, "%s", room_name(r));
    snprintf(m.id, sizeof m.id, "%s", cmd->id);
    static _Thread_local uint8_t buf[65536 + 1024];
    int len = cluster_cmd_encode(&m, buf, sizeof buf);
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.cmd", m.room);
    if (len < 0 ||
        natsConnection_PublishRequest(c->nc, subject, c->reply_subject, buf, len) != NATS_OK)
        return PROTO_E_INTERNAL;
    COUNT(c, commands_forwarded);
    return 0;
}

static void on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    struct cluster_reply rep;
    if (cluster_reply_decode((const uint8_t *)natsMsg_GetData(msg),
                             (size_t)natsMsg_GetDataLength(msg), &rep) < 0) {
        COUNT(c, rejected);
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = find(c, rep.room, strlen(rep.room));
        if (cr) {
            room_relay_reply(cr->room, rep.client, rep.kind, rep.text, rep.text_len);
            COUNT(c, replies_relayed);
        }
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

/* ---- attaching rooms ---------------------------------------------------------------- */

static void link_attach(void *arg, struct room *r)
{
    struct cluster *c = arg;
    struct croom *cr = calloc(1, sizeof *cr);
    if (!cr)
        return; /* the room relays nothing and is never taken: it stays empty */
    cr->room = r;
    snprintf(cr->name, sizeof cr->name, "%s", room_name(r));
    pthread_mutex_lock(&c->lock);
    if (c->nrooms < MAX_ROOMS)
        c->rooms[c->nrooms++] = cr;
    else
        free(cr);
    pthread_mutex_unlock(&c->lock);
    /* The steward looks at it at its next step. */
}

static void unsubscribe(natsSubscription **s)
{
    if (*s) {
        natsSubscription_Unsubscribe(*s);
        natsSubscription_Destroy(*s);
        *s = NULL;
    }
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
    unsubscribe(&cr->frames);
    unsubscribe(&cr->cmds);
    unsubscribe(&cr->wants);
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

/* ---- leases ---------------------------------------------------------------------------- */

/* What the steward read or wrote for one room, outside the lock. */
struct lease_job {
    struct room *room;
    char name[PROTO_ROOM_MAX + 1];
    bool owner;
    uint64_t rev, term;
    int64_t rev_seen_ns;
    /* results */
    enum { KEEP, RENEWED, TAKEN, LOST, SEEN } outcome;
    uint64_t new_rev;
    bool store_reset; /* the revision went back: the server's store is new */
    uint8_t *ck;      /* TAKEN: the checkpoint to restore, or NULL */
    size_t ck_len;
};

/* The lease value for room r: JSON with this node and the room's figures. */
static int lease_value(struct cluster *c, struct room *r, char *buf, size_t cap)
{
    struct room_info info;
    room_info(r, &info);
    return snprintf(buf, cap, "{\"node\":\"%s\",\"mode\":\"%s\",\"boids\":%u,\"tick\":%llu}",
                    c->node, proto_mode_name(room_mode(r)), info.boids,
                    (unsigned long long)info.tick);
}

/* The node named in a lease value into node (cap bytes): 0, or -1 if the
 * value is not one (counted: a hostile or garbled key). */
static int lease_node(struct cluster *c, const char *val, int len, char *node, size_t cap)
{
    static const char key[] = "{\"node\":\"";
    if (len < (int)sizeof key || memcmp(val, key, sizeof key - 1) != 0)
        goto bad;
    const char *start = val + sizeof key - 1;
    const char *end = memchr(start, '"', (size_t)(len - (int)(sizeof key - 1)));
    if (!end || (size_t)(end - start) >= cap || !is_token(start, (size_t)(end - start), cap - 1))
        goto bad;
    memcpy(node, start, (size_t)(end - start));
    node[end - start] = '\0';
    return 0;
bad:
    COUNT(c, rejected);
    return -1;
}

/* The room's last checkpoint from the bucket into j (none: j->ck NULL). */
static void fetch_checkpoint(struct cluster *c, struct lease_job *j)
{
    kvEntry *e = NULL;
    if (kvStore_Get(&e, c->ckpt, j->name) != NATS_OK)
        return;
    int len = kvEntry_ValueLen(e);
    j->ck = len > 0 ? malloc((size_t)len) : NULL;
    if (j->ck) {
        memcpy(j->ck, kvEntry_Value(e), (size_t)len);
        j->ck_len = (size_t)len;
    }
    kvEntry_Destroy(e);
}

/* A room of the cluster that this node does not have: 1 and its last
 * checkpoint, or 0 (no lease: nobody has it, or NATS cannot say). */
static int link_fetch(void *arg, const char *name, uint8_t **ck, size_t *len)
{
    struct cluster *c = arg;
    *ck = NULL;
    *len = 0;
    if (!cluster_is_connected(c) || !cluster_is_room_name(name, strlen(name)))
        return 0;
    char key[64];
    snprintf(key, sizeof key, "room.%s", name);
    kvEntry *e = NULL;
    pthread_mutex_lock(&c->kv_lock);
    natsStatus s = c->kv ? kvStore_Get(&e, c->kv, key) : NATS_NOT_FOUND;
    kvEntry_Destroy(e);
    struct lease_job j = {0};
    snprintf(j.name, sizeof j.name, "%s", name);
    if (s == NATS_OK && c->ckpt)
        fetch_checkpoint(c, &j);
    pthread_mutex_unlock(&c->kv_lock);
    *ck = j.ck;
    *len = j.ck_len;
    return s == NATS_OK;
}

const struct room_link *cluster_link(struct cluster *c)
{
    return &c->link;
}

/* The owner renews: RENEWED, LOST (another node holds it) or KEEP (NATS
 * did not answer: the room ticks on). */
static void renew(struct cluster *c, struct lease_job *j, const char *key, const char *val,
                  int vlen)
{
    uint64_t rev = 0;
    if (kvStore_Update(&rev, c->kv, key, val, vlen, j->rev) == NATS_OK) {
        j->outcome = RENEWED;
        j->new_rev = rev;
        return;
    }
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, c->kv, key);
    char node[65];
    if (s == NATS_NOT_FOUND && kvStore_Create(&rev, c->kv, key, val, vlen) == NATS_OK) {
        j->outcome = TAKEN; /* the store lost the key (a new server): ours again */
        j->new_rev = rev;
    } else if (s == NATS_OK &&
               lease_node(c, kvEntry_ValueString(e), kvEntry_ValueLen(e), node, sizeof node) == 0 &&
               strcmp(node, c->node) != 0) {
        j->outcome = LOST;
    }
    kvEntry_Destroy(e);
}

/* A relay looks at the lease: TAKEN (absent, expired, or this node's from
 * before), SEEN (a new revision) or KEEP. */
static void watch(struct cluster *c, struct lease_job *j, const char *key, const char *val,
                  int vlen, int64_t now)
{
    kvEntry *e = NULL;
    uint64_t rev = 0;
    natsStatus s = kvStore_Get(&e, c->kv, key);
    if (s == NATS_NOT_FOUND) {
        if (kvStore_Create(&rev, c->kv, key, val, vlen) == NATS_OK) {
            j->outcome = TAKEN;
            j->new_rev = rev;
        }
        return;
    }
    if (s != NATS_OK)
        return;
    uint64_t seen = kvEntry_Revision(e);
    char node[65];
    bool mine =
        lease_node(c, kvEntry_ValueString(e), kvEntry_ValueLen(e), node, sizeof node) == 0 &&
        strcmp(node, c->node) == 0;
    kvEntry_Destroy(e);
    bool expired = seen == j->rev && (double)(now - j->rev_seen_ns) >= c->cfg.lease_s * 1e9;
    if ((mine || expired) && kvStore_Update(&rev, c->kv, key, val, vlen, seen) == NATS_OK) {
        j->outcome = TAKEN;
        j->new_rev = rev;
    } else if (seen != j->rev) {
        j->outcome = SEEN;
        j->new_rev = seen;
        j->store_reset = seen < j->rev;
    }
}

static void lease_step(struct cluster *c, struct lease_job *j, int64_t now)
{
    char key[64], val[256];
    snprintf(key, sizeof key, "room.%s", j->name);
    int vlen = lease_value(c, j->room, val, sizeof val);
    j->outcome = KEEP;
    if (j->owner)
        renew(c, j, key, val, vlen);
    else
        watch(c, j, key, val, vlen, now);
    if (j->outcome == TAKEN && !j->owner)
        fetch_checkpoint(c, j);
}

static void subscribe(struct cluster *c, natsSubscription **s, const char *name, const char *kind,
                      natsMsgHandler cb)
{
    if (*s)
        return;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.%s", name, kind);
    if (natsConnection_Subscribe(s, c->nc, subject, cb, c) != NATS_OK)
        *s = NULL;
    else /* latest-frame policy: a relay that falls behind drops, never queues without bound */
        natsSubscription_SetPendingLimits(*s, 64, 64 * 1024 * 1024);
}

/* The subscriptions a room needs as owner or relay. Under lock. */
static void resubscribe(struct cluster *c, struct croom *cr)
{
    if (cr->owner) {
        unsubscribe(&cr->frames);
        subscribe(c, &cr->cmds, cr->name, "cmd", on_command);
        subscribe(c, &cr->wants, cr->name, "want", on_want);
    } else {
        unsubscribe(&cr->cmds);
        unsubscribe(&cr->wants);
        subscribe(c, &cr->frames, cr->name, "frame", on_frame);
    }
}

/* A job's result into its room, if it is still attached. Under lock. */
static void lease_apply(struct cluster *c, struct lease_job *j, int64_t now)
{
    struct croom *cr = find_room(c, j->room);
    if (!cr || strcmp(cr->name, j->name) != 0) {
        free(j->ck);
        return;
    }
    switch (j->outcome) {
    case RENEWED:
        cr->rev = j->new_rev;
        COUNT(c, renewals);
        break;
    case TAKEN:
        cr->rev = cr->term = j->new_rev;
        if (!cr->owner) {
            room_relay_set(cr->room, true, j->ck, j->ck_len);
            j->ck = NULL;
            COUNT(c, takeovers);
            fprintf(stderr, "flockd: cluster: node %s owns room \"%s\" (term %llu)\n", c->node,
                    cr->name, (unsigned long long)cr->term);
        }
        cr->owner = true;
        break;
    case LOST:
        cr->owner = false;
        cr->term_seen = cr->term;
        cr->rev_seen_ns = now;
        room_relay_set(cr->room, false, NULL, 0);
        COUNT(c, leases_lost);
        fprintf(stderr, "flockd: cluster: room \"%s\" is owned by another node now\n", cr->name);
        break;
    case SEEN:
        cr->rev = j->new_rev;
        cr->rev_seen_ns = now;
        if (j->store_reset)
            cr->term_seen = 0;
        break;
    case KEEP:
        break;
    }
    free(j->ck);
    resubscribe(c, cr);
}

/* Every attached room's lease, then the relays' wants. */
static void leases(struct cluster *c, int64_t now)
{
    static struct lease_job jobs[MAX_ROOMS]; /* the steward's only */
    pthread_mutex_lock(&c->lock);
    size_t n = c->nrooms;
    for (size_t i = 0; i < n; i++) {
        struct croom *cr = c->rooms[i];
        jobs[i] = (struct lease_job){.room = cr->room,
                                     .owner = cr->owner,
                                     .rev = cr->rev,
                                     .term = cr->term,
                                     .rev_seen_ns = cr->rev_seen_ns};
        snprintf(jobs[i].name, sizeof jobs[i].name, "%s", cr->name);
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++)
        lease_step(c, &jobs[i], now);
    uint8_t want[CLUSTER_WANT_SIZE];
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++)
        lease_apply(c, &jobs[i], now);
    for (size_t i = 0; i < c->nrooms; i++) {
        struct croom *cr = c->rooms[i];
        unsigned kinds = cr->owner ? 0 : room_relay_wanted(cr->room);
        char subject[SUBJECT_MAX];
        snprintf(subject, sizeof subject, "flockd.room.%s.want", cr->name);
        if (kinds && cluster_want_encode(kinds, want, sizeof want) > 0)
            natsConnection_Publish(c->nc, subject, want, CLUSTER_WANT_SIZE);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- the directory and the heartbeat ------------------------------------------------- */

/* The value of a directory entry's field: a string into out, or a number. */
static void json_field(const char *val, const char *name, char *out, size_t cap, uint64_t *num)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(val, pat);
    if (!p)
        return;
    p += strlen(pat);
    if (out && *p == '"') {
        const char *end = strchr(p + 1, '"');
        if (end && is_token(p + 1, (size_t)(end - p - 1), cap - 1))
            snprintf(out, cap, "%.*s", (int)(end - p - 1), p + 1);
    } else if (num) {
        *num = strtoull(p, NULL, 10);
    }
}

/* `default` first, then by name. */
static int by_name(const void *pa, const void *pb)
{
    const struct dir_entry *a = pa, *b = pb;
    int da = strcmp(a->name, "default") == 0, db = strcmp(b->name, "default") == 0;
    return da != db ? db - da : strcmp(a->name, b->name);
}

/* The directory's entry of room `name`, or NULL. Under lock. */
static struct dir_entry *dir_find(struct cluster *c, const char *name)
{
    for (size_t i = 0; i < c->ndir; i++)
        if (strcmp(c->dir[i].name, name) == 0)
            return &c->dir[i];
    return NULL;
}

/* One update of a lease key into the directory: a put adds or refreshes
 * its room, a delete or purge removes it. Under lock. */
static void dir_apply(struct cluster *c, kvEntry *e)
{
    const char *key = kvEntry_Key(e);
    if (!key || strncmp(key, "room.", 5) != 0 || !cluster_is_room_name(key + 5, strlen(key + 5)))
        return;
    struct dir_entry *d = dir_find(c, key + 5);
    if (kvEntry_Operation(e) != kvOp_Put) {
        if (d)
            *d = c->dir[--c->ndir];
        return;
    }
    struct dir_entry fresh = {0};
    const char *val = kvEntry_ValueString(e);
    uint64_t boids = 0, tick = 0;
    if (lease_node(c, val, kvEntry_ValueLen(e), fresh.node, sizeof fresh.node) < 0)
        return;
    snprintf(fresh.name, sizeof fresh.name, "%s", key + 5);
    snprintf(fresh.mode, sizeof fresh.mode, "sandbox");
    json_field(val, "mode", fresh.mode, sizeof fresh.mode, NULL);
    json_field(val, "boids", NULL, 0, &boids);
    json_field(val, "tick", NULL, 0, &tick);
    fresh.boids = (uint32_t)(boids < UINT32_MAX ? boids : UINT32_MAX);
    fresh.tick = tick;
    if (!d && c->ndir < MAX_DIR)
        d = &c->dir[c->ndir++];
    if (d)
        *d = fresh;
}

/* Every lease update the watcher holds, into the directory (sorted for
 * /api/rooms when it changed). */
static void read_directory(struct cluster *c)
{
    bool changed = false;
    for (int k = 0; k < 100000 && c->watcher; k++) {
        kvEntry *e = NULL;
        if (kvWatcher_Next(&e, c->watcher, 1) != NATS_OK)
            break;
        if (!e)
            continue; /* the initial values are all in */
        pthread_mutex_lock(&c->lock);
        dir_apply(c, e);
        pthread_mutex_unlock(&c->lock);
        kvEntry_Destroy(e);
        changed = true;
    }
    if (!changed)
        return;
    pthread_mutex_lock(&c->lock);
    qsort(c->dir, c->ndir, sizeof *c->dir, by_name);
    pthread_mutex_unlock(&c->lock);
}

/* This node's figures under node.ID (what a join's placement reads). */
static void heartbeat(struct cluster *c)
{
    uint32_t owned = 0, relays = 0, boids = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms; i++) {
        struct room_info info;
        room_info(c->rooms[i]->room, &info);
        owned += c->rooms[i]->owner;
        relays += !c->rooms[i]->owner;
        boids += c->rooms[i]->owner ? info.boids : 0;
    }
    pthread_mutex_unlock(&c->lock);
    char key[80], val[256];
    snprintf(key, sizeof key, "node.%s", c->node);
    int len = snprintf(val, sizeof val,
                       "{\"node\":\"%s\",\"rooms\":%u,\"relays\":%u,\"boids\":%u,\"clients\":%lld}",
                       c->node, owned, relays, boids,
                       (long long)atomic_load_explicit(&g_metrics.clients, memory_order_relaxed));
    uint64_t rev;
    kvStore_Put(&rev, c->kv, key, val, len);
    int64_t rtt = 0;
    if (natsConnection_GetRTT(c->nc, &rtt) == NATS_OK)
        atomic_store_explicit(&c->n.rtt_us, rtt / 1000, memory_order_relaxed);
}

void cluster_store_checkpoint(void *arg, const char *room, const uint8_t *buf, size_t len)
{
    struct cluster *c = arg;
    bool owned = false;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = find(c, room, strlen(room));
    owned = cr && cr->owner;
    pthread_mutex_unlock(&c->lock);
    if (!owned) /* a relay's copy is nobody's state */
        return;
    uint64_t rev;
    pthread_mutex_lock(&c->kv_lock);
    natsStatus s = cluster_is_connected(c) && c->ckpt
                       ? kvStore_Put(&rev, c->ckpt, room, buf, (int)len)
                       : NATS_CONNECTION_DISCONNECTED;
    pthread_mutex_unlock(&c->kv_lock);
    if (s == NATS_OK)
        COUNT(c, checkpoints_stored);
    else
        COUNT(c, checkpoints_dropped);
}

/* ---- connection and steward --------------------------------------------------------------- */

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
    kvStore_Watch(&c->watcher, kv, "room.*", NULL);
    pthread_mutex_lock(&c->lock);
    c->ndir = 0;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static void steward_step(struct cluster *c, int64_t now)
{
    if (natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED)
        atomic_store(&c->connected, true);
    if (!cluster_is_connected(c))
        return;
    if ((atomic_exchange(&c->reconnected, false) || !c->kv) && open_buckets(c) < 0)
        return;
    leases(c, now);
    read_directory(c);
    if ((double)(now - c->heartbeat_ns) >= HEARTBEAT_S * 1e9) {
        c->heartbeat_ns = now;
        heartbeat(c);
    }
}

static void *steward_main(void *arg)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->stop_lock);
    while (!c->stop) {
        pthread_mutex_unlock(&c->stop_lock);
        steward_step(c, clock_mono_ns());
        pthread_mutex_lock(&c->stop_lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (int64_t)(c->cfg.step_s * 1e9);
        until.tv_sec += ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        if (!c->stop)
            pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &until);
    }
    pthread_mutex_unlock(&c->stop_lock);
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
        natsConnection_Subscribe(&c->replies, c->nc, c->reply_subject, on_reply, c) != NATS_OK)
        return -1;
    return 0;
}

struct cluster *cluster_create(const struct cluster_config *cfg, const char **err)
{
    if (!is_token(cfg->node_id, strlen(cfg->node_id), 64)) {
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
                                 .frame = link_frame,
                                 .forward = link_forward,
                                 .reply = link_reply,
                                 .attach = link_attach,
                                 .detach = link_detach,
                                 .fetch = link_fetch};
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
    atomic_store_explicit(&g_cluster, c, memory_order_release);
    return c;
}

void cluster_destroy(struct cluster *c)
{
    if (!c)
        return;
    atomic_store_explicit(&g_cluster, NULL, memory_order_release);
    if (c->started) {
        pthread_mutex_lock(&c->stop_lock);
        c->stop = true;
        pthread_cond_signal(&c->stop_cond);
        pthread_mutex_unlock(&c->stop_lock);
        pthread_join(c->steward, NULL);
    }
    unsubscribe(&c->replies);
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

/* ---- what the endpoints show --------------------------------------------------------------- */

void cluster_render_health(struct cluster *c, struct textbuf *t)
{
    textbuf_printf(t, ",\"nats\":\"%s\",\"node\":\"%s\"",
                   cluster_is_connected(c) ? "connected" : "lost", c->node);
}

int cluster_render_rooms(struct cluster *c, struct textbuf *t,
                         bool (*local)(void *arg, struct textbuf *t, const char *name,
                                       const char *node, bool first),
                         void *arg)
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
