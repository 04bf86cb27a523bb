/*
 * lobby.c — the registry of rooms, joins and commands (see lobby.h).
 *
 * Rooms live in an array, the default room first; each is a lobby_room
 * (lobby_room.h) holding its members, teams and roster. Joins are decided
 * here, in order: role (roles.h), room (found or created within the
 * limits), password, team; only then does anything change.
 */
#include "lobby.h"

#include "script_dir.h"

#include "authguard.h"
#include "metrics.h"
#include "persist.h"
#include "pool.h"
#include "roles.h"
#include "room_persist.h"
#include "room_relay.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lobby {
    struct cfg cfg;
    struct authguard guard; /* failed admin tokens and room passwords */
    struct room_config tmpl;
    struct pool *pool;
    struct lobby_room **rooms; /* [0] is the default room */
    size_t nrooms;
    uint64_t next_owner;
    pthread_mutex_t lock; /* lobby_lock() */
    unsigned threads;     /* service threads (lobby_set_threads) */
    lobby_kick_fn *kick;
    void *kick_arg;
    /* Per service thread, the rooms it has members in: changed by that
     * thread alone (under the lock), read by it without. */
    struct lobby_room **mine[LOBBY_THREADS_MAX];
    size_t nmine[LOBBY_THREADS_MAX];
    struct script_source room_script; /* the default room's (--room-script); text NULL: none */
};

static int64_t seconds_ns(double s)
{
    return (int64_t)(s * 1e9);
}

/* ---- rooms ----------------------------------------------------------------- */

static enum proto_mode default_mode(const struct cfg *cfg)
{
    return strcmp(cfg->room_mode, "rts") == 0 ? PROTO_MODE_RTS : PROTO_MODE_SANDBOX;
}

/* The server's own room shape: its world, edges and teams. */
static struct lobby_room_shape server_shape(const struct lobby *l)
{
    return (struct lobby_room_shape){.width = l->tmpl.sim.width,
                                     .height = l->tmpl.sim.height,
                                     .edges = l->tmpl.sim.edges,
                                     .max_teams = l->cfg.max_teams,
                                     .team_units = l->cfg.team_units};
}

/* Opens a room shaped as `shape` (NULL: the server's). */
static struct lobby_room *open_room(struct lobby *l, const char *name, enum proto_mode mode,
                                    uint32_t boids, const char *password, int64_t now,
                                    const struct ckpt *restore, bool resumed,
                                    const struct lobby_room_shape *shape,
                                    const struct script_source *script, const char **err)
{
    struct lobby_room_config c = {
        .script = script,
        .tmpl = &l->tmpl,
        .name = name,
        .mode = mode,
        .boids = boids,
        .password = password,
        .max_message = l->cfg.max_message,
        .shape = shape ? *shape : server_shape(l),
        .restore = restore,
        .resumed = resumed,
        .grace_ns = seconds_ns(l->cfg.grace),
    };
    struct lobby_room *lr = lobby_room_open(&c, l->pool, now, err);
    if (lr)
        l->rooms[l->nrooms++] = lr;
    return lr;
}

/* Owner keys handed out from now on come after every restored one. */
static void owners_after(struct lobby *l, const struct ckpt *c)
{
    uint64_t most = 0;
    for (uint32_t k = 0; k < c->owner_count; k++) {
        struct ckpt_owner o;
        ckpt_owner(c, k, &o);
        most = o.owner > most ? o.owner : most;
    }
    for (uint32_t t = 1; t <= c->max_teams; t++)
        most = c->teams[t].owner > most ? c->teams[t].owner : most;
    if (most >= l->next_owner)
        l->next_owner = most + 1;
}

static struct lobby_room *find_room(const struct lobby *l, const char *name);

/* The state room `name` carries on from at start: its checkpoint c (NULL:
 * none) and, in a single process that records, every command its log
 * holds after c (room_resume_log: the state is then in *res). NULL:
 * nothing to restore. */
