/*
 * fuzz_snapshot_v3 — proto_v3_decode() on a stream of arbitrary view
 * frames (PROTOCOL.md §12).
 *
 * The input is a sequence of frames, each a u16 little-endian length and
 * that many bytes (the last one cut short if the input ends), decoded in
 * order by one decoder, so accepted frames become the bases of later
 * deltas. For every frame:
 *   - every refusal is one of the codes §12.7 names;
 *   - proto_v3_scan() agrees with the decoder: a frame it refuses, the
 *     decoder refuses (with the same code when the magic, version or kind
 *     is wrong); a frame the decoder accepts, it accepts, with the same
 *     parts and boids;
 *   - the decoder answers as a fresh decoder does that was given the
 *     frames the harness saw accepted (the last PROTO_V3_HISTORY, encoded
 *     again as keys by the harness's own encoder, bodies in stored deflate
 *     blocks): the same code, the same
 *     boids. So a refused frame changed no base, and an accepted delta
 *     rests on exactly the bases it names (a frame without a delta part
 *     is compared with a decoder that holds nothing);
 *   - an accepted frame has one part per super-tile of its rect, in rect
 *     order, each part's ids ascending and >= 1, counts that sum to its
 *     boids and tile hashes that sum to its frame_hash;
 *   - its parts encode again (proto_v3_encode_part()), each as a delta on
 *     the previous accepted frame's part of the same super-tile when that
 *     frame has the shift, sample and grid and is at most 15 frames older
 *     (a part it lacks as a stored key), else all as keys, into a frame
 *     the reference decoder reads back to the same boids.
 */
#include "fuzz_common.h"

#include "proto_v3.h"

#include <string.h>

#define MAX_BOIDS     256
#define MAX_PARTS     64
#define MAX_OBSTACLES 16
#define CELLS         PROTO_V3_FIELD_CELLS

#define KEYS_MAX (1 << 16) /* a frame of MAX_BOIDS boids in MAX_PARTS parts, as keys */

/* An accepted frame, as the harness keeps it, and encoded again as keys. */
struct copy {
    uint8_t keys[KEYS_MAX];
    size_t keys_len;
    struct proto_v3_header h;
    uint32_t part_count;
    struct proto_v3_part parts[MAX_PARTS];
    struct proto_v3_field fields[MAX_PARTS];
    uint32_t id[MAX_BOIDS];
    uint16_t qx[MAX_BOIDS], qy[MAX_BOIDS];
    uint8_t heading[MAX_BOIDS], group[MAX_BOIDS];
};

static struct proto_v3_decoder *dec, *ref;
static struct proto_v3_encoder *enc;
static struct copy slots[PROTO_V3_HISTORY + 1];
static struct copy *held[PROTO_V3_HISTORY];         /* the accepted frames, oldest first */
static struct copy *now = &slots[PROTO_V3_HISTORY]; /* the frame being checked: a free slot */
static size_t nheld;
static uint8_t frame[KEYS_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *err = NULL;
    dec = proto_v3_decoder_create(MAX_BOIDS, MAX_PARTS, MAX_OBSTACLES, CELLS, &err);
    ref = proto_v3_decoder_create(MAX_BOIDS, MAX_PARTS, MAX_OBSTACLES, CELLS, &err);
    enc = proto_v3_encoder_create(MAX_BOIDS, &err);
    if (!dec || !ref || !enc)
        fuzz_fail("cannot create the codec: %s", err);
    return 0;
}

static bool known_refusal(int rc)
{
    return rc == PROTO_E_TRUNCATED || rc == PROTO_E_BAD_MAGIC || rc == PROTO_E_BAD_VERSION ||
           rc == PROTO_E_BAD_TYPE || rc == PROTO_E_BAD_VALUE || rc == PROTO_E_BAD_LENGTH ||
           rc == PROTO_E_OVER_LIMIT || rc == PROTO_E_NO_BASE || rc == PROTO_E_BAD_BODY ||
           rc == PROTO_E_HASH_MISMATCH;
}

/* Points a copy's parts at its own arrays. */
static void point(struct copy *c)
{
    uint32_t at = 0;
    for (uint32_t k = 0; k < c->part_count; k++) {
        struct proto_v3_part *p = &c->parts[k];
        p->id = c->id + at, p->qx = c->qx + at, p->qy = c->qy + at;
        p->heading = c->heading + at, p->group = c->group + at;
        p->field = p->field ? &c->fields[k] : NULL;
        at += p->count;
    }
}

