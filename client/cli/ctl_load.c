/*
 * ctl_load.c — `flockctl load`: many concurrent viewer connections from one
 * process, to measure what flockd delivers to each of them.
 *
 * libwebsockets' client parses incoming payload byte by byte, which caps one
 * process at about a thousand busy viewers; this subcommand therefore speaks
 * WebSocket itself (ws_wire.h) over non-blocking sockets. A few worker
 * threads (--threads) each own a slice of the connections and one epoll
 * set. Only the first 44 bytes of a version 1 or 2 snapshot are looked at
 * (tick, epoch, server_time_us and boid count, laid out alike in both
 * versions, and for version 2 the frame kind); the rest is discarded in
 * the kernel with recv(MSG_TRUNC), one call per snapshot, so a viewer
 * costs two small system calls per frame and no copy (read_some()). A
 * version 3 frame (a view's: a few kilobytes) is read whole and walked
 * with proto_v3_scan() for its parts and boids; with --decode every
 * client reads every frame whole and decodes it with a decoder of its own
 * (ctl_snap.h). Every client offers the versions from --protocol down
 * (flock.v3, flock.v2, flock.v1) and checks its snapshots against the
 * version its welcome names.
 *
 * Over wss:// each connection does a full TLS handshake of its own (no
 * session resumption: what a thousand new browsers cost the server) with
 * OpenSSL on the same non-blocking sockets; everything it reads is then
 * decrypted, so no payload is discarded in the kernel.
 *
 * Run: a connect phase (staggered: at most MAX_PENDING handshakes in flight
 * and --connect-rate new connections per millisecond; a failed attempt is
 * retried up to MAX_ATTEMPTS times), then --seconds of measurement with
 * every connection open, then a close frame to each. Only the measurement
 * window counts: frames, bytes, per-client rates, ages, skipped snapshots.
 *
 * With --room (or another join flag) each client sends the join after its
 * first welcome (ctl_join.h) and counts as connected, and its snapshots as
 * its own, from the room's welcome on; the join is part of the connect
 * phase (in flight and timed out like a handshake), so the measurement
 * starts only once every client is in the room. A refused join is final:
 * the client is closed and counted in failures and join_failures.
 *
 * With --view or --views random (ctl_view.h) each client asks for its
 * view (random: a place of its own within the room's world) and counts as
 * connected once the view's ack came; a refused view is final like a
 * refused join (view_failures). Without --room the view goes in the
 * upgrade request's URL (PROTOCOL.md 12.4: no frame of the whole room
 * first), a random one once some client's welcome said the world's size
 * (the first clients send theirs after the welcome); in a joined room it
 * is sent after the join. With --decode a client that is in its room
 * asks for a key frame (keyframe) and decodes from the frame after its ack
 * on (a key frame: the frames before it may be deltas on frames it
 * skipped); after a refused frame it asks again and decodes again from
 * the next ack on.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_load.h"

#include "bytes.h"
#include "ctl_commands.h"
#include "proto_reply.h"
#include "proto_snapshot.h"
#include "proto_v2.h"
#include "proto_v3.h"
#include "ws_wire.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define READ_BUF      (256 * 1024)
#define HEAD_READ     64                  /* a frame header plus a snapshot header */
#define FRAME_KEEP    (1u << 20)          /* a frame buffer larger than this is freed after use */
#define FRAME_MAX     (64u << 20)         /* a larger frame is a bad frame */
#define HS_BUF        4096                /* response head of the upgrade */
#define TEXT_MAX      PROTO_WELCOME_BYTES /* welcome text kept for parsing: the largest */
#define MAX_PENDING   256                 /* connects and handshakes in flight, all workers */
#define MAX_ATTEMPTS  3
#define RETRY_DELAY_S 0.25
#define SCAN_S        0.05 /* how often timeouts and retries are checked */
#define EVENTS        512
#define PHASE_CONNECT 0
#define PHASE_MEASURE 1
#define PHASE_STOP    2

/* Keeps the first error: "what" or "what: detail", cut to fit. */
static void note_error(struct worker *w, const char *what, const char *detail)
{
    if (w->first_error[0])
        return;
    int n = snprintf(w->first_error, sizeof w->first_error, "%s%s%s", what, detail ? ": " : "",
                     detail ? detail : "");
    if (n < 0)
        w->first_error[0] = '\0';
}

/* ---- the byte stream: the socket, or TLS over it ---------------------------- */

/* What read() would return for c, through TLS when c has it: a length, 0
 * at the end, or -1 with errno (EAGAIN: nothing more until the socket is
 * readable, or writable when TLS wants to write). */
