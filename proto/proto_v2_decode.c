/*
 * proto_v2_decode.c — the version 2 frame decoder (PROTOCOL.md §11.7):
 * header checks, sections, bases, bounded inflate, reconstruction, hash.
 *
 * A decoder owns PROTO_V2_HISTORY + 1 state slots: the states of the last
 * PROTO_V2_HISTORY frames it decoded (the bases later deltas may name)
 * and one free slot that the next frame is decoded into. Only a frame
 * that passes every check takes its slot into the history, evicting the
 * oldest state, so a refused frame changes nothing.
 */
#include "proto_v2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bytes.h"
#include "proto_sections.h"
#include "proto_v2_impl.h"

#define SLOTS (PROTO_V2_HISTORY + 1)

struct slot {
    struct proto_v2_state st;
    bool held;    /* a base for later frames */
    uint64_t age; /* decode count when it was stored: larger is newer */
};

struct proto_v2_decoder {
    uint32_t max_boids, max_obstacles;
    uint64_t clock;
    z_stream z;
    uint8_t *plain; /* the inflated body: PV2_DELTA_MAX_PER_BOID * max_boids + 1 */
    struct slot slot[SLOTS];
    void *mem; /* every array above, one allocation */
};

/* ---- header ------------------------------------------------------------- */

static void read_header(const uint8_t *p, struct proto_v2_header *h)
{
    h->kind = p[PV2_OFF_KIND];
    h->flags = p[PV2_OFF_FLAGS];
    h->run_count = (uint16_t)bytes_le_get(p + PV2_OFF_RUNS, 2);
    h->tick = bytes_le_get(p + PV2_OFF_TICK, 8);
    h->server_time_us = bytes_le_get(p + PV2_OFF_TIME, 8);
    h->width = bytes_le_get_f32(p + PV2_OFF_WIDTH);
    h->height = bytes_le_get_f32(p + PV2_OFF_HEIGHT);
    h->epoch = (uint32_t)bytes_le_get(p + PV2_OFF_EPOCH, 4);
    h->boid_count = (uint32_t)bytes_le_get(p + PV2_OFF_BOIDS, 4);
    h->obstacle_count = (uint16_t)bytes_le_get(p + PV2_OFF_OBSTACLES, 2);
    h->target_count = (uint16_t)bytes_le_get(p + PV2_OFF_TARGETS, 2);
    h->seq = (uint32_t)bytes_le_get(p + PV2_OFF_SEQ, 4);
    h->gap1 = p[PV2_OFF_GAP1];
    h->gap0 = p[PV2_OFF_GAP0];
    h->packed_len = (uint32_t)bytes_le_get(p + PV2_OFF_PACKED, 4);
    h->plain_len = (uint32_t)bytes_le_get(p + PV2_OFF_PLAIN, 4);
    h->sim_hash = bytes_le_get(p + PV2_OFF_SIM_HASH, 8);
    h->state_hash = bytes_le_get(p + PV2_OFF_STATE_HASH, 8);
}

/* The body sizes the kind allows (§11.7 step 6). */
static bool body_sizes_ok(const struct proto_v2_header *h)
{
    uint64_t n = h->boid_count, plain = h->plain_len;
    if (plain > (uint64_t)h->packed_len * PV2_MAX_RATIO)
        return false;
    if (h->kind == PROTO_V2_KIND_KEY)
        return h->gap1 == 0 && h->gap0 == 0 && plain == n * PV2_KEY_PER_BOID;
    return h->gap1 >= 1 && plain >= n * PV2_DELTA_MIN_PER_BOID &&
           plain <= n * PV2_DELTA_MAX_PER_BOID && (plain - n * PV2_DELTA_MIN_PER_BOID) % 2 == 0;
}

