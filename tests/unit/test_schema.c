/*
 * The protocol schema (proto/schema.json) against the C code that serves
 * it: every command of the parser is described and nothing else; each
 * described argument is accepted at both ends of its range and refused
 * past them (out_of_range), when missing if required, mistyped, not whole
 * where an integer is needed (bad_arg); a default the parser fills in is
 * the schema's; strings are held to their lengths and characters and
 * enums to their values; an unknown member is bad_arg; the server's role
 * table (roles_check) allows exactly what each command's "who" says; the
 * error codes are the wire's; the versions and subprotocols are the ones
 * the server speaks, newest first. A command added to the parser and not to
 * the schema, or the other way round, fails here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto_command.h"
#include "proto_v2.h"
#include "proto_v3.h"
#include "roles.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The world the ranges are checked against (W, H, C of the schema). */
static const struct proto_limits LIM = {
    .width = 1600.0f, .height = 1000.0f, .capacity = 16384, .max_message = 4096};

static cJSON *g_schema;

static int load_schema(void **state)
{
    (void)state;
    FILE *f = fopen(FLOCKD_SCHEMA, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!text || got != (size_t)n) {
        free(text);
        return -1;
    }
    g_schema = cJSON_ParseWithLength(text, (size_t)n);
    free(text);
    return g_schema ? 0 : -1;
}

static int free_schema(void **state)
{
    (void)state;
    cJSON_Delete(g_schema);
    return 0;
}

static const cJSON *commands(void)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(g_schema, "commands");
    assert_true(cJSON_IsArray(c));
    return c;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool flag_of(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* ---- bounds: numbers or expressions of W, H, C, min(), max(), / and * --- */

static double expr(const char **p);

static double atom(const char **p)
{
    while (**p == ' ')
        (*p)++;
    if (isdigit((unsigned char)**p))
        return strtod(*p, (char **)p);
    if (**p == 'W' || **p == 'H' || **p == 'C') {
        char v = *(*p)++;
        return v == 'W' ? LIM.width : v == 'H' ? LIM.height : LIM.capacity;
    }
    bool is_min = strncmp(*p, "min(", 4) == 0, is_max = strncmp(*p, "max(", 4) == 0;
    if (!is_min && !is_max)
        fail_msg("bad bound expression at \"%s\"", *p);
    *p += 4;
    double a = expr(p);
    assert_int_equal(*(*p)++, ',');
    double b = expr(p);
    assert_int_equal(*(*p)++, ')');
    return is_min ? fmin(a, b) : fmax(a, b);
}

static double expr(const char **p)
{
    double v = atom(p);
    while (**p == '/' || **p == '*') {
        char op = *(*p)++;
        double w = atom(p);
        v = op == '/' ? v / w : v * w;
    }
    return v;
}

/* A bound of the schema: a number or an expression; `fallback` if absent. */
static double bound(const cJSON *arg, const char *key, double fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(arg, key);
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (!cJSON_IsString(v))
        return fallback;
    const char *p = v->valuestring;
    double x = expr(&p);
    assert_int_equal(*p, '\0');
    return x;
}

/* ---- messages built from the schema -------------------------------------- */

enum at { AT_MIN, AT_MAX };

/* An array of arg's least or most items, each at that end of its range. */
static void add_valid_array(cJSON *o, const char *name, const cJSON *arg, enum at at)
{
    const char *items = str_of(arg, "items");
    int n = (int)bound(arg, at == AT_MIN ? "min_items" : "max_items", 0);
    cJSON *a = cJSON_AddArrayToObject(o, name);
    for (int k = 0; k < n; k++) {
        if (strcmp(items, "point") == 0) {
            double p[2] = {at == AT_MIN ? 0.0 : LIM.width, at == AT_MIN ? 0.0 : LIM.height};
            cJSON_AddItemToArray(a, cJSON_CreateDoubleArray(p, 2));
        } else {
            double v = bound(arg, at == AT_MIN ? "min" : "max", 0);
            cJSON_AddItemToArray(a, cJSON_CreateNumber(v));
        }
    }
}

/* Whether arg is one of the command's one_of arguments (exactly one of
 * them goes into a message). */
static bool is_one_of(const cJSON *cmd, const char *name)
{
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(cmd, "one_of"))
    {
        if (strcmp(n->valuestring, name) == 0)
            return true;
    }
    return false;
}

