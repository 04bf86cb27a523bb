/*
 * lobby.c — rooms, members and joins (see lobby.h).
 *
 * Rooms live in an array, the default room first. Each room keeps its
 * members in a doubly linked list (the records are the network's, one per
 * connection) and counts them by role; an RTS room keeps its team slots
 * (teams.h). The lobby queues each command with the sender's description
 * and the rooms' own bookkeeping commands (a team's units spawned,
 * despawned) with the server's.
 */
#define _DEFAULT_SOURCE /* M_PI */

#include "lobby.h"

#include "metrics.h"
#include "pool.h"
#include "roles.h"
#include "secret.h"
#include "teams.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEAM_SPREAD 60.0f /* radius a team's units are spawned in */

struct lobby_room {
    struct room *room;
    char name[PROTO_ROOM_MAX + 1];
    enum proto_mode mode;
    char password[PROTO_TOKEN_MAX + 1]; /* "" = none */
    struct proto_limits limits;
    struct frame *frame; /* the network's: last frame announced */
    struct lobby_member *members;
    uint32_t count[3]; /* members by role */
    int64_t empty_since_ns;
    bool roster_changed;
    struct teams teams;
};

struct lobby {
    struct cfg cfg;
    struct room_config tmpl;
    struct pool *pool;
    struct lobby_room **rooms; /* [0] is the default room */
    size_t nrooms;
    uint64_t next_owner;
};

static int64_t seconds_ns(double s)
{
    return (int64_t)(s * 1e9);
}

/* ---- rooms ----------------------------------------------------------------- */

static struct lobby_room *room_open(struct lobby *l, const char *name, enum proto_mode mode,
                                    uint32_t boids, const char *password, int64_t now,
                                    const char **err)
{
    struct lobby_room *lr = calloc(1, sizeof *lr);
    if (!lr) {
        *err = "out of memory";
        return NULL;
    }
    struct room_config rc = l->tmpl;
    snprintf(lr->name, sizeof lr->name, "%s", name);
    rc.name = lr->name;
    rc.mode = mode;
    rc.boids = boids;
    if (boids > rc.sim.capacity)
        rc.sim.capacity = boids;
    lr->room = room_create(&rc, err);
    if (!lr->room || room_schedule(lr->room, l->pool) < 0) {
        if (lr->room)
            *err = "the server runs its most rooms";
        room_destroy(lr->room);
        free(lr);
        return NULL;
    }
    lr->mode = mode;
    snprintf(lr->password, sizeof lr->password, "%s", password ? password : "");
    proto_limits_from_config(&lr->limits, room_sim_config(lr->room), l->cfg.max_message);
    teams_init(&lr->teams, l->cfg.max_teams);
    lr->empty_since_ns = now;
    l->rooms[l->nrooms++] = lr;
    atomic_fetch_add_explicit(&g_metrics.rooms, 1, memory_order_relaxed);
    return lr;
}

static void room_close(struct lobby *l, size_t i)
{
    struct lobby_room *lr = l->rooms[i];
    room_unschedule(lr->room, l->pool);
    room_destroy(lr->room);
    frame_release(lr->frame);
    free(lr);
    l->rooms[i] = l->rooms[--l->nrooms];
    atomic_fetch_sub_explicit(&g_metrics.rooms, 1, memory_order_relaxed);
}

static struct lobby_room *room_find(const struct lobby *l, const char *name)
{
    for (size_t i = 0; i < l->nrooms; i++)
        if (strcmp(l->rooms[i]->name, name) == 0)
            return l->rooms[i];
    return NULL;
}

struct lobby *lobby_create(const struct cfg *cfg, const struct room_config *tmpl, struct pool *pool,
                           const char **err)
{
    struct lobby *l = calloc(1, sizeof *l);
    if (l)
        l->rooms = calloc(cfg->max_rooms, sizeof *l->rooms);
    if (!l || !l->rooms) {
        free(l);
        *err = "out of memory";
        return NULL;
    }
    l->cfg = *cfg;
    l->tmpl = *tmpl;
    l->tmpl.name = NULL;
    l->pool = pool;
    l->next_owner = 1;
    /* The default room never expires: when it became empty never matters. */
    if (!room_open(l, "default", PROTO_MODE_SANDBOX, tmpl->boids, NULL, 0, err)) {
        lobby_destroy(l);
        return NULL;
    }
    return l;
}

