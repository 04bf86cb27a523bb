/*
 * Unit tests for a snapshot's tiles (stream/tiles.h): every boid lands in
 * the tile its quantized position names, in id order; views at a shift
 * and a sample hold exactly the sample's boids of each super-tile and a
 * field that counts every boid; a team's audience holds exactly the
 * visible boids; a tileset's parts decode (with the version 3 decoder) to
 * its views, as keys and as deltas on the snapshots before; a part asked
 * for by several threads at once is encoded once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto_sections.h"
#include "sim.h"
#include "tiles.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct sim_world *flock(uint32_t n)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = n + 100;
    cfg.seed = 5;
    struct sim_world *w = sim_create(&cfg, NULL);
    assert_non_null(w);
    assert_int_equal(sim_scatter(w, n / 2, 0), (int)(n / 2));
    assert_int_equal(sim_spawn(w, n - n / 2, 3, 800, 500, 300), (int)(n - n / 2));
    assert_int_equal(sim_despawn(w, 10, 0), 10); /* ids with gaps */
    return w;
}

static struct tilestate *state_of(struct sim_world *w, const struct tiles_grid *g, uint32_t seq)
{
    struct sim_view v;
    sim_view(w, &v);
    struct tiles_input in = {.grid = g, .world = &v, .seq = seq};
    struct tilestate *s = tiles_state_build(&in);
    assert_non_null(s);
    return s;
}

static void boids_land_in_their_tiles_in_id_order(void **state)
{
    (void)state;
    struct sim_world *w = flock(3000);
    struct tiles_grid g;
    tiles_grid_for(1600, 1000, 300, 100, &g);
    assert_int_equal(g.cols, 6);
    assert_int_equal(g.rows, 4);
    struct tilestate *s = state_of(w, &g, 1);
    const struct tiles_view *v = tiles_state_view(s, 0, 0);
    assert_non_null(v);
    assert_int_equal(v->b.count, 2990);
    sim_destroy(w);
    uint32_t seen = 0;
    for (uint32_t t = 0; t < 24; t++) {
        for (uint32_t k = v->b.start[t]; k < v->b.start[t + 1]; k++, seen++) {
            assert_int_equal(proto_v3_tile_of(v->b.qy[k], 4) * 6 + proto_v3_tile_of(v->b.qx[k], 6),
                             t);
            if (k > v->b.start[t])
                assert_true(v->b.id[k] > v->b.id[k - 1]);
        }
        assert_int_equal(tiles_state_count(s, t), v->b.start[t + 1] - v->b.start[t]);
    }
    assert_int_equal(seen, 2990);
    /* Rects of tiles, wrapping around the grid, count what their tiles hold. */
    for (uint32_t x = 0; x < 6; x++) {
        for (uint32_t y = 0; y < 4; y++) {
            for (uint32_t n = 1; n <= 6; n++) {
                uint64_t want = 0;
                for (uint32_t i = 0; i < n; i++)
                    for (uint32_t j = 0; j < 3; j++)
                        want += tiles_state_count(s, ((y + j) % 4) * 6 + (x + i) % 6);
                assert_int_equal(tiles_state_count_rect(s, x, y, n, 3), want);
            }
        }
    }
    assert_int_equal(tiles_state_count_rect(s, 0, 0, 6, 4), 2990);
    tiles_state_release(s);
}

static void views_hold_the_sample_by_super_tile_and_a_field_of_all(void **state)
{
    (void)state;
    struct sim_world *w = flock(3000);
    struct tiles_grid g;
    tiles_grid_for(1600, 1000, 300, 100, &g);
    struct tilestate *s = state_of(w, &g, 1);
    const struct tiles_view *base = tiles_state_view(s, 0, 0);
    const struct tiles_view *v = tiles_state_view(s, 1, 2);
    assert_non_null(v);
    assert_int_equal(v->gc, 3);
    assert_int_equal(v->gr, 2);
    uint32_t want = 0, fielded = 0;
    for (uint32_t k = 0; k < base->b.count; k++)
        want += proto_v3_in_sample(base->b.id[k], 2);
    assert_int_equal(v->b.count, want);
    for (uint32_t st = 0; st < 6; st++) {
        for (uint32_t k = v->b.start[st]; k < v->b.start[st + 1]; k++) {
            uint32_t tx = proto_v3_tile_of(v->b.qx[k], 6) >> 1,
                     ty = proto_v3_tile_of(v->b.qy[k], 4) >> 1;
            assert_int_equal(ty * 3 + tx, st);
            assert_true(proto_v3_in_sample(v->b.id[k], 2));
            if (k > v->b.start[st])
                assert_true(v->b.id[k] > v->b.id[k - 1]);
        }
        for (uint32_t c = 0; c < 16; c++)
            fielded += v->field[st].count[c];
    }
    assert_int_equal(fielded, base->b.count);       /* the field counts every boid */
    assert_ptr_equal(tiles_state_view(s, 1, 2), v); /* built once */
    tiles_state_release(s);
    sim_destroy(w);
}

