/*
 * deliver.c — replies, frames and rosters to the clients (see deliver.h).
 */
#include "deliver.h"

#include "dispatch.h"
#include "metrics.h"
#include "room.h"
#include "view.h"

#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>

/* ---- frames ------------------------------------------------------------------- */

/*
 * The version 2 frame of f for a client that was sent `feed`'s frames
 * (frame_pick()). The kind it ideally takes is asked for from the room, so
 * that it is there from the next snapshot on if not now, and so is the key
 * frame when that is all that fits (a client that waits falls behind its
 * bases). -1: none fits now.
 */
static int pick_v2(struct room *r, const struct frame *f, const struct session_feed *feed)
{
    unsigned ideal;
    int kind = frame_pick(f, feed->sent, feed->nsent, &ideal);
    room_want(r, ideal, f->seq);
    if (kind <= FRAME_KEY && ideal != FRAME_KEY)
        room_want(r, FRAME_KEY, f->seq);
    return kind;
}

/* The version 3 tileset of f for s: its audience's (room_audience()),
 * and the header flags that say so. NULL: f has none for it yet (the room
 * is asked for tiles from its next snapshot on). */
static struct tileset *v3_set(const struct session *s, struct room *r, const struct frame *f,
                              uint8_t *flags)
{
    struct room_actor who = {.role = s->m.role, .team = s->m.team, .protocol = s->m.protocol};
    room_want(r, FRAME_WANT_V3, f->seq);
    *flags = 0;
    switch (room_audience(r, &who)) {
    case ROOM_AUDIENCE_TEAM:
        *flags = PROTO_V3_FLAG_FOGGED;
        return (uint32_t)s->m.team < f->v3.count ? f->v3.sets[s->m.team] : NULL;
    case ROOM_AUDIENCE_DELAYED:
        *flags = PROTO_V3_FLAG_DELAYED;
        return f->v3.delayed;
    default:
        return f->v3.count ? f->v3.sets[0] : NULL;
    }
}

/* Whether s has the welcome of the room it is in (its feed started) and
 * is not going. */
static bool is_fed(const struct session *s)
{
    return s->state != SESSION_CLOSING && s->m.room && s->feed.room == s->m.room;
}

/* The frame to write to s next and which of its parts, or NULL: the newest
 * of its room, once it has that room's welcome, unless it already has that
 * frame or none of its parts is for s. A version 3 client's "part" is
 * FRAME_WANT_V3: its frame is spliced when written (write_frame()). */
