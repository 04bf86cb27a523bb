/*
 * lobby_room.c — one room of the lobby: members, teams' units, roster
 * (see lobby_room.h).
 */
#define _DEFAULT_SOURCE /* M_PI */

#include "lobby_room.h"

#include "metrics.h"
#include "news.h"
#include "pool.h"
#include "room_persist.h"
#include "secret.h"

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
    uint32_t team_units;
    bool is_contained; /* its world contains its boids (edges "contain") */
    bool scripted;     /* it runs a script: its teams' units come from the script */
    float edge_margin; /* how near an edge contained boids turn back */
    /* Per service thread: the frame it last announced, its members, and
     * the same in an array (lobby_room_roll()), stale after a change. */
    struct frame *frame[LOBBY_THREADS_MAX];
    struct lobby_member *members[LOBBY_THREADS_MAX];
    struct lobby_member **roll[LOBBY_THREADS_MAX];
    size_t roll_len[LOBBY_THREADS_MAX], roll_cap[LOBBY_THREADS_MAX];
    bool is_roll_stale[LOBBY_THREADS_MAX];
    uint32_t count[3]; /* members by role, every thread's */
    int64_t empty_since_ns;
    _Atomic uint64_t roster_changed; /* news.h: a flag per service thread not yet told */
    struct teams teams;
};

/* ---- life ---------------------------------------------------------------------- */

/* Team slots as a checkpoint left them: every taken team now waits for
 * its player, a playing one for grace_ns from now. */
static void teams_restore(struct teams *ts, const struct ckpt *c, int64_t now, int64_t grace_ns)
{
    teams_init(ts, c->max_teams);
    for (uint32_t t = 1; t <= ts->max; t++) {
        const struct ckpt_team *k = &c->teams[t];
        if (k->state == CKPT_TEAM_FREE)
            continue;
        struct team *team = &ts->slot[t];
        *team = (struct team){.state = TEAM_WAITING, .owner = k->owner};
        snprintf(team->rejoin, sizeof team->rejoin, "%s", k->rejoin);
        snprintf(team->name, sizeof team->name, "%s", k->name);
        team->grace_end_ns = now + (k->state == CKPT_TEAM_PLAYING ? grace_ns : k->grace_left_ns);
    }
}

/* The room of lr as c says: created, restored from c->restore if given,
 * recording. NULL and *err on failure, with nothing left. */
static struct room *make_room(struct lobby_room *lr, const struct lobby_room_config *c, int64_t now,
                              const char **err)
{
    struct room_config rc = *c->tmpl;
    uint64_t most = (uint64_t)c->boids + (uint64_t)c->shape.max_teams * c->shape.team_units;
    rc.name = lr->name;
    rc.mode = c->mode;
    rc.boids = c->boids;
    rc.sim.width = c->shape.width;
    rc.sim.height = c->shape.height;
    rc.sim.edges = c->shape.edges;
    rc.max_teams = c->shape.max_teams;
    rc.team_units = c->shape.team_units;
    rc.script = c->script;
    if (c->mode != PROTO_MODE_RTS)
        most = c->boids;
    if (most > rc.sim.capacity) /* the lobby keeps it within what frames may hold */
        rc.sim.capacity = (uint32_t)most;
    if (c->restore && room_config_restoring(&rc, c->restore, err) < 0)
        return NULL;
    if (c->restore)
        rc.max_teams = c->restore->max_teams;
    struct room *room = room_create(&rc, err);
    if (room && c->restore && room_restore(room, c->restore, err) < 0) {
        room_destroy(room);
        room = NULL;
    }
    if (room) {
        struct ckpt id;
        struct room_info info;
        room_info(room, &info);
        lr->is_contained = !info.wrap;
        lr->edge_margin = rc.sim.edge_margin;
        lr->room = room;
        lr->scripted = c->script || (c->restore && c->restore->script[0]);
        lobby_room_identity(lr, now, &id);
        room_record_begin(room, &id,
                          !c->restore  ? RECLOG_FRESH
                          : c->resumed ? RECLOG_RESUMED
                                       : RECLOG_RESTORED);
    }
    return room;
}

