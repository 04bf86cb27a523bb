/*
 * test_room — one room driven tick by tick with times the test chooses
 * (room_tick, no pool, no clock): a tick's wall time is stamped into its
 * snapshot, which carries the world's boids, obstacles and targets in the
 * codec's format; commands are acked with the tick they took effect at,
 * refusals from the world come back as wire codes and change nothing, and
 * the lateness the ticks were told is what room_info reports. Each service
 * thread takes its own clients' replies and has its own news flag. A room
 * whose ticks cost more than its period dilates: the same steps (the same
 * hash after as many ticks), fewer snapshots, its dilation in room_info,
 * the welcome, stats and a dilation message for its members. A room a
 * cluster ticks hands a checkpoint to the writer only once the command
 * log stored its mark: a checkpoint whose batch the log refused is never
 * stored (it would hold commands the log lacks and answered refused).
 */
#define _POSIX_C_SOURCE 200809L

#include "room.h"

#include "checkpoint.h"
#include "metrics.h"
#include "persist.h"
#include "room_persist.h"
#include "room_relay.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#define BOIDS    40
#define CAPACITY 100

/* The tests' room: a small sandbox whose every tick publishes. */
static struct room_config room_config_of_tests(void)
{
    struct room_config cfg = {.name = "test",
                              .mode = PROTO_MODE_SANDBOX,
                              .boids = BOIDS,
                              .tick_hz = 60,
                              .snapshot_hz = 60, /* every tick publishes */
                              .queue_len = 16,
                              .max_message = PROTO_DEFAULT_MAX_MESSAGE,
                              .player_obstacles = 8};
    sim_default_config(&cfg.sim);
    cfg.sim.capacity = CAPACITY;
    cfg.sim.max_obstacles = 4;
    return cfg;
}

static struct room *room_new(void)
{
    struct room_config cfg = room_config_of_tests();
    const char *err = NULL;
    struct room *r = room_create(&cfg, &err);
    assert_non_null(r);
    return r;
}

/* Ticks once at wall time wall_us, late_ns after its deadline, with a
 * version 1 client watching (it took the latest frame, or the first). */
static void tick(struct room *r, int64_t wall_us, int64_t late_ns)
{
    struct frame *f = room_latest(r);
    room_want(r, FRAME_V1, f ? f->seq : 1);
    frame_release(f);
    struct pool_time t = {.now_ns = 1000000000, .late_ns = late_ns, .wall_us = wall_us};
    room_tick(r, &t);
}

/* Pushes the command text as an admin would send it (client 7; origin:
 * 0, or another node's key for its command). */
static void push_from(struct room *r, uint64_t origin, const char *text)
{
    struct proto_limits lim;
    struct proto_command cmd;
    struct proto_error err;
    room_limits(r, PROTO_DEFAULT_MAX_MESSAGE, &lim);
    assert_int_equal(proto_command_parse(text, strlen(text), &lim, &cmd, &err), 0);
    struct room_actor who = {
        .client = 7, .role = PROTO_ROLE_ADMIN, .team = -1, .owner = 7, .origin = origin};
    assert_int_equal(room_push(r, &who, &cmd), 0);
}

static void push(struct room *r, const char *text)
{
    push_from(r, 0, text);
}

