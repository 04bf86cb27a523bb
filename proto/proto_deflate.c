/*
 * proto_deflate.c — literal-only raw deflate blocks (RFC 1951 §3.2).
 *
 * Per block: a histogram of the bytes, a length-limited Huffman code for
 * it (Moffat and Katajainen's in-place algorithm, then the lengths capped
 * at 15 bits the way miniz does), the bit cost of a dynamic, a fixed and a
 * stored block, and the cheapest one written. Codes are assigned in the
 * canonical order of RFC 1951 §3.2.2, so the same bytes always give the
 * same stream: frames and golden vectors are reproducible.
 */
#include "proto_deflate.h"

#include <string.h>

#include "proto.h"

#define LIT_SYMS    257 /* bytes 0..255 and end-of-block */
#define EOB         256
#define MAX_BITS    15 /* longest literal code */
#define CL_SYMS     19 /* code-length alphabet */
#define CL_MAX_BITS 7
#define STORED_MAX  65535

/* A Huffman code: bit length and bit-reversed code of each symbol. */
struct code {
    uint8_t len[LIT_SYMS];
    uint16_t bits[LIT_SYMS];
};

/* ---- bits --------------------------------------------------------------- */

void proto_deflate_begin(struct proto_deflate *d, uint8_t *out, size_t cap)
{
    *d = (struct proto_deflate){.out = out, .cap = cap};
}

/* Appends n (<= 32) bits; the caller has checked room for the block. */
static inline void put_bits(struct proto_deflate *d, uint32_t v, unsigned n)
{
    d->bits |= (uint64_t)v << d->nbits;
    d->nbits += n;
    if (d->nbits >= 32) {
        uint8_t *p = d->out + d->len;
        p[0] = (uint8_t)d->bits;
        p[1] = (uint8_t)(d->bits >> 8);
        p[2] = (uint8_t)(d->bits >> 16);
        p[3] = (uint8_t)(d->bits >> 24);
        d->len += 4;
        d->bits >>= 32;
        d->nbits -= 32;
    }
}

/* Writes the pending bits up to the next byte boundary. */
static void align_bytes(struct proto_deflate *d)
{
    while (d->nbits > 0) {
        d->out[d->len++] = (uint8_t)d->bits;
        d->bits >>= 8;
        d->nbits = d->nbits > 8 ? d->nbits - 8 : 0;
    }
    d->bits = 0;
}

/* True if `bits` more bits fit (with the slack put_bits' 4-byte stores need). */
static bool has_room(struct proto_deflate *d, uint64_t bits)
{
    uint64_t need = (d->nbits + bits + 7) / 8 + 4;
    if (d->err == 0 && d->len + need <= d->cap)
        return true;
    d->err = PROTO_E_NOSPACE;
    return false;
}

static uint16_t reverse_bits(uint32_t code, unsigned len)
{
    uint32_t r = 0;
    for (unsigned i = 0; i < len; i++, code >>= 1)
        r = r << 1 | (code & 1u);
    return (uint16_t)r;
}

/* ---- Huffman code lengths ----------------------------------------------- */

/*
 * Sorts the used symbols of freq[0..nsym) by frequency, ascending, ties by
 * symbol (a stable LSD radix sort on 8-bit digits). Returns how many.
 */
static unsigned sort_used(const uint32_t *freq, unsigned nsym, uint16_t *sym)
{
    uint16_t tmp[LIT_SYMS];
    unsigned n = 0;
    uint32_t top = 0;
    for (unsigned s = 0; s < nsym; s++) {
        if (freq[s]) {
            sym[n++] = (uint16_t)s;
            top |= freq[s];
        }
    }
    for (unsigned shift = 0; shift < 32 && (top >> shift) != 0; shift += 8) {
        unsigned count[257] = {0};
        for (unsigned i = 0; i < n; i++)
            count[((freq[sym[i]] >> shift) & 255u) + 1]++;
        for (unsigned b = 1; b < 257; b++)
            count[b] += count[b - 1];
        for (unsigned i = 0; i < n; i++)
            tmp[count[(freq[sym[i]] >> shift) & 255u]++] = sym[i];
        memcpy(sym, tmp, n * sizeof *sym);
    }
    return n;
}

/*
 * Moffat and Katajainen, "In-place calculation of minimum-redundancy
 * codes" (1995): a[0..n) holds frequencies in ascending order (n >= 2);
 * on return a[i] is the code length of the i-th of them.
 */
