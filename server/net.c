/*
 * net.c — WebSocket and HTTP service on libwebsockets 4.1 (see net.h).
 *
 * Sessions live in lws' per-session storage and are also indexed by id in
 * an open-addressing table, so replies produced by the rooms (which only
 * know client ids) reach a session that may have gone meanwhile. Per
 * session: its membership record (lobby.h), a reassembly buffer of
 * max_message bytes, a small queue of outgoing text messages, the sequence
 * number of the last frame sent and its command rate bucket.
 */
#define _POSIX_C_SOURCE 200809L

#include "net.h"

#include "bucket.h"
#include "clock.h"
#include "idmap.h"
#include "ipcount.h"
#include "lobby.h"
#include "metrics.h"
#include "room.h"
#include "textbuf.h"

#include <libwebsockets.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTQ_LEN 512 /* pending text messages per client before 1008 */
/* Flow control: a client owed this many replies (queued in the room or
 * waiting to be written) is not read until it is owed RX_RESUME or fewer,
 * so a burst of commands waits in its socket instead of piling up here. */
#define RX_PAUSE     128
#define RX_RESUME    64
#define TEXT_MAX     16384        /* largest text message we send (welcome, roster) */
#define API_MAX      (512 * 1024) /* largest HTTP body (the room list) */
#define HOUSEKEEP_NS 100000000LL  /* grace periods and room expiry, every 100 ms */

struct outmsg {
    size_t len;
    unsigned char *buf; /* LWS_PRE headroom, then len bytes */
};

struct session {
    struct lws *wsi;
    uint64_t id;
    unsigned char addr[16]; /* the peer's address, counted in the per-IP table */
    int counted;
    struct lobby_member m; /* room, role, team */
    int streaming;         /* the room's welcome went out: send its frames */
    int has_join;          /* a join waits for the replies the client is owed */
    struct proto_command join;
    struct bucket bucket;  /* command rate */
    uint64_t last_seq;     /* last frame sent */
    int64_t last_frame_ns; /* when a frame last went out (or connect) */
    char *rx;
    size_t rx_len;
    int rx_binary;
    int rx_paused; /* reading stopped by flow control */
    uint32_t owed; /* commands handed to the room, not yet replied */
    struct outmsg outq[OUTQ_LEN];
    uint32_t out_head, out_count;
    int closing;  /* close status to send, 0 if none */
    int draining; /* close status to send once every owed reply went out */
};

struct net {
    struct net_config cfg;
    char host[256], web_root[1024];
    struct lobby *lobby;
    struct lws_context *ctx;
    struct lws_vhost *vhost;
    int port;
    atomic_int stop;
    uint64_t next_id;
    struct idmap sessions; /* id -> session */
    struct ipcount ips;    /* connections per peer address */
    char origins[1024];
    lws_retry_bo_t retry;
    char *text; /* scratch for building replies */
    int64_t housekept_ns;
};

/* ---- outgoing text ------------------------------------------------------- */

/* Queues a text message; on overflow the client is closed with 1008
 * because it is not reading its replies. */
static void send_text(struct session *s, const char *text, size_t len)
{
    if (s->closing)
        return;
    if (s->out_count == OUTQ_LEN) {
        metrics_limit(LIMIT_UNREAD_REPLIES);
        s->closing = LWS_CLOSE_STATUS_POLICY_VIOLATION;
        lws_callback_on_writable(s->wsi);
        return;
    }
    unsigned char *buf = malloc(LWS_PRE + len);
    if (!buf)
        return;
    memcpy(buf + LWS_PRE, text, len);
    s->outq[(s->out_head + s->out_count++) % OUTQ_LEN] = (struct outmsg){len, buf};
    lws_callback_on_writable(s->wsi);
}

/* Stops or resumes reading a client's commands by how many replies it is
 * owed (see RX_PAUSE), or while a join waits for them. */
static void flow(struct session *s)
{
    uint32_t owed = s->owed + s->out_count;
    if (!s->rx_paused && (owed >= RX_PAUSE || s->has_join)) {
        s->rx_paused = 1;
        lws_rx_flow_control(s->wsi, 0);
    } else if (s->rx_paused && owed <= RX_RESUME && !s->has_join && !s->closing && !s->draining) {
        s->rx_paused = 0;
        lws_rx_flow_control(s->wsi, 1);
    }
}

