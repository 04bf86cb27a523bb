/*
 * Unit tests for room scripts (script.h) on a real Lua state and world:
 * the sandbox has none of io, os, debug, load, require; pairs visits keys
 * in order; a runaway loop (even one wrapped in pcall) and a huge
 * allocation disable the script with the reason, in bounded time; errors
 * at load and in hooks are reported, never raised; the bulk queries give
 * what a brute-force count gives; convert and despawn by id keep the
 * world's order; the state survives save and restore bit for bit; random
 * streams repeat from the seed; publish hands JSON to the room.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clock.h"
#include "script.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sim_world *g_world;
static struct script *g_script;
static char g_published[4096];
static int g_published_team = -1;

static int teardown(void **state)
{
    (void)state;
    script_destroy(g_script);
    g_script = NULL;
    sim_destroy(g_world);
    g_world = NULL;
    g_published[0] = '\0';
    g_published_team = -1;
    return 0;
}

static void published(void *arg, int team, const char *json, size_t len)
{
    (void)arg;
    g_published_team = team;
    snprintf(g_published, sizeof g_published, "%.*s", (int)len, json);
}

static struct sim_world *world(void)
{
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.width = 1600.0f;
    cfg.height = 1000.0f;
    cfg.edges = SIM_EDGES_CONTAIN;
    cfg.capacity = 8192;
    cfg.seed = 7;
    g_world = sim_create(&cfg, NULL);
    assert_non_null(g_world);
    return g_world;
}

/* A script of `text` on the world (a fresh one if none), its random
 * stream from `seed`, restored from saved[0..len) if saved; NULL (reason
 * in why) if it fails. */
static struct script *load_from(const char *text, uint64_t seed, const struct script_limits *lim,
                                const uint8_t *saved, size_t len, char *why)
{
    if (!g_world)
        world();
    struct script_source src = {0};
    assert_int_equal(script_source_set(&src, "t", text, strlen(text)), 0);
    struct script_env env = {.world = g_world,
                             .seed = seed,
                             .tick_hz = 30.0,
                             .max_teams = 4,
                             .room = "test",
                             .publish = published};
    struct script *s = script_create(&src, &env, lim, saved, len, why);
    script_source_free(&src);
    return s;
}

/* A script of `text` on a fresh world; NULL (reason in why) if it fails. */
static struct script *load(const char *text, const struct script_limits *lim, char *why)
{
    return load_from(text, 11, lim, NULL, 0, why);
}

static struct script *load_ok(const char *text)
{
    char why[SCRIPT_REASON_MAX] = "";
    g_script = load(text, NULL, why);
    if (!g_script)
        fail_msg("load failed: %s", why);
    return g_script;
}

/* The reason a running script gave up, "" if it runs. */
static const char *reason(void)
{
    static char why[SCRIPT_REASON_MAX];
    script_is_running(g_script, why, sizeof why);
    return why;
}

static void test_sandbox(void **state)
{
    (void)state;
    load_ok("function on_start()\n"
            "  assert(io == nil and os == nil and debug == nil and package == nil)\n"
            "  assert(load == nil and loadfile == nil and dofile == nil and require == nil)\n"
            "  assert(next == nil and collectgarbage == nil and string.dump == nil)\n"
            "  assert(math.random == nil and math.randomseed == nil)\n"
            "  state.ok = true\n"
            "end\n");
    assert_true(script_start(g_script));
    assert_string_equal(reason(), "");
}

static void test_pairs_in_order(void **state)
{
    (void)state;
    load_ok("function on_start()\n"
            "  local t = {zeta = 1, alpha = 2, [3] = 'c', [1] = 'a', [2.5] = 'x', mid = 3}\n"
            "  local keys = {}\n"
            "  for k in pairs(t) do keys[#keys + 1] = tostring(k) end\n"
            "  flock.publish({order = table.concat(keys, ',')})\n"
            "end\n");
    assert_true(script_start(g_script));
    assert_string_equal(g_published, "{\"order\":\"1,2.5,3,alpha,mid,zeta\"}");
    assert_int_equal(g_published_team, 0);
}

