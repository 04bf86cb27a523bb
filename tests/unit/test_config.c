/*
 * test_config — the settings table as users meet it: defaults, flags in
 * both forms, strict numbers, the JSON config file and its precedence,
 * cross-setting validation and --help. Config files are written to a
 * private mkdtemp directory that each test removes again.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Every setting name from config.h, in the order of the struct. */
static const char *const setting_names[] = {
    "host",          "port",        "boids",         "capacity",       "tick-hz",
    "snapshot-hz",   "seed",        "width",         "height",         "edges",
    "max-obstacles", "web-root",    "max-message",   "queue",          "stale-timeout",
    "max-clients",   "workers",     "max-rooms",     "max-room-boids", "allow-create",
    "room-expiry",   "admin-token", "rate",          "burst",          "player-obstacles",
    "max-teams",     "team-units",  "team-cap",      "grace",          "config",
    "nats",          "nats-user",   "nats-password", "nats-token",     "nats-creds",
    "nats-ca",       "nats-cert",   "nats-key",
};

/* A scratch directory holding at most one config file at a time. */
struct scratch {
    char dir[64];
    char file[128];
};

static int scratch_setup(void **state)
{
    struct scratch *s = calloc(1, sizeof *s);
    assert_non_null(s);
    strcpy(s->dir, "/tmp/test_config.XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->file, sizeof s->file, "%s/flockd.json", s->dir);
    *state = s;
    return 0;
}

static int scratch_teardown(void **state)
{
    struct scratch *s = *state;
    if (unlink(s->file) != 0)
        assert_int_equal(errno, ENOENT);
    assert_int_equal(rmdir(s->dir), 0);
    free(s);
    return 0;
}

/* Writes len bytes of text as the scratch config file and returns its path. */
static const char *write_file(void **state, const char *text, size_t len)
{
    struct scratch *s = *state;
    FILE *f = fopen(s->file, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return s->file;
}

static const char *write_json(void **state, const char *json)
{
    return write_file(state, json, strlen(json));
}

static int parse(struct cfg *c, int argc, char **argv, char *err, size_t errlen)
{
    cfg_default(c);
    return cfg_parse_args(c, argc, argv, err, errlen);
}

static void defaults_should_match_the_documented_values(void **state)
{
    struct cfg c;
    memset(&c, 0xAB, sizeof c);
    cfg_default(&c);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 8080);
    assert_int_equal(c.boids, 1000);
    assert_int_equal(c.capacity, 16384);
    assert_true(c.tick_hz == 60.0);
    assert_true(c.snapshot_hz == 20.0);
    assert_int_equal(c.seed, 1);
    assert_true(c.width == 1600.0);
    assert_true(c.height == 1000.0);
    assert_string_equal(c.edges, "wrap");
    assert_int_equal(c.max_obstacles, 64);
    assert_string_equal(c.web_root, "client/web");
    assert_int_equal(c.max_message, 4096);
    assert_int_equal(c.queue_len, 1024);
    assert_true(c.stale_timeout == 10.0);
    assert_int_equal(c.max_clients, 10000);
    assert_string_equal(c.config_path, "");
}

static void defaults_should_pass_validation(void **state)
{
    struct cfg c;
    char err[256] = "";
    cfg_default(&c);
    assert_int_equal(cfg_validate(&c, err, sizeof err), 0);
    assert_string_equal(err, "");
}

static void no_arguments_should_leave_the_defaults(void **state)
{
    struct cfg c, d;
    char err[256];
    char *argv[] = {"flockd"};
    cfg_default(&d);
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_memory_equal(&c, &d, sizeof c);
}

static void flags_with_separate_values_should_set_every_setting(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--boids",
                    "5",
                    "--capacity",
                    "1048576",
                    "--tick-hz",
                    "120.5",
                    "--snapshot-hz",
                    "30",
                    "--seed",
                    "9007199254740992",
                    "--width",
                    "100",
                    "--height",
                    "100000",
                    "--edges",
                    "contain",
                    "--max-obstacles",
                    "4096",
                    "--web-root",
                    "/srv/web",
                    "--max-message",
                    "256",
                    "--queue",
                    "65536",
                    "--stale-timeout",
                    "0.5e1",
                    "--max-clients",
                    "1"};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 0);
    assert_int_equal(c.boids, 5);
    assert_int_equal(c.capacity, 1048576);
    assert_true(c.tick_hz == 120.5);
    assert_true(c.snapshot_hz == 30.0);
    assert_true(c.seed == UINT64_C(9007199254740992));
    assert_true(c.width == 100.0);
    assert_true(c.height == 100000.0);
    assert_string_equal(c.edges, "contain");
    assert_int_equal(c.max_obstacles, 4096);
    assert_string_equal(c.web_root, "/srv/web");
    assert_int_equal(c.max_message, 256);
    assert_int_equal(c.queue_len, 65536);
    assert_true(c.stale_timeout == 5.0);
    assert_int_equal(c.max_clients, 1);
}

