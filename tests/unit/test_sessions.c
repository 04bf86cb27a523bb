/*
 * test_sessions — admission of a service thread's sessions: ids are given
 * in order and found until removal, max-clients and max-per-ip refuse (and
 * count the refusal in /metrics) without keeping anything, a session whose
 * address is unknown is counted against max-clients only, and removal
 * frees both the id and the address's count; asking before a handshake
 * names the limit that would refuse it. Two service threads' sessions
 * sharing their counts: ids unique with a stride (id % threads names the
 * thread), max-clients and max-per-ip held over both. A connection's owner
 * is an opaque pointer to the table: here a small struct of the test's.
 * The queue of asks (connections to write a new frame to): first asked,
 * first taken, each at most once (asked again, it keeps its place), a
 * removed connection gone from it at once, its order kept as it grows.
 */
#include "metrics.h"
#include "proto.h"
#include "sessions.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static struct sessions_config config(uint32_t max_clients, uint32_t max_per_ip)
{
    return (struct sessions_config){.max_clients = max_clients,
                                    .max_per_ip = max_per_ip,
                                    .rate = 100,
                                    .burst = 200,
                                    .stale_timeout = 10,
                                    .send_buffer = 65536};
}

/* A connection's owner, embedding what the table keeps of it (as
 * session.h's struct session does). The entry is not its first member, so
 * finding the owner is not finding the entry. */
struct client {
    int tag;
    struct sessions_entry e;
};

/* A client about to be admitted from 10.0.0.last (0: address unknown). */
static void from(struct client *c, int last)
{
    memset(c, 0, sizeof *c);
    c->tag = last;
    if (!last)
        return;
    c->e.addr[10] = c->e.addr[11] = 0xff;
    c->e.addr[12] = 10;
    c->e.addr[15] = (unsigned char)last;
    c->e.counted = true;
}

static int admit(struct sessions *ss, struct client *c)
{
    return sessions_admit(ss, &c->e, c);
}

static void drop(struct sessions *ss, struct client *c)
{
    sessions_remove(ss, &c->e);
}

static uint64_t hits(enum metrics_limit which)
{
    return atomic_load(&g_metrics.limit_hits[which]);
}

static void admitted_sessions_get_ids_in_order_and_are_found_until_removed(void **state)
{
    (void)state;
    struct sessions ss;
    struct sessions_config c = config(4, 4);
    struct client a, b;
    assert_int_equal(sessions_init(&ss, &c), 0);
    from(&a, 1);
    from(&b, 2);
    assert_int_equal(admit(&ss, &a), 0);
    assert_int_equal(admit(&ss, &b), 0);
    assert_int_equal(a.e.id, 1);
    assert_int_equal(b.e.id, 2);
    assert_ptr_equal(sessions_find(&ss, 1), &a);
    assert_ptr_equal(sessions_find(&ss, 2), &b);
    assert_int_equal(sessions_count(&ss), 2);
    drop(&ss, &a);
    assert_null(sessions_find(&ss, 1));
    assert_int_equal(a.e.id, 0);
    assert_int_equal(sessions_count(&ss), 1);
    size_t cursor = 0;
    assert_ptr_equal(sessions_next(&ss, &cursor), &b);
    assert_null(sessions_next(&ss, &cursor));
    sessions_free(&ss);
}

static void max_clients_refuses_and_counts_the_hit(void **state)
{
    (void)state;
    struct sessions ss;
    struct sessions_config c = config(2, 10);
    struct client s[3];
    assert_int_equal(sessions_init(&ss, &c), 0);
    from(&s[0], 1);
    from(&s[1], 0); /* no address: counts against max-clients only */
    from(&s[2], 3);
    assert_int_equal(admit(&ss, &s[0]), 0);
    assert_int_equal(admit(&ss, &s[1]), 0);
    uint64_t before = hits(LIMIT_CONNECTIONS);
    assert_int_equal(admit(&ss, &s[2]), PROTO_E_CAPACITY);
    assert_int_equal(hits(LIMIT_CONNECTIONS), before + 1);
    assert_int_equal(s[2].e.id, 0);
    assert_int_equal(sessions_count(&ss), 2);
    drop(&ss, &s[1]);
    from(&s[2], 3);
    assert_int_equal(admit(&ss, &s[2]), 0); /* room again */
    sessions_free(&ss);
}

