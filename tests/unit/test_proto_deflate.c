/*
 * test_proto_deflate — the literal-only raw deflate writer, checked by
 * inflating everything it writes with zlib: empty input, one symbol, all
 * 256, skewed counts that need the 15-bit cap, blocks above 65535 bytes,
 * several blocks in one stream, and output buffers of every size too small.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "proto.h"
#include "proto_deflate.h"

/* Inflates in[0..n) (one raw stream, nothing after it) into out; returns the length or -1. */
static long inflate_all(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, -15), Z_OK);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    long len = rc == Z_STREAM_END && z.avail_in == 0 ? (long)z.total_out : -1;
    inflateEnd(&z);
    return len;
}

/* Writes data as the given blocks (sizes summing to n) and checks it inflates back. */
static size_t roundtrip_blocks(const uint8_t *data, size_t n, const size_t *blocks, size_t nblocks)
{
    size_t cap = proto_deflate_bound(n, nblocks);
    uint8_t *out = malloc(cap), *back = malloc(n + 1);
    assert_non_null(out);
    assert_non_null(back);
    struct proto_deflate d;
    proto_deflate_begin(&d, out, cap);
    size_t at = 0;
    for (size_t k = 0; k < nblocks; k++) {
        struct proto_deflate_span span = {data + at, blocks[k]};
        proto_deflate_block(&d, &span, 1, k == nblocks - 1);
        at += blocks[k];
    }
    ptrdiff_t len = proto_deflate_end(&d);
    assert_true(len > 0 && (size_t)len <= cap);
    assert_int_equal(inflate_all(out, (size_t)len, back, n + 1), (long)n);
    assert_memory_equal(back, data, n);
    free(out);
    free(back);
    return (size_t)len;
}

static size_t roundtrip(const uint8_t *data, size_t n)
{
    return roundtrip_blocks(data, n, &n, 1);
}

static void an_empty_block_should_inflate_to_nothing(void **state)
{
    (void)state;
    uint8_t none = 0;
    assert_true(roundtrip(&none, 0) <= 2);
}

static void one_repeated_byte_should_cost_about_a_bit_each(void **state)
{
    (void)state;
    uint8_t data[8000];
    memset(data, 7, sizeof data);
    assert_true(roundtrip(data, sizeof data) < sizeof data / 8 + 64);
}

static void uniform_bytes_should_fall_back_to_stored_blocks(void **state)
{
    (void)state;
    size_t n = 200000; /* several stored blocks of at most 65535 */
    uint8_t *data = malloc(n);
    assert_non_null(data);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
    size_t len = roundtrip(data, n);
    assert_true(len <= n + 5 * (n / 65535 + 1) + 8);
    free(data);
}

static void skewed_counts_should_be_capped_at_fifteen_bits(void **state)
{
    (void)state;
    /* Fibonacci counts make an uncapped Huffman code 25 bits deep. */
    size_t n = 0, f[26] = {1, 1};
    for (int k = 2; k < 26; k++)
        f[k] = f[k - 1] + f[k - 2];
    for (int k = 0; k < 26; k++)
        n += f[k];
    uint8_t *data = malloc(n);
    assert_non_null(data);
    size_t at = 0;
    for (int k = 0; k < 26; k++)
        for (size_t i = 0; i < f[k]; i++)
            data[at++] = (uint8_t)(k * 9);
    size_t len = roundtrip(data, n);
    assert_true(len < n / 2); /* still coded, not stored */
    free(data);
}

static void noise_around_zero_should_compress_near_its_entropy(void **state)
{
    (void)state;
    /* Zigzag codes of a roughly Laplacian residual: about 3 bits each. */
    size_t n = 30000;
    uint8_t *data = malloc(n);
    assert_non_null(data);
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        unsigned r = x >> 16, v = 0;
        while (v < 40 && (r & 3u) != 0)
            v++, r = (r >> 2) ^ (x >> (v % 16));
        data[i] = (uint8_t)v;
    }
    size_t len = roundtrip(data, n);
    assert_true(len < n / 2);
    free(data);
}

static void several_blocks_should_make_one_stream(void **state)
{
    (void)state;
    uint8_t data[10000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i < 3000 ? i % 3 : i < 6000 ? 200 + i % 50 : (i * 7919) >> 3);
    size_t blocks[] = {3000, 0, 3000, 1, 3999};
    roundtrip_blocks(data, sizeof data, blocks, 5);
}

static void spans_should_code_as_their_concatenation(void **state)
{
    (void)state;
    uint8_t a[100], b[3], c[1000], all[1103], out[2000], back[1104];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (uint8_t)i;
    memset(b, 250, sizeof b);
    for (size_t i = 0; i < sizeof c; i++)
        c[i] = (uint8_t)(i % 7);
    memcpy(all, a, 100), memcpy(all + 100, b, 3), memcpy(all + 103, c, 1000);
    struct proto_deflate_span spans[] = {{a, 100}, {b, 3}, {NULL, 0}, {c, 1000}};
    struct proto_deflate d;
    proto_deflate_begin(&d, out, sizeof out);
    proto_deflate_block(&d, spans, 4, true);
    ptrdiff_t len = proto_deflate_end(&d);
    assert_true(len > 0);
    assert_int_equal(inflate_all(out, (size_t)len, back, sizeof back), 1103);
    assert_memory_equal(back, all, 1103);
}

static void a_buffer_too_small_should_give_nospace_and_stay_inside_it(void **state)
{
    (void)state;
    uint8_t data[3000], out[4000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i % 5 + (i % 97 == 0) * 100);
    struct proto_deflate_span span = {data, sizeof data};
    struct proto_deflate d;
    proto_deflate_begin(&d, out, sizeof out);
    proto_deflate_block(&d, &span, 1, true);
    ptrdiff_t full = proto_deflate_end(&d);
    assert_true(full > 0);
    for (size_t cap = 0; cap < (size_t)full; cap++) {
        memset(out, 0xAB, sizeof out);
        proto_deflate_begin(&d, out, cap);
        proto_deflate_block(&d, &span, 1, true);
        assert_int_equal(proto_deflate_end(&d), PROTO_E_NOSPACE);
        for (size_t i = cap; i < sizeof out; i++)
            assert_int_equal(out[i], 0xAB);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_block_should_inflate_to_nothing),
        cmocka_unit_test(one_repeated_byte_should_cost_about_a_bit_each),
        cmocka_unit_test(uniform_bytes_should_fall_back_to_stored_blocks),
        cmocka_unit_test(skewed_counts_should_be_capped_at_fifteen_bits),
        cmocka_unit_test(noise_around_zero_should_compress_near_its_entropy),
        cmocka_unit_test(several_blocks_should_make_one_stream),
        cmocka_unit_test(spans_should_code_as_their_concatenation),
        cmocka_unit_test(a_buffer_too_small_should_give_nospace_and_stay_inside_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
