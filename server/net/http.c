/*
 * http.c — static files and the JSON and Prometheus endpoints (see http.h),
 * and the checks every request passes before lws serves it: the method,
 * the framing of a body (flockd takes none), the decoded path, and for a
 * WebSocket upgrade the handshake headers RFC 6455 4.2.1 requires.
 */
#include "http.h"

#include "cluster.h"
#include "metrics.h"
#include "redirect.h"
#include "room.h"
#include "textbuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What every path answers to (405's and OPTIONS' Allow). */
#define HTTP_ALLOW            "GET, HEAD, OPTIONS"
#define HTTP_UPGRADE_REQUIRED 426 /* lws 4.1.6 has no name for it */

/* ---- refusals and request checks ---------------------------------------------- */

/* The reason phrase of the statuses flockd refuses with. */
static const char *reason_phrase(unsigned status)
{
    switch (status) {
    case 301:
        return "Moved Permanently";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 426:
        return "Upgrade Required";
    case 429:
        return "Too Many Requests";
    case 503:
        return "Service Unavailable";
    default:
        return "Refused";
    }
}

/*
 * A whole response with "Connection: close", written here rather than by
 * lws: lws 4.1.6 takes the status line's HTTP version from a request it
 * has not looked at yet when an upgrade is refused (it would answer
 * "HTTP/1.0"), and knows no phrase for 204, 426 or 429. flockd speaks
 * HTTP/1.1. `extra` is more header lines, each ending in CRLF; a 204 has
 * no body. 0, or -1 if it did not fit or could not be written.
 */
static int write_response(struct lws *wsi, unsigned status, const char *extra, const char *why)
{
    unsigned char buf[LWS_PRE + 768 + REDIRECT_PATH_MAX + 512], *start = buf + LWS_PRE;
    size_t cap = sizeof buf - LWS_PRE;
    int n = status == HTTP_STATUS_NO_CONTENT
                ? snprintf((char *)start, cap,
                           "HTTP/1.1 204 No Content\r\n%sconnection: close\r\n\r\n", extra)
                : snprintf((char *)start, cap,
                           "HTTP/1.1 %u %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                           "%sconnection: close\r\n\r\n%s\n",
                           status, reason_phrase(status), strlen(why) + 1, extra, why);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    return lws_write(wsi, start, (size_t)n, LWS_WRITE_HTTP_HEADERS) < n ? -1 : 0;
}

int http_refuse(struct lws *wsi, unsigned status, const char *why)
{
    const char *extra = status == HTTP_STATUS_METHOD_NOT_ALLOWED ? "allow: " HTTP_ALLOW "\r\n"
                        : status == HTTP_UPGRADE_REQUIRED        ? "sec-websocket-version: 13\r\n"
                                                                 : "";
    return write_response(wsi, status, extra, why);
}

/*
 * No byte below 0x20 and no DEL in the path lws decoded, and none that
 * lws 4.1.6 hides: it decodes %00 into a NUL that it leaves out of the
 * path's length, so "/%00" reads as "/" and "/x.html%00" as "/x.html".
 * Its parser lays the path out, then the path's terminator, then the next
 * token: the HTTP version, or after the '?' (also turned into a
 * terminator) and one unused byte, the query's first part. A trailing
 * decoded NUL pushes that token one byte further. (An encoded CR or LF
 * ends the request line early instead, and the request then has no
 * version: has_version() refuses it.)
 */
static bool is_clean_path(struct lws *wsi, const char *uri, int len)
{
    char args[256];
    for (int i = 0; i < len; i++) {
        unsigned char c = (unsigned char)uri[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    int alen = lws_hdr_copy_fragment(wsi, args, sizeof args, WSI_TOKEN_HTTP_URI_ARGS, 0);
    if (alen >= 0) /* the query's first part and its terminator */
        return memcmp(uri + len + 2, args, (size_t)alen + 1) == 0;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        return true;            /* a first part longer than args: not checked */
    return uri[len + 1] == 'H'; /* "HTTP/1.x", which has_version() checked */
}

/* The request line ends in HTTP/1.0 or HTTP/1.1. */
static bool has_version(struct lws *wsi)
{
    char v[16];
    return lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP) > 0 &&
           (!strcmp(v, "HTTP/1.1") || !strcmp(v, "HTTP/1.0"));
}

/* True if header h came more than once (lws chains repeats as fragments). */
static bool is_repeated(struct lws *wsi, enum lws_token_indexes h)
{
    char tmp[256];
    return lws_hdr_fragment_length(wsi, h, 1) > 0 ||
           lws_hdr_copy_fragment(wsi, tmp, sizeof tmp, h, 1) >= 0;
}

/* A request without a body, framed so that every reader agrees on where it
 * ends (RFC 9112 6.1, 6.3): no Transfer-Encoding, and at most one
 * Content-Length, of 0. lws 4.1.6 would take a GET's Content-Length body
 * (or read a chunked one as the next request) and leave the transaction
 * half done; flockd serves no method that takes a body. */
static bool has_body_framing(struct lws *wsi)
{
    char cl[32];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    if (!lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH))
        return false;
    if (is_repeated(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH))
        return true;
    return lws_hdr_copy_fragment(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH, 0) != 1 ||
           cl[0] != '0';
}

