/*
 * proto_v2.c — snapshot frames of version 2 (layout in PROTOCOL.md §11):
 * what encoder and decoder share (header, prediction, hash; the sections
 * of both versions are in proto_sections.c),
 * the encoder, and the frame plan for many clients. The decoder is in
 * proto_v2_decode.c.
 *
 * The prediction and the residual coding are written once, as small
 * inline functions in proto_v2_impl.h, so encoder and decoder cannot
 * drift apart.
 */
#include "proto_v2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto_deflate.h"
#include "bytes.h"
#include "proto_sections.h"
#include "proto_v2_impl.h"

/* ---- state hash (§11.6) ------------------------------------------------- */

uint64_t proto_v2_state_hash(const struct proto_v2_state *s)
{
    uint32_t lo = 0, hi = 1; /* the two seeds */
    for (uint32_t i = 0; i < s->count; i++) {
        uint32_t w = pv2_murmur_mix((uint32_t)s->qx[i] | (uint32_t)s->qy[i] << 16);
        uint32_t v = pv2_murmur_mix((uint32_t)s->heading[i] | (uint32_t)s->group[i] << 8);
        lo = pv2_murmur_round(pv2_murmur_round(lo, w), v);
        hi = pv2_murmur_round(pv2_murmur_round(hi, w), v);
    }
    uint32_t len = s->count * 8u; /* bytes hashed, mod 2^32 as MurmurHash3 takes it */
    return (uint64_t)pv2_murmur_final(hi, len) << 32 | pv2_murmur_final(lo, len);
}

void proto_v2_state_seal(struct proto_v2_state *s)
{
    s->state_hash = proto_v2_state_hash(s);
}

/* ---- heading of a direction (§11.4) ------------------------------------- */

/* floor(atan(t / 256) * 32768 / pi + 0.5): angles of the first octant in
 * 2^-16 turns. No entry is within 0.003 of a rounding tie, so any libm
 * computes the same table (test_proto_v2 checks it against atan()). */
static const uint16_t octant_turns[257] = {
    0,    41,   81,   122,  163,  204,  244,  285,  326,  367,  407,  448,  489,  529,  570,  610,
    651,  692,  732,  773,  813,  854,  894,  935,  975,  1015, 1056, 1096, 1136, 1177, 1217, 1257,
    1297, 1337, 1377, 1417, 1457, 1497, 1537, 1577, 1617, 1656, 1696, 1736, 1775, 1815, 1854, 1894,
    1933, 1973, 2012, 2051, 2090, 2129, 2168, 2207, 2246, 2285, 2324, 2363, 2401, 2440, 2478, 2517,
    2555, 2594, 2632, 2670, 2708, 2746, 2784, 2822, 2860, 2897, 2935, 2973, 3010, 3047, 3085, 3122,
    3159, 3196, 3233, 3270, 3307, 3344, 3380, 3417, 3453, 3490, 3526, 3562, 3599, 3635, 3670, 3706,
    3742, 3778, 3813, 3849, 3884, 3920, 3955, 3990, 4025, 4060, 4095, 4129, 4164, 4199, 4233, 4267,
    4302, 4336, 4370, 4404, 4438, 4471, 4505, 4539, 4572, 4605, 4639, 4672, 4705, 4738, 4771, 4803,
    4836, 4869, 4901, 4933, 4966, 4998, 5030, 5062, 5094, 5125, 5157, 5188, 5220, 5251, 5282, 5313,
    5344, 5375, 5406, 5437, 5467, 5498, 5528, 5559, 5589, 5619, 5649, 5679, 5708, 5738, 5768, 5797,
    5826, 5856, 5885, 5914, 5943, 5972, 6000, 6029, 6058, 6086, 6114, 6142, 6171, 6199, 6227, 6254,
    6282, 6310, 6337, 6365, 6392, 6419, 6446, 6473, 6500, 6527, 6554, 6580, 6607, 6633, 6660, 6686,
    6712, 6738, 6764, 6790, 6815, 6841, 6867, 6892, 6917, 6943, 6968, 6993, 7018, 7043, 7068, 7092,
    7117, 7141, 7166, 7190, 7214, 7238, 7262, 7286, 7310, 7334, 7358, 7381, 7405, 7428, 7451, 7475,
    7498, 7521, 7544, 7566, 7589, 7612, 7635, 7657, 7679, 7702, 7724, 7746, 7768, 7790, 7812, 7834,
    7856, 7877, 7899, 7920, 7942, 7963, 7984, 8005, 8026, 8047, 8068, 8089, 8110, 8131, 8151, 8172,
    8192,
};

