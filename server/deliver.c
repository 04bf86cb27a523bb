/*
 * deliver.c — replies, frames and rosters to the clients (see deliver.h).
 */
#include "deliver.h"

#include "dispatch.h"
#include "metrics.h"
#include "room.h"

#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>

/* ---- frames ------------------------------------------------------------------- */

/*
 * The version 2 frame of f for a client that was sent `feed`'s frames
 * (snapenc_pick()). The kind it ideally takes is asked for from the room, so
 * that it is there from the next snapshot on if not now, and so is the key
 * frame when that is all that fits (a client that waits falls behind its
 * bases). -1: none fits now.
 */
static int pick_v2(struct room *r, const struct frame *f, const struct session_feed *feed)
{
    unsigned ideal;
    int kind = snapenc_pick(f, feed->sent, feed->nsent, &ideal);
    room_want(r, ideal, f->seq);
    if (kind <= SNAPENC_KEY && ideal != SNAPENC_KEY)
        room_want(r, SNAPENC_KEY, f->seq);
    return kind;
}

/* The frame to write to s next and which of its parts, or NULL: the newest
 * of its room, once it has that room's welcome, unless it already has that
 * frame or none of its parts is for s. */
static struct frame *frame_for(const struct session *s, unsigned *kind)
{
    if (s->state == SESSION_CLOSING || !s->m.room || s->feed.room != s->m.room)
        return NULL;
    struct frame *f = *lobby_room_frame(s->m.room);
    if (!f || f->seq == s->feed.last_seq)
        return NULL;
    struct room *r = lobby_room_room(s->m.room);
    int k = SNAPENC_V1;
    if (s->m.protocol == PROTO_V2_VERSION) {
        k = pick_v2(r, f, &s->feed);
    } else {
        room_want(r, SNAPENC_V1, f->seq);
        k = f->part[SNAPENC_V1].len ? SNAPENC_V1 : -1;
    }
    if (k < 0)
        return NULL;
    *kind = (unsigned)k;
    return f;
}

/* Remembers a version 2 frame written: the newest base the client holds. */
static void note_sent(struct session_feed *feed, uint32_t seq)
{
    memmove(feed->sent + 1, feed->sent, (PROTO_V2_HISTORY - 1) * sizeof feed->sent[0]);
    feed->sent[0] = seq;
    if (feed->nsent < PROTO_V2_HISTORY)
        feed->nsent++;
}

static int write_frame(struct session *s, struct frame *f, unsigned kind, int64_t now)
{
    size_t len = f->part[kind].len;
    int w = lws_write(s->wsi, frame_payload(f, kind), len, LWS_WRITE_BINARY);
    if (w < (int)len)
        return PROTO_E_INTERNAL;
    if (s->feed.last_seq && f->seq > s->feed.last_seq + 1)
        atomic_fetch_add_explicit(&g_metrics.snapshots_skipped, f->seq - s->feed.last_seq - 1,
                                  memory_order_relaxed);
    if (kind != SNAPENC_V1)
        note_sent(&s->feed, (uint32_t)f->seq);
    s->feed.last_seq = f->seq;
    s->feed.last_frame_ns = now;
    atomic_fetch_add_explicit(&g_metrics.snapshots_sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_metrics.bytes_sent, len, memory_order_relaxed);
    metrics_frame_sent(kind, len);
    return 0;
}

/* Holds lr's new frame, if any, and asks every fed member to write it; a
 * member that has gone without frames for stale_ns is evicted. */
static void announce_frame(struct lobby_room *lr, int64_t stale_ns, int64_t now)
{
    struct frame *f = room_latest(lobby_room_room(lr));
    struct frame **announced = lobby_room_frame(lr);
    if (!f || f == *announced) {
        frame_release(f);
        return;
    }
    /* Frames that stopped for longer than a client may lag (a relayed
     * room whose owner could not be reached) restart every stale clock. */
    bool gap = *announced && f->time_us - (*announced)->time_us > stale_ns / 1000;
    frame_release(*announced);
    *announced = f; /* keeps the reference room_latest took */
    for (struct lobby_member *m = lobby_room_members(lr); m; m = m->next) {
        struct session *s = m->session;
        if (s->state == SESSION_CLOSING || s->feed.room != lr)
            continue;
        if (gap)
            s->feed.last_frame_ns = now;
        if (now - s->feed.last_frame_ns > stale_ns) {
            metrics_limit(LIMIT_STALE);
            session_evict(s, LWS_CLOSE_STATUS_POLICY_VIOLATION);
            continue;
        }
        session_want_write(s);
    }
}