static const struct ckpt *carry_on(struct lobby *l, const char *name, const struct ckpt *c,
                                   struct room_resumed *res)
{
    struct persist *p = l->tmpl.persist;
    uint8_t *log = NULL;
    size_t len = 0;
    char why[256];
    *res = (struct room_resumed){0};
    if (l->tmpl.link || persist_read_log(p, name, &log, &len) <= 0)
        return c;
    int rc = room_resume_log(c, log, len, 0, res, why, sizeof why);
    if (rc == 0)
        return &res->ck;
    if (rc != PROTO_E_NOT_FOUND)
        atomic_fetch_add_explicit(&g_metrics.logs_refused, 1, memory_order_relaxed);
    if (rc != PROTO_E_NOT_FOUND)
        persist_say(p, "room \"%s\": %s; %s", name, why,
                    c ? "it carries on from its checkpoint alone, without the commands after it"
                      : "it is not restored");
    return c;
}

/* Opens room `name` where it stopped (carry_on) and says how it went; NULL
 * if there is nothing to restore or it could not be restored. */
static struct lobby_room *reopen_room(struct lobby *l, const char *name, const struct ckpt *c,
                                      int64_t now)
{
    struct persist *p = l->tmpl.persist;
    struct room_resumed res;
    const struct ckpt *from = carry_on(l, name, c, &res);
    if (!from)
        return NULL;
    const char *err = "the server runs its most rooms (--max-rooms)";
    struct lobby_room *lr = l->nrooms < l->cfg.max_rooms
                                ? open_room(l, name, from->mode, from->boids, from->password, now,
                                            from, res.mem != NULL, NULL, NULL, &err)
                                : NULL;
    struct room_info info = {0};
    if (lr)
        room_info(lobby_room_room(lr), &info);
    if (!lr)
        persist_say(p, "room \"%s\" not restored: %s; %s", name, err,
                    strcmp(name, "default") == 0 ? "it starts fresh" : "a join creates it anew");
    else if (res.mem)
        persist_say(p, "room \"%s\" resumed at tick %llu, where its command log ends (from %s%u)",
                    name, (unsigned long long)info.tick,
                    res.from_checkpoint ? "checkpoint " : "the log's last start, checkpoint ",
                    from->seq);
    else
        persist_say(p, "room \"%s\" restored at tick %llu from checkpoint %u (by %s)", name,
                    (unsigned long long)info.tick, from->seq, from->build);
    if (lr)
        owners_after(l, from);
    room_resumed_free(&res);
    return lr;
}

/* Every room the checkpoint directory or the record directory held but
 * the default room, which lobby_create() opened first. */
static void restore_rooms(struct lobby *l, int64_t now)
{
    struct persist *p = l->tmpl.persist;
    const struct ckpt *c;
    const char *name;
    for (size_t i = 0; (c = persist_restored_at(p, i)) != NULL; i++)
        if (strcmp(c->room, "default") != 0)
            reopen_room(l, c->room, c, now);
    for (size_t i = 0; (name = persist_logged_at(p, i)) != NULL; i++)
        if (!find_room(l, name)) /* a room whose first checkpoint was not due yet */
            reopen_room(l, name, NULL, now);
    persist_restored_done(p);
}

/* A room that another node of the cluster ticks (tmpl.link): opened here
 * from its last checkpoint (its mode, password, world and teams), so that
 * this node relays it; NULL if the cluster has no such room, or no
 * checkpoint of it yet (a join may then create it as any other). */
static struct lobby_room *open_cluster_room(struct lobby *l, const char *name, int64_t now)
{
    const struct room_link *link = l->tmpl.link;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!link || link->fetch(link->arg, name, &buf, &len) <= 0 || !buf)
        return NULL;
    struct ckpt c;
    const char *why = NULL;
    struct lobby_room *lr = NULL;
    if (l->nrooms < l->cfg.max_rooms && ckpt_decode(buf, len, &c, &why) == 0 &&
        strcmp(c.room, name) == 0)
        lr = open_room(l, name, c.mode, c.boids, c.password, now, &c, false, NULL, NULL, &why);
    free(buf);
    return lr;
}

static void close_room(struct lobby *l, size_t i)
{
    lobby_room_close(l->rooms[i], l->pool);
    l->rooms[i] = l->rooms[--l->nrooms];
}

static struct lobby_room *find_room(const struct lobby *l, const char *name)
{
    for (size_t i = 0; i < l->nrooms; i++)
        if (strcmp(lobby_room_name(l->rooms[i]), name) == 0)
            return l->rooms[i];
    return NULL;
}