static ssize_t conn_read(struct conn *c, void *buf, size_t n)
{
    if (!c->ssl)
        return read(c->fd, buf, n);
    int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(c->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN : EIO;
    return -1;
}

/* What write() would return for c, through TLS when c has it. */
static ssize_t conn_write(struct conn *c, const void *buf, size_t n)
{
    if (!c->ssl)
        return write(c->fd, buf, n);
    int r = SSL_write(c->ssl, buf, (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(c->ssl, r);
    ERR_clear_error();
    errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN : EIO;
    return -1;
}

static uint64_t next_random(struct worker *w)
{
    /* xorshift64*: keys and masks need to vary, not to be secret. */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 0x2545F4914F6CDD1DULL;
}

/* ---- frames and messages -------------------------------------------------- */

/* Best effort: a control frame of a few bytes, or the join early in a
 * connection, always fits a socket buffer that is being drained, and a
 * lost pong only matters after 30 s (a lost join times out and is tried
 * again). */
static void send_frame(struct conn *c, int opcode, const uint8_t *payload, size_t len)
{
    uint8_t frame[CTL_JOIN_TEXT_MAX + 16];
    size_t n =
        ws_client_frame(frame, sizeof frame, opcode, payload, len, (uint32_t)next_random(c->w));
    if (n && conn_write(c, frame, n) < 0)
        note_error(c->w, "write", strerror(errno));
}

/* True while c reads its frames whole: a version 3 client in its room,
 * or any with --decode. */
static bool whole_frames(const struct conn *c)
{
    return c->welcomed && (c->version == PROTO_V3_VERSION || c->w->ld->a->decode);
}

/* What load reads off a snapshot. */
struct shot {
    uint64_t tick, sent_us, boids;
    uint32_t epoch; /* version 3: the seq */
    uint32_t parts; /* version 3 */
    bool key;       /* a key frame; version 3: no delta part */
};

/* The snapshot c just read, if it is one of the version its welcome named:
 * version 1 of type 1, a version 2 key or delta frame (their first 44
 * bytes are alike), or a version 3 frame whose framing proto_v3_scan()
 * accepts (tick and time at the same offsets, the seq where the others
 * have the epoch). */
static bool read_shot(const struct conn *c, struct shot *s)
{
    const uint8_t *h = whole_frames(c) ? c->frame : c->snap;
    size_t n = whole_frames(c) ? c->frame_len : c->snap_have;
    if ((whole_frames(c) && c->frame_cut) || n < PROTO_SNAPSHOT_HEADER_SIZE || h[0] != 'F' ||
        h[1] != 'K' || h[2] != c->version)
        return false;
    *s = (struct shot){.tick = bytes_le_get(h + 8, 8),
                       .sent_us = bytes_le_get(h + 16, 8),
                       .epoch = (uint32_t)bytes_le_get(h + 32, 4),
                       .boids = bytes_le_get(h + 36, 4)};
    if (c->version == PROTO_V3_VERSION) {
        struct proto_v3_header vh;
        struct proto_v3_shape sh;
        if (proto_v3_scan(h, n, &vh, &sh))
            return false;
        s->boids = sh.boids;
        s->parts = sh.parts;
        s->key = sh.deltas == 0;
        return true;
    }
    s->key = c->version == PROTO_V2_VERSION && h[3] == PROTO_V2_KIND_KEY;
    if (c->version == PROTO_V2_VERSION)
        return s->key || h[3] == PROTO_V2_KIND_DELTA;
    return h[3] == PROTO_SNAPSHOT_TYPE;
}

/* The id of the keyframe command --decode sends: its ack names it. */
#define KEY_ID "key"

/* --decode: asks for a key frame (PROTOCOL.md §5.4), every part of the
 * first frame after the ack a key; c decodes nothing until then. */
static void ask_key(struct conn *c)
{
    static const char ask[] = "{\"cmd\":\"keyframe\",\"id\":\"" KEY_ID "\"}";
    send_frame(c, WS_OP_TEXT, (const uint8_t *)ask, sizeof ask - 1);
    c->key_asked = 1;
}

/* --decode: a text message once c is in its room: the ack of its keyframe
 * lets it decode again. */
static void on_key_reply(struct conn *c)
{
    cJSON *msg = cJSON_ParseWithLength(c->buf, c->buf_len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "id"));
    if (type && id && !strcmp(type, "ack") && !strcmp(id, KEY_ID))
        c->key_asked = 0;
    cJSON_Delete(msg);
}

/* --decode: c decodes its frame; a refusal is counted, and c asks for a
 * key frame (versions 2 and 3: their deltas name bases) and decodes
 * nothing until its ack. */
static void decode_frame(struct conn *c)
{
    struct worker *w = c->w;
    int rc = ctl_snap_decode(c->dec, c->frame, c->frame_len);
    if (rc == 0) {
        c->decoded = 1;
        return;
    }
    w->decode_failures++;
    if (!w->decode_error)
        w->decode_error = proto_status_name(rc);
    if (c->version != PROTO_VERSION)
        ask_key(c);
}

/* Snapshots missed before s: from the seq (version 3), else from tick gaps
 * within one epoch (a reset restarts the ticks). */
static uint64_t missed_before(const struct conn *c, const struct shot *s)
{
    if (!c->have_tick)
        return 0;
    if (c->version == PROTO_V3_VERSION) {
        uint32_t d = s->epoch - c->last_epoch;
        return d >= 1 && d < (1u << 31) ? d - 1 : 0;
    }
    if (s->epoch == c->last_epoch && c->ticks_per_snapshot &&
        s->tick > c->last_tick + c->ticks_per_snapshot)
        return (s->tick - c->last_tick) / c->ticks_per_snapshot - 1;
    return 0;
}

static void on_snapshot(struct conn *c)
{
    struct worker *w = c->w;
    struct shot s;
    if (!read_shot(c, &s)) {
        w->bad_frames++;
        return;
    }
    if (c->dec && !c->key_asked)
        decode_frame(c);
    if (w->measuring) {
        c->frames++;
        w->payload += c->payload;
        w->boids += s.boids;
        w->parts += s.parts;
        w->keys += s.key && c->version != PROTO_VERSION;
        c->skipped += missed_before(c, &s);
        uint64_t bin = w->now_us > s.sent_us ? (w->now_us - s.sent_us) / AGE_BIN_US : 0;
        w->age_bins[bin < AGE_BINS - 1 ? bin : AGE_BINS - 1]++;
        w->age_count++;
    }
    c->have_tick = 1;
    c->last_tick = s.tick;
    c->last_epoch = s.epoch;
}

/* Reads a welcome's rates and snapshot version into c; false if msg is
 * not a welcome. */
static bool read_welcome(struct conn *c, const cJSON *msg)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    if (!type || strcmp(type, "welcome"))
        return false;
    double tick_hz = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "tick_hz"));
    double snap_hz = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "snapshot_hz"));
    if (tick_hz > 0 && snap_hz > 0 && tick_hz / snap_hz < 1e6)
        c->ticks_per_snapshot = (uint32_t)ceil(tick_hz / snap_hz - 1e-9);
    double version = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "protocol"));
    c->version = version == PROTO_V3_VERSION   ? PROTO_V3_VERSION
                 : version == PROTO_V2_VERSION ? PROTO_V2_VERSION
                                               : PROTO_VERSION;
    const cJSON *world = cJSON_GetObjectItemCaseSensitive(msg, "world");
    double width = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(world, "width"));
    double height = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(world, "height"));
    if (width > 0 && height > 0 && width < 1e9 && height < 1e9 &&
        !(atomic_load(&c->w->ld->world_w) > 0)) {
        atomic_store(&c->w->ld->world_h, height);
        atomic_store(&c->w->ld->world_w, width); /* last: the pair is read after it */
    }
    if (c->dec)
        ctl_snap_welcome(c->dec, msg);
    return true;
}

