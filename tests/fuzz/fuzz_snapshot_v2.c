/*
 * fuzz_snapshot_v2 — proto_v2_decode() on a stream of arbitrary frames.
 *
 * The input is a sequence of frames, each a u16 little-endian length and
 * that many bytes (the last one cut short if the input ends), decoded in
 * order by one decoder, so accepted frames become the bases of later
 * deltas. For every frame:
 *   - a header refusal of proto_v2_decode_header() is the decoder's answer
 *     too, and every refusal is one of the codes §11.7 names;
 *   - a refused frame changes nothing: the states held before are held
 *     after, and its sequence number is not newly held;
 *   - an accepted frame obeys the header rules (kind and gaps, plain_len
 *     within the bounds of its kind, the length exact, counts within the
 *     decoder's limits), its boids hash to its state_hash, groups follow
 *     the runs, and it becomes a base;
 *   - the accepted state encodes again, as a key frame and (for a delta)
 *     as a delta on the same bases, into frames a second decoder given
 *     those bases decodes to the same boids.
 */
#include "fuzz_common.h"

#include "proto_v2.h"

#include <string.h>

#define MAX_BOIDS     64
#define MAX_OBSTACLES 16

/* A copy of an accepted state, as the harness keeps it. */
struct copy {
    struct proto_v2_state st;
    uint16_t qx[MAX_BOIDS], qy[MAX_BOIDS];
    uint8_t heading[MAX_BOIDS], group[MAX_BOIDS];
    struct proto_obstacle obstacles[MAX_OBSTACLES];
    struct proto_target targets[PROTO_SNAPSHOT_MAX_TARGETS];
};

static struct proto_v2_decoder *dec, *check_dec;
static struct proto_v2_encoder *enc;
static struct copy held[PROTO_V2_HISTORY]; /* the accepted states, oldest first */
static size_t nheld;
static uint8_t frame[8192];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *err = NULL;
    dec = proto_v2_decoder_create(MAX_BOIDS, MAX_OBSTACLES, &err);
    check_dec = proto_v2_decoder_create(MAX_BOIDS, MAX_OBSTACLES, &err);
    enc = proto_v2_encoder_create(MAX_BOIDS, &err);
    if (!dec || !check_dec || !enc)
        fuzz_fail("cannot create the codec: %s", err);
    return 0;
}

/* Points a copy's state at its own arrays (again, after it moved). */
static void point(struct copy *c)
{
    c->st.qx = c->qx, c->st.qy = c->qy, c->st.heading = c->heading, c->st.group = c->group;
    c->st.obstacles = c->obstacles, c->st.targets = c->targets;
}

static void keep_copy(const struct proto_v2_state *s)
{
    if (nheld == PROTO_V2_HISTORY) {
        memmove(held, held + 1, sizeof held[0] * (PROTO_V2_HISTORY - 1));
        nheld--;
        for (size_t k = 0; k < nheld; k++)
            point(&held[k]);
    }
    struct copy *c = &held[nheld++];
    c->st = *s;
    memcpy(c->qx, s->qx, s->count * sizeof *s->qx);
    memcpy(c->qy, s->qy, s->count * sizeof *s->qy);
    memcpy(c->heading, s->heading, s->count);
    memcpy(c->group, s->group, s->count);
    memcpy(c->obstacles, s->obstacles, s->obstacle_count * sizeof *s->obstacles);
    memcpy(c->targets, s->targets, s->target_count * sizeof *s->targets);
    point(c);
}

static const struct proto_v2_state *copy_of(uint32_t seq)
{
    for (size_t k = nheld; k > 0; k--)
        if (held[k - 1].st.seq == seq)
            return &held[k - 1].st;
    return NULL;
}

static bool known_refusal(int rc)
{
    return rc == PROTO_E_TRUNCATED || rc == PROTO_E_BAD_MAGIC || rc == PROTO_E_BAD_VERSION ||
           rc == PROTO_E_BAD_TYPE || rc == PROTO_E_BAD_VALUE || rc == PROTO_E_BAD_LENGTH ||
           rc == PROTO_E_OVER_LIMIT || rc == PROTO_E_NO_BASE || rc == PROTO_E_BAD_BODY ||
           rc == PROTO_E_HASH_MISMATCH;
}

