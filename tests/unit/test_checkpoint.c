/*
 * Unit tests for the checkpoint codec (checkpoint.h): a checkpoint with
 * teams, owners, a password and a world reads back field for field; its
 * size is what ckpt_size says and within ckpt_max_size; a small buffer is
 * refused. And refusals, each with a reason: every cut length is
 * truncated, every flipped byte is caught (mostly by the checksum), a
 * byte too many, another format version, not a checkpoint, and fields
 * that break their rules under a valid checksum (team state, room name,
 * mode, tick rate, owners out of order or more than the obstacles, a
 * world whose time step is not the room's tick, a broken world state, a
 * team's padding other than zeros).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "checkpoint.h"
#include "sim_state.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint8_t *world_bytes;
static size_t world_len;
static struct ckpt_owner owners[2] = {{1, 11}, {3, 12}};

/* A world of 200 boids with three obstacles (ids 1..3), 60 Hz. */
static int setup(void **state)
{
    (void)state;
    struct sim_config cfg;
    sim_default_config(&cfg);
    cfg.capacity = 256;
    cfg.max_obstacles = 4;
    struct sim_world *w = sim_create(&cfg, NULL);
    sim_scatter(w, 200, 0);
    sim_obstacle_add(w, 100, 100, 20);
    sim_obstacle_add(w, 200, 100, 20);
    sim_obstacle_add(w, 300, 100, 20);
    sim_step(w);
    world_len = sim_state_size(w);
    world_bytes = malloc(world_len);
    sim_state_encode(w, world_bytes, world_len);
    sim_destroy(w);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(world_bytes);
    return 0;
}

static struct ckpt sample(void)
{
    struct ckpt c;
    memset(&c, 0, sizeof c);
    strcpy(c.room, "arena-1");
    c.mode = PROTO_MODE_RTS;
    strcpy(c.password, "open sesame");
    c.max_teams = 3;
    c.teams[1] = (struct ckpt_team){.state = CKPT_TEAM_PLAYING, .owner = 11};
    strcpy(c.teams[1].rejoin, "0123456789abcdef0123456789abcdef");
    strcpy(c.teams[1].name, "ann");
    c.teams[3] = (struct ckpt_team){.state = CKPT_TEAM_WAITING, .owner = 12, .grace_left_ns = 5};
    strcpy(c.teams[3].rejoin, "fedcba9876543210fedcba9876543210");
    c.seq = 7;
    c.wall_us = 1700000000000000;
    strcpy(c.build, "flockd 0.1.0 test");
    c.tick_hz = 60;
    c.boids = 200;
    c.paused = 1;
    c.steps_pending = 4;
    c.owner_count = 2;
    c.owners = owners;
    c.world = world_bytes;
    c.world_len = world_len;
    return c;
}

/* sample() encoded into a new buffer the caller frees. */
static uint8_t *encoded(size_t *len)
{
    struct ckpt c = sample();
    *len = ckpt_size(&c);
    uint8_t *buf = malloc(*len + 1);
    assert_int_equal(ckpt_encode(&c, buf, *len), (int)*len);
    return buf;
}

static void a_checkpoint_reads_back_field_for_field(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = encoded(&len);
    struct ckpt in = sample(), out;
    const char *why = NULL;
    assert_int_equal(ckpt_decode(buf, len, &out, &why), 0);
    assert_string_equal(out.room, in.room);
    assert_int_equal(out.mode, in.mode);
    assert_string_equal(out.password, in.password);
    assert_int_equal(out.max_teams, 3);
    for (uint32_t t = 1; t <= 3; t++) {
        assert_int_equal(out.teams[t].state, in.teams[t].state);
        assert_true(out.teams[t].owner == in.teams[t].owner);
        assert_string_equal(out.teams[t].rejoin, in.teams[t].rejoin);
        assert_string_equal(out.teams[t].name, in.teams[t].name);
        assert_true(out.teams[t].grace_left_ns == in.teams[t].grace_left_ns);
    }
    assert_int_equal(out.seq, 7);
    assert_true(out.wall_us == in.wall_us);
    assert_string_equal(out.build, in.build);
    assert_true(out.tick_hz == 60 && out.boids == 200 && out.paused && out.steps_pending == 4);
    assert_int_equal(out.owner_count, 2);
    for (uint32_t k = 0; k < 2; k++) {
        struct ckpt_owner o;
        ckpt_owner(&out, k, &o);
        assert_true(o.id == owners[k].id && o.owner == owners[k].owner);
    }
    assert_int_equal(out.world_len, world_len);
    assert_memory_equal(out.world, world_bytes, world_len);
    free(buf);
}