/* The status to refuse any request with, or 0. *why names the reason. */
static unsigned request_refusal(struct lws *wsi, int *method, const char **why)
{
    char *uri = NULL;
    int len = 0;
    *method = lws_http_get_uri_and_method(wsi, &uri, &len);
    if (*method != LWSHUMETH_GET && *method != LWSHUMETH_HEAD && *method != LWSHUMETH_OPTIONS) {
        *why = "method not allowed";
        return HTTP_STATUS_METHOD_NOT_ALLOWED;
    }
    if (!uri || !has_version(wsi)) {
        *why = "not an HTTP/1.x request line";
        return HTTP_STATUS_BAD_REQUEST;
    }
    if (!is_clean_path(wsi, uri, len)) {
        *why = "control character in the path";
        return HTTP_STATUS_BAD_REQUEST;
    }
    if (has_body_framing(wsi)) {
        *why = "a request body is not accepted";
        return HTTP_STATUS_BAD_REQUEST;
    }
    return 0;
}

int http_redirect_to_https(struct lws *wsi, int tls_port)
{
    char loc[REDIRECT_PATH_MAX + 400], extra[sizeof loc + 16];
    if (redirect_location(wsi, tls_port, loc, sizeof loc) < 0)
        return http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
                           "this port sends requests on to https: the path must be printable "
                           "ASCII, at most 1024 bytes");
    snprintf(extra, sizeof extra, "location: %s\r\n", loc);
    return write_response(wsi, HTTP_STATUS_MOVED_PERMANENTLY, extra, "served over https");
}

int http_filter(const struct http_source *src, struct lws *wsi)
{
    const char *why;
    int method;
    if (redirect_came_to(wsi, src->redirect_port)) {
        http_redirect_to_https(wsi, src->tls_port);
        return 1;
    }
    unsigned status = request_refusal(wsi, &method, &why);
    if (status) {
        http_refuse(wsi, status, why);
        return 1;
    }
    if (method == LWSHUMETH_OPTIONS) { /* the same answer for every path */
        write_response(wsi, HTTP_STATUS_NO_CONTENT, "allow: " HTTP_ALLOW "\r\n", "");
        return 1;
    }
    return 0;
}

/* A Sec-WebSocket-Key of RFC 6455 4.1: base64 of 16 bytes, so 22 base64
 * characters and "==", the last character's unused low bits 0. */
static bool is_ws_key(const char *k, int len)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (len != 24 || k[22] != '=' || k[23] != '=')
        return false;
    for (int i = 0; i < 22; i++)
        if (!k[i] || !strchr(b64, k[i]))
            return false;
    return (strchr(b64, k[21]) - b64) % 16 == 0;
}

