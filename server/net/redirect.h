/*
 * redirect — where a plain-HTTP request to a flockd that serves TLS is
 * sent (--tls-redirect-port): the same path and query on https:// at the
 * TLS port. The connections of that port are adopted without TLS
 * (listener.h); http.c answers each request on them with a 301 to this
 * location, and nothing else is served there.
 *
 * The location's host is the request's Host header without its port when
 * that is a plain host name or address ([A-Za-z0-9.-], or an IPv6 literal
 * in brackets), else the address the request came to. (A bare '?' with
 * no query may come out as lws 4.1.6 parsed it, with a stray byte.)
 *
 * Never: writes to the connection. Threading: the service thread.
 */
#ifndef FLOCKD_REDIRECT_H
#define FLOCKD_REDIRECT_H

#include <stdbool.h>
#include <stddef.h>

#include <libwebsockets.h>

#define REDIRECT_PATH_MAX 1024 /* longest path and query sent on */

/*
 * "https://HOST[:tls_port]/PATH[?QUERY]" for the request on wsi into
 * out[cap]. Returns its length, or PROTO_E_BAD_ARG if the path and query
 * are longer than REDIRECT_PATH_MAX or hold bytes outside printable ASCII
 * or a space, PROTO_E_NOSPACE if the location does not fit cap (the
 * caller answers 400 to either).
 */
int redirect_location(struct lws *wsi, int tls_port, char *out, size_t cap);

/* Whether the connection of wsi came to local port `port` (the redirect
 * port's connections are told apart by where they came, not by lws). */
bool redirect_came_to(struct lws *wsi, int port);

#endif
