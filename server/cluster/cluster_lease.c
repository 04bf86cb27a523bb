/*
 * cluster_lease.c — the leases of the rooms in the `flockd` bucket
 * (take by create or compare-and-set, renew, lose), the checkpoints in
 * `flockd_ckpt`, this node's heartbeat and the placed lease of a room a
 * join creates (server/cluster/CLUSTER.md §1, §2, §6). A lease taken or
 * lost sets its room's role; the steward has the messages follow
 * (cluster_internal.h: this file calls only cluster_dir.c). The steward
 * thread runs all of it but the checkpoint sink (the writer thread) and
 * the fetch and placing of a room to join (the network's thread).
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "clock.h"
#include "cluster_wire.h"
#include "metrics.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the steward read or wrote for one room, outside the lock. The
 * room is only a key there: it may be destroyed once the lock is let go,
 * so what the lease says of it is read before (val). */
struct lease_job {
    struct room *room;
    char name[PROTO_ROOM_MAX + 1];
    char val[256]; /* the lease value (lease_value()) */
    int vlen;
    bool owner;
    uint64_t rev;
    int64_t rev_seen_ns;
    /* results */
    enum { KEEP, RENEWED, TAKEN, LOST, SEEN } outcome;
    uint64_t new_rev;
    bool store_reset; /* the revision went back: the server's store is new */
    bool log_failed;  /* the room's command log failed it: no renewal */
    bool gone;        /* its owner's connection to NATS is gone (owner_gone()) */
    int64_t sent_ns;  /* when the renewal was sent */
    /* TAKEN: what the room carries on from (its checkpoint, its log) and
     * the mark's sequence number in the log; tick: the last frame relayed */
    struct room_takeover t;
    uint64_t log_seq;
};

/* The lease value for room r (its figures in info) into buf (cap bytes):
 * JSON with this node and the room's figures. Its length (snprintf's: cap
 * is ample). */
static int lease_value(struct cluster *c, struct room *r, const struct room_info *info, char *buf,
                       size_t cap)
{
    return snprintf(buf, cap, "{\"node\":\"%s\",\"mode\":\"%s\",\"boids\":%u,\"tick\":%llu}",
                    c->node, proto_mode_name(room_mode(r)), info->boids,
                    (unsigned long long)info->tick);
}

/* The node lease entry e names, into node (cap bytes): 0, or
 * PROTO_E_BAD_VALUE if it names none (counted: a hostile or garbled key). */
static int entry_node(struct cluster *c, kvEntry *e, char *node, size_t cap)
{
    int rc = cluster__dir_node_of(kvEntry_ValueString(e), kvEntry_ValueLen(e), node, cap);
    if (rc < 0)
        cluster__reject(c, "a lease entry that names no node");
    return rc;
}

/* The room's last checkpoint from the bucket into t (none: t->ck NULL). */
static void fetch_checkpoint(struct cluster *c, const char *name, struct room_takeover *t)
{
    kvEntry *e = NULL;
    if (kvStore_Get(&e, c->ckpt, name) != NATS_OK)
        return;
    int len = kvEntry_ValueLen(e);
    t->ck = len > 0 ? malloc((size_t)len) : NULL;
    if (t->ck) {
        memcpy(t->ck, kvEntry_Value(e), (size_t)len);
        t->ck_len = (size_t)len;
    }
    kvEntry_Destroy(e);
}

bool cluster__lease_fetch(struct cluster *c, const char *name, uint8_t **ck, size_t *len)
{
    *ck = NULL;
    *len = 0;
    if (!cluster__is_connected(c) || !cluster_is_room_name(name, strlen(name)))
        return false;
    char key[64];
    snprintf(key, sizeof key, "room.%s", name);
    kvEntry *e = NULL;
    pthread_mutex_lock(&c->kv_lock);
    natsStatus s = c->kv ? kvStore_Get(&e, c->kv, key) : NATS_NOT_FOUND;
    kvEntry_Destroy(e);
    struct room_takeover t = {0};
    if (s == NATS_OK && c->ckpt)
        fetch_checkpoint(c, name, &t);
    pthread_mutex_unlock(&c->kv_lock);
    *ck = t.ck;
    *len = t.ck_len;
    return s == NATS_OK;
}

/* The owner renews: RENEWED, LOST (another node holds it) or KEEP (NATS
 * did not answer: the room ticks on). */