unsigned http_upgrade_refusal(struct lws *wsi, const char **why)
{
    char v[16], key[32];
    int method;
    unsigned status = request_refusal(wsi, &method, why);
    if (status)
        return status;
    if (method != LWSHUMETH_GET) {
        *why = "a WebSocket handshake is a GET";
        return HTTP_STATUS_BAD_REQUEST;
    }
    /* lws 4.1.6 answers an HTTP/1.0 upgrade with 101 too. */
    if (lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP) <= 0 || strcmp(v, "HTTP/1.1") != 0) {
        *why = "a WebSocket handshake needs HTTP/1.1";
        return HTTP_STATUS_BAD_REQUEST;
    }
    /* lws 4.1.6 treats any Sec-WebSocket-Version as 13 and takes any key
     * that fits its buffer, the first of two. One of each, well formed. */
    if (is_repeated(wsi, WSI_TOKEN_VERSION) ||
        lws_hdr_copy_fragment(wsi, v, sizeof v, WSI_TOKEN_VERSION, 0) < 0 || strcmp(v, "13")) {
        *why = "only WebSocket version 13 is spoken";
        return HTTP_UPGRADE_REQUIRED;
    }
    int klen = lws_hdr_copy_fragment(wsi, key, sizeof key, WSI_TOKEN_KEY, 0);
    if (is_repeated(wsi, WSI_TOKEN_KEY) || !is_ws_key(key, klen)) {
        *why = "Sec-WebSocket-Key must be one base64 value of 16 bytes";
        return HTTP_STATUS_BAD_REQUEST;
    }
    return 0;
}

/* ---- bodies --------------------------------------------------------------------- */

/* GET /healthz: tick and boids of the default room. */
static int render_health(const struct http_source *src, char *buf, size_t cap)
{
    struct room_info info;
    room_info(lobby_room_room(lobby_at(src->lobby, 0)), &info);
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t,
                   "{\"status\":\"ok\",\"tick\":%llu,\"clients\":%zu,\"boids\":%u,\"rooms\":%zu",
                   (unsigned long long)info.tick, sessions_total(src->sessions), info.boids,
                   lobby_count(src->lobby));
    if (cluster_current())
        cluster_render_health(cluster_current(), &t);
    textbuf_printf(&t, "}\n");
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

static void render_room(struct textbuf *t, struct lobby_room *lr, bool first, const char *node)
{
    struct lobby_room_summary sum;
    struct room_info info;
    lobby_room_summary(lr, &sum);
    room_info(lobby_room_room(lr), &info);
    textbuf_printf(t,
                   "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":%u,\"admins\":%u,"
                   "\"viewers\":%u,\"boids\":%u,\"tick\":%llu,\"tick_hz\":%g,\"snapshot_hz\":%g,"
                   "\"password\":%s,\"teams\":%u,\"late_p99_ms\":%.3f",
                   first ? "" : ",", sum.name, proto_mode_name(sum.mode), sum.players, sum.admins,
                   sum.viewers, info.boids, (unsigned long long)info.tick, info.tick_hz,
                   info.snapshot_hz, sum.has_password ? "true" : "false", sum.teams,
                   info.late_p99_ms);
    if (node)
        textbuf_printf(t, ",\"node\":\"%s\"", node);
    textbuf_printf(t, "}");
}

/* A room of the cluster's directory that this node has: rendered with
 * what this node knows of its members, and true; false if it has not. */
static bool render_local(void *arg, struct textbuf *t, const char *name, const char *node,
                         bool first)
{
    const struct lobby *l = arg;
    for (size_t i = 0; i < lobby_count(l); i++)
        if (!strcmp(lobby_room_name(lobby_at(l, i)), name)) {
            render_room(t, lobby_at(l, i), first, node);
            return true;
        }
    return false;
}

/* GET /api/rooms (PROTOCOL.md §10). Room names are [A-Za-z0-9_-]: no
 * escaping needed. */
static int render_rooms(const struct lobby *l, char *buf, size_t cap)
{
    struct lobby_room *order[1024]; /* max-rooms is at most 1024 */
    int n = rooms_in_order(l, order, sizeof order / sizeof order[0]);
    if (n < 0)
        return n;
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t, "{\"rooms\":[");
    if (cluster_current()) /* every room of the cluster, each with its node */
        cluster_render_rooms(cluster_current(), &t, render_local, (void *)l);
    for (int i = 0; !cluster_current() && i < n; i++)
        render_room(&t, order[i], i == 0, NULL);
    textbuf_printf(&t, "],\"max_rooms\":%u,\"create\":%s}\n", lobby_max_rooms(l),
                   lobby_can_create(l) ? "true" : "false");
    return textbuf_finish(&t);
}

/* One per-room gauge of /metrics: its name, help and value. */
struct room_gauge {
    const char *name, *help;
    bool flock; /* only rooms whose flock was measured */
    double (*value)(const struct room_info *i);
};