uint16_t pv2_octant_turns(unsigned t)
{
    return octant_turns[t];
}

uint8_t proto_v2_heading_of(int32_t x, int32_t y)
{
    uint32_t a = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
    uint32_t b = y < 0 ? 0u - (uint32_t)y : (uint32_t)y;
    uint32_t turn; /* 2^-16 turns, counter-clockwise from +x */
    if (a == 0 && b == 0)
        return 0;
    if (a >= b)
        turn = octant_turns[(256u * b + a / 2) / a];
    else
        turn = 16384u - octant_turns[(256u * a + b / 2) / b];
    if (x < 0)
        turn = 32768u - turn;
    if (y < 0)
        turn = 65536u - turn;
    return (uint8_t)((turn + 128u) >> 8);
}

void pv2_aspect(float width, float height, int32_t *ax, int32_t *ay)
{
    double m = width > height ? (double)width : (double)height;
    double x = floor(256.0 * (double)width / m + 0.5);
    double y = floor(256.0 * (double)height / m + 0.5);
    *ax = x < 1.0 ? 1 : (int32_t)x;
    *ay = y < 1.0 ? 1 : (int32_t)y;
}

/* ---- header and sections (§11.2, §11.3) ---------------------------------- */

size_t pv2_packed_bound(size_t plain)
{
    return proto_deflate_bound(plain, PV2_PLANES + 1);
}