struct lobby *lobby_create(const struct cfg *cfg, const struct room_config *tmpl, struct pool *pool,
                           int64_t now, const char **err)
{
    struct lobby *l = calloc(1, sizeof *l);
    if (l)
        l->rooms = calloc((size_t)cfg->max_rooms * (LOBBY_THREADS_MAX + 1), sizeof *l->rooms);
    if (!l || !l->rooms) {
        free(l);
        *err = "out of memory";
        return NULL;
    }
    for (unsigned t = 0; t < LOBBY_THREADS_MAX; t++) /* one allocation, cut in parts */
        l->mine[t] = l->rooms + (size_t)cfg->max_rooms * (t + 1);
    pthread_mutex_init(&l->lock, NULL);
    l->threads = 1;
    l->cfg = *cfg;
    l->tmpl = *tmpl;
    l->tmpl.name = NULL;
    l->pool = pool;
    l->next_owner = 1;
    authguard_init(&l->guard, cfg->auth_tries, cfg->auth_tries_all);
    if (cfg->room_script[0] &&
        !(tmpl->scripts && script_dir_get(tmpl->scripts, cfg->room_script, &l->room_script))) {
        *err = "--room-script names no script of the scripts directory (--scripts-dir)";
        lobby_destroy(l);
        return NULL;
    }
    /* The default room never expires: when it became empty never matters.
     * It comes back from its checkpoint if there is one, else starts anew. */
    const struct ckpt *saved = tmpl->persist ? persist_restored(tmpl->persist, "default") : NULL;
    if (!(tmpl->persist && reopen_room(l, "default", saved, now)) &&
        !open_cluster_room(l, "default", now) &&
        !open_room(l, "default", default_mode(cfg), tmpl->boids, NULL, 0, NULL, false, NULL,
                   l->room_script.text ? &l->room_script : NULL, err)) {
        lobby_destroy(l);
        return NULL;
    }
    if (tmpl->persist)
        restore_rooms(l, now);
    return l;
}

void lobby_destroy(struct lobby *l)
{
    if (!l)
        return;
    while (l->nrooms)
        close_room(l, l->nrooms - 1);
    pthread_mutex_destroy(&l->lock);
    script_source_free(&l->room_script);
    free(l->rooms);
    free(l);
}

bool lobby_has_admin_token(const struct lobby *l)
{
    return l->cfg.admin_token[0] != '\0';
}

void lobby_lock(struct lobby *l)
{
    pthread_mutex_lock(&l->lock);
}

void lobby_unlock(struct lobby *l)
{
    pthread_mutex_unlock(&l->lock);
}

void lobby_set_threads(struct lobby *l, unsigned threads, lobby_kick_fn *kick, void *arg)
{
    l->threads = threads < 1 ? 1 : threads > LOBBY_THREADS_MAX ? LOBBY_THREADS_MAX : threads;
    l->kick = kick;
    l->kick_arg = arg;
}

size_t lobby_rooms_of(const struct lobby *l, unsigned thread, struct lobby_room *const **rooms)
{
    thread %= LOBBY_THREADS_MAX;
    *rooms = l->mine[thread];
    return l->nmine[thread];
}

size_t lobby_count(const struct lobby *l)
{
    return l->nrooms;
}

struct lobby_room *lobby_at(const struct lobby *l, size_t i)
{
    return i < l->nrooms ? l->rooms[i] : NULL;
}

uint32_t lobby_max_rooms(const struct lobby *l)
{
    return l->cfg.max_rooms;
}

bool lobby_can_create(const struct lobby *l)
{
    return l->cfg.allow_create && l->nrooms < l->cfg.max_rooms;
}

void lobby_checkpoint(struct lobby *l, int64_t now, bool stopped)
{
    if (!persist_has_checkpoints(l->tmpl.persist))
        return;
    for (size_t i = 0; i < l->nrooms; i++)
        lobby_room_checkpoint(l->rooms[i], now, stopped);
}

/* The rooms other nodes of the cluster placed here: opened, so that this
 * node takes their leases and ticks them. */
