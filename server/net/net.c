/*
 * net.c — the service threads: each one's lws context, protocol table,
 * listening socket and service loop (see net.h).
 *
 * The WebSocket callback only translates lws events into the parts:
 * FILTER_HTTP_CONNECTION to http.h's request checks, CONFIRM_UPGRADE to
 * the one decision on an upgrade (before any 101), ESTABLISHED and
 * CLOSED to session.h, RECEIVE to session.h's reassembly
 * and then dispatch.h, WRITEABLE and the wake-ups from the rooms to
 * deliver.h. This is the edge: the one place that reads the clock for
 * them. Lobby calls are made under lobby_lock(); frame delivery
 * (deliver_rooms' announcements, WRITEABLE) takes no lock shared between
 * threads but the rooms' own.
 *
 * Each thread runs its context on a libev loop of its own (epoll, through
 * lws's libev plugin) rather than lws's poll() of every connection: with
 * thousands of viewers per thread, a round of the loop then costs what
 * happened in it, and a round between two batches of frames (deliver.h)
 * is cheap enough to come often.
 */
#define _POSIX_C_SOURCE 200809L

#include "net.h"

#include "clock.h"
#include "deliver.h"
#include "dispatch.h"
#include "http.h"
#include "listener.h"
#include "lobby.h"
#include "metrics.h"
#include "proto.h"
#include "proto_v2.h"
#include "redirect.h"
#include "session.h"
#include "sessions.h"
#include "tlsfiles.h"

#include <ev.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOUSEKEEP_NS 100000000LL  /* grace periods and room expiry, every 100 ms */
#define GOODBYE_NS   2000000000LL /* clients get this long for their 1001 close */
#define KICKS_MAX    1024         /* kicks from other threads waiting for a wake-up */
/* What lws loads to run on a libev loop (Debian's libwebsockets-evlib-ev). */
#define EVLIB_PLUGIN LWS_INSTALL_LIBDIR "/libwebsockets-evlib_ev.so"

struct net;

/* One service thread: its context and everything per connection. */
struct net_thread {
    struct net *net;
    unsigned index;
    struct sessions sessions;
    struct http_source http;
    struct http_mounts mounts;
    struct lws_protocols protocols[6];
    struct lws_context *ctx;
    struct ev_loop *loop; /* the thread's event loop (epoll), lws's own */
    struct lws_vhost *vhost;
    atomic_int reload_tls; /* net_reload_tls() asked */
    atomic_int woken;      /* net_wake() since on_wake() last ran */
    int64_t housekept_ns;  /* thread 0 housekeeps */
    pthread_t thread;
    bool is_started;
    /* Members of this thread kicked from another (lobby_set_threads). */
    pthread_mutex_t kick_lock;
    struct kick {
        uint64_t client;
        enum lobby_eviction why;
    } kicks[KICKS_MAX];
    size_t nkicks;
    atomic_int has_kicks; /* nkicks > 0, read without the lock */
};

struct net {
    struct net_config cfg;
    char host[256], web_root[1024], origins[1024];
    struct lobby *lobby;
    lws_retry_bo_t retry;
    int port;
    atomic_int stop;
    char tls_cert[1024], tls_key[1024];
    struct sessions_shared shared; /* --max-clients, --max-per-ip over every thread */
    bool has_shared;
    unsigned nthreads;
    struct net_thread *threads;
};

/* ---- WebSocket upgrade -------------------------------------------------------- */

/* Only PROTO_WS_PATH upgrades to WebSocket. */
static bool is_ws_path(struct lws *wsi)
{
    char *uri = NULL;
    int len = 0;
    if (lws_http_get_uri_and_method(wsi, &uri, &len) < 0 || !uri)
        return false;
    return (size_t)len == strlen(PROTO_WS_PATH) && memcmp(uri, PROTO_WS_PATH, (size_t)len) == 0;
}

/* With --origins set, a browser (it sends Origin) must come from one of
 * them; clients without an Origin header are not browsers and pass. */
