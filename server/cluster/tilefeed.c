/*
 * tilefeed.c — the view message, the counts section and the owner's feed
 * of one relay node (see tilefeed.h; layouts in server/cluster/CLUSTER.md
 * §3.7, §3.8). The relay's side is tilefeed_in.c.
 *
 * A feed remembers, per layer the relay asks for, which super-tiles each
 * of its last PROTO_V3_HISTORY messages held: a super-tile's next part is
 * a delta on the newest of those that held it (and on the one before, if
 * another held it too), as view.c picks a client's bases, else a key.
 */
#include "tilefeed_impl.h"

#include "bytes.h"
#include "cluster_wire.h"
#include "proto_sections.h"
#include "proto_v3_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counts section ---------------------------------------------------------- */

#define COUNT_ESC 20 /* this many one bits: the value follows in 32 bits */

static uint32_t zigzag(int64_t d)
{
    return (uint32_t)(d < 0 ? -2 * d - 1 : 2 * d);
}

/* The value of tile t to code: its count, or its difference from base's. */
static uint32_t count_code(const uint32_t *now, const uint32_t *base, uint32_t t)
{
    return base ? zigzag((int64_t)now[t] - base[t]) : now[t];
}

static uint64_t count_bits(uint32_t v, unsigned k)
{
    uint32_t q = v >> k;
    return q < COUNT_ESC ? q + 1u + k : COUNT_ESC + 32u;
}

size_t tilefeed_counts_put(uint8_t *out, const uint32_t *now, const uint32_t *base, uint32_t n)
{
    uint64_t bits[PV3_RICE_K] = {0};
    for (uint32_t t = 0; t < n; t++)
        for (unsigned k = 0; k < PV3_RICE_K; k++)
            bits[k] += count_bits(count_code(now, base, t), k);
    unsigned best = 0;
    for (unsigned k = 1; k < PV3_RICE_K; k++)
        best = bits[k] < bits[best] ? k : best;
    struct pv3_bits w = {.p = out, .start = out};
    pv3_put_bits(&w, best, 4);
    for (uint32_t t = 0; t < n; t++) {
        uint32_t v = count_code(now, base, t);
        if (v >> best >= COUNT_ESC) {
            pv3_put_bits(&w, (1u << COUNT_ESC) - 1u, COUNT_ESC);
            pv3_put_bits(&w, v, 32);
        } else {
            pv3_put_bits(&w, (1u << (v >> best)) - 1u, (v >> best) + 1);
            pv3_put_bits(&w, v, best);
        }
    }
    return pv3_bits_end(&w);
}

int tilefeed_counts_get(const uint8_t *p, size_t len, const uint32_t *base, uint32_t n,
                        uint32_t *now)
{
    struct pv3_bitr r = {.p = p, .len = len};
    unsigned k = pv3_get_bits(&r, 4);
    for (uint32_t t = 0; t < n && !r.bad; t++) {
        uint32_t q = 0;
        while (q < COUNT_ESC && pv3_get_bits(&r, 1) && !r.bad)
            q++;
        uint32_t v = q == COUNT_ESC ? pv3_get_bits(&r, 32) : q << k | pv3_get_bits(&r, k);
        int64_t c = base ? (int64_t)base[t] + (v & 1u ? -(int64_t)(v >> 1) - 1 : (int64_t)(v >> 1))
                         : (int64_t)v;
        if (c < 0 || c > UINT32_MAX)
            return PROTO_E_BAD_BODY;
        now[t] = (uint32_t)c;
    }
    size_t at = pv3_bits_read(&r);
    if (r.bad || (at + 7) / 8 != len || (at % 8 && p[len - 1] >> (at % 8)))
        return PROTO_E_BAD_BODY;
    return 0;
}

/* ---- the view message -------------------------------------------------------------- */

/* Bytes of a layer's bitmap. */
static size_t bits_len(uint32_t gc, uint32_t gr)
{
    return ((size_t)gc * gr + 7) / 8;
}