static void send_error(struct net *n, struct session *s, const char *id, int code,
                       const char *message)
{
    int len = proto_reply_error(n->text, TEXT_MAX, id, code, message);
    metrics_reject(proto_status_name(code));
    if (len > 0)
        send_text(s, n->text, (size_t)len);
}

static const char queue_full_text[] =
    "the room's command queue is full; nothing was done, retry later";

/* A refusal found here still waits behind the client's earlier commands. */
static void refuse(struct net *n, struct session *s, const char *id, int code, const char *message)
{
    if (lobby_refuse(&s->m, id, code, message) < 0) {
        metrics_limit(LIMIT_QUEUE);
        send_error(n, s, id, PROTO_E_QUEUE_FULL, queue_full_text);
        return;
    }
    s->owed++;
    metrics_reject(proto_status_name(code));
}

/* Stops reading the client and closes it with `status` from WRITEABLE. */
static void close_session(struct session *s, int status)
{
    if (s->closing)
        return;
    s->closing = status;
    if (!s->rx_paused) {
        s->rx_paused = 1;
        lws_rx_flow_control(s->wsi, 0);
    }
    lws_callback_on_writable(s->wsi);
}

/* Like close_session, but first sends every reply the client is owed
 * (within a few seconds), so each of its commands is still answered. */
static void close_after_replies(struct session *s, int status)
{
    if (s->closing || s->draining)
        return;
    s->draining = status;
    if (!s->rx_paused) {
        s->rx_paused = 1;
        lws_rx_flow_control(s->wsi, 0);
    }
    lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, 5);
    lws_callback_on_writable(s->wsi);
}

/* Takes one command from the client's token bucket; 0 if it was empty. A
 * client that keeps sending into an empty bucket is closed (1008). */
static int take_token(struct session *s)
{
    if (bucket_take(&s->bucket, clock_mono_ns()))
        return 1;
    if (bucket_is_abused(&s->bucket)) {
        metrics_limit(LIMIT_RATE_ABUSE);
        close_after_replies(s, LWS_CLOSE_STATUS_POLICY_VIOLATION);
    }
    return 0;
}

/* Hands a command to the lobby, which decides it and queues it to the
 * client's room. A join runs only once nothing is owed, so its refusal is
 * answered at once; other refusals wait their turn. */
static void submit(struct net *n, struct session *s, const struct proto_command *cmd)
{
    const char *why = "refused";
    struct lobby_member *kicked;
    int rc = lobby_submit(n->lobby, &s->m, cmd, clock_mono_ns(), &kicked, &why);
    if (kicked) {
        struct session *victim = kicked->session;
        victim->streaming = 0;
        close_session(victim, LWS_CLOSE_STATUS_POLICY_VIOLATION);
    }
    if (rc == 0) {
        s->owed++;
        if (cmd->kind == PROTO_CMD_JOIN)
            s->streaming = 0; /* until the new room's welcome */
    } else if (rc == PROTO_E_QUEUE_FULL) {
        metrics_limit(LIMIT_QUEUE);
        send_error(n, s, cmd->id, rc, queue_full_text);
    } else if (cmd->kind == PROTO_CMD_JOIN) {
        send_error(n, s, cmd->id, rc, why);
    } else {
        refuse(n, s, cmd->id, rc, why);
    }
}

static void handle_message(struct net *n, struct session *s)
{
    struct proto_command cmd;
    struct proto_error err;
    if (s->draining)
        return; /* being closed: what it still sent is dropped */
    int allowed = take_token(s);
    int ok = !s->rx_binary &&
             proto_command_parse(s->rx, s->rx_len, lobby_room_limits(s->m.room), &cmd, &err) == 0;
    if (!allowed) { /* parsed only to answer with the command's id */
        metrics_limit(LIMIT_RATE);
        refuse(n, s,
               ok             ? cmd.id
               : s->rx_binary ? ""
                              : err.id,
               PROTO_E_RATE_LIMITED,
               "too many commands; slow down (see limits.rate in the welcome)");
        return;
    }
    if (s->rx_binary) {
        refuse(n, s, "", PROTO_E_BAD_JSON, "binary frames are not commands; send JSON text");
        return;
    }
    if (!ok) {
        refuse(n, s, err.id, err.code, err.message);
        return;
    }
    if (cmd.kind == PROTO_CMD_JOIN && s->owed > 0) {
        s->join = cmd; /* waits for the replies the client is owed */
        s->has_join = 1;
        return;
    }
    submit(n, s, &cmd);
}