struct lobby_room *lobby_room_open(const struct lobby_room_config *c, struct pool *pool,
                                   int64_t now, const char **err)
{
    struct lobby_room *lr = calloc(1, sizeof *lr);
    if (!lr) {
        *err = "out of memory";
        return NULL;
    }
    const struct ckpt *k = c->restore;
    snprintf(lr->name, sizeof lr->name, "%s", k ? k->room : c->name);
    lr->mode = k ? k->mode : c->mode;
    const char *password = k ? k->password : c->password;
    snprintf(lr->password, sizeof lr->password, "%s", password ? password : "");
    lr->team_units = c->shape.team_units;
    if (k)
        teams_restore(&lr->teams, k, now, c->grace_ns);
    else
        teams_init(&lr->teams, c->shape.max_teams);
    lr->empty_since_ns = now;
    lr->room = make_room(lr, c, now, err);
    if (!lr->room || room_schedule(lr->room, pool) < 0) {
        if (lr->room)
            *err = "the server runs its most rooms";
        room_destroy(lr->room);
        free(lr);
        return NULL;
    }
    room_limits(lr->room, c->max_message, &lr->limits);
    atomic_fetch_add_explicit(&g_metrics.rooms, 1, memory_order_relaxed);
    return lr;
}

void lobby_room_close(struct lobby_room *lr, struct pool *pool)
{
    room_unschedule(lr->room, pool);
    room_destroy(lr->room);
    for (unsigned t = 0; t < LOBBY_THREADS_MAX; t++) {
        frame_release(lr->frame[t]);
        free(lr->roll[t]);
    }
    free(lr);
    atomic_fetch_sub_explicit(&g_metrics.rooms, 1, memory_order_relaxed);
}

const char *lobby_room_name(const struct lobby_room *lr)
{
    return lr->name;
}

enum proto_mode lobby_room_mode(const struct lobby_room *lr)
{
    return lr->mode;
}

struct room *lobby_room_room(const struct lobby_room *lr)
{
    return lr->room;
}

const struct proto_limits *lobby_room_limits(const struct lobby_room *lr)
{
    return &lr->limits;
}

struct teams *lobby_room_teams(struct lobby_room *lr)
{
    return &lr->teams;
}

bool lobby_room_has_password(const struct lobby_room *lr)
{
    return lr->password[0] != '\0';
}

bool lobby_room_can_play(const struct lobby_room *lr, const char *password)
{
    return !lr->password[0] || (password && secret_matches(password, lr->password));
}

struct frame **lobby_room_frame(struct lobby_room *lr, unsigned thread)
{
    return &lr->frame[thread % LOBBY_THREADS_MAX];
}

/* ---- the room's own commands ------------------------------------------------------ */

static void push_internal(struct lobby_room *lr, const struct proto_command *cmd)
{
    struct room_actor server = {.client = 0, .role = PROTO_ROLE_ADMIN, .team = -1, .owner = 0};
    if (room_push(lr->room, &server, cmd) < 0)
        metrics_reject("internal");
}

static void clear_target(struct lobby_room *lr, int team)
{
    struct proto_command clear = {.kind = PROTO_CMD_SEEK_CLEAR};
    clear.args.seek_clear.group = team;
    push_internal(lr, &clear);
}

/* How far a base's centre is from the world's centre along an axis of
 * `size`: 0.35 of it, less where its units would come near a contained
 * world's edge. */
static double base_reach(const struct lobby_room *lr, double size, double spread)
{
    double inset = lr->is_contained ? spread + lr->edge_margin : 0.0;
    double reach = 0.5 * size - fmax(0.15 * size, inset);
    return reach > 0.0 ? reach : 0.0;
}

/* A new team's units at its base, on an ellipse around the world's centre
 * (lobby_room.h). */
void lobby_room_team_start(struct lobby_room *lr, int team)
{
    clear_target(lr, team);
    if (lr->team_units == 0 || lr->scripted) /* a script spawns at its match's start */
        return;
    uint32_t n = lr->teams.max > 0 ? lr->teams.max : 1;
    double a = 2.0 * M_PI * team / n;
    double w = lr->limits.width, h = lr->limits.height;
    double spread = fmin(TEAM_SPREAD, 0.1 * fmin(w, h));
    struct proto_command spawn = {.kind = PROTO_CMD_SPAWN};
    spawn.args.spawn = (struct proto_spawn_args){
        .n = lr->team_units,
        .group = team,
        .x = (float)(w / 2 + base_reach(lr, w, spread) * cos(a)),
        .y = (float)(h / 2 + base_reach(lr, h, spread) * sin(a)),
        .spread = (float)spread,
    };
    push_internal(lr, &spawn);
}

/* The team's units go, its group's parameters are the room's defaults
 * again and its group is free. */
static void team_end(struct lobby_room *lr, int team)
{
    struct proto_command despawn = {.kind = PROTO_CMD_DESPAWN};
    despawn.args.despawn = (struct proto_despawn_args){.n = UINT32_MAX, .group = team};
    push_internal(lr, &despawn);
    clear_target(lr, team);
    struct proto_command defaults = {.kind = PROTO_CMD_PARAMS};
    defaults.args.params = (struct proto_params_args){.group = team, .reset = 1};
    push_internal(lr, &defaults);
    teams_free(&lr->teams, team);
    news_post(&lr->roster_changed);
}