static void copy_frame(struct copy *c, const struct proto_v3_frame *f)
{
    c->h = f->h;
    c->part_count = f->part_count;
    uint32_t at = 0;
    for (uint32_t k = 0; k < f->part_count; k++) {
        const struct proto_v3_part *p = &f->parts[k];
        c->parts[k] = *p;
        if (p->field)
            c->fields[k] = *p->field;
        memcpy(c->id + at, p->id, p->count * sizeof *p->id);
        memcpy(c->qx + at, p->qx, p->count * sizeof *p->qx);
        memcpy(c->qy + at, p->qy, p->count * sizeof *p->qy);
        memcpy(c->heading + at, p->heading, p->count);
        memcpy(c->group + at, p->group, p->count);
        at += p->count;
    }
    point(c);
}

static size_t put_varint(uint8_t *p, uint32_t v)
{
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        p[n++] = (uint8_t)(v | 0x80);
    p[n++] = (uint8_t)v;
    return n;
}

/* A key part's inflated body (§12.5): ids, six planes, the field. */
static size_t key_body(const struct proto_v3_part *p, uint8_t *out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < p->count; i++)
        n += put_varint(out + n, p->id[i] - (i ? p->id[i - 1] : 0));
    for (uint32_t i = 0; i < p->count; i++) {
        uint32_t c = p->count;
        out[n + i] = (uint8_t)p->qx[i], out[n + c + i] = (uint8_t)p->qy[i];
        out[n + 2 * c + i] = (uint8_t)(p->qx[i] >> 8),
                        out[n + 3 * c + i] = (uint8_t)(p->qy[i] >> 8);
        out[n + 4 * c + i] = p->heading[i], out[n + 5 * c + i] = p->group[i];
    }
    n += 6 * (size_t)p->count;
    for (uint32_t k = 0; p->field && k < p->field->cells * p->field->cells; k++) {
        n += put_varint(out + n, p->field->count[k]);
        out[n++] = (uint8_t)p->field->vx[k];
        out[n++] = (uint8_t)p->field->vy[k];
    }
    return n;
}

/* Part p as a key whose body is one stored deflate block (RFC 1951
 * §3.2.4), into out: the harness's own encoder, written from §12.5 and
 * sharing nothing with the codec's (and much cheaper than it). Returns
 * its length. */
static size_t put_stored_key(const struct proto_v3_part *p, uint8_t *out)
{
    if (!p->count && !p->field) {
        out[0] = PROTO_V3_PART_EMPTY;
        return 1;
    }
    uint8_t plain[16 * MAX_BOIDS + 7 * PROTO_V3_FIELD_MAX + 16];
    size_t len = key_body(p, plain), n = 0;
    out[n++] = (uint8_t)(PROTO_V3_PART_KEY | (p->field ? PROTO_V3_PART_FIELD : 0));
    n += put_varint(out + n, p->count);
    n += put_varint(out + n, (uint32_t)len + 5);
    n += put_varint(out + n, (uint32_t)len);
    uint8_t stored[5] = {0x01, (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)~len,
                         (uint8_t)(~len >> 8)}; /* BFINAL, BTYPE 00; LEN, NLEN */
    memcpy(out + n, stored, 5);
    memcpy(out + n + 5, plain, len);
    return n + 5 + len;
}

/* c as a frame of keys with stored bodies into c->keys (its header, no
 * obstacles or targets). */
static void put_keys(struct copy *c)
{
    struct proto_v3_header h = c->h;
    h.obstacle_count = h.target_count = 0;
    proto_v3_put_header(c->keys, &h);
    c->keys_len = PROTO_V3_HEADER_SIZE;
    for (uint32_t k = 0; k < c->part_count; k++)
        c->keys_len += put_stored_key(&c->parts[k], c->keys + c->keys_len);
}

/* Keeps `now` (with its key frame) as the newest held frame; the oldest
 * one's slot, if all are in use, is the next `now`. */
static void keep_now(void)
{
    put_keys(now);
    struct copy *spare = NULL;
    for (size_t k = 0; k < PROTO_V3_HISTORY + 1 && !spare; k++) {
        bool used = &slots[k] == now;
        for (size_t j = 0; j < nheld; j++)
            used = used || held[j] == &slots[k];
        spare = used ? NULL : &slots[k];
    }
    if (nheld == PROTO_V3_HISTORY) {
        spare = held[0];
        memmove(held, held + 1, sizeof held[0] * (PROTO_V3_HISTORY - 1));
        nheld--;
    }
    held[nheld++] = now;
    now = spare;
}

static struct proto_v3_tile tile_of(const struct proto_v3_part *p)
{
    return (struct proto_v3_tile){p->count, p->id, p->qx, p->qy, p->heading, p->group, p->field};
}

