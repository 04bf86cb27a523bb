/*
 * test_idmap — client id -> session lookups: what was put is found until
 * it is deleted, bad ids and duplicates are refused, the map refuses ids
 * past its capacity, and a long churn of connects and disconnects keeps
 * every live id findable.
 */
#include "idmap.h"
#include "base.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void a_value_is_found_by_its_id_until_deleted(void **state)
{
    (void)state;
    struct idmap m;
    int a, b;
    assert_int_equal(idmap_init(&m, 8), 0);
    assert_int_equal(idmap_put(&m, 1, &a), 0);
    assert_int_equal(idmap_put(&m, 2, &b), 0);
    assert_ptr_equal(idmap_get(&m, 1), &a);
    assert_ptr_equal(idmap_get(&m, 2), &b);
    assert_null(idmap_get(&m, 3));
    idmap_del(&m, 1);
    assert_null(idmap_get(&m, 1));
    assert_ptr_equal(idmap_get(&m, 2), &b);
    idmap_del(&m, 1); /* gone already: nothing happens */
    assert_int_equal(idmap_count(&m), 1);
    idmap_free(&m);
}

static void id_zero_a_null_value_and_a_second_put_are_refused(void **state)
{
    (void)state;
    struct idmap m;
    int a, b;
    assert_int_equal(idmap_init(&m, 8), 0);
    assert_int_equal(idmap_put(&m, 0, &a), BASE_EINVAL);
    assert_int_equal(idmap_put(&m, 5, NULL), BASE_EINVAL);
    assert_int_equal(idmap_put(&m, 5, &a), 0);
    assert_int_equal(idmap_put(&m, 5, &b), BASE_EINVAL);
    assert_ptr_equal(idmap_get(&m, 5), &a); /* refused: nothing changed */
    assert_int_equal(idmap_count(&m), 1);
    idmap_free(&m);
}

static void ids_past_the_capacity_are_refused(void **state)
{
    (void)state;
    struct idmap m;
    int v;
    assert_int_equal(idmap_init(&m, 3), 0);
    for (uint64_t id = 1; id <= 3; id++)
        assert_int_equal(idmap_put(&m, id, &v), 0);
    assert_int_equal(idmap_put(&m, 4, &v), BASE_EFULL);
    assert_null(idmap_get(&m, 4));
    idmap_del(&m, 2);
    assert_int_equal(idmap_put(&m, 4, &v), 0);
    idmap_free(&m);
}

/* Sessions come and go with ever-growing ids, as connections do. */
static void a_long_churn_keeps_every_live_id_findable(void **state)
{
    (void)state;
    enum { LIVE = 64 };
    struct idmap m;
    int values[LIVE];
    assert_int_equal(idmap_init(&m, LIVE), 0);
    for (uint64_t id = 1; id <= 100000; id++) {
        if (id > LIVE)
            idmap_del(&m, id - LIVE); /* the oldest leaves */
        assert_int_equal(idmap_put(&m, id, &values[id % LIVE]), 0);
        if (id % 1000 == 0)
            for (uint64_t k = id - LIVE + 1; k <= id; k++)
                assert_ptr_equal(idmap_get(&m, k), &values[k % LIVE]);
    }
    assert_int_equal(idmap_count(&m), LIVE);
    assert_null(idmap_get(&m, 100000 - LIVE));
    idmap_free(&m);
}

static void iteration_yields_every_value_once(void **state)
{
    (void)state;
    struct idmap m;
    int values[10] = {0};
    assert_int_equal(idmap_init(&m, 10), 0);
    for (uint64_t id = 1; id <= 10; id++)
        assert_int_equal(idmap_put(&m, id * 1000003, &values[id - 1]), 0);
    size_t cursor = 0, n = 0;
    for (int *v; (v = idmap_next(&m, &cursor)) != NULL; n++)
        (*v)++;
    assert_int_equal(n, 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(values[i], 1);
    idmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_value_is_found_by_its_id_until_deleted),
        cmocka_unit_test(id_zero_a_null_value_and_a_second_put_are_refused),
        cmocka_unit_test(ids_past_the_capacity_are_refused),
        cmocka_unit_test(a_long_churn_keeps_every_live_id_findable),
        cmocka_unit_test(iteration_yields_every_value_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
