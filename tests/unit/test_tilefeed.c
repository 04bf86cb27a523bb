/*
 * Unit tests for version 3's tiles between a cluster's nodes (cluster/
 * tilefeed.h), without NATS: an owner's tilesets go through the feed of a
 * relay, its tiles messages, the relay's inbox, and a client of each node
 * with the same view gets the same frames, byte for byte, as it pans,
 * zooms out to a sample with fields and back, through a lost message and
 * a new owner; the relay is sent only the super-tiles its client looks at
 * (and a ring while it pans); the view message round-trips; and malformed
 * messages are refused, never trusted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sim.h"
#include "tilefeed.h"
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an owner's room: tilesets per snapshot, as frames ---- */

struct owner {
    struct sim_world *sim;
    struct tiles_grid grid;
    struct tilestate *hist[TILES_KEEP];
    uint32_t seq;
};

static void owner_init(struct owner *o, uint32_t boids, float width, float height)
{
    memset(o, 0, sizeof *o);
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = width;
    cfg.height = height;
    cfg.capacity = boids;
    cfg.seed = 7;
    o->sim = sim_create(&cfg, NULL);
    assert_non_null(o->sim);
    assert_int_equal(sim_scatter(o->sim, boids, 0), (int)boids);
    tiles_grid_for(width, height, 400, 100, &o->grid);
}

/* The room goes on on another node: from its checkpoint, with no state
 * kept and its snapshots numbered on past every base a client holds. */
static void owner_moves(struct owner *o)
{
    for (int k = 0; k < TILES_KEEP; k++) {
        tiles_state_release(o->hist[k]);
        o->hist[k] = NULL;
    }
    o->seq += TILES_KEEP + 1;
}

static void owner_free(struct owner *o)
{
    for (int k = 0; k < TILES_KEEP; k++)
        tiles_state_release(o->hist[k]);
    sim_destroy(o->sim);
}

/* The next snapshot as a frame holding its tileset of every boid. */
static struct frame *owner_next(struct owner *o)
{
    for (int k = 0; k < 3; k++)
        sim_step(o->sim);
    struct sim_view v;
    sim_view(o->sim, &v);
    struct tiles_input in = {.grid = &o->grid, .world = &v, .seq = ++o->seq};
    struct tilestate *s = tiles_state_build(&in);
    assert_non_null(s);
    struct proto_obstacle ob = {.id = 1, .x = 100, .y = 200, .r = 30};
    struct tiles_meta meta = {.tick = v.tick, .time_us = 1000 * o->seq, .room_boids = v.count};
    struct frame *f = calloc(1, sizeof *f);
    f->refs = 1;
    f->seq = o->seq + 100; /* frames number apart from snapshots' states */
    f->v3.count = 1;
    f->v3.sets = calloc(1, sizeof *f->v3.sets);
    f->v3.sets[0] = tiles_set_create(s, o->hist, &meta, &ob, 1, NULL, 0);
    tiles_state_release(o->hist[TILES_KEEP - 1]);
    memmove(o->hist + 1, o->hist, (TILES_KEEP - 1) * sizeof o->hist[0]);
    o->hist[0] = s;
    return f;
}

/* ---- a relay: its need, its inbox, and the message between them ---- */

struct relay {
    struct tileneed *need;
    struct tileinbox *inbox;
    struct tilefeed *feed; /* the owner's of this relay */
    struct proto_v3_encoder *enc;
    uint8_t *buf;
    size_t cap;
    bool restart;
};

static void relay_init(struct relay *r, const struct tiles_grid *g)
{
    const char *err;
    memset(r, 0, sizeof *r);
    r->need = tileneed_create(g->cols, g->rows);
    r->inbox = tileinbox_create(g, r->need);
    r->feed = tilefeed_create("relay-1");
    r->enc = proto_v3_encoder_create(100000, &err);
    assert_non_null(r->need);
    assert_non_null(r->inbox);
    assert_non_null(r->feed);
    assert_non_null(r->enc);
}

static void relay_free(struct relay *r)
{
    tileinbox_destroy(r->inbox);
    tilefeed_destroy(r->feed);
    tileneed_release(r->need);
    proto_v3_encoder_destroy(r->enc);
    free(r->buf);
}

/* The relay's view message, through its bytes, to the owner's feed; the
 * super-tiles it asks for. */
