/*
 * session.c — one client's life cycle, reassembly and outgoing text queue
 * (see session.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "session.h"

#include "metrics.h"
#include "proto_reply.h"
#include "sessions.h"

#include <libwebsockets.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

_Static_assert((SESSION_OUTQ & (SESSION_OUTQ - 1)) == 0 &&
                   (SESSION_OUTQ_MIN & (SESSION_OUTQ_MIN - 1)) == 0 &&
                   SESSION_OUTQ_MIN <= SESSION_OUTQ,
               "the text queue's ring sizes are powers of two");

/* Seconds a draining client has to read the replies it is owed. */
#define DRAIN_TIMEOUT_S 5

/* ---- opening and closing ---------------------------------------------------- */

/* The peer's address as 16 bytes (IPv4 mapped into IPv6): 0, or
 * PROTO_E_NOT_FOUND if the socket has none we count (not IP). */
static int peer_address(struct lws *wsi, unsigned char *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = lws_get_socket_fd(wsi);
    memset(out, 0, SESSIONS_ADDR_LEN);
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        return PROTO_E_NOT_FOUND;
    if (ss.ss_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
        return 0;
    }
    if (ss.ss_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return 0;
    }
    return PROTO_E_NOT_FOUND;
}

/* 127.0.0.0/8 (plain or mapped) and ::1. */
static bool is_loopback(const unsigned char *a)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return (memcmp(a, mapped, 12) == 0 && a[12] == 127) || memcmp(a, one, 16) == 0;
}

/* Keeps at most about two snapshots queued in the kernel per client: a
 * lagging client then shows as choked within a frame or two and is handed
 * the newest frame instead of reading seconds-old ones from its buffer. */
static void limit_send_buffer(struct lws *wsi, size_t bytes)
{
    int fd = lws_get_socket_fd(wsi), b = (int)bytes;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
}

enum metrics_limit session_would_admit(struct lws *wsi, const struct sessions *ss)
{
    unsigned char addr[SESSIONS_ADDR_LEN];
    return sessions_would_admit(ss, peer_address(wsi, addr) == 0 ? addr : NULL);
}

int session_open(struct session *s, struct lws *wsi, struct sessions *ss, struct lobby *l,
                 unsigned protocol, int64_t now)
{
    memset(s, 0, sizeof *s);
    s->wsi = wsi;
    struct sessions_entry *e = &s->entry;
    e->counted = peer_address(wsi, e->addr) == 0;
    bool local = e->counted && is_loopback(e->addr);
    int rc = sessions_admit(ss, e, s);
    if (rc < 0)
        return rc;
    bucket_init(&s->bucket, ss->cfg.rate, ss->cfg.burst, now);
    limit_send_buffer(wsi, ss->cfg.send_buffer);
    atomic_fetch_add_explicit(&g_metrics.clients, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_metrics.connections_total, 1, memory_order_relaxed);
    s->m = (struct lobby_member){.client = e->id,
                                 .thread = ss->cfg.thread,
                                 .loopback = local,
                                 .protocol = protocol,
                                 .session = s};
    memcpy(s->m.addr, e->addr, sizeof s->m.addr);
    lobby_enter(l, &s->m);
    s->state = SESSION_OPEN;
    s->reading = true; /* lws reads a new connection */
    struct room *r = lobby_room_room(s->m.room);
    uint32_t seen = room_availability_seq(r); /* before the welcome, as: */
    uint64_t dilation_seen = room_dilation_version(r);
    int len = lobby_welcome(&s->m, ss->text, SESSIONS_TEXT_MAX);
    if (len <= 0) { /* no connection without its welcome */
        session_release(s, ss, l, now);
        return len < 0 ? len : PROTO_E_INTERNAL;
    }
    session_send(s, ss->text, (size_t)len);
    s->feed = (struct session_feed){.room = s->m.room,
                                    .last_seq = 0,
                                    .last_frame_ns = now,
                                    .availability_seq = seen,
                                    .dilation_seen = dilation_seen,
                                    .v3 = {.req = {.whole = true}}};
    session_send_game(s); /* a scripted default room's latest state */
    session_send_dilation(s);
    return 0;
}

void session_release(struct session *s, struct sessions *ss, struct lobby *l, int64_t now)
{
    if (s->state == SESSION_NONE)
        return;
    lobby_leave(l, &s->m, false, now);
    sessions_remove(ss, &s->entry);
    for (uint32_t k = 0; k < s->out_count; k++)
        free(s->outq[(s->out_head + k) & (s->out_cap - 1)].buf);
    free(s->outq);
    s->outq = NULL;
    s->out_cap = s->out_count = s->out_head = 0;
    free(s->rx);
    s->rx = NULL;
    s->rx_cap = s->rx_len = 0;
    free(s->held_join);
    s->held_join = NULL;
    s->state = SESSION_NONE;
    atomic_fetch_sub_explicit(&g_metrics.clients, 1, memory_order_relaxed);
}

