/*
 * Unit tests for squads, orders and formations (sim.h, PROTOCOL.md §13):
 * the slot layout of each shape; selections by rect, ids, all and squads
 * and their refusals (which change nothing); a squad ordered into each
 * formation 1,000 units away ends in its slots; waypoints queue and a
 * move ends as a stop; a patrol goes round; a follower keeps behind; two
 * squads of one group do not drag each other along; a despawn takes units
 * out of their squads; flee and pursuit move units apart and together;
 * and a world with squads steps to the same hash whatever the cut.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sim.h"
#include "sim_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct sim_world *g_world; /* freed by the teardown, even after a failed assertion */

static int free_world(void **state)
{
    (void)state;
    sim_destroy(g_world);
    g_world = NULL;
    return 0;
}

/* A walled 2400 x 1400 world: `n` units of group 1 around (400, 700). */
static struct sim_world *world_with(uint32_t n)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = 2400.0f;
    cfg.height = 1400.0f;
    cfg.edges = SIM_EDGES_CONTAIN;
    cfg.capacity = 4096;
    cfg.seed = 42;
    g_world = sim_create(&cfg, NULL);
    assert_non_null(g_world);
    assert_int_equal(sim_spawn(g_world, n, 1, 400.0f, 700.0f, 120.0f), (int)n);
    return g_world;
}

static void steps(struct sim_world *w, int n)
{
    for (int k = 0; k < n; k++)
        sim_step(w);
}

static const struct sim_selection ALL = {.by = SIM_SELECT_ALL};

/* The share of the squad's units within `within` of their slots. */
static double in_slots(struct sim_world *w, int group, int squad, float within)
{
    const struct sim_squad *s = sim_squad(w, group, squad);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t n = 0, in = 0;
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t slot;
        if (v.group[i] != group || sim_boid_squad(w, i, &slot) != squad)
            continue;
        float x, y;
        sim_slot_position(s, slot, &x, &y);
        n++;
        in += hypotf(v.x[i] - x, v.y[i] - y) < within;
    }
    assert_int_equal(n, s->units);
    return n ? (double)in / n : 0.0;
}

/* The centre of a group's units in a squad (0: in none). */
static void centre(struct sim_world *w, int group, int squad, float *x, float *y)
{
    struct sim_view v;
    sim_view(w, &v);
    double sx = 0, sy = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < v.count; i++)
        if (v.group[i] == group && sim_boid_squad(w, i, NULL) == squad)
            sx += v.x[i], sy += v.y[i], n++;
    assert_true(n > 0);
    *x = (float)(sx / n), *y = (float)(sy / n);
}

/* ---- the layout ---------------------------------------------------------------- */

static void every_shape_gives_distinct_slots_in_centred_rows(void **state)
{
    (void)state;
    const uint32_t sizes[] = {1, 2, 7, 30, 200, 1000};
    for (int shape = SIM_SHAPE_LINE; shape < SIM_SHAPE_COUNT; shape++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            uint32_t n = sizes[k];
            double sum_a = 0.0;
            float last_b = 0.0f;
            for (uint32_t i = 0; i < n; i++) {
                float a, b, a2, b2;
                sim_slot_offset((enum sim_shape)shape, n, i, &a, &b);
                assert_true(b >= last_b); /* rows from the front */
                last_b = b;
                sum_a += a;
                for (uint32_t j = 0; j < i; j++) {
                    sim_slot_offset((enum sim_shape)shape, n, j, &a2, &b2);
                    assert_true(a != a2 || b != b2);
                }
            }
            assert_true(fabs(sum_a) < 1e-3); /* every row centred on the anchor */
        }
    float a, b;
    sim_slot_offset(SIM_SHAPE_LINE, 200, 199, &a, &b); /* 29 across, 7 deep */
    assert_float_equal(b, 6.0f, 0.0f);
    sim_slot_offset(SIM_SHAPE_COLUMN, 200, 199, &a, &b); /* 8 across, 25 deep */
    assert_float_equal(b, 24.0f, 0.0f);
    sim_slot_offset(SIM_SHAPE_BOX, 200, 199, &a, &b); /* 15 across, 14 deep */
    assert_float_equal(b, 13.0f, 0.0f);
    sim_slot_offset(SIM_SHAPE_WEDGE, 200, 0, &a, &b); /* the tip */
    assert_float_equal(a, 0.0f, 0.0f);
    assert_float_equal(b, 0.0f, 0.0f);
    sim_slot_offset(SIM_SHAPE_WEDGE, 200, 3, &a, &b); /* the second row's right */
    assert_float_equal(a, 1.0f, 0.0f);
    assert_float_equal(b, 1.0f, 0.0f);
}

