/*
 * cluster_lease.c — the leases of the rooms in the `flockd` bucket
 * (take by create or compare-and-set, renew, lose), the checkpoints in
 * `flockd_ckpt`, the directory of every room of the cluster (a watcher of
 * the lease keys) and this node's heartbeat (server/cluster/CLUSTER.md §1, §2).
 * The steward thread runs all of it but the checkpoint sink (the writer
 * thread) and the fetch of a room to join (the network's thread).
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "clock.h"
#include "cluster_wire.h"
#include "metrics.h"
#include "proto_reply.h"

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
int cluster__lease_node(struct cluster *c, const char *val, int len, char *node, size_t cap)
{
    static const char key[] = "{\"node\":\"";
    if (len < (int)sizeof key || memcmp(val, key, sizeof key - 1) != 0)
        goto bad;
    const char *start = val + sizeof key - 1;
    const char *end = memchr(start, '"', (size_t)(len - (int)(sizeof key - 1)));
    if (!end || (size_t)(end - start) >= cap ||
        !cluster__is_token(start, (size_t)(end - start), cap - 1))
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
int cluster__link_fetch(void *arg, const char *name, uint8_t **ck, size_t *len)
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
    if (s == NATS_OK) /* a copy opens: its welcomes show the owner's parameters now */
        cluster__ask_params(c, name);
    *ck = j.ck;
    *len = j.ck_len;
    return s == NATS_OK;
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
    char node[PROTO_NODE_MAX + 1];
    if (s == NATS_NOT_FOUND && kvStore_Create(&rev, c->kv, key, val, vlen) == NATS_OK) {
        j->outcome = TAKEN; /* the store lost the key (a new server): ours again */
        j->new_rev = rev;
    } else if (s == NATS_OK &&
               cluster__lease_node(c, kvEntry_ValueString(e), kvEntry_ValueLen(e), node,
                                   sizeof node) == 0 &&
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
    char node[PROTO_NODE_MAX + 1];
    bool mine = cluster__lease_node(c, kvEntry_ValueString(e), kvEntry_ValueLen(e), node,
                                    sizeof node) == 0 &&
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
    char key[64];
    snprintf(key, sizeof key, "room.%s", j->name);
    j->outcome = KEEP;
    if (j->owner)
        renew(c, j, key, j->val, j->vlen);
    else
        watch(c, j, key, j->val, j->vlen, now);
    if (j->outcome == TAKEN && !j->owner)
        fetch_checkpoint(c, j);
}

/* A job's result into its room, if it is still attached. Under lock. */
static void lease_apply(struct cluster *c, struct lease_job *j, int64_t now)
{
    struct croom *cr = cluster__find_room(c, j->room);
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
        cr->frame_ns = now;
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
    cluster__resubscribe(c, cr);
}

/* Every attached room's lease, then the relays' wants. */
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
                                     .term = cr->term,
                                     .rev_seen_ns = cr->rev_seen_ns};
        snprintf(jobs[i].name, sizeof jobs[i].name, "%s", cr->name);
        /* Attached, so alive while the lock is held (a room detaches
         * under it before it is freed). */
        jobs[i].vlen = lease_value(c, cr->room, jobs[i].val, sizeof jobs[i].val);
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
        if (end && cluster__is_token(p + 1, (size_t)(end - p - 1), cap - 1))
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
struct dir_entry *cluster__dir_find(struct cluster *c, const char *name)
{
    for (size_t i = 0; i < c->ndir; i++)
        if (strcmp(c->dir[i].name, name) == 0)
            return &c->dir[i];
    return NULL;
}

/* Forgets placement i. Under lock. */
static void placed_drop(struct cluster *c, size_t i)
{
    c->placed[i] = c->placed[--c->nplaced];
}

/* A lease update of room `name`: the directory counts the room now, no
 * placement needs to. Under lock. */
static void placed_lease(struct cluster *c, const char *name)
{
    for (size_t i = 0; i < c->nplaced; i++)
        if (strcmp(c->placed[i].name, name) == 0) {
            placed_drop(c, i);
            return;
        }
}

/* A heartbeat of node id came, written after every lease update read
 * before it (one stream of updates): the rooms whose own lease it wrote by
 * then are in its figures. Under lock. */
static void counted_by_heartbeat(struct cluster *c, const char *id)
{
    for (size_t i = 0; i < c->ndir; i++)
        if (!c->dir[i].placed && strcmp(c->dir[i].node, id) == 0)
            c->dir[i].counted = true;
}

