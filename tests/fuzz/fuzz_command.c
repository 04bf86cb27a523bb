/*
 * fuzz_command — proto_command_parse() on arbitrary bytes, under the
 * limits of a default world and a 4096-byte max_message.
 *
 * A refusal must carry a wire code other than internal, in err as well as
 * in the result, and both replies built from it must be valid JSON that
 * echo err.id. An accepted command must hold values inside the ranges of
 * PROTOCOL.md §5.4; its canonical text (proto_command_format) must parse
 * again to the same kind and format to the same text (a fixed point), and
 * replies carrying its id must be valid JSON that echo the id as sent.
 *
 * The same bytes cut at '&' are also a WebSocket URL's query for
 * proto_view_from_query(): a view it makes holds the ranges and formats
 * to a fixed point, a refusal is checked as above.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "fuzz_common.h"

#include "proto_command.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FORMAT_BYTES 8192 /* far above any canonical command (ids <= 389 bytes) */

static void check_number(const char *field, double v, double lo, double hi)
{
    if (!isfinite(v) || v < lo || v > hi)
        fuzz_fail("accepted %s = %.17g outside [%.17g, %.17g]", field, v, lo, hi);
}

static void check_group(int group, int optional)
{
    if (!(optional && group == -1))
        check_number("group", group, 0, PROTO_GROUPS - 1);
}

static void check_params(const struct proto_params_args *a)
{
    check_group(a->group, 1);
    if (a->count == 0 || a->count > sim_param_count())
        fuzz_fail("accepted params with %u values", a->count);
    for (uint32_t i = 0; i < a->count; i++) {
        if (!sim_param_valid(a->items[i].desc, a->items[i].value))
            fuzz_fail("accepted params value %s = %.9g", a->items[i].desc->name, a->items[i].value);
        for (uint32_t k = 0; k < i; k++)
            if (a->items[k].desc == a->items[i].desc)
                fuzz_fail("accepted params naming %s twice", a->items[i].desc->name);
    }
}