static struct frame *frame_for(const struct session *s, unsigned *kind)
{
    if (!is_fed(s) || s->awaits_view)
        return NULL;
    struct frame *f = *lobby_room_frame(s->m.room, s->m.thread);
    if (!f || f->seq == s->feed.last_seq)
        return NULL;
    struct room *r = lobby_room_room(s->m.room);
    int k = FRAME_V1;
    uint8_t flags;
    if (s->m.protocol == PROTO_V3_VERSION) {
        k = v3_set(s, r, f, &flags) ? FRAME_WANT_V3 : -1;
    } else if (s->m.protocol == PROTO_V2_VERSION) {
        k = pick_v2(r, f, &s->feed);
    } else {
        room_want(r, FRAME_V1, f->seq);
        k = f->part[FRAME_V1].len ? FRAME_V1 : -1;
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

/* Writes part `kind` of f to s and notes it in its feed: 0, or
 * PROTO_E_INTERNAL if the socket took less (close the connection). */
/* Each service thread's splicing of version 3 frames (view.h). */
static _Thread_local struct view_scratch v3_scratch = {.pre = LWS_PRE};

void deliver_thread_end(void)
{
    view_scratch_free(&v3_scratch);
    v3_scratch.pre = LWS_PRE;
}

/* Splices s's version 3 frame of f and writes it: 0, 1 when the budget
 * holds it back for now, or PROTO_E_INTERNAL. */
static int write_v3(struct session *s, struct frame *f, int64_t now, size_t *len)
{
    struct room *r = lobby_room_room(s->m.room);
    double budget, hz;
    room_view_pacing(r, &budget, &hz);
    uint8_t flags;
    struct tileset *ts = v3_set(s, r, f, &flags);
    struct view_made made = {0};
    ptrdiff_t n = ts ? view_frame(ts, &s->feed.v3, flags, budget, hz, now, &v3_scratch, &made) : 0;
    if (made.passed) /* a relay without this frame's tiles yet: the next snapshot, not a retry */
        s->feed.last_seq = f->seq;
    if (n <= 0)
        return n < 0 ? (int)n : 1;
    *len = (size_t)n;
    unsigned char *at = v3_scratch.buf + v3_scratch.pre;
    return lws_write(s->wsi, at, (size_t)n, LWS_WRITE_BINARY) < (int)n ? PROTO_E_INTERNAL : 0;
}

static int write_frame(struct session *s, struct frame *f, unsigned kind, int64_t now)
{
    if (kind == FRAME_WANT_V3) {
        size_t len = 0;
        int rc = write_v3(s, f, now, &len);
        if (rc)
            return rc > 0 ? 0 : rc;
        s->feed.last_seq = f->seq;
        s->feed.last_frame_ns = now;
        metrics_frame_sent(s->m.thread, kind, len);
        return 0;
    }
    size_t len = f->part[kind].len, n;
    /* Sent as it is, header included (lws buffers what the socket does
     * not take): lws_write()'s own framing would write the header into the
     * frame, which other threads are sending too. */
    const unsigned char *wire = frame_wire(f, kind, &n);
    if (!n || lws_write(s->wsi, (unsigned char *)wire, n, LWS_WRITE_RAW) < (int)n)
        return PROTO_E_INTERNAL;
    if (s->feed.last_seq && f->seq > s->feed.last_seq + 1)
        atomic_fetch_add_explicit(&g_metrics.snapshots_skipped, f->seq - s->feed.last_seq - 1,
                                  memory_order_relaxed);
    if (kind != FRAME_V1)
        note_sent(&s->feed, (uint32_t)f->seq);
    s->feed.last_seq = f->seq;
    s->feed.last_frame_ns = now;
    metrics_frame_sent(s->m.thread, kind, len);
    return 0;
}

/* Members whose sessions an announcement reads ahead of queueing them. */
#define ANNOUNCE_AHEAD 8

/* A room's frames in which the order its members are queued in goes once
 * round (announce_frame()). */
#define ANNOUNCE_TURNS 16

/* Queues s to be written the frame just announced (deliver_paced()); at
 * its next WRITEABLE if there is no memory to queue it. gap: restart its
 * stale clock. */
static void announce_to(struct sessions *ss, struct session *s, bool gap, int64_t now)
{
    if (gap)
        s->feed.last_frame_ns = now;
    if (!sessions_ask(ss, &s->entry))
        session_want_write(s);
}

/* Holds lr's new frame, if any, for this service thread and queues every
 * member of the thread to be written it (deliver_paced() decides which
 * are fed and which have gone stale). A walk of the members' list would
 * wait for a cache miss per member (a service thread of 5,000 viewers: 3
 * % of its core); their array is read ahead instead, and of each only the
 * line of the session that queues it. No lobby lock: the members and the
 * announced frame are the thread's own. */
static void announce_frame(struct sessions *ss, struct lobby_room *lr, int64_t stale_ns,
                           int64_t now)
{
    unsigned thread = ss->cfg.thread;
    struct frame *f = room_latest(lobby_room_room(lr));
    struct frame **announced = lobby_room_frame(lr, thread);
    if (!f || f == *announced) {
        frame_release(f);
        return;
    }
    /* Frames that stopped for longer than a client may lag (a relayed
     * room whose owner could not be reached) restart every stale clock. */
    bool gap = *announced && f->time_us - (*announced)->time_us > stale_ns / 1000;
    frame_release(*announced);
    *announced = f; /* keeps the reference room_latest took */
    size_t n;
    struct lobby_member *const *roll = lobby_room_roll(lr, thread, &n);
    if (!roll) {
        for (struct lobby_member *m = lobby_room_members(lr, thread); m; m = m->next)
            announce_to(ss, session_of_member(m), gap, now);
        return;
    }
    /* A thread that cannot write every member each snapshot writes the
     * longest waiting first and the rest in this order, so those last in
     * it would wait every time: it starts a little further on at each of
     * the room's frames, round in ANNOUNCE_TURNS of them, so that all are
     * served alike. (Counted by the room's frames, not by the thread's
     * announcements: with k rooms on a thread those advance by k at each
     * room's frame, and not at all for every room when k is 16.) */
    size_t start = n ? (size_t)(f->seq % ANNOUNCE_TURNS) * (n / ANNOUNCE_TURNS + 1) % n : 0;
    for (size_t k = 0, i = start; k < n; k++, i = i + 1 < n ? i + 1 : 0) {
        size_t ahead = i + ANNOUNCE_AHEAD;
        if (k + ANNOUNCE_AHEAD < n)
            __builtin_prefetch(&session_of_member(roll[ahead < n ? ahead : ahead - n])->entry, 1);
        announce_to(ss, session_of_member(roll[i]), gap, now);
    }
}

/* s's frame written at once when nothing is queued before it (a reply, or
 * the rest of a write its socket did not take), else at its next
 * WRITEABLE. */
static void write_or_ask(struct session *s, int64_t now)
{
    unsigned kind;
    struct frame *f;
    if (session_has_text(s) || lws_partial_buffered(s->wsi) || !(f = frame_for(s, &kind))) {
        session_want_write(s);
        return;
    }
    if (write_frame(s, f, kind, now) < 0)
        session_evict(s, LWS_CLOSE_STATUS_ABNORMAL_CLOSE);
}

/* Bytes of lws' state of a connection read ahead of writing to it: the
 * fields lws_write() and its framing read lie in the first 900 or so (its
 * layout is lws' own; too many lines cost a few prefetches, too few a
 * cache miss each). */
#define DELIVER_WSI_AHEAD 960

/* Reads ahead for deliver_paced(): the session after the next (all of
 * it, about 550 bytes), and the lws state of the next, whose session was
 * read ahead in the round before. A delivery is a send(), microseconds:
 * one ahead is enough, and its misses were most of what a delivery cost
 * flockd in user space (perf, 10,000 viewers). */
static void read_ahead(const struct sessions *ss)
{
    const struct sessions_entry *next = sessions_peek_ask(ss, 0), *after = sessions_peek_ask(ss, 1);
    const struct session *s = after ? session_of_entry(after) : NULL;
    for (size_t o = 0; s && o < sizeof *s; o += 64)
        __builtin_prefetch((const char *)s + o);
    const struct lws *wsi = next ? session_of_entry(next)->wsi : NULL;
    for (size_t o = 0; wsi && o < DELIVER_WSI_AHEAD; o += 64)
        __builtin_prefetch((const char *)wsi + o);
}

size_t deliver_paced(struct sessions *ss, int64_t now)
{
    int64_t stale_ns = (int64_t)(ss->cfg.stale_timeout * 1e9);
    size_t asked = 0;
    struct sessions_entry *e;
    while (asked < DELIVER_BATCH && (e = sessions_take_ask(ss))) {
        struct session *s = session_of_entry(e);
        read_ahead(ss);
        if (!is_fed(s)) /* its welcome starts its frames */
            continue;
        if (now - s->feed.last_frame_ns > stale_ns) {
            metrics_limit(LIMIT_STALE);
            session_evict(s, LWS_CLOSE_STATUS_POLICY_VIOLATION);
            continue;
        }
        write_or_ask(s, now);
        asked++;
    }
    return sessions_asks_waiting(ss);
}

/* ---- replies ---------------------------------------------------------------------- */

static void send_roster(struct sessions *ss, struct session *s, const struct lobby_room *lr)
{
    int len = lobby_room_roster(lr, ss->text, SESSIONS_TEXT_MAX);
    if (len > 0)
        session_send(s, ss->text, (size_t)len);
}

/* Writes s's queued text at once while its socket takes it, so that a
 * reply does not wait behind the frames of this wake-up's WRITEABLE
 * round; what stays queued goes at the next WRITEABLE. */
static void write_now(struct session *s, int64_t now)
{
    while (s->state != SESSION_CLOSING && session_has_text(s) && !lws_send_pipe_choked(s->wsi))
        if (session_write_text(s, now) < 0) {
            session_evict(s, LWS_CLOSE_STATUS_ABNORMAL_CLOSE);
            return;
        }
}

/* lr's availability message (a relayed room, PROTOCOL.md §6.6), composed
 * once into ss->text: its length (<= 0: none) and its count of changes. */
struct availability {
    int len;
    uint32_t seq;
};

static struct availability compose_availability(struct sessions *ss, const struct lobby_room *lr)
{
    struct availability a;
    a.len = room_availability(lobby_room_room(lr), ss->text, SESSIONS_TEXT_MAX, &a.seq);
    return a;
}

/* The availability composed in ss->text to s, fed by lr, if it knows an
 * older one. */
static void tell_availability(struct sessions *ss, struct session *s, const struct lobby_room *lr,
                              struct availability a)
{
    if (a.len > 0 && s->feed.room == lr && s->feed.availability_seq != a.seq) {
        s->feed.availability_seq = a.seq;
        session_send(s, ss->text, (size_t)a.len);
    }
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
    if (rep->kind != ROOM_REPLY_WELCOME)
        session_replied(s);
    session_reply(s, rep->text, rep->len, rep->at_ns);
    if (rep->kind == ROOM_REPLY_WELCOME && s->m.room == lr) {
        s->feed = (struct session_feed){.room = lr,
                                        .last_seq = 0,
                                        .last_frame_ns = now,
                                        .availability_seq = rep->availability_seq,
                                        .dilation_seen = rep->dilation_seen,
                                        .v3 = {.req = {.whole = true}}};
        send_roster(ss, s, lr);
        session_send_game(s);     /* its room's script's latest state (§14) */
        session_send_dilation(s); /* a change since its welcome was written */
        /* A change since its welcome was written. */
        tell_availability(ss, s, lr, compose_availability(ss, lr));
    }
    if (rep->kind == ROOM_REPLY_KEYFRAME) {
        s->feed.nsent = 0;
        view_feed_restart(&s->feed.v3);
    }
    if (rep->kind == ROOM_REPLY_VIEW)
        s->feed.v3.req = (struct view_req){.args = rep->view};
    write_now(s, now);
    struct proto_command join;
    if (session_take_held_join(s, &join))
        dispatch_command(s, &join, l, now);
    session_flow(s);
}

static void route_replies(struct sessions *ss, struct lobby *l, struct lobby_room *lr,
                          struct room_reply *rep, int64_t now)
{
    while (rep) {
        struct room_reply *next = rep->next;
        struct session *s = sessions_find(ss, rep->client);
        if (s) /* else the client has gone meanwhile */
            route_reply(ss, l, lr, s, rep, now);
        free(rep);
        rep = next;
    }
}

/* A change of lr's availability to every member of this thread that has
 * its welcome and does not know it yet. */
static void send_availability(struct sessions *ss, struct lobby_room *lr)
{
    if (!room_take_availability_news(lobby_room_room(lr), ss->cfg.thread))
        return;
    struct availability a = compose_availability(ss, lr);
    for (struct lobby_member *m = lobby_room_members(lr, ss->cfg.thread); m; m = m->next)
        tell_availability(ss, m->session, lr, a);
}

/* New `squads` messages of lr to the members of this thread fed by it:
 * a player its team's, an admin every team's (PROTOCOL.md §13.5). Under
 * the lobby's lock (members' roles and teams). */
static void send_squads(struct sessions *ss, struct lobby_room *lr)
{
    struct room *r = lobby_room_room(lr);
    for (struct lobby_member *m = lobby_room_members(lr, ss->cfg.thread); m; m = m->next) {
        struct session *s = m->session;
        bool is_admin = m->role == PROTO_ROLE_ADMIN;
        if (s->feed.room != lr || (!is_admin && m->team < 0))
            continue;
        s->feed.squads_seen =
            room_squads_send(r, s->feed.squads_seen, is_admin ? -1 : m->team, session_send_text, s);
    }
}

/* New `game` messages of lr's script to the members of this thread fed
 * by it: the room-wide state to all, a team's to its player, every team's
 * and the script's status to admins (PROTOCOL.md §14). Under the lobby's
 * lock. */
static void send_game(struct sessions *ss, struct lobby_room *lr)
{
    struct room *r = lobby_room_room(lr);
    for (struct lobby_member *m = lobby_room_members(lr, ss->cfg.thread); m; m = m->next) {
        struct session *s = m->session;
        if (s->feed.room == lr)
            s->feed.game_seen = room_game_send(r, s->feed.game_seen, m->team,
                                               m->role == PROTO_ROLE_ADMIN, session_send_text, s);
    }
}

/* A new `dilation` message of lr to the members of this thread fed by it
 * that have not had it (PROTOCOL.md §6.7). Under the lobby's lock. */
static void send_dilation(struct sessions *ss, struct lobby_room *lr)
{
    for (struct lobby_member *m = lobby_room_members(lr, ss->cfg.thread); m; m = m->next) {
        struct session *s = m->session;
        if (s->feed.room == lr)
            session_send_dilation(s);
    }
}

/* The new roster of lr to every member of this thread fed by it. */
static void send_rosters(struct sessions *ss, struct lobby_room *lr)
{
    int len = lobby_room_roster(lr, ss->text, SESSIONS_TEXT_MAX);
    for (struct lobby_member *m = lobby_room_members(lr, ss->cfg.thread); len > 0 && m;
         m = m->next) {
        struct session *s = m->session;
        if (s->feed.room == lr)
            session_send(s, ss->text, (size_t)len);
    }
}

/* Replies of this thread's rooms to its clients, routed under the lobby's
 * lock (a held join runs from there) only when there are some. The rooms
 * cannot close meanwhile: this thread has members in each, and only it
 * takes them out. */
static void route_all(struct sessions *ss, struct lobby *l, struct lobby_room *const *rooms,
                      size_t n, int64_t now)
{
    unsigned t = ss->cfg.thread, threads = ss->cfg.threads;
    struct room_reply *replies[n ? n : 1];
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        replies[i] = NULL;
        if (!room_take_dirty(lobby_room_room(rooms[i]), t))
            continue;
        replies[i] = room_take_replies_of(lobby_room_room(rooms[i]), t, threads);
        any |= replies[i] != NULL;
    }
    if (!any)
        return;
    lobby_lock(l);
    for (size_t i = 0; i < n; i++)
        route_replies(ss, l, rooms[i], replies[i], now);
    lobby_unlock(l);
}

void deliver_rooms(struct sessions *ss, struct lobby *l, int64_t now)
{
    unsigned t = ss->cfg.thread;
    int64_t stale_ns = (int64_t)(ss->cfg.stale_timeout * 1e9);
    struct lobby_room *const *mine;
    size_t n = lobby_rooms_of(l, t, &mine);
    struct lobby_room *rooms[n ? n : 1]; /* a held join may change mine */
    memcpy(rooms, mine, n * sizeof *rooms);
    route_all(ss, l, rooms, n, now);
    /* Frames after the replies were written, in the rooms as they are now
     * (each checked: a room's frame costs its lock and a comparison). */
    n = lobby_rooms_of(l, t, &mine);
    for (size_t i = 0; i < n; i++) {
        send_availability(ss, mine[i]);
        announce_frame(ss, mine[i], stale_ns, now);
    }
    bool is_locked = false;
    for (size_t i = 0; i < n; i++) {
        bool roster = lobby_room_take_roster_change(mine[i], t);
        bool squads = room_take_squads_news(lobby_room_room(mine[i]), t);
        bool game = room_take_game_news(lobby_room_room(mine[i]), t);
        bool dilation = room_take_dilation_news(lobby_room_room(mine[i]), t);
        if (!roster && !squads && !game && !dilation)
            continue;
        if (!is_locked)
            lobby_lock(l);
        is_locked = true;
        if (roster)
            send_rosters(ss, mine[i]);
        if (squads)
            send_squads(ss, mine[i]);
        if (game)
            send_game(ss, mine[i]);
        if (dilation)
            send_dilation(ss, mine[i]);
    }
    if (is_locked)
        lobby_unlock(l);
}

/* ---- writing -------------------------------------------------------------------------- */

int deliver_writeable(struct session *s, int64_t now)
{
    if (session_has_text(s)) {
        if (session_write_text(s, now) < 0)
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
