/*
 * Unit tests for the command log's bytes (reclog.h): every record type and
 * every recorded command reads back as written; commands a log does not
 * record are refused; the preamble names the format and version. And the
 * torn-record rule: a log cut anywhere inside its last record, a last
 * record whose bytes were never all written (CRC fails at the end of the
 * file), or a tail of zeros after either, reads as the records before it
 * with `torn` set and no error, and `good_end` is where an append goes;
 * a record that fails with anything but zeros after it is corruption,
 * reported at its offset after the records before it were read; a whole
 * record of an unknown type or the wrong length is an error too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "reclog.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A log of a BEGIN and one record of every other kind; returns its length
 * and each record's start in at[]. */
#define LOG_CAP 4096
static uint8_t logbuf[LOG_CAP];
static const uint8_t state[5] = {1, 2, 3, 4, 5}; /* a BEGIN's state, undecoded here */

static struct proto_command seek_cmd(void)
{
    struct proto_command c = {.kind = PROTO_CMD_SEEK};
    c.args.seek = (struct proto_seek_args){.group = 7, .x = 12.5f, .y = 800.25f};
    return c;
}

static size_t build_log(size_t at[6])
{
    size_t n = 0;
    reclog_preamble(logbuf);
    n = RECLOG_PREAMBLE;
    at[0] = n;
    n += (size_t)reclog_put_begin(logbuf + n, LOG_CAP - n, RECLOG_RESTORED, "build-1", state,
                                  sizeof state);
    at[1] = n;
    struct proto_command c = seek_cmd();
    n += (size_t)reclog_put_command(logbuf + n, LOG_CAP - n, 42, 9, &c, 0);
    at[2] = n;
    n += (size_t)reclog_put_hash(logbuf + n, LOG_CAP - n, 60, 0x0123456789abcdefULL);
    at[3] = n;
    n += (size_t)reclog_put_checkpoint(logbuf + n, LOG_CAP - n, 61, 3);
    at[4] = n;
    n += (size_t)reclog_put_end(logbuf + n, LOG_CAP - n, 70, 0xfedcba9876543210ULL);
    at[5] = n;
    return n;
}

/* Reads buf[0..len): the records read into *count, the final return code. */
static int read_all(const uint8_t *buf, size_t len, struct reclog_reader *rd, int *count)
{
    static struct reclog_record rec;
    const char *why = NULL;
    *count = 0;
    int rc = reclog_reader_init(rd, buf, len, &why);
    if (rc < 0)
        return rc;
    while ((rc = reclog_next(rd, &rec, &why)) == 1)
        (*count)++;
    return rc;
}

static void every_record_type_reads_back_as_written(void **state_)
{
    (void)state_;
    size_t at[6];
    size_t len = build_log(at);
    struct reclog_reader rd;
    static struct reclog_record rec;
    assert_int_equal(reclog_reader_init(&rd, logbuf, len, NULL), 0);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
    assert_int_equal(rec.type, RECLOG_BEGIN);
    assert_int_equal(rec.reason, RECLOG_RESTORED);
    assert_string_equal(rec.build, "build-1");
    assert_int_equal(rec.state_len, sizeof state);
    assert_memory_equal(rec.state, state, sizeof state);
    assert_int_equal(rec.offset, at[0]);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
    assert_int_equal(rec.type, RECLOG_COMMAND);
    assert_true(rec.tick == 42 && rec.client == 9);
    assert_int_equal(rec.cmd.kind, PROTO_CMD_SEEK);
    assert_int_equal(rec.cmd.args.seek.group, 7);
    assert_true(rec.cmd.args.seek.x == 12.5f && rec.cmd.args.seek.y == 800.25f);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
    assert_true(rec.type == RECLOG_HASH && rec.tick == 60 && rec.hash == 0x0123456789abcdefULL);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
    assert_true(rec.type == RECLOG_CHECKPOINT && rec.tick == 61 && rec.seq == 3);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
    assert_true(rec.type == RECLOG_END && rec.tick == 70 && rec.hash == 0xfedcba9876543210ULL);
    assert_int_equal(reclog_next(&rd, &rec, NULL), 0);
    assert_false(rd.torn);
    assert_int_equal(rd.good_end, len);
}

