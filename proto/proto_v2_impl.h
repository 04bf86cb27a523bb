/*
 * proto_v2_impl.h — internals shared by proto_v2.c (encoder) and
 * proto_v2_decode.c (decoder): header offsets, limits, and the prediction
 * and residual coding of PROTOCOL.md §11.4-§11.5, written once so the two
 * directions cannot disagree. Not part of the codec's API.
 *
 * Never: I/O, allocation, globals. Threading: reentrant.
 */
#ifndef FLOCKD_PROTO_V2_IMPL_H
#define FLOCKD_PROTO_V2_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_v2.h"

/* Header offsets (PROTOCOL.md §11.2); bytes 5, 50-51 and 60-63 are zero. */
enum {
    PV2_OFF_MAGIC = 0,
    PV2_OFF_VERSION = 2,
    PV2_OFF_KIND = 3,
    PV2_OFF_FLAGS = 4,
    PV2_OFF_RUNS = 6,
    PV2_OFF_TICK = 8,
    PV2_OFF_TIME = 16,
    PV2_OFF_WIDTH = 24,
    PV2_OFF_HEIGHT = 28,
    PV2_OFF_EPOCH = 32,
    PV2_OFF_BOIDS = 36,
    PV2_OFF_OBSTACLES = 40,
    PV2_OFF_TARGETS = 42,
    PV2_OFF_SEQ = 44,
    PV2_OFF_GAP1 = 48,
    PV2_OFF_GAP0 = 49,
    PV2_OFF_PACKED = 52,
    PV2_OFF_PLAIN = 56,
    PV2_OFF_SIM_HASH = 64,
    PV2_OFF_STATE_HASH = 72,
};

#define PV2_KNOWN_FLAGS        (PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP)
#define PV2_MAX_BOIDS          4194304u /* largest boid count an encoder or decoder takes */
#define PV2_KEY_PER_BOID       5        /* plain body bytes per boid of a key frame */
#define PV2_DELTA_MIN_PER_BOID 3        /* ... of a delta: one byte per field */
#define PV2_DELTA_MAX_PER_BOID 7        /* ... and two exceptions of two bytes */
#define PV2_MAX_RATIO          1032u    /* deflate's largest expansion */
#define PV2_ESCAPE             255u     /* plane byte: the code is in the exceptions */
#define PV2_BLOCK_MIN          2048     /* encoder: fewer plane bytes share a deflate block */
#define PV2_PLANES             6        /* delta: x, y, heading in two contexts; key: five */

/* Per-boid steps that must be inlined into each mode's loop (the mode is
 * a constant there, so each loop is specialised). */
#if defined(__GNUC__) || defined(__clang__)
#define PV2_INLINE static inline __attribute__((always_inline))
#else
#define PV2_INLINE static inline
#endif

void pv2_put_header(uint8_t *p, const struct proto_v2_header *h);
/* Upper bound of the deflated size of plain body bytes as the encoder writes them. */
size_t pv2_packed_bound(size_t plain);
/* Entry t (0..256) of the octant table (for the tests). */
uint16_t pv2_octant_turns(unsigned t);
/* Aspect weights of §11.4: round(256 * size / max(width, height)), at least 1. */
void pv2_aspect(float width, float height, int32_t *ax, int32_t *ay);

/* The bases of a delta, as the prediction reads them. */
struct pv2_bases {
    const uint16_t *x1, *y1, *x0, *y0; /* x0, y0, h0 NULL: one base */
    const uint8_t *h1, *h0;
    int32_t gap1, gap0;
    double inv_den; /* 1 / (2 gap0) */
    int32_t ax, ay;
};

static inline void pv2_bases_init(struct pv2_bases *b, float width, float height,
                                  const struct proto_v2_state *b1, const struct proto_v2_state *b0,
                                  uint8_t gap1, uint8_t gap0)
{
    *b = (struct pv2_bases){.x1 = b1->qx,
                            .y1 = b1->qy,
                            .h1 = b1->heading,
                            .x0 = b0 ? b0->qx : NULL,
                            .y0 = b0 ? b0->qy : NULL,
                            .h0 = b0 ? b0->heading : NULL,
                            .gap1 = gap1,
                            .gap0 = b0 ? gap0 : 0,
                            .inv_den = b0 ? 1.0 / (2.0 * gap0) : 0.0};
    pv2_aspect(width, height, &b->ax, &b->ay);
}

/* v mod 2^16 as a signed value in [-32768, 32767]. */
static inline int32_t pv2_signed16(uint32_t v)
{
    v &= 0xffffu;
    return v >= 0x8000u ? (int32_t)v - 0x10000 : (int32_t)v;
}

/* How a delta predicts positions: from one base, from two bases equally
 * far apart (the common case, no division), or from two others. */
enum pv2_mode { PV2_ONE_BASE, PV2_EVEN, PV2_UNEVEN };

static inline enum pv2_mode pv2_mode_of(const struct pv2_bases *b)
{
    return !b->gap0 ? PV2_ONE_BASE : b->gap1 == b->gap0 ? PV2_EVEN : PV2_UNEVEN;
}

