/*
 * proto_deflate — a raw deflate (RFC 1951) writer for data that string
 * matching cannot shorten: every block holds literals only, coded with
 * whichever of a dynamic Huffman code, the fixed code or no code (a
 * stored block) is shortest for that block. Any inflater reads the result
 * (zlib, the browser's DecompressionStream('deflate-raw'), Python's zlib).
 *
 * Snapshot v2 bodies (proto_v2.h) are residual planes, noise around zero
 * with no repeats worth a match: their cost is the entropy of each plane,
 * which a Huffman code per plane reaches. Writing only that, in two passes
 * over the bytes (a histogram, then the codes), is several times faster
 * than zlib's Huffman-only mode, which copies its input through a window
 * and buffers every symbol.
 *
 * Never: allocation, I/O, globals; it writes only inside the caller's
 * buffer. Threading: a writer is used by one thread at a time.
 *
 * Errors: proto_deflate_end() returns PROTO_E_NOSPACE if the buffer was
 * too small at any point; blocks after that write nothing.
 */
#ifndef FLOCKD_PROTO_DEFLATE_H
#define FLOCKD_PROTO_DEFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run of input bytes; a block codes several in order as one. */
struct proto_deflate_span {
    const uint8_t *data;
    size_t len;
};

/* The writer's state: the caller's output buffer and the bits not yet written. */
struct proto_deflate {
    uint8_t *out;
    size_t cap, len;
    uint64_t bits; /* pending bits, least significant first */
    unsigned nbits;
    int err; /* 0, or PROTO_E_NOSPACE */
};

/* Starts a stream into out[0..cap). */
void proto_deflate_begin(struct proto_deflate *d, uint8_t *out, size_t cap);

/*
 * Writes one block holding the bytes of spans[0..n) in order, with one
 * code (a stored block holds at most 65535 bytes, so more are stored as
 * several); `last` marks the stream's final block.
 */
void proto_deflate_block(struct proto_deflate *d, const struct proto_deflate_span *spans, size_t n,
                         bool last);

/* Ends the stream (after a last block): its length, or PROTO_E_NOSPACE. */
ptrdiff_t proto_deflate_end(struct proto_deflate *d);

/* Most bytes a stream of `blocks` blocks holding `bytes` input bytes takes. */
size_t proto_deflate_bound(size_t bytes, size_t blocks);

#endif
