/*
 * flock_client — a WebSocket load and conformance client for flockd.
 *
 * One process, one libwebsockets client context, one service thread: opens
 * N concurrent connections to ws://HOST:PORT/ws with the flock.v1
 * subprotocol, staggered so that thousands can connect without flooding
 * the server's accept queue. Each connection counts its welcome and its
 * binary snapshots; every snapshot is reassembled from its fragments and
 * its header checked with proto_snapshot_decode_header(). A snapshot whose
 * tick advances by more than the server's ticks per snapshot (from the
 * welcome) counts as skipped; its age is the receive wall time minus the
 * server_time_us it carries. Optionally the first welcomed connection sends
 * JSON commands one at a time and prints each reply.
 *
 * After --seconds (or SIGINT/SIGTERM) it closes every connection, prints a
 * human summary and, as the last line, one JSON object with the figures.
 * Exit status: 0 if every client connected and was welcomed (and, with
 * --expect-rate, received at least that many snapshots per second), 1
 * otherwise, 2 for a usage error.
 */
#define _POSIX_C_SOURCE 200809L

#include <cjson/cJSON.h>
#include <libwebsockets.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "proto_snapshot.h"

#define MAX_CLIENTS     20000
#define MAX_SENDS       64
#define CONNECT_BATCH   200         /* connections started per service iteration */
#define MAX_PENDING     400         /* handshakes in flight at once */
#define MAX_MESSAGE     (64u << 20) /* largest message reassembled */
#define RX_CHUNK        16384       /* lws delivers messages in chunks of this size */
#define WAKE_US         20000       /* the service loop runs at least this often */
#define REPLY_TIMEOUT_S 5.0
#define CLOSE_GRACE_S   2.0
#define AGE_BIN_US      10            /* age histogram resolution */
#define AGE_BINS        (1000000 + 1) /* 0..10 s, the last bin holds anything older */

struct options {
    const char *url;
    int clients;
    double seconds;
    const char *sends[MAX_SENDS];
    int nsends;
    double expect_rate; /* < 0: not checked */
};

enum conn_state { CONN_IDLE, CONN_CONNECTING, CONN_OPEN, CONN_DONE };

struct client;

/* One connection. rx holds the message being reassembled (rx_cap + 1 bytes
 * so that text can be NUL-terminated). */
struct conn {
    struct client *cl;
    struct lws *wsi;
    enum conn_state state;
    int welcomed, closing;
    double first_frame_at;       /* monotonic seconds */
    uint64_t ticks_per_snapshot; /* 0: unknown, gaps not checked */
    uint64_t frames, skipped, decode_errors, bad_text;
    uint64_t bytes; /* of the snapshots counted in frames */
    uint64_t last_tick;
    uint32_t last_epoch;
    int have_tick;
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary, rx_overflow;
};

/* The commands of --send, sent in order on one connection. */
struct commander {
    struct conn *conn;
    int next;       /* index of the command in flight or next to send */
    int in_flight;  /* sent (or queued to send) and not yet answered */
    int written;    /* the command in flight has been written */
    double sent_at; /* monotonic seconds */
    cJSON *want_id; /* the "id" of the command in flight, or NULL */
    cJSON *replies; /* array: each reply object, or null for a timeout */
};

/* Where to connect: opt.url cut into pieces (host points into buf). */
struct endpoint {
    char buf[1024];
    const char *host;
    int port;
    char path[1024];
};

struct client {
    struct options opt;
    struct endpoint ep;
    struct lws_context *ctx;
    lws_sorted_usec_list_t wake;
    struct conn *conns;
    int started, pending, open;
    int connected, welcomes, connect_errors, closed_early;
    int measuring;
    double start, end, last_connect; /* monotonic seconds */
    struct commander cmd;
    uint32_t *age_bins;
    uint64_t age_count;
    char first_error[160];
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flock_client --url ws://HOST:PORT/ws [--clients N] [--seconds S]\n"
            "                    [--send JSON]... [--expect-rate R]\n"
            "Opens N WebSocket connections (subprotocol flock.v1) to flockd for S seconds,\n"
            "checks every snapshot's header and reports rates, tick gaps and ages.\n\n"
            "  --url URL          server endpoint (ws:// only), required\n"
            "  --clients N        concurrent connections, 1..%d (default 1)\n"
            "  --seconds S        how long to run, > 0 (default 5)\n"
            "  --send JSON        command sent by the first welcomed connection after its\n"
            "                     welcome; repeat for several (at most %d), each waits for\n"
            "                     its ack or error, which is printed as one line\n"
            "  --expect-rate R    fail unless every client receives >= R snapshots/s\n"
            "  -h, --help         print this help and exit\n\n"
            "The last line of output is one JSON object with the figures. Exit status:\n"
            "0 all clients connected and were welcomed (and met --expect-rate), 1 not,\n"
            "2 usage error.\n",
            MAX_CLIENTS, MAX_SENDS);
}