/* ---- replies ---------------------------------------------------------------------- */

static void send_roster(struct sessions *ss, struct session *s, const struct lobby_room *lr)
{
    int len = lobby_room_roster(lr, ss->text, SESSIONS_TEXT_MAX);
    if (len > 0)
        session_send(s, ss->text, (size_t)len);
}

/* One reply of lr's room to s. A welcome from its current room starts the
 * feed of frames (a welcome from a room it has left since starts
 * nothing), the ack of keyframe restarts its version 2 stream on a key
 * frame (no base held); the last reply owed lets a held join run. A
 * welcome follows its join's ack and is no reply of its own: counted as
 * one, it let a held join run (and a refusal of it be sent at once)
 * while a reply to an earlier command was still owed. */
static void route_reply(struct sessions *ss, struct lobby *l, struct lobby_room *lr,
                        struct session *s, const struct room_reply *rep, int64_t now)
{
    if (rep->kind != ROOM_REPLY_WELCOME && rep->kind != ROOM_REPLY_NOTICE)
        session_replied(s);
    session_send(s, rep->text, rep->len);
    if (rep->kind == ROOM_REPLY_WELCOME && s->m.room == lr) {
        s->feed = (struct session_feed){.room = lr, .last_seq = 0, .last_frame_ns = now};
        send_roster(ss, s, lr);
    }
    if (rep->kind == ROOM_REPLY_KEYFRAME)
        s->feed.nsent = 0;
    struct proto_command join;
    if (session_take_held_join(s, &join))
        dispatch_command(s, &join, l, now);
    session_flow(s);
}

/* A notice for every member of lr that has its welcome (room.h). */
static void send_notice(struct lobby_room *lr, const struct room_reply *rep)
{
    for (struct lobby_member *m = lobby_room_members(lr); m; m = m->next) {
        struct session *s = m->session;
        if (s->feed.room == lr)
            session_send(s, rep->text, rep->len);
    }
}

static void route_replies(struct sessions *ss, struct lobby *l, struct lobby_room *lr, int64_t now)
{
    struct room_reply *rep = room_take_replies(lobby_room_room(lr));
    while (rep) {
        struct room_reply *next = rep->next;
        struct session *s = rep->client ? sessions_find(ss, rep->client) : NULL;
        if (!rep->client && rep->kind == ROOM_REPLY_NOTICE)
            send_notice(lr, rep);
        else if (s) /* else the client has gone meanwhile */
            route_reply(ss, l, lr, s, rep, now);
        free(rep);
        rep = next;
    }
}

/* The new roster of lr to every member fed by it. */
static void send_rosters(struct sessions *ss, struct lobby_room *lr)
{
    int len = lobby_room_roster(lr, ss->text, SESSIONS_TEXT_MAX);
    for (struct lobby_member *m = lobby_room_members(lr); len > 0 && m; m = m->next) {
        struct session *s = m->session;
        if (s->feed.room == lr)
            session_send(s, ss->text, (size_t)len);
    }
}

void deliver_rooms(struct sessions *ss, struct lobby *l, int64_t now)
{
    int64_t stale_ns = (int64_t)(ss->cfg.stale_timeout * 1e9);
    for (size_t i = 0; i < lobby_count(l); i++) {
        struct lobby_room *lr = lobby_at(l, i);
        if (room_take_dirty(lobby_room_room(lr))) {
            route_replies(ss, l, lr, now);
            announce_frame(lr, stale_ns, now);
        }
    }
    for (size_t i = 0; i < lobby_count(l); i++) {
        struct lobby_room *lr = lobby_at(l, i);
        if (lobby_room_take_roster_change(lr))
            send_rosters(ss, lr);
    }
}

/* ---- writing -------------------------------------------------------------------------- */

int deliver_writeable(struct session *s, int64_t now)
{
    if (session_has_text(s)) {
        if (session_write_text(s) < 0)
            return PROTO_E_INTERNAL;
    } else {
        /* The frame announced once per snapshot: no lock per client. */
        unsigned kind;
        struct frame *f = frame_for(s, &kind);
        if (f && write_frame(s, f, kind, now) < 0)
            return PROTO_E_INTERNAL;
    }
    unsigned kind;
    if (session_has_text(s) || frame_for(s, &kind))
        session_want_write(s);
    return 0;
}