static void minimum_redundancy(uint32_t *a, unsigned n)
{
    unsigned root = 0, leaf = 2, next;
    a[0] += a[1];
    for (next = 1; next < n - 1; next++) {
        if (leaf >= n || a[root] < a[leaf]) {
            a[next] = a[root];
            a[root++] = next;
        } else {
            a[next] = a[leaf++];
        }
        if (leaf >= n || (root < next && a[root] < a[leaf])) {
            a[next] += a[root];
            a[root++] = next;
        } else {
            a[next] += a[leaf++];
        }
    }
    a[n - 2] = 0;
    for (int k = (int)n - 3; k >= 0; k--)
        a[k] = a[a[k]] + 1;
    int avail = 1, used = 0, depth = 0, r = (int)n - 2, nx = (int)n - 1;
    while (avail > 0) {
        while (r >= 0 && (int)a[r] == depth) {
            used++;
            r--;
        }
        while (avail > used) {
            a[nx--] = (uint32_t)depth;
            avail--;
        }
        avail = 2 * used;
        depth++;
        used = 0;
    }
}

/* Caps lengths at max_bits keeping the code complete (Kraft sum 1). */
static void limit_lengths(unsigned *count, unsigned max_bits)
{
    for (unsigned l = max_bits + 1; l < LIT_SYMS; l++) {
        count[max_bits] += count[l];
        count[l] = 0;
    }
    uint32_t total = 0;
    for (unsigned l = max_bits; l > 0; l--)
        total += count[l] << (max_bits - l);
    while (total != 1u << max_bits) {
        count[max_bits]--;
        for (unsigned l = max_bits - 1; l > 0; l--) {
            if (count[l]) {
                count[l]--;
                count[l + 1] += 2;
                break;
            }
        }
        total--;
    }
}

/* Canonical codes (RFC 1951 §3.2.2) for the lengths in c->len[0..nsym). */
static void assign_codes(struct code *c, unsigned nsym)
{
    unsigned count[MAX_BITS + 1] = {0}, next[MAX_BITS + 1] = {0}, code = 0;
    for (unsigned s = 0; s < nsym; s++)
        count[c->len[s]]++;
    count[0] = 0;
    for (unsigned l = 1; l <= MAX_BITS; l++) {
        code = (code + count[l - 1]) << 1;
        next[l] = code;
    }
    for (unsigned s = 0; s < nsym; s++)
        if (c->len[s])
            c->bits[s] = reverse_bits(next[c->len[s]]++, c->len[s]);
}

/*
 * A complete Huffman code of at most max_bits for freq[0..nsym). Every
 * inflater wants a complete code, so when fewer than two symbols are used
 * a second one (0 or 1) joins with the shortest code.
 */
static void build_code(const uint32_t *freq_in, unsigned nsym, unsigned max_bits, struct code *c)
{
    uint32_t freq[LIT_SYMS], a[LIT_SYMS];
    uint16_t sym[LIT_SYMS];
    memcpy(freq, freq_in, nsym * sizeof *freq);
    unsigned n = sort_used(freq, nsym, sym);
    for (unsigned s = 0; n < 2; s++)
        if (!freq[s])
            freq[s] = 1, n = sort_used(freq, nsym, sym);
    for (unsigned i = 0; i < n; i++)
        a[i] = freq[sym[i]];
    minimum_redundancy(a, n);
    unsigned count[LIT_SYMS] = {0}; /* lengths before limiting stay below n */
    for (unsigned i = 0; i < n; i++)
        count[a[i]]++;
    limit_lengths(count, max_bits);
    memset(c->len, 0, nsym);
    unsigned i = n; /* most frequent last: shortest lengths first */
    for (unsigned l = 1; l <= max_bits; l++)
        for (unsigned k = count[l]; k > 0; k--)
            c->len[sym[--i]] = (uint8_t)l;
    assign_codes(c, nsym);
}

/* ---- the dynamic block header (RFC 1951 §3.2.7) -------------------------- */

static const uint8_t cl_order[CL_SYMS] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                          11, 4,  12, 3, 13, 2, 14, 1, 15};

/* The code lengths of a block, run-length coded with symbols 16-18. */
struct header {
    uint8_t sym[LIT_SYMS + 1], extra[LIT_SYMS + 1];
    unsigned n;     /* entries of sym/extra */
    unsigned ncl;   /* code-length code lengths sent (HCLEN + 4) */
    uint64_t bits;  /* size of the whole header, BFINAL and BTYPE included */
    struct code cl; /* the code-length code (first CL_SYMS entries used) */
};

