/*
 * Unit tests for a version 3 client's frames (stream/view.h): the plan
 * covers the view and its margin, picks a shift that keeps the rect
 * within VIEW_RECT_MAX and a sample that keeps a frame within the budget;
 * frames of a view that pans and zooms over a moving flock decode (with
 * the version 3 decoder) to exactly the tiles' boids of the rect, parts
 * that stayed in view as deltas, new ones as keys; a view frame's boids in
 * the rect are the whole stream's there; a keyframe restart sends keys; a
 * budget below the frames' size paces them, and one they fit takes every
 * snapshot however unevenly they come; clients that hold the same frames
 * share one splice.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sim.h"
#include "view.h"

#include <stdlib.h>
#include <string.h>

struct world {
    struct sim_world *sim;
    struct tiles_grid grid;
    struct tilestate *hist[TILES_KEEP + 1];
    uint32_t seq;
};

static void world_init(struct world *w, uint32_t boids, float width, float height, float tile)
{
    memset(w, 0, sizeof *w);
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = width;
    cfg.height = height;
    cfg.capacity = boids;
    cfg.seed = 11;
    w->sim = sim_create(&cfg, NULL);
    assert_non_null(w->sim);
    assert_int_equal(sim_scatter(w->sim, boids, 0), (int)boids);
    tiles_grid_for(width, height, tile, 100, &w->grid);
}

static void world_free(struct world *w)
{
    for (int k = 0; k <= TILES_KEEP; k++)
        tiles_state_release(w->hist[k]);
    sim_destroy(w->sim);
}

/* The next snapshot's tileset (a reference for the caller). */
static struct tileset *next(struct world *w)
{
    for (int k = 0; k < 3; k++)
        sim_step(w->sim);
    struct sim_view v;
    sim_view(w->sim, &v);
    struct tiles_input in = {.grid = &w->grid, .world = &v, .seq = ++w->seq};
    tiles_state_release(w->hist[TILES_KEEP]);
    memmove(w->hist + 1, w->hist, TILES_KEEP * sizeof w->hist[0]);
    w->hist[0] = tiles_state_build(&in);
    assert_non_null(w->hist[0]);
    struct tiles_meta meta = {.tick = v.tick, .room_boids = v.count};
    return tiles_set_create(w->hist[0], w->hist + 1, &meta, NULL, 0, NULL, 0);
}

static struct view_req view(float x, float y, float w, float h, uint32_t px, uint32_t budget)
{
    return (struct view_req){.args = {.x = x, .y = y, .w = w, .h = h, .px = px, .budget = budget}};
}

static void the_plan_covers_the_view_with_a_margin_and_fits_the_budget(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 20000, 16000, 10000, 400); /* 40 x 25 tiles */
    struct tileset *ts = next(&w);
    struct tilestate *s = tiles_set_state(ts);
    struct view_plan p;
    struct view_req whole = {.whole = true};
    view_plan(s, &w.grid, 0, &whole, 40000, 20, &p);
    assert_int_equal(p.shift, 0);
    assert_int_equal(p.sample, 0);
    assert_int_equal(p.rect_cols, 40);
    assert_int_equal(p.boids, 20000);
    /* 1600 x 900 at (4000, 3000) and a margin of 20 units (4 snapshots at
     * 100 units/s): x 3980..5620, tiles 9..14; y 2980..3920, tiles 7..9. */
    struct view_req r = view(4000, 3000, 1600, 900, 1600, 10000000);
    view_plan(s, &w.grid, 0, &r, 2000000, 20, &p);
    assert_int_equal(p.shift, 0);
    assert_int_equal(p.rect_x, 9);
    assert_int_equal(p.rect_cols, 6);
    assert_int_equal(p.rect_y, 7);
    assert_int_equal(p.rect_rows, 3);
    assert_int_equal(p.sample, 0);
    assert_true(p.rate == 20);
    /* Across the seam on a torus: x 15480..16020, tiles 38, 39 and 0. */
    r = view(15500, 0, 500, 100, 500, 10000000);
    view_plan(s, &w.grid, 0, &r, 2000000, 20, &p);
    assert_int_equal(p.rect_x, 38);
    assert_int_equal(p.rect_cols, 3);
    /* The whole world in a 1280-pixel window on a 40 kB/s budget: a
     * shift, a sample, and a frame within 2 kB. */
    r = view(0, 0, 16000, 10000, 1280, 40000);
    view_plan(s, &w.grid, 0, &r, 2000000, 20, &p);
    assert_true(p.shift >= 2);
    assert_true(p.rect_cols <= VIEW_RECT_MAX && p.rect_rows <= VIEW_RECT_MAX);
    assert_true(p.sample > 0);
    assert_true(p.bytes <= 2000);
    assert_true(p.rate == 20);
    /* A budget below even the smallest frame: the rate drops instead. */
    r = view(0, 0, 16000, 10000, 1280, 1000);
    view_plan(s, &w.grid, 0, &r, 2000000, 20, &p);
    assert_true(p.rate < 20);
    tiles_set_release(ts);
    world_free(&w);
}

