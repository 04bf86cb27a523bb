/*
 * fuzz_store — the readers of flockd's own files (server/store/FILES.md) on
 * arbitrary bytes: ckpt_decode() (a checkpoint and the world state in it)
 * and the command log reader (reclog_reader_init, reclog_next).
 *
 * A checkpoint the decoder accepts must encode back to exactly the same
 * bytes (every field is read and checked, none defaulted or dropped), and
 * its world state must pass sim_state_check() on its own. The log reader
 * must walk forward through the input (each record starts after the last
 * and inside the input), end it in a bounded number of steps, and report
 * a torn tail only when nothing but zero bytes follows the torn record.
 * A BEGIN record's state is then decoded as a checkpoint, as a replay does.
 */
#include "fuzz_common.h"

#include "bytes.h"
#include "checkpoint.h"
#include "reclog.h"
#include "sim_state.h"

#include <stdlib.h>
#include <string.h>

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
    if (ckpt_size(&c) != size)
        fuzz_fail("accepted checkpoint of %zu bytes says it takes %zu", size, ckpt_size(&c));
    uint8_t *again = malloc(size);
    if (!again)
        return;
    int n = ckpt_encode(&c, again, size);
    if (n != (int)size)
        fuzz_fail("an accepted checkpoint encodes to %d bytes, not %zu", n, size);
    /* The wall clock and sequence fields are data too: all must survive. */
    if (memcmp(again, data, size) != 0)
        fuzz_fail("an accepted checkpoint does not encode back to the same bytes");
    free(again);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_checkpoint(data, size);
    check_log(data, size);
    return 0;
}