/* The replies queued so far, parsed, in order; the caller frees each. */
static int take_replies(struct room *r, cJSON **out, int max)
{
    int n = 0;
    struct room_reply *rep = room_take_replies(r);
    while (rep) {
        struct room_reply *next = rep->next;
        assert_int_equal(rep->client, 7);
        assert_true(n < max);
        out[n] = cJSON_Parse(rep->text);
        assert_non_null(out[n++]);
        free(rep);
        rep = next;
    }
    return n;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

struct decoded {
    struct proto_snapshot s;
    struct proto_run runs[PROTO_SNAPSHOT_MAX_RUNS];
    struct proto_boid boids[CAPACITY];
    struct proto_obstacle obstacles[4];
    struct proto_target targets[PROTO_SNAPSHOT_MAX_TARGETS];
};

/* Decodes the room's latest frame into *d. */
static void decode_latest(struct room *r, struct decoded *d)
{
    d->s = (struct proto_snapshot){.runs = d->runs,
                                   .runs_cap = PROTO_SNAPSHOT_MAX_RUNS,
                                   .boids = d->boids,
                                   .boids_cap = CAPACITY,
                                   .obstacles = d->obstacles,
                                   .obstacles_cap = 4,
                                   .targets = d->targets,
                                   .targets_cap = PROTO_SNAPSHOT_MAX_TARGETS};
    struct frame *f = room_latest(r);
    assert_non_null(f);
    assert_true(f->part[FRAME_V1].len > 0);
    assert_int_equal(
        proto_snapshot_decode(frame_payload(f, FRAME_V1), f->part[FRAME_V1].len, &d->s), 0);
    assert_true(d->s.h.tick == f->tick && (int64_t)d->s.h.server_time_us == f->time_us);
    frame_release(f);
}

static void a_tick_stamps_the_wall_time_it_was_given_into_its_snapshot(void **state)
{
    (void)state;
    struct room *r = room_new();
    struct decoded d;
    assert_null(room_latest(r));
    tick(r, 1700000000123456, 0);
    decode_latest(r, &d);
    assert_true(d.s.h.server_time_us == 1700000000123456);
    assert_true(d.s.h.tick == 1); /* the snapshot follows the step */
    assert_int_equal(d.s.h.boid_count, BOIDS);
    assert_int_equal(d.s.h.flags, PROTO_SNAPSHOT_FLAG_WRAP);
    assert_true(d.s.h.width == 1600.0f && d.s.h.height == 1000.0f);
    tick(r, 42, 0);
    decode_latest(r, &d);
    assert_true(d.s.h.server_time_us == 42 && d.s.h.tick == 2);
    room_destroy(r);
}

static void commands_are_acked_with_their_tick_and_show_in_the_next_snapshot(void **state)
{
    (void)state;
    struct room *r = room_new();
    struct decoded d;
    cJSON *rep[4];
    tick(r, 1, 0);
    push(r, "{\"cmd\":\"obstacle_add\",\"id\":1,\"x\":400,\"y\":300,\"r\":20}");
    push(r, "{\"cmd\":\"seek\",\"id\":\"s\",\"group\":0,\"x\":100.5,\"y\":200.25}");
    push(r, "{\"cmd\":\"seek\",\"id\":3,\"group\":7,\"x\":5,\"y\":6}");
    tick(r, 2, 0);
    assert_int_equal(take_replies(r, rep, 4), 3);
    for (int k = 0; k < 3; k++) {
        assert_string_equal(str(rep[k], "type"), "ack");
        assert_true(num(rep[k], "tick") == 1); /* applied before the step to tick 2 */
    }
    assert_true(num(rep[0], "obstacle") == 1);
    assert_string_equal(str(rep[1], "id"), "s");
    for (int k = 0; k < 3; k++)
        cJSON_Delete(rep[k]);
    decode_latest(r, &d);
    assert_int_equal(d.s.h.obstacle_count, 1);
    assert_true(d.obstacles[0].id == 1 && d.obstacles[0].x == 400.0f &&
                d.obstacles[0].y == 300.0f && d.obstacles[0].r == 20.0f);
    assert_int_equal(d.s.h.target_count, 2); /* in ascending groups */
    assert_true(d.targets[0].group == 0 && d.targets[0].x == 100.5f && d.targets[0].y == 200.25f);
    assert_true(d.targets[1].group == 7 && d.targets[1].x == 5.0f && d.targets[1].y == 6.0f);
    room_destroy(r);
}

static void refusals_by_the_world_are_wire_codes_and_change_nothing(void **state)
{
    (void)state;
    struct room *r = room_new();
    cJSON *rep[4];
    push(r, "{\"cmd\":\"spawn\",\"id\":1,\"n\":61,\"group\":1,\"x\":5,\"y\":5}");
    push(r, "{\"cmd\":\"obstacle_remove\",\"id\":2,\"obstacle\":9}");
    push(r, "{\"cmd\":\"spawn\",\"id\":3,\"n\":60,\"group\":1,\"x\":5,\"y\":5}");
    tick(r, 1, 0);
    assert_int_equal(take_replies(r, rep, 4), 3);
    assert_string_equal(str(rep[0], "type"), "error");
    assert_string_equal(str(rep[0], "code"), "capacity"); /* 40 + 61 > 100 */
    assert_string_equal(str(rep[1], "code"), "not_found");
    assert_string_equal(str(rep[2], "type"), "ack");
    assert_true(num(rep[2], "count") == 60);
    for (int k = 0; k < 3; k++)
        cJSON_Delete(rep[k]);
    struct room_info info;
    room_info(r, &info);
    assert_int_equal(info.boids, CAPACITY);
    room_destroy(r);
}

static void sim_errors_map_to_wire_codes(void **state)
{
    (void)state;
    assert_int_equal(room_status_from_sim(SIM_ERANGE), PROTO_E_OUT_OF_RANGE);
    assert_int_equal(room_status_from_sim(SIM_ECAPACITY), PROTO_E_CAPACITY);
    assert_int_equal(room_status_from_sim(SIM_ENOENT), PROTO_E_NOT_FOUND);
    assert_int_equal(room_status_from_sim(SIM_EINVAL), PROTO_E_BAD_ARG);
    assert_int_equal(room_status_from_sim(SIM_ENOMEM), PROTO_E_INTERNAL);
    assert_int_equal(room_status_from_sim(5), PROTO_OK);
}

static void the_lateness_reported_is_what_the_ticks_were_told(void **state)
{
    (void)state;
    struct room *r = room_new();
    struct room_info info;
    for (int k = 0; k < 100; k++)
        tick(r, 1, (int64_t)k * 1000000); /* 0, 1, ..., 99 ms late */
    room_info(r, &info);
    assert_true(info.late_p99_ms == 98.0); /* the 99th of 100 in order */
    assert_true(info.tick == 100);
    room_destroy(r);
}

/* Ticks once with nobody watching. */
static void tick_alone(struct room *r)
{
    struct pool_time t = {.now_ns = 1000000000, .wall_us = 1};
    room_tick(r, &t);
}

static unsigned parts_of(struct room *r)
{
    struct frame *f = room_latest(r);
    assert_non_null(f);
    unsigned mask = 0;
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        mask |= (f->part[k].len > 0) << k;
    frame_release(f);
    return mask;
}

static void a_room_encodes_the_kinds_its_clients_took_lately_and_no_other(void **state)
{
    (void)state;
    struct room *r = room_new(); /* 60 snapshots a second: a kind lingers 120 */
    tick_alone(r);
    assert_int_equal(parts_of(r), 0); /* nobody watches: nothing encoded */
    room_want(r, FRAME_V1, 1);
    room_want(r, FRAME_KEY, 1);
    tick_alone(r);
    assert_int_equal(parts_of(r), 1u << FRAME_V1 | 1u << FRAME_KEY);
    room_want(r, frame_kind_of(1, 1), 2);
    tick_alone(r); /* seq 3: bases 2 and 1, but 1 was not quantized */
    assert_int_equal(parts_of(r), 1u << FRAME_V1 | 1u << FRAME_KEY);
    tick_alone(r); /* seq 4 on 3 and 2 */
    assert_int_equal(parts_of(r), 1u << FRAME_V1 | 1u << FRAME_KEY | 1u << frame_kind_of(1, 1));
    for (int k = 0; k < 117; k++)
        tick_alone(r); /* seq 121: the last the wants of seq 1 reach */
    assert_true(parts_of(r) & 1u << FRAME_V1);
    tick_alone(r);
    assert_int_equal(parts_of(r), 1u << frame_kind_of(1, 1)); /* wanted at 2: until 122 */
    tick_alone(r);
    assert_int_equal(parts_of(r), 0);
    room_destroy(r);
}

static void a_keyframe_command_is_acked_counted_and_marks_its_reply(void **state)
{
    (void)state;
    struct room *r = room_new();
    uint64_t before = atomic_load(&g_metrics.keyframes_requested);
    push(r, "{\"cmd\":\"ping\",\"id\":1}");
    push(r, "{\"cmd\":\"keyframe\",\"id\":2}");
    tick(r, 1, 0);
    struct room_reply *rep = room_take_replies(r);
    assert_non_null(rep);
    assert_int_equal(rep->kind, ROOM_REPLY_PLAIN);
    assert_non_null(rep->next);
    assert_int_equal(rep->next->kind, ROOM_REPLY_KEYFRAME);
    assert_non_null(strstr(rep->next->text, "\"type\":\"ack\",\"id\":2,\"tick\":0"));
    assert_null(rep->next->next);
    free(rep->next);
    free(rep);
    assert_true(atomic_load(&g_metrics.keyframes_requested) == before + 1);
    room_destroy(r);
}

/* stats: the ack carries the room's figures; the tick durations are the
 * ones the pool told the ticks; without a measurer the flock is null. */
static void stats_is_acked_with_the_rooms_figures(void **state)
{
    (void)state;
    struct room *r = room_new();
    for (int k = 1; k <= 100; k++) {
        struct pool_time t = {.now_ns = 1000000000, .wall_us = 1, .last_ns = k * 100000};
        room_tick(r, &t); /* 0.1, 0.2, ..., 10 ms */
    }
    push(r, "{\"cmd\":\"stats\",\"id\":5}");
    tick(r, 1, 0);
    cJSON *rep[2];
    assert_int_equal(take_replies(r, rep, 2), 1);
    assert_string_equal(str(rep[0], "type"), "ack");
    assert_true(num(rep[0], "id") == 5 && num(rep[0], "tick") == 100);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rep[0], "stats");
    assert_true(num(s, "boids") == BOIDS);
    assert_true(num(s, "tick_ms_p99") > 9.8 && num(s, "tick_ms_p99") <= 10.0);
    assert_true(num(s, "tick_ms_mean") > 4.9 && num(s, "tick_ms_mean") < 5.1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "flock")));
    cJSON_Delete(rep[0]);
    room_destroy(r);
}