static bool header_values_ok(const uint8_t *p, const struct proto_v2_header *h)
{
    return (h->flags & ~PV2_KNOWN_FLAGS) == 0 && p[5] == 0 && p[50] == 0 && p[51] == 0 &&
           bytes_le_get(p + 60, 4) == 0 && h->width > 0.0f && isfinite(h->width) &&
           h->height > 0.0f && isfinite(h->height) && h->run_count <= PROTO_SNAPSHOT_MAX_RUNS &&
           h->target_count <= PROTO_SNAPSHOT_MAX_TARGETS && body_sizes_ok(h);
}

struct proto_snapshot_header proto_v2_common_header(const struct proto_v2_header *h)
{
    return (struct proto_snapshot_header){.version = PROTO_V2_VERSION,
                                          .type = h->kind,
                                          .flags = h->flags,
                                          .tick = h->tick,
                                          .server_time_us = h->server_time_us,
                                          .width = h->width,
                                          .height = h->height,
                                          .epoch = h->epoch,
                                          .boid_count = h->boid_count,
                                          .run_count = h->run_count,
                                          .obstacle_count = h->obstacle_count,
                                          .target_count = h->target_count};
}

int proto_v2_decode_header(const uint8_t *buf, size_t len, struct proto_v2_header *h)
{
    if (len < 4)
        return PROTO_E_TRUNCATED;
    if (buf[PV2_OFF_MAGIC] != 'F' || buf[PV2_OFF_MAGIC + 1] != 'K')
        return PROTO_E_BAD_MAGIC;
    if (buf[PV2_OFF_VERSION] != PROTO_V2_VERSION)
        return PROTO_E_BAD_VERSION;
    if (buf[PV2_OFF_KIND] != PROTO_V2_KIND_KEY && buf[PV2_OFF_KIND] != PROTO_V2_KIND_DELTA)
        return PROTO_E_BAD_TYPE;
    if (len < PROTO_V2_HEADER_SIZE)
        return PROTO_E_TRUNCATED;
    read_header(buf, h);
    if (!header_values_ok(buf, h))
        return PROTO_E_BAD_VALUE;
    /* In 64 bits: hostile counts must not wrap a 32-bit size_t. */
    uint64_t want = PROTO_V2_HEADER_SIZE + (uint64_t)h->packed_len +
                    proto_sections_size(h->run_count, h->obstacle_count, h->target_count);
    if (len < want)
        return PROTO_E_TRUNCATED;
    return len > want ? PROTO_E_BAD_LENGTH : 0;
}

/* ---- decoder object ----------------------------------------------------- */

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* Bytes of one slot's arrays, each rounded to 16 for alignment. */
static size_t slot_bytes(uint32_t boids, uint32_t obstacles)
{
    return round16(obstacles * sizeof(struct proto_obstacle)) +
           round16(PROTO_SNAPSHOT_MAX_TARGETS * sizeof(struct proto_target)) +
           2 * round16(boids * sizeof(uint16_t)) + 2 * round16(boids);
}

static uint8_t *carve_slot(struct proto_v2_state *st, uint8_t *p, uint32_t boids,
                           uint32_t obstacles)
{
    st->obstacles = (struct proto_obstacle *)(void *)p;
    p += round16(obstacles * sizeof(struct proto_obstacle));
    st->targets = (struct proto_target *)(void *)p;
    p += round16(PROTO_SNAPSHOT_MAX_TARGETS * sizeof(struct proto_target));
    st->qx = (uint16_t *)(void *)p;
    p += round16(boids * sizeof(uint16_t));
    st->qy = (uint16_t *)(void *)p;
    p += round16(boids * sizeof(uint16_t));
    st->heading = p;
    p += round16(boids);
    st->group = p;
    return p + round16(boids);
}