static void test_runaway_loop_is_stopped(void **state)
{
    (void)state;
    load_ok("function on_tick() while true do end end\n"
            "function on_end() end\n");
    int64_t t0 = clock_mono_ns();
    assert_false(script_tick(g_script));
    double ms = (double)(clock_mono_ns() - t0) / 1e6;
    /* The budget (~1 M instructions, a few ms) or, on a slow sanitizer
     * build of a loaded machine, the 100 ms wall-time guard first. */
    assert_true(strstr(reason(), "budget") || strstr(reason(), "more than 100 ms"));
    assert_true(ms < 500.0);
    assert_false(script_tick(g_script)); /* stays disabled */
}

static void test_pcall_cannot_hold_the_budget(void **state)
{
    (void)state;
    load_ok("function on_tick()\n"
            "  while true do pcall(function() while true do end end) end\n"
            "end\n");
    assert_false(script_tick(g_script));
    assert_true(strstr(reason(), "budget") || strstr(reason(), "more than 100 ms"));
}

static void test_memory_cap(void **state)
{
    (void)state;
    char why[SCRIPT_REASON_MAX];
    struct script_limits lim = {.memory = 8u << 20};
    g_script = load("function on_tick() local s = string.rep('x', 1 << 30) end\n", &lim, why);
    assert_non_null(g_script);
    assert_false(script_tick(g_script));
    assert_non_null(strstr(reason(), "memory"));
    script_destroy(g_script);
    g_script =
        load("function on_tick() local t = {} for i = 1, 1e9 do t[i] = {i} end end\n", &lim, why);
    assert_non_null(g_script);
    assert_false(script_tick(g_script));
    assert_true(strstr(reason(), "memory") || strstr(reason(), "budget") ||
                strstr(reason(), "more than 100 ms"));
}

static void test_errors_are_reported(void **state)
{
    (void)state;
    char why[SCRIPT_REASON_MAX];
    assert_null(load("function on_tick( end", NULL, why));
    assert_non_null(strstr(why, "t.lua"));
    assert_null(load("error('at the top')", NULL, why));
    assert_non_null(strstr(why, "at the top"));
    load_ok("function on_tick() local x = nil; return x.y end");
    assert_false(script_tick(g_script));
    assert_non_null(strstr(reason(), "nil"));
    char refusal[SCRIPT_REASON_MAX];
    struct script_player p = {.id = 5, .role = 1, .team = 1, .name = "a"};
    assert_int_equal(script_command(g_script, &p, "{}", 2, refusal), -14);
    assert_non_null(strstr(refusal, "disabled"));
}

static void test_command_reply(void **state)
{
    (void)state;
    load_ok("function on_game(p, msg)\n"
            "  if msg.action == 'boom' then return false, 'no booms, ' .. p.name end\n"
            "  state.last = msg.n * 2\n"
            "  flock.publish({last = state.last, team = p.team}, p.team)\n"
            "end\n");
    struct script_player p = {.id = 9, .role = 1, .team = 2, .name = "ann"};
    char why[SCRIPT_REASON_MAX];
    const char *ok = "{\"action\":\"x\",\"n\":21}";
    assert_int_equal(script_command(g_script, &p, ok, strlen(ok), why), 0);
    assert_string_equal(g_published, "{\"last\":42,\"team\":2}");
    assert_int_equal(g_published_team, 2);
    const char *no = "{\"action\":\"boom\"}";
    assert_int_equal(script_command(g_script, &p, no, strlen(no), why), -14);
    assert_string_equal(why, "no booms, ann");
}

/* Two teams in a crowd: outnumbered() against a brute-force count. */
static void test_outnumbered_matches_brute_force(void **state)
{
    (void)state;
    struct sim_world *w = world();
    assert_int_equal(sim_spawn(w, 300, 1, 700.0f, 500.0f, 150.0f), 300);
    assert_int_equal(sim_spawn(w, 200, 2, 850.0f, 500.0f, 150.0f), 200);
    load_ok("function on_start()\n"
            "  local ids, by = flock.outnumbered(40, 1.5)\n"
            "  state.n = #ids\n"
            "  state.first = ids[1] or 0\n"
            "  state.by = by[1] or 0\n"
            "  flock.publish({n = #ids})\n"
            "end\n");
    assert_true(script_start(g_script));
    struct sim_view v;
    sim_view(w, &v);
    int expect = 0;
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t n[3] = {0};
        for (uint32_t j = 0; j < v.count; j++) {
            float dx = v.x[j] - v.x[i], dy = v.y[j] - v.y[i];
            if (dx * dx + dy * dy <= 40.0f * 40.0f)
                n[v.group[j]]++;
        }
        int other = v.group[i] == 1 ? 2 : 1;
        if (n[other] >= 1 && n[other] > 1.5 * n[v.group[i]])
            expect++;
    }
    char want[64];
    snprintf(want, sizeof want, "{\"n\":%d}", expect);
    assert_string_equal(g_published, want);
    assert_true(expect > 0);
}

