/*
 * test_table — the open-addressing table behind the session ids and the
 * per-address counts: random inserts and removes in a small, crowded
 * table agree with a plain model (so backward-shift deletion never loses a
 * key of a probe chain, also where chains wrap around the end), capacity
 * is enforced, and iteration sees every entry once.
 */
#include "base.h"
#include "table.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

struct slot {
    uint64_t key;
    uint32_t value;
};

#define KEYS 48 /* the universe of keys in the model test */

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Every key of the universe is found exactly when the model has it, with
 * the model's value. */
static void assert_agrees(const struct table *t, const int *model)
{
    size_t present = 0;
    for (uint64_t k = 0; k < KEYS; k++) {
        const struct slot *s = table_find(t, &k);
        if (model[k] < 0) {
            assert_null(s);
            continue;
        }
        present++;
        assert_non_null(s);
        assert_int_equal(s->key, k);
        assert_int_equal(s->value, model[k]);
    }
    assert_int_equal(table_count(t), present);
}

/* Random inserts and removes of KEYS keys in a table for max entries;
 * the size its array ended at. */
static size_t run_model(size_t max)
{
    struct table t;
    assert_int_equal(table_init(&t, sizeof(struct slot), sizeof(uint64_t), max), 0);
    int model[KEYS];
    for (int k = 0; k < KEYS; k++)
        model[k] = -1;
    size_t held = 0;
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (int op = 0; op < 200000; op++) {
        uint64_t k = next_random(&seed) % KEYS;
        if (model[k] >= 0 && next_random(&seed) % 2) {
            table_remove(&t, table_find(&t, &k));
            model[k] = -1;
            held--;
        } else {
            struct slot *s = table_insert(&t, &k);
            if (model[k] < 0 && held == max) {
                assert_null(s); /* full: refused */
                continue;
            }
            assert_non_null(s);
            if (model[k] < 0)
                held++;
            s->value = (uint32_t)op;
            model[k] = op;
        }
        assert_agrees(&t, model);
    }
    size_t nslots = t.nslots;
    table_free(&t);
    return nslots;
}

static void random_inserts_and_removes_agree_with_a_model(void **state)
{
    (void)state;
    /* 16 entries in 32 slots: half full, long chains, wrapping around. */
    assert_int_equal(run_model(16), 32);
}

static void a_table_that_grows_meanwhile_agrees_with_a_model(void **state)
{
    (void)state;
    /* 64 slots, doubled when a 33rd entry comes, never shrunk. */
    assert_int_equal(run_model(40), 128);
}

static void insert_returns_the_slot_already_holding_the_key(void **state)
{
    (void)state;
    struct table t;
    assert_int_equal(table_init(&t, sizeof(struct slot), sizeof(uint64_t), 4), 0);
    uint64_t k = 7;
    struct slot *s = table_insert(&t, &k);
    assert_non_null(s);
    assert_int_equal(s->key, 7);
    assert_int_equal(s->value, 0); /* the rest of a new slot is zeroed */
    s->value = 99;
    struct slot *again = table_insert(&t, &k);
    assert_ptr_equal(again, s);
    assert_int_equal(again->value, 99);
    assert_int_equal(table_count(&t), 1);
    table_free(&t);
}

static void a_full_table_refuses_new_keys_and_still_finds_the_old(void **state)
{
    (void)state;
    struct table t;
    assert_int_equal(table_init(&t, sizeof(struct slot), sizeof(uint64_t), 3), 0);
    for (uint64_t k = 1; k <= 3; k++)
        assert_non_null(table_insert(&t, &k));
    uint64_t k = 4;
    assert_null(table_insert(&t, &k));
    assert_null(table_find(&t, &k));
    for (k = 1; k <= 3; k++)
        assert_non_null(table_find(&t, &k));
    k = 2;
    table_remove(&t, table_find(&t, &k));
    k = 4;
    assert_non_null(table_insert(&t, &k)); /* room again */
    assert_int_equal(table_count(&t), 3);
    table_free(&t);
}

static void iteration_visits_every_entry_once(void **state)
{
    (void)state;
    struct table t;
    assert_int_equal(table_init(&t, sizeof(struct slot), sizeof(uint64_t), 100), 0);
    for (uint64_t k = 1000; k < 1100; k++)
        assert_non_null(table_insert(&t, &k));
    int seen[100] = {0};
    size_t cursor = 0, n = 0;
    for (const struct slot *s; (s = table_next(&t, &cursor)) != NULL; n++) {
        assert_true(s->key >= 1000 && s->key < 1100);
        seen[s->key - 1000]++;
    }
    assert_int_equal(n, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
    table_free(&t);
}

/* A table for many entries starts small and doubles as they come: what it
 * holds is what its entries need, not what max_entries would, and every
 * entry keeps its value through each move. */
static void the_array_grows_with_the_entries_not_with_the_most_allowed(void **state)
{
    (void)state;
    struct table t;
    assert_int_equal(table_init(&t, sizeof(struct slot), sizeof(uint64_t), 100000), 0);
    assert_true(t.nslots <= 64);
    for (uint64_t k = 1; k <= 5000; k++) {
        struct slot *s = table_insert(&t, &k);
        assert_non_null(s);
        s->value = (uint32_t)(k * 7);
        assert_true(2 * t.count <= t.nslots); /* at most half full */
    }
    assert_int_equal(t.nslots, 16384); /* the least power of two >= 10,000 */
    assert_true(t.nslots < t.max_slots);
    for (uint64_t k = 1; k <= 5000; k++) {
        const struct slot *s = table_find(&t, &k);
        assert_non_null(s);
        assert_int_equal(s->value, k * 7);
    }
    uint64_t absent = 5001;
    assert_null(table_find(&t, &absent));
    table_free(&t);
}

static void impossible_sizes_are_refused(void **state)
{
    (void)state;
    struct table t;
    assert_int_equal(table_init(&t, 8, 0, 4), BASE_EINVAL);
    assert_int_equal(table_init(&t, 8, 9, 4), BASE_EINVAL);
    assert_int_equal(table_init(&t, 8, 8, 0), BASE_EINVAL);
    assert_int_equal(table_init(&t, 8, 8, ((size_t)1 << 30) + 1), BASE_EINVAL);
    /* A table that failed to initialise finds and takes nothing. */
    uint64_t k = 1;
    assert_null(table_find(&t, &k));
    assert_null(table_insert(&t, &k));
    table_free(&t);
}

static void the_base_codes_have_distinct_names(void **state)
{
    (void)state;
    const int codes[] = {BASE_OK, BASE_EINVAL, BASE_EFULL, BASE_ENOMEM, BASE_ENOSPACE};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_string_not_equal(base_strerror(codes[i]), "unknown");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(base_strerror(codes[i]), base_strerror(codes[j]));
    }
    assert_string_equal(base_strerror(-99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_inserts_and_removes_agree_with_a_model),
        cmocka_unit_test(a_table_that_grows_meanwhile_agrees_with_a_model),
        cmocka_unit_test(insert_returns_the_slot_already_holding_the_key),
        cmocka_unit_test(a_full_table_refuses_new_keys_and_still_finds_the_old),
        cmocka_unit_test(iteration_visits_every_entry_once),
        cmocka_unit_test(the_array_grows_with_the_entries_not_with_the_most_allowed),
        cmocka_unit_test(impossible_sizes_are_refused),
        cmocka_unit_test(the_base_codes_have_distinct_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
