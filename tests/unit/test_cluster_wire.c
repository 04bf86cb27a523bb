/*
 * Unit tests for the messages between cluster nodes (cluster_wire.h,
 * server/cluster/CLUSTER.md §3): a frame with a version 1 part and version 2
 * parts reads back with its term, plan and parts byte for byte, each part
 * behind the headroom asked for; commands, refusals, replies and wants
 * read back field for field. And refusals: every cut of each message is
 * refused, a byte too many, another version, another magic, and fields
 * out of range (a plan with no frame or a kind twice, term or sequence 0,
 * parts that name another tick or sequence or are no snapshot, a role,
 * team or refusal code out of range, a bad room name, an id that is not
 * one JSON scalar, a reply that is not one JSON object with a type or
 * holds a NUL, wants beyond the kinds).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cluster_wire.h"
#include "params.h"
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRE 16

/* Frames of a small real room, as its snapshots encode them. */
static struct sim_world *world;
static struct snapenc *enc;
static uint64_t seq;

static int setup(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = 64;
    cfg.max_obstacles = 2;
    world = sim_create(&cfg, NULL);
    sim_scatter(world, 50, 0);
    struct snapenc_config ec = {.capacity = 64, .max_obstacles = 2, .pre = PRE};
    enc = snapenc_create(&ec, NULL);
    return world && enc ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    snapenc_destroy(enc);
    sim_destroy(world);
    return 0;
}

/* The room's next snapshot in every kind it allows: version 1, the key
 * frame and, from the second on, deltas. */
static struct frame *sample_frame(void)
{
    sim_step(world);
    struct snapenc_input in = {
        .world = world, .seq = ++seq, .wall_us = 1700000000000000, .want = ~0u};
    struct frame *f = snapenc_encode(enc, &in);
    assert_non_null(f);
    return f;
}

static int encode_frame(uint8_t *buf, size_t cap, uint64_t term)
{
    frame_release(sample_frame());
    struct frame *f = sample_frame(); /* with deltas */
    int len = cluster_frame_encode(f, term, buf, cap);
    frame_release(f);
    return len;
}

static void a_frame_reads_back_with_its_term_plan_and_parts(void **state)
{
    (void)state;
    static uint8_t buf[16384];
    frame_release(sample_frame());
    struct frame *f = sample_frame();
    assert_true(f->plan.count >= 2 && f->part[FRAME_V1].len && f->part[f->kind[1]].len);
    int len = cluster_frame_encode(f, 42, buf, sizeof buf);
    assert_int_equal(len, (int)cluster_frame_size(f));
    struct cluster_frame_meta meta;
    int rc = 0;
    struct frame *g = cluster_frame_decode(buf, (size_t)len, 32, &meta, &rc);
    assert_non_null(g);
    assert_int_equal(rc, 0);
    assert_int_equal(meta.term, 42);
    assert_int_equal(meta.boids, 50);
    assert_false(meta.paused);
    assert_int_equal(g->seq, f->seq);
    assert_int_equal(g->tick, f->tick);
    assert_int_equal(g->time_us, f->time_us);
    assert_int_equal(g->pre, 32);
    assert_int_equal(g->plan.count, f->plan.count);
    assert_int_equal(g->plan.seq, f->plan.seq);
    for (unsigned k = 0; k < f->plan.count; k++) {
        assert_int_equal(g->kind[k], f->kind[k]);
        assert_int_equal(g->plan.frame[k].gap1, f->plan.frame[k].gap1);
        assert_int_equal(g->plan.frame[k].gap0, f->plan.frame[k].gap0);
    }
    for (unsigned k = 0; k < FRAME_KINDS; k++) {
        assert_int_equal(g->part[k].len, f->part[k].len);
        if (f->part[k].len) {
            assert_true(g->part[k].off >= 32);
            assert_memory_equal(frame_payload(g, k), frame_payload(f, k), f->part[k].len);
        }
    }
    assert_int_equal(cluster_frame_encode(f, 1, buf, (size_t)len - 1), PROTO_E_NOSPACE);
    frame_release(g);
    frame_release(f);
}

static void every_cut_of_a_frame_is_refused(void **state)
{
    (void)state;
    static uint8_t buf[16384];
    int len = encode_frame(buf, sizeof buf, 3);
    for (int cut = 0; cut < len; cut++) {
        struct cluster_frame_meta meta;
        int rc = 0;
        assert_null(cluster_frame_decode(buf, (size_t)cut, PRE, &meta, &rc));
        assert_true(rc == PROTO_E_TRUNCATED);
    }
}