int tilefeed_want_encode(const struct tilefeed_want *want, uint8_t **buf)
{
    const struct tileneed_wants *w = &want->w;
    size_t node = strlen(want->node), size = 12 + node + w->naudiences;
    for (uint32_t k = 0; k < w->nlayers; k++)
        size += 3 + bits_len(w->layers[k].gc, w->layers[k].gr);
    if (!(*buf = malloc(size)))
        return PROTO_E_INTERNAL;
    struct bytes_w o = {.buf = *buf, .cap = size};
    bytes_put_mem(&o, TILEFEED_MAGIC_VIEW, 4);
    bytes_put(&o, TILEFEED_VERSION, 2);
    bytes_put(&o, want->restart ? 1 : 0, 1);
    bytes_put(&o, node, 1);
    bytes_put(&o, want->cols, 1);
    bytes_put(&o, want->rows, 1);
    bytes_put(&o, w->naudiences, 1);
    bytes_put(&o, w->nlayers, 1);
    bytes_put_mem(&o, want->node, node);
    bytes_put_mem(&o, w->audiences, w->naudiences);
    for (uint32_t k = 0; k < w->nlayers; k++) {
        const struct tileneed_layer *l = &w->layers[k];
        bytes_put(&o, l->audience, 1);
        bytes_put(&o, l->shift, 1);
        bytes_put(&o, l->sample, 1);
        bytes_put_mem(&o, l->bits, bits_len(l->gc, l->gr));
    }
    return o.overflow ? PROTO_E_NOSPACE : (int)o.len;
}

void tilefeed_want_free(struct tilefeed_want *want)
{
    tileneed_wants_free(&want->w);
}

/* The audiences at p (n, strictly ascending, each one of the messages'). */
static bool are_audiences(const uint8_t *p, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (!tilefeed_is_audience(p[k]) || (k && p[k] <= p[k - 1]))
            return false;
    return n >= 1;
}

/* Layer k of the view message at r into *l (bits allocated): 0 or a code.
 * Layers ascend by (audience, shift, sample), each of a listed audience,
 * each with a super-tile and no bit past its grid. */
static int get_layer(struct bytes_r *r, const struct tilefeed_want *out, uint32_t k,
                     struct tileneed_layer *l)
{
    const uint8_t *h = bytes_take(r, 3);
    if (!h)
        return PROTO_E_TRUNCATED;
    *l = (struct tileneed_layer){.audience = h[0], .shift = h[1], .sample = h[2]};
    if (l->shift > PROTO_V3_MAX_SHIFT || l->sample > PROTO_V3_MAX_SAMPLE ||
        !memchr(out->w.audiences, l->audience, out->w.naudiences))
        return PROTO_E_BAD_VALUE;
    const struct tileneed_layer *prev = k ? &out->w.layers[k - 1] : NULL;
    if (prev && (prev->audience << 16 | prev->shift << 8 | prev->sample) >=
                    (l->audience << 16 | l->shift << 8 | l->sample))
        return PROTO_E_BAD_VALUE;
    l->gc = proto_v3_grid_at(out->cols, l->shift);
    l->gr = proto_v3_grid_at(out->rows, l->shift);
    size_t n = bits_len(l->gc, l->gr), any = 0;
    const uint8_t *bits = bytes_take(r, n);
    if (!bits)
        return PROTO_E_TRUNCATED;
    for (size_t b = 0; b < n; b++)
        any |= bits[b];
    uint32_t spare = (uint32_t)(n * 8 - (size_t)l->gc * l->gr);
    if (!any || (spare && bits[n - 1] >> (8 - spare)))
        return PROTO_E_BAD_VALUE;
    if (!(l->bits = malloc(n)))
        return PROTO_E_INTERNAL;
    memcpy(l->bits, bits, n);
    return 0;
}