static void test_convert_and_despawn_by_id(void **state)
{
    (void)state;
    struct sim_world *w = world();
    assert_int_equal(sim_spawn(w, 10, 1, 400.0f, 500.0f, 50.0f), 10); /* ids 1..10 */
    assert_int_equal(sim_spawn(w, 10, 2, 900.0f, 500.0f, 50.0f), 10); /* ids 11..20 */
    load_ok("function on_start()\n"
            "  assert(flock.convert({2, 4, 19}, 3) == 3)\n"
            "  assert(flock.despawn({5, 11, 999}) == 2)\n"
            "  local c = flock.count()\n"
            "  flock.publish({c = c})\n"
            "end\n");
    assert_true(script_start(g_script));
    assert_string_equal(g_published, "{\"c\":[7,8,3,0]}");
    struct sim_view v;
    sim_view(w, &v);
    assert_int_equal(v.count, 18);
    for (uint32_t i = 1; i < v.count; i++) /* sorted by group */
        assert_true(v.group[i - 1] <= v.group[i]);
    assert_int_equal(v.id[v.count - 3], 2);
    assert_int_equal(v.id[v.count - 1], 19);
    /* Into a team that has units: each group stays in id order, and a
     * converted unit can be selected by its id. */
    uint32_t ids[] = {3, 20, 7};
    assert_int_equal(sim_regroup_ids(w, ids, 3, 2), 3);
    sim_view(w, &v);
    for (uint32_t i = 1; i < v.count; i++)
        assert_true(v.group[i - 1] < v.group[i] ||
                    (v.group[i - 1] == v.group[i] && v.id[i - 1] < v.id[i]));
    uint32_t pick[] = {3, 7};
    struct sim_selection sel = {.by = SIM_SELECT_IDS, .ids = pick, .n = 2};
    assert_true(sim_select(w, 2, 1, &sel) >= 1);
}

static void test_state_survives_save_and_restore(void **state)
{
    (void)state;
    const char *text =
        "function on_start() state.t = {1, 2.5, 'x', nested = {y = true}}\n"
        "  state.r = flock.random(1, 1000000) end\n"
        "function on_tick() flock.publish({t = state.t, r = flock.random(1, 1000000)}) end\n";
    load_ok(text);
    assert_true(script_start(g_script));
    uint8_t *saved;
    char why[SCRIPT_REASON_MAX];
    int n = script_save(g_script, &saved, why);
    assert_true(n > 16);
    assert_true(script_tick(g_script));
    char first[4096];
    snprintf(first, sizeof first, "%s", g_published);
    /* Another seed: the draw must come from the saved stream. */
    struct script *again = load_from(text, 99, NULL, saved, (size_t)n, why);
    free(saved);
    assert_non_null(again);
    assert_true(script_tick(again)); /* the same random draw: the stream came with the state */
    assert_string_equal(g_published, first);
    assert_non_null(strstr(first, "\"nested\":{\"y\":true}"));
    script_destroy(again);
}

static void test_functions_cannot_be_saved(void **state)
{
    (void)state;
    load_ok("state.f = function() end\n");
    uint8_t *saved;
    char why[SCRIPT_REASON_MAX];
    assert_true(script_save(g_script, &saved, why) < 0);
    assert_non_null(strstr(why, "function"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sandbox, teardown),
        cmocka_unit_test_teardown(test_pairs_in_order, teardown),
        cmocka_unit_test_teardown(test_runaway_loop_is_stopped, teardown),
        cmocka_unit_test_teardown(test_pcall_cannot_hold_the_budget, teardown),
        cmocka_unit_test_teardown(test_memory_cap, teardown),
        cmocka_unit_test_teardown(test_errors_are_reported, teardown),
        cmocka_unit_test_teardown(test_command_reply, teardown),
        cmocka_unit_test_teardown(test_outnumbered_matches_brute_force, teardown),
        cmocka_unit_test_teardown(test_convert_and_despawn_by_id, teardown),
        cmocka_unit_test_teardown(test_state_survives_save_and_restore, teardown),
        cmocka_unit_test_teardown(test_functions_cannot_be_saved, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
