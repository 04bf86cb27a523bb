/*
 * sessions — the sessions of one service thread: who is connected (client
 * id -> the connection's owner, an opaque pointer: session.h's struct
 * session, so the rooms' replies, which carry only a client id, find a
 * session that may have gone meanwhile), how many connections each peer
 * address holds, the limits that apply to every session, the queue of
 * connections a new frame is to be written to, and a scratch buffer for
 * composing text messages. What the table keeps in each connection is a
 * struct sessions_entry its owner embeds.
 *
 * There is one per service thread, each with its own id map; client ids
 * are unique across threads (thread t of N hands out t + N, t + 2N, ...:
 * id % N names the thread). What every thread counts against
 * (--max-clients, --max-per-ip) is a struct sessions_shared.
 *
 * Never: lws calls. Threading: its service thread only; the shared counts
 * take their own lock (or are atomic) and are safe from any thread.
 */
#ifndef FLOCKD_SESSIONS_H
#define FLOCKD_SESSIONS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "ipcount.h"
#include "metrics.h"
#include "proto_reply.h"

#define SESSIONS_ADDR_LEN IPCOUNT_ADDR_LEN /* peer address, IPv4 mapped into IPv6 */

/* What the table keeps in a connection: embedded in its owner, filled in
 * (addr, counted) before sessions_admit(). */
struct sessions_entry {
    uint64_t id;  /* the client id; 0 until admitted and after removal */
    bool counted; /* addr is known and counted in the per-address table */
    unsigned char addr[SESSIONS_ADDR_LEN];
    uint64_t ask; /* 1 + its place in the queue of asks (sessions_ask()), 0: not in it */
};

/* Largest text message composed here: a welcome, whose groups may each
 * differ from group 0 in every parameter (a roster takes less). */
#define SESSIONS_TEXT_MAX PROTO_WELCOME_BYTES

/* The connections of every service thread, against the global limits. */
struct sessions_shared {
    pthread_mutex_t lock; /* guards ips */
    struct ipcount ips;   /* connections per peer address */
    atomic_uint clients;  /* admitted, every thread's */
    uint32_t max_clients, max_per_ip;
};

/* 0, or PROTO_E_INTERNAL (out of memory); sessions_shared_free() releases. */
int sessions_shared_init(struct sessions_shared *sh, uint32_t max_clients, uint32_t max_per_ip);
void sessions_shared_free(struct sessions_shared *sh);

struct sessions_config {
    uint32_t max_clients;
    uint32_t max_per_ip;
    double rate;                    /* commands per second per connection */
    uint32_t burst;                 /* commands at once */
    double stale_timeout;           /* seconds a client may go without a frame */
    size_t send_buffer;             /* SO_SNDBUF per client, bytes */
    unsigned thread, threads;       /* this service thread of how many (0 of 1 if unset) */
    struct sessions_shared *shared; /* the limits' counts; NULL: sessions keeps its own */
};

struct sessions {
    struct sessions_config cfg;
    struct idmap ids; /* client id -> owner */
    struct sessions_shared *shared;
    struct sessions_shared own; /* shared when cfg.shared is NULL */
    uint64_t next_id;
    char *text; /* owned: SESSIONS_TEXT_MAX bytes of scratch */
    /* Clients a new frame was announced to, not written it yet
     * (sessions_ask()): a ring of asks_cap (a power of two) entries, the
     * next at place asks_taken; a removed entry leaves NULL in its place. */
    struct sessions_entry **asks;
    uint64_t asks_taken;
    size_t asks_len, asks_cap;
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
 * Admits the connection e of owner: within max-clients and, if e->counted
 * is set (its address is known), max-per-ip; gives e the next client id
 * and indexes owner under it. 0, or PROTO_E_CAPACITY with the limit
 * counted in /metrics (e->counted then cleared).
 */
int sessions_admit(struct sessions *ss, struct sessions_entry *e, void *owner);

/* Forgets an admitted connection (its id and its address's count). */
void sessions_remove(struct sessions *ss, struct sessions_entry *e);

/*
 * The queue of connections to write a new frame to (deliver_paced()), so
 * that a round of the service loop writes a batch of them: the entries
 * themselves, not their ids (a delivery finds its connection without a
 * lookup), each in it at most once. sessions_ask() queues e unless it
 * waits already (then it keeps its place): false without memory.
 * sessions_take_ask() takes the entry that has waited longest off it, NULL
 * when none waits; sessions_peek_ask() names the entry k places behind
 * that one (NULL if none, or removed), to be read ahead without reading
 * it. A removed connection leaves the queue at once.
 */
bool sessions_ask(struct sessions *ss, struct sessions_entry *e);
struct sessions_entry *sessions_take_ask(struct sessions *ss);
const struct sessions_entry *sessions_peek_ask(const struct sessions *ss, size_t k);
size_t sessions_asks_waiting(const struct sessions *ss);

/* The owner of the connection with this client id, or NULL. */
void *sessions_find(const struct sessions *ss, uint64_t id);

/* Connections of this thread; sessions_total(): of every thread. */
size_t sessions_count(const struct sessions *ss);
size_t sessions_total(const struct sessions *ss);

/* Iteration over the owners: start with *cursor = 0; NULL at the end. */
void *sessions_next(const struct sessions *ss, size_t *cursor);

#endif