void lobby_destroy(struct lobby *l)
{
    if (!l)
        return;
    while (l->nrooms)
        room_close(l, l->nrooms - 1);
    free(l->rooms);
    free(l);
}

bool lobby_has_admin_token(const struct lobby *l)
{
    return l->cfg.admin_token[0] != '\0';
}

size_t lobby_count(const struct lobby *l)
{
    return l->nrooms;
}

struct lobby_room *lobby_at(const struct lobby *l, size_t i)
{
    return i < l->nrooms ? l->rooms[i] : NULL;
}

struct room *lobby_room_room(const struct lobby_room *lr)
{
    return lr->room;
}

const struct proto_limits *lobby_room_limits(const struct lobby_room *lr)
{
    return &lr->limits;
}

struct lobby_member *lobby_room_members(const struct lobby_room *lr)
{
    return lr->members;
}

struct frame **lobby_room_frame(struct lobby_room *lr)
{
    return &lr->frame;
}

bool lobby_room_take_roster_change(struct lobby_room *lr)
{
    bool changed = lr->roster_changed;
    lr->roster_changed = false;
    return changed;
}

/* ---- the room's own commands ----------------------------------------------- */

static struct room_actor actor_of(const struct lobby_member *m)
{
    return (struct room_actor){
        .client = m->client, .role = m->role, .team = m->team, .owner = m->owner};
}

static void push_internal(struct lobby_room *lr, const struct proto_command *cmd)
{
    struct room_actor server = {.client = 0, .role = PROTO_ROLE_ADMIN, .team = -1, .owner = 0};
    if (room_push(lr->room, &server, cmd) < 0)
        metrics_reject("internal");
}

/* A new team's units at its base, on an ellipse around the world's centre. */
static void team_spawn(const struct lobby *l, struct lobby_room *lr, int team)
{
    struct proto_command clear = {.kind = PROTO_CMD_SEEK_CLEAR};
    clear.args.seek_clear.group = team;
    push_internal(lr, &clear);
    if (l->cfg.team_units == 0)
        return;
    double a = 2.0 * M_PI * (team - 1) / l->cfg.max_teams - M_PI / 2;
    float w = lr->limits.width, h = lr->limits.height;
    struct proto_command spawn = {.kind = PROTO_CMD_SPAWN};
    spawn.args.spawn = (struct proto_spawn_args){
        .n = l->cfg.team_units,
        .group = team,
        .x = (float)(w / 2 + 0.35 * w * cos(a)),
        .y = (float)(h / 2 + 0.35 * h * sin(a)),
        .spread = TEAM_SPREAD,
    };
    push_internal(lr, &spawn);
}

/* The team's units go and its group is free again. */
static void team_end(struct lobby_room *lr, int team)
{
    struct proto_command despawn = {.kind = PROTO_CMD_DESPAWN};
    despawn.args.despawn = (struct proto_despawn_args){.n = UINT32_MAX, .group = team};
    push_internal(lr, &despawn);
    struct proto_command clear = {.kind = PROTO_CMD_SEEK_CLEAR};
    clear.args.seek_clear.group = team;
    push_internal(lr, &clear);
    teams_free(&lr->teams, team);
    lr->roster_changed = true;
}

/* ---- membership --------------------------------------------------------------- */

/* Players and admins who joined are listed in the roster; viewers and
 * those who only connected are not. */
static bool is_listed(const struct lobby_member *m)
{
    return m->joined && m->role != PROTO_ROLE_VIEWER;
}

static void attach(struct lobby_room *lr, struct lobby_member *m)
{
    m->room = lr;
    m->prev = NULL;
    m->next = lr->members;
    if (lr->members)
        lr->members->prev = m;
    lr->members = m;
    lr->count[m->role]++;
    if (is_listed(m))
        lr->roster_changed = true;
}

/* An RTS player left: its team waits for it, or ends now. */
static void team_left(const struct lobby *l, struct lobby_room *lr, int team, bool kicked,
                      int64_t now)
{
    if (kicked || l->cfg.grace <= 0)
        team_end(lr, team);
    else
        teams_wait(&lr->teams, team, now + seconds_ns(l->cfg.grace));
}

static void detach(struct lobby *l, struct lobby_member *m, bool kicked, int64_t now)
{
    struct lobby_room *lr = m->room;
    if (!lr)
        return;
    if (m->prev)
        m->prev->next = m->next;
    else
        lr->members = m->next;
    if (m->next)
        m->next->prev = m->prev;
    lr->count[m->role]--;
    if (is_listed(m))
        lr->roster_changed = true;
    if (m->team > 0)
        team_left(l, lr, m->team, kicked, now);
    if (!lr->members)
        lr->empty_since_ns = now;
    m->room = NULL;
    m->team = -1;
    m->prev = m->next = NULL;
}