/* c is in the room it measures: connected, its attempt settled. With
 * --decode it asks for the key frame it decodes from. */
static void settle_welcomed(struct conn *c)
{
    c->welcomed = 1;
    c->w->connected++;
    c->w->settled++;
    c->w->pending--;
    if (c->dec && c->version != PROTO_VERSION)
        ask_key(c);
}

/* c is in its room (msg: the room's welcome): the view goes out, if there
 * is one, with a new deadline; else c is settled. */
static void in_room(struct conn *c, const cJSON *msg)
{
    const struct ctl_args *a = c->w->ld->a;
    if (!a->view) {
        settle_welcomed(c);
        return;
    }
    if (c->url_view) { /* its reply comes next */
        c->view_out = 1;
        c->deadline = ctl_mono_s() + a->timeout;
        return;
    }
    memcpy(c->view, a->view_args, sizeof c->view);
    if (a->random_views) {
        const cJSON *world = cJSON_GetObjectItemCaseSensitive(msg, "world");
        double width = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(world, "width"));
        double height = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(world, "height"));
        double u = (double)(next_random(c->w) >> 11) * 0x1p-53;
        double v = (double)(next_random(c->w) >> 11) * 0x1p-53;
        ctl_view_random(a, width > 0 ? width : 0, height > 0 ? height : 0, u, v, c->view);
    }
    char text[CTL_VIEW_TEXT_MAX];
    int n = ctl_view_text(a, c->view, text, sizeof text);
    c->view_out = 1;
    c->deadline = ctl_mono_s() + a->timeout;
    if (n > 0)
        send_frame(c, WS_OP_TEXT, (const uint8_t *)text, (size_t)n);
}

/* The join goes out; the connection stays in flight until the room's
 * welcome, with a new deadline. */
static void send_join(struct conn *c)
{
    const struct load *ld = c->w->ld;
    c->join.phase = CTL_JOIN_SENT;
    c->deadline = ctl_mono_s() + ld->a->timeout;
    send_frame(c, WS_OP_TEXT, (const uint8_t *)ld->join, ld->join_len);
}

/* The server refused the join or the view (*count, *first: which): final,
 * the client is closed (by feed(), once the parser returns) and not tried
 * again. */
static void refused(struct conn *c, const char *what, const char *why, int *count, char *first,
                    size_t cap)
{
    static const uint8_t normal[2] = {0x03, 0xE8}; /* 1000 */
    struct worker *w = c->w;
    if (!first[0])
        snprintf(first, cap, "%s", why);
    note_error(w, what, why);
    send_frame(c, WS_OP_CLOSE, normal, sizeof normal);
    c->state = C_FAILED;
    c->closing = 1;
    (*count)++;
    w->failures++;
    w->settled++;
    w->pending--;
}

/* The reply to c's view: its ack settles c, a refusal ends it. */
static void on_view_reply(struct conn *c)
{
    struct worker *w = c->w;
    char why[240];
    int rc = ctl_view_feed(c->buf, c->buf_len, &c->plan, why, sizeof why);
    c->view_out = rc == 0;
    if (rc > 0)
        settle_welcomed(c);
    else if (rc < 0)
        refused(c, "view refused", why, &w->view_failures, w->view_error, sizeof w->view_error);
}