int tilefeed_want_decode(const uint8_t *buf, size_t len, struct tilefeed_want *out)
{
    memset(out, 0, sizeof *out);
    struct bytes_r r = {.buf = buf, .len = len};
    const uint8_t *h = bytes_take(&r, 12);
    if (!h)
        return PROTO_E_TRUNCATED;
    if (memcmp(h, TILEFEED_MAGIC_VIEW, 4) != 0)
        return PROTO_E_BAD_MAGIC;
    if (bytes_le_get(h + 4, 2) != TILEFEED_VERSION)
        return PROTO_E_BAD_VERSION;
    out->restart = h[6] & 1u;
    out->cols = h[8];
    out->rows = h[9];
    out->w.naudiences = h[10];
    out->w.nlayers = h[11];
    const uint8_t *node = bytes_take(&r, h[7]), *aud = bytes_take(&r, h[10]);
    if (!node || !aud)
        return PROTO_E_TRUNCATED;
    if ((h[6] & ~1u) || !cluster_is_token((const char *)node, h[7], PROTO_NODE_MAX) || !out->cols ||
        !out->rows || out->w.naudiences > TILEFEED_AUDIENCE_MAX ||
        out->w.nlayers > TILENEED_LAYERS || !are_audiences(aud, out->w.naudiences))
        return PROTO_E_BAD_VALUE;
    memcpy(out->node, node, h[7]);
    memcpy(out->w.audiences, aud, out->w.naudiences);
    int rc = 0;
    uint32_t k = 0;
    for (; k < out->w.nlayers && rc == 0; k++)
        rc = get_layer(&r, out, k, &out->w.layers[k]);
    out->w.nlayers = rc ? k - 1 : k; /* the layers whose bits were allocated */
    if (rc == 0 && r.at != len)
        rc = PROTO_E_BAD_LENGTH;
    if (rc)
        tilefeed_want_free(out);
    return rc;
}

/* ---- the owner's feed of one relay ------------------------------------------------- */

/* A layer the relay asks for and what the last messages held of it. */
struct flayer {
    struct tileneed_layer want;
    struct {
        uint32_t seq; /* the audience's snapshot; 0: none */
        uint8_t *bits;
    } sent[PROTO_V3_HISTORY]; /* newest first */
    uint8_t *now;             /* the message being built: its super-tiles */
    uint32_t now_seq;         /* 0: not in it */
};

/* An audience the relay asks for: the snapshot whose counts it has. */
struct faud {
    uint8_t audience;
    uint32_t counts_seq; /* 0: none */
    uint32_t now_seq;    /* in the message being built; 0: not in it */
};

struct tilefeed {
    char node[PROTO_NODE_MAX + 1];
    int64_t seen_ns;
    struct faud aud[TILEFEED_AUDIENCE_MAX];
    uint32_t naud;
    struct flayer layers[TILENEED_LAYERS];
    uint32_t nlayers;
    uint32_t *counts, *base; /* scratch: a snapshot's counts and its base's */
    uint32_t counts_cap;
};

struct tilefeed *tilefeed_create(const char *node)
{
    struct tilefeed *f = calloc(1, sizeof *f);
    if (f)
        snprintf(f->node, sizeof f->node, "%s", node);
    return f;
}

static void forget_sent(struct flayer *l)
{
    for (int g = 0; g < PROTO_V3_HISTORY; g++) {
        free(l->sent[g].bits);
        l->sent[g].bits = NULL;
        l->sent[g].seq = 0;
    }
}

static void free_layer(struct flayer *l)
{
    forget_sent(l);
    free(l->want.bits);
    free(l->now);
    memset(l, 0, sizeof *l);
}

void tilefeed_destroy(struct tilefeed *f)
{
    if (!f)
        return;
    for (uint32_t k = 0; k < f->nlayers; k++)
        free_layer(&f->layers[k]);
    free(f->counts);
    free(f->base);
    free(f);
}

const char *tilefeed_node(const struct tilefeed *f)
{
    return f->node;
}

int64_t tilefeed_seen(const struct tilefeed *f)
{
    return f->seen_ns;
}

/* The layer of f like l (same audience, shift, sample), or NULL; one
 * moved out already (no wanted bits) is none. */
static struct flayer *layer_like(struct tilefeed *f, const struct tileneed_layer *l)
{
    for (uint32_t k = 0; k < f->nlayers; k++) {
        const struct tileneed_layer *w = &f->layers[k].want;
        if (w->bits && w->audience == l->audience && w->shift == l->shift && w->sample == l->sample)
            return &f->layers[k];
    }
    return NULL;
}

/* The snapshot whose counts the relay has for audience a, 0 if none. */
static uint32_t counts_seq_of(const struct tilefeed *f, uint8_t a)
{
    for (uint32_t k = 0; k < f->naud; k++)
        if (f->aud[k].audience == a)
            return f->aud[k].counts_seq;
    return 0;
}