/* Appends a fragment; a message past max_message closes with 1009. */
static int receive(struct net *n, struct session *s, const void *in, size_t len)
{
    if (s->rx_len == 0)
        s->rx_binary = lws_frame_is_binary(s->wsi);
    if (s->closing)
        return 0; /* closing: the rest of what it sent is dropped */
    if (len > n->cfg.max_message - s->rx_len) {
        /* Close from WRITEABLE, which sends the 1009 close frame even when
         * more frames of the burst are still in lws' read buffer. */
        metrics_limit(LIMIT_MESSAGE_SIZE);
        close_session(s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE);
        return 0;
    }
    memcpy(s->rx + s->rx_len, in, len);
    s->rx_len += len;
    if (lws_is_final_fragment(s->wsi) && !lws_remaining_packet_payload(s->wsi)) {
        handle_message(n, s);
        s->rx_len = 0;
        flow(s);
    }
    return 0;
}

/* ---- writing -------------------------------------------------------------- */

static int write_frame(struct session *s, struct frame *f)
{
    int w = lws_write(s->wsi, f->data + f->pre, f->len, LWS_WRITE_BINARY);
    if (w < (int)f->len)
        return -1;
    if (s->last_seq && f->seq > s->last_seq + 1)
        atomic_fetch_add_explicit(&g_metrics.snapshots_skipped, f->seq - s->last_seq - 1,
                                  memory_order_relaxed);
    s->last_seq = f->seq;
    s->last_frame_ns = clock_mono_ns();
    atomic_fetch_add_explicit(&g_metrics.snapshots_sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_metrics.bytes_sent, f->len, memory_order_relaxed);
    return 0;
}

/* The frame to send the session next, or NULL. */
static struct frame *frame_for(const struct session *s)
{
    if (!s->streaming || !s->m.room)
        return NULL;
    struct frame *f = *lobby_room_frame(s->m.room);
    return f && f->seq != s->last_seq ? f : NULL;
}

/* One message per WRITEABLE: replies first, then the latest frame. */
static int on_writeable(struct net *n, struct session *s)
{
    (void)n;
    if (s->draining && !s->owed && !s->out_count)
        s->closing = s->draining;
    if (s->closing) {
        static const char too_large[] = "message too large";
        int big = s->closing == LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE;
        lws_close_reason(s->wsi, (enum lws_close_status)s->closing,
                         big ? (unsigned char *)too_large : NULL, big ? sizeof too_large - 1 : 0);
        return -1;
    }
    if (s->out_count) {
        struct outmsg *m = &s->outq[s->out_head];
        int w = lws_write(s->wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_TEXT);
        free(m->buf);
        s->out_head = (s->out_head + 1) % OUTQ_LEN;
        s->out_count--;
        if (w < (int)m->len)
            return -1;
        flow(s);
    } else {
        /* The frame announced once per snapshot: no lock per client. */
        struct frame *f = frame_for(s);
        if (f && write_frame(s, f) < 0)
            return -1;
    }
    if (s->out_count || frame_for(s))
        lws_callback_on_writable(s->wsi);
    return 0;
}

/* ---- wake-ups from other threads ---------------------------------------- */

static void send_roster(struct net *n, struct session *s)
{
    int len = lobby_roster(s->m.room, n->text, TEXT_MAX);
    if (len > 0)
        send_text(s, n->text, (size_t)len);
}

static void route_replies(struct net *n, struct room *room)
{
    struct room_reply *rep = room_take_replies(room);
    while (rep) {
        struct room_reply *next = rep->next;
        struct session *s = idmap_get(&n->sessions, rep->client);
        if (s) {
            if (s->owed)
                s->owed--;
            send_text(s, rep->text, rep->len);
            if (rep->welcome) { /* a join's welcome: the new room's stream starts */
                s->streaming = 1;
                s->last_seq = 0;
                s->last_frame_ns = clock_mono_ns();
                send_roster(n, s);
            }
            if (s->draining && s->owed == 0)
                lws_callback_on_writable(s->wsi);
            if (s->has_join && s->owed == 0) {
                s->has_join = 0;
                if (!s->closing && !s->draining)
                    submit(n, s, &s->join);
            }
            flow(s);
        }
        free(rep);
        rep = next;
    }
}

