/*
 * room_apply.c — a command's turn in a room, on its tick thread
 * (room__apply_command, room_internal.h).
 *
 * One row per command kind in a table: its handler, the rooms that take
 * it (live, or playing a recording) and what follows its ack. A handler
 * returns 0 or a negative wire code (PROTO_E_*) and fills `struct
 * outcome` with what the ack reports. Commands were validated by proto
 * against the room's limits and allowed for the sender's role by the
 * lobby; handlers check what only the live room knows (capacity, obstacle
 * ids and owners, quotas, team sizes), leave the world's part to the
 * applier (apply.h) and change nothing when they refuse.
 */
#include "room_internal.h"

#include "apply.h"
#include "metrics.h"
#include "replay.h"
#include "view.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct outcome {
    const struct room_actor *who; /* the sender */
    const char *room;             /* join: the room's name */
    int64_t obstacle;             /* obstacle_add: the new id */
    int64_t count;                /* spawn/despawn: boids added or removed; -1: none */
    int64_t until;                /* step: the tick the steps end at; -1: none */
    int squad;                    /* select, order, formation: the squad; -1: none */
    const char *message;          /* refusal text, if more specific than the code */
    const char *at;               /* script: when the new version runs */
    char hash[17];                /* ping: the tick's sim_hash, 16 hex digits; "": none */
    struct view_plan plan;        /* view: what the client's frames will hold */
    char text[PROTO_MESSAGE_MAX]; /* room for a message made up here */
};

typedef int (*apply_fn)(struct room *r, const struct proto_command *c, struct outcome *o);

/* The ack carries the hash of the state this tick's commands started
 * from: what a replay of the room's log reaches at that tick. */
static int apply_ping(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)c;
    snprintf(o->hash, sizeof o->hash, "%016" PRIx64, r->start_hash);
    return 0;
}

void room__hash_for_pings(struct room *r, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        const struct queued *q = &r->batch[k];
        if (!q->checkpoint && !q->refused && q->cmd.kind == PROTO_CMD_PING) {
            r->start_hash = sim_hash(r->world);
            return;
        }
    }
}

/* The world's part of c (apply.h), as a wire code. */
static int world_status(struct room *r, const struct proto_command *c)
{
    return room_status_from_sim((int)apply_command(r->world, r->cfg.mode, c));
}

/* seek, seek_clear, params: the world's part is all there is. */
static int apply_world(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)o;
    return world_status(r, c);
}

/* The owner record of obstacle id, or NULL. */
static struct obstacle_owner *owner_of(struct room *r, uint32_t id)
{
    for (uint32_t k = 0; k < r->nowners; k++)
        if (r->owners[k].id == id)
            return &r->owners[k];
    return NULL;
}

static uint32_t owned_by(const struct room *r, uint64_t owner)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->nowners; k++)
        n += r->owners[k].owner == owner;
    return n;
}

static int apply_obstacle_add(struct room *r, const struct proto_command *c, struct outcome *o)
{
    if (o->who->role != PROTO_ROLE_ADMIN && owned_by(r, o->who->owner) >= r->cfg.player_obstacles) {
        metrics_limit(LIMIT_PLAYER_OBSTACLES);
        o->message = "you hold your quota of obstacles; remove one first";
        return PROTO_E_CAPACITY;
    }
    int64_t id = apply_command(r->world, r->cfg.mode, c);
    if (id < 0) {
        if (id == SIM_ECAPACITY) {
            metrics_limit(LIMIT_ROOM_OBSTACLES);
            o->message = "the room holds its maximum number of obstacles";
        }
        return room_status_from_sim((int)id);
    }
    r->owners[r->nowners++] = (struct obstacle_owner){(uint32_t)id, o->who->owner};
    o->obstacle = id;
    return 0;
}

static int apply_obstacle_remove(struct room *r, const struct proto_command *c, struct outcome *o)
{
    struct obstacle_owner *rec = owner_of(r, c->args.obstacle_remove.id);
    if (!rec) {
        o->message = "no obstacle with that id";
        return PROTO_E_NOT_FOUND;
    }
    if (o->who->role != PROTO_ROLE_ADMIN && rec->owner != o->who->owner) {
        o->message = "that obstacle belongs to another player";
        return PROTO_E_FORBIDDEN;
    }
    int rc = world_status(r, c);
    if (rc == 0)
        *rec = r->owners[--r->nowners];
    return rc;
}