/* With a measurer the room offers its world every tick_hz / ROOM_MEASURE_HZ
 * ticks; the stats and the welcome then report the measure. */
static void a_measured_room_reports_its_flock(void **state)
{
    (void)state;
    const char *err = NULL;
    struct measure *m = measure_create(&err);
    assert_non_null(m);
    struct room_config cfg = room_config_of_tests();
    cfg.measure = m;
    struct room *r = room_create(&cfg, &err);
    assert_non_null(r);
    struct room_info info;
    for (int k = 0; k < 14; k++)
        tick_alone(r);
    room_info(r, &info);
    assert_false(info.has_flock); /* not offered before 15 ticks */
    tick_alone(r);
    for (int waited = 0; waited < 2000; waited++) { /* the measure runs on its thread */
        room_info(r, &info);
        if (info.has_flock)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_true(info.has_flock);
    assert_int_equal(info.flock.count, BOIDS);
    assert_true(info.flock_tick == 15);
    assert_true(info.flock.local_polarization >= info.flock.global_polarization);
    assert_true(info.flock.nn_p5 > 0 && info.flock.nn_p5 <= info.flock.nn_median);
    push(r, "{\"cmd\":\"stats\"}");
    tick_alone(r);
    cJSON *rep[2];
    assert_int_equal(take_replies(r, rep, 2), 1);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rep[0], "stats"), "flock");
    assert_true(num(f, "tick") == 15 && num(f, "boids") == BOIDS);
    assert_true((float)num(f, "nn_p5") == info.flock.nn_p5);
    cJSON_Delete(rep[0]);
    char welcome[PROTO_WELCOME_BYTES];
    struct room_actor who = {.client = 7, .role = PROTO_ROLE_VIEWER, .team = -1};
    assert_true(room_welcome(r, &who, welcome, sizeof welcome) > 0);
    cJSON *doc = cJSON_Parse(welcome);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(doc, "flock"), "tick") == 15);
    assert_null(cJSON_GetObjectItemCaseSensitive(doc, "groups"));
    cJSON_Delete(doc);
    room_destroy(r);
    measure_destroy(m);
}