/* A heartbeat into the nodes' loads (a node that is gone ages out). Under lock. */
static void node_apply(struct cluster *c, kvEntry *e)
{
    const char *val = kvEntry_ValueString(e);
    struct node_load fresh = {.seen_ns = clock_mono_ns()};
    uint64_t rooms = 0, clients = 0;
    if (kvEntry_Operation(e) != kvOp_Put ||
        cluster__lease_node(c, val, kvEntry_ValueLen(e), fresh.id, sizeof fresh.id) < 0)
        return;
    json_field(val, "rooms", NULL, 0, &rooms);
    json_field(val, "boids", NULL, 0, &fresh.boids);
    json_field(val, "clients", NULL, 0, &clients);
    fresh.rooms = (uint32_t)(rooms < UINT32_MAX ? rooms : UINT32_MAX);
    fresh.clients = (int64_t)(clients < INT64_MAX ? clients : INT64_MAX);
    size_t i = 0;
    while (i < c->nnodes && strcmp(c->nodes[i].id, fresh.id) != 0)
        i++;
    if (i == c->nnodes && c->nnodes < MAX_NODES)
        c->nnodes++;
    if (i < c->nnodes)
        c->nodes[i] = fresh;
    counted_by_heartbeat(c, fresh.id);
}

/* A lease that names this node for a room it does not have, written by
 * the node that placed it here: queued for the lobby to open. Under lock. */
static void adopt_apply(struct cluster *c, const char *name, const char *val, int len)
{
    cJSON *json = cJSON_ParseWithLength(val, (size_t)len);
    const cJSON *placed = cJSON_GetObjectItemCaseSensitive(json, "placed");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(json, "mode");
    const cJSON *boids = cJSON_GetObjectItemCaseSensitive(json, "boids");
    const cJSON *password = cJSON_GetObjectItemCaseSensitive(json, "password");
    bool queued = false;
    for (size_t i = 0; i < c->nadopt; i++)
        queued |= strcmp(c->adopt[i].name, name) == 0;
    if (cJSON_IsTrue(placed) && cJSON_IsString(mode) && cJSON_IsNumber(boids) &&
        boids->valuedouble >= 0 && boids->valuedouble <= UINT32_MAX &&
        (!password ||
         (cJSON_IsString(password) && strlen(password->valuestring) <= PROTO_TOKEN_MAX)) &&
        !queued && !cluster__find(c, name, strlen(name)) && c->nadopt < MAX_ADOPT) {
        struct room_adoption *ad = &c->adopt[c->nadopt++];
        snprintf(ad->name, sizeof ad->name, "%s", name);
        ad->mode = strcmp(mode->valuestring, "rts") == 0 ? PROTO_MODE_RTS : PROTO_MODE_SANDBOX;
        ad->boids = (uint32_t)boids->valuedouble;
        snprintf(ad->password, sizeof ad->password, "%s", password ? password->valuestring : "");
    }
    cJSON_Delete(json);
}

int cluster__link_adopt(void *arg, struct room_adoption *out)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    int got = c->nadopt > 0;
    if (got) {
        *out = c->adopt[0];
        memmove(c->adopt, c->adopt + 1, --c->nadopt * sizeof c->adopt[0]);
    }
    pthread_mutex_unlock(&c->lock);
    return got;
}

/* Node n's load: its last heartbeat, plus the rooms named for it that it
 * did not count yet (leases of the directory, then placements made here
 * that the directory does not have yet). Under lock. */
static struct node_load load_of(const struct cluster *c, const struct node_load *n)
{
    struct node_load l = *n;
    for (size_t i = 0; i < c->ndir; i++)
        if (!c->dir[i].counted && strcmp(c->dir[i].node, n->id) == 0) {
            l.boids += c->dir[i].boids;
            l.rooms++;
        }
    for (size_t i = 0; i < c->nplaced; i++)
        if (strcmp(c->placed[i].node, n->id) == 0) {
            l.boids += c->placed[i].boids;
            l.rooms++;
        }
    return l;
}

/* The least loaded node seen lately (fewest boids it ticks, then fewest
 * rooms, then clients), into best; false if none. Under lock. */
static bool least_loaded(struct cluster *c, int64_t now, char *best, size_t cap)
{
    for (size_t i = c->nplaced; i-- > 0;)
        if ((double)(now - c->placed[i].at_ns) > PLACED_TTL_S * 1e9)
            placed_drop(c, i);
    struct node_load pick = {0};
    bool found = false;
    for (size_t i = 0; i < c->nnodes; i++) {
        if ((double)(now - c->nodes[i].seen_ns) > NODE_STALE_S * 1e9)
            continue;
        struct node_load n = load_of(c, &c->nodes[i]);
        if (!found || n.boids < pick.boids ||
            (n.boids == pick.boids &&
             (n.rooms < pick.rooms || (n.rooms == pick.rooms && n.clients < pick.clients))))
            pick = n;
        found = true;
    }
    if (found)
        snprintf(best, cap, "%s", pick.id);
    return found;
}

/* A room placed on node id, counted in its load at once and until that
 * node's heartbeat counts it, so that the next joins do not all land on
 * the same node (the oldest placement goes if the table is full). */
