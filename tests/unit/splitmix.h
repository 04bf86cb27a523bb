/*
 * splitmix — the unit tests' own small deterministic randomness
 * (splitmix64, Steele, Lea and Flood 2014): each call advances a 64-bit
 * state the caller owns. Header-only, so any test file can include it.
 *
 * Never: globals, I/O. Threading: one state per thread.
 */
#ifndef FLOCKD_TESTS_SPLITMIX_H
#define FLOCKD_TESTS_SPLITMIX_H

#include <stdint.h>

static inline uint64_t splitmix_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