/* Decodes f and checks every part holds exactly its super-tile's boids of
 * the view the tileset has at the frame's shift and sample. */
static void check_frame(struct proto_v3_decoder *d, struct tileset *ts, const uint8_t *buf,
                        size_t len, uint32_t *keys)
{
    const struct proto_v3_frame *fr;
    int rc = proto_v3_decode(d, buf, len, &fr);
    if (rc)
        fail_msg("decode: %s", proto_status_name(rc));
    const struct tiles_view *v = tiles_state_view(tiles_set_state(ts), fr->h.shift, fr->h.sample);
    for (uint32_t k = 0; k < fr->part_count; k++) {
        const struct proto_v3_part *p = &fr->parts[k];
        uint32_t st = p->ty * v->gc + p->tx, a = v->b.start[st];
        assert_int_equal(p->count, v->b.start[st + 1] - a);
        assert_memory_equal(p->id, v->b.id + a, p->count * 4);
        assert_memory_equal(p->qx, v->b.qx + a, p->count * 2);
        assert_memory_equal(p->qy, v->b.qy + a, p->count * 2);
    }
    (void)keys;
}

static void a_panning_view_decodes_to_its_tiles_keys_only_where_new(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 6000, 6400, 4000, 400); /* 16 x 10 tiles */
    struct view_feed feed = {.req = view(800, 800, 1600, 1000, 1600, 0)};
    struct view_scratch x = {.pre = 16};
    const char *err;
    struct proto_v3_decoder *d = proto_v3_decoder_create(10000, 256, 8, 4, &err);
    uint32_t panned_keys = 0;
    size_t zoomed_out = 0, largest = 0; /* bytes sent at the small budget, its largest frame */
    for (int f = 0; f < 24; f++) {
        struct tileset *ts = next(&w);
        if (f >= 8 && f < 16)
            feed.req.args.x += 200; /* pans half a tile a frame */
        if (f == 16)
            feed.req = view(0, 0, 6400, 4000, 640, 60000); /* zooms out */
        if (f == 20)
            view_feed_restart(&feed); /* as after a keyframe command */
        struct view_made m;
        ptrdiff_t len = view_frame(ts, &feed, 0, 2000000, 20, f * 50000000ll, &x, &m);
        assert_true(len > 0 || (len == 0 && f > 16 && f != 20)); /* held by its budget */
        if (f >= 16) {
            zoomed_out += (size_t)len;
            largest = (size_t)len > largest ? (size_t)len : largest;
        }
        if (len == 0) {
            tiles_set_release(ts);
            continue;
        }
        check_frame(d, ts, x.buf + x.pre, (size_t)len, NULL);
        if (f == 0 || f == 16 || f == 20)
            assert_int_equal(m.keys, m.parts); /* a new stream, shift or sample: all keys */
        else if (f < 8 || (f > 16 && f < 20) || f > 20)
            assert_int_equal(m.keys, 0); /* a still view: every part a delta */
        else if (f < 16)                 /* panning: the new column only, one every other frame */
            assert_true(m.keys <= 4), panned_keys += m.keys;
        tiles_set_release(ts);
    }
    assert_int_equal(panned_keys, 4 * 4); /* four new columns of four tiles */
    /* Zoomed out, 60,000 bytes a second for 8 snapshots of 50 ms: the budget
     * holds, but for the key frames the restart sends at once. */
    assert_true(zoomed_out <= 60000 * 8 / 20 + 2 * largest);
    view_scratch_free(&x);
    proto_v3_decoder_destroy(d);
    world_free(&w);
}