/* ---- selections ----------------------------------------------------------------- */

static void selections_make_squads_and_refusals_change_nothing(void **state)
{
    (void)state;
    struct sim_world *w = world_with(100);
    assert_int_equal(sim_spawn(w, 20, 2, 2000.0f, 700.0f, 50.0f), 20);
    uint64_t before = sim_hash(w);
    uint32_t news = sim_squad_news(w, 1);
    struct sim_view v;
    sim_view(w, &v);
    uint32_t other_id = v.id[v.count - 1]; /* group 2's */
    struct sim_selection bad_rect = {.by = SIM_SELECT_RECT, .x = 2500.0f, .y = 0, .w = 10, .h = 10};
    struct sim_selection nan_rect = {.by = SIM_SELECT_RECT, .x = NAN, .y = 0, .w = 10, .h = 10};
    struct sim_selection empty = {.by = SIM_SELECT_RECT, .x = 2300.0f, .y = 0, .w = 10, .h = 10};
    uint32_t ids[2] = {v.id[0], other_id}, gone[1] = {999999};
    struct sim_selection theirs = {.by = SIM_SELECT_IDS, .ids = ids, .n = 2};
    struct sim_selection unknown = {.by = SIM_SELECT_IDS, .ids = gone, .n = 1};
    assert_int_equal(sim_select(w, 1, 1, &bad_rect), SIM_ERANGE);
    assert_int_equal(sim_select(w, 1, 1, &nan_rect), SIM_ERANGE);
    assert_int_equal(sim_select(w, 1, 1, &empty), SIM_EEMPTY);
    assert_int_equal(sim_select(w, 1, 1, &theirs), SIM_EOTHER);
    assert_int_equal(sim_select(w, 1, 1, &unknown), SIM_ENOENT);
    assert_int_equal(sim_select(w, 1, 33, &ALL), SIM_EINVAL);
    assert_int_equal(sim_select(w, 256, 1, &ALL), SIM_EINVAL);
    assert_int_equal(sim_hash(w), before);
    assert_int_equal(sim_squad_news(w, 1), news);

    /* All into the lowest free squad, then the left half into squad 5. */
    assert_int_equal(sim_select(w, 1, -1, &ALL), 1);
    assert_int_equal(sim_squad(w, 1, 1)->units, 100);
    struct sim_selection left = {.by = SIM_SELECT_RECT, .x = 0, .y = 0, .w = 400, .h = 1400};
    assert_int_equal(sim_select(w, 1, 5, &left), 5);
    uint32_t n5 = sim_squad(w, 1, 5)->units;
    assert_true(n5 > 10 && n5 < 90);
    assert_int_equal(sim_squad(w, 1, 1)->units, 100 - n5);
    assert_true(sim_squad_news(w, 1) != news);
    assert_true(sim_hash(w) != before);
    /* Two ids into squad 2, then squads 1 and 2 merged into 2; 1 ends. */
    uint32_t mine[2] = {v.id[0], v.id[1]};
    struct sim_selection two = {.by = SIM_SELECT_IDS, .ids = mine, .n = 2};
    assert_int_equal(sim_select(w, 1, 2, &two), 2);
    assert_int_equal(sim_squad(w, 1, 2)->units, 2);
    struct sim_selection merge = {.by = SIM_SELECT_SQUADS, .squads = 1u << 1 | 1u << 2};
    assert_int_equal(sim_select(w, 1, 2, &merge), 2);
    assert_int_equal(sim_squad(w, 1, 1)->units, 0);
    assert_int_equal(sim_squad(w, 1, 2)->units + sim_squad(w, 1, 5)->units, 100);
    struct sim_order_args hold = {.order = SIM_ORDER_HOLD};
    assert_int_equal(sim_order(w, 1, 1, &hold), SIM_ENOENT); /* ended */
    /* Squad 0: out of squads. Every squad taken: capacity. */
    assert_int_equal(sim_select(w, 1, 0, &ALL), 0);
    assert_int_equal(sim_squad(w, 1, 2)->units, 0);
    sim_view(w, &v);
    for (int k = 1; k <= SIM_SQUADS; k++) {
        struct sim_selection one = {.by = SIM_SELECT_IDS, .ids = &v.id[k], .n = 1};
        assert_int_equal(sim_select(w, 1, -1, &one), k);
    }
    struct sim_selection more = {.by = SIM_SELECT_IDS, .ids = &v.id[40], .n = 1};
    assert_int_equal(sim_select(w, 1, -1, &more), SIM_ECAPACITY);
}