static uint64_t relay_asks(struct relay *r, const struct tiles_grid *g, bool advance)
{
    static const uint8_t all[] = {0};
    struct tilefeed_want want = {.restart = r->restart, .cols = g->cols, .rows = g->rows};
    strcpy(want.node, "relay-1");
    r->restart = false;
    assert_int_equal(tileneed_take(r->need, 5, all, 1, &want.w), 0);
    if (advance)
        tileneed_advance(r->need);
    uint64_t n = tileneed_wants_count(&want.w);
    uint8_t *buf;
    int len = tilefeed_want_encode(&want, &buf);
    assert_true(len > 0);
    tilefeed_want_free(&want);
    struct tilefeed_want got;
    assert_int_equal(tilefeed_want_decode(buf, (size_t)len, &got), 0);
    assert_string_equal(got.node, "relay-1");
    tilefeed_set_want(r->feed, &got, 1);
    tilefeed_want_free(&got);
    free(buf);
    return n;
}

/* The owner's tiles message of f for the relay: its length (0: none). */
static ptrdiff_t owner_sends(struct relay *r, const struct frame *f, uint64_t term)
{
    ptrdiff_t len = tilefeed_message(r->feed, f, term, r->enc, &r->buf, &r->cap);
    assert_true(len >= 0);
    tilefeed_sent(r->feed, len > 0);
    return len;
}

/* The relay takes the message: its tileset of every boid (a reference),
 * or NULL when it asked for keys instead. */
static struct tileset *relay_takes(struct relay *r, size_t len, uint32_t *parts)
{
    struct tileinbox_out out;
    int rc = tileinbox_take(r->inbox, r->buf, len, &out);
    if (rc) {
        assert_true(out.restart);
        r->restart = true;
        return NULL;
    }
    assert_int_equal(out.v3.count, 1);
    struct tileset *ts = tiles_set_ref(out.v3.sets[0]);
    if (parts)
        *parts = out.parts;
    tileinbox_out_free(&out);
    return ts;
}

static void frame_free(struct frame *f)
{
    tiles_set_release(f->v3.sets[0]);
    free(f->v3.sets);
    free(f);
}

static struct view_req view(float x, float y, float w, float h, uint32_t px, uint32_t budget)
{
    return (struct view_req){.args = {.x = x, .y = y, .w = w, .h = h, .px = px, .budget = budget}};
}

/* One client on the owner and one on the relay, with the same feeds. */
struct pair {
    struct view_feed on_owner, on_relay;
    struct view_scratch xo, xr;
    struct proto_v3_decoder *d;
    uint32_t same, passed;
};

/*
 * Each client's frame of its node's tileset: the relay's client first; a
 * snapshot it passes (its tiles not there yet) the owner's passes too, so
 * that both hold the same frames; else both frames must be equal.
 */
static void serve(struct pair *p, struct tileset *owner_ts, struct tileset *relay_ts, int64_t now)
{
    struct view_made m = {0};
    ptrdiff_t lr =
        relay_ts ? view_frame(relay_ts, &p->on_relay, 0, 2000000, 20, now, &p->xr, &m) : 0;
    if (lr <= 0) {
        p->passed++;
        return;
    }
    ptrdiff_t lo = view_frame(owner_ts, &p->on_owner, 0, 2000000, 20, now, &p->xo, NULL);
    assert_int_equal(lo, lr);
    assert_memory_equal(p->xo.buf + p->xo.pre, p->xr.buf + p->xr.pre, (size_t)lr);
    const struct proto_v3_frame *fr;
    assert_int_equal(proto_v3_decode(p->d, p->xr.buf + p->xr.pre, (size_t)lr, &fr), 0);
    p->same++;
}

static void pair_init(struct pair *p, struct view_req req)
{
    const char *err;
    memset(p, 0, sizeof *p);
    p->on_owner.req = p->on_relay.req = req;
    p->xo.pre = p->xr.pre = 16;
    p->d = proto_v3_decoder_create(100000, 4096, 8, 4, &err);
    assert_non_null(p->d);
}

static void pair_free(struct pair *p)
{
    view_scratch_free(&p->xo);
    view_scratch_free(&p->xr);
    proto_v3_decoder_destroy(p->d);
}

