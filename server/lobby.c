/*
 * lobby.c — rooms, members, roles and RTS teams (see lobby.h).
 *
 * Rooms live in an array, the default room first. Each room keeps its
 * members in a doubly linked list (the records are the network's, one per
 * connection) and counts them by role. An RTS room has one team slot per
 * group 1..max-teams: free, playing (its player is in the room) or waiting
 * (its player left; the units stay until the grace period ends or the
 * player rejoins with the team's token).
 */
#define _GNU_SOURCE

#include "lobby.h"

#include "clock.h"
#include "metrics.h"
#include "pool.h"
#include "textbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define TEAM_SPREAD  60.0f /* radius a team's units are spawned in */
#define REJOIN_BYTES 16    /* random bytes of a rejoin token (32 hex digits) */

enum team_state { TEAM_FREE, TEAM_PLAYING, TEAM_WAITING };

struct lobby_team {
    enum team_state state;
    struct lobby_member *player; /* TEAM_PLAYING */
    uint64_t owner;              /* obstacle key, kept across a rejoin */
    char rejoin[2 * REJOIN_BYTES + 1];
    char name[PROTO_NAME_MAX + 1];
    int64_t grace_end_ns; /* TEAM_WAITING */
};

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
    int roster_changed;
    struct lobby_team teams[SIM_GROUPS];
};

struct lobby {
    struct cfg cfg;
    struct room_config tmpl;
    struct pool *pool;
    struct lobby_room **rooms; /* [0] is the default room */
    size_t nrooms;
    uint64_t next_owner;
};

/* ---- rooms ----------------------------------------------------------------- */

static struct lobby_room *room_open(struct lobby *l, const char *name, enum proto_mode mode,
                                    uint32_t boids, const char *password, const char **err)
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
    lr->empty_since_ns = clock_mono_ns();
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
    if (!room_open(l, "default", PROTO_MODE_SANDBOX, tmpl->boids, NULL, err)) {
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

int lobby_has_admin_token(const struct lobby *l)
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

struct lobby_member *lobby_room_find(const struct lobby_room *lr, uint64_t client)
{
    for (struct lobby_member *m = lr->members; m; m = m->next)
        if (m->client == client)
            return m;
    return NULL;
}

struct frame **lobby_room_frame(struct lobby_room *lr)
{
    return &lr->frame;
}

int lobby_room_take_roster_change(struct lobby_room *lr)
{
    int changed = lr->roster_changed;
    lr->roster_changed = 0;
    return changed;
}

/* ---- the room's own commands ----------------------------------------------- */

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
    lr->teams[team] = (struct lobby_team){.state = TEAM_FREE};
    lr->roster_changed = 1;
}

static void new_token(char *out)
{
    unsigned char raw[REJOIN_BYTES];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        /* No entropy source: still unique per process, not secret. */
        static uint64_t counter;
        uint64_t v = ++counter ^ (uint64_t)clock_mono_ns();
        memcpy(raw, &v, sizeof v);
        memcpy(raw + 8, &v, sizeof v);
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* ---- membership --------------------------------------------------------------- */

/* Constant-time equality of two NUL-terminated secrets of at most
 * PROTO_TOKEN_MAX bytes: the time depends on neither content nor length. */
static int secret_equal(const char *given, const char *expected)
{
    unsigned char a[PROTO_TOKEN_MAX + 1] = {0}, b[PROTO_TOKEN_MAX + 1] = {0};
    size_t la = strnlen(given, PROTO_TOKEN_MAX), lb = strnlen(expected, PROTO_TOKEN_MAX);
    memcpy(a, given, la);
    memcpy(b, expected, lb);
    volatile unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < sizeof a; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
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
    if (m->joined && m->role != PROTO_ROLE_VIEWER)
        lr->roster_changed = 1;
}

static void detach(struct lobby *l, struct lobby_member *m, int kicked)
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
    if (m->joined && m->role != PROTO_ROLE_VIEWER)
        lr->roster_changed = 1;
    if (m->team > 0) {
        struct lobby_team *t = &lr->teams[m->team];
        if (kicked || l->cfg.grace <= 0) {
            team_end(lr, m->team);
        } else {
            t->state = TEAM_WAITING;
            t->player = NULL;
            t->grace_end_ns = clock_mono_ns() + (int64_t)(l->cfg.grace * 1e9);
        }
    }
    if (!lr->members)
        lr->empty_since_ns = clock_mono_ns();
    m->room = NULL;
    m->team = -1;
    m->prev = m->next = NULL;
}

void lobby_enter(struct lobby *l, struct lobby_member *m)
{
    m->role = m->loopback && !lobby_has_admin_token(l) ? PROTO_ROLE_ADMIN : PROTO_ROLE_PLAYER;
    m->team = -1;
    m->joined = 0;
    m->owner = l->next_owner++;
    m->name[0] = '\0';
    attach(l->rooms[0], m);
}

void lobby_leave(struct lobby *l, struct lobby_member *m, int kicked)
{
    detach(l, m, kicked);
}