static void orders_refuse_what_cannot_be_done(void **state)
{
    (void)state;
    struct sim_world *w = world_with(50);
    assert_int_equal(sim_select(w, 1, 3, &ALL), 3);
    struct sim_order_args o = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{5000.0f, 10.0f}}};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ERANGE);
    o = (struct sim_order_args){.order = SIM_ORDER_MOVE, .nway = 0};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ERANGE);
    o = (struct sim_order_args){.order = SIM_ORDER_PATROL, .nway = SIM_WAYPOINTS};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ERANGE); /* room for the way back */
    o = (struct sim_order_args){.order = SIM_ORDER_FOLLOW, .follow_squad = 3};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_EINVAL); /* itself */
    o = (struct sim_order_args){.order = SIM_ORDER_FOLLOW, .follow_squad = 4};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ENOENT);
    o = (struct sim_order_args){.order = SIM_ORDER_FOLLOW, .follow_unit = 999999};
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ENOENT);
    o = (struct sim_order_args){.order = SIM_ORDER_HOLD};
    assert_int_equal(sim_order(w, 1, 0, &o), SIM_EINVAL);
    assert_int_equal(sim_order(w, 1, 4, &o), SIM_ENOENT);
    assert_int_equal(sim_formation(w, 1, 3, SIM_SHAPE_BOX, 0.5f), SIM_ERANGE);
    assert_int_equal(sim_formation(w, 1, 3, SIM_SHAPE_BOX, NAN), SIM_ERANGE);
    assert_int_equal(sim_formation(w, 1, 3, (enum sim_shape)9, 0.0f), SIM_ERANGE);
    /* Queued waypoints: at most SIM_WAYPOINTS ahead. */
    o = (struct sim_order_args){.order = SIM_ORDER_MOVE, .nway = 10};
    for (int k = 0; k < 10; k++)
        o.way[k][0] = 100.0f + 10.0f * (float)k, o.way[k][1] = 100.0f;
    assert_int_equal(sim_order(w, 1, 3, &o), 0);
    o.queue = 1;
    assert_int_equal(sim_order(w, 1, 3, &o), SIM_ERANGE);
    o.nway = 6;
    assert_int_equal(sim_order(w, 1, 3, &o), 0);
    assert_int_equal(sim_squad(w, 1, 3)->nway, 16);
}

/* ---- movement -------------------------------------------------------------------- */

/* 200 units into `shape` 1,000 units to the east: in their slots. */
static void a_formation_ends_in_its_slots(enum sim_shape shape)
{
    struct sim_world *w = world_with(200);
    steps(w, 60);
    assert_int_equal(sim_select(w, 1, -1, &ALL), 1);
    assert_int_equal(sim_formation(w, 1, 1, shape, 0.0f), 0);
    struct sim_order_args o = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{1400.0f, 700.0f}}};
    assert_int_equal(sim_order(w, 1, 1, &o), 0);
    /* 1,000 units at 100 units/s: 10 s; 16 s leaves room for a slow machine's nothing
     * (the step is deterministic) and for the benchmark to report the real figure. */
    steps(w, 60 * 16);
    const struct sim_squad *s = sim_squad(w, 1, 1);
    assert_int_equal(s->order, SIM_ORDER_STOP);
    assert_float_equal(s->ax, 1400.0f, 0.01f);
    assert_float_equal(s->ay, 700.0f, 0.01f);
    assert_true(fabsf(s->facing) < 0.1f); /* faces east */
    double share = in_slots(w, 1, 1, 0.5f * 25.0f);
    if (share < 0.95)
        fail_msg("%s: %.1f%% in their slots", shape == SIM_SHAPE_LINE ? "line" : "shape",
                 100.0 * share);
    free_world(NULL);
}