/* Parses a whole string as a number in [lo, hi]; 0 or -1. */
static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Handles one option taking a value; -1 on a bad value. */
static int parse_option(struct options *o, const char *name, const char *val)
{
    double v;
    if (!strcmp(name, "--url")) {
        o->url = val;
    } else if (!strcmp(name, "--clients")) {
        if (parse_number(val, 1, MAX_CLIENTS, &v) || v != floor(v))
            return -1;
        o->clients = (int)v;
    } else if (!strcmp(name, "--seconds")) {
        if (parse_number(val, 1e-3, 86400, &v))
            return -1;
        o->seconds = v;
    } else if (!strcmp(name, "--expect-rate")) {
        if (parse_number(val, 0, 1e6, &o->expect_rate))
            return -1;
    } else if (!strcmp(name, "--send")) {
        if (o->nsends == MAX_SENDS)
            return -1;
        o->sends[o->nsends++] = val;
    } else {
        return -1;
    }
    return 0;
}

/* Splits a ws://HOST[:PORT][/PATH] URL; -1 if it is not one. */
static int parse_url(const char *url, struct endpoint *ep)
{
    const char *prot, *host, *path;
    if (snprintf(ep->buf, sizeof ep->buf, "%s", url) >= (int)sizeof ep->buf)
        return -1;
    if (lws_parse_uri(ep->buf, &prot, &host, &ep->port, &path) || strcmp(prot, "ws") || !host[0] ||
        ep->port <= 0 || ep->port > 65535)
        return -1;
    ep->host = host;
    if (snprintf(ep->path, sizeof ep->path, "/%s", path) >= (int)sizeof ep->path)
        return -1;
    return 0;
}

/* Returns 0 to run, 1 after --help, 2 on a usage error (already reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    *o = (struct options){.clients = 1, .seconds = 5, .expect_rate = -1};
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 1;
        }
        if (i + 1 >= argc || parse_option(o, argv[i], argv[i + 1])) {
            fprintf(stderr, "flock_client: bad or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    struct endpoint ep;
    if (!o->url || parse_url(o->url, &ep)) {
        fprintf(stderr, "flock_client: --url ws://HOST:PORT/PATH is required\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Lets this process open n sockets if the hard limit allows. */
static void raise_fd_limit(int n)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)n + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        fprintf(stderr, "flock_client: warning: open file limit %llu < %llu\n",
                (unsigned long long)rl.rlim_max, (unsigned long long)want);
        want = rl.rlim_max;
    }
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        fprintf(stderr, "flock_client: warning: cannot raise the open file limit\n");
}

/* ---- receiving ---------------------------------------------------------- */

static void record_age(struct client *cl, uint64_t now_us, uint64_t server_us)
{
    uint64_t bin = now_us > server_us ? (now_us - server_us) / AGE_BIN_US : 0;
    cl->age_bins[bin < AGE_BINS - 1 ? bin : AGE_BINS - 1]++;
    cl->age_count++;
}

static void on_snapshot(struct conn *c)
{
    struct client *cl = c->cl;
    struct proto_snapshot_header h;
    if (c->rx_overflow || proto_snapshot_decode_header(c->rx, c->rx_len, &h) < 0) {
        c->decode_errors++;
        return;
    }
    if (!c->frames++)
        c->first_frame_at = mono_s();
    c->bytes += c->rx_len;
    /* Ticks only compare within one epoch (a world reset restarts them). */
    if (c->have_tick && h.epoch == c->last_epoch && c->ticks_per_snapshot &&
        h.tick > c->last_tick + c->ticks_per_snapshot)
        c->skipped++;
    c->have_tick = 1;
    c->last_tick = h.tick;
    c->last_epoch = h.epoch;
    record_age(cl, wall_us(), h.server_time_us);
}

