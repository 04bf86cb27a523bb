/*
 * net — the libwebsockets side of flockd: its service threads, serving
 * HTTP (http.h: static files, /healthz, /metrics, /api/rooms) and the
 * WebSocket endpoint PROTO_WS_PATH.
 *
 * A struct net is --net-threads service threads (the caller of net_run is
 * the first). Each has its own lws context (Debian's lws is built with
 * LWS_MAX_SMP=1) and its own listening socket on the same port
 * (SO_REUSEPORT: the kernel spreads new connections), and everything per
 * connection: its sessions (sessions.h), each session's life cycle
 * (session.h), what happens to a message (dispatch.h) and what the rooms
 * send back (deliver.h). A connection lives on one thread for its whole
 * life. Shared between them: the lobby and the rooms (lobby calls under
 * lobby_lock(); frames by reference, announced by each thread to its own
 * members without it), the connection limits (sessions_shared), kicks of
 * another thread's member (a mailbox per thread). Rooms wake every thread
 * through net_wake() (lws_cancel_service) after new replies or a new
 * frame; the first thread also housekeeps the lobby.
 *
 * Never: touches the simulation directly. Threading: net_wake(),
 * net_reload_tls() and net_stop() may be called from any thread.
 */
#ifndef FLOCKD_NET_H
#define FLOCKD_NET_H

#include <stddef.h>
#include <stdint.h>

struct cluster;
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
    int tls_redirect_port;   /* plain HTTP answered with 301s to https (redirect.h); 0: none */
    unsigned threads;        /* service threads; 0: one per online CPU (at most 64) */
    struct cluster *cluster; /* the node's cluster, for the endpoints; NULL: a single process */
};

struct net;

/* Listens on cfg->host and cfg->port (listener.h) once per service thread
 * and creates each thread's lws context serving its socket (the threads
 * start in net_run()). NULL and a static reason on error. */
struct net *net_create(const struct net_config *cfg, struct lobby *lobby, const char **err);

/* The port actually bound (useful with port 0). */
int net_port(const struct net *n);

/* The service threads it runs. */
unsigned net_threads(const struct net *n);

/* Starts the other service threads and serves on the caller's until
 * net_stop(); then every thread closes its clients with 1001, and the
 * others are joined before it returns. */
void net_run(struct net *n);

/* Asks every service thread to load the TLS certificate and key again
 * from their files (SIGHUP): checked first (tlsfiles.h), then new
 * connections get the new pair; connections open keep theirs. A bad pair
 * is refused with a message and the old one stays. Any thread. */
void net_reload_tls(struct net *n);

/* Asks net_run() to finish (any thread, async-signal-unsafe). */
void net_stop(struct net *n);

/* Wakes every service thread: new frame or replies (any thread). */
void net_wake(void *n);

void net_destroy(struct net *n);

#endif
