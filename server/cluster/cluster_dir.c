/*
 * cluster_dir.c — the directory of the cluster (server/cluster/CLUSTER.md
 * §1, §6): every room's lease as the steward's watcher of the `flockd`
 * bucket last showed it, each node's load from its heartbeat, the rooms a
 * join here placed on a node until the directory has their leases, and the
 * rooms other nodes placed on this one, waiting for the lobby.
 *
 * Data and its rules only: the steward reads the watcher and hands each
 * update in, the link's hooks ask; nothing here calls NATS, takes a lock
 * (the caller holds the cluster's) or calls another file of the cluster.
 */
#include "cluster_internal.h"

#include "cluster_wire.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cluster__dir_init(struct cluster_dir *d, const char *self)
{
    memset(d, 0, sizeof *d);
    snprintf(d->self, sizeof d->self, "%s", self);
    d->rooms = calloc(MAX_DIR, sizeof *d->rooms);
    return d->rooms ? 0 : PROTO_E_INTERNAL;
}

void cluster__dir_free(struct cluster_dir *d)
{
    free(d->rooms);
    d->rooms = NULL;
    d->nrooms = 0;
}

void cluster__dir_clear(struct cluster_dir *d)
{
    d->nrooms = 0;
    d->nnodes = 0;
}

int cluster__dir_node_of(const char *val, int len, char *node, size_t cap)
{
    static const char key[] = "{\"node\":\"";
    if (len < (int)sizeof key || memcmp(val, key, sizeof key - 1) != 0)
        return PROTO_E_BAD_VALUE;
    const char *start = val + sizeof key - 1;
    const char *end = memchr(start, '"', (size_t)(len - (int)(sizeof key - 1)));
    if (!end || (size_t)(end - start) >= cap ||
        !cluster_is_token(start, (size_t)(end - start), cap - 1))
        return PROTO_E_BAD_VALUE;
    memcpy(node, start, (size_t)(end - start));
    node[end - start] = '\0';
    return 0;
}

/* The value of a field of a lease or heartbeat: a string into out, or a
 * number into *num; left as it was if the field is missing. */
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
        if (end && cluster_is_token(p + 1, (size_t)(end - p - 1), cap - 1))
            snprintf(out, cap, "%.*s", (int)(end - p - 1), p + 1);
    } else if (num) {
        *num = strtoull(p, NULL, 10);
    }
}

/* ---- rooms ---------------------------------------------------------------------- */

/* The index of room `name`'s entry, or d->nrooms if it has none. */
static size_t index_of(const struct cluster_dir *d, const char *name)
{
    size_t i = 0;
    while (i < d->nrooms && strcmp(d->rooms[i].name, name) != 0)
        i++;
    return i;
}

const struct dir_entry *cluster__dir_find(const struct cluster_dir *d, const char *name)
{
    size_t i = index_of(d, name);
    return i < d->nrooms ? &d->rooms[i] : NULL;
}

/* `default` first, then by name. */
static int by_name(const void *pa, const void *pb)
{
    const struct dir_entry *a = pa, *b = pb;
    int da = strcmp(a->name, "default") == 0, db = strcmp(b->name, "default") == 0;
    return da != db ? db - da : strcmp(a->name, b->name);
}

void cluster__dir_sort(struct cluster_dir *d)
{
    qsort(d->rooms, d->nrooms, sizeof *d->rooms, by_name);
}

/* Forgets placement i. */
static void placed_drop(struct cluster_dir *d, size_t i)
{
    d->placed[i] = d->placed[--d->nplaced];
}

/* A lease update of room `name`: the directory counts the room now, no
 * placement needs to. */
static void placed_lease(struct cluster_dir *d, const char *name)
{
    for (size_t i = 0; i < d->nplaced; i++)
        if (strcmp(d->placed[i].name, name) == 0) {
            placed_drop(d, i);
            return;
        }
}

/* A lease that names this node, written by the node that placed the room
 * here (`"placed":true`, a mode, a boid count, perhaps a password): true
 * and the room in *ad. */