void lobby_enter(struct lobby *l, struct lobby_member *m)
{
    m->role = m->loopback && !lobby_has_admin_token(l) ? PROTO_ROLE_ADMIN : PROTO_ROLE_PLAYER;
    m->team = -1;
    m->joined = false;
    m->owner = l->next_owner++;
    m->name[0] = '\0';
    attach(l->rooms[0], m);
}

void lobby_leave(struct lobby *l, struct lobby_member *m, bool kicked, int64_t now)
{
    detach(l, m, kicked, now);
}

int lobby_welcome(const struct lobby_member *m, char *buf, size_t cap)
{
    if (!m->room)
        return PROTO_E_NOT_JOINED;
    struct room_actor who = actor_of(m);
    return room_welcome(m->room->room, &who, buf, cap);
}

/* ---- joins ---------------------------------------------------------------------- */

/* A room a join creates: within max-rooms and max-room-boids; NULL with a
 * code and reason. */
static struct lobby_room *room_create_for(struct lobby *l, const struct proto_join_args *a,
                                          int64_t now, int *code, const char **why)
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
    const char *err = "";
    struct lobby_room *lr =
        room_open(l, a->room, mode, boids, a->has_password ? a->password : NULL, now, &err);
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
static struct lobby_room *room_for(struct lobby *l, const struct proto_join_args *a, int64_t now,
                                   int *code, const char **why)
{
    struct lobby_room *lr = room_find(l, a->room);
    if (!lr)
        return room_create_for(l, a, now, code, why);
    if (a->mode != PROTO_MODE_ANY && a->mode != lr->mode) {
        *code = PROTO_E_BAD_ROOM;
        *why = lr->mode == PROTO_MODE_RTS ? "join: that room is an rts room"
                                          : "join: that room is a sandbox room";
        return NULL;
    }
    return lr;
}

/* The checks a join passes before anything changes: role, room, password,
 * and for an RTS player a team (*team, with *reclaim if its token named
 * it). The room found or created goes to *out. */
static int join_check(struct lobby *l, const struct lobby_member *m,
                      const struct proto_join_args *a, int64_t now, struct lobby_room **out,
                      int *team, bool *reclaim, const char **why)
{
    int code = roles_check_join(a, l->cfg.admin_token, m->loopback, why);
    if (code) {
        atomic_fetch_add_explicit(&g_metrics.admin_denied, 1, memory_order_relaxed);
        return code;
    }
    struct lobby_room *lr = room_for(l, a, now, &code, why);
    if (!lr)
        return code;
    if (a->role == PROTO_ROLE_PLAYER && lr->password[0] &&
        !(a->has_password && secret_matches(a->password, lr->password))) {
        *why = "join: this room needs the right password for players";
        return PROTO_E_FORBIDDEN;
    }
    *out = lr;
    *team = -1;
    *reclaim = false;
    if (a->role != PROTO_ROLE_PLAYER || lr->mode != PROTO_MODE_RTS)
        return 0;
    *team = teams_pick(&lr->teams, m, a->has_rejoin ? a->rejoin : NULL, reclaim);
    if (!*team) {
        metrics_limit(LIMIT_TEAMS);
        *why = "join: every team of this room is taken";
        return PROTO_E_BAD_ROOM;
    }
    return 0;
}