static bool is_origin_allowed(const struct net *n, struct lws *wsi)
{
    char origin[256];
    if (!n->origins[0] || lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
        return true;
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return false;
    size_t len = strlen(origin);
    for (const char *p = n->origins; *p;) {
        size_t item = strcspn(p, ",");
        while (item && *p == ' ') { /* tolerate "a, b" */
            p++;
            item--;
        }
        if (item == len && memcmp(p, origin, len) == 0)
            return true;
        p += item;
        if (*p == ',')
            p++;
    }
    return false;
}

/*
 * LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: the one place an upgrade is refused,
 * before any 101, with an HTTP status: a badly made handshake (400, 426),
 * another path (404), an Origin not allowed (403), no room for another
 * client (503) or for another from this address (429). Returns as lws
 * wants: 0 to go on, 1 after writing the refusal, HTTP_CB_CLOSE to hang
 * up.
 */
static int confirm_upgrade(struct net_thread *nt, struct lws *wsi, const char *to)
{
    struct net *n = nt->net;
    if (redirect_came_to(wsi, nt->http.redirect_port)) /* no WebSocket there: to https */
        return http_redirect_to_https(wsi, nt->http.tls_port) < 0 ? HTTP_CB_CLOSE : 1;
    const char *why = "";
    unsigned status = strcmp(to, "websocket") ? HTTP_STATUS_BAD_REQUEST : 0;
    enum metrics_limit full;
    if (!status)
        status = http_upgrade_refusal(wsi, &why);
    if (!status && !is_ws_path(wsi)) {
        status = HTTP_STATUS_NOT_FOUND;
        why = "WebSocket is at " PROTO_WS_PATH;
    }
    if (!status && !is_origin_allowed(n, wsi)) {
        metrics_limit(LIMIT_ORIGIN);
        status = HTTP_STATUS_FORBIDDEN;
        why = "origin not allowed";
    }
    if (!status && (full = session_would_admit(wsi, &nt->sessions)) != LIMIT_COUNT) {
        bool is_address = full == LIMIT_CONNECTIONS_IP;
        status = is_address ? 429 : HTTP_STATUS_SERVICE_UNAVAILABLE;
        why = is_address ? "too many connections from this address" : "too many clients";
    }
    if (!status)
        return 0;
    return http_refuse(wsi, status, why) < 0 ? HTTP_CB_CLOSE : 1;
}

/* ---- wake-ups and shutdown ------------------------------------------------------ */

/* The certificate and key again from their files, if they are a good
 * pair; says what happened. lws_tls_cert_updated() loads them into the
 * vhost's TLS context, which new connections of this thread take theirs
 * from (each thread reloads its own context). */
static void reload_tls(struct net_thread *nt)
{
    struct net *n = nt->net;
    char why[1200];
    int64_t until;
    if (tlsfiles_check(n->tls_cert, n->tls_key, clock_wall_us() / 1000000, &until, why,
                       sizeof why) < 0) {
        fprintf(stderr, "flockd: SIGHUP: TLS files refused, the old ones stay: %s\n", why);
        return;
    }
    if (lws_tls_cert_updated(nt->ctx, n->tls_cert, n->tls_key, NULL, 0, NULL, 0)) {
        fprintf(stderr, "flockd: SIGHUP: TLS files could not be loaded, the old ones stay\n");
        return;
    }
    time_t t = (time_t)until;
    struct tm tm; /* gmtime_r: every service thread reloads at once */
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%d", gmtime_r(&t, &tm));
    printf("flockd: SIGHUP: TLS certificate %s reloaded on service thread %u (valid until %s)\n",
           n->tls_cert, nt->index, day);
    fflush(stdout);
}

/* lobby_kick_fn: the member leaves at its own thread's next wake-up. A
 * full mailbox drops the kick (said on stderr). */
static void post_kick(void *arg, unsigned thread, uint64_t client, enum lobby_eviction why)
{
    struct net *n = arg;
    struct net_thread *nt = &n->threads[thread % n->nthreads];
    pthread_mutex_lock(&nt->kick_lock);
    bool is_full = nt->nkicks == KICKS_MAX;
    if (!is_full)
        nt->kicks[nt->nkicks++] = (struct kick){client, why};
    atomic_store(&nt->has_kicks, 1);
    pthread_mutex_unlock(&nt->kick_lock);
    if (is_full)
        fprintf(stderr, "flockd: kick of client %llu dropped: too many at once\n",
                (unsigned long long)client);
    lws_cancel_service(nt->ctx);
}

/* The members other threads kicked or replaced: out of their rooms (teams
 * ended, if still theirs) and closed with their code (1008, 4009), as on
 * this thread at once. */
static void take_kicks(struct net_thread *nt, int64_t now)
{
    if (!atomic_load(&nt->has_kicks))
        return;
    struct kick kicks[KICKS_MAX];
    pthread_mutex_lock(&nt->kick_lock);
    size_t n = nt->nkicks;
    memcpy(kicks, nt->kicks, n * sizeof kicks[0]);
    nt->nkicks = 0;
    atomic_store(&nt->has_kicks, 0);
    pthread_mutex_unlock(&nt->kick_lock);
    lobby_lock(nt->net->lobby);
    for (size_t i = 0; i < n; i++) {
        struct session *s = sessions_find(&nt->sessions, kicks[i].client);
        if (!s) /* gone meanwhile */
            continue;
        lobby_leave(nt->net->lobby, &s->m, true, now);
        session_close(s, session_eviction_status(kicks[i].why));
    }
    lobby_unlock(nt->net->lobby);
}

/* Everything the rooms produced since the last wake-up, kicks from other
 * threads, the lobby's housekeeping when due (thread 0), and on shutdown a
 * 1001 close for every client of this thread. */
static void on_wake(struct net_thread *nt, int64_t now)
{
    struct net *n = nt->net;
    atomic_store_explicit(&nt->woken, 0, memory_order_relaxed);
    if (atomic_exchange(&nt->reload_tls, 0) && n->tls_cert[0])
        reload_tls(nt);
    take_kicks(nt, now);
    deliver_rooms(&nt->sessions, n->lobby, now);
    if (nt->index == 0 && now - nt->housekept_ns >= HOUSEKEEP_NS) {
        nt->housekept_ns = now;
        lobby_lock(n->lobby);
        lobby_housekeep(n->lobby, now);
        lobby_unlock(n->lobby);
    }
    if (atomic_load(&n->stop)) {
        size_t cursor = 0;
        for (struct session *s; (s = sessions_next(&nt->sessions, &cursor)) != NULL;)
            session_close(s, LWS_CLOSE_STATUS_GOINGAWAY);
    }
}

/* The version the connection speaks: the id of the subprotocol it took. */
static unsigned protocol_of(struct lws *wsi)
{
    const struct lws_protocols *p = lws_get_protocol(wsi);
    return p && p->id ? p->id : PROTO_VERSION;
}

static int callback_ws(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                       size_t len)
{
    struct net_thread *nt = lws_context_user(lws_get_context(wsi));
    struct net *n = nt ? nt->net : NULL;
    struct session *s = user;
    struct session_message msg;
    int rc;
    switch (reason) {
    case LWS_CALLBACK_FILTER_HTTP_CONNECTION: /* plain HTTP starts here */
        return http_filter(&nt->http, wsi);
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(nt, wsi, in ? in : "");
    case LWS_CALLBACK_ESTABLISHED:
        if (atomic_load(&n->stop))
            return HTTP_CB_CLOSE;
        lobby_lock(n->lobby);
        rc = session_open(s, wsi, &nt->sessions, n->lobby, protocol_of(wsi), clock_mono_ns());
        if (rc == 0)
            dispatch_url_view(s, n->lobby, clock_mono_ns());
        lobby_unlock(n->lobby);
        return rc < 0 ? HTTP_CB_CLOSE : 0;
    case LWS_CALLBACK_RECEIVE:
        /* Any message proves the connection alive, not only a pong: lws
         * 4.1.6 would hang up at --idle-timeout on a client that sends
         * commands but leaves pings unanswered. */
        lws_validity_confirmed(wsi);
        if (session_receive(s, in, len, n->cfg.max_message, &msg)) {
            lobby_lock(n->lobby);
            dispatch_message(s, &msg, n->lobby, clock_mono_ns());
            lobby_unlock(n->lobby);
        }
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        /* A wake-up that came during this round of writes is taken now,
         * not after the round: its replies are written at once (deliver.h)
         * instead of waiting behind every other client's frame. */
        if (atomic_load_explicit(&nt->woken, memory_order_relaxed))
            on_wake(nt, clock_mono_ns());
        if (session_is_close_handed(s))
            return 0; /* lws sends the close and waits for the client's */
        if (session_close_if_due(s))
            return HTTP_CB_CLOSE; /* lws sends the close frame set */
        return deliver_writeable(s, clock_mono_ns()) < 0 ? HTTP_CB_CLOSE : 0;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        /* A close body is empty or starts with a 2-byte status (RFC 6455
         * 5.5.1); lws 4.1.6 echoes a 1-byte one back as it came, a close
         * without a status. It is a protocol error: 1002. */
        if (len == 1) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, NULL, 0);
            return HTTP_CB_CLOSE;
        }
        return 0;
    case LWS_CALLBACK_CLOSED:
        lobby_lock(n->lobby);
        session_release(s, &nt->sessions, n->lobby, clock_mono_ns());
        lobby_unlock(n->lobby);
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: /* arrives with no session */
        if (nt)
            on_wake(nt, clock_mono_ns());
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- context ----------------------------------------------------------------------- */

static const struct lws_protocol_vhost_options pvo_default = {NULL, NULL, "default", "1"};
/* Browsers that name no subprotocol get PROTO_SUBPROTOCOL (the "default"). */
static const struct lws_protocol_vhost_options pvo = {NULL, &pvo_default, PROTO_SUBPROTOCOL, ""};

/* A snapshot subprotocol: the same callback and sessions for every
 * version; `id` tells session_open() which version a connection took. */
static struct lws_protocols ws_protocol(const struct net *n, const char *name, unsigned version)
{
    return (struct lws_protocols){
        .name = name,
        .callback = callback_ws,
        .per_session_data_size = sizeof(struct session),
        /* lws holds this much per connection for what it reads (a viewer's
         * memory: 2.38 KiB a viewer with 128, 2.75 with 512, mem_bench.py);
         * most commands fit, and a longer message comes in pieces that
         * session_receive() puts together. */
        .rx_buffer_size = 128,
        .id = version,
        /* A frame goes out in one piece (version 2 frames are smaller than
         * version 1's in all but freak cases; a bigger one is sent in
         * pieces, which lws copies). */
        .tx_packet_size = n->cfg.max_frame + 64,
    };
}

/*
 * lws takes the first subprotocol of the client's list (its order of
 * preference, RFC 6455) that the table has, so a client offering
 * "flock.v2, flock.v1" speaks version 2 and one offering only flock.v1,
 * or nothing, version 1. flock.v1 stays first: lws' protocols[0] also
 * serves plain HTTP without a mount.
 */
static void protocols_init(struct net_thread *nt)
{
    const struct net *n = nt->net;
    nt->protocols[0] = ws_protocol(n, PROTO_SUBPROTOCOL, PROTO_VERSION);
    nt->protocols[1] = ws_protocol(n, PROTO_V2_SUBPROTOCOL, PROTO_V2_VERSION);
    nt->protocols[2] = ws_protocol(n, PROTO_V3_SUBPROTOCOL, PROTO_V3_VERSION);
    nt->protocols[3] = (struct lws_protocols){
        .name = HTTP_PROTOCOL,
        .callback = http_callback,
        .per_session_data_size = sizeof(struct http_session),
        .user = &nt->http,
    };
    nt->protocols[4] =
        (struct lws_protocols){.name = LISTENER_PROTOCOL, .callback = listener_callback};
    nt->protocols[5] = (struct lws_protocols){0};
}

/* The thread's sessions under the shared limits: 0, or a negative
 * PROTO_E_* (out of memory). */
static int sessions_config_init(struct net_thread *nt)
{
    struct net *n = nt->net;
    const struct net_config *c = &n->cfg;
    struct sessions_config sc = {
        .max_clients = c->max_clients,
        .max_per_ip = c->max_per_ip,
        .rate = c->rate,
        .burst = c->burst,
        .stale_timeout = c->stale_timeout,
        .send_buffer = 2 * c->max_frame < 65536 ? 65536 : 2 * c->max_frame,
        .thread = nt->index,
        .threads = n->nthreads,
        .shared = &n->shared,
    };
    return sessions_init(&nt->sessions, &sc);
}

static struct lws_context *context_create(struct net_thread *nt)
{
    struct net *n = nt->net;
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN_SERVER; /* flockd listens itself (listener.h) */
    info.protocols = nt->protocols;
    info.pvo = &pvo;
    info.mounts = http_mounts_init(&nt->mounts, n->web_root);
    info.user = nt;
    info.retry_and_idle_policy = &n->retry;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 |
                   LWS_SERVER_OPTION_HTTP_HEADERS_SECURITY_BEST_PRACTICES_ENFORCE |
                   LWS_SERVER_OPTION_LIBEV;
    info.foreign_loops = (void **)&nt->loop;
    info.vhost_name = "flockd";
    if (n->tls_cert[0]) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = n->tls_cert;
        info.ssl_private_key_filepath = n->tls_key;
        /* HTTP/1.1 only. lws offers h2 by ALPN, and a browser on h2 asks
         * for its WebSocket over h2 (RFC 8441), which flockd's /ws filter
         * (it reads the HTTP/1 URI) does not take: Chromium waited 5 s
         * before it fell back to HTTP/1.1. */
        info.alpn = "http/1.1";
    }
    info.timeout_secs = 10;
    if (nt->index == 0 || !n->tls_cert[0])
        return lws_create_context(&info);
    /* Only the first thread's context does OpenSSL's global set-up and
     * tear-down: a context made with DO_SSL_GLOBAL_INIT tears it down
     * when destroyed, and SSL_CTX_free() of every context destroyed after
     * that freed nothing. The others take the option for their vhost
     * only (lws serves TLS on a vhost made with it). */
    info.options = (info.options & ~(uint64_t)LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) |
                   LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    struct lws_context *ctx = lws_create_context(&info);
    info.options = (info.options & ~(uint64_t)LWS_SERVER_OPTION_EXPLICIT_VHOSTS) |
                   LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    if (ctx && !lws_create_vhost(ctx, &info)) {
        lws_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* --tls-redirect-port: a second listening socket whose connections the
 * vhost adopts without TLS; http.c answers each of their requests with a
 * 301 to https (redirect.h). true, or false with a static reason in *err. */
static bool listen_for_redirects(struct net_thread *nt, const char **err)
{
    struct net *n = nt->net;
    int fd = listener_open(n->host, n->cfg.tls_redirect_port, err);
    if (fd < 0)
        return false;
    if (listener_adopt(nt->vhost, fd, true) < 0) { /* lws closed fd */
        *err = "cannot watch the redirect port's socket";
        return false;
    }
    return true;
}

/* Opens the thread's listening socket (the first thread's on the port
 * asked for, the others on the port it got: SO_REUSEPORT lets the kernel
 * spread connections over them), creates its context and hands it the
 * socket: true, or false with a static reason in *err. */
static bool listen_and_serve(struct net_thread *nt, const char **err)
{
    struct net *n = nt->net;
    int fd = listener_open(n->host, nt->index ? n->port : n->cfg.port, err);
    if (fd < 0)
        return false;
    if (nt->index == 0)
        n->port = listener_port(fd);
    nt->http.tls_port = n->tls_cert[0] ? n->port : 0;
    nt->http.redirect_port = n->tls_cert[0] ? n->cfg.tls_redirect_port : 0;
    nt->loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV);
    nt->ctx = nt->loop ? context_create(nt) : NULL;
    nt->vhost = nt->ctx ? lws_get_vhost_by_name(nt->ctx, "flockd") : NULL;
    if (!nt->vhost) {
        close(fd);
        *err = !nt->loop                        ? "cannot create an epoll event loop"
               : access(EVLIB_PLUGIN, R_OK) < 0 ? "libwebsockets' libev plugin " EVLIB_PLUGIN
                                                  " is missing: install libwebsockets-evlib-ev"
                                                : "cannot create the server";
        return false;
    }
    if (listener_adopt(nt->vhost, fd, false) < 0) { /* lws closed fd */
        *err = "cannot watch the listening socket";
        return false;
    }
    return n->cfg.tls_redirect_port <= 0 || listen_for_redirects(nt, err);
}

/* Service thread i: its sessions, protocols and context. true, or false
 * with a static reason in *err. */
static bool thread_create(struct net *n, unsigned i, const char **err)
{
    struct net_thread *nt = &n->threads[i];
    nt->net = n;
    nt->index = i;
    pthread_mutex_init(&nt->kick_lock, NULL);
    if (sessions_config_init(nt) < 0) {
        *err = "out of memory";
        return false;
    }
    nt->http = (struct http_source){
        .lobby = n->lobby, .cluster = n->cfg.cluster, .sessions = &nt->sessions};
    protocols_init(nt);
    return listen_and_serve(nt, err);
}

/* --net-threads: 0 is one per online CPU; at most LOBBY_THREADS_MAX. */
static unsigned threads_for(unsigned asked)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = asked ? asked : cores > 0 ? (unsigned)cores : 1;
    return n > LOBBY_THREADS_MAX ? LOBBY_THREADS_MAX : n;
}