static bool same_field(const struct proto_v3_field *a, const struct proto_v3_field *b)
{
    if (!a || !b)
        return a == b;
    uint32_t n = a->cells * a->cells;
    return a->cells == b->cells && !memcmp(a->count, b->count, n * sizeof *a->count) &&
           !memcmp(a->vx, b->vx, n) && !memcmp(a->vy, b->vy, n);
}

static bool same_header(const struct proto_v3_header *a, const struct proto_v3_header *b)
{
    uint8_t x[PROTO_V3_HEADER_SIZE], y[PROTO_V3_HEADER_SIZE];
    proto_v3_put_header(x, a);
    proto_v3_put_header(y, b);
    return !memcmp(x, y, sizeof x);
}

/* True if a and b hold the same parts with the same boids and fields. */
static bool same_parts(const struct proto_v3_frame *a, const struct proto_v3_frame *b)
{
    if (a->part_count != b->part_count || a->boid_count != b->boid_count)
        return false;
    for (uint32_t k = 0; k < a->part_count; k++) {
        const struct proto_v3_part *p = &a->parts[k], *q = &b->parts[k];
        uint32_t n = p->count;
        if (p->tx != q->tx || p->ty != q->ty || n != q->count ||
            memcmp(p->id, q->id, n * sizeof *p->id) || memcmp(p->qx, q->qx, n * 2) ||
            memcmp(p->qy, q->qy, n * 2) || memcmp(p->heading, q->heading, n) ||
            memcmp(p->group, q->group, n) || !same_field(p->field, q->field))
            return false;
    }
    return true;
}

/* Encodes part k of c into frame[*at..) with the codec's encoder: a delta
 * on base of frame bc, or (base NULL) a key; with bc given, a part
 * without a base is the harness's stored key (the codec's deflate is the
 * costly part of a run). */
static void put_part(const struct copy *c, uint32_t k, const struct proto_v3_part *base,
                     const struct copy *bc, size_t *at)
{
    if (bc && !base) {
        *at += put_stored_key(&c->parts[k], frame + *at);
        return;
    }
    struct proto_v3_tile t = tile_of(&c->parts[k]), b1 = base ? tile_of(base) : t;
    struct proto_v3_bases b = {.b1 = &b1,
                               .gap1 = base ? (uint8_t)(c->h.seq - bc->h.seq) : 0,
                               .tick = c->h.tick,
                               .tick1 = base ? bc->h.tick : 0};
    ptrdiff_t n = proto_v3_encode_part(enc, &t, base ? &b : NULL, c->h.width, c->h.height,
                                       frame + *at, sizeof frame - *at);
    if (n < 0)
        fuzz_fail("a decoded part did not encode as a %s: %s", base ? "delta" : "key",
                  proto_status_name((int)n));
    *at += (size_t)n;
}

/* The part of base's frame at super-tile (tx, ty), or NULL. */
static const struct proto_v3_part *part_at(const struct copy *base, uint32_t tx, uint32_t ty)
{
    for (uint32_t k = 0; base && k < base->part_count; k++)
        if (base->parts[k].tx == tx && base->parts[k].ty == ty)
            return &base->parts[k];
    return NULL;
}

/* c as a frame in `frame` with its header, no obstacles or targets, each
 * part a delta on base's part of its super-tile where base has one, else
 * a stored key (base NULL: every part a key of the codec's). Returns its
 * length. */
static size_t encode_frame(const struct copy *c, const struct copy *base)
{
    struct proto_v3_header h = c->h;
    h.obstacle_count = h.target_count = 0;
    size_t at = PROTO_V3_HEADER_SIZE;
    for (uint32_t k = 0; k < c->part_count; k++)
        put_part(c, k, part_at(base, c->parts[k].tx, c->parts[k].ty), base, &at);
    proto_v3_put_header(frame, &h);
    return at;
}

/* ref given held frame c again, as keys. */
static void give(const struct copy *c)
{
    const struct proto_v3_frame *got;
    int rc = proto_v3_decode(ref, c->keys, c->keys_len, &got);
    if (rc)
        fuzz_fail("held frame %u did not decode again as keys: %s", c->h.seq,
                  proto_status_name(rc));
}

/* ref made a fresh decoder that holds what the harness saw accepted. */
static void reseed(void)
{
    proto_v3_decoder_forget(ref);
    for (size_t k = 0; k < nheld; k++)
        give(held[k]);
}