static void check_accepted(const struct proto_v2_header *h, const struct proto_v2_state *s,
                           size_t len)
{
    uint64_t n = h->boid_count;
    bool key = h->kind == PROTO_V2_KIND_KEY;
    if (key ? (h->gap1 || h->gap0 || h->plain_len != 5 * n)
            : (!h->gap1 || h->plain_len < 3 * n || h->plain_len > 7 * n ||
               (h->plain_len - 3 * n) % 2))
        fuzz_fail("accepted kind %u with gaps %u/%u and plain_len %u for %u boids", h->kind,
                  h->gap1, h->gap0, h->plain_len, h->boid_count);
    if (len != PROTO_V2_HEADER_SIZE + 5u * h->run_count + 16u * h->obstacle_count +
                   9u * h->target_count + h->packed_len)
        fuzz_fail("accepted %zu bytes for another size", len);
    if (s->count != h->boid_count || s->count > MAX_BOIDS || s->obstacle_count > MAX_OBSTACLES)
        fuzz_fail("accepted %u boids, %u obstacles", s->count, s->obstacle_count);
    if (proto_v2_state_hash(s) != h->state_hash)
        fuzz_fail("accepted a state that does not hash to its state_hash");
    for (uint32_t i = 1; i < s->count; i++)
        if (s->group[i] < s->group[i - 1])
            fuzz_fail("groups not ascending at boid %u", i);
}

static bool same_boids(const struct proto_v2_state *a, const struct proto_v2_state *b)
{
    return a->count == b->count && !memcmp(a->qx, b->qx, a->count * sizeof *a->qx) &&
           !memcmp(a->qy, b->qy, a->count * sizeof *a->qy) &&
           !memcmp(a->heading, b->heading, a->count) && !memcmp(a->group, b->group, a->count);
}

/* Encodes s on bases b1, b0 (NULL: key) and decodes it with check_dec, which
 * first gets the bases as key frames; the result must be s's boids. */
static void check_reencodes(const struct proto_v2_state *s, const struct proto_v2_state *b1,
                            const struct proto_v2_state *b0)
{
    const struct proto_v2_state *bases[2] = {b0, b1}, *got = NULL;
    proto_v2_decoder_forget(check_dec);
    for (int k = 0; k < 2; k++) {
        if (!bases[k])
            continue;
        ptrdiff_t n = proto_v2_encode(enc, bases[k], NULL, NULL, frame, sizeof frame);
        if (n < 0 || proto_v2_decode(check_dec, frame, (size_t)n, &got) != 0)
            fuzz_fail("base %u did not encode and decode as a key frame", bases[k]->seq);
    }
    ptrdiff_t n = proto_v2_encode(enc, s, b1, b0, frame, sizeof frame);
    if (n < 0)
        fuzz_fail("a decoded state did not encode: %s", proto_status_name((int)n));
    int rc = proto_v2_decode(check_dec, frame, (size_t)n, &got);
    if (rc || !same_boids(got, s))
        fuzz_fail("a re-encoded %s did not decode to the same boids: %s", b1 ? "delta" : "key",
                  proto_status_name(rc));
}

static void one_frame(const uint8_t *data, size_t size)
{
    struct proto_v2_header h;
    const struct proto_v2_state *out = NULL;
    int hrc = proto_v2_decode_header(data, size, &h);
    int rc = proto_v2_decode(dec, data, size, &out);
    if (hrc && rc != hrc)
        fuzz_fail("header refused with %s, decode returned %s", proto_status_name(hrc),
                  proto_status_name(rc));
    if (rc) {
        if (!known_refusal(rc))
            fuzz_fail("refused with %s", proto_status_name(rc));
        for (size_t k = 0; k < nheld; k++)
            if (!proto_v2_decoder_has(dec, held[k].st.seq))
                fuzz_fail("a refused frame dropped base %u", held[k].st.seq);
        if (!hrc && !copy_of(h.seq) && proto_v2_decoder_has(dec, h.seq))
            fuzz_fail("a refused frame became base %u", h.seq);
        return;
    }
    check_accepted(&h, out, size);
    const struct proto_v2_state *b1 = NULL, *b0 = NULL;
    if (h.kind == PROTO_V2_KIND_DELTA) {
        b1 = copy_of(h.seq - h.gap1);
        b0 = h.gap0 ? copy_of(h.seq - h.gap1 - h.gap0) : NULL;
        if (!b1 || (h.gap0 && !b0))
            fuzz_fail("a delta was accepted on a base the harness never saw accepted");
    }
    check_reencodes(out, NULL, NULL);
    if (b1)
        check_reencodes(out, b1, b0);
    keep_copy(out); /* after: it may drop the oldest copy, a base of this frame */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proto_v2_decoder_forget(dec);
    nheld = 0;
    fuzz_each_frame(data, size, one_frame);
    return 0;
}