/* Every recorded command with arguments of each kind. */
static size_t all_commands(struct proto_command *c)
{
    size_t n = 0;
    c[n++] = seek_cmd();
    c[n] = (struct proto_command){.kind = PROTO_CMD_SEEK_CLEAR};
    c[n++].args.seek_clear.group = 255;
    c[n] = (struct proto_command){.kind = PROTO_CMD_OBSTACLE_ADD};
    c[n++].args.obstacle_add = (struct proto_obstacle_add_args){100, 200, 30};
    c[n] = (struct proto_command){.kind = PROTO_CMD_OBSTACLE_REMOVE};
    c[n++].args.obstacle_remove.id = 4000000000u;
    c[n++] = (struct proto_command){.kind = PROTO_CMD_OBSTACLE_CLEAR};
    c[n] = (struct proto_command){.kind = PROTO_CMD_SPAWN};
    c[n++].args.spawn =
        (struct proto_spawn_args){.n = 500, .group = 3, .x = 1, .y = 2, .spread = 0};
    c[n] = (struct proto_command){.kind = PROTO_CMD_DESPAWN};
    c[n++].args.despawn = (struct proto_despawn_args){.n = UINT32_MAX, .group = -1};
    c[n] = (struct proto_command){.kind = PROTO_CMD_PARAMS};
    c[n].args.params.group = -1;
    c[n].args.params.count = 2;
    c[n].args.params.items[0] = (struct proto_param_value){sim_param_find("max_speed"), 150};
    c[n++].args.params.items[1] = (struct proto_param_value){sim_param_find("fov"), 90};
    c[n++] = (struct proto_command){.kind = PROTO_CMD_PAUSE};
    c[n++] = (struct proto_command){.kind = PROTO_CMD_RESUME};
    c[n] = (struct proto_command){.kind = PROTO_CMD_STEP};
    c[n++].args.step.n = 1000;
    c[n] = (struct proto_command){.kind = PROTO_CMD_RESET};
    c[n++].args.reset =
        (struct proto_reset_args){.has_seed = 1, .has_boids = 1, .seed = 9, .boids = 7};
    c[n] = (struct proto_command){.kind = PROTO_CMD_SELECT};
    c[n].args.select = (struct proto_select_args){
        .team = 3, .squad = -1, .by = PROTO_SELECT_IDS, .n = PROTO_SELECT_MAX};
    for (uint32_t k = 0; k < PROTO_SELECT_MAX; k++)
        c[n].args.select.ids[k] = UINT32_MAX - k;
    n++;
    c[n] = (struct proto_command){.kind = PROTO_CMD_SELECT};
    c[n++].args.select = (struct proto_select_args){
        .team = 0, .squad = 32, .by = PROTO_SELECT_RECT, .rect = {1, 2, 3, 4}};
    c[n] = (struct proto_command){.kind = PROTO_CMD_SELECT};
    c[n++].args.select = (struct proto_select_args){
        .team = 255, .squad = 0, .by = PROTO_SELECT_SQUADS, .squads = 1ull << 32 | 1};
    c[n] = (struct proto_command){.kind = PROTO_CMD_MOVE};
    c[n].args.order = (struct proto_order_args){
        .team = 2, .squad = 32, .order = PROTO_ORDER_MOVE, .nway = PROTO_WAYPOINTS, .queue = 1};
    for (int k = 0; k < PROTO_WAYPOINTS; k++)
        c[n].args.order.way[k][0] = (float)k, c[n].args.order.way[k][1] = 1000.0f - (float)k;
    n++;
    c[n] = (struct proto_command){.kind = PROTO_CMD_FOLLOW};
    c[n++].args.order = (struct proto_order_args){
        .team = 2, .squad = 1, .order = PROTO_ORDER_FOLLOW, .unit = 4000000000u};
    c[n] = (struct proto_command){.kind = PROTO_CMD_STOP};
    c[n++].args.order = (struct proto_order_args){.team = 2, .squad = 7, .order = PROTO_ORDER_STOP};
    c[n] = (struct proto_command){.kind = PROTO_CMD_FORMATION};
    c[n++].args.formation = (struct proto_formation_args){
        .team = 9, .squad = 3, .shape = PROTO_SHAPE_WEDGE, .spacing = 12.5f};
    return n;
}