static int apply_obstacle_clear(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)o;
    int rc = world_status(r, c);
    if (rc == 0)
        r->nowners = 0;
    return rc;
}

/* Boids of one group now. */
static uint32_t group_size(const struct room *r, int group)
{
    struct sim_view v;
    sim_view(r->world, &v);
    uint32_t n = 0;
    for (uint32_t i = 0; i < v.count; i++)
        n += v.group[i] == group;
    return n;
}

static int apply_spawn(struct room *r, const struct proto_command *c, struct outcome *o)
{
    const struct proto_spawn_args *a = &c->args.spawn;
    if (r->cfg.mode == PROTO_MODE_RTS && a->group >= 1 && (uint32_t)a->group <= r->cfg.max_teams &&
        group_size(r, a->group) + (uint64_t)a->n > r->cfg.team_cap) {
        metrics_limit(LIMIT_TEAM_CAP);
        o->message = "a team may not have more boids than the room's team cap";
        return PROTO_E_CAPACITY;
    }
    int rc = (int)apply_command(r->world, r->cfg.mode, c);
    if (rc == SIM_ECAPACITY) {
        metrics_limit(LIMIT_ROOM_CAPACITY);
        o->message = "spawning that many would exceed the room's boid capacity";
    }
    if (rc >= 0)
        o->count = rc;
    return room_status_from_sim(rc);
}

static int apply_despawn(struct room *r, const struct proto_command *c, struct outcome *o)
{
    int rc = (int)apply_command(r->world, r->cfg.mode, c);
    if (rc >= 0)
        o->count = rc;
    return room_status_from_sim(rc);
}

static int apply_pause(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)c, (void)o;
    r->paused = 1;
    r->steps_pending = 0;
    return 0;
}

static int apply_resume(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)c, (void)o;
    r->paused = 0;
    r->steps_pending = 0;
    return 0;
}

/* step pauses the room and runs exactly n more ticks, one per tick period. */
static int apply_step(struct room *r, const struct proto_command *c, struct outcome *o)
{
    struct sim_view v;
    sim_view(r->world, &v);
    r->paused = 1;
    r->steps_pending = c->args.step.n;
    o->until = (int64_t)(v.tick + r->steps_pending);
    return 0;
}

/* c comes with the room's defaults resolved (as_applied). */
static int apply_reset(struct room *r, const struct proto_command *c, struct outcome *o)
{
    if (c->args.reset.boids > r->cfg.sim.capacity) {
        metrics_limit(LIMIT_ROOM_CAPACITY);
        return PROTO_E_CAPACITY;
    }
    int rc = world_status(r, c);
    if (rc == 0) {
        r->nowners = 0;
        o->count = c->args.reset.boids;
    }
    return rc;
}

/* select, the orders (move .. stop), formation: an rts player's own team,
 * or the one an admin names. */
static int apply_squads(struct room *r, const struct proto_command *c, struct outcome *o)
{
    const int *team = c->kind == PROTO_CMD_SELECT ? &c->args.select.team
                      : proto_cmd_order(c->kind)  ? &c->args.order.team
                                                  : &c->args.formation.team;
    if (*team < 0) {
        snprintf(o->text, sizeof o->text, "%s: name the team ('team')", proto_cmd_name(c->kind));
        o->message = o->text;
        return PROTO_E_BAD_ARG;
    }
    int64_t rc = apply_command(r->world, r->cfg.mode, c);
    if (rc == SIM_EOTHER || rc == SIM_EEMPTY) {
        snprintf(o->text, sizeof o->text,
                 rc == SIM_EOTHER ? "select: a unit of another team than %d"
                                  : "select: no unit of team %d in the selection",
                 *team);
        o->message = o->text;
        return rc == SIM_EOTHER ? PROTO_E_FORBIDDEN : PROTO_E_BAD_ARG;
    }
    if (rc == SIM_ENOENT && c->kind != PROTO_CMD_SELECT) {
        int squad = proto_cmd_order(c->kind) ? c->args.order.squad : c->args.formation.squad;
        snprintf(o->text, sizeof o->text, "%s: squad %d of team %d has no units%s",
                 proto_cmd_name(c->kind), squad, *team,
                 c->kind == PROTO_CMD_FOLLOW ? ", or what it would follow is gone" : "");
        o->message = o->text;
    } else if (rc == SIM_ENOENT) {
        o->message = "select: an id of no live boid";
    } else if (rc == SIM_ECAPACITY) {
        o->message = "select: every squad of the team has units; merge or empty one first";
    } else if (rc == SIM_ERANGE) {
        o->message = proto_cmd_order(c->kind)      ? "more waypoints than a squad holds (16)"
                     : c->kind == PROTO_CMD_SELECT ? "select: a rectangle outside the world"
                                                   : "formation: a spacing out of range";
    } else if (rc == SIM_EINVAL && c->kind == PROTO_CMD_FOLLOW) {
        o->message = "follow: a squad does not follow itself";
    }
    if (rc < 0)
        return room_status_from_sim((int)rc);
    int squad = c->kind == PROTO_CMD_SELECT ? (int)rc
                : proto_cmd_order(c->kind)  ? c->args.order.squad
                                            : c->args.formation.squad;
    o->squad = squad;
    const struct sim_squad *sq = sim_squad(r->world, *team, squad);
    if (c->kind == PROTO_CMD_SELECT)
        o->count = sq ? sq->units : 0;
    return 0;
}