/* The welcome lists the parameters of every group that differs from group 0. */
static void the_welcome_reports_every_groups_values(void **state)
{
    (void)state;
    struct room *r = room_new();
    push(r, "{\"cmd\":\"params\",\"group\":4,\"max_speed\":140}");
    tick(r, 1, 0);
    cJSON *rep[2];
    assert_int_equal(take_replies(r, rep, 2), 1);
    cJSON_Delete(rep[0]);
    static char welcome[PROTO_WELCOME_BYTES];
    struct room_actor who = {.client = 7, .role = PROTO_ROLE_VIEWER, .team = -1};
    assert_true(room_welcome(r, &who, welcome, sizeof welcome) > 0);
    cJSON *doc = cJSON_Parse(welcome);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(doc, "groups");
    assert_int_equal(cJSON_GetArraySize(groups), 1);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(groups, "4"), "max_speed") == 140);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(doc, "values"), "max_speed") == 100);
    cJSON_Delete(doc);
    room_destroy(r);
}

static void a_full_queue_refuses_with_queue_full(void **state)
{
    (void)state;
    struct room *r = room_new();
    struct proto_command cmd = {.kind = PROTO_CMD_PING};
    struct room_actor who = {.client = 7, .role = PROTO_ROLE_VIEWER, .team = -1};
    for (int k = 0; k < 16; k++)
        assert_int_equal(room_push(r, &who, &cmd), 0);
    assert_int_equal(room_push(r, &who, &cmd), PROTO_E_QUEUE_FULL);
    assert_int_equal(room_push_refusal(r, 7, "1", PROTO_E_BAD_JSON, "no"), PROTO_E_QUEUE_FULL);
    who.client = 0; /* the server's own commands have a reserve */
    assert_int_equal(room_push(r, &who, &cmd), 0);
    room_destroy(r);
}

/* Pushes a ping from client `client` (any role may). */
static void ping_from(struct room *r, uint64_t client, const char *id)
{
    char text[64];
    snprintf(text, sizeof text, "{\"cmd\":\"ping\",\"id\":\"%s\"}", id);
    struct proto_limits lim;
    struct proto_command cmd;
    struct proto_error err;
    room_limits(r, PROTO_DEFAULT_MAX_MESSAGE, &lim);
    assert_int_equal(proto_command_parse(text, strlen(text), &lim, &cmd, &err), 0);
    struct room_actor who = {.client = client, .role = PROTO_ROLE_VIEWER, .team = -1};
    assert_int_equal(room_push(r, &who, &cmd), 0);
}

static void
each_service_thread_takes_its_own_clients_replies_in_order_and_its_own_news(void **state)
{
    (void)state;
    struct room *r = room_new();
    tick(r, 1000, 0);
    assert_int_equal(room_take_dirty(r, 0), 1);
    assert_int_equal(room_take_dirty(r, 0), 0); /* taken */
    assert_int_equal(room_take_dirty(r, 1), 1); /* thread 1's still there */
    ping_from(r, 4, "a");                       /* thread 0 of 2 */
    ping_from(r, 5, "b");                       /* thread 1 */
    ping_from(r, 6, "c");
    ping_from(r, 7, "d");
    tick(r, 2000, 0);
    struct room_reply *odd = room_take_replies_of(r, 1, 2);
    const char *want_odd[] = {"\"b\"", "\"d\""};
    int n = 0;
    for (struct room_reply *rep = odd, *next; rep; rep = next, n++) {
        next = rep->next;
        assert_int_equal(rep->client % 2, 1);
        assert_non_null(strstr(rep->text, want_odd[n]));
        free(rep);
    }
    assert_int_equal(n, 2);
    assert_null(room_take_replies_of(r, 1, 2)); /* nothing of thread 1 left */
    ping_from(r, 9, "e");
    tick(r, 3000, 0);
    struct room_reply *even = room_take_replies_of(r, 0, 2);
    const char *want_even[] = {"\"a\"", "\"c\""};
    n = 0;
    for (struct room_reply *rep = even, *next; rep; rep = next, n++) {
        next = rep->next;
        assert_non_null(strstr(rep->text, want_even[n]));
        free(rep);
    }
    assert_int_equal(n, 2);
    struct room_reply *last = room_take_replies(r); /* the list still ends right */
    assert_non_null(last);
    assert_int_equal(last->client, 9);
    assert_null(last->next);
    free(last);
    room_destroy(r);
}