/* A whole text message before c is in its room: the first welcome (then
 * the join or the view goes out, if there is one), a message of the join,
 * or the view's reply. */
static void on_text(struct conn *c)
{
    struct worker *w = c->w;
    cJSON *msg = cJSON_ParseWithLength(c->buf, c->buf_len);
    char why[240];
    int rc = c->greeted && !c->view_out
                 ? ctl_join_feed(&c->join, c->buf, c->buf_len, why, sizeof why)
                 : 0;
    if (c->view_out) {
        on_view_reply(c);
    } else if (!c->greeted && !read_welcome(c, msg)) {
        note_error(w, "the first message was not a welcome", NULL);
        c->closing = 1;
    } else if (!c->greeted) {
        c->greeted = 1;
        if (w->ld->join_len)
            send_join(c);
        else
            in_room(c, msg);
    } else if (rc > 0) {
        read_welcome(c, msg);
        in_room(c, msg);
    } else if (rc < 0) {
        refused(c, "join refused", why, &w->join_failures, w->join_error, sizeof w->join_error);
    }
    cJSON_Delete(msg);
    free(c->buf);
    c->buf = NULL;
    c->buf_len = 0;
}

/* Appends a slice of a frame read whole; past FRAME_MAX (or out of
 * memory) the frame is cut, and then is no snapshot. */
static void keep_slice(struct conn *c, const uint8_t *p, size_t n)
{
    if (!n || c->frame_cut)
        return;
    if (!p || n > FRAME_MAX - c->frame_len) {
        c->frame_cut = 1;
        return;
    }
    if (c->frame_len + n > c->frame_cap) {
        uint32_t cap = c->frame_cap ? c->frame_cap : 4096;
        while (cap < c->frame_len + n)
            cap *= 2;
        uint8_t *grown = realloc(c->frame, cap);
        if (!grown) {
            c->frame_cut = 1;
            return;
        }
        c->frame = grown;
        c->frame_cap = cap;
    }
    memcpy(c->frame + c->frame_len, p, n);
    c->frame_len += (uint32_t)n;
}

/* A frame read whole is in: counted, then its buffer made ready for the
 * next (and freed if a large one grew it). */
static void end_whole_frame(struct conn *c)
{
    on_snapshot(c);
    c->frame_len = 0;
    c->frame_cut = 0;
    c->payload = 0;
    if (c->frame_cap > FRAME_KEEP) {
        free(c->frame);
        c->frame = NULL;
        c->frame_cap = 0;
    }
}

/* A slice of a snapshot: kept whole, or only its header kept. */
static void on_binary(struct conn *c, const uint8_t *p, size_t n, int last)
{
    if (whole_frames(c)) {
        keep_slice(c, p, n);
        c->payload += n;
        if (last)
            end_whole_frame(c);
        return;
    }
    size_t want = PROTO_SNAPSHOT_HEADER_SIZE - c->snap_have;
    size_t k = n < want ? n : want;
    if (!p || !k)
        k = 0;
    else
        memcpy(c->snap + c->snap_have, p, k);
    c->snap_have = (uint8_t)(c->snap_have + k);
    c->payload += n;
    if (last) {
        if (c->welcomed) /* not the frames of a room it is leaving */
            on_snapshot(c);
        c->snap_have = 0;
        c->payload = 0;
    }
}

static void on_data(void *user, int opcode, const uint8_t *p, size_t n, int last)
{
    struct conn *c = user;
    if (c->closing)
        return;
    if (opcode == WS_OP_BINARY) {
        on_binary(c, p, n, last);
        return;
    }
    if (c->welcomed && !c->key_asked)
        return; /* replies to nothing we wait for; ignore */
    if (!c->buf)
        c->buf = malloc(TEXT_MAX);
    size_t room = c->buf ? TEXT_MAX - c->buf_len : 0, k = n < room ? n : room;
    if (k) {
        memcpy(c->buf + c->buf_len, p, k);
        c->buf_len += (uint32_t)k;
    }
    if (!last)
        return;
    if (!c->welcomed) {
        on_text(c);
        return;
    }
    on_key_reply(c);
    free(c->buf);
    c->buf = NULL;
    c->buf_len = 0;
}

static void on_control(void *user, int opcode, const uint8_t *p, size_t n)
{
    struct conn *c = user;
    if (opcode == WS_OP_PING) {
        send_frame(c, WS_OP_PONG, p, n);
    } else if (opcode == WS_OP_CLOSE) {
        char why[32];
        snprintf(why, sizeof why, "%u", n >= 2 ? (unsigned)p[0] << 8 | p[1] : 1005u);
        note_error(c->w, "the server closed a connection with", why);
        send_frame(c, WS_OP_CLOSE, p, n >= 2 ? 2 : 0);
        c->closing = 1;
    }
}

static const struct ws_rx_ops rx_ops = {on_data, on_control};

/* ---- connection life cycle ------------------------------------------------ */

