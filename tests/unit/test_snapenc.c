/*
 * test_snapenc — a world's snapshots encoded in every kind: the version 2
 * frames a client takes (as proto_v2_pick() chooses them) decode to
 * exactly the boids of the same snapshot's version 1 part and carry the
 * world's sim_hash(); a kind not asked for is not encoded and version 2
 * costs nothing until asked for; a client that takes snapshots irregularly
 * gets deltas; bases are kept as far back as the kinds asked for reach; a
 * big room encodes four deltas alone; deltas never cross an epoch change;
 * the names of the kinds follow proto_v2_plan()'s order.
 */
#include "snapenc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define BOIDS    300
#define CAPACITY 400
#define ALL      ((1u << FRAME_KINDS) - 1)

struct fixture {
    struct sim_world *w;
    struct snapenc *e;
    uint64_t seq;
};

/* A clock that moves 1 µs per reading: the stats count readings. */
static int64_t ticking_clock(void)
{
    static int64_t t;
    return t += 1000;
}

static struct fixture make(void)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = CAPACITY;
    cfg.max_obstacles = 4;
    const char *err = NULL;
    struct fixture f = {.w = sim_create(&cfg, &err)};
    assert_non_null(f.w);
    sim_scatter(f.w, BOIDS, 0);
    assert_true(sim_obstacle_add(f.w, 400, 300, 30) > 0);
    assert_int_equal(sim_target_set(f.w, 0, 800, 500), 0);
    struct snapenc_config ec = {
        .capacity = CAPACITY, .max_obstacles = 4, .pre = 16, .clock_ns = ticking_clock};
    f.e = snapenc_create(&ec, &err);
    assert_non_null(f.e);
    return f;
}

static void unmake(struct fixture *f)
{
    snapenc_destroy(f->e);
    sim_destroy(f->w);
}

/* Steps the world three ticks and encodes its next snapshot. */
static struct frame *next(struct fixture *f, unsigned want)
{
    for (int k = 0; k < 3; k++)
        sim_step(f->w);
    struct snapenc_input in = {.world = f->w,
                               .seq = ++f->seq,
                               .wall_us = 1700000000000000 + (int64_t)f->seq,
                               .want = want};
    struct frame *fr = snapenc_encode(f->e, &in);
    assert_non_null(fr);
    assert_true(fr->seq == f->seq);
    return fr;
}

/* The version 1 part's boids, decoded. */
static void decode_v1(struct frame *fr, struct proto_boid *boids, uint32_t *count)
{
    static struct proto_run runs[PROTO_SNAPSHOT_MAX_RUNS];
    static struct proto_obstacle obstacles[4];
    static struct proto_target targets[PROTO_SNAPSHOT_MAX_TARGETS];
    struct proto_snapshot s = {{0}, runs,    PROTO_SNAPSHOT_MAX_RUNS,   boids, CAPACITY, obstacles,
                               4,   targets, PROTO_SNAPSHOT_MAX_TARGETS};
    assert_true(fr->part[FRAME_V1].len > 0);
    assert_int_equal(proto_snapshot_decode(frame_payload(fr, FRAME_V1), fr->part[FRAME_V1].len, &s),
                     0);
    *count = s.h.boid_count;
}

/* A client's side: its decoder and the frames it was sent, newest first. */
struct client {
    struct proto_v2_decoder *dec;
    uint32_t sent[PROTO_V2_HISTORY];
    size_t nsent;
    unsigned keys, deltas;
};

/* The client takes the frame proto_v2_pick() gives it and checks it
 * against the version 1 part and the world. */
static void take(struct client *c, struct fixture *f, struct frame *fr)
{
    unsigned k = proto_v2_pick(&fr->plan, c->sent, c->nsent), kind = fr->kind[k];
    assert_true(fr->part[kind].len > 0);
    const struct proto_v2_state *st;
    assert_int_equal(proto_v2_decode(c->dec, frame_payload(fr, kind), fr->part[kind].len, &st), 0);
    struct proto_v2_header h;
    assert_int_equal(proto_v2_decode_header(frame_payload(fr, kind), fr->part[kind].len, &h), 0);
    assert_true(h.sim_hash == sim_hash(f->w));
    assert_true(h.tick == fr->tick && (int64_t)h.server_time_us == fr->time_us);
    static struct proto_boid boids[CAPACITY];
    uint32_t n;
    decode_v1(fr, boids, &n);
    assert_int_equal(st->count, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(st->qx[i], boids[i].qx);
        assert_int_equal(st->qy[i], boids[i].qy);
        assert_int_equal(st->heading[i], boids[i].heading);
        assert_int_equal(st->group[i], boids[i].group);
    }
    memmove(c->sent + 1, c->sent, (PROTO_V2_HISTORY - 1) * sizeof c->sent[0]);
    c->sent[0] = (uint32_t)fr->seq;
    c->nsent += c->nsent < PROTO_V2_HISTORY;
    *(kind == FRAME_KEY ? &c->keys : &c->deltas) += 1;
}

