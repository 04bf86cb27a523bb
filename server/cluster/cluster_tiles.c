/*
 * cluster_tiles.c — version 3's tiles between the nodes of a cluster
 * (server/cluster/CLUSTER.md §3.7, §3.8; the messages are tilefeed.h's).
 *
 * A relay notes what its clients' frames need (tileneed.h, through the
 * tilestates it serves them) and sends the room's owner a view message
 * every step while they need anything, and between steps as soon as they
 * need something new or it lost a base. The owner keeps a feed per relay
 * node and, for each frame its room makes, a thread of its own (not the
 * tick) builds each relay's tiles message from the frame's tilesets and
 * publishes it on flockd.room.NAME.tiles.NODE. The relay decodes it into
 * tilesets (its inbox) and pairs them with the frame message of the same
 * snapshot, which comes on another subscription: whichever comes first
 * waits for the other (a frame at most TILE_HOLD_S), and the frame is
 * shown with its tiles, so its clients are served as the owner serves
 * its own.
 *
 * Of the cluster's files it calls none (cluster_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "bytes.h"
#include "clock.h"
#include "tilefeed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A room's tiles: an owner's feeds, a relay's inbox and need. */
struct ctiles {
    atomic_uint refs;
    pthread_mutex_t lock; /* the feeds and the inbox */
    struct tiles_grid grid;
    struct tilefeed *feeds[TILE_FEEDS];
    size_t nfeeds;
    struct tileinbox *inbox;
    struct tileneed *need;
    atomic_bool restart; /* ask the owner for keys at once */
    atomic_bool fed;     /* an owner with a feed */
};

static struct ctiles *ct_ref(struct ctiles *ct)
{
    if (ct)
        atomic_fetch_add_explicit(&ct->refs, 1, memory_order_relaxed);
    return ct;
}

static void drop_feeds(struct ctiles *ct)
{
    for (size_t k = 0; k < ct->nfeeds; k++)
        tilefeed_destroy(ct->feeds[k]);
    ct->nfeeds = 0;
    atomic_store(&ct->fed, false);
}

static void ct_release(struct ctiles *ct)
{
    if (!ct || atomic_fetch_sub_explicit(&ct->refs, 1, memory_order_acq_rel) != 1)
        return;
    drop_feeds(ct);
    tileinbox_destroy(ct->inbox);
    tileneed_release(ct->need);
    pthread_mutex_destroy(&ct->lock);
    free(ct);
}

int cluster__tiles_attach(struct cluster *c, struct croom *cr)
{
    (void)c;
    struct ctiles *ct = calloc(1, sizeof *ct);
    if (!ct)
        return PROTO_E_INTERNAL;
    atomic_init(&ct->refs, 1);
    pthread_mutex_init(&ct->lock, NULL);
    room_relay_grid(cr->room, &ct->grid);
    ct->need = tileneed_create(ct->grid.cols, ct->grid.rows);
    cr->ct = ct;
    if (!ct->need) {
        cluster__tiles_free(cr);
        return PROTO_E_INTERNAL;
    }
    return 0;
}

/* Forgets what a relay kept of its tiles (a frame held, tiles waiting). */
static void drop_pairing(struct croom *cr)
{
    frame_release(cr->held);
    cr->held = NULL;
    struct tileinbox_out out = {.v3 = cr->ready};
    tileinbox_out_free(&out);
    memset(&cr->ready, 0, sizeof cr->ready);
    cr->ready_seq = cr->tiles_seq = 0;
}

void cluster__tiles_free(struct croom *cr)
{
    cluster__unsubscribe(&cr->tiles);
    cluster__unsubscribe(&cr->views);
    drop_pairing(cr);
    ct_release(cr->ct);
    cr->ct = NULL;
}

/* ---- the owner: its relays' views, and the tiles thread ----------------------------- */

/* The feed of relay `node` in ct, made (the stalest one's place when all
 * are taken) if need be; NULL if memory ran out. Under ct->lock. */
static struct tilefeed *feed_of(struct ctiles *ct, const char *node)
{
    size_t stalest = 0;
    for (size_t k = 0; k < ct->nfeeds; k++) {
        if (strcmp(tilefeed_node(ct->feeds[k]), node) == 0)
            return ct->feeds[k];
        if (tilefeed_seen(ct->feeds[k]) < tilefeed_seen(ct->feeds[stalest]))
            stalest = k;
    }
    struct tilefeed *f = tilefeed_create(node);
    if (!f)
        return NULL;
    if (ct->nfeeds == TILE_FEEDS)
        tilefeed_destroy(ct->feeds[stalest]);
    ct->feeds[ct->nfeeds == TILE_FEEDS ? stalest : ct->nfeeds++] = f;
    atomic_store(&ct->fed, true);
    return f;
}

