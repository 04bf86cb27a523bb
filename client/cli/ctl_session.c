/*
 * ctl_session.c — a single libwebsockets client connection (see
 * ctl_session.h).
 *
 * lws delivers a message in chunks; they are appended to rx until the last
 * one, then the whole message goes to the caller. Outgoing text waits in a
 * FIFO and is written one message per WRITEABLE callback, as lws requires.
 * lws_service() does not honour its timeout in 4.1, so a timer wakes the
 * loop every WAKE_US and callers can check their own deadlines.
 *
 * While a join is under way the session holds the messages back from the
 * caller: it keeps the first welcome (for the protocol), feeds text to the
 * join's exchange (ctl_join.h) and hands over from the room's welcome on.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_session.h"

#include "ctl_args.h"
#include "ctl_join.h"
#include "ctl_view.h"
#include "proto.h"
#include "proto_v2.h"
#include "proto_v3.h"

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAKE_US      20000
#define RX_CHUNK     16384
#define MAX_MESSAGE  (64u << 20) /* a larger incoming message closes the connection */
#define CLOSE_WAIT_S 1.0

struct outmsg {
    struct outmsg *next;
    size_t len;
    unsigned char data[]; /* LWS_PRE headroom, then len bytes */
};

enum state { ST_CONNECTING, ST_OPEN, ST_CLOSED };

struct ctl_session {
    struct lws_context *ctx;
    struct lws *wsi;
    lws_sorted_usec_list_t wake;
    enum state state;
    int closing;
    int protocol; /* offered up to, then the welcome's */
    int insecure; /* wss://: a certificate that does not verify is accepted */
    ctl_message_fn fn;
    void *user;
    char *welcome; /* NULL until it arrived; after a join, the room's */
    size_t welcome_len;
    bool holding;              /* a join is under way: messages are not the caller's yet */
    struct ctl_join_wait join; /* its exchange */
    int join_rc;               /* < 0: the join was refused with this code */
    char join_why[240];        /* then: the server's code and message */
    bool view_out;             /* the view was sent and its reply has not come */
    bool viewed;               /* its ack came: view_ack holds it */
    struct ctl_view_ack view_ack;
    int view_rc;        /* < 0: the view was refused with this code */
    char view_why[240]; /* then: the server's code and message */
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary;
    struct outmsg *out_head, *out_tail;
    char error[200];
    struct ctl_url url;
};

/* Keeps the first reason: "what" or "what: detail". */
static void set_error(struct ctl_session *s, const char *what, const char *detail)
{
    if (s->error[0])
        return;
    int n = snprintf(s->error, sizeof s->error, "%s%s%s", what, detail ? ": " : "",
                     detail ? detail : "");
    if (n < 0) /* a reason longer than the buffer is kept truncated */
        s->error[0] = '\0';
}

/* Appends a chunk to rx; -1 if the message grows past MAX_MESSAGE. */
static int append_rx(struct ctl_session *s, const void *in, size_t len)
{
    if (len > s->rx_cap - s->rx_len) {
        size_t cap = s->rx_cap ? s->rx_cap : RX_CHUNK;
        while (cap - s->rx_len < len && cap < MAX_MESSAGE)
            cap *= 2;
        if (cap - s->rx_len < len)
            return -1;
        unsigned char *p = realloc(s->rx, cap + 1);
        if (!p)
            return -1;
        s->rx = p;
        s->rx_cap = cap;
    }
    memcpy(s->rx + s->rx_len, in, len);
    s->rx_len += len;
    return 0;
}

/* The first message is the welcome: kept, and its protocol is the
 * version the server took (1 when it names none). A join's welcome
 * replaces it. */
static void keep_welcome(struct ctl_session *s)
{
    free(s->welcome);
    s->welcome = malloc(s->rx_len + 1);
    if (!s->welcome)
        return;
    memcpy(s->welcome, s->rx, s->rx_len);
    s->welcome[s->rx_len] = '\0';
    s->welcome_len = s->rx_len;
    cJSON *msg = cJSON_ParseWithLength(s->welcome, s->welcome_len);
    double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "protocol"));
    s->protocol = v == PROTO_V3_VERSION   ? PROTO_V3_VERSION
                  : v == PROTO_V2_VERSION ? PROTO_V2_VERSION
                                          : PROTO_VERSION;
    cJSON_Delete(msg);
}