/* The text a board sent last (room_text_fn). */
static void keep_text(void *ctx, const char *text, size_t len)
{
    snprintf(ctx, 256, "%.*s", (int)len, text);
}

/* Ticks r n times, a tick every gap_ns with each run costing cost_ns,
 * all of it work, watched by a version 1 client; returns the snapshots it
 * published. */
static int tick_paced(struct room *r, int n, int64_t gap_ns, int64_t cost_ns, int64_t *now)
{
    int frames = 0;
    uint64_t seq = 0;
    for (int k = 0; k < n; k++, *now += gap_ns) {
        struct frame *f = room_latest(r);
        room_want(r, FRAME_V1, f ? f->seq : 1);
        frame_release(f);
        struct pool_time t = {
            .now_ns = *now, .wall_us = *now / 1000, .last_ns = cost_ns, .last_work_ns = cost_ns};
        room_tick(r, &t);
        f = room_latest(r);
        frames += f->seq != seq;
        seq = f->seq;
        frame_release(f);
    }
    return frames;
}

/* The hash a ping in r reports, and its tick. */
static void ping_hash(struct room *r, char hash[17], double *at_tick)
{
    struct room_reply *old = room_take_replies(r);
    while (old) {
        struct room_reply *next = old->next;
        free(old);
        old = next;
    }
    push(r, "{\"cmd\":\"ping\",\"id\":1}");
    tick(r, 1, 0);
    cJSON *rep[1];
    assert_int_equal(take_replies(r, rep, 1), 1);
    snprintf(hash, 17, "%s", str(rep[0], "hash"));
    *at_tick = num(rep[0], "tick");
    cJSON_Delete(rep[0]);
}

static void a_room_whose_ticks_outgrow_its_period_dilates_and_steps_the_same(void **state)
{
    (void)state;
    struct room *fit = room_new(), *over = room_new();
    int64_t period = 1000000000 / 60, t0 = 1000000000, t1 = 1000000000;
    /* One keeps up (0.1 ms a tick); the other takes 5 periods a tick and
     * gets a tick every 6 periods (as its pace would give it). */
    int fit_frames = tick_paced(fit, 120, period, 100000, &t0);
    int over_frames = tick_paced(over, 120, 6 * period, 5 * period, &t1);
    char fit_hash[17], over_hash[17];
    double fit_tick, over_tick;
    ping_hash(fit, fit_hash, &fit_tick);
    ping_hash(over, over_hash, &over_tick);
    assert_true(fit_tick == over_tick);
    assert_string_equal(fit_hash, over_hash); /* the same steps: dt never changes */
    assert_int_equal(fit_frames, 120);        /* 60 snapshots a second: every tick */
    assert_true(over_frames < 60);            /* the floor: one of several ticks */
    struct room_info a, b;
    room_info(fit, &a);
    room_info(over, &b);
    assert_true(a.dilation == 1.0 && a.snapshot_hz_now == 60);
    assert_true(b.dilation > 0.1 && b.dilation < 0.2); /* about 1/6 */
    assert_true(b.snapshot_hz_now <= 5);
    /* Its members are told; the other room's have nothing to hear. */
    char text[256] = "";
    assert_false(room_take_dilation_news(fit, 0));
    assert_true(room_take_dilation_news(over, 0));
    uint64_t v = room_dilation_send(over, 0, keep_text, text);
    assert_true(v > 0 && v == room_dilation_version(over));
    cJSON *msg = cJSON_Parse(text);
    assert_non_null(msg);
    assert_string_equal(str(msg, "type"), "dilation");
    assert_string_equal(str(msg, "room"), "test");
    assert_true(num(msg, "factor") > 0 && num(msg, "factor") < 1);
    cJSON_Delete(msg);
    text[0] = '\0';
    assert_int_equal(room_dilation_send(over, v, keep_text, text), v);
    assert_string_equal(text, ""); /* nothing newer */
    /* The welcome says so, and stats too. */
    static char welcome[PROTO_WELCOME_BYTES];
    struct room_actor who = {.client = 7, .role = PROTO_ROLE_VIEWER, .team = -1};
    assert_true(room_welcome(over, &who, welcome, sizeof welcome) > 0);
    msg = cJSON_Parse(welcome);
    assert_true(num(msg, "dilation") == b.dilation);
    cJSON_Delete(msg);
    assert_true(room_welcome(fit, &who, welcome, sizeof welcome) > 0);
    assert_null(strstr(welcome, "dilation"));
    push(over, "{\"cmd\":\"stats\",\"id\":2}");
    tick(over, 1, 0);
    cJSON *rep[1];
    assert_int_equal(take_replies(over, rep, 1), 1);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(rep[0], "stats");
    assert_true(num(st, "dilation") > 0 && num(st, "dilation") < 1 && num(st, "snapshot_hz") <= 5);
    cJSON_Delete(rep[0]);
    room_destroy(fit);
    room_destroy(over);
}

