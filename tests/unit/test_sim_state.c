/*
 * Unit tests for the world state codec (sim_state.h): a world decoded from
 * a state has the same sim_hash and steps exactly as the original
 * (parameters, targets, obstacles with gaps in their ids, several groups,
 * both edge modes, after resets); the size is what the function says; a
 * state that breaks any rule (magic, version, length, config, counts,
 * values, order) is refused with a reason and leaves the world unchanged;
 * a state of another world's config is refused by decode; boid ids round
 * trip, and a version 1 state (no ids) numbers its boids 1..n.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "params.h"
#include "sim.h"
#include "sim_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CAPACITY 600

/* A world with something of everything: three groups, changed parameters,
 * targets, obstacles (one removed, so ids have a gap), stepped a while. */
static struct sim_world *busy_world(enum sim_edges edges)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = CAPACITY;
    cfg.max_obstacles = 8;
    cfg.edges = edges;
    cfg.seed = 77;
    const char *err = NULL;
    struct sim_world *w = sim_create(&cfg, &err);
    assert_non_null(w);
    assert_int_equal(sim_scatter(w, 300, 0), 300);
    assert_int_equal(sim_spawn(w, 100, 3, 400, 300, 80), 100);
    assert_int_equal(sim_spawn(w, 50, 9, 1200, 700, 60), 50);
    assert_int_equal(sim_param_set(w, 3, "max_speed", 140.0f), 0);
    assert_int_equal(sim_param_set(w, -1, "w_cohesion", 0.7f), 0);
    assert_int_equal(sim_target_set(w, 3, 800, 500), 0);
    assert_true(sim_obstacle_add(w, 500, 500, 40) == 1);
    assert_true(sim_obstacle_add(w, 900, 200, 30) == 2);
    assert_true(sim_obstacle_add(w, 1300, 800, 50) == 3);
    assert_int_equal(sim_obstacle_remove(w, 2), 0);
    for (int t = 0; t < 30; t++)
        sim_step(w);
    assert_int_equal(sim_despawn(w, 20, 0), 20);
    return w;
}

/* The state of w in a new buffer the caller frees; its length in *len. */
static uint8_t *encode(const struct sim_world *w, size_t *len)
{
    *len = sim_state_size(w);
    uint8_t *buf = malloc(*len);
    assert_non_null(buf);
    assert_int_equal(sim_state_encode(w, buf, *len), (int)*len);
    return buf;
}

static void a_decoded_world_steps_exactly_as_the_original(enum sim_edges edges)
{
    struct sim_world *a = busy_world(edges);
    size_t len;
    uint8_t *buf = encode(a, &len);
    const char *why = NULL;
    struct sim_world *b = sim_state_create(buf, len, &why);
    assert_non_null(b);
    assert_true(sim_hash(a) == sim_hash(b));
    for (int t = 0; t < 120; t++) {
        sim_step(a);
        sim_step(b);
        assert_true(sim_hash(a) == sim_hash(b));
    }
    /* Obstacle ids keep counting from where the original was. */
    assert_true(sim_obstacle_add(a, 100, 100, 10) == 4);
    assert_true(sim_obstacle_add(b, 100, 100, 10) == 4);
    assert_true(sim_hash(a) == sim_hash(b));
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
}

static void a_decoded_world_steps_exactly_as_the_original_on_a_torus(void **state)
{
    (void)state;
    a_decoded_world_steps_exactly_as_the_original(SIM_EDGES_WRAP);
}

static void a_decoded_world_steps_exactly_as_the_original_with_walls(void **state)
{
    (void)state;
    a_decoded_world_steps_exactly_as_the_original(SIM_EDGES_CONTAIN);
}

static void decode_keeps_the_random_stream_so_spawns_agree(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len;
    uint8_t *buf = encode(a, &len);
    struct sim_world *b = busy_world(SIM_EDGES_WRAP);
    sim_reset_scatter(b, 5, 10, 0); /* b is elsewhere now */
    assert_int_equal(sim_state_decode(b, buf, len, NULL), 0);
    assert_int_equal(sim_spawn(a, 40, 1, 200, 200, 50), 40);
    assert_int_equal(sim_spawn(b, 40, 1, 200, 200, 50), 40);
    assert_true(sim_hash(a) == sim_hash(b));
    struct sim_view va, vb;
    sim_view(a, &va);
    sim_view(b, &vb);
    assert_int_equal(va.epoch, vb.epoch);
    assert_int_equal(va.count, vb.count);
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
}