static void max_per_ip_refuses_an_address_with_its_limit(void **state)
{
    (void)state;
    struct sessions ss;
    struct sessions_config c = config(10, 2);
    struct client s[4];
    assert_int_equal(sessions_init(&ss, &c), 0);
    for (int i = 0; i < 3; i++)
        from(&s[i], 7);
    from(&s[3], 8);
    assert_int_equal(admit(&ss, &s[0]), 0);
    assert_int_equal(admit(&ss, &s[1]), 0);
    uint64_t before = hits(LIMIT_CONNECTIONS_IP);
    assert_int_equal(admit(&ss, &s[2]), PROTO_E_CAPACITY);
    assert_int_equal(hits(LIMIT_CONNECTIONS_IP), before + 1);
    assert_false(s[2].e.counted); /* refused: its release must count nothing */
    drop(&ss, &s[2]);
    assert_int_equal(admit(&ss, &s[3]), 0); /* another address may */
    drop(&ss, &s[0]);
    from(&s[2], 7);
    assert_int_equal(admit(&ss, &s[2]), 0); /* a slot came free */
    assert_int_equal(ipcount_of(&ss.shared->ips, s[2].e.addr), 2);
    sessions_free(&ss);
}

static void would_admit_names_the_limit_that_refuses_before_admission(void **state)
{
    (void)state;
    struct sessions ss;
    struct sessions_config c = config(3, 2);
    struct client s[3];
    assert_int_equal(sessions_init(&ss, &c), 0);
    from(&s[0], 7);
    from(&s[1], 7);
    from(&s[2], 8);
    assert_int_equal(sessions_would_admit(&ss, s[0].e.addr), LIMIT_COUNT);
    assert_int_equal(admit(&ss, &s[0]), 0);
    assert_int_equal(admit(&ss, &s[1]), 0);
    uint64_t before = hits(LIMIT_CONNECTIONS_IP);
    assert_int_equal(sessions_would_admit(&ss, s[1].e.addr), LIMIT_CONNECTIONS_IP);
    assert_int_equal(hits(LIMIT_CONNECTIONS_IP), before + 1);
    assert_int_equal(sessions_would_admit(&ss, s[2].e.addr), LIMIT_COUNT);
    assert_int_equal(sessions_would_admit(&ss, NULL), LIMIT_COUNT);
    assert_int_equal(admit(&ss, &s[2]), 0);
    before = hits(LIMIT_CONNECTIONS);
    assert_int_equal(sessions_would_admit(&ss, NULL), LIMIT_CONNECTIONS);
    assert_int_equal(hits(LIMIT_CONNECTIONS), before + 1);
    assert_int_equal(sessions_count(&ss), 3); /* asking admitted nothing */
    sessions_free(&ss);
}