static void on_welcome(struct conn *c, const cJSON *msg)
{
    struct client *cl = c->cl;
    if (c->welcomed)
        return;
    double tick_hz = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "tick_hz"));
    double snap_hz = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, "snapshot_hz"));
    if (tick_hz > 0 && snap_hz > 0 && tick_hz / snap_hz < 1e6)
        c->ticks_per_snapshot = (uint64_t)ceil(tick_hz / snap_hz - 1e-9);
    c->welcomed = 1;
    cl->welcomes++;
    if (!cl->cmd.conn && cl->opt.nsends) {
        cl->cmd.conn = c;
        cl->cmd.replies = cJSON_CreateArray();
    }
}

static void send_next_command(struct client *cl);

/* 1 if msg answers the command in flight: an ack or error whose id (if
 * either side has one) matches. */
static int is_reply(const struct commander *cmd, const cJSON *msg)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    if (!cmd->in_flight || !type || (strcmp(type, "ack") && strcmp(type, "error")))
        return 0;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    return !cmd->want_id || !id || cJSON_Compare(id, cmd->want_id, 1);
}

/* Records the answer to the command in flight (NULL: it timed out). */
static void finish_command(struct client *cl, cJSON *reply)
{
    struct commander *cmd = &cl->cmd;
    if (reply) {
        char *line = cJSON_PrintUnformatted(reply);
        printf("reply: %s\n", line ? line : "?");
        free(line);
    } else {
        printf("reply: none to %s\n", cl->opt.sends[cmd->next]);
        reply = cJSON_CreateNull();
    }
    fflush(stdout);
    cJSON_AddItemToArray(cmd->replies, reply);
    cJSON_Delete(cmd->want_id);
    cmd->want_id = NULL;
    cmd->in_flight = 0;
    cmd->next++;
    send_next_command(cl);
}

static void on_text(struct conn *c)
{
    struct client *cl = c->cl;
    cJSON *msg = cJSON_ParseWithLength((const char *)c->rx, c->rx_len);
    if (!msg || c->rx_overflow) {
        c->bad_text++;
    } else {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
        if (type && !strcmp(type, "welcome")) {
            on_welcome(c, msg);
            if (cl->cmd.conn == c)
                send_next_command(cl);
        } else if (cl->cmd.conn == c && is_reply(&cl->cmd, msg)) {
            finish_command(cl, msg);
            return; /* msg now belongs to the replies array */
        }
    }
    cJSON_Delete(msg);
}

/* Appends one chunk; delivers the message once its last chunk is in. */
static void on_receive(struct conn *c, const void *in, size_t len)
{
    if (c->rx_len == 0) {
        c->rx_binary = lws_frame_is_binary(c->wsi);
        c->rx_overflow = 0;
    }
    if (!c->rx_overflow && len > c->rx_cap - c->rx_len) {
        size_t cap = c->rx_cap ? c->rx_cap : RX_CHUNK;
        while (cap - c->rx_len < len && cap < MAX_MESSAGE)
            cap *= 2;
        unsigned char *p = cap - c->rx_len >= len ? realloc(c->rx, cap + 1) : NULL;
        if (p) {
            c->rx = p;
            c->rx_cap = cap;
        } else {
            c->rx_overflow = 1;
        }
    }
    if (!c->rx_overflow) {
        memcpy(c->rx + c->rx_len, in, len);
        c->rx_len += len;
    }
    if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi))
        return;
    if (c->cl->measuring) {
        if (c->rx_binary)
            on_snapshot(c);
        else
            on_text(c);
    }
    c->rx_len = 0;
}

/* ---- sending and connection life cycle ----------------------------------- */

static void send_next_command(struct client *cl)
{
    struct commander *cmd = &cl->cmd;
    if (!cmd->conn || cmd->conn->state != CONN_OPEN || cmd->in_flight ||
        cmd->next >= cl->opt.nsends || !cl->measuring)
        return;
    cJSON *parsed = cJSON_Parse(cl->opt.sends[cmd->next]);
    cJSON *id = cJSON_GetObjectItemCaseSensitive(parsed, "id");
    cmd->want_id = id ? cJSON_Duplicate(id, 1) : NULL;
    cJSON_Delete(parsed);
    cmd->in_flight = 1;
    cmd->written = 0;
    lws_callback_on_writable(cmd->conn->wsi);
}

