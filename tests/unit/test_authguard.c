/*
 * test_authguard — failed authentications: free tries, then delays that
 * double per failure up to a ceiling, per address and over all addresses;
 * failures drain with time; a success clears its address; a full table
 * forgets the address with the fewest failures.
 */
#include "authguard.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define S 1000000000LL

static void addr_of(unsigned char *a, unsigned n)
{
    memset(a, 0, AUTHGUARD_ADDR_LEN);
    a[10] = a[11] = 0xff;
    a[12] = 10;
    a[13] = (unsigned char)(n >> 16);
    a[14] = (unsigned char)(n >> 8);
    a[15] = (unsigned char)n;
}

static void an_address_gets_free_tries_then_doubling_delays_up_to_the_ceiling(void **state)
{
    (void)state;
    static struct authguard g;
    unsigned char a[AUTHGUARD_ADDR_LEN], b[AUTHGUARD_ADDR_LEN];
    int64_t all, now = 1000 * S;
    authguard_init(&g, 5, 50);
    addr_of(a, 1);
    addr_of(b, 2);
    for (int i = 0; i < 5; i++)
        assert_int_equal(authguard_failed(&g, a, now, &all), 0);
    assert_int_equal(authguard_wait(&g, a, now), 0);
    assert_int_equal(authguard_failed(&g, a, now, &all), 1 * S);
    assert_int_equal(authguard_wait(&g, a, now), 1 * S);
    assert_int_equal(authguard_wait(&g, b, now), 0); /* another address is not held */
    assert_int_equal(authguard_failed(&g, a, now, &all), 2 * S);
    assert_int_equal(authguard_failed(&g, a, now, &all), 4 * S);
    for (int i = 0; i < 20; i++)
        authguard_failed(&g, a, now, &all);
    assert_int_equal(authguard_wait(&g, a, now), 300 * S); /* the ceiling */
    assert_int_equal(all, 0);                              /* 28 failures: fewer than 50 */
    authguard_succeeded(&g, a);
    assert_int_equal(authguard_wait(&g, a, now), 0);
    assert_int_equal(authguard_failed(&g, a, now, &all), 0); /* free tries again */
}

static void failures_drain_one_a_minute_per_address(void **state)
{
    (void)state;
    static struct authguard g;
    unsigned char a[AUTHGUARD_ADDR_LEN];
    int64_t all, now = 1000 * S;
    authguard_init(&g, 5, 50);
    addr_of(a, 1);
    for (int i = 0; i < 5; i++)
        authguard_failed(&g, a, now, &all);
    now += 60 * S; /* one forgotten: four count, the next is free */
    assert_int_equal(authguard_failed(&g, a, now, &all), 0);
    assert_int_equal(authguard_failed(&g, a, now, &all), 1 * S);
    assert_true(authguard_failures(&g, a, now) > 5.9);
    now += 3600 * S;
    assert_true(authguard_failures(&g, a, now) == 0);
    assert_int_equal(authguard_wait(&g, a, now), 0);
}

static void many_addresses_together_put_every_address_on_hold(void **state)
{
    (void)state;
    static struct authguard g;
    unsigned char a[AUTHGUARD_ADDR_LEN], fresh[AUTHGUARD_ADDR_LEN];
    int64_t all = 0, now = 1000 * S;
    authguard_init(&g, 5, 50);
    for (unsigned n = 0; n < 50; n++) {
        addr_of(a, 100 + n);
        assert_int_equal(authguard_failed(&g, a, now, &all), 0);
        assert_int_equal(all, 0);
    }
    addr_of(a, 999);
    authguard_failed(&g, a, now, &all);
    assert_int_equal(all, 1 * S);
    addr_of(fresh, 5000);
    assert_int_equal(authguard_wait(&g, fresh, now), 1 * S);
    assert_int_equal(authguard_wait(&g, fresh, now + 1 * S), 0);
}

static void a_full_table_forgets_the_address_with_the_fewest_failures(void **state)
{
    (void)state;
    static struct authguard g;
    unsigned char a[AUTHGUARD_ADDR_LEN], heavy[AUTHGUARD_ADDR_LEN];
    int64_t all, now = 1000 * S;
    authguard_init(&g, 5, 50);
    g.global.free_tries = UINT32_MAX; /* only the table is under test */
    addr_of(heavy, 1);
    for (int i = 0; i < 8; i++)
        authguard_failed(&g, heavy, now, &all);
    int64_t held = authguard_wait(&g, heavy, now);
    assert_true(held > 0);
    for (unsigned n = 0; n < 3 * AUTHGUARD_ADDRS; n++) {
        addr_of(a, 10 + n);
        authguard_failed(&g, a, now, &all);
    }
    assert_int_equal(authguard_wait(&g, heavy, now), held); /* kept */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_address_gets_free_tries_then_doubling_delays_up_to_the_ceiling),
        cmocka_unit_test(failures_drain_one_a_minute_per_address),
        cmocka_unit_test(many_addresses_together_put_every_address_on_hold),
        cmocka_unit_test(a_full_table_forgets_the_address_with_the_fewest_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