static void the_size_is_exact_and_bounded_and_a_small_buffer_is_refused(void **state)
{
    (void)state;
    struct ckpt c = sample();
    size_t len = ckpt_size(&c);
    assert_true(len <= ckpt_max_size(256, 4));
    uint8_t *buf = malloc(len);
    assert_int_equal(ckpt_encode(&c, buf, len - 1), PROTO_E_NOSPACE);
    strcpy(c.build, "");
    memset(c.build, 'b', CKPT_BUILD_MAX);
    c.build[CKPT_BUILD_MAX] = '\0';
    assert_true(ckpt_size(&c) <= ckpt_max_size(256, 4));
    free(buf);
}

static void every_cut_is_refused_as_truncated(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = encoded(&len);
    for (size_t cut = 0; cut < len; cut += (cut < 200 ? 1 : 97)) {
        struct ckpt out;
        const char *why = NULL;
        assert_int_equal(ckpt_decode(buf, cut, &out, &why), PROTO_E_TRUNCATED);
        assert_non_null(why);
    }
    free(buf);
}

static void every_flipped_byte_is_refused(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = encoded(&len);
    for (size_t i = 0; i < len; i++) {
        struct ckpt out;
        buf[i] ^= 0x10;
        assert_true(ckpt_decode(buf, len, &out, NULL) < 0);
        buf[i] ^= 0x10;
    }
    free(buf);
}

static void a_byte_too_many_another_version_or_no_magic_is_refused(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = encoded(&len);
    struct ckpt out;
    buf[len] = 0;
    assert_int_equal(ckpt_decode(buf, len + 1, &out, NULL), PROTO_E_BAD_LENGTH);
    buf[8] = 3;
    assert_int_equal(ckpt_decode(buf, len, &out, NULL), PROTO_E_BAD_VERSION);
    buf[0] = 'X';
    assert_int_equal(ckpt_decode(buf, len, &out, NULL), PROTO_E_BAD_MAGIC);
    free(buf);
}

/* A room's script (§2.3) reads back byte for byte; a cut one is refused. */
static void a_script_section_reads_back(void **state)
{
    (void)state;
    struct ckpt c = sample();
    strcpy(c.script, "flockwars");
    c.script_text = "function on_tick() end";
    c.script_len = strlen(c.script_text);
    static const uint8_t saved[] = {1, 2, 3, 0, 5};
    c.script_state = saved;
    c.script_state_len = sizeof saved;
    size_t len = ckpt_size(&c);
    uint8_t *buf = malloc(len);
    assert_int_equal(ckpt_encode(&c, buf, len), (int)len);
    struct ckpt out;
    assert_int_equal(ckpt_decode(buf, len, &out, NULL), 0);
    assert_string_equal(out.script, "flockwars");
    assert_int_equal(out.script_len, c.script_len);
    assert_memory_equal(out.script_text, c.script_text, c.script_len);
    assert_int_equal(out.script_state_len, sizeof saved);
    assert_memory_equal(out.script_state, saved, sizeof saved);
    buf[len - 4 - sizeof saved - 4] = 0xff; /* the state's length runs past the end */
    const char *why = NULL;
    assert_true(ckpt_decode(buf, len, &out, &why) < 0);
    free(buf);
}

/* Re-encodes c and expects the decoder to refuse it as a bad value. */
static void expect_bad_value(struct ckpt c, const char *what)
{
    size_t len = ckpt_size(&c);
    uint8_t *buf = malloc(len);
    assert_int_equal(ckpt_encode(&c, buf, len), (int)len);
    struct ckpt out;
    const char *why = NULL;
    int rc = ckpt_decode(buf, len, &out, &why);
    if (rc != PROTO_E_BAD_VALUE)
        fail_msg("%s: decoded with %d (%s)", what, rc, why ? why : "");
    assert_non_null(why);
    free(buf);
}