/* The one_of argument a message holds: `skip` when it is one (the caller
 * adds it), else the first. */
static const char *chosen_one(const cJSON *cmd, const char *skip)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(cmd, "one_of");
    if (!list)
        return NULL;
    return skip && is_one_of(cmd, skip) ? skip : cJSON_GetArrayItem(list, 0)->valuestring;
}

/* A valid value of arg into o under `name` (at one end of its range). */
static void add_valid(cJSON *o, const char *name, const cJSON *arg, enum at at)
{
    const char *type = str_of(arg, "type");
    if (strcmp(type, "int") == 0 || strcmp(type, "number") == 0) {
        double lo = bound(arg, "min", 0), hi = bound(arg, "max", 0);
        double v = at == AT_MIN ? lo : hi;
        if (strcmp(type, "int") == 0)
            v = at == AT_MIN ? ceil(v) : floor(v);
        cJSON_AddNumberToObject(o, name, v);
    } else if (strcmp(type, "enum") == 0) {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(arg, "values");
        int n = cJSON_GetArraySize(values);
        cJSON_AddStringToObject(o, name,
                                cJSON_GetArrayItem(values, at == AT_MIN ? 0 : n - 1)->valuestring);
    } else if (strcmp(type, "bool") == 0) {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(arg, "values"); /* all: [true] */
        bool v = values ? cJSON_IsTrue(cJSON_GetArrayItem(values, 0)) : at == AT_MAX;
        cJSON_AddBoolToObject(o, name, v);
    } else if (strcmp(type, "rect") == 0) {
        double r[4] = {0.0, 0.0, 1.0, 1.0}, big[4] = {LIM.width, LIM.height, 1e7, 1e7};
        cJSON_AddItemToObject(o, name, cJSON_CreateDoubleArray(at == AT_MIN ? r : big, 4));
    } else if (strcmp(type, "array") == 0) {
        add_valid_array(o, name, arg, at);
    } else if (strcmp(type, "string") == 0) {
        int len = (int)bound(arg, at == AT_MIN ? "min_len" : "max_len", 0);
        char text[512];
        assert_true(len < (int)sizeof text);
        memset(text, 'a', (size_t)len);
        text[len] = '\0';
        cJSON_AddStringToObject(o, name, text);
    } else {
        fail_msg("unknown argument type %s", type);
    }
}

/* {"cmd": NAME} with every required argument (all of them with `all`) at
 * one end of its range, one of its one_of arguments, and a registry
 * parameter for a registry command. */
static cJSON *message(const cJSON *cmd, enum at at, bool all, const char *skip)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cmd", str_of(cmd, "name"));
    const char *one = chosen_one(cmd, skip);
    const cJSON *arg;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
    {
        const char *name = str_of(arg, "name");
        bool wanted =
            is_one_of(cmd, name) ? strcmp(name, one) == 0 : all || flag_of(arg, "required");
        if (wanted && (!skip || strcmp(skip, name) != 0))
            add_valid(o, name, arg, at);
    }
    if (flag_of(cmd, "registry"))
        cJSON_AddNumberToObject(o, "w_alignment", 1.0);
    return o;
}

/* The code proto_command_parse gives o (0: parsed). */
static int parse(const cJSON *o, struct proto_command *out)
{
    char *text = cJSON_PrintUnformatted(o);
    struct proto_error err;
    int rc = proto_command_parse(text, strlen(text), &LIM, out, &err);
    free(text);
    return rc;
}

static void expect(const cJSON *o, int code)
{
    struct proto_command out;
    int rc = parse(o, &out);
    if (rc != code) {
        char *text = cJSON_PrintUnformatted(o);
        fail_msg("%s: got %s, the schema says %s", text, proto_status_name(rc),
                 proto_status_name(code));
    }
}

/* ---- tests ---------------------------------------------------------------- */

static void every_parser_command_is_in_the_schema_and_no_other(void **state)
{
    (void)state;
    assert_int_equal(cJSON_GetArraySize(commands()), PROTO_CMD_COUNT);
    for (int k = 0; k < PROTO_CMD_COUNT; k++) {
        const char *name = proto_cmd_name((enum proto_cmd)k);
        bool found = false;
        const cJSON *cmd;
        cJSON_ArrayForEach(cmd, commands()) found |= strcmp(str_of(cmd, "name"), name) == 0;
        if (!found)
            fail_msg("the parser's command %s is not in proto/schema.json", name);
    }
}

