/*
 * http.c — static files and the JSON and Prometheus endpoints (see http.h).
 */
#include "http.h"

#include "metrics.h"
#include "room.h"
#include "textbuf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- bodies --------------------------------------------------------------------- */

/* GET /healthz: tick and boids of the default room. */
static int render_health(const struct http_source *src, char *buf, size_t cap)
{
    struct room_info info;
    room_info(lobby_room_room(lobby_at(src->lobby, 0)), &info);
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t,
                   "{\"status\":\"ok\",\"tick\":%llu,\"clients\":%zu,\"boids\":%u,\"rooms\":%zu}\n",
                   (unsigned long long)info.tick, sessions_count(src->sessions), info.boids,
                   lobby_count(src->lobby));
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
    for (int i = 0; i < n; i++)
        render_room(&t, order[i], i == 0);
    textbuf_printf(&t, "],\"max_rooms\":%u,\"create\":%s}\n", lobby_max_rooms(l),
                   lobby_can_create(l) ? "true" : "false");
    return textbuf_finish(&t);
}

/* ---- transactions -------------------------------------------------------------------- */

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
        len = metrics_render(buf, HTTP_BODY_MAX);
    } else {
        return PROTO_E_NOT_FOUND;
    }
    h->len = len > 0 ? (size_t)len : 0;
    return 0;
}

/* LWS_CALLBACK_HTTP: renders the body and sends the headers. Returns as
 * an lws callback does: 0, or -1 to close the connection. */
static int http_begin(const struct http_source *src, struct http_session *h, struct lws *wsi)
{
    char uri[64];
    const char *type;
    h->body = malloc(LWS_PRE + HTTP_BODY_MAX);
    if (!h->body || lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0)
        return -1;
    if (render(src, uri, h, &type) < 0)
        return lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL) ? -1 : 0;
    unsigned char hdr[LWS_PRE + 512], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, type, h->len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    struct http_session *h = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_begin(lws_get_protocol(wsi)->user, h, wsi);
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