/* A custom command for the room's script, or a player's arrival or
 * leaving that the lobby tells it: the script's turn. */
static int apply_game(struct room *r, const struct proto_command *c, struct outcome *o)
{
    int rc = room__script_game(r, c, o->text);
    if (rc < 0)
        o->message = o->text;
    return rc;
}

/* An admin's reload of the room's script (the scripts directory was read
 * again by the lobby): at once or at its next match. */
static int apply_script(struct room *r, const struct proto_command *c, struct outcome *o)
{
    if (!c->args.script.reload) {
        o->at = "unchanged";
        return 0;
    }
    int rc = room__script_reload(r, o->text, &o->at);
    if (rc < 0)
        o->message = o->text;
    return rc;
}

/* The lobby accepted the join; the room acks it (apply_command) and sends
 * its welcome right after, which starts the client's stream. */
static int apply_join(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)c;
    o->room = r->name;
    return 0;
}

/* The recording's playback jumps to the first point at the tick. */
static int apply_goto(struct room *r, const struct proto_command *c, struct outcome *o)
{
    uint64_t step = 0;
    if (replay_step_of_tick(r->cfg.replay, c->args.go.tick, &step) < 0) {
        o->message = "goto: the recording never reaches that tick";
        return PROTO_E_OUT_OF_RANGE;
    }
    if (replay_seek(r->cfg.replay, step) < 0) {
        o->message = "goto: the recording cannot be played to that tick";
        return PROTO_E_INTERNAL;
    }
    return 0;
}

/* The network side closed the client already; the ack reports it. */
static int apply_kick(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)r, (void)c, (void)o;
    return 0;
}

/* Counted here; its ack restarts the client's frames on a key frame
 * (ROOM_REPLY_KEYFRAME, deliver.h). */
static int apply_keyframe(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)r, (void)c, (void)o;
    atomic_fetch_add_explicit(&g_metrics.keyframes_requested, 1, memory_order_relaxed);
    return 0;
}

/* Nothing to change: its ack carries the figures (reply_stats). */
static int apply_stats(struct room *r, const struct proto_command *c, struct outcome *o)
{
    (void)r, (void)c, (void)o;
    return 0;
}

/* The rooms that take a command. */
enum rooms {
    LIVE = 1,      /* a room that simulates */
    RECORDING = 2, /* a room that plays a recording: only what does not change the world */
    EVERY = LIVE | RECORDING,
};

/* What each command is to the room, by kind. */
/* The audience whose tiles a member gets (room.h's room_audience()). */
static unsigned audience_of(const struct room *r, const struct room_actor *who)
{
    return room_audience(r, who) == ROOM_AUDIENCE_TEAM ? (unsigned)who->team : 0;
}

/* What a version 3 client's frames will hold from its view on (the
 * audience's newest tiles; an even spread of the boids before any). */