void tilefeed_set_want(struct tilefeed *f, struct tilefeed_want *want, int64_t now)
{
    struct flayer layers[TILENEED_LAYERS];
    struct faud aud[TILEFEED_AUDIENCE_MAX];
    uint32_t n = 0;
    for (uint32_t k = 0; k < want->w.nlayers; k++, n++) {
        struct flayer *old = layer_like(f, &want->w.layers[k]);
        layers[n] = old ? *old : (struct flayer){0};
        if (old)
            memset(old, 0, sizeof *old); /* moved */
        free(layers[n].want.bits);
        layers[n].want = want->w.layers[k];
        want->w.layers[k].bits = NULL; /* taken */
        if (want->restart)
            forget_sent(&layers[n]);
    }
    for (uint32_t k = 0; k < want->w.naudiences; k++)
        aud[k] =
            (struct faud){.audience = want->w.audiences[k],
                          .counts_seq = want->restart ? 0 : counts_seq_of(f, want->w.audiences[k])};
    for (uint32_t k = 0; k < f->nlayers; k++)
        free_layer(&f->layers[k]);
    memcpy(f->layers, layers, n * sizeof layers[0]);
    f->nlayers = n;
    memcpy(f->aud, aud, want->w.naudiences * sizeof aud[0]);
    f->naud = want->w.naudiences;
    f->seen_ns = now;
    tileneed_wants_free(&want->w);
}

/* ---- building a tiles message ---- */

/* A message growing in the caller's buffer. */
struct out {
    uint8_t **buf;
    size_t *cap, len;
    bool nomem;
};

/* n more bytes at the message's end, or NULL (nomem set). */
static uint8_t *room_for(struct out *o, size_t n)
{
    if (o->nomem)
        return NULL;
    if (*o->cap - o->len < n) {
        size_t cap = *o->cap ? *o->cap : 4096;
        while (cap - o->len < n)
            cap *= 2;
        uint8_t *b = realloc(*o->buf, cap);
        if (!b) {
            o->nomem = true;
            return NULL;
        }
        *o->buf = b;
        *o->cap = cap;
    }
    uint8_t *p = *o->buf + o->len;
    o->len += n;
    return p;
}

/* The tileset of audience a in fr, or NULL. */
static struct tileset *set_of(const struct frame *fr, uint8_t a)
{
    if (a == TILENEED_DELAYED)
        return fr->v3.delayed;
    return a < fr->v3.count ? fr->v3.sets[a] : NULL;
}

/* Whether the relay got super-tile st of layer l with the snapshot seq. */
static bool has_sent(const struct flayer *l, uint32_t seq, uint32_t st)
{
    for (int g = 0; g < PROTO_V3_HISTORY; g++)
        if (l->sent[g].seq && l->sent[g].seq == seq && l->sent[g].bits[st / 8] >> st % 8 & 1u)
            return true;
    return false;
}

/* Super-tile st of layer l for the relay: a delta on the newest bases it
 * got (two if it can), else a key (as view.c's part_for()). */
static int part_of(struct tileset *ts, const struct flayer *l, uint32_t st,
                   struct proto_v3_encoder *enc, struct tiles_part *out)
{
    uint32_t seq = tiles_state_seq(tiles_set_state(ts));
    const struct tileneed_layer *w = &l->want;
    for (unsigned g1 = 1; g1 <= PROTO_V3_HISTORY; g1++) {
        if (!has_sent(l, seq - g1, st))
            continue;
        for (unsigned g0 = 1; g1 + g0 <= PROTO_V3_HISTORY; g0++)
            if (has_sent(l, seq - g1 - g0, st) &&
                tiles_set_part(ts, w->shift, w->sample, st, g1, g0, enc, out) == 0)
                return 0;
        if (tiles_set_part(ts, w->shift, w->sample, st, g1, 0, enc, out) == 0)
            return 0;
    }
    return tiles_set_part(ts, w->shift, w->sample, st, 0, 0, enc, out);
}

/* Layer l's wanted super-tiles of ts into the message (each part after
 * its shift, sample, super-tile and hash): how many, or a negative code. */