struct net *net_create(const struct net_config *cfg, struct lobby *lobby, const char **err)
{
    struct net *n = calloc(1, sizeof *n);
    if (n) {
        n->cfg = *cfg;
        n->nthreads = threads_for(cfg->threads);
        n->threads = calloc(n->nthreads, sizeof *n->threads);
        n->has_shared =
            n->threads && sessions_shared_init(&n->shared, cfg->max_clients, cfg->max_per_ip) == 0;
    }
    if (!n || !n->has_shared) {
        if (n)
            free(n->threads);
        free(n);
        *err = "out of memory";
        return NULL;
    }
    n->lobby = lobby;
    snprintf(n->host, sizeof n->host, "%s", cfg->host ? cfg->host : "");
    snprintf(n->web_root, sizeof n->web_root, "%s", cfg->web_root ? cfg->web_root : ".");
    snprintf(n->origins, sizeof n->origins, "%s", cfg->origins ? cfg->origins : "");
    snprintf(n->tls_cert, sizeof n->tls_cert, "%s", cfg->tls_cert ? cfg->tls_cert : "");
    snprintf(n->tls_key, sizeof n->tls_key, "%s", cfg->tls_key ? cfg->tls_key : "");
    n->retry = (lws_retry_bo_t){
        .secs_since_valid_ping = (uint16_t)cfg->ping_interval,
        .secs_since_valid_hangup = (uint16_t)cfg->idle_timeout,
    };
    for (unsigned i = 0; i < n->nthreads; i++)
        if (!thread_create(n, i, err)) {
            n->nthreads = i + 1; /* what exists, to destroy */
            net_destroy(n);
            return NULL;
        }
    atomic_store(&g_metrics.net_threads, n->nthreads);
    lobby_set_threads(lobby, n->nthreads, post_kick, n);
    return n;
}