static int apply_view(struct room *r, const struct proto_command *c, struct outcome *o)
{
    if (o->who->protocol != PROTO_V3_VERSION) {
        snprintf(o->text, sizeof o->text, "view: this connection speaks version %u; views are %s's",
                 o->who->protocol ? o->who->protocol : 1u, PROTO_V3_SUBPROTOCOL);
        o->message = o->text;
        return PROTO_E_BAD_ARG;
    }
    /* A relay's: the owner's, as its frames brought them. */
    unsigned audience = audience_of(r, o->who);
    struct tilestate *s =
        room__is_relay(r) ? room__relay_tiles(r, audience) : snapenc_state(r->enc, audience);
    struct sim_view v;
    sim_view(r->world, &v);
    struct view_req req = {.args = c->args.view};
    view_plan(s, &r->grid, v.count, &req, r->info.view_budget, r->info.snapshot_hz, &o->plan);
    tiles_state_release(s);
    return 0;
}

static const struct handler {
    apply_fn fn;
    unsigned rooms;           /* enum rooms */
    bool moves_boids;         /* changes the boids as they are now, not only how they
                               * will steer: the flock's measures are out of date */
    bool new_values;          /* may change the parameters welcomes show */
    enum room_reply_kind ack; /* ROOM_REPLY_KEYFRAME: restarts the client's frames */
} handlers[PROTO_CMD_COUNT] = {
    [PROTO_CMD_PING] = {.fn = apply_ping, .rooms = EVERY},
    [PROTO_CMD_SEEK] = {.fn = apply_world, .rooms = LIVE},
    [PROTO_CMD_SEEK_CLEAR] = {.fn = apply_world, .rooms = LIVE},
    [PROTO_CMD_OBSTACLE_ADD] = {.fn = apply_obstacle_add, .rooms = LIVE},
    [PROTO_CMD_OBSTACLE_REMOVE] = {.fn = apply_obstacle_remove, .rooms = LIVE},
    [PROTO_CMD_OBSTACLE_CLEAR] = {.fn = apply_obstacle_clear, .rooms = LIVE},
    [PROTO_CMD_SPAWN] = {.fn = apply_spawn, .rooms = LIVE, .moves_boids = true},
    [PROTO_CMD_DESPAWN] = {.fn = apply_despawn, .rooms = LIVE, .moves_boids = true},
    [PROTO_CMD_PARAMS] = {.fn = apply_world, .rooms = LIVE, .new_values = true},
    [PROTO_CMD_PAUSE] = {.fn = apply_pause, .rooms = EVERY},
    [PROTO_CMD_RESUME] = {.fn = apply_resume, .rooms = EVERY},
    [PROTO_CMD_STEP] = {.fn = apply_step, .rooms = EVERY},
    [PROTO_CMD_RESET] = {.fn = apply_reset, .rooms = LIVE, .moves_boids = true, .new_values = true},
    [PROTO_CMD_JOIN] = {.fn = apply_join, .rooms = EVERY},
    [PROTO_CMD_KICK] = {.fn = apply_kick, .rooms = EVERY},
    [PROTO_CMD_KEYFRAME] = {.fn = apply_keyframe, .rooms = EVERY, .ack = ROOM_REPLY_KEYFRAME},
    [PROTO_CMD_GOTO] = {.fn = apply_goto, .rooms = RECORDING, .moves_boids = true},
    [PROTO_CMD_STATS] = {.fn = apply_stats, .rooms = EVERY},
    [PROTO_CMD_VIEW] = {.fn = apply_view, .rooms = EVERY, .ack = ROOM_REPLY_VIEW},
    [PROTO_CMD_SELECT] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_MOVE] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_PATROL] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_FOLLOW] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_HOLD] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_STOP] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_FORMATION] = {.fn = apply_squads, .rooms = LIVE},
    [PROTO_CMD_GAME] = {.fn = apply_game, .rooms = LIVE},
    [PROTO_CMD_SCRIPT] = {.fn = apply_script, .rooms = LIVE},
};

/* 0 if r (live, or playing a recording) takes a command of this kind;
 * else PROTO_E_FORBIDDEN with the message in o. */
static int taken_here(const struct room *r, enum proto_cmd kind, struct outcome *o)
{
    if (handlers[kind].rooms & (r->cfg.replay ? RECORDING : LIVE))
        return 0;
    if (r->cfg.replay) {
        o->message = "this room plays a recording: it takes pause, resume, step and goto";
    } else {
        snprintf(o->text, sizeof o->text, "%s: this room is live, not a recording",
                 proto_cmd_name(kind));
        o->message = o->text;
    }
    return PROTO_E_FORBIDDEN;
}

