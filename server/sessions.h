/*
 * sessions — the sessions of one service thread: who is connected (client
 * id -> session, so the rooms' replies, which carry only a client id, find
 * a session that may have gone meanwhile), how many connections each peer
 * address holds, the limits that apply to every session, and a scratch
 * buffer for composing text messages.
 *
 * There is one per service thread (today one). With several threads, each
 * keeps its own; client ids must then stay unique across them (a stride
 * per thread) and the per-address counts be shared with care.
 *
 * Never: lws calls. Threading: its service thread only.
 */
#ifndef FLOCKD_SESSIONS_H
#define FLOCKD_SESSIONS_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "ipcount.h"
#include "metrics.h"

struct session;

#define SESSIONS_TEXT_MAX 16384 /* largest text message composed (welcome, roster) */

struct sessions_config {
    uint32_t max_clients;
    uint32_t max_per_ip;
    uint32_t max_message; /* bytes; larger messages close with 1009 */
    double rate;          /* commands per second per connection */
    uint32_t burst;       /* commands at once */
    double stale_timeout; /* seconds a client may go without a frame */
    size_t send_buffer;   /* SO_SNDBUF per client, bytes */
};

struct sessions {
    struct sessions_config cfg;
    struct idmap ids;   /* client id -> struct session * */
    struct ipcount ips; /* connections per peer address */
    uint64_t next_id;
    char *text; /* owned: SESSIONS_TEXT_MAX bytes of scratch */
};

/* 0, or a negative PROTO_E_* (out of memory); sessions_free() releases. */
int sessions_init(struct sessions *ss, const struct sessions_config *cfg);
void sessions_free(struct sessions *ss);

/*
 * Whether a connection from addr (NULL: an address not counted) would be
 * admitted now: LIMIT_COUNT if so, else the limit that refuses it
 * (LIMIT_CONNECTIONS, LIMIT_CONNECTIONS_IP), counted in /metrics. The
 * upgrade asks this before its 101; sessions_admit() decides.
 */
enum metrics_limit sessions_would_admit(const struct sessions *ss, const unsigned char *addr);

/*
 * Admits s: within max-clients and, if s->counted is set (its address
 * is known), max-per-ip; gives it the next client id and indexes it.
 * 0, or PROTO_E_CAPACITY with the limit counted in /metrics.
 */
int sessions_admit(struct sessions *ss, struct session *s);

/* Forgets an admitted session (its id and its address's count). */
void sessions_remove(struct sessions *ss, struct session *s);

/* The session with this client id, or NULL. */
struct session *sessions_find(const struct sessions *ss, uint64_t id);

size_t sessions_count(const struct sessions *ss);

/* Iteration: start with *cursor = 0; NULL at the end. */
struct session *sessions_next(const struct sessions *ss, size_t *cursor);

#endif