static void a_squad_ends_in_its_slots_in_every_formation(void **state)
{
    (void)state;
    a_formation_ends_in_its_slots(SIM_SHAPE_LINE);
    a_formation_ends_in_its_slots(SIM_SHAPE_COLUMN);
    a_formation_ends_in_its_slots(SIM_SHAPE_WEDGE);
    a_formation_ends_in_its_slots(SIM_SHAPE_BOX);
}

static void waypoints_are_taken_in_turn_and_a_patrol_goes_round(void **state)
{
    (void)state;
    struct sim_world *w = world_with(40);
    assert_int_equal(sim_select(w, 1, 1, &ALL), 1);
    assert_int_equal(sim_formation(w, 1, 1, SIM_SHAPE_BOX, 0.0f), 0);
    struct sim_order_args o = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{700.0f, 700.0f}}};
    assert_int_equal(sim_order(w, 1, 1, &o), 0);
    o = (struct sim_order_args){
        .order = SIM_ORDER_MOVE, .nway = 1, .way = {{700.0f, 400.0f}}, .queue = 1};
    assert_int_equal(sim_order(w, 1, 1, &o), 0);
    const struct sim_squad *s = sim_squad(w, 1, 1);
    assert_int_equal(s->nway, 2);
    uint32_t news = sim_squad_news(w, 1);
    steps(w, 60 * 9); /* 300 + 300 units at 90 units/s, and arriving */
    assert_int_equal(s->order, SIM_ORDER_STOP);
    assert_float_equal(s->ay, 400.0f, 0.01f);
    assert_true(sim_squad_news(w, 1) - news >= 2); /* a waypoint, then the stop */
    /* A patrol through one point: there and back, round and round. */
    o = (struct sim_order_args){.order = SIM_ORDER_PATROL, .nway = 1, .way = {{1000.0f, 400.0f}}};
    assert_int_equal(sim_order(w, 1, 1, &o), 0);
    assert_int_equal(s->nway, 2);
    float far = 0.0f, back = 1e9f;
    for (int t = 0; t < 60 * 16; t++) {
        sim_step(w);
        far = fmaxf(far, s->ax);
        if (far > 999.0f)
            back = fminf(back, s->ax);
    }
    assert_int_equal(s->order, SIM_ORDER_PATROL);
    assert_true(far > 999.0f);
    assert_true(back < 701.0f);
}

static void a_follower_keeps_behind_and_squads_do_not_drag_each_other(void **state)
{
    (void)state;
    struct sim_world *w = world_with(120);
    steps(w, 30);
    struct sim_selection top = {.by = SIM_SELECT_RECT, .x = 0, .y = 0, .w = 2400, .h = 700};
    assert_int_equal(sim_select(w, 1, 1, &top), 1);
    struct sim_selection rest = {.by = SIM_SELECT_SQUADS, .squads = 1u};
    assert_int_equal(sim_select(w, 1, 2, &rest), 2);
    /* Squad 2 stays; squad 1 leaves east. */
    struct sim_order_args hold = {.order = SIM_ORDER_HOLD};
    assert_int_equal(sim_order(w, 1, 2, &hold), 0);
    float x2, y2, x2b, y2b;
    centre(w, 1, 2, &x2, &y2);
    struct sim_order_args o = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{1800.0f, 500.0f}}};
    assert_int_equal(sim_order(w, 1, 1, &o), 0);
    steps(w, 60 * 10);
    centre(w, 1, 2, &x2b, &y2b);
    if (hypotf(x2b - x2, y2b - y2) > 60.0f)
        fail_msg("the holding squad was dragged %.0f units", hypotf(x2b - x2, y2b - y2));
    float x1, y1;
    centre(w, 1, 1, &x1, &y1);
    assert_true(x1 > 1200.0f); /* 100 units/s, once under way */
    /* Squad 2 follows squad 1: it comes after it, and stays behind. */
    o = (struct sim_order_args){.order = SIM_ORDER_FOLLOW, .follow_squad = 1};
    assert_int_equal(sim_order(w, 1, 2, &o), 0);
    steps(w, 60 * 20); /* 1,400 units to make up */
    centre(w, 1, 1, &x1, &y1);
    centre(w, 1, 2, &x2, &y2);
    float d = hypotf(x1 - x2, y1 - y2);
    if (d > 250.0f || d < 40.0f)
        fail_msg("the follower is %.0f units from what it follows", d);
    /* Squad 1 ends: the follower holds. */
    struct sim_selection one = {.by = SIM_SELECT_SQUADS, .squads = 1u << 1};
    assert_int_equal(sim_select(w, 1, 0, &one), 0);
    steps(w, 2);
    assert_int_equal(sim_squad(w, 1, 1)->units, 0);
    assert_int_equal(sim_squad(w, 1, 2)->order, SIM_ORDER_HOLD);
}