/* good as encoded with byte `at` set to v: refused with `code`. */
static void expect_frame_refused(const uint8_t *good, int len, size_t at, uint8_t v, int code)
{
    static uint8_t buf[16384];
    memcpy(buf, good, (size_t)len);
    buf[at] = v;
    struct cluster_frame_meta meta;
    int rc = 0;
    assert_null(cluster_frame_decode(buf, (size_t)len, PRE, &meta, &rc));
    assert_int_equal(rc, code);
}

static void frames_that_break_their_rules_are_refused(void **state)
{
    (void)state;
    static uint8_t good[16384];
    int len = encode_frame(good, sizeof good, 3);
    struct cluster_frame_meta meta;
    int rc = 0;
    good[len] = 0;
    assert_null(cluster_frame_decode(good, (size_t)len + 1, PRE, &meta, &rc));
    assert_int_equal(rc, PROTO_E_BAD_LENGTH);
    expect_frame_refused(good, len, 0, 'X', PROTO_E_BAD_MAGIC);
    expect_frame_refused(good, len, 4, 1, PROTO_E_BAD_VERSION);   /* the kinds before 20 deltas */
    expect_frame_refused(good, len, 6, 1, PROTO_E_BAD_VALUE);     /* flags */
    expect_frame_refused(good, len, 8, 0, PROTO_E_BAD_VALUE);     /* term 0 */
    expect_frame_refused(good, len, 16, 0, PROTO_E_BAD_VALUE);    /* sequence 0 */
    expect_frame_refused(good, len, 24, 0x77, PROTO_E_BAD_VALUE); /* the parts name another tick */
    expect_frame_refused(good, len, 40, 0x77, PROTO_E_BAD_VALUE); /* ... another sequence */
    expect_frame_refused(good, len, 44, 0, PROTO_E_BAD_VALUE);    /* no frame in the plan */
    expect_frame_refused(good, len, 44, PROTO_V2_PLAN_MAX + 1, PROTO_E_BAD_VALUE); /* too many */
    expect_frame_refused(good, len, 48, 1, PROTO_E_BAD_VALUE);           /* the key frame twice */
    expect_frame_refused(good, len, 48, FRAME_KINDS, PROTO_E_BAD_VALUE); /* no such kind */
    expect_frame_refused(good, len, 49, 0, PROTO_E_BAD_VALUE); /* a delta without a base */
    expect_frame_refused(good, len, 45 + 3 * PROTO_V2_PLAN_MAX, 0xff,
                         PROTO_E_TRUNCATED); /* a part longer than all */
    /* A part that is not what it claims to be: its own codec refuses it. */
    expect_frame_refused(good, len, CLUSTER_FRAME_HEADER, 'X', PROTO_E_BAD_MAGIC);
}

static struct cluster_cmd sample_cmd(void)
{
    struct cluster_cmd c;
    memset(&c, 0, sizeof c);
    snprintf(c.room, sizeof c.room, "arena-2");
    c.who = (struct room_actor){.client = 77,
                                .protocol = 2,
                                .role = PROTO_ROLE_PLAYER,
                                .team = -1,
                                .owner = 12,
                                .origin = PROTO_ORIGIN_BIT | 0x1234};
    snprintf(c.id, sizeof c.id, "\"abc\"");
    c.text = "{\"cmd\":\"ping\",\"id\":\"abc\"}";
    c.text_len = strlen(c.text);
    return c;
}

static void a_command_reads_back_field_for_field(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct cluster_cmd c = sample_cmd(), d;
    int len = cluster_cmd_encode(&c, buf, sizeof buf);
    assert_true(len > 0);
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len, &d), 0);
    assert_string_equal(d.room, "arena-2");
    assert_string_equal(d.id, "\"abc\"");
    assert_int_equal(d.who.client, 77);
    assert_int_equal(d.who.owner, 12);
    assert_int_equal(d.who.role, PROTO_ROLE_PLAYER);
    assert_int_equal(d.who.protocol, 2);
    assert_int_equal(d.who.team, -1);
    assert_true(d.who.origin == (PROTO_ORIGIN_BIT | 0x1234));
    assert_int_equal(d.refused, 0);
    assert_int_equal(d.text_len, c.text_len);
    assert_memory_equal(d.text, c.text, c.text_len);
    for (int cut = 0; cut < len; cut++)
        assert_int_equal(cluster_cmd_decode(buf, (size_t)cut, &d), PROTO_E_TRUNCATED);
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len + 1, &d), PROTO_E_BAD_LENGTH);
    /* A refusal carries its code and message. */
    c.refused = PROTO_E_RATE_LIMITED;
    c.text = "too fast";
    c.text_len = 8;
    len = cluster_cmd_encode(&c, buf, sizeof buf);
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len, &d), 0);
    assert_int_equal(d.refused, PROTO_E_RATE_LIMITED);
}