static void close_fd(struct conn *c)
{
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0) {
        epoll_ctl(c->w->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    free(c->buf);
    c->buf = NULL;
    c->buf_len = 0;
}

/* An attempt failed before the welcome: retry later or give up. */
static void attempt_failed(struct conn *c, const char *why, const char *detail)
{
    struct worker *w = c->w;
    close_fd(c);
    w->pending--;
    if (c->attempts < MAX_ATTEMPTS && !ctl_stop) {
        c->state = C_RETRY;
        c->deadline = ctl_mono_s() + RETRY_DELAY_S * c->attempts;
        w->retries++;
        return;
    }
    note_error(w, why, detail);
    c->state = C_FAILED;
    w->failures++;
    w->settled++;
}

/* An open, welcomed connection ended (or one whose join was refused is
 * closed). */
static void conn_lost(struct conn *c, const char *why)
{
    if (c->state == C_FAILED) {
        close_fd(c);
        return;
    }
    if (!c->welcomed) {
        attempt_failed(c, why, NULL);
        return;
    }
    close_fd(c);
    c->state = C_CLOSED;
    if (c->w->measuring) {
        c->w->dropped++;
        note_error(c->w, why, NULL);
    }
}

static int arm(struct conn *c, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (c->w->ld->a->read_delay_ms > 0 && (events & EPOLLIN))
        ev.events |= EPOLLONESHOT;
    return epoll_ctl(c->w->ep, op, c->fd, &ev);
}

static void start_connect(struct worker *w, struct conn *c)
{
    const struct load *ld = w->ld;
    c->attempts++;
    c->greeted = 0;
    c->join = (struct ctl_join_wait){0};
    c->rx = (struct ws_rx){0};
    c->snap_have = 0;
    c->payload = 0;
    c->frame_len = 0;
    c->frame_cut = c->view_out = c->key_asked = 0;
    w->pending++;
    c->fd = socket(ld->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        attempt_failed(c, "socket", strerror(errno));
        return;
    }
    int one = 1, rcvbuf = ld->a->rcvbuf;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    socklen_t len = sizeof rcvbuf;
    if ((rcvbuf && setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf)) ||
        getsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len)) {
        attempt_failed(c, "SO_RCVBUF", strerror(errno));
        return;
    }
    w->rcvbuf = rcvbuf;
    c->state = C_CONNECTING;
    c->deadline = ctl_mono_s() + ld->a->timeout;
    if ((connect(c->fd, (const struct sockaddr *)&ld->addr, ld->addrlen) && errno != EINPROGRESS) ||
        arm(c, EPOLL_CTL_ADD, EPOLLOUT))
        attempt_failed(c, "connect", strerror(errno));
}

/* c's view, if it can go in the URL (no join; a random view once a
 * welcome said the world's size): the path with it into buf, true. */
static bool view_in_url(struct conn *c, char *buf, size_t cap)
{
    struct load *ld = c->w->ld;
    const struct ctl_args *a = ld->a;
    double width = atomic_load(&ld->world_w), height = atomic_load(&ld->world_h);
    c->url_view = 0;
    if (!a->view || ld->join_len || (a->random_views && !(width > 0 && height > 0)))
        return false;
    memcpy(c->view, a->view_args, sizeof c->view);
    if (a->random_views) {
        double u = (double)(next_random(c->w) >> 11) * 0x1p-53;
        double v = (double)(next_random(c->w) >> 11) * 0x1p-53;
        ctl_view_random(a, width, height, u, v, c->view);
    }
    c->url_view = ctl_view_path(a, c->view, ld->url.path, buf, cap) > 0;
    return c->url_view;
}

/* Sends the upgrade request and waits for its answer. */
static void send_upgrade(struct conn *c)
{
    const struct ctl_url *u = &c->w->ld->url;
    char with_view[sizeof u->path + 128];
    const char *path = view_in_url(c, with_view, sizeof with_view) ? with_view : u->path;
    uint8_t rnd[16];
    for (int i = 0; i < 16; i += 8) {
        uint64_t r = next_random(c->w);
        memcpy(rnd + i, &r, 8);
    }
    ws_make_key(rnd, c->key);
    char req[1024];
    int protocol = c->w->ld->a->protocol;
    const char *offer = protocol >= PROTO_V3_VERSION ? PROTO_V3_SUBPROTOCOL
                            ", " PROTO_V2_SUBPROTOCOL ", " PROTO_SUBPROTOCOL
                        : protocol >= PROTO_V2_VERSION ? PROTO_V2_SUBPROTOCOL ", " PROTO_SUBPROTOCOL
                                                       : PROTO_SUBPROTOCOL;
    int n = ws_request(req, sizeof req, u->host, u->port, path, c->key, offer);
    c->buf = malloc(HS_BUF);
    if (n < 0 || !c->buf || conn_write(c, req, (size_t)n) != n || arm(c, EPOLL_CTL_MOD, EPOLLIN)) {
        attempt_failed(c, "sending the upgrade request", strerror(errno));
        return;
    }
    c->state = C_HANDSHAKE;
}

/* One step of the TLS handshake; once it is done, the upgrade. */
static void tls_step(struct conn *c)
{
    int r = SSL_connect(c->ssl);
    if (r == 1) {
        send_upgrade(c);
        return;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (arm(c, EPOLL_CTL_MOD, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT))
            attempt_failed(c, "TLS handshake", strerror(errno));
        return;
    }
    char why[120];
    unsigned long code = ERR_get_error();
    ERR_error_string_n(code, why, sizeof why);
    ERR_clear_error();
    attempt_failed(c, "TLS handshake", code ? why : "connection closed");
}

