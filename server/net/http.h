/*
 * http — flockd's HTTP side: static files from the web root at /, and the
 * endpoints /healthz, /metrics and /api/rooms (PROTOCOL.md §10) served
 * with the bodies endpoints.h renders; the checks every request passes
 * before lws serves it, a WebSocket handshake's included, and the
 * refusals they answer with (PROTOCOL.md §1, §10.1).
 *
 * net.c puts the mounts into its lws context and http_callback() into its
 * protocol table under HTTP_PROTOCOL, with a struct http_source as that
 * protocol's `user` pointer (one per service thread).
 *
 * Never: touches WebSocket sessions. Threading: each service thread with
 * its own struct http_source; the bodies are rendered under the lobby's
 * lock.
 */
#ifndef FLOCKD_HTTP_H
#define FLOCKD_HTTP_H

#include <stddef.h>

#include <libwebsockets.h>

#include "lobby.h"
#include "sessions.h"

struct cluster;

#define HTTP_PROTOCOL "flockd-http" /* the lws protocol the endpoint mounts name */
#define HTTP_BODY_MAX (512 * 1024)  /* largest body (the room list) */
/* What flockd's lws callbacks (this one's, net.c's) return to have lws
 * close the connection: lws' own convention, not an error code. */
#define HTTP_CB_CLOSE (-1)

/* What the endpoints report on. */
struct http_source {
    struct lobby *lobby;
    struct cluster *cluster;         /* the node's cluster; NULL in a single process */
    const struct sessions *sessions; /* the clients of /healthz */
    int tls_port;                    /* the https port when serving TLS; 0: plain */
    int redirect_port;               /* --tls-redirect-port; 0: none */
};

/* One HTTP transaction, in lws' per-session storage. */
struct http_session {
    char *body; /* owned: LWS_PRE headroom, then len bytes */
    size_t len;
};

/* The mount chain: the endpoints first, then static files from web_root
 * (which must outlive the lws context). Lives in caller-owned storage. */
struct http_mounts {
    struct lws_http_mount root, health, rooms, metrics;
};
const struct lws_http_mount *http_mounts_init(struct http_mounts *hm, const char *web_root);

/*
 * Writes a complete refusal: `status`, "Connection: close", a one-line
 * text body with `why`, and Allow on a 405, Sec-WebSocket-Version: 13 on
 * a 426. 0, or a negative PROTO_E_* if it did not fit (_NOSPACE) or could
 * not be written (_INTERNAL). The caller then ends the connection.
 */
int http_refuse(struct lws *wsi, unsigned status, const char *why);

/*
 * LWS_CALLBACK_FILTER_HTTP_CONNECTION, for whichever protocol lws asks:
 * GET and HEAD pass (0). Any other method gets 405, a path with a control
 * character (decoded, %00 included) or a request with body framing
 * (Transfer-Encoding, a repeated or non-zero Content-Length) 400, OPTIONS
 * a 204 with Allow; these return 1 after writing the answer, and lws
 * closes the connection. A request that came to src's redirect port gets
 * a 301 to the same path on https instead, whatever it is (1).
 */
int http_filter(const struct http_source *src, struct lws *wsi);

/*
 * Writes a complete 301 to the request's path and query on https at
 * tls_port (redirect.h), or a 400 for a path that cannot be sent on; then
 * the caller ends the connection. 0, or a negative PROTO_E_* if it could
 * not be written (http_refuse()).
 */
int http_redirect_to_https(struct lws *wsi, int tls_port);

/*
 * The HTTP status to refuse a WebSocket upgrade with for how it is made
 * (http_filter()'s rules, then GET over HTTP/1.1, one Sec-WebSocket-Version
 * of 13 (else 426), one Sec-WebSocket-Key of 16 bytes in base64), with the
 * reason in *why; 0 if it is well made.
 */
unsigned http_upgrade_refusal(struct lws *wsi, const char **why);

/* The lws callback of HTTP_PROTOCOL. */
int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len);

#endif
