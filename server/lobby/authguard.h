/*
 * authguard — failed authentications (a wrong admin token, a wrong room
 * password) counted per peer address and over all addresses, with
 * growing delays: past a few free tries, each failure locks its address
 * out for twice as long as the one before (up to a ceiling), and past
 * many failures from everywhere every address is locked out the same way.
 * A locked-out attempt is refused before its secret is looked at, so a
 * guesser gets no answer on it. Failures drain with time; a success
 * clears its address.
 *
 * The per-connection rate limit (bucket.h) cannot stop a guesser who
 * opens a new connection for every few guesses: this is keyed by address.
 *
 * Never: I/O, clock (time comes in as `now`), secrets (it sees only
 * addresses). Fixed memory: AUTHGUARD_ADDRS addresses; when full, the one
 * with the fewest failures is forgotten. Threading: its owner's thread.
 */
#ifndef FLOCKD_AUTHGUARD_H
#define FLOCKD_AUTHGUARD_H

#include <stdbool.h>
#include <stdint.h>

#define AUTHGUARD_ADDRS    512
#define AUTHGUARD_ADDR_LEN 16 /* IPv6, IPv4 mapped (session.h) */

/* One score: failures (draining), when last counted, locked until. */
struct authguard_score {
    double fails;
    int64_t at_ns;
    int64_t until_ns;
};

struct authguard_rule {
    uint32_t free_tries; /* failures before any delay */
    int64_t base_ns;     /* the first delay; each further failure doubles it */
    int64_t max_ns;      /* the longest delay */
    int64_t drain_ns;    /* one failure forgotten per this long */
};

struct authguard {
    struct authguard_rule per_addr, global;
    struct authguard_score all;
    struct {
        unsigned char addr[AUTHGUARD_ADDR_LEN];
        bool is_used;
        struct authguard_score s;
    } slot[AUTHGUARD_ADDRS];
};

/* Per address `free_tries`, then 1 s doubling to 5 min, one failure
 * forgotten per minute; over all addresses `free_tries_all`, then 1 s
 * doubling to 1 min, one forgotten per second. */
void authguard_init(struct authguard *g, uint32_t free_tries, uint32_t free_tries_all);

/* Nanoseconds until an attempt from addr may be checked (its own or the
 * global lock-out, the longer); 0: now. */
int64_t authguard_wait(const struct authguard *g, const unsigned char *addr, int64_t now);

/*
 * Counts a failed attempt from addr. Returns the delay it now has to wait
 * (0: still within its free tries); *global_ns the delay every address now
 * has (0: none).
 */
int64_t authguard_failed(struct authguard *g, const unsigned char *addr, int64_t now,
                         int64_t *global_ns);

/* A successful attempt from addr: its failures are forgotten. */
void authguard_succeeded(struct authguard *g, const unsigned char *addr);

/* addr's failures as counted now (drained), for the log. */
double authguard_failures(const struct authguard *g, const unsigned char *addr, int64_t now);

#endif