static void rle_push(struct header *h, uint8_t sym, uint8_t extra)
{
    h->sym[h->n] = sym;
    h->extra[h->n++] = extra;
}

/* Run-length codes the 257 literal lengths and the one zero distance length. */
static void rle_lengths(const uint8_t *len, struct header *h)
{
    uint8_t all[LIT_SYMS + 1];
    memcpy(all, len, LIT_SYMS);
    all[LIT_SYMS] = 0; /* one distance code of zero bits: no distances */
    h->n = 0;
    for (unsigned i = 0; i < LIT_SYMS + 1;) {
        unsigned run = 1;
        while (i + run < LIT_SYMS + 1 && all[i + run] == all[i])
            run++;
        unsigned left = run;
        if (all[i] == 0) {
            for (; left >= 11; left -= left > 138 ? 138 : left)
                rle_push(h, 18, (uint8_t)((left > 138 ? 138 : left) - 11));
            if (left >= 3)
                rle_push(h, 17, (uint8_t)(left - 3)), left = 0;
        } else {
            rle_push(h, all[i], 0), left--;
            for (; left >= 3; left -= left > 6 ? 6 : left)
                rle_push(h, 16, (uint8_t)((left > 6 ? 6 : left) - 3));
        }
        for (; left > 0; left--)
            rle_push(h, all[i], 0);
        i += run;
    }
}

static unsigned extra_bits(uint8_t sym)
{
    return sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0;
}

static void plan_header(const struct code *lit, struct header *h)
{
    uint32_t freq[CL_SYMS] = {0};
    rle_lengths(lit->len, h);
    for (unsigned i = 0; i < h->n; i++)
        freq[h->sym[i]]++;
    build_code(freq, CL_SYMS, CL_MAX_BITS, &h->cl);
    h->ncl = CL_SYMS;
    while (h->ncl > 4 && h->cl.len[cl_order[h->ncl - 1]] == 0)
        h->ncl--;
    h->bits = 3 + 5 + 5 + 4 + 3 * (uint64_t)h->ncl;
    for (unsigned i = 0; i < h->n; i++)
        h->bits += h->cl.len[h->sym[i]] + extra_bits(h->sym[i]);
}

static void put_header(struct proto_deflate *d, const struct header *h, bool last)
{
    put_bits(d, last ? 1u : 0u, 1);
    put_bits(d, 2, 2); /* dynamic Huffman */
    put_bits(d, 0, 5); /* HLIT: 257 literal/length codes */
    put_bits(d, 0, 5); /* HDIST: one distance code */
    put_bits(d, h->ncl - 4, 4);
    for (unsigned i = 0; i < h->ncl; i++)
        put_bits(d, h->cl.len[cl_order[i]], 3);
    for (unsigned i = 0; i < h->n; i++) {
        put_bits(d, h->cl.bits[h->sym[i]], h->cl.len[h->sym[i]]);
        put_bits(d, h->extra[i], extra_bits(h->sym[i]));
    }
}

/* ---- blocks ------------------------------------------------------------- */

/* The fixed code of RFC 1951 §3.2.6 for literals and end-of-block (its
 * other symbols, which take part in the canonical order, are unused). */
static void fixed_code(struct code *c)
{
    for (unsigned s = 0; s < LIT_SYMS; s++) {
        unsigned len = s < 144 ? 8 : s < 256 ? 9 : 7;
        unsigned code = s < 144 ? 0x30 + s : s < 256 ? 0x190 + (s - 144) : 0;
        c->len[s] = (uint8_t)len;
        c->bits[s] = reverse_bits(code, len);
    }
}

static uint64_t coded_bits(const uint32_t *freq, const struct code *c)
{
    uint64_t bits = 0;
    for (unsigned s = 0; s < LIT_SYMS; s++)
        bits += (uint64_t)freq[s] * c->len[s];
    return bits;
}

