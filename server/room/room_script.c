/*
 * room_script.c — a room's script (script.h, PROTOCOL.md §14) as the room
 * runs it: made with the room (or restored from its checkpoint), its tick
 * hook before each step, its players' joins and leaves and custom
 * commands in their turn, a reload at the moment the script allows, and
 * the board of what it published: the room-wide state, each team's, and
 * its status for admins, which the service threads send (news.h) as
 * `game` and `script` messages.
 */
#include "room_internal.h"

#include "room_board.h"

#include "metrics.h"
#include "proto_json.h"
#include "script.h"
#include "script_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAME_TEXT_MAX (SCRIPT_PUBLISH_MAX + 128)

/* The board's slots: the room-wide state, team t's at t, the status. */
#define SLOT_ROOM   0u
#define SLOT_STATUS SIM_GROUPS

struct room_script {
    /* The room thread's own. */
    struct script *s;
    struct script_source pending; /* a new version waiting for its moment; text NULL: none */
    bool was_running;
    size_t memory_told; /* bytes told to the metrics */
    struct room_board board;
    /* Under the board's lock: what the welcome and metrics show. */
    char name[SCRIPT_NAME_MAX + 1];
    uint64_t hash;
    struct script_stats stats;
};

/* The script's publish hook: a `game` message for everyone or a team. */
static void published(void *arg, int team, const char *json, size_t len)
{
    struct room *r = arg;
    struct room_script *rs = r->script;
    static _Thread_local char buf[GAME_TEXT_MAX];
    struct sim_view v;
    sim_view(r->world, &v);
    int head = team > 0 ? snprintf(buf, sizeof buf,
                                   "{\"type\":\"game\",\"tick\":%llu,\"team\":%d,"
                                   "\"state\":",
                                   (unsigned long long)v.tick, team)
                        : snprintf(buf, sizeof buf, "{\"type\":\"game\",\"tick\":%llu,\"state\":",
                                   (unsigned long long)v.tick);
    if (head < 0 || (size_t)head + len + 2 > sizeof buf)
        return;
    memcpy(buf + head, json, len);
    buf[head + len] = '}';
    room_board_put(&rs->board, team > 0 ? (unsigned)team : SLOT_ROOM, buf, (size_t)head + len + 1);
}

/* The `script` message admins get: the script's name, hash and status. */
static void post_status(struct room *r, const char *status, const char *reason)
{
    struct room_script *rs = r->script;
    if (strcmp(status, "disabled") == 0)
        metrics_script_error();
    char buf[1024], hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)rs->hash);
    struct proto_json_writer w;
    proto_json_init(&w, buf, sizeof buf);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "script");
    proto_json_member_str(&w, "room", r->name);
    proto_json_member_str(&w, "name", rs->name);
    proto_json_member_str(&w, "hash", hash);
    proto_json_member_str(&w, "status", status);
    if (reason && reason[0])
        proto_json_member_str(&w, "reason", reason);
    proto_json_close(&w, '}');
    int len = proto_json_finish(&w);
    if (len > 0)
        room_board_put(&rs->board, SLOT_STATUS, buf, (size_t)len);
}

static struct script *make(struct room *r, const struct script_source *src, const uint8_t *saved,
                           size_t len, char *why)
{
    struct script_env env = {.world = r->world,
                             .seed = r->cfg.sim.seed,
                             .tick_hz = r->cfg.tick_hz,
                             .max_teams = r->cfg.mode == PROTO_MODE_RTS ? (int)r->cfg.max_teams : 0,
                             .room = r->name,
                             .publish = published,
                             .arg = r};
    return script_create(src, &env, &r->cfg.script_limits, saved, len, why);
}

/* s becomes the room's script. */
static void install(struct room *r, struct script *s)
{
    struct room_script *rs = r->script;
    script_destroy(rs->s);
    rs->s = s;
    rs->was_running = true;
    pthread_mutex_lock(&rs->board.lock);
    snprintf(rs->name, sizeof rs->name, "%s", script_source(s)->name);
    rs->hash = script_source(s)->hash;
    pthread_mutex_unlock(&rs->board.lock);
}

int room__script_create(struct room *r, const struct script_source *src, const uint8_t *saved,
                        size_t len, char *why)
{
    if (!r->script) {
        r->script = calloc(1, sizeof *r->script);
        if (!r->script) {
            snprintf(why, SCRIPT_REASON_MAX, "out of memory");
            return PROTO_E_INTERNAL;
        }
        room_board_init(&r->script->board);
    }
    struct script *s = make(r, src, saved, len, why);
    if (!s)
        return PROTO_E_BAD_ARG;
    install(r, s);
    if (!saved)
        script_start(s);
    post_status(r, "running", NULL);
    return 0;
}

void room__script_destroy(struct room *r)
{
    struct room_script *rs = r->script;
    if (!rs)
        return;
    if (rs->s)
        script_end(rs->s);
    script_destroy(rs->s);
    metrics_script_memory(-(int64_t)rs->memory_told);
    script_source_free(&rs->pending);
    room_board_free(&rs->board);
    free(rs);
    r->script = NULL;
}

/* The pending version replaces the script, its state carried over; one
 * that fails to load leaves the old one running. Logged (SCRIPT). */