/* A new frame of lr: every member that lacks it is asked to write; one
 * that has gone without frames for stale_timeout is closed. */
static void announce_frame(struct net *n, struct lobby_room *lr)
{
    struct frame *f = room_latest(lobby_room_room(lr));
    struct frame **announced = lobby_room_frame(lr);
    if (!f || f == *announced) {
        frame_release(f);
        return;
    }
    frame_release(*announced);
    *announced = f; /* keeps the reference room_latest took */
    int64_t now = clock_mono_ns(), stale = (int64_t)(n->cfg.stale_timeout * 1e9);
    for (struct lobby_member *m = lobby_room_members(lr); m; m = m->next) {
        struct session *s = m->session;
        if (s->closing || !s->streaming)
            continue;
        if (now - s->last_frame_ns > stale) {
            metrics_limit(LIMIT_STALE);
            s->closing = LWS_CLOSE_STATUS_POLICY_VIOLATION;
            lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
            continue;
        }
        lws_callback_on_writable(s->wsi);
    }
}

/* Everything the rooms produced since the last wake-up. */
static void service_rooms(struct net *n)
{
    for (size_t i = 0; i < lobby_count(n->lobby); i++) {
        struct lobby_room *lr = lobby_at(n->lobby, i);
        if (room_take_dirty(lobby_room_room(lr))) {
            route_replies(n, lobby_room_room(lr));
            announce_frame(n, lr);
        }
    }
    for (size_t i = 0; i < lobby_count(n->lobby); i++) {
        struct lobby_room *lr = lobby_at(n->lobby, i);
        if (!lobby_room_take_roster_change(lr))
            continue;
        int len = lobby_roster(lr, n->text, TEXT_MAX);
        for (struct lobby_member *m = lobby_room_members(lr); len > 0 && m; m = m->next) {
            struct session *s = m->session;
            if (s->streaming)
                send_text(s, n->text, (size_t)len);
        }
    }
    int64_t now = clock_mono_ns();
    if (now - n->housekept_ns >= HOUSEKEEP_NS) {
        n->housekept_ns = now;
        lobby_housekeep(n->lobby, now);
    }
}

static void close_all(struct net *n)
{
    size_t cursor = 0;
    for (struct session *s; (s = idmap_next(&n->sessions, &cursor)) != NULL;) {
        if (!s->closing) {
            s->closing = LWS_CLOSE_STATUS_GOINGAWAY;
            lws_callback_on_writable(s->wsi);
        }
    }
}

/* ---- session life cycle -------------------------------------------------- */

/* Keeps at most about two snapshots queued in the kernel per client: a
 * lagging client then shows as choked within a frame or two and is handed
 * the newest frame instead of reading seconds-old ones from its buffer. */
static void limit_send_buffer(const struct net *n, struct lws *wsi)
{
    int fd = lws_get_socket_fd(wsi);
    int bytes = (int)(2 * n->cfg.max_frame < 65536 ? 65536 : 2 * n->cfg.max_frame);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

/* The peer's address as 16 bytes (IPv4 mapped into IPv6); 0 or -1. */
static int peer_address(struct lws *wsi, unsigned char *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = lws_get_socket_fd(wsi);
    memset(out, 0, 16);
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
        return 0;
    }
    if (ss.ss_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return 0;
    }
    return -1;
}

/* 1 for 127.0.0.0/8 (plain or mapped) and ::1. */
static int is_loopback(const unsigned char *a)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return (memcmp(a, mapped, 12) == 0 && a[12] == 127) || memcmp(a, one, 16) == 0;
}