static void a_teams_audience_holds_exactly_the_visible_boids(void **state)
{
    (void)state;
    struct sim_world *w = flock(1000);
    struct tiles_grid g;
    tiles_grid_for(1600, 1000, 400, 100, &g);
    struct tilestate *all = state_of(w, &g, 1);
    struct sim_view wv;
    sim_view(w, &wv);
    uint32_t *visible = calloc(wv.count, sizeof *visible), want = 0;
    for (uint32_t i = 0; i < wv.count; i++) {
        visible[i] = (wv.id[i] % 3 == 0) << 2; /* team 2 sees a third */
        want += wv.id[i] % 3 == 0;
    }
    struct tilestate *team = tiles_state_filter(all, &wv, visible, 2);
    assert_non_null(team);
    const struct tiles_view *v = tiles_state_view(team, 0, 0);
    assert_int_equal(v->b.count, want);
    for (uint32_t k = 0; k < v->b.count; k++)
        assert_int_equal(v->b.id[k] % 3, 0);
    free(visible);
    tiles_state_release(team);
    tiles_state_release(all);
    sim_destroy(w);
}

/* A frame of every super-tile of view (shift, sample) of ts, parts
 * chosen: keys when gap1 is 0, else deltas on (gap1, gap0). */
static size_t frame_of(struct tileset *ts, unsigned shift, unsigned sample, unsigned gap1,
                       unsigned gap0, struct proto_v3_encoder *enc, uint8_t *buf)
{
    struct tilestate *s = tiles_set_state(ts);
    const struct tiles_grid *g = tiles_state_grid(s);
    const struct tiles_view *v = tiles_state_view(s, shift, sample);
    struct proto_v3_header h = {.cols = g->cols,
                                .rows = g->rows,
                                .shift = (uint8_t)shift,
                                .sample = (uint8_t)sample,
                                .rect_cols = (uint8_t)v->gc,
                                .rect_rows = (uint8_t)v->gr,
                                .seq = tiles_state_seq(s),
                                .width = g->width,
                                .height = g->height};
    size_t at = PROTO_V3_HEADER_SIZE;
    for (uint32_t st = 0; st < v->gc * v->gr; st++) {
        struct tiles_part p;
        assert_int_equal(tiles_set_part(ts, shift, sample, st, gap1, gap0, enc, &p), 0);
        memcpy(buf + at, p.bytes, p.len);
        at += p.len;
        h.frame_hash += p.hash;
    }
    proto_v3_put_header(buf, &h);
    return at;
}

static const struct tiles_meta meta = {.tick = 7, .room_boids = 10};