static void version_2_frames_decode_to_the_boids_of_the_version_1_snapshot(void **state)
{
    (void)state;
    struct fixture f = make();
    const char *err = NULL;
    struct client keeps_up = {.dec = proto_v2_decoder_create(CAPACITY, 4, &err)};
    struct client every_other = {.dec = proto_v2_decoder_create(CAPACITY, 4, &err)};
    struct client irregular = {.dec = proto_v2_decoder_create(CAPACITY, 4, &err)};
    assert_non_null(keeps_up.dec);
    assert_non_null(every_other.dec);
    assert_non_null(irregular.dec);
    /* The third takes snapshots 2, 3, 4, 1 and 3 apart in turn: the
     * pairs of gaps a client of a full server holds. */
    static const unsigned gaps[] = {2, 3, 4, 1, 3};
    uint64_t due = 1;
    for (int s = 0; s < 60; s++) {
        struct frame *fr = next(&f, ALL);
        take(&keeps_up, &f, fr);
        if (fr->seq % 2 == 0)
            take(&every_other, &f, fr);
        if (fr->seq == due) {
            take(&irregular, &f, fr);
            due += gaps[(irregular.keys + irregular.deltas) % 5];
        }
        frame_release(fr);
    }
    assert_int_equal(keeps_up.keys, 1); /* then deltas only */
    assert_int_equal(keeps_up.deltas, 59);
    assert_true(every_other.keys <= 2 && every_other.deltas >= 28);
    /* Keys only until the room holds the bases its deltas name. */
    assert_true(irregular.keys <= 4 && irregular.deltas >= 16);
    proto_v2_decoder_destroy(keeps_up.dec);
    proto_v2_decoder_destroy(every_other.dec);
    proto_v2_decoder_destroy(irregular.dec);
    unmake(&f);
}

static void kinds_not_asked_for_are_not_encoded_and_version_2_waits_to_be_asked(void **state)
{
    (void)state;
    struct fixture f = make();
    struct snapenc_stats st;
    for (int s = 0; s < 5; s++)
        frame_release(next(&f, 1u << FRAME_V1));
    snapenc_stats(f.e, &st);
    assert_true(st.frames[FRAME_V1] == 5 && st.prepare_ns == 0);
    for (unsigned k = FRAME_KEY; k < FRAME_KINDS; k++)
        assert_true(st.frames[k] == 0);
    /* Asked for everything: at first only the key frame is possible... */
    struct frame *fr = next(&f, ALL);
    assert_int_equal(fr->plan.count, 1);
    assert_true(fr->part[FRAME_KEY].len > 0 && fr->part[FRAME_V1].len > 0);
    frame_release(fr);
    /* ...then the deltas on the snapshots quantized since. */
    fr = next(&f, 1u << FRAME_KEY | 1u << frame_kind_of(1, 0));
    assert_int_equal(fr->plan.count, 2);
    assert_true(fr->part[frame_kind_of(1, 0)].len > 0 && fr->part[FRAME_KEY].len > 0);
    assert_true(fr->part[FRAME_V1].len == 0);
    frame_release(fr);
    snapenc_stats(f.e, &st);
    assert_true(st.prepare_ns > 0 && st.ns[FRAME_KEY] > 0);
    unmake(&f);
}

