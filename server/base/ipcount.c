/*
 * ipcount.c — connections per address on the shared open-addressing table
 * (see ipcount.h).
 */
#include "ipcount.h"

#include "base.h"

struct entry {
    unsigned char addr[IPCOUNT_ADDR_LEN]; /* the key */
    uint32_t count;                       /* >= 1 while in the table */
};

int ipcount_init(struct ipcount *c, size_t max_addrs, uint32_t max_per_addr)
{
    c->max_per_addr = max_per_addr;
    return table_init(&c->t, sizeof(struct entry), IPCOUNT_ADDR_LEN, max_addrs);
}

void ipcount_free(struct ipcount *c)
{
    table_free(&c->t);
}

int ipcount_take(struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN])
{
    struct entry *e = table_find(&c->t, addr);
    if (e && e->count >= c->max_per_addr)
        return BASE_EFULL;
    if (!e && (c->max_per_addr == 0 || !(e = table_insert(&c->t, addr))))
        return BASE_EFULL;
    e->count++;
    return 0;
}

void ipcount_release(struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN])
{
    struct entry *e = table_find(&c->t, addr);
    if (e && --e->count == 0)
        table_remove(&c->t, e);
}

uint32_t ipcount_of(const struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN])
{
    const struct entry *e = table_find(&c->t, addr);
    return e ? e->count : 0;
}

size_t ipcount_addresses(const struct ipcount *c)
{
    return table_count(&c->t);
}