static void a_despawn_takes_units_out_of_their_squads(void **state)
{
    (void)state;
    struct sim_world *w = world_with(60);
    assert_int_equal(sim_select(w, 1, 4, &ALL), 4);
    assert_int_equal(sim_formation(w, 1, 4, SIM_SHAPE_LINE, 30.0f), 0);
    steps(w, 10);
    uint32_t news = sim_squad_news(w, 1);
    assert_int_equal(sim_despawn(w, 20, 1), 20);
    steps(w, 1);
    assert_int_equal(sim_squad(w, 1, 4)->units, 40);
    assert_true(sim_squad_news(w, 1) != news);
    steps(w, 60 * 4);
    assert_true(in_slots(w, 1, 4, 12.5f) > 0.95); /* reslotted: 40 slots */
    assert_int_equal(sim_despawn(w, 40, 1), 40);
    steps(w, 1);
    assert_int_equal(sim_squad(w, 1, 4)->units, 0);
}

/* The mean distance between group 1's units and group 2's. */
static float apart(struct sim_world *w)
{
    float x1, y1, x2, y2;
    centre(w, 1, 0, &x1, &y1);
    centre(w, 2, 0, &x2, &y2);
    return hypotf(x1 - x2, y1 - y2);
}

/* How far apart groups 1 and 2 are after 3 s, group 1 with `weight` of
 * `rule` ("w_flee", "w_pursue" or NULL: neither). */
static float apart_after(const char *rule, float weight)
{
    struct sim_world *w = world_with(40);
    assert_int_equal(sim_spawn(w, 40, 2, 520.0f, 700.0f, 60.0f), 40);
    sim_param_set(w, -1, "own_group_only", 1.0f);
    if (rule) {
        sim_param_set(w, 1, rule, weight);
        sim_param_set(w, 1, strcmp(rule, "w_flee") == 0 ? "flee_radius" : "pursue_radius", 150.0f);
    }
    sim_target_set(w, 2, 520.0f, 700.0f); /* group 2 stays put */
    steps(w, 60 * 3);
    float d = apart(w);
    free_world(NULL);
    return d;
}

static void fleeing_parts_teams_and_pursuit_brings_them_together(void **state)
{
    (void)state;
    float base = apart_after(NULL, 0.0f), flee = apart_after("w_flee", 3.0f);
    float pursue = apart_after("w_pursue", 3.0f);
    if (!(flee > base + 50.0f && pursue < base - 20.0f))
        fail_msg("apart after 3 s: %.0f units, fleeing %.0f, pursuing %.0f", base, flee, pursue);
}

/* ---- determinism ------------------------------------------------------------------- */

static void run_reversed(void *ctx, sim_part_fn *fn, void *arg, unsigned parts)
{
    (void)ctx;
    while (parts-- > 0)
        fn(arg, parts);
}

static uint64_t squads_run(unsigned parts)
{
    struct sim_world *w = world_with(300);
    assert_int_equal(sim_spawn(w, 200, 2, 1600.0f, 700.0f, 150.0f), 200);
    sim_param_set(w, 2, "w_pursue", 1.0f);
    sim_obstacle_add(w, 900.0f, 700.0f, 60.0f);
    struct sim_selection half = {.by = SIM_SELECT_RECT, .x = 0, .y = 0, .w = 400, .h = 1400};
    assert_int_equal(sim_select(w, 1, 1, &half), 1);
    assert_int_equal(sim_select(w, 1, 2, &ALL), 2);
    sim_formation(w, 1, 2, SIM_SHAPE_WEDGE, 0.0f);
    struct sim_order_args o = {.order = SIM_ORDER_MOVE, .nway = 1, .way = {{1600.0f, 650.0f}}};
    sim_order(w, 1, 2, &o);
    o = (struct sim_order_args){.order = SIM_ORDER_FOLLOW, .follow_squad = 2};
    struct sim_fork f = {run_reversed, NULL, parts};
    for (int t = 0; t < 300; t++) {
        if (t == 100)
            sim_order(w, 1, 1, &o);
        sim_step_forked(w, &f);
    }
    uint64_t h = sim_hash(w);
    free_world(NULL);
    return h;
}

