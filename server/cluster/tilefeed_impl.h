/*
 * tilefeed_impl — what the two files of the tilefeed module share
 * (tilefeed.c: the view message, the counts section and the owner's feeds;
 * tilefeed_in.c: the relay's inbox): the messages' magics and sizes and
 * the counts codec. Included by those two files only.
 *
 * Never: allocation, I/O. Threading: reentrant.
 */
#ifndef FLOCKD_TILEFEED_IMPL_H
#define FLOCKD_TILEFEED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "fog.h"
#include "tilefeed.h"

#define TILEFEED_MAGIC_TILES "FKCT"
#define TILEFEED_MAGIC_VIEW  "FKCV"
#define TILEFEED_VERSION     1
#define TILEFEED_BLOCK       40 /* bytes of an audience block before its sections */
#define TILEFEED_PART_HEAD   8  /* a part's shift, sample, super-tile and tile hash */

/* Whether a is an audience of the messages: 0 (every boid), a team 1..31,
 * or TILENEED_DELAYED. */
static inline int tilefeed_is_audience(unsigned a)
{
    return a <= FOG_MAX_TEAMS || a == TILENEED_DELAYED;
}

/* The most bytes the counts section of n tiles takes. */
static inline size_t tilefeed_counts_bound(uint32_t n)
{
    return (size_t)n * 7 + 2;
}

/*
 * The counts of n tiles (row by row) into out: whole (base NULL) or as
 * their differences from base's (§3.8: a Rice parameter, then a code per
 * tile). Returns the bytes written (at most tilefeed_counts_bound(n)).
 */
size_t tilefeed_counts_put(uint8_t *out, const uint32_t *now, const uint32_t *base, uint32_t n);

/*
 * The counts section p[0..len) of n tiles into now[] (base as it was
 * written with, or NULL): 0, or PROTO_E_BAD_BODY (codes past its end, bits
 * left over or padding not zero, a count below zero or past 2^32 - 1).
 */
int tilefeed_counts_get(const uint8_t *p, size_t len, const uint32_t *base, uint32_t n,
                        uint32_t *now);

#endif