static void flags_with_equals_values_should_set_the_setting(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd", "--port=9001", "--tick-hz=30", "--host=::1", "--web-root=a=b"};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_int_equal(c.port, 9001);
    assert_true(c.tick_hz == 30.0);
    assert_string_equal(c.host, "::1");
    assert_string_equal(c.web_root, "a=b");
}

static void a_later_flag_should_override_an_earlier_one(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd", "--port", "1", "--port=2"};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_int_equal(c.port, 2);
}

static void out_of_range_value_should_be_refused_naming_flag_value_and_range(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd", "--port", "99999"};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--port: \"99999\" is out of range [0, 65535]");
}

static void bad_values_should_be_refused_with_a_message_naming_the_flag(void **state)
{
    static const struct {
        const char *flag, *value;
    } bad[] = {
        {"port", ""},
        {"port", "80x"},
        {"port", "8080.0"},
        {"port", "0x50"},
        {"port", " 80"},
        {"port", "80 "},
        {"port", "-1"},
        {"port", "1e3"},
        {"boids", "1048577"},
        {"capacity", "0"},
        {"seed", "-1"},
        {"seed", "9007199254740993"},
        {"seed", "99999999999999999999999"},
        {"tick-hz", "nan"},
        {"tick-hz", "NaN"},
        {"tick-hz", "inf"},
        {"tick-hz", "-inf"},
        {"tick-hz", "1e999"},
        {"tick-hz", ""},
        {"tick-hz", "abc"},
        {"tick-hz", "0x10"},
        {"tick-hz", "240.001"},
        {"tick-hz", "0.999"},
        {"tick-hz", "1e"},
        {"tick-hz", "."},
        {"width", "99.9"},
        {"snapshot-hz", "61"},
        {"max-message", "255"},
        {"queue", "15"},
        {"stale-timeout", "-0"},
        {"max-clients", "100001"},
        {"edges", "bounce"},
        {"edges", ""},
        {"edges", "WRAP"},
        {"host", ""},
        {"web-root", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cfg c;
        char err[256] = "", flag[64], quoted[64];
        char *argv[] = {"flockd", flag, (char *)bad[i].value};
        snprintf(flag, sizeof flag, "--%s", bad[i].flag);
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i].value);
        int rc = parse(&c, ARGC(argv), argv, err, sizeof err);
        if (rc != CFG_EINVAL)
            fail_msg("%s %s was accepted", flag, bad[i].value);
        assert_ptr_equal(strstr(err, flag), err);
        assert_non_null(strstr(err, quoted));
    }
}