static void the_size_is_exact_and_a_small_buffer_is_refused(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len = sim_state_size(a);
    assert_true(len <= sim_state_max_size(CAPACITY, 8));
    uint8_t *buf = malloc(len);
    assert_int_equal(sim_state_encode(a, buf, len - 1), SIM_ECAPACITY);
    assert_int_equal(sim_state_encode(a, buf, len), (int)len);
    struct sim_state_info info;
    assert_int_equal(sim_state_check(buf, len, &info, NULL), 0);
    assert_int_equal(info.count, 430);
    assert_int_equal(info.obstacle_count, 2);
    assert_int_equal(info.next_obstacle_id, 4);
    assert_int_equal(info.cfg.capacity, CAPACITY);
    assert_true(info.tick == 30);
    free(buf);
    sim_destroy(a);
}

/* Offsets into a state of busy_world (FILES.md §3). */
#define OFF_VERSION   4
#define OFF_CAPACITY  20
#define OFF_EDGES     28
#define OFF_RNG_INC   64
#define OFF_COUNT     72
#define OFF_NEXT_ID   76
#define OFF_NEXT_BOID 88
#define HEADER        96 /* version 2 */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void putf(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

/* Where the boids' arrays start in a state of len bytes with n boids. */
static size_t boids_at(size_t len, size_t n)
{
    return len - 21 * n;
}

/* One way to break a state, and the code it must be refused with. */
struct breakage {
    const char *what;
    int code;
    void (*apply)(uint8_t *buf, size_t *len, size_t n);
};

static void bad_magic(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[0] = 'X';
}
static void other_version(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[OFF_VERSION] = 9;
}
static void cut_short(uint8_t *b, size_t *len, size_t n)
{
    (void)b, (void)n;
    (*len)--;
}
static void one_byte_too_many(uint8_t *b, size_t *len, size_t n)
{
    (void)n;
    b[(*len)++] = 0;
}
static void capacity_zero(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    put32(b + OFF_CAPACITY, 0);
}
static void edges_unknown(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[OFF_EDGES] = 2;
}
static void even_increment(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[OFF_RNG_INC] &= 0xfe;
}
static void more_boids_than_capacity(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    put32(b + OFF_COUNT, CAPACITY + 1);
}
static void next_id_not_above_the_obstacles(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    put32(b + OFF_NEXT_ID, 3);
}
static void boid_outside(uint8_t *b, size_t *len, size_t n)
{
    putf(b + boids_at(*len, n), 1601.0f);
}
static void boid_nan_velocity(uint8_t *b, size_t *len, size_t n)
{
    putf(b + boids_at(*len, n) + 8 * n + 4, NAN);
}
static void groups_out_of_order(uint8_t *b, size_t *len, size_t n)
{
    b[boids_at(*len, n) + 17 * n - 1] = 0; /* the last boid, of group 9, becomes group 0 */
}
static void boid_id_zero(uint8_t *b, size_t *len, size_t n)
{
    put32(b + boids_at(*len, n) + 17 * n, 0);
}
static void boid_id_twice(uint8_t *b, size_t *len, size_t n)
{
    uint8_t *ids = b + boids_at(*len, n) + 17 * n;
    memcpy(ids + 4 * (n - 1), ids, 4); /* the last boid takes the first one's id */
}
static void boid_id_not_below_the_next(uint8_t *b, size_t *len, size_t n)
{
    (void)n;
    put32(b + OFF_NEXT_BOID, 5);
}
static void reserved_bytes_set(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[OFF_NEXT_BOID + 4] = 1;
}
static void parameter_out_of_range(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    size_t names = 0;
    for (size_t k = 0; k < sim_param_count(); k++)
        names += 1 + b[HEADER + names];
    putf(b + HEADER + names, 5000.0f); /* group 0's max_speed */
}
static void parameter_renamed(uint8_t *b, size_t *len, size_t n)
{
    (void)len, (void)n;
    b[HEADER + 1] = 'X'; /* the first letter of "max_speed" */
}