/* The socket connected (or failed to): TLS first over wss://, then the
 * upgrade request. */
static void on_connected(struct conn *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
        attempt_failed(c, "connect", strerror(err ? err : errno));
        return;
    }
    const struct load *ld = c->w->ld;
    if (!ld->tls) {
        send_upgrade(c);
        return;
    }
    c->ssl = SSL_new(ld->tls);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd) || !SSL_set_tlsext_host_name(c->ssl, ld->url.host) ||
        (!ld->a->insecure && !SSL_set1_host(c->ssl, ld->url.host))) {
        attempt_failed(c, "TLS", "cannot set up the connection");
        return;
    }
    c->state = C_TLS;
    tls_step(c);
}

/* Feeds bytes that arrived on an open connection to the frame parser. */
static int feed(struct conn *c, const uint8_t *p, size_t n)
{
    if (ws_rx_feed(&c->rx, p, n, &rx_ops, c)) {
        conn_lost(c, "the server broke the WebSocket framing");
        return -1;
    }
    if (c->closing) {
        conn_lost(c, "closed by the server");
        return -1;
    }
    return 0;
}

/* Reads the 101 response; frames after its head go to the parser. */
static void on_handshake_readable(struct conn *c)
{
    ssize_t r = conn_read(c, c->buf + c->buf_len, HS_BUF - c->buf_len);
    if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        attempt_failed(c, "handshake", r ? strerror(errno) : "connection closed");
        return;
    }
    c->buf_len += (uint32_t)r;
    size_t head = ws_response_head_len(c->buf, c->buf_len);
    const char *why;
    if (!head) {
        if (c->buf_len == HS_BUF)
            attempt_failed(c, "handshake", "response head too long");
        return;
    }
    if (ws_check_response(c->buf, head, c->key, &why)) {
        attempt_failed(c, "handshake", why);
        return;
    }
    uint8_t rest[HS_BUF];
    size_t nrest = c->buf_len - head;
    memcpy(rest, c->buf + head, nrest);
    free(c->buf);
    c->buf = NULL;
    c->buf_len = 0;
    c->state = C_OPEN;
    if (nrest)
        feed(c, rest, nrest);
}

/* Queues c to be re-armed after --read-delay-ms. The delay is the same for
 * every connection, so the queue stays ordered by resume time. A conn
 * still queued from an earlier attempt is re-armed when that entry is due. */
static void pause_conn(struct worker *w, struct conn *c)
{
    if (c->paused)
        return;
    c->paused = 1;
    c->resume_at = ctl_mono_s() + w->ld->a->read_delay_ms / 1000.0;
    c->next_paused = NULL;
    if (w->paused_tail)
        w->paused_tail->next_paused = c;
    else
        w->paused_head = c;
    w->paused_tail = c;
}

/* One read. A fast reader discards the rest of a snapshot's payload in the
 * kernel once its header is in (recv with MSG_TRUNC: no copy) and otherwise
 * reads just enough for the next frame header and snapshot header; a slow
 * reader (--read-delay-ms) takes whatever is buffered, up to READ_BUF, like
 * a real client. Returns what read() would, after feeding the parser (-2:
 * the connection is gone). */
static ssize_t read_some(struct worker *w, struct conn *c, size_t *want)
{
    int slow = w->ld->a->read_delay_ms > 0;
    uint64_t skip = !slow && !c->ssl && c->rx.msg_opcode == WS_OP_BINARY &&
                            c->snap_have == PROTO_SNAPSHOT_HEADER_SIZE
                        ? ws_rx_skippable(&c->rx)
                        : 0;
    ssize_t r;
    if (skip) {
        *want = skip < READ_BUF ? (size_t)skip : READ_BUF;
        r = recv(c->fd, NULL, *want, MSG_TRUNC | MSG_DONTWAIT);
    } else {
        *want = slow || c->ssl || whole_frames(c) ? READ_BUF : HEAD_READ;
        r = conn_read(c, w->buf, *want);
    }
    if (r <= 0)
        return r;
    w->now_us = ctl_wall_us();
    if (w->measuring) {
        w->bytes += (uint64_t)r;
        c->bytes += (uint64_t)r;
    }
    if (skip) {
        ws_rx_skip(&c->rx, (size_t)r, &rx_ops, c);
        return r;
    }
    return feed(c, w->buf, (size_t)r) ? -2 : r;
}

static void on_open_readable(struct worker *w, struct conn *c)
{
    /* TLS hands over one record at a time and may hold more than the
     * socket shows: read it to EAGAIN. */
    for (int k = 0; c->ssl || k < 16; k++) {
        size_t want;
        ssize_t r = read_some(w, c, &want);
        if (r == -2)
            return;
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (r <= 0) {
            conn_lost(c, r ? strerror(errno) : "the server closed a connection");
            return;
        }
        if (w->ld->a->read_delay_ms > 0) {
            pause_conn(w, c);
            return;
        }
        if ((size_t)r < want && !c->ssl)
            break;
    }
    if (w->ld->a->read_delay_ms > 0)
        arm(c, EPOLL_CTL_MOD, EPOLLIN);
}

