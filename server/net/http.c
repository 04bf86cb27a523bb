/*
 * http.c — static files and the JSON and Prometheus endpoints (see http.h;
 * their bodies come from endpoints.h), and the checks every request passes
 * before lws serves it: the method, the framing of a body (flockd takes
 * none), the decoded path, and for a WebSocket upgrade the handshake
 * headers RFC 6455 4.2.1 requires.
 */
#include "http.h"

#include "endpoints.h"
#include "proto.h"
#include "redirect.h"

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
 * no body. 0, or PROTO_E_NOSPACE if it did not fit, PROTO_E_INTERNAL if
 * lws could not write it.
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
        return PROTO_E_NOSPACE;
    return lws_write(wsi, start, (size_t)n, LWS_WRITE_HTTP_HEADERS) < n ? PROTO_E_INTERNAL : 0;
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
        len = endpoints_health(src->lobby, src->cluster, sessions_total(src->sessions), buf,
                               HTTP_BODY_MAX);
    } else if (!strcmp(uri, "/api/rooms")) {
        len = endpoints_rooms(src->lobby, src->cluster, buf, HTTP_BODY_MAX);
    } else if (!strcmp(uri, "/metrics")) {
        *type = "text/plain; version=0.0.4";
        len = endpoints_metrics(src->lobby, src->cluster, buf, HTTP_BODY_MAX);
    } else {
        return PROTO_E_NOT_FOUND;
    }
    h->len = len > 0 ? (size_t)len : 0;
    return 0;
}

/* LWS_CALLBACK_HTTP: renders the body and sends the headers; a HEAD ends
 * there. Returns as an lws callback does: 0, or HTTP_CB_CLOSE to close the
 * connection. */
static int http_begin(const struct http_source *src, struct http_session *h, struct lws *wsi)
{
    char *uri = NULL;
    const char *type;
    int uri_len = 0, method = lws_http_get_uri_and_method(wsi, &uri, &uri_len);
    if (!uri || (method != LWSHUMETH_GET && method != LWSHUMETH_HEAD))
        return HTTP_CB_CLOSE; /* http_filter() let no other method through */
    h->body = malloc(LWS_PRE + HTTP_BODY_MAX);
    if (!h->body)
        return HTTP_CB_CLOSE;
    lobby_lock(src->lobby); /* the rooms as one service thread sees them, the others wait */
    int rendered = render(src, uri, h, &type);
    lobby_unlock(src->lobby);
    if (rendered < 0)
        return lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL) ? HTTP_CB_CLOSE : 0;
    unsigned char hdr[LWS_PRE + 512], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, type, h->len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return HTTP_CB_CLOSE;
    if (method == LWSHUMETH_HEAD) {
        http_session_free(h);
        return lws_http_transaction_completed(wsi) ? HTTP_CB_CLOSE : 0;
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
            return HTTP_CB_CLOSE;
        if (lws_write(wsi, (unsigned char *)h->body + LWS_PRE, h->len, LWS_WRITE_HTTP_FINAL) <
            (int)h->len)
            return HTTP_CB_CLOSE;
        http_session_free(h);
        return lws_http_transaction_completed(wsi) ? HTTP_CB_CLOSE : 0;
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