/* May this connection take this role at all? */
static int role_check(struct lobby *l, const struct lobby_member *m,
                      const struct proto_join_args *a, const char **why)
{
    if (a->role != PROTO_ROLE_ADMIN)
        return 0;
    if (lobby_has_admin_token(l)) {
        if (a->has_token && secret_equal(a->token, l->cfg.admin_token))
            return 0;
        *why = "join: wrong or missing admin token";
    } else {
        if (m->loopback)
            return 0;
        *why = "join: this server has no admin token; only local clients may be admins";
    }
    atomic_fetch_add_explicit(&g_metrics.admin_denied, 1, memory_order_relaxed);
    return PROTO_E_FORBIDDEN;
}

/* The room to join: found, or created when allowed; NULL with a code. */
static struct lobby_room *room_for(struct lobby *l, const struct proto_join_args *a, int *code,
                                   const char **why)
{
    struct lobby_room *lr = room_find(l, a->room);
    if (lr) {
        if (a->mode != PROTO_MODE_ANY && a->mode != lr->mode) {
            *code = PROTO_E_BAD_ROOM;
            *why = lr->mode == PROTO_MODE_RTS ? "join: that room is an rts room"
                                              : "join: that room is a sandbox room";
            return NULL;
        }
        return lr;
    }
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
    lr = room_open(l, a->room, mode, boids, a->has_password ? a->password : NULL, &err);
    if (!lr) {
        *code = PROTO_E_INTERNAL;
        *why = err;
        return NULL;
    }
    atomic_fetch_add_explicit(&g_metrics.rooms_created, 1, memory_order_relaxed);
    return lr;
}

/* The team an RTS player m gets: the one its rejoin token names if that
 * team waits for its player (or is m's own), else the lowest free one; 0 if
 * none is free. */
static int team_for(const struct lobby *l, const struct lobby_room *lr,
                    const struct lobby_member *m, const struct proto_join_args *a, int *reclaim)
{
    *reclaim = 0;
    if (a->has_rejoin && a->rejoin[0])
        for (uint32_t t = 1; t <= l->cfg.max_teams; t++) {
            const struct lobby_team *team = &lr->teams[t];
            int open =
                team->state == TEAM_WAITING || (team->state == TEAM_PLAYING && team->player == m);
            if (open && secret_equal(a->rejoin, team->rejoin)) {
                *reclaim = 1;
                return (int)t;
            }
        }
    for (uint32_t t = 1; t <= l->cfg.max_teams; t++)
        if (lr->teams[t].state == TEAM_FREE)
            return (int)t;
    return 0;
}

int lobby_join(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
               const char **why)
{
    const struct proto_join_args *a = &cmd->args.join;
    int code = role_check(l, m, a, why);
    if (code)
        return code;
    struct lobby_room *lr = room_for(l, a, &code, why);
    if (!lr)
        return code;
    if (a->role == PROTO_ROLE_PLAYER && lr->password[0] &&
        !(a->has_password && secret_equal(a->password, lr->password))) {
        *why = "join: this room needs the right password for players";
        return PROTO_E_FORBIDDEN;
    }
    int team = -1, reclaim = 0;
    if (a->role == PROTO_ROLE_PLAYER && lr->mode == PROTO_MODE_RTS) {
        team = team_for(l, lr, m, a, &reclaim);
        if (!team) {
            metrics_limit(LIMIT_TEAMS);
            *why = "join: every team of this room is taken";
            return PROTO_E_BAD_ROOM;
        }
        if (reclaim && lr->teams[team].player == m)
            m->team = -1; /* taking its own team again: leaving must not end it */
    }
    detach(l, m, 0);
    m->role = a->role;
    m->team = team;
    m->joined = 1;
    snprintf(m->name, sizeof m->name, "%s", a->has_name ? a->name : "");
    m->owner = l->next_owner++;
    struct proto_command ack = *cmd; /* carries the new rejoin token to the room */
    if (team > 0) {
        struct lobby_team *t = &lr->teams[team];
        if (!reclaim)
            *t = (struct lobby_team){.owner = m->owner};
        t->state = TEAM_PLAYING;
        t->player = m;
        m->owner = t->owner;
        snprintf(t->name, sizeof t->name, "%s", m->name);
        new_token(t->rejoin);
        snprintf(ack.args.join.rejoin, sizeof ack.args.join.rejoin, "%s", t->rejoin);
        ack.args.join.has_rejoin = 1;
        if (!reclaim)
            team_spawn(l, lr, team);
    }
    attach(lr, m);
    struct room_actor who = lobby_actor(m);
    if (room_push(lr->room, &who, &ack) < 0) /* the join may use the reserve */
        metrics_reject("internal");
    return 0;
}

struct room_actor lobby_actor(const struct lobby_member *m)
{
    return (struct room_actor){
        .client = m->client, .role = m->role, .team = m->team, .owner = m->owner};
}