static void a_relays_client_gets_the_owners_frames_as_it_pans_and_zooms(void **state)
{
    (void)state;
    struct owner o;
    owner_init(&o, 20000, 16000, 10000); /* 40 x 25 tiles */
    struct relay r;
    relay_init(&r, &o.grid);
    struct pair p;
    pair_init(&p, view(4000, 3000, 1600, 900, 1600, 0));
    for (int f = 0; f < 60; f++) {
        if (f >= 15 && f < 25)
            p.on_owner.req.args.x = p.on_relay.req.args.x += 150; /* pans */
        if (f == 30) /* zooms out: a shift and a sample, with fields */
            p.on_owner.req = p.on_relay.req = view(0, 0, 16000, 10000, 1280, 40000);
        if (f == 45)
            p.on_owner.req = p.on_relay.req = view(8000, 5000, 1200, 800, 1200, 0);
        relay_asks(&r, &o.grid, f % 4 == 0);
        struct frame *fr = owner_next(&o);
        ptrdiff_t len = owner_sends(&r, fr, 1);
        struct tileset *ts = len > 0 ? relay_takes(&r, (size_t)len, NULL) : NULL;
        serve(&p, fr->v3.sets[0], ts, f * 50000000ll); /* 20 snapshots a second */
        tiles_set_release(ts);
        frame_free(fr);
    }
    /* A snapshot or two passed at the start and after each change of view. */
    assert_true(p.same >= 50);
    assert_true(p.passed <= 10);
    pair_free(&p);
    relay_free(&r);
    owner_free(&o);
}

static void the_relay_is_sent_only_the_super_tiles_its_client_looks_at(void **state)
{
    (void)state;
    struct owner o;
    owner_init(&o, 20000, 16000, 10000);
    struct relay r;
    relay_init(&r, &o.grid);
    struct pair p;
    /* x 3980..5620: tiles 9..14, y 2980..3920: tiles 7..9 (test_view.c). */
    pair_init(&p, view(4000, 3000, 1600, 900, 1600, 0));
    uint32_t parts = 0;
    uint64_t asked = 0;
    for (int f = 0; f < 12; f++) {
        if (f == 6) /* pans a tile: a ring around the rect while it moves */
            p.on_owner.req.args.x = p.on_relay.req.args.x += 400;
        asked = relay_asks(&r, &o.grid, false);
        struct frame *fr = owner_next(&o);
        ptrdiff_t len = owner_sends(&r, fr, 1);
        struct tileset *ts = relay_takes(&r, (size_t)len, &parts);
        serve(&p, fr->v3.sets[0], ts, f * 50000000ll); /* 20 snapshots a second */
        if (f == 0)
            assert_int_equal(parts, 0); /* the counts alone: no client noted a plan yet */
        if (f == 5)                     /* a still view: its rect alone */
            assert_true(asked == 6 * 3 && parts == 6 * 3);
        tiles_set_release(ts);
        frame_free(fr);
    }
    assert_true(asked == 8 * 5 && parts == 8 * 5); /* x 10..15, y 7..9, and the ring */
    assert_true(p.passed <= 2);
    /* The client goes: what it looked at lapses after the linger. */
    for (int k = 0; k < 6; k++)
        asked = relay_asks(&r, &o.grid, true);
    assert_int_equal(asked, 0);
    pair_free(&p);
    relay_free(&r);
    owner_free(&o);
}

static void a_lost_message_or_a_new_owner_restarts_on_keys(void **state)
{
    (void)state;
    struct owner o;
    owner_init(&o, 8000, 6400, 4000);
    struct relay r;
    relay_init(&r, &o.grid);
    struct pair p;
    pair_init(&p, view(1000, 1000, 1600, 900, 1600, 0));
    uint32_t restarts = 0;
    for (int f = 0; f < 30; f++) {
        if (f == 20) { /* a new owner: its feed of the relay starts afresh */
            owner_moves(&o);
            tilefeed_destroy(r.feed);
            r.feed = tilefeed_create("relay-1");
        }
        relay_asks(&r, &o.grid, false);
        struct frame *fr = owner_next(&o);
        ptrdiff_t len = owner_sends(&r, fr, f < 20 ? 1 : 2); /* a new owner at 20 */
        struct tileset *ts = f == 10 ? NULL : relay_takes(&r, (size_t)len, NULL); /* lost */
        restarts += f > 10 && !ts && r.restart;
        serve(&p, fr->v3.sets[0], ts, f * 50000000ll); /* 20 snapshots a second */
        tiles_set_release(ts);
        frame_free(fr);
    }
    assert_int_equal(restarts, 1); /* the delta after the lost one named a base not held */
    assert_true(p.same >= 24);
    assert_int_equal(tileinbox_term(r.inbox), 2);
    pair_free(&p);
    relay_free(&r);
    owner_free(&o);
}