static int session_open(struct net *n, struct session *s, struct lws *wsi)
{
    memset(s, 0, sizeof *s);
    s->wsi = wsi;
    if (atomic_load(&n->stop))
        return -1;
    if (idmap_count(&n->sessions) >= n->cfg.max_clients) {
        metrics_limit(LIMIT_CONNECTIONS);
        return -1;
    }
    int have_addr = peer_address(wsi, s->addr) == 0;
    if (have_addr && ipcount_take(&n->ips, s->addr) < 0) {
        metrics_limit(LIMIT_CONNECTIONS_IP);
        return -1;
    }
    s->counted = have_addr;
    s->rx = malloc(n->cfg.max_message);
    if (!s->rx) {
        if (s->counted)
            ipcount_release(&n->ips, s->addr);
        s->counted = 0;
        return -1;
    }
    s->id = ++n->next_id;
    s->last_frame_ns = clock_mono_ns();
    bucket_init(&s->bucket, n->cfg.rate, n->cfg.burst, s->last_frame_ns);
    limit_send_buffer(n, wsi);
    idmap_put(&n->sessions, s->id, s);
    atomic_fetch_add_explicit(&g_metrics.clients, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_metrics.connections_total, 1, memory_order_relaxed);
    s->m.client = s->id;
    s->m.session = s;
    s->m.loopback = have_addr && is_loopback(s->addr);
    lobby_enter(n->lobby, &s->m);
    int len = lobby_welcome(&s->m, n->text, TEXT_MAX);
    if (len > 0)
        send_text(s, n->text, (size_t)len);
    s->streaming = 1;
    return 0;
}

static void session_close(struct net *n, struct session *s)
{
    if (!s->id)
        return;
    lobby_leave(n->lobby, &s->m, false, clock_mono_ns());
    idmap_del(&n->sessions, s->id);
    if (s->counted)
        ipcount_release(&n->ips, s->addr);
    s->counted = 0;
    while (s->out_count) {
        free(s->outq[s->out_head].buf);
        s->out_head = (s->out_head + 1) % OUTQ_LEN;
        s->out_count--;
    }
    free(s->rx);
    s->rx = NULL;
    s->id = 0;
    atomic_fetch_sub_explicit(&g_metrics.clients, 1, memory_order_relaxed);
}

/* Only /ws upgrades to WebSocket. */
static int ws_path_ok(struct lws *wsi)
{
    char uri[64];
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0)
        return 0;
    return strcmp(uri, "/ws") == 0;
}

/* With --origins set, a browser (it sends Origin) must come from one of
 * them; clients without an Origin header are not browsers and pass. */