int lobby_allowed(const struct lobby_member *m, const struct proto_command *cmd, const char **why)
{
    if (m->role == PROTO_ROLE_ADMIN || cmd->kind == PROTO_CMD_PING || cmd->kind == PROTO_CMD_JOIN)
        return 0;
    if (m->role == PROTO_ROLE_VIEWER) {
        *why = "viewers may only watch; join as a player to steer";
        return PROTO_E_FORBIDDEN;
    }
    switch (cmd->kind) {
    case PROTO_CMD_SEEK:
    case PROTO_CMD_SEEK_CLEAR: {
        int group = cmd->kind == PROTO_CMD_SEEK ? cmd->args.seek.group : cmd->args.seek_clear.group;
        if (m->team > 0 && group != m->team) {
            *why = "players steer only their own team's group";
            return PROTO_E_FORBIDDEN;
        }
        return 0;
    }
    case PROTO_CMD_OBSTACLE_ADD:
    case PROTO_CMD_OBSTACLE_REMOVE:
        return 0; /* quota and ownership: the room checks */
    default:
        *why = "only admins may change the whole room";
        return PROTO_E_FORBIDDEN;
    }
}

/* ---- housekeeping ---------------------------------------------------------------- */

void lobby_housekeep(struct lobby *l)
{
    int64_t now = clock_mono_ns();
    for (size_t i = l->nrooms; i-- > 0;) {
        struct lobby_room *lr = l->rooms[i];
        int waiting = 0;
        for (uint32_t t = 1; t <= l->cfg.max_teams; t++) {
            if (lr->teams[t].state != TEAM_WAITING)
                continue;
            if (now >= lr->teams[t].grace_end_ns)
                team_end(lr, (int)t);
            else
                waiting = 1;
        }
        if (i > 0 && !lr->members && !waiting &&
            now - lr->empty_since_ns >= (int64_t)(l->cfg.room_expiry * 1e9)) {
            room_close(l, i);
            atomic_fetch_add_explicit(&g_metrics.rooms_expired, 1, memory_order_relaxed);
        }
    }
}

/* ---- messages -------------------------------------------------------------------- */

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
        return -1;
    for (const struct lobby_member *m = lr->members; m; m = m->next)
        if (m->joined && m->role != PROTO_ROLE_VIEWER)
            e[n++] = (struct proto_roster_entry){m->client, m->name, m->role, m->team, 1};
    for (int t = 1; t < SIM_GROUPS; t++)
        if (lr->teams[t].state == TEAM_WAITING)
            e[n++] = (struct proto_roster_entry){0, lr->teams[t].name, PROTO_ROLE_PLAYER, t, 0};
    qsort(e, n, sizeof *e, roster_order);
    size_t more = n > LOBBY_ROSTER_MAX ? n - LOBBY_ROSTER_MAX : 0;
    int len = proto_reply_roster(buf, cap, lr->name, lr->mode, lr->count[PROTO_ROLE_VIEWER], e,
                                 n - more, more);
    free(e);
    return len;
}

/* The rooms in the order /api/rooms lists them: default first, then by
 * name. Returns how many, or PROTO_E_NOSPACE past cap. */
static int rooms_in_order(const struct lobby *l, const struct lobby_room **order, size_t cap)
{
    if (l->nrooms > cap)
        return PROTO_E_NOSPACE;
    for (size_t i = 0; i < l->nrooms; i++) {
        size_t j = i;
        while (j > 1 && strcmp(order[j - 1]->name, l->rooms[i]->name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = l->rooms[i];
    }
    return (int)l->nrooms;
}

static void room_json(struct textbuf *t, const struct lobby_room *lr, bool first)
{
    struct room_info info;
    room_info(lr->room, &info);
    uint32_t teams = 0;
    for (int k = 1; k < SIM_GROUPS; k++)
        teams += lr->teams[k].state != TEAM_FREE;
    textbuf_printf(t,
                   "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":%u,\"admins\":%u,"
                   "\"viewers\":%u,\"boids\":%u,\"tick\":%llu,\"tick_hz\":%g,\"snapshot_hz\":%g,"
                   "\"password\":%s,\"teams\":%u,\"late_p99_ms\":%.3f}",
                   first ? "" : ",", lr->name, proto_mode_name(lr->mode),
                   lr->count[PROTO_ROLE_PLAYER], lr->count[PROTO_ROLE_ADMIN],
                   lr->count[PROTO_ROLE_VIEWER], info.boids, (unsigned long long)info.tick,
                   info.tick_hz, info.snapshot_hz, lr->password[0] ? "true" : "false", teams,
                   info.late_p99_ms);
}

int lobby_rooms_json(const struct lobby *l, char *buf, size_t cap)
{
    const struct lobby_room *order[1024]; /* max-rooms is at most 1024 */
    int n = rooms_in_order(l, order, sizeof order / sizeof order[0]);
    if (n < 0)
        return n;
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t, "{\"rooms\":[");
    for (int i = 0; i < n; i++)
        room_json(&t, order[i], i == 0);
    textbuf_printf(&t, "],\"max_rooms\":%u,\"create\":%s}\n", l->cfg.max_rooms,
                   l->cfg.allow_create && l->nrooms < l->cfg.max_rooms ? "true" : "false");
    return textbuf_finish(&t);
}