static const struct breakage breakages[] = {
    {"bad magic", SIM_EINVAL, bad_magic},
    {"other version", SIM_EINVAL, other_version},
    {"cut short", SIM_EINVAL, cut_short},
    {"one byte too many", SIM_EINVAL, one_byte_too_many},
    {"capacity 0", SIM_EINVAL, capacity_zero},
    {"edges 2", SIM_EINVAL, edges_unknown},
    {"even PRNG increment", SIM_ERANGE, even_increment},
    {"more boids than capacity", SIM_ECAPACITY, more_boids_than_capacity},
    {"next id not above the obstacles", SIM_ERANGE, next_id_not_above_the_obstacles},
    {"a boid outside the world", SIM_ERANGE, boid_outside},
    {"a NaN velocity", SIM_ERANGE, boid_nan_velocity},
    {"groups out of order", SIM_ERANGE, groups_out_of_order},
    {"a boid id of 0", SIM_ERANGE, boid_id_zero},
    {"two boids with one id", SIM_ERANGE, boid_id_twice},
    {"a boid id not below the next", SIM_ERANGE, boid_id_not_below_the_next},
    {"reserved bytes set", SIM_EINVAL, reserved_bytes_set},
    {"a parameter out of range", SIM_ERANGE, parameter_out_of_range},
    {"a parameter of another name", SIM_EINVAL, parameter_renamed},
};

static void every_broken_state_is_refused_and_changes_nothing(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    struct sim_view v;
    sim_view(a, &v);
    size_t n = v.count, len0;
    uint8_t *good = encode(a, &len0);
    struct sim_world *target = busy_world(SIM_EDGES_WRAP);
    sim_step(target);
    uint64_t before = sim_hash(target);
    uint8_t *buf = malloc(len0 + 1);
    for (size_t k = 0; k < sizeof breakages / sizeof breakages[0]; k++) {
        size_t len = len0;
        memcpy(buf, good, len0);
        breakages[k].apply(buf, &len, n);
        const char *why = NULL;
        int rc = sim_state_decode(target, buf, len, &why);
        if (rc != breakages[k].code)
            fail_msg("%s: code %d, expected %d (%s)", breakages[k].what, rc, breakages[k].code,
                     why ? why : "no reason");
        assert_non_null(why);
        assert_true(sim_hash(target) == before);
        assert_null(sim_state_create(buf, len, &why));
    }
    assert_int_equal(sim_state_decode(target, good, len0, NULL), 0);
    assert_true(sim_hash(target) == sim_hash(a));
    free(buf);
    free(good);
    sim_destroy(a);
    sim_destroy(target);
}

static void decode_refuses_the_state_of_another_world(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len;
    uint8_t *buf = encode(a, &len);
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = CAPACITY + 1;
    cfg.max_obstacles = 8;
    cfg.seed = 77;
    struct sim_world *other = sim_create(&cfg, NULL);
    const char *why = NULL;
    assert_int_equal(sim_state_decode(other, buf, len, &why), SIM_EINVAL);
    assert_non_null(why);
    free(buf);
    sim_destroy(a);
    sim_destroy(other);
}

static void boid_ids_round_trip_and_a_version_1_state_numbers_its_boids(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len;
    uint8_t *buf = encode(a, &len);
    struct sim_world *b = sim_state_create(buf, len, NULL);
    assert_non_null(b);
    struct sim_view va, vb;
    sim_view(a, &va);
    sim_view(b, &vb);
    assert_int_equal(vb.next_id, va.next_id);
    assert_memory_equal(va.id, vb.id, va.count * sizeof *va.id);
    /* The same state as version 1: no next boid id, no ids. */
    size_t n = va.count, ids = len - 4 * n;
    uint8_t *v1 = malloc(len);
    memcpy(v1, buf, 88);
    memcpy(v1 + 88, buf + HEADER, ids - HEADER);
    v1[OFF_VERSION] = 1;
    size_t len1 = ids - (HEADER - 88);
    struct sim_world *c = sim_state_create(v1, len1, NULL);
    assert_non_null(c);
    struct sim_view vc;
    sim_view(c, &vc);
    for (uint32_t i = 0; i < vc.count; i++)
        assert_int_equal(vc.id[i], i + 1);
    assert_int_equal(vc.next_id, vc.count + 1);
    assert_int_equal(sim_spawn(c, 2, 0, 10, 10, 1), 2);
    sim_view(c, &vc);
    assert_int_equal(vc.next_id, n + 3);
    free(v1);
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
    sim_destroy(c);
}