size_t proto_v2_frame_max_size(uint32_t boids, uint32_t runs, uint32_t obstacles, uint32_t targets)
{
    uint64_t plain = (uint64_t)boids * PV2_DELTA_MAX_PER_BOID;
    uint64_t total = PROTO_V2_HEADER_SIZE + proto_sections_size(runs, obstacles, targets) +
                     pv2_packed_bound((size_t)plain);
    return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

void pv2_put_header(uint8_t *p, const struct proto_v2_header *h)
{
    memset(p, 0, PROTO_V2_HEADER_SIZE);
    p[PV2_OFF_MAGIC] = 'F';
    p[PV2_OFF_MAGIC + 1] = 'K';
    p[PV2_OFF_VERSION] = PROTO_V2_VERSION;
    p[PV2_OFF_KIND] = h->kind;
    p[PV2_OFF_FLAGS] = h->flags;
    bytes_le_put(p + PV2_OFF_RUNS, h->run_count, 2);
    bytes_le_put(p + PV2_OFF_TICK, h->tick, 8);
    bytes_le_put(p + PV2_OFF_TIME, h->server_time_us, 8);
    bytes_le_put_f32(p + PV2_OFF_WIDTH, h->width);
    bytes_le_put_f32(p + PV2_OFF_HEIGHT, h->height);
    bytes_le_put(p + PV2_OFF_EPOCH, h->epoch, 4);
    bytes_le_put(p + PV2_OFF_BOIDS, h->boid_count, 4);
    bytes_le_put(p + PV2_OFF_OBSTACLES, h->obstacle_count, 2);
    bytes_le_put(p + PV2_OFF_TARGETS, h->target_count, 2);
    bytes_le_put(p + PV2_OFF_SEQ, h->seq, 4);
    p[PV2_OFF_GAP1] = h->gap1;
    p[PV2_OFF_GAP0] = h->gap0;
    bytes_le_put(p + PV2_OFF_PACKED, h->packed_len, 4);
    bytes_le_put(p + PV2_OFF_PLAIN, h->plain_len, 4);
    bytes_le_put(p + PV2_OFF_SIM_HASH, h->sim_hash, 8);
    bytes_le_put(p + PV2_OFF_STATE_HASH, h->state_hash, 8);
}

/* Writes runs, obstacles and targets of s at p. */
static void put_sections(uint8_t *p, const struct proto_v2_state *s)
{
    p = proto_sections_put_runs(p, s->group, s->count);
    p = proto_sections_put_obstacles(p, s->obstacles, s->obstacle_count);
    proto_sections_put_targets(p, s->targets, s->target_count);
}

/* Counts the group runs of s and checks every rule the format puts on it. */
static int plan_state(const struct proto_v2_state *s, uint32_t max_boids, uint32_t *runs)
{
    if (!(s->width > 0.0f) || !isfinite(s->width) || !(s->height > 0.0f) || !isfinite(s->height) ||
        (s->flags & ~PV2_KNOWN_FLAGS) || s->count > max_boids)
        return PROTO_E_UNENCODABLE;
    return proto_sections_check(s->group, s->count, s->obstacles, s->obstacle_count, s->targets,
                                s->target_count, runs);
}

/* Base gaps of a delta, or PROTO_E_UNENCODABLE if the bases do not fit s. */
static int base_gaps(const struct proto_v2_state *s, const struct proto_v2_state *b1,
                     const struct proto_v2_state *b0, uint8_t *gap1, uint8_t *gap0)
{
    *gap1 = *gap0 = 0;
    if (!b1)
        return 0;
    uint32_t g1 = s->seq - b1->seq, g0 = b0 ? b1->seq - b0->seq : 0;
    if (g1 < 1 || g1 > PROTO_V2_MAX_GAP || (b0 && (g0 < 1 || g0 > PROTO_V2_MAX_GAP)))
        return PROTO_E_UNENCODABLE;
    if (b1->epoch != s->epoch || b1->count != s->count ||
        (b0 && (b0->epoch != s->epoch || b0->count != s->count)))
        return PROTO_E_UNENCODABLE;
    *gap1 = (uint8_t)g1;
    *gap0 = (uint8_t)g0;
    return 0;
}

/* ---- encoder ------------------------------------------------------------ */

/* Planes: X0 X1 Y0 Y1 H0 H1 of a delta (or the five of a key frame), each
 * max_boids bytes, then room for every exception. */
enum { PLANES = PV2_PLANES };

struct proto_v2_encoder {
    uint32_t max_boids;
    uint8_t *plane[PLANES];
    uint8_t *exceptions; /* 4 bytes per boid at most */
    size_t plane_len[PLANES], exception_len;
    size_t plain_len; /* plane and exception bytes of the frame being written */
};

struct proto_v2_encoder *proto_v2_encoder_create(uint32_t max_boids, const char **err)
{
    const char *why = NULL;
    struct proto_v2_encoder *e = NULL;
    if (max_boids < 1 || max_boids > PV2_MAX_BOIDS)
        why = "max_boids must be in [1, 4194304]";
    else if (!(e = calloc(1, sizeof *e)) ||
             !(e->plane[0] = malloc((size_t)max_boids * (PLANES + 4))))
        why = "out of memory";
    if (why) {
        free(e);
        if (err)
            *err = why;
        return NULL;
    }
    e->max_boids = max_boids;
    for (int k = 1; k < PLANES; k++)
        e->plane[k] = e->plane[k - 1] + max_boids;
    e->exceptions = e->plane[PLANES - 1] + max_boids;
    return e;
}

void proto_v2_encoder_destroy(struct proto_v2_encoder *e)
{
    if (!e)
        return;
    free(e->plane[0]);
    free(e);
}

/* Key frame planes: x low, y low, x high, y high, heading (§11.5). */
static void fill_key_planes(struct proto_v2_encoder *e, const struct proto_v2_state *s)
{
    uint8_t *xl = e->plane[0], *yl = e->plane[1], *xh = e->plane[2], *yh = e->plane[3];
    for (uint32_t i = 0; i < s->count; i++) {
        xl[i] = (uint8_t)s->qx[i];
        yl[i] = (uint8_t)s->qy[i];
        xh[i] = (uint8_t)(s->qx[i] >> 8);
        yh[i] = (uint8_t)(s->qy[i] >> 8);
    }
    memcpy(e->plane[4], s->heading, s->count);
    for (int k = 0; k < 5; k++)
        e->plane_len[k] = s->count;
    e->plane_len[5] = 0;
    e->exception_len = 0;
    e->plain_len = (size_t)s->count * PV2_KEY_PER_BOID;
}

/* Appends a position residual's zigzag code to a plane, escaping codes of
 * 255 and more into the exception list (§11.5). */
PV2_INLINE void put_residual(uint8_t *plane, size_t at, uint16_t zz, uint8_t *exc, size_t *nexc)
{
    if (zz < PV2_ESCAPE) {
        plane[at] = (uint8_t)zz;
        return;
    }
    plane[at] = PV2_ESCAPE;
    exc[(*nexc)++] = (uint8_t)zz;
    exc[(*nexc)++] = (uint8_t)(zz >> 8);
}

/* One boid of a delta: its residuals appended to the planes of its context. */
PV2_INLINE void delta_boid(struct proto_v2_encoder *e, const struct proto_v2_state *s,
                           const struct pv2_bases *b, enum pv2_mode mode, uint32_t i)
{
    struct pv2_guess g = pv2_guess_of(b, mode, i);
    size_t at = e->plane_len[g.ctx];
    put_residual(e->plane[g.ctx], at, pv2_zigzag16((uint16_t)(s->qx[i] - g.x)), e->exceptions,
                 &e->exception_len);
    put_residual(e->plane[2 + g.ctx], at, pv2_zigzag16((uint16_t)(s->qy[i] - g.y)), e->exceptions,
                 &e->exception_len);
    uint8_t ph = pv2_predict_heading(b, i, s->qx[i], s->qy[i]);
    e->plane[4 + g.ctx][at] = pv2_zigzag8((uint8_t)(s->heading[i] - ph));
    e->plane_len[g.ctx] = at + 1;
}

/* Delta planes: X0 X1 Y0 Y1 H0 H1 (field, context) and the exceptions. */
static void fill_delta_planes(struct proto_v2_encoder *e, const struct proto_v2_state *s,
                              const struct pv2_bases *b)
{
    enum pv2_mode mode = pv2_mode_of(b);
    memset(e->plane_len, 0, sizeof e->plane_len);
    e->exception_len = 0;
    for (uint32_t i = 0; i < s->count; i++) {
        if (mode == PV2_EVEN) /* the same loop three times, one per mode */
            delta_boid(e, s, b, PV2_EVEN, i);
        else if (mode == PV2_ONE_BASE)
            delta_boid(e, s, b, PV2_ONE_BASE, i);
        else
            delta_boid(e, s, b, PV2_UNEVEN, i);
    }
    e->plane_len[2] = e->plane_len[4] = e->plane_len[0];
    e->plane_len[3] = e->plane_len[5] = e->plane_len[1];
    e->plain_len = (size_t)s->count * PV2_DELTA_MIN_PER_BOID + e->exception_len;
}

/*
 * Deflates the planes and the exceptions into out[0..cap) as one raw
 * stream. Planes go into one deflate block (one Huffman code) until it
 * holds PV2_BLOCK_MIN bytes: a plane that big gets a code of its own,
 * smaller ones share, since each code costs its description. Returns the
 * packed length or PROTO_E_NOSPACE.
 */
static ptrdiff_t deflate_planes(const struct proto_v2_encoder *e, uint8_t *out, size_t cap)
{
    struct proto_deflate d;
    struct proto_deflate_span span[PLANES + 1];
    size_t nspan = 0, in_block = 0;
    proto_deflate_begin(&d, out, cap);
    for (int k = 0; k <= PLANES; k++) {
        size_t n = k < PLANES ? e->plane_len[k] : e->exception_len;
        span[nspan++] = (struct proto_deflate_span){k < PLANES ? e->plane[k] : e->exceptions, n};
        in_block += n;
        if (k == PLANES || in_block >= PV2_BLOCK_MIN) {
            proto_deflate_block(&d, span, nspan, k == PLANES);
            nspan = in_block = 0;
        }
    }
    return proto_deflate_end(&d);
}

/* The header of a frame of s (gaps and kind already set in *h). */
static void header_of(const struct proto_v2_state *s, uint32_t runs, size_t packed, size_t plain,
                      struct proto_v2_header *h)
{
    h->flags = s->flags;
    h->run_count = (uint16_t)runs;
    h->obstacle_count = (uint16_t)s->obstacle_count;
    h->target_count = (uint16_t)s->target_count;
    h->seq = s->seq;
    h->epoch = s->epoch;
    h->boid_count = s->count;
    h->packed_len = (uint32_t)packed;
    h->plain_len = (uint32_t)plain;
    h->tick = s->tick;
    h->server_time_us = s->server_time_us;
    h->sim_hash = s->sim_hash;
    h->state_hash = s->state_hash;
    h->width = s->width;
    h->height = s->height;
}

ptrdiff_t proto_v2_encode(struct proto_v2_encoder *e, const struct proto_v2_state *s,
                          const struct proto_v2_state *base1, const struct proto_v2_state *base0,
                          uint8_t *buf, size_t cap)
{
    struct proto_v2_header h = {.kind = base1 ? PROTO_V2_KIND_DELTA : PROTO_V2_KIND_KEY};
    uint32_t runs;
    int rc = plan_state(s, e->max_boids, &runs);
    if (rc == 0 && !base1 && base0)
        rc = PROTO_E_UNENCODABLE;
    if (rc == 0)
        rc = base_gaps(s, base1, base0, &h.gap1, &h.gap0);
    if (rc)
        return rc;
    size_t head = PROTO_V2_HEADER_SIZE +
                  (size_t)proto_sections_size(runs, s->obstacle_count, s->target_count);
    if (!buf || cap < head)
        return PROTO_E_NOSPACE;
    if (base1) {
        struct pv2_bases b;
        pv2_bases_init(&b, s->width, s->height, base1, base0, h.gap1, h.gap0);
        fill_delta_planes(e, s, &b);
    } else {
        fill_key_planes(e, s);
    }
    ptrdiff_t packed = deflate_planes(e, buf + head, cap - head);
    if (packed < 0)
        return packed;
    header_of(s, runs, (size_t)packed, e->plain_len, &h);
    pv2_put_header(buf, &h);
    put_sections(buf + PROTO_V2_HEADER_SIZE, s);
    return (ptrdiff_t)head + packed;
}

/* ---- the frames of a snapshot and who gets which ------------------------ */

/* Deltas by preference (proto_v2_plan()): the nearer the newer base and
 * the nearer the older one, the smaller the residuals; one base predicts
 * no motion, so those come last. */
static const struct proto_v2_plan_frame plan_order[PROTO_V2_PLAN_MAX - 1] = {
    {1, 1}, {2, 2}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 3}, {2, 4}, {3, 1}, {3, 2},
    {3, 3}, {3, 4}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {1, 0}, {2, 0}, {3, 0}, {4, 0}};

void proto_v2_plan(uint32_t seq, uint32_t run, unsigned max_deltas, struct proto_v2_plan *out)
{
    out->seq = seq;
    out->count = 1;
    out->frame[0] = (struct proto_v2_plan_frame){0, 0};
    for (unsigned k = 0; k < PROTO_V2_PLAN_MAX - 1 && out->count <= max_deltas; k++)
        if (run >= (uint32_t)plan_order[k].gap1 + plan_order[k].gap0)
            out->frame[out->count++] = plan_order[k];
}

static bool was_sent(uint32_t seq, const uint32_t *sent, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (sent[i] == seq)
            return true;
    return false;
}

unsigned proto_v2_pick(const struct proto_v2_plan *p, const uint32_t *sent, size_t n)
{
    if (n > PROTO_V2_HISTORY)
        n = PROTO_V2_HISTORY;
    for (unsigned k = 1; k < p->count; k++) {
        uint32_t b1 = p->seq - p->frame[k].gap1, b0 = b1 - p->frame[k].gap0;
        if (was_sent(b1, sent, n) && (p->frame[k].gap0 == 0 || was_sent(b0, sent, n)))
            return k;
    }
    return 0;
}