struct proto_v2_decoder *proto_v2_decoder_create(uint32_t max_boids, uint32_t max_obstacles,
                                                 const char **err)
{
    const char *why = NULL;
    struct proto_v2_decoder *d = NULL;
    size_t plain = (size_t)max_boids * PV2_DELTA_MAX_PER_BOID + 1;
    if (max_boids > PV2_MAX_BOIDS || max_obstacles > PROTO_SNAPSHOT_MAX_OBSTACLES)
        why = "max_boids must be at most 4194304 and max_obstacles at most 65535";
    else if (!(d = calloc(1, sizeof *d)) ||
             !(d->mem = malloc(SLOTS * slot_bytes(max_boids, max_obstacles) + round16(plain))))
        why = "out of memory";
    else if (inflateInit2(&d->z, -15) != Z_OK)
        why = "zlib: inflateInit2 failed";
    if (why) {
        if (d)
            free(d->mem);
        free(d);
        if (err)
            *err = why;
        return NULL;
    }
    d->max_boids = max_boids;
    d->max_obstacles = max_obstacles;
    uint8_t *p = d->mem;
    for (int k = 0; k < SLOTS; k++)
        p = carve_slot(&d->slot[k].st, p, max_boids, max_obstacles);
    d->plain = p;
    return d;
}

void proto_v2_decoder_destroy(struct proto_v2_decoder *d)
{
    if (!d)
        return;
    inflateEnd(&d->z);
    free(d->mem);
    free(d);
}

void proto_v2_decoder_forget(struct proto_v2_decoder *d)
{
    for (int k = 0; k < SLOTS; k++)
        d->slot[k].held = false;
}

/* The newest held state of sequence number seq, or NULL. */
static const struct proto_v2_state *find_base(const struct proto_v2_decoder *d, uint32_t seq)
{
    const struct slot *best = NULL;
    for (int k = 0; k < SLOTS; k++) {
        const struct slot *s = &d->slot[k];
        if (s->held && s->st.seq == seq && (!best || s->age > best->age))
            best = s;
    }
    return best ? &best->st : NULL;
}

bool proto_v2_decoder_has(const struct proto_v2_decoder *d, uint32_t seq)
{
    return find_base(d, seq) != NULL;
}

/* A slot that holds no base; there is always one (SLOTS > HISTORY). */
static struct slot *free_slot(struct proto_v2_decoder *d)
{
    for (int k = 0; k < SLOTS; k++)
        if (!d->slot[k].held)
            return &d->slot[k];
    return &d->slot[0];
}

/* Keeps s as a base and drops the oldest beyond PROTO_V2_HISTORY. */
static void keep(struct proto_v2_decoder *d, struct slot *s)
{
    s->held = true;
    s->age = ++d->clock;
    int held = 0, oldest = -1;
    for (int k = 0; k < SLOTS; k++) {
        if (!d->slot[k].held)
            continue;
        held++;
        if (oldest < 0 || d->slot[k].age < d->slot[oldest].age)
            oldest = k;
    }
    if (held > PROTO_V2_HISTORY)
        d->slot[oldest].held = false;
}

/* ---- sections ----------------------------------------------------------- */

/* Copies the header into st and reads the sections; returns the body. */
static const uint8_t *read_sections(const uint8_t *buf, const struct proto_v2_header *h,
                                    struct proto_v2_state *st, int *rc)
{
    st->seq = h->seq;
    st->tick = h->tick;
    st->server_time_us = h->server_time_us;
    st->sim_hash = h->sim_hash;
    st->state_hash = h->state_hash;
    st->width = h->width;
    st->height = h->height;
    st->epoch = h->epoch;
    st->flags = h->flags;
    st->count = h->boid_count;
    st->obstacle_count = h->obstacle_count;
    st->target_count = h->target_count;
    const uint8_t *runs = buf + PROTO_V2_HEADER_SIZE;
    const uint8_t *obstacles = runs + (size_t)h->run_count * PROTO_SNAPSHOT_RUN_SIZE;
    const uint8_t *targets = obstacles + (size_t)h->obstacle_count * PROTO_SNAPSHOT_OBSTACLE_SIZE;
    *rc = proto_sections_get_runs(runs, h->run_count, h->boid_count, NULL, st->group);
    if (*rc == 0)
        *rc = proto_sections_get_obstacles(obstacles, h->obstacle_count, st->obstacles);
    if (*rc == 0)
        *rc = proto_sections_get_targets(targets, h->target_count, st->targets);
    return targets + (size_t)h->target_count * PROTO_SNAPSHOT_TARGET_SIZE;
}

