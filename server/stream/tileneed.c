/*
 * tileneed.c — the super-tiles a relay's version 3 clients look at (see
 * tileneed.h).
 *
 * A layer keeps, per super-tile of its grid, the epoch it was last noted
 * at plus one (0: never). Noting a rect stamps it (and its ring); taking
 * the wants reads the stamps against the epoch.
 */
#include "tileneed.h"

#include "fog.h"
#include "proto.h"
#include "proto_v3.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct layer {
    uint8_t audience, shift, sample;
    uint32_t gc, gr;
    uint32_t last; /* the epoch it was last noted at */
    uint32_t *at;  /* gc * gr: epoch + 1 of the last note; NULL: a free layer */
};

struct tileneed {
    atomic_uint refs;
    uint8_t cols, rows;
    atomic_uint epoch;
    atomic_bool news;
    pthread_mutex_t lock; /* the layers */
    struct layer layers[TILENEED_LAYERS];
};

struct tileneed *tileneed_create(uint8_t cols, uint8_t rows)
{
    struct tileneed *n = calloc(1, sizeof *n);
    if (!n || !cols || !rows) {
        free(n);
        return NULL;
    }
    atomic_init(&n->refs, 1);
    atomic_init(&n->epoch, 1);
    n->cols = cols;
    n->rows = rows;
    pthread_mutex_init(&n->lock, NULL);
    return n;
}

struct tileneed *tileneed_ref(struct tileneed *n)
{
    if (n)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    return n;
}