static void count_placed(struct cluster *c, const char *name, const char *id, uint32_t boids)
{
    pthread_mutex_lock(&c->lock);
    if (c->nplaced == MAX_PLACED) {
        size_t oldest = 0;
        for (size_t i = 1; i < c->nplaced; i++)
            oldest = c->placed[i].at_ns < c->placed[oldest].at_ns ? i : oldest;
        placed_drop(c, oldest);
    }
    struct placement *p = &c->placed[c->nplaced++];
    *p = (struct placement){.boids = boids, .at_ns = clock_mono_ns()};
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->node, sizeof p->node, "%s", id);
    pthread_mutex_unlock(&c->lock);
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
    bool found = least_loaded(c, clock_mono_ns(), best, sizeof best);
    pthread_mutex_unlock(&c->lock);
    if (!cluster_is_connected(c) || !found)
        return 0;
    /* The lease names the chosen node before it ticks, this one too: the
     * other nodes count the room from their next read of the directory,
     * not from this node's next step and the read after. The chosen node
     * opens the room and takes the lease; if it does not within a lease,
     * this node's copy takes it over like any expired lease. */
    bool is_here = strcmp(best, c->node) == 0;
    if (!write_placed(c, name, best, mode, boids, password) && !is_here)
        return 0;
    count_placed(c, name, best, boids);
    return !is_here;
}

/* One update of a lease key into the directory: a put adds or refreshes
 * its room, a delete or purge removes it. Under lock. */
int cluster__link_owner_of(void *arg, struct room *r, char *node, size_t cap)
{
    struct cluster *c = arg;
    const char *other = NULL;
    pthread_mutex_lock(&c->lock);
    const struct croom *cr = cluster__find_room(c, r);
    const struct dir_entry *d = cluster__dir_find(c, room_name(r));
    if (cr && !cr->owner && d && strcmp(d->node, c->node) != 0)
        other = d->node;
    for (size_t i = 0; cr && !cr->owner && !d && i < c->nplaced; i++)
        if (strcmp(c->placed[i].name, room_name(r)) == 0 && strcmp(c->placed[i].node, c->node))
            other = c->placed[i].node;
    if (other)
        snprintf(node, cap, "%s", other);
    pthread_mutex_unlock(&c->lock);
    return other != NULL;
}

static void dir_apply(struct cluster *c, kvEntry *e)
{
    const char *key = kvEntry_Key(e);
    if (key && strncmp(key, "node.", 5) == 0) {
        node_apply(c, e);
        return;
    }
    if (!key || strncmp(key, "room.", 5) != 0 || !cluster_is_room_name(key + 5, strlen(key + 5)))
        return;
    struct dir_entry *d = cluster__dir_find(c, key + 5);
    if (kvEntry_Operation(e) != kvOp_Put) {
        if (d)
            *d = c->dir[--c->ndir];
        placed_lease(c, key + 5);
        return;
    }
    struct dir_entry fresh = {0};
    const char *val = kvEntry_ValueString(e);
    uint64_t boids = 0, tick = 0;
    if (cluster__lease_node(c, val, kvEntry_ValueLen(e), fresh.node, sizeof fresh.node) < 0)
        return;
    snprintf(fresh.name, sizeof fresh.name, "%s", key + 5);
    snprintf(fresh.mode, sizeof fresh.mode, "sandbox");
    json_field(val, "mode", fresh.mode, sizeof fresh.mode, NULL);
    json_field(val, "boids", NULL, 0, &boids);
    json_field(val, "tick", NULL, 0, &tick);
    fresh.boids = (uint32_t)(boids < UINT32_MAX ? boids : UINT32_MAX);
    fresh.tick = tick;
    fresh.placed = strstr(val, "\"placed\":true") != NULL;
    /* Counted by its node's heartbeats while that node keeps it. */
    fresh.counted = d && !fresh.placed && strcmp(d->node, fresh.node) == 0 && d->counted;
    placed_lease(c, fresh.name);
    if (strcmp(fresh.node, c->node) == 0)
        adopt_apply(c, fresh.name, val, kvEntry_ValueLen(e));
    if (!d && c->ndir < MAX_DIR)
        d = &c->dir[c->ndir++];
    if (d)
        *d = fresh;
}

/* Every lease update the watcher holds, into the directory (sorted for
 * /api/rooms when it changed), the first waited for up to wait_ms. */
bool cluster__read_directory(struct cluster *c, int64_t wait_ms)
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
        dir_apply(c, e);
        pthread_mutex_unlock(&c->lock);
        kvEntry_Destroy(e);
        changed = true;
    }
    if (changed) {
        pthread_mutex_lock(&c->lock);
        qsort(c->dir, c->ndir, sizeof *c->dir, by_name);
        pthread_mutex_unlock(&c->lock);
    }
    return answered;
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
    pthread_mutex_lock(&c->lock); /* quiet or not: the last checkpoints come then */
    for (size_t i = 0; i < c->nrooms; i++)
        owned |= c->rooms[i]->owner && strcmp(c->rooms[i]->name, room) == 0;
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