/* A message that came while a join is under way: the first welcome is
 * kept, the join's replies move the exchange on. True if this message is
 * the room's welcome, which ends the hold (and is kept). */
static bool hold(struct ctl_session *s)
{
    if (s->rx_binary)
        return false;
    if (!s->welcome) {
        keep_welcome(s);
        return false;
    }
    int rc =
        ctl_join_feed(&s->join, (const char *)s->rx, s->rx_len, s->join_why, sizeof s->join_why);
    if (rc < 0)
        s->join_rc = rc;
    if (rc <= 0)
        return false;
    keep_welcome(s);
    s->holding = false;
    return true;
}

/* A text message while the view is out: its ack or refusal ends the wait. */
static void await_view(struct ctl_session *s)
{
    int rc = ctl_view_feed((const char *)s->rx, s->rx_len, &s->view_ack, s->view_why,
                           sizeof s->view_why);
    s->viewed = rc > 0;
    s->view_rc = rc < 0 ? rc : 0;
    s->view_out = rc == 0;
}

static void deliver(struct ctl_session *s)
{
    if (!s->rx_binary)
        s->rx[s->rx_len] = '\0'; /* rx has one spare byte */
    if (s->holding && !hold(s))
        return;
    if (s->view_out && !s->rx_binary)
        await_view(s);
    if (!s->welcome && !s->rx_binary)
        keep_welcome(s);
    s->fn(s->user, s->rx_binary, s->rx, s->rx_len);
}

static int on_receive(struct ctl_session *s, const void *in, size_t len)
{
    if (s->rx_len == 0)
        s->rx_binary = lws_frame_is_binary(s->wsi);
    if (append_rx(s, in, len)) {
        set_error(s, "message too large", NULL);
        return -1;
    }
    if (!lws_is_final_fragment(s->wsi) || lws_remaining_packet_payload(s->wsi))
        return 0;
    deliver(s);
    s->rx_len = 0;
    return 0;
}