/* ---- a cluster's room --------------------------------------------------------- */

/* A cluster as the room sees it through its link: a log that answers
 * log_rc, a bucket (the persist's sink) that keeps the last checkpoint it
 * got and counts them. */
struct fake_cluster {
    int log_rc;
    bool keeps_log;     /* its batches go to shared_log */
    int batches, marks; /* batches handed to the log, those that marked a checkpoint */
    int stored;         /* checkpoints the sink got */
    int forwards;       /* commands the room forwarded as a relay */
    uint8_t *ck;        /* the last of them (malloc'd) */
    size_t ck_len;
    struct persist *p;
    struct room_link link;
};

/* One room's command log as the stream holds it: the batches of every
 * fake cluster that keeps its log, in order. */
static struct {
    uint8_t *buf;
    size_t len;
} shared_log;

static void shared_log_append(const uint8_t *records, size_t len)
{
    uint8_t *grown = realloc(shared_log.buf, shared_log.len + len);
    assert_non_null(grown);
    memcpy(grown + shared_log.len, records, len);
    shared_log.buf = grown;
    shared_log.len += len;
}

static void fake_attach(void *arg, struct room *r)
{
    (void)arg;
    (void)r;
}

static void fake_frame(void *arg, struct room *r, const struct frame *f)
{
    (void)arg;
    (void)r;
    (void)f;
}

static bool fake_reply(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                       size_t len)
{
    (void)arg;
    (void)client;
    (void)kind;
    (void)text;
    (void)len;
    return false;
}

static bool fake_can_log(void *arg, struct room *r)
{
    (void)arg;
    (void)r;
    return true;
}

static int fake_log(void *arg, struct room *r, const uint8_t *records, size_t len,
                    uint32_t checkpoint)
{
    struct fake_cluster *fc = arg;
    (void)r;
    fc->batches++;
    fc->marks += checkpoint != 0;
    if (fc->keeps_log && fc->log_rc == 0)
        shared_log_append(records, len);
    return fc->log_rc;
}

static int fake_forward(void *arg, struct room *r, const struct room_actor *who,
                        const struct proto_command *cmd, int refused, const char *message)
{
    struct fake_cluster *fc = arg;
    (void)r;
    (void)who;
    (void)cmd;
    (void)refused;
    (void)message;
    fc->forwards++;
    return 0;
}

static void fake_sink(void *arg, const char *room, const uint8_t *buf, size_t len)
{
    struct fake_cluster *fc = arg;
    (void)room;
    fc->stored++;
    free(fc->ck);
    fc->ck = malloc(len);
    assert_non_null(fc->ck);
    memcpy(fc->ck, buf, len);
    fc->ck_len = len;
}

/* A room of fc's cluster, made its owner and ticked once. */
static struct room *fake_owner(struct fake_cluster *fc)
{
    struct persist_config pc = {.checkpoint_every = 0,
                                .build = "test",
                                .max_capacity = CAPACITY,
                                .max_obstacles = 4,
                                .sink = fake_sink,
                                .sink_arg = fc};
    const char *err = NULL;
    fc->p = persist_create(&pc, &err);
    assert_non_null(fc->p);
    fc->link = (struct room_link){.arg = fc,
                                  .frame = fake_frame,
                                  .reply = fake_reply,
                                  .attach = fake_attach,
                                  .detach = fake_attach,
                                  .can_log = fake_can_log,
                                  .log = fake_log,
                                  .forward = fake_forward};
    struct room_config cfg = room_config_of_tests();
    cfg.persist = fc->p;
    cfg.link = &fc->link;
    struct room *r = room_create(&cfg, &err);
    assert_non_null(r);
    room_relay_set(r, true, NULL); /* the cluster makes it the owner */
    tick(r, 1000, 0);
    return r;
}

static void fake_destroy(struct fake_cluster *fc, struct room *r)
{
    room_destroy(r);
    persist_destroy(fc->p);
    free(fc->ck);
}

/* A spawn of n boids and a checkpoint in one turn of the room, ticked at
 * wall_us, the checkpoint written: the spawn's reply's type. */
static void spawn_and_checkpoint(struct fake_cluster *fc, struct room *r, int n, int64_t wall_us,
                                 char *reply_type, size_t cap)
{
    char text[128];
    snprintf(text, sizeof text,
             "{\"cmd\":\"spawn\",\"id\":\"s\",\"n\":%d,\"group\":0,\"x\":10,\"y\":10}", n);
    push(r, text);
    struct ckpt id = {.mode = PROTO_MODE_SANDBOX};
    snprintf(id.room, sizeof id.room, "test");
    assert_int_equal(room_checkpoint(r, &id), 0);
    tick(r, wall_us, 0);
    persist_flush(fc->p);
    cJSON *rep[4];
    assert_int_equal(take_replies(r, rep, 4), 1);
    snprintf(reply_type, cap, "%s", str(rep[0], "type"));
    cJSON_Delete(rep[0]);
}