static void on_event(struct worker *w, struct conn *c, uint32_t events)
{
    switch (c->state) {
    case C_CONNECTING:
        on_connected(c);
        break;
    case C_TLS:
        tls_step(c);
        break;
    case C_HANDSHAKE:
        on_handshake_readable(c);
        if (c->state == C_OPEN && c->ssl) /* TLS may hold the first frames already */
            on_open_readable(w, c);
        if ((c->state == C_HANDSHAKE || c->state == C_OPEN) && w->ld->a->read_delay_ms > 0)
            arm(c, EPOLL_CTL_MOD, EPOLLIN); /* one-shot: re-arm */
        break;
    case C_OPEN:
        on_open_readable(w, c);
        break;
    default:
        break;
    }
    (void)events;
}

/* ---- the worker loop ------------------------------------------------------ */

/* Starts new connections within the rate and in-flight limits. */
static void connect_some(struct worker *w, double now)
{
    const struct load *ld = w->ld;
    double rate = (double)ld->a->connect_batch * 1000.0 / ld->nworkers; /* per second */
    w->tokens += (now - w->last_refill) * rate;
    w->last_refill = now;
    if (w->tokens > rate * 0.005 + 1)
        w->tokens = rate * 0.005 + 1;
    int max_pending = MAX_PENDING / ld->nworkers;
    while (w->next_new < w->n && w->pending < max_pending && w->tokens >= 1) {
        w->tokens -= 1;
        start_connect(w, &w->conns[w->next_new++]);
    }
}

/* Timeouts of attempts in flight, due retries. */
static void scan(struct worker *w, double now)
{
    int max_pending = MAX_PENDING / w->ld->nworkers;
    for (int i = 0; i < w->next_new; i++) {
        struct conn *c = &w->conns[i];
        int in_flight = c->state == C_CONNECTING || c->state == C_HANDSHAKE ||
                        (c->state == C_OPEN && !c->welcomed);
        if (in_flight && now > c->deadline)
            attempt_failed(c, "timeout", "no welcome in time");
        else if (c->state == C_RETRY && now > c->deadline && w->pending < max_pending)
            start_connect(w, c);
    }
}

static void resume_due(struct worker *w, double now)
{
    while (w->paused_head && w->paused_head->resume_at <= now) {
        struct conn *c = w->paused_head;
        w->paused_head = c->next_paused;
        if (!w->paused_head)
            w->paused_tail = NULL;
        c->paused = 0;
        if (c->state == C_OPEN)
            arm(c, EPOLL_CTL_MOD, EPOLLIN);
    }
}

static int wait_ms(const struct worker *w, double now)
{
    int ms = w->settled < w->n ? 1 : 20;
    if (w->paused_head) {
        double due = (w->paused_head->resume_at - now) * 1000.0;
        int d = due <= 0 ? 0 : (int)ceil(due);
        if (d < ms)
            ms = d;
    }
    return ms;
}

static void close_all(struct worker *w)
{
    static const uint8_t normal[2] = {0x03, 0xE8}; /* 1000 */
    for (int i = 0; i < w->n; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == C_OPEN && c->welcomed)
            send_frame(c, WS_OP_CLOSE, normal, sizeof normal);
        close_fd(c);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event ev[EVENTS];
    w->last_refill = w->last_scan = ctl_mono_s();
    for (;;) {
        int phase = atomic_load(&w->ld->phase);
        if (phase == PHASE_STOP)
            break;
        w->measuring = phase == PHASE_MEASURE;
        double now = ctl_mono_s();
        connect_some(w, now);
        if (now - w->last_scan >= SCAN_S) {
            scan(w, now);
            w->last_scan = now;
        }
        resume_due(w, now);
        if (w->settled == w->n && !w->reported) {
            w->reported = 1;
            atomic_fetch_add(&w->ld->workers_settled, 1);
        }
        int n = epoll_wait(w->ep, ev, EVENTS, wait_ms(w, now));
        for (int i = 0; i < n; i++)
            on_event(w, ev[i].data.ptr, ev[i].events);
    }
    close_all(w);
    return NULL;
}

/* ---- set-up, run, report ---------------------------------------------------- */

/* Lets this process open n sockets if the hard limit allows. */
static void raise_fd_limit(int n)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)n + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        fprintf(stderr, "flockctl load: warning: open file limit %llu < %llu\n",
                (unsigned long long)rl.rlim_max, (unsigned long long)want);
        want = rl.rlim_max;
    }
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        fprintf(stderr, "flockctl load: warning: cannot raise the open file limit\n");
}