/* Context of boid i (§11.5): 1 if it turned by 2 or more heading steps
 * between the two bases, else 0 (always 0 with one base). */
PV2_INLINE unsigned pv2_context(const struct pv2_bases *b, uint32_t i)
{
    if (!b->h0)
        return 0;
    uint8_t turn = (uint8_t)(b->h1[i] - b->h0[i]);
    return (uint8_t)(turn + 1u) > 2u; /* turn in {255, 0, 1}: context 0 */
}

/* What the bases say of one boid before its residuals are known. */
struct pv2_guess {
    unsigned ctx;  /* the boid's context: which planes its residuals are in */
    uint16_t x, y; /* predicted position */
};

/*
 * p1 extrapolated by d * gap1 / gap0, rounded half up: p1 + floor((2 d
 * gap1 + gap0) / (2 gap0)) modulo 2^16. The quotient is taken in binary64
 * with a precomputed reciprocal, which is exact here: |numerator| < 2^25
 * and the divisor is at most 510, so the product is within 2^-28 of the
 * true quotient, which is either an integer or at least 1/510 away from
 * one; adding 2^-20 before truncating (after an offset of 2^25 that makes
 * it positive) gives the floor every decoder computes with integers.
 */
PV2_INLINE uint16_t pv2_extrapolate(const struct pv2_bases *b, uint16_t p1, int32_t d)
{
    double num = (double)(2 * d * b->gap1 + b->gap0);
    int64_t step = (int64_t)(num * b->inv_den + (0x1p25 + 0x1p-20)) - (1 << 25);
    return (uint16_t)((int32_t)p1 + (int32_t)step);
}

/*
 * Boid i's context and predicted position (§11.4): base 1's position with
 * one base, else base 1's extrapolated along (base 1 - base 0) by
 * gap1 / gap0, modulo 2^16. Inline with a constant mode, so that each mode
 * gets a loop of its own.
 */
PV2_INLINE struct pv2_guess pv2_guess_of(const struct pv2_bases *b, enum pv2_mode mode, uint32_t i)
{
    struct pv2_guess g = {0, b->x1[i], b->y1[i]};
    if (mode == PV2_ONE_BASE)
        return g;
    g.ctx = pv2_context(b, i);
    int32_t dx = pv2_signed16((uint32_t)g.x - b->x0[i]);
    int32_t dy = pv2_signed16((uint32_t)g.y - b->y0[i]);
    if (mode == PV2_EVEN) {
        g.x = (uint16_t)((int32_t)g.x + dx);
        g.y = (uint16_t)((int32_t)g.y + dy);
    } else {
        g.x = pv2_extrapolate(b, g.x, dx);
        g.y = pv2_extrapolate(b, g.y, dy);
    }
    return g;
}

/* Predicted heading (§11.4) once the position is known: the direction of
 * the boid's displacement from base 1, or base 1's heading if it did not
 * move. */
PV2_INLINE uint8_t pv2_predict_heading(const struct pv2_bases *b, uint32_t i, uint16_t qx,
                                       uint16_t qy)
{
    int32_t dx = pv2_signed16((uint32_t)qx - b->x1[i]);
    int32_t dy = pv2_signed16((uint32_t)qy - b->y1[i]);
    if (dx == 0 && dy == 0)
        return b->h1[i];
    return proto_v2_heading_of(dx * b->ax, dy * b->ay);
}

/* MurmurHash3_x86_32 in pieces (§11.6, §12.7): a 4-byte block mixed into
 * lane h, the block mix, and the finalizer over the length hashed. */
static inline uint32_t pv2_rotl32(uint32_t x, int r)
{
    return x << r | x >> (32 - r);
}

/* One 4-byte block of MurmurHash3_x86_32, already mixed (k) into lane h. */
static inline uint32_t pv2_murmur_round(uint32_t h, uint32_t k)
{
    h ^= k;
    h = pv2_rotl32(h, 13);
    return h * 5u + 0xe6546b64u;
}

static inline uint32_t pv2_murmur_mix(uint32_t k)
{
    k *= 0xcc9e2d51u;
    k = pv2_rotl32(k, 15);
    return k * 0x1b873593u;
}

static inline uint32_t pv2_murmur_final(uint32_t h, uint32_t len)
{
    h ^= len;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

/* Zigzag codes (§11.5): 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... */
static inline uint16_t pv2_zigzag16(uint16_t r)
{
    return (uint16_t)((uint32_t)r << 1 ^ (0u - ((uint32_t)r >> 15)));
}

static inline uint16_t pv2_unzigzag16(uint16_t z)
{
    return (uint16_t)((uint32_t)z >> 1 ^ (0u - ((uint32_t)z & 1u)));
}

static inline uint8_t pv2_zigzag8(uint8_t r)
{
    return (uint8_t)((uint32_t)r << 1 ^ (0u - ((uint32_t)r >> 7)));
}

static inline uint8_t pv2_unzigzag8(uint8_t z)
{
    return (uint8_t)((uint32_t)z >> 1 ^ (0u - ((uint32_t)z & 1u)));
}

#endif