/* Writes the command in flight, if this connection has one; -1 on failure. */
static int write_command(struct conn *c)
{
    struct commander *cmd = &c->cl->cmd;
    if (cmd->conn != c || !cmd->in_flight || cmd->written)
        return 0;
    const char *text = c->cl->opt.sends[cmd->next];
    size_t len = strlen(text);
    unsigned char *buf = malloc(LWS_PRE + len + 1);
    if (!buf)
        return -1;
    memcpy(buf + LWS_PRE, text, len);
    int w = lws_write(c->wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT);
    free(buf);
    cmd->written = 1;
    cmd->sent_at = mono_s();
    return w < (int)len ? -1 : 0;
}

static void note_error(struct client *cl, const char *what, const void *in, size_t len)
{
    if (cl->first_error[0])
        return;
    snprintf(cl->first_error, sizeof cl->first_error, "%s: %.*s", what,
             (int)(len > 120 ? 120 : len), in ? (const char *)in : "(no reason)");
}

/* The connection is gone (refused, failed or closed). */
static void conn_done(struct conn *c)
{
    struct client *cl = c->cl;
    if (c->state == CONN_CONNECTING) {
        cl->pending--;
        if (cl->measuring)
            cl->connect_errors++;
    } else if (c->state == CONN_OPEN) {
        cl->open--;
        if (cl->measuring && !c->closing)
            cl->closed_early++;
    }
    c->state = CONN_DONE;
    c->wsi = NULL;
}

static int callback_flock(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                          size_t len)
{
    struct conn *c = lws_get_opaque_user_data(wsi);
    if (!c)
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        if (c->state == CONN_CONNECTING)
            note_error(c->cl, "connection error", in, in ? strlen(in) : 0);
        conn_done(c);
        return 0;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        c->wsi = wsi;
        c->state = CONN_OPEN;
        c->cl->pending--;
        c->cl->open++;
        if (c->cl->measuring) {
            c->cl->connected++;
            c->cl->last_connect = mono_s();
        }
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        on_receive(c, in, len);
        return 0;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (c->closing) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
            return -1;
        }
        return write_command(c);
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (c->cl->measuring)
            note_error(c->cl, "server closed", len > 2 ? (const char *)in + 2 : NULL,
                       len > 2 ? len - 2 : 0);
        return 0;
    case LWS_CALLBACK_CLIENT_CLOSED:
    case LWS_CALLBACK_WSI_DESTROY:
        conn_done(c);
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
    {PROTO_SUBPROTOCOL, callback_flock, 0, RX_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void connect_one(struct client *cl, struct conn *c)
{
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = cl->ctx;
    ci.address = cl->ep.host;
    ci.port = cl->ep.port;
    ci.path = cl->ep.path;
    ci.host = cl->ep.host;
    ci.origin = cl->ep.host;
    ci.protocol = PROTO_SUBPROTOCOL;
    ci.opaque_user_data = c;
    c->state = CONN_CONNECTING;
    cl->pending++;
    c->wsi = lws_client_connect_via_info(&ci);
    /* A NULL return may or may not have come with CONNECTION_ERROR. */
    if (!c->wsi && c->state == CONN_CONNECTING) {
        note_error(cl, "connect failed", cl->ep.host, strlen(cl->ep.host));
        conn_done(c);
    }
}

/* Starts the next batch of connections, keeping MAX_PENDING in flight. */
static void connect_some(struct client *cl)
{
    for (int n = 0; n < CONNECT_BATCH && cl->started < cl->opt.clients && cl->pending < MAX_PENDING;
         n++)
        connect_one(cl, &cl->conns[cl->started++]);
}

static void check_reply_timeout(struct client *cl)
{
    struct commander *cmd = &cl->cmd;
    if (!cmd->in_flight)
        return;
    if ((cmd->written && mono_s() - cmd->sent_at > REPLY_TIMEOUT_S) ||
        cmd->conn->state != CONN_OPEN)
        finish_command(cl, NULL);
}

/* Keeps lws_service() returning at least every WAKE_US. */
static void on_wake(lws_sorted_usec_list_t *sul)
{
    struct client *cl = lws_container_of(sul, struct client, wake);
    lws_sul_schedule(cl->ctx, 0, &cl->wake, on_wake, WAKE_US);
}

/* ---- set-up, run, teardown ---------------------------------------------- */

static struct client *client_create(const struct options *opt, const char **err)
{
    struct client *cl = calloc(1, sizeof *cl);
    if (!cl) {
        *err = "out of memory";
        return NULL;
    }
    cl->opt = *opt;
    if (parse_url(opt->url, &cl->ep)) {
        *err = "bad URL";
        free(cl);
        return NULL;
    }
    cl->conns = calloc((size_t)opt->clients, sizeof *cl->conns);
    cl->age_bins = calloc(AGE_BINS, sizeof *cl->age_bins);
    if (!cl->conns || !cl->age_bins) {
        *err = "out of memory";
        free(cl->conns);
        free(cl->age_bins);
        free(cl);
        return NULL;
    }
    for (int i = 0; i < opt->clients; i++)
        cl->conns[i].cl = cl;
    return cl;
}

static int client_start(struct client *cl)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.pt_serv_buf_size = 65536;
    info.user = cl;
    cl->ctx = lws_create_context(&info);
    if (!cl->ctx)
        return -1;
    lws_sul_schedule(cl->ctx, 0, &cl->wake, on_wake, WAKE_US);
    return 0;
}

