/*
 * rng — PCG32 (O'Neill, pcg-random.org, "XSH RR" output), the world's only
 * source of randomness. State lives in the caller's struct: no globals.
 */
#ifndef FLOCKD_SIM_RNG_H
#define FLOCKD_SIM_RNG_H

#include <stdint.h>

struct pcg32 {
    uint64_t state, inc;
};

static inline uint32_t pcg32_next(struct pcg32 *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

static inline void pcg32_seed(struct pcg32 *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    pcg32_next(r);
    r->state += seed;
    pcg32_next(r);
}

/* Uniform float in [0, 1) with 24 bits of randomness. */
static inline float pcg32_float(struct pcg32 *r)
{
    return (float)(pcg32_next(r) >> 8) * (1.0f / 16777216.0f);
}

#endif
