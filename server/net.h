/*
 * net — the libwebsockets side of flockd: HTTP (static files, /healthz,
 * /metrics) and the WebSocket endpoint /ws.
 *
 * One service thread (the caller of net_run) owns every connection and
 * the lobby. Text messages are reassembled under a size cap, rate limited,
 * parsed and validated by proto, checked against the sender's role by the
 * lobby and queued to the sender's room; the rooms' replies and latest
 * frames come back through net_wake() (lws_cancel_service), and each
 * client gets its room's latest frame whenever its socket can take one:
 * slow clients skip frames, a client stale for too long is closed.
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
    const char *host;     /* bind address; "0.0.0.0" or "" for all */
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
};

struct net;

/* Creates the lws context and listens. NULL and a static reason on error. */
struct net *net_create(const struct net_config *cfg, struct lobby *lobby, const char **err);

/* The port actually bound (useful with port 0). */
int net_port(const struct net *n);

/* Services connections until net_stop(); then closes clients with 1001. */
void net_run(struct net *n);

/* Asks net_run() to finish (any thread, async-signal-unsafe). */
void net_stop(struct net *n);

/* Wakes the service thread: new frame or replies (any thread). */
void net_wake(void *n);

void net_destroy(struct net *n);

#endif