static double g_boids(const struct room_info *i)
{
    return i->boids;
}
static double g_tick_mean(const struct room_info *i)
{
    return i->tick_ms_mean / 1e3;
}
static double g_tick_p99(const struct room_info *i)
{
    return i->tick_ms_p99 / 1e3;
}
static double g_late_p99(const struct room_info *i)
{
    return i->late_p99_ms / 1e3;
}
static double g_local(const struct room_info *i)
{
    return i->flock.local_polarization;
}
static double g_global(const struct room_info *i)
{
    return i->flock.global_polarization;
}
static double g_nn_p5(const struct room_info *i)
{
    return i->flock.nn_p5;
}
static double g_nn_median(const struct room_info *i)
{
    return i->flock.nn_median;
}
static double g_speed(const struct room_info *i)
{
    return i->flock.mean_speed;
}
static double g_clusters(const struct room_info *i)
{
    return i->flock.clusters;
}
static double g_largest(const struct room_info *i)
{
    return i->flock.largest_cluster;
}
static double g_flocks(const struct room_info *i)
{
    return i->flock.flocks;
}
static double g_mills(const struct room_info *i)
{
    return i->flock.mills;
}
static double g_mill_fraction(const struct room_info *i)
{
    return i->flock.mill_fraction;
}
static double g_measured_tick(const struct room_info *i)
{
    return (double)i->flock_tick;
}
static double g_measure_s(const struct room_info *i)
{
    return i->flock_ms / 1e3;
}

static const struct room_gauge room_gauges[] = {
    {"room_boids", "Boids in the room.", false, g_boids},
    {"room_tick_seconds_mean", "How long the room's recent ticks took, mean.", false, g_tick_mean},
    {"room_tick_seconds_p99", "How long the room's recent ticks took, 99th percentile.", false,
     g_tick_p99},
    {"room_tick_lateness_seconds_p99", "How late the room's recent ticks started, 99th percentile.",
     false, g_late_p99},
    {"flock_local_polarization", "Mean alignment of each boid's neighbourhood, 0..1.", true,
     g_local},
    {"flock_global_polarization", "Alignment of the whole flock, 0..1.", true, g_global},
    {"flock_nearest_neighbour_p5_units", "Nearest-neighbour distance, 5th percentile.", true,
     g_nn_p5},
    {"flock_nearest_neighbour_median_units", "Nearest-neighbour distance, median.", true,
     g_nn_median},
    {"flock_mean_speed_units_per_second", "Mean speed of the boids.", true, g_speed},
    {"flock_clusters", "Connected groups of boids within perception, lone boids included.", true,
     g_clusters},
    {"flock_largest_cluster_boids", "Boids in the largest cluster.", true, g_largest},
    {"flock_flocks", "Clusters of at least 10 boids.", true, g_flocks},
    {"flock_mills", "Flocks that circle about their centre.", true, g_mills},
    {"flock_mill_fraction", "Share of the boids in mills, 0..1.", true, g_mill_fraction},
    {"flock_measured_tick", "The tick the flock's measures were taken at.", true, g_measured_tick},
    {"flock_measure_seconds", "How long taking the flock's measures last took.", true, g_measure_s},
};

/* Per-room gauges after the process-wide metrics: each family's HELP and
 * TYPE once, then one sample per room, {room="NAME"} (names need no
 * escaping: [A-Za-z0-9_-]). */
static void render_room_metrics(const struct lobby *l, struct textbuf *t)
{
    struct lobby_room *order[1024]; /* max-rooms is at most 1024 */
    int n = rooms_in_order(l, order, sizeof order / sizeof order[0]);
    struct room_info *info = n > 0 ? malloc((size_t)n * sizeof *info) : NULL;
    if (!info)
        return;
    for (int i = 0; i < n; i++)
        room_info(lobby_room_room(order[i]), &info[i]);
    for (size_t g = 0; g < sizeof room_gauges / sizeof room_gauges[0]; g++) {
        const struct room_gauge *rg = &room_gauges[g];
        textbuf_printf(t, "# HELP flockd_%s %s\n# TYPE flockd_%s gauge\n", rg->name, rg->help,
                       rg->name);
        for (int i = 0; i < n; i++)
            if (!rg->flock || info[i].has_flock)
                textbuf_printf(t, "flockd_%s{room=\"%s\"} %.9g\n", rg->name,
                               room_name(lobby_room_room(order[i])), rg->value(&info[i]));
    }
    free(info);
}

