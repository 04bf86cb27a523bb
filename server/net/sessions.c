/*
 * sessions.c — admission and lookup of one service thread's sessions
 * (see sessions.h).
 */
#include "sessions.h"

#include "metrics.h"

#include <stdlib.h>
#include <string.h>

int sessions_shared_init(struct sessions_shared *sh, uint32_t max_clients, uint32_t max_per_ip)
{
    memset(sh, 0, sizeof *sh);
    if (ipcount_init(&sh->ips, max_clients, max_per_ip) < 0)
        return PROTO_E_INTERNAL;
    pthread_mutex_init(&sh->lock, NULL);
    atomic_init(&sh->clients, 0);
    sh->max_clients = max_clients;
    sh->max_per_ip = max_per_ip;
    return 0;
}

void sessions_shared_free(struct sessions_shared *sh)
{
    ipcount_free(&sh->ips);
    pthread_mutex_destroy(&sh->lock);
}

int sessions_init(struct sessions *ss, const struct sessions_config *cfg)
{
    memset(ss, 0, sizeof *ss);
    ss->cfg = *cfg;
    if (ss->cfg.threads < 1)
        ss->cfg.threads = 1;
    ss->next_id = ss->cfg.thread % ss->cfg.threads;
    ss->shared = cfg->shared;
    int rc = idmap_init(&ss->ids, cfg->max_clients);
    if (rc == 0 && !ss->shared) {
        rc = sessions_shared_init(&ss->own, cfg->max_clients, cfg->max_per_ip);
        ss->shared = rc == 0 ? &ss->own : NULL;
    }
    ss->text = malloc(SESSIONS_TEXT_MAX);
    if (rc == 0 && !ss->text)
        rc = PROTO_E_INTERNAL;
    if (rc < 0)
        sessions_free(ss);
    return rc;
}

void sessions_free(struct sessions *ss)
{
    idmap_free(&ss->ids);
    if (ss->shared == &ss->own)
        sessions_shared_free(&ss->own);
    ss->shared = NULL;
    free(ss->text);
    ss->text = NULL;
    free(ss->asks);
    ss->asks = NULL;
    ss->asks_taken = 0;
    ss->asks_len = ss->asks_cap = 0;
}

enum metrics_limit sessions_would_admit(const struct sessions *ss, const unsigned char *addr)
{
    struct sessions_shared *sh = ss->shared;
    enum metrics_limit full = LIMIT_COUNT;
    if (atomic_load(&sh->clients) >= sh->max_clients) {
        full = LIMIT_CONNECTIONS;
    } else if (addr) {
        pthread_mutex_lock(&sh->lock);
        if (ipcount_of(&sh->ips, addr) >= sh->max_per_ip)
            full = LIMIT_CONNECTIONS_IP;
        pthread_mutex_unlock(&sh->lock);
    }
    if (full != LIMIT_COUNT)
        metrics_limit(full);
    return full;
}

/* One more client within max_clients, every thread's: true, or false if
 * none fits. */
static bool take_client(struct sessions_shared *sh)
{
    unsigned n = atomic_load(&sh->clients);
    do {
        if (n >= sh->max_clients)
            return false;
    } while (!atomic_compare_exchange_weak(&sh->clients, &n, n + 1));
    return true;
}

int sessions_admit(struct sessions *ss, struct sessions_entry *e, void *owner)
{
    struct sessions_shared *sh = ss->shared;
    if (!take_client(sh)) {
        metrics_limit(LIMIT_CONNECTIONS);
        return PROTO_E_CAPACITY;
    }
    int taken = 0;
    if (e->counted) {
        pthread_mutex_lock(&sh->lock);
        taken = ipcount_take(&sh->ips, e->addr);
        pthread_mutex_unlock(&sh->lock);
    }
    if (taken < 0) {
        atomic_fetch_sub(&sh->clients, 1);
        metrics_limit(LIMIT_CONNECTIONS_IP);
        e->counted = false;
        return PROTO_E_CAPACITY;
    }
    ss->next_id += ss->cfg.threads;
    e->id = ss->next_id;
    e->ask = 0;
    atomic_fetch_add_explicit(&g_metrics.net[ss->cfg.thread % METRICS_NET_THREADS].connections, 1,
                              memory_order_relaxed);
    int rc = idmap_put(&ss->ids, e->id, owner); /* cannot fail below max_clients */
    if (rc < 0)
        sessions_remove(ss, e);
    return rc;
}

void sessions_remove(struct sessions *ss, struct sessions_entry *e)
{
    struct sessions_shared *sh = ss->shared;
    if (e->ask)
        ss->asks[(e->ask - 1) & (ss->asks_cap - 1)] = NULL;
    e->ask = 0;
    if (e->id) {
        idmap_del(&ss->ids, e->id);
        atomic_fetch_sub(&sh->clients, 1);
        atomic_fetch_sub_explicit(&g_metrics.net[ss->cfg.thread % METRICS_NET_THREADS].connections,
                                  1, memory_order_relaxed);
    }
    if (e->counted) {
        pthread_mutex_lock(&sh->lock);
        ipcount_release(&sh->ips, e->addr);
        pthread_mutex_unlock(&sh->lock);
    }
    e->counted = false;
    e->id = 0;
}

/* A ring twice as large, each entry at the same place (places are
 * counted from the start, so an entry's `ask` stays true). */
static bool grow_asks(struct sessions *ss)
{
    size_t cap = ss->asks_cap ? 2 * ss->asks_cap : 256;
    struct sessions_entry **grown = malloc(cap * sizeof *grown);
    if (!grown)
        return false;
    for (uint64_t p = ss->asks_taken; p < ss->asks_taken + ss->asks_len; p++)
        grown[p & (cap - 1)] = ss->asks[p & (ss->asks_cap - 1)];
    free(ss->asks);
    ss->asks = grown;
    ss->asks_cap = cap;
    return true;
}

bool sessions_ask(struct sessions *ss, struct sessions_entry *e)
{
    if (e->ask)
        return true;
    if (ss->asks_len == ss->asks_cap && !grow_asks(ss))
        return false;
    uint64_t p = ss->asks_taken + ss->asks_len++;
    ss->asks[p & (ss->asks_cap - 1)] = e;
    e->ask = p + 1;
    return true;
}

struct sessions_entry *sessions_take_ask(struct sessions *ss)
{
    while (ss->asks_len) {
        struct sessions_entry *e = ss->asks[ss->asks_taken++ & (ss->asks_cap - 1)];
        ss->asks_len--;
        if (e) {
            e->ask = 0;
            return e;
        }
    }
    return NULL;
}

const struct sessions_entry *sessions_peek_ask(const struct sessions *ss, size_t k)
{
    return k < ss->asks_len ? ss->asks[(ss->asks_taken + k) & (ss->asks_cap - 1)] : NULL;
}

size_t sessions_asks_waiting(const struct sessions *ss)
{
    return ss->asks_len;
}

void *sessions_find(const struct sessions *ss, uint64_t id)
{
    return idmap_get(&ss->ids, id);
}

size_t sessions_count(const struct sessions *ss)
{
    return idmap_count(&ss->ids);
}

size_t sessions_total(const struct sessions *ss)
{
    return atomic_load(&ss->shared->clients);
}

void *sessions_next(const struct sessions *ss, size_t *cursor)
{
    return idmap_next(&ss->ids, cursor);
}