/* ---- body --------------------------------------------------------------- */

/* Inflates exactly packed_len bytes into exactly plain_len bytes, never
 * writing past plain_len + 1 (the spare byte tells "more" from "exact"). */
static int inflate_body(struct proto_v2_decoder *d, const uint8_t *body,
                        const struct proto_v2_header *h)
{
    z_stream *z = &d->z;
    if (inflateReset(z) != Z_OK)
        return PROTO_E_INTERNAL;
    z->next_in = (Bytef *)(uintptr_t)body; /* zlib's API is not const; it only reads */
    z->avail_in = h->packed_len;
    z->next_out = d->plain;
    z->avail_out = h->plain_len + 1u;
    int rc = inflate(z, Z_FINISH);
    if (rc != Z_STREAM_END || z->avail_in != 0 || z->total_out != h->plain_len)
        return PROTO_E_BAD_BODY;
    return 0;
}

static void unpack_key(const uint8_t *plain, struct proto_v2_state *st)
{
    uint32_t n = st->count;
    const uint8_t *xl = plain, *yl = plain + n, *xh = plain + 2 * (size_t)n,
                  *yh = plain + 3 * (size_t)n;
    for (uint32_t i = 0; i < n; i++) {
        st->qx[i] = (uint16_t)(xl[i] | xh[i] << 8);
        st->qy[i] = (uint16_t)(yl[i] | yh[i] << 8);
    }
    memcpy(st->heading, plain + 4 * (size_t)n, n);
}

/* The exception cursor of a delta body: codes of 255 and more, in order. */
struct exceptions {
    const uint8_t *at;
    size_t left;
};

/* A position code from its plane byte; 0 with *rc set if inconsistent. */
PV2_INLINE uint16_t residual_code(uint8_t byte, struct exceptions *x, int *rc)
{
    if (byte != PV2_ESCAPE)
        return byte;
    if (x->left == 0) {
        *rc = PROTO_E_BAD_BODY;
        return 0;
    }
    uint16_t z = (uint16_t)(x->at[0] | x->at[1] << 8);
    x->at += 2;
    x->left--;
    if (z < PV2_ESCAPE)
        *rc = PROTO_E_BAD_BODY; /* an escape must carry a code that needed it */
    return z;
}

/* The plane cursors of a delta body: field planes split by context. */
struct planes {
    const uint8_t *x[2], *y[2], *h[2];
    size_t at[2];
    struct exceptions exc;
    int rc;
};

/* Reconstructs boid i from its planes; sets p->rc on an inconsistent body. */
PV2_INLINE void delta_boid(struct planes *p, const struct pv2_bases *b, enum pv2_mode mode,
                           uint32_t i, struct proto_v2_state *st)
{
    struct pv2_guess g = pv2_guess_of(b, mode, i);
    size_t k = p->at[g.ctx]++;
    uint16_t zx = residual_code(p->x[g.ctx][k], &p->exc, &p->rc);
    uint16_t zy = residual_code(p->y[g.ctx][k], &p->exc, &p->rc);
    st->qx[i] = (uint16_t)(g.x + pv2_unzigzag16(zx));
    st->qy[i] = (uint16_t)(g.y + pv2_unzigzag16(zy));
    uint8_t ph = pv2_predict_heading(b, i, st->qx[i], st->qy[i]);
    st->heading[i] = (uint8_t)(ph + pv2_unzigzag8(p->h[g.ctx][k]));
}