static void commands_are_accepted_at_both_ends_of_every_range(void **state)
{
    (void)state;
    const cJSON *cmd;
    cJSON_ArrayForEach(cmd, commands())
    {
        for (int at = AT_MIN; at <= AT_MAX; at++) {
            for (int all = 0; all <= 1; all++) {
                cJSON *o = message(cmd, (enum at)at, all, NULL);
                expect(o, 0);
                cJSON_Delete(o);
            }
        }
    }
}

static void a_missing_required_argument_is_bad_arg(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            if (!flag_of(arg, "required"))
                continue;
            cJSON *o = message(cmd, AT_MIN, true, str_of(arg, "name"));
            expect(o, PROTO_E_BAD_ARG);
            cJSON_Delete(o);
        }
    }
}

/* One argument replaced by value; the others valid. */
static void expect_with(const cJSON *cmd, const char *name, cJSON *value, int code)
{
    cJSON *o = message(cmd, AT_MIN, true, name);
    cJSON_AddItemToObject(o, name, value);
    expect(o, code);
    cJSON_Delete(o);
}

static void numbers_past_their_range_are_out_of_range_and_fractions_of_ints_bad_arg(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            const char *type = str_of(arg, "type"), *name = str_of(arg, "name");
            if (strcmp(type, "int") && strcmp(type, "number"))
                continue;
            double lo = bound(arg, "min", 0), hi = bound(arg, "max", 0);
            /* Past each end by a whole step float32 still tells apart. */
            expect_with(cmd, name, cJSON_CreateNumber(lo - fmax(1.0, ceil(fabs(lo) * 1e-6))),
                        PROTO_E_OUT_OF_RANGE);
            expect_with(cmd, name, cJSON_CreateNumber(hi + fmax(1.0, ceil(fabs(hi) * 1e-6))),
                        PROTO_E_OUT_OF_RANGE);
            expect_with(cmd, name, cJSON_CreateString("1"), PROTO_E_BAD_ARG);
            if (strcmp(type, "int") == 0 && hi - lo >= 1)
                expect_with(cmd, name, cJSON_CreateNumber(lo + 0.5), PROTO_E_BAD_ARG);
        }
    }
}

static void strings_keep_their_lengths_and_characters_and_enums_their_values(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            const char *type = str_of(arg, "type"), *name = str_of(arg, "name");
            if (strcmp(type, "enum") == 0) {
                expect_with(cmd, name, cJSON_CreateString("none_of_these"), PROTO_E_BAD_ARG);
                expect_with(cmd, name, cJSON_CreateNumber(1), PROTO_E_BAD_ARG);
            }
            if (strcmp(type, "bool") == 0) {
                expect_with(cmd, name, cJSON_CreateString("true"), PROTO_E_BAD_ARG);
                expect_with(cmd, name, cJSON_CreateNumber(1), PROTO_E_BAD_ARG);
                expect_with(cmd, name, cJSON_CreateNull(), PROTO_E_BAD_ARG);
            }
            if (strcmp(type, "string") != 0)
                continue;
            int lo = (int)bound(arg, "min_len", 0), hi = (int)bound(arg, "max_len", 0);
            char text[512];
            memset(text, 'a', sizeof text);
            text[hi + 1] = '\0';
            expect_with(cmd, name, cJSON_CreateString(text), PROTO_E_OUT_OF_RANGE);
            if (lo > 0)
                expect_with(cmd, name, cJSON_CreateString(""), PROTO_E_OUT_OF_RANGE);
            const char *bad = strcmp(str_of(arg, "chars"), "room") == 0 ? "a b" : "a\x7f";
            expect_with(cmd, name, cJSON_CreateString(bad), PROTO_E_BAD_ARG);
            expect_with(cmd, name, cJSON_CreateNumber(1), PROTO_E_BAD_ARG);
        }
    }
}