static int on_writeable(struct ctl_session *s)
{
    if (s->closing) {
        lws_close_reason(s->wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    struct outmsg *m = s->out_head;
    if (!m)
        return 0;
    s->out_head = m->next;
    if (!s->out_head)
        s->out_tail = NULL;
    int w = lws_write(s->wsi, m->data + LWS_PRE, m->len, LWS_WRITE_TEXT);
    int short_write = w < (int)m->len;
    free(m);
    if (short_write) {
        set_error(s, "write failed", NULL);
        return -1;
    }
    if (s->out_head)
        lws_callback_on_writable(s->wsi);
    return 0;
}

static void on_peer_close(struct ctl_session *s, const unsigned char *in, size_t len)
{
    char why[160];
    unsigned code = len >= 2 ? (unsigned)in[0] << 8 | in[1] : 1005;
    snprintf(why, sizeof why, "server closed the connection: %u %.*s", code,
             len > 2 ? (int)(len - 2 > 100 ? 100 : len - 2) : 0,
             len > 2 ? (const char *)in + 2 : "");
    set_error(s, why, NULL);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct ctl_session *s = lws_get_opaque_user_data(wsi);
    if (!s)
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        set_error(s,
                  s->url.is_tls && !s->insecure
                      ? "cannot connect (over TLS: a certificate that does not verify needs "
                        "--insecure)"
                      : "cannot connect",
                  in ? (const char *)in : "connection failed");
        s->state = ST_CLOSED;
        s->wsi = NULL;
        return 0;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        s->wsi = wsi;
        s->state = ST_OPEN;
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        return on_receive(s, in, len);
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return on_writeable(s);
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        on_peer_close(s, in, len);
        return 0;
    case LWS_CALLBACK_CLIENT_CLOSED:
    case LWS_CALLBACK_WSI_DESTROY:
        if (s->state != ST_CLOSED)
            set_error(s, "connection closed", NULL);
        s->state = ST_CLOSED;
        s->wsi = NULL;
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* Every version this client decodes, by name (lws checks the server's
 * answer against its list). */
static const struct lws_protocols protocols[] = {
    {PROTO_SUBPROTOCOL, callback, 0, RX_CHUNK, 0, NULL, 0},
    {PROTO_V2_SUBPROTOCOL, callback, 0, RX_CHUNK, 0, NULL, 0},
    {PROTO_V3_SUBPROTOCOL, callback, 0, RX_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void on_wake(lws_sorted_usec_list_t *sul)
{
    struct ctl_session *s = lws_container_of(sul, struct ctl_session, wake);
    lws_sul_schedule(s->ctx, 0, &s->wake, on_wake, WAKE_US);
}

static int start(struct ctl_session *s)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    if (s->url.is_tls)
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    info.pt_serv_buf_size = 65536;
    lws_set_log_level(0, NULL);
    s->ctx = lws_create_context(&info);
    if (!s->ctx) {
        set_error(s, "cannot create the libwebsockets context", NULL);
        return -1;
    }
    lws_sul_schedule(s->ctx, 0, &s->wake, on_wake, WAKE_US);
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = s->ctx;
    ci.address = s->url.host;
    ci.port = s->url.port;
    ci.path = s->url.path;
    ci.host = s->url.host;
    ci.origin = s->url.host;
    ci.protocol = s->protocol >= PROTO_V3_VERSION ? PROTO_V3_SUBPROTOCOL "," PROTO_V2_SUBPROTOCOL
                                                                         "," PROTO_SUBPROTOCOL
                  : s->protocol >= PROTO_V2_VERSION ? PROTO_V2_SUBPROTOCOL "," PROTO_SUBPROTOCOL
                                                    : PROTO_SUBPROTOCOL;
    ci.opaque_user_data = s;
    if (s->url.is_tls)
        ci.ssl_connection =
            LCCSCF_USE_SSL | (s->insecure ? LCCSCF_ALLOW_SELFSIGNED | LCCSCF_ALLOW_EXPIRED |
                                                LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK
                                          : 0);
    s->state = ST_CONNECTING;
    if (!lws_client_connect_via_info(&ci) && s->state == ST_CONNECTING) {
        set_error(s, "cannot connect to", s->url.host);
        s->state = ST_CLOSED;
    }
    return s->state == ST_CLOSED ? -1 : 0;
}

static bool awaits_welcome(const struct ctl_session *s)
{
    return !s->welcome;
}

static bool awaits_join(const struct ctl_session *s)
{
    return s->holding && !s->join_rc;
}

static bool awaits_view(const struct ctl_session *s)
{
    return s->view_out;
}

/* Services the connection while waiting(s), for up to seconds; true if
 * the wait ended (not the connection, the clock or ctl_stop). */
static bool service_while(struct ctl_session *s, bool (*waiting)(const struct ctl_session *),
                          double seconds)
{
    double deadline = ctl_mono_s() + seconds;
    while (waiting(s) && s->state != ST_CLOSED && !ctl_stop && ctl_mono_s() < deadline)
        if (lws_service(s->ctx, 0) < 0)
            break;
    return !waiting(s);
}

/* Sends the join and waits for its ack and the room's welcome; true if
 * they came, else the reason is the session's error. */
static bool join_room(struct ctl_session *s, const struct ctl_args *a)
{
    char text[CTL_JOIN_TEXT_MAX];
    int n = ctl_join_text(a, text, sizeof text);
    if (n < 0 || ctl_session_send(s, text, (size_t)n)) {
        set_error(s, "cannot send the join", NULL);
        return false;
    }
    s->join.phase = CTL_JOIN_SENT;
    if (service_while(s, awaits_join, a->timeout) && !s->join_rc)
        return true;
    set_error(s, s->join_rc ? "join refused" : "no answer to the join in time",
              s->join_rc ? s->join_why : NULL);
    return false;
}

/* Waits for the view's ack; true if it came, else the reason is the
 * session's error. */
static bool took_view(struct ctl_session *s, const struct ctl_args *a)
{
    if ((!s->view_out || service_while(s, awaits_view, a->timeout)) && s->viewed && !s->view_rc)
        return true;
    set_error(s, s->view_rc ? "view refused" : "no answer to the view in time",
              s->view_rc ? s->view_why : NULL);
    return false;
}

/* Sends the view and waits for its ack (took_view()). */
static bool send_view(struct ctl_session *s, const struct ctl_args *a)
{
    char text[CTL_VIEW_TEXT_MAX];
    int n = ctl_view_text(a, a->view_args, text, sizeof text);
    if (n < 0 || ctl_session_send(s, text, (size_t)n)) {
        set_error(s, "cannot send the view", NULL);
        return false;
    }
    s->view_out = true;
    return took_view(s, a);
}

struct ctl_session *ctl_session_open(const struct ctl_args *a, ctl_message_fn fn, void *user,
                                     struct ctl_open_error *err)
{
    err->status = CTL_EXIT_CONNECT;
    struct ctl_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err->reason, sizeof err->reason, "out of memory");
        return NULL;
    }
    s->protocol = a->protocol;
    s->insecure = a->insecure;
    s->fn = fn;
    s->user = user;
    s->holding = a->join;
    if (ctl_url_parse(a->url, &s->url)) {
        snprintf(err->reason, sizeof err->reason, "not a ws:// or wss:// URL: %s", a->url);
        free(s);
        return NULL;
    }
    /* A view without a join goes in the URL: even the first frame is of it. */
    bool url_view = a->view && !a->join && !a->random_views;
    char path[sizeof s->url.path];
    if (url_view && ctl_view_path(a, a->view_args, s->url.path, path, sizeof path) < 0) {
        snprintf(err->reason, sizeof err->reason, "the URL with the view is too long");
        free(s);
        return NULL;
    }
    if (url_view)
        memcpy(s->url.path, path, sizeof path);
    s->view_out = url_view; /* its reply follows the welcome */
    if (!start(s) && !service_while(s, awaits_welcome, a->timeout) && s->state != ST_CLOSED)
        set_error(s, "no welcome in time from", a->url);
    if (s->welcome && s->state == ST_OPEN && s->holding && !join_room(s, a))
        err->status = CTL_EXIT_FAILED;
    bool in_room = s->welcome && s->state == ST_OPEN && !s->holding;
    if (in_room && a->view && !(url_view ? took_view(s, a) : send_view(s, a))) {
        err->status = CTL_EXIT_FAILED;
        in_room = false;
    }
    if (in_room)
        return s;
    snprintf(err->reason, sizeof err->reason, "%s", s->error[0] ? s->error : "cannot connect");
    ctl_session_close(s);
    return NULL;
}

int ctl_session_protocol(const struct ctl_session *s)
{
    return s->protocol;
}

const struct ctl_view_ack *ctl_session_view(const struct ctl_session *s)
{
    return s->viewed ? &s->view_ack : NULL;
}

const char *ctl_session_welcome(const struct ctl_session *s, size_t *len)
{
    if (len)
        *len = s->welcome_len;
    return s->welcome;
}

int ctl_session_send(struct ctl_session *s, const char *text, size_t len)
{
    if (s->state != ST_OPEN)
        return -1;
    struct outmsg *m = malloc(sizeof *m + LWS_PRE + len);
    if (!m)
        return -1;
    m->next = NULL;
    m->len = len;
    memcpy(m->data + LWS_PRE, text, len);
    if (s->out_tail)
        s->out_tail->next = m;
    else
        s->out_head = m;
    s->out_tail = m;
    lws_callback_on_writable(s->wsi);
    return 0;
}

int ctl_session_service(struct ctl_session *s)
{
    if (s->state == ST_OPEN && lws_service(s->ctx, 0) < 0)
        s->state = ST_CLOSED;
    return s->state == ST_OPEN ? 0 : -1;
}

const char *ctl_session_error(const struct ctl_session *s)
{
    return s->state == ST_OPEN ? "" : s->error;
}

void ctl_session_close(struct ctl_session *s)
{
    if (!s)
        return;
    if (s->state == ST_OPEN && s->wsi) {
        s->closing = 1;
        lws_callback_on_writable(s->wsi);
        double deadline = ctl_mono_s() + CLOSE_WAIT_S;
        while (s->state == ST_OPEN && ctl_mono_s() < deadline)
            if (lws_service(s->ctx, 0) < 0)
                break;
    }
    if (s->ctx) {
        lws_sul_cancel(&s->wake);
        lws_context_destroy(s->ctx);
    }
    while (s->out_head) {
        struct outmsg *m = s->out_head;
        s->out_head = m->next;
        free(m);
    }
    free(s->welcome);
    free(s->rx);
    free(s);
}