static int origin_ok(const struct net *n, struct lws *wsi)
{
    char origin[256];
    if (!n->origins[0] || lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
        return 1;
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return 0;
    size_t len = strlen(origin);
    for (const char *p = n->origins; *p;) {
        size_t item = strcspn(p, ",");
        while (item && *p == ' ') { /* tolerate "a, b" */
            p++;
            item--;
        }
        if (item == len && memcmp(p, origin, len) == 0)
            return 1;
        p += item;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int callback_ws(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                       size_t len)
{
    struct net *n = lws_context_user(lws_get_context(wsi));
    struct session *s = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        if (!ws_path_ok(wsi))
            return 1;
        if (!origin_ok(n, wsi)) {
            metrics_limit(LIMIT_ORIGIN);
            return 1;
        }
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        return session_open(n, s, wsi);
    case LWS_CALLBACK_RECEIVE:
        return receive(n, s, in, len);
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return on_writeable(n, s);
    case LWS_CALLBACK_CLOSED:
        session_close(n, s);
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (!n)
            return 0;
        service_rooms(n);
        if (atomic_load(&n->stop))
            close_all(n);
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- HTTP: /healthz and /metrics ------------------------------------------ */

struct http_session {
    char *body;
    size_t len;
};

static int render_health(struct net *n, char *buf, size_t cap)
{
    struct room_info info;
    room_info(lobby_room_room(lobby_at(n->lobby, 0)), &info);
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t,
                   "{\"status\":\"ok\",\"tick\":%llu,\"clients\":%zu,\"boids\":%u,\"rooms\":%zu}\n",
                   (unsigned long long)info.tick, idmap_count(&n->sessions), info.boids,
                   lobby_count(n->lobby));
    return textbuf_finish(&t);
}

/* The rooms in the order /api/rooms lists them: default first, then by
 * name. Returns how many, or PROTO_E_NOSPACE past cap. */
static int rooms_in_order(const struct lobby *l, struct lobby_room **order, size_t cap)
{
    size_t n = lobby_count(l);
    if (n > cap)
        return PROTO_E_NOSPACE;
    for (size_t i = 0; i < n; i++) {
        struct lobby_room *lr = lobby_at(l, i);
        struct lobby_room_summary a, b;
        lobby_room_summary(lr, &a);
        size_t j = i;
        for (; j > 1; j--) {
            lobby_room_summary(order[j - 1], &b);
            if (strcmp(b.name, a.name) <= 0)
                break;
            order[j] = order[j - 1];
        }
        order[j] = lr;
    }
    return (int)n;
}

static void render_room(struct textbuf *t, struct lobby_room *lr, bool first)
{
    struct lobby_room_summary sum;
    struct room_info info;
    lobby_room_summary(lr, &sum);
    room_info(lobby_room_room(lr), &info);
    textbuf_printf(t,
                   "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":%u,\"admins\":%u,"
                   "\"viewers\":%u,\"boids\":%u,\"tick\":%llu,\"tick_hz\":%g,\"snapshot_hz\":%g,"
                   "\"password\":%s,\"teams\":%u,\"late_p99_ms\":%.3f}",
                   first ? "" : ",", sum.name, proto_mode_name(sum.mode), sum.players, sum.admins,
                   sum.viewers, info.boids, (unsigned long long)info.tick, info.tick_hz,
                   info.snapshot_hz, sum.has_password ? "true" : "false", sum.teams,
                   info.late_p99_ms);
}

/* GET /api/rooms (PROTOCOL.md §10). */
static int render_rooms(const struct lobby *l, char *buf, size_t cap)
{
    struct lobby_room *order[1024]; /* max-rooms is at most 1024 */
    int n = rooms_in_order(l, order, sizeof order / sizeof order[0]);
    if (n < 0)
        return n;
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t, "{\"rooms\":[");
    for (int i = 0; i < n; i++)
        render_room(&t, order[i], i == 0);
    textbuf_printf(&t, "],\"max_rooms\":%u,\"create\":%s}\n", lobby_max_rooms(l),
                   lobby_can_create(l) ? "true" : "false");
    return textbuf_finish(&t);
}

static int http_begin(struct net *n, struct http_session *h, struct lws *wsi)
{
    char uri[64];
    const char *type = "application/json";
    size_t cap = API_MAX;
    h->body = malloc(LWS_PRE + cap);
    if (!h->body || lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0)
        return -1;
    int len;
    if (!strcmp(uri, "/healthz")) {
        len = render_health(n, h->body + LWS_PRE, cap);
    } else if (!strcmp(uri, "/api/rooms")) {
        len = render_rooms(n->lobby, h->body + LWS_PRE, cap);
    } else if (!strcmp(uri, "/metrics")) {
        type = "text/plain; version=0.0.4";
        len = metrics_render(h->body + LWS_PRE, cap);
    } else {
        return lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL) ? -1 : 0;
    }
    h->len = len > 0 ? (size_t)len : 0;
    unsigned char hdr[LWS_PRE + 512], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, type, h->len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int callback_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len)
{
    struct net *n = lws_context_user(lws_get_context(wsi));
    struct http_session *h = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_begin(n, h, wsi);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (!h->body)
            return -1;
        if (lws_write(wsi, (unsigned char *)h->body + LWS_PRE, h->len, LWS_WRITE_HTTP_FINAL) <
            (int)h->len)
            return -1;
        free(h->body);
        h->body = NULL;
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    case LWS_CALLBACK_CLOSED_HTTP:
        free(h->body);
        h->body = NULL;
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- context -------------------------------------------------------------- */

static struct lws_protocols protocols[] = {
    {"flock.v1", callback_ws, sizeof(struct session), 4096, 0, NULL, 0},
    {"flockd-http", callback_http, sizeof(struct http_session), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static const struct lws_protocol_vhost_options pvo_default = {NULL, NULL, "default", "1"};
static const struct lws_protocol_vhost_options pvo = {NULL, &pvo_default, "flock.v1", ""};

static const struct lws_http_mount mount_metrics = {
    .mountpoint = "/metrics",
    .origin = "flockd-http",
    .origin_protocol = LWSMPRO_CALLBACK,
    .mountpoint_len = 8,
};
static const struct lws_http_mount mount_rooms = {
    .mount_next = &mount_metrics,
    .mountpoint = "/api/rooms",
    .origin = "flockd-http",
    .origin_protocol = LWSMPRO_CALLBACK,
    .mountpoint_len = 10,
};
static const struct lws_http_mount mount_health = {
    .mount_next = &mount_rooms,
    .mountpoint = "/healthz",
    .origin = "flockd-http",
    .origin_protocol = LWSMPRO_CALLBACK,
    .mountpoint_len = 8,
};

struct net *net_create(const struct net_config *cfg, struct lobby *lobby, const char **err)
{
    struct net *n = calloc(1, sizeof *n);
    if (!n) {
        *err = "out of memory";
        return NULL;
    }
    n->cfg = *cfg;
    n->lobby = lobby;
    snprintf(n->host, sizeof n->host, "%s", cfg->host ? cfg->host : "");
    snprintf(n->web_root, sizeof n->web_root, "%s", cfg->web_root ? cfg->web_root : ".");
    n->text = malloc(TEXT_MAX);
    snprintf(n->origins, sizeof n->origins, "%s", cfg->origins ? cfg->origins : "");
    n->retry = (lws_retry_bo_t){
        .secs_since_valid_ping = (uint16_t)cfg->ping_interval,
        .secs_since_valid_hangup = (uint16_t)cfg->idle_timeout,
    };
    if (idmap_init(&n->sessions, cfg->max_clients) < 0 ||
        ipcount_init(&n->ips, cfg->max_clients, cfg->max_per_ip) < 0 || !n->text) {
        *err = "out of memory";
        net_destroy(n);
        return NULL;
    }
    /* Static files at "/", with the two dynamic endpoints chained before. */
    static struct lws_http_mount mount_root;
    mount_root = (struct lws_http_mount){
        .mount_next = &mount_health,
        .mountpoint = "/",
        .origin = n->web_root,
        .def = "index.html",
        .origin_protocol = LWSMPRO_FILE,
        .mountpoint_len = 1,
    };
    protocols[0].rx_buffer_size = 4096;
    protocols[0].tx_packet_size = cfg->max_frame + 64;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = cfg->port;
    info.iface = (n->host[0] && strcmp(n->host, "0.0.0.0") != 0) ? n->host : NULL;
    info.protocols = protocols;
    info.pvo = &pvo;
    info.mounts = &mount_root;
    info.user = n;
    info.retry_and_idle_policy = &n->retry;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 |
                   LWS_SERVER_OPTION_HTTP_HEADERS_SECURITY_BEST_PRACTICES_ENFORCE;
    info.vhost_name = "flockd";
    info.timeout_secs = 10;
    n->ctx = lws_create_context(&info);
    if (!n->ctx) {
        *err = "cannot create the server (is the port in use?)";
        net_destroy(n);
        return NULL;
    }
    n->vhost = lws_get_vhost_by_name(n->ctx, "flockd");
    n->port = n->vhost ? lws_get_vhost_listen_port(n->vhost) : cfg->port;
    return n;
}

int net_port(const struct net *n)
{
    return n->port;
}

void net_run(struct net *n)
{
    int64_t stop_at = 0;
    for (;;) {
        if (lws_service(n->ctx, 0) < 0)
            break;
        if (atomic_load(&n->stop)) {
            /* Give clients up to 2 s to receive their 1001 close. */
            if (!stop_at)
                stop_at = clock_mono_ns() + 2000000000LL;
            if (idmap_count(&n->sessions) == 0 || clock_mono_ns() > stop_at)
                break;
        }
    }
}

void net_stop(struct net *n)
{
    atomic_store(&n->stop, 1);
    lws_cancel_service(n->ctx);
}

void net_wake(void *arg)
{
    struct net *n = arg;
    if (n && n->ctx)
        lws_cancel_service(n->ctx);
}

void net_destroy(struct net *n)
{
    if (!n)
        return;
    if (n->ctx)
        lws_context_destroy(n->ctx);
    idmap_free(&n->sessions);
    ipcount_free(&n->ips);
    free(n->text);
    free(n);
}
