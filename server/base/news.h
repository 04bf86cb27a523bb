/*
 * news — one flag per service thread in one atomic word: whoever has news
 * for the service threads posts it to all of them at once (news_post), and
 * each thread takes its own flag once (news_take). A room's new frame or
 * replies, a room's roster and a relayed room's availability are told to
 * the threads this way.
 *
 * Threading: any thread.
 */
#ifndef FLOCKD_NEWS_H
#define FLOCKD_NEWS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define NEWS_THREADS 64 /* service threads one word has a flag for */

/* Every service thread has news in *word. */
static inline void news_post(_Atomic uint64_t *word)
{
    atomic_store_explicit(word, UINT64_MAX, memory_order_release);
}

/* True once for `thread` after each news_post() (thread mod NEWS_THREADS). */
static inline bool news_take(_Atomic uint64_t *word, unsigned thread)
{
    uint64_t bit = (uint64_t)1 << (thread % NEWS_THREADS);
    return (atomic_fetch_and_explicit(word, ~bit, memory_order_acq_rel) & bit) != 0;
}

#endif