/* A relay's view message: what its clients look at in a room owned here. */
static void on_view(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    struct tilefeed_want want;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "%s", natsMsg_GetSubject(msg));
    int rc = tilefeed_want_decode((const uint8_t *)natsMsg_GetData(msg),
                                  (size_t)natsMsg_GetDataLength(msg), &want);
    natsMsg_Destroy(msg); /* the subject goes with it: copied */
    if (rc < 0) {
        cluster__reject(c, "a view message that does not read");
        return;
    }
    struct ctiles *ct = NULL;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms && !c->quiet && !ct; i++) {
        struct croom *cr = c->rooms[i];
        char mine[SUBJECT_MAX];
        snprintf(mine, sizeof mine, "flockd.room.%s.view", cr->name);
        if (!cr->owner || !cr->ct || strcmp(mine, subject) != 0)
            continue;
        if (want.cols == cr->ct->grid.cols && want.rows == cr->ct->grid.rows)
            ct = ct_ref(cr->ct);
        /* Tiles from the next snapshot on; another node's clients watch it. */
        room_want(cr->room, FRAME_WANT_V3, 0);
        room_relay_want(cr->room, 0, now);
    }
    pthread_mutex_unlock(&c->lock);
    if (!ct) {
        cluster__reject(c, "a view message of another grid or of a room not owned here");
        tilefeed_want_free(&want);
        return;
    }
    pthread_mutex_lock(&ct->lock);
    struct tilefeed *f = feed_of(ct, want.node);
    if (f)
        tilefeed_set_want(f, &want, now);
    pthread_mutex_unlock(&ct->lock);
    tilefeed_want_free(&want);
    ct_release(ct);
}

void cluster__tiles_publish(struct cluster *c, struct croom *cr, const struct frame *f,
                            uint64_t term)
{
    if (!cr->ct || !atomic_load(&cr->ct->fed) || (!f->v3.count && !f->v3.delayed))
        return;
    struct tile_job job = {.ct = ct_ref(cr->ct), .f = frame_ref((struct frame *)f), .term = term};
    snprintf(job.name, sizeof job.name, "%s", cr->name);
    struct tile_job old = {0};
    pthread_mutex_lock(&c->tq_lock);
    if (c->tq_len == TILE_QUEUE) { /* the thread is behind: the oldest frame goes */
        old = c->tq[c->tq_head];
        c->tq_head = (c->tq_head + 1) % TILE_QUEUE;
        c->tq_len--;
    }
    c->tq[(c->tq_head + c->tq_len++) % TILE_QUEUE] = job;
    pthread_cond_signal(&c->tq_cond);
    pthread_mutex_unlock(&c->tq_lock);
    if (old.f)
        COUNT(c, tiles_dropped);
    frame_release(old.f);
    ct_release(old.ct);
}

/* One feed's message of the job's frame, published: its relay's bases
 * follow what went. Under ct->lock. */
static void feed_one(struct cluster *c, const struct tile_job *job, struct tilefeed *feed,
                     struct proto_v3_encoder *enc, uint8_t **buf, size_t *cap)
{
    ptrdiff_t len = tilefeed_message(feed, job->f, job->term, enc, buf, cap);
    if (len == 0)
        return;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.tiles.%s", job->name, tilefeed_node(feed));
    bool went = len > 0 && len <= natsConnection_GetMaxPayload(c->nc) && cluster__is_connected(c) &&
                natsConnection_Publish(c->nc, subject, *buf, (int)len) == NATS_OK;
    tilefeed_sent(feed, went);
    if (went)
        COUNT(c, tiles_published);
    else
        COUNT(c, tiles_dropped);
}

/* Every live feed of the job's room its message; feeds not asked for
 * lately go. */
static void run_job(struct cluster *c, const struct tile_job *job, struct proto_v3_encoder *enc,
                    uint8_t **buf, size_t *cap)
{
    struct ctiles *ct = job->ct;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&ct->lock);
    for (size_t k = 0; k < ct->nfeeds;) {
        if ((double)(now - tilefeed_seen(ct->feeds[k])) > TILE_FEED_S * 1e9) {
            tilefeed_destroy(ct->feeds[k]);
            ct->feeds[k] = ct->feeds[--ct->nfeeds];
            continue;
        }
        feed_one(c, job, ct->feeds[k++], enc, buf, cap);
    }
    atomic_store(&ct->fed, ct->nfeeds > 0);
    pthread_mutex_unlock(&ct->lock);
}