static void parts_decode_to_the_views_as_keys_and_deltas(void **state)
{
    (void)state;
    struct sim_world *w = flock(2000);
    struct tiles_grid g;
    tiles_grid_for(1600, 1000, 300, 100, &g);
    struct tilestate *hist[TILES_KEEP + 1] = {0};
    const char *err;
    struct proto_v3_encoder *enc = proto_v3_encoder_create(100000, &err);
    struct proto_v3_decoder *dec = proto_v3_decoder_create(10000, 64, 8, 4, &err);
    static uint8_t buf[1 << 20];
    for (uint32_t seq = 1; seq <= 12; seq++) {
        for (int k = 0; k < 10; k++)
            sim_step(w);
        if (seq == 6)
            assert_int_equal(sim_spawn(w, 30, 5, 200, 200, 50), 30);
        tiles_state_release(hist[TILES_KEEP]);
        memmove(hist + 1, hist, TILES_KEEP * sizeof *hist);
        hist[0] = state_of(w, &g, seq);
        struct tileset *ts = tiles_set_create(hist[0], hist + 1, &meta, NULL, 0, NULL, 0);
        unsigned sample = seq > 8 ? 1 : 0, gap1 = seq == 1 || seq == 9 ? 0 : 1;
        unsigned gap0 = gap1 && seq > 2 && seq != 10 ? 1 : 0;
        size_t len = frame_of(ts, 0, sample, gap1, gap0, enc, buf);
        const struct proto_v3_frame *fr;
        int rc = proto_v3_decode(dec, buf, len, &fr);
        if (rc)
            fail_msg("seq %u: %s", seq, proto_status_name(rc));
        const struct tiles_view *v = tiles_state_view(hist[0], 0, sample);
        assert_int_equal(fr->boid_count, v->b.count);
        /* The parts decode into one run of arrays, in the view's order. */
        assert_memory_equal(fr->parts[0].id, v->b.id, v->b.count * 4);
        assert_memory_equal(fr->parts[0].qx, v->b.qx, v->b.count * 2);
        assert_memory_equal(fr->parts[0].heading, v->b.heading, v->b.count);
        tiles_set_release(ts);
    }
    for (int k = 0; k <= TILES_KEEP; k++)
        tiles_state_release(hist[k]);
    proto_v3_encoder_destroy(enc);
    proto_v3_decoder_destroy(dec);
    sim_destroy(w);
}

struct race {
    struct tileset *ts;
    struct tiles_part got;
};

static void *take_part(void *arg)
{
    struct race *r = arg;
    const char *err;
    struct proto_v3_encoder *enc = proto_v3_encoder_create(100000, &err);
    int rc = tiles_set_part(r->ts, 0, 0, 0, 0, 0, enc, &r->got);
    proto_v3_encoder_destroy(enc);
    return rc ? r : NULL;
}

static void a_part_asked_for_by_many_threads_is_encoded_once(void **state)
{
    (void)state;
    struct sim_world *w = flock(2000);
    struct tiles_grid g;
    tiles_grid_for(1600, 1000, 1600, 100, &g); /* one tile: a big part */
    struct tilestate *s = state_of(w, &g, 1);
    struct tileset *ts = tiles_set_create(s, NULL, &meta, NULL, 0, NULL, 0);
    uint64_t parts0, bytes0, parts1, bytes1;
    tiles_counters(&parts0, &bytes0);
    struct race r[6];
    pthread_t th[6];
    for (int k = 0; k < 6; k++) {
        r[k] = (struct race){.ts = ts};
        assert_int_equal(pthread_create(&th[k], NULL, take_part, &r[k]), 0);
    }
    for (int k = 0; k < 6; k++) {
        void *failed;
        pthread_join(th[k], &failed);
        assert_null(failed);
        assert_ptr_equal(r[k].got.bytes, r[0].got.bytes);
    }
    tiles_counters(&parts1, &bytes1);
    assert_int_equal(parts1 - parts0, 1);
    assert_int_equal(bytes1 - bytes0, r[0].got.len);
    /* A delta with no base held is refused, and stays refused. */
    struct tiles_part p;
    const char *err;
    struct proto_v3_encoder *enc = proto_v3_encoder_create(100000, &err);
    assert_int_equal(tiles_set_part(ts, 0, 0, 0, 1, 0, enc, &p), PROTO_E_NO_BASE);
    assert_int_equal(tiles_set_part(ts, 0, 0, 0, 1, 0, enc, &p), PROTO_E_NO_BASE);
    assert_int_equal(tiles_set_part(ts, 0, 0, 0, 15, 2, enc, &p), PROTO_E_BAD_ARG);
    assert_int_equal(tiles_set_part(ts, 0, 0, 0, 16, 0, enc, &p), PROTO_E_BAD_ARG);
    proto_v3_encoder_destroy(enc);
    tiles_set_release(ts);
    tiles_state_release(s);
    sim_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(boids_land_in_their_tiles_in_id_order),
        cmocka_unit_test(views_hold_the_sample_by_super_tile_and_a_field_of_all),
        cmocka_unit_test(a_teams_audience_holds_exactly_the_visible_boids),
        cmocka_unit_test(parts_decode_to_the_views_as_keys_and_deltas),
        cmocka_unit_test(a_part_asked_for_by_many_threads_is_encoded_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
