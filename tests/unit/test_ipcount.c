/*
 * test_ipcount — connections per peer address: each address may hold up
 * to its limit, releases make room again, an address leaves the table with
 * its last connection, addresses are counted apart (IPv4-mapped and IPv6
 * alike), and a table holding its most addresses refuses a new one.
 */
#include "ipcount.h"
#include "base.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* ::ffff:a.b.c.d */
static void v4(unsigned char out[IPCOUNT_ADDR_LEN], int a, int b, int c, int d)
{
    memset(out, 0, IPCOUNT_ADDR_LEN);
    out[10] = out[11] = 0xff;
    out[12] = (unsigned char)a;
    out[13] = (unsigned char)b;
    out[14] = (unsigned char)c;
    out[15] = (unsigned char)d;
}

static void an_address_gets_its_limit_and_no_more(void **state)
{
    (void)state;
    struct ipcount c;
    unsigned char a[16];
    v4(a, 10, 0, 0, 1);
    assert_int_equal(ipcount_init(&c, 16, 3), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ipcount_take(&c, a), 0);
    assert_int_equal(ipcount_take(&c, a), BASE_EFULL);
    assert_int_equal(ipcount_of(&c, a), 3); /* refused: not counted */
    ipcount_release(&c, a);
    assert_int_equal(ipcount_take(&c, a), 0);
    assert_int_equal(ipcount_of(&c, a), 3);
    ipcount_free(&c);
}

static void the_last_release_removes_the_address(void **state)
{
    (void)state;
    struct ipcount c;
    unsigned char a[16], b[16];
    v4(a, 10, 0, 0, 1);
    v4(b, 10, 0, 0, 2);
    assert_int_equal(ipcount_init(&c, 16, 5), 0);
    assert_int_equal(ipcount_take(&c, a), 0);
    assert_int_equal(ipcount_take(&c, a), 0);
    assert_int_equal(ipcount_addresses(&c), 1);
    ipcount_release(&c, a);
    assert_int_equal(ipcount_addresses(&c), 1);
    ipcount_release(&c, a);
    assert_int_equal(ipcount_addresses(&c), 0);
    assert_int_equal(ipcount_of(&c, a), 0);
    ipcount_release(&c, a); /* none left: nothing happens */
    ipcount_release(&c, b); /* never seen: nothing happens */
    assert_int_equal(ipcount_addresses(&c), 0);
    ipcount_free(&c);
}

static void addresses_are_counted_apart(void **state)
{
    (void)state;
    struct ipcount c;
    unsigned char a[16], b[16], six[16] = {0x20, 0x01, 0x0d, 0xb8};
    v4(a, 127, 0, 0, 1);
    v4(b, 127, 0, 0, 2);
    assert_int_equal(ipcount_init(&c, 16, 1), 0);
    assert_int_equal(ipcount_take(&c, a), 0);
    assert_int_equal(ipcount_take(&c, b), 0);
    assert_int_equal(ipcount_take(&c, six), 0);
    assert_int_equal(ipcount_take(&c, a), BASE_EFULL);
    assert_int_equal(ipcount_take(&c, six), BASE_EFULL);
    assert_int_equal(ipcount_addresses(&c), 3);
    ipcount_free(&c);
}

static void a_table_holding_its_most_addresses_refuses_a_new_one(void **state)
{
    (void)state;
    struct ipcount c;
    unsigned char a[16];
    assert_int_equal(ipcount_init(&c, 4, 10), 0);
    for (int i = 0; i < 4; i++) {
        v4(a, 192, 168, 0, i);
        assert_int_equal(ipcount_take(&c, a), 0);
    }
    v4(a, 192, 168, 0, 4);
    assert_int_equal(ipcount_take(&c, a), BASE_EFULL);
    v4(a, 192, 168, 0, 0);
    assert_int_equal(ipcount_take(&c, a), 0); /* a known one still may */
    ipcount_free(&c);
}

/* Many addresses coming and going (a churn of clients from a subnet). */
static void a_churn_of_addresses_leaves_an_empty_table(void **state)
{
    (void)state;
    struct ipcount c;
    unsigned char a[16];
    assert_int_equal(ipcount_init(&c, 256, 2), 0);
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 256; i++) {
            v4(a, 10, round, i, 1);
            assert_int_equal(ipcount_take(&c, a), 0);
        }
        for (int i = 0; i < 256; i++) {
            v4(a, 10, round, (i * 7) % 256, 1); /* released in another order */
            assert_int_equal(ipcount_of(&c, a), 1);
            ipcount_release(&c, a);
        }
        assert_int_equal(ipcount_addresses(&c), 0);
    }
    ipcount_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_address_gets_its_limit_and_no_more),
        cmocka_unit_test(the_last_release_removes_the_address),
        cmocka_unit_test(addresses_are_counted_apart),
        cmocka_unit_test(a_table_holding_its_most_addresses_refuses_a_new_one),
        cmocka_unit_test(a_churn_of_addresses_leaves_an_empty_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