static void numeric_messages_should_state_the_allowed_range(void **state)
{
    struct cfg c;
    char err[256];
    char *nan_argv[] = {"flockd", "--tick-hz", "nan"};
    char *frac_argv[] = {"flockd", "--boids=1.5"};
    char *edge_argv[] = {"flockd", "--edges", "bounce"};
    assert_int_equal(parse(&c, ARGC(nan_argv), nan_argv, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--tick-hz: \"nan\" is not a number in [1, 240]");
    assert_int_equal(parse(&c, ARGC(frac_argv), frac_argv, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--boids: \"1.5\" is not an integer in [0, 1048576]");
    assert_int_equal(parse(&c, ARGC(edge_argv), edge_argv, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--edges: \"bounce\" is not one of wrap|contain");
}

static void too_long_string_should_be_refused(void **state)
{
    struct cfg c;
    char err[256], host[300];
    memset(host, 'h', sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char *argv[] = {"flockd", "--host", host};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "--host"));
    assert_non_null(strstr(err, "length [1, 255]"));
    assert_string_equal(c.host, "0.0.0.0");
}

static void flag_missing_its_value_should_be_refused(void **state)
{
    struct cfg c;
    char err[256];
    char *at_end[] = {"flockd", "--port"};
    char *before_flag[] = {"flockd", "--web-root", "--port", "80"};
    assert_int_equal(parse(&c, ARGC(at_end), at_end, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--port: missing value");
    assert_int_equal(parse(&c, ARGC(before_flag), before_flag, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--web-root: missing value");
}

static void unknown_flag_should_be_refused(void **state)
{
    struct cfg c;
    char err[256];
    char *plain[] = {"flockd", "--foo"};
    char *with_value[] = {"flockd", "--foo=1"};
    char *short_flag[] = {"flockd", "-p", "80"};
    char *positional[] = {"flockd", "8080"};
    assert_int_equal(parse(&c, ARGC(plain), plain, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "unknown option --foo (see --help)");
    assert_int_equal(parse(&c, ARGC(with_value), with_value, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "unknown option --foo (see --help)");
    assert_int_equal(parse(&c, ARGC(short_flag), short_flag, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "unknown option -p (see --help)");
    assert_int_equal(parse(&c, ARGC(positional), positional, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "\"8080\""));
}

static void help_flag_should_return_cfg_help(void **state)
{
    struct cfg c;
    char err[256];
    char *long_form[] = {"flockd", "--help"};
    char *short_form[] = {"flockd", "-h"};
    char *after_flags[] = {"flockd", "--port", "1", "--help"};
    assert_int_equal(parse(&c, ARGC(long_form), long_form, err, sizeof err), CFG_HELP);
    assert_int_equal(parse(&c, ARGC(short_form), short_form, err, sizeof err), CFG_HELP);
    assert_int_equal(parse(&c, ARGC(after_flags), after_flags, err, sizeof err), CFG_HELP);
}

static void config_file_should_apply_and_flags_override_it_wherever_config_appears(void **state)
{
    const char *path =
        write_json(state, "{\"port\": 9000, \"tick-hz\": 30, \"edges\": \"contain\", "
                          "\"seed\": 42, \"web-root\": \"/srv/flock\"}");
    char *config_last[] = {"flockd", "--port", "7000", "--config", (char *)path};
    char *config_first[] = {"flockd", "--config", (char *)path, "--port=7000"};
    char **orders[] = {config_last, config_first};
    int counts[] = {ARGC(config_last), ARGC(config_first)};

    for (int i = 0; i < 2; i++) {
        struct cfg c;
        char err[256];
        assert_int_equal(parse(&c, counts[i], orders[i], err, sizeof err), 0);
        assert_int_equal(c.port, 7000);
        assert_true(c.tick_hz == 30.0);
        assert_string_equal(c.edges, "contain");
        assert_int_equal(c.seed, 42);
        assert_string_equal(c.web_root, "/srv/flock");
        assert_string_equal(c.config_path, path);
        assert_true(c.snapshot_hz == 20.0);
    }
}

static void bad_config_file_should_fail_parse_args(void **state)
{
    struct cfg c;
    char err[512];
    const char *path = write_json(state, "{\"port\": \"80\"}");
    char *argv[] = {"flockd", "--config", (char *)path};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "\"port\""));
}

/* Loads json and expects CFG_EINVAL, *c untouched and needle in the message. */
static void expect_file_refused(void **state, const char *json, const char *needle)
{
    struct cfg c, before;
    char err[512] = "";
    const char *path = write_json(state, json);
    cfg_default(&c);
    c.port = 1234; /* not a default, so a reset would show too */
    before = c;
    assert_int_equal(cfg_load_file(&c, path, err, sizeof err), CFG_EINVAL);
    assert_memory_equal(&c, &before, sizeof c);
    assert_non_null(strstr(err, path));
    if (!strstr(err, needle))
        fail_msg("message \"%s\" does not mention %s", err, needle);
}

static void config_file_with_unknown_key_should_be_refused_unchanged(void **state)
{
    expect_file_refused(state, "{\"tick-hz\": 30, \"colour\": \"red\"}", "\"colour\"");
}

static void config_file_with_wrong_types_should_be_refused_unchanged(void **state)
{
    expect_file_refused(state, "{\"tick-hz\": 30, \"port\": \"8080\"}", "\"port\"");
    expect_file_refused(state, "{\"host\": 5}", "\"host\"");
    expect_file_refused(state, "{\"boids\": true}", "\"boids\"");
    expect_file_refused(state, "{\"seed\": null}", "\"seed\"");
    expect_file_refused(state, "{\"width\": [1]}", "\"width\"");
}

static void config_file_with_bad_values_should_be_refused_unchanged(void **state)
{
    expect_file_refused(state, "{\"port\": 8081, \"tick-hz\": 1000}", "[1, 240]");
    expect_file_refused(state, "{\"port\": 80.5}", "not an integer");
    expect_file_refused(state, "{\"edges\": \"bounce\"}", "\"edges\"");
    expect_file_refused(state, "{\"config\": \"other.json\"}", "\"config\"");
    expect_file_refused(state, "{\"port\": 1, \"port\": 2}", "twice");
}

static void config_file_that_is_not_an_object_should_be_refused_unchanged(void **state)
{
    expect_file_refused(state, "[{\"port\": 80}]", "object");
    expect_file_refused(state, "42", "object");
    expect_file_refused(state, "\"port\"", "object");
}

static void config_file_with_invalid_json_should_be_refused_unchanged(void **state)
{
    expect_file_refused(state, "{\"port\": }", "invalid JSON at line 1");
    expect_file_refused(state, "{\n  \"port\": 80,\n}", "invalid JSON at line 3");
    expect_file_refused(state, "{} trailing", "invalid JSON");
    expect_file_refused(state, "", "invalid JSON");
}

static void config_file_larger_than_one_mebibyte_should_be_refused(void **state)
{
    size_t len = 1024 * 1024 + 1;
    char *big = malloc(len);
    assert_non_null(big);
    memset(big, ' ', len);
    big[0] = '{';
    big[len - 1] = '}';
    struct cfg c, before;
    char err[512];
    cfg_default(&c);
    before = c;
    const char *path = write_file(state, big, len);
    free(big);
    assert_int_equal(cfg_load_file(&c, path, err, sizeof err), CFG_EINVAL);
    assert_memory_equal(&c, &before, sizeof c);
    assert_non_null(strstr(err, "larger than"));
}

static void missing_config_file_should_be_refused_with_the_system_error(void **state)
{
    struct scratch *s = *state;
    struct cfg c, before;
    char err[512], path[256];
    snprintf(path, sizeof path, "%s/absent.json", s->dir);
    cfg_default(&c);
    before = c;
    assert_int_equal(cfg_load_file(&c, path, err, sizeof err), CFG_EIO);
    assert_memory_equal(&c, &before, sizeof c);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
}

static void validate_should_refuse_snapshot_rate_above_tick_rate(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd", "--tick-hz", "20", "--snapshot-hz", "30"};
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--snapshot-hz (30) must not exceed --tick-hz (20)");
    c.snapshot_hz = 20;
    assert_int_equal(cfg_validate(&c, err, sizeof err), 0);
}

static void validate_should_refuse_more_boids_than_capacity(void **state)
{
    struct cfg c;
    char err[256];
    cfg_default(&c);
    c.boids = c.capacity + 1;
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "--boids"));
    assert_non_null(strstr(err, "--capacity"));
}

static void validate_should_refuse_fields_set_out_of_bounds_directly(void **state)
{
    struct cfg c;
    char err[256];
    cfg_default(&c);
    c.port = 70000;
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "--port: 70000 is out of range [0, 65535]");

    cfg_default(&c);
    c.seed = (UINT64_C(1) << 53) + 1;
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "--seed"));

    cfg_default(&c);
    strcpy(c.edges, "bounce");
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    assert_non_null(strstr(err, "--edges"));
}

static void help_should_describe_every_setting(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    cfg_help(out, "flockd");
    assert_int_equal(fclose(out), 0);

    assert_ptr_equal(strstr(text, "usage: flockd [options]\n"), text);
    for (size_t i = 0; i < sizeof setting_names / sizeof setting_names[0]; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "  --%s ", setting_names[i]);
        if (!strstr(text, flag))
            fail_msg("--help does not list %s", flag);
    }
    assert_non_null(strstr(text, "[0, 65535]"));
    assert_non_null(strstr(text, "wrap|contain"));
    assert_non_null(strstr(text, "client/web"));
    assert_non_null(strstr(text, "--help"));
    assert_non_null(strstr(text, "JSON"));
    free(text);
}

static void
more_than_1000_boids_without_a_size_should_grow_the_world_at_1600_units_per_boid(void **state)
{
    struct cfg c;
    char err[256];
    char *thousand[] = {"flockd", "--boids", "1000"};
    char *ten_thousand[] = {"flockd", "--boids", "10000", "--capacity", "20000"};
    assert_int_equal(parse(&c, ARGC(thousand), thousand, err, sizeof err), 0);
    assert_true(c.width == 1600.0 && c.height == 1000.0);
    assert_int_equal(parse(&c, ARGC(ten_thousand), ten_thousand, err, sizeof err), 0);
    assert_true(c.width == 5060.0 && c.height == 3162.0);
    assert_true(fabs(c.width * c.height / 10000 - 1600.0) < 2.0);
    assert_int_equal(cfg_validate(&c, err, sizeof err), 0);
}

static void a_size_given_by_flag_or_file_should_be_kept_whatever_the_boids(void **state)
{
    struct cfg c;
    char err[256];
    char *width_only[] = {"flockd", "--boids", "10000", "--capacity", "20000", "--width", "2000"};
    assert_int_equal(parse(&c, ARGC(width_only), width_only, err, sizeof err), 0);
    assert_true(c.width == 2000.0 && c.height == 1000.0);
    const char *path = write_json(state, "{\"height\": 900, \"boids\": 4000}");
    char *from_file[] = {"flockd", "--config", (char *)path};
    assert_int_equal(parse(&c, ARGC(from_file), from_file, err, sizeof err), 0);
    assert_true(c.width == 1600.0 && c.height == 900.0);
    char *refused[] = {"flockd", "--boids", "4000", "--width", "50"};
    assert_int_equal(parse(&c, ARGC(refused), refused, err, sizeof err), CFG_EINVAL);
    assert_true(c.width == 1600.0 && c.height == 1000.0);
}

static void a_secret_too_long_should_be_refused_without_showing_it(void **state)
{
    struct cfg c;
    char err[256], secret[2000]; /* longer than any of them: --nats takes 1023 */
    const char *const flags[] = {"--admin-token", "--nats-password", "--nats-token", "--nats"};
    memset(secret, 's', sizeof secret - 1);
    secret[sizeof secret - 1] = '\0';
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char *argv[] = {"flockd", (char *)flags[i], secret};
        assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), CFG_EINVAL);
        assert_non_null(strstr(err, flags[i]));
        assert_non_null(strstr(err, "has length 1999"));
        assert_null(strstr(err, "sss"));
    }
}