/* The sample command with one field changed by `edit`: refused with code. */
static void expect_cmd_refused(void (*edit)(struct cluster_cmd *), int code)
{
    uint8_t buf[256];
    struct cluster_cmd c = sample_cmd(), d;
    edit(&c);
    int len = cluster_cmd_encode(&c, buf, sizeof buf);
    assert_true(len > 0);
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len, &d), code);
}

static void role_out_of_range(struct cluster_cmd *c)
{
    c->who.role = (enum proto_role)3;
}
static void team_out_of_range(struct cluster_cmd *c)
{
    c->who.team = 256;
}
static void client_zero(struct cluster_cmd *c)
{
    c->who.client = 0;
}
static void positive_refusal(struct cluster_cmd *c)
{
    c->refused = 1;
}
static void unknown_refusal(struct cluster_cmd *c)
{
    c->refused = -20;
}
static void bad_room_name(struct cluster_cmd *c)
{
    snprintf(c->room, sizeof c->room, "a.b");
}
static void origin_without_its_bit(struct cluster_cmd *c)
{
    c->who.origin = 0x1234;
}
static void id_not_a_scalar(struct cluster_cmd *c)
{
    snprintf(c->id, sizeof c->id, "1,\"type\":\"ack\"");
}

static void commands_that_break_their_rules_are_refused(void **state)
{
    (void)state;
    expect_cmd_refused(role_out_of_range, PROTO_E_BAD_VALUE);
    expect_cmd_refused(team_out_of_range, PROTO_E_BAD_VALUE);
    expect_cmd_refused(client_zero, PROTO_E_BAD_VALUE);
    expect_cmd_refused(positive_refusal, PROTO_E_BAD_VALUE);
    expect_cmd_refused(unknown_refusal, PROTO_E_BAD_VALUE);
    expect_cmd_refused(bad_room_name, PROTO_E_BAD_VALUE);
    expect_cmd_refused(id_not_a_scalar, PROTO_E_BAD_VALUE);
    expect_cmd_refused(origin_without_its_bit, PROTO_E_BAD_VALUE);
    uint8_t buf[256];
    struct cluster_cmd c = sample_cmd(), d;
    int len = cluster_cmd_encode(&c, buf, sizeof buf);
    buf[4] = 9;
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len, &d), PROTO_E_BAD_VERSION);
    buf[0] = 'F', buf[3] = 'F';
    assert_int_equal(cluster_cmd_decode(buf, (size_t)len, &d), PROTO_E_BAD_MAGIC);
}

static void replies_and_wants_read_back_and_bad_ones_are_refused(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct cluster_reply r = {.room = "default",
                              .client = 5,
                              .origin = PROTO_ORIGIN_BIT | 9,
                              .kind = ROOM_REPLY_KEYFRAME,
                              .text = "{\"type\":\"ack\"}",
                              .text_len = 14},
                         s;
    int len = cluster_reply_encode(&r, buf, sizeof buf);
    assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), 0);
    assert_string_equal(s.room, "default");
    assert_int_equal(s.client, 5);
    assert_true(s.origin == (PROTO_ORIGIN_BIT | 9));
    assert_int_equal(s.kind, ROOM_REPLY_KEYFRAME);
    assert_memory_equal(s.text, r.text, r.text_len);
    for (int cut = 0; cut < len; cut++)
        assert_int_equal(cluster_reply_decode(buf, (size_t)cut, &s), PROTO_E_TRUNCATED);
    r.text = "[\"not an object\"]";
    r.text_len = strlen(r.text);
    len = cluster_reply_encode(&r, buf, sizeof buf);
    assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), PROTO_E_BAD_VALUE);
    r.text = "{\"a\":\"\0\"}";
    r.text_len = 9;
    len = cluster_reply_encode(&r, buf, sizeof buf);
    assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), PROTO_E_BAD_VALUE);
    const char *not_replies[] = {"{\"a\":1}", "{\"type\":\"ack\"} {}", "{\"type\":\"ack\""};
    for (size_t i = 0; i < sizeof not_replies / sizeof not_replies[0]; i++) {
        r.text = not_replies[i];
        r.text_len = strlen(r.text);
        len = cluster_reply_encode(&r, buf, sizeof buf);
        assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), PROTO_E_BAD_VALUE);
    }
    r.text = "{}";
    r.text_len = 2;
    r.origin = 9; /* without its bit */
    len = cluster_reply_encode(&r, buf, sizeof buf);
    assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), PROTO_E_BAD_VALUE);
    r.origin = PROTO_ORIGIN_BIT | 9;
    r.kind = (enum room_reply_kind)3;
    len = cluster_reply_encode(&r, buf, sizeof buf);
    assert_int_equal(cluster_reply_decode(buf, (size_t)len, &s), PROTO_E_BAD_VALUE);

    unsigned kinds = 0;
    len = cluster_want_encode(0x21, buf, sizeof buf);
    assert_int_equal(len, CLUSTER_WANT_SIZE);
    assert_int_equal(cluster_want_decode(buf, (size_t)len, &kinds), 0);
    assert_int_equal(kinds, 0x21);
    assert_int_equal(cluster_want_decode(buf, (size_t)len - 1, &kinds), PROTO_E_TRUNCATED);
    len = cluster_want_encode(1u << FRAME_KINDS, buf, sizeof buf);
    assert_int_equal(cluster_want_decode(buf, (size_t)len, &kinds), PROTO_E_BAD_VALUE);
}