void tileneed_release(struct tileneed *n)
{
    if (!n || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int k = 0; k < TILENEED_LAYERS; k++)
        free(n->layers[k].at);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

uint32_t tileneed_epoch(const struct tileneed *n)
{
    return atomic_load_explicit(&n->epoch, memory_order_relaxed);
}

bool tileneed_take_news(struct tileneed *n)
{
    return atomic_exchange_explicit(&n->news, false, memory_order_relaxed);
}

/* The layer (audience, shift, sample), made if need be in a free slot or
 * the stalest one's; NULL if memory ran out. Under lock. */
static struct layer *layer_of(struct tileneed *n, unsigned audience, unsigned shift,
                              unsigned sample)
{
    struct layer *stalest = &n->layers[0];
    for (int k = 0; k < TILENEED_LAYERS; k++) {
        struct layer *l = &n->layers[k];
        if (l->at && l->audience == audience && l->shift == shift && l->sample == sample)
            return l;
        if (!l->at || (stalest->at && l->last < stalest->last))
            stalest = l;
    }
    uint32_t gc = proto_v3_grid_at(n->cols, shift), gr = proto_v3_grid_at(n->rows, shift);
    uint32_t *at = calloc((size_t)gc * gr, sizeof *at);
    if (!at)
        return NULL;
    free(stalest->at);
    *stalest = (struct layer){.audience = (uint8_t)audience,
                              .shift = (uint8_t)shift,
                              .sample = (uint8_t)sample,
                              .gc = gc,
                              .gr = gr,
                              .at = at};
    return stalest;
}

/* An axis of the rect, with `ring` more on each side: first and count,
 * wrapped into n. */
static void ring_axis(uint32_t first, uint32_t count, uint32_t n, uint32_t ring, uint32_t *a,
                      uint32_t *c)
{
    if (count + 2 * ring >= n) {
        *a = 0;
        *c = n;
        return;
    }
    *a = (first + n - ring) % n;
    *c = count + 2 * ring;
}

void tileneed_note(struct tileneed *n, unsigned audience, unsigned shift, unsigned sample,
                   uint32_t rect_x, uint32_t rect_y, uint32_t cols, uint32_t rows, bool ring)
{
    if (shift > PROTO_V3_MAX_SHIFT || sample > PROTO_V3_MAX_SAMPLE ||
        (audience > FOG_MAX_TEAMS && audience != TILENEED_DELAYED))
        return;
    uint32_t epoch = tileneed_epoch(n), x0, y0, cx, cy;
    bool news = false;
    pthread_mutex_lock(&n->lock);
    struct layer *l = layer_of(n, audience, shift, sample);
    if (l && rect_x < l->gc && rect_y < l->gr && cols && rows) {
        l->last = epoch;
        ring_axis(rect_x, cols < l->gc ? cols : l->gc, l->gc, ring, &x0, &cx);
        ring_axis(rect_y, rows < l->gr ? rows : l->gr, l->gr, ring, &y0, &cy);
        for (uint32_t j = 0; j < cy; j++)
            for (uint32_t i = 0; i < cx; i++) {
                uint32_t *at = &l->at[((y0 + j) % l->gr) * l->gc + (x0 + i) % l->gc];
                news |= *at == 0;
                *at = epoch + 1;
            }
    }
    pthread_mutex_unlock(&n->lock);
    if (news)
        atomic_store_explicit(&n->news, true, memory_order_relaxed);
}

/* Layer l's super-tiles stamped within `linger` epochs of `epoch` into a
 * new bitmap (*bits, NULL if none is); false if memory ran out. Stamps
 * older than that are cleared, so a super-tile wanted again is news. */
static bool wanted_bits(struct layer *l, uint32_t epoch, uint32_t linger, uint8_t **bits)
{
    uint32_t st_count = l->gc * l->gr;
    *bits = NULL;
    for (uint32_t st = 0; st < st_count; st++) {
        if (!l->at[st])
            continue;
        if (epoch + 1 - l->at[st] >= linger) {
            l->at[st] = 0;
            continue;
        }
        if (!*bits && !(*bits = calloc((st_count + 7) / 8, 1)))
            return false;
        (*bits)[st / 8] |= (uint8_t)(1u << st % 8);
    }
    return true;
}

/* Adds audience a to w's (ascending, each once, at most TILENEED_AUDIENCES). */
static void add_audience(struct tileneed_wants *w, uint8_t a)
{
    uint32_t k = 0;
    while (k < w->naudiences && w->audiences[k] < a)
        k++;
    if ((k < w->naudiences && w->audiences[k] == a) || w->naudiences == TILENEED_AUDIENCES)
        return;
    memmove(&w->audiences[k + 1], &w->audiences[k], (w->naudiences - k) * sizeof w->audiences[0]);
    w->audiences[k] = a;
    w->naudiences++;
}

/* Orders layers by (audience, shift, sample). */
static int layer_order(const void *a, const void *b)
{
    const struct tileneed_layer *x = a, *y = b;
    int kx = x->audience << 16 | x->shift << 8 | x->sample;
    int ky = y->audience << 16 | y->shift << 8 | y->sample;
    return (kx > ky) - (kx < ky);
}

int tileneed_take(struct tileneed *n, uint32_t linger, const uint8_t *also, uint32_t nalso,
                  struct tileneed_wants *out)
{
    memset(out, 0, sizeof *out);
    bool ok = true;
    pthread_mutex_lock(&n->lock);
    uint32_t epoch = tileneed_epoch(n);
    for (int k = 0; ok && k < TILENEED_LAYERS; k++) {
        struct layer *l = &n->layers[k];
        uint8_t *bits = NULL;
        if (!l->at)
            continue;
        ok = wanted_bits(l, epoch, linger, &bits);
        if (!bits) { /* nothing of it wanted any more */
            free(l->at);
            l->at = NULL;
            continue;
        }
        out->layers[out->nlayers++] = (struct tileneed_layer){.audience = l->audience,
                                                              .shift = l->shift,
                                                              .sample = l->sample,
                                                              .gc = l->gc,
                                                              .gr = l->gr,
                                                              .bits = bits};
    }
    pthread_mutex_unlock(&n->lock);
    if (!ok) {
        tileneed_wants_free(out);
        return PROTO_E_INTERNAL;
    }
    qsort(out->layers, out->nlayers, sizeof out->layers[0], layer_order);
    for (uint32_t k = 0; k < out->nlayers; k++)
        add_audience(out, out->layers[k].audience);
    for (uint32_t k = 0; k < nalso; k++)
        add_audience(out, also[k]);
    return 0;
}

void tileneed_advance(struct tileneed *n)
{
    atomic_fetch_add_explicit(&n->epoch, 1, memory_order_relaxed);
}

void tileneed_wants_free(struct tileneed_wants *w)
{
    for (uint32_t k = 0; k < w->nlayers; k++)
        free(w->layers[k].bits);
    memset(w, 0, sizeof *w);
}

uint64_t tileneed_wants_count(const struct tileneed_wants *w)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < w->nlayers; k++) {
        const struct tileneed_layer *l = &w->layers[k];
        for (uint32_t b = 0; b < (l->gc * l->gr + 7) / 8; b++)
            n += (uint64_t)__builtin_popcount(l->bits[b]);
    }
    return n;
}