static void a_cluster_rooms_checkpoint_is_stored_only_once_the_log_has_its_mark(void **state)
{
    (void)state;
    /* What the log answers the batch carrying the spawn and the mark; a
     * refused spawn (unavailable, or no answer) must not be in a stored
     * checkpoint. */
    static const struct {
        int log_rc;
        const char *reply;
        int stored;
    } cases[] = {{0, "ack", 1}, {PROTO_E_UNAVAILABLE, "error", 0}, {PROTO_E_INTERNAL, "error", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char type[16];
        struct fake_cluster fc = {.log_rc = cases[k].log_rc};
        struct room *r = fake_owner(&fc);
        spawn_and_checkpoint(&fc, r, 1, 2000, type, sizeof type);
        assert_string_equal(type, cases[k].reply);
        assert_int_equal(fc.marks, 1);
        assert_int_equal(fc.stored, cases[k].stored);
        fake_destroy(&fc, r);
    }
}

static uint32_t boids_of(struct room *r)
{
    struct room_info info;
    room_info(r, &info);
    return info.boids;
}

/* A room of fc's cluster that spawned a boid and took a checkpoint, acked
 * and stored; *kept: its boids then. */
static struct room *checkpointed_owner(struct fake_cluster *fc, uint32_t *kept)
{
    char type[16];
    struct room *r = fake_owner(fc);
    spawn_and_checkpoint(fc, r, 1, 2000, type, sizeof type);
    assert_string_equal(type, "ack");
    *kept = boids_of(r);
    return r;
}

/* The cluster gives room r back to its node with the checkpoint fc
 * stored last (its log read as empty). */
static void give_back(struct fake_cluster *fc, struct room *r)
{
    struct room_takeover t = {.ck = fc->ck, .ck_len = fc->ck_len};
    fc->ck = NULL;
    room_relay_set(r, true, &t);
}

/* The cluster steps a room down (its log refused a batch) and, the lease
 * still its node's, gives it back at once with the room's checkpoint: if
 * the room's thread takes only the second switch, the world it ticked
 * since the checkpoint (holding the refused batch) must not go on. */
static void a_room_given_back_before_it_stepped_down_resumes_from_its_checkpoint(void **state)
{
    (void)state;
    char type[16];
    uint32_t kept;
    struct fake_cluster fc = {.log_rc = 0};
    struct room *r = checkpointed_owner(&fc, &kept);
    fc.log_rc = PROTO_E_UNAVAILABLE;
    spawn_and_checkpoint(&fc, r, 5, 3000, type, sizeof type);
    assert_string_equal(type, "error");
    assert_int_equal(fc.stored, 1);
    assert_int_equal(boids_of(r), kept + 5); /* applied here, not in the log */
    room_relay_set(r, false, NULL);
    give_back(&fc, r);
    fc.log_rc = 0;
    tick(r, 4000, 0);
    assert_int_equal(boids_of(r), kept);
    fake_destroy(&fc, r);
}

/* A command another node sent this node as the room's owner, queued
 * before the room took the switch from relay: forwarded again it would
 * carry a new origin and be applied twice if the log had it already. It
 * is neither forwarded nor applied (its node sends it again); a command
 * of this node's own client is forwarded. */
static void another_nodes_command_queued_in_a_relay_is_left_to_its_node(void **state)
{
    (void)state;
    struct fake_cluster fc = {.log_rc = 0};
    struct room *r = fake_owner(&fc);
    room_relay_set(r, false, NULL);
    tick(r, 2000, 0);
    uint32_t before = boids_of(r);
    push_from(r, PROTO_ORIGIN_BIT | 5,
              "{\"cmd\":\"spawn\",\"id\":1,\"n\":3,\"group\":0,\"x\":10,\"y\":10}");
    tick(r, 3000, 0);
    cJSON *rep[2];
    assert_int_equal(take_replies(r, rep, 2), 0);
    assert_int_equal(fc.forwards, 0);
    assert_int_equal(boids_of(r), before);
    push(r, "{\"cmd\":\"spawn\",\"id\":2,\"n\":3,\"group\":0,\"x\":10,\"y\":10}");
    tick(r, 4000, 0);
    assert_int_equal(fc.forwards, 1);
    fake_destroy(&fc, r);
}

/* A command of another node applied in a batch its log refused: the room
 * noted its origin. Taken back from the checkpoint (without that batch),
 * the room must apply the command when its node sends it again, not ack
 * it as applied before. */
static void a_command_of_a_refused_batch_sent_again_after_a_takeover_is_applied(void **state)
{
    (void)state;
    uint32_t kept;
    struct fake_cluster fc = {.log_rc = 0};
    struct room *r = checkpointed_owner(&fc, &kept);
    static const char spawn5[] =
        "{\"cmd\":\"spawn\",\"id\":1,\"n\":5,\"group\":0,\"x\":10,\"y\":10}";
    fc.log_rc = PROTO_E_UNAVAILABLE;
    push_from(r, PROTO_ORIGIN_BIT | 9, spawn5);
    tick(r, 3000, 0);
    assert_int_equal(boids_of(r), kept + 5); /* applied here, not in the log */
    room_relay_set(r, false, NULL);
    tick(r, 4000, 0);
    give_back(&fc, r);
    fc.log_rc = 0;
    tick(r, 5000, 0);
    assert_int_equal(boids_of(r), kept);
    push_from(r, PROTO_ORIGIN_BIT | 9, spawn5); /* its node sends it again */
    tick(r, 6000, 0);
    assert_int_equal(boids_of(r), kept + 5);
    fake_destroy(&fc, r);
}

static uint64_t tick_of(struct room *r)
{
    struct room_info info;
    room_info(r, &info);
    return info.tick;
}

static void *copy_of(const void *buf, size_t len)
{
    void *out = malloc(len);
    assert_non_null(out);
    memcpy(out, buf, len);
    return out;
}

/* Room r, made a relay, taken over with checkpoint ck and the shared log
 * as it is now, its old owner last seen at tick `seen`; its RESUME mark
 * then goes into the log, as the cluster writes it. */
static void take_over(struct room *r, const struct fake_cluster *from, uint64_t seen,
                      int64_t wall_us)
{
    room_relay_set(r, false, NULL);
    tick(r, wall_us, 0);
    struct room_takeover t = {.ck = copy_of(from->ck, from->ck_len),
                              .ck_len = from->ck_len,
                              .log = copy_of(shared_log.buf, shared_log.len),
                              .log_len = shared_log.len,
                              .tick = seen};
    uint8_t mark[64];
    int len = room_resume_mark(mark, sizeof mark, seen, 2);
    assert_true(len > 0);
    shared_log_append(mark, (size_t)len);
    room_relay_set(r, true, &t);
    tick(r, wall_us + 1000, 0);
}

/* The old owner logged a batch past the last frame its taker saw: the
 * taker's RESUME mark has a tick behind the records before it. A third
 * node taking the room over from the same checkpoint replays the log
 * through that mark (nothing to step) to the same world, not falling
 * back to the checkpoint alone. */
static void a_log_whose_takeover_mark_is_behind_its_records_replays_through_it(void **state)
{
    (void)state;
    struct fake_cluster a = {.keeps_log = true}, b = {.keeps_log = true}, c = {0};
    uint32_t kept;
    struct room *ra = checkpointed_owner(&a, &kept), *rb = fake_owner(&b), *rc = fake_owner(&c);
    for (int k = 0; k < 3; k++) {
        tick(ra, 3000 + k, 0);
        push(ra, "{\"cmd\":\"spawn\",\"id\":1,\"n\":3,\"group\":0,\"x\":10,\"y\":10}");
    }
    tick(ra, 4000, 0); /* its last batch, frame unseen */
    assert_int_equal(boids_of(ra), kept + 9);
    take_over(rb, &a, tick_of(ra) - 3, 5000);
    assert_int_equal(boids_of(rb), boids_of(ra));
    push(rb, "{\"cmd\":\"spawn\",\"id\":2,\"n\":2,\"group\":0,\"x\":10,\"y\":10}");
    tick(rb, 7000, 0);
    take_over(rc, &a, tick_of(rb), 8000);
    assert_int_equal(boids_of(rc), boids_of(rb));
    assert_int_equal(tick_of(rc), tick_of(rb) + 1);
    fake_destroy(&a, ra);
    fake_destroy(&b, rb);
    fake_destroy(&c, rc);
    free(shared_log.buf);
    shared_log.buf = NULL;
    shared_log.len = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            each_service_thread_takes_its_own_clients_replies_in_order_and_its_own_news),
        cmocka_unit_test(a_tick_stamps_the_wall_time_it_was_given_into_its_snapshot),
        cmocka_unit_test(commands_are_acked_with_their_tick_and_show_in_the_next_snapshot),
        cmocka_unit_test(refusals_by_the_world_are_wire_codes_and_change_nothing),
        cmocka_unit_test(sim_errors_map_to_wire_codes),
        cmocka_unit_test(the_lateness_reported_is_what_the_ticks_were_told),
        cmocka_unit_test(a_room_encodes_the_kinds_its_clients_took_lately_and_no_other),
        cmocka_unit_test(a_keyframe_command_is_acked_counted_and_marks_its_reply),
        cmocka_unit_test(stats_is_acked_with_the_rooms_figures),
        cmocka_unit_test(a_measured_room_reports_its_flock),
        cmocka_unit_test(the_welcome_reports_every_groups_values),
        cmocka_unit_test(a_full_queue_refuses_with_queue_full),
        cmocka_unit_test(a_room_whose_ticks_outgrow_its_period_dilates_and_steps_the_same),
        cmocka_unit_test(a_cluster_rooms_checkpoint_is_stored_only_once_the_log_has_its_mark),
        cmocka_unit_test(a_room_given_back_before_it_stepped_down_resumes_from_its_checkpoint),
        cmocka_unit_test(another_nodes_command_queued_in_a_relay_is_left_to_its_node),
        cmocka_unit_test(a_command_of_a_refused_batch_sent_again_after_a_takeover_is_applied),
        cmocka_unit_test(a_log_whose_takeover_mark_is_behind_its_records_replays_through_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
