/*
 * fuzz_store — the readers of flockd's own files (server/store/FILES.md) on
 * arbitrary bytes: ckpt_decode() (a checkpoint and the world state in it)
 * and the command log reader (reclog_reader_init, reclog_next).
 *
 * A checkpoint the decoder accepts must encode back to exactly the same
 * bytes (every field is read and checked, none defaulted or dropped; a
 * version 1 checkpoint comes back as the current version), and
 * its world state must pass sim_state_check() on its own. The log reader
 * must walk forward through the input (each record starts after the last
 * and inside the input), end it in a bounded number of steps, and report
 * a torn tail only when nothing but zero bytes follows the torn record.
 * A BEGIN record's state is then decoded as a checkpoint, as a replay does.
 *
 * The checksums mode: both readers check a CRC-32 before they read what it
 * covers, and a mutation almost never leaves a CRC right, so on the bytes
 * as given the fuzzer would hardly get past the checksums to the fields
 * behind them. Each input is therefore checked twice: as given (which
 * keeps the refusals of bad lengths and CRCs fuzzed), and once more, when
 * that changes anything, with them set right: as a checkpoint, its total
 * length and its CRC (FILES.md §2.1, §2.2); as a log, each whole record's
 * CRC, after the checkpoint in a BEGIN record was set right the same way
 * (§1.2, §1.3). The properties are the same in both.
 */
#include "fuzz_common.h"

#include "bytes.h"
#include "checkpoint.h"
#include "reclog.h"
#include "sim_state.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* FILES.md §2.1: where the format version and the total length are; the
 * header and CRC's bytes. */
#define CKPT_VERSION_AT 8
#define CKPT_TOTAL_AT   12
#define CKPT_MIN        (60 + 4)

/*
 * Into out (size + 1 bytes), what ckpt_encode() writes for the accepted
 * checkpoint data: the same bytes, but a version 1 checkpoint as the
 * current version, which has an empty script section (one zero byte)
 * before the CRC (FILES.md §2.1, §2.3); its length.
 */
static size_t encoding_of(const uint8_t *data, size_t size, uint8_t *out)
{
    memcpy(out, data, size);
    if (bytes_le_get(data + CKPT_VERSION_AT, 2) != 1)
        return size;
    bytes_le_put(out + CKPT_VERSION_AT, CKPT_VERSION, 2);
    bytes_le_put(out + CKPT_TOTAL_AT, size + 1, 4);
    out[size - 4] = 0;
    bytes_le_put(out + size - 3, crc32_z(0, out, size - 3), 4);
    return size + 1;
}

/* ckpt_encode(c) gives back data (as encoding_of() says), byte for byte. */
static void check_encodes_back(const struct ckpt *c, const uint8_t *data, size_t size)
{
    uint8_t *want = malloc(size + 1), *again = malloc(size + 1);
    if (want && again) {
        size_t len = encoding_of(data, size, want);
        if (ckpt_size(c) != len)
            fuzz_fail("accepted checkpoint of %zu bytes says it takes %zu", size, ckpt_size(c));
        int n = ckpt_encode(c, again, len);
        if (n != (int)len)
            fuzz_fail("an accepted checkpoint encodes to %d bytes, not %zu", n, len);
        /* The wall clock and sequence fields are data too: all must survive. */
        if (memcmp(again, want, len) != 0)
            fuzz_fail("an accepted checkpoint does not encode back to the same bytes");
    }
    free(want);
    free(again);
}

static void check_checkpoint(const uint8_t *data, size_t size)
{
    struct ckpt c;
    const char *why = NULL;
    if (ckpt_decode(data, size, &c, &why) < 0) {
        if (!why)
            fuzz_fail("ckpt_decode refused without a reason");
        return;
    }
    if (sim_state_check(c.world, c.world_len, NULL, &why) < 0)
        fuzz_fail("an accepted checkpoint's world fails sim_state_check: %s", why);
    check_encodes_back(&c, data, size);
}

static bool only_zeros(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void check_log(const uint8_t *data, size_t size)
{
    struct reclog_reader rd;
    if (reclog_reader_init(&rd, data, size, NULL) < 0)
        return;
    struct reclog_record rec;
    size_t last = 0;
    for (size_t steps = 0;; steps++) {
        if (steps > size)
            fuzz_fail("the log reader does not advance");
        size_t at = rd.at;
        int rc = reclog_next(&rd, &rec, NULL);
        if (rc <= 0) {
            if (rc == 0 && rd.torn && !only_zeros(data + rd.good_end, size - rd.good_end) &&
                rd.good_end + RECLOG_FRAME <= size) {
                /* Past the torn record's frame only zeros may follow. */
                size_t n = (size_t)bytes_le_get(data + rd.good_end, 4);
                size_t after = rd.good_end + RECLOG_FRAME + n;
                if (after < size && !only_zeros(data + after, size - after))
                    fuzz_fail("a torn record is followed by data at %zu", after);
            }
            return;
        }
        if (rec.offset != at || rec.offset < last || rd.at <= at || rd.at > size)
            fuzz_fail("record at %zu: the reader went from %zu to %zu", rec.offset, at, rd.at);
        last = rec.offset;
        if (rec.type == RECLOG_BEGIN) {
            if (rec.state + rec.state_len > data + size || rec.state < data)
                fuzz_fail("a BEGIN state points outside the log");
            check_checkpoint(rec.state, rec.state_len);
        }
    }
}

/* The checkpoint in p[0..n) with its total length and CRC set right. */
static void fix_checkpoint(uint8_t *p, size_t n)
{
    if (n < CKPT_MIN)
        return;
    bytes_le_put(p + CKPT_TOTAL_AT, n, 4);
    bytes_le_put(p + n - 4, crc32_z(0, p, n - 4), 4);
}

/* The log in p[0..n) with each whole record's CRC set right, and the
 * checkpoint in each BEGIN record (type, reason, B, B bytes, the state). */
static void fix_log(uint8_t *p, size_t n)
{
    size_t at = RECLOG_PREAMBLE;
    while (n >= RECLOG_FRAME && at <= n - RECLOG_FRAME) {
        uint8_t *payload = p + at + RECLOG_FRAME;
        size_t len = (size_t)bytes_le_get(p + at, 4);
        if (len == 0 || len > n - at - RECLOG_FRAME)
            return;
        if (payload[0] == RECLOG_BEGIN && len >= 3 && (size_t)payload[2] + 3 <= len)
            fix_checkpoint(payload + 3 + payload[2], len - 3 - payload[2]);
        bytes_le_put(p + at + 4, crc32_z(0, payload, len), 4);
        at += RECLOG_FRAME + len;
    }
}

/* check(data) and, if fix changes a copy of data, check(copy). */
static void check_fixed(const uint8_t *data, size_t size, void (*fix)(uint8_t *, size_t),
                        void (*check)(const uint8_t *, size_t))
{
    check(data, size);
    uint8_t *copy = size ? malloc(size) : NULL;
    if (!copy)
        return;
    memcpy(copy, data, size);
    fix(copy, size);
    if (memcmp(copy, data, size) != 0)
        check(copy, size);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_fixed(data, size, fix_checkpoint, check_checkpoint);
    check_fixed(data, size, fix_log, check_log);
    return 0;
}
