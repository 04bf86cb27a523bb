/*
 * room_pace.c — a room's rates under load (pace.h, PROTOCOL.md §6.7). At
 * the start of each tick the room's pace learns what its last run cost
 * and chooses the rates: the pool is told the period to the next tick and
 * whether the room is behind (pool_pace), room_info() the dilation and
 * the snapshot rate, and, when pace.h says they are to be told, the
 * members a `dilation` message, written on a board of its own (one slot:
 * the latest message) that the service threads send from (news.h).
 */
#include "room_internal.h"

#include "room_board.h"

#include "pace.h"
#include "proto_reply.h"

#include <math.h>
#include <stdlib.h>

#define DILATION_TEXT_MAX (sizeof(((struct room *)0)->name) + 128)

struct room_pace {
    struct pace pace;        /* the tick thread's */
    struct room_board board; /* slot 0: the latest dilation message */
};

int room__pace_create(struct room *r)
{
    r->pace = calloc(1, sizeof *r->pace);
    if (!r->pace)
        return PROTO_E_INTERNAL;
    pace_init(&r->pace->pace, r->cfg.tick_hz, r->cfg.snapshot_hz);
    room_board_init(&r->pace->board);
    return 0;
}

void room__pace_destroy(struct room *r)
{
    if (!r->pace)
        return;
    room_board_free(&r->pace->board);
    free(r->pace);
    r->pace = NULL;
}

/* A rate as a message shows it: to 0.01. */
static double shown(double hz)
{
    return round(hz * 100.0) / 100.0;
}

/* The dilation message for factor f onto the board. */
static void tell(struct room *r, double f)
{
    char text[DILATION_TEXT_MAX];
    struct proto_dilation d = {.room = r->name,
                               .factor = f,
                               .tick_hz = shown(f * r->cfg.tick_hz),
                               .snapshot_hz = shown(pace_snapshot_hz(&r->pace->pace))};
    int len = proto_reply_dilation(text, sizeof text, &d);
    if (len > 0)
        room_board_put(&r->pace->board, 0, text, (size_t)len);
}

void room__pace_tick(struct room *r, const struct pool_time *t, int64_t snapshot_ns)
{
    struct pace *p = &r->pace->pace;
    /* The room's own work, not the wall clock: time the machine gave other
     * processes (a loaded machine, a sanitizer's build beside others) is
     * no reason to shed. The snapshot's share (timed on the wall clock)
     * shrinks in the same proportion. */
    int64_t work = t->last_work_ns;
    if (snapshot_ns > 0 && t->last_ns > 0)
        snapshot_ns = (int64_t)((double)snapshot_ns * (double)work / (double)t->last_ns);
    pace_tick(p, t->now_ns, work, snapshot_ns);
    bool is_dilated = pace_is_dilated(p);
    pool_pace(&r->task, is_dilated ? pace_period_ns(p) : 0, is_dilated);
    double f = pace_dilation(p);
    pthread_mutex_lock(&r->lock);
    r->info.dilation = f;
    r->info.snapshot_hz_now = pace_snapshot_hz(p);
    pthread_mutex_unlock(&r->lock);
    if (pace_should_tell(p, t->now_ns))
        tell(r, f);
}

double room__snapshot_step(const struct room *r)
{
    return pace_snapshot_step(&r->pace->pace);
}

bool room_take_dilation_news(struct room *r, unsigned thread)
{
    return news_take(&r->pace->board.news, thread);
}

/* Every member takes the room's dilation. */
static bool is_for_all(unsigned slot, const void *arg)
{
    (void)slot;
    (void)arg;
    return true;
}

uint64_t room_dilation_send(struct room *r, uint64_t since, room_text_fn *send, void *ctx)
{
    return room_board_send(&r->pace->board, since, is_for_all, NULL, send, ctx);
}

uint64_t room_dilation_version(struct room *r)
{
    return room_board_version(&r->pace->board);
}
