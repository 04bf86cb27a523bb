/*
 * sessions.c — admission and lookup of one service thread's sessions
 * (see sessions.h).
 */
#include "sessions.h"

#include "metrics.h"
#include "session.h"

#include <stdlib.h>
#include <string.h>

int sessions_init(struct sessions *ss, const struct sessions_config *cfg)
{
    memset(ss, 0, sizeof *ss);
    ss->cfg = *cfg;
    int rc = idmap_init(&ss->ids, cfg->max_clients);
    if (rc == 0)
        rc = ipcount_init(&ss->ips, cfg->max_clients, cfg->max_per_ip);
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
    ipcount_free(&ss->ips);
    free(ss->text);
    ss->text = NULL;
}

enum metrics_limit sessions_would_admit(const struct sessions *ss, const unsigned char *addr)
{
    enum metrics_limit full = LIMIT_COUNT;
    if (idmap_count(&ss->ids) >= ss->cfg.max_clients)
        full = LIMIT_CONNECTIONS;
    else if (addr && ipcount_of(&ss->ips, addr) >= ss->cfg.max_per_ip)
        full = LIMIT_CONNECTIONS_IP;
    if (full != LIMIT_COUNT)
        metrics_limit(full);
    return full;
}

int sessions_admit(struct sessions *ss, struct session *s)
{
    if (idmap_count(&ss->ids) >= ss->cfg.max_clients) {
        metrics_limit(LIMIT_CONNECTIONS);
        return PROTO_E_CAPACITY;
    }
    if (s->counted && ipcount_take(&ss->ips, s->addr) < 0) {
        metrics_limit(LIMIT_CONNECTIONS_IP);
        s->counted = false;
        return PROTO_E_CAPACITY;
    }
    s->id = ++ss->next_id;
    int rc = idmap_put(&ss->ids, s->id, s); /* cannot fail below max_clients */
    if (rc < 0)
        sessions_remove(ss, s);
    return rc;
}

void sessions_remove(struct sessions *ss, struct session *s)
{
    if (s->id)
        idmap_del(&ss->ids, s->id);
    if (s->counted)
        ipcount_release(&ss->ips, s->addr);
    s->counted = false;
    s->id = 0;
}

struct session *sessions_find(const struct sessions *ss, uint64_t id)
{
    return idmap_get(&ss->ids, id);
}

size_t sessions_count(const struct sessions *ss)
{
    return idmap_count(&ss->ids);
}

struct session *sessions_next(const struct sessions *ss, size_t *cursor)
{
    return idmap_next(&ss->ids, cursor);
}