static void *tiles_main(void *arg)
{
    struct cluster *c = arg;
    const char *err;
    /* As many boids as a part may hold (view.c's encoders take as many). */
    struct proto_v3_encoder *enc = proto_v3_encoder_create(4194304, &err);
    uint8_t *buf = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&c->tq_lock);
    while (!c->tq_stop) {
        if (!c->tq_len) {
            pthread_cond_wait(&c->tq_cond, &c->tq_lock);
            continue;
        }
        struct tile_job job = c->tq[c->tq_head];
        c->tq_head = (c->tq_head + 1) % TILE_QUEUE;
        c->tq_len--;
        pthread_mutex_unlock(&c->tq_lock);
        if (enc)
            run_job(c, &job, enc, &buf, &cap);
        frame_release(job.f);
        ct_release(job.ct);
        pthread_mutex_lock(&c->tq_lock);
    }
    pthread_mutex_unlock(&c->tq_lock);
    free(buf);
    proto_v3_encoder_destroy(enc);
    return NULL;
}

int cluster__tiles_start(struct cluster *c)
{
    pthread_mutex_init(&c->tq_lock, NULL);
    pthread_cond_init(&c->tq_cond, NULL);
    if (pthread_create(&c->tiles_thread, NULL, tiles_main, c) != 0)
        return PROTO_E_INTERNAL;
    c->tiles_started = true;
    return 0;
}

void cluster__tiles_stop(struct cluster *c)
{
    if (!c->tiles_started)
        return;
    pthread_mutex_lock(&c->tq_lock);
    c->tq_stop = true;
    pthread_cond_signal(&c->tq_cond);
    pthread_mutex_unlock(&c->tq_lock);
    pthread_join(c->tiles_thread, NULL);
    for (; c->tq_len; c->tq_len--, c->tq_head = (c->tq_head + 1) % TILE_QUEUE) {
        frame_release(c->tq[c->tq_head].f);
        ct_release(c->tq[c->tq_head].ct);
    }
    pthread_mutex_destroy(&c->tq_lock);
    pthread_cond_destroy(&c->tq_cond);
    c->tiles_started = false;
}

/* ---- the relay: its tiles, paired with its frames ------------------------------------ */

/* Shows the frame held, as it is (its tiles did not come). */
static void show_held(struct croom *cr)
{
    if (cr->held)
        room_relay_frame(cr->room, cr->held, cr->held_boids, cr->held_paused);
    cr->held = NULL;
}

void cluster__tiles_frame(struct cluster *c, struct croom *cr, struct frame *f, uint32_t boids,
                          bool paused)
{
    (void)c;
    show_held(cr);
    if (cr->ready_seq == f->seq) { /* its tiles came first */
        f->v3 = cr->ready;
        memset(&cr->ready, 0, sizeof cr->ready);
        cr->ready_seq = 0;
    } else if (cr->tiles_seq && cr->tiles_seq + 1 == f->seq) { /* tiles of this one will come */
        cr->held = f;
        cr->held_boids = boids;
        cr->held_paused = paused;
        cr->held_ns = clock_mono_ns();
        return;
    }
    room_relay_frame(cr->room, f, boids, paused);
}

/* Tiles of frame seq for cr: onto the frame that waits for them, or
 * waiting for it (v3 taken). Under lock. */
static void pair_tiles(struct croom *cr, uint64_t seq, struct frame_v3 *v3)
{
    struct tileinbox_out old = {.v3 = cr->ready};
    cr->tiles_seq = seq;
    if (cr->held && cr->held->seq == seq) {
        cr->held->v3 = *v3;
        show_held(cr);
    } else {
        if (cr->held && cr->held->seq < seq)
            show_held(cr);
        tileinbox_out_free(&old);
        cr->ready = *v3;
        cr->ready_seq = seq;
    }
    memset(v3, 0, sizeof *v3);
}

/* The relay's room of a tiles subject, flockd.room.NAME.tiles.NODE (this
 * node), with a reference on its tiles and its term seen: NULL if none. */