int lobby_join(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
               int64_t now, const char **why)
{
    const struct proto_join_args *a = &cmd->args.join;
    struct lobby_room *lr = NULL;
    int team;
    bool reclaim;
    int code = join_check(l, m, a, now, &lr, &team, &reclaim, why);
    if (code)
        return code;
    if (reclaim && lr->teams.slot[team].player == m)
        m->team = -1; /* taking its own team again: leaving must not end it */
    detach(l, m, false, now);
    m->role = a->role;
    m->team = team;
    m->joined = true;
    snprintf(m->name, sizeof m->name, "%s", a->has_name ? a->name : "");
    m->owner = l->next_owner++;
    struct proto_command ack = *cmd; /* carries the new rejoin token to the room */
    if (team > 0) {
        m->owner = teams_take(&lr->teams, team, m, reclaim, m->owner, m->name, now);
        snprintf(ack.args.join.rejoin, sizeof ack.args.join.rejoin, "%s",
                 lr->teams.slot[team].rejoin);
        ack.args.join.has_rejoin = 1;
        if (!reclaim)
            team_spawn(l, lr, team);
    }
    attach(lr, m);
    struct room_actor who = actor_of(m);
    if (room_push(lr->room, &who, &ack) < 0)
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
    struct lobby_member *target = m->room->members;
    while (target && target->client != cmd->args.kick.client)
        target = target->next;
    if (!target) {
        *why = "kick: no client with that id in this room";
        return PROTO_E_NOT_FOUND;
    }
    if (target == m) {
        *why = "kick: a client cannot kick itself";
        return PROTO_E_BAD_ARG;
    }
    detach(l, target, true, now);
    atomic_fetch_add_explicit(&g_metrics.kicked, 1, memory_order_relaxed);
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
        return lobby_join(l, m, cmd, now, why);
    if (cmd->kind == PROTO_CMD_KICK && (rc = kick(l, m, cmd, now, kicked, why)) < 0)
        return rc;
    struct room_actor who = actor_of(m);
    return room_push(m->room->room, &who, cmd) < 0 ? PROTO_E_QUEUE_FULL : 0;
}

int lobby_refuse(const struct lobby_member *m, const char *id, int code, const char *message)
{
    if (!m->room || room_push_refusal(m->room->room, m->client, id, code, message) < 0)
        return PROTO_E_QUEUE_FULL;
    return 0;
}

/* ---- housekeeping ---------------------------------------------------------------- */

void lobby_housekeep(struct lobby *l, int64_t now)
{
    for (size_t i = l->nrooms; i-- > 0;) {
        struct lobby_room *lr = l->rooms[i];
        for (int t; (t = teams_expired(&lr->teams, now)) != 0;)
            team_end(lr, t);
        if (i > 0 && !lr->members && !teams_is_any_waiting(&lr->teams) &&
            now - lr->empty_since_ns >= seconds_ns(l->cfg.room_expiry)) {
            room_close(l, i);
            atomic_fetch_add_explicit(&g_metrics.rooms_expired, 1, memory_order_relaxed);
        }
    }
}

/* ---- what the rooms show ------------------------------------------------------------ */

static int roster_order(const void *pa, const void *pb)
{
    const struct proto_roster_entry *a = pa, *b = pb;
    if (a->team != b->team)
        return a->team < b->team ? -1 : 1;
    return (a->client > b->client) - (a->client < b->client);
}

int lobby_roster(const struct lobby_room *lr, char *buf, size_t cap)
{
    size_t n = 0,
           max = (size_t)lr->count[PROTO_ROLE_PLAYER] + lr->count[PROTO_ROLE_ADMIN] + SIM_GROUPS;
    struct proto_roster_entry *e = malloc(max * sizeof *e);
    if (!e)
        return PROTO_E_INTERNAL;
    for (const struct lobby_member *m = lr->members; m; m = m->next)
        if (is_listed(m))
            e[n++] = (struct proto_roster_entry){m->client, m->name, m->role, m->team, 1};
    for (int t = 1; t < SIM_GROUPS; t++) {
        const struct team *team = &lr->teams.slot[t];
        if (team->state == TEAM_WAITING)
            e[n++] = (struct proto_roster_entry){0, team->name, PROTO_ROLE_PLAYER, t, 0};
    }
    qsort(e, n, sizeof *e, roster_order);
    size_t more = n > LOBBY_ROSTER_MAX ? n - LOBBY_ROSTER_MAX : 0;
    int len = proto_reply_roster(buf, cap, lr->name, lr->mode, lr->count[PROTO_ROLE_VIEWER], e,
                                 n - more, more);
    free(e);
    return len;
}

void lobby_room_summary(const struct lobby_room *lr, struct lobby_room_summary *out)
{
    *out = (struct lobby_room_summary){
        .name = lr->name,
        .mode = lr->mode,
        .players = lr->count[PROTO_ROLE_PLAYER],
        .admins = lr->count[PROTO_ROLE_ADMIN],
        .viewers = lr->count[PROTO_ROLE_VIEWER],
        .teams = teams_taken(&lr->teams),
        .has_password = lr->password[0] != '\0',
    };
}

uint32_t lobby_max_rooms(const struct lobby *l)
{
    return l->cfg.max_rooms;
}

bool lobby_can_create(const struct lobby *l)
{
    return l->cfg.allow_create && l->nrooms < l->cfg.max_rooms;
}