static void adopt_rooms(struct lobby *l, int64_t now)
{
    const struct room_link *link = l->tmpl.link;
    struct room_adoption ad;
    while (link && link->adopt(link->arg, &ad)) {
        const char *err = "";
        if (!find_room(l, ad.name) && l->nrooms < l->cfg.max_rooms &&
            ad.boids <= l->cfg.max_room_boids &&
            !open_room(l, ad.name, ad.mode, ad.boids, ad.password[0] ? ad.password : NULL, now,
                       NULL, false, NULL, NULL, &err))
            fprintf(stderr, "flockd: room \"%s\" placed here not opened: %s\n", ad.name, err);
    }
}

/* Replies to the clients of a service thread with no member in a room
 * (they left or closed after sending): nobody takes them but this. */
static void drop_orphan_replies(struct lobby *l)
{
    for (size_t i = 0; i < l->nrooms; i++)
        for (unsigned t = 0; t < l->threads; t++) {
            if (lobby_room_members(l->rooms[i], t))
                continue;
            struct room_reply *rep =
                room_take_replies_of(lobby_room_room(l->rooms[i]), t, l->threads);
            while (rep) {
                struct room_reply *next = rep->next;
                free(rep);
                rep = next;
            }
        }
}

void lobby_housekeep(struct lobby *l, int64_t now)
{
    adopt_rooms(l, now);
    drop_orphan_replies(l);
    if (l->tmpl.persist && persist_checkpoint_due(l->tmpl.persist, now))
        lobby_checkpoint(l, now, false);
    for (size_t i = l->nrooms; i-- > 0;) {
        lobby_room_end_expired_teams(l->rooms[i], now);
        /* A room other nodes' clients watch (a cluster) is not empty. */
        if (i > 0 && lobby_room_is_expired(l->rooms[i], now, seconds_ns(l->cfg.room_expiry)) &&
            !room_relay_is_watched(lobby_room_room(l->rooms[i]), now)) {
            if (persist_has_checkpoints(l->tmpl.persist)) /* gone for good */
                persist_remove(l->tmpl.persist, lobby_room_name(l->rooms[i]));
            close_room(l, i);
            atomic_fetch_add_explicit(&g_metrics.rooms_expired, 1, memory_order_relaxed);
        }
    }
}

/* ---- membership --------------------------------------------------------------- */

/* Puts m into lr, and lr among the rooms of m's thread if it is its first
 * member there. */
static void attach(struct lobby *l, struct lobby_room *lr, struct lobby_member *m)
{
    unsigned t = m->thread % LOBBY_THREADS_MAX;
    if (!lobby_room_members(lr, t))
        l->mine[t][l->nmine[t]++] = lr;
    lobby_room_attach(lr, m);
}

/* Takes m out of its room; its RTS team waits out the grace period unless
 * it was kicked or there is none. A room its thread has no member in any
 * more leaves that thread's rooms. */
static void detach(struct lobby *l, struct lobby_member *m, bool kicked, int64_t now)
{
    struct lobby_room *lr = m->room;
    unsigned t = m->thread % LOBBY_THREADS_MAX;
    lobby_room_detach(m, kicked || l->cfg.grace <= 0, now + seconds_ns(l->cfg.grace), now);
    if (!lr || lobby_room_members(lr, t))
        return;
    for (size_t i = 0; i < l->nmine[t]; i++)
        if (l->mine[t][i] == lr) {
            l->mine[t][i] = l->mine[t][--l->nmine[t]];
            break;
        }
}

void lobby_enter(struct lobby *l, struct lobby_member *m)
{
    /* In an rts default room a player owns a team, which only a join gives. */
    bool is_rts = lobby_room_mode(l->rooms[0]) == PROTO_MODE_RTS;
    m->role = m->loopback && !lobby_has_admin_token(l) ? PROTO_ROLE_ADMIN
              : is_rts                                 ? PROTO_ROLE_VIEWER
                                                       : PROTO_ROLE_PLAYER;
    m->team = -1;
    m->joined = false;
    m->owner = l->next_owner++;
    m->name[0] = '\0';
    attach(l, l->rooms[0], m);
}

void lobby_leave(struct lobby *l, struct lobby_member *m, bool kicked, int64_t now)
{
    detach(l, m, kicked, now);
}