/* With FLOCKD_FUZZ_SEEDS=DIR, a message into DIR/name: seeds for
 * tests/fuzz/fuzz_cluster.c, whose inbox has this test's grid. */
static void write_seed(const char *name, const uint8_t *buf, size_t len)
{
    const char *dir = getenv("FLOCKD_FUZZ_SEEDS");
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void malformed_messages_are_refused(void **state)
{
    (void)state;
    struct owner o;
    owner_init(&o, 4000, 3200, 2000);
    struct relay r;
    relay_init(&r, &o.grid);
    tileneed_note(r.need, 0, 0, 0, 1, 1, 3, 2, true);
    relay_asks(&r, &o.grid, false);
    struct frame *fr = owner_next(&o);
    ptrdiff_t len = owner_sends(&r, fr, 1);
    assert_true(len > TILEFEED_HEADER);
    uint8_t *copy = malloc((size_t)len);
    memcpy(copy, r.buf, (size_t)len);
    write_seed("tiles-3200x2000", copy, (size_t)len);
    struct tileinbox_out out;
    /* Truncations and bytes changed (each in the headers, then some of
     * the parts'): refused, or (a byte no check covers, such as a time
     * stamp) taken. */
    for (ptrdiff_t n = 0; n < len; n += n < 256 ? 1 : 29)
        assert_true(tileinbox_take(r.inbox, copy, (size_t)n, &out) < 0);
    uint32_t refused = 0, changed = 0;
    for (ptrdiff_t at = 0; at < len; at += at < 128 ? 1 : 5, changed++) {
        struct tileinbox *fresh = tileinbox_create(&o.grid, r.need);
        copy[at] ^= 0x5a;
        int rc = tileinbox_take(fresh, copy, (size_t)len, &out);
        refused += rc < 0;
        if (rc == 0)
            tileinbox_out_free(&out);
        copy[at] ^= 0x5a;
        tileinbox_destroy(fresh);
    }
    assert_true(refused > changed * 8 / 10);
    /* The whole message is good. */
    assert_int_equal(tileinbox_take(r.inbox, copy, (size_t)len, &out), 0);
    tileinbox_out_free(&out);
    /* View messages: a bad magic, a truncation, a bit past the grid. */
    struct tilefeed_want want = {.cols = 8, .rows = 5}, got;
    strcpy(want.node, "n1");
    want.w.naudiences = 1;
    want.w.nlayers = 1;
    uint8_t bits[5] = {0x01, 0, 0, 0, 0};
    want.w.layers[0] = (struct tileneed_layer){.gc = 8, .gr = 5, .bits = bits};
    uint8_t *buf;
    int n = tilefeed_want_encode(&want, &buf);
    assert_true(n > 0);
    write_seed("want-8x5", buf, (size_t)n);
    assert_int_equal(tilefeed_want_decode(buf, (size_t)n, &got), 0);
    tilefeed_want_free(&got);
    for (int k = 0; k < n; k++)
        assert_true(tilefeed_want_decode(buf, (size_t)k, &got) < 0);
    buf[n - 1] = 0x80; /* super-tile 39 of 40: fine */
    assert_int_equal(tilefeed_want_decode(buf, (size_t)n, &got), 0);
    tilefeed_want_free(&got);
    buf[0] = 'X';
    assert_int_equal(tilefeed_want_decode(buf, (size_t)n, &got), PROTO_E_BAD_MAGIC);
    free(buf);
    want.w.layers[0] = (struct tileneed_layer){.gc = 4, .gr = 3, .shift = 1, .bits = bits};
    bits[1] = 0x10; /* bit 12 of 12 super-tiles */
    n = tilefeed_want_encode(&want, &buf);
    assert_int_equal(tilefeed_want_decode(buf, (size_t)n, &got), PROTO_E_BAD_VALUE);
    free(buf);
    free(copy);
    frame_free(fr);
    relay_free(&r);
    owner_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_relays_client_gets_the_owners_frames_as_it_pans_and_zooms),
        cmocka_unit_test(the_relay_is_sent_only_the_super_tiles_its_client_looks_at),
        cmocka_unit_test(a_lost_message_or_a_new_owner_restarts_on_keys),
        cmocka_unit_test(malformed_messages_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