/* Services until the deadline or a signal, then closes every connection. */
static void client_run(struct client *cl)
{
    cl->start = mono_s();
    cl->measuring = 1;
    double deadline = cl->start + cl->opt.seconds;
    while (!g_stop && mono_s() < deadline) {
        connect_some(cl);
        check_reply_timeout(cl);
        if (lws_service(cl->ctx, 0) < 0)
            break;
    }
    cl->end = fmin(mono_s(), deadline);
    cl->measuring = 0;
    if (cl->cmd.in_flight)
        finish_command(cl, NULL);
    for (int i = 0; i < cl->started; i++) {
        struct conn *c = &cl->conns[i];
        if (c->state == CONN_OPEN) {
            c->closing = 1;
            lws_callback_on_writable(c->wsi);
        }
    }
    double grace = mono_s() + CLOSE_GRACE_S;
    while ((cl->open || cl->pending) && mono_s() < grace)
        if (lws_service(cl->ctx, 0) < 0)
            break;
}

static void client_destroy(struct client *cl)
{
    if (!cl)
        return;
    if (cl->ctx) {
        lws_sul_cancel(&cl->wake);
        lws_context_destroy(cl->ctx);
    }
    for (int i = 0; i < cl->opt.clients; i++)
        free(cl->conns[i].rx);
    cJSON_Delete(cl->cmd.want_id);
    cJSON_Delete(cl->cmd.replies);
    free(cl->conns);
    free(cl->age_bins);
    free(cl);
}

/* ---- report --------------------------------------------------------------- */

struct report {
    uint64_t frames, bytes, skipped, decode_errors, bad_text;
    double rate_p50, rate_min;
    uint64_t age_count;      /* snapshots with an age */
    double age_p50, age_p99; /* ms, NAN if no snapshot arrived */
};

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile p (0..1] of the age histogram, in ms. */
static double age_percentile(const struct client *cl, double p)
{
    if (!cl->age_count)
        return NAN;
    uint64_t rank = (uint64_t)ceil(p * (double)cl->age_count), seen = 0;
    for (size_t b = 0; b < AGE_BINS; b++) {
        seen += cl->age_bins[b];
        if (seen >= rank)
            return (double)(b * AGE_BIN_US) / 1000.0;
    }
    return (double)((AGE_BINS - 1) * AGE_BIN_US) / 1000.0;
}

/* Snapshots per second of each client: those after its first, over the
 * time from its first to the end of the run (so a client that stalls near
 * the end is not excused); 0 for a client with fewer than two. p50 and min
 * across all clients. */
static int rate_stats(const struct client *cl, struct report *r)
{
    int n = cl->opt.clients;
    double *rates = malloc((size_t)n * sizeof *rates);
    if (!rates)
        return -1;
    for (int i = 0; i < n; i++) {
        const struct conn *c = &cl->conns[i];
        double span = cl->end - c->first_frame_at;
        rates[i] = c->frames > 1 && span > 0 ? (double)(c->frames - 1) / span : 0;
    }
    qsort(rates, (size_t)n, sizeof *rates, compare_double);
    r->rate_min = rates[0];
    r->rate_p50 = rates[(n - 1) / 2];
    free(rates);
    return 0;
}