static void one_of_takes_exactly_one(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(cmd, "one_of");
        if (!list)
            continue;
        const char *first = cJSON_GetArrayItem(list, 0)->valuestring;
        cJSON *none = message(cmd, AT_MIN, true, first); /* the first left out: none */
        expect(none, PROTO_E_BAD_ARG);
        cJSON_Delete(none);
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            const char *name = str_of(arg, "name");
            if (!is_one_of(cmd, name) || strcmp(name, first) == 0)
                continue;
            cJSON *two = message(cmd, AT_MIN, true, NULL); /* the first and this one */
            add_valid(two, name, arg, AT_MIN);
            expect(two, PROTO_E_BAD_ARG);
            cJSON_Delete(two);
        }
    }
}

static void arrays_keep_their_lengths(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            const char *name = str_of(arg, "name");
            if (strcmp(str_of(arg, "type"), "array") != 0)
                continue;
            cJSON *longer = cJSON_CreateObject(); /* one item past the most */
            add_valid_array(longer, name, arg, AT_MAX);
            cJSON *items = cJSON_DetachItemFromObject(longer, name);
            cJSON_AddItemToArray(items, cJSON_Duplicate(cJSON_GetArrayItem(items, 0), true));
            cJSON_Delete(longer);
            expect_with(cmd, name, items, PROTO_E_OUT_OF_RANGE);
            expect_with(cmd, name, cJSON_CreateNumber(1), PROTO_E_BAD_ARG);
        }
    }
}

static void a_member_the_schema_does_not_name_is_bad_arg(void **state)
{
    (void)state;
    const cJSON *cmd;
    cJSON_ArrayForEach(cmd, commands())
    {
        if (flag_of(cmd, "registry"))
            continue; /* its other members are the registry's names */
        cJSON *o = message(cmd, AT_MIN, true, NULL);
        cJSON_AddNumberToObject(o, "not_an_argument", 1);
        if (flag_of(cmd, "open_args")) { /* any member is the room script's: taken */
            expect(o, 0);
            cJSON_Delete(o);
            continue;
        }
        expect(o, PROTO_E_BAD_ARG);
        cJSON_Delete(o);
    }
}

static void defaults_the_parser_fills_in_are_the_schemas(void **state)
{
    (void)state;
    const cJSON *cmd, *arg;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON *o = message(cmd, AT_MIN, false, NULL);
        struct proto_command parsed;
        assert_int_equal(parse(o, &parsed), 0);
        cJSON_Delete(o);
        char text[4096];
        assert_true(proto_command_format(&parsed, text, sizeof text) > 0);
        cJSON *canon = cJSON_Parse(text);
        assert_non_null(canon);
        cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(cmd, "args"))
        {
            if (!cJSON_GetObjectItemCaseSensitive(arg, "default"))
                continue;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(canon, str_of(arg, "name"));
            assert_true(cJSON_IsNumber(v));
            assert_float_equal(v->valuedouble, (float)bound(arg, "default", 0), 1e-3);
        }
        cJSON_Delete(canon);
    }
}

/* roles_check's answer for a message of cmd from role (team -1: none). */
static int role_answer(const cJSON *cmd, enum proto_role role, int team, int group)
{
    cJSON *o = message(cmd, AT_MIN, true, NULL);
    const char *team_arg = str_of(cmd, "team_arg");
    if (team_arg)
        cJSON_ReplaceItemInObject(o, team_arg, cJSON_CreateNumber(group));
    struct proto_command parsed;
    assert_int_equal(parse(o, &parsed), 0);
    cJSON_Delete(o);
    const char *why = NULL;
    return roles_check(role, team, &parsed, &why);
}

static void the_servers_role_table_allows_what_each_commands_who_says(void **state)
{
    (void)state;
    const cJSON *cmd;
    cJSON_ArrayForEach(cmd, commands())
    {
        const char *who = str_of(cmd, "who"), *name = str_of(cmd, "name");
        bool anyone = strcmp(who, "anyone") == 0, admin = strcmp(who, "admin") == 0;
        assert_true(anyone || admin || strcmp(who, "player") == 0);
        int viewer = role_answer(cmd, PROTO_ROLE_VIEWER, -1, 3);
        int player = role_answer(cmd, PROTO_ROLE_PLAYER, -1, 3);
        int own = role_answer(cmd, PROTO_ROLE_PLAYER, 3, 3);
        int other = role_answer(cmd, PROTO_ROLE_PLAYER, 2, 3);
        if (role_answer(cmd, PROTO_ROLE_ADMIN, -1, 3) != 0)
            fail_msg("%s: refused to an admin", name);
        if ((viewer == 0) != anyone)
            fail_msg("%s: a viewer is %s, the schema says who=%s", name,
                     viewer ? "refused" : "allowed", who);
        if ((player == 0) == admin || (own == 0) == admin)
            fail_msg("%s: a player is %s, the schema says who=%s", name,
                     player ? "refused" : "allowed", who);
        bool team_bound = str_of(cmd, "team_arg") != NULL;
        if (!admin && (other == 0) == team_bound)
            fail_msg("%s: an RTS player naming another team's group is %s (team_arg %s)", name,
                     other ? "refused" : "allowed", team_bound ? "set" : "absent");
    }
}

