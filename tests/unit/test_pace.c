/*
 * test_pace — a room's rates under load (pace.h), from the costs and
 * times the test gives: a room whose work fits keeps its nominal rates;
 * one that outgrows them sends fewer snapshots first, down to the floor,
 * and only then dilates its clock, and at the worst snapshots on every
 * tick; it comes back to its nominal rates only once they fit with
 * headroom; the estimates rise at most twofold a tick and fall a fifth of
 * the way; the dilation reported is 1.0 unless the room dilates, then the
 * lower of the rate chosen and the rate measured; members are told on
 * entering, on a change of 0.05 and on leaving, at most once a second.
 */
#include "pace.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MS 1000000.0

/* A 30 Hz room of 20 snapshots a second, started at 1 s. */
struct trial {
    struct pace p;
    int64_t now_ns;
};

static void trial_init(struct trial *t)
{
    pace_init(&t->p, 30, 20);
    t->now_ns = 1000000000;
}

/* n ticks, each a period as the pace chose after the last, each run
 * costing tick_ms and a snapshot of snap_ms (snap_ms < 0: none). */
static void run(struct trial *t, int n, double tick_ms, double snap_ms)
{
    for (int k = 0; k < n; k++) {
        int64_t snap = snap_ms < 0 ? -1 : llround(snap_ms * MS);
        int64_t cost = llround(tick_ms * MS) + (snap > 0 ? snap : 0);
        pace_tick(&t->p, t->now_ns, cost, snap);
        t->now_ns += pace_period_ns(&t->p);
    }
}

static void a_room_whose_work_fits_keeps_its_nominal_rates(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 60, 20, 10); /* 30 x 20 + 20 x 10 = 800 ms of work a second */
    assert_false(pace_is_dilated(&t.p));
    assert_int_equal(pace_period_ns(&t.p), (int64_t)(1e9 / 30));
    assert_true(pace_snapshot_step(&t.p) == 20 && pace_snapshot_hz(&t.p) == 20);
    assert_true(pace_dilation(&t.p) == 1.0);
}

static void snapshots_drop_before_the_tick_rate_does(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 60, 28, 10); /* 840 + 200 > 1000: 6 snapshots fit 900 */
    assert_false(pace_is_dilated(&t.p));
    assert_int_equal(pace_period_ns(&t.p), (int64_t)(1e9 / 30));
    assert_true(fabs(pace_snapshot_hz(&t.p) - 6) < 0.01);
    assert_true(fabs(pace_snapshot_step(&t.p) - 6) < 0.01); /* of 30 ticks: 6 publish */
    assert_true(pace_dilation(&t.p) == 1.0);
}

static void then_the_clock_dilates_with_snapshots_at_the_floor(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 120, 40, 10); /* 5 snapshots: (900 - 50) / 40 = 21.25 ticks a second */
    assert_true(pace_is_dilated(&t.p));
    assert_int_equal(pace_period_ns(&t.p), llround(1e9 / 21.25));
    assert_true(pace_snapshot_hz(&t.p) == PACE_SNAPSHOT_FLOOR_HZ);
    assert_true(fabs(pace_snapshot_step(&t.p) - 30 * 5 / 21.25) < 1e-9);
    assert_true(fabs(pace_dilation(&t.p) - 21.25 / 30) < 0.002);
}

static void a_room_slower_than_the_floor_snapshots_every_tick(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 40, 500, 100); /* 900 / 600: 1.5 ticks a second */
    assert_true(pace_is_dilated(&t.p));
    assert_true(fabs(pace_snapshot_hz(&t.p) - 1.5) < 1e-9);
    assert_true(fabs(pace_snapshot_step(&t.p) - 30) < 1e-9); /* every tick */
    assert_true(fabs(pace_dilation(&t.p) - 0.05) < 0.002);
}

