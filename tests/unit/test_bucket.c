/*
 * test_bucket — the per-connection rate limit with time driven by the
 * test: a full bucket lets `burst` commands through at once, refills at
 * `rate` up to `burst`, and a client that keeps sending into an empty
 * bucket is abusing it after about `burst` refusals, while one refused now
 * and then is not.
 */
#include "bucket.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MS 1000000LL
#define S  1000000000LL

static void a_full_bucket_lets_a_burst_through_then_refuses(void **state)
{
    (void)state;
    struct bucket b;
    int64_t now = 5 * S;
    bucket_init(&b, 10, 20, now);
    for (int i = 0; i < 20; i++)
        assert_true(bucket_take(&b, now));
    assert_false(bucket_take(&b, now));
    assert_false(bucket_is_abused(&b)); /* one refusal is no abuse */
}

static void tokens_refill_at_the_rate_up_to_the_burst(void **state)
{
    (void)state;
    struct bucket b;
    int64_t now = 0;
    bucket_init(&b, 10, 20, now);
    for (int i = 0; i < 20; i++)
        assert_true(bucket_take(&b, now));
    now += 350 * MS; /* 3.5 tokens */
    for (int i = 0; i < 3; i++)
        assert_true(bucket_take(&b, now));
    assert_false(bucket_take(&b, now));
    now += 60 * MS; /* the half token left and 0.6 more */
    assert_true(bucket_take(&b, now));
    now += 3600 * S; /* an hour idle: still only `burst` */
    for (int i = 0; i < 20; i++)
        assert_true(bucket_take(&b, now));
    assert_false(bucket_take(&b, now));
}

static void time_running_backwards_refills_nothing(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 1000, 2, 10 * S);
    assert_true(bucket_take(&b, 10 * S));
    assert_true(bucket_take(&b, 10 * S));
    assert_false(bucket_take(&b, 9 * S));
    assert_false(bucket_take(&b, 10 * S)); /* and the clock did not move forward */
}

static void sending_into_an_empty_bucket_is_abuse_after_burst_refusals(void **state)
{
    (void)state;
    struct bucket b;
    int64_t now = 0;
    bucket_init(&b, 50, 100, now);
    for (int i = 0; i < 100; i++)
        assert_true(bucket_take(&b, now));
    int refusals = 0;
    while (!bucket_is_abused(&b) && refusals < 1000) {
        now += 1 * MS; /* a flood at 1000/s: 50 tokens/s come back */
        if (!bucket_take(&b, now))
            refusals++;
    }
    assert_true(bucket_is_abused(&b));
    /* About burst refusals: the strikes drain a little meanwhile. */
    assert_in_range(refusals, 101, 130);
}

static void occasional_refusals_drain_away(void **state)
{
    (void)state;
    struct bucket b;
    int64_t now = 0;
    bucket_init(&b, 1, 10, now);
    for (int i = 0; i < 10; i++)
        assert_true(bucket_take(&b, now));
    /* Nine refusals a second (the tenth call gets the token that came
     * back): 90 strikes per 10 s window, nine times the burst... */
    for (int i = 0; i < 600 && !bucket_is_abused(&b); i++) {
        now += 100 * MS;
        bucket_take(&b, now);
    }
    assert_true(bucket_is_abused(&b));
    /* ...while one refusal a second for ten minutes stays below it. */
    bucket_init(&b, 0, 10, now);
    for (int i = 0; i < 10; i++)
        assert_true(bucket_take(&b, now));
    for (int i = 0; i < 600; i++) {
        now += 1 * S;
        bucket_take(&b, now);
        assert_false(bucket_is_abused(&b));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_full_bucket_lets_a_burst_through_then_refuses),
        cmocka_unit_test(tokens_refill_at_the_rate_up_to_the_burst),
        cmocka_unit_test(time_running_backwards_refills_nothing),
        cmocka_unit_test(sending_into_an_empty_bucket_is_abuse_after_burst_refusals),
        cmocka_unit_test(occasional_refusals_drain_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