static void the_error_codes_are_the_wires(void **state)
{
    (void)state;
    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(g_schema, "errors"), *e;
    int n = 0;
    for (int code = PROTO_E_BAD_JSON; code >= PROTO_E_UNAVAILABLE; code--) {
        assert_true(proto_status_is_wire(code));
        bool found = false;
        cJSON_ArrayForEach(e, errors) found |=
            strcmp(str_of(e, "code"), proto_status_name(code)) == 0;
        if (!found)
            fail_msg("the wire code %s is not in proto/schema.json", proto_status_name(code));
        n++;
    }
    assert_int_equal(cJSON_GetArraySize(errors), n);
    const cJSON *cmd, *code;
    cJSON_ArrayForEach(cmd, commands())
    {
        cJSON_ArrayForEach(code, cJSON_GetObjectItemCaseSensitive(cmd, "errors"))
        {
            bool found = false;
            cJSON_ArrayForEach(e, errors) found |=
                strcmp(str_of(e, "code"), code->valuestring) == 0;
            if (!found)
                fail_msg("%s lists the unknown error %s", str_of(cmd, "name"), code->valuestring);
        }
    }
}

/* The schema's versions and subprotocols are the server's, the
 * subprotocols newest first (the order a client offers them in). */
static void the_versions_and_subprotocols_are_the_servers(void **state)
{
    (void)state;
    static const struct {
        int version;
        const char *name;
    } spoken[] = {{PROTO_V3_VERSION, PROTO_V3_SUBPROTOCOL},
                  {PROTO_V2_VERSION, PROTO_V2_SUBPROTOCOL},
                  {PROTO_VERSION, PROTO_SUBPROTOCOL}};
    const int n = (int)(sizeof spoken / sizeof spoken[0]);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(g_schema, "protocol");
    const cJSON *versions = cJSON_GetObjectItemCaseSensitive(p, "versions");
    const cJSON *subs = cJSON_GetObjectItemCaseSensitive(p, "subprotocols");
    assert_int_equal(cJSON_GetArraySize(versions), n);
    assert_int_equal(cJSON_GetArraySize(subs), n);
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(versions, n - 1 - i);
        assert_true(cJSON_IsNumber(v));
        assert_int_equal(v->valueint, spoken[i].version);
        const cJSON *s = cJSON_GetArrayItem(subs, i);
        assert_true(cJSON_IsString(s));
        assert_string_equal(s->valuestring, spoken[i].name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_parser_command_is_in_the_schema_and_no_other),
        cmocka_unit_test(commands_are_accepted_at_both_ends_of_every_range),
        cmocka_unit_test(a_missing_required_argument_is_bad_arg),
        cmocka_unit_test(numbers_past_their_range_are_out_of_range_and_fractions_of_ints_bad_arg),
        cmocka_unit_test(strings_keep_their_lengths_and_characters_and_enums_their_values),
        cmocka_unit_test(one_of_takes_exactly_one),
        cmocka_unit_test(arrays_keep_their_lengths),
        cmocka_unit_test(a_member_the_schema_does_not_name_is_bad_arg),
        cmocka_unit_test(defaults_the_parser_fills_in_are_the_schemas),
        cmocka_unit_test(the_servers_role_table_allows_what_each_commands_who_says),
        cmocka_unit_test(the_error_codes_are_the_wires),
        cmocka_unit_test(the_versions_and_subprotocols_are_the_servers),
    };
    return cmocka_run_group_tests(tests, load_schema, free_schema);
}