static void a_view_holds_the_whole_streams_boids_in_its_rect(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 4000, 3200, 2000, 400);
    struct view_feed whole = {.req = {.whole = true}};
    struct view_feed part = {.req = view(1000, 600, 800, 500, 800, 0)};
    struct view_scratch x = {.pre = 16};
    const char *err;
    struct proto_v3_decoder *dw = proto_v3_decoder_create(10000, 256, 8, 4, &err);
    struct proto_v3_decoder *dp = proto_v3_decoder_create(10000, 256, 8, 4, &err);
    for (int f = 0; f < 5; f++) {
        struct tileset *ts = next(&w);
        const struct proto_v3_frame *fw, *fp;
        ptrdiff_t len = view_frame(ts, &whole, 0, 2000000, 20, f * 50000000ll, &x, NULL);
        assert_int_equal(proto_v3_decode(dw, x.buf + x.pre, (size_t)len, &fw), 0);
        len = view_frame(ts, &part, 0, 2000000, 20, f * 50000000ll, &x, NULL);
        assert_int_equal(proto_v3_decode(dp, x.buf + x.pre, (size_t)len, &fp), 0);
        /* Every boid of the whole stream inside the view is in the view's frame. */
        uint32_t inside = 0, found = 0;
        for (uint32_t k = 0; k < fw->part_count; k++) {
            const struct proto_v3_part *a = &fw->parts[k];
            for (uint32_t i = 0; i < a->count; i++) {
                double bx = (a->qx[i] + 0.5) * 3200 / 65536, by = (a->qy[i] + 0.5) * 2000 / 65536;
                if (bx < 1000 || bx > 1800 || by < 600 || by > 1100)
                    continue;
                inside++;
                for (uint32_t j = 0; j < fp->part_count; j++)
                    for (uint32_t q = 0; q < fp->parts[j].count; q++)
                        found += fp->parts[j].id[q] == a->id[i] && fp->parts[j].qx[q] == a->qx[i] &&
                                 fp->parts[j].qy[q] == a->qy[i];
            }
        }
        assert_true(inside > 100);
        assert_int_equal(found, inside);
        tiles_set_release(ts);
    }
    view_scratch_free(&x);
    proto_v3_decoder_destroy(dw);
    proto_v3_decoder_destroy(dp);
    world_free(&w);
}

static void a_small_budget_paces_the_frames(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 20000, 6400, 4000, 400);
    struct view_feed feed = {.req = view(0, 0, 6400, 4000, 6400, 1000)};
    struct view_scratch x = {.pre = 16};
    int sent = 0;
    for (int f = 0; f < 40; f++) {
        struct tileset *ts = next(&w);
        int64_t now = (int64_t)f * 50000000; /* 20 snapshots a second, for 2 s */
        ptrdiff_t len = view_frame(ts, &feed, 0, 2000000, 20, now, &x, NULL);
        assert_true(len >= 0);
        sent += len > 0;
        tiles_set_release(ts);
    }
    assert_true(sent >= 1 && sent < 40);
    view_scratch_free(&x);
    world_free(&w);
}

/* Snapshots 67 and 33 ms apart, as 20 a second come from 30 ticks. A
 * view whose frames fit its budget with a quarter to spare gets all of
 * them but the few its first frame (all keys) pays for; pacing each frame
 * from the one before held back most that came 33 ms after it. At a fifth
 * of that budget the bytes stay within it, plus a frame and a snapshot's
 * worth. */
static void a_budget_that_fits_takes_every_uneven_snapshot(void **state)
{
    (void)state;
    enum { FRAMES = 60 };
    size_t total = 0;
    for (int run = 0; run < 3; run++) {
        struct world w;
        world_init(&w, 4000, 3200, 2000, 400);
        /* Run 0 weighs the frames at an ample budget; runs 1 and 2 pace them. */
        double budget = run == 0 ? 1e8 : (double)total * 20 / FRAMES * (run == 1 ? 1.25 : 0.2);
        struct view_feed feed = {.req = view(1000, 600, 800, 500, 800, (uint32_t)budget)};
        struct view_scratch x = {.pre = 16};
        int sent = 0;
        size_t bytes = 0, largest = 0;
        int64_t now = 0;
        for (int f = 0; f < FRAMES; f++) {
            struct tileset *ts = next(&w);
            now = (int64_t)(3 * f + 1) / 2 * 33333333; /* ticks 0, 2, 3, 5, 6, ... */
            ptrdiff_t len = view_frame(ts, &feed, 0, 2000000, 20, now, &x, NULL);
            assert_true(len >= 0);
            sent += len > 0;
            bytes += (size_t)len;
            largest = (size_t)len > largest ? (size_t)len : largest;
            tiles_set_release(ts);
        }
        if (run == 0) {
            assert_int_equal(sent, FRAMES);
            total = bytes;
        } else if (run == 1) {
            assert_true(sent >= FRAMES - 3);
        } else { /* a coarser sample first, fewer frames second: the sum holds */
            assert_true((double)bytes <= budget * ((double)now / 1e9 + 0.05) + (double)largest);
            assert_true(bytes < total / 2);
        }
        view_scratch_free(&x);
        world_free(&w);
    }
}