static void a_world_whose_ids_run_out_spawns_no_more(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len;
    uint8_t *buf = encode(a, &len);
    put32(buf + OFF_NEXT_BOID, UINT32_MAX - 1); /* two ids left */
    struct sim_world *b = sim_state_create(buf, len, NULL);
    assert_non_null(b);
    uint64_t hash = sim_hash(b);
    assert_int_equal(sim_spawn(b, 3, 0, 10, 10, 1), SIM_ECAPACITY);
    assert_true(sim_hash(b) == hash);
    assert_int_equal(sim_spawn(b, 2, 0, 10, 10, 1), 2);
    assert_int_equal(sim_spawn(b, 1, 0, 10, 10, 1), SIM_ECAPACITY);
    struct sim_view v;
    sim_view(b, &v);
    assert_int_equal(v.next_id, 0);
    /* ... and such a state round-trips too. */
    free(buf);
    buf = encode(b, &len);
    struct sim_world *c = sim_state_create(buf, len, NULL);
    assert_non_null(c);
    assert_true(sim_hash(c) == sim_hash(b));
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
    sim_destroy(c);
}

static void a_state_of_an_older_registry_loads_with_defaults_for_the_rest(void **state)
{
    (void)state;
    struct sim_world *a = busy_world(SIM_EDGES_WRAP);
    size_t len;
    uint8_t *buf = encode(a, &len);
    /* Drop the registry's last parameter from the state, as an older build wrote it. */
    size_t g = sim_param_count(), last = strlen(sim_param_at(g - 1)->name) + 1, names = 0;
    for (size_t k = 0; k < g; k++)
        names += 1 + buf[HEADER + names];
    uint8_t *old = malloc(len);
    size_t at = 0;
    memcpy(old, buf, HEADER + names - last);
    at = HEADER + names - last;
    for (int grp = 0; grp < SIM_GROUPS; grp++, at += 4 * (g - 1))
        memcpy(old + at, buf + HEADER + names + (size_t)grp * g * 4, 4 * (g - 1));
    size_t rest = HEADER + names + (size_t)SIM_GROUPS * g * 4;
    memcpy(old + at, buf + rest, len - rest);
    size_t old_len = at + len - rest;
    put32(old + 84, (uint32_t)(names - last));
    old[6] = (uint8_t)(g - 1);
    const char *why = NULL;
    struct sim_world *b = sim_state_create(old, old_len, &why);
    if (!b)
        fail_msg("refused: %s", why);
    float v;
    assert_int_equal(sim_param_get(b, 3, sim_param_at(g - 1)->name, &v), 0);
    assert_float_equal(v, sim_param_at(g - 1)->def, 0);
    assert_int_equal(sim_param_get(b, 3, "max_speed", &v), 0);
    assert_float_equal(v, 140.0f, 0); /* the state's own */
    /* A registry that differs otherwise is still refused. */
    old[HEADER + 1] = 'X';
    assert_null(sim_state_create(old, old_len, &why));
    free(old);
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
}

static void an_empty_world_round_trips(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = 1;
    cfg.max_obstacles = 0;
    struct sim_world *a = sim_create(&cfg, NULL);
    size_t len;
    uint8_t *buf = encode(a, &len);
    struct sim_world *b = sim_state_create(buf, len, NULL);
    assert_non_null(b);
    assert_true(sim_hash(a) == sim_hash(b));
    free(buf);
    sim_destroy(a);
    sim_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_decoded_world_steps_exactly_as_the_original_on_a_torus),
        cmocka_unit_test(a_decoded_world_steps_exactly_as_the_original_with_walls),
        cmocka_unit_test(decode_keeps_the_random_stream_so_spawns_agree),
        cmocka_unit_test(the_size_is_exact_and_a_small_buffer_is_refused),
        cmocka_unit_test(every_broken_state_is_refused_and_changes_nothing),
        cmocka_unit_test(decode_refuses_the_state_of_another_world),
        cmocka_unit_test(boid_ids_round_trip_and_a_version_1_state_numbers_its_boids),
        cmocka_unit_test(a_world_whose_ids_run_out_spawns_no_more),
        cmocka_unit_test(a_state_of_an_older_registry_loads_with_defaults_for_the_rest),
        cmocka_unit_test(an_empty_world_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