static void a_new_epoch_starts_on_the_key_frame_alone(void **state)
{
    (void)state;
    struct fixture f = make();
    for (int s = 0; s < PROTO_V2_PLAN_REACH; s++)
        frame_release(next(&f, ALL));
    struct frame *fr = next(&f, ALL);
    assert_int_equal(fr->plan.count, PROTO_V2_PLAN_MAX);
    for (unsigned k = 0; k < fr->plan.count; k++)
        assert_true(fr->part[fr->kind[k]].len > 0);
    frame_release(fr);
    assert_true(sim_spawn(f.w, 5, 1, 100, 100, 10) == 5);
    fr = next(&f, ALL);
    assert_int_equal(fr->plan.count, 1);
    assert_int_equal(fr->kind[0], FRAME_KEY);
    for (unsigned k = FRAME_KEY + 1; k < FRAME_KINDS; k++)
        assert_true(fr->part[k].len == 0);
    frame_release(fr);
    unmake(&f);
}

/* Whether frame fr has an encoded part of the delta on (seq-g1, seq-g1-g0). */
static bool has_delta(const struct frame *fr, uint8_t g1, uint8_t g0)
{
    return fr->part[frame_kind_of(g1, g0)].len > 0;
}

/* Whether plan frame k of fr names only bases at or after seq `oldest`. */
static bool bases_since(const struct frame *fr, unsigned k, uint64_t oldest)
{
    const struct proto_v2_plan_frame *p = &fr->plan.frame[k];
    return fr->seq - p->gap1 - p->gap0 >= oldest;
}

/* While only clients that keep up take version 2, the states deeper
 * kinds would name are let go; asked for, those kinds come back as soon
 * as their bases are kept again, and the plan lists them all along. */
static void bases_are_kept_as_far_back_as_the_kinds_wanted_reach(void **state)
{
    (void)state;
    struct fixture f = make();
    unsigned near = 1u << FRAME_KEY | 1u << frame_kind_of(1, 1) | 1u << frame_kind_of(1, 0);
    for (int s = 0; s <= PROTO_V2_PLAN_REACH; s++)
        frame_release(next(&f, near));
    /* From S on every kind is asked for; S-1 and S-2 are all that was kept. */
    uint64_t kept = f.seq - 1;
    for (int s = 0; s <= PROTO_V2_PLAN_REACH - 2; s++) {
        struct frame *fr = next(&f, ALL);
        assert_int_equal(fr->plan.count, PROTO_V2_PLAN_MAX);
        assert_true(fr->part[FRAME_KEY].len > 0);
        for (unsigned k = 1; k < fr->plan.count; k++)
            assert_int_equal(fr->part[fr->kind[k]].len > 0, bases_since(fr, k, kept));
        frame_release(fr);
    }
    /* S+6: every kind again. */
    struct frame *fr = next(&f, ALL);
    for (unsigned k = 0; k < fr->plan.count; k++)
        assert_true(fr->part[fr->kind[k]].len > 0);
    frame_release(fr);
    /* Back to the near kinds: the deeper ones are let go again. */
    frame_release(next(&f, near));
    fr = next(&f, ALL);
    assert_true(has_delta(fr, 1, 1) && has_delta(fr, 2, 0));
    assert_false(has_delta(fr, 1, 2) || has_delta(fr, 2, 1) || has_delta(fr, 2, 2));
    frame_release(fr);
    unmake(&f);
}

/* A big room encodes four deltas per snapshot, however many are asked
 * for: clients that fall behind do not cost it more encoding. */
static void a_big_room_encodes_its_first_four_deltas_alone(void **state)
{
    (void)state;
    enum { MANY = 100000 };
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = MANY;
    const char *err = NULL;
    struct fixture f = {.w = sim_create(&cfg, &err)};
    assert_non_null(f.w);
    sim_scatter(f.w, MANY, 0);
    struct snapenc_config ec = {.capacity = MANY, .pre = 16};
    f.e = snapenc_create(&ec, &err);
    assert_non_null(f.e);
    for (int s = 0; s < PROTO_V2_PLAN_REACH; s++) /* no step: the deltas are quick */
        frame_release(snapenc_encode(
            f.e, &(struct snapenc_input){.world = f.w, .seq = ++f.seq, .want = ALL}));
    struct frame *fr =
        snapenc_encode(f.e, &(struct snapenc_input){.world = f.w, .seq = ++f.seq, .want = ALL});
    assert_non_null(fr);
    assert_int_equal(fr->plan.count, PROTO_V2_PLAN_MAX);
    for (unsigned k = 0; k < fr->plan.count; k++)
        assert_int_equal(fr->part[fr->kind[k]].len > 0, k <= 4);
    frame_release(fr);
    unmake(&f);
}