static void put_symbols(struct proto_deflate *d, const struct proto_deflate_span *spans, size_t n,
                        const struct code *c)
{
    for (size_t k = 0; k < n; k++) {
        const uint8_t *p = spans[k].data;
        size_t i = 0, len = spans[k].len;
        for (; i + 2 <= len; i += 2) { /* two codes of at most 15 bits at a time */
            unsigned la = c->len[p[i]], lb = c->len[p[i + 1]];
            put_bits(d, c->bits[p[i]] | (uint32_t)c->bits[p[i + 1]] << la, la + lb);
        }
        if (i < len)
            put_bits(d, c->bits[p[i]], c->len[p[i]]);
    }
    put_bits(d, c->bits[EOB], c->len[EOB]);
}

/* Bits of the block stored: per 65535 bytes a header, padding, LEN, NLEN. */
static uint64_t stored_bits(const struct proto_deflate *d, size_t bytes)
{
    uint64_t chunks = bytes ? (bytes + STORED_MAX - 1) / STORED_MAX : 1;
    unsigned first_pad = (8 - (d->nbits + 3) % 8) % 8;
    return chunks * (3 + 32) + first_pad + (chunks - 1) * 5 + 8 * (uint64_t)bytes;
}

static void put_stored(struct proto_deflate *d, const struct proto_deflate_span *spans, size_t n,
                       size_t bytes, bool last)
{
    size_t k = 0, at = 0;
    do {
        size_t chunk = bytes > STORED_MAX ? STORED_MAX : bytes;
        bytes -= chunk;
        put_bits(d, last && bytes == 0 ? 1u : 0u, 1);
        put_bits(d, 0, 2); /* stored */
        align_bytes(d);
        put_bits(d, (uint32_t)chunk, 16);
        put_bits(d, (uint32_t)chunk ^ 0xffffu, 16);
        for (size_t left = chunk; left > 0;) {
            size_t take = spans[k].len - at < left ? spans[k].len - at : left;
            memcpy(d->out + d->len, spans[k].data + at, take);
            d->len += take, left -= take, at += take;
            if (at == spans[k].len)
                k++, at = 0;
        }
    } while (bytes > 0);
}

/* Histogram in four interleaved tables, so repeated bytes do not stall. */
static size_t histogram(const struct proto_deflate_span *spans, size_t n, uint32_t *freq)
{
    uint32_t h[4][256];
    size_t bytes = 0;
    memset(h, 0, sizeof h);
    for (size_t k = 0; k < n; k++) {
        const uint8_t *p = spans[k].data;
        size_t i = 0, len = spans[k].len;
        for (; i + 4 <= len; i += 4) {
            h[0][p[i]]++;
            h[1][p[i + 1]]++;
            h[2][p[i + 2]]++;
            h[3][p[i + 3]]++;
        }
        for (; i < len; i++)
            h[0][p[i]]++;
        bytes += len;
    }
    for (unsigned s = 0; s < 256; s++)
        freq[s] = h[0][s] + h[1][s] + h[2][s] + h[3][s];
    freq[EOB] = 1;
    return bytes;
}

void proto_deflate_block(struct proto_deflate *d, const struct proto_deflate_span *spans, size_t n,
                         bool last)
{
    uint32_t freq[LIT_SYMS];
    struct code dyn, fix;
    struct header h;
    size_t bytes = histogram(spans, n, freq);
    build_code(freq, LIT_SYMS, MAX_BITS, &dyn);
    plan_header(&dyn, &h);
    fixed_code(&fix);
    uint64_t dyn_bits = h.bits + coded_bits(freq, &dyn), fix_bits = 3 + coded_bits(freq, &fix);
    uint64_t sto_bits = stored_bits(d, bytes);
    uint64_t best = dyn_bits < fix_bits ? dyn_bits : fix_bits;
    if (!has_room(d, best < sto_bits ? best : sto_bits))
        return;
    if (sto_bits <= best) {
        put_stored(d, spans, n, bytes, last);
    } else if (dyn_bits < fix_bits) {
        put_header(d, &h, last);
        put_symbols(d, spans, n, &dyn);
    } else {
        put_bits(d, last ? 1u : 0u, 1);
        put_bits(d, 1, 2); /* fixed Huffman */
        put_symbols(d, spans, n, &fix);
    }
}

ptrdiff_t proto_deflate_end(struct proto_deflate *d)
{
    if (d->err)
        return d->err;
    align_bytes(d);
    return (ptrdiff_t)d->len;
}

size_t proto_deflate_bound(size_t bytes, size_t blocks)
{
    /* A block is never longer than stored: 5 bytes per 65535 and padding. */
    return bytes + 5 * (bytes / STORED_MAX + blocks) + 8;
}