static void renew(struct cluster *c, struct lease_job *j, const char *key, const char *val,
                  int vlen)
{
    uint64_t rev = 0;
    if (j->log_failed) /* stepping down (cluster_log.c): let the lease run out */
        return;
    if (kvStore_Update(&rev, c->kv, key, val, vlen, j->rev) == NATS_OK) {
        j->outcome = RENEWED;
        j->new_rev = rev;
        return;
    }
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, c->kv, key);
    char node[PROTO_NODE_MAX + 1];
    if (s == NATS_NOT_FOUND && kvStore_Create(&rev, c->kv, key, val, vlen) == NATS_OK) {
        j->outcome = TAKEN; /* the store lost the key (a new server): ours again */
        j->new_rev = rev;
    } else if (s == NATS_OK && entry_node(c, e, node, sizeof node) == 0 &&
               strcmp(node, c->node) != 0) {
        j->outcome = LOST;
    }
    kvEntry_Destroy(e);
}

/* Whether room name's owner is gone from NATS (killed, or its connection
 * lost): an ask (CLUSTER.md §3.6) that nobody listens to. An answer, or
 * none yet (a stalled owner), says nothing. */
static bool owner_gone(struct cluster *c, const char *name)
{
    natsMsg *reply = NULL;
    natsStatus s = cluster__ask(c, name, GONE_MS, &reply);
    natsMsg_Destroy(reply);
    return s == NATS_NO_RESPONDERS;
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
    char node[PROTO_NODE_MAX + 1];
    bool mine = entry_node(c, e, node, sizeof node) == 0 && strcmp(node, c->node) == 0;
    kvEntry_Destroy(e);
    double unmoved = seen == j->rev ? (double)(now - j->rev_seen_ns) / 1e9 : 0;
    bool expired = unmoved >= c->cfg.lease_s;
    /* Taken past the owner's fencing, before the lease expires, if its
     * connection is gone (CLUSTER.md §2); asked after too, to say so. */
    j->gone = !mine && unmoved > FENCE_SHARE * c->cfg.lease_s && owner_gone(c, j->name);
    if ((mine || expired || j->gone) &&
        kvStore_Update(&rev, c->kv, key, val, vlen, seen) == NATS_OK) {
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
    char key[64];
    snprintf(key, sizeof key, "room.%s", j->name);
    j->outcome = KEEP;
    j->sent_ns = clock_mono_ns(); /* before the write: what fencing counts from */
    if (j->owner)
        renew(c, j, key, j->val, j->vlen);
    else
        watch(c, j, key, j->val, j->vlen, now);
    if (j->outcome != TAKEN || j->owner)
        return;
    fetch_checkpoint(c, j->name, &j->t);
    if (!c->cfg.command_log) /* marked with or without a checkpoint: the old owner is fenced */
        return;
    if (cluster__log_take(c, j->name, j->new_rev, &j->t, &j->log_seq) == 0)
        COUNT(c, log_takeovers);
    else
        fprintf(stderr,
                "flockd: cluster: room \"%s\": its command log could not be read; it "
                "carries on from its checkpoint alone\n",
                j->name);
}

/* A job's result into its room, if it is still attached. Under lock. */
static void lease_apply(struct cluster *c, struct lease_job *j, int64_t now)
{
    struct croom *cr = cluster__find_room(c, j->room);
    if (!cr || strcmp(cr->name, j->name) != 0) {
        room_takeover_free(&j->t);
        return;
    }
    switch (j->outcome) {
    case RENEWED:
        cr->rev = j->new_rev;
        cr->renewed_ns = j->sent_ns;
        COUNT(c, renewals);
        break;
    case TAKEN:
        cr->rev = cr->term = j->new_rev;
        cr->renewed_ns = j->sent_ns;
        if (!cr->owner) {
            cr->log_seq = j->log_seq;
            cr->log_failed = false;
            memset(cr->marks, 0, sizeof cr->marks);
            room_relay_set(cr->room, true, &j->t);
            COUNT(c, takeovers);
            fprintf(stderr, "flockd: cluster: node %s owns room \"%s\" (term %llu)%s\n", c->node,
                    cr->name, (unsigned long long)cr->term,
                    j->gone ? ": its owner's connection to NATS is gone" : "");
        }
        cr->owner = true;
        break;
    case LOST:
        cluster__become_relay(cr, now);
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
    room_takeover_free(&j->t);
}

void cluster__leases(struct cluster *c, int64_t now)
{
    static struct lease_job jobs[MAX_ROOMS]; /* the steward's only */
    pthread_mutex_lock(&c->lock);
    size_t n = c->nrooms;
    for (size_t i = 0; i < n; i++) {
        struct croom *cr = c->rooms[i];
        jobs[i] = (struct lease_job){.room = cr->room,
                                     .owner = cr->owner,
                                     .rev = cr->rev,
                                     .rev_seen_ns = cr->rev_seen_ns,
                                     .log_failed = cr->log_failed};
        snprintf(jobs[i].name, sizeof jobs[i].name, "%s", cr->name);
        /* Attached, so alive while the lock is held (a room detaches
         * under it before it is freed). */
        struct room_info info;
        room_info(cr->room, &info);
        jobs[i].vlen = lease_value(c, cr->room, &info, jobs[i].val, sizeof jobs[i].val);
        jobs[i].t.tick = info.tick; /* a relay's: the last frame of the owner it showed */
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++)
        lease_step(c, &jobs[i], now);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++)
        lease_apply(c, &jobs[i], now);
    pthread_mutex_unlock(&c->lock);
}

void cluster__lease_give_up(struct cluster *c, const char *name)
{
    if (!cluster__is_connected(c))
        return;
    char key[64];
    snprintf(key, sizeof key, "room.%s", name);
    pthread_mutex_lock(&c->kv_lock);
    if (c->kv)
        kvStore_Delete(c->kv, key);
    pthread_mutex_unlock(&c->kv_lock);
}

/* The placed lease of room name naming node id, created unless the key
 * exists: true if written. */
static bool write_placed(struct cluster *c, const char *name, const char *id, enum proto_mode mode,
                         uint32_t boids, const char *password)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "node", id);
    cJSON_AddStringToObject(v, "mode", proto_mode_name(mode));
    cJSON_AddNumberToObject(v, "boids", boids);
    cJSON_AddNumberToObject(v, "tick", 0);
    cJSON_AddTrueToObject(v, "placed");
    if (password && password[0])
        cJSON_AddStringToObject(v, "password", password);
    char *text = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    char key[64];
    snprintf(key, sizeof key, "room.%s", name);
    uint64_t rev = 0;
    pthread_mutex_lock(&c->kv_lock);
    natsStatus s =
        text && c->kv ? kvStore_Create(&rev, c->kv, key, text, (int)strlen(text)) : NATS_ERR;
    pthread_mutex_unlock(&c->kv_lock);
    cJSON_free(text);
    return s == NATS_OK;
}

