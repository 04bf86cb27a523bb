/*
 * room_squads.c — each team's `squads` message (PROTOCOL.md §13.5): the
 * room thread writes it after a step that changed the team's squads (or,
 * while one of them moves, at most 4 times a second) onto the room's
 * board; the service threads, told by news, send each of their members
 * what is new for them: its own team's, or every team's to an admin.
 *
 * The board is allocated at the first change of a squad (a room that has
 * none costs a pointer); its lock covers the texts and versions.
 */
#include "room_internal.h"

#include "room_board.h"

#include "proto_json.h"

#include <stdlib.h>
#include <string.h>

#define SQUADS_TEXT_MAX (64 * 1024) /* 32 squads of 16 waypoints fit in a quarter of it */
#define MOVING_EVERY_NS 250000000   /* a moving team's message at most this often */

struct room_squads {
    struct room_board board; /* slot g: team g's message */
    /* The room thread's own. */
    uint32_t seen[SIM_GROUPS];      /* sim_squad_news() at the last text */
    int64_t written[SIM_GROUPS];    /* when */
    uint64_t ever[SIM_GROUPS / 64]; /* groups that had a text */
};

/* The board, once the room thread made it (it is never replaced). */
static struct room_squads *board_of(struct room *r)
{
    return atomic_load_explicit(&r->squads, memory_order_acquire);
}

void room__squads_destroy(struct room *r)
{
    struct room_squads *b = board_of(r);
    if (!b)
        return;
    room_board_free(&b->board);
    free(b);
    atomic_store_explicit(&r->squads, NULL, memory_order_relaxed);
}

static bool is_moving(const struct sim_squad *s)
{
    return s->order == SIM_ORDER_MOVE || s->order == SIM_ORDER_PATROL ||
           s->order == SIM_ORDER_FOLLOW;
}

static void point(struct proto_json_writer *w, float x, float y)
{
    proto_json_open(w, '[');
    proto_json_float(w, x);
    proto_json_float(w, y);
    proto_json_close(w, ']');
}

/* One squad of the message. */
static void squad_json(struct proto_json_writer *w, int k, const struct sim_squad *s)
{
    proto_json_open(w, '{');
    proto_json_member_i64(w, "squad", k);
    proto_json_member_u64(w, "units", s->units);
    proto_json_member_str(w, "do", s->order ? proto_order_name(s->order) : "none");
    proto_json_key(w, "to");
    proto_json_open(w, '[');
    for (uint32_t j = 0; j < s->nway; j++) { /* the next first; a patrol's whole round */
        uint32_t at = s->order == SIM_ORDER_PATROL ? (s->next + j) % s->nway : s->next + j;
        if (at < s->nway)
            point(w, s->way[at][0], s->way[at][1]);
    }
    proto_json_close(w, ']');
    if (s->order == SIM_ORDER_FOLLOW && s->follow_squad)
        proto_json_member_i64(w, "squad_of", s->follow_squad);
    if (s->order == SIM_ORDER_FOLLOW && s->follow_unit)
        proto_json_member_u64(w, "unit", s->follow_unit);
    proto_json_member_str(w, "formation", proto_shape_name(s->shape));
    proto_json_member_float(w, "spacing", s->spacing);
    proto_json_key(w, "anchor");
    point(w, s->ax, s->ay);
    proto_json_member_float(w, "facing", s->facing);
    proto_json_close(w, '}');
}

/* The team's message; its length, or 0 if it does not fit. */
static size_t compose(const struct room *r, int team, uint64_t tick, char *buf, size_t cap)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "squads");
    proto_json_member_u64(&w, "tick", tick);
    proto_json_member_i64(&w, "team", team);
    proto_json_key(&w, "squads");
    proto_json_open(&w, '[');
    for (int k = 1; k <= SIM_SQUADS; k++) {
        const struct sim_squad *s = sim_squad(r->world, team, k);
        if (s && s->units)
            squad_json(&w, k, s);
    }
    proto_json_close(&w, ']');
    proto_json_close(&w, '}');
    int len = proto_json_finish(&w);
    return len > 0 ? (size_t)len : 0;
}

/* Whether the team's message is due: its squads changed, or one moves
 * and the last is MOVING_EVERY_NS old. */
static bool is_due(const struct room *r, const struct room_squads *b, int g, int64_t now)
{
    if (sim_squad_news(r->world, g) != b->seen[g])
        return true;
    if (now - b->written[g] < MOVING_EVERY_NS)
        return false;
    for (int k = 1; k <= SIM_SQUADS; k++) {
        const struct sim_squad *s = sim_squad(r->world, g, k);
        if (s->units && is_moving(s))
            return true;
    }
    return false;
}

static void write_team(struct room *r, struct room_squads *b, int g, uint64_t tick, int64_t now)
{
    static _Thread_local char buf[SQUADS_TEXT_MAX];
    size_t len = compose(r, g, tick, buf, sizeof buf);
    if (!len)
        return;
    b->seen[g] = sim_squad_news(r->world, g);
    b->written[g] = now;
    b->ever[g / 64] |= 1ull << (g % 64);
    room_board_put(&b->board, (unsigned)g, buf, len);
}

void room__squads_after_step(struct room *r, int64_t now)
{
    struct room_squads *b = board_of(r);
    bool any = false;
    for (int g = 0; g < SIM_GROUPS && !b; g++)
        any |= sim_squad_news(r->world, g) != 0;
    if (!b && !any)
        return;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return;
        room_board_init(&b->board);
        atomic_store_explicit(&r->squads, b, memory_order_release);
    }
    struct sim_view v;
    sim_view(r->world, &v);
    bool wrote = false;
    for (int g = 0; g < SIM_GROUPS; g++) {
        bool had = b->ever[g / 64] >> (g % 64) & 1u;
        if ((had || sim_squad_news(r->world, g) != b->seen[g]) && is_due(r, b, g, now)) {
            write_team(r, b, g, v.tick, now);
            wrote = true;
        }
    }
    if (wrote)
        room__wake(r);
}

bool room_take_squads_news(struct room *r, unsigned thread)
{
    struct room_squads *b = board_of(r);
    return b && news_take(&b->board.news, thread);
}

/* A team's own slot, or every team's (team < 0: an admin). */
static bool is_teams(unsigned slot, const void *arg)
{
    int team = *(const int *)arg;
    return team < 0 || (unsigned)team == slot;
}

uint64_t room_squads_send(struct room *r, uint64_t since, int team, room_text_fn *send, void *ctx)
{
    struct room_squads *b = board_of(r);
    return b ? room_board_send(&b->board, since, is_teams, &team, send, ctx) : since;
}