/* A client that holds the same frames as the client before it (same
 * tileset, flags and plan) gets the frame spliced for that one, as it
 * is; any other client gets a frame of its own, byte for byte what a
 * scratch of its own splices. Each frame left in the shared scratch has
 * its last byte flipped, so that a frame taken from there shows. */
static void clients_holding_the_same_frames_share_one_splice(void **state)
{
    (void)state;
    enum { CLIENTS = 4 };
    struct world w;
    world_init(&w, 4000, 3200, 2000, 400);
    struct view_feed shared[CLIENTS], own[CLIENTS];
    struct view_scratch x = {.pre = 16}, y[CLIENTS];
    const uint8_t flags[CLIENTS] = {0, 0, 0, PROTO_V3_FLAG_FOGGED};
    for (int c = 0; c < CLIENTS; c++) {
        shared[c] = own[c] = (struct view_feed){.req = {.whole = true}};
        y[c] = (struct view_scratch){.pre = 16};
    }
    uint8_t *prev = NULL;
    size_t prev_len = 0;
    uint32_t taken = 0, spliced = 0;
    for (int f = 0; f < 10; f++) {
        struct tileset *ts = next(&w);
        if (f == 4) { /* client 2 restarts (a keyframe command): it holds nothing */
            view_feed_restart(&shared[2]);
            view_feed_restart(&own[2]);
        }
        int last = -1;
        struct view_sent held[CLIENTS][PROTO_V3_HISTORY];
        for (int c = 0; c < CLIENTS; c++) {
            if (c == 1 && f < 2)
                continue; /* client 1 comes two snapshots late */
            memcpy(held[c], own[c].sent, sizeof held[c]);
            int64_t now = f * 50000000ll;
            ptrdiff_t mine = view_frame(ts, &own[c], flags[c], 2000000, 20, now, &y[c], NULL);
            ptrdiff_t got = view_frame(ts, &shared[c], flags[c], 2000000, 20, now, &x, NULL);
            assert_true(mine > 0);
            assert_int_equal(got, mine);
            bool same = last >= 0 && flags[last] == flags[c] &&
                        memcmp(held[last], held[c], sizeof held[c]) == 0;
            if (same) { /* the previous client's frame, flipped byte and all */
                assert_int_equal((size_t)got, prev_len);
                assert_memory_equal(x.buf + x.pre, prev, prev_len);
                taken++;
            } else {
                assert_memory_equal(x.buf + x.pre, y[c].buf + y[c].pre, (size_t)mine);
                spliced++;
            }
            x.buf[x.pre + (size_t)got - 1] ^= 0xff;
            free(prev);
            prev = malloc((size_t)got);
            assert_non_null(prev);
            memcpy(prev, x.buf + x.pre, (size_t)got);
            prev_len = (size_t)got;
            last = c;
        }
        tiles_set_release(ts);
    }
    /* Clients 0 and 2 share from the start; client 1 joins them once the
     * frames it holds are theirs, client 2 again after its restart;
     * client 3's flags never match. */
    assert_true(taken >= 8);
    assert_true(spliced >= 14);
    free(prev);
    view_scratch_free(&x);
    for (int c = 0; c < CLIENTS; c++)
        view_scratch_free(&y[c]);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_plan_covers_the_view_with_a_margin_and_fits_the_budget),
        cmocka_unit_test(a_panning_view_decodes_to_its_tiles_keys_only_where_new),
        cmocka_unit_test(a_view_holds_the_whole_streams_boids_in_its_rect),
        cmocka_unit_test(a_small_budget_paces_the_frames),
        cmocka_unit_test(a_budget_that_fits_takes_every_uneven_snapshot),
        cmocka_unit_test(clients_holding_the_same_frames_share_one_splice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