int lobby_welcome(const struct lobby_member *m, char *buf, size_t cap)
{
    if (!m->room)
        return PROTO_E_NOT_JOINED;
    return lobby_room_welcome(m->room, m, buf, cap);
}

/* ---- joins ---------------------------------------------------------------------- */

/* The teams of an rts room a join creates (*shape), within max-teams,
 * team-cap and what one room's frames may hold; 0, or a negative wire
 * code with the reason. */
static int join_teams(const struct lobby *l, const struct proto_join_args *a, uint32_t boids,
                      struct lobby_room_shape *shape, const char **why)
{
    shape->max_teams = a->has_teams ? a->teams : l->cfg.max_teams;
    shape->team_units = a->has_units ? a->units : l->cfg.team_units;
    uint32_t most =
        l->cfg.capacity > l->cfg.max_room_boids ? l->cfg.capacity : l->cfg.max_room_boids;
    if (shape->max_teams > l->cfg.max_teams) {
        *why = "join: 'teams' is above the server's max-teams";
        return PROTO_E_OUT_OF_RANGE;
    }
    if (shape->team_units > l->cfg.team_cap) {
        *why = "join: 'units' is above the server's team-cap";
        return PROTO_E_OUT_OF_RANGE;
    }
    if ((uint64_t)boids + (uint64_t)shape->max_teams * shape->team_units > most) {
        *why = "join: 'boids' and every team's 'units' are more than a room of this server holds "
               "(the larger of capacity and max-room-boids)";
        return PROTO_E_OUT_OF_RANGE;
    }
    return 0;
}

/*
 * The shape of the room a join creates (PROTOCOL.md §5.6): the world
 * follows its boids (sim_world_for) but where width or height are given;
 * a sandbox without `boids` keeps the server's world. Edges: given, else
 * contain for rts and the server's for a sandbox. Teams: join_teams().
 * 0, or a negative wire code with the reason.
 */
static int join_shape(const struct lobby *l, const struct proto_join_args *a, enum proto_mode mode,
                      uint32_t boids, struct lobby_room_shape *shape, const char **why)
{
    *shape = server_shape(l);
    bool is_rts = mode == PROTO_MODE_RTS;
    if (!is_rts && (a->has_teams || a->has_units)) {
        *why = "join: 'teams' and 'units' are for a new rts room";
        return PROTO_E_BAD_ARG;
    }
    int code = is_rts ? join_teams(l, a, boids, shape, why) : 0;
    if (code)
        return code;
    if (is_rts || a->has_boids)
        sim_world_for(boids + shape->max_teams * (is_rts ? shape->team_units : 0), &shape->width,
                      &shape->height);
    shape->width = a->has_width ? a->width : shape->width;
    shape->height = a->has_height ? a->height : shape->height;
    if (a->edges != PROTO_EDGES_ANY)
        shape->edges = a->edges == PROTO_EDGES_WRAP ? SIM_EDGES_WRAP : SIM_EDGES_CONTAIN;
    else if (is_rts)
        shape->edges = SIM_EDGES_CONTAIN;
    return 0;
}

/* A room a join creates: within max-rooms and max-room-boids, shaped as
 * join_shape() says; NULL with a code and reason. */