/* GET /metrics: the process's counters, then each room's gauges. */
static int render_metrics(const struct lobby *l, char *buf, size_t cap)
{
    int len = metrics_render(buf, cap);
    if (len < 0)
        return len;
    struct textbuf t;
    textbuf_init(&t, buf + len, cap - (size_t)len);
    render_room_metrics(l, &t);
    if (cluster_current())
        cluster_render_metrics(cluster_current(), &t);
    int more = textbuf_finish(&t);
    return more < 0 ? more : len + more;
}

/* ---- transactions -------------------------------------------------------------------- */

static void http_session_free(struct http_session *h)
{
    free(h->body);
    h->body = NULL;
}

/* The body for uri into h (its type in *type): 0, or PROTO_E_NOT_FOUND. A
 * body that does not fit is served empty. */
static int render(const struct http_source *src, const char *uri, struct http_session *h,
                  const char **type)
{
    char *buf = h->body + LWS_PRE;
    int len;
    *type = "application/json";
    if (!strcmp(uri, "/healthz")) {
        len = render_health(src, buf, HTTP_BODY_MAX);
    } else if (!strcmp(uri, "/api/rooms")) {
        len = render_rooms(src->lobby, buf, HTTP_BODY_MAX);
    } else if (!strcmp(uri, "/metrics")) {
        *type = "text/plain; version=0.0.4";
        len = render_metrics(src->lobby, buf, HTTP_BODY_MAX);
    } else {
        return PROTO_E_NOT_FOUND;
    }
    h->len = len > 0 ? (size_t)len : 0;
    return 0;
}

/* LWS_CALLBACK_HTTP: renders the body and sends the headers; a HEAD ends
 * there. Returns as an lws callback does: 0, or -1 to close the
 * connection. */
static int http_begin(const struct http_source *src, struct http_session *h, struct lws *wsi)
{
    char *uri = NULL;
    const char *type;
    int uri_len = 0, method = lws_http_get_uri_and_method(wsi, &uri, &uri_len);
    if (!uri || (method != LWSHUMETH_GET && method != LWSHUMETH_HEAD))
        return -1; /* http_filter() let no other method through */
    h->body = malloc(LWS_PRE + HTTP_BODY_MAX);
    if (!h->body)
        return -1;
    lobby_lock(src->lobby); /* the rooms as one service thread sees them, the others wait */
    int rendered = render(src, uri, h, &type);
    lobby_unlock(src->lobby);
    if (rendered < 0)
        return lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL) ? -1 : 0;
    unsigned char hdr[LWS_PRE + 512], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, type, h->len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    if (method == LWSHUMETH_HEAD) {
        http_session_free(h);
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    lws_callback_on_writable(wsi);
    return 0;
}

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    struct http_session *h = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
        return http_filter(lws_get_protocol(wsi)->user, wsi);
    case LWS_CALLBACK_HTTP:
        return http_begin(lws_get_protocol(wsi)->user, h, wsi);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (!h || !h->body)
            return -1;
        if (lws_write(wsi, (unsigned char *)h->body + LWS_PRE, h->len, LWS_WRITE_HTTP_FINAL) <
            (int)h->len)
            return -1;
        http_session_free(h);
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    case LWS_CALLBACK_CLOSED_HTTP:
    /* lws 4.1.6 ends a transaction by unbinding the protocol (a completed
     * transaction, or a request body it consumed itself) without
     * CLOSED_HTTP: the body is freed here too, or it outlives the
     * connection. */
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (h)
            http_session_free(h);
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- mounts ------------------------------------------------------------------------------ */

static struct lws_http_mount endpoint(const char *path, const struct lws_http_mount *next)
{
    return (struct lws_http_mount){
        .mount_next = next,
        .mountpoint = path,
        .origin = HTTP_PROTOCOL,
        .origin_protocol = LWSMPRO_CALLBACK,
        .mountpoint_len = (unsigned char)strlen(path),
    };
}

const struct lws_http_mount *http_mounts_init(struct http_mounts *hm, const char *web_root)
{
    hm->metrics = endpoint("/metrics", NULL);
    hm->rooms = endpoint("/api/rooms", &hm->metrics);
    hm->health = endpoint("/healthz", &hm->rooms);
    hm->root = (struct lws_http_mount){
        .mount_next = &hm->health,
        .mountpoint = "/",
        .origin = web_root,
        .def = "index.html",
        .origin_protocol = LWSMPRO_FILE,
        .mountpoint_len = 1,
    };
    return &hm->root;
}