static size_t reply_error(char *buf, size_t cap, const char *id, int code, const char *message)
{
    int len = proto_reply_error(buf, cap, id, code, message);
    return len > 0 ? (size_t)len : 0;
}

/* The ack with the fields the outcome carries. */
static size_t reply_ack(char *buf, size_t cap, const struct proto_command *c, uint64_t tick,
                        const struct outcome *o)
{
    struct proto_ack_field extra[8];
    size_t n = 0;
    if (o->hash[0])
        extra[n++] = (struct proto_ack_field){"hash", 0, o->hash};
    if (c->kind == PROTO_CMD_OBSTACLE_ADD)
        extra[n++] = (struct proto_ack_field){"obstacle", o->obstacle, NULL};
    if (o->squad >= 0)
        extra[n++] = (struct proto_ack_field){"squad", o->squad, NULL};
    if (o->count >= 0)
        extra[n++] = (struct proto_ack_field){c->kind == PROTO_CMD_SELECT ? "units" : "count",
                                              o->count, NULL};
    if (o->until >= 0)
        extra[n++] = (struct proto_ack_field){"until", o->until, NULL};
    if (o->at)
        extra[n++] = (struct proto_ack_field){"at", 0, o->at};
    if (c->kind == PROTO_CMD_JOIN) {
        const struct room_actor *who = o->who;
        extra[n++] = (struct proto_ack_field){"room", 0, o->room};
        extra[n++] = (struct proto_ack_field){"role", 0, proto_role_name(who->role)};
        extra[n++] = (struct proto_ack_field){"client", (int64_t)who->client, NULL};
        if (who->team >= 0) {
            extra[n++] = (struct proto_ack_field){"team", who->team, NULL};
            if (c->args.join.has_rejoin)
                extra[n++] = (struct proto_ack_field){"rejoin", 0, c->args.join.rejoin};
        }
    }
    int len = proto_reply_ack(buf, cap, c->id, tick, extra, n);
    return len > 0 ? (size_t)len : 0;
}

/* The ack of stats: the room's figures and the flock's last measure. */
static size_t reply_stats(struct room *r, char *buf, size_t cap, const char *id, uint64_t tick)
{
    struct room_info info;
    room_info(r, &info);
    struct proto_flock flock;
    if (info.has_flock)
        room_flock(&info, &flock);
    /* The world as the commands before left it, not as the last snapshot
     * showed it: a pause or spawn just before counts. */
    struct sim_view v;
    sim_view(r->world, &v);
    struct proto_stats st = {.boids = v.count,
                             .paused = r->paused != 0,
                             .tick_ms_mean = info.tick_ms_mean,
                             .tick_ms_p99 = info.tick_ms_p99,
                             .late_ms_p99 = info.late_p99_ms,
                             .dilation = info.dilation,
                             .snapshot_hz = info.snapshot_hz_now,
                             .flock = info.has_flock ? &flock : NULL};
    int len = proto_reply_stats(buf, cap, id, tick, &st);
    return len > 0 ? (size_t)len : 0;
}

/* q's command as the world takes it and the log records it: a reset
 * with the room's seed and boid count for what it left out, a params reset
 * as the values it sets, so that a log stands alone (apply.h). */
static void as_applied(const struct room *r, const struct queued *q, struct proto_command *out)
{
    *out = q->cmd;
    int *team = out->kind == PROTO_CMD_SELECT      ? &out->args.select.team
                : proto_cmd_order(out->kind)       ? &out->args.order.team
                : out->kind == PROTO_CMD_FORMATION ? &out->args.formation.team
                                                   : NULL;
    if (team && *team < 0) /* a player's own team (an admin names one) */
        *team = q->who.team;
    if (out->kind == PROTO_CMD_PARAMS)
        apply_resolve_params(r->cfg.mode, &out->args.params);
    if (out->kind == PROTO_CMD_GAME && out->args.game.event == PROTO_GAME_COMMAND) {
        out->args.game.player = q->who.client; /* who sent it, as the room knows them */
        out->args.game.role = (int)q->who.role;
        out->args.game.team = q->who.team;
    }
    if (out->kind != PROTO_CMD_RESET)
        return;
    struct proto_reset_args *a = &out->args.reset;
    a->seed = a->has_seed ? a->seed : r->cfg.sim.seed;
    a->boids = a->has_boids ? a->boids : r->cfg.boids;
    a->has_seed = a->has_boids = 1;
}