static struct lobby_room *create_room(struct lobby *l, const struct proto_join_args *a, int64_t now,
                                      int *code, const char **why)
{
    *code = PROTO_E_BAD_ROOM;
    if (!l->cfg.allow_create) {
        *why = "join: no such room, and this server does not create rooms";
        return NULL;
    }
    if (l->nrooms >= l->cfg.max_rooms) {
        metrics_limit(LIMIT_ROOMS);
        *why = "join: no such room, and the server runs its most rooms";
        return NULL;
    }
    enum proto_mode mode = a->mode == PROTO_MODE_RTS ? PROTO_MODE_RTS : PROTO_MODE_SANDBOX;
    uint32_t boids = a->has_boids ? a->boids : mode == PROTO_MODE_RTS ? 0 : l->cfg.boids;
    if (boids > l->cfg.max_room_boids) {
        metrics_limit(LIMIT_ROOM_BOIDS);
        *code = PROTO_E_OUT_OF_RANGE;
        *why = "join: 'boids' is above the server's max-room-boids";
        return NULL;
    }
    struct lobby_room_shape shape;
    int rc = join_shape(l, a, mode, boids, &shape, why);
    if (rc) {
        *code = rc;
        return NULL;
    }
    const char *err = "";
    const char *password = a->has_password ? a->password : NULL;
    const struct room_link *link = l->tmpl.link;
    /* A cluster may tick it on a less loaded node (this copy relays it
     * then), but not an RTS room a player makes (its teams are its node's)
     * nor a scripted one (its script is read from this node's directory). */
    if (link && !(mode == PROTO_MODE_RTS && a->role == PROTO_ROLE_PLAYER) && !a->has_script)
        link->place(link->arg, a->room, mode, boids, password);
    struct script_source script = {0};
    if (a->has_script &&
        !(l->tmpl.scripts && script_dir_get(l->tmpl.scripts, a->script, &script))) {
        *code = PROTO_E_BAD_ARG;
        *why = "join: that script is not in the server's scripts directory";
        return NULL;
    }
    struct lobby_room *lr = open_room(l, a->room, mode, boids, password, now, NULL, false, &shape,
                                      a->has_script ? &script : NULL, &err);
    script_source_free(&script);
    if (!lr) {
        *code = PROTO_E_INTERNAL;
        *why = err;
        return NULL;
    }
    atomic_fetch_add_explicit(&g_metrics.rooms_created, 1, memory_order_relaxed);
    return lr;
}

/* The room to join: found (in the mode asked for), or created when allowed;
 * NULL with a code and reason. */
static struct lobby_room *pick_room(struct lobby *l, const struct proto_join_args *a, int64_t now,
                                    int *code, const char **why)
{
    struct lobby_room *lr = find_room(l, a->room);
    if (!lr)
        lr = open_cluster_room(l, a->room, now);
    if (!lr)
        return create_room(l, a, now, code, why);
    enum proto_mode mode = lobby_room_mode(lr);
    if (a->mode != PROTO_MODE_ANY && a->mode != mode) {
        *code = PROTO_E_BAD_ROOM;
        *why = mode == PROTO_MODE_RTS ? "join: that room is an rts room"
                                      : "join: that room is a sandbox room";
        return NULL;
    }
    char script[SCRIPT_NAME_MAX + 1];
    uint64_t hash;
    bool has = room_script_info(lobby_room_room(lr), script, &hash, NULL);
    if (a->has_script && (!has || strcmp(script, a->script) != 0)) {
        *code = PROTO_E_BAD_ARG;
        *why = has ? "join: that room runs another script" : "join: that room runs no script";
        return NULL;
    }
    return lr;
}

/* A join's decision before anything changes: role, room, password, and
 * for an RTS player a team (*team, *reclaim if its token named it). */
struct join_plan {
    struct lobby_room *room;
    int team; /* -1: none */
    bool reclaim;
};

/* ---- authentication -------------------------------------------------------------- */

/* m's address as text for the log. */
static void address_text(const struct lobby_member *m, char *out, size_t cap)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    bool is_v4 = memcmp(m->addr, mapped, sizeof mapped) == 0;
    if (!inet_ntop(is_v4 ? AF_INET : AF_INET6, is_v4 ? m->addr + 12 : m->addr, out, (socklen_t)cap))
        snprintf(out, cap, "?");
}

/* Before a secret is compared: PROTO_E_RATE_LIMITED while m's address (or
 * every address) is locked out by earlier failures, else 0. */
static int auth_allowed(struct lobby *l, const struct lobby_member *m, int64_t now,
                        const char **why)
{
    if (authguard_wait(&l->guard, m->addr, now) == 0)
        return 0;
    metrics_limit(LIMIT_AUTH);
    *why = "join: too many failed admin tokens or passwords; wait before trying again";
    return PROTO_E_RATE_LIMITED;
}

/* A secret compared: counts a failure (metric, and a log line once it
 * costs a delay) or clears m's address on success. */