static void check_accepted(const struct proto_v3_frame *f, const struct proto_v3_shape *sh)
{
    const struct proto_v3_header *h = &f->h;
    uint32_t gc = proto_v3_grid_at(h->cols, h->shift), gr = proto_v3_grid_at(h->rows, h->shift);
    uint32_t hash = 0, boids = 0;
    if (f->part_count != (uint32_t)h->rect_cols * h->rect_rows || f->part_count != sh->parts ||
        f->boid_count != sh->boids || sh->keys + sh->deltas > sh->parts)
        fuzz_fail("accepted %u parts, %u boids; the scan saw %u, %llu", f->part_count,
                  f->boid_count, sh->parts, (unsigned long long)sh->boids);
    for (uint32_t k = 0; k < f->part_count; k++) {
        const struct proto_v3_part *p = &f->parts[k];
        if (p->tx != (h->rect_x + k % h->rect_cols) % gc ||
            p->ty != (h->rect_y + k / h->rect_cols) % gr)
            fuzz_fail("part %u at super-tile %u,%u, not in rect order", k, p->tx, p->ty);
        for (uint32_t i = 0; i < p->count; i++)
            if (p->id[i] == 0 || (i > 0 && p->id[i] <= p->id[i - 1]))
                fuzz_fail("part %u: ids not ascending at boid %u", k, i);
        if (p->field && p->field->cells != CELLS)
            fuzz_fail("part %u: a field of %u cells", k, p->field->cells);
        struct proto_v3_tile t = tile_of(p);
        hash += proto_v3_tile_hash(&t);
        boids += p->count;
    }
    if (boids != f->boid_count || hash != h->frame_hash)
        fuzz_fail("accepted a frame whose parts do not add up to its boids and hash");
}

/* The scan against the decoder's answer rc (and frame f if accepted). */
static void check_scan(int scan_rc, int rc)
{
    bool header = scan_rc == PROTO_E_BAD_MAGIC || scan_rc == PROTO_E_BAD_VERSION ||
                  scan_rc == PROTO_E_BAD_TYPE;
    if ((scan_rc && !rc) || (header && rc != scan_rc))
        fuzz_fail("the scan said %s, the decoder %s", proto_status_name(scan_rc),
                  proto_status_name(rc));
    if (!scan_rc && (rc == PROTO_E_BAD_MAGIC || rc == PROTO_E_BAD_VERSION ||
                     rc == PROTO_E_BAD_TYPE || rc == PROTO_E_BAD_LENGTH))
        fuzz_fail("the scan accepted what the decoder refused with %s", proto_status_name(rc));
}

/* The accepted frame encoded again on the previous accepted one decodes
 * to the same boids. ref holds that one if it was reseeded (then it has
 * decoded the frame since), else it is given it now. */
static void check_reencodes(const struct proto_v3_frame *f, bool reseeded)
{
    const struct copy *p = nheld ? held[nheld - 1] : NULL;
    uint32_t gap = p ? now->h.seq - p->h.seq : 0;
    bool on_p = p && gap >= 1 && gap <= PROTO_V3_MAX_GAP && p->h.shift == now->h.shift &&
                p->h.sample == now->h.sample && p->h.cols == now->h.cols &&
                p->h.rows == now->h.rows;
    if (on_p && !reseeded)
        give(p);
    size_t n = encode_frame(now, on_p ? p : NULL);
    const struct proto_v3_frame *got;
    int rc = proto_v3_decode(ref, frame, n, &got);
    if (rc || !same_parts(got, f))
        fuzz_fail("an accepted frame encoded again (%s) did not decode to the same boids: %s",
                  on_p ? "deltas" : "keys", proto_status_name(rc));
}

static void one_frame(const uint8_t *data, size_t size)
{
    struct proto_v3_header sh_h;
    struct proto_v3_shape sh;
    const struct proto_v3_frame *out = NULL, *out_ref = NULL;
    int scan_rc = proto_v3_scan(data, size, &sh_h, &sh);
    int rc = proto_v3_decode(dec, data, size, &out);
    if (rc && !known_refusal(rc))
        fuzz_fail("refused with %s", proto_status_name(rc));
    check_scan(scan_rc, rc);
    /* A frame without a delta part does not depend on what is held. */
    bool bases = scan_rc || sh.deltas;
    if (bases)
        reseed();
    else
        proto_v3_decoder_forget(ref);
    int rc_ref = proto_v3_decode(ref, data, size, &out_ref);
    if (rc != rc_ref || (!rc && (!same_header(&out->h, &out_ref->h) || !same_parts(out, out_ref))))
        fuzz_fail("the decoder said %s, a fresh one given the held frames %s",
                  proto_status_name(rc), proto_status_name(rc_ref));
    if (rc)
        return;
    check_accepted(out, &sh);
    copy_frame(now, out);
    check_reencodes(out, bases);
    keep_now();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proto_v3_decoder_forget(dec);
    nheld = 0;
    fuzz_each_frame(data, size, one_frame);
    return 0;
}