static int put_layer(struct out *o, struct tileset *ts, struct flayer *l,
                     struct proto_v3_encoder *enc)
{
    const struct tileneed_layer *w = &l->want;
    size_t n = bits_len(w->gc, w->gr);
    if (!l->now && !(l->now = malloc(n)))
        return PROTO_E_INTERNAL;
    memset(l->now, 0, n);
    int parts = 0;
    for (uint32_t st = 0; st < w->gc * w->gr; st++) {
        struct tiles_part part;
        if (!(w->bits[st / 8] >> st % 8 & 1u) || part_of(ts, l, st, enc, &part) < 0)
            continue; /* not wanted, or not encoded (no memory): the relay passes */
        uint8_t *p = room_for(o, TILEFEED_PART_HEAD + part.len);
        if (!p)
            return PROTO_E_INTERNAL;
        p[0] = w->shift;
        p[1] = w->sample;
        bytes_le_put(p + 2, st, 2);
        bytes_le_put(p + 4, part.hash, 4);
        memcpy(p + TILEFEED_PART_HEAD, part.bytes, part.len);
        l->now[st / 8] |= (uint8_t)(1u << st % 8);
        parts++;
    }
    l->now_seq = tiles_state_seq(tiles_set_state(ts));
    return parts;
}

/* The counts of state s into counts[] (cols * rows). */
static void counts_of(struct tilestate *s, uint32_t n, uint32_t *counts)
{
    for (uint32_t t = 0; t < n; t++)
        counts[t] = tiles_state_count(s, t);
}

/* Audience a's counts section: a delta on the snapshot the relay has them
 * of, when ts still holds it, else whole. The base's distance (0: whole)
 * and the section's bytes (*len), or a negative code. */
static int put_counts(struct tilefeed *f, struct out *o, struct tileset *ts, const struct faud *a,
                      uint32_t n, uint32_t *len)
{
    if (f->counts_cap < n) {
        uint32_t *c = realloc(f->counts, (size_t)n * 4);
        f->counts = c ? c : f->counts;
        uint32_t *b = c ? realloc(f->base, (size_t)n * 4) : NULL;
        f->base = b ? b : f->base;
        if (!c || !b)
            return PROTO_E_INTERNAL;
        f->counts_cap = n;
    }
    struct tilestate *s = tiles_set_state(ts);
    uint32_t g = a->counts_seq ? tiles_state_seq(s) - a->counts_seq : 0;
    struct tilestate *base = g >= 1 && g <= PROTO_V3_HISTORY ? tiles_set_base(ts, g) : NULL;
    if (!base || tiles_state_seq(base) != a->counts_seq)
        g = 0, base = NULL;
    counts_of(s, n, f->counts);
    if (base)
        counts_of(base, n, f->base);
    uint8_t *p = room_for(o, tilefeed_counts_bound(n));
    if (!p)
        return PROTO_E_INTERNAL;
    *len = (uint32_t)tilefeed_counts_put(p, f->counts, base ? f->base : NULL, n);
    o->len -= tilefeed_counts_bound(n) - *len;
    return (int)g;
}

/* Audience a's block header at p (TILEFEED_BLOCK bytes). */
static void put_block_head(uint8_t *p, const struct tileset *ts, uint8_t audience, int base,
                           uint32_t counts_len, uint32_t parts)
{
    struct tilestate *s = tiles_set_state(ts);
    const struct tiles_meta *m = tiles_set_meta(ts);
    const struct proto_obstacle *obstacles;
    const struct proto_target *targets;
    uint32_t no, nt;
    tiles_set_sections(ts, &obstacles, &no, &targets, &nt);
    p[0] = audience;
    p[1] = (uint8_t)(m->flags & (PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP));
    p[2] = (uint8_t)base;
    p[3] = 0;
    bytes_le_put(p + 4, tiles_state_seq(s), 4);
    bytes_le_put(p + 8, m->tick, 8);
    bytes_le_put(p + 16, (uint64_t)m->time_us, 8);
    bytes_le_put(p + 24, m->room_boids, 4);
    bytes_le_put(p + 28, no, 2);
    bytes_le_put(p + 30, nt, 2);
    bytes_le_put(p + 32, counts_len, 4);
    bytes_le_put(p + 36, parts, 4);
}

/* Audience a's block of ts: its header, sections, counts and parts. 0 or
 * a negative code. */