static void swap(struct room *r)
{
    struct room_script *rs = r->script;
    uint8_t *saved = NULL;
    char why[SCRIPT_REASON_MAX] = "";
    int n = script_save(rs->s, &saved, why);
    struct script *s = n >= 0 ? make(r, &rs->pending, saved, (size_t)n, why) : NULL;
    free(saved);
    if (!s) {
        fprintf(stderr, "flockd: room %s: script %s not reloaded: %s\n", r->name, rs->pending.name,
                why);
        post_status(r, "running", why);
        script_source_free(&rs->pending);
        return;
    }
    script_end(rs->s);
    install(r, s);
    room__record_script(r);
    fprintf(stderr, "flockd: room %s: script %s reloaded (%016llx)\n", r->name, rs->name,
            (unsigned long long)rs->hash);
    post_status(r, "reloaded", NULL);
    script_source_free(&rs->pending);
}

void room__script_tick(struct room *r)
{
    struct room_script *rs = r->script;
    if (!rs || !rs->s)
        return;
    if (rs->pending.text && script_is_reloadable(rs->s))
        swap(r);
    script_tick(rs->s);
    char why[SCRIPT_REASON_MAX];
    bool running = script_is_running(rs->s, why, sizeof why);
    if (rs->was_running && !running)
        post_status(r, "disabled", why);
    rs->was_running = running;
    pthread_mutex_lock(&rs->board.lock);
    script_stats(rs->s, &rs->stats);
    pthread_mutex_unlock(&rs->board.lock);
    metrics_script_hook(rs->stats.last_ms);
    metrics_script_memory((int64_t)rs->stats.memory - (int64_t)rs->memory_told);
    rs->memory_told = rs->stats.memory;
}

bool room__script_is_on(const struct room *r)
{
    return r->script && r->script->s;
}

int room__script_game(struct room *r, const struct proto_command *c, char *why)
{
    const struct proto_game_args *g = &c->args.game;
    struct room_script *rs = r->script;
    if (!rs || !rs->s) {
        snprintf(why, PROTO_MESSAGE_MAX, "game: this room has no script");
        return PROTO_E_BAD_ARG;
    }
    struct script_player p = {.id = g->player, .role = g->role, .team = g->team, .name = g->text};
    int rc = 0;
    if (g->event == PROTO_GAME_COMMAND) {
        p.name = "";
        char reason[SCRIPT_REASON_MAX];
        rc = script_command(rs->s, &p, g->text, strlen(g->text), reason);
        if (rc < 0)
            snprintf(why, PROTO_MESSAGE_MAX, "game: %.150s", reason);
    } else {
        script_player_event(rs->s, g->event == PROTO_GAME_JOIN ? SCRIPT_JOIN : SCRIPT_LEAVE, &p);
    }
    char reason[SCRIPT_REASON_MAX];
    bool running = script_is_running(rs->s, reason, sizeof reason);
    if (rs->was_running && !running)
        post_status(r, "disabled", reason);
    rs->was_running = running;
    return rc;
}

int room__script_reload(struct room *r, char *why, const char **at)
{
    struct room_script *rs = r->script;
    if (!rs || !rs->s || !r->cfg.scripts) {
        snprintf(why, PROTO_MESSAGE_MAX, "script: this room has no script to reload");
        return PROTO_E_BAD_ARG;
    }
    struct script_source src = {0};
    if (!script_dir_get(r->cfg.scripts, rs->name, &src)) {
        snprintf(why, PROTO_MESSAGE_MAX, "script: %s is no longer in the scripts directory",
                 rs->name);
        return PROTO_E_NOT_FOUND;
    }
    char err[SCRIPT_REASON_MAX];
    script_dir_error(r->cfg.scripts, rs->name, err, sizeof err);
    if (err[0]) {
        snprintf(why, PROTO_MESSAGE_MAX, "script: %s does not load, the running one stays: %.80s",
                 rs->name, err);
        script_source_free(&src);
        return PROTO_E_BAD_ARG;
    }
    if (src.hash == rs->hash && !rs->pending.text) {
        *at = "unchanged";
        script_source_free(&src);
        return 0;
    }
    script_source_free(&rs->pending);
    rs->pending = src;
    *at = script_is_reloadable(rs->s) ? "now" : "next_match";
    return 0;
}

bool room_script_info(struct room *r, char name[SCRIPT_NAME_MAX + 1], uint64_t *hash,
                      struct script_stats *stats)
{
    struct room_script *rs = r->script;
    if (!rs)
        return false;
    pthread_mutex_lock(&rs->board.lock);
    snprintf(name, SCRIPT_NAME_MAX + 1, "%s", rs->name);
    *hash = rs->hash;
    if (stats)
        *stats = rs->stats;
    pthread_mutex_unlock(&rs->board.lock);
    return name[0] != '\0';
}

struct script *room__script(const struct room *r)
{
    return r->script ? r->script->s : NULL;
}

bool room_take_game_news(struct room *r, unsigned thread)
{
    return r->script && news_take(&r->script->board.news, thread);
}

/* Who a member is to the board: its team, whether an admin. */
struct game_member {
    int team;
    bool admin;
};

/* The room-wide state to all; a team's to its player and admins; the
 * status to admins. */
static bool is_for(unsigned slot, const void *arg)
{
    const struct game_member *m = arg;
    if (slot == SLOT_ROOM)
        return true;
    return m->admin || (slot != SLOT_STATUS && (int)slot == m->team);
}

uint64_t room_game_send(struct room *r, uint64_t since, int team, bool admin, room_text_fn *send,
                        void *ctx)
{
    struct game_member m = {team, admin};
    return r->script ? room_board_send(&r->script->board, since, is_for, &m, send, ctx) : since;
}