static bool placed_here(const char *name, const char *val, int len, struct room_adoption *ad)
{
    cJSON *json = cJSON_ParseWithLength(val, (size_t)len);
    const cJSON *placed = cJSON_GetObjectItemCaseSensitive(json, "placed");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(json, "mode");
    const cJSON *boids = cJSON_GetObjectItemCaseSensitive(json, "boids");
    const cJSON *password = cJSON_GetObjectItemCaseSensitive(json, "password");
    bool is_placed = cJSON_IsTrue(placed) && cJSON_IsString(mode) && cJSON_IsNumber(boids) &&
                     boids->valuedouble >= 0 && boids->valuedouble <= UINT32_MAX &&
                     (!password || (cJSON_IsString(password) &&
                                    strlen(password->valuestring) <= PROTO_TOKEN_MAX));
    if (is_placed) {
        memset(ad, 0, sizeof *ad);
        snprintf(ad->name, sizeof ad->name, "%s", name);
        ad->mode = strcmp(mode->valuestring, "rts") == 0 ? PROTO_MODE_RTS : PROTO_MODE_SANDBOX;
        ad->boids = (uint32_t)boids->valuedouble;
        snprintf(ad->password, sizeof ad->password, "%s", password ? password->valuestring : "");
    }
    cJSON_Delete(json);
    return is_placed;
}

/* A put or a delete of room.NAME (see cluster__dir_apply()). */
static int lease_apply(struct cluster_dir *d, const char *name, bool is_put, const char *val,
                       int len, struct room_adoption *ad)
{
    size_t at = index_of(d, name);
    struct dir_entry *e = at < d->nrooms ? &d->rooms[at] : NULL;
    if (!is_put) {
        if (e)
            *e = d->rooms[--d->nrooms];
        placed_lease(d, name);
        return 0;
    }
    struct dir_entry fresh = {0};
    uint64_t boids = 0, tick = 0;
    if (cluster__dir_node_of(val, len, fresh.node, sizeof fresh.node) < 0)
        return PROTO_E_BAD_VALUE;
    snprintf(fresh.name, sizeof fresh.name, "%s", name);
    snprintf(fresh.mode, sizeof fresh.mode, "sandbox");
    json_field(val, "mode", fresh.mode, sizeof fresh.mode, NULL);
    json_field(val, "boids", NULL, 0, &boids);
    json_field(val, "tick", NULL, 0, &tick);
    fresh.boids = (uint32_t)(boids < UINT32_MAX ? boids : UINT32_MAX);
    fresh.tick = tick;
    fresh.placed = strstr(val, "\"placed\":true") != NULL;
    /* Counted by its node's heartbeats while that node keeps it. */
    fresh.counted = e && !fresh.placed && strcmp(e->node, fresh.node) == 0 && e->counted;
    placed_lease(d, fresh.name);
    bool is_adopted = strcmp(fresh.node, d->self) == 0 && placed_here(fresh.name, val, len, ad);
    if (!e && d->nrooms < MAX_DIR)
        e = &d->rooms[d->nrooms++];
    if (e)
        *e = fresh;
    return is_adopted;
}

/* ---- nodes ---------------------------------------------------------------------- */

/* A heartbeat of node id came, written after every lease update read
 * before it (one stream of updates): the rooms whose own lease it wrote by
 * then are in its figures. */
static void counted_by_heartbeat(struct cluster_dir *d, const char *id)
{
    for (size_t i = 0; i < d->nrooms; i++)
        if (!d->rooms[i].placed && strcmp(d->rooms[i].node, id) == 0)
            d->rooms[i].counted = true;
}

/* A heartbeat into the nodes' loads (a node that is gone ages out): 0, or
 * PROTO_E_BAD_VALUE for a value that names no node. */
static int node_apply(struct cluster_dir *d, const char *val, int len, int64_t now)
{
    struct node_load fresh = {.seen_ns = now};
    uint64_t rooms = 0, clients = 0;
    if (cluster__dir_node_of(val, len, fresh.id, sizeof fresh.id) < 0)
        return PROTO_E_BAD_VALUE;
    json_field(val, "rooms", NULL, 0, &rooms);
    json_field(val, "boids", NULL, 0, &fresh.boids);
    json_field(val, "clients", NULL, 0, &clients);
    fresh.rooms = (uint32_t)(rooms < UINT32_MAX ? rooms : UINT32_MAX);
    fresh.clients = (int64_t)(clients < INT64_MAX ? clients : INT64_MAX);
    size_t i = 0;
    while (i < d->nnodes && strcmp(d->nodes[i].id, fresh.id) != 0)
        i++;
    if (i == d->nnodes && d->nnodes < MAX_NODES)
        d->nnodes++;
    if (i < d->nnodes)
        d->nodes[i] = fresh;
    counted_by_heartbeat(d, fresh.id);
    return 0;
}