static int put_block(struct tilefeed *f, struct out *o, struct tileset *ts, struct faud *a,
                     struct proto_v3_encoder *enc)
{
    struct tilestate *s = tiles_set_state(ts);
    const struct tiles_grid *g = tiles_state_grid(s);
    const struct proto_obstacle *obstacles;
    const struct proto_target *targets;
    uint32_t no, nt, counts_len = 0;
    tiles_set_sections(ts, &obstacles, &no, &targets, &nt);
    size_t at = o->len;
    uint8_t *p = room_for(o, TILEFEED_BLOCK + (size_t)no * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                                 (size_t)nt * PROTO_SNAPSHOT_TARGET_SIZE);
    if (!p || no > UINT16_MAX)
        return PROTO_E_INTERNAL;
    uint8_t *q = proto_sections_put_obstacles(p + TILEFEED_BLOCK, obstacles, no);
    proto_sections_put_targets(q, targets, nt);
    int base = put_counts(f, o, ts, a, (uint32_t)g->cols * g->rows, &counts_len);
    int parts = 0;
    for (uint32_t k = 0; k < f->nlayers && base >= 0 && parts >= 0; k++) {
        int n =
            f->layers[k].want.audience == a->audience ? put_layer(o, ts, &f->layers[k], enc) : 0;
        parts = n < 0 ? n : parts + n;
    }
    if (base < 0 || parts < 0)
        return base < 0 ? base : parts;
    put_block_head(*o->buf + at, ts, a->audience, base, counts_len, (uint32_t)parts);
    a->now_seq = tiles_state_seq(s);
    return 0;
}

/* The message's header (TILEFEED_HEADER bytes) at p. */
static void put_head(uint8_t *p, const struct tiles_grid *g, uint64_t term, uint64_t seq,
                     uint32_t audiences)
{
    memcpy(p, TILEFEED_MAGIC_TILES, 4);
    bytes_le_put(p + 4, TILEFEED_VERSION, 2);
    p[6] = g->cols;
    p[7] = g->rows;
    bytes_le_put(p + 8, term, 8);
    bytes_le_put(p + 16, seq, 8);
    bytes_le_put_f32(p + 24, g->width);
    bytes_le_put_f32(p + 28, g->height);
    bytes_le_put_f32(p + 32, g->vscale);
    p[36] = (uint8_t)audiences;
    p[37] = p[38] = p[39] = 0;
}

ptrdiff_t tilefeed_message(struct tilefeed *f, const struct frame *fr, uint64_t term,
                           struct proto_v3_encoder *enc, uint8_t **buf, size_t *cap)
{
    struct out o = {.buf = buf, .cap = cap};
    const struct tiles_grid *grid = NULL;
    uint32_t blocks = 0;
    for (uint32_t k = 0; k < f->nlayers; k++)
        f->layers[k].now_seq = 0;
    if (!room_for(&o, TILEFEED_HEADER))
        return PROTO_E_INTERNAL;
    for (uint32_t k = 0; k < f->naud; k++) {
        struct tileset *ts = set_of(fr, f->aud[k].audience);
        f->aud[k].now_seq = 0;
        if (!ts)
            continue;
        int rc = put_block(f, &o, ts, &f->aud[k], enc);
        if (rc < 0)
            return rc;
        grid = tiles_state_grid(tiles_set_state(ts));
        blocks++;
    }
    if (!blocks)
        return 0;
    put_head(*buf, grid, term, fr->seq, blocks);
    return (ptrdiff_t)o.len;
}

void tilefeed_sent(struct tilefeed *f, bool went)
{
    for (uint32_t k = 0; k < f->nlayers; k++) {
        struct flayer *l = &f->layers[k];
        if (!went) {
            forget_sent(l);
            continue;
        }
        if (!l->now_seq)
            continue;
        free(l->sent[PROTO_V3_HISTORY - 1].bits);
        memmove(&l->sent[1], &l->sent[0], (PROTO_V3_HISTORY - 1) * sizeof l->sent[0]);
        l->sent[0].seq = l->now_seq;
        l->sent[0].bits = l->now;
        l->now = NULL;
        l->now_seq = 0;
    }
    for (uint32_t k = 0; k < f->naud; k++) {
        if (f->aud[k].now_seq || !went)
            f->aud[k].counts_seq = went ? f->aud[k].now_seq : 0;
        f->aud[k].now_seq = 0;
    }
}
