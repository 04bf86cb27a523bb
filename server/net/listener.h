/*
 * listener — flockd's listening socket: opened by flockd itself on exactly
 * the address --host names (lws 4.1.6's own listener binds a dual-stack
 * socket to "::" and puts an IPv4 --host into the flowinfo field, so it
 * listens everywhere), then handed to a service thread's lws context,
 * which accepts from it.
 *
 * listener_open() makes the socket: SO_REUSEADDR and SO_REUSEPORT (each
 * service thread may open its own on the same address and port, and the
 * kernel spreads new connections over them), non-blocking, close-on-exec.
 * listener_adopt() puts it into an lws vhost as a raw file descriptor;
 * whenever it is readable, listener_callback() accepts every waiting
 * connection and adopts each into that vhost as an HTTP connection, from
 * where lws serves it as if its own listener had accepted it. The vhost's
 * protocol table must hold LISTENER_PROTOCOL with listener_callback.
 *
 * The vhost is created with CONTEXT_PORT_NO_LISTEN_SERVER: lws opens no
 * socket of its own.
 *
 * Never: reads or writes a connection (lws does). Threading:
 * listener_open() and listener_port() anywhere; the rest on the service
 * thread that owns the vhost.
 */
#ifndef FLOCKD_LISTENER_H
#define FLOCKD_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

#include <libwebsockets.h>

#define LISTENER_PROTOCOL "flockd-listen" /* the lws protocol of the listening socket */
#define LISTENER_BATCH    128             /* connections accepted per readiness, at most */
#define LISTENER_PAUSE_US 100000          /* out of descriptors: accepting waits this long */

/*
 * Opens a listening TCP socket on host and port. host is a numeric IPv4 or
 * IPv6 address of this machine ("0.0.0.0": every IPv4 address; "::": every
 * IPv4 and IPv6 address; any other IPv6 address is bound IPv6-only); port 0
 * picks a free port. Returns the descriptor, which the caller owns until
 * listener_adopt(), or a negative PROTO_E_* with a static reason in *err:
 * PROTO_E_BAD_ARG if host is not a numeric address or not one of this
 * machine, PROTO_E_INTERNAL if the socket cannot be made or bound (the
 * port is in use, no permission).
 */
int listener_open(const char *host, int port, const char **err);

/* The port fd is bound to, or PROTO_E_INTERNAL. */
int listener_port(int fd);

/* Hands fd to vh: from now on lws owns it (and closes it with the context,
 * or at once if adoption fails). Its connections take TLS when the vhost
 * serves it, unless is_plain (the --tls-redirect-port socket).
 * 0, or PROTO_E_INTERNAL. */
int listener_adopt(struct lws_vhost *vh, int fd, bool is_plain);

/* The lws callback of LISTENER_PROTOCOL. */
int listener_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                      size_t len);

#endif