void lobby_room_end_expired_teams(struct lobby_room *lr, int64_t now)
{
    for (int t; (t = teams_expired(&lr->teams, now)) != 0;)
        team_end(lr, t);
}

void lobby_room_reload_script(struct lobby_room *lr)
{
    if (lr->scripted)
        push_internal(
            lr, &(struct proto_command){.kind = PROTO_CMD_SCRIPT, .args.script = {.reload = 1}});
}

/* A scripted room's script hears of m's arrival or leaving (in the log). */
static void tell_script(struct lobby_room *lr, const struct lobby_member *m, int event)
{
    if (!lr->scripted || !m->joined)
        return;
    struct proto_command c = {.kind = PROTO_CMD_GAME};
    c.args.game = (struct proto_game_args){
        .event = event, .role = (int)m->role, .team = m->team, .player = m->client};
    snprintf(c.args.game.text, sizeof c.args.game.text, "%s", m->name);
    push_internal(lr, &c);
}

static struct room_actor actor_of(const struct lobby_member *m)
{
    return (struct room_actor){.client = m->client,
                               .protocol = m->protocol,
                               .role = m->role,
                               .team = m->team,
                               .owner = m->owner};
}

int lobby_room_push(struct lobby_room *lr, const struct lobby_member *m,
                    const struct proto_command *cmd, int64_t now)
{
    struct room_actor who = actor_of(m);
    who.at_ns = now;
    return room_push(lr->room, &who, cmd) < 0 ? PROTO_E_QUEUE_FULL : 0;
}

int lobby_room_welcome(const struct lobby_room *lr, const struct lobby_member *m, char *buf,
                       size_t cap)
{
    struct room_actor who = actor_of(m);
    return room_welcome(lr->room, &who, buf, cap);
}

/* ---- members ----------------------------------------------------------------------- */

static bool is_empty(const struct lobby_room *lr)
{
    return lr->count[0] + lr->count[1] + lr->count[2] == 0;
}

/* Players and admins who joined are listed in the roster; viewers and
 * those who only connected are not. */
static bool is_listed(const struct lobby_member *m)
{
    return m->joined && m->role != PROTO_ROLE_VIEWER;
}

void lobby_room_attach(struct lobby_room *lr, struct lobby_member *m)
{
    struct lobby_member **head = &lr->members[m->thread % LOBBY_THREADS_MAX];
    m->room = lr;
    m->prev = NULL;
    m->next = *head;
    if (*head)
        (*head)->prev = m;
    *head = m;
    lr->is_roll_stale[m->thread % LOBBY_THREADS_MAX] = true;
    lr->count[m->role]++;
    if (is_listed(m))
        news_post(&lr->roster_changed);
    tell_script(lr, m, PROTO_GAME_JOIN);
}

void lobby_room_detach(struct lobby_member *m, bool end_team, int64_t grace_end_ns, int64_t now)
{
    struct lobby_room *lr = m->room;
    if (!lr)
        return;
    if (m->prev)
        m->prev->next = m->next;
    else
        lr->members[m->thread % LOBBY_THREADS_MAX] = m->next;
    if (m->next)
        m->next->prev = m->prev;
    lr->is_roll_stale[m->thread % LOBBY_THREADS_MAX] = true;
    lr->count[m->role]--;
    if (is_listed(m))
        news_post(&lr->roster_changed);
    tell_script(lr, m, PROTO_GAME_LEAVE);
    bool is_own_team = m->team > 0 && lr->teams.slot[m->team].player == m;
    if (is_own_team && end_team)
        team_end(lr, m->team);
    else if (is_own_team)
        teams_wait(&lr->teams, m->team, grace_end_ns);
    if (is_empty(lr))
        lr->empty_since_ns = now;
    m->room = NULL;
    m->team = -1;
    m->prev = m->next = NULL;
}

struct lobby_member *lobby_room_members(const struct lobby_room *lr, unsigned thread)
{
    return lr->members[thread % LOBBY_THREADS_MAX];
}

struct lobby_member *const *lobby_room_roll(struct lobby_room *lr, unsigned thread, size_t *n)
{
    unsigned t = thread % LOBBY_THREADS_MAX;
    if (lr->is_roll_stale[t]) {
        size_t len = 0;
        for (const struct lobby_member *m = lr->members[t]; m; m = m->next)
            len++;
        if (len > lr->roll_cap[t]) {
            size_t cap = len + len / 2 + 16;
            struct lobby_member **grown = realloc(lr->roll[t], cap * sizeof *grown);
            if (!grown) {
                *n = 0;
                return NULL;
            }
            lr->roll[t] = grown;
            lr->roll_cap[t] = cap;
        }
        len = 0;
        for (struct lobby_member *m = lr->members[t]; m; m = m->next)
            lr->roll[t][len++] = m;
        lr->roll_len[t] = len;
        lr->is_roll_stale[t] = false;
    }
    *n = lr->roll_len[t];
    return lr->roll[t];
}