/* Sets (value) or unsets (NULL) an environment variable for one test. */
static void set_env(const char *name, const char *value)
{
    if (value)
        assert_int_equal(setenv(name, value, 1), 0);
    else
        assert_int_equal(unsetenv(name), 0);
}

static void secrets_should_come_from_the_environment_when_no_flag_gives_them(void **state)
{
    struct cfg c;
    char err[256];
    char *argv[] = {"flockd", "--nats-password", "from-flag"};
    set_env("FLOCKD_NATS_PASSWORD", "from-env");
    set_env("FLOCKD_NATS_TOKEN", "token-env");
    set_env("FLOCKD_ADMIN_TOKEN", "");
    assert_int_equal(parse(&c, ARGC(argv), argv, err, sizeof err), 0);
    assert_int_equal(cfg_apply_env(&c, err, sizeof err), 0);
    assert_string_equal(c.nats_password, "from-flag");
    assert_string_equal(c.nats_token, "token-env");
    assert_string_equal(c.admin_token, ""); /* an empty variable gives nothing */

    char big[300];
    memset(big, 't', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    set_env("FLOCKD_NATS_TOKEN", big);
    cfg_default(&c);
    assert_int_equal(cfg_apply_env(&c, err, sizeof err), CFG_EINVAL);
    assert_string_equal(err, "FLOCKD_NATS_TOKEN is longer than 255 bytes");
    set_env("FLOCKD_NATS_PASSWORD", NULL);
    set_env("FLOCKD_NATS_TOKEN", NULL);
    set_env("FLOCKD_ADMIN_TOKEN", NULL);
}

/* cfg_validate's message for argv, which must be refused. */
static void expect_refused(char **argv, int argc, const char *message)
{
    struct cfg c;
    char err[256];
    assert_int_equal(parse(&c, argc, argv, err, sizeof err), 0);
    assert_int_equal(cfg_validate(&c, err, sizeof err), CFG_EINVAL);
    if (!strstr(err, message))
        fail_msg("\"%s\" does not say \"%s\"", err, message);
}

static void nats_settings_should_go_together_and_sign_in_one_way(void **state)
{
    char *cert[] = {"flockd", "--nats", "nats://h", "--nats-cert", "c.pem"};
    char *key[] = {"flockd", "--nats", "nats://h", "--nats-key", "k.pem"};
    char *user[] = {"flockd", "--nats", "nats://h", "--nats-user", "u"};
    char *password[] = {"flockd", "--nats", "nats://h", "--nats-password", "p"};
    char *url_and_token[] = {"flockd", "--nats", "nats://u:p@h", "--nats-token", "t"};
    char *user_and_creds[] = {"flockd",          "--nats", "nats://h",     "--nats-user", "u",
                              "--nats-password", "p",      "--nats-creds", "f.creds"};
    expect_refused(cert, ARGC(cert), "--nats-cert and --nats-key go together");
    expect_refused(key, ARGC(key), "--nats-cert and --nats-key go together");
    expect_refused(user, ARGC(user), "--nats-user and --nats-password");
    expect_refused(password, ARGC(password), "--nats-user and --nats-password");
    expect_refused(url_and_token, ARGC(url_and_token),
                   "NATS sign-in given twice, by credentials in the --nats URL and by "
                   "--nats-token (or FLOCKD_NATS_TOKEN)");
    expect_refused(user_and_creds, ARGC(user_and_creds), "by --nats-user and by --nats-creds");
    /* libnats writes them into JSON unescaped. */
    char *quote[] = {"flockd", "--nats", "nats://h", "--nats-token", "a\"b"};
    char *backslash[] = {"flockd", "--nats", "nats://u:a\\b@h"};
    char *newline[] = {"flockd", "--nats",          "nats://h", "--nats-user",
                       "u",      "--nats-password", "a\nb"};
    expect_refused(quote, ARGC(quote), "--nats-token (or FLOCKD_NATS_TOKEN): holds a \"");
    expect_refused(backslash, ARGC(backslash), "--nats: holds a \"");
    expect_refused(newline, ARGC(newline), "--nats-password (or FLOCKD_NATS_PASSWORD): holds");

    struct cfg c;
    char err[256];
    char *fine[] = {"flockd",      "--nats", "tls://u:p@h", "--nats-ca", "ca.pem",
                    "--nats-cert", "c.pem",  "--nats-key",  "k.pem"};
    assert_int_equal(parse(&c, ARGC(fine), fine, err, sizeof err), 0);
    assert_int_equal(cfg_validate(&c, err, sizeof err), 0);
    /* Without --nats they are not used, and not checked. */
    char *unused[] = {"flockd", "--nats-user", "u", "--nats-token", "t"};
    assert_int_equal(parse(&c, ARGC(unused), unused, err, sizeof err), 0);
    assert_int_equal(cfg_validate(&c, err, sizeof err), 0);
}

static void files_to_read_should_be_checked_naming_the_setting(void **state)
{
    struct scratch *s = *state;
    struct cfg c;
    char err[512];
    cfg_default(&c);
    assert_int_equal(cfg_check_files(&c, err, sizeof err), 0);
    const char *path = write_json(state, "{}");
    snprintf(c.nats_ca, sizeof c.nats_ca, "%s", path);
    assert_int_equal(cfg_check_files(&c, err, sizeof err), 0);
    snprintf(c.nats_cert, sizeof c.nats_cert, "%s/missing.pem", s->dir);
    assert_int_equal(cfg_check_files(&c, err, sizeof err), CFG_EIO);
    assert_non_null(strstr(err, "--nats-cert"));
    assert_non_null(strstr(err, "missing.pem"));
    assert_non_null(strstr(err, strerror(ENOENT)));
    snprintf(c.nats_cert, sizeof c.nats_cert, "%s", s->dir);
    assert_int_equal(cfg_check_files(&c, err, sizeof err), CFG_EIO);
    assert_non_null(strstr(err, strerror(EISDIR)));
}

/* A test that gets a fresh scratch directory as its state. */
#define FILE_TEST(f) cmocka_unit_test_setup_teardown(f, scratch_setup, scratch_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_should_match_the_documented_values),
        cmocka_unit_test(defaults_should_pass_validation),
        cmocka_unit_test(no_arguments_should_leave_the_defaults),
        cmocka_unit_test(flags_with_separate_values_should_set_every_setting),
        cmocka_unit_test(flags_with_equals_values_should_set_the_setting),
        cmocka_unit_test(a_later_flag_should_override_an_earlier_one),
        cmocka_unit_test(out_of_range_value_should_be_refused_naming_flag_value_and_range),
        cmocka_unit_test(bad_values_should_be_refused_with_a_message_naming_the_flag),
        cmocka_unit_test(numeric_messages_should_state_the_allowed_range),
        cmocka_unit_test(too_long_string_should_be_refused),
        cmocka_unit_test(flag_missing_its_value_should_be_refused),
        cmocka_unit_test(unknown_flag_should_be_refused),
        cmocka_unit_test(help_flag_should_return_cfg_help),
        cmocka_unit_test(
            more_than_1000_boids_without_a_size_should_grow_the_world_at_1600_units_per_boid),
        FILE_TEST(a_size_given_by_flag_or_file_should_be_kept_whatever_the_boids),
        FILE_TEST(config_file_should_apply_and_flags_override_it_wherever_config_appears),
        FILE_TEST(bad_config_file_should_fail_parse_args),
        FILE_TEST(config_file_with_unknown_key_should_be_refused_unchanged),
        FILE_TEST(config_file_with_wrong_types_should_be_refused_unchanged),
        FILE_TEST(config_file_with_bad_values_should_be_refused_unchanged),
        FILE_TEST(config_file_that_is_not_an_object_should_be_refused_unchanged),
        FILE_TEST(config_file_with_invalid_json_should_be_refused_unchanged),
        FILE_TEST(config_file_larger_than_one_mebibyte_should_be_refused),
        FILE_TEST(missing_config_file_should_be_refused_with_the_system_error),
        cmocka_unit_test(validate_should_refuse_snapshot_rate_above_tick_rate),
        cmocka_unit_test(validate_should_refuse_more_boids_than_capacity),
        cmocka_unit_test(validate_should_refuse_fields_set_out_of_bounds_directly),
        cmocka_unit_test(help_should_describe_every_setting),
        cmocka_unit_test(a_secret_too_long_should_be_refused_without_showing_it),
        cmocka_unit_test(secrets_should_come_from_the_environment_when_no_flag_gives_them),
        cmocka_unit_test(nats_settings_should_go_together_and_sign_in_one_way),
        FILE_TEST(files_to_read_should_be_checked_naming_the_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