static void the_dilation_is_the_rate_measured_when_the_ticks_come_slower_still(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    for (int k = 0; k < 100; k++) { /* it chooses 21.25 a second, but gets 10 */
        pace_tick(&t.p, t.now_ns, llround(50 * MS), llround(10 * MS));
        t.now_ns += 100000000;
    }
    assert_true(pace_is_dilated(&t.p));
    assert_true(fabs(pace_dilation(&t.p) - 10.0 / 30) < 0.002);
    /* A room that does not dilate reports 1.0, however late its ticks. */
    trial_init(&t);
    for (int k = 0; k < 100; k++) {
        pace_tick(&t.p, t.now_ns, llround(1 * MS), -1);
        t.now_ns += 100000000;
    }
    assert_false(pace_is_dilated(&t.p));
    assert_true(pace_dilation(&t.p) == 1.0);
}

static void the_nominal_rates_come_back_only_with_headroom(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 60, 40, 10);
    assert_true(pace_is_dilated(&t.p));
    run(&t, 200, 29, 2); /* 870 + 40 = 910 of 1000: it fits, but not in 90 % */
    assert_true(pace_snapshot_hz(&t.p) < 20);
    assert_false(pace_is_dilated(&t.p));
    run(&t, 200, 26, 2); /* 780 + 40 = 820: within 900 */
    assert_true(pace_snapshot_hz(&t.p) == 20 && pace_snapshot_step(&t.p) == 20);
    assert_true(pace_dilation(&t.p) == 1.0);
}

static void the_estimates_rise_at_most_twofold_and_fall_a_fifth_of_the_way(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 1, 10, -1);
    assert_true(fabs(t.p.tick_ns - 10 * MS) < 1);
    run(&t, 1, 1000, -1); /* one tick the machine held up */
    assert_true(fabs(t.p.tick_ns - 20 * MS) < 1);
    assert_false(pace_is_dilated(&t.p)); /* 30 x 20 ms: it still fits */
    run(&t, 1, 1e-6, -1);
    assert_true(fabs(t.p.tick_ns - 16 * MS) < 1);
    run(&t, 1, 10, 5); /* the first snapshot measured is taken as it is */
    assert_true(fabs(t.p.snap_ns - 5 * MS) < 1);
}

static void members_are_told_on_entering_on_a_change_and_on_leaving_once_a_second(void **state)
{
    (void)state;
    struct trial t;
    trial_init(&t);
    run(&t, 30, 10, 1);
    assert_false(pace_should_tell(&t.p, t.now_ns)); /* 1.0, as they know */
    run(&t, 30, 40, 10);
    int64_t at = t.now_ns;
    assert_true(pace_should_tell(&t.p, at)); /* entering */
    assert_false(pace_should_tell(&t.p, at));
    double told = pace_dilation(&t.p);
    run(&t, 5, 42, 10); /* a change of less than 0.05 */
    assert_true(pace_dilation(&t.p) < told && told - pace_dilation(&t.p) < PACE_TELL_STEP);
    assert_false(pace_should_tell(&t.p, at + 2000000000));
    run(&t, 5, 80, 10);                                   /* a change of more */
    assert_false(pace_should_tell(&t.p, at + 500000000)); /* within a second of the last */
    assert_true(pace_should_tell(&t.p, at + 1000000000));
    at += 1000000000;
    run(&t, 200, 10, 1); /* leaving */
    assert_true(pace_dilation(&t.p) == 1.0);
    assert_false(pace_should_tell(&t.p, at + 999000000));
    assert_true(pace_should_tell(&t.p, at + 1000000000));
    assert_false(pace_should_tell(&t.p, at + 5000000000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_room_whose_work_fits_keeps_its_nominal_rates),
        cmocka_unit_test(snapshots_drop_before_the_tick_rate_does),
        cmocka_unit_test(then_the_clock_dilates_with_snapshots_at_the_floor),
        cmocka_unit_test(a_room_slower_than_the_floor_snapshots_every_tick),
        cmocka_unit_test(the_dilation_is_the_rate_measured_when_the_ticks_come_slower_still),
        cmocka_unit_test(the_nominal_rates_come_back_only_with_headroom),
        cmocka_unit_test(the_estimates_rise_at_most_twofold_and_fall_a_fifth_of_the_way),
        cmocka_unit_test(members_are_told_on_entering_on_a_change_and_on_leaving_once_a_second),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