/* A refusal found while parsing, answered in its turn. */
static void answer_refusal(struct room *r, const struct queued *q)
{
    char text[PROTO_REPLY_BYTES];
    size_t len = reply_error(text, sizeof text, q->cmd.id, q->refused, q->message);
    if (len)
        room__add_reply(r, &q->who, ROOM_REPLY_PLAIN, text, len);
}

/* The ack of view: the plan of the client's frames. */
static size_t reply_view(char *buf, size_t cap, const char *id, uint64_t tick,
                         const struct view_plan *p)
{
    struct proto_view_ack a = {.shift = p->shift,
                               .sample = p->sample,
                               .rect = {p->rect_x, p->rect_y, p->rect_cols, p->rect_rows},
                               .boids = p->boids,
                               .bytes = p->bytes,
                               .rate = p->rate};
    int len = proto_reply_view(buf, cap, id, tick, &a);
    return len > 0 ? (size_t)len : 0;
}

/* The ack of c applied at `tick` (rc 0), or its error; counted. */
static void answer(struct room *r, const struct queued *q, const struct proto_command *c, int rc,
                   uint64_t tick, const struct outcome *o)
{
    char text[PROTO_REPLY_BYTES];
    size_t len;
    if (rc == 0) {
        atomic_fetch_add_explicit(&g_metrics.commands_accepted, 1, memory_order_relaxed);
        len = c->kind == PROTO_CMD_STATS  ? reply_stats(r, text, sizeof text, c->id, tick)
              : c->kind == PROTO_CMD_VIEW ? reply_view(text, sizeof text, c->id, tick, &o->plan)
                                          : reply_ack(text, sizeof text, c, tick, o);
    } else {
        metrics_reject(proto_status_name(rc));
        len = reply_error(text, sizeof text, c->id, rc,
                          o->message ? o->message : "refused by the room");
    }
    if (len && rc == 0 && c->kind == PROTO_CMD_VIEW)
        room__add_view_reply(r, &q->who, text, len, &c->args.view);
    else if (len)
        room__add_reply(r, &q->who, rc == 0 ? handlers[c->kind].ack : ROOM_REPLY_PLAIN, text, len);
}

bool room__apply_command(struct room *r, const struct queued *q, struct room_applied *out)
{
    if (q->refused) {
        answer_refusal(r, q);
        return false;
    }
    struct outcome o = {.who = &q->who,
                        .room = NULL,
                        .obstacle = 0,
                        .count = -1,
                        .until = -1,
                        .squad = -1,
                        .message = NULL,
                        .at = NULL,
                        .hash = "",
                        .text = ""};
    struct sim_view v;
    sim_view(r->world, &v);
    out->tick = v.tick;      /* the tick the command takes effect at */
    if (room__is_relay(r)) { /* a join or a view: at the owner's latest tick seen here */
        struct frame *f = room_latest(r);
        out->tick = f ? f->tick : out->tick;
        frame_release(f);
    }
    as_applied(r, q, &out->cmd);
    const struct proto_command *c = &out->cmd;
    int rc = (unsigned)c->kind < PROTO_CMD_COUNT ? taken_here(r, c->kind, &o) : PROTO_E_INTERNAL;
    struct room_origin seen;
    if (rc == 0 && reclog_is_recorded(c->kind) && room__origin_find(r, q->who.origin, &seen)) {
        o.obstacle = seen.obstacle; /* sent again: acked as it was, applied once */
        answer(r, q, c, 0, seen.tick, &o);
        return false;
    }
    if (rc == 0)
        rc = handlers[c->kind].fn(r, c, &o);
    answer(r, q, c, rc, out->tick, &o);
    if (rc == PROTO_E_REFUSED && c->kind == PROTO_CMD_GAME)
        return true; /* the script ran it and said no: logged, its replay runs it too */
    if (rc != 0)
        return false;
    const struct handler *h = &handlers[c->kind];
    if (h->moves_boids)
        r->unmeasured = true;
    if (h->new_values)
        room__refresh_welcome(r); /* later welcomes show the new values at once */
    if (c->kind == PROTO_CMD_JOIN)
        room__send_welcome(r, &q->who);
    out->obstacle = (uint32_t)o.obstacle;
    return true;
}