/* ---- state changes ------------------------------------------------------------ */

void session_want_write(struct session *s)
{
    lws_callback_on_writable(s->wsi);
}

void session_flow(struct session *s)
{
    uint32_t owed = s->owed + s->out_count;
    bool want = s->state == SESSION_DRAINING || s->state == SESSION_CLOSING ||
                (s->state == SESSION_OPEN &&
                 (s->reading ? owed < SESSION_RX_PAUSE : owed <= SESSION_RX_RESUME));
    if (want != s->reading) {
        s->reading = want;
        lws_rx_flow_control(s->wsi, want);
    }
}

static bool is_ending(const struct session *s)
{
    return s->state == SESSION_CLOSING || s->state == SESSION_NONE;
}

/* Enters DRAINING or CLOSING with the close code to send; what the client
 * sends from now on is read and dropped. False if the session is already
 * there or past it. */
static bool end_with(struct session *s, enum session_state to, int status)
{
    if (is_ending(s) || s->state == to)
        return false;
    s->state = to;
    s->close_status = status;
    session_flow(s);
    return true;
}

void session_close(struct session *s, int status)
{
    if (end_with(s, SESSION_CLOSING, status))
        session_want_write(s);
}

int session_eviction_status(enum lobby_eviction why)
{
    return why == LOBBY_REPLACED ? SESSION_CLOSE_REPLACED : LWS_CLOSE_STATUS_POLICY_VIOLATION;
}

void session_close_after_replies(struct session *s, int status)
{
    if (!end_with(s, SESSION_DRAINING, status))
        return;
    lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, DRAIN_TIMEOUT_S);
    session_want_write(s);
}