static void kinds_are_named_in_the_order_of_the_plan(void **state)
{
    (void)state;
    struct proto_v2_plan full;
    proto_v2_plan(0, PROTO_V2_PLAN_REACH, PROTO_V2_PLAN_MAX - 1, &full);
    assert_int_equal(full.count, FRAME_KINDS - 1);
    assert_string_equal(frame_kind_name(FRAME_V1), "v1");
    for (unsigned k = 0; k < full.count; k++) {
        char want[32];
        const struct proto_v2_plan_frame *p = &full.frame[k];
        if (!p->gap1)
            snprintf(want, sizeof want, "key");
        else if (!p->gap0)
            snprintf(want, sizeof want, "delta_%u", p->gap1);
        else
            snprintf(want, sizeof want, "delta_%u_%u", p->gap1, p->gap0);
        assert_int_equal(frame_kind_of(p->gap1, p->gap0), FRAME_KEY + k);
        assert_string_equal(frame_kind_name(FRAME_KEY + k), want);
    }
    assert_string_equal(frame_kind_name(FRAME_WANT_V3), "v3");
    assert_string_equal(frame_kind_name(FRAME_WANT_V3 + 1), "");
}

/* The WebSocket header RFC 6455 §5.2 gives a final, unmasked binary
 * message of len bytes. */
static size_t ws_header(size_t len, unsigned char *h)
{
    h[0] = 0x82;
    if (len < 126) {
        h[1] = (unsigned char)len;
        return 2;
    }
    size_t n = len < 65536 ? 2 : 8;
    h[1] = n == 2 ? 126 : 127;
    for (size_t i = 0; i < n; i++)
        h[2 + i] = (unsigned char)((uint64_t)len >> 8 * (n - 1 - i));
    return 2 + n;
}

static void each_part_is_sent_with_its_websocket_header_written_before_it(void **state)
{
    (void)state;
    static const size_t lens[] = {1, 125, 126, 65535, 65536, 70000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct frame *f = calloc(1, sizeof *f + 16 + lens[i]);
        assert_non_null(f);
        f->pre = 16;
        frame_set_part(f, FRAME_KEY, 16, lens[i]);
        unsigned char want[FRAME_WS_HEAD_MAX];
        size_t head = ws_header(lens[i], want), n;
        const unsigned char *wire = frame_wire(f, FRAME_KEY, &n);
        assert_int_equal(n, head + lens[i]);
        assert_memory_equal(wire, want, head);
        assert_ptr_equal(wire + head, frame_payload(f, FRAME_KEY));
        free(f);
    }
    /* Headroom too short for the longest header: no wire form. */
    struct frame *f = calloc(1, sizeof *f + 8 + 10);
    assert_non_null(f);
    f->pre = 8;
    frame_set_part(f, FRAME_V1, 8, 10);
    size_t n = 1;
    frame_wire(f, FRAME_V1, &n);
    assert_int_equal(n, 0);
    free(f);
    /* An encoded frame's parts carry theirs. */
    struct fixture fx = make();
    struct frame *fr = next(&fx, 1u << FRAME_V1 | 1u << FRAME_KEY);
    for (unsigned k = 0; k < FRAME_KINDS; k++) {
        if (!fr->part[k].len)
            continue;
        unsigned char want[FRAME_WS_HEAD_MAX];
        size_t head = ws_header(fr->part[k].len, want);
        const unsigned char *wire = frame_wire(fr, k, &n);
        assert_int_equal(n, head + fr->part[k].len);
        assert_memory_equal(wire, want, head);
    }
    frame_release(fr);
    unmake(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_2_frames_decode_to_the_boids_of_the_version_1_snapshot),
        cmocka_unit_test(kinds_not_asked_for_are_not_encoded_and_version_2_waits_to_be_asked),
        cmocka_unit_test(a_new_epoch_starts_on_the_key_frame_alone),
        cmocka_unit_test(bases_are_kept_as_far_back_as_the_kinds_wanted_reach),
        cmocka_unit_test(a_big_room_encodes_its_first_four_deltas_alone),
        cmocka_unit_test(kinds_are_named_in_the_order_of_the_plan),
        cmocka_unit_test(each_part_is_sent_with_its_websocket_header_written_before_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
