/*
 * ipcount — open connections per peer address, for --max-per-ip.
 *
 * Addresses are 16 bytes (IPv4 as IPv4-mapped IPv6, ::ffff:a.b.c.d). An
 * address is in the table while it has at least one connection, so the
 * table never holds more addresses than there are connections. Built on
 * table.h.
 *
 * Never: shrinks (it grows as addresses come, see table.h). Threading: the
 * owner's thread only (several service threads share one under a lock:
 * sessions.h).
 */
#ifndef FLOCKD_IPCOUNT_H
#define FLOCKD_IPCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

#define IPCOUNT_ADDR_LEN 16

struct ipcount {
    struct table t;
    uint32_t max_per_addr;
};

/* Room for up to max_addrs addresses with up to max_per_addr connections
 * each. 0, or a negative BASE_E* (see table_init). */
int ipcount_init(struct ipcount *c, size_t max_addrs, uint32_t max_per_addr);
void ipcount_free(struct ipcount *c);

/* Counts one more connection from addr: 0, or BASE_EFULL (nothing
 * counted) when addr already has max_per_addr or the table is full. */
int ipcount_take(struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN]);

/* Counts one connection from addr less (nothing if it has none). */
void ipcount_release(struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN]);

/* Connections counted for addr. */
uint32_t ipcount_of(const struct ipcount *c, const unsigned char addr[IPCOUNT_ADDR_LEN]);

/* Addresses with at least one connection. */
size_t ipcount_addresses(const struct ipcount *c);

#endif