static int resolve(struct load *ld)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", ld->url.port);
    int rc = getaddrinfo(ld->url.host, port, &hints, &res);
    if (rc || !res) {
        fprintf(stderr, "flockctl load: cannot resolve %s: %s\n", ld->url.host,
                rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    memcpy(&ld->addr, res->ai_addr, res->ai_addrlen);
    ld->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void workers_free(struct load *ld)
{
    for (int i = 0; i < ld->nworkers; i++) {
        struct worker *w = &ld->workers[i];
        if (w->ep >= 0)
            close(w->ep);
        free(w->buf);
        free(w->age_bins);
        for (int k = 0; k < w->n; k++) {
            struct conn *c = &w->conns[k];
            free(c->frame);
            if (c->dec)
                ctl_snap_free(c->dec);
            free(c->dec);
        }
    }
    free(ld->workers);
}

/* Splits conns among the workers and gives each its epoll set and buffers. */
static int workers_create(struct load *ld, struct conn *conns)
{
    int n = ld->a->clients, t = ld->a->threads < n ? ld->a->threads : n;
    ld->workers = calloc((size_t)t, sizeof *ld->workers);
    if (!ld->workers)
        return -1;
    ld->nworkers = t;
    for (int i = 0; i < t; i++)
        ld->workers[i].ep = -1;
    for (int i = 0; i < t; i++) {
        struct worker *w = &ld->workers[i];
        int lo = (int)((long long)n * i / t), hi = (int)((long long)n * (i + 1) / t);
        w->ld = ld;
        w->conns = conns + lo;
        w->n = hi - lo;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->buf = malloc(READ_BUF);
        w->age_bins = calloc(AGE_BINS, sizeof *w->age_bins);
        if (getrandom(&w->rng, sizeof w->rng, 0) != sizeof w->rng || !w->rng)
            w->rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)ctl_wall_us() ^ (uint64_t)i;
        if (w->ep < 0 || !w->buf || !w->age_bins)
            return -1;
        for (int k = 0; k < w->n; k++) {
            struct conn *c = &w->conns[k];
            c->w = w;
            c->fd = -1;
            if (ld->a->decode && !(c->dec = calloc(1, sizeof *c->dec)))
                return -1;
        }
    }
    return 0;
}

/* Sleeps until the monotonic time t, or ctl_stop. */
static void sleep_until(double t)
{
    while (!ctl_stop) {
        double left = t - ctl_mono_s();
        if (left <= 0)
            return;
        struct timespec ts = {0, (long)(fmin(left, 0.05) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* The TLS settings every wss:// connection starts from: the system's
 * certificate authorities and the URL's host name checked, unless
 * --insecure. */
static SSL_CTX *tls_context(const struct ctl_args *a)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* a full handshake each */
    if (a->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_default_verify_paths(ctx);
    }
    return ctx;
}

/* Connect phase, measurement window, stop; fills the timing fields. */
static void run_phases(struct load *ld, struct load_results *r)
{
    double start = ctl_mono_s();
    double connect_limit = start + ld->a->timeout * MAX_ATTEMPTS + 5 + ld->a->clients / 500.0;
    while (!ctl_stop && atomic_load(&ld->workers_settled) < ld->nworkers &&
           ctl_mono_s() < connect_limit)
        sleep_until(ctl_mono_s() + 0.005);
    double window = ctl_mono_s();
    r->connect_s = window - start;
    /* Progress for a person watching, and the mark a benchmark script
     * starts its own measurements at. */
    fprintf(stderr, "flockctl load: connecting took %.2f s; measuring for %g s\n", r->connect_s,
            ld->a->seconds);
    atomic_store(&ld->phase, PHASE_MEASURE);
    sleep_until(window + ld->a->seconds);
    atomic_store(&ld->phase, PHASE_STOP);
    r->window_s = ctl_mono_s() - window;
}

int ctl_load_run(const struct ctl_args *a)
{
    struct load ld = {.a = a};
    struct load_results r = {0};
    if (a->seconds <= 0) {
        fprintf(stderr, "flockctl load: --seconds S (> 0) is required\n");
        return CTL_EXIT_USAGE;
    }
    if (ctl_url_parse(a->url, &ld.url) || resolve(&ld))
        return CTL_EXIT_CONNECT;
    if (ld.url.is_tls && !(ld.tls = tls_context(a))) {
        fprintf(stderr, "flockctl load: cannot set up TLS\n");
        return CTL_EXIT_FAILED;
    }
    int n = a->join ? ctl_join_text(a, ld.join, sizeof ld.join) : 0;
    if (n < 0) {
        fprintf(stderr, "flockctl load: the join does not fit %d bytes\n", CTL_JOIN_TEXT_MAX);
        SSL_CTX_free(ld.tls);
        return CTL_EXIT_USAGE;
    }
    ld.join_len = (size_t)n;
    raise_fd_limit(a->clients);
    struct conn *conns = calloc((size_t)a->clients, sizeof *conns);
    if (!conns || workers_create(&ld, conns)) {
        fprintf(stderr, "flockctl load: out of memory or file descriptors\n");
        workers_free(&ld);
        free(conns);
        return CTL_EXIT_FAILED;
    }
    int started = 0;
    for (; started < ld.nworkers; started++)
        if (pthread_create(&ld.workers[started].thread, NULL, worker_main, &ld.workers[started]))
            break;
    if (started == ld.nworkers)
        run_phases(&ld, &r);
    atomic_store(&ld.phase, PHASE_STOP);
    for (int i = 0; i < started; i++)
        pthread_join(ld.workers[i].thread, NULL);
    ctl_load__collect(&ld, conns, &r);
    ctl_load__report(&r);
    workers_free(&ld);
    free(conns);
    SSL_CTX_free(ld.tls);
    bool refused = r.join_failures || r.view_failures;
    if (started < ld.nworkers || refused || !r.connected)
        return r.connected || refused ? CTL_EXIT_FAILED : CTL_EXIT_CONNECT;
    return r.failures || r.dropped || !r.frames || r.decode_failures ? CTL_EXIT_FAILED
                                                                     : CTL_EXIT_OK;
}