static struct ctiles *tiles_room(struct cluster *c, const char *subject, uint64_t *term_seen)
{
    struct ctiles *ct = NULL;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms && !c->quiet && !ct; i++) {
        struct croom *cr = c->rooms[i];
        char mine[SUBJECT_MAX];
        snprintf(mine, sizeof mine, "flockd.room.%s.tiles.%s", cr->name, c->node);
        if (!cr->owner && cr->ct && strcmp(mine, subject) == 0) {
            ct = ct_ref(cr->ct);
            *term_seen = cr->term_seen;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return ct;
}

static void on_tiles(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    uint64_t term_seen = 0;
    struct ctiles *ct = tiles_room(c, natsMsg_GetSubject(msg), &term_seen);
    const uint8_t *data = (const uint8_t *)natsMsg_GetData(msg);
    size_t len = (size_t)natsMsg_GetDataLength(msg);
    struct tileinbox_out out = {0};
    int rc = PROTO_E_NOT_FOUND;
    /* An older owner's (the term is the frame message's, bytes 8..15). */
    bool is_stale = len >= TILEFEED_HEADER && bytes_le_get(data + 8, 8) < term_seen;
    if (ct && !is_stale) {
        pthread_mutex_lock(&ct->lock);
        if (!ct->inbox)
            ct->inbox = tileinbox_create(&ct->grid, ct->need);
        rc = ct->inbox ? tileinbox_take(ct->inbox, data, len, &out) : PROTO_E_INTERNAL;
        pthread_mutex_unlock(&ct->lock);
    }
    natsMsg_Destroy(msg);
    if (is_stale)
        COUNT(c, tiles_stale);
    if (out.restart) {
        atomic_store(&ct->restart, true);
        COUNT(c, tiles_restarts);
    }
    if (rc < 0 && rc != PROTO_E_NO_BASE && !is_stale)
        cluster__reject(c, "a tiles message that does not read");
    if (rc == 0) {
        COUNT(c, tiles_received);
        atomic_fetch_add_explicit(&c->n.tiles_bytes, len, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->n.tiles_parts, out.parts, memory_order_relaxed);
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < c->nrooms && !c->quiet; i++)
            if (c->rooms[i]->ct == ct && !c->rooms[i]->owner)
                pair_tiles(c->rooms[i], out.frame_seq, &out.v3);
        pthread_mutex_unlock(&c->lock);
    }
    tileinbox_out_free(&out);
    ct_release(ct);
}

/* The audiences a relayed room's clients may take before any of them
 * noted a plan: every boid's and, in an rts room, the spectators'. */
static uint32_t first_audiences(struct room *r, uint8_t *also)
{
    also[0] = 0;
    also[1] = TILENEED_DELAYED;
    return room_mode(r) == PROTO_MODE_RTS ? 2 : 1;
}

/* Relayed room cr's view message to its owner, if its clients want
 * anything; the super-tiles it asks for added to *wanted. Under lock. */
static void send_view(struct cluster *c, struct croom *cr, bool advance, int64_t *wanted)
{
    struct ctiles *ct = cr->ct;
    bool restart = atomic_exchange(&ct->restart, false), news = tileneed_take_news(ct->need);
    if (!advance && !restart && !news)
        return;
    uint8_t also[2];
    bool takes_v3 = room_relay_wanted(cr->room) & 1u << FRAME_WANT_V3;
    struct tilefeed_want want = {.restart = restart, .cols = ct->grid.cols, .rows = ct->grid.rows};
    snprintf(want.node, sizeof want.node, "%s", c->node);
    if (tileneed_take(ct->need, TILE_LINGER, also, takes_v3 ? first_audiences(cr->room, also) : 0,
                      &want.w) < 0)
        return;
    if (advance)
        tileneed_advance(ct->need);
    *wanted += (int64_t)tileneed_wants_count(&want.w);
    uint8_t *buf = NULL;
    int len = want.w.naudiences ? tilefeed_want_encode(&want, &buf) : 0;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.view", cr->name);
    if (len > 0)
        natsConnection_Publish(c->nc, subject, buf, len);
    free(buf);
    tilefeed_want_free(&want);
}

void cluster__tiles_step(struct cluster *c, bool advance, int64_t now)
{
    int64_t wanted = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms && !c->quiet; i++) {
        struct croom *cr = c->rooms[i];
        if (cr->owner || !cr->ct)
            continue;
        if (cr->held && (double)(now - cr->held_ns) > TILE_HOLD_S * 1e9)
            show_held(cr);
        if (cluster__is_connected(c))
            send_view(c, cr, advance, &wanted);
    }
    pthread_mutex_unlock(&c->lock);
    if (advance)
        atomic_store(&c->n.tiles_wanted, wanted);
}

static void subscribe_tiles(struct cluster *c, natsSubscription **s, const char *subject,
                            natsMsgHandler cb)
{
    if (*s)
        return;
    if (natsConnection_Subscribe(s, c->nc, subject, cb, c) != NATS_OK)
        *s = NULL;
    else /* a relay that falls behind drops, and asks for keys */
        natsSubscription_SetPendingLimits(*s, 64, 64 * 1024 * 1024);
}

void cluster__tiles_resubscribe(struct cluster *c, struct croom *cr)
{
    char subject[SUBJECT_MAX];
    if (!cr->ct)
        return;
    if (cr->owner) {
        cluster__unsubscribe(&cr->tiles);
        drop_pairing(cr);
        snprintf(subject, sizeof subject, "flockd.room.%s.view", cr->name);
        subscribe_tiles(c, &cr->views, subject, on_view);
    } else {
        cluster__unsubscribe(&cr->views); /* its feeds are fed no more, and lapse */
        snprintf(subject, sizeof subject, "flockd.room.%s.tiles.%s", cr->name, c->node);
        subscribe_tiles(c, &cr->tiles, subject, on_tiles);
    }
}