int cluster__dir_apply(struct cluster_dir *d, const char *key, bool is_put, const char *val,
                       int len, int64_t now, struct room_adoption *ad)
{
    if (key && strncmp(key, "node.", 5) == 0)
        return is_put ? node_apply(d, val, len, now) : 0;
    if (!key || strncmp(key, "room.", 5) != 0 || !cluster_is_room_name(key + 5, strlen(key + 5)))
        return 0;
    return lease_apply(d, key + 5, is_put, val, len, ad);
}

/* ---- placing ---------------------------------------------------------------------- */

const char *cluster__dir_other_node(const struct cluster_dir *d, const char *name)
{
    const struct dir_entry *e = cluster__dir_find(d, name);
    if (e)
        return strcmp(e->node, d->self) != 0 ? e->node : NULL;
    const char *other = NULL;
    for (size_t i = 0; i < d->nplaced; i++)
        if (strcmp(d->placed[i].name, name) == 0 && strcmp(d->placed[i].node, d->self) != 0)
            other = d->placed[i].node;
    return other;
}

void cluster__dir_adopt_queue(struct cluster_dir *d, const struct room_adoption *ad)
{
    bool queued = false;
    for (size_t i = 0; i < d->nadopt; i++)
        queued |= strcmp(d->adopt[i].name, ad->name) == 0;
    if (!queued && d->nadopt < MAX_ADOPT)
        d->adopt[d->nadopt++] = *ad;
}

bool cluster__dir_adopt_take(struct cluster_dir *d, struct room_adoption *out)
{
    if (d->nadopt == 0)
        return false;
    *out = d->adopt[0];
    memmove(d->adopt, d->adopt + 1, --d->nadopt * sizeof d->adopt[0]);
    return true;
}

/* Node n's load: its last heartbeat, plus the rooms named for it that it
 * did not count yet (leases of the directory, then placements made here
 * that the directory does not have yet). */
static struct node_load load_of(const struct cluster_dir *d, const struct node_load *n)
{
    struct node_load l = *n;
    for (size_t i = 0; i < d->nrooms; i++)
        if (!d->rooms[i].counted && strcmp(d->rooms[i].node, n->id) == 0) {
            l.boids += d->rooms[i].boids;
            l.rooms++;
        }
    for (size_t i = 0; i < d->nplaced; i++)
        if (strcmp(d->placed[i].node, n->id) == 0) {
            l.boids += d->placed[i].boids;
            l.rooms++;
        }
    return l;
}

bool cluster__dir_least_loaded(struct cluster_dir *d, int64_t now, char *best, size_t cap)
{
    for (size_t i = d->nplaced; i-- > 0;)
        if ((double)(now - d->placed[i].at_ns) > PLACED_TTL_S * 1e9)
            placed_drop(d, i);
    struct node_load pick = {0};
    bool found = false;
    for (size_t i = 0; i < d->nnodes; i++) {
        if ((double)(now - d->nodes[i].seen_ns) > NODE_STALE_S * 1e9)
            continue;
        struct node_load n = load_of(d, &d->nodes[i]);
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

void cluster__dir_count_placed(struct cluster_dir *d, const char *name, const char *node,
                               uint32_t boids, int64_t now)
{
    if (d->nplaced == MAX_PLACED) {
        size_t oldest = 0;
        for (size_t i = 1; i < d->nplaced; i++)
            oldest = d->placed[i].at_ns < d->placed[oldest].at_ns ? i : oldest;
        placed_drop(d, oldest);
    }
    struct placement *p = &d->placed[d->nplaced++];
    *p = (struct placement){.boids = boids, .at_ns = now};
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->node, sizeof p->node, "%s", node);
}

/* ---- /api/rooms ------------------------------------------------------------------- */

int cluster__dir_render(const struct cluster_dir *d, struct textbuf *t, cluster_local_fn local,
                        void *arg)
{
    for (size_t i = 0; i < d->nrooms; i++) {
        const struct dir_entry *e = &d->rooms[i];
        if (local(arg, t, e->name, e->node, i == 0))
            continue;
        textbuf_printf(t,
                       "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":0,\"admins\":0,"
                       "\"viewers\":0,\"boids\":%u,\"tick\":%llu,\"password\":false,"
                       "\"teams\":0,\"node\":\"%s\"}",
                       i ? "," : "", e->name, e->mode, e->boids, (unsigned long long)e->tick,
                       e->node);
    }
    return (int)d->nrooms;
}