static void squads_step_to_the_same_hash_whatever_the_cut(void **state)
{
    (void)state;
    uint64_t one = squads_run(1);
    assert_int_equal(squads_run(2), one);
    assert_int_equal(squads_run(7), one);
}

static void squads_survive_a_state_round_trip_and_bad_ones_are_refused(void **state)
{
    (void)state;
    struct sim_world *w = world_with(150);
    struct sim_selection half = {.by = SIM_SELECT_RECT, .x = 0, .y = 0, .w = 400, .h = 1400};
    assert_int_equal(sim_select(w, 1, 3, &half), 3);
    assert_int_equal(sim_formation(w, 1, 3, SIM_SHAPE_WEDGE, 20.0f), 0);
    struct sim_order_args o = {
        .order = SIM_ORDER_PATROL, .nway = 2, .way = {{1200.0f, 300.0f}, {1200.0f, 1100.0f}}};
    assert_int_equal(sim_order(w, 1, 3, &o), 0);
    steps(w, 90);
    size_t len = sim_state_size(w);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(sim_state_encode(w, buf, len), (int)len);
    const char *why = NULL;
    struct sim_world *copy = sim_state_create(buf, len, &why);
    if (!copy)
        fail_msg("refused: %s", why);
    assert_int_equal(sim_hash(copy), sim_hash(w));
    steps(w, 200);
    for (int t = 0; t < 200; t++)
        sim_step(copy);
    assert_int_equal(sim_hash(copy), sim_hash(w));
    assert_int_equal(sim_squad(copy, 1, 3)->units, sim_squad(w, 1, 3)->units);
    sim_destroy(copy);
    /* The squads section ends the state: 5 bytes a boid, then group 1's 32 records. */
    size_t squads = len - (1 + 32 * 192) - 5 * 150;
    uint8_t *rec = buf + len - 32 * 192 + 2 * 192; /* squad 3's */
    uint8_t was = buf[squads];
    buf[squads] = 33; /* a boid in squad 33 */
    assert_int_equal(sim_state_check(buf, len, NULL, &why), SIM_ERANGE);
    buf[squads] = was;
    rec[0]++; /* a squad of one unit more than its boids */
    assert_int_equal(sim_state_check(buf, len, NULL, &why), SIM_ERANGE);
    rec[0]--;
    rec[4] = 9; /* an order past the last */
    assert_int_equal(sim_state_check(buf, len, NULL, &why), SIM_ERANGE);
    rec[4] = SIM_ORDER_PATROL;
    assert_int_equal(sim_state_check(buf, len, NULL, &why), 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_shape_gives_distinct_slots_in_centred_rows),
        cmocka_unit_test_teardown(selections_make_squads_and_refusals_change_nothing, free_world),
        cmocka_unit_test_teardown(orders_refuse_what_cannot_be_done, free_world),
        cmocka_unit_test_teardown(a_squad_ends_in_its_slots_in_every_formation, free_world),
        cmocka_unit_test_teardown(waypoints_are_taken_in_turn_and_a_patrol_goes_round, free_world),
        cmocka_unit_test_teardown(a_follower_keeps_behind_and_squads_do_not_drag_each_other,
                                  free_world),
        cmocka_unit_test_teardown(a_despawn_takes_units_out_of_their_squads, free_world),
        cmocka_unit_test_teardown(fleeing_parts_teams_and_pursuit_brings_them_together, free_world),
        cmocka_unit_test_teardown(squads_step_to_the_same_hash_whatever_the_cut, free_world),
        cmocka_unit_test_teardown(squads_survive_a_state_round_trip_and_bad_ones_are_refused,
                                  free_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