static void every_recorded_command_reads_back_as_written(void **state_)
{
    (void)state_;
    static struct proto_command cmds[24];
    static struct reclog_record rec;
    size_t n = all_commands(cmds);
    for (size_t k = 0; k < n; k++) {
        uint8_t buf[RECLOG_SMALL];
        assert_true(reclog_is_recorded(cmds[k].kind));
        int len = reclog_put_command(buf, sizeof buf, 1000 + k, 5, &cmds[k], 17);
        assert_true(len > 0);
        struct reclog_reader rd = {.buf = buf, .len = (size_t)len, .at = 0};
        assert_int_equal(reclog_next(&rd, &rec, NULL), 1);
        assert_true(rec.tick == 1000 + k && rec.client == 5);
        assert_int_equal(rec.cmd.kind, cmds[k].kind);
        if (cmds[k].kind == PROTO_CMD_OBSTACLE_ADD)
            assert_int_equal(rec.obstacle, 17);
        /* What was read writes the same bytes again: every argument came back. */
        uint8_t again[RECLOG_SMALL];
        assert_int_equal(
            reclog_put_command(again, sizeof again, rec.tick, rec.client, &rec.cmd, rec.obstacle),
            len);
        assert_memory_equal(again, buf, (size_t)len);
    }
}

static void commands_that_change_nothing_are_not_recorded(void **state_)
{
    (void)state_;
    enum proto_cmd kinds[] = {PROTO_CMD_PING, PROTO_CMD_JOIN, PROTO_CMD_KICK};
    for (size_t k = 0; k < 3; k++) {
        struct proto_command c = {.kind = kinds[k]};
        uint8_t buf[RECLOG_SMALL];
        assert_false(reclog_is_recorded(kinds[k]));
        assert_int_equal(reclog_put_command(buf, sizeof buf, 1, 1, &c, 0), PROTO_E_BAD_ARG);
    }
    struct proto_command c = seek_cmd();
    uint8_t small[10];
    assert_int_equal(reclog_put_command(small, sizeof small, 1, 1, &c, 0), PROTO_E_NOSPACE);
}

static void the_preamble_names_the_format_and_its_version(void **state_)
{
    (void)state_;
    uint8_t buf[RECLOG_PREAMBLE];
    struct reclog_reader rd;
    reclog_preamble(buf);
    assert_int_equal(reclog_reader_init(&rd, buf, sizeof buf, NULL), 0);
    assert_int_equal(reclog_reader_init(&rd, buf, 5, NULL), PROTO_E_TRUNCATED);
    buf[8] = 2;
    assert_int_equal(reclog_reader_init(&rd, buf, sizeof buf, NULL), PROTO_E_BAD_VERSION);
    buf[0] = 'X';
    assert_int_equal(reclog_reader_init(&rd, buf, sizeof buf, NULL), PROTO_E_BAD_MAGIC);
}

static void a_log_cut_anywhere_in_its_last_record_reads_as_the_records_before(void **state_)
{
    (void)state_;
    size_t at[6];
    build_log(at);
    for (size_t cut = at[4] + 1; cut < at[5]; cut++) {
        struct reclog_reader rd;
        int count;
        assert_int_equal(read_all(logbuf, cut, &rd, &count), 0);
        assert_int_equal(count, 4);
        assert_true(rd.torn);
        assert_int_equal(rd.good_end, at[4]);
    }
}

static void a_last_record_that_fails_its_checksum_is_torn_and_ignored(void **state_)
{
    (void)state_;
    size_t at[6];
    size_t len = build_log(at);
    logbuf[at[5] - 1] ^= 0x40; /* the END record's last byte */
    struct reclog_reader rd;
    int count;
    assert_int_equal(read_all(logbuf, len, &rd, &count), 0);
    assert_int_equal(count, 4);
    assert_true(rd.torn);
    assert_int_equal(rd.good_end, at[4]);
}

static void zeros_after_the_last_record_are_a_torn_tail(void **state_)
{
    (void)state_;
    size_t at[6];
    size_t len = build_log(at);
    static uint8_t big[LOG_CAP * 2];
    /* Whole records, then zeros (a file extended but never written). */
    memcpy(big, logbuf, len);
    memset(big + len, 0, 3000);
    struct reclog_reader rd;
    int count;
    assert_int_equal(read_all(big, len + 3000, &rd, &count), 0);
    assert_int_equal(count, 5);
    assert_true(rd.torn);
    assert_int_equal(rd.good_end, len);
    /* Part of a record, then zeros. */
    memcpy(big, logbuf, len);
    memset(big + at[4] + 10, 0, 3000);
    assert_int_equal(read_all(big, at[4] + 3000, &rd, &count), 0);
    assert_int_equal(count, 4);
    assert_int_equal(rd.good_end, at[4]);
}