static void fields_that_break_their_rules_are_refused_under_a_good_checksum(void **state)
{
    (void)state;
    struct ckpt c = sample();
    c.teams[2].state = (enum ckpt_team_state)3;
    expect_bad_value(c, "team state 3");
    c = sample();
    c.teams[2].owner = 5; /* a free team owns nothing */
    expect_bad_value(c, "free team with an owner");
    c = sample();
    strcpy(c.teams[1].rejoin, "not a token");
    expect_bad_value(c, "bad rejoin token");
    c = sample();
    strcpy(c.room, "bad name!");
    expect_bad_value(c, "room name");
    c = sample();
    c.mode = PROTO_MODE_ANY;
    expect_bad_value(c, "mode any");
    c = sample();
    c.tick_hz = 0.5;
    expect_bad_value(c, "tick rate 0.5");
    c = sample();
    c.tick_hz = 30; /* the world steps at 1/60 s */
    expect_bad_value(c, "world time step not the room's");
    c = sample();
    struct ckpt_owner swapped[2] = {owners[1], owners[0]};
    c.owners = swapped;
    expect_bad_value(c, "owners out of order");
    c = sample();
    struct ckpt_owner many[4] = {{1, 1}, {2, 1}, {3, 1}, {4, 1}};
    c.owners = many;
    c.owner_count = 4;
    expect_bad_value(c, "more owners than obstacles");
    c = sample();
    c.boids = 257;
    expect_bad_value(c, "reset boids above capacity");
    c = sample();
    uint8_t *broken = malloc(world_len);
    memcpy(broken, world_bytes, world_len);
    broken[0] = 'X';
    c.world = broken;
    expect_bad_value(c, "broken world state");
    free(broken);
}

/* buf's CRC (its last 4 bytes) set right for what comes before it. */
static void put_crc(uint8_t *buf, size_t len)
{
    uLong crc = crc32(0, buf, (uInt)(len - 4));
    for (int i = 0; i < 4; i++)
        buf[len - 4 + i] = (uint8_t)(crc >> 8 * i);
}

/* FILES.md §2.2: a team's token and name are zero-padded to 32 bytes; a
 * byte other than zero in the padding is refused, under a good checksum. */
static void a_team_padded_with_other_than_zeros_is_refused(void **state)
{
    (void)state;
    struct ckpt c = sample();
    size_t len;
    uint8_t *buf = encoded(&len);
    size_t team1 = 60 + strlen(c.room) + strlen(c.build) + strlen(c.password), team2 = team1 + 84;
    /* after team 1's name "ann"; in team 2's (free) token and name; in team 3's (no) name */
    size_t at[] = {team1 + 52 + 3, team2 + 20, team2 + 52 + 31, team2 + 84 + 52};
    struct ckpt out;
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        buf[at[k]] = 'x';
        put_crc(buf, len);
        const char *why = NULL;
        if (ckpt_decode(buf, len, &out, &why) != PROTO_E_BAD_VALUE)
            fail_msg("a byte at %zu in a team's padding is not refused", at[k]);
        assert_non_null(why);
        buf[at[k]] = 0;
    }
    put_crc(buf, len);
    assert_int_equal(ckpt_decode(buf, len, &out, NULL), 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_checkpoint_reads_back_field_for_field),
        cmocka_unit_test(the_size_is_exact_and_bounded_and_a_small_buffer_is_refused),
        cmocka_unit_test(every_cut_is_refused_as_truncated),
        cmocka_unit_test(every_flipped_byte_is_refused),
        cmocka_unit_test(a_byte_too_many_another_version_or_no_magic_is_refused),
        cmocka_unit_test(a_script_section_reads_back),
        cmocka_unit_test(fields_that_break_their_rules_are_refused_under_a_good_checksum),
        cmocka_unit_test(a_team_padded_with_other_than_zeros_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