/* Join strings: NUL-terminated inside their arrays, the room of [A-Za-z0-9_-]. */
static void check_join(const struct proto_join_args *a)
{
    size_t n = strnlen(a->room, sizeof a->room);
    if (n == 0 || n > PROTO_ROOM_MAX ||
        strspn(a->room, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != n)
        fuzz_fail("accepted join room of %zu bytes: %.*s", n, (int)n, a->room);
    if (strnlen(a->name, sizeof a->name) == sizeof a->name ||
        strnlen(a->token, sizeof a->token) == sizeof a->token)
        fuzz_fail("accepted join with an unterminated name or token");
    if ((unsigned)a->role > PROTO_ROLE_ADMIN || (unsigned)a->mode > PROTO_MODE_RTS)
        fuzz_fail("accepted join with role %d, mode %d", (int)a->role, (int)a->mode);
}

/* Every range of PROTOCOL.md §5.4, against the limits the parser was given. */
static void check_ranges(const struct proto_command *cmd, const struct proto_limits *lim)
{
    switch (cmd->kind) {
    case PROTO_CMD_SEEK:
        check_group(cmd->args.seek.group, 0);
        check_number("x", cmd->args.seek.x, 0, lim->width);
        check_number("y", cmd->args.seek.y, 0, lim->height);
        break;
    case PROTO_CMD_SEEK_CLEAR:
        check_group(cmd->args.seek_clear.group, 0);
        break;
    case PROTO_CMD_OBSTACLE_ADD:
        check_number("x", cmd->args.obstacle_add.x, 0, lim->width);
        check_number("y", cmd->args.obstacle_add.y, 0, lim->height);
        check_number("r", cmd->args.obstacle_add.r, 1, 0.25 * fmin(lim->width, lim->height));
        break;
    case PROTO_CMD_OBSTACLE_REMOVE:
        check_number("obstacle", cmd->args.obstacle_remove.id, 1, UINT32_MAX);
        break;
    case PROTO_CMD_SPAWN:
        check_number("n", cmd->args.spawn.n, 1, lim->capacity);
        check_group(cmd->args.spawn.group, 0);
        check_number("x", cmd->args.spawn.x, 0, lim->width);
        check_number("y", cmd->args.spawn.y, 0, lim->height);
        check_number("spread", cmd->args.spawn.spread, 0, fmax(lim->width, lim->height));
        break;
    case PROTO_CMD_DESPAWN:
        check_number("n", cmd->args.despawn.n, 1, UINT32_MAX);
        check_group(cmd->args.despawn.group, 1);
        break;
    case PROTO_CMD_PARAMS:
        check_params(&cmd->args.params);
        break;
    case PROTO_CMD_STEP:
        check_number("n", cmd->args.step.n, 1, PROTO_MAX_STEP);
        break;
    case PROTO_CMD_RESET:
        check_number("seed", (double)cmd->args.reset.seed, 0, PROTO_MAX_SEED);
        check_number("boids", cmd->args.reset.boids, 0, lim->capacity);
        break;
    case PROTO_CMD_JOIN:
        check_join(&cmd->args.join);
        break;
    default:
        if ((unsigned)cmd->kind >= PROTO_CMD_COUNT)
            fuzz_fail("accepted a command of kind %d", (int)cmd->kind);
        break;
    }
}

static void check_refusal(int rc, const struct proto_error *err)
{
    if (!proto_status_is_wire(rc) || rc == PROTO_E_INTERNAL || err->code != rc)
        fuzz_fail("refused with %s (err.code %s): %s", proto_status_name(rc),
                  proto_status_name(err->code), err->message);
    if (!memchr(err->message, '\0', sizeof err->message) || !memchr(err->id, '\0', sizeof err->id))
        fuzz_fail("error message or id not terminated");
    fuzz_check_replies(err->id, rc, err->message);
}

/* The canonical text parses back to the same kind and formats identically. */
static void check_canonical(const struct proto_command *cmd, const struct proto_limits *lim)
{
    static char text[FORMAT_BYTES], again_text[FORMAT_BYTES];
    struct proto_command again;
    struct proto_error err;

    int n = proto_command_format(cmd, text, sizeof text);
    if (n < 0)
        fuzz_fail("could not format an accepted %s: %s", proto_cmd_name(cmd->kind),
                  proto_status_name(n));
    int rc = proto_command_parse(text, (size_t)n, lim, &again, &err);
    if (rc != 0)
        fuzz_fail("canonical text refused with %s (%s): %s", proto_status_name(rc), err.message,
                  text);
    if (again.kind != cmd->kind)
        fuzz_fail("canonical text parsed as %s, not %s: %s", proto_cmd_name(again.kind),
                  proto_cmd_name(cmd->kind), text);
    int m = proto_command_format(&again, again_text, sizeof again_text);
    if (m != n || memcmp(text, again_text, (size_t)n) != 0)
        fuzz_fail("canonical text is not a fixed point:\n  %s\n  %s", text, again_text);
}

/* data as a URL's query: up to 8 parts cut at '&', each at most 127 bytes. */
static void check_query(const uint8_t *data, size_t size, const struct proto_limits *lim)
{
    static char text[8][128];
    const char *parts[8];
    size_t n = 0, at = 0;
    while (at <= size && n < 8) {
        const uint8_t *amp = memchr(data + at, '&', size - at);
        size_t len = (amp ? (size_t)(amp - data) : size) - at;
        len = len < sizeof text[n] - 1 ? len : sizeof text[n] - 1;
        memcpy(text[n], data + at, len);
        text[n][len] = '\0';
        parts[n] = text[n];
        n++;
        at = amp ? (size_t)(amp - data) + 1 : size + 1;
    }
    struct proto_command cmd;
    struct proto_error err;
    int rc = proto_view_from_query(parts, n, lim, &cmd, &err);
    if (rc < 0) {
        check_refusal(rc, &err);
        return;
    }
    if (rc > 1 || (rc == 1 && (cmd.kind != PROTO_CMD_VIEW || cmd.id[0])))
        fuzz_fail("the URL's view made %d, kind %d", rc, (int)cmd.kind);
    if (rc == 1) {
        check_ranges(&cmd, lim);
        check_canonical(&cmd, lim);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct proto_limits *lim = fuzz_limits();
    struct proto_command cmd;
    struct proto_error err;
    char message[PROTO_MESSAGE_MAX];

    check_query(data, size, lim);
    int rc = proto_command_parse((const char *)data, size, lim, &cmd, &err);
    if (rc != 0) {
        check_refusal(rc, &err);
        return 0;
    }
    if (err.code != 0 || err.id[0] || err.message[0])
        fuzz_fail("accepted, but err is not cleared: %s", err.message);
    check_ranges(&cmd, lim);
    check_canonical(&cmd, lim);
    /* A message cut mid-character, as a truncated untrusted name may be. */
    snprintf(message, sizeof message, "%s: %.*s", proto_cmd_name(cmd.kind), (int)size,
             (const char *)data);
    fuzz_check_replies(cmd.id, PROTO_E_NOT_FOUND, message);
    return 0;
}
