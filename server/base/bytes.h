/*
 * bytes — little-endian fields, the byte order of every binary format of
 * flockd (snapshots of both versions, recordings, checkpoints, command
 * logs, the world's state, cluster messages): single fields at a pointer,
 * and cursors over a caller's buffer that write or read fields in order.
 * Byte by byte, so neither the host's endianness nor alignment matters;
 * inline, since the snapshot encoder calls them per boid.
 *
 * A writer that runs out of room, or a reader that runs off the end,
 * remembers it (overflow / short) and from then on writes nothing and
 * reads zeros, so a codec checks once at the end instead of per field.
 *
 * Never: allocation, I/O. Threading: a cursor belongs to its caller.
 */
#ifndef FLOCKD_BYTES_H
#define FLOCKD_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* An unsigned integer of n bytes (1..8) at p. */
static inline uint64_t bytes_le_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void bytes_le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* IEEE 754 binary32: the float's bits as a little-endian u32. */
static inline float bytes_le_get_f32(const uint8_t *p)
{
    uint32_t bits = (uint32_t)bytes_le_get(p, 4);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static inline void bytes_le_put_f32(uint8_t *p, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bytes_le_put(p, bits, 4);
}

struct bytes_w {
    uint8_t *buf;
    size_t cap, len;
    int overflow;
};

struct bytes_r {
    const uint8_t *buf;
    size_t len, at;
    int short_read;
};

/* The next n bytes to write into, or NULL (and overflow set) if they do not fit. */
static inline uint8_t *bytes_room(struct bytes_w *w, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = 1;
        return NULL;
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

static inline void bytes_put(struct bytes_w *w, uint64_t v, int n)
{
    uint8_t *p = bytes_room(w, (size_t)n);
    if (p)
        bytes_le_put(p, v, n);
}

static inline void bytes_put_f32(struct bytes_w *w, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    bytes_put(w, u, 4);
}

static inline void bytes_put_f64(struct bytes_w *w, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    bytes_put(w, u, 8);
}

static inline void bytes_put_mem(struct bytes_w *w, const void *src, size_t n)
{
    uint8_t *p = bytes_room(w, n);
    if (p && n)
        memcpy(p, src, n);
}

/* The next n bytes to read, or NULL (and short_read set) past the end. */
static inline const uint8_t *bytes_take(struct bytes_r *r, size_t n)
{
    if (r->short_read || n > r->len - r->at) {
        r->short_read = 1;
        return NULL;
    }
    const uint8_t *p = r->buf + r->at;
    r->at += n;
    return p;
}

static inline uint64_t bytes_get(struct bytes_r *r, int n)
{
    const uint8_t *p = bytes_take(r, (size_t)n);
    return p ? bytes_le_get(p, n) : 0;
}

static inline float bytes_get_f32(struct bytes_r *r)
{
    uint32_t u = (uint32_t)bytes_get(r, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline double bytes_get_f64(struct bytes_r *r)
{
    uint64_t u = bytes_get(r, 8);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Copies n bytes into dst (a string of n characters, NUL-terminated). */
static inline void bytes_get_str(struct bytes_r *r, char *dst, size_t n)
{
    const uint8_t *p = bytes_take(r, n);
    if (p && n)
        memcpy(dst, p, n);
    dst[p ? n : 0] = '\0';
}

#endif