static int build_report(const struct client *cl, struct report *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < cl->opt.clients; i++) {
        const struct conn *c = &cl->conns[i];
        r->frames += c->frames;
        r->bytes += c->bytes;
        r->skipped += c->skipped;
        r->decode_errors += c->decode_errors;
        r->bad_text += c->bad_text;
    }
    r->age_count = cl->age_count;
    r->age_p50 = age_percentile(cl, 0.50);
    r->age_p99 = age_percentile(cl, 0.99);
    return rate_stats(cl, r);
}

static double round2(double v)
{
    return round(v * 100.0) / 100.0;
}

static void print_human(const struct client *cl, const struct report *r)
{
    printf("flock_client: %s, %.2f s%s\n", cl->opt.url, cl->end - cl->start,
           g_stop ? " (interrupted)" : "");
    printf("  clients   %d connected of %d (the last after %.2f s), %d welcomed, %d connect "
           "errors, %d closed early\n",
           cl->connected, cl->opt.clients, cl->connected ? cl->last_connect - cl->start : 0.0,
           cl->welcomes, cl->connect_errors, cl->closed_early);
    printf("  snapshots %llu of %.0f bytes on average, per client per second p50 %.2f min %.2f\n",
           (unsigned long long)r->frames, r->frames ? (double)r->bytes / (double)r->frames : 0.0,
           r->rate_p50, r->rate_min);
    printf("  skipped   %llu, decode errors %llu, unparsable text %llu\n",
           (unsigned long long)r->skipped, (unsigned long long)r->decode_errors,
           (unsigned long long)r->bad_text);
    if (r->age_count)
        printf("  age ms    p50 %.2f p99 %.2f\n", r->age_p50, r->age_p99);
    else
        printf("  age ms    none (no snapshot)\n");
    if (cl->first_error[0])
        printf("  first error: %s\n", cl->first_error);
}

static void add_ms(cJSON *o, const char *name, double v)
{
    if (isnan(v))
        cJSON_AddNullToObject(o, name);
    else
        cJSON_AddNumberToObject(o, name, round2(v));
}

static void print_json(const struct client *cl, const struct report *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "clients", cl->opt.clients);
    cJSON_AddNumberToObject(o, "connected", cl->connected);
    cJSON_AddNumberToObject(o, "welcomes", cl->welcomes);
    cJSON_AddNumberToObject(o, "frames", (double)r->frames);
    cJSON_AddNumberToObject(o, "frames_per_s_per_client_p50", round2(r->rate_p50));
    cJSON_AddNumberToObject(o, "frames_per_s_per_client_min", round2(r->rate_min));
    cJSON_AddNumberToObject(o, "skipped", (double)r->skipped);
    cJSON_AddNumberToObject(o, "decode_errors", (double)r->decode_errors);
    add_ms(o, "age_ms_p50", r->age_p50);
    add_ms(o, "age_ms_p99", r->age_p99);
    cJSON *replies = cl->cmd.replies ? cJSON_Duplicate(cl->cmd.replies, 1) : cJSON_CreateArray();
    cJSON_AddItemToObject(o, "replies", replies);
    char *text = cJSON_PrintUnformatted(o);
    printf("%s\n", text ? text : "{}");
    free(text);
    cJSON_Delete(o);
}

/* Prints the report; returns the exit status. */
static int report(const struct client *cl)
{
    struct report r;
    if (build_report(cl, &r)) {
        fprintf(stderr, "flock_client: out of memory\n");
        return 1;
    }
    print_human(cl, &r);
    print_json(cl, &r);
    fflush(stdout);
    int ok = cl->connected == cl->opt.clients && cl->welcomes == cl->opt.clients;
    if (cl->opt.expect_rate >= 0 && r.rate_min < cl->opt.expect_rate)
        ok = 0;
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc)
        return rc == 1 ? 0 : 2;
    const char *err = NULL;
    struct client *cl = client_create(&opt, &err);
    if (!cl) {
        fprintf(stderr, "flock_client: %s\n", err);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    lws_set_log_level(LLL_ERR, NULL);
    raise_fd_limit(opt.clients);
    if (client_start(cl)) {
        fprintf(stderr, "flock_client: cannot create the libwebsockets context\n");
        client_destroy(cl);
        return 1;
    }
    client_run(cl);
    rc = report(cl);
    client_destroy(cl);
    return rc;
}