static void auth_result(struct lobby *l, const struct lobby_member *m, bool is_ok, int64_t now,
                        const char *what)
{
    if (is_ok) {
        authguard_succeeded(&l->guard, m->addr);
        return;
    }
    atomic_fetch_add_explicit(&g_metrics.auth_failures, 1, memory_order_relaxed);
    int64_t all, own = authguard_failed(&l->guard, m->addr, now, &all);
    if (!own && !all)
        return;
    char addr[INET6_ADDRSTRLEN];
    address_text(m, addr, sizeof addr);
    fprintf(stderr,
            "flockd: failed %s from %s (%.0f recent); refusing its next attempts for %.0f s%s\n",
            what, addr, authguard_failures(&l->guard, m->addr, now),
            (double)(own > all ? own : all) / 1e9,
            all ? " (too many failures from every address: all are refused)" : "");
}

/* An RTS room that another node of a cluster ticks: its teams are that
 * node's (server/cluster/CLUSTER.md §7), so a player joins it there.
 * PROTO_E_BAD_ROOM with a reason naming the node, or 0. */
static int teams_elsewhere(const struct lobby *l, struct lobby_room *lr, const char **why)
{
    static _Thread_local char text[256];
    const struct room_link *link = l->tmpl.link;
    char node[PROTO_NODE_MAX + 1];
    if (!link || !link->owner_of ||
        link->owner_of(link->arg, lobby_room_room(lr), node, sizeof node) <= 0)
        return 0;
    snprintf(text, sizeof text,
             "join: node %s ticks this rts room and keeps its teams: join it there to play "
             "(here only to watch)",
             node);
    *why = text;
    return PROTO_E_BAD_ROOM;
}

static int join_check(struct lobby *l, const struct lobby_member *m,
                      const struct proto_join_args *a, int64_t now, struct join_plan *plan,
                      const char **why)
{
    bool is_token_checked = a->role == PROTO_ROLE_ADMIN && lobby_has_admin_token(l);
    int code = is_token_checked ? auth_allowed(l, m, now, why) : 0;
    if (code)
        return code;
    code = roles_check_join(a, l->cfg.admin_token, m->loopback, why);
    if (is_token_checked)
        auth_result(l, m, code == 0, now, "admin token");
    if (code) {
        atomic_fetch_add_explicit(&g_metrics.admin_denied, 1, memory_order_relaxed);
        return code;
    }
    struct lobby_room *lr = pick_room(l, a, now, &code, why);
    if (!lr)
        return code;
    if (a->role == PROTO_ROLE_PLAYER && lobby_room_has_password(lr)) {
        if ((code = auth_allowed(l, m, now, why)) != 0)
            return code;
        bool is_ok = lobby_room_can_play(lr, a->has_password ? a->password : NULL);
        auth_result(l, m, is_ok, now, "room password");
        if (!is_ok) {
            *why = "join: this room needs the right password for players";
            return PROTO_E_FORBIDDEN;
        }
    }
    *plan = (struct join_plan){.room = lr, .team = -1, .reclaim = false};
    if (a->role != PROTO_ROLE_PLAYER || lobby_room_mode(lr) != PROTO_MODE_RTS)
        return 0;
    if ((code = teams_elsewhere(l, lr, why)) != 0)
        return code;
    plan->team = teams_pick(lobby_room_teams(lr), a->has_rejoin ? a->rejoin : NULL, &plan->reclaim);
    if (!plan->team) {
        metrics_limit(LIMIT_TEAMS);
        *why = "join: every team of this room is taken";
        return PROTO_E_BAD_ROOM;
    }
    return 0;
}

/* m takes the planned team; the join's ack carries its new rejoin token. */
static void take_team(struct lobby_member *m, const struct join_plan *plan,
                      struct proto_command *ack, int64_t now)
{
    struct teams *ts = lobby_room_teams(plan->room);
    m->owner = teams_take(ts, plan->team, m, plan->reclaim, m->owner, m->name, now);
    snprintf(ack->args.join.rejoin, sizeof ack->args.join.rejoin, "%s",
             ts->slot[plan->team].rejoin);
    ack->args.join.has_rejoin = 1;
    if (!plan->reclaim)
        lobby_room_team_start(plan->room, plan->team);
}

/* `old`, whose team a rejoin took over, leaves its room (its team stays
 * with the new connection: lobby_room_detach() leaves a team that is no
 * longer its own) and is closed: by the caller (*replaced) if its thread
 * is the joiner's, else by its own thread. */