static void parameters_read_back_every_group_and_bad_ones_are_refused(void **state)
{
    (void)state;
    static struct sim_params values[SIM_GROUPS], got[SIM_GROUPS];
    for (unsigned g = 0; g < SIM_GROUPS; g++)
        sim_params_default(&values[g]);
    values[0].max_speed = 150.5f;
    for (unsigned g = 1; g < SIM_GROUPS; g++)
        values[g].max_speed = 150.5f;
    values[7].fov = 90.0f;
    size_t cap = cluster_params_size();
    uint8_t *buf = malloc(cap);
    int len = cluster_params_encode(values, buf, cap);
    /* Group 0 and the one group that differs. */
    size_t n = sim_param_count();
    assert_int_equal(len, 12 + 2 * (1 + 4 * (int)n));
    assert_int_equal(cluster_params_decode(buf, (size_t)len, got), 0);
    assert_memory_equal(got, values, sizeof values);
    for (int cut = 0; cut < len; cut++)
        assert_true(cluster_params_decode(buf, (size_t)cut, got) < 0);
    uint8_t bad[4096];
    memcpy(bad, buf, (size_t)len);
    bad[6] = (uint8_t)(n + 1); /* another registry */
    assert_int_equal(cluster_params_decode(bad, (size_t)len, got), PROTO_E_BAD_VALUE);
    memcpy(bad, buf, (size_t)len);
    bad[12 + 1 + 4 * n] = 0; /* group 0 twice */
    assert_int_equal(cluster_params_decode(bad, (size_t)len, got), PROTO_E_BAD_VALUE);
    memcpy(bad, buf, (size_t)len);
    memcpy(bad + 12 + 1 + 4 * n + 1, bad + 13, 4 * n); /* group 7 listed as group 0 is */
    assert_int_equal(cluster_params_decode(bad, (size_t)len, got), PROTO_E_BAD_VALUE);
    memcpy(bad, buf, (size_t)len);
    float huge = 1e30f; /* max_speed, the first of group 0, out of range */
    memcpy(bad + 13, &huge, 4);
    assert_int_equal(cluster_params_decode(bad, (size_t)len, got), PROTO_E_BAD_VALUE);
    memcpy(bad, buf, (size_t)len);
    assert_int_equal(cluster_params_decode(bad, (size_t)len + 1, got), PROTO_E_BAD_LENGTH);
    memcpy(bad, "FKCW", 4);
    assert_int_equal(cluster_params_decode(bad, (size_t)len, got), PROTO_E_BAD_MAGIC);
    assert_memory_equal(got, values, sizeof values); /* untouched by every refusal */
    free(buf);
    uint8_t ask[CLUSTER_ASK_SIZE];
    assert_int_equal(cluster_ask_encode(ask, sizeof ask), CLUSTER_ASK_SIZE);
    assert_int_equal(cluster_ask_decode(ask, sizeof ask), 0);
    assert_true(cluster_ask_decode(ask, sizeof ask - 1) < 0);
    ask[7] = 1;
    assert_int_equal(cluster_ask_decode(ask, sizeof ask), PROTO_E_BAD_VALUE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_frame_reads_back_with_its_term_plan_and_parts),
        cmocka_unit_test(every_cut_of_a_frame_is_refused),
        cmocka_unit_test(frames_that_break_their_rules_are_refused),
        cmocka_unit_test(a_command_reads_back_field_for_field),
        cmocka_unit_test(commands_that_break_their_rules_are_refused),
        cmocka_unit_test(replies_and_wants_read_back_and_bad_ones_are_refused),
        cmocka_unit_test(parameters_read_back_every_group_and_bad_ones_are_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
