/*
 * proto_v3_impl.h — internals shared by proto_v3.c (encoder) and
 * proto_v3_decode.c (decoder): header offsets, varints, size bounds. Not
 * part of the codec's API.
 *
 * Never: I/O, allocation, globals. Threading: reentrant.
 */
#ifndef FLOCKD_PROTO_V3_IMPL_H
#define FLOCKD_PROTO_V3_IMPL_H

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
#define PV3_SCRATCH_PER_BOID 42 /* encoder scratch: indices, bases, sections */
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

/* The largest plain body a part of n boids with a base of b boids and a
 * field of `cells` across may have (§12.5): 16 n + b / 8 + 7 cells^2 + 16. */
static inline size_t pv3_plain_bound(uint32_t n, uint32_t b, uint32_t cells)
{
    return (size_t)n * 16 + (size_t)b / 8 + (size_t)cells * cells * 7 + 16;
}

#endif