static void two_threads_share_the_limits_and_stride_their_ids(void **state)
{
    (void)state;
    struct sessions_shared sh;
    assert_int_equal(sessions_shared_init(&sh, 3, 2), 0);
    struct sessions a, b;
    struct sessions_config ca = config(3, 2), cb = config(3, 2);
    ca.thread = 0, ca.threads = 2, ca.shared = &sh;
    cb.thread = 1, cb.threads = 2, cb.shared = &sh;
    assert_int_equal(sessions_init(&a, &ca), 0);
    assert_int_equal(sessions_init(&b, &cb), 0);
    struct client s[5];
    from(&s[0], 7);
    from(&s[1], 7);
    from(&s[2], 7);
    from(&s[3], 8);
    from(&s[4], 9);
    assert_int_equal(admit(&a, &s[0]), 0);
    assert_int_equal(admit(&b, &s[1]), 0);
    assert_int_equal(s[0].e.id % 2, 0);
    assert_int_equal(s[1].e.id % 2, 1);
    assert_null(sessions_find(&a, s[1].e.id)); /* each thread finds its own */
    assert_int_equal(sessions_would_admit(&a, s[2].e.addr), LIMIT_CONNECTIONS_IP);
    assert_int_equal(admit(&a, &s[2]), PROTO_E_CAPACITY); /* 2 from .7 already */
    assert_int_equal(admit(&a, &s[3]), 0);
    assert_int_equal(sessions_total(&b), 3);
    assert_int_equal(sessions_count(&b), 1);
    assert_int_equal(admit(&b, &s[4]), PROTO_E_CAPACITY); /* 3 in all */
    drop(&a, &s[0]);
    from(&s[4], 9);
    assert_int_equal(admit(&b, &s[4]), 0);
    assert_int_equal(s[4].e.id % 2, 1);
    assert_int_not_equal(s[4].e.id, s[1].e.id);
    sessions_free(&a);
    sessions_free(&b);
    sessions_shared_free(&sh);
}

static void asks_are_taken_in_order_once_each_and_forget_the_removed(void **state)
{
    (void)state;
    enum { N = 700 }; /* past the queue's first size, 256, and its second */
    static struct client c[N];
    struct sessions ss;
    struct sessions_config cfg = config(N, N);
    assert_int_equal(sessions_init(&ss, &cfg), 0);
    for (int i = 0; i < N; i++) {
        from(&c[i], 0);
        c[i].tag = i;
        assert_int_equal(admit(&ss, &c[i]), 0);
    }
    assert_null(sessions_take_ask(&ss));
    /* Taken in order; asked twice while waiting, once. */
    for (int i = 0; i < 10; i++)
        assert_true(sessions_ask(&ss, &c[i].e));
    assert_true(sessions_ask(&ss, &c[3].e));
    assert_ptr_equal(sessions_peek_ask(&ss, 0), &c[0].e);
    assert_ptr_equal(sessions_peek_ask(&ss, 9), &c[9].e);
    assert_null(sessions_peek_ask(&ss, 10));
    for (int i = 0; i < 5; i++)
        assert_ptr_equal(sessions_take_ask(&ss), &c[i].e);
    /* One taken may be asked again: behind those still waiting. */
    assert_true(sessions_ask(&ss, &c[1].e));
    /* A removed one is skipped. */
    sessions_remove(&ss, &c[7].e);
    assert_null(sessions_peek_ask(&ss, 2));
    int want[] = {5, 6, 8, 9, 1};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        assert_ptr_equal(sessions_take_ask(&ss), &c[want[k]].e);
    assert_null(sessions_take_ask(&ss));
    assert_int_equal(sessions_asks_waiting(&ss), 0);
    /* Many, with removals while the ring grows: the order holds. */
    for (int i = 0; i < N; i++) {
        if (i == 7)
            continue;
        assert_true(sessions_ask(&ss, &c[i].e));
        if (i % 3 == 2)
            sessions_remove(&ss, &c[i - 1].e);
    }
    for (int i = 0; i < N; i++) {
        if (i == 7 || (i % 3 == 1 && i + 1 < N))
            continue;
        struct sessions_entry *got = sessions_take_ask(&ss);
        assert_ptr_equal(got, &c[i].e);
    }
    assert_null(sessions_take_ask(&ss));
    sessions_free(&ss);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admitted_sessions_get_ids_in_order_and_are_found_until_removed),
        cmocka_unit_test(max_clients_refuses_and_counts_the_hit),
        cmocka_unit_test(max_per_ip_refuses_an_address_with_its_limit),
        cmocka_unit_test(would_admit_names_the_limit_that_refuses_before_admission),
        cmocka_unit_test(two_threads_share_the_limits_and_stride_their_ids),
        cmocka_unit_test(asks_are_taken_in_order_once_each_and_forget_the_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