static void a_bad_record_with_more_after_it_is_corruption_at_its_offset(void **state_)
{
    (void)state_;
    size_t at[6];
    size_t len = build_log(at);
    logbuf[at[2] + RECLOG_FRAME + 3] ^= 1; /* inside the HASH record */
    struct reclog_reader rd;
    int count;
    assert_int_equal(read_all(logbuf, len, &rd, &count), PROTO_E_HASH_MISMATCH);
    assert_int_equal(count, 2);
    assert_int_equal(rd.at, at[2]);
    assert_int_equal(rd.good_end, at[2]);
    assert_false(rd.torn);
    /* An impossible length with data after it: also corruption. */
    len = build_log(at);
    memset(logbuf + at[2], 0xff, 4);
    assert_int_equal(read_all(logbuf, len, &rd, &count), PROTO_E_HASH_MISMATCH);
    assert_int_equal(count, 2);
}

/* Frames payload[0..n) as a record at buf; returns the record's length. */
static size_t frame(uint8_t *buf, const uint8_t *payload, size_t n)
{
    uint32_t crc = (uint32_t)crc32(0, payload, (uInt)n);
    for (int i = 0; i < 4; i++) {
        buf[i] = (uint8_t)(n >> (8 * i));
        buf[4 + i] = (uint8_t)(crc >> (8 * i));
    }
    memcpy(buf + RECLOG_FRAME, payload, n);
    return RECLOG_FRAME + n;
}

static void a_whole_record_that_breaks_the_format_is_an_error(void **state_)
{
    (void)state_;
    static struct reclog_record rec;
    uint8_t buf[64];
    const uint8_t unknown_type[] = {9, 0, 0};
    const uint8_t hash_too_short[] = {RECLOG_HASH, 1, 2, 3};
    const uint8_t bad_code[18] = {RECLOG_COMMAND, [17] = 99};
    const uint8_t step_zero[22] = {RECLOG_COMMAND, [17] = 11};
    /* select: team 1, squad 1, a selection by 9 */
    const uint8_t select_by_nine[22] = {RECLOG_COMMAND, [17] = 13, 1, 1, 0, 9};
    /* move: team 1, squad 1, order 1, no waypoints, queue 0 */
    const uint8_t move_nowhere[26] = {RECLOG_COMMAND, [17] = 14, 1, 1, 0, 1, 0, 0, 0, 0};
    /* hold: team 1, squad 1, and the order of stop */
    const uint8_t hold_as_stop[23] = {RECLOG_COMMAND, [17] = 17, 1, 1, 0, 5, 0};
    const struct {
        const uint8_t *p;
        size_t n;
    } cases[] = {{unknown_type, sizeof unknown_type},
                 {hash_too_short, sizeof hash_too_short},
                 {bad_code, sizeof bad_code},
                 {step_zero, sizeof step_zero},
                 {select_by_nine, sizeof select_by_nine},
                 {move_nowhere, sizeof move_nowhere},
                 {hold_as_stop, sizeof hold_as_stop}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = frame(buf, cases[k].p, cases[k].n);
        struct reclog_reader rd = {.buf = buf, .len = n};
        const char *why = NULL;
        assert_int_equal(reclog_next(&rd, &rec, &why), PROTO_E_BAD_VALUE);
        assert_non_null(why);
        assert_int_equal(rd.at, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_record_type_reads_back_as_written),
        cmocka_unit_test(every_recorded_command_reads_back_as_written),
        cmocka_unit_test(commands_that_change_nothing_are_not_recorded),
        cmocka_unit_test(the_preamble_names_the_format_and_its_version),
        cmocka_unit_test(a_log_cut_anywhere_in_its_last_record_reads_as_the_records_before),
        cmocka_unit_test(a_last_record_that_fails_its_checksum_is_torn_and_ignored),
        cmocka_unit_test(zeros_after_the_last_record_are_a_torn_tail),
        cmocka_unit_test(a_bad_record_with_more_after_it_is_corruption_at_its_offset),
        cmocka_unit_test(a_whole_record_that_breaks_the_format_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