int net_port(const struct net *n)
{
    return n->port;
}

/* One service thread's loop: until net_stop() and its clients' goodbyes. */
static void serve(struct net_thread *nt)
{
    int64_t stop_at = 0;
    bool is_more = false;
    for (;;) {
        ev_run(nt->loop, is_more ? EVRUN_NOWAIT : EVRUN_ONCE);
        /* A batch of frames between two rounds; the next round does not
         * wait for an event while more are waiting. */
        is_more = deliver_paced(&nt->sessions, clock_mono_ns()) > 0;
        if (atomic_load(&nt->net->stop)) {
            int64_t now = clock_mono_ns();
            if (!stop_at)
                stop_at = now + GOODBYE_NS;
            if (sessions_count(&nt->sessions) == 0 || now > stop_at)
                break;
        }
    }
}

static void *thread_main(void *arg)
{
    serve(arg);
    deliver_thread_end();
    return NULL;
}

void net_run(struct net *n)
{
    for (unsigned i = 1; i < n->nthreads; i++) {
        struct net_thread *nt = &n->threads[i];
        nt->is_started = pthread_create(&nt->thread, NULL, thread_main, nt) == 0;
        if (!nt->is_started)
            fprintf(stderr, "flockd: service thread %u not started; its port share waits\n", i);
    }
    serve(&n->threads[0]);
    deliver_thread_end();
    for (unsigned i = 1; i < n->nthreads; i++)
        if (n->threads[i].is_started)
            pthread_join(n->threads[i].thread, NULL);
}