static void replace(struct lobby *l, const struct lobby_member *m, struct lobby_member *old,
                    int64_t now, struct lobby_member **replaced)
{
    if (old->thread != m->thread && l->kick) {
        l->kick(l->kick_arg, old->thread, old->client, LOBBY_REPLACED);
        return;
    }
    detach(l, old, true, now);
    old->evicted = LOBBY_REPLACED;
    *replaced = old;
}

int lobby_join(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
               int64_t now, struct lobby_member **replaced, const char **why)
{
    const struct proto_join_args *a = &cmd->args.join;
    struct join_plan plan;
    *replaced = NULL;
    int code = join_check(l, m, a, now, &plan, why);
    if (code)
        return code;
    struct lobby_member *old = plan.reclaim ? lobby_room_player_of(plan.room, plan.team) : NULL;
    if (old == m) {
        m->team = -1; /* taking its own team again: leaving must not end it */
        old = NULL;
    }
    detach(l, m, false, now);
    m->role = a->role;
    m->team = plan.team;
    m->joined = true;
    snprintf(m->name, sizeof m->name, "%s", a->has_name ? a->name : "");
    m->owner = l->next_owner++;
    struct proto_command ack = *cmd;
    if (plan.team > 0)
        take_team(m, &plan, &ack, now);
    attach(l, plan.room, m);
    if (old)
        replace(l, m, old, now, replaced);
    if (lobby_room_push(plan.room, m, &ack, now) < 0)
        metrics_reject("internal");
    return 0;
}

/* ---- commands ---------------------------------------------------------------------- */

int lobby_allowed(const struct lobby_member *m, const struct proto_command *cmd, const char **why)
{
    return roles_check(m->role, m->team, cmd, why);
}

/* kick: the named member of m's room leaves it at once (its team ends). */
static int kick(struct lobby *l, const struct lobby_member *m, const struct proto_command *cmd,
                int64_t now, struct lobby_member **kicked, const char **why)
{
    struct lobby_member *target = lobby_room_find(m->room, cmd->args.kick.client);
    if (!target) {
        *why = "kick: no client with that id in this room";
        return PROTO_E_NOT_FOUND;
    }
    if (target == m) {
        *why = "kick: a client cannot kick itself";
        return PROTO_E_BAD_ARG;
    }
    atomic_fetch_add_explicit(&g_metrics.kicked, 1, memory_order_relaxed);
    if (target->thread != m->thread && l->kick) { /* its own thread detaches and closes it */
        l->kick(l->kick_arg, target->thread, target->client, LOBBY_KICKED);
        return 0;
    }
    detach(l, target, true, now);
    target->evicted = LOBBY_KICKED;
    *kicked = target;
    return 0;
}

int lobby_submit(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
                 int64_t now, struct lobby_member **kicked, const char **why)
{
    *kicked = NULL;
    if (!m->room) {
        *why = "not in a room";
        return PROTO_E_NOT_JOINED;
    }
    int rc = lobby_allowed(m, cmd, why);
    if (rc < 0)
        return rc;
    if (cmd->kind == PROTO_CMD_JOIN)
        return lobby_join(l, m, cmd, now, kicked, why);
    if (cmd->kind == PROTO_CMD_KICK && (rc = kick(l, m, cmd, now, kicked, why)) < 0)
        return rc;
    if (cmd->kind == PROTO_CMD_SCRIPT && l->tmpl.scripts) /* the room takes what is on disk now */
        script_dir_reload(l->tmpl.scripts, NULL, 0);
    return lobby_room_push(m->room, m, cmd, now);
}

int lobby_reload_scripts(struct lobby *l)
{
    if (!l || !l->tmpl.scripts)
        return 0;
    char why[SCRIPT_REASON_MAX];
    int failed = script_dir_reload(l->tmpl.scripts, why, sizeof why);
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->nrooms; i++)
        lobby_room_reload_script(l->rooms[i]);
    pthread_mutex_unlock(&l->lock);
    return failed;
}

int lobby_refuse(const struct lobby_member *m, const char *id, int code, const char *message)
{
    if (!m->room || room_push_refusal(lobby_room_room(m->room), m->client, id, code, message) < 0)
        return PROTO_E_QUEUE_FULL;
    return 0;
}