void session_evict(struct session *s, int status)
{
    if (end_with(s, SESSION_CLOSING, status))
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

void session_hold_join(struct session *s, const struct proto_command *cmd)
{
    if (s->state != SESSION_OPEN)
        return;
    if (!s->held_join && !(s->held_join = malloc(sizeof *s->held_join))) {
        session_close(s, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION);
        return;
    }
    *s->held_join = *cmd;
    s->state = SESSION_JOIN_HELD;
    session_flow(s);
}

bool session_take_held_join(struct session *s, struct proto_command *out)
{
    if (s->state != SESSION_JOIN_HELD || s->owed > 0)
        return false;
    *out = *s->held_join;
    free(s->held_join);
    s->held_join = NULL;
    s->state = SESSION_OPEN;
    return true;
}

void session_owe(struct session *s)
{
    s->owed++;
}

void session_replied(struct session *s)
{
    s->awaits_view = false; /* the URL's view was its first command: this answers it */
    if (s->owed)
        s->owed--;
    if (s->state == SESSION_DRAINING && s->owed == 0)
        session_want_write(s); /* it may close once its queue is written */
}

bool session_is_close_handed(const struct session *s)
{
    return s->is_close_handed;
}

bool session_close_if_due(struct session *s)
{
    if (s->state == SESSION_DRAINING && !s->owed && !s->out_count)
        s->state = SESSION_CLOSING;
    if (s->state != SESSION_CLOSING || s->is_close_handed)
        return false;
    s->is_close_handed = true;
    static const char too_large[] = "message too large";
    bool big = s->close_status == LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE;
    lws_close_reason(s->wsi, (enum lws_close_status)s->close_status,
                     big ? (unsigned char *)too_large : NULL, big ? sizeof too_large - 1 : 0);
    return true;
}

/* ---- reading ---------------------------------------------------------------------- */

/* Room in the reassembly buffer for `need` bytes (at most max_message):
 * true, or false if memory ran out. */
static bool rx_reserve(struct session *s, size_t need, uint32_t max_message)
{
    if (need <= s->rx_cap)
        return true;
    size_t cap = s->rx_cap ? s->rx_cap : SESSION_RX_MIN;
    while (cap < need)
        cap *= 2;
    if (cap > max_message)
        cap = max_message;
    char *p = realloc(s->rx, cap);
    if (!p)
        return false;
    s->rx = p;
    s->rx_cap = cap;
    return true;
}

bool session_receive(struct session *s, const void *in, size_t len, uint32_t max_message,
                     struct session_message *msg)
{
    if (s->rx_len == 0) {
        s->rx_binary = lws_frame_is_binary(s->wsi);
        if (s->rx_cap > SESSION_RX_KEEP) { /* the last message was a big one */
            free(s->rx);
            s->rx = NULL;
            s->rx_cap = 0;
        }
    }
    if (is_ending(s) || s->state == SESSION_DRAINING)
        return false; /* closing: the rest of what it sent is dropped */
    /* The frame's announced length counts at once: a frame that says it
     * will carry more than the cap is closed on its first bytes, not held
     * open while its sender trickles them in. */
    size_t announced = lws_remaining_packet_payload(s->wsi);
    if (len > max_message - s->rx_len || announced > max_message - s->rx_len - len) {
        /* Close from WRITEABLE, which sends the 1009 close frame even when
         * more frames of the burst are still in lws' read buffer. */
        metrics_limit(LIMIT_MESSAGE_SIZE);
        session_close(s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
        return false;
    }
    /* What the frame announced is reserved at once: one allocation for a
     * message that comes in pieces. An empty message still gets a buffer,
     * so its text is never NULL. */
    size_t need = s->rx_len + len + announced;
    if (!rx_reserve(s, need ? need : 1, max_message)) {
        session_close(s, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION);
        return false;
    }
    memcpy(s->rx + s->rx_len, in, len);
    s->rx_len += len;
    if (!lws_is_final_fragment(s->wsi) || lws_remaining_packet_payload(s->wsi))
        return false;
    *msg = (struct session_message){.text = s->rx, .len = s->rx_len, .binary = s->rx_binary};
    s->rx_len = 0; /* the next fragment starts a new message */
    return true;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Doubles the text queue (SESSION_OUTQ_MIN at first), its messages in
 * order from slot 0: true, or false if memory ran out. */
static bool outq_grow(struct session *s)
{
    uint32_t cap = s->out_cap ? 2 * s->out_cap : SESSION_OUTQ_MIN;
    struct session_text *q = malloc(cap * sizeof *q);
    if (!q)
        return false;
    for (uint32_t k = 0; k < s->out_count; k++)
        q[k] = s->outq[(s->out_head + k) & (s->out_cap - 1)];
    free(s->outq);
    s->outq = q;
    s->out_cap = cap;
    s->out_head = 0;
    return true;
}

void session_send(struct session *s, const char *text, size_t len)
{
    session_reply(s, text, len, 0);
}

void session_send_text(void *ctx, const char *text, size_t len)
{
    session_send(ctx, text, len);
}

void session_send_game(struct session *s)
{
    s->feed.game_seen = room_game_send(lobby_room_room(s->m.room), 0, s->m.team,
                                       s->m.role == PROTO_ROLE_ADMIN, session_send_text, s);
}

void session_send_dilation(struct session *s)
{
    s->feed.dilation_seen = room_dilation_send(lobby_room_room(s->feed.room), s->feed.dilation_seen,
                                               session_send_text, s);
}

void session_reply(struct session *s, const char *text, size_t len, int64_t at_ns)
{
    if (is_ending(s))
        return;
    if (s->out_count == SESSION_OUTQ) {
        metrics_limit(LIMIT_UNREAD_REPLIES);
        session_close(s, LWS_CLOSE_STATUS_POLICY_VIOLATION);
        return;
    }
    if (s->out_count == s->out_cap && !outq_grow(s))
        return;
    unsigned char *buf = malloc(LWS_PRE + len);
    if (!buf)
        return;
    memcpy(buf + LWS_PRE, text, len);
    s->outq[(s->out_head + s->out_count++) & (s->out_cap - 1)] =
        (struct session_text){.len = len, .at_ns = at_ns, .buf = buf};
    session_want_write(s);
}

void session_send_error(struct session *s, const char *id, int code, const char *message)
{
    char text[PROTO_REPLY_BYTES];
    int len = proto_reply_error(text, sizeof text, id, code, message);
    metrics_reject(proto_status_name(code));
    if (len > 0)
        session_send(s, text, (size_t)len);
}

bool session_has_text(const struct session *s)
{
    return s->out_count > 0;
}

int session_write_text(struct session *s, int64_t now)
{
    struct session_text *t = &s->outq[s->out_head];
    size_t len = t->len;
    int64_t at_ns = t->at_ns;
    int w = lws_write(s->wsi, t->buf + LWS_PRE, len, LWS_WRITE_TEXT);
    free(t->buf);
    s->out_head = (s->out_head + 1) & (s->out_cap - 1);
    if (--s->out_count == 0) { /* an empty queue holds no memory */
        free(s->outq);
        s->outq = NULL;
        s->out_cap = s->out_head = 0;
    }
    if (w < (int)len)
        return PROTO_E_INTERNAL;
    if (at_ns > 0 && now > at_ns)
        metrics_reply((uint64_t)(now - at_ns));
    session_flow(s);
    return 0;
}
