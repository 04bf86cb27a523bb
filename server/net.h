/*
 * net — the libwebsockets side of flockd: one lws context and its service
 * loop, serving HTTP (http.h: static files, /healthz, /metrics,
 * /api/rooms) and the WebSocket endpoint PROTO_WS_PATH.
 *
 * A struct net is one service thread (the caller of net_run) with its lws
 * context and everything per connection: its sessions (sessions.h), each
 * session's life cycle (session.h), what happens to a message
 * (dispatch.h) and what the rooms send back (deliver.h). The lobby and the
 * rooms are shared. Rooms wake the thread through net_wake()
 * (lws_cancel_service) after new replies or a new frame.
 *
 * Never: touches the simulation directly. Threading: only net_wake() and
 * net_stop() may be called from other threads.
 */
#ifndef FLOCKD_NET_H
#define FLOCKD_NET_H

#include <stddef.h>
#include <stdint.h>

struct lobby;

struct net_config {
    const char *host;     /* numeric address to listen on (listener.h); "::" for all */
    int port;             /* 0: an ephemeral port */
    const char *web_root; /* directory served at / */
    uint32_t max_message; /* bytes; larger messages close with 1009 */
    double stale_timeout; /* seconds a client may go without a frame */
    uint32_t max_clients;
    size_t max_frame; /* largest snapshot, for tx_packet_size */
    double rate;      /* commands per second per connection */
    uint32_t burst;   /* commands at once */
    uint32_t max_per_ip;
    const char *origins;                  /* allowed Origin values, comma-separated; "" = any */
    uint32_t ping_interval, idle_timeout; /* seconds */
    /* PEM files: https and wss (checked, tlsfiles.h); NULL or "": plain. */
    const char *tls_cert, *tls_key;
    int tls_redirect_port; /* plain HTTP answered with 301s to https (redirect.h); 0: none */
};

struct net;

/* Listens on cfg->host and cfg->port (listener.h) and creates the lws
 * context serving that socket. NULL and a static reason on error. */
struct net *net_create(const struct net_config *cfg, struct lobby *lobby, const char **err);

/* The port actually bound (useful with port 0). */
int net_port(const struct net *n);

/* Services connections until net_stop(); then closes clients with 1001. */
void net_run(struct net *n);

/* Asks the service thread to load the TLS certificate and key again from
 * their files (SIGHUP): checked first (tlsfiles.h), then new connections
 * get the new pair; connections open keep theirs. A bad pair is refused
 * with a message and the old one stays. Any thread. */
void net_reload_tls(struct net *n);

/* Asks net_run() to finish (any thread, async-signal-unsafe). */
void net_stop(struct net *n);

/* Wakes the service thread: new frame or replies (any thread). */
void net_wake(void *n);

void net_destroy(struct net *n);

#endif