static int unpack_delta(const uint8_t *plain, const struct proto_v2_header *h,
                        const struct pv2_bases *b, struct proto_v2_state *st)
{
    enum pv2_mode mode = pv2_mode_of(b);
    uint32_t n = st->count, ctx0 = 0;
    for (uint32_t i = 0; i < n; i++)
        ctx0 += pv2_context(b, i) == 0;
    struct planes p = {.x = {plain, plain + ctx0}, .exc = {plain + 3 * (size_t)n, 0}};
    p.y[0] = p.x[0] + n, p.y[1] = p.x[1] + n, p.h[0] = p.y[0] + n, p.h[1] = p.y[1] + n;
    p.exc.left = (h->plain_len - (size_t)n * PV2_DELTA_MIN_PER_BOID) / 2;
    for (uint32_t i = 0; i < n && p.rc == 0; i++) {
        if (mode == PV2_EVEN) /* the same loop three times, one per mode */
            delta_boid(&p, b, PV2_EVEN, i, st);
        else if (mode == PV2_ONE_BASE)
            delta_boid(&p, b, PV2_ONE_BASE, i, st);
        else
            delta_boid(&p, b, PV2_UNEVEN, i, st);
    }
    if (p.rc == 0 && p.exc.left != 0)
        p.rc = PROTO_E_BAD_BODY;
    return p.rc;
}

/* The bases a delta names, checked against the frame (§11.7 step 10). */
static int find_bases(const struct proto_v2_decoder *d, const struct proto_v2_header *h,
                      const struct proto_v2_state **b1, const struct proto_v2_state **b0)
{
    *b1 = find_base(d, h->seq - h->gap1);
    *b0 = h->gap0 ? find_base(d, h->seq - h->gap1 - h->gap0) : NULL;
    if (!*b1 || (h->gap0 && !*b0))
        return PROTO_E_NO_BASE;
    if ((*b1)->epoch != h->epoch || (*b1)->count != h->boid_count ||
        (*b0 && ((*b0)->epoch != h->epoch || (*b0)->count != h->boid_count)))
        return PROTO_E_NO_BASE;
    return 0;
}

/* Steps 9-12 of §11.7 into slot st, once the header is known good. */
static int decode_into(struct proto_v2_decoder *d, const uint8_t *buf,
                       const struct proto_v2_header *h, struct proto_v2_state *st)
{
    const struct proto_v2_state *b1 = NULL, *b0 = NULL;
    int rc = 0;
    const uint8_t *body = read_sections(buf, h, st, &rc);
    if (rc == 0 && h->kind == PROTO_V2_KIND_DELTA)
        rc = find_bases(d, h, &b1, &b0);
    if (rc == 0)
        rc = inflate_body(d, body, h);
    if (rc)
        return rc;
    if (h->kind == PROTO_V2_KIND_KEY) {
        unpack_key(d->plain, st);
    } else {
        struct pv2_bases b;
        pv2_bases_init(&b, h->width, h->height, b1, b0, h->gap1, h->gap0);
        rc = unpack_delta(d->plain, h, &b, st);
    }
    if (rc == 0 && proto_v2_state_hash(st) != h->state_hash)
        rc = PROTO_E_HASH_MISMATCH;
    return rc;
}

int proto_v2_decode(struct proto_v2_decoder *d, const uint8_t *buf, size_t len,
                    const struct proto_v2_state **out)
{
    struct proto_v2_header h;
    int rc = proto_v2_decode_header(buf, len, &h);
    if (rc)
        return rc;
    if (h.boid_count > d->max_boids || h.obstacle_count > d->max_obstacles)
        return PROTO_E_OVER_LIMIT;
    struct slot *s = free_slot(d);
    rc = decode_into(d, buf, &h, &s->st);
    if (rc)
        return rc;
    keep(d, s);
    *out = &s->st;
    return 0;
}