struct lobby_member *lobby_room_find(const struct lobby_room *lr, uint64_t client)
{
    for (unsigned t = 0; t < LOBBY_THREADS_MAX; t++)
        for (struct lobby_member *m = lr->members[t]; m; m = m->next)
            if (m->client == client)
                return m;
    return NULL;
}

struct lobby_member *lobby_room_player_of(const struct lobby_room *lr, int team)
{
    if (team < 1 || (uint32_t)team > lr->teams.max || lr->teams.slot[team].state != TEAM_PLAYING)
        return NULL;
    for (unsigned t = 0; t < LOBBY_THREADS_MAX; t++)
        for (struct lobby_member *m = lr->members[t]; m; m = m->next)
            if (m == lr->teams.slot[team].player)
                return m;
    return NULL;
}

bool lobby_room_is_expired(const struct lobby_room *lr, int64_t now, int64_t expiry_ns)
{
    return is_empty(lr) && !teams_is_any_waiting(&lr->teams) &&
           now - lr->empty_since_ns >= expiry_ns;
}

/* ---- checkpoints ------------------------------------------------------------------- */

void lobby_room_identity(const struct lobby_room *lr, int64_t now, struct ckpt *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->room, sizeof id->room, "%s", lr->name);
    id->mode = lr->mode;
    snprintf(id->password, sizeof id->password, "%s", lr->password);
    id->max_teams = lr->teams.max;
    for (uint32_t t = 1; t <= lr->teams.max; t++) {
        const struct team *team = &lr->teams.slot[t];
        struct ckpt_team *k = &id->teams[t];
        if (team->state == TEAM_FREE)
            continue;
        k->state = team->state == TEAM_PLAYING ? CKPT_TEAM_PLAYING : CKPT_TEAM_WAITING;
        k->owner = team->owner;
        snprintf(k->rejoin, sizeof k->rejoin, "%s", team->rejoin);
        snprintf(k->name, sizeof k->name, "%s", team->name);
        if (team->state == TEAM_WAITING)
            k->grace_left_ns = team->grace_end_ns > now ? team->grace_end_ns - now : 0;
    }
}

void lobby_room_checkpoint(struct lobby_room *lr, int64_t now, bool now_stopped)
{
    struct ckpt id;
    lobby_room_identity(lr, now, &id);
    if (now_stopped)
        room_checkpoint_now(lr->room, &id);
    else if (room_checkpoint(lr->room, &id) < 0)
        metrics_reject("internal");
}

/* ---- what it shows ------------------------------------------------------------------- */

bool lobby_room_take_roster_change(struct lobby_room *lr, unsigned thread)
{
    return news_take(&lr->roster_changed, thread);
}

static int roster_order(const void *pa, const void *pb)
{
    const struct proto_roster_entry *a = pa, *b = pb;
    if (a->team != b->team)
        return a->team < b->team ? -1 : 1;
    return (a->client > b->client) - (a->client < b->client);
}

int lobby_room_roster(const struct lobby_room *lr, char *buf, size_t cap)
{
    size_t n = 0,
           max = (size_t)lr->count[PROTO_ROLE_PLAYER] + lr->count[PROTO_ROLE_ADMIN] + SIM_GROUPS;
    struct proto_roster_entry *e = malloc(max * sizeof *e);
    if (!e)
        return PROTO_E_INTERNAL;
    for (unsigned t = 0; t < LOBBY_THREADS_MAX; t++)
        for (const struct lobby_member *m = lr->members[t]; m; m = m->next)
            if (is_listed(m))
                e[n++] = (struct proto_roster_entry){m->client, m->name, m->role, m->team, 1};
    for (int t = 1; t < SIM_GROUPS; t++) {
        const struct team *team = &lr->teams.slot[t];
        if (team->state == TEAM_WAITING)
            e[n++] = (struct proto_roster_entry){0, team->name, PROTO_ROLE_PLAYER, t, 0};
    }
    qsort(e, n, sizeof *e, roster_order);
    size_t more = n > LOBBY_ROOM_ROSTER_MAX ? n - LOBBY_ROOM_ROSTER_MAX : 0;
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
        .max_teams = lr->mode == PROTO_MODE_RTS ? lr->teams.max : 0,
        .team_units = lr->mode == PROTO_MODE_RTS ? lr->team_units : 0,
        .has_password = lr->password[0] != '\0',
    };
}
