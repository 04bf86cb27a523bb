/*
 * authguard.c — failed authentications per address and overall, with
 * doubling delays (see authguard.h).
 */
#include "authguard.h"

#include <string.h>

void authguard_init(struct authguard *g, uint32_t free_tries, uint32_t free_tries_all)
{
    memset(g, 0, sizeof *g);
    g->per_addr = (struct authguard_rule){.free_tries = free_tries,
                                          .base_ns = 1000000000LL,
                                          .max_ns = 300000000000LL,
                                          .drain_ns = 60000000000LL};
    g->global = (struct authguard_rule){.free_tries = free_tries_all,
                                        .base_ns = 1000000000LL,
                                        .max_ns = 60000000000LL,
                                        .drain_ns = 1000000000LL};
}

/* s's failures drained to now. */
static double drained(const struct authguard_score *s, const struct authguard_rule *r, int64_t now)
{
    double f = s->fails - (double)(now - s->at_ns) / (double)r->drain_ns;
    return f > 0 ? f : 0;
}

/* Counts one failure on s; returns its lock-out from now (0: none). */
static int64_t fail(struct authguard_score *s, const struct authguard_rule *r, int64_t now)
{
    s->fails = drained(s, r, now) + 1;
    s->at_ns = now;
    if (s->fails <= r->free_tries)
        return 0;
    int64_t delay = r->base_ns;
    for (double over = s->fails - r->free_tries - 1; over >= 1 && delay < r->max_ns; over--)
        delay *= 2;
    if (delay > r->max_ns)
        delay = r->max_ns;
    s->until_ns = now + delay;
    return delay;
}

static int64_t wait_of(const struct authguard_score *s, int64_t now)
{
    return s->until_ns > now ? s->until_ns - now : 0;
}

/* True if addr has a slot, its index then in *at. */
static bool is_known(const struct authguard *g, const unsigned char *addr, int *at)
{
    for (int i = 0; i < AUTHGUARD_ADDRS; i++)
        if (g->slot[i].is_used && memcmp(g->slot[i].addr, addr, AUTHGUARD_ADDR_LEN) == 0) {
            *at = i;
            return true;
        }
    return false;
}

/* addr's slot, taking a free one or the one with the fewest failures. */
static int find_or_take(struct authguard *g, const unsigned char *addr, int64_t now)
{
    int i;
    if (is_known(g, addr, &i))
        return i;
    int pick = 0;
    double least = -1;
    for (i = 0; i < AUTHGUARD_ADDRS; i++) {
        if (!g->slot[i].is_used) {
            pick = i;
            break;
        }
        double f = drained(&g->slot[i].s, &g->per_addr, now);
        if (least < 0 || f < least) {
            least = f;
            pick = i;
        }
    }
    memcpy(g->slot[pick].addr, addr, AUTHGUARD_ADDR_LEN);
    g->slot[pick].is_used = true;
    g->slot[pick].s = (struct authguard_score){.at_ns = now};
    return pick;
}

int64_t authguard_wait(const struct authguard *g, const unsigned char *addr, int64_t now)
{
    int i;
    int64_t own = is_known(g, addr, &i) ? wait_of(&g->slot[i].s, now) : 0;
    int64_t all = wait_of(&g->all, now);
    return own > all ? own : all;
}

int64_t authguard_failed(struct authguard *g, const unsigned char *addr, int64_t now,
                         int64_t *global_ns)
{
    *global_ns = fail(&g->all, &g->global, now);
    return fail(&g->slot[find_or_take(g, addr, now)].s, &g->per_addr, now);
}

void authguard_succeeded(struct authguard *g, const unsigned char *addr)
{
    int i;
    if (is_known(g, addr, &i))
        g->slot[i].is_used = false;
}

double authguard_failures(const struct authguard *g, const unsigned char *addr, int64_t now)
{
    int i;
    return is_known(g, addr, &i) ? drained(&g->slot[i].s, &g->per_addr, now) : 0;
}