int cluster__link_place(void *arg, const char *name, enum proto_mode mode, uint32_t boids,
                        const char *password)
{
    struct cluster *c = arg;
    char best[PROTO_NODE_MAX + 1];
    pthread_mutex_lock(&c->lock);
    bool found = cluster__dir_least_loaded(&c->dir, clock_mono_ns(), best, sizeof best);
    pthread_mutex_unlock(&c->lock);
    if (!cluster__is_connected(c) || !found)
        return 0;
    /* The lease names the chosen node before it ticks, this one too: the
     * other nodes count the room from their next read of the directory,
     * not from this node's next step and the read after. The chosen node
     * opens the room and takes the lease; if it does not within a lease,
     * this node's copy takes it over like any expired lease. */
    bool is_here = strcmp(best, c->node) == 0;
    if (!write_placed(c, name, best, mode, boids, password) && !is_here)
        return 0;
    /* Counted in that node's load at once, until its heartbeat counts it,
     * so that the next joins do not all land on the same node. */
    pthread_mutex_lock(&c->lock);
    cluster__dir_count_placed(&c->dir, name, best, boids, clock_mono_ns());
    pthread_mutex_unlock(&c->lock);
    return !is_here;
}

/* This node's figures under node.ID (what a join's placement reads). */
void cluster__heartbeat(struct cluster *c)
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
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&c->lock); /* quiet or not: the last checkpoints come then */
    for (size_t i = 0; i < c->nrooms; i++)
        owned |= c->rooms[i]->owner && !cluster__is_fenced(c, c->rooms[i], now) &&
                 strcmp(c->rooms[i]->name, room) == 0;
    pthread_mutex_unlock(&c->lock);
    /* A relay's copy is nobody's state; nor is the checkpoint of an owner
     * whose lease went unrenewed (woken from a stop, it may have been
     * handed before it: the room's new owner's would be overwritten). */
    if (!owned) {
        COUNT(c, checkpoints_dropped);
        return;
    }
    uint64_t rev;
    pthread_mutex_lock(&c->kv_lock);
    natsStatus s = cluster__is_connected(c) && c->ckpt
                       ? kvStore_Put(&rev, c->ckpt, room, buf, (int)len)
                       : NATS_CONNECTION_DISCONNECTED;
    pthread_mutex_unlock(&c->kv_lock);
    if (s != NATS_OK) {
        COUNT(c, checkpoints_dropped);
        return;
    }
    COUNT(c, checkpoints_stored);
    if (c->cfg.command_log && len >= 20) /* its sequence number: FILES.md §2.1 */
        cluster__log_trim(c, room,
                          (uint32_t)buf[16] | (uint32_t)buf[17] << 8 | (uint32_t)buf[18] << 16 |
                              (uint32_t)buf[19] << 24);
}
