/*
 * proto_v3_impl.h — internals shared by proto_v3.c (encoder) and
 * proto_v3_decode.c (decoder): header offsets, varints, size bounds. Not
 * part of the codec's API; the one other file that includes it is
 * server/cluster/tilefeed.c, whose counts section is coded with the same
 * bit writer and reader (CLUSTER.md §3.8).
 *
 * Never: I/O, allocation, globals. Threading: reentrant.
 */
#ifndef FLOCKD_PROTO_V3_IMPL_H
#define FLOCKD_PROTO_V3_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_v3.h"

/* Header offsets (PROTOCOL.md §12.5); bytes 7 and 50-51 are zero. */
enum {
    PV3_OFF_TICK = 8,
    PV3_OFF_TIME = 16,
    PV3_OFF_WIDTH = 24,
    PV3_OFF_HEIGHT = 28,
    PV3_OFF_SEQ = 32,
    PV3_OFF_ROOM_BOIDS = 36,
    PV3_OFF_COLS = 40,
    PV3_OFF_ROWS = 41,
    PV3_OFF_RECT_COLS = 42,
    PV3_OFF_RECT_ROWS = 43,
    PV3_OFF_RECT_X = 44,
    PV3_OFF_RECT_Y = 45,
    PV3_OFF_OBSTACLES = 46,
    PV3_OFF_TARGETS = 48,
    PV3_OFF_HASH = 52,
};

#define PV3_KNOWN_FLAGS                                                                            \
    (PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP | PROTO_V3_FLAG_FOGGED |                \
     PROTO_V3_FLAG_DELAYED)
#define PV3_VARINT_MAX       5                        /* bytes of a u32 varint */
#define PV3_PART_HEAD_MAX    (2 + 3 * PV3_VARINT_MAX) /* kind, gaps, count, packed, plain */
#define PV3_FIELD_BYTES      (PROTO_V3_FIELD_MAX * (PV3_VARINT_MAX + 2))
#define PV3_SCRATCH_PER_BOID 72 /* encoder scratch: indices, bases, codes, sections, bits */
#define PV3_SCRATCH_FIXED    (PV3_FIELD_BYTES + 64)

/* Writes v as an unsigned LEB128 varint at p; its length (1..5). */
static inline size_t pv3_put_varint(uint8_t *p, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80u) {
        p[n++] = (uint8_t)(v | 0x80u);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/*
 * Reads a varint at p[*at..len) into *v and moves *at past it. False (and
 * nothing moved) if it runs past len, is longer than 5 bytes, or does not
 * fit 32 bits.
 */
static inline bool pv3_get_varint(const uint8_t *p, size_t len, size_t *at, uint32_t *v)
{
    uint64_t x = 0;
    for (size_t k = 0; k < PV3_VARINT_MAX && *at + k < len; k++) {
        x |= (uint64_t)(p[*at + k] & 0x7fu) << (7 * k);
        if (!(p[*at + k] & 0x80u)) {
            if (x > UINT32_MAX)
                return false;
            *v = (uint32_t)x;
            *at += k + 1;
            return true;
        }
    }
    return false;
}

/* ---- Rice codes of a delta's bit section (§12.5) -------------------------------- */

#define PV3_RICE_K   16 /* parameters 0..15, four bits each */
#define PV3_RICE_ESC 20 /* this many one bits: the value follows in 16 bits */
#define PV3_RICE_MAX_BYTES                                                                         \
    19 /* a boid's codes at most: a leaver's and a stayer's 4 * (20 + 16) bits */

/* Bits of v (below 2^16) coded with parameter k. */
static inline uint32_t pv3_rice_bits(uint32_t v, unsigned k)
{
    uint32_t q = v >> k;
    return q < PV3_RICE_ESC ? q + 1 + k : PV3_RICE_ESC + 16;
}

/* A bit writer: bits go into bytes from the least significant on,
 * through a 64-bit accumulator. */
struct pv3_bits {
    uint8_t *p; /* the next byte to write */
    uint64_t acc;
    unsigned fill; /* bits in acc, below 8 between calls */
    uint8_t *start;
};

/* n (at most 32) low bits of v. */
static inline void pv3_put_bits(struct pv3_bits *w, uint32_t v, unsigned n)
{
    w->acc |= (uint64_t)(v & (uint32_t)((1ull << n) - 1u)) << w->fill;
    w->fill += n;
    while (w->fill >= 8) {
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->fill -= 8;
    }
}

/* v with parameter k: v >> k one bits and a zero, then k low bits of v;
 * or, when v >> k is PV3_RICE_ESC or more, that many one bits and v in 16. */
static inline void pv3_put_rice(struct pv3_bits *w, uint32_t v, unsigned k)
{
    uint32_t q = v >> k;
    if (q >= PV3_RICE_ESC) {
        pv3_put_bits(w, (1u << PV3_RICE_ESC) - 1u, PV3_RICE_ESC);
        pv3_put_bits(w, v, 16);
        return;
    }
    pv3_put_bits(w, (1u << q) - 1u, q + 1); /* q ones, then the zero */
    pv3_put_bits(w, v, k);
}

/* Pads the last byte with zeros: the bytes written. */
static inline size_t pv3_bits_end(struct pv3_bits *w)
{
    if (w->fill)
        pv3_put_bits(w, 0, 8 - w->fill);
    return (size_t)(w->p - w->start);
}

/* A bit reader over p[0..len): reading past the end sets `bad`. */
struct pv3_bitr {
    const uint8_t *p;
    size_t len; /* bytes */
    size_t pos; /* bytes taken into acc */
    uint64_t acc;
    unsigned fill; /* bits in acc */
    bool bad;
};

/* n (at most 32) bits. */
static inline uint32_t pv3_get_bits(struct pv3_bitr *r, unsigned n)
{
    while (r->fill < n) {
        if (r->pos >= r->len) {
            r->bad = true;
            return 0;
        }
        r->acc |= (uint64_t)r->p[r->pos++] << r->fill;
        r->fill += 8;
    }
    uint32_t v = (uint32_t)(r->acc & ((1ull << n) - 1u));
    r->acc >>= n;
    r->fill -= n;
    return v;
}

/* Bits read so far. */
static inline size_t pv3_bits_read(const struct pv3_bitr *r)
{
    return r->pos * 8 - r->fill;
}

static inline uint32_t pv3_get_rice(struct pv3_bitr *r, unsigned k)
{
    uint32_t q = 0;
    while (q < PV3_RICE_ESC && pv3_get_bits(r, 1) && !r->bad)
        q++;
    if (q == PV3_RICE_ESC)
        return pv3_get_bits(r, 16);
    return q << k | pv3_get_bits(r, k);
}

/* The largest inflated body a key of n boids and a field of `cells`
 * across may have (§12.5): 16 n + 7 cells^2 + 16. */
static inline size_t pv3_plain_bound(uint32_t n, uint32_t cells)
{
    return (size_t)n * 16 + (size_t)cells * cells * 7 + 16;
}

#endif