unsigned net_threads(const struct net *n)
{
    return n->nthreads;
}

void net_stop(struct net *n)
{
    atomic_store(&n->stop, 1);
    net_wake(n);
}

void net_reload_tls(struct net *n)
{
    for (unsigned i = 0; i < n->nthreads; i++)
        atomic_store(&n->threads[i].reload_tls, 1);
    net_wake(n);
}

void net_wake(void *arg)
{
    struct net *n = arg;
    for (unsigned i = 0; n && i < n->nthreads; i++)
        if (n->threads[i].ctx) {
            atomic_store_explicit(&n->threads[i].woken, 1, memory_order_relaxed);
            lws_cancel_service(n->threads[i].ctx);
        }
}

void net_destroy(struct net *n)
{
    if (!n)
        return;
    for (unsigned i = n->nthreads; n->threads && i-- > 0;) { /* the first one last */
        struct net_thread *nt = &n->threads[i];
        if (nt->ctx)
            lws_context_destroy(nt->ctx);
        if (nt->loop)
            ev_loop_destroy(nt->loop);
        sessions_free(&nt->sessions);
        pthread_mutex_destroy(&nt->kick_lock);
    }
    if (n->has_shared)
        sessions_shared_free(&n->shared);
    free(n->threads);
    free(n);
}
